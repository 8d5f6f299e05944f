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
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cosim.als.launch import job_pe_placement
from cosim.als.runtime import Comm, LoopResult, LoopRun
from cosim.als.techniques import Technique
from cosim.core.rng import stream
from cosim.errors import InputError, ProtocolError
from cosim.platform import Platform
from cosim.platform.allocation import job_pe_indices
from cosim.protocol.messages import (
    AppCompleted, AppStarted, Command, Fact, HostsYielded, KillApp, StartApp,
)
from cosim.workload import TaskCosts, load_app

__all__ = ["AlsConfig", "AppSimulator"]

_NEVER = 1 << 62


@dataclass(frozen=True, slots=True, kw_only=True)
class AlsConfig:
    """How apps are simulated: technique and its parameters, protocol costs, app overrides.

    app_overrides: app-model parameters applied to every job's app (e.g. ``max_iter``),
    before the job's own parameters. seed: root of the keyed streams (RND's, per job id).
    """

    technique: Technique
    params: Mapping[str, Any] = field(default_factory=dict)
    comm: Comm = field(default_factory=Comm)
    app_overrides: Mapping[str, str] = field(default_factory=dict)
    seed: int = 0
    record: bool = False


class _App:
    """One running app and the facts it has produced but not yet reported."""

    __slots__ = ("job_id", "run", "host_of", "left", "last", "hosts_left", "pending",
                 "seen", "min_asg", "kill_at", "ended", "seq", "limit")

    def __init__(self, job_id: int, run: LoopRun, host_of: list[int]) -> None:
        self.job_id = job_id
        self.run = run
        self.host_of = host_of
        self.left: dict[int, int] = {}
        for h in host_of:
            self.left[h] = self.left.get(h, 0) + 1
        self.last: dict[int, int] = dict.fromkeys(self.left, 0)
        self.hosts_left = len(self.left)
        # (fact key, discovery number, fact): the number breaks ties between facts of one key
        self.pending: list[tuple[tuple[int, int, int], int, Fact]] = []
        self.seq = 0
        self.seen = 0  # done events of the run already turned into facts
        self.min_asg = run.min_assign_ticks
        self.kill_at = _NEVER
        self.limit = _NEVER  # the announced walltime kill: never simulate past it
        self.ended = False

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
        run = LoopRun(costs=costs, technique=self.config.technique, params=self.config.params,
                      speeds=speeds, request_ticks=req, assign_ticks=asg,
                      comm=self.config.comm, start=cmd.time,
                      rng=stream(self.config.seed, "technique", cmd.job_id),
                      record=self.config.record)
        app = _App(cmd.job_id, run, host_of)
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
