"""Equipartition (Kalé et al.): the sharing rules (spec AC9), the pass's decisions, whole runs.

The exact allocations of docs/reference/malleability.md §5.1 AC9 on N = 64 PEs, both
readings of "shared equally", queue admission (first-fit and fcfs), the decisions of one pass
on a real `ClusterState`, and whole simulations with trace apps: AC9's sequence (A and B
share, C waits for its minimum, A's end admits C in the same pass without a transient
allocation of B), work conservation (AC10: with an empty queue the running jobs hold
min(N, sum of maxima)), and property tests over random malleable workloads.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.bls import BatchConfig, BatchScheduler
from cosim.bls.policies import equipartition as equi
from cosim.bls.policies.base import DynamicView, Expand, Shrink
from cosim.bls.state import ClusterState
from cosim.core.indexset import IndexSet
from cosim.errors import InputError
from cosim.runner import simulate
from cosim.testing.invariants import check_allocations
from cosim.workload.jobs import Job

S = 1_000_000_000


def mjob(i, submit, lo, hi=64, runtime=100, pes=None, kind="malleable", walltime=None):
    pes = pes or hi
    return Job(id=i, submit=submit * S, hosts=pes, pes=pes, walltime=(walltime or runtime * 4) * S,
               runtime=runtime * S, kind=kind, min_pes=lo, max_pes=hi)


# -- the sharing rules (AC9) ---------------------------------------------------------------

def test_ac9_additive_and_level_shares():
    two = [(1, 40, 64), (2, 10, 64)]
    assert equi.targets(64, two, "additive") == {1: 47, 2: 17}
    assert equi.targets(64, two, "level") == {1: 40, 2: 24}
    after = [(2, 10, 64), (3, 20, 64)]
    assert equi.targets(64, after, "additive") == {2: 27, 3: 37}
    assert equi.targets(64, after, "level") == {2: 32, 3: 32}
    capped = [(1, 1, 8), (2, 1, 64)]
    assert equi.targets(64, capped, "additive") == {1: 8, 2: 56}
    assert equi.targets(64, capped, "level") == {1: 8, 2: 56}


def test_remainders_go_to_the_lowest_ids():
    assert equi.targets(10, [(5, 1, 10), (3, 1, 10), (9, 1, 10)], "additive") == \
        {3: 4, 5: 3, 9: 3}
    assert equi.targets(10, [(5, 1, 10), (3, 1, 10), (9, 1, 10)], "level") == \
        {3: 4, 5: 3, 9: 3}


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 200), spec=st.lists(st.tuples(st.integers(1, 40), st.integers(0, 80)),
                                           min_size=1, max_size=12),
       share=st.sampled_from(["additive", "level"]))
def test_targets_respect_bounds_and_conserve_work(n, spec, share):
    jobs = [(i, lo, lo + extra) for i, (lo, extra) in enumerate(spec)]
    total_min = sum(lo for _, lo, _ in jobs)
    if total_min > n:
        with pytest.raises(ValueError):
            equi.targets(n, jobs, share)
        return
    t = equi.targets(n, jobs, share)
    assert all(lo <= t[i] <= hi for i, lo, hi in jobs)
    assert sum(t.values()) == min(n, sum(hi for _, _, hi in jobs))  # AC10: work conserved


# -- one pass on a real cluster state ----------------------------------------------------------

def _view(state, queue, now=0):
    return DynamicView(now=now, queue=tuple(queue), cluster=state)


def test_a_pass_admits_by_minimum_and_shrinks_to_targets():
    state = ClusterState([1] * 64)
    a, b, c = mjob(1, 0, 40), mjob(2, 0, 10), mjob(3, 0, 20)
    plan = equi.decide(_view(state, [a, b, c]), equi.Params())
    assert [(s.job.id, len(s.pes)) for s in plan.starts] == [(1, 47), (2, 17)]  # C queued
    assert plan.starts[0].pes == tuple(range(47)) and plan.starts[1].pes == tuple(range(47, 64))
    for s in plan.starts:
        state.allocate_pes(s.job, s.pes, 0)
    # A ends: C admitted, B grows, in one pass: no transient B = 64
    state.release(1, 10 * S)
    plan = equi.decide(_view(state, [c], now=10 * S), equi.Params())
    assert [(s.job.id, len(s.pes)) for s in plan.starts] == [(3, 37)]
    assert [(type(r), r.job_id, len(r.pes)) for r in plan.resizes] == [(Expand, 2, 10)]


def test_a_pass_shrinks_highest_pes_never_the_master_and_waits_for_releases():
    state = ClusterState([4] * 4)
    a = mjob(1, 0, 4, 16)
    state.allocate_pes(a, IndexSet.range(0, 16), 0)
    b = mjob(2, 0, 8, 16)
    plan = equi.decide(_view(state, [b]), equi.Params(share="level"))
    (shrink,) = plan.resizes
    assert isinstance(shrink, Shrink) and shrink.job_id == 1 and shrink.pes == tuple(range(8, 16))
    assert plan.starts == ()  # B waits until A's PEs are released
    state.shrink(1, shrink.pes, 0)
    again = equi.decide(_view(state, [b]), equi.Params(share="level"))
    assert again.resizes == () and again.starts == ()  # nothing is asked twice
    state.release_pes(1, shrink.pes, 5)
    plan = equi.decide(_view(state, [b], now=5), equi.Params(share="level"))
    assert [(s.job.id, s.pes) for s in plan.starts] == [(2, tuple(range(8, 16)))]


def test_fcfs_queue_stops_at_the_first_job_that_does_not_fit():
    state = ClusterState([1] * 64)
    jobs = [mjob(1, 0, 50), mjob(2, 0, 30), mjob(3, 0, 10)]
    ff = equi.decide(_view(state, jobs), equi.Params())
    assert [s.job.id for s in ff.starts] == [1, 3]
    fc = equi.decide(_view(state, jobs), equi.Params(queue="fcfs"))
    assert [s.job.id for s in fc.starts] == [1]


def test_rigid_jobs_get_exactly_their_pes():
    state = ClusterState([1] * 64)
    rigid = Job(id=1, submit=0, hosts=20, pes=20, walltime=10 * S, runtime=5 * S)
    plan = equi.decide(_view(state, [rigid, mjob(2, 0, 4)]), equi.Params())
    assert [(s.job.id, len(s.pes)) for s in plan.starts] == [(1, 20), (2, 44)]


# -- whole runs with trace apps ----------------------------------------------------------------

def _run(jobs, n=64, cores=1, share="additive", kill=False):
    cfg = BatchConfig(malleable="equi", malleable_params={"share": share}, walltime_kill=kill)
    return simulate(jobs, n_hosts=n // cores, cores_per_host=cores, batch=cfg)


def test_ac9_sequence_in_a_simulation():
    # A(min 40) and B(min 10) at t=0 share 47/17; C(min 20) at t=1 waits; A's 100 s of
    # reference work on 64 PEs takes 100 x 64/47 s on 47 (ideal model)
    a = mjob(1, 0, 40, runtime=100)
    b = mjob(2, 0, 10, runtime=1000)
    c = mjob(3, 1, 20, runtime=1000)
    res = _run([a, b, c])
    out = {o.job.id: o for o in res.outcomes}
    assert out[1].start == 0 and out[2].start == 0
    assert out[1].end == -(-100 * S * 64 // 47)  # ideal: 64 PE-units of 100 s at 47 PEs
    assert out[3].start == out[1].end  # admitted in the pass of A's completion
    # B holds 17 PEs, then 27 from A's end (no transient 64), then 64 once C ends too
    assert out[1].shrinks == 0 and out[2].expands == 2 and out[2].shrinks == 0
    t = res.allocations
    rows = t[t["job"] == 2]
    for at, held in ((0, 17), (out[1].end, 27), (out[3].end, 64)):
        live = rows[(rows["start"] <= at) & (rows["end"] > at)]
        assert int((live["hosts"] * live["pes"]).sum()) == held
    check_allocations(res, n_pes=64, cores=1)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 64), st.integers(0, 64),
                          st.integers(1, 300), st.sampled_from(["malleable", "rigid"])),
                min_size=1, max_size=14),
       st.sampled_from(["additive", "level"]), st.sampled_from([1, 4]))
def test_random_workloads_keep_the_invariants(spec, share, cores):
    jobs = []
    for i, (sub, lo, extra, rt, kind) in enumerate(spec, start=1):
        hi = min(64, lo + extra)
        if kind == "rigid":
            jobs.append(Job(id=i, submit=sub * S, hosts=-(-lo // cores), pes=lo,
                            walltime=rt * 10 * S, runtime=rt * S))
        else:
            jobs.append(mjob(i, sub, lo, hi, runtime=rt, pes=hi))
    res = _run(jobs, cores=cores, share=share)
    check_allocations(res, n_pes=64, cores=cores)
    for o in res.outcomes:
        assert o.status == "completed" and o.start >= o.job.submit
        if o.job.kind == "rigid":
            assert o.end - o.start == o.job.runtime and o.resizes == 0


def test_bad_equi_parameters_are_input_errors():
    with pytest.raises(InputError, match="share"):
        BatchConfig(malleable="equi", malleable_params={"share": "half"})
    with pytest.raises(InputError, match="known: none, equi|known: equi"):
        BatchConfig(malleable="sd-policy")
    with pytest.raises(InputError, match="RCA"):
        BatchConfig(malleable="equi", rca=True)


def test_a_resize_of_a_rigid_job_by_a_policy_is_a_protocol_error():
    from cosim.bls.policies.base import Plan
    from cosim.errors import ProtocolError

    sched = BatchScheduler(cores=[1] * 8, config=BatchConfig())
    rigid = Job(id=1, submit=0, hosts=4, pes=4, walltime=10 * S, runtime=5 * S)
    sched.submit([rigid], 0)
    sched.schedule(0)
    with pytest.raises(ProtocolError, match="job 1, which is rigid"):
        sched._apply(Plan(resizes=(Shrink(job_id=1, pes=IndexSet.of([3])),)), 0)


# -- DLS apps under equipartition (AC10 with real release ticks) -------------------------------

@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 8), st.integers(0, 8),
                          st.sampled_from([2e9, 6e9, 2e10])), min_size=2, max_size=7),
       st.sampled_from(["SS", "GSS", "FAC2", "AF", "STATIC"]))
def test_dls_apps_never_compute_on_a_pe_they_do_not_hold(tmp_path_factory, spec, technique):
    import os

    from cosim.als.manager import AlsConfig
    from cosim.als.techniques import get
    from cosim.platform import load_platform

    os.environ.setdefault("COSIM_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    platform = load_platform("tiny8x2")
    jobs = []
    for i, (sub, lo, extra, flop) in enumerate(spec, start=1):
        hi = min(16, lo + extra)
        jobs.append(Job(id=i, submit=sub * S, hosts=-(-hi // 2), pes=hi, walltime=10**6 * S,
                        runtime=S, app="mandelbrot", kind="malleable", min_pes=lo, max_pes=hi,
                        app_params={"width": "32", "max_iter": "300", "total_flop": str(flop)}))
    res = simulate(jobs, n_hosts=8, platform=platform,
                   batch=BatchConfig(malleable="equi", walltime_kill=False),
                   als=AlsConfig(technique=get(technique), record=True))
    check_allocations(res, n_pes=16, cores=2)
    t = res.allocations
    for jid, loop in res.loops.items():
        rows = t[t["job"] == jid]
        held = {}  # PE -> intervals the job held it (from the batch level's log)
        for r in rows:
            for h in range(int(r["host"]), int(r["host"] + r["hosts"])):
                for c in range(int(r["core"]), int(r["core"] + r["pes"])):
                    held.setdefault(h * 2 + c, []).append((int(r["start"]), int(r["end"])))
        c = loop.chunks
        cover = np.zeros(loop.n_tasks, dtype=np.int64)
        for rank, first, size, a, e in zip(c.rank.tolist(), c.first.tolist(), c.size.tolist(),
                                           c.t_start.tolist(), c.t_end.tolist()):
            cover[first:first + size] += 1
            pe = loop.pes[rank]
            assert any(s <= a and e <= end for s, end in held.get(pe, ())), (jid, pe, a, e)
        assert (cover == loop.timesteps).all()  # every iteration computed exactly once
