#!/usr/bin/env python3
"""Reproduce the study of value- and power-aware scheduling (Kumbhare, Marathe, Akoglu,
Siegel, Abdulla, Hariri, Parallel Computing 99, 2020) on the traces cosim ships: the
productivity and completion rate of static and dynamic VPT and VPE under a system power cap.

Each trace of ``--traces`` (``lublin``: the Lublin-model trace on 256 nodes, ``kth``: KTH-SP2
on its 100 nodes, or an SWF file sized by its header) gets its arrivals compressed so that its
offered load (the jobs' node-time over the nodes and the submission span) is ``--load``
(1.15: an over-subscribed machine, as the paper's), and ``--seeds`` value draws (``cosim
workload values``: classes 1/4/16 with probabilities 0.6/0.3/0.1, soft threshold 2x and hard
6x the requested time, keyed by (seed, job id)). Every (trace, seed) then runs under VPT and
VPE with the greedy pass on the Kumbhare machine with one PE per node
(``platforms/kumbhare2048-nodes.toml``: 60-115 W per socket, 2 sockets), at each power cap of
``--caps`` (fractions of every node at p_max), with each static strategy (``max``, ``min``,
``uniform``, ``best``) and with dynamic power management (``best`` + ``--power-dynamic``).
The table gives per (trace, algorithm, variant, cap) the mean over the seeds of the
normalised productivity (value earned over the value all jobs could earn), the completion
rate and the energy; ``value_power.png`` draws them against the cap. The paper's claim: the
dynamic variant of each algorithm earns up to 16 % more productivity and completes up to 13 %
more jobs than its static variants under tight power, and the static strategies swap rank
with the cap; ``--json`` prints the rows, the gains of dynamic over its own static variant
(``best``, the level choice it starts from) and over the best static strategy at each cap
are printed below the table (README, "Value- and power-aware scheduling", says what cosim
finds). The runs go through `cosim.sweep` (resumable; ``--jobs N`` at once) under
``OUT/runs/<id>/``, their inputs under ``OUT/inputs/``, the table in ``OUT/table.csv``.
Usage: ``python scripts/reproduce_value_power.py [--traces lublin,kth] [--seeds 10] [--caps
0.55,0.6,0.7,0.8,0.9,1.0] [--jobs N] [--out DIR] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from cosim.core.files import atomic_open, hold_dir
from cosim.errors import InputError
from cosim.experiment import RunOptions, prepare
from cosim.paths import TRACES_DIR
from cosim.sweep import SweepRun, run_id, run_sweep
from cosim.testing.study import sigterm_as_interrupt

TRACES = {"lublin": ("lublin_256.swf.gz", 256), "kth": ("KTH-SP2-1996-2.1-cln.swf.gz", 100)}
#: the platform, by its builtin name (`platforms/kumbhare2048-nodes.toml`): run ids do not
#: depend on where the checkout is
PLATFORM = "kumbhare2048-nodes"
PLATFORM_PATH = PLATFORM
ALGORITHMS = ("vpt", "vpe")
#: variant -> (strategy, dynamic)
VARIANTS = {"max": ("max", False), "min": ("min", False), "uniform": ("uniform", False),
            "best": ("best", False), "dynamic": ("best", True)}
CAPS = (0.55, 0.6, 0.7, 0.8, 0.9, 1.0)
#: the static variant dynamic management starts from (its level choice)
VARIANTS_STATIC_OF_DYNAMIC = "best"


def _trace(name: str) -> tuple[str, int | None]:
    if name in TRACES:
        file, hosts = TRACES[name]
        return str(TRACES_DIR / file), hosts
    if not Path(name).is_file():
        raise InputError(f"expected {', '.join(TRACES)} or an SWF file, got {name!r}",
                         field="traces")
    return name, None


def offered_load(jobs, n_hosts: int) -> float:
    """The jobs' node-time over the nodes and the span of their submissions."""
    span = max(j.submit for j in jobs) - min(j.submit for j in jobs)
    return sum(j.runtime * j.hosts for j in jobs) / (n_hosts * span) if span else 0.0


