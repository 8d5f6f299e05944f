"""PNG plots of finished runs: utilization over time, a hosts x time Gantt chart, load imbalance.

The plots read only `RunTables` (as the HDF5 and OTF2 writers do), after the figures of the
RCA study (Eleliemy & Ciorba, "A resourceful coordination approach for multilevel
scheduling"): `plot_utilization` draws the busy hosts in % of the machine over time for one or
several runs on the same axes (RCA off vs on), with the queued jobs below; `plot_gantt` draws
one bar per row of the allocation log across its hosts' lanes, coloured by job category
(shades alternate between the jobs of a category), yielded idle tails lighter and hatched,
borrowed hosts outlined, malleable guests dashed, shrinks and expands marked where rows end
and start (one rectangle per row, so 5,040 hosts stay cheap to draw); `plot_imbalance` draws
max/mean of the per-PE finish times of every app-driven job. `write_plots` writes the standard
set of a command. Figures are `matplotlib.figure.Figure` objects drawn by the Agg canvas, never
through pyplot, so no global state changes and nothing is left open between calls; each PNG is
written atomically (`atomic_open`). Runs with nothing to show (no job ran, no app-driven job)
give a valid plot saying so, not an error, so ``--plots`` never fails after a run succeeded;
only bad arguments (no run, wrong number of labels, unknown order) raise `InputError`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgba_array
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, PathPatch
from matplotlib.path import Path as MplPath
from matplotlib.ticker import MaxNLocator

from cosim.core.clock import TICKS_PER_SECOND
from cosim.core.files import atomic_open
from cosim.core.workers import forked_map
from cosim.errors import InputError
from cosim.output.tables import ROLES, RunTables, step_series

__all__ = ["plot_gantt", "plot_imbalance", "plot_utilization", "plot_distributions",
           "write_plots", "save_png", "plot_power"]

PathLike = str | os.PathLike[str]

_DPI = 110
_RUN_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
                "tab:pink", "tab:gray", "tab:olive", "tab:cyan")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
_CONFIG_KEYS = ("workload", "platform", "batch", "malleable", "technique", "rca")
_MARK_MIN_PX = 8  # resize marks only on bars at least this wide
_MAX_MARKS = 1500  # more resize marks than this would hide the bars: none are drawn


# -- shared helpers -----------------------------------------------------------------------

def _check_runs(runs: Sequence[RunTables], labels: Sequence[str] | None) -> list[str]:
    if isinstance(runs, RunTables):  # a lone run is an easy slip; the message says what to pass
        raise InputError("pass a sequence of runs, e.g. [tables]")
    if not runs:
        raise InputError("no run to plot")
    if labels is None:
        return [r.run_id for r in runs]
    if len(labels) != len(runs):
        raise InputError(f"{len(labels)} labels for {len(runs)} runs", field="labels")
    return [str(x) for x in labels]


def _time_unit(span_s: float) -> tuple[float, str]:
    """Seconds per axis unit and its symbol: the axis of a run of hours reads in hours."""
    if span_s >= 4 * 86400:
        return 86400.0, "d"
    if span_s >= 2 * 3600:
        return 3600.0, "h"
    if span_s >= 10 * 60:
        return 60.0, "min"
    return 1.0, "s"


def _fmt_duration(s: float) -> str:
    unit, sym = _time_unit(s)
    return f"{s / unit:.3g} {sym}" if sym == "s" else f"{s / unit:.2f} {sym}"


def _origin(runs: Sequence[RunTables]) -> int:
    """The first submission of a job that ran, over all runs: time 0 of the axes, where the
    makespan starts (rejected jobs count in no metric)."""
    firsts = [int(r.jobs["submit"][r.jobs["start"] >= 0].min()) for r in runs
              if (r.jobs["start"] >= 0).any()]
    return min(firsts) if firsts else 0


def _span_ticks(runs: Sequence[RunTables], origin: int) -> int:
    return max([r.horizon - origin for r in runs] + [0])


def _common_config(runs: Sequence[RunTables]) -> str:
    """The config keys all runs share, as one line (the keys that differ are in the labels)."""
    parts = []
    malleable = {str(r.config.get("malleable", "none")) for r in runs} != {"none"}
    for key in _CONFIG_KEYS:
        values = {str(r.config.get(key)) for r in runs}
        if key == "batch" and malleable:
            continue  # a malleable policy replaces the backfilling
        if len(values) == 1 and None not in (r.config.get(key) for r in runs) \
                and values != {"none"}:
            (v,) = values
            parts.append(f"{'RCA' if key == 'rca' else key} {Path(v).name.split('.')[0]}")
    return ", ".join(parts)


def _metric(m: Mapping[str, Any], key: str) -> float | None:
    v = m.get(key)
    return float(v) if isinstance(v, int | float | np.number) else None


def _utilization(r: RunTables) -> float:
    """Eq. 1 utilization: the summary's value, else recomputed from the allocation log: the
    integral of the busy hosts (`step_series`) over hosts x [first start, last end]."""
    u = _metric(r.metrics, "utilization")
    if u is not None:
        return u
    j = r.jobs
    ran = j[j["start"] >= 0]
    if not len(ran):
        return 0.0
    span = int(ran["end"].max() - ran["start"].min())
    times, busy = step_series(r)["busy_hosts"]
    area = sum(map(int.__mul__, busy[:-1].tolist(), np.diff(times).tolist()))
    return area / (r.n_hosts * span) if span > 0 else 0.0


def _makespan_s(r: RunTables) -> float:
    m = _metric(r.metrics, "makespan_s")
    if m is not None:
        return m
    j = r.jobs
    ran = j[j["start"] >= 0]
    if not len(ran):
        return 0.0
    return float(ran["end"].max() - ran["submit"].min()) / TICKS_PER_SECOND


def _no_data(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=12,
            color="0.35", bbox={"boxstyle": "round", "fc": "0.95", "ec": "0.7"})


def save_png(fig: Figure, path: PathLike) -> Path:
    """Render with Agg into a temporary file beside `path`, then rename it into place."""
    FigureCanvasAgg(fig)
    target = Path(path)
    with atomic_open(target, "wb") as fh:
        fig.savefig(fh, format="png", dpi=_DPI)
    return target


def _stairs(ax: Any, values: np.ndarray, edges: np.ndarray, **style: Any) -> Any:
    """``ax.stairs(values, edges, baseline=0, **style)``, the data limits taken from the
    steps' bounding box: `Axes.add_patch` walks a patch's path segment by segment in Python
    for them (0.1 s for a step line of a few ten thousand steps), and the box of a step
    line from the baseline is that of its edges and values."""
    values, edges = np.asarray(values, dtype=float), np.asarray(edges, dtype=float)
    if not (np.isfinite(values).all() and np.isfinite(edges).all()):
        return ax.stairs(values, edges, baseline=0, **style)  # (NaN gaps: matplotlib's box)
    patch = ax.stairs(values[:1], edges[:2], baseline=0, **style)
    patch.set_data(values, edges)
    ax.update_datalim([(edges[0], min(0.0, values.min())), (edges[-1], max(0.0, values.max()))])
    ax.autoscale_view()
    return patch


# -- utilization --------------------------------------------------------------------------

def plot_utilization(path: PathLike, runs: Sequence[RunTables], *,
                     labels: Sequence[str] | None = None, queued: bool = True) -> Path:
    """System utilization over time of one or several runs on the same axes (RCA off vs on).

    Parameters
    ----------
    path:
        The PNG to write (atomically).
    runs:
        The runs; their time axes start at the first submission of a job that ran in any.
    labels:
        One legend label per run (default: the run ids). The legend adds each run's Eq. 1
        utilization (``metrics["utilization"]``, else recomputed) and makespan.
    queued:
        Draw the number of queued jobs over time in a lower panel.

    Returns
    -------
    The path written. Upper panel: busy hosts (a host is busy for its job from the job's
    start until the job ends or the host is yielded, `step_series`) in % of the machine, a
    step line per run, and a dashed line at the run's overall utilization over its window
    [first start, last end].
    """
    names = _check_runs(runs, labels)
    origin = _origin(runs)
    unit, sym = _time_unit(_span_ticks(runs, origin) / TICKS_PER_SECOND)
    scale = TICKS_PER_SECOND * unit

    fig = Figure(figsize=(11, 6.2 if queued else 4.6), layout="constrained")
    if queued:
        ax, axq = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    else:
        ax, axq = fig.subplots(1, 1), None
    anything = False
    span = _span_ticks(runs, origin)
    # long runs: means per hour or day (a step per event would be a solid wall of ink)
    width = _bin_ticks(span)
    edges = origin + np.arange(0, span + width, width, dtype=np.int64) if width else None
    for i, (r, name) in enumerate(zip(runs, names, strict=True)):
        colour = _RUN_COLOURS[i % len(_RUN_COLOURS)]
        series = step_series(r)
        times, busy = series["busy_hosts"]
        u = _utilization(r)
        label = f"{name}: U = {100 * u:.1f} %, makespan {_fmt_duration(_makespan_s(r))}"
        if len(times) < 2:
            ax.plot([], [], color=colour, label=f"{name}: no job ran")
            continue
        anything = True
        if edges is not None:
            x, busy = (edges - origin) / scale, _binned_mean(times, busy, edges)
            label += f" (mean per {_BIN_NAMES[width]})"
        else:
            x, busy = (times - origin) / scale, busy[:-1]
        # Several runs overlap: thin lines keep the one drawn first visible under the next.
        _stairs(ax, 100.0 * busy / r.n_hosts, x, color=colour, lw=0.8, alpha=0.9,
                label=label)
        ran = r.jobs[r.jobs["start"] >= 0]
        ax.hlines(100.0 * u, (ran["start"].min() - origin) / scale,
                  (ran["end"].max() - origin) / scale, colors=colour, linestyles="--", lw=1.4)
        if axq is not None:
            qt, qn = series["queued"]
            if len(qt) >= 2 and edges is not None:
                _stairs(axq, _binned_mean(qt, qn, edges), x, color=colour, lw=0.8,
                        alpha=0.9)
            elif len(qt) >= 2:
                _stairs(axq, qn[:-1], (qt - origin) / scale, color=colour, lw=0.8,
                        alpha=0.9)
    if anything:
        ax.set_xlim(left=0)
    else:
        _no_data(ax, "no job ran: nothing to plot")
        ax.set_xlim(0, 1)
    ax.set_ylim(0, 105)
    ax.set_ylabel("busy hosts [% of the machine]")
    ax.grid(True, alpha=0.3)
    handles, texts = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="0.3", ls="--", lw=1.4))
    texts.append("overall utilization U (Eq. 1) over [first start, last end]")
    # Below the figure: busy-host curves fill the whole axes, a legend inside would hide them.
    fig.legend(handles, texts, loc="outside lower center", ncols=min(len(texts), 2),
               fontsize=9, frameon=False)
    last = ax
    if axq is not None:
        axq.set_ylabel("queued jobs" + (" (mean)" if edges is not None else ""))
        axq.set_ylim(bottom=0)
        axq.grid(True, alpha=0.3)
        last = axq
    last.set_xlabel(f"time since the first submission [{sym}]")
    n_hosts = sorted({r.n_hosts for r in runs})
    fig.suptitle("System utilization over time", fontsize=13)
    ax.set_title(", ".join(filter(None, [_common_config(runs),
                                         f"{'/'.join(map(str, n_hosts))} hosts"])),
                 fontsize=10, color="0.3")
    return save_png(fig, path)


_HOUR, _DAY = 3600 * TICKS_PER_SECOND, 86400 * TICKS_PER_SECOND
_BIN_NAMES = {_HOUR: "hour", _DAY: "day"}


def _bin_ticks(span: int) -> int:
    """The bin of a utilization plot over `span` ticks: 0 (every step drawn) up to 2 days, an
    hour up to 60 days, else a day."""
    if span <= 2 * _DAY:
        return 0
    return _HOUR if span <= 60 * _DAY else _DAY


def _binned_mean(times: np.ndarray, values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The time-weighted mean of a step function over each bin ``[edges[k], edges[k+1])``:
    ``values[i]`` holds on ``[times[i], times[i+1])`` (0 before ``times[0]``, the last value
    after the last time)."""
    t = times.astype(np.int64)
    v = values.astype(np.float64)
    area = np.concatenate(([0.0], np.cumsum(v[:-1] * np.diff(t))))  # at each time

    def at(x: np.ndarray) -> np.ndarray:
        k = np.searchsorted(t, x, side="right") - 1
        inside = k >= 0
        kk = np.maximum(k, 0)
        return np.where(inside, area[kk] + v[kk] * (x - t[kk]), 0.0)

    total = at(edges)
    return np.diff(total) / np.diff(edges)


