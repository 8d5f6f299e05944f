#!/usr/bin/env python3
"""Reproduce SD-Policy's MAX_SLOWDOWN study (D'Amico, Jokanovic & Corbalan, ICPP'19, §4.1-4.3,
Figures 1-3) on the traces cosim ships, and run the same study with DLS apps (ESP).

**Trace study.** For each trace (``--traces lublin,kth``: Lublin-256 and KTH-SP2), its first
``--jobs`` jobs (SWF order, i.e. by submit time) run on a machine of 48-core hosts like
MareNostrum 4 (``--cores-per-host 48``). The host count follows the trace's size, its
``MaxProcs`` header (``MaxNodes`` when there is none: Lublin-256 has 256, KTH-SP2 100):
``--hosts-rule ceil`` = ``ceil(MaxProcs / 48)``, so every job fits (Lublin 6
hosts = 288 cores, KTH 3 hosts = 144 cores); ``round`` = ``MaxProcs / 48`` rounded (at least
1; Lublin 5, KTH 2: the jobs that no longer fit are rejected and counted); ``load`` = as many
hosts as make the whole trace's offered load in whole hosts equal to its load on its own
processors (Lublin 10, KTH 13: it removes the overload whole-node allocation creates; the
default, since the overloaded ``ceil`` machines give averages that depend on ``--jobs``).
SWF processors (field 8) map onto ``ceil(procs / 48)`` hosts, which a job holds whole, as
Slurm's ``select/linear`` gives whole nodes (spec §1.1). ``--job-pes whole-hosts`` (default)
makes the job's tasks fill those hosts (``pes = hosts x 48``: the paper's full-node sharing,
where a guest gets ``SharingFactor`` = half of each mate's cores and the two runtime models
agree except when a mate ends first, §1.5 (c)); ``--job-pes trace`` keeps the SWF processor
count (a 16-processor job uses 16 of its host's 48 cores and a guest takes the idle cores
first, as in the fork's DROM layer; a guest that fits in a mate's idle cores takes nothing
from it). **Whole-node allocation raises the offered load** well above the trace's own (a
1-processor job holds 48 cores): the script prints both.

Two schedules of the same jobs: **static** = EASY backfilling, FCFS, first-fit, walltime kill
(``BatchConfig()``); **SD** = ``BatchConfig(malleable="sd")`` with ``--fraction`` of the jobs
malleable (default 1.0: every job, as the authors' Slurm fork does; keyed draw with
``--seed``, bounds half to all of the request), SharingFactor 0.5, at most 2 mates,
node-weighted objective, the static-versus-malleable rule on (the paper's Listing 1), for
each cut-off of ``--cutoffs`` (MAX_SLOWDOWN 5, 10, 50, ``inf`` = no cut-off, ``dyn`` =
DynAVGSD) and each runtime model of ``--models`` (``ideal``, Eq. 5; ``worst``, Eq. 6).
``--sd-param K=V`` passes any other SD-Policy parameter (``compare_static=false`` is the
fork, ``weighting=none`` the paper's Eq. 1, ``sharing_factor=``, ``max_mates=``, ...).

**Metrics** (per trace x cut-off x model, normalised to static): makespan (last end - first
submit), mean response time (end - submit) and the paper's **mean slowdown** = response /
*static* execution time, the job's run time in the static EASY run (a guest's slowdown thus
includes its stretching; ``cosim``'s `mean_slowdown`, response over the run time the job
actually had, is in ``results.csv`` as ``mean_slowdown_run``). Then the jobs started as
malleable guests (`RunStats.guest_starts`, and their share of the jobs: the paper's 10.3 %),
the **distinct mates** (distinct ``owner`` of the allocation log's guest rows: the paper's
8.6 %), the shrink commands, and the **malleability latency** (`RunStats.release_wait_s` per
guest and `release_wait_max_s`: how long guests waited for their mates to release PEs; 0 for
trace jobs, which release at once).

**ESP study** (``--esp-apps mandelbrot,psia``, ``none`` to skip): ESP generated with
``--malleable`` (every job but Z malleable, min half its request) for ``--esp-hosts`` (32)
hosts of ``ib256`` (one core per host, so SD-Policy shares whole hosts in time: cosim's
extension), Mandelbrot ``--width`` 64 to be fast, PSIA at its defaults; static EASY vs SD
(cut-off ``--esp-cutoff``, default 10) under each technique of ``--techniques`` (STATIC, GSS,
FAC2; SS is slow). Mates are self-scheduled loops: a PE leaves only when its chunk in flight
ends, so guests wait — the latency column shows for how long, by technique.

After the tables, the script prints what the paper found and why cosim's inputs differ (the
paper's W1-W4 workloads are not available here; spec docs/reference/malleability.md §2.2-2.4).

Outputs under ``--out`` (default ``runs/sd``): ``sd-slowdown.png``, ``sd-response.png``,
``sd-makespan.png`` (normalised bars per cut-off, one panel per model, cf. the paper's Figures
1-3), ``sd-esp.png``, ``results.csv`` (one row per simulation), and the generated ESP files.
The default run (``--jobs 2000`` per trace: SD-Policy walks the whole queue at every pass,
and the default machines build queues of hundreds of jobs) takes about 3 minutes on 2 cores;
``--quick`` (150 jobs, cut-offs 10/inf/dyn, 16-host ESP-Mandelbrot, STATIC and GSS) about
6 s. Simulations run in ``--workers`` processes (default: the CPUs available); the results
do not depend on it.

Usage: ``python scripts/reproduce_sd.py [--traces lublin,kth] [--jobs N] [--cutoffs
5,10,50,inf,dyn] [--models ideal,worst] [--fraction 1.0] [--hosts-rule ceil|round|load]
[--job-pes whole-hosts|trace] [--esp-apps mandelbrot,psia] [--techniques STATIC,GSS,FAC2]
[--quick] [--out runs/sd]``.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace

PROG = "reproduce_sd"
#: trace key -> (file under traces/, label)
TRACES = {"lublin": ("lublin_256.swf.gz", "Lublin-256"),
          "kth": ("KTH-SP2-1996-2.1-cln.swf.gz", "KTH-SP2")}
DEFAULT_JOBS = 2000
DEFAULT_CUTOFFS = "5,10,50,inf,dyn"
QUICK = {"jobs": 150, "cutoffs": "10,inf,dyn", "esp_apps": "mandelbrot", "esp_hosts": 16,
         "techniques": "STATIC,GSS"}
MODELS = ("ideal", "worst")
ESP_APPS = ("mandelbrot", "psia")
#: metric key -> (label, figure file)
METRICS = {"slowdown": ("mean slowdown (response / static run time)", "sd-slowdown.png"),
           "response": ("mean response time", "sd-response.png"),
           "makespan": ("makespan", "sd-makespan.png")}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        fail(message)


def fail(message: str, status: int = 2) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(status)


@dataclass(frozen=True, slots=True)
class Cutoff:
    """One cut-off of the sweep: its key in tables, its label and its SD-Policy params."""

    key: str
    label: str
    params: tuple[tuple[str, str], ...]


def parse_cutoff(text: str, what: str) -> Cutoff:
    t = text.strip().lower()
    if t in ("inf", "none", "∞"):
        return Cutoff("inf", "MAXSD ∞", (("cutoff", "none"),))
    if t in ("dyn", "dynamic", "dynavgsd"):
        return Cutoff("dyn", "DynAVGSD", (("cutoff", "dynamic"),))
    try:
        x = float(t)
    except ValueError:
        fail(f"{what}: {text!r} is not a number, inf or dyn")
    if not (math.isfinite(x) and x > 0):
        fail(f"{what}: {text!r} must be a finite number > 0, inf or dyn")
    return Cutoff(f"{x:g}", f"MAXSD {x:g}",
                  (("cutoff", "fixed"), ("max_slowdown", repr(x))))


def names(text: str, what: str, known: tuple[str, ...]) -> tuple[str, ...]:
    out = tuple(s.strip() for s in text.split(","))
    for s in out:
        if s not in known:
            fail(f"{what}: unknown {s!r} (known: {', '.join(known)})")
    if len(set(out)) != len(out):
        fail(f"{what}: repeated value in {text!r}")
    return out


# -- simulations (run in worker processes) --------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class TraceTask:
    """One simulation of a trace: static (cutoff None) or SD with a cut-off and a model."""

    trace: str
    jobs: int
    hosts: int
    cores: int
    job_pes: str
    fraction: float
    seed: int
    cutoff: Cutoff | None = None
    model: str = ""
    sd_params: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class EspTask:
    """One ESP co-simulation: static (sd False) or SD, under one technique."""

    app: str
    path: str
    hosts: int
    technique: str
    width: int
    sd: bool
    sd_params: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True, kw_only=True)
class Result:
    """What one simulation measured (seconds), with per-job arrays for the paper's slowdown."""

    ids: object = None       # job ids of the jobs that ran, ascending (numpy int64)
    response: object = None  # end - submit, ticks
    run: object = None       # end - start, ticks
    makespan_s: float = 0.0
    response_s: float = 0.0
    slowdown_run: float = 0.0
    bsld: float = 0.0
    utilization: float = 0.0
    killed: int = 0
    rejected: int = 0
    guests: int = 0
    mates: int = 0
    shrinks: int = 0
    expands: int = 0
    wait_s: float = 0.0
    wait_max_s: float = 0.0
    wall_s: float = 0.0
    error: str = ""


