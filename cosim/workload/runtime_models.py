"""How a trace job's run time changes when its allocation changes: the runtime models.

A trace job (no loop: its run time ``R`` comes from the SWF) has a *reference allocation*,
``P0 = Job.pes`` PEs spread over ``H0 = Job.hosts`` hosts by the spread rule
(`cosim.platform.allocation.spread_pes`), on which it runs for exactly ``R``. On any other
allocation — ``u_h`` PEs on each of ``H`` hosts, after a moldable start or a resize — it
progresses at a *rate* relative to the reference (spec: shared/reference/malleability.md §1.5,
§4.6; SD-Policy's Eq. 5 and 6, Kalé's sub-linear speedup):

- ``ideal`` (SD-Policy Eq. 5; the default): the app rebalances itself, rate
  ``sum_h u_h / P0``;
- ``worst`` (Eq. 6): statically balanced, the least-used host sets the pace, rate
  ``(H x min_h u_h) / (H0 x min_h u0_h)`` — 1 on the reference allocation, even when its
  spread is uneven;
- ``amdahl``: ``S(p) / S(P0)`` with ``S(p) = 1 / (f + (1 - f) / p)``, ``f`` the serial
  fraction, ``p = sum_h u_h`` (``balance="static"``: ``p = H x min_h u_h``);
- ``table``: ``T(P0) / T(p)``, ``T`` interpolated linearly (and held constant beyond its ends)
  in a table of ``(p, time per unit of work)`` pairs, e.g. a digitised speedup curve.

A resize may stall the job: ``reconf_s + reconf_pe_s x |PEs added or removed|`` seconds of no
progress from the resize tick (Kalé et al. assume a 5 s stall per reconfiguration;
``preset="equi-5s"``). The integer-exact progress arithmetic lives with the apps that run
the models (`cosim.als.trace_apps`); this module holds the parameters, their validation and
the rates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from cosim.errors import InputError

__all__ = ["RuntimeModel", "IDEAL", "MODEL_NAMES", "PRESETS", "model_from_pairs"]

MODEL_NAMES = ("ideal", "worst", "amdahl", "table")

#: Named reconfiguration costs: ``none``; ``equi-5s`` (the 5 s stall per reconfiguration
#: assumed by the equipartition study Kalé et al. cite); ``kale-platinum`` (the one measured
#: point of Kalé et al.: 86 ms to shrink 128 -> 64 processors, 67.6 ms to expand back; the
#: mean of the two is used for both directions).
PRESETS: Mapping[str, float] = {"none": 0.0, "equi-5s": 5.0, "kale-platinum": 0.0768}


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeModel:
    """The runtime model of a trace job (see the module docstring).

    Attributes
    ----------
    name:
        ``ideal`` (default), ``worst``, ``amdahl`` or ``table``.
    f:
        Amdahl's serial fraction, in [0, 1).
    balance:
        Amdahl's PE count: ``dynamic`` (default, ``sum u``) or ``static`` (``H x min u``).
    table:
        ``((p, time per unit), ...)`` with p ascending and distinct, times > 0 (``table``).
    reconf_s, reconf_pe_s:
        Stall per resize: a constant, plus a cost per PE added or removed (seconds).
    """

    name: Literal["ideal", "worst", "amdahl", "table"] = "ideal"
    f: float = 0.0
    balance: Literal["dynamic", "static"] = "dynamic"
    table: tuple[tuple[int, float], ...] = ()
    reconf_s: float = 0.0
    reconf_pe_s: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in MODEL_NAMES:
            raise ValueError(f"unknown runtime model {self.name!r} (known: "
                             f"{', '.join(MODEL_NAMES)})")
        if not 0.0 <= self.f < 1.0:
            raise ValueError(f"the serial fraction f must be in [0, 1), got {self.f!r}")
        if self.balance not in ("dynamic", "static"):
            raise ValueError(f"balance must be 'dynamic' or 'static', got {self.balance!r}")
        if self.name == "table":
            ps = [p for p, _ in self.table]
            if not self.table or any(p < 1 for p in ps) or ps != sorted(set(ps)) \
                    or any(not t > 0 for _, t in self.table):
                raise ValueError("a table model needs (p, time) pairs with p >= 1 ascending "
                                 "and distinct, times > 0")
        elif self.table:
            raise ValueError("a speedup table needs model=table")
        if not (self.reconf_s >= 0 and self.reconf_pe_s >= 0):
            raise ValueError("reconfiguration costs must be >= 0")


IDEAL = RuntimeModel()


def _parse_table(text: str) -> tuple[tuple[int, float], ...]:
    """``"1:100,2:52,4:27.5"`` -> ``((1, 100.0), (2, 52.0), (4, 27.5))``."""
    out = []
    for item in text.split(","):
        p, sep, t = item.partition(":")
        if not sep:
            raise ValueError(f"expected p:time pairs separated by commas, got {item!r}")
        out.append((int(p), float(t)))
    return tuple(out)


def model_from_pairs(pairs: Mapping[str, str], *, file: object = None,
                     line: int | None = None, field: str = "model") -> RuntimeModel:
    """A `RuntimeModel` from ``key=value`` strings: ``model`` (the name), ``f``, ``balance``,
    ``table`` (``p:time,...``), ``reconf_s``, ``reconf_pe_s`` and ``reconf`` (a preset name
    of `PRESETS`, which sets ``reconf_s``). Unknown keys are the caller's business; bad
    values raise `InputError` naming `file`, `line` and the key."""
    kw: dict[str, object] = {}
    key = field
    try:
        if "model" in pairs:
            key = "model"
            kw["name"] = pairs["model"]
        for k, conv in (("f", float), ("reconf_s", float), ("reconf_pe_s", float)):
            if k in pairs:
                key = k
                kw[k] = conv(pairs[k])
        if "balance" in pairs:
            key = "balance"
            kw["balance"] = pairs["balance"]
        if "table" in pairs:
            key = "table"
            kw["table"] = _parse_table(pairs["table"])
        if "reconf" in pairs:
            key = "reconf"
            if pairs["reconf"] not in PRESETS:
                raise ValueError(f"unknown reconfiguration preset {pairs['reconf']!r} (known: "
                                 f"{', '.join(sorted(PRESETS))})")
            if "reconf_s" in pairs:
                raise ValueError("give reconf or reconf_s, not both")
            kw["reconf_s"] = PRESETS[pairs["reconf"]]
        key = field if "model" not in pairs else "model"
        return RuntimeModel(**kw)  # type: ignore[arg-type]
    except ValueError as exc:
        raise InputError(str(exc), file=file, line=line, field=key) from None
