"""The batch-level job: what a workload (SWF trace, ESP generator) hands to the scheduler.

A `Job` is immutable. Times are ticks (`cosim.core.clock`). `hosts` is what the scheduler
allocates (whole hosts); `pes` is the processor count the job asked for, at most
``hosts x cores``. `walltime` is the requested time: the estimate backfilling uses and the
limit a walltime kill enforces. `runtime` is the job's real run time when its app is
``rigid`` (from the trace); app-driven jobs (mandelbrot, psia) get theirs from the ALS and keep
``runtime`` as the trace's value only for reference. `priority` orders before the policy's key
(higher first; ESP's Z jobs use it). `exclusion_ok` is the user's hint that the job's app may
give up hosts to a queued job when asked (RCA exclusion requests, ``--rca full``). `swf` keeps the 18 original SWF fields for a faithful
round trip (None for generated jobs). `JobOutcome` is what a simulation made of a job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from types import MappingProxyType

__all__ = ["Job", "JobOutcome"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """One batch job (see the module docstring for the meaning of each field)."""

    id: int
    submit: int
    hosts: int
    pes: int
    walltime: int
    runtime: int
    app: str = "rigid"
    app_params: Mapping[str, str] = field(default_factory=dict)
    category: str = ""
    priority: int = 0
    user: int = -1
    group: int = -1
    queue: int = -1
    partition: int = -1
    exclusion_ok: bool = False
    swf: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.id < 0:
            raise ValueError("job id must be >= 0")
        if self.submit < 0:
            raise ValueError("submit time must be >= 0")
        if self.hosts < 1 or self.pes < 1:
            raise ValueError("a job needs at least one host and one PE")
        if self.walltime < 0 or self.runtime < 0:
            raise ValueError("walltime and runtime must be >= 0")
        if not isinstance(self.app_params, MappingProxyType):
            object.__setattr__(self, "app_params", MappingProxyType(dict(self.app_params)))


@dataclass(frozen=True, slots=True, kw_only=True)
class JobOutcome:
    """What happened to a job in a simulation.

    status: ``completed``; ``killed`` (walltime exceeded, ended at start + walltime);
    ``rejected`` (never started: larger than the machine; start and end are None).
    hosts: the host indices it ran on, ascending (empty when rejected), borrowed ones included.
    RCA accounting: `yielded` = (host, tick) for each host the job reported out of work;
    `lent` = (host, tick) for each of its hosts the batch level first lent to another job (the
    job owns the host until it ends, but stops accounting for it from that tick); `borrowed` =
    (host, owner job id) for each host it ran on while another job owned it.
    """

    job: Job
    start: int | None
    end: int | None
    hosts: tuple[int, ...]
    status: Literal["completed", "killed", "rejected"]
    yielded: tuple[tuple[int, int], ...] = ()
    lent: tuple[tuple[int, int], ...] = ()
    borrowed: tuple[tuple[int, int], ...] = ()
