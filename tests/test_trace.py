"""OTF2 traces: structure and counts against the run's tables, RCA lending, levels, a golden
dump, the semantic checker on broken traces, and never writing over an archive.

The golden file ``tests/golden/trace_tiny.txt`` is `dump_trace` of the full-level trace of
`tiny_tables()`. After an intended change, regenerate it with
``COSIM_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_trace.py -k golden`` and review
the diff.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from otf2.enums import GroupType, Paradigm, Type

from cosim.als.manager import AlsConfig
from cosim.als.techniques import get
from cosim.bls import BatchConfig
from cosim.bls.alloclog import OWN, ROLES, YIELDED
from cosim.errors import InputError
from cosim.output.metrics import summary
from cosim.output.otf2_writer import Otf2Writer, is_trace_dir
from cosim.output.tables import allocations_from_outcomes, build_tables, step_series
from cosim.output.trace import write_trace
from cosim.platform import load_platform
from cosim.runner import cosimulate
from cosim.testing.runs import malleable_tables, tiny_jobs, tiny_tables
from cosim.testing.tracecheck import TraceError, check_trace, dump_trace, read_trace

GOLDEN = Path(__file__).parent / "golden" / "trace_tiny.txt"
S = 1_000_000_000


@pytest.fixture(scope="module")
def tables():
    return tiny_tables()


@pytest.fixture(scope="module")
def full(tables, tmp_path_factory):
    path = tmp_path_factory.mktemp("full") / "trace"
    counts = write_trace(path, tables, level="full")
    return counts, read_trace(path)


@pytest.fixture(scope="module")
def batch(tables, tmp_path_factory):
    path = tmp_path_factory.mktemp("batch") / "trace"
    counts = write_trace(path, tables, level="batch")
    return counts, read_trace(path)


def _regions(records):
    """Every region of one location as (depth, Enter record, Leave tick), in Leave order."""
    out, stack = [], []
    for r in records:
        if r.kind == "enter":
            stack.append(r)
        elif r.kind == "leave":
            e = stack.pop()
            out.append((len(stack), e, r.time))
    return out


def _top_regions(records):
    """Depth-0 regions of one location: [(name, enter tick, leave tick, enter attrs)]."""
    return [(e.name, e.time, t, dict(e.attrs)) for d, e, t in _regions(records) if d == 0]


def _nested(records, name):
    """[(enter tick, leave tick, enter attrs)] of every region `name` on one location."""
    return [(e.time, t, dict(e.attrs)) for _, e, t in _regions(records) if e.name == name]


def _row_pes(row, cores):
    """Global PEs of an allocation row: its cores on each of its hosts."""
    return [h * cores + c for h in range(int(row["host"]), int(row["host"] + row["hosts"]))
            for c in range(int(row["core"]), int(row["core"] + row["pes"]))]


def _job_name(tables, job):
    app = tables.jobs["app"][tables.jobs["id"] == job][0].decode()
    return f"job {job} ({app})"


# -- structure and counts ------------------------------------------------------------------


def test_full_trace_checks_and_counts_match_the_tables(tables, full):
    counts, data = full
    s = check_trace(data)
    chunks, workers = tables.chunks, tables.workers
    assert s.enters["compute chunk"] == len(chunks) == counts.chunks
    # rule: request + assignment per chunk, final request + "no more work" per worker
    assert s.messages == 2 * len(chunks) + 2 * len(workers) == counts.messages
    assert s.events == counts.events
    assert s.max_depth == 2
    assert s.program == (0, tables.horizon)
    n_pes = tables.n_hosts * tables.cores_per_host
    assert counts.pe_rows == n_pes and counts.locations == n_pes + 2
    assert sum(v for k, v in s.enters.items() if k.startswith("job ")) == counts.job_regions


def test_rows_are_pe_locations_in_global_order_under_the_system_tree(tables, full):
    _, data = full
    cores = tables.cores_per_host
    pes = [f"{h} PE{c}" for h in tables.host_names for c in range(cores)]
    names = [n for n, _, _ in data.locations]
    assert names == [*pes, "scheduler", "cluster metrics"]
    assert [t for _, t, _ in data.locations] == ["cpu_thread"] * (len(pes) + 1) + ["metric"]
    # one process per PE (location id == group id == rank), then the batch system
    assert [g for _, _, g in data.locations] == [*pes, "batch system", "batch system"]
    assert list(data.groups) == [*pes, "batch system"]
    assert data.comms["MPI_COMM_WORLD (simulated)"] == tuple(range(len(pes)))
    text = "\n".join(data.definitions_text)
    for h, name in enumerate(tables.host_names):
        assert f"{name!r} class 'node' parent 'rack-{tables.racks[h]}'" in text
    assert "'rack-0' class 'rack' parent 'cluster'" in text
    assert "'cluster' class 'machine' parent '-'" in text
    assert "clock: resolution 1000000000 offset 0" in text


def test_chunk_enters_carry_the_chunk_rows(tables, full):
    _, data = full
    got = defaultdict(list)
    for pe in range(tables.n_hosts * tables.cores_per_host):
        for a, b, attrs in _nested(data.records[pe], "compute chunk"):
            got[pe].append((a, b, attrs["job_id"], attrs["first_iteration"],
                            attrs["chunk_size"]))
    want = defaultdict(list)
    for c in tables.chunks:
        want[int(c["pe"])].append((int(c["t_start"]), int(c["t_end"]), int(c["job"]),
                                   int(c["first"]), int(c["size"])))
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in want.items()}


def test_job_regions_cover_every_allocation_and_pe_rows_tile_the_run(tables, full):
    _, data = full
    cores = tables.cores_per_host
    tops = [_top_regions(data.records[pe]) for pe in range(tables.n_hosts * cores)]
    for regions in tops:
        assert regions[0][1] == 0 and regions[-1][2] == tables.horizon
        assert all(a[2] == b[1] for a, b in itertools.pairwise(regions))
    for row in tables.allocations:
        name = _job_name(tables, int(row["job"]))
        for pe in _row_pes(row, cores):
            # the row's interval, busy or yielded, is inside one region of its job
            assert any(n == name and a <= row["start"] and row["end"] <= b
                       for n, a, b, _ in tops[pe]), (name, pe)


def test_rca_lending_shows_the_borrower_on_the_lent_host(tables, full):
    _, data = full
    a = tables.allocations
    on0 = a[a["host"] == 0]
    (row7,) = on0[on0["job"] == 7]
    assert ROLES[row7["role"]] == "borrowed" and row7["owner"] == 1  # borrowed from job 1
    (own1,) = on0[(on0["job"] == 1) & (on0["role"] == OWN)]
    (tail1,) = on0[(on0["job"] == 1) & (on0["role"] == YIELDED)]
    # job 1 computes, yields host 0 (its idle tail), and the tail ends when job 7 borrows it
    assert own1["start"] == 0 and own1["end"] == tail1["start"] < tail1["end"] == row7["start"]
    for pe in _row_pes(row7, tables.cores_per_host):  # host 0's PEs
        tops = _top_regions(data.records[pe])
        during = [r for r in tops if r[1] < row7["end"] and r[2] > row7["start"]]
        assert during == [("job 7 (mandelbrot)", row7["start"], row7["end"],
                           {"job_id": 7, "owner_job": 1})]
        own = [r for r in tops if r[0] == "job 1 (mandelbrot)"]
        assert own and own[0][1] == 0 and own[-1][2] <= row7["start"]
        # the owner's yielded tail before the borrower: job 1 with a nested idle: yielded
        assert (tail1["start"], tail1["end"], {}) in _nested(data.records[pe], "idle: yielded")


def test_counters_follow_the_step_series(tables, full):
    _, data = full
    samples = data.records[-1]
    assert samples[0].time == 0 and samples[-1].time == tables.horizon
    s = step_series(tables)

    def at(key, t):
        times, values = s[key]
        i = np.searchsorted(times, t, side="right") - 1
        return int(values[i]) if i >= 0 else 0

    for r in samples:
        util, busy, running, queued = r.values
        assert busy == at("busy_hosts", r.time) and util == busy / tables.n_hosts
        assert (running, queued) == (at("running", r.time), at("queued", r.time))
    # one sample per change: consecutive samples differ except the closing one
    assert all(a.values != b.values for a, b in itertools.pairwise(samples[:-1]))


def test_batch_level_has_job_and_idle_regions_only(full, batch):
    counts, data = batch
    s = check_trace(data)
    assert s.max_depth == 1 and s.messages == 0 and counts.chunks == 0
    assert all(k.startswith("job ") or k == "idle: unallocated" for k in s.enters)
    assert not any(r.kind in ("send", "recv") for recs in data.records for r in recs)
    full_s = check_trace(full[1])
    assert {k: v for k, v in full_s.enters.items() if k.startswith("job ")} == \
        {k: v for k, v in s.enters.items() if k.startswith("job ")}
    assert s.metric_samples == full_s.metric_samples


def test_golden_dump(full):
    text = dump_trace(full[1])
    if os.environ.get("COSIM_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
    assert GOLDEN.is_file(), "no golden file: run with COSIM_UPDATE_GOLDEN=1"
    assert text == GOLDEN.read_text(), "trace dump differs from the golden file " \
        "(COSIM_UPDATE_GOLDEN=1 regenerates it; review the diff)"


def _variant(tmp_path, *, technique="FAC2", rca=True, kill=False):
    platform = load_platform("tiny8x2")
    jobs = tiny_jobs()
    if kill:  # job 1 killed by its walltime in the middle of its loop
        jobs = [replace(j, walltime=20 * S) if j.id == 1 else j for j in jobs]
    res = cosimulate(jobs, platform=platform, n_hosts=platform.n_hosts,
                     batch=BatchConfig(backfill="easy", rca=rca),
                     als=AlsConfig(technique=get(technique), record=True))
    t = build_tables(res.outcomes, run_id="v", config={}, stats={},
                     metrics=summary(res.outcomes, platform.n_hosts), platform=platform,
                     n_hosts=platform.n_hosts, loops=res.loops, technique=technique,
                     allocations=res.allocations)
    counts = write_trace(tmp_path / "t", t, level="full")
    return t, counts, check_trace(tmp_path / "t"), res.outcomes


@pytest.mark.parametrize(("technique", "rca", "kill"),
                         [("FAC2", True, False), ("GSS", False, False), ("STATIC", True, True)])
def test_variants_pass_the_checker(tmp_path, technique, rca, kill):
    t, counts, s, _ = _variant(tmp_path, technique=technique, rca=rca, kill=kill)
    assert s.enters["compute chunk"] == len(t.chunks) == counts.chunks
    assert s.messages == counts.messages
    if kill:
        assert b"killed" in t.jobs["status"].tolist()


# -- bad input and the checker ------------------------------------------------------------


def test_unknown_level_and_missing_chunks_are_input_errors(tables, tmp_path):
    with pytest.raises(InputError, match="unknown trace level") as e:
        write_trace(tmp_path / "t", tables, level="detailed")
    assert e.value.field == "trace"
    with pytest.raises(InputError, match="chunk tables"):
        write_trace(tmp_path / "t", tiny_tables(record=False), level="full")
    assert not (tmp_path / "t").exists()
    write_trace(tmp_path / "t", tiny_tables(record=False), level="batch")
    check_trace(tmp_path / "t")


def _tiny_archive(path):
    """A writer with two PE rows on a world communicator, a region A and B, ProgramBegin."""
    w = Otf2Writer(path)
    d = w.defs
    root = d.system_tree_node("cluster")
    locs = []
    for i in range(2):
        g = d.location_group(f"PE{i}", system_tree_parent=root)
        locs.append(d.location(f"PE{i}", group=g))
        w.add_location(locs[-1])
    d.group("PEs", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
    world = d.comm("world", d.group("w", group_type=GroupType.COMM_GROUP,
                                    paradigm=Paradigm.MPI, members=[0, 1]))
    ra, rb = d.region("A"), d.region("B")
    for i in range(2):
        w.program_begin(i, 0, "test")
        w.program_end(i, 100)
    return w, world, ra, rb


def test_checker_reports_bad_nesting_and_unmatched_messages(tmp_path):
    w, world, ra, rb = _tiny_archive(tmp_path / "bad")
    w.enter(0, 1, ra)
    w.enter(0, 2, rb)
    w.leave(0, 3, ra)  # B is the innermost region
    w.leave(0, 4, rb)
    w.enter(1, 5, rb)  # never left
    w.send(0, 10, 1, world, 7, 64)  # never received
    w.send(1, 20, 0, world, 8, 64)
    w.recv(0, 15, 1, world, 8, 64)  # received before it was sent
    w.close()
    with pytest.raises(TraceError) as e:
        check_trace(tmp_path / "bad")
    text = str(e.value)
    assert "Leave 'A' while 'B' is the innermost open region" in text
    assert "regions left open at the end: ['B']" in text
    assert "1 sends, 0 receives" in text
    assert "received at tick 15 before it was sent at tick 20" in text
    assert len(e.value.problems) >= 4


def test_checker_reports_ranks_outside_the_communicator_and_missing_program(tmp_path):
    w = Otf2Writer(tmp_path / "bad")
    d = w.defs
    g = d.location_group("PE0", system_tree_parent=d.system_tree_node("cluster"))
    loc = d.location("PE0", group=g)
    w.add_location(loc)
    d.group("PEs", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=[loc])
    world = d.comm("world", d.group("w", group_type=GroupType.COMM_GROUP,
                                    paradigm=Paradigm.MPI, members=[0]))
    w.send(0, 1, 3, world, 0, 8)
    w.close()
    with pytest.raises(TraceError) as e:
        check_trace(tmp_path / "bad")
    assert "rank 3 outside 'world' (1 ranks)" in str(e.value)
    assert "no ProgramBegin/ProgramEnd in the trace" in str(e.value)


def test_writer_rejects_bad_ticks_and_attribute_values(tmp_path):
    w, _, ra, _ = _tiny_archive(tmp_path / "t")
    with pytest.raises(ValueError, match="negative tick"):
        w.enter(0, -1, ra)
    attr = w.defs.attribute("x", "", Type.UINT64)
    with pytest.raises(ValueError, match="is not a UINT64"):
        w.enter(0, 1, ra, [(attr, -1)])
    with pytest.raises(ValueError, match="is not a UINT64"):
        w.enter(0, 1, ra, [(attr, 2**64)])
    w.enter(0, 1.5, ra)  # caught when written: the archive is dropped
    with pytest.raises(ValueError, match="bad event argument"):
        w.close()
    assert not (tmp_path / "t").exists()
    assert list(tmp_path.iterdir()) == []


def test_metric_samples_keep_every_member_type_exactly(tmp_path):
    """Metric words are packed by cosim (not the package): each member type reads back exact,
    at its extremes, and out-of-range or wrongly typed values are refused when made."""
    from otf2.enums import MetricMode, MetricOccurrence, MetricType, RecorderKind

    w, _, _, _ = _tiny_archive(tmp_path / "m")
    d = w.defs
    members = [d.metric_member(n, "", MetricType.OTHER, MetricMode.ABSOLUTE_NEXT, vt, unit="")
               for n, vt in (("u", Type.UINT64), ("i", Type.INT64), ("x", Type.DOUBLE))]
    metric = d.metric_class(members, MetricOccurrence.ASYNCHRONOUS, RecorderKind.ABSTRACT)
    # a second metric of other member types, sampled in between (the writer keeps each
    # metric's types)
    other = d.metric_class(members[::-1], MetricOccurrence.ASYNCHRONOUS, RecorderKind.ABSTRACT)
    samples = [(2**64 - 1, -2**63, 0.1), (0, 2**63 - 1, -1e300), (7, -1, 3.0)]
    for k, values in enumerate(samples):
        w.metric(0, 10 * k, metric, values)
        w.metric(1, 10 * k, other, values[::-1])
    for bad in ((-1, 0, 0.0), (2**64, 0, 0.0), (1.0, 0, 0.0), (0, 2**63, 0.0), (0, 0)):
        with pytest.raises(ValueError):
            w.metric(1, 5, metric, bad)
    w.close()
    got = [r.values for r in read_trace(tmp_path / "m").records[0] if r.kind == "metric"]
    assert got == samples
    got = [r.values for r in read_trace(tmp_path / "m").records[1] if r.kind == "metric"]
    assert got == [v[::-1] for v in samples]


def test_an_archive_holds_a_few_chunks_whatever_its_number_of_locations(tmp_path):
    """Locations are closed as they are written and libotf2's chunks recycled: 40 locations
    need as many chunks as one (an event and a definition buffer, the global definitions),
    not two per location, and every chunk is back in the pool after close."""
    w = Otf2Writer(tmp_path / "many")
    d = w.defs
    root = d.system_tree_node("cluster")
    region = d.region("A")
    for i in range(40):
        loc = d.location(f"PE{i}", group=d.location_group(f"PE{i}", system_tree_parent=root))
        w.add_location(loc)
        w.enter(i, 0, region)
        w.leave(i, 10 + i, region)
    w.close()
    spare = [c for chunks in w._pool._spare.values() for c in chunks]
    assert 1 <= len(spare) <= 4 and not w._pool._held
    data = read_trace(tmp_path / "many")
    assert [len(r) for r in data.records] == [2] * 40
    assert [r[-1].time for r in data.records] == [10 + i for i in range(40)]


def test_locations_finished_one_by_one_hold_the_memory_of_one(tmp_path):
    """The trace builder writes and closes each PE row in turn (`Otf2Writer.finish`): the
    chunks of 60 rows are those of one; an event added to a finished row is an error."""
    w = Otf2Writer(tmp_path / "rows")
    d = w.defs
    root = d.system_tree_node("cluster")
    region = d.region("A")
    locs = [w.add_location(d.location(f"PE{i}", group=d.location_group(
        f"PE{i}", system_tree_parent=root))) for i in range(60)]
    for i in locs:
        w.enter(i, 0, region)
        w.leave(i, 5, region)
        assert w.finish([i]) == 2
    made = sum(len(c) for c in w._pool._spare.values()) + sum(
        len(c) for c in w._pool._held.values())
    assert made <= 4
    w.enter(0, 7, region)
    with pytest.raises(ValueError, match="events added to finished locations"):
        w.close()
    w2 = Otf2Writer(tmp_path / "dup")
    loc = w2.defs.location("X", group=w2.defs.location_group(
        "X", system_tree_parent=w2.defs.system_tree_node("c")))
    w2.add_location(loc)
    with pytest.raises(ValueError, match="'X' is already registered"):
        w2.add_location(loc)
    w2.abort()


def test_a_huge_location_spills_to_its_file_instead_of_growing(tmp_path, monkeypatch):
    """As libotf2's own allocator, the pool gives a buffer a bounded number of chunks; past
    it libotf2 writes the buffer to disk and reuses them, and every event is still there."""
    from cosim.output import otf2_writer

    monkeypatch.setattr(otf2_writer._ChunkPool, "BUFFER_BYTES", 2 * (256 << 10))
    w = Otf2Writer(tmp_path / "big")
    d = w.defs
    region = d.region("A")
    i = w.add_location(d.location("PE0", group=d.location_group(
        "PE0", system_tree_parent=d.system_tree_node("cluster"))))
    most = 0
    held = w._pool._held
    for k in range(4):  # 4 batches of 20,000 events: more than the 2 chunks hold
        for t in range(10_000 * k, 10_000 * (k + 1)):
            w.enter(i, 3 * t, region)
            w.leave(i, 3 * t + 1, region)
        w.flush([i])
        most = max(most, max((len(c) for c in held.values()), default=0))
    w.close()
    assert most == 2  # the bound was reached, and held
    data = read_trace(tmp_path / "big")
    assert len(data.records[0]) == 80_000 and data.records[0][-1].time == 3 * 39_999 + 1


# -- never over an existing archive --------------------------------------------------------


def test_rewriting_replaces_a_trace_only_once_the_new_one_is_complete(tables, tmp_path):
    path = tmp_path / "trace"
    write_trace(path, tables, level="batch")
    before = dump_trace(path)
    # a write that fails midway leaves the old trace untouched and no temporary directory
    with pytest.raises(RuntimeError, match="boom"), Otf2Writer(path) as w:
        raise RuntimeError("boom")
    del w
    assert dump_trace(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace"]
    write_trace(path, tables, level="full")  # replaced
    check_trace(path)
    assert dump_trace(path) != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace"]


def test_refuses_to_replace_what_is_not_a_trace(tables, tmp_path):
    other = tmp_path / "results"
    other.mkdir()
    (other / "keep.txt").write_text("data")
    with pytest.raises(InputError, match="not an OTF2 trace directory"):
        write_trace(other, tables, level="batch")
    assert (other / "keep.txt").read_text() == "data"
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(InputError, match="not an OTF2 trace directory"):
        write_trace(afile, tables, level="batch")
    empty = tmp_path / "empty"
    empty.mkdir()
    write_trace(empty, tables, level="batch")  # an empty directory holds nothing to lose
    assert is_trace_dir(empty)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "file", "results"]


# -- the reference reader -------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("otf2-print") is None,
                    reason="otf2-print is not installed (Debian/Ubuntu: apt-get install "
                           "otf2-tools); the format check runs where it is")
@pytest.mark.parametrize("trace", ["full", "mall_full"])
def test_otf2_print_accepts_the_trace(request, trace):
    counts, _ = request.getfixturevalue(trace)  # a rigid run's trace, and a malleable one's
    proc = subprocess.run(["otf2-print", "--silent", "-Werror",
                           str(counts.path / "traces.otf2")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr


def test_writer_flushes_up_to_a_watermark_and_sorts_each_location(tmp_path):
    w, _, ra, rb = _tiny_archive(tmp_path / "t")
    w.enter(0, 10, ra)
    w.enter(0, 5, rb)  # appended late, written first: buffers are sorted by tick
    w.leave(0, 7, rb)
    assert w.flush([0], upto=10) == 3  # ProgramBegin, Enter B, Leave B; not Enter A
    w.leave(0, 20, ra)
    w.enter(0, 6, rb)  # before what was already written
    with pytest.raises(ValueError, match="after events up to tick 7 were written"):
        w.flush()
    w.abort()
    assert list(tmp_path.iterdir()) == []


# -- the allocation log: rebuilt from outcomes, and a malleable run --------------------------


def _per_pe(alloc, cores):
    """An allocation log as sorted (job, pe, start, end, role, owner) tuples: the same
    intervals whatever the grouping of hosts into rows."""
    return sorted((int(r["job"]), pe, int(r["start"]), int(r["end"]), int(r["role"]),
                   int(r["owner"])) for r in alloc for pe in _row_pes(r, cores))


@pytest.mark.parametrize(("technique", "rca", "kill"),
                         [("STATIC", True, False), ("FAC2", True, True), ("GSS", False, False)])
def test_the_log_rebuilt_from_outcomes_gives_the_same_rows_and_trace(tmp_path, technique, rca,
                                                                     kill):
    t, _, _, outcomes = _variant(tmp_path, technique=technique, rca=rca, kill=kill)
    rebuilt = allocations_from_outcomes(outcomes)
    assert _per_pe(rebuilt, t.cores_per_host) == _per_pe(t.allocations, t.cores_per_host)
    write_trace(tmp_path / "b", replace(t, allocations=rebuilt), level="full")
    assert dump_trace(tmp_path / "b") == dump_trace(tmp_path / "t")


@pytest.fixture(scope="module")
def mall():
    return malleable_tables()


@pytest.fixture(scope="module")
def mall_full(mall, tmp_path_factory):
    path = tmp_path_factory.mktemp("mall") / "trace"
    counts = write_trace(path, mall, level="full")
    return counts, read_trace(path)


def _job_pes_steps(tables, job):
    """(tick, PEs held after) at each change of a job's busy PEs, from the log."""
    a = tables.allocations
    rows = a[(a["job"] == job) & (a["role"] != YIELDED)]
    delta = defaultdict(int)
    for r in rows:
        w = int(r["hosts"]) * int(r["pes"])
        delta[int(r["start"])] += w
        delta[int(r["end"])] -= w
    out, held = [], 0
    for t in sorted(delta):
        if delta[t]:
            held += delta[t]
            out.append((t, held))
    return out


