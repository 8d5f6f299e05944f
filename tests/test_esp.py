"""Tests of the ESP generator: job mix, sizes, T_min, arrivals, Z jobs, determinism, SWF files."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from fractions import Fraction

import pytest

from cosim.errors import InputError
from cosim.paths import TRACES_DIR
from cosim.platform import Host, Platform, load_platform
from cosim.workload.esp import JOB_MIX, esp_sizes, generate_esp, make_esp, write_esp
from cosim.workload.swf import header_values, read_swf
from cosim.workload.swf_write import write_jobs_swf

S = 1_000_000_000
COUNTS = {"A": 75, "B": 9, "C": 3, "D": 3, "E": 3, "F": 9, "G": 6, "H": 6, "I": 24, "J": 24,
          "K": 15, "L": 36, "M": 15, "Z": 2}
TARGETS = {"A": 267, "B": 322, "C": 534, "D": 616, "E": 315, "F": 1846, "G": 1334, "H": 1067,
           "I": 1432, "J": 725, "K": 487, "L": 366, "M": 187, "Z": 100}
SIZES_256 = {"A": 8, "B": 16, "C": 128, "D": 64, "E": 128, "F": 16, "G": 32, "H": 40, "I": 8,
             "J": 16, "K": 24, "L": 32, "M": 64, "Z": 256}


@pytest.fixture(scope="module")
def ib256():
    return load_platform("ib256")


@pytest.fixture(scope="module")
def psia(ib256):
    return generate_esp(app="psia", platform=ib256, seed=0)


def test_job_mix_table():
    assert [t.category for t in JOB_MIX] == list("ABCDEFGHIJKLM") + ["Z"]
    assert {t.category: t.count for t in JOB_MIX} == COUNTS
    assert {t.category: t.target_s for t in JOB_MIX} == TARGETS
    assert sum(t.count for t in JOB_MIX) == 230


def test_sizes_and_counts_on_256(psia):
    assert esp_sizes(256) == SIZES_256 == dict(psia.sizes)   # H = round(40.4992), K = 24
    assert len(psia.jobs) == 230 and [j.id for j in psia.jobs] == list(range(1, 231))
    assert Counter(j.category for j in psia.jobs) == COUNTS
    for j in psia.jobs:
        assert (j.hosts, j.pes, j.runtime) == (SIZES_256[j.category], SIZES_256[j.category],
                                                TARGETS[j.category] * S)
        assert j.walltime == 3 * j.runtime and j.app == "psia"


def test_sizes_on_other_machines(ib256):
    assert esp_sizes(64) == {c: h // 4 for c, h in SIZES_256.items()}   # 10.12 -> 10, 6.12 -> 6
    assert esp_sizes(100) == {"A": 3, "B": 6, "C": 50, "D": 25, "E": 50, "F": 6, "G": 12,
                              "H": 16, "I": 3, "J": 6, "K": 10, "L": 12, "M": 25, "Z": 100}
    # Exact ties round half to even: 0.5 -> 0 (then max 1), 2.5 -> 2, 1.5 -> 2.
    assert (esp_sizes(16)["A"], esp_sizes(40)["B"], esp_sizes(48)["A"]) == (1, 2, 2)
    assert esp_sizes(1) == dict.fromkeys(SIZES_256, 1)           # max(1, round(...))
    w = generate_esp(app="mandelbrot", platform=ib256, seed=3, hosts=64)
    assert w.n_hosts == 64 and dict(w.sizes) == esp_sizes(64)
    assert Counter(j.category for j in w.jobs) == COUNTS
    assert max(j.hosts for j in w.jobs) == 64
    mc = generate_esp(app="psia", platform=load_platform("mc64x48"), seed=0)
    assert (mc.n_hosts, mc.cores_per_host, mc.speed) == (64, 48, 2.4e9)
    assert all(j.pes == 48 * j.hosts for j in mc.jobs)


def test_t_min_exact(psia, ib256):
    # sum(count x hosts x target) = 2,809,904 host-s, / 256 = 10,976.1875 s exactly.
    assert psia.host_seconds == 2_809_904
    assert psia.host_seconds == sum(COUNTS[c] * SIZES_256[c] * TARGETS[c] for c in COUNTS)
    assert psia.t_min == 10_976_187_500_000
    # On 64 hosts every size is a quarter, so T_min is the same.
    assert generate_esp(app="psia", platform=ib256, seed=0, hosts=64).t_min == psia.t_min
    w100 = generate_esp(app="psia", platform=ib256, seed=0, hosts=100)
    assert w100.t_min == round(Fraction(w100.host_seconds, 100) * S)


def regular(w):
    return [j for j in w.jobs if j.category != "Z"]


def test_initial_block_is_twice_the_machine(psia):
    jobs = regular(psia)
    at_zero = [j for j in jobs if j.submit == 0]
    assert len(at_zero) == psia.initial_block == 21
    # The shortest prefix with >= 2 x 256 hosts: without its last job it is short of 512.
    assert sum(j.hosts for j in at_zero) >= 512
    assert sum(j.hosts for j in at_zero[:-1]) < 512
    assert header_values(psia.header, "CosimEsp")[0].endswith("initial_block=21")


def test_rest_evenly_spaced(psia):
    rest = regular(psia)[psia.initial_block:]
    m = len(rest)
    assert m == 228 - 21
    t_min = Fraction(psia.host_seconds, psia.n_hosts)
    assert [j.submit for j in rest] == [round(k * t_min / (2 * (m + 1))) * S
                                        for k in range(1, m + 1)]
    assert all(j.submit % S == 0 for j in psia.jobs)          # whole seconds
    assert rest[-1].submit < t_min / 2 * S


def test_z_jobs(psia):
    z = [j for j in psia.jobs if j.category == "Z"]
    assert [(j.submit, j.priority, j.hosts) for j in z] == [(1098 * S, 1, 256), (5488 * S, 1, 256)]
    assert all(j.priority == 0 for j in psia.jobs if j.category != "Z")
    assert z[1].id == 230 and z[1].submit > max(j.submit for j in regular(psia))
    # Z1 comes after every job submitted at or before its time, and before the later ones.
    assert all((j.submit <= z[0].submit) == (j.id < z[0].id) for j in regular(psia))


def test_zero_arrival(ib256):
    w = generate_esp(app="mandelbrot", platform=ib256, seed=0, arrival="zero")
    assert all(j.submit == 0 for j in regular(w)) and w.initial_block == 228
    assert [(j.id, j.submit) for j in w.jobs if j.category == "Z"] == [(229, 1098 * S),
                                                                       (230, 5488 * S)]


def test_determinism(tmp_path, ib256, psia):
    a, b, c = tmp_path / "a.swf", tmp_path / "b.swf", tmp_path / "c.swf"
    make_esp(app="psia", hosts=256, seed=0, out=a)
    write_esp(b, generate_esp(app="psia", platform=ib256, seed=0))
    make_esp(app="psia", hosts=256, seed=1, out=c)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    other = generate_esp(app="psia", platform=ib256, seed=1)
    cats = [j.category for j in psia.jobs]
    assert cats != [j.category for j in other.jobs]
    assert Counter(cats) == Counter(j.category for j in other.jobs)
    mandel = generate_esp(app="mandelbrot", platform=ib256, seed=0)
    assert [j.category for j in mandel.jobs] == cats        # the order does not depend on app


def test_total_flop(psia):
    for j in psia.jobs:
        flop = float(j.app_params["total_flop"])
        assert flop == j.pes * TARGETS[j.category] * 1e9
        assert flop / (j.pes * 1e9) * S == j.runtime          # ideal balanced time = target
    c = next(j for j in psia.jobs if j.category == "C")
    assert dict(c.app_params) == {"total_flop": "6.8352e+13"}
    mc = generate_esp(app="psia", platform=load_platform("mc64x48"), seed=0)
    a = next(j for j in mc.jobs if j.category == "A")
    assert float(a.app_params["total_flop"]) == 2 * 48 * 267 * 2.4e9


def test_walltime_factor(ib256):
    w = generate_esp(app="psia", platform=ib256, seed=0, walltime_factor=1.1)
    assert {j.category: j.walltime // S for j in w.jobs}["Z"] == 110      # not 111
    assert all(j.walltime == math.ceil(Fraction(11, 10) * TARGETS[j.category]) * S
               for j in w.jobs)
    assert "ceil(1.1 x target)" in header_values(w.header, "Note")[0]


@pytest.mark.parametrize("kwargs, field", [
    ({"app": "quake"}, "app"),
    ({"arrival": "later"}, "arrival"),
    ({"seed": -1}, "seed"),
    ({"seed": 1.5}, "seed"),
    ({"hosts": 0}, "hosts"),
    ({"walltime_factor": 0.5}, "walltime-factor"),
])
def test_bad_arguments(ib256, kwargs, field):
    args = {"app": "psia", "platform": ib256, "seed": 0, **kwargs}
    with pytest.raises(InputError, match=f"field {field}: "):
        generate_esp(**args)


def test_heterogeneous_platform_refused(ib256):
    hosts = (Host(index=0, name="a", speed=1e9, cores=1, rack=0),
             Host(index=1, name="b", speed=2e9, cores=1, rack=0))
    het = Platform(name="het", source="het", hosts=hosts, routing=ib256._routing)
    with pytest.raises(InputError, match="field platform: ESP needs identical hosts"):
        generate_esp(app="psia", platform=het, seed=0)
    with pytest.raises(InputError, match="unknown platform"):
        make_esp(app="psia", seed=0, out="/nonexistent/x.swf", platform="nope")


@pytest.mark.parametrize("app", ["psia", "mandelbrot"])
def test_swf_round_trip(tmp_path, ib256, app):
    w = generate_esp(app=app, platform=ib256, seed=0)
    path = tmp_path / "esp.swf"
    write_esp(path, w)
    back = read_swf(path, cores_per_host=1, max_hosts=256)
    assert back.read == 230 and back.rejected_too_big == 0
    assert tuple(dataclasses.replace(j, swf=None) for j in back.jobs) == w.jobs
    assert [int(j.swf[13]) for j in back.jobs] == [
        "ABCDEFGHIJKLMZ".index(j.category) + 1 for j in w.jobs]
    # read(write(read(x))) == read(x), byte-identical on the second write.
    again = tmp_path / "again.swf"
    write_jobs_swf(again, back.jobs, header=back.header)
    assert read_swf(again).jobs == back.jobs
    assert again.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("app", ["psia", "mandelbrot"])
def test_shipped_traces_equal_fresh_generation(tmp_path, app):
    fresh = tmp_path / f"esp-{app}.swf"
    make_esp(app=app, hosts=256, seed=0, arrival="esp", out=fresh)
    assert (TRACES_DIR / f"esp-{app}.swf").read_bytes() == fresh.read_bytes()
    text = fresh.read_text()
    assert f"; CosimApp: 3 category=C app={app} priority=0 total_flop=6.8352e+13\n" in text
    assert f"; CosimApp: 14 category=Z app={app} priority=1 total_flop=2.56e+13\n" in text


# --------------------------------------------------------------------------- malleable


def test_malleable_marks_all_but_z(tmp_path, ib256, psia):
    w = generate_esp(app="psia", platform=ib256, seed=0, malleable=True)
    assert [dataclasses.replace(j, kind="rigid", min_pes=0, max_pes=0) for j in w.jobs] == list(
        psia.jobs)                                     # nothing else changes
    for j in w.jobs:
        if j.category == "Z":
            assert (j.kind, j.min_pes, j.max_pes) == ("rigid", j.pes, j.pes)
        else:
            assert (j.kind, j.min_pes, j.max_pes) == ("malleable", math.ceil(j.pes / 2), j.pes)
    assert psia.malleable is False and all(j.kind == "rigid" for j in psia.jobs)
    path = tmp_path / "m.swf"
    write_esp(path, w)
    text = path.read_text()
    assert ("; CosimApp: 3 category=C app=psia priority=0 kind=malleable min_frac=0.5 "
            "max_frac=1 total_flop=6.8352e+13\n") in text
    assert "; CosimApp: 14 category=Z app=psia priority=1 total_flop=2.56e+13\n" in text
    assert header_values(read_swf(path).header, "CosimEsp")[0].endswith(
        " malleable=1 min_frac=0.5 max_frac=1")
    back = read_swf(path)
    assert tuple(dataclasses.replace(j, swf=None) for j in back.jobs) == w.jobs
    assert Counter(j.kind for j in back.jobs) == {"malleable": 228, "rigid": 2}


def test_malleable_fractions(tmp_path, ib256):
    # 7 hosts x 3 cores: odd sizes; the fractions survive the round trip as given
    hosts = tuple(Host(index=i, name=f"h{i}", speed=1e9, cores=3, rack=0) for i in range(7))
    plat = Platform(name="odd", source="odd", hosts=hosts, routing=ib256._routing)
    out = tmp_path / "f.swf"
    w = make_esp(app="mandelbrot", out=out, seed=2, platform=plat, malleable=True,
                 min_frac=0.3, max_frac=1.5)
    for j in w.jobs:
        if j.category != "Z":
            assert (j.min_pes, j.max_pes) == (max(1, math.ceil(Fraction(3, 10) * j.pes)),
                                              math.floor(Fraction(3, 2) * j.pes))
    assert out.read_text().count("kind=malleable min_frac=0.3 max_frac=1.5 ") == 13
    assert tuple(dataclasses.replace(j, swf=None) for j in read_swf(out, cores_per_host=3)
                 .jobs) == w.jobs


@pytest.mark.parametrize("kwargs, field", [
    ({"min_frac": 0}, "min-frac"), ({"min_frac": 1.5}, "min-frac"),
    ({"min_frac": float("nan")}, "min-frac"), ({"max_frac": 0}, "max-frac"),
    ({"min_frac": 0.8, "max_frac": 0.5}, "min-frac"), ({"max_frac": "1"}, "max-frac"),
])
def test_bad_fractions(ib256, kwargs, field):
    with pytest.raises(InputError, match=f"field {field}: "):
        generate_esp(app="psia", platform=ib256, seed=0, malleable=True, **kwargs)
