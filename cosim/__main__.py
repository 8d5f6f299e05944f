"""``python -m cosim``: the command-line interface."""

from cosim.cli import main

raise SystemExit(main())
