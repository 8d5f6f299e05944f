"""The trace replay (`cosim.bls.replay`) gives exactly what the round loop gives: outcomes,
allocation log, first reservations and counters, on every backfill policy, static priority
and host selection it takes, with and without walltime kills, on random workloads and whole
traces; and `replayable` turns away every run it cannot replay."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.bls import BatchConfig, policies
from cosim.bls.replay import replayable
from cosim.errors import InputError
from cosim.runner import simulate
from cosim.testing.workloads import lublin_like
from cosim.workload.jobs import Job

S = 1_000_000_000

BACKFILLS = [b for b in policies.BACKFILLS if b != "greedy"] + ["greedy"]
STATIC = [p for p in policies.PRIORITIES if policies.priority(p).rank is None]
SELECTIONS = list(policies.SELECTIONS)


def _both(jobs, **kw):
    """(replayed, round loop) results of one simulation."""
    return simulate(jobs, **kw), simulate(jobs, replay=False, **kw)


def _same(a, b) -> None:
    assert a.outcomes == b.outcomes
    assert np.array_equal(a.allocations, b.allocations)
    assert a.first_reservation == b.first_reservation
    stats = [{k: v for k, v in dataclasses.asdict(r.stats).items() if not k.startswith("wall")}
             for r in (a, b)]
    assert stats[0] == stats[1]


def test_the_built_in_static_policies_are_all_covered():
    assert set(STATIC) == {"fcfs", "sjf"} and set(BACKFILLS) == {"none", "easy",
                                                                 "conservative", "greedy"}


@st.composite
def workloads(draw):
    n_hosts = draw(st.integers(1, 10))
    cores = draw(st.integers(1, 3))
    n = draw(st.integers(1, 25))
    jobs = []
    for i in range(n):
        hosts = draw(st.integers(1, n_hosts + 1))  # one more than the machine: rejected
        runtime = draw(st.sampled_from([0, 1, 2, 3, 5, 8])) * S
        walltime = draw(st.sampled_from([0, 1, 2, 3, 5, 8, 13])) * S
        jobs.append(Job(id=i + 1, submit=draw(st.integers(0, 12)) * S, hosts=hosts,
                        pes=draw(st.integers(hosts, hosts * cores)), runtime=runtime,
                        walltime=walltime, priority=draw(st.sampled_from([0] * 8 + [1, 2])),
                        user=draw(st.integers(0, 3))))
    return n_hosts, cores, jobs


def _by_user(job: Job) -> tuple[int, int]:
    """A user's own static order (`BatchConfig.priority_key`): users, then walltime."""
    return (job.user, -job.walltime)


@settings(max_examples=300, deadline=None)
@given(workloads(), st.sampled_from(BACKFILLS), st.sampled_from(STATIC + ["key"]),
       st.sampled_from(SELECTIONS), st.booleans(), st.sampled_from([1, 1, 3]),
       st.sampled_from([None, None, 4 * S]), st.sampled_from([0, 0, 3 * S]),
       st.sampled_from([0, 0, 0, 2 * S, 3 * S]))
def test_the_replay_equals_the_round_loop(w, backfill, priority, selection, kill, window,
                                          cap, bf_interval, quantum):
    """Ties everywhere: equal submits, ends at submits, zero run times and walltimes (a job
    ending or killed where it started), kills at the tick others complete, priority jobs,
    jobs larger than the machine, PEs not a multiple of the hosts; a user's own priority key,
    a window, a makespan cap, Slurm's backfill cadence, a quantum (decisions on its grid: a
    job whose walltime passed completes if its end comes by the next decision)."""
    n_hosts, cores, jobs = w
    order = {"priority_key": _by_user} if priority == "key" else {"priority": priority}
    try:
        config = BatchConfig(backfill=backfill, selection=selection, walltime_kill=kill,
                             window=window, makespan_cap=cap, bf_interval=bf_interval,
                             **order)
    except InputError:  # a combination BatchConfig refuses
        return
    assert replayable(config, [cores] * n_hosts, jobs)
    _same(*_both(jobs, n_hosts=n_hosts, cores_per_host=cores, batch=config, quantum=quantum))


