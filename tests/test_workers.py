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
