"""Issue 16 gap 1: the fused row normalisation of the SNE and T kernels.

Every path of :class:`~asymkern.kernels.matrix.KernelMatrix` that produces row-normalised
values (``to_array``, ``block`` on full rows and on sub-blocks, ``rows``, ``cols``, the row
block iterator, the products, the normalisers, ``_block_lse`` as the Dask tasks call it) is
compared with a dense numpy reference built here from scratch: squared distances from
coordinate differences, the log-kernel, a max-shifted log-sum-exp in float64, exp(log k − lse).
Tolerances: 1e-12 relative in float64, 1e-5 in float32 (plus an absolute floor below the
normal range, where no float carries relative precision). No test depends on timing.
"""

import numpy as np
import pytest

from asymkern.kernels import KernelMatrix, get_kernel

RTOL = {np.float64: 1e-12, np.float32: 1e-5}
# below the normal range the values carry no relative precision (both routes round to a few
# subnormal bits); compare those absolutely
ATOL = {np.float64: 1e-300, np.float32: 1e-36}


def direct_sq(X, Z):
    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    out = np.empty((X.shape[0], Z.shape[0]))
    for i in range(0, X.shape[0], 64):  # small temporaries for the larger cases
        D = X[i:i + 64, None, :] - Z[None, :, :]
        out[i:i + 64] = np.einsum("ijk,ijk->ij", D, D)
    return out


def log_k(name, params, X, Z):
    D2 = direct_sq(X, Z)
    if name == "sne":
        return -params["gamma"] * D2
    return -np.log1p(D2 * params.get("gamma", 1.0))


def ref_lse(name, params, X, R):
    L = log_k(name, params, X, R)
    mx = L.max(axis=1)
    return mx + np.log(np.exp(L - mx[:, None]).sum(axis=1))


def reference(name, params, X, Z, R=None):
    """Dense float64 reference κ(x, z) = k(x, z) / Σ_{r∈R} k(x, r), via a log-sum-exp."""
    R = Z if R is None else R
    return np.exp(log_k(name, params, X, Z) - ref_lse(name, params, X, R)[:, None])


def assert_close(got, ref, dtype):
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=RTOL[dtype], atol=ATOL[dtype])


KERNELS = [("sne", {"gamma": 0.5}), ("t", {"gamma": 1.0})]


