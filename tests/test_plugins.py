"""Plugins by entry point (`cosim.plugins`): the example package, built and installed beside
cosim, adds a technique and a priority rule that the command line offers and runs; broken
plugins are one-line errors; built-in names never load plugins."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cosim.als.techniques import Technique
from cosim.errors import InputError
from cosim.plugins import Choices, Registry

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "cosim-example-plugin"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example plugin installed into a directory of its own (put on PYTHONPATH)."""
    tmp = tmp_path_factory.mktemp("plugin")
    tree = tmp / "example"
    shutil.copytree(EXAMPLE, tree, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                 "__pycache__"))
    target = tmp / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(target), str(tree)],
                   check=True, capture_output=True, text=True, timeout=300)
    return target


def _cosim(site: Path, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(site), COSIM_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "cosim", *argv], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)


def test_the_example_plugins_technique_runs_like_a_built_in_one(site, tmp_path):
    got = _cosim(site, tmp_path, "app", "--app", "mandelbrot", "--app-param", "width=32",
                 "--hosts", "2", "--technique", "CHUNK", "--param", "size=16",
                 "--json")
    assert got.returncode == 0, got.stderr
    import json

    row = json.loads(got.stdout)
    assert row["technique"] == "CHUNK" and row["params"] == {"min_chunk": 1, "size": 16}
    assert row["n_tasks"] == 1024 and row["n_chunks"] == 1024 // 16
    bad = _cosim(site, tmp_path, "app", "--app", "mandelbrot", "--app-param", "width=32",
                 "--hosts", "2", "--technique", "CHUNK", "--param", "size=0")
    assert bad.returncode == 2 and "size must be >= 1" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_example_plugins_priority_is_offered_and_orders_the_queue(site, tmp_path):
    assert "lpf" in _cosim(site, tmp_path, "run", "--help").stdout
    swf = tmp_path / "w.swf"
    # host 0 busy until t=100; then job 3 (4 PEs) goes before job 2 (1 PE) under lpf
    swf.write_text("; MaxNodes: 4\n"
                   "1 0 -1 100 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1\n"
                   "2 1 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n"
                   "3 2 -1 10 4 -1 -1 4 10 -1 1 1 1 -1 1 -1 -1 -1\n")
    for order, first in (("fcfs", 2), ("lpf", 3)):
        got = _cosim(site, tmp_path, "run", "--workload", str(swf), "--priority", order,
                     "--batch", "fcfs", "--out", f"out-{order}")
        assert got.returncode == 0, got.stderr
        rows = (tmp_path / f"out-{order}" / "jobs.csv").read_text().splitlines()[1:]
        starts = {int(r.split(",")[0]): float(r.split(",")[2]) for r in rows}
        assert starts[first] == 100.0 and starts[5 - first] == 110.0


def test_a_broken_plugin_is_one_line_naming_it(tmp_path):
    dist = tmp_path / "site" / "broken_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[cosim.techniques]\nNOPE = no_such_module:X\n")
    got = _cosim(tmp_path / "site", tmp_path, "app", "--app", "mandelbrot", "--hosts", "2",
                 "--technique", "NOPE")
    assert got.returncode == 2
    (line,) = got.stderr.strip().splitlines()
    assert "plugin 'NOPE' (cosim.techniques entry point of broken-plugin" in line
    assert "cannot be loaded: ModuleNotFoundError" in line
    # a built-in name never loads the plugins: the broken one does not matter then
    ok = _cosim(tmp_path / "site", tmp_path, "app", "--app", "mandelbrot", "--app-param",
                "width=16", "--hosts", "2", "--technique", "SS")
    assert ok.returncode == 0, ok.stderr


def test_registry_rules(monkeypatch):
    import importlib.metadata as md

    class EP:
        def __init__(self, name, obj, dist="pkg"):
            self.name, self._obj, self.value = name, obj, f"mod:{name}"
            self.dist = type("D", (), {"name": dist})()

        def load(self):
            return self._obj

    from cosim.als.techniques import get

    ss = get("SS")
    mine = Technique(name="MINE", summary="", params=ss.params, make=ss.make)
    found: list = []
    monkeypatch.setattr(md, "entry_points", lambda group: list(found))
    reg = Registry("cosim.techniques", {"SS": ss}, kind=Technique, key=str.upper,
                   name_of=lambda t: t.name)
    found[:] = [EP("MINE", mine)]
    assert reg["SS"] is ss and reg._plugins is None  # built in: nothing loaded
    assert "MINE" in reg and reg["MINE"] is mine and list(reg) == ["SS", "MINE"]
    assert list(Choices(reg, "all")) == ["all", "MINE", "SS"]
    # names are keyed as the lookups read them: `_` is `-`, case folded
    under = Technique(name="MY_T", summary="", params=ss.params, make=ss.make)
    found[:] = [EP("my_t", under)]
    keyed = Registry("cosim.techniques", {"SS": ss}, kind=Technique,
                     key=lambda n: n.upper().replace("_", "-"), name_of=lambda t: t.name)
    assert keyed["MY-T"] is under and "my_t" not in keyed
    for bad, problem in ((EP("SS", ss), "already registered"),
                         (EP("OTHER", mine), "the entry point's name must be its name"),
                         (EP("X", object()), "not a Technique")):
        found[:] = [bad]
        fresh = Registry("cosim.techniques", {"SS": ss}, kind=Technique, key=str.upper,
                         name_of=lambda t: t.name)
        with pytest.raises(InputError, match=problem):
            list(fresh)


def test_building_the_parser_never_loads_plugins_even_as_python_3_14_checks_help():
    """Python 3.14 expands every help string when an argument is added; cosim's help strings
    name only built-in policies (the plugins' only under --help), so no entry point loads."""
    probe = ("import sys, argparse\n"
             "from cosim.cli import build_parser\n"
             "parser = build_parser()\n"
             "run = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))"
             ".choices['run']\n"
             "fmt = run._get_formatter()\n"
             "for action in run._actions:\n"
             "    # what 3.14's _check_help does: _expand_help, which returns at once for a\n"
             "    # help without '%' (3.11's would list the choices anyway)\n"
             "    if action.help and '%' in action.help:\n"
             "        fmt._expand_help(action)\n"
             "print(sorted(a.dest for a in run._actions if a.help and '%' in a.help\n"
             "             and a.choices is not None and not isinstance(a.choices, (list, tuple))))\n"
             "print('importlib.metadata' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip().splitlines()
    assert out == ["[]", "False"]  # no registry-backed option has a '%' help
