"""The workload of Kalé, Kumar & DeSouza's adaptive-job experiments (CCGRID'02, §4).

Spec: docs/reference/malleability.md §3.4. The paper gives: 64 processors; an MD benchmark
that takes **64.5 s for 100 iterations on 64 processors** with sub-linear speedup (its
Figure 6, lost); **Poisson arrivals**; an **exponentially distributed number of iterations,
mean 100**; adaptive jobs with **min_pes ~ uniform 1..64, max_pes = 64**; traditional jobs
with **processors ~ uniform 1..64**; the same random generator for arrivals and execution
times in both set-ups; results against a "load factor" whose formula lost its symbols. Where
the text is silent, `kale_workload` chooses, and says so:

- **Load factor** ``rho = lambda x E[S]``: ``lambda`` the mean arrival rate (jobs/s), ``E[S]
  = t64_s x mean_iters / 100`` the mean service time of a job *alone on the whole machine*
  (64.5 s with the defaults). So the mean interarrival time is ``E[S] / rho``. It is the
  offered load of the adaptive workload when every job runs on all 64 PEs; it is *not* the
  PE-time actually demanded: with sub-linear speedup a job on p < 64 PEs needs less PE-time,
  ``(1 + f (p - 1)) / (1 + 63 f)`` times its PE-time on 64 (Amdahl below). The rigid
  workload at a given rho thus offers ``rho x (1 + 31.5 f) / (1 + 63 f)`` of the machine on
  average (0.62 rho at f = 0.05), and what equipartition's jobs demand depends on the
  allocations it chooses (between that and rho).
- **Arrivals**: a Poisson process from t = 0: job i (ids 1..n) is submitted at the sum of the
  first i interarrival times, ``Exp(1) x E[S] / rho`` each (so job 1 is not at 0).
- **Iterations**: ``max(1, round(X))``, ``X ~ Exp(mean_iters)`` (rounded half to even; a job
  runs a whole number of iterations and at least one). The mean is 100.0046 for mean_iters =
  100 (the max adds about P(X < 0.5) = 0.5 % of one iteration); `E[S]` uses mean_iters.
- **Speedup** (Figure 6 is lost): Amdahl, ``t_iter(p) = t_iter(64) x (f + (1 - f)/p) / (f +
  (1 - f)/64)`` with ``t_iter(64) = t64_s / 100`` = 0.645 s and the serial fraction `f` a
  knob to sweep (``RuntimeModel(name="amdahl", f=f)``; the rate is computed by
  `cosim.workload.runtime_models.rate`, the formula the trace apps use for resized jobs).
- **Adaptive jobs** (``malleable=True``): ``kind="malleable"``, reference ``pes = 64`` =
  ``max_pes``, ``runtime`` = iterations x t_iter(64) (their run time on the whole machine),
  ``min_pes`` = the uniform 1..64 draw; the model carries `reconf_s`, the stall of every
  resize (0 by default; 5 s is the assumption of the study the paper cites).
- **Traditional jobs** (``malleable=False``): ``kind="rigid"``, ``pes`` = the *same* uniform
  1..64 draw (job i's minimum in the adaptive workload is its size in the traditional one),
  ``runtime`` = iterations x t_iter(pes) on the same Amdahl curve (rounded once, to the
  nearest tick).
- **Hosts**: ``hosts = ceil(pes / cores_per_host)`` (the scheduler's whole-host request; with
  ``cores_per_host = 1`` a PE is a host and any PE can go to any job).
- **Walltime**: the job's run time on one PE (``iterations x t_iter(1)``, the slowest any
  allocation can make it, stalls aside). It is never enforced: run with
  ``BatchConfig(walltime_kill=False)``; the schedulers used here (FCFS without backfilling,
  equipartition) do not read it.
- **Randomness**: three keyed streams (`cosim.core.rng.stream`) under `seed`:
  ``"kale-arrivals"`` (unit exponentials), ``"kale-iters"`` and ``"kale-pes"``, each drawn as
  one vector in job id order. Job i's draws therefore depend only on (seed, i): not on
  `n_jobs` (a longer workload extends a shorter one), not on `load` (it only rescales the
  interarrival times: common random numbers across loads), not on `malleable` (the adaptive
  and traditional workloads are paired job by job) and not on any other draw.
"""

from __future__ import annotations

import math

import numpy as np

from cosim.core.clock import ticks_array, to_ticks
from cosim.core.rng import stream
from cosim.workload.jobs import Job
from cosim.workload.runtime_models import RuntimeModel, rate

