"""`cosim.workload.reads`: a workload read once per process, for the same path, bytes and
options, with its warnings told to every caller; anything else read again."""

from __future__ import annotations

import os

import pytest

from cosim.errors import InputError
from cosim.experiment import RunOptions, prepare
from cosim.workload.reads import WORKLOADS, WorkloadCache
from cosim.workload.swf import read_swf

LINE = "{id} {t} -1 10 {p} -1 -1 {p} 20 -1 1 1 1 -1 1 -1 -1 -1\n"


def trace(path, big=8, submit=0):
    """Two jobs; job 2 asks for `big` processors (rejected on fewer hosts, with a warning)."""
    path.write_text("; MaxNodes: 4\n" + LINE.format(id=1, t=submit, p=2)
                    + LINE.format(id=2, t=submit + 5, p=big))
    return path


class Counting:
    """`read_swf`, counting its calls."""

    def __init__(self):
        self.calls = 0
        self.__module__, self.__qualname__ = read_swf.__module__, read_swf.__qualname__

    def __call__(self, path, **kw):
        self.calls += 1
        return read_swf(path, **kw)


def test_the_same_file_is_read_once_and_its_warnings_told_to_every_caller(tmp_path):
    path = trace(tmp_path / "t.swf")
    cache, reader = WorkloadCache(), Counting()
    first, second = [], []
    a = cache.read(reader, path, first.append, max_hosts=4)
    b = cache.read(reader, path, second.append, max_hosts=4)
    c = cache.read(reader, path, None, max_hosts=4)
    assert a is b is c and reader.calls == cache.reads == 1
    assert first == second and len(first) == 1 and "job 2 needs 8 hosts" in first[0]
    assert [j.id for j in a.jobs] == [1] and [j.id for j in a.rejected] == [2]
    # other options, another reader: read again
    assert cache.read(reader, path, None, max_hosts=8).rejected == ()
    assert reader.calls == 2


def test_a_file_rewritten_in_place_is_read_again(tmp_path, monkeypatch):
    """Same path, inode, size and modification time, other bytes: the digest tells them."""
    path = trace(tmp_path / "t.swf", submit=1)
    cache, reader = WorkloadCache(), Counting()
    before = os.stat(path)
    assert cache.read(reader, path, max_hosts=4).jobs[0].submit == 10**9
    trace(path, submit=3)  # one digit changed in place: same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size,
                                                                before.st_mtime_ns)
    assert cache.read(reader, path, max_hosts=4).jobs[0].submit == 3 * 10**9
    assert reader.calls == 2
    # and the path as given is part of the key: the workload names it as given
    monkeypatch.chdir(tmp_path)
    assert cache.read(reader, "t.swf", max_hosts=4).path == "t.swf"
    assert reader.calls == 3


def test_errors_and_files_that_are_not_regular_are_never_kept(tmp_path):
    cache, reader = WorkloadCache(), Counting()
    bad = tmp_path / "bad.swf"
    bad.write_text("1 2 3\n")
    for _ in range(2):
        with pytest.raises(InputError, match="bad.swf:1"):
            cache.read(reader, bad)
    for _ in range(2):
        with pytest.raises(InputError):
            cache.read(reader, tmp_path)  # a directory
        with pytest.raises(InputError):
            cache.read(reader, tmp_path / "missing.swf")
    assert reader.calls == 6


def test_the_least_recently_used_goes_first(tmp_path):
    cache, reader = WorkloadCache(keep=2), Counting()
    paths = [trace(tmp_path / f"{k}.swf", submit=k) for k in range(3)]
    for p in (paths[0], paths[1], paths[0], paths[2]):  # 1 is the least recently used
        cache.read(reader, p)
    assert reader.calls == 3
    cache.read(reader, paths[0])
    assert reader.calls == 3
    cache.read(reader, paths[1])
    assert reader.calls == 4
    assert WorkloadCache(keep=0).read(reader, paths[0]).jobs
    cache.clear()
    cache.read(reader, paths[0])
    assert reader.calls == 6


def test_prepare_reads_a_workload_once_per_process(tmp_path):
    path = trace(tmp_path / "t.swf")
    WORKLOADS.clear()
    before = WORKLOADS.reads
    told: list[str] = []
    runs = [prepare(RunOptions(workload=str(path), batch=b, hosts=4), warn=told.append)
            for b in ("easy", "fcfs", "conservative")]
    assert WORKLOADS.reads == before + 1
    assert runs[0].workload is runs[1].workload is runs[2].workload
    assert len([w for w in told if "needs 8 hosts" in w]) == 3  # each run hears it


def test_a_file_rewritten_while_it_is_read_is_not_kept(tmp_path):
    """Its digest was taken before another process rewrote it, and the reader parsed the new
    bytes: kept, the old bytes would later give the new workload."""
    path = trace(tmp_path / "t.swf", submit=1)

    def rewritten(p, **kw):
        trace(path, submit=2)  # another process rewrites it meanwhile
        return read_swf(p, **kw)

    # the same key as `read_swf` (a kept result would be found by the next read)
    rewritten.__module__, rewritten.__qualname__ = read_swf.__module__, read_swf.__qualname__
    cache = WorkloadCache()
    told: list[str] = []
    assert cache.read(rewritten, path, told.append, max_hosts=4).jobs[0].submit == 2 * 10**9
    assert len(told) == 1  # its warnings are told all the same
    trace(path, submit=1)  # the bytes the digest was taken of, again
    assert cache.read(Counting(), path, max_hosts=4).jobs[0].submit == 10**9
