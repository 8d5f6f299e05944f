"""``scripts/reproduce_rca.py --paper``: the RCA paper's preset (arrival rca, Table 1, a 30 s
backfill cadence) over seeds, its JSON a program can check, and its bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script(*args: str, tmp: Path) -> subprocess.CompletedProcess:
    env = {"COSIM_CACHE_DIR": str(tmp / "cache"), "PATH": "/usr/bin:/bin",
           "MPLBACKEND": "Agg", "HOME": str(tmp)}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "reproduce_rca.py"), *args],
                          capture_output=True, text=True, cwd=tmp, timeout=300, env=env)


def test_paper_preset_json_over_two_seeds(tmp_path):
    proc = _script("--paper", "--apps", "psia", "--techniques", "STATIC", "--seeds", "0,1",
                   "--json", "--out", "rr", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [(r["workload"], r["technique"], r["rca"]) for r in rows] == [
        ("ESP-psia", "STATIC", "off"), ("ESP-psia", "STATIC", "yield")]
    for r in rows:
        assert r["seeds"] == [0, 1] and r["makespan_s_sd"] > 0  # two orders, two makespans
        assert {"makespan_s_mean", "utilization_mean", "occupancy_mean",
                "esp_efficiency_mean"} <= set(r)
        # ESP efficiency is T_min / makespan, T_min = 10,976.1875 s on 256 hosts
        assert abs(r["esp_efficiency_mean"] * r["makespan_s_mean"] - 10976.1875) < 60
        assert 0 < r["utilization_mean"] <= r["occupancy_mean"] <= 1
    out = tmp_path / "rr"
    swf = (out / "workloads" / "esp-psia-rca-table1-s1.swf").read_text()
    assert "arrival=rca" in swf and "calibrate=table1" in swf and "walltime_factor=1.5" in swf
    assert len(list((out / "runs").glob("*/summary.json"))) == 4
    summary = json.loads(next((out / "runs").glob("*/summary.json")).read_text())
    assert summary["bf_interval_s"] == 30.0
    again = _script("--paper", "--apps", "psia", "--techniques", "STATIC", "--seeds", "0,1",
                    "--json", "--out", "rr", tmp=tmp_path)  # resumes: nothing is run again
    assert again.returncode == 0 and json.loads(again.stdout) == rows


def test_bad_input_is_one_line(tmp_path):
    for args, needle in ((["--apps", "nope"], "field apps"),
                         (["--paper", "--seeds", "x"], "field seeds"),
                         (["--seeds", "0-2"], "field seeds"),
                         (["--techniques", ","], "field techniques"),
                         (["--techniques", "NOPE", "--apps", "psia"], "NOPE"),
                         (["--app-overrides", "widht=1", "--apps", "mandelbrot"], "widht")):
        proc = _script(*args, "--out", "bad", tmp=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "reproduce_rca: error:" in proc.stderr, \
            proc.stderr
