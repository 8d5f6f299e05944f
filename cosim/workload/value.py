"""Job value (Kumbhare et al.; docs/reference/policies.md §2.2, §3.3): what a job earns as a
function of when it completes.

A job's value is ``v`` while it completes within its *soft threshold* ST of its submission,
decays towards ``u`` (``value_min``, default 0) until its *hard threshold* HT, and is 0 from
HT on (elapsed time ``a = completion - submit``)::

    V(a) = v                                     a <= ST
         = v - (v - u) (a - ST) / (HT - ST)      ST < a < HT   (decay "linear", default)
         = v exp(-k (a - ST)), k = ln(v/u)/(HT - ST)            (decay "exp": needs u > 0)
         = u                                                    (decay "step")
         = 0                                     a >= HT

Killed, dropped and rejected jobs earn 0. The thresholds are given as multiples of the
job's requested time (``soft=2``: twice its walltime) or in seconds with an ``s`` suffix
(``soft=3600s``); defaults σ = 2 and η = 6 (spec §2.7, cosim's choice: the paper's generator
is not published). A trace carries values per executable number in its ``; CosimApp:`` lines
(keys ``value``, ``value_min``, ``soft``, ``hard``, ``decay``) or per job in a CSV sidecar
(`read_values`: ``job_id,value,soft_s,hard_s[,value_min,decay,power_beta]``, seconds after
submit), which wins. Thresholds are integer ticks, read from decimal seconds exactly
(`cosim.core.clock.seconds_to_ticks`: ``4497766.670985987`` is that many ticks, whatever a
float would make of it); values are floats computed in one fixed order.
`cosim.workload.swf_write.write_jobs_swf` does not write values back (a job's thresholds
are then absolute): keep the sidecar with the trace.
"""

from __future__ import annotations

import csv
import math
import os

import numpy as np
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cosim.core.clock import duration_problem, seconds_to_ticks
from cosim.errors import InputError
from cosim.workload.jobs import Job, JobOutcome

__all__ = ["JobValue", "VALUE_KEYS", "DECAYS", "value_at", "value_if_started", "zero_from",
           "earned",
           "value_params", "value_row", "values_at",
           "value_from_pairs",
           "check_value_pairs", "read_values", "productivity"]

#: the CosimApp keys of a job's value
VALUE_KEYS = ("value", "value_min", "soft", "hard", "decay")
DECAYS = ("linear", "exp", "step")
#: the thresholds of a job given only a value: ST = 2, HT = 6 times its requested time
DEFAULT_SOFT, DEFAULT_HARD = 2.0, 6.0


@dataclass(frozen=True, slots=True, kw_only=True)
class JobValue:
    """A job's value curve (module docstring): `v` at most `soft` ticks after submission,
    then decaying (`decay`) towards `u` until `hard` ticks, 0 from then on."""

    v: float
    u: float = 0.0
    soft: int
    hard: int
    decay: Literal["linear", "exp", "step"] = "linear"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.v) and self.v > 0):
            raise ValueError(f"value must be > 0, got {self.v!r}")
        if not (math.isfinite(self.u) and 0 <= self.u <= self.v):
            raise ValueError(f"value_min must be in [0, value], got {self.u!r}")
        if not 0 < self.soft <= self.hard:
            raise ValueError(f"thresholds need 0 < soft <= hard, got {self.soft}, {self.hard}")
        if self.decay not in DECAYS:
            raise ValueError(f"unknown decay {self.decay!r} (known: {', '.join(DECAYS)})")
        if self.decay == "exp" and self.u <= 0:
            raise ValueError("an exp decay needs value_min > 0 (it never reaches 0)")


def value_at(value: JobValue, elapsed: int) -> float:
    """V after `elapsed` ticks since submission (module docstring)."""
    if elapsed <= value.soft:
        return value.v
    if elapsed >= value.hard:
        return 0.0
    if value.decay == "step":
        return value.u
    frac = (elapsed - value.soft) / (value.hard - value.soft)
    if value.decay == "exp":
        return value.v * math.exp(-math.log(value.v / value.u) * frac)
    return value.v - (value.v - value.u) * frac


#: `value_params` of a job without a value: 1 that never decays
_NO_VALUE = (1.0, 0.0, math.inf, math.inf, 0.0)


def value_row(job: Job) -> tuple[float, float, float, float, float]:
    """`job`'s value curve as ``(v, u, soft, hard, decay)`` (`value_params`)."""
    jv = job.value
    return _NO_VALUE if jv is None else (jv.v, jv.u, jv.soft, jv.hard, DECAYS.index(jv.decay))


def value_params(jobs: Sequence[Job]) -> np.ndarray:
    """The value curves of `jobs` as a float array of rows ``(v, u, soft, hard, decay)`` (the
    decay as its index in `DECAYS`; a job without a value: 1 that never decays), for
    `values_at`."""
    rows = [value_row(j) for j in jobs]
    return np.array(rows, dtype=np.float64).reshape(len(rows), 5)


