"""`OutcomeColumns`: a run's outcomes gathered once, by job id, for every output file.

The columns must be what each outcome says (ids sorted, masks where a job has no start or
end, the hosts held and asked for, each host list as ranges); the writers that read them
give the text they give without them; and ``schedule.swf`` still names, in its own
``(submit, id)`` order, the first outcome with an unknown status or inconsistent times.
"""

from __future__ import annotations

import csv
import dataclasses
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.core.clock import format_ticks
from cosim.core.indexset import IndexSet
from cosim.output.columns import OutcomeColumns, _pe_ticks
from cosim.output.metrics import summary
from cosim.output.runfiles import _rows, host_ranges, write_jobs_csv
from cosim.output.tables import _jobs_table
from cosim.workload.batsim import _batsim_text
from cosim.workload.jobs import Job, JobOutcome
from cosim.workload.swf_write import write_swf
from cosim.workload.value import JobValue, earned

S = 1_000_000_000
VALUE = JobValue(v=8.0, soft=5 * S, hard=20 * S)
#: power segments (tick, mW per socket): none, one, two with a fractional second and watt
POWER = ((), ((0, 115_000),), ((3 * S, 60_500), (7 * S + 1, 115_000)))


@st.composite
def outcomes(draw):
    n = draw(st.integers(0, 25))
    ids = draw(st.lists(st.integers(0, 500), min_size=n, max_size=n, unique=True))
    out = []
    for i in ids:
        submit = draw(st.integers(0, 50)) * S
        hosts = draw(st.integers(1, 6))
        job = Job(id=i, submit=submit, hosts=hosts, pes=hosts * draw(st.integers(1, 2)),
                  walltime=draw(st.integers(0, 40)) * S, runtime=draw(st.integers(0, 40)) * S,
                  kind=draw(st.sampled_from(["rigid", "malleable"])),
                  category=draw(st.sampled_from(["", "A", "Z"])),
                  value=draw(st.sampled_from([None, None, VALUE])))
        status = draw(st.sampled_from(["completed", "killed", "rejected", "dropped"]))
        if status == "rejected":
            out.append(JobOutcome(job=job, start=None, end=None, hosts=(), status=status))
            continue
        if status == "dropped":
            out.append(JobOutcome(job=job, start=None, end=submit + draw(st.integers(0, 9)),
                                  hosts=(), status=status))
            continue
        start = submit + draw(st.integers(0, 30)) * S
        held = sorted(draw(st.sets(st.integers(0, 40), min_size=1, max_size=hosts)))
        events = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 99)), max_size=3)
        out.append(JobOutcome(job=job, start=start, end=start + draw(st.integers(0, 30)) * S,
                              hosts=draw(st.sampled_from([tuple(held), IndexSet.of(held)])),
                              status=status, yielded=tuple(draw(events)),
                              lent=tuple(draw(events)), borrowed=tuple(draw(events)),
                              shrinks=draw(st.integers(0, 3)), expands=draw(st.integers(0, 3)),
                              pes_start=draw(st.integers(0, 12)),
                              pe_ticks=draw(st.integers(0, 2**70)),
                              power=draw(st.sampled_from(POWER)),
                              energy_j=draw(st.floats(0, 1e9))))
    return out


