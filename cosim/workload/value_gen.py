"""Generated job values for a trace (docs/reference/policies.md §3.3 "Generator", §2.2, §2.7):
what ``cosim workload values TRACE --seed S --classes 1:0.6,4:0.3,16:0.1 --soft 2 --hard 6
[--arrival-scale 0.5] -o DIR`` writes. Each job gets a value class ``v`` with the given
probabilities (`parse_classes`; the default mix of §2.7 is v ∈ {1, 4, 16} with p = {0.6, 0.3,
0.1}) by one draw ``u = stream(seed, "value", job.id).random()`` of the keyed streams of
`cosim.core.rng` (the mechanism of `cosim.workload.marking`): the first class whose cumulative
probability, summed in the order given, exceeds ``u`` (the last class takes what float
rounding leaves), so a job's class depends on the seed and its id only, never on the other
jobs, their order or their number. Its thresholds are ``soft`` and ``hard`` times its requested
time ``T`` (the walltime; **1 s for a job of walltime 0**, where the CosimApp keys of
`cosim.workload.value` would use 1 tick): ``ST = max(round(soft x T), 1)`` ticks, the rule of
`cosim.workload.value.value_from_pairs`, so the same multiples give the same ticks by either
route; rows carry them in ticks, and the sidecar holds them as exact decimal seconds after
submission (`cosim.core.clock.format_ticks`), which `read_values` turns back into the very
ticks at any length. `write_values` writes the sidecar that
`cosim.workload.value.read_values` reads (``job_id,value,soft_s,hard_s`` and ``value_min``
when not 0; one row per job in id order; values as integers where integral, else the
shortest round-trip float; atomically, `cosim.core.files.atomic_open`).
`scale_arrivals` multiplies the time since the first submission by a factor (``0 < factor <=
1`` compresses arrivals to over-subscribe the machine; a factor above 1 spreads them and is
accepted too): ``submit' = first + round((submit - first) x factor)`` in integer ticks, the
product exact (the factor's shortest decimal form as a fraction, ties to even), so the order
of the jobs never changes (ties may appear). `run_generator` reads the trace with the
`cosim.workload.swf.read_swf` defaults (1 core per host, no host limit: every job with a known
run time is kept, ids and walltimes as in the file), writes ``values.csv`` and, with a scale,
``<stem>-x<scale>.swf`` by `cosim.workload.swf_write.write_jobs_swf` with a ``; Note:`` saying
how arrivals were scaled. The generator never sets field 14 (the executable number carries the
app mapping); the writer renumbers it only for jobs whose CosimApp classes are not numbered as
it would number them, which `run_generator` reports through ``warn``; the writer also drops
the value keys of CosimApp lines, which the sidecar (covering every job) overrides anyway.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

from cosim.core.clock import MAX_TICKS, TICKS_PER_SECOND, duration_problem, format_ticks, \
    to_seconds
from cosim.core.files import atomic_open
from cosim.core.rng import stream
from cosim.errors import InputError
from cosim.workload.jobs import Job
from cosim.workload.swf import read_swf
from cosim.workload.swf_write import format_value, write_jobs_swf
from cosim.workload.value import DEFAULT_HARD, DEFAULT_SOFT

__all__ = ["VALUE_STREAM", "DEFAULT_CLASSES", "VALUES_NAME", "ValueSpec", "parse_classes",
           "generate_values", "scale_arrivals", "write_values", "run_generator"]

#: Name of the keyed random stream of a job's value class (keys: the job id).
VALUE_STREAM = "value"
#: The value classes of generated workloads (spec §2.7): v ∈ {1, 4, 16}, p = {0.6, 0.3, 0.1}.
DEFAULT_CLASSES: tuple[tuple[float, float], ...] = ((1.0, 0.6), (4.0, 0.3), (16.0, 0.1))
#: The sidecar `run_generator` writes in its output directory.
VALUES_NAME = "values.csv"
#: The requested time of a job of walltime 0, for its thresholds: 1 s.
_ZERO_WALLTIME = TICKS_PER_SECOND
#: The latest a scaled job may end if it starts at once (as `read_swf` requires).
_LATEST_END = MAX_TICKS // 2
_PROB_TOLERANCE = 1e-9


def _real(x: object) -> bool:
    return not isinstance(x, bool) and isinstance(x, numbers.Real) and math.isfinite(x)


def _check_classes(classes: object) -> tuple[tuple[float, float], ...]:
    """`classes` as a tuple of (value, probability) floats, or InputError(field="classes")."""
    def bad(problem: str) -> InputError:
        return InputError(problem, field="classes")

    try:
        pairs = [tuple(c) for c in classes]  # type: ignore[union-attr]
    except TypeError:
        raise bad(f"expected (value, probability) pairs, got {classes!r}") from None
    if not pairs:
        raise bad("no value class given")
    out: list[tuple[float, float]] = []
    for pair in pairs:
        if len(pair) != 2 or not all(_real(x) for x in pair):
            raise bad(f"expected a finite (value, probability) pair, got {pair!r}")
        v, p = float(pair[0]), float(pair[1])
        if v <= 0:
            raise bad(f"a value must be > 0, got {pair[0]!r}")
        if p <= 0:
            raise bad(f"a probability must be > 0, got {pair[1]!r} for value {pair[0]!r}")
        if any(v == w for w, _ in out):
            raise bad(f"value {pair[0]!r} given twice")
        out.append((v, p))
    total = math.fsum(p for _, p in out)
    if abs(total - 1.0) > _PROB_TOLERANCE:
        raise bad(f"the probabilities must sum to 1, they sum to {total!r}")
    return tuple(out)


def parse_classes(text: str) -> tuple[tuple[float, float], ...]:
    """``"1:0.6,4:0.3,16:0.1"`` -> ``((1.0, 0.6), (4.0, 0.3), (16.0, 0.1))``: comma-separated
    ``value:probability`` pairs, values finite and > 0 (each once), probabilities > 0 summing
    to 1 within 1e-9. `InputError` ``field classes`` otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"expected value:probability pairs such as 1:0.6,4:0.3,16:0.1, got "
                         f"{text!r}", field="classes")
    pairs: list[tuple[float, float]] = []
    for item in text.split(","):
        parts = item.split(":")
        try:
            if len(parts) != 2:
                raise ValueError
            v, p = float(parts[0]), float(parts[1])
        except ValueError:
            raise InputError(f"expected value:probability, got {item.strip()!r}",
                             field="classes") from None
        if not (math.isfinite(v) and math.isfinite(p)):
            raise InputError(f"value and probability must be finite, got {item.strip()!r}",
                             field="classes")
        pairs.append((v, p))
    return _check_classes(pairs)


