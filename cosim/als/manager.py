"""The application level of one ALS rank: the running apps of the jobs assigned to it.

`AppSimulator` has the interface of `cosim.bls.rigid.RigidApps` (`apply` commands, `advance`
to a granted tick returning facts, `promise`), so the coordinator drives both the same way.
`StartApp` at t creates the job's loop (`LoopRun`) on its PEs, placed by
`cosim.platform.allocation.job_pe_indices`, with the app's default per-iteration costs scaled
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
holds. A command stamped before an app's last granted tick is a `ProtocolError`.

**Exclusion requests (RCA full).** `ExcludeHosts` at t asks an app for hosts: the app looks at
its state after the requests served at t (those may have produced facts stamped t, already
reported: a "done" inside a host takes no time) — when it has already run further ahead (a
promise, or speculation), by replaying its run from the start with the removals so far (a
rollback; runs are deterministic, so the replay is that state exactly) — chooses hosts and
decides by its predicted slowdown (`AppSimulator._choose_excluded`), answers
`HostsExcluded` at t, and removes the chosen hosts' PEs from t + 1 tick (`LoopRun.remove`):
they get no more work and are yielded when their current chunks end. Facts are then rediscovered from the new run; yields already reported are not
repeated.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cosim.als.launch import job_pe_placement
from cosim.als.runtime import Comm, LoopResult, LoopRun
from cosim.als.techniques import Technique
from cosim.core.clock import TICKS_PER_SECOND
from cosim.core.rng import stream
from cosim.errors import InputError, ProtocolError
from cosim.platform import Platform
from cosim.platform.allocation import job_pe_indices
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
from cosim.workload import TaskCosts, load_app

__all__ = ["AlsConfig", "AppSimulator"]

_NEVER = 1 << 62


@dataclass(frozen=True, slots=True, kw_only=True)
class AlsConfig:
    """How apps are simulated: technique and its parameters, protocol costs, app overrides.

    app_overrides: app-model parameters applied to every job's app (e.g. ``max_iter``),
    before the job's own parameters. seed: root of the keyed streams (RND's, per job id).
    record: keep every app's chunk table (for traces and ``results.h5``). max_slowdown: an
    app accepts an exclusion request when its predicted run time grows by at most this
    fraction (`AppSimulator` docstring).
    """

    technique: Technique
    params: Mapping[str, Any] = field(default_factory=dict)
    comm: Comm = field(default_factory=Comm)
    app_overrides: Mapping[str, str] = field(default_factory=dict)
    seed: int = 0
    record: bool = False
    max_slowdown: float = 0.10

    def __post_init__(self) -> None:
        if not self.max_slowdown >= 0:
            raise InputError("max_slowdown must be >= 0", field="max_slowdown")


class _App:
    """One running app and the facts it has produced but not yet reported."""

    __slots__ = ("job_id", "run", "host_of", "left", "last", "hosts_left", "pending",
                 "seen", "min_asg", "kill_at", "ended", "seq", "limit", "factory", "removals",
                 "reported")

    def __init__(self, job_id: int, factory: Callable[[], LoopRun], host_of: list[int]) -> None:
        self.job_id = job_id
        self.factory = factory  # a fresh run from the start: replays for rollbacks
        self.removals: list[tuple[int, list[int]]] = []  # (tick, ranks) applied so far
        self.reported: set[int] = set()  # hosts whose yield the batch level has been told
        self.host_of = host_of
        self.kill_at = _NEVER
        self.limit = _NEVER  # the announced walltime kill: never simulate past it
        self.seq = 0
        self.adopt(factory())

    def adopt(self, run: LoopRun) -> None:
        """Make `run` the app's simulation; facts are rediscovered from its done events."""
        self.run = run
        self.left: dict[int, int] = {}
        for h in self.host_of:
            self.left[h] = self.left.get(h, 0) + 1
        self.last: dict[int, int] = dict.fromkeys(self.left, 0)
        self.hosts_left = len(self.left)
        # (fact key, discovery number, fact): the number breaks ties between facts of one key
        self.pending: list[tuple[tuple[int, int, int], int, Fact]] = []
        self.seen = 0  # done events of the run already turned into facts
        self.min_asg = run.min_assign_ticks
        self.ended = False

    def drop_reported(self) -> None:
        """Forget pending yields of hosts the batch level was already told of (a replay finds
        them again)."""
        kept = []
        for e in self.pending:
            f = e[2]
            if isinstance(f, HostsYielded):
                new = tuple(h for h in f.hosts if h not in self.reported)
                if not new:
                    continue
                if new != f.hosts:
                    f = HostsYielded(time=f.time, job_id=f.job_id, hosts=new)
                    e = (f.key, e[1], f)
            kept.append(e)
        self.pending = kept
        heapq.heapify(kept)

    def replay(self, tick: int) -> LoopRun:
        """A fresh run with the removals so far, advanced to `tick` (the state at `tick`)."""
        run = self.factory()
        for at, ranks in self.removals:
            run.remove(at, ranks)
        run.advance(tick)
        return run

    def push(self, fact: Fact) -> None:
        self.seq += 1
        heapq.heappush(self.pending, (fact.key, self.seq, fact))

    def collect(self) -> None:
        """Turn the run's new done events into pending facts."""
        events = self.run.done_events
        yields: dict[int, list[int]] = {}
        while self.seen < len(events):
            tick, rank = events[self.seen]
            self.seen += 1
            h = self.host_of[rank]
            self.left[h] -= 1
            if tick > self.last[h]:
                self.last[h] = tick
            if self.left[h] == 0:
                self.hosts_left -= 1
                yields.setdefault(self.last[h], []).append(h)
        end = max(self.last.values()) if self.hosts_left == 0 else None
        for tick in sorted(yields):
            if tick < self.kill_at and tick != end:
                self.push(HostsYielded(time=tick, job_id=self.job_id,
                                       hosts=tuple(sorted(yields[tick]))))
        if end is not None and end < self.kill_at and not self.ended:
            self.ended = True
            # yields found in earlier run-ahead steps at the completion tick: the job ends there
            self.pending = [e for e in self.pending
                            if not (isinstance(e[2], HostsYielded) and e[2].time == end)]
            heapq.heapify(self.pending)
            self.push(AppCompleted(time=end, job_id=self.job_id))

    def earliest(self) -> int | None:
        return self.pending[0][0][0] if self.pending else None

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

    def until(self, tick: int) -> list[Fact]:
        """Every pending fact stamped at or before `tick` (discovering as needed)."""
        # never past a kill, nor past the announced walltime kill
        self.run.advance(min(tick - self.min_asg + 1, self.kill_at, self.limit))
        self.collect()
        out: list[Fact] = []
        while self.pending and self.pending[0][0][0] <= tick:
            fact = heapq.heappop(self.pending)[2]
            prev = out[-1] if out else None
            if (isinstance(fact, HostsYielded) and isinstance(prev, HostsYielded)
                    and prev.time == fact.time):  # found in two run-ahead steps: one fact
                fact = HostsYielded(time=fact.time, job_id=self.job_id,
                                    hosts=tuple(sorted(prev.hosts + fact.hosts)))
                out[-1] = fact
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
    """

    def __init__(self, *, platform: Platform, config: AlsConfig,
                 cache_dir: str | None = None) -> None:
        self.platform = platform
        self.config = config
        self._cache_dir = cache_dir
        self._pe_hosts = platform.pe_hosts()
        self._base: dict[tuple[str, tuple[tuple[str, str], ...]], TaskCosts] = {}
        self._apps: dict[int, _App] = {}
        self._granted = -1
        self.results: dict[int, LoopResult] = {}
        self.chunk_events = 0
        self.apps_started = 0
        self.rollbacks = 0  # runs replayed to an earlier tick to apply an exclusion

    # -- commands ---------------------------------------------------------------------------

    def apply(self, commands: Iterable[Command]) -> None:
        """Apply commands stamped at or after the last granted tick, in (time, job id) order."""
        for cmd in sorted(commands, key=lambda c: (c.time, c.job_id)):
            if cmd.time < self._granted:
                raise ProtocolError(f"command for job {cmd.job_id} at tick {cmd.time}, before "
                                    f"the granted tick {self._granted}")
            if isinstance(cmd, StartApp):
                self._start(cmd)
            elif isinstance(cmd, KillApp):
                self._kill(cmd)
            elif isinstance(cmd, ExcludeHosts):
                self._exclude(cmd)
            else:
                raise ProtocolError(f"the ALS cannot handle {type(cmd).__name__}")

    def _costs(self, app: str, params: dict[str, str]) -> TaskCosts:
        total = params.pop("total_flop", None)
        key = (app, tuple(sorted(params.items())))
        base = self._base.get(key)
        if base is None:
            base = load_app(app, overrides=params, cache_dir=self._cache_dir)
            self._base[key] = base
        if total is None:
            return base
        try:
            target = float(total)
        except ValueError:
            raise InputError(f"total_flop must be a number, got {total!r}",
                             field="app_params") from None
        if not target > 0 or base.total <= 0:
            raise InputError("total_flop and the app's costs must be > 0", field="app_params")
        return TaskCosts.from_array(base.flop * (target / base.total), model=base.model,
                                    label=f"{base.label} x{target / base.total:.4g}",
                                    params={**base.params, "total_flop": total})

    def _start(self, cmd: StartApp) -> None:
        if cmd.job_id in self._apps or cmd.job_id in self.results:
            raise ProtocolError(f"job {cmd.job_id} started twice")
        params = {**self.config.app_overrides, **dict(cmd.params)}
        costs = self._costs(cmd.app, params)
        pe_idx = job_pe_indices(self._pe_hosts, cmd.hosts, cmd.pes)
        host_of, speeds, req, asg = job_pe_placement(self.platform, self._pe_hosts, pe_idx,
                                                     self.config.comm)
        cfg = self.config

        def factory() -> LoopRun:
            return LoopRun(costs=costs, technique=cfg.technique, params=cfg.params,
                           speeds=speeds, request_ticks=req, assign_ticks=asg, comm=cfg.comm,
                           start=cmd.time, rng=stream(cfg.seed, "technique", cmd.job_id),
                           record=cfg.record)

        app = _App(cmd.job_id, factory, host_of)
        if cmd.limit is not None:
            app.limit = cmd.limit
        app.push(AppStarted(time=cmd.time, job_id=cmd.job_id))
        self._apps[cmd.job_id] = app
        self.apps_started += 1

    def _kill(self, cmd: KillApp) -> None:
        app = self._apps.get(cmd.job_id)
        if app is None:
            raise ProtocolError(f"KillApp for job {cmd.job_id}, which is not running here")
        app.kill_at = cmd.time
        app.pending = [e for e in app.pending if e[2].time < cmd.time]
        heapq.heapify(app.pending)
        app.ended = True
        app.push(AppCompleted(time=cmd.time, job_id=cmd.job_id, status="killed"))

    def _exclude(self, cmd: ExcludeHosts) -> None:
        app = self._apps.get(cmd.job_id)
        if app is None or app.kill_at != _NEVER:
            raise ProtocolError(f"ExcludeHosts for job {cmd.job_id}, which is not running here")
        if cmd.count < 1:
            raise ProtocolError(f"ExcludeHosts for job {cmd.job_id} asks for {cmd.count} hosts")
        # requests served at the request's tick may have produced facts stamped then (a
        # "done" inside a host takes no time), already reported: the request applies to the
        # requests served after it, from the next tick
        at = cmd.time + 1
        run = app.run
        replayed = run.served_until >= at  # it ran ahead past the request: state at `at`
        if replayed:
            run = app.replay(at)
        else:
            run.advance(at)
        hosts = self._choose_excluded(app, run, cmd.count, cmd.time)
        if hosts:
            ranks = [r for r, h in enumerate(app.host_of) if h in hosts]
            if replayed:
                app.adopt(run)
                self.rollbacks += 1
            run.remove(at, ranks)
            app.removals.append((at, ranks))
            app.collect()
            app.drop_reported()
        app.push(HostsExcluded(time=cmd.time, job_id=cmd.job_id, hosts=tuple(sorted(hosts)),
                               for_job=cmd.for_job))

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

    def speculate(self, budget: int = 200) -> bool:
        """Run one app ahead by at most `budget` chunks (never past its walltime limit);
        False when no app has anything left to simulate. Facts found stay pending until a
        grant covers them, so speculation changes when work is done, never a result."""
        for jid in sorted(self._apps):
            app = self._apps[jid]
            nt = app.run.next_tick()
            if app.ended or nt is None or nt >= min(app.kill_at, app.limit):
                continue
            app.run.advance(min(app.kill_at, app.limit), budget)
            app.collect()
            return True
        return False

    def promise(self) -> int | None:
        """Earliest tick of a fact any app here can still produce (exact), or None."""
        best = None
        for app in self._apps.values():
            p = app.discover()
            if p is not None and (best is None or p < best):
                best = p
        return best

    def advance(self, until: int) -> list[Fact]:
        """Advance every app to `until`; return the facts stamped at or before it, sorted."""
        self._granted = until
        facts: list[Fact] = []
        done = []
        for jid in sorted(self._apps):
            app = self._apps[jid]
            facts.extend(app.until(until))
            if app.ended and not app.pending:
                done.append(jid)
        for jid in done:
            app = self._apps.pop(jid)
            self.results[jid] = app.run.result()
            self.chunk_events += app.run.result().n_chunks
        facts.sort(key=lambda f: f.key)
        return facts

    @property
    def running(self) -> int:
        """Apps started and not yet ended here."""
        return len(self._apps)
