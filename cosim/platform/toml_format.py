"""Reader of cosim's platform TOML files (schema in ``platforms/README.md``).

A file has ``[platform]`` (name, description), either ``[hosts]`` (count identical hosts named
``prefix + i``) or an explicit ``[[host]]`` list, and ``[network]`` whose ``topology`` is
``full`` (a direct link between every pair of hosts), ``star`` (every host linked to one
switch), ``fat-tree`` (two levels: leaf switches with ``hosts_per_leaf`` hosts each, every leaf
linked to every spine) or ``links`` (explicit ``[[switch]]`` and ``[[link]]`` tables). Reading
is strict: unknown keys, bad units, duplicate names, links to unknown nodes and hosts that
cannot reach each other are `InputError`s naming the file and the field. Speeds, bandwidths
and latencies take SimGrid units (`cosim.core.units`); latencies default to 0 as in SimGrid.
Racks: ``hosts_per_rack`` groups consecutive hosts; a fat-tree defaults to one rack per leaf.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cosim.config import build, check_keys, read_toml
from cosim.core.units import parse_bandwidth, parse_speed, parse_time
from cosim.errors import InputError
from cosim.platform.model import MAX_CORES, MAX_HOSTS, MAX_PES, Host, Platform, Routing
from cosim.platform.networks import FullMesh, Link, SwitchGraph
from cosim.platform.power import PowerModel

__all__ = ["load_toml", "TOPOLOGIES"]

TOPOLOGIES = ("fat-tree", "full", "links", "star")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Meta:
    name: str | None = None
    description: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Hosts:
    count: int
    speed: float
    cores: int = 1
    prefix: str = "node-"
    hosts_per_rack: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _HostEntry:
    name: str
    speed: float
    cores: int = 1
    rack: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class _Full:
    topology: str
    bandwidth: float
    latency: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class _Star:
    topology: str
    bandwidth: float
    latency: float = 0.0
    switch: str = "switch"


@dataclass(frozen=True, slots=True, kw_only=True)
class _FatTree:
    topology: str
    hosts_per_leaf: int
    spines: int
    leaf_bandwidth: float
    spine_bandwidth: float
    leaf_latency: float = 0.0
    spine_latency: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class _Links:
    topology: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _Switch:
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _LinkEntry:
    a: str
    b: str
    bandwidth: float
    latency: float = 0.0
    name: str | None = None


_NETWORK = {"full": _Full, "star": _Star, "fat-tree": _FatTree, "links": _Links}


def _parser(key: str) -> Callable[..., float] | None:
    if key == "speed":
        return parse_speed
    if key.endswith("bandwidth"):
        return parse_bandwidth
    if key.endswith("latency"):
        return parse_time
    return None


def _build(cls: type, table: Any, *, file: Path, section: str) -> Any:
    """`config.build` after turning the quantities of `table` (units) into floats."""
    if not isinstance(table, Mapping):
        raise InputError("expected a table", file=file, field=section)
    values = dict(table)
    fields = cls.__dataclass_fields__
    for key, value in table.items():
        parse = _parser(key)
        if parse is not None and key in fields:
            values[key] = parse(value, field=f"{section}.{key}", file=file)
    return build(cls, values, file=file, section=section)


def _array(doc: Mapping[str, Any], key: str, file: Path) -> list[Any]:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise InputError(f"expected an array of tables ([[{key}]])", file=file, field=key)
    return value


def _at_least(value: int, low: int, *, file: Path, field: str) -> None:
    if value < low:
        raise InputError(f"must be at least {low}, got {value}", file=file, field=field)


def _at_most(value: int, high: int, *, file: Path, field: str, what: str = "") -> None:
    if value > high:
        raise InputError(f"{what + ' ' if what else ''}must be at most {high:,}, got {value:,}",
                         file=file, field=field)


def _name(value: str, *, file: Path, field: str) -> str:
    if not value.strip():
        raise InputError("must not be empty", file=file, field=field)
    return value


def _read_hosts(doc: Mapping[str, Any], file: Path) -> tuple[list[Host], int | None]:
    """Hosts from ``[hosts]`` or ``[[host]]``, and ``hosts_per_rack`` if it was given."""
    if ("hosts" in doc) == ("host" in doc):
        raise InputError("give either [hosts] or a [[host]] list (exactly one)", file=file,
                         field="hosts")
    if "hosts" in doc:
        spec = _build(_Hosts, doc["hosts"], file=file, section="hosts")
        _at_least(spec.count, 1, file=file, field="hosts.count")
        _at_least(spec.cores, 1, file=file, field="hosts.cores")
        _at_most(spec.count, MAX_HOSTS, file=file, field="hosts.count")
        _at_most(spec.cores, MAX_CORES, file=file, field="hosts.cores")
        _at_most(spec.count * spec.cores, MAX_PES, file=file, field="hosts.count",
                 what="PEs (count x cores)")
        per_rack = spec.hosts_per_rack
        if per_rack is not None:
            _at_least(per_rack, 1, file=file, field="hosts.hosts_per_rack")
        hosts = [Host(index=i, name=f"{spec.prefix}{i}", speed=spec.speed, cores=spec.cores,
                      rack=i // per_rack if per_rack else 0) for i in range(spec.count)]
        return hosts, per_rack
    entries = _array(doc, "host", file)
    if not entries:
        raise InputError("the [[host]] list is empty", file=file, field="host")
    hosts = []
    for i, table in enumerate(entries):
        sec = f"host[{i}]"
        e = _build(_HostEntry, table, file=file, section=sec)
        _at_least(e.cores, 1, file=file, field=f"{sec}.cores")
        _at_most(e.cores, MAX_CORES, file=file, field=f"{sec}.cores")
        _at_least(e.rack, 0, file=file, field=f"{sec}.rack")
        hosts.append(Host(index=i, name=_name(e.name, file=file, field=f"{sec}.name"),
                          speed=e.speed, cores=e.cores, rack=e.rack))
    return hosts, None


def _fat_tree(net: _FatTree, names: tuple[str, ...], file: Path) -> tuple[list[str], list[Link]]:
    _at_least(net.hosts_per_leaf, 1, file=file, field="network.hosts_per_leaf")
    _at_least(net.spines, 1, file=file, field="network.spines")
    n_leaves = -(-len(names) // net.hosts_per_leaf)
    leaves = [f"leaf-{i}" for i in range(n_leaves)]
    spines = [f"spine-{i}" for i in range(net.spines)]
    links = [Link(name=f"{h}--{leaves[i // net.hosts_per_leaf]}", a=h,
                  b=leaves[i // net.hosts_per_leaf], bandwidth=net.leaf_bandwidth,
                  latency=net.leaf_latency) for i, h in enumerate(names)]
    links += [Link(name=f"{leaf}--{spine}", a=leaf, b=spine, bandwidth=net.spine_bandwidth,
                   latency=net.spine_latency) for leaf in leaves for spine in spines]
    return leaves + spines, links


def _explicit(doc: Mapping[str, Any], file: Path) -> tuple[list[str], list[Link]]:
    switches = []
    for i, table in enumerate(_array(doc, "switch", file)):
        s = _build(_Switch, table, file=file, section=f"switch[{i}]")
        switches.append(_name(s.name, file=file, field=f"switch[{i}].name"))
    links = []
    for i, table in enumerate(_array(doc, "link", file)):
        sec = f"link[{i}]"
        e = _build(_LinkEntry, table, file=file, section=sec)
        name = f"{e.a}--{e.b}" if e.name is None else _name(e.name, file=file,
                                                             field=f"{sec}.name")
        links.append(Link(name=name, a=e.a, b=e.b, bandwidth=e.bandwidth, latency=e.latency))
    return switches, links


def _check_network(names: tuple[str, ...], switches: list[str], links: list[Link],
                   file: Path, *, generated: bool) -> None:
    """Unique node and link names; links between two distinct known nodes, one per pair.

    `generated` switches and links (star, fat-tree) are reported on ``network``.
    """
    seen: dict[str, str] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise InputError(f"duplicate host name {name!r}", file=file, field=f"host[{i}].name")
        seen[name] = "host"
    for i, name in enumerate(switches):
        if name in seen:
            raise InputError(f"switch name {name!r} is already used by a {seen[name]}",
                             file=file, field="network" if generated else f"switch[{i}].name")
        seen[name] = "switch"
    link_names: set[str] = set()
    pairs: set[frozenset[str]] = set()
    for i, link in enumerate(links):
        for end in ("a", "b"):
            if getattr(link, end) not in seen:
                raise InputError(f"unknown host or switch {getattr(link, end)!r}", file=file,
                                 field=f"link[{i}].{end}")
        if link.a == link.b:
            raise InputError(f"link from {link.a!r} to itself", file=file, field=f"link[{i}]")
        pair = frozenset((link.a, link.b))
        if pair in pairs:
            raise InputError(f"a second link between {link.a!r} and {link.b!r}", file=file,
                             field=f"link[{i}]")
        if link.name in link_names:
            raise InputError(f"duplicate link name {link.name!r}", file=file,
                             field=f"link[{i}].name")
        pairs.add(pair)
        link_names.add(link.name)


def load_toml(path: Path, *, source: str) -> Platform:
    """Read a platform TOML file; every problem is an `InputError` naming file and field.

    Parameters
    ----------
    path:
        The file to read.
    source:
        Recorded as `Platform.source` (the path as the user gave it, or a builtin name).
    """
    doc = read_toml(path)
    check_keys(doc, ("platform", "hosts", "host", "network", "switch", "link", "power"),
               file=path)
    meta = _build(_Meta, doc.get("platform", {}), file=path, section="platform")
    power = None
    if "power" in doc:
        if not isinstance(doc["power"], Mapping):
            raise InputError("expected a table", file=path, field="power")
        try:
            power = build(PowerModel, doc["power"], file=path, section="power")
        except InputError as exc:  # the model's own checks name the key, not the file
            raise InputError(exc.problem, file=path, field=exc.field or "power") from None
    hosts, per_rack = _read_hosts(doc, path)
    names = tuple(h.name for h in hosts)
    net_table = doc.get("network")
    if not isinstance(net_table, Mapping):
        raise InputError("missing [network] table", file=path, field="network")
    topology = net_table.get("topology")
    if topology not in _NETWORK:
        problem = ("required key is missing" if topology is None else
                   f"topology {topology!r} is not supported (supported: {', '.join(TOPOLOGIES)})")
        raise InputError(problem, file=path, field="network.topology")
    net = _build(_NETWORK[topology], net_table, file=path, section="network")
    if topology != "links":
        for key in ("switch", "link"):
            if key in doc:
                raise InputError('allowed only with topology = "links"', file=path, field=key)

    routing: Routing
    switches: list[str] = []
    links: list[Link] = []
    if isinstance(net, _Full):
        _check_network(names, switches, links, path, generated=True)
        routing = FullMesh(names=names, bandwidth=net.bandwidth, latency=net.latency)
    else:
        if isinstance(net, _Star):
            sw = _name(net.switch, file=path, field="network.switch")
            switches = [sw]
            links = [Link(name=f"{h}--{sw}", a=h, b=sw, bandwidth=net.bandwidth,
                          latency=net.latency) for h in names]
        elif isinstance(net, _FatTree):
            switches, links = _fat_tree(net, names, path)
            if per_rack is None and "hosts" in doc:
                hosts = [Host(index=h.index, name=h.name, speed=h.speed, cores=h.cores,
                              rack=h.index // net.hosts_per_leaf) for h in hosts]
        else:
            switches, links = _explicit(doc, path)
        _check_network(names, switches, links, path, generated=topology != "links")
        graph = SwitchGraph(host_names=names, switches=tuple(switches), links=tuple(links))
        pair = graph.unreachable_pair()
        if pair is not None:
            raise InputError(f"hosts {names[pair[0]]!r} and {names[pair[1]]!r} are not "
                             "connected (hosts do not forward traffic)", file=path, field="link")
        routing = graph
    return Platform(name=meta.name or path.stem, source=source, hosts=tuple(hosts),
                    routing=routing, description=meta.description, power=power)
