"""SD-Policy decisions that must not move: digests of malleable runs under every variant.

The golden file ``tests/golden/sdpolicy.txt`` was written by the straightforward SD-Policy of
issue 10 (every combination of mates laid out on PEs, candidates rebuilt at every pass),
*before* the speed work (per-width walltime bounds, counted shares, caches of the state and
the policy). Each line is a variant, its job count and the SHA-256 of its outcomes (id,
start, end, status, shrinks, expands, PE-ticks) and allocation intervals (one row per host,
`per_host_rows`, so that merging rows over hosts differently changes nothing): the fast
policy must
take exactly the same decisions. Run ``python tests/test_sd_regression.py --write`` only
when a change of decisions is intended, and say why in the commit.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest

from cosim.bls import BatchConfig, simulate_batch
from cosim.testing.workloads import lublin_like
from cosim.workload.marking import mark_malleable

GOLDEN = Path(__file__).parent / "golden" / "sdpolicy.txt"

VARIANTS = {  # name -> (cores per host, SD-Policy parameters)
    "default": (16, {}),
    "unweighted": (16, {"weighting": "none"}),
    "host-granularity": (16, {"granularity": "host"}),
    "one-core-hosts": (1, {}),
    "three-mates": (16, {"max_mates": "3"}),
    "one-mate-cutoff-5": (16, {"max_mates": "1", "max_slowdown": "5"}),
    "dynamic-cutoff": (16, {"cutoff": "dynamic"}),
    "no-cutoff-always": (16, {"cutoff": "none", "compare_static": "false"}),
    "protect-reservation": (16, {"protect_reservation": "true"}),
    "no-guest-expand": (16, {"expand_guest": "false"}),
    "four-core-hosts": (4, {}),
}
JOBS, HOSTS = 1200, 512


def digest(cores: int, params: dict[str, str]) -> tuple[int, str]:
    """``(jobs, SHA-256)`` of an all-malleable Lublin-like run on HOSTS hosts."""
    jobs = lublin_like(JOBS, HOSTS, np.random.default_rng(3), load=0.9, cores=cores)
    jobs = mark_malleable(jobs, 1.0, seed=1)
    res = simulate_batch(jobs, n_hosts=HOSTS, cores_per_host=cores,
                         config=BatchConfig(malleable="sd", malleable_params=params))
    h = hashlib.sha256()
    for o in sorted(res.outcomes, key=lambda o: o.job.id):
        h.update(repr((o.job.id, o.start, o.end, o.status, o.shrinks, o.expands,
                       o.pe_ticks)).encode())
    h.update(per_host_rows(res.allocations).tobytes())
    return len(res.outcomes), h.hexdigest()


def per_host_rows(t: np.ndarray) -> np.ndarray:
    """The allocation rows one host each, sorted: the same intervals whichever runs of hosts
    the log merged them into."""
    rep = np.repeat(np.arange(len(t)), t["hosts"])
    first = np.repeat(np.cumsum(t["hosts"]) - t["hosts"], t["hosts"])
    out = t[rep].copy()
    out["host"] += np.arange(len(rep)) - first
    out["hosts"] = 1
    return np.sort(out, order=["job", "host", "core", "start", "end", "role", "owner"])


def _golden() -> dict[str, tuple[int, str]]:
    out = {}
    for line in GOLDEN.read_text().splitlines():
        name, n, sha = line.split()
        out[name] = (int(n), sha)
    return out


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_sd_policy_decisions_did_not_move(name):
    cores, params = VARIANTS[name]
    assert digest(cores, params) == _golden()[name]


if __name__ == "__main__" and "--write" in sys.argv:
    GOLDEN.write_text("".join(f"{name} {n} {sha}\n" for name, (n, sha) in
                              ((k, digest(*v)) for k, v in sorted(VARIANTS.items()))))


def test_the_arithmetic_layout_of_regular_mates_is_the_general_one(monkeypatch):
    # every layout of the default variant has regular mates (cores 0..k-1, nobody else on
    # their hosts): laying them all out the general way must take the same decisions
    from cosim.bls.policies import sdpolicy

    taken = []
    monkeypatch.setattr(sdpolicy, "_regular", lambda m, cluster: taken.append(m.jid) and False)
    assert digest(*VARIANTS["default"]) == _golden()["default"] and taken
