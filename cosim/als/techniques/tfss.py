"""TFSS, trapezoid factoring self-scheduling (Chronopoulos et al. 2001).

Batches of P requests; batch b hands out, to each of its P requests, the integer average of the
P TSS chunks it replaces: floor(sum_{i<P} max(F - (bP+i) delta, L) / P), with TSS's F, L and
integer delta (dls.md §2; LB4OMP truncates delta). The TSS parameters apply (first, last).
"""

from __future__ import annotations

from cosim.als.techniques.base import Context, Planner, Technique
from cosim.als.techniques.tss import Params, tss_shape

__all__ = ["TECHNIQUE"]


class _TFSS(Planner):
    __slots__ = ("k", "p", "f", "last", "delta", "size")

    def __init__(self, params: Params, ctx: Context) -> None:
        self.k = 0
        self.p = ctx.p
        self.f, self.last, self.delta = tss_shape(ctx.n, ctx.p, params)
        self.size = 0

    def next(self, rank: int, remaining: int) -> int:
        k = self.k
        self.k = k + 1
        if k % self.p == 0:
            total = sum(max(self.f - (k + i) * self.delta, self.last) for i in range(self.p))
            self.size = int(total // self.p)  # delta is an integer Fraction: exact floor
        return self.size


TECHNIQUE = Technique(name="TFSS", summary="TSS chunks averaged over batches of P",
                      params=Params, make=_TFSS)
