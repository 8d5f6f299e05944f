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
from itertools import accumulate
from typing import Any, overload

import numpy as np

__all__ = ["IndexSet", "EMPTY", "sorted_counts", "runs_text", "run_texts"]

_MANY_RUNS = 64  # above this many runs in all, set algebra goes through sorted arrays


class IndexSet(Sequence[int]):
    """Sorted distinct non-negative integers as runs (see the module docstring).

    The runs are kept as two tuples of Python ints, or — for a set of many runs built from a
    numpy array (a guest's PEs over a thousand hosts) — as two ``int64`` arrays, the other
    form made only when asked for: numpy work on such a set never goes through Python ints.
    """

    __slots__ = ("_f", "_c", "_fa", "_ca", "_n", "_len", "_cum", "_runs", "_arr", "_text")

    def __init__(self, first: tuple[int, ...] = (), count: tuple[int, ...] = ()) -> None:
        # trusted: maximal runs, ascending, counts >= 1 (use the class methods to build one)
        self._f: tuple[int, ...] | None = first
        self._c: tuple[int, ...] | None = count
        self._fa: np.ndarray | None = None
        self._ca: np.ndarray | None = None
        self._n = len(first)
        self._len = sum(count)
        self._cum: tuple[int, ...] | None = None
        self._runs: tuple[tuple[int, int], ...] | None = None
        self._arr: np.ndarray | None = None
        self._text: str | None = None

    @classmethod
    def _of_arrays(cls, first: np.ndarray, count: np.ndarray) -> IndexSet:
        """Trusted maximal runs as ``int64`` arrays (not copied: never mutate them)."""
        out = cls.__new__(cls)
        out._f = out._c = None
        out._fa, out._ca = first, count
        out._n = len(first)
        out._len = int(count.sum())
        out._cum = out._runs = out._arr = out._text = None
        return out

    # -- the two forms --------------------------------------------------------------------
    @property
    def _first(self) -> tuple[int, ...]:
        if self._f is None:
            self._f = tuple(self._fa.tolist())
        return self._f

    @property
    def _count(self) -> tuple[int, ...]:
        if self._c is None:
            self._c = tuple(self._ca.tolist())
        return self._c

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._fa is None:
            self._fa = np.array(self._f, dtype=np.int64)
            self._ca = np.array(self._c, dtype=np.int64)
        return self._fa, self._ca

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
        if len(starts) <= _MANY_RUNS:
            return cls(tuple(a[starts].tolist()), tuple((ends - starts).tolist()))
        return cls._of_arrays(a[starts], ends - starts)

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
    def from_run_arrays(cls, first: np.ndarray, count: np.ndarray) -> IndexSet:
        """From runs as two arrays, ascending and non-overlapping (not checked: the fast path
        of `from_runs`); empty runs are dropped, adjacent runs merge."""
        first = np.asarray(first, dtype=np.int64)
        count = np.asarray(count, dtype=np.int64)
        if not count.all():
            keep = count > 0
            first, count = first[keep], count[keep]
        if not len(first):
            return EMPTY
        new = np.ones(len(first), dtype=bool)
        new[1:] = first[1:] != first[:-1] + count[:-1]
        at = np.flatnonzero(new)
        if len(at) < len(first):
            first, count = first[at], np.add.reduceat(count, at)
        if len(first) <= _MANY_RUNS:
            return cls(tuple(first.tolist()), tuple(count.tolist()))
        return cls._of_arrays(first, count)

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

    def interval_text(self) -> str:
        """The runs as an interval set, ``"0-7 16 18-23"`` (Batsim's notation, the host lists
        of the run files), made once."""
        if self._text is None:
            self._text = runs_text(self._first, self._count)
        return self._text

    @property
    def n_runs(self) -> int:
        """How many maximal runs."""
        return self._n

    def run_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Read-only ``(firsts, counts)`` of the runs as ``int64`` arrays."""
        f, c = self._arrays()
        f.flags.writeable = False
        c.flags.writeable = False
        return f, c

    def to_array(self) -> np.ndarray:
        """The elements as an ``int64`` array: a new one, or for a set of many runs (the
        array form) one kept with the set and read-only."""
        if self._n == 1:
            f = self._first[0]
            return np.arange(f, f + self._len, dtype=np.int64)
        if not self._n:
            return np.zeros(0, dtype=np.int64)
        if self._arr is not None:
            return self._arr
        firsts, counts = self._arrays()
        offsets = np.repeat(firsts - (np.cumsum(counts) - counts), counts)
        out = np.arange(self._len, dtype=np.int64) + offsets
        if self._f is None:
            out.flags.writeable = False
            self._arr = out
        return out

    def block_counts(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(blocks, counts)``: the blocks of `k` consecutive integers (block ``b`` holds
        ``b k .. b k + k - 1``: the hosts of PEs on `k`-core hosts) that hold elements,
        ascending, and how many each holds — from the runs, in O(runs + blocks) numpy work,
        for a set of many runs; from the elements otherwise."""
        if self._n <= _MANY_RUNS:
            return sorted_counts(self.to_array() // k)
        f, c = self._arrays()
        last = f + c - 1
        b0, b1 = f // k, last // k
        one = b0 == b1
        if one.all():  # every run inside one block (a block may hold several runs)
            at = np.flatnonzero(np.concatenate(([True], b0[1:] != b0[:-1])))
            return b0[at], np.add.reduceat(c, at)
        span = ~one
        n = b1[span] - b0[span] - 1  # the full blocks inside a run
        full = np.repeat(b0[span] + 1 - np.cumsum(n) + n, n) + np.arange(int(n.sum()))
        blocks = np.concatenate((b0[one], b0[span], b1[span], full))
        count = np.concatenate((c[one], k - f[span] % k, last[span] % k + 1,
                                np.full(len(full), k, dtype=np.int64)))
        order = np.argsort(blocks, kind="stable")
        blocks, count = blocks[order], count[order]
        at = np.flatnonzero(np.concatenate(([True], blocks[1:] != blocks[:-1])))
        return blocks[at], np.add.reduceat(count, at)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.to_array()
        return a if dtype is None else a.astype(dtype)

    # -- Sequence -------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._len

    def _cumulative(self) -> tuple[int, ...]:
        if self._cum is None:
            self._cum = tuple(accumulate(self._count, initial=0))[:-1]
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
        if self._f is None:  # the array form
            if i == 0:
                return int(self._fa[0])
            if i == n - 1:
                return int(self._fa[-1] + self._ca[-1] - 1)
        elif self._n == 1 or i == 0:
            return self._f[0] + i
        elif i == n - 1:
            return self._f[-1] + self._c[-1] - 1
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
        x = int(x)
        if self._f is None:
            k = int(np.searchsorted(self._fa, x, side="right")) - 1
            return k >= 0 and x < int(self._fa[k] + self._ca[k])
        k = bisect_right(self._f, x) - 1
        return k >= 0 and x < self._f[k] + self._c[k]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IndexSet):
            if self._len != other._len or self._n != other._n:
                return False
            if self._f is not None and other._f is not None:
                return self._f == other._f and self._c == other._c
            (f1, c1), (f2, c2) = self._arrays(), other._arrays()
            return bool(np.array_equal(f1, f2) and np.array_equal(c1, c2))
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
        if self._f is None:
            return (IndexSet._of_arrays, (self._fa, self._ca))
        return (IndexSet, (self._f, self._c))

    # -- set algebra (on the runs: O(runs), whatever the number of elements) -------------------
    def union(self, other: Iterable[int]) -> IndexSet:
        """Elements of either set."""
        o = IndexSet.of(other)
        if self._n + o._n > _MANY_RUNS:  # fragmented sets: in numpy, on the runs
            if not o._n or not self._n:
                return self if o._n == 0 else o
            (f1, c1), (f2, c2) = self._arrays(), o._arrays()
            first = np.concatenate((f1, f2))
            end = np.concatenate((f1 + c1, f2 + c2))
            order = np.argsort(first, kind="stable")
            first, end = first[order], np.maximum.accumulate(end[order])
            new = np.empty(len(first), dtype=bool)  # a run not touching the ones before
            new[0] = True
            np.greater(first[1:], end[:-1], out=new[1:])
            at = np.flatnonzero(new)
            last = np.append(at[1:] - 1, len(first) - 1)
            return IndexSet._maximal(first[at], end[last] - first[at])
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
        if not o._n or not self._n:
            return self
        if self._n + o._n > _MANY_RUNS:  # fragmented sets: in numpy, on the elements
            if self == o:
                return EMPTY
            a, b = self.to_array(), o.to_array()
            lo, hi = int(a[0]), int(a[-1])
            if hi - lo < 8 * (a.size + b.size):  # a mask over the span of this set
                b = b[(b >= lo) & (b <= hi)]
                hit = np.zeros(hi - lo + 1, dtype=bool)
                hit[b - lo] = True
                return IndexSet.from_sorted(a[~hit[a - lo]])
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
        o = IndexSet.of(other)
        if self._n + o._n > _MANY_RUNS and self._n and o._n:  # each run inside one of other's
            (f1, c1), (f2, c2) = self._arrays(), o._arrays()
            k = np.searchsorted(f2, f1, side="right") - 1
            return bool(((k >= 0) & (f1 + c1 <= (f2 + c2)[np.maximum(k, 0)])).all())
        return len(self.difference(o)) == 0

    def isdisjoint(self, other: Iterable[int]) -> bool:
        """True if no element is in `other`."""
        return len(self.difference(other)) == self._len

    @classmethod
    def _maximal(cls, first: np.ndarray, count: np.ndarray) -> IndexSet:
        """Trusted maximal runs as arrays, in the form their number calls for."""
        if len(first) <= _MANY_RUNS:
            return cls(tuple(first.tolist()), tuple(count.tolist()))
        return cls._of_arrays(first, count)


def sorted_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of an ascending array and how often each occurs (no hashing, no
    sort: what ``np.unique(values, return_counts=True)`` gives for sorted input)."""
    a = np.asarray(values)
    if a.size == 0:
        return a, np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], a[1:] != a[:-1])))
    return a[starts], np.diff(np.append(starts, a.size))


EMPTY = IndexSet()


def runs_text(firsts: Sequence[int], counts: Sequence[int]) -> str:
    """Runs as an interval set, ``"0-7 16 18-23"`` (Batsim's notation): the `run_texts`
    joined by spaces."""
    return " ".join(run_texts(firsts, counts))


def run_texts(firsts: Sequence[int], counts: Sequence[int]) -> list[str]:
    """Each run of `counts[i]` values from `firsts[i]` as its value, or ``first-last``."""
    return [str(f) if n == 1 else f"{f}-{f + n - 1}" for f, n in zip(firsts, counts,
                                                                      strict=True)]
