"""Atomic file writing: every output cosim produces appears complete or not at all.

`atomic_open` yields a file opened on a temporary name in the target's directory and renames
it into place only when the block ends without error, so an interrupted run never leaves a
partial file under the final name. The file gets mode 0644 (``mkstemp`` would make it
private). A failure to write (missing permission, full disk) is an `InputError` naming the
file; any other exception removes the temporary file and propagates.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from cosim.errors import InputError

__all__ = ["atomic_open"]


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open `path` for writing (`mode` ``"w"`` text or ``"wb"`` bytes), atomically."""
    if mode not in ("w", "wb"):
        raise ValueError("atomic_open writes text ('w') or bytes ('wb')")
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror or exc})", file=target) from None
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"newline": ""})) as fh:
            os.fchmod(fh.fileno(), 0o644)
            yield fh
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise InputError(f"cannot write ({exc.strerror or exc})", file=target) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
