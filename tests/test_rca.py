"""RCA yield at the batch level: scenarios checked by hand, accounting, and invariants.

A scripted ALS (`ScriptedApps`) plays the apps: like `RigidApps` it answers `StartApp` with
`AppStarted` and `AppCompleted(t + runtime)`, and it also reports `HostsYielded` at given
delays after the start, for given positions in the job's host tuple. `drive` runs the
scheduler with it exactly as `simulate_batch` (and the co-simulation runner) do.
"""

from __future__ import annotations

import csv
import itertools
import random
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.bls import BatchConfig, BatchScheduler, simulate_batch
from cosim.bls.state import ClusterState
from cosim.core.engine import EventQueue
from cosim.errors import ProtocolError
from cosim.output.metrics import loss_of_capacity, summary, utilization
from cosim.output.runfiles import write_jobs_csv
from cosim.protocol.messages import (
    AppCompleted,
    AppStarted,
    HostsYielded,
    KillApp,
    StartApp,
)
from cosim.workload.jobs import Job

S = 1_000_000_000  # ticks per second: scenarios are written in seconds


def job(i, submit, hosts, run, wall=None, **kw):
    """A job with times in seconds (walltime defaults to the run time)."""
    return Job(id=i, submit=submit * S, hosts=hosts, pes=hosts,
               walltime=(run if wall is None else wall) * S, runtime=run * S, **kw)


class ScriptedApps:
    """Rigid apps that yield: ``yields[job id] = [(delay after start, positions), ...]``.

    A position is an index into the job's host tuple; each fact reports the hosts at those
    positions (ascending). Facts come out in `Fact.key` order; a kill drops what is pending.
    """

    def __init__(self, runtimes, yields):
        self._runtimes = runtimes
        self._yields = yields
        self._events = EventQueue()
        self._pending = defaultdict(list)
        self._clock = 0

    def apply(self, commands):
        for cmd in commands:
            t, jid = cmd.time, cmd.job_id
            assert t >= self._clock
            if isinstance(cmd, StartApp):
                assert cmd.hosts == tuple(sorted(set(cmd.hosts)))
                self._events.push(t, AppStarted(time=t, job_id=jid),
                                  priority=AppStarted.ORDER, key=(jid,))
                end = t + self._runtimes[jid]
                self._pending[jid].append(self._events.push(
                    end, AppCompleted(time=end, job_id=jid), priority=AppCompleted.ORDER,
                    key=(jid,)))
                for delay, positions in self._yields.get(jid, ()):
                    if delay > self._runtimes[jid]:
                        continue  # the app ends first
                    hosts = tuple(sorted(cmd.hosts[p] for p in positions))
                    self._pending[jid].append(self._events.push(
                        t + delay, HostsYielded(time=t + delay, job_id=jid, hosts=hosts),
                        priority=HostsYielded.ORDER, key=(jid,)))
            else:
                assert isinstance(cmd, KillApp)
                for handle in self._pending.pop(jid):
                    self._events.cancel(handle)
                self._events.push(t, AppCompleted(time=t, job_id=jid, status="killed"),
                                  priority=AppCompleted.ORDER, key=(jid,))

    def promise(self):
        return self._events.peek_time()

    def advance(self, until):
        self._clock = until
        facts = [f for _, f in self._events.pop_until(until)]
        assert [f.key for f in facts] == sorted(f.key for f in facts)
        return facts


def check_state(state):
    """Counters agree with the arrays; free hosts + hosts freed at the ends = the machine."""
    free = state.free_mask()
    owner, user = state.owner, state.user
    assert state.free_hosts == int(free.sum()) == int((user < 0).sum())
    assert state.lendable == int(((owner >= 0) & (user < 0)).sum())
    assert state.free_hosts + sum(h for _, _, h, _ in state.running_ends()) == state.n_hosts
    assert set(owner[owner >= 0].tolist()) <= set(state.running)
    assert set(user[user >= 0].tolist()) == {j for j, a in state.running.items()
                                             if any(user[h] == j for h in a.hosts)}


