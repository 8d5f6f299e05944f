"""SimGrid-style quantities: CPU speeds, bandwidths and durations written with units.

The accepted spellings are SimGrid's (``xbt_parse_units``), case-sensitive, with a few
additions that SimGrid's own documentation uses or users commonly write. **Speed** -> FLOP/s:
``f`` or ``flops`` with a decimal prefix (``k``/``K``, ``M``, ``G``, ``T``, ``P``, ``E``, ``Z``,
``Y``: ``100Mf``, ``1Gf``, ``2.4Gflops``; ``flops`` is matched without regard to case, so
``GFlops`` works) or a long prefix (``gigaflops``). **Bandwidth** -> bytes/s: ``Bps`` (bytes)
or ``bps`` (bits, 1 Bps = 8 bps) with a decimal prefix (``k``/``K`` = 1e3, …) or a binary one
(``Ki`` = 1024, ``Mi``, ``Gi``, ``Ti``, ``Pi``, ``Ei``, ``Zi``, ``Yi``): ``50Gbps`` = 6.25e9 B/s,
``1GiBps`` = 2^30 B/s. **Time** -> seconds: ``ps``, ``ns``, ``us``, ``ms``, ``s``, ``m``
(minute), ``h``, ``d``, ``w``; there are no other prefixes. A plain number (a string without a
unit, or a TOML int/float) is in the base unit: FLOP/s, bytes/s, seconds. The decimal number
is scaled exactly (``fractions.Fraction``) and rounded once to the nearest float, so
``"500ns"`` is exactly the float nearest to 5e-7. Speeds and bandwidths must be positive,
times non-negative, all finite (a number too large for a float is refused, its exponent read
before anything is computed); any problem is an `InputError` naming the field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction

from cosim.errors import InputError

__all__ = ["parse_speed", "parse_bandwidth", "parse_time"]

_DECIMAL = ("k", "M", "G", "T", "P", "E", "Z", "Y")
_BINARY = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi")
_LONG = ("kilo", "mega", "giga", "tera", "peta", "exa", "zetta", "yotta")


def _table(units: dict[str, Fraction], *, binary: bool) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for unit, base in units.items():
        out[unit] = base
        for power, prefix in enumerate(_DECIMAL, start=1):
            out[prefix + unit] = base * 1000**power
        out["K" + unit] = base * 1000  # SimGrid's docs write KBps; its parser wants kBps
        if binary:
            for power, prefix in enumerate(_BINARY, start=1):
                out[prefix + unit] = base * 1024**power
    return out


_SPEED = _table({"f": Fraction(1)}, binary=False)
_SPEED.update({p + "flops": Fraction(1000) ** i for i, p in enumerate(("",) + _LONG)})
_BANDWIDTH = _table({"Bps": Fraction(1), "bps": Fraction(1, 8)}, binary=True)
_TIME = {
    "ps": Fraction(1, 10**12), "ns": Fraction(1, 10**9), "us": Fraction(1, 10**6),
    "ms": Fraction(1, 10**3), "s": Fraction(1), "m": Fraction(60), "h": Fraction(3600),
    "d": Fraction(86400), "w": Fraction(604800),
}

_MAX_EXPONENT = 400  # decimal exponents beyond any float's, either way

_QUANTITY = re.compile(r"\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*")
_FLOPS = re.compile(r"(k|K|M|G|T|P|E|Z|Y)?flops", re.IGNORECASE)


def _speed_unit(unit: str) -> Fraction | None:
    if unit in _SPEED:
        return _SPEED[unit]
    m = _FLOPS.fullmatch(unit)  # "GFlops", "GFLOPS": case-insensitive on "flops" only
    if m and (m.group(1) is None or unit[0] in "kKMGTPEZY"):
        return _SPEED[(m.group(1) or "") + "f"]
    return None


def _parse(
    value: object,
    *,
    kind: str,
    lookup: Callable[[str], Fraction | None],
    hint: str,
    allow_zero: bool,
    field: str | None,
    file: object,
    line: int | None,
) -> float:
    def fail(problem: str) -> InputError:
        return InputError(problem, file=file, line=line, field=field)

    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise fail(f"expected a {kind} such as {hint}, got {value!r}")
    if isinstance(value, str):
        m = _QUANTITY.fullmatch(value)
        if m is None:
            raise fail(f"cannot read {value!r} as a {kind} (write e.g. {hint})")
        number, unit = m.group(1), m.group(2)
        scale = lookup(unit) if unit else Fraction(1)
        if scale is None:
            raise fail(f"unknown {kind} unit {unit!r} in {value!r} (write e.g. {hint})")
        # the exponent first: Fraction("1e99999999") would build a 10^8-digit integer
        if Decimal(number).adjusted() > _MAX_EXPONENT:
            raise fail(f"{kind} {value!r} is too large")
        if Decimal(number).adjusted() < -_MAX_EXPONENT:
            number = "0"  # below any float: zero (refused below where zero is)
        try:
            x = float(Fraction(number) * scale)
        except OverflowError:
            raise fail(f"{kind} {value!r} is too large") from None
    else:
        try:
            x = float(value)
        except OverflowError:
            raise fail(f"{kind} {value!r} is too large") from None
    if not math.isfinite(x):
        raise fail(f"{kind} {value!r} is not finite")
    if x < 0 or (x == 0 and not allow_zero):
        raise fail(f"{kind} must be {'non-negative' if allow_zero else 'positive'}, got {value!r}")
    return x


def parse_speed(
    value: str | float, *, field: str | None = None, file: object = None, line: int | None = None
) -> float:
    """Parse a per-core speed such as ``"1Gf"`` or ``"2.4Gflops"`` into FLOP/s.

    Parameters
    ----------
    value:
        A string with an optional unit, or a number (FLOP/s).
    field, file, line:
        Where the value comes from; they locate the `InputError` raised for a bad value.

    Returns
    -------
    float
        The speed in FLOP/s, positive and finite.
    """
    return _parse(value, kind="speed", lookup=_speed_unit, hint="'1Gf' or '100Mf'",
                  allow_zero=False, field=field, file=file, line=line)


def parse_bandwidth(
    value: str | float, *, field: str | None = None, file: object = None, line: int | None = None
) -> float:
    """Parse a bandwidth such as ``"50Gbps"`` (bits) or ``"125MBps"`` (bytes) into bytes/s.

    Parameters
    ----------
    value:
        A string with an optional unit, or a number (bytes/s).
    field, file, line:
        Where the value comes from; they locate the `InputError` raised for a bad value.

    Returns
    -------
    float
        The bandwidth in bytes per second, positive and finite.
    """
    return _parse(value, kind="bandwidth", lookup=_BANDWIDTH.get,
                  hint="'50Gbps', '125MBps' or '1GiBps'", allow_zero=False,
                  field=field, file=file, line=line)


def parse_time(
    value: str | float, *, field: str | None = None, file: object = None, line: int | None = None
) -> float:
    """Parse a duration or latency such as ``"500ns"``, ``"0.5us"`` or ``"2s"`` into seconds.

    Parameters
    ----------
    value:
        A string with an optional unit, or a number (seconds).
    field, file, line:
        Where the value comes from; they locate the `InputError` raised for a bad value.

    Returns
    -------
    float
        The duration in seconds, non-negative and finite.
    """
    return _parse(value, kind="time", lookup=_TIME.get, hint="'500ns', '1.5us' or '2ms'",
                  allow_zero=True, field=field, file=file, line=line)
