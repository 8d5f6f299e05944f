"""How a trace job's run time changes when its allocation changes: the runtime models.

A trace job (no loop: its run time ``R`` comes from the SWF) has a *reference allocation*,
``P0 = Job.pes`` PEs spread over ``H0 = Job.hosts`` hosts by the spread rule
(`cosim.platform.allocation.spread_pes`), on which it runs for exactly ``R``. On any other
allocation — ``u_h`` PEs on each of ``H`` hosts, after a moldable start or a resize — it
progresses at a *rate* relative to the reference (spec: docs/reference/malleability.md §1.5,
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
progress from the resize tick (Kalé et al. assume a 5 s stall per reconfiguration:
``reconf=equi-5s``). Kalé et al. measure the cost of a shrink or expand as a function of the
PEs that change and the data each migrates: ``reconf_pe_s`` is that data per PE over the
bandwidth it moves at (their one published point, 128 <-> 64 processors in 86 / 67.6 ms, is
``reconf=kale-platinum``). The integer-exact progress arithmetic lives with the apps that run
the models (`cosim.als.trace_apps`); this module holds the parameters, their validation and
the rates.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from cosim.errors import InputError

__all__ = ["RuntimeModel", "IDEAL", "MODEL_NAMES", "EXACT_MODELS", "PRESETS", "model_from_pairs",
           "model_pes", "host_paced", "table_time", "rate"]

MODEL_NAMES = ("ideal", "worst", "amdahl", "table")
#: Models whose progress is integer-exact (work units = PE-ticks, `model_pes` units per tick);
#: the others progress at a float `rate`.
EXACT_MODELS = frozenset(("ideal", "worst"))

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
    of `PRESETS`, which sets ``reconf_s``). Unknown keys are the caller's business; a bad
    value raises `InputError` naming `file`, `line` and the key as field (`field` only for a
    problem no single key causes): an unknown model or preset; a number that is not a finite
    decimal number in range (``f`` in [0, 1), costs >= 0, table times > 0); ``f`` without
    ``model=amdahl``, ``balance`` without ``model=amdahl`` or ``table``, ``table`` without
    ``model=table`` and the converse (a key the model would ignore is a mistake); both
    ``reconf`` and ``reconf_s``."""
    import math

    def bad(key: str, problem: str) -> InputError:
        return InputError(problem, file=file, line=line, field=key)

    def number(key: str, what: str, below: float = math.inf) -> float:
        """The value of `key`: a finite number >= 0 and < `below`."""
        try:
            x = float(pairs[key])
        except ValueError:
            x = math.nan
        if not (math.isfinite(x) and 0 <= x < below):
            raise bad(key, f"must be a number {what}, got {pairs[key]!r}")
        return x

    name = pairs.get("model", "ideal")
    if name not in MODEL_NAMES:
        raise bad("model", f"unknown runtime model {name!r} (known: "
                           f"{', '.join(sorted(MODEL_NAMES))})")
    kw: dict[str, object] = {"name": name}
    if "f" in pairs:
        kw["f"] = number("f", "in [0, 1)", below=1.0)
        if name != "amdahl":
            raise bad("f", f"the serial fraction f needs model=amdahl (model is {name})")
    if "balance" in pairs:
        kw["balance"] = pairs["balance"]
        if pairs["balance"] not in ("dynamic", "static"):
            raise bad("balance", f"must be dynamic or static, got {pairs['balance']!r}")
        if name not in ("amdahl", "table"):
            raise bad("balance", f"balance needs model=amdahl or model=table (model is {name})")
    if "table" in pairs:
        text = pairs["table"]
        try:
            table = _parse_table(text)
        except ValueError:
            table = ()
        ps = [p for p, _ in table]
        if not table or ps[0] < 1 or ps != sorted(set(ps)) \
                or not all(math.isfinite(t) and t > 0 for _, t in table):
            raise bad("table", "must be p:time pairs separated by commas, p integers >= 1 "
                               f"ascending and distinct, times > 0, got {text!r}")
        if name != "table":
            raise bad("table", f"a speedup table needs model=table (model is {name})")
        kw["table"] = table
    elif name == "table":
        raise bad("model", "model=table needs table=p:time,p:time,...")
    for key in ("reconf_s", "reconf_pe_s"):
        if key in pairs:
            kw[key] = number(key, ">= 0 (seconds)")
    if "reconf" in pairs:
        preset = pairs["reconf"]
        if preset not in PRESETS:
            raise bad("reconf", f"unknown reconfiguration preset {preset!r} (known: "
                                f"{', '.join(sorted(PRESETS))})")
        if "reconf_s" in pairs:
            raise bad("reconf", "give reconf or reconf_s, not both")
        kw["reconf_s"] = PRESETS[preset]
    try:
        return RuntimeModel(**kw)  # type: ignore[arg-type]
    except ValueError as exc:     # not expected: every key was checked above
        raise bad(field, str(exc)) from None


# -- the rates ----------------------------------------------------------------------------------


def model_pes(model: RuntimeModel, counts: Sequence[int]) -> int:
    """The PE count ``p`` the model's speed depends on, for ``counts[h]`` PEs (each >= 1) on
    each of the allocation's hosts: ``H x min_h u_h`` for ``worst`` and for ``amdahl`` or
    ``table`` with ``balance="static"`` (the least-used host sets the pace), ``sum_h u_h``
    otherwise (``ideal`` ignores `balance`: it rebalances by definition). For the exact
    models it is also the work units (PE-ticks) done per tick."""
    if host_paced(model):
        return len(counts) * min(counts)
    return sum(counts)


def host_paced(model: RuntimeModel) -> bool:
    """True if the model's speed depends on the PEs of each host (`model_pes` takes ``H x
    min_h u_h``), not only on their total."""
    return model.name == "worst" or (model.balance == "static" and model.name != "ideal")


def table_time(table: Sequence[tuple[int, float]], p: float) -> float:
    """Time per unit of work on `p` PEs: `table` (``(p, time)`` pairs, p ascending)
    interpolated linearly, held constant beyond its first and last points."""
    if p <= table[0][0]:
        return table[0][1]
    if p >= table[-1][0]:
        return table[-1][1]
    i = bisect_right([q for q, _ in table], p)  # table[i - 1][0] <= p < table[i][0]
    (p1, t1), (p2, t2) = table[i - 1], table[i]
    return t1 + (t2 - t1) * (p - p1) / (p2 - p1)


def rate(model: RuntimeModel, counts: Sequence[int], ref_counts: Sequence[int]) -> float:
    """Speed on an allocation of ``counts`` PEs per host relative to the reference allocation
    ``ref_counts`` (``spread_pes(P0, H0)``): exactly 1.0 on the reference.

    ``ideal``/``worst``: ``p / p0`` (`model_pes` of each; the apps use the exact integer form
    instead); ``amdahl``: ``S(p) / S(p0)``, computed as ``p (f p0 + 1 - f) / (p0 (f p + 1 - f))``
    so that ``f = 0`` gives the correctly rounded ``p / p0``; ``table``: ``T(p0) / T(p)``.
    """
    p, p0 = model_pes(model, counts), model_pes(model, ref_counts)
    if model.name == "amdahl":
        f = model.f
        return p * (f * p0 + (1.0 - f)) / (p0 * (f * p + (1.0 - f)))
    if model.name == "table":
        return table_time(model.table, p0) / table_time(model.table, p)
    return p / p0
