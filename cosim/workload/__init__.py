"""Workloads and application models: what the batch level runs and what each job computes.

This package holds the app models that give every loop iteration of a job its cost in FLOP
(`mandelbrot`, `psia`, `profile`), the `TaskCosts` array they produce, and the strict loader
`load_app` that turns an app name or app TOML plus command-line overrides into costs, with
computed arrays cached on disk by content hash (`cache`). Job traces and workload generators
live in sibling modules.
"""

from cosim.workload.apps import load_app
from cosim.workload.costs import TaskCosts, validate_costs

__all__ = ["TaskCosts", "load_app", "validate_costs"]
