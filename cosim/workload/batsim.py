"""Batsim interoperability: its JSON workloads in, its ``jobs.csv`` out.

**Workloads** (`read_batsim`). A Batsim workload is a JSON object with ``nb_res`` (the
machine's resources), ``jobs`` (each with ``id``, ``subtime`` in seconds, ``res`` the
resources it asks for, ``profile`` a name, optional ``walltime`` in seconds, -1 or absent for
none) and ``profiles`` (name -> ``{"type": ..., ...}``). cosim replays ``delay`` profiles: the
job runs for ``delay`` seconds, as a trace job of an SWF file; a job whose profile is of
another type (``parallel``, ``parallel_homogeneous``, ``composed``, ...: work on a SimGrid
platform, which cosim does not model) is refused with its job, profile and type named. A
resource is a host with all its cores (``hosts = res``, ``pes = res x cores``), the machine
``nb_res`` hosts (the header machine
of `cosim.experiment`: a replay without ``--hosts``/``--platform`` runs on it); a job without
a walltime gets its run time as requested time, as an SWF job with field 9 unknown does; a
job larger than the machine is rejected (warned about). Ids must be integers (JSON numbers or
decimal strings: ``"42"``); Batsim's ``workload!id`` form keeps the part after ``!``. The
profile's name becomes the job's category where it is made of letters, digits and ``_.:+-/``.
Every problem is an `InputError` naming the file, the JSON line where known, and the job.

**Schedules** (`write_batsim_jobs`). ``batsim_jobs.csv`` has the columns of Batsim's
``_jobs.csv`` in its order (`BATSIM_COLUMNS`), times in seconds: ``success`` 1 for a job that
completed, ``final_state`` ``COMPLETED_SUCCESSFULLY``, ``COMPLETED_WALLTIME_REACHED`` (killed
at its requested time) or ``REJECTED`` (rejected or dropped unstarted by a value policy: then
every time is -1 and no resource is allocated),
``stretch`` = turnaround / execution time (``inf`` for an instantaneous job that waited, 1 if it
did not), ``allocated_resources`` the hosts it used as Batsim's interval set (``0-3 7``),
``consumed_energy`` -1 (not modelled) and ``metadata`` empty; ``profile`` is the job's category,
else its app (``rigid`` for a trace job). evalys (``JobSet.from_csv``) reads it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from cosim.errors import InputError
from cosim.workload.jobs import CATEGORY_CHARS, Job, JobOutcome
from cosim.workload.swf import SwfWorkload, seconds_to_ticks

if TYPE_CHECKING:  # (the output side loads with the writers)
    from cosim.output.columns import OutcomeColumns

__all__ = ["BATSIM_COLUMNS", "is_batsim", "read_batsim", "batsim_machine", "write_batsim_jobs"]

BATSIM_COLUMNS = ("job_id", "workload_name", "profile", "submission_time",
                  "requested_number_of_resources", "requested_time", "success", "final_state",
                  "starting_time", "execution_time", "finish_time", "waiting_time",
                  "turnaround_time", "stretch", "allocated_resources", "consumed_energy",
                  "metadata")
_FINAL = {"completed": "COMPLETED_SUCCESSFULLY", "killed": "COMPLETED_WALLTIME_REACHED",
          "rejected": "REJECTED", "dropped": "REJECTED"}


def is_batsim(path: str | os.PathLike[str]) -> bool:
    """True for a Batsim JSON workload (by its ``.json`` suffix)."""
    return os.fspath(path).lower().endswith(".json")


def _load(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        raise InputError("no such file", file=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg}, column {exc.colno})", file=path,
                         line=exc.lineno) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read ({getattr(exc, 'strerror', None) or exc})",
                         file=path) from None
    if not isinstance(doc, dict):
        raise InputError("a Batsim workload is a JSON object", file=path)
    return doc


def _count(value: Any, what: str, path: str, *, positive: bool = True) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) or (
        isinstance(value, float) and value.is_integer())
    if not ok or (positive and value < 1):
        raise InputError(f"{what} must be a {'positive ' if positive else ''}integer, got "
                         f"{value!r}", file=path, field=what)
    return int(value)


def _seconds(value: Any, what: str, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value) or value < 0:
        raise InputError(f"{what} must be a number of seconds >= 0, got {value!r}", file=path,
                         field=what)
    return seconds_to_ticks(repr(value) if isinstance(value, float) else str(value))


def batsim_machine(path: str | os.PathLike[str]) -> tuple[int, str]:
    """``(nb_res, "nb_res N")``: the machine a Batsim workload describes, in hosts."""
    path = os.fspath(path)
    n = _count(_load(path).get("nb_res"), "nb_res", path)
    return n, f"nb_res {n}"


def read_batsim(path: str | os.PathLike[str], *, cores_per_host: int = 1,
                max_hosts: int | None = None,
                warn: Callable[[str], None] | None = None) -> SwfWorkload:
    """The jobs of a Batsim JSON workload (module docstring), as an `SwfWorkload` whose header
    holds ``MaxNodes`` = ``nb_res``."""
    path = os.fspath(path)
    doc = _load(path)
    nb_res = _count(doc.get("nb_res"), "nb_res", path)
    profiles = doc.get("profiles", {})
    jobs_in = doc.get("jobs")
    if not isinstance(profiles, dict) or not isinstance(jobs_in, list):
        raise InputError("needs \"jobs\" (a list) and \"profiles\" (an object)", file=path)
    jobs: list[Job] = []
    rejected: list[Job] = []
    seen: set[int] = set()
    for k, item in enumerate(jobs_in):
        where = f"jobs[{k}]"
        if not isinstance(item, dict):
            raise InputError(f"{where} is not an object", file=path, field=where)
        raw_id = item.get("id")
        text = str(raw_id).rsplit("!", 1)[-1] if raw_id is not None else ""
        if isinstance(raw_id, bool) or not text.isdigit():
            raise InputError(f"{where}: id {raw_id!r} is not an integer (cosim numbers jobs)",
                             file=path, field=f"{where}.id")
        jid = int(text)
        if jid in seen:
            raise InputError(f"{where}: job id {jid} appears twice", file=path,
                             field=f"{where}.id")
        seen.add(jid)
        for key in ("subtime", "res", "profile"):
            if key not in item:
                raise InputError(f"job {jid}: no {key!r}", file=path, field=f"{where}.{key}")
        name = item["profile"]
        profile = profiles.get(name) if isinstance(name, str) else None
        if not isinstance(profile, dict):
            raise InputError(f"job {jid}: profile {name!r} is not defined in \"profiles\"",
                             file=path, field=f"{where}.profile")
        kind = profile.get("type")
        if kind != "delay":
            raise InputError(f"job {jid}: profile {name!r} is of type {kind!r}; cosim replays "
                             "delay profiles only (their run time is the delay), not work on "
                             "a SimGrid platform", file=path, field=f"{where}.profile")
        runtime = _seconds(profile.get("delay"), f"profiles.{name}.delay", path)
        submit = _seconds(item["subtime"], f"{where}.subtime", path)
        res = _count(item["res"], f"{where}.res", path)
        wall = item.get("walltime", -1)
        walltime = runtime if wall is None or (isinstance(wall, int | float)
                                              and not isinstance(wall, bool) and wall < 0) \
            else _seconds(wall, f"{where}.walltime", path)
        # a resource is a host (all its cores), as nb_res counts hosts
        job = Job(id=jid, submit=submit, hosts=res, pes=res * cores_per_host,
                  walltime=walltime, runtime=runtime,
                  category=name if name and CATEGORY_CHARS.issuperset(name) else "")
        (rejected if max_hosts is not None and job.hosts > max_hosts else jobs).append(job)
    jobs.sort(key=lambda j: (j.submit, j.id))
    rejected.sort(key=lambda j: (j.submit, j.id))
    if warn is not None:
        for j in rejected[:10]:
            warn(f"{path}: job {j.id} needs {j.hosts} hosts, the platform has {max_hosts}: "
                 "rejected")
        if len(rejected) > 10:
            warn(f"{path}: {len(rejected)} jobs rejected in all (larger than {max_hosts} "
                 "hosts)")
    return SwfWorkload(path=path, header=(("MaxNodes", str(nb_res)),), jobs=tuple(jobs),
                       rejected=tuple(rejected), read=len(jobs_in), skipped_runtime=0,
                       skipped_cancelled=0, skipped_procs=0, rejected_too_big=len(rejected),
                       bad_lines=0, cores_per_host=cores_per_host, procs_field="requested")


def _batsim_text(cols: OutcomeColumns, workload: str) -> str:
    """The rows of ``batsim_jobs.csv`` (without the header) by job id, a column at a time
    (`cosim.output.textrows`, from the run's `OutcomeColumns`)."""
    import numpy as np

    from cosim.output import textrows
    from cosim.output.runfiles import csv_field as field  # (quoted as CSV wants)

    # a rejected or dropped job never ran: its times are -1, it holds no resource
    n = len(cols)
    rejected = np.fromiter(map("rejected".__eq__, cols.status), dtype=bool, count=n)
    done = cols.has_start & cols.has_end & ~rejected
    never = ~done
    run, turn = cols.end - cols.start, cols.end - cols.submit
    ok = done.tolist()
    # (the state of a job that never ran is rejected's, whatever its status)
    success = textrows.distinct(cols.status, lambda s: "1" if s == "completed" else "0")
    final = textrows.distinct(cols.status, lambda s: _FINAL.get(s, "COMPLETED_FAILED"))
    hosts = cols.host_text
    if not done.all():
        hosts = list(hosts)
        for i in np.flatnonzero(never).tolist():
            success[i], final[i], hosts[i] = "0", _FINAL["rejected"], ""
    columns = [
        textrows.int_array(cols.id), [field(workload)] * n,
        textrows.distinct([j.category or j.app for j in cols.jobs], field),
        textrows.tick_array(cols.submit), textrows.int_array(cols.job_hosts),
        textrows.tick_array(cols.walltime), success, final,
        textrows.tick_array(cols.start, never, "-1"), textrows.tick_array(run, never, "-1"),
        textrows.tick_array(cols.end, never, "-1"),
        textrows.tick_array(cols.start - cols.submit, never, "-1"),
        textrows.tick_array(turn, never, "-1"),
        ["-1" if not d else repr(t / r) if r else ("inf" if t else "1")  # stretch
         for d, t, r in zip(ok, turn.tolist(), run.tolist(), strict=True)],
        hosts,
        ["-1"] * n, [""] * n,
    ]
    return textrows.rows(columns, ",")


def write_batsim_jobs(path: str | os.PathLike[str], outcomes: Sequence[JobOutcome],
                      workload: str, columns: OutcomeColumns | None = None) -> None:
    """``batsim_jobs.csv`` (module docstring), atomically; `workload` fills
    ``workload_name``; `columns`: the outcomes' `OutcomeColumns` when the caller has them."""
    from cosim.output.columns import OutcomeColumns
    from cosim.output.runfiles import atomic_write

    text = _batsim_text(columns or OutcomeColumns.of(outcomes), workload)
    atomic_write(path, (",".join(BATSIM_COLUMNS) + "\n", text))

