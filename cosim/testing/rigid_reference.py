"""A test oracle: the rigid-only application level cosim had before trace apps could be resized.

`RigidApps` is the simplest possible endpoint for jobs whose run time is known from the trace
(no runtime model, no resize); `cosim.als.trace_apps.TraceApps` must produce exactly its facts
and promises for jobs that are never resized, which the tests check on random workloads. Who
produces what:

- `StartApp` at t -> `AppStarted` at t and, if no kill comes first, `AppCompleted(completed)`
  at t + runtime (a zero runtime completes at t itself);
- `KillApp` at t (sent by the batch level when a job reaches start + walltime, walltime kill
  on) -> the pending completion is dropped and `AppCompleted(killed)` at t is produced: the
  confirmation of a decision the batch level has already applied.

The app never looks at walltimes: it only runs for its run time. `promise` is the time of the
earliest fact it can still produce (exact), `advance(until)` returns every fact stamped at or
before `until`, sorted by `Fact.key` (time, completions before starts, job id).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from cosim.core.engine import EventQueue
from cosim.errors import ProtocolError
from cosim.protocol.messages import (
    AppCompleted,
    AppStarted,
    Command,
    Fact,
    KillApp,
    StartApp,
)

__all__ = ["RigidApps"]


class RigidApps:
    """Rigid apps simulated in process (see the module docstring).

    Parameters
    ----------
    runtimes:
        Job id -> run time in ticks, for every job this component may be asked to start.
    """

    __slots__ = ("_runtimes", "_events", "_pending", "_clock")

    def __init__(self, runtimes: Mapping[int, int]) -> None:
        self._runtimes = runtimes
        self._events: EventQueue[Fact] = EventQueue()
        self._pending: dict[int, list] = {}  # job id -> handle of its pending completion
        self._clock = 0

    def apply(self, commands: Iterable[Command]) -> None:
        """Apply commands at their times (never before the last `advance`)."""
        events = self._events
        for cmd in commands:
            t = cmd.time
            if t < self._clock:
                raise ProtocolError(f"command for job {cmd.job_id} at {t} is in the past "
                                    f"(apps are at {self._clock})")
            jid = cmd.job_id
            if isinstance(cmd, StartApp):
                if jid in self._pending:
                    raise ProtocolError(f"job {jid} started twice")
                events.push(t, AppStarted(time=t, job_id=jid), priority=AppStarted.ORDER,
                            key=(jid,))
                end = t + self._runtimes[jid]
                self._pending[jid] = events.push(
                    end, AppCompleted(time=end, job_id=jid), priority=AppCompleted.ORDER,
                    key=(jid,))
            elif isinstance(cmd, KillApp):
                handle = self._pending.pop(jid, None)
                if handle is None:
                    raise ProtocolError(f"kill of job {jid}, which is not running")
                events.cancel(handle)
                events.push(t, AppCompleted(time=t, job_id=jid, status="killed"),
                            priority=AppCompleted.ORDER, key=(jid,))
            else:
                raise ProtocolError(f"rigid apps cannot apply {type(cmd).__name__}")

    def promise(self) -> int | None:
        """The earliest time of a fact still to come (None: nothing will happen)."""
        return self._events.peek_time()

    def advance(self, until: int) -> list[Fact]:
        """Advance to `until`; every fact stamped at or before it, in `Fact.key` order."""
        self._clock = until
        facts = [fact for _, fact in self._events.pop_until(until)]
        pending = self._pending
        for fact in facts:
            if type(fact) is AppCompleted and fact.status == "completed":
                del pending[fact.job_id]
        return facts
