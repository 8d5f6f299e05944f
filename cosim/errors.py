"""User-facing errors of cosim.

Every problem caused by the user's input (a file, a flag, a parameter) is raised as an
`InputError`; the CLI prints its one-line message and exits with status 2, never a traceback.
The message names where the problem is: ``FILE:LINE: field NAME: problem`` when a file and a
line are known, shorter forms otherwise. `ProtocolError` marks a broken invariant of the
simulation protocol (a bug, not bad input).
"""

from __future__ import annotations

__all__ = ["CosimError", "InputError", "ProtocolError", "EXIT_INPUT"]

EXIT_INPUT = 2


class CosimError(Exception):
    """Base class of every error cosim raises on purpose."""


class InputError(CosimError):
    """Bad user input; the CLI reports it on one line and exits with status 2.

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

    def _format(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
            where += ": "
        if self.field is not None:
            where += f"field {self.field}: "
        return where + " ".join(self.problem.split())


class ProtocolError(CosimError):
    """An invariant of the simulation protocol was broken (a bug, reported loudly)."""
