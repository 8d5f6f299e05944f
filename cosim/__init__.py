"""cosim: a multilevel co-simulator of HPC scheduling.

The batch level (a Slurm-like scheduler) and the application level (dynamic loop
self-scheduling inside every running job) are simulated together, with integer-tick time and
keyed random streams so that every run is exactly reproducible. See README.md for the map of
the package and DESIGN notes in the module docstrings.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
