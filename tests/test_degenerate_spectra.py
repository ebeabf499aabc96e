"""Kernels that are numerically the identity on the samples (a huge gamma, or far-apart points)
give degenerate spectra: clusters of equal eigenvalues, nilpotent transfer operators. Every
estimator either fits them correctly or says why it cannot (a ValueError naming the cause),
never an IndexError or a bare LinAlgError."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from asymkern._backend import NUMPY
from asymkern.decomposition import KernelPCA
from asymkern.operators import KoopmanOperator, PerronFrobeniusOperator


@pytest.mark.parametrize("n, r", [(80, 2), (80, 79), (300, 5)])
def test_eigh_top_on_a_cluster_of_equal_eigenvalues(n, r):
    """The centred identity I − 11ᵀ/n has the eigenvalue 1 n − 1 times: LAPACK's syevr
    returns no eigenpair for a subset of that cluster (or fails); eigh_top returns r."""
    A = np.eye(n) - 1.0 / n
    lam, Q = NUMPY.eigh_top(A, r)
    assert lam.shape == (r,) and Q.shape == (n, r)
    np.testing.assert_allclose(lam, 1.0, rtol=1e-12)
    np.testing.assert_allclose(Q.T @ Q, np.eye(r), atol=1e-12)
    np.testing.assert_allclose(A @ Q, Q * lam, atol=1e-12)


def test_kernel_pca_of_an_identity_kernel():
    X = np.random.RandomState(0).randn(80, 3)
    est = KernelPCA(n_components=3, kernel_params={"gamma": 1e300}).fit(X)
    np.testing.assert_allclose(est.eigenvalues_, 1.0, rtol=1e-12)  # the centred identity
    assert np.all(np.isfinite(est.transform(X[:5])))


@pytest.mark.parametrize("Est, kw, match", [
    (KoopmanOperator, {}, r"n_components=5 exceeds the number 0 .* numerically nilpotent"),
    (PerronFrobeniusOperator, {}, r"n_components=5 exceeds the number 0 .* nilpotent"),
    (KoopmanOperator, {"estimator": "pcr"}, r"defective .* smaller gamma"),
])
def test_nilpotent_transfer_operator_is_explained(Est, kw, match):
    """With an identity Gram matrix the time-lagged pairs estimate a shift, whose eigenvalues
    are all zero (and which has no eigendecomposition): the error says so and names the way
    out, with the n_components the user asked for."""
    X = np.random.RandomState(0).randn(80, 3)
    with warnings.catch_warnings(), pytest.raises(ValueError, match=match):
        warnings.simplefilter("ignore")
        Est(kernel_params={"gamma": 1e300}, **kw).fit(X)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize("scale", [1e-150, 1e-200, 1e150, 1e200])
def test_arpack_on_extreme_magnitudes(scale, fmt):
    """ARPACK iterates on GᵀG, whose entries leave float64's normal range for entries of
    1e-150 or 1e200: the singular values came back 5–84 % off (1e-150, no error). G is now
    scaled by a power of two first; the case below was found by tests/test_properties_linalg."""
    import scipy.sparse as sp

    from asymkern.linalg import top_svd

    G = np.full((8, 12), 1.28840179)
    G[4, 11] = -1.29715893
    G = np.vstack([G, np.random.default_rng(0).standard_normal((6, 12))]) * scale
    ref = np.linalg.svd(G, compute_uv=False)[:3]
    A = sp.csr_matrix(G) if fmt == "csr" else G
    before = G.copy()
    res = top_svd(A, 3, solver="arpack", random_state=0)
    np.testing.assert_allclose(res.s, ref, rtol=1e-9)
    np.testing.assert_allclose(res.U.T @ res.U, np.eye(3), atol=1e-9)
    np.testing.assert_allclose((A @ res.V) if fmt == "dense" else A @ res.V, res.U * res.s,
                               rtol=0, atol=1e-9 * ref[0])
    np.testing.assert_array_equal(G, before)


@pytest.mark.parametrize("solver", ["arpack", "randomized", "block_krylov"])
@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_iterative_solvers_on_extreme_magnitudes_every_executor(any_backend, solver, scale):
    """The iterative solvers run on GᵀG: for entries of 1e-200 its products underflowed (the
    randomized singular values came back 27 % off on numpy, torch and Dask, silently) and for
    1e200 they overflowed (non-convergence errors that did not name G). Each executor now runs
    them on a power-of-two multiple of a formed G."""
    from _backends import as_backend, to_np

    from asymkern.decomposition import KernelSVD

    rs = np.random.RandomState(3)
    U, _ = np.linalg.qr(rs.randn(50, 40))
    V, _ = np.linalg.qr(rs.randn(40, 40))
    G = (U * 0.5 ** np.arange(40)) @ V.T * scale
    ref = np.linalg.svd(G, compute_uv=False)[:3]
    est = KernelSVD(n_components=3, kernel="precomputed", solver=solver,
                    random_state=0).fit(as_backend(G, any_backend))
    np.testing.assert_allclose(to_np(est.singular_values_), ref, rtol=1e-8)
