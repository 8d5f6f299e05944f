"""The ``cosim`` command line: argument parsing, input validation and user-facing errors.

Sub-commands: ``app`` simulates one application's loop under one or several DLS techniques
and prints a summary (a table, or JSON with ``--json``). The CLI parses and validates every
input before simulating; any `InputError` is printed as one line ``cosim: error: ...`` on
stderr with exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from cosim.errors import EXIT_INPUT, InputError

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    parser = argparse.ArgumentParser(
        prog="cosim",
        description="Multilevel co-simulator of HPC batch and loop self-scheduling.",
    )
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 for bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except InputError as exc:
        print(f"cosim: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("cosim: interrupted", file=sys.stderr)
        return 130
