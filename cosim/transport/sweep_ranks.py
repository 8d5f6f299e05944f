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
Between runs, and for a run's hello, the others wait with a sleeping probe (a blocking
receive would spin a core the running groups need). The end: rank 0 leaves the executor, the leaders leave its worker loop
and send their groups the stop (``None``).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, TypeVar

from mpi4py import MPI

from cosim.errors import CosimError

__all__ = ["layout_problem", "sweep_on_ranks"]

T = TypeVar("T")
TAG_RUN = 11  # leader -> the rest of its group: the next run's options, or None to stop
TAG_READY = 12  # group member -> leader: None, ready for the run sent; else why it is not
#: How long a waiting rank sleeps between probes (a member for its next run, a leader for
#: its members' answers)
IDLE_S = 0.002


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class _Lead:
    """A leader while it serves: its group, whether a run of it was interrupted, and the
    signal handlers that raise (Ctrl-C, SIGTERM), which it holds back while idle.

    Idle in mpi4py.futures' worker loop, a leader must not leave on a signal: rank 0 stops
    its executor with a synchronous send to every worker, which would wait forever for one
    that left. So while idle a signal is only noted (`pending`); it is raised when the next
    run is handed over (which then fails at once: rank 0 stops) or when the worker loop ends.
    During a run the raising handlers are in place: a run stops at once.
    """

    group: MPI.Comm
    handlers: dict[int, Any]
    interrupted: bool = False
    pending: int | None = None  # a signal that came while idle
    left: set[int] = field(default_factory=set)  # members that said they left

    def note_answer(self, member: int, problem: str | None) -> None:
        """A member's answer to a run (`TAG_READY`): one that was interrupted has left."""
        if problem is not None and problem.startswith("KeyboardInterrupt"):
            self.left.add(member)

    def note(self, signum: int, frame: object) -> None:
        if self.pending is None:
            self.pending = signum

    def hold(self) -> None:
        for sig, handler in self.handlers.items():
            if callable(handler):  # an ignored signal stays ignored
                signal.signal(sig, self.note)

    def release(self) -> None:
        for sig, handler in self.handlers.items():
            signal.signal(sig, handler)

    def raise_pending(self) -> None:
        """Raise the noted signal as its handler would (KeyboardInterrupt by default)."""
        if self.pending is not None:
            handler = self.handlers.get(self.pending)
            if callable(handler):
                handler(self.pending, None)
            raise KeyboardInterrupt


_LEADING: list[_Lead] = []


def layout_problem(size: int, per_run: int) -> str | None:
    """Why `size` ranks cannot run a sweep with `per_run` ranks per run (None: they can)."""
    if per_run < 1:
        return f"must be at least 1, got {per_run}"
    if size < 1 + per_run or (size - 1) % per_run:
        return (f"{size} MPI ranks cannot be rank 0 plus groups of {per_run}: start "
                f"1 + a multiple of {per_run} (mpiexec -n "
                f"{', '.join(str(1 + per_run * g) for g in (1, 2, 3))}, ...)")
    return None


