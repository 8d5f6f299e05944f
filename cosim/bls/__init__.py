"""The batch level (BLS): a Slurm-like scheduler of jobs over the PEs of hosts (DESIGN.md §6).

`BatchConfig` chooses the priority order, backfilling, host selection, walltime kill, RCA and
the malleable policy; `BatchScheduler` only takes facts and emits commands, so the same code
drives in-process trace apps and ALS ranks over MPI (`cosim.runner.simulate`, the one entry
point of a simulation). `simulate_batch` (trace workloads on a plain machine), `BatchResult`
and `BatchStats` are that entry point's names for batch-only use, kept here for convenience.
"""

__all__ = ["simulate_batch", "BatchConfig", "BatchResult", "BatchStats", "BatchScheduler"]


def __getattr__(name: str):  # late: a replayed trace never loads the scheduler
    if name == "BatchConfig":
        from cosim.bls.config import BatchConfig

        return BatchConfig
    if name == "BatchScheduler":
        from cosim.bls.scheduler import BatchScheduler

        return BatchScheduler
    if name in ("simulate_batch", "BatchResult", "BatchStats"):
        from cosim import runner

        return {"simulate_batch": runner.simulate_batch, "BatchResult": runner.SimResult,
                "BatchStats": runner.RunStats}[name]
    raise AttributeError(f"module 'cosim.bls' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
