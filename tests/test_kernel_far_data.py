"""Squared-distance kernels on data spread far beyond the kernel's width.

One point far away pulls the expansion's centre (the mean of the reference set), and the
rounding bound of ‖x − c‖² + ‖z − c‖² − 2(x − c)ᵀ(z − c) grows with it: with one point at 1e8
among ten unit-normal ones the exponent −γ‖x − z‖² of every other pair was rounded by about
0.02, so RBF, SNE, Cauchy and T values were 1–2 % off, on numpy, Dask (its blocks are numpy's)
and torch alike, and the fused SNE product on torch too. The entries whose values the rounding
could move are now recomputed directly (``neg_scaled_sq_dists``, *Far from the centre*); data
within the usual range never take that route (their values are unchanged bit for bit).
"""

from __future__ import annotations

import numpy as np
import pytest
from _hypothesis import reference_sq_dists

from asymkern import KernelMatrix, config_context, get_kernel

NAMES = ("rbf", "sne", "cauchy", "t")


def reference(name: str, X, Z) -> np.ndarray:
    """The kernel from explicit pairwise differences in float64 (default parameters)."""
    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    sq = reference_sq_dists(X, Z)
    if name in ("rbf", "sne"):
        L = -sq / X.shape[1]
    else:
        L = -np.log1p(sq)
    if name in ("sne", "t"):
        L = L - L.max(axis=1, keepdims=True)
        E = np.exp(L)
        return E / E.sum(axis=1, keepdims=True)
    return np.exp(L)


def outlier_data(far: float, seed: int = 0, n: int = 20, m: int = 9, d: int = 2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Z = np.vstack([rng.normal(size=(m, d)), np.r_[far, np.zeros(d - 1)]])
    return X, Z


def rel_err(K, R) -> float:
    K = np.asarray(K, dtype=np.float64)
    return float(np.max(np.abs(K - R)) / np.max(np.abs(R)))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("far", [1e6, 1e7, 1e8])
def test_outlier_pulls_the_centre(name, far):
    """Before: relative errors 2.6e-6 (1e6), 1.5e-4 (1e7) and 1.6e-2 (1e8)."""
    X, Z = outlier_data(far)
    R = reference(name, X, Z)
    assert rel_err(get_kernel(name)(X, Z), R) < 1e-12
    with config_context(working_memory=0.001):  # blocks of a few rows and columns
        assert rel_err(KernelMatrix(name, X, Z).to_array(), R) < 1e-12


@pytest.mark.parametrize("name", NAMES)
def test_float32_far_from_the_width(name):
    """float32 data 1000 times the kernel's width from each other, d = 1: before, RBF values
    were 36 % off and Cauchy's 5 %; now within float32's rounding of the data."""
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(300, 1)) * 1000 + 5).astype(np.float32)
    Z = (rng.normal(size=(200, 1)) * 1000).astype(np.float32)
    K = get_kernel(name)(X, Z)
    assert K.dtype == np.float32
    R = reference(name, X, Z)  # of the float32 data themselves
    big = R > 1e-3 * R.max()
    assert np.max(np.abs(K - R)[big] / R[big]) < 2e-3


@pytest.mark.parametrize("name", NAMES)
def test_blocking_and_order_do_not_change_values(name):
    """Which entries are recomputed depends on the pair alone (SNE: only among entries that
    are 0 either way), so blocks and the whole matrix agree bit for bit, and so do permuted
    columns (the row-normalised kernels up to the order of their normalisers' sums)."""
    X, Z = outlier_data(1e8, seed=3, n=40, m=30)
    k = get_kernel(name)
    whole = KernelMatrix(k, X, Z).to_array()
    with config_context(working_memory=0.002):
        blocked = KernelMatrix(k, X, Z).to_array()
    assert np.array_equal(whole, blocked)
    p = np.random.default_rng(1).permutation(Z.shape[0])
    permuted = KernelMatrix(k, X, Z[p]).to_array()
    if k.row_normalized:
        np.testing.assert_allclose(permuted, whole[:, p], rtol=1e-12, atol=0)
    else:
        assert np.array_equal(permuted, whole[:, p])


@pytest.mark.parametrize("name", NAMES)
def test_usual_data_take_the_usual_route(name, monkeypatch):
    """Data within the usual range never call the wide recomputation (no cost, and their
    values are those of the plain pass)."""
    from asymkern.kernels import base

    def refuse(*args, **kwargs):
        raise AssertionError("the wide recomputation ran on usual data")

    monkeypatch.setattr(base, "_value_candidates", refuse)
    rng = np.random.default_rng(0)
    for d, spread in ((2, 1.0), (50, 10.0), (784, 1.0)):
        X = rng.normal(size=(60, d)) * spread + 1e4
        Z = rng.normal(size=(50, d)) * spread + 1e4
        get_kernel(name)(X, Z)
        get_kernel(name)(X.astype(np.float32), Z.astype(np.float32))


def test_sne_far_points_that_differ_above_rounding():
    """Points ~1e142 from a centre pulled to ~1e149: z1 and z3 are 5e281/2 apart in the
    exponent, so z3's weight is 0; SNE gave 0.5 to each."""
    X = np.array([[1.72023925e142, -1.82521633e142]])
    Z = np.array([[-5.73209168e46, -1.86431002e142], [-1.31881243e47, 6.89888619e149],
                  [0.0, -1.90678207e142], [-6.13434226e144, -1.42624855e39]])
    K = get_kernel("sne")(X, Z)
    assert np.array_equal(K, [[1.0, 0.0, 0.0, 0.0]])


torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("far", [1e7, 1e8])
def test_torch_blocks_and_products(name, far):
    """The torch blocks and products (fused SNE/RBF ones included) equal the reference."""
    from _torch_helpers import TEST_DEVICE

    from asymkern._torch.kernels import TorchKernel, TorchKernelMatrix

    X, Z = outlier_data(far)
    R = reference(name, X, Z)
    B = np.random.default_rng(2).normal(size=(Z.shape[0], 3))
    Xt, Zt = (torch.tensor(A, device=TEST_DEVICE) for A in (X, Z))
    G = TorchKernelMatrix(TorchKernel(get_kernel(name), X.shape[1]), Xt, Zt)
    assert rel_err(G.to_dense().cpu().numpy(), R) < 1e-12
    P = G.matmat(torch.tensor(B, device=TEST_DEVICE)).cpu().numpy()
    assert rel_err(P, R @ B) < 1e-12
    Pt = G.rmatmat(torch.tensor(np.ones((X.shape[0], 2)), device=TEST_DEVICE)).cpu().numpy()
    assert rel_err(Pt, R.T @ np.ones((X.shape[0], 2))) < 1e-12
