"""GSA from one Householder QR of K_nm against the thin-SVD route it replaces.

``ridge_gsa_householder`` (Li, Liu and Zhang, eq. (20)) must give the ŵ and α̂ of
``ridge_gsa`` (thin SVD of the formed G_cᵀ), with and without centring and sample weights,
with given ridge weights, and on every executor; and the fitted estimator must equal exact
kernel ridge regression when every point is a landmark, where K is ill-conditioned.
"""

from __future__ import annotations

import numpy as np
import pytest
from _backends import as_backend, to_np, tol

from asymkern._backend import ops_of
from asymkern._shared.nystrom_basis import LandmarkRows
from asymkern.kernels import get_kernel
from asymkern.nystrom import NystromKernelRidge
from asymkern.nystrom._algebra import (
    _weighted_mean_knm,
    features,
    ridge_gsa,
    ridge_gsa_householder,
)


class _Src:
    """K_nm on an executor, read in row blocks (the streamed source of the torch path)."""

    def __init__(self, K):
        self.K, self.shape, self.ops = K, tuple(K.shape), ops_of(K)

    def step(self, k):
        return 7  # several uneven blocks

    def knm(self, a, e):
        return self.K[a:e]


def _formed(Knm):
    """A formed K_nm (as a sketch's K S): read in one product."""
    return LandmarkRows(Knm, Knm=Knm)


def _problem(n=60, m=12, k=2, seed=0):
    rng = np.random.default_rng(seed)
    X, C = rng.normal(size=(n, 3)), rng.normal(size=(m, 3)) + 0.5
    Knm = get_kernel("rbf", gamma=0.3)(X, C)
    Kmm = get_kernel("rbf", gamma=0.3)(C)
    lam, U = np.linalg.eigh(Kmm)
    A = U[:, lam > 1e-10] / np.sqrt(lam[lam > 1e-10])  # K_mm^{-1/2} on its range
    Y = rng.normal(size=(n, k)) + 3.0
    sw = rng.uniform(0.2, 3.0, size=n)
    return Knm, A, Y, sw


def _reference(Knm, A, Y, sw, center, alpha, w_given=None):
    """The thin-SVD route: k̄, G_cᵀ formed, ridge_gsa."""
    src = _formed(Knm)
    kbar = _weighted_mean_knm(src, sw) if center else None
    w, dual = ridge_gsa(ops_of(Knm), features(src, A, kbar), Y, sw, alpha, np.float64,
                        "eq20", w_given)
    return w, dual, kbar


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("given", [False, True])
def test_equals_thin_svd_route(backend, center, weighted, given):
    Knm, A, Y, sw = _problem()
    sw = sw if weighted else None
    alpha = 0.05
    if center:  # the targets the estimator passes: centred on their (weighted) mean
        Y = Y - np.average(Y, axis=0, weights=sw)
    w_given = np.random.default_rng(1).normal(size=(A.shape[1], Y.shape[1])) if given else None
    w_ref, dual_ref, kbar_ref = _reference(Knm, A, Y, sw, center, alpha, w_given)
    src = _Src(as_backend(Knm, backend))
    w, dual, kbar = ridge_gsa_householder(src, A, Y, sw, alpha, center, np.float64, w_given)
    scale = np.abs(dual_ref).max()
    np.testing.assert_allclose(to_np(w), w_ref, rtol=tol(1e-9, backend),
                               atol=tol(1e-9, backend) * np.abs(w_ref).max())
    np.testing.assert_allclose(to_np(dual), dual_ref, rtol=0, atol=tol(1e-9, backend) * scale)
    if center:
        np.testing.assert_allclose(kbar, kbar_ref, rtol=1e-12)
    else:
        assert kbar is None
    Knm_before = Knm.copy()
    ridge_gsa_householder(_formed(Knm), A, Y, sw, alpha, center, np.float64, w_given)
    np.testing.assert_array_equal(Knm, Knm_before)  # the formed K_nm is never written to


def test_more_columns_than_samples():
    """Fewer samples than features: the factorised [e, K_nm A] gets zero rows (Q is I on
    them), the same solution as the thin SVD of the formed G_cᵀ to rounding."""
    Knm, A, Y, sw = _problem(n=10, m=12)
    Y = Y - Y.mean(0)
    w_ref, dual_ref, kbar_ref = _reference(Knm, A, Y, None, True, 0.1)
    w, dual, kbar = ridge_gsa_householder(_formed(Knm), A, Y, None, 0.1, True, np.float64)
    assert dual.shape == dual_ref.shape
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=1e-10 * np.abs(w_ref).max())
    np.testing.assert_allclose(dual, dual_ref, rtol=0, atol=1e-10 * np.abs(dual_ref).max())
    np.testing.assert_allclose(kbar, kbar_ref, rtol=1e-13)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_wide_bandwidth_every_point_a_landmark_is_exact_krr(fit_intercept):
    """γ = 0.01 on 4-D data: K_nm is numerically of low rank and the basis A has entries of
    about Λ^{-1/2}. Centring K_nm (or the product K_nm A) by subtraction, or multiplying the R
    of K_nm by A, left rounding noise in G_cᵀ's small singular directions, which eq. (20)
    weights by 1/α: predictions 1.1e-3 from exact kernel ridge regression (cond(K_c + αI) is
    33). Factorising [e, K_nm A] keeps them at 3e-11."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(160, 4))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=160) + 3.0
    Xt = rng.normal(size=(50, 4))
    kw = dict(kernel_params={"gamma": 0.01}, alpha=0.1, fit_intercept=fit_intercept)
    exact = NystromKernelRidge(mode="exact", **kw).fit(X, y).predict(Xt)
    for n_landmarks in (160, 120):  # n < s + 1 (zero rows appended) and n > s + 1
        gsa = NystromKernelRidge(mode="gsa", n_landmarks=n_landmarks, random_state=2,
                                 **kw).fit(X, y)
        if n_landmarks == 160:
            np.testing.assert_allclose(gsa.predict(Xt), exact, rtol=0,
                                       atol=1e-8 * np.abs(exact).max())


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_every_point_a_landmark_is_exact_krr(fit_intercept):
    """K (RBF, n = 200 in 4-D) has κ ≈ 10⁷; the centring direction must not leak into the
    factorisation's basis (it did when K_nm was centred before the QR: 3e-10 relative)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=200)
    Xt = rng.normal(size=(40, 4))
    kw = dict(kernel_params={"gamma": 0.2}, alpha=0.3, fit_intercept=fit_intercept)
    exact = NystromKernelRidge(mode="exact", **kw).fit(X, y).predict(Xt)
    gsa = NystromKernelRidge(mode="gsa", n_landmarks=200, random_state=0, **kw).fit(X, y)
    np.testing.assert_allclose(gsa.predict(Xt), exact, rtol=0, atol=1e-11 * np.abs(exact).max())
