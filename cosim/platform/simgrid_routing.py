"""Routing of an imported SimGrid platform: zones of Full, graph (Floyd/Dijkstra) or cluster kind.

A platform is a root zone with at most one level of child zones (leaf zones or clusters).
Inside a zone a route between two of its points (hosts, routers, child zones) is: **Full** —
the declared route; **graph** — the shortest path by latency over the declared routes (each
one an edge; hosts and routers may be passed through, child zones may not; tie-break of
`cosim.platform.paths`, node ids in document order; SimGrid's Dijkstra counts links instead,
which only differs when a shorter-latency path has more links); **cluster** — the private link
of the source, the backbone if any, the private link of the destination (limiter links just
outside the private ones; the cluster router has no private link). Between hosts of different
child zones, the root's zone route gives the gateways and the links between them; the full
route is source -> gateway inside the source zone, the zone route, gateway -> destination.
In a graph root the parts inside the end zones count in the latency the path is chosen by.
`check` verifies at load time that every pair of hosts has a route, so `route` never fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cosim.errors import InputError
from cosim.platform.model import Host, Route, route_of
from cosim.platform.paths import quantize, shortest_paths

if TYPE_CHECKING:  # networkx loads only when a platform is drawn
    import networkx as nx

__all__ = ["ZoneRoute", "Zone", "XmlRouting"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ZoneRoute:
    """A route inside one zone: link ids in order, and gateways when the ends are zones."""

    links: tuple[int, ...]
    gw_src: str | None = None
    gw_dst: str | None = None


@dataclass(slots=True, kw_only=True)
class Zone:
    """A zone as read from the file (filled by the reader, then only read)."""

    id: str
    kind: str  # "full" | "graph" | "cluster"
    routing: str  # as written in the file, for messages
    line: int | None
    parent: Zone | None
    hosts: list[str] = field(default_factory=list)
    points: dict[str, str] = field(default_factory=dict)  # name -> "host"|"router"|"zone"
    routes: dict[tuple[str, str], ZoneRoute] = field(default_factory=dict)
    children: list[Zone] = field(default_factory=list)
    private: dict[str, tuple[int, ...]] = field(default_factory=dict)  # cluster host -> links out
    backbone: tuple[int, ...] = ()
    router: str | None = None
    rack: int = -1  # ordinal among zones with hosts, in order of their first host


@dataclass(frozen=True, slots=True, kw_only=True)
class _Link:
    name: str
    bandwidth: float
    latency: float


class XmlRouting:
    """Routes between the hosts of a SimGrid platform (see the module docstring).

    Parameters
    ----------
    file:
        The XML file, for the messages of `check`.
    root:
        The root zone.
    host_zone:
        For each host index, its name and the innermost zone holding it.
    links:
        ``(name, bandwidth B/s, latency s)`` per link id.
    node_ids:
        Point name -> node id (document order), the tie-break of graph zones.
    """

    def __init__(self, *, file: Path, root: Zone, host_zone: list[tuple[str, Zone]],
                 links: list[tuple[str, float, float]], node_ids: dict[str, int]) -> None:
        self._file = file
        self._root = root
        self._host_zone = host_zone
        self._links = [_Link(name=n, bandwidth=b, latency=lat) for n, b, lat in links]
        self._ids = node_ids
        self._names = {i: name for name, i in node_ids.items()}
        self._adj: dict[str, dict[int, list[tuple[int, int, tuple[str, str]]]]] = {}
        self._cache: dict[tuple, ZoneRoute | None] = {}

    # ---- inside one zone -------------------------------------------------------------
    def _lat_fs(self, links: tuple[int, ...]) -> int:
        return quantize(math.fsum(self._links[k].latency for k in links))

    def _graph_adj(self, z: Zone) -> dict[int, list[tuple[int, int, tuple[str, str]]]]:
        adj = self._adj.get(z.id)
        if adj is None:
            adj = {}
            for (a, b), r in z.routes.items():
                adj.setdefault(self._ids[a], []).append(
                    (self._ids[b], self._lat_fs(r.links), (a, b)))
            self._adj[z.id] = adj
        return adj

    def _segment_fs(self, zone_id: str, a: str | None, b: str | None) -> int:
        z = next(c for c in self._root.children if c.id == zone_id)
        if a is None or b is None or a == b:
            return 0
        r = self.local(z, a, b)
        return 0 if r is None else self._lat_fs(r.links)

    def local(self, z: Zone, a: str, b: str, src_host: str | None = None,
              dst_host: str | None = None) -> ZoneRoute | None:
        """The route from point `a` to point `b` of zone `z`, or None.

        `src_host`/`dst_host` are the hosts behind `a`/`b` when those are child zones of a
        graph zone (they weigh the parts inside the end zones).
        """
        if z.kind == "full":
            return z.routes.get((a, b))
        if z.kind == "cluster":
            out: tuple[int, ...] = () if a == z.router else z.private[a]
            back: tuple[int, ...] = () if b == z.router else z.private[b][::-1]
            return ZoneRoute(links=out + z.backbone + back)
        key = (z.id, a, b, src_host, dst_host)
        if key in self._cache:
            return self._cache[key]
        src, dst = self._ids[a], self._ids[b]
        zone_src = z.points[a] == "zone"
        zone_dst = z.points[b] == "zone"

        def weight(u: int, v: int, w: int, ab: tuple[str, str]) -> int:
            r = z.routes[ab]
            if u == src and zone_src:
                w += self._segment_fs(a, src_host, r.gw_src)
            if v == dst and zone_dst:
                w += self._segment_fs(b, r.gw_dst, dst_host)
            return w

        best = shortest_paths(
            self._graph_adj(z), src, dst=dst,
            transit=lambda v: z.points[self._names[v]] != "zone",
            weight=weight if (zone_src or zone_dst) else None,
        ).get(dst)
        result = None
        if best is not None:
            hops = [z.routes[ab] for ab in best[3]]
            result = ZoneRoute(links=tuple(k for r in hops for k in r.links),
                               gw_src=hops[0].gw_src, gw_dst=hops[-1].gw_dst)
        self._cache[key] = result
        return result

    # ---- between hosts ---------------------------------------------------------------
    def _links_between(self, src: int, dst: int) -> tuple[int, ...] | None:
        h1, z1 = self._host_zone[src]
        h2, z2 = self._host_zone[dst]
        if z1 is z2:
            r = self.local(z1, h1, h2)
            return None if r is None else r.links
        root = self._root
        p = h1 if z1 is root else z1.id
        q = h2 if z2 is root else z2.id
        mid = self.local(root, p, q, src_host=h1, dst_host=h2)
        if mid is None:
            return None
        parts: list[tuple[int, ...]] = []
        for zone, a, b in ((z1, h1, mid.gw_src), (z2, mid.gw_dst, h2)):
            if zone is root or a == b:
                parts.append(())
                continue
            seg = self.local(zone, a, b)
            if seg is None:
                return None
            parts.append(seg.links)
        return parts[0] + mid.links + parts[1]

    def route(self, src: int, dst: int) -> Route:
        ks = self._links_between(src, dst)
        if ks is None:  # `check` ran at load time, so this is a bug
            raise RuntimeError(f"no route between hosts {src} and {dst}")
        links = self._links
        return route_of(tuple(links[k].name for k in ks), [links[k].bandwidth for k in ks],
                        [links[k].latency for k in ks])

    # ---- load-time checks ------------------------------------------------------------
    def _fail(self, z: Zone, a: str, b: str, what: str = "") -> InputError:
        kind = "zoneRoute" if z.points.get(a) == "zone" else "route"
        return InputError(f"no {'<zoneRoute>' if kind == 'zoneRoute' else 'route'} from {a!r} "
                          f"to {b!r}{what} in zone {z.id!r} (routing {z.routing})",
                          file=self._file, line=z.line, field=f"zone.{kind}")

    def check(self) -> None:
        """Raise `InputError` unless every ordered pair of hosts has a route."""
        root = self._root
        gateways: dict[str, tuple[set[str], set[str]]] = {c.id: (set(), set())
                                                          for c in root.children}
        for (a, b), r in root.routes.items():
            if r.gw_src is not None:
                gateways[a][0].add(r.gw_src)
                gateways[b][1].add(r.gw_dst)
        for z in [root, *root.children]:
            if z.kind == "cluster":
                continue
            outs, ins = gateways.get(z.id, (set(), set()))
            for h1 in z.hosts:
                for h2 in z.hosts:
                    if h1 != h2 and self.local(z, h1, h2) is None:
                        raise self._fail(z, h1, h2)
                for gw in sorted(outs):
                    if gw != h1 and self.local(z, h1, gw) is None:
                        raise self._fail(z, h1, gw, " (gateway)")
                for gw in sorted(ins):
                    if gw != h1 and self.local(z, gw, h1) is None:
                        raise self._fail(z, gw, h1, " (gateway)")
        ends = [*root.hosts, *(c.id for c in root.children if c.hosts)]
        for p in ends:
            for q in ends:
                if p == q:
                    continue
                # any host behind a zone end will do: the path's existence does not depend on it
                hp = p if root.points[p] != "zone" else None
                hq = q if root.points[q] != "zone" else None
                if self.local(root, p, q, src_host=hp, dst_host=hq) is None:
                    raise self._fail(root, p, q)

    # ---- drawing -----------------------------------------------------------------------
    def _edge(self, g: nx.Graph, a: str, b: str, ks: tuple[int, ...]) -> None:
        if a == b or g.has_edge(a, b):
            return
        links = [self._links[k] for k in ks]
        g.add_edge(a, b, name="+".join(x.name for x in links),
                   bandwidth=min((x.bandwidth for x in links), default=math.inf),
                   latency=math.fsum(x.latency for x in links))

    def graph(self, hosts: tuple[Host, ...]) -> nx.Graph:
        """Hosts and routers as nodes; an edge per declared route (its links' bottleneck and
        latency sum, name = link names joined by '+'), per cluster private link (host to
        cluster router; the router node carries the backbone's attributes) and per zone
        route (gateway to gateway)."""
        import networkx as nx

        g = nx.Graph()
        for h in hosts:
            g.add_node(h.name, kind="host", index=h.index, speed=h.speed, cores=h.cores,
                       rack=h.rack)
        for z in [self._root, *self._root.children]:
            for name, kind in z.points.items():
                if kind == "router":
                    g.add_node(name, kind="switch")
            if z.kind == "cluster":
                if z.backbone:
                    bb = self._links[z.backbone[0]]
                    g.nodes[z.router].update(backbone=bb.name, backbone_bandwidth=bb.bandwidth,
                                             backbone_latency=bb.latency)
                for h in z.hosts:
                    self._edge(g, h, z.router, z.private[h])
            for (a, b), r in z.routes.items():
                if r.gw_src is None:
                    self._edge(g, a, b, r.links)
                else:
                    self._edge(g, r.gw_src, r.gw_dst, r.links)
        return g
