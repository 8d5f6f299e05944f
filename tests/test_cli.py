"""The ``cosim app`` command: JSON and CSV outputs, and every bad-input path (exit 2, one line)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from cosim.cli import main


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COSIM_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def costs_csv(tmp_path):
    path = tmp_path / "costs.csv"
    values = np.random.default_rng(0).exponential(1e5, 500)
    path.write_text("# measured loop\n" + "\n".join(f"{v:.3f}" for v in values) + "\n")
    return path, values


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_app_json_summary(capsys, costs_csv):
    path, values = costs_csv
    code, out, err = run_cli(capsys, "app", "--app", "profile", "--costs", str(path),
                             "--hosts", "4", "--technique", "GSS", "--json")
    assert code == 0, err
    row = json.loads(out)
    for key in ("technique", "n_tasks", "n_pes", "n_chunks", "makespan_s", "finish_s",
                "max_over_mean", "wall_s"):
        assert key in row
    assert row["technique"] == "GSS" and row["n_tasks"] == 500 and row["n_pes"] == 4
    assert len(row["finish_s"]) == 4
    assert row["makespan_s"] == pytest.approx(max(row["finish_s"]))
    assert row["max_over_mean"] == pytest.approx(max(row["finish_s"]) /
                                                 np.mean(row["finish_s"]))
    # the work is all there: 1 GFLOP/s hosts, so the makespan is at least total/4 seconds
    assert row["makespan_s"] >= values.sum() / 4e9 * (1 - 1e-9)


def test_app_chunks_csv(capsys, tmp_path, costs_csv):
    path, _ = costs_csv
    out_csv = tmp_path / "chunks.csv"
    code, out, err = run_cli(capsys, "app", "--app", "profile", "--costs", str(path),
                             "--hosts", "3", "--technique", "FAC2", "--chunks", str(out_csv),
                             "--json")
    assert code == 0, err
    rows = list(csv.DictReader(out_csv.open()))
    assert list(rows[0]) == ["pe", "first", "size", "t_assign_s", "t_start_s", "t_finish_s"]
    assert len(rows) == json.loads(out)["n_chunks"]
    assert sum(int(r["size"]) for r in rows) == 500
    assert {int(r["pe"]) for r in rows} <= {0, 1, 2}
    assert max(float(r["t_finish_s"]) for r in rows) == pytest.approx(json.loads(out)["makespan_s"])


def test_app_mandelbrot_every_technique_table(capsys):
    code, out, err = run_cli(capsys, "app", "--app", "mandelbrot", "--app-param", "width=48",
                             "--app-param", "max_iter=100", "--hosts", "8",
                             "--technique", "all")
    assert code == 0, err
    for name in ("STATIC", "SS", "AWF-B", "AF", "RND"):
        assert f"\n{name} " in out
    assert "max/mean" in out


def test_app_with_parameters_speed_and_platform(capsys, costs_csv):
    path, _ = costs_csv
    base = ["app", "--app", "profile", "--costs", str(path), "--hosts", "2", "--json"]
    code, out, err = run_cli(capsys, *base, "--technique", "WF", "--param", "weights=1,3")
    assert code == 0, err
    code, slow, _ = run_cli(capsys, *base, "--technique", "STATIC")
    code, fast, _ = run_cli(capsys, *base, "--technique", "STATIC", "--speed", "2Gf")
    assert json.loads(fast)["makespan_s"] < json.loads(slow)["makespan_s"]
    code, out, err = run_cli(capsys, *base, "--technique", "SS", "--platform", "mc64x48")
    assert code == 0, err
    assert json.loads(out)["n_pes"] == 96


def test_availability_file(capsys, tmp_path, costs_csv):
    path, _ = costs_csv
    av = tmp_path / "av.csv"
    av.write_text("pe,t_s,factor\n1,0,0.25\n")
    base = ["app", "--app", "profile", "--costs", str(path), "--hosts", "2", "--json",
            "--technique", "STATIC"]
    _, plain, _ = run_cli(capsys, *base)
    code, slow, err = run_cli(capsys, *base, "--availability", str(av))
    assert code == 0, err
    assert json.loads(slow)["finish_s"][1] > 3.9 * json.loads(plain)["finish_s"][1] - 1e-6


BAD = [
    (["--technique", "GUIDED"], "unknown technique 'GUIDED' (known: AF, AWF"),
    (["--technique", "GSS", "--param", "foo=1"], "GSS.foo: unknown key"),
    (["--technique", "GSS", "--param", "min_chunk=zero"], "expected an integer"),
    (["--technique", "GSS", "--param", "min_chunk"], "expected KEY=VALUE"),
    (["--technique", "WF", "--param", "weights=1,2,3"], "3 weights given for 4 PEs"),
    (["--technique", "GSS", "--hosts", "999"], "999 hosts asked"),
    (["--technique", "GSS", "--hosts", "0"], "0 hosts asked"),
    (["--technique", "GSS", "--platform", "nowhere"], "nowhere"),
    (["--technique", "GSS", "--speed", "fast"], "speed"),
    (["--technique", "GSS,SS", "--chunks", "x.csv"], "--chunks needs a single technique"),
    (["--technique", "GSS", "--overhead", "-1"], "overhead_s must be >= 0"),
    (["--technique", "GSS", "--timesteps", "0"], "timesteps must be >= 1"),
]


@pytest.mark.parametrize("extra, message", BAD)
def test_bad_command_line(capsys, costs_csv, extra, message):
    path, _ = costs_csv
    argv = ["app", "--app", "profile", "--costs", str(path), "--hosts", "4", *extra]
    if "--hosts" in extra[2:]:
        argv = ["app", "--app", "profile", "--costs", str(path), *extra]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("cosim: error: ")
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize("content, message", [
    ("1\n2\nnan\n", ":3: field cost: NaN is not a cost"),
    ("1\n-5\n", ":2: field cost:"),
    ("", "empty"),
    ("1\nabc\n", ":2:"),
])
def test_bad_cost_files(capsys, tmp_path, content, message):
    path = tmp_path / "costs.csv"
    path.write_text(content)
    code, _, err = run_cli(capsys, "app", "--app", "profile", "--costs", str(path),
                           "--hosts", "2", "--technique", "SS")
    assert code == 2 and err.count("\n") == 1
    assert str(path) in err and message in err


def test_bad_app_inputs(capsys, tmp_path):
    code, _, err = run_cli(capsys, "app", "--app", "mandelbrot", "--app-param", "colour=red",
                           "--hosts", "2", "--technique", "SS")
    assert code == 2 and "colour" in err and "unknown" in err
    toml = tmp_path / "app.toml"
    toml.write_text('model = "mandelbrot"\n[params]\nwidth = 16\nsparkle = 1\n')
    code, _, err = run_cli(capsys, "app", "--app", str(toml), "--hosts", "2",
                           "--technique", "SS")
    assert code == 2 and str(toml) in err and "sparkle" in err
    code, _, err = run_cli(capsys, "app", "--app", "profile", "--costs",
                           str(tmp_path / "missing.npy"), "--hosts", "2", "--technique", "SS")
    assert code == 2 and "missing.npy" in err


def test_bad_availability_file(capsys, tmp_path, costs_csv):
    path, _ = costs_csv
    av = tmp_path / "av.csv"
    av.write_text("pe,t_s,factor\n0,0,1\n1,abc,0.5\n")
    code, _, err = run_cli(capsys, "app", "--app", "profile", "--costs", str(path),
                           "--hosts", "2", "--technique", "SS", "--availability", str(av))
    assert code == 2 and f"{av}:3: field t_s: not a number" in err


def test_entry_point_exit_status_and_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "cosim", "app", "--app", "mandelbrot",
                           "--hosts", "4", "--technique", "NOPE"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "unknown technique 'NOPE'" in proc.stderr


def test_the_cli_collects_garbage_rarely_while_it_runs_and_restores_the_thresholds(
        capsys, monkeypatch, tmp_path):
    import gc

    import cosim.cli as cli
    from cosim.core.collect import GC_THRESHOLD

    seen = []

    def handler(args):
        seen.append(gc.get_threshold())
        return 0

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda listing=False: parser)
    parser.set_defaults(handler=handler)
    before = gc.get_threshold()
    sub = parser._subparsers._group_actions[0].choices["app"]
    sub.set_defaults(handler=handler)
    assert main(["app", "--app", "mandelbrot", "--hosts", "2", "--technique", "SS"]) == 0
    assert seen == [GC_THRESHOLD] and gc.get_threshold() == before
