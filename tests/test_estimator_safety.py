"""Results a user can trust (issue 12): ill-conditioned Perron–Frobenius estimates, overflow,
silent shape changes, float32, training data held by reference, multi-output LS-SVM."""

import re
import warnings

import numpy as np
import pytest

from asymkern.decomposition.kpca import KernelPCA
from asymkern.kernels import get_kernel
from asymkern.lssvm import AsKLSClassifier, LSSVMClassifier, LSSVMRegressor
from asymkern.nystrom import NystromKernelPCA, NystromKernelRidge, NystromSVC
from asymkern.operators import (
    ConditionalMeanEmbedding,
    CovarianceOperator,
    CrossCovarianceOperator,
    IllConditionedLaggedGramWarning,
    KernelCCA,
    KoopmanOperator,
    PerronFrobeniusOperator,
)


def _top(lam, k):
    return lam[np.argsort(-np.abs(lam), kind="stable")][:k]


def _pf_reference(kernel, X0, X1, eps, k):
    """Eigenvalues of the exact PF estimate, computed stably: the auxiliary matrix
    G_XY⁻¹ (G_X + nεI)⁻¹ G_XY G_XY is similar to A = (G_X + nεI)⁻¹ G_XY."""
    n = X0.shape[0]
    A = np.linalg.solve(kernel(X0) + n * eps * np.eye(n), kernel(X0, X1))
    return _top(np.linalg.eigvals(A), k)


# ------------------------------------------------------------------------------------------------
# 1 / 10: Perron–Frobenius with an ill-conditioned or singular time-lagged Gram matrix
# ------------------------------------------------------------------------------------------------
def test_pf_iid_samples_regularised_not_crashing():
    # the data of sklearn's check_n_features_in: i.i.d. samples, not a trajectory
    X = np.random.RandomState(0).normal(loc=100, size=(100, 2))
    with pytest.warns(IllConditionedLaggedGramWarning, match="Tikhonov"):
        pf = PerronFrobeniusOperator(n_components=2).fit(X)
    assert pf.lagged_gram_solver_ == "tikhonov"
    assert pf.lagged_gram_rcond_ < PerronFrobeniusOperator.RCOND_MIN
    k, X0, X1 = get_kernel("rbf"), X[:-1], X[1:]
    ref = _pf_reference(k, X0, X1, 1e-6, 2)
    # the exact formula gave |λ| ~ 3e4 and eigenfunctions of zero norm. The eigenvalues are
    # those of A = (G_X + nεI)⁻¹G_XY itself (round 18; the regularised G_XY⁻¹ only lifts the
    # eigenvectors), so they are A's top ones and |λ| ≤ ‖A‖₂; ``operator_`` applies the
    # regularised B_δ, whose own eigenpairs differ by the regularisation (documented)
    A = np.linalg.solve(k(X0) + 99e-6 * np.eye(99), k(X0, X1))
    lam = np.linalg.eigvals(A)
    lam = lam[np.argsort(-np.abs(lam))][:2]
    assert np.all(np.abs(pf.eigenvalues_) <= np.linalg.norm(A, 2) * (1 + 1e-10))
    np.testing.assert_allclose(pf.eigenvalues_, lam, atol=1e-8)
    np.testing.assert_allclose(pf.eigenvalues_, ref, atol=0.05)
    f = pf.eigenfunctions_
    np.testing.assert_allclose(f.norms(), 1.0, atol=1e-8)
    assert np.all(np.isfinite(f(X[:10])))


