"""Tests of the SWF reader and writers: shipped logs, conversion rules, bad input, round trips."""

from __future__ import annotations

import dataclasses
import gzip
import os
import re
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from cosim.paths import TRACES_DIR
from cosim.workload.jobs import Job, JobOutcome
from cosim.workload.swf import (
    FIELD_NAMES, SwfReader, header_values, iter_swf_records, parse_cosim_app, read_swf,
)
from cosim.workload.swf_write import format_ticks, format_value, write_jobs_swf, write_swf

S = 1_000_000_000  # ticks per second

# --------------------------------------------------------------------------- helpers


def line(*fields: object, **by_name: object) -> str:
    """An SWF job line: 18 fields, -1 by default; positional fields start at field 1."""
    f = ["-1"] * 18
    for i, v in enumerate(fields):
        f[i] = str(v)
    names = {"job": 0, "submit": 1, "wait": 2, "run": 3, "alloc": 4, "req_procs": 7,
             "req_time": 8, "status": 10, "user": 11, "group": 12, "exe": 13, "queue": 14,
             "partition": 15, "req_mem": 9}
    for k, v in by_name.items():
        f[names[k]] = str(v)
    return " ".join(f)


def swf_file(tmp_path, *lines: str, name: str = "t.swf") -> str:
    path = tmp_path / name
    path.write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
    return str(path)


def job_line(job: int, submit: object = 0, run: object = 10, procs: object = 1, **kw) -> str:
    return line(job, submit, run=run, req_procs=procs, **kw)


# --------------------------------------------------------------------------- shipped logs

LOGS = {
    # file: (job lines, kept, skipped_runtime, skipped_cancelled, skipped_procs, MaxNodes)
    "lublin_256.swf.gz": (10_000, 10_000, 0, 0, 0, 256),
    "KTH-SP2-1996-2.1-cln.swf.gz": (28_476, 28_475, 0, 0, 1, 100),  # 8 of run time 0 run
    "NASA-iPSC-1993-3.1-cln.swf.gz": (18_239, 18_239, 0, 0, 0, 128),  # 173 of run time 0
    "HPC2N-sample-3171jobs_from-alea.swf.gz": (3_170, 3_145, 25, 0, 0, 240),
}


@pytest.fixture(scope="module")
def logs():
    return {name: read_swf(TRACES_DIR / name) for name in LOGS}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_shipped_logs_counts(logs, name):
    w = logs[name]
    lines, kept, s_run, s_cancel, s_procs, nodes = LOGS[name]
    assert (w.read, len(w.jobs), w.skipped_runtime, w.skipped_cancelled, w.skipped_procs,
            w.rejected_too_big, w.bad_lines) == (lines, kept, s_run, s_cancel, s_procs, 0, 0)
    assert w.read == (len(w.jobs) + w.rejected_too_big + w.skipped_runtime
                      + w.skipped_cancelled + w.skipped_procs)
    assert int(header_values(w.header, "MaxNodes")[0]) == nodes
    # Every job line is one record; MaxRecords counts them, except in the HPC2N excerpt.
    records = int(header_values(w.header, "MaxRecords")[0])
    if name.startswith("HPC2N"):
        assert records == 527_371
    elif name.startswith("NASA"):
        assert records == lines + 24_025          # "(24025 jobs removed)" by the cleaning
    else:
        assert records == lines
    assert max(j.pes for j in w.jobs) <= nodes
    assert [(j.submit, j.id) for j in w.jobs] == sorted((j.submit, j.id) for j in w.jobs)
    assert len({j.id for j in w.jobs}) == len(w.jobs)
    assert all(j.app == "rigid" and j.runtime >= 0 and j.hosts == j.pes for j in w.jobs)
    zero = {"KTH-SP2-1996-2.1-cln.swf.gz": 8, "NASA-iPSC-1993-3.1-cln.swf.gz": 173}
    assert sum(j.runtime == 0 for j in w.jobs) == zero.get(name, 0)


def test_shipped_log_details(logs):
    kth = logs["KTH-SP2-1996-2.1-cln.swf.gz"]
    first = kth.jobs[0]
    # "15   599850 192180   3477    4     -1    -1    4  53940    -1  1  12  12 ..."
    assert (first.id, first.submit, first.runtime, first.pes, first.walltime, first.user,
            first.group) == (15, 599_850 * S, 3_477 * S, 4, 53_940 * S, 12, 12)
    assert first.swf[:5] == (15.0, 599850.0, 192180.0, 3477.0, 4.0)
    assert header_values(kth.header, "Information") == (
        "http://www.pdc.kth.se/\nhttp://www.cs.huji.ac.il/labs/parallel/workload/",)
    assert header_values(kth.header, "Note") == (
        "uses the EASY scheduler",
        ("THIS IS A CLEANED VERSION OF THE LOG!\nThe filter used to produce it was\n"
        "job<=14 (14 jobs removed)"))
    assert [k for k, _ in kth.header[:3]] == ["Version", "Computer", "Installation"]
    assert header_values(kth.header, "EndTime") == ("Fri Aug 29 10:55:01 CEST 1997",)
    nasa = logs["NASA-iPSC-1993-3.1-cln.swf.gz"]
    assert header_values(nasa.header, "Queue") == ("0  interactive", "1  batch")
    assert len(header_values(nasa.header, "Note")) == 4
    # NASA has no requested processors or time: allocated processors, walltime = run time.
    assert all(j.walltime == j.runtime and j.pes == int(j.swf[4]) for j in nasa.jobs)
    lublin = logs["lublin_256.swf.gz"]
    assert lublin.jobs[0].submit == 5094 * S        # absolute: the first job is not at 0
    assert header_values(lublin.header, "Version") == ("2",)


