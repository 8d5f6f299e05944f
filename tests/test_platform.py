"""Platform model and loaders: units, builtin platforms, routes, SimGrid XML, bad input."""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.core.units import parse_bandwidth, parse_speed, parse_time
from cosim.errors import InputError
from cosim.platform import Host, Platform, Route, available_platforms, load_platform

REPO = Path(__file__).resolve().parents[1]


@cache
def builtin(name: str) -> Platform:
    return load_platform(name)


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text.lstrip("\n"))
    return p


# ---- units ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, value", [
    ("1Gf", 1e9), ("100Mf", 1e8), ("2.4Gf", 2.4e9), ("2.4Gflops", 2.4e9), ("2.4GFlops", 2.4e9),
    ("1kf", 1e3), ("1Kf", 1e3), ("3f", 3.0), ("1e9", 1e9), ("5", 5.0), (7, 7.0), (2.5e9, 2.5e9),
    ("1gigaflops", 1e9), ("1flops", 1.0), (" 1Gf ", 1e9),
])
def test_parse_speed(text, value):
    assert parse_speed(text) == value


@pytest.mark.parametrize("text, value", [
    ("50Gbps", 6.25e9), ("125MBps", 1.25e8), ("1GiBps", 2.0**30), ("1Kibps", 128.0),
    ("10kBps", 1e4), ("10KBps", 1e4), ("8bps", 1.0), ("1e9", 1e9), ("100", 100.0),
    ("2.25GBps", 2.25e9), ("1TBps", 1e12), ("1PBps", 1e15), ("1TiBps", 2.0**40),
])
def test_parse_bandwidth(text, value):
    assert parse_bandwidth(text) == value


@pytest.mark.parametrize("text, value", [
    ("500ns", 5e-7), ("0.5us", 5e-7), ("50us", 5e-5), ("1ms", 1e-3), ("2s", 2.0), ("3", 3.0),
    ("1m", 60.0), ("1h", 3600.0), ("1ps", 1e-12), ("0", 0.0), (0, 0.0), ("5E-5", 5e-5),
])
def test_parse_time(text, value):
    assert parse_time(text) == value


@pytest.mark.parametrize("parse, bad", [
    (parse_speed, "abc"), (parse_speed, "1Gz"), (parse_speed, "1Gbps"), (parse_speed, "-1Gf"),
    (parse_speed, "0Gf"), (parse_speed, "nan"), (parse_speed, True), (parse_speed, None),
    (parse_speed, "1Gif"), (parse_bandwidth, "1gbps"), (parse_bandwidth, "50Gb"),
    (parse_bandwidth, "inf"), (parse_bandwidth, float("inf")), (parse_bandwidth, ""),
    (parse_time, "1us5"), (parse_time, "-1s"), (parse_time, "1 m s"), (parse_time, "1Ms"),
])
def test_parse_bad_units(parse, bad):
    with pytest.raises(InputError) as exc:
        parse(bad, field="network.latency", file="plat.toml")
    assert str(exc.value).startswith("plat.toml: field network.latency: ")


# ---- builtin platforms ---------------------------------------------------------------


def test_ib256():
    p = builtin("ib256")
    assert (p.name, p.source, p.n_hosts, p.n_pes) == ("ib256", "ib256", 256, 256)
    assert p.hosts[17] == Host(index=17, name="node-17", speed=1e9, cores=1, rack=1)
    r = p.route(0, 1)
    assert r == Route(latency_s=5e-7, bandwidth=6.25e9, links=("node-0--node-1",))
    assert p.message_ticks(0, 1, 64) == 510  # 500 ns + 64 B / 6.25e9 B/s = 510.24 ns
    assert p.message_ticks(200, 3, 64) == 510
    assert p.message_ticks(5, 5, 10**9) == 0


