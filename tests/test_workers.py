"""Local worker pools end with what they work for (`cosim.core.workers`): a sweep parent
killed outright leaves no worker running, and an interrupted one (SIGTERM taken as Ctrl-C)
stops its workers at once instead of waiting for their runs to end, losing no finished run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="signals and re-parenting: POSIX")


def _gone(pid: int) -> bool:
    """No such process, or a zombie (an orphan's exit waits for a reaper that may not run
    inside a container)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    try:
        return any(line.startswith("State:") and "Z" in line
                   for line in status.read_text().splitlines())
    except OSError:
        return True


def _wait_until(check, timeout: float) -> bool:
    stop = time.monotonic() + timeout
    while time.monotonic() < stop:
        if check():
            return True
        time.sleep(0.05)
    return check()


def _start(script: str, tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    """Run `script` in a new Python process, and the pids of its two workers once both are
    busy (each touches ``<pid>.busy`` under `tmp_path` when its task starts)."""
    (tmp_path / "slow.py").write_text(textwrap.dedent("""
        import os, time
        from pathlib import Path

        def nap(where):
            Path(where, f"{os.getpid()}.busy").touch()
            time.sleep(120)

        def slow_run(opt, run_dir):
            nap(run_dir)
            return {}
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    markers = lambda: list(tmp_path.rglob("*.busy"))  # noqa: E731
    if not _wait_until(lambda: len(markers()) == 2 or proc.poll() is not None, 60):
        proc.kill()
    if len(markers()) != 2:
        proc.kill()
        raise AssertionError(f"the parent did not start two workers: {proc.communicate()}")
    return proc, sorted(int(m.stem) for m in markers())


@pytest.mark.parametrize("context", ["spawn", "fork", "forkserver"])
@pytest.mark.serial  # (times signals and process ends: alone, `make test`)
def test_workers_end_when_their_parent_is_killed(tmp_path, context):
    """Whatever the start method (a forkserver worker's parent is the fork server, which
    ends with the pool's process)."""
    proc, workers = _start(f"""
        import time
        from cosim.core.workers import worker_pool
        import slow

        if __name__ == "__main__":
            with worker_pool(2, context={context!r}) as pool:
                futures = [pool.submit(slow.nap, ".") for _ in range(2)]
                time.sleep(120)
    """, tmp_path)
    assert not any(_gone(w) for w in workers)
    proc.kill()  # SIGKILL: no handler, no cleanup in the parent
    proc.wait(10)
    assert _wait_until(lambda: all(_gone(w) for w in workers), 10), \
        "a worker outlived its killed parent"


@pytest.mark.serial  # (times signals and process ends: alone, `make test`)
def test_an_interrupted_sweep_stops_its_workers_at_once(tmp_path):
    """SIGTERM to the parent only (``kill PID``, ``timeout``): the sweep's Ctrl-C path ends
    both runs in progress without waiting for them and leaves them unfinished (config.json,
    no summary.json), to be run again by the next invocation."""
    proc, workers = _start("""
        from pathlib import Path
        from cosim.experiment import RunOptions
        from cosim.sweep import SweepRun, run_sweep
        from cosim.testing.study import sigterm_as_interrupt
        import slow

        Path("w.swf").write_text("")
        runs = [SweepRun(id=f"r{i}", opt=RunOptions(workload="w.swf"), varying=(("seed", i),))
                for i in range(2)]
        with sigterm_as_interrupt():
            try:
                run_sweep(runs, Path("out"), execute_run=slow.slow_run, jobs=2)
            except KeyboardInterrupt:
                print("interrupted", flush=True)
    """, tmp_path)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 10, "the interrupted sweep waited for its runs"
    assert out.strip() == "interrupted", err
    assert _wait_until(lambda: all(_gone(w) for w in workers), 10)
    for i in range(2):
        run_dir = tmp_path / "out" / "runs" / f"r{i}"
        assert (run_dir / "config.json").exists() and not (run_dir / "summary.json").exists()


@pytest.mark.serial  # (times signals and process ends: alone, `make test`)
def test_an_interrupted_study_stops_its_workers_at_once(tmp_path):
    """`run_all` (the study scripts' pool: the platform's start method, fork here), SIGTERM
    to the parent while both workers are busy: it ends at once and no queued task starts
    (forked workers inherit the parent's SIGTERM handler: the pool resets it in them)."""
    proc, workers = _start("""
        from cosim.testing.study import run_all
        import slow

        if __name__ == "__main__":
            try:
                run_all(slow.nap, ["."] * 6, list(range(6)), 2)
            except KeyboardInterrupt:
                print("interrupted", flush=True)
    """, tmp_path)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    # at once: not after the 5 s a worker that caught SIGTERM is given before SIGKILL
    assert time.monotonic() - t0 < 3 and out.strip() == "interrupted", err
    assert "Traceback" not in err
    assert _wait_until(lambda: all(_gone(w) for w in workers), 10)
    time.sleep(0.5)
    assert len(list(tmp_path.glob("*.busy"))) == 2  # no task started after the signal


def _square(x: int) -> int:
    return x * x


@pytest.mark.parametrize("context", ["spawn", "forkserver", None])
def test_a_pool_left_normally_gives_every_result_and_ends_its_workers(context):
    from cosim.core.workers import worker_pool

    with worker_pool(2, context=context) as pool:
        got = list(pool.map(_square, range(8)))
        processes = list(pool._processes.values())
    assert got == [x * x for x in range(8)]
    assert processes and not any(p.is_alive() for p in processes)


def test_a_failed_run_lets_the_runs_in_progress_finish(tmp_path):
    """A run that raises ends the sweep, but the sibling run already in progress finishes
    and keeps its files (summary.json): the next invocation will not repeat it."""
    (tmp_path / "runs.py").write_text(textwrap.dedent("""
        import time
        from pathlib import Path

        def run(opt, run_dir):
            if run_dir.name == "bad":
                raise ValueError("this run fails")
            time.sleep(1.5)
            (Path(run_dir) / "summary.json").write_text("{}")
            return {}
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        import runs

        from cosim.experiment import RunOptions
        from cosim.sweep import SweepRun, run_sweep

        (tmp_path / "w.swf").write_text("")
        opt = RunOptions(workload=str(tmp_path / "w.swf"))
        todo = [SweepRun(id="good", opt=opt, varying=(("seed", 0),)),
                SweepRun(id="bad", opt=opt, varying=(("seed", 1),))]
        with pytest.raises(ValueError, match="this run fails"):
            run_sweep(todo, tmp_path / "out", execute_run=runs.run, jobs=2)
        assert (tmp_path / "out" / "runs" / "good" / "summary.json").exists()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("runs", None)


def _threshold(_: int) -> tuple[int, ...]:
    import gc

    return gc.get_threshold()


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_workers_collect_garbage_as_their_parent_does(context):
    """A fresh interpreter would start at CPython's thresholds: the pool passes its maker's
    (`cosim.core.collect.GC_THRESHOLD` in a sweep or a study)."""
    import gc

    from cosim.core.workers import worker_pool

    before = gc.get_threshold()
    gc.set_threshold(12_345, 7, 9)
    try:
        with worker_pool(1, context=context) as pool:
            assert pool.submit(_threshold, 0).result() == (12_345, 7, 9)
    finally:
        gc.set_threshold(*before)


def test_a_study_collects_garbage_rarely_in_its_workers_and_restores_the_thresholds():
    import gc

    from cosim.core.collect import GC_THRESHOLD
    from cosim.testing.study import run_all

    before = gc.get_threshold()
    for workers in (1, 2):
        got, _ = run_all(_threshold, [0, 1], [0, 1], workers)
        assert got == {0: GC_THRESHOLD, 1: GC_THRESHOLD}
        assert gc.get_threshold() == before


def _pid_and_square(x: int) -> tuple[int, int]:
    return os.getpid(), x * x


def _sigint_blocked() -> bool:
    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def _bad_line(line: int) -> None:
    from cosim.errors import InputError

    raise InputError("no such   thing", file="w.swf", line=line, field="procs")


def test_forked_map_gives_every_result_in_order_from_forked_workers():
    from cosim.core.workers import forked_map

    calls = [(_pid_and_square, (x,)) for x in range(7)]
    got = forked_map(calls, 2)
    assert [r for _, r in got] == [x * x for x in range(7)]
    pids = {pid for pid, _ in got}
    if sys.platform.startswith("linux"):  # elsewhere the calls run here
        assert os.getpid() not in pids and 1 <= len(pids) <= 2
    # one worker, or one call: in this process
    assert forked_map(calls, 1) == [(os.getpid(), x * x) for x in range(7)]
    assert forked_map(calls[:1], 4) == [(os.getpid(), 0)]
    assert forked_map([], 4) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers: Linux only")
def test_forked_map_workers_inherit_their_calls_and_ignore_ctrl_c():
    from cosim.core.workers import forked_map

    # a lambda cannot be pickled: the workers have the calls from the fork, not a queue
    rows = list(range(1000))
    got = forked_map([(lambda k=k: sum(rows[k:]), ()) for k in range(4)], 2)
    assert got == [sum(rows[k:]) for k in range(4)]
    # SIGINT blocked in the workers (a Ctrl-C is the parent's to handle), not left so here
    assert forked_map([(_sigint_blocked, ())] * 3, 2) == [True] * 3
    assert not _sigint_blocked()


def test_forked_map_raises_the_first_failing_calls_error_whole():
    from cosim.core.workers import forked_map
    from cosim.errors import InputError

    with pytest.raises(InputError) as err:
        forked_map([(_square, (3,)), (_bad_line, (7,)), (_square, (4,))], 2)
    assert str(err.value) == "w.swf:7: field procs: no such thing"
    assert (err.value.file, err.value.line, err.value.field) == ("w.swf", 7, "procs")


@pytest.mark.serial  # (times signals and process ends: alone, `make test`)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers: Linux only")
def test_a_ctrl_c_ends_a_forked_map_with_no_temporary_file_left(tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) during a
    `forked_map` whose calls are writing files: the parent is interrupted, its workers end
    within seconds, and the files they were writing leave no temporary behind."""
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        from pathlib import Path
        from cosim.core.files import atomic_open
        from cosim.core.workers import forked_map

        # Python's own SIGINT handler, as in a command started from a terminal (a shell
        # starts background jobs with SIGINT ignored, and Python then installs none)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        out = Path({str(tmp_path)!r})

        def slow(k):
            with atomic_open(out / f"f{{k}}.bin", "wb") as fh:
                fh.write(b"x" * 1000)
                (out / f"started{{k}}").write_text(str(os.getpid()))
                time.sleep(60)
            return k

        try:
            forked_map([(slow, (k,)) for k in range(2)], 2)
        except KeyboardInterrupt:
            sys.exit(130)
        """)
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert _wait_until(lambda: len(list(tmp_path.glob("started*"))) == 2, 30)
        workers = [int(p.read_text()) for p in tmp_path.glob("started*")]
        assert len(list(tmp_path.glob(".f*.tmp"))) == 2  # both being written
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and time.monotonic() - t0 < 5
    assert b"Traceback" not in err, err.decode()
    assert _wait_until(lambda: all(_gone(pid) for pid in workers), 5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["started0", "started1"]