def test_gzip_and_plain_give_the_same(tmp_path):
    name = "HPC2N-sample-3171jobs_from-alea.swf.gz"
    plain = tmp_path / "hpc2n.swf"
    with gzip.open(TRACES_DIR / name, "rb") as src:
        plain.write_bytes(src.read())
    a = read_swf(TRACES_DIR / name)
    b = read_swf(plain)
    assert a.jobs == b.jobs and a.header == b.header and a.read == b.read == 3_170
    # Detection is by content: a gzip file without .gz and a plain file with .gz both work.
    shutil.copy(TRACES_DIR / name, tmp_path / "hpc2n.txt")
    (tmp_path / "plain.gz").write_bytes(plain.read_bytes())
    assert read_swf(tmp_path / "hpc2n.txt").jobs == a.jobs
    assert read_swf(tmp_path / "plain.gz").jobs == a.jobs


def test_records_stream_lazily():
    it = iter_swf_records(TRACES_DIR / "KTH-SP2-1996-2.1-cln.swf.gz")
    first = next(it)
    assert first.line == 25 and first.fields[0] == 15.0 and len(first.fields) == 18
    it.close()
    reader = SwfReader(TRACES_DIR / "lublin_256.swf.gz")
    assert sum(1 for _ in reader) == 10_000
    assert reader.header[0] == ("Version", "2") and reader.header_lines[0] == 1


# --------------------------------------------------------------------------- conversion rules


def test_procs_field_and_cores_per_host(tmp_path):
    path = swf_file(tmp_path,
                    line(1, 0, run=5, alloc=6, req_procs=4),
                    line(2, 0, run=5, alloc=9, req_procs=-1),     # requested unknown
                    line(3, 0, run=5, alloc=-1, req_procs=7),     # allocated unknown
                    line(4, 0, run=5, alloc=0, req_procs=0),      # neither: skipped
                    line(5, 0, run=5, alloc=-1, req_procs=-1))    # neither: skipped
    req = read_swf(path, cores_per_host=4)
    assert [(j.id, j.pes, j.hosts) for j in req.jobs] == [(1, 4, 1), (2, 9, 3), (3, 7, 2)]
    assert req.skipped_procs == 2 and req.procs_field == "requested"
    alloc = read_swf(path, cores_per_host=4, procs_field="allocated")
    assert [(j.id, j.pes, j.hosts) for j in alloc.jobs] == [(1, 6, 2), (2, 9, 3), (3, 7, 2)]
    one = read_swf(path)
    assert [j.hosts for j in one.jobs] == [4, 9, 7]
    with pytest.raises(InputError, match="field procs-field"):
        read_swf(path, procs_field="used")
    with pytest.raises(InputError, match="field cores-per-host"):
        read_swf(path, cores_per_host=0)


def test_walltime_fallback_times_and_fields(tmp_path):
    path = swf_file(tmp_path,
                    line(1, 0, run=100, req_procs=1, req_time=300, user=7, group=8, queue=2,
                         partition=3),
                    line(2, 1.5, run=100, req_procs=1, req_time=-1),
                    line(3, 2, run=100.25, req_procs=1, req_time=0),
                    line(4, 3, run=100, req_procs=1, req_time=60))   # under its run time: kept
    w = read_swf(path)
    j1, j2, j3, j4 = w.jobs
    assert (j1.walltime, j1.user, j1.group, j1.queue, j1.partition) == (300 * S, 7, 8, 2, 3)
    assert (j2.submit, j2.walltime) == (1_500_000_000, 100 * S)
    assert (j3.runtime, j3.walltime) == (100_250_000_000, 100_250_000_000)
    assert (j4.runtime, j4.walltime) == (100 * S, 60 * S)


def test_skips_and_cancelled(tmp_path):
    path = swf_file(tmp_path,
                    job_line(1, run=-1),
                    job_line(2, run=0),
                    line(3, 0, run=-1, req_procs=1, status=5),   # cancelled before start
                    line(4, 0, run=0, req_procs=1, status=5),
                    line(5, 0, run=30, req_procs=1, status=5),   # ran, then cancelled: kept
                    job_line(6, run=0.3))                        # short but positive: kept
    w = read_swf(path)  # run time 0 runs (AccaSim, textbook EASY); unknown (-1) is skipped
    assert (w.read, w.skipped_runtime, w.skipped_cancelled) == (6, 1, 2)
    assert [j.id for j in w.jobs] == [2, 5, 6]
    assert (w.jobs[0].runtime, w.jobs[0].walltime) == (0, 0)  # no request: its run time
    assert w.jobs[2].runtime == 300_000_000
    w = read_swf(path, skip_zero_runtime=True)  # the option: skipped, counted
    assert (w.read, w.skipped_runtime, w.skipped_cancelled) == (6, 2, 2)
    assert [j.id for j in w.jobs] == [5, 6]


