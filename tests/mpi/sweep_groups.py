"""Driver for tests/test_sweep.py under ``mpiexec``: `sweep_on_ranks` with groups of 2 and
runs that fail on the leader before the run's hello, or on a member while it prepares.
Prints ``RESULT <repr>`` on rank 0."""

import sys

from mpi4py import MPI

from cosim.transport.mpi import serve
from cosim.transport.sweep_ranks import sweep_on_ranks

CASE = sys.argv[1]


def execute_run(opt, run_dir, comm):
    if opt == "leader-fails":
        raise RuntimeError("boom before the hello")
    return (comm.size, MPI.COMM_WORLD.rank)


def prepare(opt):
    if opt == "member-fails":
        raise ValueError("cannot prepare")
    return opt


def serve_run(run, group, abandoned):
    serve(group, lambda: None, abandoned)  # no hello comes: only `abandoned` ends it


def sweep(executor, run):
    runs = [CASE] * (6 if CASE == "many" else 1)
    futures = [executor.submit(run, opt, None) for opt in runs]
    out = []
    for f in futures:
        try:
            out.append(f.result())
        except Exception as exc:  # noqa: BLE001 - what the test checks
            out.append(f"{type(exc).__name__}: {exc}")
    return out


result = sweep_on_ranks(MPI.COMM_WORLD, 2, sweep, execute_run, prepare, serve_run)
if MPI.COMM_WORLD.rank == 0:
    print("RESULT", repr(result), flush=True)