def test_malleable_trace_passes_the_checker_and_shows_every_resize(mall, mall_full):
    counts, data = mall_full
    s = check_trace(data)
    j = mall.jobs
    resized = j[(j["shrinks"] > 0) | (j["expands"] > 0)]
    assert len(resized) >= 3
    # trace jobs release PEs at the command's tick: one change per command here
    assert counts.resizes == int(resized["shrinks"].sum() + resized["expands"].sum()) > 0
    assert s.enters["resize: shrink"] == int(resized["shrinks"].sum())
    assert s.enters["resize: expand"] == int(resized["expands"].sum())
    assert s.max_depth == 2  # an instant region inside the job's region
    cores = mall.cores_per_host
    for job in resized["id"].tolist():
        steps = _job_pes_steps(mall, job)
        a = mall.allocations
        first = a[(a["job"] == job) & (a["start"] == steps[0][0])]
        master = min(int(r["host"]) * cores + int(r["core"]) for r in first)
        recs = data.records[master]
        # the job PEs counter on the master's row: every change, 0 at the end
        samples = [(r.time, r.values[0]) for r in recs if r.name == "class[job PEs]"]
        mine = [x for x in samples if steps[0][0] <= x[0] <= steps[-1][0]]
        assert [x for x in mine if x in steps] == steps
        # the instant regions inside the job's region, with the PEs after the change
        marks = [(e.time, t, dict(e.attrs), e.name) for d, e, t in _regions(recs)
                 if e.name.startswith("resize: ") and dict(e.attrs)["job_id"] == job]
        want = [(t, t, {"job_id": job, "pes": after},
                 "resize: shrink" if after < before else "resize: expand")
                for (_, before), (t, after) in itertools.pairwise(steps) if after]
        assert marks == want
        region = _job_name(mall, job)
        for t, *_ in want:
            assert any(n == region and a < t < b for n, a, b, _ in _top_regions(recs))


