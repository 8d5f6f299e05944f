"""Start-up: a command loads only what it uses (no MPI outside a launcher, no application level
for a batch-only run, no networkx or matplotlib unless drawing), and when MPI is used."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cosim.transport import MPI_LAUNCH_VARIABLES, launched_by_mpi

TWO_JOBS = """; MaxNodes: 4
1 0 0 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1
2 5 0 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1
"""

PROBE = """
import json, sys
from cosim.cli import main
code = main(sys.argv[1:])
heavy = ("mpi4py", "networkx", "matplotlib", "otf2", "cosim.als.manager", "cosim.als.runtime",
         "cosim.als.techniques", "cosim.workload.apps", "cosim.transport.mpi",
         "importlib.metadata",  # the plugins' entry points: only for names not built in
         "multiprocessing")  # a process pool's (sweeps, plots drawn in parallel): ~50 ms
# what only the round loop needs: a trace the replay runs (`cosim.bls.replay`) loads none
rounds = ("cosim.bls.scheduler", "cosim.bls.state", "cosim.protocol.messages",
          "cosim.transport.base", "cosim.transport.loopback", "cosim.placement",
          "cosim.core.engine")
print(json.dumps({"code": code, "loaded": [m for m in heavy if m in sys.modules],
                  "rounds": [m for m in rounds if m in sys.modules]}))
"""


def _probe(tmp_path, *argv: str) -> dict:
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in MPI_LAUNCH_VARIABLES and k != "COSIM_MPI"}
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                         cwd=tmp_path, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_batch_only_run_loads_nothing_it_does_not_use(tmp_path):
    (tmp_path / "two.swf").write_text(TWO_JOBS)
    got = _probe(tmp_path, "run", "--workload", "two.swf", "--out", "out")
    assert got == {"code": 0, "loaded": [], "rounds": []}  # (a replayed trace)
    assert (tmp_path / "out" / "results.h5").is_file()
    # built-in policies of every kind: still no plugin lookup; a malleable policy runs rounds
    got = _probe(tmp_path, "run", "--workload", "two.swf", "--out", "m", "--malleable", "equi",
                 "--priority", "sjf", "--selection", "best-fit", "--batch", "conservative")
    assert got["code"] == 0 and got["loaded"] == []
    assert "cosim.bls.scheduler" in got["rounds"] and "cosim.protocol.messages" in got["rounds"]


def test_a_batch_only_run_with_a_technique_says_it_is_unused(tmp_path, capsys):
    from cosim.cli import main

    (tmp_path / "two.swf").write_text(TWO_JOBS)
    assert main(["run", "--workload", str(tmp_path / "two.swf"), "--out",
                 str(tmp_path / "o"), "--technique", "FAC2"]) == 0
    assert "--technique FAC2: no job of the workload runs an app" in capsys.readouterr().err
    # a bad one is still an error, before anything is simulated
    assert main(["run", "--workload", str(tmp_path / "two.swf"), "--out", str(tmp_path / "p"),
                 "--technique", "NOPE"]) == 2
    assert "unknown technique 'NOPE'" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


def test_the_application_level_loads_when_a_job_runs_an_app(tmp_path):
    got = _probe(tmp_path, "app", "--app", "mandelbrot", "--app-param", "width=32",
                 "--hosts", "2", "--technique", "SS")
    assert got["code"] == 0
    assert "cosim.als.runtime" in got["loaded"] and "mpi4py" not in got["loaded"]


@pytest.mark.parametrize(("environ", "expect"), [
    ({}, False),
    ({"PMI_SIZE": "3", "PMI_RANK": "1"}, True),  # MPICH's Hydra, srun --mpi=pmi2
    ({"OMPI_COMM_WORLD_SIZE": "4"}, True),  # Open MPI's mpirun
    ({"PMIX_RANK": "0"}, True),  # PMIx launchers
    ({"MV2_COMM_WORLD_SIZE": "2"}, True),
    ({"SLURM_PROCID": "0"}, False),  # a Slurm step without MPI is serial
    ({"COSIM_MPI": "1"}, True),
    ({"COSIM_MPI": "0", "PMI_SIZE": "2"}, False),
])
def test_mpi_is_used_only_under_a_launcher(environ, expect):
    assert launched_by_mpi(environ) is expect


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self/task"),
                    reason="threads are counted in /proc (Linux)")
def test_the_command_line_keeps_numpy_to_one_thread():
    # numpy's OpenBLAS would start a thread per core, spinning after BLAS calls: under
    # mpiexec they take the other ranks' cores
    code = ("import cosim.cli, numpy, os; numpy.ones((64, 64)) @ numpy.ones((64, 64)); "
            "print(len(os.listdir('/proc/self/task')))")
    env = {k: v for k, v in __import__("os").environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == "1"


def test_an_mpi_wait_yields_then_sleeps_without_spinning(monkeypatch):
    from cosim.transport import mpi

    now = [0.0]
    calls = []
    monkeypatch.setattr(mpi.time, "perf_counter", lambda: now[0])
    monkeypatch.setattr(mpi.os, "sched_yield", lambda: calls.append("yield"))

    def sleep(s):
        calls.append(s)
        now[0] += s

    monkeypatch.setattr(mpi.time, "sleep", sleep)
    idle = mpi.Idle()
    for _ in range(3):
        idle()
        now[0] += mpi.Idle.YIELD_S / 4
    assert calls == ["yield"] * 3
    calls.clear()
    now[0] += mpi.Idle.YIELD_S  # past the yield phase: sleeps from FIRST_S, x1.5, capped
    for _ in range(12):
        idle()
    assert calls[0] == mpi.Idle.FIRST_S and calls[1] == pytest.approx(1.5 * mpi.Idle.FIRST_S)
    assert max(calls) == mpi.Idle.MOST_S and calls[-1] == mpi.Idle.MOST_S
    assert all(b >= a for a, b in zip(calls, calls[1:]))
