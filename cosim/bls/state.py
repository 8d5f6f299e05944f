"""The cluster state of the batch level: who holds which host and how many of its PEs.

`ClusterState` owns the allocation: per host, the job that holds it (-1 when free; a host runs
one job: node sharing is later work) and the PEs that job uses on it; per running job, its
hosts, start and estimated end (start + walltime). A job's `pes` are spread evenly over its
hosts, the first ``pes % hosts`` hosts (ascending index) taking one more, and may not exceed a
host's cores. Running jobs are also kept sorted by ``(estimated end, job id)``, the order in
which the policies walk them to build availability profiles. Policies only see this state
through read-only snapshots (`free_mask`, `running_ends`); only the scheduler mutates it.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cosim.errors import ProtocolError
from cosim.workload.jobs import Job

__all__ = ["ClusterState", "Allocation", "spread_pes"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Allocation:
    """A running job: its hosts (ascending), start and estimated end (start + walltime).

    The PEs it uses on each host are ``spread_pes(job.pes, job.hosts)``, in host order.
    """

    job: Job
    hosts: tuple[int, ...]
    start: int
    estimated_end: int


def spread_pes(pes: int, hosts: int) -> list[int]:
    """PEs per host when `pes` are spread over `hosts` hosts: even, remainder on the first."""
    base, extra = divmod(pes, hosts)
    return [base + 1] * extra + [base] * (hosts - extra)


class ClusterState:
    """Allocation of hosts and PEs to running jobs (see the module docstring).

    Parameters
    ----------
    cores:
        PEs of each host, by host index.
    """

    __slots__ = ("cores", "n_hosts", "owner", "used_pes", "free_hosts", "running", "_ends",
                 "_free_ro", "_idx", "_ids", "_min_cores")

    def __init__(self, cores: Sequence[int]) -> None:
        if not cores or any(c < 1 for c in cores):
            raise ValueError("a machine needs at least one host, each with at least one core")
        self.cores = np.asarray(cores, dtype=np.int64)
        self.n_hosts = len(cores)
        self.owner = np.full(self.n_hosts, -1, dtype=np.int64)
        self.used_pes = np.zeros(self.n_hosts, dtype=np.int64)
        self.free_hosts = self.n_hosts
        self.running: dict[int, Allocation] = {}
        self._ends: list[tuple[int, int, int, int]] = []  # (est. end, id, hosts, start), sorted
        self._free_ro = np.ones(self.n_hosts, dtype=bool)
        self._idx: dict[int, np.ndarray] = {}  # running job id -> its host indices
        # host indices as shared Python ints: host tuples of big jobs then cost 8 bytes a host
        self._ids = np.array(list(range(self.n_hosts)), dtype=object)
        self._min_cores = int(self.cores.min())

    def free_mask(self) -> np.ndarray:
        """Read-only boolean array: True where a host is free."""
        view = self._free_ro.view()
        view.flags.writeable = False
        return view

    def running_ends(self) -> tuple[tuple[int, int, int, int], ...]:
        """``(estimated end, job id, hosts, start)`` of every running job, sorted."""
        return tuple(self._ends)

    def allocate(self, job: Job, hosts: np.ndarray, now: int) -> Allocation:
        """Give `hosts` (ascending indices) to `job` from `now` on.

        ProtocolError if a host is taken, the count is wrong or a host has too few cores.
        """
        idx = np.asarray(hosts, dtype=np.int64)
        if len(idx) != job.hosts:
            raise ProtocolError(f"job {job.id} asked for {job.hosts} hosts, got {len(idx)}")
        if job.id in self.running:
            raise ProtocolError(f"job {job.id} is already running")
        free = self._free_ro
        if not free[idx].all():
            raise ProtocolError(f"job {job.id}: host already allocated")
        base, extra = divmod(job.pes, job.hosts)
        per_host = base + (extra > 0)
        if per_host > self._min_cores and per_host > int(self.cores[idx].min()):
            raise ProtocolError(f"job {job.id}: more PEs than cores on a host")
        self.owner[idx] = job.id
        used = self.used_pes
        used[idx] = base
        if extra:
            used[idx[:extra]] += 1
        free[idx] = False
        self.free_hosts -= job.hosts
        alloc = Allocation(job=job, hosts=tuple(self._ids[idx].tolist()), start=now,
                           estimated_end=now + job.walltime)
        self.running[job.id] = alloc
        self._idx[job.id] = idx
        insort(self._ends, (alloc.estimated_end, job.id, job.hosts, now))
        return alloc

    def release(self, job_id: int) -> Allocation:
        """Free the hosts of running job `job_id`; ProtocolError if it is not running."""
        alloc = self.running.pop(job_id, None)
        if alloc is None:
            raise ProtocolError(f"job {job_id} is not running")
        idx = self._idx.pop(job_id)
        self.owner[idx] = -1
        self.used_pes[idx] = 0
        self._free_ro[idx] = True
        self.free_hosts += len(idx)
        ends = self._ends
        del ends[bisect_left(ends, (alloc.estimated_end, job_id, 0))]
        return alloc
