"""The application level obeys `ShrinkApp` and `ExpandApp` for DLS apps (malleability §4.1, §4.3).

Exact checks of spec §5.1: AC11 (release semantics: STATIC releases a PE only when its single
chunk is done, an expand does not move its end; SS releases within one iteration and the
messages of one request), AC12 (a resize stamped before the app's run-ahead gives the same
chunk table and facts as a run that never ran ahead, through a rollback). Also: explicit PE
sets at the start, expand after shrink (a released PE comes back as a new rank), host yields
versus releases, walltime limits carried by the commands, protocol errors, and a property over
random shrink/expand schedules: every iteration once, no PE computes after its release tick
nor before it was added, facts identical with and without running ahead.

Costs: ``uniform`` is a profile of 400 iterations of 1e7 FLOP (10 ms on a 1 GF PE of
``tiny8x2``); the job holds the 8 PEs of hosts 0-3, so 8 PEs are free for expands.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosim.als.launch import job_pe_placement
from cosim.als.manager import AlsConfig, AppSimulator
from cosim.als.runtime import Comm, LoopRun
from cosim.als.techniques import get
from cosim.core.indexset import IndexSet
from cosim.core.rng import stream
from cosim.errors import ProtocolError
from cosim.platform import load_platform
from cosim.protocol.messages import (
    AppCompleted,
    AppResized,
    AppStarted,
    ExpandApp,
    HostsYielded,
    KillApp,
    ShrinkApp,
    StartApp,
)
from cosim.testing.scenarios import drain
from cosim.workload import load_app

PLATFORM = load_platform("tiny8x2")  # 8 hosts x 2 cores, 1 GF, 500 ns latency
MS = 1_000_000
ITER = 10 * MS  # one uniform iteration
N = 400
JOB_PES = tuple(range(8))  # hosts 0-3
FREE_PES = tuple(range(8, 16))
MANDEL = (("max_iter", "200"), ("total_flop", "4e9"), ("width", "24"))


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COSIM_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def uniform(uniform_profile):
    return (("file", uniform_profile),)  # N iterations (tests/conftest.py)


def simulator(technique):
    return AppSimulator(platform=PLATFORM, config=AlsConfig(technique=get(technique),
                                                            record=True))


def start(params, *, app="profile", pe_set=(), limit=None, hosts=(0, 1, 2, 3), pes=8):
    return StartApp(time=0, job_id=1, hosts=hosts, pes=pes, app=app, params=params,
                    pe_set=IndexSet.of(pe_set), limit=limit)


def shrink(t, pes, **kw):
    return ShrinkApp(time=t, job_id=1, pes=IndexSet.of(pes), **kw)


def expand(t, pes, **kw):
    return ExpandApp(time=t, job_id=1, pes=IndexSet.of(pes), **kw)




def run(technique, params, commands, *, ahead, app="profile", first=None):
    """Start the app, apply `commands` at their ticks, run to the end. ``ahead``: before each
    command the app runs as far ahead as it can (every command then needs a rollback);
    otherwise it never runs past a command's tick. Returns the simulator and every fact."""
    sim = simulator(technique)
    sim.apply([first or start(params, app=app)])
    facts = sim.advance(0)
    for cmd in commands:
        if ahead:
            while sim.speculate(10_000):
                pass
        facts += sim.advance(cmd.time)
        sim.apply([cmd])
    facts += drain(sim)
    assert sim.running == 0
    return sim, facts


def msg_ticks(pe):
    """Request and assignment times between `pe` and the master on PE 0 (host 0)."""
    _, _, req, asg = job_pe_placement(PLATFORM, PLATFORM.pe_hosts(), [0, pe], Comm())
    return req[1], asg[1]


def released(facts):
    return {pe: f.time for f in facts if isinstance(f, AppResized) for pe in f.released}


def cover(result):
    c = result.chunks
    counts = np.zeros(result.n_tasks, dtype=np.int64)
    for f, s in zip(c.first.tolist(), c.size.tolist()):
        counts[f:f + s] += 1
    return counts


def same_result(a, b):
    for col in ("rank", "first", "size", "t_assign", "t_start", "t_end", "step"):
        assert np.array_equal(getattr(a.chunks, col), getattr(b.chunks, col)), col
    assert a.done == b.done and a.finish == b.finish and a.pes == b.pes


# -- AC11: release semantics ------------------------------------------------------------------