# -- Gantt chart --------------------------------------------------------------------------

def _category_colours(cats: np.ndarray) -> tuple[np.ndarray, list[tuple[str, Any]]] | None:
    """Per-job RGBA by category, shades alternating between the jobs of one category (so
    neighbouring jobs of a category stay apart), and the legend; None when categories say
    nothing (a single one, or too many for distinct hues)."""
    uniq = list(dict.fromkeys(sorted(cats.tolist())))
    if not 2 <= len(uniq) <= 20:
        return None
    # tab20 gives 10 hues in (dark, light) pairs; tab20b gives 5 more hue groups of 4 shades,
    # tab20c 5 more: up to 20 categories with two shades each.
    t20, t20b, t20c = (np.asarray(colormaps[n].colors) for n in ("tab20", "tab20b", "tab20c"))
    pairs = [t20[2 * k: 2 * k + 2] for k in range(10)]
    pairs += [t20b[[4 * k, 4 * k + 2]] for k in range(5)]
    pairs += [t20c[[4 * k, 4 * k + 1]] for k in range(5)]
    index = {c: k for k, c in enumerate(uniq)}
    cat_idx = np.array([index[c] for c in cats.tolist()], dtype=np.int64)
    shade = np.zeros(len(cats), dtype=np.int64)
    for k in range(len(uniq)):  # jobs are in id order: alternate shades along it
        where = np.flatnonzero(cat_idx == k)
        shade[where] = np.arange(len(where)) % 2
    rgb = np.array([pairs[c][s] for c, s in zip(cat_idx, shade, strict=True)]).reshape(-1, 3)
    rgba = np.c_[rgb, np.ones(len(rgb))]
    legend = [(c.decode(errors="replace") or "(none)", pairs[k][0]) for c, k in index.items()]
    return rgba, legend


