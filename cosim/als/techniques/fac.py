"""FAC, factoring with known mean and deviation (Hummel, Schonberg & Flynn 1992).

Batches of P requests; batch j is sized from R_j, the iterations remaining at its first
request: b_j = P sigma / (2 mu sqrt(R_j)), x_0 = 1 + b_0^2 + b_0 sqrt(b_0^2 + 2),
x_j = 2 + b_j^2 + b_j sqrt(b_j^2 + 4) for j >= 1, K_j = ceil(R_j / (x_j P)) (dls.md §2, LB4OMP).
``x0=plus4`` uses +4 in the first batch too (bosched, D9). Only sigma/mu matters. In the
runtime mu and sigma default to the mean and standard deviation of the job's iteration times.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import localcontext
from typing import Literal

from cosim.als.techniques.base import (
    Context, MomentParams, Planner, Technique, dceil, dec, moments,
)

__all__ = ["TECHNIQUE", "Params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params(MomentParams):
    """mu, sigma (see MomentParams); x0: plus2 (canonical) | plus4."""

    x0: Literal["plus2", "plus4"] = "plus2"


class _FAC(Planner):
    __slots__ = ("k", "p", "ratio", "plus4", "size")

    def __init__(self, params: Params, ctx: Context) -> None:
        self.k = 0
        self.p = ctx.p
        self.ratio = moments(params, ctx, "FAC")
        self.plus4 = params.x0 == "plus4"
        self.size = 0

    def next(self, rank: int, remaining: int) -> int:
        k = self.k
        self.k = k + 1
        if k % self.p == 0:
            with localcontext() as c:
                c.prec = 60
                p = self.p
                b = p * self.ratio / (2 * dec(remaining).sqrt())
                if k == 0 and not self.plus4:
                    x = 1 + b * b + b * (b * b + 2).sqrt()
                else:
                    x = 2 + b * b + b * (b * b + 4).sqrt()
                self.size = dceil(remaining / (x * p))
        return self.size


TECHNIQUE = Technique(name="FAC", summary="factoring with known mu, sigma", params=Params,
                      make=_FAC)
