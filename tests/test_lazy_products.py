"""The lazy-matrix protocol on every executor: the kernel-matrix factory and the blocked products.

``ops.kernel_matrix`` (:mod:`asymkern._backend`) gives the lazy kernel matrix of any executor,
and ``asymkern._shared.operators.gram`` the checked dense one; ``LazyMatrix`` derives the
blocked products G[:, J]·B and G[I, :]ᵀ·B from ``block`` alone, which is all a new executor has
to write. Every product is checked against the dense float64 kernel matrix, with blocks small
enough that the loops run over many of them.
"""

from __future__ import annotations

import numpy as np
import pytest
from _backends import as_backend, to_np, tol

import asymkern
from asymkern._backend import LazyMatrix, ops_of
from asymkern._shared.operators import gram
from asymkern.kernels import get_kernel

KERNELS = ("rbf", "laplacian", "sne", "t", "softmax", "polynomial")


def _sets(dtype=np.float64, n=70, m=45, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, d)).astype(dtype),
            rng.standard_normal((m, d)).astype(dtype) + 0.3)


def _reference(kernel, X, Z) -> np.ndarray:
    return np.asarray(kernel(X.astype(np.float64), Z.astype(np.float64)), dtype=np.float64)


@pytest.mark.parametrize("name", KERNELS)
def test_gram_equals_the_dense_reference(backend, name):
    kernel = get_kernel(name, gamma=0.4)
    X, Z = _sets()
    K = gram(kernel, as_backend(X, backend), as_backend(Z, backend))
    assert ops_of(K).dtype(K) == np.float64
    assert np.allclose(to_np(K), _reference(kernel, X, Z), rtol=tol(1e-12, backend), atol=0)
    S = gram(kernel, as_backend(X, backend), symmetric=True)
    assert np.array_equal(to_np(S), to_np(S).T)


def test_gram_refuses_non_finite_values(backend):
    X = as_backend(np.array([[0.0], [1e200]]), backend)
    with pytest.raises(OverflowError, match="the Gram matrix of X|overflow"):
        gram(get_kernel("linear"), X, what="the Gram matrix of X")


@pytest.mark.parametrize("name", ("rbf", "sne", "laplacian"))
@pytest.mark.parametrize("dtype", (np.float64, np.float32))
def test_blocked_products_with_selected_rows_and_columns(backend, name, dtype):
    """G[:, J]·B and G[I, :]ᵀ·B (the Nyström extension's products) over many blocks."""
    kernel = get_kernel(name, gamma=0.4)
    X, Z = _sets(dtype)
    rng = np.random.default_rng(1)
    J, I = np.array([3, 0, 17, 17, 44]), np.array([5, 69, 5, 12])
    B, A = rng.standard_normal((len(J), 4)), rng.standard_normal((len(I), 2))
    G = ops_of(as_backend(X, backend)).kernel_matrix(
        kernel, as_backend(X, backend), as_backend(Z, backend), working_memory=1e-3)
    K = to_np(G.to_dense()).astype(np.float64)
    assert np.allclose(K, _reference(kernel, X, Z), rtol=1e-5 if dtype == np.float32 else 1e-11)
    left, right = to_np(G.left(J, B)), to_np(G.right(I, A))
    limit = 1e-5 if dtype == np.float32 else tol(1e-12, backend)
    assert np.allclose(left, K[:, J] @ B, rtol=limit, atol=limit * np.abs(K).max())
    assert np.allclose(right, K[I].T @ A, rtol=limit, atol=limit * np.abs(K).max())


class _BlockOnly(LazyMatrix):
    """A minimal executor's matrix: only ``block`` and ``template`` (what a new backend
    writes); the products come from :class:`LazyMatrix`."""

    def __init__(self, A):
        self.A = A
        self.shape = A.shape
        self.dtype = A.dtype
        self.working_memory = 1e-3  # a few rows per block

    def template(self):
        return self.A

    def block(self, rows, cols):
        rows = np.arange(self.shape[0])[rows]
        cols = np.arange(self.shape[1])[cols]
        return self.A[np.ix_(rows, cols)].copy()


@pytest.mark.parametrize("dtype", (np.float64, np.float32))
def test_products_derived_from_block(dtype):
    rng = np.random.default_rng(2)
    A = rng.standard_normal((53, 31)).astype(dtype)
    G = _BlockOnly(A)
    B, C = rng.standard_normal((31, 3)).astype(dtype), rng.standard_normal((53, 2)).astype(dtype)
    A64 = A.astype(np.float64)
    limit = 1e-5 if dtype == np.float32 else 1e-12
    assert np.allclose(G.matmat(B), A64 @ B, rtol=limit, atol=limit)
    assert np.allclose(G.rmatmat(C), A64.T @ C, rtol=limit, atol=limit)
    mixed = G.blocked_matmat(B.astype(np.float64), dtype=np.float64)
    assert mixed.dtype == np.float64
    assert np.allclose(mixed, A64 @ B.astype(np.float64), rtol=1e-12, atol=1e-12)
    J, I = np.array([30, 1, 1]), np.array([0, 52, 7])
    assert np.allclose(G.matmat(B[:3], cols=J), A64[:, J] @ B[:3], rtol=limit, atol=limit)
    assert np.allclose(G.rmatmat(C[:3], rows=I), A64[I].T @ C[:3], rtol=limit, atol=limit)
    rows, cols, grand = G.means64()
    assert np.allclose(rows, A64.mean(1)) and np.allclose(cols, A64.mean(0))
    assert np.isclose(grand, A64.mean())


def test_factory_follows_the_working_memory_setting():
    X, Z = _sets()
    with asymkern.config_context(working_memory=3):
        G = ops_of(X).kernel_matrix(get_kernel("rbf"), X, Z)
    assert G.working_memory == 3


@pytest.mark.parametrize("name", ("rbf", "sne", "laplacian"))
def test_float32_kernel_values_times_float64_operands(backend, name):
    """Float32 data times a float64 B: a float64 product (numpy's promotion) on every
    executor, equal to the float64 reference within float32 kernel rounding (the float32
    values themselves depend on the block shape, so no bit-level comparison)."""
    kernel = get_kernel(name, gamma=0.4)
    X, Z = _sets(np.float32)
    rng = np.random.default_rng(3)
    B, C = rng.standard_normal((len(Z), 3)), rng.standard_normal((len(X), 2))
    G = ops_of(as_backend(X, backend)).kernel_matrix(
        kernel, as_backend(X, backend), as_backend(Z, backend), working_memory=1e-3)
    K = np.abs(_reference(kernel, X, Z))
    left = G.matmat(as_backend(B, backend))
    right = G.rmatmat(as_backend(C, backend))
    assert ops_of(left).dtype(left) == np.float64 and ops_of(right).dtype(right) == np.float64
    ref = _reference(kernel, X, Z)
    assert np.abs(to_np(left) - ref @ B).max() <= 1e-5 * (K @ np.abs(B)).max()
    assert np.abs(to_np(right) - ref.T @ C).max() <= 1e-5 * (K.T @ np.abs(C)).max()
