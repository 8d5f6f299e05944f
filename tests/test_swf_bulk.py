"""`read_swf` reads the usual trace at once (numpy) and any other line by line: both give the
same workload, warnings and errors. Each test runs both: the bulk reader as `read_swf` has
it, the line reader with the bulk one switched off."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from cosim.paths import TRACES_DIR
from cosim.workload import swf
from cosim.workload.swf import SwfReader, read_swf

SHIPPED = sorted(p.name for p in TRACES_DIR.iterdir() if ".swf" in p.name)


def both(path, monkeypatch, **kw):
    """``(bulk, line by line)``: each a workload with its warnings, or the error message."""
    def one():
        warnings: list[str] = []
        try:
            w = read_swf(path, warn=warnings.append, **kw)
            # repr tells -0.0 from 0.0, which == does not
            return w, repr([j.swf for j in (*w.jobs, *w.rejected)]), warnings
        except InputError as exc:
            return str(exc), warnings

    bulk = one()
    with monkeypatch.context() as m:
        m.setattr(swf, "_bulk_rows", lambda reader: None)
        line = one()
    return bulk, line


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_trace_reads_at_once_and_the_same(name, monkeypatch):
    path = TRACES_DIR / name
    assert swf._bulk_rows(SwfReader(path)) is not None  # the fast path is the one taken
    for kw in ({}, {"max_hosts": 64, "cores_per_host": 4},
               {"procs_field": "allocated", "skip_zero_runtime": True}):
        bulk, line = both(path, monkeypatch, **kw)
        assert bulk == line


# a job line's fields as text: usual integers, fractions the bulk reader takes, and (in odd
# files) what only the line reader takes or refuses: the bulk reader must then step aside
USUAL = st.one_of(st.integers(0, 10**6).map(str), st.just("-1"))
FRACTION = st.sampled_from(["1.5", "0.25", "7.", ".5", "-1.0", "10.000000001", "3.0",
                            "8999999999.999999999"])
ODD = st.sampled_from(["-0", "-01", "+5", "1e3", "-1.5", "9000000001", "99999999999999999999",
                       "nan", "1_0", "x", "-", "--1"])


@st.composite
def swf_texts(draw):
    # None: a file the bulk reader should take; else the one thing that makes it odd
    odd = draw(st.sampled_from([None, None, "token", "duplicate", "17 fields", "status 6",
                                "comment below", "late"]))
    n = draw(st.integers(1, 12))
    header = draw(st.lists(st.sampled_from(["; Version: 2.2", "; MaxNodes: 64", ";",
                                            "; Note: a note", ";    continued", "",
                                            "; CosimApp: 3 mandelbrot category=Z"]),
                           max_size=4))
    lines = list(header)
    ids = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n, unique=True))
    if odd == "duplicate":
        ids.append(draw(st.sampled_from(ids)))
    where = draw(st.integers(0, len(ids) - 1))  # the odd line
    for k, job in enumerate(ids):
        fields = [str(job)] + [draw(USUAL) for _ in range(17)]
        fields[1] = str(draw(st.integers(0, 10**5)))
        fields[10] = draw(st.sampled_from(["-1", "0", "1", "5"]))
        if draw(st.integers(0, 3)) == 0:  # a fractional time or other field
            fields[draw(st.sampled_from([1, 3, 5, 8, 9]))] = draw(FRACTION)
        if k == where and odd == "token":
            fields[draw(st.integers(0, 17))] = draw(ODD | FRACTION)
        elif k == where and odd == "status 6":
            fields[10] = "6"
        elif k == where and odd == "17 fields":
            fields = fields[:-1]
        elif k == where and odd == "late":  # ends past the tick range's half (in int64 too)
            fields[1], fields[3] = "8000000000", draw(st.sampled_from(["1", "8000000000"]))
            fields[8] = draw(st.sampled_from(["-1", "8000000000"]))
        sep = draw(st.sampled_from([" ", "  ", "\t"]))
        lines.append(sep.join(fields) + draw(st.sampled_from(["", " ", "\t"])))
        if draw(st.integers(0, 10)) == 0:
            lines.append(draw(st.sampled_from(["", "   ", "\t"])))
        if k == where and odd == "comment below":
            lines.append("; below")
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=swf_texts(), gz=st.booleans(), lenient=st.booleans(),
       max_hosts=st.sampled_from([None, 100_000, 40]), cores=st.integers(1, 4),
       procs_field=st.sampled_from(["requested", "allocated"]),
       skip_zero_runtime=st.booleans())
def test_the_bulk_reader_gives_what_the_line_reader_gives(tmp_path, monkeypatch, text, gz,
                                                         lenient, max_hosts, cores, procs_field,
                                                         skip_zero_runtime):
    """The same jobs, rejections (and their warnings' line numbers), skips, counters and
    errors, whether the rows are read at once (and decided on arrays) or line by line."""
    data = text.encode()
    path = tmp_path / ("t.swf.gz" if gz else "t.swf")
    path.write_bytes(gzip.compress(data) if gz else data)
    bulk, line = both(path, monkeypatch, lenient=lenient, max_hosts=max_hosts,
                      cores_per_host=cores, procs_field=procs_field,
                      skip_zero_runtime=skip_zero_runtime)
    assert bulk == line


def test_a_bad_cosimapp_names_the_same_job_and_huge_cores_read(tmp_path, monkeypatch):
    """A CosimApp line no job can take is reported for the first such job in the file, as
    the line reader reports it (not the first by submission); a core count past any PE count
    gives every job one host, as Python's ints give it."""
    p = tmp_path / "t.swf"
    p.write_text("; CosimApp: 1 kind=moldable min_pes=5\n"
                 "2 100 -1 10 1 -1 -1 1 20 -1 1 1 1 1 1 -1 -1 -1\n"
                 "1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 1 1 -1 -1 -1\n")
    bulk, line = both(p, monkeypatch)
    assert bulk == line and "job 2 (pes 1)" in bulk[0]
    p.write_text("1 0 -1 10 7 -1 -1 7 20 -1 1 1 1 1 1 -1 -1 -1\n")
    bulk, line = both(p, monkeypatch, cores_per_host=2**63)
    assert bulk == line and bulk[0].jobs[0].hosts == 1


def test_what_the_bulk_reader_leaves_to_the_line_reader(tmp_path):
    """Each of these files is read line by line (the bulk reader returns None)."""
    ok = "1 0 -1 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1"
    cases = {
        "comment below": f"{ok}\n; late\n",
        "sign": ok.replace(" 10 ", " +10 "),
        "exponent": ok.replace(" 10 ", " 1e1 "),
        "negative zero": ok.replace(" 10 ", " -0 "),
        "duplicate": f"{ok}\n{ok}\n",
        "17 fields": ok.rsplit(" ", 1)[0],
        "status 6": ok.replace(" 1 1 1 -1 1", " 6 1 1 -1 1"),
        "too large": ok.replace(" 10 ", " 9000000001 "),
        "fractional id": "1.5" + ok[1:],
        "no job line": "; only a header\n",
    }
    for what, text in cases.items():
        p = tmp_path / "t.swf"
        p.write_text(text + "\n")
        assert swf._bulk_rows(SwfReader(p)) is None, what
    p.write_text(ok + "\n")
    assert swf._bulk_rows(SwfReader(p)) is not None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_is_read_line_by_line_and_refused_as_before(tmp_path):
    """A FIFO can be read once: the bulk reader leaves it alone (else the line reader would
    wait for a second writer forever), and the line reader says it cannot seek in it."""
    fifo = tmp_path / "pipe.swf"
    os.mkfifo(fifo)
    script = ("import threading, sys\n"
              "from cosim.errors import InputError\n"
              "from cosim.workload.swf import read_swf\n"
              f"path = {str(fifo)!r}\n"
              "def feed():\n"
              "    try:\n"
              "        with open(path, 'w') as fh:\n"
              "            fh.write('1 0 -1 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1\\n')\n"
              "    except BrokenPipeError:\n"
              "        pass\n"
              "threading.Thread(target=feed, daemon=True).start()\n"
              "try:\n"
              "    read_swf(path)\n"
              "except InputError as exc:\n"
              "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)
    assert "not seekable" in out.stdout, out.stderr


@pytest.mark.parametrize(("text", "bulk"), [
    ("1 0 -1 10\t5\n2 3 4 5.5 6\n", True), ("", True), ("1 2e3\n", False), ("1 +2\n", False),
    ("1 nan\n", False), ("1 2\r\n", False), ("1 2_000\n", False), ("1 \u00e9\n", False),
    ("1 \u0661\n", False),  # (a digit to `float`, not to the bulk parser)
])
def test_only_plain_numbers_go_to_the_bulk_parser(text, bulk):
    assert swf._only_bulk(text) is bulk
