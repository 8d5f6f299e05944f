"""One run of cosim from options to output files, and the main job (the RCA comparison).

`RunOptions` is everything ``cosim run`` takes. `execute` reads the workload, simulates it —
batch-only (`cosim.bls.simulate_batch`) when every job is rigid, co-simulated
(`cosim.runner.cosimulate`) when some job runs an app model — and returns a `RunRecord`;
`write_outputs` writes ``jobs.csv``, ``schedule.swf`` and ``summary.json`` (last, marking a
complete run) atomically. `plan` gives the runs of a command: the main job (``cosim run``
without a workload) is ESP-Mandelbrot on ib256, FCFS + EASY, STATIC, RCA off then on. `prepare`
validates a run on every rank before MPI is touched; under MPI, rank 0 `execute`s it with the
communicator while ranks 1..K-1 `serve_als` it.
"""

from __future__ import annotations

import functools
import json
import time
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from cosim.core.clock import duration_problem, to_ticks
from cosim.errors import InputError
from cosim.paths import TRACES_DIR

__all__ = ["RunOptions", "RunRecord", "Prepared", "prepare", "execute", "serve_als", "plan",
           "default_out", "main_out", "write_outputs", "tables_of", "MAIN_WORKLOAD"]

MAIN_WORKLOAD = TRACES_DIR / "esp-mandelbrot.swf"
RCA_MODES = ("off", "yield", "full")
TRACE_LEVELS = ("none", "batch", "full")
EXCLUSION_HINTS = ("trace", "all", "none")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """The options of ``cosim run`` (see ``cosim run --help``)."""

    workload: str
    platform: str | None = None  # None: DEFAULT_PLATFORM, sized by the trace's header
    hosts: int | None = None
    batch: str = "easy"
    priority: str = "fcfs"
    selection: str = "first-fit"
    walltime_kill: bool = True
    procs_field: str = "requested"
    lenient: bool = False
    skip_zero_runtime: bool = False
    technique: str = "STATIC"
    technique_params: Mapping[str, str] = field(default_factory=dict)
    rca: str = "off"
    exclusion_ok: str = "trace"
    max_slowdown: float = 0.10
    exclusion_max_short: float = 0.25
    app_overrides: Mapping[str, str] = field(default_factory=dict)
    quantum_s: float = 0.0
    bf_interval_s: float = 0.0
    bf: float | None = None
    window: int | None = None
    makespan_cap_s: float | None = None
    adaptive: str = "off"
    tuner_params: Mapping[str, str] = field(default_factory=dict)
    unfair_replayed: bool = False
    values: str | None = None
    drop_hopeless: bool | None = None
    power_cap: float | None = None
    power_cap_w: float | None = None
    power_strategy: str = "best"
    power_dynamic: bool = False
    malleable: str = "none"
    malleable_params: Mapping[str, str] = field(default_factory=dict)
    malleable_fraction: float | None = None
    min_frac: float = 0.5
    max_frac: float = 1.0
    seed: int = 0
    out: str | None = None
    trace: str = "none"
    plots: bool = False
    chunks: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """What a run produced: its summary (config, metrics, statistics) and outcomes."""

    summary: dict[str, Any]
    outcomes: tuple
    header: tuple
    cores_per_host: int
    platform: Any = None
    n_hosts: int = 0
    loops: dict = field(default_factory=dict)
    opt: Any = None
    metrics: dict = field(default_factory=dict)
    allocations: Any = None
    tuning: tuple = ()
    power: Any = None
    columns: Any = None  # the outcomes' `OutcomeColumns` when the simulation made them

    @property
    def host_cores(self) -> tuple[int, ...]:
        """The cores of each host the run used."""
        return _host_cores(self.platform, self.n_hosts)


def _host_cores(platform: Any, n_hosts: int) -> tuple[int, ...]:
    return tuple(h.cores for h in platform.hosts[:n_hosts])


