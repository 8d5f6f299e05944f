"""Files of a batch run: ``jobs.csv``, ``schedule.swf`` and ``summary.json``, each atomic.

Every file is written to a temporary name in the output directory and renamed into place, so
an interrupted run never leaves a partial file under the final name; ``summary.json`` is
written last and marks a complete run. ``jobs.csv`` has one row per job in id order:
``job_id,submit_s,start_s,end_s,hosts,pes,status,wait_s,walltime_s,runtime_s,category,app,
host_list,yielded,lent,borrowed`` (times in seconds, exact to the nanosecond; start/end/wait
empty for rejected jobs; ``host_list`` as ranges ``0-7 16-23``, borrowed hosts included). The
RCA columns show owner and user (`JobOutcome`), as space-separated ``host@x`` items, empty
when there are none: ``yielded`` — ``17@12.5``: host 17 reported out of work at 12.5 s;
``lent`` — ``17@20``: the job's host 17 first lent to another job at 20 s; ``borrowed`` —
``17@3``: the job ran on host 17 while job 3 owned it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

from cosim.core.files import atomic_open
from cosim.workload.jobs import JobOutcome
from cosim.workload.swf_write import format_ticks

__all__ = ["atomic_write", "write_jobs_csv", "write_summary", "host_ranges"]

JOBS_HEADER = ("job_id,submit_s,start_s,end_s,hosts,pes,status,wait_s,walltime_s,runtime_s,"
               "category,app,host_list,yielded,lent,borrowed")


def atomic_write(path: str | os.PathLike[str], lines: Iterable[str]) -> None:
    """Write `lines` to `path` atomically (`cosim.core.files.atomic_open`)."""
    with atomic_open(path) as fh:
        fh.writelines(lines)


def host_ranges(hosts: Sequence[int]) -> str:
    """``(0, 1, 2, 5)`` -> ``"0-2 5"`` (hosts ascending)."""
    out = []
    i = 0
    while i < len(hosts):
        j = i
        while j + 1 < len(hosts) and hosts[j + 1] == hosts[j] + 1:
            j += 1
        out.append(str(hosts[i]) if i == j else f"{hosts[i]}-{hosts[j]}")
        i = j + 1
    return " ".join(out)


def _at(pairs: Sequence[tuple[int, int]], ticks: bool) -> str:
    """``((17, t), ...)`` -> ``"17@t"`` items; `t` in seconds when `ticks`, else as is."""
    if ticks:
        return " ".join(f"{h}@{format_ticks(t)}" for h, t in pairs)
    return " ".join(f"{h}@{x}" for h, x in pairs)


def _rows(outcomes: Sequence[JobOutcome]) -> Iterable[str]:
    yield JOBS_HEADER + "\n"
    for o in sorted(outcomes, key=lambda o: o.job.id):
        j = o.job
        started = o.start is not None
        start = format_ticks(o.start) if started else ""
        end = format_ticks(o.end) if o.end is not None else ""
        wait = format_ticks(o.start - j.submit) if started else ""
        yield (f"{j.id},{format_ticks(j.submit)},{start},{end},{len(o.hosts) or j.hosts},"
               f"{j.pes},{o.status},{wait},{format_ticks(j.walltime)},"
               f"{format_ticks(j.runtime)},{j.category},{j.app},{host_ranges(o.hosts)},"
               f"{_at(o.yielded, True)},{_at(o.lent, True)},{_at(o.borrowed, False)}\n")


def write_jobs_csv(path: str | os.PathLike[str], outcomes: Sequence[JobOutcome]) -> None:
    """``jobs.csv``: one row per job (see the module docstring)."""
    atomic_write(path, _rows(outcomes))


def write_summary(path: str | os.PathLike[str], summary: dict[str, Any]) -> None:
    """``summary.json``: the run's configuration, metrics and statistics."""
    atomic_write(path, [json.dumps(summary, indent=1, sort_keys=False), "\n"])
