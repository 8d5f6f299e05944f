"""Facts (ALS -> BLS, past tense) and commands (BLS -> ALS, imperative), as frozen dataclasses.

Every message carries the tick it refers to. Facts are handled by the batch level in the
canonical order `Fact.key` = ``(time, kind order, job_id)`` (completions, then yields, then
starts, then answers to exclusion requests, then resizes); commands are applied by the ALS in
``(time, job_id)`` order. Sets of hosts and PEs travel as `IndexSet` (runs of indices; PEs
are *global* PE indices, host-major as `Platform.pe_hosts`). The batch level never looks inside an app: a rigid app (its run
time known from the trace) is simulated by a local ALS that turns `StartApp` into
`AppStarted` and a later `AppCompleted`, exactly as a remote ALS rank will.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from cosim.core.indexset import EMPTY, IndexSet

__all__ = ["Fact", "Command", "AppStarted", "AppCompleted", "HostsYielded", "HostsExcluded",
           "AppResized", "StartApp", "KillApp", "ExcludeHosts", "ShrinkApp", "ExpandApp",
           "SetPower"]


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
class AppResized(Fact):
    """The allocation of `job_id` changed at `time` after a `ShrinkApp` or `ExpandApp`.

    `released`: PEs the app gave up at `time` (free from then on). Each PE named by a
    `ShrinkApp` is released exactly once, at its *release tick*: a trace app releases at the
    command's tick; a DLS worker when it has finished its chunk in flight and been answered
    "no more work"; PEs released at one tick form one fact. A release at the job's completion
    tick is not reported (`AppCompleted` frees everything). `added`: PEs of an `ExpandApp`,
    confirmed at the command's tick. `pes`: the PEs the app holds after the change (PEs still
    finishing a chunk for a shrink included).
    """

    released: IndexSet = EMPTY
    added: IndexSet = EMPTY
    pes: int = 0
    ORDER: ClassVar[int] = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class StartApp(Command):
    """Start the app of `job_id` on `hosts` (host indices, ascending) using `pes` PEs.

    `app` and `params` are the job's app model and parameters (``Job.app``,
    ``Job.app_params`` as sorted pairs), so that an ALS rank needs nothing but the command.
    `limit` is the tick of the walltime kill the batch level will send (None when walltime
    kill is off): an ALS never simulates the app past it, however far it runs ahead.
    `pe_set`: the job's global PE indices when they are not the spread rule's
    (`cosim.platform.allocation.job_pe_indices`); empty: the spread rule on `hosts`. The app's
    master runs on the first PE. Under a power cap (`cosim.bls.power`): `watts_mw`, the cap of
    each socket of its hosts in milliwatts (0: no power management), and `slowdown_ppm`, the
    factor its run time is stretched by at that cap (parts per million; 10^6 = full speed).
    """

    hosts: Sequence[int]
    pes: int
    app: str = "rigid"
    params: tuple[tuple[str, str], ...] = ()
    limit: int | None = None
    pe_set: IndexSet = EMPTY
    watts_mw: int = 0
    slowdown_ppm: int = 1_000_000


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


@dataclass(frozen=True, slots=True, kw_only=True)
class ShrinkApp(Command):
    """Take the PEs `pes` (global indices, a subset of the job's PEs, never its master's PE,
    never all of them) away from the app of `job_id` from `time` on.

    Mandatory for malleable jobs (unlike `ExcludeHosts`). A DLS app stops giving them work at
    its next chunk boundary (requests served after `time`); a trace app changes its rate at
    `time`. Each PE is released by an `AppResized` fact at its release tick. `for_job`: the
    queued job the PEs are for (None: no particular one). `limit`: the job's new walltime-kill
    tick (None: unchanged).
    """

    pes: IndexSet
    for_job: int | None = None
    limit: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpandApp(Command):
    """Give the free PEs `pes` (global indices) to the app of `job_id` from `time` on.

    A DLS app's new workers send their first request after `time` (the technique restarts on
    the iterations not yet handed out); a trace app changes its rate at `time`. Confirmed by
    an `AppResized` fact with ``added=pes`` at `time`. `limit`: the new walltime-kill tick
    (None: unchanged).
    """

    pes: IndexSet
    limit: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SetPower(Command):
    """Cap every socket of the hosts of `job_id` at `watts_mw` milliwatts from `time` on, which
    stretches its run time by `slowdown_ppm` (parts per million of its nominal speed): the
    app counts the work done since its last change at the old factor and goes on at the new
    one (`cosim.platform.power.work_done`). No fact answers it. `limit`: the job's new
    walltime-kill tick (None: unchanged).
    """

    watts_mw: int
    slowdown_ppm: int
    limit: int | None = None