def trace_jobs(task: TraceTask) -> tuple[list, int]:
    """The task's jobs (first N of the trace, PEs by --job-pes) and the count rejected."""
    from cosim.paths import TRACES_DIR
    from cosim.workload.swf import read_swf

    w = read_swf(TRACES_DIR / TRACES[task.trace][0], cores_per_host=task.cores,
                 max_hosts=task.hosts)
    # the first N jobs of the trace, rejected ones included in the count
    first = sorted(w.jobs + w.rejected, key=lambda j: (j.submit, j.id))[:task.jobs]
    keep = {j.id for j in first}
    jobs = [j for j in w.jobs if j.id in keep]
    if task.job_pes == "whole-hosts":
        jobs = [replace(j, pes=j.hosts * task.cores) for j in jobs]
    return jobs, len(first) - len(jobs)


def _measure(allocations, stats, outcomes, n_hosts: int, wall: float) -> Result:
    """The metrics of one run (`stats`: `RunStats` or an object with its attributes)."""
    import numpy as np

    from cosim.bls.alloclog import GUEST
    from cosim.output import metrics as M

    ran = [o for o in outcomes if o.status != "rejected"]
    a = allocations
    mates = 0 if a is None else len(np.unique(a["owner"][a["role"] == GUEST]))
    st = stats
    return Result(
        ids=np.fromiter((o.job.id for o in ran), np.int64, len(ran)),
        response=np.fromiter((o.end - o.job.submit for o in ran), np.int64, len(ran)),
        run=np.fromiter((o.end - o.start for o in ran), np.int64, len(ran)),
        makespan_s=M.makespan(ran), response_s=M.mean_response(ran),
        slowdown_run=M.mean_slowdown(ran), bsld=M.mean_bounded_slowdown(ran),
        utilization=M.utilization(ran, n_hosts, allocations=a),
        killed=sum(o.status == "killed" for o in ran), rejected=len(outcomes) - len(ran),
        guests=st.guest_starts, mates=mates, shrinks=st.shrinks, expands=st.expands,
        wait_s=st.release_wait_s, wait_max_s=st.release_wait_max_s, wall_s=wall)


