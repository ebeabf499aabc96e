"""Regression tests of the operator estimators: centred cross-covariance scores, observables
kept by copy, complex conditional expectations, the accuracy of the dense exact RRR
estimator, the documented normalisation of the covariance eigenfunctions and the refusal of
non-boolean flags.
"""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pytest
import scipy.linalg as sla
from _backends import as_backend, to_np, tol

from asymkern.operators import (
    ConditionalMeanEmbedding,
    CovarianceOperator,
    CrossCovarianceOperator,
    KernelCCA,
    KoopmanOperator,
    PerronFrobeniusOperator,
)


@pytest.fixture(autouse=True)
def _no_warnings_noise():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _rbf(A, B, gamma=1.0):
    return np.exp(-gamma * ((A[:, None, :] - B[None]) ** 2).sum(-1))


# ----------------------------------------------------------------- cross-covariance centring
def _pls_data():
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3) + 5
    Y = X[:, :2] @ rng.randn(2, 4) + 0.3 * rng.randn(40, 4)
    return X, Y


def test_cross_covariance_center_scores_equal_plssvd(backend):
    """center=True: the scores are centred by the training means (mean zero on the training
    samples) and, with linear kernels, scikit-learn's PLSSVD scores up to sign."""
    from sklearn.cross_decomposition import PLSSVD

    X, Y = _pls_data()
    cc = CrossCovarianceOperator(kernel_x="linear", kernel_y="linear", n_components=2,
                                 center=True)
    cc.fit(as_backend(X, backend), as_backend(Y, backend))
    tx, ty = (to_np(t) for t in cc.transform(as_backend(X, backend), as_backend(Y, backend)))
    px, py = PLSSVD(n_components=2, scale=False).fit(X, Y).transform(X, Y)
    scale_x, scale_y = np.abs(px).max(), np.abs(py).max()
    np.testing.assert_allclose(tx.mean(axis=0), 0.0, atol=tol(1e-10, backend) * scale_x)
    np.testing.assert_allclose(ty.mean(axis=0), 0.0, atol=tol(1e-10, backend) * scale_y)
    sx, sy = np.sign(np.sum(tx * px, axis=0)), np.sign(np.sum(ty * py, axis=0))
    np.testing.assert_allclose(tx * sx, px, atol=tol(1e-9, backend) * scale_x)
    np.testing.assert_allclose(ty * sy, py, atol=tol(1e-9, backend) * scale_y)
    # transform(X) alone gives the same x scores
    np.testing.assert_allclose(to_np(cc.transform(as_backend(X, backend))), tx,
                               atol=tol(1e-12, backend) * scale_x)


@pytest.mark.parametrize("method", ["qr", "auxiliary", "block"])
def test_cross_covariance_center_subtracts_training_mean_of_singular_functions(method):
    """Non-linear kernels, every SVD route: transform = v_i(x) − (1/n)Σ_j v_i(x_j) (and u_i),
    at new points too; center=False leaves the singular functions unshifted."""
    X, Y = _pls_data()
    Xn = np.random.RandomState(5).randn(7, 3) + 5
    Yn = np.random.RandomState(6).randn(7, 4)
    kw = dict(kernel_x="rbf", kernel_y="rbf", kernel_x_params={"gamma": 0.1},
              kernel_y_params={"gamma": 0.01}, n_components=3, method=method)
    cc = CrossCovarianceOperator(center=True, **kw).fit(X, Y)
    v, u = cc.right_singular_functions_, cc.left_singular_functions_
    tx, ty = cc.transform(Xn, Yn)
    np.testing.assert_allclose(tx, v(Xn) - v(X).mean(axis=0), atol=1e-10)
    np.testing.assert_allclose(ty, u(Yn) - u(Y).mean(axis=0), atol=1e-10)
    tr_x, tr_y = cc.transform(X, Y)
    assert np.abs(tr_x.mean(axis=0)).max() < 1e-10 * np.abs(tr_x).max()
    assert np.abs(tr_y.mean(axis=0)).max() < 1e-10 * np.abs(tr_y).max()
    plain = CrossCovarianceOperator(center=False, **kw).fit(X, Y)
    np.testing.assert_array_equal(plain.transform(Xn), plain.right_singular_functions_(Xn))


