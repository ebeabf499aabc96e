"""Edge cases of the asymmetric Nyström solver, landmark selection, the η metric and the
Nyström-machine approximation errors: input validation of the extensions and of K, and
results that do not depend on the scale of the data (exact power-of-two rescaling)."""

import numpy as np
import pytest
import scipy.sparse as sp

from asymkern.kernels import KernelMatrix
from asymkern.landmarks import (
    kmeans_landmarks,
    leverage_directions,
    leverage_scores,
    select_landmarks,
)
from asymkern.linalg import asymmetric_nystrom, eta, eta_strict
from asymkern.nystrom import (
    NystromKernelRidge,
    approximation_error,
    gsa_approximation_error,
    lla_approximation_error,
)

SCALES = (1e-200, 2.0**-700, 1e160, 2.0**600)


# ------------------------------------------------------------------ NystromResult.extend_*
@pytest.fixture(scope="module")
def nys():
    rng = np.random.default_rng(0)
    X, Z = rng.standard_normal((30, 3)), rng.standard_normal((20, 3))
    res = asymmetric_nystrom(KernelMatrix("rbf", X, Z), 2, 10, 10, random_state=0)
    Xn = rng.standard_normal((4, 3))
    return res, Z, X, Xn


@pytest.mark.parametrize("dtype", [np.int64, np.int32, bool])
def test_extend_rows_integer_and_bool_values_are_not_truncated(nys, dtype):
    res, Z, _, Xn = nys
    K = KernelMatrix("rbf", Xn, Z).cols(res.col_landmarks) > 0.3
    want = res.extend_rows(K.astype(np.float64))
    assert np.abs(want).max() > 0.1  # a case where truncation to int/bool shows
    got = res.extend_rows(K.astype(dtype))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_extend_cols_integer_values_and_sparse_input(nys):
    res, _, X, _ = nys
    K = (X[res.row_landmarks] @ X[:5].T > 0).T.astype(np.int64)  # (5, s_x)
    want = res.extend_cols(K.astype(np.float64))
    np.testing.assert_allclose(res.extend_cols(K), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res.extend_cols(sp.csr_matrix(K)), want, rtol=1e-12,
                               atol=1e-12)
    K32 = K.astype(np.float32)
    assert res.extend_cols(K32).dtype == np.float32  # float32 kept


@pytest.mark.parametrize("bad, exc, match", [
    (np.nan, ValueError, "K_rows contains NaN"),
    (np.inf, ValueError, "K_rows contains NaN"),
    (1j, ValueError, "K_rows is complex"),
])
def test_extend_rows_refuses_non_finite_and_complex(nys, bad, exc, match):
    res = nys[0]
    K = np.ones((2, 10)) * 0.5
    K = K + bad if np.iscomplexobj(bad) else np.where(np.eye(2, 10) > 0, bad, K)
    before = K.copy()
    with pytest.raises(exc, match=match):
        res.extend_rows(K)
    np.testing.assert_array_equal(K, before)


def test_extend_shape_errors_name_the_argument(nys):
    res = nys[0]
    with pytest.raises(ValueError, match="K_cols must have shape"):
        res.extend_cols(np.ones((2, 3)))
    with pytest.raises(ValueError, match="K_rows"):
        res.extend_rows(np.ones(10))
    with pytest.raises(TypeError, match="K_rows"):
        res.extend_rows(np.array([["a"] * 10]))


# ------------------------------------------------------------------------ eta / eta_strict
@pytest.fixture(scope="module")
def uv():
    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.standard_normal((20, 3)))
    V, _ = np.linalg.qr(rng.standard_normal((15, 3)))
    return U, V


@pytest.mark.parametrize("c", (1e-160, 1e-200, 1e160, 1e300, 2.0**-1000))
def test_eta_does_not_depend_on_the_scale_of_the_vectors(uv, c):
    U, V = uv
    assert eta_strict(U, V, U * c, V * c) < 1e-12
    assert eta(U, V, U * c, V * c, singular_values=[3, 2, 1]) < 1e-12
    assert eta_strict(U * c, V * c, U, V) < 1e-12
    # a genuine error is measured the same at every scale
    Ua = U.copy()
    Ua[:, 1] = U[:, 1] + U[:, 2]  # 45 degrees: 1 − cos = 1 − 1/√2
    want = eta_strict(U, V, Ua, V)
    np.testing.assert_allclose(want, (1 - 1 / np.sqrt(2)) / 3, rtol=1e-12)
    np.testing.assert_allclose(eta_strict(U, V, Ua * c, V), want, rtol=1e-10)


