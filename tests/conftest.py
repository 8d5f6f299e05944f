"""Fixtures shared by several test modules."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def uniform_profile(tmp_path_factory) -> str:
    """The cost file of a ``profile`` app of 400 iterations of 1e7 FLOP each (10 ms on a 1 GF
    PE)."""
    path = tmp_path_factory.mktemp("costs") / "uniform.txt"
    path.write_text("\n".join(["1e7"] * 400) + "\n")
    return str(path)
