"""Best-fit host selection: the shortest run of free hosts that holds the job.

The job takes the first `count` hosts of the shortest run of consecutive free hosts whose
length is at least `count` (it leaves the smallest fragment); equal lengths go to the lowest
host index. When no run is long enough the job is split over as few runs as possible: runs
are taken longest first (equal lengths: lowest index first), the last one only in part (its
lowest hosts).
"""

from __future__ import annotations

import numpy as np

from cosim.bls.policies.base import SelectionPolicy
from cosim.bls.policies.runs import free_runs

__all__ = ["POLICY", "select"]


def select(free: np.ndarray, count: int) -> np.ndarray:
    """Shortest run of length >= `count`; else the longest runs first."""
    starts, lengths = free_runs(free)
    fits = np.flatnonzero(lengths >= count)
    if len(fits):
        best = fits[np.argmin(lengths[fits])]  # argmin: first minimum = lowest index
        s = int(starts[best])
        return np.arange(s, s + count, dtype=np.int64)
    if int(lengths.sum()) < count:
        raise ValueError(f"{count} hosts asked, {int(lengths.sum())} free")
    order = np.lexsort((starts, -lengths))
    hosts: list[int] = []
    for r in order:
        take = min(int(lengths[r]), count - len(hosts))
        s = int(starts[r])
        hosts.extend(range(s, s + take))
        if len(hosts) == count:
            break
    return np.asarray(sorted(hosts), dtype=np.int64)


POLICY = SelectionPolicy(name="best-fit", summary="shortest run of free hosts that fits",
                         select=select)