def test_rejected_jobs_warn_and_count(tmp_path):
    lines = [job_line(i, submit=i, procs=8 if i % 2 else 2) for i in range(1, 31)]
    path = swf_file(tmp_path, *lines)
    warnings: list[str] = []
    w = read_swf(path, cores_per_host=2, max_hosts=3, warn=warnings.append)
    assert w.rejected_too_big == 15 == len(w.rejected)
    assert len(w.jobs) == 15 and all(j.hosts == 1 for j in w.jobs)
    assert all(j.hosts == 4 for j in w.rejected)
    assert len(warnings) == 11
    assert warnings[0] == (f"{path}:1: job 1 needs 4 hosts (8 processors), the platform has 3: "
                           "rejected")
    assert warnings[-1] == f"{path}: 15 jobs rejected in all (larger than 3 hosts)"
    assert read_swf(path, cores_per_host=2).rejected_too_big == 0   # no max_hosts: no limit


def test_sorted_by_submit_then_id(tmp_path):
    path = swf_file(tmp_path, job_line(5, submit=10), job_line(3, submit=10),
                    job_line(9, submit=2), job_line(1, submit=10))
    assert [j.id for j in read_swf(path).jobs] == [9, 1, 3, 5]


def test_header_parsing(tmp_path):
    path = swf_file(tmp_path,
                    "; Version: 2.2", ";Computer:Foo", "; Note: first", ";      second line",
                    ";", ";    orphan text", "; Note: again",
                    ";  Information: http://a.b/", ";     http://c.d/",
                    "  ; MaxNodes: 4   ", job_line(1), "; Trailing: comment")
    r = read_swf(path)
    assert r.header == (("Version", "2.2"), ("Computer", "Foo"), ("Note", "first\nsecond line"),
                        ("", "orphan text"), ("Note", "again"),
                        ("Information", "http://a.b/\nhttp://c.d/"), ("MaxNodes", "4"),
                        ("Trailing", "comment"))
    assert header_values(r.header, "Note") == ("first\nsecond line", "again")
    assert header_values(r.header, "Missing") == ()


def test_cosim_app_comments(tmp_path):
    path = swf_file(tmp_path,
                    "; CosimApp: 3 category=C app=psia priority=1 total_flop=1.5e+12 seed=7",
                    "; CosimApp: 4 app=mandelbrot",
                    job_line(1, exe=3), job_line(2, exe=4), job_line(3, exe=5), job_line(4))
    j1, j2, j3, j4 = read_swf(path).jobs
    assert (j1.category, j1.app, j1.priority, dict(j1.app_params)) == (
        "C", "psia", 1, {"total_flop": "1.5e+12", "seed": "7"})
    assert (j2.category, j2.app, j2.priority, dict(j2.app_params)) == ("", "mandelbrot", 0, {})
    assert j3.app == j4.app == "rigid" and j3.category == ""
    assert parse_cosim_app("7 category=Z")[0] == 7


@pytest.mark.parametrize("value, problem", [
    ("x category=C", "expected 'EXECUTABLE_NUMBER key=value ...', got 'x category=C'"),
    ("3 category", "expected key=value, got 'category'"),
    ("3 app=quake", "unknown app 'quake' (known: mandelbrot, profile, psia, rigid)"),
    ("3 priority=high", "priority must be an integer, got 'high'"),
    ("3 a=1 a=2", "key 'a' given twice"),
])
def test_bad_cosim_app(tmp_path, value, problem):
    path = swf_file(tmp_path, "; Version: 2.2", f"; CosimApp: {value}", job_line(1))
    with pytest.raises(InputError) as exc:
        read_swf(path)
    assert str(exc.value) == f"{path}:2: field CosimApp: {problem}"


def test_cosim_app_twice(tmp_path):
    path = swf_file(tmp_path, "; CosimApp: 3 app=psia", "; CosimApp: 3 app=mandelbrot",
                    job_line(1))
    with pytest.raises(InputError, match=r":2: field CosimApp: executable number 3 described"):
        read_swf(path)


# --------------------------------------------------------------------------- bad input


BAD_LINES = [
    ("1 0 -1 10 1 -1 -1 1 -1 -1 1 -1 -1 -1 -1 -1 -1",
     "field 18 (think time): missing (the line has 17 fields, SWF has 18)"),
    (line(1, 0, run=10) + " 7",
     "field 19: unexpected extra field '7' (the line has 19 fields, SWF has 18)"),
    (line(1, 0, run="x"), "field 4 (run time): not a number 'x'"),
    (line(1, 0, run="nan"), "field 4 (run time): not a number 'nan'"),
    (line(1, "inf", run=3), "field 2 (submit time): not a number 'inf'"),
    (line(1, 0, run="1_0"), "field 4 (run time): not a number '1_0'"),
    (line(1, 0, run="\uff11"), "field 4 (run time): not a number '\uff11'"),  # fullwidth 1
    (line(1, 0, run=10, wait=-2),
     "field 3 (wait time): negative value -2 (only -1, unknown, may be negative)"),
    (line(1, 0, run=10, wait=-0.5),
     "field 3 (wait time): negative value -0.5 (only -1, unknown, may be negative)"),
    (line(1, -1, run=10), "field 2 (submit time): must be known (>= 0), got -1"),
    (line(-1, 0, run=10), "field 1 (job number): must be known (>= 0), got -1"),
    (line(1, 0, run=10, alloc=2.5), "field 5 (allocated processors): not an integer '2.5'"),
    (line(1, 0, run=10, status=7), "field 11 (status): unknown status 7 (SWF has -1 and 0..5)"),
    (line(1, 0, run=1e10),
     "field 4 (run time): value 10000000000.0 is too large (more than 9e+09)"),
]


