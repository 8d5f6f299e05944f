"""AF, adaptive factoring (Banicescu & Liu 2000): chunks from measured per-PE mean and variance.

With mu_i and sigma_i^2 the mean and sample variance (clamped at >= 0) of PE i's per-iteration
times, cumulative over every iteration it has executed (LoopSim), D = sum_i sigma_i^2 / mu_i
and T = (sum_i 1/mu_i)^-1, a request of PE i gets
K = ceil((D + 2TR - sqrt(D^2 + 4DTR)) / (2 mu_i)) (dls.md §2). Until all P PEs have reported,
the chunk is ceil(N/(10P)) (``init=loopsim``, canonical), ceil(R/(2P)) (``init=fac2``,
bosched) or min_chunk (``init=min``, DLS4LB). The runtime supplies each chunk's exact
per-iteration time statistics (its iterations' costs at the PE's effective speed), as a runtime
timing every iteration would measure them. If a PE's mean is 0 the rule is undefined and GSS's
ceil(R/P) is used. With sigma = 0 and equal speeds AF is GSS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from cosim.als.techniques.base import CommonParams, Context, Planner, Technique, ceil_div

__all__ = ["TECHNIQUE", "Params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params(CommonParams):
    """init: chunk before every PE has reported: loopsim (N/(10P)) | fac2 (R/(2P)) | min."""

    init: Literal["loopsim", "fac2", "min"] = "loopsim"


class _AF(Planner):
    __slots__ = ("ranks", "p", "n", "init", "count", "sum_t", "sum_t2", "mu", "dterm", "iterm",
                 "missing", "d", "t")
    adaptive = True
    wants_sq = True

    def __init__(self, params: Params, ctx: Context) -> None:
        self.ranks = ctx.ranks
        self.p = ctx.p
        self.n = ctx.n
        self.init = params.init
        self.count = dict.fromkeys(ctx.ranks, 0)
        self.sum_t = dict.fromkeys(ctx.ranks, 0.0)
        self.sum_t2 = dict.fromkeys(ctx.ranks, 0.0)
        self.mu = dict.fromkeys(ctx.ranks, 0.0)
        self.dterm = dict.fromkeys(ctx.ranks, 0.0)  # sigma_i^2 / mu_i
        self.iterm = dict.fromkeys(ctx.ranks, 0.0)  # 1 / mu_i
        self.missing = set(ctx.ranks)  # ranks without a positive mean yet
        self.d = 0.0
        self.t = 0.0

    def record(self, rank: int, size: int, compute_s: float, elapsed_s: float,
               sq_s2: float) -> None:
        n = self.count[rank] + size
        self.count[rank] = n
        self.sum_t[rank] += compute_s
        self.sum_t2[rank] += sq_s2
        mu = self.sum_t[rank] / n
        var = (self.sum_t2[rank] - n * mu * mu) / (n - 1) if n > 1 else 0.0
        var = var if var > 0.0 else 0.0
        self.mu[rank] = mu
        if mu > 0.0:
            self.missing.discard(rank)
            self.dterm[rank] = var / mu
            self.iterm[rank] = 1.0 / mu
        # fsum is exactly rounded: the sums do not depend on the order of reports, and do not
        # drift as an incremental update would
        self.d = math.fsum(self.dterm.values())
        inv = math.fsum(self.iterm.values())
        self.t = 1.0 / inv if inv > 0.0 else 0.0

    def next(self, rank: int, remaining: int) -> int:
        if self.missing:
            if any(self.count[r] == 0 for r in self.ranks):
                if self.init == "loopsim":
                    return ceil_div(self.n, 10 * self.p)
                if self.init == "fac2":
                    return ceil_div(remaining, 2 * self.p)
                return 1
            return ceil_div(remaining, self.p)  # a PE measured zero time: AF is undefined
        d, tr = self.d, self.t * remaining
        x = (d + 2.0 * tr - math.sqrt(d * d + 4.0 * d * tr)) / (2.0 * self.mu[rank])
        return math.ceil(x)


TECHNIQUE = Technique(name="AF", summary="adaptive factoring from measured mu_i, sigma_i",
                      params=Params, make=_AF, adaptive=True, pe_dependent=True)
