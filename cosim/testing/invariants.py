"""Invariant checkers of finished simulations, shared by the tests of every policy.

`check_allocations` reads a run's allocation log (AC10 of the malleability spec): no PE has
two users at any instant and no row goes past its hosts' cores, a running job holds
between its minimum and maximum PEs, and the PE-time of each job's rows equals the
`pe_ticks` of its outcome; its rows span exactly its start to its end. `check_state_caches`
recomputes from scratch what a `cosim.bls.state.ClusterState` keeps incrementally or lazily
(hosts with guests, the user of each host, sole hosts and fewest PEs per host of explicit-form
jobs) and compares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["check_allocations", "check_state_caches"]


def check_allocations(res: Any, *, n_pes: int, cores: int | Sequence[int]) -> None:
    """AC10 on the allocation log: per tick no PE has two users; a row stays within its
    hosts' cores (`cores`: of every host, or one count per host); a job holds between its min
    and max PEs while it runs; every job's PE-time equals its outcome's `pe_ticks`."""
    t = res.allocations
    assert t is not None
    n_hosts = int(t["host"].max()) + int(t["hosts"].max()) if len(t) else 0
    per_host = [cores] * n_hosts if isinstance(cores, int) else list(cores)
    first = np.concatenate(([0], np.cumsum(per_host, dtype=np.int64))).tolist()
    events = []
    for r in t:
        for h in range(int(r["host"]), int(r["host"] + r["hosts"])):
            assert int(r["core"] + r["pes"]) <= per_host[h], f"host {h} over-booked"
            for c in range(int(r["core"]), int(r["core"] + r["pes"])):
                events.append((int(r["start"]), int(r["end"]), first[h] + c, int(r["job"])))
    by_pe: dict[int, list[tuple[int, int, int]]] = {}
    for s, e, pe, j in events:
        assert 0 <= pe < n_pes and s < e
        by_pe.setdefault(pe, []).append((s, e, j))
    for pe, spans in by_pe.items():
        spans.sort()
        for (s1, e1, _), (s2, _, _) in zip(spans, spans[1:]):
            assert e1 <= s2, f"PE {pe} has two users"
    outcomes = {o.job.id: o for o in res.outcomes}
    for jid, o in outcomes.items():
        rows = t[t["job"] == jid]
        used = int((rows["hosts"].astype(np.int64) * rows["pes"] * (rows["end"] - rows["start"])).sum())
        assert used == o.pe_ticks
        assert rows["start"].min() == o.start and rows["end"].max() == o.end
        times = sorted({int(x) for x in np.concatenate((rows["start"], rows["end"]))})
        for a, b in zip(times, times[1:]):
            live = rows[(rows["start"] <= a) & (rows["end"] >= b)]
            held = int((live["hosts"].astype(np.int64) * live["pes"]).sum())
            assert o.job.min_pes <= held <= max(o.job.max_pes, o.job.pes)


def check_state_caches(state: Any, running_ends: Any = None) -> None:
    """The incremental views of a `ClusterState` equal their definitions recomputed from the
    PE arrays: guest hosts (guest-role PEs in use, or promised PEs), and for every running job
    in explicit form its sole hosts (in `running_ends`, default ``state.running_ends()``) and
    fewest PEs on a host."""
    from cosim.bls.alloclog import GUEST

    users, promised, role, owner = state.pe_user, state._promised, state._role, state._owner
    guest = ((role == GUEST) & (users >= 0)).any(axis=1) | (promised >= 0).any(axis=1)
    assert np.array_equal(state.guest_mask(), guest), "guest hosts"
    distinct = [set(row[row >= 0].tolist()) for row in users]
    expect = [-1 if not d else d.pop() if len(d) == 1 else -2 for d in distinct]
    assert state.user.tolist() == expect, "the user of each host"
    if running_ends is None:
        running_ends = state.running_ends()
    ends = {j: n for _, j, n, _ in running_ends}
    for jid, run in state._runs.items():
        if run.pes is None:
            continue
        rows = users[run.idx]
        own = rows == jid
        mine = own | (rows < 0) | (owner[run.idx] == jid)
        sole = int(np.count_nonzero(mine.all(axis=1) & own.any(axis=1)))
        assert ends[jid] == sole, f"sole hosts of job {jid}"
        assert state.min_host_pes(jid) == int(own.sum(axis=1).min()), f"PEs of job {jid}"
