"""DLS techniques: the registry, the worked examples of reference/dls.md, and invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.als.techniques import REGISTRY, chunk_sizes, get, names
from cosim.errors import InputError

EXPECTED = ["STATIC", "SS", "FSC", "MFSC", "GSS", "TSS", "FAC", "FAC2", "WF", "AWF", "AWF-B",
            "AWF-C", "AWF-D", "AWF-E", "AF", "TAP", "FISS", "VISS", "TFSS", "PLS", "RND"]
ADAPTIVE = {"AWF", "AWF-B", "AWF-C", "AWF-D", "AWF-E", "AF"}
NEEDS = {"FSC": {"h": 0.1, "sigma": 0.5}, "FAC": {"mu": 1.0, "sigma": 0.5},
         "TAP": {"mu": 1.0, "sigma": 0.5}}


def test_registry_names_and_lookup():
    assert names() == EXPECTED
    assert {n for n in names() if get(n).adaptive} == ADAPTIVE
    assert get("mFSC").name == "MFSC"
    assert get("awf_b").name == "AWF-B"
    assert get(" fac2 ").name == "FAC2"


def test_unknown_technique_lists_sorted_names():
    with pytest.raises(InputError) as exc:
        get("GUIDED")
    assert "unknown technique 'GUIDED'" in str(exc.value)
    assert ", ".join(sorted(EXPECTED)) in str(exc.value)


def test_unknown_parameter_lists_known_ones():
    with pytest.raises(InputError, match=r"GSS\.foo: unknown key \(known: min_chunk, rounding\)"):
        chunk_sizes("GSS", 100, 4, foo=1)


@pytest.mark.parametrize("name", sorted(ADAPTIVE))
def test_adaptive_techniques_have_no_fixed_sequence(name):
    with pytest.raises(InputError, match="adaptive"):
        chunk_sizes(name, 100, 4)


@pytest.mark.parametrize("name, param", [("FSC", "h"), ("FAC", "mu"), ("TAP", "mu")])
def test_missing_model_parameters_are_named(name, param):
    with pytest.raises(InputError, match=f"needs {param}"):
        chunk_sizes(name, 100, 4)


@pytest.mark.parametrize("bad", [dict(min_chunk=0), dict(min_chunk="x")])
def test_bad_parameter_values(bad):
    with pytest.raises(InputError):
        chunk_sizes("SS", 10, 2, **bad)


# --- worked examples of reference/dls.md -------------------------------------------------

def test_gss_example():
    assert chunk_sizes("GSS", 100, 4) == [25, 19, 14, 11, 8, 6, 5, 3, 3, 2, 1, 1, 1, 1]


def test_gss_min_chunk_p_ends_with_p():
    assert chunk_sizes("GSS", 1000, 4, min_chunk=4)[-5:] == [6, 4, 4, 4, 4]


def test_tss_example_and_degenerate_delta():
    assert chunk_sizes("TSS", 1000, 4) == [125, 117, 109, 101, 93, 85, 77, 69, 61, 53, 45, 37, 28]
    big = chunk_sizes("TSS", 262144, 256)
    assert big == [512] * 512
    real = chunk_sizes("TSS", 262144, 256, delta="real")
    assert len(real) == 980 and real[:4] == [512, 512, 511, 511]


def test_tss_dls4lb_flavour_leaves_a_long_tail():
    # D5: C = floor(2N/(F+1)) makes delta 892 instead of 833; the tail is min-chunk pieces
    seq = chunk_sizes("TSS", 100000, 4, delta="dls4lb")
    assert seq[:2] == [12500, 12500 - 892]
    assert len(seq) == 6175
    assert len(chunk_sizes("TSS", 100000, 4)) == 15


def test_fac_example():
    seq = chunk_sizes("FAC", 1000, 4, mu=1.0, sigma=1.0)
    assert seq[:12] == [229] * 4 + [9] * 4 + [5] * 4
    assert sum(seq) == 1000


def test_fac_without_variance_is_static():
    assert chunk_sizes("FAC", 1000, 4, mu=1.0, sigma=0.0) == [250] * 4


def test_fac2_example_and_variants():
    canonical = chunk_sizes("FAC2", 1000, 4)
    assert canonical == ([125] * 4 + [63] * 4 + [31] * 4 + [16] * 4 + [8] * 4 + [4] * 4
                         + [2] * 4 + [1] * 4)
    lb4omp = chunk_sizes("FAC2", 1000, 4, formula="lb4omp")
    assert lb4omp[8:12] == [32] * 4 and len(lb4omp) == 28 and lb4omp[-5:] == [4, 2, 2, 2, 2]
    assert chunk_sizes("FAC2", 1000, 4, formula="halving")[:12] == [125] * 4 + [63] * 4 + [32] * 4


def test_sun_f77_floor_flavours():
    # "distribute 125 iterations to each CPU, then 62 iterations, then 31 iterations"
    fac = chunk_sizes("FAC2", 1000, 4, rounding="floor", min_chunk=4)
    assert fac[:12] == [125] * 4 + [62] * 4 + [31] * 4
    # "GSS(10)": 250, then 187, then 140
    assert chunk_sizes("GSS", 1000, 4, rounding="floor", min_chunk=10)[:3] == [250, 187, 140]


def test_static_examples():
    assert chunk_sizes("STATIC", 1000, 256) == [4] * 250
    balanced = chunk_sizes("STATIC", 1000, 256, variant="balanced")
    assert balanced == [4] * 232 + [3] * 24


def test_fsc_ceil_versus_trunc():
    assert chunk_sizes("FSC", 1000, 4, h=1.0, sigma=5.0)[0] == 16
    assert chunk_sizes("FSC", 1000, 4, h=1.0, sigma=5.0, rounding="trunc")[0] == 15
    assert chunk_sizes("FSC", 1000, 1, h=1.0, sigma=5.0) == [1000]


def test_mfsc():
    # t = 250: floor(0.55 + 250 ln2 / ln 250) = floor(31.93) = 31
    assert chunk_sizes("MFSC", 1000, 4)[0] == 31
    assert chunk_sizes("MFSC", 4, 4) == [1, 1, 1, 1]


def test_fiss_examples():
    assert chunk_sizes("FISS", 1000, 4, stages=3) == [50] * 4 + [83] * 4 + [116] * 4 + [4]
    big = chunk_sizes("FISS", 262144, 256)
    assert len(big) == 87382 and set(big[:-1]) == {3}


def test_viss_grows_towards_twice_k0():
    seq = chunk_sizes("VISS", 100000, 4)  # K0 = 100000 // 16 = 6250
    assert seq[:4] == [6250] * 4 and seq[4] == 9375 and seq[8] == 10937
    assert max(seq) <= 2 * 6250 - 1


def test_tfss_averages_tss():
    tss = chunk_sizes("TSS", 1000, 4)
    tfss = chunk_sizes("TFSS", 1000, 4)
    assert tfss[:4] == [sum(tss[:4]) // 4] * 4
    assert tfss[4:8] == [sum(tss[4:8]) // 4] * 4


def test_pls_static_part_then_gss():
    seq = chunk_sizes("PLS", 1000, 4)
    assert seq[:4] == [125] * 4
    assert seq[4] == 125  # ceil(500 / 4)
    assert seq[5] == 94  # ceil(375 / 4)


def test_tap_reduces_to_gss_like_without_variance():
    seq = chunk_sizes("TAP", 1000, 4, mu=1.0, sigma=0.0)
    assert seq[0] == 251  # ceil(1000/4 + 1/2)


def test_wf_weights_and_default():
    assert chunk_sizes("WF", 1000, 4) == chunk_sizes("FAC2", 1000, 4)
    seq = chunk_sizes("WF", 1000, 4, weights=(1, 1.5, 2, 2.5))
    # w = 4/7, 6/7, 8/7, 10/7 times ceil(1000/8) = 125
    assert seq[:4] == [72, 108, 143, 179]
    with pytest.raises(InputError, match="3 weights given for 4 PEs"):
        chunk_sizes("WF", 1000, 4, weights=(1, 2, 3))


def test_rnd_is_reproducible_and_bounded():
    a = chunk_sizes("RND", 5000, 8, seed=7)
    assert a == chunk_sizes("RND", 5000, 8, seed=7)
    assert a != chunk_sizes("RND", 5000, 8, seed=8)
    assert max(a[:-1]) <= 313 and min(a) >= 1


# --- invariants over every registered non-adaptive technique ------------------------------

SEQUENCE_TECHNIQUES = [n for n in EXPECTED if n not in ADAPTIVE]


@pytest.mark.parametrize("name", SEQUENCE_TECHNIQUES)
@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 3000), p=st.integers(1, 300), min_chunk=st.integers(1, 5),
       ratio=st.floats(0.0, 3.0))
def test_chunk_sequence_invariants(name, n, p, min_chunk, ratio):
    params = {k: (v if k != "sigma" else ratio) for k, v in NEEDS.get(name, {}).items()}
    seq = chunk_sizes(name, n, p, min_chunk=min_chunk, **params)
    assert sum(seq) == n
    remaining = n
    for i, size in enumerate(seq):
        assert 1 <= size <= remaining
        if i < len(seq) - 1:
            assert size >= min_chunk  # only the last chunk (the remainder) may be smaller
        remaining -= size
    if name == "STATIC":
        assert len(seq) <= p
    if name in ("GSS", "TSS"):
        assert all(a >= b for a, b in zip(seq, seq[1:]))


def test_every_registered_technique_is_covered():
    assert set(SEQUENCE_TECHNIQUES) | ADAPTIVE == set(REGISTRY)