def run_trace(task: TraceTask) -> Result:
    from cosim.bls import BatchConfig
    from cosim.errors import ProtocolError
    from cosim.runner import simulate
    from cosim.workload.marking import mark_malleable
    from cosim.workload.runtime_models import RuntimeModel

    jobs, rejected = trace_jobs(task)
    if task.cutoff is None:
        cfg = BatchConfig()
    else:
        cfg = BatchConfig(malleable="sd",
                          malleable_params=dict(task.cutoff.params + task.sd_params))
        jobs = list(mark_malleable(jobs, task.fraction, seed=task.seed,
                                   model=RuntimeModel(name=task.model)))
    t0 = time.perf_counter()
    try:
        res = simulate(jobs, n_hosts=task.hosts, cores_per_host=task.cores, batch=cfg)
    except ProtocolError as exc:
        return Result(error=str(exc))
    r = _measure(res.allocations, res.stats, res.outcomes, task.hosts,
                 time.perf_counter() - t0)
    r.rejected += rejected
    return r


def run_esp(task: EspTask) -> Result:
    from cosim.errors import CosimError
    from cosim.experiment import RunOptions, execute

    opt = RunOptions(workload=task.path, hosts=task.hosts, technique=task.technique,
                     malleable="sd" if task.sd else "none",
                     malleable_params=dict(task.sd_params) if task.sd else {},
                     app_overrides={"width": str(task.width)} if task.app == "mandelbrot"
                     else {})
    t0 = time.perf_counter()
    try:
        rec = execute(opt)
    except CosimError as exc:
        return Result(error=str(exc))
    return _measure(rec.allocations, SimpleNamespace(**rec.summary["stats"]), rec.outcomes,
                    rec.n_hosts, time.perf_counter() - t0)


def run(task: TraceTask | EspTask) -> Result:
    return run_trace(task) if isinstance(task, TraceTask) else run_esp(task)


# -- analysis ---------------------------------------------------------------------------------

def static_slowdown(r: Result, base: Result) -> float:
    """Mean over the jobs that ran in both of response / the job's run time in `base`."""
    import numpy as np

    common, i, j = np.intersect1d(r.ids, base.ids, assume_unique=True, return_indices=True)
    if not len(common):
        return math.nan
    run0 = base.run[j]
    keep = run0 > 0
    return float(np.mean(r.response[i][keep] / run0[keep]))


@dataclass(slots=True, kw_only=True)
class Row:
    """One line of a table: a simulation and its values normalised to its static run."""

    study: str
    workload: str
    variant: str      # model (trace study) or technique (ESP)
    cutoff: str       # cut-off label, or "static"
    jobs: int
    hosts: int
    r: Result
    slowdown: float
    norm: dict = field(default_factory=dict)


def offered_load(jobs: list, hosts: int, cores: int) -> tuple[float, float]:
    """(host-level load, PE-level load): the jobs' area over the machine's, from the first to
    the last submission."""
    if len(jobs) < 2:
        return math.nan, math.nan
    span = max(j.submit for j in jobs) - min(j.submit for j in jobs)
    if span <= 0:
        return math.nan, math.nan
    host_area = sum(j.hosts * j.runtime for j in jobs)
    pe_area = sum(j.pes * j.runtime for j in jobs)
    return host_area / (hosts * span), pe_area / (hosts * cores * span)


def pct(x: float) -> str:
    return f"{(x - 1) * 100:+.1f}%" if math.isfinite(x) else "n/a"


def print_table(title: str, rows: list[Row], variant_name: str) -> None:
    if title:
        print(title)
    head = (f"{variant_name:<8}{'cut-off':<11}{'makespan':>9}{'response':>10}{'slowdown':>10}"
            f"{'guests':>8}{'%jobs':>7}{'mates':>7}{'%jobs':>7}{'shrinks':>8}"
            f"{'latency mean/max s':>20}{'killed':>7}{'wall s':>8}")
    print(head)
    print("-" * len(head))
    for row in rows:
        r = row.r
        n = max(1, len(r.ids))
        lat = (f"{r.wait_s / r.guests:,.0f} / {r.wait_max_s:,.0f}" if r.guests else "-")
        if row.cutoff == "static":
            vals = f"{'1':>9}{'1':>10}{'1':>10}"
        else:
            vals = "".join(f"{row.norm[k]:>{w}.3f}" for k, w in
                           (("makespan", 9), ("response", 10), ("slowdown", 10)))
        print(f"{row.variant:<8}{row.cutoff:<11}{vals}{r.guests:>8,}{r.guests / n:>7.1%}"
              f"{r.mates:>7,}{r.mates / n:>7.1%}{r.shrinks:>8,}{lat:>20}{r.killed:>7,}"
              f"{r.wall_s:>8.1f}")