def _rejected(workload):
    from cosim.workload.jobs import JobOutcome

    return tuple(JobOutcome(job=j, start=None, end=None, hosts=(), status="rejected")
                 for j in workload.rejected)


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    """A validated run: its options, inputs and configurations (no simulation yet); `als`
    is None when no job runs an app. `cores_per_host` is the core count jobs are sized in:
    that of every host, or the smallest where the hosts differ (`host_cores`)."""

    opt: RunOptions
    platform: Any
    n_hosts: int
    cores_per_host: int
    workload: Any
    batch: Any
    als: Any

    @property
    def host_cores(self) -> tuple[int, ...]:
        """The cores of each host the run uses."""
        return _host_cores(self.platform, self.n_hosts)

    @property
    def coupled(self) -> bool:
        """True when some job runs an app model (the run needs the application level)."""
        return any(j.app != "rigid" for j in self.workload.jobs)


_DEFAULTS = {f.name: f for f in fields(RunOptions)}
#: the platform of a run that names none (sized by its trace's header: `_machine`)
DEFAULT_PLATFORM = "ib256"


def prepare(opt: RunOptions, warn: Callable[[str], None] | None = None) -> Prepared:
    """Validate `opt` and read its inputs; every bad input raises `InputError` here, before
    any simulation (and, under MPI, on every rank before MPI is used)."""
    from cosim.bls import BatchConfig, policies
    from cosim.bls.config import check_machine
    from cosim.platform import load_platform
    from cosim.workload.batsim import is_batsim, read_batsim
    from cosim.workload.reads import WORKLOADS
    from cosim.workload.swf import read_swf

    for name, field_name, value in (("the quantum", "quantum", opt.quantum_s),
                                    ("the backfill interval", "bf-interval", opt.bf_interval_s)):
        problem = duration_problem(value)
        if problem:
            raise InputError(f"{name} {problem}", field=field_name)
    if opt.makespan_cap_s is not None:
        problem = duration_problem(opt.makespan_cap_s)
        if problem or opt.makespan_cap_s <= 0:
            raise InputError(problem or f"must be > 0 seconds, got {opt.makespan_cap_s!r}",
                             field="makespan-cap")
    quantum, bf_interval = to_ticks(opt.quantum_s), to_ticks(opt.bf_interval_s)
    if quantum and bf_interval % quantum:
        raise InputError(f"the backfill interval ({opt.bf_interval_s:g} s) must be a multiple "
                         f"of the quantum ({opt.quantum_s:g} s): passes happen only on the "
                         "quantum", field="bf-interval")
    if opt.seed < 0:
        raise InputError("the seed must be >= 0", field="seed")
    if opt.trace not in TRACE_LEVELS:
        raise InputError(f"unknown trace level {opt.trace!r} (known: "
                         f"{', '.join(TRACE_LEVELS)})", field="trace")
    # the application level loads only for what uses it: a technique other than the default
    # is checked now, the default when a job runs an app (a batch-only run never loads it)
    default_technique = (opt.technique == _DEFAULTS["technique"].default
                         and not opt.technique_params)
    if not default_technique:
        _als_config(opt)
    platform = load_platform(opt.platform or DEFAULT_PLATFORM)
    n_hosts = _machine(opt, platform, warn)
    if not 1 <= n_hosts <= platform.n_hosts:
        raise InputError(f"{n_hosts} hosts asked, the platform {platform.name!r} has "
                         f"{platform.n_hosts}", field="hosts")
    # jobs are sized in hosts of the smallest core count, so any hosts can run them (whole
    # hosts: `cosim.bls.state`); equal hosts make it the platform's core count
    cores_per_host = min(h.cores for h in platform.hosts[:n_hosts])
    if opt.rca not in RCA_MODES:
        raise InputError(f"unknown RCA mode {opt.rca!r} (known: {', '.join(RCA_MODES)})",
                         field="rca")
    if opt.exclusion_ok not in EXCLUSION_HINTS:
        raise InputError(f"unknown exclusion hint {opt.exclusion_ok!r} (known: "
                         f"{', '.join(EXCLUSION_HINTS)})", field="exclusion-ok")
    # read once per process and file (`cosim.workload.reads`: a sweep's runs share it)
    if is_batsim(opt.workload):
        workload = WORKLOADS.read(read_batsim, opt.workload, warn,
                                  cores_per_host=cores_per_host, max_hosts=n_hosts)
    else:
        workload = WORKLOADS.read(read_swf, opt.workload, warn, cores_per_host=cores_per_host,
                                  max_hosts=n_hosts, procs_field=opt.procs_field,
                                  lenient=opt.lenient,
                                  skip_zero_runtime=opt.skip_zero_runtime)
    if not workload.jobs:
        raise InputError("no job to simulate", file=opt.workload)
    if opt.values is not None:  # per-job values: they win over the trace's CosimApp ones
        from cosim.workload.value import read_values

        betas: dict[int, float] = {}
        values = read_values(opt.values, workload.jobs + workload.rejected,
                             skipped=workload.skipped_ids, betas=betas)

        def valued(jobs: tuple) -> tuple:
            return tuple((replace(j, value=values[j.id], power_beta=betas[j.id],
                                  power_table=None)  # the sidecar's beta wins
                          if j.id in betas else replace(j, value=values[j.id]))
                         if j.id in values else j for j in jobs)

        workload = replace(workload, jobs=valued(workload.jobs),
                           rejected=valued(workload.rejected))
    if opt.exclusion_ok != "trace":
        allow = opt.exclusion_ok == "all"
        workload = replace(workload, jobs=tuple(replace(j, exclusion_ok=allow)
                                                for j in workload.jobs))
    if opt.rca == "full" and warn is not None \
            and not any(j.exclusion_ok and j.app != "rigid" for j in workload.jobs):
        warn("--rca full: no co-simulated job allows exclusion requests, so none will be "
             "sent (--exclusion-ok all allows every job)")
    batch = BatchConfig(priority=opt.priority,
                        backfill="none" if opt.batch == "fcfs" else opt.batch,
                        selection=opt.selection, walltime_kill=opt.walltime_kill,
                        rca=opt.rca != "off", exclusion=opt.rca == "full",
                        exclusion_max_short=opt.exclusion_max_short,
                        malleable=opt.malleable, malleable_params=dict(opt.malleable_params),
                        bf_interval=bf_interval, bf=opt.bf, window=opt.window,
                        makespan_cap=None if opt.makespan_cap_s is None
                        else to_ticks(opt.makespan_cap_s),
                        adaptive=opt.adaptive, tuner_params=dict(opt.tuner_params),
                        drop_hopeless=opt.drop_hopeless, power_cap=opt.power_cap,
                        power_cap_w=opt.power_cap_w, power_strategy=opt.power_strategy,
                        power_dynamic=opt.power_dynamic)
    check_machine(batch, _host_cores(platform, n_hosts))
    if batch.power_capped:
        _check_power(batch, platform, n_hosts, workload, opt.workload, warn)
    if warn is not None:
        _unused_tuning(batch, warn)
        hopeless = [j for j in workload.jobs if j.value is not None
                    and j.value.hard <= j.walltime]
        if hopeless:
            warn(f"{len(hopeless)} jobs (job {hopeless[0].id} first) have a hard threshold "
                 "no later than their requested time: they can earn value only by ending "
                 "early, and value orders drop them at once")
        if policies.priority(batch.priority).value_based \
                and not any(j.value is not None for j in workload.jobs):
            warn(f"--priority {batch.priority}: no job has a value (CosimApp value keys or "
                 "--values), so every job counts as value 1 that never decays")
    if opt.malleable_fraction is not None:
        from cosim.workload.marking import mark_malleable

        workload = replace(workload, jobs=mark_malleable(
            workload.jobs, opt.malleable_fraction, seed=opt.seed, min_frac=opt.min_frac,
            max_frac=opt.max_frac))
    n_pes = n_hosts * cores_per_host
    for j in workload.jobs:
        if j.kind in ("moldable", "malleable") and j.min_pes > n_pes:
            raise InputError(f"job {j.id}: its minimum of {j.min_pes} PEs is larger than the "
                             f"machine ({n_pes} PEs)", file=opt.workload, field="min_pes")
    if warn is not None and batch.malleable != "none" \
            and not any(j.kind in ("moldable", "malleable") for j in workload.jobs):
        warn(f"--malleable {batch.malleable}: no job of the workload is moldable or malleable "
             "(mark them in the trace, or use --malleable-fraction)")
    _check_app_overrides(workload.jobs, opt.app_overrides)
    coupled = any(j.app != "rigid" for j in workload.jobs)
    if warn is not None and not coupled and not default_technique:
        warn(f"--technique {opt.technique}: no job of the workload runs an app, so no "
             "technique is used")
    if opt.unfair_replayed and coupled:
        raise InputError("replayed fair starts need a trace of rigid jobs (no app models)",
                         field="unfair-replayed")
    als = _als_config(opt) if coupled else None
    return Prepared(opt=opt, platform=platform, n_hosts=n_hosts,
                    cores_per_host=cores_per_host, workload=workload, batch=batch, als=als)