def drive(jobs, n_hosts, config, yields, cores=1, check=False):
    """Run the scheduler with scripted apps, as `simulate_batch` does; returns the scheduler."""
    order = sorted(jobs, key=lambda j: (j.submit, j.id))
    sched = BatchScheduler(cores=[cores] * n_hosts, config=config)
    apps = ScriptedApps({j.id: j.runtime for j in order}, yields)
    i, n = 0, len(order)
    while True:
        t = order[i].submit if i < n else None
        for other in (sched.next_timer(), apps.promise()):
            if other is not None and (t is None or other < t):
                t = other
        if t is None:
            break
        sched.handle(apps.advance(t))
        commands = sched.expire(t)
        j = i
        while j < n and order[j].submit == t:
            j += 1
        if j > i:
            sched.submit(order[i:j], t)
            i = j
        commands = sorted(commands + sched.schedule(t), key=lambda c: c.job_id)
        if commands:
            apps.apply(commands)
        if check:
            check_state(sched.state)
    assert sched.idle
    return sched


def outcomes(sched):
    return tuple(sched.outcomes[k] for k in sorted(sched.outcomes))


def cfg(rca, backfill="easy", **kw):
    return BatchConfig(backfill=backfill, rca=rca, **kw)


def secs(pairs):
    return tuple((h, t / S) for h, t in pairs)


# -- scenarios by hand ------------------------------------------------------------------------

# 4 hosts. A (job 1) holds all 4 on [0, 100) and reports hosts 2 and 3 out of work at 30.
# B (job 2, 2 hosts, 20 s) arrives at 10. RCA on: B starts at 30 on the yielded hosts 2-3
# (borrowed from A) and ends at 50; A is busy 4 x 100 - 2 x (100 - 30) = 260 host-s (hosts 2-3
# idle after their yield at 30), B 40: U = 300 / (4 x 100) = 0.75. RCA off: B waits for A's
# end, [100, 120) on hosts 0-1; A is still busy only 260 host-s (the idle tail of its yielded
# hosts is not computing), B 40: U = 300 / (4 x 120).
YIELD_A = [job(1, 0, 4, 100), job(2, 10, 2, 20)]
YIELDS_A = {1: [(30 * S, (2, 3))]}


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative"])
def test_a_yield_lets_a_queued_job_start(backfill):
    on = drive(YIELD_A, 4, cfg(True, backfill), YIELDS_A)
    a, b = outcomes(on)
    assert (b.start, b.end, b.hosts) == (30 * S, 50 * S, (2, 3))
    assert b.borrowed == ((2, 1), (3, 1)) and b.yielded == () and b.lent == ()
    assert (a.start, a.end, a.hosts) == (0, 100 * S, (0, 1, 2, 3))
    assert secs(a.yielded) == ((2, 30), (3, 30)) and secs(a.lent) == ((2, 30), (3, 30))
    assert a.borrowed == ()
    assert utilization(outcomes(on), 4) == pytest.approx(0.75)
    assert on.yields == 2 and on.state.lendable == 0 and on.state.free_hosts == 4

    off = drive(YIELD_A, 4, cfg(False, backfill), YIELDS_A)
    a, b = outcomes(off)
    assert (b.start, b.end, b.hosts) == (100 * S, 120 * S, (0, 1))
    assert secs(a.yielded) == ((2, 30), (3, 30)) and a.lent == () and b.borrowed == ()
    assert utilization(outcomes(off), 4) == pytest.approx(300 / 480)
    # rca off is the classical schedule: the same as without any yield
    plain = simulate_batch(YIELD_A, n_hosts=4, config=cfg(False, backfill)).outcomes
    assert [(o.start, o.end, o.hosts) for o in plain] == [(o.start, o.end, o.hosts)
                                                          for o in outcomes(off)]


