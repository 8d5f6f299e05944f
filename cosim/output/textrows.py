"""Delimited text rows from columns: the body of ``jobs.csv``, ``batsim_jobs.csv`` and
``schedule.swf``, a column at a time.

A writer gathers each field of its rows as a column — `ticks` (exact decimal seconds,
`cosim.core.clock.format_ticks`), `ints` (or `tick_array` and `int_array` of columns it has
as int64 arrays, `cosim.output.columns`; `tick_attr` of an attribute of objects), or a list
of texts it made itself (`distinct` formats each distinct value once, `sparse` only the rows
that have one) — and `rows`
joins them: row i is every column's i-th text joined by the separator, then a newline. A
tick or integer column may mark rows whose field is a fixed text instead (``""`` for a job
that never started, ``-1`` for SWF's unknown). The rows are made by the compiled formatter
(cosim/output/_text.c) where it was built, else by `_rows_python`, which is its reference and
gives the same text (tests/test_textrows.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from cosim.core.clock import format_ticks

try:  # the compiled formatter (setup.py builds it where a C compiler is)
    from cosim.output import _text
except ImportError:  # pragma: no cover - exercised where the module was not built
    _text = None

__all__ = ["Column", "ticks", "ints", "tick_array", "int_array", "tick_attr",
           "distinct", "sparse", "rows", "TEXT_KERNEL"]

#: what formats the rows: "compiled" (cosim/output/_text.c) or "python"
TEXT_KERNEL = "compiled" if _text is not None else "python"

_TICKS, _INTS = 0, 1

#: a column: its texts, or (kind, int64 values, blank flags or None, the blanks' text)
Column = list[str] | tuple[int, np.ndarray, np.ndarray | None, str]


def _numbers(kind: int, values: Iterable[int | None], blank_text: str) -> Column:
    values = list(values)
    blank = None
    if None in values:
        blank = np.array([v is None for v in values], dtype=bool)
        values = [0 if v is None else v for v in values]
    try:
        a = np.array(values, dtype=np.int64) if values else np.zeros(0, dtype=np.int64)
    except OverflowError:  # beyond int64 (a PE-time of a huge machine): texts
        fmt = format_ticks if kind == _TICKS else str
        texts = [fmt(v) for v in values]
        for i in [] if blank is None else np.flatnonzero(blank).tolist():
            texts[i] = blank_text
        return texts
    return (kind, a, blank, blank_text)


def ticks(values: Iterable[int | None], blank_text: str = "") -> Column:
    """A column of tick values written as exact seconds; None writes `blank_text`."""
    return _numbers(_TICKS, values, blank_text)


def ints(values: Iterable[int | None], blank_text: str = "") -> Column:
    """A column of integers; None writes `blank_text`."""
    return _numbers(_INTS, values, blank_text)


def tick_attr(items: Sequence[Any], name: str) -> Column:
    """`ticks` of attribute `name` of each of `items` (None writes an empty field), read in
    one pass in C where every value is an int that fits int64."""
    get = attrgetter(name)
    try:
        return _array(_TICKS, np.fromiter(map(get, items), dtype=np.int64, count=len(items)),
                      None, "")
    except (OverflowError, TypeError, ValueError):  # None, huge or not an int: one by one
        return _numbers(_TICKS, map(get, items), "")


def _array(kind: int, values: np.ndarray, blank: np.ndarray | None, blank_text: str) -> Column:
    blank = None if blank is None or not blank.any() else np.ascontiguousarray(blank, bool)
    return (kind, np.ascontiguousarray(values, dtype=np.int64), blank, blank_text)


def tick_array(values: np.ndarray, blank: np.ndarray | None = None,
               blank_text: str = "") -> Column:
    """`ticks` of an int64 array; the rows where `blank` (booleans) is True write
    `blank_text`."""
    return _array(_TICKS, values, blank, blank_text)


def int_array(values: np.ndarray, blank: np.ndarray | None = None,
              blank_text: str = "") -> Column:
    """`ints` of an int64 array; the rows where `blank` is True write `blank_text`."""
    return _array(_INTS, values, blank, blank_text)


def distinct(values: Sequence[Any], text: Any) -> list[Any]:
    """``[text(v) for v in values]``, `text` called once per distinct value (a column of
    statuses, kinds, categories or memory sizes holds a handful; a NaN is found by identity,
    each NaN object made once)."""
    made = {v: text(v) for v in set(values)}
    return list(map(made.__getitem__, values))


def sparse(n: int, where: np.ndarray, text: Callable[[int], str]) -> list[str]:
    """A text column of `n` rows, empty but at the indices `where` (ascending), row i there
    ``text(i)``: a column most rows leave empty (RCA events, values, power) costs a pass over
    the rows that have one."""
    out = [""] * n
    for i in where.tolist():
        out[i] = text(i)
    return out


def rows(columns: Sequence[Column], sep: str) -> str:
    """The rows of `columns` (of equal lengths), each ended by a newline."""
    n = _length(columns)
    if _text is not None:
        return _text.rows(columns, n, sep)
    return _rows_python(columns, n, sep)


def _length(columns: Sequence[Column]) -> int:
    sizes = {len(c) if isinstance(c, list) else len(c[1]) for c in columns}
    if len(sizes) > 1:
        raise ValueError(f"columns of different lengths {sorted(sizes)}")
    return sizes.pop() if sizes else 0


def _texts(column: Column) -> list[str]:
    if isinstance(column, list):
        return column
    kind, values, blank, blank_text = column
    fmt: Any = format_ticks if kind == _TICKS else str
    out = [fmt(v) for v in values.tolist()]
    if blank is not None:
        for i in np.flatnonzero(blank).tolist():
            out[i] = blank_text
    return out


def _rows_python(columns: Sequence[Column], n: int, sep: str) -> str:
    """`rows` in Python: the reference of the compiled formatter."""
    if not columns:
        return "\n" * n
    return "".join(sep.join(fields) + "\n" for fields in zip(*map(_texts, columns),
                                                             strict=True))
