"""GSS, guided self-scheduling (Polychronopoulos & Kuck 1987): K = ceil(R/P).

GSS(k) is GSS with ``min_chunk=k``. ``rounding=floor`` is the Sun f77 flavour ("GSS(10)":
250, 187, 140 for N=1000, P=4; dls.md §3 FAC2). LB4OMP's "GSS" is LLVM guided (D6), not this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cosim.als.techniques.base import CommonParams, Context, Planner, Technique

__all__ = ["TECHNIQUE", "Params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params(CommonParams):
    """rounding: 'ceil' (canonical) or 'floor' (Sun f77)."""

    rounding: Literal["ceil", "floor"] = "ceil"


class _GSS(Planner):
    __slots__ = ("p", "up")

    def __init__(self, params: Params, ctx: Context) -> None:
        self.p = ctx.p
        self.up = params.rounding == "ceil"

    def next(self, rank: int, remaining: int) -> int:
        return -(-remaining // self.p) if self.up else remaining // self.p


TECHNIQUE = Technique(name="GSS", summary="ceil(R/P)", params=Params, make=_GSS)
