"""What the coordinator and the ALS ranks exchange, and the canonical order of facts.

One round is one `RoundMessage` to every ALS endpoint (the grant and the commands routed to
it) and one `Reply` back (its facts stamped at or before the grant, its promise, or the error
that stopped it). Facts from several endpoints are merged in `(time, kind, job id)` order
(`Fact.key`), then by source rank and the fact's position in that rank's reply, so the order
never depends on which message arrived first. `PROTOCOL_VERSION` is checked in a handshake
before the first round. `AlsGroup` is the interface of a set of ALS endpoints as seen by the
coordinator: `round`, `finish`, `close`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from cosim.als.runtime import LoopResult
from cosim.protocol.messages import Command, Fact

__all__ = ["PROTOCOL_VERSION", "Kind", "RoundMessage", "Reply", "AlsTotals", "AlsGroup",
           "merge_facts"]

PROTOCOL_VERSION = 1


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """ALS rank -> coordinator: facts up to the grant, the new promise, or an error."""

    facts: tuple[Fact, ...] = ()
    promise: int | None = None
    error: str | None = None
    version: int = PROTOCOL_VERSION


@dataclass(frozen=True, slots=True, kw_only=True)
class AlsTotals:
    """What the ALS endpoints report at the end: loop results and counters."""

    loops: dict[int, LoopResult] = field(default_factory=dict)
    chunk_events: int = 0
    apps: int = 0
    wall_s: dict[int, float] = field(default_factory=dict)  # per rank
    rollbacks: int = 0  # app runs replayed to an earlier tick (exclusion requests)


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

    def finish(self) -> AlsTotals:
        """Collect the results once every job has ended."""
        ...

    def close(self) -> None:
        """Stop every endpoint (also after an error); idempotent."""
        ...
