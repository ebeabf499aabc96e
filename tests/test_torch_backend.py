"""The torch backend (asymkern._torch) against the numpy path, on test-device tensors.

Every torch path is compared with the dense/numpy reference: 1e-12 relative in float64 and
1e-5 in float32 (norm-wise relative errors). No test depends on timing or on a GPU.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import TEST_DEVICE, dtol, tensor, to_np  # noqa: E402
from _torch_helpers import rel_norm as rel  # noqa: E402

from asymkern import KernelSVD  # noqa: E402
from asymkern._dispatch import is_torch_tensor, require_torch  # noqa: E402
from asymkern._torch.kernels import (  # noqa: E402
    SUPPORTED_KERNELS,
    TorchKernel,
    TorchKernelMatrix,
)
from asymkern.kernels import KernelMatrix, get_kernel  # noqa: E402
from asymkern.nystrom import NystromKernelRidge  # noqa: E402

# float32: up to 2.8e-6 measured under other BLAS kernels and thread counts (1e-5 sat at 3x)
TOL = {np.float64: dtol(1e-12), np.float32: 1e-4}



@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    return rng.randn(120, 4), rng.randn(100, 4) + 0.5, rng.randn(15, 4), rng.randn(12, 4)


# ------------------------------------------------------------------------------- kernel blocks
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["rbf", "gaussian", "laplacian", "linear", "polynomial", "cauchy",
                                  "sne", "t"])
def test_kernel_blocks_and_products_equal_numpy(name, dtype, data):
    X, Z, _, _ = data
    X, Z = (X + 3).astype(dtype), (Z + 3).astype(dtype)  # off the origin: the centring matters
    k = get_kernel(name)
    ref = KernelMatrix(k, X, Z).to_array()
    G = TorchKernelMatrix(TorchKernel(k, X.shape[1]), tensor(X), tensor(Z),
                          working_memory=0.02)  # many row blocks
    D = G.to_dense()
    assert D.dtype == tensor(X).dtype
    assert rel(D, ref) < TOL[dtype]
    rng = np.random.RandomState(1)
    B, C = rng.randn(Z.shape[0], 3).astype(dtype), rng.randn(X.shape[0], 3).astype(dtype)
    assert rel(G.matmat(tensor(B)), ref @ B) < TOL[dtype]
    assert rel(G.rmatmat(tensor(C)), ref.T @ C) < TOL[dtype]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("s", [1.0, -0.3, 2.5])
def test_scaled_sq_dists_one_gemm_against_float64(s, dtype):
    """s·‖x − z‖² by the augmented GEMM: far from the origin (the centring), with rows of X
    repeated in Z (identical rows give exactly 0: the near-duplicate recomputation) and rows a
    rounding apart, against the float64 differences."""
    rng = np.random.RandomState(3)
    Z = rng.randn(50, 5) + 1e3
    X = np.vstack([Z[:10], Z[10:15] + 1e-9, rng.randn(20, 5) + 1e3])
    X, Z = X.astype(dtype), Z.astype(dtype)
    X64, Z64 = X.astype(np.float64), Z.astype(np.float64)
    ref = s * ((X64[:, None, :] - Z64[None, :, :]) ** 2).sum(axis=2)
    c = TorchKernel.center(tensor(Z))
    S = to_np(TorchKernel.scaled_sq_dists(tensor(X), tensor(Z), c, s)).astype(np.float64)
    assert np.all(S[np.arange(10), np.arange(10)] == 0.0)
    eps = np.finfo(dtype).eps
    scale = np.abs(s) * ((X64 - X64.mean(0)) ** 2).sum(1).max() * 4  # the norms after centring
    assert np.max(np.abs(S - ref)) <= 20 * 7 * eps * scale + 4 * eps * np.abs(ref).max()
    assert np.all(np.sign(S[np.abs(ref) > 0]) == np.sign(s))  # never the wrong sign


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scaled_sq_dists_beyond_the_float_range(dtype):
    """A γ so large that γ‖x − z‖² overflows: the RBF values are 0 (and 1 on the diagonal),
    never NaN; data whose squared distances overflow raise OverflowError."""
    rng = np.random.RandomState(4)
    X = rng.randn(6, 3).astype(dtype)
    big = float(np.finfo(dtype).max) / 4
    K = TorchKernel(get_kernel("rbf", gamma=big), 3).raw(tensor(X), tensor(X))
    np.testing.assert_array_equal(to_np(K), np.eye(6, dtype=dtype))
    huge = (X * np.sqrt(np.finfo(dtype).max)).astype(dtype)
    with pytest.raises(OverflowError, match="overflow"):
        TorchKernel(get_kernel("rbf"), 3).raw(tensor(huge), tensor(huge[::-1].copy()))


def test_laplacian_distances_beyond_the_float32_range():
    """‖x − z‖₁ overflows float32 while γ‖x − z‖₁ does not: the block takes the float64
    route (as numpy does) instead of a silent 0."""
    X = np.array([[3e38, 0.0], [1.0, 2.0]], dtype=np.float32)
    Z = np.array([[-3e38, 1.0], [0.0, 0.0]], dtype=np.float32)
    k = get_kernel("laplacian", gamma=1e-39)
    ref = KernelMatrix(k, X, Z).to_array()
    assert 0.1 < ref[0, 0] < 1.0  # finite, not negligible
    got = to_np(TorchKernel(k, 2).raw(tensor(X), tensor(Z)))
    np.testing.assert_allclose(got, ref, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,params", [("linear", {}), ("polynomial", dict(degree=4, gamma=1.0,
                                                                            coef0=1.0))])
def test_inner_product_kernels_overflow_is_an_error(name, params, dtype):
    """Values beyond the float range raise OverflowError (the cheap bound of the data's
    magnitudes decides when the n×m values are read); large but finite values do not."""
    rng = np.random.RandomState(5)
    X = rng.randn(7, 3)
    tk = TorchKernel(get_kernel(name, **params), 3)
    limit = float(np.finfo(dtype).max)
    root = limit ** (1.0 / (8 if name == "polynomial" else 2))  # values ≈ (root²·xᵀz)^degree
    big = (X * root).astype(dtype)
    with pytest.raises(OverflowError, match="overflow the float range"):
        tk.raw(tensor(big), tensor(big))
    fine = (X * root / 10).astype(dtype)  # large, finite
    K = to_np(tk.raw(tensor(fine), tensor(fine)))
    ref = KernelMatrix(get_kernel(name, **params), fine, fine).to_array()
    assert np.all(np.isfinite(K))
    np.testing.assert_allclose(K, ref, rtol=1e-4 if dtype == np.float32 else dtol(1e-12))


def _grid_sets():
    """Integer data whose reference set has an integer mean: every squared distance, after
    the centring, is computed exactly, so the comparison isolates the normaliser."""
    rng = np.random.RandomState(2)
    half = rng.randint(-4, 5, size=(30, 3)).astype(np.float64)
    Z = np.vstack([half, -half])  # column means exactly 0
    X = rng.randint(-4, 5, size=(40, 3)).astype(np.float64)
    return X, Z


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["sne", "t"])
@pytest.mark.parametrize("bandwidth", [1e-4, 1e-2, 1.0, 1e3, 1e6])
def test_row_normalised_kernels_at_extreme_bandwidths(name, bandwidth, dtype):
    """Tiny bandwidths (exp(−γd²) underflows for all but the nearest point) and huge ones
    (every value ≈ 1/m): the log-sum-exp normaliser keeps every row finite, summing to 1."""
    X, Z = (a.astype(dtype) for a in _grid_sets())
    k = get_kernel(name, bandwidth=bandwidth)
    ref = KernelMatrix(k, X, Z).to_array()
    for route in ("to_dense", "blocks"):  # one pass over the formed matrix, or the streamed
        # normalisers over column blocks first and then the values
        G = TorchKernelMatrix(TorchKernel(k, 3), tensor(X), tensor(Z), working_memory=0.01)
        if route == "blocks":
            G.prepare()
        D = G.to_dense() if route == "to_dense" else G.block(slice(None), slice(None))
        assert bool(torch.isfinite(D).all())
        np.testing.assert_allclose(to_np(D.double().sum(dim=1)), 1.0, rtol=TOL[dtype])
        assert rel(D, ref) < TOL[dtype]


def test_unsupported_kernel_names_kernel_and_list(data):
    X, Z, _, _ = data
    with pytest.raises(ValueError, match="kernel=.*supported kernels: rbf"):
        KernelSVD(kernel=lambda A, B: A @ B.T).fit(tensor(X), Z=tensor(Z))
    assert "sne" in SUPPORTED_KERNELS and "t" in SUPPORTED_KERNELS


# ------------------------------------------------------------------------------------- KernelSVD
SOLVERS = [("dense", {}), ("randomized", {}), ("block_krylov", {}),
           ("nystrom", {"n_row_landmarks": 60, "n_col_landmarks": 50}),
           ("nystrom", {"n_row_landmarks": 60, "nystrom_params": {"orthogonalize": True}}),
           ("nystrom", {"n_row_landmarks": 60, "nystrom_params": {"normalize": True},
                        "sampling": "kmeans"}),
           ("nystrom", {"n_row_landmarks": 60, "sampling": "leverage"}),
           ("auto", {})]


def _both(kw, X, Z, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # noise-level warnings are the same on both paths
        a = KernelSVD(**kw).fit(X.astype(dtype), Z=Z.astype(dtype))
        b = KernelSVD(**kw).fit(tensor(X.astype(dtype)),
                                Z=tensor(Z.astype(dtype)))
    return a, b


@pytest.mark.parametrize("solver,opts", SOLVERS)
@pytest.mark.parametrize("kernel", ["rbf", "sne", "t", "laplacian", "polynomial", "linear"])
def test_ksvd_torch_equals_numpy_float64(kernel, solver, opts, data):
    X, Z, Xn, Zn = data
    a, b = _both(dict(n_components=3, kernel=kernel, solver=solver, random_state=0, **opts),
                 X, Z, np.float64)
    assert b.solver_ == a.solver_ or solver == "auto"
    for attr in ("singular_values_", "left_singular_vectors_", "right_singular_vectors_"):
        got = getattr(b, attr)
        assert is_torch_tensor(got) and got.dtype == torch.float64
        assert rel(got, getattr(a, attr)) < dtol(1e-12), attr
    assert rel(b.transform(tensor(Xn)), a.transform(Xn)) < dtol(1e-12)
    assert rel(b.transform_right(tensor(Zn)), a.transform_right(Zn)) < dtol(1e-12)
    assert rel(b.fit_transform(tensor(X), Z=tensor(Z)), a.embeddings()[0]) \
        < dtol(1e-12)


@pytest.mark.parametrize("solver,opts", [SOLVERS[1], SOLVERS[2], SOLVERS[3]])
@pytest.mark.parametrize("kernel", ["rbf", "sne"])
def test_ksvd_torch_equals_numpy_float32(kernel, solver, opts, data):
    X, Z, Xn, Zn = data
    a, b = _both(dict(n_components=3, kernel=kernel, solver=solver, random_state=0, **opts),
                 X, Z, np.float32)
    # the dtypes of the numpy fit: float32, but float64 Nyström σ (the scores stay float32)
    f64 = solver == "nystrom"
    assert b.singular_values_.dtype == (torch.float64 if f64 else torch.float32)
    assert to_np(b.singular_values_).dtype == a.singular_values_.dtype
    assert b.left_singular_vectors_.dtype == torch.float32
    assert rel(b.singular_values_, a.singular_values_) < TOL[np.float32]
    t = b.transform(tensor(Xn.astype(np.float32)))
    assert t.dtype == torch.float32
    assert to_np(t).dtype == a.transform(Xn.astype(np.float32)).dtype == np.float32
    assert rel(t, a.transform(Xn.astype(np.float32))) < TOL[np.float32]
    assert rel(b.transform_right(tensor(Zn.astype(np.float32))),
               a.transform_right(Zn.astype(np.float32))) < TOL[np.float32]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("solver", ["dense", "randomized", "block_krylov", "auto"])
@pytest.mark.parametrize("kernel", ["rbf", "sne", "linear"])
def test_ksvd_torch_centered_equals_numpy(kernel, solver, dtype, data):
    """center=True (G̃ = H_n G H_m, paper 000 §2) on torch equals the numpy path: the singular
    triplets, the training means and the centred scores of new rows and columns."""
    X, Z, Xn, Zn = data
    keep = [A.copy() for A in (X, Z, Xn, Zn)]
    a, b = _both(dict(n_components=3, kernel=kernel, solver=solver, random_state=0,
                      center=True), X, Z, dtype)
    tol = TOL[dtype]
    assert b.singular_values_.dtype == (torch.float64 if dtype == np.float64 else torch.float32)
    assert rel(b.singular_values_, a.singular_values_) < tol
    for attr in ("left_singular_vectors_", "right_singular_vectors_", "row_means_",
                 "col_means_"):
        got = getattr(b, attr)
        assert is_torch_tensor(got), attr
        assert rel(got, getattr(a, attr)) < tol, attr
    assert abs(b.grand_mean_ - a.grand_mean_) <= tol * abs(a.grand_mean_)
    assert rel(b.transform(tensor(Xn.astype(dtype))), a.transform(Xn.astype(dtype))) \
        < 10 * tol
    assert rel(b.transform_right(tensor(Zn.astype(dtype))),
               a.transform_right(Zn.astype(dtype))) < 10 * tol
    # the training scores: the centred embeddings of the fit
    assert rel(b.transform(tensor(X.astype(dtype))), a.embeddings()[0]) < 10 * tol
    for A, B in zip((X, Z, Xn, Zn), keep):
        np.testing.assert_array_equal(A, B)


def test_ksvd_torch_centered_against_dense_reference(data):
    """The centred torch fit against an SVD of H_n G H_m formed densely with numpy."""
    X, Z, Xn, _ = data
    G = KernelMatrix(get_kernel("rbf", gamma=0.5), X, Z).to_array()
    Gc = G - G.mean(1, keepdims=True) - G.mean(0, keepdims=True) + G.mean()
    s_ref = np.linalg.svd(Gc, compute_uv=False)[:4]
    b = KernelSVD(n_components=4, kernel="rbf", gamma=0.5, solver="dense", center=True).fit(
        tensor(X), Z=tensor(Z))
    assert rel(b.singular_values_, s_ref) < dtol(1e-12)
    U = to_np(b.left_singular_vectors_)
    np.testing.assert_allclose(np.abs(U.T @ Gc @ to_np(b.right_singular_vectors_)),
                               np.diag(s_ref), atol=dtol(1e-10))
    # scores of new rows: centred with their own means and the training column means
    Kn = KernelMatrix(get_kernel("rbf", gamma=0.5), Xn, Z).to_array()
    Knc = Kn - Kn.mean(1, keepdims=True) - G.mean(0)[None, :] + G.mean()
    assert rel(b.transform(tensor(Xn)), Knc @ to_np(b.right_singular_vectors_)) \
        < dtol(1e-12)


def test_ksvd_torch_centered_precomputed(data):
    X, Z, Xn, _ = data
    G = KernelMatrix(get_kernel("rbf", gamma=0.5), X, Z).to_array()
    Gn = KernelMatrix(get_kernel("rbf", gamma=0.5), Xn, Z).to_array()
    a = KernelSVD(n_components=3, kernel="precomputed", solver="dense", center=True).fit(G)
    Gt = tensor(G.copy())
    b = KernelSVD(n_components=3, kernel="precomputed", solver="dense", center=True).fit(Gt)
    np.testing.assert_array_equal(to_np(Gt), G)  # the given kernel matrix is not centred in place
    assert rel(b.singular_values_, a.singular_values_) < dtol(1e-12)
    assert b.row_means_.dtype == torch.float64
    assert rel(b.transform(tensor(Gn)), a.transform(Gn)) < dtol(1e-12)



@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sampling", ["uniform", "kmeans", "leverage"])
@pytest.mark.parametrize("kernel", ["rbf", "sne", "linear"])
def test_ksvd_torch_centered_nystrom_equals_numpy(kernel, sampling, dtype, data):
    """center=True with solver='nystrom' on torch: the landmark blocks G̃[I, J] and the
    extension products of the centred matrix equal the numpy path's centred KernelMatrix."""
    X, Z, Xn, Zn = data
    kw = dict(n_components=3, kernel=kernel, solver="nystrom", random_state=0, center=True,
              n_row_landmarks=30, n_col_landmarks=25, sampling=sampling)
    a, b = _both(kw, X, Z, dtype)
    tol = TOL[dtype]
    np.testing.assert_array_equal(b.row_landmarks_, a.row_landmarks_)
    assert rel(b.singular_values_, a.singular_values_) < tol
    assert rel(b.left_singular_vectors_, a.left_singular_vectors_) < 10 * tol
    assert rel(b.transform(tensor(Xn.astype(dtype))), a.transform(Xn.astype(dtype))) \
        < 10 * tol
    assert rel(b.transform_right(tensor(Zn.astype(dtype))),
               a.transform_right(Zn.astype(dtype))) < 10 * tol


