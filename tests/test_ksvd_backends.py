"""KernelSVD on every executor against the numpy fit (the ``backend`` fixture).

One estimator code runs on numpy arrays and on torch tensors (``tests/_backends.py``); each test
fits the numpy reference and the backend's fit with the same ``random_state`` and compares the
singular triplets (no sign alignment: the paired sign rule is the same), the fitted means and
the scores of new rows and columns. Tolerances are the parity tolerances of the torch tests
(norm-wise relative): 1e-10 in float64 (``tol``: wider on CUDA) and 1e-4 in float32; ARPACK on
the host with the products on the device converges to the same vectors within its tolerance.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from _backends import as_backend, to_np, tol
from _torch_helpers import TEST_DEVICE

from asymkern import KernelSVD, config_context

F64, F32 = np.float64, np.float32


def rel(got, want) -> float:
    """Norm-wise relative error of ``got`` (any backend) against the numpy ``want``."""
    got, want = to_np(got).astype(np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


def tolerance(dtype, backend: str, factor: float = 1.0) -> float:
    return factor * (tol(1e-10, backend) if dtype == F64 else 1e-4)


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    return rng.randn(80, 4), rng.randn(60, 4) + 0.5, rng.randn(7, 4), rng.randn(6, 4)


def fit_both(backend, kw, X, Z=None, dtype=F64, **fit_kw):
    """The numpy fit and the backend's fit (inputs converted), warnings silenced (the
    noise-level warning is the same on both)."""
    conv = {k: None if v is None else as_backend(v, backend, F64) for k, v in fit_kw.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = KernelSVD(**kw).fit(X.astype(dtype), Z=None if Z is None else Z.astype(dtype),
                                **fit_kw)
        b = KernelSVD(**kw).fit(as_backend(X, backend, dtype),
                                Z=None if Z is None else as_backend(Z, backend, dtype), **conv)
    return a, b


def executor_kind(got, backend: str, fitted: bool = False) -> bool:
    """Whether ``got`` is an output of ``backend``: numpy in, numpy out; tensors in, tensors
    out; dask in, scores as dask arrays (a ``fitted`` attribute of a dask fit is numpy where
    the solver gathered it: singular values always, vectors of 'dense' / 'arpack')."""
    if backend == "numpy":
        return isinstance(got, np.ndarray)
    if backend == "dask":
        import dask.array as da

        return isinstance(got, da.Array) or (fitted and isinstance(got, np.ndarray))
    import torch

    return isinstance(got, torch.Tensor)


def check_fit(a, b, dtype, backend, factor: float = 1.0) -> None:
    """Same solver, counts, dtypes and (to the tolerance) the same triplets and embeddings."""
    t = tolerance(dtype, backend, factor)
    assert b.solver_ == a.solver_
    assert b.n_components_ == a.n_components_ and b.n_informative_ == a.n_informative_
    for attr in ("singular_values_", "left_singular_vectors_", "right_singular_vectors_"):
        got = getattr(b, attr)
        assert to_np(got).dtype == getattr(a, attr).dtype, attr  # float64 Nyström σ
        assert executor_kind(got, backend, fitted=True), attr
        assert rel(got, getattr(a, attr)) < t, attr
    for got, want in zip(b.embeddings(), a.embeddings()):
        assert to_np(got).dtype == want.dtype == dtype
        assert rel(got, want) < t
    if a.center:
        for attr in ("row_means_", "col_means_"):
            assert to_np(getattr(b, attr)).dtype == getattr(a, attr).dtype, attr
            assert rel(getattr(b, attr), getattr(a, attr)) < t, attr
        assert abs(b.grand_mean_ - a.grand_mean_) <= t * abs(a.grand_mean_)


def check_scores(a, b, new_rows, new_cols, dtype, backend, factor: float = 1.0) -> None:
    t = tolerance(dtype, backend, factor)
    for f, g, P in ((b.transform, a.transform, new_rows),
                    (b.transform_right, a.transform_right, new_cols)):
        got, want = f(as_backend(P, backend, dtype)), g(P.astype(dtype))
        assert executor_kind(got, backend)
        assert to_np(got).dtype == want.dtype == dtype  # float32 data: float32 scores
        assert rel(got, want) < t


def skip_on_dask(backend: str, unavailable: bool, what: str) -> None:
    """Skip what the Dask executor refuses with a NotImplementedError (tested in
    tests/test_dask.py)."""
    if backend == "dask" and unavailable:
        pytest.skip(f"{what} is not available on dask inputs")


NYSTROM = {"n_row_landmarks": 40, "n_col_landmarks": 30}
SOLVERS = [("dense", {}), ("arpack", {}), ("randomized", {}), ("block_krylov", {}),
           ("nystrom", NYSTROM), ("auto", {})]


# ------------------------------------------------------------------------- two sets, solvers
@pytest.mark.parametrize("dtype", [F64, F32])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("solver,opts", SOLVERS, ids=[s for s, _ in SOLVERS])
@pytest.mark.parametrize("kernel", ["sne", "rbf"])
def test_two_sets_equal_numpy(any_backend, kernel, solver, opts, center, dtype, data):
    backend = any_backend
    X, Z, Xn, Zn = data
    kw = dict(n_components=3, kernel=kernel, gamma=0.5, solver=solver, center=center,
              random_state=1, **opts)
    a, b = fit_both(backend, kw, X, Z, dtype)
    check_fit(a, b, dtype, backend)
    check_scores(a, b, Xn, Zn, dtype, backend, factor=10)
    if solver == "nystrom":
        np.testing.assert_array_equal(b.row_landmarks_, a.row_landmarks_)
        np.testing.assert_array_equal(b.col_landmarks_, a.col_landmarks_)


# ----------------------------------------------------------------------------- sample weights
@pytest.mark.parametrize("which", ["rows", "cols", "both"])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("solver", ["dense", "arpack", "randomized"])
@pytest.mark.parametrize("kernel", ["sne", "rbf"])
def test_weighted_equal_numpy(backend, kernel, solver, center, which, data):
    """G_w = W^{1/2} G̃ W_z^{1/2} (weighted normaliser of a row-normalised kernel, weighted
    centring) on every executor: triplets, means, training scores and new scores."""
    X, Z, Xn, Zn = data
    rng = np.random.RandomState(5)
    w = rng.uniform(0, 2, len(X)) if which != "cols" else None
    wz = rng.uniform(0, 2, len(Z)) if which != "rows" else None
    if wz is not None:
        wz[2] = 0.0  # a column of weight zero
    kw = dict(n_components=3, kernel=kernel, gamma=0.5, solver=solver, center=center,
              random_state=0)
    a, b = fit_both(backend, kw, X, Z, sample_weight=w, sample_weight_Z=wz)
    check_fit(a, b, F64, backend)
    np.testing.assert_array_equal(b.sample_weight_, a.sample_weight_)
    np.testing.assert_array_equal(b.sample_weight_Z_, a.sample_weight_Z_)
    check_scores(a, b, Xn, Zn, F64, backend, factor=10)


# ------------------------------------------------------------------------ precomputed G
# sample weights are refused with solver='nystrom' (test_parameter_errors_...)
PRECOMPUTED = [(s, o, w) for s, o in SOLVERS for w in (False, True) if not (w and s == "nystrom")]


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("solver,opts,weighted", PRECOMPUTED,
                         ids=[f"{s}-{'weighted' if w else 'plain'}" for s, _, w in PRECOMPUTED])
def test_precomputed_equal_numpy(any_backend, solver, opts, weighted, center, data):
    backend = any_backend
    skip_on_dask(backend, weighted or center, "sample weights or center=True with a "
                 "precomputed G")
    X, Z, Xn, Zn = data
    ref = KernelSVD(kernel="sne", gamma=0.5).fit(X, Z=Z).kernel_
    G, Gn, Gc = ref(X, Z), ref(Xn, Z), ref(X, Zn).T  # new rows (7, m), new columns (6, n)
    keep = G.copy()
    rng = np.random.RandomState(2)
    fit_kw = dict(sample_weight=rng.uniform(0.5, 2, len(X)),
                  sample_weight_Z=rng.uniform(0.5, 2, len(Z))) if weighted else {}
    kw = dict(n_components=3, kernel="precomputed", solver=solver, center=center,
              random_state=3, **opts)
    a, b = fit_both(backend, kw, G, **fit_kw)
    check_fit(a, b, F64, backend)
    check_scores(a, b, Gn, Gc, F64, backend, factor=10)
    np.testing.assert_array_equal(G, keep)


def test_precomputed_tensor_not_modified(backend, data):
    """A given G is read, never centred or weighted in place (it is not copied on torch)."""
    X, Z, _, _ = data
    G = as_backend(np.exp(-0.5 * ((X[:, None] - Z[None]) ** 2).sum(-1)), backend)
    keep = to_np(G).copy()
    for kw in ({"center": True, "solver": "dense"}, {"center": True, "solver": "arpack"}):
        KernelSVD(3, kernel="precomputed", random_state=0, **kw).fit(
            G, sample_weight=np.linspace(0.5, 2, len(X)))
        KernelSVD(3, kernel="precomputed", random_state=0, **kw).fit(G)
    np.testing.assert_array_equal(to_np(G), keep)


# ------------------------------------------------------------------------------ Nyström
def _split_nystrom(params: dict) -> dict:
    """KernelSVD keywords: 'sampling' is a parameter, the other options go in nystrom_params."""
    kw = {k: v for k, v in params.items() if k == "sampling"}
    rest = {k: v for k, v in params.items() if k != "sampling"}
    return {**kw, "nystrom_params": rest} if rest else kw


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("params", [
    {"sampling": "kmeans"}, {"sampling": "leverage"}, {"normalize": True},
    {"orthogonalize": True}, {"row_sampling": "kmeans", "col_sampling": "uniform"},
    {"working_memory": 0.01}], ids=["kmeans", "leverage", "normalize", "orthogonalize",
                                    "mixed", "working_memory"])
def test_nystrom_options_equal_numpy(any_backend, params, center, data):
    """The options of :func:`asymkern.linalg.asymmetric_nystrom` on every executor (the torch
    path refused ``working_memory`` with ``NotImplementedError`` before it ran the shared
    solver)."""
    backend = any_backend
    X, Z, Xn, Zn = data
    kw = dict(n_components=3, kernel="sne", gamma=0.5, solver="nystrom", center=center,
              random_state=0,
              n_row_landmarks=40, n_col_landmarks=30, **_split_nystrom(params))
    a, b = fit_both(backend, kw, X, Z)
    np.testing.assert_array_equal(b.row_landmarks_, a.row_landmarks_)
    np.testing.assert_array_equal(b.col_landmarks_, a.col_landmarks_)
    check_fit(a, b, F64, backend, factor=10)
    check_scores(a, b, Xn, Zn, F64, backend, factor=10)


# ------------------------------------------------------------------- fit(A), compat, bandwidth
@pytest.mark.parametrize("compat", ["pca", "pinv"])
@pytest.mark.parametrize("shape", [(40, 40), (50, 30)])
def test_data_matrix_equal_numpy(any_backend, shape, compat):
    backend = any_backend
    rng = np.random.RandomState(4)
    A = rng.uniform(0, 1, shape)
    kw = dict(n_components=3, kernel="rbf", gamma=0.5, compat=compat, solver="dense",
              center=True, random_state=0)
    a, b = fit_both(backend, kw, A)
    assert (b.n_features_in_, b.z_features_in_) == (a.n_features_in_, a.z_features_in_)
    check_fit(a, b, F64, backend)
    check_scores(a, b, rng.uniform(0, 1, (5, shape[1])), rng.uniform(0, 1, (4, shape[0])), F64,
                 backend, factor=10)


def test_bandwidth_auto_equal_numpy(any_backend, data):
    backend = any_backend
    X, Z, Xn, Zn = data
    kw = dict(n_components=2, kernel="sne", kernel_params={"bandwidth": "auto"},
              solver="dense")
    a, b = fit_both(backend, kw, X, Z)
    assert b.bandwidth_ == pytest.approx(a.bandwidth_, rel=1e-12)
    check_scores(a, b, Xn, Zn, F64, backend, factor=10)


# ------------------------------------------------------------------------------- 'auto'
@pytest.mark.parametrize("budget", [1024, 4])
def test_auto_budget_rule_is_shared(any_backend, budget):
    """'auto' is one rule on every executor (:func:`asymkern.linalg.svd.auto_solver`): a
    lazy kernel formed once for ARPACK when it fits ``max_dense_memory``, the randomized SVD
    when it does not; the estimator's budget check uses the same rule."""
    backend = any_backend
    rng = np.random.RandomState(3)
    X, Z = rng.randn(1100, 3), rng.randn(1050, 3)
    kw = dict(n_components=2, kernel="rbf", gamma=0.2, random_state=0)
    with config_context(max_dense_memory=budget):
        a, b = fit_both(backend, kw, X, Z)
    assert a.solver_ == ("arpack" if budget == 1024 else "randomized")
    check_fit(a, b, F64, backend, factor=1e2)


