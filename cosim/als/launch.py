"""Put one app's loop on a platform: choose the PEs, derive message times, run, summarise.

`loop_on_hosts` builds a `LoopRun` for the PEs of the first `hosts` hosts of a platform (all
their cores, host-major, so rank 0 is the first core of the first host and holds the master).
`summary` turns a `LoopResult` into the dictionary the CLI prints as JSON: times in seconds
from the first request, ``max_over_mean`` = max / mean of the per-PE finish times (PEs that got
no chunk count with 0), ``ideal_s`` = total work / summed PE speed (a perfectly balanced loop
without communication), and ``efficiency`` = ideal_s / makespan_s. `write_chunks` writes the
chunk table as CSV atomically.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cosim.als.availability import Availability
from cosim.als.runtime import Comm, LoopResult, LoopRun
from cosim.als.techniques import Technique
from cosim.core.clock import TICKS_PER_SECOND
from cosim.core.files import atomic_open
from cosim.core.rng import stream
from cosim.errors import InputError
from cosim.platform import Platform
from cosim.workload.costs import TaskCosts

__all__ = ["job_pes", "job_pe_placement", "loop_on_hosts", "summary", "write_chunks"]


def job_pes(platform: Platform, hosts: int) -> list[int]:
    """Global PE indices of the first `hosts` hosts, host-major."""
    if not 1 <= hosts <= platform.n_hosts:
        raise InputError(f"{hosts} hosts asked, the platform {platform.name!r} has "
                         f"{platform.n_hosts}", field="hosts")
    pe_host = platform.pe_hosts()
    return [int(i) for i in np.flatnonzero(pe_host < hosts)]


def job_pe_placement(
    platform: Platform, pe_hosts: np.ndarray, pe_idx: Sequence[int], comm: Comm,
) -> tuple[list[int], list[float], list[int], list[int]]:
    """For workers on the global PEs `pe_idx` (rank order; the master on the first): the host
    of each rank, its speed, and the request/assignment message times to/from the master."""
    host_of = [int(pe_hosts[pe]) for pe in pe_idx]
    master = host_of[0]
    speeds = [platform.hosts[h].speed for h in host_of]
    req = [platform.message_ticks(h, master, comm.request_bytes) for h in host_of]
    asg = [platform.message_ticks(master, h, comm.assign_bytes) for h in host_of]
    return host_of, speeds, req, asg


def loop_on_hosts(
    *,
    costs: TaskCosts,
    platform: Platform,
    hosts: int,
    technique: Technique,
    params: Mapping[str, Any] | None = None,
    comm: Comm = Comm(),
    availability: Sequence[float | Availability] | None = None,
    timesteps: int = 1,
    seed: int = 0,
    job_id: int = 0,
    record: bool = True,
    compiled: bool | None = None,
) -> tuple[LoopRun, list[int]]:
    """A `LoopRun` of `costs` on the PEs of the first `hosts` hosts, and those PE indices."""
    pes = job_pes(platform, hosts)
    _, speeds, req, asg = job_pe_placement(platform, platform.pe_hosts(), pes, comm)
    run = LoopRun(
        costs=costs,
        technique=technique,
        params=params,
        speeds=speeds,
        request_ticks=req,
        assign_ticks=asg,
        comm=comm,
        availability=availability,
        timesteps=timesteps,
        rng=stream(seed, "technique", job_id),
        record=record,
        compiled=compiled,
    )
    return run, pes


def summary(result: LoopResult, run: LoopRun, *, wall_s: float) -> dict[str, Any]:
    """The JSON summary of a loop run (times in seconds from the first request)."""
    t = TICKS_PER_SECOND
    finish = [(f - result.start) / t for f in result.finish]
    done = [(d - result.start) / t for d in result.done]
    mean = sum(finish) / len(finish)
    makespan = result.makespan / t
    speed_total = sum(run.speeds)
    ideal = run.costs.total * result.timesteps / speed_total
    return {
        "technique": result.technique,
        "params": {k: list(v) if isinstance(v, tuple) else v for k, v in result.params.items()},
        "app": run.costs.label,
        "n_tasks": result.n_tasks,
        "n_pes": result.n_pes,
        "timesteps": result.timesteps,
        "n_chunks": result.n_chunks,
        "makespan_s": makespan,
        "finish_s": finish,
        "done_s": done,
        "max_over_mean": max(finish) / mean if mean > 0 else 1.0,
        "cov_finish": float(np.std(finish) / mean) if mean > 0 else 0.0,
        "ideal_s": ideal,
        "efficiency": ideal / makespan if makespan > 0 else 1.0,
        "wall_s": wall_s,
    }


def write_chunks(path: str | os.PathLike, result: LoopResult, pes: Sequence[int]) -> None:
    """Write ``pe,first,size,t_assign_s,t_start_s,t_finish_s[,step]`` per chunk, atomically."""
    if result.chunks is None:
        raise ValueError("the run did not record its chunks")
    c = result.chunks
    pe = np.asarray(pes, dtype=np.int64)[c.rank]
    t = TICKS_PER_SECOND
    start = result.start
    target = Path(path)
    header = "pe,first,size,t_assign_s,t_start_s,t_finish_s"
    cols = [pe, c.first, c.size]
    times = [(c.t_assign - start) / t, (c.t_start - start) / t, (c.t_end - start) / t]
    with_step = result.timesteps > 1
    with atomic_open(target) as fh:
        fh.write(header + (",step\n" if with_step else "\n"))
        rows = zip(*cols, *times, *([c.step] if with_step else []))
        fmt = "%d,%d,%d,%.9f,%.9f,%.9f" + (",%d\n" if with_step else "\n")
        fh.writelines(fmt % row for row in rows)
