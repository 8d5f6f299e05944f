"""``python -m cosim``: the command-line interface."""

from cosim.cli import entry

raise SystemExit(entry())
