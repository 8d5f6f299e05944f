"""The batch level's power budget (Kumbhare et al.; docs/reference/policies.md §2.4-§2.6,
§3.4-§3.5): which cap each job runs at under a system power cap, and what it consumed.

Every socket of a running job's hosts is capped at one level of the platform's grid
(`cosim.platform.power.PowerModel`, integer milliwatts); an idle host draws ``p_idle`` per
socket. The budget holds ``sum(hosts x sockets x level) + idle hosts x sockets x p_idle <=
cap`` at every instant (`PowerLedger.available_mw`); a cap above every host at p_max changes
nothing. The level a starting job gets is the *power strategy*'s (`STRATEGIES`): ``max``
(p_max: jobs wait for power), ``min`` (p_min), ``uniform`` (the cap shared equally by the
hosts, clamped to the grid) or ``best`` (the level, among those that fit in the power left,
that maximises the metric of the order: VPT or VPE, VPT for other orders; ties to the higher
level). A job's run time at a level follows the power model's beta-model
(`PowerModel.curve_multiplier_ppm`, the job's ``power_beta``, or its measured
``power_table``); the ledger counts each running job's
nominal *walltime* work (integer millionths of a tick), so its estimated end, and its
walltime kill, move with every change (the kill counts nominal work: a job slowed by a low
cap is not killed for it). Energy is the allocated cap times the time held, per job (its
power segments) and for the idle hosts, in integer milliwatt-ticks, so ``jobs + idle ==
the integral of the system power`` holds exactly.

Dynamic power management (`PowerSettings.dynamic`, spec §2.6) runs after each pass:
*reclaim* takes power from running jobs for a queued job that fits in the free hosts but not
in the power left, one grid step at a time from the donors that lose the least value per
watt (ties: the lower VPT, then the job id; a step that would push a donor's completion to
its hard threshold is never taken), first at the strategy's level for the job, then one
step lower each time the donors cannot cover it or the job's value does not exceed the value
they lose, down to p_min (cosim's reading of §2.6: a job that fits at a lower level without
donors starts there, whatever its strategy); a queued job that fits in the power freed so
far starts too. *Redistribute* gives the power left, when
no queued job fits in the free hosts, to running jobs in grid steps: the largest value gain
per watt first (ties: the earliest hard threshold, then the id), then, without gain, the
earliest-ending first. Predictions use requested times only (the scheduler never reads run
times).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cosim.bls.policies.base import QueueColumns
from cosim.bls.policies.value_order import scores
from cosim.errors import InputError
from cosim.platform.power import (
    WORK_PER_TICK,
    PowerCurve,
    PowerModel,
    ticks_for,
    to_mw,
    work_done,
)
from cosim.workload.jobs import Job
from cosim.workload.value import value_at

__all__ = ["STRATEGIES", "MW_TICKS_PER_J", "check_strategy", "PowerSettings", "PowerLedger",
           "PowerPass", "PowerTotals", "budget_mw", "reclaim", "redistribute", "totals"]

STRATEGIES = ("max", "min", "uniform", "best")

def check_strategy(name: str) -> None:
    """InputError (``field power-strategy``) unless `name` is one of `STRATEGIES`."""
    if name not in STRATEGIES:
        raise InputError(f"unknown power strategy {name!r} (known: {', '.join(STRATEGIES)})",
                         field="power-strategy")


#: milliwatt-ticks per joule (ticks are nanoseconds)
MW_TICKS_PER_J = 10**12


def budget_mw(model: PowerModel, n_hosts: int, *, fraction: float | None = None,
              watts: float | None = None) -> int:
    """The system cap in milliwatts: `fraction` of every host at p_max, or `watts`; at most
    every host at p_max (a larger cap changes nothing). InputError (``field power-cap``)
    for a cap below what one host at p_min needs with the others idle."""
    full = n_hosts * model.sockets * to_mw(model.p_max_w)
    if (fraction is None) == (watts is None):
        raise InputError("give the cap as a fraction or in watts, not both", field="power-cap")
    cap = round(fraction * full) if fraction is not None else round(watts * 1000)
    least = model.sockets * (to_mw(model.p_min_w) + (n_hosts - 1) * to_mw(model.p_idle_w))
    if cap < least:
        raise InputError(f"{cap / 1000:g} W is below what one host needs at p_min with the "
                         f"others idle ({least / 1000:g} W): no job could ever run",
                         field="power-cap")
    return min(cap, full)


@dataclass(frozen=True, slots=True, kw_only=True)
class PowerSettings:
    """A run's power management: the `model` of its hosts, `n_hosts`, the cap `cap_mw`, the
    `strategy`, `dynamic` reallocation and the `metric` (``vpt``/``vpe``) ``best`` and the
    dynamic steps maximise."""

    model: PowerModel
    n_hosts: int
    cap_mw: int
    strategy: str = "best"
    dynamic: bool = False
    metric: str = "vpt"

    def __post_init__(self) -> None:
        check_strategy(self.strategy)


class _Held:
    """A running job's power: its power `curve`, its `level` index, `multiplier` (ppm), the
    nominal walltime `work` left (millionths of a tick) as of tick `last`, and its segments
    (tick, mW)."""

    __slots__ = ("job", "curve", "level", "multiplier", "work", "last", "segments")

    def __init__(self, job: Job, curve: PowerCurve, level: int, multiplier: int, now: int,
                 level_mw: int) -> None:
        self.job, self.curve = job, curve
        self.level, self.multiplier = level, multiplier
        self.work = job.walltime * WORK_PER_TICK
        self.last = now
        self.segments = [(now, level_mw)]

    @property
    def hosts(self) -> int:
        """The job's hosts."""
        return self.job.hosts