@settings(max_examples=200, deadline=None)
@given(outcomes())
def test_the_columns_are_what_each_outcome_says(outs):
    cols = OutcomeColumns.of(outs)
    ordered = sorted(outs, key=lambda o: o.job.id)
    assert list(cols.outcomes) == ordered and list(cols.jobs) == [o.job for o in ordered]
    assert len(cols) == len(outs)
    for name in ("id", "submit", "walltime", "runtime", "pes"):
        assert getattr(cols, name).tolist() == [getattr(o.job, name) for o in ordered], name
    assert cols.job_hosts.tolist() == [o.job.hosts for o in ordered]
    assert cols.hosts.tolist() == [len(o.hosts) for o in ordered]
    for name in ("start", "end"):
        values = [getattr(o, name) for o in ordered]
        assert getattr(cols, f"has_{name}").tolist() == [v is not None for v in values]
        assert getattr(cols, name).tolist() == [v or 0 for v in values]
    assert cols.status == tuple(o.status for o in ordered)
    assert cols.ran.tolist() == [o.status in ("completed", "killed") for o in ordered]
    assert cols.host_text == [host_ranges(o.hosts) for o in ordered]
    for name in ("shrinks", "expands", "energy_j"):
        assert getattr(cols, name).tolist() == [getattr(o, name) for o in ordered], name
    for name, attr in (("yields", "yielded"), ("lends", "lent"), ("borrows", "borrowed")):
        assert getattr(cols, name).tolist() == [len(getattr(o, attr)) for o in ordered], name
    assert cols.pes_start.tolist() == [o.pes_start or o.job.pes for o in ordered]
    assert cols.pe_ticks.tolist() == [float(o.pe_ticks) for o in ordered]
    for a in (cols.id, cols.start, cols.hosts):
        assert a.dtype == np.int64


@settings(max_examples=100, deadline=None)
@given(outcomes())
def test_the_jobs_table_says_what_each_outcome_says(outs):
    """The ``jobs`` table's event counts, PEs at start, PE-time and energy, row by row."""
    t = _jobs_table(OutcomeColumns.of(outs), "SS", {})
    ordered = sorted(outs, key=lambda o: o.job.id)
    ran = [o.status in ("completed", "killed") for o in ordered]
    assert t["id"].tolist() == [o.job.id for o in ordered]
    for name, attr in (("yields", "yielded"), ("lends", "lent"), ("borrows", "borrowed")):
        assert t[name].tolist() == [len(getattr(o, attr)) for o in ordered], name
    for name in ("shrinks", "expands", "energy_j"):
        assert t[name].tolist() == [getattr(o, name) for o in ordered], name
    assert t["pes_start"].tolist() == [(o.pes_start or o.job.pes) if r else 0
                                       for o, r in zip(ordered, ran, strict=True)]
    assert t["pe_seconds"].tolist() == [float(o.pe_ticks) / S for o in ordered]
    assert [None if np.isnan(v) else v for v in t["value"].tolist()] == [
        None if o.job.value is None else earned(o) for o in ordered]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 2**31), st.integers(0, 2**62)), max_size=8))
def test_pe_ticks_are_rounded_once_from_the_exact_product(pairs):
    """The replay's PE-times (`_pe_ticks`) are what `float` makes of the exact products,
    products beyond int64 included."""
    pes = np.array([p for p, _ in pairs], dtype=np.int64)
    run = np.array([r for _, r in pairs], dtype=np.int64)
    got = _pe_ticks(pes, run)
    assert got.dtype == np.float64
    assert got.tolist() == [float(p * r) for p, r in pairs]


def column_values(cols: OutcomeColumns) -> dict:
    """Every field of `cols` as plain values (arrays as lists, with their types), and its
    host lists as text."""
    out = {f.name: getattr(cols, f.name) for f in dataclasses.fields(cols) if f.name != "texts"}
    types = {k: v.dtype.str for k, v in out.items() if isinstance(v, np.ndarray)}
    out = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in out.items()}
    return out | {"host_text": cols.host_text, "types": types}


@settings(max_examples=100, deadline=None)
@given(outcomes(), st.data())
def test_columns_joined_are_the_columns_of_all(outs, data):
    """Two runs' columns joined (the replay's, and the jobs rejected at reading) are those of
    all their outcomes, by job id, whichever part each outcome is in."""
    part = data.draw(st.lists(st.booleans(), min_size=len(outs), max_size=len(outs)))
    a = [o for o, p in zip(outs, part, strict=True) if p]
    b = [o for o, p in zip(outs, part, strict=True) if not p]
    whole = column_values(OutcomeColumns.of(outs))
    assert column_values(OutcomeColumns.of(a).joined(OutcomeColumns.of(b))) == whole
    assert column_values(OutcomeColumns.of(b).joined(OutcomeColumns.of(a))) == whole


