"""Running apps ahead while a rank waits (`AppSimulator.speculate`, `MpiAls`' waits).

What a rank does between rounds changes when work is done, never a result; these tests pin
what it does: the app furthest behind in simulated time goes first (a grant must bring every
app to it, so the laggard is what a round would wait for), then, with nothing left to run
ahead, the cost arrays of the workload's coming apps are prepared — within the cache's budget,
leaving a bad parameter to the start that reports it. Rank 0 runs its own apps ahead while it
waits for the ALS ranks' answers, and an error there is raised only once every answer is in.
The 1/2/3-rank identity of whole runs is tests/test_mpi.py's.
"""

from __future__ import annotations

import pytest

from cosim.als import manager
from cosim.als.manager import AlsConfig, AppSimulator
from cosim.als.techniques import get
from cosim.core.indexset import IndexSet
from cosim.errors import InputError
from cosim.platform import load_platform
from cosim.protocol.messages import (
    ExcludeHosts, ExpandApp, HostsExcluded, KillApp, ShrinkApp, StartApp,
)

PLATFORM = load_platform("tiny8x2")  # 8 hosts x 2 cores, 1 GF
N = 400  # iterations of the uniform profile


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COSIM_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def uniform(uniform_profile):
    return {"file": uniform_profile}  # 400 iterations of 1e7 FLOP (tests/conftest.py)


def simulator(upcoming=()):
    return AppSimulator(platform=PLATFORM, config=AlsConfig(technique=get("SS"), record=True),
                        bounds=True, upcoming=upcoming)


def drain(sim):
    """Every fact left, advancing from promise (a lower bound here) to promise."""
    facts = []
    while (p := sim.promise()) is not None:
        facts += sim.advance(p)
    return facts


def start(job_id, params, *, time=0, hosts=(0, 1), pes=4):
    return StartApp(time=time, job_id=job_id, hosts=hosts, pes=pes, app="profile",
                    params=tuple(sorted(params.items())), pe_set=IndexSet.of(()))


def test_the_app_furthest_behind_runs_ahead_first(uniform):
    sim = simulator()
    # job 1 on 2 PEs, job 2 on 8: job 2's chunks come faster, so a run-ahead that always
    # took the lower job id (or the app with most left) would leave one far behind
    sim.apply([start(1, {**uniform, "total_flop": "4e9"}, pes=2, hosts=(0,)),
               start(2, {**uniform, "total_flop": "4e9"}, pes=8, hosts=(2, 3, 4, 5))])
    first = sim.advance(0)
    apps = sim._apps
    steps = 0
    while True:
        ticks = {jid: a.run.next_tick() for jid, a in apps.items()
                 if not a.ended and a.run.next_tick() is not None
                 and a.run.next_tick() < min(a.kill_at, a.limit)}
        behind = min(ticks, key=lambda j: (ticks[j], j)) if ticks else None
        before = {jid: a.run._n_chunks for jid, a in apps.items()}
        if not sim.speculate(5):
            assert behind is None
            break
        moved = [jid for jid, a in apps.items() if a.run._n_chunks != before[jid]]
        assert moved == [behind], (steps, ticks)
        steps += 1
    assert steps > 20
    # and the run's facts are those of a run that never ran ahead
    lazy = simulator()
    lazy.apply([start(1, {**uniform, "total_flop": "4e9"}, pes=2, hosts=(0,)),
                start(2, {**uniform, "total_flop": "4e9"}, pes=8, hosts=(2, 3, 4, 5))])
    assert first + drain(sim) == lazy.advance(0) + drain(lazy)


def test_with_nothing_to_run_ahead_the_coming_apps_costs_are_prepared(uniform):
    coming = [("profile", {**uniform, "total_flop": "1e9"}),
              ("profile", {**uniform, "total_flop": "1e9"}),  # the same: prepared once
              ("profile", {**uniform, "total_flop": "2e9"}),
              ("profile", {**uniform, "total_flop": "-3"}),  # bad: left to its start
              ("profile", {**uniform, "total_flop": "4e9"})]  # (after it: nothing more)
    sim = simulator(coming)
    assert not sim.speculate() and not sim._scaled  # no app loaded here yet: nothing to do
    sim = simulator(coming)
    sim.apply([start(1, {**uniform, "total_flop": "5e9"})])
    first = sim.advance(0)
    assert sim.speculate() and len(sim._scaled) == 1  # the started app runs ahead first
    facts = first + drain(sim)
    assert facts[-1].job_id == 1 and facts[-1].status == "completed"
    calls = 0
    while sim.speculate():
        calls += 1
    assert calls == 2  # 1e9 and 2e9; the bad size stops it
    assert sorted(k[-1] for k in sim._scaled) == ["1e9", "2e9", "5e9"]
    prepared = dict(sim._scaled)
    sim.apply([start(7, {**uniform, "total_flop": "2e9"}, time=facts[-1].time)])
    assert sim._apps[7].run.costs is prepared[next(k for k in prepared if k[-1] == "2e9")]
    with pytest.raises(InputError, match="total_flop"):
        sim.apply([start(8, {**uniform, "total_flop": "-3"}, time=facts[-1].time)])


