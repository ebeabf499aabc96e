"""The compatibility matrix a0 (``compat='pinv'``) of Tao et al. (2024), Remark 2.3 and App. D,
C_x = ((X Xᵀ)^† X)ᵀ = A^†, at high condition numbers: against ``np.linalg.pinv`` in float64.

a0 is built from the QR of the mapped set and the SVD of its R (as a1), never from the Gram
matrix: its error is of order cond(A)·eps, that of ``np.linalg.pinv``. Through the Gram matrix
it was of order cond(A)²·eps (≈ 1e-5 at cond 1e6) and at cond 1e9 a direction that the rank rule
keeps was dropped (relative error 1). Every limit below is ``100·cond·eps``: at least 100 times
the error measured after the change, below the error before it.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import asymkern
from asymkern.config import MemoryBudgetError
from asymkern.decomposition.ksvd import KernelSVD
from asymkern.kernels import CompatibilityTransform
from asymkern.kernels import compat as kc

EPS = np.finfo(np.float64).eps
CONDS = [1e4, 1e6, 1e9]
SHAPES = [(6, 40), (40, 6)]  # wide (side 'x': rows mapped), tall (side 'z': columns mapped)


def ill_conditioned(N, M, cond, seed=0):
    """U diag(logspace(0, -log10 cond)) Vᵀ with random orthonormal U, V: cond(A) = cond."""
    rng = np.random.default_rng(seed)
    k = min(N, M)
    U, _ = np.linalg.qr(rng.standard_normal((N, k)))
    V, _ = np.linalg.qr(rng.standard_normal((M, k)))
    return (U * np.logspace(0, -np.log10(cond), k)) @ V.T


def limit(cond):
    return 100 * cond * EPS


def reference(A):
    """The a0 matrix from np.linalg.pinv: A^† (side 'x'), (Aᵀ)^† = (A^†)ᵀ (side 'z')."""
    P = np.linalg.pinv(A)
    return P if A.shape[1] > A.shape[0] else P.T


def rel(a, b):
    return np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b)


def layout(A, kind):
    return sp.csr_matrix(A) if kind == "csr" else A


# ------------------------------------------------------------------------------ in memory
@pytest.mark.parametrize("cond", CONDS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_in_memory_matches_numpy_pinv(cond, shape, kind):
    A = ill_conditioned(*shape, cond)
    ct = CompatibilityTransform("pinv").fit(layout(A, kind))
    assert ct.side_ == ("x" if shape[1] > shape[0] else "z")
    assert rel(ct.C_, reference(A)) <= limit(cond)
    # the mapped set S C is the projector onto the column space of S: here the identity (no
    # direction dropped); through the Gram matrix it was off by 1 at cond 1e9
    X, Z = ct.fit_transform(layout(A, kind))
    mapped = X if ct.side_ == "x" else Z
    assert np.linalg.norm(mapped - np.eye(min(shape))) <= limit(cond)


@pytest.mark.parametrize("cond", CONDS)
@pytest.mark.parametrize("shape", SHAPES)
def test_in_memory_new_samples(cond, shape):
    A = ill_conditioned(*shape, cond)
    ct = CompatibilityTransform("a0").fit(A)
    Y = np.random.default_rng(1).standard_normal((5, max(shape)))
    out = ct.transform_x(Y) if ct.side_ == "x" else ct.transform_z(Y)
    assert rel(out, Y @ reference(A)) <= limit(cond)


@pytest.mark.parametrize("cond", CONDS)
@pytest.mark.parametrize("shape", SHAPES)
def test_factor_from_r(cond, shape):
    """pinv_factor (R only, as on Dask): P = (TᵀT)^†, exact mapped set, C = T P."""
    A = ill_conditioned(*shape, cond)
    T = A.T if shape[1] > shape[0] else A
    big, small = T.shape
    P, mapped = kc.pinv_factor(kc.r_factor(T), small, big)
    np.testing.assert_allclose(mapped, np.eye(small), atol=1e-12)
    assert rel(T @ P, reference(A)) <= limit(cond)
    assert rel(kc.pinv_matrix(T), reference(A)) <= limit(cond)


@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_rank_rule_is_numpys(kind):
    """A rank-3 6×40 A: the directions below max(N, M)·eps·σ_1 are dropped, as by
    ``np.linalg.pinv(A, rtol=None)``; the mapped set is the rank-3 projector."""
    A = ill_conditioned(6, 40, 1e3)
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    A = (U[:, :3] * s[:3]) @ Vt[:3]
    ct = CompatibilityTransform("pinv").fit(layout(A, kind))
    # np.linalg.pinv(A, rtol=None) of numpy >= 2 (written out: numpy 1.x has no rtol)
    U_, s_, Vt_ = np.linalg.svd(A, full_matrices=False)
    keep = s_ > max(A.shape) * np.finfo(np.float64).eps * s_[0]
    ref = (Vt_[keep].T / s_[keep]) @ U_[:, keep].T
    assert rel(ct.C_, ref) <= 1e-10
    mapped = ct.fit_transform(layout(A, kind))[0]
    assert np.linalg.matrix_rank(mapped) == 3
    np.testing.assert_allclose(mapped, U[:, :3] @ U[:, :3].T, atol=1e-10)


# ----------------------------------------------------------------------------------- Dask
def _dask(A, kind, chunk):
    da = pytest.importorskip("dask.array")
    if kind == "dense":
        return da.from_array(A, chunks=(chunk, -1))
    A = sp.csr_matrix(A)
    return da.concatenate([da.from_array(A[i:i + chunk], chunks=A[i:i + chunk].shape,
                                         asarray=False) for i in range(0, A.shape[0], chunk)])


@pytest.mark.parametrize("cond", CONDS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_dask_matches_numpy_pinv(cond, shape, kind):
    pytest.importorskip("dask")
    from asymkern._dask.compat import DaskCompatibility

    A = ill_conditioned(*shape, cond)
    Ad = _dask(A, kind, 2 if shape[0] < shape[1] else 7)  # several row chunks
    assert Ad.numblocks[0] >= 3
    dc = DaskCompatibility("pinv").fit(Ad)
    ref = reference(A)
    assert rel(dc.to_in_memory().C_, ref) <= limit(cond)  # C = T P, chunk by chunk
    np.testing.assert_allclose(np.asarray(dc.mapped_.compute()), np.eye(min(shape)),
                               atol=limit(cond))
    Y = np.random.default_rng(1).standard_normal((5, max(shape)))
    Yd = _dask(Y, "dense", 2)
    out = (dc.transform_x(Yd) if dc.side_ == "x" else dc.transform_z(Yd)).compute()
    assert rel(out, Y @ ref) <= limit(cond)


def _poison(chunk):
    raise AssertionError("a chunk of A was computed before the budget check")


@pytest.mark.parametrize("compat", ["a0", "a1"])
def test_dask_budget_counts_the_qr_rows(compat):
    """a0 runs a1's TSQR: its task peak counts the rows of T a QR copies, as a1's does
    (4·60²·8 + 50·60·8 = 139200 bytes for a 300×60 A in chunks of 50 rows)."""
    da = pytest.importorskip("dask.array")
    A = da.from_array(ill_conditioned(300, 60, 1e3), chunks=(50, -1)).map_blocks(
        _poison, dtype=np.float64, meta=np.empty((0, 0)))
    with asymkern.config_context(max_dense_memory=0.125):  # 131072 bytes: between the two
        with pytest.raises(MemoryBudgetError, match="139200 bytes"):
            KernelSVD(3, kernel="linear", compat=compat, solver="dense").fit(A)


# ------------------------------------------------------------------------------ KernelSVD
@pytest.mark.parametrize("executor", ["numpy", "numpy-csr", "dask"])
def test_kernel_svd_on_an_ill_conditioned_matrix(executor):
    """Linear kernel: G = (A C) A = A A^† A = A, so KSVD returns A's singular values; the
    mapped set A C is the identity (one direction was lost through the Gram matrix)."""
    cond = 1e9
    A = ill_conditioned(6, 40, cond)
    data = (_dask(A, "dense", 2) if executor == "dask"
            else layout(A, "csr" if executor == "numpy-csr" else "dense"))
    est = KernelSVD(3, kernel="linear", compat="pinv", solver="dense").fit(data)
    X = est.X_fit_.compute() if executor == "dask" else est.X_fit_
    assert np.linalg.norm(np.asarray(X) - np.eye(6)) <= limit(cond)
    ct = est.compat_.to_in_memory() if executor == "dask" else est.compat_
    assert rel(ct.C_, np.linalg.pinv(A)) <= limit(cond)
    np.testing.assert_allclose(est.singular_values_, np.linalg.svd(A, compute_uv=False)[:3],
                               rtol=limit(cond))
