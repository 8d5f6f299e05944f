"""The row formatter of the output files (`cosim.output.textrows`): the compiled formatter
gives the text of the Python one, which gives what `format_ticks` and `str` give, field by
field."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.core.clock import format_ticks
from cosim.output import textrows

compiled = pytest.mark.skipif(
    textrows._text is None,
    reason="the compiled formatter was not built on this machine (setup.py: no C compiler or "
           "Python headers at install); cosim writes its rows in Python, tested everywhere")

I64 = st.integers(-(2**63), 2**63 - 1)
VALUES = st.one_of(I64, st.sampled_from([0, 1, -1, 10**9, 1_500_000_000, -1_500_000_001,
                                         2**63 - 1, -(2**63), 12_000_000_000]))


@st.composite
def tables(draw):
    n = draw(st.integers(0, 12))
    columns, expected = [], []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["ticks", "ints", "text", "huge", "attr", "sparse"]))
        values = draw(st.lists(st.one_of(VALUES, st.none()), min_size=n, max_size=n))
        blank = draw(st.sampled_from(["", "-1", "é"]))
        if kind == "text":
            texts = draw(st.lists(st.text(max_size=4), min_size=n, max_size=n))
            columns.append(texts)
            expected.append(texts)
            continue
        if kind == "sparse":  # the rows of `where` say their number
            where = sorted(draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n)))
            columns.append(textrows.sparse(n, np.array(where, dtype=np.int64), str))
            expected.append([str(i) if i in where else "" for i in range(n)])
            continue
        if kind == "attr":  # ticks of objects: any int, huge, or None (an empty field)
            if draw(st.booleans()):
                values = [None if v is None else v * 2**64 for v in values]
            columns.append(textrows.tick_attr([SimpleNamespace(x=v) for v in values], "x"))
            expected.append(["" if v is None else format_ticks(v) for v in values])
            continue
        if kind == "huge":  # past int64: the column falls back to texts
            values = [None if v is None else v * 2**64 + 1 for v in values]
        fmt = str if kind == "ints" else format_ticks
        columns.append((textrows.ints if kind == "ints" else textrows.ticks)(values, blank))
        expected.append([blank if v is None else fmt(v) for v in values])
    return n, columns, expected


@settings(max_examples=300, deadline=None)
@given(tables(), st.sampled_from([",", " ", "\t", ";;"]))
def test_the_python_rows_are_the_fields_joined(table, sep):
    n, columns, expected = table
    want = "".join(sep.join(fields) + "\n" for fields in zip(*expected)) if expected else \
        "\n" * n
    assert textrows._rows_python(columns, n, sep) == want


@compiled
@settings(max_examples=500, deadline=None)
@given(tables(), st.sampled_from([",", " ", "\t", ";;"]))
def test_the_compiled_rows_are_the_python_rows(table, sep):
    n, columns, _ = table
    assert textrows._text.rows(columns, n, sep) == textrows._rows_python(columns, n, sep)


def test_columns_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="different lengths"):
        textrows.rows([textrows.ints([1, 2]), ["a"]], ",")


@compiled
def test_the_compiled_formatter_checks_what_it_is_given():
    with pytest.raises(ValueError, match="int64 values"):
        textrows._text.rows([textrows.ints([1, 2])], 3, ",")
    with pytest.raises(TypeError, match="not a str"):
        textrows._text.rows([["a", 5]], 2, ",")
    for values in (np.array([1.5, 2.0]), np.array([1, 2], dtype=">i8"),
                   np.array([1, 2], dtype=np.uint64)):  # only native int64 is formatted
        with pytest.raises(ValueError, match="native int64"):
            textrows._text.rows([(0, values, None, "")], 2, ",")
    with pytest.raises(ValueError, match="native int64"):  # no n * 8 overflow
        textrows._text.rows([(1, np.zeros(0, np.int64), None, "")], 2**61, ",")
    with pytest.raises(TypeError, match="a list of str or a tuple"):
        textrows._text.rows([np.zeros(2, np.int64)], 2, ",")


def test_distinct_makes_each_value_once_and_every_nan():
    calls = []

    def text(v):
        calls.append(v)
        return f"<{v}>"

    nan = float("nan")
    assert textrows.distinct([1.0, nan, 1.0, float("nan"), -1], text) == [
        "<1.0>", "<nan>", "<1.0>", "<nan>", "<-1>"]
    assert calls.count(1.0) == 1
