"""The cyclic garbage collector while cosim runs: `rare_collection`, `no_collection`.

A run makes millions of acyclic objects (jobs, outcomes, events, rows). Under CPython's
default thresholds the cyclic collector walks the growing heap again and again: a tenth of a
200,000-job run. `rare_collection` raises the thresholds to `GC_THRESHOLD` for a block (the
CLI's commands, the study scripts' runs) and restores them after, however the block ends.
Collections still happen, a hundred times more rarely; no result depends on them. Worker
pools (`cosim.core.workers`) pass their maker's thresholds on to their workers.
`no_collection` pauses the collector for a loop that makes many objects and no cycles, and
hands them to the oldest generation as it ends, unwalked (`gc.freeze` then `gc.unfreeze`):
else the first allocation after it would walk them all in a young collection, for nothing
(a replay's 28,000 outcomes: 0.05-0.1 s). The objects made before the block, not yet in the
oldest generation, go with them: a cycle among them that is garbage already is freed at the
next full collection instead of a younger one (memory held a little longer, no result
changed). `ending_process` freezes the whole heap once a command is done, so that the
interpreter's exit, which runs full collections over every tracked object, walks none of
them (a KTH-SP2 run: 0.1-0.2 s of exit): for a process about to end, never for a library
caller.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["GC_THRESHOLD", "rare_collection", "no_collection", "ending_process"]

#: The collector's thresholds in a `rare_collection` block (`gc.set_threshold`)
GC_THRESHOLD = (100_000, 20, 100)


@contextmanager
def rare_collection() -> Iterator[None]:
    """The block collects cyclic garbage at `GC_THRESHOLD`; the thresholds before it after."""
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)


@contextmanager
def no_collection() -> Iterator[None]:
    """No cyclic garbage collection in the block, the collector as it was after it: for loops
    that make many objects and no cycles, where every collection walks the heap for nothing.
    The objects made in the block go to the oldest generation when it ends (the module
    docstring), unless some objects are frozen already (`gc.freeze` by the caller's program:
    `gc.unfreeze` would thaw those too)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if not gc.get_freeze_count():
                gc.freeze()  # every tracked object, young ones included, to the permanent
                gc.unfreeze()  # generation, then all of it back to the oldest
            gc.enable()


def ending_process() -> None:
    """Move every tracked object to the permanent generation (`gc.freeze`), for a process
    whose work is done: the full collections of the interpreter's exit then walk nothing.
    Cyclic garbage left then is not finalized: every file cosim writes is closed (and
    flushed) by then, and standard output and error are flushed by the exit itself."""
    gc.freeze()