def _inputs(name: str, path: str, hosts: int | None, load: float, seeds: list[int],
            out: Path) -> tuple[str, int, float, float, list[str]]:
    """The trace with arrivals scaled to `load` and one values sidecar per seed."""
    from cosim.workload.swf import machine_hosts, read_swf, read_swf_header
    from cosim.workload.swf_write import write_jobs_swf
    from cosim.workload.value_gen import ValueSpec, generate_values, scale_arrivals, \
        write_values

    if hosts is None:
        described = machine_hosts(read_swf_header(path), 1, file=path)
        if described is None:
            raise InputError("its header gives no machine size (MaxNodes, MaxProcs)",
                             file=path)
        hosts = described[0]
    w = read_swf(path, max_hosts=hosts)
    before = offered_load(w.jobs, hosts)
    if before <= 0:
        raise InputError("no submission span: cannot scale arrivals", file=path)
    factor = before / load
    jobs = scale_arrivals(w.jobs, factor)
    stem = Path(path).name.removesuffix(".gz").removesuffix(".swf")
    trace = out / "inputs" / f"{stem}-load{load:g}.swf"
    write_jobs_swf(trace, jobs, header=[*w.header, (
        "Note", f"arrivals scaled by {factor:.6g} for an offered load of {load:g} on {hosts} "
                f"nodes (was {before:.4g}) by scripts/reproduce_value_power.py")])
    sidecars = []
    for seed in seeds:
        sidecar = out / "inputs" / f"{stem}-values-seed{seed}.csv"
        write_values(sidecar, generate_values(jobs, ValueSpec(seed=seed)))
        sidecars.append(str(sidecar))
    return str(trace), hosts, before, factor, sidecars


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="lublin,kth",
                    help="lublin, kth or SWF files, comma-separated (default lublin,kth)")
    ap.add_argument("--seeds", type=int, default=10, help="value draws per trace (default 10)")
    ap.add_argument("--caps", default=",".join(f"{c:g}" for c in CAPS),
                    help="power caps, fractions of every node at p_max")
    ap.add_argument("--load", type=float, default=1.15, help="offered load (default 1.15)")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (local processes)")
    ap.add_argument("--out", default="runs/reproduce-value-power")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    args = ap.parse_args(argv)
    out = Path(args.out)
    platform = PLATFORM_PATH
    try:
        if args.jobs < 1:
            raise InputError(f"must be at least 1, got {args.jobs}", field="jobs")
        if args.seeds < 1:
            raise InputError(f"must be at least 1, got {args.seeds}", field="seeds")
        if not 0 < args.load < 100:
            raise InputError(f"must be in (0, 100), got {args.load}", field="load")
        try:
            caps = [float(c) for c in args.caps.split(",") if c.strip()]
        except ValueError:
            raise InputError(f"expected fractions, got {args.caps!r}", field="caps") from None
        if not caps or not all(0 < c <= 1 for c in caps):
            raise InputError(f"expected fractions in (0, 1], got {args.caps!r}", field="caps")
        names = [t.strip() for t in args.traces.split(",") if t.strip()]
        if not names:
            raise InputError("expected at least one trace", field="traces")
        runs, cells, scaling = [], [], {}
        with hold_dir(out), sigterm_as_interrupt():  # SIGTERM: the sweep stops its workers
            for name in names:
                path, hosts = _trace(name)
                trace, hosts, before, factor, sidecars = _inputs(
                    name, path, hosts, args.load, list(range(args.seeds)), out)
                scaling[name] = (before, factor, hosts)
                for seed, sidecar in enumerate(sidecars):
                    for algo in ALGORITHMS:
                        for variant, (strategy, dynamic) in VARIANTS.items():
                            for cap in caps:
                                opt = RunOptions(workload=trace, values=sidecar,
                                                 platform=platform, hosts=hosts,
                                                 priority=algo, batch="greedy",
                                                 power_cap=cap, power_strategy=strategy,
                                                 power_dynamic=dynamic, seed=seed)
                                if seed == 0 and algo == ALGORITHMS[0]:
                                    prepare(opt)  # every kind of input checked first
                                run = SweepRun(id=run_id(opt), opt=opt, varying=(
                                    ("trace", name), ("algorithm", algo),
                                    ("variant", variant), ("cap", cap), ("seed", seed)))
                                runs.append(run)
                                cells.append((name, algo, variant, cap, seed, run.id))
            summaries = dict(zip((r.id for r in runs), run_sweep(runs, out, jobs=args.jobs)))
    except InputError as exc:
        print(f"reproduce_value_power: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("reproduce_value_power: interrupted (the same command resumes)", file=sys.stderr)
        return 130
    rows = _rows(cells, summaries, scaling)
    with atomic_open(out / "table.csv") as fh:
        keys = list(rows[0])
        fh.write(",".join(keys) + "\n")
        fh.writelines(",".join("" if r[k] is None else str(r[k]) for k in keys) + "\n"
                      for r in rows)
    _figure(out, names, caps, rows)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    _print(rows, names, caps, scaling)
    print(f"outputs under {out}/ (table.csv, value_power.png, inputs/, runs/<id>/ per run)")
    return 0


def _rows(cells, summaries, scaling) -> list[dict]:
    """One row per (trace, algorithm, variant, cap): means and deviations over the seeds."""
    groups: dict[tuple, list[dict]] = {}
    for name, algo, variant, cap, _, rid in cells:
        groups.setdefault((name, algo, variant, cap), []).append(summaries[rid])
    rows = []
    for (name, algo, variant, cap), ss in groups.items():
        def stat(key: str, _ss: list[dict] = ss) -> tuple[float, float]:
            xs = [s[key] for s in _ss]
            return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)

        prod, prod_sd = stat("normalized_productivity")
        done, done_sd = stat("completion_rate")
        energy, _ = stat("energy_j")
        rows.append({"trace": name, "algorithm": algo, "variant": variant, "cap": cap,
                     "seeds": len(ss), "offered_load": round(scaling[name][0], 6),
                     "arrival_scale": round(scaling[name][1], 6),
                     "normalized_productivity": prod, "normalized_productivity_sd": prod_sd,
                     "completion_rate": done, "completion_rate_sd": done_sd,
                     "energy_mwh": energy / 3.6e9,
                     "dropped": statistics.fmean(s["dropped"] for s in ss)})
    return rows


