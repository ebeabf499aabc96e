"""Nyström kernel machines (paper 004): GSA / LLA / NCR / SPA, errors (15) and (19), bad input."""

import numpy as np
import pytest

from asymkern.exceptions import ClippedParameterWarning
from asymkern.kernels import get_kernel
from asymkern.nystrom import (
    NystromKernelPCA,
    NystromKernelRidge,
    NystromSVC,
    gsa_approximation_error,
    lla_approximation_error,
    machine_duals,
)
from asymkern.testing import requires_data

KP = {"gamma": 0.2}



@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """One BLAS thread: these problems are tiny, and threads only thrash on a busy machine."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield

@pytest.fixture(scope="module")
def reg():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=200)
    return X, y, rng.normal(size=(40, 4))


@pytest.fixture(scope="module")
def clf():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 3))
    score = X[:, 0] + X[:, 1] ** 2 + 0.3 * rng.normal(size=150)
    y = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))  # 3 balanced classes
    return X, y, rng.normal(size=(30, 3))


def krr(mode, **kw):
    kw.setdefault("kernel_params", KP)
    kw.setdefault("alpha", 0.3)
    return NystromKernelRidge(mode=mode, **kw)


# ------------------------------------------------------------------------------ KRR identities
@pytest.mark.parametrize("landmarks", ["uniform", "gaussian", "leverage", "kmeans"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_corollary1_ncr_equals_lla(reg, landmarks, fit_intercept):
    X, y, Xt = reg
    kw = dict(n_landmarks=25, landmarks=landmarks, random_state=4, fit_intercept=fit_intercept)
    a = krr("lla", **kw).fit(X, y)
    b = krr("ncr", **kw).fit(X, y)
    np.testing.assert_allclose(a.predict(Xt), b.predict(Xt), rtol=1e-7, atol=1e-8)
    # and SPA (projection onto span(B)) is the same machine (Propositions 5-6)
    c = krr("spa", **kw).fit(X, y)
    np.testing.assert_allclose(a.predict(Xt), c.predict(Xt), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_all_points_as_landmarks_is_exact_krr(reg, fit_intercept):
    X, y, Xt = reg
    n = X.shape[0]
    exact = krr("exact", fit_intercept=fit_intercept).fit(X, y)
    # dense reference, independent of the estimator
    K = get_kernel("rbf", **KP)(X)
    if not fit_intercept:
        ref = get_kernel("rbf", **KP)(Xt, X) @ np.linalg.solve(K + 0.3 * np.eye(n), y)
        np.testing.assert_allclose(exact.predict(Xt), ref, rtol=1e-9, atol=1e-9)
    for mode in ("lla", "ncr", "gsa", "spa"):
        est = krr(mode, n_landmarks=n, fit_intercept=fit_intercept, random_state=0).fit(X, y)
        # K is ill-conditioned (RBF, n = 200 in 4-D) and the Gram-form solves square it
        np.testing.assert_allclose(est.predict(Xt), exact.predict(Xt), rtol=1e-5, atol=5e-6,
                                   err_msg=mode)
        if mode == "gsa":
            # GSA from one SVD of G_cᵀ (never its Gram matrix): exact KRR to rounding, on any
            # BLAS (the Gram route lost 2e-4 relative here on numpy 1.24's OpenBLAS)
            scale = np.max(np.abs(exact.predict(Xt)))
            np.testing.assert_allclose(est.predict(Xt), exact.predict(Xt), rtol=0,
                                       atol=1e-10 * scale)
        # ‖f − f*‖ ≈ 0 up to the eigenvalue cut-off (dropped λ ≲ n·ε·λ_max contribute √λ·|α̃|)
        f_norm = np.sqrt(exact.dual_coef_.ravel() @ K @ exact.dual_coef_.ravel())
        err = gsa_approximation_error(est, exact) if mode == "gsa" else \
            lla_approximation_error(est, exact)
        assert err < 1e-5 * f_norm, (mode, err, f_norm)


def test_lla_equals_sklearn_nystroem_ridge(reg):
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import Ridge

    X, y, Xt = reg
    for fi in (False, True):
        est = krr("lla", n_landmarks=30, random_state=2, fit_intercept=fi).fit(X, y)
        est_sk = krr("lla", n_landmarks=30, random_state=2, fit_intercept=fi,
                     solver="sklearn").fit(X, y)
        ny = Nystroem(kernel="rbf", gamma=KP["gamma"], n_components=30)
        ny.fit(X[est.landmark_indices_])  # all 30 rows become the landmarks
        rg = Ridge(alpha=0.3, fit_intercept=fi).fit(ny.transform(X), y)
        ref = rg.predict(ny.transform(Xt))
        np.testing.assert_allclose(est.predict(Xt), ref, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(est_sk.predict(Xt), ref, rtol=1e-7, atol=1e-8)


def test_gsa_eq20_equals_gsa_solved_directly_krr(reg):
    X, y, Xt = reg
    est = krr("gsa", n_landmarks=20, random_state=5).fit(X, y)
    Knm = est.basis_.landmark_kernel(X)
    Kt = Knm @ np.linalg.pinv(est.basis_.Kmm, rcond=1e-13, hermitian=True) @ Knm.T  # K̃
    n = X.shape[0]
    # problem (3) for KRR: ‖y − K̃α‖² + λ₀ αᵀK̃α; its minimum-norm minimiser, densely
    a_direct = np.linalg.lstsq(Kt @ (Kt + 0.3 * np.eye(n)), Kt @ y, rcond=1e-10)[0]
    np.testing.assert_allclose(est.dual_coef_.ravel(), a_direct, rtol=1e-5, atol=1e-7)
    # Williams-Seeger's dual solution (K̃ + λ₀I)⁻¹y differs only by a null(G) part: same K̃α
    a_ws = np.linalg.solve(Kt + 0.3 * np.eye(n), y)
    np.testing.assert_allclose(Kt @ a_ws, Kt @ a_direct, rtol=1e-6, atol=1e-8)
    Kxt = get_kernel("rbf", **KP)(Xt, X)
    np.testing.assert_allclose(est.predict(Xt), Kxt @ a_direct, rtol=1e-5, atol=1e-7)
    # the library's direct solve of (3) (Woodbury, then the minimum-norm representative)
    for fi in (False, True):
        e20 = krr("gsa", n_landmarks=20, random_state=5, fit_intercept=fi).fit(X, y)
        ewb = krr("gsa", n_landmarks=20, random_state=5, fit_intercept=fi,
                  gsa_solver="woodbury").fit(X, y)
        np.testing.assert_allclose(ewb.dual_coef_, e20.dual_coef_, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(ewb.predict(Xt), e20.predict(Xt), rtol=1e-7, atol=1e-9)


# ------------------------------------------------------------------------------ errors
def test_errors_nonnegative_shrink_and_eq15_agrees(reg):
    X, y, _ = reg
    exact = krr("exact").fit(X, y)
    K = get_kernel("rbf", **KP)(X)
    g, l = [], []
    for m in (8, 30, 120):
        eg, el = [], []
        for seed in range(4):
            est = krr("gsa", n_landmarks=m, random_state=seed).fit(X, y)
            sg = gsa_approximation_error(est, exact, squared=True)
            sl = lla_approximation_error(est, exact, squared=True)
            assert sg >= -1e-9 and sl >= -1e-9
            # eq. (15) literally (α̂ = G^†ŵ, K̃ = GᵀG) equals the landmark form
            np.testing.assert_allclose(lla_approximation_error(est, exact, formula="eq15"),
                                       lla_approximation_error(est, exact, K=K), rtol=1e-6)
            eg.append(np.sqrt(sg))
            el.append(np.sqrt(sl))
        g.append(np.mean(eg))
        l.append(np.mean(el))
    assert g[0] > g[1] > g[2] and l[0] > l[1] > l[2]


def test_errors_against_explicit_feature_vectors():
    # linear kernel: H = R^d, f = Xᵀα is an explicit vector, so ‖f − f*‖ is a plain norm
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 8))
    y = X @ rng.normal(size=8) + 0.1 * rng.normal(size=60)
    kw = dict(kernel="linear", kernel_params=None, alpha=2.0)
    exact = krr("exact", **kw).fit(X, y)
    f_star = X.T @ exact.dual_coef_.ravel()
    for lm in ("uniform", "kmeans"):
        est = krr("gsa", n_landmarks=5, landmarks=lm, random_state=0, **kw).fit(X, y)
        C = est.landmarks_
        f_lla = C.T @ est.landmark_coef_.ravel()
        f_gsa = X.T @ est.dual_coef_.ravel()
        np.testing.assert_allclose(lla_approximation_error(est, exact),
                                   np.linalg.norm(f_lla - f_star), rtol=1e-7)
        np.testing.assert_allclose(gsa_approximation_error(est, exact),
                                   np.linalg.norm(f_gsa - f_star), rtol=1e-7)
        # LLA prediction is ⟨f_LLA, x⟩
        np.testing.assert_allclose(est.predict_lla(X[:5]), X[:5] @ f_lla, rtol=1e-8)


# ------------------------------------------------------------------------------ SVC
def test_machine_duals_layout(clf):
    from sklearn.svm import NuSVC

    X, y, _ = clf
    est = NuSVC(nu=0.3, kernel="linear").fit(X, y)
    D = machine_duals(est, X.shape[0])
    np.testing.assert_allclose(D.T @ X, est.coef_, atol=1e-10)
    Xb, yb = X, (y > 0).astype(int)
    eb = NuSVC(nu=0.3, kernel="linear").fit(Xb, yb)
    np.testing.assert_allclose(machine_duals(eb, len(yb)).T @ Xb, eb.coef_, atol=1e-10)
    np.testing.assert_allclose(Xb @ eb.coef_.ravel() + eb.intercept_, eb.decision_function(Xb),
                               atol=1e-10)


def test_svc_gsa_eq20_equals_direct_and_all_points(clf):
    from sklearn.svm import NuSVC

    X, y, Xt = clf
    kw = dict(nu=0.3, kernel_params=KP, tol=1e-10)
    est = NystromSVC(mode="gsa", n_landmarks=25, random_state=0, **kw).fit(X, y)
    F = est.basis_.features(X)
    direct = NuSVC(nu=0.3, kernel="precomputed", tol=1e-10).fit(F @ F.T, y)  # problem (3)
    D = machine_duals(direct, X.shape[0])
    a_direct = np.linalg.pinv(F.T) @ (F.T @ D)  # minimum-norm representative G^†G β
    np.testing.assert_allclose(est.dual_coef_, a_direct, atol=1e-5)
    spa = NystromSVC(mode="spa", n_landmarks=25, random_state=0, **kw).fit(X, y)
    lla = NystromSVC(mode="lla", n_landmarks=25, random_state=0, **kw).fit(X, y)
    np.testing.assert_allclose(spa.decision_function(Xt), lla.decision_function(Xt), atol=1e-5)
    np.testing.assert_array_equal(est.predict_lla(Xt), lla.predict(Xt))
    # all points as landmarks: every mode is the exact machine
    exact = NystromSVC(mode="exact", **kw).fit(X, y)
    n = X.shape[0]
    for mode in ("lla", "ncr", "gsa", "spa"):
        e = NystromSVC(mode=mode, n_landmarks=n, **kw).fit(X, y)
        np.testing.assert_allclose(e.decision_function(Xt), exact.decision_function(Xt),
                                   atol=1e-5, err_msg=mode)
        err = gsa_approximation_error(e, exact) if mode == "gsa" else \
            lla_approximation_error(e, exact)
        assert np.all(err < 1e-3)


# ------------------------------------------------------------------------------ KPCA
def test_kpca_exact_matches_sklearn_and_all_points(reg):
    from sklearn.decomposition import KernelPCA

    X, _, Xt = reg
    ex = NystromKernelPCA(3, mode="exact", kernel_params=KP).fit(X)
    sk = KernelPCA(3, kernel="rbf", gamma=KP["gamma"]).fit(X)
    a, b = ex.transform(Xt), sk.transform(Xt)
    np.testing.assert_allclose(np.abs(a), np.abs(b), rtol=1e-6, atol=1e-8)
    for mode in ("lla", "gsa", "spa", "ncr"):
        e = NystromKernelPCA(3, mode=mode, n_landmarks=X.shape[0], kernel_params=KP).fit(X)
        t = e.transform(Xt)
        sign = np.sign(np.sum(t * a, axis=0))
        np.testing.assert_allclose(t * sign, a, rtol=1e-5, atol=1e-7, err_msg=mode)
    e = NystromKernelPCA(3, mode="gsa", n_landmarks=40, kernel_params=KP, random_state=0).fit(X)
    assert np.all(gsa_approximation_error(e, ex) >= 0)
    assert np.all(lla_approximation_error(e, ex) <= 2.0)  # ‖f̂ ∓ f*‖ ≤ ‖f̂‖ + ‖f*‖ = 2


@pytest.mark.parametrize("mode", ["lla", "gsa", "spa", "exact"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kpca_signs_follow_svd_flip(mode, seed):
    """svd_flip's rule: the largest-magnitude entry of each left vector U_k positive. For spa
    and exact dual_coef_ = U Λ^{-1/2}; for lla/gsa U_k σ_k = F_c W (the centred features
    times coef_ᵀ). (svd_flip(U, U.T) was a no-op: v = U.T aliases u, so the flip was applied
    twice and the signs of spa and exact were LAPACK's.)"""
    X = np.random.default_rng(seed).normal(size=(80, 3))
    e = NystromKernelPCA(4, mode=mode, n_landmarks=30, kernel_params=KP, random_state=0).fit(X)
    if mode in ("spa", "exact"):
        U = e.dual_coef_
    else:
        F = e.basis_.features(X)
        U = (F - F.mean(axis=0)) @ e.coef_.T
    peak = U[np.argmax(np.abs(U), axis=0), np.arange(U.shape[1])]
    assert np.all(peak > 0), peak


# ------------------------------------------------------------------------------ bad input
def test_bad_input(reg, clf):
    X, y, _ = reg
    # sizes larger than the data allow are clipped with a warning (scikit-learn's convention)
    with pytest.warns(ClippedParameterWarning, match="n_landmarks=201 is larger"):
        assert krr("lla", n_landmarks=201).fit(X, y).n_landmarks_ == 200
    with pytest.warns(ClippedParameterWarning, match="subspace_dim=11 is larger"):
        assert krr("lla", n_landmarks=10, subspace_dim=11).fit(X, y).subspace_dim_ <= 10
    with pytest.raises(ValueError, match="unknown mode"):
        krr("nope").fit(X, y)
    with pytest.raises(ValueError, match="unknown landmarks"):
        krr("lla", landmarks="nope").fit(X, y)
    Xn = X.copy()
    Xn[3, 1] = np.inf
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        krr("lla").fit(Xn, y)
    yn = y.copy()
    yn[0] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):
        krr("lla").fit(X, yn)
    with pytest.raises(ValueError, match="leave subspace_dim=None"):
        krr("ncr", n_landmarks=10, subspace_dim=5).fit(X, y)
    with pytest.raises(ValueError, match="duplicates"):
        krr("lla", landmarks=np.array([1, 1, 2]), n_landmarks=3).fit(X, y)
    with pytest.raises(ValueError, match="alpha"):
        krr("lla", alpha=0.0).fit(X, y)
    with pytest.raises(ValueError, match="different training data"):
        gsa_approximation_error(krr("gsa", n_landmarks=10).fit(X, y),
                                krr("exact").fit(X[:100], y[:100]))
    with pytest.raises(ValueError, match="needs a GSA fit"):
        gsa_approximation_error(krr("lla", n_landmarks=10).fit(X, y), krr("exact").fit(X, y))
    with pytest.raises(ValueError, match="mode='exact'"):
        lla_approximation_error(krr("lla", n_landmarks=10).fit(X, y),
                                krr("lla", n_landmarks=10).fit(X, y))
    with pytest.raises(ValueError, match="positive semi-definite"):
        krr("lla", n_landmarks=10, kernel="sne", kernel_params=None).fit(X, y)
    Xc, yc, _ = clf
    with pytest.raises(ValueError, match="svm must be"):
        NystromSVC(svm="nope", n_landmarks=10).fit(Xc, yc)
    with pytest.raises(ValueError, match="features"):
        krr("lla", n_landmarks=10).fit(X, y).predict(X[:, :2])


