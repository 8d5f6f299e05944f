"""Progress of a long simulation on the terminal: jobs ended, simulated time, rate.

`Progress` is what the round loop calls every 512 rounds (`cosim.runner.run_rounds`) with
the tick it decided and the number of jobs ended; it draws a tqdm bar of jobs ended out of the
workload's, with the simulated time and the rate, on standard error. tqdm shows the bar only
once a run has taken `DELAY_S` seconds, redraws it at most twice a second, and leaves a
finished bar in place. ``cosim run`` draws it when standard error is a terminal (``--verbose``
also elsewhere, ``--quiet`` never); nothing else in cosim prints progress.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from cosim.core.clock import TICKS_PER_SECOND

__all__ = ["Progress", "SweepProgress", "DELAY_S", "simulated"]

#: a run shorter than this shows no bar
DELAY_S = 1.0


def simulated(ticks: int) -> str:
    """Simulated time for a person: ``"42 s"``, ``"3.5 h"``, ``"12.0 d"``."""
    s = ticks / TICKS_PER_SECOND
    if s < 3600:
        return f"{s:.0f} s"
    if s < 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


class Progress:
    """A bar of jobs ended out of `total` for the run `label` (module docstring)."""

    def __init__(self, total: int, label: str, *, stream: TextIO | None = None,
                 delay_s: float | None = None) -> None:
        from tqdm import tqdm

        delay = DELAY_S if delay_s is None else delay_s
        self._bar: Any = tqdm(total=total, desc=label, unit="job", delay=delay,
                              mininterval=0.5, file=stream or sys.stderr, leave=True,
                              dynamic_ncols=True)

    def __call__(self, tick: int, ended: int) -> None:
        """The loop decided up to `tick` and `ended` jobs have ended."""
        bar = self._bar
        bar.set_postfix_str(f"simulated {simulated(tick)}", refresh=False)
        bar.update(ended - bar.n)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SweepProgress:
    """A sweep's progress over its runs: a tqdm bar on a terminal (`bar`), else, when asked
    (`lines`), a plain line per finished run ("sweep: 5/12 runs (3 already finished), 41.2 s,
    ~57 s left"), else nothing. Called as `cosim.sweep.run_sweep`'s ``progress``."""

    def __init__(self, *, bar: bool, lines: bool, stream: TextIO | None = None) -> None:
        self._use_bar = bar
        self._lines = lines
        self._stream = stream or sys.stderr
        self._bar: Any = None

    def __call__(self, done: int, total: int, skipped: int, elapsed: float) -> None:
        ran = done - skipped
        left = (total - done) * elapsed / ran if ran else 0.0
        if self._use_bar:
            if self._bar is None:
                from tqdm import tqdm

                self._bar = tqdm(total=total, initial=done, desc="sweep", unit="run",
                                 file=self._stream, dynamic_ncols=True)
                self._bar.set_postfix_str(f"{skipped} already finished")
            else:
                self._bar.update(done - self._bar.n)
            if done >= total:
                self._bar.close()
        elif self._lines:
            print(f"sweep: {done}/{total} runs ({skipped} already finished), {elapsed:,.1f} s, "
                  f"~{left:,.0f} s left", file=self._stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
