"""Issue 18: accuracy and time of the SVD paths for Table 1 at r = 1000 (Cora, 'cites').

KSVD (SNE kernel, both feature maps centred) and KPCA (centred RBF) of the row-normalised
adjacency Â of Cora at the Table-1 bandwidth c = 4 (× γ0), r = 1000 components, by
``KernelSVD(1000, kernel=…, center=True, solver=…)``. Reference: the kernel in float64, dense
LAPACK. Paths: float32 with ``solver='dense'``, ``'randomized'`` (power method, n_iter auto = 4
at this r) and ``'block_krylov'`` with the largest q whose k(q + 1) basis columns fit in n (q = 1
at r = 1000 on Cora's 2708 nodes; ``n_iter='auto'`` would fall back to the power method),
run interleaved; for each: wall time (median of
``--repeats``), max |Δσ| / σ₁ against the reference, the largest principal angle between the
top 10 / 100 / 1000 left singular subspaces, and Micro/Macro-F1 of Table 1's node
classification (10 trials) on the embedding. Only ratios of times mean anything on a shared
machine.

Usage: python benchmarks/bench_ksvd_paths.py [--quick] [--repeats 1] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from asymkern.datasets import data_available
from asymkern.datasets.graphs import load_citation_graph, row_normalized_adjacency
from asymkern.decomposition import KernelSVD
from asymkern.experiments.ksvd_graphs import normalize_embedding, reference_bandwidth
from asymkern.graphs import node_classification

PATHS = (("float32", "dense"), ("float32", "randomized"), ("float32", "block_krylov"))


def fit(kernel: str, An, r: int, bw: float, dtype, solver: str):
    X = sp.csr_matrix(An, dtype=dtype)
    kw = dict(kernel=kernel, kernel_params={"bandwidth": bw}, center=True, solver=solver,
              random_state=0)
    if solver == "block_krylov":  # the largest q whose basis fits ('auto' would run 'power')
        kw["n_iter"] = max(1, min(X.shape) // (r + 10) - 1)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the noise-level warning of float32 fits
        est = KernelSVD(r, **kw).fit(X) if kernel == "sne" else KernelSVD(r, **kw).fit(X, Z=X)
    return est, time.perf_counter() - t0


def embedding(kernel: str, est) -> np.ndarray:
    if kernel == "sne":
        return np.hstack(est.embeddings())
    return est.left_singular_vectors_ * np.sqrt(np.maximum(est.singular_values_, 0.0))


def angle_deg(U, V) -> float:
    """Largest principal angle between range(U) and range(V) (orthonormal columns)."""
    Q = V - U @ (U.T @ V)  # sine from the residual (accurate for small angles)
    return float(np.degrees(np.arcsin(min(1.0, np.linalg.norm(Q, 2)))))


def run(n_nodes: int | None, r: int, repeats: int, data_dir=None) -> list:
    g = load_citation_graph("cora", data_dir, orientation="cites")
    A, y = g.adjacency, g.labels
    if n_nodes:
        A, y = A[:n_nodes][:, :n_nodes], y[:n_nodes]
    An = row_normalized_adjacency(A)
    bw = 4.0 * reference_bandwidth(An)
    rows = []
    for kernel, name in (("sne", "KSVD (SNE)"), ("rbf", "KPCA (RBF)")):
        ref, t_ref = fit(kernel, An, r, bw, np.float64, "dense")
        times = {p: [] for p in PATHS}
        ests = {}
        for i in range(repeats):
            order = PATHS[i % len(PATHS):] + PATHS[:i % len(PATHS)]
            for dtype, solver in order:
                ests[dtype, solver], t = fit(kernel, An, r, bw, np.dtype(dtype), solver)
                times[dtype, solver].append(t)
        U0, s0 = ref.left_singular_vectors_, ref.singular_values_
        for path, est, t in ([(("float64", "dense"), ref, [t_ref])]
                             + [(p, ests[p], times[p]) for p in PATHS]):
            U = est.left_singular_vectors_.astype(np.float64)
            U = sla.qr(U, mode="economic")[0]  # float32 factors: re-orthonormalise first
            ang = [angle_deg(U0[:, :k], U[:, :k]) for k in (10, 100, r)]
            f = node_classification(normalize_embedding(embedding(kernel, est)), y,
                                    n_trials=10, random_state=0)
            rows.append({"kernel": name, "path": f"{path[0]} {path[1]}",
                         "wall": float(np.median(t)),
                         "dsigma": float(np.abs(est.singular_values_ - s0).max() / s0[0]),
                         "angles": ang, "micro": f["micro_f1"], "macro": f["macro_f1"]})
    return rows


def table(rows: list, r: int, repeats: int) -> str:
    lines = [
        "# SVD paths for Table 1 at r = 1000\n",
        f"Machine: {platform.machine()}, {os.cpu_count()} logical CPUs, shared with other work "
        f"(load average {os.getloadavg()[0]:.1f} at the end). Cora ('cites'), Â = D⁻¹(A + I), "
        f"bandwidth 4 γ0, r = {r}; float32 paths interleaved, {repeats} repeat(s), medians; "
        "the float64 reference ran once per kernel. Command: "
        "`python benchmarks/bench_ksvd_paths.py`.\n",
        "| kernel | path | wall (s) | ratio to float32 dense | max ǀΔσǀ/σ₁ | largest principal "
        "angle, top 10 / 100 / r (deg) | Micro-F1 | Macro-F1 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        base = next(x["wall"] for x in rows
                    if x["kernel"] == row["kernel"] and x["path"] == "float32 dense")
        a = " / ".join(f"{v:.2g}" for v in row["angles"])
        lines.append(f"| {row['kernel']} | {row['path']} | {row['wall']:.1f} | "
                     f"{row['wall'] / base:.2f} | {row['dsigma']:.1e} | {a} | "
                     f"{row['micro']:.4f} | {row['macro']:.4f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="300 nodes, r = 40, nothing written")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs/results"))
    a = ap.parse_args(argv)
    if not data_available("cora/cora.npz", a.data_dir):
        raise SystemExit("the Cora graph is not available (set ASYMKERN_DATA or --data-dir)")
    r = 40 if a.quick else 1000
    rows = run(300 if a.quick else None, r, a.repeats, a.data_dir)
    text = table(rows, r, a.repeats)
    print(text)
    if not a.quick:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "ksvd_paths_bench.md").write_text(text)
    return rows


if __name__ == "__main__":
    main()
