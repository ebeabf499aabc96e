"""The Nyström machines and NystromFeatureMap as scikit-learn citizens (issue 15).

Common checks at default parameters, clipping, estimator-level gamma, random_state policy,
feature names / set_output, sample_weight (KRR), class_weight / probability (SVC), sparse
input, the (a)symmetric Nyström feature map, clone / grid search / pickle.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from asymkern.exceptions import ClippedParameterWarning
from asymkern.kernels import CallableKernel, RBFKernel
from asymkern.nystrom import (
    NystromFeatureMap,
    NystromKernelPCA,
    NystromKernelRidge,
    NystromSVC,
)

MODES = ("lla", "ncr", "gsa", "spa", "exact")


# scikit-learn common checks at defaults: tests/test_sklearn_api.py


def test_svc_class_weight_with_c_svc_passes_the_check():
    from sklearn.utils.estimator_checks import check_class_weight_classifiers

    check_class_weight_classifiers("NystromSVC", NystromSVC(svm="svc"))


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(60, 4)
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.05 * rng.randn(60)
    yc = (X[:, 0] + 0.5 * X[:, 2] > 0).astype(int)
    return X, y, yc


# ------------------------------------------------------------------------ clipping, gamma
@pytest.mark.parametrize("Est", [NystromKernelRidge, NystromSVC, NystromKernelPCA])
def test_n_landmarks_clipped_with_warning(Est, data):
    X, y, yc = data
    target = yc if Est is NystromSVC else y
    with pytest.warns(ClippedParameterWarning, match="n_landmarks=100 is larger than"):
        est = Est(random_state=0).fit(X, target)
    assert est.n_landmarks_ == 60
    assert est.landmarks_.shape == (60, 4)
    with pytest.warns(ClippedParameterWarning, match="subspace_dim=50 is larger"):
        est = Est(n_landmarks=10, subspace_dim=50, random_state=0).fit(X, target)
    assert est.n_landmarks_ == 10 and est.subspace_dim_ <= 10


def test_kpca_n_components_clipped(data):
    X = data[0]
    with pytest.warns(ClippedParameterWarning, match="n_components=20 is larger than"):
        est = NystromKernelPCA(n_components=20, n_landmarks=8, random_state=0).fit(X)
    assert est.n_components_ <= 8
    assert est.transform(X).shape == (60, est.n_components_)
    with pytest.warns(ClippedParameterWarning, match="n_components=70"):
        est = NystromKernelPCA(n_components=70, mode="exact").fit(X[:10])
    assert est.n_components_ == 9


@pytest.mark.parametrize("mode", ["lla", "gsa", "ncr", "spa", "exact"])
@pytest.mark.parametrize("center", [True, False])
def test_kpca_n_components_clipped_to_rank(data, mode, center):
    """A centred kernel of n samples has rank ≤ n − 1: n_components is clipped to n − 1 (n
    without centring) in every mode, with a warning, and every kept component is a real
    direction (positive eigenvalue well above rounding, finite scores) — before, 'exact'
    promised n and then failed (or not) on the sign of a rounding-level n-th eigenvalue."""
    X = data[0][:10]
    with pytest.warns(ClippedParameterWarning, match="n_components=70 is larger than"):
        est = NystromKernelPCA(n_components=70, n_landmarks=10, mode=mode, center=center,
                               random_state=0).fit(X)
    assert est.n_components_ == (9 if center else 10)
    assert est.eigenvalues_.min() > 1e-8 * est.eigenvalues_.max()
    Z = est.transform(X)
    assert Z.shape == (10, est.n_components_) and np.isfinite(Z).all()


def test_kpca_exact_refuses_degenerate_components(data):
    """Duplicate samples span fewer directions: a kept eigenvalue at the rounding level is
    refused by name, never divided into a component."""
    X = np.repeat(data[0][:4], 3, axis=0)  # 12 samples, 4 distinct: centred rank 3
    with pytest.raises(ValueError, match="numerically positive eigenvalues"):
        NystromKernelPCA(n_components=5, mode="exact").fit(X)


@pytest.mark.parametrize("Est", [NystromKernelRidge, NystromSVC, NystromKernelPCA])
def test_gamma_equals_kernel_instance_and_kernel_params(Est, data):
    X, y, yc = data
    target = yc if Est is NystromSVC else y
    kern = RBFKernel(gamma=0.3)
    before = kern.get_params()
    a = Est(gamma=0.3, n_landmarks=20, random_state=1).fit(X, target)
    b = Est(kernel=kern, n_landmarks=20, random_state=1).fit(X, target)
    c = Est(kernel=RBFKernel(), gamma=0.3, n_landmarks=20, random_state=1).fit(X, target)
    assert kern.get_params() == before  # never mutated
    out = "transform" if Est is NystromKernelPCA else "predict"
    ref = getattr(a, out)(X)
    np.testing.assert_allclose(getattr(b, out)(X), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(getattr(c, out)(X), ref, rtol=1e-12, atol=1e-12)
    d = Est(gamma=3.0, n_landmarks=20, random_state=1).fit(X, target)
    if Est is not NystromSVC:
        assert not np.allclose(getattr(d, out)(X), ref)
    with pytest.raises(ValueError, match="gamma"):
        Est(gamma=0.3, kernel_params={"gamma": 1.0}).fit(X, target)


# ------------------------------------------------------------------ validation, rng, names
@pytest.mark.parametrize("Est", [NystromKernelRidge, NystromSVC, NystromKernelPCA,
                                 NystromFeatureMap])
def test_random_state_policy(Est, data):
    X, y, yc = data
    target = yc if Est is NystromSVC else y
    with pytest.raises(TypeError, match="Generator is not accepted"):
        Est(random_state=np.random.default_rng(0)).fit(X, target)
    kw = {"n_components": 10} if Est is NystromFeatureMap else {"n_landmarks": 10}
    a = Est(random_state=5, **kw).fit(X, target)
    b = Est(random_state=5, **kw).fit(X, target)
    out = "transform" if Est in (NystromKernelPCA, NystromFeatureMap) else "predict"
    np.testing.assert_array_equal(getattr(a, out)(X), getattr(b, out)(X))


def test_feature_names_and_pandas_output(data):
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(data[0], columns=["a", "b", "c", "d"])
    est = NystromKernelPCA(n_components=3, n_landmarks=15, random_state=0).set_output(
        transform="pandas").fit(X)
    out = est.transform(X)
    assert list(out.columns) == ["nystromkernelpca0", "nystromkernelpca1", "nystromkernelpca2"]
    np.testing.assert_array_equal(est.feature_names_in_, ["a", "b", "c", "d"])
    with pytest.raises(ValueError, match="feature names"):
        est.transform(X[["b", "a", "c", "d"]])
    krr = NystromKernelRidge(n_landmarks=10, random_state=0).fit(X, data[1])
    with pytest.raises(ValueError, match="X has 3 features, but NystromKernelRidge is "
                                         "expecting 4"):
        krr.predict(data[0][:, :3])


# -------------------------------------------------------------------------- sample_weight
def _dense_weighted_lla(X, y, C, gamma, alpha, w):
    """Reference: weighted ridge on the explicit features F = K(X, C) K_CC^{-1/2}."""
    K = np.exp(-gamma * ((X[:, None] - C[None]) ** 2).sum(-1))
    Kc = np.exp(-gamma * ((C[:, None] - C[None]) ** 2).sum(-1))
    lam, V = np.linalg.eigh(Kc)
    F = K @ (V / np.sqrt(lam))
    coef = np.linalg.solve(F.T @ (w[:, None] * F) + alpha * np.eye(F.shape[1]),
                           F.T @ (w * y))
    return F, coef, V / np.sqrt(lam)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("gsa_solver", ["eq20", "woodbury"])
def test_sample_weight_equals_repeated_rows(mode, fit_intercept, gsa_solver, data):
    if gsa_solver == "woodbury" and mode != "gsa":
        pytest.skip("gsa_solver matters for mode='gsa' only")
    X, y, _ = data
    X, y = X[:30], y[:30]
    rng = np.random.RandomState(3)
    w = rng.randint(0, 4, size=30)  # zeros included: a zero weight drops the row
    idx = np.arange(0, 30, 3)
    w[idx] = np.maximum(w[idx], 1)  # landmark rows present in the repeated data
    rep = np.repeat(np.arange(30), w)  # sorted
    idx_rep = np.searchsorted(rep, idx)  # the same landmark points in the repeated data
    np.testing.assert_array_equal(X[rep][idx_rep], X[idx])
    kw = dict(mode=mode, alpha=0.5, gamma=0.4, fit_intercept=fit_intercept,
              gsa_solver=gsa_solver)
    a = NystromKernelRidge(landmarks=idx, **kw).fit(X, y, sample_weight=w)
    b = NystromKernelRidge(landmarks=idx_rep, **kw).fit(X[rep], y[rep])
    Xt = rng.randn(15, 4)
    np.testing.assert_allclose(a.predict(Xt), b.predict(Xt), rtol=1e-7, atol=1e-9)
    if mode == "exact":  # dense reference: weighted KRR dual W(y − Ka − b) = alpha·a
        K = np.exp(-0.4 * ((X[:, None] - X[None]) ** 2).sum(-1))
        Kt = np.exp(-0.4 * ((Xt[:, None] - X[None]) ** 2).sum(-1))
        if not fit_intercept:
            a_ref = np.linalg.solve(np.diag(w) @ K + 0.5 * np.eye(30), w * y)
            np.testing.assert_allclose(a.predict(Xt), Kt @ a_ref, rtol=1e-7, atol=1e-9)


def test_sample_weight_dense_reference_and_none(data):
    X, y, _ = data
    w = np.random.RandomState(0).uniform(0.1, 3, size=60)
    idx = np.arange(0, 60, 4)
    est = NystromKernelRidge(mode="lla", landmarks=idx, alpha=0.3, gamma=0.5).fit(
        X, y, sample_weight=w)
    F, coef, B = _dense_weighted_lla(X, y, X[idx], 0.5, 0.3, w)
    np.testing.assert_allclose(est.predict(X), F @ coef, rtol=1e-8, atol=1e-10)
    for mode in MODES:
        kw = dict(mode=mode, landmarks=idx, alpha=0.3, gamma=0.5, fit_intercept=True)
        a = NystromKernelRidge(**kw).fit(X, y)
        b = NystromKernelRidge(**kw).fit(X, y, sample_weight=np.ones(60))
        np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-9, atol=1e-11,
                                   err_msg=mode)
    with pytest.raises(ValueError, match="sample_weight"):
        NystromKernelRidge(n_landmarks=5).fit(X, y, sample_weight=-np.ones(60))
    with pytest.raises(ValueError, match="sample_weight"):
        NystromKernelRidge(n_landmarks=5).fit(X, y, sample_weight=np.ones(5))


def test_sample_weight_zero_equals_dropping(data):
    X, y, _ = data
    w = np.ones(60)
    w[40:] = 0
    idx = np.arange(0, 40, 4)
    for mode in MODES:
        kw = dict(mode=mode, alpha=0.3, gamma=0.5, fit_intercept=True)
        a = NystromKernelRidge(landmarks=idx, **kw).fit(X, y, sample_weight=w)
        b = NystromKernelRidge(landmarks=idx, **kw).fit(X[:40], y[:40])
        np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-7, atol=1e-9,
                                   err_msg=mode)


def test_sample_weight_sklearn_solver(data):
    X, y, _ = data
    w = np.random.RandomState(1).randint(1, 4, size=60).astype(float)
    for mode in ("lla", "gsa"):
        a = NystromKernelRidge(mode=mode, n_landmarks=12, random_state=0).fit(
            X, y, sample_weight=w)
        b = NystromKernelRidge(mode=mode, n_landmarks=12, random_state=0,
                               solver="sklearn").fit(X, y, sample_weight=w)
        np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------- SVC extras
def test_svc_class_weight_passed_to_solver(data):
    X, _, yc = data
    for svm in ("svc", "nusvc", "linearsvc"):
        est = NystromSVC(svm=svm, n_landmarks=15, class_weight="balanced",
                         random_state=0).fit(X, yc)
        assert est.estimator_.class_weight == "balanced"
    est = NystromSVC(svm="svc", n_landmarks=15, class_weight={0: 1000, 1: 1e-4},
                     random_state=0).fit(X, yc)
    assert np.mean(est.predict(X) == 0) > 0.9


def test_svc_probability(data):
    X, _, yc = data
    est = NystromSVC(n_landmarks=20, random_state=0)
    assert not hasattr(est, "predict_proba")
    est = NystromSVC(n_landmarks=20, probability=True, random_state=0).fit(X, yc)
    P = est.predict_proba(X)
    assert P.shape == (60, 2)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.mean(est.classes_[P.argmax(axis=1)] == yc) > 0.8
    np.testing.assert_allclose(est.predict_log_proba(X), np.log(P))
    again = NystromSVC(n_landmarks=20, probability=True, random_state=0).fit(X, yc)
    np.testing.assert_array_equal(again.predict_proba(X), P)
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    P3 = NystromSVC(svm="svc", n_landmarks=20, probability=True, random_state=0).fit(
        X, y3).predict_proba(X)
    assert P3.shape == (60, 3)
    np.testing.assert_allclose(P3.sum(axis=1), 1.0)


def test_svc_one_class_message(data):
    X = data[0]
    with pytest.raises(ValueError, match="1 class"):
        NystromSVC(n_landmarks=5).fit(X, np.zeros(60))


# ----------------------------------------------------------------------------- sparse
@pytest.mark.parametrize("Est", [NystromKernelRidge, NystromSVC, NystromKernelPCA,
                                 NystromFeatureMap])
def test_sparse_equals_dense(Est, data):
    X, y, yc = data
    target = yc if Est is NystromSVC else y
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    Xd = Xs.toarray()
    kw = {"n_components": 12} if Est is NystromFeatureMap else {"n_landmarks": 12}
    a = Est(random_state=0, **kw).fit(Xs, target)
    b = Est(random_state=0, **kw).fit(Xd, target)
    out = "transform" if Est in (NystromKernelPCA, NystromFeatureMap) else (
        "decision_function" if Est is NystromSVC else "predict")
    np.testing.assert_allclose(getattr(a, out)(Xs), getattr(b, out)(Xd), rtol=1e-8,
                               atol=1e-10)
    assert Est().__sklearn_tags__().input_tags.sparse
    assert not Est(kernel="kl").__sklearn_tags__().input_tags.sparse


@pytest.mark.parametrize("Est", [NystromKernelRidge, NystromKernelPCA])
def test_sparse_index_landmarks_equal_dense(Est, data):
    """Sparse X with landmarks given as row indices (the sparse refusal of 'kmeans' /
    'gaussian' must not compare an index array with the sampler names)."""
    X, y, _ = data
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    idx = np.arange(0, X.shape[0], 5)
    a = Est(landmarks=idx, n_landmarks=None).fit(Xs, y)
    b = Est(landmarks=idx, n_landmarks=None).fit(Xs.toarray(), y)
    out = "transform" if Est is NystromKernelPCA else "predict"
    np.testing.assert_allclose(getattr(a, out)(Xs), getattr(b, out)(Xs.toarray()), rtol=1e-8,
                               atol=1e-10)


# -------------------------------------------------------------------------- feature map
def test_feature_map_symmetric_equals_sklearn_nystroem(data):
    X = data[0]
    ours = NystromFeatureMap(gamma=0.4, n_components=20, random_state=0).fit(X)
    ref = Nystroem(gamma=0.4, n_components=20, random_state=0).fit(X)
    np.testing.assert_array_equal(ours.components_, ref.components_)  # the same draw
    F, R = ours.transform(X), ref.transform(X)
    np.testing.assert_allclose(F @ F.T, R @ R.T, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(F, R, rtol=1e-6, atol=1e-8)  # Q = U: the same map exactly
    np.testing.assert_allclose(ours.transform_right(X), F, rtol=1e-6, atol=1e-8)


def _asym(X, Z):
    """An asymmetric kernel: exp(−|x − z − s|²/2) · (1 + tanh(x₀))."""
    s = np.array([0.5, -0.2, 0.1, 0.0])[: X.shape[1]]
    d = ((X[:, None, :] - Z[None, :, :] - s) ** 2).sum(-1)
    return np.exp(-d / 2) * (1.0 + np.tanh(X[:, :1]))


def test_feature_map_asymmetric_nystrom(data):
    X = data[0]
    Z = np.random.RandomState(7).randn(25, 4)
    kern = CallableKernel(_asym)
    idx = np.arange(0, 60, 3)
    fm = NystromFeatureMap(kernel=kern, landmarks=idx).fit(X)
    C = X[idx]
    dense = _asym(X, C) @ np.linalg.pinv(_asym(C, C)) @ _asym(C, Z)
    approx = fm.transform_left(X) @ fm.transform_right(Z).T
    np.testing.assert_allclose(approx, dense, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(fm.transform(X), fm.transform_left(X))
    right = clone(fm).set_params(side="right").fit(X)
    np.testing.assert_array_equal(right.transform(Z), fm.transform_right(Z))
    # every point a landmark: the kernel itself on the training points
    Xs = X[:15]
    full = NystromFeatureMap(kernel=kern, n_components=15, random_state=0).fit(Xs)
    np.testing.assert_allclose(full.transform_left(Xs) @ full.transform_right(Xs).T,
                               _asym(Xs, Xs), rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="row-normalised"):
        NystromFeatureMap(kernel="sne").fit(X)


def test_feature_map_clipping_dtype_and_pipeline(data):
    pd = pytest.importorskip("pandas")
    X, y, _ = data
    with pytest.warns(ClippedParameterWarning, match="n_components=100 is larger"):
        fm = NystromFeatureMap(random_state=0).fit(X[:30])
    assert fm.n_components_ == 30 and fm.transform(X).shape == (60, 30)
    X32 = X.astype(np.float32)
    assert NystromFeatureMap(n_components=10, random_state=0).fit(X32).transform(
        X32).dtype == np.float32
    out = NystromFeatureMap(n_components=5, random_state=0).set_output(
        transform="pandas").fit(pd.DataFrame(X)).transform(pd.DataFrame(X))
    assert list(out.columns) == [f"nystromfeaturemap{i}" for i in range(5)]
    pipe = make_pipeline(NystromFeatureMap(n_components=20, random_state=0), Ridge())
    grid = GridSearchCV(pipe, {"nystromfeaturemap__gamma": [0.1, 1.0],
                               "nystromfeaturemap__kernel": ["rbf", RBFKernel(gamma=0.5)],
                               "ridge__alpha": [0.1, 1.0]}, cv=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippedParameterWarning)
        warnings.filterwarnings("ignore", message=".*gamma.*")
        grid.fit(X, y)
    assert grid.score(X, y) > 0.5


# ------------------------------------------------------------- clone, grid search, pickle
def test_clone_grid_search_and_pickle(data):
    X, y, yc = data
    est = NystromKernelRidge(kernel=RBFKernel(gamma=0.5), n_landmarks=20, random_state=0)
    cl = clone(est)
    assert cl.kernel is not est.kernel and cl.kernel.get_params() == est.kernel.get_params()
    grid = GridSearchCV(
        NystromKernelRidge(n_landmarks=20, random_state=0),
        [{"kernel": [RBFKernel(gamma=0.5), "laplacian"], "alpha": [0.1, 1.0]},
         {"kernel": ["rbf"], "gamma": [0.1, 1.0]}], cv=3).fit(X, y)
    assert grid.best_score_ > 0.5
    grid2 = GridSearchCV(NystromSVC(kernel=RBFKernel(), n_landmarks=20, random_state=0),
                         {"kernel__gamma": [0.1, 1.0], "class_weight": [None, "balanced"]},
                         cv=3).fit(X, yc)
    assert grid2.best_score_ > 0.7
    for e in (NystromKernelRidge(n_landmarks=20, random_state=0).fit(X, y),
              NystromSVC(n_landmarks=20, probability=True, random_state=0).fit(X, yc),
              NystromKernelPCA(n_landmarks=20, random_state=0).fit(X),
              NystromFeatureMap(n_components=20, random_state=0).fit(X)):
        e2 = pickle.loads(pickle.dumps(e))
        for m in ("predict", "transform", "predict_proba"):
            if hasattr(e, m):
                np.testing.assert_array_equal(getattr(e2, m)(X), getattr(e, m)(X))


# ------------------------------------------------------------------------- precomputed
def _rbf(A, B, g):
    return np.exp(-g * ((A[:, None] - B[None]) ** 2).sum(-1))


@pytest.mark.parametrize("mode", MODES)
def test_precomputed_equals_kernel_fit(mode, data):
    X, y, yc = data
    Xt = np.random.RandomState(9).randn(12, 4)
    K, Kt = _rbf(X, X, 0.5), _rbf(Xt, X, 0.5)
    idx = np.arange(0, 60, 4)
    for fi in (False, True):
        a = NystromKernelRidge(mode=mode, landmarks=idx, gamma=0.5, fit_intercept=fi).fit(X, y)
        b = NystromKernelRidge(mode=mode, landmarks=idx, kernel="precomputed",
                               fit_intercept=fi).fit(K, y)
        np.testing.assert_allclose(b.predict(Kt), a.predict(Xt), rtol=1e-9, atol=1e-11)
    a = NystromSVC(mode=mode, landmarks=idx, gamma=0.5).fit(X, yc)
    b = NystromSVC(mode=mode, landmarks=idx, kernel="precomputed").fit(K, yc)
    np.testing.assert_allclose(b.decision_function(Kt), a.decision_function(Xt), rtol=1e-9,
                               atol=1e-11)
    a = NystromKernelPCA(3, mode=mode, landmarks=idx, gamma=0.5).fit(X)
    b = NystromKernelPCA(3, mode=mode, landmarks=idx, kernel="precomputed").fit(K)
    np.testing.assert_allclose(b.transform(Kt), a.transform(Xt), rtol=1e-9, atol=1e-11)


def test_precomputed_uniform_draw_tags_and_errors(data):
    from asymkern.nystrom import approximation_error

    X, y, _ = data
    K = _rbf(X, X, 0.5)
    a = NystromKernelRidge(n_landmarks=10, gamma=0.5, random_state=3).fit(X, y)
    b = NystromKernelRidge(n_landmarks=10, kernel="precomputed", random_state=3).fit(K, y)
    np.testing.assert_array_equal(a.landmark_indices_, b.landmark_indices_)
    np.testing.assert_allclose(b.predict(K), a.predict(X), rtol=1e-9, atol=1e-11)
    ex = NystromKernelRidge(mode="exact", kernel="precomputed").fit(K, y)
    ex2 = NystromKernelRidge(mode="exact", gamma=0.5).fit(X, y)
    ap = NystromKernelRidge(mode="gsa", n_landmarks=10, kernel="precomputed",
                            random_state=3).fit(K, y)
    ap2 = NystromKernelRidge(mode="gsa", n_landmarks=10, gamma=0.5, random_state=3).fit(X, y)
    np.testing.assert_allclose(approximation_error(ap, ex), approximation_error(ap2, ex2),
                               rtol=1e-8)
    assert NystromSVC(kernel="precomputed").__sklearn_tags__().input_tags.pairwise
    assert not NystromSVC().__sklearn_tags__().input_tags.pairwise
    with pytest.raises(ValueError, match="square"):
        NystromKernelRidge(kernel="precomputed", n_landmarks=5).fit(X, y)
    with pytest.raises(ValueError, match="landmarks='uniform' or an array"):
        NystromKernelRidge(kernel="precomputed", landmarks="kmeans", n_landmarks=5).fit(K, y)
    with pytest.raises(ValueError, match="leave gamma=None"):
        NystromKernelRidge(kernel="precomputed", gamma=1.0, n_landmarks=5).fit(K, y)
    with pytest.raises(ValueError, match="expecting 60 features"):
        b.predict(K[:, :10])


def test_dask_refusals(data):
    da = pytest.importorskip("dask.array")
    X, y, yc = data
    Xd, yd = da.from_array(X, chunks=(20, 4)), da.from_array(y, chunks=20)
    with pytest.raises(NotImplementedError, match="sample_weight"):  # lla / ncr / spa take them
        NystromKernelRidge(mode="gsa", n_landmarks=10).fit(Xd, yd, sample_weight=np.ones(60))
    with pytest.raises(NotImplementedError, match="precomputed"):
        NystromKernelRidge(kernel="precomputed", n_landmarks=10).fit(Xd, yd)
    with pytest.raises(NotImplementedError, match="probability"):
        NystromSVC(probability=True, n_landmarks=10).fit(Xd, da.from_array(yc, chunks=20))
    with pytest.warns(ClippedParameterWarning, match="n_landmarks=100"):
        est = NystromKernelRidge(random_state=0).fit(Xd, yd)
    assert est.n_landmarks_ == 60


def test_svc_probability_precomputed_and_index_landmarks(data):
    """probability=True with kernel='precomputed' folds K[train][:, train] (its probabilities
    equal the fit on the data with the same kernel), and with landmarks given as row indices
    each fold keeps the given rows it trains on (it used to fail with an index error)."""
    from asymkern.kernels import RBFKernel

    X, _, yc = data
    K = RBFKernel(gamma=0.5)(X, X)
    idx = np.arange(40, 60)  # some folds train on only part of them
    kw = dict(probability=True, random_state=0)
    for mode in ("lla", "spa", "exact"):
        on_data = NystromSVC(kernel="rbf", kernel_params={"gamma": 0.5}, mode=mode,
                             landmarks=idx, **kw).fit(X, yc)
        on_K = NystromSVC(kernel="precomputed", mode=mode, landmarks=idx, **kw).fit(K, yc)
        np.testing.assert_allclose(on_K.predict_proba(K[:7]), on_data.predict_proba(X[:7]),
                                   rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="none of the given landmarks"):
        NystromSVC(landmarks=np.array([0]), **kw).fit(X, yc)


@pytest.mark.parametrize("svm", ["svc", "nusvc"])
def test_nystrom_svc_seeds_libsvm_from_random_state(svm):
    """libsvm's seed comes from random_state: numpy's global generator is left alone and
    probability=True (libsvm's internal cross-validation) repeats exactly."""
    from asymkern.nystrom import NystromSVC

    rng = np.random.RandomState(0)
    X = rng.randn(80, 2)
    y = (X[:, 0] > 0).astype(int)
    # numpy's legacy global generator is what libsvm's seed was drawn from
    np.random.seed(0)  # noqa: NPY002
    expected = np.random.rand()  # noqa: NPY002
    np.random.seed(0)  # noqa: NPY002
    NystromSVC(n_landmarks=20, random_state=0, svm=svm).fit(X, y)
    assert np.random.rand() == expected  # noqa: NPY002
    probas = []
    for seed in (1, 2):
        np.random.seed(seed)  # noqa: NPY002  (the global state must not matter)
        est = NystromSVC(n_landmarks=20, random_state=0, svm=svm, probability=True).fit(X, y)
        probas.append(est.predict_proba(X))
    np.testing.assert_array_equal(probas[0], probas[1])
