"""First-fit host selection (the default): the lowest-indexed free hosts.

Tie-break: none needed — host order decides everything.
"""

from __future__ import annotations

import numpy as np

from cosim.bls.policies.base import SelectionPolicy

__all__ = ["POLICY", "select"]


def select(free: np.ndarray, count: int) -> np.ndarray:
    """The `count` free hosts with the lowest indices."""
    hosts = np.flatnonzero(free)[:count]
    if len(hosts) < count:
        raise ValueError(f"{count} hosts asked, {len(hosts)} free")
    return hosts


POLICY = SelectionPolicy(name="first-fit", summary="lowest-indexed free hosts", select=select)
