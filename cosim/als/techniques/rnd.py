"""RND: a uniformly random chunk size in [lo, hi] per request (LB4OMP's baseline).

hi defaults to ceil(N/(2P)) and lo to 1 (dls.md §3). The numbers come from a
`numpy.random.Generator`: ``seed`` if given, else the run's keyed stream for the job, so a run
is reproducible (LB4OMP seeds with the clock and is not).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cosim.als.techniques.base import CommonParams, Context, Planner, Technique, ceil_div

__all__ = ["TECHNIQUE", "Params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params(CommonParams):
    """seed: overrides the run's stream; lo, hi: inclusive bounds (hi default ceil(N/(2P)))."""

    seed: int | None = None
    lo: int = 1
    hi: int | None = None

    def __post_init__(self) -> None:
        CommonParams.__post_init__(self)
        if self.seed is not None and self.seed < 0:
            raise ValueError("seed must be >= 0")
        if self.lo < 1:
            raise ValueError("lo must be >= 1")
        if self.hi is not None and self.hi < self.lo:
            raise ValueError("hi must be >= lo")


class _RND(Planner):
    __slots__ = ("draw", "lo", "hi")

    def __init__(self, params: Params, ctx: Context) -> None:
        if params.seed is not None:
            rng = np.random.default_rng(params.seed)
        elif ctx.rng is not None:
            rng = ctx.rng
        else:
            rng = np.random.default_rng(0)
        self.lo = params.lo
        self.hi = max(params.hi if params.hi is not None else ceil_div(ctx.n, 2 * ctx.p), self.lo)
        self.draw = rng.integers

    def next(self, rank: int, remaining: int) -> int:
        return int(self.draw(self.lo, self.hi, endpoint=True))


TECHNIQUE = Technique(name="RND", summary="uniform random chunk in [lo, hi]", params=Params,
                      make=_RND)
