"""SD-Policy (D'Amico, Jokanovic & Corbalan, ICPP'19): slowdown-driven co-scheduling of malleable jobs.

It wraps EASY backfilling and replaces its pass. Queued jobs are walked in priority order; each
first gets EASY's **static trial** (it starts if EASY would start it now); a malleable job
that fails it gets the **malleable trial** right after, before the next job (the paper's rule,
which favours priority order). The trial:

1. *End times.* ``static_end`` = the job's earliest start in EASY's availability profile (its
   reservation if it is the head) + its walltime; ``mall_end`` = now + its walltime stretched
   by the worst-case model (SD-Policy's own prediction, Eq. 6 corrected): ``ceil(walltime x
   (H0 min u0) / (H min u))``, u the PEs it gets per host. With ``compare_static`` (default, the
   paper) a choice is kept only if ``mall_end < static_end``; ``compare_static=false`` is the
   authors' Slurm fork, where the comparison is commented out.
2. *Candidates (mates).* Running malleable jobs that are neither guests nor mates already, did
   not outlive their estimate, lent or borrowed no host (RCA), have no guest on any host, and
   can give PEs on every host they hold; each with its penalty (Eq. 4, the fork's form)
   ``p = (wait + current walltime + guest walltime) / original walltime`` and cut off at
   ``p <= max_slowdown`` (``cutoff=fixed``, default 10), ``p <=`` DynAVGSD (``cutoff=dynamic``:
   the mean over running jobs of ``(start + current walltime - submit) / original walltime``)
   or not at all (``cutoff=none``).
3. *Selection* (Eq. 1-3, Listing 2). Candidates sorted by ``(p, id)``; every combination of 1
   to ``max_mates`` (default 2) of them, in index order, whose weights sum to exactly the
   guest's hosts (a mate weighs its hosts; at host granularity ``floor(SF x hosts)``), whose
   mates all end after the guest (the end-inside rule: ``now + guest walltime <= mate's
   estimated end + the guest's original walltime``), and that passes step 1; the objective is
   ``sum p_i w_i`` (``weighting=nodes``, the fork, default) or ``sum p_i`` (``none``, the
   paper's Eq. 1); ties go to the smallest sorted tuple of mate ids.
4. *Node management* (§3.3). At core granularity (default when hosts have several cores) the
   guest needs ``need_h`` PEs on each shared host (its PEs spread over the hosts); it takes
   the host's free PEs first (highest cores), then ``steal_h = min(need_h - free, floor(SF x
   cores), mate's PEs there - 1)`` of the mate's highest cores (never the mate's master PE).
   At host granularity (forced on one-core hosts such as ``ib256``) a mate gives
   ``floor(SF x hosts)`` whole hosts, its highest-numbered ones but its master's: sharing
   hosts in time, **cosim's extension, not the paper's policy**. The mates are shrunk
   (``for_job`` = the guest: the released PEs are held for it), their walltimes grow by the
   guest's original walltime; the guest starts with the stretched walltime as soon as every
   PE is released (at once for trace jobs; when the chunks in flight end for DLS apps). After
   a malleable start the walk restarts from the top of the queue (the fork's ``goto
   BEGINNING``): the mates' estimated ends moved.
5. *End of sharing.* When the guest ends, each mate still running gets back exactly the PEs it
   lost. When a mate ends first, the guest expands (``expand_guest``, default) onto that
   mate's freed PEs on the hosts they shared, up to its ``need_h`` per host.

``protect_reservation`` (default off, as the fork) refuses a choice that delays the EASY head's
reservation. The policy's memory (which guests have which mates and what each lost) is its
memo; everything else is read from the view, so every pass is a function of the state (the
memo also caches what a candidate's allocation alone decides, keyed by the allocation).

Speed (200,000 jobs on 5,040 hosts is the target): a pass costs O(running jobs + bound
widths x log queue) Python work. Candidates are kept per allocation between passes
(`_candidates`); `_reach` bounds, per guest width, the walltime any 1-2 candidates can take
under the cut-off (and, for guests needing every core, ending inside them), kept while the
candidates are the same; the scheduler's queue index (`DynamicView.queue_index`) gives, by
bisection, the few queued jobs within those bounds, so most are never looked at; a trial
ranks the combinations by their objective and checks them in that order on PE counts per
host (`_shares`), laying out PEs only for the one chosen (`_layout`, as runs when the mates
are regular; checked against the counts). None of this changes a decision:
`tests/test_sd_regression.py` pins them with digests written before it existed.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import combinations
from typing import Literal

import numpy as np

from cosim.bls.policies import easy
from cosim.bls.policies.base import (
    DynamicPolicy, DynamicView, Expand, PassView, Plan, Shrink, Start, expected_end,
)
from cosim.bls.profile import Profile
from cosim.core.indexset import EMPTY, IndexSet, sorted_counts
from cosim.workload.jobs import Job

__all__ = ["POLICY", "Params", "Sharing", "decide", "penalty", "dyn_avg_sd"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """The parameters of SD-Policy (module docstring)."""

    sharing_factor: float = 0.5
    cutoff: Literal["fixed", "dynamic", "none"] = "fixed"
    max_slowdown: float = 10.0
    max_mates: int = 2
    weighting: Literal["nodes", "none"] = "nodes"
    compare_static: bool = True
    granularity: Literal["auto", "core", "host"] = "auto"
    expand_guest: bool = True
    protect_reservation: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.sharing_factor < 1:
            raise ValueError(f"sharing_factor must be in (0, 1), got {self.sharing_factor}")
        if not self.max_slowdown > 0:
            raise ValueError(f"max_slowdown must be > 0, got {self.max_slowdown}")
        if self.max_mates < 1:
            raise ValueError(f"max_mates must be >= 1, got {self.max_mates}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Sharing:
    """A guest's mates and, for each, the PEs it lost; the guest's PEs needed per host."""

    mates: tuple[tuple[int, IndexSet], ...]
    need: tuple[np.ndarray, np.ndarray]  # (shared hosts ascending, the guest's PEs on each)


def penalty(alloc, guest_walltime: int) -> float:
    """Eq. 4 in the fork's form: ``(wait + current walltime + guest walltime) / original``."""
    job = alloc.job
    wait = alloc.start - job.submit
    current = alloc.estimated_end - alloc.start
    return (wait + current + guest_walltime) / max(job.walltime, 1)


