"""The compiled event loop of the OTF2 writer (cosim/output/_events.c) writes exactly what its
Python reference does: the same archive, byte for byte, for cosim's traces and for a
synthetic one with every kind of event (attributes, large message lengths, metrics of every
member type and of more members than the compiled loop takes, the package's own records
between them), and the same errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from otf2.enums import (
    GroupType,
    MetricMode,
    MetricOccurrence,
    MetricType,
    Paradigm,
    RecorderKind,
    Type,
)

from cosim.output import otf2_writer
from cosim.output.otf2_writer import Otf2Writer
from cosim.output.trace import write_trace
from cosim.testing.runs import malleable_tables, tiny_tables
from cosim.testing.tracecheck import check_trace

pytestmark = pytest.mark.skipif(otf2_writer._events is None,
                                reason="the compiled event loop was not built here (no C "
                                       "compiler): only the Python loop runs")


def _files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


def _both(tmp_path: Path, write, monkeypatch) -> tuple[dict, dict]:
    """The archive `write(path)` makes with the compiled loop, and with the Python loop."""
    write(tmp_path / "compiled")
    with monkeypatch.context() as m:
        m.setattr(otf2_writer, "_events", None)
        write(tmp_path / "python")
    return _files(tmp_path / "compiled"), _files(tmp_path / "python")


@pytest.mark.parametrize("make, level", [(tiny_tables, "full"), (tiny_tables, "batch"),
                                         (malleable_tables, "full")])
def test_cosim_traces_are_the_same_bytes(tmp_path, monkeypatch, make, level):
    tables = make()
    compiled, python = _both(tmp_path, lambda p: write_trace(p, tables, level=level),
                             monkeypatch)
    assert compiled == python and len(compiled) > 4
    check_trace(tmp_path / "compiled")


def _synthetic(path: Path, seed: int, n: int) -> None:
    """Two PE rows and a metric row with `n` random events of every kind."""
    rng = np.random.default_rng(seed)
    w = Otf2Writer(path)
    d = w.defs
    root = d.system_tree_node("cluster")
    locs = [d.location(f"PE{i}", group=d.location_group(f"PE{i}", system_tree_parent=root))
            for i in range(3)]
    for loc in locs:
        w.add_location(loc)
    d.group("PEs", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs[:2])
    world = d.comm("world", d.group("w", group_type=GroupType.COMM_GROUP,
                                    paradigm=Paradigm.MPI, members=[0, 1]))
    regions = [d.region(f"R{k}") for k in range(3)]
    attrs = [d.attribute(f"a{k}", "", Type.UINT64) for k in range(3)]
    types = (Type.UINT64, Type.INT64, Type.DOUBLE)

    def metric(m):
        members = [d.metric_member(f"m{k}", "", MetricType.OTHER, MetricMode.ABSOLUTE_NEXT,
                                   types[k % 3], unit="") for k in range(m)]
        return d.metric_class(members, MetricOccurrence.ASYNCHRONOUS, RecorderKind.ABSTRACT)

    small, wide = metric(3), metric(70)  # 70: more members than the compiled loop takes

    def values(m):
        return [int(rng.integers(0, 2**63)) * 2 + 1 if k % 3 == 0 else
                int(rng.integers(-2**63, 2**63)) if k % 3 == 1 else float(rng.normal())
                for k in range(m)]

    t = 0
    for loc in (0, 1):
        w.program_begin(loc, 0, "synthetic")
    for _ in range(n):
        t += int(rng.integers(0, 3))
        loc = int(rng.integers(0, 2))
        kind = int(rng.integers(0, 6))
        if kind == 0:
            r = regions[int(rng.integers(0, 3))]
            k = int(rng.integers(0, 4))
            w.enter(loc, t, r, [(attrs[j], int(rng.integers(0, 2**63)) * 2 + 1)
                                for j in range(k)] or None)
            w.leave(loc, t + int(rng.integers(0, 5)), r)
        elif kind in (1, 2):
            length = int(rng.integers(0, 2**63)) * 2 + 1
            tag = int(rng.integers(0, 2**32))
            (w.send if kind == 1 else w.recv)(loc, t, 1 - loc, world, tag, length)
        elif kind == 3:
            w.metric(2, t, small, values(3))
        elif kind == 4:
            w.metric(2, t, wide, values(70))
        else:
            w.program_end(loc, t)  # the package's records, between the others
            w.program_begin(loc, t, "again")
    for loc in (0, 1):
        w.program_end(loc, t + 10)
    w.close()


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 300))
def test_every_kind_of_event_gives_the_same_bytes(tmp_path_factory, seed, n):
    tmp = tmp_path_factory.mktemp("synthetic")
    with pytest.MonkeyPatch.context() as mp:
        compiled, python = _both(tmp, lambda p: _synthetic(p, seed, n), mp)
    assert compiled == python


@pytest.mark.parametrize("event, problem", [
    ((1.5, "enter", 0), "bad event argument"),  # a float tick
    ((4, "send", 1, 0, 7, 8.5), "bad event argument"),  # a float message length
])
@pytest.mark.parametrize("compiled", [True, False])
def test_bad_raw_events_are_the_same_errors(tmp_path, monkeypatch, event, problem, compiled):
    """Events that bypassed the `make_*` checks fail when written, in both loops, and the
    archive is dropped."""
    if not compiled:
        monkeypatch.setattr(otf2_writer, "_events", None)
    w = Otf2Writer(tmp_path / "t")
    d = w.defs
    w.add_location(d.location("PE0", group=d.location_group(
        "PE0", system_tree_parent=d.system_tree_node("cluster"))))
    d.region("R")
    w.add(0, (0, "enter", 0))
    w.add(0, event)
    with pytest.raises(ValueError, match=problem):
        w.close()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("make", [otf2_writer.make_send, otf2_writer.make_recv])
def test_message_lengths_and_ticks_past_64_bits_are_refused(make):
    """libotf2 would wrap them (and the Python loop's ctypes word with it)."""
    assert make(2**64 - 1, 0, object.__new__(_Ref), 2, 2**64 - 1)[5] == 2**64 - 1
    with pytest.raises(ValueError, match="bad Mpi"):
        make(1, 0, object.__new__(_Ref), 2, 2**64)
    with pytest.raises(ValueError, match="bad Mpi"):
        make(2**64, 0, object.__new__(_Ref), 2, 8)


@pytest.mark.parametrize("make", [otf2_writer.make_enter, otf2_writer.make_leave])
def test_region_ticks_past_64_bits_are_refused(make):
    assert make(2**64 - 1, _Ref)[0] == 2**64 - 1
    with pytest.raises(ValueError, match="past 64 bits"):
        make(2**64, _Ref)
    with pytest.raises(ValueError, match="negative tick"):
        make(-1, _Ref)


def test_numpy_integers_are_written_as_by_the_python_loop(tmp_path, monkeypatch):
    """Ticks and message lengths of numpy's integer types (ctypes takes them in the Python
    loop) are written the same by the compiled loop."""
    def write(path):
        w = Otf2Writer(path)
        d = w.defs
        root = d.system_tree_node("cluster")
        locs = [d.location(f"PE{i}", group=d.location_group(f"PE{i}",
                                                            system_tree_parent=root))
                for i in range(2)]
        for loc in locs:
            w.add_location(loc)
        d.group("PEs", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI,
                members=locs)
        world = d.comm("world", d.group("w", group_type=GroupType.COMM_GROUP,
                                        paradigm=Paradigm.MPI, members=[0, 1]))
        r = d.region("R")
        w.enter(0, np.int64(3), r)
        w.send(0, np.uint64(4), 1, world, 7, np.int64(2**40))
        w.leave(0, np.int32(5), r)
        w.recv(1, np.int64(6), 0, world, 7, np.uint64(2**63 + 5))
        w.close()

    compiled, python = _both(tmp_path, write, monkeypatch)
    assert compiled == python


class _Ref:
    _ref = 0


def test_files_made_ahead_are_created_empty_and_never_truncated(tmp_path):
    """`create_files` makes what is missing, empty, and leaves what exists as it is: libotf2
    may have written a location's file before the thread reaches it."""
    written = tmp_path / "0.evt"
    written.write_bytes(b"events")
    paths = [written, tmp_path / "0.def", tmp_path / "1.evt", tmp_path / "no" / "1.def"]
    assert otf2_writer._events.create_files([bytes(p) for p in paths]) == 3
    assert written.read_bytes() == b"events"
    assert [p.stat().st_size for p in paths[1:3]] == [0, 0]
    assert not (tmp_path / "no").exists()
    with pytest.raises(TypeError):
        otf2_writer._events.create_files([str(written)])


@pytest.mark.parametrize("fail", [False, True])
def test_a_writer_makes_its_files_ahead_and_cleans_up(tmp_path, monkeypatch, fail):
    """The files of every registered location are made on a thread from the first write on;
    the archive is the one written without them, and an aborted write leaves nothing."""
    made = []
    create = otf2_writer._events.create_files

    def spy(paths):
        made.extend(Path(p.decode()).name for p in paths)
        return create(paths)

    monkeypatch.setattr(otf2_writer._events, "create_files", spy)
    w = Otf2Writer(tmp_path / "t")
    d = w.defs
    root = d.system_tree_node("cluster")
    for i in range(3):
        w.add_location(d.location(f"PE{i}", group=d.location_group(f"PE{i}",
                                                                   system_tree_parent=root)))
    r = d.region("R")
    for i in range(3):
        w.enter(i, 1, r)
        w.leave(i, 2, r)
    if fail:
        w.add(2, (3, "leave", 1.5))
    w.finish([0])  # the first write starts the thread
    if fail:
        with pytest.raises(ValueError, match="bad event argument"):
            w.close()
        assert list(tmp_path.iterdir()) == []
    else:
        w.close()
        assert sorted(p.name for p in (tmp_path / "t" / "traces").iterdir()) == sorted(made)
    assert sorted(made) == sorted(f"{i}.{ext}" for i in range(3) for ext in ("def", "evt"))
