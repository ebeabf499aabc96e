"""KernelSVD.fit(A) with one dask data matrix and a compatibility matrix (paper 000 Remark 2.3,
Alg. 1 App. D) against the in-memory path; a2 chunk independence; the budget refusal; a1 signs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from _dask_helpers import one_blas_thread, rel, synchronous_scheduler, watch_client  # noqa: E402, F401

import asymkern  # noqa: E402
from asymkern._dask import is_dask_array  # noqa: E402
from asymkern._dask.compat import DaskCompatibility, transpose_rows  # noqa: E402
from asymkern._dask.kernel import as_dask_data  # noqa: E402
from asymkern.config import MemoryBudgetError  # noqa: E402
from asymkern.decomposition.ksvd import KernelSVD  # noqa: E402
from asymkern.kernels import CompatibilityTransform  # noqa: E402
from asymkern.kernels.compat import RANDOM_BLOCK_ROWS, fix_signs, random_rows  # noqa: E402


def dsparse(A, c):
    """A dask array of CSR chunks of c rows."""
    return da.concatenate([da.from_array(A[i:i + c], chunks=A[i:i + c].shape, asarray=False)
                           for i in range(0, A.shape[0], c)])


def matrix(shape, sparse: bool, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    if sparse:
        return sp.random(*shape, density=0.15, format="csr", random_state=seed,
                         data_rvs=rng.standard_normal).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


def as_dask(A, chunk):
    """Single chunk (chunk=None) or row chunks of ``chunk`` rows; CSR chunks for sparse A."""
    c = chunk or A.shape[0]
    return dsparse(A, c) if sp.issparse(A) else da.from_array(A, chunks=(c, -1))


NYS = {"n_row_landmarks": 40, "n_col_landmarks": 30}


def ksvd(compat, **kw):
    return KernelSVD(**{**dict(n_components=3, kernel="rbf", kernel_params={"bandwidth":
                                                                            "median"},
                               compat=compat, solver="nystrom", random_state=0,
                               **NYS), **kw})


def user_matrix(shape):
    N, M = shape
    return np.random.default_rng(7).normal(size=(max(N, M), min(N, M)))


# ------------------------------------------------------------------- agreement with numpy
@pytest.mark.parametrize("compat", ["a0", "a1", "a2", "user"])
@pytest.mark.parametrize("shape", [(300, 40), (40, 300)], ids=["tall", "wide"])
@pytest.mark.parametrize("layout", [("dense", None), ("dense", 37), ("csr", 41)],
                         ids=["single", "chunks", "csr"])
def test_fit_A_matches_in_memory(compat, shape, layout):
    kind, chunk = layout
    A = matrix(shape, kind == "csr")
    c = user_matrix(shape) if compat == "user" else compat
    a = ksvd(c).fit(A)
    b = ksvd(c).fit(as_dask(A, chunk))
    assert b.compat_.side_ == a.compat_.side_ == ("z" if shape[0] > shape[1] else "x")
    U, V = b.left_singular_vectors_, b.right_singular_vectors_
    assert is_dask_array(U) and is_dask_array(V) and is_dask_array(b.X_fit_)
    assert U.shape == (shape[0], 3) and V.shape == (shape[1], 3)
    assert rel(b.bandwidth_, a.bandwidth_) < 1e-10
    assert rel(b.singular_values_, a.singular_values_) < 1e-10
    assert rel(U.compute(), a.left_singular_vectors_) < 1e-10
    assert rel(V.compute(), a.right_singular_vectors_) < 1e-10
    if kind == "csr" and shape[0] > shape[1]:
        assert sp.issparse(b.X_fit_._meta)  # X = A keeps its CSR chunks
    if kind == "csr" and shape[0] < shape[1]:
        assert sp.issparse(b.Z_fit_._meta)  # Z = Aᵀ by a transpose + rechunk, still CSR
    # transforms of new rows x ∈ R^M and new columns z ∈ R^N (given as rows)
    rng = np.random.default_rng(3)
    Xn, Zn = rng.normal(size=(11, shape[1])), rng.normal(size=(9, shape[0]))
    t = b.transform(da.from_array(Xn, chunks=(4, -1)))
    assert is_dask_array(t)
    assert rel(t.compute(), a.transform(Xn)) < 1e-10
    assert rel(b.transform_right(da.from_array(Zn, chunks=(5, -1))).compute(),
               a.transform_right(Zn)) < 1e-10
    assert isinstance(b.transform(Xn), np.ndarray)  # numpy in after a dask fit: numpy out
    # dask in after an in-memory compat fit: mapped chunk by chunk with the in-memory C
    assert rel(a.transform_right(da.from_array(Zn, chunks=(5, -1))).compute(),
               a.transform_right(Zn)) < 1e-10
    # training points: transform(A) = U Σ
    if compat != "a2":  # (a2 with the median bandwidth: fine too, but one check suffices)
        return
    assert rel(b.transform(as_dask(A, chunk)).compute(), a.embeddings()[0]) < 1e-8


@pytest.mark.parametrize("sparse", [False, True])
def test_square_data_matrix_rows_against_columns(sparse):
    A = matrix((90, 90), sparse, seed=2)
    a = ksvd("a1").fit(A)
    b = ksvd("a1").fit(as_dask(A, 25))
    assert a.compat_ is None and b.compat_ is None
    assert rel(b.singular_values_, a.singular_values_) < 1e-10
    assert rel(b.right_singular_vectors_.compute(), a.right_singular_vectors_) < 1e-10
    Zn = np.random.default_rng(1).normal(size=(6, 90))
    assert rel(b.transform_right(Zn), a.transform_right(Zn)) < 1e-10


@pytest.mark.parametrize("compat", ["a1", "a2"])
def test_centred_row_normalised_kernel_on_csr_chunks(compat):
    A = matrix((260, 30), True, seed=12)
    kw = dict(kernel="sne", center=True)
    a = ksvd(compat, **kw).fit(A)
    b = ksvd(compat, **kw).fit(as_dask(A, 45))
    assert rel(b.singular_values_, a.singular_values_) < 1e-10
    assert rel(b.left_singular_vectors_.compute(), a.left_singular_vectors_) < 1e-10
    Zn = matrix((8, 260), True, seed=13)
    assert rel(b.transform_right(dsparse(Zn, 3)).compute(), a.transform_right(Zn)) < 1e-10
    # the public kernel_cols with numpy input after a dask fit
    assert rel(b.kernel_cols(Zn), a.kernel_cols(Zn)) < 1e-10


@pytest.mark.parametrize("compat", ["a1", "a2"])
def test_randomized_solver_close_to_exact(compat):
    A = matrix((260, 12), False, seed=4)
    kw = dict(solver="randomized", n_iter=4, kernel_params={"bandwidth": "auto"})
    b = ksvd(compat, **kw).fit(as_dask(A, 60))
    exact = ksvd(compat, **dict(kw, solver="dense")).fit(A)
    assert rel(b.singular_values_, exact.singular_values_) < 1e-8
    U = b.left_singular_vectors_.compute()
    cos = np.abs(np.sum(U * exact.left_singular_vectors_, axis=0))
    assert np.all(cos > 1 - 1e-6)
    Zn = np.random.default_rng(5).normal(size=(7, 260))
    assert rel(b.transform_right(Zn), exact.transform_right(Zn)) < 1e-5


def test_float32_kept():
    A = matrix((300, 40), False, dtype=np.float32)
    a = ksvd("a2").fit(A)
    b = ksvd("a2").fit(as_dask(A, 70))
    assert b.X_fit_.dtype == np.float32 and b.Z_fit_.dtype == np.float32
    U = b.left_singular_vectors_.compute()
    assert U.dtype == np.float32 and b.right_singular_vectors_.dtype == np.float32
    # float32 rounding (the product Aᵀ C_z summed in another order) amplified by the solver
    assert rel(U, a.left_singular_vectors_) < 1e-4
    assert rel(b.singular_values_, a.singular_values_) < 1e-5


# -------------------------------------------------------------------- a2: the generator
def test_random_rows_independent_of_the_partition():
    whole = random_rows(11, 0, 700, 6)
    for cuts in ([0, 700], [0, 1, 255, 256, 257, 700], [0, 100, 613, 700]):
        parts = [random_rows(11, s, e, 6) for s, e in zip(cuts[:-1], cuts[1:])]
        np.testing.assert_array_equal(np.vstack(parts), whole)
    assert RANDOM_BLOCK_ROWS == 256  # a documented constant: changing it changes every draw
    assert not np.array_equal(random_rows(12, 0, 700, 6), whole)
    # the in-memory CompatibilityTransform draws the same C; a RandomState gives one int seed
    ct = CompatibilityTransform("a2", random_state=11).fit(np.ones((6, 700)))
    np.testing.assert_array_equal(ct.C_, whole)
    ct2 = CompatibilityTransform("a2", random_state=np.random.RandomState(3)).fit(
        np.ones((6, 700)))
    np.testing.assert_array_equal(
        ct2.C_, random_rows(np.random.RandomState(3).randint(0, 2**31 - 1), 0, 700, 6))


@pytest.mark.parametrize("sparse", [False, True])
def test_a2_mapped_set_chunk_independent_and_equal_to_dense_reference(sparse):
    A = matrix((530, 30), sparse, seed=6)
    ref = (A.T @ random_rows(9, 0, 530, 30))  # Aᵀ C_z with the whole C formed
    ref = ref.toarray() if sp.issparse(ref) else ref
    first = None
    for chunk in (None, 37, 256, 300):
        dc = DaskCompatibility("random", random_state=9).fit(as_dask_data(
            as_dask(A, chunk), allow_sparse=True))
        mapped = dc.mapped_.compute()
        assert rel(mapped, ref) < 1e-12
        first = mapped if first is None else first
        assert rel(mapped, first) < 1e-12
    # side 'x': the same through the transpose of A
    dcx = DaskCompatibility("random", random_state=9).fit(as_dask_data(
        as_dask(sp.csr_matrix(A.T) if sparse else np.ascontiguousarray(A.T), 7),
        allow_sparse=True))
    assert dcx.side_ == "x"
    assert rel(dcx.mapped_.compute(), ref) < 1e-12


def test_a2_fit_same_whatever_the_chunking_and_bitwise_for_fixed_chunks():
    A = matrix((300, 40), True, seed=8)
    fits = [ksvd("a2", random_state=5).fit(as_dask(A, c)) for c in (None, 23, 64, 23)]
    U0, V0 = fits[0].left_singular_vectors_.compute(), fits[0].right_singular_vectors_.compute()
    for f in fits[1:]:
        assert rel(f.singular_values_, fits[0].singular_values_) < 1e-12
        assert rel(f.left_singular_vectors_.compute(), U0) < 1e-12
        assert rel(f.right_singular_vectors_.compute(), V0) < 1e-12
    with dask.config.set(scheduler="threads"):
        th = ksvd("a2", random_state=5).fit(as_dask(A, 23))
        Ut = th.left_singular_vectors_.compute()
    np.testing.assert_array_equal(fits[1].singular_values_, fits[3].singular_values_)
    np.testing.assert_array_equal(fits[1].left_singular_vectors_.compute(),
                                  fits[3].left_singular_vectors_.compute())
    np.testing.assert_array_equal(Ut, fits[1].left_singular_vectors_.compute())


# ---------------------------------------------------------------------- a1: fixed signs
@pytest.mark.parametrize("shape", [(40, 15), (15, 40)])
def test_in_memory_a1_sign_convention(shape):
    A = matrix(shape, False, seed=9)
    ct = CompatibilityTransform("a1").fit(A)
    Xc, Zc = ct.fit_transform(A)
    mapped = Xc if ct.side_ == "x" else Zc  # S C = W Σ
    # independent reference: SVD of the mapped set S (samples as rows), signs fixed
    S = A if ct.side_ == "x" else A.T
    W, s, Vt = np.linalg.svd(S, full_matrices=False)
    f = fix_signs(W)
    np.testing.assert_allclose(mapped, (W * f) * s, atol=1e-12 * s[0])
    np.testing.assert_allclose(ct.C_, Vt.T * f, atol=1e-12)
    idx = np.argmax(np.abs(mapped), axis=0)
    assert np.all(mapped[idx, np.arange(mapped.shape[1])] > 0)
    # flipping the LAPACK signs (e.g. another build) gives the same result
    np.testing.assert_array_equal(fix_signs(-W) * -W, W * f)


# -------------------------------------------------------------------------- the budget
def _poison(chunk):
    raise AssertionError("a chunk of A was computed before the budget check")


@pytest.mark.parametrize("compat,shape", [("a2", (300, 60)), ("a1", (60, 300)),
                                          ("a0", (300, 60))])
def test_refused_above_the_budget_before_computing(compat, shape):
    A = da.from_array(matrix(shape, False), chunks=(50, -1)).map_blocks(
        _poison, dtype=np.float64, meta=np.empty((0, 0)))
    with asymkern.config_context(max_dense_memory=0.01):  # 10 KiB
        with pytest.raises(MemoryBudgetError) as info:
            ksvd(compat).fit(A)
    msg = str(info.value)
    assert "60x60" in msg and "28800 bytes" in msg  # the dense mapped set, shape and bytes
    assert "max_dense_memory is 0.01 MiB" in msg
    assert "fit(X, Z=Z)" in msg and "config_context" in msg
    assert info.value.nbytes > info.value.budget


def test_literal_a2_on_a_table7_sized_matrix_is_refused_with_its_size():
    # 10⁷ × 10⁶ (sparse in reality; a lazy placeholder here: nothing is ever computed)
    A = da.zeros((10**7, 10**6), chunks=(10**5, -1))
    with pytest.raises(MemoryBudgetError, match=r"1000000x1000000 float64 mapped set Aᵀ C_z "
                                                 r"alone is 8000000000000 bytes"):
        ksvd("a2").fit(A)


# ------------------------------------------------------------------ nothing big gathered
@pytest.mark.parametrize("compat", ["a1", "a2"])
def test_nothing_n_sized_reaches_the_client(compat, monkeypatch):
    N, M = 1200, 40  # (the bandwidth heuristic gathers ≤ 500 sampled rows)
    A = matrix((N, M), True, seed=10)
    shapes = watch_client(monkeypatch, lambda o: tuple(getattr(o, "shape", ())))
    est = ksvd(compat).fit(dsparse(A, 150))
    t = est.transform_right(da.from_array(np.ones((5, N)), chunks=(5, -1)))
    monkeypatch.undo()
    assert shapes
    assert max(max(s, default=0) for s in shapes) < N // 2, sorted(shapes)[-3:]
    assert t.shape == (5, 3)


# --------------------------------------------------------------------------- bad input
def test_bad_inputs_clear_errors():
    Ad = da.from_array(matrix((60, 20), False), chunks=(20, -1))
    with pytest.raises(ValueError, match="set compat"):
        KernelSVD(2, compat=None).fit(Ad)
    with pytest.raises(ValueError, match=r"expected \(60, 20\)"):
        KernelSVD(2, compat=np.ones((20, 60))).fit(Ad)
    with pytest.raises(ValueError, match="learnable"):
        KernelSVD(2, compat="a3").fit(Ad)
    est = ksvd("a1", n_row_landmarks=15, n_col_landmarks=15).fit(Ad)
    with pytest.raises(ValueError, match="Z has 59 features"):
        est.transform_right(np.ones((3, 59)))
    with pytest.raises(ValueError, match="X has 21 features"):
        est.transform(np.ones((3, 21)))
    At = transpose_rows(as_dask_data(Ad))
    np.testing.assert_array_equal(At.compute(), Ad.compute().T)


# ---------------------------------------------------------------- LocalCluster, processes
@pytest.mark.usefixtures("one_blas_thread")
def test_local_cluster_processes_bitwise_equal():
    # bitwise: the same BLAS threading as distributed's workers (one thread)
    distributed = pytest.importorskip("distributed")
    A = matrix((50, 260), True, seed=14)  # wide: side 'x', Aᵀ shuffled between workers
    Zn = np.random.default_rng(2).normal(size=(6, 50))
    ref = ksvd("a2").fit(as_dask(A, 20))
    U_ref, T_ref = ref.left_singular_vectors_.compute(), ref.transform(A[:7].toarray())
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None,
                                  death_timeout=60) as cluster, \
            distributed.Client(cluster, timeout=60):
        with dask.config.set(scheduler="dask.distributed"):
            est = ksvd("a2").fit(as_dask(A, 20))
            U = est.left_singular_vectors_.compute()
            T = est.transform(A[:7].toarray())
            R = est.transform_right(Zn)
    np.testing.assert_array_equal(U, U_ref)
    np.testing.assert_array_equal(T, T_ref)
    np.testing.assert_array_equal(R, ref.transform_right(Zn))
