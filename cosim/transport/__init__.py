"""Transports between the batch level (rank 0) and the application-level ranks.

`base` defines the protocol version, message kinds and the `AlsGroup` interface the
coordinator drives; `loopback` runs every ALS endpoint in process; `mpi` spreads the apps over
MPI ranks; `sweep_ranks` spreads a sweep's runs over ranks (groups of them per run). These two
are the only modules that import mpi4py.
"""

import os
from collections.abc import Mapping

__all__ = ["MPI_LAUNCH_VARIABLES", "launched_by_mpi", "launcher_rank"]

#: variables a launcher sets in every process it starts: MPICH/Intel MPI's Hydra and Slurm's
#: srun --mpi=pmi2 (PMI_*), PMIx launchers (Open MPI 5, srun --mpi=pmix), Open MPI's mpirun,
#: MVAPICH2's mpirun_rsh
MPI_LAUNCH_VARIABLES = ("PMI_SIZE", "PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                        "MV2_COMM_WORLD_SIZE")


def launched_by_mpi(environ: Mapping[str, str] = os.environ) -> bool:
    """True when an MPI launcher started this process (so MPI is initialised); a plain
    ``cosim`` command is serial and never loads MPI (~0.1 s saved, and no MPI library needed).
    ``COSIM_MPI=1`` forces MPI where a launcher sets none of `MPI_LAUNCH_VARIABLES`;
    ``COSIM_MPI=0`` forbids it."""
    forced = environ.get("COSIM_MPI", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    return any(v in environ for v in MPI_LAUNCH_VARIABLES)


#: where launchers put a process's rank (MPICH/Hydra and Slurm's PMI, PMIx, Open MPI, MVAPICH2)
_RANK_VARIABLES = ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK")


def launcher_rank(environ: Mapping[str, str] = os.environ) -> int:
    """The rank the launcher gave this process, from its environment (0 when there is none or
    it is not a number): who speaks when MPI itself cannot be loaded."""
    for name in _RANK_VARIABLES:
        value = environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return 0
