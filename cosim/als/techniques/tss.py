"""TSS, trapezoid self-scheduling (Tzen & Ni 1993): chunks fall linearly from F to L.

F = ceil(N/(2P)) and L = 1 unless given, C = ceil(2N/(F+L)) chunks, delta = floor((F-L)/(C-1)),
K_k = max(F - k delta, L) (dls.md §2, §3 TSS). ``delta=real`` keeps delta real and takes
ceil(max(F - k delta, L)) (bosched); ``delta=dls4lb`` reproduces DLS4LB-C and LoopSim, whose
integer division makes C = floor(2N/(F+L)) (D5: the trapezoid can end before covering N, and
the tail is then handed out in min_chunk pieces). `tss_shape` is shared with TFSS.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from cosim.als.techniques.base import CommonParams, Context, Planner, Technique, ceil_div

__all__ = ["TECHNIQUE", "Params", "tss_shape"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params(CommonParams):
    """first: F (default ceil(N/(2P))); last: L (default 1); delta: int|real|dls4lb."""

    first: int | None = None
    last: int | None = None
    delta: Literal["int", "real", "dls4lb"] = "int"

    def __post_init__(self) -> None:
        CommonParams.__post_init__(self)
        if self.first is not None and self.first < 1:
            raise ValueError("first must be >= 1")
        if self.last is not None and self.last < 1:
            raise ValueError("last must be >= 1")
        if self.first is not None and self.last is not None and self.last > self.first:
            raise ValueError("last must be <= first")


def tss_shape(n: int, p: int, params: Params) -> tuple[int, int, Fraction]:
    """(F, L, delta) of the trapezoid for N iterations on P PEs."""
    f = params.first if params.first is not None else max(1, ceil_div(n, 2 * p))
    last = params.last if params.last is not None else 1
    last = min(last, f)
    c = (2 * n) // (f + last) if params.delta == "dls4lb" else ceil_div(2 * n, f + last)
    if c <= 1:
        return f, last, Fraction(0)
    d = Fraction(f - last, c - 1)
    return f, last, d if params.delta == "real" else Fraction(d.numerator // d.denominator)


class _TSS(Planner):
    __slots__ = ("k", "f", "last", "delta")

    def __init__(self, params: Params, ctx: Context) -> None:
        self.k = 0
        self.f, self.last, self.delta = tss_shape(ctx.n, ctx.p, params)

    def next(self, rank: int, remaining: int) -> int:
        k = self.k
        self.k = k + 1
        x = self.f - k * self.delta
        if x <= self.last:
            return self.last
        return -(-x.numerator // x.denominator)


TECHNIQUE = Technique(name="TSS", summary="linearly decreasing chunks", params=Params, make=_TSS)
