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
workload's categories A..M, Z get 1..14), and that number in field 14. **A workload line**
(`write_jobs_swf`) takes each field the `Job` carries from the Job (1 id, 2 submit, 4 run
time, 8 processors = pes, 9 walltime, 12 user, 13 group, 15 queue, 16 partition), except that
the raw value of `Job.swf` is kept wherever it still reads back to the Job's value (``-1`` in
field 9 when walltime equals runtime; fields 5 and 8 as they were when pes equals either), and
every other field from `Job.swf`, or -1 for a job without one (status: 1). So
``read_swf(write_jobs_swf(read_swf(x)))`` gives the same jobs, raw fields included. **A
schedule line** (`write_swf`): wait = start - submit, run time = end - start, allocated
processors = hosts used x ``cores_per_host`` (the job holds its hosts whole), requested
processors = pes, requested time = walltime, status 1 for ``completed`` and 0 (SWF "failed")
for ``killed`` at its walltime; a ``rejected`` job (never started) is kept, so every job is
accounted for, as status 5 (cancelled) with wait, run time and allocated processors -1; fields
6 and 7 (CPU time, memory used) are -1 (not modelled); fields 10, 17, 18 come from `Job.swf`.
"""

from __future__ import annotations

import gzip
import io
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from cosim.core.clock import TICKS_PER_SECOND
from cosim.core.files import atomic_open
from cosim.workload.jobs import Job, JobOutcome
from cosim.workload.swf import COSIM_APP_KEY, N_FIELDS, seconds_to_ticks

__all__ = ["Header", "write_jobs_swf", "write_swf", "format_ticks", "format_value"]

#: A header: a mapping (a list value repeats the key) or a sequence of ``(key, value)`` pairs.
Header = Mapping[str, str | Sequence[str]] | Sequence[tuple[str, str]]

_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_STATUS = {"completed": 1, "killed": 0, "rejected": 5}
_DEFAULT_INFO: tuple = ("", "rigid", 0, False, ())
_SCHEDULE_NOTE = ("simulated schedule written by cosim: wait = start - submit, run time = "
                  "end - start, allocated processors = hosts x cores per host; status 1 "
                  "completed, 0 killed at its requested time, 5 rejected (never started)")


def format_ticks(ticks: int) -> str:
    """Ticks as exact decimal seconds without trailing zeros: ``1500000000`` -> ``'1.5'``."""
    sign = "-" if ticks < 0 else ""
    whole, frac = divmod(abs(int(ticks)), TICKS_PER_SECOND)
    if not frac:
        return f"{sign}{whole}"
    return f"{sign}{whole}.{frac:09d}".rstrip("0")


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


def _info(job: Job) -> tuple:
    return (job.category, job.app, job.priority, job.exclusion_ok,
            tuple(sorted(job.app_params.items())))


def _app_numbers(jobs: Sequence[Job]) -> dict[tuple, int]:
    infos = sorted({i for i in map(_info, jobs) if i != _DEFAULT_INFO})
    if not infos:
        return {}
    base = max((int(j.swf[13]) for j in jobs if j.swf is not None and _info(j) == _DEFAULT_INFO),
               default=0)
    return {info: max(base, 0) + 1 + k for k, info in enumerate(infos)}


def _app_line(number: int, info: tuple) -> str:
    category, app, priority, exclusion_ok, params = info
    tokens = [f"{number}", f"category={category}", f"app={app}", f"priority={priority}"]
    if exclusion_ok:
        tokens.append("exclusion_ok=1")
    for key, value in params:
        if not key or "=" in key or any(c.isspace() for c in key + value):
            raise ValueError(f"app parameter {key}={value!r} cannot travel in an SWF comment "
                             "(no spaces, no '=' in the key)")
        if key in ("category", "app", "priority", "exclusion_ok"):
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


def _build_header(header: Header, n: int, apps: dict[tuple, int],
                  schedule: bool) -> list[tuple[str, str]]:
    pairs = [(k, v) for k, v in _pairs(header) if k != COSIM_APP_KEY]
    _set(pairs, "Version", "2.2", at=0)
    if schedule:
        _set(pairs, "Computer", "cosim", at=1)
        pairs.append(("Note", _SCHEDULE_NOTE))
    _set(pairs, "MaxJobs", str(n))
    _set(pairs, "MaxRecords", str(n))
    pairs.extend((COSIM_APP_KEY, _app_line(num, info)) for info, num in apps.items())
    return pairs


def _raw(job: Job, i: int, default: float = -1) -> float:
    return default if job.swf is None else job.swf[i]


def _job_fields(job: Job, apps: dict[tuple, int]) -> list[str]:
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
    info = _info(job)
    if info != _DEFAULT_INFO:
        f[13] = str(apps[info])
    return f


def _outcome_fields(out: JobOutcome, apps: dict[tuple, int], cores_per_host: int) -> list[str]:
    """The 18 fields of a schedule line (rules in the module docstring)."""
    job = out.job
    if out.status not in _STATUS:
        raise ValueError(f"job {job.id}: unknown outcome status {out.status!r}")
    if out.status == "rejected":
        wait = run = alloc = "-1"
    else:
        if out.start is None or out.end is None or out.start < job.submit or out.end < out.start:
            raise ValueError(f"job {job.id}: inconsistent times submit={job.submit} "
                             f"start={out.start} end={out.end}")
        wait, run = format_ticks(out.start - job.submit), format_ticks(out.end - out.start)
        alloc = str(len(out.hosts) * cores_per_host)
    info = _info(job)
    exe = apps[info] if info != _DEFAULT_INFO else int(_raw(job, 13))
    return [
        str(job.id), format_ticks(job.submit), wait, run, alloc, "-1", "-1", str(job.pes),
        format_ticks(job.walltime), format_value(_raw(job, 9)), str(_STATUS[out.status]),
        str(job.user), str(job.group), str(exe), str(job.queue), str(job.partition),
        format_value(_raw(job, 16)), format_value(_raw(job, 17)),
    ]


def _write_atomic(path: str | os.PathLike[str], text: str) -> None:
    data = text.encode("utf-8")
    if Path(path).name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=9, mtime=0)
    with atomic_open(path, "wb") as fh:
        fh.write(data)


def write_jobs_swf(path: str | os.PathLike[str], jobs: Iterable[Job], *,
                   header: Header = ()) -> None:
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

    Raises
    ------
    InputError
        If the file cannot be written.
    ValueError
        For a header key that is not one word, or app information that cannot be written in
        a comment (spaces, ``=`` in a key).
    """
    ordered = sorted(jobs, key=lambda j: (j.submit, j.id))
    apps = _app_numbers(ordered)
    buf = io.StringIO()
    buf.write(_header_text(_build_header(header, len(ordered), apps, schedule=False)))
    for job in ordered:
        buf.write(" ".join(_job_fields(job, apps)) + "\n")
    _write_atomic(path, buf.getvalue())


def write_swf(path: str | os.PathLike[str], outcomes: Iterable[JobOutcome], *,
              header: Header = (), cores_per_host: int = 1) -> None:
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
        PEs per host, for the allocated-processors field.

    Raises
    ------
    InputError
        If the file cannot be written.
    ValueError
        For an outcome with an unknown status or inconsistent times, or a bad header key.
    """
    ordered = sorted(outcomes, key=lambda o: (o.job.submit, o.job.id))
    apps = _app_numbers([o.job for o in ordered])
    buf = io.StringIO()
    buf.write(_header_text(_build_header(header, len(ordered), apps, schedule=True)))
    for out in ordered:
        buf.write(" ".join(_outcome_fields(out, apps, cores_per_host)) + "\n")
    _write_atomic(path, buf.getvalue())