class PowerLedger:
    """The power of the running jobs and of the idle hosts (module docstring)."""

    def __init__(self, settings: PowerSettings) -> None:
        m = self.model = settings.model
        self.settings = settings
        self.levels = m.levels_mw()  # per socket, ascending
        self.sockets = m.sockets
        self.idle_mw = to_mw(m.p_idle_w)  # per socket
        self.cap_mw = settings.cap_mw
        self.n_hosts = settings.n_hosts
        self.held: dict[int, _Held] = {}
        self.busy_hosts = 0
        self.draw_mw = self.n_hosts * self.sockets * self.idle_mw
        self.series: list[tuple[int, int]] = []  # (tick, system draw from then on)
        self.idle_energy = 0  # mW x ticks, since the first start
        self.jobs_energy = 0  # mW x ticks of the jobs ended
        self.peak_mw = 0
        self._t: int | None = None
        self._mult: dict[PowerCurve, np.ndarray] = {}

    # -- the model ----------------------------------------------------------------------
    def multipliers(self, curve: PowerCurve) -> np.ndarray:
        """The run-time factor (ppm) at each level of an app of power `curve` (its beta, or
        its table; None: the default beta)."""
        got = self._mult.get(curve)
        if got is None:
            got = self._mult[curve] = np.array(
                [self.model.curve_multiplier_ppm(lv / 1000, curve) for lv in self.levels],
                dtype=np.int64)
        return got

    def need_mw(self, hosts: int, level_mw: int) -> int:
        """What a job on `hosts` idle hosts takes from the budget at `level_mw` per socket."""
        return hosts * self.sockets * (level_mw - self.idle_mw)

    def start_level(self, hosts: int) -> int:
        """The lowest level (mW per socket) the strategy may start a job on `hosts` hosts at:
        p_max for ``max``, the fair share for ``uniform``, p_min otherwise (``best`` and
        ``min``, and dynamic management, which may go down to p_min)."""
        strategy = self.settings.strategy
        if self.settings.dynamic or strategy in ("min", "best"):
            return self.levels[0]
        if strategy == "max":
            return self.levels[-1]
        return self.levels[uniform_index(self)]

    def never_fits(self, hosts: int) -> bool:
        """True when a job on `hosts` hosts exceeds the cap even with every other host idle."""
        return self.need_mw(hosts, self.start_level(hosts)) > \
            self.cap_mw - self.n_hosts * self.sockets * self.idle_mw

    def top_index(self, hosts: int) -> int:
        """The highest level index a job on `hosts` hosts could ever get: p_max, or lower
        when the cap cannot hold its hosts at p_max with the other hosts idle."""
        room = self.cap_mw - self.n_hosts * self.sockets * self.idle_mw
        top = len(self.levels) - 1
        while top > 0 and self.need_mw(hosts, self.levels[top]) > room:
            top -= 1
        return top

    def fastest_run(self, job: Job) -> int:
        """`job`'s walltime in ticks at the highest level it could ever get (`top_index`)."""
        return ticks_for(job.walltime * WORK_PER_TICK,
                         int(self.multipliers(job.power_curve)[self.top_index(job.hosts)]))

    def available_mw(self) -> int:
        """The power left under the cap now."""
        return self.cap_mw - self.draw_mw

    # -- changes ----------------------------------------------------------------------------
    def _advance(self, now: int) -> None:
        if self._t is not None:
            idle = self.n_hosts - self.busy_hosts
            self.idle_energy += (now - self._t) * idle * self.sockets * self.idle_mw
        self._t = now

    def _record(self, now: int) -> None:
        if self.series and self.series[-1][0] == now:
            self.series[-1] = (now, self.draw_mw)
        else:
            self.series.append((now, self.draw_mw))
        self.peak_mw = max(self.peak_mw, self.draw_mw)

    def start(self, job: Job, level_mw: int, now: int) -> tuple[int, int]:
        """`job` starts on its hosts at `level_mw` per socket: (its multiplier, its estimated
        end)."""
        k = self.levels.index(level_mw)
        curve = job.power_curve
        mult = int(self.multipliers(curve)[k])
        self._advance(now)
        held = self.held[job.id] = _Held(job, curve, k, mult, now, level_mw)
        self.busy_hosts += job.hosts
        self.draw_mw += self.need_mw(job.hosts, level_mw)
        self._record(now)
        return mult, now + ticks_for(held.work, mult)

    def change(self, job_id: int, level_mw: int, now: int) -> tuple[int, int]:
        """A running job goes to `level_mw` at `now`: (its multiplier, its new estimated end)."""
        held = self.held[job_id]
        k = self.levels.index(level_mw)
        self._advance(now)
        self.draw_mw += held.hosts * self.sockets * (level_mw - self.levels[held.level])
        held.work = max(held.work - work_done(now - held.last, held.multiplier), 0)
        held.last = now
        held.level, held.multiplier = k, int(self.multipliers(held.curve)[k])
        if held.segments[-1][0] == now:  # changed twice at one tick: the last level counts
            held.segments[-1] = (now, level_mw)
        else:
            held.segments.append((now, level_mw))
        self._record(now)
        return held.multiplier, now + ticks_for(held.work, held.multiplier)

    def end(self, job_id: int, now: int) -> tuple[int, tuple[tuple[int, int], ...]]:
        """A running job ends at `now`: its energy (mW x ticks) and power segments."""
        held = self.held.pop(job_id)
        self._advance(now)
        self.busy_hosts -= held.hosts
        self.draw_mw -= self.need_mw(held.hosts, self.levels[held.level])
        self._record(now)
        segs = held.segments
        energy = sum(held.hosts * self.sockets * mw * ((segs[i + 1][0] if i + 1 < len(segs)
                                                         else now) - t)
                     for i, (t, mw) in enumerate(segs))
        self.jobs_energy += energy
        return energy, tuple(segs)

    # -- predictions ----------------------------------------------------------------------
    def completion(self, job_id: int, level: int, now: int) -> int:
        """When a running job would end (by its walltime) going to level index `level` now."""
        held = self.held[job_id]
        left = max(held.work - work_done(now - held.last, held.multiplier), 0)
        return now + ticks_for(left, int(self.multipliers(held.curve)[level]))


