"""The registries of batch-level policies: priority orders, backfilling, host selection, dynamic.

One module per policy defines a `POLICY` record; the four tables below map names to them
(`DYNAMICS` holds the dynamic policies: the malleable ones chosen with ``--malleable`` and
RCA's exclusion requests; ``none`` is no malleable policy). The CLI offers the names of these
tables, so a new module registered here is a new choice everywhere.
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
    equipartition,
    fcfs,
    first_fit,
    greedy,
    metric_aware,
    none,
    rca_exclusion,
    sdpolicy,
    sjf,
    value_order,
    wfp,
)
from cosim.bls.policies.base import (
    BackfillPolicy,
    DynamicPolicy,
    DynamicView,
    PassView,
    Plan,
    PriorityPolicy,
    SelectionPolicy,
    expected_end,
    overran,
)
from cosim.errors import InputError
from cosim.plugins import Choices, Registry

__all__ = ["PRIORITIES", "BACKFILLS", "SELECTIONS", "DYNAMICS", "priority", "backfill",
           "selection", "dynamic", "malleable_names", "PassView", "DynamicView", "Plan",
           "PriorityPolicy", "BackfillPolicy", "SelectionPolicy", "DynamicPolicy",
           "expected_end", "overran"]

def _policy_key(name: str) -> str:
    """A policy's name as the tables key it (and `_lookup` looks it up)."""
    return name.strip().lower().replace("_", "-")


# built in, and then the plugins' (entry points, `cosim.plugins`)
PRIORITIES: Mapping[str, PriorityPolicy] = Registry(
    "cosim.priority", {p.name: p for p in (fcfs.POLICY, sjf.POLICY, metric_aware.POLICY,
                                           wfp.POLICY, value_order.VPT, value_order.VPE)},
    kind=PriorityPolicy,
    key=_policy_key, name_of=lambda p: p.name)
BACKFILLS: Mapping[str, BackfillPolicy] = Registry(
    "cosim.backfill", {m.POLICY.name: m.POLICY for m in (none, easy, conservative, greedy)},
    kind=BackfillPolicy, key=_policy_key, name_of=lambda p: p.name)
SELECTIONS: Mapping[str, SelectionPolicy] = Registry(
    "cosim.selection", {m.POLICY.name: m.POLICY for m in (first_fit, contiguous, best_fit)},
    kind=SelectionPolicy, key=_policy_key, name_of=lambda p: p.name)
DYNAMICS: Mapping[str, DynamicPolicy] = Registry(
    "cosim.dynamic", {m.POLICY.name: m.POLICY for m in (equipartition, sdpolicy, rca_exclusion)},
    kind=DynamicPolicy, key=_policy_key, name_of=lambda p: p.name)


def _lookup(table: Mapping[str, object], name: str, what: str, field: str) -> object:
    key = _policy_key(str(name))
    try:
        return table[key]
    except KeyError:
        raise InputError(f"unknown {what} {name!r} (known: {', '.join(sorted(table))})",
                         field=field) from None


def priority(name: str) -> PriorityPolicy:
    """The priority policy called `name` (``fcfs``, ``sjf``, ``metric-aware``, ``wfp``)."""
    return _lookup(PRIORITIES, name, "priority policy", "priority")  # type: ignore[return-value]


def backfill(name: str) -> BackfillPolicy:
    """The backfilling policy called `name` (``none``, ``easy``, ``conservative``)."""
    return _lookup(BACKFILLS, name, "backfill policy", "backfill")  # type: ignore[return-value]


def selection(name: str) -> SelectionPolicy:
    """The host selection policy called `name` (``first-fit``, ``contiguous``, ``best-fit``)."""
    return _lookup(SELECTIONS, name, "selection policy", "selection")  # type: ignore[return-value]


def dynamic(name: str, family: str | None = None) -> DynamicPolicy:
    """The dynamic policy called `name` (of `family`, ``malleable`` or ``rca``, if given)."""
    field = "malleable" if family == "malleable" else "dynamic"
    key = _policy_key(str(name))
    # a built-in name is found without listing the table (which would load the plugins)
    found = DYNAMICS[key] if key in DYNAMICS else None
    if found is not None and (family is None or found.family == family):
        return found  # type: ignore[return-value]
    known = sorted(k for k, v in DYNAMICS.items() if family is None or v.family == family)
    raise InputError(f"unknown {family or 'dynamic'} policy {name!r} (known: "
                     f"{', '.join(known)})", field=field)


def malleable_names() -> Choices:
    """``none`` and the names of the malleable policies, sorted (the ``--malleable`` choices;
    plugins are listed only when the choices are)."""
    return Choices(DYNAMICS, "none", keep=lambda p: p.family == "malleable")