def dyn_avg_sd(running) -> float:
    """DynAVGSD: the mean over running jobs of ``(start + current walltime - submit) /
    original walltime`` (jobs of walltime 0 left out); infinity when there is none."""
    vals = [(a.estimated_end - a.job.submit) / a.job.walltime for a in running.values()
            if a.job.walltime > 0]
    return sum(vals) / len(vals) if vals else math.inf


@dataclass(frozen=True, slots=True)
class _Memory:
    """The policy's memory between passes: the guests' `Sharing`, and a cache of candidate
    shapes (`_candidates`)."""

    guests: dict[int, Sharing]
    shapes: dict[int, "_Cand"]
    sharing: frozenset[int] = frozenset()  # the guests and their mates
    reach: list = field(default_factory=lambda: [None])  # (candidates, cut-off, `_reach`)

    def with_guests(self, guests: dict[int, Sharing]) -> _Memory:
        """This memory with `guests` (the same object when they are)."""
        if guests is self.guests:
            return self
        return _Memory(guests=guests, shapes=self.shapes, sharing=frozenset(guests).union(
            m for s in guests.values() for m, _ in s.mates), reach=self.reach)


@dataclass(slots=True)
class _Cand:
    """A running job as a possible mate: what depends on its allocation only (kept between
    passes while its `Allocation` object is the same, `_candidates`), and what depends on
    the PEs of its hosts too, with the cluster `stamp` it was computed at."""

    jid: int
    alloc: object
    hosts: np.ndarray  # ascending
    counts: np.ndarray  # its PEs on each of them
    end: int  # estimated end (a candidate has not outlived it)
    w: int  # weight: hosts (core granularity) or whole hosts it can give
    a: int  # wait + current walltime: the penalty is (a + guest walltime) / o
    o: int  # original walltime
    can: bool  # every host of it can give a PE
    most: int  # a bound of `give` from its allocation alone
    ratio: float  # most / (cores - most): the end-inside bound's slope (`_inside`)
    give: int = -1  # most PEs a guest can get on each of its hosts (`_give`), as of ...
    give_stamp: int = -1  # ... this cluster stamp
    guest: bool = False  # a guest on one of its hosts, as of ...
    guest_stamp: int = -1  # ... this cluster stamp


