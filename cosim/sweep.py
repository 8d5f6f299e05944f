"""Parameter sweeps: ``cosim sweep SPEC.toml`` runs the Cartesian product of `cosim run` options.

A spec has a ``[base]`` table of options (the fields of `cosim.experiment.RunOptions`, with
their Python names: ``quantum_s``, ``technique_params = {min_chunk = "2"}``), a ``[grid]``
table whose values are lists (their Cartesian product, in the order written), optional
``[[zip]]`` tables whose lists vary together (equal lengths), and ``seeds = [..]`` or
``repeat = N`` (seeds 0..N-1). Every name and value is checked before anything runs, and each
run is prepared (its workload read, its platform loaded) too: a bad spec is one line naming
the file, the line and the key, exit 2.

Each run has an id derived from its configuration (`run_id`: 12 hex digits of a SHA-256 of
its workload and every other option that changes results and differs from its default), so
a run keeps its id when the spec is reordered or extended, or cosim gains an option. It writes its usual files under ``DIR/runs/<id>/``; its ``summary.json``, written
last, marks it finished, and its ``config.json`` says what it ran. ``DIR/sweep.csv`` has one
row per finished run — the varying options, then every metric — rewritten atomically after
each run. Running the same command again resumes: finished runs whose configuration matches
are skipped; missing or incomplete ones are run (a sweep killed at any moment loses no
finished run).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cosim.config import read_toml
from cosim.core.files import atomic_open
from cosim.errors import InputError
from cosim.experiment import OUTPUT_ONLY, RunOptions, option_text, option_value
from cosim.output.runfiles import csv_field

__all__ = ["SweepRun", "load_spec", "run_id", "run_sweep", "SWEEP_TABLE", "SWEEP_H5"]

SWEEP_TABLE = "sweep.csv"
SWEEP_H5 = "sweep.h5"
_SECTIONS = ("base", "grid", "zip", "seeds", "repeat")
_NOT_OPTIONS = frozenset(("out",))  # the sweep decides where each run writes


@dataclass(frozen=True, slots=True)
class SweepRun:
    """One run of a sweep: its id, options, and the options that vary across the sweep."""

    id: str
    opt: RunOptions
    varying: tuple[tuple[str, Any], ...]


def run_id(opt: RunOptions) -> str:
    """12 hex digits of a SHA-256 of the workload and every other option of `opt` that
    changes results and differs from its default: an option added to cosim later (with a
    default that keeps today's behaviour) leaves every id, so a sweep resumes across it."""
    defaults = RunOptions(workload=opt.workload)
    config = {f.name: _plain(getattr(opt, f.name)) for f in dataclasses.fields(RunOptions)
              if f.name not in OUTPUT_ONLY and (f.name == "workload" or getattr(
                  opt, f.name) != getattr(defaults, f.name))}
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]


def _plain(value: Any) -> Any:
    return dict(sorted(value.items())) if isinstance(value, Mapping) else value


