"""The generalisation lattice of SPEC §14.1: every vector of levels, one level per key.

A node is a vector ``(h_1, ..., h_m)`` with ``0 <= h_j <= H_j`` (``H_j`` the height of key j's
hierarchy); generalising one key by one level is an edge, so node ``a`` is a specialisation of node
``b`` (``a <= b``) when ``a_j <= b_j`` for every key. Nodes are numbered in mixed radix with the
first key most significant, so the numbering is the lexicographic order of the level vectors (the
order the search breaks ties in).

Predictive tagging (Kohlmayer et al. 2012, ARX's Flash) works on the two cones of a node: its
generalisations (:meth:`Lattice.generalisations`, every ``b >= a``) and its specialisations
(:meth:`Lattice.specialisations`, every ``b <= a``).

References
----------
Kohlmayer, F., Prasser, F., Eckert, C., Kemper, A. & Kuhn, K. A. (2012), "Flash: efficient, stable
and optimal k-anonymity", *PASSAT/SocialCom 2012*, IEEE, 708-717. El Emam, K. et al. (2009),
"A globally optimal k-anonymity method for the de-identification of health data", *JAMIA* 16(5),
670-682 (the lattice of generalisation levels, monotonicity of k-anonymity with suppression).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class Lattice:
    """Every level vector of keys with the given ``heights`` (the highest level of each key).

    ``levels`` is the (N, m) array of the nodes' level vectors, row i node i, rows in lexicographic
    order; ``size`` is N = Π (H_j + 1)."""

    def __init__(self, heights: Sequence[int]):
        self.heights = np.asarray(heights, dtype=np.int64)
        radices = self.heights + 1
        self.size = int(np.prod(radices)) if len(radices) else 1
        # stride of key j: the product of the radices of the keys after it (first key most significant)
        self.strides = np.concatenate([np.cumprod(radices[::-1])[::-1][1:], [1]]).astype(np.int64)
        index = np.arange(self.size, dtype=np.int64)
        self.levels = ((index[:, None] // self.strides) % radices).astype(np.int16)

    def successors(self, node: int) -> list[int]:
        """The nodes one generalisation step above ``node`` (one key one level higher), in key order."""
        below = self.levels[node] < self.heights
        return [node + int(s) for s in self.strides[below]]

    def generalisations(self, node: int) -> np.ndarray:
        """The numbers of the nodes ``b >= node`` (``node`` included; all numbered from ``node`` on)."""
        return node + np.flatnonzero(np.all(self.levels[node:] >= self.levels[node], axis=1))

    def specialisations(self, node: int) -> np.ndarray:
        """The numbers of the nodes ``b <= node`` (``node`` included; all numbered up to ``node``)."""
        return np.flatnonzero(np.all(self.levels[: node + 1] <= self.levels[node], axis=1))