def test_static_releases_a_pe_when_its_single_chunk_is_done(uniform):
    t = 100 * MS
    plain, plain_facts = run("STATIC", uniform, [], ahead=False)
    sim, facts = run("STATIC", uniform, [shrink(t, [1, 2, 3, 5])], ahead=False)
    res = sim.results[1]
    c = res.chunks
    for pe in (1, 2, 3, 5):
        (k,) = np.flatnonzero(c.rank == pe)  # its one chunk: N/P iterations from the start
        req, asg = msg_ticks(pe)
        assert c.size[k] == N // 8 and c.t_assign[k] == req  # served on its first request
        assert res.done[pe] == c.t_end[k] + req + asg  # chunk end + "no more work" answer
    # PE 1 shares the master's host: released at its chunk's end, before the completion; the
    # others are released at the completion tick, which reports nothing more
    done = [f for f in facts if isinstance(f, AppCompleted)][0]
    assert released(facts) == {1: res.done[1]} and res.done[1] < done.time
    assert {res.done[pe] for pe in (2, 3, 5)} == {done.time}
    # the chunks are those of the run without a shrink: STATIC had handed everything out
    same_result(res, plain.results[1])
    assert done == [f for f in plain_facts if isinstance(f, AppCompleted)][0]
    (r,) = [f for f in facts if isinstance(f, AppResized)]
    assert r.pes == 7  # PEs 2, 3 and 5 are still finishing their chunks


def test_static_expand_does_not_change_the_end(uniform):
    plain, plain_facts = run("STATIC", uniform, [], ahead=False)
    sim, facts = run("STATIC", uniform, [expand(100 * MS, [8, 9, 12])], ahead=False)
    res, ref = sim.results[1], plain.results[1]
    assert res.end == ref.end and res.n_chunks == ref.n_chunks  # nothing left to hand out
    assert res.pes == (*JOB_PES, 8, 9, 12) and res.n_pes == 11
    end = [f for f in facts if isinstance(f, AppCompleted)]
    assert end == [f for f in plain_facts if isinstance(f, AppCompleted)]
    assert AppResized(time=100 * MS, job_id=1, added=IndexSet.of([8, 9, 12]), pes=11) in facts


@pytest.mark.parametrize("t", [0, 3 * MS, 100 * MS, 250 * MS + 7])
def test_ss_releases_within_one_iteration_and_two_messages(uniform, t):
    pes = [2, 3, 5, 6]
    sim, facts = run("SS", uniform, [shrink(t, pes)], ahead=False)
    res = sim.results[1]
    c = res.chunks
    rel = released(facts)
    assert sorted(rel) == pes
    for pe in pes:
        req, asg = msg_ticks(pe)
        # a chunk in flight at t (assigned at or before t) is one iteration; then the request
        # and the "no more work" answer
        mine = c.rank == pe
        assert not np.any(mine & (c.t_assign > t))
        if mine.any():
            last = np.flatnonzero(mine)[-1]
            assert c.size[last] == 1 and c.t_assign[last] <= t
            asked = c.t_end[last] + req  # its next request arrives
        else:  # its first request was still on its way at t
            asked = req
        assert rel[pe] == res.done[pe] == max(asked, t + 1) + asg
        assert rel[pe] <= t + asg + ITER + req + asg
    assert (cover(res) == 1).all()


# -- AC12: replay exactness -------------------------------------------------------------------

@pytest.mark.parametrize("technique", ["SS", "GSS", "FAC2", "AF", "STATIC"])
def test_a_shrink_before_the_run_ahead_is_replayed_exactly(uniform, technique):
    t = 120 * MS
    cmd = shrink(t, [3, 4, 7])

    def drive(promise_first):
        sim = simulator(technique)
        sim.apply([start(uniform)])
        facts = sim.advance(0)
        if promise_first:
            p = sim.promise()  # runs ahead to the first fact after the start: past t
            assert p > t and sim._apps[1].run.served_until > t
        facts += sim.advance(t)
        sim.apply([cmd])
        return sim, facts + drain(sim)

    ahead, facts_ahead = drive(True)
    live, facts_live = drive(False)
    assert ahead.rollbacks >= 1 and live.rollbacks == 0
    assert facts_ahead == facts_live
    same_result(ahead.results[1], live.results[1])
    assert (cover(live.results[1]) == 1).all()


