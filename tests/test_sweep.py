"""``cosim sweep``: specs checked before anything runs, config-derived run ids, the table,
and resuming a sweep that was killed without repeating a finished run."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time

import pytest

from cosim.cli import main
from cosim.sweep import load_spec

# 4 hosts; job 3 backfills under EASY, not under FCFS (tests/test_cli_run.py's TINY)
TINY = """\
1 0 -1 100 3 -1 -1 3 100 -1 1 1 1 -1 -1 -1 -1 -1
2 5 -1 10 4 -1 -1 4 10 -1 1 1 1 -1 -1 -1 -1 -1
3 10 -1 50 1 -1 -1 1 50 -1 1 1 1 -1 -1 -1 -1 -1
"""


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def spec(tmp_path):
    swf = tmp_path / "tiny.swf"
    swf.write_text(TINY)
    path = tmp_path / "spec.toml"
    path.write_text(f'seeds = [0, 1]\n\n[base]\nworkload = "{swf}"\nhosts = 4\n\n'
                    '[grid]\nbatch = ["fcfs", "easy"]\n')
    return path


def table(path):
    return list(csv.DictReader(path.open()))


def test_a_sweep_runs_every_combination_and_tabulates_them(capsys, tmp_path, spec):
    out = tmp_path / "sw"
    code, stdout, err = run(capsys, "sweep", str(spec), "--out", str(out), "--dry-run")
    assert code == 0, err
    assert stdout.count("to run") == 4 and not out.exists()
    code, stdout, err = run(capsys, "sweep", str(spec), "--out", str(out), "--quiet")
    assert code == 0, err
    rows = table(out / "sweep.csv")
    assert [(r["batch"], r["seed"]) for r in rows] == [("fcfs", "0"), ("fcfs", "1"),
                                                       ("easy", "0"), ("easy", "1")]
    assert {r["mean_wait_s"] for r in rows if r["batch"] == "easy"} != {
        r["mean_wait_s"] for r in rows if r["batch"] == "fcfs"}  # EASY backfills job 3
    for r in rows:
        d = out / "runs" / r["id"]
        assert (d / "summary.json").exists() and (d / "config.json").exists()
        assert (d / "jobs.csv").exists() and (d / "results.h5").exists()
    code, stdout, err = run(capsys, "sweep", str(spec), "--out", str(out), "--dry-run")
    assert stdout.count("finished") == 4
    import h5py  # sweep.h5: the same table, typed columns

    with h5py.File(out / "sweep.h5") as f:
        g = f["sweep"]
        assert list(g) == list(rows[0])  # the same columns, in order
        assert g["id"].asstr()[:].tolist() == [r["id"] for r in rows]
        assert g["seed"].dtype.kind == "i" and g["seed"][:].tolist() == [0, 1, 0, 1]
        assert g["mean_wait_s"][:].tolist() == [float(r["mean_wait_s"]) for r in rows]


def test_run_ids_follow_the_configuration_not_the_order(tmp_path, spec):
    ids = {r.id: dict(r.varying) for r in load_spec(spec)}
    text = spec.read_text()
    spec.write_text(text.replace('["fcfs", "easy"]', '["easy", "fcfs"]')
                    .replace("[0, 1]", "[1, 0, 2]"))
    again = {r.id: dict(r.varying) for r in load_spec(spec)}
    assert set(ids) < set(again) and all(again[k] == v for k, v in ids.items())


def test_a_run_id_hashes_only_the_options_off_their_defaults():
    """An option at its default is not in the id: a sweep resumes across a cosim version that
    adds an option (with a default that keeps the old behaviour)."""
    import hashlib

    from cosim.experiment import RunOptions
    from cosim.sweep import run_id

    plain = RunOptions(workload="w.swf")
    assert run_id(plain) == hashlib.sha256(b'{"workload": "w.swf"}').hexdigest()[:12]
    assert run_id(RunOptions(workload="w.swf", batch="easy", seed=0)) == run_id(plain)
    assert run_id(RunOptions(workload="w.swf", seed=1)) != run_id(plain)
    assert run_id(RunOptions(workload="w.swf", out="elsewhere")) == run_id(plain)


def test_resume_redoes_only_missing_or_incomplete_runs(capsys, tmp_path, spec):
    out = tmp_path / "sw"
    assert run(capsys, "sweep", str(spec), "--out", str(out), "--quiet")[0] == 0
    rows = table(out / "sweep.csv")
    lost = out / "runs" / rows[1]["id"] / "summary.json"
    lost.unlink()  # as if killed while writing that run
    before = {r["id"]: (out / "runs" / r["id"] / "summary.json").stat().st_mtime_ns
              for r in rows if r is not rows[1]}
    code, _, err = run(capsys, "sweep", str(spec), "--out", str(out), "-v")
    assert code == 0 and "sweep: 3/4 runs (3 already finished)" in err
    assert "sweep: 4/4 runs (3 already finished)" in err
    # not a terminal, not asked: no progress at all
    lost.unlink()
    code, _, err = run(capsys, "sweep", str(spec), "--out", str(out))
    assert code == 0 and "already finished" not in err
    assert lost.exists() and len(table(out / "sweep.csv")) == 4
    assert all((out / "runs" / k / "summary.json").stat().st_mtime_ns == t
               for k, t in before.items())  # no finished run repeated


def _signal_after_a_run(proc, out, sig):
    """Send `sig` to the sweep `proc` once its table lists a finished run."""
    t0 = time.monotonic()
    while not ((out / "sweep.csv").exists() and len(table(out / "sweep.csv")) >= 1):
        assert proc.poll() is None and time.monotonic() - t0 < 120, proc.stderr.read()
        time.sleep(0.05)
    proc.send_signal(sig)


@pytest.mark.serial  # (times signals and process ends: alone, `make test`)
def test_a_sweep_killed_at_any_moment_loses_no_finished_run(tmp_path):
    """SIGKILL while the sweep runs (after a first run finished): the finished runs stay, the
    table lists them, and the same command finishes the rest without repeating them."""
    from cosim.paths import TRACES_DIR

    path = tmp_path / "spec.toml"
    path.write_text(f'[base]\nworkload = "{TRACES_DIR / "lublin_256.swf.gz"}"\n\n'
                    '[grid]\nbatch = ["fcfs", "easy", "conservative"]\n'
                    'priority = ["fcfs", "sjf"]\n')
    out = tmp_path / "sw"
    cmd = [sys.executable, "-m", "cosim", "sweep", str(path), "--out", str(out), "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _signal_after_a_run(proc, out, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    done = _finished(out)
    assert 1 <= len(done) < 6
    _resumed(out, done, 6, subprocess.run(cmd, capture_output=True, text=True, timeout=300))


def _finished(out):
    """The finished runs of a sweep: id -> when its summary.json was written."""
    return {r["id"]: (out / "runs" / r["id"] / "summary.json").stat().st_mtime_ns
            for r in table(out / "sweep.csv")}


def _resumed(out, done, n, again):
    """`again` (the same command) finished the sweep's `n` runs without redoing `done`."""
    assert again.returncode == 0, again.stderr
    rows = table(out / "sweep.csv")
    assert len(rows) == n and len({r["id"] for r in rows}) == n
    assert all((out / "runs" / k / "summary.json").stat().st_mtime_ns == t
               for k, t in done.items())