# 4 hosts, EASY. A (job 1) holds hosts 0-2 on [0, 100) and yields host 2 at 20; X (job 2)
# holds host 3 on [0, 50). H (job 3, 4 hosts, 10 s) is the head from 5: shadow 100, no extra
# host. S (job 4, 1 host, 30 s) and L (job 5, 1 host, 200 s) arrive at 10.
#  * RCA on: at 20 host 2 is lendable; S ends at 50 <= 100 and backfills at 20 on it; L would
#    end after the shadow time: it waits. S ends at 50 before A: host 2 is lendable again,
#    and T (job 6, 1 host, 20 s, arrives at 60) backfills on it (first-fit: 2 before 3), ends
#    at 80. At 100 A ends, H runs [100, 110), then L [110, 310) on host 0.
#  * RCA off: S backfills only when X frees host 3 at 50 (ends at 80 <= 100); T waits for
#    host 3 after S: [80, 100); H [100, 110), L [110, 310).
# Host-time once (RCA on): host 0: A 100 + H 10 + L 200; host 1: A 100 + H 10; host 2: A 20
# (lent at 20) + S 30 + T 20 + H 10; host 3: X 50 + H 10 — 560 host-s over 4 x 310.
EASY_JOBS = [job(1, 0, 3, 100), job(2, 0, 1, 50), job(3, 5, 4, 10), job(4, 10, 1, 30),
             job(5, 10, 1, 200), job(6, 60, 1, 20)]
EASY_YIELDS = {1: [(20 * S, (2,))]}


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_backfilling_onto_lendable_hosts(backfill):
    sched = drive(EASY_JOBS, 4, cfg(True, backfill), EASY_YIELDS)
    out = sched.outcomes
    got = {k: (o.start / S, o.end / S, o.hosts) for k, o in out.items()}
    assert got == {1: (0, 100, (0, 1, 2)), 2: (0, 50, (3,)), 3: (100, 110, (0, 1, 2, 3)),
                   4: (20, 50, (2,)), 5: (110, 310, (0,)), 6: (60, 80, (2,))}
    assert out[4].borrowed == ((2, 1),) and out[6].borrowed == ((2, 1),)
    assert secs(out[1].lent) == ((2, 20),)  # the first lend only
    assert secs(out[1].yielded) == ((2, 20),)
    assert all(out[k].borrowed == () for k in (1, 2, 3, 5))
    assert utilization(outcomes(sched), 4) == pytest.approx(560 / 1240)
    s = summary(outcomes(sched), 4)
    assert (s["yields"], s["lends"]) == (1, 1)

    off = drive(EASY_JOBS, 4, cfg(False, backfill), EASY_YIELDS).outcomes
    assert {k: (o.start / S, o.hosts) for k, o in off.items()} == {
        1: (0, (0, 1, 2)), 2: (0, (3,)), 3: (100, (0, 1, 2, 3)), 4: (50, (3,)),
        5: (110, (0,)), 6: (80, (3,))}
    assert summary(tuple(off.values()), 4)["lends"] == 0


def test_lent_host_returns_to_free_when_the_owner_ends():
    # 2 hosts. A (job 1) holds 0-1 on [0, 50) and yields host 1 at 10. B (job 2, 1 host,
    # 100 s) arrives at 5 and borrows host 1 at 10. C (job 3, 2 hosts) arrives at 20. At 50
    # A ends: host 0 is free, host 1 stays B's (its ownership returns to the system), so C
    # waits for B's end at 110 and gets both as plain free hosts (nothing borrowed).
    jobs = [job(1, 0, 2, 50), job(2, 5, 1, 100), job(3, 20, 2, 10)]
    sched = drive(jobs, 2, cfg(True), {1: [(10 * S, (1,))]})
    out = sched.outcomes
    assert (out[2].start, out[2].end, out[2].hosts, out[2].borrowed) == (10 * S, 110 * S, (1,),
                                                                         ((1, 1),))
    assert (out[3].start, out[3].hosts, out[3].borrowed) == (110 * S, (0, 1), ())
    assert secs(out[1].lent) == ((1, 10),)
    # A charged 2 x 50 - (50 - 10); B 100; C 20: 180 host-s over 2 x 120
    assert utilization(outcomes(sched), 2) == pytest.approx(180 / 240)
    # loss of capacity: C waits on [20, 110) and host 0 is idle on [50, 110); the first
    # submission is at 0 and the last end at 120
    assert loss_of_capacity(outcomes(sched), 2) == pytest.approx(60 / 240)


