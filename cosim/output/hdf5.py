"""``results.h5``: the runs of a command as one HDF5 file with a documented, versioned schema.

`write_results` stores `RunTables` under ``/runs/<run_id>/`` — the config, metrics and
statistics as attributes of three groups, the job table, the allocation log, the worker and
(optionally) chunk tables as compound datasets, and the busy hosts, busy PEs, running and
queued step series — with the schema name and version on the root and the software versions
(and, when given, the command line and date) in ``/provenance``, kept apart so that
everything else is a function of the runs alone: no dataset records a time stamp, and two
writes of the same runs give the same bytes. The file is built in memory (HDF5 core driver)
and written with `atomic_open`, so it appears complete or not at all; `append_run` adds one
run the same way, from an in-memory copy of the existing file. The tables' chunks are
compressed here, a thread per usable processor, into what HDF5's shuffle and deflate filters
store and read (`_compressed_chunks`: zlib streams, made with zlib's run-length strategy,
which any inflater reads), and written as they are. `read_results` and
`read_provenance` give it back exactly — schema versions 1 to 4 too, converted to today's
tables, their stats as written (`docs/results.md`) — and turn every problem of a file
(missing, not HDF5, a newer schema version, a missing dataset) into an `InputError` naming
it. Attribute values: bool, int (64-bit), float and str are stored as native HDF5 scalars;
anything else (None, lists, dicts, big ints, strings HDF5 cannot hold) as JSON text under the
key prefixed with ``json:``. The schema is ``docs/results.md``.
"""

from __future__ import annotations

import json
import os
import platform as _platform
import shlex
import zlib
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from cosim import __version__
from cosim.core.files import atomic_open
from cosim.core.workers import usable_cpus
from cosim.errors import InputError
from cosim.output.tables import (
    ALLOC_DTYPE,
    CHUNK_DTYPE,
    JOB_DTYPE,
    POWER_DTYPE,
    POWER_SERIES_DTYPE,
    ROLES,
    TUNING_DTYPE,
    WORKER_DTYPE,
    RunTables,
    step_series,
)

__all__ = ["JSON_PREFIX", "SCHEMA", "SCHEMA_VERSION", "TABLES", "Table", "append_run",
           "check_run_id", "command_provenance", "decode_attrs", "encode_attrs",
           "read_provenance", "read_results", "write_results", "write_table"]

SCHEMA = "cosim.results"
"""Value of the root attribute ``schema``: marks a file as cosim results."""

SCHEMA_VERSION = 5
"""Version of the layout written here; readers refuse newer versions and convert versions 1
to 4 (docs/results.md)."""

JSON_PREFIX = "json:"
"""Prefix of the attribute names whose value is JSON text (see `encode_attrs`)."""

CHUNK_ROWS = 16_384
"""Rows per HDF5 chunk of the compressed tables (about 1 MB of chunk rows: 60 bytes each;
3.7 MB of job rows)."""

GZIP_LEVEL = 1
"""The deflate level of the compressed tables (behind HDF5's shuffle filter), with zlib's
run-length strategy (``Z_RLE``): on a KTH-SP2 run's tables, shuffled, it makes the chunks
1.3-1.5x faster than the default strategy at this level, 1 % larger."""

# The HDF5 1.8 file format: readable by every HDF5 since 2008, holds attributes over 64 kB
# (dense storage) and creation order; pinning both bounds keeps the bytes independent of the
# HDF5 library's newest format.
_LIBVER = ("v108", "v108")
_INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Table:
    """A dataset of a run: its name, row type, the unit of each field and a description.

    units: one per field of `dtype`, in order: ``"ns"`` (integer ticks), ``"s"``, ``"PE s"``
    (PE-seconds), or ``""`` (identifiers, labels, counts and ratios). compress: chunked and
    gzip-compressed (every table of schema version 2: a 200,000-job table shrinks about
    six-fold for under a second of work). labels: ``(attribute, names)`` pairs stored as string-array attributes
    of the dataset (the names of the values of a coded field).
    """

    name: str
    dtype: np.dtype
    units: tuple[str, ...]
    description: str
    compress: bool = True
    labels: tuple[tuple[str, tuple[str, ...]], ...] = ()


