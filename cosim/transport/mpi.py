"""The MPI transport: the batch level on rank 0, simulated apps spread over ranks 1..K-1.

With `sweep_ranks`, the only module that imports mpi4py. After a handshake (a hello each way,
point to point and polled), a round is one point-to-point `RoundMessage` from rank 0 to every
ALS rank (grant + the commands routed to it, tag `TAG_DOWN`) and one `Reply` back (tag
`TAG_UP`), both sent as plain tuples (`cosim.transport.wire`). A rank that gets no command
and whose last promise lies beyond the grant is not sent the round: it has no fact up to the
grant, and keeps its promise. In a settled run (`cosim.runner.settled`) a reply also carries
every fact of an app that has ended by its walltime, stamped after the grant too: rank 0
keeps those until a grant covers them (a command to such a job meanwhile is a
`ProtocolError`), and the rank's promise covers only the facts it has not sent, so it is
asked again only for a command or when one of those may be due (SS on ESP-Mandelbrot, 2
ranks: 146 of 5,790 rounds, 2,690 before). Between rounds an ALS rank does not block:
it runs its apps ahead (`AppSimulator.speculate`, a bounded number of chunks at a time) and
checks for rank 0's next message in between, so the ranks simulate their apps in parallel
while the protocol stays exact (speculation only finds facts earlier; they are reported when a
grant covers them; with nothing left to run ahead, it scales the cost arrays of the sizes to
come of the apps it has loaded). Rank 0 keeps its local endpoints — the trace apps (`TRACE`) and, with ``rank0_apps``,
an app simulator (destination 0) — and does its local work after sending and before
receiving; while it waits for the answers it runs its own apps ahead the same way, a slice
between two polls. When apps go to rank 0 alone (coarse-grained loops with ``rank0_apps``
in a run that is not settled), no ALS rank takes part in any round: rank 0 runs the rounds
as one process does (`LocalAls`), and the ALS ranks get only the hello and the stop. Waiting
sides with nothing to run ahead poll without spinning a core for long (`Idle`: yields for
50 ms, then sleeps growing from 50 µs to 0.5 ms), leaving it to ranks
that compute. An error in rank 0's local work is raised only after every reply is in, so no
message is left unmatched. An ALS rank that fails
answers every later round with its error until the stop; rank 0 raises it (an `InputError`
stays an input error: exit status 2), and `close` sends the stop in a `finally`, so the whole
run ends within a round, never hanging. A handshake checks `PROTOCOL_VERSION` first.
Where a new app runs is decided by the `Placement` the runner gives (`cosim.placement`); which
rank simulates an app never changes its facts, so results do not depend on K. An endpoint on an
ALS rank is made by the factory given to `serve`; this module knows nothing of what it is.
"""

from __future__ import annotations

import heapq
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from mpi4py import MPI

from cosim.errors import CosimError, InputError, ProtocolError
from cosim.protocol.messages import AppCompleted, Command, Fact
from cosim.transport.base import (
    PROTOCOL_VERSION, TRACE, AlsTotals, Endpoint, Kind, Placement, Reply, RoundMessage,
    earliest, merge_facts, merge_totals, route, trace_round,
)
from cosim.transport.loopback import LocalAls
from cosim.transport.wire import decode, encode

__all__ = ["world", "MpiAls", "serve", "StoppedByInterrupt"]

TAG_DOWN = 2  # rank 0 -> ALS rank
TAG_UP = 3  # ALS rank -> rank 0
#: How long rank 0 waits for the ALS ranks' answers to a stop that ends a failed or interrupted
#: run (ranks that were interrupted too never answer; those that were not must get the stop)
SHUTDOWN_S = 5.0


def world() -> MPI.Comm:
    """The world communicator (MPI is initialised on first use)."""
    return MPI.COMM_WORLD


