"""Concurrency and process-global state (round 14 audit).

- The fused passes' process-wide BLAS limit (``kernels.base._blas_one_thread``) interleaved
  with other threads: the library's passes and a user's ``threadpool_limits`` entering and
  leaving in every order (forced with events), on a fake BLAS controller (the order decides,
  not the machine) and on the real one through threadpoolctl.
- Warnings filters: the library's own LU factorisations change no process-wide filter (which
  a concurrent thread could leave behind).
- Concurrent fits with one ``random_state`` equal a sequential fit bitwise, and a fitted
  estimator predicts the same from several threads at once.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
import threadpoolctl
from threadpoolctl import threadpool_info, threadpool_limits

from asymkern.kernels import base as kernel_base

TIMEOUT = 10


# ------------------------------------------------------------------ a fake process-wide BLAS
class _FakeLib:
    """One BLAS library whose limit is a process-wide integer (what OpenBLAS's pthreads pool
    has); no per-thread rule, so every thread's change takes effect."""

    def __init__(self, n: int):
        self.value = n

    @property
    def num_threads(self) -> int:
        return self.value

    def get_num_threads(self) -> int:
        return self.value

    def set_num_threads(self, n: int) -> None:
        self.value = n


class _FakeLimiter:
    """What threadpoolctl's limiter does: capture the limits, set them, restore the capture."""

    def __init__(self, libs, limits: int):
        self.libs = libs
        self.original = [lib.value for lib in libs]
        for lib in libs:
            lib.value = limits

    def restore_original_limits(self):
        for lib, n in zip(self.libs, self.original):
            lib.value = n

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.restore_original_limits()


class _FakeController:
    def __init__(self, libs):
        self.lib_controllers = libs

    def limit(self, *, limits, user_api=None):
        return _FakeLimiter(self.lib_controllers, limits)


@pytest.fixture
def fake_blas(monkeypatch):
    """A BLAS at 4 threads on a 4-CPU machine, driven through the fake controller."""
    libs = [_FakeLib(4), _FakeLib(4)]
    monkeypatch.setattr(kernel_base, "_BLAS", _FakeController(libs))
    monkeypatch.setattr(kernel_base.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(kernel_base, "_OMP_NUM_THREADS", None)
    return libs


def _values(libs):
    return {lib.value for lib in libs}


def _run_in_order(order, actors):
    """Run the actors (name → (enter, exit) callables), each in its own thread, with their
    enters and exits in ``order`` (a list of (name, '+' or '-')); return what ``probe`` saw
    after each step."""
    go = {step: threading.Event() for step in order}
    done = {step: threading.Event() for step in order}
    errors: list[BaseException] = []

    def run(name, enter, leave):
        try:
            go[(name, "+")].wait(TIMEOUT)
            with enter():
                done[(name, "+")].set()
                go[(name, "-")].wait(TIMEOUT)
                leave()
            done[(name, "-")].set()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            for ev in done.values():
                ev.set()

    threads = [threading.Thread(target=run, args=(name, *actors[name])) for name in actors]
    for t in threads:
        t.start()
    try:
        for step in order:
            go[step].set()
            assert done[step].wait(TIMEOUT), f"step {step} did not finish"
            yield step
    finally:
        for ev in go.values():
            ev.set()
        for t in threads:
            t.join(TIMEOUT)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)


def _actors(libs, user_limit: int, seen: dict):
    def user_enter():
        return _FakeLimiter(libs, user_limit)

    def user_leave():
        seen["user, just before its end"] = _values(libs)

    return {"lib": (kernel_base._blas_one_thread, lambda: None),
            "user": (user_enter, user_leave)}


def test_user_limit_entered_before_and_left_inside_a_pass_leaves_nothing_behind(fake_blas):
    """user enters (4 → 2), the pass enters (2 → 1), the user leaves (restores 4), the pass
    leaves: the original 4, not the user's stale 2 (which the old code restored)."""
    seen: dict = {}
    order = [("user", "+"), ("lib", "+"), ("user", "-"), ("lib", "-")]
    for _ in _run_in_order(order, _actors(fake_blas, 2, seen)):
        pass
    assert _values(fake_blas) == {4}
    assert kernel_base._BLAS_DEPTH == 0 and kernel_base._BLAS_LIMITER is None


