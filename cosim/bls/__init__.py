"""The batch level (BLS): a Slurm-like scheduler of jobs over hosts (DESIGN.md §6).

`simulate_batch` runs a workload of rigid jobs to completion and returns their outcomes;
`BatchConfig` chooses the priority order, backfilling, host selection and walltime kill.
The scheduler itself (`scheduler.BatchScheduler`) only takes facts and emits commands, so the
same code drives in-process rigid apps (`rigid.RigidApps`, which never yield) and ALS ranks
over MPI; with ``BatchConfig(rca=True)`` it lends the hosts apps yield to queued jobs (RCA).
"""

from cosim.bls.batch import BatchResult, BatchStats, simulate_batch
from cosim.bls.scheduler import BatchConfig, BatchScheduler

__all__ = ["simulate_batch", "BatchConfig", "BatchResult", "BatchStats", "BatchScheduler"]
