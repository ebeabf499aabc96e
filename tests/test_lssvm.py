"""LS-SVM and AsK-LS (paper 001): fast solves against dense references, Prop. 2, labels,
one-vs-rest, precomputed kernels, stacking, Nyström, bad input and scikit-learn checks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs, make_classification

from asymkern.kernels import KernelMatrix, get_kernel
from asymkern.lssvm import (
    AsKLSClassifier,
    IllConditionedWarning,
    KernelPair,
    LSSVMClassifier,
    LSSVMRegressor,
    askls_C_path,
    askls_kkt_matrix,
    askls_solve,
    lssvm_C_path,
    lssvm_solve,
)
from asymkern.lssvm._solvers import _AsymLowRank


def _rng(seed=0):
    return np.random.default_rng(seed)


def _labels(n, rng):
    y = np.where(rng.random(n) > 0.5, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    return y


def _dense_eq6(K, y, gamma):
    """Obviously-correct reference: np.linalg.solve of the (2n+2) system of eq. (6)."""
    n = K.shape[0]
    x = np.linalg.solve(askls_kkt_matrix(K, y, gamma),
                        np.concatenate([[0.0, 0.0], np.ones(n), np.ones(n)]))
    return x[0], x[1], x[2:n + 2], x[n + 2:]


def _data(n=80, seed=0, classes=2):
    X, y = make_blobs(n, 4, centers=classes, cluster_std=3.0, random_state=seed)
    return X, y


# ------------------------------------------------------------------------- solver level
@pytest.mark.parametrize("method", ["schur", "eig"])
@pytest.mark.parametrize("gamma", [0.3, 5.0])
def test_fast_solve_equals_dense_eq6(method, gamma):
    rng = _rng(1)
    n = 70
    K = rng.random((n, n)) + np.eye(n)
    y = _labels(n, rng)
    b1, b2, alpha, beta = _dense_eq6(K, y, gamma)
    sol = askls_solve(K, y, gamma, method=method)
    assert not sol.fallback
    np.testing.assert_allclose(sol.bias[:, 0], [b1, b2], atol=1e-8)
    np.testing.assert_allclose(sol.coef[0][:, 0], alpha * y, atol=1e-8)  # signed ã = α ⊙ y
    np.testing.assert_allclose(sol.coef[1][:, 0], beta * y, atol=1e-8)
    # the KKT conditions themselves
    A = askls_kkt_matrix(K, y, gamma)
    x = np.concatenate([sol.bias[:, 0], sol.coef[0][:, 0] * y, sol.coef[1][:, 0] * y])
    np.testing.assert_allclose(A @ x, np.concatenate([[0, 0], np.ones(2 * n)]), atol=1e-8)


def test_sparse_schur_equals_dense():
    rng = _rng(2)
    n = 60
    K = sp.random(n, n, density=0.1, random_state=3, format="csr") + sp.identity(n) * 2.0
    y = _labels(n, rng)
    s1 = askls_solve(sp.csr_matrix(K), y, 0.7)
    b1, b2, alpha, beta = _dense_eq6(K.toarray(), y, 0.7)
    np.testing.assert_allclose(s1.bias[:, 0], [b1, b2], atol=1e-8)
    np.testing.assert_allclose(s1.coef[1][:, 0], beta * y, atol=1e-8)


def test_gamma_path_equals_independent_solves():
    rng = _rng(3)
    n = 50
    K = rng.random((n, n))
    Y = np.column_stack([_labels(n, rng), _labels(n, rng)])
    gammas = [0.01, 0.5, 20.0]
    for sol, g in zip(askls_C_path(K, Y, gammas), gammas):
        ref = askls_solve(K, Y, g, method="dense")
        np.testing.assert_allclose(sol.coef[0], ref.coef[0], atol=1e-8)
        np.testing.assert_allclose(sol.coef[1], ref.coef[1], atol=1e-8)
        np.testing.assert_allclose(sol.bias, ref.bias, atol=1e-8)
    Ks = K + K.T + n * np.eye(n)
    for sol, g in zip(lssvm_C_path(Ks, Y, gammas), gammas):
        ref = lssvm_solve(Ks, Y, g, method="dense")
        np.testing.assert_allclose(sol.coef[0], ref.coef[0], atol=1e-8)


def test_ridge_fallback_matches_normal_equations():
    """Singular system (two isolated 'nodes' with K_ii = 1/γ): the paper's fallback."""
    rng = _rng(4)
    n = 30
    K = np.eye(n)
    K[:20, :20] += 0.2 * rng.random((20, 20))
    y = _labels(n, rng)
    with pytest.warns(IllConditionedWarning):
        sol = askls_solve(K, y, 1.0, ridge=0.5)
    assert sol.fallback and sol.rcond < 1e-8
    A = askls_kkt_matrix(K, y, 1.0)
    b = np.concatenate([[0, 0], np.ones(2 * n)])
    x = np.linalg.solve(A.T @ A + 0.5 * np.eye(2 * n + 2), A.T @ b)
    np.testing.assert_allclose(sol.bias[:, 0], x[:2], atol=1e-10)
    np.testing.assert_allclose(sol.coef[0][:, 0], x[2:n + 2] * y, atol=1e-10)
    np.testing.assert_allclose(sol.coef[1][:, 0], x[n + 2:] * y, atol=1e-10)
    with pytest.raises(np.linalg.LinAlgError, match="ridge"):
        askls_solve(K, y, 1.0, ridge=None)


