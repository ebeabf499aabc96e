"""The six operator estimators on every executor (the ``backend`` fixture: numpy, torch),
against the numpy results, float32 and float64 inputs.

Each case fits the numpy estimator (the reference) and the same estimator on the backend's
arrays, then compares what a user reads: the spectrum (eigenvalues, singular values,
canonical correlations), the transformed values or forecasts, and the eigen-/singular
functions up to the sign (complex phase) that LAPACK leaves free. Tolerances are those of the
torch parity tests (``tests/test_torch_*.py``): float64 relative 1e-12 to 1e-8 depending on the
conditioning of the estimator (``tol`` widens them on CUDA), float32 outputs 1e-4 relative
(both paths compute in float64 and round the outputs).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _backends import as_backend, to_np, tol

from asymkern.operators import (
    ConditionalMeanEmbedding,
    CovarianceOperator,
    CrossCovarianceOperator,
    KernelCCA,
    KoopmanOperator,
    PerronFrobeniusOperator,
)

DTYPES = (np.float64, np.float32)


@pytest.fixture(scope="module")
def views():
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, size=(70, 2))
    Y = np.hstack([np.sin(2 * X[:, :1]), X[:, 1:] ** 2]) + 0.05 * rng.randn(70, 2)
    return X, Y, rng.uniform(-1, 1, size=(9, 2)), rng.uniform(-1, 1, size=(9, 2))


@pytest.fixture(scope="module")
def trajectory():
    rng = np.random.RandomState(3)
    x = np.zeros((90, 2))
    for t in range(89):
        x[t + 1] = 0.9 * x[t] @ np.array([[0.9, -0.3], [0.3, 0.9]]) + 0.2 * rng.randn(2)
    return x, x[5:13] + 0.01 * rng.randn(8, 2)  # query states near the data


def _fit(est, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rank / clipping warnings: tested elsewhere
        return est.fit(*args)


def _rel(got, want) -> float:
    got, want = np.asarray(to_np(got)), np.asarray(to_np(want))
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300))


def _aligned(got, want) -> float:
    """Relative distance of the columns of ``got`` to those of ``want`` after removing the
    sign (complex phase) of each column."""
    got = np.asarray(to_np(got), dtype=np.complex128)
    want = np.asarray(to_np(want), dtype=np.complex128)
    c = np.sum(np.conj(got) * want, axis=0)
    ph = np.where(np.abs(c) > 0, c / np.where(np.abs(c) > 0, np.abs(c), 1.0), 1.0)
    return float(np.max(np.abs(got * ph - want)) / max(np.max(np.abs(want)), 1e-300))


def _check(got, want, t64: float, dtype, backend: str, aligned: bool = False):
    err = (_aligned if aligned else _rel)(got, want)
    assert err < (1e-4 if dtype == np.float32 else tol(t64, backend)), err


def _landmarks_on_dask(backend: str, n_landmarks) -> None:
    """On dask inputs the estimators need landmarks (the exact fit forms the n×n Gram
    matrix; refused with a ValueError, tested in tests/test_dask_askls_operators.py)."""
    if backend == "dask" and n_landmarks is None:
        pytest.skip("the exact (landmark-free) fit is not available on dask inputs")


def _spectrum_tol(dtype, backend, t64):
    return 1e-4 if dtype == np.float32 else tol(t64, backend)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("jitter", [0.0, 1e-3])
def test_covariance(backend, dtype, center, jitter, views):
    X, _, Xq, _ = views
    kw = dict(kernel_params={"gamma": 2.0}, n_components=4, center=center, jitter=jitter)
    a = _fit(CovarianceOperator(**kw), X.astype(dtype))
    b = _fit(CovarianceOperator(**kw), as_backend(X, backend, dtype))
    assert b.n_components_ == a.n_components_
    _check(b.eigenvalues_, a.eigenvalues_, 1e-12, np.float64, backend)
    out = b.transform(as_backend(Xq, backend, dtype))
    assert to_np(out).dtype == dtype
    _check(out, a.transform(Xq.astype(dtype)), 1e-11, dtype, backend, aligned=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("center", [False, True])
def test_cross_covariance(backend, dtype, center, views):
    X, Y, Xq, Yq = views
    kw = dict(n_components=3, center=center, jitter=1e-3, kernel_y_params={"gamma": 2.0})
    a = _fit(CrossCovarianceOperator(**kw), X.astype(dtype), Y.astype(dtype))
    b = _fit(CrossCovarianceOperator(**kw), as_backend(X, backend, dtype),
             as_backend(Y, backend, dtype))
    assert b.n_components_ == a.n_components_
    _check(b.singular_values_, a.singular_values_, 1e-12, np.float64, backend)
    xs, ys = b.transform(as_backend(Xq, backend, dtype), as_backend(Yq, backend, dtype))
    xa, ya = a.transform(Xq.astype(dtype), Yq.astype(dtype))
    assert to_np(xs).dtype == dtype
    _check(xs, xa, 1e-10, dtype, backend, aligned=True)
    _check(ys, ya, 1e-10, dtype, backend, aligned=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("center", [True, False])
def test_kernel_cca(backend, dtype, center, views):
    X, Y, Xq, Yq = views
    kw = dict(n_components=2, center=center, alpha=1e-2)
    a = _fit(KernelCCA(**kw), X.astype(dtype), Y.astype(dtype))
    b = _fit(KernelCCA(**kw), as_backend(X, backend, dtype), as_backend(Y, backend, dtype))
    _check(b.canonical_correlations_, a.canonical_correlations_, 1e-12, np.float64, backend)
    xs, ys = b.transform(as_backend(Xq, backend, dtype), as_backend(Yq, backend, dtype))
    xa, ya = a.transform(Xq.astype(dtype), Yq.astype(dtype))
    _check(xs, xa, 1e-9, dtype, backend, aligned=True)
    _check(ys, ya, 1e-9, dtype, backend, aligned=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_landmarks", [None, 30])
def test_conditional_mean_embedding(any_backend, dtype, n_landmarks, views):
    backend = any_backend
    _landmarks_on_dask(backend, n_landmarks)
    X, Y, Xq, _ = views
    kw = dict(alpha=1e-3, n_landmarks=n_landmarks, random_state=0)
    a = _fit(ConditionalMeanEmbedding(**kw), X.astype(dtype), Y.astype(dtype))
    b = _fit(ConditionalMeanEmbedding(**kw), as_backend(X, backend, dtype),
             as_backend(Y, backend, dtype))
    out = b.predict(as_backend(Xq, backend, dtype))
    assert to_np(out).dtype == dtype
    _check(out, a.predict(Xq.astype(dtype)), 1e-10, dtype, backend)
    if n_landmarks is None:
        _check(b.weights(as_backend(Xq, backend, dtype)), a.weights(Xq.astype(dtype)), 1e-10,
               dtype, backend)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("estimator", ["full", "pcr", "rrr"])
@pytest.mark.parametrize("n_landmarks", [None, 40])
def test_koopman(any_backend, dtype, estimator, n_landmarks, trajectory):
    backend = any_backend
    _landmarks_on_dask(backend, n_landmarks)
    x, xq = trajectory
    kw = dict(kernel_params={"gamma": 5.0}, alpha=1e-4, n_components=3, estimator=estimator,
              rank=4, n_landmarks=n_landmarks, random_state=0)
    a = _fit(KoopmanOperator(**kw), x.astype(dtype))
    b = _fit(KoopmanOperator(**kw), as_backend(x, backend, dtype))
    lam = a.eigenvalues_
    assert np.max(np.abs(to_np(b.eigenvalues_) - lam)) <= _spectrum_tol(
        dtype, backend, 1e-9) * abs(lam[0])
    _check(b.eigenfunctions_(xq), a.eigenfunctions_(xq), 1e-8, dtype, backend, aligned=True)
    for k in (1, 3):
        out = b.predict(as_backend(xq, backend, dtype), n_steps=k)
        assert to_np(out).dtype == dtype
        _check(out, a.predict(xq.astype(dtype), n_steps=k), 1e-9, dtype, backend)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("estimator", ["full", "pcr", "rrr"])
def test_perron_frobenius(backend, dtype, estimator, trajectory):
    x, xq = trajectory
    kw = dict(kernel_params={"gamma": 5.0}, alpha=1e-4, n_components=3, estimator=estimator,
              rank=4)
    a = _fit(PerronFrobeniusOperator(**kw), x.astype(dtype))
    b = _fit(PerronFrobeniusOperator(**kw), as_backend(x, backend, dtype))
    lam = a.eigenvalues_
    assert np.max(np.abs(to_np(b.eigenvalues_) - lam)) <= _spectrum_tol(dtype, backend, 1e-9) * \
        abs(lam[0])
    _check(b.eigenfunctions_(xq), a.eigenfunctions_(xq), 1e-8, dtype, backend, aligned=True)
    assert b.lagged_gram_solver_ == a.lagged_gram_solver_


BAD_PARAMETERS = [
    (CovarianceOperator, {"jitter": -1.0}, r"jitter must be a finite number >= 0"),
    (CovarianceOperator, {"jitter": float("nan")}, r"jitter must be a finite number >= 0"),
    (CovarianceOperator, {"jitter": True}, r"jitter must be a finite number >= 0"),
    (CrossCovarianceOperator, {"jitter": -1.0}, r"jitter must be a finite number >= 0"),
    (CovarianceOperator, {"n_components": 0}, r"n_components must be an integer >= 1"),
    (CrossCovarianceOperator, {"n_components": 1.5}, r"n_components must be an integer >= 1"),
    (KernelCCA, {"n_components": -1}, r"n_components must be an integer >= 1"),
    (CrossCovarianceOperator, {"method": "foo"}, r"unknown method 'foo'"),
    (KernelCCA, {"method": "foo"}, r"unknown method 'foo'"),
    (KernelCCA, {"alpha": 0.0}, r"alpha must be finite and > 0"),
    (ConditionalMeanEmbedding, {"alpha": -1.0}, r"alpha must be finite and > 0"),
    (KoopmanOperator, {"estimator": "foo"}, r"estimator must be one of"),
    (KoopmanOperator, {"lag": 0}, r"lag must be an integer >= 1"),
    (PerronFrobeniusOperator, {"timestep": -1.0}, r"timestep must be finite and > 0"),
]


@pytest.mark.parametrize("cls, params, match", BAD_PARAMETERS)
def test_bad_parameter_same_error_on_every_backend(backend, cls, params, match, views):
    """A bad parameter is refused before the fit goes to an executor: the same ValueError,
    with the same message, on every backend."""
    X, Y, _, _ = views
    args = (as_backend(X, backend),)
    if cls in (CrossCovarianceOperator, KernelCCA, ConditionalMeanEmbedding):
        args = args + (as_backend(Y, backend),)
    with pytest.raises(ValueError, match=match):
        cls(**params).fit(*args)


# ------------------------------------------------- the kernel QR route on every executor
def _rank_deficient_grams():
    """Gram matrices with a numerically low rank: the linear kernel (rank 3), the polynomial
    kernel (rank ≤ 20) and the RBF kernel of 1-D samples (eigenvalues decaying below
    n·eps·max diag)."""
    from asymkern.kernels import get_kernel

    rng = np.random.RandomState(5)
    X = rng.uniform(-1, 1, size=(80, 3))
    return {"linear": get_kernel("linear")(X), "polynomial": get_kernel("polynomial")(X),
            "rbf-1d": get_kernel("rbf")(X[:, :1])}


@pytest.mark.parametrize("name", ["linear", "polynomial", "rbf-1d"])
def test_pivoted_cholesky_primitive(backend, name):
    """``ArrayOps.pivoted_cholesky`` (LAPACK pstrf on numpy, its outer-product loop on torch):
    the same pivots and the same numerical rank as LAPACK, and G[piv][:, piv] = UᵀU."""
    from asymkern._backend import NUMPY, ops_of

    G = _rank_deficient_grams()[name]
    m = G.shape[0]
    tol_abs = m * np.finfo(np.float64).eps * G.diagonal().max()
    U0, piv0, r0 = NUMPY.pivoted_cholesky(G, tol_abs)
    Gb = as_backend(G, backend)
    U, piv, r = ops_of(Gb).pivoted_cholesky(Gb, tol_abs)
    assert r == r0 < m
    np.testing.assert_array_equal(np.asarray(piv)[:r], piv0[:r0])
    U = to_np(U)
    assert np.allclose(np.tril(U[:, :r], -1), 0)
    Gp = G[np.ix_(piv0, piv0)]
    assert np.max(np.abs(U.T @ U - Gp)) <= 1e3 * tol_abs
    assert np.max(np.abs(U - U0)) <= tol(1e-8, backend) * np.sqrt(G.diagonal().max())


def test_pivoted_cholesky_stops_on_zero_and_nan(backend):
    from asymkern._backend import ops_of

    for G in (np.zeros((4, 4)), np.full((3, 3), np.nan)):
        Gb = as_backend(G, backend)
        assert ops_of(Gb).pivoted_cholesky(Gb, 1e-12)[2] == 0


@pytest.mark.parametrize("name", ["linear", "polynomial", "rbf-1d"])
def test_kernel_qr_route_same_rank(backend, name):
    """kernel_qr and gram_eigh on the executor's arrays keep the numpy route's rank rule (the
    pivoted Cholesky's n·eps·max diag): the same rank, pivots and eigenvalues."""
    from asymkern.linalg import gram_eigh, kernel_qr

    G = _rank_deficient_grams()[name]
    Gb = as_backend(G, backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        F0, F = kernel_qr(G), kernel_qr(Gb)
    assert F.rank == F0.rank < G.shape[0]
    np.testing.assert_array_equal(F.perm, F0.perm)
    E0, E = gram_eigh(G), gram_eigh(Gb)
    assert E.rank == E0.rank
    np.testing.assert_allclose(to_np(E.evals), E0.evals, rtol=0,
                               atol=tol(1e-12, backend) * E0.evals[0])


@pytest.mark.parametrize("kernel,params", [("linear", None), ("polynomial", None),
                                           ("rbf", {"gamma": 0.05})])
@pytest.mark.parametrize("center", [False, True])
def test_rank_deficient_fits_agree(backend, kernel, params, center):
    """Without jitter, on numerically singular Gram matrices: the same clipping
    (``n_components_``), the spectrum to 1e-12 of its largest value and the functions of x to
    1e-8 relative up to sign, and a dense reference for the covariance's eigenvalues. (The sign
    rule looks at the coefficients, which a singular Gram matrix leaves undetermined along its
    null space, so the signs are compared only on full-rank problems, as in
    tests/test_torch_operators.py.) The functions of y (an RBF Gram of numerical rank 68 of
    120) agree to 1e-7: they weigh the last kept pivots, whose rounding the data's order alone
    moves by ~4e-9 on numpy itself."""
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, (120, 3))
    Y = np.c_[np.sin(2 * X[:, :1]), X[:, 1:2] ** 2] + 0.01 * rng.randn(120, 2)
    Xq, Yq = rng.uniform(-1, 1, (15, 3)), 0.5 * rng.randn(15, 2)
    B = lambda a: as_backend(a, backend)  # noqa: E731
    kw = dict(kernel=kernel, kernel_params=params, n_components=8, center=center)
    a = _fit(CovarianceOperator(**kw), X)
    b = _fit(CovarianceOperator(**kw), B(X))
    assert b.n_components_ == a.n_components_
    _check(b.eigenvalues_, a.eigenvalues_, 1e-12, np.float64, backend)
    _check(b.transform(B(Xq)), a.transform(Xq), 1e-8, np.float64, backend, aligned=True)
    G = b.operator_.gram_in
    dense = np.linalg.eigvalsh(G / G.shape[0])[::-1][: b.n_components_]
    assert np.max(np.abs(to_np(b.eigenvalues_) - dense)) <= tol(1e-12, backend) * dense[0]
    kw = dict(kernel_x=kernel, kernel_x_params=params, n_components=4, center=center)
    for cls, extra in ((CrossCovarianceOperator, {}), (KernelCCA, {"alpha": 1e-3})):
        a = _fit(cls(**kw, **extra), X, Y)
        b = _fit(cls(**kw, **extra), B(X), B(Y))
        assert b.n_components_ == a.n_components_
        sa = a.singular_values_ if cls is CrossCovarianceOperator else a.canonical_correlations_
        sb = b.singular_values_ if cls is CrossCovarianceOperator else b.canonical_correlations_
        _check(sb, sa, 1e-12, np.float64, backend)
        (xa, ya), (xb, yb) = a.transform(Xq, Yq), b.transform(B(Xq), B(Yq))
        _check(xb, xa, 1e-8, np.float64, backend, aligned=True)
        _check(yb, ya, 1e-7, np.float64, backend, aligned=True)