def make(rng, dtype, n=47, m=39, d=4, offset=0.0):
    X = (0.6 * rng.standard_normal((n, d)) + offset).astype(dtype)
    Z = (0.6 * rng.standard_normal((m, d)) + offset).astype(dtype)
    R = (0.6 * rng.standard_normal((m + 5, d)) + offset).astype(dtype)
    return X, Z, R


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,params", KERNELS)
@pytest.mark.parametrize("case", ["same", "different", "reference"])
def test_every_path_matches_dense_reference(rng, dtype, name, params, case):
    X, Z, R = make(rng, dtype)
    Zarg = None if case == "same" else Z
    Rarg = R if case == "reference" else None
    Zref = X if case == "same" else Z
    ref = reference(name, params, X, Zref, Rarg)
    keep = [A.copy() for A in (X, Z, R)]
    k = get_kernel(name, **params)

    def fresh(**kw):  # a new matrix per path: no normaliser cached by an earlier call
        return KernelMatrix(k, X, Zarg, reference=Rarg, **kw)

    assert_close(fresh().to_array(), ref, dtype)
    assert_close(fresh(working_memory=0.002).to_array(), ref, dtype)  # many row blocks
    rows = np.array([5, 0, 17, 5, 30])
    cols = np.array([3, 1, 20, 9])
    assert_close(fresh().block(rows), ref[rows], dtype)
    assert_close(fresh().block(slice(4, 19)), ref[4:19], dtype)
    assert_close(fresh().block(rows, cols), ref[np.ix_(rows, cols)], dtype)
    assert_close(fresh().block(slice(2, 9), slice(3, 11)), ref[2:9, 3:11], dtype)
    assert_close(fresh().rows(rows), ref[rows], dtype)
    assert_close(fresh().cols(cols), ref[:, cols], dtype)
    G = fresh(working_memory=0.002)
    parts = list(G.iter_row_blocks())
    assert len(parts) > 1
    for sl, B in parts:
        assert_close(B, ref[sl], dtype)
    # normalisers cached first, then every block from them (the Dask task path)
    G = fresh()
    lse = ref_lse(name, params, X, Zref if Rarg is None else R)
    np.testing.assert_allclose(np.log(G.row_normalizers().astype(np.float64)), lse,
                               rtol=RTOL[dtype], atol=RTOL[dtype])
    assert_close(G.block(rows, cols), ref[np.ix_(rows, cols)], dtype)
    assert_close(G.block(rows), ref[rows], dtype)
    assert_close(G.to_array(), ref, dtype)
    # products through the normalised blocks (float64 accumulation in the reference)
    V = rng.standard_normal((ref.shape[1], 3)).astype(dtype)
    U = rng.standard_normal((ref.shape[0], 2)).astype(dtype)
    tol = {np.float64: 1e-12, np.float32: 2e-5}[dtype]
    np.testing.assert_allclose(fresh().matmat(V), ref @ V.astype(np.float64), rtol=tol,
                               atol=tol * np.abs(ref).sum(1).max() * np.abs(V).max())
    np.testing.assert_allclose(fresh().rmatmat(U), ref.T @ U.astype(np.float64), rtol=tol,
                               atol=tol * np.abs(ref).sum(0).max() * np.abs(U).max())
    for A, B in zip((X, Z, R), keep):
        np.testing.assert_array_equal(A, B)  # inputs never modified


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,params", KERNELS)
def test_large_blocks_threaded_and_chunked(rng, dtype, name, params):
    """Blocks above 2^20 entries are split over the threads and over cache-sized chunks."""
    X, Z, _ = make(rng, dtype, n=1100, m=1000, d=3)
    ref = reference(name, params, X, Z)
    k = get_kernel(name, **params)
    assert_close(KernelMatrix(k, X, Z).to_array(), ref, dtype)
    assert_close(KernelMatrix(k, X, Z, working_memory=64).block(slice(None)), ref, dtype)
    lse = KernelMatrix._block_lse(KernelMatrix(k, X, Z)._raw(X, Z))
    np.testing.assert_allclose(lse, ref_lse(name, params, X, Z), rtol=RTOL[dtype],
                               atol=RTOL[dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("bandwidth", [1e-3, 1e-6, 1e3, 1e150])
@pytest.mark.parametrize("case", ["same", "different", "reference"])
def test_sne_overflow_prone_bandwidths(rng, dtype, bandwidth, case):
    """Tiny bandwidths: every unnormalised value of a row may underflow to 0 (the row is still
    normalised correctly, the nearest point taking the mass); huge ones: every value ≈ 1."""
    X, Z, R = make(rng, dtype)
    gamma = 1.0 / bandwidth / bandwidth
    Zarg = None if case == "same" else Z
    Rarg = R if case == "reference" else None
    Zref = X if case == "same" else Z
    with np.errstate(over="ignore"):
        ref = reference("sne", {"gamma": gamma}, X, Zref, Rarg)
    if bandwidth < 1:
        assert np.all(np.exp(log_k("sne", {"gamma": gamma}, X, Zref)).max(1) == 0) or \
            case == "same"
    k = get_kernel("sne", bandwidth=bandwidth)
    G = KernelMatrix(k, X, Zarg, reference=Rarg)
    if not np.all(np.isfinite(ref)):  # k(x, z)/Σ_R k(x, r) truly exceeds the float range
        assert case == "reference"
        with pytest.raises(OverflowError, match="sne"):
            G.to_array()
        return
    full = G.to_array()
    assert_close(full, ref, dtype)
    assert np.all(np.isfinite(full))
    rows = np.array([1, 8, 3])
    assert_close(KernelMatrix(k, X, Zarg, reference=Rarg).block(rows), ref[rows], dtype)
    assert_close(KernelMatrix(k, X, Zarg, reference=Rarg).block(rows, np.array([2, 0])),
                 ref[np.ix_(rows, [2, 0])], dtype)
    if case != "reference":
        np.testing.assert_allclose(full.sum(1, dtype=np.float64), 1.0, rtol=RTOL[dtype] * 40)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sne_far_from_origin(rng, dtype):
    """The centred expansion is kept: data at 1e6 give the same normalised values."""
    X, Z, _ = make(rng, dtype, offset=1e3 if dtype == np.float32 else 1e6)
    ref = reference("sne", {"gamma": 0.5}, X, Z)
    G = KernelMatrix(get_kernel("sne", gamma=0.5), X, Z)
    tol = {np.float64: 1e-12, np.float32: 1e-5}[dtype]
    np.testing.assert_allclose(G.to_array(), ref, rtol=tol, atol=ATOL[dtype])


def test_overflowing_exponent_still_refused(rng):
    """gamma·‖x − z‖² beyond float64 on every entry of a row: refused (no silent NaN), while
    X = Z keeps its exact zeros on the diagonal (the identity)."""
    X, Z, _ = make(rng, np.float64)
    X, Z = 100 * X, 100 * Z
    assert direct_sq(X, Z).min() > np.finfo(np.float64).max / 1e307
    k = get_kernel("sne", gamma=1e307)
    np.testing.assert_array_equal(KernelMatrix(k, X).to_array(), np.eye(X.shape[0]))
    with pytest.raises(OverflowError, match="normaliser"):
        KernelMatrix(k, X, Z).to_array()
    with pytest.raises(OverflowError, match="normaliser"):
        KernelMatrix(k, X, Z).block(np.array([0, 1]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_block_lse_matches_plain_formula_and_keeps_input(rng, dtype):
    """``_block_lse`` (called by the Dask tasks) equals the plain max/shift/exp/sum formula,
    for C-ordered and strided inputs, without modifying them."""
    L = (-30 * rng.random((1200, 900))).astype(dtype)
    L[3] = -1e4  # a row whose plain exponentials all underflow
    keep = L.copy()
    L64 = L.astype(np.float64)
    mx = L64.max(1)
    want = mx + np.log(np.exp(L64 - mx[:, None]).sum(1))
    tol = RTOL[dtype] if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(KernelMatrix._block_lse(L), want, rtol=tol)
    np.testing.assert_allclose(KernelMatrix._block_lse(L[:, ::2]),
                               KernelMatrix._block_lse(np.ascontiguousarray(L[:, ::2])),
                               rtol=0)
    np.testing.assert_array_equal(L, keep)


# --- fused GEMM and finishing pass (each worker forms its own row panels) -------------------

from asymkern.kernels import base as kernel_base  # noqa: E402


@pytest.fixture
def fused(monkeypatch):
    """Force the fused route on small blocks: three workers (uneven splits), panels of a few
    rows, finishing chunks of a few rows, and a BLAS that would allow the workers."""
    monkeypatch.setattr(kernel_base.os, "cpu_count", lambda: 3)
    monkeypatch.setattr(kernel_base, "_FUSE_MIN_ENTRIES", 0)
    monkeypatch.setattr(kernel_base, "_GEMM_PANEL_BYTES", 40_000)
    monkeypatch.setattr(kernel_base, "_FINISH_CHUNK_BYTES", 24_000)
    monkeypatch.setattr(kernel_base, "_blas_threads", lambda: 64)
    calls = []
    real = kernel_base._finish

    def spy(*args, **kwargs):
        gemm = args[10] if len(args) > 10 else kwargs.get("gemm")
        calls.append(gemm is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(kernel_base, "_finish", spy)
    return calls


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,params", KERNELS + [("rbf", {"gamma": 0.5})])
def test_fused_gemm_matches_reference_and_unfused(rng, fused, dtype, name, params):
    """Per-worker GEMM panels finished in cache give the dense reference (SNE, T: normalised;
    RBF: plain values) and the values of the one-GEMM route."""
    X, Z, _ = make(rng, dtype, n=1100, m=1000, d=3)
    keep = (X.copy(), Z.copy())
    k = get_kernel(name, **params)
    got = KernelMatrix(k, X, Z, working_memory=64).block(slice(None))  # one 1.1e6-entry block
    assert any(fused), "the fused route did not run"
    if name == "rbf":
        ref = np.exp(-params["gamma"] * direct_sq(X, Z))
    else:
        ref = reference(name, params, X, Z)
    assert_close(got, ref, dtype)
    fused.clear()
    kernel_base._FUSE_MIN_ENTRIES = 1 << 62  # undone by monkeypatch
    one_gemm = KernelMatrix(k, X, Z, working_memory=64).block(slice(None))
    assert not any(fused)
    np.testing.assert_allclose(got, one_gemm, rtol=RTOL[dtype], atol=ATOL[dtype])
    np.testing.assert_array_equal(X, keep[0])
    np.testing.assert_array_equal(Z, keep[1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("bandwidth", [1e-3, 1e3, 1e150])
def test_fused_gemm_overflow_prone_bandwidths(rng, fused, dtype, bandwidth):
    """Tiny and huge bandwidths through the fused route: still the reference, rows sum to 1."""
    X, Z, _ = make(rng, dtype, n=1100, m=1000, d=3)
    gamma = 1.0 / bandwidth / bandwidth
    with np.errstate(over="ignore"):
        ref = reference("sne", {"gamma": gamma}, X, Z)
    k = get_kernel("sne", bandwidth=bandwidth)
    full = KernelMatrix(k, X, Z, working_memory=64).block(slice(None))
    assert any(fused)
    assert np.all(np.isfinite(full))
    # relative to each row's largest value, and looser than RTOL in float64: at gamma = 1e6
    # with 1000 points the exponents gamma·‖x − z‖² reach 1e2–1e3 and carry the expansion's
    # rounding of ‖x − z‖² (2e-12 on the largest entries, 1e-9 relative on entries of
    # exp(−130), on the one-GEMM route as well); the routes' equality is checked below
    tol = {np.float64: 1e-10, np.float32: RTOL[np.float32]}[dtype]
    np.testing.assert_allclose(full, ref, rtol=0, atol=tol * float(ref.max(axis=1).min()))
    np.testing.assert_allclose(full.sum(1, dtype=np.float64), 1.0, rtol=RTOL[dtype] * 40)
    kernel_base._FUSE_MIN_ENTRIES = 1 << 62  # undone by monkeypatch: the one-GEMM route
    one_gemm = KernelMatrix(k, X, Z, working_memory=64).block(slice(None))
    # panel GEMMs may round ‖x − z‖² differently from one GEMM (BLAS-dependent); at
    # gamma = 1e6 that moves the tiny entries by ~1e-10 relative, so relative to the rows
    np.testing.assert_allclose(full, one_gemm, rtol=RTOL[dtype],
                               atol=RTOL[dtype] * float(ref.max(axis=1).min()))


def test_fused_gemm_near_duplicates_refined(rng, fused):
    """Rows of Z that (nearly) repeat rows of X are recomputed directly in the fused pass, and
    the row maxima handed on are those of the refined chunk: X = Z gives exact zeros on the
    diagonal of the log-kernel, and near copies the direct distances."""
    X = rng.standard_normal((1100, 3)) * 1e3
    Z = X[:1000] + 1e-9 * rng.standard_normal((1000, 3))
    ref = reference("sne", {"gamma": 1e-7}, X, Z)
    k = get_kernel("sne", gamma=1e-7)
    assert_close(KernelMatrix(k, X, Z, working_memory=64).block(slice(None)), ref, np.float64)
    assert any(fused)
    same = KernelMatrix(k, X, working_memory=64).block(slice(None))
    assert_close(same, reference("sne", {"gamma": 1e-7}, X, X), np.float64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("scale", [0.5, 1e305])
def test_rows_func_gets_row_maxima_of_the_finished_chunk(rng, dtype, scale):
    """``rows_func`` receives the maxima of the chunk it is handed (after the near-duplicate
    refinement and, when the scale is not folded into the GEMM, after the scaling)."""
    X = rng.standard_normal((300, 4)).astype(dtype)
    Z = np.vstack([X[:50], rng.standard_normal((250, 4))]).astype(dtype)
    seen = []

    def check(Kc, a, b, mx=None):
        assert mx is not None
        np.testing.assert_array_equal(mx, Kc.max(axis=1))
        seen.append(b - a)

    with np.errstate(over="ignore"):
        kernel_base.neg_scaled_sq_dists(X, Z, scale, rows_func=check)
    assert sum(seen) == X.shape[0]


def test_fused_gemm_respects_a_blas_thread_limit(monkeypatch):
    """A BLAS limited to fewer threads than the pass would use keeps one GEMM (the workers
    never run more GEMMs at once than the user allowed), and the limit is restored after a
    fused pass."""
    monkeypatch.setattr(kernel_base.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(kernel_base, "_blas_threads", lambda: 1)
    assert kernel_base._fused_workers(1 << 30) == 1
    monkeypatch.setattr(kernel_base, "_blas_threads", lambda: 2)
    assert kernel_base._fused_workers(1 << 30) == 2
    assert kernel_base._fused_workers(10) == 1  # small blocks: one GEMM


def test_blas_probe_failure_keeps_one_gemm(monkeypatch):
    """A BLAS that threadpoolctl cannot drive is never limited: the one-GEMM route runs."""
    def broken():
        raise RuntimeError("no BLAS controller")

    monkeypatch.setattr(kernel_base, "_blas_controller", broken)
    monkeypatch.setattr(kernel_base.os, "cpu_count", lambda: 2)
    assert kernel_base._blas_threads() == 1
    assert kernel_base._fused_workers(1 << 30) == 1


def test_blas_threads_restored_after_fused_pass(rng, monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(kernel_base, "_FUSE_MIN_ENTRIES", 0)
    before = [lib["num_threads"] for lib in threadpoolctl.threadpool_info()
              if lib["user_api"] == "blas"]
    X = rng.standard_normal((1100, 3))
    KernelMatrix(get_kernel("sne", gamma=0.5), X, X[:1000]).to_array()
    after = [lib["num_threads"] for lib in threadpoolctl.threadpool_info()
             if lib["user_api"] == "blas"]
    assert before == after


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_to_array_into_out(rng, dtype):
    """``to_array(out=)`` writes the matrix into the given array and returns it; a wrong dtype,
    shape or layout is refused naming ``out``; the memory limit does not apply (nothing n×m
    is allocated)."""
    X, Z, _ = make(rng, dtype)
    k = get_kernel("sne", gamma=0.5)
    G = KernelMatrix(k, X, Z, max_dense_memory=1e-6)
    buf = np.full(G.shape, np.nan, dtype=dtype)
    got = G.to_array(out=buf)
    assert got is buf
    assert_close(buf, reference("sne", {"gamma": 0.5}, X, Z), dtype)
    other = np.float32 if dtype == np.float64 else np.float64
    with pytest.raises(TypeError, match="out must be a numpy array of dtype"):
        G.to_array(out=np.empty(G.shape, dtype=other))
    with pytest.raises(ValueError, match="out must have shape"):
        G.to_array(out=np.empty((G.shape[0], G.shape[1] + 1), dtype=dtype))
    with pytest.raises(ValueError, match="out must be a writeable C-contiguous"):
        G.to_array(out=np.empty(G.shape[::-1], dtype=dtype).T)
    with pytest.raises(TypeError, match="out must be a numpy array"):
        G.to_array(out=[[0.0]])


def test_concurrent_fused_passes_restore_blas_threads(rng, monkeypatch):
    """Fused passes from several threads at once (as Dask runs them) share the one-thread BLAS
    limit and leave the original thread counts behind, with correct values in every thread."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(kernel_base, "_FUSE_MIN_ENTRIES", 0)
    monkeypatch.setattr(kernel_base, "_blas_threads", lambda: 64)
    monkeypatch.setattr(kernel_base.os, "cpu_count", lambda: 2)
    before = [lib["num_threads"] for lib in threadpoolctl.threadpool_info()
              if lib["user_api"] == "blas"]
    X, Z, _ = make(rng, np.float64, n=1100, m=1000, d=3)
    k = get_kernel("sne", gamma=0.5)
    ref = reference("sne", {"gamma": 0.5}, X, Z)
    with ThreadPoolExecutor(4) as ex:
        outs = list(ex.map(lambda _: KernelMatrix(k, X, Z, working_memory=64)
                           .block(slice(None)), range(6)))
    for out in outs:
        assert_close(out, ref, np.float64)
    after = [lib["num_threads"] for lib in threadpoolctl.threadpool_info()
             if lib["user_api"] == "blas"]
    assert before == after
    assert kernel_base._BLAS_DEPTH == 0
