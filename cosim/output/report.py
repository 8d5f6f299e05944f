"""Summaries of stored runs for ``cosim report``: an aligned table for people, CSV for tools.

`report_table` gives one row per run with the numbers a reader compares first — run id,
workload, technique, RCA mode, makespan, utilization, mean wait, mean slowdown, yields and
lends — with units in the header and ``-`` for what a run lacks. `report_csv` gives one row
per run with every scalar metric, in a stable column order: the identifying columns, then the
keys of `cosim.output.metrics.summary` in its order, then any other scalar metric by name, so
that files from different cosim versions line up on the shared columns. Floats are written
with Python's shortest exact repr; CSV values read back as the same numbers.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from cosim.experiment import OUTPUT_ONLY, option_text
from cosim.output.metrics import summary
from cosim.output.tables import RunTables

__all__ = ["CSV_METRICS", "TABLE_COLUMNS", "Column", "report_csv", "report_table",
           "varying_config", "report_groups", "mean_sd"]

# taken from summary itself so that a metric added there gets its place here too
CSV_METRICS: tuple[str, ...] = tuple(summary((), 1))
"""The keys of `cosim.output.metrics.summary`, in order: the first metric columns of the CSV."""

_ID_COLUMNS = ("run_id", "workload", "technique", "rca")


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    """A column of the human table: header (with unit), how to get and show the value."""

    header: str
    value: Callable[[RunTables], Any]
    fmt: str = ""
    number: bool = True
    key: str = ""  # the column's name in CSV (metric columns)


def _config(key: str) -> Callable[[RunTables], Any]:
    return lambda run: run.config.get(key)


def _metric(key: str, scale: float = 1.0) -> Callable[[RunTables], Any]:
    def get(run: RunTables) -> Any:
        v = run.metrics.get(key)
        return v * scale if isinstance(v, (int, float)) and not isinstance(v, bool) else v
    return get


def _workload(run: RunTables) -> Any:
    # a path is long and the directory rarely tells runs apart: show the file name
    w = run.config.get("workload")
    return PurePath(w).name if isinstance(w, str) else w


TABLE_COLUMNS: tuple[Column, ...] = (
    Column(header="run", value=lambda run: run.run_id, number=False),
    Column(header="workload", value=_workload, number=False),
    Column(header="technique", value=_config("technique"), number=False),
    Column(header="rca", value=_config("rca"), number=False),
    Column(header="makespan [s]", value=_metric("makespan_s"), fmt=".3f", key="makespan_s"),
    Column(header="utilization [%]", value=_metric("utilization", 100.0), fmt=".2f",
           key="utilization_pct"),
    Column(header="mean wait [s]", value=_metric("mean_wait_s"), fmt=".3f", key="mean_wait_s"),
    Column(header="mean slowdown", value=_metric("mean_slowdown"), fmt=".3f",
           key="mean_slowdown"),
    Column(header="yields [hosts]", value=_metric("yields"), fmt="d", key="yields"),
    Column(header="lends [hosts]", value=_metric("lends"), fmt="d", key="lends"),
)
"""The columns of `report_table`, left to right."""


def _cell(col: Column, run: RunTables) -> str:
    v = col.value(run)
    if v is None:
        return "-"
    if col.fmt and isinstance(v, (int, float)) and not isinstance(v, bool):
        if col.fmt == "d" and isinstance(v, float):
            return f"{v:g}"
        return format(v, col.fmt)
    return str(v)


def report_table(runs: Sequence[RunTables], config: Sequence[str] = ()) -> str:
    """One line per run under a header line (`TABLE_COLUMNS`, with the `config` keys after
    the run id), columns aligned: text to the left, numbers to the right; ``-`` for a value
    a run does not have. Ends with a newline."""
    columns = _with_config(config)
    rows = [[c.header for c in columns]]
    rows += [[_cell(c, run) for c in columns] for run in runs]
    return _aligned(rows, columns)


def _with_config(config: Sequence[str]) -> tuple[Column, ...]:
    extra = tuple(Column(header=k, value=_config_text(k), number=False) for k in config)
    return TABLE_COLUMNS[:1] + extra + TABLE_COLUMNS[1:]


def _config_text(key: str) -> Callable[[RunTables], Any]:
    return lambda run: option_text(run.config.get(key))


def mean_sd(xs: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value) of a non-empty sequence."""
    mean = sum(xs) / len(xs)
    if len(xs) == 1:
        return mean, 0.0
    return mean, math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


