"""Job value (Kumbhare et al.; docs/reference/policies.md §2.2, §3.3; check VP-1): the value
curves, their sources (CosimApp keys per executable number, a per-job CSV sidecar), and the
productivity a run reports."""

from __future__ import annotations

import json
import math

import numpy as np

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.cli import main
from cosim.errors import InputError
from cosim.workload.jobs import Job, JobOutcome
from cosim.workload.swf import read_swf
from cosim.workload.value import JobValue, productivity, read_values, value_at, \
    value_from_pairs

S = 1_000_000_000


# -- VP-1: the curves -------------------------------------------------------------------------

def test_the_value_curve_points():
    lin = JobValue(v=10.0, u=0.0, soft=100 * S, hard=300 * S)
    assert value_at(lin, 0) == value_at(lin, 100 * S) == 10.0  # v up to ST
    assert value_at(lin, 200 * S) == 5.0  # (v + u) / 2 halfway
    assert value_at(lin, 300 * S) == value_at(lin, 10**6 * S) == 0.0  # 0 from HT on
    with_u = JobValue(v=10.0, u=4.0, soft=100 * S, hard=300 * S)
    assert value_at(with_u, 200 * S) == 7.0
    assert value_at(with_u, 300 * S - 1) == pytest.approx(4.0, abs=1e-9)
    assert value_at(with_u, 300 * S) == 0.0
    exp = JobValue(v=16.0, u=1.0, soft=100 * S, hard=300 * S, decay="exp")
    assert value_at(exp, 200 * S) == pytest.approx(4.0, rel=1e-12)  # sqrt(v u) halfway
    step = JobValue(v=16.0, u=1.0, soft=100 * S, hard=300 * S, decay="step")
    assert [value_at(step, t * S) for t in (100, 101, 299, 300)] == [16.0, 1.0, 1.0, 0.0]


@settings(max_examples=200, deadline=None)
@given(st.floats(0.01, 1e6), st.floats(0.0, 1.0), st.integers(1, 10**6),
       st.integers(0, 10**6), st.sampled_from(["linear", "exp", "step"]),
       st.lists(st.integers(0, 3 * 10**6), min_size=2, max_size=8))
def test_the_curves_never_increase(v, ufrac, soft, extra, decay, times):
    u = v * ufrac if decay != "exp" else max(v * ufrac, v * 1e-6)
    value = JobValue(v=v, u=u, soft=soft, hard=soft + extra, decay=decay)
    vals = [value_at(value, t) for t in sorted(times)]
    assert all(a >= b for a, b in zip(vals, vals[1:]))
    assert all(0.0 <= x <= v for x in vals)


@pytest.mark.parametrize("kwargs, problem", [
    ({"v": 0.0}, "value must be > 0"), ({"v": -1.0}, "value must be > 0"),
    ({"u": 20.0}, "value_min"), ({"soft": 10, "hard": 5}, "soft <= hard"),
    ({"decay": "exp"}, "exp decay needs value_min > 0"), ({"decay": "cubic"}, "unknown decay"),
])
def test_bad_curves(kwargs, problem):
    args = {"v": 10.0, "soft": 5, "hard": 10, **kwargs}
    with pytest.raises(ValueError, match=problem):
        JobValue(**args)


def test_thresholds_as_multiples_or_seconds():
    value = value_from_pairs({"value": "4", "soft": "2", "hard": "3600s"}, 100 * S)
    assert (value.v, value.soft, value.hard) == (4.0, 200 * S, 3600 * S)
    assert value_from_pairs({"hard": "7"}, 10 * S) == JobValue(v=1.0, soft=20 * S,
                                                                  hard=70 * S)
    assert value_from_pairs({"app": "rigid"}, S) is None
    with pytest.raises(ValueError, match="soft: expected a multiple"):
        value_from_pairs({"soft": "two"}, S)
    with pytest.raises(ValueError, match="soft <= hard"):
        value_from_pairs({"soft": "7", "hard": "3"}, S)


# -- the sources ----------------------------------------------------------------------------

LINE = "{id} {submit} -1 {run} 1 -1 -1 1 {wall} -1 1 -1 -1 {exe} -1 -1 -1 -1\n"