def test_ksvd_torch_centered_nystrom_all_landmarks_is_exact(data):
    """With every row and column as a landmark the asymmetric Nyström SVD of G̃ is exact: the
    torch fit equals an SVD of H_n G H_m formed densely with numpy, also for a precomputed G."""
    X, Z, Xn, _ = data
    G = KernelMatrix(get_kernel("rbf", gamma=0.5), X, Z).to_array()
    Gc = G - G.mean(1, keepdims=True) - G.mean(0, keepdims=True) + G.mean()
    s_ref = np.linalg.svd(Gc, compute_uv=False)[:3]
    n, m = G.shape
    kw = dict(n_components=3, solver="nystrom", center=True, random_state=0,
              n_row_landmarks=n, n_col_landmarks=m)
    b = KernelSVD(kernel="rbf", gamma=0.5, **kw).fit(tensor(X), Z=tensor(Z))
    assert rel(b.singular_values_, s_ref) < dtol(1e-10)
    c = KernelSVD(kernel="precomputed", **kw).fit(tensor(G))
    assert rel(c.singular_values_, s_ref) < dtol(1e-10)
    Gn = KernelMatrix(get_kernel("rbf", gamma=0.5), Xn, Z).to_array()
    Gnc = Gn - Gn.mean(1, keepdims=True) - G.mean(0)[None, :] + G.mean()
    V = to_np(c.right_singular_vectors_)
    assert rel(c.transform(tensor(Gn)), Gnc @ V) < dtol(1e-9)
    assert rel(b.transform(tensor(Xn)), Gnc @ to_np(b.right_singular_vectors_)) < dtol(1e-9)


