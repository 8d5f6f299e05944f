"""`IndexSet`: runs of indices behave exactly like the sorted tuple of their elements."""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.core.indexset import EMPTY, IndexSet, sorted_counts

sets = st.sets(st.integers(0, 300), max_size=80)


@given(sets)
def test_a_set_is_its_sorted_tuple(xs):
    s = IndexSet.of(xs)
    t = tuple(sorted(xs))
    assert s == t and tuple(s) == t and len(s) == len(t) and hash(s) == hash(t)
    assert s.to_array().tolist() == list(t) and np.asarray(s).tolist() == list(t)
    assert [s[i] for i in range(len(t))] == list(t) and list(reversed(s)) == list(t[::-1])
    if t:
        assert s[-1] == t[-1]
    assert all((x in s) == (x in xs) for x in range(-2, 305))
    assert pickle.loads(pickle.dumps(s)) == s
    assert IndexSet.from_sorted(np.array(t, dtype=np.int64)) == s == IndexSet.from_runs(s.runs)
    assert all(c >= 1 for _, c in s.runs)  # maximal runs: none touches the next
    assert all(f1 + c1 < f2 for (f1, c1), (f2, _) in zip(s.runs, s.runs[1:]))


@given(sets, sets)
def test_set_algebra_matches_python_sets(a, b):
    x, y = IndexSet.of(a), IndexSet.of(b)
    assert x.union(y) == tuple(sorted(a | b))
    assert x.difference(y) == tuple(sorted(a - b))
    assert x.issubset(y) == (a <= b) and x.isdisjoint(y) == a.isdisjoint(b)
    assert x.union(np.array(sorted(b), dtype=np.int64)) == tuple(sorted(a | b))


@given(st.lists(st.integers(0, 20), max_size=60))
def test_sorted_counts(values):
    a = np.sort(np.array(values, dtype=np.int64))
    v, c = sorted_counts(a)
    u, n = np.unique(a, return_counts=True)
    assert v.tolist() == u.tolist() and c.tolist() == n.tolist()


def test_empty_and_ranges():
    assert EMPTY == () and len(EMPTY) == 0 and IndexSet.range(3, 3) == ()
    assert IndexSet.range(2, 6) == (2, 3, 4, 5) and repr(IndexSet.of([1, 2, 3, 7])) == \
        "IndexSet(1-3 7)"


@given(st.sets(st.integers(0, 3000), max_size=400), st.sets(st.integers(0, 3000), max_size=400))
def test_fragmented_sets_take_the_array_path_with_the_same_results(a, b):
    x, y = IndexSet.of(a), IndexSet.of(b)
    assert x.union(y) == tuple(sorted(a | b))
    assert x.difference(y) == tuple(sorted(a - b))
    assert x.intersection(y) == tuple(sorted(a & b))


@given(st.sets(st.integers(0, 3000), min_size=200, max_size=600))
def test_a_set_of_many_runs_in_its_array_form_is_its_sorted_tuple(xs):
    s = IndexSet.from_sorted(np.array(sorted(xs), dtype=np.int64))
    t = tuple(sorted(xs))
    tuple_form = IndexSet.from_runs(s.runs)  # the same set held as tuples
    assert s == t and s == tuple_form and tuple_form == s and hash(s) == hash(t)
    assert s.n_runs == tuple_form.n_runs and len(s) == len(t)
    assert s.to_array().tolist() == list(t) and [s[i] for i in (0, 1, -2, -1)] == \
        [t[0], t[1], t[-2], t[-1]]
    assert all((x in s) == (x in xs) for x in range(-1, 3002, 7))
    assert pickle.loads(pickle.dumps(s)) == s and pickle.loads(pickle.dumps(s)).n_runs == s.n_runs
    f, c = s.run_arrays()
    assert list(zip(f.tolist(), c.tolist())) == list(s.runs)


@given(st.sets(st.integers(0, 10**6), min_size=40, max_size=200),
       st.sets(st.integers(0, 10**6), max_size=200), st.booleans())
