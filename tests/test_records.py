"""Instances made in bulk (`cosim.core.records.slot_maker`, and `bulk_maker` by the compiled
maker) equal those of the constructor, for every class cosim makes that way; and `cosim.core.collect.no_collection` leaves the
collector as it found it, its objects handed on unwalked; the `cosim` command freezes the
heap for its exit, `cli.main` does not."""

from __future__ import annotations

import abc
import dataclasses
import gc
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.bls import replay
from cosim.core.collect import no_collection
from cosim.core.indexset import IndexSet
from cosim.core import records
from cosim.core.records import bulk_maker, slot_maker
from cosim.workload import swf
from cosim.workload.jobs import Job, JobOutcome

U = st.integers(-1, 2**40)
N = st.integers(0, 2**62)


@settings(max_examples=200, deadline=None)
@given(id=N, submit=N, hosts=st.integers(1, 2**20), pes=st.integers(1, 2**20), walltime=N,
       runtime=N, user=U, group=U, queue=U, partition=U,
       swf_row=st.none() | st.lists(st.floats(allow_nan=False), min_size=18, max_size=18))
def test_a_trace_job_made_in_bulk_is_the_job_its_constructor_makes(
        id, submit, hosts, pes, walltime, runtime, user, group, queue, partition, swf_row):
    row = None if swf_row is None else tuple(swf_row)
    made, = swf._trace_jobs([id], [submit], [hosts], [pes], [walltime], [runtime], [user],
                            [group], [queue], [partition], [row])
    ref = Job(id=id, submit=submit, hosts=hosts, pes=pes, walltime=walltime, runtime=runtime,
              user=user, group=group, queue=queue, partition=partition, swf=row,
              app_params=swf._NO_PARAMS)
    assert made == ref
    # every field set, to the same object where it is one (defaults, the shared params)
    for f in dataclasses.fields(Job):
        assert getattr(made, f.name) == getattr(ref, f.name), f.name
    assert made.min_pes == made.max_pes == pes and made.resizable is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.pes = 1


@settings(max_examples=200, deadline=None)
@given(start=N, run=N, pes=st.integers(1, 64), status=st.sampled_from(["completed", "killed"]),
       rejected=st.booleans())
def test_a_replay_outcome_made_in_bulk_is_the_outcome_its_constructor_makes(start, run, pes,
                                                                            status, rejected):
    job = Job(id=3, submit=0, hosts=2, pes=pes, walltime=run, runtime=run)
    if rejected:
        made, = replay._outcomes([job], [None], [None], [()], ["rejected"], [0], [0])
        ref = JobOutcome(job=job, start=None, end=None, hosts=(), status="rejected")
    else:
        hosts = IndexSet((0, 5), (1, 1))
        made, = replay._outcomes([job], [start], [start + run], [hosts], [status], [pes * run],
                                 [pes])
        ref = JobOutcome(job=job, start=start, end=start + run, hosts=hosts, status=status,
                         pe_ticks=pes * run, pes_start=pes)
    assert made == ref
    assert [getattr(made, f.name) for f in dataclasses.fields(JobOutcome)] == \
        [getattr(ref, f.name) for f in dataclasses.fields(JobOutcome)]


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(N, st.integers(1, 2**20), st.text(max_size=3)), max_size=40))
def test_the_compiled_bulk_maker_makes_what_the_slot_maker_makes(rows):
    """Row by row the same instances, field by field the same objects, in row order, from
    lists or other sequences, with `fixed` and `same` fields; references counted right."""
    marker = object()

    @dataclasses.dataclass(frozen=True, slots=True)
    class Base:
        a: int
        tag: object = None

    @dataclasses.dataclass(frozen=True, slots=True)
    class Child(Base):
        b: int = 0
        c: str = "c"
        d: int = 5
        e: object = None

    args = ("a", "b", "c"), {"tag": marker}, {"d": "b"}
    bulk, one = bulk_maker(Child, *args), slot_maker(Child, *args)
    cols = [list(col) for col in zip(*rows)] or [[], [], []]
    gc.collect()
    before = sys.getrefcount(marker)
    texts = [sys.getrefcount(t) for t in cols[2]]
    made = bulk(cols[0], tuple(cols[1]), cols[2])
    assert made == [one(*row) for row in rows] == [Child(a=a, b=b, c=c, tag=marker, d=b)
                                                   for a, b, c in rows]
    assert all(m.tag is marker and m.c is row[2] and m.e is None
               for m, row in zip(made, rows, strict=True))
    assert sys.getrefcount(marker) == before + len(rows)
    # a column's values held once more each, by their instance (a string held twice in the
    # rows, twice more)
    held = {id(t): cols[2].count(t) for t in cols[2]}
    assert [sys.getrefcount(t) for t in cols[2]] == [
        n + held[id(t)] for n, t in zip(texts, cols[2], strict=True)]
    del made
    assert sys.getrefcount(marker) == before
    assert [sys.getrefcount(t) for t in cols[2]] == texts


