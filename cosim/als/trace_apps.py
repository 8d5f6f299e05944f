"""The in-process application level for trace jobs: run times from the trace, changed by resizes.

`TraceApps` generalises the rigid-only endpoint cosim had (kept as a test oracle,
`cosim.testing.rigid_reference.RigidApps`) to moldable and malleable trace jobs
(spec docs/reference/malleability.md §4.3 "Trace apps", §4.6): `StartApp` at t gives
`AppStarted` at t and `AppCompleted` at the job's end; `KillApp` at t drops the completion and
gives `AppCompleted(killed)` at t; `ShrinkApp`/`ExpandApp` at t give one
`AppResized(released=pes | added=pes, pes=<count after>)` at t each and move the completion.
A start on the reference allocation (no `pe_set`, ``Job.pes`` PEs on ``Job.hosts`` hosts) ends
at exactly t + ``Job.runtime`` and costs what `RigidApps` costs: no model is evaluated until
the job's first resize. Otherwise progress follows ``Job.model``
(`cosim.workload.runtime_models`): ``ideal`` and ``worst`` count integer work units
(``W = R x model_pes(u0)`` PE-ticks, ``model_pes(u)`` per tick, end = ``s + ceil(W_rem /
per tick)``), ``amdahl`` and ``table`` keep the remaining reference work as a float and round
``rem / rate`` to ticks with the clock's rule (nearest, ties to even) once per segment. A resize
at t accounts the work done since the last change, then stalls the job (no progress) for
``reconf_s + reconf_pe_s x |PEs named|`` seconds from t (overlapping stalls end at the latest
end, they do not add up), and re-pushes the completion at ``max(t, stall end) + remaining
time``. Rules (a violation is a `ProtocolError` naming the job): commands are never stamped
before the last `advance`, nor, for one job, before its last resize; only running
``malleable`` jobs are resized; a shrink names a non-empty subset of the job's PEs, never its
master (the first PE of its start allocation), never all of them, and keeps at least
``min_pes``; an expand names existing PEs disjoint from the job's and keeps at most
``max_pes``; a start uses ``min_pes..max_pes`` PEs on exactly `hosts`. Several commands for
one job at one tick apply in the order given, and their facts come out in that order (the
event key is ``(time, Fact.ORDER, job_id)``, then insertion). A resize stamped at the tick the
job completes (its completion not yet reported) is checked and applied to the PE set but
changes nothing else and is not reported: `AppCompleted` at that tick frees everything, as
for a DLS release at the completion tick; the same holds when a float model rounds the work
left after a resize to 0 ticks (the job then completes at the resize tick). Walltimes are
never looked at (only `KillApp` kills); a zero-runtime job completes at its start tick.

Power (`cosim.bls.power`): a start with ``slowdown_ppm`` m on the reference allocation ends
at ``t + ceil(runtime x m / 10^6)``; `SetPower` at t counts the job's nominal work done since
its last change at the old factor (integer millionths of a tick:
`cosim.platform.power.work_done`) and re-pushes the completion at ``t + ticks_for(work
left, new m)``; a `SetPower` at the tick the job completes changes nothing. Power changes
and resizes of one job are not combined (a `ProtocolError`), nor are power caps and starts
off the reference allocation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from cosim.core.clock import to_ticks
from cosim.core.engine import EventQueue
from cosim.core.indexset import EMPTY, IndexSet, sorted_counts
from cosim.errors import ProtocolError
from cosim.platform.allocation import spread_pes
from cosim.platform.power import NOMINAL_PPM, WORK_PER_TICK, ticks_for, work_done
from cosim.protocol.endpoint import AlsTotals
from cosim.protocol.messages import (
    AppCompleted,
    AppResized,
    AppStarted,
    Command,
    ExpandApp,
    Fact,
    KillApp,
    SetPower,
    ShrinkApp,
    StartApp,
)
from cosim.workload.jobs import Job
from cosim.workload.runtime_models import EXACT_MODELS, host_paced, model_pes, rate

__all__ = ["TraceApps"]


class _Run:
    """The modelled state of a running job (started off-reference, or resized once).

    `rem` is the remaining work: integer PE-ticks for the exact models, reference ticks (a
    float) for the others; `speed` the matching progress per tick. Progress runs from
    ``max(last, stall_end)``; `end` is the tick of the pending completion event.
    """

    __slots__ = ("job", "exact", "ref", "pes", "master", "rem", "speed", "last", "stall_end",
                 "end")

    def __init__(self, job: Job, pes: IndexSet, master: int, t: int) -> None:
        self.job = job
        self.exact = job.model.name in EXACT_MODELS
        self.ref = spread_pes(job.pes, job.hosts)  # u0: the reference PEs per host
        self.pes = pes
        self.master = master
        self.rem: int | float = (job.runtime * model_pes(job.model, self.ref) if self.exact
                                 else float(job.runtime))
        self.speed: int | float = 0
        self.last = t
        self.stall_end = t
        self.end = t


class _Powered:
    """A job running on its reference allocation under a power cap: `work` nominal work left
    (millionths of a tick) as of tick `last`, done at `multiplier` ppm; `end` its completion."""

    __slots__ = ("work", "multiplier", "last", "end")

    def __init__(self, work: int, multiplier: int, last: int) -> None:
        self.work, self.multiplier, self.last = work, multiplier, last
        self.end = last + ticks_for(work, multiplier)


class TraceApps:
    """Trace apps simulated in process (see the module docstring).

    Parameters
    ----------
    jobs:
        Job id -> `Job`, for every job this component may be asked to start.
    pe_hosts:
        Global PE index -> host index (`Platform.pe_hosts`, host-major).
    """

    __slots__ = ("_jobs", "_pe_hosts", "_cores", "_events", "_pending", "_state", "_clock")

    def __init__(self, jobs: Mapping[int, Job], pe_hosts: np.ndarray) -> None:
        self._jobs = jobs
        self._pe_hosts = np.asarray(pe_hosts, dtype=np.int64)
        # hosts of equal core counts (the usual case): PE -> host is arithmetic
        k = int(np.count_nonzero(self._pe_hosts == 0)) if self._pe_hosts.size else 0
        uniform = k > 0 and np.array_equal(self._pe_hosts,
                                           np.arange(self._pe_hosts.size) // k)
        self._cores = k if uniform else 0
        self._events: EventQueue[Fact] = EventQueue()
        self._pending: dict[int, list] = {}  # job id -> handle of its pending completion
        # job id -> its StartApp while it runs unresized at full power on the reference
        # allocation (the model is set up lazily, on the first resize), its `_Powered` under
        # a power cap, else its `_Run`
        self._state: dict[int, StartApp | _Run | _Powered] = {}
        self._clock = 0

    # -- the ALS interface ------------------------------------------------------------------
    def apply(self, commands: Iterable[Command]) -> None:
        """Apply commands at their times (never before the last `advance`), in the given order."""
        events = self._events
        pending = self._pending
        state = self._state
        for cmd in commands:
            t = cmd.time
            if t < self._clock:
                raise ProtocolError(f"command for job {cmd.job_id} at {t} is in the past "
                                    f"(apps are at {self._clock})")
            jid = cmd.job_id
            if isinstance(cmd, StartApp):
                if jid in pending:
                    raise ProtocolError(f"job {jid} started twice")
                try:
                    job = self._jobs[jid]
                except KeyError:
                    raise ProtocolError(f"start of job {jid}, which trace apps do not know") \
                        from None
                events.push(t, AppStarted(time=t, job_id=jid), priority=AppStarted.ORDER,
                            key=(jid,))
                reference = (cmd.pe_set is EMPTY or not cmd.pe_set) and cmd.pes == job.pes \
                    and len(cmd.hosts) == job.hosts
                if cmd.slowdown_ppm != NOMINAL_PPM:
                    if not reference:
                        raise ProtocolError(f"job {jid} started under a power cap off its "
                                            "reference allocation (not modelled)")
                    run = _Powered(job.runtime * WORK_PER_TICK, cmd.slowdown_ppm, t)
                    pending[jid] = events.push(
                        run.end, AppCompleted(time=run.end, job_id=jid),
                        priority=AppCompleted.ORDER, key=(jid,))
                    state[jid] = run
                elif reference:
                    # the reference allocation: exactly RigidApps's work, no model
                    end = t + job.runtime
                    pending[jid] = events.push(
                        end, AppCompleted(time=end, job_id=jid), priority=AppCompleted.ORDER,
                        key=(jid,))
                    state[jid] = cmd
                else:
                    run = self._start(cmd, job)
                    pending[jid] = events.push(
                        run.end, AppCompleted(time=run.end, job_id=jid),
                        priority=AppCompleted.ORDER, key=(jid,))
                    state[jid] = run
            elif isinstance(cmd, KillApp):
                handle = pending.pop(jid, None)
                if handle is None:
                    raise ProtocolError(f"kill of job {jid}, which is not running")
                del state[jid]
                events.cancel(handle)
                events.push(t, AppCompleted(time=t, job_id=jid, status="killed"),
                            priority=AppCompleted.ORDER, key=(jid,))
            elif isinstance(cmd, (ShrinkApp, ExpandApp)):
                self._resize(cmd)
            elif isinstance(cmd, SetPower):
                self._set_power(cmd)
            else:
                raise ProtocolError(f"trace apps cannot apply {type(cmd).__name__} "
                                    f"(job {jid})")

    def promise(self) -> int | None:
        """The exact time of the earliest fact still to come (None: nothing will happen)."""
        return self._events.peek_time()

    def advance(self, until: int) -> list[Fact]:
        """Advance to `until`; every fact stamped at or before it, in `Fact.key` order."""
        self._clock = until
        facts = [fact for _, fact in self._events.pop_until(until)]
        pending = self._pending
        state = self._state
        for fact in facts:
            if type(fact) is AppCompleted and fact.status == "completed":
                del pending[fact.job_id]
                del state[fact.job_id]
        return facts

    def totals(self) -> AlsTotals:
        """The end-of-run report (`cosim.protocol.endpoint.Endpoint`): trace apps have no loop
        results nor counters (``apps`` counts simulated apps only, as before)."""
        if self._pending:
            raise ProtocolError(f"{len(self._pending)} trace apps still running at the end of "
                                f"the simulation (job {min(self._pending)} first)")
        return AlsTotals()

    # -- the models ---------------------------------------------------------------------------
    def _counts(self, pes: IndexSet) -> tuple[np.ndarray, np.ndarray]:
        """The hosts of `pes` (ascending) and the PEs on each (from the runs of `pes` when
        hosts have equal core counts)."""
        k = self._cores
        if not k:  # uneven hosts: by element
            return sorted_counts(self._pe_hosts[pes.to_array()])
        return pes.block_counts(k)

    def _speed_counts(self, model, pes: IndexSet, counts: np.ndarray | None = None):
        """What `model_pes` needs of an allocation on `pes` (`counts`: its PEs per host, if
        known): the PEs per host for a host-paced model, else their total alone."""
        if not host_paced(model):
            return (len(pes),)
        return (self._counts(pes)[1] if counts is None else counts).tolist()

    def _reference_pes(self, hosts: Sequence[int], pes: int) -> IndexSet:
        """The spread rule's global PEs (`job_pe_indices`) as runs, without listing them."""
        idx = hosts.to_array() if isinstance(hosts, IndexSet) else np.asarray(hosts,
                                                                                dtype=np.int64)
        first = np.searchsorted(self._pe_hosts, idx, side="left")
        base, extra = divmod(pes, len(idx))
        count = np.full(len(idx), base, dtype=np.int64)
        count[:extra] += 1
        return IndexSet.from_run_arrays(first, count)

    def _set_speed(self, run: _Run, counts: list[int]) -> None:
        model = run.job.model
        run.speed = model_pes(model, counts) if run.exact else rate(model, counts, run.ref)

    @staticmethod
    def _remaining_ticks(run: _Run) -> int:
        if run.exact:
            return -(-run.rem // run.speed)  # ceil: the last tick's work completes the job
        return round(run.rem / run.speed)  # the clock's rule, once per segment

    def _start(self, cmd: StartApp, job: Job) -> _Run:
        """The state of a job started off its reference allocation (a moldable start)."""
        jid = cmd.job_id
        if not job.min_pes <= cmd.pes <= job.max_pes:
            raise ProtocolError(f"job {jid} started on {cmd.pes} PEs, outside its "
                                f"[{job.min_pes}, {job.max_pes}]")
        if cmd.pe_set:
            pes = cmd.pe_set if isinstance(cmd.pe_set, IndexSet) else IndexSet.of(cmd.pe_set)
            if len(pes) != cmd.pes:
                raise ProtocolError(f"job {jid} started with {len(pes)} PEs in pe_set but "
                                    f"pes={cmd.pes}")
            if pes[-1] >= len(self._pe_hosts):
                raise ProtocolError(f"job {jid} started on PE {pes[-1]}, which does not exist")
        else:
            if cmd.pes < len(cmd.hosts):
                raise ProtocolError(f"job {jid} started on {len(cmd.hosts)} hosts with only "
                                    f"{cmd.pes} PEs")
            pes = self._reference_pes(cmd.hosts, cmd.pes)
            if len(pes) and pes[-1] >= len(self._pe_hosts):
                raise ProtocolError(f"job {jid} started on PE {pes[-1]}, which does not exist")
        hosts, counts = self._counts(pes)
        given = cmd.hosts.to_array() if isinstance(cmd.hosts, IndexSet) else \
            np.asarray(cmd.hosts, dtype=np.int64)
        if not np.array_equal(hosts, given):  # also catches a spread overflowing a host's cores
            raise ProtocolError(f"job {jid} started on hosts {list(cmd.hosts)} but its PEs "
                                f"are on hosts {hosts.tolist()}")
        run = _Run(job, pes, pes[0], cmd.time)
        self._set_speed(run, self._speed_counts(job.model, pes, counts))
        run.end = cmd.time + self._remaining_ticks(run)
        return run

    def _materialise(self, cmd: StartApp) -> _Run:
        """The state of a job started on its reference allocation, set up at its first resize
        as if modelled from its start (rate 1: the same end, start + runtime)."""
        job = self._jobs[cmd.job_id]
        pes = self._reference_pes(cmd.hosts, cmd.pes)
        run = _Run(job, pes, pes[0], cmd.time)
        self._set_speed(run, run.ref)  # rate 1 (exactly 1.0 for the float models)
        # its pending completion, start + runtime: what the model gives at rate 1, and exact
        # even where a float model's reference work would not be (runtime >= 2**53 ticks)
        run.end = self._pending[cmd.job_id][0]
        self._state[cmd.job_id] = run
        return run

    def _set_power(self, cmd: SetPower) -> None:
        """Re-time a job under a new power cap (module docstring)."""
        jid, t = cmd.job_id, cmd.time
        run = self._state.get(jid)
        if run is None:
            raise ProtocolError(f"SetPower of job {jid}, which is not running")
        if cmd.slowdown_ppm < NOMINAL_PPM:
            raise ProtocolError(f"SetPower of job {jid}: slowdown {cmd.slowdown_ppm} ppm is "
                                "below full speed")
        if type(run) is StartApp:
            run = _Powered(self._jobs[jid].runtime * WORK_PER_TICK, NOMINAL_PPM, run.time)
            self._state[jid] = run
        elif type(run) is not _Powered:
            raise ProtocolError(f"SetPower of job {jid}, which was resized (power changes of "
                                "resized jobs are not modelled)")
        if t < run.last:
            raise ProtocolError(f"SetPower of job {jid} at {t}, before its last change at "
                                f"{run.last}")
        if t >= run.end:
            return  # it completes now: nothing left to re-time
        run.work = max(run.work - work_done(t - run.last, run.multiplier), 0)
        run.multiplier, run.last = cmd.slowdown_ppm, t
        self._move_end(jid, run, t + ticks_for(run.work, run.multiplier))

    def _move_end(self, jid: int, run: _Run | _Powered, end: int) -> None:
        """Re-push the completion of job `jid` at `end` if it moved."""
        if end != run.end:
            self._events.cancel(self._pending[jid])
            self._pending[jid] = self._events.push(
                end, AppCompleted(time=end, job_id=jid), priority=AppCompleted.ORDER,
                key=(jid,))
            run.end = end

    def _resize(self, cmd: ShrinkApp | ExpandApp) -> None:
        jid, t = cmd.job_id, cmd.time
        what = type(cmd).__name__
        run = self._state.get(jid)
        if run is None:
            raise ProtocolError(f"{what} of job {jid}, which is not running")
        if type(run) is _Powered:
            raise ProtocolError(f"{what} of job {jid}, which runs under a power cap (power "
                                "changes of resized jobs are not modelled)")
        if type(run) is StartApp:
            run = self._materialise(run)
        job = run.job
        if not job.resizable:
            raise ProtocolError(f"{what} of job {jid}, a {job.kind} job (only malleable jobs "
                                "are resized)")
        if t > run.end:
            raise ProtocolError(f"{what} of job {jid} at {t}: it is not running (it completes "
                                f"at {run.end})")
        if t < run.last:
            raise ProtocolError(f"{what} of job {jid} at {t}, before its last change at "
                                f"{run.last}")
        pes = cmd.pes if isinstance(cmd.pes, IndexSet) else IndexSet.of(cmd.pes)
        if not pes:
            raise ProtocolError(f"{what} of job {jid} names no PE")
        if isinstance(cmd, ShrinkApp):
            if not pes.issubset(run.pes):
                raise ProtocolError(f"ShrinkApp of job {jid} names PEs it does not hold: "
                                    f"{pes.difference(run.pes)!r}")
            if run.master in pes:
                raise ProtocolError(f"ShrinkApp of job {jid} removes its master PE "
                                    f"{run.master}")
            if len(pes) == len(run.pes):
                raise ProtocolError(f"ShrinkApp of job {jid} removes all its PEs")
            new = run.pes.difference(pes)
            if len(new) < job.min_pes:
                raise ProtocolError(f"ShrinkApp of job {jid} leaves {len(new)} PEs, below "
                                    f"its min_pes {job.min_pes}")
        else:
            if pes[-1] >= len(self._pe_hosts):
                raise ProtocolError(f"ExpandApp of job {jid} adds PE {pes[-1]}, which does "
                                    "not exist")
            new = run.pes.union(pes)
            if len(new) != len(run.pes) + len(pes):
                raise ProtocolError(f"ExpandApp of job {jid} adds PEs it already holds: "
                                    f"{pes.difference(pes.difference(run.pes))!r}")
            if len(new) > job.max_pes:
                raise ProtocolError(f"ExpandApp of job {jid} gives it {len(new)} PEs, above "
                                    f"its max_pes {job.max_pes}")
        run.pes = new
        if t == run.end:
            return  # it completes now: AppCompleted frees everything (module docstring)
        # the work done since the last change, at the old speed, before the stall
        start = max(run.last, run.stall_end)
        if t > start:
            if run.exact:
                run.rem -= (t - start) * run.speed  # stays > 0: t < end
            else:
                run.rem = max(0.0, run.rem - (t - start) * run.speed)
        run.last = t
        model = job.model
        stall = to_ticks(model.reconf_s + model.reconf_pe_s * len(pes))
        run.stall_end = max(run.stall_end, t + stall)
        self._set_speed(run, self._speed_counts(model, new))
        end = max(t, run.stall_end) + self._remaining_ticks(run)
        self._move_end(jid, run, end)
        if end == t:
            return  # a float model rounded what was left to 0 ticks: it completes now
        if isinstance(cmd, ShrinkApp):
            fact = AppResized(time=t, job_id=jid, released=pes, pes=len(new))
        else:
            fact = AppResized(time=t, job_id=jid, added=pes, pes=len(new))
        self._events.push(t, fact, priority=AppResized.ORDER, key=(jid,))
