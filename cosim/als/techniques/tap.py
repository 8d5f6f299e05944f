"""TAP, taper (Lucco 1992): K = max(K_min, ceil(T + v^2/2 - v sqrt(2T + v^2/4))) per request.

v = alpha sigma / mu and T = R/P + K_min/2 (Lucco, bosched; ``t=lb4omp`` uses T = R/P, D8).
Evaluated with 60-digit decimals. With v -> 0 TAP becomes ceil(R/P + K_min/2). In the runtime
mu and sigma default to the mean and standard deviation of the job's iteration times.
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
    """mu, sigma (see MomentParams); alpha: scale of v; k_min; t: lucco|lb4omp."""

    alpha: float = 1.0
    k_min: int = 1
    t: Literal["lucco", "lb4omp"] = "lucco"

    def __post_init__(self) -> None:
        MomentParams.__post_init__(self)
        if self.alpha < 0:
            raise ValueError("alpha must be >= 0")
        if self.k_min < 1:
            raise ValueError("k_min must be >= 1")


class _TAP(Planner):
    __slots__ = ("p", "v", "k_min", "half")

    def __init__(self, params: Params, ctx: Context) -> None:
        self.p = ctx.p
        self.v = dec(params.alpha) * moments(params, ctx, "TAP")
        self.k_min = params.k_min
        self.half = dec(params.k_min) / 2 if params.t == "lucco" else dec(0)

    def next(self, rank: int, remaining: int) -> int:
        with localcontext() as c:
            c.prec = 60
            t = dec(remaining) / self.p + self.half
            v = self.v
            k = dceil(t + v * v / 2 - v * (2 * t + v * v / 4).sqrt())
        return k if k > self.k_min else self.k_min


TECHNIQUE = Technique(name="TAP", summary="taper: GSS shrunk by the variance", params=Params,
                      make=_TAP)
