"""Workloads read once per process: what `cosim.experiment.prepare` reads its traces through.

A sweep reads the same trace for every run: once per run when it checks the spec, and again
in the worker that runs it (KTH-SP2's 28,475 jobs take 0.2 s to read, 200,000 jobs 1.7 s).
`WorkloadCache.read` calls a reader (`read_swf`, `read_batsim`) the first time and returns the
same workload afterwards for the same file — the same path and the same bytes (a BLAKE2
digest of its content: about 1 GB/s, so a file rewritten in place, even within a clock tick
and at the same size, is read again) — read with the same options, handing the warnings the
read gave to each caller in the same order. A workload is immutable (frozen dataclasses, tuples of jobs), so runs can share it. What
cannot be read is not kept (the next caller gets the same error), nor is a file whose bytes
changed while it was read; a path that is not a regular file (a FIFO, ``/dev/stdin``) is
read every time. The cache keeps the `KEEP` most
recently used workloads; `WORKLOADS` is the process's (each worker process of a sweep has
its own).
"""

from __future__ import annotations

import os
import stat
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

__all__ = ["WorkloadCache", "WORKLOADS", "KEEP"]

#: Workloads kept at most (a 200,000-job workload holds about 140 MB)
KEEP = 4


class WorkloadCache:
    """The workloads a process has read (module docstring), the least recently used first."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._kept: OrderedDict[tuple, tuple[Any, tuple[str, ...]]] = OrderedDict()
        self.reads = 0  # calls of a reader (not answered from the cache)

    def read(self, reader: Callable[..., Any], path: str | os.PathLike[str],
             warn: Callable[[str], None] | None = None, **options: Any) -> Any:
        """``reader(path, warn=warn, **options)``, from the cache when the same file was read
        with the same options before."""
        digest = _digest(path) if self.keep > 0 else None
        if digest is None:
            self.reads += 1
            return reader(path, warn=warn, **options)  # (its error, or a stream read once)
        # the path as given: the workload and its warnings name it so
        key = (reader.__module__, reader.__qualname__, os.fspath(path), digest,
               tuple(sorted(options.items())))
        kept = self._kept.pop(key, None)
        if kept is None:
            said: list[str] = []
            self.reads += 1
            kept = (reader(path, warn=said.append, **options), tuple(said))
            if _digest(path) != digest:  # rewritten while it was read: not kept
                for w in kept[1] if warn is not None else ():
                    warn(w)
                return kept[0]
        self._kept[key] = kept
        while len(self._kept) > self.keep:
            self._kept.popitem(last=False)
        if warn is not None:
            for w in kept[1]:
                warn(w)
        return kept[0]

    def clear(self) -> None:
        """Forget every workload."""
        self._kept.clear()


def _digest(path: str | os.PathLike[str]) -> str | None:
    """The BLAKE2 digest of a regular file's bytes; None for anything else or an error."""
    import hashlib

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # (opening a FIFO would consume it)
            return None
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "blake2b").hexdigest()
    except OSError:
        return None


#: The process's cache (`cosim.experiment.prepare` reads through it)
WORKLOADS = WorkloadCache()
