"""Local worker processes that never outlive what they work for: `worker_pool`, the process
pool of `cosim sweep --jobs N` and of the study scripts.

A `concurrent.futures.ProcessPoolExecutor` alone has two ways of leaving work running that
nobody will collect. When its parent is interrupted (Ctrl-C, or SIGTERM raised as
KeyboardInterrupt: ``kill``, ``timeout``, a batch system's time limit), leaving the ``with``
block waits for the runs in progress to end, which may take hours; and when its parent is
killed outright (SIGKILL, the out-of-memory killer), its workers finish their current runs as
orphans. `worker_pool` closes both: every worker runs a daemon thread that checks its parent
every `WATCH_S` seconds and exits the worker (status `ORPHANED_EXIT`) once the parent is gone
(the worker has been re-parented), and a block left by an exception terminates the workers
(SIGTERM) instead of waiting for them, pending work cancelled. Only the runs in progress are
lost; a sweep writes each run atomically with its summary last, so nothing finished is lost
and the next invocation resumes. A block left normally waits for every worker, as before.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

__all__ = ["worker_pool", "WATCH_S", "ORPHANED_EXIT"]

#: How often a worker checks that its parent is still there (seconds).
WATCH_S = 0.5
#: The exit status of a worker whose parent has gone.
ORPHANED_EXIT = 3


def _watch_parent(parent: int, every_s: float) -> None:
    """Worker initializer: exit this process once `parent` is no longer its parent."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_s)
        os._exit(ORPHANED_EXIT)  # no cleanup: the run in progress is abandoned on purpose

    threading.Thread(target=watch, name="cosim-parent-watch", daemon=True).start()


@contextmanager
def worker_pool(workers: int, *, spawn: bool = True) -> Iterator[ProcessPoolExecutor]:
    """A pool of `workers` processes (``spawn``: clean interpreters; else the platform's
    default start method) whose workers end with this process, and which is terminated, not
    waited for, when the block raises (module docstring)."""
    ctx = multiprocessing.get_context("spawn") if spawn else None
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                               initializer=_watch_parent, initargs=(os.getpid(), WATCH_S))
    try:
        yield pool
    except BaseException:
        _terminate(pool)
        raise
    pool.shutdown(wait=True)


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop `pool` now: cancel what has not started, end the workers, reap them."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if terminate is not None:
        terminate()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(timeout=5)
