"""Local worker processes that never outlive what they work for: `worker_pool`, the process
pool of `cosim sweep --jobs N` and of the study scripts.

A `concurrent.futures.ProcessPoolExecutor` alone has two ways of leaving work running that
nobody will collect. When its parent is interrupted (Ctrl-C, or SIGTERM raised as
KeyboardInterrupt: ``kill``, ``timeout``, a batch system's time limit), leaving the ``with``
block waits for the runs in progress to end, which may take hours; and when its parent is
killed outright (SIGKILL, the out-of-memory killer), its workers finish their current runs as
orphans. `worker_pool` closes both: every worker runs a daemon thread that checks its parent
every `WATCH_S` seconds and exits the worker (status `ORPHANED_EXIT`) once the parent is gone
(the worker has been re-parented), and a block left by an interrupt terminates the workers
(SIGTERM, which they do not catch) instead of waiting for them, pending work cancelled. Only
the runs in progress are lost; a sweep writes each run atomically with its summary last, so
nothing finished is lost and the next invocation resumes. A block left by an error (a run
that failed) cancels what has not started and waits for the runs in progress, which finish
and keep their files; a block left normally waits for every worker, as before.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
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


def _watch_parent(origin: int, every_s: float, collect: tuple[int, ...]) -> None:
    """Worker initializer: SIGTERM ends this worker (a forked one inherits its parent's
    handler, which would turn it into KeyboardInterrupt), and so does the end of `origin`,
    the process that made the pool: checked now, then by a daemon thread that exits the
    worker once it has been re-parented, or (started by a fork server, which may outlive
    `origin`: its parent is not `origin`) once `origin` is gone. The worker collects garbage
    at `origin`'s thresholds (`collect`, as `gc.get_threshold` gave them there)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    gc.set_threshold(*collect)
    if os.getppid() != origin and not _alive(origin):
        os._exit(ORPHANED_EXIT)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent and (parent == origin or _alive(origin)):
            time.sleep(every_s)
        os._exit(ORPHANED_EXIT)  # no cleanup: the run in progress is abandoned on purpose

    threading.Thread(target=watch, name="cosim-parent-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def worker_pool(workers: int, *, context: str | None = "spawn"
                ) -> Iterator[ProcessPoolExecutor]:
    """A pool of `workers` processes started by `context` (``spawn``: clean interpreters;
    ``fork``, ``forkserver``; None: the platform's default) whose workers end with this
    process. Left by an interrupt (KeyboardInterrupt: Ctrl-C, or SIGTERM raised as one), the
    block terminates them; left by another exception, it cancels what has not started and
    waits for the runs in progress, which keep their results (module docstring)."""
    ctx = multiprocessing.get_context(context) if context is not None else None
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                               initializer=_watch_parent,
                               initargs=(os.getpid(), WATCH_S, gc.get_threshold()))
    try:
        yield pool
    except KeyboardInterrupt:
        _terminate(pool)
        raise
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop `pool` now: cancel what has not started, end the workers, reap them."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if terminate is not None:
        terminate()
    else:
        pool.shutdown(wait=False, cancel_futures=True)
        for p in processes:
            if p.is_alive():
                p.terminate()
    for p in processes:
        p.join(timeout=5)
        if p.is_alive():  # (SIGTERM caught after all)
            p.kill()
            p.join(timeout=5)
    pool.shutdown(wait=True)  # its manager thread, which sees the workers gone, ends too
