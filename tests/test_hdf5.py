"""results.h5: exact round trip, byte reproducibility, append, bad files, and the reports."""

from __future__ import annotations

import csv
import io
import json
import os
import pickle
import re
import subprocess
import sys
import zlib
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosim.errors import InputError, OutputError
from cosim.output import hdf5
from cosim.output.hdf5 import (
    SCHEMA_VERSION,
    TABLES,
    append_run,
    command_provenance,
    decode_attrs,
    encode_attrs,
    read_provenance,
    read_results,
    write_results,
)
from cosim.output.metrics import summary
from cosim.output.report import CSV_METRICS, report_csv, report_table
from cosim.bls.alloclog import ALLOC_DTYPE, ROLES, YIELDED
from cosim.output.tables import JOB_DTYPE, RunTables, step_series
from cosim.testing.runs import malleable_tables, tiny_tables

DOCS = Path(__file__).resolve().parents[1] / "docs" / "results.md"
TABLE_NAMES = ("jobs", "allocations", "workers", "chunks")


@pytest.fixture(scope="module")
def runs() -> list[RunTables]:
    """The tiny run with RCA yield and with RCA off (chunk tables recorded in both)."""
    return [tiny_tables(run_id="rca-yield"), tiny_tables(rca=False, run_id="rca-off")]


@pytest.fixture(scope="module")
def mall() -> RunTables:
    """A malleable run under equipartition: resizes, hosts shared at PE level, no chunks."""
    return malleable_tables()


def assert_same(a: RunTables, b: RunTables, *, chunks: bool = True) -> None:
    assert (a.run_id, a.n_hosts, a.cores_per_host, a.host_names) == \
        (b.run_id, b.n_hosts, b.cores_per_host, b.host_names)
    # JSON text compares NaN equal to NaN and tells 1 from 1.0 and True
    for name in ("config", "metrics", "stats"):
        assert json.dumps(getattr(a, name)) == json.dumps(getattr(b, name)), name
    assert a.racks.dtype == b.racks.dtype and np.array_equal(a.racks, b.racks)
    for name in TABLE_NAMES:
        x, y = getattr(a, name), getattr(b, name)
        if name == "chunks" and not chunks:
            assert y is None
            continue
        assert x.dtype == y.dtype, name
        assert x.tobytes() == y.tobytes(), name  # bit for bit, NaNs included


# -- round trip ------------------------------------------------------------------------------

def test_round_trip_with_chunks(tmp_path, runs):
    path = tmp_path / "results.h5"
    write_results(path, runs, chunks=True)
    back = read_results(path)
    assert [r.run_id for r in back] == ["rca-yield", "rca-off"]  # written order, not sorted
    for a, b in zip(runs, back, strict=True):
        assert a.chunks is not None and len(a.chunks) > 0
        assert_same(a, b)
    assert [r.chunks for r in read_results(path, chunks=False)] == [None, None]


def test_round_trip_of_a_malleable_run(tmp_path, runs, mall):
    path = tmp_path / "results.h5"
    write_results(path, [mall, runs[0]], chunks=True)
    back, again = read_results(path)
    assert_same(mall, back, chunks=False)
    assert_same(runs[0], again)
    a = back.allocations
    assert a.dtype == ALLOC_DTYPE and (a["core"] > 0).any() and (a["hosts"] > 1).any()
    j = back.jobs
    assert b"malleable" in j["kind"].tolist() and (j["shrinks"] > 0).any()
    assert (j["expands"] > 0).any() and (j["min_pes"] < j["max_pes"]).any()
    assert back.metrics["resized_jobs"] == int(((j["shrinks"] > 0) | (j["expands"] > 0)).sum())
    with h5py.File(path) as f:
        d = f["runs/malleable/allocations"]
        assert list(d.attrs["roles"]) == list(ROLES)
        assert d.compression == "gzip"
        series = step_series(mall)
        for name, field in (("utilization", "busy_hosts"), ("busy_pes", "busy_pes")):
            times, values = series[field]
            assert np.array_equal(f[f"runs/malleable/{name}"]["time"], times)
            assert np.array_equal(f[f"runs/malleable/{name}"][field], values)
    # the PE-time of every job is the log's: hosts x pes x duration of its busy rows
    busy = a[a["role"] != YIELDED]
    pe_ticks = {int(x): 0 for x in j["id"]}
    for r in busy:
        pe_ticks[int(r["job"])] += int(r["hosts"]) * int(r["pes"]) * int(r["end"] - r["start"])
    assert j["pe_seconds"].tolist() == [pe_ticks[int(x)] / 1e9 for x in j["id"]]


