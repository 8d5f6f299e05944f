"""How much work an ESP job carries: the calibrations of `cosim workload esp --calibrate`.

Every ESP job runs an app model (`cosim.workload.apps`) whose per-iteration costs are scaled
to a total (the job's ``total_flop`` parameter; the ALS applies it). Three rules:

- ``balanced`` (the default): ``total_flop = pes x target x speed`` — the job's perfectly
  balanced run time on its PEs is its ESP target (`cosim.workload.esp`).
- ``static``: the job's run time *under STATIC* on its PEs is its target: the balanced work
  divided by the STATIC factor of its category (`static_factor`: STATIC makespan / balanced
  time of the app's costs on the category's hosts, measured with the ALS's own loop model).
- ``table1``: the RCA paper's Table 1 (Eleliemy & Ciorba, arXiv:2103.05809): each category's
  Mandelbrot ``max_iter`` (`TABLE1_MAX_ITER`; G printed as 1 M, a typo for 10 M: G and H
  have equal host-seconds) on a fixed image, the work ``kappa x`` the image's iterations at
  that ``max_iter`` with one ``kappa`` for the whole workload, chosen so that the workload's
  aggregate STATIC allocation, ``sum(count x hosts x STATIC time)``, equals its targets'
  ``sum(count x hosts x target)``; or each category's PSIA number of spin images
  (`TABLE1_IMAGES`, the loop's iterations) at one constant cost per image, chosen so that the
  aggregate balanced allocation equals the targets (PSIA's images are host-seconds / 67.7 ms
  in 13 of the 14 categories: the paper calibrated PSIA on its balanced time).

``paper_scale`` multiplies the work of every job (the paper's absolute cost scale is not
published). The rule, its constants and each category's STATIC time / target are returned
for the workload's header.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cosim.errors import InputError
from cosim.platform import Platform

__all__ = ["CALIBRATIONS", "TABLE1_MAX_ITER", "TABLE1_IMAGES", "Calibration", "calibrate",
           "static_factor", "shortest"]

CALIBRATIONS = ("balanced", "static", "table1")
#: Mandelbrot maximum iterations per pixel by ESP category (Table 1; G corrected to 10 M)
TABLE1_MAX_ITER: Mapping[str, int] = {
    "A": 635_000, "B": 1_200_000, "C": 15_000_000, "D": 8_500_000, "E": 8_800_000,
    "F": 6_500_000, "G": 10_000_000, "H": 10_000_000, "I": 3_350_000, "J": 2_750_000,
    "K": 2_850_000, "L": 2_725_000, "M": 2_650_000, "Z": 5_250_000}
#: PSIA spin images by ESP category (Table 1)
TABLE1_IMAGES: Mapping[str, int] = {
    "A": 32_000, "B": 76_500, "C": 800_000, "D": 582_000, "E": 595_000, "F": 440_000,
    "G": 635_000, "H": 630_000, "I": 170_000, "J": 174_500, "K": 172_600, "L": 172_500,
    "M": 176_500, "Z": 375_000}


@dataclass(frozen=True, slots=True)
class Calibration:
    """The work of each category: its app parameters (``total_flop`` included, as strings),
    each category's STATIC run time / target (None where not measured), and a one-line
    description for the header."""

    params: Mapping[str, Mapping[str, str]]
    static_over_target: Mapping[str, float | None]
    note: str


def static_factor(app: str, params: Mapping[str, str], platform: Platform, hosts: int,
                  cache_dir: str | None = None) -> tuple[float, float]:
    """``(STATIC factor, model FLOP)`` of `app` with `params` on the first `hosts` hosts of
    `platform`: the STATIC makespan over the balanced time (the loop model of the ALS, at a
    balanced time of 1,000 s so that ticks do not round it), and the model's total FLOP."""
    from cosim.als.launch import loop_on_hosts
    from cosim.als.techniques import get
    from cosim.workload import TaskCosts, load_app

    base = load_app(app, overrides=dict(params), cache_dir=cache_dir)
    pes = sum(h.cores for h in platform.hosts[:hosts])
    ideal = 1000.0
    scale = ideal * platform.hosts[0].speed * pes / base.total
    costs = TaskCosts.from_array(base.flop * scale, model=base.model, label=base.label,
                                 params={})
    run, _ = loop_on_hosts(costs=costs, platform=platform, hosts=hosts,
                           technique=get("STATIC"), record=False)
    return run.run().makespan / 1e9 / ideal, base.total