def test_the_same_error_for_more_pes_than_cores():
    jobs = [Job(id=1, submit=0, hosts=2, pes=5, runtime=S, walltime=S)]
    errors = []
    for replay in (True, False):
        with pytest.raises(InputError) as err:
            simulate(jobs, n_hosts=4, cores_per_host=2, replay=replay)
        errors.append((err.value.field, str(err.value)))
    assert errors[0] == errors[1] and errors[0][0] == "pes"


@pytest.mark.parametrize("backfill, bf_interval", [("none", 0), ("easy", 0),
                                                   ("conservative", 0), ("easy", 30 * S)])
def test_lublin_like_workload_identical(backfill, bf_interval):
    jobs = lublin_like(3000, 64, np.random.default_rng(5), cores=2)
    config = BatchConfig(backfill=backfill, priority="sjf" if backfill == "easy" else "fcfs",
                         bf_interval=bf_interval)
    _same(*_both(jobs, n_hosts=64, cores_per_host=2, batch=config))


def test_kth_sp2_identical_under_easy():
    from cosim.paths import TRACES_DIR
    from cosim.workload.swf import read_swf

    w = read_swf(TRACES_DIR / "KTH-SP2-1996-2.1-cln.swf.gz", max_hosts=100)
    jobs = [j for j in w.jobs if j.id <= 8000]
    a, b = _both(jobs, n_hosts=100, batch=BatchConfig())
    _same(a, b)
    assert a.stats.rounds == b.stats.rounds > len(jobs)


def test_progress_is_told_as_by_the_round_loop():
    jobs = lublin_like(1500, 16, np.random.default_rng(2))
    calls = [[], []]
    for k, replay in enumerate((True, False)):
        simulate(jobs, n_hosts=16, replay=replay,
                 progress=lambda t, n, out=calls[k]: out.append((t, n)))
    assert calls[0] == calls[1] and len(calls[0]) > 2


def _job(**kw) -> Job:
    base = dict(id=1, submit=0, hosts=1, pes=1, runtime=S, walltime=2 * S)
    return Job(**{**base, **kw})


@pytest.fixture
def plugin_policies(monkeypatch):
    """A static value-based priority and a backfill policy as plugins would add them (the
    registries' entry-point tables)."""
    from cosim.bls.policies.base import BackfillPolicy, PriorityPolicy

    for table, pol in ((policies.PRIORITIES, PriorityPolicy(
            name="value-static", summary="a plugin's", key=lambda j: (j.submit,),
            value_based=True)), (policies.BACKFILLS, BackfillPolicy(
                name="easy-again", summary="a plugin's", plan=policies.easy.plan))):
        monkeypatch.setitem(table._loaded(), pol.name, pol)


@pytest.mark.parametrize("config", [dict(priority="value-static"),
                                    dict(backfill="easy-again")])
def test_plugin_policies_take_the_round_loop(plugin_policies, config):
    """Its checks are the round loop's (a plan may carry what the replay does not); a
    static value-based order drops hopeless jobs by default."""
    assert not replayable(BatchConfig(**config), [1] * 4, [_job()])


def test_the_replay_takes_the_built_in_policies():
    assert replayable(BatchConfig(), [1] * 4, [_job()])
    assert replayable(BatchConfig(priority_key=_by_user, backfill="conservative",
                                  selection="best-fit", walltime_kill=False), [2] * 3,
                      [_job()])


@pytest.mark.parametrize("config, cores, jobs", [
    (BatchConfig(rca=True), [1] * 4, [_job()]),
    (BatchConfig(malleable="equi"), [1] * 4, [_job()]),
    (BatchConfig(priority="wfp"), [1] * 4, [_job()]),
    (BatchConfig(priority="vpt", backfill="greedy"), [1] * 4, [_job()]),
    (BatchConfig(drop_hopeless=True), [1] * 4, [_job()]),
    (BatchConfig(adaptive="w"), [1] * 4, [_job()]),
    (BatchConfig(), [1, 1, 2, 2], [_job()]),  # hosts of different core counts
    (BatchConfig(), [1] * 4, [_job(app="mandelbrot")]),
    (BatchConfig(), [2] * 4, [_job(kind="malleable", pes=2, min_pes=1, max_pes=4)]),
])
def test_what_the_replay_turns_away(config, cores, jobs):
    assert not replayable(config, cores, jobs)
