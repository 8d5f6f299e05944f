"""What the coordinator and the ALS ranks exchange, and the canonical order of facts.

One round is one `RoundMessage` to every ALS endpoint (the grant and the commands routed to
it) and one `Reply` back (its facts stamped at or before the grant, its promise, or the error
that stopped it). Facts from several endpoints are merged in `(time, kind, job id)` order
(`Fact.key`), then by source rank and the fact's position in that rank's reply, so the order
never depends on which message arrived first. `PROTOCOL_VERSION` is checked in a handshake
before the first round. `AlsGroup` is the interface of a set of ALS endpoints as seen by the
coordinator: `round`, `finish`, `close`. Where a new app runs is not the transport's business:
a `Placement` (given by the runner) names the destination of every `StartApp` — `TRACE` for
the trace endpoint on rank 0, ``r >= 0`` for the app simulator of rank r — and later commands
follow their job. This package depends on the protocol only (`cosim.protocol`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol

from cosim.errors import ProtocolError
from cosim.protocol.endpoint import AlsTotals, Endpoint
from cosim.protocol.messages import AppCompleted, Command, Fact, StartApp

__all__ = ["PROTOCOL_VERSION", "Kind", "RoundMessage", "Reply", "AlsTotals", "AlsGroup",
           "Endpoint", "Placement", "TRACE", "merge_facts", "merge_totals", "route",
           "trace_only", "trace_round", "earliest"]

PROTOCOL_VERSION = 2
TRACE = -1  # the destination of trace (rigid) jobs: the trace endpoint on rank 0


class Kind(IntEnum):
    """Message kinds (the 'tags' of the protocol)."""

    HELLO = 1
    ROUND = 2
    STOP = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundMessage:
    """Coordinator -> ALS rank: a handshake, a round (grant + commands) or the stop."""

    kind: Kind
    grant: int = 0
    commands: tuple[Command, ...] = ()
    version: int = PROTOCOL_VERSION
    interrupted: bool = False  # a stop of a run rank 0 ended on an interrupt: no next run


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """ALS rank -> coordinator: facts up to the grant, the new promise, or an error."""

    facts: tuple[Fact, ...] = ()
    promise: int | None = None
    error: str | None = None
    version: int = PROTOCOL_VERSION


class Placement(Protocol):
    """Where new apps run: ``choose(cmd, now)`` gives the destination of a `StartApp` (`TRACE`
    or a rank); ``ended(job_id)`` is told when a job's app has completed."""

    def choose(self, cmd: StartApp, now: int) -> int:
        ...

    def ended(self, job_id: int) -> None:
        ...


def route(commands: Sequence[Command], where: dict[int, int], placement: Placement,
          now: int) -> dict[int, list[Command]]:
    """Split commands by destination: a StartApp goes where `placement` says, later commands
    follow their job; returns destination -> commands (in the given order)."""
    out: dict[int, list[Command]] = {}
    for cmd in commands:
        if isinstance(cmd, StartApp):
            where[cmd.job_id] = placement.choose(cmd, now)
        elif cmd.job_id not in where:
            raise ProtocolError(f"command {cmd!r} for a job that never started")
        out.setdefault(where[cmd.job_id], []).append(cmd)
    return out


def earliest(*ticks: int | None) -> int | None:
    """The earliest of the known ticks (None: nothing is promised)."""
    known = [t for t in ticks if t is not None]
    return min(known) if known else None


def trace_only(commands: Sequence[Command], where: dict[int, int]) -> bool:
    """True when every command concerns a trace job: a StartApp of app ``rigid`` (always
    placed on `TRACE`) or a later command of a job running there."""
    for cmd in commands:
        if isinstance(cmd, StartApp):
            if cmd.app != "rigid":
                return False
        elif where.get(cmd.job_id) != TRACE:
            return False
    return True


def trace_round(trace: Endpoint | None, commands: Sequence[Command], where: dict[int, int],
                placement: Placement, grant: int, others: int | None
                ) -> tuple[list[Fact], int | None] | None:
    """`AlsGroup.local_round` on the group's trace endpoint (None: it has none here):
    `commands` applied when they are all `trace_only` (else None, nothing done), its facts up
    to `grant`, and the group's promise given `others`, the promise of the endpoints that take
    no part."""
    if trace is None or not trace_only(commands, where):
        return None
    route(commands, where, placement, grant)
    trace.apply(commands)
    facts = trace.advance(grant)
    for f in facts:
        if isinstance(f, AppCompleted):
            placement.ended(f.job_id)
    return facts, earliest(trace.promise(), others)


def merge_totals(parts: Sequence[AlsTotals], wall_s: dict[int, float]) -> AlsTotals:
    """One report from the reports of several endpoints (loops in job id order)."""
    loops: dict[int, object] = {}
    for t in parts:
        loops.update(t.loops)
    return AlsTotals(loops=dict(sorted(loops.items())),
                     chunk_events=sum(t.chunk_events for t in parts),
                     apps=sum(t.apps for t in parts), wall_s=wall_s,
                     rollbacks=sum(t.rollbacks for t in parts),
                     ahead=sum(t.ahead for t in parts))


def merge_facts(replies: Sequence[Sequence[Fact]]) -> list[Fact]:
    """Facts of several sources in the canonical order: key, then source, then position."""
    tagged = [(f.key, src, i, f) for src, facts in enumerate(replies) for i, f in enumerate(facts)]
    tagged.sort(key=lambda x: x[:3])
    return [x[3] for x in tagged]


class AlsGroup(Protocol):
    """The ALS endpoints as the coordinator sees them."""

    def round(self, grant: int, commands: Sequence[Command]) -> tuple[list[Fact], int | None]:
        """Apply `commands`, advance to `grant`; the facts up to it and the next promise."""
        ...

    def local_round(self, grant: int, commands: Sequence[Command]
                    ) -> tuple[list[Fact], int | None] | None:
        """The round at `grant` again — the grant of the last `round` — for `commands` that
        all concern trace jobs (`trace_only`): only the trace endpoint, in this process, takes
        part; the others were advanced to `grant` by that round and are sent nothing, so they
        have no fact to add and keep their promise. None (nothing applied) when a command
        goes elsewhere or there is no trace endpoint here."""
        ...

    def finish(self) -> AlsTotals:
        """Collect the results once every job has ended."""
        ...

    def close(self, interrupted: bool = False) -> None:
        """Stop every endpoint (also after an error; `interrupted`: by Ctrl-C or SIGTERM);
        idempotent."""
        ...