def test_cross_covariance_center_device_cpu_numpy_input_matches_numpy():
    pytest.importorskip("torch")
    X, Y = _pls_data()
    kw = dict(kernel_x="rbf", kernel_y="rbf", kernel_x_params={"gamma": 0.1},
              kernel_y_params={"gamma": 0.01}, n_components=3, center=True)
    a = CrossCovarianceOperator(**kw).fit(X, Y)
    b = CrossCovarianceOperator(device="cpu", **kw).fit(X, Y)
    (ax, ay), (bx, by) = a.transform(X, Y), b.transform(X, Y)
    assert np.abs(bx.mean(axis=0)).max() < 1e-10 * np.abs(bx).max()
    np.testing.assert_allclose(np.abs(bx), np.abs(ax), atol=1e-9 * np.abs(ax).max())
    np.testing.assert_allclose(np.abs(by), np.abs(ay), atol=1e-9 * np.abs(ay).max())


# ----------------------------------------------------------------- observables are copied
@pytest.mark.parametrize("kind", ["full", "pcr", "rrr"])
@pytest.mark.parametrize("trajectory", [True, False])
def test_koopman_observables_are_copied_at_fit(backend, kind, trajectory):
    """The fitted model keeps a copy of the observables: the caller overwriting its array
    after fit changes no forecast (numpy, device='cpu' with numpy input, tensors)."""
    rng = np.random.RandomState(0)
    X = rng.randn(41, 2)
    kw = dict(alpha=1e-3, estimator=kind, rank=3, n_components=3)
    if backend == "torch":  # numpy input on device='cpu' (torch.as_tensor shares memory)
        kw["device"] = "cpu"
    if trajectory:
        args, g = (X,), X[:, 0].copy()
    else:
        args, g = (X[:-1], X[1:]), X[1:, 0].copy()
    for make in (lambda a: a, lambda a: as_backend(a, backend)):
        gg = make(g.copy())
        est = KoopmanOperator(**kw).fit(*args, observables=gg)
        before = to_np(est.predict(X[:5], observable=True))
        before3 = to_np(est.predict(X[:5], n_steps=3, observable=True))
        modes = None if kind == "full" else np.array(est.modes(observable=True))
        gg[:] = 100.0  # the caller reuses its buffer
        np.testing.assert_array_equal(to_np(est.predict(X[:5], observable=True)), before)
        np.testing.assert_array_equal(to_np(est.predict(X[:5], n_steps=3, observable=True)),
                                      before3)
        if modes is not None:
            np.testing.assert_array_equal(est.modes(observable=True), modes)
        assert np.abs(before).max() < 10.0


def test_koopman_callable_observables_result_is_copied():
    """A callable may return its own buffer: the model keeps a copy of it."""
    rng = np.random.RandomState(1)
    X = rng.randn(40, 2)
    buf = np.empty(39)

    def obs(Y):
        buf[:] = Y[:, 0]
        return buf

    est = KoopmanOperator(alpha=1e-3).fit(X, observables=obs)
    before = est.predict(X[:4], observable=True)
    buf[:] = -50.0
    np.testing.assert_array_equal(est.predict(X[:4], observable=True), before)


# ----------------------------------------------------------------- complex expectations
def _cme_data():
    rng = np.random.RandomState(0)
    X = rng.randn(30, 2)
    return X, np.sin(X)


def _char(Y):
    return np.exp(1j * Y[:, 0])


