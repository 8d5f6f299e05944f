"""cosim from Python: build a run from options, simulate it, read its tables, write its files.

For notebooks and scripts; ``cosim run`` does the same through `cosim.experiment`. Options
are those of ``cosim run`` and of sweep specs, by their `RunOptions` names (``hosts``,
``batch``, ``priority``, ``technique``, ``technique_params`` as a dict, ``rca``, ``seed``, …),
as keywords or a mapping; an unknown or ill-typed one is an `InputError` naming it, and every
input is checked before anything is simulated::

    >>> from cosim import api
    >>> result = api.simulate(workload=api.trace("lublin_256.swf.gz"), batch="conservative")
    >>> result.metrics["jobs"], result.summary["hosts"]
    (10000, 256)
    >>> jobs = result.jobs                     # a numpy structured array, one row per job
    >>> float(jobs["wait_s"].mean()) == result.metrics["mean_wait_s"]
    True
    >>> times, queued = result.series()["queued"]   # step functions over time (ticks, ns)
    >>> easy = api.simulate({"workload": api.trace("lublin_256.swf.gz"), "batch": "easy"})
    >>> easy.metrics["mean_wait_s"] < result.metrics["mean_wait_s"]
    True

``result.write(directory)`` writes what ``cosim run --out`` writes (``jobs.csv``,
``schedule.swf``, ``results.h5``, ``summary.json``; the OTF2 trace and plots when asked), and
``result.to_pandas("jobs")`` gives a table as a DataFrame where pandas is installed. The runs
of a ``results.h5`` (of this API, ``cosim run`` or ``cosim sweep``) come back with `read`, and
`frame` turns any of their tables into a DataFrame with text as ``str`` (h5py returns the
file's fixed-width strings as ``bytes``). Times in the
tables are integer ticks (nanoseconds, `cosim.core.clock.TICKS_PER_SECOND`); columns ending in
``_s`` are seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from cosim.errors import InputError
from cosim.experiment import RunOptions, RunRecord, execute, option_value, prepare, tables_of
from cosim.paths import TRACES_DIR

__all__ = ["Result", "frame", "options", "read", "simulate", "trace"]

TABLES = ("jobs", "allocations", "workers", "chunks")


def trace(name: str) -> str:
    """The path of a built-in trace (``traces/README.md`` lists them), e.g.
    ``trace("KTH-SP2-1996-2.1-cln.swf.gz")``; `InputError` for an unknown name."""
    path = TRACES_DIR / name
    if not path.is_file():
        known = sorted(p.name for p in TRACES_DIR.iterdir() if p.suffix in (".swf", ".gz"))
        raise InputError(f"no built-in trace {name!r} (known: {', '.join(known)})",
                         field="trace")
    return str(path)


def options(spec: Mapping[str, Any] | None = None, /, **values: Any) -> RunOptions:
    """`RunOptions` from a mapping and/or keywords (keywords win), each value checked and typed
    as the sweep specs' are (``"0.5"`` or ``0.5`` for a float, a dict for
    ``technique_params``); ``workload`` is required, ``out`` is `Result.write`'s argument."""
    given = {**(spec or {}), **values}
    if "workload" not in given:
        raise InputError("a run needs a workload (an SWF file; `trace(name)` for the "
                         "built-in ones)", field="workload")
    typed = {k: option_value(k, v, exclude=frozenset({"out"})) for k, v in given.items()}
    return RunOptions(**typed)


def simulate(spec: Mapping[str, Any] | RunOptions | None = None, /, *,
             warn: Callable[[str], None] | None = None, **values: Any) -> Result:
    """Check the options (`options`), read the inputs and simulate the run in this process;
    `warn` receives the one-line warnings ``cosim run`` prints (default: `warnings.warn`)."""
    if warn is None:
        import warnings

        def warn(message: str) -> None:
            warnings.warn(message, stacklevel=3)
    if isinstance(spec, RunOptions):
        from dataclasses import replace

        opt = replace(spec, **{k: option_value(k, v, exclude=frozenset({"out"}))
                               for k, v in values.items()})
    else:
        opt = options(spec, **values)
    record = execute(prepare(opt, warn=warn))
    return Result(record=record, run_id=Path(opt.workload).name.split(".")[0])


