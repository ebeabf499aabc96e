"""Randomized block Krylov SVD (Musco & Musco 2015): against dense LAPACK, its invariants, and
the same answer from a lazy kernel matrix, whatever its blocks."""

from __future__ import annotations

import numpy as np
import pytest

from asymkern.decomposition import KernelSVD
from asymkern.kernels import KernelMatrix
from asymkern.linalg import randomized_svd, top_svd


def rel(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(b).max())


def decaying(n=300, m=240, rate=0.9, seed=0):
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((n, m)))[0]
    V = np.linalg.qr(rng.standard_normal((m, m)))[0]
    s = rate ** np.arange(m)
    return (U * s) @ V.T, s


def test_matches_dense_svd_and_beats_the_power_method_at_equal_passes():
    G, s_true = decaying()
    r = 8
    kry = randomized_svd(G, r, random_state=0, method="block_krylov", n_iter=3)  # 4 passes
    assert kry.solver == "block_krylov" and kry.info["n_iter"] == 3
    pow_ = randomized_svd(G, r, random_state=0, method="power", n_iter=2)  # 4 passes
    err_k = np.abs(kry.s - s_true[:r]).max()
    err_p = np.abs(pow_.s - s_true[:r]).max()
    assert err_k < 1e-6 and err_k < err_p
    # Rayleigh–Ritz: the Ritz values never exceed the singular values
    assert np.all(kry.s <= s_true[:r] * (1 + 1e-12))
    # orthonormal factors, and G v_i = σ_i u_i to the accuracy of the values
    assert np.abs(kry.U.T @ kry.U - np.eye(r)).max() < 1e-12
    assert np.abs(kry.V.T @ kry.V - np.eye(r)).max() < 1e-12
    assert np.abs(G @ kry.V - kry.U * kry.s).max() < 1e-5
    # converged: more steps give LAPACK's values
    full = randomized_svd(G, r, random_state=0, method="block_krylov", n_iter=12)
    assert rel(full.s, np.linalg.svd(G, compute_uv=False)[:r]) < 1e-12


def test_invariant_krylov_space_keeps_an_orthonormal_basis():
    # rank 5 < k(q + 1): after one step the Krylov space is invariant; the basis must stay
    # orthonormal (new blocks are rounding noise, orthogonalised twice) and G exact
    rng = np.random.default_rng(1)
    G = rng.standard_normal((500, 5)) @ rng.standard_normal((5, 400))
    res = randomized_svd(G, 5, random_state=0, method="block_krylov")
    assert res.info["n_iter"] == 3
    assert rel(res.U * res.s @ res.V.T, G) < 1e-13
    assert np.abs(res.V.T @ res.V - np.eye(5)).max() < 1e-13


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 1e-4)])
def test_lazy_kernel_equals_the_formed_matrix_whatever_the_blocks(dtype, tol):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((700, 4)).astype(dtype)
    Z = rng.standard_normal((600, 4)).astype(dtype)
    A = KernelMatrix("sne", X, Z).to_array()
    exact = np.linalg.svd(A.astype(np.float64), compute_uv=False)[:10]
    results = []
    for wm in (0.05, 0.5, 64.0):  # blocks of a few rows … the whole matrix at once
        res = top_svd(KernelMatrix("sne", X, Z, working_memory=wm), 10, solver="block_krylov",
                      random_state=0)
        assert res.U.dtype == dtype and res.V.dtype == dtype
        results.append(res)
    formed = top_svd(A, 10, solver="block_krylov", random_state=0)
    for res in results:
        assert rel(res.s, formed.s) < tol
        assert rel(res.V, formed.V) < 100 * tol
    assert rel(results[0].s, exact) < max(tol, 1e-8)
    again = top_svd(KernelMatrix("sne", X, Z, working_memory=0.05), 10,
                    solver="block_krylov", random_state=0)
    np.testing.assert_array_equal(again.s, results[0].s)
    np.testing.assert_array_equal(again.U, results[0].U)


def test_falls_back_to_the_power_method_when_two_blocks_do_not_fit():
    G = np.random.default_rng(3).standard_normal((30, 20))
    res = randomized_svd(G, 8, random_state=0, method="block_krylov")  # k = 18, 2k > 20
    assert res.info["method"] == "power" and res.solver == "randomized"
    capped = randomized_svd(np.random.default_rng(3).standard_normal((200, 60)), 5,
                            random_state=0, method="block_krylov", n_iter=10)
    assert capped.info["n_iter"] == 60 // 15 - 1  # k(q + 1) ≤ min(n, m)
    assert capped.info["method"] == "block_krylov"
    # 'auto' (q = 2) does not fit: 3·35 > 90 columns; the power method with its own 'auto'
    auto = randomized_svd(np.random.default_rng(3).standard_normal((200, 90)), 25,
                          random_state=0, method="block_krylov")
    assert auto.info == {"n_oversamples": 10, "method": "power", "n_iter": 4,
                         "precision": "high", "refined": 0}


def test_bad_method_and_inputs_untouched():
    G = np.random.default_rng(4).standard_normal((50, 40))
    G0 = G.copy()
    with pytest.raises(ValueError, match="method must be one of"):
        randomized_svd(G, 3, method="lanczos")
    with pytest.raises(ValueError, match="n_iter"):
        top_svd(G, 3, solver="block_krylov", n_iter=-1)
    with pytest.raises(TypeError, match="tol"):
        top_svd(G, 3, solver="block_krylov", tol=1e-3)
    randomized_svd(G, 3, method="block_krylov", random_state=0)
    np.testing.assert_array_equal(G, G0)


def test_kernel_svd_block_krylov_equals_dense():
    rng = np.random.default_rng(5)
    X, Z = rng.standard_normal((400, 3)), rng.standard_normal((350, 3))
    kw = dict(n_components=5, kernel="rbf", kernel_params={"gamma": 0.5}, random_state=0)
    kry = KernelSVD(solver="block_krylov", **kw).fit(X, Z=Z)
    dense = KernelSVD(solver="dense", **kw).fit(X, Z=Z)
    assert kry.solver_ == "block_krylov"
    assert rel(kry.singular_values_, dense.singular_values_) < 1e-10
    assert rel(kry.transform(X[:20]), dense.transform(X[:20])) < 1e-6


@pytest.mark.parametrize("method", ["power", "block_krylov"])
def test_iterates_of_tiny_values_stay_finite(method):
    """A kernel of values near 1e-145: the products of the power iteration underflow into
    subnormal numbers, whose LU older LAPACK builds (scipy 1.10) turned into infinite
    multipliers; the normaliser scales each iterate by a power of two first."""
    from asymkern.kernels import KernelMatrix, get_kernel

    rng = np.random.default_rng(3)
    X, Z = rng.standard_normal((120, 3)), rng.standard_normal((90, 3)) + 30.0
    G = KernelMatrix(get_kernel("rbf", gamma=0.15), X, Z)
    want = np.linalg.svd(G.to_array(), compute_uv=False)[:3]
    assert want[0] < 1e-140
    got = randomized_svd(G, 3, random_state=0, method=method).s
    np.testing.assert_allclose(got[:2], want[:2], rtol=1e-6)