def _check_power(batch: Any, platform: Any, n_hosts: int, workload: Any, path: str,
                 warn: Callable[[str], None] | None) -> None:
    """InputError for a power cap the run cannot have (no power table, app jobs, a cap below
    one host), and a warning for the jobs it rejects (`cosim.bls.power`)."""
    from cosim.bls.power import PowerLedger, PowerSettings, budget_mw

    if platform.power is None:
        raise InputError(f"--power-cap needs a power table: the platform {platform.name!r} "
                         "has no [power] table (e.g. --platform platforms/kumbhare2048.toml)",
                         file=platform.source, field="power")
    apps = [j for j in workload.jobs if j.app != "rigid"]
    if apps:
        raise InputError(f"a power cap needs trace jobs: job {apps[0].id} runs the app "
                         f"{apps[0].app!r}, and the application level does not model power",
                         file=path, field="power-cap")
    cap = budget_mw(platform.power, n_hosts, fraction=batch.power_cap, watts=batch.power_cap_w)
    ledger = PowerLedger(PowerSettings(model=platform.power, n_hosts=n_hosts, cap_mw=cap,
                                       strategy=batch.power_strategy,
                                       dynamic=batch.power_dynamic))
    never = [j for j in workload.jobs if ledger.never_fits(j.hosts)]
    if never and warn is not None:
        warn(f"{len(never)} jobs (job {never[0].id} first) need more power than the cap of "
             f"{cap / 1000:g} W at the lowest level --power-strategy {batch.power_strategy} "
             "may give them: they are rejected")


