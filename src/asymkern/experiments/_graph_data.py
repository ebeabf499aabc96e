"""The citation-graph problem of Tao et al. (2024) §4.4, shared by the Nyström experiments, and
the reference bandwidth γ₀ that Table 1 (:mod:`.ksvd_graphs`) uses too.

Kept below :mod:`.nystrom_solvers` and :mod:`.nystrom_f1` so that neither imports the other
for it (the experiments' module graph has no cycle).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: The multiple k of γ₀ = √(M var A) used per dataset in Table 4/6.
K_FACTOR = {"cora": 1.0, "citeseer": 1.0, "pubmed": 0.5}


def reference_bandwidth(X) -> float:
    """γ₀ = √(M · var(X)) (Tao et al., 2024, App. C.2: γ = k√(M γ_x), γ_x the data variance).

    The variance of all N·M entries, centred: Σ (x − μ)² / (N·M). For sparse X the sum runs
    over the stored values, and each of the other entries (zeros) adds μ², so X is never
    densified; E[x²] − μ², which cancels when the values lie far from 0 (27 % off for data
    at an offset of 1e8), is not used.
    """
    n, m = X.shape
    if n * m == 0:
        raise ValueError(f"X must have at least one entry to take its variance, got shape "
                         f"{X.shape}")
    if sp.issparse(X):
        A = sp.csr_matrix(X, dtype=np.float64, copy=True)
        A.sum_duplicates()  # each entry stored once: the others are exactly the zeros
        size = n * m
        mean = float(A.data.sum()) / size
        dev = A.data - mean
        # pairwise summation (np.sum): a BLAS dot was 8e-15 off the exact value on PubMed
        var = (float(np.sum(np.square(dev))) + (size - A.nnz) * mean**2) / size
    else:
        var = float(np.var(X))
    return float(np.sqrt(m * var))


def graph_problem(name: str, data_dir=None, n_sub: int | None = None, k: float | None = None,
                  orientation: str = "cites"):
    """(A, X, Z, γ, labels) of Tao et al. (2024) §4.4: A = D⁻¹(A + I), X rows, Z columns,
    γ = k√(M var A) (:func:`reference_bandwidth`); ``orientation`` as in
    :func:`~asymkern.datasets.graphs.load_citation_graph` ('cites': A[i, j] = 1 iff i cites j;
    'cited_by': the transpose)."""
    from ..datasets.graphs import load_citation_graph, row_normalized_adjacency

    g = load_citation_graph(name, data_dir, orientation=orientation)
    adj = g.adjacency
    labels = g.labels
    if n_sub is not None and n_sub < adj.shape[0]:
        adj = adj[:n_sub][:, :n_sub]
        labels = labels[:n_sub]
    A = row_normalized_adjacency(adj)
    gamma = (K_FACTOR[name] if k is None else k) * reference_bandwidth(A)
    return A, A, sp.csr_matrix(A.T), float(gamma), labels
