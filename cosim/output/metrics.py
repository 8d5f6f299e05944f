"""Scheduling metrics over job outcomes, each defined once, with its formula and source.

Every function takes the outcomes of one simulation (`JobOutcome`, as `cosim.runner.simulate`
returns them) and uses only the jobs that ran (``completed`` or ``killed``); ``rejected`` jobs
never ran, are excluded from every metric and are counted on their own in `summary`. A killed
job counts with the time it actually ran (start to kill). Times are ticks inside, seconds out.
Notation, for a job j that ran: submit s_j, start b_j, end e_j, hosts h_j, run time
r_j = e_j - b_j, wait w_j = b_j - s_j, response (turnaround) R_j = e_j - s_j; N hosts of
C PEs each. A metric of an empty set of jobs is 0.0. RCA (`JobOutcome.yielded`, `.lent`,
`.borrowed`): every host-time is accounted for at most once. `utilization` counts computing
time — a host is busy for its job until the job ends or yields it; `loss_of_capacity` counts
occupation — a host is occupied by its job until the job ends, except that a lent host stops
counting for its owner at its first lend tick (the borrower, whose `hosts` include it, counts
it while it runs). Without yields and lends every formula is the classical one. Resizes
(malleable jobs, `JobOutcome.shrinks`/`.expands`): a job's hosts change while it runs, and
only the batch level's allocation log (`cosim.runner.SimResult.allocations`) says how; given
it, `utilization` integrates the busy hosts of the log (a host shared by several jobs counts
once), otherwise a resized job counts with every host it ever had PEs on. `pe_utilization`
counts PE-time (`JobOutcome.pe_ticks`, exact with or without resizes) over C N PEs.
"""

from __future__ import annotations

import heapq
import itertools
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from cosim.core.clock import TICKS_PER_SECOND
from cosim.bls.alloclog import YIELDED
from cosim.output.tables import busy_host_series, busy_rows
from cosim.workload.jobs import JobOutcome
from cosim.workload.value import productivity

try:  # the compiled loop of `fair_starts` (setup.py builds it where a C compiler is)
    from cosim.bls import _replay as _kernel
except ImportError:  # pragma: no cover - exercised where the module was not built
    _kernel = None

__all__ = ["power_metrics", "makespan", "utilization", "occupancy", "esp_efficiency",
           "pe_utilization", "machine_pes", "mean_wait", "mean_response", "mean_slowdown",
           "mean_bounded_slowdown", "loss_of_capacity", "queue_depth", "fair_starts",
           "unfair_jobs", "unfair_jobs_replayed", "summary", "BSLD_THRESHOLD_S"]

_JOB_ID, _JOB_VALUE = operator.attrgetter("job.id"), operator.attrgetter("job.value")

BSLD_THRESHOLD_S = 10.0
"""The bounded-slowdown threshold tau, in seconds (Feitelson et al. 1997)."""


class _Ran(list):
    """The jobs that ran, with their columns (`_columns`) computed once, and the dropped
    ones (they waited, then left the queue): `summary` hands it to every metric. `series`
    keeps the occupied hosts over time of one allocation log (`_occupied_series`), which
    three of the metrics read. `ids`, `asked` and `stated`: their job ids, the hosts they
    asked for and their stated run times, when read from the run's columns (else None: the
    metrics read the outcomes)."""

    cols: tuple[np.ndarray, ...]
    dropped: tuple[JobOutcome, ...] = ()
    series: tuple[np.ndarray, tuple[np.ndarray, np.ndarray]] | None = None
    ids: np.ndarray | None = None
    asked: np.ndarray | None = None
    stated: np.ndarray | None = None


def _dropped(outcomes: Sequence[JobOutcome]) -> tuple[JobOutcome, ...]:
    """The jobs a value order dropped from the queue (their waits count as waits)."""
    if isinstance(outcomes, _Ran):
        return outcomes.dropped
    return tuple(o for o in outcomes if o.status == "dropped")