class Idle:
    """One wait for a message, polled: for the first `YIELD_S` every poll only yields the core
    (a round's answer usually comes within that, and a yield returns at once when nothing else
    wants the core); after that each poll sleeps, 1.5 times longer than the last, from
    `FIRST_S` to `MOST_S`. A rank waiting long — an ALS rank with nothing to run ahead while
    rank 0 reads a trace or writes outputs, rank 0 while an app runs to its first fact — then
    costs almost no CPU, and at most `MOST_S` more wall time. Shorter yield phases cost wall
    time: the protocol is latency-bound (2 ms cost the 2-rank SS main job 25 %)."""

    YIELD_S = 50e-3
    FIRST_S = 50e-6
    MOST_S = 0.5e-3

    __slots__ = ("_until", "_sleep")

    def __init__(self) -> None:
        self._until = time.perf_counter() + self.YIELD_S
        self._sleep = 0.0

    def __call__(self) -> None:
        """Nothing arrived yet: let time pass before the next poll."""
        if self._sleep == 0.0 and time.perf_counter() < self._until:
            os.sched_yield()
            return
        self._sleep = min(self.MOST_S, self._sleep * 1.5 or self.FIRST_S)
        time.sleep(self._sleep)


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _raise(rank: int, error: str) -> None:
    kind, _, message = error.partition(": ")
    if kind == "InputError":
        raise InputError(message)
    if kind == "KeyboardInterrupt":  # the rank was interrupted: so is the run
        raise KeyboardInterrupt
    raise CosimError(f"ALS rank {rank} failed: {error}")


