"""A buffered low-level OTF2 writer: the fast path of the trace output (DESIGN §12).

`Otf2Writer` opens a fresh archive in a temporary sibling directory of the target, lets the
caller create definitions through the `otf2` package's registry (`Otf2Writer.defs`), buffers
events per registered location as plain tuples, and writes them through libotf2 calls bound
once with ctypes (the `otf2` package re-binds ``argtypes`` on every call, which caps it near
0.2 M events/s), or, where it was built, through a C loop calling the same functions by
address (`cosim/output/_events.c`, ~10 M events/s; the ctypes loop is its reference, and the
archives are byte-identical); the registered locations' files are made ahead of libotf2 on a
thread (`_files_ahead`: creating files may cost more than writing them). Before writing,
each location's buffer is sorted by time with a stable sort, so events keep their insertion
order at equal ticks (a Leave appended before an Enter stays before it); `flush` writes everything buffered, or only events before a watermark, to bound
memory. Metric samples are written the same way (their values packed as OTF2 metric words
when made); rare records (ProgramBegin, ProgramEnd) go through the package's own event writer
in the same sorted stream. `close` writes the definitions, then renames the directory
into place; an existing trace at the target is removed only then, so an interrupted write
never leaves a half trace under the final name, and a writer is never opened on an existing
archive (which would corrupt it). Ticks must be integers in [0, 2**64); ticks, UINT64
attribute values and message lengths are range-checked (libotf2 would wrap them silently). Nesting and message matching are not checked
here: `cosim.testing.tracecheck` does that on the archive read back.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import struct
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import _otf2
import otf2
from _otf2.Config import conf
from otf2 import events as _ev
from otf2.enums import Type as _Type

from cosim.core.clock import TICKS_PER_SECOND
from cosim.core.files import write_error
from cosim.errors import InputError, OutputError

__all__ = ["ARCHIVE_NAME", "EVENT_KERNEL", "Event", "Otf2Writer", "WriteStats", "event_kind",
           "is_trace_dir",
           "make_enter", "make_leave", "make_metric", "make_program_begin", "make_program_end",
           "make_recv", "make_send", "metric_types"]

ARCHIVE_NAME = "traces"
"""Archive name inside a trace directory: ``DIR/traces.otf2`` is the anchor file."""

_U32_MAX = (1 << 32) - 1
_U64_MAX = (1 << 64) - 1

_time = itemgetter(0)


def _raw(name: str) -> Any:
    # item access returns a new function object each time (attribute access would share the
    # one the package re-configures on every call). No argtypes: with the handles passed as
    # c_void_p and the 64-bit arguments in reused c_uint64 objects, a call costs ~30 % less
    # than with argtypes; the other arguments are Python ints passed as C ints, which keeps
    # the low 32 bits: exact for the uint32 refs, ranks and tags (checked < 2**32 on entry)
    fn = conf.lib[name]
    fn.restype = ctypes.c_int
    return fn


_R_ENTER = _raw("OTF2_EvtWriter_Enter")  # (writer, attributes, tick, region)
_R_LEAVE = _raw("OTF2_EvtWriter_Leave")
_R_SEND = _raw("OTF2_EvtWriter_MpiSend")  # (writer, attributes, tick, peer, comm, tag, length)
_R_RECV = _raw("OTF2_EvtWriter_MpiRecv")
_R_ADD_U64 = _raw("OTF2_AttributeList_AddUint64")  # (list, attribute, value)
# (writer, attributes, tick, metric, n, uint8 type ids[n], 8-byte metric values[n])
_R_METRIC = _raw("OTF2_EvtWriter_Metric")
_DOUBLE_BITS = struct.Struct("=d")
_WORD = struct.Struct("=Q")
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_DOUBLE, _UINT64, _INT64 = _Type.DOUBLE.value, _Type.UINT64.value, _Type.INT64.value
# the second item of a buffered event (tick, kind, ...) says what it is. Strings, compared by
# identity: a tuple holding only strs and ints is untracked by the cyclic garbage collector,
# which otherwise spends more time walking a million buffered events than writing them
_ENTER, _ENTER_ATTRS, _LEAVE, _SEND, _RECV, _METRIC, _OBJ = (
    "enter", "enter+attributes", "leave", "send", "recv", "metric", "object")

try:  # the compiled event loop (setup.py builds it where a C compiler is)
    from cosim.output import _events
except ImportError:  # pragma: no cover - an install without a C compiler
    _events = None

#: what writes the buffered events: "compiled" (cosim/output/_events.c) or "python"
EVENT_KERNEL = "compiled" if _events is not None else "python"
# what the compiled loop calls, in its order: libotf2's functions by address, the event kinds
_FUNCTIONS = tuple(ctypes.cast(f, ctypes.c_void_p).value
                   for f in (_R_ENTER, _R_LEAVE, _R_SEND, _R_RECV, _R_ADD_U64, _R_METRIC))
_KINDS = (_ENTER, _LEAVE, _SEND, _RECV, _ENTER_ATTRS, _METRIC)


# libotf2's chunk allocator callbacks, bound with the C signatures of OTF2_Callbacks.h (the
# package declares them without their first argument, the user data)
_ALLOCATE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint8, ctypes.c_uint64,
                             ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint64)
_FREE_ALL = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint8, ctypes.c_uint64,
                             ctypes.POINTER(ctypes.c_void_p), ctypes.c_bool)


class _ChunkPool:
    """The memory of libotf2's buffer chunks, recycled within one archive.

    libotf2 mallocs a chunk per buffer and fills it; glibc may serve a 256 KiB chunk by
    ``mmap`` and unmap it at ``free`` (it depends on the heap's history), so a location could
    pay ~130 page faults per buffer. Here a buffer's chunks come from a free list and return
    to it when libotf2 frees the buffer (``free_all``): an archive touches fresh pages only for
    the chunks alive at once (two, as locations are closed one by one). A buffer's chunks are
    found by the id stored in the buffer's own slot (``perBufferData``)."""

    #: chunks one buffer may hold (what libotf2's own allocator allows, 128 MiB): past it
    #: `_allocate` says no, and libotf2 writes the buffer to its file and frees its chunks
    BUFFER_BYTES = 128 << 20

    def __init__(self) -> None:
        self._spare: dict[int, list[Any]] = {}  # chunk size -> free chunks
        self._held: dict[int, list[Any]] = {}  # buffer id -> its chunks
        self._next_id = 1
        self._allocate_fp = _ALLOCATE(self._allocate)
        self._free_all_fp = _FREE_ALL(self._free_all)
        # libotf2 keeps a pointer to this struct: it lives as long as the pool
        self.callbacks = _otf2.MemoryCallbacks()
        self.callbacks.allocate = ctypes.cast(self._allocate_fp,
                                              type(self.callbacks.allocate))
        self.callbacks.free_all = ctypes.cast(self._free_all_fp,
                                              type(self.callbacks.free_all))

    def _allocate(self, _data: Any, _ftype: int, _loc: int, slot: Any, size: int) -> int | None:
        key = slot[0]
        if not key:
            key = slot[0] = self._next_id
            self._next_id += 1
        held = self._held.setdefault(key, [])
        if len(held) * size >= self.BUFFER_BYTES:
            return None  # NULL: libotf2 flushes this buffer to disk and frees its chunks
        spare = self._spare.get(size)
        chunk = spare.pop() if spare else ctypes.create_string_buffer(size)
        held.append(chunk)
        return ctypes.addressof(chunk)

    def _free_all(self, _data: Any, _ftype: int, _loc: int, slot: Any, final: bool) -> None:
        key = slot[0]
        for chunk in self._held.pop(key, []) if key else ():
            self._spare.setdefault(len(chunk), []).append(chunk)
        if final:
            slot[0] = None


class _ClosedLocation:
    """Stands for a location's event writer already closed (see `Otf2Writer._close_location`):
    closing it again is a no-op."""

    def close(self) -> None:
        pass


_CLOSED = _ClosedLocation()


def is_trace_dir(path: str | os.PathLike[str]) -> bool:
    """True when `path` is a directory holding an OTF2 anchor file (``traces.otf2``)."""
    p = Path(path)
    return p.is_dir() and (p / f"{ARCHIVE_NAME}.otf2").is_file()


Event = tuple
"""A buffered event: a tuple whose item 0 is its tick, made by the ``make_*`` functions (the
rest is private to this module)."""


def make_enter(t: int, region: Any, attrs: Sequence[tuple[Any, int]] | None = None) -> Event:
    """Enter `region` (an `otf2` Region) at tick `t`; `attrs`: optional ``(Attribute, value)``
    pairs of UINT64 attributes (values checked: libotf2 would wrap them silently)."""
    if not 0 <= t <= _U64_MAX:
        _tick_error(t)
    if attrs:
        flat = [t, _ENTER_ATTRS, region._ref]
        for k, v in attrs:
            if v.__class__ is not int or not 0 <= v <= _U64_MAX:
                _u64_error(attrs)
            flat += (k._ref, v)
        # one flat tuple (tick, kind, region, attribute, value, ...): every tuple that lives
        # in a buffer adds to the garbage collector's work until it is untracked
        return tuple(flat)
    return (t, _ENTER, region._ref)


def _tick_error(t: Any) -> None:
    raise ValueError(f"negative tick {t}" if t < 0 else f"tick {t} past 64 bits")


def make_leave(t: int, region: Any) -> Event:
    """Leave `region` at tick `t`."""
    if not 0 <= t <= _U64_MAX:
        _tick_error(t)
    return (t, _LEAVE, region._ref)


def make_send(t: int, receiver: int, comm: Any, tag: int, length: int) -> Event:
    """MpiSend at tick `t` (on the sender's location) to rank `receiver` of `comm` (a Comm)."""
    if not (0 <= t <= _U64_MAX and 0 <= receiver <= _U32_MAX and 0 <= tag <= _U32_MAX
            and 0 <= length <= _U64_MAX):
        raise ValueError(f"bad MpiSend (tick, receiver, tag, length) {(t, receiver, tag, length)}")
    return (t, _SEND, receiver, comm._ref, tag, length)


def make_recv(t: int, sender: int, comm: Any, tag: int, length: int) -> Event:
    """MpiRecv at tick `t` (on the receiver's location) from rank `sender` of `comm`."""
    if not (0 <= t <= _U64_MAX and 0 <= sender <= _U32_MAX and 0 <= tag <= _U32_MAX
            and 0 <= length <= _U64_MAX):
        raise ValueError(f"bad MpiRecv (tick, sender, tag, length) {(t, sender, tag, length)}")
    return (t, _RECV, sender, comm._ref, tag, length)


def event_kind(event: Event) -> str:
    """``"enter"``, ``"leave"``, ``"send"``, ``"recv"`` or ``"other"`` (metric, program)."""
    f = event[1]
    if f is _ENTER_ATTRS:
        return "enter"
    return f if f in (_ENTER, _LEAVE, _SEND, _RECV) else "other"


def _obj(event: Any) -> Event:
    t = event.time
    if not isinstance(t, int) or t < 0:
        raise ValueError(f"tick {t!r}: ticks are ints >= 0")
    return (t, _OBJ, event)


def metric_types(metric: Any) -> tuple[int, ...]:
    """The type ids of `metric`'s members (ints: the package's enums compare slowly)."""
    return tuple([m.value_type.value for m in metric.members])


def make_metric(t: int, metric: Any, values: Sequence[float | int],
                types: tuple[int, ...] | None = None) -> Event:
    """A Metric sample of `metric` (MetricClass or MetricInstance) at tick `t`, one value per
    member, written on the metric's recorder location. Values are checked against their
    member's type here (a UINT64 or INT64 out of range, or a non-integer for them, is an
    error: libotf2 would wrap it) and packed as the 8-byte words libotf2 takes. `types`:
    `metric_types(metric)`, when the caller keeps it."""
    if t.__class__ is not int or t < 0:
        raise ValueError(f"tick {t!r}: ticks are ints >= 0")
    members = metric.members
    if len(values) != len(members):
        raise ValueError(f"a metric sample of {len(values)} values for "
                         f"{len(members)} members")
    if types is None:
        types = metric_types(metric)
    words = []
    for v, vt, m in zip(values, types, members):
        if vt == _DOUBLE:
            words.append(_WORD.unpack(_DOUBLE_BITS.pack(float(v)))[0])
        elif vt == _UINT64 and v.__class__ is int and 0 <= v <= _U64_MAX:
            words.append(v)
        elif vt == _INT64 and v.__class__ is int and _I64_MIN <= v <= _I64_MAX:
            words.append(v & _U64_MAX)
        else:
            raise ValueError(f"metric member {m.name!r} ({m.value_type!r}): bad value {v!r}")
    return (t, _METRIC, metric._ref, types, tuple(words))


def make_program_begin(t: int, name: str, args: Sequence[str] = ()) -> Event:
    """ProgramBegin at tick `t` (at most once per location group)."""
    return _obj(_ev.ProgramBegin(t, name, list(args)))


def make_program_end(t: int, status: int = 0) -> Event:
    """ProgramEnd at tick `t`."""
    return _obj(_ev.ProgramEnd(t, status))


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteStats:
    """What `Otf2Writer.close` wrote: the trace directory, events and locations."""

    path: Path
    events: int
    locations: int


class Otf2Writer:
    """A new OTF2 archive at `path` (a directory), written through buffers (module docstring).

    Parameters
    ----------
    path:
        The trace directory to create (``path/traces.otf2`` is the anchor). An existing trace
        directory there is replaced when the new one is complete; an empty directory is
        replaced too; anything else (a file, a directory with other content) is an
        `InputError`, checked before anything is written.
    timer_resolution:
        Ticks per second of the event times (default: ns ticks, 1e9).
    creator, description:
        Stored in the anchor file.
    realtime_s:
        The wall-clock date (Unix seconds) of tick 0 in the clock properties. The package would
        store the host's clock at the first event; a fixed date keeps traces reproducible.
    chunk_size_events, chunk_size_definitions:
        libotf2 chunk sizes; closing a location costs time proportional to them (256 KiB, the
        smallest allowed, halves the close time of 1 MiB event chunks; a 256 KiB definition
        chunk holds the definitions of ~25,000 locations, docs/reference/otf2.md §8.2).

    Use as a context manager (closes on success, aborts and removes the temporary directory
    on an exception), or call `close` / `abort` yourself.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timer_resolution: int = TICKS_PER_SECOND,
        creator: str = "cosim",
        description: str = "",
        realtime_s: float = 0.0,
        chunk_size_events: int = 256 << 10,
        chunk_size_definitions: int = 256 << 10,
    ) -> None:
        target = Path(path)
        if target.exists() and not (is_trace_dir(target) or _empty_dir(target)):
            raise InputError("exists and is not an OTF2 trace directory; not replacing it",
                             file=target)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.",
                                        suffix=".tmp"))
        except OSError as exc:
            raise write_error(exc, target) from None
        self.path = target
        self._tmp = tmp
        self._err = tempfile.TemporaryFile()  # libotf2's stderr (`_libotf2`)
        self._realtime_s = float(realtime_s)
        self._pool = _ChunkPool()
        try:
            self._trace = otf2.writer.Writer(str(tmp), archive_name=ARCHIVE_NAME,
                                             timer_resolution=timer_resolution,
                                             chunk_size_events=chunk_size_events,
                                             chunk_size_definitions=chunk_size_definitions,
                                             memory_callbacks=self._pool.callbacks,
                                             memory_data=None)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        # the archive holds its pool: libotf2 calls into it until the archive is closed, which
        # may be the package's __del__ when a writer is dropped unclosed
        self._trace._cosim_chunk_pool = self._pool
        self._trace.creator = creator
        if description:
            self._trace.description = description
        self._locs: list[Any] = []  # otf2 Location per registered index
        self._bufs: list[list[tuple]] = []
        self._handles: list[Any] = []  # event writer handle per index, made at first flush
        self._last: list[int] = []  # last tick written per index (-1: none)
        self._attr_list: Any = None
        self._finished: set[int] = set()  # locations closed by `finish`
        self._written = 0
        self._closed = False
        self._ahead: threading.Thread | None = None  # `_files_ahead`, once started
        self._metric_types: dict[int, tuple[int, ...]] = {}  # `metric_types` by id(metric)
        self._ahead_checked = False

    # -- definitions -----------------------------------------------------------------------

    @property
    def defs(self) -> Any:
        """The `otf2` definition registry of the archive (create definitions through it)."""
        return self._trace.definitions

    def add_location(self, location: Any) -> int:
        """Register an `otf2` Location for events; returns its index for the event calls."""
        if any(loc._ref == location._ref for loc in self._locs):
            raise ValueError(f"location {location.name!r} is already registered")
        self._locs.append(location)
        self._bufs.append([])
        self._handles.append(None)
        self._last.append(-1)
        return len(self._locs) - 1

    # -- events (buffered) -----------------------------------------------------------------

    def add(self, loc: int, event: Event) -> None:
        """Buffer one event (made by a ``make_*`` function) on location index `loc`."""
        self._bufs[loc].append(event)

    def extend(self, loc: int, events: Iterable[Event]) -> None:
        """Buffer events (made by ``make_*`` functions) on location index `loc`, in order."""
        self._bufs[loc].extend(events)

    def enter(self, loc: int, t: int, region: Any,
              attrs: Sequence[tuple[Any, int]] | None = None) -> None:
        """Buffer `make_enter` (t, region, attrs) on location index `loc`."""
        self._bufs[loc].append(make_enter(t, region, attrs))

    def leave(self, loc: int, t: int, region: Any) -> None:
        """Buffer `make_leave` (t, region) on location index `loc`."""
        self._bufs[loc].append(make_leave(t, region))

    def send(self, loc: int, t: int, receiver: int, comm: Any, tag: int, length: int) -> None:
        """Buffer `make_send` on the sender's location index `loc`."""
        self._bufs[loc].append(make_send(t, receiver, comm, tag, length))

    def recv(self, loc: int, t: int, sender: int, comm: Any, tag: int, length: int) -> None:
        """Buffer `make_recv` on the receiver's location index `loc`."""
        self._bufs[loc].append(make_recv(t, sender, comm, tag, length))

    def metric(self, loc: int, t: int, metric: Any, values: Sequence[float | int]) -> None:
        """Buffer `make_metric` on location index `loc` (the metric's recorder)."""
        types = self._metric_types.get(id(metric))
        if types is None:  # (the registry keeps the metric, and so its id, alive)
            types = self._metric_types[id(metric)] = metric_types(metric)
        self._bufs[loc].append(make_metric(t, metric, values, types))

    def program_begin(self, loc: int, t: int, name: str, args: Sequence[str] = ()) -> None:
        """Buffer `make_program_begin` on location index `loc`."""
        self._bufs[loc].append(make_program_begin(t, name, args))

    def program_end(self, loc: int, t: int, status: int = 0) -> None:
        """Buffer `make_program_end` on location index `loc`."""
        self._bufs[loc].append(make_program_end(t, status))

    # -- writing ---------------------------------------------------------------------------

    def flush(self, locs: Iterable[int] | None = None, upto: int | None = None) -> int:
        """Write the buffered events of `locs` (default: all) with a tick before `upto`
        (default: all of them); returns the number written. Events appended later to a
        location must not be earlier than what was written there (ValueError at the flush
        that finds them)."""
        n = 0
        with self._libotf2():
            for i in range(len(self._bufs)) if locs is None else locs:
                n += self._flush_one(i, upto)
        return n

    @contextlib.contextmanager
    def _libotf2(self) -> Iterator[None]:
        """Run libotf2 calls with the process's stderr (fd 2) caught: libotf2 reports its
        errors there, a line per failed buffer write (1,952 lines on a full disk), and a
        failed write is not always an error code. Its ``[OTF2] ... error`` lines become one
        `OutputError` (the archive is then discarded by the caller); anything else caught is
        written back to stderr."""
        sys.stderr.flush()
        err = self._err
        start = err.seek(0, os.SEEK_END)
        saved = os.dup(2)
        try:
            os.dup2(err.fileno(), 2)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            err.seek(start)
            caught = err.read().decode("utf-8", errors="replace").splitlines()
            errors = [ln for ln in caught if ln.startswith("[OTF2]") and ": error: " in ln]
            for line in caught:
                if line not in errors:
                    print(line, file=sys.stderr)
        if errors:
            problem = errors[0].split(": error: ", 1)[1].split(":", 1)[0]
            raise OutputError(f"cannot write the trace ({problem}; libotf2 reported "
                              f"{len(errors)} error line(s))", file=self.path)

    def _files_ahead(self) -> None:
        """Make the registered locations' files (local definitions and events, in location
        order) on a thread, ahead of libotf2, which creates two per location when it closes
        one: creating files is the slow part of writing them on some file systems (0.03 to
        0.4 s for the main job's 516 here), and on the thread it overlaps with building and
        writing the events. The thread holds no interpreter lock (`_events.create_files`) and
        never truncates, so libotf2 and it may reach a file in either order. Started at the
        first write, once; nothing without the compiled module."""
        self._ahead_checked = True
        if _events is None or len(self._locs) < 2:
            return
        folder = self._tmp / ARCHIVE_NAME
        try:
            folder.mkdir(mode=0o777, exist_ok=True)  # as libotf2 makes it
        except OSError:
            return  # libotf2 reports what is wrong when it gets there
        paths = [os.fsencode(folder / f"{loc._ref}.{ext}") for loc in self._locs
                 for ext in ("def", "evt")]
        self._ahead = threading.Thread(target=_events.create_files, args=(paths,),
                                       name="cosim-otf2-files", daemon=True)
        self._ahead.start()

    def _join_ahead(self) -> None:
        if self._ahead is not None:
            self._ahead.join()
            self._ahead = None

    def _flush_one(self, i: int, upto: int | None) -> int:
        if not self._ahead_checked:
            self._files_ahead()
        buf = self._bufs[i]
        if not buf:
            return 0
        buf.sort(key=_time)  # stable: equal ticks keep insertion order
        if upto is not None:
            k = _bisect_time(buf, upto)
            if k == 0:
                return 0
            todo, self._bufs[i] = buf[:k], buf[k:]
        else:
            todo, self._bufs[i] = buf, []
        first, last = todo[0][0], todo[-1][0]
        if first < self._last[i]:
            raise ValueError(f"location {self._locs[i].name!r}: event at tick {first} after "
                             f"events up to tick {self._last[i]} were written")
        h = self._handles[i]
        if h is None:
            ew = self._trace.event_writer_from_location(self._locs[i])
            h = self._handles[i] = ew.handle
        if self._attr_list is None:
            self._attr_list = _otf2.AttributeList_New()
        al = self._attr_list
        hv = ctypes.cast(h, ctypes.c_void_p)
        alv = ctypes.cast(al, ctypes.c_void_p)
        tick, u64 = ctypes.c_uint64(0), ctypes.c_uint64(0)
        r_enter, r_leave, r_send, r_recv, r_add = _R_ENTER, _R_LEAVE, _R_SEND, _R_RECV, _R_ADD_U64
        k_enter, k_leave, k_send, k_recv, k_attrs = _ENTER, _LEAVE, _SEND, _RECV, _ENTER_ATTRS
        r_metric, k_metric, u8s, u64s = _R_METRIC, _METRIC, ctypes.c_uint8, ctypes.c_uint64

        def write(ev: Event) -> int:
            """Write one event (the reference of the compiled loop); 1 for a record of the
            package's own (it counts those itself), else 0."""
            f = ev[1]
            tick.value = ev[0]
            rc = 0
            if f is k_enter:
                rc = r_enter(hv, None, tick, ev[2])
            elif f is k_leave:
                rc = r_leave(hv, None, tick, ev[2])
            elif f is k_send:
                u64.value = ev[5]
                rc = r_send(hv, None, tick, ev[2], ev[3], ev[4], u64)
            elif f is k_recv:
                u64.value = ev[5]
                rc = r_recv(hv, None, tick, ev[2], ev[3], ev[4], u64)
            elif f is k_attrs:
                for j in range(3, len(ev), 2):
                    u64.value = ev[j + 1]
                    rc |= r_add(alv, ev[j], u64)
                # libotf2 empties the list when it writes the event: reusable
                rc |= r_enter(hv, alv, tick, ev[2])
            elif f is k_metric:
                types, words = ev[3], ev[4]
                n = len(types)
                rc = r_metric(hv, None, tick, ev[2], n, (u8s * n)(*types), (u64s * n)(*words))
            else:
                # the package's writer counts the event and updates the clock itself
                self._trace.event_writer_from_location(self._locs[i]).write(ev[2])
                return 1
            if rc:
                self._libotf2_error(rc, ev, i)
            return 0

        n_obj = 0
        try:
            if _events is None:
                for ev in todo:
                    n_obj += write(ev)
            else:  # the compiled loop, and here what it leaves (the package's records)
                k, n, w, a = 0, len(todo), hv.value, alv.value
                while True:
                    k, rc = _events.write(todo, k, w, a, _FUNCTIONS, _KINDS)
                    if rc:
                        self._libotf2_error(rc, todo[k], i)
                    if k == n:
                        break
                    n_obj += write(todo[k])
                    k += 1
        except (ctypes.ArgumentError, TypeError, OverflowError) as exc:
            raise ValueError(f"location {self._locs[i].name!r}: bad event argument ({exc}); "
                             "ticks, ranks and tags are ints >= 0") from None
        # the bookkeeping the package's EventWriter.write does per event (number of events
        # of the location, clock properties), once per batch
        loc = self._locs[i]
        loc._number_of_events_written = (getattr(loc, "_number_of_events_written", 0)
                                         + len(todo) - n_obj)
        self._trace._update_timestamps(first)
        self._trace._update_timestamps(last)
        self._last[i] = last
        self._written += len(todo)
        return len(todo)

    def _libotf2_error(self, rc: int, event: Event, i: int) -> None:
        raise RuntimeError(f"libotf2 error {rc} writing {event!r} on location "
                           f"{self._locs[i].name!r}")

    def finish(self, locs: Iterable[int]) -> int:
        """Write everything buffered for `locs` and close them: they take no more events
        (one added later is an error at `close`). Closing a location frees its buffers for the
        next one, so a writer that finishes its locations one by one holds the memory of one
        (`_ChunkPool`), not of all. Returns the number of events written."""
        n = 0
        with self._libotf2():
            for i in locs:
                n += self._flush_one(i, None)
                self._close_location(i)
                self._finished.add(i)
        return n

    def _close_location(self, i: int) -> None:
        """Close location `i`'s event and local definition writers once its last events are
        written, so that libotf2 frees its two chunks and the next location's reuse that memory
        (kept open to the archive's close, every location held two fresh 256 KiB chunks at
        once: ~130 page faults each, half of a small trace's writing time)."""
        writers = self._trace._event_writers
        ref = self._locs[i]._ref
        ew = writers.get(ref)
        if ew is not None and ew is not _CLOSED:
            ew.close()
            # the entry stays: at its close the package makes a writer (an empty file) for
            # every location that has none, which would replace this location's files
            writers[ref] = _CLOSED
            self._handles[i] = None

    def close(self) -> WriteStats:
        """Flush everything, write the definitions, and move the archive into place; on any
        error the temporary directory is removed and the target left as it was."""
        if self._closed:
            raise RuntimeError("the writer is closed")
        try:
            late = [self._locs[i].name for i in self._finished if self._bufs[i]]
            if late:
                raise ValueError(f"events added to finished locations {late[:5]}")
            self.finish(range(len(self._bufs)))
            if self._written:
                # replaces the host's wall clock at the first event (see realtime_s)
                self._trace._realtime_timestamp = self._realtime_s
            self._closed = True
            self._join_ahead()
            with self._libotf2():
                self._trace.close()
                _fix_trace_id(self._tmp)
            os.chmod(self._tmp, 0o755)  # mkdtemp makes it private
            _replace_dir(self._tmp, self.path)
        except BaseException:
            self._closed = True
            self._discard()
            raise
        finally:
            self._free_attr_list()
            self._err.close()
        return WriteStats(path=self.path, events=self._written, locations=len(self.defs.locations))

    def abort(self) -> None:
        """Give up: close libotf2's files and remove the temporary directory."""
        if self._closed:
            return
        self._closed = True
        self._discard()

    def _discard(self) -> None:
        """Close the archive quietly (whatever state it is in) and remove the directory."""
        self._join_ahead()
        with contextlib.suppress(Exception):
            self._trace.close()
        # a close that failed midway would be retried, noisily, by the package's __del__
        handle = getattr(self._trace, "_handle", None)
        if handle is not None:
            with contextlib.suppress(Exception):
                _otf2.Archive_Close(handle)
            self._trace._handle = None
        self._free_attr_list()
        shutil.rmtree(self._tmp, ignore_errors=True)
        self._err.close()

    def _free_attr_list(self) -> None:
        if self._attr_list is not None:
            with contextlib.suppress(Exception):
                _otf2.AttributeList_Delete(self._attr_list)
            self._attr_list = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def _u64_error(attrs: Sequence[tuple[Any, Any]]) -> None:
    for k, v in attrs:
        if v.__class__ is not int or not 0 <= v <= _U64_MAX:
            raise ValueError(f"attribute {k.name!r}: {v!r} is not a UINT64 (an int in "
                             "[0, 2**64))")


def _bisect_time(buf: list[tuple], t: int) -> int:
    """Index of the first event of the sorted `buf` at a tick >= `t`."""
    lo, hi = 0, len(buf)
    while lo < hi:
        mid = (lo + hi) // 2
        if buf[mid][0] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _empty_dir(p: Path) -> bool:
    return p.is_dir() and not any(p.iterdir())


def _fix_trace_id(archive: Path) -> None:
    """Replace the random trace id libotf2 puts in the anchor file (it offers no call to set
    one when writing) by the first 8 bytes of a SHA-256 of the definitions: identical runs
    then write byte-identical archives. Done only where the id libotf2 reads back occurs
    exactly once in the anchor, in either byte order; else the file is left as it was."""
    anchor = archive / f"{ARCHIVE_NAME}.otf2"
    reader = _otf2.Reader_Open(str(anchor))
    try:
        random_id = _otf2.Reader_GetTraceId(reader)
    finally:
        _otf2.Reader_Close(reader)
    data = anchor.read_bytes()
    digest = hashlib.sha256((archive / f"{ARCHIVE_NAME}.def").read_bytes()).digest()
    for order in ("little", "big"):
        old = random_id.to_bytes(8, order)
        if data.count(old) == 1:
            anchor.write_bytes(data.replace(old, digest[:8]))
            return


def _replace_dir(tmp: Path, target: Path) -> None:
    """Move the complete directory `tmp` to `target`, replacing an old one only now."""
    try:
        if not target.exists():
            os.rename(tmp, target)
            return
        old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.",
                                    suffix=".old"))
        os.rename(target, old / "trace")
        try:
            os.rename(tmp, target)
        except OSError:
            os.rename(old / "trace", target)  # put the old trace back
            raise
        shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        raise write_error(exc, target) from None
