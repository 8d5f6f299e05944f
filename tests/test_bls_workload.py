"""The Lublin-like workload generator used by the BLS tests and benchmarks."""

from __future__ import annotations

import numpy as np

from cosim.testing.workloads import lublin_like


def test_generator_is_deterministic_and_sane():
    a = lublin_like(500, 64, np.random.default_rng(3))
    b = lublin_like(500, 64, np.random.default_rng(3))
    assert a == b
    assert all(1 <= j.hosts <= 64 for j in a)
    assert [j.submit for j in a] == sorted(j.submit for j in a)
    assert any(j.runtime > j.walltime for j in a)
    assert any(j.runtime == 0 for j in a)
