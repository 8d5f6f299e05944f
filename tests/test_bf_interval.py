"""Slurm's backfill cadence (``--bf-interval S``): the FCFS part at every event, backfilling
only at multiples of S — golden schedules, the pass schedule, and its option checks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bls import check_schedule, workloads

from cosim import runner
from cosim.bls import BatchConfig, BatchScheduler, simulate_batch
from cosim.errors import InputError
from cosim.workload.jobs import Job

S = 1_000_000_000  # ticks per second


def job(i, submit, hosts, run, wall=None):
    return Job(id=i, submit=submit * S, hosts=hosts, pes=hosts,
               walltime=(run if wall is None else wall) * S, runtime=run * S)


# 4 hosts. J1 (2 hosts) runs [0, 100). J2 (4 hosts) is the head from 0: shadow time 100, no
# extra host. J3 (1 host, 20 s) comes at 10 and J4 (1 host, 20 s) at 35: both end before the
# shadow, so EASY backfills them at once (10, 35); with a 30 s interval the FCFS part at 10
# and 35 starts nothing (the head does not fit) and asks for a backfill pass at 30 and 60,
# where they start. J5 (1 host, 50 s) comes at 61: it would end past the shadow and there is
# no extra host, so it never backfills; J2 starts at J1's end, 100 — not a multiple of 30:
# the FCFS part starts it — and J5 at J2's end, 150.
JOBS = [job(1, 0, 2, 100), job(2, 0, 4, 50), job(3, 10, 1, 20), job(4, 35, 1, 20),
        job(5, 61, 1, 50)]


def starts(res):
    return {o.job.id: None if o.start is None else o.start / S for o in res.outcomes}


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_golden_backfilling_waits_for_the_interval(backfill):
    every = simulate_batch(JOBS, n_hosts=4, config=BatchConfig(backfill=backfill))
    assert starts(every) == {1: 0, 2: 100, 3: 10, 4: 35, 5: 150}
    spaced = simulate_batch(JOBS, n_hosts=4,
                            config=BatchConfig(backfill=backfill, bf_interval=30 * S))
    assert starts(spaced) == {1: 0, 2: 100, 3: 30, 4: 60, 5: 150}


def test_the_pass_schedule_fcfs_at_every_event_backfill_on_multiples(monkeypatch):
    """Which kind of pass runs when: the backfill policy only at multiples of 30 s (asked for
    by a FCFS part that left jobs queued), the FCFS part at every other pass."""
    log = []

    class Recording(BatchScheduler):
        def __init__(self, **kw):
            super().__init__(**kw)
            full, fcfs = self._plan, self._fcfs_plan
            self._plan = lambda v: (log.append(("backfill", v.now / S)), full(v))[1]
            self._fcfs_plan = lambda v: (log.append(("fcfs", v.now / S)), fcfs(v))[1]

    # (where `simulate` imports it from when rounds run)
    monkeypatch.setattr("cosim.bls.scheduler.BatchScheduler", Recording)
    # the round loop's scheduler (the trace replay makes the same passes: tests/test_replay.py)
    runner.simulate(JOBS, n_hosts=4, batch=BatchConfig(backfill="easy", bf_interval=30 * S),
                    replay=False)
    # 10, 35, 61: submissions; 50, 80: J3 and J4 end; 100: J1 ends (J2 starts, J5 stays
    # queued: a backfill pass at 120 finds nothing to backfill); 150: J2 ends, a multiple
    assert log == [("backfill", 0), ("fcfs", 10), ("backfill", 30), ("fcfs", 35),
                   ("fcfs", 50), ("backfill", 60), ("fcfs", 61), ("fcfs", 80),
                   ("backfill", 90), ("fcfs", 100), ("backfill", 120), ("backfill", 150)]
    assert all(t % 30 == 0 for kind, t in log if kind == "backfill")
    assert all(t % 30 for kind, t in log if kind == "fcfs")


def test_without_an_interval_every_pass_is_a_backfill_pass(monkeypatch):
    log = []

    class Recording(BatchScheduler):
        def __init__(self, **kw):
            super().__init__(**kw)
            full, fcfs = self._plan, self._fcfs_plan
            self._plan = lambda v: (log.append("backfill"), full(v))[1]
            self._fcfs_plan = lambda v: (log.append("fcfs"), fcfs(v))[1]

    # (where `simulate` imports it from when rounds run)
    monkeypatch.setattr("cosim.bls.scheduler.BatchScheduler", Recording)
    # the round loop's scheduler (the trace replay has no FCFS part: it takes no interval)
    runner.simulate(JOBS, n_hosts=4, batch=BatchConfig(backfill="easy"), replay=False)
    assert log and set(log) == {"backfill"}


def test_priority_jobs_still_drain_between_backfill_passes():
    """A full-machine priority job (ESP's Z) at the head: the FCFS part stops at it, and the
    backfill pass lets nothing past it that would delay it."""
    z = Job(id=3, submit=10 * S, hosts=4, pes=4, walltime=10 * S, runtime=10 * S, priority=1)
    jobs = [job(1, 0, 2, 100), job(2, 0, 2, 40), z, job(4, 20, 2, 200)]
    res = simulate_batch(jobs, n_hosts=4, config=BatchConfig(backfill="easy",
                                                                 bf_interval=30 * S))
    assert starts(res) == {1: 0, 2: 0, 3: 100, 4: 110}


def test_bad_intervals_are_input_errors(tmp_path, capsys):
    from cosim.cli import main

    with pytest.raises(InputError, match="bf-interval"):
        BatchConfig(bf_interval=-1)
    with pytest.raises(InputError, match="replaces backfilling"):
        BatchConfig(bf_interval=S, malleable="sd")
    swf = tmp_path / "w.swf"
    swf.write_text("1 0 -1 100 2 -1 -1 2 100 -1 1 1 1 -1 -1 -1 -1 -1\n")
    for args, needle in ((["--bf-interval", "-5"], "field bf-interval: the backfill interval "
                                                   "must be >= 0 seconds"),
                         (["--bf-interval", "45", "--quantum", "30"],
                          "field bf-interval: the backfill interval (45 s) must be a multiple"),
                         (["--bf-interval", "nan"], "field bf-interval: must be a finite")):
        code = main(["run", "--workload", str(swf), "--hosts", "4", "--out",
                     str(tmp_path / "o"), *args])
        err = capsys.readouterr().err
        assert code == 2 and needle in err, err
    code = main(["run", "--workload", str(swf), "--hosts", "4", "--out", str(tmp_path / "o"),
                 "--bf-interval", "60", "--quantum", "30", "--json"])
    out = capsys.readouterr().out
    assert code == 0 and '"bf_interval_s": 60.0' in out


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative"])
@settings(max_examples=30, deadline=None)
@given(data=workloads(), interval_s=st.sampled_from([1, 7, 30, 600]))
def test_invariants_with_an_interval(backfill, data, interval_s):
    """Random workloads: the schedule stays valid (no host over-booked, every job once);
    without backfilling the interval changes nothing; an interval of one tick is every
    pass a backfill pass, the schedule without an interval."""
    n_hosts, jobs = data
    cfg = BatchConfig(backfill=backfill, bf_interval=interval_s * S)
    spaced = simulate_batch(jobs, n_hosts=n_hosts, config=cfg)
    check_schedule(jobs, n_hosts, cfg, spaced)
    every = simulate_batch(jobs, n_hosts=n_hosts, config=BatchConfig(backfill=backfill))
    if backfill == "none":
        assert starts(spaced) == starts(every)
    tick = simulate_batch(jobs, n_hosts=n_hosts, config=BatchConfig(backfill=backfill,
                                                                     bf_interval=1))
    assert starts(tick) == starts(every)