#: the tuner parameters each tunable reads
_TUNER_KEYS = {"bf": {"bf_levels", "q_threshold_min", "q_window_s"},
               "w": {"w_levels", "u_short_s", "u_long_s", "direction"}}


def _unused_tuning(batch: Any, warn: Callable[[str], None]) -> None:
    """Warn about metric-aware options that would change nothing."""
    from cosim.bls import policies
    from cosim.bls.config import initial_tunables

    tunes = {"bf", "w"} if batch.adaptive == "2d" else {batch.adaptive} - {"off"}
    window = initial_tunables(batch).window > 1 or "w" in tunes
    if batch.makespan_cap is not None and not window:
        warn("--makespan-cap: no window search runs (--window 1 and no W tuner)")
    for tunable, keys in _TUNER_KEYS.items():
        for key in sorted(keys & set(batch.tuner_params)):
            if tunable not in tunes:
                warn(f"--tuner-param {key}: --adaptive {batch.adaptive} does not tune "
                     f"{'BF' if tunable == 'bf' else 'W'}, so it is unused")
    if window and batch.malleable != "none" \
            and policies.dynamic(batch.malleable).replaces_backfill:
        warn(f"--window/--adaptive w: --malleable {batch.malleable} replaces the backfill "
             "pass, so no window search runs")


