"""What an application-level endpoint is, as the coordinator and the transports see it.

An *endpoint* simulates the apps of some jobs: `TraceApps` (trace jobs, in process on rank 0)
and `AppSimulator` (DLS apps, on any rank) both are. It takes the batch level's commands
(`apply`), advances to a granted tick returning the facts stamped at or before it in
`Fact.key` order (`advance`), tells the earliest tick of a fact it can still produce
(`promise`: exact or a lower bound, never late), and at the end reports its totals
(`totals`). `AlsTotals` is that report, the last message an ALS rank sends. Transports
(`cosim.transport`) carry these calls; they depend on this module and the messages only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from cosim.protocol.messages import Command, Fact

__all__ = ["AlsTotals", "Endpoint"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlsTotals:
    """What the ALS endpoints report at the end: loop results and counters.

    `loops`: job id -> the app's loop result (`cosim.als.runtime.LoopResult`); `wall_s`: wall
    seconds per rank; `rollbacks`: app runs replayed to an earlier tick (exclusion requests
    and resizes stamped before an app's run-ahead); `ahead`: apps started from a run
    simulated before their start (`cosim.als.manager`); `asked`: rounds that reached an ALS
    rank (`cosim.transport.mpi`; 0 in one process).
    """

    loops: Mapping[int, Any] = field(default_factory=dict)
    chunk_events: int = 0
    apps: int = 0
    wall_s: Mapping[int, float] = field(default_factory=dict)
    rollbacks: int = 0
    ahead: int = 0
    asked: int = 0


class Endpoint(Protocol):
    """An application-level endpoint (see the module docstring)."""

    def apply(self, commands: Iterable[Command]) -> None:
        """Apply commands stamped at or after the last granted tick."""
        ...

    def advance(self, until: int) -> list[Fact]:
        """Advance to `until`; every fact stamped at or before it, in `Fact.key` order."""
        ...

    def promise(self) -> int | None:
        """The earliest tick of a fact still to come (None: nothing will happen)."""
        ...

    def totals(self) -> AlsTotals:
        """Results and counters (once every job it ran has ended)."""
        ...
