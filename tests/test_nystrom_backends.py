"""The Nyström machines on every executor (the ``any_backend`` fixture: numpy, torch, dask).

NystromKernelRidge, NystromKernelPCA and NystromSVC run one algebra
(:mod:`asymkern.nystrom._algebra`) on numpy arrays and on torch tensors; each case fits on the
backend's arrays and compares the fitted attributes and the outputs (predict, transform,
decision_function) with the numpy fit, at the parity tolerances of the torch tests: 1e-10
relative in float64 (``tol`` widens it on CUDA), 1e-4 in float32. Bad parameters give the same
error on every backend, dask arrays included (they are checked before the dispatch).
"""

from __future__ import annotations

import numpy as np
import pytest
from _backends import as_backend, to_np, tol

from asymkern.nystrom import NystromKernelPCA, NystromKernelRidge, NystromSVC

MODES = ("lla", "ncr", "gsa", "spa", "exact")
DTYPES = (np.float64, np.float32)


def _data(dtype, n=90, d=4, seed=0):
    rs = np.random.RandomState(seed)
    X = rs.randn(n, d)
    Z = rs.randn(25, d)
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rs.randn(n)
    labels = (X[:, 0] > 0.4).astype(int) + (X[:, 1] > 0).astype(int)
    return X.astype(dtype), Z.astype(dtype), y, labels, rs.rand(n) + 0.2