def calibrate(rule: str, *, app: str, mix: Sequence, sizes: Mapping[str, int],
              platform: Platform, params: Mapping[str, str] | None = None,
              paper_scale: float = 1.0, cache_dir: str | None = None) -> Calibration:
    """Each category's app parameters under `rule` (module docstring). `mix`: the ESP job
    types (category, count, target_s); `sizes`: hosts per category; `params`: app-model
    overrides for every job (the image, say)."""
    if rule not in CALIBRATIONS:
        raise InputError(f"unknown calibration {rule!r} (known: {', '.join(CALIBRATIONS)})",
                         field="calibrate")
    if isinstance(paper_scale, bool) or not isinstance(paper_scale, (int, float)) \
            or not (math.isfinite(paper_scale) and paper_scale > 0):
        raise InputError(f"must be a number > 0, got {paper_scale!r}", field="paper-scale")
    params = dict(params or {})
    owned = {"total_flop"} | ({"images" if app == "psia" else "max_iter"}
                              if rule == "table1" else set())
    for key in sorted(owned & set(params)):
        raise InputError(f"{key} is set by the calibration ({rule}), not by a parameter",
                         field=f"app-param.{key}")
    from cosim.workload.apps import resolve_app

    resolve_app(app, overrides=params)  # a bad parameter now, not when the first job starts
    first = platform.hosts[0]
    cores, speed = first.cores, first.speed
    out: dict[str, dict[str, str]] = {}
    ratio: dict[str, float | None] = {}
    if rule == "balanced":
        for t in mix:
            pes = sizes[t.category] * cores
            out[t.category] = {**params, "total_flop": shortest(
                paper_scale * pes * t.target_s * speed)}
            ratio[t.category] = None
        return Calibration(out, ratio, "balanced: total_flop = pes x target x speed"
                           + (f" x paper_scale {paper_scale:g}" if paper_scale != 1 else ""))
    if rule == "static":
        factors: dict[int, float] = {}  # by host count: categories share them (A and I: 8)
        for t in mix:
            h = sizes[t.category]
            if h not in factors:
                factors[h] = static_factor(app, params, platform, h, cache_dir)[0]
            f = factors[h]
            out[t.category] = {**params, "total_flop": shortest(
                paper_scale * h * cores * t.target_s * speed / f)}
            ratio[t.category] = paper_scale
        return Calibration(out, ratio, "static: every job's STATIC run time on its PEs is "
                           "its target (total_flop = balanced work / STATIC factor)")
    target = sum(t.count * sizes[t.category] * t.target_s for t in mix)  # host-s
    if app == "psia":
        images = sum(t.count * TABLE1_IMAGES[t.category] for t in mix)
        per_image = target * cores * speed / images  # FLOP per spin image
        for t in mix:
            n = TABLE1_IMAGES[t.category]
            out[t.category] = {**params, "images": str(n),
                               "total_flop": shortest(paper_scale * per_image * n)}
            ratio[t.category] = None
        return Calibration(out, ratio, f"table1: PSIA images from Table 1 at "
                           f"{per_image:.6g} FLOP each (aggregate balanced allocation = the "
                           f"targets) x paper_scale {paper_scale:g}")
    measured = {}
    for t in mix:
        h = sizes[t.category]
        p = {**params, "max_iter": str(TABLE1_MAX_ITER[t.category])}
        f, flop = static_factor(app, p, platform, h, cache_dir)
        measured[t.category] = (p, f, flop)
    # STATIC time of a category at scale s: s x f x flop / (pes x speed); sum it over jobs
    static_hs = sum(t.count * sizes[t.category] * measured[t.category][1]
                    * measured[t.category][2] / (sizes[t.category] * cores * speed)
                    for t in mix)
    s = target / static_hs
    for t in mix:
        p, f, flop = measured[t.category]
        out[t.category] = {**p, "total_flop": shortest(paper_scale * s * flop)}
        ratio[t.category] = paper_scale * s * f * flop / (
            sizes[t.category] * cores * speed) / t.target_s
    return Calibration(out, ratio, f"table1: Mandelbrot max_iter per category from Table 1 "
                       f"(G = 10 M), work = {s:.6g} x the model's FLOP at that max_iter "
                       f"(aggregate STATIC allocation = the targets) x paper_scale "
                       f"{paper_scale:g}")


def shortest(x: float) -> str:
    """The shortest scientific form of `x` that reads back exactly: ``6.8352e+13``."""
    for digits in range(17):
        text = f"{x:.{digits}e}"
        if float(text) == x:
            return text
    return repr(x)
