"""The contract of batch-level policies: what they see (`PassView`, `DynamicView`) and what they
return (`Plan`, made of decisions).

Policies are pure (DESIGN §6, §11). A *priority* policy turns a job into a sort key; the
scheduler orders the queue by ``(-job.priority, *key(job), job.id)`` — priority > 0 jobs (ESP's
Z jobs) first, the job id last so that no two jobs tie. A *dynamic* priority policy (one with
`PriorityPolicy.rank`, e.g. metric-aware) ranks the whole queue at every pass instead, from
the time and the `Tunables` in force (the balance factor BF, the window W), which the
scheduler keeps and its tuner may change (`cosim.bls.tuning`). A *backfill* policy gets a read-only
`PassView` of one scheduling pass and returns a `Plan`: the jobs to start now, in the order
the scheduler must start them, the reservations it made, and an opaque `memo` the scheduler
hands back unchanged at the next pass (conservative backfilling keeps its schedule there). A
*selection* policy gets the read-only mask of free hosts and a host count and returns which
hosts to use. A *dynamic* policy (RCA exclusion requests, malleable policies such as
equipartition) gets a `DynamicView` — the queue and a read-only view of the PE-level cluster
state — and returns a `Plan` whose decisions go beyond starting jobs: `Start` (on explicit
PEs), `Shrink`, `Expand`, `Exclude`. Either it runs after the backfill policy's pass (RCA
exclusion) or it replaces that pass (``replaces_backfill``: equipartition decides every start
itself). The scheduler applies every decision, in the order starts, shrinks, expands,
exclusions, and refuses an impossible one with a `ProtocolError` naming the job (a PE in
use, a resize of a job that is not malleable, bounds `min_pes`/`max_pes` broken); no policy
touches the state.

Estimates: a running job is expected to end at ``max(start + walltime, now + 1)`` (a job past
its estimate — possible only without walltime kill — is expected to end at the next tick), a
queued job to run for its walltime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from cosim.core.indexset import IndexSet
from cosim.workload.jobs import Job
from cosim.workload.value import value_row

__all__ = ["PassView", "PowerView", "power_fit", "QueueView", "QueueColumns", "Plan",
           "PriorityPolicy", "Tunables", "BackfillPolicy", "SelectionPolicy", "DynamicPolicy",
           "DynamicView", "ClusterView", "Start", "Shrink", "Expand", "Exclude", "NoParams",
           "expected_end", "overran"]


def expected_end(estimated_end: int, now: int) -> int:
    """When the scheduler expects a running job to end: its estimate, or the next tick."""
    return estimated_end if estimated_end > now else now + 1


def overran(estimated_end: int, start: int, now: int) -> bool:
    """True if a running job has outlived its estimate (possible only without walltime kill).

    A job of walltime 0 started at `now` has not: it ends at `now` (its completion or kill
    comes back in the next round at the same instant).
    """
    return estimated_end < now or (estimated_end == now and start < now)


class QueueView(Sequence[Job]):
    """The scheduler's queue as one pass sees it, not copied: indexing, slicing (a tuple),
    iteration and ``len`` go to the scheduler's own list. A pass costs what its policy reads,
    not the queue's length (strict FCFS stops at the first job that does not fit). Valid
    for the pass it was made for: once the queue changes (`stamp` moves on), using the view
    raises RuntimeError, so a policy cannot keep it in a memo by mistake."""

    __slots__ = ("_jobs", "_stamp", "_at")

    def __init__(self, jobs: list[Job], stamp: list[int]) -> None:
        self._jobs, self._stamp, self._at = jobs, stamp, stamp[0]

    def _live(self) -> list[Job]:
        if self._stamp[0] != self._at:
            raise RuntimeError("a pass's queue view used after the queue changed")
        return self._jobs

    def __len__(self) -> int:
        return len(self._live())

    def __getitem__(self, i):  # type: ignore[override]
        if self._stamp[0] != self._at:  # `_live`, inlined: the passes' hottest read
            self._live()
        got = self._jobs[i]
        return tuple(got) if type(i) is slice else got

    def __iter__(self):
        return iter(self._live())

    def __bool__(self) -> bool:
        return bool(self._live())

    def __repr__(self) -> str:
        return f"QueueView({len(self._jobs)} jobs)"


class QueueColumns:
    """The queued jobs' numbers as int64 arrays in queue order, for a dynamic priority's
    `rank`: ``submit``, ``walltime`` (ticks), ``hosts``, ``priority``, ``id`` and ``seq`` (the
    order in which the jobs were queued), and ``jobs``, the jobs themselves in the same
    order. Kept by the scheduler as the queue changes (one shift of the arrays per job queued
    or started); the properties are read-only views, valid until the queue changes. Under a
    power cap the scheduler also sets, for the ranking of one pass, ``score``: each job's
    value metric at the power it would get (`cosim.bls.power.PowerPass`); None otherwise."""

    FIELDS = ("submit", "walltime", "hosts", "priority", "id", "seq")
    __slots__ = ("_buf", "_fbuf", "n", "jobs", "score", "curves", "_curve_id")

    def __init__(self, capacity: int = 64, jobs: Sequence[Job] = ()) -> None:
        self._buf = np.zeros((len(self.FIELDS), max(capacity, 1)), dtype=np.int64)
        # the value curves (`cosim.workload.value.value_params`) and the power curve's index
        self._fbuf = np.zeros((6, max(capacity, 1)), dtype=np.float64)
        self.curves: list[Any] = []  # the distinct `Job.power_curve`s seen, by index
        self._curve_id: dict[Any, int] = {}
        self.n = 0
        self.jobs: Sequence[Job] = jobs
        self.score: np.ndarray | None = None

    @classmethod
    def of(cls, jobs: Sequence[Job]) -> QueueColumns:
        """Columns of `jobs` in that order (seq = position)."""
        out = cls(len(jobs), tuple(jobs))
        for i, job in enumerate(jobs):
            out.insert(i, job, i)
        return out

    def __len__(self) -> int:
        return self.n

    def _col(self, k: int) -> np.ndarray:
        view = self._buf[k, :self.n]
        view.flags.writeable = False
        return view

    submit = property(lambda self: self._col(0))
    walltime = property(lambda self: self._col(1))
    hosts = property(lambda self: self._col(2))
    priority = property(lambda self: self._col(3))
    id = property(lambda self: self._col(4))
    seq = property(lambda self: self._col(5))

    @property
    def params(self) -> np.ndarray:
        """The jobs' value curves, rows ``(v, u, soft, hard, decay)``
        (`cosim.workload.value.value_params`)."""
        view = self._fbuf[:5, :self.n].T
        view.flags.writeable = False
        return view

    @property
    def curve_ids(self) -> np.ndarray:
        """Each job's power curve (`Job.power_curve`) as an index into `curves`."""
        return self._fbuf[5, :self.n].astype(np.int64)

    def insert(self, i: int, job: Job, seq: int) -> None:
        """Queue `job` at position `i`."""
        n, b, f = self.n, self._buf, self._fbuf
        if n == b.shape[1]:
            self._buf = b = np.concatenate((b, np.zeros_like(b)), axis=1)
            self._fbuf = f = np.concatenate((f, np.zeros_like(f)), axis=1)
        if i < n:
            b[:, i + 1:n + 1] = b[:, i:n]
            f[:, i + 1:n + 1] = f[:, i:n]
        b[:, i] = (job.submit, job.walltime, job.hosts, job.priority, job.id, seq)
        f[:5, i] = value_row(job)
        curve = job.power_curve
        cid = self._curve_id.get(curve)
        if cid is None:
            cid = self._curve_id[curve] = len(self.curves)
            self.curves.append(curve)
        f[5, i] = cid
        self.n = n + 1

    def delete(self, i: int) -> None:
        """Remove the job at position `i`."""
        n, b, f = self.n, self._buf, self._fbuf
        if i < n - 1:
            b[:, i:n - 1] = b[:, i + 1:n]
            f[:, i:n - 1] = f[:, i + 1:n]
        self.n = n - 1

    def permute(self, order: np.ndarray) -> None:
        """Reorder: position k gets the job at ``order[k]``."""
        self._buf[:, :self.n] = self._buf[:, order]
        self._fbuf[:, :self.n] = self._fbuf[:, order]


