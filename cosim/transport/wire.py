"""What a round looks like on the wire: plain tuples of ints and strings, not pickled objects.

mpi4py pickles whatever it sends; a `RoundMessage` or `Reply` with its facts or commands as
frozen dataclasses (an `IntEnum` kind, `IndexSet` fields) costs 4–15 µs to pickle and as much
to unpickle, several times per round. `encode` turns them into nested tuples of ints, strings
and None, which pickle in about a microsecond, and `decode` rebuilds equal objects. A fact or a
command is ``(code, *field values)`` in its dataclass's field order (`CODES`); an `IndexSet`
value is ``("I", firsts, counts)`` (a tag no other field value starts with: host tuples hold
ints, parameters pairs). Anything else (the totals of a run, sent once) passes unchanged.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from cosim.core.indexset import IndexSet
from cosim.protocol import messages as m
from cosim.transport.base import Kind, Reply, RoundMessage

__all__ = ["CODES", "encode", "decode"]

#: every fact and command type, by wire code (its position)
CODES: tuple[type, ...] = (m.AppCompleted, m.HostsYielded, m.AppStarted, m.HostsExcluded,
                           m.AppResized, m.StartApp, m.KillApp, m.ExcludeHosts, m.ShrinkApp,
                           m.ExpandApp, m.SetPower)
_CODE = {cls: i for i, cls in enumerate(CODES)}
_FIELDS = tuple(tuple(f.name for f in fields(cls)) for cls in CODES)
_ROUND, _REPLY, _SET = "R", "P", "I"
_KINDS = {int(k): k for k in Kind}
_new, _set = object.__new__, object.__setattr__


def _value(v: Any) -> Any:
    if type(v) is IndexSet:
        first, count = zip(*v.runs) if len(v) else ((), ())
        return (_SET, first, count)
    return v


def _item(obj: Any) -> tuple:
    return (_CODE[type(obj)], *[_value(getattr(obj, f)) for f in _FIELDS[_CODE[type(obj)]]])


def _unvalue(v: Any) -> Any:
    if type(v) is tuple and v and v[0] == _SET:
        return IndexSet(tuple(v[1]), tuple(v[2]))
    return v


def _unitem(t: tuple) -> Any:
    # the fields set as the dataclass __init__ would (the messages validate nothing): 3x faster
    code = t[0]
    obj = _new(CODES[code])
    for f, v in zip(_FIELDS[code], t[1:], strict=True):
        _set(obj, f, _unvalue(v))
    return obj


def encode(msg: Any) -> Any:
    """A round message or reply as plain tuples (anything else unchanged)."""
    if type(msg) is RoundMessage:
        return (_ROUND, int(msg.kind), msg.grant, msg.version, msg.interrupted,
                tuple(_item(c) for c in msg.commands))
    if type(msg) is Reply:
        return (_REPLY, msg.promise, msg.error, msg.version, tuple(_item(f) for f in msg.facts))
    return msg


def decode(data: Any) -> Any:
    """The object `encode` made `data` from."""
    if type(data) is tuple and data:
        if data[0] == _ROUND:
            _, kind, grant, version, interrupted, commands = data
            return RoundMessage(kind=_KINDS[kind], grant=grant, version=version,
                                interrupted=interrupted,
                                commands=tuple(_unitem(c) for c in commands))
        if data[0] == _REPLY:
            _, promise, error, version, facts = data
            return Reply(promise=promise, error=error, version=version,
                         facts=tuple(_unitem(f) for f in facts))
    return data
