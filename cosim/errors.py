"""User-facing errors of cosim.

Every problem caused by the user's input (a file, a flag, a parameter) is raised as an
`InputError`; the CLI prints its one-line message and exits with status 2, never a traceback.
The message names where the problem is: ``FILE:LINE: field NAME: problem`` when a file and a
line are known, shorter forms otherwise. `ProtocolError` marks a broken invariant of the
simulation protocol (a bug, not bad input). `OutputError` is a file cosim could not write (disk
full, no permission): one line too, exit status 74 (``EX_IOERR``), not 2, which is reserved for
bad input.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CosimError", "InputError", "OutputError", "ProtocolError", "EXIT_INPUT",
           "EXIT_OUTPUT"]

EXIT_INPUT = 2
EXIT_OUTPUT = 74  # sysexits.h EX_IOERR


class CosimError(Exception):
    """Base class of every error cosim raises on purpose."""


class LocatedError(CosimError):
    """An error whose one-line message says where it is.

    Parameters
    ----------
    problem:
        What is wrong, in a few words.
    file, line, field:
        Where it is, as far as known; they prefix the message as ``FILE:LINE: field F:``.
    """

    def __init__(
        self,
        problem: str,
        *,
        file: object | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.problem = problem
        self.file = None if file is None else str(file)
        self.line = line
        self.field = field
        super().__init__(self._format())

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled with where it is (a worker process's error reaches its parent whole); the
        # default would rebuild it from its message alone
        return (_located, (type(self), self.problem, self.file, self.line, self.field))

    def _format(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
            where += ": "
        if self.field is not None:
            where += f"field {self.field}: "
        return where + " ".join(self.problem.split())


def _located(cls: type[LocatedError], problem: str, file: str | None, line: int | None,
             field: str | None) -> LocatedError:
    """A pickled `LocatedError` rebuilt (`LocatedError.__reduce__`)."""
    return cls(problem, file=file, line=line, field=field)


class InputError(LocatedError):
    """Bad user input; the CLI reports it on one line and exits with status 2."""


class OutputError(LocatedError):
    """A file that could not be written (disk full, permission, a path that is not a
    directory); the CLI reports it on one line and exits with status 74."""


class ProtocolError(CosimError):
    """An invariant of the simulation protocol was broken (a bug, reported loudly)."""