UTILIZATION_DTYPE = np.dtype([("time", "<i8"), ("busy_hosts", "<i8")])
BUSY_PES_DTYPE = np.dtype([("time", "<i8"), ("busy_pes", "<i8")])
RUNNING_DTYPE = np.dtype([("time", "<i8"), ("running", "<i8")])
QUEUED_DTYPE = np.dtype([("time", "<i8"), ("queued", "<i8")])

_N = "ns"
TABLES: tuple[Table, ...] = (
    Table(name="jobs", dtype=JOB_DTYPE,
          units=("", _N, _N, _N, _N, _N, "", "", "", "", "", "", "s", "s", "", "", "", "", "",
                 "", "", "", "", "", "", "PE s", "", "J"),
          description="one row per job, by id (cosim.output.tables.JOB_DTYPE)"),
    Table(name="allocations", dtype=ALLOC_DTYPE,
          units=("", "", "", "", "", _N, _N, "", ""),
          description="the allocation log: cores core..core+pes-1 of hosts host..host+hosts-1 "
                      "used by job in [start, end) in a role (attribute roles), by (host, "
                      "start, job, core)",
          labels=(("roles", ROLES),)),
    Table(name="workers", dtype=WORKER_DTYPE, units=("", "", "", "", _N, _N),
          description="one row per PE of each app-driven job, by (job, rank)"),
    Table(name="chunks", dtype=CHUNK_DTYPE, units=("", "", "", "", "", _N, _N, _N, ""),
          description="one row per chunk of each app-driven job, by (job, assignment)"),
    Table(name="tuning", dtype=TUNING_DTYPE, units=(_N, "min", "", "", "", ""),
          description="one row per checkpoint of the metric-aware tuner: queue depth "
                      "(minutes), short- and long-term utilization, and the BF and W it set "
                      "(written only for runs with --adaptive)"),
    Table(name="power", dtype=POWER_DTYPE, units=("", _N, "W"),
          description="one row per power segment of each job under a power cap, by (job, "
                      "start): each socket of its hosts capped at watts from start on "
                      "(written only for runs with --power-cap)"),
    Table(name="power_series", dtype=POWER_SERIES_DTYPE, units=(_N, "W"),
          description="the system power (jobs and idle hosts) from each time on under a "
                      "power cap (step function; written only for runs with --power-cap)"),
    Table(name="utilization", dtype=UTILIZATION_DTYPE, units=(_N, ""),
          description="busy hosts from each time on (step function); utilization = "
                      "busy_hosts / n_hosts"),
    Table(name="running", dtype=RUNNING_DTYPE, units=(_N, ""),
          description="running jobs from each time on (step function)"),
    Table(name="queued", dtype=QUEUED_DTYPE, units=(_N, ""),
          description="queued jobs from each time on (step function)"),
    Table(name="busy_pes", dtype=BUSY_PES_DTYPE, units=(_N, ""),
          description="busy PEs from each time on (step function); PE utilization = "
                      "busy_pes / (the cores of the hosts, summed)"),
)
"""Every table dataset of a run, in file order (the hosts table is built per run)."""

_BY_NAME = {t.name: t for t in TABLES}
# step-series dataset -> (key of `step_series`, value field)
_SERIES = {"utilization": ("busy_hosts", "busy_hosts"), "running": ("running", "running"),
           "queued": ("queued", "queued"), "busy_pes": ("busy_pes", "busy_pes")}

# Schema version 1 (read and converted, never written): the jobs table without the
# malleability columns, one allocation row per (job, host) with its busy end.
_JOB_DTYPE_V1 = np.dtype([(n, JOB_DTYPE[n]) for n in JOB_DTYPE.names[:19]])
# Schema versions 2 and 3: the jobs table without the value and energy columns
_JOB_DTYPE_V3 = np.dtype([(n, JOB_DTYPE[n]) for n in JOB_DTYPE.names[:-2]])
_ALLOC_DTYPE_V1 = np.dtype([
    ("job", "<i8"), ("host", "<i4"), ("pes", "<i4"), ("owner", "<i8"),
    ("start", "<i8"), ("end", "<i8"), ("busy_end", "<i8"),
])


