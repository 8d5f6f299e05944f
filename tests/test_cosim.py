"""The co-simulation: ALS facts and promises, the round loop, kills, determinism, quantum."""

from __future__ import annotations

import numpy as np
import pytest

from cosim.als.launch import job_pe_placement
from cosim.als.manager import AlsConfig, AppSimulator
from cosim.als.runtime import Comm, LoopRun
from cosim.als.techniques import get
from cosim.bls import BatchConfig
from cosim.platform import load_platform
from cosim.platform.allocation import job_pe_indices
from cosim.protocol.messages import AppCompleted, AppStarted, HostsYielded, KillApp, StartApp
from cosim.runner import cosimulate
from cosim.testing.scenarios import drain
from cosim.workload import load_app
from cosim.workload.jobs import Job

S = 1_000_000_000
SMALL = {"width": "24", "max_iter": "200"}


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COSIM_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def ib256():
    return load_platform("ib256")


def als(technique="STATIC", **kw):
    return AlsConfig(technique=get(technique), app_overrides=SMALL, record=True, **kw)


def start(job_id, t, hosts, total_flop=4e6):
    return StartApp(time=t, job_id=job_id, hosts=tuple(hosts), pes=len(hosts),
                    app="mandelbrot", params=(("total_flop", repr(total_flop)),))




@pytest.mark.parametrize("technique", ["STATIC", "GSS", "AF"])
def test_app_facts_match_a_standalone_loop(ib256, technique):
    sim = AppSimulator(platform=ib256, config=als(technique))
    hosts = [3, 4, 9, 10]
    sim.apply([start(7, 5 * S, hosts)])
    facts = drain(sim)
    # the same loop, run on its own
    base = load_app("mandelbrot", overrides=SMALL)
    pe_idx = job_pe_indices(ib256.pe_hosts(), hosts, len(hosts))
    host_of, speeds, req, asg = job_pe_placement(ib256, ib256.pe_hosts(), pe_idx, Comm())
    from cosim.workload import TaskCosts
    costs = TaskCosts.from_array(base.flop * (4e6 / base.total), model="m", label="m",
                                 params={})
    ref = LoopRun(costs=costs, technique=get(technique), speeds=speeds, request_ticks=req,
                  assign_ticks=asg, start=5 * S).run()
    assert isinstance(facts[0], AppStarted) and facts[0].time == 5 * S
    yields = {h: f.time for f in facts if isinstance(f, HostsYielded) for h in f.hosts}
    (done,) = [f for f in facts if isinstance(f, AppCompleted)]
    assert done.time == max(ref.done) and done.status == "completed"
    for rank, h in enumerate(host_of):
        if ref.done[rank] < done.time:
            assert yields[h] == ref.done[rank]
        else:
            assert h not in yields  # yields at the completion tick are not reported
    assert np.array_equal(sim.results[7].chunks.size, ref.chunks.size)
    assert sim.results[7].chunks.size.sum() == costs.n
    assert sim.running == 0


def test_kill_truncates_the_app(ib256):
    sim = AppSimulator(platform=ib256, config=als())
    sim.apply([start(1, 0, [0, 1])])
    first = sim.promise()
    sim.advance(first)
    kill_at = 1000
    sim.apply([KillApp(time=kill_at, job_id=1)])
    facts = drain(sim)
    assert facts == [AppCompleted(time=kill_at, job_id=1, status="killed")]


def test_command_before_the_grant_is_a_protocol_error(ib256):
    from cosim.errors import ProtocolError

    sim = AppSimulator(platform=ib256, config=als())
    sim.advance(10 * S)
    with pytest.raises(ProtocolError, match="before the granted tick"):
        sim.apply([start(1, 5 * S, [0])])


def esp_like(n=12, seed=0):
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n):
        hosts = int(rng.choice([1, 2, 4, 8]))
        target = float(rng.uniform(5, 50))
        jobs.append(Job(id=i + 1, submit=int(rng.integers(0, 60)) * S, hosts=hosts,
                        pes=hosts, walltime=int(3 * target) * S, runtime=int(target) * S,
                        app="mandelbrot",
                        app_params={"total_flop": repr(hosts * target * 1e9)}))
    jobs.append(Job(id=n + 1, submit=3 * S, hosts=2, pes=2, walltime=40 * S,
                    runtime=30 * S))  # a rigid job among them
    return jobs


