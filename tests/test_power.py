"""The power model (docs/reference/policies.md §2.3; check VP-2) and the platform ``[power]``
table: P_s, the cap grid, the beta-model identities, energy, and the errors of a bad table."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from cosim.platform import load_platform
from cosim.platform.power import PowerModel

XEON = PowerModel()  # 2 sockets, 60-115 W, 5 W steps, f_min/f_max 0.5, alpha 3


def test_the_xeon_model():
    assert XEON.static_w == pytest.approx(52.142857142857, rel=1e-12)  # P_s
    assert XEON.levels_mw() == tuple(range(60_000, 115_001, 5_000)) and len(
        XEON.levels_mw()) == 12
    assert XEON.slowdown(115.0) == 1.0  # T(p_max) = T_nom
    assert XEON.slowdown(60.0) == pytest.approx(1.8, rel=1e-12)  # T(p_min) = T_nom (1 + beta)
    assert XEON.slowdown(60.0, beta=1.0) == pytest.approx(2.0, rel=1e-12)
    assert XEON.slowdown(60.0, beta=0.0) == 1.0
    assert XEON.multiplier_ppm(60.0) == 1_800_000
    # E = hosts x sockets x p x T(p): a compute-bound app saves no energy at p_min
    assert XEON.energy_j(1, 115.0, 100.0, beta=1.0) == 2 * 115.0 * 100.0
    assert XEON.energy_j(1, 60.0, 100.0, beta=1.0) == pytest.approx(2 * 60.0 * 200.0)
    assert XEON.energy_j(4, 60.0, 100.0, beta=0.2) < XEON.energy_j(4, 115.0, 100.0, beta=0.2)


@settings(max_examples=100, deadline=None)
@given(st.floats(0.0, 1.0), st.lists(st.sampled_from(XEON.levels_mw()), min_size=2,
                                     max_size=12))
def test_run_time_falls_as_the_cap_rises(beta, levels):
    caps = sorted({mw / 1000 for mw in levels})
    slow = [XEON.slowdown(p, beta) for p in caps]
    assert all(a >= b for a, b in zip(slow, slow[1:]))
    assert all(1.0 <= s <= 1.0 + beta + 1e-12 for s in slow)


def test_the_shipped_platform_has_the_table():
    p = load_platform("kumbhare2048")
    assert p.power == XEON and p.n_hosts == 2048
    assert load_platform("ib256").power is None


@pytest.mark.parametrize("table, problem", [
    ("p_min_w = 120.0", "field power.p_min_w: p_min_w (120) > p_max_w (115)"),
    ("step_w = 7.0", "field power.step_w: 7 W does not divide the range 60-115 W"),
    ("sockets = 0", "field power.sockets: must be an integer >= 1"),
    ("f_min_ratio = 1.5", "field power.f_min_ratio: must be in (0, 1]"),
    ("volts = 3", "field power.volts: unknown key"),
    ("step_w = 0.0001", "field power.step_w: must be a whole number of milliwatts"),
    ("p_min_w = 60.0001", "field power.p_min_w: must be a whole number of milliwatts"),
    ("f_min_ratio = 1.0", "field power.f_min_ratio: f_min_ratio ** alpha = 1 leaves no"),
    ("alpha = 2000.0", "field power.f_min_ratio: f_min_ratio ** alpha = 0 leaves no"),
    ("p_idle_w = 500.0", "field power.p_idle_w: must be in [0, p_min_w]"),
    ("p_idle_w = 70.0", "field power.p_idle_w: must be in [0, p_min_w]"),
])
def test_bad_power_tables(tmp_path, table, problem):
    path = tmp_path / "p.toml"
    path.write_text('[hosts]\ncount = 2\nspeed = "1Gf"\n\n[network]\ntopology = "full"\n'
                    f'bandwidth = "1Gbps"\n\n[power]\n{table}\n')
    with pytest.raises(InputError) as err:
        load_platform(path)
    assert str(err.value).startswith(f"{path}: {problem}") or problem in str(err.value)
    assert str(path) in str(err.value)