@pytest.mark.parametrize("body, needle", [
    ('[base]\nworkload = "W"\n[grid]\nbacth = ["fcfs"]\n',
     ":4: field grid.bacth: not a run option"),
    ('[base]\nworkload = "W"\n[grid]\nbatch = "easy"\n',
     ":4: field grid.batch: a grid value is a non-empty list"),
    ('[base]\nworkload = "W"\nhosts = "many"\n', ":3: field base.hosts: expected an integer"),
    ('[base]\nworkload = "W"\n[[zip]]\nbatch = ["easy", "fcfs"]\nseed = [1]\n',
     "field zip[0]: a [[zip]] table holds non-empty lists of one length"),
    ('seeds = [0]\nrepeat = 2\n[base]\nworkload = "W"\n', ":2: field repeat: give seeds or repeat"),
    ('[base]\nworkload = "W"\n[grid]\nseed = [1, 1]\n', "are the same run"),
    ('[grid]\nbatch = ["easy"]\n', "field base.workload: every run needs a workload"),
    ('[basis]\nworkload = "W"\n', ":1: field basis: unknown section or key"),
    ('[base]\nworkload = "W"\n[grid]\nbatch = ["easy", "nope"]\n',
     "spec.toml: run "),  # found when the run is prepared: named by its options
    ('[base]\nworkload = "W"\n[grid]\nbatch = ["easy", "nope"]\n',
     "(batch=nope): field backfill: unknown backfill policy 'nope'"),
    ('[base]\nworkload = "W"\nout = "x"\n', ":3: field base.out: not a run option"),
])
def test_bad_specs_are_one_line_errors_before_anything_runs(capsys, tmp_path, body, needle):
    swf = tmp_path / "tiny.swf"
    swf.write_text(TINY)
    path = tmp_path / "spec.toml"
    path.write_text(body.replace('"W"', f'"{swf}"'))
    code, _, err = run(capsys, "sweep", str(path), "--out", str(tmp_path / "sw"))
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("cosim: error: ") and needle in err, err
    assert not (tmp_path / "sw").exists()


