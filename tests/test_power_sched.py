"""Scheduling under a power cap (Kumbhare et al.; spec docs/reference/policies.md §4.3):
the progress model (VP-7), the power invariant, the energy identity and earned values over
random workloads and every strategy (VP-5, VP-6), dynamic = static with nothing to
reallocate (VP-8), VPT = SJF without a cap (VP-4 with a power table), the hand VPT/VPE order
under two caps (VP-3) and the reclaim rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosim.als.trace_apps import TraceApps
from cosim.bls import BatchConfig, simulate_batch
from cosim.bls.power import STRATEGIES, budget_mw
from cosim.errors import InputError
from cosim.platform.power import NOMINAL_PPM, WORK_PER_TICK, PowerModel, ticks_for, work_done
from cosim.protocol.messages import AppCompleted, SetPower, StartApp
from cosim.workload.jobs import Job
from cosim.workload.value import JobValue, earned, productivity, value_at

S = 1_000_000_000
MODEL = PowerModel()


def test_the_progress_model_of_a_trace_app():
    """VP-7: a 100 s job (beta = 1) lowered to p_min at 50 s ends at 150 s; raised back to
    p_max at 100 s it ends at 125 s."""
    slow = MODEL.multiplier_ppm(MODEL.p_min_w, 1.0)
    assert slow == 2 * NOMINAL_PPM
    job = Job(id=1, submit=0, hosts=1, pes=1, walltime=200 * S, runtime=100 * S, power_beta=1.0)
    apps = TraceApps({1: job}, np.zeros(1, dtype=np.int64))
    apps.apply([StartApp(time=0, job_id=1, hosts=(0,), pes=1, watts_mw=115_000)])
    apps.advance(50 * S)
    apps.apply([SetPower(time=50 * S, job_id=1, watts_mw=60_000, slowdown_ppm=slow)])
    assert apps.promise() == 150 * S
    apps.advance(100 * S)
    apps.apply([SetPower(time=100 * S, job_id=1, watts_mw=115_000, slowdown_ppm=NOMINAL_PPM)])
    assert apps.promise() == 125 * S
    facts = apps.advance(125 * S)
    assert [type(f) for f in facts] == [AppCompleted] and facts[0].time == 125 * S


def test_a_start_at_low_power_stretches_the_run_time():
    job = Job(id=1, submit=0, hosts=1, pes=1, walltime=200 * S, runtime=100 * S)
    apps = TraceApps({1: job}, np.zeros(1, dtype=np.int64))
    m = MODEL.multiplier_ppm(80.0, 0.8)
    apps.apply([StartApp(time=0, job_id=1, hosts=(0,), pes=1, watts_mw=80_000,
                         slowdown_ppm=m)])
    apps.advance(0)  # its AppStarted
    assert apps.promise() == -(-100 * S * m // NOMINAL_PPM)


def _random_jobs(draw_ints, n, hosts, valued):
    jobs = []
    t = 0
    for i in range(n):
        t += draw_ints[5 * i] % 40 * S
        h = 1 + draw_ints[5 * i + 1] % hosts
        wall = (10 + draw_ints[5 * i + 2] % 200) * S
        run = max(1, wall * (1 + draw_ints[5 * i + 3] % 120) // 100)  # some overrun
        value = None
        if valued:
            v = float(1 + draw_ints[5 * i + 4] % 16)
            soft = wall * (1 + draw_ints[5 * i + 4] % 3)
            value = JobValue(v=v, soft=soft, hard=soft + wall * (1 + draw_ints[5 * i] % 4))
        table = ((60.0, 1.9), (90.0, 1.3), (115.0, 1.0)) if i % 7 == 3 else None
        jobs.append(Job(id=i + 1, submit=t, hosts=h, pes=h, walltime=wall, runtime=run,
                        value=value, power_beta=(draw_ints[5 * i + 2] % 11) / 10,
                        power_table=table))
    return jobs


def _check_run(jobs, result, config, n_hosts, model=MODEL):
    """The invariants of a capped run, recomputed from the outcomes alone."""
    levels = set(model.levels_mw())
    sockets, idle = model.sockets, round(model.p_idle_w * 1000)
    cap = budget_mw(model, n_hosts, fraction=config.power_cap)
    by_id = {j.id: j for j in jobs}
    changes = []  # (tick, +/- mW of one job's hosts)
    energy_total = 0
    for o in result.outcomes:
        if o.status in ("dropped", "rejected"):
            assert o.start is None and not o.power and o.energy_j == 0.0
            continue
        job = by_id[o.job.id]
        assert o.power and o.power[0][0] == o.start
        energy = 0
        for k, (t, mw) in enumerate(o.power):
            assert mw in levels
            until = o.power[k + 1][0] if k + 1 < len(o.power) else o.end
            assert o.start <= t <= until <= o.end
            energy += job.hosts * sockets * mw * (until - t)
            changes.append((t, job.hosts * sockets * (mw - idle)))
            changes.append((until, -job.hosts * sockets * (mw - idle)))
        assert o.energy_j == energy / 10**12
        energy_total += energy
        # the end follows from the segments: the progress model, recomputed
        # (and the walltime kill counts nominal work the same way)

        def finish(ticks):
            work = ticks * WORK_PER_TICK
            for k, (t, mw) in enumerate(o.power):
                m = model.curve_multiplier_ppm(mw / 1000, job.power_curve)
                if k + 1 == len(o.power):
                    return t + ticks_for(work, m)
                work = max(work - work_done(o.power[k + 1][0] - t, m), 0)

        end, kill = finish(job.runtime), finish(job.walltime)
        if o.status == "completed":
            assert o.end == end <= kill
        else:
            assert o.status == "killed" and o.end == kill < end
    # the cap holds at every instant (ends before starts at one tick)
    draw = n_hosts * sockets * idle
    for _, delta in sorted(changes, key=lambda c: (c[0], c[1])):
        draw += delta
        assert draw <= cap
    # the energy identity: jobs + idle = the integral of the system series
    p = result.power
    assert p.jobs_j == energy_total / 10**12
    series = p.series
    integral = sum(w * (series[k + 1][0] - t) for k, (t, w) in enumerate(series[:-1])) / 1e9
    assert integral == pytest.approx(p.energy_j, rel=1e-9)
    assert p.peak_w <= p.cap_w
    # earned values and productivity
    assert productivity(result.outcomes)["productivity"] == sum(
        earned(o) for o in sorted(result.outcomes, key=lambda o: o.job.id))
    for o in result.outcomes:
        if o.status == "completed" and o.job.value is not None:
            assert earned(o) == value_at(o.job.value, o.end - o.job.submit)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ints=st.lists(st.integers(0, 10**6), min_size=200, max_size=200),
       n=st.integers(1, 40), priority=st.sampled_from(["vpt", "vpe", "fcfs", "sjf"]),
       backfill=st.sampled_from(["greedy", "none", "easy", "conservative"]),
       strategy=st.sampled_from(STRATEGIES),
       dynamic=st.booleans(), cap=st.sampled_from([0.3, 0.55, 0.6, 0.8, 1.0]),
       idle=st.sampled_from([0.0, 10.0]))
def test_the_power_invariants_on_random_workloads(ints, n, priority, backfill, strategy,
                                                 dynamic, cap, idle):
    """VP-5 and VP-6 over every strategy, static and dynamic, with and without idle power."""
    model = PowerModel(p_idle_w=idle)
    if backfill == "conservative" and priority in ("vpt", "vpe"):
        backfill = "easy"  # (value orders refuse conservative backfilling)
    if dynamic:
        backfill = "greedy"  # (dynamic management runs after the greedy pass only)
    jobs = _random_jobs(ints, n, 4, valued=priority in ("vpt", "vpe"))
    config = BatchConfig(priority=priority, backfill=backfill, power_cap=cap,
                         power_strategy=strategy, power_dynamic=dynamic)
    result = simulate_batch(jobs, n_hosts=6, config=config, power=model)
    _check_run(jobs, result, config, 6, model)


def _kth(n=1500):
    from cosim.paths import TRACES_DIR
    from cosim.workload.swf import read_swf

    return read_swf(TRACES_DIR / "KTH-SP2-1996-2.1-cln.swf.gz", max_hosts=100).jobs[:n]


def _starts(result):
    return [(o.job.id, o.start, o.end, o.status) for o in result.outcomes]


def test_dynamic_is_static_at_full_power():
    """VP-8: a cap of 100 % with ``max``: nothing to reallocate, the same schedule."""
    jobs = _kth()
    runs = [simulate_batch(jobs, n_hosts=100, power=MODEL, config=BatchConfig(
        priority="vpt", backfill="greedy", power_cap=1.0, power_strategy="max",
        power_dynamic=dyn)) for dyn in (False, True)]
    assert _starts(runs[0]) == _starts(runs[1])
    assert runs[1].power.changes == 0
    # and the same as without a cap at all
    plain = simulate_batch(jobs, n_hosts=100, config=BatchConfig(priority="vpt",
                                                                  backfill="greedy"))
    assert _starts(plain) == _starts(runs[0])


def test_vpt_is_sjf_at_full_power():
    """VP-4 with the power table: no effective cap, ``max``, all values 1: VPT = SJF."""
    jobs = _kth()
    capped = simulate_batch(jobs, n_hosts=100, power=MODEL, config=BatchConfig(
        priority="vpt", backfill="greedy", power_cap=1.0, power_strategy="max"))
    sjf = simulate_batch(jobs, n_hosts=100, config=BatchConfig(priority="sjf",
                                                                backfill="greedy"))
    assert _starts(capped) == _starts(sjf)


def test_power_aware_easy_is_easy_at_full_power():
    """With a cap every host can meet at p_max, power-aware EASY plans exactly as EASY."""
    jobs = _kth(3000)
    for priority in ("fcfs", "sjf"):
        capped = simulate_batch(jobs, n_hosts=100, power=MODEL, config=BatchConfig(
            priority=priority, backfill="easy", power_cap=1.0, power_strategy="max"))
        plain = simulate_batch(jobs, n_hosts=100, config=BatchConfig(priority=priority))
        assert _starts(capped) == _starts(plain)
        assert capped.first_reservation == plain.first_reservation


def test_power_aware_backfilling_reserves_power_for_the_head():
    """Four hosts, a cap of 700 W, FCFS, strategy max (230 W a host). Job 1 (1 host, to 100
    s) runs; job 2 (3 hosts, 690 W) fits in the hosts but not in the 470 W left: it is the
    head, its shadow time 100 s, when job 1 gives back its 230 W. Job 3 (1 host, 50 s)
    backfills: it ends before 100 s. Job 4 (1 host, 500 s) fits on arrival but neither ends
    by 100 s nor fits in the extra power then (700 - 690 = 10 W): it waits for job 2's end.
    Greedy, which reserves nothing, starts it on arrival and delays job 2 to its end."""
    jobs = [Job(id=1, submit=0, hosts=1, pes=1, walltime=100 * S, runtime=100 * S),
            Job(id=2, submit=1 * S, hosts=3, pes=3, walltime=100 * S, runtime=100 * S),
            Job(id=3, submit=2 * S, hosts=1, pes=1, walltime=50 * S, runtime=50 * S),
            Job(id=4, submit=3 * S, hosts=1, pes=1, walltime=500 * S, runtime=500 * S)]
    runs = {bf: simulate_batch(jobs, n_hosts=4, power=MODEL, config=BatchConfig(
        priority="fcfs", backfill=bf, power_cap_w=700.0, power_strategy="max"))
        for bf in ("easy", "conservative", "greedy")}
    for bf in ("easy", "conservative"):  # (conservative: job 4 reserved after job 2)
        starts = {o.job.id: o.start for o in runs[bf].outcomes}
        assert starts == {1: 0, 2: 100 * S, 3: 2 * S, 4: 200 * S}, bf
        assert runs[bf].first_reservation[2] == 100 * S
    assert runs["conservative"].first_reservation[4] == 200 * S
    starts = {o.job.id: o.start for o in runs["greedy"].outcomes}
    assert starts == {1: 0, 2: 503 * S, 3: 2 * S, 4: 3 * S}


def test_the_hand_order_under_two_caps():
    """VP-3 under a cap: four one-host jobs queued at 0 on a machine busy until 10 s, ranked
    at 10 s at the level ``best`` gives each; with room for one job at p_max (cap 230 W of
    two hosts: one running at 60 W... ) the order, and which job starts, follow VPT at the
    levels computed by hand."""
    from cosim.bls.policies.base import QueueColumns
    from cosim.bls.policies.value_order import scores
    from cosim.workload.value import value_params

    # beta 1: T(p_min) = 2 T; values: job 1 v=8 ST=40 HT=120, job 2 v=3 ST=10 HT=1000
    vals = [JobValue(v=8.0, soft=40 * S, hard=120 * S), JobValue(v=3.0, soft=10 * S,
                                                                   hard=1000 * S)]
    jobs = [Job(id=i + 1, submit=0, hosts=1, pes=1, walltime=40 * S, runtime=40 * S,
                value=v, power_beta=1.0) for i, v in enumerate(vals)]
    cols = QueueColumns.of(jobs)
    m = np.array([[MODEL.multiplier_ppm(60, 1.0), NOMINAL_PPM]] * 2)
    vpt = scores("vpt", 0, cols, value_params(jobs), m)
    # job 1: at p_min runs 80 s, V(80) = 8 - 8 (40/80) = 4 -> 4/80; at p_max 8/40
    # job 2: at p_min 80 s, V = 3 - 3 (70/990); at p_max V = 3 - 3 (30/990), over 40
    assert vpt[0].tolist() == [4.0 / (80 * S), 8.0 / (40 * S)]
    assert vpt[1, 0] == (3.0 - 3.0 * (70 / 990)) / (80 * S)
    assert vpt[1, 1] == (3.0 - 3.0 * (30 / 990)) / (40 * S)
    # VPE divides by hosts x power per host x time: at p_min job 1 earns 4 per 120 W x 80 s
    vpe = scores("vpe", 0, cols, value_params(jobs), m, np.array([[120_000, 230_000]] * 2))
    assert vpe[0, 0] == 4.0 / (80 * S * 120_000)
    assert vpe[0, 1] == 8.0 / (40 * S * 230_000)
    # a run: cap = one host at p_max + one at p_min (350 W of 460): best starts job 1 at
    # p_max (it ranks first), job 2 at what is left (p_min: 120 W)
    result = simulate_batch(jobs, n_hosts=2, power=PowerModel(), config=BatchConfig(
        priority="vpt", backfill="greedy", power_cap_w=350.0))
    got = {o.job.id: o.power for o in result.outcomes}
    assert got == {1: ((0, 115_000),), 2: ((0, 60_000),)}
    assert [o.end for o in result.outcomes] == [40 * S, 80 * S]


def test_the_hand_vpt_and_vpe_orders_under_two_caps():
    """VP-3: four jobs queued at 0 on 4 idle hosts, two levels (60 and 115 W a socket), values
    that do not decay yet, strategy best. beta 1 doubles the run time at 60 W, beta 0 keeps
    it. Cap 920 W (everything fits): VPT = v/T at 115 W: J3 .15, J2 .12, J1 .08, J4 .05; VPE
    = v / (hosts x 2 sockets x p x T), the best level each: J3 3/(230 x 20), J4 10/(120 x 200)
    (at 60 W: beta 0), J1 8/(230 x 100), J2 6/(2 x 230 x 50). Cap 200 W: one-host jobs fit at
    60 W only (J1 8/200, J3 3/40, J4 10/200), J2 (2 hosts) not at all: it ranks at its best
    level over all (115 W: VPT .12, VPE as above)."""
    from cosim.bls.power import PowerLedger, PowerPass, PowerSettings

    model = PowerModel(step_w=55.0)
    big = JobValue(v=1.0, soft=10**6 * S, hard=2 * 10**6 * S)
    spec = ((8.0, 100, 1, 1.0), (6.0, 50, 2, 1.0), (3.0, 20, 1, 1.0), (10.0, 200, 1, 0.0))
    jobs = [Job(id=i + 1, submit=0, hosts=n, pes=n, walltime=t * S, runtime=t * S,
                value=JobValue(v=v, soft=big.soft, hard=big.hard), power_beta=b)
            for i, (v, t, n, b) in enumerate(spec)]
    expect = {("vpt", 920): [3, 2, 1, 4], ("vpt", 200): [2, 3, 4, 1],
              ("vpe", 920): [3, 4, 1, 2], ("vpe", 200): [3, 4, 1, 2]}
    for (metric, cap_w), order in expect.items():
        ledger = PowerLedger(PowerSettings(model=model, n_hosts=4, cap_mw=cap_w * 1000,
                                           metric=metric))
        got = PowerPass(ledger, 0, jobs, ranked=True).rank_scores()
        assert [jobs[i].id for i in np.argsort(-got, kind="stable")] == order, metric
    ledger = PowerLedger(PowerSettings(model=model, n_hosts=4, cap_mw=200_000, metric="vpe"))
    got = PowerPass(ledger, 0, jobs, ranked=True).rank_scores()
    assert got.tolist() == [8 / (1 * 120_000 * 200 * S), 6 / (2 * 230_000 * 50 * S),
                            3 / (1 * 120_000 * 40 * S), 10 / (1 * 120_000 * 200 * S)]


def _reclaim_case(value: float, cap_w: float, dynamic: bool = True):
    """Jobs 1 and 2 run at p_max from 0 (beta 1, 100 s); job 1 finishes long before its
    soft threshold at any power (a free donor), job 2 right at it (any slowdown costs it
    value); job 3 (beta 0, 50 s) arrives at 10 s."""
    run = [Job(id=1, submit=0, hosts=1, pes=1, walltime=100 * S, runtime=100 * S,
               value=JobValue(v=1.0, soft=1000 * S, hard=2000 * S), power_beta=1.0),
           Job(id=2, submit=0, hosts=1, pes=1, walltime=100 * S, runtime=100 * S,
               value=JobValue(v=1.0, soft=100 * S, hard=300 * S), power_beta=1.0)]
    new = Job(id=3, submit=10 * S, hosts=1, pes=1, walltime=50 * S, runtime=50 * S,
              value=JobValue(v=value, soft=50 * S, hard=200 * S), power_beta=0.0)
    r = simulate_batch(run + [new], n_hosts=3, power=PowerModel(), config=BatchConfig(
        priority="vpt", backfill="greedy", power_cap_w=cap_w, power_strategy="max",
        power_dynamic=dynamic))
    return {o.job.id: o for o in r.outcomes}


def test_reclaim_takes_from_the_cheapest_donors_only_when_worth_it():
    """Spec §2.6 step 2: zero-loss donor steps first; a lossy step only when the newcomer
    earns more than is lost; else one level lower, with free donors only."""
    # 580 W: 110 W short of job 3 at p_max, which job 1 alone gives (11 steps of 10 W)
    assert _reclaim_case(10.0, 580.0, dynamic=False)[3].start == 100 * S  # static waits
    o = _reclaim_case(10.0, 580.0)
    assert o[3].start == 10 * S and o[3].power == ((10 * S, 115_000),)
    # ... and gets it back when job 3 ends at 60 s (redistribution: the queue is empty)
    assert o[1].power == ((0, 115_000), (10 * S, 60_000), (60 * S, 115_000))
    assert o[1].end > 100 * S
    assert o[2].power == ((0, 115_000),) and o[2].end == 100 * S
    # 579 W: 111 W short: job 2 must give one step too; worth it for a value of 10 ...
    o = _reclaim_case(10.0, 579.0)
    assert o[3].power == ((10 * S, 115_000),)
    assert o[2].power[:2] == ((0, 115_000), (10 * S, 110_000)) and o[2].end > 100 * S
    # ... not for 0.001: job 3 starts one level lower, on job 1's power alone
    o = _reclaim_case(0.001, 579.0)
    assert o[3].start == 10 * S and o[3].power == ((10 * S, 110_000),)
    assert o[2].power == ((0, 115_000),)


def test_bad_power_settings_are_refused():
    for kwargs, field in (({"power_cap": 1.5}, "power-cap"), ({"power_cap": 0.0}, "power-cap"),
                          ({"power_cap": 0.5, "power_cap_w": 1e5}, "power-cap"),
                          ({"power_strategy": "min"}, "power-cap"),
                          ({"power_dynamic": True}, "power-cap"),
                          ({"power_cap": 0.5, "power_strategy": "most"}, "power-strategy"),
                          ({"power_cap": 0.5, "backfill": "conservative"}, "batch"),
                          ({"power_cap": 0.5, "malleable": "equi"}, "power-cap"),
                          ({"power_cap": 0.5, "power_dynamic": True, "backfill": "easy"},
                           "power-dynamic")):
        with pytest.raises(InputError) as err:
            BatchConfig(**{"priority": "vpt", "backfill": "greedy", **kwargs})
        assert err.value.field == field, kwargs
    with pytest.raises(InputError, match="below what one host needs"):
        budget_mw(MODEL, 10, watts=100.0)
    with pytest.raises(InputError, match="power table"):
        simulate_batch(_kth(5), n_hosts=100, config=BatchConfig(power_cap=0.5,
                                                                backfill="greedy"))


def test_jobs_the_cap_can_never_hold_are_rejected():
    jobs = [Job(id=1, submit=0, hosts=3, pes=3, walltime=10 * S, runtime=10 * S),
            Job(id=2, submit=0, hosts=1, pes=1, walltime=10 * S, runtime=10 * S)]
    r = simulate_batch(jobs, n_hosts=4, power=MODEL, config=BatchConfig(
        backfill="greedy", power_cap=0.6, power_strategy="max"))
    assert [o.status for o in r.outcomes] == ["rejected", "completed"]


def test_a_measured_table_instead_of_the_beta_model():
    """A (watts, slowdown) table is interpolated linearly and wins over power_beta; a job
    with one runs as its table says (its end from its segments)."""
    from cosim.platform.power import parse_table, table_slowdown

    table = parse_table("60:2,90:1.4,115:1")
    assert table == ((60.0, 2.0), (90.0, 1.4), (115.0, 1.0))
    assert [table_slowdown(table, w) for w in (50, 60, 75, 90, 102.5, 115, 120)] == \
        [2.0, 2.0, 1.7, 1.4, 1.2, 1.0, 1.0]
    for bad in ("60:2,60:1", "60:1,115:2", "60:0.5,115:1", "60", "a:b"):
        with pytest.raises(ValueError):
            parse_table(bad)
    job = Job(id=1, submit=0, hosts=1, pes=1, walltime=100 * S, runtime=100 * S,
              power_beta=0.0, power_table=table)
    assert job.power_curve == table
    r = simulate_batch([job], n_hosts=4, power=MODEL, config=BatchConfig(
        backfill="greedy", power_cap_w=(3 * 120 + 150) * 1.0, power_strategy="uniform"))
    (o,) = r.outcomes
    # uniform: 510 W / 8 sockets = 63.75 W -> 60 W: slowdown 2 (beta 0 would give 1)
    assert o.power == ((0, 60_000),) and o.end == 200 * S


def test_reclaim_also_starts_what_the_freed_power_holds():
    """Reclaim frees power for job 2 from the value-less job 1 (a free donor); the power left
    after it holds job 3 too, which starts at once instead of waiting for the next event."""
    jobs = [Job(id=1, submit=0, hosts=40, pes=40, walltime=1000 * S, runtime=1000 * S),
            Job(id=2, submit=10 * S, hosts=1, pes=1, walltime=100 * S, runtime=100 * S,
                value=JobValue(v=5.0, soft=200 * S, hard=600 * S)),
            Job(id=3, submit=10 * S, hosts=1, pes=1, walltime=200 * S, runtime=200 * S,
                value=JobValue(v=1.0, soft=400 * S, hard=1200 * S))]
    r = simulate_batch(jobs, n_hosts=44, power=MODEL, config=BatchConfig(
        priority="vpt", backfill="greedy", power_cap_w=40 * 230 + 119.0, power_dynamic=True))
    assert [o.start for o in r.outcomes] == [0, 10 * S, 10 * S]
    assert r.power.peak_w <= r.power.cap_w


def test_conservative_under_a_cap_waits_for_an_overrunning_job():
    """Walltime kill off: a job past its estimate is expected to end at the next tick; the
    power-aware conservative plan asks for no wake-up meanwhile (else a pass every tick)."""
    from cosim.bls.scheduler import BatchScheduler

    jobs = [Job(id=1, submit=0, hosts=2, pes=2, walltime=10 * S, runtime=10 * S + 200_000),
            Job(id=2, submit=1 * S, hosts=1, pes=1, walltime=5 * S, runtime=5 * S)]
    passes = []
    orig = BatchScheduler._pass

    def counting(self, now, *a, **k):
        passes.append(now)
        return orig(self, now, *a, **k)

    BatchScheduler._pass = counting
    try:
        r = simulate_batch(jobs, n_hosts=2, power=MODEL, config=BatchConfig(
            priority="fcfs", backfill="conservative", walltime_kill=False, power_cap=1.0,
            power_strategy="max"))
    finally:
        BatchScheduler._pass = orig
    assert [o.start for o in r.outcomes] == [0, 10 * S + 200_000]
    assert len(passes) < 10


def test_a_job_whose_thresholds_coincide_is_not_dropped_at_them():
    """soft == hard: the value is v up to and including the threshold (value_at), so a job
    completing exactly then is not dropped before."""
    from cosim.workload.value import value_at, zero_from

    v = JobValue(v=5.0, soft=100 * S, hard=100 * S)
    assert value_at(v, 100 * S) == 5.0 and zero_from(v) == 100 * S + 1
    jobs = [Job(id=1, submit=0, hosts=1, pes=1, walltime=50 * S, runtime=50 * S),
            Job(id=2, submit=0, hosts=1, pes=1, walltime=50 * S, runtime=50 * S, value=v)]
    r = simulate_batch(jobs, n_hosts=1, config=BatchConfig(priority="fcfs", backfill="greedy",
                                                           drop_hopeless=True))
    assert [o.status for o in r.outcomes] == ["completed", "completed"]
    assert earned(r.outcomes[1]) == 5.0