@dataclass(frozen=True, slots=True, kw_only=True)
class Tunables:
    """The scheduler's tunables in force (metric-aware scheduling, Tang et al.): `bf`, the
    balance factor of the balanced priority (1: FCFS, 0: SJF), and `window`, the number of
    queue-head jobs whose order the window search may change (1: none)."""

    bf: float = 1.0
    window: int = 1


class PowerView(Protocol):
    """What a backfill policy sees of the power budget under a cap (`cosim.bls.power`):
    `available_mw`, the power left now (milliwatts); ``level(job, available_mw)``, the
    per-socket cap (mW) the power strategy gives `job` within `available_mw`, or None when
    it cannot start in it; ``need_mw(job, level)``, what starting it at `level` takes from
    the budget; ``least_need_mw(job)``, that at the lowest level the strategy may give it;
    ``run_ticks(job, level)``, its walltime stretched at `level`; ``held_mw(job_id)``, what a
    running job gives back to the budget when it ends; ``reserve_level(job)``, the level a job
    that cannot start now is planned at; `least_mw`, the least any job takes (below it no
    job starts)."""

    available_mw: int
    least_mw: int

    def level(self, job: Job, available_mw: int) -> int | None: ...

    def need_mw(self, job: Job, level: int) -> int: ...

    def least_need_mw(self, job: Job) -> int: ...

    def run_ticks(self, job: Job, level: int) -> int: ...

    def held_mw(self, job_id: int) -> int: ...

    def reserve_level(self, job: Job) -> int: ...


