"""A sweep's runs on MPI ranks: rank 0 hands them out, groups of R ranks simulate them.

Under ``mpiexec -n K cosim sweep SPEC --ranks-per-run R``, rank 0 keeps the sweep (its lock,
table and progress line) and ranks 1..K-1 form (K - 1) / R groups of R consecutive ranks. The
groups' first ranks (their leaders) and rank 0 share a communicator on which
`mpi4py.futures.MPICommExecutor` hands the runs out, one at a time per leader as it frees up.
A leader sends its run to the rest of its group and simulates it there as ``cosim run`` does
over R ranks (the batch level on the leader, the apps on the others, `MpiAls` on the group's
communicator), so a run's files are those of the serial sweep whatever R (R = 1: each worker
rank simulates its runs alone). A task of mpi4py.futures cannot carry a communicator, so a
leader holds its group in this module while it serves (`_LEADING`, set and cleared by
`sweep_on_ranks`; the only process state of cosim, and MPI's own is process state too).
Between runs the others wait with a sleeping probe (a blocking receive would spin a core the
running groups need). The end: rank 0 leaves the executor, the leaders leave its worker loop
and send their groups the stop (``None``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, TypeVar

from mpi4py import MPI

__all__ = ["layout_problem", "sweep_on_ranks"]

T = TypeVar("T")
TAG_RUN = 11  # leader -> the rest of its group: the next run's options, or None to stop
#: How long a waiting group member sleeps between probes for its leader's next run
IDLE_S = 0.002
_LEADING: list[MPI.Comm] = []


def layout_problem(size: int, per_run: int) -> str | None:
    """Why `size` ranks cannot run a sweep with `per_run` ranks per run (None: they can)."""
    if per_run < 1:
        return f"must be at least 1, got {per_run}"
    if size < 1 + per_run or (size - 1) % per_run:
        return (f"{size} MPI ranks cannot be rank 0 plus groups of {per_run}: start "
                f"1 + a multiple of {per_run} (mpiexec -n {', '.join(str(1 + per_run * g) for g in (1, 2, 3))}, ...)")
    return None


def sweep_on_ranks(comm: MPI.Comm, per_run: int, sweep: Callable[[Executor, Callable], T],
                   execute_run: Callable[..., dict],
                   serve_run: Callable[[Any, MPI.Comm], None]) -> T | None:
    """Run `sweep(executor, run)` on rank 0 of `comm`, which hands runs ``run(opt, run_dir)``
    to the groups through `executor`; every other rank serves until rank 0 is done (returns
    None). `execute_run(opt, run_dir, comm=group)`: a leader's part of a run (its summary);
    `serve_run(opt, group)`: the part of the group's other ranks. Collective over `comm`;
    the layout must pass `layout_problem`."""
    from mpi4py.futures import MPICommExecutor

    rank = comm.rank
    group = comm.Split(0 if rank == 0 else 1 + (rank - 1) // per_run, key=rank)
    leads = rank == 0 or group.rank == 0
    heads = comm.Split(0 if leads else MPI.UNDEFINED, key=rank)
    try:
        if not leads:
            _serve_group(group, serve_run)
            return None
        if rank != 0:
            _LEADING.append(group)
        try:
            with MPICommExecutor(heads, root=0) as executor:
                if executor is None:
                    return None  # a leader: it ran what rank 0 handed it until rank 0 was done
                run = _GroupRun(execute_run)
                return sweep(executor, run)
        finally:
            if rank != 0:
                _LEADING.remove(group)
                for member in range(1, group.size):
                    group.send(None, dest=member, tag=TAG_RUN)
    finally:
        if heads != MPI.COMM_NULL:
            heads.Free()
        group.Free()


class _GroupRun:
    """The task rank 0 submits: on a leader, send the run to its group, then simulate it there
    (a picklable callable: mpi4py.futures sends it to the leader)."""

    def __init__(self, execute_run: Callable[..., dict]) -> None:
        self.execute_run = execute_run

    def __call__(self, opt: Any, run_dir: Path) -> dict:
        group = _LEADING[-1]
        for member in range(1, group.size):
            group.send(opt, dest=member, tag=TAG_RUN)
        return self.execute_run(opt, run_dir, comm=group)


def _serve_group(group: MPI.Comm, serve_run: Callable[[Any, MPI.Comm], None]) -> None:
    """A group member's part: serve each run its leader sends until the stop."""
    while True:
        while not group.Iprobe(source=0, tag=TAG_RUN):
            time.sleep(IDLE_S)
        opt = group.recv(source=0, tag=TAG_RUN)
        if opt is None:
            return
        serve_run(opt, group)
