"""The cluster state of the batch level: which job uses which PE of which host, and who owns it.

`ClusterState` owns the allocation at PE granularity: ``pe_user[host, core]`` is the job
running on that PE (-1 when none), ``used_pes[host]`` the PEs in use on a host. A host is
*free* when none of its PEs is used. Hosts may have different core counts: the PE grid then
has as many columns as the smallest host has cores (`n_cores`), the cores every host has, which
is all whole-host jobs use (a job's ``pes <= hosts x n_cores``, the scheduler's rule), and the
explicit form is refused (`uniform` False: PE-level policies need equal hosts). A job gets PEs
in one of two ways:

- **whole hosts** (`allocate`; every static policy): ``job.pes`` spread over ``job.hosts``
  free hosts, the first ``pes % hosts`` hosts (ascending index) taking one more, on cores
  ``0 .. k-1`` of each; nobody else gets PEs on those hosts while the job holds them
  (unused cores stay free for PE-level policies only);
- **explicit PEs** (`allocate_pes`; PE-level policies such as equipartition): any free PEs.

A running *malleable* job's allocation changes (`shrink` marks PEs *releasing*: the job keeps
using them until the app releases them, `release_pes`; `expand` adds free PEs at once). Its
*master PE* — the first PE of its start allocation — is never taken. RCA (DESIGN §2; host
level, whole-host jobs only): a host of job A that A reported out of work becomes *lendable*
with ``yield_hosts(lend=True)``: free, still owned by A; a job B started on it *borrows* it
(B's record gets ``(host, A)``, A's ``(host, tick)`` at the first lend only) while A keeps
owning it. When A ends, its hosts in use by A are freed and its ownership of the others
returns to the system (a borrower keeps using them until it ends, then they are plain free
hosts); when B ends first, the host is lendable again. Only a job's *own* hosts become
lendable; a borrower that yields a borrowed host keeps it until it ends.

Running jobs are kept sorted by ``(estimated end, job id)`` with the number of hosts each one
frees at its end — its hosts minus those it yielded that were made lendable, and for a job
with explicit PEs the hosts it uses alone — the order and counts policies use to build
availability profiles. Policies only see this state through read-only views; only the
scheduler mutates it. Every interval of use is written to `log` (`cosim.bls.alloclog`) when it
closes: whole-host jobs at their end (and RCA yields, lends), explicit-PE jobs whenever PEs
change (a whole-host job becomes one at its first resize: its open intervals close there and
reopen on the PEs it keeps). Cost: `allocate` and `release` are O(hosts of the job) numpy
work; resizes O(PEs changed). What policies read every pass is kept, not recomputed: hosts
with a guest (counts per host), each explicit job's sole hosts and PEs per host (recomputed
only when a host of it has a newer *stamp*: every PE change outside whole-host starts and
ends stamps its hosts), each host's single user (refreshed lazily).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from cosim.bls.alloclog import (
    BORROWED, GUEST, OWN, YIELDED, AllocLog, merge_host_runs, rows_from_pes,
)
from cosim.core.indexset import EMPTY, IndexSet
from cosim.errors import ProtocolError
from cosim.platform.allocation import spread_pes, spread_runs
from cosim.workload.jobs import Job

__all__ = ["ClusterState", "Allocation", "Accounting", "Released", "spread_pes"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Allocation:
    """A running job: the hosts it has PEs on (ascending), how many PEs, start, estimated end
    (start + walltime, or the limit a resize set), and its master PE (global index)."""

    job: Job
    hosts: IndexSet
    start: int
    estimated_end: int
    pes: int
    master: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Accounting:
    """The RCA record of a job, as `JobOutcome` takes it (see `cosim.workload.jobs`).

    `yielded` and `lent` are ``(host, tick)`` in ``(tick, host)`` order; `borrowed` is
    ``(host, owner job id)`` in host order.
    """

    yielded: tuple[tuple[int, int], ...] = ()
    lent: tuple[tuple[int, int], ...] = ()
    borrowed: tuple[tuple[int, int], ...] = ()


NO_ACCOUNTING = Accounting()


@dataclass(frozen=True, slots=True, kw_only=True)
class Released:
    """What `ClusterState.release` hands back about a job that ended."""

    alloc: Allocation
    acct: Accounting
    hosts: IndexSet  # every host it ever had PEs on
    pe_ticks: int
    shrinks: int
    expands: int
    pes_start: int


def _index(s: IndexSet) -> slice | np.ndarray:
    """An index of the elements of `s` into a flat array: a slice for one run, else an array."""
    if s.n_runs == 1:
        f = s[0]
        return slice(f, f + len(s))
    return s.to_array()


def _rows_at(idx: np.ndarray) -> slice | np.ndarray:
    """An index of the rows of hosts `idx` (ascending): a slice when they are consecutive
    (a view, not a gathered copy: read it at once)."""
    if len(idx) and int(idx[-1]) - int(idx[0]) + 1 == len(idx):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


def _row_counts(mask: np.ndarray) -> np.ndarray:
    """The True cells of each row of a boolean matrix (``mask.sum(axis=1)``, several times
    faster through einsum on bytes while a row's count fits in one)."""
    if mask.shape[1] < 128:
        return np.einsum("ij->i", mask.view(np.int8)).astype(np.int64)
    return mask.sum(axis=1)


class _Rca:
    """Mutable RCA bookkeeping of one running job (only jobs that yielded or borrowed)."""

    __slots__ = ("yielded", "yielded_set", "lent", "lent_set", "borrowed")

    def __init__(self) -> None:
        self.yielded: list[tuple[int, int]] = []
        self.yielded_set: set[int] = set()
        self.lent: list[tuple[int, int]] = []
        self.lent_set: set[int] = set()
        self.borrowed: list[tuple[int, int]] = []

    def freeze(self) -> Accounting:
        return Accounting(yielded=tuple(sorted(self.yielded, key=lambda r: (r[1], r[0]))),
                          lent=tuple(sorted(self.lent, key=lambda r: (r[1], r[0]))),
                          borrowed=tuple(sorted(self.borrowed)))


class _Run:
    """Mutable record of one running job. Whole-host form (`pes` None): hosts `idx`, the
    spread rule's PEs on cores 0..k-1 of each (`counts`); explicit form: its global PEs,
    sorted."""

    __slots__ = ("alloc", "idx", "pes", "releasing", "releasing_for", "ever", "pe_ticks",
                 "shrinks", "expands", "pes_start", "guest", "_counts")

    def __init__(self, alloc: Allocation, idx: np.ndarray, pes: IndexSet | None) -> None:
        self.alloc = alloc
        self.idx = idx
        self.pes = pes
        self.releasing: IndexSet = EMPTY
        self.releasing_for: dict[int, IndexSet] = {}  # queued job -> releasing PEs for it
        self.ever: IndexSet | None = None  # hosts it had PEs on and left (resizes)
        self.pe_ticks = 0
        self.shrinks = 0
        self.expands = 0
        self.pes_start = alloc.pes
        self.guest = False
        self._counts: np.ndarray | None = None

    @property
    def counts(self) -> np.ndarray:
        """PEs per host of a whole-host job (the spread rule; read-only)."""
        if self._counts is None:
            base, extra = divmod(self.alloc.pes, len(self.idx))
            counts = np.full(len(self.idx), base, dtype=np.int64)
            counts[:extra] += 1
            counts.flags.writeable = False
            self._counts = counts
        return self._counts


class ClusterState:
    """Ownership and use of hosts and PEs by running jobs (see the module docstring).

    Parameters
    ----------
    cores:
        PEs of each host, by host index (different counts allow whole-host jobs only).
    """

    __slots__ = ("cores", "uniform", "n_hosts", "n_cores", "n_pes", "_user", "pe_user", "used_pes",
                 "free_hosts", "free_pes", "lendable", "running", "log", "_ends", "_free_ro",
                 "_runs", "_ids", "_rca", "_lender", "_tail", "_since", "_role", "_owner",
                 "_explicit_ids", "_promised", "promised_pes", "_coming", "_promised_until",
                 "_n_guests", "_guest_n", "_promised_n", "_stamp", "_host_stamp", "_shape",
                 "_user_stale", "_guest_mask", "_ends_stamp")

    def __init__(self, cores: Sequence[int]) -> None:
        if not len(cores) or any(c < 1 for c in cores):
            raise ValueError("a machine needs at least one host, each with at least one core")
        self.cores = np.asarray(cores, dtype=np.int64)
        self.uniform = len(set(cores)) == 1
        self.n_hosts = len(cores)
        self.n_cores = int(self.cores.min())  # the PE grid's width (see the module docstring)
        self.n_pes = self.n_hosts * self.n_cores
        self.pe_user = np.full((self.n_hosts, self.n_cores), -1, dtype=np.int64)
        # the job using a host when exactly one does (-1: free; -2: shared by several jobs)
        self._user = np.full(self.n_hosts, -1, dtype=np.int64)
        # hosts whose `user` entry is out of date (explicit-form changes refresh it lazily,
        # from `pe_user`, when it is read: `_users`)
        self._user_stale = np.zeros(self.n_hosts, dtype=bool)
        self.used_pes = np.zeros(self.n_hosts, dtype=np.int64)
        self.free_hosts = self.n_hosts  # hosts nobody uses, lendable ones included
        self.free_pes = self.n_pes  # PEs nobody uses (those of lendable hosts included)
        self.lendable = 0  # free hosts still owned by a running job (RCA)
        self.running: dict[int, Allocation] = {}
        self.log = AllocLog()
        self._ends: list[tuple[int, int, int, int]] = []  # (est. end, id, hosts, start), sorted
        self._free_ro = np.ones(self.n_hosts, dtype=bool)
        self._runs: dict[int, _Run] = {}
        # host indices as shared Python ints: host tuples of big jobs then cost 8 bytes a host
        self._ids = np.array(list(range(self.n_hosts)), dtype=object)
        self._rca: dict[int, _Rca] = {}  # running job id -> RCA record, if it has one
        # host -> its owner where the owner is not the user (RCA only, so empty without it):
        # lendable hosts (no user), borrowed hosts (owner -1 once the owner has ended)
        self._lender: dict[int, int] = {}
        self._tail: dict[int, int] = {}  # lendable host -> since when its owner's idle tail runs
        # per-PE open interval of explicit-form jobs: since, role, owner
        self._since = np.zeros((self.n_hosts, self.n_cores), dtype=np.int64)
        self._role = np.zeros((self.n_hosts, self.n_cores), dtype=np.int64)
        self._owner = np.full((self.n_hosts, self.n_cores), -1, dtype=np.int64)
        self._explicit_ids: set[int] = set()  # running jobs in explicit form (their _ends
        # entries hold their sole hosts, filled in by `running_ends`)
        # PEs promised to a job that waits for them (-1: none): not free, not used
        self._promised = np.full((self.n_hosts, self.n_cores), -1, dtype=np.int64)
        self.promised_pes: dict[int, IndexSet] = {}  # job -> the PEs promised to it
        self._coming: dict[int, set[int]] = {}  # queued job -> jobs releasing PEs for it
        self._promised_until: dict[int, tuple[int, int]] = {}  # waiting job -> (end, since)
        self._n_guests = 0  # running jobs placed as guests
        # per host: PEs used in the guest role, PEs promised (guest_mask without a scan)
        self._guest_n = np.zeros(self.n_hosts, dtype=np.int64)
        self._promised_n = np.zeros(self.n_hosts, dtype=np.int64)
        # the per-job shape cache of explicit-form jobs (`_job_shape`): every change of PEs on
        # a host stamps it with a new number; a job's cached shape is stale when one of its
        # hosts has a newer stamp than the shape
        self._stamp = 0
        self._host_stamp = np.zeros(self.n_hosts, dtype=np.int64)
        self._shape: dict[int, tuple[int, np.ndarray, int, int, np.ndarray]] = {}
        self._guest_mask: tuple[int, np.ndarray] = (-1, np.zeros(0, dtype=bool))
        # the stamp as of which the `_ends` entries of explicit-form jobs hold their sole
        # hosts (-1: some entry says -1, to be filled by `running_ends`)
        self._ends_stamp = -1

    # -- read-only views ------------------------------------------------------------------
    @property
    def user(self) -> np.ndarray:
        """Read-only: the job using each host when exactly one does (-1: free; -2: shared by
        several jobs)."""
        self._users(np.flatnonzero(self._user_stale))
        view = self._user.view()
        view.flags.writeable = False
        return view

    @property
    def owner(self) -> np.ndarray:
        """Owner of each host (a new array): the job it was allocated to, -1 when none."""
        out = self.user.copy()
        for h, a in self._lender.items():
            out[h] = a
        return out

    def free_mask(self) -> np.ndarray:
        """Read-only boolean array: True where a host is free (nobody uses it; lendable too)."""
        view = self._free_ro.view()
        view.flags.writeable = False
        return view

    def free_pe_array(self) -> np.ndarray:
        """Global indices of the PEs nobody uses nor is promised, ascending (lendable hosts
        excluded)."""
        free = np.flatnonzero((self.pe_user.reshape(-1) < 0) & (self._promised.reshape(-1) < 0))
        if self._lender:
            lend = np.fromiter(self._lender, dtype=np.int64)
            free = free[~np.isin(free // self.n_cores, lend)]
        return free

    def pes_of(self, job_id: int) -> IndexSet:
        """Global PEs running job `job_id` holds (those it is releasing included)."""
        return self._pe_set(self._runs[job_id])

    def releasing(self, job_id: int) -> IndexSet:
        """PEs of running job `job_id` that a shrink took and the app has not released yet."""
        return self._runs[job_id].releasing

    def coming_for(self, job_id: int) -> IndexSet:
        """PEs being released by shrinks for queued job `job_id`, or already promised to it."""
        out = self.promised_pes.get(job_id, EMPTY)
        for jid in sorted(self._coming.get(job_id, ())):
            out = out.union(self._runs[jid].releasing_for[job_id])
        return out

    def guest_mask(self) -> np.ndarray:
        """Read-only boolean array: True for the hosts with a guest on them (PEs used in the
        guest role, or promised to a job); kept until PEs change somewhere (`stamp`)."""
        stamp, mask = self._guest_mask
        if stamp != self._stamp:
            mask = (self._guest_n > 0) | (self._promised_n > 0)
            mask.flags.writeable = False
            self._guest_mask = (self._stamp, mask)
        return mask

    @property
    def stamp(self) -> int:
        """A number that changes whenever PEs change hands on a host outside whole-host
        starts and ends (explicit PEs, shrinks, expands, promises): what is computed from
        who holds which PE of shared hosts stays valid while it does not change."""
        return self._stamp

    def min_host_pes(self, job_id: int) -> int:
        """The fewest PEs running job `job_id` has on one of its hosts."""
        run = self._runs[job_id]
        if run.pes is None:  # the spread rule: base PEs on the last hosts
            return run.alloc.pes // len(run.idx)
        return self._job_shape(job_id, run)[3]

    def host_counts(self, job_id: int) -> tuple[np.ndarray, np.ndarray]:
        """Read-only ``(hosts, PEs it uses on each)`` of running job `job_id`, hosts
        ascending (PEs being released included)."""
        run = self._runs[job_id]
        counts = run.counts if run.pes is None else self._job_shape(job_id, run)[4]
        hosts = run.idx.view()
        hosts.flags.writeable = False
        counts.flags.writeable = False
        return hosts, counts

    def _job_shape(self, job_id: int, run: _Run) -> tuple[int, np.ndarray, int, int, np.ndarray]:
        """``(stamp, hosts, sole hosts, fewest PEs on a host, PEs on each host)`` of an
        explicit-form job, from the cache unless a host of it changed since (O(its hosts) to
        check, O(its PEs) to recompute)."""
        idx = run.idx
        hit = self._shape.get(job_id)
        if hit is not None and hit[1] is idx:
            if hit[0] == self._stamp:
                return hit
            if int(self._host_stamp[idx].max()) <= hit[0]:  # still right: as of now
                hit = self._shape[job_id] = (self._stamp, *hit[1:])
                return hit
        at = _rows_at(idx)
        rows = self.pe_user[at]
        own = rows == job_id
        mine = own | (rows < 0)
        mine |= self._owner[at] == job_id
        n_own = _row_counts(own)
        sole = int(np.count_nonzero((_row_counts(mine) == self.n_cores) & (n_own > 0)))
        shape = (self._stamp, idx, sole, int(n_own.min()) if len(idx) else 0, n_own)
        self._shape[job_id] = shape
        return shape

    def pe_rows(self, hosts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the users and the promised-to jobs of every core of `hosts`."""
        return self.pe_user[hosts], self._promised[hosts]

    def resizable(self, job_id: int) -> bool:
        """False for a job that lent or borrowed hosts (RCA: its allocation is host-level)."""
        return job_id in self._runs and not self._lends(job_id)

    def running_ends(self) -> tuple[tuple[int, int, int, int], ...]:
        """``(estimated end, job id, hosts freed at its end, start)`` of running jobs, sorted.

        Hosts freed at its end = the job's hosts minus the ones it yielded that were made
        lendable (they are free already); borrowed hosts are included; for a job with explicit
        PEs, the hosts where every PE in use is its own or its guests' (a malleable guest ends
        inside its mates' allocation: its shared hosts are freed at its mates' ends).
        """
        ends = self._ends
        if self._explicit_ids and self._ends_stamp != self._stamp:  # (in place: the order
            runs, shape = self._runs, self._job_shape           # does not change)
            for j in self._explicit_ids:
                run = runs[j]
                i = bisect_left(ends, (run.alloc.estimated_end, j))
                e, _, _, s = ends[i]
                ends[i] = (e, j, shape(j, run)[2], s)
            self._ends_stamp = self._stamp
        if not self.promised_pes:
            return tuple(ends)
        out = list(ends)
        for j in sorted(self.promised_pes):  # a start waiting for PEs holds hosts of its own
            held = self._promised_hosts(j)
            if held:
                until, since = self._promised_until[j]
                insort(out, (until, j, held, since))
        return tuple(out)

    def _promised_hosts(self, job_id: int) -> int:
        """Hosts on which nobody runs and some PE is promised to `job_id`."""
        hosts = self._hosts_of(self.promised_pes[job_id]).to_array()
        empty = (self.pe_user[hosts] < 0).all(axis=1)
        return int(np.count_nonzero(empty))

    def working_hosts(self, job_id: int) -> int:
        """Hosts running job `job_id` owns and uses and has not yielded (RCA exclusion)."""
        idx = self._runs[job_id].idx
        rec = self._rca.get(job_id)
        own = idx[self._users(idx) == job_id]
        if rec is None:
            return len(own)
        return sum(1 for h in own.tolist() if h not in rec.yielded_set and h not in self._lender)

    # -- starts ---------------------------------------------------------------------------
    def allocate(self, job: Job, hosts: np.ndarray, now: int) -> Allocation:
        """Give `hosts` (ascending indices, all free) to `job` from `now` on: whole hosts.

        A lendable host among them is borrowed: its owner keeps it, `job` uses it (see the
        module docstring). ProtocolError if a host is in use, the count is wrong or a host has
        too few cores.
        """
        idx = np.asarray(hosts, dtype=np.int64)
        jid = job.id
        if len(idx) != job.hosts:
            raise ProtocolError(f"job {jid} asked for {job.hosts} hosts, got {len(idx)}")
        if jid in self.running:
            raise ProtocolError(f"job {jid} is already running")
        free = self._free_ro
        if not free[idx].all():
            raise ProtocolError(f"job {jid}: host already allocated")
        base, extra = divmod(job.pes, job.hosts)
        if base + (extra > 0) > self.n_cores:
            raise ProtocolError(f"job {jid}: more PEs than cores on a host")
        if self.lendable:
            self._borrow(jid, idx, now)
        hostset = IndexSet.from_sorted(idx)
        self._fill(hostset, base, extra, jid, idx)
        self.free_hosts -= job.hosts
        self.free_pes -= job.pes
        alloc = Allocation(job=job, hosts=hostset, start=now,
                           estimated_end=now + job.walltime, pes=job.pes,
                           master=int(idx[0]) * self.n_cores)
        self.running[jid] = alloc
        self._runs[jid] = _Run(alloc, idx, None)
        insort(self._ends, (alloc.estimated_end, jid, job.hosts, now))
        return alloc

    def _fill(self, hosts: IndexSet, base: int, extra: int, jid: int,
              idx: np.ndarray | None = None) -> None:
        """Mark the spread rule's PEs of whole `hosts` as used by `jid` (-1: freed): slices
        over the runs of hosts (first-fit allocations are one or two runs), or one fancy
        index per array when the hosts are scattered (`idx`: them as an array)."""
        pe_user, used, user, free = self.pe_user, self.used_pes, self._user, self._free_ro
        busy = jid >= 0
        runs = hosts.runs
        if len(runs) > 2 and idx is not None:
            if busy:
                if extra:
                    pe_user[idx[:extra], :base + 1] = jid
                    used[idx[:extra]] = base + 1
                    pe_user[idx[extra:], :base] = jid
                    used[idx[extra:]] = base
                else:
                    pe_user[idx, :base] = jid
                    used[idx] = base
            else:
                pe_user[idx] = -1
                used[idx] = 0
            user[idx] = jid
            free[idx] = not busy
            return
        seen = 0
        for first, n in runs:
            k = min(n, extra - seen) if extra > seen else 0  # hosts taking base + 1 PEs
            stop = first + n
            if busy:
                if k:
                    pe_user[first:first + k, :base + 1] = jid
                    used[first:first + k] = base + 1
                if n > k:
                    pe_user[first + k:stop, :base] = jid
                    used[first + k:stop] = base
            else:
                pe_user[first:stop] = -1
                used[first:stop] = 0
            user[first:stop] = jid
            free[first:stop] = not busy
            seen += n

    def allocate_pes(self, job: Job, pes: IndexSet, now: int, *, walltime: int | None = None,
                     owners: Sequence[tuple[int, IndexSet]] = ()) -> Allocation:
        """Give the PEs `pes` (global indices; free, or promised to `job`) to `job` from `now`
        on (explicit form), for `walltime` (default the job's). `owners`: ``(mate, PEs)``
        pairs: those PEs are used in the guest role, on hosts `mate` owns.

        ProtocolError if a PE is in use, promised to another job or on a lendable host, or the
        job already runs."""
        jid = job.id
        if jid in self.running:
            raise ProtocolError(f"job {jid} is already running")
        for mate, _ in owners:  # a whole-host mate no longer has its hosts to itself
            if mate in self._runs:
                self._explicit(mate, now)
        hosts = self._take(jid, pes, now)
        if owners:
            self._n_guests += 1
            role, owner = self._role.reshape(-1), self._owner.reshape(-1)
            for mate, part in owners:
                ix = _index(part)
                role[ix] = GUEST
                owner[ix] = mate
                self._count(part, 1, self._guest_n)
        wall = job.walltime if walltime is None else walltime
        alloc = Allocation(job=job, hosts=hosts, start=now, estimated_end=now + wall,
                           pes=len(pes), master=pes[0])
        self.running[jid] = alloc
        self._runs[jid] = _Run(alloc, hosts.to_array(), pes)
        self._runs[jid].guest = bool(owners)
        insort(self._ends, (alloc.estimated_end, jid, -1, now))
        self._ends_stamp = -1
        self._explicit_ids.add(jid)
        return alloc

    def _hosts_of(self, pes: IndexSet) -> IndexSet:
        """The hosts the PEs are on."""
        k = self.n_cores
        if pes.n_runs == 1:
            f = pes[0]
            return IndexSet.range(f // k, (f + len(pes) - 1) // k + 1)
        return IndexSet.from_sorted(self._per_host(pes)[0])

    def _by_host(self, pes: IndexSet) -> tuple[IndexSet, np.ndarray, np.ndarray]:
        """``(hosts, hosts as an array, PEs of `pes` on each)``."""
        h, n = self._per_host(pes)
        return IndexSet.from_sorted(h), h, n

    def _per_host(self, pes: IndexSet) -> tuple[np.ndarray, np.ndarray]:
        """``(hosts ascending, PEs of `pes` on each)`` (`IndexSet.block_counts`)."""
        return pes.block_counts(self.n_cores)

    def _count(self, pes: IndexSet, sign: int, used: np.ndarray | None = None) -> None:
        """Add ``sign`` x the PEs of `pes` to per-host counts `used` (default `used_pes`)."""
        k = self.n_cores
        if used is None:
            used = self.used_pes
        if not pes.n_runs:
            return
        if pes.n_runs > 1:
            hosts, n = self._per_host(pes)
            used[hosts] += sign * n
            return
        f, c = pes[0], len(pes)
        h0, h1 = f // k, (f + c - 1) // k
        if h0 == h1:
            used[h0] += sign * c
        else:
            used[h0] += sign * (k - f % k)
            if h1 > h0 + 1:
                used[h0 + 1:h1] += sign * k
            used[h1] += sign * ((f + c - 1) % k + 1)

    def _hosts_changed(self, hosts: IndexSet, users: bool = True) -> None:
        """Refresh the free mask, the free host count and (if `users`: `pe_user` changed, not
        only promises) `user` of `hosts` after `used_pes` changed there."""
        free, used = self._free_ro, self.used_pes
        ix = _index(hosts)
        self._stamp += 1
        self._host_stamp[ix] = self._stamp
        before = int(np.count_nonzero(free[ix]))
        now_free = used[ix] == 0
        free[ix] = now_free
        self.free_hosts += int(np.count_nonzero(now_free)) - before
        if users:
            self._user_stale[ix] = True

    def _users(self, idx: np.ndarray) -> np.ndarray:
        """`user` of hosts `idx` (an index array), refreshed from `pe_user` where stale."""
        user, stale = self._user, self._user_stale
        st = idx[stale[idx]]
        if len(st):
            rows = self.pe_user[st]
            first = rows.max(axis=1)
            shared = (np.where(rows >= 0, rows, first[:, None]) != first[:, None]).any(axis=1)
            user[st] = np.where(shared, -2, first)
            stale[st] = False
        return user[idx]

    def _take(self, jid: int, pes: IndexSet, now: int) -> IndexSet:
        """Mark free PEs as used by `jid` (explicit form); returns their hosts."""
        self._need_uniform(jid)
        if not len(pes):
            raise ProtocolError(f"job {jid}: an allocation needs at least one PE")
        if pes[-1] >= self.n_pes:
            raise ProtocolError(f"job {jid}: PE index out of range")
        flat = self.pe_user.reshape(-1)
        promised = self._promised.reshape(-1)
        ix = _index(pes)
        if (flat[ix] >= 0).any():
            raise ProtocolError(f"job {jid}: PE already in use")
        p = promised[ix]
        if ((p >= 0) & (p != jid)).any():
            raise ProtocolError(f"job {jid}: PE promised to job {int(p[p >= 0][0])}")
        mine = self.promised_pes.get(jid)
        moved = mine is not None and mine == pes
        if moved:  # every PE was held for it: promised -> used, the use counts stay
            del self.promised_pes[jid]
            promised[ix] = -1
            hosts, h, n = self._by_host(pes)
            self._promised_n[h] -= n
        else:
            if mine is not None:  # its promised PEs stop being held for it: it takes them
                self.unpromise(jid, mine.intersection(pes))
            hosts = self._hosts_of(pes)
        self._promised_until.pop(jid, None)
        if self._lender and any(h in hosts for h in self._lender):
            raise ProtocolError(f"job {jid}: PEs on a host lent by RCA")
        flat[ix] = jid
        self._since.reshape(-1)[ix] = now
        self._role.reshape(-1)[ix] = OWN
        self._owner.reshape(-1)[ix] = jid
        if not moved:
            self._count(pes, 1)
            self.free_pes -= len(pes)
        self._hosts_changed(hosts)
        return hosts

    def _give_back(self, pes: IndexSet, to: int | None = None) -> None:
        """Mark PEs free (explicit form), or (`to`) promised to job `to` at once (the use
        counts stay: `promise` without the round trip through free)."""
        ix = _index(pes)
        role = self._role.reshape(-1)
        if self._n_guests:
            was = role[ix] == GUEST
            if was.any():
                self._guest_n -= np.bincount(pes.to_array()[was] // self.n_cores,
                                             minlength=self.n_hosts)
        self.pe_user.reshape(-1)[ix] = -1
        self._owner.reshape(-1)[ix] = -1
        role[ix] = OWN  # no stale guest role for the next user
        if to is None:
            self._count(pes, -1)
            self.free_pes += len(pes)
            self._hosts_changed(self._hosts_of(pes))
            return
        promised = self._promised.reshape(-1)
        if (promised[ix] >= 0).any():
            raise ProtocolError(f"job {to}: PEs promised to it are not free")
        promised[ix] = to
        hosts, h, n = self._by_host(pes)
        self._promised_n[h] += n
        self._hosts_changed(hosts)
        held = self.promised_pes.get(to)
        self.promised_pes[to] = pes if held is None else held.union(pes)

    def promise(self, job_id: int, pes: IndexSet, until: tuple[int, int] | None = None) -> None:
        """Hold free PEs for `job_id` (a start waiting for other PEs to be released): they are
        neither free nor used; their hosts are not free. `until`: ``(expected end, since)`` of
        the waiting job, under which `running_ends` counts the hosts held only for it."""
        if until is not None:
            self._promised_until[job_id] = until
        if not len(pes):
            return
        ix = _index(pes)
        promised = self._promised.reshape(-1)
        if (self.pe_user.reshape(-1)[ix] >= 0).any() or (promised[ix] >= 0).any():
            raise ProtocolError(f"job {job_id}: PEs promised to it are not free")
        promised[ix] = job_id
        self._count(pes, 1)
        self._count(pes, 1, self._promised_n)
        self.free_pes -= len(pes)
        self._hosts_changed(self._hosts_of(pes), users=False)
        held = self.promised_pes.get(job_id)
        self.promised_pes[job_id] = pes if held is None else held.union(pes)

    def unpromise(self, job_id: int, pes: IndexSet) -> None:
        """PEs promised to `job_id` are free again (or about to be taken by it)."""
        if not len(pes):
            return
        self._promised.reshape(-1)[_index(pes)] = -1
        self._count(pes, -1)
        self._count(pes, -1, self._promised_n)
        self.free_pes += len(pes)
        self._hosts_changed(self._hosts_of(pes), users=False)
        left = self.promised_pes.pop(job_id).difference(pes)
        if len(left):
            self.promised_pes[job_id] = left

    def _borrow(self, jid: int, idx: np.ndarray, now: int) -> None:
        """Record the lendable hosts among `idx` as borrowed by `jid` (their owners keep them)."""
        lender = self._lender
        rec = None
        for h in idx.tolist():
            a = lender.get(h)
            if a is None:
                continue
            if rec is None:
                rec = self._rca.setdefault(jid, _Rca())
            rec.borrowed.append((h, a))
            lent = self._rca[a]  # the owner of a lendable host yielded it: it has a record
            if h not in lent.lent_set:
                lent.lent_set.add(h)
                lent.lent.append((h, now))
            self._close_tail(h, self._runs[a], now)
            self.lendable -= 1

    def _close_tail(self, h: int, owner: _Run, now: int) -> None:
        """The idle tail of `owner` on its lendable host `h` ends at `now`: log it."""
        since = self._tail.pop(h)
        k = int(owner.counts[np.searchsorted(owner.idx, h)])
        if now > since:
            jid = owner.alloc.job.id
            self.log.add(jid, h, 1, 0, k, since, now, YIELDED, jid)

    # -- resizes --------------------------------------------------------------------------
    def _lends(self, jid: int) -> bool:
        """True if the job borrowed a host or made one of its hosts lendable (RCA)."""
        rec = self._rca.get(jid)
        return rec is not None and (bool(rec.borrowed) or any(
            self._lender.get(h) == jid for h in rec.yielded_set))

    def _need_uniform(self, jid: int) -> None:
        if not self.uniform:
            raise ProtocolError(f"job {jid}: PEs given one by one on hosts with different core "
                                "counts (PE-level policies need equal hosts)")

    def _explicit(self, jid: int, now: int) -> _Run:
        """The job's record in explicit form, converting a whole-host job at `now` (its
        yielded hosts keep showing as idle tails)."""
        self._need_uniform(jid)
        run = self._runs[jid]
        if run.pes is not None:
            return run
        if self._lends(jid):
            raise ProtocolError(f"job {jid}: a job that lent or borrowed hosts (RCA) cannot be "
                                "resized")
        self._log_whole(run, now)
        pes = self._pe_set(run)
        since, role, owner = (a.reshape(-1) for a in (self._since, self._role, self._owner))
        ix = _index(pes)
        since[ix] = now
        role[ix] = OWN
        owner[ix] = jid
        rec = self._rca.get(jid)
        if rec is not None:  # yields recorded only (RCA off): idle tails from now on
            self._role[sorted(rec.yielded_set)] = YIELDED
        run.pes = pes
        i = bisect_left(self._ends, (run.alloc.estimated_end, jid))
        e, j, _, s = self._ends[i]
        self._ends[i] = (e, j, -1, s)
        self._ends_stamp = -1
        self._explicit_ids.add(jid)
        return run

    def shrink(self, job_id: int, pes: IndexSet, now: int, for_job: int | None = None) -> None:
        """PEs `pes` of running job `job_id` are to be released (the app releases them later,
        `release_pes`; when they are for a queued job, `for_job`, they are promised to it as
        they are released); ProtocolError unless they are held, not already releasing, not
        the master PE and not all of the job's PEs."""
        run = self._runs.get(job_id)
        if run is None:
            raise ProtocolError(f"shrink of job {job_id}, which is not running")
        held = self._pe_set(run)
        if not len(pes) or not pes.issubset(held):
            raise ProtocolError(f"shrink of job {job_id}: PEs it does not hold")
        if not pes.isdisjoint(run.releasing):
            raise ProtocolError(f"shrink of job {job_id}: PEs already being released")
        if run.alloc.master in pes:
            raise ProtocolError(f"shrink of job {job_id}: its master PE {run.alloc.master}")
        if len(pes) + len(run.releasing) >= len(held):
            raise ProtocolError(f"shrink of job {job_id}: it would keep no PE")
        self._explicit(job_id, now)
        run.releasing = run.releasing.union(pes)
        if for_job is not None:
            held = run.releasing_for.get(for_job)
            run.releasing_for[for_job] = pes if held is None else held.union(pes)
            self._coming.setdefault(for_job, set()).add(job_id)
        run.shrinks += 1

    def release_pes(self, job_id: int, pes: IndexSet, now: int) -> None:
        """The app of `job_id` released `pes` (each being released) at `now`: they are free."""
        run = self._runs.get(job_id)
        if run is None:
            raise ProtocolError(f"job {job_id} releases PEs but is not running")
        if not pes.issubset(run.releasing):
            raise ProtocolError(f"job {job_id} releases PEs it was not asked for")
        run.releasing = run.releasing.difference(pes)
        self._log_pes(run, pes, now)
        rest = self._pass_on(run, pes)
        if len(rest):
            self._give_back(rest)
        run.pes = run.pes.difference(pes)
        self._update_hosts(run)

    def _pass_on(self, run: _Run, pes: IndexSet) -> IndexSet:
        """Released PEs `pes` of `run` that a shrink took for a queued job are promised to it
        at once (`_give_back` with `to`); returns the others, which the caller frees."""
        rest = pes
        for for_job in sorted(run.releasing_for):
            mine = run.releasing_for[for_job]
            whole = mine == rest  # (the usual case: everything released at once, for it)
            part = mine if whole else mine.intersection(rest)
            if not len(part):
                continue
            self._give_back(part, to=for_job)
            rest = EMPTY if whole else rest.difference(part)
            left = EMPTY if whole else mine.difference(part)
            if len(left):
                run.releasing_for[for_job] = left
            else:
                del run.releasing_for[for_job]
                jobs = self._coming[for_job]
                jobs.discard(run.alloc.job.id)
                if not jobs:
                    del self._coming[for_job]
        return rest

    def expand(self, job_id: int, pes: IndexSet, now: int) -> None:
        """Give the free PEs `pes` to running job `job_id` from `now` on."""
        run = self._runs.get(job_id)
        if run is None:
            raise ProtocolError(f"expand of job {job_id}, which is not running")
        self._explicit(job_id, now)
        self._take(job_id, pes, now)
        run.pes = run.pes.union(pes)
        run.expands += 1
        self._update_hosts(run)

    def _update_hosts(self, run: _Run) -> None:
        old = run.alloc.hosts
        new = self._hosts_of(run.pes)
        if new != old:
            run.ever = (old if run.ever is None else run.ever).union(new)
            run.idx = new.to_array()
        run.alloc = self.running[run.alloc.job.id] = replace(run.alloc, hosts=new,
                                                             pes=len(run.pes))

    def set_limit(self, job_id: int, estimated_end: int) -> None:
        """Running job `job_id` is now expected to end at `estimated_end` (a resize moved it)."""
        run = self._runs[job_id]
        a = run.alloc
        ends = self._ends
        i = bisect_left(ends, (a.estimated_end, job_id))
        _, j, n, s = ends.pop(i)
        insort(ends, (estimated_end, j, n, s))
        run.alloc = self.running[job_id] = replace(a, estimated_end=estimated_end)

    # -- yields ---------------------------------------------------------------------------
    def yield_hosts(self, job_id: int, hosts: Sequence[int], now: int, *, lend: bool) -> int:
        """Record that running job `job_id` has no work left on `hosts` from `now`.

        With `lend`, those of its own hosts become lendable (free; the job still owns them and
        frees fewer hosts at its end); borrowed ones stay in use by it. Without, they stay
        allocated: the yield is only recorded. Returns the number of hosts made lendable.
        ProtocolError if the job is not running, started after `now`, does not hold a host or
        has yielded it before.
        """
        alloc = self.running.get(job_id)
        if alloc is None:
            raise ProtocolError(f"job {job_id} yields hosts but is not running")
        if now < alloc.start:
            raise ProtocolError(f"job {job_id} yields hosts at {now}, before its start")
        run = self._runs[job_id]
        rec = self._rca.get(job_id)
        seen = rec.yielded_set if rec is not None else set()
        self._users(run.idx)
        user, lender = self._user, self._lender
        fact: set[int] = set()
        held = alloc.hosts
        for h in hosts:  # check everything before changing anything
            h = int(h)
            if h in seen or h in fact:
                raise ProtocolError(f"job {job_id} yields host {h} twice")
            if not 0 <= h < self.n_hosts or h not in held:
                raise ProtocolError(f"job {job_id} yields host {h}, which it does not hold")
            fact.add(h)
        if run.pes is not None:  # resized or placed on PEs: its yields are recorded, not lent
            lend = False
        if rec is None:
            rec = self._rca[job_id] = _Rca()
            seen = rec.yielded_set
        made = 0
        for h in hosts:
            h = int(h)
            seen.add(h)
            rec.yielded.append((h, now))
            if lend and h not in lender and user[h] == job_id:  # its own host
                user[h] = -1
                lender[h] = job_id
                self._tail[h] = now
                k = int(self.used_pes[h])
                self.pe_user[h, :] = -1
                self.used_pes[h] = 0
                self.free_pes += k
                self._free_ro[h] = True
                made += 1
        if made:
            self.free_hosts += made
            self.lendable += made
            ends = self._ends
            i = bisect_left(ends, (alloc.estimated_end, job_id))
            e, j, n, s = ends[i]
            ends[i] = (e, j, n - made, s)
        return made

    # -- the end --------------------------------------------------------------------------
    def release(self, job_id: int, now: int | None = None) -> Released:
        """The job ended at `now`: free the PEs it uses, give up the hosts it owns (module
        docstring), write its open intervals to the log. ProtocolError if it is not running.
        """
        alloc = self.running.pop(job_id, None)
        if alloc is None:
            raise ProtocolError(f"job {job_id} is not running")
        end = alloc.start if now is None else now
        run = self._runs.pop(job_id)
        self._shape.pop(job_id, None)
        ends = self._ends
        del ends[bisect_left(ends, (alloc.estimated_end, job_id))]
        rec = self._rca.pop(job_id, None)
        if run.pes is not None:
            self._explicit_ids.discard(job_id)
            self._release_explicit(job_id, run, end)
        else:
            self._release_whole(job_id, run, rec, end)
        acct = NO_ACCOUNTING if rec is None else rec.freeze()
        hosts = alloc.hosts if run.ever is None else run.ever.union(alloc.hosts)
        return Released(alloc=alloc, acct=acct, hosts=hosts, pe_ticks=run.pe_ticks,
                        shrinks=run.shrinks, expands=run.expands, pes_start=run.pes_start)

    def _release_explicit(self, jid: int, run: _Run, end: int) -> None:
        self._log_pes(run, run.pes, end)
        passed = run.releasing.difference(self._pass_on(run, run.releasing))
        self._give_back(run.pes.difference(passed) if len(passed) else run.pes)
        if run.guest:
            self._n_guests -= 1

    def _release_whole(self, jid: int, run: _Run, rec: _Rca | None, end: int) -> None:
        idx = run.idx
        self._log_whole(run, end, rec)
        if rec is None:  # it owned and used every one of its hosts
            self._fill(run.alloc.hosts, 0, 0, -1, idx)
            self.free_hosts += len(idx)
            self.free_pes += run.alloc.pes
            return
        user = self._user
        used = idx[self._users(idx) == jid]
        self.pe_user[used, :] = -1
        user[used] = -1
        self.free_pes += int(self.used_pes[used].sum())
        self.used_pes[used] = 0
        self._free_ro[used] = True
        self.free_hosts += len(used)
        lender = self._lender
        if lender:
            for h, _ in rec.yielded:
                if lender.get(h) != jid:
                    continue  # not made lendable (rca off) or not its own
                if user[h] < 0:  # lendable, not lent now: a plain free host
                    del lender[h]
                    self._close_tail(h, run, end)
                    self.lendable -= 1
                else:  # a borrower keeps it; ownership returns to the system
                    lender[h] = -1
            for h, _ in rec.borrowed:
                if lender[h] < 0:  # its owner has ended: a plain free host
                    del lender[h]
                else:  # its owner still runs: lendable again, its idle tail resumes
                    self.lendable += 1
                    self._tail[h] = end

    # -- the log --------------------------------------------------------------------------
    def _pe_set(self, run: _Run) -> IndexSet:
        """A job's global PEs."""
        if run.pes is not None:
            return run.pes
        c = self.n_cores
        base, extra = divmod(run.alloc.pes, len(run.idx))
        if base == c:  # whole hosts, every core: the runs of its hosts
            return IndexSet.from_runs((f * c, n * c) for f, n in run.alloc.hosts.runs)
        return IndexSet.from_run_arrays(run.idx * c, run.counts)

    def _log_pes(self, run: _Run, pes: IndexSet, end: int) -> None:
        """Close the open intervals of a job on its PEs `pes` (explicit form) at `end`."""
        jid = run.alloc.job.id
        arr = pes.to_array()
        since, role, owner = (a.reshape(-1)[arr] for a in (self._since, self._role,
                                                            self._owner))
        host, hosts, core, n, since, role, owner = rows_from_pes(arr, self.n_cores, since,
                                                                 role, owner)
        keep = end > since
        if not keep.all():
            host, hosts, core, n, since, role, owner = (
                x[keep] for x in (host, hosts, core, n, since, role, owner))
        self.log.extend(job=jid, host=host, hosts=hosts, core=core, pes=n, start=since,
                        end=end, role=role, owner=owner)
        busy = role != YIELDED
        run.pe_ticks += int((hosts * n * (end - since))[busy].sum())

    def _log_whole(self, run: _Run, end: int, rec: _Rca | None = None) -> None:
        """Close every open interval of a whole-host job at `end` (a yield ends a host's busy
        interval at the yield tick; an unlent yielded host's idle tail runs to `end`)."""
        jid = run.alloc.job.id
        start = run.alloc.start
        idx = run.idx
        if rec is None and jid not in self._rca:
            if end > start:  # the runs of its hosts, split where the spread rule changes
                add = self.log.add
                for first, n, k in spread_runs(run.alloc.hosts.runs, run.alloc.pes, len(idx)):
                    add(jid, first, n, 0, k, start, end, OWN, jid)
            run.pe_ticks += run.alloc.pes * (end - start)
            return
        counts = run.counts
        rec = rec if rec is not None else self._rca[jid]
        stop = np.full(len(idx), end, dtype=np.int64)
        role = np.full(len(idx), OWN, dtype=np.int64)
        owner = np.full(len(idx), jid, dtype=np.int64)
        pos = {h: i for i, h in enumerate(idx.tolist())} if rec.yielded or rec.borrowed else {}
        for h, a in rec.borrowed:
            role[pos[h]] = BORROWED
            owner[pos[h]] = a
        tails = []
        for h, y in rec.yielded:
            i = pos[h]
            stop[i] = min(y, end)
            if self._lender.get(h) != jid and y < end:  # kept, not lendable: idle to the end
                tails.append((h, int(counts[i]), y, int(owner[i])))
        keep = stop > start
        host, hosts, core, pes, stop, role, owner = merge_host_runs(
            idx[keep], np.ones(int(keep.sum()), dtype=np.int64),
            np.zeros(int(keep.sum()), dtype=np.int64), counts[keep], stop[keep], role[keep],
            owner[keep])
        self.log.extend(job=jid, host=host, hosts=hosts, core=core, pes=pes, start=start,
                        end=stop, role=role, owner=owner)
        run.pe_ticks += int((hosts * pes * (stop - start)).sum())
        for h, k, y, a in tails:
            self.log.add(jid, h, 1, 0, k, y, end, YIELDED, a)