def gains(rows: list[dict]) -> list[tuple[str, str, float, float, float, float, float, str]]:
    """Per (trace, algorithm, cap): dynamic's relative gain in productivity and in completion
    rate over its own static variant (``best``: the same level choice, no reallocation) and
    over the best static variant at that cap, and that variant's name."""
    by = {(r["trace"], r["algorithm"], r["variant"], r["cap"]): r for r in rows}

    def rel(a: float, b: float) -> float:
        return a / b - 1 if b else 0.0

    out = []
    for (trace, algo, variant, cap), r in by.items():
        if variant != "dynamic":
            continue
        same = by[trace, algo, VARIANTS_STATIC_OF_DYNAMIC, cap]
        statics = [by[trace, algo, v, cap] for v in VARIANTS if v != "dynamic"]
        top = max(statics, key=lambda s: s["normalized_productivity"])
        done = max(s["completion_rate"] for s in statics)
        p, c = r["normalized_productivity"], r["completion_rate"]
        out.append((trace, algo, cap, rel(p, same["normalized_productivity"]),
                    rel(c, same["completion_rate"]), rel(p, top["normalized_productivity"]),
                    rel(c, done), top["variant"]))
    return out


def _print(rows: list[dict], names: list[str], caps: list[float], scaling: dict) -> None:
    for name in names:
        before, factor, hosts = scaling[name]
        print(f"{name} on {hosts} nodes: offered load {before:.3f}, arrivals scaled by "
              f"{factor:.3f}")
    print("normalised productivity / completion rate, means over the seeds, per cap:")
    print(f"{'trace':<8}{'alg':<5}{'variant':<9}" + "".join(f"{c:>12.0%}" for c in caps))
    by = {(r["trace"], r["algorithm"], r["variant"], r["cap"]): r for r in rows}
    for name in names:
        for algo in ALGORITHMS:
            for variant in VARIANTS:
                cells = [by[name, algo, variant, c] for c in caps]
                print(f"{name:<8}{algo:<5}{variant:<9}" + "".join(
                    f"  {r['normalized_productivity']:.3f}/{r['completion_rate']:.3f}"
                    for r in cells))
    print("dynamic vs its static variant (best) and vs the best static strategy at each cap "
          "(productivity, completed jobs):")
    for trace, algo, cap, sp, sc, bp, bc, top in gains(rows):
        print(f"  {trace:<8}{algo:<5}cap {cap:>4.0%}: vs best {sp:+.1%}, {sc:+.1%}; vs the "
              f"best static ({top}) {bp:+.1%}, {bc:+.1%}")


def _figure(out: Path, names: list[str], caps: list[float], rows: list[dict]) -> None:
    from matplotlib.figure import Figure

    by = {(r["trace"], r["algorithm"], r["variant"], r["cap"]): r for r in rows}
    fig = Figure(figsize=(12.0, 3.4 * len(names) * len(ALGORITHMS)))
    axes = fig.subplots(len(names) * len(ALGORITHMS), 2, squeeze=False)
    for i, (name, algo) in enumerate((n, a) for n in names for a in ALGORITHMS):
        for j, (key, title) in enumerate((("normalized_productivity",
                                           "normalised productivity"),
                                          ("completion_rate", "completion rate"))):
            ax = axes[i][j]
            for k, variant in enumerate(VARIANTS):
                ys = [by[name, algo, variant, c][key] for c in caps]
                sd = [by[name, algo, variant, c][f"{key}_sd"] for c in caps]
                ax.errorbar([100 * c for c in caps], ys, yerr=sd, marker="o", capsize=2,
                            color=f"C{k}", lw=2.0 if variant == "dynamic" else 1.0,
                            ls="-" if variant == "dynamic" else "--", label=variant)
            ax.set(xlabel="power cap [% of every node at p_max]", ylabel=title,
                   title=f"{name}: {algo.upper()}")
            ax.grid(True, alpha=0.3)
        axes[i][0].legend(fontsize="small")
    fig.suptitle("static power strategies and dynamic power management under a cap\n"
                 "(means over the value seeds, ± sd)")
    fig.tight_layout()
    with atomic_open(out / "value_power.png", "wb") as fh:
        fig.savefig(fh, format="png", dpi=100)


if __name__ == "__main__":
    raise SystemExit(main())
