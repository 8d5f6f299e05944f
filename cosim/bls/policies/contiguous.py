"""Contiguous host selection: the first block of consecutive free hosts that is long enough.

The job takes the first `count` hosts of the lowest-indexed run of free hosts whose length is
at least `count`. When no run is long enough the job is not held back (the profile counts
hosts, not blocks, and Slurm also falls back unless ``--contiguous`` is forced): it gets the
lowest-indexed free hosts, as first-fit.
"""

from __future__ import annotations

import numpy as np

from cosim.bls.policies.base import SelectionPolicy
from cosim.bls.policies.first_fit import select as first_fit
from cosim.bls.policies.runs import free_runs

__all__ = ["POLICY", "select"]


def select(free: np.ndarray, count: int) -> np.ndarray:
    """First run of free hosts of length >= `count`; else first-fit."""
    starts, lengths = free_runs(free)
    fits = np.flatnonzero(lengths >= count)
    if len(fits) == 0:
        return first_fit(free, count)
    s = int(starts[fits[0]])
    return np.arange(s, s + count, dtype=np.int64)


POLICY = SelectionPolicy(name="contiguous", summary="first block of consecutive free hosts",
                         select=select)