def _aligned(rows: list[list[str]], columns: Sequence[Column]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(columns))]
    lines = []
    for row in rows:
        cells = [cell.rjust(w) if c.number else cell.ljust(w)
                 for cell, w, c in zip(row, widths, columns, strict=True)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def varying_config(runs: Sequence[RunTables]) -> list[str]:
    """The configuration keys whose values differ between `runs` (first-seen order), but
    those the report always shows and those that change only what was written."""
    keys = list(dict.fromkeys(k for r in runs for k in r.config))
    shown = set(_ID_COLUMNS) | OUTPUT_ONLY
    return [k for k in keys if k not in shown
            and len({repr(_config_text(k)(r)) for r in runs}) > 1]


def report_groups(runs: Sequence[RunTables], by: Sequence[str], *, as_csv: bool = False
                  ) -> str:
    """Runs grouped by the configuration keys `by` (groups in first-seen order): per group
    the key values, the number of runs and, for each metric of the table, ``mean ± sd``
    (sample standard deviation; 0 for one run; runs lacking a value are left out of it).
    With `as_csv`: ``KEY..., n, METRIC_mean, METRIC_sd, ...``."""
    groups: dict[tuple, list[RunTables]] = {}
    for r in runs:
        groups.setdefault(tuple(repr(_config_text(k)(r)) for k in by), []).append(r)
    metrics = [c for c in TABLE_COLUMNS if c.number]
    stats = []
    for members in groups.values():
        row = []
        for c in metrics:
            xs = [float(v) for v in (c.value(r) for r in members)
                  if isinstance(v, (int, float)) and not isinstance(v, bool)]
            row.append(mean_sd(xs) if xs else (None, None))
        stats.append((members, row))
    keys = [[_config_text(k)(members[0]) for k in by] for members, _ in stats]
    if as_csv:
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow([*by, "n", *(f"{c.key}_{s}" for c in metrics for s in ("mean", "sd"))])
        for kv, (members, row) in zip(keys, stats, strict=True):
            w.writerow([*(_csv_value(v) for v in kv), len(members),
                        *(_csv_value(x) for pair in row for x in pair)])
        return out.getvalue()
    columns = [*(Column(header=k, value=lambda r: None, number=False) for k in by),
               Column(header="runs", value=lambda r: None),
               *(Column(header=c.header, value=c.value) for c in metrics)]
    rows = [[c.header for c in columns]]
    for kv, (members, row) in zip(keys, stats, strict=True):
        cells = ["-" if v is None else str(v) for v in kv] + [str(len(members))]
        for c, (mean, sd) in zip(metrics, row, strict=True):
            fmt = c.fmt if c.fmt != "d" else ".1f"
            cells.append("-" if mean is None else f"{format(mean, fmt)} ± {format(sd, fmt)}")
        rows.append(cells)
    return _aligned(rows, columns)


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _csv_value(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return repr(v) if isinstance(v, float) else str(v)


def report_csv(runs: Sequence[RunTables], config: Sequence[str] = ()) -> str:
    """CSV, one row per run: ``run_id,workload,technique,rca`` (from the config, the
    workload as given), the `config` keys, then every scalar metric — `CSV_METRICS` first,
    in that order, then the others sorted by name — over the union of the runs' metrics;
    empty where a run lacks a value. Floats as Python's shortest exact repr; lines end with
    ``\\n``."""
    known = [k for k in CSV_METRICS if any(k in r.metrics for r in runs)]
    extra = sorted({k for r in runs for k, v in r.metrics.items()
                    if k not in CSV_METRICS and _scalar(v)})
    metric_cols = known + extra
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([*_ID_COLUMNS, *config, *metric_cols])
    for r in runs:
        ids = [r.run_id, *(r.config.get(k) for k in _ID_COLUMNS[1:]),
               *(_config_text(k)(r) for k in config)]
        metrics = [r.metrics.get(k) for k in metric_cols]
        w.writerow([_csv_value(v) if _scalar(v) else "" for v in [*ids, *metrics]])
    return out.getvalue()