def _machine(opt: RunOptions, platform: Any, warn: Callable[[str], None] | None) -> int:
    """The hosts a run uses: ``--hosts``; else, with neither ``--hosts`` nor ``--platform``,
    the machine the trace describes (an SWF header's ``MaxNodes``, else ``MaxProcs``; a
    Batsim workload's ``nb_res``) on the default platform — a replay of KTH-SP2 runs on its
    100 nodes, not on 256 hosts at 27 % utilization; else all the platform's hosts. A
    described machine other than the one used is warned about; one larger than the default
    platform is an `InputError` asking for a platform."""
    from cosim.workload.batsim import batsim_machine, is_batsim
    from cosim.workload.swf import machine_hosts, read_swf_header

    cores = min(h.cores for h in platform.hosts[:opt.hosts or platform.n_hosts])
    if is_batsim(opt.workload):
        described: tuple[int, str] | None = batsim_machine(opt.workload)
    else:
        described = machine_hosts(read_swf_header(opt.workload), cores, file=opt.workload,
                                  warn=warn)
    if opt.hosts is not None:
        n_hosts = opt.hosts
    elif opt.platform is None and described is not None:
        n_hosts, what = described
        if n_hosts > platform.n_hosts:
            raise InputError(f"its header describes a machine of {n_hosts} hosts ({what}), "
                             f"larger than the default platform {platform.name!r} "
                             f"({platform.n_hosts} hosts): choose one with --platform (a "
                             "file, or e.g. curie5040) or simulate fewer with --hosts",
                             file=opt.workload)
        return n_hosts
    else:
        n_hosts = platform.n_hosts
    if described is not None and described[0] != n_hosts and warn is not None:
        warn(f"{opt.workload}: its header describes a machine of {described[0]} hosts "
             f"({described[1]}); simulating {n_hosts} hosts of {platform.name}")
    return n_hosts


def _als_config(opt: RunOptions) -> Any:
    """The application-level settings of `opt` (an `AlsConfig`; the technique and its
    parameters are checked)."""
    from cosim.als.manager import AlsConfig
    from cosim.als.runtime import Comm
    from cosim.als.techniques import get, make_params

    technique = get(opt.technique)
    make_params(technique, opt.technique_params)
    return AlsConfig(technique=technique, params=dict(opt.technique_params), comm=Comm(),
                     app_overrides=dict(opt.app_overrides), seed=opt.seed,
                     max_slowdown=opt.max_slowdown, record=opt.trace == "full" or opt.chunks)


def _check_app_overrides(jobs: Sequence[Any], overrides: Mapping[str, str]) -> None:
    """``--app-overrides`` on each app of the workload as its jobs will run it (the trace's
    own parameters were checked when it was read): a bad one is an `InputError` now, not when
    the first such job starts."""
    if not overrides:
        return
    from cosim.workload.apps import resolve_app

    seen = set()
    for j in jobs:
        if j.app == "rigid":
            continue
        params = {k: v for k, v in {**overrides, **j.app_params}.items() if k != "total_flop"}
        key = (j.app, tuple(sorted(params.items())))
        if key in seen:
            continue
        seen.add(key)
        try:
            resolve_app(j.app, overrides=params)
        except InputError as exc:
            key = (exc.field or "").removeprefix("app-param")
            raise InputError(f"{exc.problem} (for the {j.app} jobs of the workload)",
                             field="app-overrides" + key) from None


