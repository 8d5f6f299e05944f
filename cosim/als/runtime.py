"""The master-worker runtime of one app: a DLS technique scheduling a loop over a job's PEs.

Model (DESIGN §5). The master lives on the job's first PE (rank 0) and costs ``overhead_s`` per
chunk, nothing otherwise; every PE, rank 0 included, runs one worker. A worker sends a request
(``request_bytes``) to the master, the master serves requests one at a time in arrival order
(ties by rank), asks the technique for a chunk size, and sends the assignment
(``assign_bytes``); the worker computes the chunk as one block of
``sum(cost[first:first+size]) / (speed x availability)`` seconds, then asks again. Messages
take the platform's time (0 inside a host). Iterations are handed out in order, so a chunk is
``[N - R, N - R + size)``. When nothing is left the master answers "done": the PE is idle from
the moment that answer arrives (its ``done`` tick, the RCA yield point of its host once all of
the host's PEs are done). Adaptive techniques get the measurements of a PE's previous chunk
just before its next request is served.

Time is integer ticks; a chunk lasts ``round(flop * (1e9 / (speed * availability)))`` ticks
(nearest, ties to even: the clock's rule, inlined). Events are requests, kept in one heap of integers
``(arrival_tick << 20) | rank``: popping gives arrival order with ties by rank, without
tuples. Since every new request arrives after the one being served, heap order is also serve
order. `advance(until)` serves every request whose serve tick is before `until`, so commands
stamped `until` apply to requests served at or after it.

Malleability at chunk boundaries: `remove` makes a PE stop asking: every request of it served at
or after the command's tick is answered "no more work" like a request at the end of the
loop (so a release, like every "done", comes at least the shortest assignment time after a
serve: what the ALS's exact promises rely on); a PE already idle (answered "done" by a serve
before the command's tick) is released at the command's tick, or when that answer reaches it
if later. Every release is logged in `release_events`; a PE's ``done`` tick is its release
tick (a release answer is also its entry in `done_events`; an idle PE keeps the entry of its
"done" answer). `add` makes new PEs request from the command's tick (their first request
arrives at the tick plus their request message time). On either change the technique restarts
on the unscheduled iterations with the new set of active PEs: a new planner for ``R`` (the
iterations not yet handed out) and the active PEs; the measurements an adaptive planner had
gathered are dropped, and each PE busy at the change reports its chunk in flight to the new
planner with its next request. ``timesteps > 1`` repeats the loop: when the master
has answered every active PE "done", it starts the next step by sending each PE a start
message (assignment size), and the technique's ``end_step`` runs (AWF adapts there).

Two loops, one result: `_advance_python` is the reference; `_advance_compiled` hands the plain
chunk serves of non-adaptive techniques on constant-availability PEs to the C loop
(`cosim/als/_serve.c`, built by setup.py when a compiler is there) and every other request
(removed PE, "done", a new step) to one turn of the reference loop. Both compute the same
ticks operation for operation (tests/test_kernel.py).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cosim.als.availability import Availability, availabilities
from cosim.als.techniques import Context, Technique, make_params
from cosim.core.clock import TICKS_PER_SECOND, duration_problem
from cosim.errors import InputError
from cosim.workload.costs import TaskCosts

try:  # the compiled loop (setup.py builds it when it can); the Python loop is the reference
    from cosim.als import _serve
except ImportError:  # pragma: no cover - exercised where no compiler was available
    _serve = None

__all__ = ["Comm", "ChunkTable", "LoopResult", "LoopRun"]

_SHIFT = 20
_MASK = (1 << _SHIFT) - 1
_NEVER = 1 << 62
# chunks after which the prefix sums are turned into lists: indexing a list is ~3x faster than
# a numpy array, but converting 262,144 floats costs ~5 ms, worth it only for long runs
_LIST_AFTER = 4096
# the compiled loop's answers (cosim/als/_serve.c) and the rows of its first chunk table block
# (each next one twice all before it, up to _BLOCK_MAX)
_STOPPED, _SPECIAL, _FULL, _EMPTY, _WIDE = range(5)
_BLOCK_ROWS = 256
_BLOCK_MAX = 1 << 18

#: which master-worker loop `LoopRun` runs by default: "compiled" when the C module was built
#: (setup.py), else "python"; both give identical results
LOOP_KERNEL = "compiled" if _serve is not None else "python"


@dataclass(frozen=True, slots=True, kw_only=True)
class Comm:
    """Message sizes and master overhead of the master-worker protocol."""

    request_bytes: int = 64
    assign_bytes: int = 64
    overhead_s: float = 0.0

    def __post_init__(self) -> None:
        if self.request_bytes < 0 or self.assign_bytes < 0:
            raise ValueError("message sizes must be >= 0")
        problem = duration_problem(self.overhead_s)
        if problem:
            raise ValueError(f"overhead_s {problem}")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ChunkTable:
    """One row per chunk, in assignment order; ticks are absolute simulated times.

    rank: the PE's rank in the job; first, size: the iterations; t_assign: the master sends
    the assignment (its overhead ends); t_start: the worker receives it and starts computing;
    t_end: the chunk is done (the worker sends its next request). step: the time step.
    """

    rank: np.ndarray
    first: np.ndarray
    size: np.ndarray
    t_assign: np.ndarray
    t_start: np.ndarray
    t_end: np.ndarray
    step: np.ndarray

    def __len__(self) -> int:
        return len(self.size)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class LoopResult:
    """Outcome of a loop run. Ticks are absolute; `start` is when the PEs first requested."""

    technique: str
    params: Mapping[str, Any]
    n_tasks: int
    n_pes: int
    timesteps: int
    start: int
    end: int  # tick of the last chunk's end (start if there was none)
    finish: tuple[int, ...]  # per rank: end of its last chunk (start if none)
    done: tuple[int, ...]  # per rank: "no more work" received, or release after removal
    n_chunks: int
    chunks: ChunkTable | None = field(default=None)
    #: global PE index of each rank when the ALS ran the loop (ranks added by an expand
    #: included); empty for a loop run on its own
    pes: tuple[int, ...] = ()

    @property
    def makespan(self) -> int:
        """Ticks from the first request to the end of the last chunk."""
        return self.end - self.start


class LoopRun:
    """One app's loop on a set of PEs, simulated request by request (see module docstring).

    Parameters
    ----------
    costs:
        Per-iteration costs in FLOP (with prefix sums).
    technique, params:
        The DLS technique and its parameters (strings from the CLI or typed values).
    speeds:
        Nominal FLOP/s of each rank's PE.
    request_ticks, assign_ticks:
        Message time of a request from each rank to the master and of an assignment back.
    comm:
        Message sizes (for the context only; times are given) and master overhead.
    availability:
        Per-rank constant factor or `Availability` profile (default: all 1).
    start:
        Tick at which every PE sends its first request.
    timesteps:
        How many times the loop runs (AWF adapts between steps).
    rng:
        The technique's random stream (RND).
    record:
        Keep the chunk table (set False for benchmarks of the event rate only).
    compiled:
        Serve plain chunk requests of non-adaptive techniques in the compiled loop (default:
        when it was built). False runs the Python loop, the reference; results are identical.
    """

    def __init__(
        self,
        *,
        costs: TaskCosts,
        technique: Technique,
        params: Mapping[str, Any] | None = None,
        speeds: Sequence[float],
        request_ticks: Sequence[int],
        assign_ticks: Sequence[int],
        comm: Comm = Comm(),
        availability: Sequence[float | Availability] | None = None,
        start: int = 0,
        timesteps: int = 1,
        rng: np.random.Generator | None = None,
        record: bool = True,
        compiled: bool | None = None,
    ) -> None:
        p = len(speeds)
        if p < 1:
            raise InputError("a loop needs at least one PE", field="hosts")
        if p > _MASK:
            raise InputError(f"at most {_MASK} PEs per app", field="hosts")
        if len(request_ticks) != p or len(assign_ticks) != p:
            raise ValueError("one request and one assignment time per PE")
        if any(s <= 0 for s in speeds):
            raise InputError("PE speeds must be > 0", field="speed")
        if timesteps < 1:
            raise InputError("timesteps must be >= 1", field="timesteps")
        self.technique = technique
        self.params = make_params(technique, params or {})
        self.costs = costs
        self.comm = comm
        self.timesteps = timesteps
        self.start = start
        self._rng = rng
        self._record = record
        self._n = costs.n
        # numpy arrays at first; lists (faster to index) once a run proves long (_LIST_AFTER)
        self._pref: np.ndarray | list[float] = costs.prefix
        self._pref_sq: np.ndarray | list[float] = costs.prefix_sq
        self._speeds = [float(s) for s in speeds]
        self._req = [int(t) for t in request_ticks]
        self._asg = [int(t) for t in assign_ticks]
        self._avail = availabilities(availability, p)
        self._ovh = round(comm.overhead_s * TICKS_PER_SECOND)
        # ticks per FLOP for constant availability; None sends the rank to Availability.finish
        self._tpf: list[float | None] = []
        for s, a in zip(self._speeds, self._avail):
            c = a.constant
            self._tpf.append(TICKS_PER_SECOND / (s * c) if c is not None else None)
        self._active = list(range(p))
        self._removed_at: list[int] = [_NEVER] * p
        self._heap = [((start + self._req[r]) << _SHIFT) | r for r in range(p)]
        heapq.heapify(self._heap)
        self._mfree = start
        self._remaining = self._n
        self._step = 0
        self._waiting = 0  # active ranks answered "done" in this step
        self._finish = [start] * p
        self._done: list[int | None] = [None] * p
        self._last: list[tuple[int, int, int, int, float] | None] = [None] * p
        self._cols: tuple[list[int], ...] = tuple([] for _ in range(7))
        #: (tick, rank) of every PE told "no more work" (or released) in the last step, in the
        #: order the runtime learnt them: the yield points an ALS turns into facts
        self.done_events: list[tuple[int, int]] = []
        #: (tick, rank) of every removed PE's release, in the order the runtime learnt them
        self.release_events: list[tuple[int, int]] = []
        self._stop_at_done = False
        self._n_chunks = 0
        self._served = -1  # serve tick of the last request served (a chunk, "done" or release)
        self._planner = self._new_planner(self._n)
        if compiled and _serve is None:
            raise InputError("the compiled loop was not built (no C compiler at install?)",
                             field="kernel")
        self._compiled = _serve is not None and compiled is not False
        # the compiled loop's per-rank arrays (None: rebuild; False: a rank needs Python)
        self._kc: tuple[np.ndarray, ...] | bool | None = None
        self._kmax: dict[int, float] = {}  # heaviest FLOP of k consecutive iterations
        self._rate: float | None = None  # for done_bound (None: to compute)
        self._removing: list[int] = []  # removed ranks, maybe not yet released
        # chunk table rows written by the compiled loop: finished blocks, then the open one
        self._segs: list[np.ndarray] = []
        self._blk: np.ndarray | None = None
        self._blk_pos = 0

    # -- construction helpers -------------------------------------------------------------

    def _context(self, n: int) -> Context:
        ranks = tuple(self._active)
        speeds = tuple(self._speeds[r] for r in ranks)
        mean_speed = sum(speeds) / len(speeds)
        rtt = [self._req[r] + self._asg[r] for r in ranks]
        return Context(
            n=n,
            ranks=ranks,
            speeds=speeds,
            mean_s=self.costs.mean / mean_speed,
            std_s=self.costs.std / mean_speed,
            overhead_s=self.comm.overhead_s + sum(rtt) / len(rtt) / TICKS_PER_SECOND,
            rng=self._rng,
        )

    def _new_planner(self, n: int):
        try:
            return self.technique.make(self.params, self._context(max(n, 1)))
        except ValueError as exc:
            raise InputError(str(exc), field=self.technique.name) from None

    @property
    def speeds(self) -> tuple[float, ...]:
        """Nominal FLOP/s of every rank's PE (ranks added later included)."""
        return tuple(self._speeds)

    # -- malleability ---------------------------------------------------------------------

    def add(self, at: int, speeds: Sequence[float], request_ticks: Sequence[int],
            assign_ticks: Sequence[int],
            availability: Sequence[float | Availability] | None = None) -> list[int]:
        """New PEs join at tick `at` (each sends its first request then, arriving after its
        request message time); returns their ranks (appended after the existing ones)."""
        self.advance(at)
        new = []
        for s, rq, asg, av in zip(speeds, request_ticks, assign_ticks,
                                  availabilities(availability, len(speeds)), strict=True):
            r = len(self._speeds)
            if r > _MASK:
                raise InputError(f"at most {_MASK} PEs per app", field="hosts")
            self._speeds.append(float(s))
            self._req.append(int(rq))
            self._asg.append(int(asg))
            self._avail.append(av)
            c = av.constant
            self._tpf.append(TICKS_PER_SECOND / (s * c) if c is not None else None)
            self._removed_at.append(_NEVER)
            self._finish.append(at)
            self._done.append(None)
            self._last.append(None)
            self._active.append(r)
            heapq.heappush(self._heap, ((at + int(rq)) << _SHIFT) | r)
            new.append(r)
        self._kc = self._rate = None
        self._planner = self._new_planner(self._remaining)
        return new

    def remove(self, at: int, ranks: Sequence[int]) -> None:
        """PEs `ranks` stop asking for work from tick `at` (after their current chunk)."""
        self.advance(at)
        gone = set(ranks)
        if not gone <= set(self._active):
            raise InputError(f"ranks {sorted(gone - set(self._active))} are not active",
                             field="ranks")
        if len(gone) == len(self._active) and (self._remaining > 0
                                               or self._step + 1 < self.timesteps):
            raise InputError("cannot remove every PE of an app with work left", field="ranks")
        self._removing.extend(sorted(gone))
        self._rate = None
        for r in sorted(gone):
            self._removed_at[r] = at
            done = self._done[r]
            if done is not None:  # already idle: released now, or when its "done" arrives
                self._waiting -= 1
                self._done[r] = rel = done if done > at else at
                self.release_events.append((rel, r))
                if self._step + 1 < self.timesteps:  # that "done" ended a step, not its
                    self.done_events.append((rel, r))  # part in the loop: the release does
        self._active = [r for r in self._active if r not in gone]
        self._kc = None
        if self._active:  # else the loop is over: no planner is asked again
            self._planner = self._new_planner(self._remaining)
        self._maybe_next_step(at)

    def move(self, dt: int) -> None:
        """Make this run the same loop started `dt` ticks later, advanced as far: every tick
        of its state, chunk table and events moves by `dt`. Exact because nothing in the model
        depends on when a loop starts (message times, chunk lengths and the technique's
        decisions are durations; tests/test_runtime.py checks it for every technique): an app
        simulated before the batch level starts it (`cosim.als.manager`) is moved to its
        start. Needs every PE at a constant availability (a profile is set in absolute time)."""
        if any(a.constant is None for a in self._avail):
            raise ValueError("a loop with a varying availability cannot be moved in time")
        if dt == 0:
            return
        self.start += dt
        step = dt << _SHIFT
        self._heap = [k + step for k in self._heap]  # the same order: every key moves alike
        self._mfree += dt
        self._finish = [f + dt for f in self._finish]
        self._done = [None if d is None else d + dt for d in self._done]
        self._last = [None if x is None else (x[0], x[1] + dt, x[2] + dt, x[3] + dt, x[4])
                      for x in self._last]
        self._removed_at = [t if t == _NEVER else t + dt for t in self._removed_at]
        if self._served >= 0:
            self._served += dt
        self.done_events = [(t + dt, r) for t, r in self.done_events]
        self.release_events = [(t + dt, r) for t, r in self.release_events]
        for c in self._cols[3:6]:
            c[:] = [t + dt for t in c]
        for block in self._segs:
            block[3:6] += dt
        if self._blk is not None:
            self._blk[3:6, :self._blk_pos] += dt
        self._kc = None  # the removal ticks it holds moved

    # -- simulation -----------------------------------------------------------------------

    def next_tick(self) -> int | None:
        """Serve tick of the next request, or None when the loop is over."""
        if not self._heap:
            return None
        t = self._heap[0] >> _SHIFT
        return t if t > self._mfree else self._mfree

    @property
    def served_until(self) -> int:
        """Serve tick of the last request served (-1 before the first): a command stamped
        after it can still be applied to this run; an earlier one needs a replay."""
        return self._served

    @property
    def active_ranks(self) -> tuple[int, ...]:
        """Ranks still asking for work (not removed)."""
        return tuple(self._active)

    def busy_until(self, rank: int) -> int | None:
        """End of `rank`'s last chunk, or None once it has been told "no more work"."""
        return None if self._done[rank] is not None else self._finish[rank]

    def remaining_flop(self) -> float:
        """FLOP not yet handed out, this step and the steps still to come."""
        pref = self.costs.prefix
        n = self._n
        left = float(pref[n] - pref[n - self._remaining])
        return left + float(pref[n]) * (self.timesteps - 1 - self._step)

    @property
    def finished(self) -> bool:
        """True when every PE has been answered "done" or released in the last step."""
        return not self._heap and self._remaining == 0 and self._step == self.timesteps - 1

    def advance(self, until: int, budget: int = _NEVER) -> None:
        """Serve every request whose serve tick is before `until` (at most `budget` chunks)."""
        if self._compiled and not self._planner.adaptive:
            kc = self._kernel_arrays()
            if kc:
                self._advance_compiled(until, budget, kc)
                return
        self._advance_python(until, budget)

    def _kernel_arrays(self) -> tuple[np.ndarray, ...] | bool:
        """Per-rank request and assignment ticks, ticks per FLOP and removal ticks as the
        compiled loop reads them; False when a rank's availability varies (Python loop)."""
        kc = self._kc
        if kc is None:
            if any(f is None for f in self._tpf):
                kc = False
            else:
                kc = (np.array(self._req, dtype=np.int64), np.array(self._asg, dtype=np.int64),
                      np.array(self._tpf, dtype=np.float64),
                      np.array(self._removed_at, dtype=np.int64))
            self._kc = kc
        return kc

    def _advance_compiled(self, until: int, budget: int, kc: tuple[np.ndarray, ...]) -> None:
        """`advance` with plain chunk serves in the compiled loop; the requests it hands
        back (a removed rank's, or one served with nothing left in the step) take one turn of
        the Python loop, which also starts the next time step."""
        req, asg, tpf, removed_at = kc
        stop_at = min(self._n_chunks + budget, _NEVER)
        prefix = self.costs.prefix
        state = [0, 0, 0, 0]
        heap = self._heap
        while heap:
            t = heap[0] >> _SHIFT  # nothing to serve before `until`: no call (it costs O(P))
            if (t if t > self._mfree else self._mfree) >= until or self._n_chunks >= stop_at:
                return
            planner = self._planner
            if planner.adaptive:  # a new step of a technique the compiled loop does not run
                self._advance_python(until, stop_at - self._n_chunks)
                return
            block = self._open_block() if self._record else None
            state[:] = self._mfree, self._remaining, self._n_chunks, self._served
            status, self._blk_pos = _serve.serve(
                self._heap, until, stop_at, state, self._n, self.params.min_chunk, self._ovh,
                planner.fixed_size(), planner.next, self._step, prefix, req, asg, tpf,
                removed_at, self._finish, block, self._blk_pos)
            self._mfree, self._remaining, self._n_chunks, self._served = state
            if status == _FULL:
                self._close_block()
            elif status == _SPECIAL:
                self._advance_python(until, stop_at - self._n_chunks, one=True)
                if self._stop_at_done:
                    return
            elif status == _WIDE:  # ticks too far apart for the compiled heap: one chunk here
                self._advance_python(until, 1)
                if self._stop_at_done:
                    return
            else:
                return

    def _open_block(self) -> np.ndarray:
        """The chunk table block the compiled loop writes to (after any Python rows)."""
        if self._cols[0]:  # rows of the Python loop come first
            self._close_block()
            self._segs.append(np.array(self._cols, dtype=np.int64))
            for c in self._cols:
                c.clear()
        if self._blk is None:
            rows = min(_BLOCK_MAX, max(_BLOCK_ROWS, 2 * sum(b.shape[1] for b in self._segs)))
            self._blk = np.empty((7, rows), dtype=np.int64)
            self._blk_pos = 0
        return self._blk

    def _close_block(self) -> None:
        if self._blk is not None and self._blk_pos:
            self._segs.append(self._blk[:, :self._blk_pos])
        self._blk = None
        self._blk_pos = 0

    def _advance_python(self, until: int, budget: int, one: bool = False) -> None:
        """The reference loop (see `advance`); `one` returns after a request answered
        "no more work" or "done", for the compiled loop."""
        heap = self._heap
        heappop = heapq.heappop
        heapreplace = heapq.heapreplace
        req, asg, tpf, avail, speeds = self._req, self._asg, self._tpf, self._avail, self._speeds
        pref, pref_sq = self._pref, self._pref_sq
        removed_at, finish, last = self._removed_at, self._finish, self._last
        planner = self._planner
        nxt = planner.next
        adaptive = planner.adaptive
        wants_sq = planner.wants_sq
        mc = self.params.min_chunk
        ovh = self._ovh
        n = self._n
        step = self._step
        record = self._record
        c_rank, c_first, c_size, c_assign, c_start, c_end, c_step = self._cols
        mfree = self._mfree
        remaining = self._remaining
        n_chunks = self._n_chunks
        to_lists = _LIST_AFTER if isinstance(pref, np.ndarray) else -1
        stop_at = n_chunks + budget
        served = self._served
        while heap:
            key = heap[0]
            t = key >> _SHIFT
            s = t if t > mfree else mfree
            if s >= until or n_chunks >= stop_at:
                break
            served = s
            rank = key & _MASK
            sent = t - req[rank]
            if s >= removed_at[rank]:  # removed: its request is answered "no more work"
                heappop(heap)
                self._done[rank] = rel = s + asg[rank]
                self.done_events.append((rel, rank))
                self.release_events.append((rel, rank))
                if self._stop_at_done or one:
                    break
                continue
            if remaining == 0:  # nothing left in this step
                heappop(heap)
                self._mfree = mfree
                self._remaining = remaining
                self._n_chunks = n_chunks
                self._served = served
                self._answer_done(rank, s)
                if self._step != step:  # a new step began: reload the step's state
                    return self.advance(until, stop_at - n_chunks)
                if self._stop_at_done or one:
                    return
                continue
            if adaptive:
                prev = last[rank]
                if prev is not None:
                    p_size, p_start, p_end, p_sent, p_sq = prev
                    planner.record(rank, p_size, (p_end - p_start) / TICKS_PER_SECOND,
                                   (p_end - p_sent) / TICKS_PER_SECOND, p_sq)
            size = nxt(rank, remaining)
            if size < mc:
                size = mc
            if size > remaining:
                size = remaining
            first = n - remaining
            remaining -= size
            mfree = s + ovh
            a = mfree + asg[rank]
            if n_chunks == to_lists:
                pref = self._pref = self.costs.prefix.tolist()
                if wants_sq:
                    pref_sq = self._pref_sq = self.costs.prefix_sq.tolist()
            flop = pref[first + size] - pref[first]  # np.float64 (a float) or float
            f = tpf[rank]
            if f is not None:
                end = a + round(flop * f)
            else:
                end = avail[rank].finish(a, flop, speeds[rank])
            finish[rank] = end
            n_chunks += 1
            if adaptive:
                sq = 0.0
                if wants_sq and flop > 0.0:
                    per = (end - a) / TICKS_PER_SECOND / flop
                    sq = (pref_sq[first + size] - pref_sq[first]) * per * per
                last[rank] = (size, a, end, sent, sq)
            if record:
                c_rank.append(rank)
                c_first.append(first)
                c_size.append(size)
                c_assign.append(mfree)
                c_start.append(a)
                c_end.append(end)
                c_step.append(step)
            heapreplace(heap, ((end + req[rank]) << _SHIFT) | rank)
        self._mfree = mfree
        self._remaining = remaining
        self._n_chunks = n_chunks
        self._served = served

    def advance_to_done(self, until: int = _NEVER) -> None:
        """Like `advance`, but return as soon as one PE has been told "no more work"."""
        self._stop_at_done = True
        try:
            self.advance(until)
        finally:
            self._stop_at_done = False

    def done_bound(self) -> int | None:
        """A tick before which no PE can be told "no more work" (nor released), from the
        state alone, without simulating; None when the state gives none worth having.

        For a technique whose every chunk has at most K iterations (`Planner.fixed_size`,
        clamped by ``min_chunk``), on PEs of constant availability with no removal pending:
        the next "no more work" needs the R iterations not yet handed out (W FLOP) to be
        handed out, at a serve s. Every chunk handed out from the next serve tick ``t`` on,
        except each PE's last, is computed between t and s, at no more than the PEs' summed
        rate (FLOP per tick, +0.5 tick of rounding per chunk), and a last chunk is at most the
        heaviest K consecutive iterations (``Kmax``), so ``s >= t + (W - P Kmax) / rate -
        R / 2``. A bound closer than one ``P Kmax`` of work is not worth a round: None.
        """
        t = self.next_tick()
        k = self._planner.fixed_size() if not self._planner.adaptive else 0
        if t is None or k <= 0 or self._remaining == 0:
            return None
        rate = self._rate
        if rate is None:  # FLOP per tick of the active PEs (0: one's availability varies)
            active = self._active
            rate = self._rate = 0.0 if any(self._tpf[r] is None for r in active) else \
                sum(1.0 / self._tpf[r] for r in active)
        if rate == 0.0:
            return None
        if self._removing:  # a removed PE not yet released gets "no more work" soon
            if any(self._done[r] is None for r in self._removing):
                return None
            self._removing = []
        k = max(k, self.params.min_chunk)
        kmax = self._kmax.get(k)
        if kmax is None:
            pref = self.costs.prefix
            kmax = self._kmax[k] = float(np.max(pref[k:] - pref[:-k])) if k < len(pref) \
                else float(pref[-1])
        pref = self.costs.prefix
        n, left = self._n, self._remaining
        work = float(pref[n] - pref[n - left])
        slack = len(self._active) * kmax
        if work <= 2 * slack:
            return None
        gap = (work - slack) / rate * (1 - 1e-9) - left / 2 - 2
        return t + int(gap) if gap > 0 else None

    @property
    def min_assign_ticks(self) -> int:
        """The shortest master-to-PE message time: a "done" comes at least this after a serve."""
        return min(self._asg)

    def _answer_done(self, rank: int, s: int) -> None:
        """The master answers `rank` "done" at tick `s`."""
        self._done[rank] = s + self._asg[rank]
        if self._step + 1 >= self.timesteps:
            self.done_events.append((self._done[rank], rank))
        self._waiting += 1
        self._maybe_next_step(s)

    def _maybe_next_step(self, s: int) -> None:
        if self._waiting < len(self._active) or self._step + 1 >= self.timesteps:
            return
        if self._remaining > 0:
            return
        # every active PE has its "done": the master starts the next step at tick s
        self._planner.end_step()
        self._step += 1
        self._waiting = 0
        self._remaining = self._n
        self._planner = self._new_planner(self._n) if not self._planner.adaptive else \
            self._planner
        for r in self._active:
            self._done[r] = None
            heapq.heappush(self._heap, ((s + self._asg[r] + self._req[r]) << _SHIFT) | r)

    def run(self) -> LoopResult:
        """Simulate to the end and return the result."""
        self.advance(_NEVER)
        return self.result()

    def result(self) -> LoopResult:
        """The result so far (complete once `finished`)."""
        p = len(self._speeds)
        table = None
        if self._record:
            blocks = [*self._segs]
            if self._blk is not None:
                blocks.append(self._blk[:, :self._blk_pos])
            if self._cols[0] or not blocks:
                blocks.append(np.array(self._cols, dtype=np.int64).reshape(7, -1))
            cols = blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1)
            table = ChunkTable(
                rank=cols[0].astype(np.int32),
                first=cols[1],
                size=cols[2],
                t_assign=cols[3],
                t_start=cols[4],
                t_end=cols[5],
                step=cols[6].astype(np.int32),
            )
        return LoopResult(
            technique=self.technique.name,
            params={k: getattr(self.params, k) for k in self.params.__dataclass_fields__},
            n_tasks=self._n,
            n_pes=p,
            timesteps=self.timesteps,
            start=self.start,
            end=max(self._finish) if p else self.start,
            finish=tuple(self._finish),
            done=tuple(self.start if d is None else d for d in self._done),
            n_chunks=self._n_chunks,
            chunks=table,
        )
