"""The citation-graph problem of Tao et al. (2024) §4.4, shared by the Nyström experiments.

Kept below :mod:`.nystrom_solvers` and :mod:`.nystrom_f1` so that neither imports the other
for it (the experiments' module graph has no cycle).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: The multiple k of γ₀ = √(M var A) used per dataset in Table 4/6.
K_FACTOR = {"cora": 1.0, "citeseer": 1.0, "pubmed": 0.5}


def graph_problem(name: str, data_dir=None, n_sub: int | None = None, k: float | None = None,
                  orientation: str = "cites"):
    """(A, X, Z, γ, labels) of Tao et al. (2024) §4.4: A = D⁻¹(A + I), X rows, Z columns,
    γ = k√(M var A); ``orientation`` as in :func:`~asymkern.datasets.graphs.load_citation_graph`
    ('cites': A[i, j] = 1 iff i cites j; 'cited_by': the transpose)."""
    from ..datasets.graphs import load_citation_graph, row_normalized_adjacency

    g = load_citation_graph(name, data_dir, orientation=orientation)
    adj = g.adjacency
    labels = g.labels
    if n_sub is not None and n_sub < adj.shape[0]:
        adj = adj[:n_sub][:, :n_sub]
        labels = labels[:n_sub]
    A = row_normalized_adjacency(adj)
    N, M = A.shape
    mean = A.sum() / (N * M)
    var = A.multiply(A).sum() / (N * M) - mean**2
    kf = K_FACTOR[name] if k is None else k
    gamma = kf * np.sqrt(M * var)
    return A, A, sp.csr_matrix(A.T), float(gamma), labels