def execute(run: Prepared | RunOptions, warn: Callable[[str], None] | None = None, *,
            comm: Any = None, rank0_apps: bool = False,
            progress: Callable[[int, int], None] | None = None) -> RunRecord:
    """Simulate a prepared run (no file is written); with `comm` (K > 1 ranks) the apps are
    simulated on ranks 1..K-1, which must be running `serve_als` on the same run;
    `progress`: see `cosim.runner.simulate`."""
    from cosim.bls import policies
    from cosim.bls.config import initial_tunables
    from cosim.output.metrics import summary as metrics_summary
    from cosim.runner import simulate

    p = run if isinstance(run, Prepared) else prepare(run, warn)
    opt = p.opt
    coupled = p.coupled  # (a pass over the jobs)
    t0 = time.perf_counter()
    result = simulate(p.workload.jobs, n_hosts=p.n_hosts, platform=p.platform, batch=p.batch,
                      als=p.als if coupled else None, quantum=to_ticks(opt.quantum_s),
                      comm=comm if coupled else None, rank0_apps=rank0_apps,
                      progress=progress)
    wall = time.perf_counter() - t0
    rejected = _rejected(p.workload)
    outcomes = tuple(result.outcomes) + rejected
    columns = None
    if result.make_columns is not None:  # the replay's, with the jobs rejected at reading
        from cosim.output.columns import OutcomeColumns

        columns = result.make_columns().joined(OutcomeColumns.of(rejected))
    w = p.workload
    start = initial_tunables(p.batch)
    metrics = metrics_summary(outcomes, p.n_hosts, cores_per_host=p.host_cores,
                              allocations=result.allocations, power=result.power,
                              columns=columns)
    if opt.unfair_replayed:  # Sabin's count: one replay per job (quadratic, opt-in)
        from cosim.output.metrics import unfair_jobs_replayed
        from cosim.runner import replayed_fair_starts

        fair = replayed_fair_starts(p.workload.jobs, n_hosts=p.n_hosts,
                                    cores_per_host=p.cores_per_host, config=p.batch,
                                    quantum=to_ticks(opt.quantum_s))
        metrics["unfair_jobs_replayed"] = unfair_jobs_replayed(outcomes, fair)
    simulation_stats, execution = result.stats.split()
    summary = {
        "workload": str(opt.workload),
        "platform": p.platform.name,
        "hosts": p.n_hosts,
        "batch": opt.batch,
        "priority": opt.priority,
        # the tunables the run starts with (BF only where the priority has one)
        "bf": start.bf if "bf" in policies.priority(p.batch.priority).tunables else None,
        "window": start.window,
        "adaptive": p.batch.adaptive,
        "selection": opt.selection,
        "walltime_kill": opt.walltime_kill,
        "technique": p.als.technique.name if coupled else None,
        "rca": opt.rca,
        "malleable": p.batch.malleable,
        "quantum_s": opt.quantum_s,
        "bf_interval_s": opt.bf_interval_s,
        **({"power_strategy": p.batch.power_strategy, "power_dynamic": p.batch.power_dynamic}
           if p.batch.power_capped else {}),
        **metrics,
        "skipped": {"runtime": w.skipped_runtime, "cancelled": w.skipped_cancelled,
                    "no_procs": w.skipped_procs, "too_big": w.rejected_too_big,
                    "bad_lines": w.bad_lines},
        "skipped_why": {
            "runtime": "run time unknown (-1)" + (" or 0 (--skip-zero-runtime)"
                                                  if opt.skip_zero_runtime else ""),
            "cancelled": "status 5 (cancelled) and no run time: never started",
            "no_procs": "no processor count in fields 8 and 5",
            "too_big": f"more hosts than the {p.n_hosts} simulated (rejected)",
            "bad_lines": "malformed lines skipped by --lenient"},
        "stats": simulation_stats,
        "execution": execution,
        "wall_s": wall,
    }
    return RunRecord(summary=summary, outcomes=outcomes, header=w.header,
                     cores_per_host=p.cores_per_host, platform=p.platform, n_hosts=p.n_hosts,
                     loops=dict(result.loops), opt=opt, metrics=metrics,
                     allocations=result.allocations, tuning=result.tuning,
                     power=result.power, columns=columns)


def serve_als(run: Prepared, comm: Any, abandoned: Callable[[], bool] | None = None, *,
              rank0_apps: bool = False) -> None:
    """The part of an ALS rank (1..K-1) in a prepared run: simulate the apps rank 0 sends,
    and before their start those its placement plans for this rank (`rank0_apps` as rank
    0's). `abandoned()`: polled until rank 0's hello; True ends the part (a sweep's run that
    failed on its first rank before the hello)."""
    if not run.coupled:
        return  # a batch-only run happens on rank 0 alone
    from cosim.als.manager import AppSimulator
    from cosim.placement import ahead_plan, app_ranks
    from cosim.runner import ahead_jobs, settled, upcoming_apps
    from cosim.transport.mpi import serve

    jobs = run.workload.jobs
    final = settled(run.batch, jobs)
    plan = ahead_plan(jobs, app_ranks(comm.size, rank0_apps, run.als.technique, final),
                      run.n_hosts)
    serve(comm, lambda: AppSimulator(platform=run.platform, config=run.als, bounds=True,
                                     upcoming=upcoming_apps(jobs),
                                     ahead=ahead_jobs(jobs, plan, comm.rank),
                                     settled=final), abandoned)


