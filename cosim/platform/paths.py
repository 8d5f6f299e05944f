"""Deterministic shortest paths by latency, shared by every routing of a platform.

Paths are compared by the key ``(latency, hops, nodes)``: the smallest latency sum wins; among
equal latencies the path with fewer links; among those, the path whose sequence of node ids
is lexicographically smallest (node ids are declaration order: hosts first, in file order,
then switches/routers, in file order). Latencies are compared as integer femtoseconds
(`quantize`), so sums that are equal up to float rounding tie exactly and the result never
depends on the order links were added. This key is monotone and order-preserving under path
extension, so a plain Dijkstra over it is exact.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["quantize", "Best", "shortest_paths"]

#: (latency in fs, hops, node ids along the path, edge payloads along the path)
Best = tuple[int, int, tuple[int, ...], tuple[Any, ...]]

_FS_PER_S = 10**15


def quantize(latency_s: float) -> int:
    """Latency in seconds -> integer femtoseconds, the unit paths are compared in."""
    return round(latency_s * _FS_PER_S)


def shortest_paths(
    adj: Mapping[int, Sequence[tuple[int, int, Any]]],
    src: int,
    *,
    dst: int | None = None,
    transit: Callable[[int], bool] | None = None,
    weight: Callable[[int, int, int, Any], int] | None = None,
) -> dict[int, Best]:
    """Dijkstra from `src` under the ``(latency, hops, nodes)`` key.

    Parameters
    ----------
    adj:
        ``adj[u]`` lists the directed edges out of node ``u`` as ``(v, latency_fs, payload)``.
    src:
        The source node id.
    dst:
        Stop as soon as this node is settled (its entry is then final); None settles all.
    transit:
        ``transit(v)`` says whether paths may pass *through* ``v``; non-transit nodes are only
        reached as end points (hosts that do not forward traffic). The source always expands.
    weight:
        Optional ``weight(u, v, latency_fs, payload)`` replacing an edge's latency.

    Returns
    -------
    dict
        node id -> `Best` for every settled node (``src`` maps to ``(0, 0, (src,), ())``).
    """
    best: dict[int, Best] = {}
    heap: list[tuple[int, int, tuple[int, ...], tuple[Any, ...]]] = [(0, 0, (src,), ())]
    while heap:
        lat, hops, nodes, payloads = heapq.heappop(heap)
        u = nodes[-1]
        if u in best:
            continue
        best[u] = (lat, hops, nodes, payloads)
        if u == dst:
            break
        if u != src and transit is not None and not transit(u):
            continue
        for v, w, payload in adj.get(u, ()):
            if v in best:
                continue
            if weight is not None:
                w = weight(u, v, w, payload)
            heapq.heappush(heap, (lat + w, hops + 1, nodes + (v,), payloads + (payload,)))
    return best
