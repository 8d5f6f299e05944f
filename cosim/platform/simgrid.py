"""Reader of SimGrid platform XML files (``<platform version="4.x">``).

Supported: one top-level ``<zone>`` (or ``<AS>``) or ``<cluster>``; zones with routing
``Full``, ``Floyd`` or ``Dijkstra`` (``DijkstraCache`` is read as Dijkstra) holding ``<host>``,
``<link>``, ``<router>``, ``<route>`` with ``<link_ctn>``, and — in the top-level zone only —
child zones (one level) or ``<cluster>``\\ s joined by ``<zoneRoute>``/``<ASroute>`` (or
``<ASRoute>``, as Batsim's platforms write it) with gateways. A host or cluster with Batsim's
``<prop id="role" value="master"/>`` (or ``storage``) routes messages but is not a host of the
machine; ``compute_node`` (the default) is. A ``<cluster>`` (FLAT topology) names its hosts
``prefix + number + suffix`` in radical order (``"0-99"``, ``"1-4,8"``; ``,`` and ``;`` both
separate), its private links
``<id>_link_<number>``, its backbone ``<id>_backbone``, its router
``<prefix><id>_router<suffix>``. Hosts keep document order; a host's rack is the ordinal of its
innermost zone or cluster, counted in order of their first host. Multiple speeds (pstates)
use the ``pstate`` one (default 0). Attributes that do not change this model are accepted and
ignored (sharing policies, other ``<prop>``\\ s, ``<config>``, disks, loopbacks, Vivaldi
coordinates, ``direction`` of ``link_ctn``); routes from a host to itself are ignored (0
inside a host).
Everything else — other routings, topologies, tags, profiles — and every inconsistency is an
`InputError` naming the file, the line and the element's field. As in SimGrid, links and
points must be declared before a route uses them. The tree is built by
`xml.etree.ElementTree.TreeBuilder` fed by pyexpat, which gives every element its line.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from xml.parsers import expat

from cosim.core.units import parse_bandwidth, parse_speed, parse_time
from cosim.errors import InputError
from cosim.platform.model import MAX_CORES, MAX_HOSTS, MAX_PES, Host, Platform
from cosim.platform.simgrid_routing import XmlRouting, Zone, ZoneRoute

__all__ = ["load_simgrid_xml", "ROUTINGS"]

#: routing attribute -> zone kind
ROUTINGS = {"Dijkstra": "graph", "DijkstraCache": "graph", "Floyd": "graph", "Full": "full"}
_ROUTINGS_SHOWN = "Dijkstra, Floyd, Full"

_ATTRS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    # tag: (required, optional used, optional ignored)
    "platform": (("version",), (), ()),
    "zone": (("id", "routing"), (), ()),
    "host": (("id", "speed"), ("core", "pstate"), ("coordinates",)),
    "link": (("id", "bandwidth"), ("latency",), ("sharing_policy",)),
    "router": (("id",), (), ("coordinates",)),
    "route": (("src", "dst"), ("symmetrical",), ()),
    "zoneRoute": (("src", "dst", "gw_src", "gw_dst"), ("symmetrical",), ()),
    "link_ctn": (("id",), (), ("direction",)),
    "cluster": (("id", "radical", "speed", "bw"),
                ("prefix", "suffix", "core", "lat", "bb_bw", "bb_lat", "limiter_link",
                 "topology", "router_id"),
                ("sharing_policy", "bb_sharing_policy", "loopback_bw", "loopback_lat",
                 "topo_parameters")),
}
_ALIASES = {"AS": "zone", "ASroute": "zoneRoute", "ASRoute": "zoneRoute"}  # as Batsim writes
#: Batsim's host roles (``<prop id="role" value=...>`` in a host or cluster): only compute
#: nodes are hosts of the machine; the scheduler's master host and storage hosts are routing
#: points only
_ROLES = {"compute_node": True, "master": False, "storage": False}
_IGNORED_TAGS = {"prop", "config", "disk", "mount"}


def _parse_xml(path: Path) -> tuple[ET.Element, dict[ET.Element, int]]:
    """Parse `path` into an ElementTree, with the line of every element."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", file=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc}", file=path) from None
    builder = ET.TreeBuilder()
    lines: dict[ET.Element, int] = {}
    parser = expat.ParserCreate()

    def start(tag: str, attrs: dict[str, str]) -> None:
        lines[builder.start(tag, attrs)] = parser.CurrentLineNumber

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise InputError(f"malformed XML: {expat.ErrorString(exc.code)}", file=path,
                         line=exc.lineno) from None
    return builder.close(), lines


