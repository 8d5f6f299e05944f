"""PNG plots of finished runs: utilization over time, a hosts x time Gantt chart, load imbalance.

The plots read only `RunTables` (as the HDF5 and OTF2 writers do), after the figures of the
RCA study (Eleliemy & Ciorba, "A resourceful coordination approach for multilevel
scheduling"): `plot_utilization` draws the busy hosts in % of the machine over time for one or
several runs on the same axes (RCA off vs on), with the queued jobs below; `plot_gantt` draws
one bar per allocation row, coloured by job category (shades alternate between the jobs of a
category), the yielded idle tail lighter and borrowed hosts outlined; `plot_imbalance` draws
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
from pathlib import Path
from typing import Any, Literal

import numpy as np

from cosim.core.clock import TICKS_PER_SECOND
from cosim.core.files import atomic_open
from cosim.errors import InputError
from cosim.output.tables import RunTables, step_series

try:
    from matplotlib import colormaps
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import to_rgba_array
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
except ImportError as _exc:  # an optional dependency: say how to get it, not a traceback
    raise InputError("plots need matplotlib (pip install matplotlib)") from _exc

__all__ = ["plot_utilization", "plot_gantt", "plot_imbalance", "write_plots"]

PathLike = str | os.PathLike[str]

_DPI = 110
_RUN_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
                "tab:pink", "tab:gray", "tab:olive", "tab:cyan")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
_CONFIG_KEYS = ("workload", "platform", "batch", "technique", "rca")


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
    if span_s >= 2 * 3600:
        return 3600.0, "h"
    if span_s >= 10 * 60:
        return 60.0, "min"
    return 1.0, "s"


def _fmt_duration(s: float) -> str:
    unit, sym = _time_unit(s)
    return f"{s / unit:.3g} {sym}" if sym == "s" else f"{s / unit:.2f} {sym}"


def _origin(runs: Sequence[RunTables]) -> int:
    """The first submission of all runs: time 0 of the axes, where the makespan starts."""
    firsts = [int(r.jobs["submit"].min()) for r in runs if len(r.jobs)]
    return min(firsts) if firsts else 0


def _span_ticks(runs: Sequence[RunTables], origin: int) -> int:
    return max([r.horizon - origin for r in runs] + [0])


def _common_config(runs: Sequence[RunTables]) -> str:
    """The config keys all runs share, as one line (the keys that differ are in the labels)."""
    parts = []
    for key in _CONFIG_KEYS:
        values = {str(r.config.get(key)) for r in runs}
        if len(values) == 1 and None not in (r.config.get(key) for r in runs):
            (v,) = values
            parts.append(f"{'RCA' if key == 'rca' else key} {Path(v).name.split('.')[0]}")
    return ", ".join(parts)


def _metric(m: Mapping[str, Any], key: str) -> float | None:
    v = m.get(key)
    return float(v) if isinstance(v, int | float | np.number) else None


def _utilization(r: RunTables) -> float:
    """Eq. 1 utilization: the summary's value, else recomputed from the allocations, which
    count busy host-time the same way (start to busy end)."""
    u = _metric(r.metrics, "utilization")
    if u is not None:
        return u
    a, j = r.allocations, r.jobs
    ran = j[j["start"] >= 0]
    if not len(ran):
        return 0.0
    span = int(ran["end"].max() - ran["start"].min())
    busy = int((a["busy_end"] - a["start"]).sum())
    return busy / (r.n_hosts * span) if span > 0 else 0.0


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


def _save(fig: Figure, path: PathLike) -> Path:
    """Render with Agg into a temporary file beside `path`, then rename it into place."""
    FigureCanvasAgg(fig)
    target = Path(path)
    with atomic_open(target, "wb") as fh:
        fig.savefig(fh, format="png", dpi=_DPI)
    return target


# -- utilization --------------------------------------------------------------------------

def plot_utilization(path: PathLike, runs: Sequence[RunTables], *,
                     labels: Sequence[str] | None = None, queued: bool = True) -> Path:
    """System utilization over time of one or several runs on the same axes (RCA off vs on).

    Parameters
    ----------
    path:
        The PNG to write (atomically).
    runs:
        The runs; their time axes are aligned on the first submission of all of them.
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
        x = (times - origin) / scale
        # Several runs overlap: thin lines keep the one drawn first visible under the next.
        ax.stairs(100.0 * busy[:-1] / r.n_hosts, x, baseline=0, color=colour, lw=0.8,
                  alpha=0.9, label=label)
        ran = r.jobs[r.jobs["start"] >= 0]
        ax.hlines(100.0 * u, (ran["start"].min() - origin) / scale,
                  (ran["end"].max() - origin) / scale, colors=colour, linestyles="--", lw=1.4)
        if axq is not None:
            qt, qn = series["queued"]
            if len(qt) >= 2:
                axq.stairs(qn[:-1], (qt - origin) / scale, baseline=0, color=colour, lw=0.8,
                           alpha=0.9)
    if not anything:
        _no_data(ax, "no job ran: nothing to plot")
    ax.set_ylim(0, 105)
    ax.set_xlim(left=0)
    ax.set_ylabel("busy hosts [% of the machine]")
    ax.grid(True, alpha=0.3)
    handles, texts = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="0.3", ls="--", lw=1.4))
    texts.append("overall utilization U (Eq. 1) over [first start, last end]")
    ax.legend(handles, texts, loc="lower left", fontsize=9, framealpha=0.9)
    last = ax
    if axq is not None:
        axq.set_ylabel("queued jobs")
        axq.set_ylim(bottom=0)
        axq.grid(True, alpha=0.3)
        last = axq
    last.set_xlabel(f"time since the first submission [{sym}]")
    n_hosts = sorted({r.n_hosts for r in runs})
    fig.suptitle("System utilization over time", fontsize=13)
    ax.set_title(", ".join(filter(None, [_common_config(runs),
                                         f"{'/'.join(map(str, n_hosts))} hosts"])),
                 fontsize=10, color="0.3")
    return _save(fig, path)


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