def run_cosim(jobs, technique="STATIC", **kw):
    return cosimulate(jobs, platform=load_platform("ib256"), n_hosts=8,
                      batch=BatchConfig(**kw.pop("batch", {})), als=als(technique), **kw)


@pytest.mark.parametrize("technique", ["STATIC", "FAC2", "AF"])
def test_coupled_run_invariants(technique):
    jobs = esp_like()
    res = run_cosim(jobs, technique)
    by_id = {o.job.id: o for o in res.outcomes}
    assert set(by_id) == {j.id for j in jobs}
    for job in jobs:
        o = by_id[job.id]
        assert o.status == "completed" and o.start >= job.submit
        if job.app == "rigid":
            assert o.end - o.start == job.runtime
            continue
        loop = res.loops[job.id]
        assert loop.chunks.size.sum() == loop.n_tasks  # every task exactly once
        assert o.end == max(loop.done) and loop.start == o.start
    # no host runs two jobs at once
    spans = sorted((o.start, o.end, h, o.job.id) for o in res.outcomes for h in o.hosts)
    busy: dict[int, int] = {}
    for s, e, h, _ in spans:
        assert busy.get(h, 0) <= s
        busy[h] = e
    assert res.stats.chunk_events == sum(lp.n_chunks for lp in res.loops.values())


def test_coupled_run_is_deterministic_and_order_free():
    jobs = esp_like(seed=3)
    a = run_cosim(jobs, "AF")
    b = run_cosim(list(reversed(jobs)), "AF")
    assert a.outcomes == b.outcomes


def test_walltime_kill_of_a_coupled_app():
    job = Job(id=1, submit=0, hosts=2, pes=2, walltime=2 * S, runtime=10 * S,
              app="mandelbrot", app_params={"total_flop": repr(2 * 10 * 1e9)})
    res = run_cosim([job])
    (o,) = res.outcomes
    assert o.status == "killed" and o.end == 2 * S


def test_quantum_delays_decisions_to_its_multiples():
    jobs = esp_like(seed=1)
    coarse = run_cosim(jobs, quantum=10 * S)
    for o in coarse.outcomes:
        assert o.status == "completed"
        assert o.start % (10 * S) == 0 and o.start >= o.job.submit  # decided on the quantum


def test_jobs_of_one_size_share_their_scaled_costs_within_a_budget(ib256, monkeypatch):
    """Scaled cost arrays are kept per (app, parameters, total work) — later jobs of the same
    size reuse them, read-only — and the least recently used go when the budget is full."""
    from cosim.als import manager

    sim = AppSimulator(platform=ib256, config=als())
    sim.apply([start(1, 0, [0, 1]), start(2, 0, [2, 3]), start(3, 0, [4], total_flop=8e6)])
    costs = {j: sim._apps[j].run.costs for j in (1, 2, 3)}
    assert costs[1] is costs[2] and costs[3] is not costs[1]
    assert costs[3].total == pytest.approx(8e6) and costs[1].total == pytest.approx(4e6)
    assert not costs[1].flop.flags.writeable and not costs[1].prefix.flags.writeable
    n = costs[1].n  # 24 x 24 pixels
    monkeypatch.setattr(manager, "SCALED_COSTS_BUDGET", 2 * n)
    sim.apply([start(4, 0, [5])])  # 4e6 used again: now more recent than 8e6
    sim.apply([start(5, 0, [6], total_flop=2e6)])  # over the budget: one must go
    sim.apply([start(7, 0, [8])])
    assert sim._apps[4].run.costs is sim._apps[7].run.costs is costs[1]  # kept
    sim.apply([start(6, 0, [7], total_flop=8e6)])
    assert sim._apps[6].run.costs is not costs[3]  # 8e6 was the least recently used: gone
    assert sim._scaled_n <= 2 * n