def test_route_same_host_symmetry_and_cache():
    p = builtin("fattree128")
    assert p.route(4, 4) == Route(latency_s=0.0, bandwidth=math.inf, links=())
    assert p.message_ticks(4, 4, 64) == 0
    there, back = p.route(3, 70), p.route(70, 3)
    assert there.links == back.links[::-1]
    assert (there.latency_s, there.bandwidth) == (back.latency_s, back.bandwidth)
    assert p.route(3, 70) is there  # cached
    with pytest.raises(IndexError):
        p.route(0, 128)


def test_fat_tree_latency_and_bottleneck():
    p = builtin("fattree128")
    assert p.n_hosts == 128 and p.hosts[16].rack == 1 and p.hosts[127].rack == 7
    intra = p.route(0, 15)
    assert intra.links == ("node-0--leaf-0", "node-15--leaf-0")
    assert intra.latency_s == pytest.approx(2 * 200e-9, rel=1e-15)
    assert intra.bandwidth == 6.25e9
    inter = p.route(0, 16)
    assert inter.links == ("node-0--leaf-0", "leaf-0--spine-0", "leaf-1--spine-0",
                           "node-16--leaf-1")  # ties between spines: lowest node id
    assert inter.latency_s == pytest.approx(2 * 200e-9 + 2 * 300e-9, rel=1e-15)
    assert p.message_ticks(0, 16, 6250) == 1000 + 1000
    nodes = p.graph.nodes
    assert nodes["leaf-3"]["kind"] == "switch" and nodes["node-3"]["kind"] == "host"
    assert p.graph.number_of_edges() == 128 + 8 * 4


def test_fat_tree_spine_bottleneck(tmp_path):
    f = write(tmp_path, "ft.toml", """
[hosts]
count = 6
speed = "1Gf"
[network]
topology = "fat-tree"
hosts_per_leaf = 4
spines = 2
leaf_bandwidth = "100Gbps"
leaf_latency = "1us"
spine_bandwidth = "10Gbps"
spine_latency = "2us"
""")
    p = load_platform(f)
    assert [h.rack for h in p.hosts] == [0, 0, 0, 0, 1, 1]
    assert p.route(0, 3).bandwidth == 12.5e9
    r = p.route(1, 5)
    assert r.bandwidth == 1.25e9 and r.latency_s == pytest.approx(6e-6, rel=1e-15)
    # 6 us + 1250 B / 1.25e9 B/s = 7 us
    assert p.message_ticks(5, 1, 1250) == 7000


def test_multicore_pe_hosts():
    p = builtin("mc64x48")
    assert (p.n_hosts, p.n_pes) == (64, 64 * 48)
    pe = p.pe_hosts()
    assert pe.shape == (3072,) and pe.dtype.kind == "i"
    assert (pe[0], pe[47], pe[48], pe[-1]) == (0, 0, 1, 63)
    assert np.array_equal(np.bincount(pe), np.full(64, 48))
    assert not pe.flags.writeable
    assert p.hosts[0].speed == 2.4e9
    assert p.route(3, 5).latency_s == pytest.approx(2e-6, rel=1e-15)
    assert p.message_ticks(0, 0, 10**6) == 0


def test_with_speed():
    p = builtin("mc64x48")
    q = p.with_speed(3e9)
    assert all(h.speed == 3e9 for h in q.hosts) and p.hosts[0].speed == 2.4e9
    assert [(h.name, h.cores, h.rack) for h in q.hosts] == [
        (h.name, h.cores, h.rack) for h in p.hosts]
    assert (q.name, q.source, q.n_pes) == (p.name, p.source, p.n_pes)
    assert q.route(1, 2) == p.route(1, 2)
    with pytest.raises(InputError, match="field speed"):
        p.with_speed(0.0)
    with pytest.raises(AttributeError):
        p.name = "x"


def test_full_graph_is_lazy_and_complete():
    p = builtin("ib256")
    g = p.graph
    assert g.number_of_nodes() == 256 and g.number_of_edges() == 256 * 255 // 2
    assert g.edges["node-0", "node-9"]["bandwidth"] == 6.25e9
    assert p.graph is g