# -- attribute values -----------------------------------------------------------------------

def _plain(value: Any, where: str) -> Any:
    """`value` as plain JSON types; dict keys must be strings (JSON would coerce others)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: dict key {k!r} is not a string")
            out[k] = _plain(v, where)
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    raise TypeError(f"{where}: a {type(value).__name__} cannot be stored in results.h5")


def _native(value: Any) -> Any:
    """The HDF5 scalar storing `value` exactly, or None when it must go as JSON."""
    if isinstance(value, (bool, np.bool_)):
        return np.bool_(value)
    if isinstance(value, (int, np.integer)):
        return np.int64(value) if _INT64[0] <= int(value) <= _INT64[1] else None
    if isinstance(value, (float, np.floating)):
        return np.float64(value)
    if isinstance(value, str) and "\x00" not in value:
        # HDF5 strings are NUL-terminated UTF-8: lone surrogates and NULs go as JSON
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return value
    return None


def encode_attrs(attrs: h5py.AttributeManager, values: Mapping[str, Any], *,
                 where: str = "attributes") -> None:
    """Store `values` as HDF5 attributes, in order (the group tracks creation order).

    bool, int within int64, float and str become native HDF5 scalars; every other value
    (None, list, tuple, dict, bigger ints, strings with NUL or lone surrogates) becomes
    ``attrs["json:" + key] = json.dumps(value)`` (ASCII, NaN and infinities allowed); tuples
    come back as lists. Keys must be non-empty UTF-8 strings without NUL, not starting with
    ``json:`` (`ValueError`); a value of another type is a `TypeError` (both are bugs of the
    caller, not bad input).
    """
    for key, value in values.items():
        if (not isinstance(key, str) or not key or "\x00" in key
                or key.startswith(JSON_PREFIX) or _native(key) is None):
            raise ValueError(f"{where}: {key!r} cannot be an attribute name")
        native = _native(value)
        if native is not None:
            attrs[key] = native
        else:
            attrs[JSON_PREFIX + key] = json.dumps(_plain(value, f"{where} {key}"),
                                                  ensure_ascii=True)


def decode_attrs(attrs: h5py.AttributeManager) -> dict[str, Any]:
    """The mapping `encode_attrs` stored, as Python values, in creation order."""
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if key.startswith(JSON_PREFIX):
            out[key[len(JSON_PREFIX):]] = json.loads(value)
        elif isinstance(value, np.generic):
            out[key] = value.item()
        elif isinstance(value, bytes):
            out[key] = value.decode("utf-8", "replace")
        elif isinstance(value, np.ndarray):  # not written by cosim; read leniently
            out[key] = value.tolist()
        elif isinstance(value, h5py.Empty):
            out[key] = None
        else:
            out[key] = value
    return out


# -- writing --------------------------------------------------------------------------------

def check_run_id(run_id: str) -> str:
    """`run_id` if it can name a run group: a non-empty string without ``/``, control
    characters or surrounding spaces, other than ``.`` and ``..``; else `InputError`."""
    bad = (not isinstance(run_id, str) or not run_id or run_id in (".", "..")
           or "/" in run_id or run_id != run_id.strip()
           or any(ord(c) < 32 or ord(c) == 127 for c in run_id))
    if bad:
        raise InputError(f"{run_id!r} cannot name a run (non-empty, no '/', no control "
                         "characters or surrounding spaces, not '.' or '..')", field="run_id")
    return run_id


def _versions() -> dict[str, str]:
    return {"cosim": __version__, "python": _platform.python_version(),
            "numpy": np.__version__, "h5py": h5py.__version__,
            "hdf5": h5py.version.hdf5_version}


def command_provenance(argv: Sequence[str] | None = None) -> dict[str, str]:
    """Provenance of a command: its command line (when given) and the current UTC date, for
    the `provenance` argument of `write_results` (the only place a date belongs)."""
    out = {"date": datetime.now(UTC).isoformat(timespec="seconds")}
    if argv is not None:
        out["command"] = shlex.join(argv)
    return out


def _compressed_chunks(data: np.ndarray, rows: int) -> list[bytes]:
    """The chunks of `data` (`rows` rows each, the last padded with zeros, as HDF5 stores an
    edge chunk) as HDF5's shuffle then deflate filters read them: each chunk's bytes
    regrouped by their place in a row, then one zlib stream (level `GZIP_LEVEL`, run-length
    strategy). zlib leaves the interpreter lock while it compresses, so the chunks are made
    by a thread per processor this process may use."""
    size = data.dtype.itemsize
    raw = np.ascontiguousarray(data).view(np.uint8).reshape(len(data), size)

    def pack(first: int) -> bytes:
        part = raw[first:first + rows]
        if len(part) < rows:
            part = np.concatenate((part, np.zeros((rows - len(part), size), dtype=np.uint8)))
        z = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 15, 8, zlib.Z_RLE)
        return z.compress(np.ascontiguousarray(part.T)) + z.flush()

    firsts = range(0, len(data), rows)
    workers = min(len(firsts), usable_cpus())
    if workers <= 1:
        return [pack(f) for f in firsts]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(pack, firsts))


def _put(group: h5py.Group, table: Table, data: np.ndarray) -> None:
    if data.dtype != table.dtype:
        raise TypeError(f"{table.name}: dtype {data.dtype} is not {table.dtype}")
    if table.compress:
        # maxshape None lets an empty table be chunked too (a chunk may not exceed fixed dims);
        # the chunks are compressed here, in parallel, and written as they are
        rows = max(1, min(len(data), CHUNK_ROWS))
        d = group.create_dataset(table.name, shape=data.shape, dtype=data.dtype,
                                 chunks=(rows,), maxshape=(None,), compression="gzip",
                                 compression_opts=GZIP_LEVEL, shuffle=True, track_times=False)
        for k, chunk in enumerate(_compressed_chunks(data, rows)):
            d.id.write_direct_chunk((k * rows,), chunk)
    else:
        d = group.create_dataset(table.name, data=data, track_times=False)
    d.attrs["units"] = np.array(table.units, dtype=h5py.string_dtype())
    d.attrs["description"] = table.description
    for key, names in table.labels:
        d.attrs[key] = np.array(names, dtype=h5py.string_dtype())


def _hosts_table(run: RunTables) -> np.ndarray:
    names = [n.encode("utf-8") for n in run.host_names]
    if not len(names) == len(run.racks) == run.n_hosts:
        raise ValueError(f"run {run.run_id}: {run.n_hosts} hosts, {len(names)} names, "
                         f"{len(run.racks)} racks")
    width = max((len(n) for n in names), default=1) or 1
    hosts = np.zeros(run.n_hosts, dtype=[("name", f"S{width}"), ("rack", "<i4"),
                                         ("cores", "<i4")])
    hosts["name"] = names
    hosts["rack"] = run.racks
    hosts["cores"] = run.host_cores
    return hosts


def _write_run(runs: h5py.Group, run: RunTables, chunks: bool) -> None:
    g = runs.create_group(run.run_id, track_order=True)
    g.attrs["n_hosts"] = np.int64(run.n_hosts)
    try:
        common = run.cores_per_host
    except ValueError:  # the hosts differ: read hosts.cores
        common = 0
    g.attrs["cores_per_host"] = np.int64(common)
    for name, values in (("config", run.config), ("metrics", run.metrics),
                         ("stats", run.stats)):
        encode_attrs(g.create_group(name, track_order=True).attrs, values,
                     where=f"run {run.run_id} {name}")
    d = g.create_dataset("hosts", data=_hosts_table(run), track_times=False)
    d.attrs["units"] = np.array(("", "", ""), dtype=h5py.string_dtype())
    d.attrs["description"] = "one row per host: its name (UTF-8), rack and cores"
    _put(g, _BY_NAME["jobs"], run.jobs)
    _put(g, _BY_NAME["allocations"], run.allocations)
    _put(g, _BY_NAME["workers"], run.workers)
    if chunks and run.chunks is not None:
        _put(g, _BY_NAME["chunks"], run.chunks)
    if len(run.tuning):
        _put(g, _BY_NAME["tuning"], run.tuning)
    if len(run.power_series):
        _put(g, _BY_NAME["power"], run.power)
        _put(g, _BY_NAME["power_series"], run.power_series)
    series = step_series(run)
    for name, (key, value) in _SERIES.items():
        table = _BY_NAME[name]
        times, values = series[key]
        s = np.zeros(len(times), dtype=table.dtype)
        s["time"] = times
        s[value] = values
        _put(g, table, s)


def _check_new(runs: Sequence[RunTables]) -> None:
    seen: set[str] = set()
    for run in runs:
        check_run_id(run.run_id)
        if run.run_id in seen:
            raise InputError(f"run {run.run_id!r} is twice in the results", field="run_id")
        seen.add(run.run_id)


def _in_memory(name: str) -> h5py.File:
    return h5py.File(f"<memory>/{name}", "w", driver="core", backing_store=False,
                     libver=_LIBVER, track_order=True)


def _save(f: h5py.File, path: Path) -> None:
    """Write the in-memory file `f` to `path` atomically and close it."""
    f.flush()
    image = f.id.get_file_image()
    f.close()
    with atomic_open(path, "wb") as fh:
        fh.write(image)


def write_results(path: str | os.PathLike[str], runs: Sequence[RunTables], *,
                  provenance: Mapping[str, Any] | None = None, chunks: bool = False) -> None:
    """Write `runs` to the HDF5 file `path` atomically (schema: docs/results.md).

    Parameters
    ----------
    path:
        The file (usually ``results.h5``); its directory is created if needed.
    runs:
        The runs, stored and read back in this order; their run ids must be distinct valid
        names (`check_run_id`), else `InputError`.
    provenance:
        Extra ``/provenance`` attributes (e.g. `command_provenance`), over the software
        versions written always. Nothing else in the file depends on when it was written.
    chunks:
        Store each run's chunk table when it has one (compressed; the largest table).
    """
    target = Path(path)
    _check_new(runs)
    f = _in_memory(target.name)
    try:
        f.attrs["schema"] = SCHEMA
        f.attrs["schema_version"] = np.int64(SCHEMA_VERSION)
        encode_attrs(f.create_group("provenance", track_order=True).attrs,
                     {**_versions(), **(provenance or {})}, where="provenance")
        group = f.create_group("runs", track_order=True)
        for run in runs:
            _write_run(group, run, chunks)
    except BaseException:
        f.close()
        raise
    _save(f, target)


def write_table(path: str | os.PathLike[str], name: str,
                columns: Mapping[str, Sequence[Any]]) -> None:
    """A table as the group `name` of a new HDF5 file at `path`, atomically: one dataset per
    column, in order — int64 where every value is an integer, float64 where every value is a
    number (NaN for a missing one), UTF-8 text otherwise ("" for a missing value)."""
    target = Path(path)
    f = _in_memory(target.name)
    try:
        f.attrs["schema"] = f"cosim.{name}"
        f.attrs["schema_version"] = np.int64(1)
        group = f.create_group(name, track_order=True)
        for key, values in columns.items():
            numbers = [v for v in values if v is not None]
            if all(isinstance(v, int) and not isinstance(v, bool) for v in numbers) \
                    and len(numbers) == len(values):
                data = np.array(values, dtype=np.int64)
            elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers):
                data = np.array([np.nan if v is None else float(v) for v in values])
            else:
                data = np.array(["" if v is None else str(v) for v in values],
                                dtype=h5py.string_dtype())
            group.create_dataset(key, data=data)
    except BaseException:
        f.close()
        raise
    _save(f, target)


def append_run(path: str | os.PathLike[str], run: RunTables, *,
               provenance: Mapping[str, Any] | None = None, chunks: bool = False) -> None:
    """Add `run` to the results file `path`, atomically; create the file if missing.

    The existing file must be a results file of this schema version (`InputError`
    otherwise) without a run of the same id (`InputError`). Its provenance is kept;
    `provenance` is used only when the file is created. The whole file is rewritten (from an
    in-memory copy), so a long command appending run after run pays O(file size) each time.
    Not for concurrent writers: of two processes appending at once, the last rename wins, so
    one process (rank 0) should do all the appending.
    """
    target = Path(path)
    check_run_id(run.run_id)
    if not target.exists():
        write_results(target, [run], provenance=provenance, chunks=chunks)
        return
    try:
        image = target.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", file=target) from None
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_fapl_core(backing_store=False)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_V18, h5py.h5f.LIBVER_V18)
    fapl.set_file_image(image)
    try:
        f = h5py.File(h5py.h5f.open(f"<memory>/{target.name}".encode(), h5py.h5f.ACC_RDWR,
                                    fapl))
    except OSError:
        raise InputError("not a readable HDF5 file", file=target) from None
    try:
        _check_schema(f, target, append=True)
        group = _group(f, "runs", target)
        if run.run_id in group:
            raise InputError(f"run {run.run_id!r} is already in the file", file=target,
                             field="run_id")
        _write_run(group, run, chunks)
    except BaseException:
        f.close()
        raise
    _save(f, target)


# -- reading --------------------------------------------------------------------------------

@contextmanager
def _open(path: str | os.PathLike[str]) -> Iterator[tuple[h5py.File, Path]]:
    """The results file at `path`, open for reading, schema checked; errors as InputError."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file", file=p)
    if p.is_dir():
        raise InputError("is a directory, not a results file", file=p)
    try:
        f = h5py.File(p, "r")
    except OSError as exc:
        try:
            hdf5 = h5py.is_hdf5(p)
        except OSError:
            hdf5 = False
        if not hdf5:
            raise InputError("not an HDF5 file", file=p) from None
        raise InputError(f"cannot read the HDF5 file ({exc})", file=p) from None
    try:
        _check_schema(f, p)
        yield f, p
    except OSError as exc:  # a damaged file: HDF5 fails on the object it cannot read
        raise InputError(f"cannot read the HDF5 file ({exc})", file=p) from None
    finally:
        f.close()