class MpiAls:
    """Rank 0's view of the ALS ranks (see the module docstring).

    `local`: rank 0's endpoints by destination (`TRACE`, and 0 with ``rank0_apps``);
    `placement`: where new apps go (ranks 1..K-1, and 0 when it is local).
    """

    def __init__(self, comm: MPI.Comm, *, local: Mapping[int, Endpoint],
                 placement: Placement) -> None:
        self.comm = comm
        self.local = dict(sorted(local.items()))
        self.placement = placement
        self._closed = False
        self._where: dict[int, int] = {}
        self._wall = 0.0
        self._gone: set[int] = set()  # ranks whose last message is in (they were interrupted)
        self._others: int | None = None  # the last round's promise of the non-trace endpoints
        self._promise_of: dict[int, int | None] = {}  # each ALS rank's last promise
        self._ahead_error: BaseException | None = None  # raised by the round it happened in
        # facts an ALS rank sent before a grant covered them (every fact of an app that has
        # ended, `AppSimulator(settled=True)`): (key, rank, position, fact), a heap
        self._later: list[tuple[Any, int, int, Fact]] = []
        self._settled: set[int] = set()  # the jobs whose completion is among them
        self._asked = 0  # rounds that reached an ALS rank
        # point to point and polled, not a collective: a Ctrl-C is raised here at once, and a
        # rank interrupted before it answers says so instead of leaving a collective hanging
        for r in range(1, comm.size):
            comm.send(encode(RoundMessage(kind=Kind.HELLO)), dest=r, tag=TAG_DOWN)
        try:
            replies = self._receive_all()
            self._note_gone(replies)
            for rank, reply in enumerate(replies[1:], start=1):
                if reply.error is not None:
                    _raise(rank, reply.error)
        except KeyboardInterrupt:  # this rank's, or an ALS rank's: the others must stop too
            self.close(interrupted=True)
            raise
        for rank, reply in enumerate(replies[1:], start=1):
            if reply.version != PROTOCOL_VERSION:
                self.close()
                raise ProtocolError(f"ALS rank {rank} speaks protocol {reply.version}, "
                                    f"rank 0 speaks {PROTOCOL_VERSION}")
        # apps placed on rank 0 alone (coarse-grained loops with rank0_apps, not settled): no
        # ALS rank takes part in any round, so rank 0 runs them as one process does
        # (`LocalAls`: the same rounds, without asking, polling or gathering), and stops the
        # ranks at the end
        self._alone = (LocalAls(self.local, placement)
                       if list(getattr(placement, "ranks", ())) == [0] else None)

    def round(self, grant: int, commands: Sequence[Command]) -> tuple[list[Fact], int | None]:
        if self._alone is not None:
            return self._alone.round(grant, commands)
        t0 = time.perf_counter()
        for cmd in commands:
            if cmd.job_id in self._settled:
                raise ProtocolError(f"command {cmd!r} for a job whose facts were final "
                                    "when its app ended")
        parts = route(commands, self._where, self.placement, grant)
        # a rank with no command whose promise lies beyond the grant has nothing to say
        # about it (no fact before its promise): it is not sent the round
        asked = [r for r in range(1, self.comm.size)
                 if parts.get(r) or r not in self._promise_of
                 or (self._promise_of[r] is not None and self._promise_of[r] <= grant)]
        self._asked += bool(asked)
        for r in asked:
            msg = RoundMessage(kind=Kind.ROUND, grant=grant, commands=tuple(parts.get(r, ())))
            self.comm.send(encode(msg), dest=r, tag=TAG_DOWN)
        local_error: BaseException | None = None
        own: list[list[Fact]] = []
        promises: list[int | None] = []
        trace_promise = None
        try:
            for dest, ep in self.local.items():
                if parts.get(dest):
                    ep.apply(parts[dest])
                own.append(ep.advance(grant))
                if dest == TRACE:
                    trace_promise = ep.promise()
                else:
                    promises.append(ep.promise())
        except Exception as exc:  # noqa: BLE001 - re-raised after the gather
            local_error = exc
        # (most rounds of a run whose apps stay on rank 0 ask no other rank: nothing to gather)
        replies = (self._receive_all(asked, None if local_error else self._run_ahead)
                   if asked else [])
        if local_error is None:
            local_error = self._ahead_error
        if local_error is not None:
            raise local_error
        self._note_gone(replies)
        for rank in asked:
            reply = replies[rank]
            if reply.error is not None:
                _raise(rank, reply.error)
            own.append(self._keep_later(rank, reply.facts, grant))
            self._promise_of[rank] = reply.promise
        promises.extend(self._promise_of.values())
        own.append(self._due(grant))
        if self._later:
            promises.append(self._later[0][0][0])
        facts = merge_facts(own)
        for f in facts:
            if isinstance(f, AppCompleted):
                self.placement.ended(f.job_id)
                self._settled.discard(f.job_id)
        self._others = earliest(*promises)
        self._wall += time.perf_counter() - t0
        return facts, earliest(trace_promise, self._others)

    def local_round(self, grant: int, commands: Sequence[Command]
                    ) -> tuple[list[Fact], int | None] | None:
        if self._alone is not None:
            return self._alone.local_round(grant, commands)
        t0 = time.perf_counter()
        out = trace_round(self.local.get(TRACE), commands, self._where, self.placement, grant,
                          self._others)
        self._wall += time.perf_counter() - t0
        return out

    def finish(self) -> AlsTotals:
        totals = self._stop()
        # rank 0's endpoints, through `LocalAls` when it ran them alone
        mine = ([ep.totals() for ep in self.local.values()] if self._alone is None else
                [self._alone.finish()])
        wall: dict[int, float] = {0: self._wall if self._alone is None else
                                  mine[0].wall_s.get(0, 0.0)}
        for rank, t in enumerate(totals[1:], start=1):
            if not isinstance(t, AlsTotals):  # a rank interrupted alone: its last word
                _raise(rank, getattr(t, "error", None) or f"ProtocolError: {t!r} for totals")
            wall[rank] = t.wall_s.get(rank, 0.0)
        return replace(merge_totals(mine + list(totals[1:]), wall), asked=self._asked)

    def _keep_later(self, rank: int, facts: Sequence[Fact], grant: int) -> list[Fact]:
        """Of the facts `rank` sent, those up to `grant`; those after it (a settled run's
        ends sent at once) are kept until a grant covers them (`_due`)."""
        now = [f for f in facts if f.time <= grant]
        if len(now) < len(facts):
            for i, f in enumerate(facts):
                if f.time > grant:
                    heapq.heappush(self._later, (f.key, rank, i, f))
                    if isinstance(f, AppCompleted):
                        self._settled.add(f.job_id)
        return now

    def _due(self, grant: int) -> list[Fact]:
        """The facts kept by `_keep_later` that `grant` covers, taken out."""
        later = self._later
        due = []
        while later and later[0][0][0] <= grant:
            due.append(heapq.heappop(later)[3])
        return due

    def _note_gone(self, replies: list) -> None:
        """The ranks that answered they were interrupted have sent their last message:
        `close` waits for no other from them."""
        self._gone.update(r for r, reply in enumerate(replies) if r and reply is not None
                          and reply.error and reply.error.startswith("KeyboardInterrupt"))

    def _run_ahead(self) -> bool:
        """Run rank 0's own apps ahead by one slice (`AppSimulator.speculate`) while it
        waits for the ALS ranks; False when they have nothing left to run ahead. An error is
        kept for the round to raise once every reply is in."""
        if self._ahead_error is not None:
            return False
        for dest, ep in self.local.items():
            speculate = getattr(ep, "speculate", None)
            if dest == TRACE or speculate is None:
                continue
            try:
                if speculate():
                    return True
            except Exception as exc:  # noqa: BLE001 - re-raised after the gather
                self._ahead_error = exc
                return False
        return False

    def _receive_all(self, ranks: Sequence[int] | None = None,
                     busy: Callable[[], bool] | None = None) -> list:
        """One message from every ALS rank, or from `ranks` (index = rank; the others and
        index 0 None); between polls `busy` (when given) does a slice of other work, and the
        wait idles only when it has none."""
        out: list = [None] * self.comm.size
        waiting = list(range(1, self.comm.size) if ranks is None else ranks)
        idle = Idle()
        while waiting:
            for r in list(waiting):
                if self.comm.Iprobe(source=r, tag=TAG_UP):
                    out[r] = decode(self.comm.recv(source=r, tag=TAG_UP))
                    waiting.remove(r)
            if waiting and (busy is None or not busy()):
                idle()
        return out

    def _stop(self) -> list:
        self._closed = True
        for r in range(1, self.comm.size):
            self.comm.send(encode(RoundMessage(kind=Kind.STOP)), dest=r, tag=TAG_DOWN)
        return self._receive_all()

    def close(self, interrupted: bool = False) -> None:
        """End a run that failed or was interrupted (`finish` ends the others): every ALS
        rank still serving is told to stop (and, `interrupted`, not to wait for a next run),
        and their last messages are awaited `SHUTDOWN_S` at most — an interrupted rank may
        have left already, and no wait may hang a Ctrl-C."""
        if not self._closed:
            self._closed = True
            for r in range(1, self.comm.size):
                self.comm.send(encode(RoundMessage(kind=Kind.STOP, interrupted=interrupted)),
                               dest=r, tag=TAG_DOWN)
            self._receive_last(deadline=time.monotonic() + SHUTDOWN_S)

    def _receive_last(self, deadline: float) -> None:
        """Receive, until `deadline`, every ALS rank's messages up to its last one (its
        totals, or the notice that it was interrupted): a message left unreceived would be an
        error at MPI_Finalize."""
        waiting = set(range(1, self.comm.size)) - self._gone
        status = MPI.Status()
        idle = Idle()
        while waiting and time.monotonic() < deadline:
            if not self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=TAG_UP, status=status):
                idle()
                continue
            r = status.Get_source()
            msg = decode(self.comm.recv(source=r, tag=TAG_UP))
            if isinstance(msg, AlsTotals) or (isinstance(msg, Reply) and msg.error
                                              and msg.error.startswith("KeyboardInterrupt")):
                waiting.discard(r)