def _swf(tmp_path, header: str, jobs=((1, 0, 10, 100, 1), (2, 5, 10, 50, 2))):
    path = tmp_path / "v.swf"
    path.write_text(header + "".join(LINE.format(id=i, submit=s, run=r, wall=w, exe=e)
                                     for i, s, r, w, e in jobs))
    return path


def test_cosim_app_lines_give_values_per_executable(tmp_path):
    path = _swf(tmp_path, "; CosimApp: 1 value=16 soft=2 hard=6\n; CosimApp: 2 category=B\n")
    jobs = {j.id: j for j in read_swf(path).jobs}
    assert jobs[1].value == JobValue(v=16.0, soft=200 * S, hard=600 * S)
    assert "value" not in jobs[1].app_params
    assert jobs[2].value is None


@pytest.mark.parametrize("header, problem", [
    ("; CosimApp: 1 value=-3\n", "v.swf:1: field CosimApp: value must be > 0"),
    ("; CosimApp: 1 decay=cubic\n", "v.swf:1: field CosimApp: unknown decay"),
    ("; CosimApp: 1 soft=2 hard=60s\n", "v.swf:1: field CosimApp: job 1: "),
])
def test_bad_values_in_the_trace_name_the_line(tmp_path, header, problem):
    with pytest.raises(InputError) as err:
        read_swf(_swf(tmp_path, header))
    assert problem in str(err.value)


