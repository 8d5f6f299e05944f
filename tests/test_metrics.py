"""Scheduling metrics on tiny schedules computed by hand."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.bls import BatchConfig, simulate_batch
from cosim.output import metrics
from cosim.workload.jobs import Job, JobOutcome

S = 1_000_000_000


def outcome(i, submit, start, end, hosts, status="completed", wall=None):
    job = Job(id=i, submit=submit * S, hosts=hosts, pes=hosts,
              walltime=(wall if wall is not None else end - start) * S, runtime=(end - start) * S)
    return JobOutcome(job=job, start=start * S, end=end * S, hosts=tuple(range(hosts)),
                      status=status)


# 4 hosts (the EASY schedule of test_bls.GOLDEN_B) plus a rejected job:
#   job  submit start end hosts | run wait response
#   1    0      0     10  2     | 10  0    10
#   2    0      10    15  3     | 5   10   15
#   3    1      1     6   1     | 5   0    5
#   4    1      6     8   2     | 2   5    7     (killed at its walltime)
#   5    rejected (5 hosts)
SCHEDULE = [outcome(1, 0, 0, 10, 2), outcome(2, 0, 10, 15, 3), outcome(3, 1, 1, 6, 1),
            outcome(4, 1, 6, 8, 2, "killed", wall=2),
            JobOutcome(job=Job(id=5, submit=0, hosts=5, pes=5, walltime=S, runtime=S),
                       start=None, end=None, hosts=(), status="rejected")]


def test_makespan_and_utilization():
    assert metrics.makespan(SCHEDULE) == 15.0  # last end 15 - first submit 0
    # busy host-time 2*10 + 3*5 + 1*5 + 2*2 = 44 over 4 hosts x (15 - 0)
    assert metrics.utilization(SCHEDULE, 4) == pytest.approx(44 / 60)


def test_means():
    assert metrics.mean_wait(SCHEDULE) == pytest.approx((0 + 10 + 0 + 5) / 4)
    assert metrics.mean_response(SCHEDULE) == pytest.approx((10 + 15 + 5 + 7) / 4)
    # slowdowns 10/10, 15/5, 5/5, 7/2
    assert metrics.mean_slowdown(SCHEDULE) == pytest.approx((1 + 3 + 1 + 3.5) / 4)
    # bounded (tau 10 s): 10/10, 15/10, max(1, 5/10), max(1, 7/10)
    assert metrics.mean_bounded_slowdown(SCHEDULE) == pytest.approx((1 + 1.5 + 1 + 1) / 4)


def test_loss_of_capacity():
    # idle hosts while a job waits: [0,1) 2 idle (job 2 waits), [1,6) 1 idle (2 and 4 wait),
    # [6,8) 0 idle, [8,10) 2 idle (2 waits), [10,15) nobody waits: (2 + 5 + 0 + 4) / (4 x 15)
    assert metrics.loss_of_capacity(SCHEDULE, 4) == pytest.approx(11 / 60)


def test_fair_starts_and_unfair_jobs():
    # strict FCFS replay: 1 at 0; 2 (3 hosts) at 10 when 1 ends; 3 at 10 beside it; 4 (2 hosts)
    # when 2 and 3 end at 15. Nobody started later than that.
    assert metrics.fair_starts(SCHEDULE, 4) == {1: 0, 2: 10 * S, 3: 10 * S, 4: 15 * S}
    assert metrics.unfair_jobs(SCHEDULE, 4) == 0
    # test_bls.GOLDEN_A under EASY: job 3 (6 hosts) would start at 20 in arrival order but the
    # backfilled job 4 delays it to 33: one unfair job.
    easy = [outcome(1, 0, 0, 10, 4), outcome(2, 1, 10, 20, 5), outcome(3, 2, 33, 43, 6),
            outcome(4, 3, 3, 33, 1)]
    assert metrics.fair_starts(easy, 6) == {1: 0, 2: 10 * S, 3: 20 * S, 4: 30 * S}
    assert metrics.unfair_jobs(easy, 6) == 1


def test_strict_fcfs_simulation_has_no_unfair_job():
    jobs = [Job(id=i, submit=(i * 7) % 5 * S, hosts=1 + i % 3, pes=1 + i % 3,
                walltime=(3 + i % 4) * S, runtime=(1 + i % 5) * S) for i in range(30)]
    out = simulate_batch(jobs, n_hosts=4, config=BatchConfig(backfill="none")).outcomes
    assert metrics.unfair_jobs(out, 4) == 0


def test_summary_excludes_rejected_jobs():
    s = metrics.summary(SCHEDULE, 4)
    assert {"jobs", "makespan_s", "utilization", "mean_wait_s", "mean_response_s",
            "mean_slowdown", "mean_bounded_slowdown", "loss_of_capacity",
            "unfair_jobs"} <= set(s)
    assert (s["jobs"], s["rejected"], s["killed"]) == (4, 1, 1)
    assert s["makespan_s"] == 15.0 and s["unfair_jobs"] == 0
    assert s["mean_wait_s"] == pytest.approx(3.75)


def test_empty_and_degenerate():
    s = metrics.summary([], 4)
    assert s["jobs"] == 0 and s["utilization"] == 0.0 and s["mean_slowdown"] == 0.0
    zero = [outcome(1, 0, 0, 0, 1)]
    assert metrics.mean_slowdown(zero) == 0.0  # no job with a positive run time
    assert metrics.mean_bounded_slowdown(zero) == 1.0
    assert metrics.utilization(zero, 1) == 0.0


def test_no_integer_overflow_on_long_traces():
    # 5040 hosts x 10^9 s in ticks is ~5e21: beyond int64, computed exactly
    big = [outcome(1, 0, 0, 10**9, 5040)]
    assert metrics.utilization(big, 5040) == 1.0
    assert metrics.loss_of_capacity(big + [outcome(2, 0, 10**9, 2 * 10**9, 5040)], 5040) == 0.0


# -- resizes and PE-level utilization ----------------------------------------------------


def test_resize_totals_and_pe_utilization_by_hand():
    # job 1: 2 hosts x 2 PEs for 10 s = 40 PE s; job 2 shrunk once and expanded twice,
    # using 30 PE s over [10, 15): 70 PE s over 4 hosts x 2 cores x 15 s
    j1 = replace(outcome(1, 0, 0, 10, 2), pe_ticks=40 * S)
    j2 = replace(outcome(2, 0, 10, 15, 3), shrinks=1, expands=2, pe_ticks=30 * S)
    s = metrics.summary([j1, j2], 4, cores_per_host=2)
    assert (s["shrinks"], s["expands"], s["resized_jobs"]) == (1, 2, 1)
    assert s["pe_utilization"] == pytest.approx(70 / (4 * 2 * 15))
    assert metrics.pe_utilization([j1, j2], 4, 2) == s["pe_utilization"]
    # without the cores per host there is no PE utilization (the keys stay the same)
    bare = metrics.summary([j1, j2], 4)
    assert bare["pe_utilization"] is None and list(bare) == list(s)
    assert metrics.summary([], 4, cores_per_host=2)["pe_utilization"] == 0.0


def test_the_allocation_log_gives_the_same_metrics_without_resizes():
    import numpy as np

    from cosim.testing.workloads import lublin_like

    jobs = lublin_like(400, 16, np.random.default_rng(5), cores=4)
    res = simulate_batch(jobs, n_hosts=16, cores_per_host=4)
    plain = metrics.summary(res.outcomes, 16, cores_per_host=4)
    logged = metrics.summary(res.outcomes, 16, cores_per_host=4, allocations=res.allocations)
    assert plain == logged  # exactly: the same integers summed
    assert logged["resized_jobs"] == 0 and 0 < logged["pe_utilization"] < 1


def test_a_malleable_run_needs_its_log_for_host_utilization():
    from cosim.bls.alloclog import YIELDED
    from cosim.runner import simulate
    from cosim.testing.runs import malleable_jobs

    res = simulate(malleable_jobs(), n_hosts=8, cores_per_host=2,
                   batch=BatchConfig(malleable="equi"))
    a = res.allocations
    s = metrics.summary(res.outcomes, 8, cores_per_host=2, allocations=a)
    assert s["resized_jobs"] == sum(1 for o in res.outcomes if o.shrinks or o.expands) >= 3
    assert s["shrinks"] == res.stats.shrinks and s["expands"] == res.stats.expands
    # the log's busy rows hold every PE-tick the outcomes count
    busy = a[a["role"] != YIELDED]
    used = int((busy["hosts"].astype(int) * busy["pes"] * (busy["end"] - busy["start"])).sum())
    assert used == sum(o.pe_ticks for o in res.outcomes)
    assert 0 < s["utilization"] <= 1.0 and 0 < s["pe_utilization"] <= 1.0
    assert 0 <= s["loss_of_capacity"] <= 1.0
    # without the log, a resized job counts with every host it ever had PEs on
    assert metrics.utilization(res.outcomes, 8) > s["utilization"]


@pytest.mark.parametrize("technique", ["STATIC", "FAC2"])
def test_the_allocation_log_gives_the_same_metrics_with_rca_lending(technique):
    from cosim.als.manager import AlsConfig
    from cosim.als.techniques import get
    from cosim.platform import load_platform
    from cosim.runner import cosimulate
    from cosim.testing.runs import tiny_jobs

    platform = load_platform("tiny8x2")
    res = cosimulate(tiny_jobs(), platform=platform, n_hosts=8,
                     batch=BatchConfig(backfill="easy", rca=True),
                     als=AlsConfig(technique=get(technique)))
    plain = metrics.summary(res.outcomes, 8, cores_per_host=2)
    assert plain["lends"] > 0  # owners' tails cut by borrowers, resumed after them
    assert metrics.summary(res.outcomes, 8, cores_per_host=2,
                           allocations=res.allocations) == plain


def _busy_hosts_per_host(b):
    """Oracle of `busy_host_series`: one interval per host and row, swept per host."""
    from cosim.output.tables import _steps

    n = b["hosts"].astype(np.int64)
    rep = np.repeat(np.arange(len(b)), n)
    host = b["host"][rep].astype(np.int64) + (np.arange(int(n.sum()))
                                              - np.repeat(np.cumsum(n) - n, n))
    t = np.concatenate([b["start"][rep], b["end"][rep]])
    d = np.concatenate([np.ones(len(rep), np.int64), -np.ones(len(rep), np.int64)])
    h = np.concatenate([host, host])
    order = np.lexsort((d, t, h))  # per host in time, ends before starts at one tick
    t, d = t[order], d[order]
    after = np.cumsum(d)
    return _steps(t[(after - d == 0) & (d > 0)], t[(after == 0) & (d < 0)])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(1, 5), st.integers(0, 3),
                          st.integers(0, 20), st.integers(1, 10)), min_size=1, max_size=30))
def test_busy_hosts_of_shared_hosts_equal_the_per_host_count(rows):
    from cosim.bls.alloclog import ALLOC_DTYPE
    from cosim.output.tables import busy_host_series

    b = np.zeros(len(rows), dtype=ALLOC_DTYPE)
    for i, (h, n, core, s, dur) in enumerate(rows):  # cores >= 1: the shared-host path
        b[i] = (i, h, n, core + 1, 1, s, s + dur, 0, i)
    got, want = busy_host_series(b), _busy_hosts_per_host(b)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


@pytest.mark.parametrize("policy,cores,seed", [("sd", 4, 1), ("sd", 16, 2), ("sd", 1, 3),
                                               ("equi", 4, 4), ("equi", 16, 5)])
def test_busy_hosts_of_malleable_runs_equal_the_per_host_count(policy, cores, seed):
    # real logs: full-host rows (every core) next to rows of shared hosts
    from cosim.output.tables import busy_host_series, busy_rows
    from cosim.testing.workloads import lublin_like
    from cosim.workload.marking import mark_malleable

    jobs = lublin_like(300, 64, np.random.default_rng(seed), load=0.9, cores=cores)
    jobs = mark_malleable(jobs, 0.7, seed=seed)
    res = simulate_batch(jobs, n_hosts=64, cores_per_host=cores,
                         config=BatchConfig(malleable=policy, walltime_kill=policy == "sd"))
    b = busy_rows(res.allocations)
    full = (b["core"] == 0) & (b["pes"] == cores)
    assert full.any() and (~full).any() or cores == 1  # both kinds of rows are there
    got, want = busy_host_series(b), _busy_hosts_per_host(b)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_summary_equals_each_metric_computed_alone():
    # (the summary builds the jobs' columns once for all metrics)
    from cosim.testing.workloads import lublin_like
    from cosim.workload.marking import mark_malleable

    jobs = mark_malleable(lublin_like(300, 64, np.random.default_rng(9), load=0.9, cores=4),
                          0.5, seed=2)
    res = simulate_batch(jobs, n_hosts=64, cores_per_host=4, config=BatchConfig(malleable="sd"))
    o, a = list(res.outcomes), res.allocations
    s = metrics.summary(o, 64, cores_per_host=4, allocations=a)
    alone = {"makespan_s": metrics.makespan(o), "mean_wait_s": metrics.mean_wait(o),
             "utilization": metrics.utilization(o, 64, allocations=a),
             "mean_response_s": metrics.mean_response(o),
             "mean_slowdown": metrics.mean_slowdown(o),
             "mean_bounded_slowdown": metrics.mean_bounded_slowdown(o),
             "loss_of_capacity": metrics.loss_of_capacity(o, 64, allocations=a),
             "unfair_jobs": metrics.unfair_jobs(o, 64),
             "pe_utilization": metrics.pe_utilization(o, 64, 4, allocations=a)}
    assert {k: s[k] for k in alone} == alone and s["jobs"] == len(o)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**62), 2**62), st.integers(-(2**62), 2**62)),
                max_size=300),
       st.sampled_from([0, 1, 8, 24, 40, 62]), st.sampled_from([1, 20, 40, 50, 62]))
def test_dot_is_exact_at_any_size(pairs, bits, bits_b):
    """`_dot` (numpy over chunks that cannot overflow) equals the Python-int dot product."""
    from cosim.output.metrics import _dot

    a = np.array([x >> (62 - bits) for x, _ in pairs], dtype=np.int64)
    b = np.array([y >> (62 - bits_b) for _, y in pairs], dtype=np.int64)
    assert _dot(a, b) == sum(x * y for x, y in zip(a.tolist(), b.tolist(), strict=True))
    assert _dot(a > 0, b) == sum(y for x, y in zip(a.tolist(), b.tolist(), strict=True)
                                 if x > 0)
    # the worst case: every product as large as allowed and of one sign, past int64 in all
    for big in (2**20, 2**25, 2**27):
        n = 3000
        big_a, big_b = np.full(n, big, dtype=np.int64), np.full(n, -(2**30), dtype=np.int64)
        assert _dot(big_a, big_b) == -n * big * 2**30


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60), st.integers(1, 9)),
                max_size=40),
       st.lists(st.integers(0, 130), min_size=1, max_size=80))
def test_the_smallest_waiting_job_is_the_brute_force_one(jobs, ticks):
    """Cobalt's loss test reads, at each tick, the hosts of the smallest job submitted and
    not started by then: the block decomposition equals the minimum over every job."""
    from cosim.output.metrics import _smallest_waiting

    submit = np.array([s for s, _, _ in jobs], dtype=np.int64)
    start = submit + np.array([w for _, w, _ in jobs], dtype=np.int64)
    hosts = np.array([h for _, _, h in jobs], dtype=np.int64)
    at = np.array(sorted(set(ticks)), dtype=np.int64)
    none = np.iinfo(np.int64).max
    want = [min((h for s, b, h in zip(submit.tolist(), start.tolist(), hosts.tolist(),
                                      strict=True) if s <= t < b), default=none)
            for t in at.tolist()]
    assert _smallest_waiting(submit, start, hosts, at).tolist() == want


@pytest.mark.skipif(metrics._kernel is None, reason="the compiled kernels were not built "
                    "(no C compiler when installed): fair_starts runs its Python loop")
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 25), st.integers(0, 12),
                          st.integers(1, 6), st.sampled_from(["completed", "killed",
                                                              "rejected"])),
                max_size=80),
       st.integers(4, 30))
def test_the_compiled_fair_starts_equal_the_python_loop(jobs, n_hosts):
    """Ties of submission, of ends and of start instants, zero run times, jobs that never
    ran: the compiled loop gives `fair_starts`' Python loop's starts, in the same order, on a
    plain list and inside `summary`; a job wider than the machine is the Python loop's
    (its error)."""
    outs = [outcome(i, s, s + w, s + w + r, h, status=st_) if st_ != "rejected" else
            JobOutcome(job=Job(id=i, submit=s * S, hosts=h, pes=h, walltime=S, runtime=S),
                       start=None, end=None, hosts=(), status="rejected")
            for i, (s, w, r, h, st_) in enumerate(jobs)]
    try:
        want = metrics._fair_starts_python(outs, n_hosts)
    except IndexError:
        assert metrics._fair_starts_compiled(outs, n_hosts) is None
        with pytest.raises(IndexError):
            metrics.fair_starts(outs, n_hosts)
        return
    got = metrics._fair_starts_compiled(outs, n_hosts)
    if want:
        assert got == want and list(got) == list(want)
    else:
        assert got is None
    assert metrics.fair_starts(outs, n_hosts) == want
    unfair = sum(1 for o in outs if o.start is not None and o.start > want[o.job.id])
    assert metrics.summary(outs, n_hosts)["unfair_jobs"] == unfair


@pytest.mark.skipif(metrics._kernel is None, reason="the compiled kernels were not built "
                    "(no C compiler when installed): fair_starts runs its Python loop")
def test_what_the_compiled_fair_starts_leaves_to_the_python_loop():
    # ticks whose sum could leave int64: Python ints
    big = [outcome(i, 0, 0, 2**62 // S, 1) for i in (1, 2, 3)]
    assert metrics._fair_starts_compiled(big, 1) is None
    assert metrics.fair_starts(big, 1) == {1: 0, 2: (2**62 // S) * S, 3: 2 * (2**62 // S) * S}
    # a job on more hosts than the machine (borrowed ones counted): the Python loop's error
    wide = [outcome(1, 0, 0, 5, 3)]
    assert metrics._fair_starts_compiled(wide, 2) is None
    with pytest.raises(IndexError):
        metrics.fair_starts(wide, 2)
    # run times below zero do not lower the int64 guard
    q = 2**62 // S
    back = JobOutcome(job=Job(id=3, submit=0, hosts=1, pes=1, walltime=S, runtime=S),
                      start=q * S, end=0, hosts=(0,), status="completed")  # ends first
    odd = [outcome(1, 0, 0, q, 1), outcome(2, 0, 0, q, 1), back, outcome(4, 0, 0, q, 1)]
    assert metrics._fair_starts_compiled(odd, 1) is None
    assert metrics.unfair_jobs(odd, 1) == sum(
        1 for o in odd if o.start > metrics._fair_starts_python(odd, 1)[o.job.id])
    # an id twice (API input only: no reader makes one): as the Python loop counts
    twice = [outcome(1, 0, 0, 5, 1), outcome(1, 1, 1, 2, 1), outcome(2, 0, 6, 8, 1)]
    assert metrics._fair_starts_compiled(twice, 1) is None
    fst = metrics._fair_starts_python(twice, 1)
    assert metrics.unfair_jobs(twice, 1) == sum(1 for o in twice if o.start > fst[o.job.id])
    # the kernel checks its input
    with pytest.raises(TypeError, match="int64"):
        metrics._kernel.fcfs_starts(2, np.zeros(1, dtype=np.int64), np.zeros(2, dtype=np.int64),
                                    np.ones(2, dtype=np.int64), 4)
    with pytest.raises(ValueError):
        metrics._kernel.fcfs_starts(-1, np.zeros(0, dtype=np.int64),
                                    np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 4)


def test_the_value_keys_appear_only_when_a_job_has_a_value():
    """`summary` adds productivity, normalized productivity and completion rate when some
    job carries a value (`cosim.workload.value`), and only then; from the outcomes or the
    columns alike."""
    from cosim.output.columns import OutcomeColumns
    from cosim.workload.value import JobValue

    keys = {"productivity", "normalized_productivity", "completion_rate"}
    ran = SCHEDULE[:4]
    for outs in (ran, [replace(ran[0], job=replace(ran[0].job, value=JobValue(
            v=4.0, soft=20 * S, hard=40 * S))), *ran[1:]]):
        valued = any(o.job.value is not None for o in outs)
        for columns in (None, OutcomeColumns.of(outs)):
            got = metrics.summary(outs, 4, columns=columns)
            assert keys <= set(got) if valued else not keys & set(got)
            if valued:
                assert got["productivity"] == pytest.approx(4.0)