def _rects(y: np.ndarray, x0: np.ndarray, x1: np.ndarray, h: float) -> np.ndarray:
    """Vertices of axis-aligned rectangles (n, 4, 2), lane y centred."""
    lo, hi = y - h / 2, y + h / 2
    return np.stack([np.c_[x0, lo], np.c_[x0, hi], np.c_[x1, hi], np.c_[x1, lo]], axis=1)


def _runs_of_hosts(hosts: np.ndarray) -> list[np.ndarray]:
    """Index groups of consecutive host numbers in `hosts` (sorted)."""
    breaks = np.flatnonzero(np.diff(hosts) != 1) + 1
    return np.split(np.arange(len(hosts)), breaks)


def plot_gantt(path: PathLike, tables: RunTables) -> Path:
    """Gantt chart of one run: hosts x time, one bar per allocation row.

    Each (job, host) allocation is a bar from the job's start to its end on the host's lane,
    coloured by job category with alternating shades between the jobs of a category (by job,
    cycling a qualitative palette, when there are no categories or more than 20). The busy
    part (start to busy end) is solid; the yielded tail (busy end to end: the host is idle,
    lendable under RCA) is lighter. Allocations on a borrowed host (owner != job) are
    outlined in black. Job ids are written on the bars when there is room: on each busy bar
    when lanes are tall, else once per job on its largest block of neighbouring hosts.
    Thin grey lines separate the racks. Returns the path written.
    """
    t = tables
    a = t.allocations
    n_hosts = max(t.n_hosts, 1)
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
    bar_h = 0.86 if lane_px >= 8 else 1.0  # gaps between lanes only where they can be seen

    colours, cat_legend, colour_by = _job_colours(t.jobs)
    row = np.searchsorted(t.jobs["id"], a["job"])
    face = colours[row] if len(a) else np.zeros((0, 4))
    y = a["host"].astype(np.float64)
    x0 = (a["start"] - origin) / scale
    xb = (a["busy_end"] - origin) / scale
    x1 = (a["end"] - origin) / scale
    sep_w = 0.8 if lane_px >= 8 else 0.25  # white seams keep adjacent bars apart

    tail = xb < x1
    light = face[tail].copy()
    light[:, :3] = 1.0 - 0.38 * (1.0 - light[:, :3])  # lighter: the host idles in its job
    ax.add_collection(PolyCollection(_rects(y[tail], xb[tail], x1[tail], bar_h),
                                     facecolors=light, edgecolors="white", linewidths=sep_w,
                                     zorder=1))
    ax.add_collection(PolyCollection(_rects(y, x0, xb, bar_h), facecolors=face,
                                     edgecolors="white", linewidths=sep_w, zorder=2))
    lent = a["owner"] != a["job"]
    inset = 0.08 if lane_px >= 8 else 0.0  # keep the outline inside its lane
    ax.add_collection(PolyCollection(_rects(y[lent], x0[lent], x1[lent], bar_h - inset),
                                     facecolors="none", edgecolors="black",
                                     linewidths=1.2 if lane_px >= 8 else 0.45, zorder=3))

    span_units = max((t.horizon - origin) / scale, 1e-9)
    px_per_unit = (width - left - right) * _DPI / (span_units * 1.02)
    _label_jobs(ax, a, x0, xb, lane_px, px_per_unit)

    for b in np.flatnonzero(np.diff(t.racks[:n_hosts])) + 0.5:
        ax.axhline(b, color="0.55", lw=0.6, zorder=0.5)
    ax.set_xlim(0, span_units * 1.02)
    ax.set_ylim(n_hosts - 0.5, -0.5)  # host 0 on top, as in a listing
    if n_hosts <= 32:
        ax.set_yticks(range(n_hosts), [t.host_names[h] if h < len(t.host_names) else str(h)
                                       for h in range(n_hosts)], fontsize=8)
        ax.set_ylabel("host")
    else:
        step = 16 if n_hosts <= 512 else int(np.ceil(n_hosts / 32 / 16) * 16)
        ax.set_yticks(range(0, n_hosts, step))
        ax.set_ylabel("host index")
    ax.set_xlabel(f"time since the first submission [{sym}]")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    if not len(a):
        _no_data(ax, "no job ran: nothing to plot")

    handles = [Patch(fc="0.45", ec="white", label="busy (computing)"),
               Patch(fc="0.82", ec="white", label="yielded tail\n(idle, lendable)"),
               Patch(fc="0.45", ec="black", lw=1.2, label="on a borrowed host\n(owner ≠ job)")]
    leg = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                    fontsize=8, title="bar", title_fontsize=9, frameon=False)
    if cat_legend:
        ax.add_artist(leg)  # a second legend would replace the first otherwise
        ax.legend(handles=[Patch(fc=c, label=name) for name, c in cat_legend],
                  loc="lower left", bbox_to_anchor=(1.01, 0.0), fontsize=8, frameon=False,
                  title="job category", title_fontsize=9,
                  ncols=2 if len(cat_legend) > 6 else 1)
    ran = int((t.jobs["start"] >= 0).sum())
    lent_hosts = int(lent.sum())
    fig.suptitle(f"Gantt chart of {t.run_id}: {n_hosts} hosts, {ran} jobs ran, "
                 f"{len(a)} allocations ({lent_hosts} on borrowed hosts)", fontsize=12,
                 x=left / width, ha="left", y=1 - 0.12 / height, va="top")
    sub = _common_config([t])
    fig.text(left / width, 1 - 0.42 / height,
             f"{sub}; colour by {colour_by}" if sub else f"colour by {colour_by}",
             fontsize=9, color="0.3", va="top")
    return _save(fig, path)