def test_fragmented_sparse_sets_take_the_sorted_search_path_with_the_same_results(a, b, share):
    b = b | set(list(a)[::2]) if share else b  # half of a in b, or independent
    x, y = IndexSet.of(a), IndexSet.of(b)
    assert x.difference(y) == tuple(sorted(a - b)) and x.intersection(y) == tuple(sorted(a & b))
    assert x.difference(x) == () and x.issubset(x.union(y))


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4)), max_size=150))
def test_runs_given_as_arrays_are_the_runs_given_as_pairs(gaps_counts):
    first, at = [], 0
    for gap, n in gaps_counts:  # ascending, non-overlapping; some empty, some adjacent
        at += gap
        first.append(at)
        at += n
    counts = [n for _, n in gaps_counts]
    s = IndexSet.from_run_arrays(np.array(first, dtype=np.int64), np.array(counts))
    assert s == IndexSet.from_runs(zip(first, counts)) and s.n_runs == \
        IndexSet.from_runs(zip(first, counts)).n_runs


@settings(max_examples=80, deadline=None)
@given(st.sampled_from([1, 4, 16]), st.sets(st.integers(0, 299), max_size=40),
       st.sets(st.integers(0, 300 * 16 - 1), min_size=70, max_size=1500))
def test_counts_per_block_from_the_runs_equal_the_count_of_elements(k, full, scattered):
    # blocks of k: the hosts of PEs on k-core hosts (whole blocks and scattered elements)
    xs = {x for x in scattered if x < 300 * k} | {b * k + c for b in full for c in range(k)}
    s = IndexSet.of(sorted(xs))
    blocks, counts = s.block_counts(k)
    want = sorted_counts(np.array(sorted(xs), dtype=np.int64) // k)
    assert blocks.tolist() == want[0].tolist() and counts.tolist() == want[1].tolist()


def _from_gaps(gaps_counts):
    out, at = set(), 0
    for gap, n in gaps_counts:  # runs separated by a gap of at least one: all maximal
        at += gap
        out.update(range(at, at + n))
        at += n
    return out


runs_sets = st.lists(st.tuples(st.integers(1, 40), st.integers(1, 30)), min_size=66,
                     max_size=120).map(_from_gaps)


@given(runs_sets, runs_sets, st.booleans())
def test_fragmented_sets_of_long_runs_take_the_run_path_with_the_same_results(a, b, share):
    """Sets of many runs (a mate's PEs: some cores of each of many hosts) go through the
    vectorised run algebra; it equals Python's set algebra, subsets included."""
    b = b | set(sorted(a)[::3]) if share else b
    x, y = IndexSet.of(a), IndexSet.of(b)
    assert x.n_runs > 64  # the run path
    assert x.union(y) == tuple(sorted(a | b)) and y.union(x) == tuple(sorted(a | b))
    assert x.difference(y) == tuple(sorted(a - b)) and x.intersection(y) == tuple(sorted(a & b))
    assert x.issubset(y) == (a <= b) and x.issubset(x.union(y))
    assert x.difference(y).issubset(x) and not (a - b and x.issubset(y))
    assert x.isdisjoint(y) == a.isdisjoint(b)
    assert all(c >= 1 for _, c in x.union(y).runs)  # maximal runs: none touches the next
    u = x.union(y).runs
    assert all(f1 + c1 < f2 for (f1, c1), (f2, _) in zip(u, u[1:]))


@given(st.sets(st.integers(0, 60), max_size=30))
def test_the_interval_text_names_every_member_once_by_runs(values):
    """``"0-2 5 7-8"``: a run of one is its number, a longer one first-last, in order."""
    s = IndexSet.of(sorted(values))
    text = s.interval_text()
    members = []
    for item in text.split():
        first, _, last = item.partition("-")
        members.extend(range(int(first), int(last or first) + 1))
        assert not last or int(last) > int(first)
    assert members == sorted(values) and s.interval_text() is text  # made once
    assert len(text.split()) == s.n_runs
