"""Foundation benchmarks (DESIGN.md §4), our code and the peer side by side in one run.

1. RBF kernel matrix, n = m = 20 000, d = 100 (float64) vs the bare X Zᵀ GEMM
   (target ≤ 1.7× its time; peak traced memory ≤ output + 10 %).
2. KernelSVD(solver='arpack') on a precomputed matrix vs scipy.sparse.linalg.svds (target ≤ 1.0×).
3. KernelSVD(solver='randomized') vs sklearn randomized_svd at equal settings, with the accuracy
   η of both reported (target ≤ 1.0× at equal η).

Usage: python benchmarks/bench_kernels.py [--quick] [--out docs/results/kernels_bench.md]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy.sparse.linalg import svds
from sklearn.utils.extmath import randomized_svd as sk_randomized_svd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import peak_traced  # noqa: E402

from asymkern import KernelSVD, get_kernel
from asymkern.kernels import KernelMatrix


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        del out
        out = None
    t0 = time.perf_counter()
    out = fn()
    times.append(time.perf_counter() - t0)
    return float(np.median(times)), out




def subspace_error(U_ref, U):
    """1 − mean |cos| between matching singular vectors (the paper's strict η on one side)."""
    return float(np.mean(1 - np.abs(np.sum(U_ref * U, axis=0))))


def bench_kernel_block(n: int, d: int, repeats: int) -> dict:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    Z = rng.standard_normal((n, d))
    k = get_kernel("rbf", gamma=1.0 / d)
    t_gemm, _ = median_time(lambda: X @ Z.T, repeats)
    t_rbf, K = median_time(lambda: KernelMatrix(k, X, Z).to_array(), repeats)
    # correctness spot check against the direct formula on a few rows
    rows = rng.choice(n, 5, replace=False)
    ref = np.exp(-(((X[rows, None, :] - Z[None, :200, :]) ** 2).sum(-1)) / d)
    err = float(np.abs(K[rows, :200] - ref).max())
    del K
    out_bytes = n * n * 8
    peak = peak_traced(lambda: KernelMatrix(k, X, Z).to_array())
    return {
        "case": f"RBF kernel, n=m={n}, d={d}, float64",
        "ours s": t_rbf,
        "peer": "X @ Z.T (GEMM)",
        "peer s": t_gemm,
        "ratio": t_rbf / t_gemm,
        "target": "≤ 1.7",
        "note": f"peak traced {peak / out_bytes:.3f}× output (target ≤ 1.10); max err {err:.1e}",
    }


def bench_arpack(n: int, m: int, r: int, repeats: int) -> dict:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((n, 10))
    Z = rng.standard_normal((m, 10)) + 0.3
    G = get_kernel("sne", bandwidth=3.0)(X, Z)
    v0 = np.random.default_rng(0).uniform(-1, 1, min(n, m))
    t_peer, (U1, s1, _) = median_time(lambda: svds(G, k=r, v0=v0, solver="arpack"), repeats)
    model = KernelSVD(r, kernel="precomputed", solver="arpack", random_state=0)
    t_ours, _ = median_time(lambda: model.fit(G), repeats)
    diff = float(np.abs(np.sort(s1)[::-1] - model.singular_values_).max())
    return {
        "case": f"top-{r} SVD of a precomputed {n}x{m} SNE matrix",
        "ours s": t_ours,
        "peer": "scipy svds (arpack)",
        "peer s": t_peer,
        "ratio": t_ours / t_peer,
        "target": "≤ 1.0",
        "note": f"max |Δσ| = {diff:.1e}",
    }


def bench_randomized(n: int, m: int, r: int, repeats: int) -> dict:
    rng = np.random.default_rng(2)
    X = rng.standard_normal((n, 10))
    Z = rng.standard_normal((m, 10)) + 0.3
    G = get_kernel("sne", bandwidth=3.0)(X, Z)
    U_ref, _, Vt_ref = np.linalg.svd(G, full_matrices=False)
    U_ref, V_ref = U_ref[:, :r], Vt_ref[:r].T
    t_peer, (U1, s1, Vt1) = median_time(
        lambda: sk_randomized_svd(G, r, n_oversamples=10, n_iter=4, random_state=0), repeats
    )
    model = KernelSVD(r, kernel="precomputed", solver="randomized", n_oversamples=10, n_iter=4,
                      random_state=0)
    t_ours, _ = median_time(lambda: model.fit(G), repeats)
    eta_peer = subspace_error(U_ref, U1) + subspace_error(V_ref, Vt1.T)
    eta_ours = subspace_error(U_ref, model.left_singular_vectors_) + subspace_error(
        V_ref, model.right_singular_vectors_
    )
    return {
        "case": f"randomized top-{r}, {n}x{m} SNE, p=10, q=4",
        "ours s": t_ours,
        "peer": "sklearn randomized_svd",
        "peer s": t_peer,
        "ratio": t_ours / t_peer,
        "target": "≤ 1.0 at equal η",
        "note": f"strict η ours {eta_ours:.1e}, peer {eta_peer:.1e}",
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default="docs/results/kernels_bench.md")
    a = p.parse_args(argv)
    if a.quick:
        rows = [bench_kernel_block(3000, 100, a.repeats), bench_arpack(1500, 1000, 10, a.repeats),
                bench_randomized(1500, 1000, 10, a.repeats)]
    else:
        rows = [bench_kernel_block(20000, 100, a.repeats), bench_arpack(6000, 4000, 20, a.repeats),
                bench_randomized(6000, 4000, 20, a.repeats)]
    from asymkern.experiments.report import markdown_table

    text = (
        "# Foundation benchmarks\n\n"
        f"Machine: {platform.processor() or platform.machine()}, numpy {np.__version__}; "
        f"medians of {a.repeats + 1} runs, same script, same inputs. Ratio = ours / peer.\n\n"
        + markdown_table(rows)
    )
    print(text)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