def plan(opt: RunOptions) -> list[RunOptions]:
    """The runs of ``cosim run``: one, or for the main job RCA off then RCA on (``yield``,
    or ``full`` when asked for)."""
    if opt.workload:
        return [opt]
    main = replace(opt, workload=str(MAIN_WORKLOAD))
    return [replace(main, rca="off"), replace(main, rca="full" if opt.rca == "full" else "yield")]


#: The options in a default directory's readable part, and those that change nothing the
#: simulation decides (what is written, where): the others go into its hash (`config_tag`)
_NAMED = frozenset(("workload", "batch", "priority", "technique", "rca", "malleable"))
#: RunOptions fields that change only what is written and where, never a result
OUTPUT_ONLY = frozenset(("out", "trace", "plots", "chunks"))


#: options whose value is a table of key = value (strings)
OPTION_MAPPINGS = frozenset(("technique_params", "app_overrides", "malleable_params",
                             "tuner_params"))


@functools.cache
def _option_types() -> dict[str, Any]:
    """`RunOptions`' field types (resolved once: a sweep types thousands of values)."""
    return typing.get_type_hints(RunOptions)


def option_value(key: str, value: Any, *, exclude: frozenset[str] = frozenset(),
                 where: str | None = None) -> Any:
    """`value` (a TOML or Python value, or a CLI string) for the `RunOptions` field `key`,
    typed like it; `InputError` (field `where`, default `key`) for an unknown key, one in
    `exclude`, or a value of the wrong type."""
    hints = _option_types()
    where = where or key
    if key in exclude or key not in hints:
        known = sorted(k for k in hints if k not in exclude)
        raise InputError(f"not a run option (known: {', '.join(known)})", field=where)
    if key in OPTION_MAPPINGS:
        if not isinstance(value, Mapping):
            raise InputError("a table of key = value", field=where)
        return {str(k): str(v) for k, v in value.items()}
    from cosim.config import coerce

    try:
        return coerce(value, hints[key], where=where)
    except InputError as exc:
        raise InputError(exc.problem, field=where) from None


def option_text(value: Any) -> Any:
    """An option's value as a table or a label shows it: a mapping as sorted ``k=v`` words
    (None when empty), anything else as it is."""
    if isinstance(value, Mapping):
        return " ".join(f"{k}={v}" for k, v in sorted(value.items())) or None
    return value


def config_tag(opt: RunOptions) -> str:
    """``-`` + 8 hex digits of a hash of every option that changes results and is not in the
    readable part of a default directory name, when one differs from its default (else
    ``""``): two runs that would differ never share a default directory."""
    defaults = RunOptions(workload=opt.workload)
    changed = {f.name: getattr(opt, f.name) for f in fields(RunOptions)
               if f.name not in _NAMED | OUTPUT_ONLY
               and getattr(opt, f.name) != getattr(defaults, f.name)}
    if not changed:
        return ""
    import hashlib  # (here: a run with the default options or its own --out needs none)

    text = json.dumps({k: dict(v) if isinstance(v, Mapping) else v
                       for k, v in sorted(changed.items())}, sort_keys=True)
    return "-" + hashlib.sha256(text.encode()).hexdigest()[:8]


def default_out(opt: RunOptions) -> Path:
    """``runs/<workload>-<batch>-<priority>[-<technique>-rca-<rca>][-<malleable>][-<tag>]``
    (`config_tag`: the other options that change results)."""
    stem = Path(opt.workload).name.split(".")[0]
    name = f"{stem}-{opt.batch}-{opt.priority}"
    if opt.rca != "off" or opt.technique != "STATIC":
        name += f"-{opt.technique}-rca-{opt.rca}"
    if opt.malleable != "none":
        name += f"-{opt.malleable}"
    return Path("runs") / (name + config_tag(opt))