def test_duplicate_points_rank_deficient_kmm(reg):
    X, y, Xt = reg
    Xd = np.vstack([X, X[:50]])  # 50 duplicated rows
    yd = np.concatenate([y, y[:50]])
    # landmarks include both copies of 10 points: K_mm is singular, the cut-off drops the copies
    idx = np.concatenate([np.arange(30), 200 + np.arange(10)])
    est = krr("lla", landmarks=idx, n_landmarks=40).fit(Xd, yd)
    assert est.basis_.rank == 30 and est.subspace_dim_ == 30
    ref = krr("lla", landmarks=np.arange(30), n_landmarks=30).fit(Xd, yd)
    np.testing.assert_allclose(est.predict(Xt), ref.predict(Xt), rtol=1e-7, atol=1e-8)
    with pytest.warns(RuntimeWarning, match="numerical rank"):
        krr("lla", landmarks=idx, n_landmarks=40, subspace_dim=35).fit(Xd, yd)


def test_caller_arrays_untouched(reg):
    X, y, Xt = reg
    X0, y0 = X.copy(), y.copy()
    for mode in ("lla", "gsa", "ncr", "spa", "exact"):
        krr(mode, n_landmarks=20, fit_intercept=True).fit(X, y).predict(Xt)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


# ------------------------------------------------------------------------------ real data
@requires_data("libsvm/dna/dna.scale")
def test_libsvm_loaders_and_quick_experiment():
    from asymkern.datasets.libsvm import load_dna, load_phishing, load_usps
    from asymkern.experiments.nystrom_machines import run

    Xtr, ytr, Xte, yte = load_dna()
    assert Xtr.shape == (2000, 180) and Xte.shape == (1186, 180)
    assert np.bincount(ytr).tolist() == [0, 464, 485, 1051]
    Xu, yu, Xut, yut = load_usps(scale="libsvm")
    assert Xu.shape == (7291, 256) and Xut.shape == (2007, 256)
    assert Xu.min() == -1.0 and Xu.max() == 1.0 and np.bincount(yu)[0] == 1194
    Xp, yp = load_phishing()
    assert Xp.shape == (11055, 68) and np.bincount(yp).tolist() == [4898, 6157]
    rep = run(quick=True, datasets=("dna",), ratios=(0.05,))
    rows = rep.tables[next(k for k in rep.tables if k.startswith("GSA vs LLA"))]
    assert len(rows) == 4
