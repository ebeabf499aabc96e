"""a0 (``compat='pinv'``, Tao et al. (2024), Remark 2.3 and App. D) on Dask at high condition
numbers: new samples against the in-memory ``CompatibilityTransform(method='pinv')``.

On Dask Q is never formed, so a sample y is mapped by y C = (T^† yᵀ)ᵀ from the R of a TSQR.
The seminormal equations alone (y T P, P = (TᵀT)^†) err by about eps·cond(T)²·‖y‖/σ_1: the
training rows (exact image e_i) came out 0.1–0.94 away from the in-memory value at cond 1e8 and up
to 86 at cond 1e9, rows near the span of the training set 3e-3–0.1, and the dense C of
``to_in_memory`` (C = T P) as far. With the corrected seminormal equations (Björck (1987)) and C
from a TSQR that keeps Q, Dask and memory agree to their own cond·eps (≤ 1.3e-8 at 1e8, ≤ 5.4e-8
at 1e9 measured). Every limit here is ``100·cond·eps``: well above that, far below the old error.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from _dask_helpers import one_blas_thread, rel, synchronous_scheduler  # noqa: E402, F401

from asymkern._dask.compat import MAX_REFINE_STEPS, DaskCompatibility, refine_steps  # noqa: E402
from asymkern.decomposition.ksvd import KernelSVD  # noqa: E402
from asymkern.kernels import CompatibilityTransform  # noqa: E402

EPS = np.finfo(np.float64).eps
CONDS = [1e8, 1e9]
SHAPES = [(8, 90), (90, 8)]  # wide (side 'x': rows mapped), tall (side 'z': columns mapped)


def ill_conditioned(N, M, cond, seed=0, s=None):
    """U diag(s) Vᵀ with random orthonormal U, V; s = logspace(0, -log10 cond): cond(A) = cond."""
    rng = np.random.default_rng(seed)
    k = min(N, M)
    U, _ = np.linalg.qr(rng.standard_normal((N, k)))
    V, _ = np.linalg.qr(rng.standard_normal((M, k)))
    s = np.logspace(0, -np.log10(cond), k) if s is None else np.asarray(s)
    return (U * s) @ V.T, U, V


def limit(cond):
    return 100 * cond * EPS


def as_dask(A, kind, chunk):
    """Row chunks of ``chunk`` rows, numpy or CSR."""
    if kind == "dense":
        return da.from_array(A, chunks=(chunk, -1))
    A = sp.csr_matrix(A)
    return da.concatenate([da.from_array(A[i:i + chunk], chunks=A[i:i + chunk].shape,
                                         asarray=False) for i in range(0, A.shape[0], chunk)])


def a_chunk(shape, several=3):
    """Rows per chunk of A giving at least ``several`` chunks of A (and of T)."""
    return max(1, shape[0] // (several + 1))


def samples(A, side, seed=1):
    """The mapped training samples S (rows of A for 'x', columns for 'z'), rows near their span
    (random combinations plus a 1e-6 perturbation) and random rows."""
    S = A if side == "x" else A.T
    rng = np.random.default_rng(seed)
    near = rng.standard_normal((7, S.shape[0])) @ S + 1e-6 * rng.standard_normal((7, S.shape[1]))
    return S, near, rng.standard_normal((5, S.shape[1]))


def mapped(ct, Y, kind="dense", chunk=3):
    """ct's map of Y: in memory (CompatibilityTransform) or on Dask (DaskCompatibility)."""
    if isinstance(ct, DaskCompatibility):
        Yd = as_dask(Y, kind, chunk)
        out = (ct.transform_x(Yd) if ct.side_ == "x" else ct.transform_z(Yd)).compute()
        return np.asarray(out)
    return ct.transform_x(Y) if ct.side_ == "x" else ct.transform_z(Y)


# ---------------------------------------------------------------- Dask against memory
@pytest.mark.parametrize("cond", CONDS)
@pytest.mark.parametrize("shape", SHAPES, ids=["side_x", "side_z"])
@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_new_samples_match_in_memory(cond, shape, kind):
    A, _, _ = ill_conditioned(*shape, cond)
    mem = CompatibilityTransform("pinv").fit(A)
    dc = DaskCompatibility("pinv").fit(as_dask(A, kind, a_chunk(shape)))
    assert dc.side_ == mem.side_ == ("x" if shape[1] > shape[0] else "z")
    assert dc.T_.numblocks[0] >= 3
    assert dc.refine_steps_ == 2  # κ = 1e8, 1e9: two corrections
    train, near, fresh = samples(A, dc.side_)
    for Y in (train, near, fresh):
        assert rel(mapped(dc, Y), mapped(mem, Y)) <= limit(cond)
    # the training rows go to e_i (the mapped set is the identity: no direction dropped)
    assert np.abs(mapped(dc, train) - np.eye(min(shape))).max() <= limit(cond)
    # new samples given with CSR chunks: the same map
    assert rel(mapped(dc, near, "csr", 2), mapped(mem, near)) <= limit(cond)
    # the dense C of a pickled model (C = Q U_R Σ⁺ Wᵀ from a TSQR keeping Q, not T P)
    ct = dc.to_in_memory()
    assert ct.C_.shape == mem.C_.shape and ct.C_.dtype == mem.C_.dtype
    for Y in (train, near, fresh):
        assert rel(mapped(ct, Y), mapped(mem, Y)) <= limit(cond)
    assert rel(ct.C_, mem.C_) <= limit(cond)