def test_pass_leaving_inside_a_user_limit_does_not_undo_it(fake_blas):
    """The pass enters (4 → 1), the user enters (1 → 2), the pass leaves: the user's 2 stays
    in force until the user's block ends (the old code put back 4 under the user's feet)."""
    seen: dict = {}
    order = [("lib", "+"), ("user", "+"), ("lib", "-"), ("user", "-")]
    for _ in _run_in_order(order, _actors(fake_blas, 2, seen)):
        pass
    assert seen["user, just before its end"] == {2}
    # (the user's limiter then restores the 1 it captured: threadpoolctl's own capture, which
    # no change in the library can reach)


@pytest.mark.parametrize("order", [
    [("lib", "+"), ("lib", "-"), ("user", "+"), ("user", "-")],
    [("user", "+"), ("user", "-"), ("lib", "+"), ("lib", "-")],
    [("user", "+"), ("lib", "+"), ("lib", "-"), ("user", "-")],
    [("lib", "+"), ("user", "+"), ("user", "-"), ("lib", "-")],
])
def test_nested_orders_restore_the_original(fake_blas, order):
    seen: dict = {}
    for _ in _run_in_order(order, _actors(fake_blas, 2, seen)):
        pass
    assert seen["user, just before its end"] == {2}
    assert _values(fake_blas) == {4}


def test_an_already_one_thread_blas_is_not_touched(fake_blas):
    """A user's limit of 1 entered before a pass and left inside it: the pass held nothing,
    so it restores nothing (the old code put the user's 1 back for good)."""
    seen: dict = {}
    order = [("user", "+"), ("lib", "+"), ("user", "-"), ("lib", "-")]
    for _ in _run_in_order(order, _actors(fake_blas, 1, seen)):
        pass
    assert _values(fake_blas) == {4}


def test_two_passes_in_two_threads_restore_the_original(fake_blas):
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    inside = []

    def a():
        with kernel_base._blas_one_thread():
            a_in.set()
            b_in.wait(TIMEOUT)
            inside.append(_values(fake_blas))
        a_out.set()

    def b():
        a_in.wait(TIMEOUT)
        with kernel_base._blas_one_thread():
            b_in.set()
            a_out.wait(TIMEOUT)
            inside.append(_values(fake_blas))

    threads = [threading.Thread(target=f) for f in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads)
    assert inside == [{1}, {1}]
    assert _values(fake_blas) == {4}


def test_pool_obeys_a_limit_set_by_another_thread_during_a_pass(fake_blas):
    """While a pass holds the BLAS at one thread, the pool reads the limit in force before
    it; a limit that a user's thread sets meanwhile (here 2) is the BLAS's limit now, and
    the pool obeys it (the old code kept reading the 4 from before)."""
    with kernel_base._blas_one_thread():
        assert kernel_base.pool_threads() == 4  # the passes' own one thread is not a limit
        with _FakeLimiter(fake_blas, 2):  # (as if from another thread)
            assert kernel_base.pool_threads() == 2
    assert kernel_base.pool_threads() == 4


# ----------------------------------------------------------------- the real threadpoolctl
def _real_blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"
            and lib["internal_api"] == "openblas"}


@pytest.fixture
def free_openblas_control():
    """A process-wide OpenBLAS (pthreads) at 2 threads and threadpoolctl's rule that only one
    thread (the first to set a limit, until it lets go) may change it, with no thread holding
    that control at the start and the end."""
    ctrl = getattr(threadpoolctl, "OpenBLASController", None)
    if ctrl is None or not hasattr(ctrl, "clear_controlling_thread"):
        pytest.skip("threadpoolctl without the controlling-thread rule")
    libs = [lib for lib in threadpool_info() if lib["internal_api"] == "openblas"]
    if not libs or any(lib.get("threading_layer") != "pthreads" for lib in libs):
        pytest.skip("needs OpenBLAS with its pthreads pool")
    controller = threadpoolctl.ThreadpoolController().select(internal_api="openblas")
    before = [lib.num_threads for lib in controller.lib_controllers]
    ctrl.clear_controlling_thread(force=True)
    for lib in controller.lib_controllers:
        lib.set_num_threads(2)
    ctrl.clear_controlling_thread(force=True)
    if _real_blas_threads() != {2}:
        pytest.skip("cannot set the BLAS to 2 threads here")
    yield
    ctrl.clear_controlling_thread(force=True)
    for lib, n in zip(controller.lib_controllers, before):
        lib.set_num_threads(n)
    ctrl.clear_controlling_thread(force=True)


