"""Where cosim finds its built-in inputs and keeps its cache.

``REPO_DIR`` is the parent of the `cosim` package directory: the source checkout, which
`make install` installs in editable mode. Built-in platforms, apps and traces are read from
its ``platforms/``, ``apps/`` and ``traces/`` folders, and computed cost arrays are cached in
``.cache/`` unless ``COSIM_CACHE_DIR`` says otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REPO_DIR", "PLATFORMS_DIR", "APPS_DIR", "TRACES_DIR", "default_cache_dir"]

REPO_DIR = Path(__file__).resolve().parent.parent
PLATFORMS_DIR = REPO_DIR / "platforms"
APPS_DIR = REPO_DIR / "apps"
TRACES_DIR = REPO_DIR / "traces"


def default_cache_dir() -> Path:
    """``$COSIM_CACHE_DIR`` if set, else ``<repo>/.cache``."""
    env = os.environ.get("COSIM_CACHE_DIR")
    return Path(env) if env else REPO_DIR / ".cache"