def test_round_trip_without_chunks(tmp_path, runs):
    path = tmp_path / "results.h5"
    write_results(path, runs)
    with h5py.File(path) as f:
        assert "chunks" not in f["runs/rca-yield"]
    for a, b in zip(runs, read_results(path), strict=True):
        assert_same(a, b, chunks=False)


def test_layout_units_and_series(tmp_path, runs):
    path = tmp_path / "results.h5"
    write_results(path, runs[:1], chunks=True)
    run = runs[0]
    with h5py.File(path) as f:
        assert f.attrs["schema"] == "cosim.results"
        assert f.attrs["schema_version"] == SCHEMA_VERSION
        g = f["runs/rca-yield"]
        assert g.attrs["n_hosts"] == 8 and g.attrs["cores_per_host"] == 2
        assert g["config"].attrs["rca"] == "yield"
        assert g["metrics"].attrs["makespan_s"] == run.metrics["makespan_s"]
        for name, d in g.items():
            if isinstance(d, h5py.Dataset):
                assert len(d.attrs["units"]) == len(d.dtype.names), name
                assert d.attrs["description"], name
        units = dict(zip(g["jobs"].dtype.names, g["jobs"].attrs["units"], strict=True))
        assert units["submit"] == "ns" and units["wait_s"] == "s" and units["id"] == ""
        assert g["jobs"].dtype["start"] == np.dtype("<i8")
        assert g["chunks"].compression == "gzip" and g["chunks"].chunks is not None
        assert list(g["allocations"].attrs["roles"]) == ["own", "borrowed", "guest",
                                                         "yielded"]
        assert units["pe_seconds"] == "PE s"
        series = step_series(run)
        for name, field in (("utilization", "busy_hosts"), ("running", "running"),
                            ("queued", "queued"), ("busy_pes", "busy_pes")):
            key = "busy_hosts" if name == "utilization" else name
            times, values = series[key]
            assert np.array_equal(g[name]["time"], times)
            assert np.array_equal(g[name][field], values)
        # without resizes or shared hosts, busy PEs change exactly when busy hosts do
        assert np.array_equal(g["busy_pes"]["time"], g["utilization"]["time"])


def test_docs_name_every_dataset_field_and_unit():
    text = DOCS.read_text()
    assert f"schema version {SCHEMA_VERSION}" in text
    sections = text.split("\n### ")
    for table in TABLES:
        (section,) = [s for s in sections if f"`{table.name}`" in s.splitlines()[0]]
        for field, unit in zip(table.dtype.names, table.units, strict=True):
            # a row of the section's field table: | `field` | `<i8` | ns | meaning |
            row = re.search(rf"\| `{field}` \| `(?:<[if]\d|u1|S[^`]*)` \| ([^|]*)\|", section)
            assert row and row.group(1).strip() == unit, (table.name, field)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(
    st.text(min_size=1).filter(lambda k: "\x00" not in k and not k.startswith("json:")),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats()
        | st.text(st.characters(exclude_categories=())),  # surrogates and NULs included
        lambda inner: st.lists(inner, max_size=3)
        | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=6),
    max_size=6))
def test_attribute_values_round_trip(values):
    with h5py.File("mem.h5", "w", driver="core", backing_store=False, track_order=True) as f:
        g = f.create_group("config", track_order=True)
        encode_attrs(g.attrs, values)
        back = decode_attrs(g.attrs)
    assert json.dumps(back) == json.dumps(values)  # same values, types and order


def test_config_with_every_kind_of_value(tmp_path, runs):
    config = {"technique": None, "rca": "yield", "hosts": 8, "walltime_kill": True,
              "quantum_s": 0.0, "params": {"chunk": "4"}, "ids": (1, 2), "big": 2**70,
              "nan": float("nan"), "np": np.int32(3), "name\u00e9": "caf\u00e9"}
    path = tmp_path / "results.h5"
    write_results(path, [replace(runs[0], config=config)])
    (back,) = read_results(path)
    assert back.config["technique"] is None and back.config["ids"] == [1, 2]
    assert back.config["big"] == 2**70 and back.config["np"] == 3
    assert type(back.config["walltime_kill"]) is bool and type(back.config["hosts"]) is int
    with h5py.File(path) as f:
        attrs = f["runs/rca-yield/config"].attrs
        assert attrs["json:technique"] == "null" and attrs["rca"] == "yield"
    with pytest.raises(TypeError):
        write_results(path, [replace(runs[0], config={"where": Path("x")})])
    with pytest.raises(ValueError):
        write_results(path, [replace(runs[0], config={"json:x": 1})])


