"""Small complete runs as `RunTables`, for the tests of the outputs (HDF5, OTF2, plots).

`tiny_tables` co-simulates a fixed hand-written workload of six Mandelbrot jobs (small
images) and one rigid job on the ``tiny8x2`` platform (8 hosts x 2 cores, 2 racks), with the
chunk tables recorded; jobs 1 and 2 are imbalanced enough under STATIC that, with RCA yield,
a queued job borrows their yielded hosts. `malleable_tables` runs a small malleable trace
workload under equipartition (shrinks, expands and hosts shared at PE level). Both keep the
batch level's allocation log. Deterministic: the same tables on every call.
"""

from __future__ import annotations

from cosim.als.manager import AlsConfig
from cosim.als.techniques import get
from cosim.bls import BatchConfig
from cosim.output.metrics import summary
from cosim.output.tables import RunTables, build_tables
from cosim.platform import load_platform
from cosim.runner import cosimulate, simulate
from cosim.workload.jobs import Job

__all__ = ["malleable_jobs", "malleable_tables", "tiny_jobs", "tiny_tables"]

S = 1_000_000_000


def tiny_jobs() -> list[Job]:
    """Six Mandelbrot jobs (width 64 or 96, max_iter 2000) and one rigid job."""
    def mandel(i: int, submit: float, hosts: int, pes: int, flop: float, cat: str) -> Job:
        return Job(id=i, submit=int(submit * S), hosts=hosts, pes=pes, walltime=400 * S,
                   runtime=100 * S, app="mandelbrot", category=cat,
                   app_params={"width": "64", "max_iter": "2000", "total_flop": f"{flop:g}"})

    return [
        mandel(1, 0, 4, 8, 4e11, "A"),
        mandel(2, 0, 2, 4, 1e11, "B"),
        mandel(3, 5, 4, 7, 2e11, "A"),
        Job(id=4, submit=10 * S, hosts=2, pes=3, walltime=90 * S, runtime=60 * S,
            category="R"),
        mandel(5, 12, 3, 6, 1.5e11, "B"),
        mandel(6, 20, 8, 16, 2e11, "C"),
        mandel(7, 30, 1, 2, 3e10, "B"),
    ]


def tiny_tables(*, technique: str = "STATIC", rca: bool = True, record: bool = True,
                run_id: str = "tiny") -> RunTables:
    """The tiny run (see the module docstring) as tables."""
    platform = load_platform("tiny8x2")
    jobs = tiny_jobs()
    result = cosimulate(jobs, platform=platform, n_hosts=platform.n_hosts,
                        batch=BatchConfig(backfill="easy", rca=rca),
                        als=AlsConfig(technique=get(technique), record=record))
    config = {"workload": "tiny", "platform": platform.name, "technique": technique,
              "rca": "yield" if rca else "off", "batch": "easy"}
    stats, _ = result.stats.split()
    metrics = summary(result.outcomes, platform.n_hosts, cores_per_host=2,
                      allocations=result.allocations)
    return build_tables(result.outcomes, run_id=run_id, config=config, metrics=metrics,
                        stats=stats, platform=platform, n_hosts=platform.n_hosts,
                        loops=result.loops, technique=technique,
                        allocations=result.allocations)


def malleable_jobs() -> list[Job]:
    """Four malleable trace jobs and a rigid one for 8 hosts x 2 cores: the arrivals shrink
    the running jobs, the ends expand them back (equipartition)."""
    def mjob(i: int, submit: int, lo: int, hi: int, runtime: int, pes: int) -> Job:
        return Job(id=i, submit=submit * S, hosts=(pes + 1) // 2, pes=pes,
                   walltime=4 * runtime * S, runtime=runtime * S, kind="malleable",
                   min_pes=lo, max_pes=hi, category="M")

    return [mjob(1, 0, 4, 16, 100, 16), mjob(2, 10, 4, 16, 100, 8), mjob(3, 20, 2, 8, 50, 4),
            Job(id=4, submit=30 * S, hosts=2, pes=4, walltime=200 * S, runtime=60 * S,
                category="R"),
            mjob(5, 40, 2, 16, 80, 6)]


def malleable_tables(*, run_id: str = "malleable") -> RunTables:
    """`malleable_jobs` under equipartition on ``tiny8x2``, as tables."""
    platform = load_platform("tiny8x2")
    result = simulate(malleable_jobs(), n_hosts=platform.n_hosts, platform=platform,
                      batch=BatchConfig(malleable="equi"))
    stats, _ = result.stats.split()
    metrics = summary(result.outcomes, platform.n_hosts, cores_per_host=2,
                      allocations=result.allocations)
    return build_tables(result.outcomes, run_id=run_id,
                        config={"workload": "malleable", "platform": platform.name,
                                "batch": "easy", "malleable": "equi"},
                        metrics=metrics, stats=stats, platform=platform,
                        n_hosts=platform.n_hosts, allocations=result.allocations)