def test_zip_groups_vary_together_and_repeat_gives_seeds(tmp_path, spec):
    swf = tmp_path / "tiny.swf"
    path = tmp_path / "z.toml"
    path.write_text(f'repeat = 3\n[base]\nworkload = "{swf}"\n[grid]\nhosts = [4, 8]\n'
                    '[[zip]]\nbatch = ["fcfs", "easy"]\npriority = ["fcfs", "sjf"]\n')
    runs = load_spec(path)
    combos = [dict(r.varying) for r in runs]
    assert len(runs) == 2 * 2 * 3 and len({r.id for r in runs}) == 12
    assert {(c["batch"], c["priority"]) for c in combos} == {("fcfs", "fcfs"), ("easy", "sjf")}
    assert sorted({c["seed"] for c in combos}) == [0, 1, 2]
    assert combos[0] == {"hosts": 4, "batch": "fcfs", "priority": "fcfs", "seed": 0}
    assert all(r.opt.workload == str(swf) for r in runs)


def test_local_workers_give_the_serial_table(capsys, tmp_path, spec):
    """``--jobs 2``: runs in two worker processes, handed out as workers free up; the table
    (in spec order) and every run's files equal the serial sweep's."""
    for jobs in ("1", "2"):
        code, _, err = run(capsys, "sweep", str(spec), "--out", str(tmp_path / jobs),
                           "--quiet", "--jobs", jobs)
        assert code == 0, err
    assert (tmp_path / "1" / "sweep.csv").read_text() == (tmp_path / "2" / "sweep.csv").read_text()
    for r in table(tmp_path / "1" / "sweep.csv"):
        a, b = ((tmp_path / j / "runs" / r["id"] / "jobs.csv").read_bytes() for j in "12")
        assert a == b
    code, _, err = run(capsys, "sweep", str(spec), "--out", str(tmp_path / "0"), "--jobs", "0")
    assert code == 2 and "field jobs: must be at least 1" in err


