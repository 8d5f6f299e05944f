"""WF, weighted factoring (Hummel, Schmidt, Uma & Wein 1996): FAC2 batches scaled per PE.

K = ceil(w_i * ceil(R_j / (2P))) for a request of PE i in batch j (batches of P requests, as
FAC2). The weights sum to P: given ones are normalised to sum P; by default they are the PEs'
relative speeds (so WF equals FAC2 on a homogeneous job). Rounding is ceil (LoopSim, LB4OMP);
DLS4LB truncates and keeps a per-batch remainder (dls.md D3), not reproduced here.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from cosim.als.techniques.base import (
    CommonParams, Context, Planner, Technique, ceil_div, weights_for,
)

__all__ = ["TECHNIQUE", "Params", "WeightedBatches"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params(CommonParams):
    """weights: one per PE of the job, in rank order (default: relative speeds)."""

    weights: tuple[float, ...] = ()


class WeightedBatches(Planner):
    """FAC2 batches with a per-rank weight; AWF reuses it with weights updated per step."""

    __slots__ = ("k", "p", "base", "weight")

    def __init__(self, weights: list[Fraction], ctx: Context) -> None:
        self.k = 0
        self.p = ctx.p
        self.base = 0
        self.weight = dict(zip(ctx.ranks, weights, strict=True))

    def next(self, rank: int, remaining: int) -> int:
        k = self.k
        self.k = k + 1
        if k % self.p == 0:
            self.base = ceil_div(remaining, 2 * self.p)
        x = self.weight[rank] * self.base
        return -(-x.numerator // x.denominator)


def _make(params: Params, ctx: Context) -> WeightedBatches:
    return WeightedBatches(weights_for(params.weights, ctx, "WF"), ctx)


TECHNIQUE = Technique(name="WF", summary="FAC2 batches weighted by PE speed", params=Params,
                      make=_make, pe_dependent=True)
