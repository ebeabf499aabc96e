"""``LSSVMRegressor(kernel='precomputed').fit`` against ``KernelRidge(kernel='precomputed').fit``.

Matched problems: the same precomputed float64 RBF Gram matrix K (n×n) and targets, and
KernelRidge's ``alpha = 1/C``, so both factor the same K + I/C by Cholesky. The LS-SVM also
checks that the user's matrix is symmetric (``_nearly_symmetric``: it decides between
Cholesky and LU), solves for the bias b and estimates rcond.

Three callables run interleaved (ours, ours with the previous symmetry check, the peer, …),
``--repeats`` times, BLAS pinned to one thread with threadpoolctl on both sides (a noisy
shared machine); the medians are compared as ratios to KernelRidge. The symmetry check is
also timed alone (previous and current) and as a share of our fit.

Usage: python benchmarks/bench_lssvm_precomputed.py [--sizes 1000 3000] [--repeats 7]
       [--out docs/results/lssvm_precomputed.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

import numpy as np
from sklearn.kernel_ridge import KernelRidge
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved  # noqa: E402

from asymkern.kernels import RBFKernel  # noqa: E402
from asymkern.lssvm import LSSVMRegressor, _solvers  # noqa: E402


def previous_nearly_symmetric(K: np.ndarray, rtol: float = 16.0, block: int = 512) -> bool:
    """The symmetry check before issue 31: row blocks against strided column panels."""
    n = K.shape[0]
    if n == 0:
        return True
    eps = float(np.finfo(np.float64).eps)
    dmax = kmax = 0.0
    for i in range(0, n, block):
        rows = K[i:i + block]
        d = np.abs(rows - K[:, i:i + block].T).max()
        m = np.abs(rows).max()
        if not (np.isfinite(d) and np.isfinite(m)):
            return False
        dmax, kmax = max(dmax, float(d)), max(kmax, float(m))
    return dmax <= rtol * eps * kmax


def bench(n: int, repeats: int, d: int = 10, g: float = 0.1, C: float = 10.0) -> dict:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)
    K = RBFKernel(gamma=g)(X)
    ours = LSSVMRegressor(kernel="precomputed", C=C)
    peer = KernelRidge(alpha=1.0 / C, kernel="precomputed")
    current = _solvers._nearly_symmetric

    def ours_previous():
        _solvers._nearly_symmetric = previous_nearly_symmetric
        try:
            ours.fit(K, y)
        finally:
            _solvers._nearly_symmetric = current

    assert ours.fit(K, y).factorization_ == "cholesky"
    assert current(K) and previous_nearly_symmetric(K)
    t = interleaved({
        "ours": lambda: ours.fit(K, y),
        "ours_previous": ours_previous,
        "peer": lambda: peer.fit(K, y),
        "check": lambda: current(K),
        "check_previous": lambda: previous_nearly_symmetric(K),
    }, repeats)
    # sanity: the two models agree up to the effect of the LS-SVM's bias term
    diff = float(np.abs(ours.predict(K[:200]) - peer.predict(K[:200])).max())
    return {"n": n, "pred_diff": diff, **t}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = []
    with threadpool_limits(limits=1):
        for n in args.sizes:
            r = bench(n, args.repeats)
            rows.append(r)
            share, share_prev = r["check"] / r["ours"], r["check_previous"] / r["ours_previous"]
            print(f"n={n}: ours/peer {r['ours'] / r['peer']:.2f}, previous/peer "
                  f"{r['ours_previous'] / r['peer']:.2f}, check previous/current "
                  f"{r['check_previous'] / r['check']:.1f}, check share of our fit "
                  f"{share:.1%} (previous {share_prev:.1%})", flush=True)
    lines = [
        "# LSSVMRegressor(kernel='precomputed') vs KernelRidge(kernel='precomputed')",
        "",
        "`benchmarks/bench_lssvm_precomputed.py`: the same float64 RBF Gram matrix, "
        "KernelRidge's alpha = 1/C (both factor K + I/C by Cholesky); the LS-SVM also checks "
        "the symmetry of the user's matrix, solves for the bias and estimates rcond. "
        f"Interleaved runs, medians of {args.repeats} repeats, BLAS pinned to 1 thread "
        "(threadpoolctl) on both sides. *Previous* is our fit with the symmetry check before "
        "the CPU-kernel work (row blocks against strided column panels), patched in for the "
        "interleaved comparison.",
        "",
        "| n | ours / KernelRidge | previous / KernelRidge | symmetry check: previous / "
        "current | check's share of our fit (previous) | max pred. diff |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['ours'] / r['peer']:.2f} | {r['ours_previous'] / r['peer']:.2f} "
            f"| {r['check_previous'] / r['check']:.1f} | {r['check'] / r['ours']:.1%} "
            f"({r['check_previous'] / r['ours_previous']:.1%}) | {r['pred_diff']:.1e} |")
    lines += [
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} logical CPUs (shared; only the "
        "ratios are meaningful), numpy " + np.__version__ + ".",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
