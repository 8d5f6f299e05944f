"""The master-worker runtime: closed forms, invariants over every technique, malleability."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.als.availability import Availability
from cosim.als.runtime import Comm, LoopRun
from cosim.als.techniques import get, names
from cosim.errors import InputError
from cosim.workload.costs import TaskCosts

MODEL_PARAMS = {"FSC": {}, "FAC": {}, "TAP": {}}  # the runtime derives h, mu, sigma


def costs_of(values) -> TaskCosts:
    return TaskCosts.from_array(np.asarray(values, dtype=float), model="profile", label="test",
                                params={})


def run_loop(costs, technique, p, *, speeds=None, lat=510, params=None, **kw):
    speeds = speeds or [1e9] * p
    req = [0] + [lat] * (p - 1)
    return LoopRun(costs=costs, technique=get(technique), params=params, speeds=speeds,
                   request_ticks=req, assign_ticks=req, **kw)


def check_invariants(result, costs, speeds_by_rank, *, req, asg, overhead=0):
    c = result.chunks
    # every task executed exactly once, handed out in order
    assert c.size.sum() == costs.n * result.timesteps
    for step in range(result.timesteps):
        m = c.step == step
        first, size = c.first[m], c.size[m]
        assert first[0] == 0 and np.all(first[1:] == first[:-1] + size[:-1])
        assert first[-1] + size[-1] == costs.n
    assert np.all(c.size >= 1)
    # times are ordered per chunk and the master serves one request at a time
    assert np.all(c.t_assign <= c.t_start) and np.all(c.t_start <= c.t_end)
    assert np.all(np.diff(c.t_assign) >= overhead)
    # per PE: chunks do not overlap and each starts after the request for it got back
    for r in np.unique(c.rank):
        m = c.rank == r
        starts, ends = c.t_start[m], c.t_end[m]
        assert np.all(starts[1:] >= ends[:-1] + req[r] + asg[r])
    # durations: round(FLOP x (1e9 / speed)), to nearest tick, ties to even (the runtime's rule)
    flop = costs.prefix[c.first + c.size] - costs.prefix[c.first]
    expect = np.rint(flop * (1e9 / np.asarray(speeds_by_rank)[c.rank])).astype(np.int64)
    assert np.array_equal(c.t_end - c.t_start, expect)
    assert result.end == c.t_end.max()
    # no schedule beats perfect balance (each chunk's time is rounded to the nearest tick)
    ideal = costs.total * result.timesteps / sum(speeds_by_rank) * 1e9
    assert result.makespan >= ideal - 0.5 * result.n_chunks - 1


def test_static_uniform_closed_form():
    # N/P x cost/speed + the request and assignment latencies of a remote worker
    n, p, cost, speed, lat = 6400, 64, 1000.0, 1e9, 510
    res = run_loop(costs_of([cost] * n), "STATIC", p, lat=lat).run()
    assert res.makespan == round(n / p * cost / speed * 1e9) + 2 * lat
    assert res.n_chunks == p
    finish = np.asarray(res.finish)
    assert finish[0] == round(n / p * cost / speed * 1e9)  # the master's own PE: no messages
    assert np.all(finish[1:] == res.makespan)


def test_ss_uniform_closed_form_with_overhead():
    # one PE, SS: every chunk costs request + overhead + assignment + compute
    n = 50
    res = LoopRun(costs=costs_of([2000.0] * n), technique=get("SS"), speeds=[1e9],
                  request_ticks=[7], assign_ticks=[5],
                  comm=Comm(overhead_s=1e-6)).run()
    assert res.makespan == n * (7 + 1000 + 5 + 2000)


def draw_loop(data, *, max_n, max_p):
    """A random loop: ``(costs, speeds, message ticks, master overhead s, time steps)``."""
    n = data.draw(st.integers(1, max_n), label="n")
    p = data.draw(st.integers(1, max_p), label="p")
    values = data.draw(st.lists(st.floats(0.0, 1e5), min_size=n, max_size=n), label="costs")
    speeds = data.draw(st.lists(st.sampled_from([5e8, 1e9, 2e9]), min_size=p, max_size=p))
    lat = data.draw(st.integers(0, 3000), label="lat")
    ovh = data.draw(st.sampled_from([0.0, 1e-6]), label="overhead")
    steps = data.draw(st.integers(1, 2), label="timesteps")
    return costs_of(values), speeds, [0] + [lat] * (p - 1), ovh, steps


@pytest.mark.parametrize("technique", names())
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_runtime_invariants_every_technique(technique, data):
    costs, speeds, req, ovh, steps = draw_loop(data, max_n=400, max_p=12)
    run = LoopRun(costs=costs, technique=get(technique), speeds=speeds, request_ticks=req,
                  assign_ticks=req, comm=Comm(overhead_s=ovh), timesteps=steps,
                  rng=np.random.default_rng(1))
    res = run.run()
    assert run.finished
    check_invariants(res, costs, speeds, req=req, asg=req, overhead=round(ovh * 1e9))
    assert res.n_chunks == len(res.chunks)
    assert all(d >= f for d, f in zip(res.done, res.finish))  # idle only after the last chunk


@pytest.mark.parametrize("technique", names())
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_a_loop_is_the_same_whenever_it_starts(technique, data):
    """Started later, a loop's every tick moves by as much and nothing else changes — the
    compiled and the Python loops, on any PEs: no absolute time enters its arithmetic (what
    would let an app be simulated before its start tick is known)."""
    costs, speeds, req, ovh, steps = draw_loop(data, max_n=300, max_p=10)
    later = data.draw(st.integers(1, 2**60), label="start")

    def run(start, compiled):
        loop = LoopRun(costs=costs, technique=get(technique), speeds=speeds, request_ticks=req,
                       assign_ticks=req, comm=Comm(overhead_s=ovh), timesteps=steps,
                       rng=np.random.default_rng(5), start=start, compiled=compiled)
        res = loop.run()
        c = res.chunks
        ticks = np.stack([c.t_assign, c.t_start, c.t_end]) - start
        return (np.stack([c.rank, c.first, c.size, c.step]).tobytes(), ticks.tobytes(),
                [(t - start, r) for t, r in loop.done_events], res.end - start,
                [t - start for t in res.finish], [t - start for t in res.done])

    for compiled in (True, False):
        assert run(later, compiled) == run(0, compiled)


def loop_state(loop):
    """Everything a run has produced so far, and what it will produce: its result with the
    chunk table, its done and release events, and its next serve tick."""
    res = loop.result()
    c = res.chunks
    table = np.stack([c.rank, c.first, c.size, c.t_assign, c.t_start, c.t_end, c.step])
    return (table.tobytes(), res.start, res.end, res.finish, res.done, res.n_chunks,
            list(loop.done_events), list(loop.release_events), loop.next_tick(),
            loop.served_until)


@pytest.mark.parametrize("technique", names())
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_a_loop_moved_in_time_is_the_loop_started_then(technique, data):
    """A loop simulated from tick 0 to some point and then moved to start at T is, from then
    on, the same run as one started at T and advanced as far: every tick, chunk and event, and
    what it does next, resizes included — compiled and Python (what lets an app be
    simulated before the batch level starts it)."""
    costs, speeds, req, ovh, steps = draw_loop(data, max_n=300, max_p=10)
    later = data.draw(st.integers(1, 2**50), label="start")
    full = LoopRun(costs=costs, technique=get(technique), speeds=speeds, request_ticks=req,
                   assign_ticks=req, comm=Comm(overhead_s=ovh), timesteps=steps,
                   rng=np.random.default_rng(5)).run().end
    until = data.draw(st.integers(0, full + 2), label="until")
    budget = data.draw(st.sampled_from([1, 7, 1 << 62]), label="budget")
    resize = data.draw(st.sampled_from(["none", "add", "remove"]), label="resize")

    for compiled in (True, False):
        def loop(start):
            return LoopRun(costs=costs, technique=get(technique), speeds=speeds,
                           request_ticks=req, assign_ticks=req, comm=Comm(overhead_s=ovh),
                           timesteps=steps, rng=np.random.default_rng(5), start=start,
                           compiled=compiled)

        moved, there = loop(0), loop(later)
        moved.advance(until, budget)
        moved.move(later)
        there.advance(later + until, budget)
        assert loop_state(moved) == loop_state(there)
        at = max(moved.served_until + 1, later + until)
        for run in (moved, there):
            if resize == "add":
                run.add(at, [1e9], [req[-1]], [req[-1]])
            elif resize == "remove" and len(speeds) > 1 and not run.finished:
                run.remove(at, [len(speeds) - 1])
            run.advance(1 << 62)
        assert loop_state(moved) == loop_state(there)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("technique", ["SS", "FSC", "RND"])
def test_a_long_loop_moved_midway_is_the_loop_started_then(technique, compiled):
    # 3,000 chunks: the compiled loop's table spans several blocks (256, 512, ... rows) and
    # the Python loop's rows have turned into lists of prefix sums
    costs = costs_of(np.random.default_rng(8).exponential(1e5, 3000))

    def loop(start):
        return run_loop(costs, technique, 6, speeds=[1e9, 2e9] * 3, start=start,
                        rng=np.random.default_rng(1), compiled=compiled)

    moved, there = loop(0), loop(123_456_789)
    moved.advance(1 << 62, 2000)
    moved.move(123_456_789)
    there.advance(1 << 62, 2000)
    assert loop_state(moved) == loop_state(there)
    moved.advance(1 << 62)
    there.advance(1 << 62)
    assert loop_state(moved) == loop_state(there)


def test_a_loop_with_a_varying_availability_is_not_moved():
    costs = costs_of([1e6] * 10)
    run = LoopRun(costs=costs, technique=get("SS"), speeds=[1e9], request_ticks=[0],
                  assign_ticks=[0], availability=[Availability(times=(0, 5000), factors=(1.0, 0.5))])
    with pytest.raises(ValueError, match="varying availability"):
        run.move(10)


@pytest.mark.parametrize("technique", ["RND", "AF", "AWF-C", "GSS"])
def test_same_seed_same_chunks(technique):
    costs = costs_of(np.random.default_rng(3).exponential(1e4, 2000))

    def table():
        run = run_loop(costs, technique, 8, speeds=[1e9, 2e9] * 4,
                       rng=np.random.default_rng(42))
        c = run.run().chunks
        return np.stack([c.rank, c.first, c.size, c.t_start, c.t_end])

    assert np.array_equal(table(), table())


def test_af_without_variance_on_equal_pes_is_gss():
    # dls.md: with sigma = 0 and equal speeds AF reduces to ceil(R/P) once all PEs reported
    n, p = 10000, 4
    res = run_loop(costs_of([100.0] * n), "AF", p, lat=0).run()
    sizes = res.chunks.size.tolist()
    init = -(-n // (10 * p))
    # measurements come with each PE's next request: ranks 0..p-2 still see a PE without
    # data and get the initial chunk; from rank p-1's second request on, AF is GSS
    assert sizes[:2 * p - 1] == [init] * (2 * p - 1)
    remaining = n - (2 * p - 1) * init
    for size in sizes[2 * p - 1:]:
        assert size == -(-remaining // p)
        remaining -= size


def test_awf_adapts_between_time_steps():
    # PE 1 delivers half its speed: AWF gives it about half the work in the second step
    n, p = 4000, 2
    run = run_loop(costs_of([1000.0] * n), "AWF", p, lat=0, timesteps=2,
                   availability=[1.0, 0.5])
    c = run.run().chunks
    step2 = c.step == 1
    first_batch = c.size[step2][:2]
    by_rank = dict(zip(c.rank[step2][:2].tolist(), first_batch.tolist()))
    assert by_rank[0] == pytest.approx(2 * by_rank[1], rel=0.01)
    # the first step, before any adaptation, is WF's
    wf = run_loop(costs_of([1000.0] * n), "WF", p, lat=0, timesteps=2,
                  availability=[1.0, 0.5]).run().chunks
    assert np.array_equal(c.size[c.step == 0], wf.size[wf.step == 0])
    assert not np.array_equal(c.size[step2], wf.size[wf.step == 1])


def test_availability_profile_slows_a_pe():
    prof = Availability(times=(0, 1000), factors=(1.0, 0.5))
    # 3000 FLOP at 1 GFLOP/s: 1000 ticks at full speed, the other 2000 FLOP at half speed
    assert prof.finish(0, 3000.0, 1e9) == 1000 + 4000
    assert prof.finish(2000, 3000.0, 1e9) == 2000 + 6000
    stop = Availability(times=(0, 10, 20), factors=(1.0, 0.0, 1.0))
    assert stop.finish(0, 15.0, 1e9) == 25
    res = run_loop(costs_of([1000.0] * 10), "SS", 1, availability=[prof]).run()
    assert res.makespan == 1000 + 9 * 2000
    with pytest.raises(ValueError):
        Availability(times=(0,), factors=(0.0,))


def test_remove_pes_at_chunk_boundary():
    costs = costs_of([1000.0] * 1000)
    run = run_loop(costs, "SS", 4, lat=0)
    run.remove(50_000, [2, 3])
    res = run.run()
    c = res.chunks
    late = c.t_assign >= 50_000
    assert set(c.rank[late].tolist()) == {0, 1}
    assert res.done[2] == 50_000 and res.done[3] == 50_000
    check_invariants(res, costs, [1e9] * 4, req=[0] * 4, asg=[0] * 4)


def test_add_pes_during_the_run():
    costs = costs_of([1000.0] * 1000)
    run = run_loop(costs, "FAC2", 2, lat=0)
    ranks = run.add(100_000, [1e9, 1e9], [0, 0], [0, 0])
    assert ranks == [2, 3]
    res = run.run()
    c = res.chunks
    assert {2, 3} <= set(c.rank.tolist())
    assert c.t_start[np.isin(c.rank, ranks)].min() >= 100_000
    check_invariants(res, costs, [1e9] * 4, req=[0] * 4, asg=[0] * 4)
    solo = run_loop(costs, "FAC2", 2, lat=0).run()
    assert res.makespan < solo.makespan


def test_remove_everyone_is_refused():
    run = run_loop(costs_of([1.0] * 10), "SS", 2)
    with pytest.raises(InputError, match="cannot remove every PE"):
        run.remove(0, [0, 1])


def test_advance_stops_before_the_given_tick():
    run = run_loop(costs_of([1000.0] * 100), "SS", 2, lat=0)
    run.advance(5000)
    c = run.result().chunks
    assert c.t_assign.max() < 5000
    assert run.next_tick() >= 5000
    assert not run.finished
    run.advance(1 << 62)
    assert run.finished and run.next_tick() is None