def bar_figure(path: Path, metric: str, traces: tuple[str, ...], cutoffs: list[Cutoff],
               models: tuple[str, ...], norm: dict, subtitle: str) -> None:
    """Normalised bars per cut-off, a group per trace, a panel per model (cf. Figures 1-3)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, len(models), figsize=(2.2 + 3.4 * len(models)
                                                      + 0.9 * len(traces) * len(cutoffs) / 5,
                                                      4.4),
                             sharey=True, constrained_layout=True, squeeze=False)
    x = np.arange(len(traces))
    width = 0.8 / len(cutoffs)
    top = max([1.0] + [v for v in norm.values() if math.isfinite(v)])
    for ax, model in zip(axes[0], models):
        for k, cut in enumerate(cutoffs):
            vals = [norm.get((t, model, cut.key), math.nan) for t in traces]
            bars = ax.bar(x + (k - (len(cutoffs) - 1) / 2) * width, vals, width,
                          label=cut.label, color=f"C{k}")
            ax.bar_label(bars, fmt="%.2f", fontsize=7, rotation=90, padding=2)
        ax.axhline(1.0, color="k", lw=0.9, ls="--", label="static EASY = 1")
        ax.set_xticks(x, [TRACES[t][1] for t in traces])
        ax.set_title(f"{model} runtime model")
        ax.set_ylim(0, top * 1.18)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel(f"{METRICS[metric][0]}\nSD-Policy / static backfill")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="outside right center")
    fig.suptitle(f"SD-Policy vs EASY: {METRICS[metric][0]}, normalised (cf. paper Figures 1-3)"
                 f"\n{subtitle}", fontsize=9)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def esp_figure(path: Path, rows: list[Row], subtitle: str) -> None:
    """SD / static per ESP app x technique, one panel per metric, latency annotated."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    sd = [r for r in rows if r.cutoff != "static"]
    labels = [f"{r.workload.removeprefix('ESP-')}\n{r.variant}" for r in sd]
    fig, axes = plt.subplots(1, 3, figsize=(3 + 1.5 * len(sd), 4.6),
                             constrained_layout=True)
    x = np.arange(len(sd))
    for ax, metric in zip(axes, ("slowdown", "response", "makespan")):
        vals = [r.norm[metric] for r in sd]
        bars = ax.bar(x, vals, 0.6, color=[f"C{i % 10}" for i in range(len(sd))])
        ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)
        ax.axhline(1.0, color="k", lw=0.9, ls="--")
        ax.set_xticks(x, labels, fontsize=7)
        ax.set_title(METRICS[metric][0], fontsize=9)
        ax.set_ylim(0, max([1.0] + [v for v in vals if math.isfinite(v)]) * 1.2)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("SD-Policy / static EASY")
    items = [f"{r.workload} {r.variant}: {r.r.guests} guests, "
             f"{(r.r.wait_s / r.r.guests) if r.r.guests else 0:,.0f} s mean wait" for r in sd]
    lat = "\n".join("; ".join(items[i:i + 3]) for i in range(0, len(items), 3))
    fig.suptitle(f"SD-Policy with DLS apps (ESP), {subtitle}; malleability latency:\n{lat}",
                 fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)


PAPER = """\
What the paper found (D'Amico, Jokanovic & Corbalan, ICPP'19, §4; spec §2.2):
  - §4.1, W1-W4 (Cirne, Cirne with exact estimates, RICC-sept, CEA-Curie), SF 0.5, ideal
    model, normalised to static backfill: mean slowdown down by up to 49.5 % (W1), 31 % (W2),
    25.7 % (W3) and 70.4 % (W4); mean response time down by up to 50 % (W4); makespan "about
    constant". Raising MAX_SLOWDOWN improves W1-W3; MAXSD ∞ never loses against static; W2
    is not monotonic (worse at 50, DynAVGSD best); W4's best is MAXSD 10.
  - §4.2, W4 (CEA-Curie, 198,509 jobs) at MAXSD 10: 20,476 jobs scheduled malleably (10.3 %)
    and 17,102 distinct mates (8.6 %); slowdown -70.4 % "while keeping makespan constant".
  - §4.3, worst-case vs ideal model (DynAVGSD): response +11 % (W1), < 1.5 % (W3, W4);
    slowdown +16 % (W1), +3.5 % (W3), +1 % (W4); makespan < 1 % except W3 (+9 %); W2
    unaffected; the worst case still beats static.
  - §4.4, real run on MareNostrum 4 (49 x 48 cores, W5): makespan -7 %, response and slowdown
    about -16 %, energy -6 %; 539 malleable starts.
Why cosim's inputs differ (spec §2.3-2.4):
  - The paper's workloads are not available here. W1, W2 (and W5) come from the Cirne-Berman
    model, for which no public generator was found; RICC-2010 and CEA-Curie-2011 are in the
    Parallel Workloads Archive but cannot be fetched in this workspace, and "RICC-sept" is an
    undefined 10,000-job extract. Lublin-256 (a model, exact estimates: requested = run time,
    like W2) and KTH-SP2 (a real log with user estimates, like W1, W3, W4) stand in.
  - Only the "up to" numbers are published (the figures' values are not in the text), and
    Table 1's averages contradict the text's 8.6 % W1/W2 gap (§2.3): compare directions and
    orders of magnitude, not digits.
  - The fork's and the paper's readings differ (spec §1.2-1.3): cosim's default keeps the
    paper's static-versus-malleable check and the fork's node-weighted objective."""
