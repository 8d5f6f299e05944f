"""The batch-level scheduler (BLS): a Slurm-like queue that takes facts and emits commands.

`BatchScheduler` owns the queue and the `ClusterState`; apps live elsewhere (`RigidApps` in
process, ALS ranks over MPI) and talk to it only through protocol messages. The caller
(`cosim.runner.simulate`) drives it one instant at a time,
and every instant ``t`` is handled in this order:

1. `handle` the facts stamped t, in `Fact.key` order: ``AppCompleted`` releases the job's
   hosts (completions release hosts first), ``HostsYielded`` records a yield (RCA, below),
   ``AppStarted`` confirms a start;
2. `expire` the scheduler's own events at t: a pass the backfill policy asked for at t
   (`Plan.wake_at`) is due; with walltime kill on, every job still running at start +
   walltime is killed — the scheduler records it ``killed`` at t, frees its hosts
   and emits ``KillApp``; the app's ``AppCompleted(killed)`` that follows only confirms it. A
   job whose run time equals its walltime therefore completes (its completion at t comes
   first); only ``runtime > walltime`` is killed;
3. `submit` the jobs whose submit time is t: they join the queue (jobs larger than the
   machine, or than its power cap, are ``rejected`` at once and never queued);
4. `schedule`: ONE scheduling pass, if a host was released or made lendable, a job
   submitted or a pass requested since the last pass (facts that change nothing, such as
   ``AppStarted`` or a yield with RCA off, cause none). The backfill policy returns a `Plan`;
   the scheduler picks each starting job's hosts with the selection policy, in plan order,
   allocates them and emits ``StartApp`` at t, carrying the job's app and its parameters.
   With `BatchConfig.bf_interval` (Slurm's backfill cadence) a pass between its multiples
   is the FCFS part only, and asks for the backfill pass at the next multiple.

RCA yield (`BatchConfig.rca`): a ``HostsYielded`` fact is recorded in the job's outcome
(`JobOutcome.yielded`) in both modes. With rca off nothing else changes: the hosts stay
allocated to the job until it ends (classic behaviour). With rca on, each yielded host the
job owns becomes lendable from the fact's tick: free for every policy (priority order and
backfilling alike; it no longer counts among the hosts the job frees at its estimated end),
while the job keeps owning it until it ends; a job started on it borrows it
(`cosim.bls.state`). Rules: a yield of a job that has already ended (completed at the same
instant, or killed by the scheduler and not yet confirmed) is ignored — the job's outcome
is final; a yield of a job that never ran, of a host the job does not hold, or of a host
it yielded before is a ProtocolError. A zero-length job started at t completes at t: its
``AppCompleted`` comes back in the next round at the same instant, releases its hosts and
triggers another pass at t. The queue is ordered by ``(-job.priority, *key(job), job.id)``:
priority > 0 jobs first, the job id last — FCFS is ``(-priority, submit, id)``, SJF
``(-priority, walltime, submit, id)``. Commands of one instant are returned in job id order.

Dynamic policies (`cosim.bls.policies.DYNAMICS`) run after the backfill pass or instead of
it, and return decisions beyond starts (`cosim.bls.policies.base`): RCA full
(`BatchConfig.exclusion`) is the policy ``exclusion`` (`cosim.bls.policies.rca_exclusion`):
the scheduler sends its `ExcludeHosts` requests, keeps which apps were asked for which queued
job and how many hosts are expected, and counts excluded hosts as ordinary yields when their
chunks end. A malleable policy (`BatchConfig.malleable`, e.g. ``equi``) may start jobs on
explicit PEs (`StartApp.pe_set`), shrink and expand running malleable jobs: ``ShrinkApp``
marks the PEs *releasing* (the job keeps them until its app reports `AppResized` with their
release tick; then they are free and a pass follows), ``ExpandApp`` hands free PEs over at
once; a new ``limit`` moves the job's estimated end and its walltime kill. Impossible
decisions are `ProtocolError`s naming the job. A pass runs with an empty queue too when a
malleable policy is on (a completion may let running jobs grow). Malleable policies and RCA
are not combined (RCA lends whole hosts). The scheduler never reads `Job.runtime`: it knows
only walltimes (estimates) and the facts it is told.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from cosim.bls import policies
from cosim.bls.policies.base import (
    DynamicView, Exclude, Expand, PassView, Plan, QueueColumns, QueueView, Shrink, Start,
    Tunables,
)
from cosim.bls.policies.value_order import METRICS
from cosim.bls.policies.window import plan as window_plan
from cosim.bls.power import (
    MW_TICKS_PER_J,
    PowerLedger,
    PowerPass,
    PowerSettings,
    budget_mw,
    reclaim,
    redistribute,
)
from cosim.bls.config import (  # (re-exported: they were defined here)
    BatchConfig,
    check_machine,
    drops_hopeless,
    initial_tunables,
)
from cosim.bls.state import ClusterState
from cosim.bls.tuning import Tuner, TunerParams
from cosim.workload.value import zero_from
from cosim.config import build
from cosim.core.engine import EventQueue
from cosim.errors import InputError, ProtocolError
from cosim.platform.power import PowerModel
from cosim.protocol.messages import (
    AppCompleted,
    AppResized,
    AppStarted,
    Command,
    ExcludeHosts,
    ExpandApp,
    Fact,
    HostsExcluded,
    HostsYielded,
    KillApp,
    SetPower,
    ShrinkApp,
    StartApp,
)
from cosim.workload.jobs import Job, JobOutcome

__all__ = ["BatchConfig", "BatchScheduler", "check_machine", "drops_hopeless", "initial_tunables"]


class BatchScheduler:
    """The batch level of one simulation (see the module docstring for the event order).

    Parameters
    ----------
    cores:
        PEs of each host, by host index.
    config:
        Policies and walltime enforcement.
    power:
        The hosts' power model, needed under a power cap (`BatchConfig.power_cap`).
    """

    def __init__(self, *, cores: Sequence[int], config: BatchConfig,
                 power: PowerModel | None = None) -> None:
        self.config = config
        self.state = ClusterState(cores)
        self.power: PowerLedger | None = None
        if config.power_capped:
            if power is None:
                raise InputError("a power cap needs the platform's power table (a [power] "
                                 "table in its TOML file, e.g. platforms/kumbhare2048.toml)",
                                 field="power-cap")
            metric = config.priority if config.priority in METRICS else "vpt"
            self.power = PowerLedger(PowerSettings(
                model=power, n_hosts=len(cores), strategy=config.power_strategy,
                dynamic=config.power_dynamic, metric=metric,
                cap_mw=budget_mw(power, len(cores), fraction=config.power_cap,
                                 watts=config.power_cap_w)))
        self.power_changes = 0  # SetPower commands sent (one per job and pass at most)
        user_key = config.priority_key
        order = policies.priority(config.priority) if user_key is None else None
        self._key = user_key if order is None else order.key
        # a dynamic order ranks the queue at every pass (`_rerank`) with the tunables in force
        self._rank = None if order is None else order.rank
        self._drop = drops_hopeless(config)
        self._drop_heap: list[tuple[int, int, Job]] = []  # (drop tick, id, job), queued jobs
        # the queue's columns are kept for dynamic orders and the power pass
        self._columns = self._rank is not None or self.power is not None
        self.tuner: Tuner | None = None
        if config.adaptive != "off":
            self.tuner = Tuner(config.adaptive, build(TunerParams, config.tuner_params,
                                                      section="tuner-param"), len(cores))
        self.tunables = initial_tunables(config)
        # ... on the queue's columns, kept in queue order; `seq` numbers the jobs as they
        # are queued, and the jobs queued at the last ranking are those below `_rank_mark`
        self._qcols = QueueColumns()
        self._seq = self._rank_mark = 0
        self._plan = policies.backfill(config.backfill).plan
        self._fcfs_plan = policies.backfill("none").plan  # the FCFS part (`bf_interval`)
        self._bf = config.bf_interval
        self._select = policies.selection(config.selection).select
        self._contiguous = config.selection == "contiguous"
        # starts the contiguous selection could not give one block (it fell back to first-fit)
        self.scattered_starts = 0
        # dynamic policies in the order they run: the malleable one, then RCA exclusion
        self._dynamics: list[tuple[Any, Any]] = []
        check_machine(config, cores)
        if config.malleable != "none":
            pol = policies.dynamic(config.malleable, "malleable")
            self._dynamics.append((pol, build(pol.params, config.malleable_params,
                                              section="malleable-param")))
        if config.exclusion:
            from cosim.bls.policies import rca_exclusion

            self._dynamics.append((rca_exclusion.POLICY, rca_exclusion.Params(
                max_short=config.exclusion_max_short)))
        self._replaced = any(p.replaces_backfill for p, _ in self._dynamics)
        self._memos: dict[str, Any] = {}
        self._waiting: dict[int, Start] = {}  # starts waiting for PEs being released for them
        self._waiting_since: dict[int, int] = {}
        self.guest_starts = 0  # jobs started as malleable guests (SD-Policy)
        self.release_wait = 0  # summed ticks guests waited for their mates' PEs
        self.release_wait_max = 0
        self._kill = config.walltime_kill
        self._rca = config.rca
        self._min_cores = min(cores)
        self._qkeys: list[tuple[Any, ...]] = []  # sorted queue keys ...
        self._qjobs: list[Job] = []  # ... and the jobs, in the same order
        self._qcols.jobs = self._qjobs  # (kept in place: `_rerank` reorders it as a slice)
        self._qstamp = [0]  # moves on at every change of the queue (QueueView)
        # ... and indexed by (hosts, needs every core), by walltime (`DynamicView.queue_index`)
        self._qindex: dict[tuple[int, bool], tuple[list[int], list[tuple[Any, ...]]]] = {}
        self._qindex_view = MappingProxyType(self._qindex)
        self._indexed = bool(self._dynamics)  # only dynamic policies read the queue index
        self._keys: dict[int, tuple[Any, ...]] = {}  # queued job id -> its key
        self._memo: Any = None
        self._wake: int | None = None  # a pass the backfill policy asked for
        self._dirty = False
        self._timers: EventQueue[int] = EventQueue()
        self._timer_of: dict[int, list] = {}
        self._unconfirmed_kills: set[int] = set()
        self._started_at: dict[int, int] = {}
        self.outcomes: dict[int, JobOutcome] = {}
        self.first_reservation: dict[int, int] = {}
        self.passes = 0
        self.facts = 0
        self.submissions = 0
        self.kills = 0
        self.rejected = 0
        self.yields = 0  # hosts reported yielded (ignored yields excluded)
        self.ignored_yields = 0  # HostsYielded/AppResized facts of jobs that had already ended
        self.shrinks = 0  # ShrinkApp commands sent
        self.expands = 0  # ExpandApp commands sent
        self.pes_released = 0  # PEs released after shrinks
        # RCA exclusion requests: queued job -> apps asked for it; queued job -> hosts asked or
        # accepted and not yet yielded; (app, queued job) -> hosts asked, until answered;
        # (app, host) -> queued job, for excluded hosts not yet yielded
        self._asked: dict[int, set[int]] = {}
        self._expected: dict[int, int] = {}
        self._asking: dict[tuple[int, int], int] = {}
        self._excluded: dict[tuple[int, int], int] = {}
        self.exclusion_requests = 0
        self.exclusions_accepted = 0
        self.hosts_excluded = 0

    # -- queue --------------------------------------------------------------------------
    @property
    def queue(self) -> tuple[Job, ...]:
        """Queued jobs in priority order."""
        return tuple(self._qjobs)

    @property
    def idle(self) -> bool:
        """True when nothing is queued, waiting for its PEs or running."""
        return not self._qjobs and not self.state.running and not self._waiting

    def submit(self, jobs: Iterable[Job], now: int) -> None:
        """Jobs submitted at `now` join the queue (or are rejected if larger than the machine)."""
        n_hosts = self.state.n_hosts
        n_pes = self.state.n_pes
        if self.tuner is not None:
            self.tuner.start(now)
        for job in jobs:
            self.submissions += 1
            if job.id in self.outcomes or job.id in self.state.running:
                raise ProtocolError(f"job {job.id} submitted twice")
            if job.pes > job.hosts * self._min_cores:
                raise InputError(f"job {job.id}: {job.pes} PEs do not fit on {job.hosts} hosts "
                                 f"of {self._min_cores} cores", field="pes")
            if job.kind in ("moldable", "malleable") and job.min_pes > n_pes:
                raise InputError(f"job {job.id}: its minimum of {job.min_pes} PEs is larger "
                                 f"than the machine ({n_pes} PEs)", field="min_pes")
            if (job.hosts > n_hosts and not self._replaced) or (
                    self.power is not None and self.power.never_fits(job.hosts)):
                self.rejected += 1
                self.outcomes[job.id] = JobOutcome(job=job, start=None, end=None, hosts=(),
                                                   status="rejected")
                continue
            if self._rank is None:
                key = (-job.priority, *self._key(job), job.id)
            else:  # last of its priority for now; the pass ranks the queue (`_rerank`)
                key = (-job.priority, math.inf, job.id)
            i = bisect_right(self._qkeys, key)
            if self._drop and job.value is not None:  # when it can no longer earn value
                run = job.walltime if self.power is None else self.power.fastest_run(job)
                heapq.heappush(self._drop_heap, (job.submit + zero_from(job.value) - run,
                                                 job.id, job))
            self._keys[job.id] = key
            self._qkeys.insert(i, key)
            self._qjobs.insert(i, job)
            if self._columns:
                self._qcols.insert(i, job, self._seq)
                self._seq += 1
            self._qstamp[0] += 1
            if self._indexed:
                self._index(job, key)
            self._dirty = True

    # -- facts and own events -------------------------------------------------------------
    def handle(self, facts: Iterable[Fact]) -> None:
        """Apply facts of one instant, given in `Fact.key` order."""
        for fact in facts:
            self.facts += 1
            jid = fact.job_id
            if type(fact) is AppCompleted:
                if jid in self._unconfirmed_kills:
                    if fact.status != "killed":
                        raise ProtocolError(f"job {jid} was killed but reports {fact.status}")
                    self._unconfirmed_kills.discard(jid)
                    continue
                self._end(jid, fact.time, fact.status)
            elif type(fact) is AppStarted:
                if self._started_at.pop(jid, None) != fact.time:
                    raise ProtocolError(f"job {jid} started at {fact.time}, not as commanded")
            elif type(fact) is HostsYielded:
                self._yield(fact)
            elif type(fact) is HostsExcluded:
                self._excluded_answer(fact)
            elif type(fact) is AppResized:
                self._resized(fact)
            else:
                raise ProtocolError(f"the batch level cannot handle {type(fact).__name__}")

    def _ended(self, fact: Fact, what: str) -> bool:
        """True if the fact's job has already ended (completed at the same instant, or killed
        and not yet confirmed): the fact is ignored, its outcome is final. ProtocolError if
        the job never ran."""
        jid = fact.job_id
        if jid in self.state.running:
            return False
        done = self.outcomes.get(jid)
        if done is not None and done.status not in ("rejected", "dropped"):
            self.ignored_yields += 1
            return True
        raise ProtocolError(f"job {jid} {what} but is not running")

    def _yield(self, fact: HostsYielded) -> None:
        jid = fact.job_id
        if self._ended(fact, "yields hosts"):
            return
        if self.state.yield_hosts(jid, fact.hosts, fact.time, lend=self._rca):
            self._dirty = True
        self.yields += len(fact.hosts)
        if self._excluded:
            for h in fact.hosts:
                self._unexpect(self._excluded.pop((jid, h), None))

    def _resized(self, fact: AppResized) -> None:
        jid = fact.job_id
        if self._ended(fact, "reports a resize"):
            return
        if fact.released:
            self.state.release_pes(jid, fact.released, fact.time)
            self.pes_released += len(fact.released)
            self._dirty = True
        if fact.added and not fact.added.issubset(self.state.pes_of(jid)):
            raise ProtocolError(f"job {jid} confirms PEs it was not given")

    def _unexpect(self, for_job: int | None, hosts: int = 1) -> None:
        """`hosts` asked for `for_job` will not come (any more) from an exclusion."""
        if for_job is not None and for_job in self._expected:
            self._expected[for_job] -= hosts

    def _excluded_answer(self, fact: HostsExcluded) -> None:
        asked = self._asking.pop((fact.job_id, fact.for_job), None)
        if asked is None or len(fact.hosts) > asked:
            raise ProtocolError(f"job {fact.job_id} answers an exclusion request it was not "
                                f"sent, or gives more hosts than asked")
        if asked > len(fact.hosts):  # (partly) refused: a pass may ask the other apps
            self._unexpect(fact.for_job, asked - len(fact.hosts))
            self._dirty = True
        if fact.hosts:
            self.exclusions_accepted += 1
            self.hosts_excluded += len(fact.hosts)
            for h in fact.hosts:
                self._excluded[(fact.job_id, h)] = fact.for_job

    def _end(self, jid: int, now: int, status: str) -> None:
        rel = self.state.release(jid, now)
        alloc, acct = rel.alloc, rel.acct
        if self._excluded:
            for key in [k for k in self._excluded if k[0] == jid]:
                self._unexpect(self._excluded.pop(key))
        handle = self._timer_of.pop(jid, None)
        if handle is not None:
            self._timers.cancel(handle)
        power = {}
        if self.power is not None:
            energy, segments = self.power.end(jid, now)
            power = {"energy_j": energy / MW_TICKS_PER_J, "power": segments}
        self.outcomes[jid] = JobOutcome(job=alloc.job, start=alloc.start, end=now,
                                        hosts=rel.hosts, status=status,  # type: ignore[arg-type]
                                        yielded=acct.yielded, lent=acct.lent,
                                        borrowed=acct.borrowed, shrinks=rel.shrinks,
                                        expands=rel.expands, pe_ticks=rel.pe_ticks,
                                        pes_start=rel.pes_start, **power)
        self._dirty = True

    def next_timer(self) -> int | None:
        """Time of the scheduler's next own event (walltime expiry, requested pass, the
        tuner's next checkpoint while jobs are queued or running), or None."""
        t = self._timers.peek_time()
        for w in (self._wake, self.tuner.due() if self.tuner and not self.idle else None):
            if w is not None and (t is None or w < t):
                t = w
        return t

    def expire(self, now: int) -> list[Command]:
        """Own events at `now`: a requested pass, and kills of jobs whose walltime is over.

        Returns the KillApp commands.
        """
        if self._wake is not None and self._wake <= now:
            self._wake = None
            self._dirty = True
        out: list[Command] = []
        for _, jid in self._timers.pop_until(now):
            del self._timer_of[jid]
            self._end(jid, now, "killed")
            self._unconfirmed_kills.add(jid)
            self.kills += 1
            out.append(KillApp(time=now, job_id=jid))
        out.sort(key=lambda c: c.job_id)
        tuner = self.tuner
        while tuner is not None and (due := tuner.due()) is not None and due <= now:
            # checkpoints passed while nothing was queued or running are caught up here
            before = self.tunables
            bf, window = tuner.check(due, [j.submit for j in self._qjobs], before.bf,
                                     before.window)
            if (bf, window) != (before.bf, before.window):
                self.tunables = Tunables(bf=bf, window=window)
                if tuner.params.pass_at_checkpoint:
                    self._dirty = True
        return out

    # -- the pass -------------------------------------------------------------------------
    def schedule(self, now: int) -> list[Command]:
        """One scheduling pass at `now` if anything changed; returns its commands (StartApp,
        ShrinkApp, ExpandApp, ExcludeHosts) in job id order."""
        out = self._schedule(now)
        if self.tuner is not None:  # the busy hosts as the instant leaves them
            self.tuner.observe(now, self.state.n_hosts - self.state.free_hosts)
        return out

    def _schedule(self, now: int) -> list[Command]:
        if not self._dirty:
            return []
        self._dirty = False
        out: list[Command] = self._start_waiting(now) if self._waiting else []
        if self._drop and self._qjobs:
            self._drop_hopeless(now)
        pp = None
        if self.power is not None and self._qjobs:
            pp = PowerPass(self.power, now, self._qjobs, self._qcols,
                           ranked=self._rank is not None)
        if self._rank is not None and self._qjobs:
            if pp is not None:  # each job ranked at the power it would get now
                self._qcols.score = pp.rank_scores()
            self._rerank(now)
            self._qcols.score = None
        if self._qjobs and not self._replaced:
            out += self._pass(now, pp)
        if self.power is not None and self.config.power_dynamic:
            out += self._power_dynamic(now, pp)
        for pol, params in self._dynamics:
            if not (self._qjobs or pol.replaces_backfill):
                continue
            if pol.replaces_backfill:
                self.passes += 1
            view = DynamicView(now=now, queue=tuple(self._qjobs), cluster=self.state,
                               queue_keys=tuple(self._qkeys), queue_index=self._qindex_view,
                               expected=self._expected,
                               asked={k: frozenset(v) for k, v in self._asked.items()},
                               memo=self._memos.get(pol.name),
                               pending=frozenset(self._waiting))
            plan = pol.decide(view, params)
            self._memos[pol.name] = plan.memo
            out.extend(self._apply(plan, now))
        out.sort(key=lambda c: c.job_id)
        return out

    def _drop_hopeless(self, now: int) -> None:
        """Drop the queued jobs whose value would be 0 even if they started now and ran for
        their walltime (under a power cap: at the highest power they could get), by the
        drop ticks noted at their submission (`BatchConfig.drop_hopeless`)."""
        heap = self._drop_heap
        while heap and heap[0][0] <= now:
            _, jid, job = heapq.heappop(heap)
            if jid in self._keys:  # still queued
                self._dequeue(job)
                self.outcomes[jid] = JobOutcome(job=job, start=None, end=now, hosts=(),
                                                status="dropped")

    def _rerank(self, now: int) -> None:
        """Order the queue by the dynamic priority at `now`: ``(-priority, *rank, id)``. The
        keys are replaced only when the order changes; the backfill policy's memo is dropped
        when the relative order of jobs already queued at the last ranking changed (a job
        that joined since may land anywhere: conservative backfilling places it itself)."""
        jobs, q = self._qjobs, self._qcols
        n = len(jobs)
        cols = [np.asarray(c) for c in self._rank(now, q, self.tunables)]
        order = np.lexsort((q.id, *reversed(cols), -q.priority))
        if (order != np.arange(n)).any():
            if self._memo is not None:
                seq = q.seq
                old = seq < self._rank_mark  # queued at the last ranking
                if not np.array_equal(seq[old], seq[order][old[order]]):
                    self._memo = None
            new = [jobs[i] for i in order.tolist()]
            rows = [c[order].tolist() for c in cols]
            keys = [(-j.priority, *(r[k] for r in rows), j.id) for k, j in enumerate(new)]
            self._qjobs[:] = new
            self._qkeys[:] = keys
            q.permute(order)
            self._keys = {j.id: k for j, k in zip(new, keys, strict=True)}
            if self._indexed:
                self._qindex.clear()
                for j, k in zip(new, keys, strict=True):
                    self._index(j, k)
            self._qstamp[0] += 1
        self._rank_mark = self._seq

    def _pass(self, now: int, power: PowerPass | None = None) -> list[Command]:
        self.passes += 1
        state = self.state
        view = PassView(now=now, n_hosts=state.n_hosts, free=state.free_hosts,
                        queue=QueueView(self._qjobs, self._qstamp),
                        running=state.running_ends(), memo=self._memo,
                        tunables=self.tunables, power=power)
        bf = self._bf
        if bf and now % bf:  # between backfill passes: the FCFS part only (BatchConfig)
            plan = self._fcfs_plan(view)
            if plan.starts:
                self._memo = None
            self._wake = (now // bf + 1) * bf if len(plan.starts) < len(view.queue) else None
            return self._apply(plan, now)
        window = self.tunables.window
        plan = (self._plan(view) if window <= 1 else
                window_plan(view, self._plan, window, self.config.makespan_cap))
        self._memo = plan.memo
        self._wake = plan.wake_at
        first = self.first_reservation
        for jid, t in plan.reservations.items():
            if jid not in first:
                first[jid] = t
        return self._apply(plan, now)

    def _apply(self, plan: Plan, now: int) -> list[Command]:
        """Carry out a plan's decisions: shrinks (so that starts may wait for their PEs),
        expands (so that no host selection takes their PEs), starts, exclusion requests, in
        that order."""
        out: list[Command] = []
        for r in plan.resizes:
            if isinstance(r, Shrink):
                out.append(self._resize(r, now))
        for r in plan.resizes:
            if isinstance(r, Expand):
                out.append(self._resize(r, now))
        for item in plan.starts:
            cmd = self._start(item, now, plan.power.get(item.id) if isinstance(item, Job)
                              else None)
            if cmd is not None:
                out.append(cmd)
        for e in plan.excludes:
            out.append(self._exclude(e, now))
        return out

    def _start_waiting(self, now: int) -> list[Command]:
        """Start the jobs whose promised PEs have all been released (in job id order)."""
        out: list[Command] = []
        for jid in sorted(self._waiting):
            item = self._waiting[jid]
            held = self.state.promised_pes.get(jid)
            if held is not None and len(held) == len(item.pes):
                del self._waiting[jid]
                waited = now - self._waiting_since.pop(jid)
                self.release_wait += waited
                self.release_wait_max = max(self.release_wait_max, waited)
                out.append(self._launch(item, now))
        return out

    def _index(self, job: Job, key: tuple[Any, ...]) -> None:
        """Add a queued job to the queue index (`DynamicView.queue_index`)."""
        walls, keys = self._qindex.setdefault(self._qclass(job), ([], []))
        at = _position(walls, keys, job.walltime, key)
        walls.insert(at, job.walltime)
        keys.insert(at, key)

    def _qclass(self, job: Job) -> tuple[int, bool]:
        """A queued job's entry in the queue index: (hosts, needs every core of them)."""
        return job.hosts, job.pes == job.hosts * self.state.n_cores

    def _dequeue(self, job: Job) -> None:
        key = self._keys.pop(job.id, None)
        if key is None:
            raise ProtocolError(f"plan starts job {job.id}, which is not queued")
        i = bisect_left(self._qkeys, key)
        del self._qkeys[i], self._qjobs[i]
        if self._columns:
            self._qcols.delete(i)
        self._qstamp[0] += 1
        if self._indexed:
            cls = self._qclass(job)
            walls, keys = self._qindex[cls]
            at = _position(walls, keys, job.walltime, key)
            del walls[at], keys[at]
            if not walls:
                del self._qindex[cls]
        self._asked.pop(job.id, None)
        self._expected.pop(job.id, None)

    def _power_dynamic(self, now: int, pp: PowerPass | None) -> list[Command]:
        """Dynamic power management after the pass (`cosim.bls.power`): reclaim for queued
        jobs that fit in the free hosts but not in the power left, then, when no queued job
        fits in the free hosts, give the power left to running jobs."""
        ledger = self.power
        out: list[Command] = []
        changes: dict[int, SetPower] = {}  # one command per job: its last level of the pass
        if pp is not None and self._qjobs:
            starts, changed = reclaim(ledger, pp, self._qjobs, self.state.free_hosts, now)
            for jid in sorted(changed):
                changes[jid] = self._set_power(jid, changed[jid], now)
            for job, level in starts:
                out.append(self._start(job, now, level))
        free = self.state.free_hosts
        if not any(j.hosts <= free for j in self._qjobs):
            raised = redistribute(ledger, now)
            for jid in sorted(raised):
                changes[jid] = self._set_power(jid, raised[jid], now)
        self.power_changes += len(changes)
        return out + [changes[jid] for jid in sorted(changes)]

    def _set_power(self, jid: int, level: int, now: int) -> SetPower:
        """Move running job `jid` to `level` (mW per socket) at `now`."""
        mult, end = self.power.change(jid, level, now)
        self.state.set_limit(jid, end)
        limit = None
        if self._kill:
            limit = end
            self._timers.cancel(self._timer_of[jid])
            self._timer_of[jid] = self._timers.push(end, jid, key=(jid,))
        return SetPower(time=now, job_id=jid, watts_mw=level, slowdown_ppm=mult, limit=limit)

    def _start(self, item: Job | Start, now: int, level: int | None = None
               ) -> StartApp | None:
        """Start a job, or (a `Start` whose PEs are still being released for it) hold its free
        PEs and wait: None."""
        state = self.state
        if isinstance(item, Start):
            job = item.job
            n = len(item.pes)
            if not job.min_pes <= n <= job.max_pes:
                raise ProtocolError(f"plan starts job {job.id} ({job.kind}) on {n} PEs, outside "
                                    f"[{job.min_pes}, {job.max_pes}]")
            self._dequeue(job)
            coming = state.coming_for(job.id)
            if len(coming):
                if not coming.issubset(item.pes):
                    raise ProtocolError(f"job {job.id}: PEs released for it are not its PEs")
                wall = job.walltime if item.walltime is None else item.walltime
                state.promise(job.id, item.pes.difference(coming), until=(now + max(wall, 1), now))
                self._waiting[job.id] = item
                self._waiting_since[job.id] = now
                return None
            return self._launch(item, now)
        job = item
        if job.hosts > state.free_hosts:
            raise ProtocolError(f"plan starts job {job.id} on {job.hosts} hosts, "
                                f"{state.free_hosts} free")
        self._dequeue(job)
        hosts = self._select(state.free_mask(), job.hosts)
        if self._contiguous and int(hosts[-1]) - int(hosts[0]) + 1 != len(hosts):
            self.scattered_starts += 1
        alloc = state.allocate(job, hosts, now)
        if self.power is None:
            return self._started(job, alloc, now, job.walltime)
        if level is None:
            raise ProtocolError(f"plan starts job {job.id} under a power cap without a level")
        mult, end = self.power.start(job, level, now)
        if end != now + job.walltime:
            state.set_limit(job.id, end)
        return self._started(job, alloc, now, end - now, watts_mw=level, slowdown_ppm=mult)

    def _launch(self, item: Start, now: int) -> StartApp:
        job = item.job
        if item.owners:
            self.guest_starts += 1
        wall = job.walltime if item.walltime is None else item.walltime
        alloc = self.state.allocate_pes(job, item.pes, now, walltime=wall, owners=item.owners)
        return self._started(job, alloc, now, wall, item.pes)

    def _started(self, job: Job, alloc: Any, now: int, wall: int,
                 pe_set: Any = None, **power: int) -> StartApp:
        self._started_at[job.id] = now
        if self._kill:
            self._timer_of[job.id] = self._timers.push(now + wall, job.id, key=(job.id,))
        params = job.app_params
        extra = power if pe_set is None else {"pe_set": pe_set, **power}
        return StartApp(time=now, job_id=job.id, hosts=alloc.hosts, pes=alloc.pes, app=job.app,
                        params=tuple(sorted(params.items())) if params else (),
                        limit=now + wall if self._kill else None, **extra)

    def _resize(self, r: Shrink | Expand, now: int) -> Command:
        state = self.state
        jid = r.job_id
        alloc = state.running.get(jid)
        if alloc is None:
            raise ProtocolError(f"a policy resizes job {jid}, which is not running")
        job = alloc.job
        if not job.resizable:
            raise ProtocolError(f"a policy resizes job {jid}, which is {job.kind}, not malleable")
        held = alloc.pes - len(state.releasing(jid))
        if isinstance(r, Shrink):
            if held - len(r.pes) < job.min_pes:
                raise ProtocolError(f"a policy shrinks job {jid} below its minimum of "
                                    f"{job.min_pes} PEs")
            state.shrink(jid, r.pes, now, r.for_job)
            self.shrinks += 1
        else:  # PEs still being released count: the job uses them until then
            if alloc.pes + len(r.pes) > job.max_pes:
                raise ProtocolError(f"a policy expands job {jid} above its maximum of "
                                    f"{job.max_pes} PEs")
            state.expand(jid, r.pes, now)
            self.expands += 1
            self._dirty = True  # a pass at this instant sees the job with its new PEs
        limit = None
        if r.limit is not None:
            state.set_limit(jid, r.limit)
            if self._kill:
                limit = r.limit
                self._timers.cancel(self._timer_of[jid])
                self._timer_of[jid] = self._timers.push(r.limit, jid, key=(jid,))
        if isinstance(r, Shrink):
            return ShrinkApp(time=now, job_id=jid, pes=r.pes, for_job=r.for_job, limit=limit)
        return ExpandApp(time=now, job_id=jid, pes=r.pes, limit=limit)

    def _exclude(self, e: Exclude, now: int) -> ExcludeHosts:
        asked = self._asked.setdefault(e.for_job, set())
        if e.job_id in asked or e.job_id not in self.state.running or e.count < 1:
            raise ProtocolError(f"exclusion request to job {e.job_id} for job {e.for_job} "
                                "repeated, to a job not running, or for no host")
        asked.add(e.job_id)
        self._asking[(e.job_id, e.for_job)] = e.count
        self._expected[e.for_job] = self._expected.get(e.for_job, 0) + e.count
        self.exclusion_requests += 1
        return ExcludeHosts(time=now, job_id=e.job_id, count=e.count, for_job=e.for_job)


def _position(walls: list[int], keys: list[Any], walltime: int, key: Any) -> int:
    """Where ``(walltime, key)`` is, or goes, in a queue index entry (walltimes ascending,
    then keys)."""
    lo = bisect_left(walls, walltime)
    return bisect_left(keys, key, lo, bisect_right(walls, walltime, lo))