def test_eta_columns_of_mixed_scale_and_inputs_untouched(uv):
    U, V = uv
    Ua = U * np.array([1e-200, 1.0, 1e160])
    before = Ua.copy()
    assert eta_strict(U, V, Ua, V) < 1e-12
    np.testing.assert_array_equal(Ua, before)


# -------------------------------------------------------------------------------- k-means
def _clusters(n_per=10, seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.standard_normal((n_per, 2)) * 0.1 + c
                      for c in ([0, 0], [5, 0], [0, 5])])


@pytest.mark.parametrize("sc", SCALES)
def test_kmeans_landmarks_do_not_depend_on_scale(sc):
    X = _clusters()
    idx0, C0 = kmeans_landmarks(X, 3, random_state=0)
    assert sorted(int(i) // 10 for i in idx0) == [0, 1, 2]
    Xs = X * sc
    before = Xs.copy()
    idx, C = kmeans_landmarks(Xs, 3, random_state=0)
    np.testing.assert_array_equal(idx, idx0)
    np.testing.assert_allclose(C / sc, C0, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(Xs, before)
    np.testing.assert_array_equal(select_landmarks(Xs, 3, "kmeans", random_state=0),
                                  select_landmarks(X, 3, "kmeans", random_state=0))


@pytest.mark.parametrize("sc", (1e-200, 1e160))
def test_kmeans_landmarks_sparse_input_at_extreme_scale(sc):
    X = _clusters()
    idx0 = kmeans_landmarks(sp.csr_matrix(X), 3, return_centers=False, random_state=0)
    idx = kmeans_landmarks(sp.csr_matrix(X * sc), 3, return_centers=False, random_state=0)
    np.testing.assert_array_equal(idx, idx0)


@pytest.mark.parametrize("sc", (1e-200, 1e160))
def test_sampled_kmeans_path_and_nearest_points_do_not_depend_on_scale(sc):
    from asymkern.landmarks import nearest_points
    from asymkern.linalg.nystrom import _kmeans_landmarks

    X = _clusters(n_per=40, seed=1)
    want = _kmeans_landmarks(X, 3, np.random.RandomState(0))
    assert sorted({int(i) // 40 for i in want}) == [0, 1, 2]
    got = _kmeans_landmarks(X * sc, 3, np.random.RandomState(0))
    np.testing.assert_array_equal(got, want)
    C = X[[3, 50, 100]] + 0.01
    np.testing.assert_array_equal(nearest_points(C * sc, X * sc), nearest_points(C, X))
    np.testing.assert_array_equal(nearest_points(C * sc, sp.csr_matrix(X * sc)),
                                  nearest_points(C, X))


def test_asymmetric_nystrom_kmeans_sampling_at_extreme_scale():
    X = _clusters(n_per=20)
    G = X @ X.T + 1.0
    base = asymmetric_nystrom(G, 2, 6, 6, random_state=0, sampling="kmeans")
    for sc in (1e-200, 1e150):
        r = asymmetric_nystrom(G * sc, 2, 6, 6, random_state=0, sampling="kmeans")
        np.testing.assert_array_equal(r.row_landmarks, base.row_landmarks)
        np.testing.assert_allclose(r.s / sc, base.s, rtol=1e-10)


# ------------------------------------------------------- leverage sampling of asymmetric G
@pytest.fixture(scope="module")
def lowrank():
    rng = np.random.default_rng(0)
    return rng.standard_normal((80, 5)) @ rng.standard_normal((5, 60))


@pytest.mark.parametrize("sc", (1e-160, 2.0**-600, 1e154, 2.0**600))
def test_asymmetric_nystrom_leverage_does_not_depend_on_scale(lowrank, sc):
    base = asymmetric_nystrom(lowrank, 3, 30, 30, random_state=0, sampling="leverage")
    r = asymmetric_nystrom(lowrank * sc, 3, 30, 30, random_state=0, sampling="leverage")
    np.testing.assert_array_equal(r.row_landmarks, base.row_landmarks)
    np.testing.assert_array_equal(r.col_landmarks, base.col_landmarks)
    np.testing.assert_allclose(r.s / sc, base.s, rtol=1e-10)


def test_leverage_running_scale_over_blocks_of_mixed_magnitude(lowrank):
    # zero rows first, then rows 1e-160 and 1e-300 times smaller: the Gram accumulates over
    # many blocks (tiny working_memory) and is rescaled as the running maximum grows
    G = lowrank.copy()
    G[:20] = 0.0
    G[20:30] *= 1e-140
    base = asymmetric_nystrom(G, 3, 20, 20, random_state=0, sampling="leverage",
                              working_memory=0.01)
    r = asymmetric_nystrom(G * 1e-160, 3, 20, 20, random_state=0, sampling="leverage",
                           working_memory=0.01)
    np.testing.assert_array_equal(r.row_landmarks, base.row_landmarks)
    np.testing.assert_array_equal(r.col_landmarks, base.col_landmarks)
    assert not np.isin(np.arange(20), base.row_landmarks).any()  # zero rows: score 0


# ---------------------------------------------------------------- leverage_scores (kernel)
def test_leverage_scores_zero_sketch_are_uniform_zeros():
    X = np.zeros((10, 3))
    s = leverage_scores(X, 2, kernel="linear", random_state=0)
    np.testing.assert_array_equal(s, np.zeros(10))
    idx = select_landmarks(X, 3, "leverage", kernel="linear", random_state=0)
    assert idx.shape == (3,) and np.unique(idx).size == 3
    assert leverage_directions(np.zeros((0, 0)), 2).shape == (0, 0)
    assert leverage_directions(np.zeros((3, 3)), 2).shape == (3, 0)


@pytest.mark.parametrize("kernel, params", [("linear", None),
                                            ("polynomial", {"degree": 2, "coef0": 0.0})])
@pytest.mark.parametrize("sc", (1e-200, 2.0**-700, 1e160))
def test_leverage_scores_of_homogeneous_kernels_do_not_depend_on_scale(kernel, params, sc):
    X = np.random.default_rng(0).standard_normal((40, 3))
    want = leverage_scores(X, 3, kernel=kernel, kernel_params=params, random_state=0)
    got = leverage_scores(X * sc, 3, kernel=kernel, kernel_params=params, random_state=0)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(got.sum(), 3.0, rtol=1e-10)
    np.testing.assert_array_equal(
        select_landmarks(X * sc, 4, "leverage", kernel=kernel, kernel_params=params,
                         random_state=0),
        select_landmarks(X, 4, "leverage", kernel=kernel, kernel_params=params,
                         random_state=0))


def test_leverage_scores_tiny_kernel_values():
    # a kernel whose values are ~1e-300: K_mm, F and FᵀF are rescaled by powers of two
    X = np.random.default_rng(1).standard_normal((30, 2))

    def tiny(A, B):
        return 1e-300 * np.exp(-0.5 * ((A[:, None] - B[None]) ** 2).sum(-1))

    def unit(A, B):
        return np.exp(-0.5 * ((A[:, None] - B[None]) ** 2).sum(-1))

    want = leverage_scores(X, 4, kernel=unit, random_state=0)
    got = leverage_scores(X, 4, kernel=tiny, random_state=0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


# ----------------------------------------------------------------- approximation errors
@pytest.fixture(scope="module")
def krr_pair():
    rng = np.random.RandomState(0)
    X = rng.randn(30, 3)
    y = np.sin(X[:, 0])
    ex = NystromKernelRidge(mode="exact", alpha=0.1, gamma=0.5).fit(X, y)
    ap = NystromKernelRidge(mode="lla", n_landmarks=10, alpha=0.1, gamma=0.5,
                            random_state=0).fit(X, y)
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    return ap, ex, K


@pytest.mark.parametrize("bad, exc, match", [
    ("nan", ValueError, "K contains NaN"),
    ("inf", ValueError, "K contains NaN"),
    ("complex", ValueError, "K is complex"),
    ("shape", ValueError, r"K must be the \(30, 30\)"),
    ("text", TypeError, "K must be numeric"),
])
def test_error_functions_validate_K(krr_pair, bad, exc, match):
    ap, ex, K = krr_pair
    Kb = {"nan": np.where(np.eye(30) > 0, np.nan, K), "inf": np.where(np.eye(30) > 0, np.inf, K),
          "complex": K + 1j, "shape": K[:5], "text": np.full((30, 30), "a")}[bad]
    for f in (approximation_error, lla_approximation_error):
        with pytest.raises(exc, match=match):
            f(ap, ex, K=Kb)


def test_error_functions_accept_sparse_and_integer_K(krr_pair):
    ap, ex, K = krr_pair
    want = approximation_error(ap, ex, K=K)
    np.testing.assert_allclose(approximation_error(ap, ex, K=sp.csr_matrix(K)), want,
                               rtol=1e-12)
    np.testing.assert_allclose(approximation_error(ap, ex), want, rtol=1e-10)
    Ki = np.rint(K * 10).astype(np.int64)  # integer values are taken as float64
    np.testing.assert_allclose(approximation_error(ap, ex, K=Ki),
                               approximation_error(ap, ex, K=Ki.astype(float)), rtol=1e-12)


@pytest.fixture(scope="module")
def full_landmarks():
    rng = np.random.RandomState(0)
    X = rng.randn(60, 3)
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(60)
    ex = NystromKernelRidge(mode="exact", alpha=0.01, gamma=0.5).fit(X, y)
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    return X, y, ex, K


def _reference(ap, ex, K):
    """‖f_LLA − f*‖ from the coefficients on the training points, by an eigen-factor of K."""
    b = np.zeros((K.shape[0], ap.landmark_coef_.shape[1]))
    b[ap.basis_.indices] = ap.landmark_coef_
    d = (b - ex.dual_coef_.reshape(b.shape))[:, 0]
    lam, W = np.linalg.eigh(K)
    return float(np.linalg.norm(np.sqrt(np.maximum(lam, 0)) * (W.T @ d)))


@pytest.mark.parametrize("mode", ["lla", "spa", "ncr"])
def test_lla_error_resolves_small_distances(full_landmarks, mode):
    # every training point a landmark: f_LLA ≈ f*; the expanded eq. (15) cancels to its
    # √eps·‖f*‖ floor (≈ 2.4e-7 here), the difference form gives the true ≈ 3e-10
    X, y, ex, K = full_landmarks
    ap = NystromKernelRidge(mode=mode, n_landmarks=60, alpha=0.01, gamma=0.5,
                            random_state=0).fit(X, y)
    ref = _reference(ap, ex, K)
    assert ref < 1e-8
    got = approximation_error(ap, ex)
    np.testing.assert_allclose(got, ref, rtol=1e-4)
    np.testing.assert_allclose(approximation_error(ap, ex, K=K), ref, rtol=1e-4)
    # the RKHS distance bounds the prediction difference (k(x, x) = 1 for the RBF kernel)
    assert np.abs(ap.predict(X) - ex.predict(X)).max() <= got * (1 + 1e-6)


def test_lla_error_of_a_gsa_fit_and_ordinary_cases_agree_with_expanded_form(full_landmarks):
    X, y, ex, K = full_landmarks
    for lm in ("uniform", "leverage", "gaussian", "kmeans"):
        ap = NystromKernelRidge(mode="gsa", n_landmarks=12, alpha=0.01, gamma=0.5,
                                landmarks=lm, random_state=0).fit(X, y)
        basis, beta = ap.basis_, ap.landmark_coef_
        Knm = basis.landmark_kernel(X)
        at = ex.dual_coef_.reshape(-1, 1)
        expanded = (beta.T @ basis.Kmm @ beta + at.T @ K @ at - 2 * beta.T @ Knm.T @ at)[0, 0]
        assert expanded > 1e-6  # an ordinary, resolvable error
        np.testing.assert_allclose(lla_approximation_error(ap, ex, squared=True), expanded,
                                   rtol=1e-8, err_msg=lm)
        np.testing.assert_allclose(lla_approximation_error(ap, ex, formula="eq15"),
                                   lla_approximation_error(ap, ex), rtol=1e-6, err_msg=lm)
        assert gsa_approximation_error(ap, ex) >= 0


def test_kpca_lla_error_difference_form_takes_the_better_sign(full_landmarks):
    from asymkern.nystrom import NystromKernelPCA

    X, _, _, K = full_landmarks
    kp = {"gamma": 0.5}
    ex = NystromKernelPCA(3, mode="exact", kernel_params=kp).fit(X)
    at = np.asarray(ex.dual_coef_, dtype=np.float64)
    for m in (60, 15):
        ap = NystromKernelPCA(3, mode="lla", n_landmarks=m, kernel_params=kp,
                              random_state=0).fit(X)
        b = np.zeros_like(at)
        b[ap.basis_.indices] = ap.landmark_coef_
        lam, W = np.linalg.eigh(K)
        R = np.sqrt(np.maximum(lam, 0))[:, None] * W.T
        ref = np.minimum(np.linalg.norm(R @ (b - at), axis=0),
                         np.linalg.norm(R @ (b + at), axis=0))
        got = lla_approximation_error(ap, ex)
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-12)
        if m == 60:
            assert np.all(got < 1e-6)
