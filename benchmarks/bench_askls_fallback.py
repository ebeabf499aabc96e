"""Issue 16 gap 6: AsK-LS fits that the paper's rcond rule sends to the ridge fallback.

A directed graph kernel (in-degree-normalised adjacency K = A D_in⁻¹ of a random directed graph,
about 5 out-edges per node) at γ = 10: the paper's rcond(A) < 1e-8 rule sends the fit to the
ridge-regularised normal equations (AᵀA + I)⁻¹Aᵀb. One script, interleaved (rotating order),
medians of repeats; the ratios are the result:

* ``dense LU``: LU of the whole (2n + 2) matrix of eq. (6) + gecon + solve (the cost of the
  dense path on a well-conditioned system; its own fallback would cost far more);
* ``before``: :func:`asymkern.lssvm.askls_solve` with the former fallback (complex LU of
  z²I − KᵀK, z = 1/γ − iμ), forced by disabling the new path;
* ``after``: the default (COCG on P + iτI, P = (μ² − γ⁻²)I + KᵀK, τ = 2μ/γ, with the KᵀK
  already formed: O(n²) per step). A kernel stored dense with at most 1 % nonzeros (the graph
  kernel here: 0.17 %) is also held as CSR, so KᵀK costs O(nnz·n) and each COCG step O(nnz).

Two kernels: the graph kernel itself, and the same plus 1e-4 × uniform noise in every entry (a
fully dense kernel, also sent to the fallback by the rcond rule), for which only the COCG
fallback applies.

Accuracy: max relative difference of (b1, b2, ã, b̃) from the dense reference solve of the same
regularised system (``method='dense'``; quick mode and the test suite check it).

Usage: python benchmarks/bench_askls_fallback.py [--quick] [--n 3000] [--repeats 3] [--out DIR]
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

from asymkern.lssvm._solvers import _AsymSchur, askls_kkt_matrix, askls_solve


def graph_kernel(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = (rng.random((n, n)) < 5.0 / n).astype(float)
    np.fill_diagonal(A, 0.0)
    indeg = A.sum(axis=0)
    indeg[indeg == 0] = 1.0
    return A / indeg[None, :]


def dense_lu(K, y, C, rcond_tol=1e-8):
    A = askls_kkt_matrix(K, y, C)
    lu = sla.lu_factor(A, overwrite_a=True, check_finite=False)
    anorm = np.abs(A).sum(axis=0).max()
    sla.get_lapack_funcs("gecon", (lu[0],))(lu[0], anorm, norm="1")
    rhs = np.concatenate([[0.0, 0.0], np.ones(K.shape[0]), np.ones(K.shape[0])])
    return sla.lu_solve(lu, rhs, check_finite=False)


def _with(K, y, C, rcond_tol, density, complex_lu):
    old_f, old_d = _AsymSchur._factor_shifted, _AsymSchur._SPARSE_DENSITY
    if complex_lu:
        _AsymSchur._factor_shifted = lambda self, c, methods=(): None  # the former complex LU
    _AsymSchur._SPARSE_DENSITY = density
    try:
        return askls_solve(K, y, C, rcond_tol=rcond_tol)
    finally:
        _AsymSchur._factor_shifted, _AsymSchur._SPARSE_DENSITY = old_f, old_d


def before(K, y, C, rcond_tol=1e-8):
    """The route before gap 6: GEMM KᵀK, complex LU of z²I − KᵀK."""
    return _with(K, y, C, rcond_tol, 0.0, True)


def cocg_dense(K, y, C, rcond_tol=1e-8):
    """COCG fallback on the dense KᵀK (the route when K has no zero structure)."""
    return _with(K, y, C, rcond_tol, 0.0, False)


def after(K, y, C, rcond_tol=1e-8):
    return askls_solve(K, y, C, rcond_tol=rcond_tol)


def flat(sol):
    return np.concatenate([sol.bias.ravel(), sol.coef[0].ravel(), sol.coef[1].ravel()])


def run(n: int, C: float, repeats: int, check_dense: bool,
        rcond_tol: float = 1e-8, noise: float = 0.0) -> dict:
    K = graph_kernel(n)
    if noise:
        K = K + noise * np.random.default_rng(2).random((n, n))
    y = np.where(np.random.default_rng(1).random(n) < 0.5, 1.0, -1.0)
    fns = {"dense LU": dense_lu, "before": before, "cocg dense": cocg_dense, "after": after}
    names = list(fns)
    times = {k: [] for k in fns}
    outs = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(repeats):
            for k in names[i % len(names):] + names[:i % len(names)]:
                t0 = time.perf_counter()
                outs[k] = fns[k](K, y, C, rcond_tol)
                times[k].append(time.perf_counter() - t0)
        res = {"n": n, "C": C, "noise": noise,
               "density": float(np.count_nonzero(K) / K.size),
               "rcond_tol": rcond_tol, "repeats": repeats, "times": times,
               "median": {k: float(np.median(v)) for k, v in times.items()},
               "fallback": bool(outs["after"].fallback), "rcond": float(outs["after"].rcond)}
        xa, xb = flat(outs["after"]), flat(outs["before"])
        res["after_vs_before"] = float(np.abs(xa - xb).max() / np.abs(xb).max())
        if check_dense:
            xd = flat(askls_solve(K, y, C, method="dense", rcond_tol=rcond_tol))
            res["after_vs_dense"] = float(np.abs(xa - xd).max() / np.abs(xd).max())
    return res


ROUTES = (("dense LU", "dense LU of the (2n+2) system + gecon + solve"),
          ("before", "AsK-LS fit before gap 6 (GEMM KᵀK, complex LU of z²I − KᵀK)"),
          ("cocg dense", "AsK-LS fit, COCG on P + iτI with the dense KᵀK"),
          ("after", "AsK-LS fit, default (CSR copy when ≤ 1 % nonzeros, COCG)"))


def table(results: list, threads: int) -> str:
    r0 = results[0]
    lines = [
        "# AsK-LS ridge-fallback benchmark\n",
        f"Machine: {platform.machine()}, {os.cpu_count()} logical CPUs, BLAS limited to "
        f"{threads} thread(s), shared with other work (load average {os.getloadavg()[0]:.1f} "
        f"at the end). Routes interleaved in rotating order, {r0['repeats']} repeats; medians. "
        "Only the ratios are results. Command: `python benchmarks/bench_askls_fallback.py "
        f"--threads {threads}`.\n",
        f"Kernels: the in-degree-normalised adjacency K of a random directed graph (about 5 "
        f"out-edges per node) stored as a dense array, n = {r0['n']}, γ = {r0['C']:g}, ridge "
        f"λ = 1; and K + 1e-4 × uniform noise (every entry nonzero). The rcond rule (< "
        f"{r0['rcond_tol']:g}) sends both to the fallback.\n",
        "| kernel | nonzeros | rcond est. | fallback | route | median (s) | dense LU / route |",
        "|---|---|---|---|---|---|---|",
    ]
    for res in results:
        med = res["median"]
        kern = "graph kernel" if not res["noise"] else f"graph + {res['noise']:g} noise"
        for k, label in ROUTES:
            lines.append(f"| {kern} | {100 * res['density']:.2f} % | {res['rcond']:.1e} | "
                         f"{res['fallback']} | {label} | {med[k]:.3f} | "
                         f"{med['dense LU'] / med[k]:.2f} |")
    lines.append("")
    for res in results:
        kern = "graph kernel" if not res["noise"] else "dense kernel"
        lines.append(f"- {kern}: max relative difference of the default from the route "
                     f"before gap 6: {res['after_vs_before']:.1e}"
                     + (f"; from the dense reference solve of the same regularised system: "
                        f"{res['after_vs_dense']:.1e}" if "after_vs_dense" in res else "")
                     + ".")
    lines += ["",
              "Every fit includes KᵀK, the real LU of γ⁻²I − KᵀK and the rcond estimate that "
              "decide the fallback. Target ≥ 3× the dense LU."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny size, no file written")
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", default=str(os.cpu_count()),
                    help="BLAS thread counts, comma-separated (threadpoolctl); one table each")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs/results"))
    a = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    texts, results = [], []
    for threads in (int(t) for t in a.threads.split(",")):
        with threadpool_limits(limits=threads, user_api="blas"):
            if a.quick:
                res = [run(600, 10.0, 2, True, rcond_tol=1e-4, noise=z) for z in (0.0, 1e-4)]
            else:
                res = [run(a.n, 10.0, a.repeats, a.n <= 1500, noise=z) for z in (0.0, 1e-4)]
        texts.append(table(res, threads))
        results.extend(res)
    text = texts[0] + "".join("\n" + t.split("\n", 2)[2] for t in texts[1:])
    print(text)
    if not a.quick:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "askls_fallback_bench.md").write_text(text)
    return results


if __name__ == "__main__":
    main()
