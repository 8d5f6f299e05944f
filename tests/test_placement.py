"""Where apps are simulated under MPI (`cosim.placement`): the candidate ranks by technique,
and the least-work choice among them. Results never depend on it (tests/test_mpi.py runs the
same scenarios on 1, 2 and 3 ranks, with and without --rank0-apps); these tests pin the rule.
"""

from __future__ import annotations

import pytest

from cosim.als.techniques import chunk_sizes, get, names
from cosim.placement import TRACE, LeastWork, app_ranks
from cosim.protocol.messages import StartApp


@pytest.mark.parametrize("name", names())
def test_apps_stay_on_rank_0_unless_their_loops_are_fine_grained(name):
    technique = get(name)
    assert app_ranks(4, False, technique) == [1, 2, 3]
    expected = [0, 1, 2, 3] if technique.fine_grained else [0]
    assert app_ranks(4, True, technique) == expected
    assert app_ranks(1, True, technique) == [0]
    # a settled run sends an app's end at once: any app is worth another rank
    assert app_ranks(4, True, technique, settled=True) == [0, 1, 2, 3]


@pytest.mark.parametrize("name", names())
def test_fine_grained_techniques_are_those_with_about_one_chunk_per_few_iterations(name):
    """The flag says what the chunk sequence shows: 100,000 iterations on 16 PEs take a
    fine-grained technique more than 5,000 chunks (FSC with a small overhead h), the others
    at most a few thousand (adaptive techniques shrink their chunks like FAC: not fine)."""
    technique = get(name)
    if technique.adaptive:
        assert not technique.fine_grained
        return
    params = {"h": 1e-6, "sigma": 1e-4} if name == "FSC" else {}
    params.update({"mu": 1e-3, "sigma": 1e-4} if name in ("FAC", "TAP") else {})
    n_chunks = len(chunk_sizes(name, 100_000, 16, **params))
    assert (n_chunks > 5_000) == technique.fine_grained, n_chunks


def test_least_work_balances_predicted_work_and_sends_trace_jobs_to_the_trace_endpoint():
    place = LeastWork([0, 1], None)

    def start(job, flop):
        return StartApp(time=0, job_id=job, app="mandelbrot", pes=2, hosts=(0,),
                        params=(("total_flop", str(flop)),))

    assert place.choose(start(1, 4e9), 0) == 0  # ties to the lower rank
    assert place.choose(start(2, 1e9), 0) == 1
    assert place.choose(start(3, 1e9), 0) == 1  # rank 1 has 0.5 s left, rank 0 has 2 s
    place.ended(1)
    assert place.choose(start(4, 1e9), 0) == 0
    rigid = StartApp(time=0, job_id=5, app="rigid", pes=1, hosts=(0,))
    assert place.choose(rigid, 0) == TRACE


def test_facts_are_settled_only_where_no_command_can_reach_a_running_app():
    """`settled`: an ended app's facts are final — and ALS ranks send them at once — unless
    exclusion requests, a malleable policy or a resizable job could reach a running app."""
    from dataclasses import replace

    from cosim.bls.config import BatchConfig
    from cosim.runner import settled
    from cosim.workload.jobs import Job

    jobs = [Job(id=i, submit=0, runtime=10, hosts=1, pes=1, walltime=20) for i in (1, 2)]
    assert settled(BatchConfig(), jobs) and settled(BatchConfig(rca=True), jobs)
    assert not settled(BatchConfig(rca=True, exclusion=True), jobs)
    assert not settled(BatchConfig(malleable="equi"), jobs)
    assert not settled(BatchConfig(), [jobs[0], replace(jobs[1], kind="malleable", min_pes=1,
                                                         max_pes=2)])
