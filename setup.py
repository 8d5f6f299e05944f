"""Build of cosim's one compiled module, the master-worker loop (cosim/als/_serve.c).

It is optional: where no C compiler or Python headers exist the install goes on without it and
cosim runs the identical pure-Python loop (`cosim --version` says which one is in use).
Everything else about the package is in pyproject.toml.
"""

import sys

from setuptools import Extension, setup

FLAGS = [] if sys.platform == "win32" else ["-O2", "-ffp-contract=off", "-fno-fast-math"]

setup(ext_modules=[Extension("cosim.als._serve", ["cosim/als/_serve.c"], optional=True,
                             extra_compile_args=FLAGS)])
