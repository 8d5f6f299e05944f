"""In-process ALS endpoints: every app simulated in the coordinator's process.

`LocalAls` routes each command to the endpoint that runs its job (a `Placement` chooses, for
a `StartApp`: `TRACE` for the trace endpoint, 0 for the app simulator), advances every
endpoint to the grant and merges their facts in the canonical order (sources in destination
order: the trace endpoint first). It is the transport of ``K = 1`` and of every test; the
MPI transport keeps the same trace endpoint on rank 0 and puts simulated apps on other ranks.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from cosim.errors import ProtocolError
from cosim.protocol.messages import Command, Fact
from cosim.transport.base import (
    TRACE, AlsTotals, Endpoint, Placement, earliest, merge_facts, merge_totals, route,
    trace_round,
)

__all__ = ["LocalAls"]


class LocalAls:
    """Endpoints in this process, by destination (`TRACE`, 0, ...)."""

    def __init__(self, endpoints: Mapping[int, Endpoint], placement: Placement) -> None:
        self.endpoints = dict(sorted(endpoints.items()))
        self.placement = placement
        self._where: dict[int, int] = {}
        self._wall = 0.0
        self._others: int | None = None  # the last round's promise of the non-trace endpoints

    def round(self, grant: int, commands: Sequence[Command]) -> tuple[list[Fact], int | None]:
        t0 = time.perf_counter()
        parts = route(commands, self._where, self.placement, grant)
        for dest, cmds in parts.items():
            ep = self.endpoints.get(dest)
            if ep is None:
                raise ProtocolError(f"job {cmds[0].job_id} runs an app model, but this "
                                    "simulation has no application level")
            ep.apply(cmds)
        eps = self.endpoints.values()
        if len(eps) == 1:  # a trace workload: no merge
            (ep,) = eps
            facts = ep.advance(grant)
            promise = ep.promise()
        else:
            facts = merge_facts([ep.advance(grant) for ep in eps])
            self._others = earliest(*(ep.promise() for d, ep in self.endpoints.items()
                                      if d != TRACE))
            trace = self.endpoints.get(TRACE)
            promise = earliest(trace.promise() if trace is not None else None, self._others)
        self._wall += time.perf_counter() - t0
        return facts, promise

    def local_round(self, grant: int, commands: Sequence[Command]
                    ) -> tuple[list[Fact], int | None] | None:
        t0 = time.perf_counter()
        out = trace_round(self.endpoints.get(TRACE), commands, self._where, self.placement,
                          grant, self._others)
        self._wall += time.perf_counter() - t0
        return out

    def finish(self) -> AlsTotals:
        return merge_totals([ep.totals() for ep in self.endpoints.values()], {0: self._wall})

    def close(self, interrupted: bool = False) -> None:
        pass
