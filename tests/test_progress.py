"""Progress of long runs (`cosim.output.progress`, ``cosim run -q/-v``): a bar on terminals
only unless asked, the step times with --verbose, nothing but warnings and errors with --quiet,
and a round loop that reports every job ended."""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np

from cosim.bls import BatchConfig
from cosim.output.progress import Progress, simulated
from cosim.runner import simulate
from cosim.testing.workloads import lublin_like

SWF = ("; MaxNodes: 4\n1 0 0 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n"
       "2 5 0 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n"
       "3 7 0 10 8 -1 -1 8 20 -1 1 1 1 -1 1 -1 -1 -1\n")  # job 3: too big, a warning


def _run(tmp_path, *flags: str) -> subprocess.CompletedProcess:
    (tmp_path / "w.swf").write_text(SWF)
    return subprocess.run([sys.executable, "-m", "cosim", "run", "--workload", "w.swf",
                           "--out", f"out{len(flags)}{''.join(flags)}", *flags], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def test_not_a_terminal_shows_no_bar_unless_asked(tmp_path):
    plain = _run(tmp_path)
    assert plain.returncode == 0
    assert plain.stderr.splitlines() == [
        "cosim: warning: w.swf:4: job 3 needs 8 hosts (8 processors), the platform has 4: "
        "rejected"]
    verbose = _run(tmp_path, "-v")
    assert verbose.returncode == 0
    err = verbose.stderr
    assert "2/2 [" in err and "job/s" in err and "simulated 15 s" in err  # the bar, at the end
    assert "cosim: read 2 jobs, checked the options in " in err
    assert "simulated 2 jobs in " in err and "wrote out" in err
    quiet = _run(tmp_path, "-q")
    assert quiet.returncode == 0 and quiet.stderr == plain.stderr  # warnings still print
    both = _run(tmp_path, "-q", "-v")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


def test_the_main_job_says_what_it_simulates_unless_quiet(tmp_path):
    def run(*flags):
        return subprocess.run([sys.executable, "-m", "cosim", "run", "--out", "m", "--trace",
                               "none", "--no-plots", *flags], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)

    said = run()
    assert said.returncode == 0, said.stderr
    assert "cosim: simulating esp-mandelbrot.swf with STATIC, RCA off ..." in said.stderr
    assert run("-q").stderr == ""


def test_the_round_loop_reports_every_job_ended():
    jobs = lublin_like(3_000, 64, np.random.default_rng(3), load=0.9)
    seen: list[tuple[int, int]] = []
    res = simulate(jobs, n_hosts=64, batch=BatchConfig(backfill="easy"), replay=False,
                   progress=lambda t, n: seen.append((t, n)))
    assert len(seen) >= res.stats.rounds // 512  # every 512 rounds, and at the end
    ticks, ended = zip(*seen)
    assert list(ticks) == sorted(ticks) and list(ended) == sorted(ended)
    assert ended[-1] == len(jobs) and ticks[-1] == max(o.end for o in res.outcomes)


def test_the_bar_counts_jobs_and_shows_simulated_time():
    out = io.StringIO()
    with Progress(10, "run", stream=out, delay_s=0.0) as bar:
        bar(3_600 * 10**9, 4)
        bar(2 * 86_400 * 10**9, 10)
    text = out.getvalue()
    assert "10/10" in text and "simulated 2.0 d" in text
    assert [simulated(s * 10**9) for s in (42, 5_400, 3 * 86_400)] == ["42 s", "1.5 h",
                                                                       "3.0 d"]


def test_a_sweeps_progress_is_a_bar_lines_or_nothing():
    from cosim.output.progress import SweepProgress

    for bar, lines in ((True, False), (False, True), (False, False)):
        out = io.StringIO()
        p = SweepProgress(bar=bar, lines=lines, stream=out)
        for done in (1, 2, 3, 4):
            p(done, 4, 1, float(done))
        p.close()
        text = out.getvalue()
        if bar:
            assert "sweep" in text and "4/4" in text and "1 already finished" in text
        elif lines:
            assert text.splitlines()[-1] == "sweep: 4/4 runs (1 already finished), 4.0 s, ~0 s left"
            assert len(text.splitlines()) == 4 and "\r" not in text
        else:
            assert text == ""
