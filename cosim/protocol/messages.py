"""Facts (ALS -> BLS, past tense) and commands (BLS -> ALS, imperative), as frozen dataclasses.

Every message carries the tick it refers to. Facts are handled by the batch level in the
canonical order `Fact.key` = ``(time, kind order, job_id)``
(completions, then yields, then starts, then answers to exclusion requests); commands are applied by the ALS in
``(time, job_id)`` order. The batch level never looks inside an app: a rigid app (its run
time known from the trace) is simulated by a local ALS that turns `StartApp` into
`AppStarted` and a later `AppCompleted`, exactly as a remote ALS rank will.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

__all__ = ["Fact", "Command", "AppStarted", "AppCompleted", "HostsYielded", "HostsExcluded",
           "StartApp", "KillApp", "ExcludeHosts"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Fact:
    """Something that happened in an app, at tick `time`."""

    time: int
    job_id: int
    ORDER: ClassVar[int] = 0

    @property
    def key(self) -> tuple[int, int, int]:
        """Canonical handling order: time, then the kind (completions first), then job id."""
        return (self.time, self.ORDER, self.job_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """Something the batch level orders an app to do, from tick `time` on."""

    time: int
    job_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AppCompleted(Fact):
    """The app of `job_id` ended: ``completed`` normally, ``killed`` by a KillApp."""

    status: Literal["completed", "killed"] = "completed"
    ORDER: ClassVar[int] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class HostsYielded(Fact):
    """Every PE of `hosts` (ascending host indices) of job `job_id` is out of work (RCA).

    The job keeps owning the hosts until it ends; the batch level may lend them meanwhile.
    """

    hosts: tuple[int, ...]
    ORDER: ClassVar[int] = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class AppStarted(Fact):
    """The app of `job_id` started on its hosts."""

    ORDER: ClassVar[int] = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class HostsExcluded(Fact):
    """The app of `job_id` answered an `ExcludeHosts` for `for_job`: it stopped giving work to
    `hosts` (ascending; empty = it refused). They are yielded when their current chunks end.
    """

    hosts: tuple[int, ...]
    for_job: int
    ORDER: ClassVar[int] = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class StartApp(Command):
    """Start the app of `job_id` on `hosts` (host indices, ascending) using `pes` PEs.

    `app` and `params` are the job's app model and parameters (``Job.app``,
    ``Job.app_params`` as sorted pairs), so that an ALS rank needs nothing but the command.
    `limit` is the tick of the walltime kill the batch level will send (None when walltime
    kill is off): an ALS never simulates the app past it, however far it runs ahead.
    """

    hosts: tuple[int, ...]
    pes: int
    app: str = "rigid"
    params: tuple[tuple[str, str], ...] = ()
    limit: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class KillApp(Command):
    """Stop the app of `job_id` (walltime exceeded, or cancelled)."""

    reason: str = "walltime"


@dataclass(frozen=True, slots=True, kw_only=True)
class ExcludeHosts(Command):
    """Ask the app of `job_id` to give up `count` of its hosts for the queued job `for_job`
    (RCA exclusion request); the app answers with `HostsExcluded` at the same tick."""

    count: int
    for_job: int