@dataclass(frozen=True, slots=True)
class ValueSpec:
    """What to generate: the value `classes` (``(value, probability)`` pairs, as
    `parse_classes` returns), the `soft` and `hard` thresholds as multiples of each job's
    requested time (``0 < soft <= hard``, finite), the root `seed` (integer >= 0) of the
    keyed class draws, and `value_min` (every job's value at its hard threshold, in ``[0,
    smallest class value]``). `InputError` naming the field (``classes``, ``soft``,
    ``hard``, ``seed``, ``value-min``) otherwise."""

    classes: tuple[tuple[float, float], ...] = DEFAULT_CLASSES
    soft: float = DEFAULT_SOFT
    hard: float = DEFAULT_HARD
    seed: int = 0
    value_min: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "classes", _check_classes(self.classes))
        for name in ("soft", "hard"):
            x = getattr(self, name)
            if not _real(x) or x <= 0:
                raise InputError(f"must be a finite multiple of the requested time > 0, got "
                                 f"{x!r}", field=name)
            object.__setattr__(self, name, float(x))
        if self.soft > self.hard:
            raise InputError(f"must be >= soft ({self.soft!r}), got {self.hard!r}",
                             field="hard")
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral) \
                or self.seed < 0:
            raise InputError(f"must be an integer >= 0, got {self.seed!r}", field="seed")
        lowest = min(v for v, _ in self.classes)
        if not _real(self.value_min) or not 0 <= self.value_min <= lowest:
            raise InputError(f"must be in [0, {lowest!r}] (the smallest class value), got "
                             f"{self.value_min!r}", field="value-min")
        object.__setattr__(self, "value_min", float(self.value_min))


def generate_values(jobs: Sequence[Job], spec: ValueSpec) -> list[tuple[int, float, int, int]]:
    """One row ``(job_id, value, soft, hard)`` per job, in job id order (rules in the module
    docstring): the value class from the keyed stream ``(spec.seed, "value", id)``, the
    thresholds in ticks after submission. `InputError` ``field job`` for a job id
    given twice, ``field hard`` for a threshold beyond the tick range."""
    values = [v for v, _ in spec.classes]
    cumulative, acc = [], 0.0
    for _, p in spec.classes:  # summed in the order given: the same bounds on every run
        acc += p
        cumulative.append(acc)
    rows: list[tuple[int, float, int, int]] = []
    seen: set[int] = set()
    for job in sorted(jobs, key=lambda j: j.id):
        if job.id in seen:
            raise InputError(f"job {job.id} given twice", field="job")
        seen.add(job.id)
        u = stream(spec.seed, VALUE_STREAM, job.id).random()
        value = next((v for v, c in zip(values, cumulative, strict=True) if u < c), values[-1])
        requested = job.walltime or _ZERO_WALLTIME
        soft = max(round(spec.soft * requested), 1)
        hard = max(round(spec.hard * requested), 1)
        problem = duration_problem(to_seconds(hard))  # what read_values checks
        if problem:
            raise InputError(f"job {job.id}: {spec.hard!r} x its requested time: {problem}",
                             field="hard")
        rows.append((job.id, value, soft, hard))
    return rows


