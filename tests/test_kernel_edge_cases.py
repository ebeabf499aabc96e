"""Edge cases of the kernel layer found by the numerical audit (d03, d09, d13–d16).

Each test failed before its fix; the tolerances sit far above rounding (they hold with one or
many BLAS threads).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp

from asymkern.kernels import (
    DirectedGraphKernel,
    GMMKLKernel,
    KernelMatrix,
    KLHistogramKernel,
    get_kernel,
)
from asymkern.kernels.base import data_center
from asymkern.kernels.divergence import fit_gmm_features
from asymkern.kernels.graph import node_ids


# ---------------------------------------------------------------- d03: sparse float32 + float64
def _far_f32_pair():
    rng = np.random.default_rng(0)
    X = (rng.standard_normal((6, 3)) * 0.1 + 30).astype(np.float32)
    Z = X.astype(np.float64) + rng.standard_normal((6, 3)) * 0.1
    ref = np.exp(-((X.astype(np.float64)[:, None] - Z[None]) ** 2).sum(-1))
    return X, Z, ref


@pytest.mark.parametrize("sparse_side", ["X", "Z", "both"])
def test_sparse_float32_with_float64_has_float64_accuracy(sparse_side):
    # a float64 result must carry float64 accuracy: the float32 set is cast before the
    # squared norms and the product are accumulated (before: error 1.4e-4)
    X, Z, ref = _far_f32_pair()
    Zf = Z.astype(np.float32)
    k = get_kernel("rbf", gamma=1.0)
    if sparse_side == "X":
        A, B = sp.csr_matrix(X), Z
    elif sparse_side == "Z":
        A, B = Z, sp.csr_matrix(X)
        ref = ref.T
    else:
        A, B = sp.csr_matrix(X), sp.csr_matrix(Z)
    K = k(A, B)
    assert K.dtype == np.float64
    assert np.abs(K - ref).max() < 1e-9
    # the same values as the float64 copy of the float32 set
    if sparse_side == "X":
        np.testing.assert_array_equal(K, k(sp.csr_matrix(X.astype(np.float64)), Z))
    # float32 with float32 stays float32
    assert k(sp.csr_matrix(X), Zf).dtype == np.float32


# ---------------------------------------------------------------- d14: Laplacian overflow
def _laplacian_ref(X, Z, gamma):
    """exp(−gamma‖x − z‖₁) with the distance summed on data scaled by 2^-1100 (exact)."""
    Xs, Zs = np.ldexp(X, -1100), np.ldexp(Z, -1100)
    out = np.empty((X.shape[0], Z.shape[0]))
    gm, ge = math.frexp(gamma)
    for i in range(X.shape[0]):
        for j in range(Z.shape[0]):
            ds = float(np.abs(Xs[i] - Zs[j]).sum())
            try:
                t = math.ldexp(gm * ds, ge + 1100)
            except OverflowError:
                t = math.inf
            out[i, j] = math.exp(-t)
    return out


def test_laplacian_overflowing_distance_finite_exponent():
    # ‖x − z‖₁ = 1.8e308 overflows, gamma·‖x − z‖₁ = 1.8 does not (before: 0)
    X = np.array([[0.9], [-0.9]]) * 1e308
    K = get_kernel("laplacian", gamma=1e-308)(X)
    np.testing.assert_allclose(K, [[1.0, np.exp(-1.8)], [np.exp(-1.8), 1.0]], rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_laplacian_near_float_range(sparse):
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (5, 4)) * 1.5e308
    Z = rng.uniform(-1, 1, (4, 4)) * 1.5e308
    X[0, 1] = Z[1, 1] = 0.0  # explicit zeros in the sparse copies
    gamma = 2.0 ** -1025
    ref = _laplacian_ref(X, Z, gamma)
    assert 0.0 < ref.min() < ref.max() < 1.0  # every entry lies strictly inside (0, 1)
    A, B = (sp.csr_matrix(X), sp.csr_matrix(Z)) if sparse else (X, Z)
    K = get_kernel("laplacian", gamma=gamma)(A, B)
    np.testing.assert_allclose(K, ref, rtol=1e-10)


def test_laplacian_overflowing_exponent_still_zero():
    # gamma·‖x − z‖₁ beyond the float range: the correct limit 0, no warning
    X = np.array([[0.9], [-0.9]]) * 1e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        K = get_kernel("laplacian", gamma=1.0)(X)
    np.testing.assert_array_equal(K, [[1.0, 0.0], [0.0, 1.0]])


def test_laplacian_normal_data_unchanged():
    from sklearn.metrics.pairwise import manhattan_distances

    rng = np.random.default_rng(2)
    X, Z = rng.standard_normal((7, 3)), rng.standard_normal((5, 3))
    K = get_kernel("laplacian", gamma=0.7)(X, Z)
    np.testing.assert_array_equal(K, np.exp(manhattan_distances(X, Z) * -0.7))


# ---------------------------------------------------------------- d15: directed graph weights
def test_directed_graph_weights_documented_formula():
    A = np.array([[0, 2.0, 0], [0, 0, 1], [0, 0, 0]])  # edge 0 -> 1 of weight 2
    G = DirectedGraphKernel(A)(node_ids(3))
    Acal = A.T + np.eye(3)  # 𝒜 + I, 𝒜 = adjacencyᵀ
    np.testing.assert_allclose(G, Acal / Acal.sum(axis=1, keepdims=True), rtol=1e-14)
    B = (A != 0).astype(float)  # binary: the paper's G = D⁻¹(𝒜 + I)
    Gb = DirectedGraphKernel(B)(node_ids(3))
    np.testing.assert_allclose(Gb, np.diag(1 / (B.T.sum(1) + 1)) @ (B.T + np.eye(3)),
                               rtol=1e-14)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_directed_graph_negative_weight_refused(fmt):
    A = np.array([[0, -1.0, 0], [0, 0, 1], [0, 0, 0]])
    with pytest.raises(ValueError, match=r"adjacency\[0, 1\]"):
        DirectedGraphKernel(A if fmt == "dense" else sp.csr_matrix(A))
    k = DirectedGraphKernel(np.abs(A))
    with pytest.raises(ValueError, match="adjacency"):
        k.set_params(adjacency=A)
    # a finished kernel matrix (preprocess='none') is used as given
    np.testing.assert_array_equal(DirectedGraphKernel(A, preprocess="none")(node_ids(3)), A)


def test_directed_graph_overflowing_in_degree():
    A = np.array([[0, 1e308, 0], [0, 0, 1], [1e308, 1e308, 0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        G = DirectedGraphKernel(A)(node_ids(3))
    assert np.all(np.isfinite(G))
    np.testing.assert_allclose(G.sum(axis=1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(G[1], [0.5, 0.5e-308, 0.5], rtol=1e-6)
    assert np.all(np.diag(G) > 0)


# ---------------------------------------------------------------- d09: KL kernels
def _kl(p, q):
    return float(np.sum(p * (np.log(p) - np.log(q))))


def test_kl_histogram_row_sum_overflow():
    X = np.array([[1e308, 1e308, 1.0], [1.0, 2.0, 3.0]])  # finite counts, row sum overflows
    eps = 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        K = KLHistogramKernel(eps=eps)(X)
    assert np.all(np.isfinite(K))
    q = (X[1] + eps) / (X[1] + eps).sum()
    # p = [1/2, 1/2, (1 + eps)/(2e308)]: the third term of KL(p‖q) is below 1e-300
    kl_pq = 0.5 * np.log(0.5 / q[0]) + 0.5 * np.log(0.5 / q[1])
    log_p = np.log([0.5, 0.5]).tolist() + [np.log1p(eps) - np.log(2.0) - np.log(1e308)]
    kl_qp = float(np.sum(q * (np.log(q) - np.array(log_p))))
    np.testing.assert_allclose(K, [[1.0, np.exp(-kl_pq)], [np.exp(-kl_qp), 1.0]], rtol=1e-9)
    # the normal row gives the same values as on its own
    np.testing.assert_array_equal(K[1, 1], KLHistogramKernel(eps=eps)(X[1:])[0, 0])


def test_kl_histogram_probability_underflow():
    # eps/(row sum) underflows to 0: log 0 gave NaN in Σ p log p
    X = np.array([[1e308, 0.0], [1.0, 1.0]])
    eps = 1e-20
    K = KLHistogramKernel(eps=eps)(X)
    Ks = KLHistogramKernel(eps=eps, symmetric=True)(X)
    assert np.all(np.isfinite(K)) and np.all(np.isfinite(Ks))
    # p = [1, eps/1e308], q = [1/2, 1/2]
    log_p1 = np.log(eps) - np.log(1e308)
    kl_qp = 0.5 * (np.log(0.5) - 0.0) + 0.5 * (np.log(0.5) - log_p1)
    np.testing.assert_allclose(K, [[1.0, 0.5], [np.exp(-kl_qp), 1.0]], rtol=1e-9)
    np.testing.assert_allclose(Ks[0, 1], 0.5 * np.exp(-kl_qp), rtol=1e-9)


def _gmm_rows():
    rng = np.random.default_rng(0)
    return fit_gmm_features([rng.standard_normal((30, 2)) for _ in range(3)], n_components=2)


def test_gmm_all_zero_weights_refused():
    F = _gmm_rows()
    bad = F.copy()
    bad[1, :2] = 0.0
    k = GMMKLKernel(n_components=2, n_samples=16)
    with pytest.raises(ValueError, match=r"X: row 1 has all-zero mixture weights"):
        k(bad)
    with pytest.raises(ValueError, match=r"Z: row 1 has all-zero mixture weights"):
        k(F, bad)
    with pytest.raises(ValueError, match=r"row 1 has all-zero"):
        GMMKLKernel(n_components=2, n_samples=16, symmetric=True)(F, bad)
    # a zero weight among positive ones is fine
    ok = F.copy()
    ok[1, 0], ok[1, 1] = 0.0, 1.0
    assert np.all(np.isfinite(k(ok)))


# ---------------------------------------------------------------- d13: row normalisers
def test_row_normalizers_overflow_raises_and_row_lse_is_finite():
    rng = np.random.default_rng(0)
    X, Z = rng.standard_normal((4, 3)) * 30, rng.standard_normal((5, 3)) * 30
    G = KernelMatrix("softmax", X, Z)
    lse = G.row_lse()
    ref = logsumexp((X @ Z.T) / np.sqrt(3), axis=1)
    np.testing.assert_allclose(lse, ref, rtol=1e-12)
    assert lse.max() > 800  # exp of it overflows float64
    with pytest.raises(OverflowError, match=r"'softmax'.*overflows.*row_lse"):
        G.row_normalizers()


def test_row_normalizers_underflow_raises():
    rng = np.random.default_rng(0)
    X, Z = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)) + 30
    G = KernelMatrix("sne", X, Z)
    lse = G.row_lse()
    assert np.all(np.isfinite(lse)) and lse.max() < -745  # exp underflows to 0
    with pytest.raises(OverflowError, match=r"'sne'.*underflows.*row_lse"):
        G.row_normalizers()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_normalizers_normal_case(dtype):
    rng = np.random.default_rng(3)
    X, Z = rng.standard_normal((6, 2)).astype(dtype), rng.standard_normal((5, 2)).astype(dtype)
    G = KernelMatrix("sne", X, Z)
    N = G.row_normalizers()
    lse = G.row_lse()
    assert N.dtype == dtype and lse.dtype == np.float64
    np.testing.assert_array_equal(N, np.exp(lse).astype(dtype))
    R = get_kernel("rbf", gamma=0.5)(X.astype(np.float64), Z.astype(np.float64)).sum(axis=1)
    np.testing.assert_allclose(N, R, rtol=1e-5 if dtype == np.float32 else 1e-12)
    lse[:] = 0.0  # a copy: the cache is unchanged
    np.testing.assert_allclose(G.row_lse(), np.log(R), rtol=1e-5)
    assert KernelMatrix("rbf", X, Z).row_lse() is None


# ---------------------------------------------------------------- d16: subnormal data centre
def test_data_center_subnormal():
    Z = np.random.default_rng(0).standard_normal((5, 3)) * 1e-310
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = data_center(Z)
    assert np.all(c >= Z.min(axis=0)) and np.all(c <= Z.max(axis=0))
    # the exact mean rounded to the subnormal grid (quantum 2^-1074 ≈ 4.9e-324)
    np.testing.assert_allclose(c, Z.mean(axis=0), rtol=0, atol=1e-322)
    # and an RBF kernel on such data is exactly 1 (distances 1e-620 vanish)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        K = get_kernel("rbf", gamma=1.0)(Z)
    np.testing.assert_array_equal(K, np.ones((5, 5)))
