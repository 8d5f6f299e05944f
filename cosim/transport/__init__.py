"""Transports between the batch level (rank 0) and the application-level ranks.

`base` defines the protocol version, message kinds and the `AlsGroup` interface the
coordinator drives; `loopback` runs every ALS endpoint in process; `mpi` spreads the apps over
MPI ranks; `sweep_ranks` spreads a sweep's runs over ranks (groups of them per run). These two
are the only modules that import mpi4py.
"""