def test_the_sidecar(tmp_path, capsys):
    swf = _swf(tmp_path, "; MaxNodes: 2\n; CosimApp: 1 value=16\n")
    csv = tmp_path / "values.csv"
    csv.write_text("job_id,value,soft_s,hard_s,value_min\n2,4,20,60,1\n")
    jobs = read_swf(swf).jobs
    assert read_values(csv, jobs) == {2: JobValue(v=4.0, u=1.0, soft=20 * S, hard=60 * S)}
    assert main(["run", "--workload", str(swf), "--values", str(csv), "--out",
                 str(tmp_path / "o"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    # both complete within their soft thresholds: 16 + 4 of 20
    assert (summary["productivity"], summary["normalized_productivity"],
            summary["completion_rate"]) == (20.0, 1.0, 1.0)


@pytest.mark.parametrize("text, problem", [
    ("job,value\n", "values.csv:1: the header must name job_id, value, soft_s, hard_s"),
    ("job_id,value,soft_s,hard_s,colour\n", "values.csv:1: unknown column 'colour'"),
    ("job_id,value,soft_s,hard_s\n9,1,1,2\n", "values.csv:2: field job_id: no job 9"),
    ("job_id,value,soft_s,hard_s\n1,1,1,2\n1,1,1,2\n", "values.csv:3: field job_id: job 1 "
     "given twice"),
    ("job_id,value,soft_s,hard_s\n1,x,1,2\n", "values.csv:2: field value: not a number"),
    ("job_id,value,soft_s,hard_s\n1,1,-1,2\n", "values.csv:2: field soft_s: must be >= 0"),
    ("job_id,value,soft_s,hard_s\n1,1,5,2\n", "values.csv:2: field hard_s: thresholds need"),
    ("job_id,value,soft_s,hard_s,decay\n1,1,1,2,cubic\n", "values.csv:2: field decay: unknown"),
    ("job_id,value,soft_s,hard_s,value_min\n1,1,1,2,3\n", "values.csv:2: field value_min: "
     "must be in [0, value]"),
    ("job_id,value,value,soft_s,hard_s\n", "values.csv:1: column 'value' given twice"),
    ("job_id,value,soft_s,hard_s\n1_0,1,1,2\n", "values.csv:2: field job_id: not a job id"),
    ("job_id,value,soft_s,hard_s\n1,1,2\n", "values.csv:2: 3 fields, the header has 4"),
])
def test_bad_sidecars_are_one_line_errors(tmp_path, capsys, text, problem):
    swf = _swf(tmp_path, "")
    csv = tmp_path / "values.csv"
    csv.write_text(text)
    assert main(["run", "--workload", str(swf), "--values", str(csv), "--out",
                 str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and problem in err[0], err
    assert not (tmp_path / "o").exists()


def test_productivity_counts_completed_jobs_only():
    value = JobValue(v=10.0, soft=10 * S, hard=30 * S)
    job = Job(id=1, submit=0, hosts=1, pes=1, walltime=5 * S, runtime=5 * S, value=value)
    outs = [JobOutcome(job=job, start=10 * S, end=20 * S, hosts=(0,), status="completed"),
            JobOutcome(job=Job(id=2, submit=0, hosts=1, pes=1, walltime=S, runtime=2 * S,
                               value=value), start=0, end=S, hosts=(0,), status="killed"),
            JobOutcome(job=Job(id=3, submit=0, hosts=9, pes=9, walltime=S, runtime=S),
                       start=None, end=None, hosts=(), status="rejected")]
    got = productivity(outs)
    assert got["productivity"] == 5.0  # job 1 at 20 s: halfway down; killed: 0
    assert got["normalized_productivity"] == 5.0 / 20.0
    assert math.isclose(got["completion_rate"], 1 / 3)


# -- VPT and VPE (no power model yet), greedy, drops ------------------------------------------

def _jobs_with(values, walls, hosts=None, submit=0):
    hosts = hosts or [1] * len(walls)
    return [Job(id=i + 1, submit=submit * S, hosts=h, pes=h, walltime=w * S, runtime=w * S,
                value=v) for i, (v, w, h) in enumerate(zip(values, walls, hosts))]


def test_the_hand_vpt_and_vpe_orders():
    """VP-3 without a power cap: four jobs queued at 0, ranked at t = 10 s."""
    from cosim.bls.policies.base import QueueColumns, Tunables
    from cosim.bls.policies.value_order import VPE, VPT
    from cosim.workload.value import value_params, values_at

    lin = [JobValue(v=v, soft=s * S, hard=h * S) for v, s, h in
           ((8.0, 100, 200), (6.0, 20, 60), (3.0, 1000, 2000), (10.0, 200, 400))]
    jobs = _jobs_with(lin, walls=[40, 30, 10, 100], hosts=[4, 1, 1, 2])
    cols = QueueColumns.of(jobs)
    # values at 10 + walltime: 8 (50 <= ST), 6 - 6 (40 - 20) / 40 = 3, 3, 10 (110 <= ST)
    elapsed = 10 * S + cols.walltime - cols.submit
    assert values_at(value_params(jobs), elapsed).tolist() == [8.0, 3.0, 3.0, 10.0]

    def order(policy):
        cols_ = policy.rank(10 * S, cols, Tunables())
        idx = np.lexsort(tuple(reversed([np.asarray(c) for c in cols_])))
        return [jobs[i].id for i in idx.tolist()]

    # VPT: 8/40 = .2, 3/30 = .1, 3/10 = .3, 10/100 = .1 (tie: 2 and 4 by submit, id)
    assert order(VPT) == [3, 1, 2, 4]
    # VPE: .2/4 = .05, .1/1 = .1, .3/1 = .3, .1/2 = .05 (tie: 1 and 4)
    assert order(VPE) == [3, 2, 1, 4]


def test_vpt_without_values_is_sjf():
    """VP-4 (no cap): every value 1 without thresholds, VPT = 1 / walltime: SJF's order."""
    from cosim.bls import BatchConfig, simulate_batch
    from cosim.paths import TRACES_DIR

    jobs = read_swf(TRACES_DIR / "KTH-SP2-1996-2.1-cln.swf.gz", max_hosts=100).jobs[:3000]
    runs = [simulate_batch(jobs, n_hosts=100, config=BatchConfig(priority=p, backfill=b))
            for p in ("vpt", "sjf") for b in ("greedy",)]
    assert [(o.start, o.hosts) for o in runs[0].outcomes] == \
        [(o.start, o.hosts) for o in runs[1].outcomes]


def test_greedy_starts_whatever_fits():
    from cosim.bls import BatchConfig, simulate_batch

    jobs = [Job(id=1, submit=0, hosts=3, pes=3, walltime=10 * S, runtime=10 * S),
            Job(id=2, submit=0, hosts=2, pes=2, walltime=100 * S, runtime=100 * S),
            Job(id=3, submit=0, hosts=1, pes=1, walltime=500 * S, runtime=500 * S)]
    starts = {b: {o.job.id: o.start // S for o in simulate_batch(
        jobs, n_hosts=4, config=BatchConfig(backfill=b)).outcomes} for b in ("none", "greedy",
                                                                            "easy")}
    assert starts["none"] == {1: 0, 2: 10, 3: 10}
    assert starts["greedy"] == {1: 0, 2: 10, 3: 0}  # job 3 jumps job 2: no reservation
    assert starts["easy"] == {1: 0, 2: 10, 3: 0}  # 3 backfills into the head's spare host


def test_hopeless_jobs_are_dropped(tmp_path, capsys):
    from cosim.bls import BatchConfig, simulate_batch
    from cosim.workload.swf_write import write_jobs_swf

    # one host busy on [0, 100); jobs 2 and 3 arrive at 1 s; job 2's value ends 50 s after
    # its submission: dropped at the pass at 100 s; job 3 (soft threshold 150 s) runs
    blocker = Job(id=1, submit=0, hosts=1, pes=1, walltime=100 * S, runtime=100 * S)
    late = Job(id=2, submit=S, hosts=1, pes=1, walltime=10 * S, runtime=10 * S,
               value=JobValue(v=5.0, soft=20 * S, hard=50 * S))
    fine = Job(id=3, submit=S, hosts=1, pes=1, walltime=10 * S, runtime=10 * S,
               value=JobValue(v=2.0, soft=150 * S, hard=200 * S))
    res = simulate_batch([blocker, late, fine], n_hosts=1,
                         config=BatchConfig(priority="vpt", backfill="greedy"))
    status = {o.job.id: (o.status, o.start) for o in res.outcomes}
    assert status[2] == ("dropped", None) and status[3] == ("completed", 100 * S)
    kept = simulate_batch([blocker, late, fine], n_hosts=1, config=BatchConfig(
        priority="vpt", backfill="greedy", drop_hopeless=False))
    assert {o.job.id: o.status for o in kept.outcomes}[2] == "completed"
    assert productivity(res.outcomes)["productivity"] == 2.0
    assert productivity(res.outcomes)["dropped"] == 1
    # the outputs: jobs.csv, schedule.swf (status 5, like rejected), the summary
    swf = tmp_path / "w.swf"
    write_jobs_swf(swf, [blocker, late, fine], header=[("MaxNodes", "1")])
    csv = tmp_path / "values.csv"
    csv.write_text("job_id,value,soft_s,hard_s\n2,5,20,50\n3,2,150,200\n")
    out = tmp_path / "o"
    assert main(["run", "--workload", str(swf), "--values", str(csv), "--priority", "vpt",
                 "--batch", "greedy", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["dropped"], summary["jobs"], summary["rejected"],
            summary["productivity"]) == (1, 2, 0, 2.0)
    assert "2,1,,100,1,1,dropped" in (out / "jobs.csv").read_text()  # end: when dropped
    # its wait counts: queued from 1 s to its drop at 100 s, and in the queue depth
    from cosim.output import metrics
    from cosim.output.hdf5 import read_results
    from cosim.output.tables import step_series

    (run,) = read_results(out / "results.h5")
    times, queued = step_series(run)["queued"]
    assert queued[times.tolist().index(S)] == 2  # jobs 2 and 3 from 1 s
    t, q = metrics.queue_depth(res.outcomes)
    assert q[t.tolist().index(100 * S)] == 0.0  # both left the queue at 100 s
    assert q[t.tolist().index(S)] == 0.0 and len(t) == 3
    line = next(ln for ln in (out / "schedule.swf").read_text().splitlines()
                if ln.startswith("2 "))
    assert line.split()[10] == "5"


def test_value_orders_refuse_conservative_and_default_to_greedy(tmp_path, capsys):
    from cosim.bls import BatchConfig

    with pytest.raises(InputError, match="field batch: --priority vpt ranks by decaying"):
        BatchConfig(priority="vpt", backfill="Conservative")
    swf = _swf(tmp_path, "; MaxNodes: 2\n")
    assert main(["run", "--workload", str(swf), "--priority", "vpe", "--out",
                 str(tmp_path / "o"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["batch"] == "greedy"


def test_mixed_threshold_units_are_checked_per_job(tmp_path):
    # 3600 s <= 6 x 1000 s for job 1; for job 2 (walltime 500 s) hard = 3000 s < soft
    path = _swf(tmp_path, "; CosimApp: 1 value=2 soft=3600s hard=6\n",
                jobs=((1, 0, 10, 1000, 1),))
    (job,) = read_swf(path).jobs
    assert (job.value.soft, job.value.hard) == (3600 * S, 6000 * S)
    path = _swf(tmp_path, "; CosimApp: 1 value=2 soft=3600s hard=6\n",
                jobs=((1, 0, 10, 1000, 1), (2, 0, 10, 500, 1)))
    with pytest.raises(InputError, match=r"v.swf:1: field CosimApp: job 2: thresholds"):
        read_swf(path)


def test_the_sidecar_may_name_skipped_and_rejected_jobs(tmp_path, capsys):
    # job 3 has no processor count (skipped by the reader), job 4 needs 5 hosts of 2
    swf = tmp_path / "w.swf"
    swf.write_text("; MaxNodes: 2\n" + LINE.format(id=1, submit=0, run=10, wall=100, exe=1)
                   + "3 0 -1 10 -1 -1 -1 -1 100 -1 1 -1 -1 1 -1 -1 -1 -1\n"
                   + "4 0 -1 10 5 -1 -1 5 100 -1 1 -1 -1 1 -1 -1 -1 -1\n")
    csv = tmp_path / "values.csv"
    csv.write_text("job_id,value,soft_s,hard_s\n1,3,200,600\n3,9,1,2\n4,5,200,600\n")
    assert main(["run", "--workload", str(swf), "--values", str(csv), "--out",
                 str(tmp_path / "o"), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    # job 4 was rejected: its value could not be earned; job 3 never was a job
    assert (s["productivity"], s["normalized_productivity"], s["completion_rate"],
            s["rejected"]) == (3.0, 3.0 / 8.0, 0.5, 1)


def test_replayed_unfairness_under_a_value_order(tmp_path, capsys):
    """A job that ran although its replay (no later arrivals) would have dropped it is not
    unfair; the count runs without error under drops."""
    swf = tmp_path / "w.swf"
    swf.write_text("; MaxNodes: 8\n; CosimApp: 1 value=1000 soft=2 hard=3\n"
                   "; CosimApp: 2 value=1 soft=2 hard=3\n; CosimApp: 3 value=1000 soft=2 hard=3\n"
                   "1 0 -1 100 8 -1 -1 8 100 -1 1 1 1 2 -1 -1 -1 -1\n"
                   "2 1 -1 1000 8 -1 -1 8 1000 -1 1 1 1 1 -1 -1 -1 -1\n"
                   "3 2 -1 100 4 -1 -1 4 100 -1 1 1 1 2 -1 -1 -1 -1\n"
                   "4 3 -1 100 4 -1 -1 4 100 -1 1 1 1 3 -1 -1 -1 -1\n")
    assert main(["run", "--workload", str(swf), "--priority", "vpt", "--unfair-replayed",
                 "--out", str(tmp_path / "o"), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    from cosim.bls import BatchConfig, simulate_batch
    from cosim.output.metrics import unfair_jobs_replayed
    from cosim.runner import replayed_fair_starts

    jobs = read_swf(swf).jobs
    cfg = BatchConfig(priority="vpt", backfill="greedy")
    fair = replayed_fair_starts(jobs, n_hosts=8, config=cfg)
    res = simulate_batch(jobs, n_hosts=8, config=cfg)
    assert s["unfair_jobs_replayed"] == unfair_jobs_replayed(res.outcomes, fair)


def test_a_dropped_jobs_wait_counts_in_the_loss_of_capacity():
    from cosim.bls import BatchConfig, simulate_batch
    from cosim.output import metrics

    # 2 hosts: job 1 (1 host) on [0, 100); job 2 (2 hosts, from 0 s too, after job 1 got
    # its host) waits and is dropped at 100 s
    jobs = [Job(id=1, submit=0, hosts=1, pes=1, walltime=100 * S, runtime=100 * S,
                priority=1),
            Job(id=2, submit=0, hosts=2, pes=2, walltime=10 * S, runtime=10 * S,
                value=JobValue(v=1.0, soft=20 * S, hard=50 * S))]
    res = simulate_batch(jobs, n_hosts=2, config=BatchConfig(priority="vpt"))
    assert [o.status for o in res.outcomes] == ["completed", "dropped"]
    assert metrics.loss_of_capacity(res.outcomes, 2) == 0.5  # 1 idle host while 2 waited
    assert metrics.loss_of_capacity(res.outcomes, 2, allocations=res.allocations) == 0.5
    assert metrics.summary(res.outcomes, 2)["loss_of_capacity"] == 0.5
    assert metrics.loss_of_capacity(res.outcomes, 2, fit_only=True) == 0.0  # it needs 2