def power_fit(power: PowerView, job: Job, available_mw: int) -> tuple[int, int] | None:
    """``(level, mW taken)`` of `job` starting within `available_mw`, or None when it does
    not fit (`PowerView.level`)."""
    level = power.level(job, available_mw)
    return None if level is None else (level, power.need_mw(job, level))


@dataclass(frozen=True, slots=True, kw_only=True)
class PassView:
    """What a backfill policy sees of one scheduling pass (read-only).

    Attributes
    ----------
    now:
        Decision time (ticks).
    n_hosts:
        Hosts of the machine.
    free:
        Free hosts now, lendable ones (RCA: yielded by a job that still owns them) included.
    queue:
        Queued jobs in priority order (highest first): a tuple, or the scheduler's
        `QueueView` (valid during the pass only).
    running:
        ``(estimated end, job id, hosts, start)`` of the running jobs, sorted; estimated end
        is start + walltime (see `expected_end` for one already past, and `overran`); hosts
        are those the job frees at its end (RCA: lendable hosts excluded, borrowed included),
        so that `free` plus every job's hosts is the machine.
    memo:
        What the policy returned as `Plan.memo` at the previous pass (None at the first).
    tunables:
        The tunables in force (`Tunables`).
    power:
        The power budget under a power cap (`PowerView`), else None: a policy that reads it
        starts a job only where `level` gives it one, and returns the levels in `Plan.power`;
        one that does not (EASY, conservative) is refused under a cap by `BatchConfig`.
    """

    now: int
    n_hosts: int
    free: int
    queue: Sequence[Job]
    running: tuple[tuple[int, int, int, int], ...]
    memo: Any = None
    tunables: Tunables = Tunables()
    power: PowerView | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Start:
    """Start `job` on the PEs `pes` (global indices; its master on the first).

    Free PEs are taken now; PEs that a `Shrink` of the same plan (or an earlier one) takes
    for this job (``for_job``) are waited for: the job leaves the queue at once, the free part
    of `pes` is held for it (*promised*), and it starts when the last one is released.
    `walltime`: its estimated run time and walltime limit (default ``job.walltime``).
    `owners`: ``(mate, PEs)`` pairs: those PEs are used as a malleable *guest* on the hosts of
    running job `mate` (SD-Policy), which the allocation log records as role ``guest``.
    """

    job: Job
    pes: IndexSet
    walltime: int | None = None
    owners: tuple[tuple[int, IndexSet], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Shrink:
    """Take `pes` from running malleable job `job_id` (released by its app later).

    `for_job`: the queued job they are for (None: none in particular). `limit`: the job's new
    estimated end / walltime-kill tick (None: unchanged)."""

    job_id: int
    pes: IndexSet
    for_job: int | None = None
    limit: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Expand:
    """Give the free PEs `pes` to running malleable job `job_id` now (`limit` as `Shrink`)."""

    job_id: int
    pes: IndexSet
    limit: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Exclude:
    """Ask running job `job_id` to give up `count` hosts for queued job `for_job` (RCA)."""

    job_id: int
    count: int
    for_job: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """A policy's decisions for one pass.

    Attributes
    ----------
    starts:
        Jobs to start now, in order: a `Job` gets whole hosts from the selection policy (its
        host count fits in the free hosts); a `Start` names its PEs.
    reservations:
        Job id -> reserved start (ticks) of queued jobs that got a reservation at this pass
        (EASY: the head and priority > 0 jobs; conservative: every queued job).
    memo:
        Opaque state for the next pass (treated as immutable by everyone).
    wake_at:
        Ask for a pass at this time even if nothing happens then (conservative backfilling
        asks for its earliest reservation); None: no request. Each plan replaces the last.

    resizes:
        `Shrink` and `Expand` decisions, applied in order after the starts.
    excludes:
        `Exclude` requests (RCA full), applied last.
    power:
        Under a power cap: job id -> the per-socket cap (mW) each starting job gets.
    """

    starts: tuple[Job | Start, ...] = ()
    reservations: Mapping[int, int] = field(default_factory=dict)
    memo: Any = None
    wake_at: int | None = None
    resizes: tuple[Shrink | Expand, ...] = ()
    excludes: tuple[Exclude, ...] = ()
    power: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class PriorityPolicy:
    """A queue order: ``key(job)`` sorts ascending after ``-job.priority``; the id ends it.

    A dynamic order also has ``rank(now, columns, tunables)``: from the queue's
    `QueueColumns`, the columns of the sort key of every queued job at `now` (numpy arrays,
    one value per job, most significant first; ascending), recomputed at every pass (`key`
    is then unused). `tunables` names the `Tunables` fields the order reads (``{"bf"}``):
    options setting others are refused. `value_based`: the order ranks by job value (the
    scheduler then drops queued jobs that can earn nothing, `BatchConfig.drop_hopeless`).
    `key_fields`: the integer `Job` fields `key` returns, in its order, when it returns
    exactly them (the compiled trace replay then sorts their columns at once); empty when
    it computes its key."""

    name: str
    summary: str
    key: Callable[[Job], tuple[Any, ...]]
    rank: Callable[[int, QueueColumns, Tunables], tuple[np.ndarray, ...]] | None = None
    tunables: frozenset[str] = frozenset()
    value_based: bool = False
    key_fields: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class BackfillPolicy:
    """How a pass chooses jobs to start: ``plan(view) -> Plan``."""

    name: str
    summary: str
    plan: Callable[[PassView], Plan]


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectionPolicy:
    """Which hosts a starting job gets: ``select(free_mask, count) -> ascending host indices``.

    `free_mask` is a read-only boolean array (True = free) with at least `count` True values;
    the result must be `count` distinct free hosts, ascending, as an int64 array.
    """

    name: str
    summary: str
    select: Callable[[np.ndarray, int], np.ndarray]


class ClusterView(Protocol):
    """The read-only view of the PE-level cluster state a dynamic policy gets
    (`cosim.bls.state.ClusterState` implements it; policies must not mutate anything)."""

    n_hosts: int
    n_cores: int
    n_pes: int
    free_hosts: int
    free_pes: int
    running: Mapping[int, Any]  # job id -> `cosim.bls.state.Allocation`
    used_pes: np.ndarray  # per host: PEs used or promised
    stamp: int  # changes whenever PEs change hands on a host outside whole-host starts/ends

    def free_mask(self) -> np.ndarray: ...
    def free_pe_array(self) -> np.ndarray: ...
    def pes_of(self, job_id: int) -> IndexSet: ...
    def releasing(self, job_id: int) -> IndexSet: ...
    def working_hosts(self, job_id: int) -> int: ...
    def guest_mask(self) -> np.ndarray: ...
    def host_counts(self, job_id: int) -> tuple[np.ndarray, np.ndarray]: ...
    def pe_rows(self, hosts: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...
    def resizable(self, job_id: int) -> bool: ...
    def min_host_pes(self, job_id: int) -> int: ...
    def running_ends(self) -> tuple[tuple[int, int, int, int], ...]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class DynamicView:
    """What a dynamic policy sees of one scheduling pass (read-only).

    Attributes
    ----------
    now:
        Decision time (ticks).
    queue:
        Queued jobs in priority order (jobs the backfill pass just started excluded).
    cluster:
        The cluster state after the backfill pass's starts (`ClusterView`).
    expected:
        Queued job id -> hosts asked for it by exclusion requests or accepted and not yet
        yielded (RCA full).
    asked:
        Queued job id -> running jobs already asked to exclude hosts for it.
    memo:
        What the policy returned as `Plan.memo` at its previous pass.
    pending:
        Jobs that left the queue for a `Start` still waiting for released PEs.
    queue_keys:
        A sort key of each queued job, in queue order (ascending): `bisect` on them gives a
        job's position from its key.
    queue_index:
        ``(hosts, whole) -> (walltimes, queue keys)``: the queued jobs of each width, split by
        whether they need every core of their hosts (``pes == hosts x cores``), sorted by
        ``(walltime, key)`` — which jobs of a width are at most so long, by bisection,
        without a walk of the queue. Kept by the scheduler as the queue changes (read it during the
        pass only); both are derived from `queue` (keys: positions) when not given.
    """

    now: int
    queue: tuple[Job, ...]
    cluster: ClusterView
    expected: Mapping[int, int] = field(default_factory=dict)
    asked: Mapping[int, frozenset[int]] = field(default_factory=dict)
    memo: Any = None
    pending: frozenset[int] = frozenset()
    queue_keys: Sequence[Any] | None = None
    queue_index: Mapping[tuple[int, bool], tuple[Sequence[int], Sequence[Any]]] | None = None

    def __post_init__(self) -> None:
        if (self.queue_keys is None) != (self.queue_index is None):
            raise ValueError("queue_keys and queue_index go together")
        if self.queue_keys is None:
            object.__setattr__(self, "queue_keys", range(len(self.queue)))
            object.__setattr__(self, "queue_index",
                               queue_index(self.queue, self.cluster.n_cores))
        elif len(self.queue_keys) != len(self.queue):
            raise ValueError("queue_keys must match the queue")


def queue_index(queue: Sequence[Job], cores: int,
                keys: Sequence[Any] | None = None) -> dict[tuple[int, bool], tuple[list, list]]:
    """`DynamicView.queue_index` of `queue` (`keys`: the jobs' sort keys; default their
    positions) on hosts of `cores` cores."""
    entries: dict[tuple[int, bool], list] = {}
    for i, job in enumerate(queue):
        entries.setdefault((job.hosts, job.pes == job.hosts * cores), []).append(
            (job.walltime, i if keys is None else keys[i]))
    return {cls: ([w for w, _ in sorted(e)], [k for _, k in sorted(e)])
            for cls, e in entries.items()}


@dataclass(frozen=True, slots=True, kw_only=True)
class NoParams:
    """The parameters of a policy that has none."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DynamicPolicy:
    """A dynamic policy: ``decide(view, params) -> Plan``.

    `family`: ``malleable`` (chosen with ``--malleable``) or ``rca`` (enabled by ``--rca``).
    `replaces_backfill`: the policy decides every start itself (the backfill policy's pass
    is not run). `params`: the frozen dataclass of its parameters (its defaults are the
    policy's defaults; ``--malleable-param k=v`` builds it, `cosim.config.build`).
    """

    name: str
    summary: str
    family: Literal["malleable", "rca"]
    replaces_backfill: bool
    params: type = NoParams
    decide: Callable[[DynamicView, Any], Plan] = field(default=lambda view, params: Plan())
