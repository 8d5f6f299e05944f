"""Keyed random streams: one root seed, one independent generator per (stream name, keys).

A stream is ``numpy.random.Generator(PCG64(SeedSequence(root, spawn_key=(name_id, *keys))))``.
The name is turned into an integer with CRC-32 (stable across processes and Python versions,
unlike ``hash(str)``), so the same (root, name, keys) gives the same numbers on every MPI rank
and in every run, whatever else has drawn random numbers before. There is no global state.
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["stream", "stream_seed"]


def stream_seed(root: int, name: str, *keys: int) -> np.random.SeedSequence:
    """The SeedSequence of stream `name` with integer `keys` under `root`."""
    if root < 0 or any(k < 0 for k in keys):
        raise ValueError("seeds and stream keys must be non-negative integers")
    return np.random.SeedSequence(root, spawn_key=(zlib.crc32(name.encode()), *keys))


def stream(root: int, name: str, *keys: int) -> np.random.Generator:
    """A fresh generator for stream `name` with `keys` (e.g. a job id) under `root`."""
    return np.random.Generator(np.random.PCG64(stream_seed(root, name, *keys)))
