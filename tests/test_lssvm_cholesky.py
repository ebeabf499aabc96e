"""LS-SVM Cholesky path (issue 16, gap 3): taken for kernels flagged symmetric (and for
precomputed matrices symmetric to rounding), never for asymmetric kernels; same answers as the
LU path and the dense (n + 1) reference; LU fallback for symmetric indefinite matrices."""

from __future__ import annotations

import numpy as np
import pytest

from asymkern.kernels import KernelMatrix, get_kernel
from asymkern.lssvm import LSSVMClassifier, LSSVMRegressor, lssvm_solve
from asymkern.lssvm._solvers import _nearly_symmetric


def _rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def _data(n=150, d=4, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(dtype)
    y = np.sin(X[:, 0].astype(np.float64)) + 0.1 * rng.standard_normal(n)
    return X, y


def _rbf_gram(X, gamma=0.3):
    K = KernelMatrix(get_kernel("rbf", gamma=gamma), X, X, reference=X).to_array()
    return np.asarray(K, dtype=np.float64)


@pytest.mark.parametrize("g", [0.1, 1.0, 100.0])
def test_cholesky_equals_lu_and_dense(g):
    X, y = _data()
    K = _rbf_gram(X)
    K0 = K.copy()
    chol = lssvm_solve(K, y, g, symmetric=True)
    lu = lssvm_solve(K, y, g, symmetric=False)
    dense = lssvm_solve(K, y, g, method="dense")
    assert chol.info["factorization"] == "cholesky"
    assert lu.info["factorization"] == "lu"
    for other in (lu, dense):
        assert _rel(chol.coef[0], other.coef[0]) < 1e-12
        assert _rel(chol.bias, other.bias) < 1e-12
    np.testing.assert_array_equal(K, K0)  # input not modified


def test_rbf_gram_is_not_exactly_symmetric_but_cholesky_runs():
    """The computed RBF matrix may differ from its transpose in the last bit; the estimator
    knows the kernel is symmetric and takes Cholesky anyway (one triangle is read)."""
    X, y = _data(n=300, d=7, seed=3)
    reg = LSSVMRegressor(kernel="rbf", kernel_params={"gamma": 0.2}, C=10.0).fit(X, y)
    assert reg.factorization_ == "cholesky"
    K = _rbf_gram(X, 0.2)
    ref = lssvm_solve(K, y, 10.0, method="dense")
    assert _rel(reg.dual_coef_[:, 0], ref.coef[0][:, 0]) < 1e-12
    assert _rel(reg.intercept_, ref.bias[0]) < 1e-12


def test_classifier_multiclass_cholesky():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((120, 3))
    y = np.argmax(X[:, :3], axis=1)
    clf = LSSVMClassifier(kernel="rbf", kernel_params={"gamma": 0.5}, C=5.0).fit(X, y)
    assert clf.factorization_ == "cholesky"
    lu = LSSVMClassifier(kernel="rbf", kernel_params={"gamma": 0.5}, C=5.0,
                         solver="dense").fit(X, y)
    assert _rel(clf.dual_coef_, lu.dual_coef_) < 1e-12
    assert _rel(clf.intercept_, lu.intercept_) < 1e-12


def test_float32_data_cholesky():
    X, y = _data(dtype=np.float32)
    reg = LSSVMRegressor(kernel="rbf", kernel_params={"gamma": 0.3}, C=1.0).fit(X, y)
    assert reg.factorization_ == "cholesky"
    ref = LSSVMRegressor(kernel="rbf", kernel_params={"gamma": 0.3}, C=1.0,
                         solver="dense").fit(X, y)
    assert _rel(reg.dual_coef_, ref.dual_coef_) < 1e-5
    np.testing.assert_allclose(reg.predict(X), ref.predict(X), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", ["sne", "t"])
def test_asymmetric_kernel_never_cholesky(kernel):
    X, y = _data(n=80)
    reg = LSSVMRegressor(kernel=kernel, C=1.0).fit(X, y)
    assert reg.factorization_ == "lu"
    K = np.asarray(KernelMatrix(get_kernel(kernel), X, X, reference=X).to_array(), float)
    ref = lssvm_solve(K, y, 1.0, method="dense")
    assert _rel(reg.dual_coef_[:, 0], ref.coef[0][:, 0]) < 1e-12


def test_callable_kernel_default_flags_never_cholesky():
    X, y = _data(n=60)
    def f(A, B):
        return np.exp(-0.3 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
    assert LSSVMRegressor(kernel=f, C=1.0).fit(X, y).factorization_ == "lu"


def test_precomputed_checked_by_tolerance():
    X, y = _data()
    K = _rbf_gram(X)
    reg = LSSVMRegressor(kernel="precomputed", C=2.0).fit(K, y)
    assert reg.factorization_ == "cholesky"
    Ka = K.copy()
    Ka[3, 7] += 1e-8  # visibly asymmetric: LU, and the exact answer for this matrix
    reg_a = LSSVMRegressor(kernel="precomputed", C=2.0).fit(Ka, y)
    assert reg_a.factorization_ == "lu"
    ref = lssvm_solve(Ka, y, 2.0, method="dense")
    assert _rel(reg_a.dual_coef_[:, 0], ref.coef[0][:, 0]) < 1e-12


def test_nearly_symmetric():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((700, 700))  # more than one block
    S = A + A.T
    assert _nearly_symmetric(S)
    S2 = S.copy()
    S2[650, 5] += 1e-10
    assert not _nearly_symmetric(S2)
    assert not _nearly_symmetric(A)
    S3 = S.copy()
    S3[0, 0] = np.nan
    assert not _nearly_symmetric(S3)
    assert _nearly_symmetric(np.zeros((0, 0)))


def test_symmetric_indefinite_falls_back_to_lu():
    rng = np.random.default_rng(2)
    n = 90
    A = rng.standard_normal((n, n))
    K = (A + A.T) / 2  # symmetric, eigenvalues of both signs; K + I/γ indefinite at γ = 10
    y = rng.standard_normal(n)
    sol = lssvm_solve(K, y, 10.0, symmetric=True, rcond_tol=0.0)
    assert sol.info["factorization"] == "lu"
    ref = lssvm_solve(K, y, 10.0, method="dense", rcond_tol=0.0)
    assert _rel(sol.coef[0], ref.coef[0]) < 1e-12
    assert _rel(sol.bias, ref.bias) < 1e-12


def test_overwrite_k_same_answers_and_restores_for_fallbacks():
    """In-place factorisation (the estimators' own K): same result as the copying path, also
    when K must be rebuilt — Cholesky failing (indefinite) or the ridge fallback (complex)."""
    X, y = _data(n=600)  # more than one restore block
    K = _rbf_gram(X)
    ref = lssvm_solve(K, y, 3.0, symmetric=True)
    sol = lssvm_solve(K.copy(), y, 3.0, symmetric=True, overwrite_K=True)
    assert sol.info["factorization"] == "cholesky"
    assert _rel(sol.coef[0], ref.coef[0]) < 1e-12 and _rel(sol.bias, ref.bias) < 1e-12
    # indefinite: Cholesky fails in place, K is rebuilt, LU gives the dense answer
    rng = np.random.default_rng(5)
    A = rng.standard_normal((600, 600))
    S = (A + A.T) / 2
    ref = lssvm_solve(S, y, 10.0, method="dense", rcond_tol=0.0)
    sol = lssvm_solve(S.copy(), y, 10.0, symmetric=True, overwrite_K=True, rcond_tol=0.0)
    assert sol.info["factorization"] == "lu"
    assert _rel(sol.coef[0], ref.coef[0]) < 1e-12 and _rel(sol.bias, ref.bias) < 1e-12
    # ridge fallback (forced by rcond_tol = 1): the complex shifted system needs K again
    with pytest.warns(Warning):
        ref = lssvm_solve(K, y, 3.0, symmetric=True, rcond_tol=1.0)
    with pytest.warns(Warning):
        sol = lssvm_solve(K.copy(), y, 3.0, symmetric=True, overwrite_K=True, rcond_tol=1.0)
    assert sol.fallback and ref.fallback
    assert _rel(sol.coef[0], ref.coef[0]) < 1e-12 and _rel(sol.bias, ref.bias) < 1e-12


def test_precomputed_matrix_not_modified():
    X, y = _data()
    K = _rbf_gram(X)
    K0 = K.copy()
    LSSVMRegressor(kernel="precomputed", C=2.0).fit(K, y)
    np.testing.assert_array_equal(K, K0)
