"""The application level of one ALS rank: the running apps of the jobs assigned to it.

`AppSimulator` is an application-level endpoint (`cosim.protocol.endpoint`: `apply`
commands, `advance` to a granted tick returning facts, `promise`, `totals`), as the trace
apps are, so the coordinator drives both the same way.
`StartApp` at t creates the job's loop (`LoopRun`) on its PEs — those of ``pe_set`` in that
(ascending) order when it is given (rank r on ``pe_set[r]``, the master on ``pe_set[0]``; its
length must be ``pes`` and its PEs on ``hosts``), else placed by
`cosim.platform.allocation.job_pe_indices` — with the app's default per-iteration costs scaled
so that they sum to the job's ``total_flop`` parameter (other parameters override the app
model's), and the run's technique. Facts: `AppStarted` at t; `HostsYielded` at the tick the
last PE of a host is told "no more work" (hosts yielding at one tick form one fact);
`AppCompleted` when the last PE is told (yields at that same tick are not reported: the job
has ended). `KillApp` at t ends the app at t: every fact after t is dropped (a walltime kill
truncates; nothing needs re-simulating).

**Promises are exact.** A PE's "done" comes ``assign ticks >= min_asg`` after the master
serves its last request, and serves happen in tick order, so once the next serve tick ``s``
satisfies ``s + min_asg > p`` for the earliest known pending fact ``p``, no undiscovered fact
can come before ``p``. `promise` runs each app ahead (`LoopRun.advance_to_done`) until that
holds. With ``bounds`` (ALS ranks under MPI) a promise may instead be a lower bound taken from
an app's state without running it (`LoopRun.done_bound`: fixed-size techniques, far from
their end); the coordinator then grants up to it and gets the facts up to each grant exactly
(`until`), so results do not change, only when the work is done. A command stamped before an
app's last granted tick is a `ProtocolError`.

**Apps simulated before their start.** Given ``ahead`` (the app jobs the runner's placement
will send to this simulator, `cosim.placement.ahead_plan`), a simulator with nothing else to
run ahead simulates the next of them from tick 0 on the PEs of the job's first hosts, up to its
walltime (`_simulate_ahead`, at most `AHEAD_MAX` waiting at a time). When the job starts at t
on PEs with the same speeds and message times (every placement on a uniform platform), the run
is moved to t (`LoopRun.move`: nothing in the model depends on when a loop starts) and
continues from there: the same run as one started at t and advanced as far, so facts and
results do not change, only when the work is done; anything else (other PEs, parameters, a
walltime limit it ran past) starts afresh, and `AHEAD_MISSES` placements that did not fit in a
row stop it (a platform of unequal hosts). Later commands act on a moved run as on any other
(a replay starts from the start tick).

**Settled runs.** When nothing but a kill at the walltime `StartApp` announced can reach a
running app (no exclusion requests, no malleable policy, every job rigid:
`cosim.runner.settled`), an app's facts are final once it has ended by that walltime (one
whose last "done" answers arrive after it is killed then), and a simulator made with
``settled`` returns every fact of such an app from the next `advance`, stamped after its
grant too (the app then leaves it, as at its completion). An ALS rank's answer thus
carries the whole end of an app it had simulated ahead, and rank 0 keeps the facts after the
grant until a grant covers them (`cosim.transport.mpi.MpiAls`): the rank is asked again only
for a command or when its next unknown fact may be due.

**Commands apply after their tick.** Requests served at a command's tick t may have produced
facts stamped t, already reported (a "done" inside a host takes no time), so `ExcludeHosts`,
`ShrinkApp` and `ExpandApp` at t act on the app's state after the requests served at t and
change the run from t + 1 tick. When the app has already run further ahead (a promise, or
speculation), it is replayed from the loop start with every resize so far, in command order —
the app keeps one ordered list of resize operations ``(tick, op, data)``: removals (exclusions,
shrinks) and additions (expands) — up to t + 1 (a *rollback*, counted in
`AppSimulator.rollbacks`; runs are deterministic, so the replay is that state exactly). Facts
are then rediscovered from the new run; those the batch level was already told of (stamped at
or before the last granted tick) are not repeated.

**Exclusion requests (RCA full).** `ExcludeHosts` at t asks an app for hosts: on its state at
t + 1 the app chooses hosts and decides by its predicted slowdown
(`AppSimulator._choose_excluded`), answers `HostsExcluded` at t, and removes the chosen hosts'
PEs from t + 1 (`LoopRun.remove`): they get no more work and are yielded when their current
chunks end. A refusal changes nothing (a replay made to decide is discarded, no rollback).

**Shrink** (`ShrinkApp` at t, mandatory). The named PEs (global indices; each must be an active
PE of the app — not excluded nor already shrunk —, never the master's PE, never every active
PE; else `ProtocolError` naming the job) get no new work from t + 1 (`LoopRun.remove`). Each is
*released* at its release tick: the "no more work" answer to its first request served after t
(after its chunk in flight), or, for a PE already answered "done", t + 1 (or when that answer
arrives, if later). Releases are reported as ``AppResized(time=tick, released=PEs released at
that tick)``, one fact per tick; a release at the job's completion tick is not reported
(`AppCompleted` frees everything). Released PEs are not yields: a host yields (`HostsYielded`)
when every PE the app had on it is done or released, unless all of them were released by
shrinks (then the host simply left the job); an excluded host comes back as a yield as before.
The app completes when every PE it still holds is done.

**Expand** (`ExpandApp` at t). New workers on the named PEs (free PEs: not held by the app —
a PE being released counts as held until its release tick ≤ t; else `ProtocolError`) join as
new ranks appended in ascending PE order (`LoopRun.add` at t + 1, as removals: the same "after
t" convention; their first request arrives at t + 1 + the request message time). Message times
are those of `job_pe_placement` to and from the master's host; speeds are the hosts' speeds.
Confirmed at once by ``AppResized(time=t, added=PEs)``. A PE released earlier may be added
back (it becomes a new rank). When the app had already been answered "done" everywhere with
its completion still to come (after t), the completion is withdrawn and comes when the new
PEs are done too; a host whose yield was stamped after t gets its yield withdrawn the same way
(a yield at or before t stands, and that host does not yield again: a host yields at most
once per job).

``AppResized.pes`` is the number of PEs the app holds after the change (PEs still finishing a
chunk for a shrink included): for a release fact at τ, the PEs of the start and of expands
stamped before τ minus the PEs released at or before τ; for an expand at t, every PE added so
far minus those released at or before t. At one tick a job's release fact comes before its
expand confirmations (an expand at t is decided after the facts of t). A command's ``limit``
(not None) becomes the app's walltime-kill tick: the app is never simulated past it.

**What a technique knows after a resize.** Either change restarts the technique
(`LoopRun`'s planner) on the iterations not yet handed out with the active PEs: a planner built
afresh, as for a new loop of ``R`` iterations on ``P'`` PEs. Adaptive techniques lose what they
had measured: AF starts every PE (old and new) with no data and hands out its initial chunk
(``init``: ``ceil(N'/(10 P'))`` with ``N'`` the iterations left at the change, or
``ceil(R/(2 P'))``, or ``min_chunk``) until every active PE has reported a chunk; AWF-B/C/D/E
give weight 1 to every PE until it has reported (batches restart); AWF, with one time step, is
WF on relative speeds. An old PE reports its chunk in flight at the change with its next
request; a new PE reports after its first chunk.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cosim.als.launch import job_pe_placement
from cosim.als.runtime import Comm, LoopResult, LoopRun
from cosim.als.techniques import Technique
from cosim.core.clock import TICKS_PER_SECOND
from cosim.core.indexset import IndexSet
from cosim.core.rng import stream
from cosim.errors import InputError, ProtocolError
from cosim.platform import Platform
from cosim.platform.allocation import job_pe_indices
from cosim.protocol.endpoint import AlsTotals
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
    ShrinkApp,
    StartApp,
)
from cosim.workload import TaskCosts, load_app

#: Iterations of scaled cost arrays an `AppSimulator` keeps for later jobs of the same app,
#: parameters and total work (about 24 bytes each: costs and two prefix sums; 100 MiB)
SCALED_COSTS_BUDGET = 1 << 22

#: Apps a simulator keeps simulated ahead of their start at most (their chunk tables wait in
#: memory: SS on 262,144 tasks, 15 MB each)
AHEAD_MAX = 16
#: Apps simulated ahead whose start did not fit (other speeds or message times) in a row, after
#: which a simulator simulates no more ahead
AHEAD_MISSES = 2

__all__ = ["AlsConfig", "AheadJob", "AppSimulator"]

_NEVER = 1 << 62


@dataclass(frozen=True, slots=True)
class AheadJob:
    """An app job a simulator may simulate before its start (`AppSimulator`'s ``ahead``):
    its id, app and parameters as `StartApp` carries them, the hosts and PEs it asks for, and
    its walltime in ticks (None: never killed)."""

    job_id: int
    app: str
    params: tuple[tuple[str, str], ...]
    hosts: int
    pes: int
    walltime: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlsConfig:
    """How apps are simulated: technique and its parameters, protocol costs, app overrides.

    app_overrides: app-model parameters applied to every job's app (e.g. ``max_iter``),
    before the job's own parameters. seed: root of the keyed streams (RND's, per job id).
    record: keep every app's chunk table (for traces and ``results.h5``). max_slowdown: an
    app accepts an exclusion request when its predicted run time grows by at most this
    fraction (`AppSimulator` docstring). compiled: run the loops in the compiled kernel when it
    was built (None, the default), always (True) or never (False: the Python reference loop;
    results are identical).
    """

    technique: Technique
    params: Mapping[str, Any] = field(default_factory=dict)
    comm: Comm = field(default_factory=Comm)
    app_overrides: Mapping[str, str] = field(default_factory=dict)
    seed: int = 0
    record: bool = False
    max_slowdown: float = 0.10
    compiled: bool | None = None

    def __post_init__(self) -> None:
        if not self.max_slowdown >= 0:
            raise InputError("max_slowdown must be >= 0", field="max_slowdown")


_REMOVE = "remove"  # data: (ranks, by_shrink)
_ADD = "add"  # data: (pes, hosts, speeds, request ticks, assign ticks)
_UNKNOWN: Any = object()  # no promise cached (`AppSimulator._promised`)


def _derived(fact: Fact) -> bool:
    """A fact found from the run (rediscovered by a replay), not an answer to a command."""
    return (isinstance(fact, HostsYielded)
            or (isinstance(fact, AppCompleted) and fact.status == "completed")
            or (isinstance(fact, AppResized) and len(fact.released) > 0))


class _App:
    """One running app: its resizes, its current simulation, the facts not yet reported.

    The attributes in `_RUN_STATE` belong to one simulation of the app (`adopt` resets them, a
    replay rebuilds them; `snapshot`/`restore` keep one aside). Per host: ``left`` PEs counted
    and not yet done, ``last`` tick one of them was done, ``ran_out`` hosts with a PE done
    without a shrink's release, ``closed`` hosts yielded (-> tick). ``uncounted``: ranks added
    on a host already yielded. ``shrunk``: ranks removed by a shrink; ``shrunk_busy``: those
    computing at the removal (their "done" is their release, not running out of work).
    """

    _RUN_STATE = ("run", "pe_of", "host_of", "rank_of", "added_at", "left", "last", "ran_out",
                  "closed", "busy", "last_all", "shrunk", "shrunk_busy", "released_at",
                  "uncounted", "pending", "seen", "seen_rel", "min_asg", "ended", "end")
    __slots__ = _RUN_STATE + ("job_id", "factory", "pes0", "hosts0", "ops", "reported",
                              "kill_at", "limit", "seq")

    def __init__(self, job_id: int, factory: Callable[[], LoopRun], pes: list[int],
                 host_of: list[int], run: LoopRun | None = None) -> None:
        self.job_id = job_id
        self.factory = factory  # a fresh run from the start: replays for rollbacks
        self.pes0 = tuple(pes)  # global PE of each rank at the start
        self.hosts0 = tuple(host_of)
        self.ops: list[tuple[int, str, Any]] = []  # resizes applied so far, in order
        self.reported: set[int] = set()  # hosts whose yield the batch level has been told
        self.kill_at = _NEVER
        self.limit = _NEVER  # the announced walltime kill: never simulate past it
        self.seq = 0
        self.pending: list[tuple[tuple[int, int, int], int, int, Fact]] = []
        self.adopt(factory() if run is None else run)  # `run`: one `factory` would give, ahead

    def adopt(self, run: LoopRun) -> None:
        """Make `run` (fresh from the start) the app's simulation; facts found from the
        previous one are dropped (answers to commands kept) and rediscovered from `run`."""
        self.run = run
        self.pe_of = list(self.pes0)
        self.host_of = list(self.hosts0)
        self.rank_of = {pe: r for r, pe in enumerate(self.pe_of)}  # PE -> its latest rank
        self.added_at = [-1] * len(self.pe_of)  # tick of the expand command that added a rank
        self.left: dict[int, int] = {}
        for h in self.host_of:
            self.left[h] = self.left.get(h, 0) + 1
        self.last: dict[int, int] = dict.fromkeys(self.left, 0)
        self.ran_out: set[int] = set()
        self.closed: dict[int, int] = {}
        self.busy = len(self.pe_of)  # ranks not yet done (nor released)
        self.last_all = 0
        self.shrunk: set[int] = set()
        self.shrunk_busy: set[int] = set()
        self.released_at: dict[int, int] = {}  # shrunk rank -> release tick (once known)
        self.uncounted: set[int] = set()
        # (fact key, sub-order, discovery number, fact): at one key, releases (sub 0) before
        # expand confirmations (sub 1); the number keeps command order among the latter
        kept = [e for e in self.pending if not _derived(e[3])]
        heapq.heapify(kept)
        self.pending = kept
        self.seen = 0  # done events of the run already turned into facts
        self.seen_rel = 0  # release events likewise
        self.min_asg = run.min_assign_ticks
        self.ended = False
        self.end: int | None = None  # completion tick, once found (not for a kill)

    def snapshot(self) -> list[Any]:
        """The current simulation (`adopt` and `rebuild` make new containers: no copy)."""
        return [getattr(self, name) for name in self._RUN_STATE]

    def restore(self, saved: list[Any]) -> None:
        for name, value in zip(self._RUN_STATE, saved, strict=True):
            setattr(self, name, value)

    def rebuild(self, tick: int, granted: int) -> None:
        """Replay from the start with every resize so far, to `tick` (the state at `tick`);
        facts stamped at or before `granted` were reported already and are dropped."""
        self.adopt(self.factory())
        for op in self.ops:
            self.do(op)
        self.run.advance(tick)
        self.collect()
        self.drop_reported(granted)

    def do(self, op: tuple[int, str, Any]) -> None:
        """Apply one resize at its tick (the run must not have served anything at or after
        it). Facts of the requests served before it are collected first: a replay and a live
        run then take the same decisions (withdrawn yields, uncounted ranks)."""
        at, kind, data = op
        run = self.run
        run.advance(at)
        self.collect()
        if kind == _REMOVE:
            ranks, by_shrink = data
            if by_shrink:
                for r in ranks:
                    self.shrunk.add(r)
                    if run.busy_until(r) is not None:
                        self.shrunk_busy.add(r)
            run.remove(at, ranks)
        else:
            pes, hosts, speeds, req, asg = data
            self._withdraw(at, hosts)
            new = run.add(at, speeds, req, asg)
            for r, pe, h in zip(new, pes, hosts, strict=True):
                self.pe_of.append(pe)
                self.host_of.append(h)
                self.added_at.append(at - 1)
                self.rank_of[pe] = r
                self.busy += 1
                if h in self.closed:  # yielded at or before the expand: stays yielded
                    self.uncounted.add(r)
                else:
                    self.left[h] = self.left.get(h, 0) + 1
                    self.last.setdefault(h, 0)
            self.min_asg = run.min_assign_ticks
        self.collect()

    def _withdraw(self, at: int, hosts: Iterable[int]) -> None:
        """Facts found ahead that new PEs from `at` make false: the completion, and the yields
        of their hosts stamped at or after `at`."""
        void = {h for h in hosts if self.closed.get(h, -1) >= at}
        if not void and not self.ended:
            return
        kept = []
        for e in self.pending:
            f = e[3]
            if isinstance(f, AppCompleted) and f.status == "completed":
                continue
            if isinstance(f, HostsYielded) and f.time >= at and void.intersection(f.hosts):
                left = tuple(h for h in f.hosts if h not in void)
                if not left:
                    continue
                f = HostsYielded(time=f.time, job_id=f.job_id, hosts=left)
                e = (f.key, e[1], e[2], f)
            kept.append(e)
        heapq.heapify(kept)
        self.pending = kept
        for h in void:
            del self.closed[h]
        self.ended = False
        self.end = None

    def drop_reported(self, granted: int) -> None:
        """Forget rediscovered facts the batch level was already told of (a replay finds
        them again): those stamped at or before `granted`, and yields of reported hosts."""
        kept = []
        for e in self.pending:
            f = e[3]
            if _derived(f) and f.time <= granted:
                continue
            if isinstance(f, HostsYielded):
                new = tuple(h for h in f.hosts if h not in self.reported)
                if not new:
                    continue
                if new != f.hosts:
                    f = HostsYielded(time=f.time, job_id=f.job_id, hosts=new)
                    e = (f.key, e[1], e[2], f)
            kept.append(e)
        self.pending = kept
        heapq.heapify(kept)

    def push(self, fact: Fact) -> None:
        self.seq += 1
        sub = 1 if isinstance(fact, AppResized) and len(fact.added) > 0 else 0
        heapq.heappush(self.pending, (fact.key, sub, self.seq, fact))

    def collect(self) -> None:
        """Turn the run's new done and release events into pending facts."""
        run = self.run
        events = run.done_events
        yields: dict[int, list[int]] = {}
        left, last, host_of = self.left, self.last, self.host_of
        i = self.seen
        while i < len(events):
            tick, rank = events[i]
            i += 1
            self.busy -= 1
            if tick > self.last_all:
                self.last_all = tick
            if rank in self.uncounted:
                continue
            h = host_of[rank]
            left[h] -= 1
            if tick > last[h]:
                last[h] = tick
            if rank not in self.shrunk_busy:
                self.ran_out.add(h)
            if left[h] == 0 and h in self.ran_out:  # else every PE there left by a shrink
                self.closed[h] = last[h]
                yields.setdefault(last[h], []).append(h)
        self.seen = i
        rel = run.release_events
        releases: dict[int, list[int]] = {}
        while self.seen_rel < len(rel):
            tick, rank = rel[self.seen_rel]
            self.seen_rel += 1
            if rank in self.shrunk:  # excluded PEs come back as yields instead
                self.released_at[rank] = tick
                releases.setdefault(tick, []).append(self.pe_of[rank])
        for tick in sorted(releases):
            if tick < self.kill_at:
                self.push(AppResized(time=tick, job_id=self.job_id,
                                     released=IndexSet.of(releases[tick])))
        for tick in sorted(yields):
            if tick < self.kill_at:
                self.push(HostsYielded(time=tick, job_id=self.job_id,
                                       hosts=tuple(sorted(yields[tick]))))
        if self.busy == 0 and not self.ended and self.last_all < self.kill_at:
            self.ended = True
            self.end = self.last_all
            self.push(AppCompleted(time=self.last_all, job_id=self.job_id))

    def earliest(self) -> int | None:
        return self.pending[0][0][0] if self.pending else None

    def held(self, tick: int) -> int:
        """PEs the app holds after the releases at or before `tick` (and every expand so far)."""
        gone = sum(1 for t in self.released_at.values() if t <= tick)
        return len(self.pe_of) - gone

    def discover(self) -> int | None:
        """Run ahead until the earliest pending fact is known exactly; return its tick."""
        run = self.run
        while True:
            self.collect()
            p = self.earliest()
            if self.ended and p is None:
                return None
            nt = run.next_tick()
            stop = min(self.kill_at, self.limit)
            if nt is None or nt >= stop or (p is not None and nt + self.min_asg > p):
                return p
            if p is None:
                run.advance_to_done(stop)
            else:
                run.advance(min(p - self.min_asg + 1, stop))

    def bound(self) -> int | None:
        """A tick no fact of this app comes before: from the run's state
        (`LoopRun.done_bound`) when it gives one, else `discover`'s exact tick."""
        self.collect()
        nt = self.run.next_tick()
        if self.ended or nt is None or nt >= min(self.kill_at, self.limit):
            return self.discover()
        b = self.run.done_bound()
        if b is None:
            return self.discover()
        p = self.earliest()
        return b if p is None else min(p, b)

    def until(self, tick: int) -> list[Fact]:
        """Every pending fact stamped at or before `tick` (discovering as needed)."""
        # never past a kill, nor past the announced walltime kill
        self.run.advance(min(tick - self.min_asg + 1, self.kill_at, self.limit))
        self.collect()
        out: list[Fact] = []
        while self.pending and self.pending[0][0][0] <= tick:
            fact = heapq.heappop(self.pending)[3]
            released = isinstance(fact, AppResized) and len(fact.released) > 0
            if fact.time == self.end and (released or isinstance(fact, HostsYielded)):
                continue  # the job ends at that tick: AppCompleted frees everything
            prev = out[-1] if out else None
            if (isinstance(fact, HostsYielded) and isinstance(prev, HostsYielded)
                    and prev.time == fact.time):  # found in two run-ahead steps: one fact
                fact = HostsYielded(time=fact.time, job_id=self.job_id,
                                    hosts=tuple(sorted(prev.hosts + fact.hosts)))
                out[-1] = fact
            elif released:
                # every release at or before this tick is known now (a grant covers it), and
                # so is every expand stamped before it: the count is exact here
                if (isinstance(prev, AppResized) and prev.time == fact.time
                        and len(prev.released) > 0):  # found in two steps: one fact
                    out.pop()
                    fact = AppResized(time=fact.time, job_id=self.job_id,
                                      released=prev.released.union(fact.released))
                held = sum(1 for t in self.added_at if t < fact.time) - sum(
                    1 for t in self.released_at.values() if t <= fact.time)
                out.append(AppResized(time=fact.time, job_id=self.job_id,
                                      released=fact.released, pes=held))
            else:
                out.append(fact)
            if isinstance(fact, HostsYielded):
                self.reported.update(fact.hosts)
        return out