def test_an_expand_before_the_run_ahead_is_replayed_exactly(uniform):
    # FAC2's first chunks last 250 ms: PEs 2 and 3 are released after that
    cmds = [shrink(50 * MS, [2, 3]), expand(90 * MS, [10, 11]), expand(300 * MS, [2])]
    a, fa = run("FAC2", uniform, cmds, ahead=True)
    b, fb = run("FAC2", uniform, cmds, ahead=False)
    assert a.rollbacks == 3 and b.rollbacks == 0
    assert fa == fb
    same_result(a.results[1], b.results[1])


# -- expand after shrink, PE sets, yields ---------------------------------------------------

def test_expand_after_shrink_gives_the_released_pes_back_as_new_ranks(uniform):
    sim, facts = run("SS", uniform, [shrink(60 * MS, [2, 3]), expand(200 * MS, [2, 3, 9])],
                     ahead=False)
    res = sim.results[1]
    assert res.pes == (*JOB_PES, 2, 3, 9)  # ranks 8, 9, 10
    rel = [f for f in facts if isinstance(f, AppResized) and f.released]
    assert [tuple(f.released) for f in rel] == [(2, 3)] and rel[0].time > 60 * MS
    assert rel[0].pes == 6 and rel[0].time <= 60 * MS + ITER + 2 * sum(msg_ticks(2))
    assert AppResized(time=200 * MS, job_id=1, added=IndexSet.of([2, 3, 9]), pes=9) in facts
    c = res.chunks
    for r in (2, 3):  # the old ranks stop by their release, the new ones start after 200 ms
        assert c.t_end[c.rank == r].max() <= rel[0].time
    new = np.isin(c.rank, [8, 9, 10])
    assert new.any() and c.t_assign[new].min() > 200 * MS
    assert (cover(res) == 1).all()
    # every fact in canonical order, the start first and the completion last
    assert facts == sorted(facts, key=lambda f: f.key)
    assert isinstance(facts[0], AppStarted) and isinstance(facts[-1], AppCompleted)


def test_an_explicit_pe_set_places_the_workers(uniform):
    pe_set = (1, 3, 4, 9)  # hosts 0, 1, 2, 4: not the spread rule's PEs
    first = start(uniform, pe_set=pe_set, hosts=(0, 1, 2, 4), pes=4)
    sim, facts = run("GSS", uniform, [], ahead=False, first=first)
    res = sim.results[1]
    assert res.pes == pe_set
    # the same loop by hand: rank r on pe_set[r], the master on PE 1
    _, speeds, req, asg = job_pe_placement(PLATFORM, PLATFORM.pe_hosts(), pe_set, Comm())
    assert req[0] == 0 and req[1] > 0
    costs = load_app("profile", overrides=dict(uniform))
    ref = LoopRun(costs=costs, technique=get("GSS"), speeds=speeds, request_ticks=req,
                  assign_ticks=asg, rng=stream(0, "technique", 1)).run()
    same_result(res, dataclasses.replace(ref, pes=pe_set))
    yields = {h for f in facts if isinstance(f, HostsYielded) for h in f.hosts}
    assert yields <= {0, 1, 2, 4}
    with pytest.raises(ProtocolError, match="pe_set"):
        simulator("GSS").apply([start(uniform, pe_set=(1, 3, 4), hosts=(0, 1, 2), pes=4)])
    with pytest.raises(ProtocolError, match="pe_set"):
        simulator("GSS").apply([start(uniform, pe_set=(1, 3, 4, 9), hosts=(0, 1, 2), pes=4)])


def test_a_host_whose_pes_were_all_shrunk_does_not_yield(uniform):
    # host 1 (PEs 2, 3) leaves the job; on host 2 only PE 5 is shrunk, PE 4 runs out of work
    sim, facts = run("SS", uniform, [shrink(100 * MS, [2, 3, 5])], ahead=False)
    yields = {h: f.time for f in facts if isinstance(f, HostsYielded) for h in f.hosts}
    end = facts[-1].time
    assert 1 not in yields
    res = sim.results[1]
    assert yields.get(2, end) == max(res.done[4], res.done[5])
    assert released(facts) == {2: res.done[2], 3: res.done[3], 5: res.done[5]}


