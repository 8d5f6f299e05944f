"""The allocation log: every interval during which a job used (or held) PEs, recorded once.

Each row says that job `job` used cores ``core .. core + pes - 1`` of each of the hosts
``host .. host + hosts - 1`` from tick `start` to tick `end`, in a *role*: ``own`` (on PEs
allocated to it), ``borrowed`` (RCA: on a host another job, `owner`, yielded and still owns),
``guest`` (a malleable guest on PEs taken from `owner`) or ``yielded`` (the job still holds
the host but reported it out of work: an idle tail; the row ends when the host is lent or
the job ends). `owner` is the job itself for ``own`` and ``yielded``. Consecutive hosts with
the same cores, interval, role and owner share one row, so a first-fit allocation of 450
hosts is one or two rows, not 450 (DESIGN §6). A row is written when its interval closes:
when the job ends, or when part of its allocation changes (a shrink releases PEs, an expand
adds PEs, a yield ends a busy interval). `AllocLog` keeps the rows in growable typed
columns (8 bytes a value, no Python object per row) and hands them out as one structured
array, `ALLOC_DTYPE`, sorted by ``(host, start, job, core)``.
"""

from __future__ import annotations

from array import array

import numpy as np

__all__ = ["ALLOC_DTYPE", "ROLES", "OWN", "BORROWED", "GUEST", "YIELDED", "AllocLog",
           "rows_from_pes", "merge_host_runs"]

ROLES = ("own", "borrowed", "guest", "yielded")
OWN, BORROWED, GUEST, YIELDED = range(4)

ALLOC_DTYPE = np.dtype([
    ("job", "<i8"), ("host", "<i4"), ("hosts", "<i4"), ("core", "<i4"), ("pes", "<i4"),
    ("start", "<i8"), ("end", "<i8"), ("role", "u1"), ("owner", "<i8"),
])
"""One row per interval (module docstring): hosts ``host .. host + hosts - 1``, cores
``core .. core + pes - 1`` of each, ``[start, end)``, role index into `ROLES`, owner job."""

_FIELDS = ALLOC_DTYPE.names


class AllocLog:
    """Append-only columns of allocation rows (see the module docstring)."""

    __slots__ = ("_cols",)

    def __init__(self) -> None:
        self._cols = {name: array("q") for name in _FIELDS}

    def __len__(self) -> int:
        return len(self._cols["job"])

    def add(self, job: int, host: int, hosts: int, core: int, pes: int, start: int, end: int,
            role: int, owner: int) -> None:
        """Append one row."""
        c = self._cols
        c["job"].append(job)
        c["host"].append(host)
        c["hosts"].append(hosts)
        c["core"].append(core)
        c["pes"].append(pes)
        c["start"].append(start)
        c["end"].append(end)
        c["role"].append(role)
        c["owner"].append(owner)

    def extend(self, **columns: np.ndarray | int) -> None:
        """Append many rows at once: one array (or scalar, repeated) per field."""
        sizes = [v.size for v in columns.values() if isinstance(v, np.ndarray)]
        n = sizes[0] if sizes else 1
        if n == 0:
            return
        cols = self._cols
        for name in _FIELDS:
            v = columns[name]
            v = v.astype(np.int64, copy=False) if isinstance(v, np.ndarray) else \
                np.full(n, int(v), dtype=np.int64)
            cols[name].frombytes(v.tobytes())

    def table(self) -> np.ndarray:
        """Every row as an `ALLOC_DTYPE` array sorted by ``(host, start, job, core)``."""
        n = len(self)
        out = np.zeros(n, dtype=ALLOC_DTYPE)
        for name in _FIELDS:
            out[name] = np.frombuffer(self._cols[name], dtype=np.int64, count=n) if n else []
        return out[np.lexsort((out["core"], out["job"], out["start"], out["host"]))]


def rows_from_pes(pes: np.ndarray, cores: int, *extra: np.ndarray) -> tuple[np.ndarray, ...]:
    """Group ascending global PE indices into ``(host, hosts, core, pes, *extra)`` row columns.

    PEs of one host with consecutive cores and equal `extra` values (per-PE arrays, e.g.
    since, role, owner) form a run; runs of consecutive hosts with the same first core,
    length and extras merge into one row. `cores` PEs per host (uniform).
    """
    pes = np.asarray(pes, dtype=np.int64)
    if pes.size == 0:
        z = np.zeros(0, dtype=np.int64)
        return (z, z, z, z, *(z for _ in extra))
    host = pes // cores
    cut = (np.diff(pes) != 1) | (np.diff(host) != 0)
    for x in extra:
        cut |= np.diff(x) != 0
    brk = np.flatnonzero(cut) + 1
    s = np.concatenate(([0], brk))
    e = np.concatenate((brk, [pes.size]))
    r_host = host[s]
    return merge_host_runs(r_host, np.ones_like(r_host), pes[s] - r_host * cores, e - s,
                           *(x[s] for x in extra))


def merge_host_runs(host: np.ndarray, hosts: np.ndarray, core: np.ndarray,
                    pes: np.ndarray, *extra: np.ndarray) -> tuple[np.ndarray, ...]:
    """Merge rows whose host ranges follow each other with equal core, pes and `extra`
    columns (rows of one host never merge with each other). The rows are grouped by their
    columns first (host last), so a job whose hosts each hold two kinds of PEs — kept since
    its start, given back later — gets two rows per run of hosts, not two per host; the
    output is in that grouped order."""
    n = host.size
    if n <= 1:
        return (host, hosts, core, pes, *extra)
    order = np.lexsort((host, pes, core, *extra))
    if (order[1:] < order[:-1]).any():
        host, hosts, core, pes = host[order], hosts[order], core[order], pes[order]
        extra = tuple(x[order] for x in extra)
    same = (host[1:] == host[:-1] + hosts[:-1]) & (core[1:] == core[:-1]) & (pes[1:] == pes[:-1])
    for x in extra:
        same &= x[1:] == x[:-1]
    starts = np.concatenate(([0], np.flatnonzero(~same) + 1))
    ends = np.concatenate((starts[1:], [n]))
    m_hosts = (host[ends - 1] + hosts[ends - 1]) - host[starts]
    return (host[starts], m_hosts, core[starts], pes[starts], *(x[starts] for x in extra))