def _job_colours(jobs: np.ndarray) -> tuple[np.ndarray, list[tuple[str, Any]], str]:
    by_cat = _category_colours(jobs["category"])
    if by_cat is not None:
        return (*by_cat, "category")
    palette = to_rgba_array(colormaps["tab20"].colors)
    return palette[np.arange(len(jobs)) % len(palette)], [], "job"


def _rects(y0: np.ndarray, y1: np.ndarray, x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    """Vertices (n, 4, 2) of the axis-aligned rectangles [x0, x1] x [y0, y1]."""
    return np.stack([np.c_[x0, y0], np.c_[x0, y1], np.c_[x1, y1], np.c_[x1, y0]], axis=1)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class _Bars:
    """The rectangles of a Gantt chart, one per allocation row (or per host of a row when
    lanes are drawn apart): the row each comes from, its job, and its extent in axis units
    (y: host lanes, x: time)."""

    row: np.ndarray
    job: np.ndarray
    y0: np.ndarray
    y1: np.ndarray
    x0: np.ndarray
    x1: np.ndarray

    def take(self, mask: np.ndarray) -> _Bars:
        return _Bars(row=self.row[mask], job=self.job[mask], y0=self.y0[mask],
                     y1=self.y1[mask], x0=self.x0[mask], x1=self.x1[mask])

    def rects(self) -> np.ndarray:
        return _rects(self.y0, self.y1, self.x0, self.x1)


def _bars(a: np.ndarray, cores: np.ndarray, half: float, apart: bool, pe_lanes: bool,
          origin: int, scale: float) -> _Bars:
    """The rectangles of the allocation rows `a` (see `plot_gantt`). A row is one rectangle
    over its hosts' lanes, or one per host when lanes have gaps between them (`apart`) or
    when a PE-level row holds part of each host's cores; with `pe_lanes`, a row covers the
    share of each lane of its cores (core .. core + pes - 1 of the host's, ``cores[host]``;
    PE-level rows are on equal hosts, so a row's first host stands for all)."""
    n = a["hosts"].astype(np.int64)
    split = np.full(len(a), apart) | (pe_lanes & (a["pes"] < cores[a["host"]]) & (n > 1))
    reps = np.where(split, n, 1)
    row = np.repeat(np.arange(len(a)), reps)
    offset = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
    first = a["host"][row].astype(np.float64) + offset
    last = np.where(split[row], first, a["host"][row] + n[row] - 1.0)
    if pe_lanes:
        k = cores[a["host"][row]]
        lo = a["core"][row] / k
        hi = (a["core"][row] + a["pes"][row]) / k
    else:
        lo, hi = np.zeros(len(row)), np.ones(len(row))
    return _Bars(row=row, job=a["job"][row],
                 y0=first - half + 2 * half * lo, y1=last - half + 2 * half * hi,
                 x0=(a["start"][row] - origin) / scale, x1=(a["end"][row] - origin) / scale)


def _blocks(b: _Bars) -> _Bars:
    """Rectangles of one job over the same interval that touch in y, merged (in job order):
    what an outline or a label goes around."""
    if not len(b.job):
        return b
    order = np.lexsort((b.y0, b.x1, b.x0, b.job))
    s = b.take(order)
    same = ((s.job[1:] == s.job[:-1]) & (s.x0[1:] == s.x0[:-1]) & (s.x1[1:] == s.x1[:-1])
            & (np.abs(s.y0[1:] - s.y1[:-1]) < 1e-9))
    starts = np.r_[0, np.flatnonzero(~same) + 1]
    ends = np.r_[starts[1:], len(s.job)] - 1
    return _Bars(row=s.row[starts], job=s.job[starts], y0=s.y0[starts], y1=s.y1[ends],
                 x0=s.x0[starts], x1=s.x1[starts])


def _resize_marks(t: RunTables, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masks over the allocation rows `a`: busy rows of resized jobs whose end is a shrink
    (the job's PEs decrease then) and whose start is an expand (they increase then). Rows a
    job closes and reopens at one tick on the same PEs change nothing and are not marked."""
    n = len(a)
    shrink = np.zeros(n, dtype=bool)
    expand = np.zeros(n, dtype=bool)
    j = t.jobs
    resized = j["id"][(j["start"] >= 0) & ((j["shrinks"] > 0) | (j["expands"] > 0))]
    if not len(resized) or not n:
        return shrink, expand
    mine = np.flatnonzero(np.isin(a["job"], resized) & (a["role"] != ROLES.index("yielded")))
    rows = a[mine]
    m = len(rows)
    # the net change of each job's PEs at each tick where some row of it starts or ends
    keys = np.zeros(2 * m, dtype=[("job", "<i8"), ("tick", "<i8")])
    keys["job"] = np.concatenate([rows["job"], rows["job"]])
    keys["tick"] = np.concatenate([rows["start"], rows["end"]])
    w = rows["hosts"].astype(np.int64) * rows["pes"]
    _, inv = np.unique(keys, return_inverse=True)
    delta = np.zeros(int(inv.max()) + 1, dtype=np.int64)
    np.add.at(delta, inv, np.concatenate([w, -w]))
    pos = np.searchsorted(j["id"], rows["job"])
    shrink[mine] = (delta[inv[m:]] < 0) & (rows["end"] < j["end"][pos])
    expand[mine] = (delta[inv[:m]] > 0) & (rows["start"] > j["start"][pos])
    return shrink, expand


def _gantt_figure(tables: RunTables) -> Figure:
    """The figure of `plot_gantt`. Its artists carry ids (``gid``) naming what they draw:
    ``busy``, ``yielded``, ``yielded-hatch``, ``outline``, ``borrowed``, ``guest``,
    ``shrink`` and ``expand``."""
    t = tables
    a = t.allocations
    n_hosts = max(t.n_hosts, 1)
    cores = np.maximum(t.host_cores, 1)
    origin = _origin([t])
    unit, sym = _time_unit(max(t.horizon - origin, 0) / TICKS_PER_SECOND)
    scale = TICKS_PER_SECOND * unit

    # Fixed margins in inches, so the size of a lane and of a time unit in pixels is known
    # before drawing (it decides where job ids fit).
    left, right, top, bottom = 0.85, 2.1, 0.75, 0.6
    width = 13.0
    plot_h = float(np.clip(0.42 * n_hosts, 2.4, 9.5))
    height = plot_h + top + bottom
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((left / width, bottom / height, (width - left - right) / width,
                       plot_h / height))
    lane_px = plot_h * _DPI / n_hosts
    tall = lane_px >= 8
    half = 0.43 if tall else 0.5  # gaps between lanes only where they can be seen
    # PE-level allocations (a job on part of a host next to another job): each row gets the
    # share of its hosts' lanes of its cores; whole-host runs keep whole lanes
    pe_lanes = bool((a["core"] > 0).any())

    colours, cat_legend, colour_by = _job_colours(t.jobs)
    bars = _bars(a, cores, half, tall, pe_lanes, origin, scale)
    face = colours[np.searchsorted(t.jobs["id"], bars.job)] if len(bars.job) \
        else np.zeros((0, 4))
    role = a["role"][bars.row]
    yielded = role == ROLES.index("yielded")
    seam = 0.8 if tall else 0.0

    tails = bars.take(yielded)
    light = face[yielded].copy()
    light[:, :3] = 1.0 - 0.45 * (1.0 - light[:, :3])
    tail_rects = tails.rects()
    ax.add_collection(PolyCollection(tail_rects, facecolors=light, edgecolors="white",
                                     linewidths=seam, zorder=1, gid="yielded"))
    if len(tail_rects):
        # One compound path for the hatch: Agg hatches it in one pass, where hatching each
        # of thousands of polygons takes seconds.
        hatch = PathPatch(MplPath.make_compound_path_from_polys(tail_rects), fill=False,
                          lw=0, hatch="////" if tall else "//////", zorder=1.5,
                          edgecolor=(0.0, 0.0, 0.0, 0.22), gid="yielded-hatch")
        # as an artist, not a patch: add_patch would walk the path's 4 segments per
        # rectangle for the data limits (0.3 s for 19,000 tails), which are set below
        ax.add_artist(hatch)
    busy = bars.take(~yielded)
    ax.add_collection(PolyCollection(busy.rects(), facecolors=face[~yielded],
                                     edgecolors="white", linewidths=seam, zorder=2, gid="busy"))
    # an empty or instantaneous run still gets a non-degenerate axis
    span_units = (t.horizon - origin) / scale if len(a) and t.horizon > origin else 1.0
    px_per_unit = (width - left - right) * _DPI / (span_units * 1.02)
    if not tall and len(bars.job):
        # only around blocks a few pixels wide: on thinner ones the outline would erase them
        blk = _blocks(bars)
        wide = (blk.x1 - blk.x0) * px_per_unit >= 4
        ax.add_collection(PolyCollection(blk.take(wide).rects(), facecolors="none",
                                         edgecolors="white", linewidths=0.5, zorder=2.5,
                                         gid="outline"))
    inset = 0.04 if tall else 0.0  # keep an outline inside its lanes
    lent = role == ROLES.index("borrowed")
    guest = role == ROLES.index("guest")
    for mask, style, gid in ((lent, "solid", "borrowed"), (guest, (0, (3, 2)), "guest")):
        if mask.any():
            blk = _blocks(bars.take(mask))
            ax.add_collection(PolyCollection(
                _rects(blk.y0 + inset, blk.y1 - inset, blk.x0, blk.x1), facecolors="none",
                edgecolors="black", linewidths=1.2 if tall else 0.6, linestyles=style,
                zorder=3, gid=gid))

    # marks on the rectangles of the rows whose end is a shrink or whose start an expand,
    # where the bar is wide enough to be seen and the marks do not cover the chart
    shrink, expand = _resize_marks(t, a)
    seen = (bars.x1 - bars.x0) * px_per_unit >= _MARK_MIN_PX
    todo = [(shrink[bars.row] & seen, "v", "shrink", bars.x1),
            (expand[bars.row] & seen, "^", "expand", bars.x0)]
    n_marks = sum(int(m.sum()) for m, *_ in todo)
    too_many = n_marks > _MAX_MARKS
    marks = []
    for mask, marker, gid, x in todo if not too_many else ():
        if not mask.any():
            continue
        ax.scatter(x[mask], (bars.y0[mask] + bars.y1[mask]) / 2, marker=marker,
                   s=16 if tall else 8, c="black", linewidths=0, zorder=4, gid=gid)
        marks.append((marker, gid))

    _label_jobs(ax, busy, lane_px, px_per_unit)

    bounds = np.flatnonzero(np.diff(t.racks[:n_hosts])) + 0.5
    if plot_h * _DPI / (len(bounds) + 1) >= 6:  # more rack lines than that would stripe it
        for b in bounds:
            ax.axhline(b, color="0.55", lw=0.6, zorder=0.5)
    ax.set_xlim(0, span_units * 1.02)
    ax.set_ylim(n_hosts - 0.5, -0.5)  # host 0 on top, as in a listing
    if n_hosts <= 32:
        ax.set_yticks(range(n_hosts), [t.host_names[h] if h < len(t.host_names) else str(h)
                                       for h in range(n_hosts)], fontsize=8)
        ax.set_ylabel("host" + (" (lanes split by core)" if pe_lanes else ""))
    else:
        step = 16 if n_hosts <= 512 else int(np.ceil(n_hosts / 32 / 16) * 16)
        ax.set_yticks(range(0, n_hosts, step))
        ax.set_ylabel("host index" + (" (lanes split by core)" if pe_lanes else ""))
    ax.set_xlabel(f"time since the first submission [{sym}]")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    if not len(a):
        _no_data(ax, "no job ran: nothing to plot")

    # legend entries for what is drawn (a run without RCA has no tails, no borrowed hosts)
    handles: list[Any] = [Patch(fc="0.45", ec="white", label="busy (computing)")]
    if yielded.any():
        handles.append(Patch(fc="0.8", ec="white", hatch="////",
                             label="yielded tail\n(idle, lendable)"))
    if lent.any():
        handles.append(Patch(fc="none", ec="black", lw=1.2,
                             label="on borrowed hosts\n(owner ≠ job)"))
    if guest.any():
        handles.append(Patch(fc="none", ec="black", lw=1.2, ls=(0, (3, 2)),
                             label="guest on another\njob's PEs"))
    for marker, gid in marks:
        handles.append(Line2D([], [], ls="none", marker=marker, color="black", ms=5,
                              label="shrink (PEs released)" if gid == "shrink"
                              else "expand (PEs added)"))
    if too_many:
        handles.append(Patch(fc="none", ec="none",
                             label=f"{int(shrink.sum() + expand.sum())} resized rows:\n"
                                   "too many to mark"))
    leg = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                    fontsize=8, title="bar", title_fontsize=9, frameon=False)
    # Only the categories of jobs that ran: the colours are fixed over all jobs, the legend
    # names what is drawn.
    drawn = {c.decode(errors="replace") or "(none)"
             for c in t.jobs["category"][t.jobs["start"] >= 0].tolist()}
    cat_legend = [(name, c) for name, c in cat_legend if name in drawn]
    if cat_legend:
        ax.add_artist(leg)  # a second legend would replace the first otherwise
        ax.legend(handles=[Patch(fc=c, label=name) for name, c in cat_legend],
                  loc="lower left", bbox_to_anchor=(1.01, 0.0), fontsize=8, frameon=False,
                  title="job category", title_fontsize=9,
                  ncols=2 if len(cat_legend) > 6 else 1)
    ran = int((t.jobs["start"] >= 0).sum())
    extra = [f"{int((a['role'] == ROLES.index('borrowed')).sum())} on borrowed hosts"]
    if guest.any():
        extra.append(f"{int((a['role'] == ROLES.index('guest')).sum())} guest")
    resized = int(((t.jobs["shrinks"] > 0) | (t.jobs["expands"] > 0)).sum())
    if resized:
        extra.append(f"{resized} jobs resized")
    fig.suptitle(f"Gantt chart of {t.run_id}: {n_hosts} hosts, {ran} jobs ran, "
                 f"{len(a)} allocation rows ({', '.join(extra)})", fontsize=12,
                 x=left / width, ha="left", y=1 - 0.12 / height, va="top")
    sub = _common_config([t])
    fig.text(left / width, 1 - 0.42 / height,
             f"{sub}; colour by {colour_by}" if sub else f"colour by {colour_by}",
             fontsize=9, color="0.3", va="top")
    return fig


def plot_gantt(path: PathLike, tables: RunTables) -> Path:
    """Gantt chart of one run: hosts x time, one bar per allocation row.

    Each row of the allocation log is a bar over its interval across the lanes of its hosts
    (one rectangle for a run of hosts: a 5,040-host chart draws thousands of rectangles, not
    millions), coloured by job category with alternating shades between the jobs of a
    category (by job, cycling a qualitative palette, when there are no categories or more
    than 20). Busy rows are solid; ``yielded`` rows (the idle tail of a host its job
    reported out of work: it can be lent under RCA) are lighter and hatched. Rows on
    borrowed hosts (RCA) are outlined in black, a malleable guest's rows on another job's
    PEs in dashed black, one outline per block of neighbouring hosts. When some job holds
    part of a host next to another (PE-level allocations), each row takes the share of its
    hosts' lanes of its cores. A resize shows as rows ending (shrink: the PEs released,
    marked ▼ at the end) and starting (expand: the PEs added, marked ▲ at the start) inside
    the job's run; marks go only on bars at least 8 pixels wide, and none when there would be
    more than 1,500 (the legend says so). With thin lanes (many hosts) every job's blocks get a white outline
    instead of seams between lanes, which would stripe the chart. Job ids are written where
    they fit: on each busy bar when lanes are tall, else once per job on its tallest block.
    Thin grey lines separate the racks while racks are at least 6 pixels tall. Returns the
    path written.
    """
    return save_png(_gantt_figure(tables), path)


def _label_jobs(ax: Any, busy: _Bars, lane_px: float, px_per_unit: float) -> None:
    """Job ids on busy bars wherever the text fits (estimated from the font size)."""
    fs = 8 if lane_px >= 14 else 6
    char_px = 0.62 * fs * _DPI / 72
    text_h = 1.3 * fs * _DPI / 72
    if not len(busy.job):
        return
    if lane_px >= 14:  # tall lanes: one label per busy bar
        digits = np.char.str_len(busy.job.astype(str))
        fits = ((busy.x1 - busy.x0) * px_per_unit >= char_px * digits + 6) & (
            (busy.y1 - busy.y0) * lane_px >= text_h * 0.8)
        for k in np.flatnonzero(fits):
            ax.text((busy.x0[k] + busy.x1[k]) / 2, (busy.y0[k] + busy.y1[k]) / 2,
                    str(int(busy.job[k])), ha="center", va="center", fontsize=fs, zorder=4,
                    clip_on=True)
        return
    # Thin lanes: one label per job, on its tallest block of neighbouring hosts.
    blk = _blocks(busy)
    size = blk.y1 - blk.y0
    _, job_first, job_count = np.unique(blk.job, return_index=True, return_counts=True)
    for f, c in zip(job_first.tolist(), job_count.tolist(), strict=True):
        k = f + int(np.argmax(size[f:f + c]))
        label = str(int(blk.job[k]))
        lo, hi = blk.x0[k], blk.x1[k]
        if (hi - lo) * px_per_unit >= char_px * len(label) + 4 and size[k] * lane_px >= text_h:
            ax.text((lo + hi) / 2, (blk.y0[k] + blk.y1[k]) / 2, label, ha="center",
                    va="center", fontsize=fs, zorder=4, clip_on=True,
                    bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none",
                          "alpha": 0.6})


# -- load imbalance -----------------------------------------------------------------------

def plot_imbalance(path: PathLike, runs: Sequence[RunTables], *,
                   labels: Sequence[str] | None = None,
                   order: Literal["id", "sorted"] = "id") -> Path:
    """Load-imbalance profile: max/mean of the per-PE finish times of each app-driven job.

    Parameters
    ----------
    path:
        The PNG to write (atomically).
    runs, labels:
        The runs, one marker series each, and their legend labels (default: run ids).
    order:
        ``"id"``: jobs by id on the x axis; ``"sorted"``: each run's jobs by decreasing
        imbalance (x = rank), a profile curve per run.

    Returns
    -------
    The path written. Jobs without an imbalance (rigid jobs, jobs that did not run, or whose
    chunks were not simulated here: NaN in ``jobs["imbalance"]``) are skipped and counted in
    the legend. 1.0 (perfect balance) is marked.
    """
    names = _check_runs(runs, labels)
    if order not in ("id", "sorted"):
        raise InputError(f"unknown order {order!r}; known: id, sorted", field="order")
    fig = Figure(figsize=(11, 4.8), layout="constrained")
    ax = fig.subplots()
    anything = False
    for i, (r, name) in enumerate(zip(runs, names, strict=True)):
        imb = r.jobs["imbalance"]
        ok = np.isfinite(imb)
        skipped = int((~ok).sum())
        ids, vals = r.jobs["id"][ok], imb[ok]
        if order == "sorted":
            vals = np.sort(vals)[::-1]
            x = np.arange(1, len(vals) + 1)
        else:
            x = ids
        label = f"{name}: {len(vals)} jobs"
        if len(vals):
            label += f", mean {vals.mean():.2f}, max {vals.max():.2f}"
            anything = True
        if skipped:
            label += f" ({skipped} rigid or not run: not shown)"
        colour = _RUN_COLOURS[i % len(_RUN_COLOURS)]
        # Hollow markers after the first run: identical values of two runs stay visible.
        ax.plot(x, vals, ls="-" if order == "sorted" else "none", lw=0.8,
                marker=_MARKERS[i % len(_MARKERS)], ms=4 if len(vals) > 60 else 6,
                mfc=colour if i == 0 else "none", mec=colour, color=colour, alpha=0.85,
                label=label)
    ax.axhline(1.0, color="0.3", lw=0.8, ls=":", label="perfect balance (1.0)")
    if anything:
        ax.set_ylim(bottom=0.95)
    else:
        _no_data(ax, "no app-driven job ran: no load imbalance to plot\n"
                     "(rigid jobs have none)")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 2)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # job ids and ranks are whole
    ax.set_xlabel("job id" if order == "id" else "jobs by decreasing imbalance (rank)")
    ax.set_ylabel("load imbalance\nmax / mean of PE finish times")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9, loc="best", framealpha=0.9)
    fig.suptitle("Load imbalance per job", fontsize=13)
    sub = _common_config(runs)
    ax.set_title((sub + "; " if sub else "") + "finish times from each job's loop start",
                 fontsize=10, color="0.3")
    return save_png(fig, path)


# -- the standard set ---------------------------------------------------------------------

def plot_distributions(path: PathLike, runs: Sequence[RunTables], *,
                       labels: Sequence[str] | None = None) -> Path:
    """The distributions of the jobs' wait times and bounded slowdowns (10 s) of each run, as
    cumulative fractions of the jobs that ran (one curve per run; x logarithmic, jobs that
    did not wait at the left edge). What a mean hides — a long tail of waits, a few jobs
    slowed 100-fold — shows here; for the traces of months and years this is the plot to
    compare policies with."""
    names = _check_runs(runs, labels)
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    ax_w, ax_s = fig.subplots(1, 2)
    anything = False
    for i, (r, name) in enumerate(zip(runs, names, strict=True)):
        ran = r.jobs[r.jobs["start"] >= 0]
        colour = _RUN_COLOURS[i % len(_RUN_COLOURS)]
        if not len(ran):
            ax_w.plot([], [], color=colour, label=f"{name}: no job ran")
            continue
        anything = True
        wait = (ran["start"] - ran["submit"]) / TICKS_PER_SECOND
        run = (ran["end"] - ran["start"]) / TICKS_PER_SECOND
        bsld = np.maximum((wait + run) / np.maximum(run, 10.0), 1.0)
        frac = np.arange(1, len(ran) + 1) / len(ran)
        zero = float((wait <= 0).mean())
        ax_w.step(np.sort(np.maximum(wait, 1.0)), frac, where="post", color=colour, lw=1.2,
                  label=f"{name}: median {np.median(wait):,.0f} s, {100 * zero:.0f} % "
                        "did not wait")
        ax_s.step(np.sort(bsld), frac, where="post", color=colour, lw=1.2,
                  label=f"{name}: median {np.median(bsld):.2f}, 95 % below "
                        f"{np.quantile(bsld, 0.95):.1f}")
    for ax, what in ((ax_w, "wait time [s] (below 1 s: at 1 s)"),
                     (ax_s, "bounded slowdown (10 s)")):
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(what)
        ax.grid(True, alpha=0.3, which="both")
        if anything:
            ax.legend(fontsize=8, loc="lower right")
    ax_w.set_ylabel("fraction of the jobs that ran")
    if not anything:
        _no_data(ax_w, "no job ran: nothing to plot")
    fig.suptitle("Wait times and slowdowns of the jobs (cumulative)", fontsize=13)
    return save_png(fig, path)


def plot_power(path: PathLike, runs: Sequence[RunTables], *,
               labels: Sequence[str] | None = None) -> Path:
    """The system power of each run under a power cap over time (a step line per run, its
    cap dashed, the mean in the legend; runs without a cap are left out)."""
    names = _check_runs(runs, labels)
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    ax = fig.subplots()
    capped = [(r, n) for r, n in zip(runs, names, strict=True) if len(r.power_series)]
    origin = min((int(r.power_series["time"][0]) for r, _ in capped), default=0)
    span = max((int(r.power_series["time"][-1]) - origin for r, _ in capped), default=0)
    scale, unit = _time_unit(span / TICKS_PER_SECOND)
    for i, (r, name) in enumerate(capped):
        colour = _RUN_COLOURS[i % len(_RUN_COLOURS)]
        p = r.power_series
        x = (p["time"] - origin) / TICKS_PER_SECOND / scale
        mean, cap = _metric(r.metrics, "mean_power_w"), _metric(r.metrics, "power_cap_w")
        ax.step(x, p["watts"] / 1e3, where="post", color=colour, lw=1.0,
                label=f"{name}: mean {(mean or 0) / 1e3:,.1f} kW")
        if cap is not None:
            ax.axhline(cap / 1e3, color=colour, ls="--", lw=0.8)
    if not capped:
        _no_data(ax, "no run had a power cap")
    else:
        ax.legend(fontsize=8, loc="lower right")
    ax.set_xlabel(f"time [{unit}] from the first start")
    ax.set_ylabel("system power [kW] (cap dashed)")
    ax.grid(True, alpha=0.3)
    fig.suptitle("System power under the power cap", fontsize=13)
    return save_png(fig, path)


def _file_part(run_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", run_id).strip("-.") or "run"


def write_plots(out_dir: PathLike, runs: Sequence[RunTables], *, prefix: str = "",
                labels: Sequence[str] | None = None, workers: int = 1) -> list[Path]:
    """The standard plots of a command, under `out_dir` (created if needed).

    Writes ``{prefix}utilization.png`` (all runs together), ``{prefix}gantt-{run_id}.png``
    per run (the run id made safe for a file name; ``-2``, ``-3``... appended when two runs
    would share a name), ``{prefix}distributions.png`` (waits and slowdowns, all runs) and,
    when some run has an app-driven job, ``{prefix}imbalance.png`` (all runs), and when some
    run has a power cap ``{prefix}power.png`` (`plot_power`), in this order,
    and returns exactly these paths. `labels` name the runs in the shared plots (default: run
    ids). With `workers` above 1 the figures are drawn by that many forked processes at most
    (`cosim.core.workers.forked_map`; one process where the system does not fork): each
    figure is drawn by one process from the same tables, so the files are the same bytes.
    """
    _check_runs(runs, labels)
    out = Path(out_dir)
    figures: list[tuple[Any, tuple[Any, ...]]] = [
        (partial(plot_utilization, labels=labels), (out / f"{prefix}utilization.png", runs))]
    used: set[str] = set()
    for r in runs:
        stem = base = _file_part(r.run_id)
        n = 1
        while stem in used:
            n += 1
            stem = f"{base}-{n}"
        used.add(stem)
        figures.append((plot_gantt, (out / f"{prefix}gantt-{stem}.png", r)))
    figures.append((partial(plot_distributions, labels=labels),
                    (out / f"{prefix}distributions.png", runs)))
    if any(np.isfinite(r.jobs["imbalance"]).any() for r in runs):  # rigid runs have none
        figures.append((partial(plot_imbalance, labels=labels),
                        (out / f"{prefix}imbalance.png", runs)))
    if any(len(r.power_series) for r in runs):  # runs with a power cap
        figures.append((partial(plot_power, labels=labels), (out / f"{prefix}power.png", runs)))
    return forked_map(figures, workers)
