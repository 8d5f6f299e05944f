"""The job value generator (docs/reference/policies.md §3.3 "Generator", §2.2, §2.7;
`cosim.workload.value_gen`): value classes from keyed streams, thresholds as multiples of the
requested time, the sidecar it writes, scaled arrivals and the trace it writes with them."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.core.clock import to_ticks
from cosim.core.rng import stream
from cosim.errors import InputError
from cosim.workload.jobs import Job
from cosim.workload.swf import header_values, read_swf
from cosim.workload.value import read_values, value_from_pairs
from cosim.workload.value_gen import (
    DEFAULT_CLASSES, VALUE_STREAM, ValueSpec, generate_values, parse_classes, run_generator,
    scale_arrivals, write_values,
)

S = 1_000_000_000
TRACES = Path(__file__).resolve().parent.parent / "traces"


def job(i: int, *, submit: int = 0, walltime: int = 100 * S) -> Job:
    return Job(id=i, submit=submit, hosts=1, pes=1, walltime=walltime, runtime=walltime)


def many(n: int) -> list[Job]:
    return [job(i, submit=i * S, walltime=(1 + i % 7) * 60 * S) for i in range(1, n + 1)]


# -- classes and the spec ---------------------------------------------------------------------

def test_parse_classes():
    assert parse_classes("1:0.6,4:0.3,16:0.1") == ((1.0, 0.6), (4.0, 0.3), (16.0, 0.1))
    assert parse_classes(" 2.5 : 1 ") == ((2.5, 1.0),)
    assert parse_classes("0.5:0.5,1e3:0.5") == ((0.5, 0.5), (1000.0, 0.5))
    third = parse_classes("1:0.3333333333,2:0.3333333333,3:0.3333333334")
    assert [v for v, _ in third] == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("text", [
    "", "  ", "1", "1:0.5:2", "a:1", "1:b", "1:0.6,4:0.3",  # sums to 0.9
    "1:0.6,4:0.5", "0:1", "-1:1", "1:0,2:1", "1:-0.5,2:1.5", "nan:1", "inf:1", "1:nan",
    "1:0.5,1:0.5", "1:0.6,,4:0.4", "1:0.6,4:0.3999999",  # the last off by 1e-7
])
def test_bad_classes(text):
    with pytest.raises(InputError) as err:
        parse_classes(text)
    assert err.value.field == "classes"
    assert "\n" not in str(err.value) and str(err.value).startswith("field classes: ")


def test_probabilities_sum_to_one_within_1e_9():
    parse_classes("1:0.6,4:0.3,16:0.1000000005")
    with pytest.raises(InputError, match="sum to 1"):
        parse_classes("1:0.6,4:0.3,16:0.100000002")


@pytest.mark.parametrize("kwargs, field", [
    ({"soft": 0}, "soft"), ({"soft": -1.0}, "soft"), ({"soft": float("nan")}, "soft"),
    ({"soft": float("inf"), "hard": float("inf")}, "soft"), ({"soft": True}, "soft"),
    ({"hard": 0.0}, "hard"), ({"hard": -6}, "hard"), ({"hard": float("inf")}, "hard"),
    ({"soft": 3, "hard": 2}, "hard"),
    ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"), ({"seed": True}, "seed"),
    ({"value_min": 2.0}, "value-min"), ({"value_min": -0.1}, "value-min"),
    ({"classes": ((1.0, 0.5),)}, "classes"), ({"classes": ((0.0, 1.0),)}, "classes"),
    ({"classes": ()}, "classes"), ({"classes": "1:1"}, "classes"),
])
def test_bad_specs(kwargs, field):
    with pytest.raises(InputError) as err:
        ValueSpec(**kwargs)
    assert err.value.field == field


def test_spec_defaults_are_those_of_the_spec():
    spec = ValueSpec()
    assert (spec.classes, spec.soft, spec.hard, spec.seed, spec.value_min) == (
        ((1.0, 0.6), (4.0, 0.3), (16.0, 0.1)), 2.0, 6.0, 0, 0.0)
    assert ValueSpec(soft=3, hard=3).hard == 3.0  # soft == hard is allowed
    assert ValueSpec(classes=[[2, 1]]).classes == ((2.0, 1.0),)


# -- classes drawn per job --------------------------------------------------------------------

def test_class_frequencies_follow_the_probabilities():
    jobs = many(5000)
    rows = generate_values(jobs, ValueSpec(seed=11))
    assert [r[0] for r in rows] == list(range(1, 5001))
    values = [r[1] for r in rows]
    assert set(values) <= {1.0, 4.0, 16.0}
    for v, p in DEFAULT_CLASSES:  # binomial sd <= 0.007 at n = 5000: 0.025 is > 3.5 sd
        assert values.count(v) / len(values) == pytest.approx(p, abs=0.025)
    skewed = [r[1] for r in generate_values(jobs, ValueSpec(classes=((3.0, 0.05), (7.0, 0.95)),
                                                            seed=11))]
    assert skewed.count(3.0) / 5000 == pytest.approx(0.05, abs=0.015)


def test_the_class_is_the_first_whose_cumulative_probability_exceeds_the_keyed_draw():
    spec = ValueSpec(seed=5)
    for jid, value, _, _ in generate_values(many(200), spec):
        u = stream(5, VALUE_STREAM, jid).random()
        assert value == (1.0 if u < 0.6 else 4.0 if u < 0.6 + 0.3 else 16.0)


def test_classes_are_keyed_by_seed_and_job_id_only():
    jobs = many(2000)
    spec = ValueSpec(seed=3)
    full = {r[0]: r for r in generate_values(jobs, spec)}
    half = generate_values(jobs[::2], spec)
    assert len(half) == 1000
    assert all(full[r[0]] == r for r in half)
    # the order of the jobs does not matter, the output is in id order
    assert generate_values(list(reversed(jobs)), spec) == list(full.values())
    # other submit times and walltimes keep the class (only the thresholds follow them)
    moved = [job(j.id, submit=j.submit * 3, walltime=5 * S) for j in jobs]
    assert [r[1] for r in generate_values(moved, spec)] == [r[1] for r in full.values()]
    # another seed draws other classes
    other = generate_values(jobs, ValueSpec(seed=4))
    assert sum(a[1] != b[1] for a, b in zip(other, full.values(), strict=True)) > 500


def test_job_ids_must_be_unique():
    with pytest.raises(InputError, match="job 2 given twice"):
        generate_values([job(1), job(2), job(2, submit=5)], ValueSpec())


# -- thresholds -------------------------------------------------------------------------------

def test_thresholds_are_multiples_of_the_requested_time():
    jobs = [job(1, walltime=3600 * S), job(2, walltime=90 * S + S // 2), job(3, walltime=1),
            job(4, walltime=0), job(5, walltime=3)]
    rows = {r[0]: r for r in generate_values(jobs, ValueSpec(soft=2, hard=6))}
    assert rows[1][2:] == (7200 * S, 21600 * S)
    assert rows[2][2:] == (181 * S, 543 * S)
    assert rows[3][2:] == (2, 6)
    assert rows[4][2:] == (2 * S, 6 * S)  # walltime 0: 1 s as the requested time
    half = {r[0]: r for r in generate_values(jobs, ValueSpec(soft=0.5, hard=1.5))}
    assert half[3][2:] == (1, 2)  # at least one tick; round(0.5) = 0 -> 1, 1.5 -> 2
    assert half[5][2:] == (2, 4)  # 1.5 and 4.5 ticks: ties to even
    assert half[4][2:] == (S // 2, 3 * S // 2)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 4 * 86400 * S), st.floats(0.01, 4.0), st.floats(1.0, 5.0))
def test_the_ticks_are_those_of_the_cosimapp_keys(tmp_path_factory, walltime, soft, more):
    """Same multiples, same ticks as the CosimApp route (`value_from_pairs`), also once the
    sidecar is written and read back (exact decimal seconds: thresholds beyond 2**53 ticks,
    where a float of seconds is off by a tick, read back unchanged)."""
    hard = soft * more
    jobs = [job(1, walltime=walltime)]
    rows = generate_values(jobs, ValueSpec(soft=soft, hard=hard))
    via_pairs = value_from_pairs({"soft": repr(soft), "hard": repr(hard)}, walltime)
    assert rows[0][2:] == (via_pairs.soft, via_pairs.hard)
    assert via_pairs.soft == max(round(soft * walltime), 1)
    path = tmp_path_factory.mktemp("v") / "values.csv"
    write_values(path, rows)
    back = read_values(path, jobs)[1]
    assert (back.soft, back.hard) == (via_pairs.soft, via_pairs.hard)


def test_a_threshold_past_two_to_the_53_ticks_reads_back_exactly(tmp_path):
    """The case CI drew: 4,497,766,670,985,987 ticks, which the float 4497766.670985987 s
    would turn into ...988."""
    walltime, soft, hard = 345_600_000_000_000, 2.8920824787718535, 2.8920824787718535 * 4.5
    jobs = [job(1, walltime=walltime)]
    rows = generate_values(jobs, ValueSpec(soft=soft, hard=hard))
    assert rows[0][3] == 4_497_766_670_985_987
    assert to_ticks(rows[0][3] / S) != rows[0][3]  # what a float sidecar would lose
    write_values(tmp_path / "v.csv", rows)
    assert "4497766.670985987" in (tmp_path / "v.csv").read_text()
    assert read_values(tmp_path / "v.csv", jobs)[1].hard == 4_497_766_670_985_987
    in_seconds = value_from_pairs({"soft": "1s", "hard": "4497766.670985987s"}, walltime)
    assert in_seconds.hard == 4_497_766_670_985_987  # the CosimApp "s" form is exact too


def test_a_threshold_beyond_the_tick_range_is_refused():
    with pytest.raises(InputError) as err:
        generate_values([job(7, walltime=8 * 10**9 * S)], ValueSpec(soft=1, hard=2))
    assert err.value.field == "hard" and "job 7" in str(err.value)


# -- the sidecar ------------------------------------------------------------------------------

def test_write_values_reads_back_exactly(tmp_path):
    jobs = many(300) + [job(1000, walltime=0), job(1001, walltime=1),
                        job(1002, walltime=123 * S + 456_789)]
    spec = ValueSpec(classes=((0.1, 0.5), (2.5, 0.25), (1e6, 0.25)), soft=1.3, hard=4.7,
                     seed=9)
    rows = generate_values(jobs, spec)
    path = tmp_path / "values.csv"
    write_values(path, rows)
    assert path.read_text().splitlines()[0] == "job_id,value,soft_s,hard_s"
    got = read_values(path, jobs)
    assert sorted(got) == [j.id for j in jobs]
    for j in jobs:
        requested = j.walltime or S
        value = got[j.id]
        assert (value.soft, value.hard) == (max(round(1.3 * requested), 1),
                                            max(round(4.7 * requested), 1))
        assert value.u == 0.0 and value.decay == "linear"
    assert {r[0]: r[1] for r in rows} == {k: v.v for k, v in got.items()}
    assert {v.v for v in got.values()} == {0.1, 2.5, 1e6}
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_write_values_with_value_min_and_integers_where_integral(tmp_path):
    rows = [(1, 4.0, 7200 * S, 21600 * S), (2, 16.0, S // 2, 3 * S // 2)]
    path = tmp_path / "v.csv"
    write_values(path, rows, value_min=0.25)
    assert path.read_text() == ("job_id,value,soft_s,hard_s,value_min\n"
                                "1,4,7200,21600,0.25\n2,16,0.5,1.5,0.25\n")
    got = read_values(path, [job(1), job(2)])
    assert got[1].u == got[2].u == 0.25 and got[2].soft == S // 2
    write_values(path, rows[:1])  # replaced whole
    assert path.read_text() == "job_id,value,soft_s,hard_s\n1,4,7200,21600\n"


# -- scaled arrivals --------------------------------------------------------------------------

def test_scaled_arrivals():
    jobs = [job(3, submit=1000 * S), job(1, submit=1000 * S + 7), job(2, submit=1010 * S),
            job(4, submit=5000 * S + 1)]
    half = scale_arrivals(jobs, 0.5)
    assert [j.id for j in half] == [3, 1, 2, 4]  # same order
    assert [j.submit for j in half] == [1000 * S, 1000 * S + 4, 1005 * S, 3000 * S]  # 3.5 -> 4
    assert [(j.walltime, j.runtime) for j in half] == [(j.walltime, j.runtime) for j in jobs]
    assert scale_arrivals(jobs, 1) == tuple(jobs)
    assert all(a is b for a, b in zip(scale_arrivals(jobs, 1.0), jobs, strict=True))
    assert [j.submit for j in scale_arrivals(jobs, 2)] == [1000 * S, 1000 * S + 14, 1020 * S,
                                                           9000 * S + 2]
    assert scale_arrivals([], 0.5) == ()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10**15), min_size=1, max_size=40), st.floats(1e-6, 1.0))
def test_scaled_arrivals_keep_the_order_and_the_first(submits, factor):
    jobs = sorted((job(i, submit=s) for i, s in enumerate(submits)), key=lambda j: j.submit)
    scaled = scale_arrivals(jobs, factor)
    first = jobs[0].submit
    assert scaled[0].submit == first
    assert all(a.submit <= b.submit for a, b in zip(scaled, scaled[1:]))
    assert all(first <= s.submit <= j.submit for s, j in zip(scaled, jobs, strict=True))
    exact = Fraction(repr(factor))
    assert all(s.submit == first + round((j.submit - first) * exact)
               for s, j in zip(scaled, jobs, strict=True))


def test_scaled_arrivals_are_exact_far_from_the_first():
    jobs = [job(1, submit=0), job(2, submit=444_157_599_796_692_942)]
    # 0.9 as 9/10: 399741839817023647.8 -> ...648 (the float product gives ...616)
    assert scale_arrivals(jobs, 0.9)[1].submit == 399_741_839_817_023_648


@pytest.mark.parametrize("factor", [0, 0.0, -0.5, float("nan"), float("inf"), True, "0.5",
                                    None])
def test_bad_arrival_scales(factor):
    with pytest.raises(InputError) as err:
        scale_arrivals([job(1)], factor)
    assert err.value.field == "arrival-scale"


def test_a_scale_that_ends_beyond_the_tick_range_is_refused():
    with pytest.raises(InputError) as err:
        scale_arrivals([job(1, submit=0), job(2, submit=10**9 * S)], 1e4)
    assert err.value.field == "arrival-scale" and "job 2" in str(err.value)


# -- the generator on trace files -------------------------------------------------------------

def test_run_generator_on_an_esp_trace(tmp_path):
    src = read_swf(TRACES / "esp-psia.swf")
    warnings: list[str] = []
    spec = ValueSpec(seed=1)
    out = tmp_path / "new" / "dir"
    paths = run_generator(str(TRACES / "esp-psia.swf"), str(out), spec, 0.5,
                          warn=warnings.append)
    assert paths == {"trace": out / "esp-psia-x0.5.swf", "values": out / "values.csv"}
    assert sorted(p.name for p in out.iterdir()) == ["esp-psia-x0.5.swf", "values.csv"]
    assert warnings == []
    scaled = read_swf(paths["trace"])
    assert any("scaled by 0.5" in n and "oversubscription" in n
               for n in header_values(scaled.header, "Note"))
    by_id = {j.id: j for j in src.jobs}
    assert sorted(by_id) == sorted(j.id for j in scaled.jobs)
    first = min(j.submit for j in src.jobs)
    for j in scaled.jobs:
        old = by_id[j.id]
        assert (j.walltime, j.runtime, j.pes, j.app, j.category, j.priority) == (
            old.walltime, old.runtime, old.pes, old.app, old.category, old.priority)
        assert j.swf[13] == old.swf[13]  # field 14, the executable number, is kept
        assert j.submit == first + round((old.submit - first) / 2)
    values = read_values(paths["values"], scaled.jobs)
    assert sorted(values) == sorted(by_id)
    assert all((values[i].soft, values[i].hard) == (2 * by_id[i].walltime,
                                                    6 * by_id[i].walltime) for i in values)
    assert read_values(paths["values"], src.jobs) == values  # also against the original
    # the same inputs give the same bytes
    again = run_generator(TRACES / "esp-psia.swf", tmp_path / "again", spec, 0.5)
    for key in ("trace", "values"):
        assert again[key].read_bytes() == paths[key].read_bytes()


def test_run_generator_without_scale_on_a_gzip_trace_with_skipped_jobs(tmp_path):
    trace = TRACES / "HPC2N-sample-3171jobs_from-alea.swf.gz"
    src = read_swf(trace)
    assert src.skipped_ids  # jobs of unknown run time are left out of the sidecar
    paths = run_generator(str(trace), str(tmp_path), ValueSpec(seed=2, value_min=0.5), None)
    assert paths == {"values": tmp_path / "values.csv"}
    values = read_values(paths["values"], src.jobs, skipped=src.skipped_ids)
    assert len(values) == len(src.jobs) and all(v.u == 0.5 for v in values.values())
    scaled = run_generator(str(trace), str(tmp_path / "s"), ValueSpec(seed=2), 0.25)
    assert scaled["trace"].name == "HPC2N-sample-3171jobs_from-alea-x0.25.swf"
    jobs = read_swf(scaled["trace"]).jobs
    assert len(jobs) == len(src.jobs)
    assert {k: (v.v, v.soft) for k, v in read_values(scaled["values"], jobs).items()} == {
        k: (v.v, v.soft) for k, v in values.items()}  # same classes and thresholds


HAND = """\
; Version: 2.2
; CosimApp: 7 category=A app=psia priority=0 total_flop=1e12
1 0 -1 10 4 -1 -1 4 20 -1 1 -1 -1 7 -1 -1 -1 -1
2 5 -1 10 4 -1 -1 4 20 -1 1 -1 -1 3 -1 -1 -1 -1
3 9 -1 0 4 -1 -1 4 -1 -1 1 -1 -1 -1 -1 -1 -1 -1
"""


def test_run_generator_reports_a_renumbered_executable(tmp_path):
    trace = tmp_path / "hand.swf"
    trace.write_text(HAND)
    warnings: list[str] = []
    paths = run_generator(trace, tmp_path / "out", ValueSpec(), 0.5, warn=warnings.append)
    assert len(warnings) == 1 and "field 14" in warnings[0] and "7 -> " in warnings[0]
    jobs = read_swf(paths["trace"]).jobs
    assert [j.submit for j in jobs] == [0, 5 * S // 2, 9 * S // 2]
    values = read_values(paths["values"], jobs)
    assert (values[3].soft, values[3].hard) == (2 * S, 6 * S)  # walltime 0: 1 s requested
    assert (values[1].soft, values[1].hard) == (40 * S, 120 * S)


def test_run_generator_reports_a_bad_trace(tmp_path):
    with pytest.raises(InputError):
        run_generator(tmp_path / "missing.swf", tmp_path, ValueSpec(), None)
    assert list(tmp_path.iterdir()) == []