def test_a_bulk_maker_without_the_compiled_maker_makes_the_same(monkeypatch):
    """Where `cosim/core/_records.c` was not built, `slot_maker`'s function makes them."""
    fields = ("job", "start", "end", "hosts", "status", "pe_ticks", "pes_start")
    compiled = bulk_maker(JobOutcome, fields)
    monkeypatch.setattr(records, "_records", None)
    python = bulk_maker(JobOutcome, fields)
    jobs = [Job(id=k, submit=0, hosts=1, pes=k + 1, walltime=9, runtime=9) for k in range(3)]
    cols = (jobs, [None, 0, 4], [None, 9, 13], [(), IndexSet((0,), (1,)), IndexSet((2,), (1,))],
            ["rejected", "completed", "killed"], [0, 18, 27], [0, 2, 3])
    assert python(*cols) == compiled(*cols) == [
        JobOutcome(job=jobs[0], start=None, end=None, hosts=(), status="rejected"),
        JobOutcome(job=jobs[1], start=0, end=9, hosts=IndexSet((0,), (1,)), status="completed",
                   pe_ticks=18, pes_start=2),
        JobOutcome(job=jobs[2], start=4, end=13, hosts=IndexSet((2,), (1,)), status="killed",
                   pe_ticks=27, pes_start=3)]
    with pytest.raises(ValueError, match="unequal lengths"):
        python(*cols[:-1], [0])


def test_a_bulk_maker_refuses_columns_it_cannot_use():
    bulk = bulk_maker(JobOutcome, ("job", "start", "end", "hosts", "status", "pe_ticks",
                                   "pes_start"))
    job = Job(id=1, submit=0, hosts=1, pes=1, walltime=5, runtime=5)
    with pytest.raises(ValueError, match="unequal lengths"):
        bulk([job], [0], [5], [()], ["completed"], [5], [1, 2])
    with pytest.raises(TypeError, match="7 columns expected, 6 given"):
        bulk([job], [0], [5], [()], ["completed"], [5])
    assert bulk([], [], [], [], [], [], []) == []

    @dataclasses.dataclass(frozen=True, slots=True)
    class Three:
        x: int = 0
        y: int = 0
        z: int = 0

    with pytest.raises(TypeError, match="Three.y: same as 'z', which is not given"):
        bulk_maker(Three, ("x",), same={"y": "z"})
    with pytest.raises(TypeError, match="given twice"):
        bulk_maker(Three, ("x", "y", "x"))


def test_the_compiled_maker_is_the_one_in_use():
    assert records.RECORDS_KERNEL == "compiled"  # (setup.py builds it wherever cosim's tests run)


@pytest.mark.skipif(records._records is None, reason="the compiled maker is not built here")
def test_the_compiled_maker_checks_its_slots_and_columns():
    make = records._records.make

    @dataclasses.dataclass(frozen=True, slots=True)
    class Two:
        x: int = 0
        y: int = 0

    @dataclasses.dataclass(frozen=True, slots=True)
    class Other:
        z: int = 0

    slots = (Two.__dict__["x"], Two.__dict__["y"])
    assert make(Two, slots, ([1, 2], None), (None, 9), 2) == [Two(1, 9), Two(2, 9)]
    with pytest.raises(ValueError, match="column 0 has 2 items, not 3"):
        make(Two, slots, ([1, 2], None), (None, 9), 3)
    with pytest.raises(TypeError, match="slot 1 is not a writable object slot of"):
        make(Two, (Two.__dict__["x"], Other.__dict__["z"]), (None, None), (1, 2), 1)
    with pytest.raises(TypeError, match="slot 0 is not a member descriptor"):
        make(Two, (Two.x.__get__, Two.__dict__["y"]), (None, None), (1, 2), 1)
    with pytest.raises(ValueError, match="differ in length"):
        make(Two, slots, ([1],), (None, 9), 1)
    with pytest.raises(TypeError, match="column 0 is neither a list nor None"):
        make(Two, slots, ((1, 2), None), (None, 9), 2)

    # what object.__new__ refuses, refused: another base's layout, an abstract class
    class Failure(Exception):
        __slots__ = ("x",)

    with pytest.raises(TypeError, match="not safe"):
        make(Failure, (Failure.__dict__["x"],), (None,), (1,), 1)

    class Shape(abc.ABC):
        __slots__ = ("x",)

        @abc.abstractmethod
        def area(self) -> float: ...

    with pytest.raises(TypeError, match="abstract"):
        make(Shape, (Shape.__dict__["x"],), (None,), (1,), 1)


@pytest.mark.skipif(records._records is None, reason="the compiled maker is not built here")
def test_the_compiled_maker_survives_a_column_shrunk_by_a_collection():
    """Code a collection runs (a gc callback) may change a column while instances are made:
    an error, not a read past its end."""
    @dataclasses.dataclass(frozen=True, slots=True)
    class One:
        x: object = None

    column = [object() for _ in range(2000)]
    starts = []

    def shrink(phase, _info):  # at the fifth collection: well inside the loop of 2,000
        if phase == "start":
            starts.append(1)
            if len(starts) == 5:
                del column[:]

    threshold = gc.get_threshold()
    gc.callbacks.append(shrink)
    gc.set_threshold(10)
    try:
        with pytest.raises(RuntimeError, match="column 0 changed size"):
            records._records.make(One, (One.__dict__["x"],), (column,), (None,), 2000)
    finally:
        gc.callbacks.remove(shrink)
        gc.set_threshold(*threshold)


