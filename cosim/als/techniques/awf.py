"""AWF, adaptive weighted factoring for time-stepping loops (Banicescu, Velusamy & Devaprasad 2003).

Within a time step AWF is WF; at the end of step s every PE's performance is
pi_i = sum_t t T_i(t) / sum_t t n_i(t) over the steps t = 1..s so far (T_i: its compute time in
step t, n_i: its iterations), and the weights become w_i = P (1/pi_i) / sum_j (1/pi_j)
(dls.md §2; LB4OMP accumulates over steps, DLS4LB only keeps the last, D12). Initial weights
are the given ones or relative speeds. A loop run with one time step is therefore WF: AWF
needs the runtime's ``timesteps`` > 1 to adapt.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from cosim.als.techniques.base import (
    CommonParams, Context, Planner, Technique, weights_for,
)
from cosim.als.techniques.wf import WeightedBatches

__all__ = ["TECHNIQUE", "Params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params(CommonParams):
    """weights: initial weights, one per PE in rank order (default: relative speeds)."""

    weights: tuple[float, ...] = ()


class _AWF(Planner):
    __slots__ = ("ctx", "inner", "step", "time", "iters", "sum_tt", "sum_tn")
    adaptive = True

    def __init__(self, params: Params, ctx: Context) -> None:
        self.ctx = ctx
        self.inner = WeightedBatches(weights_for(params.weights, ctx, "AWF"), ctx)
        self.step = 1
        self.time = dict.fromkeys(ctx.ranks, 0.0)
        self.iters = dict.fromkeys(ctx.ranks, 0)
        self.sum_tt = dict.fromkeys(ctx.ranks, 0.0)
        self.sum_tn = dict.fromkeys(ctx.ranks, 0.0)

    def next(self, rank: int, remaining: int) -> int:
        return self.inner.next(rank, remaining)

    def record(self, rank: int, size: int, compute_s: float, elapsed_s: float,
               sq_s2: float) -> None:
        self.time[rank] += compute_s
        self.iters[rank] += size

    def end_step(self) -> None:
        s = self.step
        for r in self.ctx.ranks:
            self.sum_tt[r] += s * self.time[r]
            self.sum_tn[r] += s * self.iters[r]
            self.time[r] = 0.0
            self.iters[r] = 0
        inv = {r: self.sum_tn[r] / self.sum_tt[r] for r in self.ctx.ranks
               if self.sum_tt[r] > 0 and self.sum_tn[r] > 0}
        if len(inv) == self.ctx.p:  # every PE measured: new weights; else keep the old ones
            total = sum(inv.values())
            weights = [Fraction(self.ctx.p * inv[r] / total) for r in self.ctx.ranks]
            self.inner = WeightedBatches(weights, self.ctx)
        else:
            self.inner = WeightedBatches(list(self.inner.weight.values()), self.ctx)
        self.step = s + 1


TECHNIQUE = Technique(name="AWF", summary="WF with weights adapted between time steps",
                      params=Params, make=_AWF, adaptive=True, pe_dependent=True)