def sweep_on_ranks(comm: MPI.Comm, per_run: int, sweep: Callable[[Executor, Callable], T],
                   execute_run: Callable[..., dict], prepare: Callable[[Any], Any],
                   serve_run: Callable[..., None]) -> T | None:
    """Run `sweep(executor, run)` on rank 0 of `comm`, which hands runs ``run(opt, run_dir)``
    to the groups through `executor`; every other rank serves until rank 0 is done (returns
    None). `execute_run(opt, run_dir, comm=group)`: a leader's part of a run (its summary);
    `serve_run(prepare(opt), group, abandoned)`: the part of the group's other ranks
    (`abandoned()` says the run failed on its leader before its hello). Collective over
    `comm`; the layout must pass `layout_problem`."""
    from mpi4py.futures import MPICommExecutor

    rank = comm.rank
    group = comm.Split(0 if rank == 0 else 1 + (rank - 1) // per_run, key=rank)
    leads = rank == 0 or group.rank == 0
    heads = comm.Split(0 if leads else MPI.UNDEFINED, key=rank)
    try:
        if not leads:
            _serve_group(group, prepare, serve_run)
            return None
        if rank != 0:
            lead = _Lead(group, handlers={sig: signal.getsignal(sig) for sig in _SIGNALS})
            _LEADING.append(lead)
            lead.hold()
        try:
            with MPICommExecutor(heads, root=0) as executor:
                if executor is None:
                    return None  # a leader: it ran what rank 0 handed it until rank 0 was done
                return sweep(executor, _GroupRun(execute_run))
        finally:
            if rank != 0:
                _LEADING.pop()
                lead.release()
                _stop_group(lead)
                lead.raise_pending()
                if lead.interrupted:  # leave as interrupted too (exit status 130)
                    raise KeyboardInterrupt
    finally:
        if heads != MPI.COMM_NULL:
            heads.Free()
        group.Free()


class _GroupRun:
    """The task rank 0 submits: on a leader, send the run to its group, then simulate it there
    (a picklable callable: mpi4py.futures sends it to the leader). Once a run of this leader
    was interrupted (Ctrl-C reaches every rank) it starts no other: mpi4py.futures reports
    the interrupt as the task's outcome and goes on serving, and rank 0 may have handed out
    the next run before it heard. A signal noted while idle fails the run at once."""

    def __init__(self, execute_run: Callable[..., dict]) -> None:
        self.execute_run = execute_run

    def __call__(self, opt: Any, run_dir: Path) -> dict:
        lead = _LEADING[-1]
        if lead.interrupted:
            raise KeyboardInterrupt
        try:
            lead.release()
            lead.raise_pending()
            _hand_out(lead, opt)
            return self.execute_run(opt, run_dir, comm=lead.group)
        except KeyboardInterrupt:
            lead.interrupted = True
            lead.pending = None  # raised: the run's outcome says so
            raise
        finally:
            lead.hold()


def _hand_out(lead: _Lead, opt: Any) -> None:
    """Send the run to the members and wait, in a sleeping probe (where a Ctrl-C is raised at
    once, unlike in a blocking MPI call), until each has answered; then raise the first
    problem one reported: KeyboardInterrupt if it left (it was interrupted), else its error
    (it could not prepare the run)."""
    group = lead.group
    for member in range(1, group.size):
        group.send(opt, dest=member, tag=TAG_RUN)
    answers: dict[int, str | None] = {}
    status = MPI.Status()
    while len(answers) < group.size - 1:
        if not group.Iprobe(source=MPI.ANY_SOURCE, tag=TAG_READY, status=status):
            time.sleep(IDLE_S)
            continue
        member = status.Get_source()
        answers[member] = group.recv(source=member, tag=TAG_READY)
    for member, problem in answers.items():
        lead.note_answer(member, problem)
    if lead.left:
        raise KeyboardInterrupt
    for member, problem in sorted(answers.items()):
        if problem is not None:
            raise CosimError(f"rank {member} of the run's group could not prepare it: "
                             f"{problem}")


def _stop_group(lead: _Lead) -> None:
    """A leader leaving: read what members said meanwhile (those that left), and tell the
    others to stop."""
    group = lead.group
    status = MPI.Status()
    while group.Iprobe(source=MPI.ANY_SOURCE, tag=TAG_READY, status=status):
        member = status.Get_source()
        lead.note_answer(member, group.recv(source=member, tag=TAG_READY))
    for member in range(1, group.size):
        if member not in lead.left:
            group.send(None, dest=member, tag=TAG_RUN)


def _serve_group(group: MPI.Comm, prepare: Callable[[Any], Any],
                 serve_run: Callable[..., None]) -> None:
    """A group member's part: prepare and serve each run its leader sends until the stop.
    It answers each run: ready, or why not — interrupted (it leaves), or its error (it waits
    for the next run; the leader fails this one). Serving, it gives up a run whose leader
    failed before the run's hello (the stop comes instead), and a run its leader stopped on
    an interrupt ends its part quietly (there is no next run)."""
    from cosim.transport.mpi import StoppedByInterrupt

    while True:
        try:
            while not group.Iprobe(source=0, tag=TAG_RUN):
                time.sleep(IDLE_S)
            opt = group.recv(source=0, tag=TAG_RUN)
            if opt is None:
                return
            try:
                run = prepare(opt)
            except Exception as exc:  # noqa: BLE001 - the leader reports it
                group.send(f"{type(exc).__name__}: {exc}", dest=0, tag=TAG_READY)
                continue
        except KeyboardInterrupt:
            group.send("KeyboardInterrupt: interrupted", dest=0, tag=TAG_READY)
            raise
        group.send(None, dest=0, tag=TAG_READY)
        try:
            serve_run(run, group, lambda: group.Iprobe(source=0, tag=TAG_RUN))
        except StoppedByInterrupt:
            return