__all__ = ["kale_workload", "mean_service_s", "arrival_rate", "REF_ITERS", "T64_S"]

REF_ITERS = 100
"""The iterations of the paper's timing: 64.5 s for 100 iterations on 64 processors."""
T64_S = 64.5
"""Seconds for `REF_ITERS` iterations on 64 processors (the paper's MD benchmark)."""


def mean_service_s(*, t64_s: float = T64_S, mean_iters: float = 100.0) -> float:
    """``E[S]``: the mean run time of a job alone on the whole machine, in seconds."""
    return t64_s * mean_iters / REF_ITERS


def arrival_rate(load: float, *, t64_s: float = T64_S, mean_iters: float = 100.0) -> float:
    """``lambda = rho / E[S]``, jobs per second, for load factor `load` (module docstring)."""
    return load / mean_service_s(t64_s=t64_s, mean_iters=mean_iters)


def kale_workload(n_jobs: int, load: float, *, seed: int, machine_pes: int = 64,
                  cores_per_host: int = 1, f: float = 0.05, malleable: bool = True,
                  mean_iters: float = 100.0, t64_s: float = T64_S,
                  reconf_s: float = 0.0) -> list[Job]:
    """The paper's workload: `n_jobs` jobs at load factor `load` (module docstring).

    Parameters
    ----------
    n_jobs:
        Number of jobs (ids 1..n_jobs, in submission order), >= 0.
    load:
        The load factor ``rho = lambda x E[S]`` (> 0).
    seed:
        The root seed of the keyed streams.
    machine_pes:
        Processors of the machine: the upper bound of the uniform size draw, ``max_pes`` and
        the reference ``pes`` of adaptive jobs; `t64_s` is the time on this many PEs.
    cores_per_host:
        PEs per host, for the jobs' whole-host request ``hosts = ceil(pes / cores)``.
    f:
        Amdahl's serial fraction in [0, 1).
    malleable:
        True: adaptive (``malleable``) jobs; False: traditional (``rigid``) ones.
    mean_iters, t64_s:
        Mean iteration count; seconds per `REF_ITERS` iterations on `machine_pes` PEs.
    reconf_s:
        Stall per resize, seconds (adaptive jobs; a rigid job is never resized).

    Returns
    -------
    list[Job]
        In id order; times in integer ticks.
    """
    if n_jobs < 0:
        raise ValueError(f"n_jobs must be >= 0, got {n_jobs}")
    if not (load > 0 and math.isfinite(load)):
        raise ValueError(f"the load factor must be a finite number > 0, got {load!r}")
    if machine_pes < 1 or cores_per_host < 1:
        raise ValueError("machine_pes and cores_per_host must be >= 1")
    if not (mean_iters > 0 and t64_s > 0):
        raise ValueError("mean_iters and t64_s must be > 0")
    model = RuntimeModel(name="amdahl", f=f, reconf_s=reconf_s)  # validates f and reconf_s
    mean_gap = 1.0 / arrival_rate(load, t64_s=t64_s, mean_iters=mean_iters)
    gaps = stream(seed, "kale-arrivals").standard_exponential(n_jobs)
    submit = ticks_array(np.cumsum(gaps * mean_gap))  # rounded once, from the exact sums
    iters = np.maximum(1.0, np.rint(stream(seed, "kale-iters").exponential(mean_iters, n_jobs)))
    size = stream(seed, "kale-pes").integers(1, machine_pes, endpoint=True, size=n_jobs)
    t_iter = t64_s / REF_ITERS  # on machine_pes PEs
    full = [machine_pes]
    slow = {p: 1.0 / rate(model, [p], full) for p in range(1, machine_pes + 1)}  # t(p)/t(full)
    jobs: list[Job] = []
    for i in range(n_jobs):
        n_it = float(iters[i])
        k = int(size[i])
        base = n_it * t_iter
        walltime = to_ticks(base * slow[1])
        if malleable:
            pes, runtime = machine_pes, to_ticks(base)
            extra = {"kind": "malleable", "min_pes": k, "max_pes": machine_pes,
                     "category": "adaptive"}
        else:
            pes, runtime = k, to_ticks(base * slow[k])
            extra = {"kind": "rigid", "category": "traditional"}
        jobs.append(Job(id=i + 1, submit=int(submit[i]), hosts=-(-pes // cores_per_host),
                        pes=pes, walltime=walltime, runtime=runtime, model=model,
                        **extra))  # type: ignore[arg-type]
    return jobs
