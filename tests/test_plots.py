"""PNG plots of runs: files written atomically, valid PNGs of sane size, edge cases."""

from __future__ import annotations

import struct
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from cosim.output import plots
from cosim.output.tables import RunTables, build_tables
from cosim.platform import load_platform
from cosim.runner import simulate
from cosim.testing.runs import malleable_tables, tiny_jobs, tiny_tables
from cosim.testing.workloads import lublin_like
from cosim.workload.jobs import JobOutcome

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the IHDR chunk, after checking the signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, path
    assert data[12:16] == b"IHDR", path
    return struct.unpack(">II", data[16:24])


def assert_png(path: Path, min_bytes: int = 5_000) -> None:
    assert path.is_file()
    w, h = png_size(path)
    assert 400 <= w <= 4000 and 300 <= h <= 4000, (path.name, w, h)
    assert path.stat().st_size > min_bytes, path


@pytest.fixture(scope="module")
def runs() -> list[RunTables]:
    return [tiny_tables(rca=False, run_id="tiny-off"), tiny_tables(run_id="tiny-yield")]


@pytest.fixture(scope="module")
def empty() -> RunTables:
    """A run where no job ran: every job of the tiny workload rejected."""
    platform = load_platform("tiny8x2")
    outcomes = [JobOutcome(job=j, start=None, end=None, hosts=(), status="rejected")
                for j in tiny_jobs()]
    return build_tables(outcomes, run_id="none ran", config={"workload": "tiny"},
                        metrics={}, stats={}, platform=platform, n_hosts=platform.n_hosts)


def test_write_plots_returns_exactly_the_files_written(tmp_path, runs):
    out = tmp_path / "plots"
    written = plots.write_plots(out, runs, prefix="t-")
    names = [p.name for p in written]
    assert names == ["t-utilization.png", "t-gantt-tiny-off.png", "t-gantt-tiny-yield.png",
                     "t-distributions.png", "t-imbalance.png"]
    assert sorted(out.iterdir()) == sorted(written)  # nothing else: no temporary file left
    for p in written:
        assert_png(p)
    # the Gantt of 8 hosts is wider than tall; the shared plots too
    for p in written:
        w, h = png_size(p)
        assert w > h


