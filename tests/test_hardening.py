"""Issue 11, first part: bad numbers, categories, a byte-order mark, output directories named
`.`/`..`, stale completion markers and SIGTERM — each a one-line error (exit 2) or a clean
path, never a traceback, a hang or a directory that looks complete."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from cosim.cli import main
from cosim.core.clock import MAX_SECONDS
from cosim.core.units import parse_bandwidth, parse_speed, parse_time
from cosim.errors import InputError
from cosim.output.runfiles import csv_field as _csv
from cosim.workload.jobs import Job

LINE = "1 0 -1 100 4 -1 -1 4 100 -1 1 1 1 1 1 1 -1 -1\n"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, err, *needles):
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("cosim: error: ") and "Traceback" not in err
    for n in needles:
        assert n in err, err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "-1"])
def test_quantum_must_be_a_finite_duration(capsys, tmp_path, value):
    swf = tmp_path / "t.swf"
    swf.write_text(LINE)
    code, _, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4",
                       f"--quantum={value}", "--out", str(tmp_path / "o"))
    one_line_error(code, err, "field quantum")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("extra, needle", [
    (["--overhead", "inf"], "field overhead: must be a finite number"),
    (["--overhead", "1e300"], f"at most {MAX_SECONDS:,} seconds"),
    (["--speed", "1e400Gf"], "too large"),
    (["--speed", "1e99999999f"], "too large"),  # once a hang in Fraction
])
def test_app_numbers_out_of_range(capsys, extra, needle):
    t0 = time.perf_counter()
    code, _, err = run(capsys, "app", "--app", "mandelbrot", "--hosts", "2", "--technique",
                       "SS", *extra)
    one_line_error(code, err, needle)
    assert time.perf_counter() - t0 < 10


@pytest.mark.parametrize("parse, text", [
    (parse_speed, "1e400Gf"), (parse_bandwidth, "1e999bps"), (parse_time, "1e400s"),
    (parse_speed, "1e99999999f"), (parse_time, "1e99999999h"), (parse_speed, 10**400),
])
def test_platform_quantities_too_large_are_input_errors(parse, text):
    with pytest.raises(InputError, match="too large"):
        parse(text, field="x", file="p.toml", line=3)


def test_quantities_below_any_float_are_zero():
    assert parse_time("1e-500s") == 0.0
    with pytest.raises(InputError, match="positive"):
        parse_speed("1e-500Gf")


def test_an_swf_whose_times_overflow_the_tick_range_is_refused_when_read(capsys, tmp_path):
    swf = tmp_path / "t.swf"
    swf.write_text(LINE + "2 8000000000 -1 5000000000 4 -1 -1 4 100 -1 1 1 1 1 1 1 -1 -1\n")
    code, _, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4",
                       "--out", str(tmp_path / "o"))
    one_line_error(code, err, f"{swf}:2: field 4 (run time)", "146 years")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("category", ["a=b", "a,b", 'x"y'])
def test_categories_that_would_break_swf_or_csv_are_refused_on_input(capsys, tmp_path,
                                                                     category):
    swf = tmp_path / "t.swf"
    swf.write_text(f"; CosimApp: 1 category={category} app=rigid\n" + LINE)
    code, _, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4",
                       "--out", str(tmp_path / "o"))
    one_line_error(code, err, f"{swf}:1: field CosimApp: category")
    with pytest.raises(ValueError, match="category"):
        Job(id=1, submit=0, hosts=1, pes=1, walltime=1, runtime=1, category=category)


def test_csv_text_fields_are_quoted_when_they_must_be():
    fields = ["plain", "a,b", 'say "hi"', "two\nlines"]
    row = ",".join(_csv(f) for f in fields)
    assert next(csv.reader(io.StringIO(row))) == fields
    assert _csv("plain") == "plain"


def test_a_byte_order_mark_is_accepted(capsys, tmp_path):
    swf = tmp_path / "bom.swf"
    swf.write_bytes(b"\xef\xbb\xbf; Version: 2.2\n" + LINE.encode())
    code, out, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4",
                         "--out", str(tmp_path / "o"), "--json")
    assert code == 0, err
    assert json.loads(out)["jobs"] == 1


@pytest.mark.parametrize("out", [".", "a/.."])
def test_out_dot_is_the_directory_it_names(capsys, tmp_path, monkeypatch, out):
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "a").mkdir()
    swf = tmp_path / "t.swf"
    swf.write_text(LINE)
    monkeypatch.chdir(tmp_path / "here")
    code, _, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4", "--out", out)
    assert code == 0, err
    summary = json.loads((tmp_path / "here" / "summary.json").read_text())
    assert summary["jobs"] == 1
    assert {p.name for p in (tmp_path / "here").iterdir()} >= {
        "jobs.csv", "schedule.swf", "results.h5", "summary.json"}


def test_a_bad_output_directory_fails_before_simulating(capsys, tmp_path):
    swf = tmp_path / "t.swf"
    swf.write_text(LINE)
    code, _, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4",
                       "--out", str(tmp_path / " spaced "))
    one_line_error(code, err, "field out", "cannot hold a run")
    assert not (tmp_path / " spaced ").exists()


@pytest.mark.serial  # (times signals and process ends: alone, `make test`)
def test_sigterm_takes_the_interrupt_path_and_leaves_no_completion_marker(tmp_path):
    """SIGTERM (timeout, scancel) mid-run: 'cosim: interrupted' once, exit 143, no temporary
    files, and the earlier run's summary.json of a re-used directory gone, not left next to
    a half-written new run."""
    out = tmp_path / "main"
    for name in ("rca-off", "rca-yield"):
        (out / name).mkdir(parents=True)
        (out / name / "summary.json").write_text('{"stale": true}\n')
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "cosim", "run", "--out", str(out)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env=env)
    try:
        first = proc.stderr.readline()  # the main job says so when its first simulation starts
        assert "simulating" in first, first
        proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    # (the signal comes as the first of two simulations starts: the run cannot be over)
    assert code == 128 + signal.SIGTERM, rest
    assert rest.count("cosim: interrupted") == 1 and "Traceback" not in rest
    assert not list(tmp_path.rglob("*.tmp")) and not list(tmp_path.rglob(".*.tmp*"))
    assert not list(out.rglob("summary.json"))


FSIZE_RUN = """
import resource, signal, sys
from mpi4py import MPI  # (MPI's transports open their files before the limit)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
from cosim.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.fixture(scope="module")
def warm_costs(tmp_path_factory):
    """The run once without a limit: the app costs it caches are then on disk (a cache
    write would otherwise be the first to fail)."""
    from cosim.paths import TRACES_DIR

    out = tmp_path_factory.mktemp("warm") / "o"
    assert main(["run", "--workload", str(TRACES_DIR / "esp-mandelbrot.swf"), "--out",
                 str(out)]) == 0