class _Reader:
    """One pass over the element tree, building zones, hosts and links."""

    def __init__(self, path: Path, lines: dict[ET.Element, int]) -> None:
        self.path = path
        self.lines = lines
        self.hosts: list[tuple[str, float, int, Zone]] = []
        self.points: dict[str, tuple[str, Zone]] = {}  # name -> (kind, zone)
        self.node_ids: dict[str, int] = {}
        self.links: list[tuple[str, float, float]] = []
        self.link_ids: dict[str, int] = {}
        self.n_racks = 0
        self.not_computing: set[str] = set()  # hosts of a master or storage role

    # ---- helpers ---------------------------------------------------------------------
    def fail(self, el: ET.Element, problem: str, attr: str | None = None) -> InputError:
        tag = _ALIASES.get(el.tag, el.tag)
        return InputError(problem, file=self.path, line=self.lines.get(el),
                          field=f"{tag}.{attr}" if attr else tag)

    def attrs(self, el: ET.Element) -> dict[str, str]:
        tag = _ALIASES.get(el.tag, el.tag)
        required, used, ignored = _ATTRS[tag]
        known = set(required) | set(used) | set(ignored)
        for key in el.attrib:
            if key not in known:
                raise self.fail(el, f"attribute {key!r} is not supported (supported: "
                                    f"{', '.join(sorted(known))})", key)
        for key in required:
            if key not in el.attrib:
                raise self.fail(el, "required attribute is missing", key)
        return dict(el.attrib)

    def no_children(self, el: ET.Element, allowed: tuple[str, ...] = ()) -> None:
        for child in el:
            if child.tag not in allowed and child.tag not in _IGNORED_TAGS:
                raise self.fail(child, f"<{child.tag}> is not supported inside <{el.tag}>")

    def count(self, el: ET.Element, attr: str, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise self.fail(el, f"expected an integer, got {text!r}", attr) from None
        if value < 1:
            raise self.fail(el, f"must be at least 1, got {value}", attr)
        if value > MAX_CORES:
            raise self.fail(el, f"must be at most {MAX_CORES:,}, got {value:,}", attr)
        return value

    def point(self, el: ET.Element, name: str, kind: str, zone: Zone | None,
              attr: str = "id") -> None:
        """Declare a point (host, router, zone) of `zone`; None for the top-level zone."""
        if name in self.points:
            raise self.fail(el, f"id {name!r} is already used by a {self.points[name][0]}", attr)
        self.points[name] = (kind, zone)
        self.node_ids[name] = len(self.node_ids)
        if zone is not None:
            zone.points[name] = kind

    def host(self, el: ET.Element, name: str, speed: float, cores: int, zone: Zone,
             attr: str = "id", *, computing: bool = True) -> None:
        self.point(el, name, "host", zone, attr)
        zone.hosts.append(name)
        if not computing:
            self.not_computing.add(name)
            return
        if zone.rack < 0:
            zone.rack = self.n_racks
            self.n_racks += 1
        self.hosts.append((name, speed, cores, zone))

    def computing(self, el: ET.Element) -> bool:
        """False when `el` (a host or a cluster) has Batsim's role of a master or storage host
        (`_ROLES`): its hosts then route messages but compute nothing."""
        for prop in el.iter("prop"):
            if prop.get("id") == "role":
                role = prop.get("value", "")
                if role not in _ROLES:
                    raise self.fail(prop, f"unknown role {role!r} (known: "
                                          f"{', '.join(sorted(_ROLES))})", "value")
                return _ROLES[role]
        return True

    def link(self, el: ET.Element, name: str, bandwidth: float, latency: float,
             attr: str = "id") -> int:
        if name in self.link_ids:
            raise self.fail(el, f"link {name!r} is already declared", attr)
        self.link_ids[name] = len(self.links)
        self.links.append((name, bandwidth, latency))
        return self.link_ids[name]

    def speed(self, el: ET.Element, text: str, pstate: str | None) -> float:
        speeds = [s.strip() for s in text.split(",")]
        index = 0 if pstate is None else None
        if pstate is not None:
            try:
                index = int(pstate)
            except ValueError:
                raise self.fail(el, f"expected an integer, got {pstate!r}", "pstate") from None
        if index is None or not 0 <= index < len(speeds):
            raise self.fail(el, f"pstate {pstate} does not exist ({len(speeds)} speeds)",
                            "pstate")
        return parse_speed(speeds[index], field=f"{el.tag}.speed", file=self.path,
                           line=self.lines.get(el))

    def quantity(self, el: ET.Element, attrs: dict[str, str], key: str, parse,
                 default: float | None = None) -> float | None:
        if key not in attrs:
            return default
        return parse(attrs[key], field=f"{_ALIASES.get(el.tag, el.tag)}.{key}", file=self.path,
                     line=self.lines.get(el))

    # ---- elements --------------------------------------------------------------------
    def platform(self, root: ET.Element) -> Zone:
        if root.tag != "platform":
            raise self.fail(root, f"the root element must be <platform>, not <{root.tag}>")
        version = self.attrs(root)["version"]
        if not version.strip().startswith("4"):
            raise self.fail(root, f"version {version!r} is not supported (supported: 4.x)",
                            "version")
        tops = [el for el in root if el.tag not in _IGNORED_TAGS]
        for el in tops:
            if el.tag not in ("zone", "AS", "cluster"):
                raise self.fail(el, f"<{el.tag}> is not supported inside <platform>")
        if len(tops) != 1:
            raise self.fail(root, f"expected exactly one top-level <zone> or <cluster>, "
                                  f"found {len(tops)}")
        top = tops[0]
        return self.cluster(top, None) if top.tag == "cluster" else self.zone(top, None)

    def zone(self, el: ET.Element, parent: Zone | None) -> Zone:
        a = self.attrs(el)
        if a["routing"] not in ROUTINGS:
            raise self.fail(el, f"routing {a['routing']!r} is not supported "
                                f"(supported: {_ROUTINGS_SHOWN})", "routing")
        z = Zone(id=a["id"], kind=ROUTINGS[a["routing"]], routing=a["routing"],
                 line=self.lines.get(el), parent=parent)
        self.point(el, z.id, "zone", parent)
        if parent is not None:
            parent.children.append(z)
        for child in el:
            tag = _ALIASES.get(child.tag, child.tag)
            if tag == "host":
                c = self.attrs(child)
                self.no_children(child)
                self.host(child, c["id"], self.speed(child, c["speed"], c.get("pstate")),
                          self.count(child, "core", c.get("core", "1")), z,
                          computing=self.computing(child))
            elif tag == "link":
                c = self.attrs(child)
                self.no_children(child)
                self.link(child, c["id"], self.quantity(child, c, "bandwidth", parse_bandwidth),
                          self.quantity(child, c, "latency", parse_time, 0.0))
            elif tag == "router":
                self.no_children(child)
                self.point(child, self.attrs(child)["id"], "router", z)
            elif tag in ("route", "zoneRoute"):
                self.route(child, z)
            elif tag in ("zone", "cluster") and parent is None:
                (self.zone if tag == "zone" else self.cluster)(child, z)
            elif tag in ("zone", "cluster"):
                raise self.fail(child, "zones nested more than one level deep are not supported")
            elif child.tag not in _IGNORED_TAGS:
                raise self.fail(child, f"<{child.tag}> is not supported inside <{el.tag}>")
        return z

    def route(self, el: ET.Element, z: Zone) -> None:
        a = self.attrs(el)
        zone_route = _ALIASES.get(el.tag, el.tag) == "zoneRoute"
        src, dst = a["src"], a["dst"]
        for key in ("src", "dst"):
            kind = z.points.get(a[key])
            if kind is None:
                raise self.fail(el, f"{a[key]!r} is not declared in zone {z.id!r}", key)
            if (kind == "zone") != zone_route:
                what = "a zone: use <zoneRoute>" if kind == "zone" else "not a zone"
                raise self.fail(el, f"{a[key]!r} is {what}", key)
        gw_src = gw_dst = None
        if zone_route:
            gw_src, gw_dst = a["gw_src"], a["gw_dst"]
            for key, end in (("gw_src", src), ("gw_dst", dst)):
                kind, owner = self.points.get(a[key], (None, None))
                if kind not in ("host", "router") or owner is None or owner.id != end:
                    raise self.fail(el, f"gateway {a[key]!r} is not a host or router of "
                                        f"zone {end!r}", key)
        links = []
        for ctn in el:
            if ctn.tag in _IGNORED_TAGS:
                continue
            if ctn.tag != "link_ctn":
                raise self.fail(ctn, f"<{ctn.tag}> is not supported inside <{el.tag}>")
            name = self.attrs(ctn)["id"]
            if name not in self.link_ids:
                raise self.fail(ctn, f"unknown link {name!r} (declare it before the route)",
                                "id")
            links.append(self.link_ids[name])
        symmetrical = a.get("symmetrical", "yes")
        if symmetrical.lower() not in ("yes", "no"):
            raise self.fail(el, f"expected yes or no, got {symmetrical!r}", "symmetrical")
        if src == dst:
            return  # a loopback: messages inside one host take no time in this model
        entries = [((src, dst), ZoneRoute(links=tuple(links), gw_src=gw_src, gw_dst=gw_dst))]
        if symmetrical.lower() == "yes":
            entries.append(((dst, src), ZoneRoute(links=tuple(links[::-1]), gw_src=gw_dst,
                                                  gw_dst=gw_src)))
        for key, r in entries:
            if key in z.routes:
                raise self.fail(el, f"a route from {key[0]!r} to {key[1]!r} is already declared")
            z.routes[key] = r

    def radical(self, el: ET.Element, text: str) -> list[int]:
        numbers: list[int] = []
        for part in text.replace(";", ",").split(","):
            lo, sep, hi = part.strip().partition("-")
            try:
                first, last = int(lo), int(hi if sep else lo)
            except ValueError:
                raise self.fail(el, f"cannot read {text!r} (write e.g. '0-99' or '1-4,8')",
                                "radical") from None
            if last < first:
                raise self.fail(el, f"empty range {part.strip()!r}", "radical")
            if len(numbers) + last - first + 1 > MAX_HOSTS:
                raise self.fail(el, f"more than {MAX_HOSTS:,} hosts", "radical")
            numbers.extend(range(first, last + 1))
        return numbers

    def cluster(self, el: ET.Element, parent: Zone | None) -> Zone:
        a = self.attrs(el)
        self.no_children(el)
        topology = a.get("topology", "FLAT")
        if topology != "FLAT":
            raise self.fail(el, f"topology {topology!r} is not supported (supported: FLAT)",
                            "topology")
        cid, prefix, suffix = a["id"], a.get("prefix", ""), a.get("suffix", "")
        z = Zone(id=cid, kind="cluster", routing="cluster", line=self.lines.get(el),
                 parent=parent)
        self.point(el, cid, "zone", parent)
        if parent is not None:
            parent.children.append(z)
        speed = self.speed(el, a["speed"], None)
        cores = self.count(el, "core", a.get("core", "1"))
        bw = self.quantity(el, a, "bw", parse_bandwidth)
        lat = self.quantity(el, a, "lat", parse_time, 0.0)
        limiter = self.quantity(el, a, "limiter_link", parse_bandwidth)
        computing = self.computing(el)
        for number in self.radical(el, a["radical"]):
            name = f"{prefix}{number}{suffix}"
            self.host(el, name, speed, cores, z, "radical", computing=computing)
            private = self.link(el, f"{cid}_link_{number}", bw, lat, "radical")
            if limiter is None:
                z.private[name] = (private,)
            else:
                z.private[name] = (self.link(el, f"{cid}_link_{number}_limiter", limiter, 0.0,
                                             "radical"), private)
        if "bb_bw" in a or "bb_lat" in a:
            bb_bw = self.quantity(el, a, "bb_bw", parse_bandwidth)
            if bb_bw is None:
                raise self.fail(el, "bb_lat without bb_bw", "bb_bw")
            z.backbone = (self.link(el, f"{cid}_backbone", bb_bw,
                                    self.quantity(el, a, "bb_lat", parse_time, 0.0)),)
        z.router = a.get("router_id", f"{prefix}{cid}_router{suffix}")
        self.point(el, z.router, "router", z, "router_id")
        return z


def load_simgrid_xml(path: Path, *, source: str) -> Platform:
    """Read a SimGrid platform XML file; every problem is an `InputError` with file and line.

    Parameters
    ----------
    path:
        The XML file.
    source:
        Recorded as `Platform.source`.
    """
    root_el, lines = _parse_xml(path)
    reader = _Reader(path, lines)
    root = reader.platform(root_el)
    if not reader.hosts:
        raise InputError("the platform has no host" + (
            " that computes (the others have the role master or storage)"
            if reader.not_computing else ""), file=path, line=lines.get(root_el),
            field="platform")
    pes = sum(cores for _, _, cores, _ in reader.hosts)
    if len(reader.hosts) > MAX_HOSTS or pes > MAX_PES:
        raise InputError(f"{len(reader.hosts):,} hosts and {pes:,} PEs: at most {MAX_HOSTS:,} "
                         f"and {MAX_PES:,}", file=path, field="platform")
    hosts = tuple(Host(index=i, name=name, speed=speed, cores=cores, rack=z.rack)
                  for i, (name, speed, cores, z) in enumerate(reader.hosts))
    routing = XmlRouting(file=path, root=root,
                         host_zone=[(name, z) for name, _, _, z in reader.hosts],
                         links=reader.links, node_ids=reader.node_ids)
    routing.check()
    return Platform(name=path.stem, source=source, hosts=hosts, routing=routing,
                    description=f"SimGrid platform {path.name}")