def test_pf_sklearn_check_n_features_in():
    # fit(X, y) with y the time-shifted snapshots: scikit-learn's check passes class labels as
    # y (refused for multi-feature X), so n_features_in_ is checked here with y=None
    X = np.random.default_rng(0).standard_normal((40, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllConditionedLaggedGramWarning)
        est = PerronFrobeniusOperator(n_components=2)
        assert not hasattr(est, "n_features_in_")
        assert est.fit(X).n_features_in_ == 3


def test_pf_periodic_trajectory_with_exact_repeats(capfd):
    th = 2 * np.pi * np.arange(60) / 6
    traj = np.c_[np.cos(th), np.sin(th)]  # period 6: every state is revisited exactly
    with pytest.warns(IllConditionedLaggedGramWarning):
        pf = PerronFrobeniusOperator(n_components=3).fit(traj)
    out, err = capfd.readouterr()
    assert "illegal value" not in out + err  # LAPACK never saw a singular G_XY
    ref = _pf_reference(get_kernel("rbf"), traj[:-1], traj[1:], 1e-6, 3)
    np.testing.assert_allclose(np.sort_complex(pf.eigenvalues_), np.sort_complex(ref),
                               atol=1e-6)
    # the dynamics is a rotation by 60°: eigenvalues 1, exp(±iπ/3)
    np.testing.assert_allclose(np.sort(np.angle(pf.eigenvalues_)), [-np.pi / 3, 0, np.pi / 3],
                               atol=1e-5)


def test_pf_well_conditioned_unchanged():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (40, 2))
    Y = X @ np.array([[0.9, -0.2], [0.2, 0.9]]).T + 0.05 * rng.standard_normal((40, 2))
    k = get_kernel("laplacian", gamma=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedLaggedGramWarning)
        pf = PerronFrobeniusOperator(kernel=k, alpha=1e-4, n_components=3).fit(X, Y)
    assert pf.lagged_gram_solver_ == "lu"
    np.testing.assert_allclose(pf.eigenvalues_, _pf_reference(k, X, Y, 1e-4, 3), rtol=1e-8)


def test_pf_exact_formula_spurious_eigenfunctions_dropped_or_clear_error():
    # the exact LU formula on a numerically singular G_XY: the eigenvalues formed through
    # G_XY⁻¹ were spurious (eigenfunctions of zero norm, an error). They now come from
    # A = (G_X + nεI)⁻¹G_XY (round 18), G_XY⁻¹ only lifting the eigenvectors: A's top
    # eigenvalues, finite eigenfunctions -- or, where the lift loses a function to rounding
    # (decided by rounding, numpy 2.4 vs 2.5), a warning or the error saying so; never a
    # LAPACK error or a NaN
    X = np.random.RandomState(0).normal(loc=100, size=(100, 2))
    k, X0, X1 = get_kernel("rbf"), X[:-1], X[1:]
    A = np.linalg.solve(k(X0) + 99e-6 * np.eye(99), k(X0, X1))
    lam = np.linalg.eigvals(A)
    lam = lam[np.argsort(-np.abs(lam))]
    for r in (2, 6):
        pf = PerronFrobeniusOperator(n_components=r)
        pf.RCOND_MIN = 0.0  # force the exact LU formula on a numerically singular G_XY
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                pf.fit(X)
            except ValueError as exc:
                assert "numerically zero RKHS norm" in str(exc)
                continue
        assert pf.lagged_gram_solver_ == "lu"
        if pf.eigenvalues_.size < r:
            assert any(re.search(rf"of {r} computed eigenfunctions .* dropped",
                                 str(w.message)) for w in caught)
        assert np.all(np.isfinite(pf.eigenvalues_))
        assert np.all(np.isfinite(pf.eigenfunctions_(X[:5])))
        # the same set (a conjugate pair's order is LAPACK's)
        np.testing.assert_allclose(np.sort_complex(pf.eigenvalues_),
                                   np.sort_complex(lam[:pf.eigenvalues_.size]), atol=1e-8)


@pytest.mark.parametrize("est", [KoopmanOperator(), PerronFrobeniusOperator()])
def test_transfer_operator_errors_name_Y(est):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 2))
    Y = X.copy()
    Y[3, 1] = np.nan
    with pytest.raises(ValueError, match="^y contains NaN"):
        est.fit(X, Y)
    with pytest.raises(ValueError, match=r"^y has shape \(20, 3\)"):
        est.fit(X, rng.standard_normal((20, 3)))


@pytest.mark.parametrize("est", [CrossCovarianceOperator(n_components=1),
                                 KernelCCA(n_components=1)])
def test_paired_operator_errors_name_Y(est):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 2))
    Y = rng.standard_normal((20, 2))
    Y[0, 0] = np.inf
    with pytest.raises(ValueError, match="^y contains NaN or infinity"):
        est.fit(X, Y)
    with pytest.raises(ValueError, match="^y has 19 samples; expected 20"):
        est.fit(X, Y[1:])


