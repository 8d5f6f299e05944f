"""In-process ALS endpoints: rigid apps and simulated apps in the coordinator's process.

`LocalAls` routes each command to the endpoint that runs its job (`RigidApps` for rigid jobs,
one `AppSimulator` for the others), advances both to the grant and merges their facts in the
canonical order. It is the transport of ``K = 1`` and of every test; the MPI transport keeps
the same rigid endpoint on rank 0 and puts the simulated apps on other ranks.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from cosim.als.manager import AppSimulator
from cosim.bls.rigid import RigidApps
from cosim.errors import ProtocolError
from cosim.protocol.messages import Command, Fact, StartApp
from cosim.transport.base import AlsTotals, merge_facts

__all__ = ["LocalAls", "route"]


def route(commands: Sequence[Command], where: dict[int, int], choose) -> dict[int, list[Command]]:
    """Split commands by endpoint: StartApp goes where ``choose(cmd)`` says, later commands
    follow their job; returns endpoint -> commands (in the given order)."""
    out: dict[int, list[Command]] = {}
    for cmd in commands:
        if isinstance(cmd, StartApp):
            where[cmd.job_id] = choose(cmd)
        elif cmd.job_id not in where:
            raise ProtocolError(f"command {cmd!r} for a job that never started")
        out.setdefault(where[cmd.job_id], []).append(cmd)
    return out


class LocalAls:
    """Rigid and simulated apps in this process (endpoint 0: rigid, 1: simulated; without an
    `AppSimulator` every job must be rigid)."""

    def __init__(self, rigid: RigidApps, apps: AppSimulator | None = None) -> None:
        self.rigid = rigid
        self.apps = apps
        self._where: dict[int, int] = {}
        self._wall = 0.0

    def round(self, grant: int, commands: Sequence[Command]) -> tuple[list[Fact], int | None]:
        t0 = time.perf_counter()
        parts = route(commands, self._where, lambda c: 0 if c.app == "rigid" else 1)
        if parts.get(0):
            self.rigid.apply(parts[0])
        if parts.get(1):
            if self.apps is None:
                raise ProtocolError(f"job {parts[1][0].job_id} runs an app model, but this "
                                    "simulation has no application level")
            self.apps.apply(parts[1])
        facts = self.rigid.advance(grant)
        promises = [self.rigid.promise()]
        if self.apps is not None:
            facts = merge_facts([facts, self.apps.advance(grant)])
            promises.append(self.apps.promise())
        promises = [p for p in promises if p is not None]
        self._wall += time.perf_counter() - t0
        return facts, min(promises) if promises else None

    def finish(self) -> AlsTotals:
        if self.apps is None:
            return AlsTotals(wall_s={0: self._wall})
        if self.apps.running:
            raise ProtocolError("apps still running at the end of the simulation")
        return AlsTotals(loops=dict(sorted(self.apps.results.items())),
                         chunk_events=self.apps.chunk_events, apps=self.apps.apps_started,
                         wall_s={0: self._wall}, rollbacks=self.apps.rollbacks)

    def close(self) -> None:
        pass
