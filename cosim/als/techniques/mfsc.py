"""mFSC, modified FSC (DLB_tool/DLS4LB): K = floor(0.55 + t ln2 / ln t), t = ceil(N/P).

It needs no h or sigma and gives about as many chunks as FAC, (N/P)/log2(N/P) (dls.md §2).
t = 1 is undefined (ln 1 = 0); the reference, and cosim, return 1.
"""

from __future__ import annotations

from decimal import localcontext

from cosim.als.techniques.base import (
    CommonParams, Context, Planner, Technique, ceil_div, dec, dfloor,
)

__all__ = ["TECHNIQUE"]


class _MFSC(Planner):
    __slots__ = ("size",)

    def __init__(self, params: CommonParams, ctx: Context) -> None:
        t = ceil_div(ctx.n, ctx.p)
        if t <= 1:
            self.size = 1
        else:
            with localcontext() as c:
                c.prec = 60
                self.size = dfloor(dec(0.55) + t * dec(2).ln() / dec(t).ln())

    def fixed_size(self) -> int:
        return self.size

    def next(self, rank: int, remaining: int) -> int:
        return self.size


TECHNIQUE = Technique(name="MFSC", summary="FSC sized like FAC, no parameters",
                      params=CommonParams, make=_MFSC)
