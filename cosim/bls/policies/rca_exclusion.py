"""RCA exclusion requests (``--rca full``): ask running apps for the hosts the queue head lacks.

A dynamic policy that runs after the backfill pass. If the head of the queue is short of
``k`` hosts — its hosts minus the free ones minus those already asked or accepted for it and
not yet yielded (`DynamicView.expected`) — with ``1 <= k <= max(1, floor(max_short x its
hosts))``, it asks running app-driven jobs whose `Job.exclusion_ok` hint is set, that started
before now and were not asked for this job yet (`DynamicView.asked`), largest number of
working hosts first (then job id), each for at most its working hosts minus one, until ``k``
hosts are asked for. The app answers `HostsExcluded` at the same tick (its hosts, or none
when it refuses); excluded hosts come back as ordinary yields when their chunks end, are lent
like any yielded host, and the head job starts when enough are free. Each app is asked at
most once per queued job, so a refusal is final for that job. The scheduler keeps the
bookkeeping of requests (asked, expected) and shows it to the policy; the policy decides.
"""

from __future__ import annotations

from dataclasses import dataclass

from cosim.bls.policies.base import DynamicPolicy, DynamicView, Exclude, Plan

__all__ = ["POLICY", "Params", "decide"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """max_short: ask only when the head job lacks at most this fraction of its hosts."""

    max_short: float = 0.25

    def __post_init__(self) -> None:
        if not 0 < self.max_short <= 1:
            raise ValueError("exclusion_max_short must be in (0, 1]")


def decide(view: DynamicView, params: Params) -> Plan:
    """The exclusion requests of one pass (see the module docstring)."""
    if not view.queue:
        return Plan()
    cluster = view.cluster
    head = view.queue[0]
    short = head.hosts - cluster.free_hosts - view.expected.get(head.id, 0)
    if short <= 0 or short > max(1, int(params.max_short * head.hosts)):
        return Plan()
    asked = view.asked.get(head.id, frozenset())
    now = view.now
    cands = []
    for jid, alloc in cluster.running.items():
        job = alloc.job
        if jid in asked or not job.exclusion_ok or job.app == "rigid" or alloc.start >= now:
            continue
        n = cluster.working_hosts(jid)
        if n > 1:
            cands.append((-n, jid))
    out = []
    for neg, jid in sorted(cands):
        k = min(short, -neg - 1)
        out.append(Exclude(job_id=jid, count=k, for_job=head.id))
        short -= k
        if short == 0:
            break
    return Plan(excludes=tuple(out))


POLICY = DynamicPolicy(name="exclusion", summary="RCA full: ask apps for the hosts the head lacks",
                       family="rca", replaces_backfill=False, params=Params, decide=decide)
