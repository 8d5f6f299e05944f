"""The shared rule of AWF-B, AWF-C, AWF-D and AWF-E (Cariño & Banicescu 2008).

PE i's performance is pi_i = sum_c c t_c / sum_c c k_c over its completed chunks, c = 1, 2, …
its local chunk index, t_c the chunk's compute time (B, C) or elapsed time from request to end,
overhead and messages included (D, E), k_c its size. At every request the weights are
recomputed over the PEs that have reported: w_i = n_rep (1/pi_i) / sum_j (1/pi_j); a PE without
data has w = 1 (LB4OMP). B and D size batches of P requests from ceil(R_j / (2P)); C and E
use ceil(R / (2P)) at every request. K = ceil(w_i * base) (dls.md §3, a documented synthesis,
D11). A PE whose measured times are all zero counts as having no data.
"""

from __future__ import annotations

import math

from cosim.als.techniques.base import CommonParams, Context, Planner, Technique

__all__ = ["make_awf_variant"]


class _AWFVariant(Planner):
    __slots__ = ("k", "p", "batched", "elapsed", "base", "count", "sum_ct", "sum_ck", "inv",
                 "inv_total")
    adaptive = True

    def __init__(self, ctx: Context, *, batched: bool, elapsed: bool) -> None:
        self.k = 0
        self.p = ctx.p
        self.batched = batched
        self.elapsed = elapsed
        self.base = 0
        self.count = dict.fromkeys(ctx.ranks, 0)
        self.sum_ct = dict.fromkeys(ctx.ranks, 0.0)
        self.sum_ck = dict.fromkeys(ctx.ranks, 0.0)
        self.inv: dict[int, float] = {}  # 1/pi of the ranks with data, kept in rank order
        self.inv_total = 0.0

    def next(self, rank: int, remaining: int) -> int:
        k = self.k
        self.k = k + 1
        if not self.batched or k % self.p == 0:
            self.base = -(-remaining // (2 * self.p))
        inv = self.inv.get(rank)
        if inv is None:
            return self.base
        w = len(self.inv) * inv / self.inv_total
        x = w * self.base
        k_int = int(x)
        return k_int + 1 if x > k_int else k_int

    def end_step(self) -> None:
        self.k = 0  # batches restart with the loop; the measurements are kept

    def record(self, rank: int, size: int, compute_s: float, elapsed_s: float,
               sq_s2: float) -> None:
        c = self.count[rank] + 1
        self.count[rank] = c
        self.sum_ct[rank] += c * (elapsed_s if self.elapsed else compute_s)
        self.sum_ck[rank] += c * size
        if self.sum_ct[rank] > 0:
            self.inv[rank] = self.sum_ck[rank] / self.sum_ct[rank]
            # fsum is exactly rounded: no drift, and the report order does not matter
            self.inv_total = math.fsum(self.inv.values())


def make_awf_variant(name: str, *, batched: bool, elapsed: bool) -> Technique:
    """The Technique record of one member of the family."""
    what = "elapsed" if elapsed else "compute"
    when = "per batch" if batched else "per request"
    return Technique(
        name=name,
        summary=f"adaptive weights from {what} times, {when}",
        params=CommonParams,
        make=lambda params, ctx: _AWFVariant(ctx, batched=batched, elapsed=elapsed),
        adaptive=True,
        pe_dependent=True,
    )
