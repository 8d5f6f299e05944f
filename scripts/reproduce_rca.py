#!/usr/bin/env python3
"""Reproduce the RCA paper's factorial: {ESP-PSIA, ESP-Mandelbrot} x {STATIC, GSS, FAC2, AF} x
RCA {off, yield}, on ib256 with FCFS + EASY, and print it next to the published figures.

Published (Eleliemy & Ciorba, "A Resourceful Coordination Approach for Multilevel Scheduling",
arXiv:2103.05809; `PUBLISHED`): ESP-PSIA STATIC makespan 13,000 -> 12,965 s, GSS and AF
12,875 s without RCA; ESP-Mandelbrot STATIC makespan 11,020 -> 8,840 s in §4 but 9,607 s in
Fig. 6, utilization 71.2 % -> 83.82 % in §4 but 84.82 % in Fig. 6; Mandelbrot utilization gains
of +0.5 % (GSS) and +0.05 % (AF) in §4, "0.5 %" in the conclusion. Where the paper contradicts
itself both values are shown.

Two modes. By default the shipped traces (``traces/esp-*.swf``: cosim's ESP arrival, every
job's *balanced* run time its target, requested time 3x) and backfilling at every event;
``--calibrate static`` regenerates them with every job's STATIC run time its target. With
``--paper``, the paper's own setup (README, "Reproducing the RCA paper"): its arrival scheme
(``cosim workload esp --arrival rca``), its Table 1 calibration (``--calibrate table1``,
requested time 1.5x), Slurm's 30 s backfill cadence (``--bf-interval 30``), over the order
seeds 0-5 (``--seeds``), each figure the mean ± sample standard deviation over the seeds.
The runs go through `cosim.sweep` (resumable: run the command again after an interruption;
``--jobs N`` runs N at once) under ``OUT/runs/<id>/``; the table is also written to
``OUT/table.csv``, and ``--json`` prints it as a list of objects (``workload``,
``technique``, ``rca``, ``makespan_s_mean``, ``makespan_s_sd``, ``utilization_mean``,
``utilization_sd``, ``occupancy_mean``, ``esp_efficiency_mean``, ``lends_mean``, ``seeds``)
for a program to check. Usage:
``python scripts/reproduce_rca.py [--paper] [--apps psia,mandelbrot] [--techniques
STATIC,GSS,FAC2,AF] [--seeds 0-5] [--calibrate none|static] [--app-overrides K=V] [--jobs N]
[--out DIR] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from cosim.config import parse_pairs
from cosim.core.files import atomic_open, hold_dir
from cosim.errors import InputError
from cosim.experiment import RunOptions, prepare
from cosim.paths import TRACES_DIR
from cosim.sweep import SweepRun, run_id, run_sweep
from cosim.testing.study import sigterm_as_interrupt

#: (app, technique) -> metric -> (RCA off, RCA on), each a value, None (not published) or a
#: tuple of the values the paper gives in different places (§4, Fig. 6)
PUBLISHED = {
    ("psia", "STATIC"): {"makespan_s": (13000.0, 12965.0)},
    ("psia", "GSS"): {"makespan_s": (12875.0, None)},
    ("psia", "AF"): {"makespan_s": (12875.0, None)},
    ("mandelbrot", "STATIC"): {"makespan_s": (11020.0, (8840.0, 9607.0)),
                               "utilization": (0.712, (0.8382, 0.8482))},
}
#: (app, technique) -> the published utilization gain of RCA, in percentage points
PUBLISHED_GAIN = {("mandelbrot", "GSS"): "utilization +0.5 pt (§4; 0.5 in the conclusion)",
                  ("mandelbrot", "AF"): "utilization +0.05 pt (§4; 0.5 in the conclusion)"}
PAPER_BF_INTERVAL_S = 30.0


def _seeds(text: str) -> list[int]:
    """``0-5`` or ``0,2,4``."""
    try:
        if "-" in text:
            a, b = text.split("-", 1)
            seeds = list(range(int(a), int(b) + 1))
        else:
            seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"expected A-B or a comma list of integers, got {text!r}",
                         field="seeds") from None
    if not seeds or min(seeds) < 0:
        raise InputError(f"expected seeds >= 0, got {text!r}", field="seeds")
    return seeds


def workloads(app: str, args: argparse.Namespace, out: Path,
              overrides: dict[str, str]) -> list[tuple[int, Path]]:
    """``(seed, SWF path)`` of each workload of `app` in this mode (generated under `out`;
    a calibrated workload is calibrated with the app-model `overrides`, the image it runs)."""
    from cosim.workload.esp import make_esp

    if not args.paper and args.calibrate == "none":
        return [(0, TRACES_DIR / f"esp-{app}.swf")]
    paths = []
    tag = "".join(f"-{k}={v}" for k, v in sorted(overrides.items()))
    for seed in (_seeds(args.seeds) if args.paper else [0]):
        name = (f"esp-{app}-rca-table1{tag}-s{seed}.swf" if args.paper
                else f"esp-{app}-static-calibrated{tag}.swf")
        path = out / "workloads" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if args.paper:
            make_esp(app=app, out=path, seed=seed, arrival="rca", calibrate_by="table1",
                     app_params=overrides)
        else:  # the shipped trace's settings, its work recalibrated
            make_esp(app=app, out=path, seed=0, calibrate_by="static", walltime_factor=3.0,
                     app_params=overrides)
        paths.append((seed, path))
    return paths


def _published(app: str, technique: str) -> str:
    pub = PUBLISHED.get((app, technique))
    if not pub:
        return PUBLISHED_GAIN.get((app, technique), "-")

    def text(v, pct):
        if v is None:
            return "?"
        if isinstance(v, tuple):
            return " / ".join(text(x, pct) for x in v)
        return f"{v:.2%}" if pct else f"{v:,.0f}"

    return "; ".join(f"{'makespan' if k == 'makespan_s' else 'utilization'} "
                     f"{text(a, k != 'makespan_s')} -> {text(b, k != 'makespan_s')}"
                     for k, (a, b) in pub.items())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paper", action="store_true",
                    help="the paper's setup: arrival rca, Table 1 calibration, bf_interval "
                    "30 s, seeds 0-5 (module docstring)")
    ap.add_argument("--apps", default="psia,mandelbrot")
    ap.add_argument("--techniques", default="STATIC,GSS,FAC2,AF")
    ap.add_argument("--seeds", default=None, help="--paper: the order seeds (default 0-5)")
    ap.add_argument("--calibrate", choices=("none", "static"), default="none",
                    help="without --paper: static = each job's STATIC run time is its target")
    ap.add_argument("--app-overrides", action="append", default=[], metavar="K=V",
                    help="app-model parameter for every job, e.g. order=shuffled (repeatable)")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (local processes)")
    ap.add_argument("--out", default=None,
                    help="default runs/reproduce-rca[-paper]")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    args = ap.parse_args()
    out = Path(args.out or ("runs/reproduce-rca-paper" if args.paper
                            else "runs/reproduce-rca"))
    try:
        overrides = parse_pairs(args.app_overrides, option="app-overrides")
        apps = [a.strip() for a in args.apps.split(",") if a.strip()]
        bad = [a for a in apps if a not in ("psia", "mandelbrot")]
        if bad or not apps:
            raise InputError(f"expected psia and/or mandelbrot, got {args.apps!r}",
                             field="apps")
        if args.jobs < 1:
            raise InputError(f"must be at least 1, got {args.jobs}", field="jobs")
        techniques = [t.strip() for t in args.techniques.split(",") if t.strip()]
        if not techniques:
            raise InputError(f"expected a comma list of techniques, got {args.techniques!r}",
                             field="techniques")
        if args.seeds is not None and not args.paper:
            raise InputError("seeds vary the order of the --paper workloads; the shipped "
                             "traces have one", field="seeds")
        args.seeds = args.seeds or "0-5"
        cells, runs = [], []
        for app in apps:
            loads = workloads(app, args, out, overrides)
            for technique in techniques:
                for rca in ("off", "yield"):
                    mine = []
                    for seed, path in loads:
                        opt = RunOptions(workload=str(path), technique=technique, rca=rca,
                                         app_overrides=overrides, bf_interval_s=(
                                             PAPER_BF_INTERVAL_S if args.paper else 0.0))
                        prepare(opt)  # every input checked before anything runs
                        run = SweepRun(id=run_id(opt), opt=opt, varying=(
                            ("app", app), ("technique", technique), ("rca", rca),
                            ("seed", seed)))
                        runs.append(run)
                        mine.append(run.id)
                    cells.append((app, technique, rca, [s for s, _ in loads], mine))
    except InputError as exc:
        print(f"reproduce_rca: error: {exc}", file=sys.stderr)
        return 2
    try:
        # another live reproduction into `out` gets a clear error; SIGTERM takes Ctrl-C's path
        with hold_dir(out), sigterm_as_interrupt():
            summaries = dict(zip((r.id for r in runs), run_sweep(runs, out, jobs=args.jobs)))
    except InputError as exc:
        print(f"reproduce_rca: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # finished runs stay: the same command resumes
        print("reproduce_rca: interrupted (the same command resumes)", file=sys.stderr)
        return 130
    rows = []
    for app, technique, rca, seeds, ids in cells:
        s = [summaries[i] for i in ids]

        def mean(key):
            return statistics.fmean(x[key] for x in s)

        def sd(key):  # the sample standard deviation; 0 for one seed
            return statistics.stdev(x[key] for x in s) if len(s) > 1 else 0.0

        rows.append({"workload": f"ESP-{app}", "technique": technique, "rca": rca,
                     "makespan_s_mean": mean("makespan_s"), "makespan_s_sd": sd("makespan_s"),
                     "utilization_mean": mean("utilization"),
                     "utilization_sd": sd("utilization"),
                     "occupancy_mean": mean("occupancy"),
                     "esp_efficiency_mean": mean("esp_efficiency"),
                     "lends_mean": mean("lends"), "seeds": seeds})
    with atomic_open(out / "table.csv") as fh:
        keys = [k for k in rows[0] if k != "seeds"]
        fh.write(",".join(keys) + ",seeds\n")
        fh.writelines(",".join(str(r[k]) for k in keys) + "," + " ".join(map(str, r["seeds"]))
                      + "\n" for r in rows)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    _print(rows, len(rows[0]["seeds"]))
    print(f"outputs under {out}/ (table.csv, runs/<id>/ per run)")
    return 0


def _print(rows: list[dict], n_seeds: int) -> None:
    sd = n_seeds > 1
    print(f"{'workload':<16}{'technique':<10}{'makespan off':>16}{'on':>16}{'change':>8}"
          f"{'util off':>9}{'on':>7}{'occ off':>8}{'on':>7}{'E off':>7}{'on':>6}   published")
    for off, on in zip(rows[::2], rows[1::2]):
        def ms(r):
            return (f"{r['makespan_s_mean']:,.0f} ± {r['makespan_s_sd']:,.0f}" if sd
                    else f"{r['makespan_s_mean']:,.0f}")
        change = (on["makespan_s_mean"] - off["makespan_s_mean"]) / off["makespan_s_mean"]
        app = off["workload"].split("-", 1)[1]
        print(f"{off['workload']:<16}{off['technique']:<10}{ms(off):>16}{ms(on):>16}"
              f"{change:>+8.1%}{off['utilization_mean']:>9.1%}{on['utilization_mean']:>7.1%}"
              f"{off['occupancy_mean']:>8.1%}{on['occupancy_mean']:>7.1%}"
              f"{off['esp_efficiency_mean']:>7.2f}{on['esp_efficiency_mean']:>6.2f}   "
              f"{_published(app, off['technique'])}")


if __name__ == "__main__":
    raise SystemExit(main())