def test_preparing_stops_at_the_cache_budget(uniform, monkeypatch):
    monkeypatch.setattr(manager, "SCALED_COSTS_BUDGET", 2 * N)
    coming = [("profile", {**uniform, "total_flop": f"{k}e9"}) for k in range(2, 6)]
    sim = simulator(coming)
    sim.apply([start(1, {**uniform, "total_flop": "1e9"})])
    drain(sim)
    calls = 0
    while sim.speculate():
        calls += 1
    # the started app's size and one more fit; a third would pass the budget
    assert calls == 1 and len(sim._scaled) == 2 and sim._scaled_n == 2 * N
    assert not sim.speculate()  # and it does not try again


# -- rank 0 runs its own apps ahead while it waits ---------------------------------------------

class _Comm:
    """Rank 0's side of a 2-rank world: rank 1 answers each message after `delay` polls."""

    size, rank = 2, 0

    def __init__(self, log, delay, stop_answer=None):
        from cosim.transport.base import PROTOCOL_VERSION, AlsTotals, Kind, Reply
        from cosim.transport.wire import decode, encode

        self._answer = lambda kind: encode(Reply(version=PROTOCOL_VERSION) if kind == Kind.HELLO
                                           else (stop_answer or AlsTotals())
                                           if kind == Kind.STOP else Reply(promise=None))
        self._decode = decode
        self.log, self.delay, self.inbox, self.polls = log, delay, [], 0

    def send(self, obj, dest, tag):
        self.inbox.append(self._answer(self._decode(obj).kind))
        self.polls = 0

    def Iprobe(self, source, tag):  # noqa: N802 - mpi4py's name
        self.polls += 1
        return bool(self.inbox) and self.polls > self.delay

    def recv(self, source, tag):
        self.log.append("answer")
        return self.inbox.pop(0)


class _Local:
    """A local endpoint that records its run-ahead slices (failing at slice `fail_at`)."""

    def __init__(self, log, name, fail_at=None):
        self.log, self.name, self.fail_at, self.slices = log, name, fail_at, 0

    def apply(self, commands):
        pass

    def advance(self, grant):
        return []

    def promise(self):
        return None

    def totals(self):
        from cosim.transport.base import AlsTotals

        return AlsTotals(chunk_events=self.slices + 3)

    def speculate(self):
        self.slices += 1
        self.log.append(self.name)
        if self.slices == self.fail_at:
            raise ValueError("boom")
        return True


@pytest.fixture
def mpi_als(monkeypatch):
    mpi4py = pytest.importorskip("mpi4py", reason="mpi4py is a core dependency; not installed")
    if "mpi4py.MPI" not in __import__("sys").modules:  # no MPI runtime needed: a fake comm
        monkeypatch.setattr(mpi4py.rc, "initialize", False)
        monkeypatch.setattr(mpi4py.rc, "finalize", False)
    from cosim.placement import LeastWork
    from cosim.transport.base import TRACE
    from cosim.transport.mpi import MpiAls

    def make(log, delay, fail_at=None, ranks=(0, 1), stop_answer=None, comm=None):
        apps, trace = _Local(log, "apps", fail_at), _Local(log, "trace", fail_at=1)
        als = MpiAls(comm or _Comm(log, delay, stop_answer), local={TRACE: trace, 0: apps},
                     placement=LeastWork(list(ranks), None))
        log.clear()
        return als, apps, trace
    return make


def test_rank_0_runs_its_apps_ahead_while_it_waits(mpi_als):
    log = []
    als, apps, trace = mpi_als(log, delay=7)
    assert als.round(5, []) == ([], None)
    # one slice per poll that found nothing; the trace endpoint is never run ahead
    assert log == ["apps"] * 7 + ["answer"] and trace.slices == 0


