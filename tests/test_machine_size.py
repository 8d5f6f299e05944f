"""A trace replay sizes itself: without --hosts and --platform, the SWF header's machine
(``MaxNodes``, else ``MaxProcs``) is the number of hosts of the default platform; a header
machine other than the one simulated is warned about; one too large is a clear error."""

from __future__ import annotations

import gzip

import pytest

from cosim.cli import main
from cosim.experiment import RunOptions, prepare
from cosim.paths import TRACES_DIR
from cosim.workload.swf import machine_hosts, read_swf_header

JOB = "1 0 0 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n"


def _swf(tmp_path, header: str, name: str = "w.swf"):
    path = tmp_path / name
    path.write_text(header + JOB + "; MaxNodes: 9 (a comment after the jobs is not header)\n")
    return str(path)


@pytest.mark.parametrize("trace, hosts", [("KTH-SP2-1996-2.1-cln.swf.gz", 100),
                                          ("NASA-iPSC-1993-3.1-cln.swf.gz", 128),
                                          ("HPC2N-sample-3171jobs_from-alea.swf.gz", 240),
                                          ("lublin_256.swf.gz", 256),
                                          ("esp-mandelbrot.swf", 256)])
def test_the_shipped_traces_run_on_the_machine_their_header_describes(trace, hosts):
    warnings: list[str] = []
    p = prepare(RunOptions(workload=str(TRACES_DIR / trace)), warn=warnings.append)
    assert p.n_hosts == hosts and p.platform.name == "ib256"
    assert not [w for w in warnings if "header describes" in w]


def test_kth_replayed_without_options_reaches_its_logged_utilization(tmp_path, capsys):
    """KTH-SP2 on its 100 nodes: 69.7 % utilization under EASY (on the 256 hosts the replay
    used before, 27 %)."""
    assert main(["run", "--workload", str(TRACES_DIR / "KTH-SP2-1996-2.1-cln.swf.gz"),
                 "--out", str(tmp_path / "kth"), "--json"]) == 0
    import json

    summary = json.loads(capsys.readouterr().out)
    assert summary["hosts"] == 100
    assert summary["utilization"] == pytest.approx(0.6971, abs=5e-5)


def test_maxnodes_comes_first_then_maxprocs_over_the_cores(tmp_path):
    header = read_swf_header(_swf(tmp_path, "; Version: 2.2\n; MaxProcs: 100\n; MaxNodes: 7\n"))
    assert [kv for kv, _ in header] == [("Version", "2.2"), ("MaxProcs", "100"),
                                        ("MaxNodes", "7")]
    assert [line for _, line in header] == [1, 2, 3]
    assert machine_hosts(header, 16) == (7, "MaxNodes 7")
    procs_only = read_swf_header(_swf(tmp_path, "; MaxProcs: 100\n", "p.swf"))
    assert machine_hosts(procs_only, 16) == (7, "MaxProcs 100")  # ceil(100 / 16)
    assert machine_hosts(procs_only, 1) == (100, "MaxProcs 100")
    assert machine_hosts(read_swf_header(_swf(tmp_path, "", "none.swf")), 1) is None
    gz = tmp_path / "w.swf.gz"
    gz.write_bytes(gzip.compress(b"; MaxNodes: 12\n" + JOB.encode()))
    assert machine_hosts(read_swf_header(str(gz)), 1) == (12, "MaxNodes 12")


def test_a_header_machine_other_than_the_one_simulated_is_warned_about(tmp_path):
    swf = _swf(tmp_path, "; MaxNodes: 4\n")
    for extra, n_hosts in (({}, 4), ({"hosts": 6}, 6), ({"platform": "tiny8x2"}, 8),
                           ({"platform": "tiny8x2", "hosts": 4}, 4)):
        warnings: list[str] = []
        p = prepare(RunOptions(workload=swf, **extra), warn=warnings.append)
        assert p.n_hosts == n_hosts
        said = [w for w in warnings if "header describes a machine of 4 hosts" in w]
        assert len(said) == (n_hosts != 4), (extra, warnings)
        if said:
            assert said[0].endswith(f"simulating {n_hosts} hosts of {p.platform.name}")
    # no header: all the platform's hosts, as before, and nothing to say
    warnings = []
    assert prepare(RunOptions(workload=_swf(tmp_path, "", "plain.swf")),
                   warn=warnings.append).n_hosts == 256
    assert warnings == []


def test_a_header_machine_larger_than_the_default_platform_asks_for_one(tmp_path, capsys):
    swf = _swf(tmp_path, "; MaxNodes: 5040\n")
    assert main(["run", "--workload", swf, "--out", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"cosim: error: {swf}: its header describes a machine of 5040 "
                           "hosts (MaxNodes 5040), larger than the default platform 'ib256'")
    assert "--platform" in line and not (tmp_path / "out").exists()
    assert prepare(RunOptions(workload=swf, platform="curie5040")).n_hosts == 5040
    assert prepare(RunOptions(workload=swf, hosts=200)).n_hosts == 200


@pytest.mark.parametrize("value", ["lots", "0", "-3", "", "1,024"])
def test_a_bad_header_machine_is_ignored_with_a_warning_naming_its_line(tmp_path, value):
    """A header is a comment: a bad MaxNodes never makes a trace unreadable; MaxProcs (or
    the whole platform) sizes it instead, and -1 (unknown, as in SWF fields) says nothing."""
    swf = _swf(tmp_path, f"; Version: 2.2\n; MaxNodes: {value}\n; MaxProcs: 6\n")
    said: list[str] = []
    assert prepare(RunOptions(workload=swf), warn=said.append).n_hosts == 6
    assert said == [f"{swf}:2: header MaxNodes {value!r} is not a positive integer: ignored"]
    unknown = _swf(tmp_path, "; MaxNodes: -1\n", "unknown.swf")
    said = []
    assert prepare(RunOptions(workload=unknown), warn=said.append).n_hosts == 256
    assert said == []
    # with the machine given, the header is not needed: no error either way
    assert prepare(RunOptions(workload=swf, platform="tiny8x2", hosts=4)).n_hosts == 4
