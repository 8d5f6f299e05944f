"""Tests of the app models (mandelbrot, psia, profile), `TaskCosts`, the loader and the cache."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.config import read_toml
from cosim.errors import InputError
from cosim.workload import TaskCosts, load_app, validate_costs
from cosim.workload import cache as cache_mod
from cosim.workload import mandelbrot as mb
from cosim.workload import psia
from cosim.workload.apps import APPS_DIR, MODELS, resolve_app

# --------------------------------------------------------------------------- references


def naive_escape(cr: float, ci: float, max_iter: int, d: int) -> int:
    """Plain per-pixel iteration with the documented float64 arithmetic, no shortcuts."""
    bits = [int(b) for b in bin(d)[3:]]
    x = y = 0.0
    for n in range(1, max_iter + 1):
        a, b = x, y
        for bit in bits:
            a, b = a * a - b * b, a * b + a * b
            if bit:
                a, b = a * x - b * y, a * y + b * x
        x, y = a + cr, b + ci
        if x * x + y * y > 4.0:
            return n
    return max_iter


def brute_force_k(pts, nrm, w: int, b: float, angle_deg: float) -> np.ndarray:
    """K_o by the literal double loop of workloads.md §3.2 (acos, ceil)."""
    m = len(pts)
    out = np.zeros(m, dtype=np.int64)
    a_s = math.radians(angle_deg)
    for o in range(m):
        for j in range(m):
            if math.acos(max(-1.0, min(1.0, float(nrm[o] @ nrm[j])))) > a_s:
                continue
            d = pts[j] - pts[o]
            beta = float(nrm[o] @ d)
            alpha = math.sqrt(max(float(d @ d) - beta * beta, 0.0))
            k = math.ceil((w * b / 2 - beta) / b)
            l = math.ceil(alpha / b)
            if 0 <= k < w and 0 <= l < w:
                out[o] += 1
    return out


# --------------------------------------------------------------------------- mandelbrot


@pytest.mark.parametrize("power, region, max_iter", [
    (2, (-2.0, 0.5, -1.25, 1.25), 1),
    (2, (-2.0, 0.5, -1.25, 1.25), 2),
    (2, (-2.0, 0.5, -1.25, 1.25), 60),
    (2, (-2.0, 0.5, -1.25, 1.25), 2500),     # periodicity and cardioid shortcuts matter
    (2, (-0.80, -0.70, -0.05, 0.05), 1500),   # cardioid / bulb contact point
    (2, (0.20, 0.30, -0.05, 0.05), 1500),     # cusp of the cardioid
    (4, (-1.5, 1.5, -1.5, 1.5), 40),
    (4, (-1.5, 1.5, -1.5, 1.5), 2500),
    (3, (-1.5, 1.5, -1.5, 1.5), 800),
])
def test_mandelbrot_counts_equal_naive_loop(power, region, max_iter):
    xmin, xmax, ymin, ymax = region
    p = mb.MandelbrotParams(width=15, height=11, xmin=xmin, xmax=xmax, ymin=ymin, ymax=ymax,
                            max_iter=max_iter, power=power)
    re, im = mb.pixel_grid(p)
    ref = np.array([[naive_escape(r, i, max_iter, power) for r in re] for i in im])
    cx, cy = np.meshgrid(re, im)
    # All-vector, default hybrid and all-scalar paths give the same counts.
    for below in (0, 16, 10**9):
        got = mb.escape_counts(cx, cy, max_iter=max_iter, power=power, scalar_below=below)
        np.testing.assert_array_equal(got.reshape(ref.shape), ref)
    np.testing.assert_array_equal(mb.escape_image(p), ref)


def test_mandelbrot_shortcuts_fire():
    p = mb.MandelbrotParams(width=64, max_iter=10)
    cx, cy = np.meshgrid(*mb.pixel_grid(p))
    assert mb._inside_known(cx, cy).mean() > 0.15
    # Points just outside the cardioid cusp and the bulb are never claimed as inside.
    assert not mb._inside_known(np.array([0.25 + 1e-9, -0.75, -1.25, -0.75]),
                                np.array([0.0, 1e-9, 0.0, 0.0])).any()
    # Interior points of d = 3 (no geometric test) finish through exact periodicity even
    # with an astronomically large cap; without it this call would never return.
    c = mb.escape_counts(np.array([0.0, -0.1, 0.2]), np.array([0.0, 0.1, -0.3]),
                         max_iter=10**15, power=3)
    assert (c == 10**15).all()


def test_mandelbrot_grid_and_order(tmp_path):
    w, h = 16, 12
    base = {"width": str(w), "height": str(h), "max_iter": "300"}
    row = load_app("mandelbrot", overrides=base, cache_dir=tmp_path)
    col = load_app("mandelbrot", overrides={**base, "order": "column"}, cache_dir=tmp_path)
    assert row.n == col.n == w * h
    np.testing.assert_array_equal(col.flop, row.flop.reshape(h, w).T.ravel())
    # i = row * width + col, row 0 at the top (ymax), pixel centres.
    r, c = 3, 10
    cr = -2.0 + (c + 0.5) * (2.5 / w)
    ci = 1.25 - (r + 0.5) * (2.5 / h)
    assert row.flop[r * w + c] == naive_escape(cr, ci, 300, 2) * 8.0
    assert col.flop[c * h + r] == row.flop[r * w + c]
    assert row.label == "mandelbrot 16x12 it=300 row"
    assert row.params["flop_per_iter"] == 8.0 and row.params["height"] == h


def test_mandelbrot_default_statistics(tmp_path):
    # Sanity golden against docs/reference/workloads.md §3.3 (512², max_iter = 1000:
    # mean k 246.7, c.o.v. 1.72, 24.1 % at max_iter; that table sampled a slightly different
    # grid, pixel centres give the values below).
    c = load_app("mandelbrot", cache_dir=tmp_path)
    k = c.flop / 8.0
    assert c.n == 512 * 512 and c.label == "mandelbrot 512x512 it=1000 row"
    assert k.mean() == pytest.approx(247.6, abs=0.05)
    assert c.std / c.mean == pytest.approx(1.718, abs=0.001)
    assert np.mean(k == 1000) == pytest.approx(0.2416, abs=0.0001)


def test_mandelbrot_params():
    p = mb.MandelbrotParams(width=100)
    assert p.height == 100 and p.flop_per_iter == 8.0
    assert mb.MandelbrotParams(power=4).flop_per_iter == 13.0
    assert [mb.default_flop_per_iter(d) for d in (2, 3, 4, 8)] == [8, 14, 13, 18]
    for bad in ({"width": 0}, {"xmin": 1.0, "xmax": 0.0}, {"max_iter": 0}, {"power": 1},
                {"flop_per_iter": 0.0}):
        with pytest.raises(ValueError):
            mb.MandelbrotParams(**bad)


# --------------------------------------------------------------------------- psia


@pytest.mark.parametrize("shape, w, b, angle", [
    ("torus", 5, 0.2, 60.0),
    ("blob", 5, 0.15, 45.0),
    ("torus", 4, 0.3, 180.0),
    ("blob", 7, 0.1, 120.0),
])
def test_psia_counts_equal_brute_force(shape, w, b, angle):
    p = psia.PsiaParams(points=70, shape=shape, seed=3)
    pts, nrm = psia.point_cloud(p)
    got = psia.accepted_counts(pts, nrm, image_width=w, bin_size=b, support_angle_deg=angle)
    np.testing.assert_array_equal(got, brute_force_k(pts, nrm, w, b, angle))
    assert got.min() >= 1  # every point is in its own image
    assert got.std() > 0  # the costs vary between images


def test_psia_cloud_is_deterministic_and_on_surface():
    for shape in ("torus", "blob"):
        p = psia.PsiaParams(points=500, shape=shape, seed=7)
        a, an = psia.point_cloud(p)
        b, bn = psia.point_cloud(p)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(np.linalg.norm(an, axis=1), 1.0)
        assert not np.array_equal(a, psia.point_cloud(dataclasses.replace(p, seed=8))[0])
    pts, nrm = psia.point_cloud(psia.PsiaParams(points=500, shape="torus"))
    ring = np.hypot(pts[:, 0], pts[:, 1])
    tube = np.hypot(ring - psia._TORUS_R, pts[:, 2])
    np.testing.assert_allclose(tube, psia._TORUS_r)
    # The normal points from the tube's centre line to the point.
    centre = np.stack([pts[:, 0] / ring * psia._TORUS_R, pts[:, 1] / ring * psia._TORUS_R,
                       np.zeros(len(pts))], axis=1)
    np.testing.assert_allclose((pts - centre) / psia._TORUS_r, nrm, atol=1e-12)


def test_psia_default_statistics(tmp_path):
    # The defaults make PSIA mildly irregular (workloads.md §3.2: c.o.v. ~0.1 or less).
    c = load_app("psia", cache_dir=tmp_path)
    assert c.n == 16384 and c.label == "psia M=16384 N=16384 W=5 torus"
    assert c.mean == pytest.approx(6.345e5, rel=1e-3)
    assert c.std / c.mean == pytest.approx(0.0657, abs=0.001)


def test_psia_cost_formula(tmp_path):
    ov = {"points": "50", "images": "120", "flop_per_point": "20", "flop_per_accept": "7",
          "seed": "2"}
    c = load_app("psia", overrides=ov, cache_dir=tmp_path)
    p = psia.PsiaParams(points=50, seed=2)
    pts, nrm = psia.point_cloud(p)
    k = psia.accepted_counts(pts, nrm, image_width=5, bin_size=0.2, support_angle_deg=60.0)
    assert c.n == 120
    np.testing.assert_array_equal(c.flop, 50 * 20.0 + k[np.arange(120) % 50] * 7.0)
    assert c.params["images"] == 120 and c.model == "psia"
    with pytest.raises(ValueError):
        psia.PsiaParams(support_angle_deg=0.0)


# --------------------------------------------------------------------------- TaskCosts


costs_arrays = st.lists(st.floats(min_value=0.0, max_value=1e9, allow_nan=False),
                        min_size=1, max_size=200).map(np.array)


@settings(max_examples=60, deadline=None)
@given(costs_arrays, st.data())
def test_taskcosts_prefix_and_chunks(arr, data):
    c = TaskCosts.from_array(arr, model="profile", label="x", params={"a": 1})
    n = arr.size
    assert c.n == n and c.prefix.shape == (n + 1,) and c.prefix_sq.shape == (n + 1,)
    assert c.prefix[0] == 0.0 and c.prefix_sq[0] == 0.0
    np.testing.assert_array_equal(c.prefix[1:], np.cumsum(arr))
    np.testing.assert_array_equal(c.prefix_sq[1:], np.cumsum(arr * arr))
    assert c.total == c.prefix[-1]
    assert c.mean == pytest.approx(arr.mean(), rel=1e-9, abs=1e-9)
    assert c.std == pytest.approx(arr.std(), rel=1e-9, abs=1e-6)
    first = data.draw(st.integers(0, n))
    size = data.draw(st.integers(0, n - first))
    expect = float(arr[first:first + size].sum())
    # Prefix differences and direct sums round differently: bound by n ulps of the total.
    assert c.chunk_flop(first, size) == pytest.approx(expect, rel=1e-9, abs=1e-12 * n * c.total)
    assert c.chunk_flop(first, size) == c.prefix[first + size] - c.prefix[first]


def test_taskcosts_is_read_only_and_copies():
    src = np.array([1.0, 2.0, 3.0])
    c = TaskCosts.from_array(src, model="profile", label="x", params={"k": [1]})
    src[0] = 99.0
    assert c.flop[0] == 1.0
    for a in (c.flop, c.prefix, c.prefix_sq):
        with pytest.raises(ValueError):
            a[0] = 5.0
    with pytest.raises(TypeError):
        c.params["k"] = 2  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.label = "y"  # type: ignore[misc]
    for first, size in ((-1, 1), (0, 4), (3, 1), (2, -1)):
        with pytest.raises(IndexError):
            c.chunk_flop(first, size)
    assert c.chunk_flop(3, 0) == 0.0 and c.chunk_flop(0, 3) == 6.0


def test_validate_costs():
    out = validate_costs([1, 2, 3])
    assert out.dtype == np.float64 and out.tolist() == [1.0, 2.0, 3.0]
    cases = [
        ([], "no costs"),
        ([1.0, float("nan")], "NaN is not a cost (iteration 1)"),
        ([float("inf")], "an infinity is not a cost (iteration 0)"),
        ([1.0, 2.0, -3.0], "-3.0 (negative) is not a cost (iteration 2)"),
        ([[1.0, 2.0]], "expected a 1-D array"),
        (["a", "b"], "expected real numbers"),
    ]
    for values, text in cases:
        with pytest.raises(InputError) as err:
            validate_costs(values, file="c.npy")
        assert str(err.value).startswith("c.npy: field cost: ") and text in str(err.value)
    with pytest.raises(InputError) as err:
        validate_costs([1.0, 2.0, float("nan")], file="costs.csv", lines=[3, 9, 17])
    assert str(err.value) == "costs.csv:17: field cost: NaN is not a cost"


# --------------------------------------------------------------------------- profile


def test_profile_text(tmp_path):
    f = tmp_path / "costs.csv"
    f.write_text("# measured\n1.5\n\n2  # trailing comment\n   3e2\n")
    c = load_app("profile", costs_file=str(f))
    assert c.flop.tolist() == [1.5, 2.0, 300.0] and c.model == "profile"
    assert c.label == "profile costs.csv n=3"
    scaled = load_app("profile", costs_file=str(f), overrides={"scale": "2"})
    assert scaled.flop.tolist() == [3.0, 4.0, 600.0]
    # The parameter `file` works too, and --costs takes precedence over it.
    g = tmp_path / "other.txt"
    g.write_text("7\n")
    assert load_app("profile", overrides={"file": str(g)}).flop.tolist() == [7.0]
    assert load_app("profile", overrides={"file": str(g)}, costs_file=str(f)).n == 3


def test_profile_npy_and_hdf5(tmp_path):
    arr = np.arange(1.0, 11.0)
    np.save(tmp_path / "c.npy", arr)
    np.testing.assert_array_equal(load_app("profile", costs_file=str(tmp_path / "c.npy")).flop, arr)
    with h5py.File(tmp_path / "one.h5", "w") as fh:
        fh.create_group("g").create_dataset("t", data=arr.astype(np.float32))
    one = load_app("profile", costs_file=str(tmp_path / "one.h5"))
    np.testing.assert_array_equal(one.flop, arr)
    with h5py.File(tmp_path / "two.hdf5", "w") as fh:
        fh["a"] = arr
        fh["b/c"] = arr * 2
    got = load_app("profile", costs_file=str(tmp_path / "two.hdf5"), overrides={"dataset": "b/c"})
    np.testing.assert_array_equal(got.flop, arr * 2)
    with pytest.raises(InputError,
                       match=r"two\.hdf5: field dataset: 2 datasets .*\(datasets: a, b/c\)"):
        load_app("profile", costs_file=str(tmp_path / "two.hdf5"))
    with pytest.raises(InputError, match=r"no dataset 'zz' \(datasets: a, b/c\)"):
        load_app("profile", costs_file=str(tmp_path / "two.hdf5"), overrides={"dataset": "zz"})
    with pytest.raises(InputError, match="dataset applies only to HDF5"):
        load_app("profile", costs_file=str(tmp_path / "c.npy"), overrides={"dataset": "a"})


def _bad(tmp_path: Path, name: str, content) -> str:
    f = tmp_path / name
    if isinstance(content, np.ndarray):
        np.save(f, content)
    elif isinstance(content, bytes):
        f.write_bytes(content)
    else:
        f.write_text(content)
    return str(f)


def test_profile_bad_inputs(tmp_path):
    cases = [
        ("a.csv", "1\n2\nnan\n", "a.csv:3: field cost: NaN is not a cost"),
        ("b.csv", "# c\n1\n\n-4\n", "b.csv:4: field cost: -4.0 (negative) is not a cost"),
        ("c.txt", "1\ninf\n", "c.txt:2: field cost: an infinity is not a cost"),
        ("d.csv", "1\ncost\n", "d.csv:2: field cost: not a number: 'cost'"),
        ("e.csv", "1,2\n", "e.csv:1: field cost: not a number: '1,2'"),
        ("f.csv", "# nothing\n\n", "f.csv: field cost: no costs"),
        ("g.csv", b"\xff\xfe1\n", "g.csv: not a UTF-8 text file"),
        ("h.npy", np.array([1.0, np.nan]), "h.npy: field cost: NaN is not a cost (iteration 1)"),
        ("i.npy", np.zeros((2, 2)), "i.npy: field cost: expected a 1-D array"),
        ("j.npy", np.array([], dtype=float), "j.npy: field cost: no costs"),
        ("k.npy", b"not numpy at all", "k.npy: not a valid .npy file"),
        ("l.h5", b"not hdf5", "l.h5: cannot open as HDF5"),
    ]
    for name, content, text in cases:
        path = _bad(tmp_path, name, content)
        with pytest.raises(InputError) as err:
            load_app("profile", costs_file=path)
        assert str(err.value).startswith(f"{tmp_path / name}{text[len(name):]}"), str(err.value)
    with h5py.File(tmp_path / "m.h5", "w") as fh:
        fh["costs"] = np.array([1.0, -1.0])
    with pytest.raises(InputError, match=r"m\.h5: field costs: -1\.0 \(negative\) is not a cost"):
        load_app("profile", costs_file=str(tmp_path / "m.h5"))
    with pytest.raises(InputError, match=r"missing\.csv: no such file"):
        load_app("profile", costs_file=str(tmp_path / "missing.csv"))
    with pytest.raises(InputError, match="needs a cost file"):
        load_app("profile")
    with pytest.raises(InputError, match="scale must be > 0"):
        load_app("profile", costs_file=_bad(tmp_path, "ok.csv", "1\n"), overrides={"scale": "0"})
    with pytest.raises(InputError, match=r"field costs: --costs is only for the profile model"):
        load_app("mandelbrot", costs_file="x.csv")


def test_profile_toml_relative_file(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "c.csv").write_text("4\n5\n")
    app = tmp_path / "my.toml"
    app.write_text('model = "profile"\n[params]\nfile = "data/c.csv"\nscale = 10\n')
    c = load_app(str(app))
    assert c.flop.tolist() == [40.0, 50.0]
    assert Path(str(c.params["file"])) == tmp_path / "data" / "c.csv"


# --------------------------------------------------------------------------- TOML schema


def test_builtin_tomls_match_dataclass_defaults():
    for name in ("mandelbrot", "psia"):
        doc = read_toml(APPS_DIR / f"{name}.toml")
        assert doc["model"] == name
        assert resolve_app(name).params == MODELS[name].params()
    assert resolve_app("profile").params == MODELS["profile"].params()


@pytest.mark.parametrize("text, field, problem", [
    ('model = "mandelbrot"\ncolour = 1\n', "field colour",
     "unknown key (known: description, model, params)"),
    ('model = "mandelbrot"\n[params]\nwidht = 5\n', "field params.widht",
     "unknown key (known: flop_per_iter, height"),
    ('model = "psia"\n[params]\npoints = "many"\n', "field params.points", "expected an integer"),
    ('model = "psia"\n[params]\npoints = 0\n', "field params", "points must be >= 1"),
    ('[params]\nwidth = 5\n', "field model", "required key is missing"),
    ('model = "fractal"\n', "field model",
     "unknown model 'fractal' (known: mandelbrot, profile, psia)"),
    ('model = "psia"\nparams = 3\n', "field params", "expected a table"),
    ('model = "psia"\n[params\n', "", "invalid TOML"),
])
def test_app_toml_errors(tmp_path, text, field, problem):
    app = tmp_path / "app.toml"
    app.write_text(text)
    with pytest.raises(InputError) as err:
        load_app(str(app), cache_dir=tmp_path)
    msg = str(err.value)
    assert msg.startswith(str(app)) and field in msg and problem in msg, msg


def test_overrides_and_unknown_apps(tmp_path):
    with pytest.raises(InputError) as err:
        load_app("mandelbrot", overrides={"colour": "red"}, cache_dir=tmp_path)
    assert str(err.value) == ("field app-param.colour: unknown key (known: flop_per_iter, height, "
                              "max_iter, order, order_seed, power, width, xmax, xmin, ymax, ymin)")
    with pytest.raises(InputError, match=r"app-param.order: 'diagonal' is not one of row, column"):
        load_app("mandelbrot", overrides={"order": "diagonal"}, cache_dir=tmp_path)
    with pytest.raises(InputError, match=r"field app-param: the region needs xmin < xmax"):
        load_app("mandelbrot", overrides={"xmin": "1"}, cache_dir=tmp_path)
    with pytest.raises(InputError, match=r"'nbody': neither a model \(mandelbrot, profile, psia\)"):
        load_app("nbody", cache_dir=tmp_path)
    app = tmp_path / "small.toml"
    app.write_text('model = "mandelbrot"\ndescription = "tiny"\n'
                   '[params]\nwidth = 8\nmax_iter = 50\n')
    c = load_app(str(app), overrides={"max_iter": "70", "height": "4"}, cache_dir=tmp_path)
    assert (c.n, c.params["max_iter"], c.flop.max()) == (32, 70, 70 * 8.0)


# --------------------------------------------------------------------------- cache


def test_cache_round_trip_and_corruption(tmp_path, monkeypatch):
    ov = {"width": "24", "height": "20", "max_iter": "200"}
    first = load_app("mandelbrot", overrides=ov, cache_dir=tmp_path)
    files = sorted(tmp_path.glob("mandelbrot-*.npy"))
    assert len(files) == 1
    params = mb.MandelbrotParams(width=24, height=20, max_iter=200).count_key()
    key = {"model": "mandelbrot", "params": params, "version": mb.CODE_VERSION}
    digest = cache_mod.cache_key("mandelbrot", params, mb.CODE_VERSION)
    assert files[0].name == f"mandelbrot-{digest}.npy"
    canonical = json.dumps(key, sort_keys=True, separators=(",", ":"))
    assert digest == hashlib.sha256(canonical.encode()).hexdigest()
    assert not list(tmp_path.glob(".*tmp"))  # no temporary file left behind

    calls = []
    real = mb.escape_image

    def counting(p):
        calls.append(p)
        return real(p)

    monkeypatch.setattr(mb, "escape_image", counting)
    # A hit computes nothing and gives identical arrays; order and flop_per_iter reuse it.
    second = load_app("mandelbrot", overrides=ov, cache_dir=tmp_path)
    np.testing.assert_array_equal(second.flop, first.flop)
    np.testing.assert_array_equal(second.prefix, first.prefix)
    load_app("mandelbrot", overrides={**ov, "order": "column", "flop_per_iter": "7"},
             cache_dir=tmp_path)
    assert calls == []
    # Corrupt files (garbage, truncated, wrong shape, out of range) are recomputed.
    good = files[0].read_bytes()
    bad_arrays = [np.zeros((20, 24), dtype=np.int64), np.ones((3, 3), dtype=np.int64),
                  np.ones((20, 24), dtype=np.float64)]
    for corrupt in [b"garbage", good[: len(good) // 2]] + bad_arrays:
        if isinstance(corrupt, bytes):
            files[0].write_bytes(corrupt)
        else:
            np.save(files[0], corrupt)
        again = load_app("mandelbrot", overrides=ov, cache_dir=tmp_path)
        np.testing.assert_array_equal(again.flop, first.flop)
        assert files[0].read_bytes() == good  # rewritten
    assert len(calls) == 5


def test_cache_psia_and_env_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("COSIM_CACHE_DIR", str(tmp_path / "envcache"))
    ov = {"points": "40", "seed": "5"}
    a = load_app("psia", overrides=ov)
    assert len(list((tmp_path / "envcache").glob("psia-*.npy"))) == 1

    def fail(p):
        raise AssertionError("should have hit the cache")

    monkeypatch.setattr(psia, "point_cloud", fail)
    b = load_app("psia", overrides={**ov, "flop_per_accept": "1", "images": "80"})
    assert b.n == 80
    np.testing.assert_array_equal(b.flop[:40] - 40 * 22.0, (a.flop - 40 * 22.0) / 150.0)
    # An unwritable cache directory costs the caching only.
    monkeypatch.undo()
    blocker = tmp_path / "file"
    blocker.write_text("")
    c = load_app("psia", overrides=ov, cache_dir=blocker / "sub")
    np.testing.assert_array_equal(c.flop, a.flop)
    assert os.environ.get("COSIM_CACHE_DIR") is None


def test_mandelbrot_shuffled_order_is_a_keyed_permutation_of_the_row_order():
    import numpy as np

    from cosim.core.rng import stream
    from cosim.workload import load_app

    row = load_app("mandelbrot", overrides={"width": "64"})
    a = load_app("mandelbrot", overrides={"width": "64", "order": "shuffled"})
    b = load_app("mandelbrot", overrides={"width": "64", "order": "shuffled",
                                          "order_seed": "1"})
    perm = stream(0, "mandelbrot.order").permutation(64 * 64)
    assert np.array_equal(a.flop, row.flop[perm])
    assert not np.array_equal(a.flop, b.flop) and a.total == b.total == row.total
    # STATIC on 16 PEs: the row order's heaviest chunk is far above the mean, shuffled's not
    worst = {k: c.flop.reshape(16, -1).sum(axis=1).max() / (c.total / 16)
             for k, c in (("row", row), ("shuffled", a))}
    assert worst["row"] > 2 and worst["shuffled"] < 1.2
