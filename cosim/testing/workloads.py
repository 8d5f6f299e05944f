"""A quick Lublin-like generator of rigid batch workloads, for the BLS tests and benchmarks.

Not the Lublin & Feitelson (2003) model itself, only its shape: a quarter of the jobs serial,
the others of log-uniform size with most rounded to a power of two; log-normal run times
(longer for larger jobs); user estimates that over-estimate by a random factor rounded up to
a usual limit, and a few under-estimates (those jobs get killed when walltime kill is on);
Poisson arrivals at a rate that gives the requested offered load. Times are whole seconds,
so ties in submit times occur, as in SWF logs. Randomness is passed in.
"""

from __future__ import annotations

import numpy as np

from cosim.workload.jobs import Job

__all__ = ["lublin_like"]

S = 1_000_000_000
LIMITS_S = np.array([60, 300, 900, 1800, 3600, 7200, 14400, 28800, 43200, 86400, 129600])


def lublin_like(n: int, n_hosts: int, rng: np.random.Generator, *, load: float = 0.8,
                max_size: int | None = None, cores: int = 1) -> list[Job]:
    """`n` rigid jobs for a machine of `n_hosts` hosts (ids 1..n, submit order)."""
    top = max_size or n_hosts
    serial = rng.random(n) < 0.25
    log_size = rng.uniform(0.0, np.log2(top), n)
    pow2 = rng.random(n) < 0.75
    size = np.where(pow2, 2.0 ** np.round(log_size), np.ceil(2.0 ** log_size))
    size = np.clip(np.where(serial, 1, size), 1, top).astype(np.int64)
    mu = np.log(600.0) + 0.25 * np.log2(size)
    runtime = np.clip(np.rint(rng.lognormal(mu, 1.6)), 0, 129600).astype(np.int64)
    runtime[rng.random(n) < 0.01] = 0
    factor = rng.uniform(1.0, 5.0, n)
    wanted = np.maximum(runtime * factor, 1)
    estimate = LIMITS_S[np.minimum(np.searchsorted(LIMITS_S, wanted), len(LIMITS_S) - 1)]
    estimate = np.maximum(estimate, runtime)  # over-estimates ...
    under = rng.random(n) < 0.03  # ... except a few that will be killed
    estimate = np.where(under, np.maximum(runtime // 2, 0), estimate)
    mean_gap = float(np.sum(size * np.maximum(runtime, 1))) / (n * n_hosts * load)
    submit = np.floor(np.cumsum(rng.exponential(mean_gap, n))).astype(np.int64)
    submit -= submit[0]
    return [
        Job(id=i + 1, submit=int(submit[i]) * S, hosts=int(size[i]),
            pes=int(size[i]) * cores, walltime=int(estimate[i]) * S,
            runtime=int(runtime[i]) * S)
        for i in range(n)
    ]
