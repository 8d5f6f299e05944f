"""FSC, fixed-size chunking (Kruskal & Weiss 1985): K = (sqrt(2) N h / (sigma P sqrt(ln P)))^(2/3).

h is the scheduling overhead of one chunk and sigma the standard deviation of an iteration's
time, in the same unit. Evaluated exactly (60 digits) with one ceil (DLS4LB, LoopSim,
bosched) or ``rounding=trunc`` (LB4OMP, dls.md §3 FSC). P = 1 gives N (ln 1 = 0); sigma = 0
gives ceil(N/P) (no variance: one chunk per PE is optimal). In the runtime, h defaults to the
job's per-chunk overhead plus the request/assignment round trip and sigma to the standard
deviation of the job's iteration times.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import localcontext
from typing import Literal

from cosim.als.techniques.base import (
    CommonParams, Context, Planner, Technique, ceil_div, dceil, dec, dfloor, require,
)

__all__ = ["TECHNIQUE", "Params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params(CommonParams):
    """h: overhead per chunk; sigma: std of iteration time (same unit); rounding: ceil|trunc."""

    h: float | None = None
    sigma: float | None = None
    rounding: Literal["ceil", "trunc"] = "ceil"

    def __post_init__(self) -> None:
        CommonParams.__post_init__(self)
        if self.h is not None and self.h < 0:
            raise ValueError("h must be >= 0")
        if self.sigma is not None and self.sigma < 0:
            raise ValueError("sigma must be >= 0")


def fsc_chunk(n: int, p: int, h: float, sigma: float, rounding: str = "ceil") -> int:
    """The FSC chunk size for N iterations on P PEs."""
    if p == 1:
        return n
    if sigma == 0:
        return ceil_div(n, p)
    with localcontext() as c:
        c.prec = 60
        base = dec(2).sqrt() * n * dec(h) / (dec(sigma) * p * dec(p).ln().sqrt())
        if base == 0:
            return 0
        k = (base.ln() * 2 / 3).exp()
        return dceil(k) if rounding == "ceil" else dfloor(k)


class _FSC(Planner):
    __slots__ = ("size",)

    def __init__(self, params: Params, ctx: Context) -> None:
        h = require(params.h if params.h is not None else ctx.overhead_s, "FSC", "h",
                    "scheduling overhead per chunk, in the unit of sigma")
        sigma = require(params.sigma if params.sigma is not None else ctx.std_s, "FSC",
                        "sigma", "standard deviation of an iteration's time")
        self.size = fsc_chunk(ctx.n, ctx.p, h, sigma, params.rounding)

    def fixed_size(self) -> int:
        return self.size

    def next(self, rank: int, remaining: int) -> int:
        return self.size


TECHNIQUE = Technique(name="FSC", summary="fixed size from overhead h and variance sigma",
                      params=Params, make=_FSC, fine_grained=True)
