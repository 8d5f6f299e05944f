"""Where a new app is simulated: the runner's placement of apps on ALS endpoints and ranks.

Trace jobs (app ``rigid``) always go to the trace endpoint on rank 0 (`TRACE`). A simulated
app goes to the candidate rank with the least predicted remaining work, ties to the lower
rank: a job's prediction is ``pes x`` its ideal run time (``total_flop / (pes x speed)``, or
1 s when the app has no ``total_flop``) left after the start; a job leaves its rank's load
when its app completes. With one candidate (the in-process run) every app goes there. Which
rank simulates an app never changes its facts, so results do not depend on the number of
ranks; this only balances wall time. The runner chooses the candidates: ranks 1..K-1, plus
rank 0 with ``rank0_apps``; but with ``rank0_apps``, a technique that is not `fine_grained`
(its loops are a few hundred chunks, e.g. FAC2: the ESP-Mandelbrot main job simulates 79 k
chunks for 230 apps in ≈ 0.2 s) and a run that is not settled (`cosim.runner.settled`: RCA
full, malleable jobs), rank 0 alone: sending such apps away costs more rounds than their
simulation (a 2-rank FAC2 run was 0.80× as fast as one process). A settled run sends an app's
end at once, one round for most apps: spread over 2 ranks, FAC2 / GSS / STATIC / AF ran
1.13 / 1.16 / 1.22 / 1.40× as fast as one process (medians of 7, 5, 5, 5 alternating runs
on ESP-Mandelbrot, 2026-12-02), against 0.99× with rank 0 alone.

With ALS ranks among the candidates, apps are also simulated *before* their start
(`cosim.als.manager`): every app job of fixed size is then given a rank before the run
(`ahead_plan`: in submission order, in turn over the candidates from the first ALS rank, rank
0 last and four turns in five), so that each rank knows which apps it will get; the placement
follows that plan, and `LeastWork` places the others (moldable and malleable jobs, whose
size is decided at their start).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from cosim.platform import Platform
from cosim.protocol.messages import StartApp
from cosim.transport.base import TRACE

if TYPE_CHECKING:  # the application level loads only when a job runs an app
    from cosim.als.techniques import Technique
    from cosim.workload.jobs import Job

__all__ = ["LeastWork", "TRACE", "ahead_plan", "app_ranks"]


def app_ranks(size: int, rank0_apps: bool, technique: Technique,
              settled: bool = False) -> list[int]:
    """The candidate ranks for apps in a world of `size` ranks (module docstring): 1..size-1,
    and rank 0 with `rank0_apps` — alone when the technique is not `fine_grained` and the run
    not `settled` (`cosim.runner.settled`)."""
    if not rank0_apps:
        return list(range(1, size))
    return [0, *range(1, size)] if technique.fine_grained or settled else [0]


def ahead_plan(jobs: Sequence[Job], ranks: Sequence[int], n_hosts: int) -> dict[int, int]:
    """The rank of every app job that can be simulated before its start (module docstring):
    job id -> rank, for the rigid app jobs (a moldable or malleable job's size is decided
    at its start or changes) that fit on `n_hosts`
    hosts, dealt in ``(submit, id)`` order to `ranks` in turn, ALS ranks first and rank 0
    last, rank 0 skipping every fifth turn: it gets four apps for every five of an ALS rank,
    as it also runs the batch level and the rounds. Empty with no ALS rank among `ranks`:
    nothing runs ahead in one process. Every rank computes it alike from the same
    workload."""
    als = sorted(r for r in ranks if r != 0)
    if not als:
        return {}
    # measured on 2 ranks, SS on ESP-Mandelbrot (2026-12-02, medians of 9 alternating runs):
    # 5 apps in 9 to rank 1 1.60-1.68x one process, 4 in 7 1.59-1.65x, 3 in 5 1.58x, 6 in 11
    # 1.56x, 1 in 2 1.53x; 2 in 3 1.48x (medians of 7: rank 1 then falls behind the starts)
    order = (als + [0]) * 4 + als if 0 in ranks else als
    todo = sorted((j for j in jobs if j.app != "rigid" and j.kind == "rigid"
                   and j.hosts <= n_hosts), key=lambda j: (j.submit, j.id))
    return {j.id: order[k % len(order)] for k, j in enumerate(todo)}


class LeastWork:
    """The placement of the module docstring over `ranks` (candidate destinations); a job of
    `plan` (job id -> rank, `ahead_plan`) goes to its planned rank."""

    def __init__(self, ranks: Sequence[int], platform: Platform | None,
                 plan: Mapping[int, int] | None = None) -> None:
        if not ranks:
            raise ValueError("no rank can simulate apps: run with more ranks or rank0_apps")
        self.ranks = list(ranks)
        self.platform = platform
        self.plan = {} if plan is None else dict(plan)
        self._load: dict[int, dict[int, tuple[int, int]]] = {r: {} for r in self.ranks}
        self._rank_of: dict[int, int] = {}

    def choose(self, cmd: StartApp, now: int) -> int:
        if cmd.app == "rigid":
            return TRACE
        if len(self.ranks) == 1:
            return self.ranks[0]
        best = self.plan.get(cmd.job_id)
        if best is None:
            best = min(self.ranks, key=lambda r: (sum(p * max(0, e - now) for e, p in
                                                      self._load[r].values()), r))
        speed = self.platform.hosts[cmd.hosts[0]].speed if self.platform is not None else 1.0
        flop = dict(cmd.params).get("total_flop")
        ideal = float(flop) / (cmd.pes * speed) if flop else 1.0
        self._load[best][cmd.job_id] = (now + round(ideal * 1e9), cmd.pes)
        self._rank_of[cmd.job_id] = best
        return best

    def ended(self, job_id: int) -> None:
        r = self._rank_of.pop(job_id, None)
        if r is not None:
            self._load[r].pop(job_id, None)
