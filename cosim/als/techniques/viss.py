"""VISS, variable increase self-scheduling (Philip & Das 1997, as LB4OMP defines it).

K_0 = max(1, floor(N/(XP))) with X default P; stage s = k // P gets
floor(K_0 (2 - 2^-s)), i.e. K_s = K_{s-1} + K_0 / 2^s, growing towards 2 K_0 (dls.md §2). Exact
rationals: the chunk reaches 2 K_0 - 1, not LB4OMP's double-rounded 2 K_0.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from cosim.als.techniques.base import CommonParams, Context, Planner, Technique

__all__ = ["TECHNIQUE", "Params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params(CommonParams):
    """x: X of K_0 = N/(XP) (default P)."""

    x: int | None = None

    def __post_init__(self) -> None:
        CommonParams.__post_init__(self)
        if self.x is not None and self.x < 1:
            raise ValueError("x must be >= 1")


class _VISS(Planner):
    __slots__ = ("k", "p", "k0", "stage", "size")

    def __init__(self, params: Params, ctx: Context) -> None:
        x = params.x if params.x is not None else ctx.p
        self.k = 0
        self.p = ctx.p
        self.k0 = max(1, ctx.n // (x * ctx.p))
        self.stage = -1
        self.size = 0

    def next(self, rank: int, remaining: int) -> int:
        s = self.k // self.p
        self.k += 1
        if s != self.stage:
            self.stage = s
            # once 2^-s is below 1/K_0 the floor is 2 K_0 - 1 for good: stop growing exponents
            v = self.k0 * (2 - Fraction(1, 2 ** min(s, 64 + self.k0.bit_length())))
            self.size = v.numerator // v.denominator
        return self.size


TECHNIQUE = Technique(name="VISS", summary="chunks grow towards 2 K_0 by halving steps",
                      params=Params, make=_VISS)