def tables_of(record: RunRecord, run_id: str, columns: Any = None) -> Any:
    """The run as `cosim.output.tables.RunTables` (for ``results.h5``, traces and plots);
    `columns`: its outcomes' `cosim.output.columns.OutcomeColumns` when the caller has them
    (default: the record's own, when its simulation made them).

    Its stats are the summary's, without the execution's (ranks, rounds, wall-clock times:
    `cosim.runner.EXECUTION_STATS`, under ``execution`` in ``summary.json``), so
    ``results.h5`` holds only what the simulation determines, apart from its provenance: the
    same on any number of ranks, run after run."""
    from dataclasses import asdict

    from cosim.output.tables import build_tables

    config = {k: (dict(v) if isinstance(v, Mapping) else v)
              for k, v in asdict(record.opt).items() if k != "out"}
    stats = dict(record.summary["stats"])
    technique = record.summary.get("technique") or ""
    return build_tables(record.outcomes, run_id=run_id, config=config,
                        metrics=record.metrics, stats=stats, platform=record.platform,
                        n_hosts=record.n_hosts, loops=record.loops, technique=technique,
                        allocations=record.allocations, tuning=record.tuning,
                        power=record.power,
                        columns=record.columns if columns is None else columns)


def write_outputs(record: RunRecord, out: Path, *, run_id: str | None = None,
                  results: Path | None = None, first: bool = True,
                  argv: Sequence[str] | None = None, summary: bool = True) -> Any:
    """The files of one run under `out`, each atomically: ``jobs.csv``, ``schedule.swf``, the
    OTF2 trace ``trace/`` (when asked for), the run added to ``results.h5`` (`results`,
    default ``out/results.h5``; a new file when `first`, else appended), then
    ``summary.json``, which marks a complete run (``summary=False``: the caller writes it
    last, once the plots are drawn). Returns the run's `RunTables`."""
    from cosim.output.columns import OutcomeColumns
    from cosim.output.hdf5 import append_run, command_provenance, write_results
    from cosim.output.runfiles import write_jobs_csv, write_summary
    from cosim.workload.batsim import write_batsim_jobs
    from cosim.workload.swf_write import write_swf

    opt = record.opt
    run_id = run_id or out.name
    # gathered once for every file (or as the simulation made them)
    cols = record.columns or OutcomeColumns.of(record.outcomes)
    write_jobs_csv(out / "jobs.csv", record.outcomes, cols)
    write_batsim_jobs(out / "batsim_jobs.csv", record.outcomes,
                      workload=Path(opt.workload).name.split(".")[0], columns=cols)
    write_swf(out / "schedule.swf", record.outcomes, header=record.header,
              cores_per_host=record.host_cores,
              prefer_fracs=(opt.min_frac, opt.max_frac), columns=cols)
    tables = tables_of(record, run_id, cols)
    if opt.trace != "none":
        from cosim.output.trace import write_trace

        t0 = time.perf_counter()
        counts = write_trace(out / "trace", tables, level=opt.trace)
        record.summary["trace"] = {"path": str(out / "trace" / "traces.otf2"),
                                   "level": opt.trace, "events": counts.events,
                                   "wall_s": time.perf_counter() - t0}
    results = results or out / "results.h5"
    provenance = command_provenance(argv)
    if first:
        write_results(results, [tables], provenance=provenance, chunks=opt.chunks)
    else:
        append_run(results, tables, provenance=provenance, chunks=opt.chunks)
    record.summary["results"] = str(results)
    record.summary["run_id"] = run_id
    record.summary["out"] = str(out)
    if summary:
        write_summary(out / "summary.json", record.summary)
    return tables


def main_out(opt: RunOptions, rca: str) -> Path:
    """Output directory of one run of the main job."""
    base = Path(opt.out) if opt.out else Path("runs") / (
        f"main-{Path(MAIN_WORKLOAD).name.split('.')[0]}-{opt.technique}"
        + ("" if opt.malleable == "none" else f"-{opt.malleable}") + config_tag(opt))
    return base / f"rca-{rca}"
