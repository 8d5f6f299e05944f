"""The cluster state of the batch level: who owns, who uses which host, and how many PEs.

`ClusterState` owns the allocation. Per host: its *user* (the job whose PEs run on it, -1
when none; a host runs one job: node sharing is later work), its *owner* (the job it was
allocated to, -1 when none; kept apart only where it differs from the user, so RCA costs
nothing when it is off) and the PEs the user runs there. Per running job: its hosts, start and
estimated end (start + walltime). A job's `pes` are spread evenly over its hosts, the first
``pes % hosts`` hosts (ascending index) taking one more, and may not exceed a host's cores.
A host is *free* when nobody uses it; without RCA owner and user are the same job. RCA
(DESIGN §2; `yield_hosts` with ``lend=True``): a host of job A that A reported out of work
becomes *lendable*: free, still owned by A. A job B started on it uses it (the host is
*borrowed*: B's record gets ``(host, A)``, A's ``(host, tick)`` at the first lend only) while
A keeps owning it. When A ends, its hosts in use by A are freed and its ownership of the
others returns to the system (a borrower keeps using them until it ends, then they are plain
free hosts); when B ends first, the host is lendable again. Only a job's *own* hosts become
lendable: a borrower that yields a borrowed host keeps it until it ends (its accounting
covers its whole run, `cosim.output.metrics.utilization`). Running jobs are kept sorted by
``(estimated end, job id)`` with the number of hosts each one frees at its end — its hosts
minus those it yielded and that were made lendable (already free) — the order and counts the
policies use to build availability profiles. Policies only see this state through read-only
snapshots (`free_mask`, `running_ends`); only the scheduler mutates it. Cost: `allocate` and
`release` are O(hosts of the job), `yield_hosts` O(hosts of the fact + log running).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cosim.errors import ProtocolError
from cosim.platform.allocation import spread_pes
from cosim.workload.jobs import Job

__all__ = ["ClusterState", "Allocation", "Accounting", "spread_pes"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Allocation:
    """A running job: its hosts (ascending), start and estimated end (start + walltime).

    The PEs it uses on each host are ``spread_pes(job.pes, job.hosts)``, in host order.
    `hosts` includes the hosts it borrowed (RCA) and those it yielded.
    """

    job: Job
    hosts: tuple[int, ...]
    start: int
    estimated_end: int


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


class ClusterState:
    """Ownership and use of hosts and PEs by running jobs (see the module docstring).

    Parameters
    ----------
    cores:
        PEs of each host, by host index.
    """

    __slots__ = ("cores", "n_hosts", "user", "used_pes", "free_hosts", "lendable", "running",
                 "_ends", "_free_ro", "_idx", "_ids", "_min_cores", "_rca", "_lender")

    def __init__(self, cores: Sequence[int]) -> None:
        if not cores or any(c < 1 for c in cores):
            raise ValueError("a machine needs at least one host, each with at least one core")
        self.cores = np.asarray(cores, dtype=np.int64)
        self.n_hosts = len(cores)
        self.user = np.full(self.n_hosts, -1, dtype=np.int64)
        self.used_pes = np.zeros(self.n_hosts, dtype=np.int64)
        self.free_hosts = self.n_hosts  # hosts nobody uses, lendable ones included
        self.lendable = 0  # free hosts still owned by a running job (RCA)
        self.running: dict[int, Allocation] = {}
        self._ends: list[tuple[int, int, int, int]] = []  # (est. end, id, hosts, start), sorted
        self._free_ro = np.ones(self.n_hosts, dtype=bool)
        self._idx: dict[int, np.ndarray] = {}  # running job id -> its host indices
        # host indices as shared Python ints: host tuples of big jobs then cost 8 bytes a host
        self._ids = np.array(list(range(self.n_hosts)), dtype=object)
        self._min_cores = int(self.cores.min())
        self._rca: dict[int, _Rca] = {}  # running job id -> RCA record, if it has one
        # host -> its owner where the owner is not the user (RCA only, so empty without it):
        # lendable hosts (no user), borrowed hosts (owner -1 once the owner has ended)
        self._lender: dict[int, int] = {}

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

    def running_ends(self) -> tuple[tuple[int, int, int, int], ...]:
        """``(estimated end, job id, hosts freed at its end, start)`` of running jobs, sorted.

        Hosts freed at its end = the job's hosts minus the ones it yielded that were made
        lendable (they are free already); borrowed hosts are included.
        """
        return tuple(self._ends)

    def allocate(self, job: Job, hosts: np.ndarray, now: int) -> Allocation:
        """Give `hosts` (ascending indices, all free) to `job` from `now` on.

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
        per_host = base + (extra > 0)
        if per_host > self._min_cores and per_host > int(self.cores[idx].min()):
            raise ProtocolError(f"job {jid}: more PEs than cores on a host")
        if self.lendable:
            self._borrow(jid, idx, now)
        self.user[idx] = jid
        used = self.used_pes
        used[idx] = base
        if extra:
            used[idx[:extra]] += 1
        free[idx] = False
        self.free_hosts -= job.hosts
        alloc = Allocation(job=job, hosts=tuple(self._ids[idx].tolist()), start=now,
                           estimated_end=now + job.walltime)
        self.running[jid] = alloc
        self._idx[jid] = idx
        insort(self._ends, (alloc.estimated_end, jid, job.hosts, now))
        return alloc

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
            self.lendable -= 1

    def working_hosts(self, job_id: int) -> int:
        """Hosts running job `job_id` owns and uses and has not yielded (RCA exclusion)."""
        idx = self._idx[job_id]
        rec = self._rca.get(job_id)
        own = idx[self.user[idx] == job_id]
        if rec is None:
            return len(own)
        return sum(1 for h in own.tolist() if h not in rec.yielded_set and h not in self._lender)

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
        rec = self._rca.get(job_id)
        seen = rec.yielded_set if rec is not None else set()
        user, lender = self.user, self._lender
        fact: set[int] = set()
        for h in hosts:  # check everything before changing anything
            h = int(h)
            if h in seen or h in fact:
                raise ProtocolError(f"job {job_id} yields host {h} twice")
            if not 0 <= h < self.n_hosts or user[h] != job_id:
                raise ProtocolError(f"job {job_id} yields host {h}, which it does not hold")
            fact.add(h)
        if rec is None:
            rec = self._rca[job_id] = _Rca()
            seen = rec.yielded_set
        made = 0
        for h in hosts:
            h = int(h)
            seen.add(h)
            rec.yielded.append((h, now))
            if lend and h not in lender:  # its own host (a borrowed one is in `lender`)
                user[h] = -1
                lender[h] = job_id
                self.used_pes[h] = 0
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

    def release(self, job_id: int) -> tuple[Allocation, Accounting]:
        """The job ended: free the hosts it uses, give up those it owns (module docstring).

        Returns its allocation and its RCA record; ProtocolError if it is not running.
        """
        alloc = self.running.pop(job_id, None)
        if alloc is None:
            raise ProtocolError(f"job {job_id} is not running")
        idx = self._idx.pop(job_id)
        ends = self._ends
        del ends[bisect_left(ends, (alloc.estimated_end, job_id))]
        rec = self._rca.pop(job_id, None)
        if rec is None:  # it owned and used every one of its hosts
            self.user[idx] = -1
            self.used_pes[idx] = 0
            self._free_ro[idx] = True
            self.free_hosts += len(idx)
            return alloc, NO_ACCOUNTING
        user = self.user
        used = idx[user[idx] == job_id]
        user[used] = -1
        self.used_pes[used] = 0
        self._free_ro[used] = True
        self.free_hosts += len(used)
        lender = self._lender
        if lender:
            for h, _ in rec.yielded:
                if lender.get(h) != job_id:
                    continue  # not made lendable (rca off) or not its own
                if user[h] < 0:  # lendable, not lent now: a plain free host
                    del lender[h]
                    self.lendable -= 1
                else:  # a borrower keeps it; ownership returns to the system
                    lender[h] = -1
            for h, _ in rec.borrowed:
                if lender[h] < 0:  # its owner has ended: a plain free host
                    del lender[h]
                else:  # its owner still runs: lendable again
                    self.lendable += 1
        return alloc, rec.freeze()
