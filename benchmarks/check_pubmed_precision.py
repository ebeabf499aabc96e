"""Issue 18: float32 against float64 for the Pubmed Table-1 KSVD path (r = 1000, c = 2).

``KernelSVD(1000, kernel='sne', center=True, solver='block_krylov')`` on Pubmed's Â in float32
(the path of ``asymkern reproduce ksvd-graphs -p datasets=pubmed -p r=1000 -p solver=block_krylov``)
and in float64: singular values, principal angles between the left singular subspaces (top 10 /
100 / 1000) and the Micro/Macro-F1 of Table 1's node classification. No exact reference exists at
n = 19717. Needs the Pubmed graph (ASYMKERN_DATA or ../shared/data); about 5 minutes on 2 cores.

Usage: python benchmarks/check_pubmed_precision.py [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp

from asymkern.datasets.graphs import load_citation_graph, row_normalized_adjacency
from asymkern.decomposition import KernelSVD
from asymkern.experiments.ksvd_graphs import normalize_embedding, reference_bandwidth
from asymkern.graphs import node_classification


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=None)
    a = ap.parse_args(argv)
    g = load_citation_graph("pubmed", a.data_dir)
    An, y = row_normalized_adjacency(g.adjacency), g.labels
    bw = 2.0 * reference_bandwidth(An)
    fits = {}
    for dt in (np.float32, np.float64):
        X = sp.csr_matrix(An, dtype=dt)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the float32 noise-level bound (see ksvd.md)
            k = KernelSVD(1000, kernel="sne", kernel_params={"bandwidth": bw}, center=True,
                          solver="block_krylov", random_state=0).fit(X)
        t = time.perf_counter() - t0
        E = normalize_embedding(np.hstack(k.embeddings()).astype(np.float64))
        f = node_classification(E, y, n_trials=10, random_state=0)
        fits[dt] = k
        print(f"{np.dtype(dt).name}: {t:.0f} s, sigma_1 = {k.singular_values_[0]:.4g}, "
              f"sigma_100 = {k.singular_values_[99]:.4g}, sigma_1000 = "
              f"{k.singular_values_[-1]:.4g}, Micro-F1 {f['micro_f1']:.5f}, "
              f"Macro-F1 {f['macro_f1']:.5f}", flush=True)
    k32, k64 = fits[np.float32], fits[np.float64]
    s32, s64 = k32.singular_values_.astype(np.float64), k64.singular_values_
    print(f"max |ds| / s1 = {np.abs(s32 - s64).max() / s64[0]:.2g}")
    U32 = np.linalg.qr(k32.left_singular_vectors_.astype(np.float64))[0]
    U64 = k64.left_singular_vectors_
    for m in (10, 100, 1000):
        Q = U32[:, :m] - U64[:, :m] @ (U64[:, :m].T @ U32[:, :m])
        print(f"largest principal angle, top {m}: "
              f"{np.degrees(np.arcsin(min(1.0, np.linalg.norm(Q, 2)))):.2g} deg")


if __name__ == "__main__":
    main()
