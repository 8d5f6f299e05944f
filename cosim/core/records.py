"""Frozen dataclass instances made in bulk from values already checked: `slot_maker`.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` and then runs
its ``__post_init__`` checks: about 10 µs for a 23-field `Job` on a slow day, which is most of
reading a 28,000-job trace. Where a caller has checked every value as ``__post_init__``
would (a trace's columns, checked at once with numpy; the compiled replay's own arrays),
`slot_maker` gives a function that makes the same instance by storing each field straight
into its slot: a third of the time. It is generated like the dataclass's own ``__init__``
(one line per field), so it makes no loop over fields per instance. The instances equal
those of the constructor; the tests that use it say so for each class it makes.
`bulk_maker` makes the instances of whole columns at once, by a compiled loop
(`cosim/core/_records.c`: a tenth of a microsecond an instance where `slot_maker`'s function
takes three or four) where it was built, else by `slot_maker`'s function, its reference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

try:  # the compiled maker (setup.py builds it where a C compiler is)
    from cosim.core import _records
except ImportError:  # pragma: no cover - an install without a C compiler
    _records = None

__all__ = ["RECORDS_KERNEL", "slot_maker", "bulk_maker"]

#: what `bulk_maker`'s functions make instances with: "compiled" or "python"
RECORDS_KERNEL = "compiled" if _records is not None else "python"


def slot_maker(cls: type, given: Sequence[str], fixed: Mapping[str, Any] | None = None,
               same: Mapping[str, str] | None = None) -> Callable[..., Any]:
    """A function of the fields `given` (positional, in that order) that returns an instance
    of `cls`, a ``slots=True`` dataclass, without running its ``__init__`` or
    ``__post_init__``: the caller's values must be what they would leave unchanged.

    Every other field takes, in this order: the value of the given field that `same` names
    for it (``{"min_pes": "pes"}``), its value in `fixed`, or its constant default. A field
    with none of these (no default, or a default factory) is a `TypeError` here, as is a name
    that is not a slotted field of `cls` (its own or a base's).
    """
    plan = _plan(cls, given, fixed, same)
    env: dict[str, Any] = {f"{_OWN}new": object.__new__, f"{_OWN}cls": cls}
    obj = f"{_OWN}obj"
    lines = [f"def make({', '.join(given)}):", f"    {obj} = {_OWN}new({_OWN}cls)"]
    for name, slot, source, value in plan:
        env[f"{_OWN}set_{name}"] = slot.__set__  # the slot's own store
        if source is None:
            env[f"{_OWN}v_{name}"] = value
            value = f"{_OWN}v_{name}"
        else:
            value = given[source]
        lines.append(f"    {_OWN}set_{name}({obj}, {value})")
    lines.append(f"    return {obj}")
    exec("\n".join(lines), env)  # (as dataclasses makes __init__)
    make = env.pop("make")  # (left in its own globals, it would be a reference cycle)
    make.__qualname__ = f"slot_maker({cls.__name__})"
    return make


def bulk_maker(cls: type, given: Sequence[str], fixed: Mapping[str, Any] | None = None,
               same: Mapping[str, str] | None = None) -> Callable[..., list[Any]]:
    """A function of one list per field of `given` (positional, in that order, all of one
    length) that returns, in row order, the instances `slot_maker` (same arguments) makes of
    each row: made by the compiled maker where it was built, else by `slot_maker`'s
    function. Columns of unequal lengths are a `ValueError`, another number of columns a
    `TypeError`."""
    if _records is None:  # an install without a C compiler
        one = slot_maker(cls, given, fixed, same)

        def make_python(*columns: Sequence[Any]) -> list[Any]:
            n = _same_lengths(columns, len(given))
            return list(map(one, *columns)) if columns else [one() for _ in range(n)]

        return make_python
    plan = _plan(cls, given, fixed, same)
    slots = tuple(slot for _, slot, _, _ in plan)
    constants = tuple(value for _, _, _, value in plan)
    sources = [source for _, _, source, _ in plan]
    compiled = _records.make

    def make(*columns: Sequence[Any]) -> list[Any]:
        n = _same_lengths(columns, len(given))
        lists = [c if c.__class__ is list else list(c) for c in columns]
        return compiled(cls, slots, tuple(None if k is None else lists[k] for k in sources),
                        constants, n)

    make.__qualname__ = f"bulk_maker({cls.__name__})"
    return make


def _same_lengths(columns: Sequence[Sequence[Any]], expected: int) -> int:
    """The length of the columns (ValueError: not `expected` columns, or unequal lengths)."""
    if len(columns) != expected:
        raise TypeError(f"{expected} columns expected, {len(columns)} given")
    lengths = {len(c) for c in columns}
    if len(lengths) > 1:
        raise ValueError(f"columns of unequal lengths {sorted(lengths)}")
    return lengths.pop() if lengths else 0


def _plan(cls: type, given: Sequence[str], fixed: Mapping[str, Any] | None,
          same: Mapping[str, str] | None) -> list[tuple[str, Any, int | None, Any]]:
    """Every field of `cls` in order as ``(name, slot descriptor, source, value)``: `source`
    the position in `given` of the field whose value it takes (its own, or the one `same`
    names), else None and `value` its constant (from `fixed`, or its default). TypeError as
    `slot_maker` says."""
    fixed = dict(fixed or {})
    same = dict(same or {})
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    unknown = (set(given) | set(fixed) | set(same) | set(same.values())) - set(names)
    if unknown:
        raise TypeError(f"{cls.__name__}: not slotted fields {sorted(unknown)}")
    # the generated code's own names start with _slot_: no field may
    clash = [n for n in names if n.startswith(_OWN)]
    if clash:
        raise TypeError(f"{cls.__name__}: field names {clash} start with {_OWN!r}")
    position = {name: k for k, name in enumerate(given)}
    if len(position) != len(given):
        raise TypeError(f"{cls.__name__}: fields given twice in {list(given)}")
    plan = []
    for f in fields:
        slot = _slot(cls, f.name)
        if f.name in position:
            plan.append((f.name, slot, position[f.name], None))
        elif f.name in same:
            if same[f.name] not in position:
                raise TypeError(f"{cls.__name__}.{f.name}: same as {same[f.name]!r}, which is "
                                "not given")
            plan.append((f.name, slot, position[same[f.name]], None))
        elif f.name in fixed:
            plan.append((f.name, slot, None, fixed[f.name]))
        elif f.default is not dataclasses.MISSING:
            plan.append((f.name, slot, None, f.default))
        else:
            raise TypeError(f"{cls.__name__}.{f.name}: neither given, fixed nor a "
                            "constant default")
    return plan


_OWN = "_slot_"


def _slot(cls: type, name: str) -> Any:
    """The slot descriptor of field `name` in `cls` or a base (TypeError: not a slot)."""
    for klass in cls.__mro__:
        found = klass.__dict__.get(name)
        if found is not None:
            if type(found).__name__ != "member_descriptor":
                break
            return found
    raise TypeError(f"{cls.__name__}.{name} is not a slot (a slots=True dataclass?)")
