"""RCA full: exclusion requests, from the hint in the workload to the hosts lent.

Hand scenarios on a 4-host slice of ``tiny8x2`` (2 cores a host): an SS app on 3 hosts with
a minute of work, and a 2-host job queued behind it that is one host short. Invariants over
random workloads: every iteration of every app runs exactly once, a host runs one job's PEs at
a time (a borrower only after its owner's PEs left it), the run is deterministic, and the
counters agree with the outcomes. The ALS side is checked against a standalone `LoopRun` with
the same removal, so the rollback (replay) path gives exactly the run a live removal gives.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosim.als.manager import AlsConfig, AppSimulator
from cosim.als.techniques import get
from cosim.bls import BatchConfig
from cosim.bls.alloclog import YIELDED
from cosim.errors import InputError, ProtocolError
from cosim.output.tables import build_tables
from cosim.platform import load_platform
from cosim.protocol.messages import ExcludeHosts, HostsExcluded, HostsYielded, StartApp
from cosim.runner import cosimulate
from cosim.workload.jobs import Job

S = 1_000_000_000
PLATFORM = load_platform("tiny8x2")
APP = {"width": "32", "max_iter": "400"}


def app_job(i, submit, hosts, flop, *, ok=True, wall=1000):
    return Job(id=i, submit=int(submit * S), hosts=hosts, pes=2 * hosts, walltime=wall * S,
               runtime=60 * S, app="mandelbrot", exclusion_ok=ok,
               app_params={**APP, "total_flop": f"{flop:g}"})


def rigid(i, submit, hosts, run):
    return Job(id=i, submit=int(submit * S), hosts=hosts, pes=2 * hosts, walltime=run * S,
               runtime=run * S)


def simulate(jobs, *, technique="SS", exclusion=True, max_slowdown=1.0, max_short=0.5,
             n_hosts=4, record=True):
    return cosimulate(jobs, platform=PLATFORM, n_hosts=n_hosts,
                      batch=BatchConfig(rca=True, exclusion=exclusion,
                                        exclusion_max_short=max_short),
                      als=AlsConfig(technique=get(technique), max_slowdown=max_slowdown,
                                    record=record))


def scenario(**kw):
    """A (3 hosts, 6 PEs, 360 GFLOP = 60 s on 6 PEs) from 0; B (2 hosts) queued at 10 s."""
    return simulate([app_job(1, 0, 3, 3.6e11), rigid(2, 10, 2, 30)], **kw)


def by_id(result):
    return {o.job.id: o for o in result.outcomes}


def test_an_app_gives_up_a_host_and_the_queued_job_borrows_it():
    res = scenario()
    o = by_id(res)
    a, b = o[1], o[2]
    assert res.stats.exclusion_requests == 1 and res.stats.exclusions_accepted == 1
    assert res.stats.hosts_excluded == 1
    # B starts when the excluded host's PEs finish the chunk they had at 10 s: SS chunks are
    # one iteration, so within a fraction of a second
    assert 10 * S < b.start < 11 * S
    (host, owner), = [h for h in b.borrowed]
    assert owner == 1 and host in a.hosts and host != a.hosts[0]  # never the master's host
    assert (host, b.start) in a.yielded
    assert (host, b.start) in a.lent
    # A did its work on fewer PEs: it ends later than without the request
    alone = by_id(scenario(exclusion=False))
    assert alone[2].start > 50 * S  # without the request B waits for A's first yield
    assert a.end > alone[1].end
    assert b.start < alone[2].start


def test_the_app_refuses_when_the_predicted_slowdown_is_too_high():
    res = scenario(max_slowdown=0.01)  # losing 2 of 6 PEs slows the rest by far more
    o = by_id(res)
    assert res.stats.exclusion_requests == 1 and res.stats.exclusions_accepted == 0
    alone = by_id(scenario(exclusion=False))
    assert o == alone  # a refusal changes nothing: B waits for A's first yield


def test_no_request_without_the_hint_or_when_the_job_is_short_of_too_many():
    res = simulate([app_job(1, 0, 3, 3.6e11, ok=False), rigid(2, 10, 2, 30)])
    assert res.stats.exclusion_requests == 0



@pytest.mark.parametrize("max_short, asked", [(0.5, None), (0.75, 2), (1.0, 2)])
def test_the_scheduler_asks_only_when_the_head_job_is_a_few_hosts_short(max_short, asked):
    from cosim.bls import BatchScheduler
    from cosim.protocol.messages import AppStarted

    sched = BatchScheduler(cores=[2] * 4, config=BatchConfig(
        rca=True, exclusion=True, exclusion_max_short=max_short))
    sched.submit([app_job(1, 0, 3, 3.6e11)], 0)
    (start,) = sched.schedule(0)
    sched.handle([AppStarted(time=0, job_id=1)])
    sched.submit([rigid(2, 10, 4, 30)], 10 * S)  # lacks 3 of its 4 hosts
    cmds = sched.schedule(10 * S)
    if asked is None:  # 3 > floor(0.5 x 4)
        assert cmds == []
    else:  # asked for at most A's working hosts minus one (the master's host stays)
        assert cmds == [ExcludeHosts(time=10 * S, job_id=1, count=asked, for_job=2)]
        assert sched.schedule(10 * S) == []  # asked once per queued job, not every pass
        with pytest.raises(ProtocolError):  # an answer giving more than asked
            sched.handle([HostsExcluded(time=10 * S, job_id=1, hosts=(0, 1, 2), for_job=2)])


def test_exclusion_needs_lending():
    with pytest.raises(InputError, match="lending"):
        BatchConfig(rca=False, exclusion=True)
    with pytest.raises(InputError):
        BatchConfig(rca=True, exclusion=True, exclusion_max_short=0.0)
    with pytest.raises(InputError):
        AlsConfig(technique=get("SS"), max_slowdown=-1)


def _direct(technique, at, hosts, count):
    """An app on `hosts`, run ahead to a promise, then asked at `at` for `count` hosts."""
    apps = AppSimulator(platform=PLATFORM, config=AlsConfig(technique=get(technique),
                                                            record=True, max_slowdown=1.0))
    params = tuple(sorted({**APP, "total_flop": "3.6e11"}.items()))
    apps.apply([StartApp(time=0, job_id=1, hosts=hosts, pes=2 * len(hosts), app="mandelbrot",
                         params=params)])
    apps.advance(0)
    apps.promise()  # runs ahead: the request below needs a rollback
    apps.advance(at)
    apps.apply([ExcludeHosts(time=at, job_id=1, count=count, for_job=9)])
    facts = []
    while apps.running:
        p = apps.promise()
        facts += apps.advance(p)
    return apps, facts


@pytest.mark.parametrize("technique", ["SS", "GSS", "FAC2", "AF"])
def test_the_rollback_gives_the_run_a_live_removal_gives(technique):
    from cosim.als.launch import job_pe_placement
    from cosim.als.runtime import LoopRun
    from cosim.core.rng import stream
    from cosim.platform.allocation import job_pe_indices
    from cosim.workload import TaskCosts, load_app

    at = 7 * S
    hosts = (0, 1, 2)
    apps, facts = _direct(technique, at, hosts, 1)
    excluded = [f for f in facts if isinstance(f, HostsExcluded)]
    assert len(excluded) == 1 and len(excluded[0].hosts) == 1 and excluded[0].time == at
    assert apps.rollbacks == 1
    got = apps.results[1]
    # the same loop, built by hand, with the PEs of the chosen host removed from at + 1 tick
    base = load_app("mandelbrot", overrides=dict(APP))
    costs = TaskCosts.from_array(base.flop * (3.6e11 / base.total), model=base.model,
                                 label="x", params={})
    pes = job_pe_indices(PLATFORM.pe_hosts(), hosts, 6)
    host_of, speeds, req, asg = job_pe_placement(PLATFORM, PLATFORM.pe_hosts(), pes,
                                                 AlsConfig(technique=get("SS")).comm)
    run = LoopRun(costs=costs, technique=get(technique), speeds=speeds, request_ticks=req,
                  assign_ticks=asg, start=0, rng=stream(0, "technique", 1))
    run.remove(at + 1, [r for r, h in enumerate(host_of) if h == excluded[0].hosts[0]])
    want = run.run()
    for col in ("rank", "first", "size", "t_assign", "t_start", "t_end"):
        assert np.array_equal(getattr(got.chunks, col), getattr(want.chunks, col)), col
    assert got.done == want.done
    # the excluded host is yielded (once) when its PEs get "no more work"
    yielded = [h for f in facts if isinstance(f, HostsYielded) for h in f.hosts]
    assert yielded.count(excluded[0].hosts[0]) == 1
    assert len(yielded) == len(set(yielded))


def test_a_request_for_an_unknown_or_ended_app_is_a_protocol_error():
    apps = AppSimulator(platform=PLATFORM, config=AlsConfig(technique=get("SS")))
    with pytest.raises(ProtocolError):
        apps.apply([ExcludeHosts(time=0, job_id=5, count=1, for_job=9)])


@st.composite
def workloads(draw):
    n = draw(st.integers(2, 9))
    jobs = []
    for i in range(1, n + 1):
        submit = draw(st.integers(0, 40))
        hosts = draw(st.integers(1, 6))
        if draw(st.booleans()):
            jobs.append(app_job(i, submit, hosts, draw(st.floats(2e10, 4e11)),
                                ok=draw(st.booleans())))
        else:
            jobs.append(rigid(i, submit, hosts, draw(st.integers(1, 60))))
    return jobs


def _check(res, jobs):
    t = build_tables(res.outcomes, run_id="x", config={}, metrics={}, stats={},
                     platform=PLATFORM, n_hosts=8, loops=res.loops, technique="SS",
                     allocations=res.allocations)
    # every iteration of every app ran exactly once
    for jid, lr in res.loops.items():
        c = lr.chunks
        cover = np.zeros(lr.n_tasks, dtype=np.int64)
        for f, s in zip(c.first.tolist(), c.size.tolist()):
            cover[f:f + s] += 1
        assert (cover == 1).all(), jid
    # per host: a job uses it only while no other job's PEs are on it (a borrower may start
    # once the owner's PEs have left it: after the owner's busy end on that host)
    a = t.allocations
    busy = a[a["role"] != YIELDED]
    for h in range(8):
        on = busy[(busy["host"] <= h) & (h < busy["host"] + busy["hosts"])]
        rows = sorted(zip(on["start"].tolist(), on["end"].tolist()))
        for (_, e0), (s1, _) in zip(rows, rows[1:]):
            assert s1 >= e0, (h, rows)  # next start >= previous busy end
    st_ = res.stats
    assert st_.exclusions_accepted <= st_.exclusion_requests
    assert st_.hosts_excluded >= st_.exclusions_accepted
    if not any(j.exclusion_ok and j.app != "rigid" for j in jobs):
        assert st_.exclusion_requests == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=workloads(), technique=st.sampled_from(["SS", "GSS", "FAC2", "STATIC", "AF"]),
       max_slowdown=st.sampled_from([0.0, 0.1, 1.0]))
def test_invariants_on_random_workloads(jobs, technique, max_slowdown):
    res = simulate(jobs, technique=technique, max_slowdown=max_slowdown, max_short=1.0,
                   n_hosts=8)
    _check(res, jobs)
    again = simulate(jobs, technique=technique, max_slowdown=max_slowdown, max_short=1.0,
                     n_hosts=8)
    assert again.outcomes == res.outcomes
    assert again.stats.hosts_excluded == res.stats.hosts_excluded


def test_the_hint_travels_in_swf_and_esp(tmp_path):
    from cosim.cli import main
    from cosim.workload.swf import read_swf
    from cosim.workload.swf_write import write_jobs_swf

    jobs = [app_job(1, 0, 2, 1e11), app_job(2, 5, 1, 1e11, ok=False)]
    path = tmp_path / "w.swf"
    write_jobs_swf(path, jobs)
    back = read_swf(str(path), cores_per_host=2, max_hosts=8).jobs
    assert [j.exclusion_ok for j in back] == [True, False]
    esp = tmp_path / "esp.swf"
    assert main(["workload", "esp", "--app", "mandelbrot", "--hosts", "16",
                 "--exclusion-ok", "-o", str(esp)]) == 0
    assert all(j.exclusion_ok for j in read_swf(str(esp), cores_per_host=1,
                                                 max_hosts=16).jobs)
    bad = tmp_path / "bad.swf"
    bad.write_text(path.read_text().replace("exclusion_ok=1", "exclusion_ok=yes"))
    with pytest.raises(InputError, match="exclusion_ok"):
        read_swf(str(bad), cores_per_host=2, max_hosts=8)


def test_cli_rca_full_reports_exclusions(tmp_path, capsys):
    from cosim.cli import main

    esp = tmp_path / "esp.swf"
    assert main(["workload", "esp", "--app", "mandelbrot", "--hosts", "16", "--seed", "3",
                 "--exclusion-ok", "-o", str(esp)]) == 0
    capsys.readouterr()
    assert main(["run", "--workload", str(esp), "--hosts", "16", "--technique", "GSS",
                 "--rca", "full", "--app-overrides", "width=48", "--out",
                 str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "exclusions" in out and "hosts excluded" in out
    # without a hint in the trace, --rca full warns that no request will be sent
    plain = tmp_path / "plain.swf"
    assert main(["workload", "esp", "--app", "mandelbrot", "--hosts", "16", "-o",
                 str(plain)]) == 0
    assert main(["run", "--workload", str(plain), "--hosts", "16", "--rca", "full",
                 "--app-overrides", "width=48", "--out", str(tmp_path / "o2")]) == 0
    assert "no co-simulated job allows exclusion requests" in capsys.readouterr().err
