"""Transports between the batch level (rank 0) and the application-level ranks.

`base` defines the protocol version, message kinds and the `AlsGroup` interface the
coordinator drives; `loopback` runs every ALS endpoint in process; `mpi` (the only module that
imports mpi4py) spreads the apps over MPI ranks.
"""