@settings(max_examples=100, deadline=None)
@given(outcomes())
def test_the_metrics_read_from_the_columns_are_those_of_the_outcomes(outs):
    outs = sorted(outs, key=lambda o: o.job.id)  # as a simulation gives them
    assert summary(outs, 64, columns=OutcomeColumns.of(outs)) == summary(outs, 64)
    ran = [o for o in outs if o.status in ("completed", "killed")]
    if len({o.job.id for o in ran}) > 1:  # in another order they are refused, not misread
        with pytest.raises(ValueError, match="job id order"):
            summary(outs[::-1], 64, columns=OutcomeColumns.of(outs))


@settings(max_examples=100, deadline=None)
@given(outcomes())
def test_the_writers_read_the_same_columns_from_any_order(outs):
    """The columns are made from the outcomes as given, in any order: the files are the
    same (the file writers sort by id, or by (submit, id) for SWF)."""
    cols, back = OutcomeColumns.of(outs), OutcomeColumns.of(outs[::-1])
    assert "".join(_rows(cols)) == "".join(_rows(back))
    assert _batsim_text(cols, "w") == _batsim_text(back, "w")
    assert _jobs_table(cols, "SS", {}).tobytes() == _jobs_table(back, "SS", {}).tobytes()


@settings(max_examples=150, deadline=None)
@given(outcomes())
def test_the_rows_say_what_each_outcome_says(outs):
    """jobs.csv and batsim_jobs.csv read back against each outcome, field by field (an
    oracle apart from the columns): times in exact seconds, blanks and -1 where a job has
    none, the hosts held (or asked for), the host list as ranges."""
    def sec(t, blank=""):
        return blank if t is None else format_ticks(t)

    cols = OutcomeColumns.of(outs)
    ordered = sorted(outs, key=lambda o: o.job.id)
    rows = list(csv.reader(io.StringIO("".join(_rows(cols)))))[1:]
    batsim = list(csv.reader(io.StringIO(_batsim_text(cols, "w"))))
    assert len(rows) == len(batsim) == len(ordered)
    for o, row, b in zip(ordered, rows, batsim, strict=True):
        j = o.job
        wait = None if o.start is None else o.start - j.submit
        assert row[:13] == [str(j.id), sec(j.submit), sec(o.start), sec(o.end),
                            str(len(o.hosts) or j.hosts), str(j.pes), o.status, sec(wait),
                            sec(j.walltime), sec(j.runtime), j.category, j.app,
                            host_ranges(o.hosts)]
        done = o.status != "rejected" and o.start is not None and o.end is not None
        run = o.end - o.start if done else None
        turn = o.end - j.submit if done else None
        assert b[:6] == [str(j.id), "w", j.category or j.app, sec(j.submit), str(j.hosts),
                         sec(j.walltime)]
        assert b[6] == ("1" if done and o.status == "completed" else "0")
        assert b[8:13] == [sec(o.start if done else None, "-1"), sec(run, "-1"),
                           sec(o.end if done else None, "-1"), sec(wait if done else None, "-1"),
                           sec(turn, "-1")]
        assert b[14] == (host_ranges(o.hosts) if done else "")
        assert b[7] == ({"completed": "COMPLETED_SUCCESSFULLY",
                         "killed": "COMPLETED_WALLTIME_REACHED"}[o.status] if done else
                        "REJECTED")
        assert row[13:16] == [" ".join(f"{h}@{sec(t)}" for h, t in o.yielded),
                              " ".join(f"{h}@{sec(t)}" for h, t in o.lent),
                              " ".join(f"{h}@{x}" for h, x in o.borrowed)]
        assert row[16:20] == [j.kind, str(o.shrinks), str(o.expands), sec(o.pe_ticks)]
        assert row[20] == ("" if j.value is None else repr(earned(o)))
        assert row[21:] == ([repr(o.energy_j),
                             " ".join(f"{mw / 1000:g}@{sec(t)}" for t, mw in o.power)]
                            if o.power else ["", ""])


