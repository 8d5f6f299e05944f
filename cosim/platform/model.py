"""The platform model: hosts with cores and a per-core speed, and a network of links.

A `Platform` is immutable: its hosts (index = file order), a routing that gives the `Route`
between two hosts, and a networkx graph of hosts and switches built on first use. The message
model (DESIGN §5) is latency-bandwidth without contention: a message of ``b`` bytes from host
``s`` to host ``d`` takes ``route.latency_s + b / route.bandwidth`` seconds, converted once
with `cosim.core.clock.to_ticks` (nearest tick, ties to even); inside one host it takes 0.
Routes are computed by the routing on first use and cached per ordered pair of hosts. PEs are
numbered host-major: host 0's cores first, then host 1's, and so on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from cosim.core.clock import Tick, to_ticks
from cosim.errors import InputError

if TYPE_CHECKING:  # networkx loads only when a platform is drawn
    from cosim.platform.power import PowerModel
    import networkx as nx

__all__ = ["Host", "Route", "Routing", "Platform", "route_of", "MAX_HOSTS", "MAX_CORES",
           "MAX_PES"]

#: The largest machine a platform file may describe, checked while it is read (before a host
#: list or a per-PE array is built): 2^20 hosts (Fugaku has 158,976), 4,096 cores a host,
#: 2^24 PEs in all (the batch level keeps a few int64 per PE: ~0.7 GB there)
MAX_HOSTS = 2**20
MAX_CORES = 4096
MAX_PES = 2**24


@dataclass(frozen=True, slots=True, kw_only=True)
class Host:
    """One compute node.

    Attributes
    ----------
    index:
        0..n-1 in file order.
    name:
        Unique name (also its node in `Platform.graph`).
    speed:
        FLOP/s of one core (PE).
    cores:
        Number of PEs on this host.
    rack:
        Rack index, for the trace's cluster -> rack -> node tree (0 if unknown).
    """

    index: int
    name: str
    speed: float
    cores: int
    rack: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """The network path between two hosts.

    Attributes
    ----------
    latency_s:
        Sum of the link latencies on the route, in seconds (``math.fsum``: exact, order-free).
    bandwidth:
        Bottleneck bandwidth in bytes/s; ``math.inf`` for a route without links.
    links:
        Link names from source to destination.
    """

    latency_s: float
    bandwidth: float
    links: tuple[str, ...]


LOCAL_ROUTE = Route(latency_s=0.0, bandwidth=math.inf, links=())


def route_of(names: tuple[str, ...], bandwidths: list[float], latencies: list[float]) -> Route:
    """The `Route` made of the given links (in order); helper for routings."""
    if not names:
        return LOCAL_ROUTE
    return Route(latency_s=math.fsum(latencies), bandwidth=min(bandwidths), links=names)


class Routing(Protocol):
    """What a platform needs from its network: routes between hosts, and a drawing of it."""

    def route(self, src: int, dst: int) -> Route:
        """The route from host `src` to host `dst` (distinct, valid indices)."""
        ...

    def graph(self, hosts: tuple[Host, ...]) -> nx.Graph:
        """A fresh graph: hosts and switches as nodes, links as edges."""
        ...


class Platform:
    """An immutable compute platform: hosts, and routes between them.

    Parameters
    ----------
    name:
        Platform name (``[platform].name`` or the file stem).
    source:
        The file it came from, as given, or the builtin name.
    hosts:
        The hosts; ``hosts[i].index == i``.
    routing:
        Gives the `Route` between two distinct hosts and draws the graph.
    description:
        Free text from the platform file.
    power:
        The hosts' power table (`cosim.platform.power.PowerModel`, a TOML ``[power]``
        table), None when the file has none.

    Notes
    -----
    `route` caches per ordered pair; `graph` is built on first access and frozen (a "full"
    platform of 5,040 hosts would have 12.7 M edges, so nothing needs it to exist).
    """

    __slots__ = ("name", "source", "description", "hosts", "n_hosts", "n_pes", "power",
                 "_routing", "_routes", "_graph", "_pe_hosts")

    name: str
    source: str
    description: str
    hosts: tuple[Host, ...]
    n_hosts: int
    n_pes: int
    power: PowerModel | None

    def __init__(
        self,
        *,
        name: str,
        source: str,
        hosts: tuple[Host, ...],
        routing: Routing,
        description: str = "",
        power: PowerModel | None = None,
    ) -> None:
        hosts = tuple(hosts)
        if not hosts:
            raise ValueError("a platform needs at least one host")
        for i, h in enumerate(hosts):
            if h.index != i:
                raise ValueError(f"host {h.name!r} has index {h.index}, expected {i}")
        init = object.__setattr__
        init(self, "name", name)
        init(self, "source", source)
        init(self, "description", description)
        init(self, "hosts", hosts)
        init(self, "n_hosts", len(hosts))
        init(self, "n_pes", sum(h.cores for h in hosts))
        init(self, "power", power)
        init(self, "_routing", routing)
        init(self, "_routes", {})
        init(self, "_graph", None)
        init(self, "_pe_hosts", None)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"Platform is immutable (cannot set {key!r})")

    def __repr__(self) -> str:
        return (f"Platform(name={self.name!r}, source={self.source!r}, "
                f"n_hosts={self.n_hosts}, n_pes={self.n_pes})")

    @property
    def graph(self) -> nx.Graph:
        """Hosts and switches as nodes (attr ``kind``), links as edges; frozen, built once."""
        if self._graph is None:
            import networkx as nx

            object.__setattr__(self, "_graph", nx.freeze(self._routing.graph(self.hosts)))
        return self._graph

    def route(self, src: int, dst: int) -> Route:
        """The route between hosts `src` and `dst` (indices); cached.

        ``src == dst`` gives ``Route(latency_s=0.0, bandwidth=inf, links=())``.
        """
        key = (src, dst)
        r = self._routes.get(key)
        if r is None:
            for i in key:
                if not (isinstance(i, (int, np.integer)) and 0 <= i < self.n_hosts):
                    raise IndexError(f"host index {i!r} out of range 0..{self.n_hosts - 1}")
            key = (int(src), int(dst))
            r = LOCAL_ROUTE if src == dst else self._routing.route(*key)
            self._routes[key] = r
        return r

    def message_ticks(self, src: int, dst: int, nbytes: int) -> Tick:
        """Ticks a message of `nbytes` takes from host `src` to host `dst`.

        0 inside one host, else ``to_ticks(latency_s + nbytes / bandwidth)``.
        """
        if src == dst:
            return Tick(0)
        r = self.route(src, dst)
        return to_ticks(r.latency_s + nbytes / r.bandwidth)

    def with_speed(self, speed: float) -> Platform:
        """The same platform with every host's per-core speed replaced by `speed` FLOP/s."""
        if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not (
            math.isfinite(speed) and speed > 0
        ):
            raise InputError(f"speed must be a positive number of FLOP/s, got {speed!r}",
                             field="speed")
        hosts = tuple(Host(index=h.index, name=h.name, speed=float(speed), cores=h.cores,
                           rack=h.rack) for h in self.hosts)
        other = Platform(name=self.name, source=self.source, hosts=hosts,
                         routing=self._routing, description=self.description)
        # routes do not depend on speeds: the copy shares the routing and its cache
        object.__setattr__(other, "_routes", self._routes)
        return other

    def pe_hosts(self) -> np.ndarray:
        """Global PE index -> host index (int64, read-only); PEs are numbered host-major."""
        if self._pe_hosts is None:
            arr = np.repeat(np.arange(self.n_hosts, dtype=np.int64),
                            [h.cores for h in self.hosts])
            arr.flags.writeable = False
            object.__setattr__(self, "_pe_hosts", arr)
        return self._pe_hosts