# ------------------------------------------------------------------------------------------------
# 2: non-finite results from finite input
# ------------------------------------------------------------------------------------------------
def _fit_predict(est, X, y):
    """Fit and return the main output of ``est`` on X (decision values, predictions, ...)."""
    if isinstance(est, (LSSVMClassifier, AsKLSClassifier, NystromSVC)):
        return est.fit(X, y > 0).decision_function(X)
    if isinstance(est, (LSSVMRegressor, NystromKernelRidge, ConditionalMeanEmbedding)):
        return est.fit(X, y).predict(X)
    if isinstance(est, (CrossCovarianceOperator, KernelCCA)):
        return est.fit(X, X[:, :1]).transform(X)
    if isinstance(est, KoopmanOperator):
        return est.fit(X).predict(X)
    if isinstance(est, PerronFrobeniusOperator):
        return est.fit(X).eigenfunctions_(X)
    return est.fit(X).transform(X)


def _all_estimators(kernel):
    ny = dict(n_landmarks=10, kernel=kernel, random_state=0)
    return [
        LSSVMClassifier(kernel=kernel), LSSVMRegressor(kernel=kernel),
        AsKLSClassifier(kernel=kernel),
        NystromKernelRidge(mode="exact", **ny), NystromKernelRidge(mode="lla", **ny),
        NystromKernelRidge(mode="gsa", **ny), NystromSVC(mode="exact", svm="svc", **ny),
        NystromSVC(mode="lla", svm="svc", **ny), NystromKernelPCA(mode="exact", **ny),
        NystromKernelPCA(mode="lla", **ny),
        KernelPCA(kernel=kernel), ConditionalMeanEmbedding(kernel_x=kernel),
        CovarianceOperator(kernel=kernel, n_components=2),
        CrossCovarianceOperator(kernel_x=kernel, n_components=1),
        KernelCCA(kernel_x=kernel, n_components=1),
        KoopmanOperator(kernel=kernel, n_components=2),
        PerronFrobeniusOperator(kernel=kernel, n_components=2),
    ]


@pytest.mark.parametrize("est", _all_estimators("linear"), ids=lambda e: type(e).__name__)
def test_overflow_is_reported_not_returned(est):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2)) * 1e160  # finite, but X Xᵀ overflows
    y = X[:, 0] / 1e160 + 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = _fit_predict(est, X, y)
        except (OverflowError, ValueError) as exc:
            assert "overflow" in str(exc).lower() or "infinity" in str(exc).lower(), str(exc)
            return
    assert np.all(np.isfinite(out))


_CUBIC = {"degree": 3, "gamma": 1.0, "coef0": 1.0}


@pytest.mark.parametrize("est", [LSSVMClassifier(kernel="poly", kernel_params=_CUBIC),
                                 LSSVMRegressor(kernel="poly", kernel_params=_CUBIC),
                                 AsKLSClassifier(kernel="poly", kernel_params=_CUBIC),
                                 NystromKernelRidge(mode="exact", kernel="poly",
                                                    kernel_params=_CUBIC),
                                 ConditionalMeanEmbedding(kernel_x="poly",
                                                          kernel_x_params=_CUBIC)],
                         ids=lambda e: type(e).__name__)
def test_prediction_overflow_is_reported(est):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 2))
    y = X[:, 0] + 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if isinstance(est, (LSSVMClassifier, AsKLSClassifier)):
            est.fit(X, y > 0)
            f = est.decision_function
        else:
            est.fit(X, y)
            f = est.predict
        with pytest.raises(OverflowError, match="overflowed"):
            f(X * 1e120)  # finite input; (xᵀz + 1)³ ~ 1e360 overflows


