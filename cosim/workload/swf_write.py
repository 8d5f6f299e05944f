"""Write SWF v2.2 files: a workload (`write_jobs_swf`) or a simulated schedule (`write_swf`).

Both writers put the header comments first, then one line per job sorted by ``(submit, id)``,
fields separated by one space, and write atomically (a temporary file in the same directory,
then `os.replace`); a name ending in ``.gz`` is gzip-compressed with a zero timestamp, so the
bytes depend on the content only. Times are ticks written as exact decimal seconds (``12``,
``0.5``, ``1097.618750001``: no float noise); other values are integers where integral, else
Python's shortest round-trip form. **Header**: the given pairs (a mapping, whose values may be
lists for repeated keys, or a sequence of pairs) in order; ``Version`` is set to 2.2,
``MaxJobs``/``MaxRecords`` to the number of lines written (in place when present, else added),
and the given ``CosimApp`` entries are replaced by the writer's own; a value of several lines
is written as continuation lines indented by eight spaces. **App information**: the jobs that
carry any (category, app other than ``rigid``, app_params, priority other than 0) get
``; CosimApp: E category=.. app=.. priority=.. key=value ..`` lines (`cosim.workload.swf`
reads them back), one per distinct combination, numbered in sorted order of (category, app,
priority, params) from one above the largest executable number of the other jobs (so an ESP
workload's categories A..M, Z get 1..14), and that number in field 14. A job's kind and
runtime model travel in the same line (keys of `cosim.workload.swf`, written only when not
the defaults: ``kind=`` unless rigid, the model's keys unless `IDEAL`; each model parameter
only when not its default), so a workload of rigid jobs is written as before. A moldable or
malleable job always gets both bounds, as fractions where a fraction reproduces them
(``min_frac=0.5 max_frac=1``), else as ``min_pes=``/``max_pes=``: the jobs of one class
(same line but for the bounds) are grouped, one line per group: their distinct ``(pes,
min_pes, max_pes)``, in ascending order, each join the first group whose bounds one pair of
keys still reproduces (first fit), else a new one; a fraction is the first of
``prefer_fracs``, the defaults 0.5/1.0, then the shortest decimal (nearest the middle of the
allowed range, the lower on a tie) that gives every job of the group its bounds by the rule
of `cosim.workload.marking.pe_bounds`, with ``min_frac <= max_frac``. **A workload line**
(`write_jobs_swf`) takes each field the `Job` carries from the Job (1 id, 2 submit, 4 run
time, 8 processors = pes, 9 walltime, 12 user, 13 group, 15 queue, 16 partition), except that
the raw value of `Job.swf` is kept wherever it still reads back to the Job's value (``-1`` in
field 9 when walltime equals runtime; fields 5 and 8 as they were when pes equals either), and
every other field from `Job.swf`, or -1 for a job without one (status: 1). So
``read_swf(write_jobs_swf(read_swf(x)))`` gives the same jobs, raw fields included, except
their values (`Job.value`, `cosim.workload.value`), which are not written (keep the value
sidecar, or the CosimApp value keys, with the trace). **A
schedule line** (`write_swf`): wait = start - submit, run time = end - start, allocated
processors = the cores of the hosts used (the job holds its hosts whole), requested
processors = pes, requested time = walltime, status 1 for ``completed`` and 0 (SWF "failed")
for ``killed`` at its walltime; a ``rejected`` or ``dropped`` job (never started) is kept, so
every job is accounted for, as status 5 (cancelled) with wait, run time and allocated processors -1; fields
6 and 7 (CPU time, memory used) are -1 (not modelled); fields 10, 17, 18 come from `Job.swf`.
"""

from __future__ import annotations

import gzip
import io
import itertools
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosim.core.clock import format_ticks, seconds_to_ticks
from cosim.core.files import atomic_open
from cosim.workload.jobs import Job, JobOutcome
from cosim.workload.marking import (
    DEFAULT_MAX_FRAC, DEFAULT_MIN_FRAC, MARKABLE_KINDS, check_fracs, decimal_text,
)
from cosim.workload.runtime_models import IDEAL, RuntimeModel
from cosim.workload.swf import COSIM_APP_KEY, MARK_KEYS, MODEL_KEYS, N_FIELDS

