"""PE availability: the fraction of a PE's nominal speed it delivers, constant or piecewise in time.

A perturbation model (DESIGN §5): a PE of speed s with availability a(t) computes at s a(t)
FLOP/s. `Availability` is a step function: factor ``factors[i]`` from ``times[i]`` (ticks) until
the next time; the first time is 0 and the last factor must be > 0 so that every chunk ends.
`finish` integrates the work over the steps; the time spent in the last step is rounded to the
nearest tick (the clock's rule). `load_availability` reads a CSV ``pe,t_s,factor`` (one row per
change, PE = rank in the job) and reports bad rows as ``FILE:LINE: field NAME: problem``.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cosim.core.clock import TICKS_PER_SECOND, to_ticks
from cosim.errors import InputError

__all__ = ["Availability", "load_availability"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Availability:
    """Piecewise-constant availability of one PE: ``factors[i]`` from ``times[i]`` on."""

    times: tuple[int, ...] = (0,)
    factors: tuple[float, ...] = (1.0,)

    def __post_init__(self) -> None:
        if not self.times or len(self.times) != len(self.factors):
            raise ValueError("availability needs as many times as factors, at least one")
        if self.times[0] != 0 or any(b <= a for a, b in zip(self.times, self.times[1:])):
            raise ValueError("availability times must start at 0 and increase")
        if any(not math.isfinite(f) or f < 0 for f in self.factors) or self.factors[-1] <= 0:
            raise ValueError("availability factors must be >= 0 and the last one > 0")

    @property
    def constant(self) -> float | None:
        """The factor if it never changes, else None."""
        return self.factors[0] if len(self.factors) == 1 else None

    def finish(self, start: int, flop: float, speed: float) -> int:
        """Tick at which `flop` FLOP started at tick `start` are done at nominal `speed`."""
        times, factors = self.times, self.factors
        i = 0
        while i + 1 < len(times) and times[i + 1] <= start:
            i += 1
        t = start
        left = flop
        while True:
            rate = speed * factors[i] / TICKS_PER_SECOND  # FLOP per tick
            if i + 1 == len(times):
                return t + round(left / rate)
            span = times[i + 1] - t
            if rate > 0:
                if left <= rate * span:
                    return t + round(left / rate)
                left -= rate * span
            t = times[i + 1]
            i += 1


def load_availability(path: str | Path, n_pes: int) -> list[Availability]:
    """Read per-PE availability steps from a CSV with header ``pe,t_s,factor``."""
    p = Path(path)
    steps: dict[int, list[tuple[int, float]]] = {}
    try:
        with p.open(newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None or [h.strip() for h in header] != ["pe", "t_s", "factor"]:
                raise InputError("expected the header pe,t_s,factor", file=p, line=1)
            for lineno, row in enumerate(reader, start=2):
                if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
                    continue
                if len(row) != 3:
                    raise InputError(f"expected 3 fields, got {len(row)}", file=p, line=lineno)
                pe = _number(row[0], int, p, lineno, "pe")
                t_s = _number(row[1], float, p, lineno, "t_s")
                factor = _number(row[2], float, p, lineno, "factor")
                if not 0 <= pe < n_pes:
                    raise InputError(f"PE {pe} is not in 0..{n_pes - 1}", file=p, line=lineno,
                                     field="pe")
                if t_s < 0:
                    raise InputError("time must be >= 0", file=p, line=lineno, field="t_s")
                if factor < 0:
                    raise InputError("factor must be >= 0", file=p, line=lineno, field="factor")
                steps.setdefault(pe, []).append((to_ticks(t_s), factor))
    except FileNotFoundError:
        raise InputError("no such file", file=p) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", file=p) from None
    out = []
    for pe in range(n_pes):
        rows = sorted(steps.get(pe, []), key=lambda r: r[0])
        if not rows or rows[0][0] != 0:
            rows.insert(0, (0, 1.0))
        times = tuple(t for t, _ in rows)
        if len(set(times)) != len(times):
            raise InputError(f"PE {pe} has two factors for the same time", file=p, field="t_s")
        try:
            out.append(Availability(times=times, factors=tuple(f for _, f in rows)))
        except ValueError as exc:
            raise InputError(f"PE {pe}: {exc}", file=p, field="factor") from None
    return out


def _number(text: str, kind: type, file: Path, line: int, field: str) -> float:
    try:
        value = kind(text.strip())
    except ValueError:
        raise InputError(f"not a number: {text.strip()!r}", file=file, line=line,
                         field=field) from None
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"not a finite number: {text.strip()!r}", file=file, line=line,
                         field=field)
    return value


def as_availability(x: float | Availability) -> Availability:
    """A constant factor or an Availability, as an Availability."""
    return x if isinstance(x, Availability) else Availability(factors=(float(x),))


def availabilities(spec: Sequence[float | Availability] | None, n: int) -> list[Availability]:
    """Per-rank availabilities from an optional sequence (None: all 1)."""
    if spec is None:
        return [Availability()] * n
    if len(spec) != n:
        raise InputError(f"{len(spec)} availabilities given for {n} PEs", field="availability")
    return [as_availability(x) for x in spec]
