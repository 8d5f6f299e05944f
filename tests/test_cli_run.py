"""``cosim run`` (batch-only) and ``cosim workload esp``: outputs, summary and bad input."""

from __future__ import annotations

import csv
import json

import pytest

from cosim.cli import main
from cosim.paths import TRACES_DIR
from cosim.workload.swf import read_swf

# 4 hosts. Job 1 takes 3 hosts for 100 s; job 2 (4 hosts) must wait for it; job 3 (1 host,
# 50 s, estimate 50 s) backfills on the spare host under EASY (it ends at 60 < 100, the head's
# shadow time) but not under FCFS; job 4 runs 30 s with a 20 s request: killed at 20 s.
TINY = """\
; Version: 2.2
; MaxNodes: 4
1 0 -1 100 3 -1 -1 3 100 -1 1 1 1 -1 -1 -1 -1 -1
2 5 -1 10 4 -1 -1 4 10 -1 1 1 1 -1 -1 -1 -1 -1
3 10 -1 50 1 -1 -1 1 50 -1 1 1 1 -1 -1 -1 -1 -1
4 200 -1 30 2 -1 -1 2 20 -1 1 1 1 -1 -1 -1 -1 -1
"""


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.swf"
    path.write_text(TINY)
    return path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def starts(out_dir):
    rows = list(csv.DictReader((out_dir / "jobs.csv").open()))
    return {int(r["job_id"]): (r["start_s"], r["end_s"], r["status"]) for r in rows}


@pytest.mark.parametrize("batch, expect", [
    ("easy", {1: ("0", "100", "completed"), 2: ("100", "110", "completed"),
              3: ("10", "60", "completed"), 4: ("200", "220", "killed")}),
    ("fcfs", {1: ("0", "100", "completed"), 2: ("100", "110", "completed"),
              3: ("110", "160", "completed"), 4: ("200", "220", "killed")}),
    ("conservative", {1: ("0", "100", "completed"), 2: ("100", "110", "completed"),
                      3: ("10", "60", "completed"), 4: ("200", "220", "killed")}),
])
def test_run_tiny_golden(capsys, tmp_path, tiny, batch, expect):
    out_dir = tmp_path / batch
    code, out, err = run(capsys, "run", "--workload", str(tiny), "--hosts", "4",
                         "--batch", batch, "--out", str(out_dir), "--json")
    assert code == 0, err
    assert starts(out_dir) == expect
    summary = json.loads(out)
    assert summary == json.loads((out_dir / "summary.json").read_text())
    for key in ("jobs", "makespan_s", "utilization", "mean_wait_s", "mean_response_s",
                "mean_slowdown", "mean_bounded_slowdown", "loss_of_capacity", "unfair_jobs",
                "wall_s"):
        assert key in summary
    assert summary["jobs"] == 4 and summary["killed"] == 1
    # the schedule is valid SWF that reads back with the simulated waits and run times
    back = read_swf(out_dir / "schedule.swf")
    assert [j.id for j in back.jobs] == [1, 2, 3, 4]
    assert [j.swf[2] for j in back.jobs] == [float(expect[i][0]) - s
                                             for i, s in zip((1, 2, 3, 4), (0, 5, 10, 200))]


def test_run_walltime_kill_off(capsys, tmp_path, tiny):
    code, _, err = run(capsys, "run", "--workload", str(tiny), "--hosts", "4",
                       "--walltime-kill", "off", "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert starts(tmp_path / "o")[4] == ("200", "230", "completed")


def test_run_real_trace_and_rejections(capsys, tmp_path):
    code, out, err = run(capsys, "run", "--workload", str(TRACES_DIR / "lublin_256.swf.gz"),
                         "--hosts", "128", "--out", str(tmp_path / "l"), "--json")
    assert code == 0, err
    s = json.loads(out)
    rows = list(csv.DictReader((tmp_path / "l" / "jobs.csv").open()))
    assert len(rows) == s["jobs"] + s["rejected"]
    assert s["rejected"] == s["skipped"]["too_big"] > 0  # jobs of 129..256 nodes
    assert "larger than the machine" in err or "hosts" in err  # warned on stderr
    assert 0 < s["utilization"] <= 1


def test_run_bad_swf_line(capsys, tmp_path):
    bad = tmp_path / "bad.swf"
    bad.write_text(TINY.replace("3 10 -1 50 1", "3 10 -1 5x0 1"))
    code, _, err = run(capsys, "run", "--workload", str(bad), "--hosts", "4",
                       "--out", str(tmp_path / "o"))
    assert code == 2 and err.count("\n") == 1
    assert f"{bad}:5: field 4 (run time):" in err
    assert not (tmp_path / "o" / "summary.json").exists()
    code, out, err = run(capsys, "run", "--workload", str(bad), "--hosts", "4", "--lenient",
                         "--out", str(tmp_path / "o"), "--json")
    assert code == 0 and json.loads(out)["skipped"]["bad_lines"] == 1


@pytest.mark.parametrize("argv, message", [
    (["--workload", "missing.swf"], "missing.swf"),
    (["--hosts", "999"], "999 hosts asked"),
    (["--platform", "nowhere"], "nowhere"),
])
def test_run_bad_arguments(capsys, tmp_path, tiny, argv, message):
    base = {"--workload": str(tiny), "--hosts": "4", "--out": str(tmp_path / "o")}
    base.update(dict(zip(argv[::2], argv[1::2])))
    code, _, err = run(capsys, "run", *[x for kv in base.items() for x in kv])
    assert code == 2 and message in err and "Traceback" not in err


def test_workload_esp_command(capsys, tmp_path):
    out = tmp_path / "esp.swf"
    code, text, err = run(capsys, "workload", "esp", "--app", "mandelbrot", "--hosts", "256",
                          "--seed", "0", "-o", str(out))
    assert code == 0, err
    assert "230 ESP-mandelbrot jobs" in text
    assert out.read_bytes() == (TRACES_DIR / "esp-mandelbrot.swf").read_bytes()
    code, _, err = run(capsys, "workload", "esp", "--app", "psia", "--hosts", "0", "-o",
                       str(out))
    assert code == 2 and "hosts" in err
