"""Read Standard Workload Format (SWF v2.2) traces into batch `Job`s, one line at a time.

**File.** Plain text or gzip, told apart by the magic bytes ``1f 8b``, never by the suffix;
decoded as UTF-8 with undecodable bytes replaced (job lines are ASCII anyway). `SwfReader` reads
lines one by one (a generator; nothing holds the whole file); `read_swf` reads the usual trace
(comments only above the first job line, job lines of plain decimal numbers) at once, with
numpy, and any other the same way as `SwfReader`, with the same result. Blank lines are
ignored.
**Header.** Every comment line (``;``, usually at the top) is kept, in file order, as a
``(key, value)`` pair: ``; Key: value`` starts an entry (a key is one word at most two spaces
after the ``;``, followed by ``:`` but not ``://``); a following comment line that is not a key
line, such as the indented second line of a ``Note`` or ``Information``, continues the entry
(values are joined with ``\\n``, each line stripped); a bare ``;`` ends the entry; text with no
entry to continue is kept under the key ``""``. Repeated keys (``Note``, ``Queue``) stay
repeated. **Job lines** have exactly the 18 fields of `FIELD_NAMES`, each a decimal number
(time fields may be fractional, the others must be integers); ``-1`` means unknown and is the
only negative value allowed; job number and submit time must be ``>= 0``; status is one of -1
and 0..5; values above 9e9 are refused (times must fit int64 ticks); job numbers must be
unique. A bad line raises `InputError` ``FILE:LINE: field N (name): problem``; with
``lenient=True`` it is skipped and counted (`SwfReader.bad_lines`). **Conversion to Job**
(`read_swf`), in this order: (1) a job whose run time (field 4) is unknown (``-1``) is skipped,
counted as *cancelled* when its status (field 11) is 5 (cancelled before it started) and as
*runtime* otherwise; a job of run time 0 ("under 0.5 s" in SWF) runs, as in AccaSim and
textbook EASY (they are in the cleaned archive logs: 8 in KTH-SP2), unless
``skip_zero_runtime`` (then counted as *runtime*; a cancelled one is always skipped); a
cancelled job with a positive run time ran, and is kept. (2) Processors = field 8 (requested, the default: it is
what the user asked the scheduler for, while field 5 also reflects the logged machine's
allocation granularity) or field 5 with ``procs_field="allocated"``; a value ``<= 0`` falls
back to the other field; a job with neither is skipped and counted (*procs*). (3) ``pes`` =
processors, ``hosts = ceil(pes / cores_per_host)``; with ``max_hosts`` set, a job needing more
hosts is rejected: counted, kept in `SwfWorkload.rejected`, and reported through ``warn``
(one call for each of the first 10, then one summary call). (4) ``id`` = field 1 (gaps kept),
``submit`` = field 2, absolute as in the file (the first job need not submit at 0; shifting is
the caller's choice), ``runtime`` = field 4, ``walltime`` = field 9 (requested time) or the run
time where field 9 is ``<= 0`` (a walltime below the run time is kept: such a job is killed at
its walltime when the scheduler enforces it); seconds become ticks by `seconds_to_ticks`
(the exact decimal text rounded to the nearest tick, ties to even); ``user``, ``group``,
``queue``, ``partition`` = fields 12, 13, 15, 16; ``swf`` = the 18 raw values as floats. (5)
App information travels in header comments ``; CosimApp: E category=C app=psia priority=0
total_flop=6.8352e+13`` (`COSIM_APP_KEY`): the job lines whose field 14 (executable number)
is ``E`` get that category, app, priority (default ``""``, ``rigid``, 0) and every other
``key=value`` as ``app_params``; other SWF readers skip comments and still read the jobs.
(6) The same comment marks the class moldable or malleable (spec malleability.md §4.6, §4.7;
these keys never reach ``app_params``): ``kind=rigid|moldable|malleable|evolving`` (default
rigid); PE bounds ``min_pes=``/``max_pes=`` (integers >= 1, absolute) or ``min_frac=``/
``max_frac=`` (decimal numbers, ``0 < min_frac <= 1``, ``max_frac > 0``, relative to each
job's PEs: ``min_pes = max(1, ceil(min_frac x pes))``, ``max_pes = max(min_pes, floor(max_frac
x pes))``, exact; `cosim.workload.marking.pe_bounds`), at most one of each pair, only with kind
moldable or malleable (rigid and evolving jobs run on exactly their PEs), a bound given neither
way being the job's PEs; the runtime model ``model=ideal|worst|amdahl|table`` with ``f=``,
``balance=``, ``table=p:t,p:t``, ``reconf_s=``, ``reconf_pe_s=``, ``reconf=PRESET``
(`cosim.workload.runtime_models.model_from_pairs`). ``min_pes > max_pes``, in the comment or
once a job's PEs are known (the message then names the job), is an error. (7) It gives the
jobs a value (`cosim.workload.value`; never in ``app_params``): ``value=``, ``value_min=``,
``soft=``/``hard=`` (multiples of each job's requested time, or seconds as ``3600s``) and
``decay=linear|exp|step``; a threshold pair that fails for a job (``soft > hard``) names
the job (``field CosimApp``); ``power_beta=`` in [0, 1] is how much the jobs slow down
under a power cap (`cosim.platform.power`), or ``power_table=60:2,85:1.4,115:1`` the
measured (watts per socket, slowdown) points that say it instead. A bad comment
raises `InputError` ``FILE:LINE: field KEY: problem`` (``field CosimApp`` for its syntax and
the keys of (5)). Jobs are returned sorted by ``(submit, id)``.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import math
import os
import re
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from operator import attrgetter
from types import MappingProxyType
from typing import Literal

import numpy as np

from cosim.core.clock import MAX_TICKS, TICKS_PER_SECOND, seconds_to_ticks
from cosim.core.collect import no_collection
from cosim.core.records import bulk_maker
from cosim.errors import InputError
from cosim.workload.jobs import CATEGORY_CHARS, KINDS, Job
from cosim.workload.marking import MARKABLE_KINDS, decimal_text, pe_bounds
from cosim.workload.runtime_models import IDEAL, RuntimeModel, model_from_pairs
from cosim.platform.power import parse_table
from cosim.workload.value import VALUE_KEYS, check_value_pairs, value_from_pairs

__all__ = [
    "FIELD_NAMES", "N_FIELDS", "COSIM_APP_KEY", "SwfRecord", "SwfReader", "SwfWorkload",
    "AppInfo", "iter_swf_records", "read_swf", "read_swf_header", "machine_hosts",
    "header_values", "parse_cosim_app",
    "seconds_to_ticks", "MARK_KEYS", "MODEL_KEYS",
]

#: The 18 SWF fields, in order (field N is ``FIELD_NAMES[N - 1]``), named as in the SWF spec.
FIELD_NAMES: tuple[str, ...] = (
    "job number", "submit time", "wait time", "run time", "allocated processors",
    "average CPU time", "used memory", "requested processors", "requested time",
    "requested memory", "status", "user id", "group id", "executable number", "queue",
    "partition", "preceding job", "think time",
)
N_FIELDS = 18
#: Header key of the comment lines that carry a job's app, category, priority and parameters.
COSIM_APP_KEY = "CosimApp"
#: CosimApp keys of a job's kind and PE bounds, and of its runtime model (not app parameters).
MARK_KEYS = ("kind", "min_pes", "max_pes", "min_frac", "max_frac")
MODEL_KEYS = ("model", "f", "balance", "table", "reconf_s", "reconf_pe_s", "reconf")

# 0-based indices of the fields used here.
_JOB, _SUBMIT, _RUN, _ALLOC, _REQ_PROCS, _REQ_TIME, _STATUS = 0, 1, 3, 4, 7, 8, 10
_USER, _GROUP, _EXE, _QUEUE, _PART = 11, 12, 13, 14, 15
_INT_FIELDS = (0, 4, 7, 10, 11, 12, 13, 14, 15, 16)
_STATUSES = frozenset((-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0))
_MAX_VALUE = 9e9            # 9e9 s = 9e18 ticks < 2**63: every time field fits an int64 tick
_MAX_WARNINGS = 10
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_KEY_LINE = re.compile(r"[ \t]{0,2}([A-Za-z][A-Za-z0-9_]*)[ \t]*:(?!//)[ \t]*(.*)")
_GZIP_MAGIC = b"\x1f\x8b"
_NO_PARAMS: Mapping[str, str] = MappingProxyType({})   # shared, read-only: saves a copy per job


def _field(i: int) -> str:
    """The ``field`` label of 0-based field `i`: ``"4 (run time)"``."""
    return f"{i + 1} ({FIELD_NAMES[i]})" if i < N_FIELDS else str(i + 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class SwfRecord:
    """One valid job line: its 1-based line number, its 18 values as floats, and as text."""

    line: int
    fields: tuple[float, ...]
    text: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AppInfo:
    """What a ``; CosimApp:`` comment says about the jobs with one executable number.

    `min_pes`/`max_pes` are absolute bounds (0: not given), `min_frac`/`max_frac` bounds
    relative to each job's PEs (None: not given); at most one of each pair is set, and only
    for kind moldable or malleable (`cosim.workload.marking.pe_bounds` applies them).
    """

    category: str = ""
    app: str = "rigid"
    priority: int = 0
    exclusion_ok: bool = False
    params: tuple[tuple[str, str], ...] = ()
    value: tuple[tuple[str, str], ...] = ()  # the job value keys (`cosim.workload.value`)
    power_beta: float | None = None  # the jobs' compute-boundedness (`cosim.platform.power`)
    power_table: tuple[tuple[float, float], ...] | None = None  # ... or measured points
    kind: Literal["rigid", "moldable", "malleable", "evolving"] = "rigid"
    min_pes: int = 0
    max_pes: int = 0
    min_frac: Fraction | None = None
    max_frac: Fraction | None = None
    model: RuntimeModel = IDEAL


def _open_text(path: str) -> io.TextIOWrapper:
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise InputError("no such file", file=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not an SWF file", file=path) from None
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", file=path) from None
    try:
        magic = raw.read(2)
        raw.seek(0)
    except OSError as exc:
        raw.close()
        raise InputError(f"cannot read ({exc.strerror or exc})", file=path) from None
    stream = gzip.GzipFile(fileobj=raw, mode="rb") if magic == _GZIP_MAGIC else raw
    return io.TextIOWrapper(stream, encoding="utf-8-sig", errors="replace")  # (a BOM is dropped)


class SwfReader:
    """Iterate over the valid job lines of an SWF file, collecting the header on the way.

    Parameters
    ----------
    path:
        The file, plain or gzip (detected by content).
    lenient:
        Skip bad job lines (counted in `bad_lines`) instead of raising.
    warn:
        Called with the message of each of the first 10 bad lines in lenient mode.

    Attributes
    ----------
    header:
        ``(key, value)`` pairs of the comments read so far, in file order (complete once the
        iteration has finished).
    header_lines:
        The line number where each header entry starts.
    bad_lines:
        Job lines skipped in lenient mode so far.

    Raises
    ------
    InputError
        While iterating: a missing, unreadable or corrupt (gzip) file, or a bad job line when
        not lenient; the message is ``FILE:LINE: field N (name): problem``.
    """

    def __init__(self, path: str | os.PathLike[str], *, lenient: bool = False,
                 warn: Callable[[str], None] | None = None) -> None:
        self.path = os.fspath(path)
        self.lenient = lenient
        self.warn = warn
        self.header: list[tuple[str, str]] = []
        self.header_lines: list[int] = []
        self.bad_lines = 0

    def __iter__(self) -> Iterator[SwfRecord]:
        path = self.path
        seen: dict[int, int] = {}
        lineno = 0
        open_entry: list[str] | None = None   # value lines of the header entry being read
        with _open_text(path) as fh:
            try:
                for lineno, line in enumerate(fh, 1):
                    parts = line.split()
                    if not parts:
                        continue
                    if parts[0][0] == ";":
                        open_entry = self._comment(line, lineno, open_entry)
                        continue
                    open_entry = None
                    try:
                        values = _parse(line, parts, path, lineno)
                        job = int(values[_JOB])
                        first = seen.get(job)
                        if first is not None:
                            raise InputError(f"duplicate job number {job} (first on line "
                                             f"{first})", file=path, line=lineno,
                                             field=_field(_JOB))
                    except InputError as exc:
                        if not self.lenient:
                            raise
                        self.bad_lines += 1
                        if self.warn is not None and self.bad_lines <= _MAX_WARNINGS:
                            self.warn(f"{exc} (line skipped)")
                        continue
                    seen[job] = lineno
                    yield SwfRecord(line=lineno, fields=values, text=tuple(parts))
            except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                raise InputError(f"corrupt or truncated gzip data ({exc})", file=path) from None
            except OSError as exc:
                raise InputError(f"cannot read ({exc.strerror or exc})", file=path) from None
        if self.lenient and self.warn is not None and self.bad_lines > _MAX_WARNINGS:
            self.warn(f"{path}: {self.bad_lines} bad lines skipped in all")

    def _comment(self, line: str, lineno: int, entry: list[str] | None) -> list[str] | None:
        """Record one comment line; return the value-line list of the entry now open."""
        text = line.strip()[1:]
        if not text.strip():
            return None
        m = _KEY_LINE.fullmatch(text.rstrip())
        if m is None and entry is not None:
            entry.append(text.strip())
            self.header[-1] = (self.header[-1][0], "\n".join(entry))
            return entry
        key, value = (m.group(1), m.group(2).strip()) if m else ("", text.strip())
        self.header.append((key, value))
        self.header_lines.append(lineno)
        return [value]


def _parse(line: str, parts: list[str], path: str, lineno: int) -> tuple[float, ...]:
    """The 18 values of a job line, or `InputError` for the first problem (fast path first)."""
    # float() also takes "nan", "inf", "1_0" and non-ASCII digits: such lines go to _diagnose.
    if (len(parts) == N_FIELDS and line.isascii()
            and "n" not in line and "N" not in line and "_" not in line):
        try:
            v = tuple(map(float, parts))
        except ValueError:
            v = None
        if v is not None and v[_JOB] >= 0 and v[_SUBMIT] >= 0 and max(v) <= _MAX_VALUE \
                and v[_STATUS] in _STATUSES:
            ints = "." not in line and "e" not in line and "E" not in line
            # Integers only (the usual line): every '-' is a sign, and all must be "-1".
            if ints and line.count("-") == parts.count("-1"):
                return v
            if all(x >= 0 or x == -1.0 for x in v) and (
                    ints or all(v[i].is_integer() for i in _INT_FIELDS)):
                return v
    _diagnose(parts, path, lineno)
    raise AssertionError(f"{path}:{lineno}: line refused but no problem found")  # a bug


def _diagnose(parts: list[str], path: str, lineno: int) -> None:
    """Raise `InputError` for the first problem of a job line, in field order."""
    def bad(i: int, problem: str) -> InputError:
        return InputError(problem, file=path, line=lineno, field=_field(i))

    n = len(parts)
    if n < N_FIELDS:
        raise bad(n, f"missing (the line has {n} fields, SWF has {N_FIELDS})")
    if n > N_FIELDS:
        raise bad(N_FIELDS, f"unexpected extra field {parts[N_FIELDS]!r} (the line has {n} "
                            f"fields, SWF has {N_FIELDS})")
    for i, tok in enumerate(parts):
        if not (tok.isascii() and _NUMBER.fullmatch(tok)):
            raise bad(i, f"not a number {tok!r}")
        x = float(tok)
        if x > _MAX_VALUE:
            raise bad(i, f"value {tok} is too large (more than {_MAX_VALUE:g})")
        if x < 0 and x != -1:
            raise bad(i, f"negative value {tok} (only -1, unknown, may be negative)")
        if x < 0 and i in (_JOB, _SUBMIT):
            raise bad(i, f"must be known (>= 0), got {tok}")
        if i in _INT_FIELDS and not x.is_integer():
            raise bad(i, f"not an integer {tok!r}")
        if i == _STATUS and x not in _STATUSES:
            raise bad(i, f"unknown status {tok} (SWF has -1 and 0..5)")


def iter_swf_records(path: str | os.PathLike[str], *, lenient: bool = False,
                     warn: Callable[[str], None] | None = None) -> Iterator[SwfRecord]:
    """Stream the valid job lines of an SWF file (plain or gzip) as `SwfRecord`s.

    A generator over `SwfReader` (see there for the parameters and errors); use `SwfReader`
    directly to get the header and the bad-line count too.
    """
    return iter(SwfReader(path, lenient=lenient, warn=warn))


def read_swf_header(path: str | os.PathLike[str]) -> tuple[tuple[tuple[str, str], int], ...]:
    """The header of an SWF file — its comment lines before the first job line — as
    ``((key, value), line)`` pairs, read without the job lines (`SwfReader` reads the same
    header with the jobs)."""
    reader = SwfReader(path)
    entry: list[str] | None = None
    with _open_text(reader.path) as fh:
        try:
            for lineno, line in enumerate(fh, 1):
                parts = line.split()
                if not parts:
                    continue
                if parts[0][0] != ";":
                    break
                entry = reader._comment(line, lineno, entry)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise InputError(f"corrupt or truncated gzip data ({exc})", file=reader.path) \
                from None
    return tuple(zip(reader.header, reader.header_lines, strict=True))


def machine_hosts(header: Sequence[tuple[tuple[str, str], int]], cores_per_host: int, *,
                  file: str | None = None,
                  warn: Callable[[str], None] | None = None) -> tuple[int, str] | None:
    """The machine an SWF header describes, in hosts of `cores_per_host` cores: ``(hosts,
    what)`` from ``MaxNodes`` (the number of nodes), else from ``MaxProcs`` (processors,
    ``ceil(MaxProcs / cores_per_host)`` hosts), `what` saying which (``"MaxNodes 100"``); None
    when the header gives neither. A value of -1 is unknown, as in SWF fields; another value
    that is not a positive integer is ignored with a warning naming its line (a header is a
    comment: it never makes a trace unreadable)."""
    for key in ("MaxNodes", "MaxProcs"):
        found = [(v, line) for (k, v), line in header if k == key]
        if not found:
            continue
        value, line = found[0]
        text = value.split()[0] if value.split() else ""
        if text == "-1":
            continue
        if not text.isdigit() or int(text) < 1:
            if warn is not None:
                warn(f"{file}:{line}: header {key} {value!r} is not a positive integer: "
                     "ignored")
            continue
        n = int(text)
        return (n if key == "MaxNodes" else -(-n // cores_per_host)), f"{key} {n}"
    return None


def header_values(header: tuple[tuple[str, str], ...], key: str) -> tuple[str, ...]:
    """Every value of `key` in `header`, in order (``()`` if absent)."""
    return tuple(v for k, v in header if k == key)


def parse_cosim_app(value: str, *, file: str | None = None,
                    line: int | None = None) -> tuple[int, AppInfo]:
    """Parse the value of a ``; CosimApp:`` comment: ``E key=value ...``.

    Returns
    -------
    (int, AppInfo)
        The executable number (field 14) it applies to, and what it says.

    Raises
    ------
    InputError
        ``field CosimApp`` if the number is missing or not an integer, a token is not
        ``key=value``, a key repeats, ``priority`` is not an integer, ``exclusion_ok`` is not
        0 or 1 (the job's hint for RCA exclusion requests) or ``app`` is not a known app
        model; ``field KEY`` for a bad kind, bound or model key (module docstring, (6)).
    """
    from cosim.workload.apps import MODELS, resolve_app

    def bad(problem: str) -> InputError:
        return InputError(problem, file=file, line=line, field=COSIM_APP_KEY)

    tokens = value.split()
    if not tokens or not re.fullmatch(r"\d+", tokens[0]):
        raise bad(f"expected 'EXECUTABLE_NUMBER key=value ...', got {value!r}")
    info: dict[str, str] = {}
    for tok in tokens[1:]:
        key, eq, val = tok.partition("=")
        if not eq or not key:
            raise bad(f"expected key=value, got {tok!r}")
        if key in info:
            raise bad(f"key {key!r} given twice")
        info[key] = val
    category = info.pop("category", "")
    if not CATEGORY_CHARS.issuperset(category):
        raise bad(f"category {category!r}: letters, digits and _.:+-/ only")
    app = info.pop("app", "rigid")
    if app != "rigid" and app not in MODELS:
        raise bad(f"unknown app {app!r} (known: {', '.join(sorted([*MODELS, 'rigid']))})")
    prio = info.pop("priority", "0")
    if not re.fullmatch(r"[-+]?\d+", prio):
        raise bad(f"priority must be an integer, got {prio!r}")
    excl = info.pop("exclusion_ok", "0")
    if excl not in ("0", "1"):
        raise bad(f"exclusion_ok must be 0 or 1, got {excl!r}")
    beta = info.pop("power_beta", None)
    if beta is not None:
        try:
            beta_f = float(beta)
        except ValueError:
            beta_f = math.nan
        if not 0.0 <= beta_f <= 1.0:
            raise InputError(f"must be a number in [0, 1], got {beta!r}", file=file, line=line,
                             field="power_beta")
    table = info.pop("power_table", None)
    if table is not None:
        try:
            table_points = parse_table(table)
        except ValueError as exc:
            raise InputError(str(exc), file=file, line=line, field="power_table") from None
    value = {k: info.pop(k) for k in VALUE_KEYS if k in info}
    if value:  # what the jobs' requested times do not decide is checked now
        try:
            check_value_pairs(value)
        except ValueError as exc:
            raise bad(str(exc)) from None
    marks = {k: info.pop(k) for k in MARK_KEYS if k in info}
    model_pairs = {k: info.pop(k) for k in MODEL_KEYS if k in info}
    bounds = _parse_bounds(marks, file, line)
    model = model_from_pairs(model_pairs, file=file, line=line) if model_pairs else IDEAL
    if app != "rigid":  # the app's parameters now, not when its first job starts
        total = info.get("total_flop")
        if total is not None and not _positive_number(total):
            raise InputError(f"must be a number > 0, got {total!r}", file=file, line=line,
                             field="total_flop")
        try:
            resolve_app(app, overrides={k: v for k, v in info.items() if k != "total_flop"})
        except InputError as exc:  # named by the key, at this line
            raise InputError(exc.problem, file=file, line=line,
                             field=(exc.field or "app-param").removeprefix("app-param.")) \
                from None
    return int(tokens[0]), AppInfo(category=category, app=app, priority=int(prio),
                                   exclusion_ok=excl == "1", params=tuple(info.items()),
                                   value=tuple(value.items()), model=model,
                                   power_beta=None if beta is None else beta_f,
                                   power_table=None if table is None else table_points,
                                   **bounds)


def _positive_number(text: str) -> bool:
    try:
        x = float(text)
    except ValueError:
        return False
    return math.isfinite(x) and x > 0


def _parse_bounds(marks: dict[str, str], file: str | None, line: int | None) -> dict:
    """The `AppInfo` fields of the ``kind`` and bound keys of a CosimApp comment, validated."""
    def bad(key: str, problem: str) -> InputError:
        return InputError(problem, file=file, line=line, field=key)

    kind = marks.get("kind", "rigid")
    if kind not in KINDS:
        raise bad("kind", f"unknown kind {kind!r} (known: {', '.join(sorted(KINDS))})")
    out: dict[str, object] = {"kind": kind}
    for key in MARK_KEYS[1:]:
        if key in marks and kind not in MARKABLE_KINDS:
            raise bad(key, f"kind {kind} has no PE bounds (such a job runs on exactly its "
                           "PEs); give kind=moldable or kind=malleable")
    for key in ("min_pes", "max_pes"):
        if key in marks:
            text = marks[key]
            if not (re.fullmatch(r"[0-9]+", text) and int(text) >= 1):
                raise bad(key, f"must be an integer >= 1, got {text!r}")
            out[key] = int(text)
    for key, what in (("min_frac", "in (0, 1]"), ("max_frac", "> 0")):
        if key in marks:
            text = marks[key]
            # float() first: it bounds the exponent before Fraction() computes exactly.
            ok = text.isascii() and _NUMBER.fullmatch(text) and math.isfinite(float(text))
            x = Fraction(text) if ok else None
            if x is None or not (0 < x <= 1 if key == "min_frac" else x > 0):
                raise bad(key, f"must be a number {what}, got {text!r}")
            out[key] = x
    for end in ("min", "max"):
        if f"{end}_pes" in marks and f"{end}_frac" in marks:
            raise bad(f"{end}_frac", f"give {end}_pes or {end}_frac, not both")
    for lo, hi in (("min_pes", "max_pes"), ("min_frac", "max_frac")):
        if lo in out and hi in out and out[lo] > out[hi]:  # type: ignore[operator]
            raise bad(lo, f"{lo} {marks[lo]} > {hi} {marks[hi]}")
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class SwfWorkload:
    """The jobs of an SWF file and what the reader did with every line.

    Attributes
    ----------
    path:
        The file read.
    header:
        ``(key, value)`` pairs of the header comments, in file order, repeats kept.
    jobs:
        The jobs to simulate, sorted by ``(submit, id)``.
    rejected:
        Jobs needing more than ``max_hosts`` hosts, sorted likewise (not in `jobs`).
    read:
        Valid job lines: ``read == len(jobs) + rejected_too_big + skipped_runtime +
        skipped_cancelled + skipped_procs``.
    skipped_runtime, skipped_cancelled, skipped_procs:
        Jobs skipped for an unknown run time (or 0 with ``skip_zero_runtime``), for being
        cancelled before they started (status 5, run time ``<= 0``), and for having no
        processor count.
    rejected_too_big:
        ``len(rejected)``.
    bad_lines:
        Malformed lines skipped in lenient mode (always 0 otherwise).
    cores_per_host, procs_field:
        The mapping used to turn processors into hosts.
    skipped_ids:
        The ids of the skipped jobs (a per-job sidecar may name them).
    """

    path: str
    header: tuple[tuple[str, str], ...]
    jobs: tuple[Job, ...]
    rejected: tuple[Job, ...]
    read: int
    skipped_runtime: int
    skipped_cancelled: int
    skipped_procs: int
    rejected_too_big: int
    bad_lines: int
    cores_per_host: int
    procs_field: str
    skipped_ids: frozenset[int] = frozenset()


#: What `_bulk_rows` takes in the job lines: digits, ".", "-", spaces, tabs and newlines; the
#: line-by-line reader takes the rest (an exponent, a sign, "nan", "inf" or "_", which
#: `float` would take), found by deleting these bytes from the ASCII text (`_only_bulk`)
_BULK_BYTES = b"0123456789.- \t\n"
#: The time fields whose ticks `read_swf` takes from the exact decimal text when fractional
_TIME_FIELDS = (_SUBMIT, _RUN, _REQ_TIME)


def _bulk_rows(reader: SwfReader
               ) -> tuple[list[int], np.ndarray, dict[int, tuple[str, ...]]] | None:
    """The job lines of the usual trace at once: ``(line numbers, values, texts)``, the values
    an ``(n, 18)`` float array, `texts` the split text of each row with a fractional time
    field (`read_swf` needs its decimal digits), the header collected into `reader` as
    `SwfReader` does. None (and `reader` untouched) for any other file — comments below the
    first job line, exponents, signs other than ``-1``, a bad or duplicate line, a read
    error — which `SwfReader` then reads line by line, with its messages. A line this
    accepts is one `SwfReader` accepts, with the same values."""
    if not os.path.isfile(reader.path):  # (a FIFO could be read once only)
        return None
    try:
        with _open_text(reader.path) as fh:
            text = fh.read()
    except (InputError, OSError, EOFError, zlib.error, gzip.BadGzipFile, MemoryError):
        return None
    lines = text.split("\n")  # as iterating the file does, newlines already translated
    body = len(lines)
    for i, line in enumerate(lines):
        parts = line.split()
        if parts and parts[0][0] != ";":
            body = i
            break
    rest = "\n".join(lines[body:])
    if body == len(lines) or not _only_bulk(rest):
        return None
    integers = "." not in rest
    try:  # (integers parse ~6x faster than floats)
        a = np.loadtxt(io.StringIO(rest), dtype=np.int64 if integers else np.float64, ndmin=2)
    except (ValueError, OverflowError, MemoryError):
        return None
    rows = [i for i, line in enumerate(lines[body:]) if line.strip(" \t")]
    if a.shape != (len(rows), N_FIELDS):
        return None
    ids = np.sort(a[:, _JOB])
    # every "-" the sign of a -1 (no "-0"), the other rules of `_parse`, job numbers unique
    if (rest.count("-") != int(np.count_nonzero(a == -1))
            or not ((a >= 0) | (a == -1)).all() or a.max() > _MAX_VALUE
            or a[:, _JOB].min() < 0 or a[:, _SUBMIT].min() < 0
            or a[:, _STATUS].max() > 5 or (a[:, _STATUS] != np.floor(a[:, _STATUS])).any()
            or (ids[1:] == ids[:-1]).any()):
        return None
    texts: dict[int, tuple[str, ...]] = {}
    if not integers:
        if not (a[:, _INT_FIELDS] == np.floor(a[:, _INT_FIELDS])).all():
            return None
        t = a[:, _TIME_FIELDS]
        for k in np.flatnonzero((t != np.floor(t)).any(axis=1)).tolist():
            texts[k] = tuple(lines[body + rows[k]].split())
    entry: list[str] | None = None
    for i, line in enumerate(lines[:body], 1):
        if line.split():
            entry = reader._comment(line, i, entry)
    return [body + 1 + i for i in rows], a.astype(np.float64, copy=False), texts


def _only_bulk(text: str) -> bool:
    """Whether `text` holds only `_BULK_BYTES` (a C pass: ten times a regular expression's
    speed on a trace's 2 MB)."""
    try:
        return not text.encode("ascii").translate(None, _BULK_BYTES)
    except UnicodeEncodeError:
        return False


_SUBMIT_ID = attrgetter("submit", "id")  # the jobs' order

#: A rigid trace job from fields checked as `Job` checks them (`_bulk_jobs`)
_trace_jobs = bulk_maker(Job, ("id", "submit", "hosts", "pes", "walltime", "runtime", "user",
                               "group", "queue", "partition", "swf"),
                         fixed={"app_params": _NO_PARAMS}, same={"min_pes": "pes",
                                                                 "max_pes": "pes"})


def _bulk_jobs(numbers: list[int], a: np.ndarray, texts: dict[int, tuple[str, ...]], *,
               first: int, other: int, cores: int, max_hosts: int | None,
               skip_zero_runtime: bool) -> tuple[
                   list[Job], list[Job], dict[int, int], set[int], tuple[int, int, int, int]
               ] | None:
    """What `read_swf`'s loop makes of the rows of `_bulk_rows`, column by column: ``(jobs,
    rejected, line of each rejected job, skipped ids, (read, skipped for run time, cancelled,
    for processors))``, jobs and rejected in line order and made by `_trace_jobs`. None when
    a row ends past `_LATEST_END`: the loop then reads the rows one by one, for its error or
    its warnings in line order."""
    n = len(a)
    run, status = a[:, _RUN], a[:, _STATUS]
    skip = (run < 0) | ((run == 0) & (skip_zero_runtime | (status == 5)))
    cancelled = int(np.count_nonzero(skip & (status == 5)))
    procs = np.where(a[:, first] > 0, a[:, first], a[:, other])
    no_procs = ~skip & (procs <= 0)
    keep = np.flatnonzero(~skip & ~no_procs)
    skipped = set(a[skip | no_procs, _JOB].astype(np.int64).tolist())
    k = a[keep]
    tps = TICKS_PER_SECOND
    # integral seconds (<= 9e9, exact in a float) times the tick; fractional ones from the text
    runtime = k[:, _RUN].astype(np.int64) * tps
    submit = k[:, _SUBMIT].astype(np.int64) * tps
    req = k[:, _REQ_TIME]
    walltime = np.where(req <= 0, runtime, req.astype(np.int64) * tps)
    if texts:
        at = {int(row): i for i, row in enumerate(keep.tolist())}
        for row, text in texts.items():
            i = at.get(row)
            if i is None:
                continue
            f = a[row]
            if not f[_RUN].is_integer():
                runtime[i] = seconds_to_ticks(text[_RUN])
            if not f[_SUBMIT].is_integer():
                submit[i] = seconds_to_ticks(text[_SUBMIT])
            x = f[_REQ_TIME]
            walltime[i] = runtime[i] if x <= 0 else walltime[i] if x.is_integer() else \
                seconds_to_ticks(text[_REQ_TIME])
    if (submit > _LATEST_END - np.maximum(runtime, walltime)).any():
        return None
    pes = procs[keep].astype(np.int64)
    hosts = -(-pes // min(cores, 2**62))  # (any count past the PEs gives 1 host)
    ids = k[:, _JOB].astype(np.int64)
    big = np.zeros(len(keep), dtype=bool) if max_hosts is None else hosts > max_hosts
    made = []
    with no_collection():  # acyclic objects only
        for part in (np.flatnonzero(~big), np.flatnonzero(big)):
            made.append(_trace_jobs(
                ids[part].tolist(), submit[part].tolist(), hosts[part].tolist(),
                pes[part].tolist(), walltime[part].tolist(), runtime[part].tolist(),
                *(k[part, f].astype(np.int64).tolist() for f in (_USER, _GROUP, _QUEUE, _PART)),
                list(map(tuple, k[part].tolist()))))
    jobs, rejected = made
    line_of = np.asarray(numbers, dtype=np.int64)[keep]
    lines = dict(zip(ids[big].tolist(), line_of[big].tolist(), strict=True))
    counts = (n, int(np.count_nonzero(skip)) - cancelled, cancelled,
              int(np.count_nonzero(no_procs)))
    return jobs, rejected, lines, skipped, counts


def _check_int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(f"must be an integer >= {low}, got {value!r}", field=name)
    return value


#: The latest a job of a trace may end if it starts at once: half the tick range, the other
#: half left for its wait (a trace beyond it is refused when read, not deep in a run)
_LATEST_END = MAX_TICKS // 2


def read_swf(
    path: str | os.PathLike[str],
    *,
    cores_per_host: int = 1,
    max_hosts: int | None = None,
    procs_field: Literal["requested", "allocated"] = "requested",
    lenient: bool = False,
    skip_zero_runtime: bool = False,
    warn: Callable[[str], None] | None = None,
) -> SwfWorkload:
    """Read an SWF trace (plain or gzip) into jobs, by the rules of the module docstring.

    Parameters
    ----------
    path:
        The SWF file.
    cores_per_host:
        PEs per host of the platform: ``hosts = ceil(processors / cores_per_host)``.
    max_hosts:
        Hosts of the platform; a job needing more is rejected (None: no limit).
    procs_field:
        ``"requested"`` (field 8, the default) or ``"allocated"`` (field 5); a value ``<= 0``
        falls back to the other field.
    lenient:
        Skip malformed lines (counted in `SwfWorkload.bad_lines`) instead of raising.
    skip_zero_runtime:
        Skip jobs of run time 0 (counted in `SwfWorkload.skipped_runtime`) instead of
        running them.
    warn:
        Receives one-line warnings: rejected jobs and, in lenient mode, bad lines (the first
        10 of each, then a total).

    Returns
    -------
    SwfWorkload

    Raises
    ------
    InputError
        For a bad argument, a missing/unreadable/corrupt file, a malformed line (unless
        lenient) or a bad ``CosimApp`` comment: ``FILE:LINE: field N (name): problem``.
    """
    cores = _check_int(cores_per_host, "cores-per-host", 1)
    if max_hosts is not None:
        _check_int(max_hosts, "max-hosts", 1)
    if procs_field not in ("requested", "allocated"):
        raise InputError(f"must be 'allocated' or 'requested', got {procs_field!r}",
                         field="procs-field")
    first, other = (_REQ_PROCS, _ALLOC) if procs_field == "requested" else (_ALLOC, _REQ_PROCS)
    reader = SwfReader(path, lenient=lenient, warn=warn)
    jobs: list[Job] = []
    rejected: list[Job] = []
    lines: dict[int, int] = {}
    read = skip_run = skip_cancel = skip_procs = 0
    skipped: set[int] = set()
    ticks, tps = seconds_to_ticks, TICKS_PER_SECOND
    bulk = _bulk_rows(reader)
    taken = None if bulk is None else _bulk_jobs(
        *bulk, first=first, other=other, cores=cores, max_hosts=max_hosts,
        skip_zero_runtime=skip_zero_runtime)
    if taken is not None:
        jobs, rejected, lines, skipped, (read, skip_run, skip_cancel, skip_procs) = taken
    records: Iterator[tuple[int, tuple[float, ...], tuple[str, ...]]]
    if bulk is None:
        records = ((r.line, r.fields, r.text) for r in reader)
    elif taken is not None:
        records = iter(())
    else:  # the text only where a time is fractional (read below only then)
        numbers, values, texts = bulk
        records = ((n, f, texts.get(k, ())) for k, (n, f) in enumerate(
            zip(numbers, map(tuple, values.tolist()), strict=True)))
    for line, f, text in records:
        read += 1
        if f[_RUN] < 0 or (f[_RUN] == 0 and (skip_zero_runtime or f[_STATUS] == 5)):
            if f[_STATUS] == 5:
                skip_cancel += 1
            else:
                skip_run += 1
            skipped.add(int(f[_JOB]))
            continue
        procs = f[first] if f[first] > 0 else f[other]
        if procs <= 0:
            skip_procs += 1
            skipped.add(int(f[_JOB]))
            continue
        pes = int(procs)
        # Integral seconds (<= 9e9, exact in a float) skip the decimal arithmetic.
        x = f[_RUN]
        runtime = int(x) * tps if x.is_integer() else ticks(text[_RUN])
        x = f[_SUBMIT]
        submit = int(x) * tps if x.is_integer() else ticks(text[_SUBMIT])
        x = f[_REQ_TIME]
        walltime = runtime if x <= 0 else int(x) * tps if x.is_integer() else ticks(
            text[_REQ_TIME])
        if submit + max(runtime, walltime) > _LATEST_END:
            problem = InputError(
                f"submit + {'run' if runtime >= walltime else 'requested'} time ends after "
                f"{_LATEST_END // tps:,} s (146 years; the rest of the tick range is for "
                "waiting)", file=reader.path, line=line,
                field=_field(_RUN if runtime >= walltime else _REQ_TIME))
            if not lenient:
                raise problem
            reader.bad_lines += 1
            if warn is not None:
                warn(f"{problem} (line skipped)")
            continue
        job = Job(
            id=int(f[_JOB]), submit=submit, hosts=-(-pes // cores), pes=pes,
            walltime=walltime, runtime=runtime,
            user=int(f[_USER]), group=int(f[_GROUP]), queue=int(f[_QUEUE]),
            partition=int(f[_PART]), swf=f, app_params=_NO_PARAMS,
        )
        if max_hosts is not None and job.hosts > max_hosts:
            rejected.append(job)
            lines[job.id] = line
        else:
            jobs.append(job)
    header = tuple(reader.header)
    apps = _app_infos(reader)
    if apps:
        jobs = [_with_app(j, apps, reader.path) for j in jobs]
        rejected = [_with_app(j, apps, reader.path) for j in rejected]
    jobs.sort(key=_SUBMIT_ID)
    rejected.sort(key=_SUBMIT_ID)
    if warn is not None and max_hosts is not None:
        for j in rejected[:_MAX_WARNINGS]:
            warn(f"{reader.path}:{lines[j.id]}: job {j.id} needs {j.hosts} hosts "
                 f"({j.pes} processors), the platform has {max_hosts}: rejected")
        if len(rejected) > _MAX_WARNINGS:
            warn(f"{reader.path}: {len(rejected)} jobs rejected in all (larger than "
                 f"{max_hosts} hosts)")
    return SwfWorkload(
        path=reader.path, header=header, jobs=tuple(jobs), rejected=tuple(rejected),
        read=read, skipped_runtime=skip_run, skipped_cancelled=skip_cancel,
        skipped_procs=skip_procs, rejected_too_big=len(rejected), bad_lines=reader.bad_lines,
        cores_per_host=cores, procs_field=procs_field, skipped_ids=frozenset(skipped),
    )


def _app_infos(reader: SwfReader) -> dict[int, tuple[AppInfo, int]]:
    """Executable number -> (what its CosimApp comment says, the comment's line)."""
    out: dict[int, tuple[AppInfo, int]] = {}
    for (key, value), line in zip(reader.header, reader.header_lines, strict=True):
        if key == COSIM_APP_KEY:
            exe, info = parse_cosim_app(value, file=reader.path, line=line)
            if exe in out:
                raise InputError(f"executable number {exe} described twice", file=reader.path,
                                 line=line, field=COSIM_APP_KEY)
            out[exe] = (info, line)
    return out


def _with_app(job: Job, apps: dict[int, tuple[AppInfo, int]], path: str) -> Job:
    assert job.swf is not None
    entry = apps.get(int(job.swf[_EXE]))
    if entry is None:
        return job
    info, line = entry
    lo = hi = 0
    if info.kind in MARKABLE_KINDS:
        lo, hi = pe_bounds(job.pes, min_pes=info.min_pes, max_pes=info.max_pes,
                           min_frac=info.min_frac, max_frac=info.max_frac)
        if lo > hi:
            raise InputError(_bounds_problem(job, info, lo, hi), file=path, line=line,
                             field=_bounds_key(info))
    value = None
    if info.value:
        try:
            value = value_from_pairs(dict(info.value), job.walltime)
        except ValueError as exc:
            raise InputError(f"job {job.id}: {exc}", file=path, line=line,
                             field=COSIM_APP_KEY) from None
    return dataclasses.replace(job, category=info.category, app=info.app,
                               priority=info.priority, exclusion_ok=info.exclusion_ok,
                               app_params=dict(info.params), kind=info.kind, min_pes=lo,
                               max_pes=hi, model=info.model, value=value,
                               power_beta=info.power_beta, power_table=info.power_table)


def _bounds_key(info: AppInfo) -> str:
    """The key an empty PE range of `info` is reported under: the minimum's, if given."""
    if info.min_pes:
        return "min_pes"
    if info.min_frac is not None:
        return "min_frac"
    return "max_pes"     # only an absolute maximum can fall below a job's own PEs


def _bounds_problem(job: Job, info: AppInfo, lo: int, hi: int) -> str:
    """Why `job` gets ``min_pes`` `lo` > ``max_pes`` `hi` from `info`."""
    def origin(end: str, value: int) -> str:
        if getattr(info, f"{end}_pes"):
            return f"{end}_pes {value}"
        frac = getattr(info, f"{end}_frac")
        if frac is not None:
            rnd = "ceil" if end == "min" else "floor"
            return f"{end}_pes {value} (= {rnd}({end}_frac {decimal_text(frac)} x {job.pes}))"
        return f"{end}_pes {value} (= pes: no {end}_pes or {end}_frac given)"

    return f"job {job.id} (pes {job.pes}): {origin('min', lo)} > {origin('max', hi)}"
