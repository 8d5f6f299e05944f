"""AWF-E: adaptive weighted factoring, weights from elapsed (overhead included) times, chunk base
ceil(R/(2P)) at every request.

The rule is shared with the rest of the family in `awf_family` (dls.md §2, §3).
"""

from __future__ import annotations

from cosim.als.techniques.awf_family import make_awf_variant

__all__ = ["TECHNIQUE"]

TECHNIQUE = make_awf_variant("AWF-E", batched=False, elapsed=True)

