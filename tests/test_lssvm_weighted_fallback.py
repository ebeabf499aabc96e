"""Weighted LS-SVM / AsK-LS systems that need the ridge fallback: every solver, the dense
reference included, solves the same scaled system (kernel S K S, borders √v; see the notes of
``asymkern.lssvm._solvers``), so integer weights still equal repeated rows and the solvers
agree with each other. The dense reference once applied its condition check and its ridge
fallback to the unscaled system, and its answer moved by 0.4 on these problems."""

import warnings

import numpy as np
import pytest

from asymkern.lssvm import LSSVMRegressor, askls_solve, lssvm_solve
from asymkern.lssvm._solvers import IllConditionedWarning


def _problem(asymmetric: bool):
    rng = np.random.RandomState(0)
    X = rng.randn(30, 2)
    X[1] = X[0]  # a repeated point: at C = 1e10 the system is numerically singular
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = np.exp(-0.5 * D)
    if asymmetric:  # row-normalised (SNE-like), still with two equal rows and columns
        K = K / K.sum(axis=1, keepdims=True)
    y = np.where(rng.randn(30) > 0, 1.0, -1.0)
    v = rng.randint(1, 4, 30).astype(float)
    return K, y, v, np.repeat(np.arange(30), v.astype(int))


def _solve(solve, K, y, method, v=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllConditionedWarning)
        return solve(K, y, 1e10, method=method, sample_weight=v)


@pytest.mark.parametrize("method", ["chol", "eig", "dense"])
def test_lssvm_weights_equal_repeated_rows_in_the_fallback(method):
    K, y, v, rep = _problem(asymmetric=False)
    w = _solve(lssvm_solve, K, y, method, v)
    r = _solve(lssvm_solve, K[np.ix_(rep, rep)], y[rep], method)
    assert w.fallback and r.fallback  # the case under test
    f_w = K @ w.coef[0][:, 0] + w.bias[0, 0]
    f_r = K[:, rep] @ r.coef[0][:, 0] + r.bias[0, 0]
    np.testing.assert_allclose(f_w, f_r, atol=1e-8)
    ref = _solve(lssvm_solve, K, y, "chol", v)
    np.testing.assert_allclose(f_w, K @ ref.coef[0][:, 0] + ref.bias[0, 0], atol=1e-8)


@pytest.mark.parametrize("method", ["schur", "eig", "dense"])
def test_askls_weights_equal_repeated_rows_in_the_fallback(method):
    K, y, v, rep = _problem(asymmetric=True)
    w = _solve(askls_solve, K, y, method, v)
    r = _solve(askls_solve, K[np.ix_(rep, rep)], y[rep], method)
    assert w.fallback and r.fallback
    ref = _solve(askls_solve, K, y, "schur", v)

    def source_target(sol, Kc):  # f_s = K[:, ·] ã + b1, f_t = K[·, :]ᵀ b̃ + b2 on the 30 points
        Kr = Kc if Kc is K else K[:, rep]
        Kt = Kc.T if Kc is K else K[rep, :].T
        return (Kr @ sol.coef[0][:, 0] + sol.bias[0, 0], Kt @ sol.coef[1][:, 0] + sol.bias[1, 0])

    for a, b in zip(source_target(w, K), source_target(r, None)):
        np.testing.assert_allclose(a, b, atol=1e-8)
    for a, b in zip(source_target(w, K), source_target(ref, K)):
        np.testing.assert_allclose(a, b, atol=1e-8)


def test_estimator_dense_solver_agrees_with_auto_under_weights():
    rng = np.random.RandomState(0)
    X = rng.randn(30, 2)
    X[1] = X[0]
    y = rng.randn(30)
    v = rng.randint(1, 4, 30).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllConditionedWarning)
        dense = LSSVMRegressor(C=1e10, solver="dense").fit(X, y, sample_weight=v)
        auto = LSSVMRegressor(C=1e10, solver="auto").fit(X, y, sample_weight=v)
    assert dense.fallback_
    np.testing.assert_allclose(dense.predict(X), auto.predict(X), atol=1e-8)
