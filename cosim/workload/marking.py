"""Marking jobs moldable or malleable: PE bounds from fractions, and marking by a fraction.

**Bounds from fractions** (`pe_bounds`; the same rule for ``; CosimApp:`` comments, ESP and
`mark_malleable`): a job with ``P`` PEs (`Job.pes`, the reference allocation: SWF field 8, or
field 5 with ``procs_field="allocated"``) and fractions ``a`` (``min_frac``, in (0, 1]) and
``b`` (``max_frac``, > 0, may exceed 1 to let the job grow beyond its request) gets
``min_pes = max(1, ceil(a x P))`` and ``max_pes = max(min_pes, floor(b x P))``: the minimum
rounds up, the maximum rounds down but never below the minimum (so ``a <= b`` never gives an
empty range by rounding, e.g. a = b = 0.5 on 3 PEs gives 2..2). The products are exact
(fractions of the decimal text, not floats: ``min_frac=0.14`` on 50 PEs is 7, not 8). An
absolute ``min_pes``/``max_pes`` is used as given; a bound given neither way is ``P``.
**Marking by fraction** (`mark_malleable`, spec malleability.md §4.7): a job that is still
``rigid`` becomes ``kind`` (``malleable`` by default) when ``stream(seed, "malleable",
job.id).random() < fraction`` (`cosim.core.rng`: one keyed draw per job id, so the result
depends neither on the order of the jobs nor on the MPI rank; fraction 0 marks none, 1 marks
all), with bounds from ``min_frac`` (default 0.5: the job may be halved, rounded up) and
``max_frac`` (default 1.0: never beyond its request), and ``model`` when given. **Precedence**:
marks written in the trace (a non-rigid ``kind`` from a ``; CosimApp:`` comment or a generator)
> the fraction > the default ``rigid``. A job the trace leaves rigid, explicitly or not, takes
part in the draw (a `Job` does not record whether ``kind=rigid`` was written). Note that
spec §4.7 item 5 ranks the fraction above the CosimApp class; cosim keeps trace marks instead,
so that a sweep over the fraction never unmarks what the trace marked.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable
from fractions import Fraction

from cosim.core.rng import stream
from cosim.errors import InputError
from cosim.workload.jobs import Job
from cosim.workload.runtime_models import RuntimeModel

__all__ = [
    "DEFAULT_MIN_FRAC", "DEFAULT_MAX_FRAC", "MARK_STREAM", "MARKABLE_KINDS",
    "pe_bounds", "check_fracs", "decimal_text", "mark_malleable",
]

#: Default bounds of a job marked by fraction or by ``--malleable``: it may shrink to half its
#: PEs (rounded up) and grow back to its request, not beyond.
DEFAULT_MIN_FRAC = 0.5
DEFAULT_MAX_FRAC = 1.0
#: Name of the keyed random stream of `mark_malleable` (keys: the job id).
MARK_STREAM = "malleable"
#: The kinds `mark_malleable` can give (the ones with PE bounds).
MARKABLE_KINDS = ("moldable", "malleable")


def pe_bounds(pes: int, *, min_pes: int = 0, max_pes: int = 0,
              min_frac: Fraction | None = None,
              max_frac: Fraction | None = None) -> tuple[int, int]:
    """``(min_pes, max_pes)`` of a job with `pes` PEs by the module's rule.

    An absolute bound (``> 0``) wins over a fraction; a bound given neither way is `pes`.
    The result may have ``min > max`` (an absolute maximum below the minimum, or a minimum
    above `pes` with no maximum): the caller reports it.
    """
    if min_pes:
        lo = min_pes
    elif min_frac is not None:  # ceil(min_frac x pes) in integers (exact, and fast)
        lo = max(1, -(-pes * min_frac.numerator // min_frac.denominator))
    else:
        lo = pes
    if max_pes:
        hi = max_pes
    elif max_frac is not None:
        hi = max(lo, pes * max_frac.numerator // max_frac.denominator)
    else:
        hi = pes
    return lo, hi


def decimal_text(x: Fraction) -> str:
    """`x` as exact decimal text without trailing zeros: ``1/2`` -> ``'0.5'``, ``2`` -> ``'2'``
    (``str(x)``, e.g. ``'1/3'``, if `x` has no finite decimal form)."""
    den, twos, fives = x.denominator, 0, 0
    while den % 2 == 0:
        den, twos = den // 2, twos + 1
    while den % 5 == 0:
        den, fives = den // 5, fives + 1
    if den != 1:
        return str(x)
    digits = max(twos, fives)       # the fewest that make x an integer: no trailing zero
    text = str(abs(x.numerator) * 10**digits // x.denominator).rjust(digits + 1, "0")
    if digits:
        text = f"{text[:-digits]}.{text[-digits:]}"
    return ("-" if x < 0 else "") + text


def _exact(value: object, field: str, what: str) -> Fraction:
    """A finite real number (not a bool) as an exact Fraction of its shortest decimal form."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value):
        raise InputError(f"must be {what}, got {value!r}", field=field)
    return Fraction(repr(float(value)))   # 0.3 -> 3/10, not the float's binary value