def _signed(got, want):
    got = got.detach().cpu().numpy() if is_torch_tensor(got) else np.asarray(got)
    signs = np.sign(np.sum(got * want, axis=0))
    signs[signs == 0] = 1
    return got * signs


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("which", ["rows", "cols", "both"])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("kernel,solver", [("rbf", "dense"), ("sne", "dense"),
                                           ("linear", "randomized"), ("sne", "randomized")])
def test_ksvd_torch_weighted_equals_numpy(kernel, solver, center, which, dtype, data):
    """sample_weight / sample_weight_Z on torch (G_w = W^{1/2} G̃ W_z^{1/2}, with the weighted
    normaliser of a row-normalised kernel and weighted centring) equal the numpy path: the
    singular values, the scores of new rows and columns and the training embeddings."""
    X, Z, Xn, Zn = data
    rng = np.random.RandomState(5)
    w = rng.uniform(0, 2, len(X)) if which != "cols" else None
    wz = rng.uniform(0, 2, len(Z)) if which != "rows" else None
    if wz is not None:
        wz[2] = 0.0  # a column of weight zero
    kw = dict(n_components=3, kernel=kernel, solver=solver, center=center, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = KernelSVD(**kw).fit(X.astype(dtype), Z=Z.astype(dtype), sample_weight=w,
                                sample_weight_Z=wz)
        b = KernelSVD(**kw).fit(tensor(X.astype(dtype)),
                                Z=tensor(Z.astype(dtype)),
                                sample_weight=None if w is None else tensor(w),
                                sample_weight_Z=wz)
    tol = 10 * TOL[dtype]
    assert rel(b.singular_values_, a.singular_values_) < tol
    np.testing.assert_array_equal(b.sample_weight_, a.sample_weight_)
    ta = a.transform(Xn.astype(dtype))
    assert rel(_signed(b.transform(tensor(Xn.astype(dtype))), ta), ta) < tol
    tr = a.transform_right(Zn.astype(dtype))
    assert rel(_signed(b.transform_right(tensor(Zn.astype(dtype))), tr), tr) < tol
    for got, want in zip(b.embeddings(), a.embeddings()):
        assert is_torch_tensor(got)
        assert rel(_signed(got, want), want) < tol


def test_ksvd_torch_integer_weights_repeat_rows(data):
    """Integer weights are the fit on the set in which x_i is repeated w_i times (and z_j
    w_z,j times): the same singular values as a dense SVD of that repeated-rows matrix (class
    Notes of KernelSVD), for a row-normalised kernel and centring."""
    X, Z, _, _ = data
    rng = np.random.RandomState(2)
    w, wz = rng.randint(1, 4, len(X)), rng.randint(1, 4, len(Z))
    Xr, Zr = np.repeat(X, w, axis=0), np.repeat(Z, wz, axis=0)
    G = KernelMatrix(get_kernel("sne", gamma=0.5), Xr, Zr).to_array()
    Gc = G - G.mean(1, keepdims=True) - G.mean(0, keepdims=True) + G.mean()
    s_ref = np.linalg.svd(Gc, compute_uv=False)[:3]
    b = KernelSVD(n_components=3, kernel="sne", gamma=0.5, solver="dense", center=True).fit(
        tensor(X), Z=tensor(Z), sample_weight=w, sample_weight_Z=wz)
    assert rel(b.singular_values_, s_ref) < dtol(1e-12)


def test_ksvd_torch_weighted_precomputed(data):
    X, Z, Xn, Zn = data
    k = get_kernel("rbf", gamma=0.5)
    G, Gn, Gc = k(X, Z), k(Xn, Z), k(X, Zn).T
    w = np.random.RandomState(1).uniform(0.5, 2, len(X))
    kw = dict(n_components=3, kernel="precomputed", solver="dense", center=True)
    a = KernelSVD(**kw).fit(G, sample_weight=w)
    b = KernelSVD(**kw).fit(tensor(G), sample_weight=w)
    assert rel(b.singular_values_, a.singular_values_) < dtol(1e-12)
    ta, tr = a.transform(Gn), a.transform_right(Gc)
    assert rel(_signed(b.transform(tensor(Gn)), ta), ta) < dtol(1e-11)
    assert rel(_signed(b.transform_right(tensor(Gc)), tr), tr) < dtol(1e-11)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("compat", ["pca", "pinv", "random", "a1"])
@pytest.mark.parametrize("kernel", ["rbf", "sne"])
def test_ksvd_torch_compat_equals_numpy(kernel, compat, dtype):
    """fit(A) with a non-square data matrix on torch: the compatibility transform on the host
    (same random_state), the kernel SVD on the device; new rows of A and new columns (given as
    rows) go through the fitted transform."""
    rng = np.random.RandomState(0)
    A = rng.uniform(0, 1, (60, 40)).astype(dtype)
    Xn, Zn = rng.uniform(0, 1, (5, 40)).astype(dtype), rng.uniform(0, 1, (4, 60)).astype(dtype)
    keep = A.copy()
    kw = dict(n_components=3, kernel=kernel, compat=compat, random_state=0, solver="dense")
    a = KernelSVD(**kw).fit(A)
    b = KernelSVD(**kw).fit(tensor(A))
    tol = 10 * TOL[dtype]
    assert b.n_features_in_ == 40 and b.z_features_in_ == 60
    assert rel(b.singular_values_, a.singular_values_) < tol
    ta, tr = a.transform(Xn), a.transform_right(Zn)
    assert rel(_signed(b.transform(tensor(Xn)), ta), ta) < tol
    assert rel(_signed(b.transform_right(tensor(Zn)), tr), tr) < tol
    c = KernelSVD(**kw, device=TEST_DEVICE).fit(A)
    out = c.transform(Xn)
    assert isinstance(out, np.ndarray) and rel(_signed(out, ta), ta) < tol
    np.testing.assert_array_equal(A, keep)


def test_ksvd_torch_compat_none_refuses_a_non_square_matrix():
    A = tensor(np.random.RandomState(0).rand(30, 20))
    with pytest.raises(ValueError, match="set compat to"):
        KernelSVD(2, compat=None).fit(A)


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("sampling", ["uniform", "kmeans", "leverage"])
@pytest.mark.parametrize("estimate", ["change", "residual"])
def test_ksvd_torch_nystrom_tol_equals_numpy(estimate, sampling, center):
    """Growth to a tolerance on torch follows the numpy path's rule on the same random stream:
    the same landmark counts and landmarks at every step, the same estimates, the same stop
    and the same singular values.

    The estimates are a-posteriori η values of Nyström factors whose cores are ill-conditioned
    at hundreds of landmarks: another BLAS / device moves them by rounding (1e-13 relative
    measured here between MKL-torch and OpenBLAS-numpy), so they are compared to 1e-6, and a
    stop may only differ where the deciding estimate lies within that margin of ``tol`` (the
    decision est ≤ tol then belongs to rounding, and the longer run must carry on the same
    steps). With gamma=0.2 and one component several growths stop before the full matrix."""
    rng = np.random.RandomState(7)
    X, Z = rng.randn(700, 3), rng.randn(600, 3) + 0.3
    tol_g = 1e-3
    kw = dict(kernel="rbf", gamma=0.2, n_components=1, solver="nystrom", random_state=0,
              center=center,
              sampling=sampling, nystrom_params={"tol": tol_g, "estimate": estimate})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = KernelSVD(**kw).fit(X, Z=Z)
        b = KernelSVD(**kw).fit(tensor(X), Z=tensor(Z))
    ha, hb = a.nystrom_.info["history"], b.nystrom_.info["history"]
    margin = 1e-6
    for x, y in zip(ha, hb):
        assert (y["n_row_landmarks"], y["n_col_landmarks"]) == \
            (x["n_row_landmarks"], x["n_col_landmarks"])
        if np.isfinite(x["estimate"]) or np.isfinite(y["estimate"]):
            assert abs(y["estimate"] - x["estimate"]) <= margin * max(abs(x["estimate"]), tol_g)
    if len(ha) != len(hb):  # a stop moved by rounding: only where est is within margin of tol
        short = ha if len(ha) < len(hb) else hb
        assert abs(short[-1]["estimate"] - tol_g) <= 2 * margin * tol_g, (ha, hb)
        return
    for info in (a.nystrom_.info, b.nystrom_.info):  # the stop obeys the criterion
        assert info["converged"] == (info["history"][-1]["estimate"] <= tol_g)
        assert all(h["estimate"] > tol_g for h in info["history"][:-1])
    assert b.nystrom_.info["converged"] == a.nystrom_.info["converged"]
    np.testing.assert_array_equal(b.row_landmarks_, a.row_landmarks_)
    np.testing.assert_array_equal(b.col_landmarks_, a.col_landmarks_)
    assert rel(b.singular_values_, a.singular_values_) < dtol(1e-12)


def test_ksvd_torch_nystrom_tol_cap_and_precomputed(data):
    """max_landmarks caps the growth (a RuntimeWarning when tol is not reached), on a
    precomputed G as on numpy."""
    rng = np.random.RandomState(8)
    X, Z = rng.randn(500, 3), rng.randn(400, 3)
    G = KernelMatrix(get_kernel("rbf", gamma=0.5), X, Z).to_array()
    kw = dict(kernel="precomputed", n_components=3, solver="nystrom", random_state=0,
              nystrom_params={"tol": 1e-14, "max_landmarks": 128})
    with pytest.warns(RuntimeWarning, match="did not reach tol"):
        a = KernelSVD(**kw).fit(G)
    with pytest.warns(RuntimeWarning, match="did not reach tol"):
        b = KernelSVD(**kw).fit(tensor(G))
    assert [h["n_row_landmarks"] for h in b.nystrom_.info["history"]] == [64, 128]
    np.testing.assert_array_equal(b.row_landmarks_, a.row_landmarks_)
    assert rel(b.singular_values_, a.singular_values_) < dtol(1e-12)

def test_ksvd_data_matrix_precomputed_and_bandwidth(data):
    X, Z, Xn, _ = data
    A = np.random.RandomState(3).rand(40, 40)
    a = KernelSVD(2, random_state=0).fit(A)
    b = KernelSVD(2, random_state=0).fit(tensor(A))
    assert rel(b.singular_values_, a.singular_values_) < dtol(1e-12)
    G = KernelMatrix(get_kernel("sne"), X, Z).to_array()
    for solver in ("randomized", "nystrom"):
        a = KernelSVD(2, kernel="precomputed", solver=solver, random_state=0).fit(G)
        b = KernelSVD(2, kernel="precomputed", solver=solver, random_state=0).fit(
            tensor(G))
        assert rel(b.left_singular_vectors_, a.left_singular_vectors_) < dtol(1e-12)
        assert rel(b.transform(tensor(G[:5])), a.transform(G[:5])) < dtol(1e-12)
    kw = dict(n_components=2, kernel="sne", kernel_params={"bandwidth": "auto"})
    a = KernelSVD(**kw).fit(X, Z=Z)
    b = KernelSVD(**kw).fit(tensor(X), Z=tensor(Z))
    assert b.bandwidth_ == pytest.approx(a.bandwidth_, rel=dtol(1e-12))
    assert rel(b.transform(tensor(Xn)), a.transform(Xn)) < dtol(1e-12)


def test_ksvd_device_with_numpy_gives_numpy(data):
    X, Z, Xn, Zn = data
    X32 = X.astype(np.float32)
    before = X32.copy()
    a = KernelSVD(3, solver="randomized", random_state=0).fit(X32, Z=Z.astype(np.float32))
    b = KernelSVD(3, solver="randomized", random_state=0, device=TEST_DEVICE).fit(
        X32, Z=Z.astype(np.float32))
    np.testing.assert_array_equal(X32, before)  # input not modified
    for attr in ("singular_values_", "left_singular_vectors_", "X_fit_"):
        got = getattr(b, attr)
        assert isinstance(got, np.ndarray) and got.dtype == np.float32, attr
    out = b.transform(Xn.astype(np.float32))
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert rel(out, a.transform(Xn.astype(np.float32))) < 1e-5
    assert b.n_features_in_ == 4


def test_same_random_state_same_result(data):
    X, Z, _, _ = data
    kw = dict(n_components=3, solver="nystrom", random_state=7,
              n_row_landmarks=30)
    b1 = KernelSVD(**kw).fit(tensor(X), Z=tensor(Z))
    b2 = KernelSVD(**kw).fit(tensor(X), Z=tensor(Z))
    assert torch.equal(b1.left_singular_vectors_, b2.left_singular_vectors_)
    np.testing.assert_array_equal(b1.row_landmarks_, b2.row_landmarks_)


def test_ksvd_torch_refusals(data):
    X, Z, _, _ = data
    Xt, Zt = tensor(X), tensor(Z)
    with pytest.raises(ValueError, match="sample_weight must be a 1-D array"):
        KernelSVD().fit(Xt, Z=Zt, sample_weight=np.ones(len(X) + 1))
    with pytest.raises(ValueError, match="sample_weight_Z"):
        KernelSVD().fit(Xt, Z=Zt, sample_weight_Z=-np.ones(len(Z)))
    # issue 29: complex weights (numpy or tensors) are refused, never cast to real
    with pytest.raises(ValueError, match="sample_weight is complex-valued"):
        KernelSVD().fit(Xt, Z=Zt, sample_weight=torch.ones(len(X), dtype=torch.complex128))
    with pytest.raises(ValueError, match="sample_weight_Z is complex-valued"):
        KernelSVD().fit(Xt, Z=Zt, sample_weight_Z=np.ones(len(Z)) + 1e-3j)
    with pytest.raises(ValueError, match="tol"):
        KernelSVD(solver="nystrom", nystrom_params={"tol": -0.1}).fit(Xt, Z=Zt)
    with pytest.raises(ValueError, match="estimate must be one of"):
        KernelSVD(solver="nystrom", nystrom_params={"tol": 0.1, "estimate": "x"}).fit(Xt, Z=Zt)
    with pytest.raises(ValueError, match="NaN"):
        KernelSVD().fit(torch.full((5, 2), float("nan"), device=TEST_DEVICE), Z=Zt[:, :2])
    with pytest.raises(ValueError, match="expecting 4 features"):
        KernelSVD().fit(Xt, Z=Zt).transform(torch.ones(3, 2, dtype=torch.float64,
            device=TEST_DEVICE))


# ------------------------------------------------------------------------------------ devices
@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "npu0"])
def test_bad_device_string(bad, data):
    X, Z, _, _ = data
    with pytest.raises(ValueError, match="device="):
        KernelSVD(device=bad).fit(X, Z=Z)


