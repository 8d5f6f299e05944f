"""cosim installed as a user installs it: a wheel that is the whole tool, run from anywhere.

The wheel is built from a copy of the source tree (the files a clone has), installed into a
fresh virtual environment (its dependencies come from this one through a ``.pth`` line, so no
network is needed; the editable install of this checkout is not visible there), and the main
job runs from another directory with an empty cache. Also: the built-in data and the cache
directory as `cosim.paths` resolves them, the version in one place, the documents the code
cites, and MPI that cannot be loaded under a launcher.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

import cosim
import cosim.paths as paths
from cosim.transport import MPI_LAUNCH_VARIABLES

ROOT = Path(__file__).resolve().parent.parent
# what a clone does not have (or what a build makes)
_NOT_IN_A_CLONE = shutil.ignore_patterns(".venv", ".git", "runs", ".cache", "build", "dist",
                                         "*.egg-info", "__pycache__", "*.so", ".hypothesis",
                                         ".pytest_cache", "*.pyc")


def _clean_env(tmp: Path) -> dict[str, str]:
    """The environment of a user with an empty home: no cache override, no MPI launcher."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("COSIM_CACHE_DIR", "COSIM_MPI", "PYTHONPATH", *MPI_LAUNCH_VARIABLES)}
    home = tmp / "home"
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
               MPLCONFIGDIR=str(home / "mpl"))
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("not a source checkout: there is no tree to build a wheel from")
    tmp = tmp_path_factory.mktemp("wheel")
    # not named "src": setuptools then fails to build it (bdist_wheel's install command
    # loses its distribution), whatever the project
    tree = tmp / "cosim-checkout"
    shutil.copytree(ROOT, tree, ignore=_NOT_IN_A_CLONE)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(tmp / "dist"), str(tree)],
                   check=True, capture_output=True, text=True, timeout=300)
    (built,) = (tmp / "dist").glob("cosim-*.whl")
    return built