# ------------------------------------------------------------------------------------------------
# 3: silent shape changes
# ------------------------------------------------------------------------------------------------
def test_kernel_pca_warns_when_fewer_components():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2)) @ rng.standard_normal((2, 5))  # rank 2
    with pytest.warns(RuntimeWarning, match="n_components=5 .* returning 2 components"):
        kp = KernelPCA(5, kernel="linear", center=False).fit(X)
    assert kp.n_components_ == 2
    assert kp.transform(X).shape == (40, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert KernelPCA(2, kernel="linear", center=False).fit(X).n_components_ == 2


# ------------------------------------------------------------------------------------------------
# 4: float32
# ------------------------------------------------------------------------------------------------
def test_kernel_pca_cutoff_scales_with_dtype():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3)) @ rng.standard_normal((3, 6))  # rank 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        k64 = KernelPCA(30, kernel="linear").fit(X)
        k32 = KernelPCA(30, kernel="linear").fit(X.astype(np.float32))
    assert k64.n_components_ == k32.n_components_ == 3  # float32 used to keep 26
    T32 = k32.transform(X.astype(np.float32))
    assert T32.dtype == np.float32 and k32.eigenvalues_.dtype == np.float32
    np.testing.assert_allclose(np.abs(T32), np.abs(k64.transform(X)), atol=1e-3 * np.abs(
        k64.transform(X)).max())


def _float32_cases():
    ny = dict(n_landmarks=15, random_state=0)
    return [
        (LSSVMClassifier(), "decision_function"), (LSSVMRegressor(), "predict"),
        (AsKLSClassifier(kernel="rbf"), "decision_function"),
        (NystromKernelRidge(mode="lla", **ny), "predict"),
        (NystromKernelRidge(mode="gsa", **ny), "predict"),
        (NystromKernelRidge(mode="exact"), "predict"),
        (NystromSVC(mode="lla", svm="svc", **ny), "decision_function"),
        (NystromKernelPCA(mode="lla", **ny), "transform"),
        (KernelPCA(2), "transform"),
        (ConditionalMeanEmbedding(), "predict"), (CovarianceOperator(n_components=2), "transform"),
        (CrossCovarianceOperator(n_components=2), "transform"),
        (KernelCCA(n_components=1), "transform"), (KoopmanOperator(n_components=2), "predict"),
    ]


@pytest.mark.parametrize("est,method", _float32_cases(), ids=lambda e: type(e).__name__)
def test_float32_in_float32_out(est, method):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2))
    y = np.sin(X[:, 0]) + 0.1
    X32 = X.astype(np.float32)
    outs = {}
    for Xd in (X, X32):
        e = type(est)(**est.get_params())
        if isinstance(e, (LSSVMClassifier, AsKLSClassifier, NystromSVC)):
            e.fit(Xd, y > 0.1)
        elif isinstance(e, (CrossCovarianceOperator, KernelCCA)):
            e.fit(Xd, Xd[:, :1])
        elif isinstance(e, (KoopmanOperator, KernelPCA, NystromKernelPCA, CovarianceOperator)):
            e.fit(Xd)
        else:
            e.fit(Xd, y)
        outs[Xd.dtype] = getattr(e, method)(Xd)
    assert outs[np.dtype(np.float32)].dtype == np.float32
    assert outs[np.dtype(np.float64)].dtype == np.float64
    ref = outs[np.dtype(np.float64)]
    scale = np.abs(ref).max()
    np.testing.assert_allclose(np.abs(outs[np.dtype(np.float32)]), np.abs(ref),
                               atol=2e-2 * scale)


def test_nystrom_cutoff_scales_with_dtype():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 2))
    y = np.sin(X[:, 0])
    kw = dict(mode="lla", n_landmarks=100, alpha=1e-3, random_state=0)
    e64 = NystromKernelRidge(**kw).fit(X, y)
    e32 = NystromKernelRidge(**kw).fit(X.astype(np.float32), y)
    # K_mm's eigenvalues below m·eps32·λ_max are rounding noise for float32 data
    assert e32.subspace_dim_ < e64.subspace_dim_
    lam = e64.basis_.eigenvalues
    assert e32.subspace_dim_ == np.sum(lam > 100 * np.finfo(np.float32).eps * lam[0]) or abs(
        e32.subspace_dim_ - np.sum(lam > 100 * np.finfo(np.float32).eps * lam[0])) <= 2
    # with the same cut-off, float32 and float64 agree to float32 accuracy
    rc = 100 * float(np.finfo(np.float32).eps)
    a = NystromKernelRidge(rcond=rc, **kw).fit(X, y).predict(X)
    b = NystromKernelRidge(rcond=rc, **kw).fit(X.astype(np.float32), y).predict(
        X.astype(np.float32))
    np.testing.assert_allclose(b, a, atol=1e-3)


