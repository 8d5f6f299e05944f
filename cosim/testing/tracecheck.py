"""The project's semantic check of an OTF2 trace, and a deterministic text dump for goldens.

libotf2 and ``otf2-print`` check the format only (docs/reference/otf2.md §7.2, §9): an unbalanced
Leave, an unmatched message or a rank outside its communicator pass them. `check_trace` reads
an archive back with the `otf2` reader and checks what Vampir relies on: per location,
non-decreasing ticks within the clock properties' range and as many events as the definitions
announce; Enter/Leave nested LIFO with nothing left open; every MpiSend matched by exactly one
MpiRecv on the receiver's location, FIFO per (sender, receiver, communicator, tag), received
at or after it was sent, with the same length, ranks resolving to locations of the
communicator; ProgramBegin/ProgramEnd present, at most once and paired per location group,
bracketing that group's events; metric instances sampled on their recorder location. It
raises `TraceError` listing the first problems, or returns a `TraceSummary` of counts (Enters
per region name, messages, samples) for tests to compare with the run's tables. `dump_trace`
renders definitions and each location's events as text, free of the anchor's random trace id
and of wall-clock dates, so a trace can be compared line by line with a golden file.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import otf2

from cosim.errors import CosimError

__all__ = ["Record", "TraceData", "TraceError", "TraceSummary", "check_trace", "dump_trace",
           "read_trace"]


class TraceError(CosimError):
    """A trace broke a semantic rule; `problems` lists them (the first ones)."""

    def __init__(self, path: Path, problems: list[str], total: int) -> None:
        self.problems = tuple(problems)
        more = f"\n  ... and {total - len(problems)} more" if total > len(problems) else ""
        super().__init__(f"{path}: {total} problem(s) in the trace:\n  "
                         + "\n  ".join(problems) + more)


class Record(NamedTuple):
    """One event of a location: kind is enter, leave, send, recv, metric, begin, end (or the
    event's class name); name: region, communicator, metric or program name; peer: the rank
    for send/recv (-1 otherwise); attrs: (attribute name, value) sorted by name; values:
    metric values."""

    time: int
    kind: str
    name: str
    peer: int = -1
    tag: int = -1
    length: int = -1
    attrs: tuple[tuple[str, Any], ...] = ()
    values: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class TraceData:
    """A trace read back: definitions that matter here and every location's records.

    locations: (name, type, group name) by location id; declared: the number of events
    each location's definition announces; comms: communicator name -> location id of each
    rank; metric_recorders: metric instance name -> recorder location id; clock: (timer
    resolution, global offset, trace length); groups: location group name -> its type;
    records: one list per location id, in the location's order.
    """

    path: Path
    clock: tuple[int, int, int]
    locations: tuple[tuple[str, str, str], ...]
    groups: Mapping[str, str]
    declared: tuple[int, ...]
    comms: Mapping[str, tuple[int, ...]]
    metric_recorders: Mapping[str, int]
    definitions_text: tuple[str, ...]
    records: tuple[list[Record], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceSummary:
    """Counts of a trace that passed `check_trace`.

    locations: location names by id. events: all records. enters: Enters per region name.
    messages: matched MpiSend/MpiRecv pairs. metric_samples: Metric records. max_depth: the
    deepest region nesting. program: (ProgramBegin tick, ProgramEnd tick) of the first group
    that has them.
    """

    locations: tuple[str, ...]
    events: int
    enters: Mapping[str, int]
    messages: int
    metric_samples: int
    max_depth: int
    program: tuple[int, int]


def _anchor(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    return p / "traces.otf2" if p.is_dir() else p


def _enum(v: Any) -> str:
    """``LocationType.CPU_THREAD`` -> ``cpu_thread``."""
    return str(v).rsplit(".", 1)[-1].lower()


def _metric_name(m: Any) -> str:
    cls = getattr(m, "metric_class", m)
    names = ",".join(mm.name for mm in cls.members)
    kind = "instance" if hasattr(m, "recorder") else "class"
    return f"{kind}[{names}]"


def read_trace(path: str | os.PathLike[str]) -> TraceData:
    """Read a trace (its directory or anchor file) into a `TraceData`."""
    anchor = _anchor(path)
    if not anchor.is_file():
        raise FileNotFoundError(f"no OTF2 anchor file at {anchor}")
    with otf2.reader.open(str(anchor)) as r:
        d = r.definitions
        cp = d.clock_properties
        locs = list(d.locations)
        index = {loc._ref: i for i, loc in enumerate(locs)}
        locations = tuple((loc.name, _enum(loc.type), loc.group.name) for loc in locs)
        groups = {g.name: _enum(g.location_group_type) for g in d.location_groups}
        comms = {c.name: tuple(index[m._ref] for m in c.group.members) for c in d.comms}
        recorders = {}
        for m in d.metrics:
            if hasattr(m, "recorder"):
                recorders[_metric_name(m)] = index[m.recorder._ref]
        records: list[list[Record]] = [[] for _ in locs]
        for loc, ev in r.events:
            records[index[loc._ref]].append(_record(ev))
        declared = tuple(loc.number_of_events for loc in locs)
        defs = _definitions_text(d, locs)
    return TraceData(path=anchor.parent, clock=(cp.timer_resolution, cp.global_offset,
                                                 cp.trace_length),
                     locations=locations, groups=groups, declared=declared, comms=comms,
                     metric_recorders=recorders, definitions_text=defs,
                     records=tuple(records))


def _record(ev: Any) -> Record:
    kind = type(ev).__name__
    attrs = tuple(sorted((a.name, v) for a, v in (ev.attributes or {}).items()))
    if kind == "Enter":
        return Record(ev.time, "enter", ev.region.name, attrs=attrs)
    if kind == "Leave":
        return Record(ev.time, "leave", ev.region.name, attrs=attrs)
    if kind == "MpiSend":
        return Record(ev.time, "send", ev.communicator.name, ev.receiver, ev.msg_tag,
                      ev.msg_length, attrs)
    if kind == "MpiRecv":
        return Record(ev.time, "recv", ev.communicator.name, ev.sender, ev.msg_tag,
                      ev.msg_length, attrs)
    if kind == "Metric":
        return Record(ev.time, "metric", _metric_name(ev.metric), attrs=attrs,
                      values=tuple(ev.values))
    if kind == "ProgramBegin":
        return Record(ev.time, "begin", str(ev.program_name), attrs=attrs,
                      values=tuple(str(a) for a in ev.program_arguments))
    if kind == "ProgramEnd":
        return Record(ev.time, "end", "", attrs=attrs, values=(ev.exit_status,))
    return Record(ev.time, kind, "", attrs=attrs)


def _definitions_text(d: Any, locs: list[Any]) -> tuple[str, ...]:
    """The definitions as sorted-by-id text lines (no anchor id, no date)."""
    out = []
    cp = d.clock_properties
    out.append(f"clock: resolution {cp.timer_resolution} offset {cp.global_offset} "
               f"length {cp.trace_length}")
    for n in d.system_tree_nodes:
        parent = n.parent.name if n.parent is not None else "-"
        out.append(f"system tree node {n._ref}: {n.name!r} class {n.class_name!r} "
                   f"parent {parent!r}")
    for g in d.location_groups:
        out.append(f"location group {g._ref}: {g.name!r} {_enum(g.location_group_type)} "
                   f"in {g.system_tree_parent.name!r}")
    for loc in locs:
        out.append(f"location {loc._ref}: {loc.name!r} {_enum(loc.type)} in "
                   f"{loc.group.name!r}, {loc.number_of_events} events")
    for r in d.regions:
        out.append(f"region {r._ref}: {r.name!r} {_enum(r.region_role)} "
                   f"{_enum(r.paradigm)}: {r.description}")
    for g in d.groups:
        if g.group_type == otf2.GroupType.COMM_GROUP:
            members = f"{len(g.members)} ranks"
        else:
            members = ", ".join(repr(m.name) for m in g.members)
        out.append(f"group {g._ref}: {g.name!r} {_enum(g.group_type)} "
                   f"{_enum(g.paradigm)}: {members}")
    for c in d.comms:
        out.append(f"comm {c._ref}: {c.name!r} group {c.group.name!r}")
    for a in d.attributes:
        out.append(f"attribute {a._ref}: {a.name!r} {_enum(a.type)}: {a.description}")
    for m in d.metrics:
        if hasattr(m, "recorder"):
            out.append(f"metric instance {m._ref}: class {m.metric_class._ref} recorder "
                       f"{m.recorder.name!r} scope {_enum(m.metric_scope)} "
                       f"{getattr(m.scope, 'name', '?')!r}")
        else:
            members = "; ".join(f"{mm.name} {_enum(mm.value_type)} {_enum(mm.metric_mode)} "
                                f"unit {mm.unit!r}" for mm in m.members)
            out.append(f"metric class {m._ref}: {_enum(m.occurrence)} "
                       f"{_enum(m.recorder_kind)}: {members}")
    return tuple(out)


def check_trace(trace: str | os.PathLike[str] | TraceData, *,
                max_problems: int = 20) -> TraceSummary:
    """Check the semantic rules of the module docstring.

    Parameters
    ----------
    trace:
        A trace directory, its anchor file, or a `TraceData` already read.
    max_problems:
        How many problems the error message lists.

    Returns
    -------
    TraceSummary
        Counts of the trace.

    Raises
    ------
    TraceError
        When any rule is broken; lists the first `max_problems` problems.
    """
    data = trace if isinstance(trace, TraceData) else read_trace(trace)
    problems: list[str] = []
    _, offset, length = data.clock
    enters: Counter[str] = Counter()
    max_depth = 0
    samples = 0
    sends: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    recvs: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    begins: dict[str, list[int]] = defaultdict(list)
    ends: dict[str, list[int]] = defaultdict(list)
    span: dict[str, list[int]] = {}
    for i, recs in enumerate(data.records):
        name, _, group = data.locations[i]
        where = f"location {i} {name!r}"
        if len(recs) != data.declared[i]:
            problems.append(f"{where}: {len(recs)} events read, {data.declared[i]} declared")
        stack: list[str] = []
        last = None
        for r in recs:
            if last is not None and r.time < last:
                problems.append(f"{where}: tick {r.time} after tick {last}")
            last = r.time
            if not offset <= r.time <= offset + length:
                problems.append(f"{where}: tick {r.time} outside the clock range "
                                f"[{offset}, {offset + length}]")
            s = span.setdefault(group, [r.time, r.time])
            s[0], s[1] = min(s[0], r.time), max(s[1], r.time)
            if r.kind == "enter":
                stack.append(r.name)
                enters[r.name] += 1
                max_depth = max(max_depth, len(stack))
            elif r.kind == "leave":
                if not stack:
                    problems.append(f"{where}: tick {r.time}: Leave {r.name!r} with no open "
                                    "region")
                elif stack[-1] != r.name:
                    problems.append(f"{where}: tick {r.time}: Leave {r.name!r} while "
                                    f"{stack[-1]!r} is the innermost open region")
                    stack.pop()
                else:
                    stack.pop()
            elif r.kind in ("send", "recv"):
                members = data.comms.get(r.name)
                if members is None:
                    problems.append(f"{where}: tick {r.time}: unknown communicator {r.name!r}")
                    continue
                if not 0 <= r.peer < len(members):
                    problems.append(f"{where}: tick {r.time}: rank {r.peer} outside "
                                    f"{r.name!r} ({len(members)} ranks)")
                    continue
                peer = members[r.peer]
                if r.kind == "send":
                    sends[(i, peer, r.name, r.tag)].append((r.time, r.length))
                else:
                    recvs[(peer, i, r.name, r.tag)].append((r.time, r.length))
            elif r.kind == "metric":
                samples += 1
                rec = data.metric_recorders.get(r.name)
                if rec is not None and rec != i:
                    problems.append(f"{where}: tick {r.time}: {r.name} sampled off its "
                                    f"recorder location {rec}")
            elif r.kind == "begin":
                begins[group].append(r.time)
            elif r.kind == "end":
                ends[group].append(r.time)
        if stack:
            problems.append(f"{where}: regions left open at the end: {stack}")
    messages = 0
    for key in sorted(set(sends) | set(recvs)):
        s, rv = sends.get(key, []), recvs.get(key, [])
        src, dst, comm, tag = key
        what = (f"messages {data.locations[src][0]!r} -> {data.locations[dst][0]!r} "
                f"({comm!r}, tag {tag})")
        if len(s) != len(rv):
            problems.append(f"{what}: {len(s)} sends, {len(rv)} receives")
        for k, ((ts, ls), (tr, lr)) in enumerate(zip(s, rv, strict=False)):
            if tr < ts:
                problems.append(f"{what}: #{k} received at tick {tr} before it was sent at "
                                f"tick {ts}")
            if ls != lr:
                problems.append(f"{what}: #{k} sent {ls} bytes, received {lr}")
        messages += min(len(s), len(rv))
    program = None
    for g in data.groups:
        b, e = begins.get(g, []), ends.get(g, [])
        if len(b) > 1 or len(e) > 1:
            problems.append(f"location group {g!r}: {len(b)} ProgramBegin, {len(e)} "
                            "ProgramEnd (at most one each)")
        if bool(b) != bool(e):
            problems.append(f"location group {g!r}: ProgramBegin and ProgramEnd not paired")
        if b and e:
            lo, hi = span[g]
            if lo < b[0] or hi > e[0]:
                problems.append(f"location group {g!r}: events in [{lo}, {hi}] outside "
                                f"ProgramBegin..ProgramEnd [{b[0]}, {e[0]}]")
            if program is None:
                program = (b[0], e[0])
    if program is None:
        problems.append("no ProgramBegin/ProgramEnd in the trace")
    if problems:
        raise TraceError(data.path, problems[:max_problems], len(problems))
    return TraceSummary(locations=tuple(n for n, _, _ in data.locations),
                        events=sum(len(r) for r in data.records),
                        enters=dict(sorted(enters.items())), messages=messages,
                        metric_samples=samples, max_depth=max_depth,
                        program=program or (0, 0))


def _fmt(v: Any) -> str:
    return repr(round(v, 9)) if isinstance(v, float) else repr(v)


def dump_trace(trace: str | os.PathLike[str] | TraceData) -> str:
    """The trace as deterministic text: definitions, then each location's events in order
    (one line each: tick, kind, name, details). Compare it with a golden file."""
    data = trace if isinstance(trace, TraceData) else read_trace(trace)
    out = ["# cosim OTF2 trace dump v1", *data.definitions_text]
    for i, recs in enumerate(data.records):
        name, typ, group = data.locations[i]
        out.append(f"== location {i} {name!r} ({typ}, {group!r}): {len(recs)} events")
        for r in recs:
            line = f"{r.time} {r.kind}"
            if r.name:
                line += f" {r.name!r}"
            if r.kind in ("send", "recv"):
                line += f" {'to' if r.kind == 'send' else 'from'} {r.peer} tag {r.tag} " \
                        f"len {r.length}"
            if r.values:
                line += " [" + ", ".join(_fmt(v) for v in r.values) + "]"
            if r.attrs:
                line += " {" + ", ".join(f"{k}={_fmt(v)}" for k, v in r.attrs) + "}"
            out.append(line)
    return "\n".join(out) + "\n"
