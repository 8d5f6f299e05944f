"""The batch-level scheduler (BLS): a Slurm-like queue that takes facts and emits commands.

`BatchScheduler` owns the queue and the `ClusterState`; apps live elsewhere (`RigidApps` in
process, ALS ranks over MPI) and talk to it only through protocol messages. The caller
(`cosim.bls.batch.simulate_batch`, the co-simulation runner) drives it one instant at a time,
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
   machine are ``rejected`` at once and never queued);
4. `schedule`: ONE scheduling pass, if a host was released or made lendable, a job
   submitted or a pass requested since the last pass (facts that change nothing, such as
   ``AppStarted`` or a yield with RCA off, cause none). The backfill policy returns a `Plan`;
   the scheduler picks each starting job's hosts with the selection policy, in plan order,
   allocates them and emits ``StartApp`` at t, carrying the job's app and its parameters.

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

RCA full (`BatchConfig.exclusion`): after each pass, if the head of the queue is short of
``k`` hosts (its hosts minus the free ones minus those already asked or accepted for it and
not yet yielded) with ``1 <= k <= max(1, floor(exclusion_max_short x its hosts))``, the
scheduler sends `ExcludeHosts` to running app-driven jobs whose `Job.exclusion_ok` hint is
set, that started before now and were not asked for this job yet, largest number of working
hosts first (then job id), each for at most its working hosts minus one, until ``k`` hosts
are asked for. The app answers `HostsExcluded` at the same tick (its hosts, or none when it
refuses); excluded hosts come back as ordinary yields when their chunks end, are lent like
any yielded host, and the head job starts when enough are free. Each app is asked at most
once per queued job, so a refusal is final for that job.
The scheduler never reads `Job.runtime`: it knows only walltimes (estimates) and the facts
it is told.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cosim.bls import policies
from cosim.bls.policies.base import PassView
from cosim.bls.state import ClusterState
from cosim.core.engine import EventQueue
from cosim.errors import InputError, ProtocolError
from cosim.protocol.messages import (
    AppCompleted,
    AppStarted,
    Command,
    ExcludeHosts,
    Fact,
    HostsExcluded,
    HostsYielded,
    KillApp,
    StartApp,
)
from cosim.workload.jobs import Job, JobOutcome

__all__ = ["BatchConfig", "BatchScheduler"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchConfig:
    """How the batch level schedules.

    Attributes
    ----------
    priority:
        Queue order: ``fcfs`` (default) or ``sjf`` (`cosim.bls.policies.PRIORITIES`).
    backfill:
        ``none``, ``easy`` (default) or ``conservative``.
    selection:
        Host selection: ``first-fit`` (default), ``contiguous`` or ``best-fit``.
    walltime_kill:
        Kill a job at start + walltime when it runs longer (default True, as Slurm).
    priority_key:
        A pluggable priority: ``key(job) -> tuple`` sorted ascending after ``-job.priority``
        and before the job id; when given it replaces `priority` (which then only names it).
    rca:
        Lend yielded hosts to queued jobs (RCA yield; default False: yields are only
        recorded). See the module docstring.
    exclusion:
        RCA full: also ask running apps to exclude hosts for the head of the queue (needs
        `rca`; module docstring).
    exclusion_max_short:
        Ask only when the head job is short of at most this fraction of its hosts (at least
        one host).
    """

    priority: str = "fcfs"
    backfill: str = "easy"
    selection: str = "first-fit"
    walltime_kill: bool = True
    priority_key: Callable[[Job], tuple[Any, ...]] | None = None
    rca: bool = False
    exclusion: bool = False
    exclusion_max_short: float = 0.25

    def __post_init__(self) -> None:
        if self.exclusion and not self.rca:
            raise InputError("exclusion requests need RCA host lending", field="rca")
        if not 0 < self.exclusion_max_short <= 1:
            raise InputError("exclusion_max_short must be in (0, 1]",
                             field="exclusion_max_short")
        if self.priority_key is None:
            object.__setattr__(self, "priority", policies.priority(self.priority).name)
        object.__setattr__(self, "backfill", policies.backfill(self.backfill).name)
        object.__setattr__(self, "selection", policies.selection(self.selection).name)


class BatchScheduler:
    """The batch level of one simulation (see the module docstring for the event order).

    Parameters
    ----------
    cores:
        PEs of each host, by host index.
    config:
        Policies and walltime enforcement.
    """

    def __init__(self, *, cores: Sequence[int], config: BatchConfig) -> None:
        self.config = config
        self.state = ClusterState(cores)
        user_key = config.priority_key
        self._key = user_key if user_key is not None else policies.priority(config.priority).key
        self._plan = policies.backfill(config.backfill).plan
        self._select = policies.selection(config.selection).select
        self._kill = config.walltime_kill
        self._rca = config.rca
        self._min_cores = min(cores)
        self._qkeys: list[tuple[Any, ...]] = []  # sorted queue keys ...
        self._qjobs: list[Job] = []  # ... and the jobs, in the same order
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
        self.ignored_yields = 0  # HostsYielded facts of jobs that had already ended
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
        """True when nothing is queued or running."""
        return not self._qjobs and not self.state.running

    def submit(self, jobs: Iterable[Job], now: int) -> None:
        """Jobs submitted at `now` join the queue (or are rejected if larger than the machine)."""
        n_hosts = self.state.n_hosts
        for job in jobs:
            self.submissions += 1
            if job.id in self.outcomes or job.id in self.state.running:
                raise ProtocolError(f"job {job.id} submitted twice")
            if job.pes > job.hosts * self._min_cores:
                raise InputError(f"job {job.id}: {job.pes} PEs do not fit on {job.hosts} hosts "
                                 f"of {self._min_cores} cores", field="pes")
            if job.hosts > n_hosts:
                self.rejected += 1
                self.outcomes[job.id] = JobOutcome(job=job, start=None, end=None, hosts=(),
                                                   status="rejected")
                continue
            key = (-job.priority, *self._key(job), job.id)
            i = bisect_right(self._qkeys, key)
            self._keys[job.id] = key
            self._qkeys.insert(i, key)
            self._qjobs.insert(i, job)
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
            else:
                raise ProtocolError(f"the batch level cannot handle {type(fact).__name__}")

    def _yield(self, fact: HostsYielded) -> None:
        jid = fact.job_id
        if jid not in self.state.running:
            done = self.outcomes.get(jid)
            if done is not None and done.status != "rejected":
                self.ignored_yields += 1  # ended (or killed) already: its outcome is final
                return
            raise ProtocolError(f"job {jid} yields hosts but is not running")
        if self.state.yield_hosts(jid, fact.hosts, fact.time, lend=self._rca):
            self._dirty = True
        self.yields += len(fact.hosts)
        if self._excluded:
            for h in fact.hosts:
                self._unexpect(self._excluded.pop((jid, h), None))

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

    def _ask_exclusions(self, now: int) -> list[Command]:
        """RCA full: ask running apps for the hosts the head of the queue lacks (docstring)."""
        state = self.state
        head = self._qjobs[0]
        short = head.hosts - state.free_hosts - self._expected.get(head.id, 0)
        if short <= 0 or short > max(1, int(self.config.exclusion_max_short * head.hosts)):
            return []
        asked = self._asked.setdefault(head.id, set())
        cands = []
        for jid, alloc in state.running.items():
            job = alloc.job
            if jid in asked or not job.exclusion_ok or job.app == "rigid" or alloc.start >= now:
                continue
            n = state.working_hosts(jid)
            if n > 1:
                cands.append((-n, jid))
        out: list[Command] = []
        for neg, jid in sorted(cands):
            k = min(short, -neg - 1)
            asked.add(jid)
            self._asking[(jid, head.id)] = k
            self._expected[head.id] = self._expected.get(head.id, 0) + k
            self.exclusion_requests += 1
            out.append(ExcludeHosts(time=now, job_id=jid, count=k, for_job=head.id))
            short -= k
            if short == 0:
                break
        return out

    def _end(self, jid: int, now: int, status: str) -> None:
        alloc, acct = self.state.release(jid)
        if self._excluded:
            for key in [k for k in self._excluded if k[0] == jid]:
                self._unexpect(self._excluded.pop(key))
        handle = self._timer_of.pop(jid, None)
        if handle is not None:
            self._timers.cancel(handle)
        self.outcomes[jid] = JobOutcome(job=alloc.job, start=alloc.start, end=now,
                                        hosts=alloc.hosts, status=status,  # type: ignore[arg-type]
                                        yielded=acct.yielded, lent=acct.lent,
                                        borrowed=acct.borrowed)
        self._dirty = True

    def next_timer(self) -> int | None:
        """Time of the scheduler's next own event (walltime expiry, requested pass), or None."""
        t = self._timers.peek_time()
        w = self._wake
        if w is not None and (t is None or w < t):
            return w
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
        return out

    # -- the pass -------------------------------------------------------------------------
    def schedule(self, now: int) -> list[Command]:
        """One scheduling pass at `now` if anything changed; returns the StartApp commands."""
        if not self._dirty:
            return []
        self._dirty = False
        if not self._qjobs:
            return []
        out = self._pass(now)
        if self.config.exclusion and self._qjobs:
            out.extend(self._ask_exclusions(now))
        out.sort(key=lambda c: c.job_id)
        return out

    def _pass(self, now: int) -> list[Command]:
        self.passes += 1
        state = self.state
        view = PassView(now=now, n_hosts=state.n_hosts, free=state.free_hosts,
                        queue=tuple(self._qjobs), running=state.running_ends(), memo=self._memo)
        plan = self._plan(view)
        self._memo = plan.memo
        self._wake = plan.wake_at
        first = self.first_reservation
        for jid, t in plan.reservations.items():
            if jid not in first:
                first[jid] = t
        if not plan.starts:
            return []
        out: list[Command] = []
        for job in plan.starts:
            if job.hosts > state.free_hosts:
                raise ProtocolError(f"plan starts job {job.id} on {job.hosts} hosts, "
                                    f"{state.free_hosts} free")
            key = self._keys.pop(job.id, None)
            if key is None:
                raise ProtocolError(f"plan starts job {job.id}, which is not queued")
            i = bisect_left(self._qkeys, key)
            del self._qkeys[i], self._qjobs[i]
            self._asked.pop(job.id, None)
            self._expected.pop(job.id, None)
            hosts = self._select(state.free_mask(), job.hosts)
            alloc = state.allocate(job, hosts, now)
            self._started_at[job.id] = now
            if self._kill:
                self._timer_of[job.id] = self._timers.push(now + job.walltime, job.id,
                                                           key=(job.id,))
            params = job.app_params
            out.append(StartApp(time=now, job_id=job.id, hosts=alloc.hosts, pes=job.pes,
                                app=job.app, params=tuple(sorted(params.items())) if params
                                else (), limit=now + job.walltime if self._kill else None))
        return out
