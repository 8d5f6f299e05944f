"""Atomic file writing: every output cosim produces appears complete or not at all.

`atomic_open` yields a file opened on a temporary name in the target's directory and renames
it into place only when the block ends without error, so an interrupted run never leaves a
partial file under the final name. The file gets mode 0644 (``mkstemp`` would make it
private). A failure to write is an `OutputError` naming the file (full disk, missing
permission: exit 74), or an `InputError` when the path cannot be a file (exit 2); any other
exception removes the temporary file and propagates.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from cosim.errors import InputError, LocatedError, OutputError

__all__ = ["atomic_open", "write_error", "hold_dir", "LOCK_NAME"]

LOCK_NAME = ".cosim.lock"  # in an output directory: the live run that writes there

#: errors of the path itself (a file where a directory must be, a name too long): bad input
#: (EEXIST: `mkdir` of a directory where a file is)
_BAD_PATH = frozenset((errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP))


def write_error(exc: OSError, target: object) -> LocatedError:
    """The error to raise for a failed write of `target`: `InputError` (exit 2) when the path
    cannot be a file, `OutputError` (exit 74) for an I/O failure (disk full, permission)."""
    cls = InputError if exc.errno in _BAD_PATH else OutputError
    return cls(f"cannot write ({exc.strerror or exc})", file=target)


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
        raise write_error(exc, target) from None
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"newline": ""})) as fh:
            os.fchmod(fh.fileno(), 0o644)
            yield fh
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise write_error(exc, target) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def hold_dir(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold output directory `path` (created if needed) for this process: another live run
    asking for it gets an `InputError` naming the holder, so two runs never mix their files
    in one directory. An advisory lock (``flock``) on `LOCK_NAME` inside it, released when
    the block ends or the process dies, whatever the way; a directory it made is removed
    again if nothing else was written into it."""
    import fcntl

    target = Path(path)
    created = not target.exists()
    try:
        target.mkdir(parents=True, exist_ok=True)
        fd = os.open(target / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise write_error(exc, target) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            raise InputError(f"in use by another live run (pid {holder}); wait for it or "
                             "choose another --out", file=target, field="out") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        if created and [p.name for p in target.iterdir()] == [LOCK_NAME]:
            # a run that wrote nothing leaves no directory it made (no partial output)
            with contextlib.suppress(OSError):
                os.unlink(target / LOCK_NAME)
                target.rmdir()
        os.close(fd)