OVERLOAD = """\
  - Whole-node allocation on a few 48-core hosts loads these machines far beyond the traces'
    own ({loads}): the queue grows for as long as jobs arrive, so the averages depend on
    --jobs and on small changes of the schedule, and SD-Policy's penalty (wait + walltime) /
    walltime grows with every job's wait, so fixed cut-offs find ever fewer mates as the
    backlog grows. --hosts-rule load sizes the machines to keep each trace's own load."""


def summarise(rows_by: dict, traces: tuple[str, ...], models: tuple[str, ...],
              cutoffs: list[Cutoff]) -> list[str]:
    """A few lines of what cosim found, in the paper's terms."""
    out = ["What cosim found here (SD-Policy / static EASY; negative = better):"]
    for t in traces:
        rows = [rows_by[(t, m, c.key)] for m in models for c in cutoffs
                if (t, m, c.key) in rows_by]
        if not rows:
            continue
        best = min(rows, key=lambda r: r.norm["slowdown"])
        bresp = min(rows, key=lambda r: r.norm["response"])
        mk = [r.norm["makespan"] for r in rows]
        worse = [f"{r.cutoff} ({r.variant})" for r in rows if r.norm["slowdown"] > 1]
        out.append(f"  - {TRACES[t][1]}: slowdown {pct(best.norm['slowdown'])} at best "
                   f"({best.cutoff}, {best.variant}), response {pct(bresp.norm['response'])} at "
                   f"best ({bresp.cutoff}, {bresp.variant}), makespan {pct(min(mk))} .. "
                   f"{pct(max(mk))}; guests {best.r.guests / max(1, len(best.r.ids)):.1%} and "
                   f"distinct mates {best.r.mates / max(1, len(best.r.ids)):.1%} of the jobs at "
                   f"the best slowdown" + (f"; worse than static: {', '.join(worse)}"
                                           if worse else ""))
        if len(models) == 2:
            diffs = [rows_by[(t, models[1], c.key)].norm["slowdown"]
                     / rows_by[(t, models[0], c.key)].norm["slowdown"] - 1 for c in cutoffs
                     if (t, models[0], c.key) in rows_by and (t, models[1], c.key) in rows_by]
            if diffs:
                out.append(f"    {models[1]} vs {models[0]} model, slowdown: "
                           f"{min(diffs) * 100:+.1f} % .. {max(diffs) * 100:+.1f} % over the "
                           "cut-offs")
    return out


