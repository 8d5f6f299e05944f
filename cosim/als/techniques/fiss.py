"""FISS, fixed increase self-scheduling (Philip & Das 1997): chunks grow by delta per stage.

B stages (default P-1, LB4OMP), X = B + 2, K_0 = floor(N/(XP)),
delta = floor(2N(1 - B/X) / (P B (B-1))), stage s = k // P gets K_0 + s delta (dls.md §2).
The floors leave the first B stages short of N; stages go on growing until R is used up. For
B < 2, delta = 0. Exact integer arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from cosim.als.techniques.base import CommonParams, Context, Planner, Technique

__all__ = ["TECHNIQUE", "Params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params(CommonParams):
    """stages: B, the number of stages (default P-1)."""

    stages: int | None = None

    def __post_init__(self) -> None:
        CommonParams.__post_init__(self)
        if self.stages is not None and self.stages < 1:
            raise ValueError("stages must be >= 1")


class _FISS(Planner):
    __slots__ = ("k", "p", "k0", "delta")

    def __init__(self, params: Params, ctx: Context) -> None:
        n, p = ctx.n, ctx.p
        b = params.stages if params.stages is not None else max(p - 1, 1)
        x = b + 2
        self.k = 0
        self.p = p
        self.k0 = n // (x * p)
        if b < 2:
            self.delta = 0
        else:
            d = Fraction(2 * n) * (1 - Fraction(b, x)) / (p * b * (b - 1))
            self.delta = d.numerator // d.denominator

    def next(self, rank: int, remaining: int) -> int:
        k = self.k
        self.k = k + 1
        return self.k0 + (k // self.p) * self.delta


TECHNIQUE = Technique(name="FISS", summary="chunks increase by a fixed step per stage",
                      params=Params, make=_FISS)
