"""Per-iteration task costs of an app: a validated FLOP array with prefix sums.

`TaskCosts` is what every app model produces and what the ALS consumes: ``flop[i]`` is the
cost of loop iteration ``i``; ``prefix`` and ``prefix_sq`` are the running sums of the costs
and of their squares (``prefix[0] = 0``, ``prefix[i] = sum(flop[:i])``, by ``np.cumsum``), so
the cost of a chunk ``[first, first + size)`` is ``prefix[first + size] - prefix[first]`` in
O(1) and adaptive techniques get a chunk's per-iteration variance from ``prefix_sq``. All
arrays are float64 and read-only. `validate_costs` is the single gate through which
user-supplied numbers enter: it refuses empty input, NaN, infinities and negative values
with an `InputError` that names the file and, for text files, the line of the first bad value.
`MAX_TASKS` bounds the iterations of any app, checked on the parameters or a file's header
before anything is allocated (a one-line TOML could otherwise ask for terabytes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from cosim.errors import InputError

__all__ = ["TaskCosts", "validate_costs", "MAX_TASKS"]

#: The most loop iterations an app may have: 2^25 (33.5 M; ~1 GiB of cost arrays), 128 times
#: the 512 x 512 Mandelbrot of the ESP benchmark
MAX_TASKS = 2**25


def validate_costs(
    values: object,
    *,
    file: object | None = None,
    lines: Sequence[int] | None = None,
    field: str = "cost",
) -> np.ndarray:
    """Check per-iteration costs and return them as a fresh 1-D float64 array.

    Parameters
    ----------
    values:
        Anything `numpy.asarray` turns into a 1-D array of real numbers.
    file:
        The file the values came from, for the error message.
    lines:
        For values read from a text file, the 1-based line number of every value; an error
        then names the line (``costs.csv:17: field cost: NaN is not a cost``). Without it the
        message names the 0-based iteration index instead.
    field:
        The field name used in error messages.

    Returns
    -------
    numpy.ndarray
        A float64 copy of `values`, shape ``(n,)`` with ``n >= 1``.

    Raises
    ------
    InputError
        If the values are not a 1-D array of real numbers, are empty, or contain NaN,
        an infinity or a negative number (the first bad value is reported).
    """
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InputError(f"not an array of numbers ({exc})", file=file, field=field) from None
    if raw.dtype.kind not in "biuf":
        raise InputError(f"expected real numbers, got dtype {raw.dtype}", file=file, field=field)
    if raw.ndim != 1:
        raise InputError(f"expected a 1-D array, got shape {raw.shape}", file=file, field=field)
    if raw.size == 0:
        raise InputError("no costs (the input is empty)", file=file, field=field)
    flop = raw.astype(np.float64, copy=True)
    bad = ~np.isfinite(flop) | (flop < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        x = float(flop[i])
        what = "NaN" if math.isnan(x) else ("an infinity" if math.isinf(x) else f"{x!r} (negative)")
        problem = f"{what} is not a cost"
        if lines is not None:
            raise InputError(problem, file=file, line=int(lines[i]), field=field)
        raise InputError(f"{problem} (iteration {i})", file=file, field=field)
    return flop


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _prefix(a: np.ndarray) -> np.ndarray:
    out = np.empty(a.size + 1, dtype=np.float64)
    out[0] = 0.0
    np.cumsum(a, out=out[1:])
    return out


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class TaskCosts:
    """The per-iteration FLOP costs of one app instance, with prefix sums.

    Build it with `TaskCosts.from_array` (which validates and computes the prefixes) rather
    than directly. Equality is identity (``eq=False``): compare ``flop`` arrays explicitly.

    Attributes
    ----------
    flop:
        float64, shape ``(n,)``, ``n >= 1``, finite, ``>= 0``, read-only.
    model:
        ``'mandelbrot'``, ``'psia'`` or ``'profile'``.
    label:
        A short human label, e.g. ``"mandelbrot 512x512 it=1000 row"``.
    params:
        The resolved model parameters (for provenance), read-only.
    prefix:
        float64, shape ``(n + 1,)``: ``prefix[0] = 0``, ``prefix[i] = sum(flop[:i])``
        (``np.cumsum`` order), read-only.
    prefix_sq:
        The same for ``flop ** 2``.
    """

    flop: np.ndarray
    model: str
    label: str
    params: Mapping[str, object]
    prefix: np.ndarray
    prefix_sq: np.ndarray
    _std: float | None = field(default=None, init=False, repr=False, compare=False)  # once

    def __post_init__(self) -> None:
        n = self.flop.shape[0] if self.flop.ndim == 1 else -1
        if n < 1 or self.prefix.shape != (n + 1,) or self.prefix_sq.shape != (n + 1,):
            raise ValueError("TaskCosts: flop must be 1-D and non-empty, prefixes of length n+1")
        # Read-only, so that no consumer can change a cost after the prefixes were computed.
        for a in (self.flop, self.prefix, self.prefix_sq):
            _frozen(a)
        if not isinstance(self.params, MappingProxyType):
            object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    @classmethod
    def from_array(
        cls,
        flop: object,
        *,
        model: str,
        label: str,
        params: Mapping[str, object],
        file: object | None = None,
    ) -> TaskCosts:
        """Validate `flop` with `validate_costs` (a copy is taken) and compute the prefixes.

        Parameters
        ----------
        flop:
            Per-iteration costs in FLOP.
        model, label, params:
            As the attributes of the same name.
        file:
            Named in the error message if the values are refused.
        """
        a = validate_costs(flop, file=file)
        return cls(flop=a, model=model, label=label, params=dict(params),
                   prefix=_prefix(a), prefix_sq=_prefix(a * a))

    @property
    def n(self) -> int:
        """Number of iterations."""
        return int(self.flop.shape[0])

    @property
    def total(self) -> float:
        """Sum of all costs (``prefix[-1]``)."""
        return float(self.prefix[-1])

    @property
    def mean(self) -> float:
        """Mean cost per iteration."""
        return self.total / self.n

    @property
    def std(self) -> float:
        """Population standard deviation of the costs (``np.std`` with ``ddof=0``), computed
        once: every loop started on these costs (a cached size of an ESP workload: hundreds)
        asks for it."""
        s = self._std
        if s is None:
            s = float(np.std(self.flop))
            object.__setattr__(self, "_std", s)
        return s

    def chunk_flop(self, first: int, size: int) -> float:
        """Cost of iterations ``[first, first + size)``: ``prefix[first+size] - prefix[first]``.

        Raises
        ------
        IndexError
            If the range is not inside ``[0, n]`` (negative indices would silently wrap).
        """
        end = first + size
        if first < 0 or size < 0 or end > self.flop.shape[0]:
            raise IndexError(f"chunk [{first}, {end}) outside [0, {self.flop.shape[0]})")
        return float(self.prefix[end] - self.prefix[first])
