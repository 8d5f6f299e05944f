"""Run under ``mpiexec -n K``: every rank computes the reference digest; rank 0 checks they agree.

Prints ``digest <hex> ranks <K>`` on rank 0 and exits 0 when all ranks agree, 1 otherwise.
Started by tests/test_mpi.py with a different PYTHONHASHSEED per rank.
"""

import sys

from mpi4py import MPI

from cosim.testing.scenarios import loop_digest

comm = MPI.COMM_WORLD
digests = comm.gather(loop_digest(seed=int(sys.argv[1]) if len(sys.argv) > 1 else 0), root=0)
if comm.rank == 0:
    if len(set(digests)) != 1:
        print("ranks disagree:", digests, flush=True)
        comm.Abort(1)
    print(f"digest {digests[0]} ranks {comm.size}", flush=True)
