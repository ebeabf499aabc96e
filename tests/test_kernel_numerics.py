"""Numerical trust of the kernel layer (issue 12): data far from the origin, huge and tiny
inputs, parameter validation, float32 end to end. Every value is checked against a direct
float64 computation from coordinate differences (no norm expansion)."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from asymkern.kernels import KernelMatrix, get_kernel
from asymkern.kernels.divergence import _gmm_logpdf

OFFSETS = [1e4, 1e6, 1e8, 1e10, 1e12]
DIST = {"rbf": {"gamma": 0.5}, "cauchy": {}, "sne": {"gamma": 0.5}, "t": {},
        "laplacian": {"gamma": 0.5}}
# a tolerance meaningful for the dtype: the values are O(1) and the error bound of the
# centred expansion is about 2(d+2)·eps·gamma·(‖x−c‖² + ‖z−c‖²) = O(100·eps) here
ATOL = {np.float32: 3e-6, np.float64: 1e-13}


def direct_sq(X, Z):
    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    return ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)


def reference(name, X, Z, R=None):
    R = Z if R is None else R
    D2 = direct_sq(X, Z)
    if name == "rbf":
        return np.exp(-0.5 * D2)
    if name == "cauchy":
        return 1.0 / (1.0 + D2)
    if name == "laplacian":
        X64, Z64 = np.asarray(X, np.float64), np.asarray(Z, np.float64)
        return np.exp(-0.5 * np.abs(X64[:, None, :] - Z64[None, :, :]).sum(-1))
    if name == "sne":
        return np.exp(-0.5 * D2) / np.exp(-0.5 * direct_sq(X, R)).sum(1, keepdims=True)
    if name == "t":
        return (1 / (1 + D2)) / (1 / (1 + direct_sq(X, R))).sum(1, keepdims=True)
    raise KeyError(name)


@pytest.fixture
def base_sets():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((30, 4))
    Z = rng.standard_normal((20, 4))
    Z[:4] = X[:4]  # exact duplicates across the two sets
    return X, Z


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("offset", [0.0] + OFFSETS)
@pytest.mark.parametrize("name", sorted(DIST))
def test_distance_kernels_match_direct_differences_far_from_origin(name, offset, dtype,
                                                                   base_sets):
    X0, Z0 = base_sets
    X = (X0 + offset).astype(dtype)
    Z = (Z0 + offset).astype(dtype)
    Xb, Zb = X.copy(), Z.copy()
    K = get_kernel(name, **DIST[name])(X, Z)
    assert K.dtype == dtype
    assert np.all(np.isfinite(K)) and K.min() >= 0 and K.max() <= 1
    # the reference sees the same (possibly rounded) inputs: at offsets where float32 cannot
    # hold the unit-scale noise (1e8 and above) the points collapse, and so does the reference
    np.testing.assert_allclose(K, reference(name, X, Z), rtol=0, atol=ATOL[dtype])
    np.testing.assert_array_equal(X, Xb)  # inputs untouched
    np.testing.assert_array_equal(Z, Zb)
    if name in ("rbf", "cauchy", "laplacian"):
        assert np.all(K[np.arange(4), np.arange(4)] == 1)  # duplicates: exactly 1


@pytest.mark.parametrize("name", ["rbf", "cauchy", "sne", "t"])
@pytest.mark.parametrize("dtype,offset,atol", [(np.float64, 1e4, 1e-9), (np.float64, 1e8, 1e-5),
                                               (np.float32, 1e3, 5e-3)])
def test_translation_invariance_where_the_input_holds_the_differences(name, dtype, offset,
                                                                      atol, base_sets):
    """Shifting the data must not change the kernel, up to the rounding of the input itself
    (spacing eps·offset per coordinate)."""
    X0, Z0 = base_sets
    k = get_kernel(name, **DIST[name])
    K0 = k(X0.astype(dtype), Z0.astype(dtype))
    K1 = k((X0 + offset).astype(dtype), (Z0 + offset).astype(dtype))
    np.testing.assert_allclose(K1, K0, rtol=0, atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("offset", [0.0, 1e4, 1e8, 1e12])
def test_rbf_diagonal_is_exactly_one_and_normalised_rows_sum_to_one(dtype, offset, base_sets):
    X = (base_sets[0] + offset).astype(dtype)
    for name in ("rbf", "cauchy"):
        K = get_kernel(name, **DIST[name])(X)
        assert np.all(np.diag(K) == 1), name
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for name in ("sne", "t"):
        for working_memory in (None, 0.0005):  # one block, or many row/reference blocks
            km = KernelMatrix(get_kernel(name, **DIST[name]), X, working_memory=working_memory)
            G = km.to_array()
            assert G.dtype == dtype
            np.testing.assert_allclose(G.sum(1, dtype=np.float64), 1.0, rtol=rtol)
            G2 = get_kernel(name, **DIST[name])(X, base_sets[1].astype(dtype) + dtype(offset),
                                                reference=X)
            assert np.all(np.isfinite(G2)) and G2.min() >= 0 and G2.max() <= 1


def test_blocking_does_not_change_values_far_from_origin(base_sets, rng):
    X0, Z0 = base_sets
    X, Z = X0 + 1e8, Z0 + 1e8
    R = rng.standard_normal((13, 4)) + 1e8
    for name in ("rbf", "sne", "t"):
        k = get_kernel(name, **DIST[name])
        ref = reference(name, X, Z, R if k.row_normalized else None)
        kw = {"reference": R} if k.row_normalized else {}
        one = KernelMatrix(k, X, Z, **kw).to_array()
        km = KernelMatrix(k, X, Z, working_memory=0.0003, **kw)
        assert km.block_rows() < X.shape[0]
        np.testing.assert_allclose(km.to_array(), one, rtol=1e-14, atol=1e-15)
        rows, cols = np.array([3, 0, 29]), np.array([1, 19, 2])
        np.testing.assert_allclose(km.block(rows, cols), ref[np.ix_(rows, cols)], atol=1e-13)
        np.testing.assert_allclose(km.cols(cols), ref[:, cols], atol=1e-13)
        np.testing.assert_allclose(km.rows(rows), ref[rows], atol=1e-13)
        V = rng.standard_normal((Z.shape[0], 2))
        np.testing.assert_allclose(km.matmat(V), ref @ V, atol=1e-12)


def test_lssvm_is_translation_invariant_with_an_rbf_kernel(rng):
    """The issue's symptom: an LS-SVM on data at 1e8 silently lost its accuracy."""
    from asymkern.lssvm import LSSVMClassifier

    X = rng.standard_normal((80, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    kw = dict(kernel="rbf", kernel_params={"gamma": 0.5}, C=10.0)
    p0 = LSSVMClassifier(**kw).fit(X[:60], y[:60]).decision_function(X[60:])
    p1 = LSSVMClassifier(**kw).fit(X[:60] + 1e8, y[:60]).decision_function(X[60:] + 1e8)
    np.testing.assert_allclose(p1, p0, atol=1e-4)


# ---------------------------------------------------------------- huge and tiny inputs
@pytest.mark.parametrize("dtype,k", [(np.float64, 530), (np.float32, 67), (np.float64, -500),
                                     (np.float32, -60)])
def test_power_of_two_rescaled_data_give_the_unscaled_kernel(dtype, k, base_sets):
    """X·2^k with gamma·2^(−2k) is the same kernel as X with gamma: ‖x‖² of the scaled data
    over- or underflows, the result must not."""
    X0, Z0 = base_sets
    X = (X0 * 2.0**k).astype(dtype)
    Z = (Z0 * 2.0**k).astype(dtype)
    atol = 3e-6 if dtype == np.float32 else 1e-13
    g = math.ldexp(0.5, -2 * k)
    cases = [("rbf", {"gamma": 0.5}, {"gamma": g}), ("sne", {"gamma": 0.5}, {"gamma": g})]
    if abs(2 * k) < 1000:  # gamma = 2^(-2k) representable
        cases += [("cauchy", {"gamma": 1.0}, {"gamma": math.ldexp(1.0, -2 * k)}),
                  ("t", {"gamma": 1.0}, {"gamma": math.ldexp(1.0, -2 * k)})]
    for name, params, scaled in cases:
        K = get_kernel(name, **scaled)(X, Z)
        assert K.dtype == dtype
        np.testing.assert_allclose(K, get_kernel(name, **params)(X0.astype(dtype),
                                                                   Z0.astype(dtype)),
                                   rtol=0, atol=atol, err_msg=name)


def test_huge_inputs_give_finite_values_or_named_errors(base_sets):
    X0, Z0 = base_sets
    X, Z = X0 * 1e160, Z0 * 1e160
    for name in ("rbf", "cauchy", "laplacian"):
        K = get_kernel(name)(X, Z)
        assert np.all(np.isfinite(K)) and K.min() >= 0 and K.max() <= 1
        # gamma‖x − z‖² ≈ 1e320: every distinct pair has value 0 (to the float range;
        # the Cauchy values 1/(1 + 1e320) are held as ≤ 1/max-float)
        assert np.all(K[np.arange(4), np.arange(4)] == 1)
        off = np.ones(K.shape, bool)
        off[np.arange(4), np.arange(4)] = False
        assert K[off].max() <= (1e-300 if name == "cauchy" else 0.0)
    G = get_kernel("sne")(X)  # row i: only the diagonal survives
    np.testing.assert_array_equal(G, np.eye(X.shape[0]))
    # no duplicates: the nearest reference point takes all the mass (exp(−1e320·Δ) = 0)
    G = get_kernel("sne")(X, Z[4:])
    np.testing.assert_array_equal(G, np.eye(Z.shape[0] - 4)[direct_sq(X0, Z0[4:]).argmin(1)])
    # every exponent overflows (gamma at the float maximum, all distances > 1): named error
    with pytest.raises(OverflowError, match="kernel 'sne'.*normaliser"):
        get_kernel("sne", gamma=1e308)(X0, Z0[4:] + 10.0)
    for name in ("linear", "poly"):
        with pytest.raises(OverflowError, match=f"kernel '{get_kernel(name).name}'.*overflowed"):
            get_kernel(name)(X, Z)
    with pytest.raises(OverflowError, match="kernel 'linear'.*float32"):
        get_kernel("linear")((X0 * 1e20).astype(np.float32))
    # large but representable: no error
    assert np.all(np.isfinite(get_kernel("linear")(X0 * 1e100, Z0 * 1e100)))


def test_sparse_distances_are_clipped_scaled_and_exact_on_duplicates(base_sets):
    X0, Z0 = base_sets
    X0 = np.where(np.abs(X0) < 0.5, 0.0, X0)
    Z0 = np.where(np.abs(Z0) < 0.5, 0.0, Z0)
    for e in (0, 530, -500):
        X, Z = X0 * 2.0**e, Z0 * 2.0**e
        for name in ("rbf", "sne"):
            k = get_kernel(name, gamma=math.ldexp(0.5, -2 * e))
            Ks = k(sp.csr_matrix(X), sp.csr_matrix(Z))
            np.testing.assert_allclose(Ks, k(X, Z), rtol=0, atol=1e-13)
        Kd = get_kernel("rbf")(sp.csr_matrix(X))
        assert np.all(np.diag(Kd) == 1) and np.all(np.isfinite(Kd))


def test_gmm_log_density_has_no_cancellation_far_from_origin(rng):
    m, d = 3, 2
    W = rng.random((2, m))
    W /= W.sum(1, keepdims=True)
    Var = rng.random((2, m, d)) + 0.5
    for offset in (0.0, 1e8):
        Mu = rng.standard_normal((2, m, d)) + offset
        S = rng.standard_normal((50, d)) + offset
        got = _gmm_logpdf(S, W, Mu, Var)
        diff = S[None, None, :, :] - Mu[:, :, None, :]
        quad = (diff**2 / Var[:, :, None, :]).sum(-1)
        logc = (np.log(W)[:, :, None] - 0.5 * (d * np.log(2 * np.pi)
                + np.log(Var).sum(-1))[:, :, None] - 0.5 * quad)
        ref = np.log(np.exp(logc).sum(1))
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------- parameter validation
BAD = [
    ("poly", {"coef0": np.nan}, ValueError, "coef0"),
    ("poly", {"coef0": np.inf}, ValueError, "coef0"),
    ("poly", {"degree": -0.5}, ValueError, "degree"),  # a real degree >= 0 is accepted
    ("poly", {"degree": np.nan}, ValueError, "degree"),
    ("poly", {"degree": "3"}, TypeError, "degree"),
    ("poly", {"degree": True}, TypeError, "degree"),
    ("poly", {"gamma": np.nan}, ValueError, "gamma"),
    ("poly", {"gamma": -1.0}, ValueError, "gamma"),
    ("rbf", {"gamma": np.inf}, ValueError, "gamma"),
    ("rbf", {"gamma": 0.0}, ValueError, "gamma"),
    ("rbf", {"bandwidth": np.nan}, ValueError, "bandwidth"),
    ("rbf", {"bandwidth": 1e-200}, ValueError, "bandwidth"),
    ("rbf", {"bandwidth": 1e200}, ValueError, "bandwidth"),
    ("rbf", {"gamma": 1.0, "bandwidth": 1.0}, ValueError, "either gamma or bandwidth"),
    ("rbf", {"gamma": "1"}, TypeError, "gamma"),
    ("sne", {"bandwidth": -2.0}, ValueError, "bandwidth"),
    ("laplacian", {"gamma": np.nan}, ValueError, "gamma"),
    ("cauchy", {"scale": 0.0}, ValueError, "scale"),
    ("cauchy", {"scale": 1e-320}, ValueError, "scale"),
    ("t", {"scale": np.nan}, ValueError, "scale"),
    ("kl_histogram", {"a": np.nan}, ValueError, "a"),
    ("kl_histogram", {"eps": 0.0}, ValueError, "eps"),
    ("kl_gmm", {"n_samples": 0}, ValueError, "n_samples"),
    ("kl_gmm", {"n_components": 2.5}, ValueError, "n_components"),
    ("kl_gmm", {"a": -1.0}, ValueError, "a"),
    ("rbf", {"sigma": 1.0}, ValueError, "sigma"),
    ("poly", {"degre": 2}, ValueError, "degre"),
]


@pytest.mark.parametrize("name,params,exc,word", BAD)
def test_bad_kernel_parameters_raise_named_errors_at_construction(name, params, exc, word):
    with pytest.raises(exc, match=word):
        get_kernel(name, **params)


@pytest.mark.parametrize("name,attr,value", [("poly", "coef0", np.nan), ("poly", "degree", -1),
                                             ("rbf", "gamma", -1.0), ("sne", "bandwidth", 0.0),
                                             ("cauchy", "scale", np.inf),
                                             ("laplacian", "gamma", np.inf),
                                             ("kl_histogram", "a", np.nan)])
def test_parameters_changed_after_construction_are_caught_at_use(name, attr, value):
    X = np.abs(np.random.default_rng(0).standard_normal((5, 3)))
    k = get_kernel(name)
    setattr(k, attr, value)
    with pytest.raises(ValueError, match=attr):
        k(X)
    with pytest.raises(ValueError, match=attr):
        KernelMatrix(k, X)


def test_callable_kernel_flags_are_checked():
    with pytest.raises(TypeError, match="is_symmetric"):
        get_kernel(lambda A, B: A @ B.T, is_symmetric="yes")


# ---------------------------------------------------------------- float32 end to end
@pytest.mark.parametrize("name", ["rbf", "sne", "t", "cauchy", "laplacian", "linear", "poly"])
@pytest.mark.parametrize("center", [False, True])
def test_float32_stays_float32_through_the_kernel_matrix(name, center, base_sets):
    X, Z = (a.astype(np.float32) + np.float32(1e3) for a in base_sets)
    if name in ("linear", "poly"):
        X, Z = X - np.float32(1e3), Z - np.float32(1e3)
    km = KernelMatrix(get_kernel(name), X, Z, center=center, working_memory=0.0005)
    km64 = KernelMatrix(get_kernel(name), X.astype(np.float64), Z.astype(np.float64),
                        center=center)
    G64 = km64.to_array()
    V = np.ones((Z.shape[0], 2), np.float32)
    U = np.ones((X.shape[0], 3), np.float32)
    outs = {
        "to_array": km.to_array(), "block": km.block([1, 2], [0, 5]), "rows": km.rows([3]),
        "cols": km.cols([0, 4]), "matmat": km.matmat(V), "rmatmat": km.rmatmat(U),
        "matvec": km.matvec(V[:, 0]), "row_sums": km.row_sums(), "col_sums": km.col_sums(),
        "row_means": km.means()[0], "col_means": km.means()[1],
        "blocks": np.vstack([B for _, B in km.iter_row_blocks()]),
    }
    if km.kernel.row_normalized:
        outs["row_normalizers"] = km.row_normalizers()
    for what, val in outs.items():
        assert val.dtype == np.float32, what
    scale = max(1.0, float(np.abs(G64).max()))
    np.testing.assert_allclose(outs["to_array"], G64, rtol=0, atol=2e-5 * scale)
    np.testing.assert_allclose(outs["blocks"], G64, rtol=0, atol=2e-5 * scale)
    np.testing.assert_allclose(outs["matmat"], G64 @ V, rtol=0, atol=1e-4 * scale * Z.shape[0])
    np.testing.assert_allclose(outs["rmatmat"], G64.T @ U, rtol=0,
                               atol=1e-4 * scale * X.shape[0])


def test_values_do_not_depend_on_the_order_of_the_columns(base_sets, rng):
    """The centre is an exactly summed mean, so permuting Z permutes the columns bitwise
    (Nyström identities with landmarks = a permutation of the data rely on it)."""
    X0, Z0 = base_sets
    for offset in (0.0, 1e8):
        X, Z = X0 + offset, Z0 + offset
        p = rng.permutation(Z.shape[0])
        for name in ("rbf", "cauchy", "sne", "t"):
            k = get_kernel(name, **DIST[name])
            if k.row_normalized:  # the normaliser sums in another order: rounding only
                np.testing.assert_allclose(k(X, Z[p]), k(X, Z)[:, p], rtol=1e-14, atol=1e-16)
            else:
                np.testing.assert_array_equal(k(X, Z[p]), k(X, Z)[:, p])


def test_products_refuse_operands_of_the_wrong_shape_or_non_finite():
    """G·V and Gᵀ·U check their operand: a (2m,) vector was reshaped silently to (m, 2)."""
    from asymkern import KernelMatrix, get_kernel

    rng = np.random.default_rng(0)
    G = KernelMatrix(get_kernel("rbf"), rng.random((8, 2)), rng.random((3, 2)))
    with pytest.raises(ValueError, match="V must have shape"):
        G.matmat(np.ones(6))
    with pytest.raises(ValueError, match="U must have shape"):
        G.rmatmat(np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        G.matmat(np.full((3, 2), np.nan))
    with pytest.raises(TypeError, match="real numeric"):
        G.matmat(np.ones(3, dtype=complex))
    dense = G.to_array()
    np.testing.assert_allclose(G.matmat(np.arange(3.0)), dense @ np.arange(3.0), rtol=1e-12)
    np.testing.assert_allclose(G.rmatmat(np.arange(8.0)), dense.T @ np.arange(8.0), rtol=1e-12)


@pytest.mark.parametrize("name", ["rbf", "sne", "cauchy"])
def test_points_far_from_the_centre_are_not_taken_for_duplicates(name):
    """Values spanning 1e22 to 1e150 in one column: the mean (the centre of the expansion)
    sits near the largest, and x − c rounds away every difference between the small ones.
    The entries under the rounding bound are recomputed from the data themselves, so those
    points stay apart (the RBF kernel gave 1 between points 1e99 apart)."""
    col = np.array([-2.3e22, 2.2e-158, 1.04e150, 2.0e150, -5.5e38, -1.7e150, 5.0e149,
                    2.04e150, -6.1e145, 1.1e-158, -2.07e149, -7.4e-46, -1.17e150, -6.9e121,
                    1.01e150])
    X = col[:, None]
    k = get_kernel(name, gamma=1.0)
    got = KernelMatrix(k, X).to_array()
    d2 = (col[:, None] - col[None, :]) ** 2  # exact here: float64 of exact differences
    with np.errstate(over="ignore"):
        want = {"rbf": np.exp(-d2), "cauchy": 1.0 / (1.0 + d2)}.get(name)
        if want is None:  # SNE: the RBF values normalised over each row
            E = np.exp(-d2)
            want = E / E.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    tiny = [1, 9, 11]  # within 1e-45 of each other: duplicates to every digit of the kernel
    assert np.all(got[np.ix_(tiny, tiny)] == got[1, 1])