def test_an_error_running_ahead_is_raised_once_the_answers_are_in(mpi_als):
    log = []
    als, apps, _ = mpi_als(log, delay=7, fail_at=2)
    with pytest.raises(ValueError, match="boom"):
        als.round(5, [])
    # no slice after the failing one; rank 1's answer was taken before the error
    assert log == ["apps", "apps", "answer"]


def test_apps_on_rank_0_alone_run_as_in_one_process(mpi_als):
    """With rank 0 the only place for apps, no round reaches the ALS ranks (no message, no
    poll, no run-ahead: `LocalAls`' rounds), and the end stops them and takes their totals."""
    log = []
    als, apps, trace = mpi_als(log, delay=7, ranks=(0,))
    comm = als.comm
    comm.polls = 0  # (the hello's)
    for grant in (5, 9, 12):
        assert als.round(grant, []) == ([], None)
    assert log == [] and comm.polls == 0 and apps.slices == 0
    totals = als.finish()
    assert log == ["answer"]  # the stop's answer, and nothing else
    # both local endpoints' chunks; the wall times of rank 0 and of rank 1 (its totals)
    assert totals.chunk_events == 6 and set(totals.wall_s) == {0, 1}


@pytest.mark.parametrize("word, raised", [("KeyboardInterrupt: ", KeyboardInterrupt),
                                          ("ValueError: boom", "ALS rank 1 failed")])
@pytest.mark.parametrize("ranks", [(0,), (0, 1)])
def test_a_rank_that_ends_on_its_own_error_at_the_stop_is_reported(mpi_als, word, raised,
                                                                     ranks):
    """An ALS rank interrupted on its own answers the stop with its error, not its totals:
    the run ends with that interrupt (or error), not with a failure of rank 0's own."""
    from cosim.errors import CosimError
    from cosim.transport.base import Reply

    als, _, _ = mpi_als([], delay=0, ranks=ranks, stop_answer=Reply(error=word))
    if raised is KeyboardInterrupt:
        with pytest.raises(KeyboardInterrupt):
            als.finish()
    else:
        with pytest.raises(CosimError, match=raised):
            als.finish()


# -- apps simulated before their start ---------------------------------------------------------

def loops_of(sim):
    """Each job's loop result, chunk table included, as comparable values."""
    out = {}
    for jid, r in sim.totals().loops.items():
        c = r.chunks
        out[jid] = (r.start, r.end, r.finish, r.done, r.n_chunks, r.pes, c.rank.tobytes(),
                    c.first.tobytes(), c.size.tobytes(), c.t_assign.tobytes(),
                    c.t_start.tobytes(), c.t_end.tobytes())
    return out


def ahead_job(job_id, params, *, hosts=2, pes=4, walltime=None):
    return manager.AheadJob(job_id, "profile", tuple(sorted(params.items())), hosts, pes,
                            walltime)


def play(sim, script, spins):
    """Apply `script` (commands in time order), granting each command's tick first, with
    ``spins[k]`` calls of `speculate` before the k-th; then every fact left."""
    facts = []
    for k, cmd in enumerate(script):
        for _ in range(spins[k % len(spins)]):
            sim.speculate(7)
        facts += sim.advance(cmd.time)
        sim.apply([cmd])
    return facts + drain(sim)


def test_a_job_simulated_before_its_start_gives_the_facts_of_one_simulated_after(uniform):
    flop = {**uniform, "total_flop": "4e9"}  # 1 s on 4 PEs of 1 GF
    jobs = [ahead_job(1, flop), ahead_job(2, flop), ahead_job(3, flop, hosts=1, pes=2)]
    script = [start(1, flop, time=5, hosts=(2, 3)),  # other hosts, the same message times
              start(2, flop, time=300_000_000, hosts=(0, 1)),
              start(3, flop, time=400_000_001, hosts=(5,), pes=2)]
    lazy = simulator()
    expected = play(lazy, script, [0])
    for spins in ([10_000], [0, 10_000, 40], [3]):  # all ahead, some, barely begun
        sim = AppSimulator(platform=PLATFORM, config=lazy.config, bounds=True, ahead=jobs)
        assert play(sim, script, spins) == expected
        assert loops_of(sim) == loops_of(lazy)
        if spins == [10_000]:
            assert sim.totals().ahead == 3  # each start took its run from before


