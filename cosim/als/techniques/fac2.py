"""FAC2, practical factoring (x = 2): batches of P requests of ceil(R_j / (2P)) each.

R_j is the remaining count at the batch's first request (Hummel et al.; DLS4LB "FAC";
LoopSim; bosched). Variants (dls.md D4): ``formula=lb4omp`` uses ceil(N / (2^(j+1) P)),
ignoring what rounding already consumed; ``formula=halving`` halves the previous batch's chunk
(LB4OMP fac2a); ``rounding=floor`` is the Sun f77 FACTORING flavour (125, 62, 31 …).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cosim.als.techniques.base import CommonParams, Context, Planner, Technique, ceil_div

__all__ = ["TECHNIQUE", "Params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params(CommonParams):
    """formula: remaining|lb4omp|halving; rounding: ceil|floor."""

    formula: Literal["remaining", "lb4omp", "halving"] = "remaining"
    rounding: Literal["ceil", "floor"] = "ceil"


class _FAC2(Planner):
    __slots__ = ("k", "p", "n", "formula", "up", "size")

    def __init__(self, params: Params, ctx: Context) -> None:
        self.k = 0
        self.p = ctx.p
        self.n = ctx.n
        self.formula = params.formula
        self.up = params.rounding == "ceil"
        self.size = 0

    def _div(self, a: int, b: int) -> int:
        return ceil_div(a, b) if self.up else a // b

    def next(self, rank: int, remaining: int) -> int:
        k = self.k
        self.k = k + 1
        if k % self.p == 0:
            j = k // self.p
            if self.formula == "remaining":
                self.size = self._div(remaining, 2 * self.p)
            elif self.formula == "lb4omp":
                self.size = self._div(self.n, 2 ** (j + 1) * self.p)
            else:
                self.size = self._div(self.n, 2 * self.p) if j == 0 else self._div(self.size, 2)
        return self.size


TECHNIQUE = Technique(name="FAC2", summary="factoring, half of R per batch", params=Params,
                      make=_FAC2)