def test_cme_expectation_keeps_complex_values(backend):
    """E[e^{i y0} | x] = β(x)ᵀ e^{i y0}: complex, real and imaginary parts each the real
    expectation (numpy and torch)."""
    X, Y = _cme_data()
    Xt = X[:4] + 0.1
    ref_est = ConditionalMeanEmbedding(alpha=1e-3).fit(X, Y)
    W = ref_est.weights(Xt)
    want = W.T @ _char(Y)
    assert np.abs(want.imag).max() > 0.1  # the imaginary part matters
    cme = ConditionalMeanEmbedding(alpha=1e-3).fit(as_backend(X, backend),
                                                   as_backend(Y, backend))
    with warnings.catch_warnings():
        # numpy.exceptions is numpy >= 1.25; the warning itself is older
        warnings.simplefilter("error", getattr(np, "exceptions", np).ComplexWarning)
        got = to_np(cme.expectation(_char, as_backend(Xt, backend)))
    assert got.shape == (4,) and np.iscomplexobj(got)
    np.testing.assert_allclose(got, want, rtol=0, atol=tol(1e-12, backend))
    re_ = to_np(cme.expectation(lambda V: np.cos(V[:, 0]), as_backend(Xt, backend)))
    im_ = to_np(cme.expectation(lambda V: np.sin(V[:, 0]), as_backend(Xt, backend)))
    np.testing.assert_allclose(got.real, re_, rtol=0, atol=tol(1e-12, backend))
    np.testing.assert_allclose(got.imag, im_, rtol=0, atol=tol(1e-12, backend))
    # several columns, mixed real and complex, keep their shape
    two = to_np(cme.expectation(lambda V: np.stack([_char(V), V[:, 1] + 0j], axis=1),
                                as_backend(Xt, backend)))
    assert two.shape == (4, 2)
    np.testing.assert_allclose(two[:, 0], want, rtol=0, atol=tol(1e-12, backend))
    np.testing.assert_allclose(two[:, 1].real, W.T @ Y[:, 1], rtol=0,
                               atol=tol(1e-12, backend))
    np.testing.assert_allclose(two[:, 1].imag, 0.0, atol=tol(1e-12, backend))


def test_cme_expectation_complex_landmarks():
    X, Y = _cme_data()
    Xt = X[:4] + 0.1
    cme = ConditionalMeanEmbedding(alpha=1e-3, n_landmarks=12, random_state=0).fit(X, Y)
    want = cme.weights(Xt).T @ _char(Y)
    got = cme.expectation(_char, Xt)
    assert np.iscomplexobj(got) and np.abs(got.imag).max() > 0.1
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    # all samples as landmarks: the exact estimator's complex expectation
    full = ConditionalMeanEmbedding(alpha=1e-3, landmarks=np.arange(30)).fit(X, Y)
    exact = ConditionalMeanEmbedding(alpha=1e-3).fit(X, Y)
    np.testing.assert_allclose(full.expectation(_char, Xt), exact.expectation(_char, Xt),
                               rtol=0, atol=1e-8)


def test_cme_expectation_refuses_bad_func_values():
    X, Y = _cme_data()
    cme = ConditionalMeanEmbedding().fit(X, Y)
    with pytest.raises(ValueError, match="func returned"):
        cme.expectation(lambda V: np.full(len(V), np.nan + 1j), X[:2])
    with pytest.raises(ValueError, match="func returned"):
        cme.expectation(lambda V: np.zeros((len(V), 2, 2)), X[:2])
    with pytest.raises(TypeError, match="func returned"):
        cme.expectation(lambda V: np.array(["a"] * len(V), dtype=object), X[:2])


# ----------------------------------------------------------------- dense exact RRR
def _rrr_data(n, seed=3):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    Y = np.tanh(X @ np.array([[0.8, -0.4], [0.4, 0.8]])) + 0.1 * rng.randn(n, 2)
    return X, Y, 1.5 * rng.randn(20, 2)


def _rrr_reference(G, H, r, shift):
    """U of (1/n) H G u = σ² (G + nεI) u by scipy's float64 generalised eig, normalised by
    uᵀ G (G + nεI) u = n (Kostic et al. 2022, Thm. 3)."""
    n = G.shape[0]
    w, U = sla.eig(H @ G / n, G + shift * np.eye(n))
    order = np.argsort(-w.real)[:r]
    U = U[:, order].real
    return U / np.sqrt(np.einsum("ij,ij->j", G @ U, G @ U + shift * U) / n)