def test_plots_drawn_by_forked_workers_are_the_same_files(tmp_path, runs, monkeypatch):
    """`write_plots(workers=...)`: the same paths in the same order, the same bytes, drawn
    in other processes (on Linux)."""
    import os
    import sys

    from cosim.core.workers import forked_map

    alone = plots.write_plots(tmp_path / "one", runs, prefix="t-")
    drawn_by = []

    def spy(calls, workers):  # each figure's call, wrapped to say where it ran
        def where(f):
            return lambda *args: (os.getpid(), f(*args))

        got = forked_map([(where(f), args) for f, args in calls], workers)
        drawn_by.extend(pid for pid, _ in got)
        return [path for _, path in got]

    monkeypatch.setattr(plots, "forked_map", spy)
    shared = plots.write_plots(tmp_path / "three", runs, prefix="t-", workers=3)
    assert len(drawn_by) == len(alone)
    if sys.platform.startswith("linux"):
        assert os.getpid() not in drawn_by
    assert [p.name for p in shared] == [p.name for p in alone]
    assert [p.parent for p in shared] == [tmp_path / "three"] * len(alone)
    for a, b in zip(alone, shared, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    assert sorted(p.name for p in (tmp_path / "three").iterdir()) == sorted(
        p.name for p in alone)  # no temporary file left by a worker


def test_gantt_of_the_main_job_size_is_bounded(tmp_path, runs):
    # a 256-host run has the same allocation rows as tiny's, moved onto 256 hosts: the
    # figure grows with the hosts, then stops (lanes shrink)
    t = runs[1]
    wide = replace(t, n_hosts=256, host_names=tuple(f"h{i}" for i in range(256)),
                   racks=np.repeat(np.arange(16, dtype=np.int32), 16))
    w, h = png_size(plots.plot_gantt(tmp_path / "g.png", wide))
    w8, h8 = png_size(plots.plot_gantt(tmp_path / "g8.png", t))
    assert w == w8 and h8 < h <= 4000


def _gid(fig, gid):
    """The artist of the Gantt's axes with id `gid` (None when not drawn)."""
    ax = fig.axes[0]
    found = [c for c in [*ax.collections, *ax.patches] if c.get_gid() == gid]
    assert len(found) <= 1, gid
    return found[0] if found else None


def test_gantt_of_a_malleable_run_shows_each_row_and_the_resizes(tmp_path):
    t = malleable_tables()
    assert_png(plots.plot_gantt(tmp_path / "g.png", t))
    fig = plots._gantt_figure(t)
    a = t.allocations
    # tall lanes (8 hosts): one rectangle per host of each row, in the share of the lane of
    # its cores (hosts are shared at PE level here)
    busy = _gid(fig, "busy").get_paths()
    assert len(busy) == int(a["hosts"].sum())
    tops = sorted({round(float(p.vertices[:, 1].min()), 6) for p in busy})
    assert any(abs(y - round(y)) > 0.01 for y in tops)  # some bars start mid-lane
    # every shrink is marked where a row of the job ends, every expand where one starts
    shrink = _gid(fig, "shrink").get_offsets()
    expand = _gid(fig, "expand").get_offsets()
    assert len(shrink) >= int(t.jobs["shrinks"].sum()) > 0
    assert len(expand) >= int(t.jobs["expands"].sum()) > 0
    ends = {round(e / 1e9, 6) for e in a["end"].tolist()}
    starts = {round(b / 1e9, 6) for b in a["start"].tolist()}
    assert {round(float(x), 6) for x, _ in shrink} <= ends
    assert {round(float(x), 6) for x, _ in expand} <= starts
    assert _gid(fig, "yielded").get_paths() == [] and _gid(fig, "borrowed") is None
    # the tiny RCA run: yielded tails hatched, borrowed hosts outlined, no resize marks
    fig = plots._gantt_figure(tiny_tables())
    assert len(_gid(fig, "yielded").get_paths()) > 0 and _gid(fig, "borrowed") is not None
    assert _gid(fig, "shrink") is None and _gid(fig, "expand") is None


def test_gantt_of_5040_hosts_draws_one_rectangle_per_allocation_row(tmp_path):
    platform = load_platform("curie5040")
    jobs = lublin_like(1500, 5040, np.random.default_rng(3), load=0.9, cores=16)
    res = simulate(jobs, n_hosts=5040, platform=platform)
    t = build_tables(res.outcomes, run_id="curie", config={}, metrics={}, stats={},
                     platform=platform, n_hosts=5040, allocations=res.allocations)
    a = t.allocations
    assert int(a["hosts"].sum()) > 20 * len(a)  # rows span many hosts each
    fig = plots._gantt_figure(t)
    assert len(_gid(fig, "busy").get_paths()) == len(a)  # not one per (job, host)
    assert len(_gid(fig, "outline").get_paths()) <= len(a)
    w, h = png_size(plots.plot_gantt(tmp_path / "g.png", t))
    assert w <= 1500 and h <= 1300


def test_single_run_without_queue_panel_and_sorted_profile(tmp_path, runs):
    u = plots.plot_utilization(tmp_path / "u.png", runs[:1], labels=["RCA off"],
                               queued=False)
    i = plots.plot_imbalance(tmp_path / "i.png", runs, order="sorted")
    assert_png(u)
    assert_png(i)
    assert png_size(u)[1] < png_size(plots.plot_utilization(tmp_path / "uq.png", runs[:1]))[1]


def test_rewriting_replaces_the_file_atomically(tmp_path, runs):
    target = tmp_path / "g.png"
    target.write_bytes(b"old")
    plots.plot_gantt(target, runs[0])
    assert_png(target)
    assert [p.name for p in tmp_path.iterdir()] == ["g.png"]


def test_empty_run_gives_an_empty_state_plot(tmp_path, empty):
    written = plots.write_plots(tmp_path, [empty])
    # no app-driven job: no imbalance plot (it would be empty)
    assert [p.name for p in written] == ["utilization.png", "gantt-none-ran.png",
                                         "distributions.png"]
    for p in written:
        assert_png(p, min_bytes=2_000)


def test_a_rigid_run_gets_no_imbalance_plot(tmp_path, runs):
    rigid = replace(runs[0], jobs=runs[0].jobs.copy())
    rigid.jobs["imbalance"] = np.nan
    names = [p.name for p in plots.write_plots(tmp_path, [rigid])]
    assert names == ["utilization.png", "gantt-tiny-off.png", "distributions.png"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 50), st.integers(0, 9)), min_size=1, max_size=30),
       st.integers(1, 40), st.integers(0, 30))
