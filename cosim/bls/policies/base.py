"""The contract of batch-level policies: what they see (`PassView`) and what they return (`Plan`).

Policies are pure (DESIGN §6, §11). A *priority* policy turns a job into a sort key; the
scheduler orders the queue by ``(-job.priority, *key(job), job.id)`` — priority > 0 jobs (ESP's
Z jobs) first, the job id last so that no two jobs tie. A *backfill* policy gets a read-only
`PassView` of one scheduling pass and returns a `Plan`: the jobs to start now, in the order
the scheduler must start them, the reservations it made, and an opaque `memo` the scheduler
hands back unchanged at the next pass (conservative backfilling keeps its schedule there). A
*selection* policy gets the read-only mask of free hosts and a host count and returns which
hosts to use. The scheduler applies every decision; no policy touches the state.

Estimates: a running job is expected to end at ``max(start + walltime, now + 1)`` (a job past
its estimate — possible only without walltime kill — is expected to end at the next tick), a
queued job to run for its walltime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cosim.workload.jobs import Job

__all__ = ["PassView", "Plan", "PriorityPolicy", "BackfillPolicy", "SelectionPolicy",
           "expected_end", "overran"]


def expected_end(estimated_end: int, now: int) -> int:
    """When the scheduler expects a running job to end: its estimate, or the next tick."""
    return estimated_end if estimated_end > now else now + 1


def overran(estimated_end: int, start: int, now: int) -> bool:
    """True if a running job has outlived its estimate (possible only without walltime kill).

    A job of walltime 0 started at `now` has not: it ends at `now` (its completion or kill
    comes back in the next round at the same instant).
    """
    return estimated_end < now or (estimated_end == now and start < now)


@dataclass(frozen=True, slots=True, kw_only=True)
class PassView:
    """What a backfill policy sees of one scheduling pass (read-only).

    Attributes
    ----------
    now:
        Decision time (ticks).
    n_hosts:
        Hosts of the machine.
    free:
        Free hosts now, lendable ones (RCA: yielded by a job that still owns them) included.
    queue:
        Queued jobs in priority order (highest first).
    running:
        ``(estimated end, job id, hosts, start)`` of the running jobs, sorted; estimated end
        is start + walltime (see `expected_end` for one already past, and `overran`); hosts
        are those the job frees at its end (RCA: lendable hosts excluded, borrowed included),
        so that `free` plus every job's hosts is the machine.
    memo:
        What the policy returned as `Plan.memo` at the previous pass (None at the first).
    """

    now: int
    n_hosts: int
    free: int
    queue: tuple[Job, ...]
    running: tuple[tuple[int, int, int, int], ...]
    memo: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """A backfill policy's decisions for one pass.

    Attributes
    ----------
    starts:
        Jobs to start now, in order; their host counts fit in the free hosts.
    reservations:
        Job id -> reserved start (ticks) of queued jobs that got a reservation at this pass
        (EASY: the head and priority > 0 jobs; conservative: every queued job).
    memo:
        Opaque state for the next pass (treated as immutable by everyone).
    wake_at:
        Ask for a pass at this time even if nothing happens then (conservative backfilling
        asks for its earliest reservation); None: no request. Each plan replaces the last.
    """

    starts: tuple[Job, ...] = ()
    reservations: Mapping[int, int] = field(default_factory=dict)
    memo: Any = None
    wake_at: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PriorityPolicy:
    """A queue order: ``key(job)`` sorts ascending after ``-job.priority``; the id ends it."""

    name: str
    summary: str
    key: Callable[[Job], tuple[Any, ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class BackfillPolicy:
    """How a pass chooses jobs to start: ``plan(view) -> Plan``."""

    name: str
    summary: str
    plan: Callable[[PassView], Plan]


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectionPolicy:
    """Which hosts a starting job gets: ``select(free_mask, count) -> ascending host indices``.

    `free_mask` is a read-only boolean array (True = free) with at least `count` True values;
    the result must be `count` distinct free hosts, ascending, as an int64 array.
    """

    name: str
    summary: str
    select: Callable[[np.ndarray, int], np.ndarray]