def test_provenance(tmp_path, runs):
    path = tmp_path / "results.h5"
    write_results(path, runs[:1], provenance=command_provenance(["cosim", "run", "--x", "a b"]))
    prov = read_provenance(path)
    assert prov["command"] == "cosim run --x 'a b'"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", prov["date"])
    assert {"cosim", "python", "numpy", "h5py", "hdf5"} <= set(prov)
    with h5py.File(path) as f:  # the run itself holds no date
        assert "date" not in f["runs/rca-yield/config"].attrs


@pytest.mark.parametrize("cpus", [1, 3])
def test_tables_compressed_here_read_back_through_hdf5s_filters(tmp_path, runs, mall,
                                                               monkeypatch, cpus):
    """Chunks of a few rows (many per table, the last one short) compressed by this process
    — by one thread or several — are stored as HDF5's shuffle + deflate pipeline says, so
    HDF5 reads them back, and the same bytes come out whatever the threads."""
    monkeypatch.setattr(hdf5, "CHUNK_ROWS", 7)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    path = tmp_path / "results.h5"
    write_results(path, [mall, *runs], chunks=True)
    for a, b in zip([mall, *runs], read_results(path), strict=True):
        assert_same(a, b, chunks=a.chunks is not None)
    with h5py.File(path, "r+") as f:
        d = f["runs/rca-yield/allocations"]
        assert (d.compression, d.compression_opts, d.shuffle, d.chunks) == ("gzip", 1, True,
                                                                            (7,))
        assert d.id.get_num_chunks() == -(-len(d) // 7) > 2 and len(d) % 7
        # each chunk as HDF5's own filters make it (the short last one padded as HDF5 pads)
        theirs = f.create_dataset("theirs", data=d[()], chunks=(7,), maxshape=(None,),
                                  compression="gzip", compression_opts=1, shuffle=True)
        for k in range(0, len(d), 7):
            assert zlib.decompress(d.id.read_direct_chunk((k,))[1]) == \
                zlib.decompress(theirs.id.read_direct_chunk((k,))[1])
    write_results(tmp_path / "again.h5", [mall, *runs], chunks=True)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    write_results(tmp_path / "serial.h5", [mall, *runs], chunks=True)
    assert (tmp_path / "again.h5").read_bytes() == (tmp_path / "serial.h5").read_bytes()


# -- reproducibility and atomicity -----------------------------------------------------------

def test_same_runs_give_the_same_bytes(tmp_path, runs):
    a, b = tmp_path / "a.h5", tmp_path / "b" / "results.h5"
    write_results(a, runs, chunks=True)
    write_results(b, runs, chunks=True)
    assert a.read_bytes() == b.read_bytes()
    with h5py.File(a) as f:
        def no_times(name, obj):
            if isinstance(obj, h5py.Dataset):
                assert not obj.id.get_create_plist().get_obj_track_times(), name
        f.visititems(no_times)


def test_same_bytes_from_another_process(tmp_path, runs):
    """Nothing process-dependent (addresses, uninitialised memory) reaches the file."""
    (tmp_path / "runs.pickle").write_bytes(pickle.dumps(runs))
    code = ("import pickle, sys; from cosim.output.hdf5 import write_results; "
            "write_results(sys.argv[2], pickle.load(open(sys.argv[1], 'rb')), chunks=True)")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "runs.pickle"),
                    str(tmp_path / "other.h5")], check=True)
    write_results(tmp_path / "here.h5", runs, chunks=True)
    assert (tmp_path / "here.h5").read_bytes() == (tmp_path / "other.h5").read_bytes()


def test_no_temporary_file_after_a_failure(tmp_path, runs, monkeypatch):
    path = tmp_path / "results.h5"
    with pytest.raises(TypeError):  # fails while building: nothing touches the disk
        write_results(path, [replace(runs[0], metrics={"x": object()})])
    assert list(tmp_path.iterdir()) == []
    write_results(path, runs[:1])
    before = path.read_bytes()

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OutputError, match="results.h5.*No space left"):
        write_results(path, runs)
    with pytest.raises(OutputError, match="No space left"):  # exit 74, not 2
        append_run(path, runs[1])
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["results.h5"]
    assert path.read_bytes() == before


