"""Frozen dataclass instances made in bulk from values already checked: `slot_maker`.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` and then runs
its ``__post_init__`` checks: about 10 µs for a 23-field `Job` on a slow day, which is most of
reading a 28,000-job trace. Where a caller has checked every value as ``__post_init__``
would (a trace's columns, checked at once with numpy; the compiled replay's own arrays),
`slot_maker` gives a function that makes the same instance by storing each field straight
into its slot: a third of the time. It is generated like the dataclass's own ``__init__``
(one line per field), so it makes no loop over fields per instance. The instances equal
those of the constructor; the tests that use it say so for each class it makes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["slot_maker"]


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
    env: dict[str, Any] = {f"{_OWN}new": object.__new__, f"{_OWN}cls": cls}
    obj = f"{_OWN}obj"
    lines = [f"def make({', '.join(given)}):", f"    {obj} = {_OWN}new({_OWN}cls)"]
    for f in fields:
        env[f"{_OWN}set_{f.name}"] = _slot(cls, f.name).__set__  # the slot's own store
        if f.name in given:
            value = f.name
        elif f.name in same:
            value = same[f.name]
        else:
            if f.name in fixed:
                env[f"{_OWN}v_{f.name}"] = fixed[f.name]
            elif f.default is not dataclasses.MISSING:
                env[f"{_OWN}v_{f.name}"] = f.default
            else:
                raise TypeError(f"{cls.__name__}.{f.name}: neither given, fixed nor a "
                                "constant default")
            value = f"{_OWN}v_{f.name}"
        lines.append(f"    {_OWN}set_{f.name}({obj}, {value})")
    lines.append(f"    return {obj}")
    exec("\n".join(lines), env)  # (as dataclasses makes __init__)
    make = env["make"]
    make.__qualname__ = f"slot_maker({cls.__name__})"
    return make


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
