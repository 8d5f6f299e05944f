"""The batch-level job: what a workload (SWF trace, ESP generator) hands to the scheduler.

A `Job` is immutable. Times are ticks (`cosim.core.clock`). `hosts` is what the scheduler
allocates (whole hosts); `pes` is the processor count the job asked for, at most
``hosts x cores``. `walltime` is the requested time: the estimate backfilling uses and the
limit a walltime kill enforces. `runtime` is the job's real run time when its app is
``rigid`` (from the trace); app-driven jobs (mandelbrot, psia) get theirs from the ALS and keep
``runtime`` as the trace's value only for reference. `priority` orders before the policy's key
(higher first; ESP's Z jobs use it). `exclusion_ok` is the user's hint that the job's app may
give up hosts to a queued job when asked (RCA exclusion requests, ``--rca full``). `swf` keeps
the 18 original SWF fields for a faithful round trip (None for generated jobs).

**Kinds** (Feitelson & Rudolph; ElastiSim's names): ``rigid`` runs on exactly `pes` PEs and is
never resized; ``moldable`` may start on any PE count in ``[min_pes, max_pes]`` and keeps it;
``malleable`` may also be shrunk and expanded by the batch level within those bounds while it
runs; ``evolving`` jobs would ask for changes themselves — no policy acts on such requests yet
(RCA's voluntary yields are cosim's app-initiated change), so they are scheduled as rigid.
`min_pes`/`max_pes` default to `pes` (0 means "not given"); a rigid or evolving job always has
``min_pes == max_pes == pes`` (whatever is given). `pes` stays the *reference* allocation: a trace job's
`runtime` is its run time on `pes` PEs spread over `hosts` hosts, and `model` (a
`RuntimeModel`) says how the run time changes on another allocation. `value` (a
`cosim.workload.value.JobValue`, None when the workload gives none) is what the job earns
as a function of its completion time (value- and power-aware scheduling); `power_beta` (in
[0, 1], None: the power model's default) how much its run time stretches at a lower power
cap (`cosim.platform.power`), or `power_table` the measured (watts per socket, slowdown)
points that say it instead.
`JobOutcome` is what a simulation made of a job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from cosim.core.indexset import IndexSet
from cosim.workload.runtime_models import IDEAL, RuntimeModel

if TYPE_CHECKING:
    from cosim.workload.value import JobValue

__all__ = ["Job", "JobOutcome", "KINDS", "RESIZABLE"]

KINDS = ("rigid", "moldable", "malleable", "evolving")
RESIZABLE = frozenset(("malleable",))  # kinds the batch level may shrink and expand
#: What a category may hold: it is a word of SWF comments (``category=C``) and a CSV field
CATEGORY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:+-/")


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
    kind: Literal["rigid", "moldable", "malleable", "evolving"] = "rigid"
    min_pes: int = 0
    max_pes: int = 0
    model: RuntimeModel = IDEAL
    value: JobValue | None = None
    power_beta: float | None = None
    power_table: tuple[tuple[float, float], ...] | None = None

    def __post_init__(self) -> None:
        if self.power_beta is not None and not 0.0 <= self.power_beta <= 1.0:
            raise ValueError(f"power_beta must be in [0, 1], got {self.power_beta!r}")
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
        if self.category and not CATEGORY_CHARS.issuperset(self.category):
            raise ValueError(f"category {self.category!r}: letters, digits and _.:+-/ only")
        if self.kind not in KINDS:
            raise ValueError(f"unknown job kind {self.kind!r} (known: {', '.join(KINDS)})")
        if self.kind in ("rigid", "evolving"):  # exactly its PEs (follows `pes` on replace)
            lo = hi = self.pes
        else:
            lo = self.min_pes or self.pes
            hi = self.max_pes or self.pes
        if lo < 1 or lo > hi:
            raise ValueError(f"need 1 <= min_pes <= max_pes, got {lo} and {hi}")
        if lo != self.min_pes:
            object.__setattr__(self, "min_pes", lo)
        if hi != self.max_pes:
            object.__setattr__(self, "max_pes", hi)

    @property
    def resizable(self) -> bool:
        """True if the batch level may shrink and expand the job while it runs."""
        return self.kind in RESIZABLE

    @property
    def power_curve(self) -> float | tuple[tuple[float, float], ...] | None:
        """How its run time answers a power cap (`cosim.platform.power.PowerCurve`): its
        `power_table` if it has one, else its `power_beta` (None: the model's default)."""
        return self.power_table if self.power_table is not None else self.power_beta


@dataclass(frozen=True, slots=True, kw_only=True)
class JobOutcome:
    """What happened to a job in a simulation.

    status: ``completed``; ``killed`` (walltime exceeded, ended at start + walltime);
    ``rejected`` (never started: larger than the machine, or than its power cap at the
    lowest level the power strategy may give it; start and end are None);
    ``dropped`` (never started: a value order dropped it once it could earn nothing; start
    None, end the tick it left the queue).
    hosts: the host indices it ran on, ascending (empty when rejected), borrowed ones included
    (an `IndexSet`; with resizes, every host it ever had PEs on).
    RCA accounting: `yielded` = (host, tick) for each host the job reported out of work;
    `lent` = (host, tick) for each of its hosts the batch level first lent to another job (the
    job owns the host until it ends, but stops accounting for it from that tick); `borrowed` =
    (host, owner job id) for each host it ran on while another job owned it.
    Resizes: `shrinks` and `expands` count the `ShrinkApp`/`ExpandApp` commands the job
    obeyed; `pe_ticks` is the PE-time it used (PEs x ticks over its allocation as it changed,
    a yielded host's idle tail excluded); `pes_start` the PEs it started on (its reference
    `Job.pes` unless a policy chose another size).
    Power (under a power cap, `cosim.bls.power`; else 0 and empty): `energy_j`, the energy of
    its hosts' sockets at the caps they had (joules), and `power`, its segments: (tick, cap
    per socket in mW) from its start, each until the next or its end.
    """

    job: Job
    start: int | None
    end: int | None
    hosts: IndexSet | tuple[int, ...]
    status: Literal["completed", "killed", "rejected", "dropped"]
    yielded: tuple[tuple[int, int], ...] = ()
    lent: tuple[tuple[int, int], ...] = ()
    borrowed: tuple[tuple[int, int], ...] = ()
    shrinks: int = 0
    expands: int = 0
    pe_ticks: int = 0
    pes_start: int = 0
    energy_j: float = 0.0
    power: tuple[tuple[int, int], ...] = ()

    @property
    def resizes(self) -> int:
        """Shrinks plus expands."""
        return self.shrinks + self.expands
