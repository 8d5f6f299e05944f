"""``cosim run --malleable``: a malleable run end to end, and every bad input of the feature
as one line naming file, line and field, exit status 2, no output directory."""

from __future__ import annotations

import csv
import json

import pytest

from cosim.cli import main

JOB = "{id} {sub} -1 100 8 -1 -1 8 400 -1 1 1 1 {exe} 1 1 -1 -1\n"


def trace(tmp_path, header: str, n: int = 3, exe: int = 1):
    path = tmp_path / "w.swf"
    path.write_text(header + "".join(JOB.format(id=i, sub=5 * i, exe=exe)
                                     for i in range(1, n + 1)))
    return path


def test_a_malleable_run_writes_resizes_everywhere(tmp_path, capsys):
    swf = trace(tmp_path, "; CosimApp: 1 kind=malleable min_pes=2 max_pes=8\n")
    out = tmp_path / "out"
    code = main(["run", "--workload", str(swf), "--platform", "tiny8x2", "--malleable", "equi",
                 "--malleable-param", "share=level", "--out", str(out), "--json"])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    s = json.loads(stdout)
    assert s["malleable"] == "equi" and s["stats"]["shrinks"] > 0 and s["stats"]["expands"] > 0
    rows = list(csv.DictReader(open(out / "jobs.csv")))
    assert {r["kind"] for r in rows} == {"malleable"}
    assert sum(int(r["shrinks"]) + int(r["expands"]) for r in rows) == \
        s["stats"]["shrinks"] + s["stats"]["expands"]
    # PE-seconds: 3 jobs of 100 s of reference work on 8 PEs, ideal model, conserved
    assert sum(float(r["pe_seconds"]) for r in rows) == pytest.approx(3 * 100 * 8)
    assert "kind=malleable" in (out / "schedule.swf").read_text()


def test_malleable_fraction_marks_jobs_of_a_rigid_trace(tmp_path, capsys):
    swf = trace(tmp_path, "", n=6)
    out = tmp_path / "out"
    code = main(["run", "--workload", str(swf), "--platform", "tiny8x2", "--malleable", "equi",
                 "--malleable-fraction", "1", "--min-frac", "0.25", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    rows = list(csv.DictReader(open(out / "jobs.csv")))
    assert {r["kind"] for r in rows} == {"malleable"}
    assert any(int(r["shrinks"]) for r in rows)


def test_no_malleable_job_gives_a_warning(tmp_path, capsys):
    swf = trace(tmp_path, "")
    assert main(["run", "--workload", str(swf), "--platform", "tiny8x2", "--malleable", "equi",
                 "--out", str(tmp_path / "o")]) == 0
    assert "no job of the workload is moldable or malleable" in capsys.readouterr().err


@pytest.mark.parametrize("header, extra, match", [
    ("; CosimApp: 1 kind=elastic\n", [], "w.swf:1: field kind: unknown kind 'elastic'"),
    ("; CosimApp: 1 kind=malleable model=linear\n", [],
     "w.swf:1: field model: unknown runtime model 'linear'"),
    ("; CosimApp: 1 kind=malleable min_pes=6 max_pes=4\n", [],
     "w.swf:1: field min_pes: min_pes 6 > max_pes 4"),
    ("; CosimApp: 1 kind=rigid min_pes=2\n", [], "w.swf:1: field min_pes"),
    ("; CosimApp: 1 kind=malleable min_pes=20 max_pes=40\n", ["--malleable", "equi"],
     "w.swf: field min_pes: job 1: its minimum of 20 PEs is larger than the machine (16 PEs)"),
    ("", ["--malleable", "equi", "--malleable-param", "share=half"],
     "field malleable-param.share: 'half' is not one of additive, level"),
    ("", ["--malleable", "equi", "--malleable-param", "sharing=level"],
     "field malleable-param.sharing: unknown key (known: queue, share)"),
    ("", ["--malleable-param", "share=level"], "field malleable-param: parameters given but no"),
    ("", ["--malleable-fraction", "1.5"], "field malleable-fraction: must be a number in [0, 1]"),
    ("", ["--malleable", "equi", "--rca", "yield"], "field malleable: equipartition and RCA"),
    ("", ["--malleable", "sd", "--sharing-factor", "1.5"],
     "field malleable-param: sharing_factor must be in (0, 1), got 1.5"),
    ("", ["--malleable", "sd", "--max-mates", "0"],
     "field malleable-param: max_mates must be >= 1, got 0"),
    ("", ["--malleable", "sd", "--malleable-param", "max_slowdown=-1"],
     "field malleable-param: max_slowdown must be > 0, got -1.0"),
    ("", ["--sharing-factor", "0.5"], "field sharing-factor: needs --malleable sd"),
])
def test_bad_malleable_input_is_one_line_and_exit_2(tmp_path, capsys, header, extra, match):
    swf = trace(tmp_path, header)
    out = tmp_path / "out"
    code = main(["run", "--workload", str(swf), "--platform", "tiny8x2", "--out", str(out),
                 *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("cosim: error: ") and match in err, err
    assert "Traceback" not in err and not out.exists()


def test_an_unknown_malleable_policy_lists_the_known_ones(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--workload", str(trace(tmp_path, "")), "--malleable", "sdp"])
    assert exc.value.code == 2
    assert "invalid choice: 'sdp' (choose from 'none', 'equi', 'sd')" in capsys.readouterr().err
