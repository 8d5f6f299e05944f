"""Metric-aware scheduling (Tang et al.; docs/reference/policies.md §1, checks §4.2): the
balanced priority ranked at every pass, WFP, and window-based allocation.

MA-1/MA-2: BF = 1 is FCFS and BF = 0 is SJF, start for start, under every backfill policy on
real traces; MA-3: the hand queue; MA-4: the window's worked example; MA-5: the window search
against brute force on random queues and profiles, and no over-booking on random workloads.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cosim.bls import BatchConfig, BatchScheduler, policies, simulate_batch
from cosim.bls.policies import easy, metric_aware, wfp, window
from cosim.bls.policies.base import PassView, QueueColumns, Tunables
from cosim.bls.profile import Profile
from cosim.cli import main
from cosim.errors import InputError
from cosim.paths import TRACES_DIR
from cosim.testing.invariants import check_allocations
from cosim.workload.jobs import Job
from cosim.workload.swf import read_swf

S = 1_000_000_000


def job(i, submit, hosts, wall, run=None, priority=0):
    return Job(id=i, submit=submit * S, hosts=hosts, pes=hosts, walltime=wall * S,
               runtime=(wall if run is None else run) * S, priority=priority)


# -- MA-1, MA-2: the two ends of the scale --------------------------------------------------

@pytest.fixture(scope="module")
def traces():
    """The first 4,000 jobs of KTH-SP2 (100 nodes) and of the Lublin trace (256 nodes): long
    queues (Lublin is oversubscribed), every kind of tie in submit time and walltime."""
    out = {}
    for name, hosts in (("KTH-SP2-1996-2.1-cln.swf.gz", 100), ("lublin_256.swf.gz", 256)):
        w = read_swf(TRACES_DIR / name, max_hosts=hosts)
        out[name] = (w.jobs[:4000], hosts)
    return out


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative"])
@pytest.mark.parametrize("bf, same_as", [(1.0, "fcfs"), (0.0, "sjf")])
def test_bf_one_is_fcfs_and_bf_zero_is_sjf(traces, backfill, bf, same_as):
    for jobs, hosts in traces.values():
        ref = simulate_batch(jobs, n_hosts=hosts,
                             config=BatchConfig(priority=same_as, backfill=backfill))
        got = simulate_batch(jobs, n_hosts=hosts, config=BatchConfig(
            priority="metric-aware", bf=bf, backfill=backfill))
        assert [(o.start, o.hosts) for o in got.outcomes] == \
            [(o.start, o.hosts) for o in ref.outcomes]
        if backfill == "conservative":  # the schedule kept (order unchanged): same promises
            assert got.first_reservation == ref.first_reservation


def test_between_the_ends_the_order_differs(traces):
    jobs, hosts = traces["KTH-SP2-1996-2.1-cln.swf.gz"]
    runs = {bf: simulate_batch(jobs, n_hosts=hosts, config=BatchConfig(
        priority="metric-aware", bf=bf)) for bf in (1.0, 0.5, 0.0)}
    starts = {bf: [o.start for o in r.outcomes] for bf, r in runs.items()}
    assert starts[0.5] != starts[1.0] and starts[0.5] != starts[0.0]


# -- MA-3: the hand queue -------------------------------------------------------------------

def _queue_at_100(bf):
    """One host busy until 1000 s (job 9, priority 1); jobs 1, 2, 3 submitted at 100, 50, 0 s with walltimes
    100, 200, 300 s: the queue order of the pass at 100 s."""
    sched = BatchScheduler(cores=[1], config=BatchConfig(priority="metric-aware", bf=bf))
    sched.submit([job(9, 0, 1, 1000, priority=1), job(3, 0, 1, 300)], 0)  # 9 goes first
    sched.schedule(0)
    sched.submit([job(2, 50, 1, 200)], 50 * S)
    sched.schedule(50 * S)
    sched.submit([job(1, 100, 1, 100)], 100 * S)
    sched.schedule(100 * S)
    return [j.id for j in sched.queue]


def test_the_hand_queue():
    cols = QueueColumns.of([job(1, 100, 1, 100), job(2, 50, 1, 200), job(3, 0, 1, 300)])
    assert metric_aware.scores(100 * S, cols, 0.5).tolist() == [50.0, 50.0, 50.0]
    assert metric_aware.scores(100 * S, cols, 0.75).tolist() == [25.0, 50.0, 75.0]
    assert metric_aware.scores(100 * S, cols, 0.25).tolist() == [75.0, 50.0, 25.0]
    assert _queue_at_100(0.5) == [3, 2, 1]  # a tie: by submission
    assert _queue_at_100(0.75) == [3, 2, 1]
    assert _queue_at_100(0.25) == [1, 2, 3]
    assert _queue_at_100(0.0) == [1, 2, 3]  # SJF
    assert _queue_at_100(1.0) == [3, 2, 1]  # FCFS


def test_the_scores_edge_cases_and_wfp():
    cols = QueueColumns.of([job(1, 10, 2, 100), job(2, 10, 4, 100)])
    assert metric_aware.scores(10 * S, cols, 0.5).tolist() == [0.0, 0.0]  # no wait, equal walls
    u, submit = wfp.rank(20 * S, cols, Tunables())
    assert (-u).tolist() == [(10 / 100) ** 3 * 2, (10 / 100) ** 3 * 4]
    assert submit.tolist() == [10 * S, 10 * S]
    # WFP ranks the wide job of equal wait and walltime first
    sched = BatchScheduler(cores=[1] * 4, config=BatchConfig(priority="wfp"))
    sched.submit([job(9, 0, 4, 1000, priority=1), job(1, 0, 2, 100), job(2, 0, 4, 100)], 0)
    sched.schedule(0)
    sched.submit([job(3, 5, 1, 100)], 5 * S)
    sched.schedule(5 * S)
    assert [j.id for j in sched.queue] == [2, 1, 3]


# -- MA-4: the window's worked example ------------------------------------------------------

EXAMPLE = [job(1, 0, 2, 10), job(2, 0, 4, 10), job(3, 0, 2, 10)]  # A, B, C on 4 hosts


def test_the_window_example():
    view = PassView(now=0, n_hosts=4, free=4, queue=tuple(EXAMPLE), running=())
    assert window.best_order(view, 3) == ((0, 2, 1), 20 * S)  # (A, C, B): 20 s, not 30
    assert window.best_order(view, 1) == ((0,), None)
    # Cobalt's cap: no order ends within 15 s, the identity stays
    assert window.best_order(view, 3, makespan_cap=15 * S) == ((0, 1, 2), None)
    starts = {}
    for backfill in ("none", "easy"):
        for w in (1, 3):
            res = simulate_batch(EXAMPLE, n_hosts=4,
                                 config=BatchConfig(backfill=backfill, window=w))
            starts[backfill, w] = {o.job.id: o.start // S for o in res.outcomes}
    assert starts["none", 1] == {1: 0, 2: 10, 3: 20}  # C blocked behind B
    assert starts["none", 3] == {1: 0, 2: 10, 3: 0}  # A and C now, B at 10
    assert starts["easy", 3] == starts["easy", 1] == {1: 0, 2: 10, 3: 0}  # C backfills anyway


# -- MA-5: the window search, property tested ------------------------------------------------

def _brute(view, k):
    """The first order of minimum M among all orders of the window, by enumeration."""
    now = view.now
    base = Profile(now, view.free, [(max(e, now + 1), h) for e, _, h, _ in view.running])
    best = None
    for perm in itertools.permutations(range(k)):
        p, after, m = base.copy(), now, now
        for i in perm:
            j = view.queue[i]
            t = p.earliest_fit(j.hosts, j.walltime, after)
            p.reserve(t, j.walltime, j.hosts)
            after, m = t, max(m, t + j.walltime)
        if best is None or m < best[1]:
            best = (perm, m)
    return best


@st.composite
def passes(draw):
    n_hosts = draw(st.integers(1, 8))
    running = sorted((draw(st.integers(1, 60)), 100 + i, h, 0)
                     for i, h in enumerate(draw(st.lists(st.integers(1, n_hosts), max_size=4))))
    taken = sum(h for _, _, h, _ in running)
    if taken > n_hosts:
        running, taken = [], 0
    queue = tuple(job(i + 1, 0, draw(st.integers(1, n_hosts)), draw(st.integers(0, 40)))
                  for i in range(draw(st.integers(0, 7))))
    return PassView(now=0, n_hosts=n_hosts, free=n_hosts - taken, queue=queue,
                    running=tuple(running)), draw(st.integers(1, window.WINDOW_MAX))


@settings(max_examples=300, deadline=None)
@given(passes())
def test_the_window_search_finds_the_first_best_order(case):
    view, w = case
    order, m = window.best_order(view, w)
    k = min(w, len(view.queue))
    assert sorted(order) == list(range(k))
    if k <= 1:
        assert order == tuple(range(k))
        return
    assert window.plan(view, easy.plan, 1) == easy.plan(view)  # W = 1: no window
    perm, best = _brute(view, k)
    assert order == perm  # the first order of least M: the identity on ties
    if m is not None:  # None: no search was needed (the window fits now)
        assert m == best


@st.composite
def workloads(draw):
    n_hosts = draw(st.integers(1, 6))
    jobs = []
    for i in range(draw(st.integers(1, 14))):
        run = draw(st.integers(1, 30))
        jobs.append(job(i + 1, draw(st.integers(0, 30)), draw(st.integers(1, n_hosts)),
                        run + draw(st.integers(0, 10)), run))
    return n_hosts, jobs


@settings(max_examples=60, deadline=None)
@given(workloads(), st.sampled_from(sorted(policies.BACKFILLS.builtins)),
       st.sampled_from(sorted(policies.PRIORITIES.builtins)), st.integers(1, 4))
def test_windows_never_over_book(data, backfill, priority, w):
    assume(not (policies.PRIORITIES[priority].value_based and backfill == "conservative"))
    n_hosts, jobs = data
    cfg = BatchConfig(backfill=backfill, priority=priority, window=w)
    res = simulate_batch(jobs, n_hosts=n_hosts, config=cfg)
    assert all(o.status == "completed" for o in res.outcomes)
    check_allocations(res, n_pes=n_hosts, cores=1)  # no host has two jobs at once


# -- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, problem", [
    (["--priority", "metric-aware", "--bf", "1.5"], "field bf: must be in [0, 1]"),
    (["--bf", "0.5"], "the priority fcfs has no balance factor"),
    (["--window", "0"], "field window: must be an integer in [1, 6]"),
    (["--window", "9"], "field window: must be an integer in [1, 6]"),
    (["--window", "2", "--makespan-cap", "-1"], "field makespan-cap: must be >= 0 seconds"),
    (["--window", "2", "--makespan-cap", "0"], "field makespan-cap: must be > 0 seconds"),
    (["--adaptive", "w", "--tuner-param", "u_short_s=1e300"],
     "field tuner-param.u_short_s: must be at most"),
])
def test_bad_options_are_one_line_errors(tmp_path, capsys, argv, problem):
    swf = tmp_path / "w.swf"
    swf.write_text("1 0 -1 10 1 -1 -1 1 20 -1 1 -1 -1 -1 -1 -1 -1 -1\n")
    assert main(["run", "--workload", str(swf), "--out", str(tmp_path / "o"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and problem in err[0]
    assert not (tmp_path / "o").exists()


def test_bad_values_in_the_api():
    with pytest.raises(InputError, match="bf"):
        BatchConfig(priority="metric-aware", bf=-0.1)
    with pytest.raises(InputError, match="window"):
        BatchConfig(window=True)
    with pytest.raises(InputError, match="makespan-cap"):
        BatchConfig(window=2, makespan_cap=0)
    assert metric_aware.scores(0, QueueColumns.of([]), 0.5).tolist() == []
    assert metric_aware.scores(5, QueueColumns.of([job(1, 0, 1, 1)]), 0.5).tolist() == [50.0]


# -- MA-6: the tuner on a hand-made load pattern ---------------------------------------------

H = 3600  # seconds in an hour
HOSTS = 10


def _load_pattern():
    """Three days light (a 1-host job of 30 min every hour), three days of overload (a
    10-host job of 2 h every hour: the queue grows), three days light again; an idle gap of
    a day before the last job (checkpoints are caught up across it)."""
    jobs, i = [], 0
    for hour in range(9 * 24):
        heavy = 3 * 24 <= hour < 6 * 24
        i += 1
        jobs.append(job(i, hour * H, HOSTS if heavy else 1, 2 * H if heavy else H // 2))
    # the overload drains at about hour 216; the last job comes a day after the drain ends
    i += 1
    jobs.append(job(i, 12 * 24 * H, 1, H // 2))
    return jobs


def _oracle(result, t, period):
    """Q (minutes) and the utilization over [t - period, t] from the outcomes alone."""
    q = sum(t - o.job.submit for o in result.outcomes
            if o.job.submit < t <= o.start) / (60 * S)
    busy = sum(len(o.hosts) * max(0, min(o.end, t) - max(o.start, t - period))
               for o in result.outcomes)
    return q, busy / (period * HOSTS)


def _tuned(adaptive, **params):
    cfg = BatchConfig(priority="metric-aware", adaptive=adaptive,
                      tuner_params={k: str(v) for k, v in params.items()})
    return simulate_batch(_load_pattern(), n_hosts=HOSTS, config=cfg)


def test_tuner_checkpoints_and_what_they_measure():
    res = _tuned("2d")
    log = res.tuning
    times = [c.time for c in log]
    assert times == [(k + 1) * 1800 * S for k in range(len(log))]  # t0 = 0, no gap
    assert times[-1] <= max(o.end for o in res.outcomes) < times[-1] + 1800 * S
    for c in log:
        q, u_short = _oracle(res, c.time, 36000 * S)
        _, u_long = _oracle(res, c.time, 86400 * S)
        assert (c.queue_depth_min, c.u_short, c.u_long) == (q, u_short, u_long)


@pytest.mark.parametrize("trigger", ["level", "crossing"])
def test_the_bf_series_follows_the_queue_depth(trigger):
    res = _tuned("bf", q_threshold_min=600, trigger=trigger)
    series = [c.bf for c in res.tuning]
    expect = [0.5 if c.queue_depth_min > 600 else 1.0 for c in res.tuning]
    assert series == expect  # one rise and one fall: level and crossing agree
    changes = [k for k in range(1, len(series)) if series[k] != series[k - 1]]
    assert len(changes) == 2 and series[0] == 1.0 and series[changes[0]] == 0.5
    day = 24 * H * S
    assert 3 * day < res.tuning[changes[0]].time < 4 * day  # Q passes 10 h on day 4
    # the trailing mean as threshold: dQ = Q - mean of the last 30 days' earlier checkpoints
    res = _tuned("bf", trigger=trigger)
    qs = [c.queue_depth_min for c in res.tuning]
    level = [1.0] + [0.5 if qs[k] - sum(qs[:k]) / k > 0 else 1.0 for k in range(1, len(qs))]
    if trigger == "level":
        assert [c.bf for c in res.tuning] == level
    else:  # a change only where the sign of dQ changed
        value, prev, want = 1.0, None, []
        for k, lv in enumerate(level):
            positive = lv == 0.5 if k else False
            if prev is not None and positive != prev:
                value = lv
            prev = positive
            want.append(value)
        assert [c.bf for c in res.tuning] == want


@pytest.mark.parametrize("trigger", ["level", "crossing"])
def test_the_direction_flips_the_w_series(trigger):
    falling = _tuned("w", trigger=trigger)
    rising = _tuned("w", trigger=trigger, direction="rising")
    for res, high_when_rising in ((falling, False), (rising, True)):
        w, prev = 1, None
        for c in res.tuning:
            up = c.u_short - c.u_long > 0
            target = 4 if up == high_when_rising else 1
            if trigger == "level" or (prev is not None and up != prev):
                w = target
            prev = up
            assert c.window == w
        assert {c.window for c in res.tuning} == {1, 4}
    if trigger == "level":  # the same utilization until the first change: opposite W
        first = falling.tuning[0]
        assert first.window != rising.tuning[0].window


def test_the_trailing_mean_is_exact_when_old_checkpoints_leave_it():
    """A 2-hour window on a 13-day run: checkpoints leave the window all the time; an empty
    queue is never deeper than a mean of empty queues (a float running sum drifted)."""
    res = _tuned("bf", q_window_s=7200)
    ticks = [round(c.queue_depth_min * 60 * S) for c in res.tuning]
    window = 7200 * S
    for k, c in enumerate(res.tuning):
        prev = [q for c2, q in zip(res.tuning[:k], ticks[:k], strict=True)
                if c2.time >= c.time - window]
        deeper = bool(prev) and ticks[k] * len(prev) > sum(prev)
        assert c.bf == (0.5 if deeper else 1.0), k
    assert {c.bf for c in res.tuning} == {0.5, 1.0}


def test_the_tuner_starts_from_its_first_levels():
    from cosim.bls.scheduler import initial_tunables

    cfg = BatchConfig(priority="metric-aware", adaptive="2d",
                      tuner_params={"w_levels": "2,4", "bf_levels": "0.75,0.25",
                                    "trigger": "crossing"})
    assert initial_tunables(cfg) == Tunables(bf=0.75, window=2)
    assert initial_tunables(BatchConfig(priority="metric-aware", adaptive="w")) == Tunables()
    assert initial_tunables(BatchConfig(priority="metric-aware", bf=0.5, window=3,
                                        adaptive="2d")) == Tunables(bf=0.5, window=3)
    res = simulate_batch(_load_pattern(), n_hosts=HOSTS, config=cfg)
    assert {c.window for c in res.tuning} <= {2, 4} and {c.bf for c in res.tuning} <= {
        0.75, 0.25}


def test_options_that_change_nothing_are_warned_about(tmp_path):
    from cosim.experiment import RunOptions, prepare

    swf = tmp_path / "w.swf"
    swf.write_text("1 0 -1 10 1 -1 -1 1 20 -1 1 -1 -1 -1 -1 -1 -1 -1\n")
    warnings: list[str] = []
    prepare(RunOptions(workload=str(swf), priority="metric-aware", makespan_cap_s=100.0,
                       adaptive="bf", tuner_params={"w_levels": "1,4"}), warn=warnings.append)
    assert any("--makespan-cap" in w for w in warnings)
    assert any("w_levels" in w and "does not tune W" in w for w in warnings)
    warnings.clear()
    prepare(RunOptions(workload=str(swf), priority="metric-aware", window=3,
                       adaptive="2d", makespan_cap_s=100.0), warn=warnings.append)
    assert not warnings


def test_tuner_options_are_checked():
    with pytest.raises(InputError, match="balance factor"):
        BatchConfig(adaptive="bf")  # fcfs has no BF
    with pytest.raises(InputError, match="no tuner"):
        BatchConfig(tuner_params={"trigger": "level"})
    with pytest.raises(InputError, match="tuner-param.direction"):
        BatchConfig(adaptive="w", tuner_params={"direction": "up"})
    with pytest.raises(InputError, match="adaptive"):
        BatchConfig(adaptive="3d")
    with pytest.raises(InputError, match="tuner-param.u_short_s.*at most"):
        BatchConfig(adaptive="w", tuner_params={"u_short_s": "1e300"})
    with pytest.raises(InputError, match="tuner-param.check_interval_s.*> 0"):
        BatchConfig(adaptive="w", tuner_params={"check_interval_s": "1e-12"})


def test_the_tuner_log_reaches_results_and_the_trace(tmp_path):
    from cosim.output.hdf5 import read_results
    from cosim.workload.swf_write import write_jobs_swf

    swf = tmp_path / "pattern.swf"
    write_jobs_swf(swf, _load_pattern())
    out = tmp_path / "run"
    assert main(["run", "--workload", str(swf), "--hosts", str(HOSTS), "--priority",
                 "metric-aware", "--adaptive", "2d", "--trace", "batch", "--out", str(out),
                 "--quiet"]) == 0
    (run,) = read_results(out / "results.h5")
    expect = _tuned("2d").tuning
    assert run.tuning["time"].tolist() == [c.time for c in expect]
    assert run.tuning["bf"].tolist() == [c.bf for c in expect]
    assert run.tuning["window"].tolist() == [c.window for c in expect]
    assert run.config["adaptive"] == "2d"
    otf2 = pytest.importorskip("otf2")
    with otf2.reader.open(str(out / "trace" / "traces.otf2")) as trace:
        samples = [ev for _, ev in trace.events if type(ev).__name__ == "Metric"
                   and ev.metric.metric_class.members[0].name == "queue depth"]
    assert [ev.time for ev in samples] == [c.time for c in expect]
    assert [ev.values[3] for ev in samples] == [c.bf for c in expect]


# -- metrics: Cobalt's loss of capacity, the queue depth --------------------------------------

def test_cobalt_loss_of_capacity_counts_only_idle_hosts_a_waiting_job_could_use():
    from cosim.output import metrics

    # 4 hosts; A (3 hosts) on [0, 10); B (2 hosts) waits for it; C (1 host) arrives at 5 and
    # waits behind B (no backfilling): 1 host idle on [0, 10) while jobs wait
    jobs = [job(1, 0, 3, 10), job(2, 0, 2, 10), job(3, 5, 1, 1)]
    res = simulate_batch(jobs, n_hosts=4, config=BatchConfig(backfill="none"))
    assert metrics.loss_of_capacity(res.outcomes, 4) == 10 / (4 * 20)
    # Cobalt: B needs 2 > 1 idle; C needs 1, not fewer than the 1 idle (strict <): no loss
    assert metrics.loss_of_capacity(res.outcomes, 4, fit_only=True) == 0.0
    jobs[1] = job(2, 0, 3, 10)
    res = simulate_batch(jobs, n_hosts=5, config=BatchConfig(backfill="none"))
    # on 5 hosts with B of 3 hosts, 2 are idle on [0, 10): C (1 host) would fit in them
    # from 5 on: 2 x 5 lost
    assert metrics.loss_of_capacity(res.outcomes, 5, fit_only=True) == 2 * 5 / (5 * 20)
    assert metrics.loss_of_capacity(res.outcomes, 5, fit_only=True,
                                    allocations=res.allocations) == 2 * 5 / (5 * 20)


@settings(max_examples=60, deadline=None)
@given(workloads(), st.sampled_from(sorted(policies.BACKFILLS.builtins)))
def test_the_loss_variants_and_the_queue_depth_on_random_workloads(data, backfill):
    from cosim.output import metrics

    n_hosts, jobs = data
    res = simulate_batch(jobs, n_hosts=n_hosts, config=BatchConfig(backfill=backfill))
    out = res.outcomes
    plain = metrics.loss_of_capacity(out, n_hosts)
    fit = metrics.loss_of_capacity(out, n_hosts, fit_only=True)
    assert 0.0 <= fit <= plain <= 1.0
    assert fit == metrics.loss_of_capacity(out, n_hosts, fit_only=True,
                                           allocations=res.allocations)
    times, q = metrics.queue_depth(out)
    for t, depth in zip(times.tolist(), q.tolist(), strict=True):
        brute = sum(t - o.job.submit for o in out if o.job.submit <= t < o.start)
        assert depth == pytest.approx(brute / (60 * S), rel=1e-12, abs=1e-12)


# -- the study script -----------------------------------------------------------------------

def test_the_study_script_on_a_small_trace(tmp_path, capsys):
    from cosim.testing.study import load_script
    from cosim.workload.swf_write import write_jobs_swf

    mod = load_script("reproduce_metric_aware")
    if mod is None:
        pytest.skip("not a source checkout: the scripts are not installed")
    swf = tmp_path / "pattern.swf"
    write_jobs_swf(swf, _load_pattern()[:120], header=[("MaxNodes", str(HOSTS))])
    out = tmp_path / "study"
    assert mod.main(["--traces", str(swf), "--out", str(out), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    configs = {r["config"]: r for r in rows}
    assert set(mod.TABLE) <= set(configs) and len(rows) == len(mod._configs())
    direct = simulate_batch(_load_pattern()[:120], n_hosts=HOSTS, config=BatchConfig(
        priority="metric-aware", bf=0.5))
    wait = np.mean([(o.start - o.job.submit) / S for o in direct.outcomes]) / 60
    assert configs["BF=0.5 W=1"]["mean_wait_min"] == pytest.approx(wait, rel=1e-12)
    assert configs["BF=1 W=1"]["slides_wait_min"] == 245.2
    for name in ("table.csv", "metric_aware_bf_w.png", "metric_aware_tuning.png"):
        assert (out / name).stat().st_size > 0
    assert mod.main(["--traces", "nosuch", "--out", str(out)]) == 2


# -- Sabin's unfair jobs, by replay (opt-in) ----------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(workloads(), st.sampled_from(sorted(policies.BACKFILLS.builtins)),
       st.sampled_from(sorted(policies.PRIORITIES.builtins)))
def test_replayed_fair_starts(data, backfill, priority):
    from cosim.runner import replayed_fair_starts

    assume(not (policies.PRIORITIES[priority].value_based and backfill == "conservative"))
    n_hosts, jobs = data
    cfg = BatchConfig(backfill=backfill, priority=priority)
    res = simulate_batch(jobs, n_hosts=n_hosts, config=cfg)
    fair = replayed_fair_starts(jobs, n_hosts=n_hosts, config=cfg)
    start = {o.job.id: o.start for o in res.outcomes}
    last = max(jobs, key=lambda j: (j.submit, j.id))
    assert fair[last.id] == start[last.id]  # nothing arrived after the last job
    assert all(fair[j.id] >= j.submit for j in jobs)
    if backfill == "none" and priority == "fcfs":  # no later arrival can delay a job
        assert fair == start


def test_unfair_replayed_in_a_run(tmp_path, capsys):
    from cosim.workload.swf_write import write_jobs_swf

    swf = tmp_path / "w.swf"
    # 4 hosts: job 1 (2 hosts) asks for 100 s but ends at 20; job 2 (4 hosts) waits for it
    # (shadow time 100); job 3 (2 hosts, 50 s) arrives later and backfills (it ends by 100).
    # At 20 job 2 could start, but job 3 holds 2 hosts until 53: a later arrival delayed
    # it — Sabin's one unfair job (job 3, the last, starts as it would anyway)
    jobs = [job(1, 0, 2, 100, run=20), job(2, 1, 4, 10), job(3, 3, 2, 50)]
    write_jobs_swf(swf, jobs, header=[("MaxNodes", "4")])
    assert main(["run", "--workload", str(swf), "--unfair-replayed", "--out",
                 str(tmp_path / "o"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    from cosim.output.metrics import unfair_jobs_replayed
    from cosim.runner import replayed_fair_starts

    res = simulate_batch(jobs, n_hosts=4, config=BatchConfig())
    fair = replayed_fair_starts(jobs, n_hosts=4, config=BatchConfig())
    assert summary["unfair_jobs_replayed"] == unfair_jobs_replayed(res.outcomes, fair) == 1
    assert (fair[2], {o.job.id: o.start for o in res.outcomes}[2]) == (20 * S, 53 * S)
    esp = TRACES_DIR / "esp-mandelbrot.swf"
    assert main(["run", "--workload", str(esp), "--unfair-replayed", "--out",
                 str(tmp_path / "e")]) == 2
    assert "unfair-replayed" in capsys.readouterr().err
