"""A generic discrete-event queue: a heap of ``(time, priority, key, seq, item)``; it knows no policy.

`EventQueue` orders events by time, then by a small integer `priority` (lower first; callers
name what it means, e.g. completions before starts), then by a caller-given `key` (a tuple of
ints such as ``(job_id,)``: rank-independent, never an ``id()`` or a string hash), and only then
by insertion order (`seq`), which never decides between two events whose (time, priority, key)
differ. Items are never compared. Cancelling is lazy: `cancel` marks a handle and the event is
dropped when it reaches the top, so `peek_time` may skip cancelled events but never returns a
time later than the earliest live event (DESIGN §4, §11: "Engine knows no policy", SimPy's
``schedule``/``step``).
"""

from __future__ import annotations

import heapq
from typing import Any, Generic, TypeVar

__all__ = ["EventQueue"]

T = TypeVar("T")


class EventQueue(Generic[T]):
    """Min-heap of events ordered by ``(time, priority, key, seq)``.

    Examples
    --------
    >>> q = EventQueue()
    >>> h = q.push(5, "b", priority=1, key=(2,))
    >>> _ = q.push(5, "a", priority=0, key=(9,))
    >>> q.pop()
    (5, 'a')
    """

    __slots__ = ("_heap", "_seq", "_cancelled")

    def __init__(self) -> None:
        self._heap: list[list[Any]] = []
        self._seq = 0
        self._cancelled = 0

    def push(self, time: int, item: T, *, priority: int = 0, key: tuple[int, ...] = ()) -> list[Any]:
        """Schedule `item` at `time`; returns a handle for `cancel`."""
        entry = [time, priority, key, self._seq, item, True]
        self._seq += 1
        heapq.heappush(self._heap, entry)
        return entry

    def cancel(self, handle: list[Any]) -> None:
        """Drop the event of `handle` (no effect if it was already popped or cancelled)."""
        if handle[5]:
            handle[5] = False
            self._cancelled += 1

    def _clean(self) -> None:
        heap = self._heap
        while heap and not heap[0][5]:
            heapq.heappop(heap)
            self._cancelled -= 1

    def peek_time(self) -> int | None:
        """Time of the earliest live event, or None when the queue is empty."""
        self._clean()
        return self._heap[0][0] if self._heap else None

    def pop(self) -> tuple[int, T]:
        """Remove and return the earliest live event as ``(time, item)``; IndexError if empty."""
        self._clean()
        entry = heapq.heappop(self._heap)
        entry[5] = False
        return entry[0], entry[4]

    def pop_until(self, time: int) -> list[tuple[int, T]]:
        """Remove and return every live event at or before `time`, in queue order."""
        out: list[tuple[int, T]] = []
        heap = self._heap
        while heap:
            entry = heap[0]
            if not entry[5]:
                heapq.heappop(heap)
                self._cancelled -= 1
                continue
            if entry[0] > time:
                break
            heapq.heappop(heap)
            entry[5] = False
            out.append((entry[0], entry[4]))
        return out

    def __len__(self) -> int:
        """Number of live events."""
        return len(self._heap) - self._cancelled

    def __bool__(self) -> bool:
        return len(self) > 0