# -- append --------------------------------------------------------------------------------

def test_append_run(tmp_path, runs):
    path = tmp_path / "results.h5"
    append_run(path, runs[0], chunks=True, provenance={"command": "first"})
    append_run(path, runs[1], provenance={"command": "ignored"})
    back = read_results(path)
    assert [r.run_id for r in back] == ["rca-yield", "rca-off"]
    assert_same(runs[0], back[0])
    assert_same(runs[1], back[1], chunks=False)
    assert read_provenance(path)["command"] == "first"
    before = path.read_bytes()
    with pytest.raises(InputError, match=r"results.h5: field run_id: run 'rca-off' is already"):
        append_run(path, runs[1])
    assert path.read_bytes() == before


@pytest.mark.parametrize("run_id", ["", "a/b", ".", "..", " x", "x\n", "tab\there"])
def test_bad_run_ids(tmp_path, runs, run_id):
    with pytest.raises(InputError, match="run_id"):
        write_results(tmp_path / "r.h5", [replace(runs[0], run_id=run_id)])
    assert not (tmp_path / "r.h5").exists()


def test_duplicate_run_ids(tmp_path, runs):
    with pytest.raises(InputError, match="'rca-yield' is twice"):
        write_results(tmp_path / "r.h5", [runs[0], runs[0]])


# -- bad files ----------------------------------------------------------------------------

def _edit(path: Path, fn) -> None:
    with h5py.File(path, "r+") as f:
        fn(f)


def _drop_field(f: h5py.File) -> None:
    jobs = f["runs/rca-yield/jobs"][()]
    del f["runs/rca-yield/jobs"]
    names = [n for n in jobs.dtype.names if n != "status"]
    f["runs/rca-yield/jobs"] = jobs[names]


BAD_EDITS = {
    "newer version": (lambda f: f.attrs.modify("schema_version", SCHEMA_VERSION + 1),
                      f"schema_version {SCHEMA_VERSION + 1} is newer than this cosim reads"),
    "version zero": (lambda f: f.attrs.modify("schema_version", 0), "unknown schema_version"),
    "version text": (lambda f: f.attrs.__setitem__("schema_version", "1"), "unknown schema_version"),
    "no version": (lambda f: f.attrs.__delitem__("schema_version"), "not a cosim results"),
    "other schema": (lambda f: f.attrs.modify("schema", "other"), "not a cosim results"),
    "no runs": (lambda f: f.__delitem__("runs"), "missing group /runs"),
    "no jobs": (lambda f: f.__delitem__("runs/rca-yield/jobs"),
                "missing dataset /runs/rca-yield/jobs"),
    "no config": (lambda f: f.__delitem__("runs/rca-yield/config"),
                  "missing group /runs/rca-yield/config"),
    "no field": (_drop_field, "missing status"),
    "no n_hosts": (lambda f: f["runs/rca-yield"].attrs.__delitem__("n_hosts"),
                   "missing integer attribute n_hosts"),
    "bad json": (lambda f: f["runs/rca-yield/config"].attrs.create("json:x", "{"),
                 "bad JSON attribute in /runs/rca-yield/config"),
}


