"""The ``cosim`` command line: argument parsing, input validation and user-facing errors.

Sub-commands: ``app`` simulates one application's loop under one or several DLS techniques
and prints a summary (a table, or JSON with ``--json``). The CLI parses and validates every
input before simulating; any `InputError` is printed as one line ``cosim: error: ...`` on
stderr with exit status 2, never a traceback.
"""

from __future__ import annotations

import cosim.single_thread  # noqa: F401 - first: numpy must not start a thread per core

import argparse
import contextlib
import functools
import json
import math
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cosim.bls import policies
from cosim.bls.tuning import ADAPTIVE_MODES
from cosim.bls.power import STRATEGIES
from cosim.core.collect import ending_process, rare_collection
from cosim.core.files import hold_dir
from cosim.errors import EXIT_INPUT, EXIT_OUTPUT, CosimError, InputError, OutputError
from cosim.plugins import Choices

__all__ = ["main", "build_parser"]


class _Version(argparse.Action):
    """``--version``: the version, and which master-worker loop, trace replay, row formatter,
    trace event loop and record maker this install runs (compiled or Python)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version, and the master-worker loop, trace replay, "
                              "output row formatter, trace event loop and record maker in use "
                              "(compiled, or python where a C module could not be built), then "
                              "exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from cosim import __version__
        from cosim.als.runtime import LOOP_KERNEL
        from cosim.bls.replay import REPLAY_KERNEL
        from cosim.core.records import RECORDS_KERNEL
        from cosim.output.otf2_writer import EVENT_KERNEL
        from cosim.output.textrows import TEXT_KERNEL

        print(f"cosim {__version__} (master-worker loop: {LOOP_KERNEL}, trace replay: "
              f"{REPLAY_KERNEL}, output rows: {TEXT_KERNEL}, trace events: {EVENT_KERNEL}, "
              f"records: {RECORDS_KERNEL})")
        # (stdout, as argparse)
        parser.exit()


def build_parser(listing: bool = False) -> argparse.ArgumentParser:
    """The ``cosim`` parser; `listing` (help was asked for) names the plugins' policies in the
    help texts too, which loads them (`cosim.plugins`): otherwise only built-in names are
    written there, so building the parser never loads a plugin."""
    """The argument parser of every sub-command."""
    parser = argparse.ArgumentParser(
        prog="cosim",
        description="Multilevel co-simulator of HPC batch and loop self-scheduling.",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    app = sub.add_parser(
        "app",
        help="simulate one application's loop under DLS techniques",
        description="Simulate one application scheduling its loop with a DLS technique over "
        "the PEs of the first HOSTS hosts of a platform (master on the first PE).",
    )
    app.add_argument("--app", required=True,
                     help="app model (mandelbrot, psia, profile) or an app TOML file")
    app.add_argument("--costs", metavar="FILE",
                     help="per-iteration FLOP costs for --app profile (.npy, .csv/.txt, .h5)")
    app.add_argument("--app-param", action="append", metavar="K=V", default=[],
                     help="override an app parameter (repeatable)")
    app.add_argument("--hosts", type=int, required=True, metavar="P",
                     help="number of hosts (their PEs run the loop)")
    app.add_argument("--platform", default="ib256",
                     help="platform name in platforms/ or a .toml/.xml file (default ib256)")
    app.add_argument("--speed", metavar="FLOPS",
                     help="override every host's per-core speed (FLOP/s, e.g. 2.4e9 or 2.4Gf)")
    app.add_argument("--technique", required=True, metavar="T",
                     help="DLS technique, a comma list, or 'all'")
    app.add_argument("--param", action="append", metavar="K=V", default=[],
                     help="technique parameter (repeatable), e.g. h=1e-6, weights=1,2")
    app.add_argument("--overhead", type=float, default=0.0, metavar="S",
                     help="master's scheduling overhead per chunk in seconds (default 0)")
    app.add_argument("--request-bytes", type=int, default=64, metavar="B")
    app.add_argument("--assign-bytes", type=int, default=64, metavar="B")
    app.add_argument("--availability", metavar="FILE.csv",
                     help="PE availability steps: CSV pe,t_s,factor (pe = rank in the job)")
    app.add_argument("--timesteps", type=int, default=1,
                     help="run the loop this many times (AWF adapts between steps)")
    app.add_argument("--seed", type=int, default=0, help="root seed (RND's stream)")
    app.add_argument("--chunks", metavar="FILE.csv",
                     help="write pe,first,size,t_assign_s,t_start_s,t_finish_s per chunk")
    app.add_argument("--json", action="store_true", help="print JSON instead of a table")
    app.set_defaults(handler=_cmd_app)

    run = sub.add_parser(
        "run",
        help="simulate a workload; without --workload: the main job (RCA off vs on)",
        description="Simulate an SWF workload and write jobs.csv, schedule.swf and "
        "summary.json. Rigid jobs run for their trace run time; jobs that carry an app "
        "model (ESP traces) are co-simulated with the application level. Without "
        "--workload, runs the main job: ESP-Mandelbrot on ib256 with FCFS + EASY and "
        "STATIC, RCA off and on, and prints the comparison.",
    )
    run.add_argument("--workload", metavar="FILE.swf",
                     help="SWF trace (plain or .gz); default: the main job")
    run.add_argument("--platform", default=None,
                     help="platform name in platforms/ or a .toml/.xml file (default: ib256, "
                     "as many hosts as the trace's MaxNodes/MaxProcs header says)")
    run.add_argument("--hosts", type=int, metavar="N",
                     help="use the first N hosts of the platform (default: the trace header's "
                     "machine on the default platform, else all)")
    # the choices come from the registries (plugins included, `cosim.plugins`), listed only
    # when shown: a metavar keeps argparse from listing them while it builds the parser
    batch, order, rule = (Choices(policies.BACKFILLS, "fcfs"), Choices(policies.PRIORITIES),
                          Choices(policies.SELECTIONS))
    malleable = policies.malleable_names()
    run.add_argument("--batch", choices=batch, default=None, metavar="POLICY",
                     help=f"backfilling, one of {batch.text(listing)}: fcfs (= none: the queue "
                     "head blocks), easy (default), conservative, greedy (every job that "
                     "fits, no reservation: the default for --priority vpt|vpe)")
    run.add_argument("--priority", choices=order, default="fcfs", metavar="ORDER",
                     help=f"queue order, one of {order.text(listing)} (default fcfs)")
    run.add_argument("--selection", choices=rule, metavar="RULE", default="first-fit",
                     help=f"host selection, one of {rule.text(listing)} (default first-fit)")
    run.add_argument("--malleable", choices=malleable, default="none", metavar="POLICY",
                     help=f"malleable policy, one of {malleable.text(listing)}: equi = "
                     "equipartition (Kale et al.): every job its minimum PEs, the rest shared "
                     "equally up to each maximum; sd = SD-Policy; it replaces --batch "
                     "(default none)")
    run.add_argument("--malleable-param", action="append", metavar="K=V", default=[],
                     help="malleable policy parameter (repeatable): equi: share=additive|level, "
                     "queue=first-fit|fcfs; sd: sharing_factor, cutoff=fixed|dynamic|none, "
                     "max_slowdown, max_mates, weighting=nodes|none, compare_static, "
                     "granularity=auto|core|host, expand_guest, protect_reservation")
    run.add_argument("--sharing-factor", type=float, metavar="F", default=None,
                     help="--malleable sd: the share of a mate's cores a guest may take per "
                     "host (default 0.5)")
    run.add_argument("--max-mates", type=int, metavar="M", default=None,
                     help="--malleable sd: at most M mates per guest (default 2)")
    run.add_argument("--malleable-fraction", type=float, metavar="F", default=None,
                     help="make a seeded random share F of the trace's rigid jobs malleable, "
                     "with PE bounds from --min-frac and --max-frac (jobs the trace marks "
                     "keep their marks)")
    run.add_argument("--min-frac", type=float, default=0.5, metavar="F",
                     help="--malleable-fraction: min PEs = ceil(F x requested) (default 0.5)")
    run.add_argument("--max-frac", type=float, default=1.0, metavar="F",
                     help="--malleable-fraction: max PEs = floor(F x requested) (default 1)")
    run.add_argument("--walltime-kill", choices=("on", "off"), default="on",
                     help="kill jobs that outlive their requested time (default on)")
    run.add_argument("--procs-field", choices=("requested", "allocated"),
                     default="requested",
                     help="SWF field 8 (requested, default) or 5 (allocated) for job sizes")
    run.add_argument("--lenient", action="store_true",
                     help="skip malformed SWF lines (and report how many) instead of failing")
    run.add_argument("--skip-zero-runtime", action="store_true",
                     help="skip SWF jobs of run time 0 (default: run them, as AccaSim and "
                     "textbook EASY do)")
    run.add_argument("--technique", default="STATIC", metavar="T",
                     help="DLS technique of the co-simulated apps (default STATIC)")
    run.add_argument("--param", action="append", metavar="K=V", default=[],
                     help="technique parameter (repeatable)")
    run.add_argument("--rca", choices=("off", "yield", "full"), default="off",
                     help="RCA: yield = hosts whose PEs ran out of work are lent to queued "
                     "jobs; full = yield, and running apps are asked to give up hosts the "
                     "head of the queue lacks (default off)")
    run.add_argument("--exclusion-ok", choices=("trace", "all", "none"), default="trace",
                     help="--rca full: which jobs may be asked for hosts: as the workload "
                     "says (CosimApp exclusion_ok=1; default), all or none")
    run.add_argument("--max-slowdown", type=float, default=0.10, metavar="F",
                     help="--rca full: an app gives up hosts when its predicted run time "
                     "grows by at most F (default 0.10)")
    run.add_argument("--exclusion-max-short", type=float, default=0.25, metavar="F",
                     help="--rca full: ask only when the head job lacks at most F of its "
                     "hosts (default 0.25)")
    run.add_argument("--app-overrides", action="append", metavar="K=V", default=[],
                     help="app-model parameter for every co-simulated job (repeatable)")
    run.add_argument("--quantum", type=float, default=0.0, metavar="S",
                     help="scheduling quantum in seconds (0 = every event, the default)")
    run.add_argument("--bf", type=float, default=None, metavar="BF",
                     help="--priority metric-aware: the balance factor in [0, 1] between the "
                     "wait score and the walltime score (1 = FCFS order, 0 = SJF; default 1)")
    run.add_argument("--window", type=int, default=None, metavar="W",
                     help="window-based allocation: try every order of the first W queued "
                     "jobs (1..6) and let the backfill policy plan the one with the "
                     "smallest predicted makespan (default 1: none; with --adaptive w, the "
                     "tuner's first level)")
    run.add_argument("--makespan-cap", type=float, default=None, metavar="S",
                     help="--window: keep the queue order unless some order is predicted "
                     "to end within S seconds (Cobalt's 100000; default none)")
    run.add_argument("--adaptive", choices=ADAPTIVE_MODES, default="off",
                     help="the metric-aware tuner: re-tune BF (bf; needs --priority "
                     "metric-aware), W (w) or both (2d) every 30 minutes from the queue depth "
                     "and the utilization (default off)")
    run.add_argument("--tuner-param", action="append", metavar="K=V", default=[],
                     help="tuner parameter (repeatable): check_interval_s, bf_levels=1,0.5, "
                     "q_threshold_min (default: the trailing mean), q_window_s, "
                     "w_levels=1,4, u_short_s, u_long_s, direction=falling|rising, "
                     "trigger=level|crossing, pass_at_checkpoint")
    run.add_argument("--values", metavar="FILE.csv", default=None,
                     help="job values (value- and power-aware scheduling): a CSV "
                     "job_id,value,soft_s,hard_s[,value_min,decay] that wins over the trace's "
                     "CosimApp value keys; the summary then reports productivity")
    run.add_argument("--drop-hopeless", choices=("on", "off"), default=None,
                     help="drop queued jobs that can no longer earn value (default: on for "
                     "--priority vpt|vpe, off otherwise)")
    run.add_argument("--power-cap", metavar="CAP", default=None,
                     help="a system power cap (value- and power-aware scheduling; needs a "
                     "platform with a [power] table, e.g. platforms/kumbhare2048.toml, and "
                     "--batch greedy or fcfs): a fraction of every host at full power "
                     "(0.6) or watts (300000W, 300kW)")
    run.add_argument("--power-strategy", choices=STRATEGIES, default="best",
                     help="the power a starting job gets: max (p_max), min (p_min), uniform "
                     "(the cap shared by all hosts), best (the level that maximises VPT or "
                     "VPE within the power left; default)")
    run.add_argument("--power-dynamic", action="store_true",
                     help="reclaim power from running jobs for queued ones when worth the "
                     "value lost, and give leftover power to running jobs, at every pass")
    run.add_argument("--unfair-replayed", action="store_true",
                     help="also count Sabin's unfair jobs: each job's fair start replayed "
                     "under the same policies without the jobs that arrived after it (one "
                     "replay per job: slow on long traces; trace jobs only)")
    run.add_argument("--bf-interval", type=float, default=0.0, metavar="S",
                     help="Slurm's bf_interval: backfill only at multiples of S seconds, the "
                     "FCFS part at every event (0 = backfill at every event, the default)")
    run.add_argument("--seed", type=int, default=0, help="root seed of the random streams")
    run.add_argument("--rank0-apps", action="store_true",
                     help="under mpiexec, rank 0 simulates apps too (default: ranks 1..K-1)")
    run.add_argument("--out", metavar="DIR",
                     help="output directory (default under runs/)")
    run.add_argument("--trace", choices=("none", "batch", "full"), default=None,
                     help="OTF2 trace for Vampir in OUT/trace/: batch = job regions and "
                     "counters, full = also chunks, overheads and master-worker messages "
                     "(default: full for the main job, none otherwise)")
    run.add_argument("--plots", action=argparse.BooleanOptionalAction, default=None,
                     help="write PNG plots: utilization, Gantt, load imbalance (default: on "
                     "for the main job, off otherwise)")
    run.add_argument("--chunks", action="store_true",
                     help="store every app's chunk table in results.h5 (compressed)")
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    talk = run.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true",
                      help="no progress bar and no progress lines on standard error (warnings "
                      "and errors still print)")
    talk.add_argument("-v", "--verbose", action="store_true",
                      help="a progress bar even when standard error is not a terminal, and "
                      "the time each step took (read, simulate, write)")
    run.set_defaults(handler=_cmd_run)

    sweep = sub.add_parser(
        "sweep", help="run a parameter sweep from a TOML spec (resumable)",
        description="Run the Cartesian product of `cosim run` options a TOML spec describes "
        "([base], [grid], [[zip]], seeds/repeat; see cosim/sweep.py). Each run writes its "
        "files under DIR/runs/<id>/ (its id derived from its configuration); DIR/sweep.csv "
        "has a row per finished run. Running it again skips the finished runs.")
    sweep.add_argument("spec", metavar="SPEC.toml")
    sweep.add_argument("--out", metavar="DIR",
                       help="the sweep's directory (default: runs/sweep-<spec name>)")
    sweep.add_argument("--dry-run", action="store_true",
                       help="check the spec and list the runs (finished or not); run nothing")
    sweep.add_argument("--jobs", type=int, default=1, metavar="N",
                       help="runs at once, in N local worker processes (default 1)")
    sweep.add_argument("--part", metavar="I/N",
                       help="run only runs I, I+N, I+2N, ... (a job array's share, e.g. "
                       "$SLURM_ARRAY_TASK_ID/8); the table lists every finished run")
    sweep.add_argument("--ranks-per-run", type=int, default=1, metavar="R",
                       help="under mpiexec -n 1+G*R: each run is a co-simulation over a group "
                       "of R ranks (the batch level on one, apps on the others), G runs at "
                       "once (default 1)")
    sweep.add_argument("--rank0-apps", action="store_true",
                       help="with --ranks-per-run: a group's first rank simulates apps too")
    talk = sweep.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true", help="no progress at all")
    talk.add_argument("-v", "--verbose", action="store_true",
                      help="a line per finished run (runs done, time, time left), also where "
                      "standard error is not a terminal (where it is: a progress bar)")
    sweep.set_defaults(handler=_cmd_sweep)

    report = sub.add_parser(
        "report", help="compare the runs of results.h5 files or sweep directories",
        description="Print one row per run of the results.h5 files given (a directory: its "
        "results.h5, or each run's of a sweep), with the configuration keys that differ "
        "between them next to makespan, utilization, waits, slowdowns, RCA counts; or every "
        "scalar metric as CSV; or, with --group-by, mean ± sd over the runs of each group.")
    report.add_argument("results", metavar="RESULTS.h5|DIR", nargs="+")
    report.add_argument("--csv", action="store_true", help="CSV with every scalar metric")
    report.add_argument("--group-by", action="append", default=[], metavar="KEY",
                        help="group runs by configuration KEY (repeat, or KEY,KEY): mean ± "
                        "sd of each metric per group, e.g. over seeds")
    report.set_defaults(handler=_cmd_report)

    plot = sub.add_parser(
        "plot", help="draw the plots of runs, or a metric against an option over many runs",
        description="Write PNGs of the runs in results.h5 files or directories: system "
        "utilization over time (all runs), a Gantt chart of hosts x time per run, the "
        "load-imbalance profile; or, with --x and --y, one metric against one option over "
        "all the runs (a sweep), mean ± sd over the runs that differ in nothing else, one "
        "line per --hue value.")
    plot.add_argument("results", metavar="RESULTS.h5|DIR", nargs="+")
    plot.add_argument("--out", metavar="DIR",
                      help="where to write the PNGs (default: beside the first results)")
    plot.add_argument("--x", metavar="KEY", help="configuration key on the x axis")
    plot.add_argument("--y", metavar="METRIC", help="metric on the y axis (with --x)")
    plot.add_argument("--hue", metavar="KEY", help="one line per value of this key")
    plot.set_defaults(handler=_cmd_plot)

    workload = sub.add_parser("workload", help="generate workloads (SWF)")
    wsub = workload.add_subparsers(dest="generator", required=True, metavar="GENERATOR")
    esp = wsub.add_parser(
        "esp",
        help="the ESP benchmark (230 jobs, 14 categories) sized to a platform",
        description="Generate the ESP benchmark as SWF: 230 jobs in 14 categories, sizes "
        "scaled to the platform, the ESP arrival scheme with the Z-job drain rule; each job "
        "carries its category and app parameters (see traces/README.md).",
    )
    esp.add_argument("--app", required=True, choices=("psia", "mandelbrot"))
    esp.add_argument("--hosts", type=int, default=None,
                     help="machine size (default: the platform's host count)")
    esp.add_argument("--platform", default="ib256", help="host type (default ib256)")
    esp.add_argument("--seed", type=int, default=0)
    esp.add_argument("--arrival", choices=("esp", "zero", "rca"), default="esp",
                     help="esp: a block of 2x the machine at 0, the rest evenly over --span "
                     "T_min, Z at 0.1 and 0.5 T_min; zero: all at 0; rca: the RCA paper's, "
                     "the rest in thirds split by the two Z jobs, each followed by --gap")
    esp.add_argument("--span", type=float, default=0.5, metavar="X",
                     help="the later jobs arrive over X T_min (default 0.5)")
    esp.add_argument("--gap", type=float, default=None, metavar="X",
                     help="--arrival rca: nothing submitted for X T_min after each Z job "
                     "(default 0.1)")
    esp.add_argument("--calibrate", choices=("balanced", "static", "table1"),
                     default="balanced",
                     help="each job's work: balanced run time = target (default); STATIC run "
                     "time = target; table1: the RCA paper's Table 1 (Mandelbrot max_iter, "
                     "PSIA images per category; see cosim/workload/esp_calibrate.py)")
    esp.add_argument("--paper-scale", type=float, default=1.0, metavar="X",
                     help="multiply every job's work by X (default 1; raise "
                     "--walltime-factor with it, or jobs overrun their requested time)")
    esp.add_argument("--app-param", action="append", metavar="K=V", default=[],
                     help="app-model parameter for every job, e.g. the Mandelbrot window "
                     "(repeatable; written into the CosimApp comments)")
    esp.add_argument("--walltime-factor", type=float, default=None, metavar="F",
                     help="requested time = ceil(F x target run time) (default 3; 1.5 with "
                     "--calibrate static or table1)")
    esp.add_argument("--exclusion-ok", action="store_true",
                     help="mark every job as willing to give up hosts when asked (RCA "
                     "exclusion requests, cosim run --rca full)")
    esp.add_argument("--malleable", action="store_true",
                     help="mark every job but the Z jobs malleable (CosimApp kind=malleable), "
                     "with PE bounds from --min-frac and --max-frac")
    esp.add_argument("--min-frac", type=float, default=0.5, metavar="F",
                     help="--malleable: min PEs = ceil(F x requested) (default 0.5)")
    esp.add_argument("--max-frac", type=float, default=1.0, metavar="F",
                     help="--malleable: max PEs = floor(F x requested) (default 1)")
    esp.add_argument("-o", "--out", required=True, metavar="FILE.swf")
    esp.set_defaults(handler=_cmd_workload_esp)
    vals = wsub.add_parser(
        "values",
        help="job values for value-aware scheduling (a sidecar CSV for --values)",
        description="Give every job of an SWF trace a value class and soft/hard thresholds "
        "(multiples of its requested time), drawn from a random stream keyed by (seed, job "
        "id): adding or removing jobs leaves the others' values. Writes DIR/values.csv (for "
        "cosim run --values) and, with --arrival-scale, the trace with its arrivals "
        "compressed for oversubscription (a ; Note: says so).")
    vals.add_argument("trace", metavar="TRACE.swf")
    vals.add_argument("--seed", type=int, default=0)
    vals.add_argument("--classes", default="1:0.6,4:0.3,16:0.1", metavar="V:P,...",
                      help="values and their probabilities (default 1:0.6,4:0.3,16:0.1)")
    vals.add_argument("--soft", type=float, default=2.0, metavar="X",
                      help="soft threshold: X x the requested time after submission (default 2)")
    vals.add_argument("--hard", type=float, default=6.0, metavar="X",
                      help="hard threshold: X x the requested time (default 6)")
    vals.add_argument("--arrival-scale", type=float, default=None, metavar="F",
                      help="also write the trace with inter-arrival times multiplied by F "
                      "(0.5: twice the load)")
    vals.add_argument("-o", "--out", required=True, metavar="DIR")
    vals.set_defaults(handler=_cmd_workload_values)
    return parser


def _techniques(spec: str):
    from cosim.als.techniques import REGISTRY, get

    if spec.strip().lower() == "all":
        return list(REGISTRY.values())
    items = [s for s in (x.strip() for x in spec.split(",")) if s]
    if not items:
        raise InputError("no technique given", field="technique")
    return [get(s) for s in items]


def _cmd_app(args: argparse.Namespace) -> int:
    from cosim.als.availability import load_availability
    from cosim.als.launch import loop_on_hosts, summary, write_chunks
    from cosim.als.runtime import Comm
    from cosim.config import parse_pairs
    from cosim.core.units import parse_speed
    from cosim.platform import load_platform
    from cosim.workload import load_app

    techniques = _techniques(args.technique)
    if args.chunks and len(techniques) > 1:
        raise InputError("--chunks needs a single technique", field="chunks")
    if args.seed < 0:
        raise InputError("the seed must be >= 0", field="seed")
    params = parse_pairs(args.param, option="param")
    try:
        comm = Comm(request_bytes=args.request_bytes, assign_bytes=args.assign_bytes,
                    overhead_s=args.overhead)
    except ValueError as exc:
        raise InputError(str(exc), field="overhead") from None
    platform = load_platform(args.platform)
    if args.speed is not None:
        platform = platform.with_speed(parse_speed(args.speed, field="speed"))
    costs = load_app(args.app, overrides=parse_pairs(args.app_param, option="app-param"),
                     costs_file=args.costs)
    availability = None
    n_pes = None
    if args.availability:
        from cosim.als.launch import job_pes

        n_pes = len(job_pes(platform, args.hosts))
        availability = load_availability(args.availability, n_pes)
    runs = []
    for technique in techniques:
        run, pes = loop_on_hosts(costs=costs, platform=platform, hosts=args.hosts,
                                 technique=technique, params=params, comm=comm,
                                 availability=availability, timesteps=args.timesteps,
                                 seed=args.seed, record=bool(args.chunks))
        t0 = time.perf_counter()
        result = run.run()
        wall = time.perf_counter() - t0
        if args.chunks:
            write_chunks(args.chunks, result, pes)
        row = summary(result, run, wall_s=wall)
        row["platform"] = platform.name
        row["n_hosts"] = args.hosts
        runs.append(row)
    if args.json:
        json.dump(runs[0] if len(runs) == 1 else runs, sys.stdout, indent=None)
        sys.stdout.write("\n")
    else:
        _print_table(runs)
    return 0


def _run_options(args: argparse.Namespace, workload: str):
    from cosim.config import parse_pairs
    from cosim.experiment import RunOptions

    return RunOptions(
        workload=workload, platform=args.platform, hosts=args.hosts,
        batch=args.batch or ("greedy" if policies.priority(args.priority).value_based
                             else "easy"),
        priority=args.priority, selection=args.selection,
        walltime_kill=args.walltime_kill == "on", procs_field=args.procs_field,
        lenient=args.lenient, skip_zero_runtime=args.skip_zero_runtime,
        technique=args.technique,
        technique_params=parse_pairs(args.param, option="param"), rca=args.rca,
        exclusion_ok=args.exclusion_ok, max_slowdown=args.max_slowdown,
        exclusion_max_short=args.exclusion_max_short,
        app_overrides=parse_pairs(args.app_overrides, option="app-overrides"),
        quantum_s=args.quantum, bf_interval_s=args.bf_interval, bf=args.bf,
        window=args.window, makespan_cap_s=args.makespan_cap, adaptive=args.adaptive,
        tuner_params=parse_pairs(args.tuner_param, option="tuner-param"),
        unfair_replayed=args.unfair_replayed, values=args.values,
        drop_hopeless=None if args.drop_hopeless is None else args.drop_hopeless == "on",
        **_power_cap(args.power_cap), power_strategy=args.power_strategy,
        power_dynamic=args.power_dynamic,
        seed=args.seed,
        out=args.out,
        malleable=args.malleable,
        malleable_params=_sd_pairs(args),
        malleable_fraction=args.malleable_fraction, min_frac=args.min_frac,
        max_frac=args.max_frac,
        trace=args.trace or ("full" if workload is None else "none"),
        plots=args.plots if args.plots is not None else workload is None,
        chunks=args.chunks)


def _power_cap(text: str | None) -> dict[str, float]:
    """``--power-cap``: a fraction (``0.6``) or watts (``300000W``, ``300kW``, ``1.2MW``)."""
    if text is None:
        return {}
    t = text.strip()
    scale = next((f for suffix, f in (("MW", 1e6), ("kW", 1e3), ("W", 1.0))
                  if t.endswith(suffix)), None)
    try:
        number = float(t[:-len(next(x for x in ("MW", "kW", "W") if t.endswith(x)))]
                       if scale else t)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise InputError(f"expected a fraction (0.6) or watts (300000W, 300kW), got {text!r}",
                         field="power-cap")
    return {"power_cap_w": number * scale} if scale else {"power_cap": number}


def _sd_pairs(args: argparse.Namespace) -> dict[str, str]:
    """``--malleable-param`` pairs, with ``--sharing-factor`` and ``--max-mates`` (SD-Policy's
    own flags) folded in."""
    from cosim.config import parse_pairs

    pairs = parse_pairs(args.malleable_param, option="malleable-param")
    for flag, key, value in (("sharing-factor", "sharing_factor", args.sharing_factor),
                             ("max-mates", "max_mates", args.max_mates)):
        if value is None:
            continue
        if args.malleable != "sd":
            raise InputError("needs --malleable sd", field=flag)
        pairs[key] = str(value)
    return pairs


def _warn(message: str) -> None:
    print(f"cosim: warning: {message}", file=sys.stderr)


def _world() -> tuple[object | None, int]:
    """MPI's world communicator and this process's rank in it (None, 0 without mpi4py).

    Called only once inputs are validated: rank and size come from ``COMM_WORLD`` whatever the
    launcher (MPICH's mpiexec, Open MPI's mpirun, Slurm's srun); a serial run is a world of
    one. MPI is loaded only when a launcher started the process (`launched_by_mpi`)."""
    from cosim.transport import launched_by_mpi

    if not launched_by_mpi():
        return None, 0
    try:
        from cosim.transport.mpi import world
    except (ImportError, RuntimeError, OSError) as exc:
        # every process would run the whole simulation alone, into the same files
        raise InputError(
            f"started by an MPI launcher, but MPI cannot be loaded ({exc}); install mpi4py "
            "with an MPI library (pip install 'cosim[mpich]', or mpi4py built against the "
            "system's MPI), or run cosim without mpiexec (COSIM_MPI=0 forces a serial run)")
    comm = world()
    return comm, comm.rank


def _cmd_run(args: argparse.Namespace) -> int:
    from cosim.experiment import plan, prepare, serve_als

    warnings: list[str] = []
    t0 = time.perf_counter()
    runs = [prepare(o, warn=warnings.append) for o in plan(_run_options(args, args.workload))]
    read_s = time.perf_counter() - t0
    # the output directories are checked before anything is simulated (on every rank: the
    # same answer everywhere)
    outs = [_run_dir(run.opt, args.workload is not None) for run in runs]
    comm, rank = _world()
    if rank == 0:
        for w in warnings:
            _warn(w)
    if comm is not None and comm.size == 1:
        comm = None
    with contextlib.ExitStack() as held:
        # rank 0 holds them for the whole run (another live run asking gets a clear error),
        # and tells the other ranks whether it could before they wait for its rounds
        problem = None
        if rank == 0:
            try:
                for d in dict.fromkeys(out if args.workload else out.parent for out in outs):
                    held.enter_context(hold_dir(d))
            except InputError as exc:
                problem = exc
        if comm is not None and comm.bcast(problem is not None, root=0):
            raise problem if rank == 0 else InputError("rank 0 could not start the run")
        if problem is not None:
            raise problem
        if comm is not None and comm.rank != 0:
            from cosim.transport.mpi import StoppedByInterrupt

            try:
                for run in runs:
                    serve_als(run, comm, rank0_apps=args.rank0_apps)
            except StoppedByInterrupt:  # rank 0 was interrupted (this rank was not): no next run
                return 0
            return 0
        return _run_and_write(args, runs, outs, comm, read_s)


def _run_and_write(args: argparse.Namespace, runs: list, outs: list[Path], comm: Any,
                   read_s: float = 0.0) -> int:
    """Rank 0's part of ``cosim run``: simulate each run, write its files, print."""
    from cosim.experiment import execute, write_outputs
    from cosim.output.runfiles import write_summary

    records, tables = [], []
    # an earlier run's completion marker goes first: until this run writes its own, the
    # directories are visibly incomplete
    for out in outs:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            (out / "summary.json").unlink()
    say = _Say(args)
    say.step(f"read {sum(len(r.workload.jobs) for r in runs):,} jobs, checked the options",
             time.perf_counter() - read_s)
    for i, (run, out) in enumerate(zip(runs, outs)):
        if args.workload is None:
            say.line(f"simulating {Path(run.opt.workload).name} with {run.opt.technique}, "
                     f"RCA {run.opt.rca} ...")
        with say.progress(len(run.workload.jobs), out.name) as progress:
            t0 = time.perf_counter()
            record = execute(run, comm=comm, rank0_apps=args.rank0_apps, progress=progress)
        say.step(f"{out.name}: simulated {len(run.workload.jobs):,} jobs", t0)
        # one results.h5 per command: the main job's two runs go into the directory above them
        base = out if args.workload else out.parent
        t0 = time.perf_counter()
        tables.append(write_outputs(record, out, run_id=out.name, results=base / "results.h5",
                                    first=i == 0, argv=["cosim", *sys.argv[1:]],
                                    summary=False))
        say.step(f"{out.name}: wrote {out}", t0)
        records.append(record)
    if runs[0].opt.plots:
        from cosim.output.plots import write_plots

        t0 = time.perf_counter()
        pngs = write_plots(base, tables, workers=_plot_workers())
        say.step(f"drew {len(pngs)} plots", t0)
        for r in records:
            r.summary["plots"] = [str(p) for p in pngs]
    for r in records:  # last: a summary.json marks a complete run
        write_summary(Path(r.summary["out"]) / "summary.json", r.summary)
    summaries = [r.summary for r in records]
    if args.json:
        json.dump(summaries[0] if args.workload else summaries, sys.stdout)
        sys.stdout.write("\n")
    elif args.workload:
        _print_run(summaries[0])
    else:
        _print_comparison(summaries)
    return 0


#: At most this many processes draw a command's plots (`_plot_workers`)
PLOT_WORKERS = 4


def _plot_workers() -> int:
    """Processes that draw a command's plots (`write_plots`): one per usable processor, at
    most `PLOT_WORKERS`; one in a process that loaded MPI (an MPI rank does not fork: its
    library's state would be shared with the child)."""
    from cosim.core.workers import usable_cpus

    return 1 if "mpi4py.MPI" in sys.modules else min(PLOT_WORKERS, usable_cpus())


class _Say:
    """What ``cosim run`` tells on standard error besides warnings and errors: progress lines,
    a progress bar (when standard error is a terminal; ``--verbose``: always; ``--quiet``:
    never) and, with ``--verbose``, each step's wall time."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.quiet = getattr(args, "quiet", False)
        self.verbose = getattr(args, "verbose", False)
        self.bar = not self.quiet and (self.verbose or sys.stderr.isatty())

    def line(self, text: str) -> None:
        if not self.quiet:
            print(f"cosim: {text}", file=sys.stderr, flush=True)

    def step(self, text: str, since: float) -> None:
        if self.verbose:
            self.line(f"{text} in {time.perf_counter() - since:.2f} s")

    def progress(self, total: int, label: str) -> Any:
        if not self.bar:
            return contextlib.nullcontext()
        from cosim.output.progress import Progress

        return Progress(total, label, delay_s=0.0 if self.verbose else None)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from cosim.experiment import prepare, serve_als
    from cosim.sweep import SWEEP_TABLE, execute_run, finished, load_spec, run_sweep

    for field, value in (("jobs", args.jobs), ("ranks-per-run", args.ranks_per_run)):
        if value < 1:
            raise InputError(f"must be at least 1, got {value}", field=field)
    part = None
    if args.part is not None:
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", args.part)
        if m is None or not 1 <= int(m.group(1)) <= int(m.group(2)):
            raise InputError(f"expected I/N with 1 <= I <= N, got {args.part!r}", field="part")
        part = (int(m.group(1)), int(m.group(2)))
    runs = load_spec(args.spec)
    warnings: list[str] = []
    for r in runs:  # every input of every run now, before anything runs
        try:
            prepare(r.opt, warn=warnings.append)
        except InputError as exc:
            vary = " ".join(f"{k}={v}" for k, v in r.varying) or "the base run"
            raise InputError(f"run {r.id} ({vary}): {exc}", file=args.spec) from None
    for w in dict.fromkeys(warnings):
        _warn(w)
    out = Path(args.out) if args.out else Path("runs") / f"sweep-{Path(args.spec).stem}"
    if args.dry_run:
        for r in runs:
            state = "finished" if finished(out / "runs" / r.id, r.id) else "to run"
            vary = " ".join(f"{k}={v}" for k, v in r.varying) or "(the base run)"
            print(f"{r.id}  {state:<8}  {vary}")
        print(f"{len(runs)} runs; their files would go under {out}/runs/")
        return 0


    from cosim.output.progress import SweepProgress

    # a bar on a terminal; elsewhere a line per run with --verbose; nothing with --quiet
    progress = SweepProgress(bar=not args.quiet and not args.verbose and sys.stderr.isatty(),
                             lines=args.verbose)

    run = functools.partial(execute_run, argv=["cosim", *sys.argv[1:]],
                            rank0_apps=args.rank0_apps)
    # a part holds its own lock: the parts of a job array share the directory
    lock = out if part is None else out / "parts" / f"{part[0]}-of-{part[1]}"
    comm, rank = _world()
    if comm is not None and comm.size > 1:
        # under mpiexec: rank 0 hands the runs to groups of R ranks (mpi4py.futures), each
        # group simulating one run at a time
        from cosim.transport.sweep_ranks import layout_problem, sweep_on_ranks

        problem = layout_problem(comm.size, args.ranks_per_run)
        if problem is not None:
            raise InputError(problem, field="ranks-per-run")

        def on_ranks(executor: Any, run_there: Any) -> list[dict]:
            with hold_dir(lock):
                return run_sweep(runs, out, part=part, progress=progress,
                                 execute_run=run_there, executor=executor)

        mine = sweep_on_ranks(comm, args.ranks_per_run, on_ranks, run, prepare,
                              functools.partial(serve_als, rank0_apps=args.rank0_apps))
        if mine is None:
            return 0  # a rank of a group: it served until rank 0 was done
    elif args.ranks_per_run > 1:
        raise InputError(f"{args.ranks_per_run} ranks per run need mpiexec -n "
                         f"{1 + args.ranks_per_run} or more", field="ranks-per-run")
    else:
        with hold_dir(lock):
            mine = run_sweep(runs, out, jobs=args.jobs, part=part, progress=progress,
                             execute_run=run)
    share = "" if part is None else f" (part {part[0]}/{part[1]}: {len(mine)} of them)"
    print(f"sweep: {len(runs)} runs{share} finished; table {out / SWEEP_TABLE}, runs under "
          f"{out / 'runs'}/")
    return 0


def _run_dir(opt, one: bool) -> Path:
    """The directory of a run's files (``--out``, else the default), with a name that can
    name the run: ``--out .`` or ``a/..`` is the directory they resolve to."""
    from cosim.experiment import default_out, main_out
    from cosim.output.hdf5 import check_run_id

    out = Path(opt.out) if one and opt.out else (
        default_out(opt) if one else main_out(opt, opt.rca))
    if out.name in ("", ".", ".."):
        out = Path(os.path.abspath(out))
    try:
        check_run_id(out.name)
    except InputError as exc:
        raise InputError(f"{out} cannot hold a run: {exc}", field="out") from None
    return out


def _print_comparison(rows: list[dict]) -> None:
    a = rows[0]
    print(f"{Path(a['workload']).name} on {a['hosts']} hosts of {a['platform']}: "
          f"{a['priority'].upper()} + {a['batch'].upper()} backfilling, {a['technique']}")
    fields = [("makespan_s", "makespan [s]", "{:,.0f}"), ("utilization", "utilization",
              "{:.1%}"), ("mean_wait_s", "mean wait [s]", "{:,.0f}"),
              ("mean_slowdown", "mean slowdown", "{:,.2f}"),
              ("mean_bounded_slowdown", "mean bounded slowdown", "{:,.2f}"),
              ("yields", "hosts yielded", "{:,}"), ("lends", "hosts lent", "{:,}"),
              ("wall_s", "wall [s]", "{:.2f}")]
    head = f"{'':<24}" + "".join(f"{'RCA ' + r['rca']:>14}" for r in rows) + f"{'change':>10}"
    print(head)
    print("-" * len(head))
    for key, label, fmt in fields:
        vals = [r.get(key) for r in rows]
        cells = "".join(f"{fmt.format(v) if v is not None else '-':>14}" for v in vals)
        change = ""
        if key != "wall_s" and all(isinstance(v, (int, float)) for v in vals) and vals[0]:
            change = f"{(vals[1] - vals[0]) / vals[0]:+.1%}"
        print(f"{label:<24}{cells}{change:>10}")
    if any(r["rca"] == "full" for r in rows):
        cells = "".join(f"{_exclusions(r):>14}" for r in rows)
        print(f"{'hosts excluded (asked)':<24}{cells}")
    _print_outputs(rows)


def _print_outputs(rows: list[dict]) -> None:
    """Where a command's files are: results.h5 and plots, then each run's directory."""
    first = rows[0]
    print(f"results: {first['results']}  (cosim report {first['results']})")
    if first.get("plots"):
        print(f"plots:   {', '.join(first['plots'])}")
    for r in rows:
        files = "jobs.csv, batsim_jobs.csv, schedule.swf, summary.json"
        if r.get("trace"):
            t = r["trace"]
            files += f", trace/ ({t['level']}: {t['events']:,} events, {t['wall_s']:.1f} s)"
        print(f"run {r['run_id']}: {r['out']}/ ({files})")


def _exclusions(s: dict) -> str:
    """``hosts excluded (requests)`` of an RCA full run, '-' otherwise."""
    st = s.get("stats", {})
    if s.get("rca") != "full":
        return "-"
    return f"{st.get('hosts_excluded', 0):,} ({st.get('exclusion_requests', 0):,})"


def _print_run(s: dict) -> None:
    how = (f"{s['batch']} backfilling, {s['priority']} priority, {s['selection']} hosts"
           if s.get("malleable", "none") == "none" else
           f"malleable policy {s['malleable']} (it starts and resizes jobs itself), "
           f"{s['priority']} queue order")
    print(f"{s['workload']} on {s['hosts']} hosts of {s['platform']}: {how}")
    rows = [("jobs", f"{s['jobs']:,}"), ("makespan", f"{s['makespan_s']:,.1f} s"),
            ("utilization", f"{s['utilization']:.4f}"),
            ("mean wait", f"{s['mean_wait_s']:,.1f} s"),
            ("mean response", f"{s['mean_response_s']:,.1f} s"),
            ("mean slowdown", f"{s['mean_slowdown']:,.2f}"),
            ("mean bounded slowdown", f"{s['mean_bounded_slowdown']:,.2f}"),
            ("loss of capacity", f"{s['loss_of_capacity']:.4f}"),
            ("unfair jobs", f"{s['unfair_jobs']:,}"),
            *([("unfair jobs (replayed)", f"{s['unfair_jobs_replayed']:,}")]
              if "unfair_jobs_replayed" in s else []),
            *([("productivity", f"{s['productivity']:,.2f} ({s['normalized_productivity']:.1%}"
                f" of the value; {s['completion_rate']:.1%} of the jobs completed, "
                f"{s['dropped']:,} dropped)")] if "productivity" in s else []),
            *([("energy", f"{s['energy_j'] / 3.6e9:,.3f} MWh (mean {s['mean_power_w'] / 1e3:,.1f} "
                f"kW, peak {s['peak_power_w'] / 1e3:,.1f} of {s['power_cap_w'] / 1e3:,.1f} kW "
                f"capped, {s['power_strategy']}{', dynamic' if s['power_dynamic'] else ''}: "
                f"{s['power_changes']:,} changes)")] if "energy_j" in s else []),
            ("wall", f"{s['wall_s']:.2f} s ({s['jobs'] / max(s['wall_s'], 1e-9):,.0f} jobs/s)")]
    for k, v in rows:
        print(f"  {k:<22} {v}")
    if s.get("technique"):
        print(f"  {'technique, RCA':<22} {s['technique']}, {s['rca']} "
              f"({s.get('yields', 0):,} hosts yielded, {s.get('lends', 0):,} lent)")
    if s.get("rca") == "full":
        print(f"  {'exclusions':<22} {_exclusions(s)} hosts excluded (requests), "
              f"{s.get('execution', {}).get('rollbacks', 0):,} rollbacks")
    if s.get("malleable", "none") != "none" or s.get("shrinks") or s.get("expands"):
        print(f"  {'resizes':<22} {s.get('shrinks', 0):,} shrinks, {s.get('expands', 0):,} "
              f"expands ({s.get('resized_jobs', 0):,} jobs resized), PE utilization "
              f"{s.get('pe_utilization') or 0:.4f}")
        st = s.get("stats", {})
        if st.get("guest_starts"):
            n = st["guest_starts"]
            print(f"  {'malleable starts':<22} {n:,} guests; waited for their mates' PEs "
                  f"{st['release_wait_s'] / n:,.1f} s on average, {st['release_wait_max_s']:,.1f}"
                  " s at most")
    scattered = s.get("stats", {}).get("scattered_starts", 0)
    if scattered:
        print(f"  {'contiguous selection':<22} {scattered:,} jobs got scattered hosts: no free "
              "block was long enough (first-fit instead)")
    _print_outputs([s])


def _cmd_report(args: argparse.Namespace) -> int:
    from cosim.output.hdf5 import read_results
    from cosim.output.report import report_csv, report_groups, report_table, varying_config

    runs = [run for path in _results_files(args.results)
            for run in read_results(path, chunks=False)]
    by = [k for spec in args.group_by for k in spec.split(",") if k]
    if by:
        known = {k for r in runs for k in r.config}
        for k in by:
            if k not in known:
                raise InputError(f"no run has the configuration key {k!r} (known: "
                                 f"{', '.join(sorted(known))})", field="group-by")
        sys.stdout.write(report_groups(runs, by, as_csv=args.csv))
        return 0
    config = varying_config(runs)
    sys.stdout.write(report_csv(runs, config) if args.csv else report_table(runs, config))
    return 0


def _results_files(paths: Sequence[str]) -> list[Path]:
    """The results.h5 files named: a file as is; a directory's own results.h5, else those of
    the runs of a sweep in it (``runs/<id>/results.h5``, in its table's order)."""
    from cosim.sweep import SWEEP_TABLE

    out: list[Path] = []
    for text in paths:
        p = Path(text)
        if not p.is_dir():
            out.append(p)
        elif (p / "results.h5").exists():
            out.append(p / "results.h5")
        else:
            found = sorted((p / "runs").glob("*/results.h5"))
            order = {}
            if (p / SWEEP_TABLE).exists():
                lines = (p / SWEEP_TABLE).read_text().splitlines()[1:]
                order = {ln.split(",", 1)[0]: i for i, ln in enumerate(lines)}
            found.sort(key=lambda f: order.get(f.parent.name, len(order)))
            if not found:
                raise InputError("no results.h5 in it, nor runs/*/results.h5 of a sweep",
                                 file=p)
            out.extend(found)
    return out


def _cmd_plot(args: argparse.Namespace) -> int:
    from cosim.output.hdf5 import read_results
    from cosim.output.plots import write_plots

    files = _results_files(args.results)
    runs = [run for path in files for run in read_results(path, chunks=False)]
    out = Path(args.out) if args.out else files[0].parent if Path(args.results[0]).is_file() \
        else Path(args.results[0])
    if args.x or args.y or args.hue:
        if not (args.x and args.y):
            raise InputError("--x and --y go together (and --hue with them)", field="x")
        from cosim.output.compare_plot import plot_metric

        name = f"{args.y}-by-{args.x}" + (f"-by-{args.hue}" if args.hue else "") + ".png"
        print(plot_metric(out / name, runs, x=args.x, y=args.y, hue=args.hue))
        return 0
    for path in write_plots(out, runs, workers=_plot_workers()):
        print(path)
    return 0


def _cmd_workload_esp(args: argparse.Namespace) -> int:
    from cosim.config import parse_pairs
    from cosim.workload.esp import make_esp

    if args.seed < 0:
        raise InputError("the seed must be >= 0", field="seed")
    w = make_esp(app=args.app, out=args.out, seed=args.seed, hosts=args.hosts,
                 arrival=args.arrival, platform=args.platform,
                 walltime_factor=args.walltime_factor, exclusion_ok=args.exclusion_ok,
                 malleable=args.malleable, min_frac=args.min_frac, max_frac=args.max_frac,
                 span=args.span, gap=args.gap, calibrate_by=args.calibrate,
                 paper_scale=args.paper_scale,
                 app_params=parse_pairs(args.app_param, option="app-param"))
    print(f"wrote {args.out}: {len(w.jobs)} ESP-{args.app} jobs, T_min "
          f"{w.t_min / 1e9:,.1f} s, {w.initial_block} jobs at t=0 ({args.arrival} arrival)")
    return 0


def _cmd_workload_values(args: argparse.Namespace) -> int:
    from cosim.workload.value_gen import ValueSpec, parse_classes, run_generator

    spec = ValueSpec(classes=parse_classes(args.classes), soft=args.soft, hard=args.hard,
                     seed=args.seed)
    written = run_generator(args.trace, args.out, spec, args.arrival_scale, warn=_warn)
    for path in written.values():
        print(f"wrote {path}")
    return 0


def _print_table(rows: list[dict]) -> None:
    first = rows[0]
    print(f"{first['app']}: {first['n_tasks']:,} tasks on {first['n_hosts']} hosts "
          f"({first['n_pes']} PEs) of {first['platform']}; ideal {first['ideal_s']:.6g} s")
    head = (f"{'technique':<9} {'chunks':>9} {'makespan_s':>12} {'max_finish_s':>12} "
            f"{'mean_finish_s':>13} {'max/mean':>8} {'eff':>6} {'wall_s':>8}")
    print(head)
    print("-" * len(head))
    for r in rows:
        fin = r["finish_s"]
        print(f"{r['technique']:<9} {r['n_chunks']:>9,} {r['makespan_s']:>12.6g} "
              f"{max(fin):>12.6g} {sum(fin) / len(fin):>13.6g} {r['max_over_mean']:>8.3f} "
              f"{r['efficiency']:>6.3f} {r['wall_s']:>8.3f}")


def _rank() -> int:
    """This process's MPI rank (0 when serial or when MPI is not available)."""
    try:
        return _world()[1]
    except Exception:  # noqa: BLE001 - an error is being reported: never hide it behind MPI's
        from cosim.transport import launcher_rank

        return launcher_rank()


class _Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, ``scancel``, job limits) raised as an interrupt: the same clean
    path as Ctrl-C (temporary files removed, no summary written), exit 128 + 15."""

    signum = signal.SIGTERM

    @staticmethod
    def raise_for(signum: int, frame: object) -> None:
        raise _Terminated()


def _unraisable(info: Any) -> None:
    """`sys.unraisablehook`: a Ctrl-C (or SIGTERM) that Python raised inside a callback it
    cannot raise from (a weakref or finalizer run by the garbage collector) would be printed
    as "Exception ignored ... Traceback ... KeyboardInterrupt" and lost; the signal is marked
    pending again instead, so it takes its usual path. It is marked from another thread,
    `_REPEND_S` later (`_thread.interrupt_main`): marked here, its handler would run as soon
    as the mark returns — in the main thread that is still inside this hook, where the
    interrupt would be lost again. Anything else is printed as Python does."""
    if info.exc_type is not None and issubclass(info.exc_type, KeyboardInterrupt):
        import _thread

        later = threading.Timer(_REPEND_S, _thread.interrupt_main,
                                (getattr(info.exc_value, "signum", signal.SIGINT),))
        later.daemon = True
        later.start()
        return
    sys.__unraisablehook__(info)


#: How long after a lost interrupt `_unraisable` marks it pending again (the hook has
#: returned long before: it does nothing else)
_REPEND_S = 0.01


def _on_termination(handler: Any) -> Any:
    """Install `handler` for SIGTERM (in the main thread only); returns the one before."""
    if handler is None or threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, handler)


def _check_numbers(args: argparse.Namespace) -> None:
    """Every number option is finite (argparse's float() takes ``nan`` and ``inf``): the
    options' own checks then see real numbers."""
    for name, value in vars(args).items():
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"must be a finite number, got {value!r}",
                             field=name.replace("_", "-"))


def entry() -> int:
    """The ``cosim`` command (its console script and ``python -m cosim``): `main` on the
    process's arguments, then the heap frozen for the process's end
    (`cosim.core.collect.ending_process`); returns the exit status."""
    try:
        return main()
    finally:
        ending_process()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 for bad input). For use in a process that
    goes on after it (tests, scripts); the command itself is `entry`."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(listing=any(a in ("-h", "--help") for a in argv))
    args = parser.parse_args(argv)
    previous = _on_termination(_Terminated.raise_for)
    hook, sys.unraisablehook = sys.unraisablehook, _unraisable
    try:
        _check_numbers(args)
        with rare_collection():  # (cosim.core.collect)
            return args.handler(args)
    except InputError as exc:
        if _rank() == 0:  # every rank validates the same inputs; one prints
            print(f"cosim: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except OutputError as exc:
        print(f"cosim: error: {exc}", file=sys.stderr)
        return EXIT_OUTPUT
    except CosimError as exc:
        if _rank() == 0:
            print(f"cosim: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # an I/O failure no writer turned into an OutputError
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"cosim: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_OUTPUT
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (`_Terminated`)
        code = 128 + getattr(exc, "signum", signal.SIGINT)
        if _rank() == 0:  # under mpiexec every rank gets the signal; one says so
            print("cosim: interrupted", file=sys.stderr)
        return code
    finally:
        _on_termination(previous)
        sys.unraisablehook = hook
