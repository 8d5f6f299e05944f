"""The compiled master-worker loop against the Python loop, its reference: identical state after
every step of random scripts (advances, budgets, run-to-done, shrinks, expands, time steps) for
every technique, identical co-simulations (RCA, replays, malleable apps), and the tick widths
the compiled heap cannot hold handed back exactly."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.als import runtime
from cosim.als.manager import AlsConfig
from cosim.als.runtime import LoopRun
from cosim.als.techniques import get, names
from cosim.bls import BatchConfig
from cosim.errors import InputError
from cosim.platform import load_platform
from cosim.runner import simulate
from cosim.workload.costs import TaskCosts
from cosim.workload.jobs import Job

pytestmark = pytest.mark.skipif(
    runtime._serve is None,
    reason="the compiled loop was not built on this machine (setup.py: no C compiler or "
           "Python headers at install); cosim runs the Python loop, tested everywhere else")

S = 1_000_000_000
TABLE = ("rank", "first", "size", "t_assign", "t_start", "t_end", "step")


def make(costs, technique, speeds, lat, *, compiled, **kw):
    p = len(speeds)
    req = [0] + [lat + 7 * r for r in range(1, p)]
    return LoopRun(costs=costs, technique=get(technique), speeds=speeds, request_ticks=req,
                   assign_ticks=req, rng=np.random.default_rng(3), compiled=compiled, **kw)


def observe(run: LoopRun) -> tuple:
    """Everything a caller of a LoopRun can see between two calls."""
    p = len(run.speeds)
    return (run.next_tick(), run.served_until, run.finished, run.active_ranks,
            tuple(run.busy_until(r) for r in range(p)), tuple(run.done_events),
            tuple(run.release_events), run.remaining_flop())


def same_result(a, b) -> None:
    assert (a.end, a.finish, a.done, a.n_chunks) == (b.end, b.finish, b.done, b.n_chunks)
    if a.chunks is not None or b.chunks is not None:
        for f in TABLE:
            x, y = getattr(a.chunks, f), getattr(b.chunks, f)
            assert x.dtype == y.dtype and np.array_equal(x, y), f


def draw_loop(data, flops, max_pes):
    """Random per-iteration costs (from `flops`) and PE speeds for a loop."""
    n = data.draw(st.integers(1, 400), label="n")
    flop = data.draw(st.lists(st.sampled_from(flops), min_size=n, max_size=n), label="flop")
    speeds = data.draw(st.lists(st.sampled_from([1e9, 1e9, 2e9, 7.5e8]), min_size=1,
                                max_size=max_pes), label="speeds")
    return TaskCosts.from_array(np.asarray(flop), model="profile", label="t", params={}), speeds


OPS = st.lists(st.tuples(st.sampled_from(["advance", "budget", "done", "remove", "add"]),
                         st.integers(0, 4000), st.integers(1, 40)), max_size=10)


@pytest.mark.parametrize("technique", names())
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_compiled_loop_equals_python_loop_step_by_step(technique, data):
    costs, speeds = draw_loop(data, [0.0, 1.0, 250.0, 999.5, 4e3, 1.5e4], 9)
    lat = data.draw(st.sampled_from([0, 1, 510]), label="lat")
    timesteps = data.draw(st.integers(1, 3), label="timesteps")
    record = data.draw(st.booleans(), label="record")
    ops = data.draw(OPS, label="ops")
    runs = [make(costs, technique, speeds, lat, compiled=c, timesteps=timesteps,
                 record=record, comm=runtime.Comm(overhead_s=1e-9 * (lat % 7)))
            for c in (False, True)]
    now = 0
    for op, dt, k in ops:
        now += dt
        outcome = []
        for run in runs:
            try:
                if op == "advance":
                    run.advance(now)
                elif op == "budget":
                    run.advance(now, k)
                elif op == "done":
                    run.advance_to_done(now)
                elif op == "remove":
                    active = run.active_ranks
                    run.remove(now, active[k % len(active):][:1 + k % 3] if active else ())
                else:
                    run.add(now, [1e9] * (1 + k % 2), [lat] * (1 + k % 2), [lat] * (1 + k % 2))
                outcome.append(("ok", observe(run)))
            except InputError as exc:
                outcome.append(("refused", str(exc)))
        assert outcome[0] == outcome[1], op
        if outcome[0][0] == "refused":
            return  # both refused the same command: the scripts end here
    for run in runs:
        run.advance(1 << 62)
    assert observe(runs[0]) == observe(runs[1])
    same_result(runs[0].result(), runs[1].result())


@pytest.mark.parametrize("technique", ["SS", "GSS"])
def test_ticks_too_wide_for_the_compiled_heap_are_served_by_python(technique):
    # chunks of ~3e18 ticks (3e9 FLOP at 1 FLOP/s): the heap's one-word keys hold arrivals at
    # most 2^61 ticks apart on 4 PEs, so those chunks go back to the Python loop, exactly
    costs = TaskCosts.from_array(np.full(8, 3e9), model="profile", label="t", params={})
    runs = [make(costs, technique, [1.0] * 4, 5, compiled=c) for c in (False, True)]
    a, b = (r.run() for r in runs)
    assert np.max(a.chunks.t_end - a.chunks.t_start) > 1 << 61
    same_result(a, b)


def test_varying_availability_runs_in_python_with_the_same_result():
    from cosim.als.availability import Availability

    costs = TaskCosts.from_array(np.linspace(1e3, 5e4, 500), model="profile", label="t",
                                 params={})
    slow = Availability(times=(0, 20_000, 90_000), factors=(1.0, 0.5, 1.0))
    runs = [make(costs, "SS", [1e9] * 3, 510, compiled=c, availability=[1.0, slow, 1.0])
            for c in (False, True)]
    same_result(*(r.run() for r in runs))


def test_forcing_an_absent_compiled_loop_is_refused(monkeypatch):
    monkeypatch.setattr(runtime, "_serve", None)
    costs = TaskCosts.from_array(np.ones(4), model="profile", label="t", params={})
    with pytest.raises(InputError, match="compiled loop was not built"):
        make(costs, "SS", [1e9], 0, compiled=True)


def _apps(seed: int, malleable: bool) -> list[Job]:
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(1, 10):
        hosts = int(rng.choice([1, 2, 4]))
        flop = float(rng.choice([2e9, 8e9, 3e10]))
        extra = {"kind": "malleable", "min_pes": 1, "max_pes": 2 * hosts} if malleable else {}
        jobs.append(Job(id=i, submit=int(rng.integers(0, 40)) * S, hosts=hosts,
                        pes=2 * hosts, walltime=10**5 * S, runtime=10 * S, app="mandelbrot",
                        app_params={"width": "48", "max_iter": "400", "total_flop": repr(flop)},
                        **extra))
    return jobs


@pytest.mark.parametrize(("technique", "batch", "malleable"), [
    ("SS", {"rca": True}, False),
    ("FAC2", {"rca": True, "exclusion": True}, False),
    ("WF", {"backfill": "conservative"}, False),
    ("GSS", {"malleable": "equi", "walltime_kill": False}, True),
    ("SS", {"malleable": "equi", "walltime_kill": False}, True),
    ("AF", {"rca": True}, False),
])
def test_cosimulations_are_identical_with_either_loop(tmp_path, monkeypatch, technique, batch,
                                                      malleable):
    monkeypatch.setenv("COSIM_CACHE_DIR", str(tmp_path))
    platform = load_platform("tiny8x2")
    jobs = _apps(7, malleable)
    out = []
    for compiled in (False, True):
        res = simulate(jobs, n_hosts=8, platform=platform, batch=BatchConfig(**batch),
                       als=AlsConfig(technique=get(technique), record=True, compiled=compiled))
        stats = {k: v for k, v in dataclasses.asdict(res.stats).items()
                 if not k.startswith("wall")}
        out.append((res, stats))
    (a, sa), (b, sb) = out
    assert sa == sb  # rounds, facts, chunk events, replays
    assert a.outcomes == b.outcomes
    assert a.loops.keys() == b.loops.keys()
    for jid in a.loops:
        same_result(a.loops[jid], b.loops[jid])
    assert np.array_equal(a.allocations, b.allocations)


def test_default_follows_the_build():
    assert runtime.LOOP_KERNEL == "compiled"
    assert os.path.exists(runtime._serve.__file__)


@pytest.mark.parametrize("technique", ["SS", "FSC", "MFSC", "STATIC", "GSS"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_done_bound_never_passes_the_next_done(technique, data):
    # the lower bound an ALS rank promises instead of running an app ahead (MPI): no PE is
    # told "no more work" (or released) before it, whatever happens next
    costs, speeds = draw_loop(data, [0.0, 1.0, 800.0, 4e3, 1.5e4, 9e4], 7)
    mc = data.draw(st.integers(1, 3), label="min_chunk")
    stops = data.draw(st.lists(st.integers(1, 5000), min_size=1, max_size=8), label="stops")
    run = LoopRun(costs=costs, technique=get(technique), params={"min_chunk": mc},
                  speeds=speeds, request_ticks=[0] + [510] * (len(speeds) - 1),
                  assign_ticks=[0] + [510] * (len(speeds) - 1), comm=runtime.Comm())
    asked, now = [], 0
    for dt in stops:
        now += dt
        run.advance(now)
        b = run.done_bound()
        if b is not None:
            assert b >= run.next_tick()
            asked.append((b, len(run.done_events), len(run.release_events)))
    run.advance(1 << 62)
    for b, i, j in asked:
        later = [t for t, _ in run.done_events[i:]] + [t for t, _ in run.release_events[j:]]
        assert later and min(later) >= b
