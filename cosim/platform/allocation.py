"""Allocation helpers shared by the batch level and the application level.

`spread_pes` is the one rule that places a job's PEs on its hosts: evenly, the first
``pes % hosts`` hosts (in ascending host order) taking one more. The batch level counts PEs
with it and the ALS places workers with it, so both always agree. `job_pe_indices` lists the
global PE indices a job uses on a platform under that rule (host-major, cores in order).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["spread_pes", "spread_runs", "job_pe_indices"]


def spread_pes(pes: int, hosts: int) -> list[int]:
    """PEs per host when `pes` are spread over `hosts` hosts: even, remainder on the first."""
    base, extra = divmod(pes, hosts)
    return [base + 1] * extra + [base] * (hosts - extra)


def spread_runs(runs: Iterable[tuple[int, int]], pes: int,
                hosts: int) -> list[tuple[int, int, int]]:
    """The spread rule over hosts given as runs ``(first, count)`` (ascending, `hosts` in
    all): ``(first host, hosts, PEs on each)`` segments, the hosts taking one more PE first."""
    base, extra = divmod(pes, hosts)
    out: list[tuple[int, int, int]] = []
    seen = 0
    for first, n in runs:
        k = min(n, extra - seen) if extra > seen else 0
        if k:
            out.append((first, k, base + 1))
        if n > k and base:
            out.append((first + k, n - k, base))
        seen += n
    return out


def job_pe_indices(pe_hosts: np.ndarray, hosts: Sequence[int], pes: int) -> list[int]:
    """Global PE indices of a job holding `hosts` (ascending) with `pes` PEs.

    `pe_hosts` maps global PE index -> host index (`Platform.pe_hosts`), host-major.
    """
    first = np.searchsorted(pe_hosts, np.asarray(hosts), side="left")
    out: list[int] = []
    for f, k in zip(first.tolist(), spread_pes(pes, len(hosts)), strict=True):
        out.extend(range(f, f + k))
    return out
