"""Public linear-algebra entry points validate their inputs and refuse unknown options."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import aslinearoperator

from asymkern.kernels import KernelMatrix, get_kernel
from asymkern.linalg import (
    arpack_svd,
    asymmetric_nystrom,
    dense_svd,
    eta,
    eta_strict,
    flip_signs,
    randomized_svd,
    symmetric_nystrom,
    top_svd,
)


@pytest.fixture
def G():
    rng = np.random.default_rng(3)
    return rng.standard_normal((30, 20))


SVD_FUNCS = {
    "top_svd": lambda A, **k: top_svd(A, 3, **k),
    "dense_svd": lambda A, **k: dense_svd(A, 3, **k),
    "arpack_svd": lambda A, **k: arpack_svd(A, 3, random_state=0, **k),
    "randomized_svd": lambda A, **k: randomized_svd(A, 3, random_state=0, **k),
    "asymmetric_nystrom": lambda A, **k: asymmetric_nystrom(A, 3, 15, 15, random_state=0, **k),
    "symmetric_nystrom": lambda A, **k: symmetric_nystrom(A, 3, 15, 15, random_state=0, **k),
}


@pytest.mark.parametrize("name", sorted(SVD_FUNCS))
def test_bad_matrices_are_refused_with_the_argument_named(name, G):
    f = SVD_FUNCS[name]
    bad = G.copy()
    bad[2, 3] = np.nan
    with pytest.raises(ValueError, match="G contains NaN or infinity"):
        f(bad)
    bad[2, 3] = np.inf
    with pytest.raises(ValueError, match="G contains NaN or infinity"):
        f(bad)
    for fmt in ("csr", "lil", "dok"):
        with pytest.raises(ValueError, match="G contains NaN or infinity"):
            f(sp.csr_matrix(bad).asformat(fmt))
    with pytest.raises(ValueError, match="G is complex-valued"):
        f(G + 1j)
    with pytest.raises(ValueError, match="G must be a 2-D matrix.*3 dimensions"):
        f(G[None])
    with pytest.raises(ValueError, match="G must be a 2-D matrix.*1 dimensions"):
        f(G[0])
    with pytest.raises(TypeError, match="G must be numeric"):
        f(np.array([["a", "b"], ["c", "d"]]))


@pytest.mark.parametrize("name", sorted(SVD_FUNCS))
def test_lists_and_integers_are_accepted_as_arrays(name, G):
    """Nested lists are converted like numpy arrays; integer input becomes float64."""
    f = SVD_FUNCS[name]
    Gi = np.round(G * 10).astype(np.int64)
    before = Gi.copy()
    a = f(Gi.tolist())
    b = f(Gi.astype(np.float64))
    np.testing.assert_allclose(a.s, b.s)
    np.testing.assert_array_equal(Gi, before)
    assert a.U.dtype == np.float64


def test_exact_solvers_agree_on_list_input(G):
    ref = np.linalg.svd(G, compute_uv=False)[:3]
    for f in ("top_svd", "dense_svd", "arpack_svd"):
        np.testing.assert_allclose(SVD_FUNCS[f](G.tolist()).s, ref, rtol=1e-10)


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"n_oversamples": -1}, ValueError, "n_oversamples must be an integer >= 0"),
        ({"n_oversamples": 2.5}, TypeError, "n_oversamples must be an integer"),
        ({"n_oversamples": True}, TypeError, "n_oversamples must be an integer"),
        ({"n_iter": -2}, ValueError, "n_iter must be an integer >= 0"),
        ({"n_iter": 1.5}, TypeError, "n_iter must be an integer"),
        ({"n_iter": "many"}, ValueError, "n_iter must be 'auto' or an integer"),
    ],
)
def test_randomized_settings_are_checked(G, kwargs, err, match):
    with pytest.raises(err, match=match):
        randomized_svd(G, 3, random_state=0, **kwargs)
    with pytest.raises(err, match=match):
        top_svd(G, 3, solver="randomized", random_state=0, **kwargs)


@pytest.mark.parametrize("r, err", [(0, ValueError), (-1, ValueError), (2.0, TypeError),
                                    (True, TypeError), (21, ValueError), ("3", TypeError)])
@pytest.mark.parametrize("name", sorted(SVD_FUNCS))
def test_ranks_are_checked(name, r, err, G):
    f = {
        "top_svd": lambda: top_svd(G, r),
        "dense_svd": lambda: dense_svd(G, r),
        "arpack_svd": lambda: arpack_svd(G, r),
        "randomized_svd": lambda: randomized_svd(G, r),
        "asymmetric_nystrom": lambda: asymmetric_nystrom(G, r, 20, 20),
        "symmetric_nystrom": lambda: symmetric_nystrom(G, r, 20, 20),
    }[name]
    with pytest.raises(err, match="n_components|r must|r="):
        f()


@pytest.mark.parametrize("rs, err", [(-1, ValueError), (2**40, ValueError), (1.5, TypeError),
                                     ("seed", TypeError), (True, TypeError)])
@pytest.mark.parametrize("name", ["top_svd", "arpack_svd", "randomized_svd",
                                  "asymmetric_nystrom", "symmetric_nystrom"])
def test_random_state_is_checked(name, rs, err, G):
    f = {
        "top_svd": lambda: top_svd(G, 3, random_state=rs),
        "arpack_svd": lambda: arpack_svd(G, 3, random_state=rs),
        "randomized_svd": lambda: randomized_svd(G, 3, random_state=rs),
        "asymmetric_nystrom": lambda: asymmetric_nystrom(G, 3, 10, 10, random_state=rs),
        "symmetric_nystrom": lambda: symmetric_nystrom(G, 3, 10, 10, random_state=rs),
    }[name]
    with pytest.raises(err, match="random_state"):
        f()


def test_arpack_tol_is_checked(G):
    for tol, err in ((-1e-3, ValueError), (np.nan, ValueError), ("0", TypeError)):
        with pytest.raises(err, match="tol"):
            arpack_svd(G, 3, tol=tol)


def test_top_svd_refuses_unknown_options(G):
    with pytest.raises(TypeError, match=r"unknown option\(s\) 'n_iters'.*valid options: "
                                        r"n_oversamples, n_iter"):
        top_svd(G, 3, solver="randomized", n_iters=3)
    with pytest.raises(TypeError, match="'tol'.*valid options: none"):
        top_svd(G, 3, solver="dense", tol=1e-3)
    with pytest.raises(TypeError, match="'n_oversamples'.*valid options: tol"):
        top_svd(G, 3, solver="arpack", n_oversamples=3)
    with pytest.raises(TypeError, match="'n_landmarks'.*n_row_landmarks"):
        top_svd(G, 3, solver="nystrom", n_landmarks=10)
    with pytest.raises(TypeError, match="'oversample'"):
        top_svd(G, 3, oversample=3)
    # 'auto' accepts the options of the solvers it may pick, and uses them
    res = top_svd(G, 3, n_iter=2, n_oversamples=4, tol=0.0)
    np.testing.assert_allclose(res.s, np.linalg.svd(G, compute_uv=False)[:3], rtol=1e-10)
    with pytest.raises(ValueError, match="unknown solver"):
        top_svd(G, 3, solver="svd")


def test_nystrom_options_are_checked(G):
    cases = [
        ({"tol": -0.1}, ValueError, "tol"),
        ({"tol": 0}, ValueError, "tol must be > 0"),
        ({"estimate": "guess"}, ValueError, "estimate"),
        ({"weights": "equal"}, ValueError, "weights"),
        ({"max_landmarks": 0}, ValueError, "max_landmarks"),
        ({"n_probes": 1.5}, TypeError, "n_probes"),
        ({"rcond": -1.0}, ValueError, "rcond"),
        ({"normalize": "yes"}, TypeError, "normalize"),
        ({"sampling": "random"}, ValueError, "sampling"),
        ({"sampling": [1, 2, 3]}, TypeError, "sampling"),
        ({"row_points": np.ones((5, 2))}, ValueError, "row_points has 5 rows; expected 30"),
        ({"col_points": np.full((20, 2), np.nan)}, ValueError, "col_points contains NaN"),
        ({"core_solver": "lapack"}, ValueError, "core_solver"),
        ({"working_memory": 0}, ValueError, "working_memory"),
        ({"working_memory": True}, TypeError, "working_memory"),
    ]
    for kwargs, err, match in cases:
        with pytest.raises(err, match=match):
            asymmetric_nystrom(G, 3, 10, 10, random_state=0, **kwargs)
    for bad in (0, -3, 2.5, "10"):
        with pytest.raises((TypeError, ValueError), match="n_row_landmarks"):
            asymmetric_nystrom(G, 3, bad, 10)
        with pytest.raises((TypeError, ValueError), match="n_col_landmarks"):
            symmetric_nystrom(G, 3, 10, bad)
    with pytest.raises(ValueError, match="eig_solver"):
        symmetric_nystrom(G, 3, 10, 10, eig_solver="lobpcg")
    with pytest.raises(ValueError, match="row_sampling"):
        symmetric_nystrom(G, 3, row_sampling=np.array([0, 0, 1, 2]))
    with pytest.raises(TypeError, match="LinearOperator"):
        asymmetric_nystrom(aslinearoperator(G), 3)


def test_nystrom_fixed_indices_in_symmetric_baseline(G):
    I = np.arange(0, 30, 2)
    J = np.arange(0, 20, 2)
    res = symmetric_nystrom(G, 3, row_sampling=I, col_sampling=J)
    np.testing.assert_array_equal(res.row_landmarks, I)
    np.testing.assert_array_equal(res.col_landmarks, J)


def test_eta_validates_its_inputs():
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.standard_normal((8, 3)))[0]
    V = np.linalg.qr(rng.standard_normal((6, 3)))[0]
    s = np.array([3.0, 2.0, 1.0])
    assert eta(U.tolist(), V.tolist(), U, V, s) == 0.0
    assert eta_strict(U, V, -U, V) == pytest.approx(0.0, abs=1e-12)
    bad = U.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="U_approx .* NaN"):
        eta(U, V, bad, V, s)
    with pytest.raises(ValueError, match="V .*complex"):
        eta(U, V + 0j, U, V, s)
    with pytest.raises(ValueError, match="U .*2-D"):
        eta(U[:, 0], V, U, V, s)
    with pytest.raises(TypeError, match="V_approx must be a dense array"):
        eta(U, V, U, sp.csr_matrix(V), s)
    with pytest.raises(ValueError, match="singular_values contains NaN"):
        eta(U, V, U, V, [1.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="weights must be >= 0"):
        eta(U, V, U, V, weights=[1.0, -1.0, 1.0])
    with pytest.raises(TypeError, match="weights must be one of"):
        eta(U, V, U, V, weights=2.0)
    with pytest.raises(ValueError, match="weights must be one of"):
        eta(U, V, U, V, weights="flat")


def test_flip_signs_validates_and_keeps_inputs():
    U = np.array([[1.0, -2.0], [-3.0, 1.0]])
    V = np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 2.0]])
    U0, V0 = U.copy(), V.copy()
    Uf, Vf = flip_signs(U, V)
    np.testing.assert_array_equal(U, U0)
    np.testing.assert_array_equal(V, V0)
    np.testing.assert_array_equal(Uf @ Vf.T, U @ V.T)
    assert (Uf[np.argmax(np.abs(Uf), axis=0), [0, 1]] > 0).all()
    with pytest.raises(ValueError, match="U has 2 columns but V has 1"):
        flip_signs(U, V[:, :1])


def test_kernel_matrix_and_operator_inputs_still_work(G):
    rng = np.random.default_rng(1)
    X, Z = rng.standard_normal((25, 3)), rng.standard_normal((18, 3))
    km = KernelMatrix(get_kernel("rbf"), X, Z)
    ref = np.linalg.svd(km.to_array(), compute_uv=False)[:3]
    for solver in ("dense", "arpack", "randomized", "auto"):
        np.testing.assert_allclose(top_svd(km, 3, solver=solver, random_state=0).s, ref,
                                   rtol=1e-6)
    np.testing.assert_allclose(top_svd(aslinearoperator(G), 3).s,
                               np.linalg.svd(G, compute_uv=False)[:3], rtol=1e-10)
    with pytest.raises(ValueError, match="complex LinearOperator"):
        top_svd(aslinearoperator(G + 1j), 3)


def test_dense_svd_in_place_paths_match_the_reference(G):
    """Formed matrices (sparse, operator, kernel) are factorised in place (transposed view);
    a user's array is never modified."""
    ref_s = np.linalg.svd(G, compute_uv=False)[:4]
    G0 = G.copy()
    for A in (G, np.asfortranarray(G), sp.csr_matrix(G), aslinearoperator(G)):
        res = dense_svd(A, 4)
        np.testing.assert_allclose(res.s, ref_s, rtol=1e-12)
        np.testing.assert_allclose(G @ res.V, res.U * res.s, atol=1e-12)
    np.testing.assert_array_equal(G, G0)