def serve(comm: MPI.Comm, make_apps: Callable[[], Endpoint],
          abandoned: Callable[[], bool] | None = None) -> None:
    """The loop of an ALS rank for one co-simulation: answer rounds until the stop, running
    the apps ahead while rank 0 has nothing for this rank. Interrupted (Ctrl-C, SIGTERM), it
    tells rank 0 so before it leaves: rank 0 then neither waits for it nor hangs."""
    try:
        _serve(comm, make_apps, abandoned)
    except KeyboardInterrupt:
        comm.send(encode(Reply(error="KeyboardInterrupt: interrupted")), dest=0, tag=TAG_UP)
        _await_stop(comm, deadline=time.monotonic() + SHUTDOWN_S)
        raise


def _await_stop(comm: MPI.Comm, deadline: float) -> None:
    """Receive everything rank 0 sends until its stop (or `deadline`): no message is then
    left unmatched for MPI_Finalize."""
    status = MPI.Status()
    idle = Idle()
    while time.monotonic() < deadline:
        if not comm.Iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status):
            idle()
            continue
        msg = decode(comm.recv(source=status.Get_source(), tag=status.Get_tag()))
        if isinstance(msg, RoundMessage) and msg.kind == Kind.STOP:
            return


class StoppedByInterrupt(Exception):
    """`serve` got the stop of a run that rank 0 ended on an interrupt: the ALS rank leaves
    (status 0) instead of waiting for a next run that will never come."""