@pytest.mark.parametrize("bad, message", BAD_LINES)
def test_bad_line_message(tmp_path, bad, message):
    path = swf_file(tmp_path, "; Version: 2.2", job_line(100), bad)
    with pytest.raises(InputError) as exc:
        read_swf(path)
    assert str(exc.value) == f"{path}:3: {message}"


def test_field_names_match_spec():
    assert len(FIELD_NAMES) == 18
    assert FIELD_NAMES[3] == "run time" and FIELD_NAMES[13] == "executable number"


def test_duplicate_job_number(tmp_path):
    path = swf_file(tmp_path, job_line(1), job_line(2), job_line(1, submit=5))
    with pytest.raises(InputError) as exc:
        read_swf(path)
    assert str(exc.value) == (f"{path}:3: field 1 (job number): duplicate job number 1 "
                              "(first on line 1)")


def test_lenient_skips_and_counts(tmp_path):
    lines = [job_line(1), line(2, 0, run="x"), job_line(1), job_line(3),
             "1 2 3", job_line(4, run=-1)]
    lines += [line(10 + i, 0, run="?") for i in range(12)]
    path = swf_file(tmp_path, *lines)
    warnings: list[str] = []
    w = read_swf(path, lenient=True, warn=warnings.append)
    assert w.bad_lines == 3 + 12 and w.read == 3 and [j.id for j in w.jobs] == [1, 3]
    assert w.skipped_runtime == 1
    assert warnings[0] == f"{path}:2: field 4 (run time): not a number 'x' (line skipped)"
    assert warnings[1].startswith(f"{path}:3: field 1 (job number): duplicate job number 1")
    assert len(warnings) == 11 and warnings[-1] == f"{path}: 15 bad lines skipped in all"
    with pytest.raises(InputError):
        read_swf(path)


def test_missing_unreadable_and_corrupt_files(tmp_path):
    missing = tmp_path / "nope.swf"
    with pytest.raises(InputError) as exc:
        read_swf(missing)
    assert str(exc.value) == f"{missing}: no such file"
    with pytest.raises(InputError) as exc:
        read_swf(tmp_path)
    assert str(exc.value) == f"{tmp_path}: is a directory, not an SWF file"
    bad = tmp_path / "bad.swf.gz"
    bad.write_bytes(b"\x1f\x8b" + b"this is not deflate data" * 4)
    with pytest.raises(InputError, match=rf"^{re.escape(str(bad))}: corrupt or truncated gzip"):
        read_swf(bad)
    whole = gzip.compress(("".join(job_line(i) + "\n" for i in range(1, 2000))).encode())
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError, match=rf"^{re.escape(str(cut))}: corrupt or truncated gzip"):
        read_swf(cut)
    if os.geteuid() != 0:                      # root reads anything
        locked = tmp_path / "locked.swf"
        locked.write_text(job_line(1) + "\n")
        locked.chmod(0)
        with pytest.raises(InputError, match=r"cannot read"):
            read_swf(locked)


# --------------------------------------------------------------------------- writers


def test_format_helpers():
    assert format_ticks(0) == "0"
    assert format_ticks(12 * S) == "12"
    assert format_ticks(1_500_000_000) == "1.5"
    assert format_ticks(1_097_618_750_001) == "1097.618750001"
    assert format_ticks(-2_500_000_000) == "-2.5"
    assert format_value(-1.0) == "-1" and format_value(2.25) == "2.25"
    assert format_value(1e20) == "100000000000000000000"


@pytest.mark.parametrize("name, procs_field", [
    *((name, "requested") for name in sorted(LOGS)),
    # The logs where fields 5 and 8 differ, on 3-core hosts.
    ("KTH-SP2-1996-2.1-cln.swf.gz", "allocated"),
    ("HPC2N-sample-3171jobs_from-alea.swf.gz", "allocated"),
])
def test_round_trip_shipped_logs(logs, tmp_path, name, procs_field):
    w = logs[name] if procs_field == "requested" else read_swf(
        TRACES_DIR / name, procs_field=procs_field, cores_per_host=3)
    out = tmp_path / "rt.swf"
    write_jobs_swf(out, w.jobs, header=w.header)
    back = read_swf(out, procs_field=procs_field, cores_per_host=w.cores_per_host)
    assert back.jobs == w.jobs
    assert back.skipped_runtime == back.skipped_procs == 0
    assert header_values(back.header, "MaxJobs") == (str(len(w.jobs)),)
    assert header_values(back.header, "Version") == ("2.2",)
    # The header keeps its order and content apart from the writer's keys; it is a fixed point.
    mine = {"Version", "MaxJobs", "MaxRecords"}
    assert [p for p in back.header if p[0] not in mine] == [p for p in w.header
                                                            if p[0] not in mine]
    write_jobs_swf(tmp_path / "rt2.swf", back.jobs, header=back.header)
    assert (tmp_path / "rt2.swf").read_bytes() == out.read_bytes()


def test_writer_uses_job_values_when_changed(tmp_path):
    path = swf_file(tmp_path, line(1, 0.123456789012, run=10, alloc=6, req_procs=4,
                                   req_time=-1, exe=77, status=0))
    (job,) = read_swf(path).jobs
    changed = dataclasses.replace(job, submit=5 * S, runtime=7 * S, pes=3, walltime=9 * S)
    write_jobs_swf(tmp_path / "out.swf", [job, dataclasses.replace(changed, id=2)])
    text = (tmp_path / "out.swf").read_text().splitlines()
    jobs = [ln for ln in text if not ln.startswith(";")]
    assert jobs[0] == "1 0.123456789012 -1 10 6 -1 -1 4 -1 -1 0 -1 -1 77 -1 -1 -1 -1"
    assert jobs[1] == "2 5 -1 7 6 -1 -1 3 9 -1 0 -1 -1 77 -1 -1 -1 -1"


