"""What the study scripts (``scripts/reproduce_*.py``) share: their worker count and output
folder, checked the same way.

`workers_and_out` turns ``--workers`` (None: the CPUs this process may use) and ``--out``
into a worker count and a created folder, or calls the script's `fail` with a one-line
message naming the option. `run_all` runs the simulations in a given order (the longest
first, so that a process pool's tail stays short) in-process or over a pool
(`cosim.core.workers.worker_pool`: its workers end with the script, and SIGTERM takes the
Ctrl-C path there), and returns each result under its task's index with the wall time taken. `sigterm_as_interrupt` makes
SIGTERM (``kill``, ``timeout``, a batch system's limits) take a script's Ctrl-C path, so that
its sweep stops its workers and finished runs stay. `load_script` imports a study script as
a module (for its tests).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cosim.core.collect import rare_collection
from cosim.core.workers import usable_cpus, worker_pool

__all__ = ["workers_and_out", "run_all", "load_script", "sigterm_as_interrupt"]


def workers_and_out(workers: int | None, out: str,
                    fail: Callable[[str], object]) -> tuple[int, Path]:
    """``(worker count, output folder)`` of a study script; `fail` on bad values."""
    if workers is None:
        workers = usable_cpus()
    if workers < 1:
        fail(f"--workers must be >= 1, got {workers}")
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--out: cannot create {path}: {exc.strerror}")
    return workers, path


def run_all(run: Callable[[Any], Any], tasks: Sequence[Any], order: Sequence[int],
            workers: int) -> tuple[dict[int, Any], float]:
    """``({task index: run(task)}, wall seconds)``, the tasks started in `order`."""
    wall0 = time.perf_counter()
    results: dict[int, Any] = {}
    with rare_collection():  # as `cosim` runs (its workers take the thresholds too)
        if workers == 1:
            for i in order:
                results[i] = run(tasks[i])
        else:
            n = min(workers, len(tasks))
            with sigterm_as_interrupt(), worker_pool(n, context=None) as pool:
                for i, r in zip(order, pool.map(run, [tasks[i] for i in order])):
                    results[i] = r
    return results, time.perf_counter() - wall0


def load_script(name: str) -> Any:
    """The module of ``scripts/<name>.py`` of this source checkout, or None when cosim is not
    run from one (the scripts are not installed)."""
    import importlib.util

    from cosim.paths import REPO_DIR

    script = REPO_DIR / "scripts" / f"{name}.py"
    if not script.exists():
        return None
    spec = importlib.util.spec_from_file_location(name, script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Inside the block (main thread only), SIGTERM raises KeyboardInterrupt as Ctrl-C does;
    the previous handler comes back after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)

