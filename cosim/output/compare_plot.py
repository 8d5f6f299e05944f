"""A metric against a configuration key over many runs (``cosim plot RUNS --x KEY --y METRIC
[--hue KEY]``): the figure of a parameter study.

Runs are grouped by (hue value, x value); each group is one point at the mean of the metric
with an error bar of one sample standard deviation (the runs that differ in nothing else —
seeds, typically); one line per hue value, in first-seen order. Numeric x values are placed
on a numeric axis, others as categories in first-seen order.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from cosim.errors import InputError
from cosim.experiment import option_text
from cosim.output.plots import save_png
from cosim.output.report import mean_sd
from cosim.output.tables import RunTables

__all__ = ["plot_metric", "metric_points"]


def _key_value(run: RunTables, key: str):
    return option_text(run.config.get(key))


def metric_points(runs: Sequence[RunTables], *, x: str, y: str, hue: str | None = None
                  ) -> tuple[list, dict]:
    """``(x values in first-seen order, {hue value: [(x value, mean, sd, n), ...]})``: metric
    `y` of `runs` grouped by (`hue`, `x`) — what `plot_metric` draws; `InputError` naming
    the option for a key no run has, or a metric that is not a number in every run."""
    if not runs:
        raise InputError("no run to plot", field="results")
    for key, option in ((x, "x"), (hue, "hue")):
        if key is not None and not any(key in r.config for r in runs):
            known = sorted({k for r in runs for k in r.config})
            raise InputError(f"no run has the configuration key {key!r} (known: "
                             f"{', '.join(known)})", field=option)
    groups: dict[tuple, list[float]] = {}
    for r in runs:
        v = r.metrics.get(y)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            known = sorted(k for k, m in r.metrics.items()
                           if isinstance(m, (int, float)) and not isinstance(m, bool))
            raise InputError(f"run {r.run_id} has no numeric metric {y!r} (numeric: "
                             f"{', '.join(known)})", field="y")
        h = _key_value(r, hue) if hue else None
        groups.setdefault((repr(h), repr(_key_value(r, x))), []).append(float(v))
    xs = list(dict.fromkeys(_key_value(r, x) for r in runs))
    hues = list(dict.fromkeys(_key_value(r, hue) if hue else None for r in runs))
    lines: dict = {}
    for hv in hues:
        points = []
        for xv in xs:
            vs = groups.get((repr(hv), repr(xv)))
            if vs:
                points.append((xv, *mean_sd(vs), len(vs)))
        lines[hv] = points
    return xs, lines


def plot_metric(path: str | os.PathLike[str], runs: Sequence[RunTables], *, x: str, y: str,
                hue: str | None = None) -> Path:
    """Write the PNG of metric `y` against configuration key `x` (one line per `hue` value;
    `metric_points`) to `path`, atomically."""
    xs, lines = metric_points(runs, x=x, y=y, hue=hue)
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xs)
    position = {repr(v): (float(v) if numeric else i) for i, v in enumerate(xs)}
    fig = Figure(figsize=(7.0, 4.5))
    ax = fig.add_subplot()
    for hv, points in lines.items():
        points = sorted(points, key=lambda p: position[repr(p[0])])
        ax.errorbar([position[repr(p[0])] for p in points], [p[1] for p in points],
                    yerr=[p[2] for p in points], marker="o", capsize=3,
                    label=f"{hue} = {hv}" if hue else None)
    if not numeric:
        ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    n = max(p[3] for points in lines.values() for p in points)
    ax.set_title(f"{y} against {x}" + (f" by {hue}" if hue else "")
                 + (f" (mean ± sd over up to {n} runs)" if n > 1 else ""))
    if hue:
        ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_png(fig, path)