def read(path: str | Path) -> dict[str, Any]:
    """The runs of a ``results.h5`` by run id, as `cosim.output.tables.RunTables` (their
    ``jobs``, ``allocations``, ``workers``, ``chunks``, ``metrics``, ``config``, ``stats``)."""
    from cosim.output.hdf5 import read_results

    return {t.run_id: t for t in read_results(path)}


def frame(tables: Any, table: str = "jobs") -> Any:
    """Table `table` (``jobs``, ``allocations``, ``workers`` or ``chunks``) of `tables` (a
    `RunTables`, from `read` or `Result.tables`) as a pandas DataFrame, text columns as
    ``str``; `ImportError` with a hint where pandas is missing."""
    if table not in TABLES:
        raise InputError(f"unknown table {table!r} ({', '.join(TABLES)})", field="table")
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("frame and to_pandas need pandas (pip install pandas); the tables "
                          "themselves are numpy arrays: Result.jobs, …") from None
    data = getattr(tables, table)
    if data is None:
        raise InputError("no chunk table: simulate with chunks=True", field="table")
    out = pd.DataFrame(data)
    for name in out.columns:
        if data.dtype[name].kind == "S":
            out[name] = out[name].str.decode("utf-8")
    return out


@dataclass(frozen=True)
class Result:
    """A simulated run: its summary, metrics and tables (built on first use), and its files
    on demand. `record` is what `cosim.experiment.execute` returned."""

    record: RunRecord
    run_id: str

    @property
    def summary(self) -> dict[str, Any]:
        """What ``summary.json`` holds: the options, the metrics, ``stats`` (what the
        simulation determines) and ``execution`` (ranks, rounds, wall times)."""
        return self.record.summary

    @property
    def metrics(self) -> dict[str, Any]:
        """The run's metrics (`cosim.output.metrics`: utilization, mean wait, …)."""
        return self.record.metrics

    @cached_property
    def tables(self) -> Any:
        """The run as `cosim.output.tables.RunTables` (what results.h5 stores)."""
        return tables_of(self.record, self.run_id)

    @property
    def jobs(self) -> Any:
        """One row per job (`cosim.output.tables.JOB_DTYPE`)."""
        return self.tables.jobs

    @property
    def allocations(self) -> Any:
        """The allocation log: one row per interval a job held PEs of hosts."""
        return self.tables.allocations

    @property
    def workers(self) -> Any:
        """One row per PE of each app-driven job (empty for trace-only runs)."""
        return self.tables.workers

    @property
    def chunks(self) -> Any:
        """One row per chunk of the apps, when recorded (``chunks=True``), else None."""
        return self.tables.chunks

    def series(self) -> dict[str, tuple[Any, Any]]:
        """``busy_hosts``, ``busy_pes``, ``running`` and ``queued`` over time: ``(times,
        values)`` step functions (`cosim.output.tables.step_series`)."""
        from cosim.output.tables import step_series

        return step_series(self.tables)

    def to_pandas(self, table: str = "jobs") -> Any:
        """Table `table` (``jobs``, ``allocations``, ``workers`` or ``chunks``) as a pandas
        DataFrame, text columns as str (`frame`)."""
        return frame(self.tables, table)

    def write(self, out: str | Path, *, trace: str | None = None, plots: bool = False) -> Path:
        """Write the run's files into directory `out`, as ``cosim run --out`` does: jobs.csv,
        schedule.swf, results.h5, the OTF2 trace (`trace`: ``"batch"`` or ``"full"``; default
        the run's ``trace`` option), the plots (`plots`), and summary.json last. Returns
        `out`."""
        from dataclasses import replace

        from cosim.experiment import write_outputs
        from cosim.output.runfiles import write_summary

        out = Path(out)
        record = self.record
        if trace is not None:
            record = replace(record, opt=replace(record.opt, trace=trace))
        if record.opt.trace == "full" and self.tables.chunks is None and len(self.workers):
            # checked before any file is written: no partial output
            raise InputError("a full trace needs the apps' chunks: simulate with trace='full' "
                             "or chunks=True", field="trace")
        tables = write_outputs(record, out, run_id=self.run_id, summary=False)
        if plots:
            from cosim.output.plots import write_plots

            record.summary["plots"] = [str(p) for p in write_plots(out, [tables])]
        write_summary(out / "summary.json", record.summary)
        return out