def test_report_compares_the_runs_of_a_sweep_and_groups_them(capsys, tmp_path, spec):
    """`cosim report DIR`: a row per run with the options that differ; ``--group-by``: mean ±
    sd per group (here over the seeds), checked against the runs' own metrics."""
    import statistics

    out = tmp_path / "sw"
    assert run(capsys, "sweep", str(spec), "--out", str(out), "--quiet")[0] == 0
    rows = table(out / "sweep.csv")
    code, text, err = run(capsys, "report", str(out))
    assert code == 0, err
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["run", "batch", "seed"] and len(lines) == 5
    assert [ln.split()[0] for ln in lines[1:]] == [r["id"] for r in rows]  # the table's order
    code, text, err = run(capsys, "report", str(out), "--group-by", "batch", "--csv")
    assert code == 0, err
    grouped = list(csv.DictReader(text.splitlines()))
    assert [(g["batch"], g["n"]) for g in grouped] == [("fcfs", "2"), ("easy", "2")]
    for g in grouped:
        waits = [float(r["mean_wait_s"]) for r in rows if r["batch"] == g["batch"]]
        assert float(g["mean_wait_s_mean"]) == pytest.approx(statistics.mean(waits))
        assert float(g["mean_wait_s_sd"]) == pytest.approx(statistics.stdev(waits))
    code, text, err = run(capsys, "report", str(out), "--group-by", "batch,seed")
    assert code == 0 and len(text.splitlines()) == 5 and "±" in text
    files = [str(out / "runs" / r["id"] / "results.h5") for r in rows[:2]]
    code, text, err = run(capsys, "report", *files, "--csv")
    assert code == 0 and len(text.splitlines()) == 3
    code, _, err = run(capsys, "report", str(out), "--group-by", "colour")
    assert code == 2 and "field group-by: no run has the configuration key 'colour'" in err
    code, _, err = run(capsys, "report", str(tmp_path))
    assert code == 2 and "no results.h5" in err


def test_plot_a_metric_against_an_option_over_a_sweep(capsys, tmp_path, spec):
    """`cosim plot DIR --x KEY --y METRIC --hue KEY`: the points are the means (± sd) of the
    runs that differ in nothing else (the seeds), and the PNG is written."""
    import statistics

    from cosim.output.compare_plot import metric_points
    from cosim.output.hdf5 import read_results

    out = tmp_path / "sw"
    assert run(capsys, "sweep", str(spec), "--out", str(out), "--quiet")[0] == 0
    code, text, err = run(capsys, "plot", str(out), "--x", "batch", "--y", "mean_wait_s")
    assert code == 0, err
    png = out / "mean_wait_s-by-batch.png"
    assert text.strip() == str(png) and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    runs = [r for p in sorted(out.glob("runs/*/results.h5")) for r in read_results(p)]
    xs, lines = metric_points(runs, x="batch", y="mean_wait_s", hue="seed")
    assert set(xs) == {"fcfs", "easy"} and set(lines) == {0, 1}
    _, pooled = metric_points(runs, x="batch", y="mean_wait_s")
    for xv, mean, sd, n in pooled[None]:
        waits = [r.metrics["mean_wait_s"] for r in runs if r.config["batch"] == xv]
        assert n == 2 and mean == pytest.approx(statistics.mean(waits))
        assert sd == pytest.approx(statistics.stdev(waits))
    for argv, needle in ((["--x", "colour", "--y", "mean_wait_s"], "field x: no run has"),
                         (["--x", "batch", "--y", "joy"], "field y: run "),
                         (["--x", "batch"], "--x and --y go together")):
        code, _, err = run(capsys, "plot", str(out), *argv)
        assert code == 2 and needle in err, err