def _check_schema(f: h5py.File, path: Path, *, append: bool = False) -> None:
    schema, version = f.attrs.get("schema"), f.attrs.get("schema_version")
    if schema is None or version is None:
        raise InputError("not a cosim results file (no schema/schema_version attribute)",
                         file=path)
    if schema != SCHEMA:
        raise InputError(f"not a cosim results file (schema {schema!r})", file=path)
    if not isinstance(version, np.integer) or version < 1:
        raise InputError(f"unknown schema_version {version!r}", file=path)
    if version > SCHEMA_VERSION:
        raise InputError(f"schema_version {int(version)} is newer than this cosim reads "
                         f"({SCHEMA_VERSION}); upgrade cosim", file=path)
    if append and version != SCHEMA_VERSION:
        raise InputError(f"cannot append to a schema_version {int(version)} file (this cosim "
                         f"writes {SCHEMA_VERSION})", file=path)


def _group(parent: h5py.Group, name: str, path: Path) -> h5py.Group:
    g = parent.get(name)
    if not isinstance(g, h5py.Group):
        raise InputError(f"missing group {parent.name.rstrip('/')}/{name}", file=path)
    return g


def _attrs(parent: h5py.Group, name: str, path: Path) -> dict[str, Any]:
    g = _group(parent, name, path)
    try:
        return decode_attrs(g.attrs)
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise InputError(f"bad JSON attribute in {g.name} ({exc})", file=path) from None