def test_commands_after_a_start_act_on_a_run_simulated_before_it(uniform):
    """Shrinks, expands and exclusions replay a moved run from its start tick, and a kill
    truncates it, as they do any run."""
    flop = {**uniform, "total_flop": "8e9"}
    t0, t1 = 1_000, 900_000_000  # job 2's walltime kill at t1, announced at its start
    jobs = [ahead_job(1, flop), ahead_job(2, flop, walltime=t1 - t0), ahead_job(3, flop)]
    script = [start(1, flop, time=t0, hosts=(0, 1)),
              StartApp(time=t0, job_id=2, hosts=(2, 3), pes=4, app="profile",
                       params=tuple(sorted(flop.items())), pe_set=IndexSet.of(()), limit=t1),
              start(3, flop, time=t0, hosts=(4, 5)),
              ShrinkApp(time=t0 + 300_000_000, job_id=1, pes=IndexSet.of([3])),
              ExpandApp(time=t0 + 400_000_000, job_id=2, pes=IndexSet.of([12, 13])),
              ExcludeHosts(time=t0 + 500_000_000, job_id=3, count=1, for_job=9),
              KillApp(time=t1, job_id=2)]
    lazy = AppSimulator(platform=PLATFORM, config=AlsConfig(technique=get("SS"), record=True,
                                                            max_slowdown=10.0), bounds=True)
    expected = play(lazy, script, [0])
    sim = AppSimulator(platform=PLATFORM, config=lazy.config, bounds=True, ahead=jobs)
    assert play(sim, script, [10_000, 0]) == expected
    assert loops_of(sim) == loops_of(lazy)
    assert sim.totals().ahead == 3 and sim.totals().rollbacks >= 3
    assert any(isinstance(f, HostsExcluded) and f.hosts for f in expected)  # really excluded


def test_a_start_that_does_not_fit_the_run_simulated_before_it_starts_afresh(uniform,
                                                                            monkeypatch):
    monkeypatch.setattr(manager, "AHEAD_MAX", 4)  # jobs 5 and 6 wait for a slot
    flop = {**uniform, "total_flop": "4e9"}
    jobs = [ahead_job(1, flop), ahead_job(2, flop, walltime=10**9),
            ahead_job(3, {**uniform, "total_flop": "5e9"}), ahead_job(4, flop),
            ahead_job(5, flop), ahead_job(6, flop)]
    script = [start(1, flop, time=0, hosts=(0, 1, 2), pes=5),  # other PEs
              # the run went to its walltime, past this start's earlier kill
              StartApp(time=10, job_id=2, hosts=(2, 3), pes=4, app="profile",
                       params=tuple(sorted(flop.items())), pe_set=IndexSet.of(()),
                       limit=10 + 500_000_000),
              start(3, flop, time=20, hosts=(4, 5)),  # other parameters: a miss
              start(4, flop, time=30, hosts=(6, 7), pes=3),  # a second miss: no more ahead
              KillApp(time=10 + 500_000_000, job_id=2)]
    lazy = simulator()
    expected = play(lazy, script, [0])
    sim = AppSimulator(platform=PLATFORM, config=lazy.config, bounds=True, ahead=jobs)
    assert play(sim, script, [10_000, 0, 0, 0, 0]) == expected
    assert loops_of(sim) == loops_of(lazy)
    assert sim.totals().ahead == 0
    # the misses of jobs 3 and 4 in a row (job 2's walltime is no miss): nothing more ahead,
    # jobs 5 and 6 never begun
    assert not sim._pre and not sim._ahead and not sim._open


def test_ahead_plan_deals_fixed_size_app_jobs_in_submission_order(uniform):
    from cosim.placement import ahead_plan
    from cosim.workload.jobs import Job

    def job(i, submit, *, app="profile", hosts=2, kind="rigid"):
        return Job(id=i, submit=submit, hosts=hosts, pes=2 * hosts, walltime=10**12,
                   runtime=0 if app != "rigid" else 10, app=app, kind=kind,
                   min_pes=2 if kind != "rigid" else 0, max_pes=4 if kind != "rigid" else 0)

    jobs = [job(5, 30), job(1, 10), job(2, 10), job(3, 20, app="rigid"),
            job(4, 20, kind="malleable"), job(6, 40, hosts=9), job(7, 50), job(8, 60),
            job(9, 70, kind="moldable")]  # sized at its start
    assert ahead_plan(jobs, [0, 1, 2], 8) == {1: 1, 2: 2, 5: 0, 7: 1, 8: 2}
    assert ahead_plan(jobs, [1], 8) == {1: 1, 2: 1, 5: 1, 7: 1, 8: 1}
    # rank 0 four apps for every five of an ALS rank (it also runs the batch level)
    many = [job(i, i) for i in range(1, 19)]
    assert list(ahead_plan(many, [0, 1], 8).values()) == [1, 0, 1, 0, 1, 0, 1, 0, 1] * 2
    assert list(ahead_plan(many, [0, 1, 2], 8).values()) == (
        [1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2] * 2)[:18]
    assert ahead_plan(jobs, [0], 8) == {}  # one process: nothing runs ahead


