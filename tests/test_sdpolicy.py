"""SD-Policy: the worked example of the malleability spec §1.7 as goldens (AC5-AC8), and
invariants over random malleable workloads.

Platform 8 hosts x 4 PEs, SharingFactor 0.5, times in hours. At 10 h: A on hosts 0-1 (submit
0, start 2, walltime 10), B on hosts 2-3 (submit 9, start 9, walltime 20), C on hosts 4-7
(submit 0, start 8, walltime 30); no free host. Penalties (Eq. 4, fork form, guest walltime
1 h): A 1.30, B 1.05, C 1.30; DynAVGSD 1.156.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.bls import BatchConfig
from cosim.bls.policies import sdpolicy as sd
from cosim.bls.policies.base import DynamicView, Shrink, Start, queue_index
from cosim.bls.state import ClusterState
from cosim.errors import InputError
from cosim.runner import simulate
from cosim.testing.invariants import check_allocations, check_state_caches
from cosim.workload.jobs import Job

H = 3600 * 1_000_000_000


def mjob(i, hosts, submit, walltime, runtime=None, cores=4):
    pes = hosts * cores
    return Job(id=i, submit=int(submit * H), hosts=hosts, pes=pes, walltime=int(walltime * H),
               runtime=int((runtime if runtime is not None else walltime) * H),
               kind="malleable", min_pes=-(-pes // 2), max_pes=pes)


A = mjob(1, 2, 0, 10)
B = mjob(2, 2, 9, 20)
C = mjob(3, 4, 0, 30)


def example(a=A):
    state = ClusterState([4] * 8)
    state.allocate(a, np.array([0, 1]), 2 * H)
    state.allocate(C, np.array([4, 5, 6, 7]), 8 * H)
    state.allocate(B, np.array([2, 3]), 9 * H)
    return state


def decide(guest, state=None, **params):
    state = state or example()
    view = DynamicView(now=10 * H, queue=(guest,), cluster=state)
    return sd.decide(view, sd.Params(**params))


def held(rows, at):
    """PEs the rows hold at instant `at`."""
    live = rows[(rows["start"] <= at) & (rows["end"] > at)]
    return int((live["hosts"].astype(np.int64) * live["pes"]).sum())


def mates_of(plan):
    return sorted(r.job_id for r in plan.resizes if isinstance(r, Shrink))


# -- AC5: mate selection -------------------------------------------------------------------

def test_penalties_and_dynavgsd():
    state = example()
    p = {j: sd.penalty(state.running[j], H) for j in (1, 2, 3)}
    assert p == pytest.approx({1: 1.30, 2: 1.05, 3: 1.30})
    assert sd.dyn_avg_sd(state.running) == pytest.approx((1.2 + 1.0 + 38 / 30) / 3)
    assert round(sd.dyn_avg_sd(state.running), 3) == 1.156


@pytest.mark.parametrize("weighting", ["nodes", "none"])
def test_a_two_host_guest_shares_b(weighting):
    plan = decide(mjob(9, 2, 10, 1), weighting=weighting)
    assert mates_of(plan) == [2]


def test_weighting_decides_for_a_four_host_guest():
    g = mjob(9, 4, 10, 1)
    assert mates_of(decide(g, weighting="nodes")) == [1, 2]  # 2.6 + 2.1 = 4.7 < C 5.2
    assert mates_of(decide(g, weighting="none")) == [3]  # 2.35 > C 1.30


def test_six_hosts_take_c_and_b_and_eight_need_three_mates():
    assert mates_of(decide(mjob(9, 6, 10, 1))) == [2, 3]  # C+B 7.3 beats C+A 7.8
    plan = decide(mjob(9, 8, 10, 1))
    assert plan.resizes == () and plan.starts == ()


@pytest.mark.parametrize("cutoff, limit, expect", [
    ("fixed", 1.2, [2]), ("fixed", 1.0, []), ("dynamic", 10.0, [2]), ("none", 10.0, [2])])
def test_cut_offs(cutoff, limit, expect):
    assert mates_of(decide(mjob(9, 2, 10, 1), cutoff=cutoff, max_slowdown=limit)) == expect
    # a 4-host guest under DynAVGSD: only B (1.05 <= 1.156) is eligible: no pair of weight 4
    if cutoff == "dynamic":
        assert mates_of(decide(mjob(9, 4, 10, 1), cutoff=cutoff)) == []


# -- AC6: static versus malleable end ------------------------------------------------------

def test_static_versus_malleable_end():
    g = mjob(9, 2, 10, 1)
    assert mates_of(decide(g)) == [2]  # static_end 13 h > mall_end 12 h
    a_short = mjob(1, 2, 0, 8.5)  # A ends at 10.5 h: static_end 11.5 h < 12 h: wait
    assert decide(g, example(a_short)).starts == ()
    assert mates_of(decide(g, example(a_short), compare_static=False)) == [2]  # the fork


# -- AC7: bookkeeping ---------------------------------------------------------------------

def test_bookkeeping_of_the_chosen_sharing():
    plan = decide(mjob(9, 2, 10, 1))
    (start,) = plan.starts
    (shrink,) = plan.resizes
    assert isinstance(start, Start) and start.walltime == 2 * H  # kill tick 12 h
    assert start.pes == (10, 11, 14, 15) and shrink.pes == (10, 11, 14, 15)
    assert shrink.job_id == 2 and shrink.for_job == 9 and shrink.limit == (9 + 21) * H
    assert dict(start.owners) == {2: start.pes}


def _sim(jobs, **params):
    cfg = BatchConfig(malleable="sd", malleable_params={k: str(v) for k, v in params.items()})
    return simulate(jobs, n_hosts=8, cores_per_host=4, batch=cfg)


def test_trace_outcome_of_the_example():
    # A and C submitted when they start (waits 0: penalties A 1.1, B 1.05; C too wide)
    a = mjob(1, 2, 2, 10)
    c = mjob(3, 4, 8, 30)
    b = mjob(2, 2, 9, 20, runtime=15)
    g = mjob(9, 2, 10, 1, runtime=0.8)
    res = _sim([a, b, c, g])
    out = {o.job.id: o for o in res.outcomes}
    assert out[9].start == 10 * H and out[9].end == int(11.6 * H)  # 0.8 h of work at rate 1/2
    assert out[2].end == int(24.8 * H)  # B lost 0.8 h of reference work
    assert (out[2].shrinks, out[2].expands) == (1, 1)
    t = res.allocations
    g_rows = t[t["job"] == 9]
    assert set(g_rows["role"].tolist()) == {2} and set(g_rows["owner"].tolist()) == {2}
    b_rows = t[t["job"] == 2]
    assert held(b_rows, 10 * H) == 4 and held(b_rows, out[9].end) == 8  # back: exactly its 4


# -- AC8: a mate ends first; expand back ---------------------------------------------------

def test_guest_expands_onto_an_early_mates_pes_and_the_other_mate_gets_its_pes_back():
    a = mjob(1, 2, 2, 10, runtime=1)  # ends at 3 h... after the guest started
    b = mjob(2, 2, 2, 20, runtime=15)
    c = Job(id=3, submit=2 * H, hosts=4, pes=16, walltime=30 * H, runtime=30 * H)  # rigid
    g = mjob(9, 4, 2.5, 4, runtime=3)  # 4 hosts: A + B
    res = _sim([a, b, c, g], compare_static="false")
    out = {o.job.id: o for o in res.outcomes}
    assert out[9].start == int(2.5 * H)
    assert out[1].shrinks == 1 and out[1].end < out[9].end
    assert out[9].expands == 1  # onto A's freed PEs of hosts 0-1, up to 4 per host
    t = res.allocations
    g_rows = t[(t["job"] == 9) & (t["host"] <= 1)]
    assert held(g_rows, out[9].start) == 4 and held(g_rows, out[1].end) == 8  # 2 more a host
    assert (out[2].shrinks, out[2].expands) == (1, 1)
    b_rows = t[t["job"] == 2]
    assert held(b_rows, out[9].start) == 4 and held(b_rows, out[9].end) == 8


# -- invariants over random workloads -------------------------------------------------------

@settings(max_examples=int(__import__('os').environ.get('SD_EXAMPLES', '40')), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 8), st.integers(1, 60),
                          st.integers(1, 100), st.booleans()), min_size=2, max_size=16),
       st.sampled_from(["nodes", "none"]), st.booleans(), st.sampled_from([1, 4]))
def test_random_workloads_keep_the_invariants(spec, weighting, compare, cores):
    checked = [0]

    def checking(state):  # every pass: the state's caches equal their definitions
        checked[0] += 1
        out = ends(state)
        check_state_caches(state, out)
        return out

    ends = ClusterState.running_ends
    post_init = DynamicView.__post_init__

    def checking_view(view):  # every pass: the scheduler's queue index is its definition
        post_init(view)
        keys = list(view.queue_keys)
        assert keys == sorted(keys) and len(set(keys)) == len(keys) == len(view.queue)
        kept = {cls: (list(w), list(k)) for cls, (w, k) in view.queue_index.items()}
        assert kept == queue_index(view.queue, view.cluster.n_cores, keys)

    jobs = []
    for i, (sub, hosts, wall, pct, malleable) in enumerate(spec, start=1):
        # the last host partly used now and then: guests may then fit in a mate's idle cores
        pes = hosts * cores - (sub % cores if hosts > 1 else 0)
        run = max(1, wall * pct // 100)
        jobs.append(Job(id=i, submit=sub * H // 10, hosts=hosts, pes=pes, walltime=wall * H // 10,
                        runtime=run * H // 10, kind="malleable" if malleable else "rigid",
                        min_pes=-(-pes // 2) if malleable else 0,
                        max_pes=pes if malleable else 0))
    cfg = BatchConfig(malleable="sd", malleable_params={"weighting": weighting,
                                                        "compare_static": str(compare)})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ClusterState, "running_ends", checking)
        mp.setattr(DynamicView, "__post_init__", checking_view)
        res = simulate(jobs, n_hosts=8, cores_per_host=cores, batch=cfg)
    assert checked[0]
    check_allocations(res, n_pes=8 * cores, cores=cores)
    out = {o.job.id: o for o in res.outcomes}
    for o in out.values():
        assert o.status in ("completed", "killed") and o.start >= o.job.submit
        if o.job.kind == "rigid":
            assert o.resizes == 0
    # a mate given back as often as it was shrunk holds at its end what it held at its start
    t = res.allocations
    for jid, o in out.items():
        if o.shrinks and o.shrinks == o.expands and o.end > o.start:
            rows = t[t["job"] == jid]
            assert held(rows, o.end - 1) == held(rows, o.start), jid


def test_bad_parameters_are_input_errors():
    for bad, match in ((("sharing_factor", "1.5"), "sharing_factor"),
                       (("max_slowdown", "-1"), "max_slowdown"),
                       (("max_mates", "0"), "max_mates"),
                       (("cutoff", "median"), "cutoff")):
        with pytest.raises(InputError, match=match):
            BatchConfig(malleable="sd", malleable_params=dict([bad]))


def test_a_guest_in_a_mates_idle_cores_takes_nothing_from_it():
    # host 0: mate M uses cores 0-3 of 8; host 1: a rigid job. G (2 PEs) fits in M's idle
    # cores: no shrink, no longer walltime for M, and M's end frees only its own PEs
    m = Job(id=1, submit=0, hosts=1, pes=4, walltime=10 * H, runtime=5 * H, kind="malleable",
            min_pes=2, max_pes=4)
    r = Job(id=2, submit=0, hosts=1, pes=8, walltime=10 * H, runtime=8 * H)
    g = Job(id=3, submit=H, hosts=1, pes=2, walltime=6 * H, runtime=6 * H, kind="malleable",
            min_pes=1, max_pes=2)
    x = Job(id=4, submit=2 * H, hosts=1, pes=8, walltime=H, runtime=H)  # waits for a host
    cfg = BatchConfig(malleable="sd", malleable_params={"compare_static": "false"})
    res = simulate([m, r, g, x], n_hosts=2, cores_per_host=8, batch=cfg)
    check_allocations(res, n_pes=16, cores=8)
    out = {o.job.id: o for o in res.outcomes}
    assert out[4].start == 7 * H  # host 0 is not free when M ends: G still runs there
    assert out[3].start == H and out[3].end == 7 * H  # a guest on 2 free cores, at full speed
    assert (out[1].shrinks, out[1].expands, out[1].end) == (0, 0, 5 * H)
    t = res.allocations
    assert set(t[t["job"] == 3]["role"].tolist()) == {2}