def uniform_index(ledger: PowerLedger) -> int:
    """The ``uniform`` strategy's level index: the cap shared by every socket, rounded down
    to the grid, clamped to [p_min, p_max]."""
    share = ledger.cap_mw // (ledger.n_hosts * ledger.sockets)
    k = int(np.searchsorted(np.asarray(ledger.levels), share, side="right")) - 1
    return min(max(k, 0), len(ledger.levels) - 1)


class PowerPass:
    """The power view of one pass (`cosim.bls.policies.base.PowerView`): the queued jobs'
    levels under the strategy and their metric at every level, computed once for the pass
    (at one instant a job's metric does not depend on the others)."""

    def __init__(self, ledger: PowerLedger, now: int, jobs: Sequence[Job],
                 columns: QueueColumns | None = None, *, ranked: bool = False) -> None:
        """`columns`: those of `jobs` (built when not given); `ranked`: the queue is ranked
        by the metric (`rank_scores`)."""
        s = ledger.settings
        self.ledger = ledger
        self.available_mw = ledger.available_mw()
        self._jobs = tuple(jobs)  # (the scheduler reorders its list in place)
        self._rows: dict[int, int] | None = None
        q = columns if columns is not None else QueueColumns.of(jobs)
        levels = np.array(ledger.levels, dtype=np.int64)
        K = len(levels)
        n = len(jobs)
        self.levels = ledger.levels
        kinds, where = np.unique(q.curve_ids, return_inverse=True)  # few: a table row each
        table = np.array([ledger.multipliers(q.curves[k]) for k in kinds.tolist()],
                         dtype=np.int64).reshape(len(kinds), K)
        self.mult = np.broadcast_to(table[0], (n, K)) if len(kinds) == 1 else table[where]
        self.hosts = q.hosts.copy()
        per_host = ledger.sockets * levels
        self.best = s.strategy == "best"
        rows = np.arange(n)
        if self.best:  # the metric at every level; the best level over all, ties: higher
            self.metric = scores(s.metric, now, q, q.params, self.mult,
                                 np.broadcast_to(per_host, self.mult.shape))
            self.pref = K - 1 - np.argmax(self.metric[:, ::-1], axis=1)
            # upto[i, k]: the best level of job i among 0..k (ties: the higher)
            best_so_far = np.maximum.accumulate(self.metric, axis=1)
            self.upto = np.maximum.accumulate(
                np.where(self.metric >= best_so_far, np.arange(K), 0), axis=1)
        else:
            k = {"max": K - 1, "min": 0}.get(s.strategy)
            self.pref = np.full(n, uniform_index(ledger) if k is None else k)
            self.metric = None
            if ranked:  # the metric at the strategy's level only
                self._pref_score = scores(s.metric, now, q, q.params,
                                          self.mult[rows, self.pref], per_host[self.pref])
        self._lo, self._step = ledger.levels[0], (ledger.levels[1] - ledger.levels[0]
                                                  if K > 1 else 1)
        #: the least any job takes from the budget (one host at p_min): below it none starts
        self.least_mw = ledger.need_mw(1, ledger.levels[0])

    @property
    def rows(self) -> dict[int, int]:
        """Job id -> its row (the queue's order when the pass began)."""
        if self._rows is None:
            self._rows = {j.id: i for i, j in enumerate(self._jobs)}
        return self._rows

    def _top(self, hosts: int, available_mw: int) -> int:
        """The highest level index a job on `hosts` hosts fits at in `available_mw` (-1: none)."""
        ledger = self.ledger
        per_socket = available_mw // (hosts * ledger.sockets) + ledger.idle_mw
        if per_socket < self._lo:
            return -1
        return min((per_socket - self._lo) // self._step, len(self.levels) - 1)

    def level_index(self, i: int, available_mw: int) -> int | None:
        """The level index of queued job row `i` within `available_mw`, or None."""
        top = self._top(int(self.hosts[i]), available_mw)
        if top < 0:
            return None
        if self.best:
            return int(self.upto[i, top])
        pref = int(self.pref[i])
        return pref if pref <= top else None

    def level(self, job: Job, available_mw: int) -> int | None:
        """The per-socket cap (mW) `job` starts at within `available_mw`, or None."""
        k = self.level_index(self.rows[job.id], available_mw)
        return None if k is None else self.levels[k]

    def need_mw(self, job: Job, level: int) -> int:
        """What starting `job` at `level` (mW per socket) takes from the budget."""
        return self.ledger.need_mw(job.hosts, level)

    def least_need_mw(self, job: Job) -> int:
        """What `job` takes from the budget at the lowest level the strategy may give it."""
        return self.ledger.need_mw(job.hosts, self.ledger.start_level(job.hosts))

    def run_ticks(self, job: Job, level: int) -> int:
        """`job`'s walltime at `level` (mW per socket), in ticks."""
        k = self.levels.index(level)
        return ticks_for(job.walltime * WORK_PER_TICK, int(self.mult[self.rows[job.id], k]))

    def reserve_level(self, job: Job) -> int:
        """The level (mW per socket) a job is planned at when it cannot start now: its
        strategy's (``best``: the best over all levels), at most the highest its hosts can
        ever get under the cap."""
        k = int(self.pref[self.rows[job.id]])
        return self.levels[min(k, self.ledger.top_index(job.hosts))]

    def held_mw(self, job_id: int) -> int:
        """What running job `job_id` gives back to the budget when it ends."""
        held = self.ledger.held[job_id]
        return self.ledger.need_mw(held.hosts, self.levels[held.level])

    def rank_scores(self) -> np.ndarray:
        """Each queued job's metric (rows in the pass's queue order) at the level it would get
        now, or at its strategy's level when none fits: what the value orders rank by."""
        if not self.best:
            return self._pref_score
        ledger = self.ledger
        rows = np.arange(len(self.hosts))
        per_socket = self.available_mw // (self.hosts * ledger.sockets) + ledger.idle_mw
        top = np.minimum((per_socket - self._lo) // self._step, len(self.levels) - 1)
        ks = np.where(top >= 0, self.upto[rows, np.maximum(top, 0)], self.pref)
        return self.metric[rows, ks]

    def job_value(self, job: Job, level: int, now: int) -> float:
        """`job`'s value if it started at `now` at level index `level` (by its walltime)."""
        i = self.rows[job.id]
        run = ticks_for(job.walltime * WORK_PER_TICK, int(self.mult[i, level]))
        return 1.0 if job.value is None else value_at(job.value, now + run - job.submit)


def _running_value(ledger: PowerLedger, jid: int, level: int, now: int,
                   cache: dict[tuple[int, int], tuple[int, float]]) -> tuple[int, float]:
    """(completion, value at it) of running job `jid` going to level index `level` now."""
    got = cache.get((jid, level))
    if got is None:
        job = ledger.held[jid].job
        end = ledger.completion(jid, level, now)
        got = cache[(jid, level)] = (end, 1.0 if job.value is None else
                                     value_at(job.value, end - job.submit))
    return got


def _hard(job: Job) -> float:
    return math.inf if job.value is None else job.submit + job.value.hard


def reclaim(ledger: PowerLedger, pp: PowerPass, queue: Sequence[Job], free_hosts: int,
            now: int) -> tuple[list[tuple[Job, int]], dict[int, int]]:
    """Dynamic power's reclaim step (module docstring) over `queue` (in priority order) with
    `free_hosts` free: the jobs to start and their level (mW), and the running jobs whose
    level changes (job id -> mW). Nothing is applied."""
    levels, sockets = ledger.levels, ledger.sockets
    step_mw = pp._step
    avail = ledger.available_mw()
    cur = {jid: h.level for jid, h in ledger.held.items()}  # tentative levels
    cache: dict[tuple[int, int], tuple[int, float]] = {}
    starts: list[tuple[Job, int]] = []
    changed: dict[int, int] = {}
    reclaimable = sum(h.hosts * sockets * step_mw * h.level for h in ledger.held.values())
    heap: list | None = None  # every donor's first step at the tentative levels
    for job in queue:
        if job.hosts > free_hosts:
            continue
        i = pp.rows[job.id]
        k = pp.level_index(i, avail)
        if k is not None:  # it fits in the power freed for earlier jobs: start it too
            avail -= ledger.need_mw(job.hosts, levels[k])
            free_hosts -= job.hosts
            starts.append((job, levels[k]))
            continue
        if ledger.need_mw(job.hosts, levels[0]) - avail > reclaimable:
            continue  # not even every donor at p_min would cover it
        for k in range(int(pp.pref[i]), -1, -1):
            deficit = ledger.need_mw(job.hosts, levels[k]) - avail
            if deficit > 0 and heap is None:
                heap = _first_steps(ledger, cur, now, cache)
            taken, lost = _donors(ledger, heap, deficit, now, cache) if deficit > 0 \
                else ({}, 0.0)
            if taken is None:
                continue
            if taken and pp.job_value(job, k, now) <= lost:
                continue  # not worth what the donors lose (without donors: a plain start)
            for jid, lv in taken.items():
                freed = ledger.held[jid].hosts * sockets * (levels[cur[jid]] - levels[lv])
                reclaimable -= freed
                avail += freed
                cur[jid] = lv
                changed[jid] = levels[lv]
            if taken:
                heap = None  # the donors' levels moved
            avail -= ledger.need_mw(job.hosts, levels[k])
            free_hosts -= job.hosts
            starts.append((job, levels[k]))
            break
    return starts, changed


def _step_down(ledger: PowerLedger, jid: int, lv: int, now: int, cache: dict
               ) -> tuple[float, float, int, int, float] | None:
    """The heap entry of running job `jid`'s step from level index `lv` one down: (value lost
    per mW, its VPT, id, the new level, the value lost); None at p_min or when the step would
    push its completion to its hard threshold."""
    if lv <= 0:
        return None
    held = ledger.held[jid]
    end_hi, v_hi = _running_value(ledger, jid, lv, now, cache)
    end_lo, v_lo = _running_value(ledger, jid, lv - 1, now, cache)
    if end_lo >= _hard(held.job):
        return None
    watts = held.hosts * ledger.sockets * (ledger.levels[lv] - ledger.levels[lv - 1])
    return ((v_hi - v_lo) / watts, v_hi / max(end_hi - now, 1), jid, lv - 1, v_hi - v_lo)


def _first_steps(ledger: PowerLedger, cur: dict[int, int], now: int, cache: dict) -> list:
    """Every donor's first step down from its tentative level `cur`, as a heap."""
    heap = [e for jid in sorted(cur) if (e := _step_down(ledger, jid, cur[jid], now, cache))]
    heapq.heapify(heap)
    return heap


def _donors(ledger: PowerLedger, first: list, deficit: int, now: int,
            cache: dict) -> tuple[dict[int, int] | None, float]:
    """The cheapest donor steps covering `deficit` mW, from the heap of first steps `first`
    (left as it is): (job id -> new level index, the value lost), or (None, 0) when the
    donors cannot cover it."""
    heap = list(first)
    sockets, levels = ledger.sockets, ledger.levels
    freed, lost = 0, 0.0
    taken: dict[int, int] = {}
    while freed < deficit:
        if not heap:
            return None, 0.0
        _, _, jid, lv, loss = heapq.heappop(heap)
        freed += ledger.held[jid].hosts * sockets * (levels[lv + 1] - levels[lv])
        lost += loss
        taken[jid] = lv
        nxt = _step_down(ledger, jid, lv, now, cache)
        if nxt is not None:
            heapq.heappush(heap, nxt)
    return taken, lost


def redistribute(ledger: PowerLedger, now: int) -> dict[int, int]:
    """Dynamic power's redistribution step (module docstring): the running jobs whose level
    rises (job id -> mW). Nothing is applied."""
    levels, sockets = ledger.levels, ledger.sockets
    top = len(levels) - 1
    if top == 0:
        return {}
    step = levels[1] - levels[0]
    avail = ledger.available_mw()
    if avail < sockets * step:
        return {}  # not one step of one host
    cache: dict[tuple[int, int], tuple[int, float]] = {}
    heap: list[tuple] = []

    def push(jid: int, lv: int) -> None:
        if lv >= top:
            return
        held = ledger.held[jid]
        watts = held.hosts * sockets * step
        if watts > avail:
            return  # never fits in this pass (avail only falls)
        end_lo, v_lo = _running_value(ledger, jid, lv, now, cache)
        _, v_hi = _running_value(ledger, jid, lv + 1, now, cache)
        gain = v_hi - v_lo
        key = (0, -gain / watts, _hard(held.job), jid) if gain > 0 else \
            (1, end_lo, _hard(held.job), jid)
        heapq.heappush(heap, (*key, lv))

    for jid in sorted(ledger.held):
        if ledger.held[jid].level < top:
            push(jid, ledger.held[jid].level)
    out: dict[int, int] = {}
    while heap:
        *_, jid, lv = heapq.heappop(heap)
        watts = ledger.held[jid].hosts * sockets * step
        if watts > avail:
            continue
        avail -= watts
        out[jid] = levels[lv + 1]
        push(jid, lv + 1)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class PowerTotals:
    """A run's power (joules and watts; ticks): the `cap_w`, the system `series` ((tick,
    watts drawn from then on), from the first start to the last end), the energy of the jobs
    (`jobs_j`, the sum of `JobOutcome.energy_j` in integer form) and of the idle hosts
    (`idle_j`), the `peak_w`, and the `changes` (SetPower commands) of the run."""

    cap_w: float
    series: tuple[tuple[int, float], ...]
    jobs_j: float
    idle_j: float
    peak_w: float
    changes: int

    @property
    def energy_j(self) -> float:
        """Jobs and idle hosts."""
        return self.jobs_j + self.idle_j

    @property
    def mean_w(self) -> float:
        """The mean system power over the series (0 for an empty one)."""
        if len(self.series) < 2 or self.series[-1][0] == self.series[0][0]:
            return 0.0
        return self.energy_j / ((self.series[-1][0] - self.series[0][0]) / 1e9)


def totals(ledger: PowerLedger, changes: int) -> PowerTotals:
    """The `PowerTotals` of a finished run."""
    return PowerTotals(cap_w=ledger.cap_mw / 1000,
                       series=tuple((t, mw / 1000) for t, mw in ledger.series),
                       jobs_j=ledger.jobs_energy / MW_TICKS_PER_J,
                       idle_j=ledger.idle_energy / MW_TICKS_PER_J,
                       peak_w=ledger.peak_mw / 1000, changes=changes)
