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
def test_conditional_mean_embedding(backend, dtype, n_landmarks, views):
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
def test_koopman(backend, dtype, estimator, n_landmarks, trajectory):
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