def test_values_beyond_64_bits_are_named(tmp_path):
    """Ticks past 292 years (no reader makes them): one clear error, and no file."""
    j = Job(id=2, submit=0, hosts=1, pes=1, walltime=2**63, runtime=1)
    outs = [JobOutcome(job=j, start=None, end=None, hosts=(), status="rejected")]
    with pytest.raises(ValueError, match=r"^job 2: walltime 9223372036854775808 does not fit"):
        OutcomeColumns.of(outs)
    with pytest.raises(ValueError, match="job 2: walltime"):
        write_jobs_csv(tmp_path / "j.csv", outs)
    assert list(tmp_path.iterdir()) == []


def test_the_schedule_counts_cores_exactly(tmp_path):
    """Hosts x cores in Python integers: a huge core count does not wrap."""
    o = JobOutcome(job=Job(id=1, submit=0, hosts=4, pes=4, walltime=S, runtime=S), start=0,
                   end=S, hosts=(0, 1, 2, 3), status="completed")
    write_swf(tmp_path / "s.swf", [o], cores_per_host=2**62)
    row = [line for line in (tmp_path / "s.swf").read_text().splitlines()
           if not line.startswith(";")][0].split()
    assert row[4] == str(2**64)
    write_swf(tmp_path / "t.swf", [o], cores_per_host=[2**62, 1, 2**62, 3])
    row = [line for line in (tmp_path / "t.swf").read_text().splitlines()
           if not line.startswith(";")][0].split()
    assert row[4] == str(2**63 + 4)


def _job(i, submit):
    return Job(id=i, submit=submit * S, hosts=1, pes=1, walltime=S, runtime=S)


@pytest.mark.parametrize("bad, message", [
    (JobOutcome(job=_job(3, 0), start=None, end=None, hosts=(0,), status="lost"),
     "job 3: unknown outcome status 'lost'"),
    (JobOutcome(job=_job(3, 0), start=None, end=S, hosts=(0,), status="completed"),
     f"job 3: inconsistent times submit=0 start=None end={S}"),
    (JobOutcome(job=_job(3, 5), start=4 * S, end=6 * S, hosts=(0,), status="killed"),
     f"job 3: inconsistent times submit={5 * S} start={4 * S} end={6 * S}"),
    (JobOutcome(job=_job(3, 0), start=2 * S, end=S, hosts=(0,), status="completed"),
     f"job 3: inconsistent times submit=0 start={2 * S} end={S}"),
])
def test_the_schedule_names_the_first_bad_outcome_in_its_order(tmp_path, bad, message):
    good = [JobOutcome(job=_job(i, 1), start=S, end=2 * S, hosts=(0,), status="completed")
            for i in (1, 2)]
    # a later arrival with a bad status (job 9, submitted at 7) is not the one named
    later = JobOutcome(job=_job(9, 7), start=None, end=None, hosts=(), status="unknown")
    with pytest.raises(ValueError) as exc:
        write_swf(tmp_path / "s.swf", [later, good[0], bad, good[1]])
    assert str(exc.value) == message
    assert not (tmp_path / "s.swf").exists()
    # rejected and dropped jobs have no times to check
    fine = [JobOutcome(job=_job(4, 0), start=None, end=None, hosts=(), status="rejected"),
            JobOutcome(job=_job(5, 0), start=None, end=3 * S, hosts=(), status="dropped")]
    write_swf(tmp_path / "ok.swf", good + fine)
    rows = [line.split() for line in (tmp_path / "ok.swf").read_text().splitlines()
            if not line.startswith(";")]
    assert [(r[0], r[2], r[3], r[4], r[10]) for r in rows] == [
        ("4", "-1", "-1", "-1", "5"), ("5", "-1", "-1", "-1", "5"),
        ("1", "0", "1", "1", "1"), ("2", "0", "1", "1", "1")]