def _int_attr(g: h5py.Group, name: str, path: Path) -> int:
    value = g.attrs.get(name)
    if not isinstance(value, np.integer):
        raise InputError(f"missing integer attribute {name} of {g.name}", file=path)
    return int(value)


def _table(g: h5py.Group, name: str, dtype: np.dtype, path: Path) -> np.ndarray:
    """Dataset `name` of `g` as an array of `dtype`; fields the reader does not know are
    dropped (a newer writer may add some), missing or unconvertible ones are an error."""
    d = g.get(name)
    if not isinstance(d, h5py.Dataset):
        raise InputError(f"missing dataset {g.name}/{name}", file=path)
    names = d.dtype.names or ()
    missing = [n for n in dtype.names if n not in names]
    if d.ndim != 1 or missing:
        raise InputError(f"dataset {d.name} is not a table of {', '.join(dtype.names)}"
                         + (f" (missing {', '.join(missing)})" if missing else ""), file=path)
    data = d[()]
    if data.dtype == dtype:
        return data
    out = np.empty(len(data), dtype=dtype)
    try:
        for n in dtype.names:
            out[n] = data[n]
    except (ValueError, TypeError) as exc:
        raise InputError(f"dataset {d.name}: {exc}", file=path) from None
    return out


def _allocations_v1(old: np.ndarray) -> np.ndarray:
    """A version 1 allocation table as an allocation log.

    A v1 row ``(job, host, pes, owner, start, end, busy_end)`` becomes a busy row on cores
    ``0 .. pes-1`` of its host over ``[start, busy_end)`` (``own``, or ``borrowed`` when the
    owner is another job) and ``yielded`` rows over its tail ``[busy_end, end)`` minus the
    times a later-started row of another job runs on the host (v1 traces showed the tail only
    there). One host per row.
    """
    busy_end = np.minimum(np.maximum(old["busy_end"], old["start"]), old["end"])
    keep = busy_end > old["start"]
    b = old[keep]
    out = [np.zeros(len(b), dtype=ALLOC_DTYPE)]
    for n in ("job", "host", "pes", "start", "owner"):
        out[0][n] = b[n]
    out[0]["hosts"] = 1
    out[0]["end"] = busy_end[keep]
    out[0]["role"] = np.where(b["owner"] == b["job"], ROLES.index("own"),
                              ROLES.index("borrowed"))
    tails = []
    host = old["host"]
    for i in np.flatnonzero(busy_end < old["end"]).tolist():
        r = old[i]
        h, t, end = int(r["host"]), int(busy_end[i]), int(r["end"])
        lo, hi = np.searchsorted(host, h, side="left"), np.searchsorted(host, h, side="right")
        for y in old[lo:hi]:  # v1 rows are sorted by (host, start, job)
            if y["start"] <= r["start"] or y["start"] >= end or y["end"] <= t:
                continue
            if y["start"] > t:
                tails.append((r["job"], h, 1, 0, r["pes"], t, y["start"],
                              ROLES.index("yielded"), r["owner"]))
            t = max(t, int(y["end"]))
        if end > t:
            tails.append((r["job"], h, 1, 0, r["pes"], t, end, ROLES.index("yielded"),
                          r["owner"]))
    out.append(np.array(tails, dtype=ALLOC_DTYPE))
    a = np.concatenate(out)
    return a[np.lexsort((a["core"], a["job"], a["start"], a["host"]))]


