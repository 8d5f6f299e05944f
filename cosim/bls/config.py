"""How the batch level schedules: `BatchConfig`, checked when made, and what a run derives from
it before it starts (`initial_tunables`, `drops_hopeless`, `check_machine`).

Kept apart from the scheduler (`cosim.bls.scheduler`, which re-exports these names) so that
a run that never builds a `BatchScheduler` — a trace replayed by `cosim.bls.replay` — does
not load it, its cluster state or the protocol's messages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cosim.bls import policies
from cosim.bls.policies.base import Tunables
from cosim.bls.policies.window import WINDOW_MAX
from cosim.bls.power import check_strategy
from cosim.bls.tuning import ADAPTIVE_MODES, TunerParams
from cosim.config import build
from cosim.errors import InputError
from cosim.workload.jobs import Job

__all__ = ["BatchConfig", "check_machine", "drops_hopeless", "initial_tunables"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchConfig:
    """How the batch level schedules.

    Attributes
    ----------
    priority:
        Queue order: ``fcfs`` (default) or ``sjf`` (`cosim.bls.policies.PRIORITIES`).
    backfill:
        ``none``, ``easy`` (default) or ``conservative``.
    selection:
        Host selection: ``first-fit`` (default), ``contiguous`` or ``best-fit``.
    walltime_kill:
        Kill a job at start + walltime when it runs longer (default True, as Slurm).
    priority_key:
        A pluggable priority: ``key(job) -> tuple`` sorted ascending after ``-job.priority``
        and before the job id; when given it replaces `priority` (which then only names it).
    rca:
        Lend yielded hosts to queued jobs (RCA yield; default False: yields are only
        recorded). See `cosim.bls.scheduler`'s module docstring.
    exclusion:
        RCA full: also ask running apps to exclude hosts for the head of the queue (needs
        `rca`; `cosim.bls.scheduler`'s module docstring).
    exclusion_max_short:
        Ask only when the head job is short of at most this fraction of its hosts (at least
        one host).
    malleable:
        The malleable policy: ``none`` (default) or a name of
        `cosim.bls.policies.malleable_names` (``equi``).
    malleable_params:
        Its parameters as ``key=value`` strings (validated against the policy's `Params`).
    bf:
        The balance factor of a priority that has one (``metric-aware``: 1 = FCFS, 0 = SJF),
        in [0, 1]; None: 1 (the `Tunables` default). Refused with a priority without one.
    window:
        Window-based allocation (`cosim.bls.policies.window`): the first `window` queued jobs
        are tried in every order and the backfill policy plans the best; 1 = none, at most
        `WINDOW_MAX`; None (default): 1, or the tuner's first level with ``adaptive`` w/2d
        (`initial_tunables`).
    makespan_cap:
        The window search's cap in ticks (Cobalt's 100000 s quirk; None: no cap).
    adaptive:
        The tuner (`cosim.bls.tuning`): ``off`` (default), ``bf``, ``w`` or ``2d`` (both);
        ``bf`` and ``2d`` need a priority with a balance factor.
    tuner_params:
        Its parameters as ``key=value`` strings (`cosim.bls.tuning.TunerParams`).
    power_cap, power_cap_w:
        The system power cap (`cosim.bls.power`), as a fraction in (0, 1] of every host at
        p_max or in watts (at most one; None: no cap, no power management). It needs the
        platform's power table (`BatchScheduler`'s `power`) and trace jobs; the backfill
        policies that plan power are ``none``, ``greedy``, ``easy`` and ``conservative``
        (`cosim.bls.policies.easy.power_plan`, `cosim.bls.policies.conservative.power_plan`).
    power_strategy:
        The level a starting job gets: ``max``, ``min``, ``uniform`` or ``best`` (default).
    power_dynamic:
        Reclaim power from running jobs for queued ones, and give leftover power to running
        jobs, at every pass (default False: a job keeps the cap it started with); with the
        ``greedy`` backfill only.
    drop_hopeless:
        Drop a queued job that can no longer earn value (its value at ``now + walltime`` is
        0; `cosim.workload.value`) at every pass: status ``dropped``, never started. None
        (default): on for the value priorities (``vpt``, ``vpe``), off otherwise.
    bf_interval:
        Slurm's ``bf_interval`` in ticks (0, the default: backfill at every pass). When > 0,
        a pass at a tick that is not a multiple of it is the FCFS part only (the ``none``
        policy: start jobs in priority order while the first fits; Slurm's main scheduler,
        event-driven), and asks for a full pass (the backfill policy) at the next multiple
        if jobs remain queued; a pass at a multiple is a full pass. A FCFS part that started
        a job drops the backfill policy's memo (it plans afresh). Not with a malleable
        policy that replaces backfilling.
    """

    priority: str = "fcfs"
    backfill: str = "easy"
    selection: str = "first-fit"
    walltime_kill: bool = True
    priority_key: Callable[[Job], tuple[Any, ...]] | None = None
    rca: bool = False
    exclusion: bool = False
    exclusion_max_short: float = 0.25
    malleable: str = "none"
    malleable_params: Mapping[str, str] = field(default_factory=dict)
    bf_interval: int = 0
    bf: float | None = None
    window: int | None = None
    makespan_cap: int | None = None
    adaptive: str = "off"
    tuner_params: Mapping[str, str] = field(default_factory=dict)
    drop_hopeless: bool | None = None
    power_cap: float | None = None
    power_cap_w: float | None = None
    power_strategy: str = "best"
    power_dynamic: bool = False

    @property
    def power_capped(self) -> bool:
        """True when a power cap is set."""
        return self.power_cap is not None or self.power_cap_w is not None

    def __post_init__(self) -> None:
        if isinstance(self.bf_interval, bool) or not isinstance(self.bf_interval, int) \
                or self.bf_interval < 0:
            raise InputError(f"must be an integer number of ticks >= 0, got "
                             f"{self.bf_interval!r}", field="bf-interval")
        if self.exclusion and not self.rca:
            raise InputError("exclusion requests need RCA host lending", field="rca")
        if not 0 < self.exclusion_max_short <= 1:
            raise InputError("exclusion_max_short must be in (0, 1]",
                             field="exclusion_max_short")
        name = str(self.malleable).strip().lower()
        if name != "none":
            pol = policies.dynamic(name, "malleable")
            object.__setattr__(self, "malleable", pol.name)
            build(pol.params, self.malleable_params, section="malleable-param")
            if self.bf_interval and pol.replaces_backfill:
                raise InputError(f"the malleable policy {pol.name} replaces backfilling: "
                                 "there is no backfill pass to space out", field="bf-interval")
            if self.rca and pol.name == "equi":
                raise InputError("equipartition and RCA cannot be combined (equipartition "
                                 "places every job on PEs; RCA lends whole hosts)",
                                 field="malleable")
        else:
            object.__setattr__(self, "malleable", "none")
            if self.malleable_params:
                raise InputError("parameters given but no malleable policy",
                                 field="malleable-param")
        if self.priority_key is None:
            pol = policies.priority(self.priority)
            object.__setattr__(self, "priority", pol.name)
            if self.bf is not None and "bf" not in pol.tunables:
                raise InputError(f"the priority {pol.name} has no balance factor (use "
                                 "--priority metric-aware)", field="bf")
        elif self.bf is not None:
            raise InputError("a pluggable priority key has no balance factor", field="bf")
        if self.bf is not None and not (isinstance(self.bf, int | float)
                                        and 0.0 <= self.bf <= 1.0):
            raise InputError(f"must be in [0, 1], got {self.bf!r}", field="bf")
        if self.window is not None and (isinstance(self.window, bool) or not isinstance(
                self.window, int) or not 1 <= self.window <= WINDOW_MAX):
            raise InputError(f"must be an integer in [1, {WINDOW_MAX}] (the jobs whose order "
                             f"the window search tries: {WINDOW_MAX}! = 720 orders at most), "
                             f"got {self.window!r}", field="window")
        if self.adaptive not in ADAPTIVE_MODES:
            raise InputError(f"unknown adaptive mode {self.adaptive!r} (known: "
                             f"{', '.join(ADAPTIVE_MODES)})", field="adaptive")
        if self.adaptive in ("bf", "2d") and (self.priority_key is not None or "bf" not in
                                              policies.priority(self.priority).tunables):
            raise InputError(f"--adaptive {self.adaptive} tunes the balance factor, which the "
                             f"priority {self.priority} has not (use --priority "
                             "metric-aware)", field="adaptive")
        if self.adaptive == "off" and self.tuner_params:
            raise InputError("tuner parameters given but no tuner (--adaptive bf|w|2d)",
                             field="tuner-param")
        build(TunerParams, self.tuner_params, section="tuner-param")
        if self.makespan_cap is not None and (isinstance(self.makespan_cap, bool) or not
                                              isinstance(self.makespan_cap, int)
                                              or self.makespan_cap <= 0):
            raise InputError(f"must be a positive number of ticks, got {self.makespan_cap!r}",
                             field="makespan-cap")
        object.__setattr__(self, "backfill", policies.backfill(self.backfill).name)
        if self.priority_key is None and self.backfill == "conservative" \
                and policies.priority(self.priority).value_based:
            raise InputError(f"--priority {self.priority} ranks by decaying values: "
                             "conservative backfilling's fixed reservations do not fit it "
                             "(use greedy, the default, or easy)", field="batch")
        object.__setattr__(self, "selection", policies.selection(self.selection).name)
        self._check_power()

    def _check_power(self) -> None:
        check_strategy(self.power_strategy)
        if not self.power_capped:
            if self.power_dynamic or self.power_strategy != "best":
                raise InputError("--power-strategy and --power-dynamic need a power cap "
                                 "(--power-cap)", field="power-cap")
            return
        if self.power_cap is not None and self.power_cap_w is not None:
            raise InputError("give the power cap as a fraction or in watts, not both",
                             field="power-cap")
        if self.power_cap is not None and not (isinstance(self.power_cap, int | float) and
                                               0 < self.power_cap <= 1):
            raise InputError(f"a fraction of the machine's maximal power must be in (0, 1], "
                             f"got {self.power_cap!r} (watts: e.g. 300000W)", field="power-cap")
        if self.power_cap_w is not None and not (isinstance(self.power_cap_w, int | float)
                                                 and math.isfinite(self.power_cap_w)
                                                 and self.power_cap_w > 0):
            raise InputError(f"must be a positive number of watts, got {self.power_cap_w!r}",
                             field="power-cap")
        if self.backfill not in ("none", "greedy", "easy", "conservative"):
            raise InputError(f"under a power cap the backfill policy must be greedy, easy, "
                             f"conservative or none (fcfs): {self.backfill} plans hosts only",
                             field="batch")
        if self.malleable != "none" or self.rca:
            raise InputError("a power cap is not combined with malleable policies or RCA "
                             "(power follows whole, fixed allocations)", field="power-cap")
        if self.power_dynamic and self.backfill != "greedy":
            raise InputError(f"--power-dynamic reallocates power after the greedy pass "
                             f"(Kumbhare et al.): with --batch {self.backfill} it would start "
                             "jobs past the order and the reservations of that policy",
                             field="power-dynamic")


def initial_tunables(config: BatchConfig) -> Tunables:
    """The tunables a run starts with: ``bf`` and ``window`` as given, else the tuner's
    first levels for what it tunes (Ti: ``bf_levels[0]``, ``w_levels[0]``), else 1 and 1."""
    params = (build(TunerParams, config.tuner_params, section="tuner-param")
              if config.adaptive != "off" else None)
    bf = config.bf
    if bf is None:
        bf = params.bf_levels[0] if params and config.adaptive in ("bf", "2d") else 1.0
    window = config.window
    if window is None:
        window = params.w_levels[0] if params and config.adaptive in ("w", "2d") else 1
    return Tunables(bf=float(bf), window=window)


def drops_hopeless(config: BatchConfig) -> bool:
    """Whether the batch level drops the queued jobs that can no longer earn value
    (`BatchConfig.drop_hopeless`; by default, under a value-based priority)."""
    if config.drop_hopeless is not None:
        return config.drop_hopeless
    return config.priority_key is None and policies.priority(config.priority).value_based


def check_machine(config: BatchConfig, cores: Sequence[int]) -> None:
    """InputError when `config` asks for a policy the machine of hosts of `cores` cannot
    run: a malleable policy gives PEs one by one, which needs equal hosts (`ClusterState`)."""
    if config.malleable != "none" and len(set(cores)) > 1:
        raise InputError(f"--malleable {config.malleable} gives PEs one by one, which needs "
                         f"hosts with equal core counts; these have {min(cores)} to "
                         f"{max(cores)} (use --malleable none, or --hosts to keep hosts of "
                         "one kind)", field="malleable")
