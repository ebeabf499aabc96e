"""KernelPCA without the float64 copy of the kernel matrix, blocked centring, and the randomized
solver (issue 16, gap 2), each against a dense, obviously-correct reference."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import KernelPCA as SkKernelPCA

from asymkern.decomposition import KernelPCA
from asymkern.decomposition.kpca import _center_in_place, randomized_eigh


def _rbf(X, g):
    sq = (X ** 2).sum(1)
    return np.exp(-g * np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0))


def _ref_centered(K):
    n = K.shape[0]
    H = np.eye(n) - np.ones((n, n)) / n
    return H @ K @ H


def _data(n=300, d=5, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def test_center_in_place_matches_reference():
    X = _data(n=200)
    K = _rbf(X, 0.2)
    ref = _ref_centered(K)
    m = K.mean(axis=1)
    C = K.copy()
    _center_in_place(C, m, float(m.mean()), block=7)  # blocks that do not divide n
    np.testing.assert_allclose(C, ref, rtol=0, atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("solver", ["dense", "arpack", "randomized"])
def test_eigenvalues_match_dense_reference(solver):
    X = _data()
    X0 = X.copy()
    kp = KernelPCA(n_components=5, kernel="rbf", kernel_params={"gamma": 0.2}, solver=solver,
                   random_state=0).fit(X)
    np.testing.assert_array_equal(X, X0)
    lam_ref = np.linalg.eigh(_ref_centered(_rbf(X, 0.2)))[0][::-1][:5]
    np.testing.assert_allclose(kp.eigenvalues_, lam_ref, rtol=1e-12)
    # eigenvectors: K u = λ u with the reference matrix
    Kc = _ref_centered(_rbf(X, 0.2))
    res = Kc @ kp.eigenvectors_ - kp.eigenvectors_ * kp.eigenvalues_
    assert np.abs(res).max() < 1e-10 * lam_ref[0]


def test_float32_data():
    X = _data().astype(np.float32)
    kp = KernelPCA(n_components=4, kernel="rbf", kernel_params={"gamma": 0.2},
                   solver="randomized", random_state=1).fit(X)
    assert kp.eigenvalues_.dtype == np.float32
    lam_ref = np.linalg.eigh(_ref_centered(_rbf(X.astype(np.float64), 0.2)))[0][::-1][:4]
    np.testing.assert_allclose(kp.eigenvalues_, lam_ref, rtol=1e-5)


def test_randomized_eigh_against_eigh():
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.standard_normal((400, 400)))
    lam = 0.8 ** np.arange(400)
    A = (Q * lam) @ Q.T
    A0 = A.copy()
    w, V = randomized_eigh(A, 6, random_state=0)
    np.testing.assert_array_equal(A, A0)
    np.testing.assert_allclose(w[::-1], lam[:6], rtol=1e-12)
    np.testing.assert_allclose(np.abs(np.sum(V[:, ::-1] * Q[:, :6], axis=0)), 1, atol=1e-10)


def test_randomized_at_least_as_accurate_as_sklearn():
    """Slowly decaying spectrum (wide RBF): eigenvalue errors vs dense eigh at equal
    n_components; ours never worse than scikit-learn's randomized solver (same seeds)."""
    X = _data(n=600, d=20, seed=4)
    g, r = 0.01, 10
    lam_ref = np.linalg.eigh(_ref_centered(_rbf(X, g)))[0][::-1][:r]
    for seed in range(3):
        ours = KernelPCA(n_components=r, kernel="rbf", kernel_params={"gamma": g},
                         solver="randomized", random_state=seed).fit(X).eigenvalues_
        sk = SkKernelPCA(n_components=r, kernel="rbf", gamma=g, eigen_solver="randomized",
                         random_state=seed).fit(X).eigenvalues_
        err_ours = np.abs(ours - lam_ref).max() / lam_ref[0]
        err_sk = np.abs(sk - lam_ref).max() / lam_ref[0]
        # both may sit at the rounding floor (~1e-15 relative; which one is lower there depends
        # on the BLAS/numpy build, seen 2.8e-15 vs 1.5e-15 at the minimum versions)
        assert err_ours <= err_sk + 50 * np.finfo(np.float64).eps


@pytest.mark.parametrize("bad", [-1, 1.5, "many", None, True])
def test_bad_iterated_power_named(bad):
    with pytest.raises(ValueError, match="iterated_power"):
        KernelPCA(n_components=2, solver="randomized", iterated_power=bad).fit(_data(n=50))


@pytest.mark.parametrize("bad", [-1, 2.5, None])
def test_bad_n_oversamples_named(bad):
    with pytest.raises(ValueError, match="n_oversamples"):
        KernelPCA(n_components=2, solver="randomized", n_oversamples=bad).fit(_data(n=50))


def test_randomized_seed_is_reproducible_and_none_is_fresh_entropy():
    # issue 15: random_state=None no longer silently seeds 0 (scikit-learn's policy: fresh
    # entropy from numpy's global RandomState); an int seed reproduces bit for bit
    X = _data(n=120)
    a = KernelPCA(n_components=3, solver="randomized", random_state=3).fit(X).eigenvectors_
    b = KernelPCA(n_components=3, solver="randomized", random_state=3).fit(X).eigenvectors_
    np.testing.assert_array_equal(a, b)
    c = KernelPCA(n_components=3, solver="randomized").fit(X).eigenvectors_
    np.testing.assert_allclose(c, a, atol=1e-8)  # converged: equal up to rounding


def test_bad_solver_named():
    with pytest.raises(ValueError, match="solver"):
        KernelPCA(n_components=2, solver="lobpcg").fit(_data(n=50))


def test_row_sum_overflow_detected():
    X = np.full((200, 2), 1e153)  # finite xᵀz = 2e306, row sums 4e308 overflow
    X[:, 1] *= np.linspace(0.5, 1, 200)
    with pytest.raises(OverflowError, match="kernel matrix"):
        KernelPCA(n_components=2, kernel="linear").fit(X)


def test_randomized_eigh_indefinite_signs():
    rng = np.random.default_rng(6)
    Q, _ = np.linalg.qr(rng.standard_normal((300, 300)))
    lam = np.concatenate([[5.0, 4.0, -3.5, 3.0], -0.5 ** np.arange(296)])
    A = (Q * lam) @ Q.T
    w, V = randomized_eigh(A, 3, random_state=0)
    np.testing.assert_allclose(w, [3.0, 4.0, 5.0], rtol=1e-12)
    res = A @ V - V * w
    assert np.abs(res).max() < 1e-10
