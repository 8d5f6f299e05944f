#!/usr/bin/env python3
"""Reproduce the study of adaptive metric-aware scheduling (Tang, Ren, Desai, Lan; the slides
"Adaptive Metric-Aware Job Scheduling for Production Supercomputers", 2012) on the traces
cosim ships, and print it next to the slides' BG/P figures.

The seven configurations of the slides' results table — BF in {1, 0.5} x W in {1, 4}, BF
adaptive, W adaptive, 2D adaptive (``--priority metric-aware --bf --window --adaptive``; the
tuner as the Cobalt code does it: BF 0.5 when the queue depth exceeds its trailing monthly
mean, W 4 when the 10 h utilization is at most the 24 h one, checked every 30 minutes) — run
under EASY on each trace of ``--traces`` (``kth``: KTH-SP2 on its 100 nodes, ``lublin``:
the Lublin-model trace on 256, or any SWF file, sized by its header), plus a BF sweep
(1, 0.75, 0.5, 0.25, 0 at W = 1) and a W sweep (1, 2, 3, 4 at BF = 1) for the figures. The
table gives per run the mean wait (minutes), cosim's unfair jobs (started later than in a
strict FCFS replay: not the slides' unknown definition), the loss of capacity (Zhang et al.,
and Cobalt's variant that counts only idle hosts some waiting job could use) and the
utilization, with the slides' BG/P numbers beside (`PUBLISHED`). Figures (``OUT/``):
``metric_aware_bf_w.png`` (wait, unfair jobs and loss of capacity, both variants, against BF
and against W)
and ``metric_aware_tuning.png`` (the queue depth and the BF the tuner set, and the
utilizations and the W, in the 2D adaptive run: the two weeks around its deepest queue). The runs go through
`cosim.sweep` (resumable; ``--jobs N`` at once) under ``OUT/runs/<id>/``; the table is also
``OUT/table.csv``; ``--json`` prints it as a list of objects. The numbers cannot match the
slides': BG/P allocates partitions of 512 nodes (drained, blocking), not hosts; the slides'
~9,300-job slice of ANL-Intrepid is not public as such; their unfair-jobs definition is not
given (README, "Metric-aware scheduling"). Usage: ``python scripts/reproduce_metric_aware.py
[--traces kth,lublin] [--jobs N] [--out DIR] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cosim.core.files import atomic_open, hold_dir
from cosim.errors import InputError
from cosim.experiment import RunOptions, prepare
from cosim.paths import TRACES_DIR
from cosim.sweep import SweepRun, run_id, run_sweep
from cosim.testing.study import sigterm_as_interrupt

TRACES = {"kth": "KTH-SP2-1996-2.1-cln.swf.gz", "lublin": "lublin_256.swf.gz"}

#: the slides' results table (slide 24; BG/P, ~9,300 jobs): config -> (mean wait in
#: minutes, unfair jobs, loss of capacity)
PUBLISHED = {
    "BF=1 W=1": (245.2, 10, 0.157),
    "BF=1 W=4": (221.6, 18, 0.124),
    "BF=0.5 W=1": (77.9, 39, 0.158),
    "BF=0.5 W=4": (70.4, 49, 0.139),
    "BF adaptive": (74.1, 21, 0.128),
    "W adaptive": (198.1, 16, 0.119),
    "2D adaptive": (71.3, 19, 0.121),
}

#: label -> (bf, window, adaptive): the table's seven configurations
TABLE = {
    "BF=1 W=1": (1.0, 1, "off"), "BF=1 W=4": (1.0, 4, "off"),
    "BF=0.5 W=1": (0.5, 1, "off"), "BF=0.5 W=4": (0.5, 4, "off"),
    "BF adaptive": (None, 1, "bf"), "W adaptive": (1.0, 1, "w"), "2D adaptive": (None, 1, "2d"),
}
BF_SWEEP = (1.0, 0.75, 0.5, 0.25, 0.0)
DAY = 86400 * 10**9  # ticks
W_SWEEP = (1, 2, 3, 4)


def _workload(name: str) -> str:
    if name in TRACES:
        return str(TRACES_DIR / TRACES[name])
    if not Path(name).is_file():
        raise InputError(f"expected {', '.join(TRACES)} or an SWF file, got {name!r}",
                         field="traces")
    return name


def _configs() -> dict[str, tuple[float | None, int, str]]:
    out = dict(TABLE)
    for bf in BF_SWEEP:
        out.setdefault(f"BF={bf:g} W=1", (bf, 1, "off"))
    for w in W_SWEEP:
        out.setdefault(f"BF=1 W={w}", (1.0, w, "off"))
    return out


def _row(trace: str, label: str, s: dict) -> dict:
    pub = PUBLISHED.get(label)
    return {"trace": trace, "config": label, "mean_wait_min": s["mean_wait_s"] / 60,
            "unfair_jobs": s["unfair_jobs"], "loss_of_capacity": s["loss_of_capacity"],
            "loss_of_capacity_fit": s["loss_of_capacity_fit"],
            "utilization": s["utilization"],
            "slides_wait_min": pub[0] if pub else None,
            "slides_unfair": pub[1] if pub else None, "slides_loc": pub[2] if pub else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="kth,lublin",
                    help="kth, lublin or SWF files, comma-separated (default kth,lublin)")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (local processes)")
    ap.add_argument("--out", default="runs/reproduce-metric-aware")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    args = ap.parse_args(argv)
    out = Path(args.out)
    try:
        if args.jobs < 1:
            raise InputError(f"must be at least 1, got {args.jobs}", field="jobs")
        names = [t.strip() for t in args.traces.split(",") if t.strip()]
        if not names:
            raise InputError("expected at least one trace", field="traces")
        runs, cells = [], []
        for name in names:
            workload = _workload(name)
            for label, (bf, window, adaptive) in _configs().items():
                opt = RunOptions(workload=workload, priority="metric-aware", bf=bf,
                                 window=window, adaptive=adaptive)
                prepare(opt)  # every input checked before anything runs
                run = SweepRun(id=run_id(opt), opt=opt, varying=(
                    ("trace", name), ("config", label)))
                runs.append(run)
                cells.append((name, label, run.id))
    except InputError as exc:
        print(f"reproduce_metric_aware: error: {exc}", file=sys.stderr)
        return 2
    try:
        with hold_dir(out), sigterm_as_interrupt():  # SIGTERM: the sweep stops its workers
            summaries = dict(zip((r.id for r in runs), run_sweep(runs, out, jobs=args.jobs)))
    except InputError as exc:
        print(f"reproduce_metric_aware: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("reproduce_metric_aware: interrupted (the same command resumes)",
              file=sys.stderr)
        return 130
    rows = [_row(name, label, summaries[rid]) for name, label, rid in cells]
    with atomic_open(out / "table.csv") as fh:
        keys = list(rows[0])
        fh.write(",".join(keys) + "\n")
        fh.writelines(",".join("" if r[k] is None else str(r[k]) for k in keys) + "\n"
                      for r in rows)
    _figures(out, names, rows, {(n, lab): rid for n, lab, rid in cells})
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    _print(rows)
    print(f"outputs under {out}/ (table.csv, metric_aware_bf_w.png, metric_aware_tuning.png, "
          "runs/<id>/ per run)")
    return 0


def _print(rows: list[dict]) -> None:
    print(f"{'trace':<8}{'configuration':<14}{'wait [min]':>11}{'unfair':>8}{'LoC':>8}"
          f"{'LoC fit':>9}{'util':>8}   slides (BG/P): wait, unfair, LoC")
    for r in rows:
        if r["config"] not in TABLE:
            continue
        pub = (f"{r['slides_wait_min']:.1f} min, {r['slides_unfair']}, "
               f"{r['slides_loc']:.1%}")
        print(f"{r['trace']:<8}{r['config']:<14}{r['mean_wait_min']:>11.1f}"
              f"{r['unfair_jobs']:>8}{r['loss_of_capacity']:>8.1%}"
              f"{r['loss_of_capacity_fit']:>9.1%}{r['utilization']:>8.1%}   {pub}")


def _figures(out: Path, names: list[str], rows: list[dict], ids: dict) -> None:
    from matplotlib.figure import Figure

    from cosim.output.hdf5 import read_results

    by = {(r["trace"], r["config"]): r for r in rows}
    fig = Figure(figsize=(12.0, 6.5))
    axes = fig.subplots(2, 3)
    metrics = (("mean_wait_min", "mean wait [min]"), ("unfair_jobs", "unfair jobs"),
               ("loss_of_capacity", "loss of capacity"))
    for col, (key, title) in enumerate(metrics):
        for k, name in enumerate(names):
            colour = f"C{k}"
            keys = [(key, "-", name)] + ([("loss_of_capacity_fit", "--", f"{name}, Cobalt's")]
                                         if key == "loss_of_capacity" else [])
            for kk, style, label in keys:
                axes[0][col].plot(BF_SWEEP, [by[name, f"BF={bf:g} W=1"][kk] for bf in BF_SWEEP],
                                  style, marker="o", color=colour, label=label)
                axes[1][col].plot(W_SWEEP, [by[name, f"BF=1 W={w}"][kk] for w in W_SWEEP],
                                  style, marker="o", color=colour, label=label)
        axes[0][col].set(xlabel="BF (W = 1)", ylabel=title)
        axes[0][col].invert_xaxis()
        axes[1][col].set(xlabel="W (BF = 1)", ylabel=title)
    axes[0][0].legend()
    axes[0][2].legend(fontsize="small")
    fig.suptitle("metric-aware scheduling under EASY: the balance factor and the window")
    fig.tight_layout()
    _save(fig, out / "metric_aware_bf_w.png")

    fig = Figure(figsize=(12.0, 3.2 * len(names)))
    axes = fig.subplots(len(names), 2, squeeze=False)
    for k, name in enumerate(names):
        (run,) = read_results(out / "runs" / ids[name, "2D adaptive"] / "results.h5",
                              chunks=False)
        t = run.tuning
        if len(t):  # the two weeks around the deepest queue (a year is too dense to read)
            peak = int(t["time"][int(t["queue_depth_min"].argmax())])
            lo = max(int(t["time"][0]), peak - 7 * DAY)
            t = t[(t["time"] >= lo) & (t["time"] <= lo + 14 * DAY)]
        days = t["time"] / DAY
        ax = axes[k][0]
        ax.plot(days, t["queue_depth_min"] / 60, lw=0.6, color="tab:gray")
        ax.set(xlabel="day of the trace", ylabel="queue depth [h]",
               title=f"{name}: queue depth and BF")
        bx = ax.twinx()
        bx.step(days, t["bf"], where="post", color="tab:red", lw=0.8)
        bx.set(ylabel="BF", ylim=(0.4, 1.1))
        ax = axes[k][1]
        ax.plot(days, t["u_short"], lw=0.6, label="U 10 h")
        ax.plot(days, t["u_long"], lw=0.6, label="U 24 h")
        ax.set(xlabel="day of the trace", ylabel="utilization",
               title=f"{name}: utilization and W")
        ax.legend(loc="lower left")
        wx = ax.twinx()
        wx.step(days, t["window"], where="post", color="tab:red", lw=0.8)
        wx.set(ylabel="W", ylim=(0.5, 4.5))
    fig.suptitle("the 2D adaptive tuner at its checkpoints (every 30 minutes), the two weeks "
                 "around the deepest queue")
    fig.tight_layout()
    _save(fig, out / "metric_aware_tuning.png")


def _save(fig, path: Path) -> None:
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100)


if __name__ == "__main__":
    raise SystemExit(main())
