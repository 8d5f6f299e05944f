"""Trace apps (`TraceApps`): exact runtime models under resizes (spec malleability.md §5.1
AC1-AC4), RigidApps's behaviour for unresized jobs, and the protocol rules of resizes."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.als.trace_apps import TraceApps
from cosim.testing.rigid_reference import RigidApps
from cosim.core.indexset import IndexSet
from cosim.errors import ProtocolError
from cosim.protocol.endpoint import AlsTotals
from cosim.protocol.messages import (
    AppCompleted,
    AppResized,
    AppStarted,
    ExcludeHosts,
    ExpandApp,
    KillApp,
    ShrinkApp,
    StartApp,
)
from cosim.workload.jobs import Job
from cosim.workload.runtime_models import RuntimeModel, model_pes, rate, table_time

S = 1_000_000_000  # ticks per second
END = 2**62  # advance "to the end"


def pe_hosts(hosts: int, cores: int) -> np.ndarray:
    return np.repeat(np.arange(hosts), cores)


def mjob(model: RuntimeModel = RuntimeModel(), *, jid=1, runtime=1000 * S, pes=8, hosts=2,
         kind="malleable", min_pes=1, max_pes=8) -> Job:
    return Job(id=jid, submit=0, hosts=hosts, pes=pes, walltime=runtime, runtime=runtime,
               kind=kind, min_pes=min_pes, max_pes=max_pes, model=model)


def pes(*values: int) -> IndexSet:
    return IndexSet.of(values)


def start(t=0, jid=1, hosts=(0, 1), n=None, pe_set=None) -> StartApp:
    """A StartApp; `n` defaults to the size of `pe_set`, else 8."""
    kw = {} if pe_set is None else {"pe_set": IndexSet.of(pe_set)}
    n = n if n is not None else 8 if pe_set is None else len(kw["pe_set"])
    return StartApp(time=t, job_id=jid, hosts=hosts, pes=n, **kw)


def completion(facts) -> int:
    (end,) = [f.time for f in facts if isinstance(f, AppCompleted)]
    assert type(end) is int
    return end


def run_schedule(job: Job, platform: np.ndarray, commands, first=None) -> list:
    """Start `job` on its reference allocation at 0 (or `first`), then apply each batch of
    `commands` (lists of commands at one tick), advancing to just before each; all facts."""
    apps = TraceApps({job.id: job}, platform)
    apps.apply([first or start(jid=job.id)])
    facts = []
    for batch in commands:
        facts += apps.advance(batch[0].time - 1)
        apps.apply(batch)
    facts += apps.advance(END)
    assert apps.promise() is None
    return facts


# -- AC1: ideal model, shrink and expand back -------------------------------------------------

HALF_HOST = pes(4, 5, 6, 7)  # the second host's PEs
TWO_PER_HOST = pes(2, 3, 6, 7)


@pytest.mark.parametrize("removed", [HALF_HOST, TWO_PER_HOST])
@pytest.mark.parametrize("name", ["ideal", "worst", "amdahl"])
@pytest.mark.parametrize("explicit", [False, True])
def test_ac1_shrink_to_half_then_expand_back(removed, name, explicit):
    # R = 1000 s on 8 PEs; [200, 600) at 4 PEs does 200 s of reference work: 200 s late.
    # Balanced shrinks (a whole host, or 2 of each host): ideal = worst; amdahl f=0 = ideal.
    # `explicit`: started with pe_set = the reference PEs (modelled from the start) rather
    # than on the fast path (modelled from the first resize): the same result.
    job = mjob(RuntimeModel(name=name))
    first = start(pe_set=range(8)) if explicit else None
    facts = run_schedule(job, pe_hosts(2, 4), [
        [ShrinkApp(time=200 * S, job_id=1, pes=removed)],
        [ExpandApp(time=600 * S, job_id=1, pes=removed)],
    ], first=first)
    assert facts == [
        AppStarted(time=0, job_id=1),
        AppResized(time=200 * S, job_id=1, released=removed, pes=4),
        AppResized(time=600 * S, job_id=1, added=removed, pes=8),
        AppCompleted(time=1200 * S, job_id=1),
    ]


def test_ac1_at_a_later_start():
    job = mjob()
    facts = run_schedule(job, pe_hosts(2, 4), [
        [ShrinkApp(time=250 * S, job_id=1, pes=HALF_HOST)],
        [ExpandApp(time=650 * S, job_id=1, pes=HALF_HOST)],
    ], first=start(t=50 * S))
    assert completion(facts) == 1250 * S


# -- AC2: ideal vs worst on an unbalanced shrink ---------------------------------------------

@pytest.mark.parametrize("model, end_s", [
    (RuntimeModel(name="ideal"), 1100),
    (RuntimeModel(name="worst"), 1200),
    (RuntimeModel(name="amdahl"), 1100),  # f = 0, dynamic balance = ideal
    (RuntimeModel(name="amdahl", balance="static"), 1200),  # f = 0, static balance = worst
])
def test_ac2_only_host_1_shrinks_to_two(model, end_s):
    # host 0 keeps 4, host 1 keeps 2 for [200, 600): ideal rate 6/8 (100 s late), worst
    # 2 x 2 / 8 = 1/2 (200 s late)
    facts = run_schedule(mjob(model), pe_hosts(2, 4), [
        [ShrinkApp(time=200 * S, job_id=1, pes=pes(6, 7))],
        [ExpandApp(time=600 * S, job_id=1, pes=pes(6, 7))],
    ])
    assert completion(facts) == end_s * S
    assert [f.pes for f in facts if isinstance(f, AppResized)] == [6, 8]


# -- AC4: reconfiguration stall ----------------------------------------------------------------

@pytest.mark.parametrize("model", [RuntimeModel(reconf_s=5.0),
                                   RuntimeModel(reconf_pe_s=1.25),  # 4 PEs changed: 5 s
                                   RuntimeModel(name="amdahl", reconf_s=5.0)])
def test_ac4_stall_of_five_seconds_per_resize(model):
    # the stall at 4 PEs costs 20 PE-s = 2.5 s of the 8-PE rate, the one at 8 PEs 5 s
    facts = run_schedule(mjob(model), pe_hosts(2, 4), [
        [ShrinkApp(time=200 * S, job_id=1, pes=HALF_HOST)],
        [ExpandApp(time=600 * S, job_id=1, pes=HALF_HOST)],
    ])
    assert completion(facts) == 1207 * S + S // 2


def test_overlapping_stalls_end_at_the_latest_end_and_commands_apply_in_order():
    # shrink then expand back at one tick: two facts in the order given, one 5 s stall (the
    # two stalls overlap: they do not add up), the same PEs afterwards
    facts = run_schedule(mjob(RuntimeModel(reconf_s=5.0)), pe_hosts(2, 4), [
        [ShrinkApp(time=200 * S, job_id=1, pes=pes(6, 7)),
         ExpandApp(time=200 * S, job_id=1, pes=pes(6, 7))],
    ])
    assert facts[1:] == [AppResized(time=200 * S, job_id=1, released=pes(6, 7), pes=6),
                         AppResized(time=200 * S, job_id=1, added=pes(6, 7), pes=8),
                         AppCompleted(time=1005 * S, job_id=1)]
    # a second resize inside a running stall extends it to its own end: [200, 205) and
    # [203, 208) -> no progress on [200, 208)
    facts = run_schedule(mjob(RuntimeModel(reconf_s=5.0)), pe_hosts(2, 4), [
        [ShrinkApp(time=200 * S, job_id=1, pes=pes(6, 7))],
        [ExpandApp(time=203 * S, job_id=1, pes=pes(6, 7))],
    ])
    assert completion(facts) == 1008 * S


# -- AC3: model order, exactness (hypothesis) -------------------------------------------------

@st.composite
def schedules(draw, *, whole_seconds=False):
    """A job on H0 hosts x c0 PEs of an H x C platform and a resize schedule: each step a
    delay and the new PE count of every host (the first u_h cores of host h; host 0 keeps
    >= 1, so the master PE 0 is never removed). mode ``uniform``: every host of the job
    always has the same count; ``keep``: every reference host keeps >= c0."""
    h0 = draw(st.integers(1, 3))
    c0 = draw(st.integers(1, 4))
    hosts = h0 + draw(st.integers(0, 2))
    cores = c0 + draw(st.integers(0, 2))
    unit = S if whole_seconds else 1
    runtime = draw(st.integers(0, 10**4 if whole_seconds else 10**13)) * unit
    mode = draw(st.sampled_from(["any", "uniform", "keep"]))
    steps = []
    for _ in range(draw(st.integers(0, 6))):
        dt = draw(st.integers(1, 3000 if whole_seconds else 3 * 10**12)) * unit
        if mode == "uniform":
            others = st.lists(st.integers(1, hosts - 1), unique=True) if hosts > 1 else st.just([])
            used = [0] + draw(others)
            k = draw(st.integers(1, cores))
            counts = [k if h in used else 0 for h in range(hosts)]
        else:
            counts = [draw(st.integers(c0 if (mode == "keep" and h < h0) else int(h == 0),
                                       cores)) for h in range(hosts)]
        steps.append((dt, counts))
    start_t = draw(st.integers(0, 10**6 if whole_seconds else 10**12)) * unit
    return h0, c0, hosts, cores, runtime, start_t, steps


def run_counts(model: RuntimeModel, sched) -> int:
    """The end tick of the job of `sched` under `model` (resizes after its end are skipped)."""
    h0, c0, hosts, cores, runtime, start_t, steps = sched
    job = Job(id=7, submit=0, hosts=h0, pes=h0 * c0, walltime=1, runtime=runtime,
              kind="malleable", min_pes=1, max_pes=hosts * cores, model=model)
    apps = TraceApps({7: job}, pe_hosts(hosts, cores))
    apps.apply([StartApp(time=start_t, job_id=7, hosts=tuple(range(h0)), pes=h0 * c0)])
    counts = [c0] * h0 + [0] * (hosts - h0)
    facts, t = [], start_t
    for dt, new in steps:
        t += dt
        facts += apps.advance(t - 1)
        if any(isinstance(f, AppCompleted) for f in facts):
            break
        removed = [h * cores + k for h in range(hosts) for k in range(new[h], counts[h])]
        added = [h * cores + k for h in range(hosts) for k in range(counts[h], new[h])]
        cmds = []
        if removed:
            cmds.append(ShrinkApp(time=t, job_id=7, pes=IndexSet.of(removed)))
        if added:
            cmds.append(ExpandApp(time=t, job_id=7, pes=IndexSet.of(added)))
        apps.apply(cmds)
        counts = new
    facts += apps.advance(END)
    assert all(type(f.time) is int for f in facts)
    return completion(facts)


def _uniform(counts):
    used = [u for u in counts if u]
    return min(used) == max(used)


@settings(max_examples=300, deadline=None)
@given(schedules(), st.sampled_from([0.0, 0.5, 5.0]))
def test_ac3_worst_never_beats_ideal(sched, reconf_s):
    h0, c0, hosts, cores, runtime, start_t, steps = sched
    ideal = run_counts(RuntimeModel(name="ideal", reconf_s=reconf_s), sched)
    worst = run_counts(RuntimeModel(name="worst", reconf_s=reconf_s), sched)
    assert start_t <= ideal <= worst
    if all(_uniform(c) for _, c in steps):
        assert worst == ideal
    if reconf_s == 0 and all(min(c[:h0]) >= c0 for _, c in steps):
        assert ideal <= start_t + runtime
    if not steps:
        assert ideal == worst == start_t + runtime


@settings(max_examples=150, deadline=None)
@given(schedules(whole_seconds=True))
def test_amdahl_without_serial_fraction_is_the_ideal_model_within_a_tick(sched):
    # ideal rounds up (ceil of exact units), amdahl to nearest of a float: at most one tick
    # apart; on whole-second schedules the ends never fall within a tick of a resize
    ideal = run_counts(RuntimeModel(name="ideal"), sched)
    amdahl = run_counts(RuntimeModel(name="amdahl"), sched)
    assert 0 <= ideal - amdahl <= 1
    worst = run_counts(RuntimeModel(name="worst"), sched)
    static = run_counts(RuntimeModel(name="amdahl", balance="static"), sched)
    assert 0 <= worst - static <= 1


# -- float models --------------------------------------------------------------------------------

def test_amdahl_with_a_serial_fraction():
    # f = 0.1: rate on 4 PEs = S(4)/S(8) = 4 (0.8 + 0.9) / (8 (0.4 + 0.9)) = 6.8/10.4
    f = Fraction(1, 10)
    r = 4 * (f * 8 + 1 - f) / (8 * (f * 4 + 1 - f))
    expected = (600 + (800 - 400 * r)) * S  # reference work left at 600 s, at rate 1
    facts = run_schedule(mjob(RuntimeModel(name="amdahl", f=0.1)), pe_hosts(2, 4), [
        [ShrinkApp(time=200 * S, job_id=1, pes=HALF_HOST)],
        [ExpandApp(time=600 * S, job_id=1, pes=HALF_HOST)],
    ])
    assert completion(facts) == round(expected)


@pytest.mark.parametrize("removed, expected", [
    (HALF_HOST, 1200 * S),  # T(4) = 2 T(8): rate 1/2, as ideal
    (pes(6, 7), round((600 + 800 - Fraction(400 * 2, 3)) * S)),  # T(6) = 1.5: rate 2/3
    (pes(1, 2, 3, 5, 6, 7), 1200 * S),  # 2 PEs: held at T(4) = 2 below the table
])
def test_table_model(removed, expected):
    model = RuntimeModel(name="table", table=((4, 2.0), (8, 1.0), (16, 0.75)))
    facts = run_schedule(mjob(model), pe_hosts(2, 4), [
        [ShrinkApp(time=200 * S, job_id=1, pes=removed)],
        [ExpandApp(time=600 * S, job_id=1, pes=removed)],
    ])
    assert completion(facts) == expected


def test_rate_functions():
    ideal, worst = RuntimeModel(), RuntimeModel(name="worst")
    assert model_pes(ideal, [4, 2]) == 6 and model_pes(worst, [4, 2]) == 4
    assert rate(ideal, [4, 2], [4, 4]) == 0.75 and rate(worst, [4, 2], [4, 4]) == 0.5
    assert rate(worst, [2, 1], [2, 1]) == 1.0  # uneven reference spread: still rate 1
    assert rate(RuntimeModel(name="amdahl", f=0.3), [3, 2], [3, 2]) == 1.0
    assert rate(RuntimeModel(name="amdahl"), [3, 4], [4, 4]) == 7 / 8
    table = ((2, 10.0), (4, 6.0))
    assert [table_time(table, p) for p in (1, 2, 3, 4, 9)] == [10.0, 10.0, 8.0, 6.0, 6.0]


# -- moldable starts (off the reference allocation) -------------------------------------------

@pytest.mark.parametrize("name, cmd, end_s", [
    ("ideal", start(hosts=(0,), n=4), 2000),  # 4 PEs on one host: rate 1/2
    ("worst", start(hosts=(0,), n=4), 2000),  # 1 x 4 / 8
    ("ideal", start(pe_set=(0, 1, 2, 4)), 2000),  # 3 + 1 PEs: 4/8
    ("worst", start(pe_set=(0, 1, 2, 4)), 4000),  # 2 x 1 / 8
    ("ideal", start(hosts=(0, 1, 2), n=12), Fraction(8000, 12)),  # 4, 4, 4: rate 12/8
    ("worst", start(hosts=(1, 2), n=8), 1000),  # the reference shape on other hosts
])
def test_moldable_start(name, cmd, end_s):
    job = mjob(RuntimeModel(name=name), kind="moldable", max_pes=12)
    facts = run_schedule(job, pe_hosts(3, 4), [], first=cmd)
    assert completion(facts) == math.ceil(end_s * S)  # the tick that completes the work


def test_zero_runtime_job_completes_at_its_start_tick():
    job = mjob(runtime=0)
    for cmd in (start(t=5), start(t=5, pe_set=(0, 4))):
        apps = TraceApps({1: job}, pe_hosts(2, 4))
        apps.apply([cmd])
        assert apps.promise() == 5
        assert apps.advance(5) == [AppCompleted(time=5, job_id=1), AppStarted(time=5, job_id=1)]


# -- kills and the completion tick ---------------------------------------------------------------

def test_kill_after_a_resize():
    apps = TraceApps({1: mjob()}, pe_hosts(2, 4))
    apps.apply([start(), ShrinkApp(time=200 * S, job_id=1, pes=HALF_HOST)])
    assert apps.promise() == 0
    apps.advance(250 * S)
    assert apps.promise() == 1800 * S  # 800 s of reference work left at half rate
    apps.apply([KillApp(time=300 * S, job_id=1)])
    assert apps.advance(END) == [AppCompleted(time=300 * S, job_id=1, status="killed")]
    assert apps.promise() is None
    with pytest.raises(ProtocolError, match="job 1, which is not running"):
        apps.apply([ExpandApp(time=END, job_id=1, pes=HALF_HOST)])


def test_totals_once_every_app_has_ended():
    apps = TraceApps({1: mjob()}, pe_hosts(2, 4))
    assert apps.totals() == AlsTotals()
    apps.apply([start()])
    with pytest.raises(ProtocolError, match="still running"):
        apps.totals()
    apps.advance(END)
    assert apps.totals() == AlsTotals()


def test_resize_at_the_completion_tick_is_not_reported():
    apps = TraceApps({1: mjob()}, pe_hosts(2, 4))
    apps.apply([start()])
    apps.advance(1000 * S - 1)
    apps.apply([ShrinkApp(time=1000 * S, job_id=1, pes=HALF_HOST),
                ExpandApp(time=1000 * S, job_id=1, pes=HALF_HOST)])  # the PE set did change
    assert apps.advance(END) == [AppCompleted(time=1000 * S, job_id=1)]
    with pytest.raises(ProtocolError, match="not running"):
        apps.apply([ShrinkApp(time=END, job_id=1, pes=HALF_HOST)])


def test_float_model_completing_at_the_resize_tick_does_not_report_it():
    # 4 PEs of 8 (rate 1/2), R = 10 ticks: 0.5 tick of reference work left at 19; the expand
    # to 8 PEs (rate 1) rounds it to 0 ticks (ties to even): the job completes at 19, and the
    # expand is not reported. The ideal model rounds up: the same expand ends it at 20.
    for name, end, resized in (("amdahl", 19, False), ("ideal", 20, True)):
        apps = TraceApps({1: mjob(RuntimeModel(name=name), runtime=10)}, pe_hosts(2, 4))
        apps.apply([start(hosts=(0,), n=4)])
        assert apps.advance(18) == [AppStarted(time=0, job_id=1)] and apps.promise() == 20
        apps.apply([ExpandApp(time=19, job_id=1, pes=HALF_HOST)])
        assert apps.advance(END) == (
            [AppResized(time=19, job_id=1, added=HALF_HOST, pes=8)] if resized else []) + [
            AppCompleted(time=end, job_id=1)]


# -- unresized jobs: exactly RigidApps -------------------------------------------------------------

def test_unresized_jobs_give_exactly_the_facts_of_rigid_apps():
    rng = np.random.default_rng(42)
    kinds = ["rigid", "moldable", "malleable", "evolving"]
    models = [RuntimeModel(), RuntimeModel(name="worst"), RuntimeModel(name="amdahl", f=0.2),
              RuntimeModel(name="table", table=((1, 3.0), (9, 1.0)))]
    jobs, commands = {}, []
    for jid in range(400):
        h = int(rng.integers(1, 4))
        p = int(rng.integers(h, 4 * h + 1))  # an uneven spread now and then
        runtime = int(rng.choice([0, int(rng.integers(1, 10**12))]))
        jobs[jid] = Job(id=jid, submit=0, hosts=h, pes=p, walltime=runtime, runtime=runtime,
                        kind=kinds[jid % 4], model=models[jid // 4 % 4])
        t = int(rng.integers(0, 10**12))
        hosts = tuple(sorted(rng.choice(16, size=h, replace=False).tolist()))
        commands.append(StartApp(time=t, job_id=jid, hosts=hosts, pes=p))
        if runtime > 1 and rng.random() < 0.2:
            commands.append(KillApp(time=t + int(rng.integers(0, runtime)), job_id=jid))
    commands.sort(key=lambda c: (c.time, c.job_id))
    rigid = RigidApps({j.id: j.runtime for j in jobs.values()})
    trace = TraceApps(jobs, pe_hosts(16, 4))
    times = sorted({c.time for c in commands})
    for t in times:
        batch = [c for c in commands if c.time == t]
        assert rigid.advance(t - 1) == trace.advance(t - 1)
        rigid.apply(batch)
        trace.apply(batch)
        assert rigid.promise() == trace.promise()
    out = trace.advance(END)
    assert rigid.advance(END) == out
    assert trace.promise() is None
    done = {f.job_id: f.time for f in out
            if isinstance(f, AppCompleted) and f.status == "completed"}
    assert done and all(done[c.job_id] == c.time + jobs[c.job_id].runtime
                        for c in commands if isinstance(c, StartApp) and c.job_id in done)


# -- protocol errors -------------------------------------------------------------------------------

def _running(job=None, platform=None):
    apps = TraceApps({1: job or mjob(), 2: mjob(jid=2, kind="rigid", min_pes=8)},
                     platform if platform is not None else pe_hosts(3, 4))
    apps.apply([start()])
    apps.advance(100 * S)
    return apps


@pytest.mark.parametrize("cmd, match", [
    (ShrinkApp(time=200 * S, job_id=1, pes=pes(0, 1)), "master PE 0"),
    (ShrinkApp(time=200 * S, job_id=1, pes=pes(*range(8))), "master|all its PEs"),
    (ShrinkApp(time=200 * S, job_id=1, pes=pes(7, 8)), "does not hold"),
    (ShrinkApp(time=200 * S, job_id=1, pes=IndexSet()), "names no PE"),
    (ExpandApp(time=200 * S, job_id=1, pes=pes(7, 8)), "already holds"),
    (ExpandApp(time=200 * S, job_id=1, pes=pes(12)), "does not exist"),
    (ExpandApp(time=200 * S, job_id=2, pes=pes(8)), "job 2, which is not running"),
    (ShrinkApp(time=50 * S, job_id=1, pes=pes(7)), "in the past"),
    (ExcludeHosts(time=200 * S, job_id=1, count=1, for_job=2), "cannot apply ExcludeHosts"),
    (StartApp(time=200 * S, job_id=1, hosts=(2,), pes=1), "started twice"),
    (StartApp(time=200 * S, job_id=3, hosts=(2,), pes=1), "do not know"),
])
def test_bad_commands(cmd, match):
    with pytest.raises(ProtocolError, match=match):
        _running().apply([cmd])


def test_bounds_and_kinds():
    apps = _running(mjob(min_pes=6, max_pes=9))
    with pytest.raises(ProtocolError, match="below its min_pes 6"):
        apps.apply([ShrinkApp(time=200 * S, job_id=1, pes=pes(5, 6, 7))])
    with pytest.raises(ProtocolError, match="above its max_pes 9"):
        apps.apply([ExpandApp(time=200 * S, job_id=1, pes=pes(8, 9))])
    for kind in ("rigid", "moldable", "evolving"):
        with pytest.raises(ProtocolError, match=f"a {kind} job"):
            _running(mjob(kind=kind)).apply([ShrinkApp(time=200 * S, job_id=1, pes=pes(7))])
    apps = TraceApps({1: mjob(kind="moldable", min_pes=4)}, pe_hosts(3, 4))
    with pytest.raises(ProtocolError, match="outside its"):
        apps.apply([start(hosts=(0,), n=3)])
    with pytest.raises(ProtocolError, match="its PEs are on hosts"):
        apps.apply([start(hosts=(0, 2), pe_set=(0, 1, 4, 5))])
    with pytest.raises(ProtocolError, match="its PEs are on hosts"):
        apps.apply([start(hosts=(0,), n=6)])  # 6 PEs spread on one 4-core host


def test_resizes_of_one_job_never_go_back_in_time():
    apps = _running()
    with pytest.raises(ProtocolError, match="before its last change"):
        apps.apply([ShrinkApp(time=300 * S, job_id=1, pes=pes(7)),
                    ExpandApp(time=200 * S, job_id=1, pes=pes(7))])
    apps = _running()
    with pytest.raises(ProtocolError, match="not running"):
        apps.apply([ShrinkApp(time=1001 * S, job_id=1, pes=pes(7))])  # it ends at 1000 s


@given(st.sets(st.integers(0, 8 * 6 - 1), min_size=1, max_size=40), st.sampled_from([1, 3, 6]))
def test_per_host_counts_from_runs_equal_the_array_count(pes, cores):
    apps = TraceApps({}, pe_hosts(48 // cores, cores))
    s = IndexSet.of(pes)
    hosts, counts = np.unique(np.array(sorted(pes)) // cores, return_counts=True)
    got_hosts, got_counts = apps._counts(s)
    assert got_hosts.tolist() == hosts.tolist() and got_counts.tolist() == counts.tolist()
