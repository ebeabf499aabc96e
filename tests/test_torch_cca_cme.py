"""KernelCCA and ConditionalMeanEmbedding on the torch backend (issue 16), on test-device tensors,
against the numpy path and dense references: correlations and predictions to 1e-12 (float64),
variates up to the sign LAPACK leaves free, float32 outputs to 1e-5. No test depends on timing.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import scipy.linalg as sla

torch = pytest.importorskip("torch")

from _torch_helpers import (  # noqa: E402
    TEST_DEVICE,
    assert_same_up_to_sign,  # noqa: E402
    dtol,
    tensor,
    to_np,
)

from asymkern._dispatch import is_torch_tensor  # noqa: E402
from asymkern.kernels import get_kernel  # noqa: E402
from asymkern.operators import ConditionalMeanEmbedding, KernelCCA  # noqa: E402

_np = to_np


def _t(a):
    return tensor(a)


_same_up_to_sign = assert_same_up_to_sign


def _quiet(fit, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rank warnings of the numpy operator
        return fit(*args)


@pytest.fixture(scope="module")
def views():
    """Two views whose Gram matrices are numerically full-rank (3-D, well spread)."""
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, size=(70, 3))
    Y = np.c_[np.sin(2 * X[:, :2]), X[:, 2:] ** 2] + 0.2 * rng.uniform(-1, 1, size=(70, 3))
    return X, Y, rng.uniform(-1, 1, size=(15, 3)), rng.uniform(-1, 1, size=(15, 3))


# ---------------------------------------------------------------------------------- KernelCCA
def _dense_cca_correlations(Gx, Gy, n, eps, center):
    """σ(B̃) with B̃ = G_Ψ^{1/2}(G_Ψ + nε)^{-1/2}(G_Φ + nε)^{-1/2}G_Φ^{1/2}, all eigenpairs."""
    H = np.eye(n) - 1.0 / n
    if center:
        Gx, Gy = H @ Gx @ H, H @ Gy @ H

    def fn(G, f):
        lam, U = np.linalg.eigh(0.5 * (G + G.T))
        return (U * f(np.clip(lam, 0, None))) @ U.T

    A = fn(Gy, lambda s: np.sqrt(s / (s + n * eps))) @ fn(Gx, lambda s: np.sqrt(s / (s + n * eps)))
    return np.linalg.svd(A, compute_uv=False)


@pytest.mark.parametrize("kernel,params", [("rbf", {"gamma": 2.0}), ("laplacian", None),
                                           ("polynomial", None)])
@pytest.mark.parametrize("center", [True, False])
def test_cca_torch_equals_numpy_and_dense(kernel, params, center, views):
    X, Y, Xn, Yn = views
    keep = [a.copy() for a in views]
    kw = dict(kernel_x=kernel, kernel_x_params=params, kernel_y_params={"gamma": 3.0},
              alpha=1e-3, n_components=3, center=center)
    a = _quiet(KernelCCA(**kw).fit, X, Y)
    b = KernelCCA(**kw).fit(_t(X), _t(Y))
    assert b.n_components_ == a.n_components_ == 3
    cb = b.canonical_correlations_
    assert is_torch_tensor(cb) and cb.dtype == torch.float64
    np.testing.assert_allclose(_np(cb), a.canonical_correlations_, rtol=dtol(1e-12), atol=0)
    n, eps = X.shape[0], 1e-3
    Gx = get_kernel(kernel, **(params or {}))(X)
    Gy = get_kernel("rbf", gamma=3.0)(Y)
    dense = _dense_cca_correlations(Gx, Gy, n, eps, center)[:3]
    np.testing.assert_allclose(_np(cb), dense, rtol=dtol(1e-10), atol=0)
    xa, ya = a.transform(Xn, Yn)
    xb, yb = b.transform(_t(Xn), _t(Yn))
    assert is_torch_tensor(xb) and is_torch_tensor(yb)
    _same_up_to_sign(xb, xa, 1e-9)
    _same_up_to_sign(yb, ya, 1e-9)
    _same_up_to_sign(b.transform_y(_t(Yn)), ya, 1e-9)
    # the fitted functions (numpy) equal the device evaluation
    _same_up_to_sign(b.x_canonical_functions_(Xn) - (b._x_mean if center else 0), _np(xb), 1e-12)
    for got, want in zip(keep, views):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("center", [True, False])
def test_cca_torch_variates_have_unit_variance(center, views):
    """The canonical variates of the training samples have unit mean square (zero mean when
    centred), the normalisation of KernelCCA (f_i has unit empirical variance)."""
    X, Y, _, _ = views
    b = KernelCCA(n_components=3, center=center, kernel_y_params={"gamma": 3.0}).fit(
        _t(X), _t(Y))
    for V in b.transform(_t(X), _t(Y)):
        V = _np(V)
        if center:
            np.testing.assert_allclose(V.mean(axis=0), 0, atol=dtol(1e-10))
            np.testing.assert_allclose(V.var(axis=0), 1, rtol=dtol(1e-10))
        else:
            np.testing.assert_allclose(np.mean(V**2, axis=0), 1, rtol=dtol(1e-10))


def test_cca_torch_dtypes_and_numpy_device(views):
    X, Y, Xn, Yn = views
    b = KernelCCA(n_components=2).fit(_t(X).float(), _t(Y).float())
    xs, ys = b.transform(_t(Xn).float(), _t(Yn).float())
    assert xs.dtype == torch.float32 and ys.dtype == torch.float32
    a = _quiet(KernelCCA(n_components=2).fit, X.astype(np.float32), Y.astype(np.float32))
    _same_up_to_sign(xs, a.transform(Xn.astype(np.float32)), 1e-5)
    c = KernelCCA(n_components=2, device=TEST_DEVICE).fit(X, Y)
    assert isinstance(c.canonical_correlations_, np.ndarray)
    out = c.transform(Xn)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    _same_up_to_sign(out, a.transform(Xn), 1e-5)
    # 1-D y
    d = KernelCCA(n_components=2).fit(_t(X), _t(Y[:, 0]))
    e = _quiet(KernelCCA(n_components=2).fit, X, Y[:, 0])
    np.testing.assert_allclose(_np(d.canonical_correlations_), e.canonical_correlations_,
                               rtol=dtol(1e-12))
    assert d.transform_y(_t(Yn[:, 0])).shape == (15, 2)


def test_cca_torch_numpy_operator_is_lazy_and_right(views):
    """The numpy operator of a torch fit decomposes (with numpy) to the same correlations."""
    X, Y, _, _ = views
    b = KernelCCA(n_components=3, kernel_y_params={"gamma": 3.0}).fit(_t(X), _t(Y))
    assert "Ux" not in b.operator_.B.__dict__  # nothing factorised on the host in fit
    res = _quiet(b.operator_.svd, 3)
    np.testing.assert_allclose(res.singular_values, _np(b.canonical_correlations_),
                               rtol=dtol(1e-10))
    c = pickle.loads(pickle.dumps(b))
    _same_up_to_sign(c.transform(_t(X[:5])), b.transform(_t(X[:5])), 1e-14)


def test_cca_torch_refusals(views):
    X, Y, Xn, _ = views
    with pytest.raises(NotImplementedError, match="method='auxiliary'"):
        KernelCCA(method="auxiliary").fit(_t(X), _t(Y))
    with pytest.raises(ValueError, match="requires y"):
        KernelCCA().fit(_t(X))
    with pytest.raises(ValueError, match="y has 69 samples"):
        KernelCCA().fit(_t(X), _t(Y[:-1]))
    b = KernelCCA(n_components=2).fit(_t(X), _t(Y))
    with pytest.raises(ValueError, match="y has 2 features"):
        b.transform_y(_t(Y[:, :2]))
    with pytest.raises(ValueError, match="X has 2 features"):
        b.transform(_t(Xn[:, :2]))
    with pytest.raises(ValueError, match="kernel_x='sigmoid'|sigmoid"):
        KernelCCA(kernel_x="sigmoid").fit(_t(X), _t(Y))


# --------------------------------------------------------------------- ConditionalMeanEmbedding
@pytest.mark.parametrize("kernel,params", [("rbf", {"gamma": 2.0}), ("laplacian", None),
                                           ("cauchy", None)])
def test_cme_torch_equals_numpy_and_dense(kernel, params, views):
    X, Y, Xn, _ = views
    keep = [a.copy() for a in views]
    kw = dict(kernel_x=kernel, kernel_x_params=params, alpha=1e-4)
    a = ConditionalMeanEmbedding(**kw).fit(X, Y)
    b = ConditionalMeanEmbedding(**kw).fit(_t(X), _t(Y))
    n = X.shape[0]
    G = get_kernel(kernel, **(params or {}))(X)
    dense = sla.solve(G + n * 1e-4 * np.eye(n), Y, assume_a="pos")
    assert is_torch_tensor(b.dual_coef_)
    np.testing.assert_allclose(_np(b.dual_coef_), dense, rtol=0,
                               atol=dtol(1e-10) * np.abs(dense).max())
    np.testing.assert_allclose(_np(b.dual_coef_), a.dual_coef_, rtol=0,
                               atol=dtol(1e-12) * np.abs(a.dual_coef_).max())
    pa, pb = a.predict(Xn), b.predict(_t(Xn))
    assert is_torch_tensor(pb) and pb.dtype == torch.float64
    np.testing.assert_allclose(_np(pb), pa, rtol=0, atol=dtol(1e-12) * np.abs(pa).max())
    wa, wb = a.weights(Xn), b.weights(_t(Xn))
    np.testing.assert_allclose(_np(wb), wa, rtol=0, atol=dtol(1e-12) * np.abs(wa).max())

    def g(V):
        return V[:, 0] ** 2

    ea, eb = a.expectation(g, Xn), b.expectation(g, _t(Xn))
    assert eb.shape == ea.shape == (15,)
    np.testing.assert_allclose(_np(eb), ea, rtol=0, atol=dtol(1e-12) * np.abs(ea).max())
    emb_a, emb_b = a.embedding(Xn), b.embedding(_t(Xn))
    np.testing.assert_allclose(emb_b(Y[:7]), emb_a(Y[:7]), rtol=0,
                               atol=dtol(1e-12) * np.abs(emb_a(Y[:7])).max())
    for got, want in zip(keep, views):
        np.testing.assert_array_equal(got, want)


def test_cme_torch_outputs_follow_inputs(views):
    X, Y, Xn, _ = views
    y = Y[:, 0]
    a = ConditionalMeanEmbedding(alpha=1e-3).fit(X, y)
    b = ConditionalMeanEmbedding(alpha=1e-3).fit(_t(X), _t(y))
    pb = b.predict(_t(Xn))
    assert pb.shape == (15,)
    np.testing.assert_allclose(_np(pb), a.predict(Xn), rtol=dtol(1e-12), atol=dtol(1e-14))
    p32 = b.predict(_t(Xn).float())
    assert p32.dtype == torch.float32
    np.testing.assert_allclose(_np(p32), a.predict(Xn), rtol=1e-5, atol=1e-6)
    c = ConditionalMeanEmbedding(alpha=1e-3, device=TEST_DEVICE).fit(X, y)
    pc = c.predict(Xn)
    assert isinstance(pc, np.ndarray) and pc.shape == (15,)
    assert isinstance(c.dual_coef_, np.ndarray)
    np.testing.assert_allclose(pc, a.predict(Xn), rtol=dtol(1e-12), atol=dtol(1e-14))
    # a torch-fitted model takes numpy input too, and gives numpy back
    assert isinstance(b.predict(Xn), np.ndarray)
    assert isinstance(b.weights(Xn), np.ndarray)


def test_cme_torch_numpy_operator_and_pickle(views):
    X, Y, Xn, _ = views
    a = ConditionalMeanEmbedding(alpha=1e-3).fit(X, Y)
    b = ConditionalMeanEmbedding(alpha=1e-3).fit(_t(X), _t(Y))
    assert "cho" not in b.operator_.B.__dict__  # nothing factorised on the host in fit
    ra, rb = _quiet(a.operator_.svd, 2), _quiet(b.operator_.svd, 2)
    np.testing.assert_allclose(rb.singular_values, ra.singular_values, rtol=dtol(1e-12))
    c = pickle.loads(pickle.dumps(b))
    np.testing.assert_array_equal(_np(c.predict(_t(Xn))), _np(b.predict(_t(Xn))))


def test_cme_torch_refusals(views):
    X, Y, Xn, _ = views
    with pytest.raises(ValueError, match="landmarks must be 'uniform' or an index array"):
        ConditionalMeanEmbedding(landmarks="kmeans").fit(_t(X), _t(Y))
    with pytest.raises(ValueError, match="requires y"):
        ConditionalMeanEmbedding().fit(_t(X))
    with pytest.raises(ValueError, match="y has 69 samples"):
        ConditionalMeanEmbedding().fit(_t(X), _t(Y[:-1]))
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        ConditionalMeanEmbedding().fit(_t(bad), _t(Y))
    b = ConditionalMeanEmbedding().fit(_t(X), _t(Y))
    with pytest.raises(ValueError, match="X has 2 features"):
        b.predict(_t(Xn[:, :2]))
    est = ConditionalMeanEmbedding().fit(X, Y)  # numpy fit: tensors are refused, with advice
    with pytest.raises(ValueError, match="numpy arrays without"):
        est.predict(_t(Xn))


@pytest.mark.parametrize("make", ["cov", "cross", "cca", "cme"])
def test_torch_fit_never_shares_the_callers_memory(make, views):
    """A float64 CPU tensor changed after fit leaves the fitted model unchanged (the model
    keeps copies of the samples, on the device and in its numpy functions)."""
    from asymkern.operators import CovarianceOperator, CrossCovarianceOperator

    X, Y, Xn, _ = views
    Xt, Yt = _t(X.copy()), _t(Y.copy())
    est = {"cov": lambda: CovarianceOperator(n_components=2, jitter=1e-3).fit(Xt),
           "cross": lambda: CrossCovarianceOperator(n_components=2, jitter=1e-3).fit(Xt, Yt),
           "cca": lambda: KernelCCA(n_components=2).fit(Xt, Yt),
           "cme": lambda: ConditionalMeanEmbedding().fit(Xt, Yt)}[make]()
    out = est.predict if make == "cme" else est.transform
    before = _np(out(_t(Xn))).copy()
    Xt.mul_(3.0)
    Yt.add_(1.0)
    np.testing.assert_array_equal(_np(out(_t(Xn))), before)


@pytest.mark.parametrize("as_numpy", [False, True])
def test_kernel_svd_torch_fit_never_shares_the_callers_memory(as_numpy, views):
    """KernelSVD on torch keeps its own X and Z: changing the caller's arrays (a tensor, or
    numpy with device='cpu', which torch would otherwise share) leaves the model unchanged."""
    from asymkern import KernelSVD

    X, Y, Xn, _ = views
    A, B = (X.copy(), Y.copy()) if as_numpy else (_t(X.copy()), _t(Y.copy()))
    est = KernelSVD(kernel="sne", n_components=2, solver="dense",
                    device=TEST_DEVICE if as_numpy else None).fit(A, Z=B)
    before = _np(est.transform(Xn if as_numpy else _t(Xn))).copy()
    A *= 3.0
    B += 1.0
    np.testing.assert_array_equal(_np(est.transform(Xn if as_numpy else _t(Xn))), before)
    np.testing.assert_array_equal(_np(est.X_fit_), X)


def test_cme_float32_predictions_beyond_the_range_are_refused():
    """Predictions finite in float64 but beyond float32's range (3.4e38) at float32 points are
    an OverflowError, never infinity; float64 points get the float64 values."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    y = 3e38 * (1 + np.abs(rng.standard_normal((30, 1))))
    est = ConditionalMeanEmbedding(alpha=1e-3).fit(
        torch.tensor(X, device=TEST_DEVICE), torch.tensor(y, device=TEST_DEVICE))
    with pytest.raises(OverflowError, match="range of the points' dtype float32"):
        est.predict(torch.tensor(X, dtype=torch.float32, device=TEST_DEVICE))
    out = est.predict(torch.tensor(X, device=TEST_DEVICE))
    assert out.dtype == torch.float64 and bool(torch.isfinite(out).all())
