"""MPI tests: processes started with ``mpiexec -n 3`` agree with the in-process run.

The MPI program runs in a subprocess with a timeout, so a hang fails the test instead of
blocking the suite. Each rank gets its own PYTHONHASHSEED, so any dependence on string hashing
or set order would show as a disagreement.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cosim.testing.scenarios import loop_digest

HERE = Path(__file__).parent
MPIEXEC = Path(sys.executable).parent / "mpiexec"


def test_three_ranks_give_the_in_process_result():
    # The mpich wheel is a declared dependency of the test set-up (make test installs it).
    assert MPIEXEC.exists(), f"mpiexec not found next to {sys.executable}; run make install"
    script = str(HERE / "mpi" / "rank_determinism.py")
    cmd = [str(MPIEXEC)]
    for rank in range(3):
        if rank:
            cmd.append(":")
        cmd += ["-n", "1", "-env", "PYTHONHASHSEED", str(rank + 11), sys.executable, script, "5"]
    env = dict(os.environ)
    env.pop("PYTHONHASHSEED", None)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("digest ")]
    assert line, proc.stdout + proc.stderr
    _, digest, _, size = line[0].split()
    assert size == "3"
    assert digest == loop_digest(seed=5)