# ------------------------------------------------------------------------------------------------
# 5: training data are copied
# ------------------------------------------------------------------------------------------------
def _copy_cases():
    ny = dict(n_landmarks=10, random_state=0)
    return [
        (KernelPCA(2), "transform"), (KoopmanOperator(n_components=2), "predict"),
        (PerronFrobeniusOperator(kernel="laplacian", n_components=2), None),
        (ConditionalMeanEmbedding(), "predict"), (CovarianceOperator(n_components=2), "transform"),
        (CrossCovarianceOperator(n_components=2), "transform"),
        (KernelCCA(n_components=1), "transform"),
        (LSSVMClassifier(), "decision_function"), (LSSVMRegressor(), "predict"),
        (AsKLSClassifier(kernel="rbf"), "decision_function"),
        (AsKLSClassifier(kernel="rbf", nystrom=10, random_state=0), "decision_function"),
        (NystromKernelRidge(mode="lla", **ny), "predict"),
        (NystromKernelRidge(mode="gsa", **ny), "predict"),
        (NystromKernelRidge(mode="exact"), "predict"),
        (NystromSVC(mode="lla", svm="svc", **ny), "decision_function"),
        (NystromKernelPCA(mode="gsa", **ny), "transform"),
    ]


@pytest.mark.parametrize("est,method", _copy_cases(), ids=lambda e: type(e).__name__)
def test_training_data_not_held_by_reference(est, method):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2))
    Y = X[:, :1] ** 2
    y = np.sin(X[:, 0]) + 0.1
    Xt = rng.standard_normal((7, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if isinstance(est, (LSSVMClassifier, AsKLSClassifier, NystromSVC)):
            est.fit(X, y > 0.1)
        elif isinstance(est, (CrossCovarianceOperator, KernelCCA)):
            est.fit(X, Y)
        elif isinstance(est, (KernelPCA, NystromKernelPCA, CovarianceOperator, KoopmanOperator,
                              PerronFrobeniusOperator)):
            est.fit(X)
        else:
            est.fit(X, y)

        def out():
            if method is None:
                return est.eigenfunctions_(Xt)
            return getattr(est, method)(Xt)

        before = out()
        X += 1.0  # the caller changes its arrays after fit
        Y += 1.0
        after = out()
    np.testing.assert_array_equal(after, before)


# ------------------------------------------------------------------------------------------------
# 6: multi-output LS-SVM regression
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("solver", ["auto", "eig", "dense"])
def test_lssvm_regressor_multi_output_equals_separate_fits(solver):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    Y = np.c_[np.sin(X[:, 0]), X[:, 1] ** 2, X[:, 2] - 1.0]
    Xt = rng.standard_normal((9, 3))
    m = LSSVMRegressor(C=10.0, solver=solver).fit(X, Y)
    P = m.predict(Xt)
    assert P.shape == (9, 3) and m.dual_coef_.shape == (50, 3) and m.intercept_.shape == (3,)
    for j in range(3):
        s = LSSVMRegressor(C=10.0, solver=solver).fit(X, Y[:, j])
        np.testing.assert_allclose(P[:, j], s.predict(Xt), rtol=0, atol=1e-10)
        np.testing.assert_allclose(m.dual_coef_[:, j], s.dual_coef_[:, 0], rtol=0, atol=1e-10)
    # one column stays 2-D, a 1-D target stays 1-D
    assert LSSVMRegressor().fit(X, Y[:, :1]).predict(Xt).shape == (9, 1)
    assert LSSVMRegressor().fit(X, Y[:, 0]).predict(Xt).shape == (9,)
    assert LSSVMRegressor().__sklearn_tags__().target_tags.multi_output


# ------------------------------------------------------------------------------------------------
# issue 29: complex sample weights are refused (one helper), never cast with a ComplexWarning;
# the scores refuse the weights fit refuses (a negative weight gave R² > 1)
# ------------------------------------------------------------------------------------------------
def _weighted_fits():
    from asymkern.decomposition import KernelSVD

    rng = np.random.RandomState(0)
    X, Z = rng.randn(40, 3), rng.randn(30, 3)
    y = X[:, 0] + 0.1 * rng.randn(40)
    lab = np.where(y > 0, 1, -1)
    cases = []
    for solver in ("dense", "randomized"):
        for name, n in (("sample_weight", 40), ("sample_weight_Z", 30)):
            cases.append(pytest.param(
                lambda w, s=solver, nm=name: KernelSVD(n_components=2, solver=s,
                                                       random_state=0).fit(X, Z=Z, **{nm: w}),
                name, n, id=f"KernelSVD-{solver}-{name}"))
    for cls, t in ((NystromKernelRidge, y), (LSSVMRegressor, y), (LSSVMClassifier, lab),
                   (AsKLSClassifier, lab)):
        kw = {"n_landmarks": 10, "random_state": 0} if cls is NystromKernelRidge else {}
        cases.append(pytest.param(lambda w, c=cls, t=t, kw=kw: c(**kw).fit(X, t,
                                                                           sample_weight=w),
                                  "sample_weight", 40, id=cls.__name__))
    return cases


@pytest.mark.parametrize("fit, name, n", _weighted_fits())
def test_complex_sample_weights_are_refused(fit, name, n):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning on the way to the error
        for w in (np.ones(n) + 1e-3j, np.ones(n) + 0j, list(np.ones(n) + 1j),
                  np.array([1 + 1j] * n, dtype=object), 1 + 1j):
            with pytest.raises(ValueError, match=f"Complex data not supported: {name} is "):
                fit(w)
    fit(np.linspace(0.5, 2.0, n))  # real weights still fit
    fit([3] * n)


def test_lssvm_functional_api_refuses_complex_weights():
    from asymkern.lssvm import askls_kkt_matrix, lssvm_solve

    rng = np.random.RandomState(0)
    X = rng.randn(12, 2)
    K, y = X @ X.T, np.where(X[:, 0] > 0, 1.0, -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="sample_weight is complex-valued"):
            lssvm_solve(K, y, 1.0, sample_weight=np.ones(12) + 1j)
        with pytest.raises(ValueError, match="sample_weight is complex-valued"):
            askls_kkt_matrix(K, y, 1.0, sample_weight=np.ones(12) + 1j)
    with pytest.raises(ValueError, match="sample_weight"):
        askls_kkt_matrix(K, y, 1.0, sample_weight=np.ones(5))
    A = askls_kkt_matrix(K, y, 2.0, sample_weight=np.full(12, 2.0))
    assert A[2, 2] == 0.25 and askls_kkt_matrix(K, y, 2.0)[2, 2] == 0.5


@pytest.mark.parametrize("make", [
    lambda X: (KoopmanOperator(n_components=2).fit(X), (X[:-1], X[1:])),
    lambda X: (ConditionalMeanEmbedding().fit(X[:-1], X[1:]), (X[:-1], X[1:])),
], ids=["KoopmanOperator", "ConditionalMeanEmbedding"])
def test_score_refuses_the_weights_fit_refuses(make):
    from sklearn.metrics import r2_score

    rng = np.random.RandomState(1)
    X = np.cumsum(rng.randn(80, 2), axis=0) * 0.1
    est, (A, B) = make(X)
    n = A.shape[0]
    neg = np.ones(n)
    neg[:3] = -20.0
    for w, msg in ((neg, "sample_weight has negative values"),
                   (np.r_[np.nan, np.ones(n - 1)], "sample_weight contains NaN"),
                   (np.ones(n) * 1j, "sample_weight is complex-valued"),
                   (np.zeros(n), "sample_weight is all zero"),
                   (np.ones(n + 1), "sample_weight must be a 1-D array")):
        with pytest.raises(ValueError, match=msg):
            est.score(A, B, sample_weight=w)
    w = rng.uniform(0.2, 2.0, n)
    multi = "variance_weighted" if isinstance(est, KoopmanOperator) else "uniform_average"
    ref = r2_score(B, est.predict(A), sample_weight=w, multioutput=multi)
    assert est.score(A, B, sample_weight=w) == pytest.approx(ref, abs=1e-12)