def test_real_two_passes_in_two_threads_leave_the_blas_as_found(free_openblas_control):
    """Two passes in two threads, the first to enter leaving first while its thread lives
    on (a Dask or server thread): the old code set the limit from that thread, which then
    held threadpoolctl's control, so the second thread's restore was ignored and the BLAS
    stayed at one thread for good."""
    a_in, b_in, a_out, stop = (threading.Event() for _ in range(4))

    def a():
        with kernel_base._blas_one_thread():
            a_in.set()
            b_in.wait(TIMEOUT)
        a_out.set()
        stop.wait(TIMEOUT)  # the thread lives on

    def b():
        a_in.wait(TIMEOUT)
        with kernel_base._blas_one_thread():
            b_in.set()
            a_out.wait(TIMEOUT)

    ta, tb = threading.Thread(target=a), threading.Thread(target=b)
    ta.start()
    tb.start()
    try:
        tb.join(TIMEOUT)
        assert not tb.is_alive()
        assert _real_blas_threads() == {2}
    finally:
        stop.set()
        ta.join(TIMEOUT)
    assert _real_blas_threads() == {2}


def test_real_pass_in_a_live_thread_keeps_users_limits_working(free_openblas_control):
    """After a pass ran in a thread that lives on, a user's threadpool_limits(1) in another
    thread still limits the BLAS and the pool (the old code kept threadpoolctl's control in
    the pass's thread, so the user's limit was silently ignored)."""
    done, stop = threading.Event(), threading.Event()

    def worker():
        with kernel_base._blas_one_thread():
            pass
        done.set()
        stop.wait(TIMEOUT)

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert done.wait(TIMEOUT)
        with threadpool_limits(limits=1, user_api="blas"):
            assert _real_blas_threads() == {1}
            assert kernel_base.pool_threads() == 1
        assert _real_blas_threads() == {2}
    finally:
        stop.set()
        t.join(TIMEOUT)