def test_rrr_dense_matches_generalised_eig_reference(backend):
    """n = 120 (dense path), ε = 1e-6: forecasts and eigenvalues of the exact RRR Koopman
    estimator equal the direct solution of the generalised eigenproblem."""
    X, Y, Xt = _rrr_data(120)
    n, eps, r = 120, 1e-6, 3
    G, H = _rbf(X, X), _rbf(Y, Y)
    U = _rrr_reference(G, H, r, n * eps)
    V = G @ U / n
    ref = _rbf(Xt, X) @ U @ (V.T @ Y)
    ev = np.linalg.eigvals(V.T @ _rbf(Y, X) @ U)
    ev = ev[np.lexsort((-ev.imag, -np.abs(ev)))]
    est = KoopmanOperator(kernel="rbf", kernel_params={"gamma": 1.0}, alpha=eps,
                          estimator="rrr", rank=r, n_components=r)
    est.fit(as_backend(X, backend), as_backend(Y, backend))
    got = to_np(est.predict(as_backend(Xt, backend)))
    scale = np.abs(ref).max()
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol(1e-8, backend) * scale)
    lam = np.asarray(est.eigenvalues_)
    lam = lam[np.lexsort((-lam.imag, -np.abs(lam)))]
    np.testing.assert_allclose(lam, ev, rtol=0, atol=tol(1e-9, backend))


def test_rrr_dense_perron_frobenius_matches_reference():
    """The PF 'rrr' estimator (the adjoint, B = V Uᵀ) from the same dense RRR factors."""
    X, Y, Xt = _rrr_data(120)
    n, eps, r = 120, 1e-6, 3
    G, H = _rbf(X, X), _rbf(Y, Y)
    U = _rrr_reference(G, H, r, n * eps)
    V = G @ U / n
    pf = PerronFrobeniusOperator(kernel="rbf", kernel_params={"gamma": 1.0}, alpha=eps,
                                 estimator="rrr", rank=r, n_components=r).fit(X, Y)
    ev = np.linalg.eigvals(V.T @ _rbf(Y, X) @ U)
    ev = ev[np.lexsort((-ev.imag, -np.abs(ev)))]
    lam = np.asarray(pf.eigenvalues_)
    lam = lam[np.lexsort((-lam.imag, -np.abs(lam)))]
    np.testing.assert_allclose(lam, ev, rtol=0, atol=1e-9)
    # P̂ = Ψ V Uᵀ Φᵀ on functions f = k(·, z): (P̂ f)(z') = k(z', Y) V Uᵀ k(X, z)
    Z = Xt[:8]
    B = np.asarray(pf.operator_.B._apply(_rbf(X, Z)))
    want = _rbf(Z, Y) @ (V @ (U.T @ _rbf(X, Z)))
    np.testing.assert_allclose(_rbf(Z, Y) @ B, want, rtol=0, atol=1e-8 * np.abs(want).max())


def test_rrr_dense_path_agrees_with_arpack_path(backend):
    """The same data at n = 250: the ARPACK path (n > 200) and the dense symmetric form agree
    on the operator they estimate (ε = 1e-6)."""
    from asymkern.operators._koopman import _rrr_dual_dense, rrr_dual

    X, Y, Xt = _rrr_data(250, seed=4)
    n, shift, r = 250, 250 * 1e-6, 4
    G, H = _rbf(X, X), _rbf(Y, Y)
    Gb, Hb = as_backend(G, backend), as_backend(H, backend)
    U1, V1, s1 = rrr_dual(Gb, Hb, r, shift)  # ARPACK
    U2, V2, s2 = _rrr_dual_dense(Gb, Hb, r, shift)
    U1, V1, s1, U2, V2, s2 = (to_np(a) for a in (U1, V1, s1, U2, V2, s2))
    np.testing.assert_allclose(s2, s1, rtol=tol(1e-9, backend))
    Kt = _rbf(Xt, X)
    p1, p2 = Kt @ U1 @ (V1.T @ Y), Kt @ U2 @ (V2.T @ Y)
    np.testing.assert_allclose(p2, p1, rtol=0, atol=tol(1e-8, backend) * np.abs(p1).max())
    # the normalisation uᵀ G (G + nεI) u = n
    GU = G @ U2
    np.testing.assert_allclose(np.einsum("ij,ij->j", GU, GU + shift * U2) / n, 1.0,
                               rtol=tol(1e-10, backend))


