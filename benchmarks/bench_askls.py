"""Benchmark: AsK-LS solve (He et al., 2023, eq. 6): structured solves against dense LU of the KKT
system.

1. Fit at n (default 4000): Schur complement (one GEMM KᵀK + one n×n LU, plus the rcond
   estimate) vs LU of the (2n + 2) system (LAPACK getrf + gecon, what the authors' MATLAB does
   with ``rcond`` and ``linsolve``). Same solution to 1e-8 is checked.
2. γ grids (default 20 and 50 values, n_grid = 2000): one eigendecomposition of KᵀK reused
   for every γ vs as many independent Schur fits.

Target (DESIGN.md §4 / issue 4): ≥ 3× faster than the dense LU at n = 4000, same solution.
3. ``--nystrom``: accuracy cost of the Nyström option on spambase and a fit at n = 28000
   (appended to the same file).

Run:  python benchmarks/bench_askls.py [--n 4000] [--n-grid 2000] [--repeats 3]
      python benchmarks/bench_askls.py --nystrom
Writes docs/results/askls_bench.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

from asymkern.kernels import KernelMatrix, get_kernel
from asymkern.lssvm import askls_C_path, askls_solve


def _kernel(n, d=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    k = get_kernel("sne", bandwidth=np.sqrt(d))
    return np.asarray(KernelMatrix(k, X, X).to_array(), dtype=np.float64), y


def err_path(a, b):
    return max(max(np.abs(p.coef[0] - q.coef[0]).max(), np.abs(p.coef[1] - q.coef[1]).max(),
                   np.abs(p.bias - q.bias).max()) for p, q in zip(a, b))


def _timing_table(entries) -> list[str]:
    """Markdown rows '| label | median | runs |' for (label, median, runs) entries."""
    out = ["| method | median s | runs (s) |", "|---|---|---|"]
    for label, med, runs in entries:
        out.append(f"| {label} | {med:.2f} | " + ", ".join(f"{t:.2f}" for t in runs) + " |")
    return out


def _time(fn, repeats):
    ts, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), ts, out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--n-grid", type=int, default=2000)
    ap.add_argument("--n-gammas", type=int, nargs="+", default=[20, 50])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "results"
                                         / "askls_bench.md"))
    a = ap.parse_args(argv)
    lines = ["# AsK-LS solver benchmark (eq. 6 of He et al., 2023)", ""]
    lines.append(f"Machine: {platform.machine()}, {os.cpu_count()} logical CPUs, load average "
                 f"{os.getloadavg()[0]:.1f} at the start (both sides of each ratio ran in the "
                 "same process, one after the other).")
    lines.append("")

    # ---- 1. single fit
    K, y = _kernel(a.n)
    gamma = 1.0
    fast = lambda: askls_solve(K, y, gamma, method="schur")  # noqa: E731
    dense = lambda: askls_solve(K, y, gamma, method="dense")  # noqa: E731
    tf, tfs, sf = _time(fast, a.repeats)
    td, tds, sd = _time(dense, a.repeats)
    err = max(np.abs(sf.bias - sd.bias).max(), np.abs(sf.coef[0] - sd.coef[0]).max(),
              np.abs(sf.coef[1] - sd.coef[1]).max())
    print(f"fit n={a.n}: schur {tf:.2f}s  dense LU {td:.2f}s  ratio {td / tf:.2f}x  "
          f"max|diff| {err:.2e}  rcond {sf.rcond:.2e}/{sd.rcond:.2e}")
    lines += [
        f"## 1. One fit at n = {a.n} (SNE kernel, γ = {gamma:g}, one label column)", "",
        *_timing_table([("Schur complement (GEMM + n×n LU + rcond estimate)", tf, tfs),
                        ("dense LU of the (2n+2) KKT system + gecon", td, tds)]),
        "",
        f"**Speed-up {td / tf:.2f}×** (target ≥ 3×). Max |difference| of (b1, b2, α⊙y, β⊙y): "
        f"{err:.1e} (target ≤ 1e-8). rcond: {sf.rcond:.2e} (Hager–Higham estimate through "
        f"the fast solve) vs {sd.rcond:.2e} (LAPACK gecon).",
        "",
    ]

    # ---- 2. gamma grid
    K2, y2 = _kernel(a.n_grid, seed=1)
    for n_g in a.n_gammas:
        gammas = np.logspace(-2, 1, n_g)
        path = lambda gs=gammas: askls_C_path(K2, y2, gs)  # noqa: E731
        path_lu = lambda gs=gammas: askls_C_path(K2, y2, gs, method="schur")  # noqa: E731
        indep = lambda gs=gammas: [askls_solve(K2, y2, g, method="schur") for g in gs]  # noqa: E731
        tp, tps, sp_ = _time(path, max(1, a.repeats - 1))
        tl, tls, sl_ = _time(path_lu, max(1, a.repeats - 1))
        ti, tis, si = _time(indep, max(1, a.repeats - 1))
        err2 = max(err_path(sl_, si), err_path(sp_, si))
        print(f"grid n={a.n_grid}, {len(gammas)} gammas: eig path {tp:.2f}s  shared-KtK path "
              f"{tl:.2f}s  independent {ti:.2f}s  ratios {ti / tp:.2f}x / {ti / tl:.2f}x  "
              f"max|diff| {err2:.2e}")
        lines += [
            f"## 2. γ grid: {len(gammas)} values in [1e-2, 1e1] at n = {a.n_grid}", "",
            *_timing_table([("one eigendecomposition of KᵀK, O(n²) per γ", tp, tps),
                            ("KᵀK once (one GEMM), one n×n LU per γ", tl, tls),
                            (f"{len(gammas)} independent Schur fits", ti, tis)]),
            "",
            f"**Speed-up {ti / tp:.2f}× (eigendecomposition) and {ti / tl:.2f}× (shared KᵀK)**; "
            f"max |difference| from the independent fits over the grid {err2:.1e}.",
            "",
        ]
    lines += [
        "Notes: every path includes the paper's rcond check for every γ (about a dozen O(n²) "
        "solves each). A full SVD of K (DESIGN.md §3 suggests 'one SVD of H') was measured "
        "~10× slower than one n×n LU on this machine, so the grid path uses the symmetric "
        "eigendecomposition of KᵀK instead: M(γ) = γ⁻²I − KᵀK = V(γ⁻² − Λ)Vᵀ. The dense LU "
        "forms the (2n+2)² matrix (4× the memory of K); the Schur path needs K and KᵀK.",
        "",
    ]
    lines.append(f"Load average at the end of sections 1–2: {os.getloadavg()[0]:.1f}.")
    lines.append("")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # keep an earlier ``--nystrom`` section (appended by nystrom_cost) when re-running 1–2
    old = out.read_text() if out.exists() else ""
    keep = old[old.index("## 3. "):] if "## 3. " in old else ""
    out.write_text("\n".join(lines) + ("\n" + keep if keep else ""))
    print("wrote", out)




def nystrom_cost(argv=None):
    """Accuracy cost of the Nyström option (spambase, SNE kernel) and a fit beyond dense size."""
    from sklearn.preprocessing import StandardScaler

    from asymkern.datasets.uci import load_uci
    from asymkern.lssvm import AsKLSClassifier

    ap = argparse.ArgumentParser()
    ap.add_argument("--big-n", type=int, default=22000)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "results"
                                         / "askls_bench.md"))
    a = ap.parse_args(argv)
    lines = ["", "## 3. Nyström option: accuracy cost and scale", ""]
    ds = load_uci("spambase")
    rows = []
    ranks = (None, 25, 50, 100)
    for seed in range(2):
        rng = np.random.default_rng(seed)
        perm = rng.permutation(ds.n_samples)
        k = int(0.6 * ds.n_samples)
        tr, te = perm[:k], perm[k:]
        sc = StandardScaler().fit(ds.X[tr])
        Xtr, Xte = sc.transform(ds.X[tr]), sc.transform(ds.X[te])
        kp = {"bandwidth": np.sqrt(ds.n_features)}
        for r in ranks:
            ny = None if r is None else {"n_components": r, "n_row_landmarks": 4 * r,
                                         "n_col_landmarks": 4 * r}
            t = time.perf_counter()
            m = AsKLSClassifier(kernel="sne", kernel_params=kp, gamma=100.0, nystrom=ny,
                                rcond_tol=1e-12, random_state=seed).fit(Xtr, ds.y[tr])
            fit = time.perf_counter() - t
            rows.append((seed, r, fit, m.score(Xte, ds.y[te])))
            print(seed, r, round(fit, 2), rows[-1][-1], flush=True)
    lines += ["Spambase, SNE kernel (σ = √d, γ = 100, merge = sum, rcond_tol = 1e-12 so that "
              "no ridge fallback interferes), 2 random 60/40 splits; Nyström with "
              "orthogonalize=True, 4r uniformly sampled row and column landmarks.", "",
              "| rank r | fit s (median) | test accuracy (mean ± std) |", "|---|---|---|"]
    for r in ranks:
        sel = [x for x in rows if x[1] == r]
        acc = np.array([x[3] for x in sel])
        lines.append(f"| {'exact' if r is None else r} | {np.median([x[2] for x in sel]):.2f} | "
                     f"{acc.mean():.3f} ± {acc.std():.3f} |")
    rng = np.random.default_rng(0)
    n = a.big_n
    X = rng.standard_normal((n, 10))
    y = (X[:, 0] + X[:, 1] ** 2 - 1 + 0.3 * rng.standard_normal(n) > 0).astype(int)
    t = time.perf_counter()
    m = AsKLSClassifier(kernel="sne", kernel_params={"bandwidth": 3.0}, gamma=100.0,
                        nystrom={"n_components": 100, "n_row_landmarks": 400,
                                 "n_col_landmarks": 400},
                        random_state=0).fit(X[: n - 2000], y[: n - 2000])
    fit = time.perf_counter() - t
    acc = m.score(X[n - 2000:], y[n - 2000:])
    print("big", n, fit, acc)
    lines += ["", f"Scale: n = {n - 2000} training points (a dense K would take "
              f"{(n - 2000) ** 2 * 8 / 2**30:.1f} GiB, the (2n+2) KKT matrix 4× that), "
              f"r = 100 (400 landmarks per side): fit {fit:.1f} s, held-out accuracy "
              f"{acc:.3f} on 2000 points "
              "(synthetic 10-d problem).", ""]
    with open(a.out, "a") as fh:
        fh.write("\n".join(lines))
    print("appended to", a.out)


if __name__ == "__main__":
    import sys

    if "--nystrom" in sys.argv:
        nystrom_cost([x for x in sys.argv[1:] if x != "--nystrom"])
    else:
        main()