# -- main -------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="lublin,kth",
                    help="lublin, kth (comma-separated), or none")
    ap.add_argument("--jobs", type=int, default=None,
                    help=f"first N jobs of each trace (default {DEFAULT_JOBS}; 0 = all)")
    ap.add_argument("--cutoffs", default=None,
                    help=f"MAX_SLOWDOWN values, inf (no cut-off) and dyn (DynAVGSD) "
                         f"(default {DEFAULT_CUTOFFS})")
    ap.add_argument("--models", default="ideal,worst", help="runtime models: ideal, worst")
    ap.add_argument("--fraction", type=float, default=1.0,
                    help="share of the jobs marked malleable (default 1.0)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the malleable draw and ESP")
    ap.add_argument("--cores-per-host", type=int, default=48)
    ap.add_argument("--hosts-rule", choices=("ceil", "round", "load"), default="load",
                    help="hosts = ceil or round of the trace's MaxProcs / cores per host, or "
                         "as many as keep the trace's offered load under whole-host allocation")
    ap.add_argument("--job-pes", choices=("whole-hosts", "trace"), default="whole-hosts",
                    help="a job's PEs: every core of its hosts, or the SWF processors")
    ap.add_argument("--sd-param", action="append", default=[], metavar="K=V",
                    help="another SD-Policy parameter (repeatable), e.g. compare_static=false")
    ap.add_argument("--esp-apps", default=None,
                    help="ESP apps: mandelbrot, psia, or none (default mandelbrot,psia)")
    ap.add_argument("--esp-hosts", type=int, default=None, help="ESP machine (default 32 hosts)")
    ap.add_argument("--esp-cutoff", default="10", help="SD cut-off of the ESP study (10)")
    ap.add_argument("--techniques", default=None,
                    help="DLS techniques of the ESP study (default STATIC,GSS,FAC2)")
    ap.add_argument("--width", type=int, default=64, help="Mandelbrot image width (64)")
    ap.add_argument("--workers", type=int, default=None,
                    help="processes (default: the CPUs available)")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: {QUICK['jobs']} jobs, cut-offs {QUICK['cutoffs']}, "
                         f"{QUICK['esp_hosts']}-host ESP-{QUICK['esp_apps']} with "
                         f"{QUICK['techniques']} (unless given)")
    ap.add_argument("--out", default="runs/sd")
    args = ap.parse_args(argv)

    # -- validation ------------------------------------------------------------------------
    from cosim.als.techniques import get as get_technique
    from cosim.bls import BatchConfig
    from cosim.errors import CosimError

    traces = () if args.traces == "none" else names(args.traces, "--traces", tuple(TRACES))
    models = names(args.models, "--models", MODELS)
    jobs_n = args.jobs if args.jobs is not None else (QUICK["jobs"] if args.quick
                                                      else DEFAULT_JOBS)
    if jobs_n < 0:
        fail(f"--jobs must be >= 0 (0 = all), got {jobs_n}")
    cut_text = args.cutoffs or (QUICK["cutoffs"] if args.quick else DEFAULT_CUTOFFS)
    cutoffs = [parse_cutoff(c, "--cutoffs") for c in cut_text.split(",")]
    if len({c.key for c in cutoffs}) != len(cutoffs):
        fail(f"--cutoffs: repeated value in {cut_text!r}")
    esp_cut = parse_cutoff(args.esp_cutoff, "--esp-cutoff")
    if not (math.isfinite(args.fraction) and 0 <= args.fraction <= 1):
        fail(f"--fraction must be in [0, 1], got {args.fraction}")
    if args.seed < 0:
        fail(f"--seed must be >= 0, got {args.seed}")
    if args.cores_per_host < 1:
        fail(f"--cores-per-host must be >= 1, got {args.cores_per_host}")
    sd_params: list[tuple[str, str]] = []
    for kv in args.sd_param:
        k, sep, v = kv.partition("=")
        if not sep or not k.strip():
            fail(f"--sd-param: expected K=V, got {kv!r}")
        if k.strip() in ("cutoff", "max_slowdown"):
            fail("--sd-param: the cut-off is swept: use --cutoffs")
        sd_params.append((k.strip(), v.strip()))
    try:
        for c in cutoffs + [esp_cut]:
            BatchConfig(malleable="sd", malleable_params=dict(c.params + tuple(sd_params)))
    except CosimError as exc:
        fail(f"--sd-param: {exc}")
    esp_text = args.esp_apps or (QUICK["esp_apps"] if args.quick else ",".join(ESP_APPS))
    esp_apps = () if esp_text == "none" else names(esp_text, "--esp-apps", ESP_APPS)
    esp_hosts = args.esp_hosts or (QUICK["esp_hosts"] if args.quick else 32)
    if not 4 <= esp_hosts <= 256:
        fail(f"--esp-hosts must be in [4, 256] (ib256), got {esp_hosts}")
    tech_text = args.techniques or (QUICK["techniques"] if args.quick else "STATIC,GSS,FAC2")
    techniques = tuple(t.strip().upper() for t in tech_text.split(","))
    if len(set(techniques)) != len(techniques):
        fail(f"--techniques: repeated value in {tech_text!r}")
    for t in techniques:
        try:
            get_technique(t)
        except CosimError as exc:
            fail(f"--techniques: {exc}")
    if args.width < 8:
        fail(f"--width must be >= 8, got {args.width}")
    if not traces and not esp_apps:
        fail("nothing to run")
    from cosim.testing.study import run_all, workers_and_out

    workers, out = workers_and_out(args.workers, args.out, fail)

    # -- the machines and the tasks ------------------------------------------------------
    from cosim.paths import TRACES_DIR
    from cosim.workload.swf import read_swf

    cph = args.cores_per_host
    machine: dict[str, dict] = {}
    tasks: list[TraceTask | EspTask] = []
    for t in traces:
        path = TRACES_DIR / TRACES[t][0]
        w = read_swf(path, cores_per_host=cph)
        head = dict((k, v) for k, v in w.header)
        procs_key = "MaxProcs" if "MaxProcs" in head else "MaxNodes"
        try:
            max_procs = int(float(head[procs_key].split()[0]))
        except (KeyError, ValueError, IndexError):
            procs_key, max_procs = "largest job", max(j.pes for j in w.jobs)
        ratio = max_procs / cph
        hosts = math.ceil(ratio) if args.hosts_rule != "round" else max(1, math.floor(ratio + 0.5))
        if args.hosts_rule == "load":
            # H with (whole trace) host-seconds / H = processor-seconds / MaxProcs: the same
            # offered load in whole hosts as on the trace's own processors
            whole = [j for j in w.jobs if j.pes <= max_procs]
            host_s = sum(j.hosts * j.runtime for j in whole)
            proc_s = sum(j.pes * j.runtime for j in whole)
            hosts = max(hosts, -(-host_s * max_procs // proc_s))
        first = list(w.jobs[:jobs_n] if jobs_n else w.jobs)
        fit = [j for j in first if j.hosts <= hosts]
        if args.job_pes == "whole-hosts":
            fit = [replace(j, pes=j.hosts * cph) for j in fit]
        host_load, _ = offered_load(fit, hosts, cph)
        span = (max(j.submit for j in first) - min(j.submit for j in first)) if first else 0
        proc_load = (sum(min(j.pes, max_procs) * j.runtime for j in first) / (max_procs * span)
                     if span > 0 else math.nan)
        machine[t] = {"hosts": hosts, "procs_key": procs_key, "max_procs": max_procs,
                      "jobs": len(first), "host_load": host_load, "proc_load": proc_load,
                      "span_d": span / 1e9 / 86400}
        common = {"trace": t, "jobs": len(first), "hosts": hosts, "cores": cph,
                  "job_pes": args.job_pes, "fraction": args.fraction, "seed": args.seed,
                  "sd_params": tuple(sd_params)}
        tasks.append(TraceTask(**common))
        tasks += [TraceTask(**common, cutoff=c, model=m) for c in cutoffs for m in models]
    if esp_apps:
        from cosim.workload.esp import make_esp

        for app in esp_apps:
            path = out / f"esp-{app}-{esp_hosts}h-malleable.swf"
            make_esp(app=app, out=path, seed=args.seed, hosts=esp_hosts, malleable=True)
            for tech in techniques:
                for sd in (False, True):
                    tasks.append(EspTask(app=app, path=str(path), hosts=esp_hosts,
                                         technique=tech, width=args.width, sd=sd,
                                         sd_params=esp_cut.params + tuple(sd_params)))

    def cost(i: int) -> tuple:  # longest first: no cut-off, high cut-offs, dynamic
        task = tasks[i]
        if isinstance(task, EspTask):
            return (2, i)
        if task.cutoff is None:
            return (3, i)
        key = task.cutoff.key
        rank = {"inf": 0, "dyn": 2}.get(key, 1)
        val = -float(key) if rank == 1 else 0.0
        return (0, -task.jobs, rank, val, i)

    order = sorted(range(len(tasks)), key=cost)
    n_trace = sum(isinstance(t, TraceTask) for t in tasks)
    print(f"{PROG}: {n_trace} trace simulations ({', '.join(TRACES[t][1] for t in traces) or '-'}"
          f"), {len(tasks) - n_trace} ESP co-simulations, on {workers} worker(s)", flush=True)
    results, wall = run_all(run, tasks, order, workers)
    for i, r in results.items():
        if r.error:
            task = tasks[i]
            what = (f"{TRACES[task.trace][1]} {task.cutoff.label if task.cutoff else 'static'} "
                    f"{task.model}" if isinstance(task, TraceTask)
                    else f"ESP-{task.app} {task.technique} {'SD' if task.sd else 'static'}")
            hint = (" (SD-Policy with --job-pes trace: a guest that fits in a mate's idle cores "
                    "makes an empty shrink; use --job-pes whole-hosts)"
                    if "does not hold" in r.error else "")
            fail(f"{what}: the simulation stopped: {r.error}{hint}", status=1)

    # -- tables ----------------------------------------------------------------------------
    rows_by: dict[tuple, Row] = {}
    all_rows: list[Row] = []
    sd_sub = ", ".join(f"{k}={v}" for k, v in sd_params
                       if k not in ("sharing_factor", "max_mates"))
    sf = dict(sd_params).get("sharing_factor", "0.5")
    mm = dict(sd_params).get("max_mates", "2")
    for t in traces:
        mi = machine[t]
        idx = {(tasks[i].cutoff.key if tasks[i].cutoff else None, tasks[i].model): i
               for i in range(len(tasks)) if isinstance(tasks[i], TraceTask)
               and tasks[i].trace == t}
        base = results[idx[(None, "")]]
        brow = Row(study="trace", workload=TRACES[t][1], variant="-", cutoff="static",
                   jobs=mi["jobs"], hosts=mi["hosts"], r=base,
                   slowdown=static_slowdown(base, base))
        rows = [brow]
        for m in models:
            for c in cutoffs:
                r = results[idx[(c.key, m)]]
                row = Row(study="trace", workload=TRACES[t][1], variant=m, cutoff=c.label,
                          jobs=mi["jobs"], hosts=mi["hosts"], r=r,
                          slowdown=static_slowdown(r, base))
                row.norm = {"makespan": r.makespan_s / base.makespan_s,
                            "response": r.response_s / base.response_s,
                            "slowdown": row.slowdown / brow.slowdown}
                rows.append(row)
                rows_by[(t, m, c.key)] = row
        all_rows += rows
        rule = {"ceil": "ceil", "round": "round", "load": "ceil, x load ratio"}[args.hosts_rule]
        print(f"\n{TRACES[t][1]}: first {mi['jobs']:,} jobs ({mi['span_d']:.1f} days of "
              f"submissions) on {mi['hosts']} hosts x {cph} cores = {mi['hosts'] * cph} cores "
              f"({mi['procs_key']} {mi['max_procs']} / {cph} -> {rule} = {mi['hosts']}); jobs "
              f"hold whole hosts, PEs {args.job_pes}; offered load {mi['proc_load']:.2f} on the "
              f"trace's {mi['max_procs']} processors, {mi['host_load']:.2f} in whole hosts here")
        b = base
        print(f"static EASY: makespan {b.makespan_s:,.0f} s, mean response {b.response_s:,.0f} s, "
              f"mean slowdown {brow.slowdown:,.1f} (response / run time), bounded slowdown "
              f"{b.bsld:,.1f}, utilization {b.utilization:.1%}, killed {b.killed}, rejected "
              f"{b.rejected}")
        if mi["host_load"] > 1:
            print(f"note: offered load {mi['host_load']:.2f} > 1 in whole hosts: the queue grows "
                  "without bound, so the averages depend on --jobs (--hosts-rule load keeps the "
                  "trace's own load)")
        print_table(f"SD-Policy ({args.fraction:.0%} of the jobs malleable, SF {sf}, <= {mm} mates"
                    f"{', ' + sd_sub if sd_sub else ''}) / static EASY; guests = jobs started "
                    "malleably, mates = distinct jobs shrunk for a guest", rows, "model")

    if esp_apps:
        idx = {(tasks[i].app, tasks[i].technique, tasks[i].sd): i for i in range(len(tasks))
               if isinstance(tasks[i], EspTask)}
        rows = []
        for app in esp_apps:
            for tech in techniques:
                base = results[idx[(app, tech, False)]]
                brow = Row(study="esp", workload=f"ESP-{app}", variant=tech, cutoff="static",
                           jobs=len(base.ids), hosts=esp_hosts, r=base,
                           slowdown=static_slowdown(base, base))
                r = results[idx[(app, tech, True)]]
                row = Row(study="esp", workload=f"ESP-{app}", variant=tech,
                          cutoff=esp_cut.label, jobs=len(r.ids), hosts=esp_hosts, r=r,
                          slowdown=static_slowdown(r, base))
                row.norm = {"makespan": r.makespan_s / base.makespan_s,
                            "response": r.response_s / base.response_s,
                            "slowdown": row.slowdown / brow.slowdown}
                rows += [brow, row]
        all_rows += rows
        for app in esp_apps:
            sub = [r for r in rows if r.workload == f"ESP-{app}"]
            print(f"\nESP-{app} ({sub[0].jobs} jobs, generated --malleable for {esp_hosts} "
                  f"hosts of ib256, 1 core each: SD shares whole hosts in time"
                  f"{', width ' + str(args.width) if app == 'mandelbrot' else ''}): static "
                  f"rows are absolute (makespan s, response s, slowdown), SD rows / static")
            print_table("", sub, "tech.")
            for r in sub:
                if r.cutoff == "static":
                    print(f"  static {r.variant}: makespan {r.r.makespan_s:,.0f} s, response "
                          f"{r.r.response_s:,.0f} s, slowdown {r.slowdown:.2f}")
        print("  latency = seconds a guest waited for its mates' PEs (chunks in flight must end:"
              " STATIC releases a PE only when its whole share is done)")

    # -- figures and CSV -------------------------------------------------------------------
    figs = []
    if traces:
        norm_by = {m: {k: row.norm[m] for k, row in rows_by.items()} for m in METRICS}
        parts = [f"{TRACES[t][1]} {machine[t]['jobs']:,} jobs on {machine[t]['hosts']}x{cph} "
                 "cores" for t in traces]
        sub = f"{', '.join(parts)}; {args.fraction:.0%} malleable, SF {sf}, PEs {args.job_pes}"
        for m, (_, fname) in METRICS.items():
            bar_figure(out / fname, m, traces, cutoffs, models, norm_by[m], sub)
            figs.append(out / fname)
    if esp_apps:
        esp_figure(out / "sd-esp.png", [r for r in all_rows if r.study == "esp"],
                   f"{esp_hosts} hosts of ib256, SD {esp_cut.label}")
        figs.append(out / "sd-esp.png")
    with open(out / "results.csv", "w", newline="") as fh:
        cw = csv.writer(fh)
        cw.writerow(("study", "workload", "variant", "cutoff", "jobs", "hosts", "makespan_s",
                     "mean_response_s", "mean_slowdown_static", "mean_slowdown_run",
                     "mean_bounded_slowdown", "utilization", "norm_makespan", "norm_response",
                     "norm_slowdown", "guests", "distinct_mates", "shrinks", "expands",
                     "latency_mean_s", "latency_max_s", "killed", "rejected", "wall_s"))
        for row in all_rows:
            r = row.r
            cw.writerow((row.study, row.workload, row.variant, row.cutoff, len(r.ids),
                         row.hosts, r.makespan_s, r.response_s, row.slowdown, r.slowdown_run,
                         r.bsld, r.utilization, row.norm.get("makespan", 1.0),
                         row.norm.get("response", 1.0), row.norm.get("slowdown", 1.0),
                         r.guests, r.mates, r.shrinks, r.expands,
                         r.wait_s / r.guests if r.guests else 0.0, r.wait_max_s, r.killed,
                         r.rejected, round(r.wall_s, 3)))

    print()
    if traces:
        print("\n".join(summarise(rows_by, traces, models, cutoffs)))
    print(PAPER)
    if traces:
        loads = ", ".join(f"{TRACES[t][1]} {machine[t]['host_load']:.2f} in whole hosts vs "
                          f"{machine[t]['proc_load']:.2f} on its processors" for t in traces)
        if any(machine[t]["host_load"] > 1 for t in traces):
            print(OVERLOAD.format(loads=loads))
        else:
            print(f"  - Offered loads here: {loads} (--hosts-rule {args.hosts_rule}).")
    print(f"\nfigures: {', '.join(str(f) for f in figs)}\ntable: {out / 'results.csv'}")
    n_jobs = sum(len(r.ids) + r.rejected for r in results.values())
    sim_sd = [(len(r.ids), r.wall_s) for i, r in results.items()
              if isinstance(tasks[i], TraceTask) and tasks[i].cutoff is not None]
    sim_st = [(len(r.ids), r.wall_s) for i, r in results.items()
              if isinstance(tasks[i], TraceTask) and tasks[i].cutoff is None]
    rate = (lambda xs: sum(n for n, _ in xs) / max(1e-9, sum(w for _, w in xs)))
    print(f"wall time {wall:.1f} s for {len(tasks)} simulations, {n_jobs:,} jobs: "
          f"{n_jobs / wall:,.0f} jobs/s on {workers} worker(s)"
          + (f"; inside simulate(), per process: SD-Policy {rate(sim_sd):,.0f} jobs/s, static "
             f"EASY {rate(sim_st):,.0f} jobs/s" if sim_sd else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
