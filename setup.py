"""Build steps pyproject.toml cannot state: cosim's compiled modules and its built-in data.

The compiled modules — the master-worker loop (cosim/als/_serve.c), the trace replay
(cosim/bls/_replay.c), the row formatter of the output files (cosim/output/_text.c), the
event loop of the OTF2 writer (cosim/output/_events.c) and the bulk maker of records
(cosim/core/_records.c) — are optional: where no C compiler or
Python headers exist the install goes on without them and cosim runs the identical pure-Python
code (`cosim --version` says which is in use). The built-in platforms, apps and traces (the source tree's ``platforms/``, ``apps/``, ``traces/``) are copied into the
built package as ``cosim/_data/`` (`cosim.paths.data_dir`), so a wheel is the whole tool; an
editable install reads them from the source tree. Everything else is in pyproject.toml.
"""

import shutil
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

FLAGS = [] if sys.platform == "win32" else ["-O2", "-ffp-contract=off", "-fno-fast-math"]
DATA = ("platforms", "apps", "traces")
HERE = Path(__file__).resolve().parent


class BuildWithData(build_py):
    """`build_py`, then the built-in data folders into ``<build>/cosim/_data/``."""

    def run(self):
        super().run()
        for name in DATA:
            target = Path(self.build_lib) / "cosim" / "_data" / name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(HERE / name, target,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(ext_modules=[Extension("cosim.als._serve", ["cosim/als/_serve.c"], optional=True,
                             extra_compile_args=FLAGS),
                   Extension("cosim.core._records", ["cosim/core/_records.c"], optional=True,
                             extra_compile_args=FLAGS),
                   Extension("cosim.bls._replay", ["cosim/bls/_replay.c"], optional=True,
                             extra_compile_args=FLAGS),
                   Extension("cosim.output._text", ["cosim/output/_text.c"], optional=True,
                             extra_compile_args=FLAGS),
                   Extension("cosim.output._events", ["cosim/output/_events.c"], optional=True,
                             extra_compile_args=FLAGS)],
      cmdclass={"build_py": BuildWithData})
