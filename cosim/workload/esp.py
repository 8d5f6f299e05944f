"""The ESP (Effective System Performance) benchmark workload, sized to a platform, as SWF.

**Job mix** (`JOB_MIX`; Wong, Oliker, Kramer, Kaltz & Bailey, JSSPP 2000 / SC2000): 230 jobs
in 14 categories A..M and Z, each with a fraction of the machine, a count and a target run
time. **Sizes**: ``hosts = max(1, round(fraction x n_hosts))`` with the table's four-decimal
fractions and Python's `round` (half to even), so on 256 hosts H (0.1582) gets 40 and K
(0.0957) gets 24; a job's ``pes = hosts x cores_per_host``. ``T_min = sum(count x hosts x
target) / n_hosts``, exact (`fractions.Fraction`): 2,809,904 host-s / 256 = 10,976.1875 s on
256 hosts. **Order**: the 228 non-Z jobs, listed in table order, are permuted by the keyed
stream ``stream(seed, "esp.order")`` (`cosim.core.rng`; the same permutation for both apps).
**Arrival** ``esp``: the shortest prefix of the permutation whose hosts sum to at least
``2 x n_hosts`` is submitted at 0; the other ``m`` jobs follow at evenly spaced times
``k x 0.5 T_min / (m + 1)``, ``k = 1..m`` (regular intervals, as in the original benchmark;
the last lands before 0.5 T_min; ``span`` sets the 0.5). Arrival ``rca``, the RCA paper's
(Eleliemy & Ciorba, arXiv:2103.05809): the same block at 0; the other ``m`` jobs in thirds,
one every ``d = span x T_min / (m + 1)``; after the first and second thirds a Z job ``d``
later, then nothing for ``gap x T_min`` (default 0.1), the next third starting ``d`` after
that (`_rca_times`). Arrival ``zero``: all 228 at 0. In ``esp`` and ``zero``, Z1 is
submitted at ``0.10 T_min`` and Z2 at ``0.5 T_min`` (after the last non-Z job); in all three
both Z jobs have
``Job.priority = 1`` (the top; the other jobs have 0): the scheduler's drain rule keys on it.
Submit times are rounded to whole seconds (half to even) so that tools reading SWF times as
integers read them too. **Ids** 1..230 in ``(submit, Z after non-Z, permutation position)``
order. **Run time and app**: every job runs ``app`` (``mandelbrot`` or ``psia``), ``runtime``
= the target (what a rigid replay uses), ``walltime = ceil(walltime_factor x target)`` s
(default 3: the default Mandelbrot under STATIC is about 2.75x slower than its balanced time
and must not be killed), and ``app_params = {"total_flop": p x target x s}`` (``p`` = pes,
``s`` = per-core FLOP/s, shortest exact decimal): scale the app's per-iteration costs so that
they sum to this, and its ideal balanced run time on its PEs is the target (the ALS applies
it). Other calibrations (``calibrate_by``: ``static``, ``table1``; `cosim.workload.esp_calibrate`)
set other totals and app parameters, and make the default walltime factor 1.5. **In the SWF file** (`write_esp`, via `cosim.workload.swf_write`): field 4 = target,
field 8 = pes, field 9 = walltime, field 14 = the category's number 1..14 (A..M, Z), status 1,
unknown fields -1, and one header comment per category, ``; CosimApp: 3 category=C
app=mandelbrot priority=0 total_flop=6.8352e+13``, that `cosim.workload.swf.read_swf` turns
back into category, app, priority and app_params; other SWF readers skip comments.
**Malleable** (``malleable=True``, ``cosim workload esp --malleable``; off by default): every
job but the two Z jobs (which must run whole, at once) is ``kind="malleable"`` with PE bounds
``min_pes = max(1, ceil(min_frac x pes))`` and ``max_pes = max(min_pes, floor(max_frac x
pes))`` (`cosim.workload.marking.pe_bounds`; defaults 0.5 and 1.0: it may be halved and never
grows beyond its request), written as ``kind=malleable min_frac=0.5 max_frac=1`` in the
categories' CosimApp comments and ``malleable=1 min_frac=.. max_frac=..`` in ``CosimEsp``.
The file depends only on (app, host type and count, seed, arrival, walltime factor, and the
malleable marks): same inputs, same bytes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from cosim.core.clock import TICKS_PER_SECOND
from cosim.core.rng import stream
from cosim.errors import InputError
from cosim.platform import Platform, load_platform
from cosim.workload.esp_calibrate import calibrate, shortest
from cosim.workload.jobs import Job
from cosim.workload.marking import (
    DEFAULT_MAX_FRAC, DEFAULT_MIN_FRAC, check_fracs, decimal_text, pe_bounds,
)
from cosim.workload.swf_write import write_jobs_swf

__all__ = [
    "EspJobType", "EspWorkload", "JOB_MIX", "APPS", "ARRIVALS", "DEFAULT_WALLTIME_FACTOR",
    "esp_sizes", "generate_esp", "write_esp", "make_esp",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class EspJobType:
    """One ESP category: letter, fraction of the machine, job count, target run time (s)."""

    category: str
    fraction: float
    count: int
    target_s: int


#: The ESP job mix (docs/reference/workloads.md §1.2), in table order.
JOB_MIX: tuple[EspJobType, ...] = tuple(
    EspJobType(category=c, fraction=f, count=n, target_s=t) for c, f, n, t in (
        ("A", 0.03125, 75, 267), ("B", 0.06250, 9, 322), ("C", 0.50000, 3, 534),
        ("D", 0.25000, 3, 616), ("E", 0.50000, 3, 315), ("F", 0.06250, 9, 1846),
        ("G", 0.12500, 6, 1334), ("H", 0.15820, 6, 1067), ("I", 0.03125, 24, 1432),
        ("J", 0.06250, 24, 725), ("K", 0.09570, 15, 487), ("L", 0.12500, 36, 366),
        ("M", 0.25000, 15, 187), ("Z", 1.00000, 2, 100),
    )
)
APPS = ("mandelbrot", "psia")
ARRIVALS = ("esp", "zero", "rca")
DEFAULT_WALLTIME_FACTOR = 3.0
#: The requested-time factor of calibrated workloads (``--calibrate static|table1``): their
#: jobs run near their targets under STATIC
CALIBRATED_WALLTIME_FACTOR = 1.5
DEFAULT_SPAN = 0.5
DEFAULT_GAP = 0.1
_ORDER_STREAM = "esp.order"


@dataclass(frozen=True, slots=True, kw_only=True)
class EspWorkload:
    """A generated ESP workload and the numbers it was built from.

    Attributes
    ----------
    jobs:
        The 230 jobs, ids 1..230, sorted by ``(submit, id)``.
    header:
        SWF header comments describing the workload (`write_esp` writes them).
    app, seed, arrival, walltime_factor:
        The generator's inputs.
    n_hosts, cores_per_host, speed:
        The machine it is sized for (speed in FLOP/s per core).
    sizes:
        Hosts per category letter.
    host_seconds:
        ``sum(count x hosts x target)``.
    t_min:
        ``host_seconds / n_hosts`` in ticks (exact here: rounded to the nearest tick).
    initial_block:
        Non-Z jobs submitted at 0 (228 with arrival ``zero``).
    malleable, min_frac, max_frac:
        Whether the non-Z jobs are malleable, and their bounds relative to their PEs.
    """

    jobs: tuple[Job, ...]
    header: tuple[tuple[str, str], ...]
    app: str
    seed: int
    arrival: str
    walltime_factor: float
    n_hosts: int
    cores_per_host: int
    speed: float
    sizes: Mapping[str, int]
    host_seconds: int
    t_min: int
    initial_block: int
    malleable: bool = False
    min_frac: float = DEFAULT_MIN_FRAC
    max_frac: float = DEFAULT_MAX_FRAC


def esp_sizes(n_hosts: int) -> dict[str, int]:
    """Hosts per ESP category on `n_hosts` hosts: ``max(1, round(fraction x n_hosts))``."""
    if isinstance(n_hosts, bool) or not isinstance(n_hosts, int) or n_hosts < 1:
        raise InputError(f"must be an integer >= 1, got {n_hosts!r}", field="hosts")
    return {t.category: max(1, round(t.fraction * n_hosts)) for t in JOB_MIX}


def _host_type(platform: Platform) -> tuple[int, float]:
    first = platform.hosts[0]
    for h in platform.hosts:
        if h.cores != first.cores or h.speed != first.speed:
            raise InputError(f"ESP needs identical hosts, but {h.name} has {h.cores} cores at "
                             f"{h.speed:g} FLOP/s and {first.name} {first.cores} at "
                             f"{first.speed:g}", field="platform")
    return first.cores, first.speed


def generate_esp(
    *,
    app: str,
    platform: Platform,
    seed: int,
    arrival: str = "esp",
    hosts: int | None = None,
    walltime_factor: float | None = None,
    exclusion_ok: bool = False,
    malleable: bool = False,
    min_frac: float = DEFAULT_MIN_FRAC,
    max_frac: float = DEFAULT_MAX_FRAC,
    span: float = DEFAULT_SPAN,
    gap: float | None = None,
    calibrate_by: str = "balanced",
    paper_scale: float = 1.0,
    app_params: Mapping[str, str] | None = None,
    cache_dir: str | None = None,
) -> EspWorkload:
    """Generate the ESP workload for a platform (rules in the module docstring).

    Parameters
    ----------
    app:
        ``"mandelbrot"`` or ``"psia"``: the app model every job runs.
    platform:
        Gives the host type (cores, per-core speed; all hosts must be identical) and, unless
        `hosts` is given, the number of hosts.
    seed:
        Root seed of the submission order (integer >= 0).
    arrival:
        ``"esp"`` (initial block of 2x the machine, the rest at regular intervals),
        ``"zero"`` (every non-Z job at 0) or ``"rca"`` (the RCA paper's: the rest in thirds
        split by the two Z jobs, each followed by a gap).
    hosts:
        Size the workload for this many hosts of the platform's type (default: all).
    walltime_factor:
        Requested time = ``ceil(walltime_factor x target)`` seconds; at least 1 (default 3,
        1.5 for a calibrated workload).
    exclusion_ok:
        Mark every job as willing to give up hosts when asked (RCA exclusion requests,
        ``--rca full``; ``exclusion_ok=1`` in the CosimApp comments).
    malleable:
        Make every non-Z job malleable (``kind=malleable`` in the CosimApp comments).
    min_frac, max_frac:
        The malleable jobs' PE bounds relative to their PEs: ``0 < min_frac <= 1``,
        ``max_frac >= min_frac`` (checked even when `malleable` is off).
    span:
        The later jobs arrive over ``span x T_min`` (``esp``, ``rca``; default 0.5).
    gap:
        ``rca``: nothing is submitted for ``gap x T_min`` after each Z job (default 0.1).
    calibrate_by, paper_scale:
        The work of each job (`cosim.workload.esp_calibrate`: ``balanced``, ``static``,
        ``table1``) and a multiplier of it.
    app_params:
        App-model parameters for every job (the Mandelbrot image, say), written into the
        CosimApp comments.
    cache_dir:
        Where the calibrations cache the app costs they compute.

    Returns
    -------
    EspWorkload

    Raises
    ------
    InputError
        For an unknown app or arrival, a bad seed, host count, factor or fraction, or a
        platform whose hosts differ.
    """
    if app not in APPS:
        raise InputError(f"unknown ESP app {app!r} (known: {', '.join(APPS)})", field="app")
    if arrival not in ARRIVALS:
        raise InputError(f"unknown arrival {arrival!r} (known: {', '.join(ARRIVALS)})",
                         field="arrival")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"must be an integer >= 0, got {seed!r}", field="seed")
    if walltime_factor is None:
        walltime_factor = (DEFAULT_WALLTIME_FACTOR if calibrate_by == "balanced"
                           else CALIBRATED_WALLTIME_FACTOR)
    for name, value, low in (("span", span, 0), ("gap", gap, 0)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not (math.isfinite(value) and value >= low)):
            raise InputError(f"must be a number >= {low}, got {value!r}", field=name)
    if gap is not None and arrival != "rca":
        raise InputError("a gap after the Z jobs belongs to --arrival rca", field="gap")
    if span != DEFAULT_SPAN and arrival == "zero":
        raise InputError("--arrival zero submits every job at 0: there is no span",
                         field="span")
    if arrival == "rca" and gap is None:
        gap = DEFAULT_GAP
    if isinstance(walltime_factor, bool) or not isinstance(walltime_factor, (int, float)) \
            or not (math.isfinite(walltime_factor) and walltime_factor >= 1):
        raise InputError(f"must be a number >= 1, got {walltime_factor!r}",
                         field="walltime-factor")
    factor = Fraction(repr(float(walltime_factor)))   # 1.1 x 100 is 110, not 111
    a, b = check_fracs(min_frac, max_frac)
    cores, speed = _host_type(platform)
    n = platform.n_hosts if hosts is None else hosts
    sizes = esp_sizes(n)
    host_seconds = sum(t.count * sizes[t.category] * t.target_s for t in JOB_MIX)
    t_min = Fraction(host_seconds, n)                       # seconds, exact

    # (submit_s, is_z, position, category) for every job; positions index the permutation.
    regular = [t for t in JOB_MIX if t.category != "Z" for _ in range(t.count)]
    perm = stream(seed, _ORDER_STREAM).permutation(len(regular))
    order = [regular[int(i)] for i in perm]
    if arrival in ("esp", "rca"):
        total, block = 0, len(order)
        for k, t in enumerate(order):
            total += sizes[t.category]
            if total >= 2 * n:
                block = k + 1
                break
    else:
        block = len(order)
    m = len(order) - block
    d = Fraction(repr(float(span))) * t_min / (m + 1)  # the spacing of the later jobs
    if arrival == "rca":
        times, z_times = _rca_times(m, d, Fraction(repr(float(gap))) * t_min)
        times = [0] * block + times
    else:
        times = [0] * block + [round(k * d) for k in range(1, m + 1)]
        z_times = [round(t_min / 10), round(t_min / 2)]
    z_type = next(t for t in JOB_MIX if t.category == "Z")
    rows = [(s, 0, pos, t) for pos, (s, t) in enumerate(zip(times, order, strict=True))]
    rows += [(z_times[0], 1, 0, z_type), (z_times[1], 1, 1, z_type)]
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    work = calibrate(calibrate_by, app=app, mix=JOB_MIX, sizes=sizes, platform=platform,
                     params=app_params, paper_scale=paper_scale, cache_dir=cache_dir)

    jobs = []
    for job_id, (submit_s, is_z, _, t) in enumerate(rows, 1):
        h = sizes[t.category]
        marks = {}
        if malleable and not is_z:
            lo, hi = pe_bounds(h * cores, min_frac=a, max_frac=b)
            marks = {"kind": "malleable", "min_pes": lo, "max_pes": hi}
        jobs.append(Job(
            id=job_id, submit=submit_s * TICKS_PER_SECOND, hosts=h, pes=h * cores,
            walltime=math.ceil(factor * t.target_s) * TICKS_PER_SECOND,
            runtime=t.target_s * TICKS_PER_SECOND, app=app,
            app_params=dict(work.params[t.category]),
            category=t.category, priority=is_z, exclusion_ok=exclusion_ok, **marks,
        ))
    t_min_s = t_min.numerator / t_min.denominator
    header = (
        ("Version", "2.2"),
        ("Computer", "cosim ESP generator"),
        ("Note", ("ESP (Effective System Performance) benchmark job mix, Wong, Oliker, "
                  "Kramer, Kaltz & Bailey 2000: 230 jobs in 14 categories; run time (field 4) "
                  "= the target time" + (" = the app's ideal balanced run time on the job's "
                                         "PEs" if calibrate_by == "balanced"
                                         and paper_scale == 1 else "")
                  + f"; requested time (field 9) = ceil({walltime_factor:g} x target); executable "
                  "number (field 14) = category 1..14 (A..M, Z) as described by the CosimApp "
                  "comments")),
        ("Note", f"hosts = max(1, round(fraction x {n})): "
                 + " ".join(f"{c}={h}" for c, h in sizes.items())),
        ("Note", (f"arrival {arrival}, order seed {seed}; T_min = {host_seconds} host-s / {n} "
                  f"= {t_min_s!r} s; " + (
                      f"the {m} later jobs in thirds every d = {span:g} T_min / {m + 1}, a Z "
                      f"job d after the first and second thirds, then nothing for {gap:g} "
                      f"T_min: Z1 at {z_times[0]} s, Z2 at {z_times[1]} s"
                      if arrival == "rca" else "Z1 at 0.10 T_min, Z2 at 0.5 T_min")
                  + ", both priority 1")),
        *((("Note", f"work: {work.note}"),)
          if calibrate_by != "balanced" or paper_scale != 1 else ()),
        *((("Note", "STATIC run time / target: " + " ".join(
            f"{c}={r:.3f}" for c, r in work.static_over_target.items() if r is not None)),)
          if calibrate_by == "table1" and app == "mandelbrot" else ()),
        ("MaxJobs", str(len(jobs))),
        ("MaxRecords", str(len(jobs))),
        ("MaxNodes", str(n)),
        ("MaxProcs", str(n * cores)),
        ("CosimEsp", (f"app={app} hosts={n} cores={cores} speed={shortest(speed)} seed={seed} "
                      f"arrival={arrival} walltime_factor={walltime_factor:g} "
                      f"initial_block={block}" + (" exclusion_ok=1" if exclusion_ok else "")
                      + (f" span={span:g}" if span != DEFAULT_SPAN else "")
                      + (f" gap={gap:g}" if arrival == "rca" else "")
                      + (f" calibrate={calibrate_by}" if calibrate_by != "balanced" else "")
                      + (f" paper_scale={paper_scale:g}" if paper_scale != 1 else "")
                      + (f" malleable=1 min_frac={decimal_text(a)} max_frac={decimal_text(b)}"
                         if malleable else ""))),
    )
    return EspWorkload(
        jobs=tuple(jobs), header=header, app=app, seed=seed, arrival=arrival,
        walltime_factor=float(walltime_factor), n_hosts=n, cores_per_host=cores,
        speed=speed, sizes=MappingProxyType(sizes), host_seconds=host_seconds,
        t_min=round(t_min * TICKS_PER_SECOND), initial_block=block, malleable=bool(malleable),
        min_frac=float(min_frac), max_frac=float(max_frac),
    )


def _rca_times(m: int, d: Fraction, gap: Fraction) -> tuple[list[int], list[int]]:
    """The RCA paper's arrivals after the initial block, in seconds (rounded half to even):
    the `m` later jobs in thirds (sizes ``m // 3``, the first ``m % 3`` thirds one more), one
    every `d`; after the first and second thirds a Z job `d` later, then nothing for `gap`
    (the next job comes ``gap + d`` after the Z job). Returns (job times, Z times)."""
    thirds = [m // 3 + (1 if i < m % 3 else 0) for i in range(3)]
    now, times, z = Fraction(0), [], []
    for i, size in enumerate(thirds):
        for _ in range(size):
            now += d
            times.append(round(now))
        if i < 2:
            now += d
            z.append(round(now))
            now += gap
    return times, z


def write_esp(path: str | os.PathLike[str], workload: EspWorkload) -> None:
    """Write `workload` as an SWF file (atomically; gzip if the name ends in ``.gz``)."""
    write_jobs_swf(path, workload.jobs, header=workload.header,
                   prefer_fracs=(workload.min_frac, workload.max_frac))


def make_esp(
    *,
    out: str | os.PathLike[str],
    platform: str | os.PathLike[str] | Platform = "ib256",
    **options: Any,
) -> EspWorkload:
    """``cosim workload esp --app A [--hosts N] [--seed S] [--arrival esp|zero|rca] [--span X]
    [--gap G] [--calibrate balanced|static|table1] [--paper-scale X] [--app-param K=V]
    [--malleable [--min-frac X] [--max-frac Y]] -o OUT``.

    Loads `platform` (a builtin name, a file, or a `Platform`), generates with
    `generate_esp` (`options` are its keyword arguments) and writes `out` with `write_esp`;
    returns the workload. Every bad argument is an `InputError`.
    """
    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    workload = generate_esp(platform=plat, **options)
    write_esp(out, workload)
    return workload