def test_sparse_singular_graph_fallback_matches_normal_equations():
    """Sparse graph kernel with isolated nodes (K_ii = 1 = 1/γ, no edges): the singularity is
    seen in the pattern (no LU is tried) and damped LSQR gives the paper's (AᵀA + λI)⁻¹Aᵀb."""
    from asymkern.lssvm._solvers import _AsymSchurSparse

    rng = _rng(12)
    n = 120
    A = (rng.random((n, n)) < 0.03).astype(float)
    A[:6, :] = 0.0
    A[:, :6] = 0.0
    A += np.eye(n)
    K = sp.csr_matrix(A / A.sum(axis=0, keepdims=True))  # column-stochastic: isolated ⇒ 1
    Y = np.column_stack([_labels(n, rng), _labels(n, rng)])
    inner = _AsymSchurSparse(K)
    assert inner.factor(1.0) is None  # structural singularity found, SuperLU not attempted
    assert inner.factor(0.5) is not None
    with pytest.warns(IllConditionedWarning, match="LSQR"):
        sol = askls_solve(K, Y, 1.0, ridge=0.7, _inner=inner)
    assert sol.fallback and sol.rcond == 0.0
    for j in range(2):
        y = Y[:, j]
        M = askls_kkt_matrix(K.toarray(), y, 1.0)
        b = np.concatenate([[0, 0], np.ones(2 * n)])
        x = np.linalg.solve(M.T @ M + 0.7 * np.eye(2 * n + 2), M.T @ b)
        np.testing.assert_allclose(sol.bias[:, j], x[:2], atol=1e-9)
        np.testing.assert_allclose(sol.coef[0][:, j], x[2:n + 2] * y, atol=1e-9)
        np.testing.assert_allclose(sol.coef[1][:, j], x[n + 2:] * y, atol=1e-9)


def test_sparse_ridge_fallback_warns_when_lsqr_does_not_converge(monkeypatch):
    """An LSQR run that hits its iteration limit (istop = 7) must not pass silently."""
    import scipy.sparse.linalg as spla

    from asymkern.lssvm._solvers import _AsymSchurSparse

    real_lsqr = spla.lsqr

    def stalled_lsqr(A, b, **kw):
        out = list(real_lsqr(A, b, **{**kw, "iter_lim": 2}))
        out[1] = 7
        return tuple(out)

    monkeypatch.setattr(spla, "lsqr", stalled_lsqr)
    n = 30
    A = np.eye(n)
    A[3, 4] = A[4, 3] = 1.0
    inner = _AsymSchurSparse(sp.csr_matrix(A / A.sum(axis=0, keepdims=True)))
    with pytest.warns(IllConditionedWarning, match="without converging"):
        inner.ridge_solve(1.0, 2, np.ones((n, 1)), 1.0)
    assert inner.last_lsqr_iterations == [2]