def _rel(got, want) -> float:
    """‖got − want‖ / ‖want‖ (Frobenius), in float64."""
    got = to_np(got).astype(np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


def _limit(dtype, backend) -> float:
    return tol(1e-10, backend) if dtype == np.float64 else 1e-4


def _kind(out, backend) -> None:
    """Numpy in, numpy out; tensors in, tensors out; dask in, a lazy dask array out."""
    if backend == "numpy":
        assert isinstance(out, np.ndarray)
    elif backend == "dask":
        import dask.array as da

        assert isinstance(out, da.Array)
    else:
        import torch

        assert isinstance(out, torch.Tensor)


def _on_dask(backend, mode, weighted=False, modes=("lla", "ncr", "gsa", "spa")) -> None:
    """Skip what the Dask executor does not offer (it says so with a NotImplementedError,
    tested in tests/test_dask_machines.py): the n×n 'exact' mode, sample weights with
    'gsa', and the SVC modes whose test phase needs every training point."""
    if backend == "dask" and (mode not in modes or (weighted and mode == "gsa")):
        pytest.skip(f"mode={mode!r}{' with sample weights' if weighted else ''} is not "
                    "available on dask inputs")


def _same_attributes(est, ref, names, limit) -> None:
    for name in names:
        got, want = getattr(est, name), getattr(ref, name)
        assert (got is None) == (want is None), name
        if want is not None:
            assert _rel(got, want) < limit, (name, _rel(got, want))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_ridge_on_every_backend(any_backend, mode, dtype, weighted):
    backend = any_backend
    _on_dask(backend, mode, weighted)
    X, Z, y, _, sw = _data(dtype)
    kw = dict(mode=mode, n_landmarks=30, kernel="rbf", gamma=0.3, alpha=0.1, random_state=0)
    w = sw if weighted else None
    ref = NystromKernelRidge(**kw).fit(X, y, sample_weight=w)
    est = NystromKernelRidge(**kw).fit(
        as_backend(X, backend), as_backend(y, backend),
        sample_weight=None if w is None else as_backend(w, backend))
    limit = _limit(dtype, backend)
    _same_attributes(est, ref, ("coef_", "landmark_coef_", "dual_coef_", "intercept_"), limit)
    pred = est.predict(as_backend(Z, backend))
    _kind(pred, backend)
    assert to_np(pred).dtype == dtype
    assert _rel(pred, ref.predict(Z)) < limit
    if mode == "gsa":
        assert _rel(est.predict_lla(as_backend(Z, backend)), ref.predict_lla(Z)) < limit


@pytest.mark.parametrize("gsa_solver", ["eq20", "woodbury"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_ridge_gsa_solvers_on_every_backend(any_backend, gsa_solver, fit_intercept):
    backend = any_backend
    X, Z, y, _, _ = _data(np.float64, seed=1)
    Y = np.column_stack([y, y**2])
    kw = dict(mode="gsa", n_landmarks=25, kernel="laplacian", gamma=0.2, alpha=0.05,
              gsa_solver=gsa_solver, fit_intercept=fit_intercept, random_state=3)
    ref = NystromKernelRidge(**kw).fit(X, Y)
    est = NystromKernelRidge(**kw).fit(as_backend(X, backend), as_backend(Y, backend))
    _same_attributes(est, ref, ("coef_", "dual_coef_", "intercept_"), tol(1e-10, backend))
    assert _rel(est.predict(as_backend(Z, backend)), ref.predict(Z)) < tol(1e-10, backend)


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_kpca_on_every_backend(any_backend, mode, dtype, center):
    backend = any_backend
    _on_dask(backend, mode)
    X, Z, _, _, _ = _data(dtype)
    kw = dict(mode=mode, n_components=3, n_landmarks=30, kernel="rbf", gamma=0.3,
              center=center, random_state=0)
    ref = NystromKernelPCA(**kw).fit(X)
    est = NystromKernelPCA(**kw).fit(as_backend(X, backend))
    limit = _limit(dtype, backend)
    _same_attributes(est, ref, ("eigenvalues_", "coef_", "landmark_coef_", "dual_coef_",
                                "intercept_"), limit)
    out = est.transform(as_backend(Z, backend))
    _kind(out, backend)
    assert to_np(out).dtype == dtype
    assert _rel(out, ref.transform(Z)) < limit


@pytest.mark.parametrize("svm", ["svc", "linearsvc"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_svc_on_every_backend(any_backend, mode, dtype, svm):
    backend = any_backend
    if svm == "linearsvc" and mode in ("spa", "exact"):
        pytest.skip("svm='linearsvc' supports modes lla/gsa/ncr only")
    _on_dask(backend, mode, modes=("lla", "ncr"))
    X, Z, _, labels, _ = _data(dtype)
    kw = dict(mode=mode, svm=svm, n_landmarks=30, kernel="rbf", gamma=0.3, random_state=0)
    ref = NystromSVC(**kw).fit(X, labels)
    est = NystromSVC(**kw).fit(as_backend(X, backend), as_backend(labels, backend))
    limit = _limit(dtype, backend)
    if dtype == np.float64:  # float32: libsvm's duals move with the kernel's rounding
        _same_attributes(est, ref, ("coef_", "landmark_coef_", "dual_coef_"), limit)
    Zb = as_backend(Z, backend)
    d, want = est.decision_function(Zb), ref.decision_function(Z)
    _kind(d, backend)
    assert to_np(d).dtype == dtype
    assert _rel(d, want) < limit
    p, pw = to_np(est.predict(Zb)), ref.predict(Z)
    # labels agree wherever the decision is not within rounding of a tie
    margin = np.abs(want).min(axis=1) if want.ndim == 2 else np.abs(want)
    clear = margin > 1e-6 if dtype == np.float64 else margin > 1e-3
    np.testing.assert_array_equal(p[clear], pw[clear])


@pytest.mark.parametrize("Est, params, fit_y", [
    (NystromKernelRidge, dict(alpha=-1.0), True),
    (NystromKernelRidge, dict(mode="bogus"), True),
    (NystromKernelRidge, dict(gsa_solver="bogus"), True),
    (NystromKernelRidge, dict(mode="ncr", subspace_dim=5), True),
    (NystromKernelPCA, dict(n_components=0), False),
    (NystromKernelPCA, dict(mode="bogus"), False),
    (NystromSVC, dict(svm="bogus"), True),
    (NystromSVC, dict(mode="spa", svm="linearsvc"), True),
    (NystromSVC, dict(mode="ncr", subspace_dim=5), True),
])
def test_bad_parameters_same_error_on_every_backend(any_backend, Est, params, fit_y):
    X, _, y, labels, _ = _data(np.float64, n=40)
    target = (labels if Est is NystromSVC else y) if fit_y else None
    args = (X,) if target is None else (X, target)

    def message(b):
        with pytest.raises((ValueError, NotImplementedError)) as info:
            Est(n_landmarks=10, random_state=0, **params).fit(
                *(as_backend(a, b) for a in args))
        return type(info.value), str(info.value)

    assert message(any_backend) == message("numpy")


def test_float32_outputs_beyond_the_dtype_range_are_refused(any_backend):
    """Predictions finite in float64 but beyond float32's range (3.4e38) are an error, never
    infinity in the float32 output (on dask when the lazy predictions are computed)."""
    backend = any_backend
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2)).astype(np.float32)
    y = 3e38 * (1 + np.abs(rng.standard_normal(40)))
    est = NystromKernelRidge(n_landmarks=10, alpha=1e-3, random_state=0)
    est.fit(as_backend(X, backend), as_backend(y, backend, np.float64))
    with pytest.raises(OverflowError, match="range of the input's dtype float32"):
        to_np(est.predict(as_backend(X, backend)))
    small = NystromKernelRidge(n_landmarks=10, alpha=1e-3, random_state=0)
    small.fit(as_backend(X, backend), as_backend(y / 1e30, backend, np.float64))
    out = to_np(small.predict(as_backend(X, backend)))
    assert out.dtype == np.float32 and np.isfinite(out).all()