@pytest.mark.parametrize("limit, extra, failing", [
    (20_000, [], "jobs.csv: cannot write (File too large)"),
    (140_000, ["--trace", "full"], "trace: cannot write the trace (File is too large"),
])
def test_a_full_disk_is_one_line_and_its_own_exit_status(tmp_path, warm_costs, limit, extra,
                                                         failing):
    """Writes past a file-size limit (what a full disk looks like to cosim): one line, exit
    74 (not 2: that is bad input), no temporary file, no trace or summary that looks
    complete — libotf2's own error lines (one per failed buffer) are not shown."""
    from cosim.paths import TRACES_DIR

    out = tmp_path / "o"
    proc = subprocess.run([sys.executable, "-c", FSIZE_RUN, str(limit), "run", "--workload",
                           str(TRACES_DIR / "esp-mandelbrot.swf"), *extra, "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 74, proc.stderr
    assert proc.stderr.splitlines() == [proc.stderr.strip()], proc.stderr
    assert failing in proc.stderr and "[OTF2]" not in proc.stderr
    assert not list(tmp_path.rglob("*.tmp")) and not (out / "summary.json").exists()
    assert not (out / "trace").exists()


@pytest.mark.parametrize("param, needle", [
    ("max_iter=0", "field app-param: max_iter must be >= 1"),
    ("widht=5", "field widht: unknown key"),
    ("width=-5", "width and height must be >= 1"),
    ("total_flop=abc", "field total_flop: must be a number > 0"),
    ("total_flop=-3", "field total_flop: must be a number > 0"),
    ("width=300000", "at most 33,554,432 tasks"),  # once 671 GiB asked for at the first start
])
def test_app_parameters_are_checked_when_the_workload_is_read(capsys, tmp_path, param,
                                                              needle):
    swf = tmp_path / "t.swf"
    swf.write_text(f"; CosimApp: 1 category=A app=mandelbrot {param}\n" + LINE)
    code, _, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4",
                       "--out", str(tmp_path / "o"))
    one_line_error(code, err, f"{swf}:1: ", needle)
    assert not (tmp_path / "o").exists()


def test_cost_files_asking_for_too_much_or_for_other_files_are_refused(tmp_path):
    import h5py
    import numpy as np

    from cosim.workload.profile import _read_hdf5, _read_npy

    huge = tmp_path / "huge.npy"  # a 128-byte file whose header says 10^11 costs
    with open(huge, "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "<f8", "fortran_order": False, "shape": (10**11,)})
    with pytest.raises(InputError, match="100,000,000,000 costs, more than"):
        _read_npy(huge)
    raw = tmp_path / "raw.bin"
    np.arange(1.0, 11.0).tofile(raw)
    with h5py.File(tmp_path / "ext.h5", "w") as f:  # its data in another (any) local file
        f.create_dataset("c", shape=(10,), dtype="f8", external=[(str(raw), 0, 80)])
    with pytest.raises(InputError, match="external or virtual"):
        _read_hdf5(tmp_path / "ext.h5", None)
    with h5py.File(tmp_path / "src.h5", "w") as f:
        f["d"] = np.arange(1.0, 11.0)
    layout = h5py.VirtualLayout(shape=(10,), dtype="f8")
    layout[:] = h5py.VirtualSource(str(tmp_path / "src.h5"), "d", shape=(10,))
    with h5py.File(tmp_path / "virt.h5", "w") as f:
        f.create_virtual_dataset("v", layout)
    with pytest.raises(InputError, match="external or virtual"):
        _read_hdf5(tmp_path / "virt.h5", None)
    assert _read_hdf5(tmp_path / "src.h5", None).tolist() == list(np.arange(1.0, 11.0))


@pytest.mark.parametrize("hosts, needle", [
    ("count = 1000000000\ncores = 16", "field hosts.count: must be at most 1,048,576"),
    ("count = 4\ncores = 99999999999999999999", "field hosts.cores: must be at most 4,096"),
    ("count = 1048576\ncores = 32", "PEs (count x cores) must be at most 16,777,216"),
])
def test_platform_files_asking_for_huge_machines_are_refused_at_once(capsys, tmp_path, hosts,
                                                                     needle):
    toml = tmp_path / "p.toml"
    toml.write_text(f'[platform]\nname = "p"\n[hosts]\n{hosts}\nspeed = "1Gf"\n'
                    '[network]\ntopology = "full"\nbandwidth = "1Gbps"\n')
    swf = tmp_path / "t.swf"
    swf.write_text(LINE)
    t0 = time.perf_counter()
    code, _, err = run(capsys, "run", "--workload", str(swf), "--platform", str(toml),
                       "--out", str(tmp_path / "o"))
    one_line_error(code, err, str(toml), needle)
    assert time.perf_counter() - t0 < 10


def test_a_simgrid_radical_of_a_billion_hosts_is_refused(tmp_path):
    from cosim.paths import PLATFORMS_DIR
    from cosim.platform import load_platform

    xml = (PLATFORMS_DIR / "example-cluster.xml").read_text()
    bad = tmp_path / "big.xml"
    bad.write_text(xml.replace('radical="0-7"', 'radical="0-999999999"'))
    with pytest.raises(InputError, match="radical.*more than 1,048,576 hosts"):
        load_platform(str(bad))


def test_default_directories_differ_whenever_results_may(capsys, tmp_path, monkeypatch):
    """Every option that changes results changes the default directory (a readable name, then
    a hash of the others when any is not at its default); output-only options do not."""
    from dataclasses import replace

    from cosim.experiment import RunOptions, default_out, main_out

    base = RunOptions(workload="traces/kth.swf.gz")
    assert default_out(base) == default_out(replace(base, trace="full", plots=True))
    assert str(default_out(base)) == "runs/kth-easy-fcfs"
    variants = [replace(base, hosts=64), replace(base, platform="mc64x48"),
                replace(base, seed=1), replace(base, selection="contiguous"),
                replace(base, quantum_s=60.0), replace(base, walltime_kill=False),
                replace(base, technique_params={"min_chunk": "2"}),
                replace(base, app_overrides={"max_iter": "500"}),
                replace(base, malleable="sd"), replace(base, malleable="sd", seed=1),
                replace(base, malleable_params={"cutoff": "none"}, malleable="sd")]
    names = [default_out(v) for v in [base, *variants]]
    assert len(set(names)) == len(names), names
    assert default_out(replace(base, hosts=64)) == default_out(replace(base, hosts=64))
    assert main_out(replace(base, hosts=64), "off") != main_out(base, "off")
    # and end to end: two runs that differ only in --hosts no longer share a directory
    swf = tmp_path / "t.swf"
    swf.write_text(LINE)
    monkeypatch.chdir(tmp_path)
    for hosts in ("4", "8"):
        code, _, err = run(capsys, "run", "--workload", str(swf), "--hosts", hosts)
        assert code == 0, err
    assert len(list((tmp_path / "runs").iterdir())) == 2


def test_identical_runs_write_byte_identical_otf2_archives(capsys, tmp_path):
    """libotf2 puts a random trace id in the anchor file; cosim replaces it by a hash of the
    definitions, so two identical runs give the same bytes — and the archive still reads."""
    import _otf2
    import otf2

    from cosim.paths import TRACES_DIR

    outs = [tmp_path / d / "r" for d in ("a", "b")]
    for out in outs:
        code, _, err = run(capsys, "run", "--workload", str(TRACES_DIR / "esp-psia.swf"),
                           "--trace", "full", "--out", str(out))
        assert code == 0, err
    files = sorted(p.relative_to(outs[0] / "trace") for p in (outs[0] / "trace").rglob("*")
                   if p.is_file())
    assert files and any(p.suffix == ".evt" for p in files)
    for rel in files:
        a, b = ((out / "trace" / rel).read_bytes() for out in outs)
        assert a == b, rel
    anchor = str(outs[0] / "trace" / "traces.otf2")
    reader = _otf2.Reader_Open(anchor)
    try:
        trace_id = _otf2.Reader_GetTraceId(reader)
    finally:
        _otf2.Reader_Close(reader)
    digest = hashlib.sha256((outs[0] / "trace" / "traces.def").read_bytes()).digest()
    assert trace_id in (int.from_bytes(digest[:8], "little"), int.from_bytes(digest[:8], "big"))
    with otf2.reader.open(anchor) as r:
        assert sum(1 for _ in r.events) > 0


def test_zero_runtime_jobs_run_by_default_and_the_summary_says_what_was_skipped(capsys,
                                                                                tmp_path):
    swf = tmp_path / "t.swf"
    swf.write_text(LINE + "2 5 -1 0 4 -1 -1 4 60 -1 1 1 1 1 1 1 -1 -1\n"
                   "3 6 -1 -1 4 -1 -1 4 60 -1 1 1 1 1 1 1 -1 -1\n")
    code, out, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4", "--json",
                         "--out", str(tmp_path / "a"))
    assert code == 0, err
    s = json.loads(out)
    assert s["jobs"] == 2 and s["skipped"]["runtime"] == 1
    assert s["skipped_why"]["runtime"] == "run time unknown (-1)"
    rows = list(csv.DictReader((tmp_path / "a" / "jobs.csv").open()))
    two = next(r for r in rows if r["job_id"] == "2")
    assert (two["status"], two["start_s"], two["end_s"]) == ("completed", "100", "100")
    code, out, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4", "--json",
                         "--skip-zero-runtime", "--out", str(tmp_path / "b"))
    assert code == 0, err
    s = json.loads(out)
    assert s["jobs"] == 1 and s["skipped"]["runtime"] == 2
    assert "or 0 (--skip-zero-runtime)" in s["skipped_why"]["runtime"]


