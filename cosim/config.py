"""Strict configuration helpers shared by platforms, app models and technique parameters.

`read_toml` loads a TOML file and turns syntax errors into one-line `InputError`s naming the
file and line. `build` makes a frozen dataclass from a mapping (a TOML table or ``k=v`` pairs
from the command line): unknown keys are refused with the sorted list of known ones, strings
are coerced to the field's type (int, float, bool, str, Literal choices, tuples of numbers,
optional values), and every failure names the file and the field. `parse_pairs` reads the
CLI's repeated ``k=v`` options.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from cosim.errors import InputError

__all__ = ["read_toml", "build", "parse_pairs", "coerce", "check_keys"]

T = TypeVar("T")


def read_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file; a missing file or a syntax error becomes an `InputError`."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InputError("no such file", file=p) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", file=p) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column \d+\)", msg)
        line = int(m.group(1)) if m else None
        problem = re.sub(r" \(at line .*\)$", "", msg)
        raise InputError(f"invalid TOML: {problem}", file=p, line=line) from None


def check_keys(
    table: Mapping[str, Any], known: Iterable[str], *, file: object = None, section: str = ""
) -> None:
    """Refuse keys of `table` that are not in `known`, naming the sorted known ones."""
    known = set(known)
    for key in table:
        if key not in known:
            raise InputError(
                f"unknown key (known: {', '.join(sorted(known)) or 'none'})",
                file=file,
                field=f"{section}.{key}" if section else key,
            )


def parse_pairs(pairs: Iterable[str] | None, *, option: str) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``; a pair without ``=`` is an error."""
    out: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, got {pair!r}", field=option)
        out[key.strip()] = value.strip()
    return out


def _is_optional(tp: Any) -> tuple[bool, Any]:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return True, args[0]
    return False, tp


def coerce(value: Any, tp: Any, *, where: str, file: object = None) -> Any:
    """Convert `value` (a string from the CLI or a TOML value) to the annotated type `tp`."""
    optional, tp = _is_optional(tp)
    if optional and (value is None or (isinstance(value, str) and value.lower() in ("", "none"))):
        return None

    def fail(problem: str) -> InputError:
        return InputError(problem, file=file, field=where)

    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        choices = typing.get_args(tp)
        text = str(value).lower() if isinstance(value, str) else value
        for choice in choices:
            if text == choice or (isinstance(choice, str) and str(text) == choice.lower()):
                return choice
        raise fail(f"{value!r} is not one of {', '.join(map(str, choices))}")
    if origin is tuple:
        (elem, *_rest) = typing.get_args(tp)
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise fail(f"expected a list, got {value!r}")
        return tuple(coerce(v.strip() if isinstance(v, str) else v, elem, where=where, file=file)
                     for v in items if not (isinstance(v, str) and not v.strip()))
    if tp is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise fail(f"expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, bool):
            raise fail(f"expected an integer, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        try:
            return int(str(value).strip().replace("_", ""))
        except ValueError:
            raise fail(f"expected an integer, got {value!r}") from None
    if tp is float:
        if isinstance(value, bool):
            raise fail(f"expected a number, got {value!r}")
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise fail(f"expected a number, got {value!r}") from None
        if not math.isfinite(x):
            raise fail(f"expected a finite number, got {value!r}")
        return x
    if tp is str:
        if not isinstance(value, str):
            raise fail(f"expected a string, got {value!r}")
        return value
    raise TypeError(f"coerce: unsupported annotation {tp!r}")  # a bug in a dataclass, not input


def build(
    cls: type[T],
    values: Mapping[str, Any],
    *,
    file: object = None,
    section: str = "",
    extra: Mapping[str, Any] | None = None,
) -> T:
    """Instantiate the dataclass `cls` from `values`, strictly.

    Unknown keys raise `InputError` listing the known ones; values are coerced with `coerce`;
    fields missing from `values` keep their defaults. `extra` supplies already-typed values
    that are not user input. A ``ValueError`` raised by the dataclass's ``__post_init__`` is
    reported as an `InputError` on the same file and section.
    """
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    check_keys(values, names, file=file, section=section)
    kwargs: dict[str, Any] = dict(extra or {})
    for key, value in values.items():
        where = f"{section}.{key}" if section else key
        kwargs[key] = coerce(value, hints[key], where=where, file=file)
    try:
        return cls(**kwargs)
    except ValueError as exc:
        raise InputError(str(exc), file=file, field=section or None) from None
    except TypeError as exc:  # a required field is missing
        m = re.search(r"argument: '(\w+)'", str(exc))
        name = m.group(1) if m else "?"
        raise InputError("required key is missing", file=file,
                         field=f"{section}.{name}" if section else name) from None