def _jobs_v3(old: np.ndarray) -> np.ndarray:
    """A version 2 or 3 jobs table with the columns of version 4: no value (NaN) and no
    energy (0): those versions had no value- or power-aware runs to record."""
    jobs = np.zeros(len(old), dtype=JOB_DTYPE)
    for n in old.dtype.names:
        jobs[n] = old[n]
    jobs["value"] = np.nan
    return jobs


def _jobs_v1(old: np.ndarray, alloc_v1: np.ndarray) -> np.ndarray:
    """A version 1 jobs table with the columns of version 2: every job rigid (v1 had no
    resizes), pe_seconds from the v1 allocations' busy parts."""
    jobs = np.zeros(len(old), dtype=JOB_DTYPE)
    for n in old.dtype.names:
        jobs[n] = old[n]
    ran = jobs["start"] >= 0
    jobs["kind"] = b"rigid"
    jobs["min_pes"] = jobs["max_pes"] = jobs["pes"]
    jobs["pes_start"] = np.where(ran, jobs["pes"], 0)
    a = alloc_v1
    busy = np.maximum(np.minimum(a["busy_end"], a["end"]) - a["start"], 0)
    pe_ticks = np.zeros(len(jobs), dtype=np.float64)
    np.add.at(pe_ticks, np.searchsorted(jobs["id"], a["job"]),
              (a["pes"] * busy).astype(np.float64))
    jobs["pe_seconds"] = pe_ticks / 1e9
    jobs["value"] = np.nan
    return jobs


