"""Reference loop scenarios and a digest of their results, for determinism checks.

`drain` runs an application-level endpoint through its promises. `loop_digest` runs every registered technique on a fixed heterogeneous scenario (random costs
from a keyed stream, mixed PE speeds, a perturbed PE, remote workers) and returns a SHA-256 of
all chunk tables. The same digest must come out of every process, whatever its hash seed or
MPI rank: the tests compare an in-process digest with those of ``mpiexec -n 3`` processes.
"""

from __future__ import annotations

import hashlib

import numpy as np

from cosim.als.availability import Availability
from cosim.als.runtime import Comm, LoopRun
from cosim.als.techniques import get, names
from cosim.core.rng import stream
from cosim.workload.costs import TaskCosts

__all__ = ["loop_digest", "drain"]


def loop_digest(seed: int = 0, n: int = 3000, p: int = 12) -> str:
    """SHA-256 over the chunk tables of every technique on the reference scenario."""
    flop = stream(seed, "scenario-costs").gamma(0.7, 5e4, n)
    costs = TaskCosts.from_array(flop, model="profile", label="scenario", params={})
    speeds = [1e9 if r % 3 else 2e9 for r in range(p)]
    req = [0] + [510 + 10 * r for r in range(1, p)]
    slow = Availability(times=(0, 2_000_000), factors=(1.0, 0.4))
    h = hashlib.sha256()
    for job_id, name in enumerate(names()):
        run = LoopRun(costs=costs, technique=get(name), speeds=speeds, request_ticks=req,
                      assign_ticks=req, comm=Comm(overhead_s=2e-7),
                      availability=[slow] + [1.0] * (p - 1), timesteps=2,
                      rng=stream(seed, "technique", job_id))
        c = run.run().chunks
        h.update(name.encode())
        for col in (c.rank, c.first, c.size, c.t_assign, c.t_start, c.t_end, c.step):
            h.update(np.ascontiguousarray(col, dtype=np.int64).tobytes())
    return h.hexdigest()


def drain(sim) -> list:
    """Every fact an application-level endpoint produces without further commands, advancing
    from promise to promise; each promise must be exact (facts come at it)."""
    facts = []
    while (p := sim.promise()) is not None:
        got = sim.advance(p)
        assert got and all(f.time == p for f in got), (p, got)
        facts += got
    return facts