class AppSimulator:
    """The apps of one ALS rank (see the module docstring).

    Parameters
    ----------
    platform:
        The modelled machine (PEs, speeds, message times).
    config:
        Technique, protocol costs, app overrides, seed.
    cache_dir:
        Where app cost arrays are cached (default: the project's cache).
    bounds:
        Promise lower bounds where the apps' states give them (an ALS rank under MPI: it then
        answers a round at once and runs its apps ahead while rank 0 works); results are the
        same, rounds more.
    upcoming:
        The ``(app, params)`` of the workload's app jobs in submission order (a job's
        `Job.app_params`): when `speculate` has no app to run ahead, it scales the cost
        arrays of their sizes, one a call, for the apps this simulator has loaded already,
        so that starting them later costs a lookup (under MPI a rank waits for rank 0
        meanwhile). What it cannot prepare (a bad parameter) is left to the start, which
        reports it; it then prepares nothing more.
    ahead:
        The jobs this simulator will be sent, in the order to simulate them before their
        start (module docstring); none by default.
    """

    def __init__(self, *, platform: Platform, config: AlsConfig,
                 cache_dir: str | None = None, bounds: bool = False,
                 upcoming: Iterable[tuple[str, Mapping[str, str]]] = (),
                 ahead: Iterable[AheadJob] = (), settled: bool = False) -> None:
        self.platform = platform
        self.config = config
        self.bounds = bounds
        self.settled = settled
        self._upcoming = iter(upcoming)
        self._ahead = deque(ahead)
        # job id -> (job, its run from tick 0, the speeds and message times it ran with)
        self._pre: dict[int, tuple[AheadJob, LoopRun, tuple[list[Any], ...]]] = {}
        self._open: deque[int] = deque()  # of `_pre`, those not yet run to their end
        self._misses = 0
        self._turn = False  # `speculate` alternates: an app ahead of its start, a running one
        self._cache_dir = cache_dir
        self._pe_hosts = platform.pe_hosts()
        self._base: dict[tuple[str, tuple[tuple[str, str], ...]], TaskCosts] = {}
        # scaled costs by (app, parameters, total_flop), least recently used first, at most
        # `SCALED_COSTS_BUDGET` iterations in all: an ESP workload has 14 sizes for 230 jobs
        self._scaled: dict[tuple[Any, ...], TaskCosts] = {}
        self._scaled_n = 0
        self._apps: dict[int, _App] = {}
        # job id -> the app's last promise (exact, or a lower bound with `bounds`): valid
        # while the app gets no command and no grant reaches it, so a round touches only the
        # apps a command or a grant concerns (most of ~15 running apps have no fact for
        # thousands of rounds); dropped on a command, a grant at or past it, or speculation
        self._promised: dict[int, int | None] = {}
        self._granted = -1
        self.results: dict[int, LoopResult] = {}
        self.chunk_events = 0
        self.apps_started = 0
        self.rollbacks = 0  # runs replayed to an earlier tick to apply an exclusion or resize
        self.ahead_used = 0  # apps started from a run simulated before their start

    # -- commands ---------------------------------------------------------------------------

    def apply(self, commands: Iterable[Command]) -> None:
        """Apply commands stamped at or after the last granted tick, in (time, job id) order."""
        for cmd in sorted(commands, key=lambda c: (c.time, c.job_id)):
            if cmd.time < self._granted:
                raise ProtocolError(f"command for job {cmd.job_id} at tick {cmd.time}, before "
                                    f"the granted tick {self._granted}")
            self._promised.pop(cmd.job_id, None)
            if isinstance(cmd, StartApp):
                self._start(cmd)
            elif isinstance(cmd, KillApp):
                self._kill(cmd)
            elif isinstance(cmd, ExcludeHosts):
                self._exclude(cmd)
            elif isinstance(cmd, ShrinkApp):
                self._shrink(cmd)
            elif isinstance(cmd, ExpandApp):
                self._expand(cmd)
            else:
                raise ProtocolError(f"the ALS cannot handle {type(cmd).__name__}")

    @staticmethod
    def _cost_key(app: str, params: Mapping[str, str]) -> tuple[tuple[Any, ...], str | None]:
        """``((app, parameters but total_flop), total_flop)``: how costs are cached."""
        return ((app, tuple(sorted((k, v) for k, v in params.items() if k != "total_flop"))),
                params.get("total_flop"))

    def _costs(self, app: str, params: dict[str, str]) -> TaskCosts:
        key, total = self._cost_key(app, params)
        params.pop("total_flop", None)
        base = self._base.get(key)
        if base is None:
            base = load_app(app, overrides=params, cache_dir=self._cache_dir)
            self._base[key] = base
        if total is None:
            return base
        scaled = self._scaled.pop((*key, total), None)
        if scaled is None:
            scaled = self._scale(base, total)
            self._scaled_n += scaled.n
            while self._scaled and self._scaled_n > SCALED_COSTS_BUDGET:
                oldest = next(iter(self._scaled))
                self._scaled_n -= self._scaled.pop(oldest).n
        self._scaled[(*key, total)] = scaled  # (re)inserted last: the most recently used
        return scaled

    @staticmethod
    def _scale(base: TaskCosts, total: str) -> TaskCosts:
        """`base` scaled to sum to `total` FLOP (its arrays read-only: jobs share them)."""
        try:
            target = float(total)
        except ValueError:
            raise InputError(f"total_flop must be a number, got {total!r}",
                             field="app_params") from None
        if not target > 0 or base.total <= 0:
            raise InputError("total_flop and the app's costs must be > 0", field="app_params")
        scaled = TaskCosts.from_array(base.flop * (target / base.total), model=base.model,
                                      label=f"{base.label} x{target / base.total:.4g}",
                                      params={**base.params, "total_flop": total})
        for a in (scaled.flop, scaled.prefix, scaled.prefix_sq):
            a.flags.writeable = False
        return scaled

    def _start(self, cmd: StartApp) -> None:
        if cmd.job_id in self._apps or cmd.job_id in self.results:
            raise ProtocolError(f"job {cmd.job_id} started twice")
        if cmd.slowdown_ppm != 1_000_000:
            raise ProtocolError(f"job {cmd.job_id} ({cmd.app}) started under a power cap: the "
                                "application level does not model power (trace jobs only)")
        params = {**self.config.app_overrides, **dict(cmd.params)}
        costs = self._costs(cmd.app, params)
        if len(cmd.pe_set):
            pe_idx = list(cmd.pe_set)
            if len(pe_idx) != cmd.pes or pe_idx[-1] >= len(self._pe_hosts) or not set(
                    self._pe_hosts[pe_idx].tolist()) <= set(cmd.hosts):
                raise ProtocolError(f"StartApp for job {cmd.job_id}: pe_set {cmd.pe_set!r} is "
                                    f"not {cmd.pes} PEs of its hosts")
        else:
            pe_idx = job_pe_indices(self._pe_hosts, cmd.hosts, cmd.pes)
        host_of, *placed = job_pe_placement(self.platform, self._pe_hosts, pe_idx,
                                            self.config.comm)

        def factory() -> LoopRun:
            return self._loop(costs, tuple(placed), cmd.time, cmd.job_id)

        app = _App(cmd.job_id, factory, pe_idx, host_of, run=self._moved(cmd, tuple(placed)))
        if cmd.limit is not None:
            app.limit = cmd.limit
        app.push(AppStarted(time=cmd.time, job_id=cmd.job_id))
        self._apps[cmd.job_id] = app
        self.apps_started += 1

    def _loop(self, costs: TaskCosts, placed: tuple[list[Any], ...], start: int,
              job_id: int) -> LoopRun:
        """A job's loop from `start` on PEs of ``placed = (speeds, request, assignment
        ticks)``."""
        cfg = self.config
        speeds, req, asg = placed
        return LoopRun(costs=costs, technique=cfg.technique, params=cfg.params, speeds=speeds,
                       request_ticks=req, assign_ticks=asg, comm=cfg.comm, start=start,
                       rng=stream(cfg.seed, "technique", job_id), record=cfg.record,
                       compiled=cfg.compiled)

    def _moved(self, cmd: StartApp, placed: tuple[list[Any], ...]) -> LoopRun | None:
        """The run simulated ahead for the job `cmd` starts, moved to its start, when it is
        the one the start gives (module docstring); else None."""
        pre = self._pre.pop(cmd.job_id, None)
        if pre is None:
            return None
        job, run, used = pre
        if used != placed or job.app != cmd.app or job.params != tuple(cmd.params):
            self._misses += 1
            if self._misses >= AHEAD_MISSES:
                self._ahead.clear()
                self._pre.clear()
                self._open.clear()
            return None
        self._misses = 0
        if cmd.limit is not None and run.served_until >= cmd.limit - cmd.time:
            return None  # it ran past the walltime kill this start sets
        run.move(cmd.time)
        self.ahead_used += 1
        return run

    def _kill(self, cmd: KillApp) -> None:
        app = self._apps.get(cmd.job_id)
        if app is None:
            raise ProtocolError(f"KillApp for job {cmd.job_id}, which is not running here")
        app.kill_at = cmd.time
        app.pending = [e for e in app.pending if e[3].time < cmd.time]
        heapq.heapify(app.pending)
        app.ended = True
        app.push(AppCompleted(time=cmd.time, job_id=cmd.job_id, status="killed"))

    def _running(self, cmd: Command) -> _App:
        app = self._apps.get(cmd.job_id)
        if app is None or app.kill_at != _NEVER:
            raise ProtocolError(f"{type(cmd).__name__} for job {cmd.job_id}, which is not "
                                f"running here")
        return app

    def _bring_to(self, app: _App, cmd: Command) -> None:
        """Put `app` in its state after the requests served at the command's tick (replaying
        it when it ran further ahead: a rollback)."""
        at = cmd.time + 1
        if app.run.served_until >= at:
            app.rebuild(at, self._granted)
            self.rollbacks += 1
        else:
            app.run.advance(at)
            app.collect()
        if app.ended and app.end is not None and app.end < at:
            raise ProtocolError(f"{type(cmd).__name__} for job {cmd.job_id} at tick "
                                f"{cmd.time}: its app completed at tick {app.end}")

    def _exclude(self, cmd: ExcludeHosts) -> None:
        app = self._running(cmd)
        if cmd.count < 1:
            raise ProtocolError(f"ExcludeHosts for job {cmd.job_id} asks for {cmd.count} hosts")
        # requests served at the request's tick may have produced facts stamped then (a
        # "done" inside a host takes no time), already reported: the request applies to the
        # requests served after it, from the next tick
        at = cmd.time + 1
        saved = None
        if app.run.served_until >= at:  # it ran ahead past the request: state at `at`
            saved = app.snapshot()  # kept in case the app refuses: then nothing changes
            app.rebuild(at, self._granted)
        else:
            app.run.advance(at)
            app.collect()
        hosts = self._choose_excluded(app, app.run, cmd.count, cmd.time)
        if hosts:
            ranks = tuple(r for r, h in enumerate(app.host_of) if h in hosts)
            op = (at, _REMOVE, (ranks, False))
            app.ops.append(op)
            app.do(op)
            if saved is not None:
                self.rollbacks += 1
        elif saved is not None:
            app.restore(saved)
        app.push(HostsExcluded(time=cmd.time, job_id=cmd.job_id, hosts=tuple(sorted(hosts)),
                               for_job=cmd.for_job))

    def _shrink(self, cmd: ShrinkApp) -> None:
        app = self._running(cmd)
        self._bring_to(app, cmd)
        active = set(app.run.active_ranks)
        ranks = []
        for pe in cmd.pes:
            r = app.rank_of.get(pe)
            if r is None or r not in active:
                raise ProtocolError(f"ShrinkApp for job {cmd.job_id}: PE {pe} is not an "
                                    f"active PE of the job")
            if r == 0:
                raise ProtocolError(f"ShrinkApp for job {cmd.job_id}: PE {pe} runs the "
                                    f"master and cannot be removed")
            ranks.append(r)
        if not ranks or len(ranks) >= len(active):
            raise ProtocolError(f"ShrinkApp for job {cmd.job_id} removes {len(ranks)} of its "
                                f"{len(active)} active PEs")
        op = (cmd.time + 1, _REMOVE, (tuple(ranks), True))
        app.ops.append(op)
        app.do(op)
        if cmd.limit is not None:
            app.limit = cmd.limit

    def _expand(self, cmd: ExpandApp) -> None:
        app = self._running(cmd)
        self._bring_to(app, cmd)
        pes = list(cmd.pes)
        if not pes:
            raise ProtocolError(f"ExpandApp for job {cmd.job_id} adds no PE")
        for pe in pes:
            if pe >= len(self._pe_hosts):
                raise ProtocolError(f"ExpandApp for job {cmd.job_id}: no PE {pe} on the "
                                    f"platform")
            r = app.rank_of.get(pe)
            if r is not None and app.released_at.get(r, _NEVER) > cmd.time:
                raise ProtocolError(f"ExpandApp for job {cmd.job_id}: the job holds PE {pe}")
        # message times to and from the master's host, as for the PEs of the start
        hosts, speeds, req, asg = job_pe_placement(self.platform, self._pe_hosts,
                                                   [app.pes0[0], *pes], self.config.comm)
        op = (cmd.time + 1, _ADD, (tuple(pes), tuple(hosts[1:]), tuple(speeds[1:]),
                                   tuple(req[1:]), tuple(asg[1:])))
        app.ops.append(op)
        app.do(op)
        if cmd.limit is not None:
            app.limit = cmd.limit
        app.push(AppResized(time=cmd.time, job_id=cmd.job_id, added=IndexSet.of(pes),
                            pes=app.held(cmd.time)))

    def _choose_excluded(self, app: _App, run: LoopRun, count: int, at: int) -> list[int]:
        """The hosts an app gives up for an exclusion request, or [] when it refuses.

        Candidates: hosts all of whose PEs still get work, the master's host excepted, those
        whose current chunks end first (then the lowest index) chosen first, at most `count`.
        The app accepts when the predicted run time ``E + W / S'`` over ``E + W / S`` is at
        most ``1 + max_slowdown``: E the time run so far, W the FLOP not yet handed out, S and
        S' the summed speed of the PEs getting work before and after.
        """
        active = set(run.active_ranks)
        ranks_of: dict[int, list[int]] = {}
        for r, h in enumerate(app.host_of):
            ranks_of.setdefault(h, []).append(r)
        master = app.host_of[0]
        cand = []
        for h, ranks in ranks_of.items():
            if h == master or not all(r in active for r in ranks):
                continue
            ends = [run.busy_until(r) for r in ranks]
            if any(e is None for e in ends):
                continue
            cand.append((max(ends), h))  # type: ignore[type-var]
        chosen = [h for _, h in sorted(cand)[:count]]
        if not chosen:
            return []
        speeds = run.speeds
        s_all = sum(speeds[r] for r in active)
        s_keep = s_all - sum(speeds[r] for h in chosen for r in ranks_of[h])
        if s_keep <= 0:
            return []
        work = run.remaining_flop()
        elapsed = (at - run.start) / TICKS_PER_SECOND
        before = elapsed + work / s_all
        after = elapsed + work / s_keep
        if before > 0 and after / before - 1 > self.config.max_slowdown:
            return []
        return chosen

    # -- time -------------------------------------------------------------------------------

    def speculate(self, budget: int = 2000) -> bool:
        """Run one app ahead by at most `budget` chunks (never past its walltime limit): the
        one furthest behind in simulated time (its next tick; ties to the lower job id), which
        the next grant would wait for — every other call, an app simulated before its start
        instead, when there is one to run (`_simulate_ahead`: else running apps would keep a
        busy rank from ever getting ahead of the starts); with none left, prepare the costs
        of the next app to come (`upcoming`). False when there is nothing left to do. Facts
        found stay pending until a grant covers them, so speculation changes when work is
        done, never a result."""
        self._turn = not self._turn
        if self._turn and (self._open or self._ahead) and self._simulate_ahead(budget):
            return True
        behind = None  # (next tick, job id) of the app furthest behind in simulated time
        for jid, app in self._apps.items():
            nt = app.run.next_tick()
            if app.ended or nt is None or nt >= min(app.kill_at, app.limit):
                continue
            if behind is None or (nt, jid) < behind:
                behind = (nt, jid)
        if behind is None:
            return self._simulate_ahead(budget) or self._prepare_next()
        jid = behind[1]
        app = self._apps[jid]
        app.run.advance(min(app.kill_at, app.limit), budget)
        app.collect()
        self._promised.pop(jid, None)  # a lower bound may now be a tighter one
        return True

    def _simulate_ahead(self, budget: int) -> bool:
        """Run an app simulated ahead of its start (module docstring) by at most `budget`
        chunks, the first not yet at its end, or begin the next one; False when there is
        none to run (at most `AHEAD_MAX` wait for their start)."""
        while self._open:  # the runs simulated ahead not yet at their end, oldest first
            jid = self._open[0]
            pre = self._pre.get(jid)
            if pre is not None:
                job, run, _ = pre
                stop = _NEVER if job.walltime is None else job.walltime
                nt = run.next_tick()
                if nt is not None and nt < stop:
                    try:
                        run.advance(stop, budget)
                    except Exception:  # noqa: BLE001 - the job's start, if it comes, says why
                        self._ahead.clear()
                        self._pre.pop(jid)
                        return False
                    return True
            self._open.popleft()  # at its end, or started meanwhile
        while self._ahead and len(self._pre) < AHEAD_MAX:
            job = self._ahead.popleft()
            if job.job_id in self._apps or job.job_id in self.results or not (
                    0 < job.hosts <= self.platform.n_hosts):
                continue  # started already, or it cannot start on this platform
            try:
                costs = self._costs(job.app, {**self.config.app_overrides, **dict(job.params)})
                pe_idx = job_pe_indices(self._pe_hosts, range(job.hosts), job.pes)
                placed = job_pe_placement(self.platform, self._pe_hosts, pe_idx,
                                          self.config.comm)[1:]
                run = self._loop(costs, placed, 0, job.job_id)
            except Exception:  # noqa: BLE001 - the job's start, if it comes, says why
                self._ahead.clear()
                return False
            self._pre[job.job_id] = (job, run, placed)
            self._open.append(job.job_id)
            return True
        return False

    def _prepare_next(self) -> bool:
        """Prepare the cost arrays of the next upcoming app not yet cached (`upcoming`), if
        they fit `SCALED_COSTS_BUDGET` beside those cached; False when none is left."""
        for app, params in self._upcoming:
            params = {**self.config.app_overrides, **params}
            key, total = self._cost_key(app, params)
            base = self._base.get(key)
            # only sizes of an app this rank has loaded: a new app's array (a Mandelbrot
            # image, PSIA costs) may take seconds, and may be another rank's to load
            if base is None or total is None or (*key, total) in self._scaled:
                continue
            if self._scaled_n + base.n > SCALED_COSTS_BUDGET:
                self._upcoming = iter(())  # the cache is full: starts make their own
                return False
            try:
                self._costs(app, params)
            except Exception:  # noqa: BLE001 - the start of that job, if it comes, says why
                self._upcoming = iter(())
                return False
            return True
        return False

    def promise(self) -> int | None:
        """Earliest tick of a fact any app here can still produce, or None: exact, or with
        `bounds` a lower bound where an app's state gives one far enough ahead."""
        best = None
        promised = self._promised
        for jid, app in self._apps.items():
            p = promised.get(jid, _UNKNOWN)
            if p is _UNKNOWN:
                p = promised[jid] = app.bound() if self.bounds else app.discover()
            if p is not None and (best is None or p < best):
                best = p
        return best

    def advance(self, until: int) -> list[Fact]:
        """Advance every app to `until`; return the facts stamped at or before it, sorted."""
        self._granted = until
        facts: list[Fact] = []
        done = []
        promised = self._promised
        for jid in sorted(self._apps):
            p = promised.get(jid, _UNKNOWN)
            if p is not _UNKNOWN and p is not None and p > until:
                continue  # no fact of it up to `until`: nothing to do for it yet
            promised.pop(jid, None)
            app = self._apps[jid]
            facts.extend(app.until(until))
            if app.ended and not app.pending:
                done.append(jid)
        if self.settled:  # every fact of an app that has ended, stamped after `until` too
            for jid, app in self._apps.items():
                if jid not in done:
                    app.collect()
                    # (an app whose last "done" answers arrive after its walltime is killed
                    # at its walltime instead: its end is not final)
                    if app.ended and app.end is not None and app.end <= app.limit:
                        facts.extend(app.until(app.end))
                        promised.pop(jid, None)
                        done.append(jid)
        for jid in done:
            app = self._apps.pop(jid)
            result = dataclasses.replace(app.run.result(), pes=tuple(app.pe_of))
            self.results[jid] = result
            self.chunk_events += result.n_chunks
        facts.sort(key=lambda f: f.key)
        return facts

    @property
    def running(self) -> int:
        """Apps started and not yet ended here."""
        return len(self._apps)

    def totals(self) -> AlsTotals:
        """The loop results and counters of this endpoint (every app must have ended)."""
        if self._apps:
            raise ProtocolError("apps still running at the end of the simulation")
        return AlsTotals(loops=dict(sorted(self.results.items())),
                         chunk_events=self.chunk_events, apps=self.apps_started,
                         rollbacks=self.rollbacks, ahead=self.ahead_used)