def test_available_platforms_and_path_forms():
    names = available_platforms()
    assert names == sorted(names) and {"ib256", "mc64x48", "fattree128"} <= set(names)
    p = load_platform(REPO / "platforms" / "ib256.toml")
    assert p.source == str(REPO / "platforms" / "ib256.toml") and p.n_hosts == 256
    x = load_platform(REPO / "platforms" / "example-cluster.xml")
    assert x.n_hosts == 12 and x.n_pes == 8 + 4 * 4
    # node-0 -> big-8: 2us + 1us + 10us + 0.5us + 1us; bottleneck 10 Gbps
    r = x.route(0, 8)
    assert r.links == ("left_link_0", "left_backbone", "inter", "right_backbone",
                       "right_link_8")
    assert r.latency_s == pytest.approx(14.5e-6, rel=1e-15) and r.bandwidth == 1.25e9
    assert [h.rack for h in x.hosts] == [0] * 8 + [1] * 4


def test_explicit_hosts_and_links(tmp_path):
    f = write(tmp_path, "links.toml", """
[platform]
name = "tiny"
description = "two switches"
[[host]]
name = "a"
speed = "1Gf"
cores = 2
[[host]]
name = "b"
speed = "2Gf"
rack = 1
[[host]]
name = "c"
speed = 1e9
[network]
topology = "links"
[[switch]]
name = "s1"
[[switch]]
name = "s2"
[[link]]
a = "a"
b = "s1"
bandwidth = "1GBps"
latency = "1us"
[[link]]
a = "b"
b = "s1"
bandwidth = "1GBps"
latency = "1us"
[[link]]
a = "s1"
b = "s2"
bandwidth = "100MBps"
latency = "5us"
name = "trunk"
[[link]]
a = "c"
b = "s2"
bandwidth = "1GBps"
[[link]]
a = "a"
b = "c"
bandwidth = "1MBps"
latency = "20us"
""")
    p = load_platform(f)
    assert (p.name, p.description, p.n_pes) == ("tiny", "two switches", 4)
    assert p.pe_hosts().tolist() == [0, 0, 1, 2]
    assert p.route(0, 2).links == ("a--s1", "trunk", "c--s2")  # 6 us beats the direct 20 us
    assert p.route(1, 2).bandwidth == 1e8
    # b -> c: 1 + 5 + 0 us, 1000 B / 1e8 B/s = 10 us
    assert p.message_ticks(1, 2, 1000) == 16000


# ---- SimGrid XML ---------------------------------------------------------------------


def test_simgrid_cluster(tmp_path):
    f = write(tmp_path, "cluster.xml", """
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="h" suffix=".x" radical="0-2;7" speed="2Gf" core="8"
           bw="125MBps" lat="50us" bb_bw="2.25GBps" bb_lat="500us"/>
</platform>
""")
    p = load_platform(f)
    assert [h.name for h in p.hosts] == ["h0.x", "h1.x", "h2.x", "h7.x"]
    assert p.n_pes == 32 and p.hosts[3].speed == 2e9
    r = p.route(0, 3)
    assert r.links == ("c_link_0", "c_backbone", "c_link_7")
    # 600 us + 1e6 B / 125e6 B/s = 8.6 ms
    assert p.message_ticks(0, 3, 10**6) == 8_600_000
    assert p.graph.nodes["hc_router.x"]["backbone"] == "c_backbone"


def test_simgrid_cluster_without_backbone_in_zone(tmp_path):
    f = write(tmp_path, "flat.xml", """
<platform version="4">
  <zone id="AS0" routing="Full">
    <cluster id="c" prefix="n-" radical="1-4" speed="1e9" bw="1e9" lat="1E-6"/>
  </zone>
</platform>
""")
    p = load_platform(f)
    assert p.route(1, 2).links == ("c_link_2", "c_link_3")
    assert p.message_ticks(0, 3, 1000) == 3000  # 2 us + 1 us