@pytest.mark.parametrize("shape", SHAPES, ids=["side_x", "side_z"])
@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_independent_of_the_chunking(shape, kind):
    """Other chunkings of A and of Y: the same map (to the rounding of the TSQR); the same
    chunking: bitwise the same."""
    cond = 1e9
    A, _, _ = ill_conditioned(*shape, cond)
    train, near, _ = samples(A, "x" if shape[1] > shape[0] else "z")
    Y = np.vstack([train, near])
    outs = []
    for ca, cy in [(a_chunk(shape), 3), (a_chunk(shape, 5), 4), (shape[0], 1), (5, len(Y))]:
        dc = DaskCompatibility("pinv").fit(as_dask(A, kind, ca))
        outs.append(mapped(dc, Y, kind, cy))
        outs.append(dc.to_in_memory().C_)
    for out, ref in zip(outs[2:], outs[:2] * 3):
        assert rel(out, ref) <= limit(cond)
    dc = DaskCompatibility("pinv").fit(as_dask(A, kind, a_chunk(shape)))
    np.testing.assert_array_equal(mapped(dc, Y, kind, 3), outs[0])
    np.testing.assert_array_equal(dc.to_in_memory().C_, outs[1])


@pytest.mark.parametrize("shape", SHAPES, ids=["side_x", "side_z"])
@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_rank_deficient_truncated_directions_stay_zero(shape, kind):
    """Rank 4 of 8, kept singular values 1 … 1e-8 (κ = 1e8): the dropped directions are zero in
    every mapped sample, the kept ones match memory (the rank-4 projector for training rows)."""
    s = [1.0, 1e-3, 1e-6, 1e-8, 0.0, 0.0, 0.0, 0.0]
    A, U, V = ill_conditioned(*shape, 1e8, s=s)
    side = "x" if shape[1] > shape[0] else "z"
    left = U if side == "x" else V  # the mapped samples' coordinates live in R^small
    mem = CompatibilityTransform("pinv").fit(A)
    dc = DaskCompatibility("pinv").fit(as_dask(A, kind, a_chunk(shape)))
    train, near, fresh = samples(A, side)
    for Y in (train, near, fresh):
        out = mapped(dc, Y)
        assert rel(out, mapped(mem, Y)) <= limit(1e8)
        assert np.abs(out @ left[:, 4:]).max() <= 1e-8 * np.abs(out).max()
    np.testing.assert_allclose(mapped(dc, train), left[:, :4] @ left[:, :4].T, atol=limit(1e8))
    C = dc.to_in_memory().C_
    assert rel(C, mem.C_) <= limit(1e8)


# ------------------------------------------------------------------------- KernelSVD
@pytest.mark.parametrize("shape", SHAPES, ids=["side_x", "side_z"])
def test_kernel_svd_transform_of_training_points(shape):
    """Linear kernel, cond 1e9: the Dask scores of the training points (mapped by C) equal the
    in-memory ones; with y T P the mapped points were up to 86 off."""
    cond = 1e9
    A, _, _ = ill_conditioned(*shape, cond)
    kw = dict(n_components=3, kernel="linear", compat="pinv", solver="dense")
    a = KernelSVD(**kw).fit(A)
    b = KernelSVD(**kw).fit(as_dask(A, "dense", a_chunk(shape)))
    if shape[1] > shape[0]:  # side 'x': the rows are mapped
        got = b.transform(as_dask(A, "dense", 3)).compute()
        ref = a.transform(A)
    else:  # side 'z': the columns are mapped
        got = b.transform_right(as_dask(A.T, "dense", 3)).compute()
        ref = a.transform_right(A.T)
    assert rel(got, ref) <= limit(cond)


# --------------------------------------------------------------------- dtypes, inputs
def test_dtypes_and_inputs_unchanged():
    A, _, _ = ill_conditioned(40, 8, 1e4)
    A32 = A.astype(np.float32)
    dc = DaskCompatibility("pinv").fit(da.from_array(A32, chunks=(9, -1)))
    Y = np.random.default_rng(0).standard_normal((5, 40))
    Y32, keep = Y.astype(np.float32), Y.copy()
    out32 = dc.transform_z(da.from_array(Y32, chunks=(2, -1)))
    out64 = dc.transform_z(da.from_array(Y, chunks=(2, -1)))
    assert out32.dtype == np.float32 and out32.compute().dtype == np.float32
    assert out64.dtype == np.float64 and out64.compute().dtype == np.float64
    mem = CompatibilityTransform("pinv").fit(A32)
    assert rel(out32.compute(), mem.transform_z(Y32)) <= 1e-4
    assert dc.to_in_memory().C_.dtype == np.float32
    np.testing.assert_array_equal(Y, keep)
    np.testing.assert_array_equal(A32, A.astype(np.float32))


def test_refine_steps_rule():
    """The smallest n ≥ 1 with κ·(κ·eps)ⁿ ≤ 1 for the kept κ = σ_1/σ_r."""
    def inv(kappa, dropped=0):
        return np.concatenate([1.0 / np.logspace(0, -np.log10(kappa), 5), np.zeros(dropped)])

    assert refine_steps(np.zeros(4)) == 0
    assert refine_steps(np.ones(3)) == 1
    assert refine_steps(inv(1e3)) == refine_steps(inv(6e7, 2)) == 1
    assert refine_steps(inv(1e8)) == refine_steps(inv(1e10, 3)) == 2
    assert refine_steps(inv(1e11)) == 3
    assert refine_steps(inv(1e12)) == 4
    assert refine_steps(inv(1e15)) == MAX_REFINE_STEPS
