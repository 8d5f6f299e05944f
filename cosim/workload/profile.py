"""Profile app model: per-iteration costs measured elsewhere and loaded from a file.

The file format follows the extension: ``.npy`` is a NumPy array file (1-D, real numbers,
no pickles); ``.h5`` / ``.hdf5`` is an HDF5 file whose dataset is named by the ``dataset``
parameter (default: the only dataset in the file); anything else (``.csv``, ``.txt``, ...) is
text with one number per line, where blank lines and ``#`` comments (whole-line or trailing)
are skipped. Every value is multiplied by ``scale`` (e.g. measured seconds times the FLOP/s of
the machine they were measured on). Bad input (a missing or unreadable file, non-numeric text,
NaN, an infinity, a negative value, no values at all) is an `InputError` naming the file, the
line for text files, and the field.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cosim.errors import InputError
from cosim.workload.costs import MAX_TASKS, TaskCosts, validate_costs

__all__ = ["ProfileParams", "load_costs", "compute"]

_HDF5_SUFFIXES = (".h5", ".hdf5")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileParams:
    """Parameters of the profile model (``[params]`` of an app TOML with model profile).

    Attributes
    ----------
    file:
        The cost file; the CLI's ``--costs FILE`` takes precedence. A relative path in an
        app TOML is relative to that TOML file, one from the command line to the working
        directory.
    dataset:
        HDF5 only: the dataset path inside the file; default: the only dataset.
    scale:
        Factor applied to every value (> 0).
    """

    file: str | None = None
    dataset: str | None = None
    scale: float = 1.0

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise ValueError(f"scale must be > 0, got {self.scale}")


def _read_text(path: Path) -> np.ndarray:
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not a UTF-8 text file ({exc.reason})", file=path) from None
    values: list[float] = []
    lines: list[int] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        item = raw.split("#", 1)[0].strip()
        if not item:
            continue
        try:
            values.append(float(item))
        except ValueError:
            raise InputError(f"not a number: {item!r} (one number per line, # starts a comment)",
                             file=path, line=lineno, field="cost") from None
        lines.append(lineno)
    return validate_costs(np.array(values, dtype=np.float64), file=path, lines=lines)


def _read_npy(path: Path) -> np.ndarray:
    try:  # the shape from the header first: a 100-byte file may say (10^11,)
        with open(path, "rb") as fh:
            fmt = np.lib.format
            version = fmt.read_magic(fh)
            read = fmt.read_array_header_1_0 if version == (1, 0) else \
                fmt.read_array_header_2_0
            shape = read(fh)[0]
    except (ValueError, EOFError, OSError) as exc:
        raise InputError(f"not a valid .npy file ({exc})", file=path) from None
    _check_size(math.prod(shape), path)
    try:
        data = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, OSError) as exc:
        raise InputError(f"not a valid .npy file ({exc})", file=path) from None
    if not isinstance(data, np.ndarray):  # an .npz archive opened through a .npy name
        raise InputError("not a .npy array file", file=path)
    return validate_costs(data, file=path)


def _read_hdf5(path: Path, dataset: str | None) -> np.ndarray:
    import h5py  # imported here: only profile runs on HDF5 input pay for it

    try:
        fh = h5py.File(path, "r")
    except OSError as exc:
        raise InputError(f"cannot open as HDF5 ({exc})", file=path) from None
    with fh:
        names: list[str] = []
        fh.visititems(
            lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
        listing = ", ".join(sorted(names)) or "none"
        if dataset is None:
            if len(names) != 1:
                raise InputError(f"{len(names)} datasets in the file, choose one with "
                                 f"dataset=NAME (datasets: {listing})", file=path, field="dataset")
            name = names[0]
        else:
            name = dataset.strip("/")
            if name not in names:
                raise InputError(f"no dataset {dataset!r} (datasets: {listing})",
                                 file=path, field="dataset")
        ds = fh[name]
        if ds.is_virtual or ds.external:  # it would read other files, named by this one
            raise InputError("refusing a dataset stored in other files (external or virtual "
                             "storage)", file=path, field=name)
        _check_size(ds.size, path, field=name)
        data = ds[()]
    return validate_costs(data, file=path, field=name)


def _check_size(n: int, path: Path, field: str | None = None) -> None:
    if n > MAX_TASKS:
        raise InputError(f"{n:,} costs, more than the {MAX_TASKS:,} tasks an app may have",
                         file=path, field=field)


def load_costs(path: str | Path, *, dataset: str | None = None) -> np.ndarray:
    """Read per-iteration costs from `path` (format by extension, see the module docstring).

    Parameters
    ----------
    path:
        A ``.npy``, ``.h5``/``.hdf5`` or text file.
    dataset:
        The HDF5 dataset; an error for other formats.

    Returns
    -------
    numpy.ndarray
        Validated float64 costs (see `validate_costs`).

    Raises
    ------
    InputError
        For a missing or unreadable file and for any bad value.
    """
    p = Path(path)
    if not p.exists():
        raise InputError("no such file", file=p)
    if p.is_dir():
        raise InputError("is a directory, not a cost file", file=p)
    suffix = p.suffix.lower()
    if dataset is not None and suffix not in _HDF5_SUFFIXES:
        raise InputError("dataset applies only to HDF5 (.h5, .hdf5) files", file=p, field="dataset")
    try:
        if suffix == ".npy":
            return _read_npy(p)
        if suffix in _HDF5_SUFFIXES:
            return _read_hdf5(p, dataset)
        return _read_text(p)
    except PermissionError:
        raise InputError("permission denied", file=p) from None


def compute(p: ProfileParams, *, cache_dir: os.PathLike | str | None = None) -> TaskCosts:
    """The `TaskCosts` of the profile in ``p.file`` times ``p.scale`` (never cached)."""
    if p.file is None:
        raise InputError("the profile model needs a cost file: give --costs FILE "
                         "or the parameter file=FILE", field="params.file")
    raw = load_costs(p.file, dataset=p.dataset)
    label = f"profile {Path(p.file).name} n={raw.size}"
    return TaskCosts.from_array(raw * p.scale, model="profile", label=label,
                                params=dataclasses.asdict(p), file=p.file)