def test_simgrid_full_zone(tmp_path):
    f = write(tmp_path, "full.xml", """
<platform version="4.1">
  <zone id="z" routing="Full">
    <host id="a" speed="1Gf"/>
    <host id="b" speed="1Gf" core="2"/>
    <host id="c" speed="1Gf,500Mf" pstate="1"/>
    <link id="l1" bandwidth="1GBps" latency="10us"/>
    <link id="l2" bandwidth="500MBps" latency="20us" sharing_policy="SHARED"/>
    <route src="a" dst="b"><link_ctn id="l1"/></route>
    <route src="b" dst="c"><link_ctn id="l2"/></route>
    <route src="a" dst="c"><link_ctn id="l1"/><link_ctn id="l2"/></route>
  </zone>
</platform>
""")
    p = load_platform(f)
    assert [h.cores for h in p.hosts] == [1, 2, 1] and p.hosts[2].speed == 5e8
    assert p.route(2, 0).links == ("l2", "l1")
    assert p.message_ticks(0, 2, 1000) == 32000  # 30 us + 1000 B / 5e8 B/s
    assert p.message_ticks(2, 0, 1000) == 32000
    assert p.message_ticks(0, 1, 0) == 10000


def test_simgrid_floyd_zone_shortest_path(tmp_path):
    f = write(tmp_path, "floyd.xml", """
<platform version="4.1">
  <zone id="z" routing="Floyd">
    <host id="a" speed="1Gf"/>
    <host id="b" speed="1Gf"/>
    <router id="r1"/>
    <router id="r2"/>
    <link id="direct" bandwidth="10GBps" latency="3us"/>
    <link id="a1" bandwidth="10GBps" latency="1us"/>
    <link id="b1" bandwidth="10GBps" latency="1us"/>
    <link id="a2" bandwidth="1GBps" latency="1us"/>
    <link id="b2" bandwidth="1GBps" latency="1us"/>
    <route src="a" dst="b"><link_ctn id="direct"/></route>
    <route src="a" dst="r2"><link_ctn id="a2"/></route>
    <route src="r2" dst="b"><link_ctn id="b2"/></route>
    <route src="a" dst="r1"><link_ctn id="a1"/></route>
    <route src="r1" dst="b"><link_ctn id="b1"/></route>
  </zone>
</platform>
""")
    p = load_platform(f)
    # r1 and r2 tie at 2 us and 2 links: r1 was declared first (smaller node id)
    assert p.route(0, 1).links == ("a1", "b1")
    assert p.route(1, 0).links == ("b1", "a1")
    assert p.message_ticks(0, 1, 10_000) == 3000


def test_simgrid_two_zones_dijkstra_root(tmp_path):
    f = write(tmp_path, "two.xml", """
<platform version="4.1">
  <zone id="world" routing="Dijkstra">
    <zone id="z1" routing="Full">
      <host id="a" speed="1Gf"/>
      <router id="gw1"/>
      <link id="a-gw1" bandwidth="1GBps" latency="1us"/>
      <route src="a" dst="gw1"><link_ctn id="a-gw1"/></route>
    </zone>
    <cluster id="c" prefix="c" radical="0-1" speed="1Gf" bw="1GBps" lat="2us"/>
    <link id="wan" bandwidth="100MBps" latency="1ms"/>
    <zoneRoute src="z1" dst="c" gw_src="gw1" gw_dst="cc_router"><link_ctn id="wan"/></zoneRoute>
  </zone>
</platform>
""")
    p = load_platform(f)
    assert [h.rack for h in p.hosts] == [0, 1, 1]
    assert p.route(0, 2).links == ("a-gw1", "wan", "c_link_1")
    assert p.route(2, 0).links == ("c_link_1", "wan", "a-gw1")
    assert p.message_ticks(0, 1, 0) == 1_003_000


# ---- bad input -----------------------------------------------------------------------