def test_running_apps_and_apps_before_their_start_run_ahead_in_turn(uniform):
    """A rank busy with running apps still gets ahead of the starts to come: `speculate`
    alternates between the two while both have work."""
    flop = {**uniform, "total_flop": "8e9"}
    sim = AppSimulator(platform=PLATFORM, config=AlsConfig(technique=get("SS"), record=True),
                       bounds=True, ahead=[ahead_job(2, flop)])
    sim.apply([start(1, flop, time=0)])
    sim.advance(0)
    running = sim._apps[1].run
    moved = []
    for _ in range(8):
        before = running._n_chunks
        assert sim.speculate(5)
        moved.append("running" if running._n_chunks != before else "ahead")
    assert moved == ["ahead", "running"] * 4  # (the first turn begins job 2's run)
    assert sim._pre[2][1]._n_chunks == 15


# -- the facts of an ended app, sent at once (settled runs) -----------------------------------

def test_a_settled_simulator_sends_every_fact_of_an_ended_app_at_once(uniform):
    """With nothing but kills at the announced walltime able to reach a running app
    (`cosim.runner.settled`), an ALS rank sends every fact of an app that has ended in the
    first answer after its end, stamped after the grant too; the facts and the loops are
    those of a simulator that sends each fact when a grant covers it."""
    from cosim.protocol.messages import AppCompleted

    flop = {**uniform, "total_flop": "4e9"}  # 1 s on 4 PEs of 1 GF
    script = [start(1, flop, time=5, hosts=(2, 3)),
              start(2, flop, time=300_000_000, hosts=(0, 1))]
    lazy = simulator()
    expected = play(lazy, script, [0])
    sim = AppSimulator(platform=PLATFORM, config=lazy.config, bounds=True, settled=True)
    sim.apply([script[0]])
    assert sim.advance(5) == expected[:1]  # job 1 has not ended: nothing after the grant
    while sim.speculate(7):  # job 1 runs to its end
        pass
    early = sim.advance(script[1].time)
    assert early[-1] == AppCompleted(time=early[-1].time, job_id=1)
    assert early[-1].time > script[1].time and 1 not in sim._apps
    sim.apply([script[1]])
    got = expected[:1] + early + drain(sim)
    assert sorted(got, key=lambda f: f.key) == sorted(expected, key=lambda f: f.key)
    assert loops_of(sim) == loops_of(lazy)


class _Scripted(_Comm):
    """Rank 1 answers the rounds with the replies of `script`, in turn, and counts them."""

    def __init__(self, log, script):
        super().__init__(log, 0)
        from cosim.transport.base import Kind
        from cosim.transport.wire import encode

        self.rounds = 0
        answer = self._answer

        def scripted(kind):
            if kind != Kind.ROUND:
                return answer(kind)
            self.rounds += 1
            return encode(script.pop(0))
        self._answer = scripted


def test_rank_0_keeps_facts_sent_ahead_until_a_grant_covers_them(mpi_als):
    """Facts an ALS rank sent stamped after the grant are handed to the batch level at their
    tick, in rounds that need no message; a command to their job meanwhile is refused."""
    from cosim.errors import ProtocolError
    from cosim.protocol.messages import AppCompleted, AppStarted, HostsYielded, KillApp
    from cosim.transport.base import Reply

    later = (HostsYielded(time=40, job_id=7, hosts=(3,)), AppCompleted(time=50, job_id=7))
    comm = _Scripted([], [Reply(facts=(AppStarted(time=10, job_id=7),) + later,
                                promise=90)])
    als, _, _ = mpi_als([], delay=0, ranks=(1,), comm=comm)
    cmd = StartApp(time=10, job_id=7, hosts=(3,), pes=2, app="profile", params=(),
                   pe_set=IndexSet.of(()))
    assert als.round(10, [cmd]) == ([AppStarted(time=10, job_id=7)], 40)
    assert als.round(40, []) == ([later[0]], 50)
    with pytest.raises(ProtocolError, match="final"):
        als.round(45, [KillApp(time=45, job_id=7)])
    assert als.round(50, []) == ([later[1]], 90)
    assert comm.rounds == 1  # rank 1 was asked once: its promise (90) lay beyond the grants
