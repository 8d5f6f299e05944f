"""The round at a decision tick that only started or killed trace jobs is the trace endpoint's
alone (`AlsGroup.local_round`): it must give exactly what the full round gives — outcomes,
allocation log, facts — on real traces under every backfill policy, on random workloads (zero
run times, walltime kills, bursts), and in co-simulations where apps and trace jobs mix."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.als.manager import AlsConfig
from cosim.als.techniques import get
from cosim.bls import BatchConfig, policies
from cosim.paths import TRACES_DIR
from cosim.platform import load_platform
from cosim.runner import simulate
from cosim.transport.loopback import LocalAls
from cosim.workload.jobs import Job
from cosim.workload.swf import read_swf

S = 1_000_000_000


def both(monkeypatch, jobs, **kw):
    """(with local rounds, with full rounds only) of one simulation by the round loop (not
    the trace replay, which has no rounds: tests/test_replay.py)."""
    fast = simulate(jobs, replay=False, **kw)
    with monkeypatch.context() as m:
        m.setattr(LocalAls, "local_round", lambda self, grant, commands: None)
        full = simulate(jobs, replay=False, **kw)
    return fast, full


def same(fast, full) -> None:
    assert fast.outcomes == full.outcomes
    assert np.array_equal(fast.allocations, full.allocations)
    sf, sr = dataclasses.asdict(fast.stats), dataclasses.asdict(full.stats)
    assert sf["facts"] == sr["facts"] and sf["passes"] == sr["passes"]
    assert sf["rounds"] <= sr["rounds"]


@pytest.mark.parametrize("backfill", sorted(policies.BACKFILLS))
def test_real_trace_every_backfill_policy(monkeypatch, backfill):
    jobs = read_swf(TRACES_DIR / "KTH-SP2-1996-2.1-cln.swf.gz", max_hosts=100).jobs[:2500]
    fast, full = both(monkeypatch, jobs, n_hosts=100,
                      batch=BatchConfig(backfill=backfill, walltime_kill=True))
    same(fast, full)
    assert any(o.status == "killed" for o in fast.outcomes)
    assert fast.stats.rounds < full.stats.rounds


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 6), st.integers(0, 40),
                          st.integers(1, 40)), min_size=1, max_size=25),
       st.sampled_from(sorted(policies.BACKFILLS)), st.booleans(), st.integers(0, 3))
def test_random_rigid_workloads(spec, backfill, kill, quantum):
    jobs = [Job(id=i, submit=sub * S, hosts=h, pes=h, runtime=run * S, walltime=wall * S)
            for i, (sub, h, run, wall) in enumerate(spec, start=1)]
    with pytest.MonkeyPatch.context() as mp:
        fast, full = both(mp, jobs, n_hosts=6, batch=BatchConfig(backfill=backfill,
                                                                 walltime_kill=kill),
                          quantum=quantum * S)
    same(fast, full)


@pytest.mark.parametrize("batch", [{"rca": True}, {"rca": True, "exclusion": True},
                                   {"backfill": "conservative"}])
def test_apps_and_trace_jobs_mixed(monkeypatch, tmp_path, batch):
    monkeypatch.setenv("COSIM_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(5)
    jobs = []
    for i in range(1, 16):
        hosts = int(rng.choice([1, 2, 3]))
        if i % 3:
            jobs.append(Job(id=i, submit=int(rng.integers(0, 30)) * S, hosts=hosts,
                            pes=2 * hosts, runtime=int(rng.integers(0, 20)) * S,
                            walltime=15 * S))
        else:
            jobs.append(Job(id=i, submit=int(rng.integers(0, 30)) * S, hosts=hosts,
                            pes=2 * hosts, walltime=10**4 * S, runtime=S, app="mandelbrot",
                            app_params={"width": "40", "max_iter": "300",
                                        "total_flop": repr(float(rng.choice([3e9, 2e10])))}))
    fast, full = both(monkeypatch, jobs, n_hosts=8, platform=load_platform("tiny8x2"),
                      batch=BatchConfig(**batch), als=AlsConfig(technique=get("GSS")))
    same(fast, full)
    assert fast.loops.keys() == full.loops.keys()


def test_a_local_round_keeps_the_promise_of_the_running_apps(monkeypatch, tmp_path):
    # app job 1 holds 5 of 8 hosts and ends after a few seconds; trace job 3 (4 hosts) waits
    # for it; trace job 2 is backfilled at 1 s and runs 100 s, in a local round. The next
    # grant must still be app 1's completion (the promise kept from the full round), so job 3
    # starts when job 1 ends, not when job 2 does
    monkeypatch.setenv("COSIM_CACHE_DIR", str(tmp_path))
    jobs = [Job(id=1, submit=0, hosts=5, pes=10, walltime=1000 * S, runtime=S,
                app="mandelbrot", app_params={"width": "40", "max_iter": "300",
                                              "total_flop": "5e10"}),
            Job(id=2, submit=S, hosts=3, pes=6, runtime=100 * S, walltime=100 * S),
            Job(id=3, submit=0, hosts=4, pes=8, runtime=10 * S, walltime=20 * S)]
    fast, full = both(monkeypatch, jobs, n_hosts=8, platform=load_platform("tiny8x2"),
                      batch=BatchConfig(), als=AlsConfig(technique=get("STATIC")))
    same(fast, full)
    by = {o.job.id: o for o in fast.outcomes}
    assert by[2].start == S and by[1].end < 20 * S
    assert by[3].start == by[1].end
    assert fast.stats.rounds < full.stats.rounds
