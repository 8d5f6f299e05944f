"""PLS, performance-based loop scheduling (Shih, Yang & Tseng 2007).

The first P requests get ceil(N SWR / P) (the static part, SWR = static workload ratio,
default 0.5 as LB4OMP); every later request gets GSS's ceil(R/P) (canonical; LB4OMP's
closed-form tail is not reproduced, dls.md D7).
"""

from __future__ import annotations

from dataclasses import dataclass

from cosim.als.techniques.base import CommonParams, Context, Planner, Technique, exact

__all__ = ["TECHNIQUE", "Params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params(CommonParams):
    """swr: static workload ratio in [0, 1]."""

    swr: float = 0.5

    def __post_init__(self) -> None:
        CommonParams.__post_init__(self)
        if not 0.0 <= self.swr <= 1.0:
            raise ValueError("swr must be in [0, 1]")


class _PLS(Planner):
    __slots__ = ("k", "p", "static")

    def __init__(self, params: Params, ctx: Context) -> None:
        self.k = 0
        self.p = ctx.p
        s = exact(params.swr) * ctx.n / ctx.p
        self.static = -(-s.numerator // s.denominator)

    def next(self, rank: int, remaining: int) -> int:
        k = self.k
        self.k = k + 1
        return self.static if k < self.p else -(-remaining // self.p)


TECHNIQUE = Technique(name="PLS", summary="static part SWR, then GSS", params=Params, make=_PLS)
