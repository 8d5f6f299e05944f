"""The contract every DLS technique module fulfils, and the exact-arithmetic helpers they share.

A technique is described by a `Technique` record (name, parameter dataclass, whether it is
adaptive or depends on which PE asks, and a factory). The factory turns validated `Params`
and a `Context` (what is known when the loop starts) into a `Planner`, the mutable state of one
loop execution. The runtime and `chunk_sizes` call ``planner.next(rank, remaining)`` once per
work request, in request order, and clamp the answer to ``min(max(raw, min_chunk), remaining)``
(the canonical clamp of docs/reference/dls.md §1); adaptive planners also receive
``planner.record(...)`` with the measurements of the requester's previous chunk just before its
next request is served (as DLS4LB and LB4OMP deliver them). Batches and stages count requests:
a planner counts its own calls to `next`. Formulas are evaluated exactly (integers, Fractions,
60-digit Decimals) with one ceil/floor at the end, except where they consume measured times.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np

from cosim.errors import InputError

__all__ = [
    "CommonParams",
    "MomentParams",
    "moments",
    "Context",
    "Planner",
    "Technique",
    "ceil_div",
    "exact",
    "dec",
    "dceil",
    "dfloor",
    "require",
    "weights_for",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommonParams:
    """Parameters every technique accepts.

    min_chunk: the smallest chunk handed out (the last chunk may still be smaller: it is the
    remainder). Default 1, as LoopSim and LB4OMP; DLS4LB-C uses P (dls.md D1).
    """

    min_chunk: int = 1

    def __post_init__(self) -> None:
        if self.min_chunk < 1:
            raise ValueError("min_chunk must be >= 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class MomentParams(CommonParams):
    """Parameters of techniques built on the iteration-time distribution (FAC, TAP).

    mu, sigma: mean and standard deviation of one iteration's time, in any one unit. In the
    runtime they default to the job's own iteration times (`Context.mean_s`, `Context.std_s`).
    """

    mu: float | None = None
    sigma: float | None = None

    def __post_init__(self) -> None:
        CommonParams.__post_init__(self)
        if self.mu is not None and self.mu <= 0:
            raise ValueError("mu must be > 0")
        if self.sigma is not None and self.sigma < 0:
            raise ValueError("sigma must be >= 0")


def moments(params: MomentParams, ctx: Context, technique: str) -> Decimal:
    """sigma/mu from the parameters, else from the context; 0 when sigma is 0.

    Costs that are all zero give mu = sigma = 0 in the context: no variance, ratio 0.
    """
    mu = require(params.mu if params.mu is not None else ctx.mean_s, technique, "mu",
                 "mean time of an iteration")
    sigma = require(params.sigma if params.sigma is not None else ctx.std_s, technique,
                    "sigma", "standard deviation of an iteration's time")
    if sigma == 0:
        return Decimal(0)
    with localcontext() as c:
        c.prec = 60
        return dec(sigma) / dec(mu)


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    """What a technique may know when a loop starts.

    n: iterations to schedule. ranks: the requesting PEs' ranks in the job (their order is the
    order of weights). speeds: relative speed of each rank (same order), used for WF's default
    weights. mean_s / std_s: mean and standard deviation of one iteration's time in seconds on
    a PE of the job (FAC, TAP and FSC use them when mu/sigma are not given). overhead_s: the
    scheduling overhead per chunk, message round trip included (FSC's default h). rng: the
    technique's random stream (RND). Unknown values are None; a technique needing one fails
    with a message saying which parameter to pass.
    """

    n: int
    ranks: tuple[int, ...]
    speeds: tuple[float, ...] | None = None
    mean_s: float | None = None
    std_s: float | None = None
    overhead_s: float | None = None
    rng: np.random.Generator | None = None

    @property
    def p(self) -> int:
        """Number of requesting PEs."""
        return len(self.ranks)


class Planner:
    """Mutable state of one technique over one loop execution (subclassed per technique)."""

    __slots__ = ()

    #: True when the planner wants ``record`` calls with measured chunk times.
    adaptive: bool = False
    #: True when ``record`` needs per-iteration time statistics (sum of squares), i.e. AF.
    wants_sq: bool = False

    def next(self, rank: int, remaining: int) -> int:
        """Raw chunk size for the request of `rank` with `remaining` unscheduled iterations."""
        raise NotImplementedError

    def fixed_size(self) -> int:
        """The raw size every further request gets, whichever PE asks and whatever is left,
        or 0 when it varies (the compiled loop then calls `next` for each request)."""
        return 0

    def record(
        self, rank: int, size: int, compute_s: float, elapsed_s: float, sq_s2: float
    ) -> None:
        """Measurements of `rank`'s last chunk: compute time, elapsed time since its request
        (overhead and messages included), and the sum of squared per-iteration times."""

    def end_step(self) -> None:
        """A time step of the loop has ended (all chunks done); AWF updates its weights here."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Technique:
    """A registered technique: its name, parameter class and planner factory.

    `fine_grained`: its chunks have a size that does not shrink with the work left and is
    usually small (SS, FSC), so a loop is about as many chunks as iterations — the kind of app
    worth simulating on another MPI rank; the others' loops are a few hundred chunks, cheaper
    to simulate than the rounds that would carry them (`cosim.placement`)."""

    name: str
    summary: str
    params: type[CommonParams]
    make: Callable[[Any, Context], Planner]
    adaptive: bool = False
    pe_dependent: bool = False
    fine_grained: bool = False


def ceil_div(a: int, b: int) -> int:
    """Exact integer ceil(a / b) for b > 0."""
    return -(-a // b)


def exact(x: float | int) -> Fraction:
    """A parameter as the exact decimal its user wrote (0.1 -> 1/10, not the binary double)."""
    return Fraction(repr(x)) if isinstance(x, float) else Fraction(x)


def dec(x: float | int | Fraction) -> Decimal:
    """A Decimal for 60-digit evaluation of formulas with roots and logarithms."""
    if isinstance(x, Fraction):
        with localcontext() as ctx:
            ctx.prec = 60
            return Decimal(x.numerator) / Decimal(x.denominator)
    return Decimal(repr(x)) if isinstance(x, float) else Decimal(x)


def dceil(x: Decimal) -> int:
    """Ceiling of a Decimal as an int."""
    return int(x.to_integral_value(rounding="ROUND_CEILING"))


def dfloor(x: Decimal) -> int:
    """Floor of a Decimal as an int."""
    return int(x.to_integral_value(rounding="ROUND_FLOOR"))


def require(value: float | None, technique: str, param: str, meaning: str) -> float:
    """`value` if known, else an InputError telling the user which parameter to pass."""
    if value is None or not math.isfinite(value):
        raise InputError(
            f"{technique} needs {param} ({meaning}); pass it as a parameter {param}=...",
            field="technique",
        )
    return value


def weights_for(
    given: Sequence[float], ctx: Context, technique: str
) -> list[Fraction]:
    """Per-rank weights summing exactly to P: the given ones, or relative speeds, or all 1."""
    p = ctx.p
    if given:
        if len(given) != p:
            raise InputError(
                f"{technique}: {len(given)} weights given for {p} PEs", field="weights"
            )
        raw = [exact(w) for w in given]
    elif ctx.speeds is not None:
        raw = [exact(s) for s in ctx.speeds]
    else:
        raw = [Fraction(1)] * p
    if any(w <= 0 for w in raw):
        raise InputError(f"{technique}: weights must be > 0", field="weights")
    total = sum(raw)
    return [p * w / total for w in raw]
