"""SimGrid XML as Batsim writes it: ``<ASRoute>`` between clusters, and hosts whose ``role``
property makes them the scheduler's master (routing only, not a host of the machine)."""

from __future__ import annotations

import pytest

from cosim.errors import InputError
from cosim.platform import load_platform

PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<AS id="top" routing="Full">
  <cluster id="workers" prefix="n" suffix="" radical="0-15" speed="2Gf" bw="1GBps" lat="10us"
           bb_bw="10GBps" bb_lat="1us"/>
  <cluster id="head" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="1GBps"
           lat="10us" bb_bw="10GBps" bb_lat="1us">
    <prop id="role" value="{role}"/>
  </cluster>
  <link id="uplink" bandwidth="5GBps" latency="100us"/>
  <ASRoute src="workers" dst="head" gw_src="nworkers_router" gw_dst="master_hosthead_router">
    <link_ctn id="uplink"/>
  </ASRoute>
</AS>
</platform>
"""


def _platform(tmp_path, role="master", text=PLATFORM):
    path = tmp_path / "cluster.xml"
    path.write_text(text.replace("{role}", role))
    return path


def test_the_master_cluster_routes_but_is_no_host_of_the_machine(tmp_path):
    p = load_platform(str(_platform(tmp_path)))
    assert p.n_hosts == 16 and [h.name for h in p.hosts] == [f"n{i}" for i in range(16)]
    assert {h.speed for h in p.hosts} == {2e9} and {h.rack for h in p.hosts} == {0}
    # inside the worker cluster: private link, backbone, private link
    assert p.message_ticks(0, 15, 0) == 10_000 + 1_000 + 10_000
    with_compute = load_platform(str(_platform(tmp_path, role="compute_node")))
    assert with_compute.n_hosts == 17 and with_compute.hosts[-1].name == "master_host0"
    # the worker reaches the former master over the ASRoute: uplink latency on the way
    assert with_compute.message_ticks(0, 16, 0) > 100_000


def test_roles_are_checked_and_a_machine_needs_a_computing_host(tmp_path):
    with pytest.raises(InputError, match=r"cluster.xml:9: field prop.value: unknown role "
                                         r"'boss' \(known: compute_node, master, storage\)"):
        load_platform(str(_platform(tmp_path, role="boss")))
    storage = PLATFORM.replace('bb_bw="10GBps" bb_lat="1us"/>',
                               'bb_bw="10GBps" bb_lat="1us"><prop id="role" value="storage"/>'
                               '</cluster>', 1)
    assert storage != PLATFORM
    with pytest.raises(InputError, match="the platform has no host that computes"):
        load_platform(str(_platform(tmp_path, text=storage)))