@pytest.mark.parametrize("case", sorted(BAD_EDITS))
def test_damaged_results_file(tmp_path, runs, case):
    path = tmp_path / "results.h5"
    write_results(path, runs[:1])
    edit, message = BAD_EDITS[case]
    _edit(path, edit)
    with pytest.raises(InputError) as err:
        read_results(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_garbage_and_foreign_files(tmp_path, runs):
    cases = {"missing.h5": "no such file", "garbage.h5": "not an HDF5 file",
             "empty.h5": "not an HDF5 file", "foreign.h5": "not a cosim results file",
             "truncated.h5": "cannot read the HDF5 file", "adir": "is a directory"}
    (tmp_path / "garbage.h5").write_bytes(b"\x89HDF-not-really" + bytes(range(256)) * 8)
    (tmp_path / "empty.h5").write_bytes(b"")
    with h5py.File(tmp_path / "foreign.h5", "w") as f:
        f["x"] = np.arange(3)
    write_results(tmp_path / "ok.h5", runs)
    (tmp_path / "truncated.h5").write_bytes((tmp_path / "ok.h5").read_bytes()[:3000])
    (tmp_path / "adir").mkdir()
    for name, message in cases.items():
        for read in (read_results, read_provenance):
            with pytest.raises(InputError) as err:
                read(tmp_path / name)
            assert str(err.value) == f"{tmp_path / name}: {message}" or (
                str(err.value).startswith(f"{tmp_path / name}: {message}")), name
    for name in ("garbage.h5", "foreign.h5"):
        before = (tmp_path / name).read_bytes()
        with pytest.raises(InputError, match=re.escape(name)):
            append_run(tmp_path / name, runs[0])
        assert (tmp_path / name).read_bytes() == before


def test_newer_additions_are_ignored(tmp_path, runs):
    """The rule of docs/results.md: a new dataset or field keeps the version readable."""
    path = tmp_path / "results.h5"
    write_results(path, runs[:1])

    def add(f):
        jobs = f["runs/rca-yield/jobs"][()]
        wider = np.zeros(len(jobs), dtype=[(n, jobs.dtype[n]) for n in jobs.dtype.names]
                         + [("a_future_field", "<f8")])
        for n in jobs.dtype.names:
            wider[n] = jobs[n]
        del f["runs/rca-yield/jobs"]
        f["runs/rca-yield/jobs"] = wider
        f["runs/rca-yield/new_series"] = np.arange(4)

    _edit(path, add)
    (back,) = read_results(path)
    assert_same(runs[0], back, chunks=False)


# -- schema version 1 ------------------------------------------------------------------------

V1_ALLOC = np.dtype([("job", "<i8"), ("host", "<i4"), ("pes", "<i4"), ("owner", "<i8"),
                     ("start", "<i8"), ("end", "<i8"), ("busy_end", "<i8")])


def _v1_allocations(run: RunTables) -> np.ndarray:
    """The version 1 table of a run without resizes: one row per (job, host) over the job's
    run, with the end of its busy part (the old writer's rows)."""
    jobs = {int(j["id"]): j for j in run.jobs}
    rows = {}
    for r in run.allocations:
        for h in range(int(r["host"]), int(r["host"] + r["hosts"])):
            job = int(r["job"])
            j = jobs[job]
            key = (h, int(j["start"]), job)
            old = rows.get(key, (job, h, 0, int(r["owner"]), int(j["start"]), int(j["end"]),
                                 int(j["start"])))
            busy_end = int(r["end"]) if r["role"] != YIELDED else old[6]
            rows[key] = (job, h, max(old[2], int(r["pes"])), old[3], old[4], old[5], busy_end)
    return np.array([rows[k] for k in sorted(rows)], dtype=V1_ALLOC)


def _per_pe(alloc: np.ndarray, cores: int) -> list[tuple[int, ...]]:
    return sorted((int(r["job"]), h * cores + c, int(r["start"]), int(r["end"]),
                   int(r["role"]), int(r["owner"]))
                  for r in alloc for h in range(int(r["host"]), int(r["host"] + r["hosts"]))
                  for c in range(int(r["core"]), int(r["core"] + r["pes"])))


def _old_hosts(g: h5py.Group) -> None:
    """The hosts table of versions 1 and 2: (name, rack), the cores in `cores_per_host`."""
    hosts = g["hosts"][()]
    del g["hosts"]
    g["hosts"] = hosts[["name", "rack"]].astype(
        [("name", hosts.dtype["name"]), ("rack", "<i4")])


def _old_jobs(g: h5py.Group) -> None:
    """The jobs table of versions 2 and 3: without the value and energy_j columns."""
    jobs = g["jobs"][()]
    names = [n for n in jobs.dtype.names if n not in ("value", "energy_j")]
    del g["jobs"]
    g["jobs"] = jobs[names].astype([(n, jobs.dtype[n]) for n in names])


def _make_v1(path: Path, run: RunTables) -> None:
    """Turn a file of `run` into the version 1 layout (as cosim wrote it before the log)."""
    with h5py.File(path, "r+") as f:
        f.attrs.modify("schema_version", 1)
        g = f["runs"][run.run_id]
        _old_hosts(g)
        jobs = g["jobs"][()]
        del g["jobs"], g["allocations"], g["busy_pes"]
        g["jobs"] = jobs[list(JOB_DTYPE.names[:19])]
        g["allocations"] = _v1_allocations(run)


def test_version_1_files_are_read_and_converted(tmp_path, runs):
    path = tmp_path / "v1.h5"
    run = runs[0]  # RCA yield: borrowed hosts and yielded tails
    write_results(path, [run], chunks=True)
    _make_v1(path, run)
    (back,) = read_results(path)
    assert back.jobs.dtype == JOB_DTYPE and back.allocations.dtype == ALLOC_DTYPE
    # every job of a version 1 run is rigid and never resized: the same jobs table
    assert back.jobs.tobytes() == run.jobs.tobytes()
    # the same intervals on the same PEs in the same roles (one host per converted row)
    assert (back.allocations["hosts"] == 1).all()
    assert _per_pe(back.allocations, 2) == _per_pe(run.allocations, 2)
    assert any(ROLES[r] == "yielded" for r in back.allocations["role"].tolist())
    for name in ("workers", "chunks"):
        assert getattr(back, name).tobytes() == getattr(run, name).tobytes()
    with pytest.raises(InputError, match="cannot append to a schema_version 1 file"):
        append_run(path, runs[1])


def _older(path: Path, runs: list[RunTables], version: int, *layouts) -> Path:
    """`runs` written to `path` and turned into schema `version`: each of `layouts` applied
    to every run's group."""
    write_results(path, runs)
    with h5py.File(path, "r+") as f:
        f.attrs.modify("schema_version", version)
        for g in f["runs"].values():
            for layout in layouts:
                layout(g)
    return path


def test_version_2_files_get_their_cores_from_the_attribute(tmp_path, runs):
    path = _older(tmp_path / "v2.h5", runs, 2, _old_hosts, _old_jobs)
    back = read_results(path)
    for a, b in zip(back, runs, strict=True):
        assert a.host_cores.tolist() == b.host_cores.tolist() == [a.cores_per_host] * a.n_hosts
        assert a.jobs.tobytes() == b.jobs.tobytes()
    with pytest.raises(InputError, match="cannot append to a schema_version 2 file"):
        append_run(path, runs[0])


def test_version_3_files_get_no_value_and_no_energy(tmp_path, runs):
    """A version 3 jobs table lacks value and energy_j: read with NaN and 0 (these runs had
    neither), the other columns as written."""
    path = _older(tmp_path / "v3.h5", runs, 3, _old_jobs)
    back = read_results(path)
    for a, b in zip(back, runs, strict=True):
        assert np.isnan(a.jobs["value"]).all() and (a.jobs["energy_j"] == 0).all()
        assert a.jobs.tobytes() == b.jobs.tobytes()
    with pytest.raises(InputError, match="cannot append to a schema_version 3 file"):
        append_run(path, runs[0])


def test_version_4_files_keep_the_stats_they_were_written_with(tmp_path, runs):
    """Version 4 stats held the execution's counters (ranks, rounds, rollbacks): read as
    written, the tables as they are; appending to such a file is refused."""
    def v4_stats(g):
        g["stats"].attrs["ranks"], g["stats"].attrs["rounds"] = np.int64(3), np.int64(17)

    path = _older(tmp_path / "v4.h5", runs, 4, v4_stats)
    back = read_results(path)
    for a, b in zip(back, runs, strict=True):
        assert a.stats == {**b.stats, "ranks": 3, "rounds": 17}
        assert a.jobs.tobytes() == b.jobs.tobytes()
    with pytest.raises(InputError, match="cannot append to a schema_version 4 file"):
        append_run(path, runs[0])


def test_cosim_runs_keep_the_execution_out_of_results(tmp_path):
    """A run's stats in results.h5 are the simulation's (`RunStats.split`): no ranks, rounds,
    rollbacks or wall times, which stay in summary.json's execution."""
    from cosim.experiment import RunOptions, execute, tables_of
    from cosim.runner import EXECUTION_STATS

    rec = execute(RunOptions(workload=str(Path(__file__).parent.parent / "traces" /
                                          "esp-psia.swf"), hosts=16, technique="FAC2"))
    tables = tables_of(rec, "r")
    assert tables.stats == rec.summary["stats"] and tables.stats["chunk_events"] > 0
    assert set(rec.summary["execution"]) == set(EXECUTION_STATS)
    assert rec.summary["execution"]["rounds"] > 0
    assert not set(EXECUTION_STATS) & set(tables.stats)
    write_results(tmp_path / "r.h5", [tables])
    (back,) = read_results(tmp_path / "r.h5")
    assert back.stats == tables.stats


def test_a_capped_run_round_trips_with_its_power(tmp_path):
    """Values, energies, power segments and the system series survive results.h5."""
    from cosim.experiment import RunOptions, execute, tables_of
    from cosim.paths import PLATFORMS_DIR

    swf = tmp_path / "t.swf"
    swf.write_text("; MaxNodes: 4\n; CosimApp: 1 value=4 soft=2 hard=6 power_beta=0.5\n" + "".join(
        f"{i} {10 * i} -1 {50 + 7 * i} {1 + i % 3} -1 -1 {1 + i % 3} {100 + i} -1 1 -1 -1 1 "
        "-1 -1 -1 -1\n" for i in range(1, 25)))
    rec = execute(RunOptions(workload=str(swf), platform=str(PLATFORMS_DIR /
                                                            "kumbhare2048-nodes.toml"),
                             hosts=4, priority="vpe", batch="greedy", power_cap=0.5,
                             power_dynamic=True))
    run = tables_of(rec, "capped")
    assert len(run.power) and len(run.power_series)
    assert (run.jobs["value"][run.jobs["status"] == b"completed"] > 0).any()
    path = tmp_path / "results.h5"
    write_results(path, [run])
    (back,) = read_results(path)
    for name in ("jobs", "power", "power_series"):
        x, y = getattr(run, name), getattr(back, name)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name
    assert back.metrics["energy_j"] == rec.summary["energy_j"] > 0


# -- reports -------------------------------------------------------------------------------

def test_report_table(runs):
    lines = report_table(runs).splitlines()
    assert len(lines) == 1 + len(runs)
    header = lines[0]
    for col in ("run", "workload", "technique", "rca", "makespan [s]", "utilization [%]",
                "mean wait [s]", "mean slowdown", "yields [hosts]", "lends [hosts]"):
        assert col in header
    for run, line in zip(runs, lines[1:], strict=True):
        m = run.metrics
        assert line.split() == [
            run.run_id, "tiny", "STATIC", run.config["rca"], f"{m['makespan_s']:.3f}",
            f"{100 * m['utilization']:.2f}", f"{m['mean_wait_s']:.3f}",
            f"{m['mean_slowdown']:.3f}", str(m["yields"]), str(m["lends"])]
        assert len(line) <= len(header)  # right-aligned under the header
    # columns line up: every numeric cell ends where its header ends
    end = header.index("makespan [s]") + len("makespan [s]")
    assert all(line[end - 1] != " " for line in lines[1:])


def test_report_table_missing_values(runs):
    batch_only = replace(runs[0], run_id="b", config={"workload": "/x/y/kth.swf",
                                                      "technique": None},
                         metrics={"makespan_s": 1.5})
    row = report_table([batch_only]).splitlines()[1].split()
    assert row == ["b", "kth.swf", "-", "-", "1.500", "-", "-", "-", "-", "-"]


def test_report_csv(runs):
    extra = replace(runs[1], run_id="extra", metrics={**runs[1].metrics, "energy_j": 2.5,
                                                      "note": None, "hist": [1, 2]})
    text = report_csv([*runs, extra])
    rows = list(csv.DictReader(io.StringIO(text)))
    header = text.splitlines()[0].split(",")
    assert header == ["run_id", "workload", "technique", "rca", *CSV_METRICS, "energy_j",
                      "note"]
    assert tuple(CSV_METRICS) == tuple(summary((), 1))
    for run, row in zip([*runs, extra], rows, strict=True):
        assert (row["run_id"], row["rca"]) == (run.run_id, run.config["rca"])
        for key in CSV_METRICS:
            value = run.metrics[key]
            assert type(value)(row[key]) == value, key  # exact, not approximately
    assert rows[0]["energy_j"] == "" and rows[2]["energy_j"] == "2.5"
    assert rows[2]["note"] == ""
    assert report_csv([*runs, extra]) == text  # stable
    assert report_csv(runs).splitlines()[0].split(",") == header[:-2]


def test_report_from_file(tmp_path, runs):
    path = tmp_path / "results.h5"
    write_results(path, runs, chunks=True)
    back = read_results(path, chunks=False)
    assert report_table(back) == report_table(runs)
    assert report_csv(back) == report_csv(runs)


def test_module_constants():
    assert hdf5.JSON_PREFIX == "json:"
    assert [t.name for t in TABLES][:4] == list(TABLE_NAMES)