def _read_run(g: h5py.Group, path: Path, chunks: bool, version: int = SCHEMA_VERSION
              ) -> RunTables:
    n_hosts = _int_attr(g, "n_hosts", path)
    hosts = g.get("hosts")
    fields = ("name", "rack") + (("cores",) if version >= 3 else ())
    if not isinstance(hosts, h5py.Dataset) or hosts.dtype.names != fields:
        raise InputError(f"missing dataset {g.name}/hosts ({', '.join(fields)})", file=path)
    h = hosts[()]
    if len(h) != n_hosts:
        raise InputError(f"{g.name}/hosts has {len(h)} rows for n_hosts = {n_hosts}",
                         file=path)
    # versions 1 and 2 had equal hosts, their cores in the attribute
    cores = (h["cores"].astype(np.int32) if version >= 3 else
             np.full(n_hosts, _int_attr(g, "cores_per_host", path), dtype=np.int32))
    try:
        names = tuple(n.decode("utf-8") for n in h["name"])
    except UnicodeDecodeError:
        raise InputError(f"{g.name}/hosts: a host name is not UTF-8", file=path) from None
    if version == 1:
        alloc_v1 = _table(g, "allocations", _ALLOC_DTYPE_V1, path)
        tables = {"jobs": _jobs_v1(_table(g, "jobs", _JOB_DTYPE_V1, path), alloc_v1),
                  "allocations": _allocations_v1(alloc_v1)}
    else:
        tables = {name: _table(g, name, _BY_NAME[name].dtype, path)
                  for name in ("jobs", "allocations")
                  if version >= 4 or name != "jobs"}
    if version in (2, 3):
        tables["jobs"] = _jobs_v3(_table(g, "jobs", _JOB_DTYPE_V3, path))
    tables["workers"] = _table(g, "workers", WORKER_DTYPE, path)
    chunk_table = _BY_NAME["chunks"]
    has_chunks = chunks and chunk_table.name in g
    if "tuning" in g:
        tables["tuning"] = _table(g, "tuning", TUNING_DTYPE, path)
    for name, dtype in (("power", POWER_DTYPE), ("power_series", POWER_SERIES_DTYPE)):
        if name in g:
            tables[name] = _table(g, name, dtype, path)
    return RunTables(
        run_id=g.name.rsplit("/", 1)[-1],
        config=_attrs(g, "config", path), metrics=_attrs(g, "metrics", path),
        stats=_attrs(g, "stats", path), n_hosts=n_hosts,
        host_cores=cores, host_names=names,
        racks=h["rack"].astype(np.int32), **tables,
        chunks=_table(g, chunk_table.name, chunk_table.dtype, path) if has_chunks else None,
    )


