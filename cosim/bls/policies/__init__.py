"""The registries of batch-level policies: priority orders, backfilling, host selection.

One module per policy defines a `POLICY` record; the three tables below map names to them.
Lookup is case-insensitive and accepts ``_`` for ``-`` (``first_fit``); an unknown name fails
with an `InputError` listing the sorted known names. The contract (what a policy sees and
returns) is in `cosim.bls.policies.base`.
"""

from __future__ import annotations

from collections.abc import Mapping

from cosim.bls.policies import (
    best_fit,
    conservative,
    contiguous,
    easy,
    fcfs,
    first_fit,
    none,
    sjf,
)
from cosim.bls.policies.base import (
    BackfillPolicy,
    PassView,
    Plan,
    PriorityPolicy,
    SelectionPolicy,
    expected_end,
    overran,
)
from cosim.errors import InputError

__all__ = ["PRIORITIES", "BACKFILLS", "SELECTIONS", "priority", "backfill", "selection",
           "PassView", "Plan", "PriorityPolicy", "BackfillPolicy", "SelectionPolicy",
           "expected_end", "overran"]

PRIORITIES: Mapping[str, PriorityPolicy] = {m.POLICY.name: m.POLICY for m in (fcfs, sjf)}
BACKFILLS: Mapping[str, BackfillPolicy] = {
    m.POLICY.name: m.POLICY for m in (none, easy, conservative)
}
SELECTIONS: Mapping[str, SelectionPolicy] = {
    m.POLICY.name: m.POLICY for m in (first_fit, contiguous, best_fit)
}


def _lookup(table: Mapping[str, object], name: str, what: str, field: str) -> object:
    key = str(name).strip().lower().replace("_", "-")
    try:
        return table[key]
    except KeyError:
        raise InputError(f"unknown {what} {name!r} (known: {', '.join(sorted(table))})",
                         field=field) from None


def priority(name: str) -> PriorityPolicy:
    """The priority policy called `name` (``fcfs``, ``sjf``)."""
    return _lookup(PRIORITIES, name, "priority policy", "priority")  # type: ignore[return-value]


def backfill(name: str) -> BackfillPolicy:
    """The backfilling policy called `name` (``none``, ``easy``, ``conservative``)."""
    return _lookup(BACKFILLS, name, "backfill policy", "backfill")  # type: ignore[return-value]


def selection(name: str) -> SelectionPolicy:
    """The host selection policy called `name` (``first-fit``, ``contiguous``, ``best-fit``)."""
    return _lookup(SELECTIONS, name, "selection policy", "selection")  # type: ignore[return-value]