def test_bin_means_keep_the_area_of_the_step_function(steps, width, offset):
    """Each bin's mean times its width is the step function's integral over the bin (by brute
    force, tick by tick), so the binned curve of a long run keeps its utilization."""
    times = np.cumsum([d for d, _ in steps]) + offset
    values = np.array([v for _, v in steps])
    end = int(times[-1]) + 2 * width
    edges = np.arange(0, end + width, width)
    means = plots._binned_mean(times, values, edges)
    tick = np.arange(0, edges[-1])
    k = np.searchsorted(times, tick, side="right") - 1
    per_tick = np.where(k >= 0, values[np.maximum(k, 0)], 0)
    brute = per_tick.reshape(-1, width).sum(axis=1)
    assert np.allclose(means * width, brute)


def test_long_runs_are_plotted_per_hour_or_day():
    hour, day = 3600 * 10**9, 86400 * 10**9
    assert plots._bin_ticks(2 * day) == 0 and plots._bin_ticks(2 * day + 1) == hour
    assert plots._bin_ticks(60 * day) == hour and plots._bin_ticks(60 * day + 1) == day


def test_metrics_missing_are_recomputed(tmp_path, runs):
    t = runs[1]
    bare = replace(t, metrics={})
    assert plots._utilization(bare) == pytest.approx(t.metrics["utilization"])
    assert plots._makespan_s(bare) == pytest.approx(t.metrics["makespan_s"])


def test_duplicate_run_ids_get_distinct_gantt_files(tmp_path, runs, monkeypatch):
    # file naming only: the Gantt renderer is stubbed (rendering is tested above)
    monkeypatch.setattr(plots, "plot_gantt", lambda path, tables: Path(path))
    same = [replace(runs[0], run_id="tiny off"), replace(runs[1], run_id="tiny/off")]
    names = [p.name for p in plots.write_plots(tmp_path, same)]
    assert names == ["utilization.png", "gantt-tiny-off.png", "gantt-tiny-off-2.png",
                     "distributions.png", "imbalance.png"]


@pytest.mark.parametrize(("call", "message"), [
    (lambda d, r: plots.plot_utilization(d / "u.png", []), "no run to plot"),
    (lambda d, r: plots.plot_imbalance(d / "i.png", r, labels=["one"]), "1 labels for 2 runs"),
    (lambda d, r: plots.plot_imbalance(d / "i.png", r, order="by-size"), "unknown order"),
    (lambda d, r: plots.write_plots(d, r[0]), "sequence of runs"),
])
def test_bad_arguments_are_input_errors(tmp_path, runs, call, message):
    with pytest.raises(InputError, match=message):
        call(tmp_path, runs)
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=80, deadline=None)
@given(st.one_of(st.lists(st.floats(-50, 150), min_size=1, max_size=40),
                 st.lists(st.one_of(st.floats(-50, 150), st.just(float("nan"))), min_size=1,
                          max_size=5)),
       st.floats(0, 10), st.floats(0.01, 5))
def test_fast_stairs_draw_and_bound_as_matplotlib_stairs(values, x0, step):
    """`plots._stairs` is `Axes.stairs` with the data limits from the steps' box: the same
    patch, the same limits, the same view (NaN steps, negative values, one step)."""
    from matplotlib.figure import Figure

    v = np.array(values)
    edges = x0 + step * np.arange(len(v) + 1)
    ours, theirs = Figure().subplots(), Figure().subplots()
    a = plots._stairs(ours, v, edges, color="C0", label="x")
    b = theirs.stairs(v, edges, baseline=0, color="C0", label="x")
    assert np.array_equal(a.get_data().values, b.get_data().values, equal_nan=True)
    assert np.array_equal(a.get_data().edges, b.get_data().edges)
    assert np.allclose(ours.dataLim.get_points(), theirs.dataLim.get_points())
    assert np.allclose(ours.get_xlim(), theirs.get_xlim())
    assert np.allclose(ours.get_ylim(), theirs.get_ylim())
    assert ours.get_legend_handles_labels()[1] == ["x"]