def test_rcond_estimate_close_to_lapack():
    rng = _rng(5)
    n = 40
    K = rng.random((n, n))
    y = _labels(n, rng)
    fast = askls_solve(K, y, 2.0).rcond
    exact = askls_solve(K, y, 2.0, method="dense").rcond
    assert exact / 3 <= fast <= exact * 3


def test_lowrank_solve_equals_dense():
    rng = _rng(6)
    n, r = 60, 5
    U, W = rng.standard_normal((n, r)), rng.standard_normal((n, r))
    s = np.sort(rng.random(r))[::-1] + 0.5
    K = U @ np.diag(s) @ W.T
    y = _labels(n, rng)
    low = askls_solve(None, y, 0.8, method="lowrank", _inner=_AsymLowRank(U, s, W))
    ref = askls_solve(K, y, 0.8, method="dense")
    np.testing.assert_allclose(low.coef[0], ref.coef[0], atol=1e-8)
    np.testing.assert_allclose(low.bias, ref.bias, atol=1e-8)


# --------------------------------------------------------------------------- Prop. 2
def test_symmetric_kernel_reduces_to_lssvm():
    X, y = _data(90, 1)
    Xt = X[60:]
    ask = AsKLSClassifier(kernel="rbf", kernel_params={"gamma": 0.1}, C=2.0).fit(X[:60], y[:60])
    ls = LSSVMClassifier(kernel="rbf", kernel_params={"gamma": 0.1}, C=2.0).fit(X[:60], y[:60])
    fs, ft = ask.decision_function(Xt, return_parts=True)
    np.testing.assert_allclose(fs, ft, atol=1e-8)  # f_s = f_t
    np.testing.assert_allclose(fs, ls.decision_function(Xt), atol=1e-8)
    np.testing.assert_allclose(ask.coef_source_, ask.coef_target_, atol=1e-8)  # α = β
    np.testing.assert_allclose(ask.intercept_[0], ask.intercept_[1], atol=1e-8)  # b1 = b2


def test_asymmetric_kernel_gives_two_functions_and_matches_eq7():
    X, y = _data(70, 2)
    k = get_kernel("sne", bandwidth=3.0)
    m = AsKLSClassifier(kernel=k, C=50.0).fit(X[:50], y[:50])
    Xt = X[50:]
    fs, ft = m.decision_function(Xt, return_parts=True)
    assert np.abs(fs - ft).max() > 1e-6
    # eq. (7) by hand, with the SNE normaliser summed over the training set
    K = KernelMatrix(k, X[:50], X[:50]).to_array().astype(float)
    ys = np.where(y[:50] == m.classes_[1], 1.0, -1.0)
    b1, b2, alpha, beta = _dense_eq6(K, ys, 50.0)
    k_xX = np.exp(-((Xt[:, None] - X[None, :50]) ** 2).sum(-1) / 9.0)
    k_xX /= k_xX.sum(1, keepdims=True)
    k_Xx = np.exp(-((X[:50, None] - Xt[None]) ** 2).sum(-1) / 9.0)
    k_Xx /= np.exp(-((X[:50, None] - X[None, :50]) ** 2).sum(-1) / 9.0).sum(1)[:, None]
    np.testing.assert_allclose(fs, k_xX @ (beta * ys) + b1, atol=1e-8)
    np.testing.assert_allclose(ft, k_Xx.T @ (alpha * ys) + b2, atol=1e-8)
    np.testing.assert_allclose(m.decision_function(Xt), fs + ft, atol=1e-12)


