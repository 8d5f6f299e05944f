"""On-disk cache of computed app arrays, keyed by content hash.

An expensive model result (Mandelbrot escape counts, PSIA accepted-point counts) is stored as
``<dir>/<model>-<sha256>.npy`` where the hash is taken over the canonical JSON (sorted keys,
no whitespace, exact float ``repr``) of ``{"model", "params", "version"}``: the parameters
that determine the array and a per-model code version constant that is bumped whenever the
computation changes. Files are written atomically (a temporary file in the same directory,
then ``os.replace``), so concurrent MPI ranks or sweep groups computing the same array can
only ever see a complete file. A cache file that cannot be read or fails the caller's check
is recomputed and rewritten; a cache directory that cannot be written only costs the
caching, never the run. The default directory is ``<repo>/.cache``, overridden by the
environment variable ``COSIM_CACHE_DIR`` or an explicit argument.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from cosim.core.files import atomic_open
from cosim.errors import InputError
from cosim.paths import default_cache_dir

__all__ = ["cache_key", "cache_path", "cached_array"]


def cache_key(model: str, params: Mapping[str, object], version: int) -> str:
    """Hex sha256 of the canonical JSON of ``{"model", "params", "version"}``.

    Raises
    ------
    ValueError
        If a parameter is not JSON-serialisable or is NaN/infinite (a bug in the caller).
    """
    doc = {"model": model, "params": dict(params), "version": version}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_path(cache_dir: os.PathLike | str, model: str, params: Mapping[str, object],
               version: int) -> Path:
    """Where the array of (`model`, `params`, `version`) is cached under `cache_dir`."""
    return Path(cache_dir) / f"{model}-{cache_key(model, params, version)}.npy"


def _load(path: Path, check: Callable[[np.ndarray], bool]) -> np.ndarray | None:
    try:
        with open(path, "rb") as fh:
            a = np.load(fh, allow_pickle=False)
    except Exception:  # noqa: BLE001 - a missing, unreadable or truncated file: recompute
        return None
    if not isinstance(a, np.ndarray) or not check(a):
        return None
    return a


def _store(path: Path, a: np.ndarray) -> None:
    # a read-only or missing cache directory disables caching, nothing else
    with contextlib.suppress(InputError), atomic_open(path, "wb") as fh:
        np.save(fh, a, allow_pickle=False)


def cached_array(
    cache_dir: os.PathLike | str | None,
    model: str,
    params: Mapping[str, object],
    version: int,
    compute: Callable[[], np.ndarray],
    check: Callable[[np.ndarray], bool],
) -> np.ndarray:
    """Return the cached array for (`model`, `params`, `version`), computing it if needed.

    Parameters
    ----------
    cache_dir:
        Cache directory; ``None`` means `default_cache_dir`.
    model, params, version:
        The cache key (see `cache_key`); `params` must hold only JSON scalars.
    compute:
        Produces the array when the cache has no valid copy.
    check:
        Returns True if a loaded array is well-formed (dtype, shape, range); a file that
        fails it is treated as corrupt and recomputed.

    Returns
    -------
    numpy.ndarray
        The loaded or freshly computed array.
    """
    path = cache_path(default_cache_dir() if cache_dir is None else cache_dir,
                      model, params, version)
    a = _load(path, check)
    if a is None:
        a = compute()
        _store(path, a)
    return a