def test_device_type_and_missing_cuda(data):
    X, Z, _, _ = data
    with pytest.raises(TypeError, match="device must be"):
        KernelSVD(device=3).fit(X, Z=Z)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            NystromKernelRidge(device="cuda").fit(X, X[:, 0])


def test_torch_not_installed_names_extra(monkeypatch, data):
    X, Z, _, _ = data
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    with pytest.raises(ImportError, match=r"asymkern\[torch\]"):
        require_torch()
    with pytest.raises(ImportError, match=r"asymkern\[torch\]"):
        KernelSVD(device=TEST_DEVICE).fit(X, Z=Z)
    with pytest.raises(ImportError, match=r"asymkern\[torch\]"):
        NystromKernelRidge(device=TEST_DEVICE).fit(X, X[:, 0])
    assert not is_torch_tensor(X)
    KernelSVD(2).fit(X, Z=Z)  # the numpy path needs no torch


def test_importing_asymkern_does_not_import_torch():
    code = ("import sys, asymkern, asymkern._torch, asymkern.decomposition, asymkern.nystrom; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------- NystromKernelRidge
@pytest.fixture(scope="module")
def reg():
    rng = np.random.RandomState(4)
    X = rng.randn(300, 3)
    y = np.sin(X).sum(axis=1) + 0.1 * rng.randn(300)
    return X, y, rng.rand(300), rng.randn(25, 3)


@pytest.mark.parametrize("mode", ["lla", "ncr", "gsa", "spa"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("multi", [False, True])
def test_krr_torch_equals_numpy_float64(mode, fit_intercept, weighted, multi, reg):
    X, y, w, Xn = reg
    Y = np.c_[y, y**2] if multi else y
    sw = w if weighted else None
    kw = dict(mode=mode, n_landmarks=30, alpha=0.5, kernel="laplacian", gamma=1.0,
              fit_intercept=fit_intercept, random_state=1)
    a = NystromKernelRidge(**kw).fit(X, Y, sample_weight=sw)
    b = NystromKernelRidge(**kw).fit(tensor(X), tensor(Y), sample_weight=sw)
    np.testing.assert_array_equal(b.landmark_indices_, a.landmark_indices_)
    assert rel(b.landmark_coef_, a.landmark_coef_) < dtol(1e-12)
    p = b.predict(tensor(Xn))
    assert is_torch_tensor(p) and p.dtype == torch.float64 and tuple(p.shape) == a.predict(
        Xn).shape
    assert rel(p, a.predict(Xn)) < dtol(1e-12)
    if mode in ("gsa", "spa"):
        assert rel(b.dual_coef_, a.dual_coef_) < dtol(1e-12)
    if mode == "gsa":
        assert rel(b.predict_lla(tensor(Xn)), a.predict_lla(Xn)) < dtol(1e-12)
    c = NystromKernelRidge(device=TEST_DEVICE, **kw).fit(X, Y, sample_weight=sw)
    pc = c.predict(Xn)
    assert isinstance(pc, np.ndarray) and rel(pc, a.predict(Xn)) < dtol(1e-12)


@pytest.mark.parametrize("mode", ["lla", "ncr", "gsa", "spa"])
@pytest.mark.parametrize("landmarks", ["kmeans", "leverage"])
def test_krr_torch_landmark_selectors_equal_numpy(landmarks, mode, reg):
    """k-means and leverage-score landmarks on torch: chosen on the host by the numpy samplers
    from the same random stream (same indices and centres), the machine on the device."""
    X, y, w, Xn = reg
    kw = dict(mode=mode, n_landmarks=30, alpha=0.5, kernel="laplacian", gamma=1.0,
              landmarks=landmarks, random_state=1)
    a = NystromKernelRidge(**kw).fit(X, y, sample_weight=w)
    b = NystromKernelRidge(**kw).fit(tensor(X), tensor(y), sample_weight=w)
    np.testing.assert_array_equal(b.landmark_indices_, a.landmark_indices_)
    np.testing.assert_array_equal(to_np(b.landmarks_), a.landmarks_)
    assert rel(b.predict(tensor(Xn)), a.predict(Xn)) < dtol(1e-12)

@pytest.mark.parametrize("mode", ["lla", "ncr", "gsa", "spa"])
def test_krr_torch_float32(mode, reg):
    X, y, _, Xn = reg
    X32, Xn32 = X.astype(np.float32), Xn.astype(np.float32)
    kw = dict(mode=mode, n_landmarks=30, alpha=0.5, gamma=0.5, random_state=1)
    a = NystromKernelRidge(**kw).fit(X32, y)
    b = NystromKernelRidge(**kw).fit(tensor(X32), tensor(y))
    p = b.predict(tensor(Xn32))
    assert p.dtype == torch.float32
    assert rel(p, a.predict(Xn32)) < 1e-5
    assert b.score(tensor(X32), y) == pytest.approx(a.score(X32, y), rel=1e-5)



@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("two_d", [False, True])
def test_krr_torch_exact_equals_numpy_and_dense(fit_intercept, weighted, two_d, reg):
    """mode='exact' on torch (the n×n machine of paper 004 on the device) equals the numpy path
    and, without intercept or weights, the dense solve (K + alpha I)⁻¹y. With an intercept the
    predictions k(x, X)a + b add Σa·k̄(x) with Σa = 0 only to rounding: the numpy path itself
    moves by ~1e-10 when the training rows are permuted, so that case is checked to 1e-9."""
    X, y, _, Xn = reg
    rng = np.random.RandomState(3)
    Y = np.c_[y, y**2] if two_d else y
    sw = rng.uniform(0.2, 2, len(X)) if weighted else None
    keep = (X.copy(), np.array(Y, copy=True))
    kw = dict(mode="exact", alpha=1e-2, fit_intercept=fit_intercept)
    a = NystromKernelRidge(**kw).fit(X, Y, sample_weight=sw)
    b = NystromKernelRidge(**kw).fit(tensor(X), tensor(Y),
                                     sample_weight=sw)
    tol = dtol(1e-9 if fit_intercept else 1e-12)
    pa, pb = a.predict(Xn), b.predict(tensor(Xn))
    assert is_torch_tensor(pb) and tuple(pb.shape) == pa.shape
    assert rel(pb, pa) < tol
    assert rel(b.dual_coef_, a.dual_coef_) < dtol(1e-10)
    assert b.basis_ is None and b.subspace_dim_ == len(X)
    if not fit_intercept and not weighted:
        k = get_kernel("rbf")
        ref = k(Xn, X) @ np.linalg.solve(k(X) + 1e-2 * np.eye(len(X)), Y)
        assert rel(pb, ref) < dtol(1e-11)
    c = NystromKernelRidge(**kw, device=TEST_DEVICE).fit(X, Y, sample_weight=sw)
    assert isinstance(c.predict(Xn), np.ndarray) and rel(c.predict(Xn), pa) < tol
    np.testing.assert_array_equal(X, keep[0])
    np.testing.assert_array_equal(Y, keep[1])


def test_krr_torch_fit_never_shares_the_callers_memory(reg):
    """GSA and exact predict with K(X, X_fit): the model keeps its own copy of X."""
    X, y, _, Xn = reg
    for mode in ("gsa", "exact"):
        Xt = tensor(X.copy())
        b = NystromKernelRidge(mode=mode, n_landmarks=20, random_state=0).fit(Xt, y)
        before = b.predict(tensor(Xn)).clone()
        Xt.mul_(2.0)
        assert torch.equal(b.predict(tensor(Xn)), before), mode

def test_krr_torch_refusals(reg):
    X, y, _, _ = reg
    Xt = tensor(X)
    # gsa_solver='woodbury', landmarks='gaussian' and kernel='precomputed' run on torch
    # (tests/test_torch_krr.py); solver='sklearn' is scikit-learn's host solver
    with pytest.raises(NotImplementedError, match="solver='sklearn'.*scikit-learn"):
        NystromKernelRidge(solver="sklearn").fit(Xt, y)
    with pytest.raises(ValueError, match="subspace_dim"):
        NystromKernelRidge(mode="ncr", subspace_dim=5).fit(Xt, y)
    with pytest.raises(ValueError, match="positive semi-definite|psd|PSD|symmetric"):
        NystromKernelRidge(kernel="sne").fit(Xt, y)
    b = NystromKernelRidge(n_landmarks=20, random_state=0).fit(Xt, y)
    with pytest.raises(ValueError, match="expecting 3 features"):
        b.predict(torch.ones(2, 5, dtype=torch.float64, device=TEST_DEVICE))


@pytest.mark.parametrize("name", ["NystromKernelRidge", "NystromKernelPCA", "NystromSVC"])
def test_machines_refit_on_tensors_forgets_feature_names_and_refuses_empty(name):
    """A refit on tensors (no column names) drops the feature names of an earlier DataFrame
    fit, as scikit-learn's validation does; an empty tensor is refused by name."""
    pd = pytest.importorskip("pandas")
    import asymkern.nystrom as machines

    rng = np.random.RandomState(0)
    X = rng.randn(30, 2)
    y = (X[:, 0] > 0).astype(int)
    est = getattr(machines, name)(n_landmarks=8, random_state=0)
    args = () if name == "NystromKernelPCA" else (y,)
    est.fit(pd.DataFrame(X, columns=["a", "b"]), *args)
    assert list(est.feature_names_in_) == ["a", "b"]
    est.fit(tensor(X), *(tensor(a) for a in args))
    assert est.torch_fit_ and not hasattr(est, "feature_names_in_")
    assert est.n_features_in_ == 2
    with pytest.raises(ValueError, match="0 sample"):
        est.fit(torch.empty((0, 2), dtype=torch.float64, device=TEST_DEVICE),
                *(torch.empty(0, dtype=torch.int64, device=TEST_DEVICE) for _ in args))


@pytest.mark.parametrize("name,mode", [("NystromKernelRidge", "lla"),
                                       ("NystromKernelRidge", "gsa"),
                                       ("NystromKernelPCA", "lla"), ("NystromSVC", "spa")])
def test_approximation_errors_of_torch_fits_equal_numpy(name, mode):
    """The approximation errors of paper 004 (eq. (15), (19)) read machines fitted on torch
    (their tensor attributes, copied to the host) and equal those of the numpy fits."""
    import asymkern.nystrom as machines
    from asymkern.nystrom import approximation_error, gsa_approximation_error

    rng = np.random.RandomState(2)
    X = rng.randn(60, 2)
    y = np.where(X[:, 0] + 0.3 * rng.randn(60) > 0, 1, -1) if name == "NystromSVC" else \
        np.sin(X[:, 0])
    args = () if name == "NystromKernelPCA" else (y,)
    kw = {"n_components": 2} if name == "NystromKernelPCA" else {}
    if name == "NystromSVC":
        kw = {"tol": 1e-12}
    cls = getattr(machines, name)

    def fit(m, on_tensor):
        est = cls(mode=m, n_landmarks=15, random_state=0, **kw)
        return est.fit(*((tensor(X),) + tuple(tensor(a) for a in args))
                       if on_tensor else (X,) + args)

    want = approximation_error(fit(mode, False), fit("exact", False))
    approx, exact = fit(mode, True), fit("exact", True)
    keep = to_np(approx.X_fit_).copy()
    got = approximation_error(approx, exact)
    np.testing.assert_allclose(got, want, rtol=dtol(1e-8), atol=dtol(1e-12))
    assert torch.is_tensor(approx.X_fit_) and np.array_equal(to_np(approx.X_fit_), keep)
    if mode == "gsa":
        K = tensor(np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) /
                                   X.shape[1]))  # the default RBF, gamma = 1/d
        np.testing.assert_allclose(gsa_approximation_error(approx, exact, K),
                                   gsa_approximation_error(approx, exact), rtol=dtol(1e-10))
