"""AWF-B: adaptive weighted factoring, weights from compute times, chunk base ceil(R_j/(2P)) per
batch of P requests.

The rule is shared with the rest of the family in `awf_family` (dls.md §2, §3).
"""

from __future__ import annotations

from cosim.als.techniques.awf_family import make_awf_variant

__all__ = ["TECHNIQUE"]

TECHNIQUE = make_awf_variant("AWF-B", batched=True, elapsed=False)