def test_ownership_and_use_step_by_step():
    st_ = ClusterState([2, 2, 2])
    a, b, c = job(1, 0, 2, 50), job(2, 0, 2, 10), job(3, 0, 1, 10)
    st_.allocate(a, np.array([0, 1]), 0)
    assert st_.yield_hosts(1, (1,), 5, lend=True) == 1
    assert st_.owner.tolist() == [1, 1, -1] and st_.user.tolist() == [1, -1, -1]
    assert st_.free_mask().tolist() == [False, True, True] and st_.free_hosts == 2
    assert st_.lendable == 1 and st_.running_ends() == ((50 * S, 1, 1, 0),)
    st_.allocate(b, np.array([1, 2]), 7)  # borrows host 1, owns host 2
    assert st_.owner.tolist() == [1, 1, 2] and st_.user.tolist() == [1, 2, 2]
    assert st_.lendable == 0 and st_.used_pes.tolist() == [1, 1, 1]
    acct = st_.release(2).acct  # B ends before A: host 1 is lendable again, host 2 plain free
    assert acct.borrowed == ((1, 1),)
    assert st_.owner.tolist() == [1, 1, -1] and st_.user.tolist() == [1, -1, -1]
    assert st_.lendable == 1 and st_.free_hosts == 2
    st_.allocate(c, np.array([1]), 9)
    acct = st_.release(1).acct  # A ends: host 0 freed, host 1 stays C's, owned by nobody
    assert acct.lent == ((1, 7),) and acct.yielded == ((1, 5),)  # first lend only
    assert st_.owner.tolist() == [-1, -1, -1] and st_.user.tolist() == [-1, 3, -1]
    assert st_.lendable == 0 and st_.free_hosts == 2
    acct = st_.release(3).acct
    assert acct.borrowed == ((1, 1),)
    assert st_.free_hosts == 3 and st_.running_ends() == () and st_.lendable == 0


def test_a_borrowed_host_is_not_lent_on():
    # B borrows host 1 from A, then reports it out of work: recorded, but B keeps it (its
    # accounting covers its whole run), so nothing else may start on it.
    st_ = ClusterState([1, 1])
    st_.allocate(job(1, 0, 2, 50), np.array([0, 1]), 0)
    st_.yield_hosts(1, (1,), 1, lend=True)
    st_.allocate(job(2, 0, 1, 10), np.array([1]), 2)
    assert st_.yield_hosts(2, (1,), 3, lend=True) == 0
    assert st_.user.tolist() == [1, 2] and st_.free_hosts == 0
    acct = st_.release(2).acct
    assert acct.yielded == ((1, 3),) and acct.borrowed == ((1, 1),)
    assert st_.lendable == 1 and st_.free_mask().tolist() == [False, True]


def test_yield_rules_and_errors():
    sched = BatchScheduler(cores=[1] * 3, config=cfg(True))
    sched.submit([job(1, 0, 2, 50, 10), job(2, 0, 1, 5)], 0)
    sched.schedule(0)
    with pytest.raises(ProtocolError, match="does not hold"):
        sched.handle([HostsYielded(time=1, job_id=1, hosts=(1, 2))])  # 2 is job 2's host
    with pytest.raises(ProtocolError, match="not running"):
        sched.handle([HostsYielded(time=1, job_id=7, hosts=(0,))])
    sched.handle([HostsYielded(time=1, job_id=1, hosts=(1,))])  # nothing applied above
    assert sched.state.free_mask().tolist() == [False, True, False]
    with pytest.raises(ProtocolError, match="twice"):
        sched.handle([HostsYielded(time=2, job_id=1, hosts=(1,))])
    # a completed job's late yield and a killed job's yield are ignored
    sched.handle([AppCompleted(time=5 * S, job_id=2), HostsYielded(time=5 * S, job_id=2,
                                                                   hosts=(2,))])
    assert sched.expire(10 * S) == [KillApp(time=10 * S, job_id=1)]
    sched.handle([HostsYielded(time=10 * S, job_id=1, hosts=(0,))])
    assert sched.ignored_yields == 2
    assert sched.outcomes[1].yielded == ((1, 1),) and sched.outcomes[2].yielded == ()
    assert sched.state.free_hosts == 3 and sched.state.lendable == 0


