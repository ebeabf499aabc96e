"""Dask landmark and Nyström paths at extreme scales: the same landmarks / results as the
in-memory paths (``landmarks``, ``linalg.nystrom``, ``linalg.metrics``) for data or matrices
multiplied by 1e-200 … 1e160, whatever the chunking."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from _dask_helpers import one_blas_thread, synchronous_scheduler  # noqa: E402, F401

import asymkern._dask.machines as dmach  # noqa: E402
import asymkern._dask.nystrom as dnys  # noqa: E402
from asymkern.kernels import KernelMatrix, get_kernel  # noqa: E402
from asymkern.landmarks import select_landmarks  # noqa: E402
from asymkern.linalg import asymmetric_nystrom, eta  # noqa: E402
from asymkern.linalg.nystrom import _kmeans_landmarks  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_blas_thread")

#: the scales at which the in-memory paths are scale-invariant (2^±k: exact scalings)
SCALES = (1e-200, 1e-160, 2.0**-700, 1e154, 1e160, 2.0**600)
#: row chunkings: one chunk, several (last one short), one with an empty chunk
CHUNKS = (None, 25, "empty")


def chunked(A, c):
    if c is None:
        return da.from_array(A, chunks=(A.shape[0],) + A.shape[1:])
    if c == "empty":
        h = A.shape[0] // 2
        return da.from_array(A, chunks=((h, 0, A.shape[0] - h),) + A.shape[1:])
    return da.from_array(A, chunks=(c,) + A.shape[1:])


def quiet(f, *args, **kw):
    with warnings.catch_warnings():  # the old code overflows; the new one must not care
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args, **kw)


# ------------------------------------------------------ leverage landmarks of asymmetric G
@pytest.fixture(scope="module")
def lowrank():
    rng = np.random.default_rng(0)
    return rng.standard_normal((80, 5)) @ rng.standard_normal((5, 60))


@pytest.mark.parametrize("chunks", [(80, 60), (25, 60), (30, 17)])
@pytest.mark.parametrize("sc", SCALES)
def test_asymmetric_nystrom_leverage_dask_array_at_extreme_scale(lowrank, sc, chunks):
    base = asymmetric_nystrom(lowrank, 3, 30, 30, random_state=0, sampling="leverage")
    mem = asymmetric_nystrom(lowrank * sc, 3, 30, 30, random_state=0, sampling="leverage")
    np.testing.assert_array_equal(mem.row_landmarks, base.row_landmarks)  # in memory: fixed
    Gd = da.from_array(lowrank * sc, chunks=chunks)
    r = quiet(asymmetric_nystrom, Gd, 3, 30, 30, random_state=0, sampling="leverage")
    np.testing.assert_array_equal(r.row_landmarks, base.row_landmarks)
    np.testing.assert_array_equal(r.col_landmarks, base.col_landmarks)
    np.testing.assert_allclose(r.s / sc, base.s, rtol=1e-10)
    np.testing.assert_allclose(r.U.compute(), base.U, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("sc", (1e-80, 1e80))  # kernel values ~1e-160, ~1e160
def test_asymmetric_nystrom_leverage_dask_kernel_matrix_at_extreme_scale(sc):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((70, 4))
    Z = rng.standard_normal((50, 4))
    kw = dict(n_row_landmarks=20, n_col_landmarks=20, random_state=0, sampling="leverage")
    base = asymmetric_nystrom(KernelMatrix("linear", X, Z), 2, **kw)
    mem = asymmetric_nystrom(KernelMatrix("linear", X * sc, Z * sc), 2, **kw)
    np.testing.assert_array_equal(mem.row_landmarks, base.row_landmarks)
    Gd = KernelMatrix("linear", da.from_array(X * sc, chunks=30), da.from_array(Z * sc, chunks=20))
    r = quiet(asymmetric_nystrom, Gd, 2, **kw)
    np.testing.assert_array_equal(r.row_landmarks, base.row_landmarks)
    np.testing.assert_array_equal(r.col_landmarks, base.col_landmarks)
    np.testing.assert_allclose(r.s / sc**2, base.s, rtol=1e-10)


# ------------------------------------------------------------- 'change' estimate (η cosines)
@pytest.fixture(scope="module")
def factors():
    rng = np.random.default_rng(2)
    U, _ = np.linalg.qr(rng.standard_normal((40, 3)))
    V, _ = np.linalg.qr(rng.standard_normal((30, 3)))
    Up = U + 0.05 * rng.standard_normal(U.shape)
    Vp = V + 0.05 * rng.standard_normal(V.shape)
    return U, V, Up, Vp, np.array([3.0, 2.0, 1.0])


@pytest.mark.parametrize("weights", ["uniform", "paper"])
@pytest.mark.parametrize("sc", (1e-200, 1e-160, 2.0**-700, 1e160, 2.0**600))
def test_change_estimate_does_not_depend_on_the_scale_of_the_vectors(factors, sc, weights):
    U, V, Up, Vp, s = factors
    want = eta(U, V, Up, Vp, singular_values=s, weights=weights)
    assert want > 1e-4  # a genuine, resolvable difference
    acc = dnys.DaskAccess(da.ones((40, 30), chunks=10))
    # each of the four factors at its own scale (and columns of mixed scale)
    mixed = np.array([sc, 1.0, 1 / sc])
    for u, v, up, vp in ((U * sc, V, Up, Vp * sc), (U, V * sc, Up * sc, Vp),
                         (U * mixed, V * mixed[::-1], Up, Vp * mixed)):
        res = SimpleNamespace(U=chunked(u, 15), V=chunked(v, "empty"), s=s)
        prev = SimpleNamespace(U=chunked(up, 7), V=chunked(vp, None))
        got = quiet(acc.change_estimate, res, prev, 3, weights)
        np.testing.assert_allclose(got, want, rtol=1e-10)
        np.testing.assert_allclose(
            got, eta(u, v, up, vp, singular_values=s, weights=weights), rtol=1e-10)


# ------------------------------------------------------------ k-means landmarks, n > limit
def _clusters(n_per=40, seed=1):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.standard_normal((n_per, 2)) * 0.1 + c
                      for c in ([0, 0], [5, 0], [0, 5])])


@pytest.mark.parametrize("chunks", CHUNKS)
@pytest.mark.parametrize("sc", SCALES)
def test_nystrom_kmeans_landmarks_past_the_gather_limit_at_extreme_scale(monkeypatch, sc,
                                                                          chunks):
    monkeypatch.setattr(dnys, "_KMEANS_GATHER_MAX", 10)  # the sampled branch at n = 120
    X = _clusters()
    want = _kmeans_landmarks(X, 3, np.random.RandomState(0))
    assert sorted({int(i) // 40 for i in want}) == [0, 1, 2]  # one per cluster
    np.testing.assert_array_equal(_kmeans_landmarks(X * sc, 3, np.random.RandomState(0)), want)
    got = quiet(dnys.kmeans_landmarks, chunked(X * sc, chunks), 3, np.random.RandomState(0))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("limit", [10, 20000])  # sampled k-means / all points
@pytest.mark.parametrize("sc", (1.0, 1e-200, 1e160))
def test_asymmetric_nystrom_kmeans_row_points_of_a_dask_matrix(monkeypatch, sc, limit):
    # row_points reach the Dask access checked into numpy: the in-memory selectors run
    monkeypatch.setattr(dnys, "_KMEANS_GATHER_MAX", limit)
    X = _clusters()
    Z = np.random.default_rng(3).standard_normal((30, 2))
    G = KernelMatrix("rbf", da.from_array(X, chunks=35), Z)
    kw = dict(n_row_landmarks=6, n_col_landmarks=6, row_sampling="kmeans",
              col_sampling="uniform", random_state=3)
    base = asymmetric_nystrom(G, 2, **kw)  # the k-means points: X itself
    # the k-means points may live at another scale than the kernel's data
    r = quiet(asymmetric_nystrom, G, 2, row_points=da.from_array(X * sc, chunks=35), **kw)
    if limit == 20000:  # the same as the in-memory fit
        np.testing.assert_array_equal(r.row_landmarks, base.row_landmarks)
    else:
        rs = np.random.RandomState(3)
        want = _kmeans_landmarks(X, 6, rs)  # the first draws of asymmetric_nystrom
        np.testing.assert_array_equal(r.row_landmarks, want)
        np.testing.assert_array_equal(
            asymmetric_nystrom(G, 2, row_points=X, **kw).row_landmarks, want)
    assert np.all(np.isfinite(r.U.compute()))


@pytest.mark.parametrize("chunks", CHUNKS)
@pytest.mark.parametrize("sc", SCALES)
def test_machine_kmeans_centers_past_the_gather_limit_at_extreme_scale(monkeypatch, sc,
                                                                       chunks):
    monkeypatch.setattr(dmach, "_KMEANS_GATHER_MAX", 10)
    X = _clusters()
    idx0, c0 = dmach.kmeans_centers(chunked(X, chunks), 3, np.random.RandomState(0))
    assert sorted(int(i) // 40 for i in idx0) == [0, 1, 2]
    idx, c = quiet(dmach.kmeans_centers, chunked(X * sc, chunks), 3, np.random.RandomState(0))
    np.testing.assert_array_equal(idx, idx0)
    np.testing.assert_allclose(c / sc, c0, rtol=1e-10, atol=1e-12)
    # the indices are the rows nearest to the centres
    d = ((X[:, None, :] - (c / sc)[None]) ** 2).sum(-1)
    np.testing.assert_array_equal(idx, d.argmin(axis=0))


# -------------------------------------------------- machine leverage: homogeneous kernels
@pytest.mark.parametrize("chunks", CHUNKS)
@pytest.mark.parametrize("kernel, params", [("linear", {}),
                                            ("polynomial", {"degree": 2, "coef0": 0.0})])
@pytest.mark.parametrize("sc", SCALES)
def test_machine_leverage_homogeneous_kernels_at_extreme_scale(sc, kernel, params, chunks):
    X = np.random.default_rng(0).standard_normal((50, 3))
    kern = get_kernel(kernel, **params)
    want = select_landmarks(X, 5, "leverage", kernel=kern, random_state=0)
    np.testing.assert_array_equal(  # the in-memory selector is scale-free
        select_landmarks(X * sc, 5, "leverage", kernel=kern, random_state=0), want)
    Xd = dmach.check_X(chunked(X * sc, chunks))  # as in a fit (empty chunks dropped)
    got = quiet(dmach.leverage_indices, kern, Xd, 5, np.random.RandomState(0))
    np.testing.assert_array_equal(got, want)


def test_machine_leverage_float32_data_beyond_float32_square_range():
    # float32 data ~1e25: squares leave float32's range, kernel values are not representable
    X = np.random.default_rng(4).standard_normal((40, 3)).astype(np.float32)
    kern = get_kernel("linear")
    want = select_landmarks(X, 4, "leverage", kernel=kern, random_state=1)
    Xs = X * np.float32(2.0**84)
    np.testing.assert_array_equal(
        select_landmarks(Xs, 4, "leverage", kernel=kern, random_state=1), want)
    got = quiet(dmach.leverage_indices, kern, dmach.check_X(chunked(Xs, 15)), 4,
                np.random.RandomState(1))
    np.testing.assert_array_equal(got, want)