def test_rrr_dense_unregularised_unchanged():
    """alpha=None keeps the documented restriction to range(G) (U in the kept eigenvectors)."""
    from asymkern.operators._koopman import _rrr_dual_dense

    rng = np.random.RandomState(0)
    X = rng.randn(60, 2)
    Y = X @ np.array([[0.9, 0.1], [-0.1, 0.9]])
    G, H = X @ X.T, Y @ Y.T  # linear kernel: rank 2
    U, V, s2 = _rrr_dual_dense(G, H, 2, 0.0)
    assert U.shape == (60, 2) and np.all(np.isfinite(U))
    lam, Q = np.linalg.eigh(G)
    Q0 = Q[:, lam < 1e-8 * lam.max()]
    assert np.abs(Q0.T @ U).max() < 1e-10 * np.abs(U).max()


# ----------------------------------------------------------------- covariance docs
def _attribute_doc(cls, name):
    doc = inspect.cleandoc(cls.__doc__)  # Python 3.13 dedents docstrings itself
    m = re.search(rf"^{name} : .*?(?=^\S|\Z)", doc, flags=re.M | re.S)
    assert m, name
    return m.group(0)


def test_covariance_eigenfunctions_documented_as_the_mercer_features():
    """The docs say what the code returns: eigenfunctions_ are the RKHS-normalised
    φ_i = √λ_i e_i (e_i L²-normalised, Example 3.10) and transform returns φ_i(x)."""
    doc = _attribute_doc(CovarianceOperator, "eigenfunctions_")
    assert "φ_i = √λ_i e_i" in doc
    assert "eigenfunctions e_i" not in doc
    assert "Example 3.10" in CovarianceOperator.transform.__doc__
    X = np.random.RandomState(0).uniform(-1, 1, size=(60, 2))
    cov = CovarianceOperator(kernel="polynomial", n_components=3).fit(X)
    phi = cov.eigenfunctions_(X)
    np.testing.assert_array_equal(cov.transform(X), phi)
    np.testing.assert_allclose(cov.eigenfunctions_.norms(), 1.0, rtol=1e-10)  # ‖φ_i‖_H = 1
    # e_i = φ_i / √λ_i has unit empirical L² norm: (1/n) Σ_j φ_i(x_j)² = λ_i
    np.testing.assert_allclose((phi**2).mean(axis=0), cov.eigenvalues_, rtol=1e-10)


# ----------------------------------------------------------------- boolean flags
@pytest.mark.parametrize("cls", [CovarianceOperator, CrossCovarianceOperator, KernelCCA])
@pytest.mark.parametrize("bad", ["yes", "False", 1, 0, None, 1.0, np.array([True])])
def test_center_must_be_bool(cls, bad):
    X, Y = _pls_data()
    args = (X,) if cls is CovarianceOperator else (X, Y)
    with pytest.raises(TypeError, match=r"center must be True or False"):
        cls(center=bad).fit(*args)
    # refused before any work: even with samples that would be refused themselves
    bad_X = np.full((5, 3), np.nan)
    bad_args = (bad_X,) if cls is CovarianceOperator else (bad_X, Y[:5])
    with pytest.raises(TypeError, match=r"center must be True or False"):
        cls(center=bad).fit(*bad_args)


@pytest.mark.parametrize("cls", [CovarianceOperator, CrossCovarianceOperator])
def test_center_numpy_bool_accepted(cls):
    X, Y = _pls_data()
    args = (X,) if cls is CovarianceOperator else (X, Y)
    a = cls(kernel_x="linear", kernel_y="linear") if cls is CrossCovarianceOperator else \
        cls(kernel="linear")
    a.set_params(center=np.True_, n_components=2).fit(*args)
    b = cls(**{**a.get_params(), "center": True}).fit(*args)
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
