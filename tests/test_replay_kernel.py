"""The compiled trace replay (cosim/bls/_replay.c) against the Python replay, its reference:
the same outcomes in the same order, allocation log, first reservations, counters and
progress calls, and the outcome columns it makes from its arrays those gathered from the
outcomes, on random workloads under every run it takes, and on whole traces; and the
runs it does not take go to the Python replay."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_columns import column_values

from cosim.bls import BatchConfig, policies
from cosim.bls import replay as replay_module
from cosim.bls.replay import compiled_replayable, replay
from cosim.output.columns import OutcomeColumns
from cosim.testing.workloads import lublin_like
from cosim.workload.jobs import Job

pytestmark = pytest.mark.skipif(
    replay_module._kernel is None,
    reason="the compiled replay was not built on this machine (setup.py: no C compiler or "
           "Python headers at install); cosim runs the Python replay, tested everywhere else")

S = 1_000_000_000


def _run(order, config, cores, compiled):
    calls: list[tuple[int, int]] = []
    r = replay(order, config=config, cores=cores, compiled=compiled,
               progress=lambda t, n: calls.append((t, n)))
    return r, calls


def _same(order, config, cores) -> None:
    (a, calls_a), (b, calls_b) = (_run(order, config, cores, c) for c in (True, False))
    assert list(a.outcomes.items()) == list(b.outcomes.items())  # the order too
    assert np.array_equal(a.allocations, b.allocations)
    assert list(a.first_reservation.items()) == list(b.first_reservation.items())
    skip = ("outcomes", "allocations", "first_reservation", "make_columns")
    assert ({f.name: getattr(a, f.name) for f in dataclasses.fields(a) if f.name not in skip}
            == {f.name: getattr(b, f.name) for f in dataclasses.fields(b)
                if f.name not in skip})
    assert calls_a == calls_b
    # the columns the compiled replay makes from its arrays are those gathered from the
    # outcomes; the Python replay leaves them to the outputs
    assert b.make_columns is None
    assert (column_values(a.make_columns())
            == column_values(OutcomeColumns.of(list(b.outcomes.values()))))



def _by_user(job: Job) -> tuple[int, int]:
    return (job.user, -job.walltime)


@st.composite
def runs(draw):
    n_hosts = draw(st.integers(1, 10))
    cores = draw(st.integers(1, 3))
    jobs = []
    for i in range(draw(st.integers(1, 30))):
        hosts = draw(st.integers(1, n_hosts + 1))  # one more than the machine: rejected
        jobs.append(Job(id=draw(st.integers(0, 3)) * 100 + i,
                        submit=draw(st.integers(0, 12)) * S,
                        hosts=hosts, pes=draw(st.integers(hosts, hosts * cores)),
                        runtime=draw(st.sampled_from([0, 1, 2, 3, 5, 8])) * S,
                        walltime=draw(st.sampled_from([0, 1, 2, 3, 5, 8, 13])) * S,
                        priority=draw(st.sampled_from([0] * 6 + [-1, -2, -2**63])),
                        user=draw(st.integers(0, 3))))
    order = sorted(jobs, key=lambda j: (j.submit, j.id))
    priority = draw(st.sampled_from(["fcfs", "sjf", "key"]))
    config = BatchConfig(backfill=draw(st.sampled_from(["easy", "none"])),
                         walltime_kill=draw(st.booleans()),
                         **({"priority_key": _by_user} if priority == "key" else
                            {"priority": priority}))
    return order, config, [cores] * n_hosts


@settings(max_examples=400, deadline=None)
@given(runs())
def test_the_compiled_replay_is_the_python_replay(run):
    """Ties everywhere: equal submits and keys, ends at submits, zero run times and walltimes,
    kills at the tick others complete, negative priorities (down to the least int64), jobs
    larger than the machine,
    PEs not a multiple of the hosts (the log's spread rule), a user's own key."""
    order, config, cores = run
    assert compiled_replayable(order, config, cores)
    _same(order, config, cores)


@pytest.mark.parametrize("name", sorted({"fcfs", "sjf"} | {
    n for n in policies.PRIORITIES if policies.priority(n).key_fields}))
@settings(max_examples=50, deadline=None)
@given(job=st.builds(Job, id=st.integers(0, 99), submit=st.integers(0, 10**12),
                     hosts=st.integers(1, 4), pes=st.just(4), runtime=st.integers(0, 10**12),
                     walltime=st.integers(0, 10**12), priority=st.integers(-3, 0),
                     user=st.integers(-1, 9)))
def test_a_key_of_fields_is_those_fields(name, job):
    """A priority whose key is its `key_fields` (the compiled replay sorts their columns
    instead of calling it) returns exactly those fields, in that order; FCFS and SJF, keys
    of the job's own fields, declare them."""
    policy = policies.priority(name)
    assert policy.key_fields
    assert policy.key(job) == tuple(getattr(job, f) for f in policy.key_fields)


@pytest.mark.parametrize("backfill, priority", [("easy", "fcfs"), ("none", "fcfs"),
                                                ("easy", "sjf")])
def test_whole_traces_are_replayed_alike(backfill, priority):
    from cosim.paths import TRACES_DIR
    from cosim.workload.swf import read_swf

    w = read_swf(TRACES_DIR / "KTH-SP2-1996-2.1-cln.swf.gz", max_hosts=100)
    _same(list(w.jobs), BatchConfig(backfill=backfill, priority=priority), [1] * 100)
    jobs = sorted(lublin_like(4000, 64, np.random.default_rng(9), cores=4),
                  key=lambda j: (j.submit, j.id))
    _same(jobs, BatchConfig(backfill=backfill, priority=priority, walltime_kill=False),
          [4] * 64)


def test_the_runs_it_does_not_take_go_to_the_python_replay(monkeypatch):
    jobs = [Job(id=1, submit=0, hosts=1, pes=1, runtime=S, walltime=2 * S)]
    cores = [1, 1]
    assert compiled_replayable(jobs, BatchConfig(), cores)
    for config, kw in ((BatchConfig(backfill="conservative"), {}),
                       (BatchConfig(selection="best-fit"), {}),
                       (BatchConfig(window=2), {}),
                       (BatchConfig(bf_interval=30 * S), {}),
                       (BatchConfig(), {"quantum": 2 * S})):
        assert not compiled_replayable(jobs, config, cores, **kw)
        with pytest.raises(ValueError, match="does not take"):
            replay(jobs, config=config, cores=cores, compiled=True, **kw)
        replay(jobs, config=config, cores=cores, **kw)  # the Python replay, by default
    z = [dataclasses.replace(jobs[0], priority=1)]  # a priority job: reservations of its own
    assert not compiled_replayable(z, BatchConfig(), cores)
    wide = [dataclasses.replace(jobs[0], pes=2)]  # more PEs than its host has: Python raises
    assert not compiled_replayable(wide, BatchConfig(), cores)
    monkeypatch.setattr(replay_module, "_kernel", None)
    with pytest.raises(RuntimeError, match="not built"):
        replay(jobs, config=BatchConfig(), cores=cores, compiled=True)
    assert replay(jobs, config=BatchConfig(), cores=cores).outcomes[1].end == S


def test_an_error_in_the_progress_callback_comes_out_of_the_kernel():
    jobs = sorted(lublin_like(3000, 16, np.random.default_rng(3)),
                  key=lambda j: (j.submit, j.id))

    def progress(t, n):
        raise KeyError("stop")

    with pytest.raises(KeyError, match="stop"):
        replay(jobs, config=BatchConfig(), cores=[1] * 16, compiled=True, progress=progress)


def test_runs_whose_ticks_could_leave_int64_go_to_the_python_replay():
    """The kernel's arithmetic is int64: a run whose latest possible tick is past it is not
    given to it (the Python replay's ints do not wrap)."""
    t = 3 * 10**17
    jobs = [Job(id=1, submit=t, hosts=1, pes=1, runtime=100 * S, walltime=9 * 10**18),
            Job(id=2, submit=t + S, hosts=2, pes=2, runtime=10 * S, walltime=10 * S),
            Job(id=3, submit=t + S, hosts=1, pes=1, runtime=5 * S, walltime=5 * S)]
    assert not compiled_replayable(jobs, BatchConfig(), [1, 1])
    r = replay(jobs, config=BatchConfig(), cores=[1, 1])
    assert r.outcomes[3].start == t + S and r.first_reservation[2] > 9 * 10**18
    near = [Job(id=1, submit=2**63 - 10, hosts=1, pes=1, runtime=20, walltime=20)]
    assert not compiled_replayable(near, BatchConfig(), [1])
    safe = [dataclasses.replace(j, submit=j.submit - 3 * 10**17 + S, walltime=10 * S)
            for j in jobs]
    assert compiled_replayable(safe, BatchConfig(), [1, 1])
    # a priority that is no int64 (a CosimApp header takes any integer): the Python replay,
    # which ranks that job last
    low = [Job(id=1, submit=0, hosts=1, pes=1, runtime=S, walltime=S, priority=-2**63 - 1),
           Job(id=2, submit=0, hosts=1, pes=1, runtime=S, walltime=S)]
    assert not compiled_replayable(low, BatchConfig(), [1])
    r = replay(low, config=BatchConfig(backfill="none"), cores=[1])
    assert (r.outcomes[2].start, r.outcomes[1].start) == (0, S)
    # a run time past int64 once added to its start, though the walltime kills the job
    # first: the kernel adds it all the same
    huge = [Job(id=1, submit=0, hosts=1, pes=1, runtime=2**63 - 1, walltime=4 * S)]
    assert not compiled_replayable(huge, BatchConfig(), [1])
    r = replay(huge, config=BatchConfig(), cores=[1])
    assert (r.outcomes[1].end, r.outcomes[1].status) == (4 * S, "killed")


def test_pe_time_past_int64_is_the_exact_product_rounded_once():
    """A job whose PEs x run time leaves int64 (64 PEs for nine years): the replay's columns
    give its PE-time as `float` of the exact product, as gathered from its outcome."""
    run = 2**58 + 12_345
    jobs = [Job(id=1, submit=0, hosts=1, pes=64, runtime=run, walltime=run)]
    r = replay(jobs, config=BatchConfig(), cores=[64], compiled=True)
    cols = r.make_columns()
    assert cols.pe_ticks.tolist() == [float(64 * run)] == [float(r.outcomes[1].pe_ticks)]


def test_a_priority_that_is_no_integer_is_ranked_as_python_ranks_it():
    """The API takes any number as a priority: the compiled replay, which would truncate it
    to an int64, steps aside, and 0.5 ranks before 0."""
    jobs = [Job(id=1, submit=0, hosts=2, pes=2, runtime=10 * S, walltime=10 * S),
            Job(id=2, submit=S, hosts=2, pes=2, runtime=5 * S, walltime=5 * S),
            Job(id=3, submit=2 * S, hosts=2, pes=2, runtime=5 * S, walltime=5 * S,
                priority=0.5)]
    assert not compiled_replayable(jobs, BatchConfig(), [1, 1])
    r = replay(jobs, config=BatchConfig(), cores=[1, 1])
    assert (r.outcomes[3].start, r.outcomes[2].start) == (10 * S, 15 * S)
    assert compiled_replayable([dataclasses.replace(j, priority=np.int64(0)) for j in jobs],
                               BatchConfig(), [1, 1])


def test_a_priority_key_that_fails_fails_as_in_the_python_replay():
    jobs = sorted(lublin_like(2000, 16, np.random.default_rng(4)), key=lambda j: (j.submit, j.id))
    last = jobs[-1].id

    def key(job: Job) -> tuple[int]:
        if job.id == last:
            raise KeyError("no key")
        return (job.submit,)

    calls = [[], []]
    for k, compiled in enumerate((None, False)):
        with pytest.raises(KeyError, match="no key"):
            replay(jobs, config=BatchConfig(priority_key=key), cores=[1] * 16,
                   compiled=compiled, progress=lambda t, n, out=calls[k]: out.append((t, n)))
    assert calls[0] == calls[1] and calls[0]


def test_the_kernel_checks_what_it_is_given():
    kernel = replay_module._kernel
    one = np.ones(1, dtype=np.int64)
    with pytest.raises(ValueError, match="hosts and PEs"):
        kernel.replay(1, one, one, one, one * 0, one, one, one, 2, True, True, None)
    with pytest.raises(TypeError, match="int64"):
        kernel.replay(1, one.astype(np.float64), one, one, one, one, one, one, 2, True, True,
                      None)
    with pytest.raises(TypeError, match="int64"):
        kernel.replay(2**61, one, one, one, one, one, one, one, 2, True, True, None)
    with pytest.raises(ValueError, match="n must be"):
        kernel.replay(-1, one, one, one, one, one, one, one, 2, True, True, None)


def test_building_the_outcomes_leaves_the_collector_as_it_was(monkeypatch):
    """The outcomes are built without cyclic collection (they hold no cycles); the
    collector is on again after, or still off if the caller had turned it off."""
    import gc

    jobs = [Job(id=1, submit=0, hosts=1, pes=1, runtime=S, walltime=2 * S)]
    seen = []
    real = replay_module._fill
    monkeypatch.setattr(replay_module, "_fill",
                        lambda *args: (seen.append(gc.isenabled()), real(*args)))
    assert gc.isenabled()
    replay(jobs, config=BatchConfig(), cores=[1], compiled=True)
    assert gc.isenabled() and seen == [False]
    gc.disable()
    try:
        replay(jobs, config=BatchConfig(), cores=[1], compiled=True)
        assert not gc.isenabled()
    finally:
        gc.enable()
