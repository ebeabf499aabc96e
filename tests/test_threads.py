"""The library's own thread pool (``asymkern.kernels.base.apply_rows``) obeys the BLAS limits.

The rule (:func:`asymkern.kernels.base.pool_threads`): ``os.cpu_count()``, capped by the
BLAS thread limit threadpoolctl reports (or, where no BLAS can be probed, by
``OMP_NUM_THREADS`` as set at import). Under
``threadpool_limits(1)`` and in joblib workers the passes run on one thread, with the same
results as an unlimited run.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from asymkern.kernels import KernelMatrix, get_kernel
from asymkern.kernels import base as kernel_base


def blas_threads_now() -> int:
    return max(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")


def threads_of_a_pass(K: np.ndarray) -> set[int]:
    """The ids of the threads that ran chunks of one :func:`apply_rows` pass over K."""
    seen: set[int] = set()
    lock = threading.Lock()

    def work(a: int, b: int) -> None:
        with lock:
            seen.add(threading.get_ident())
        np.exp(K[a:b], out=K[a:b])

    kernel_base.apply_rows(K, work)
    return seen


@pytest.fixture
def many_cpus(monkeypatch):
    """Pretend to have 4 CPUs and a BLAS that allows them (the pool's own cap), so that the
    tests see the limits act on any machine."""
    monkeypatch.setattr(kernel_base.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(kernel_base, "_blas_threads", lambda: 4)
    monkeypatch.setattr(kernel_base, "_OMP_NUM_THREADS", None)


def test_pool_follows_threadpool_limits(rng, monkeypatch):
    monkeypatch.setattr(kernel_base.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(kernel_base, "_OMP_NUM_THREADS", None)
    K = rng.standard_normal((600, 2000))
    with threadpool_limits(limits=4, user_api="blas"):
        assert kernel_base.pool_threads() == min(4, blas_threads_now())
    with threadpool_limits(limits=1):
        assert kernel_base.pool_threads() == 1
        assert threads_of_a_pass(K.copy()) == {threading.get_ident()}  # the caller only
    with threadpool_limits(limits=2, user_api="blas"):
        assert kernel_base.pool_threads() == min(2, blas_threads_now())


def test_pool_uses_its_threads_when_allowed(rng, many_cpus):
    K = rng.standard_normal((600, 2000))
    assert kernel_base.pool_threads() == 4
    seen = threads_of_a_pass(K)
    assert threading.get_ident() not in seen and 1 <= len(seen) <= 4


def test_cap_by_the_blas_limit(many_cpus, monkeypatch):
    monkeypatch.setattr(kernel_base, "_blas_threads", lambda: 2)
    assert kernel_base.pool_threads() == 2
    monkeypatch.setattr(kernel_base, "_blas_threads", lambda: 8)
    assert kernel_base.pool_threads() == 4  # never above the CPU count
    # the BLAS read OMP_NUM_THREADS itself when it loaded: its limit decides, not the variable
    monkeypatch.setattr(kernel_base, "_OMP_NUM_THREADS", 1)
    assert kernel_base.pool_threads() == 4


def test_omp_num_threads_parsing(monkeypatch):
    for value, expected in (("1", 1), ("3", 3), ("2,1", 2), (" 3 ", 3), ("16", 16),
                            ("0", None), ("-2", None), ("abc", None), ("", None)):
        monkeypatch.setenv("OMP_NUM_THREADS", value)
        assert kernel_base._env_threads() == expected, value
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert kernel_base._env_threads() is None


def test_unprobed_blas_omp_num_threads_caps(many_cpus, monkeypatch):
    """No BLAS that threadpoolctl can drive (e.g. Apple Accelerate): the CPU count and
    OMP_NUM_THREADS (as set at import) decide; a later change of os.environ (dask.distributed's
    Nanny sets OMP_NUM_THREADS=1 in the client before spawning workers) does not."""
    def broken():
        raise RuntimeError("no BLAS controller")

    monkeypatch.setattr(kernel_base, "_blas_controller", broken)
    assert kernel_base.pool_threads() == 4
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert kernel_base.pool_threads() == 4
    monkeypatch.setattr(kernel_base, "_OMP_NUM_THREADS", 2)
    assert kernel_base.pool_threads() == 2


def test_own_fused_limit_is_not_mistaken_for_the_users(many_cpus, monkeypatch):
    """The fused passes hold the BLAS at one thread themselves; the pool keeps the limit
    that was in force before (and a user's limit of 1 stays 1)."""
    with kernel_base._blas_one_thread():
        assert kernel_base.pool_threads() == 4
    monkeypatch.setattr(kernel_base, "_blas_threads", blas_threads_now)  # the real BLAS
    with threadpool_limits(limits=1), kernel_base._blas_one_thread():
        assert kernel_base.pool_threads() == 1
    assert kernel_base._BLAS_DEPTH == 0 and kernel_base._BLAS_OUTER is None


def test_nested_pass_inside_the_pool_runs_inline(rng, many_cpus):
    K = rng.standard_normal((600, 2000))
    inner: list[set[int]] = []

    def work(a: int, b: int) -> None:
        inner.append(threads_of_a_pass(K[a:b].copy()))

    kernel_base.apply_rows(K, work)
    assert inner and all(len(s) == 1 for s in inner)


@pytest.mark.parametrize("name", ["sne", "rbf"])
def test_results_identical_with_one_thread(rng, name):
    """The same kernel matrix and products with the pool and the BLAS on one thread as
    without a limit (fused and unfused passes), and a bitwise-equal elementwise pass."""
    X = rng.standard_normal((1200, 4))
    Z = rng.standard_normal((1000, 4))
    V = rng.standard_normal((1000, 3))
    k = get_kernel(name, gamma=0.4)
    free = KernelMatrix(k, X, Z, working_memory=64)
    A, AV = free.to_array(), free.matmat(V)
    E = rng.standard_normal((1100, 1000))
    E1 = E.copy()
    kernel_base.inplace_ufunc(np.exp, E)
    with threadpool_limits(limits=1):
        assert kernel_base.pool_threads() == 1
        one = KernelMatrix(k, X, Z, working_memory=64)
        A1, AV1 = one.to_array(), one.matmat(V)
        kernel_base.inplace_ufunc(np.exp, E1)
    np.testing.assert_array_equal(E1, E)  # elementwise: no rounding depends on the chunks
    # the GEMM may sum in another order with another thread count: far above rounding
    np.testing.assert_allclose(A1, A, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(AV1, AV, rtol=1e-12, atol=1e-12 * np.abs(AV).max())


def _worker_threads(_):
    import os

    return kernel_base.pool_threads(), blas_threads_now(), os.cpu_count() or 1


def test_joblib_workers_follow_their_blas_cap():
    """joblib's process workers cap their BLAS (n_jobs=2 on c CPUs: c // 2 threads each, 1 on
    two cores); the pool follows. The settings are those of test_config's process-worker
    test, so a full run reuses its workers."""
    joblib = pytest.importorskip("joblib")
    out = joblib.Parallel(n_jobs=2, backend="loky")(
        joblib.delayed(_worker_threads)(i) for i in range(2))
    for pool, blas, cpus in out:
        assert pool == min(cpus, blas)
        assert pool <= max(1, cpus // 2)


# ------------------------------------------------------- LS-SVM's cache-tiled symmetry check
# (a single-threaded fast path, kept here with the other CPU-side changes of the same round)
def _dense_nearly_symmetric(K, rtol=16.0):
    """The definition, on the whole matrix at once in float64."""
    K = np.asarray(K, dtype=np.float64)
    if K.size == 0:
        return True
    if not np.all(np.isfinite(K)):
        return False
    with np.errstate(over="ignore"):
        return bool(np.abs(K - K.T).max() <= rtol * np.finfo(np.float64).eps * np.abs(K).max())


@pytest.mark.parametrize("n", [1, 5, 127, 128, 129, 300])
def test_tiled_symmetry_check_equals_the_definition(rng, n):
    from asymkern.lssvm._solvers import _nearly_symmetric

    A = rng.standard_normal((n, n))
    S = A + A.T
    S[0, 0] = 1.0 + np.abs(S).max()  # max|K| known: the tolerance is 16·eps·S[0, 0]
    tol = 16 * np.finfo(np.float64).eps * S[0, 0]
    cases = [S, A, np.asfortranarray(S), S.astype(np.float32), -S]
    for i, j in ((n - 1, 0), (0, n - 1), (n // 2, n // 3), (n - 1, n - 1)):
        for delta in (0.4 * tol, 3 * tol):
            P = S.copy()
            P[i, j] += delta
            cases.append(P)
    big = np.full((n, n), 1.5e308)
    big[n - 1, 0] = -1.5e308  # finite entries whose difference overflows
    cases.append(big)
    for bad in (np.nan, np.inf, -np.inf):
        P = S.copy()
        P[n // 2, n - 1] = bad
        cases.append(P)
    for K in cases:
        keep = K.copy()
        assert _nearly_symmetric(K) == _dense_nearly_symmetric(K)
        np.testing.assert_array_equal(K, keep)  # never modified
    assert _nearly_symmetric(np.zeros((0, 0)))


def test_tiled_symmetry_check_at_the_threshold():
    """Exactly at the tolerance accepted, one rounding unit beyond refused, as defined."""
    from asymkern.lssvm._solvers import _nearly_symmetric

    eps = np.finfo(np.float64).eps
    K = np.full((260, 260), 0.5)
    K[0, 0] = 1.0                           # max|K| = 1: tolerance 16·eps = 2^-48
    K[200, 3] = 0.5 + 16 * eps              # difference exactly 2^-48
    assert _nearly_symmetric(K) and _dense_nearly_symmetric(K)
    K[200, 3] = 0.5 + 16 * eps + 2.0 ** -53  # one ulp more
    assert not _nearly_symmetric(K) and not _dense_nearly_symmetric(K)


# ------------------------------------------- one-thread fused route for small inner dimensions
def _direct_log_k(name, X, Z, gamma):
    D = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return -gamma * D if name in ("rbf", "sne") else -np.log1p(gamma * D)


@pytest.mark.parametrize("name", ["rbf", "sne", "cauchy", "t"])
def test_one_thread_small_d_fused_route_equals_reference(rng, monkeypatch, name):
    """With the BLAS on one thread and few features, blocks are formed in small GEMM panels,
    each finished in cache: same values as the dense reference and as one GEMM over the
    block (near duplicates included), inputs unchanged."""
    monkeypatch.setattr(kernel_base, "_FUSE_MIN_ENTRIES", 0)
    monkeypatch.setattr(kernel_base, "_SMALL_PANEL_BYTES", 40_000)  # several panels
    monkeypatch.setattr(kernel_base, "_FINISH_CHUNK_BYTES", 8_000)
    calls = []
    real = kernel_base._finish

    def spy(*args, **kwargs):
        calls.append(kwargs.get("gemm", args[10] if len(args) > 10 else None) is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(kernel_base, "_finish", spy)
    X = rng.standard_normal((230, 3)) + 100.0  # offset data: the centring matters
    Z = rng.standard_normal((190, 3)) + 100.0
    Z[:5] = X[:5]  # exact duplicates: recomputed, exactly 0 distance
    keep = (X.copy(), Z.copy())
    k = get_kernel(name, gamma=0.7)
    L = _direct_log_k(name, X, Z, 0.7)
    if k.row_normalized:
        ref = np.exp(L - L.max(1, keepdims=True))
        ref /= ref.sum(1, keepdims=True)
    else:
        ref = np.exp(L) if name == "rbf" else 1.0 / (1.0 + 0.7 * ((X[:, None] - Z[None]) ** 2)
                                                       .sum(-1))
    with threadpool_limits(limits=1):
        got = KernelMatrix(k, X, Z).to_array()
        assert calls and all(calls), "the fused route did not run"
        calls.clear()
        monkeypatch.setattr(kernel_base, "_SMALL_INNER", 0)  # the previous route
        one_gemm = KernelMatrix(k, X, Z).to_array()
        assert calls and not any(calls)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(got, one_gemm, rtol=1e-12, atol=1e-300)
    if name == "rbf":
        np.testing.assert_array_equal(np.diag(got[:5, :5]), 1.0)
    for A, B in zip((X, Z), keep):
        np.testing.assert_array_equal(A, B)


def test_when_the_one_thread_fused_route_runs(monkeypatch):
    monkeypatch.setattr(kernel_base.os, "cpu_count", lambda: 1)
    monkeypatch.setattr(kernel_base, "_blas_threads", lambda: 1)
    big = 1 << 23
    small = kernel_base._SMALL_PANEL_BYTES
    assert kernel_base._fused_panel_bytes(big, 10) == small
    assert kernel_base._fused_panel_bytes(big, 30) == small
    assert kernel_base._fused_panel_bytes(big, 31) is None  # d + 2 > 32: one GEMM
    assert kernel_base._fused_panel_bytes(kernel_base._FUSE_MIN_ENTRIES - 1, 10) is None
    monkeypatch.setattr(kernel_base, "_GEMM_PANEL_BYTES", 1000)
    assert kernel_base._fused_panel_bytes(big, 10) == 1000  # never above the general size
    monkeypatch.setattr(kernel_base, "_blas_threads", lambda: 4)
    assert kernel_base._fused_panel_bytes(big, 10) is None  # a multi-threaded BLAS, one worker
    monkeypatch.setattr(kernel_base, "_blas_threads", lambda: 1)

    def broken():
        raise RuntimeError("no BLAS controller")

    with monkeypatch.context() as m:  # a BLAS threadpoolctl cannot probe is never held
        m.setattr(kernel_base, "_blas_controller", broken)
        assert kernel_base._fused_panel_bytes(big, 10) is None
    # several workers: small panels for small d too, the general size otherwise
    monkeypatch.setattr(kernel_base.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(kernel_base, "_blas_threads", lambda: 4)
    monkeypatch.setattr(kernel_base, "_GEMM_PANEL_BYTES", 1 << 28)
    assert kernel_base._fused_panel_bytes(big, 10) == small
    assert kernel_base._fused_panel_bytes(big, 100) == 1 << 28