def values_at(params: np.ndarray, elapsed: np.ndarray) -> np.ndarray:
    """`value_at` of many jobs at once: ``params`` from `value_params` (n rows), ``elapsed``
    of shape (n,) or (n, k) (k completions per job); the same numbers as `value_at`, by the
    same operations in float64."""
    e = np.asarray(elapsed, dtype=np.float64)
    shape = (-1,) + (1,) * (e.ndim - 1)
    v, u, soft, hard, decay = (params[:, i].reshape(shape) for i in range(5))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        frac = (e - soft) / (hard - soft)
        lin = v - (v - u) * frac
        expo = v * np.exp(-np.log(v / u) * frac)
    mid = np.where(decay == 0, lin, np.where(decay == 1, expo, u))
    return np.where(e <= soft, v, np.where(e >= hard, 0.0, mid))


def zero_from(value: JobValue) -> int:
    """The elapsed ticks from which `value` is 0 (`value_at`: v up to and including the soft
    threshold): its hard threshold, just past it when the two coincide, and just past the
    soft one for a ``step`` decay to 0."""
    if value.decay == "step" and value.u == 0.0 or value.soft == value.hard:
        return value.soft + 1
    return value.hard


def value_if_started(job: Job, now: int) -> float:
    """What `job` would earn starting at `now` and running for its requested time (1 for a
    job without a value: it never decays): what value orders rank and drop by."""
    if job.value is None:
        return 1.0
    return value_at(job.value, now + job.walltime - job.submit)


def earned(outcome: JobOutcome) -> float:
    """What a job earned: its value at its completion; 0 unless it completed, and for a job
    without a value."""
    value = outcome.job.value
    if value is None or outcome.status != "completed" or outcome.end is None:
        return 0.0
    return value_at(value, outcome.end - outcome.job.submit)


def productivity(outcomes: Sequence[JobOutcome]) -> dict[str, float]:
    """System productivity (the value earned, summed in job id order), normalised by the
    value all jobs could earn, the completion rate (jobs completed / jobs submitted) and the
    jobs dropped unstarted because they could no longer earn anything."""
    ordered = sorted(outcomes, key=lambda o: o.job.id)
    total = sum(earned(o) for o in ordered)
    possible = sum(o.job.value.v for o in ordered if o.job.value is not None)
    done = sum(1 for o in ordered if o.status == "completed")
    return {"productivity": total,
            "normalized_productivity": total / possible if possible else 0.0,
            "completion_rate": done / len(ordered) if ordered else 0.0,
            "dropped": sum(1 for o in ordered if o.status == "dropped")}


def _threshold(text: str, walltime: int, *, what: str) -> int:
    """``2`` (times the requested time) or ``3600s`` (seconds), as ticks."""
    try:
        if text.endswith("s"):
            seconds = float(text[:-1])
            problem = duration_problem(seconds)
            if problem:
                raise ValueError(problem)
            return seconds_to_ticks(text[:-1].strip())
        factor = float(text)
    except ValueError as exc:
        msg = str(exc) if "seconds" in str(exc) else (
            f"expected a multiple of the requested time (2) or seconds (3600s), got {text!r}")
        raise ValueError(f"{what}: {msg}") from None
    if not (math.isfinite(factor) and factor > 0):
        raise ValueError(f"{what}: a multiple of the requested time must be > 0, got {text!r}")
    return max(round(factor * max(walltime, 1)), 1)


def value_from_pairs(pairs: Mapping[str, str], walltime: int) -> JobValue | None:
    """The value of a job of requested time `walltime` (ticks) from CosimApp-style pairs
    (`VALUE_KEYS`; others ignored); None when none is given. ValueError naming the key."""
    if not any(k in pairs for k in VALUE_KEYS):
        return None
    try:
        v = float(pairs.get("value", "1"))
        u = float(pairs.get("value_min", "0"))
    except ValueError:
        raise ValueError(f"value and value_min must be numbers, got {pairs.get('value')!r}, "
                         f"{pairs.get('value_min')!r}") from None
    soft = _threshold(pairs.get("soft", str(DEFAULT_SOFT)), walltime, what="soft")
    hard = _threshold(pairs.get("hard", str(DEFAULT_HARD)), walltime, what="hard")
    return JobValue(v=v, u=u, soft=soft, hard=hard, decay=pairs.get("decay", "linear"))


def check_value_pairs(pairs: Mapping[str, str]) -> None:
    """What `value_from_pairs` can check before a job's requested time is known: the
    numbers, the decay, each threshold, and their order when both are in the same unit
    (multiples, or seconds); ValueError naming the key."""
    soft = pairs.get("soft", str(DEFAULT_SOFT))
    hard = pairs.get("hard", str(DEFAULT_HARD))
    if soft.endswith("s") == hard.endswith("s"):
        value_from_pairs(pairs, 1_000_000_000)
        return
    _threshold(soft, 1, what="soft")
    _threshold(hard, 1, what="hard")
    value_from_pairs({**pairs, "soft": "1", "hard": "1"}, 1)


