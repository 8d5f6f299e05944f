"""Workloads and application models: what the batch level runs and what each job computes.

This package holds the app models that give every loop iteration of a job its cost in FLOP
(`mandelbrot`, `psia`, `profile`), the `TaskCosts` array they produce, and the strict loader
`load_app` that turns an app name or app TOML plus command-line overrides into costs, with
computed arrays cached on disk by content hash (`cache`). Job traces and workload generators
live in sibling modules. The names below load on first use (PEP 562), so a batch-only run that
reads jobs does not load the app models.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["TaskCosts", "load_app", "validate_costs"]

_HOME = {"load_app": "cosim.workload.apps", "TaskCosts": "cosim.workload.costs",
         "validate_costs": "cosim.workload.costs"}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'cosim.workload' has no attribute {name!r}")
