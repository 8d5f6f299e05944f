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

`usable_cpus` is how many processors this process may use (its affinity where the system
has one), for whatever sizes a pool by them. `forked_map` runs independent calls on a pool
of forked workers, which inherit the calls with the rest of the parent's state at the fork
(only the results are pickled back), for work that is the same wherever it runs, such as
drawing figures; its module-level state (`_CALLS` and the SIGTERM flags) is set only in its
own workers.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # multiprocessing and the process pool load when a pool is made (~50 ms)
    from concurrent.futures import ProcessPoolExecutor

__all__ = ["worker_pool", "forked_map", "usable_cpus", "WATCH_S", "ORPHANED_EXIT"]

#: How often a worker checks that its parent is still there (seconds).
WATCH_S = 0.5
#: The exit status of a worker whose parent has gone.
ORPHANED_EXIT = 3


def _watch_parent(origin: int, every_s: float, collect: tuple[int, ...],
                  setup: tuple[Callable[..., Any], tuple[Any, ...]] | None = None) -> None:
    """Worker initializer: SIGTERM ends this worker (a forked one inherits its parent's
    handler, which would turn it into KeyboardInterrupt), and so does the end of `origin`,
    the process that made the pool: checked now, then by a daemon thread that exits the
    worker once it has been re-parented, or (started by a fork server, which may outlive
    `origin`: its parent is not `origin`) once `origin` is gone. The worker collects garbage
    at `origin`'s thresholds (`collect`, as `gc.get_threshold` gave them there), then calls
    ``setup = (function, args)`` when given, and only then takes SIGTERM (a worker forked
    with it blocked, `forked_map`, gets one sent meanwhile now, with its own handler)."""
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
    if setup is not None:
        setup[0](*setup[1])
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def worker_pool(workers: int, *, context: str | None = "spawn",
                setup: tuple[Callable[..., Any], tuple[Any, ...]] | None = None
                ) -> Iterator[ProcessPoolExecutor]:
    """A pool of `workers` processes started by `context` (``spawn``: clean interpreters;
    ``fork``, ``forkserver``; None: the platform's default) whose workers end with this
    process. Left by an interrupt (KeyboardInterrupt: Ctrl-C, or SIGTERM raised as one), the
    block terminates them; left by another exception, it cancels what has not started and
    waits for the runs in progress, which keep their results (module docstring). `setup`:
    ``(function, args)`` each worker calls once started (pickled to it unless forked)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context(context) if context is not None else None
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                               initializer=_watch_parent,
                               initargs=(os.getpid(), WATCH_S, gc.get_threshold(), setup))
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
    pool.shutdown(wait=True)  # (the first shutdown already let its manager thread go)


def usable_cpus() -> int:
    """The processors this process may run on: its affinity set where the system has one,
    else the processor count (at least 1)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def forked_map(calls: Sequence[tuple[Callable[..., Any], tuple[Any, ...]]],
               workers: int) -> list[Any]:
    """``[f(*args) for f, args in calls]``, on a `worker_pool` of at most `workers` forked
    processes when that is more than one and the system forks (Linux: elsewhere forking a
    process that has loaded system frameworks is unsafe), else in this process. The workers
    inherit `calls` at the fork (`_keep`), so a call's function and arguments are neither
    pickled nor copied (large tables stay shared), only its index and its result are; the
    first call to raise raises here, after the calls in progress end. The workers are forked
    with SIGINT blocked and keep it so: a Ctrl-C reaches this process alone, whose
    `worker_pool` then ends them (SIGTERM: a call in progress unwinds, so a file it was
    writing leaves no temporary, then the worker exits), and none prints a traceback;
    SIGTERM is blocked too until a worker has its handler (`_keep`). A worker freezes what it
    inherits (`gc.freeze`), so its collections do not copy the parent's pages."""
    n = min(workers, len(calls))
    if n < 2 or not sys.platform.startswith("linux"):
        return [f(*args) for f, args in calls]
    with worker_pool(n, context="fork", setup=(_keep, (calls,))) as pool:
        # a fork pool starts its workers at the first submission: all of them in here
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            futures = [pool.submit(_call, k) for k in range(len(calls))]
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        return [f.result() for f in futures]


#: In a `forked_map` worker, the calls of the map that forked it (`_keep`); None elsewhere.
_CALLS: Sequence[tuple[Callable[..., Any], tuple[Any, ...]]] | None = None
#: In a `forked_map` worker, whether a call is running (`_call`, `_on_sigterm`), and whether
#: SIGTERM has come (the worker exits once the call has unwound).
_IN_CALL = False
_ENDING = False


class _Ended(BaseException):
    """SIGTERM reached a `forked_map` worker during a call: raised there, once, to unwind
    it (a file being written removes its temporary); the worker then exits (`_call`)."""


def _keep(calls: Sequence[tuple[Callable[..., Any], tuple[Any, ...]]]) -> None:
    """Worker setup of `forked_map`: keep the map's calls in this worker process, freeze what
    it inherited, and end on SIGTERM (`worker_pool` ending an interrupted map) once what its
    call was writing is cleaned up."""
    global _CALLS
    _CALLS = calls
    gc.freeze()
    signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum: int, _frame: Any) -> None:
    global _ENDING
    if not _IN_CALL:
        os._exit(128 + signum)
    if not _ENDING:  # (the pool may send it again: the first unwinding is left to finish)
        _ENDING = True
        raise _Ended


def _call(k: int) -> Any:
    """Call `k` of the map this worker serves (`forked_map`)."""
    global _IN_CALL
    assert _CALLS is not None, "not a forked_map worker"
    f, args = _CALLS[k]
    try:
        _IN_CALL = True
        return f(*args)
    finally:
        _IN_CALL = False
        if _ENDING:  # (also when a finalizer swallowed the `_Ended`)
            os._exit(128 + signal.SIGTERM)