def _waits(outcomes: Sequence[JobOutcome], submit: np.ndarray, start: np.ndarray,
           hosts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The jobs' waits ``[submit, start)`` with the dropped jobs' ``[submit, drop)`` added,
    and their hosts (what waiting jobs need)."""
    d = _dropped(outcomes)
    if not d:
        return submit, start, hosts
    return (np.concatenate((submit, [o.job.submit for o in d])).astype(np.int64),
            np.concatenate((start, [o.end for o in d])).astype(np.int64),
            np.concatenate((hosts, [o.job.hosts for o in d])).astype(np.int64))


def _ran(outcomes: Sequence[JobOutcome]) -> list[JobOutcome]:
    if isinstance(outcomes, _Ran):
        return outcomes
    return [o for o in outcomes if o.status in ("completed", "killed")]


def _columns(outcomes: Sequence[JobOutcome]) -> tuple[np.ndarray, ...]:
    if isinstance(outcomes, _Ran):
        return outcomes.cols
    ran = _ran(outcomes)
    submit = np.fromiter((o.job.submit for o in ran), dtype=np.int64, count=len(ran))
    start = np.fromiter((o.start for o in ran), dtype=np.int64, count=len(ran))
    end = np.fromiter((o.end for o in ran), dtype=np.int64, count=len(ran))
    hosts = np.fromiter((len(o.hosts) for o in ran), dtype=np.int64, count=len(ran))
    return submit, start, end, hosts


def _ran_columns(cols: Any, ran_outcomes: Sequence[JobOutcome]) -> tuple[np.ndarray, ...]:
    """`_columns` of the jobs that ran, read from their `OutcomeColumns`; ValueError unless
    they are those jobs in that order (by job id)."""
    ran = cols.ran
    ids = np.fromiter(map(_JOB_ID, ran_outcomes), dtype=np.int64, count=len(ran_outcomes))
    if not np.array_equal(cols.id[ran], ids):
        raise ValueError("the columns are not those of the outcomes that ran, in job id order")
    return cols.submit[ran], cols.start[ran], cols.end[ran], cols.hosts[ran]


def _span(start: np.ndarray, end: np.ndarray) -> int:
    """Ticks from the first start to the last end (0 when no job ran)."""
    return max(0, int(end.max() - start.min())) if len(end) else 0


def _dot(a: np.ndarray, b: np.ndarray) -> int:
    """Exact integer dot product (host-ticks overflow int64 on long traces): numpy's int64
    dot over chunks short enough that no partial sum can overflow, the chunks summed as
    Python ints; Python ints throughout when a single product could overflow."""
    a, b = np.asarray(a), np.asarray(b)
    if len(a) != len(b):
        raise ValueError(f"_dot of {len(a)} and {len(b)} values")
    if not len(a):
        return 0
    if a.dtype.kind not in "iub" or b.dtype.kind not in "iub" or np.uint64 in (a.dtype,
                                                                                b.dtype):
        return sum(map(operator.mul, a.tolist(), b.tolist()))
    a, b = a.astype(np.int64, copy=False), b.astype(np.int64, copy=False)
    largest = (max(-int(a.min()), int(a.max())) * max(-int(b.min()), int(b.max())))
    if not largest:
        return 0
    chunk = _I64_MAX // largest  # |a chunk's sum| <= chunk * largest <= the int64 maximum
    if chunk < 64:
        return sum(map(operator.mul, a.tolist(), b.tolist()))
    return sum(int(np.dot(a[i:i + chunk], b[i:i + chunk])) for i in range(0, len(a), chunk))


_I64_MAX = 2**63 - 1


def makespan(outcomes: Sequence[JobOutcome]) -> float:
    """Makespan in seconds: ``max_j e_j - min_j s_j``, last end minus first submission.

    The elapsed time T of the ESP efficiency (Wong et al., "ESP: A System Utilization
    Benchmark", SC 2000: from the first submission to the completion of the last job).
    """
    submit, _, end, _ = _columns(outcomes)
    if not len(end):
        return 0.0
    return float(end.max() - submit.min()) / TICKS_PER_SECOND


def _idle_tails(ran: Sequence[JobOutcome]) -> int:
    """Host-time between each yield and its job's end (idle, not busy)."""
    return sum(o.end - min(t, o.end) for o in ran if o.yielded  # type: ignore[operator]
               for _, t in o.yielded)


def utilization(outcomes: Sequence[JobOutcome], n_hosts: int, *,
                allocations: np.ndarray | None = None) -> float:
    """System utilization, Eq. 1 of the RCA paper: busy host-time over the machine's time.

    ``U = (sum_j h_j r_j - sum_j Y_j) / (N (max_j e_j - min_j b_j))`` — busy host-time over
    hosts x (last end - first start) (Eleliemy & Ciorba, "A resourceful coordination approach
    for multilevel scheduling", arXiv:2103.05809, Eq. 1). A host is busy for its job from the
    job's start until the job ends or, if the job yielded it (every PE of the host out of
    work, `JobOutcome.yielded`), until the yield tick: ``Y_j = sum over (host, y) in yielded_j
    of (e_j - y)`` is the idle tail that is not busy. This holds with RCA off and on alike, so
    the metric measures computing time: for a fixed amount of work, utilization goes up
    exactly as the makespan goes down, as the RCA paper reports for its two metrics. A lent
    host (lent after its yield) counts for its borrower while the borrower runs; each
    host-time counts at most once. Rigid jobs never yield: for them this is the classic
    allocated host-time. 0.0 when no job ran or no time passed.

    With `allocations` (the run's allocation log), the busy host-time is the integral of the
    hosts that have a busy row (every role but ``yielded``) over time: the same number for
    runs without resizes or shared hosts, and the exact one when jobs were resized (whose
    h_j r_j the outcomes cannot give: their `hosts` are every host they ever used) or shared
    hosts (each host counts once however many jobs use it).
    """
    return _host_time_share(outcomes, n_hosts, allocations,
                            lambda ran, a: busy_host_series(busy_rows(a)), _idle_tails)


def _host_time_share(outcomes: Sequence[JobOutcome], n_hosts: int,
                     allocations: np.ndarray | None, series: Any, held_back: Any) -> float:
    """Counted host-time over ``N (max_j e_j - min_j b_j)``: with `allocations`, the integral
    of ``series(ran, allocations) -> (times, hosts)``; else ``sum_j h_j r_j -
    held_back(ran)``. 0.0 when no job ran or no time passed."""
    ran = _ran(outcomes)
    _, start, end, hosts = _columns(ran)
    span = _span(start, end)
    if not span:
        return 0.0
    if allocations is not None:
        times, counted = series(ran, allocations)
        return _dot(counted[:-1], np.diff(times)) / (n_hosts * span)
    return (_dot(hosts, end - start) - held_back(ran)) / (n_hosts * span)


def occupancy(outcomes: Sequence[JobOutcome], n_hosts: int, *,
              allocations: np.ndarray | None = None) -> float:
    """Occupancy: allocated host-time over the machine's time, each host-time counted once.

    ``O = (sum_j h_j r_j - sum_j L_j) / (N (max_j e_j - min_j b_j))``, the window of
    `utilization`: a host is occupied by its job from the job's start to its end, idle tails
    included (the other reading of Eq. 1 of the RCA paper: allocated, not computing, time),
    except that a lent host stops counting for its owner at its first lend tick, ``L_j = sum
    over (host, t) in lent_j of (e_j - t)``; the borrower, whose `hosts` include it, counts
    it while it runs. Without yields it equals `utilization`. With `allocations`, the
    integral of the occupied hosts of the log (the rule of `loss_of_capacity`): the same
    number for runs without resizes or shared hosts. 0.0 when no job ran or no time passed.
    """
    return _host_time_share(outcomes, n_hosts, allocations, _occupied_series, _lent_tails)


def _lent_tails(ran: Sequence[JobOutcome]) -> int:
    """Host-time between each lend and its owner's end (no longer the owner's)."""
    return sum(o.end - t for o in ran if o.lent for _, t in o.lent)  # type: ignore[operator]


def esp_efficiency(outcomes: Sequence[JobOutcome], n_hosts: int) -> float:
    """ESP efficiency: ``E = T_min / T`` with ``T_min = sum_j h_j t_j / N`` over the jobs that
    ran, t_j the job's stated run time (SWF field 4; for an ESP workload its target time, so
    that T_min is the benchmark's theoretical minimum), and T the `makespan` (Wong, Oliker,
    Kramer, Kaltz & Bailey, "ESP: A System Utilization Benchmark", SC 2000). 0.0 when no
    time passed.
    """
    ran = _ran(outcomes)
    elapsed = makespan(ran)
    if not elapsed:
        return 0.0
    if isinstance(ran, _Ran) and ran.asked is not None:  # (the same exact integer)
        host_s = _dot(ran.asked, ran.stated) / TICKS_PER_SECOND
    else:
        host_s = sum(o.job.hosts * o.job.runtime for o in ran) / TICKS_PER_SECOND
    return host_s / n_hosts / elapsed


def pe_utilization(outcomes: Sequence[JobOutcome], n_hosts: int,
                   cores_per_host: int | Sequence[int], *,
                   allocations: np.ndarray | None = None) -> float:
    """PE utilization: PE-time used over the machine's PE-time.

    ``U_PE = sum_j P_j / (C (max_j e_j - min_j b_j))`` with C the machine's PEs (`n_hosts` x
    `cores_per_host`, or the sum of per-host counts) and P_j the PE-time job j used
    (`JobOutcome.pe_ticks`: its PEs x time over its allocation as resizes changed it, yielded
    idle tails excluded) — the PE-level counterpart of `utilization`, over the same window.
    With `allocations`, P_j is summed from the log's busy rows (hosts x pes x (end - start)),
    the same number. 0.0 when no job ran or no time passed.
    """
    ran = _ran(outcomes)
    _, start, end, _ = _columns(ran)
    span = _span(start, end)
    if not span:
        return 0.0
    if allocations is not None:
        b = busy_rows(allocations)
        used = _dot(b["hosts"].astype(np.int64) * b["pes"], b["end"] - b["start"])
    else:
        used = sum(o.pe_ticks for o in ran)
    return used / (machine_pes(n_hosts, cores_per_host) * span)


def machine_pes(n_hosts: int, cores_per_host: int | Sequence[int]) -> int:
    """The PEs of `n_hosts` hosts of `cores_per_host` cores: one count for every host, or
    one per host."""
    if isinstance(cores_per_host, int | np.integer):
        return n_hosts * int(cores_per_host)
    if len(cores_per_host) != n_hosts:
        raise ValueError(f"{len(cores_per_host)} core counts for {n_hosts} hosts")
    return int(sum(cores_per_host))


def mean_wait(outcomes: Sequence[JobOutcome]) -> float:
    """Mean wait in seconds: ``mean_j (b_j - s_j)``."""
    submit, start, _, _ = _columns(outcomes)
    return float(np.mean(start - submit)) / TICKS_PER_SECOND if len(start) else 0.0


def mean_response(outcomes: Sequence[JobOutcome]) -> float:
    """Mean response (turnaround) time in seconds: ``mean_j (e_j - s_j)``."""
    submit, _, end, _ = _columns(outcomes)
    return float(np.mean(end - submit)) / TICKS_PER_SECOND if len(end) else 0.0


def mean_slowdown(outcomes: Sequence[JobOutcome]) -> float:
    """Mean slowdown: ``mean_j R_j / r_j`` over the jobs with r_j > 0.

    Slowdown is response time over run time (Feitelson & Rudolph, "Metrics and benchmarking
    for parallel job scheduling", JSSPP 1998). Jobs that ran for zero time have no slowdown
    and are left out of this mean (the bounded slowdown covers them).
    """
    submit, start, end, _ = _columns(outcomes)
    run = end - start
    keep = run > 0
    if not np.any(keep):
        return 0.0
    return float(np.mean((end[keep] - submit[keep]) / run[keep]))


def mean_bounded_slowdown(outcomes: Sequence[JobOutcome], tau_s: float = BSLD_THRESHOLD_S) -> float:
    """Mean bounded slowdown: ``mean_j max(1, R_j / max(r_j, tau))``, tau = 10 s.

    Feitelson, Rudolph, Schwiegelshohn, Sevcik & Wong, "Theory and practice in parallel job
    scheduling", JSSPP 1997 (the 10 s threshold keeps very short jobs from dominating).
    """
    submit, start, end, _ = _columns(outcomes)
    if not len(end):
        return 0.0
    tau = tau_s * TICKS_PER_SECOND
    bsld = (end - submit) / np.maximum(end - start, tau)
    return float(np.mean(np.maximum(bsld, 1.0)))


def loss_of_capacity(outcomes: Sequence[JobOutcome], n_hosts: int, *,
                     allocations: np.ndarray | None = None, fit_only: bool = False) -> float:
    """Loss of capacity: the share of host-time left idle while jobs were waiting.

    ``LoC = sum_i n_i (t_{i+1} - t_i) delta_i / (N T)`` over the intervals between
    consecutive events (submissions, starts, ends): n_i idle hosts, delta_i = 1 when at least
    one job is waiting (submitted, not started) and 0 otherwise, T the makespan window
    [first submission, last end]. After Zhang, Franke, Moreira & Sivasubramaniam ("An
    integrated approach to parallel scheduling using gang-scheduling, backfilling and
    migration", IEEE TPDS 14(3), 2003), who define it as capacity lost to fragmentation: nodes
    empty while jobs wait. Definition recalled from the paper; its text could not be
    re-read here. Occupied hosts (module docstring): a host is occupied by its job until the
    job ends, and a lent host stops counting for its owner at its first lend tick.

    With `allocations` (the run's allocation log), the occupied hosts are those with a row of
    the log — busy or yielded, except an owner's yielded rows on a host from its first lend
    on — each host counted once however many jobs hold PEs on it: the same number for runs
    without resizes or shared hosts, and the right one when jobs were resized (their
    outcomes' `hosts` are every host they ever used) or shared hosts.

    `fit_only` is the variant of Cobalt's Qsim (Tang et al.; ``bqsim.py:
    calc_loss_of_capacity``): delta_i = 1 only when some waiting job needs fewer hosts than
    are idle (strict ``<``), so idle hosts no waiting job could use are not a loss (Qsim
    counts idle BG/P midplanes; cosim counts hosts).
    """
    ran = _ran(outcomes)
    submit, start, end, hosts = _columns(ran)
    if not len(end):
        return 0.0
    t0, t1 = int(submit.min()), int(end.max())
    if t1 <= t0:
        return 0.0
    w_sub, w_start, w_hosts = _waits(outcomes, submit, start, hosts)
    if allocations is not None:
        return _loss_of_capacity_log(ran, n_hosts, allocations, (w_sub, w_start, w_hosts),
                                     t0, t1, fit_only)
    lends = [t for o in ran if o.lent for _, t in o.lent]
    lent_at = np.asarray(lends, dtype=np.int64)
    lent_end = np.asarray([o.end for o in ran if o.lent for _ in o.lent], dtype=np.int64)
    ones = np.ones(len(lends), dtype=np.int64)
    zeros = np.zeros(len(lends), dtype=np.int64)
    times = np.concatenate((start, end, w_sub, w_start, lent_at, lent_end))
    busy_d = np.concatenate((hosts, -hosts, np.zeros_like(w_sub), np.zeros_like(w_start),
                             -ones, ones))
    wait_d = np.concatenate((np.zeros_like(start), np.zeros_like(end), np.ones_like(w_sub),
                             -np.ones_like(w_start), zeros, zeros))
    order = np.argsort(times, kind="stable")
    times = times[order]
    busy = np.cumsum(busy_d[order])
    waiting = np.cumsum(wait_d[order])
    dt = np.diff(times)  # segment k = [times[k], times[k+1]) with the state after event k
    free = n_hosts - busy[:-1]
    if fit_only:  # the state after every event at a tick: zero-length segments weigh 0
        lost = _fit_lost(w_sub, w_start, w_hosts, times[:-1], free,
                         (waiting[:-1] > 0) & (dt > 0))
    else:
        lost = waiting[:-1] > 0
    return _dot(free * lost, dt) / (n_hosts * (t1 - t0))


def _fit_lost(submit: np.ndarray, start: np.ndarray, hosts: np.ndarray, at: np.ndarray,
              free: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """Cobalt's loss test at each tick of `at`: some waiting job needs fewer hosts than the
    `free` ones. Asked only where it can be true and weighs (`counted`: a job waits and the
    segment has a length) and some host is free (a job needs at least none)."""
    lost = np.zeros(len(at), dtype=bool)
    ask = np.flatnonzero(counted & (free > 0))
    if ask.size:
        lost[ask] = _smallest_waiting(submit, start, hosts, at[ask]) < free[ask]
    return lost


def _smallest_waiting(submit: np.ndarray, start: np.ndarray, hosts: np.ndarray,
                      at: np.ndarray) -> np.ndarray:
    """At each tick of `at` (ascending), after every submission and start at it: the hosts
    of the smallest waiting job (submitted, not started), or a huge number when none.

    A job waits at the ticks ``at[lo:hi]`` (``submit <= t < start``): a range minimum update
    for each job, read at every tick. Each range is two overlapping blocks of a power-of-two
    length; the blocks are applied from the longest down, each level's minima passed to the
    two halves of the level below (O((jobs + ticks) log ticks) in numpy, two arrays alive)."""
    n = len(at)
    out = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    lo = np.searchsorted(at, submit, side="left")
    hi = np.searchsorted(at, start, side="left")
    some = hi > lo
    lo, hi, size = lo[some], hi[some], np.asarray(hosts, dtype=np.int64)[some]
    if not len(lo):
        return out
    level = np.frexp(hi - lo)[1] - 1  # floor(log2(length)), exact for lengths < 2**53
    for k in range(int(level.max()), -1, -1):
        on = level == k
        np.minimum.at(out, lo[on], size[on])
        np.minimum.at(out, hi[on] - (1 << k), size[on])
        if k:  # a block of 2**k from i is the blocks of 2**(k-1) from i and i + 2**(k-1)
            half = 1 << (k - 1)
            np.minimum(out[half:], out[:n - half], out=out[half:])  # (overlap-safe)
    return out


def _loss_of_capacity_log(ran: Sequence[JobOutcome], n_hosts: int, a: np.ndarray,
                          waits: tuple[np.ndarray, np.ndarray, np.ndarray], t0: int, t1: int,
                          fit_only: bool = False) -> float:
    """`loss_of_capacity` with the occupied hosts taken from the allocation log `a`;
    `waits`: every wait's ``(submit, end of the wait, hosts)`` (`_waits`)."""
    submit, start, hosts = waits
    times, occupied = _occupied_series(ran, a)
    u = np.sort(np.concatenate((times, submit, start, [t1])))
    u = u[np.concatenate(([True], u[1:] != u[:-1]))]  # (np.unique would load numpy.ma)
    u = u[(u >= t0) & (u <= t1)]
    i = np.searchsorted(times, u, side="right") - 1
    occ = np.where(i >= 0, occupied[np.maximum(i, 0)] if len(occupied) else 0, 0)
    waiting = (np.searchsorted(np.sort(submit), u, side="right")
               - np.searchsorted(np.sort(start), u, side="right"))
    free = n_hosts - occ[:-1]
    dt = np.diff(u)
    if fit_only:
        lost = _fit_lost(submit, start, hosts, u[:-1], free, (waiting[:-1] > 0) & (dt > 0))
    else:
        lost = waiting[:-1] > 0
    return _dot(free * lost, dt) / (n_hosts * (t1 - t0))


def queue_depth(outcomes: Sequence[JobOutcome]) -> tuple[np.ndarray, np.ndarray]:
    """The queue depth of Tang et al. at every submission and start: ``Q(t) = sum over
    jobs waiting at t of (t - s_j)``, in minutes, after every event at t; ``(ticks, Q)``.
    Between two events Q grows linearly by the waiting jobs' count per unit time. A dropped
    job waits until it is dropped."""
    ran = _ran(outcomes)
    submit, start, _, hosts = _columns(ran)
    submit, start, _ = _waits(outcomes, submit, start, hosts)
    times = np.unique(np.concatenate((submit, start)))
    # waiting after the events at t: submitted at or before t, started after t
    n_sub = np.searchsorted(np.sort(submit), times, side="right")
    n_start = np.searchsorted(np.sort(start), times, side="right")
    # sum of submit ticks of the waiting jobs: all submitted minus those started
    s_sorted, by_start = np.sort(submit), submit[np.argsort(start, kind="stable")]
    cum_sub = np.concatenate(([0], np.cumsum(s_sorted)))
    cum_started = np.concatenate(([0], np.cumsum(by_start)))
    waiting = n_sub - n_start
    total = cum_sub[n_sub] - cum_started[n_start]
    return times, (waiting * times - total) / (60 * TICKS_PER_SECOND)


def _occupied_series(ran: Sequence[JobOutcome], a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(times, hosts)``: the occupied hosts of the allocation log `a` from each time on —
    every row, busy or yielded, except an owner's yielded rows on a host from its first lend
    on; each host counted once however many jobs hold PEs on it."""
    kept = getattr(ran, "series", None)
    if kept is not None and kept[0] is a:
        return kept[1]
    first_lend = {(o.job.id, h): t for o in ran for h, t in o.lent}
    keep = np.ones(len(a), dtype=bool)
    if first_lend:
        # a yielded row is one host (the batch level logs tails host by host)
        for i in np.flatnonzero(a["role"] == YIELDED).tolist():
            t = first_lend.get((int(a["job"][i]), int(a["host"][i])))
            if t is not None and a["start"][i] >= t:
                keep[i] = False
    out = busy_host_series(a[keep])
    if isinstance(ran, _Ran):
        ran.series = (a, out)
    return out


def fair_starts(outcomes: Sequence[JobOutcome], n_hosts: int) -> dict[int, int]:
    """Each job's fair start time (ticks): its start under strict FCFS, no backfilling.

    The jobs that ran are replayed in arrival order ``(submit, id)`` on N hosts, each for the
    time it really ran and on as many hosts: job k starts at the first instant >= its
    submission and >= the start of job k-1 at which h_k hosts are free. In that schedule no
    job is ever delayed by a later arrival, which is the fairness model of Sabin, Kochhar &
    Sadayappan ("Job fairness in non-preemptive job scheduling", ICPP 2004: "no later
    arriving job should delay an earlier arriving job"); they compute the fair start time with
    the scheduler under study, we with this fixed reference, which needs only the outcomes.
    The loop runs compiled (`cosim.bls._replay.fcfs_starts`) where it was built and the ticks
    fit int64; this Python loop is its reference and fallback.
    """
    fast = _fair_starts_compiled(outcomes, n_hosts) if _kernel is not None else None
    return fast if fast is not None else _fair_starts_python(outcomes, n_hosts)


def _fair_starts_python(outcomes: Sequence[JobOutcome], n_hosts: int) -> dict[int, int]:
    """`fair_starts` in Python: the definition."""
    ran = sorted(_ran(outcomes), key=lambda o: (o.job.submit, o.job.id))
    free = n_hosts
    running: list[tuple[int, int]] = []  # (end, hosts) heap
    last = 0
    out: dict[int, int] = {}
    for o in ran:
        h = len(o.hosts)
        t = max(o.job.submit, last)
        while running and running[0][0] <= t:
            free += heapq.heappop(running)[1]
        while free < h:
            end, hh = heapq.heappop(running)
            t = max(t, end)
            free += hh
            while running and running[0][0] <= t:
                free += heapq.heappop(running)[1]
        out[o.job.id] = t
        free -= h
        heapq.heappush(running, (t + (o.end - o.start), h))  # type: ignore[operator]
        last = t
    return out


def _fair_starts_arrays(outcomes: Sequence[JobOutcome], n_hosts: int
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The jobs that ran in arrival order as ``(ids, starts, fair starts)`` arrays, the fair
    starts by the compiled loop; None where it does not apply (ticks that could leave int64,
    a job larger than the machine: the Python loop says what happens then)."""
    ran = _ran(outcomes)
    if not ran:
        return None
    try:
        submit, start, end, hosts = _columns(outcomes)
        ids = ran.ids if isinstance(ran, _Ran) and ran.ids is not None else \
            np.fromiter(map(_JOB_ID, ran), dtype=np.int64, count=len(ran))
    except OverflowError:
        return None
    run = end - start
    # every start and end is at most the last submission plus every run time before it
    if int(submit.max()) + sum(r for r in run.tolist() if r > 0) >= 2**63:
        return None
    done = np.sort(ids)
    if (done[1:] == done[:-1]).any():  # an id twice (no reader makes one): the Python loop
        return None
    order = np.lexsort((ids, submit))
    try:
        fair = _kernel.fcfs_starts(len(ran), submit[order], run[order], hosts[order], n_hosts)
    except ValueError:
        return None
    return ids[order], start[order], np.frombuffer(fair, dtype=np.int64)


def _fair_starts_compiled(outcomes: Sequence[JobOutcome], n_hosts: int
                          ) -> dict[int, int] | None:
    """`fair_starts` by the compiled loop, or None (`_fair_starts_arrays`)."""
    got = _fair_starts_arrays(outcomes, n_hosts)
    return None if got is None else dict(zip(got[0].tolist(), got[2].tolist()))


def unfair_jobs_replayed(outcomes: Sequence[JobOutcome], fair: dict[int, int | None]) -> int:
    """Sabin's unfair jobs: ``#{j : b_j > FST_j}`` with the fair start times `fair` of the
    scheduler under study (`cosim.runner.replayed_fair_starts`: one replay per job without
    the jobs that arrived after it; opt-in, quadratic). A job that ran although its replay
    dropped it (no fair start) was not treated unfairly."""
    return sum(1 for o in _ran(outcomes)
               if fair.get(o.job.id) is not None and o.start > fair[o.job.id])  # type: ignore


def unfair_jobs(outcomes: Sequence[JobOutcome], n_hosts: int) -> int:
    """Number of unfairly treated jobs: those that started after their fair start time.

    ``#{j : b_j > FST_j}`` with FST from `fair_starts` (Sabin et al., ICPP 2004, count the
    jobs whose start misses their fair start time). A strict-FCFS schedule without
    backfilling and with first-fit hosts has none.
    """
    got = _fair_starts_arrays(outcomes, n_hosts) if _kernel is not None else None
    if got is not None:
        return int(np.count_nonzero(got[1] > got[2]))
    fst = fair_starts(outcomes, n_hosts)
    return sum(1 for o in _ran(outcomes) if o.start > fst[o.job.id])  # type: ignore[operator]


def power_metrics(power: Any, outcomes: Sequence[JobOutcome]) -> dict[str, Any]:
    """The power keys of a capped run's summary (`power`: its
    `cosim.bls.power.PowerTotals`): ``power_cap_w`` (the cap in force), ``energy_j`` (jobs
    and idle hosts), ``idle_energy_j``, ``mean_power_w`` and ``peak_power_w`` (over the run,
    from the first start to the last end), ``power_changes`` (SetPower commands) and
    ``energy_per_value`` (joules per unit of value earned; None when nothing was earned)."""
    earned = productivity(outcomes)["productivity"] if outcomes else 0.0
    return {"power_cap_w": power.cap_w, "energy_j": power.energy_j,
            "idle_energy_j": power.idle_j, "mean_power_w": power.mean_w,
            "peak_power_w": power.peak_w, "power_changes": power.changes,
            "energy_per_value": power.energy_j / earned if earned > 0 else None}


def _counts(outcomes: Sequence[JobOutcome], ran: Sequence[JobOutcome]) -> dict[str, int]:
    """`summary`'s counts of jobs and events (`_column_counts`, from the outcomes)."""
    return {"rejected": sum(1 for o in outcomes if o.status == "rejected"),
            "killed": sum(1 for o in ran if o.status == "killed"),
            "yields": sum(len(o.yielded) for o in ran),
            "lends": sum(len(o.lent) for o in ran),
            "shrinks": sum(o.shrinks for o in ran),
            "expands": sum(o.expands for o in ran),
            "resized_jobs": sum(1 for o in ran if o.shrinks or o.expands)}


def _column_counts(cols: Any) -> dict[str, int]:
    """`_counts` from the run's `cosim.output.columns.OutcomeColumns` (integers: the same
    sums in any order)."""
    ran = cols.ran
    return {"rejected": cols.status.count("rejected"), "killed": cols.status.count("killed"),
            **{name: int(getattr(cols, name)[ran].sum())
               for name in ("yields", "lends", "shrinks", "expands")},
            "resized_jobs": int(np.count_nonzero((cols.shrinks[ran] > 0)
                                                 | (cols.expands[ran] > 0)))}


def summary(outcomes: Sequence[JobOutcome], n_hosts: int, *,
            cores_per_host: int | Sequence[int] | None = None,
            allocations: np.ndarray | None = None, power: Any = None,
            columns: Any = None) -> dict[str, Any]:
    """All metrics of one simulation, for the JSON summary and results files.

    Keys: ``jobs`` (jobs that ran), ``rejected``, ``killed``, ``makespan_s``, ``utilization``,
    ``occupancy``, ``esp_efficiency``,
    ``mean_wait_s``, ``mean_response_s``, ``mean_slowdown``, ``mean_bounded_slowdown``,
    ``loss_of_capacity``, ``loss_of_capacity_fit`` (Cobalt's variant: `loss_of_capacity`),
    ``unfair_jobs``, ``yields`` (hosts yielded, in total: RCA),
    ``lends`` (hosts lent, in total: each owner's host counted once, at its first lend),
    ``shrinks`` and ``expands`` (resize commands obeyed, in total), ``resized_jobs`` (jobs
    shrunk or expanded at least once), ``pe_utilization`` (`pe_utilization`; None when
    `cores_per_host`, one count or one per host, is not given), and, when some job has a
    value (`cosim.workload.value`), ``productivity``, ``normalized_productivity`` and
    ``completion_rate`` (`cosim.workload.value.productivity`), and under a power cap (`power`,
    the run's `cosim.bls.power.PowerTotals`) the keys of `power_metrics`. `allocations`, the
    run's allocation log, makes ``utilization`` and ``loss_of_capacity`` right for runs with
    resizes or shared hosts (the same values for the others); ``unfair_jobs`` replays each job on every host it
    ever used. `columns`: the outcomes' `cosim.output.columns.OutcomeColumns` when the
    caller has them (the times are then read from them), for outcomes in job id order but
    for those that never ran.
    """
    ran = _Ran(_ran(outcomes))
    if columns is None:
        ran.cols = _columns(list(ran))
    else:
        ran.cols = _ran_columns(columns, ran)
        ran.ids, ran.asked, ran.stated = (
            getattr(columns, name)[columns.ran] for name in ("id", "job_hosts", "runtime"))
    ran.dropped = _dropped(outcomes)
    counts = _counts(outcomes, ran) if columns is None else _column_counts(columns)
    return {
        "jobs": len(ran),
        "rejected": counts["rejected"],
        "killed": counts["killed"],
        "makespan_s": makespan(ran),
        "utilization": utilization(ran, n_hosts, allocations=allocations),
        "occupancy": occupancy(ran, n_hosts, allocations=allocations),
        "esp_efficiency": esp_efficiency(ran, n_hosts),
        "mean_wait_s": mean_wait(ran),
        "mean_response_s": mean_response(ran),
        "mean_slowdown": mean_slowdown(ran),
        "mean_bounded_slowdown": mean_bounded_slowdown(ran),
        "loss_of_capacity": loss_of_capacity(ran, n_hosts, allocations=allocations),
        "loss_of_capacity_fit": loss_of_capacity(ran, n_hosts, allocations=allocations,
                                                 fit_only=True),
        "unfair_jobs": unfair_jobs(ran, n_hosts),
        **{key: counts[key] for key in ("yields", "lends", "shrinks", "expands",
                                        "resized_jobs")},
        "pe_utilization": None if cores_per_host is None else
        pe_utilization(ran, n_hosts, cores_per_host, allocations=allocations),
        **(productivity(outcomes) if any(map(operator.is_not, map(_JOB_VALUE, outcomes),
                                             itertools.repeat(None))) else {}),
        **(power_metrics(power, outcomes) if power is not None else {}),
    }