def test_the_contiguous_selection_says_when_it_fell_back_to_first_fit(capsys, tmp_path):
    """4 hosts: job 1 on 0, job 2 on 1-2, job 1 ends, then a 2-host job finds hosts 0 and 3
    free but no block of 2: scattered, counted and said."""
    swf = tmp_path / "t.swf"
    swf.write_text("1 0 -1 10 1 -1 -1 1 10 -1 1 1 1 1 1 1 -1 -1\n"
                   "2 0 -1 100 2 -1 -1 2 100 -1 1 1 1 1 1 1 -1 -1\n"
                   "3 20 -1 10 2 -1 -1 2 10 -1 1 1 1 1 1 1 -1 -1\n")
    code, out, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4",
                         "--selection", "contiguous", "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert "1 jobs got scattered hosts" in out
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["stats"]["scattered_starts"] == 1
    rows = {r["job_id"]: r for r in csv.DictReader((tmp_path / "o" / "jobs.csv").open())}
    assert rows["3"]["host_list"] == "0 3"
    code, out, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4",
                         "--out", str(tmp_path / "ff"))
    assert code == 0 and "scattered" not in out


def test_the_quantum_applies_to_trace_jobs_and_their_kills(capsys, tmp_path):
    """As documented: decisions (starts, walltime kills) only at multiples of the quantum;
    a job may run past its walltime by less than one quantum."""
    swf = tmp_path / "t.swf"
    swf.write_text("1 0 -1 100 4 -1 -1 4 100 -1 1 1 1 1 1 1 -1 -1\n"
                   "2 5 -1 30 4 -1 -1 4 20 -1 1 1 1 1 1 1 -1 -1\n")
    rows = {}
    for q in ("0", "60"):
        code, _, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4",
                           "--quantum", q, "--out", str(tmp_path / q))
        assert code == 0, err
        rows[q] = {r["job_id"]: (r["start_s"], r["end_s"], r["status"])
                   for r in csv.DictReader((tmp_path / q / "jobs.csv").open())}
    assert rows["0"]["2"] == ("100", "120", "killed")  # at its walltime, event-exact
    assert rows["60"]["2"] == ("120", "150", "completed")  # the kill was due at 180 > 150