if TYPE_CHECKING:  # (the output side loads with the writers)
    from cosim.output.columns import OutcomeColumns

__all__ = ["Header", "write_jobs_swf", "write_swf", "format_ticks", "format_value"]

#: A header: a mapping (a list value repeats the key) or a sequence of ``(key, value)`` pairs.
Header = Mapping[str, str | Sequence[str]] | Sequence[tuple[str, str]]

_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_STATUS = {"completed": 1, "killed": 0, "rejected": 5, "dropped": 5}
_DEFAULT_INFO: tuple = ("", "rigid", 0, False, (), "rigid", ())
_RESERVED = frozenset(("category", "app", "priority", "exclusion_ok", *MARK_KEYS, *MODEL_KEYS))
_SCHEDULE_NOTE = ("simulated schedule written by cosim: wait = start - submit, run time = "
                  "end - start, allocated processors = the cores of the hosts held; status 1 "
                  "completed, 0 killed at its requested time, 5 rejected or dropped (never "
                  "started)")


def format_value(value: float) -> str:
    """A raw SWF value: an integer where integral, else the shortest round-trip float."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _pairs(header: Header) -> list[tuple[str, str]]:
    items = header.items() if isinstance(header, Mapping) else header
    out: list[tuple[str, str]] = []
    for key, value in items:
        values = [value] if isinstance(value, str) else list(value)
        for v in values:
            if not isinstance(key, str) or not (key == "" or _KEY.fullmatch(key)):
                raise ValueError(f"bad SWF header key {key!r}")
            out.append((key, str(v)))
    return out


def _set(pairs: list[tuple[str, str]], key: str, value: str, *, at: int | None = None) -> None:
    """Set `key` in place (first occurrence; later ones dropped), or insert it at `at`/end."""
    idx = [i for i, (k, _) in enumerate(pairs) if k == key]
    for i in reversed(idx[1:]):
        del pairs[i]
    if idx:
        pairs[idx[0]] = (key, value)
    else:
        pairs.insert(len(pairs) if at is None else at, (key, value))


def _model_tokens(model: RuntimeModel) -> tuple[str, ...]:
    """The CosimApp keys of a runtime model: none for `IDEAL`, else each non-default one."""
    if model is IDEAL or model == IDEAL:  # (the identity first: most jobs hold IDEAL itself)
        return ()
    out = [f"model={model.name}"] if model.name != "ideal" else []
    if model.f:
        out.append(f"f={format_value(model.f)}")
    if model.balance != "dynamic":
        out.append(f"balance={model.balance}")
    if model.table:
        out.append("table=" + ",".join(f"{p}:{format_value(t)}" for p, t in model.table))
    out += [f"{k}={format_value(v)}" for k, v in (("reconf_s", model.reconf_s),
                                                  ("reconf_pe_s", model.reconf_pe_s)) if v]
    return tuple(out)


def _info(job: Job) -> tuple:
    """Everything a CosimApp line says about `job` but its PE bounds."""
    return (job.category, job.app, job.priority, job.exclusion_ok,
            tuple(sorted(job.app_params.items())), job.kind, _model_tokens(job.model))


def _key(job: Job) -> tuple | None:
    """What selects the CosimApp line of `job` (None: no line, its raw field 14 is kept)."""
    if (job.app == "rigid" and job.kind == "rigid" and job.model is IDEAL and not job.category
            and not job.priority and not job.exclusion_ok and not job.app_params):
        return None  # (the usual trace job, without building its `_info`)
    info = _info(job)
    if info == _DEFAULT_INFO:
        return None
    return (info, job.pes, job.min_pes, job.max_pes) if job.kind in MARKABLE_KINDS else (info,)


def _pick(lo: Fraction, lo_open: bool, hi: Fraction, hi_open: bool,
          prefer: Sequence[Fraction]) -> Fraction:
    """A short decimal in the non-empty interval from `lo` to `hi` (each end open or
    closed): the first of `prefer` inside, else the shortest, nearest the middle (the lower
    of two)."""
    for x in prefer:
        if (lo < x if lo_open else lo <= x) and (x < hi if hi_open else x <= hi):
            return x
    for digits in range(64):
        scale = 10**digits
        first = math.floor(lo * scale) + 1 if lo_open else math.ceil(lo * scale)
        last = math.ceil(hi * scale) - 1 if hi_open else math.floor(hi * scale)
        if first <= last:
            mid = (lo + hi) * scale / 2
            return Fraction(min(range(first, last + 1), key=lambda k: (abs(k - mid), k)), scale)
    raise AssertionError(f"no short decimal between {lo} and {hi}")


class _Bounds:
    """The PE bounds of a group of jobs of one class, and the keys that can reproduce them.

    Each job ``(P, M, X)`` allows ``min_frac`` in ``((M - 1)/P, M/P]`` (and <= 1) and
    ``max_frac`` in ``[X/P, (X + 1)/P)``, or in ``(0, (M + 1)/P)`` when ``X == M`` (the
    maximum is raised to the minimum); a group keeps the intersections, and the common
    absolute bound (None once two jobs differ)."""

    __slots__ = ("triples", "min_lo", "min_hi", "max_lo", "max_hi", "abs_min", "abs_max")

    def __init__(self, pes: int, lo: int, hi: int) -> None:
        self.triples = [(pes, lo, hi)]
        self.min_lo, self.min_hi = Fraction(lo - 1, pes), min(Fraction(lo, pes), Fraction(1))
        self.max_lo = Fraction(0) if hi == lo else Fraction(hi, pes)
        self.max_hi = Fraction(hi + 1, pes)
        self.abs_min: int | None = lo
        self.abs_max: int | None = hi

    def merged(self, other: _Bounds) -> _Bounds | None:
        """The group of both, or None if no pair of keys reproduces its bounds."""
        g = _Bounds.__new__(_Bounds)
        g.triples = self.triples + other.triples
        g.min_lo, g.min_hi = max(self.min_lo, other.min_lo), min(self.min_hi, other.min_hi)
        g.max_lo, g.max_hi = max(self.max_lo, other.max_lo), min(self.max_hi, other.max_hi)
        g.abs_min = self.abs_min if self.abs_min == other.abs_min else None
        g.abs_max = self.abs_max if self.abs_max == other.abs_max else None
        if (g.min_lo < g.min_hi or g.abs_min is not None) and \
                (g.max_lo < g.max_hi or g.abs_max is not None):
            return g
        return None

    def tokens(self, prefer_min: Sequence[Fraction],
               prefer_max: Sequence[Fraction]) -> tuple[str, str]:
        """The ``min_*`` and ``max_*`` keys of the group, fractions preferred."""
        a: Fraction | None = None
        if self.min_lo < self.min_hi:
            a = _pick(self.min_lo, True, self.min_hi, False, prefer_min)
            low = f"min_frac={decimal_text(a)}"
        else:
            low = f"min_pes={self.abs_min}"
        if self.max_lo < self.max_hi:
            # max_frac > 0 (0 is an open end), and >= min_frac when both are fractions: the
            # interval stays non-empty, as every job's max_hi exceeds its M/P >= a.
            lo = self.max_lo if a is None else max(self.max_lo, a)
            b = _pick(lo, lo == 0, self.max_hi, True, prefer_max)
            high = f"max_frac={decimal_text(b)}"
        else:
            high = f"max_pes={self.abs_max}"
        return low, high


def _bound_groups(triples: Iterable[tuple[int, int, int]], prefer_min: Sequence[Fraction],
                  prefer_max: Sequence[Fraction]) -> dict[tuple[int, int, int], tuple[str, str]]:
    """``(pes, min_pes, max_pes)`` -> the bound keys of its group (first fit, ascending)."""
    groups: list[_Bounds] = []
    for t in sorted(triples):
        one = _Bounds(*t)
        for i, g in enumerate(groups):
            both = g.merged(one)
            if both is not None:
                groups[i] = both
                break
        else:
            groups.append(one)
    out = {}
    for g in groups:
        keys = g.tokens(prefer_min, prefer_max)
        out.update((t, keys) for t in g.triples)
    return out


def _app_table(jobs: Sequence[Job], prefer_fracs: tuple[float, float] | None
               ) -> tuple[list[int | None], list[str]]:
    """The CosimApp executable number of each job (None: no line, keep its raw field 14), and
    the CosimApp lines in number order."""
    keys = [_key(j) for j in jobs]
    classes: dict[tuple, set[tuple[int, int, int]]] = {}
    for k in keys:
        if k is not None:
            classes.setdefault(k[0], set()).update([k[1:]] if len(k) > 1 else [])
    if not classes:
        return [None] * len(jobs), []
    prefer = [] if prefer_fracs is None else [check_fracs(*prefer_fracs)]
    prefer.append(check_fracs(DEFAULT_MIN_FRAC, DEFAULT_MAX_FRAC))
    prefer_min, prefer_max = [a for a, _ in prefer] + [Fraction(1)], [b for _, b in prefer]
    line_of: dict[tuple, tuple] = {}
    for info, triples in classes.items():
        *head, kind, model = info
        kind_key = () if kind == "rigid" else (f"kind={kind}",)
        if kind in MARKABLE_KINDS:
            for t, bounds in _bound_groups(triples, prefer_min, prefer_max).items():
                line_of[(info, *t)] = (*head, (*kind_key, *bounds, *model))
        else:
            line_of[(info,)] = (*head, (*kind_key, *model))
    base = max((int(j.swf[13]) for j, k in zip(jobs, keys, strict=True)
                if j.swf is not None and k is None), default=0)
    numbers = {li: max(base, 0) + 1 + n for n, li in enumerate(sorted(set(line_of.values())))}
    return ([None if k is None else numbers[line_of[k]] for k in keys],
            [_app_line(num, li) for li, num in numbers.items()])


def _app_line(number: int, info: tuple) -> str:
    category, app, priority, exclusion_ok, params, extra = info
    tokens = [f"{number}", f"category={category}", f"app={app}", f"priority={priority}"]
    if exclusion_ok:
        tokens.append("exclusion_ok=1")
    tokens += extra
    for key, value in params:
        if not key or "=" in key or any(c.isspace() for c in key + value):
            raise ValueError(f"app parameter {key}={value!r} cannot travel in an SWF comment "
                             "(no spaces, no '=' in the key)")
        if key in _RESERVED:
            raise ValueError(f"app parameter name {key!r} is reserved")
        tokens.append(f"{key}={value}")
    if any(c.isspace() or c == "=" for c in category + app):
        raise ValueError(f"category/app {category!r}/{app!r} cannot contain spaces or '='")
    return " ".join(tokens)


def _header_text(pairs: list[tuple[str, str]]) -> str:
    out = io.StringIO()
    for key, value in pairs:
        lines = [ln.strip() for ln in value.split("\n")]
        first, rest = lines[0], [ln for ln in lines[1:] if ln]
        out.write(f"; {key}: {first}".rstrip() + "\n" if key else f"; {first}\n")
        for ln in rest:
            out.write(f";        {ln}\n")
    return out.getvalue()


def _build_header(header: Header, n: int, apps: list[str],
                  schedule: bool) -> list[tuple[str, str]]:
    pairs = [(k, v) for k, v in _pairs(header) if k != COSIM_APP_KEY]
    _set(pairs, "Version", "2.2", at=0)
    if schedule:
        _set(pairs, "Computer", "cosim", at=1)
        pairs.append(("Note", _SCHEDULE_NOTE))
    _set(pairs, "MaxJobs", str(n))
    _set(pairs, "MaxRecords", str(n))
    pairs.extend((COSIM_APP_KEY, text) for text in apps)
    return pairs


def _raw(job: Job, i: int, default: float = -1) -> float:
    return default if job.swf is None else job.swf[i]


def _job_fields(job: Job, exe: int | None) -> list[str]:
    """The 18 fields of a workload line (rules in the module docstring)."""
    raw = job.swf
    f = [format_value(v) for v in raw] if raw is not None else ["-1"] * N_FIELDS
    f[0] = str(job.id)
    if raw is None or seconds_to_ticks(f[1]) != job.submit:
        f[1] = format_ticks(job.submit)
    if raw is None or raw[3] <= 0 or seconds_to_ticks(f[3]) != job.runtime:
        f[3] = format_ticks(job.runtime)
    if raw is None or job.pes not in (raw[4], raw[7]):
        f[7] = str(job.pes)
    keep_req = raw is not None and (
        seconds_to_ticks(f[8]) == job.walltime if raw[8] > 0 else job.walltime == job.runtime)
    if not keep_req:
        f[8] = format_ticks(job.walltime)
    if raw is None:
        f[10] = "1"
    f[11], f[12], f[14], f[15] = (str(job.user), str(job.group), str(job.queue),
                                  str(job.partition))
    if exe is not None:
        f[13] = str(exe)
    return f


def _cores_held(hosts: Any, before: Sequence[int]) -> int:
    """The cores of `hosts` given `before`, the cores of the hosts below each index (a prefix
    sum, one entry more than the hosts): by runs of hosts for an `IndexSet`."""
    runs = getattr(hosts, "runs", None)
    if runs is None:
        return sum(before[h + 1] - before[h] for h in hosts)
    return sum(before[f + n] - before[f] for f, n in runs)


def _schedule_rows(cols: OutcomeColumns, order: Sequence[int], jobs: Sequence[Job],
                   exes: Sequence[int | None], cores_per_host: int | Sequence[int]) -> str:
    """The lines of a schedule (rules in the module docstring), a column at a time
    (`cosim.output.textrows`), of the outcomes of `cols` (`OutcomeColumns`) in `order`
    (their positions there; `jobs` their jobs in that order); `cores_per_host` one count, or
    the prefix sums of the hosts' counts (`_cores_held`). ValueError for an unknown status or
    inconsistent times, at the first such outcome in `order`."""
    import numpy as np

    from cosim.output import textrows

    o = np.asarray(order, dtype=np.int64)
    status = [cols.status[i] for i in order]
    submit, start, end = cols.submit[o], cols.start[o], cols.end[o]
    n = len(jobs)
    known = np.fromiter((s in _STATUS for s in status), dtype=bool, count=n)
    never = np.fromiter((s in ("rejected", "dropped") for s in status), dtype=bool, count=n)
    timed = cols.has_start[o] & cols.has_end[o]
    fine = never | (timed & (start >= submit) & (end >= start))
    bad = np.flatnonzero(~known | ~fine)
    if len(bad):
        k = int(bad[0])
        job = jobs[k]
        if not known[k]:
            raise ValueError(f"job {job.id}: unknown outcome status {status[k]!r}")
        out = cols.outcomes[int(o[k])]
        raise ValueError(f"job {job.id}: inconsistent times submit={job.submit} "
                         f"start={out.start} end={out.end}")
    # the cores held, in Python ints (a huge core count must not wrap)
    if isinstance(cores_per_host, int):
        cores = [None if v else h * cores_per_host
                 for h, v in zip(cols.hosts[o].tolist(), never.tolist(), strict=True)]
    else:
        cores = [None if v else _cores_held(cols.outcomes[i].hosts, cores_per_host)
                 for i, v in zip(o.tolist(), never.tolist(), strict=True)]
    columns = [
        textrows.int_array(cols.id[o]), textrows.tick_array(submit),
        textrows.tick_array(start - submit, never, "-1"),
        textrows.tick_array(end - start, never, "-1"), textrows.ints(cores, "-1"),
        ["-1"] * n, ["-1"] * n, textrows.int_array(cols.pes[o]),
        textrows.tick_array(cols.walltime[o]), _raw_texts(jobs, 9),
        textrows.int_array(np.fromiter(map(_STATUS.__getitem__, status), dtype=np.int64,
                                       count=n)),
        textrows.ints(j.user for j in jobs), textrows.ints(j.group for j in jobs),
        textrows.ints(int(_raw(j, 13)) if e is None else e for j, e in zip(jobs, exes,
                                                                           strict=True)),
        textrows.ints(j.queue for j in jobs), textrows.ints(j.partition for j in jobs),
        _raw_texts(jobs, 16), _raw_texts(jobs, 17),
    ]
    return textrows.rows(columns, " ")


def _raw_texts(jobs: Sequence[Job], i: int) -> list[str]:
    """`format_value` of each job's raw field `i` (-1 without one), each distinct value
    formatted once (`textrows.distinct`)."""
    from cosim.output import textrows

    return textrows.distinct([-1 if j.swf is None else j.swf[i] for j in jobs], format_value)


def _write_atomic(path: str | os.PathLike[str], text: str) -> None:
    data = text.encode("utf-8")
    if Path(path).name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=9, mtime=0)
    with atomic_open(path, "wb") as fh:
        fh.write(data)


def write_jobs_swf(path: str | os.PathLike[str], jobs: Iterable[Job], *,
                   header: Header = (), prefer_fracs: tuple[float, float] | None = None) -> None:
    """Write a workload (jobs not yet simulated) as SWF v2.2.

    Parameters
    ----------
    path:
        The file to write (replaced atomically; gzip when the name ends in ``.gz``).
    jobs:
        The jobs; written sorted by ``(submit, id)``.
    header:
        Header comments (e.g. `SwfWorkload.header`); see the module docstring for the keys the
        writer sets.
    prefer_fracs:
        ``(min_frac, max_frac)`` to write the PE bounds of moldable and malleable jobs with
        wherever they reproduce them (pass those the jobs were marked with, e.g. by
        `cosim.workload.marking.mark_malleable`); only the text of the CosimApp lines depends
        on it, never what reads back.

    Raises
    ------
    InputError
        If the file cannot be written.
    ValueError
        For a header key that is not one word, or app information that cannot be written in
        a comment (spaces, ``=`` in a key, a reserved key such as ``kind`` as app parameter).
    """
    ordered = sorted(jobs, key=lambda j: (j.submit, j.id))
    exes, apps = _app_table(ordered, prefer_fracs)
    buf = io.StringIO()
    buf.write(_header_text(_build_header(header, len(ordered), apps, schedule=False)))
    for job, exe in zip(ordered, exes, strict=True):
        buf.write(" ".join(_job_fields(job, exe)) + "\n")
    _write_atomic(path, buf.getvalue())


def write_swf(path: str | os.PathLike[str], outcomes: Iterable[JobOutcome], *,
              header: Header = (), cores_per_host: int | Sequence[int] = 1,
              prefer_fracs: tuple[float, float] | None = None,
              columns: OutcomeColumns | None = None) -> None:
    """Write a simulated schedule as SWF v2.2, one line per job outcome.

    Parameters
    ----------
    path:
        The file to write (replaced atomically; gzip when the name ends in ``.gz``).
    outcomes:
        What the simulation made of every job, rejected ones included; written sorted by
        ``(submit, id)``.
    header:
        Header comments: pass e.g. the input trace's header plus ``MaxNodes``/``MaxProcs`` of
        the simulated platform. ``Version`` (2.2), ``Computer`` (cosim), ``MaxJobs``,
        ``MaxRecords`` and ``CosimApp`` are set by the writer, and a ``Note`` stating the
        conventions of the file is appended.
    cores_per_host:
        PEs per host, for the allocated-processors field: one count for every host, or one
        per host index.
    prefer_fracs:
        As for `write_jobs_swf`.
    columns:
        The outcomes' `cosim.output.columns.OutcomeColumns` when the caller has them (else
        made from `outcomes`).

    Raises
    ------
    InputError
        If the file cannot be written.
    ValueError
        For an outcome with an unknown status or inconsistent times, or a bad header key.
    """
    import numpy as np

    from cosim.output.columns import OutcomeColumns

    cols = columns or OutcomeColumns.of(list(outcomes))
    order = np.lexsort((cols.id, cols.submit)).tolist()  # by (submit, id)
    if not isinstance(cores_per_host, int):
        counts = [int(c) for c in cores_per_host]
        cores_per_host = (counts[0] if counts and len(set(counts)) == 1 else
                          [0, *itertools.accumulate(counts)])
    jobs = [cols.jobs[i] for i in order]
    exes, apps = _app_table(jobs, prefer_fracs)
    buf = io.StringIO()
    buf.write(_header_text(_build_header(header, len(order), apps, schedule=True)))
    buf.write(_schedule_rows(cols, order, jobs, exes, cores_per_host))
    _write_atomic(path, buf.getvalue())
