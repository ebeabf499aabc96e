"""Property tests (issue 12) of asymkern.linalg (top_svd, asymmetric/symmetric Nyström, eta) and
of the landmark selectors in asymkern.landmarks.

Singular values are checked against numpy's dense SVD; bad input must raise a
ValueError/TypeError naming the argument, never return NaN. Profiles and input classes: see
``tests/_hypothesis.py`` (``HYPOTHESIS_PROFILE=long`` for a longer run).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _hypothesis import (  # noqa: F401 - one_blas_thread is an autouse fixture
    SCALES,
    VERSION_DEPENDENT,
    as_sparse,
    check_error,
    dtype_matrix,
    fortran,
    note,
    one_blas_thread,
    poison,
    readonly,
    same,
    snapshot,
    unit_matrix,
    xfail,
)
from hypothesis import assume, example, given
from hypothesis import strategies as st
from scipy.sparse.linalg import aslinearoperator

from asymkern import KernelMatrix, get_kernel
from asymkern.landmarks import gaussian_sketch, leverage_scores, select_landmarks
from asymkern.linalg import asymmetric_nystrom, eta, symmetric_nystrom, top_svd

SOLVERS = ("dense", "arpack", "randomized", "nystrom", "auto")

matrices = unit_matrix(st.integers(1, 12), st.integers(1, 12))


def _ref_s(G, r):
    A = np.asarray(G.toarray() if sp.issparse(G) else G, dtype=np.float64)
    return np.linalg.svd(A, compute_uv=False)[:r]


def _check_svd(res, G, r, tol, warned=()):
    """s matches the dense reference; U, V have the right shapes. Fewer than r components are
    accepted only for a rank-deficient G, with a warning, the missing ones being ~0."""
    A = np.asarray(G.toarray() if sp.issparse(G) else G, dtype=np.float64)
    s_ref = _ref_s(A, r)
    n, m = A.shape
    k = res.s.shape[0]
    scale = max(float(s_ref[0]), np.finfo(float).tiny)
    if k < r:
        assert any(issubclass(w.category, RuntimeWarning) for w in warned), (
            f"{k} < {r} components returned without a warning")
        assert np.all(s_ref[k:] <= 1e-6 * scale), (k, r, s_ref)
    assert res.U.shape == (n, k) and res.V.shape == (m, k) and res.s.shape == (k,)
    assert np.all(np.isfinite(res.s)) and np.all(np.isfinite(res.U)) and np.all(
        np.isfinite(res.V))
    np.testing.assert_allclose(np.asarray(res.s, np.float64), s_ref[:k], rtol=tol,
                               atol=tol * scale)
    assert np.all(np.diff(np.asarray(res.s, np.float64)) <= tol * scale)


def _run_svd(G, r, solver, tol, random_state=0, dense=None):
    """top_svd, checked; an error is accepted only for a (numerically) zero G and must be a
    ValueError naming G. Returns the result or None. ``dense``: G as an array (operators)."""
    opts = {"n_oversamples": max(G.shape)} if solver == "randomized" else {}
    A = dense if dense is not None else np.asarray(G.toarray() if sp.issparse(G) else G,
                                                   dtype=np.float64)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        try:
            res = top_svd(G, r, solver=solver, random_state=random_state, **opts)
        except Exception as exc:  # noqa: BLE001
            check_error(exc, "G")
            s_ref = _ref_s(A, r)
            assert s_ref[0] <= 1e-12 * max(1.0, np.abs(A).max()), (
                f"top_svd(solver={solver!r}) failed on a non-degenerate G: {exc}")
            return None
    _check_svd(res, A, r, tol, warned)
    return res


def _r_strategy(G):
    return st.integers(1, min(G.shape))


def _solver_cases(cls: str, failing: dict | None = None):
    failing = failing or {}
    return [pytest.param(s, marks=(xfail(failing[s]),) if s in failing else (), id=s)
            for s in SOLVERS]


# ------------------------------------------------------------------------------------ top_svd
@pytest.mark.parametrize("solver", _solver_cases("valid"))
@given(G=matrices, data=st.data())
def test_top_svd_matches_numpy(solver, G, data):
    note("valid", f"top_svd[{solver}]")
    r = data.draw(_r_strategy(G))
    before = snapshot(G)
    _run_svd(G, r, solver, 1e-8)
    assert same(before, G)


@pytest.mark.parametrize("solver", SOLVERS)
@given(G=matrices, data=st.data(), scale=st.sampled_from(SCALES + (1e8,)))
def test_top_svd_extreme_magnitudes(solver, G, data, scale):
    """Entries of 1e150, 1e-150 or offset by 1e8: right singular values or an error naming G."""
    note("extreme-magnitude" if scale != 1e8 else "offset", f"top_svd[{solver}]")
    r = data.draw(_r_strategy(G))
    Gs = G * scale if scale != 1e8 else G + scale
    _run_svd(Gs, r, solver, 1e-6)


@pytest.mark.parametrize("solver", SOLVERS)
@given(G=matrices, data=st.data(), fmt=st.sampled_from(("csr", "csc", "coo", "linop", "kernel")))
def test_top_svd_sparse_and_operators(solver, G, data, fmt):
    note("sparse", f"top_svd[{solver}]")
    r = data.draw(_r_strategy(G))
    Gd = np.where(np.abs(G) < 1, 0.0, G)
    if fmt == "kernel":  # the linear kernel against the identity is G itself, computed lazily
        Gs = KernelMatrix(get_kernel("linear"), Gd, np.eye(Gd.shape[1]))
    else:
        Gs = aslinearoperator(Gd) if fmt == "linop" else as_sparse(Gd, fmt)
    if solver == "nystrom" and fmt == "linop":  # documented: Nyström needs entries of G
        with pytest.raises(TypeError) as info:
            top_svd(Gs, r, solver=solver)
        check_error(info.value, "G", "nystrom")
        return
    before = snapshot(Gs) if fmt not in ("linop", "kernel") else None
    _run_svd(Gs, r, solver, 1e-7, dense=Gd)
    if before is not None:
        assert same(before, Gs)


def _dtype_cases():
    out = []
    for solver in SOLVERS:
        for kind in ("float32", "int", "bool", "object", "readonly", "fortran"):
            marks = ()
            if kind == "float32" and solver == "nystrom":
                marks = (xfail(VERSION_DEPENDENT + " top_svd(solver='nystrom') returns float64 "
                               "singular values s for float32 G (U, V stay float32)"),)
            out.append(pytest.param(solver, kind, marks=marks, id=f"{solver}-{kind}"))
    return out


@pytest.mark.parametrize(("solver", "kind"), _dtype_cases())
@given(G=matrices, data=st.data())
def test_top_svd_dtypes_and_layouts(solver, kind, G, data):
    note("dtype" if kind not in ("readonly", "fortran") else "layout", f"top_svd[{solver}]")
    r = data.draw(_r_strategy(G))
    if kind == "readonly":
        Gk = readonly(G)
    elif kind == "fortran":
        Gk = fortran(G)
    else:
        Gk = dtype_matrix(G, kind)
    before = snapshot(Gk)
    res = _run_svd(Gk, r, solver, 1e-4 if kind == "float32" else 1e-8)
    assert same(before, Gk)
    if res is None:
        return
    if kind == "float32":
        assert res.U.dtype == np.float32 and res.V.dtype == np.float32
        assert res.s.dtype == np.float32
    else:
        assert res.U.dtype == np.float64


@pytest.mark.parametrize("solver", _solver_cases("valid", {
    "arpack": VERSION_DEPENDENT + " solver='arpack' is not reproducible for a rank-deficient "
              "G (scipy svds returns different null-space vectors on each call with the same v0)"}))
@given(G=matrices, data=st.data())
def test_top_svd_deterministic(solver, G, data):
    note("valid", f"top_svd[{solver}].determinism")
    r = data.draw(_r_strategy(G))
    assume(np.abs(G).max() > 0)  # the Nyström solver refuses a zero G (checked elsewhere)
    a = top_svd(G, r, solver=solver, random_state=3)
    b = top_svd(G, r, solver=solver, random_state=3)
    for x, y in ((a.U, b.U), (a.s, b.s), (a.V, b.V)):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("solver", _solver_cases("non-finite"))
@given(G=matrices, data=st.data(), value=st.sampled_from((np.nan, np.inf, -np.inf)),
       i=st.integers(0, 20), j=st.integers(0, 20))
def test_top_svd_rejects_non_finite(solver, G, data, value, i, j):
    note("non-finite", f"top_svd[{solver}]")
    r = data.draw(_r_strategy(G))
    Gp = poison(G, value, i, j)
    with pytest.raises(Exception) as info:
        top_svd(Gp, r, solver=solver, random_state=0)
    check_error(info.value, "G")
    assert isinstance(info.value, ValueError)


BAD_R = (0, -1, 1.5, "2", None, True, np.nan)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("r", BAD_R + ("too-many",), ids=repr)
@given(G=matrices)
def test_top_svd_rejects_bad_n_components(solver, r, G):
    note("invalid-param", f"top_svd[{solver}].n_components")
    r = min(G.shape) + 1 if r == "too-many" else r
    with pytest.raises((ValueError, TypeError)) as info:
        top_svd(G, r, solver=solver)
    check_error(info.value, "n_components")


@pytest.mark.parametrize("case", ("1d", "3d", "empty", "str"))
@given(G=matrices)
def test_top_svd_rejects_bad_G(case, G):
    note("invalid-shape" if case in ("1d", "3d", "empty") else "dtype", "top_svd.G")
    bad = {"1d": G[:, 0], "3d": G[None], "empty": G[:0],
           "str": dtype_matrix(G, "object-str")}[case]
    with pytest.raises(Exception) as info:
        top_svd(bad, 1)
    check_error(info.value, "G")


@given(G=matrices)
def test_top_svd_rejects_unknown_solver(G):
    note("invalid-param", "top_svd.solver")
    with pytest.raises(ValueError) as info:
        top_svd(G, 1, solver="lanczos")
    check_error(info.value, "solver")


@pytest.mark.parametrize("solver", SOLVERS)
@given(G=matrices)
def test_top_svd_rejects_unknown_options(solver, G):
    note("invalid-param", f"top_svd[{solver}].options")
    with pytest.raises(TypeError) as info:
        top_svd(G, 1, solver=solver, n_oversample=5)  # typo of n_oversamples
    check_error(info.value, "n_oversample")


# -------------------------------------------------------------------------- Nyström functions
square_ish = unit_matrix(st.integers(2, 12), st.integers(2, 12))


@pytest.mark.parametrize("func", (asymmetric_nystrom, symmetric_nystrom), ids=("asym", "sym"))
@given(G=square_ish, data=st.data())
def test_nystrom_with_all_landmarks_is_exact(func, G, data):
    """With every row and column a landmark the approximation is G itself: exact top-r
    singular values (when they are well separated from zero)."""
    note("valid", f"{func.__name__}")
    r = data.draw(_r_strategy(G))
    s_all = np.linalg.svd(G, compute_uv=False)
    assume(s_all[r - 1] > 1e-6 * s_all[0])
    n, m = G.shape
    before = snapshot(G)
    res = func(G, r, n, m, random_state=0)
    assert same(before, G)
    assert res.U.shape == (n, r) and res.V.shape == (m, r)
    np.testing.assert_allclose(res.s, s_all[:r], rtol=1e-6, atol=1e-8 * s_all[0])


@pytest.mark.parametrize("func", (asymmetric_nystrom, symmetric_nystrom), ids=("asym", "sym"))
@given(G=square_ish, data=st.data(), kind=st.sampled_from(("float32", "csr", "readonly",
                                                           "kernel")))
def test_nystrom_inputs(func, G, data, kind):
    """float32 stays float32, sparse and lazy kernels are accepted, nothing is modified."""
    note({"float32": "dtype", "csr": "sparse", "readonly": "layout", "kernel": "valid"}[kind],
         f"{func.__name__}")
    r = data.draw(st.integers(1, min(G.shape)))
    assume(np.abs(G).max() > 0)  # a zero G is refused by the asymmetric method (by design)
    n, m = G.shape
    if kind == "kernel":
        Gk = KernelMatrix(get_kernel("rbf"), G, G[: max(1, m // 2) + 1].copy())
        n, m = Gk.shape
        r = min(r, n, m)
    else:
        Gk = {"float32": G.astype(np.float32), "csr": sp.csr_matrix(G),
              "readonly": readonly(G)}[kind]
    before = None if kind == "kernel" else snapshot(Gk)
    res = func(Gk, r, n, m, random_state=1)
    if before is not None:
        assert same(before, Gk)
    assert np.all(np.isfinite(res.s)) and np.all(np.isfinite(res.U))
    if kind == "float32":
        assert res.U.dtype == np.float32 and res.V.dtype == np.float32


@pytest.mark.parametrize("func", (asymmetric_nystrom, symmetric_nystrom), ids=("asym", "sym"))
@given(G=square_ish, data=st.data())
def test_nystrom_deterministic(func, G, data):
    note("valid", f"{func.__name__}.determinism")
    assume(np.abs(G).max() > 0)
    r = data.draw(st.integers(1, min(G.shape)))
    k = data.draw(st.integers(r, min(G.shape)))
    a = func(G, r, k, k, random_state=5)
    b = func(G, r, k, k, random_state=5)
    np.testing.assert_array_equal(a.U, b.U)
    np.testing.assert_array_equal(a.s, b.s)
    np.testing.assert_array_equal(a.V, b.V)


@pytest.mark.parametrize("func", (asymmetric_nystrom, symmetric_nystrom), ids=("asym", "sym"))
@given(G=square_ish, value=st.sampled_from((np.nan, np.inf)), i=st.integers(0, 20),
       j=st.integers(0, 20))
def test_nystrom_rejects_non_finite(func, G, value, i, j):
    note("non-finite", f"{func.__name__}")
    with pytest.raises(ValueError) as info:
        func(poison(G, value, i, j), 1, random_state=0)
    check_error(info.value, "G")


def _nystrom_bad_cases():
    out = []
    for fname, func in (("asym", asymmetric_nystrom), ("sym", symmetric_nystrom)):
        for arg, value, names in (
            ("n_components", 0, ("n_components",)),
            ("n_components", 2.5, ("n_components",)),
            ("n_components", "too-many", ("n_components",)),
            ("n_row_landmarks", 0, ("n_row_landmarks",)),
            ("n_row_landmarks", "too-many", ("n_row_landmarks",)),
            ("n_col_landmarks", 1.5, ("n_col_landmarks",)),
            ("sampling", "bogus", ("sampling",)),
            ("row_sampling", np.array([0, 0]), ("row_sampling",)),
            ("row_sampling", np.array([0, 99]), ("row_sampling",)),
            ("col_sampling", np.array([0.5]), ("col_sampling",)),
            ("bogus_option", 1, ("bogus_option",)),
        ):
            out.append(pytest.param(func, arg, value, names,
                                    id=f"{fname}-{arg}-{value!r}"))
    return out


@pytest.mark.parametrize(("func", "arg", "value", "names"), _nystrom_bad_cases())
@given(G=square_ish)
def test_nystrom_rejects_bad_arguments(func, arg, value, names, G):
    note("invalid-param", f"{func.__name__}.{arg}")
    kwargs = {"n_components": 1}
    if isinstance(value, str) and value == "too-many":
        value = min(G.shape) + 1 if arg == "n_components" else G.shape[0] + 1
    kwargs[arg] = value
    with pytest.raises(Exception) as info:
        func(G, random_state=0, **kwargs)
    check_error(info.value, *names)


# ------------------------------------------------------------------------------------------ eta
@given(G=square_ish, data=st.data())
def test_eta_properties(G, data):
    """eta(U, V, U, V) = 0, invariant to signs and column scaling, in [0, 2] (uniform)."""
    note("valid", "eta")
    r = data.draw(_r_strategy(G))
    U, s, Vt = np.linalg.svd(G, full_matrices=False)
    U, s, V = U[:, :r], s[:r], Vt[:r].T
    assert eta(U, V, U, V, singular_values=s) == pytest.approx(0.0, abs=1e-12)
    signs = np.where(np.arange(r) % 2, -1.0, 1.0)
    assert eta(U, V, -U * 3.0, V * signs, weights="uniform") == pytest.approx(0.0, abs=1e-12)
    W = np.random.default_rng(0).standard_normal(U.shape)
    val = eta(U, V, W, V, weights="uniform")
    assert 0.0 <= val <= 2.0


@given(G=square_ish, value=st.sampled_from((np.nan, np.inf)), which=st.integers(0, 3))
def test_eta_rejects_non_finite(G, value, which):
    note("non-finite", "eta")
    U, s, Vt = np.linalg.svd(G, full_matrices=False)
    args = [U[:, :1].copy(), Vt[:1].T.copy(), U[:, :1].copy(), Vt[:1].T.copy()]
    args[which][0, 0] = value
    names = ("U", "V", "U_approx", "V_approx")[which]
    try:
        out = eta(*args, weights="uniform")
    except Exception as exc:  # noqa: BLE001
        check_error(exc, names)
        return
    raise AssertionError(f"eta returned {out} for a non-finite {names}")


@given(G=square_ish, case=st.sampled_from(("rows", "1d", "weights", "sv")))
def test_eta_rejects_bad_shapes(G, case):
    note("invalid-shape", "eta")
    U, s, Vt = np.linalg.svd(G, full_matrices=False)
    U, V = U[:, :1], Vt[:1].T
    with pytest.raises(ValueError) as info:
        if case == "rows":
            eta(U, V, np.vstack([U, U]), V, weights="uniform")
        elif case == "1d":
            eta(U[:, 0], V, U, V, weights="uniform")
        elif case == "weights":
            eta(U, V, U, V, weights=np.ones(3))
        else:
            eta(U, V, U, V, singular_values=np.ones(0), weights="paper")
    check_error(info.value, "U", "V", "U_approx", "V_approx", "weights", "singular_values")


# ------------------------------------------------------------------------------------ landmarks
data_sets = unit_matrix(st.integers(2, 30), st.integers(1, 5))


@pytest.mark.parametrize("method", ("uniform", "leverage", "kmeans"))
@given(X=data_sets, data=st.data(), kind=st.sampled_from(("float64", "float32", "csr",
                                                          "readonly")))
def test_select_landmarks_contract(method, X, data, kind):
    """Unique in-range indices, n_landmarks of them, reproducible, input untouched."""
    note({"float64": "valid", "float32": "dtype", "csr": "sparse", "readonly": "layout"}[kind],
         f"select_landmarks[{method}]")
    m = data.draw(st.integers(1, X.shape[0]))
    Xk = {"float64": X, "float32": X.astype(np.float32), "csr": sp.csr_matrix(X),
          "readonly": readonly(X)}[kind]
    before = snapshot(Xk)
    idx = select_landmarks(Xk, m, method=method, random_state=7)
    assert same(before, Xk)
    assert idx.shape == (m,) and np.issubdtype(idx.dtype, np.integer)
    assert np.unique(idx).size == m and idx.min() >= 0 and idx.max() < X.shape[0]
    np.testing.assert_array_equal(idx, select_landmarks(Xk, m, method=method, random_state=7))


@pytest.mark.parametrize("method", ("uniform", "leverage", "kmeans"))
@given(X=data_sets, data=st.data(), scale=st.sampled_from(SCALES + (1e8,)))
@example(X=np.full((4, 3), -2.09706939), data=None, scale=1e150)
def test_select_landmarks_extreme(method, X, data, scale):
    note("extreme-magnitude" if scale != 1e8 else "offset", f"select_landmarks[{method}]")
    m = data.draw(st.integers(1, X.shape[0])) if data is not None else X.shape[0] - 1
    Xs = X * scale if scale != 1e8 else X + scale
    try:
        idx = select_landmarks(Xs, m, method=method, random_state=0)
    except Exception as exc:  # noqa: BLE001
        check_error(exc, "X")
        return
    assert idx.shape == (m,) and np.unique(idx).size == m
    assert idx.min() >= 0 and idx.max() < X.shape[0]


@pytest.mark.parametrize("method", ("uniform", "leverage", "kmeans"))
@given(X=data_sets, value=st.sampled_from((np.nan, np.inf)), i=st.integers(0, 40),
       j=st.integers(0, 5))
def test_select_landmarks_rejects_non_finite(method, X, value, i, j):
    note("non-finite", f"select_landmarks[{method}]")
    with pytest.raises(ValueError) as info:
        select_landmarks(poison(X, value, i, j), 1, method=method, random_state=0)
    check_error(info.value, "X")


@pytest.mark.parametrize("method", ("uniform", "leverage", "kmeans", "fixed"))
@pytest.mark.parametrize("m", (0, -1, 1.5, "2", None, True, "too-many"), ids=repr)
@given(X=data_sets)
def test_select_landmarks_rejects_bad_counts(method, m, X):
    note("invalid-param", f"select_landmarks[{method}].n_landmarks")
    m = X.shape[0] + 1 if m == "too-many" else m
    kwargs = {"indices": np.arange(2)} if method == "fixed" else {}
    with pytest.raises((ValueError, TypeError)) as info:
        select_landmarks(X, m, method=method, random_state=0, **kwargs)
    check_error(info.value, "n_landmarks", "indices")


@pytest.mark.parametrize("case", ("duplicate", "range", "negative", "float", "2d", "bool"))
@given(X=data_sets)
def test_select_landmarks_fixed_validates_indices(case, X):
    note("invalid-param", "select_landmarks[fixed].indices")
    n = X.shape[0]
    idx = {"duplicate": np.array([0, 0]), "range": np.array([0, n]), "negative": np.array([-1, 0]),
           "float": np.array([0.0, 1.0]), "2d": np.array([[0, 1]]),
           "bool": np.array([True, False])}[case]
    with pytest.raises(ValueError) as info:
        select_landmarks(X, 2, method="fixed", indices=idx)
    check_error(info.value, "indices")


@given(X=data_sets, data=st.data())
def test_leverage_scores_sum_and_sign(X, data):
    note("valid", "leverage_scores")
    rank = data.draw(st.integers(1, X.shape[0]))
    s = leverage_scores(X, rank, random_state=0)
    assert s.shape == (X.shape[0],) and np.all(np.isfinite(s))
    assert np.all(s >= -1e-10) and np.all(s <= 1 + 1e-8)
    assert s.sum() <= rank + 1e-8


@given(n=st.integers(1, 30), data=st.data())
def test_gaussian_sketch(n, data):
    note("valid", "gaussian_sketch")
    m = data.draw(st.integers(1, n))
    S = gaussian_sketch(n, m, random_state=2)
    assert S.shape == (n, m) and np.all(np.isfinite(S))
    np.testing.assert_array_equal(S, gaussian_sketch(n, m, random_state=2))
    assert gaussian_sketch(n, m, random_state=2, dtype=np.float32).dtype == np.float32


@pytest.mark.parametrize("n", (0, -3, 2.5, "4", None), ids=repr)
def test_gaussian_sketch_rejects_bad_n_samples(n):
    note("invalid-param", "gaussian_sketch.n_samples")
    with pytest.raises((ValueError, TypeError)) as info:
        gaussian_sketch(n, 1)
    check_error(info.value, "n_samples")
