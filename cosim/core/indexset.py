"""A compact, immutable set of non-negative integers stored as runs: hosts and PEs of a job.

`IndexSet` holds sorted distinct indices as maximal runs ``(first, count)`` of consecutive
values, so the 450 hosts of a first-fit allocation cost two integers, not 450 (DESIGN §6:
"PE sets as ranges or integer arrays, never one object per (job, host)"). It is a
`Sequence[int]` in ascending order — ``len``, indexing, iteration, ``in`` (binary search over
the runs) — compares equal to any sequence with the same elements in the same order (a tuple,
a list, another `IndexSet`), hashes like the tuple of its elements, pickles, and converts to
a numpy ``int64`` array without a Python loop. Build it with `IndexSet.of` (any iterable,
sorted and de-duplicated for you), `IndexSet.from_sorted` (a numpy array already sorted and
distinct: the fast path) or `IndexSet.from_runs`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np

__all__ = ["IndexSet", "EMPTY", "sorted_counts"]

_MANY_RUNS = 64  # above this many runs in all, set algebra goes through sorted arrays


class IndexSet(Sequence[int]):
    """Sorted distinct non-negative integers as runs (see the module docstring)."""

    __slots__ = ("_first", "_count", "_len", "_cum", "_runs")

    def __init__(self, first: tuple[int, ...] = (), count: tuple[int, ...] = ()) -> None:
        # trusted: maximal runs, ascending, counts >= 1 (use the class methods to build one)
        self._first = first
        self._count = count
        self._len = sum(count)
        self._cum: tuple[int, ...] | None = None
        self._runs: tuple[tuple[int, int], ...] | None = None

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_sorted(cls, values: np.ndarray | Sequence[int]) -> IndexSet:
        """From ascending distinct values (not checked): the fast path for numpy arrays."""
        a = np.asarray(values, dtype=np.int64)
        n = a.size
        if n == 0:
            return EMPTY
        first, last = int(a[0]), int(a[-1])
        if last - first + 1 == n:  # one run: the usual first-fit allocation
            return cls((first,), (n,))
        if n <= 64:  # a short list: plain Python beats four numpy calls
            firsts, counts = [first], [1]
            prev = first
            for v in a[1:].tolist():
                if v == prev + 1:
                    counts[-1] += 1
                else:
                    firsts.append(v)
                    counts.append(1)
                prev = v
            return cls(tuple(firsts), tuple(counts))
        breaks = np.flatnonzero(np.diff(a) != 1) + 1
        starts = np.concatenate(([0], breaks))
        ends = np.concatenate((breaks, [a.size]))
        return cls(tuple(a[starts].tolist()), tuple((ends - starts).tolist()))

    @classmethod
    def of(cls, values: Iterable[int]) -> IndexSet:
        """From any iterable of non-negative integers (sorted and de-duplicated here)."""
        if isinstance(values, IndexSet):
            return values
        if isinstance(values, np.ndarray):
            a = np.unique(values.astype(np.int64, copy=False))
        else:
            a = np.unique(np.fromiter((int(v) for v in values), dtype=np.int64))
        if a.size and a[0] < 0:
            raise ValueError("indices must be >= 0")
        return cls.from_sorted(a)

    @classmethod
    def from_runs(cls, runs: Iterable[tuple[int, int]]) -> IndexSet:
        """From ``(first, count)`` pairs, ascending and non-overlapping; adjacent runs merge."""
        first: list[int] = []
        count: list[int] = []
        for f, c in runs:
            if c <= 0:
                continue
            if first and f < first[-1] + count[-1]:
                raise ValueError("runs must be ascending and must not overlap")
            if first and f == first[-1] + count[-1]:
                count[-1] += c
            else:
                first.append(int(f))
                count.append(int(c))
        if first and first[0] < 0:
            raise ValueError("indices must be >= 0")
        return cls(tuple(first), tuple(count)) if first else EMPTY

    @classmethod
    def range(cls, start: int, stop: int) -> IndexSet:
        """``start, start + 1, ..., stop - 1``."""
        return cls((start,), (stop - start,)) if stop > start else EMPTY

    # -- the runs -------------------------------------------------------------------------
    @property
    def runs(self) -> tuple[tuple[int, int], ...]:
        """``((first, count), ...)``: the maximal runs, ascending."""
        if self._runs is None:
            self._runs = tuple(zip(self._first, self._count))
        return self._runs

    def to_array(self) -> np.ndarray:
        """The elements as a new ``int64`` array."""
        if len(self._first) == 1:
            return np.arange(self._first[0], self._first[0] + self._count[0], dtype=np.int64)
        if not self._first:
            return np.zeros(0, dtype=np.int64)
        counts = np.asarray(self._count, dtype=np.int64)
        firsts = np.asarray(self._first, dtype=np.int64)
        offsets = np.repeat(firsts - (np.cumsum(counts) - counts), counts)
        return np.arange(self._len, dtype=np.int64) + offsets

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.to_array()
        return a if dtype is None else a.astype(dtype)

    # -- Sequence -------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._len

    def _cumulative(self) -> tuple[int, ...]:
        if self._cum is None:
            acc, out = 0, []
            for c in self._count:
                out.append(acc)
                acc += c
            self._cum = tuple(out)
        return self._cum

    @overload
    def __getitem__(self, i: int) -> int: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[int, ...]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self.to_array()[i].tolist())
        n = self._len
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("IndexSet index out of range")
        if len(self._first) == 1:
            return self._first[0] + i
        cum = self._cumulative()
        k = bisect_right(cum, i) - 1
        return self._first[k] + i - cum[k]

    def __iter__(self) -> Iterator[int]:
        for f, c in zip(self._first, self._count):
            yield from range(f, f + c)

    def __reversed__(self) -> Iterator[int]:
        for f, c in zip(reversed(self._first), reversed(self._count)):
            yield from range(f + c - 1, f - 1, -1)

    def __contains__(self, x: object) -> bool:
        if not isinstance(x, (int, np.integer)):
            return False
        k = bisect_right(self._first, int(x)) - 1
        return k >= 0 and int(x) < self._first[k] + self._count[k]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IndexSet):
            return self._first == other._first and self._count == other._count
        if isinstance(other, (tuple, list, range)):
            return len(other) == self._len and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        items = " ".join(str(f) if c == 1 else f"{f}-{f + c - 1}"
                         for f, c in zip(self._first, self._count))
        return f"IndexSet({items})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (IndexSet, (self._first, self._count))

    # -- set algebra (on the runs: O(runs), whatever the number of elements) -------------------
    def union(self, other: Iterable[int]) -> IndexSet:
        """Elements of either set."""
        o = IndexSet.of(other)
        if len(self._first) + len(o._first) > _MANY_RUNS:  # fragmented sets: in numpy
            merged = np.sort(np.concatenate((self.to_array(), o.to_array())), kind="mergesort")
            if merged.size:
                merged = merged[np.concatenate(([True], merged[1:] != merged[:-1]))]
            return IndexSet.from_sorted(merged)
        spans = sorted(zip(self._first + o._first, self._count + o._count))
        first: list[int] = []
        count: list[int] = []
        for f, c in spans:
            if first and f <= first[-1] + count[-1]:  # overlaps or touches the last run
                count[-1] = max(count[-1], f + c - first[-1])
            else:
                first.append(f)
                count.append(c)
        return IndexSet(tuple(first), tuple(count)) if first else EMPTY

    def difference(self, other: Iterable[int]) -> IndexSet:
        """Elements of this set that are not in `other`."""
        o = IndexSet.of(other)
        if not o._first or not self._first:
            return self
        if len(self._first) + len(o._first) > _MANY_RUNS:  # fragmented sets: in numpy
            a, b = self.to_array(), o.to_array()
            pos = np.minimum(np.searchsorted(b, a), b.size - 1)
            return IndexSet.from_sorted(a[b[pos] != a])
        out: list[tuple[int, int]] = []
        of, oc = o._first, o._count
        j, m = 0, len(of)
        for f, c in zip(self._first, self._count):
            a, b = f, f + c
            while j < m and of[j] + oc[j] <= a:  # runs of `other` wholly before this one
                j += 1
            k = j
            while a < b and k < m and of[k] < b:
                if of[k] > a:
                    out.append((a, of[k] - a))
                a = max(a, of[k] + oc[k])
                k += 1
            if a < b:
                out.append((a, b - a))
        return IndexSet.from_runs(out)

    def intersection(self, other: Iterable[int]) -> IndexSet:
        """Elements of both sets."""
        return self.difference(self.difference(other))

    def issubset(self, other: Iterable[int]) -> bool:
        """True if every element is in `other`."""
        return len(self.difference(other)) == 0

    def isdisjoint(self, other: Iterable[int]) -> bool:
        """True if no element is in `other`."""
        return len(self.difference(other)) == self._len


def sorted_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of an ascending array and how often each occurs (no hashing, no
    sort: what ``np.unique(values, return_counts=True)`` gives for sorted input)."""
    a = np.asarray(values)
    if a.size == 0:
        return a, np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], a[1:] != a[:-1])))
    return a[starts], np.diff(np.append(starts, a.size))


EMPTY = IndexSet()