def test_a_yield_at_the_end_is_ignored_and_one_at_a_kill_counts():
    # job 1 completes at 10 and "yields" at 10: the completion comes first. Job 2 (runs 30,
    # walltime 20) yields at 20 = its kill time: facts are handled before the kill.
    jobs = [job(1, 0, 1, 10), job(2, 0, 2, 30, 20)]
    sched = drive(jobs, 3, cfg(True), {1: [(10 * S, (0,))], 2: [(20 * S, (0,))]})
    assert sched.outcomes[1].yielded == () and sched.ignored_yields == 1
    assert secs(sched.outcomes[2].yielded) == ((1, 20),)
    assert sched.outcomes[2].status == "killed"


def test_a_yield_at_the_start_instant_triggers_a_pass_then():
    # the app of job 1 has no work on host 1 at all: it yields it at its start instant, and
    # job 2 starts on it at that same instant (a second pass at t = 0)
    jobs = [job(1, 0, 2, 10), job(2, 0, 1, 5)]
    out = drive(jobs, 2, cfg(True), {1: [(0, (1,))]}).outcomes
    assert (out[2].start, out[2].hosts, out[2].borrowed) == (0, (1,), ((1, 1),))
    assert out[1].lent == ((1, 0),)


def test_start_app_carries_the_app_and_its_parameters():
    sched = BatchScheduler(cores=[1], config=BatchConfig())
    j = Job(id=1, submit=0, hosts=1, pes=1, walltime=S, runtime=S, app="mandelbrot",
            app_params={"width": "64", "max_iter": "100"})
    sched.submit([j], 0)
    # the command also announces the walltime kill (start + walltime), so the ALS never
    # simulates the app past it; with walltime kill off there is no limit
    assert sched.schedule(0) == [StartApp(time=0, job_id=1, hosts=(0,), pes=1, app="mandelbrot",
                                          params=(("max_iter", "100"), ("width", "64")),
                                          limit=S)]
    off = BatchScheduler(cores=[1], config=BatchConfig(walltime_kill=False))
    off.submit([j], 0)
    assert off.schedule(0)[0].limit is None


def test_jobs_csv_shows_owner_and_user(tmp_path):
    sched = drive(YIELD_A, 4, cfg(True), {1: [(int(30.5 * S), (2, 3))]})
    write_jobs_csv(tmp_path / "jobs.csv", outcomes(sched))
    rows = {r["job_id"]: r for r in csv.DictReader((tmp_path / "jobs.csv").open())}
    assert (rows["1"]["yielded"], rows["1"]["lent"], rows["1"]["borrowed"]) == (
        "2@30.5 3@30.5", "2@30.5 3@30.5", "")
    assert (rows["2"]["yielded"], rows["2"]["lent"], rows["2"]["borrowed"]) == ("", "", "2@1 3@1")
    assert rows["2"]["host_list"] == "2-3"


# -- invariants over random workloads with random yields --------------------------------------

@st.composite
def scripted(draw):
    n_hosts = draw(st.integers(1, 6))
    n = draw(st.integers(1, 14))
    jobs, yields = [], {}
    for i in range(n):
        runtime = draw(st.integers(0, 30))
        hosts = draw(st.integers(1, n_hosts))
        jobs.append(Job(id=3 * i + draw(st.integers(0, 2)), submit=draw(st.integers(0, 40)),
                        hosts=hosts, pes=hosts, runtime=runtime,
                        walltime=draw(st.sampled_from([runtime, runtime + 5,
                                                       max(runtime - 3, 0)])),
                        priority=1 if draw(st.integers(0, 12)) == 0 else 0))
        at: dict[int, list[int]] = {}
        for p in range(hosts):
            d = draw(st.one_of(st.none(), st.integers(0, runtime + 1)))
            if d is not None:
                at.setdefault(d, []).append(p)
        yields[jobs[-1].id] = sorted((d, tuple(ps)) for d, ps in at.items())
    return n_hosts, jobs, yields


def expected_yields(o, script):
    """The yields the scheduler must record: before the end, or at a kill (facts come first)."""
    got = []
    for d, ps in script:
        t = o.start + d
        if t < o.end or (t == o.end and o.status == "killed"):
            got += [(o.hosts[p], t) for p in ps]
    return tuple(sorted(got, key=lambda r: (r[1], r[0])))