def test_an_output_directory_held_by_a_live_run_is_refused(capsys, tmp_path):
    """Two runs into one directory at once would mix their files: the second is refused
    before it simulates, naming the holder; once the first is done, the directory is free."""
    from cosim.core.files import LOCK_NAME, hold_dir

    swf = tmp_path / "t.swf"
    swf.write_text(LINE)
    out = tmp_path / "o"
    with hold_dir(out):  # a live run (its lock: released with the process, however it ends)
        code, _, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4",
                           "--out", str(out))
        one_line_error(code, err, "field out: in use by another live run", f"pid {os.getpid()}")
        assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]
    code, _, err = run(capsys, "run", "--workload", str(swf), "--hosts", "4", "--out", str(out))
    assert code == 0, err
    assert (out / "summary.json").exists()


@pytest.mark.parametrize("override, needle", [
    ("max_iter=-5", "field app-overrides: max_iter must be >= 1"),
    ("widht=3", "field app-overrides.widht: unknown key"),
])
def test_app_overrides_are_checked_against_the_workload_before_simulating(capsys, tmp_path,
                                                                          override, needle):
    from cosim.paths import TRACES_DIR

    code, _, err = run(capsys, "run", "--workload", str(TRACES_DIR / "esp-mandelbrot.swf"),
                       "--app-overrides", override, "--out", str(tmp_path / "o"))
    one_line_error(code, err, needle, "(for the mandelbrot jobs of the workload)")
    assert not (tmp_path / "o").exists()