def test_malleable_rows_are_regions_and_a_shrink_ends_the_region(mall, mall_full):
    _, data = mall_full
    cores = mall.cores_per_host
    tops = [_top_regions(data.records[pe]) for pe in range(mall.n_hosts * cores)]
    for regions in tops:
        assert all(a[2] == b[1] for a, b in itertools.pairwise(regions))
    a = mall.allocations
    assert (a["core"] > 0).any()  # hosts shared at PE level
    for row in a:
        name = _job_name(mall, int(row["job"]))
        for pe in _row_pes(row, cores):
            assert any(n == name and x <= row["start"] and row["end"] <= y
                       for n, x, y, _ in tops[pe]), (name, pe)
    # a shrink ends the job's region on each PE it released (no row of it starts there then)
    shrunk = 0
    busy = a[a["role"] != YIELDED]
    for row in busy:
        job, t = int(row["job"]), int(row["end"])
        changes = dict(_job_pes_steps(mall, job))
        if t not in changes or t == max(changes):
            continue
        for pe in _row_pes(row, cores):
            again = [r for r in busy if r["job"] == job and r["start"] == t
                     and pe in _row_pes(r, cores)]
            if not again:
                assert (_job_name(mall, job), t) in [(n, y) for n, _, y, _ in tops[pe]]
                shrunk += 1
    assert shrunk > 0


