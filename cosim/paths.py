"""Where cosim finds its built-in inputs and keeps its cache.

The built-in platforms, apps and traces live in the source tree's ``platforms/``, ``apps/`` and
``traces/`` folders; a built wheel carries copies of them inside the package
(``cosim/_data/``, made by ``setup.py``), so ``pip install cosim`` gives the whole tool.
`data_dir` takes the package's copy when there is one, else the source tree's (an editable
install, or running from a checkout). Computed cost arrays are cached in
``$COSIM_CACHE_DIR`` when it is set; else, in a source checkout, in its git-ignored
``.cache/``; else in the user's cache directory (``platformdirs``: ``~/.cache/cosim`` on
Linux, ``~/Library/Caches/cosim`` on macOS, ``%LOCALAPPDATA%\\cosim\\Cache`` on Windows), never
inside an installed package.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REPO_DIR", "PLATFORMS_DIR", "APPS_DIR", "TRACES_DIR", "data_dir",
           "default_cache_dir", "is_checkout"]

#: The directory holding the `cosim` package: the source checkout, or ``site-packages``.
REPO_DIR = Path(__file__).resolve().parent.parent
_PACKAGE_DATA = Path(__file__).resolve().parent / "_data"


def is_checkout(root: Path | None = None) -> bool:
    """True when `root` (default: `REPO_DIR`) is a source checkout of cosim: its
    ``pyproject.toml`` is there."""
    root = REPO_DIR if root is None else root
    return (root / "pyproject.toml").is_file() and (root / "cosim" / "__init__.py").is_file()


def data_dir(name: str) -> Path:
    """The folder of built-in inputs `name` (``platforms``, ``apps`` or ``traces``): the
    installed package's copy, else the source tree's."""
    packaged = _PACKAGE_DATA / name
    return packaged if packaged.is_dir() else REPO_DIR / name


PLATFORMS_DIR = data_dir("platforms")
APPS_DIR = data_dir("apps")
TRACES_DIR = data_dir("traces")


def default_cache_dir() -> Path:
    """``$COSIM_CACHE_DIR`` if set, else ``<checkout>/.cache`` in a source checkout, else the
    user's cache directory for cosim (module docstring)."""
    env = os.environ.get("COSIM_CACHE_DIR")
    if env:
        return Path(env)
    if is_checkout():
        return REPO_DIR / ".cache"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("cosim", appauthor=False))
