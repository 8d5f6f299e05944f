"""``scripts/reproduce_sd.py``: SD-Policy's MAX_SLOWDOWN study against EASY on Lublin-256 and
KTH-SP2, and the same study with DLS apps (ESP).

``--quick`` as a subprocess (exit 0, the tables and the paper's findings printed, four PNGs,
``results.csv`` with one row per simulation and finite normalised values); with no job
malleable SD-Policy is EASY exactly (every normalised value 1, no guest); bad arguments stop
with one line on stderr and exit 2.
"""

from __future__ import annotations

import csv
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n"


def _script(*args: str, tmp: Path) -> subprocess.CompletedProcess:
    env = {"COSIM_CACHE_DIR": str(tmp / "cache"), "PATH": "/usr/bin:/bin",
           "MPLBACKEND": "Agg", "HOME": str(tmp)}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "reproduce_sd.py"), *args],
                          capture_output=True, text=True, cwd=tmp, timeout=120, env=env)


def _rows(out: Path) -> list[dict]:
    with open(out / "results.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_quick_run_prints_the_tables_and_draws_the_figures(tmp_path):
    out = tmp_path / "out"
    r = _script("--quick", "--out", str(out), tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    for needle in ("Lublin-256: first 150 jobs", "KTH-SP2: first 150 jobs", "MAXSD ∞",
                   "DynAVGSD", "latency mean/max s", "ESP-mandelbrot", "What the paper found",
                   "25.7 %", "70.4 %", "10.3 %", "8.6 %", "Why cosim's inputs differ",
                   "jobs/s", "wall time"):
        assert needle in text, needle
    for name in ("sd-slowdown.png", "sd-response.png", "sd-makespan.png", "sd-esp.png"):
        data = (out / name).read_bytes()
        assert data[:8] == PNG and len(data) > 10_000, name
    rows = _rows(out)
    # 2 traces x (static + 3 cut-offs x 2 models) + ESP-Mandelbrot x 2 techniques x 2
    assert len(rows) == 2 * (1 + 3 * 2) + 2 * 2
    sd = [row for row in rows if row["cutoff"] != "static"]
    for row in rows:
        for key in ("norm_makespan", "norm_response", "norm_slowdown", "mean_slowdown_static"):
            assert math.isfinite(float(row[key])) and float(row[key]) > 0, (row, key)
    assert all(float(row["norm_makespan"]) == 1.0 for row in rows if row["cutoff"] == "static")
    assert sum(int(row["guests"]) for row in sd) > 0
    assert all(int(row["distinct_mates"]) <= 2 * int(row["guests"]) for row in sd)
    esp_sd = [row for row in sd if row["study"] == "esp"]
    assert esp_sd and any(float(row["latency_mean_s"]) > 0 for row in esp_sd)
    trace_sd = [row for row in sd if row["study"] == "trace"]
    assert all(float(row["latency_mean_s"]) == 0 for row in trace_sd)  # trace jobs: at once


def test_no_malleable_job_is_exactly_easy(tmp_path):
    out = tmp_path / "out"
    r = _script("--fraction", "0", "--jobs", "120", "--cutoffs", "inf", "--models", "ideal",
                "--esp-apps", "none", "--workers", "1", "--out", str(out), tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = _rows(out)
    assert len(rows) == 4
    for row in rows:
        assert row["guests"] == "0" and row["shrinks"] == "0"
        for key in ("norm_makespan", "norm_response", "norm_slowdown"):
            assert float(row[key]) == 1.0


@pytest.mark.parametrize("args", [["--cutoffs", "5,x"], ["--models", "best"],
                                  ["--traces", "nasa"], ["--jobs", "-1"], ["--fraction", "2"],
                                  ["--sd-param", "cutoff=none"], ["--techniques", "NOPE"],
                                  ["--nope"]])
def test_bad_arguments_exit_2_with_one_line(args, tmp_path):
    r = _script(*args, "--out", str(tmp_path / "out"), tmp=tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("reproduce_sd: error:"), r.stderr