def test_app_info_numbering_avoids_raw_executables(tmp_path):
    plain = Job(id=1, submit=0, hosts=1, pes=1, walltime=S, runtime=S,
                swf=(1, 0, -1, 1, 1, -1, -1, 1, -1, -1, 1, -1, -1, 5, -1, -1, -1, -1))
    a = Job(id=2, submit=0, hosts=2, pes=2, walltime=S, runtime=S, app="psia",
            app_params={"total_flop": "1e9"}, category="B")
    b = dataclasses.replace(a, id=3, category="A", priority=1)
    out = tmp_path / "apps.swf"
    write_jobs_swf(out, [b, a, plain])
    text = out.read_text()
    assert "; CosimApp: 6 category=A app=psia priority=1 total_flop=1e9\n" in text
    assert "; CosimApp: 7 category=B app=psia priority=0 total_flop=1e9\n" in text
    back = read_swf(out)
    assert [dataclasses.replace(j, swf=None) for j in back.jobs] == [
        dataclasses.replace(plain, swf=None), a, b]
    assert [j.swf[13] for j in back.jobs] == [5, 7, 6]
    with pytest.raises(ValueError, match="cannot travel"):
        write_jobs_swf(out, [dataclasses.replace(a, app_params={"k": "a b"})])


def test_write_schedule(tmp_path):
    base = read_swf(swf_file(tmp_path, line(1, 10, run=50, alloc=4, req_procs=3, req_time=100,
                                            req_mem=512, user=4, status=1, exe=2))).jobs[0]
    j2 = Job(id=2, submit=20 * S, hosts=2, pes=2, walltime=30 * S, runtime=40 * S)
    j3 = Job(id=3, submit=5 * S, hosts=9, pes=9, walltime=S, runtime=S, app="psia",
             category="Q", app_params={"total_flop": "9e9"})
    outs = [
        JobOutcome(job=j2, start=25 * S, end=55 * S, hosts=(0, 1), status="killed"),
        JobOutcome(job=base, start=12_500_000_000, end=62_500_000_000, hosts=(2,),
                   status="completed"),
        JobOutcome(job=j3, start=None, end=None, hosts=(), status="rejected"),
    ]
    out = tmp_path / "sched.swf"
    write_swf(out, outs, header=[("Computer", "IBM SP2"), ("Note", "from KTH"),
                                 ("MaxNodes", "4"), ("MaxProcs", "16")], cores_per_host=4)
    text = out.read_text().splitlines()
    head = [ln for ln in text if ln.startswith(";")]
    assert head[:4] == ["; Version: 2.2", "; Computer: cosim", "; Note: from KTH",
                        "; MaxNodes: 4"]
    assert "; MaxJobs: 3" in head and "; MaxRecords: 3" in head
    assert any(ln.startswith("; Note: simulated schedule written by cosim") for ln in head)
    assert "; CosimApp: 3 category=Q app=psia priority=0 total_flop=9e9" in head
    rows = [ln for ln in text if not ln.startswith(";")]
    assert rows == [
        "3 5 -1 -1 -1 -1 -1 9 1 -1 5 -1 -1 3 -1 -1 -1 -1",
        "1 10 2.5 50 4 -1 -1 3 100 512 1 4 -1 2 -1 -1 -1 -1",
        "2 20 5 30 8 -1 -1 2 30 -1 0 -1 -1 -1 -1 -1 -1 -1",
    ]
    back = read_swf(out, cores_per_host=4)
    assert back.skipped_cancelled == 1 and [j.id for j in back.jobs] == [1, 2]
    assert back.jobs[1].runtime == 30 * S          # killed at its walltime


def test_atomic_gzip_output_is_deterministic(tmp_path):
    w = read_swf(TRACES_DIR / "lublin_256.swf.gz")
    a, b = tmp_path / "a.swf.gz", tmp_path / "b.swf.gz"
    write_jobs_swf(a, w.jobs[:50], header=w.header)
    write_jobs_swf(b, w.jobs[:50], header=w.header)
    assert a.read_bytes() == b.read_bytes() and a.read_bytes()[:2] == b"\x1f\x8b"
    assert read_swf(a).jobs == w.jobs[:50]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.swf.gz", "b.swf.gz"]  # no temp
    assert oct(a.stat().st_mode & 0o777) == oct(0o644)
    # missing directories are created; a path that cannot be a directory is an InputError
    write_jobs_swf(tmp_path / "new" / "dir.swf", w.jobs[:1])
    assert read_swf(tmp_path / "new" / "dir.swf").jobs == w.jobs[:1]
    (tmp_path / "plain").write_text("x")
    with pytest.raises(InputError, match="cannot write"):
        write_jobs_swf(tmp_path / "plain" / "dir.swf", w.jobs[:1])


# --------------------------------------------------------------------------- property


def _app_params(app):
    """Parameters a CosimApp line may carry for `app` (checked when read): any text for rigid
    jobs; a positive total_flop and a real key of the model for the others."""
    if app == "rigid":
        return st.dictionaries(st.sampled_from(["total_flop", "w"]),
                               st.from_regex(r"[0-9a-z.+]{1,8}", fullmatch=True), max_size=2)
    key = "seed" if app == "psia" else "max_iter"
    return st.fixed_dictionaries({}, optional={
        "total_flop": st.sampled_from(["1", "1.5e+12", "250000", "7e3"]),
        key: st.integers(1, 10**6).map(str)})