def test_malleable_batch_trace_has_counters_but_no_nested_regions(mall, tmp_path):
    counts = write_trace(tmp_path / "t", mall, level="batch")
    s = check_trace(tmp_path / "t")
    assert s.max_depth == 1 and not any(k.startswith("resize") for k in s.enters)
    assert counts.resizes > 0
    data = read_trace(tmp_path / "t")
    text = "\n".join(data.definitions_text)
    assert "job PEs" in text and "busy PEs" in text
    busy = [r for r in data.records[-1] if r.name == "instance[PE utilization,busy PEs]"]
    times, values = step_series(mall)["busy_pes"]
    n_pes = mall.n_hosts * mall.cores_per_host
    assert busy[0].time == 0 and busy[-1].time == mall.horizon
    for r in busy:
        i = np.searchsorted(times, r.time, side="right") - 1
        held = int(values[i]) if i >= 0 else 0
        assert r.values == (held / n_pes, held)


def test_runs_without_resizes_get_no_malleability_definitions(full):
    text = "\n".join(full[1].definitions_text)
    assert "resize" not in text and "job PEs" not in text and "busy PEs" not in text


def test_a_malleable_dls_run_keeps_every_chunk_inside_its_job_region(tmp_path):
    # DLS apps give up a PE when its chunk ends and start asking on an added PE: each rank's
    # events go in the job's region on its PE from the rank's start
    platform = load_platform("tiny8x2")
    jobs = [replace(j, kind="malleable", min_pes=max(1, j.pes // 2), max_pes=16)
            if j.app != "rigid" else j for j in tiny_jobs()]
    res = cosimulate(jobs, platform=platform, n_hosts=platform.n_hosts,
                     batch=BatchConfig(malleable="equi"),
                     als=AlsConfig(technique=get("GSS"), record=True))
    assert res.stats.shrinks > 0 and res.stats.expands > 0
    t = build_tables(res.outcomes, run_id="dls", config={}, stats={}, metrics={},
                     platform=platform, n_hosts=platform.n_hosts, loops=res.loops,
                     technique="GSS", allocations=res.allocations)
    counts = write_trace(tmp_path / "t", t, level="full")
    s = check_trace(tmp_path / "t")
    assert s.enters["compute chunk"] == len(t.chunks) == counts.chunks
    assert s.messages == counts.messages == 2 * len(t.chunks) + 2 * len(t.workers)
    assert s.enters["resize: shrink"] + s.enters["resize: expand"] == counts.resizes > 0
    data = read_trace(tmp_path / "t")
    for pe in range(t.n_hosts * t.cores_per_host):
        for d, e, _ in _regions(data.records[pe]):
            if e.name == "compute chunk":
                stack = [x for x in _regions(data.records[pe])
                         if x[0] == 0 and x[1].time <= e.time]
                assert stack[-1][1].name == _job_name(t, dict(e.attrs)["job_id"])


def test_a_long_replay_groups_its_jobs_by_category(tmp_path):
    """Above JOB_REGIONS_MAX jobs, one region per category (the app for trace jobs), each
    enter naming its job: Vampir lists a few regions, not thousands; below, a region per job."""
    from cosim.output.trace import JOB_REGIONS_MAX
    from cosim.runner import simulate_batch
    from cosim.testing.workloads import lublin_like

    jobs = lublin_like(JOB_REGIONS_MAX + 200, 32, np.random.default_rng(5), load=0.7)
    cats = ("short", "long")
    jobs = [replace(j, category=cats[j.id % 2]) for j in jobs]
    res = simulate_batch(jobs, n_hosts=32, config=BatchConfig(backfill="easy"))
    ib = load_platform("ib256")
    t = build_tables(res.outcomes, run_id="long", config={}, stats={}, metrics={},
                     platform=ib, n_hosts=32, allocations=res.allocations)
    write_trace(tmp_path / "tr", t, level="batch")
    data = read_trace(tmp_path / "tr")
    enters = [r for rows in data.records for r in rows if r.kind == "enter"]
    job_enters = [r for r in enters if r.name.startswith("job")]
    names = {r.name for r in job_enters}
    assert len(names) == 2, f"{len(names)} job regions"  # (a cheap message when it fails)
    assert names == {"jobs: short", "jobs: long"}
    named = {dict(r.attrs)["job_id"] for r in job_enters}
    shown = {o.job.id for o in res.outcomes if o.start is not None and o.end > o.start}
    assert named == shown  # every job that took time is findable by its attribute
    for r in job_enters:
        assert r.name == f"jobs: {cats[dict(r.attrs)['job_id'] % 2]}"
    check_trace(tmp_path / "tr")
    # a run of fewer jobs keeps a region per job
    few = build_tables(res.outcomes[:50], run_id="few", config={}, stats={}, metrics={},
                       platform=ib, n_hosts=32)
    write_trace(tmp_path / "few", few, level="batch")
    names = {r.name for rows in read_trace(tmp_path / "few").records for r in rows
             if r.kind == "enter" and r.name.startswith("job")}
    assert len(names) == len({o.job.id for o in res.outcomes[:50]
                              if o.start is not None and o.end > o.start})


class _Recorder:
    """The `Otf2Writer` calls `_Builder._pe` makes, as (kind, tick, what) in order."""

    def __init__(self):
        self.log = []

    def enter(self, pe, t, region, attrs=None):
        self.log.append(("enter", t, region, tuple(attrs or ())))

    def leave(self, pe, t, region):
        self.log.append(("leave", t, region))

    def add(self, pe, event):
        self.log.append(("event", event[0], event[1]))

    def extend(self, pe, events):
        for event in events:
            self.add(pe, event)


@pytest.mark.parametrize("full", [True, False])
def test_master_events_land_in_whatever_region_the_pe_shows(full):
    """A master's point events on its PE go inside the region shown there at their tick —
    another job's (a borrower's) included — and those at a region's end stay for what starts
    there; regions with nothing inside are entered and left alone."""
    from cosim.output.trace import _Builder, _Seg

    b = object.__new__(_Builder)
    b.w, b.full, b.horizon, b.n_job_regions = _Recorder(), full, 40, 0
    b.a_job, b.a_owner, b.r_unalloc, b.job_region = "job_id", "owner_job", "idle", {
        7: "job 7", 8: "job 8", 9: "job 9"}
    segs = [_Seg(job=7, owner=7, a=10, b=20, yielded=[]),
            _Seg(job=8, owner=5, a=20, b=30, yielded=[]),
            _Seg(job=9, owner=9, a=30, b=33, yielded=[])]
    pending = [(15, 5, (15, "m1")), (25, 5, (25, "m2")), (33, 5, (33, "m3"))]
    b._pe(3, segs, pending, [], [])
    assert b.w.log == [
        ("enter", 0, "idle", ()), ("leave", 10, "idle"),
        ("enter", 10, "job 7", (("job_id", 7),)), ("event", 15, "m1"), ("leave", 20, "job 7"),
        ("enter", 20, "job 8", (("job_id", 8), ("owner_job", 5))), ("event", 25, "m2"),
        ("leave", 30, "job 8"),
        ("enter", 30, "job 9", (("job_id", 9),)), ("leave", 33, "job 9"),
        ("enter", 33, "idle", ()), ("event", 33, "m3"), ("leave", 40, "idle")]
    assert b.n_job_regions == 3
