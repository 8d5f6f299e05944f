"""One cosim process computes on one core: imported by the command line before numpy loads.

numpy's BLAS (OpenBLAS in the wheels) otherwise starts a thread per core at import, and after
any BLAS call those threads spin for a while waiting for more work. In a serial run that is
wasted power; under ``mpiexec -n K`` on K cores it takes cores from the other ranks (measured
on a 2-core machine: the 2-rank SS main job 3.7 s per simulation with the threads, 2.9 s
without). The limits are defaults: a variable the user set wins.
"""

import os

__all__ = ["THREAD_VARIABLES"]

THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

for _name in THREAD_VARIABLES:
    os.environ.setdefault(_name, "1")
