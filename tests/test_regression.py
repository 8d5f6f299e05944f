"""Schedules that must not move: a digest of every job's outcome in runs that never resize.

The golden file ``tests/golden/schedules.txt`` was written by the code *before* the batch
level learnt PE-level allocations and resizes (issue 9); each line is a scenario, its job
count and the SHA-256 of its outcomes (id, submit, start, end, status, hosts, RCA yields,
lends, borrows). Rigid traces under every backfill, priority and selection policy, spread
PEs on multi-core hosts, and co-simulated ESP runs under RCA off, yield and full must give
exactly the same schedules as then. Run ``python tests/test_regression.py --write`` only when
a change of schedules is intended, and say why in the commit.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest

from cosim.experiment import RunOptions, execute
from cosim.paths import TRACES_DIR

GOLDEN = Path(__file__).parent / "golden" / "schedules.txt"
LUBLIN = str(TRACES_DIR / "lublin_256.swf.gz")
HPC2N = str(TRACES_DIR / "HPC2N-sample-3171jobs_from-alea.swf.gz")
ESP_ARGS = {"hosts": 16, "app_overrides": {"width": "48"}}


def _spread_trace(path: Path) -> str:
    """A rigid trace whose jobs use 1..48-core hosts partly (spread PEs), for mc64x48."""
    from cosim.testing.workloads import lublin_like

    rng = np.random.default_rng(7)
    jobs = lublin_like(600, 64, rng, load=0.9, cores=48)
    odd = rng.integers(1, 48, len(jobs))
    with open(path, "w") as fh:
        for j, k in zip(jobs, odd, strict=True):
            pes = (j.hosts - 1) * 48 + int(k)  # the last host partly used
            fh.write(f"{j.id} {j.submit // 10**9} -1 {j.runtime // 10**9} {pes} -1 -1 {pes} "
                     f"{j.walltime // 10**9} -1 1 1 1 1 1 1 -1 -1\n")
    return str(path)


def _esp(path: Path, seed: int) -> str:
    from cosim.workload.esp import make_esp

    make_esp(app="mandelbrot", out=str(path), seed=seed, hosts=16, arrival="esp",
             platform="ib256", walltime_factor=3.0, exclusion_ok=True)
    return str(path)


def scenarios(tmp: Path) -> dict[str, RunOptions]:
    """Every scenario of the golden file, by name."""
    out: dict[str, RunOptions] = {}
    for batch in ("fcfs", "easy", "conservative"):
        for prio in ("fcfs", "sjf"):
            out[f"lublin256-{batch}-{prio}"] = RunOptions(workload=LUBLIN, batch=batch,
                                                          priority=prio)
    for sel in ("contiguous", "best-fit"):
        out[f"lublin256-easy-{sel}"] = RunOptions(workload=LUBLIN, selection=sel)
    out["hpc2n-easy"] = RunOptions(workload=HPC2N, hosts=120)
    spread = _spread_trace(tmp / "spread.swf")
    # (its sub-second jobs were written as run time 0, skipped when these goldens were made)
    for batch in ("easy", "conservative"):
        out[f"spread-mc64x48-{batch}"] = RunOptions(workload=spread, platform="mc64x48",
                                                    batch=batch, skip_zero_runtime=True)
    out["spread-mc64x48-easy-nokill"] = RunOptions(workload=spread, platform="mc64x48",
                                                   walltime_kill=False,
                                                   skip_zero_runtime=True)
    esp = _esp(tmp / "esp16.swf", 2)
    for tech, rca, batch in (("STATIC", "off", "easy"), ("STATIC", "yield", "easy"),
                             ("GSS", "yield", "conservative"), ("FAC2", "full", "easy"),
                             ("AF", "yield", "fcfs"), ("SS", "full", "easy")):
        out[f"esp16-{tech}-{rca}-{batch}"] = RunOptions(workload=esp, technique=tech, rca=rca,
                                                        batch=batch, **ESP_ARGS)
    return out


def digest(outcomes) -> str:
    """SHA-256 of the outcomes in job id order."""
    h = hashlib.sha256()
    for o in sorted(outcomes, key=lambda o: o.job.id):
        h.update(repr((o.job.id, o.job.submit, o.start, o.end, o.status, tuple(o.hosts),
                       tuple(o.yielded), tuple(o.lent), tuple(o.borrowed))).encode())
    return h.hexdigest()


def _golden() -> dict[str, tuple[int, str]]:
    out = {}
    for line in GOLDEN.read_text().splitlines():
        if line and not line.startswith("#"):
            name, n, dig = line.split()
            out[name] = (int(n), dig)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return scenarios(tmp_path_factory.mktemp("regression"))


@pytest.mark.parametrize("name", sorted(_golden()))
def test_schedule_is_unchanged(runs, name, tmp_path, monkeypatch):
    monkeypatch.setenv("COSIM_CACHE_DIR", str(tmp_path / "cache"))
    n, expected = _golden()[name]
    record = execute(runs[name])
    assert (len(record.outcomes), digest(record.outcomes)) == (n, expected)


def test_every_scenario_has_a_golden(runs):
    assert sorted(runs) == sorted(_golden())


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        lines = ["# scenario jobs sha256-of-outcomes (tests/test_regression.py)"]
        for name, opt in sorted(scenarios(Path(d)).items()):
            rec = execute(opt)
            lines.append(f"{name} {len(rec.outcomes)} {digest(rec.outcomes)}")
            print(lines[-1], flush=True)
    GOLDEN.write_text("\n".join(lines) + "\n")
