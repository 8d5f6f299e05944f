"""Tests of marking jobs moldable/malleable: the bound rule and the keyed-random fraction."""

from __future__ import annotations

import dataclasses
import random
from fractions import Fraction

import pytest

from cosim.core.rng import stream
from cosim.errors import InputError
from cosim.workload.jobs import Job
from cosim.workload.marking import (
    DEFAULT_MAX_FRAC, DEFAULT_MIN_FRAC, check_fracs, decimal_text, mark_malleable, pe_bounds,
)
from cosim.workload.runtime_models import IDEAL, RuntimeModel
from cosim.workload.swf import read_swf
from cosim.workload.swf_write import write_jobs_swf

S = 1_000_000_000


def jobs(n: int = 400) -> list[Job]:
    return [Job(id=i * 3 + 1, submit=i * S, hosts=i % 37 + 1, pes=i % 37 + 1, walltime=S,
                runtime=S) for i in range(n)]


@pytest.mark.parametrize("pes, kw, bounds", [
    (10, {}, (10, 10)),
    (50, {"min_frac": Fraction("0.14")}, (7, 50)),         # exact: a float product gives 8
    (3, {"min_frac": Fraction("0.5"), "max_frac": Fraction("0.5")}, (2, 2)),  # raised to min
    (1, {"min_frac": Fraction("0.01"), "max_frac": Fraction("0.01")}, (1, 1)),
    (7, {"min_frac": Fraction("0.5"), "max_frac": Fraction("1.5")}, (4, 10)),
    (8, {"min_pes": 2, "max_pes": 64, "min_frac": Fraction(1)}, (2, 64)),  # absolute wins
    (2, {"min_pes": 4}, (4, 2)),                           # empty: the caller reports it
])
def test_pe_bounds(pes, kw, bounds):
    assert pe_bounds(pes, **kw) == bounds


def test_fraction_zero_and_one():
    js = jobs()
    assert mark_malleable(js, 0.0, seed=1) == tuple(js)
    assert all(a is b for a, b in zip(mark_malleable(js, 0, seed=1), js, strict=True))
    everything = mark_malleable(js, 1.0, seed=1)
    assert all(j.kind == "malleable" for j in everything)
    assert [(j.min_pes, j.max_pes) for j in everything] == [(-(-j.pes // 2), j.pes) for j in js]
    assert DEFAULT_MIN_FRAC == 0.5 and DEFAULT_MAX_FRAC == 1.0


def test_keyed_draw_order_independent():
    js = jobs(2000)
    marked = mark_malleable(js, 0.3, seed=7)
    # the rule, draw by draw
    assert [j.kind == "malleable" for j in marked] == [
        stream(7, "malleable", j.id).random() < 0.3 for j in js]
    assert 500 < sum(j.kind == "malleable" for j in marked) < 700
    # whatever the order (or a subset: another rank's share), each job gets the same mark
    shuffled = js[:]
    random.Random(3).shuffle(shuffled)
    by_id = {j.id: j for j in marked}
    assert all(by_id[j.id] == j for j in mark_malleable(shuffled, 0.3, seed=7))
    assert all(by_id[j.id] == j for j in mark_malleable(js[1000:1200], 0.3, seed=7))
    assert mark_malleable(js, 0.3, seed=8) != marked
    # a larger fraction marks a superset (the same draws, a higher threshold)
    more = {j.id for j in mark_malleable(js, 0.6, seed=7) if j.kind == "malleable"}
    assert {j.id for j in marked if j.kind == "malleable"} < more


def test_trace_marks_win_and_options():
    js = jobs(50)
    traced = [dataclasses.replace(js[0], kind="moldable", min_pes=1, max_pes=4),
              dataclasses.replace(js[1], kind="evolving"), *js[2:]]
    model = RuntimeModel(name="amdahl", f=0.1, reconf_s=5.0)
    out = mark_malleable(traced, 1.0, seed=0, kind="moldable", min_frac=0.25, max_frac=2.0,
                         model=model)
    assert out[0] is traced[0] and out[1] is traced[1]
    for before, after in zip(traced[2:], out[2:], strict=True):
        assert after == dataclasses.replace(
            before, kind="moldable", min_pes=max(1, -(-before.pes // 4)),
            max_pes=2 * before.pes, model=model)
    assert all(j.model is IDEAL for j in mark_malleable(js, 1.0, seed=0))
    assert isinstance(mark_malleable(iter(js), 0.5, seed=0), tuple)


def test_marks_round_trip_through_swf(tmp_path):
    marked = mark_malleable(jobs(), 0.5, seed=3, min_frac=0.3, max_frac=1.5)
    path = tmp_path / "m.swf"
    write_jobs_swf(path, marked, prefer_fracs=(0.3, 1.5))
    text = path.read_text()
    assert text.count("; CosimApp:") == 1 and "kind=malleable min_frac=0.3 max_frac=1.5" in text
    assert [dataclasses.replace(j, swf=None) for j in read_swf(path).jobs] == list(marked)


@pytest.mark.parametrize("kwargs, field", [
    ({"fraction": -0.1}, "malleable-fraction"), ({"fraction": 1.5}, "malleable-fraction"),
    ({"fraction": float("nan")}, "malleable-fraction"), ({"fraction": True},
                                                         "malleable-fraction"),
    ({"fraction": "0.5"}, "malleable-fraction"),
    ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"),
    ({"kind": "rigid"}, "kind"), ({"kind": "evolving"}, "kind"),
    ({"min_frac": 0}, "min-frac"), ({"min_frac": 1.2}, "min-frac"),
    ({"max_frac": 0}, "max-frac"), ({"max_frac": float("inf")}, "max-frac"),
    ({"min_frac": 0.9, "max_frac": 0.8}, "min-frac"),
    ({"model": "amdahl"}, "model"),
])
def test_bad_arguments(kwargs, field):
    args = {"fraction": 0.5, "seed": 0, **kwargs}
    fraction = args.pop("fraction")
    with pytest.raises(InputError) as exc:
        mark_malleable(jobs(3), fraction, **args)
    assert exc.value.field == field and str(exc.value).startswith(f"field {field}: ")


def test_fraction_message():
    with pytest.raises(InputError) as exc:
        mark_malleable([], 2, seed=0)
    assert str(exc.value) == "field malleable-fraction: must be a number in [0, 1], got 2"


def test_check_fracs_and_decimal_text():
    assert check_fracs(0.3, 1.5) == (Fraction(3, 10), Fraction(3, 2))
    # marking uses the decimal value too: 0.14 of 50 PEs is 7
    fifty = Job(id=0, submit=0, hosts=50, pes=50, walltime=S, runtime=S)
    (job,) = mark_malleable([fifty], 1, seed=0, min_frac=0.14)
    assert (job.pes, job.min_pes) == (50, 7)
    assert [decimal_text(Fraction(x)) for x in ("1/2", "2", "3/10", "-1/8", "1/3")] == [
        "0.5", "2", "0.3", "-0.125", "1/3"]