# ---------------------------------------------------------------------- parameter errors
@pytest.mark.parametrize("kw,fit_kw,exc", [
    ({"solver": "svd"}, {}, ValueError),
    ({"center": "yes"}, {}, TypeError),
    ({"n_components": 2.0}, {}, TypeError),
    ({"kernel_params": 3}, {}, TypeError),
    ({"solver": "nystrom"}, {"sample_weight": True}, ValueError),
    ({"kernel": "precomputed", "gamma": 0.5}, {}, ValueError),
    ({"kernel": "precomputed"}, {"Z": True}, ValueError),
    ({"gamma": 0.5, "kernel_params": {"bandwidth": "auto"}}, {}, ValueError),
    ({"compat": None}, {"non_square": True}, ValueError),
])
def test_parameter_errors_are_the_same_on_every_backend(any_backend, kw, fit_kw, exc, data):
    backend = any_backend
    X, Z, _, _ = data
    args = {}
    if fit_kw.get("sample_weight"):
        args["sample_weight"] = np.ones(len(X))
    if fit_kw.get("Z"):
        args["Z"] = Z
    elif not kw.get("kernel") == "precomputed" and not fit_kw.get("non_square"):
        args["Z"] = Z
    A = X if not fit_kw.get("non_square") else X[:30]
    with pytest.raises(exc) as ref:
        KernelSVD(**kw).fit(A, **args)
    conv = {k: as_backend(v, backend) for k, v in args.items()}
    with pytest.raises(exc, match=re.escape(str(ref.value))):
        KernelSVD(**kw).fit(as_backend(A, backend), **conv)


