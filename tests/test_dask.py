"""Dask executor: agreement with the in-memory path, determinism, no large gathers, bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from _dask_helpers import one_blas_thread, rel, synchronous_scheduler, watch_client  # noqa: E402, F401

from asymkern._dask import is_dask_array  # noqa: E402
from asymkern._dask.kernel import DaskKernelMatrix  # noqa: E402
from asymkern.decomposition.ksvd import KernelSVD  # noqa: E402
from asymkern.kernels import KernelMatrix, get_kernel  # noqa: E402
from asymkern.linalg import asymmetric_nystrom, top_svd  # noqa: E402


def data(n=240, m=200, d=4, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)).astype(dtype), rng.normal(size=(m, d)).astype(dtype)


def dsparse(A, c):
    """A dask array of CSR chunks of c rows."""
    return da.concatenate([da.from_array(A[i:i + c], chunks=A[i:i + c].shape, asarray=False)
                           for i in range(0, A.shape[0], c)])


NYS = {"n_row_landmarks": 40, "n_col_landmarks": 30}


# ----------------------------------------------------------------------------- kernel layer
@pytest.mark.parametrize("name", ["rbf", "sne", "t"])
@pytest.mark.parametrize("center", [False, True])
def test_kernel_layer_matches_in_memory(name, center):
    X, Z = data(53, 41)
    k = get_kernel(name, **({"gamma": 0.5} if name == "t" else {"gamma": 0.3}))
    ref = KernelMatrix(k, X, Z, center=center)
    G = np.vstack([B for _, B in ref.iter_row_blocks()])
    D = KernelMatrix(k, da.from_array(X, chunks=10), da.from_array(Z, chunks=15), center=center)
    assert isinstance(D, DaskKernelMatrix)
    rng = np.random.default_rng(1)
    V, U = rng.normal(size=(41, 3)), rng.normal(size=(53, 3))
    I, J = np.array([3, 50, 7]), np.array([0, 40, 12, 13])
    assert rel(D.to_dask_array().compute(), G) < 1e-13
    mm, rmm = D.matmat(V), D.rmatmat(U)
    assert is_dask_array(mm) and mm.chunks[0] == D.row_chunks
    assert rel(mm.compute(), G @ V) < 1e-13
    assert rel(rmm.compute(), G.T @ U) < 1e-13
    assert rel(D.block(I, J), G[np.ix_(I, J)]) < 1e-13
    assert rel(D.cols(J).compute(), G[:, J]) < 1e-13
    if k.row_normalized:
        assert rel(D.row_normalizers().compute(), ref.row_normalizers()) < 1e-13


def test_dask_import_is_lazy_and_detects_arrays():
    assert not is_dask_array(np.ones(3))
    assert is_dask_array(da.ones(3))


# ------------------------------------------------------------------- KernelSVD agreement
@pytest.mark.parametrize("kernel", ["rbf", "sne"])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("chunks", [None, (70, 60)])
def test_ksvd_nystrom_matches_in_memory(kernel, center, chunks):
    X, Z = data()
    Xn, Zn = data(37, 29, seed=5)
    kw = dict(n_components=3, kernel=kernel, kernel_params={"gamma": 0.3}, center=center,
              solver="nystrom", random_state=0, **NYS)
    a = KernelSVD(**kw).fit(X, Z=Z)
    cx, cz = chunks or (X.shape[0], Z.shape[0])  # None: single-chunk dask arrays
    b = KernelSVD(**kw).fit(da.from_array(X, chunks=cx), Z=da.from_array(Z, chunks=cz))
    assert is_dask_array(b.left_singular_vectors_) and is_dask_array(b.right_singular_vectors_)
    assert b.left_singular_vectors_.chunks[0] == ((cx,) * (X.shape[0] // cx)
                                                  + ((X.shape[0] % cx,) if X.shape[0] % cx
                                                     else ()))
    np.testing.assert_array_equal(b.row_landmarks_, a.row_landmarks_)
    np.testing.assert_array_equal(b.col_landmarks_, a.col_landmarks_)
    assert rel(b.singular_values_, a.singular_values_) < 1e-10
    assert rel(b.left_singular_vectors_.compute(), a.left_singular_vectors_) < 1e-10
    assert rel(b.right_singular_vectors_.compute(), a.right_singular_vectors_) < 1e-10
    t = b.transform(da.from_array(Xn, chunks=10))
    assert is_dask_array(t)
    assert rel(t.compute(), a.transform(Xn)) < 1e-10
    assert rel(b.transform_right(da.from_array(Zn, chunks=10)).compute(),
               a.transform_right(Zn)) < 1e-10
    # in-memory input after a dask fit gives numpy; dask input after an in-memory fit works too
    assert isinstance(b.transform(Xn), np.ndarray)
    assert rel(a.transform(da.from_array(Xn, chunks=9)).compute(), a.transform(Xn)) < 1e-10


def test_ksvd_float32_kept():
    X, Z = data(dtype=np.float32)
    kw = dict(n_components=3, kernel="rbf", kernel_params={"gamma": 0.3}, solver="nystrom",
              random_state=0, **NYS)
    a = KernelSVD(**kw).fit(X, Z=Z)
    b = KernelSVD(**kw).fit(da.from_array(X, chunks=50), Z=da.from_array(Z, chunks=50))
    U = b.left_singular_vectors_.compute()
    assert U.dtype == np.float32 and b.right_singular_vectors_.dtype == np.float32
    assert rel(U, a.left_singular_vectors_) < 1e-5


@pytest.mark.parametrize("kernel", ["rbf", "sne"])
def test_ksvd_sparse_csr_chunks(kernel):
    Xs = sp.random(240, 60, density=0.1, format="csr", random_state=1)
    Zs = sp.random(200, 60, density=0.1, format="csr", random_state=2)
    kw = dict(n_components=3, kernel=kernel, kernel_params={"gamma": 0.3}, center=True,
              solver="nystrom", random_state=0, **NYS)
    a = KernelSVD(**kw).fit(Xs, Z=Zs)
    Xd = dsparse(Xs, 70)
    assert sp.issparse(Xd._meta)
    b = KernelSVD(**kw).fit(Xd, Z=dsparse(Zs, 60))
    assert sp.issparse(b.X_fit_._meta)  # chunks stay CSR (never densified)
    assert rel(b.left_singular_vectors_.compute(), a.left_singular_vectors_) < 1e-10
    assert rel(b.transform(dsparse(Xs[:30], 7)).compute(), a.transform(Xs[:30])) < 1e-10


@pytest.mark.parametrize("solver", ["randomized", "block_krylov"])
@pytest.mark.parametrize("kernel,center", [("rbf", False), ("sne", True)])
def test_ksvd_randomized_matches_in_memory_whatever_the_chunking(kernel, center, solver):
    # the same Ω (chunk-independent generator) and the same passes as the in-memory solver
    X, Z = data()
    kw = dict(n_components=3, kernel=kernel, kernel_params={"gamma": 0.3}, center=center,
              solver=solver, n_iter=2, random_state=0)
    a = KernelSVD(**kw).fit(X, Z=Z)
    exact = KernelSVD(**dict(kw, solver="dense")).fit(X, Z=Z)
    assert rel(a.singular_values_, exact.singular_values_) < 1e-5  # a randomized SVD
    Xn = data(20, 5, seed=3)[0]
    for cx, cz in ((240, 200), (70, 60), (33, 101)):
        b = KernelSVD(**kw).fit(da.from_array(X, chunks=cx), Z=da.from_array(Z, chunks=cz))
        assert b.left_singular_vectors_.chunks[0][0] == cx
        assert rel(b.singular_values_, a.singular_values_) < 1e-12
        assert rel(b.left_singular_vectors_.compute(), a.left_singular_vectors_) < 1e-12
        assert rel(b.right_singular_vectors_.compute(), a.right_singular_vectors_) < 1e-12
        assert rel(b.transform(da.from_array(Xn, chunks=7)).compute(), a.transform(Xn)) < 1e-12
    # same seed, same chunking: bitwise identical
    b2 = KernelSVD(**kw).fit(da.from_array(X, chunks=33), Z=da.from_array(Z, chunks=101))
    np.testing.assert_array_equal(b2.singular_values_, b.singular_values_)
    np.testing.assert_array_equal(b2.left_singular_vectors_.compute(),
                                  b.left_singular_vectors_.compute())


def test_randomized_plain_dask_matrix_and_float32():
    rng = np.random.default_rng(5)
    G = rng.normal(size=(300, 120))
    a = top_svd(G, 4, solver="randomized", random_state=3, n_iter=1)
    b = top_svd(da.from_array(G, chunks=(50, 40)), 4, solver="randomized", random_state=3,
                n_iter=1)
    assert rel(b.s, a.s) < 1e-12 and rel(b.U.compute(), a.U) < 1e-12
    assert rel(b.V.compute(), a.V) < 1e-12
    G32 = G.astype(np.float32)
    a32 = top_svd(G32, 4, solver="randomized", random_state=3)
    b32 = top_svd(da.from_array(G32, chunks=(75, 120)), 4, solver="randomized", random_state=3)
    assert b32.U.dtype == np.float32 and b32.V.dtype == np.float32
    assert rel(b32.s, a32.s) < 1e-5 and rel(b32.U.compute(), a32.U) < 1e-4
    with pytest.raises(ValueError, match="n_iter"):
        top_svd(da.from_array(G, chunks=50), 4, solver="randomized", n_iter="many")
    # block Krylov: the same blocks and the same Rayleigh–Ritz step as in memory
    a = top_svd(G, 4, solver="block_krylov", random_state=3, n_iter=2)
    b = top_svd(da.from_array(G, chunks=(50, 40)), 4, solver="block_krylov", random_state=3,
                n_iter=2)
    assert b.solver == a.solver == "block_krylov" and b.info["n_iter"] == 2
    assert rel(b.s, a.s) < 1e-12 and rel(b.U.compute(), a.U) < 1e-12
    assert rel(b.V.compute(), a.V) < 1e-12


def test_chunk_independent_gaussian_rows():
    from asymkern._dask.svd import gaussian_rows_dask
    from asymkern._random import BLOCK_ROWS, normal_rows

    n = 2 * BLOCK_ROWS + 17
    full = normal_rows(7, 0, n, 3)
    np.testing.assert_array_equal(normal_rows(7, 5, BLOCK_ROWS + 9, 3), full[5:BLOCK_ROWS + 9])
    for chunks in ((n,), (100, n - 100), (BLOCK_ROWS, BLOCK_ROWS, 17)):
        np.testing.assert_array_equal(gaussian_rows_dask(7, chunks, 3, np.float64).compute(),
                                      full)
    assert not np.array_equal(normal_rows(8, 0, 10, 3), full[:10])
    big = normal_rows(7, 0, 40 * BLOCK_ROWS, 5)  # 51,200 draws: standard normal, blocks unrelated
    assert abs(big.mean()) < 0.02 and abs(big.std() - 1) < 0.02
    b0, b1 = big[:BLOCK_ROWS].ravel(), big[BLOCK_ROWS:2 * BLOCK_ROWS].ravel()
    assert abs(np.corrcoef(b0, b1)[0, 1]) < 0.1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nystrom_orthogonalize_on_dask(dtype):
    X, Z = data(240, 200, dtype=dtype)
    k = get_kernel("sne", gamma=0.3)
    opts = dict(random_state=1, orthogonalize=True, n_row_landmarks=40, n_col_landmarks=30)
    a = asymmetric_nystrom(KernelMatrix(k, X, Z), 4, **opts)
    tol = 1e-10 if dtype == np.float64 else 1e-5
    for cx, cz in ((240, 200), (50, 45)):
        b = asymmetric_nystrom(KernelMatrix(k, da.from_array(X, chunks=cx),
                                            da.from_array(Z, chunks=cz)), 4, **opts)
        U = b.U.compute()
        assert U.dtype == dtype and rel(b.s, a.s) < tol
        assert rel(U, a.U) < tol and rel(b.V.compute(), a.V) < tol
        assert np.abs(U.T.astype(float) @ U - np.eye(4)).max() < 100 * np.finfo(dtype).eps
    # the out-of-sample map of the orthogonalised solution, through KernelSVD on both paths
    kw = dict(n_components=3, kernel="sne", kernel_params={"gamma": 0.3}, solver="nystrom",
              **NYS, nystrom_params={"orthogonalize": True}, random_state=0)
    e = KernelSVD(**kw).fit(X, Z=Z)
    f = KernelSVD(**kw).fit(da.from_array(X, chunks=70), Z=da.from_array(Z, chunks=60))
    Xn = data(20, 5, seed=3, dtype=dtype)[0]
    assert rel(f.transform(da.from_array(Xn, chunks=7)).compute(), e.transform(Xn)) < tol


# ------------------------------------------------------------------------- linalg entry
def test_linalg_entry_points_and_landmark_options():
    X, Z = data(150, 130)
    Dm = KernelMatrix("rbf", X, Z)
    Dd = KernelMatrix("rbf", da.from_array(X, chunks=50), da.from_array(Z, chunks=45))
    for opts in ({"row_sampling": np.arange(0, 150, 7), "n_col_landmarks": 30},
                 {"tol": 1e-3}, {"tol": 1e-2, "estimate": "residual", "n_probes": 40},
                 {"n_row_landmarks": 40, "normalize": True}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            a = asymmetric_nystrom(Dm, 3, random_state=1, **opts)
            b = asymmetric_nystrom(Dd, 3, random_state=1, **opts)
        np.testing.assert_array_equal(a.row_landmarks, b.row_landmarks)
        assert rel(b.U.compute(), a.U) < 1e-10 and rel(b.V.compute(), a.V) < 1e-10
        if "tol" in opts:
            ha, hb = a.info["history"], b.info["history"]
            assert [h["n_row_landmarks"] for h in ha] == [h["n_row_landmarks"] for h in hb]
            est_a = np.array([h["estimate"] for h in ha])
            est_b = np.array([h["estimate"] for h in hb])
            np.testing.assert_allclose(est_b, est_a, rtol=1e-8)
    # a plain dask matrix G
    G = Dm.to_array()
    a = top_svd(G, 3, solver="nystrom", random_state=2)
    b = top_svd(da.from_array(G, chunks=(50, 130)), 3, solver="nystrom", random_state=2)
    assert rel(b.U.compute(), a.U) < 1e-10
    for GG, Gd in ((Dm, Dd), (G, da.from_array(G, chunks=(50, 130)))):
        a = asymmetric_nystrom(GG, 3, 20, 25, random_state=0, sampling="leverage")
        b = asymmetric_nystrom(Gd, 3, 20, 25, random_state=0, sampling="leverage")
        np.testing.assert_array_equal(a.row_landmarks, b.row_landmarks)
        np.testing.assert_array_equal(a.col_landmarks, b.col_landmarks)
        assert rel(b.U.compute(), a.U) < 1e-10


def test_kmeans_landmarks_large_n_distributed_argmin():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(21000, 2))
    Z = rng.normal(size=(50, 2))
    kw = dict(n_row_landmarks=12, n_col_landmarks=12, row_sampling="kmeans",
              col_sampling="uniform")
    a = asymmetric_nystrom(KernelMatrix("rbf", X, Z), 2, random_state=3, **kw)
    b = asymmetric_nystrom(KernelMatrix("rbf", da.from_array(X, chunks=4000), Z), 2,
                           random_state=3, **kw)
    np.testing.assert_array_equal(a.row_landmarks, b.row_landmarks)


# --------------------------------------------------------------------------- determinism
def test_determinism_across_schedulers_and_chunkings():
    X, Z = data()
    kw = dict(n_components=3, kernel="sne", kernel_params={"gamma": 0.3}, center=True,
              solver="nystrom", random_state=4, **NYS)
    fits = {}
    for sched in ("synchronous", "threads"):
        with dask.config.set(scheduler=sched):
            est = KernelSVD(**kw).fit(da.from_array(X, chunks=70), Z=da.from_array(Z, chunks=60))
            fits[sched] = (est.left_singular_vectors_.compute(),
                           est.right_singular_vectors_.compute(), est.singular_values_)
    for x, y in zip(fits["synchronous"], fits["threads"]):
        np.testing.assert_array_equal(x, y)  # bitwise for a fixed chunking
    for cx, cz in ((240, 200), (33, 17), (100, 199), (None, 60)):
        # None: with an empty chunk in the middle
        Xd = da.from_array(X, chunks=cx or ((100, 0, 140), (4,)))
        est = KernelSVD(**kw).fit(Xd, Z=da.from_array(Z, chunks=cz))
        assert rel(est.left_singular_vectors_.compute(), fits["threads"][0]) < 1e-12
        assert rel(est.singular_values_, fits["threads"][2]) < 1e-12


# --------------------------------------------------------------------- nothing big gathered
def test_no_large_array_reaches_the_client(monkeypatch):
    X, Z = data(600, 500)
    sizes = watch_client(monkeypatch, lambda o: int(getattr(o, "nbytes", 8)))
    est = KernelSVD(n_components=3, kernel="sne", kernel_params={"gamma": 0.3}, center=True,
                    solver="nystrom", random_state=0, **NYS)
    est.fit(da.from_array(X, chunks=100), Z=da.from_array(Z, chunks=100))
    t = est.transform(da.from_array(X[:50], chunks=25))
    assert sizes, "nothing was recorded"
    # every gathered object is smaller than one column of G (nothing N×M, N×s or even N×1)
    assert max(sizes) < min(X.shape[0], Z.shape[0]) * 8, sorted(sizes)[-5:]
    monkeypatch.undo()
    assert t.shape == (50, 3)


# --------------------------------------------------------------------------- bad inputs
def test_bad_inputs_clear_errors():
    X, Z = data()
    Xd, Zd = da.from_array(X, chunks=50), da.from_array(Z, chunks=50)
    est = KernelSVD(n_components=2, solver="nystrom", random_state=0)
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        est.fit(Xd[Xd[:, 0] > 0], Z=Zd)
    with pytest.raises(ValueError, match=r"chunked along its features.*rechunk"):
        est.fit(da.from_array(X, chunks=(50, 2)), Z=Zd)
    with pytest.raises(ValueError, match="X has 4 features but Z has 3"):
        est.fit(Xd, Z=Zd[:, :3])
    Xbad = X.copy()
    Xbad[123, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinity in rows \[100, 150\)"):
        est.fit(da.from_array(Xbad, chunks=50), Z=Zd)
    with pytest.raises(ValueError, match="set compat"):  # fit(A): tests/test_dask_compat.py
        KernelSVD(n_components=2, compat=None).fit(Xd)
    with pytest.raises(TypeError, match="sparse chunks"):
        KernelSVD(kernel=lambda A, B: A @ B.T).fit(dsparse(sp.random(20, 4, 0.5, format="csr"), 10),
                                          Z=dsparse(sp.random(20, 4, 0.5, format="csr"), 10))


# ----------------------------------------------------------------- LocalCluster, processes
def _rbf_dying_once(A, B, marker=None):
    """RBF values; the first call on a worker whose marker file is absent kills that worker."""
    import os

    if marker is not None and os.environ.get("ASYMKERN_TEST_WORKER") and not os.path.exists(
            marker):
        open(marker, "w").close()
        os._exit(1)  # the worker process dies in the middle of the fit
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-0.3 * np.maximum(sq, 0.0))


@pytest.mark.usefixtures("one_blas_thread")
def test_local_cluster_processes_same_result_and_survives_a_killed_worker(tmp_path,
                                                                          monkeypatch):
    # bitwise equality needs the same BLAS threading on both sides: distributed's workers run
    # one BLAS thread (its pre-spawn environment), so the references here do too
    distributed = pytest.importorskip("distributed")
    cloudpickle = pytest.importorskip("cloudpickle")
    import functools
    import sys

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests
    X, Z = data()
    kw = dict(n_components=3, kernel="sne", kernel_params={"gamma": 0.3}, center=True,
              solver="nystrom", random_state=4, **NYS)
    ref = KernelSVD(**kw).fit(da.from_array(X, chunks=70), Z=da.from_array(Z, chunks=60))
    U_ref = ref.left_singular_vectors_.compute()
    T_ref = ref.transform(X[:20])
    marker = str(tmp_path / "killed")
    dying = functools.partial(_rbf_dying_once, marker=marker)
    kw2 = dict(kw, kernel=dying, kernel_params=None)
    ref2 = KernelSVD(**kw2).fit(da.from_array(X, chunks=70), Z=da.from_array(Z, chunks=60))
    U2_ref = ref2.left_singular_vectors_.compute()
    monkeypatch.setenv("ASYMKERN_TEST_WORKER", "1")  # inherited by the worker processes only
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      host="127.0.0.1", dashboard_address=None,
                                      death_timeout=60) as cluster, \
                distributed.Client(cluster, timeout=60) as client:
            monkeypatch.delenv("ASYMKERN_TEST_WORKER")
            with dask.config.set(scheduler="dask.distributed"):  # the Client
                est = KernelSVD(**kw).fit(da.from_array(X, chunks=70),
                                          Z=da.from_array(Z, chunks=60))
                U = est.left_singular_vectors_.compute()
                T = est.transform(X[:20])
                assert len(client.scheduler_info()["workers"]) == 2
                # a worker dies inside a kernel task: the scheduler retries it elsewhere
                est2 = KernelSVD(**kw2).fit(da.from_array(X, chunks=70),
                                            Z=da.from_array(Z, chunks=60))
                U2 = est2.left_singular_vectors_.compute()
                client.wait_for_workers(2, timeout=60)  # the nanny restarted the dead one
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    np.testing.assert_array_equal(U, U_ref)
    np.testing.assert_array_equal(T, T_ref)
    import os

    assert os.path.exists(marker), "no worker was killed"
    np.testing.assert_array_equal(U2, U2_ref)


def test_library_imports_without_dask(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['dask'] = None; sys.modules['dask.array'] = None\n"
        "import numpy as np, asymkern\n"
        "from asymkern.decomposition.ksvd import KernelSVD\n"
        "X = np.random.default_rng(0).normal(size=(30, 3))\n"
        "KernelSVD(2, solver='nystrom', random_state=0).fit(X, Z=X[:20]).transform(X)\n"
        "Fake = type('Array', (), {'__module__': 'dask.array.core', 'shape': (3, 3)})\n"
        "try:\n"
        "    KernelSVD(2).fit(Fake(), Z=Fake())\n"
        "except ImportError as e:\n"
        "    assert 'asymkern[dask]' in str(e), e\n"
        "    print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ok" in out.stdout


def test_zarr_in_and_out(tmp_path):
    pytest.importorskip("zarr")
    X, Z = data()
    da.from_array(X, chunks=(60, 4)).to_zarr(str(tmp_path / "X.zarr"))
    da.from_array(Z, chunks=(50, 4)).to_zarr(str(tmp_path / "Z.zarr"))
    Xz, Zz = da.from_zarr(str(tmp_path / "X.zarr")), da.from_zarr(str(tmp_path / "Z.zarr"))
    kw = dict(n_components=3, kernel="rbf", kernel_params={"gamma": 0.3}, solver="nystrom",
              random_state=0, **NYS)
    est = KernelSVD(**kw)
    scores = est.fit_transform(Xz, Z=Zz)
    assert is_dask_array(scores)
    est.right_singular_vectors_.to_zarr(str(tmp_path / "V.zarr"))
    V = da.from_zarr(str(tmp_path / "V.zarr")).compute()
    ref = KernelSVD(**kw).fit(X, Z=Z)
    assert rel(V, ref.right_singular_vectors_) < 1e-10
    assert rel(scores.persist().compute(), ref.fit_transform(X, Z=Z)) < 1e-10


def test_progress_bar_when_show_progress(capsys):
    import asymkern

    X, Z = data(60, 50)
    with asymkern.config_context(show_progress=True):
        KernelSVD(n_components=2, solver="nystrom", random_state=0,
                  n_row_landmarks=10).fit(
            da.from_array(X, chunks=20), Z=da.from_array(Z, chunks=20))
    out = capsys.readouterr()
    assert "Completed" in out.out + out.err



def test_auto_bandwidth_equals_in_memory():
    """bandwidth='auto' on dask inputs: the same sampled rows, the same value, the same fit."""
    from asymkern import KernelSVD

    rng = np.random.default_rng(3)
    X, Z = rng.normal(size=(700, 4)), rng.normal(size=(650, 4)) + 0.3
    kw = dict(n_components=4, kernel="rbf", kernel_params={"bandwidth": "auto"},
              solver="nystrom", **NYS, random_state=0)
    ref = KernelSVD(**kw).fit(X, Z=Z)
    est = KernelSVD(**kw).fit(da.from_array(X, chunks=200), Z=da.from_array(Z, chunks=300))
    assert est.bandwidth_ == ref.bandwidth_
    np.testing.assert_allclose(est.singular_values_, ref.singular_values_, rtol=1e-10)


def test_nystrom_memory_guard_counts_only_what_the_client_holds():
    # U, V of a Dask fit live in the workers: a 10⁹-row problem with a small core must pass
    # the client's budget (it raised before, counting (N + M)·r floats on the client)
    from asymkern._dask.nystrom import DaskAccess
    from asymkern.linalg.nystrom import _core_solve

    X = da.ones((10**9, 4), chunks=(10**8, 4))
    acc = DaskAccess(KernelMatrix(get_kernel("rbf", gamma=0.5), X, X))
    Uw, sw, Vw, n_keep, _, c = _core_solve(acc, 1, np.array([0, 5 * 10**8]), np.array([1, 7]),
                                           "dense", None, np.random.RandomState(0))
    assert n_keep == 1 and sw[0] == pytest.approx(2.0)
    assert c == pytest.approx((4 / 10**18) ** 0.25)


def test_task_operands_are_realigned():
    # distributed hands tasks arrays at any byte offset; numpy's @ then skips BLAS (other
    # rounding). Tasks re-align their operands, so a worker computes what the client computes.
    from asymkern._dask.kernel import aligned, call_aligned

    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(70, 30)), rng.normal(size=(30, 3))
    buf = np.empty(B.nbytes + 1, dtype=np.uint8)
    Bu = np.ndarray(B.shape, dtype=B.dtype, buffer=buf[1:])  # an unaligned copy, as received
    Bu[...] = B
    assert not Bu.flags.aligned
    assert aligned(Bu).flags.aligned and aligned(B) is B
    t = aligned((Bu, [Bu]))  # tuples and lists too
    assert t[0].flags.aligned and t[1][0].flags.aligned
    np.testing.assert_array_equal(call_aligned(np.matmul, A, Bu), A @ B)


@pytest.mark.parametrize("transpose", [False, True])
def test_float32_matrix_times_float64_block_is_float64(transpose):
    """G·V of a float32 dask G and a float64 V is computed in float64, as its declared dtype
    and the in-memory KernelMatrix say (it was computed in float32 under a float64 label)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3)).astype(np.float32)
    V = rng.standard_normal((40, 2)) + 1
    Gd = KernelMatrix("rbf", da.from_array(X, chunks=(10, 3)))
    out = Gd.rmatmat(V) if transpose else Gd.matmat(V)
    got = out.compute()
    assert out.dtype == got.dtype == np.float64
    K = KernelMatrix("rbf", X.astype(np.float64)).to_array()
    np.testing.assert_allclose(got, (K.T if transpose else K) @ V, rtol=1e-5)