def check_rca(jobs, n_hosts, config, yields, sched):
    outs = outcomes(sched)
    by_id = {o.job.id: o for o in outs}
    assert sorted(by_id) == sorted(j.id for j in jobs)  # every job accounted for, once
    use = defaultdict(list)  # host -> [(from, to, job)] while the job's PEs run there
    acct = defaultdict(list)  # host -> [(from, to, job)] while a job is charged for it
    for o in outs:
        j = o.job
        assert o.start >= j.submit
        killed = config.walltime_kill and j.runtime > j.walltime
        assert o.status == ("killed" if killed else "completed")
        assert o.end - o.start == (j.walltime if killed else j.runtime)
        assert len(o.hosts) == j.hosts and list(o.hosts) == sorted(set(o.hosts))
        assert o.yielded == expected_yields(o, yields.get(j.id, ()))
        borrowed = dict(o.borrowed)
        yielded = dict(o.yielded)
        lent = dict(o.lent)
        assert set(lent) <= set(yielded) and set(borrowed) <= set(o.hosts)
        if not config.rca:
            assert not o.lent and not o.borrowed
        for h in o.hosts:
            stop = yielded[h] if config.rca and h in yielded and h not in borrowed else o.end
            use[h].append((o.start, stop, j.id))
            # busy (utilization): until the host's yield, if any, else the job's end
            acct[h].append((o.start, min(yielded.get(h, o.end), o.end), j.id))
        for h, a in o.borrowed:  # lent only after the owner's yield, while the owner runs
            owner = by_id[a]
            assert a != j.id and h in owner.hosts and h not in dict(owner.borrowed)
            assert owner.start <= dict(owner.yielded)[h] <= o.start < owner.end
        for h, t in o.lent:  # the first lend is the earliest borrower's start
            firsts = [b.start for b in outs if (h, j.id) in b.borrowed]
            assert firsts and t == min(firsts)
    for table in (use, acct):  # no host used (or charged) by two jobs at once
        for h, spans in table.items():
            spans.sort()
            for (_, b, x), (c, _, y) in itertools.pairwise(spans):
                assert c >= b, (h, x, y)
    if outs:  # utilization is exactly the busy host-time, each host-time once
        span = max(o.end for o in outs) - min(o.start for o in outs)
        if span > 0:
            charged = sum(b - a for spans in acct.values() for a, b, _ in spans)
            assert utilization(outs, n_hosts) == pytest.approx(charged / (n_hosts * span))
            assert utilization(outs, n_hosts) <= 1 + 1e-12
            assert 0 <= loss_of_capacity(outs, n_hosts) <= 1 + 1e-12


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative"])
@pytest.mark.parametrize("selection, kill", [("first-fit", True), ("best-fit", False)])
@settings(max_examples=30, deadline=None)
@given(data=scripted())
def test_invariants_with_random_yields(backfill, selection, kill, data):
    n_hosts, jobs, yields = data
    plain = simulate_batch(jobs, n_hosts=n_hosts, config=cfg(False, backfill,
                                                           selection=selection,
                                                           walltime_kill=kill))
    classic = [(o.start, o.end, o.hosts, o.status) for o in plain.outcomes]
    for rca in (False, True):
        config = cfg(rca, backfill, selection=selection, walltime_kill=kill)
        sched = drive(jobs, n_hosts, config, yields, check=True)
        check_rca(jobs, n_hosts, config, yields, sched)
        if kill and backfill != "none" and all(j.priority == 0 for j in jobs):
            # yields only free hosts earlier: nobody starts after its first reservation
            for jid, t in sched.first_reservation.items():
                assert sched.outcomes[jid].start <= t, (jid, t)
        got = [(o.start, o.end, o.hosts, o.status) for o in outcomes(sched)]
        if not rca:  # yields are only recorded: exactly the classical schedule
            assert got == classic
            assert sched.passes == plain.stats.passes
        # deterministic whatever the order of the input
        shuffled = list(jobs)
        random.Random(len(jobs)).shuffle(shuffled)
        assert outcomes(drive(shuffled, n_hosts, config, yields)) == outcomes(sched)
    # RCA on without any yield is the classical schedule too
    quiet = drive(jobs, n_hosts, cfg(True, backfill, selection=selection, walltime_kill=kill),
                  {})
    assert [(o.start, o.end, o.hosts, o.status) for o in outcomes(quiet)] == classic
