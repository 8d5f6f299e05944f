"""The registry of DLS techniques, and the public API other tools and the tests use.

One module per technique defines a `Technique` record; `REGISTRY` maps upper-case names to
them. Lookup is case-insensitive, accepts ``_`` for ``-`` and ``mFSC`` for ``MFSC``; an unknown
name fails with the sorted list of known ones. `chunk_sizes` gives the whole chunk sequence of
a non-adaptive technique; requests are assumed to come round-robin from PEs 0..P-1 (which only
matters for WF and its weights); adaptive techniques raise, because their chunks depend on
measured times: run them through `cosim.als.runtime`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cosim.als.techniques import (
    af, awf, awf_b, awf_c, awf_d, awf_e, fac, fac2, fiss, fsc, gss, mfsc, pls, rnd, ss, static,
    tap, tfss, tss, viss, wf,
)
from cosim.als.techniques.base import CommonParams, Context, Planner, Technique
from cosim.config import build
from cosim.errors import InputError
from cosim.plugins import Registry

__all__ = ["REGISTRY", "names", "get", "make_params", "chunk_sizes", "Context", "Planner",
           "Technique", "CommonParams"]

REGISTRY: Mapping[str, Technique] = Registry("cosim.techniques", {
    m.TECHNIQUE.name: m.TECHNIQUE
    for m in (static, ss, fsc, mfsc, gss, tss, fac, fac2, wf, awf, awf_b, awf_c, awf_d, awf_e,
              af, tap, fiss, viss, tfss, pls, rnd)
}, kind=Technique, key=lambda n: n.upper().replace("_", "-"),  # as `get` looks names up
    name_of=lambda t: t.name)  # + plugins (`cosim.plugins`)


def names() -> list[str]:
    """The registered technique names, in the order of the reference table."""
    return list(REGISTRY)


def get(name: str) -> Technique:
    """The technique called `name` (case-insensitive; ``_`` accepted for ``-``)."""
    key = name.strip().upper().replace("_", "-")
    try:
        return REGISTRY[key]
    except KeyError:
        raise InputError(
            f"unknown technique {name!r} (known: {', '.join(sorted(REGISTRY))})",
            field="technique",
        ) from None


def make_params(technique: Technique, values: Mapping[str, Any]) -> CommonParams:
    """Validated parameters of `technique` from typed values or CLI strings."""
    return build(technique.params, values, section=technique.name)


def chunk_sizes(name: str, n: int, p: int, **params: Any) -> list[int]:
    """The whole chunk sequence of technique `name` for `n` iterations on `p` PEs.

    Every chunk is ``min(max(raw, min_chunk), remaining)``, so the sizes are >= 1 and sum to
    `n`. Requests come round-robin from PEs 0..p-1. Adaptive techniques raise `InputError`.
    """
    technique = get(name)
    if technique.adaptive:
        raise InputError(
            f"{technique.name} is adaptive: its chunks depend on measured chunk times, so it "
            "has no fixed sequence; simulate it with the runtime (cosim app)",
            field="technique",
        )
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InputError(f"n must be an integer >= 0, got {n!r}", field="n")
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise InputError(f"p must be an integer >= 1, got {p!r}", field="p")
    prm = make_params(technique, params)
    planner = technique.make(prm, Context(n=n, ranks=tuple(range(p))))
    nxt = planner.next
    mc = prm.min_chunk
    out: list[int] = []
    append = out.append
    remaining = n
    k = 0
    while remaining > 0:
        size = nxt(k % p, remaining)
        if size < mc:
            size = mc
        if size > remaining:
            size = remaining
        append(size)
        remaining -= size
        k += 1
    return out