# --------------------------------------------------------------------------- labels, OvR
def test_label_encodings_agree():
    X, y01 = _data(60, 3)
    ypm = np.where(y01 == 1, 1, -1)
    ystr = np.where(y01 == 1, "yes", "no")
    kw = dict(kernel="t", C=100.0)
    d = [AsKLSClassifier(**kw).fit(X, yy).decision_function(X) for yy in (y01, ypm, ystr)]
    np.testing.assert_allclose(d[0], d[1], atol=1e-10)
    np.testing.assert_allclose(d[0], d[2], atol=1e-10)
    m = AsKLSClassifier(**kw).fit(X, ystr)
    assert list(m.classes_) == ["no", "yes"]
    assert set(m.predict(X)) <= {"no", "yes"}
    assert np.mean(m.predict(X) == ystr) > 0.8


@pytest.mark.parametrize("merge", ["sum", "source", "target"])
def test_one_vs_rest_columns_equal_binary_fits(merge):
    X, y = _data(90, 4, classes=4)
    y = np.array(["a", "b", "c", "d"])[y]
    m = AsKLSClassifier(kernel="sne", C=30.0, merge=merge).fit(X, y)
    assert list(m.classes_) == ["a", "b", "c", "d"]
    D = m.decision_function(X)
    assert D.shape == (90, 4)
    for j, c in enumerate(m.classes_):
        b = AsKLSClassifier(kernel="sne", C=30.0, merge=merge).fit(X, (y == c).astype(int))
        np.testing.assert_allclose(D[:, j], b.decision_function(X), atol=1e-8)
    np.testing.assert_array_equal(m.predict(X), m.classes_[D.argmax(1)])
    assert m.score(X, y) > 0.7


def test_stacking_probabilities():
    X, y = _data(120, 5, classes=3)
    m = AsKLSClassifier(kernel="sne", C=30.0, merge="stack", cv=4, random_state=0).fit(X, y)
    P = m.predict_proba(X)
    assert P.shape == (120, 3)
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(m.predict(X), m.classes_[P.argmax(1)])
    assert len(m.stackers_) == 3 and m.oof_parts_[0].shape == (120, 3)
    assert m.score(X, y) > 0.7
    assert not hasattr(AsKLSClassifier(merge="sum").fit(X, y), "predict_proba")
    # refit=True: test-time parts from the full model = the merge='sum' model's parts
    r = AsKLSClassifier(kernel="sne", C=30.0, merge="stack", cv=4, refit=True,
                        random_state=0).fit(X, y)
    s = AsKLSClassifier(kernel="sne", C=30.0).fit(X, y)
    np.testing.assert_allclose(r.decision_function(X, return_parts=True)[0],
                               s.decision_function(X, return_parts=True)[0], atol=1e-10)


# --------------------------------------------------------------------------- precomputed
def test_precomputed_pair_equals_kernel_path():
    X, y = _data(60, 6)
    k = get_kernel("sne", bandwidth=2.0)
    Xtr, Xte = X[:40], X[40:]
    m = AsKLSClassifier(kernel=k, C=20.0).fit(Xtr, y[:40])
    K = KernelMatrix(k, Xtr, Xtr).to_array()
    pair = KernelPair(KernelMatrix(k, Xte, Xtr, reference=Xtr).to_array(),
                      KernelMatrix(k, Xtr, Xte, reference=Xtr).to_array())
    p = AsKLSClassifier(kernel="precomputed", C=20.0).fit(K, y[:40])
    np.testing.assert_allclose(p.decision_function(pair), m.decision_function(Xte), atol=1e-10)
    ps = AsKLSClassifier(kernel="precomputed", C=20.0).fit(sp.csr_matrix(K), y[:40])
    np.testing.assert_allclose(ps.decision_function(KernelPair(*map(sp.csr_matrix, pair))),
                               m.decision_function(Xte), atol=1e-8)
    with pytest.raises(ValueError, match="both orientations"):
        p.decision_function(pair.test_train)


def test_float32_input():
    X, y = _data(50, 7)
    d64 = AsKLSClassifier(kernel="sne", C=10.0).fit(X, y).decision_function(X)
    d32 = AsKLSClassifier(kernel="sne", C=10.0).fit(X.astype(np.float32), y
                                                         ).decision_function(X.astype(np.float32))
    np.testing.assert_allclose(d32, d64, atol=1e-3)