GOOD_TOML = """
[hosts]
count = 4
speed = "1Gf"
[network]
topology = "full"
bandwidth = "50Gbps"
latency = "500ns"
"""


@pytest.mark.parametrize("text, field, problem", [
    (GOOD_TOML + "colour = 3\n", "network.colour", "unknown key"),
    (GOOD_TOML.replace('"1Gf"', '"1Gz"'), "hosts.speed", "unknown speed unit"),
    (GOOD_TOML.replace('"500ns"', '"fast"'), "network.latency", "cannot read"),
    (GOOD_TOML.replace('"full"', '"torus"'), "network.topology", "not supported"),
    (GOOD_TOML.replace("count = 4", "count = 0"), "hosts.count", "at least 1"),
    (GOOD_TOML.replace("count = 4", ""), "hosts.count", "required key is missing"),
    (GOOD_TOML.replace('bandwidth = "50Gbps"', ""), "network.bandwidth", "missing"),
    (GOOD_TOML + "[[switch]]\nname = 'x'\n", "switch", "topology"),
    (GOOD_TOML + "[[host]]\nname = 'x'\nspeed = 1\n", "hosts", "exactly one"),
    (GOOD_TOML.replace("[network]", "[network]\nspines = 2"), "network.spines",
     "unknown key"),
    ("[hosts]\ncount = 2\nspeed = 1\n", "network", "missing"),
    ("[[host]]\nname = 'a'\nspeed = 1\n[[host]]\nname = 'a'\nspeed = 1\n"
     "[network]\ntopology = 'full'\nbandwidth = 1\n", "host[1].name", "duplicate"),
    ("[[host]]\nname = 'a'\nspeed = 1\n[[host]]\nname = 'b'\nspeed = 1\n"
     "[network]\ntopology = 'links'\n[[switch]]\nname = 's'\n"
     "[[link]]\na = 'a'\nb = 's'\nbandwidth = 1\n", "link", "not connected"),
    ("[[host]]\nname = 'a'\nspeed = 1\n[network]\ntopology = 'links'\n"
     "[[link]]\na = 'a'\nb = 'nowhere'\nbandwidth = 1\n", "link[0].b", "unknown host"),
])
def test_bad_toml(tmp_path, text, field, problem):
    f = write(tmp_path, "bad.toml", text)
    with pytest.raises(InputError) as exc:
        load_platform(f)
    msg = str(exc.value)
    assert msg.startswith(f"{f}: field {field}: "), msg
    assert problem in msg


def test_bad_toml_syntax_has_line(tmp_path):
    f = write(tmp_path, "syntax.toml", "[hosts]\ncount = = 3\n")
    with pytest.raises(InputError, match=rf"^{f}:2: invalid TOML"):
        load_platform(f)


def test_unknown_name_lists_available():
    with pytest.raises(InputError) as exc:
        load_platform("no-such-platform")
    msg = str(exc.value)
    assert "unknown platform 'no-such-platform'" in msg
    assert f"available: {', '.join(available_platforms())}" in msg
    assert msg.startswith("field platform: ")