# --------------------------------------------- an in-memory fit, new points as dask arrays
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("kernel", ["sne", "rbf", "precomputed"])
def test_weighted_fit_transforms_dask_input_like_numpy(kernel, center, data):
    """The scores of dask new points run the estimator's own score algebra: after a weighted
    fit they use the weighted singular vectors, centring and normaliser (they were 0.75 off on
    scores of size 3 when the Dask transform used the unweighted ones)."""
    da = pytest.importorskip("dask.array")
    X, Z, Xn, Zn = data
    rng = np.random.RandomState(7)
    w, wz = rng.uniform(0.2, 2, len(X)), rng.uniform(0.2, 2, len(Z))
    if kernel == "precomputed":
        k = KernelSVD(kernel="sne", gamma=0.5).fit(X, Z=Z).kernel_
        X, Xn, Zn = k(X, Z), k(Xn, Z), k(X, Zn).T
        Z = None
    est = KernelSVD(n_components=3, kernel=kernel, center=center,
                    gamma=None if kernel == "precomputed" else 0.5)
    est.fit(X, Z=Z, sample_weight=w, sample_weight_Z=wz)
    for f, P in ((est.transform, Xn), (est.transform_right, Zn)):
        got = f(da.from_array(P, chunks=(3, P.shape[1])))
        assert isinstance(got, da.Array)
        np.testing.assert_allclose(got.compute(), f(P), rtol=1e-10, atol=1e-12)


def test_torch_fit_refuses_dask_input(data):
    pytest.importorskip("torch")
    da = pytest.importorskip("dask.array")
    X, Z, Xn, _ = data
    est = KernelSVD(n_components=3, gamma=0.5, device=TEST_DEVICE).fit(X, Z=Z)
    with pytest.raises(ValueError, match="fitted with torch"):
        est.transform(da.from_array(Xn, chunks=(3, Xn.shape[1])))
