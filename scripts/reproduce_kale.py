#!/usr/bin/env python3
"""Reproduce Kalé, Kumar & DeSouza's simulation (CCGRID'02, §4, Figures 9-10): equipartition
versus a rigid first-fit FCFS queue on 64 processors, mean response time and utilization
against the load factor.

The workload is `cosim.workload.kale.kale_workload` (its docstring states every choice the
paper leaves open: load factor ``rho = lambda x E[S]`` with ``E[S]`` = 64.5 s, the mean run
time of a job alone on the 64 PEs; Amdahl speedup with serial fraction ``--f``). For each
load factor and seed the *same* arrivals and iteration counts are run twice:

- **equipartition**: adaptive jobs (min_pes ~ U{1..64}, max_pes = 64) under
  ``BatchConfig(malleable="equi", share=--share, queue=--queue)``, a stall of ``--reconf``
  seconds per resize (0 by default; the study the paper cites assumed 5 s);
- **rigid FCFS first-fit** (``--baseline fcfs``, the default): traditional jobs of the same
  U{1..64} draw as their size, strict FCFS without backfilling (``BatchConfig(backfill=
  "none", selection="first-fit")``): the head of the queue blocks every job behind it.

Equipartition's default queue rule (``--queue first-fit``) admits *any* queued job whose
minimum fits, so part of its advantage over strict FCFS is the queue discipline, not
malleability. Two more rigid baselines separate the two (``--baseline fcfs,first-fit,easy``):
``first-fit``, rigid jobs under the equipartition policy itself (a rigid job's bounds are its
size, so this is greedy first-fit list scheduling on PEs: every queued job that fits starts,
in arrival order; the "traditional First Fit queuing systems" of the paper may well mean
this); ``easy``, EASY backfilling with exact run-time estimates (walltime := run time, the
best case for backfilling). ``--queue fcfs`` makes equipartition stop at the first queued job
whose minimum does not fit.

Walltime kill is off in every run. The machine is platforms/kale32x2.toml (32 nodes x 2
PEs); with ``--alloc pe`` (default) it is simulated as 64 one-PE hosts so that the rigid
queue, like equipartition, hands out single processors; ``--alloc node`` keeps the 2-PE
nodes, and a rigid job of k processors then occupies ceil(k / 2) whole nodes under ``fcfs``
and ``easy`` (``first-fit`` hands out PEs in both modes).

**Mean response time** = mean of (end - submit) over all jobs. **Utilization** = PE-time
held by jobs (`JobOutcome.pe_ticks`: PEs x time over each job's changing allocation,
reconfiguration stalls included; with ``--alloc node`` the idle PE of an odd-sized rigid job's
last node is not counted) / (64 x makespan), makespan = last end - first submission.
Held PE-time is not useful work: with sub-linear speedup a job on more PEs holds more
PE-time for the same iterations. Both schedulers run the same iterations, so the *makespan*
ratio is the inverse ratio of work done per unit of time. ``±`` is the standard deviation
over seeds (seeds 1..--seeds); "ratio" is equipartition / baseline of the means.

Output under ``--out``: a table per (f, reconf, baseline) on stdout, ``results.csv``, and one
PNG per f (``kale-f<f>.png``: response time and utilization against load, each baseline and
one equipartition curve per reconf value). Usage: ``python scripts/reproduce_kale.py [--jobs
10000] [--seeds 3] [--loads 0.3,...,0.9] [--f 0.05[,0.01,...]] [--reconf 0[,5]] [--share
additive|level] [--queue first-fit|fcfs] [--baseline fcfs[,first-fit,easy]] [--alloc
pe|node] [--workers N] [--quick] [--out runs/kale]``.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PROG = "reproduce_kale"
LOADS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
QUICK = {"jobs": 300, "seeds": 1, "loads": (0.3, 0.6, 0.9)}
#: baseline name -> (label in tables and figures, colour, marker)
BASELINES = {"fcfs": ("rigid FCFS first-fit", "k", "s"),
             "first-fit": ("rigid first-fit queue", "0.5", "^"),
             "easy": ("rigid EASY (exact estimates)", "tab:brown", "D")}


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """One simulation: a scheduler on one workload (reconf only matters for equi)."""

    sched: str  # "equi" or a key of BASELINES
    f: float
    reconf: float
    load: float
    seed: int
    jobs: int
    share: str
    queue: str
    alloc: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """What one simulation measured (seconds; utilization in [0, 1])."""

    response_s: float
    utilization: float
    makespan_s: float
    resizes: float  # per job
    wall_s: float


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), like every other check of this script."""

    def error(self, message: str) -> None:  # type: ignore[override]
        fail(message)