def _serve(comm: MPI.Comm, make_apps: Callable[[], Endpoint],
           abandoned: Callable[[], bool] | None) -> None:
    idle = Idle()
    while not comm.Iprobe(source=0, tag=TAG_DOWN):  # the hello
        if abandoned is not None:  # a sweep's run that failed on rank 0 before its hello
            if abandoned():
                return
            time.sleep(0.001)
        else:
            idle()
    hello = decode(comm.recv(source=0, tag=TAG_DOWN))
    comm.send(encode(Reply(version=PROTOCOL_VERSION)), dest=0, tag=TAG_UP)
    if hello.version != PROTOCOL_VERSION:
        error = f"ProtocolError: protocol {hello.version} asked, rank speaks {PROTOCOL_VERSION}"
    else:
        error = None
    apps: Endpoint | None = None
    wall = 0.0
    while True:
        t0 = time.perf_counter()
        idle = Idle()
        while not comm.Iprobe(source=0, tag=TAG_DOWN):
            busy = False
            if apps is not None and error is None and hasattr(apps, "speculate"):
                try:
                    busy = apps.speculate()
                except Exception as exc:  # noqa: BLE001 - reported with the next reply
                    error = _error(exc)
            if not busy:
                idle()
        wall += time.perf_counter() - t0 if apps is not None else 0.0
        msg = decode(comm.recv(source=0, tag=TAG_DOWN))
        if msg.kind == Kind.STOP:
            totals = AlsTotals()
            if apps is not None:
                try:
                    t = apps.totals()
                    totals = AlsTotals(loops=t.loops, chunk_events=t.chunk_events, apps=t.apps,
                                       wall_s={comm.rank: wall}, rollbacks=t.rollbacks,
                                       ahead=t.ahead)
                except Exception:  # noqa: BLE001 - the run already failed; rank 0 reports it
                    pass
            comm.send(encode(totals), dest=0, tag=TAG_UP)
            if msg.interrupted:
                raise StoppedByInterrupt()
            return
        if error is not None:
            comm.send(encode(Reply(error=error)), dest=0, tag=TAG_UP)
            continue
        t0 = time.perf_counter()
        try:
            if apps is None:
                apps = make_apps()
            apps.apply(msg.commands)
            facts = apps.advance(msg.grant)
            reply = Reply(facts=tuple(facts), promise=apps.promise())
        except Exception as exc:  # noqa: BLE001 - reported to rank 0, which stops the run
            error = _error(exc)
            reply = Reply(error=error)
        wall += time.perf_counter() - t0
        comm.send(encode(reply), dest=0, tag=TAG_UP)