@st.composite
def jobs(draw):
    n = draw(st.integers(1, 12))
    ids = draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n, unique=True))
    out = []
    for i in ids:
        run = draw(st.integers(1, 10**13))
        app = draw(st.sampled_from(["rigid", "psia", "mandelbrot"]))
        out.append(Job(
            id=i, submit=draw(st.integers(0, 10**16)), hosts=1, pes=1,
            walltime=draw(st.one_of(st.just(run), st.integers(1, 10**13))), runtime=run,
            app=app, category=draw(st.sampled_from(["", "A", "Z"])),
            priority=draw(st.integers(0, 2)), exclusion_ok=draw(st.booleans()),
            app_params=draw(_app_params(app)),
            user=draw(st.integers(-1, 50)), queue=draw(st.integers(-1, 3)),
        ))
    return out


@settings(max_examples=60, deadline=None)
@given(jobs=jobs(), cores=st.integers(1, 4))
def test_round_trip_random_jobs(tmp_path_factory, jobs, cores):
    pes = [dataclasses.replace(j, pes=j.id % 7 + 1, hosts=-(-(j.id % 7 + 1) // cores))
           for j in jobs]
    out = tmp_path_factory.mktemp("rt") / "j.swf"
    write_jobs_swf(out, pes)
    first = read_swf(out, cores_per_host=cores)
    assert [dataclasses.replace(j, swf=None) for j in first.jobs] == sorted(
        pes, key=lambda j: (j.submit, j.id))
    write_jobs_swf(out, first.jobs, header=first.header)
    assert read_swf(out, cores_per_host=cores).jobs == first.jobs


# --------------------------------------------------------------------------- kinds and bounds

from cosim.workload.runtime_models import IDEAL, RuntimeModel  # noqa: E402


def test_cosim_app_kind_bounds_and_model(tmp_path):
    path = swf_file(
        tmp_path,
        "; CosimApp: 3 kind=moldable min_pes=2 max_pes=8 x=y",
        "; CosimApp: 4 kind=malleable min_frac=0.14 max_frac=1.5 model=amdahl f=0.1 "
        "balance=static reconf=equi-5s reconf_pe_s=0.01",
        "; CosimApp: 5 kind=evolving model=table table=1:100,2:52,4:27.5",
        "; CosimApp: 6 kind=rigid model=worst reconf_s=2",
        "; CosimApp: 7 kind=malleable",
        "; CosimApp: 8 kind=malleable min_frac=0.5 max_frac=0.5",
        job_line(1, exe=3, procs=4), job_line(2, exe=4, procs=50), job_line(3, exe=4, procs=1),
        job_line(4, exe=5, procs=6), job_line(5, exe=6, procs=6), job_line(6, exe=7, procs=5),
        job_line(7, exe=8, procs=3), job_line(8, procs=2))
    j = {job.id: job for job in read_swf(path).jobs}
    bounds = {i: (j[i].kind, j[i].min_pes, j[i].max_pes) for i in j}
    assert bounds == {
        1: ("moldable", 2, 8),
        2: ("malleable", 7, 75),      # ceil(0.14 x 50) exactly 7 (a float product gives 8)
        3: ("malleable", 1, 1),       # ceil(0.14) = 1, floor(1.5) = 1
        4: ("evolving", 6, 6), 5: ("rigid", 6, 6),
        6: ("malleable", 5, 5),       # no bounds given: its own PEs
        7: ("malleable", 2, 2),       # ceil(1.5) = 2, floor(1.5) = 1 raised to the minimum
        8: ("rigid", 2, 2),
    }
    assert dict(j[1].app_params) == {"x": "y"} and all(
        not j[i].app_params for i in range(2, 9))
    assert j[2].model == RuntimeModel(name="amdahl", f=0.1, balance="static", reconf_s=5.0,
                                      reconf_pe_s=0.01)
    assert j[4].model == RuntimeModel(name="table", table=((1, 100.0), (2, 52.0), (4, 27.5)))
    assert j[5].model == RuntimeModel(name="worst", reconf_s=2.0)
    assert j[1].model is IDEAL and j[8].model is IDEAL and j[1].resizable is False
    assert j[2].resizable
    exe, info = parse_cosim_app("9 kind=moldable min_frac=.25 max_pes=4")
    assert (exe, info.kind, info.min_frac, info.max_pes, info.params) == (
        9, "moldable", 0.25, 4, ())


@pytest.mark.parametrize("value, field, problem", [
    ("3 kind=elastic", "kind",
     "unknown kind 'elastic' (known: evolving, malleable, moldable, rigid)"),
    ("3 min_pes=2", "min_pes", "kind rigid has no PE bounds (such a job runs on exactly its "
                               "PEs); give kind=moldable or kind=malleable"),
    ("3 kind=evolving max_frac=2", "max_frac", "kind evolving has no PE bounds (such a job "
     "runs on exactly its PEs); give kind=moldable or kind=malleable"),
    ("3 kind=moldable min_pes=\u0663", "min_pes", "must be an integer >= 1, got '\u0663'"),
    ("3 kind=malleable min_pes=0", "min_pes", "must be an integer >= 1, got '0'"),
    ("3 kind=malleable max_pes=2.5", "max_pes", "must be an integer >= 1, got '2.5'"),
    ("3 kind=malleable min_frac=half", "min_frac", "must be a number in (0, 1], got 'half'"),
    ("3 kind=malleable min_frac=0", "min_frac", "must be a number in (0, 1], got '0'"),
    ("3 kind=malleable min_frac=1.01", "min_frac", "must be a number in (0, 1], got '1.01'"),
    ("3 kind=malleable min_frac=nan", "min_frac", "must be a number in (0, 1], got 'nan'"),
    ("3 kind=malleable max_frac=-1", "max_frac", "must be a number > 0, got '-1'"),
    ("3 kind=malleable max_frac=1e999", "max_frac", "must be a number > 0, got '1e999'"),
    ("3 kind=malleable min_pes=2 min_frac=0.5", "min_frac",
     "give min_pes or min_frac, not both"),
    ("3 kind=malleable max_pes=2 max_frac=0.5", "max_frac",
     "give max_pes or max_frac, not both"),
    ("3 kind=moldable min_pes=8 max_pes=4", "min_pes", "min_pes 8 > max_pes 4"),
    ("3 kind=moldable min_frac=0.8 max_frac=0.5", "min_frac", "min_frac 0.8 > max_frac 0.5"),
    ("3 model=fast", "model", "unknown runtime model 'fast' (known: amdahl, ideal, table, "
                              "worst)"),
    ("3 model=amdahl f=x", "f", "must be a number in [0, 1), got 'x'"),
    ("3 model=amdahl f=1", "f", "must be a number in [0, 1), got '1'"),
    ("3 f=0.1", "f", "the serial fraction f needs model=amdahl (model is ideal)"),
    ("3 model=amdahl balance=even", "balance", "must be dynamic or static, got 'even'"),
    ("3 model=worst balance=static", "balance",
     "balance needs model=amdahl or model=table (model is worst)"),
    ("3 model=table", "model", "model=table needs table=p:time,p:time,..."),
    ("3 model=table table=2:1,1:2", "table", "must be p:time pairs separated by commas, p "
     "integers >= 1 ascending and distinct, times > 0, got '2:1,1:2'"),
    ("3 model=table table=1-2", "table", "must be p:time pairs separated by commas, p "
     "integers >= 1 ascending and distinct, times > 0, got '1-2'"),
    ("3 table=1:2", "table", "a speedup table needs model=table (model is ideal)"),
    ("3 reconf_s=-1", "reconf_s", "must be a number >= 0 (seconds), got '-1'"),
    ("3 reconf_pe_s=inf", "reconf_pe_s", "must be a number >= 0 (seconds), got 'inf'"),
    ("3 reconf=slow", "reconf",
     "unknown reconfiguration preset 'slow' (known: equi-5s, kale-platinum, none)"),
    ("3 reconf=none reconf_s=1", "reconf", "give reconf or reconf_s, not both"),
])
def test_bad_cosim_app_marks(tmp_path, value, field, problem):
    path = swf_file(tmp_path, "; Version: 2.2", f"; CosimApp: {value}", job_line(1))
    with pytest.raises(InputError) as exc:
        read_swf(path)
    assert str(exc.value) == f"{path}:2: field {field}: {problem}"
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("value, procs, field, problem", [
    ("kind=moldable min_pes=4", 2, "min_pes",
     "job 9 (pes 2): min_pes 4 > max_pes 2 (= pes: no max_pes or max_frac given)"),
    ("kind=moldable max_pes=4", 6, "max_pes",
     "job 9 (pes 6): min_pes 6 (= pes: no min_pes or min_frac given) > max_pes 4"),
    ("kind=malleable min_frac=0.5 max_pes=4", 10, "min_frac",
     "job 9 (pes 10): min_pes 5 (= ceil(min_frac 0.5 x 10)) > max_pes 4"),
])
def test_bounds_empty_for_a_job(tmp_path, value, procs, field, problem):
    path = swf_file(tmp_path, f"; CosimApp: 3 {value}", job_line(1, exe=3, procs=4),
                    job_line(9, exe=3, procs=procs))
    with pytest.raises(InputError) as exc:
        read_swf(path)
    assert str(exc.value) == f"{path}:1: field {field}: {problem}"


def test_marks_round_trip(tmp_path):
    path = swf_file(
        tmp_path,
        "; CosimApp: 3 category=A kind=malleable min_frac=0.3 max_frac=1.5 model=amdahl "
        "f=0.25 reconf=kale-platinum total_flop=1e9",
        "; CosimApp: 4 kind=moldable min_pes=2 max_pes=64 model=table table=1:10,8:2 "
        "balance=static",
        "; CosimApp: 5 kind=evolving reconf_pe_s=0.5",
        *[job_line(i, exe=3, procs=i) for i in range(1, 12)],
        *[job_line(i, exe=4, procs=i - 10) for i in range(12, 20)],
        job_line(20, exe=5, procs=3), job_line(21, procs=4))
    first = read_swf(path)
    out = tmp_path / "rt.swf"
    write_jobs_swf(out, first.jobs, header=first.header)
    text = out.read_text()
    assert ("; CosimApp: 1 category= app=rigid priority=0 kind=evolving reconf_pe_s=0.5\n"
            "; CosimApp: 2 category= app=rigid priority=0 kind=moldable min_pes=2 max_pes=64 "
            "model=table balance=static table=1:10,8:2\n"
            "; CosimApp: 3 category=A app=rigid priority=0 kind=malleable min_frac=0.3 "
            "max_frac=1.5 model=amdahl f=0.25 reconf_s=0.0768 total_flop=1e9\n") in text
    back = read_swf(out)
    strip = [dataclasses.replace(j, swf=None) for j in first.jobs]
    assert [dataclasses.replace(j, swf=None) for j in back.jobs] == strip
    again = tmp_path / "again.swf"
    write_jobs_swf(again, back.jobs, header=back.header)
    assert again.read_bytes() == out.read_bytes() and read_swf(again).jobs == back.jobs
    # the schedule writer keeps the marks too (cosim run's schedule.swf)
    sched = tmp_path / "sched.swf"
    write_swf(sched, [JobOutcome(job=j, start=j.submit, end=j.submit + j.runtime,
                                 hosts=(0,), status="completed") for j in back.jobs])
    assert [dataclasses.replace(j, swf=None) for j in read_swf(sched).jobs] == strip


def test_writer_bound_groups(tmp_path):
    base = Job(id=1, submit=0, hosts=1, pes=1, walltime=S, runtime=S, kind="malleable")
    jobs = [
        # absolute bounds no fraction reproduces: min_pes/max_pes
        dataclasses.replace(base, id=1, pes=8, min_pes=4, max_pes=32),
        dataclasses.replace(base, id=2, pes=16, min_pes=4, max_pes=32),
        # a single job: the preferred 0.5 and 1 fit
        dataclasses.replace(base, id=3, pes=7, min_pes=4, max_pes=7),
        # bounds 2..9 of 6 PEs: no preference fits, the shortest decimal nearest the middle
        # of (1/6, 1/3] (0.2 and 0.3 tie: the lower) and of [1.5, 5/3)
        dataclasses.replace(base, id=4, pes=6, min_pes=2, max_pes=9),
    ]
    out = tmp_path / "g.swf"
    write_jobs_swf(out, jobs)
    apps = [ln for ln in out.read_text().splitlines() if "CosimApp" in ln]
    assert [ln.split("kind=malleable ")[1] for ln in apps] == [
        "min_frac=0.2 max_frac=1.6", "min_frac=0.5 max_frac=1", "min_pes=4 max_pes=32"]
    assert [dataclasses.replace(j, swf=None) for j in read_swf(out).jobs] == [
        dataclasses.replace(j, hosts=j.pes) for j in jobs]
    # a caller's preferred fractions win where they fit
    write_jobs_swf(out, jobs[3:], prefer_fracs=(0.3, 1.5))
    assert "min_frac=0.3 max_frac=1.5" in out.read_text()
    with pytest.raises(ValueError, match="'kind' is reserved"):
        write_jobs_swf(out, [dataclasses.replace(base, app_params={"kind": "x"})])


@st.composite
def marked_jobs(draw):
    n = draw(st.integers(1, 10))
    out = []
    for i in range(n):
        pes = draw(st.integers(1, 40))
        kind = draw(st.sampled_from(["rigid", "moldable", "malleable", "evolving"]))
        lo = draw(st.integers(1, 50))
        hi = draw(st.integers(lo, 80))
        model = draw(st.sampled_from([
            IDEAL, RuntimeModel(name="worst"), RuntimeModel(name="amdahl", f=0.05),
            RuntimeModel(reconf_s=5.0, reconf_pe_s=0.125),
            RuntimeModel(name="table", table=((1, 3.0), (16, 0.5)), balance="static")]))
        out.append(Job(id=i, submit=draw(st.integers(0, 5)) * S, hosts=pes, pes=pes,
                       walltime=S, runtime=S, kind=kind, min_pes=lo, max_pes=hi, model=model,
                       category=draw(st.sampled_from(["", "A"]))))
    return out


@settings(max_examples=150, deadline=None)
@given(jobs=marked_jobs())
def test_round_trip_random_marks(tmp_path_factory, jobs):
    out = tmp_path_factory.mktemp("rt") / "m.swf"
    write_jobs_swf(out, jobs)
    first = read_swf(out)
    assert [dataclasses.replace(j, swf=None) for j in first.jobs] == sorted(
        jobs, key=lambda j: (j.submit, j.id))
    write_jobs_swf(out, first.jobs, header=first.header)
    assert read_swf(out).jobs == first.jobs


def test_only_the_usual_trace_job_goes_without_a_cosimapp_line():
    """A job differing from the usual trace job in any one field the CosimApp line says
    gets a line; the usual one keeps its raw executable number, and so do jobs that say the
    same in other words (a model equal to `IDEAL` but not it, a priority of 0.0)."""
    from cosim.workload import swf_write

    base = dict(submit=0, hosts=1, pes=2, walltime=10, runtime=5, swf=(7.0,) * 18)
    plain = Job(id=0, **base)
    same = [dataclasses.replace(plain, id=1, model=RuntimeModel()),
            dataclasses.replace(plain, id=2, priority=0.0)]
    odd = [dataclasses.replace(plain, id=k + 3, **change) for k, change in enumerate([
        {"app": "mandelbrot"}, {"kind": "malleable"}, {"category": "Z"}, {"priority": 1},
        {"exclusion_ok": True}, {"app_params": {"size": "64"}},
        {"model": RuntimeModel(name="amdahl", f=0.1)}])]
    exes, lines = swf_write._app_table([plain, *same, *odd], None)
    assert exes[:3] == [None] * 3 and None not in exes[3:]
    assert len(lines) == len(set(exes[3:]))
