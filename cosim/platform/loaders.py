"""Finding and loading platforms: builtin names, TOML files, SimGrid XML files.

`load_platform` takes a path ending in ``.toml`` or ``.xml`` (case-insensitive), or a bare
name such as ``ib256`` resolved to ``<repo>/platforms/<name>.toml``, where ``<repo>`` is the
directory above the ``cosim`` package (the editable install's checkout). The file suffix
decides the format, so a bare name never shadows a file and a path is never taken for a name.
Every problem with the input is an `InputError` naming the file (and field), never a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

from cosim.errors import InputError
from cosim.paths import PLATFORMS_DIR
from cosim.platform.model import Platform
from cosim.platform.toml_format import load_toml

__all__ = ["load_platform", "available_platforms", "platforms_dir"]


def platforms_dir() -> Path:
    """``<repo>/platforms``: where builtin platform names are looked up."""
    return PLATFORMS_DIR


def available_platforms() -> list[str]:
    """The builtin platform names (stems of ``platforms/*.toml``), sorted."""
    d = platforms_dir()
    return sorted(p.stem for p in d.glob("*.toml")) if d.is_dir() else []


def load_platform(spec: str | os.PathLike[str]) -> Platform:
    """Load a platform from a file or a builtin name.

    Parameters
    ----------
    spec:
        A path to a ``.toml`` (cosim format) or ``.xml`` (SimGrid) file, or a bare builtin
        name such as ``"ib256"`` (see `available_platforms`).

    Returns
    -------
    Platform
        With ``source`` = the path as given, or the builtin name.

    Raises
    ------
    InputError
        For an unknown name (listing the available ones), a missing file, or any bad input.
    """
    text = os.fspath(spec)
    suffix = Path(text).suffix.lower()
    if suffix == ".toml":
        return load_toml(Path(text), source=text)
    if suffix == ".xml":
        from cosim.platform.simgrid import load_simgrid_xml  # (XML: loaded when asked for)

        return load_simgrid_xml(Path(text), source=text)
    if isinstance(spec, os.PathLike) or os.sep in text or "/" in text or suffix:
        raise InputError("unknown platform file type (expected .toml or .xml)", file=text)
    names = available_platforms()
    if text not in names:
        raise InputError(f"unknown platform {text!r} (available: {', '.join(names) or 'none'}; "
                         "or give a path to a .toml or .xml file)", field="platform")
    return load_toml(platforms_dir() / f"{text}.toml", source=text)
