"""Simulated time as integer nanoseconds (ticks), and the one rule that turns seconds into ticks.

All simulated times are `Tick` values: integer nanoseconds since t=0 of the run. Floats
(seconds, FLOP divided by FLOP/s) become ticks only through `to_ticks`, which rounds to the
nearest tick with ties to even (Python's ``round``, numpy's ``rint``): a duration below half a
nanosecond becomes 0. The ALS inner loop inlines exactly this rule (``round(x)``) for speed.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from typing import NewType

import numpy as np

__all__ = ["Tick", "TICKS_PER_SECOND", "MAX_TICKS", "MAX_SECONDS", "to_ticks", "to_seconds",
           "ticks_array", "duration_problem", "seconds_to_ticks", "format_ticks"]

Tick = NewType("Tick", int)
TICKS_PER_SECOND = 1_000_000_000
#: The latest time a simulation can hold: int64 ticks (about 292 years). Inputs are checked
#: against it when read, so no sum of times overflows deep in a run.
MAX_TICKS = 2**63 - 1
MAX_SECONDS = MAX_TICKS // TICKS_PER_SECOND


def duration_problem(seconds: float) -> str | None:
    """Why `seconds` cannot be a duration (not finite, negative, beyond `MAX_SECONDS`), or
    None when it can."""
    if not seconds == seconds or seconds in (float("inf"), float("-inf")):
        return f"must be a finite number of seconds, got {seconds!r}"
    if seconds < 0:
        return f"must be >= 0 seconds, got {seconds!r}"
    if seconds > MAX_SECONDS:
        return f"must be at most {MAX_SECONDS:,} seconds (292 years), got {seconds!r}"
    return None


def to_ticks(seconds: float) -> Tick:
    """Seconds -> ticks, rounded to nearest, ties to even."""
    return Tick(round(seconds * TICKS_PER_SECOND))


def to_seconds(ticks: int) -> float:
    """Ticks -> seconds (for output only; never feed the result back into the simulation)."""
    return ticks / TICKS_PER_SECOND


def ticks_array(seconds: np.ndarray) -> np.ndarray:
    """Vectorised `to_ticks` (same rounding rule), as int64."""
    return np.rint(np.asarray(seconds, dtype=np.float64) * TICKS_PER_SECOND).astype(np.int64)


def seconds_to_ticks(text: str) -> int:
    """Decimal seconds as text -> ticks: the exact value rounded to nearest, ties to even.

    The rule of `to_ticks` applied to the exact decimal number rather than to its float
    approximation, so any tick count written by `format_ticks` reads back unchanged (a float
    has too few digits for nanoseconds past ~10^7 s). Used for SWF, Batsim and value sidecars.
    """
    if text.lstrip("+-").isdigit():
        return int(text) * TICKS_PER_SECOND
    with localcontext(prec=max(28, len(text) + 12)):  # the product exact: one rounding only
        return int((Decimal(text) * TICKS_PER_SECOND).to_integral_value(ROUND_HALF_EVEN))


def format_ticks(ticks: int) -> str:
    """Ticks as exact decimal seconds without trailing zeros: ``1500000000`` -> ``'1.5'``."""
    t = int(ticks)  # (a Python int: negating numpy's most negative value overflows)
    if t < 0:
        return "-" + format_ticks(-t)
    whole, frac = divmod(t, TICKS_PER_SECOND)  # (the writers' hottest call)
    return f"{whole}.{frac:09d}".rstrip("0") if frac else str(whole)
