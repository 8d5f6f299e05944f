"""Runs of consecutive free hosts, shared by the contiguous and best-fit selections."""

from __future__ import annotations

import numpy as np

__all__ = ["free_runs"]


def free_runs(free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, lengths)`` of the maximal runs of free hosts, in host order."""
    padded = np.concatenate(([0], free.view(np.int8), [0]))
    edges = np.diff(padded)
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    return starts, ends - starts