# ---------------------------------------------------------------------- warnings filters
class _NoFilterChanges:
    """Stands in for ``warnings.catch_warnings`` and fails: a library call changed the
    process-wide warnings filters (two threads doing so at once leave a filter behind)."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("the library changed the process-wide warnings filters")


def _lu_callers():
    from asymkern import _backend
    from asymkern._shared import lssvm as shared_lssvm

    return {"ArrayOps.lu_factor": lambda M: _backend.NUMPY.lu_factor(M),
            "_lu_or_none": lambda M: shared_lssvm._lu_or_none(M)}


@pytest.mark.parametrize("name", ["ArrayOps.lu_factor", "_lu_or_none"])
def test_lu_factorisations_leave_the_warnings_filters_alone(name):
    """The library's LU factorisations silenced scipy's singular-matrix warning with
    ``warnings.catch_warnings``; two threads overlapping there (A enters, B enters, A leaves,
    B leaves) left ``ignore LinAlgWarning`` in the process-wide filters for good."""
    import scipy.linalg as sla

    call = _lu_callers()[name]
    rng = np.random.default_rng(0)
    M = rng.standard_normal((6, 6))
    expected = sla.lu_factor(M.copy(), check_finite=False)
    filters = list(warnings.filters)
    real = warnings.catch_warnings
    warnings.catch_warnings = _NoFilterChanges  # restored at once (pytest itself uses it)
    try:
        lu = call(M.copy())
    except AssertionError as exc:
        lu = exc
    finally:
        warnings.catch_warnings = real
    assert not isinstance(lu, AssertionError), lu
    assert np.array_equal(lu[0], expected[0]) and np.array_equal(lu[1], expected[1])
    singular = np.ones((4, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning either: the caller checks the factors
        out = call(singular.copy())
    assert out is None or out[0][3, 3] == 0
    assert warnings.filters == filters


def test_concurrent_lu_factorisations_leave_no_filter(monkeypatch):
    """The overlap itself, forced with events inside the factorisation."""
    import scipy.linalg as sla

    from asymkern import _backend

    real_getrf = sla.get_lapack_funcs
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def blocking(names, arrays):
        if threading.current_thread().name == "A":
            a_in.set()
            b_in.wait(TIMEOUT)
        elif threading.current_thread().name == "B":
            b_in.set()
            a_out.wait(TIMEOUT)
        return real_getrf(names, arrays)

    real_lu = sla.lu_factor

    def blocking_lu(A, **kw):  # the old route
        blocking(("getrf",), (A,))
        return real_lu(A, **kw)

    monkeypatch.setattr(sla, "get_lapack_funcs", blocking)
    monkeypatch.setattr(sla, "lu_factor", blocking_lu)
    filters = list(warnings.filters)

    def a():
        _backend.NUMPY.lu_factor(np.eye(3))
        a_out.set()

    def b():
        a_in.wait(TIMEOUT)
        _backend.NUMPY.lu_factor(np.eye(3))

    threads = [threading.Thread(target=a, name="A"), threading.Thread(target=b, name="B")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads)
    assert warnings.filters == filters


# ------------------------------------------------------------- determinism under threads
def _fitted_arrays(est) -> dict:
    return {k: v for k, v in vars(est).items() if k.endswith("_") and isinstance(v, np.ndarray)}


def _cases():
    from asymkern.decomposition import KernelSVD
    from asymkern.lssvm import AsKLSClassifier
    from asymkern.nystrom import NystromKernelRidge
    from asymkern.operators import KoopmanOperator

    rng = np.random.default_rng(0)
    X = rng.standard_normal((1100, 5))  # 1100² > 2**20 entries: the library's row pool runs
    y = X[:, 0] + 0.1 * rng.standard_normal(len(X))
    return {
        "KernelSVD": (lambda: KernelSVD(n_components=4, kernel="sne", solver="randomized",
                                        random_state=3), X, None, "transform"),
        "NystromKernelRidge": (lambda: NystromKernelRidge(random_state=3), X, y, "predict"),
        "AsKLSClassifier": (lambda: AsKLSClassifier(kernel="sne"), X[:300],
                            (y[:300] > 0).astype(int), "decision_function"),
        "KoopmanOperator": (lambda: KoopmanOperator(), X[:300],
                            X[:300] + 0.05 * rng.standard_normal((300, 5)), None),
    }


@pytest.mark.parametrize("name", ["KernelSVD", "NystromKernelRidge", "AsKLSClassifier",
                                  "KoopmanOperator"])
def test_four_threads_fit_and_use_bitwise_like_one(name):
    make, X, y, method = _cases()[name]
    ref = make().fit(X) if y is None else make().fit(X, y)
    ref_arrays = _fitted_arrays(ref)
    ref_out = getattr(ref, method)(X) if method else None
    start = threading.Barrier(4, timeout=TIMEOUT)
    fits: list = [None] * 4
    uses: list = [None] * 4

    def run(i):
        start.wait()
        est = make().fit(X) if y is None else make().fit(X, y)
        fits[i] = _fitted_arrays(est)
        if method:
            start.wait()
            uses[i] = getattr(ref, method)(X)  # the one fitted estimator, four threads

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    for got in fits:
        assert got is not None and got.keys() == ref_arrays.keys()
        for k in ref_arrays:
            assert np.array_equal(got[k], ref_arrays[k]), k
    if method:
        for out in uses:
            assert np.array_equal(out, ref_out)


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_grid_search_workers_equal_one_job(backend):
    """GridSearchCV with two workers: the same folds, parameters and scores as n_jobs=1 (to
    the rounding of the workers' BLAS thread count: loky caps each worker's BLAS at
    cpu_count // n_jobs threads, and OpenBLAS's sums depend on its thread count)."""
    from joblib import parallel_backend
    from sklearn.model_selection import GridSearchCV

    from asymkern.lssvm import AsKLSClassifier
    from asymkern.nystrom import NystromKernelRidge

    rng = np.random.default_rng(1)
    X = rng.standard_normal((150, 4))
    y = X[:, 0] + 0.1 * rng.standard_normal(150)
    cases = [(NystromKernelRidge(random_state=0), {"alpha": [1e-3, 1e-1]}, y)]
    if backend == "threading":
        cases.append((AsKLSClassifier(kernel="sne"), {"C": [0.1, 10.0]}, (y > 0).astype(int)))
    for est, grid, target in cases:
        ref = GridSearchCV(est, grid, cv=3).fit(X, target).cv_results_
        with parallel_backend(backend):
            got = GridSearchCV(est, grid, cv=3, n_jobs=2).fit(X, target).cv_results_
        assert got["params"] == ref["params"]
        for key in ref:
            if key.endswith("test_score"):
                np.testing.assert_allclose(got[key], ref[key], rtol=1e-8, atol=1e-12)
            elif key.startswith("rank"):
                assert np.array_equal(got[key], ref[key])
