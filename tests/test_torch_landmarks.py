"""The landmark (Nyström) operator estimators on the torch backend (issue 16), on device tensors:
ConditionalMeanEmbedding and KoopmanOperator with ``n_landmarks`` / landmark indices equal the
numpy path, and with every sample a landmark the exact estimator (dense solve).

The whitening T = Q Λ^{-1/2} of K_LL amplifies rounding differences of the kernel values by
up to 1/√λ_min; with a smooth kernel and many landmarks (K_LL numerically singular) the numpy
path itself moves by ~1e-9 when its inputs change by one ulp, and torch agrees with it to the
same level. The tests use kernels with a well-conditioned K_LL (gamma = 5), where both paths
agree to rounding (1e-12).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import TEST_DEVICE, dtol, tensor, to_np  # noqa: E402

from asymkern._dispatch import is_torch_tensor  # noqa: E402
from asymkern.kernels import get_kernel  # noqa: E402
from asymkern.operators import ConditionalMeanEmbedding, KoopmanOperator  # noqa: E402

_np = to_np


def _t(a):
    return tensor(a)


def _rel(got, want):
    got, want = _np(got), np.asarray(want)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(400, 2))
    Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1])] + 0.05 * rng.standard_normal((400, 2))
    return X, Y, rng.uniform(-2, 2, size=(25, 2))


@pytest.fixture(scope="module")
def trajectory():
    rng = np.random.default_rng(1)
    R = 0.9 * np.array([[np.cos(0.3), -np.sin(0.3)], [np.sin(0.3), np.cos(0.3)]])
    x = np.zeros((600, 2))
    for t in range(599):
        x[t + 1] = R @ x[t] + 0.3 * rng.standard_normal(2)
    return x


CME_KW = dict(alpha=1e-4, kernel_x_params={"gamma": 5.0}, random_state=0)


@pytest.mark.parametrize("landmarks", [{"n_landmarks": 60}, {"landmarks": np.arange(0, 400, 7)}])
def test_cme_landmarks_torch_equals_numpy(landmarks, regression):
    X, Y, Xn = regression
    keep = (X.copy(), Y.copy())
    a = ConditionalMeanEmbedding(**CME_KW, **landmarks).fit(X, Y)
    b = ConditionalMeanEmbedding(**CME_KW, **landmarks).fit(_t(X), _t(Y))
    np.testing.assert_array_equal(b.landmarks_, a.landmarks_)
    assert b.operator_ is None and b.X_fit_ is None  # landmarks and small matrices only
    assert _rel(b.dual_coef_, a.dual_coef_) < dtol(1e-12)
    pb = b.predict(_t(Xn))
    assert is_torch_tensor(pb) and pb.dtype == torch.float64
    assert _rel(pb, a.predict(Xn)) < dtol(1e-12)
    p32 = b.predict(_t(Xn).float())
    assert p32.dtype == torch.float32 and _rel(p32, a.predict(Xn)) < 1e-5
    assert isinstance(b.predict(Xn), np.ndarray)  # numpy in, numpy out
    np.testing.assert_array_equal(X, keep[0])
    np.testing.assert_array_equal(Y, keep[1])
    with pytest.raises(ValueError, match="landmark model fitted on dask arrays or torch"):
        b.weights(_t(Xn))
    with pytest.raises(ValueError, match="landmark model fitted on dask arrays or torch"):
        b.expectation(lambda V: V[:, 0], _t(Xn))


def test_cme_landmarks_torch_1d_y_and_numpy_device(regression):
    X, Y, Xn = regression
    a = ConditionalMeanEmbedding(**CME_KW, n_landmarks=50).fit(X, Y[:, 0])
    c = ConditionalMeanEmbedding(**CME_KW, n_landmarks=50, device=TEST_DEVICE).fit(X, Y[:, 0])
    pc = c.predict(Xn)
    assert isinstance(pc, np.ndarray) and pc.shape == (25,)
    assert _rel(pc, a.predict(Xn)) < dtol(1e-12)


def test_cme_all_landmarks_torch_is_the_exact_estimator(regression):
    """With every sample a landmark the Nyström CME is the exact one, E[Y | x] =
    k(x, X)(G + nεI)⁻¹Y (paper 002 §4.3), computed here by a dense solve."""
    X, Y, Xn = regression
    X, Y = X[:150], Y[:150]
    n, eps = X.shape[0], 1e-4
    k = get_kernel("rbf", gamma=5.0)
    ref = k(Xn, X) @ np.linalg.solve(k(X) + n * eps * np.eye(n), Y)
    b = ConditionalMeanEmbedding(**CME_KW, landmarks=np.arange(n)).fit(_t(X), _t(Y))
    assert _rel(b.predict(_t(Xn)), ref) < dtol(1e-9)


KOOP_KW = dict(alpha=1e-4, kernel_params={"gamma": 5.0}, random_state=1, n_components=3,
               rank=5)


@pytest.mark.parametrize("estimator", ["full", "pcr", "rrr"])
@pytest.mark.parametrize("pairs", [False, True])
def test_koopman_landmarks_torch_equals_numpy(estimator, pairs, trajectory):
    x = trajectory
    keep = x.copy()
    args = (x[:-1], x[1:]) if pairs else (x,)
    kw = dict(KOOP_KW, estimator=estimator, n_landmarks=80)
    a = KoopmanOperator(**kw).fit(*args)
    b = KoopmanOperator(**kw).fit(*(_t(v) for v in args))
    np.testing.assert_array_equal(b.landmarks_, a.landmarks_)
    assert b.operator_ is None and b.X_fit_ is None
    lam = np.abs(a.eigenvalues_[0])
    np.testing.assert_allclose(b.eigenvalues_, a.eigenvalues_, rtol=0, atol=dtol(1e-11) * lam)
    Xn = x[:12]
    for k in (1, 3):
        pa, pb = a.predict(Xn, n_steps=k), b.predict(_t(Xn), n_steps=k)
        assert is_torch_tensor(pb) and pb.dtype == torch.float64
        assert _rel(pb, pa) < dtol(1e-10), k
    efa, efb = a.eigenfunctions_(Xn), b.eigenfunctions_(Xn)
    phase = np.sum(np.conj(efb) * efa, axis=0)
    phase = phase / np.abs(phase)
    assert _rel(efb * phase, efa) < dtol(1e-10)
    if estimator != "full":  # ψ_i m_i is free of the eigenvectors' phase
        ta = np.einsum("ni,ij->nij", efa, a.modes())
        tb = np.einsum("ni,ij->nij", efb, b.modes())
        assert _rel(tb, ta) < dtol(1e-10)
    assert abs(b.score(x) - a.score(x)) < dtol(1e-10)
    np.testing.assert_array_equal(x, keep)


def test_koopman_landmarks_torch_float32_and_numpy_device(trajectory):
    x = trajectory
    kw = dict(KOOP_KW, estimator="rrr", n_landmarks=60)
    a = KoopmanOperator(**kw).fit(x)
    b = KoopmanOperator(**kw).fit(_t(x).float())
    p = b.predict(_t(x[:5]).float(), n_steps=2)
    assert p.dtype == torch.float32
    assert _rel(p, a.predict(x[:5], n_steps=2)) < 1e-4
    c = KoopmanOperator(**kw, device=TEST_DEVICE).fit(x)
    pc = c.predict(x[:5])
    assert isinstance(pc, np.ndarray)
    assert _rel(pc, a.predict(x[:5])) < dtol(1e-10)


def test_koopman_all_landmarks_torch_equals_exact(trajectory):
    """Every pair a landmark: the Nyström Koopman estimator is the exact one (dense
    reference: the eigenvalues of (G + nεI)⁻¹ k(Y, X))."""
    x = trajectory[:160]
    X0, X1 = x[:-1], x[1:]
    n, eps = X0.shape[0], 1e-4
    k = get_kernel("rbf", gamma=5.0)
    A = np.linalg.solve(k(X0) + n * eps * np.eye(n), k(X1, X0))
    ref = np.linalg.eigvals(A)
    ref = ref[np.argsort(-np.abs(ref))][:3]
    b = KoopmanOperator(**dict(KOOP_KW, landmarks=np.arange(n))).fit(_t(x))
    np.testing.assert_allclose(np.sort_complex(b.eigenvalues_.astype(complex)),
                               np.sort_complex(ref), rtol=0, atol=dtol(1e-9))
