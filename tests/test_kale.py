"""Kalé et al.'s workload (`cosim.workload.kale`), platform and reproduction script.

The generator's properties: counts, ids and bounds; keyed determinism (same seed, same jobs;
a longer workload extends a shorter one; the load only rescales the arrivals; the adaptive
and traditional workloads are paired job by job); the load factor ``rho = lambda x E[S]``
holds on a big sample; run times follow the Amdahl curve. Then the kale32x2 platform, a tiny
simulation, and ``scripts/reproduce_kale.py --quick`` as a subprocess (exit 0, table, PNG,
CSV) and its one-line errors (exit 2).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cosim.bls import BatchConfig
from cosim.core.clock import TICKS_PER_SECOND
from cosim.runner import simulate
from cosim.workload.kale import arrival_rate, kale_workload, mean_service_s

ROOT = Path(__file__).resolve().parents[1]
S = TICKS_PER_SECOND


def test_counts_ids_kinds_and_bounds():
    adaptive = kale_workload(2000, 0.5, seed=3)
    rigid = kale_workload(2000, 0.5, seed=3, malleable=False, cores_per_host=2)
    for jobs in (adaptive, rigid):
        assert [j.id for j in jobs] == list(range(1, 2001))
        submits = [j.submit for j in jobs]
        assert submits == sorted(submits) and submits[0] > 0
        assert all(j.runtime >= 0.645 * S - 1 and j.walltime >= j.runtime for j in jobs)
    assert all(j.kind == "malleable" and j.pes == 64 and j.max_pes == 64 and j.hosts == 64
               and 1 <= j.min_pes <= 64 for j in adaptive)
    assert {j.min_pes for j in adaptive} == set(range(1, 65))  # uniform 1..64: all show up
    assert all(j.kind == "rigid" and 1 <= j.pes <= 64 and j.min_pes == j.max_pes == j.pes
               and j.hosts == -(-j.pes // 2) for j in rigid)
    assert all(j.model.name == "amdahl" and j.model.f == 0.05 for j in adaptive + rigid)
    assert kale_workload(0, 0.5, seed=3) == []


def test_keyed_determinism():
    a = kale_workload(300, 0.7, seed=11)
    assert a == kale_workload(300, 0.7, seed=11)
    assert kale_workload(100, 0.7, seed=11) == a[:100]  # a prefix: draws keyed by job id
    assert a != kale_workload(300, 0.7, seed=12)
    low = kale_workload(300, 0.35, seed=11)  # half the load: twice the gaps, same jobs
    assert [(j.runtime, j.min_pes) for j in low] == [(j.runtime, j.min_pes) for j in a]
    assert all(abs(lo.submit - 2 * hi.submit) <= 2 for lo, hi in zip(low, a))
    rigid = kale_workload(300, 0.7, seed=11, malleable=False)
    assert [(j.submit, j.pes) for j in rigid] == [(j.submit, j.min_pes) for j in a]
    other_f = kale_workload(300, 0.7, seed=11, f=0.2)  # f changes run times only off 64 PEs
    assert [(j.submit, j.runtime, j.min_pes) for j in other_f] == \
        [(j.submit, j.runtime, j.min_pes) for j in a]


def test_load_factor_holds_on_a_big_sample():
    assert mean_service_s() == pytest.approx(64.5)
    assert arrival_rate(0.8) == pytest.approx(0.8 / 64.5)
    n, rho = 60_000, 0.8
    jobs = kale_workload(n, rho, seed=5)
    lam = n / (jobs[-1].submit / S)                        # measured arrival rate
    mean_s = np.mean([j.runtime for j in jobs]) / S        # service time on 64 PEs
    assert lam == pytest.approx(arrival_rate(rho), rel=0.02)
    assert mean_s == pytest.approx(64.5, rel=0.02)
    assert lam * mean_s == pytest.approx(rho, rel=0.03)
    iters = np.array([j.runtime for j in jobs]) / (0.645 * S)
    assert np.allclose(iters, np.rint(iters), atol=1e-6) and iters.min() >= 1
    gaps = np.diff([0] + [j.submit for j in jobs]) / S     # exponential: sd = mean
    assert gaps.std() == pytest.approx(gaps.mean(), rel=0.03)


@pytest.mark.parametrize("f", [0.0, 0.05, 0.3])
def test_rigid_run_times_follow_the_amdahl_curve(f):
    adaptive = kale_workload(400, 0.5, seed=2, f=f)
    rigid = kale_workload(400, 0.5, seed=2, f=f, malleable=False)
    for a, r in zip(adaptive, rigid):
        k = r.pes
        want = a.runtime * (f + (1 - f) / k) / (f + (1 - f) / 64)
        assert abs(r.runtime - want) <= 1 + 1e-9 * want
        assert r.walltime == a.walltime  # the run time on one PE, for both
    if f == 0.0:  # linear speedup: the same PE-time on any size
        assert all(abs(r.pes * r.runtime - 64 * a.runtime) <= 64
                   for a, r in zip(adaptive, rigid))


def test_bad_arguments():
    for kw in ({"load": 0.0}, {"load": float("nan")}, {"f": 1.0}, {"n_jobs": -1},
               {"reconf_s": -1.0}):
        args = {"n_jobs": 5, "load": 0.5, **kw}
        with pytest.raises(ValueError):
            kale_workload(args.pop("n_jobs"), args.pop("load"), seed=1, **args)


def test_platform_is_the_papers_cluster():
    from cosim.platform import load_platform

    p = load_platform("kale32x2")
    assert p.n_hosts == 32 and {h.cores for h in p.hosts} == {2}
    assert p.message_ticks(0, 1, 1024) == 50_000 + 81_920  # 50 us + 1 KiB at 12.5 MB/s


def test_a_small_run_of_both_schedulers():
    jobs = kale_workload(60, 0.6, seed=4, reconf_s=5.0)
    equi = simulate(jobs, n_hosts=64, cores_per_host=1,
                    batch=BatchConfig(malleable="equi", walltime_kill=False))
    first = equi.outcomes[0]  # alone on an empty machine: the whole machine, its run time
    assert first.start == first.job.submit and first.pes_start == 64
    assert all(o.status == "completed" for o in equi.outcomes)
    assert sum(o.resizes for o in equi.outcomes) > 0
    rigid = kale_workload(60, 0.6, seed=4, malleable=False, cores_per_host=2)
    res = simulate(rigid, n_hosts=32, cores_per_host=2,
                   batch=BatchConfig(backfill="none", selection="first-fit",
                                     walltime_kill=False))
    starts = [o.start for o in res.outcomes]
    assert starts == sorted(starts)  # strict FCFS: starts in arrival order
    assert all(o.end - o.start == o.job.runtime for o in res.outcomes)


def _script(*args: str, tmp: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "reproduce_kale.py"), *args],
                          capture_output=True, text=True, cwd=tmp, timeout=120)


def test_script_quick_run(tmp_path):
    out = tmp_path / "out"
    r = _script("--quick", "--reconf", "0,5", "--out", str(out), tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "mean response time" in r.stdout and "jobs/s" in r.stdout
    for load in ("0.30", "0.60", "0.90"):
        assert sum(line.lstrip().startswith(load + " |") for line in r.stdout.splitlines()) == 2
    png = out / "kale-f0.05.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    rows = (out / "results.csv").read_text().splitlines()
    assert rows[0].startswith("f,reconf_s,load,scheduler") and len(rows) == 1 + 2 * 3 * 2


def test_script_results_do_not_depend_on_the_number_of_processes(tmp_path):
    csvs = []
    for workers in ("1", "2"):
        out = tmp_path / workers
        r = _script("--jobs", "80", "--seeds", "2", "--loads", "0.5,0.9", "--workers", workers,
                    "--baseline", "fcfs,first-fit", "--out", str(out), tmp=tmp_path)
        assert r.returncode == 0, r.stderr
        csvs.append((out / "results.csv").read_text())
    assert csvs[0] == csvs[1]


@pytest.mark.parametrize("args", [["--f", "1"], ["--loads", "0.5,x"], ["--jobs", "0"],
                                  ["--share", "fair"], ["--nope"], ["--reconf", "-5"],
                                  ["--baseline", "fcfs,sjf"], ["--seeds", "0"]])
def test_script_bad_arguments_exit_2_with_one_line(args, tmp_path):
    r = _script(*args, tmp=tmp_path)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "reproduce_kale: error:" in r.stderr