def test_an_expand_withdraws_a_completion_found_ahead(uniform):
    # GSS: every PE has been answered "done" while the last answer is still in flight
    plain, facts = run("GSS", uniform, [], ahead=False)
    end = facts[-1].time
    t = end - 300  # after every serve, before the last "done" arrives
    assert plain.results[1].chunks.t_assign.max() < t
    a, fa = run("GSS", uniform, [expand(t, [12])], ahead=True)
    b, fb = run("GSS", uniform, [expand(t, [12])], ahead=False)
    assert fa == fb
    req, asg = msg_ticks(12)
    assert fb[-1] == AppCompleted(time=max(end, t + 1 + req + asg), job_id=1)
    assert a.results[1].done[8] == t + 1 + req + asg  # the new PE is told "done" at once


@pytest.mark.parametrize("offset", [-200, 5])
def test_an_expand_onto_a_host_withdraws_its_yield_only_if_stamped_after_the_expand(
        uniform, offset):
    first = [shrink(10 * MS, [3])]  # host 1 keeps PE 2 alone
    _, plain = run("GSS", uniform, first, ahead=False)
    (y,) = [f.time for f in plain if isinstance(f, HostsYielded) and 1 in f.hosts]
    t = y + offset  # -200: PE 2's "done" is served, not yet arrived; 5: host 1 has yielded
    cmds = [*first, expand(t, [3])]
    a, fa = run("GSS", uniform, cmds, ahead=True)
    b, fb = run("GSS", uniform, cmds, ahead=False)
    assert fa == fb and a.rollbacks == 2
    same_result(a.results[1], b.results[1])
    req, asg = msg_ticks(3)
    back = t + 1 + req + asg  # the new rank on PE 3 is told "done" at once
    assert b.results[1].done[8] == back
    host1 = [f.time for f in fb if isinstance(f, HostsYielded) and 1 in f.hosts]
    # a yield stamped after the expand is withdrawn and comes when PE 3 is done too; one
    # stamped at or before it stands, and the host does not yield twice
    assert host1 == ([max(y, back)] if offset < 0 else [y])


def test_a_limit_travels_with_the_command(uniform):
    limit = 200 * MS
    sim = simulator("SS")
    sim.apply([start(uniform)])
    sim.advance(0)
    sim.apply([shrink(10 * MS, [6, 7], limit=limit)])
    while sim.speculate(10_000):
        pass
    assert sim._apps[1].run.next_tick() >= limit  # never simulated past the new kill tick
    facts = sim.advance(sim.promise())
    while (p := sim.promise()) is not None and p < limit:
        facts += sim.advance(p)
    sim.apply([KillApp(time=limit, job_id=1)])
    facts += drain(sim)
    assert facts[-1] == AppCompleted(time=limit, job_id=1, status="killed")
    # an expand's limit extends the run
    sim = simulator("SS")
    sim.apply([start(uniform, limit=limit)])
    sim.advance(0)
    sim.apply([expand(10 * MS, [8], limit=10**12)])
    assert drain(sim)[-1].status == "completed"


# -- protocol errors --------------------------------------------------------------------------

def test_bad_resizes_are_protocol_errors(uniform):
    def fresh():
        sim = simulator("SS")
        sim.apply([start(uniform)])
        sim.advance(0)
        return sim

    with pytest.raises(ProtocolError, match="job 1: PE 0 runs the master"):
        fresh().apply([shrink(MS, [0, 3])])
    with pytest.raises(ProtocolError, match="job 1: PE 9 is not an active PE"):
        fresh().apply([shrink(MS, [9])])
    with pytest.raises(ProtocolError, match="job 1 removes 0"):
        fresh().apply([shrink(MS, [])])
    with pytest.raises(ProtocolError, match="ShrinkApp for job 5"):
        fresh().apply([ShrinkApp(time=MS, job_id=5, pes=IndexSet.of([1]))])
    with pytest.raises(ProtocolError, match="ExpandApp for job 5"):
        fresh().apply([ExpandApp(time=MS, job_id=5, pes=IndexSet.of([9]))])
    with pytest.raises(ProtocolError, match="job holds PE 3"):
        fresh().apply([expand(MS, [9, 3])])
    with pytest.raises(ProtocolError, match="no PE 16"):
        fresh().apply([expand(MS, [16])])
    sim = fresh()  # a PE still finishing its chunk is held: it cannot be added back yet
    sim.apply([shrink(MS, [3])])
    with pytest.raises(ProtocolError, match="job holds PE 3"):
        sim.apply([expand(MS + 1, [3])])
    sim = fresh()  # nor shrunk twice
    sim.apply([shrink(MS, [3])])
    with pytest.raises(ProtocolError, match="PE 3 is not an active PE"):
        sim.apply([shrink(2 * MS, [3])])
    sim = fresh()  # not every active PE (the master's is active anyway)
    sim.apply([shrink(MS, [1, 2, 3, 4, 5, 6])])
    sim.apply([shrink(MS, [7])])
    with pytest.raises(ProtocolError):
        sim.apply([shrink(MS, [0])])
    sim = fresh()  # a command for a tick after the app's completion
    with pytest.raises(ProtocolError, match="completed at tick"):
        sim.apply([expand(10**12, [9])])