def read_results(path: str | os.PathLike[str], *, chunks: bool = True) -> list[RunTables]:
    """The runs of the results file `path`, in the order they were written.

    Exact round trip of `write_results`: the same arrays and dtypes, configs, metrics and
    statistics (tuples come back as lists, numpy scalars as Python scalars). `chunks` False
    skips the chunk tables (often most of the file) and gives ``chunks=None``. The step
    series are not read (`cosim.output.tables.step_series` recomputes them). A schema
    version 1 file is converted (docs/results.md): its jobs get the version 2 columns (every
    job rigid, never resized) and its allocations become an allocation log; the hosts of a
    version 1 or 2 file get their cores from ``cores_per_host``, the jobs of a version 1 to
    3 file no value (NaN) and no energy. Any problem of the file is an `InputError` naming
    it.
    """
    out = []
    with _open(path) as (f, p):
        version = int(f.attrs["schema_version"])
        for g in _group(f, "runs", p).values():
            if not isinstance(g, h5py.Group):
                raise InputError(f"{g.name} is not a run group", file=p)
            out.append(_read_run(g, p, chunks, version))
    return out


def read_provenance(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``/provenance`` attributes of the results file `path` (software versions, and
    the command line and date when they were given)."""
    with _open(path) as (f, p):
        return _attrs(f, "provenance", p)
