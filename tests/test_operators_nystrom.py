"""In-memory landmark (Nyström-restricted) ConditionalMeanEmbedding and KoopmanOperator.

References: the exact estimators with every sample as a landmark (must agree to rounding) and
the Ornstein–Uhlenbeck process, whose Koopman eigenvalues are exp(−kθτ).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from asymkern.operators import ConditionalMeanEmbedding, KoopmanOperator


def _regression(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    Y = np.column_stack([np.sin(2 * X[:, 0]), X[:, 0] * X[:, 1]]) + 0.05 * rng.normal(size=(n, 2))
    return X, Y, rng.uniform(-2, 2, (30, 2))


def _ou(N, theta=1.0, tau=0.1, seed=0):
    """Exactly discretised Ornstein–Uhlenbeck process dx = −θx dt + √θ dW (stationary law
    N(0, 1/2)): x_{t+1} = e^{−θτ} x_t + √((1 − e^{−2θτ})/2) ξ_t."""
    rng = np.random.default_rng(seed)
    a = np.exp(-theta * tau)
    x = np.empty(N)
    x[0] = rng.normal() * np.sqrt(0.5)
    noise = rng.normal(size=N) * np.sqrt((1 - a * a) / 2)
    for t in range(1, N):
        x[t] = a * x[t - 1] + noise[t]
    return x[:, None]


def _rel(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(np.asarray(b)).max())


# ------------------------------------------------------------------------- all points = exact
def test_cme_all_landmarks_equals_exact():
    X, Y, Xt = _regression()
    kw = dict(kernel_x_params={"gamma": 2.0}, alpha=1e-3)
    exact = ConditionalMeanEmbedding(**kw).fit(X, Y)
    full = ConditionalMeanEmbedding(**kw, landmarks=np.arange(X.shape[0])).fit(X, Y)
    assert exact.landmarks_ is None
    assert _rel(full.predict(Xt), exact.predict(Xt)) < 1e-8
    assert _rel(full.weights(Xt), exact.weights(Xt)) < 1e-8
    g = lambda Z: Z[:, :1] ** 2  # noqa: E731
    assert _rel(full.expectation(g, Xt), exact.expectation(g, Xt)) < 1e-8
    # the operator representation is the same operator (its SVD through the n×n route)
    assert _rel(full.svd(2).singular_values, exact.svd(2).singular_values) < 1e-8


def _pairs(n=90, seed=1):
    """Time-lagged pairs of a linear system y = A x + noise (rotation and contraction)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 2))
    A = 0.9 * np.array([[np.cos(0.3), -np.sin(0.3)], [np.sin(0.3), np.cos(0.3)]])
    return X, X @ A.T + 0.01 * rng.normal(size=(n, 2))


def test_koopman_all_landmarks_equals_exact():
    X, Y = _pairs()  # spread points: a well-conditioned Gram matrix (nothing truncated)
    kw = dict(kernel_params={"gamma": 2.0}, alpha=1e-4, n_components=4)
    exact = KoopmanOperator(**kw).fit(X, Y)
    full = KoopmanOperator(**kw, landmarks=np.arange(X.shape[0])).fit(X, Y)
    assert full._T.shape == (90, 90)
    assert _rel(full.eigenvalues_, exact.eigenvalues_) < 1e-8
    Xq = np.random.default_rng(5).uniform(-2.5, 2.5, (25, 2))
    assert _rel(full.predict(Xq), exact.predict(Xq)) < 1e-8
    fe, ff = exact.eigenfunctions_(Xq), full.eigenfunctions_(Xq)
    for i in range(4):  # eigenfunctions agree up to a unit factor (sign or complex phase)
        ph = np.vdot(ff[:, i], fe[:, i])
        assert _rel(ff[:, i] * ph / abs(ph), fe[:, i]) < 1e-7
    assert _rel(full.eig(3, method="auxiliary").eigenvalues, exact.eigenvalues_[:3]) < 1e-8
    np.testing.assert_allclose(full.timescales_, exact.timescales_, rtol=1e-7)


# ------------------------------------------------------------------------- known eigenvalues
def test_koopman_landmarks_ornstein_uhlenbeck_eigenvalues():
    theta, tau = 1.0, 0.1
    T = _ou(3000, theta, tau, seed=2)
    est = KoopmanOperator(kernel_params={"gamma": 0.5}, alpha=1e-5, n_components=3,
                          timestep=tau, n_landmarks=80, random_state=0).fit(T)
    analytic = np.exp(-theta * tau * np.arange(3))
    lam = np.real(est.eigenvalues_)
    np.testing.assert_allclose(lam, analytic, atol=0.03)
    assert np.all(np.abs(np.imag(est.eigenvalues_)) < 1e-8)
    # timescales −τ/ln λ of the first non-trivial eigenfunction ≈ 1/θ
    assert abs(est.timescales_[1] - 1 / theta) < 0.35
    # predictions: E[x_{t+τ} | x] = e^{−θτ} x
    Xq = np.linspace(-1, 1, 11)[:, None]
    np.testing.assert_allclose(est.predict(Xq), analytic[1] * Xq, atol=0.05)


# ------------------------------------------------------------------------- options, errors
def test_landmark_draw_reproducible_and_default_unchanged():
    X, Y, Xt = _regression()
    a = ConditionalMeanEmbedding(n_landmarks=30, random_state=3).fit(X, Y)
    b = ConditionalMeanEmbedding(n_landmarks=30, random_state=3).fit(X, Y)
    c = ConditionalMeanEmbedding(n_landmarks=30, random_state=4).fit(X, Y)
    np.testing.assert_array_equal(a.landmarks_, b.landmarks_)
    np.testing.assert_array_equal(a.predict(Xt), b.predict(Xt))
    assert not np.array_equal(a.landmarks_, c.landmarks_)
    assert a.landmarks_.size == 30 and a.dual_coef_.shape == (30, 2)
    p = ConditionalMeanEmbedding().get_params()
    assert p["n_landmarks"] is None and p["landmarks"] == "uniform"
    assert KoopmanOperator().get_params()["n_landmarks"] is None


def test_landmarks_keep_float32_and_pickle():
    X, Y, Xt = _regression()
    est = ConditionalMeanEmbedding(n_landmarks=25, random_state=0).fit(X.astype(np.float32),
                                                                       Y[:, 0])
    out = est.predict(Xt.astype(np.float32))
    assert out.dtype == np.float32 and out.shape == (30,)
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.predict(Xt), est.predict(Xt))
    T = _ou(200)
    k = KoopmanOperator(n_landmarks=20, random_state=0, n_components=2).fit(T.astype(np.float32))
    assert k.predict(T[:5].astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize("kwargs, match", [
    ({"n_landmarks": 0}, "n_landmarks must be None or a positive integer"),
    ({"n_landmarks": 5, "landmarks": "kmeans"}, "landmarks must be 'uniform' or an index"),
    ({"landmarks": np.array([0, 1, 1])}, "duplicates"),
    ({"landmarks": np.array([0, 1, 200])}, r"landmarks must lie in \[0, 120\)"),
    ({"n_landmarks": 4, "landmarks": np.array([0, 1, 2])}, "does not match the 3 given"),
])
def test_bad_landmark_options(kwargs, match):
    X, Y, _ = _regression()
    with pytest.raises(ValueError, match=match):
        ConditionalMeanEmbedding(**kwargs).fit(X, Y)
    with pytest.raises(ValueError, match=match):
        KoopmanOperator(**kwargs).fit(np.vstack([X, X[:1]]))