def test_a_maker_names_what_it_cannot_set():
    with pytest.raises(TypeError, match="Job.id: neither given"):
        slot_maker(Job, ("submit", "hosts", "pes", "walltime", "runtime"),
                   fixed={"app_params": {}})
    with pytest.raises(TypeError, match="app_params"):  # a default factory is not a constant
        slot_maker(Job, ("id", "submit", "hosts", "pes", "walltime", "runtime"))
    with pytest.raises(TypeError, match="not slotted fields \\['colour'\\]"):
        slot_maker(JobOutcome, ("job", "colour"))

    @dataclasses.dataclass(frozen=True)
    class Plain:
        a: int = 0

    with pytest.raises(TypeError, match="Plain.a is not a slot"):
        slot_maker(Plain, ("a",))

    @dataclasses.dataclass(frozen=True, slots=True)
    class Odd:
        _slot_obj: int = 0

    with pytest.raises(TypeError, match="start with '_slot_'"):
        slot_maker(Odd, ("_slot_obj",))


def test_a_maker_takes_any_field_name_and_the_fields_of_a_base():
    """Fields named like the generated code's locals (`obj`, `make`), and slots inherited
    from a slotted base, are set as the constructor sets them."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Base:
        x: int
        obj: str = "o"

    @dataclasses.dataclass(frozen=True, slots=True)
    class Child(Base):
        make: int = 0
        z: int = 1

    made = slot_maker(Child, ("x", "obj", "make"), fixed={"z": 5})(1, "not me", 3)
    assert made == Child(x=1, obj="not me", make=3, z=5)
    assert slot_maker(Child, ("x",))(7) == Child(x=7)


def test_no_collection_hands_its_objects_on_and_restores_the_collector():
    assert gc.isenabled()
    before = gc.get_threshold()
    gc.set_threshold(10**9)  # no automatic collection here: the counts tell what is due
    try:
        with no_collection():
            assert not gc.isenabled()
            made = [[k] for k in range(50_000)]
        young = gc.get_count()[0]
        assert gc.isenabled()
        # handed to the oldest generation: no young collection is due to walk them
        assert young < 1_000
        assert gc.get_freeze_count() == 0
        assert any(o is made[0] for o in gc.get_objects(generation=2))
    finally:
        gc.set_threshold(*before)
    # a collector paused by the caller stays paused
    gc.disable()
    try:
        with no_collection():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_no_collection_leaves_objects_frozen_by_the_caller_frozen():
    frozen = [[k] for k in range(10)]
    gc.freeze()
    try:
        n = gc.get_freeze_count()
        with no_collection():
            [[k] for k in range(1_000)]
        assert gc.get_freeze_count() == n  # not thawed (nor the block's objects frozen)
    finally:
        gc.unfreeze()
    del frozen


_ENDING = r"""
import gc, runpy, sys
from cosim import cli
workload, out = sys.argv[1:3]
run = ["run", "--workload", workload, "--no-plots", "-q", "--out"]
assert cli.main([*run, out + "/a"]) == 0
print("main", gc.get_freeze_count())  # a library caller's process: nothing frozen
sys.argv = ["cosim", *run, out + "/b"]
print("entry", cli.entry(), gc.get_freeze_count())
gc.unfreeze()
sys.argv = ["python -m cosim", *run, out + "/c"]
try:
    runpy.run_module("cosim", run_name="__main__")
except SystemExit as exc:
    print("-m", exc.code, gc.get_freeze_count())
"""


def test_the_command_freezes_the_heap_for_its_exit_and_main_does_not(tmp_path):
    """`cosim` (console script and ``python -m cosim``) ends by freezing the heap, so the
    interpreter's exit walks none of it; `cli.main`, which tests and scripts call in a
    process that goes on, does not. The files are complete either way."""
    import subprocess
    import sys
    import tomllib
    from pathlib import Path

    swf_text = "".join(f"{i} {10 * i} -1 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1\n"
                       for i in range(1, 4))
    (tmp_path / "w.swf").write_text("; MaxNodes: 4\n" + swf_text)
    done = subprocess.run([sys.executable, "-c", _ENDING, str(tmp_path / "w.swf"),
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = dict(line.split(" ", 1) for line in done.stdout.splitlines()
                if line.split(" ", 1)[0] in ("main", "entry", "-m"))
    assert said["main"] == "0"
    status, frozen = said["entry"].split()
    assert status == "0" and int(frozen) > 10_000
    status, frozen = said["-m"].split()
    assert status == "0" and int(frozen) > 10_000
    for run in "abc":
        assert (tmp_path / run / "summary.json").is_file()
        assert (tmp_path / run / "jobs.csv").read_text().count("\n") == 4
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file():  # (a source checkout)
        scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
        assert scripts["cosim"] == "cosim.cli:entry"