# -- property: random resize schedules --------------------------------------------------------

def _schedule(data, technique, params, app):
    """Draw commands one at a time on a run that never runs ahead, from what its facts tell
    (as the batch level would); return the commands, the simulator and the facts."""
    sim = simulator(technique)
    sim.apply([start(params, app=app)])
    facts = sim.advance(0)
    held, leaving = set(JOB_PES), set()
    cmds = []
    t = 0
    for _ in range(data.draw(st.integers(1, 6), label="commands")):
        t += data.draw(st.integers(0, 120 * MS), label="gap")
        got = sim.advance(t)
        facts += got
        if any(isinstance(f, AppCompleted) for f in got):
            break
        for f in got:
            if isinstance(f, AppResized):
                held -= set(f.released)
                leaving -= set(f.released)
        active = sorted(held - leaving - {0})
        free = sorted(set(range(16)) - held)
        shrinkable = bool(active) and data.draw(st.booleans(), label="shrink?")
        if shrinkable or not free:
            if not active:
                continue
            pes = data.draw(st.lists(st.sampled_from(active), min_size=1, unique=True),
                            label="shrink")
            cmd = shrink(t, pes)
            leaving |= set(pes)
        else:
            pes = data.draw(st.lists(st.sampled_from(free), min_size=1, max_size=4,
                                     unique=True), label="expand")
            cmd = expand(t, pes)
            held |= set(pes)
        sim.apply([cmd])
        cmds.append(cmd)
    facts += drain(sim)
    return cmds, sim, facts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), technique=st.sampled_from(["SS", "GSS", "FAC2", "AF", "STATIC"]),
       mandelbrot=st.booleans())
def test_random_resize_schedules(uniform, data, technique, mandelbrot):
    app, params = ("mandelbrot", MANDEL) if mandelbrot else ("profile", uniform)
    cmds, live, facts = _schedule(data, technique, params, app)
    assert live.rollbacks == 0
    res = live.results[1]
    c = res.chunks
    # every iteration exactly once
    assert (cover(res) == 1).all()
    # the ranks: the job's PEs, then each expand's, in command and PE order
    added_at = [-1] * len(JOB_PES)
    for cmd in cmds:
        if isinstance(cmd, ExpandApp):
            added_at += [cmd.time] * len(cmd.pes)
    assert res.pes == JOB_PES + tuple(pe for m in cmds if isinstance(m, ExpandApp)
                                      for pe in m.pes)
    # no chunk starts on a PE before it was added (its first request goes after the tick)
    for r, t in enumerate(added_at):
        assert not np.any((c.rank == r) & (c.t_assign <= t))
    # no PE computes after its release tick; each shrunk PE is released once, after the
    # shrink, and by the completion (a release at the completion tick is not reported)
    end = facts[-1]
    assert isinstance(end, AppCompleted) and end.status == "completed"
    reported = [(f.time, pe) for f in facts if isinstance(f, AppResized) for pe in f.released]
    assert len({pe for _, pe in reported}) <= len(reported)
    shrunk_ranks = []
    for cmd in cmds:
        if isinstance(cmd, ShrinkApp):
            for pe in cmd.pes:  # the rank the PE had at the command
                r = max(r for r, p in enumerate(res.pes) if p == pe and added_at[r] <= cmd.time)
                shrunk_ranks.append(r)
                rel = res.done[r]
                assert cmd.time < rel <= end.time
                assert c.t_end[c.rank == r].max(initial=0) <= rel
                assert ((rel, pe) in reported) == (rel < end.time)
    assert len(reported) == sum(1 for r in shrunk_ranks if res.done[r] < end.time)
    # the facts are in canonical order and identical when the app runs ahead (rollbacks)
    assert facts == sorted(facts, key=lambda f: f.key)
    ahead, facts_ahead = run(technique, params, cmds, ahead=True, app=app)
    assert facts_ahead == facts
    same_result(ahead.results[1], res)
    assert ahead.rollbacks <= len(cmds)
