"""MPI tests: processes started with ``mpiexec -n 3`` agree with the in-process run.

The MPI program runs in a subprocess with a timeout, so a hang fails the test instead of
blocking the suite. Each rank gets its own PYTHONHASHSEED, so any dependence on string hashing
or set order would show as a disagreement.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import sys
from pathlib import Path

from cosim.output.hdf5 import read_results
from cosim.testing.scenarios import loop_digest

HERE = Path(__file__).parent
MPIEXEC = Path(sys.executable).parent / "mpiexec"


def test_three_ranks_give_the_in_process_result():
    # The mpich wheel is a declared dependency of the test set-up (make test installs it).
    assert MPIEXEC.exists(), f"mpiexec not found next to {sys.executable}; run make install"
    script = str(HERE / "mpi" / "rank_determinism.py")
    cmd = [str(MPIEXEC)]
    for rank in range(3):
        if rank:
            cmd.append(":")
        cmd += ["-n", "1", "-env", "PYTHONHASHSEED", str(rank + 11), sys.executable, script, "5"]
    env = dict(os.environ)
    env.pop("PYTHONHASHSEED", None)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("digest ")]
    assert line, proc.stdout + proc.stderr
    _, digest, _, size = line[0].split()
    assert size == "3"
    assert digest == loop_digest(seed=5)


def h5_content(path):
    """Every dataset (dtype and bytes) and every attribute of an HDF5 file by name (a run's
    group as ``runs/*``: its id is its output directory's name), but `/provenance` (command
    line, date): what must not depend on how the runs were made."""
    import h5py

    out = {}

    def visit(name, obj):
        if name == "provenance" or name.startswith("provenance/"):
            return
        name = "/".join("*" if k == 1 and name.startswith("runs/") else part
                        for k, part in enumerate(name.split("/")))
        if isinstance(obj, h5py.Dataset):
            out[name] = (str(obj.dtype), obj[()].tobytes())
        out[name + "@"] = {k: repr(v) for k, v in obj.attrs.items()}

    with h5py.File(path, "r") as f:
        out["@"] = {k: repr(v) for k, v in f.attrs.items()}
        f.visititems(visit)
    return out


def _mpi_run(tmp_path, k, *extra, timeout=300):
    cmd = [str(MPIEXEC), "-n", str(k), sys.executable, "-m", "cosim", "run", *extra]
    env = dict(os.environ)
    env["COSIM_CACHE_DIR"] = str(tmp_path / "cache")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=tmp_path)


# SS and FSC: ALS ranks promise lower bounds (LoopRun.done_bound) and are skipped by rounds
# metric-aware: the balanced order ranked at every pass (from BF 0.5, tuned), the window
# search (W = 3, not tuned)
METRIC_AWARE = ("--priority", "metric-aware", "--bf", "0.5", "--window", "3", "--adaptive",
                "bf", "--tuner-param", "check_interval_s=600")


@pytest.mark.parametrize("technique, rca, malleable, extra", [
    ("AF", "yield", "none", ()), ("GSS", "full", "none", ()), ("SS", "full", "none", ()),
    ("FSC", "yield", "none", ()), ("SS", "off", "equi", ()), ("GSS", "off", "sd", ()),
    ("FAC2", "yield", "none", METRIC_AWARE)])
def test_coupled_run_is_identical_on_1_2_and_3_ranks(tmp_path, technique, rca, malleable,
                                                     extra):
    from cosim.cli import main

    esp = tmp_path / "esp16.swf"
    assert main(["workload", "esp", "--app", "mandelbrot", "--hosts", "16", "--seed", "2",
                 "-o", str(esp)] + (["--malleable"] if malleable != "none" else [])) == 0
    outs = {}
    # --rank0-apps: rank 0 simulates apps too (SS, FSC: spread over all ranks; the others:
    # rank 0 alone, `cosim.placement.app_ranks`)
    for k, rank0 in ((1, False), (2, False), (3, False), (3, True)):
        out = tmp_path / f"n{k}{'r0' if rank0 else ''}"
        proc = _mpi_run(tmp_path, k, "--workload", str(esp), "--hosts", "16",
                        "--technique", technique, "--rca", rca, "--exclusion-ok", "all",
                        "--malleable", malleable,
                        "--app-overrides", "width=48", "--out", str(out), "--json",
                        *(["--rank0-apps"] if rank0 else []), *extra)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        summary = json.loads(proc.stdout)
        assert summary["execution"]["ranks"] == k
        metrics = {key: v for key, v in summary.items()
                   if key not in ("execution", "wall_s", "out", "results", "run_id")}
        (tables,) = read_results(out / "results.h5")
        assert len(tables.tuning) > 1 if extra else not len(tables.tuning)
        assert tables.stats == summary["stats"]
        rollbacks = summary["execution"]["rollbacks"]  # depends on how far ranks ran ahead
        if k == 3 and not rank0 and malleable == "none":  # ALS ranks 1 and 2 simulated
            assert summary["execution"]["apps_ahead"] > 0  # apps before their start (~180)
            if rca != "full":  # settled: an ended app's facts come at once (~1 round in 4,
                # 3 in 4 before)
                assert 2 * summary["execution"]["rounds_asked"] < summary["execution"]["rounds"]
        # every table and attribute of results.h5 but its provenance: the same on any ranks
        outs[k, rank0] = ((out / "jobs.csv").read_bytes(), (out / "schedule.swf").read_bytes(),
                          metrics, summary["stats"], h5_content(out / "results.h5"))
    assert len(set(map(repr, outs.values()))) == 1
    outs = {k: v for (k, rank0), v in outs.items() if not rank0}
    if malleable != "none":  # AC13: resizes really happened, and apps ran ahead of some
        assert outs[1][3]["shrinks"] > 0 and outs[1][3]["expands"] > 0
        assert rollbacks > 0  # AC12/AC13: commands stamped before an app's run-ahead
        return
    assert outs[1][2]["lends"] > 0  # RCA really lent hosts in this scenario
    if rca == "full":
        assert outs[1][3]["hosts_excluded"] > 0  # and apps gave up hosts when asked


def test_an_app_ending_just_past_its_walltime_is_killed_on_any_number_of_ranks(tmp_path):
    """A settled run (`cosim.runner.settled`) sends an app's end at once only when it ends
    by its walltime: job 1's last chunks are handed out before its 10 s walltime, but their
    "done" answers arrive 0.24 µs after it (message times), so the batch level kills it at
    10 s — on 1, 2 and 3 ranks alike, rank 1 asked meanwhile for job 2's start."""
    swf = tmp_path / "kill.swf"
    swf.write_text("; MaxNodes: 2\n; MaxProcs: 2\n"
                   "; CosimApp: 1 app=mandelbrot priority=0 total_flop=19999996400\n"
                   "; CosimApp: 2 app=mandelbrot priority=0 total_flop=1e9\n"
                   "1 0 -1 30 -1 -1 -1 2 10 -1 1 -1 -1 1 -1 -1 -1 -1\n"
                   "2 0 -1 30 -1 -1 -1 1 1000 -1 1 -1 -1 2 -1 -1 -1 -1\n")
    outs = []
    for k in (1, 2, 3):
        out = tmp_path / f"n{k}"
        proc = _mpi_run(tmp_path, k, "--workload", str(swf), "--hosts", "2", "--technique",
                        "STATIC", "--app-overrides", "width=48", "--rca", "yield",
                        "--trace", "none", "--out", str(out), "--json")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert json.loads(proc.stdout)["killed"] == 1
        outs.append(((out / "jobs.csv").read_bytes(), (out / "schedule.swf").read_bytes()))
    assert outs[0] == outs[1] == outs[2]


def test_a_power_capped_run_is_identical_on_1_2_and_3_ranks(tmp_path):
    """Value- and power-aware scheduling (VPE, dynamic power, a 55 % cap) of trace jobs gives
    the same jobs.csv and results on 1, 2 and 3 ranks (spec §4.4)."""
    from cosim.paths import PLATFORMS_DIR

    swf = tmp_path / "p.swf"
    swf.write_text("; MaxNodes: 8\n; CosimApp: 1 value=4 soft=2 hard=6 power_beta=0.3\n"
                   "; CosimApp: 2 value=1 soft=3 hard=5\n" + "".join(
                       f"{i} {5 * i} -1 {30 + 11 * i % 60} {1 + i % 4} -1 -1 {1 + i % 4} "
                       f"{45 + 11 * i % 80} -1 1 -1 -1 {1 + i % 2} -1 -1 -1 -1\n"
                       for i in range(1, 61)))
    outs = {}
    for k in (1, 2, 3):
        out = tmp_path / f"n{k}"
        proc = _mpi_run(tmp_path, k, "--workload", str(swf), "--platform",
                        str(PLATFORMS_DIR / "kumbhare2048-nodes.toml"), "--hosts", "8",
                        "--priority", "vpe", "--power-cap", "0.55", "--power-dynamic",
                        "--out", str(out), "--json")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        summary = json.loads(proc.stdout)
        assert summary["power_changes"] > 0  # (trace jobs: rank 0 simulates them all)
        (tables,) = read_results(out / "results.h5")
        assert len(tables.power) and len(tables.power_series)
        outs[k] = ((out / "jobs.csv").read_bytes(), h5_content(out / "results.h5"),
                   {key: v for key, v in summary.items()
                    if key not in ("execution", "wall_s", "out", "results", "run_id")})
    assert outs[1] == outs[2] == outs[3]


def test_failure_on_an_als_rank_ends_the_run_quickly(tmp_path):
    from cosim.cli import main

    esp = tmp_path / "esp16.swf"
    assert main(["workload", "esp", "--app", "mandelbrot", "--hosts", "16", "-o",
                 str(esp)]) == 0
    # a problem only the application level finds, when the first app starts (bad inputs
    # are all refused before MPI starts now: the failure is injected on the ALS ranks)
    inject = ("import sys\n"
              "from mpi4py import MPI\n"
              "from cosim.als import manager\n"
              "from cosim.errors import InputError\n"
              "def fail(self, app, params):\n"
              "    raise InputError('max_iter must be >= 1 (found on an ALS rank)')\n"
              "if MPI.COMM_WORLD.rank:\n"
              "    manager.AppSimulator._costs = fail\n"
              "from cosim.cli import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    env = dict(os.environ, COSIM_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([str(MPIEXEC), "-n", "3", sys.executable, "-c", inject, "run",
                           "--workload", str(esp), "--hosts", "16", "--out",
                           str(tmp_path / "bad")], capture_output=True, text=True, timeout=60,
                          env=env, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [lines[0]] and "found on an ALS rank" in lines[0]  # printed once
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "bad").exists()


def test_bad_input_under_mpi_is_reported_once(tmp_path):
    proc = _mpi_run(tmp_path, 3, "--workload", str(tmp_path / "missing.swf"), timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("cosim: error:") == 1 and "missing.swf" in proc.stderr


def _rank_pids(cache: Path) -> dict[int, int]:
    """MPI rank -> pid of the cosim ranks of the run whose COSIM_CACHE_DIR is `cache` (the
    launcher may put them in process groups of their own)."""
    mark = f"COSIM_CACHE_DIR={cache}".encode()
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        rank = [e for e in env if e.startswith(b"PMI_RANK=")]
        if rank and mark in env:
            out[int(rank[0].split(b"=")[1])] = int(d.name)
    return out


@pytest.mark.parametrize("how", ["ctrl-c", "sigint-rank0", "sigterm-all", "sigint-rank0-main"])
@pytest.mark.serial  # (times signals and process ends: alone, `make test`)
def test_an_interrupted_mpi_run_ends_every_process_at_once(tmp_path, how):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it), SIGINT to rank 0
    alone, or SIGTERM to every rank (scancel): every process is gone within the shutdown
    deadline, 'cosim: interrupted' printed once, exit 130 (143 for SIGTERM), no traceback,
    no summary that looks complete. The main job (two runs) too: an ALS rank stopped by an
    interrupted rank 0 does not wait for the second run."""
    import signal
    import time

    from cosim.paths import TRACES_DIR

    env = dict(os.environ, COSIM_CACHE_DIR=str(tmp_path / "cache"))
    out = tmp_path / "o"
    workload = [] if how.endswith("-main") else [
        "--workload", str(TRACES_DIR / "esp-mandelbrot.swf")]
    proc = subprocess.Popen([str(MPIEXEC), "-n", "3", sys.executable, "-m", "cosim", "run",
                             *workload, "--technique", "SS", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    pgid = os.getpgid(proc.pid)
    try:
        t0 = time.monotonic()  # running: the apps' costs are computed, the rounds go on
        while not list((tmp_path / "cache").rglob("*.npy")) and time.monotonic() - t0 < 120:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        time.sleep(1.0)
        assert proc.poll() is None, "the run ended before the signal (too short a run)"
        ranks = _rank_pids(tmp_path / "cache")
        assert sorted(ranks) == [0, 1, 2], ranks
        sent = time.monotonic()
        if how == "ctrl-c":
            os.killpg(pgid, signal.SIGINT)
        elif how.startswith("sigint-rank0"):
            os.kill(ranks[0], signal.SIGINT)
        else:
            for pid in ranks.values():
                os.kill(pid, signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(pgid, signal.SIGKILL)
            proc.wait()
    assert took < 15, f"{took:.1f} s to end"
    expect = 128 + (signal.SIGTERM if how == "sigterm-all" else signal.SIGINT)
    if how.startswith("sigint-rank0"):
        # the other ranks are told to stop and leave cleanly (exit 0); MPICH's launcher may
        # still report one of them killed once rank 0 exits non-zero (its clean-up, not
        # cosim's): the status is then its own, and never 0
        assert proc.returncode in (expect, 9), (proc.returncode, stdout[-1500:], stderr)
    else:
        assert proc.returncode == expect, (proc.returncode, stdout[-1500:], stderr)
        assert "BAD TERMINATION" not in stdout, stdout
    assert stderr.count("cosim: interrupted") == 1 and "Traceback" not in stderr, stderr
    assert "Assertion" not in stderr and "unmatched" not in stderr, stderr
    assert not _rank_pids(tmp_path / "cache")
    assert not list(out.rglob("summary.json")) if out.exists() else True