def read_values(path: str | os.PathLike[str], jobs: Sequence[Job], *,
                skipped: frozenset[int] = frozenset(),
                betas: dict[int, float] | None = None) -> dict[int, JobValue]:
    """A sidecar of per-job values: a CSV with a header naming ``job_id``, ``value``,
    ``soft_s`` and ``hard_s`` (seconds after submission) and optionally ``value_min``,
    ``decay`` and ``power_beta`` (the job's compute-boundedness in [0, 1] for the power
    model, put in `betas` when given; an empty cell: none); one row per job, each naming a
    job of `jobs` (rows of the `skipped` jobs of the trace are read and left out).
    `InputError` naming the file, line and field for a missing file or column, a bad number
    or value, an unknown or repeated job."""
    p = Path(path)
    by_id = {j.id: j for j in jobs}
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", file=p) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", file=p) from None
    rows = csv.reader(text.splitlines())
    header = next(rows, None)
    need = ("job_id", "value", "soft_s", "hard_s")
    if header is None or any(k not in [h.strip() for h in header] for k in need):
        raise InputError(f"the header must name {', '.join(need)} (and optionally value_min, "
                         "decay, power_beta)", file=p, line=1)
    names = [h.strip() for h in header]
    unknown = [n for n in names if n not in (*need, "value_min", "decay", "power_beta")]
    if unknown:
        raise InputError(f"unknown column {unknown[0]!r}", file=p, line=1)
    twice = [n for n in names if names.count(n) > 1]
    if twice:
        raise InputError(f"column {twice[0]!r} given twice", file=p, line=1)
    out: dict[int, JobValue] = {}
    seen: set[int] = set()
    for row in rows:
        line = rows.line_num  # the physical line the row ends on
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) != len(names):
            raise InputError(f"{len(row)} fields, the header has {len(names)}", file=p,
                             line=line)
        cell = dict(zip(names, (c.strip() for c in row), strict=True))

        def bad(field: str, problem: str, _line: int = line) -> InputError:
            return InputError(problem, file=p, line=_line, field=field)

        if not cell["job_id"].isdigit():
            raise bad("job_id", f"not a job id: {cell['job_id']!r}")
        jid = int(cell["job_id"])
        if jid in seen:
            raise bad("job_id", f"job {jid} given twice")
        seen.add(jid)
        if jid not in by_id:
            if jid in skipped:
                continue
            raise bad("job_id", f"no job {jid} in the workload")
        nums: dict[str, float] = {}
        for field in ("value", "value_min", "soft_s", "hard_s"):
            text_value = cell.get(field) or ("0" if field == "value_min" else "")
            try:
                nums[field] = float(text_value)
            except ValueError:
                raise bad(field, f"not a number: {text_value!r}") from None
            if not math.isfinite(nums[field]):
                raise bad(field, f"must be finite, got {text_value!r}")
        if nums["value"] <= 0:
            raise bad("value", f"must be > 0, got {cell['value']!r}")
        if not 0 <= nums["value_min"] <= nums["value"]:
            raise bad("value_min", f"must be in [0, value], got {cell.get('value_min')!r}")
        for field in ("soft_s", "hard_s"):
            problem = duration_problem(nums[field])
            if problem:
                raise bad(field, problem)
        soft = max(seconds_to_ticks(cell["soft_s"]), 1)  # exact: compared as ticks
        hard = max(seconds_to_ticks(cell["hard_s"]), 1)
        if not (nums["soft_s"] > 0 and soft <= hard):
            raise bad("hard_s", f"thresholds need 0 < soft_s <= hard_s, got "
                      f"{cell['soft_s']}, {cell['hard_s']}")
        decay = cell.get("decay") or "linear"
        if decay not in DECAYS:
            raise bad("decay", f"unknown decay {decay!r} (known: {', '.join(DECAYS)})")
        if decay == "exp" and nums["value_min"] <= 0:
            raise bad("value_min", "an exp decay needs value_min > 0 (it never reaches 0)")
        beta_text = cell.get("power_beta") or ""
        if beta_text:
            try:
                beta = float(beta_text)
            except ValueError:
                raise bad("power_beta", f"not a number: {beta_text!r}") from None
            if not 0.0 <= beta <= 1.0:
                raise bad("power_beta", f"must be in [0, 1], got {beta_text!r}")
            if betas is not None:
                betas[jid] = beta
        out[jid] = JobValue(v=nums["value"], u=nums["value_min"],
                            soft=soft, hard=hard, decay=decay)
    return out
