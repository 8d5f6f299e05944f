"""An example cosim plugin: a DLS technique and a batch priority rule, registered by entry point.

``CHUNK`` hands out chunks of a fixed ``size`` (default 8) iterations, the last one what is
left: ``cosim app --app mandelbrot --hosts 4 --technique CHUNK --param size=16``.
``lpf`` orders the batch queue largest job (most PEs) first, earlier submissions first among
equals (cosim adds the job id as the last tie-break): ``cosim run --priority lpf``.
Both use only cosim's public registry types (`cosim.als.techniques`, `cosim.bls.policies`).
"""

from __future__ import annotations

from dataclasses import dataclass

from cosim.als.techniques import CommonParams, Context, Planner, Technique
from cosim.bls.policies import PriorityPolicy

__all__ = ["CHUNK", "LARGEST_FIRST"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkParams(CommonParams):
    """CHUNK's parameters: the chunk size (>= 1) besides the common ones (``min_chunk``)."""

    size: int = 8

    def __post_init__(self) -> None:
        CommonParams.__post_init__(self)
        if self.size < 1:
            raise ValueError("size must be >= 1")


class _Chunk(Planner):
    __slots__ = ("size",)

    def __init__(self, params: ChunkParams, ctx: Context) -> None:
        self.size = params.size

    def fixed_size(self) -> int:  # every request gets the same size: cosim's fast loop
        return self.size

    def next(self, rank: int, remaining: int) -> int:
        return self.size


CHUNK = Technique(name="CHUNK", summary="a fixed chunk of `size` iterations (example plugin)",
                  params=ChunkParams, make=_Chunk)


def _largest_first(job) -> tuple[int, int]:
    return (-job.pes, job.submit)


LARGEST_FIRST = PriorityPolicy(name="lpf", summary="largest job (PEs) first, then submit time "
                               "(example plugin)", key=_largest_first)