def test_lssvm_regressor_fits_and_matches_dense():
    rng = _rng(8)
    X = rng.uniform(-3, 3, (80, 1))
    y = np.sin(X[:, 0]) + 0.05 * rng.standard_normal(80)
    m = LSSVMRegressor(kernel="rbf", kernel_params={"gamma": 1.0}, C=100.0).fit(X, y)
    assert m.score(X, y) > 0.95
    K = get_kernel("rbf", gamma=1.0)(X, X)
    A = np.block([[np.zeros((1, 1)), np.ones((1, 80))], [np.ones((80, 1)), K + np.eye(80) / 100]])
    x = np.linalg.solve(A, np.concatenate([[0.0], y]))
    np.testing.assert_allclose(m.dual_coef_[:, 0], x[1:], atol=1e-8)
    np.testing.assert_allclose(m.intercept_[0], x[0], atol=1e-8)


# --------------------------------------------------------------------------- Nyström option
def test_nystrom_option_exact_for_low_rank_kernel():
    rng = _rng(9)
    n, r = 80, 4
    K = rng.random((n, r)) @ rng.random((r, n))  # exact rank r, asymmetric
    y = np.where(rng.random(n) > 0.5, 1, 0)
    y[:2] = [0, 1]
    exact = AsKLSClassifier(kernel="precomputed", C=3.0, solver="dense").fit(K, y)
    ny = AsKLSClassifier(kernel="precomputed", C=3.0, random_state=0,
                         nystrom={"n_components": r, "n_row_landmarks": 30,
                                  "n_col_landmarks": 30}).fit(K, y)
    np.testing.assert_allclose(ny.coef_source_, exact.coef_source_, atol=1e-6)
    np.testing.assert_allclose(ny.intercept_, exact.intercept_, atol=1e-6)


def test_nystrom_option_on_features_is_close():
    X, y = make_classification(200, 5, n_informative=3, random_state=0)
    ex = AsKLSClassifier(kernel="sne", kernel_params={"bandwidth": 3.0}, C=1e3).fit(X, y)
    ny = AsKLSClassifier(kernel="sne", kernel_params={"bandwidth": 3.0}, C=1e3,
                         nystrom=40, random_state=0).fit(X, y)
    agree = np.mean(ex.predict(X) == ny.predict(X))
    assert agree > 0.9


# --------------------------------------------------------------------------- bad input
def test_bad_input_errors():
    X, y = _data(40, 10)
    with pytest.raises(ValueError, match="1 class"):
        AsKLSClassifier().fit(X, np.zeros(40))
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        AsKLSClassifier().fit(Xn, y)
    for g in (0.0, -1.0):
        with pytest.raises(ValueError, match="C"):
            AsKLSClassifier(C=g).fit(X, y)
        with pytest.raises(ValueError, match="C"):
            LSSVMClassifier(C=g).fit(X, y)
    with pytest.raises(ValueError, match="merge"):
        AsKLSClassifier(merge="mean").fit(X, y)
    K = get_kernel("sne")(X, X)
    m = AsKLSClassifier(kernel="precomputed").fit(K, y)
    with pytest.raises(ValueError, match="orientations"):
        m.decision_function(KernelPair(np.ones((5, 40)), np.ones((40, 6))))
    with pytest.raises(ValueError, match="orientations"):
        m.decision_function(KernelPair(np.ones((5, 40)), np.ones((39, 5))))
    with pytest.raises(ValueError, match="square"):
        AsKLSClassifier(kernel="precomputed").fit(K[:, :30], y)
    with pytest.raises(ValueError, match="cv"):
        AsKLSClassifier(merge="stack", cv=1).fit(X, y)
    Xc = X.copy()
    AsKLSClassifier().fit(Xc, y)
    np.testing.assert_array_equal(Xc, X)  # caller's array untouched


# scikit-learn common checks at defaults: tests/test_sklearn_api.py
