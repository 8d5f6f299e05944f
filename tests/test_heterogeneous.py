"""Hosts with different core counts in `cosim run`: jobs are sized in hosts of the smallest
core count and get whole hosts (`cosim.bls.state`), so the batch level schedules a machine of
hosts [c_0, c_1, ...] exactly as one of hosts of min(c) cores; PE-level (malleable) policies
are refused; the outputs number PEs host by host with each host's own cores (results.h5
``hosts.cores``, trace locations, ``schedule.swf`` allocated processors, PE utilization)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.bls import BatchConfig, policies
from cosim.bls.state import ClusterState
from cosim.cli import main
from cosim.errors import InputError, ProtocolError
from cosim.experiment import RunOptions, prepare
from cosim.output.hdf5 import read_results
from cosim.paths import PLATFORMS_DIR, TRACES_DIR
from cosim.platform import load_platform
from cosim.runner import simulate
from cosim.testing.invariants import check_allocations
from cosim.workload.jobs import Job

S = 1_000_000_000
EXAMPLE = PLATFORMS_DIR / "example-cluster.xml"  # node-0..7 of 1 core, big-8..11 of 4


def _platform(cores: list[int]):
    """A fully connected TOML platform with these per-host core counts."""
    text = "[platform]\nname = \"mixed\"\n\n" + "".join(
        f"[[host]]\nname = \"h{i}\"\ncores = {c}\nspeed = \"1Gf\"\n\n"
        for i, c in enumerate(cores)) + \
        "[network]\ntopology = \"full\"\nbandwidth = \"10Gbps\"\nlatency = \"1us\"\n"
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "mixed.toml"
        path.write_text(text)
        return load_platform(path)


@st.composite
def machines_and_jobs(draw):
    cores = draw(st.lists(st.integers(1, 4), min_size=2, max_size=8))
    low = min(cores)
    n = draw(st.integers(1, 14))
    jobs = []
    for i in range(n):
        hosts = draw(st.integers(1, len(cores)))
        run = draw(st.integers(1, 50))
        jobs.append(Job(id=i + 1, submit=draw(st.integers(0, 40)) * S, hosts=hosts,
                        pes=draw(st.integers(hosts, hosts * low) if draw(st.integers(0, 9))
                                 else st.integers(hosts, hosts * max(cores))),
                        runtime=run * S, walltime=(run + draw(st.integers(0, 20))) * S))
    return cores, jobs


@settings(max_examples=60, deadline=None)
@given(machines_and_jobs(), st.sampled_from(sorted(policies.BACKFILLS.builtins)),
       st.sampled_from(sorted(policies.SELECTIONS.builtins)))
def test_a_mixed_machine_schedules_as_hosts_of_its_smallest_core_count(case, backfill,
                                                                      selection):
    cores, jobs = case
    cfg = BatchConfig(backfill=backfill, selection=selection)
    if any(j.pes > j.hosts * min(cores) for j in jobs):  # would not fit on any hosts
        with pytest.raises(InputError, match="do not fit on"):
            simulate(jobs, n_hosts=len(cores), platform=_platform(cores), batch=cfg)
        return
    mixed = simulate(jobs, n_hosts=len(cores), platform=_platform(cores), batch=cfg)
    plain = simulate(jobs, n_hosts=len(cores), cores_per_host=min(cores), batch=cfg)
    assert [(o.start, o.end, o.hosts, o.status) for o in mixed.outcomes] == \
        [(o.start, o.end, o.hosts, o.status) for o in plain.outcomes]
    # no host holds more PEs than it has, no PE two jobs
    check_allocations(mixed, n_pes=sum(cores), cores=cores)


def test_pe_level_operations_are_refused_on_a_mixed_machine():
    state = ClusterState([1, 4, 4])
    assert (state.uniform, state.n_cores, state.n_pes) == (False, 1, 3)
    job = Job(id=1, submit=0, hosts=2, pes=2, runtime=S, walltime=S)
    state.allocate(job, np.array([1, 2]), 0)  # whole hosts: fine
    from cosim.core.indexset import IndexSet

    with pytest.raises(ProtocolError, match="different core counts"):
        state.expand(1, IndexSet.from_sorted(np.array([0])), 0)
    with pytest.raises(ProtocolError, match="different core counts"):
        state.allocate_pes(Job(id=2, submit=0, hosts=1, pes=1, runtime=S, walltime=S),
                           IndexSet.from_sorted(np.array([0])), 0)


def test_a_malleable_policy_on_a_mixed_machine_is_a_clear_error(tmp_path, capsys):
    swf = tmp_path / "w.swf"
    swf.write_text("1 0 -1 10 4 -1 -1 4 20 -1 1 -1 -1 -1 -1 -1 -1 -1\n")
    code = main(["run", "--workload", str(swf), "--platform", str(EXAMPLE), "--malleable",
                 "sd", "--malleable-fraction", "0.5", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "malleable" in err[0] and "equal core counts" in err[0] and "1 to 4" in err[0]
    assert not (tmp_path / "o" / "results.h5").exists()
    with pytest.raises(InputError, match="equal core counts"):  # before any simulation
        prepare(RunOptions(workload=str(swf), platform=str(EXAMPLE), malleable="equi"))
    with pytest.raises(InputError, match="equal core counts"):
        simulate([], n_hosts=3, platform=_platform([1, 2, 2]),
                 batch=BatchConfig(malleable="equi"))
    # hosts of one kind of a mixed platform are fine
    assert prepare(RunOptions(workload=str(swf), platform=str(EXAMPLE), hosts=8,
                              malleable="equi")).host_cores == (1,) * 8


def test_jobs_are_sized_in_the_smallest_core_count():
    esp = str(TRACES_DIR / "esp-mandelbrot.swf")
    p = prepare(RunOptions(workload=esp, platform=str(EXAMPLE)))
    assert p.cores_per_host == 1 and p.host_cores == (1,) * 8 + (4,) * 4
    assert all(j.pes <= j.hosts for j in p.workload.jobs)
    p = prepare(RunOptions(workload=esp, platform=str(EXAMPLE), hosts=8))  # only the 1-core nodes
    assert p.host_cores == (1,) * 8


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("mixed") / "run"
    assert main(["run", "--platform", str(EXAMPLE), "--rca", "yield", "--trace", "full",
                 "--out", str(out), "--quiet"]) == 0
    return out


def _yield_run(out):
    return next(r for r in read_results(out / "results.h5") if r.run_id == "rca-yield")


def test_the_example_cluster_runs_with_its_own_cores(example_run):
    run = _yield_run(example_run)
    assert run.host_cores.tolist() == [1] * 8 + [4] * 4 and run.n_pes == 24
    with pytest.raises(ValueError, match="1 to 4 cores"):
        _ = run.cores_per_host
    # the app ranks sit on the PEs of their hosts, numbered host by host
    w = run.workers
    assert len(w) and (np.searchsorted(run.pe_offset, w["pe"], side="right") - 1
                       == w["host"]).all()
    assert (w["host"] >= 8).any()  # some jobs ran on the 4-core hosts
    # PE utilization is over the machine's 24 PEs
    span = int(run.jobs["end"].max() - run.jobs["start"][run.jobs["start"] >= 0].min())
    used = float(run.jobs["pe_seconds"].sum()) * S
    assert run.metrics["pe_utilization"] == pytest.approx(used / (24 * span), rel=1e-9)
    summary = json.loads((example_run / "rca-yield" / "summary.json").read_text())
    assert summary["pe_utilization"] == run.metrics["pe_utilization"]


def test_the_schedule_counts_the_cores_of_the_hosts_a_job_held(example_run):
    run = _yield_run(example_run)
    cores = run.host_cores
    lines = [ln.split() for ln in (example_run / "rca-yield" / "schedule.swf").read_text().splitlines()
             if ln.strip() and not ln.startswith(";")]
    alloc = {int(f[0]): int(f[4]) for f in lines}
    a = run.allocations
    checked = 0
    for jid in run.jobs["id"][run.jobs["start"] >= 0].tolist():
        rows = a[a["job"] == jid]
        hosts = {h for r in rows for h in range(int(r["host"]), int(r["host"] + r["hosts"]))}
        assert alloc[jid] == int(cores[sorted(hosts)].sum())
        checked += int(alloc[jid] > len(hosts))
    assert checked  # some job held a 4-core host


def test_the_trace_has_a_row_per_pe_of_each_host(example_run):
    otf2 = pytest.importorskip("otf2")
    with otf2.reader.open(str(example_run / "rca-yield" / "trace" / "traces.otf2")) as trace:
        names = [loc.name for loc in trace.definitions.locations]
    pes = [n for n in names if " PE" in n]
    assert len(pes) == 24
    assert pes[7:13] == ["node-7 PE0", "big-8 PE0", "big-8 PE1", "big-8 PE2", "big-8 PE3",
                         "big-9 PE0"]
