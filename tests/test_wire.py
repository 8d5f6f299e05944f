"""The MPI wire format: every fact and command, and the round messages around them, come back
equal (type, fields, hash, canonical key) from plain tuples that pickle without a class."""

from __future__ import annotations

import pickle
import pickletools

from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.core.indexset import IndexSet
from cosim.protocol import messages as m
from cosim.transport.base import AlsTotals, Kind, Reply, RoundMessage
from cosim.transport.wire import CODES, decode, encode

ticks = st.integers(0, 1 << 62)
ids = st.integers(1, 10**6)
sets = st.lists(st.integers(0, 5000), max_size=30).map(IndexSet.of)
hosts = st.lists(st.integers(0, 5000), max_size=10, unique=True).map(lambda h: tuple(sorted(h)))
opt_tick = st.none() | ticks

FACTS = [
    st.builds(m.AppCompleted, time=ticks, job_id=ids,
              status=st.sampled_from(["completed", "killed"])),
    st.builds(m.HostsYielded, time=ticks, job_id=ids, hosts=hosts),
    st.builds(m.AppStarted, time=ticks, job_id=ids),
    st.builds(m.HostsExcluded, time=ticks, job_id=ids, hosts=hosts, for_job=ids),
    st.builds(m.AppResized, time=ticks, job_id=ids, released=sets, added=sets,
              pes=st.integers(0, 10**5)),
]
COMMANDS = [
    st.builds(m.StartApp, time=ticks, job_id=ids, hosts=sets | hosts,
              pes=st.integers(1, 10**5), app=st.sampled_from(["rigid", "mandelbrot", "psia"]),
              params=st.lists(st.tuples(st.text(max_size=8), st.text(max_size=8)),
                              max_size=3).map(tuple),
              limit=opt_tick, pe_set=sets, watts_mw=st.integers(0, 10**6),
              slowdown_ppm=st.integers(10**6, 10**7)),
    st.builds(m.KillApp, time=ticks, job_id=ids, reason=st.text(max_size=10)),
    st.builds(m.ExcludeHosts, time=ticks, job_id=ids, count=st.integers(1, 100), for_job=ids),
    st.builds(m.ShrinkApp, time=ticks, job_id=ids, pes=sets, for_job=st.none() | ids,
              limit=opt_tick),
    st.builds(m.ExpandApp, time=ticks, job_id=ids, pes=sets, limit=opt_tick),
    st.builds(m.SetPower, time=ticks, job_id=ids, watts_mw=st.integers(0, 10**6),
              slowdown_ppm=st.integers(10**6, 10**7), limit=opt_tick),
]


#: pickle opcodes that load or build an object of some class (what must not travel)
_OBJECT_OPS = {"GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "REDUCE",
               "BUILD"}


def through_the_wire(msg):
    data = pickle.dumps(encode(msg), protocol=5)
    # no class travels: plain tuples only (by opcode: a text field may well say "cosim")
    assert not {op.name for op, _, _ in pickletools.genops(data)} & _OBJECT_OPS
    return decode(pickle.loads(data))


def test_the_wire_check_sees_a_class():
    data = pickle.dumps(m.KillApp(time=1, job_id=2), protocol=5)
    assert {op.name for op, _, _ in pickletools.genops(data)} & _OBJECT_OPS


def test_every_message_type_has_a_strategy():
    assert len(FACTS) + len(COMMANDS) == len(CODES)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(*COMMANDS), max_size=6), ticks,
       st.sampled_from(list(Kind)), st.booleans())
def test_round_messages_come_back_equal(commands, grant, kind, interrupted):
    msg = RoundMessage(kind=kind, grant=grant, commands=tuple(commands),
                       interrupted=interrupted)
    back = through_the_wire(msg)
    assert back == msg and type(back.kind) is Kind
    for a, b in zip(back.commands, msg.commands, strict=True):
        assert type(a) is type(b) and a == b and hash(a) == hash(b)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(*FACTS), max_size=8), opt_tick, st.none() | st.text(max_size=20))
def test_replies_come_back_equal(facts, promise, error):
    msg = Reply(facts=tuple(facts), promise=promise, error=error)
    back = through_the_wire(msg)
    assert back == msg
    for a, b in zip(back.facts, msg.facts, strict=True):
        assert type(a) is type(b) and a.key == b.key and hash(a) == hash(b)
        for f in ("released", "added"):
            if hasattr(b, f):
                assert type(getattr(a, f)) is IndexSet


def test_anything_else_passes_unchanged():
    totals = AlsTotals(chunk_events=5)
    assert encode(totals) is totals and decode(totals) is totals
    assert decode(("x", 1)) == ("x", 1)