def _label_jobs(ax: Any, a: np.ndarray, x0: np.ndarray, xb: np.ndarray, lane_px: float,
                px_per_unit: float) -> None:
    """Job ids on busy bars wherever the text fits (estimated from the font size)."""
    fs = 8 if lane_px >= 14 else 6
    char_px = 0.62 * fs * _DPI / 72
    text_h = 1.25 * fs * _DPI / 72
    if lane_px >= 14:  # tall lanes: one label per busy bar
        for k in range(len(a)):
            label = str(int(a["job"][k]))
            if (xb[k] - x0[k]) * px_per_unit >= char_px * len(label) + 6:
                ax.text((x0[k] + xb[k]) / 2, a["host"][k], label, ha="center", va="center",
                        fontsize=fs, zorder=4, clip_on=True)
        return
    # thin lanes: one label per job, on its tallest block of neighbouring hosts, over the
    # time all of them are busy (no borrower can be drawn there: lending starts at a yield)
    order = np.lexsort((a["host"], a["job"]))
    jobs = a["job"][order]
    for grp in np.split(order, np.flatnonzero(np.diff(jobs)) + 1):
        if not len(grp):
            continue
        grp = grp[np.argsort(a["host"][grp], kind="stable")]
        best = max(_runs_of_hosts(a["host"][grp]), key=len)
        rows = grp[best]
        lo, hi = x0[rows].max(), xb[rows].min()
        label = str(int(a["job"][rows[0]]))
        if (hi - lo) * px_per_unit >= char_px * len(label) + 4 and \
                len(rows) * lane_px >= text_h:
            ax.text((lo + hi) / 2, (a["host"][rows].min() + a["host"][rows].max()) / 2,
                    label, ha="center", va="center", fontsize=fs, zorder=4, clip_on=True)


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
            label += f" ({skipped} without imbalance, not shown)"
        colour = _RUN_COLOURS[i % len(_RUN_COLOURS)]
        # Hollow markers after the first run: identical values of two runs stay visible.
        ax.plot(x, vals, ls="-" if order == "sorted" else "none", lw=0.8,
                marker=_MARKERS[i % len(_MARKERS)], ms=4 if len(vals) > 60 else 6,
                mfc=colour if i == 0 else "none", mec=colour, color=colour, alpha=0.85,
                label=label)
    ax.axhline(1.0, color="0.3", lw=0.8, ls=":", label="perfect balance (1.0)")
    if not anything:
        _no_data(ax, "no app-driven job ran: no load imbalance to plot\n"
                     "(rigid jobs have none)")
    ax.set_ylim(bottom=0.95 if anything else 0.0)
    ax.set_xlabel("job id" if order == "id" else "jobs by decreasing imbalance (rank)")
    ax.set_ylabel("load imbalance\nmax / mean of PE finish times")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9, loc="best", framealpha=0.9)
    fig.suptitle("Load imbalance per job", fontsize=13)
    sub = _common_config(runs)
    ax.set_title((sub + "; " if sub else "") + "finish times from each job's loop start",
                 fontsize=10, color="0.3")
    return _save(fig, path)


# -- the standard set ---------------------------------------------------------------------

def _file_part(run_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", run_id).strip("-.") or "run"


def write_plots(out_dir: PathLike, runs: Sequence[RunTables], *, prefix: str = "",
                labels: Sequence[str] | None = None) -> list[Path]:
    """The standard plots of a command, under `out_dir` (created if needed).

    Writes ``{prefix}utilization.png`` (all runs together), ``{prefix}gantt-{run_id}.png``
    per run (the run id made safe for a file name; ``-2``, ``-3``... appended when two runs
    would share a name) and ``{prefix}imbalance.png`` (all runs), in this order, and returns
    exactly these paths. `labels` name the runs in the shared plots (default: run ids).
    """
    _check_runs(runs, labels)
    out = Path(out_dir)
    written = [plot_utilization(out / f"{prefix}utilization.png", runs, labels=labels)]
    used: set[str] = set()
    for r in runs:
        stem = base = _file_part(r.run_id)
        n = 1
        while stem in used:
            n += 1
            stem = f"{base}-{n}"
        used.add(stem)
        written.append(plot_gantt(out / f"{prefix}gantt-{stem}.png", r))
    written.append(plot_imbalance(out / f"{prefix}imbalance.png", runs, labels=labels))
    return written
