"""SS, self-scheduling (Tang & Yew 1986): one iteration per request (dls.md §2)."""

from __future__ import annotations

from cosim.als.techniques.base import CommonParams, Context, Planner, Technique

__all__ = ["TECHNIQUE"]


class _SS(Planner):
    __slots__ = ()

    def __init__(self, params: CommonParams, ctx: Context) -> None:
        pass

    def fixed_size(self) -> int:
        return 1

    def next(self, rank: int, remaining: int) -> int:
        return 1


TECHNIQUE = Technique(name="SS", summary="1 iteration per request", params=CommonParams, make=_SS,
                      fine_grained=True)
