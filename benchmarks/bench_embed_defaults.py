"""Bandwidth rules for ``asymkern embed`` (docs/results/embed_defaults.md).

For each graph: Â = D⁻¹(A + I) (float64, as the CLI builds it), SNE-kernel KSVD with r = 16
components (the CLI default), embedding [UΣ, VΣ] rescaled to unit mean squared row norm, then the
node-classification protocol of ``experiments/ksvd_graphs.py`` (linear LS-SVM, 50 % stratified
training split, ``n_trials`` random splits, Micro-F1 mean ± std). CV: the bandwidth multiple of
the median distance picked by 5-fold CV Micro-F1 (``asymkern.graphs.select_by_cv``).

Run: ``PYTHONPATH=src python benchmarks/bench_embed_defaults.py cora citeseer photo``
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy.sparse.linalg import ArpackNoConvergence

from asymkern.datasets.graphs import (
    load_amazon_graph,
    load_citation_graph,
    row_normalized_adjacency,
)
from asymkern.decomposition import KernelSVD
from asymkern.decomposition.ksvd import AUTO_BANDWIDTH_FACTOR, median_bandwidth
from asymkern.experiments.ksvd_graphs import normalize_embedding
from asymkern.graphs import node_classification, select_by_cv

R = 16
GRID = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)


def fit(An, params, center):
    t0 = time.perf_counter()
    m = KernelSVD(R, kernel="sne", kernel_params=params, center=center, random_state=0)
    try:
        m.fit(An)
    except ArpackNoConvergence:  # a flat spectrum (too small a bandwidth): ARPACK gives up
        m.set_params(solver="randomized", n_iter=10).fit(An)
    s = m.singular_values_
    E = normalize_embedding(np.hstack(m.embeddings()))
    return E, s, time.perf_counter() - t0


def row(name, rule, E, s, y, secs, n_trials):
    nc = node_classification(E, y, n_trials=n_trials, random_state=0)
    return (f"| {name} | {rule} | {s[1] / s[0]:.3g} | {s[-1] / s[0]:.3g} | "
            f"{nc['micro_f1']:.3f} ± {nc['micro_f1_std']:.3f} | {secs:.0f} |")


def main(names, n_trials=5):
    print("| graph | bandwidth rule | σ2/σ1 | σ16/σ1 | Micro-F1 | fit s |")
    print("|---|---|---|---|---|---|")
    for name in names:
        g = load_amazon_graph(name) if name in ("photo", "computers") else \
            load_citation_graph(name)
        An = row_normalized_adjacency(g.adjacency)
        y = g.labels
        med = median_bandwidth(An, An.T.tocsr())
        cases = [
            ("old CLI default: gamma = 1/N, uncentred", None, False),
            ("gamma = 1/N, centred", None, True),
            (f"median = {med:.3g}, centred", {"bandwidth": med}, True),
            (f"auto = {AUTO_BANDWIDTH_FACTOR:g}·median, centred (new default)",
             {"bandwidth": "auto"}, True),
        ]
        cands, spectra = {}, {}
        for rule, params, center in cases:
            with np.errstate(all="ignore"):
                E, s, secs = fit(An, params, center)
            print(row(name, rule, E, s, y, secs, n_trials), flush=True)
            if params is not None and center:  # reuse as CV candidates
                c = 1.0 if params["bandwidth"] == med else AUTO_BANDWIDTH_FACTOR
                cands[c], spectra[c] = E, s
        for c in GRID:
            if c not in cands:
                E, s, _ = fit(An, {"bandwidth": c * med}, True)
                cands[c], spectra[c] = E, s
        cands = dict(sorted(cands.items()))
        best, scores = select_by_cv(cands, y, n_folds=5, random_state=0)
        print(row(name, f"CV over c·median, c ∈ {GRID}: c = {best:g}, centred", cands[best],
                  spectra[best], y, float("nan"), n_trials), flush=True)
        print(f"<!-- {name} CV scores: "
              + ", ".join(f"{k:g}: {v:.3f}" for k, v in scores.items()) + " -->", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["cora", "citeseer", "photo"])