def check_fracs(min_frac: float, max_frac: float, *, min_field: str = "min-frac",
                max_field: str = "max-frac") -> tuple[Fraction, Fraction]:
    """Validate a (min_frac, max_frac) pair given as numbers: ``0 < min_frac <= 1``,
    ``max_frac > 0``, ``min_frac <= max_frac``; returns them as exact fractions (of their
    shortest decimal form) for `pe_bounds`. Raises `InputError` naming the field."""
    a = _exact(min_frac, min_field, "a number in (0, 1]")
    if not 0 < a <= 1:
        raise InputError(f"must be a number in (0, 1], got {min_frac!r}", field=min_field)
    b = _exact(max_frac, max_field, "a number > 0")
    if not b > 0:
        raise InputError(f"must be a number > 0, got {max_frac!r}", field=max_field)
    if a > b:
        raise InputError(f"min_frac {min_frac!r} > max_frac {max_frac!r}", field=min_field)
    return a, b


def mark_malleable(
    jobs: Iterable[Job],
    fraction: float,
    *,
    seed: int,
    kind: str = "malleable",
    min_frac: float = DEFAULT_MIN_FRAC,
    max_frac: float = DEFAULT_MAX_FRAC,
    model: RuntimeModel | None = None,
) -> tuple[Job, ...]:
    """Mark a keyed-random `fraction` of the rigid jobs as `kind` (rules in the module doc).

    Parameters
    ----------
    jobs:
        The workload; returned in the same order.
    fraction:
        Probability, in [0, 1], that a rigid job is marked (``--malleable-fraction``).
    seed:
        Root seed of the stream ``"malleable"`` (integer >= 0); the draw of a job is keyed by
        its id only.
    kind:
        ``"malleable"`` (default) or ``"moldable"``.
    min_frac, max_frac:
        Bounds of a marked job relative to its PEs (`pe_bounds`); defaults 0.5 and 1.0.
    model:
        Runtime model given to the marked jobs (None: each keeps its own, `IDEAL` unless the
        trace said otherwise). Jobs left rigid and jobs marked by the trace are not touched.

    Returns
    -------
    tuple of Job
        New jobs (`dataclasses.replace`) where marked, the same objects elsewhere.

    Raises
    ------
    InputError
        ``field malleable-fraction`` for a fraction outside [0, 1]; ``seed``, ``kind``,
        ``min-frac``, ``max-frac``, ``model`` for the other arguments.
    """
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) \
            or not 0 <= fraction <= 1:   # NaN fails the comparison too
        raise InputError(f"must be a number in [0, 1], got {fraction!r}",
                         field="malleable-fraction")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InputError(f"must be an integer >= 0, got {seed!r}", field="seed")
    if kind not in MARKABLE_KINDS:
        raise InputError(f"unknown kind {kind!r} to mark jobs with (known: "
                         f"{', '.join(sorted(MARKABLE_KINDS))})", field="kind")
    a, b = check_fracs(min_frac, max_frac)
    if model is not None and not isinstance(model, RuntimeModel):
        raise InputError(f"expected a RuntimeModel, got {model!r}", field="model")
    out = []
    for job in jobs:
        if job.kind == "rigid" and fraction > 0 and (
                fraction >= 1 or stream(seed, MARK_STREAM, job.id).random() < fraction):
            lo, hi = pe_bounds(job.pes, min_frac=a, max_frac=b)
            job = dataclasses.replace(job, kind=kind, min_pes=lo, max_pes=hi,
                                      model=job.model if model is None else model)
        out.append(job)
    return tuple(out)