def scale_arrivals(jobs: Sequence[Job], factor: float) -> tuple[Job, ...]:
    """`jobs` (same order) with each submit time ``first + round((submit - first) x factor)``
    in ticks, ``first`` the earliest submit (module docstring): factor in (0, 1] compresses the
    arrivals (over-subscription), 1 changes nothing, above 1 spreads them. `InputError`
    ``field arrival-scale`` for a factor that is not a finite number > 0, or that would make a
    job end beyond the tick range `read_swf` accepts."""
    if not _real(factor) or factor <= 0:
        raise InputError(f"must be a finite number > 0, got {factor!r}", field="arrival-scale")
    if not jobs:
        return ()
    exact = Fraction(repr(float(factor)))  # 0.3 -> 3/10, not the float's binary value
    first = min(j.submit for j in jobs)
    out = []
    for job in jobs:
        submit = first + round((job.submit - first) * exact)
        if submit + max(job.runtime, job.walltime) > _LATEST_END:
            raise InputError(f"job {job.id} would end after {_LATEST_END // TICKS_PER_SECOND:,}"
                             f" s with arrivals scaled by {factor!r}", field="arrival-scale")
        out.append(job if submit == job.submit else replace(job, submit=submit))
    return tuple(out)


def write_values(path: str | os.PathLike[str], rows: Sequence[tuple[int, float, int, int]],
                 *, value_min: float = 0.0) -> None:
    """Write `rows` (as `generate_values` returns them, thresholds in ticks, in the order
    given) as the sidecar CSV `cosim.workload.value.read_values` reads: header
    ``job_id,value,soft_s,hard_s`` (plus ``value_min``, the same for every row, when not 0),
    values as integers where integral, else the shortest round-trip float, thresholds as
    exact decimal seconds, so it reads back the very floats and ticks; atomically
    (`OutputError`/`InputError` naming the file if it cannot be written)."""
    lines = ["job_id,value,soft_s,hard_s" + (",value_min" if value_min else "")]
    tail = f",{format_value(value_min)}" if value_min else ""
    for job_id, value, soft, hard in rows:
        lines.append(f"{int(job_id)},{format_value(value)},{format_ticks(soft)},"
                     f"{format_ticks(hard)}{tail}")
    with atomic_open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def _scaled_name(trace: Path, factor: float) -> str:
    name = trace.name
    for suffix in (".gz", ".swf"):
        name = name.removesuffix(suffix)
    return f"{name}-x{format_value(factor)}.swf"


def run_generator(trace: str | os.PathLike[str], out_dir: str | os.PathLike[str],
                  spec: ValueSpec, arrival_scale: float | None, *,
                  warn: Callable[[str], None] | None = None) -> dict[str, Path]:
    """Generate the values of the jobs of SWF `trace` into `out_dir` (created if missing):
    ``values.csv`` always (key ``"values"``), and with `arrival_scale` the trace with scaled
    arrivals ``<stem>-x<scale>.swf`` (key ``"trace"``), its header the input's plus a ``;
    Note:`` on the scaling. The sidecar reads back (`read_values`) against the jobs of either
    trace. `warn` receives the reader's warnings and a note when the SWF writer renumbered
    executable numbers (module docstring). Returns the paths written."""
    wl = read_swf(trace, warn=warn)
    jobs = wl.jobs
    out = Path(out_dir)
    written: dict[str, Path] = {}
    if arrival_scale is not None:
        jobs = scale_arrivals(jobs, arrival_scale)
        x = format_value(arrival_scale)
        note = (f"arrivals scaled by {x} for oversubscription by cosim workload values: "
                f"submit = first submit + round((submit - first submit) x {x}) (ticks); "
                f"job values in the sidecar {VALUES_NAME} (seed {spec.seed})")
        path = out / _scaled_name(Path(trace), arrival_scale)
        write_jobs_swf(path, jobs, header=[*wl.header, ("Note", note)])
        written["trace"] = path
        if warn is not None:
            before = {j.id: j.swf[13] for j in wl.jobs if j.swf is not None}
            moved = [(j.id, before[j.id], j.swf[13]) for j in read_swf(path).jobs
                     if j.swf is not None and before.get(j.id, j.swf[13]) != j.swf[13]]
            if moved:
                jid, old, new = min(moved)
                jobs_text = "1 job" if len(moved) == 1 else f"{len(moved)} jobs"
                warn(f"{path}: the SWF writer renumbered the executable number (field 14) of "
                     f"{jobs_text} with their CosimApp lines (job {jid}: {old:g} -> {new:g})")
    path = out / VALUES_NAME
    rows = generate_values(jobs, spec)
    write_values(path, rows, value_min=spec.value_min)
    written["values"] = path
    return written
