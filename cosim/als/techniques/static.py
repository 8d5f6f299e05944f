"""STATIC: ceil(N/P) at every request, so at most P chunks and the last is the remainder.

This is the canonical ("greedy") flavour of DLS4LB, LoopSim and LB4OMP's static_greedy
(dls.md §2). ``variant=balanced`` is OpenMP's static: N mod P chunks of ceil(N/P), then
floor(N/P), so exactly min(N, P) chunks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cosim.als.techniques.base import CommonParams, Context, Planner, Technique, ceil_div

__all__ = ["TECHNIQUE", "Params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params(CommonParams):
    """variant: 'greedy' (canonical) or 'balanced' (OpenMP static)."""

    variant: Literal["greedy", "balanced"] = "greedy"


class _Static(Planner):
    __slots__ = ("k", "q", "r", "greedy", "size")

    def __init__(self, params: Params, ctx: Context) -> None:
        self.k = 0
        self.q, self.r = divmod(ctx.n, ctx.p)
        self.greedy = params.variant == "greedy"
        self.size = ceil_div(ctx.n, ctx.p)

    def fixed_size(self) -> int:
        return self.size if self.greedy else 0

    def next(self, rank: int, remaining: int) -> int:
        if self.greedy:
            return self.size
        k = self.k
        self.k = k + 1
        return self.q + 1 if k < self.r else self.q


TECHNIQUE = Technique(name="STATIC", summary="ceil(N/P) per request", params=Params, make=_Static)
