"""Issue 16 gaps 5–7: fused lazy randomized SVD, AsK-LS ridge fallback, Nyström peak memory.

Every fast path against a dense numpy reference; no test depends on timing.
"""

from __future__ import annotations

import importlib.util
import sys
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg as sla

from asymkern._random import normal_rows, seed_from
from asymkern._validation import check_random_state
from asymkern.kernels import KernelMatrix, get_kernel
from asymkern.linalg import dense_svd, randomized_svd
from asymkern.linalg.nystrom import asymmetric_nystrom
from asymkern.lssvm._solvers import _AsymSchur, askls_solve
from asymkern.testing import requires_data

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def rel(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), 1e-300))


def kernel_matrix(kernel="rbf", center=False, dtype=np.float64, wm=0.05, n=260, m=230, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4)).astype(dtype)
    Z = (rng.standard_normal((m, 4)) * 1.2 + 0.2).astype(dtype)
    return KernelMatrix(get_kernel(kernel), X, Z, center=center, working_memory=wm)


def reference_rsvd(A, r, p, n_iter, seed):
    """The fused algorithm written plainly on a dense numpy matrix (same Ω)."""
    k = min(r + p, *A.shape)
    W = normal_rows(seed_from(check_random_state(seed, "random_state")), 0, A.shape[1], k,
                    A.dtype)
    for i in range(n_iter + 1):
        Z = A.T @ (A @ W)
        W = np.linalg.qr(Z)[0] if i == n_iter else sla.lu(Z, permute_l=True)[0]
    U, s, Vt = np.linalg.svd(A @ W, full_matrices=False)
    U, V = U[:, :r], W @ Vt[:r].T
    j = np.argmax(np.abs(U), axis=0)
    sg = np.sign(U[j, np.arange(r)])
    return U * sg, s[:r], V * sg


def old_rsvd_V(A, r, p, n_iter, seed):
    """Right singular vectors of the former algorithm (QR after each of 2·n_iter + 2 products)."""
    k = min(r + p, *A.shape)
    Om = normal_rows(seed_from(check_random_state(seed, "random_state")), 0, A.shape[1], k,
                     A.dtype)
    Q = np.linalg.qr(A @ Om)[0]
    for _ in range(n_iter):
        Q = np.linalg.qr(A @ np.linalg.qr(A.T @ Q)[0])[0]
    return np.linalg.svd(Q.T @ A, full_matrices=False)[2][:r].T