def test_the_wheel_carries_the_data_the_licence_and_one_version(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for name in ("platforms/ib256.toml", "platforms/curie5040.toml", "apps/mandelbrot.toml",
                 "apps/psia.toml", "traces/esp-mandelbrot.swf", "traces/README.md",
                 "traces/KTH-SP2-1996-2.1-cln.swf.gz"):
        assert f"cosim/_data/{name}" in names
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert f"\nVersion: {cosim.__version__}\n" in text
    assert "License-Expression: BSD-3-Clause" in text
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any("/.cache/" in n or n.endswith(".npy") for n in names)


def test_the_installed_wheel_runs_the_main_job_from_anywhere(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    (site,) = env_dir.glob("lib/python*/site-packages") or env_dir.glob("Lib/site-packages")
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-index", "--target", str(site), str(wheel)], check=True,
                   capture_output=True, text=True, timeout=120)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = _clean_env(tmp_path)

    where = subprocess.run([str(python), "-c", "import cosim, cosim.paths as p; "
                            "print(cosim.__file__); print(p.TRACES_DIR); "
                            "print(p.default_cache_dir())"], cwd=elsewhere, env=env,
                           capture_output=True, text=True, check=True).stdout.split("\n")
    assert Path(where[0]).is_relative_to(site)  # the wheel's copy, not this checkout
    assert Path(where[1]) == site / "cosim" / "_data" / "traces"
    assert Path(where[2]) == tmp_path / "home" / ".cache" / "cosim"

    version = subprocess.run([str(python), "-m", "cosim", "--version"], cwd=elsewhere, env=env,
                             capture_output=True, text=True)
    assert version.stdout.startswith(f"cosim {cosim.__version__} ")
    from cosim.bls.replay import REPLAY_KERNEL  # built here: built into the wheel too
    from cosim.core.records import RECORDS_KERNEL
    from cosim.output.otf2_writer import EVENT_KERNEL
    from cosim.output.textrows import TEXT_KERNEL
    assert (f"trace replay: {REPLAY_KERNEL}, output rows: {TEXT_KERNEL}, trace events: "
            f"{EVENT_KERNEL}, records: {RECORDS_KERNEL})" in version.stdout)

    proc = subprocess.run([str(python), "-m", "cosim", "run", "--out", "out"], cwd=elsewhere,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = elsewhere / "out"
    for run in ("rca-off", "rca-yield"):
        summary = json.loads((out / run / "summary.json").read_text())
        assert summary["jobs"] == 230
        assert (out / run / "trace" / "traces.otf2").is_file()
    assert (out / "results.h5").is_file() and (out / "utilization.png").is_file()
    # app costs were cached in the user's cache directory, nothing was written in the package
    assert list((tmp_path / "home" / ".cache" / "cosim").glob("mandelbrot-*.npy"))
    assert not list(site.rglob(".cache")) and not list(site.rglob("*.npy"))


def test_built_in_data_comes_from_the_package_when_it_carries_a_copy(tmp_path, monkeypatch):
    assert paths.data_dir("traces") == ROOT / "traces"  # this checkout: no packaged copy
    (tmp_path / "traces").mkdir()
    monkeypatch.setattr(paths, "_PACKAGE_DATA", tmp_path)
    assert paths.data_dir("traces") == tmp_path / "traces"
    assert paths.data_dir("platforms") == ROOT / "platforms"


def test_the_cache_is_the_override_the_checkout_or_the_users_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COSIM_CACHE_DIR", str(tmp_path / "mine"))
    assert paths.default_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("COSIM_CACHE_DIR")
    assert paths.is_checkout() and paths.default_cache_dir() == ROOT / ".cache"
    monkeypatch.setattr(paths, "REPO_DIR", tmp_path / "site-packages")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert paths.default_cache_dir() == tmp_path / "xdg" / "cosim"
    assert not paths.default_cache_dir().is_relative_to(tmp_path / "site-packages")


def test_the_version_is_written_once():
    from importlib.metadata import version

    assert version("cosim") == cosim.__version__
    text = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in text and "\nversion =" not in text.split("[tool")[0]
    assert f"version: {cosim.__version__}" in (ROOT / "CITATION.cff").read_text()


def test_every_document_the_code_cites_is_in_the_repository():
    """Docstrings cite ``DESIGN §N`` (docs/DESIGN.md) and ``<name>.md`` in ``docs/reference/``
    (the references the code follows): each must resolve to a file of the repository."""
    cited: dict[str, set[str]] = {}
    for py in [*ROOT.glob("cosim/**/*.py"), *ROOT.glob("tests/**/*.py"),
               *ROOT.glob("scripts/*.py")]:
        for name in re.findall(r"\b([A-Za-z0-9_./-]*[A-Za-z0-9_-]+\.md)\b", py.read_text()):
            cited.setdefault(name, set()).add(str(py.relative_to(ROOT)))
        if "DESIGN §" in py.read_text():
            cited.setdefault("DESIGN.md", set()).add(str(py.relative_to(ROOT)))
    missing = {}
    for name, where in cited.items():
        base = Path(name).name
        found = [p for p in (ROOT / name, ROOT / "docs" / base, ROOT / "docs" / "reference" / base)
                 if p.is_file()]
        if not found:
            missing[name] = sorted(where)
    assert cited and not missing
    assert {"dls.md", "malleability.md", "workloads.md", "otf2.md"} <= {Path(n).name
                                                                        for n in cited}


_NO_MPI = ("import sys\n"
           "sys.modules['mpi4py'] = None  # as where mpi4py or its MPI library is missing\n"
           "from cosim.cli import main\n"
           "sys.exit(main(sys.argv[1:]))\n")
TWO_JOBS = ("; MaxNodes: 4\n1 0 0 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n"
            "2 5 0 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n")


@pytest.mark.parametrize("launcher", [{}, {"PMI_SIZE": "2", "PMI_RANK": "0"},
                                      {"PMI_SIZE": "2", "PMI_RANK": "1"}])
def test_without_mpi_a_serial_run_works_and_a_launched_one_says_why_it_cannot(tmp_path,
                                                                            launcher):
    (tmp_path / "two.swf").write_text(TWO_JOBS)
    env = {**_clean_env(tmp_path), "COSIM_CACHE_DIR": str(tmp_path / "cache"), **launcher}
    proc = subprocess.run([sys.executable, "-c", _NO_MPI, "run", "--workload", "two.swf",
                           "--out", "out"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    if not launcher:
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / "out" / "summary.json").is_file()
        return
    assert proc.returncode == 2
    assert not (tmp_path / "out").exists()
    if launcher["PMI_RANK"] == "0":  # one process speaks for all
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("cosim: error: started by an MPI launcher, but MPI cannot be "
                               "loaded") and "cosim[mpich]" in line
    else:
        assert proc.stderr == ""
