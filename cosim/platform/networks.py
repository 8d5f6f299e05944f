"""The two routings of platform TOML files: an analytic full mesh, and hosts on switches.

`FullMesh` links every pair of hosts directly with the same bandwidth and latency; its routes
are computed without any graph (link ``"<a>--<b>"``, host names in index order), so a
5,040-host batch-only platform costs nothing until someone draws its graph. `SwitchGraph`
covers the star, the fat-tree and explicit link lists: hosts attach to switches (and possibly
directly to other hosts), **hosts never forward traffic**, and a route is the shortest path by
latency under the tie-break of `cosim.platform.paths`. Single-source shortest paths over the
switches are computed once per source switch, so a route costs a few dictionary look-ups after
the first one from the same switch. Links are undirected: the route from b to a is the route
from a to b reversed, with the same latency and bottleneck.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cosim.platform.model import Host, Route, route_of
from cosim.platform.paths import Best, quantize, shortest_paths

if TYPE_CHECKING:  # networkx loads only when a platform is drawn
    import networkx as nx

__all__ = ["Link", "FullMesh", "SwitchGraph"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """An undirected link between two nodes (host or switch names)."""

    name: str
    a: str
    b: str
    bandwidth: float  # bytes/s
    latency: float  # s


def _host_nodes(g: nx.Graph, hosts: tuple[Host, ...]) -> None:
    for h in hosts:
        g.add_node(h.name, kind="host", index=h.index, speed=h.speed, cores=h.cores, rack=h.rack)


class FullMesh:
    """A direct link between every pair of hosts; routes are analytic.

    Parameters
    ----------
    names:
        Host names in index order.
    bandwidth, latency:
        Of every link, in bytes/s and seconds.
    """

    def __init__(self, *, names: tuple[str, ...], bandwidth: float, latency: float) -> None:
        self._names = names
        self._bandwidth = bandwidth
        self._latency = latency

    def route(self, src: int, dst: int) -> Route:
        a, b = (src, dst) if src < dst else (dst, src)
        return Route(latency_s=self._latency, bandwidth=self._bandwidth,
                     links=(f"{self._names[a]}--{self._names[b]}",))

    def graph(self, hosts: tuple[Host, ...]) -> nx.Graph:
        import networkx as nx

        g = nx.Graph()
        _host_nodes(g, hosts)
        names = self._names
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                g.add_edge(names[a], names[b], name=f"{names[a]}--{names[b]}",
                           bandwidth=self._bandwidth, latency=self._latency)
        return g


class SwitchGraph:
    """Hosts attached to a graph of switches, plus optional direct host-host links.

    Parameters
    ----------
    host_names:
        Host names in index order (node ids 0..n-1).
    switches:
        Switch names in declaration order (node ids n, n+1, ...).
    links:
        The links; endpoints must be known names, at most one link per pair of nodes.
    """

    def __init__(self, *, host_names: tuple[str, ...], switches: tuple[str, ...],
                 links: tuple[Link, ...]) -> None:
        n = len(host_names)
        self._n = n
        self._switches = switches
        self._links = links
        ids = {name: i for i, name in enumerate(host_names + switches)}
        self._attach: list[list[tuple[int, int]]] = [[] for _ in range(n)]  # (switch, link)
        self._direct: list[dict[int, int]] = [{} for _ in range(n)]  # other host -> link
        self._adj: dict[int, list[tuple[int, int, int]]] = {}  # switch -> (switch, fs, link)
        self._lat_fs = [quantize(link.latency) for link in links]
        for k, link in enumerate(links):
            a, b = ids[link.a], ids[link.b]
            if a < n and b < n:
                self._direct[a][b] = k
                self._direct[b][a] = k
            elif a < n or b < n:
                h, s = (a, b) if a < n else (b, a)
                self._attach[h].append((s, k))
            else:
                self._adj.setdefault(a, []).append((b, self._lat_fs[k], k))
                self._adj.setdefault(b, []).append((a, self._lat_fs[k], k))
        self._sssp: dict[int, dict[int, Best]] = {}

    def _from_switch(self, s: int) -> dict[int, Best]:
        d = self._sssp.get(s)
        if d is None:
            d = self._sssp[s] = shortest_paths(self._adj, s)
        return d

    def _best(self, a: int, b: int) -> Best | None:
        """Best path a -> b under (latency, hops, node ids); None if unreachable."""
        best: Best | None = None
        k = self._direct[a].get(b)
        if k is not None:
            best = (self._lat_fs[k], 1, (a, b), (k,))
        for s1, k1 in self._attach[a]:
            reach = self._from_switch(s1)
            for s2, k2 in self._attach[b]:
                sp = reach.get(s2)
                if sp is None:
                    continue
                lat, hops, nodes, links = sp
                cand = (self._lat_fs[k1] + lat + self._lat_fs[k2], hops + 2,
                        (a, *nodes, b), (k1, *links, k2))
                if best is None or cand[:3] < best[:3]:
                    best = cand
        return best

    def route(self, src: int, dst: int) -> Route:
        a, b = (src, dst) if src < dst else (dst, src)
        best = self._best(a, b)
        if best is None:  # the loader checks connectivity, so this is a bug
            raise RuntimeError(f"no route between hosts {a} and {b}")
        ks = best[3] if src < dst else best[3][::-1]
        links = self._links
        return route_of(tuple(links[k].name for k in ks), [links[k].bandwidth for k in ks],
                        [links[k].latency for k in ks])

    def unreachable_pair(self) -> tuple[int, int] | None:
        """Two hosts with no path between them (smallest indices first), or None."""
        parent = {s: s for s in range(self._n, self._n + len(self._switches))}

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for s, edges in self._adj.items():
            for t, _, _ in edges:
                parent[find(s)] = find(t)
        comps = [frozenset(find(s) for s, _ in att) for att in self._attach]
        common = frozenset.intersection(*comps) if comps else frozenset()
        if common or self._n < 2:
            return None
        for a in range(self._n):
            for b in range(a + 1, self._n):
                if not (comps[a] & comps[b]) and b not in self._direct[a]:
                    return (a, b)
        return None

    def graph(self, hosts: tuple[Host, ...]) -> nx.Graph:
        import networkx as nx

        g = nx.Graph()
        _host_nodes(g, hosts)
        for s in self._switches:
            g.add_node(s, kind="switch")
        for link in self._links:
            g.add_edge(link.a, link.b, name=link.name, bandwidth=link.bandwidth,
                       latency=link.latency)
        return g