LOST_INTERRUPT = """
import signal, sys, time
from cosim.cli import _unraisable
sys.unraisablehook = _unraisable
# Python's own SIGINT handler, as in a command started from a terminal (a shell starts
# background jobs with SIGINT ignored, and Python then installs none)
signal.signal(signal.SIGINT, signal.default_int_handler)
class Finalized:
    def __del__(self):
        raise KeyboardInterrupt  # as a Ctrl-C landing in a finalizer
try:
    Finalized()
    until = time.monotonic() + 5
    while time.monotonic() < until:
        pass
    print("lost")
except KeyboardInterrupt:
    print("raised in the program")
"""


@pytest.mark.serial  # (times signals and process ends: alone, `make test`)
def test_an_interrupt_lost_in_a_gc_callback_is_raised_again():
    """Python cannot raise a Ctrl-C that lands inside a finalizer or weakref callback and
    would print "Exception ignored ... KeyboardInterrupt" and go on; cosim's hook marks the
    signal pending again, so the interrupt takes its usual path — raised in the program's
    main thread, after the hook (a mark made inside the hook would fire there and be lost
    again). Other unraisable errors print as usual."""
    from cosim.cli import _unraisable

    proc = subprocess.run([sys.executable, "-c", LOST_INTERRUPT], capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.split() == ["raised", "in", "the", "program"], proc
    assert "Exception ignored" not in proc.stderr, proc.stderr

    class Broken:
        def __del__(self):
            raise ValueError("x")

    err = io.StringIO()
    saved = sys.stderr, sys.unraisablehook
    sys.stderr, sys.unraisablehook = err, _unraisable
    try:
        Broken()  # its finalizer fails: an unraisable error, printed as Python does
    finally:
        sys.stderr, sys.unraisablehook = saved
    assert "ValueError: x" in err.getvalue()