def fail(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def floats(text: str, what: str, lo: float, hi: float = math.inf, *,
           lo_open: bool = False) -> tuple[float, ...]:
    """A comma-separated list of finite numbers in [lo, hi) ((lo, hi) if `lo_open`)."""
    out = []
    for item in text.split(","):
        try:
            x = float(item)
        except ValueError:
            fail(f"{what}: not a number: {item!r}")
        if not (math.isfinite(x) and (x > lo if lo_open else x >= lo) and x < hi):
            fail(f"{what}: {item!r} out of range ({'(' if lo_open else '['}{lo:g}, {hi:g}))")
        out.append(x)
    if len(set(out)) != len(out):
        fail(f"{what}: repeated value in {text!r}")
    return tuple(out)


def machine(alloc: str) -> tuple[int, int]:
    """(hosts, cores per host) to simulate: the kale32x2 platform, flattened for ``pe``."""
    from cosim.platform import load_platform

    plat = load_platform("kale32x2")
    cores = plat.hosts[0].cores
    return (plat.n_hosts * cores, 1) if alloc == "pe" else (plat.n_hosts, cores)


def run(task: Task) -> Result:
    """Generate the task's workload, simulate it, measure it."""
    import numpy as np

    from cosim.bls import BatchConfig
    from cosim.runner import simulate
    from cosim.workload.kale import kale_workload

    n_hosts, cores = machine(task.alloc)
    pes = n_hosts * cores
    equi = task.sched == "equi"
    jobs = kale_workload(task.jobs, task.load, seed=task.seed, machine_pes=pes,
                         cores_per_host=cores, f=task.f, malleable=equi,
                         reconf_s=task.reconf if equi else 0.0)
    if equi or task.sched == "first-fit":  # rigid jobs under equi: greedy first-fit
        cfg = BatchConfig(malleable="equi", walltime_kill=False,
                          malleable_params={"share": task.share, "queue": task.queue}
                          if equi else {"queue": "first-fit"})
    elif task.sched == "easy":
        from dataclasses import replace

        jobs = [replace(j, walltime=j.runtime) for j in jobs]
        cfg = BatchConfig(backfill="easy", selection="first-fit", walltime_kill=False)
    else:
        cfg = BatchConfig(backfill="none", selection="first-fit", walltime_kill=False)
    t0 = time.perf_counter()
    res = simulate(jobs, n_hosts=n_hosts, cores_per_host=cores, batch=cfg)
    wall = time.perf_counter() - t0
    out = res.outcomes
    if any(o.status != "completed" for o in out):
        raise RuntimeError(f"{task}: a job did not complete")
    submit = np.fromiter((o.job.submit for o in out), np.int64, len(out))
    end = np.fromiter((o.end for o in out), np.int64, len(out))
    span = int(end.max() - submit.min())
    used = sum(o.pe_ticks for o in out)  # exact integers
    return Result(response_s=float((end - submit).mean()) / 1e9,
                  utilization=used / (pes * span), makespan_s=span / 1e9,
                  resizes=sum(o.resizes for o in out) / len(out), wall_s=wall)


def stats(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    import statistics

    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def plot(path: Path, f: float, loads: tuple[float, ...], reconfs: tuple[float, ...],
         agg: dict, args: argparse.Namespace) -> None:
    """Figures 9-10 side by side: response time and utilization against load."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, (ax_r, ax_u) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    curves = [(b, 0.0, *BASELINES[b]) for b in args.baseline]
    for i, rc in enumerate(reconfs):
        curves.append(("equi", rc, f"equipartition ({args.share}), reconf {rc:g} s",
                       f"C{i}", "o"))
    for sched, rc, label, color, marker in curves:
        for ax, key in ((ax_r, "response_s"), (ax_u, "utilization")):
            m = [agg[(sched, f, rc, ld)][key][0] for ld in loads]
            s = [agg[(sched, f, rc, ld)][key][1] for ld in loads]
            ax.errorbar(loads, m, yerr=s, label=label, color=color, marker=marker, capsize=3)
    ax_r.set_yscale("log")
    ax_r.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    # minor ticks: label 2, 3 and 5 x 10^k only
    ax_r.yaxis.set_minor_formatter(FuncFormatter(
        lambda y, _: f"{y:g}" if f"{y:.0e}"[0] in "235" else ""))
    ax_r.tick_params(axis="y", which="minor", labelsize=7)
    ax_r.set_xlabel("load factor ρ = λ·E[S]")
    ax_r.set_ylabel("mean response time (s, log scale)")
    ax_r.set_title("Mean response time (cf. Figure 9)")
    ax_u.set_xlabel("load factor ρ = λ·E[S]")
    ax_u.set_ylabel("utilization (PE-time held / (64 × makespan))")
    ax_u.set_title("Utilization (cf. Figure 10)")
    ax_u.set_ylim(0, 1)
    for ax in (ax_r, ax_u):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Kalé et al. simulation: 64 PEs, {args.jobs:,} jobs, {args.seeds} seed(s), "
                 f"Amdahl f = {f:g}, alloc {args.alloc}  (± 1 sd over seeds)", fontsize=10)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=None, help="jobs per simulation (10000)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds 1..N (3)")
    ap.add_argument("--loads", default=None, help="load factors, comma-separated (0.3..0.9)")
    ap.add_argument("--f", default="0.05", help="Amdahl serial fraction(s), comma-separated")
    ap.add_argument("--reconf", default="0", help="stall per resize in s, comma-separated")
    ap.add_argument("--share", choices=("additive", "level"), default="additive")
    ap.add_argument("--queue", choices=("first-fit", "fcfs"), default="first-fit",
                    help="equipartition's queue re-examination")
    ap.add_argument("--baseline", default="fcfs",
                    help="rigid baseline(s), comma-separated: fcfs, first-fit, easy")
    ap.add_argument("--alloc", choices=("pe", "node"), default="pe",
                    help="pe: 64 one-PE hosts; node: 32 two-PE nodes (rigid jobs take nodes)")
    ap.add_argument("--workers", type=int, default=None,
                    help="processes (default: the CPUs available)")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: {QUICK['jobs']} jobs, {QUICK['seeds']} seed, loads "
                         f"{','.join(map(str, QUICK['loads']))} (unless given)")
    ap.add_argument("--out", default="runs/kale")
    args = ap.parse_args(argv)
    if args.jobs is None:
        args.jobs = QUICK["jobs"] if args.quick else 10_000
    if args.seeds is None:
        args.seeds = QUICK["seeds"] if args.quick else 3
    if args.jobs < 1:
        fail(f"--jobs must be >= 1, got {args.jobs}")
    if args.seeds < 1:
        fail(f"--seeds must be >= 1, got {args.seeds}")
    loads = (floats(args.loads, "--loads", 0.0, lo_open=True) if args.loads
             else QUICK["loads"] if args.quick else LOADS)
    loads = tuple(sorted(loads))
    args.baseline = tuple(args.baseline.split(","))
    for b in args.baseline:
        if b not in BASELINES:
            fail(f"--baseline: unknown {b!r} (known: {', '.join(sorted(BASELINES))})")
    if len(set(args.baseline)) != len(args.baseline):
        fail(f"--baseline: repeated value in {','.join(args.baseline)!r}")
    fs = floats(args.f, "--f", 0.0, 1.0)
    reconfs = floats(args.reconf, "--reconf", 0.0)
    from cosim.testing.study import run_all, workers_and_out

    workers, out = workers_and_out(args.workers, args.out, fail)

    seeds = range(1, args.seeds + 1)
    common = {"jobs": args.jobs, "share": args.share, "queue": args.queue, "alloc": args.alloc}
    tasks = [Task(sched=b, f=f, reconf=0.0, load=ld, seed=s, **common)
             for b in args.baseline for f in fs for ld in loads for s in seeds]
    tasks += [Task(sched="equi", f=f, reconf=rc, load=ld, seed=s, **common)
              for f in fs for rc in reconfs for ld in loads for s in seeds]
    # longest first (equipartition, high load) so that the pool's tail stays short
    slow = ("equi", "first-fit")
    order = sorted(range(len(tasks)), key=lambda i: (tasks[i].sched not in slow, -tasks[i].load, i))
    print(f"{len(tasks)} simulations of {args.jobs:,} jobs ({len(tasks) * args.jobs:,} jobs) "
          f"on {workers} worker(s); alloc {args.alloc}, equipartition share {args.share}, "
          f"queue {args.queue}; baseline(s) {', '.join(args.baseline)}", flush=True)
    results, wall = run_all(run, tasks, order, workers)

    per: dict[tuple, list[Result]] = {}
    for i, t in enumerate(tasks):
        per.setdefault((t.sched, t.f, t.reconf, t.load), []).append(results[i])
    agg = {k: {key: stats([getattr(r, key) for r in rs])
               for key in ("response_s", "utilization", "makespan_s", "resizes")}
           for k, rs in per.items()}

    rows = []
    for f in fs:
        for rc in reconfs:
            for b in args.baseline:
                name = BASELINES[b][0]
                print(f"\nAmdahl f = {f:g} (S(64) = {1 / (f + (1 - f) / 64):.1f}), "
                      f"reconfiguration stall {rc:g} s, {args.jobs:,} jobs x {args.seeds} "
                      f"seed(s); equipartition vs {name}  [± = sd over seeds; ratio = equi / "
                      f"{b}]")
                print(f"{'load':>5} | {'mean response time (s)':^47} | {'utilization':^31} | "
                      f"{'makespan':>8} | {'resizes':>7}")
                print(f"{'':>5} | {'equipartition':>17}{'rigid ' + b:>20}{'ratio':>10} | "
                      f"{'equi':>12}{b[:11]:>12}{'ratio':>7} | {'ratio':>8} | {'per job':>7}")
                for ld in loads:
                    e, r = agg[("equi", f, rc, ld)], agg[(b, f, 0.0, ld)]
                    (er, es), (rr, rs) = e["response_s"], r["response_s"]
                    (eu, eus), (ru, rus) = e["utilization"], r["utilization"]
                    print(f"{ld:>5.2f} | {er:>9.1f} ± {es:<5.1f}{rr:>12.1f} ± {rs:<5.1f}"
                          f"{er / rr:>10.3f} | {eu:>6.3f}±{eus:.3f}{ru:>6.3f}±{rus:.3f}"
                          f"{eu / ru:>7.3f} | {e['makespan_s'][0] / r['makespan_s'][0]:>8.3f} | "
                          f"{e['resizes'][0]:>7.2f}")
        for rc in reconfs:
            for ld in loads:
                for sched, key_rc in (("equi", rc), *((b, 0.0) for b in args.baseline)):
                    a = agg[(sched, f, key_rc, ld)]
                    rows.append((f, rc, ld, sched if sched == "equi" else f"rigid-{sched}",
                                 args.seeds, args.jobs, *a["response_s"], *a["utilization"],
                                 *a["makespan_s"], a["resizes"][0]))
        png = out / f"kale-f{f:g}.png"
        plot(png, f, loads, reconfs, agg, args)
        print(f"figure: {png}")
    with open(out / "results.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("f", "reconf_s", "load", "scheduler", "seeds", "jobs", "response_s",
                    "response_sd", "utilization", "utilization_sd", "makespan_s",
                    "makespan_sd", "resizes_per_job"))
        w.writerows(rows)
    kinds = ("equi", *args.baseline)
    sim = {k: sum(r.wall_s for i, r in results.items() if tasks[i].sched == k) for k in kinds}
    n_sim = {k: sum(1 for t in tasks if t.sched == k) * args.jobs for k in kinds}
    total = len(tasks) * args.jobs
    print(f"\ntable: {out / 'results.csv'}")
    print(f"wall time {wall:.1f} s for {total:,} simulated jobs: {total / wall:,.0f} jobs/s on "
          f"{workers} worker(s); inside simulate(), per process: "
          + ", ".join(f"{'equipartition' if k == 'equi' else 'rigid ' + k} "
                      f"{n_sim[k] / sim[k]:,.0f} jobs/s" for k in kinds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