@pytest.mark.parametrize("kernel,center", [("rbf", False), ("sne", False), ("sne", True)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_gram_product_equals_two_products(kernel, center, dtype):
    G = kernel_matrix(kernel, center, dtype)
    W = np.random.default_rng(1).standard_normal((G.shape[1], 6)).astype(dtype)
    fused = G._gram_matmat(W)
    assert fused.dtype == dtype
    np.testing.assert_array_equal(fused, G.rmatmat(G.matmat(W)))  # same blocks, same order
    A = G.to_array().astype(np.float64)
    assert rel(fused, A.T @ (A @ W.astype(np.float64))) < (1e-12 if dtype == np.float64 else 1e-5)


@pytest.mark.parametrize("kernel,center", [("rbf", False), ("sne", True)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lazy_randomized_svd_equals_dense_reference(kernel, center, dtype):
    G = kernel_matrix(kernel, center, dtype)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    res = randomized_svd(G, 4, n_oversamples=6, n_iter=3, random_state=7)
    assert res.U.dtype == dtype and res.V.dtype == dtype
    U, s, V = reference_rsvd(G.to_array().astype(np.float64), 4, 6, 3, 7)
    assert rel(res.s, s) < tol
    assert rel(res.U, U) < (1e-10 if dtype == np.float64 else 1e-3)
    assert rel(res.V, V) < (1e-10 if dtype == np.float64 else 1e-3)
    # the materialised matrix through the same solver, and other block sizes: same result
    dense = randomized_svd(G.to_array(), 4, n_oversamples=6, n_iter=3, random_state=7)
    assert rel(dense.s, res.s) < tol and rel(dense.V, res.V) < 100 * tol
    for wm in (0.01, 3.0):
        G2 = kernel_matrix(kernel, center, dtype, wm=wm)
        other = randomized_svd(G2, 4, n_oversamples=6, n_iter=3, random_state=7)
        assert rel(other.s, res.s) < tol and rel(other.U, res.U) < 100 * tol
    again = randomized_svd(G, 4, n_oversamples=6, n_iter=3, random_state=7)
    np.testing.assert_array_equal(again.U, res.U)
    np.testing.assert_array_equal(again.s, res.s)


def test_lazy_randomized_leading_values_and_subspace():
    # a kernel with a fast-decaying spectrum: the leading values are those of a dense SVD, and
    # the right singular subspace is the one of the former (two-pass-per-iteration) algorithm
    G = kernel_matrix("rbf", False, np.float64, n=300, m=280)
    A = G.to_array()
    res = randomized_svd(G, 5, random_state=0)
    exact = dense_svd(A, 5)
    assert rel(res.s, exact.s) < 1e-12
    V_old = old_rsvd_V(A, 5, 10, 7, 0)
    # largest principal-angle sine from the projection residual (accurate to rounding; the
    # sqrt(1 - cos²) route has a floor of about sqrt(eps) = 1.5e-8)
    sine = np.linalg.norm(V_old - res.V @ (res.V.T @ V_old), 2)
    assert sine < 1e-10
    assert rel(res.V, exact.V) < 1e-8


def _bench(name):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(BENCH))
    return mod


# the benchmark's kernel (in-degree-normalised adjacency of a random directed graph)
directed_graph_kernel = _bench("bench_askls_fallback").graph_kernel


def flat(sol):
    return np.concatenate([sol.bias.ravel(), sol.coef[0].ravel(), sol.coef[1].ravel()])


@pytest.mark.parametrize("C", [10.0, 100.0, 3.0, 1.0])
@pytest.mark.parametrize("path", ["default", "cocg-missed", "fixed-point", "complex-lu"])
def test_askls_ridge_fallback_equals_dense_regularised_solve(C, path, monkeypatch):
    # the paper's fallback: x = (AᵀA + λI)⁻¹Aᵀb with A the (2n + 2) matrix of eq. (6), λ = 1
    # (on the signed system: the same solution); rcond_tol = 0.9 sends every fit there.
    # γ = 1 has μ = 1/γ: always the complex LU of z²I − KᵀK.
    K = directed_graph_kernel(180)
    Y = np.where(np.random.default_rng(2).random((180, 2)) < 0.5, 1.0, -1.0)
    inner = _AsymSchur(K)
    fac = inner._factor_shifted(complex(1 / C, -1.0))
    assert (fac is None) == (C == 1.0)
    if C > 1:
        assert fac[0] == "cocg"  # ‖K‖₁ = 1 here: κ(P) is small
    orig = _AsymSchur._factor_shifted
    if path == "cocg-missed":  # COCG cannot reach the tolerance: factorised fallback
        monkeypatch.setattr(_AsymSchur, "_CG_TOL", 1e-30)
    elif path == "fixed-point":
        monkeypatch.setattr(_AsymSchur, "_factor_shifted",
                            lambda self, c, methods=("fixed-point",): orig(self, c, methods))
        if C >= 10:
            assert _AsymSchur(K)._factor_shifted(complex(1 / C, -1.0))[0] == "fixed-point"
    elif path == "complex-lu":
        monkeypatch.setattr(_AsymSchur, "_factor_shifted", lambda self, c, methods=(): None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = askls_solve(K, Y, C, rcond_tol=0.9)
        ref = askls_solve(K, Y, C, method="dense", rcond_tol=0.9)
    assert fast.fallback and ref.fallback
    assert rel(flat(fast), flat(ref)) < 1e-10


def test_askls_fallback_on_the_rcond_rule():
    # no forced tolerance: a graph kernel whose rcond estimate is below 1e-8 at γ = 10
    K = directed_graph_kernel(900)
    y = np.where(np.random.default_rng(3).random(900) < 0.5, 1.0, -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = askls_solve(K, y, 10.0)
        ref = askls_solve(K, y, 10.0, method="dense")
    assert fast.fallback == ref.fallback
    assert rel(flat(fast), flat(ref)) < 1e-10


def test_nystrom_peak_memory_bounded():
    # float64, lazy kernel: the O((N + M) r) factors are held once (no copies for the sign flip
    # or the column norms), plus small blocks of working_memory
    N = M = 60_000
    r, s = 10, 30
    rng = np.random.default_rng(0)
    X, Z = rng.standard_normal((N, 3)), rng.standard_normal((M, 3))
    G = KernelMatrix(get_kernel("rbf", gamma=0.2), X, Z, working_memory=0.5)
    factors = (N + M) * r * 8
    tracemalloc.start()
    try:
        res = asymmetric_nystrom(G, r, s, s, random_state=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.U.dtype == np.float64
    assert peak <= 1.5 * factors + 4 * 2**20, (peak, factors)


def test_benchmarks_quick_mode(tmp_path):
    res = _bench("bench_lazy_rsvd").main(["--quick", "--out", str(tmp_path)])
    assert res["err_after"] < 1e-12 and res["subspace_sin"] < 1e-6
    for res in _bench("bench_askls_fallback").main(["--quick", "--out", str(tmp_path)]):
        assert res["fallback"] and res["after_vs_dense"] < 1e-10
    rows = _bench("bench_rownorm").main(["--quick", "--out", str(tmp_path)])
    assert [r["dtype"] for r in rows] == ["float64", "float32"]
    assert rows[0]["max_rel_err_vs_sklearn"] < 1e-12 and rows[1]["max_rel_err_vs_sklearn"] < 1e-5
    assert not list(tmp_path.iterdir())  # quick mode writes nothing


@pytest.mark.parametrize("C", [10.0, 0.5])
def test_askls_dense_stored_graph_kernel_uses_its_sparsity(C, monkeypatch):
    # a graph kernel stored as a dense array (0.6 % nonzeros): KᵀK and the fallback's
    # iterations go through a CSR copy; the solution is the dense-arithmetic one (C = 10: the
    # ridge fallback (rcond ≈ 1e-8 < rcond_tol); C = 0.5: the regular Schur solve)
    K = directed_graph_kernel(900)
    K0 = K.copy()
    y = np.where(np.random.default_rng(3).random(900) < 0.5, 1.0, -1.0)
    assert _AsymSchur(K).K_csr is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = askls_solve(K, y, C, rcond_tol=1e-6)
        monkeypatch.setattr(_AsymSchur, "_SPARSE_DENSITY", 0.0)
        assert _AsymSchur(K).K_csr is None
        dense_route = askls_solve(K, y, C, rcond_tol=1e-6)
        ref = askls_solve(K, y, C, method="dense", rcond_tol=1e-6)
    np.testing.assert_array_equal(K, K0)
    assert fast.fallback == dense_route.fallback == ref.fallback == (C == 10.0)
    assert rel(flat(fast), flat(dense_route)) < 1e-12
    assert rel(flat(fast), flat(ref)) < 1e-10


def test_askls_sparse_kernel_equals_dense_stored():
    # the scipy.sparse route (SuperLU of c²I − KᵀK with a symmetric ordering; damped LSQR in
    # the fallback) and the dense-stored route give the same solution
    import scipy.sparse as sp

    K = directed_graph_kernel(500)
    y = np.where(np.random.default_rng(5).random(500) < 0.5, 1.0, -1.0)
    for C in (0.5, 10.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = askls_solve(sp.csr_matrix(K), y, C)
            b = askls_solve(K, y, C)
        assert a.fallback == b.fallback
        assert rel(flat(a), flat(b)) < 1e-9


@requires_data("cora/cora.npz")
def test_ksvd_paths_benchmark_quick_mode(tmp_path):
    # every float32 path close to the float64 reference in its singular values (Cora subgraph)
    rows = _bench("bench_ksvd_paths").main(["--quick", "--out", str(tmp_path)])
    assert {r["path"] for r in rows} == {"float64 dense", "float32 dense",
                                         "float32 randomized", "float32 block_krylov"}
    for r in rows:
        tol = {"dense": 1e-5, "block_krylov": 1e-4, "randomized": 0.1}[r["path"].split()[1]]
        assert r["dsigma"] < tol
    assert not list(tmp_path.iterdir())