def test_missing_file_and_unknown_type(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_platform(tmp_path / "nope.toml")
    with pytest.raises(InputError, match="no such file"):
        load_platform(tmp_path / "nope.xml")
    with pytest.raises(InputError, match="file type"):
        load_platform(tmp_path / "plat.json")


XML_HEAD = '<platform version="4.1">\n'


@pytest.mark.parametrize("body, line, field, problem", [
    ('  <zone id="z" routing="Vivaldi">\n  </zone>\n', 2, "zone.routing",
     "routing 'Vivaldi' is not supported (supported: Dijkstra, Floyd, Full)"),
    ('  <zone id="z" routing="Full">\n    <host id="a" speed="1Gf"/>\n'
     '    <host id="b" speed="1Gf"/>\n  </zone>\n', 2, "zone.route",
     "no route from 'a' to 'b' in zone 'z' (routing Full)"),
    ('  <zone id="z" routing="Full">\n    <host id="a" speed="fast"/>\n  </zone>\n', 3,
     "host.speed", "cannot read 'fast'"),
    ('  <zone id="z" routing="Full">\n    <host id="a" speed="1Gf" availability_file="f"/>\n'
     '  </zone>\n', 3, "host.availability_file", "not supported"),
    ('  <zone id="z" routing="Full">\n    <bypassRoute src="a" dst="b"/>\n  </zone>\n', 3,
     "bypassRoute", "not supported inside <zone>"),
    ('  <cluster id="c" radical="0-3" speed="1Gf" bw="1GBps" topology="TORUS"/>\n', 2,
     "cluster.topology", "topology 'TORUS' is not supported"),
    ('  <cluster id="c" radical="3-1" speed="1Gf" bw="1GBps"/>\n', 2, "cluster.radical",
     "empty range"),
    ('  <cluster id="c" radical="0-1" speed="1Gf"/>\n', 2, "cluster.bw",
     "required attribute is missing"),
    ('  <zone id="z" routing="Full">\n    <host id="a" speed="1Gf"/>\n'
     '    <host id="b" speed="1Gf"/>\n    <route src="a" dst="b"><link_ctn id="x"/></route>\n'
     '  </zone>\n', 5, "link_ctn.id", "unknown link 'x'"),
    ('  <zone id="z" routing="Full">\n    <host id="a" speed="1Gf"/>\n'
     '    <host id="a" speed="1Gf"/>\n  </zone>\n', 4, "host.id", "already used"),
    ('  <zone id="z" routing="Full">\n    <zone id="y" routing="Full">\n'
     '      <zone id="x" routing="Full"/>\n    </zone>\n  </zone>\n', 4, "zone",
     "nested more than one level"),
])
def test_bad_xml_semantics(tmp_path, body, line, field, problem):
    f = write(tmp_path, "plat.xml", XML_HEAD + body + "</platform>\n")
    with pytest.raises(InputError) as exc:
        load_platform(f)
    msg = str(exc.value)
    assert msg.startswith(f"{f}:{line}: field {field}: "), msg
    assert problem in msg


def test_bad_xml_syntax_and_version(tmp_path):
    f = write(tmp_path, "broken.xml", XML_HEAD + '  <zone id="z" routing="Full">\n</platform>\n')
    with pytest.raises(InputError, match=rf"^{f}:3: malformed XML: mismatched tag"):
        load_platform(f)
    g = write(tmp_path, "v3.xml", '<platform version="3">\n<AS id="a" routing="Full"/>\n'
                                  "</platform>\n")
    with pytest.raises(InputError, match=r"v3.xml:1: field platform.version: .*4\.x"):
        load_platform(g)


def test_unsupported_routing_message_exactly(tmp_path):
    f = write(tmp_path, "plat.xml", '<platform version="4.1"><AS id="w" routing="Vivaldi"/>'
                                    "</platform>")
    with pytest.raises(InputError) as exc:
        load_platform(f)
    assert str(exc.value) == (f"{f}:1: field zone.routing: routing 'Vivaldi' is not "
                              "supported (supported: Dijkstra, Floyd, Full)")


# ---- properties ----------------------------------------------------------------------

HOSTS = st.integers(0, 127)
SIZES = st.integers(0, 10**9)


@settings(max_examples=200, deadline=None)
@given(HOSTS, HOSTS, SIZES, SIZES)
def test_message_ticks_symmetric_and_monotone(src, dst, b1, b2):
    for p in (builtin("fattree128"), builtin("ib256")):
        lo, hi = sorted((b1, b2))
        assert p.message_ticks(src, dst, lo) <= p.message_ticks(src, dst, hi)
        assert p.message_ticks(src, dst, lo) == p.message_ticks(dst, src, lo)
        assert (p.message_ticks(src, dst, lo) == 0) == (src == dst)  # latencies are > 0