def decide(view: DynamicView, params: Params) -> Plan:
    """One SD-Policy pass (module docstring)."""
    cluster, now = view.cluster, view.now
    running = cluster.running
    memory = view.memo if view.memo is not None else _Memory(guests={}, shapes={})
    guests = memory.guests  # copied before a change: the memo of the last pass stays as it was
    resizes: list[Shrink | Expand] = []
    starts: list[Job | Start] = []

    # -- 5. end of sharing (when a guest or a mate ended) ------------------------------------
    pending = view.pending
    if any(g not in pending and (g not in running or any(m not in running for m, _ in s.mates))
           for g, s in guests.items()):
        guests = dict(guests)
    for g in sorted(guests) if guests is not memory.guests else ():
        info = guests[g]
        if g in pending:
            continue
        if g not in running:  # the guest ended: the mates get back what they lost
            for mate, lost in info.mates:
                if len(lost) and mate in running and cluster.resizable(mate):
                    resizes.append(Expand(job_id=mate, pes=lost))
            del guests[g]
            continue
        alive = tuple((m, lost) for m, lost in info.mates if m in running)
        if len(alive) < len(info.mates) and params.expand_guest:
            pes = _regain(cluster, g, info, running)
            if len(pes):
                resizes.append(Expand(job_id=g, pes=pes))
        guests[g] = Sharing(mates=alive, need=info.need) if alive else info
        if not alive:
            del guests[g]

    # -- the walk: static trial, then malleable trial, job by job --------------------------
    if not view.queue:
        return Plan(resizes=tuple(resizes), memo=memory.with_guests(guests))
    ends = sorted(cluster.running_ends())
    free = cluster.free_hosts
    if resizes:  # free hosts that expands of this pass take: their job frees them at its end
        mask = cluster.free_mask()
        gain: dict[int, int] = {}
        for r in resizes:
            hosts = sorted_counts(r.pes.to_array() // cluster.n_cores)[0]
            gain[r.job_id] = gain.get(r.job_id, 0) + int(np.count_nonzero(mask[hosts]))
        free -= sum(gain.values())
        ends = [(e, j, n + gain.get(j, 0), s) for e, j, n, s in ends]
    busy = cluster.guest_mask()
    # mates getting PEs back in this pass are candidates again only at the next pass (the
    # scheduler runs one at the same instant once the expands are applied)
    in_sharing = memory.with_guests(guests).sharing
    if resizes:
        in_sharing = in_sharing.union(r.job_id for r in resizes)
    gran = params.granularity
    if gran == "auto":
        gran = "core" if cluster.n_cores > 1 else "host"
    cands = _candidates(cluster, now, params, in_sharing, busy, gran, memory.shapes)
    cutoff = (params.max_slowdown if params.cutoff == "fixed" else
              dyn_avg_sd(running) if params.cutoff == "dynamic" else math.inf)
    weights = {c.w for c in cands}
    reach = _reach_of(memory, cands, cutoff, params.max_mates)
    queue, index, keys = view.queue, view.queue_index, view.queue_keys
    base = 0  # the position in view.queue of queue[0] (a malleable start cuts the queue)
    while True:
        pv = PassView(now=now, n_hosts=cluster.n_hosts, free=free, queue=queue,
                      running=tuple(ends))
        ep = easy.plan(pv)
        static = {j.id for j in ep.starts}
        chosen = None
        stop = len(queue)
        if cands:  # the jobs that may pass a trial (`_reach`): the others would fail it
            for i in _tried(reach, index, keys, base, now):
                job = view.queue[i]
                if job.id in static or not job.resizable:
                    continue
                chosen = _malleable(job, cands, weights, cluster, now, params, cutoff, gran,
                                    pv, ep)
                if chosen is not None:
                    stop = i - base
                    break
        # commit the static starts before the malleable one (all of them if there was none;
        # EASY lists its starts in queue order)
        if chosen is not None and ep.starts:
            pos = {j.id: k for k, j in enumerate(queue)}
            committed = [j for j in ep.starts if pos[j.id] < stop]
        else:
            committed = ep.starts
        for job in committed:
            starts.append(job)
            free -= job.hosts
            ends.append((now + max(job.walltime, 1), job.id, job.hosts, now))
        if chosen is None:
            break
        queue, base = queue[stop + 1:], base + stop + 1
        start, shrinks, sharing, mates = chosen
        starts.append(start)
        resizes.extend(shrinks)
        if guests is memory.guests:
            guests = dict(guests)
        guests[start.job.id] = sharing
        busy = busy.copy()
        for m in mates:  # mates' estimated ends moved: the profile sees them later
            cands = [c for c in cands if c.jid != m.jid]
            busy[m.hosts] = True
            new_end = m.end + start.job.walltime
            ends = [(new_end if j == m.jid else e, j, n, s) for e, j, n, s in ends]
        ends.sort()
        cands = [c for c in cands if not busy[c.hosts].any()]  # the guest's free PEs too
        weights = {c.w for c in cands}
        reach = _reach_of(memory, cands, cutoff, params.max_mates)
        if not queue:
            break
    return Plan(starts=tuple(starts), resizes=tuple(resizes),
                memo=memory.with_guests(guests),
                reservations=ep.reservations if chosen is None else {})


def _candidates(cluster, now: int, params: Params, in_sharing: set[int], busy: np.ndarray,
                gran: str, shapes: dict[int, _Cand]) -> list[_Cand]:
    """Running jobs that may become mates this pass (module docstring, step 2, without the
    cut-off, which depends on the guest); `busy`: the hosts with a guest. `shapes` keeps
    each job's `_Cand` while its `Allocation` object is the same (a new one whenever its
    PEs or estimated end change)."""
    out = []
    running = cluster.running
    if len(shapes) > 2 * len(running) + 64:  # forget the jobs that ended
        for jid in [j for j in shapes if j not in running]:
            del shapes[jid]
    any_busy = bool(busy.any())
    stamp = cluster.stamp
    for jid, a in running.items():  # (any order: candidates are ranked by penalty and id)
        # not outlived its estimate, not started at this instant (`overran`, inlined)
        if not a.start < now < a.estimated_end or jid in in_sharing:
            continue
        cand = shapes.get(jid)
        if cand is None or cand.alloc is not a:
            if not a.job.resizable:
                continue
            cand = shapes[jid] = _shape(cluster, jid, a, params, gran)
        if not cand.can or not cluster.resizable(jid):
            continue  # some host cannot give a PE; or it lent or borrowed hosts (RCA)
        if any_busy:  # a guest on one of its hosts? (kept while no PE changes hands)
            if cand.guest_stamp != stamp:
                cand.guest = bool(busy[cand.hosts].any())
                cand.guest_stamp = stamp
            if cand.guest:
                continue
        out.append(cand)
    return out


def _shape(cluster, jid: int, a, params: Params, gran: str) -> _Cand:
    """The `_Cand` of running job `jid` with allocation `a` (`_candidates`)."""
    c = cluster.n_cores
    give = int(params.sharing_factor * c)
    if c > 1:
        can = min(give, cluster.min_host_pes(jid) - 1) >= 1
    else:
        can = int(params.sharing_factor * len(a.hosts)) >= 1
    hosts, counts = cluster.host_counts(jid)
    w = len(hosts) if gran == "core" else int(params.sharing_factor * len(hosts))
    # the most PEs a guest can get on every host (`_give` with every other core free: a
    # bound of it that depends on the allocation only): ``c - u + max(min(give, u - 1), 0)``
    # for a host where the job has u >= 1 PEs, which never grows with u: the fullest host's
    if gran == "core":
        u = int(counts.max())
        most = c - u + max(min(give, u - 1), 0)
    else:
        most = c
    job = a.job
    return _Cand(jid=jid, alloc=a, hosts=hosts, counts=counts, end=a.estimated_end, w=w,
                 a=a.estimated_end - job.submit, o=max(job.walltime, 1), can=can, most=most,
                 ratio=math.inf if most >= c else -math.inf if most <= 0 else most / (c - most))


def _reach_of(memory: _Memory, cands: list[_Cand], cutoff: float, max_mates: int):
    """`_reach` of `cands`, from the memory while the candidates are the same objects (an
    allocation that changes makes a new one, `_candidates`) and the cut-off is the same."""
    ids = tuple(map(id, cands))
    hit = memory.reach[0]
    if hit is not None and hit[0] == ids and hit[1] == cutoff:
        return hit[3]
    out = _reach(cands, cutoff, max_mates)
    memory.reach[0] = (ids, cutoff, cands, out)  # (`cands` keeps the ids' objects alive)
    return out


def _reach(cands: list[_Cand], cutoff: float, max_mates: int):
    """Walltime bounds per guest width: a job wider than every key, or longer than its bound,
    fails its trial, so it is not tried (the trial decides for the others).

    For each width that 1 or 2 candidates' weights sum to: the longest guest walltime for
    which they all stay under the cut-off (``p = (a + g) / o <= cutoff`` iff ``g <= cutoff o -
    a``); and, for guests needing every core of their hosts (core granularity), the data to
    bound them by ending inside the mates too (`_full_bound`, which depends on the time).
    Bounds carry a tick and 1e-9 of slack against rounding. None when more than 2 mates are
    allowed (no bound then); ``(bound per width, [(bound, end, ratio), ...] per width)``
    otherwise: each 1 or 2 candidates of that width, with their bound, earliest end and
    least `ratio`."""
    if max_mates > 2:
        return None
    inf = math.inf
    every: dict[int, float] = {}
    rows: dict[int, list[tuple[float, int, float]]] = {}
    seen = []
    for m in cands:
        g = cutoff * m.o - m.a
        if g != inf:
            g += max(1.0, abs(g) * 1e-9)
        end, r, w = m.end, m.ratio, m.w
        if g > every.get(w, -inf):
            every[w] = g
        rows.setdefault(w, []).append((g, end, r))
        if max_mates < 2:
            continue
        for w2, g2, end2, r2 in seen:
            pair = w + w2
            both = g if g < g2 else g2
            if both > every.get(pair, -inf):
                every[pair] = both
            rows.setdefault(pair, []).append((both, end if end < end2 else end2,
                                              r if r < r2 else r2))
        seen.append((w, g, end, r))
    return every, rows


def _full_bound(rows: list[tuple[float, int, float]], now: int) -> float:
    """The bound of a width for guests needing every core of their hosts (`_reach`): such
    a guest gets at most `most` PEs a host of `c` (a bound of `_give`), so it runs at least
    ``g c / most`` and ends inside mates ending at `end` only if ``g (c - most) / most <= end
    - now``; and it stays under the cut-off."""
    best = -math.inf
    for g, end, ratio in rows:
        f = _inside(end - now, ratio)
        if g < f:
            f = g
        if f > best:
            best = f
    return best


def _inside(rem: int, ratio: float) -> float:
    """The longest walltime of a guest needing every core of its hosts that can end inside
    mates ending `rem` ticks from now (> 0) when it gets at most `most` PEs a host of `c`,
    ``ratio = most / (c - most)`` (infinite when ``most >= c``, minus infinity when ``most
    <= 0``; `_reach`), with a tick and 1e-9 of slack."""
    g = rem * ratio
    return g + max(1.0, g * 1e-9)


def _tried(reach, index, keys, base: int, now: int):
    """Positions in the view's queue (ascending, from `base` on) of the jobs whose walltime
    is within their width's bound (`_reach`; `_full_bound` for jobs needing every core of
    their hosts, at `now`): only they may pass a trial (all of them when there is no bound).
    From the queue index (`DynamicView.queue_index`): O(bound widths x log queue + jobs
    found)."""
    if reach is None:
        return range(base, len(keys))
    every, rows = reach
    found = []
    get = index.get
    for w, g in every.items():
        hit = get((w, False))
        if hit is not None:
            found += hit[1][:bisect_right(hit[0], g)]
        hit = get((w, True))
        if hit is not None and hit[0][0] <= g:  # (the full bound is never above g)
            found += hit[1][:bisect_right(hit[0], _full_bound(rows[w], now))]
    if not found:
        return ()
    return [i for i in sorted(bisect_left(keys, k) for k in found) if i >= base]


def _regain(cluster, g: int, info: Sharing, running) -> IndexSet:
    """Guest `g`'s PEs to expand onto when some of its mates ended: on the hosts those mates
    shared with it, the free PEs (lowest cores first) up to its need per host."""
    c = cluster.n_cores
    gone = [lost.to_array() for m, lost in info.mates if m not in running]
    hosts = np.unique(np.concatenate(gone) // c) if gone else np.zeros(0, dtype=np.int64)
    if not len(hosts):
        return EMPTY
    need_h, need_n = info.need
    pos = np.minimum(np.searchsorted(need_h, hosts), len(need_h) - 1)
    need = np.where(need_h[pos] == hosts, need_n[pos], 0)
    users, promised = cluster.pe_rows(hosts)
    free = (users < 0) & (promised < 0)
    want = need - (users == g).sum(axis=1)
    pick = free & (np.cumsum(free, axis=1) <= want[:, None])
    row, col = np.nonzero(pick)  # row-major over ascending hosts: sorted PEs
    return IndexSet.from_sorted(hosts[row] * c + col)


def _static_end(job: Job, pv: PassView, ep: Plan) -> int:
    """EASY's earliest start for `job` + its walltime (its reservation if it has one)."""
    now = pv.now
    if job.id in ep.reservations:
        return ep.reservations[job.id] + job.walltime
    prof = Profile(now, pv.free - sum(j.hosts for j in ep.starts),
                   [(expected_end(e, now), h) for e, _, h, _ in pv.running]
                   + [(now + max(j.walltime, 1), j.hosts) for j in ep.starts])
    jobs = {j.id: j for j in pv.queue}
    for jid, t in sorted(ep.reservations.items(), key=lambda x: (x[1], x[0])):
        r = jobs[jid]
        prof.reserve(t, r.walltime, r.hosts)
    return prof.earliest_fit(job.hosts, job.walltime, now) + job.walltime


def _malleable(job: Job, cands: list[_Cand], weights: set[int], cluster, now: int,
               params: Params, cutoff: float, gran: str, pv: PassView, ep: Plan):
    """The malleable trial of `job` (module docstring, steps 1-4): ``(Start, shrinks,
    Sharing, mates)`` or None. `weights`: the candidates' weights.

    The combinations of the right weight are ranked by the objective first; each is then
    checked in that order on PE counts per host (`_shares`, O(its hosts) numpy), and only the
    first that passes every rule is laid out on PEs: the same choice as checking all of them
    and keeping the best."""
    big_w = job.hosts
    if params.max_mates == 1:
        usable = {big_w} & weights
    elif params.max_mates == 2:  # a weight is useful alone or with a partner
        usable = {w for w in weights if w == big_w or (big_w - w) in weights}
    else:
        usable = {w for w in weights if w <= big_w}
    if not usable:
        return None
    g = job.walltime
    scored = []
    for cand in cands:
        if cand.w not in usable:
            continue
        p = (cand.a + g) / cand.o  # `penalty`, inlined: this loop is the policy's hot spot
        if p > cutoff:
            continue
        scored.append((p, cand.jid, cand.w, cand))
    if not scored:
        return None
    scored.sort(key=lambda x: (x[0], x[1]))
    nodes = params.weighting == "nodes"
    ranked = []
    for k in range(1, params.max_mates + 1):
        for combo in combinations(scored, k):
            if sum(x[2] for x in combo) != big_w:
                continue
            obj = sum(x[0] * (x[2] if nodes else 1) for x in combo)
            ranked.append(((obj, tuple(sorted(x[1] for x in combo))), combo))
    if not ranked:
        return None
    static_end = None  # EASY's end for the job, computed when a combination first needs it
    ranked.sort(key=lambda r: r[0])
    least = job.pes // job.hosts  # the guest's fewest PEs needed on a host
    for _, combo in ranked:
        mates = [x[3] for x in combo]
        low = job.walltime  # a lower bound of its stretched walltime (it is never shorter)
        if gran == "core":
            most = min(_give(m, cluster, params.sharing_factor) for m in mates)
            if most < least:
                low = -(-job.walltime * least // most)
        if any(now + low > m.end + job.walltime for m in mates):
            continue  # as `_shares` would find: cheap checks first
        if params.compare_static:
            if static_end is None:
                static_end = _static_end(job, pv, ep)
                if now + job.walltime >= static_end:
                    return None  # no guest is faster than its walltime
            if now + low >= static_end:
                continue
        counted = _shares(job, mates, cluster, params.sharing_factor, gran)
        if counted is None:
            continue
        gw = counted[0]
        if any(now + gw > m.end + job.walltime for m in mates):
            continue  # the guest must end inside its mates' allocations
        if static_end is not None and now + gw >= static_end:
            continue  # waiting for a static start ends earlier (or as early)
        if params.protect_reservation and not _keeps_head(pv, ep, mates, job):
            continue
        pes, stolen, owners, need, gw = _layout(job, mates, cluster, gran, counted)
        # a mate whose idle cores are enough gives nothing: no shrink, no longer walltime
        shrinks = [Shrink(job_id=m.jid, pes=stolen[m.jid], for_job=job.id,
                          limit=m.alloc.estimated_end + job.walltime) for m in mates
                   if len(stolen[m.jid])]
        start = Start(job=job, pes=pes, walltime=gw,
                      owners=tuple((m.jid, owners[m.jid]) for m in mates))
        sharing = Sharing(mates=tuple((m.jid, stolen[m.jid]) for m in mates), need=need)
        return start, shrinks, sharing, mates
    return None


def _shares(job: Job, mates: list[_Cand], cluster, sf: float, gran: str):
    """What `_layout` decides, on PE counts per host only: ``(stretched walltime, hosts
    ascending, mate index of each, PEs needed, free PEs taken, mate PEs taken, guest PEs,
    the mate's PEs)`` (arrays over the hosts), or None when a host cannot take its share or a minimum would be broken."""
    c = cluster.n_cores
    if gran == "core":
        parts = [(m.hosts, m.counts) for m in mates]
    else:  # whole hosts: the highest of each mate's, never its master's
        parts = []
        for m in mates:
            keep = m.hosts != m.alloc.master // c
            k = int(sf * len(m.hosts))
            hs, cs = m.hosts[keep], m.counts[keep]
            parts.append((hs[len(hs) - k:], cs[len(cs) - k:]) if k else (hs[:0], cs[:0]))
    if sum(len(h) for h, _ in parts) != job.hosts:
        return None
    need = _spread(job.pes, job.hosts)
    if need[0] > c:
        return None
    if len(parts) == 1:
        hosts, mine = parts[0]
        which = np.zeros(len(hosts), dtype=np.int64)
    else:
        hosts = np.concatenate([h for h, _ in parts])
        order = np.argsort(hosts, kind="stable")
        hosts = hosts[order]
        mine = np.concatenate([m for _, m in parts])[order]
        which = np.repeat(np.arange(len(parts)), [len(h) for h, _ in parts])[order]
    free = c - cluster.used_pes[hosts]
    if gran == "core":
        theirs = mine.copy()
        for i, m in enumerate(mates):  # never the master's PE
            theirs[(hosts == m.alloc.master // c) & (which == i)] -= 1
        take_free = np.minimum(free, need)
        steal = np.maximum(np.minimum(need - take_free, np.minimum(int(sf * c), mine - 1)), 0)
        stolen = np.minimum(steal, theirs)
        got = take_free + stolen
    else:  # the host moves to the guest: every PE of the mate there
        take_free = np.minimum(free, np.maximum(0, need - mine))
        got = take_free + np.minimum(mine, need - take_free)
        stolen = mine
    if not got.all() or int(got.sum()) < job.min_pes:
        return None
    lost = np.bincount(which, weights=stolen, minlength=len(mates))
    if any(m.alloc.pes - int(lost[i]) < m.alloc.job.min_pes for i, m in enumerate(mates)):
        return None  # a mate shrunk below its own minimum
    ref = len(need) * int(need.min())
    cur = len(got) * int(got.min())
    return -(-job.walltime * ref // cur), hosts, which, need, take_free, stolen, got, mine


def _give(m: _Cand, cluster, sf: float) -> int:
    """The most PEs a guest can get on every host of mate `m` at core granularity (the
    fewest, over its hosts, of its free PEs + what the mate may give): no host gets more in
    `_shares`, so ``need_min / give`` bounds the guest's stretch from below."""
    stamp = cluster.stamp  # PEs of its hosts change hands only with a new stamp
    if m.give_stamp != stamp:
        c = cluster.n_cores
        free = c - cluster.used_pes[m.hosts]
        m.give = int((free + np.maximum(np.minimum(int(sf * c), m.counts - 1), 0)).min())
        m.give_stamp = stamp
    return m.give


def _spread(pes: int, hosts: int) -> np.ndarray:
    """`cosim.platform.allocation.spread_pes` as an array (PEs per host, larger first)."""
    base, extra = divmod(pes, hosts)
    need = np.full(hosts, base, dtype=np.int64)
    need[:extra] += 1
    return need


def _pick_highest(mask: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per row, the `n` highest True columns of `mask` (a new mask)."""
    from_top = np.cumsum(mask[:, ::-1], axis=1, dtype=np.int8)[:, ::-1]  # True cells at/right
    return mask & (from_top <= n[:, None])


def _layout(job: Job, mates: list[_Cand], cluster, gran: str, counted: tuple):
    """The guest's PEs on its mates' hosts, as `_shares` counted them: ``(pes, stolen per
    mate, guest PEs per mate, (hosts, need per host), stretched walltime)``; on each host
    the highest free cores and (core granularity) the mate's highest cores but its master,
    or (host granularity) every PE of the mate there (vectorised over the hosts)."""
    gw, hosts, which, need, take_free, stolen, counted_got, mine = counted
    c = cluster.n_cores
    hosts.flags.writeable = need.flags.writeable = False
    if gran == "core" and all(_regular(m, cluster) for m in mates):
        return (*_regular_layout(mates, c, hosts, which, take_free, stolen, mine),
                (hosts, need), gw)
    mate_ids = np.array([m.jid for m in mates], dtype=np.int64)
    users, promised = cluster.pe_rows(hosts)
    free = (users < 0) & (promised < 0)
    theirs = users == (mate_ids[which] if len(mates) > 1 else mate_ids[0])[..., None]
    if gran == "core":
        for i, m in enumerate(mates):  # never the master's PE
            h, core = divmod(m.alloc.master, c)
            theirs[(hosts == h) & (which == i), core] = False
        take = _pick_highest(theirs, stolen)
        guest = _pick_highest(free, take_free) | take
    else:  # the host moves to the guest: every PE of the mate there
        take = theirs
        guest = _pick_highest(free, take_free) | _pick_highest(take, need - take_free)
    if not np.array_equal(guest.sum(axis=1), counted_got):
        raise RuntimeError(f"SD-Policy: job {job.id}'s shares counted per host and laid out "
                           "on PEs disagree (a bug)")
    row, col = np.nonzero(guest)  # row-major over ascending hosts: sorted PEs
    guest_pe = hosts[row] * c + col
    pes = IndexSet.from_sorted(guest_pe)
    srow, scol = np.nonzero(take)
    stolen_pe = hosts[srow] * c + scol
    if len(mates) == 1:
        stolen_by = {mates[0].jid: IndexSet.from_sorted(stolen_pe)}
        owners = {mates[0].jid: pes}
    else:
        stolen_by = {m.jid: IndexSet.from_sorted(stolen_pe[which[srow] == i])
                     for i, m in enumerate(mates)}
        owners = {m.jid: IndexSet.from_sorted(guest_pe[which[row] == i])
                  for i, m in enumerate(mates)}
    return (pes, stolen_by, owners, (hosts, need), gw)


def _regular(m: _Cand, cluster) -> bool:
    """True if mate `m` holds cores ``0 .. k-1`` of each of its hosts (k its PEs there), its
    master PE is a core 0, and nobody else uses or is promised a PE on its hosts: then the
    free cores of a host are the top ones and its highest cores never include its master
    (the layout is arithmetic, `_regular_layout`)."""
    c = cluster.n_cores
    if m.alloc.master % c or not np.array_equal(cluster.used_pes[m.hosts], m.counts):
        return False
    held = cluster.pes_of(m.jid)
    return held.n_runs <= len(m.hosts) and held == IndexSet.from_run_arrays(m.hosts * c,
                                                                             m.counts)


def _regular_layout(mates: list[_Cand], c: int, hosts: np.ndarray, which: np.ndarray,
                    take_free: np.ndarray, stolen: np.ndarray, mine: np.ndarray):
    """`_layout` at core granularity when every mate is `_regular`: on each host the guest
    takes the top `take_free` cores (free) and the `stolen` cores below the mate's count
    (the mate's highest), as runs, without a row of cores per host."""
    base = hosts * c
    steal_first = base + mine - stolen
    pes = IndexSet.from_run_arrays(
        np.stack([steal_first, base + c - take_free], axis=1).ravel(),
        np.stack([stolen, take_free], axis=1).ravel())
    stolen_by, owners = {}, {}
    for i, m in enumerate(mates):
        mask = which == i if len(mates) > 1 else slice(None)
        stolen_by[m.jid] = IndexSet.from_run_arrays(steal_first[mask], stolen[mask])
        owners[m.jid] = pes if len(mates) == 1 else IndexSet.from_run_arrays(
            np.stack([steal_first[mask], (base + c - take_free)[mask]], axis=1).ravel(),
            np.stack([stolen[mask], take_free[mask]], axis=1).ravel())
    return pes, stolen_by, owners


def _keeps_head(pv: PassView, ep: Plan, mates: list[_Cand], job: Job) -> bool:
    """True if moving the mates' ends does not delay the EASY head's reservation."""
    head = next((j for j in pv.queue if j.id in ep.reservations and j.id != job.id), None)
    if head is None:
        return True
    moved = {m.jid: m.end + job.walltime for m in mates}
    running = tuple(sorted((moved.get(j, e), j, n, s) for e, j, n, s in pv.running))
    view = PassView(now=pv.now, n_hosts=pv.n_hosts, free=pv.free, queue=pv.queue,
                    running=running)
    free = pv.free - sum(j.hosts for j in ep.starts)
    when, _ = easy.shadow(view, list(ep.starts), free, head.hosts)
    return when <= ep.reservations[head.id]


POLICY = DynamicPolicy(name="sd", summary="SD-Policy (D'Amico et al.): start malleable jobs "
                       "on shrunk mates when it lowers their slowdown", family="malleable",
                       replaces_backfill=True, params=Params, decide=decide)