def load_spec(path: str | Path) -> list[SweepRun]:
    """The runs of the spec at `path`, in grid order (module docstring); `InputError`
    ``FILE:LINE: field KEY: problem`` for a bad spec."""
    path = Path(path)
    doc = read_toml(path)
    text = path.read_text(encoding="utf-8")

    def fail(problem: str, key: str) -> InputError:
        return InputError(problem, file=path, line=_line_of(text, key.split(".")[-1]),
                          field=key)

    for key in doc:
        if key not in _SECTIONS:
            raise fail(f"unknown section or key (known: {', '.join(_SECTIONS)})", key)
    base = doc.get("base", {})
    grid = doc.get("grid", {})
    zips = doc.get("zip", [])
    if not isinstance(base, dict) or not isinstance(grid, dict) or not isinstance(zips, list):
        raise fail("[base] and [grid] are tables, [[zip]] a list of tables", "base")
    axes: list[list[tuple[tuple[str, Any], ...]]] = []  # each axis: its points
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise fail("a grid value is a non-empty list", f"grid.{key}")
        axes.append([((key, v),) for v in values])
    for i, group in enumerate(zips):
        lengths = {len(v) if isinstance(v, list) else -1 for v in group.values()}
        if not group or len(lengths) != 1 or -1 in lengths or 0 in lengths:
            raise fail("a [[zip]] table holds non-empty lists of one length", f"zip[{i}]")
        keys = list(group)
        axes.append([tuple((k, group[k][j]) for k in keys) for j in range(lengths.pop())])
    if "seeds" in doc and "repeat" in doc:
        raise fail("give seeds or repeat, not both", "repeat")
    seeds = doc.get("seeds", list(range(doc["repeat"])) if "repeat" in doc else None)
    if seeds is not None:
        if not isinstance(seeds, list) or not seeds or not all(
                isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
            raise fail("a non-empty list of integers >= 0 (or repeat = N >= 1)",
                       "seeds" if "seeds" in doc else "repeat")
        axes.append([(("seed", s),) for s in seeds])
    seen: set[str] = set()
    for points in axes:
        for key, _ in points[0]:
            if key in seen:
                raise fail("varies twice (in two axes)", key)
            seen.add(key)
    base_opts = {k: _value(k, v, fail, "base") for k, v in base.items()}
    runs: list[SweepRun] = []
    ids: dict[str, int] = {}
    for combo in itertools.product(*axes) if axes else [()]:
        varying = tuple(kv for point in combo for kv in point)
        options = dict(base_opts)
        for key, value in varying:
            options[key] = _value(key, value, fail, "grid")
        if "workload" not in options:
            raise fail("every run needs a workload (in [base] or [grid])", "base.workload")
        try:
            opt = RunOptions(**options)
        except (TypeError, ValueError) as exc:
            raise InputError(str(exc), file=path) from None
        rid = run_id(opt)
        if rid in ids:
            raise InputError(f"runs {ids[rid] + 1} and {len(runs) + 1} are the same run",
                             file=path)
        ids[rid] = len(runs)
        runs.append(SweepRun(id=rid, opt=opt, varying=tuple(
            (k, _plain(getattr(opt, k))) for k, _ in varying)))
    return runs


def _value(key: str, value: Any, fail: Callable[[str, str], InputError], section: str) -> Any:
    """A spec value for option `key`, typed like the `RunOptions` field (`option_value`)."""
    where = f"{section}.{key}"
    try:
        return option_value(key, value, exclude=_NOT_OPTIONS, where=where)
    except InputError as exc:
        raise fail(exc.problem, where) from None


def _line_of(text: str, key: str) -> int | None:
    """The first line of `text` where `key` is assigned or a table named (for messages)."""
    pattern = re.compile(rf"^\s*(\[+\s*{re.escape(key)}\s*\]+|\"?{re.escape(key)}\"?\s*=)")
    for n, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return n
    return None


def finished(run_dir: Path, rid: str) -> dict | None:
    """The summary of a finished run in `run_dir` whose configuration is run `rid`'s, or None
    (missing, incomplete, or another configuration)."""
    try:
        config = json.loads((run_dir / "config.json").read_text())
        summary = json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    return summary if config.get("id") == rid else None


def execute_run(opt: RunOptions, run_dir: Path, argv: Sequence[str] = (), *,
                comm: Any = None, rank0_apps: bool = False) -> dict:
    """Prepare, simulate and write one run into `run_dir` (summary.json last); its summary.
    A module-level function: worker processes (``--jobs N``) run it. `comm`: the run's MPI
    group (``--ranks-per-run``), whose other ranks serve it (`cosim.experiment.serve_als`);
    `rank0_apps`: this rank simulates apps too."""
    from cosim.experiment import execute, prepare, write_outputs
    from cosim.output.runfiles import write_summary

    record = execute(prepare(opt), comm=comm, rank0_apps=rank0_apps)
    write_outputs(record, run_dir, run_id=run_dir.name, argv=list(argv), summary=False)
    write_summary(run_dir / "summary.json", record.summary)
    return record.summary


def run_sweep(runs: Sequence[SweepRun], out: Path, *,
              execute_run: Callable[[RunOptions, Path], dict] = execute_run, jobs: int = 1,
              part: tuple[int, int] | None = None, executor: Any = None,
              progress: Callable[[int, int, int, float], None] | None = None) -> list[dict]:
    """Run every unfinished run of `runs` into ``out/runs/<id>/`` with `execute_run(opt,
    run_dir) -> summary` (which writes the run's files, summary.json last), on `jobs` local
    worker processes (``spawn``: clean interpreters; runs handed out as workers free up,
    longest predicted first; an interrupt or an error ends them at once, and they end
    with this process if it is killed: `cosim.core.workers`), rewriting ``out/sweep.csv`` as each finishes; returns the
    summaries of the runs done here, in spec order. `part` ``(i, n)``: only runs i, i + n,
    i + 2n, ... (1-based, spec order) — a job array's share; the table still lists every
    finished run of the spec, whichever part ran it. `executor`: run them there instead
    (MPI ranks, `cosim sweep` under ``mpiexec``). `progress(done, total, skipped,
    elapsed_s)` is told after each run (counts over this part's runs)."""
    out.mkdir(parents=True, exist_ok=True)
    mine = list(runs) if part is None else list(runs)[part[0] - 1::part[1]]
    summaries = _finished_all(runs, out)
    todo = [r for r in mine if r.id not in summaries]
    skipped = len(mine) - len(todo)
    t0 = time.perf_counter()
    if progress is not None:
        progress(skipped, len(mine), skipped, 0.0)

    def done(r: SweepRun, summary: dict) -> None:
        summaries[r.id] = summary
        _write_table(out / SWEEP_TABLE, runs, summaries)
        if progress is not None:
            progress(sum(1 for m in mine if m.id in summaries), len(mine), skipped,
                     time.perf_counter() - t0)

    work = [(r, _start_run(r, out)) for r in sorted(todo, key=_predicted_cost, reverse=True)]
    if executor is not None:
        _on_executor(executor, work, execute_run, done)
    elif jobs <= 1 or len(work) <= 1:
        for r, (opt, run_dir) in work:
            done(r, execute_run(opt, run_dir))
    else:
        from cosim.core.workers import worker_pool

        with worker_pool(min(jobs, len(work))) as pool:  # interrupted: workers end too
            _on_executor(pool, work, execute_run, done)
    summaries = _finished_all(runs, out)  # with what other parts finished meanwhile
    _write_table(out / SWEEP_TABLE, runs, summaries)
    return [summaries[r.id] for r in mine]


def _on_executor(executor: Any, work: list, execute_run: Callable,
                 done: Callable[[SweepRun, dict], None]) -> None:
    """Hand every run of `work` to `executor` (a `concurrent.futures.Executor`: local
    processes, or MPI ranks through `mpi4py.futures`) and report each as it finishes."""
    from concurrent.futures import FIRST_COMPLETED, wait

    pending = {executor.submit(execute_run, opt, run_dir): r for r, (opt, run_dir) in work}
    try:
        while pending:
            finished_now, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished_now:
                done(pending.pop(f), f.result())
    except BaseException:
        for f in pending:
            f.cancel()
        raise


def _finished_all(runs: Sequence[SweepRun], out: Path) -> dict[str, dict]:
    """The summaries of the finished runs of `runs` in `out`, by id."""
    found = {r.id: finished(out / "runs" / r.id, r.id) for r in runs}
    return {k: s for k, s in found.items() if s is not None}


def _start_run(r: SweepRun, out: Path) -> tuple[RunOptions, Path]:
    """The run's directory with its config.json (what it runs), and its options there."""
    run_dir = out / "runs" / r.id
    run_dir.mkdir(parents=True, exist_ok=True)
    with atomic_open(run_dir / "config.json") as fh:
        json.dump({"id": r.id, "varying": dict(r.varying),
                   "options": {f.name: _plain(getattr(r.opt, f.name))
                               for f in dataclasses.fields(RunOptions)}}, fh, indent=1)
    return dataclasses.replace(r.opt, out=str(run_dir)), run_dir


def _predicted_cost(r: SweepRun) -> tuple:
    """A run's predicted cost, for handing out the longest first: the size of its workload
    file, then co-simulated techniques (SS, FSC, ... chunk by chunk) before the others. Ties
    keep the spec order (a stable sort)."""
    try:
        size = Path(r.opt.workload).stat().st_size
    except OSError:
        size = 0
    return (size, r.opt.technique in ("SS", "FSC", "mFSC"))


def _write_table(path: Path, runs: Sequence[SweepRun], summaries: Mapping[str, dict]) -> None:
    """``sweep.csv`` and ``sweep.h5`` (`SWEEP_H5`, beside it): a row per finished run (spec
    order): id, the varying options, then every scalar metric of its summary."""
    from cosim.output.hdf5 import write_table

    done = [r for r in runs if r.id in summaries]
    keys = list(dict.fromkeys(k for r in runs for k, _ in r.varying))
    metrics = list(dict.fromkeys(k for r in done for k, v in summaries[r.id].items()
                                 if isinstance(v, (int, float, type(None)))
                                 and not isinstance(v, bool) and k != "wall_s"))
    columns: dict[str, list] = {"id": [r.id for r in done]}
    for k in keys:
        columns[k] = [option_text(dict(r.varying).get(k)) for r in done]
    for m in metrics:
        columns[m] = [summaries[r.id].get(m) for r in done]
    with atomic_open(path) as fh:
        fh.write(",".join(columns) + "\n")
        for i in range(len(done)):
            fh.write(",".join(_cell(col[i]) for col in columns.values()) + "\n")
    write_table(path.with_name(SWEEP_H5), "sweep", columns)


def _cell(value: Any) -> str:
    return "" if value is None else csv_field(str(value))