def test_parts_of_a_job_array_share_the_directory_and_the_table(capsys, tmp_path, spec):
    """``--part 1/2`` runs runs 1 and 3, ``--part 2/2`` runs 2 and 4 (spec order), each under
    its own lock; the table lists every finished run of the spec, whichever part ran it."""
    out = tmp_path / "sw"
    ids = [r.id for r in load_spec(spec)]
    code, text, err = run(capsys, "sweep", str(spec), "--out", str(out), "--part", "1/2",
                          "--quiet")
    assert code == 0 and "part 1/2: 2 of them" in text, err
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(ids[0::2])
    assert [r["id"] for r in table(out / "sweep.csv")] == ids[0::2]
    code, text, err = run(capsys, "sweep", str(spec), "--out", str(out), "--part", "2/2",
                          "--quiet")
    assert code == 0, err
    assert [r["id"] for r in table(out / "sweep.csv")] == ids  # spec order, complete
    code, _, err = run(capsys, "sweep", str(spec), "--out", str(out), "--dry-run")
    assert code == 0
    for bad in ("3/2", "0/2", "1-2", "a/b"):
        code, _, err = run(capsys, "sweep", str(spec), "--out", str(out), "--part", bad)
        assert code == 2 and "field part: expected I/N" in err, err


def test_under_mpiexec_the_ranks_share_the_runs_and_give_the_serial_table(capsys, tmp_path,
                                                                         spec):
    """``mpiexec -n 3 cosim sweep``: rank 0 hands the runs to ranks 1-2 (mpi4py.futures);
    the table and each run's files are the serial sweep's."""
    import os
    from pathlib import Path

    mpiexec = Path(sys.executable).parent / "mpiexec"
    assert mpiexec.exists(), "mpiexec comes with the mpich wheel (make install)"
    assert run(capsys, "sweep", str(spec), "--out", str(tmp_path / "serial"), "--quiet")[0] == 0
    env = dict(os.environ, COSIM_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([str(mpiexec), "-n", "3", sys.executable, "-m", "cosim", "sweep",
                           str(spec), "--out", str(tmp_path / "mpi"), "--quiet"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("runs finished") == 1  # rank 0 alone reports
    serial, mpi = ((tmp_path / d / "sweep.csv").read_text() for d in ("serial", "mpi"))
    assert serial == mpi
    for r in table(tmp_path / "serial" / "sweep.csv"):
        a, b = ((tmp_path / d / "runs" / r["id"] / "jobs.csv").read_bytes()
                for d in ("serial", "mpi"))
        assert a == b


@pytest.fixture
def coupled_spec(tmp_path):
    """8 co-simulated runs (ESP-Mandelbrot on 16 hosts): 2 techniques x 2 RCA x 2 seeds."""
    esp = tmp_path / "esp16.swf"
    assert main(["workload", "esp", "--app", "mandelbrot", "--hosts", "16", "--seed", "2",
                 "-o", str(esp)]) == 0
    path = tmp_path / "coupled.toml"
    path.write_text(f'seeds = [0, 1]\n[base]\nworkload = "{esp}"\nhosts = 16\n'
                    'app_overrides = {width = "48"}\n'
                    '[grid]\ntechnique = ["GSS", "AF"]\nrca = ["off", "yield"]\n')
    return path


def _mpi_sweep(tmp_path, spec, out, *args, popen=False):
    import os
    from pathlib import Path

    mpiexec = Path(sys.executable).parent / "mpiexec"
    assert mpiexec.exists(), "mpiexec comes with the mpich wheel (make install)"
    cmd = [str(mpiexec), "-n", "3", sys.executable, "-m", "cosim", "sweep", str(spec),
           "--out", str(out), "--quiet", *args]
    env = dict(os.environ, COSIM_CACHE_DIR=str(tmp_path / "cache"))
    if popen:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def test_groups_of_ranks_co_simulate_each_run_and_give_the_serial_table(capsys, tmp_path,
                                                                       coupled_spec):
    """``mpiexec -n 3 cosim sweep --ranks-per-run 2``: one group of ranks 1-2 simulates every
    run over 2 ranks (the batch level on rank 1, the apps on rank 2); the table and each run's
    files are the serial sweep's."""
    serial, groups = tmp_path / "serial", tmp_path / "groups"
    assert run(capsys, "sweep", str(coupled_spec), "--out", str(serial), "--quiet")[0] == 0
    proc = _mpi_sweep(tmp_path, coupled_spec, groups, "--ranks-per-run", "2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("runs finished") == 1
    assert (serial / "sweep.csv").read_text() == (groups / "sweep.csv").read_text()
    rows = table(serial / "sweep.csv")
    assert len(rows) == 8
    for r in rows:
        a, b = ((d / "runs" / r["id"]).resolve() for d in (serial, groups))
        assert (a / "jobs.csv").read_bytes() == (b / "jobs.csv").read_bytes()
        summaries = [json.loads((d / "summary.json").read_text()) for d in (a, b)]
        # really co-simulated over the group
        assert [s["execution"]["ranks"] for s in summaries] == [1, 2]
        assert summaries[0]["stats"] == summaries[1]["stats"]
        assert summaries[0]["stats"]["chunk_events"] > 0


def test_the_layout_of_ranks_per_run_is_checked(capsys, tmp_path, spec):
    from cosim.transport.sweep_ranks import layout_problem

    assert layout_problem(3, 2) is None and layout_problem(7, 3) is None
    assert layout_problem(2, 1) is None and layout_problem(9, 4) is None
    assert "mpiexec -n 3, 5, 7" in layout_problem(4, 2)
    assert layout_problem(2, 2) and layout_problem(3, 0)
    code, _, err = run(capsys, "sweep", str(spec), "--out", str(tmp_path / "x"),
                       "--ranks-per-run", "2")
    assert code == 2 and "field ranks-per-run: 2 ranks per run need mpiexec -n 3" in err
    code, _, err = run(capsys, "sweep", str(spec), "--out", str(tmp_path / "x"),
                       "--ranks-per-run", "0")
    assert code == 2 and "field ranks-per-run: must be at least 1" in err
    assert not (tmp_path / "x").exists()


@pytest.mark.serial  # (times signals and process ends: alone, `make test`)
def test_ctrl_c_stops_a_sweep_under_mpiexec_and_the_same_command_finishes_it(tmp_path,
                                                                            coupled_spec):
    """Ctrl-C to ``mpiexec -n 3 cosim sweep --ranks-per-run 2`` (mpiexec passes SIGINT to
    every rank) while runs are going: every rank stops promptly (exit 130, one message),
    the finished runs stay, and the same command finishes the rest without repeating one."""
    out = tmp_path / "sw"
    proc = _mpi_sweep(tmp_path, coupled_spec, out, "--ranks-per-run", "2", popen=True)
    try:
        _signal_after_a_run(proc, out, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.count("cosim: interrupted") == 1 and "Traceback" not in err, err
    done = _finished(out)
    assert 1 <= len(done) < 8
    _resumed(out, done, 8, _mpi_sweep(tmp_path, coupled_spec, out, "--ranks-per-run", "2"))


@pytest.mark.parametrize("case, ranks, expected", [
    ("leader-fails", 3, ["RuntimeError: boom before the hello"]),
    ("member-fails", 3, ["CosimError: rank 1 of the run's group could not prepare it: "
                         "ValueError: cannot prepare"]),
    ("many", 5, None)])
def test_groups_end_cleanly_when_a_run_fails_before_its_hello(tmp_path, case, ranks, expected):
    """`sweep_on_ranks` with groups of 2 (tests/mpi/sweep_groups.py): a run that fails on its
    leader before the run's hello, or on a member while it prepares, is that run's error —
    no rank is left waiting — and with two groups (-n 5) the runs go to both leaders."""
    import ast
    from pathlib import Path

    mpiexec = Path(sys.executable).parent / "mpiexec"
    driver = Path(__file__).parent / "mpi" / "sweep_groups.py"
    proc = subprocess.run([str(mpiexec), "-n", str(ranks), sys.executable, str(driver), case],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    result = ast.literal_eval(line[len("RESULT "):])
    if expected is not None:
        assert result == expected
    else:  # six runs handed out as leaders free up: each on a group of 2, both groups used
        assert len(result) == 6 and {size for size, _ in result} == {2}
        assert {leader for _, leader in result} == {1, 3}
