"""CovarianceOperator on the torch backend (issue 16) against the numpy path and a dense
reference, on test-device tensors: eigenvalues to 1e-12 relative (float64), eigenfunction values to
1e-12 up to the sign LAPACK leaves free, float32 outputs to 1e-5. No test depends on timing.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import (  # noqa: E402
    TEST_DEVICE,
    assert_same_up_to_sign,  # noqa: E402
    dtol,
    tensor,
    to_np,
)

from asymkern._dispatch import is_torch_tensor  # noqa: E402
from asymkern.exceptions import ClippedParameterWarning  # noqa: E402
from asymkern.kernels import KernelMatrix, get_kernel  # noqa: E402
from asymkern.operators import CovarianceOperator  # noqa: E402


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    return rng.uniform(-1, 1, size=(90, 3)), rng.uniform(-1, 1, size=(25, 3))


def _quiet_fit(est, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rank warnings: checked separately
        return est.fit(X)


_np = to_np


_same_up_to_sign = assert_same_up_to_sign


@pytest.mark.parametrize("kernel,params", [("rbf", {"gamma": 2.0}), ("laplacian", None),
                                           ("polynomial", None), ("cauchy", None)])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("jitter", [0.0, 1e-3])
def test_covariance_torch_equals_numpy(kernel, params, center, jitter, data):
    X, Xn = data
    keep = (X.copy(), Xn.copy())
    kw = dict(kernel=kernel, kernel_params=params, n_components=4, center=center, jitter=jitter)
    a = _quiet_fit(CovarianceOperator(**kw), X)
    b = _quiet_fit(CovarianceOperator(**kw), tensor(X))
    assert b.n_components_ == a.n_components_ == 4
    assert is_torch_tensor(b.eigenvalues_) and b.eigenvalues_.dtype == torch.float64
    np.testing.assert_allclose(_np(b.eigenvalues_), a.eigenvalues_, rtol=0,
                               atol=dtol(1e-12) * a.eigenvalues_[0])
    t = b.transform(tensor(Xn))
    assert is_torch_tensor(t) and t.dtype == torch.float64
    _same_up_to_sign(t, a.transform(Xn), 1e-11)
    _same_up_to_sign(b.transform(tensor(X)), a.transform(X), 1e-11)
    # the numpy eigenfunctions recorded by the torch fit give the same values
    _same_up_to_sign(b.eigenfunctions_(Xn) - (b.eigenfunctions_(X).mean(0) if center else 0),
                     a.transform(Xn), 1e-11)
    np.testing.assert_array_equal(X, keep[0])
    np.testing.assert_array_equal(Xn, keep[1])


def test_covariance_torch_against_dense_reference(data):
    """Eigenvalues of Ĉ_XX = eigenvalues of G/n; the eigenfunctions are RKHS-normalised and
    satisfy Ĉ e = λ e on the samples (G α = nλ α)."""
    X, _ = data
    G = KernelMatrix(get_kernel("rbf", gamma=2.0), X).to_array()
    n = X.shape[0]
    ref = np.linalg.eigvalsh(G / n)[::-1][:5]
    b = CovarianceOperator(kernel="rbf", kernel_params={"gamma": 2.0}, n_components=5).fit(
        tensor(X))
    np.testing.assert_allclose(_np(b.eigenvalues_), ref, rtol=dtol(1e-12))
    C = b.eigenfunctions_.coef
    np.testing.assert_allclose(C.T @ G @ C, np.eye(5), atol=dtol(1e-10))  # ‖e_i‖ = 1, orthogonal
    np.testing.assert_allclose(G @ C, n * C * ref[None, :], rtol=dtol(1e-9), atol=dtol(1e-12))


def test_covariance_torch_float32_and_device_numpy(data):
    X, Xn = data
    a = CovarianceOperator(n_components=3).fit(X.astype(np.float32))
    b = CovarianceOperator(n_components=3).fit(tensor(X.astype(np.float32)))
    t = b.transform(tensor(Xn.astype(np.float32)))
    assert t.dtype == torch.float32
    _same_up_to_sign(t, a.transform(Xn.astype(np.float32)), 1e-5)
    # numpy in, device set: numpy out, the numpy path's values
    c = CovarianceOperator(n_components=3, device=TEST_DEVICE).fit(X)
    assert isinstance(c.eigenvalues_, np.ndarray)
    out = c.transform(Xn)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    _same_up_to_sign(out, CovarianceOperator(n_components=3).fit(X).transform(Xn), 1e-11)
    assert c.n_features_in_ == 3


def test_covariance_torch_rank_clipping_matches_numpy():
    """A rank-3 Gram (linear kernel, d = 3): n_components = 6 is clipped to 3 with a
    ClippedParameterWarning on both paths."""
    X = np.random.RandomState(1).standard_normal((40, 3))
    with pytest.warns(ClippedParameterWarning):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            a = CovarianceOperator(kernel="linear", n_components=6).fit(X)
    with pytest.warns(ClippedParameterWarning):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            b = CovarianceOperator(kernel="linear", n_components=6).fit(tensor(X))
    assert a.n_components_ == b.n_components_ == 3
    np.testing.assert_allclose(_np(b.eigenvalues_), a.eigenvalues_, rtol=dtol(1e-12))


def test_covariance_torch_refusals(data):
    X, Xn = data
    with pytest.raises(ValueError, match="fitted on numpy"):
        CovarianceOperator(n_components=2).fit(X).transform(tensor(Xn))
    with pytest.raises(ValueError, match="not available on the torch backend"):
        CovarianceOperator(kernel=lambda A, B: A @ B.T).fit(tensor(X))
    b = CovarianceOperator(n_components=2).fit(tensor(X))
    with pytest.raises(ValueError, match="expecting 3 features"):
        b.transform(torch.ones(4, 2, dtype=torch.float64, device=TEST_DEVICE))
    with pytest.raises(ValueError, match="minimum of 2 is required"):
        CovarianceOperator().fit(torch.ones(1, 3, dtype=torch.float64, device=TEST_DEVICE))
    with pytest.raises(ValueError, match="jitter"):
        CovarianceOperator(jitter=-1.0).fit(tensor(X))
    with pytest.raises(ValueError, match="NaN|finite"):
        CovarianceOperator().fit(torch.full((5, 3), float("nan"), dtype=torch.float64,
            device=TEST_DEVICE))


# ------------------------------------------------------------------ CrossCovarianceOperator
from asymkern.operators import CrossCovarianceOperator  # noqa: E402


@pytest.fixture(scope="module")
def paired():
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, size=(80, 3))
    Y = np.sin(X[:, :2]) + 0.1 * rng.randn(80, 2)
    return X, Y, rng.uniform(-1, 1, size=(20, 3)), rng.randn(20, 2)


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("jitter,tol_u", [(1e-3, 1e-11), (0.0, 1e-7)])
def test_cross_covariance_torch_equals_numpy(center, jitter, tol_u, paired):
    """σ to 1e-12 relative; v (functions of x) and u (functions of y) to 1e-11 up to sign on
    full-rank Gram matrices (jitter). Without jitter the y Gram matrix is numerically singular
    and both paths drop its directions below n·eps·max diag (the same pivoted Cholesky, LAPACK's
    on numpy, the executor's loop on torch): u then agrees to the rounding of the last kept
    pivots (1e-9 measured; numpy on permuted rows moves it as much), σ and v still to 1e-12."""
    X, Y, Xn, Yn = paired
    keep = [A.copy() for A in paired]
    kw = dict(n_components=4, center=center, jitter=jitter, kernel_y_params={"gamma": 5.0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = CrossCovarianceOperator(**kw).fit(X, Y)
        b = CrossCovarianceOperator(**kw).fit(tensor(X), tensor(Y))
    assert b.n_components_ == a.n_components_ == 4
    assert is_torch_tensor(b.singular_values_)
    np.testing.assert_allclose(_np(b.singular_values_), a.singular_values_, rtol=0,
                               atol=dtol(1e-12) * a.singular_values_[0])
    xa, ya = a.transform(Xn, Yn)
    xb, yb = b.transform(tensor(Xn), tensor(Yn))
    assert is_torch_tensor(xb) and is_torch_tensor(yb)
    signs = np.sign(np.sum(_np(xb) * xa, axis=0))
    _same_up_to_sign(_np(xb) * signs, xa, 1e-11)
    _same_up_to_sign(_np(yb) * signs, ya, tol_u)  # u_i pairs with v_i: the same sign
    _same_up_to_sign(b.transform(tensor(X)), a.transform(X), 1e-11)
    for A, B in zip(paired, keep):
        np.testing.assert_array_equal(A, B)


def test_cross_covariance_torch_against_dense_reference(paired):
    """σ_i(Ĉ_YX) from the dense route: with G_X = ΦᵀΦ, G_Y = ΨᵀΨ, the squared singular values
    are the eigenvalues of (1/n²) G_Y G_X; u_i, v_i are RKHS-orthonormal and Ĉ_YX v_i = σ_i u_i
    on the samples ((1/n) G_Y C_v = ... checked through the coefficients)."""
    X, Y, _, _ = paired
    n = X.shape[0]
    kx, ky = get_kernel("rbf"), get_kernel("rbf", gamma=5.0)
    Gx = KernelMatrix(kx, X).to_array()
    Gy = KernelMatrix(ky, Y).to_array()
    b = CrossCovarianceOperator(n_components=3, kernel_y_params={"gamma": 5.0},
                                jitter=1e-3).fit(tensor(X), tensor(Y))
    Gxj, Gyj = Gx + 1e-3 * np.eye(n), Gy + 1e-3 * np.eye(n)
    ev = np.sort(np.abs(np.linalg.eigvals(Gyj @ Gxj / n**2)))[::-1][:3]
    np.testing.assert_allclose(_np(b.singular_values_) ** 2, ev, rtol=dtol(1e-9))
    Cu, Cv = b.left_singular_functions_.coef, b.right_singular_functions_.coef
    np.testing.assert_allclose(Cu.T @ Gyj @ Cu, np.eye(3), atol=dtol(1e-9))
    np.testing.assert_allclose(Cv.T @ Gxj @ Cv, np.eye(3), atol=dtol(1e-9))
    # ⟨u_i, Ĉ_YX v_j⟩ = (1/n) C_uᵀ G_Y G_X C_v = diag(σ)
    np.testing.assert_allclose(Cu.T @ Gyj @ Gxj @ Cv / n, np.diag(_np(b.singular_values_)),
                               atol=dtol(1e-9))


def test_cross_covariance_torch_y_1d_float32_and_numpy(paired):
    X, Y, Xn, Yn = paired
    y = Y[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = CrossCovarianceOperator(n_components=2, jitter=1e-3).fit(X, y)
        b = CrossCovarianceOperator(n_components=2, jitter=1e-3).fit(
            tensor(X.astype(np.float32)), tensor(y.astype(np.float32)))
        c = CrossCovarianceOperator(n_components=2, jitter=1e-3, device=TEST_DEVICE).fit(X, y)
    xb, yb = b.transform(tensor(Xn.astype(np.float32)),
                         tensor(Yn[:, 0].astype(np.float32)))
    assert xb.dtype == torch.float32 and yb.dtype == torch.float32
    xa, ya = a.transform(Xn, Yn[:, 0])
    _same_up_to_sign(xb, xa, 1e-5)
    xc, yc = c.transform(Xn, Yn[:, 0])
    assert isinstance(xc, np.ndarray) and isinstance(yc, np.ndarray)
    _same_up_to_sign(xc, xa, 1e-11)
    _same_up_to_sign(yc, ya, 1e-11)


def test_cross_covariance_torch_refusals(paired):
    X, Y, Xn, _ = paired
    Xt, Yt = tensor(X), tensor(Y)
    with pytest.raises(NotImplementedError, match="method='auxiliary'"):
        CrossCovarianceOperator(method="auxiliary").fit(Xt, Yt)
    with pytest.raises(ValueError, match="y has 5 samples"):
        CrossCovarianceOperator().fit(Xt, Yt[:5])
    with pytest.raises(ValueError, match="y is None"):
        CrossCovarianceOperator().fit(Xt)
    with pytest.raises(ValueError, match="fitted on numpy"):
        CrossCovarianceOperator(n_components=2).fit(X, Y).transform(tensor(Xn))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = CrossCovarianceOperator(n_components=2).fit(Xt, Yt)
    with pytest.raises(ValueError, match="y has 3 features"):
        b.transform(tensor(Xn), torch.ones(20, 3, dtype=torch.float64, device=TEST_DEVICE))


def test_kernel_cca_is_not_routed_to_the_cross_covariance(paired):
    """Tensors given to KernelCCA go through its own torch fit (kernel CCA's correlations),
    never through the cross-covariance executor (which would return a different operator's
    SVD)."""
    from asymkern.operators import CrossCovarianceOperator, KernelCCA

    X, Y, Xn, _ = paired
    a = KernelCCA(n_components=2).fit(X, Y)
    b = KernelCCA(n_components=2).fit(tensor(X), tensor(Y))
    assert b.torch_fit_
    np.testing.assert_allclose(_np(b.canonical_correlations_), a.canonical_correlations_,
                               rtol=dtol(1e-12))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cc = CrossCovarianceOperator(n_components=2).fit(X, Y)
    assert not np.allclose(_np(b.canonical_correlations_), cc.singular_values_, rtol=1e-3)
    np.testing.assert_allclose(np.abs(_np(b.transform(Xn))), np.abs(a.transform(Xn)),
                               rtol=dtol(1e-8), atol=dtol(1e-10))


@pytest.mark.parametrize("center", [False, True])
def test_covariance_torch_signs_equal_numpy(center, data):
    """Both paths fix the eigenfunctions' signs the same way (largest-magnitude coefficient
    positive), so the features agree without any sign alignment."""
    X, Xn = data
    kw = dict(n_components=4, center=center, jitter=1e-3)
    a = CovarianceOperator(**kw).fit(X)
    b = CovarianceOperator(**kw).fit(tensor(X))
    np.testing.assert_allclose(_np(b.transform(tensor(Xn))), a.transform(Xn), rtol=0,
                               atol=dtol(1e-12))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_torch_pivoted_cholesky_pivots_as_numpy(dtype):
    """The torch executor's pivoted Cholesky is LAPACK's pstrf on a host copy of G, as the
    numpy path's: the same rank and pivots, the same factor (to rounding), on the device."""
    from asymkern._backend import ArrayOps
    from asymkern._torch.primitives import TorchOps

    rng = np.random.RandomState(3)
    X = rng.randn(120, 2)  # RBF Gram of 2-D data: numerically low-rank, pivoting matters
    G = np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)).astype(dtype)
    tol = 1e-10
    U0, p0, r0 = ArrayOps().pivoted_cholesky(G, tol)
    Gt = tensor(G)
    U1, p1, r1 = TorchOps().pivoted_cholesky(Gt, tol)
    assert r1 == r0 < 120
    np.testing.assert_array_equal(p1, p0)
    assert U1.device == Gt.device and U1.dtype == Gt.dtype
    np.testing.assert_allclose(to_np(U1), U0, rtol=0,
                               atol=dtol(1e-12 if dtype == np.float64 else 1e-6))
    np.testing.assert_array_equal(to_np(Gt), G)  # the input is not modified


def test_covariance_torch_centred_eigenfunctions_have_numpy_signs():
    """The sign rule reads the centred coefficients: the constant component that centring
    removes is arbitrary (the numpy and torch factors differ in it), and deciding the sign
    before centring gave eigenfunctions 2 and 3 of opposite signs on the two executors."""
    rng = np.random.default_rng(3)
    rng.normal(size=(299, 3))  # (the draws of the case that showed it)
    X = rng.normal(size=(300, 3))
    rng.normal(size=(300, 2))
    Xt = rng.normal(size=(20, 3))
    a = CovarianceOperator(n_components=4, center=True).fit(X)
    b = CovarianceOperator(n_components=4, center=True).fit(tensor(X))
    ta, tb = a.transform(Xt), to_np(b.transform(tensor(Xt)))
    np.testing.assert_allclose(tb, ta, rtol=0, atol=dtol(1e-9) * np.abs(ta).max())
