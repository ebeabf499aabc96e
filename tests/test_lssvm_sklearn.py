"""LS-SVM / AsK-LS as scikit-learn citizens (issue 15): the ``gamma`` → ``C`` rename and its
deprecated aliases, ``sample_weight`` and ``class_weight`` against dense KKT references and
duplicated rows, ``probability=True`` (exact leave-one-out values of the LS-SVM against a
brute-force refit; Platt calibration), input validation, Kernel instances in clone/grid search,
``random_state`` policy and the common checks of the new parameters."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.model_selection import GridSearchCV
from sklearn.utils import compute_sample_weight
from sklearn.utils.estimator_checks import parametrize_with_checks

from asymkern.kernels import RBFKernel, SNEKernel, get_kernel
from asymkern.lssvm import (
    AsKLSClassifier,
    IllConditionedWarning,
    KernelPair,
    LSSVMClassifier,
    LSSVMRegressor,
    askls_C_path,
    askls_gamma_path,
    askls_kkt_matrix,
    askls_solve,
    lssvm_C_path,
    lssvm_gamma_path,
    lssvm_solve,
)
from asymkern.lssvm._estimators import _lssvm_loo_setup, _lssvm_loo_values

ESTIMATORS = [LSSVMClassifier, LSSVMRegressor, AsKLSClassifier]


def _data(n=60, classes=2, seed=0, d=3):
    X, y = make_blobs(n, d, centers=classes, cluster_std=2.5, random_state=seed)
    return X, y


def _targets(est_cls, y):
    return y.astype(float) + 0.1 * np.arange(y.size) % 1.0 if est_cls is LSSVMRegressor else y


def _dense_lssvm(K, t, C, v=None):
    """Obviously-correct reference: np.linalg.solve of [[0, 1ᵀ], [1, K + diag(1/(C v))]]."""
    n = K.shape[0]
    v = np.ones(n) if v is None else np.asarray(v, float)
    A = np.zeros((n + 1, n + 1))
    A[0, 1:] = A[1:, 0] = 1.0
    A[1:, 1:] = K + np.diag(1.0 / (C * v))
    x = np.linalg.solve(A, np.concatenate([[0.0], t]))
    return x[0], x[1:]


# ------------------------------------------------------------------------- 1. naming
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_gamma_is_a_deprecated_alias_of_C(cls):
    X, y = _data()
    t = _targets(cls, y)
    new = cls(C=7.0).fit(X, t)
    old = cls(gamma=7.0)
    with pytest.warns(FutureWarning, match="renamed 'C'.*kernel width"):
        old.fit(X, t)
    np.testing.assert_array_equal(new.predict(X), old.predict(X))
    assert "C" in cls().get_params() and cls().get_params()["gamma"] == "deprecated"
    with warnings.catch_warnings():  # the new name warns about nothing
        warnings.simplefilter("error", FutureWarning)
        cls(C=2.0).fit(X, t).predict(X)


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, np.inf, "a", True])
def test_bad_C_is_rejected_by_the_name_used(cls, bad):
    X, y = _data(30)
    with pytest.raises(ValueError, match=r"\bC\b"):
        cls(C=bad).fit(X, _targets(cls, y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(ValueError, match="gamma"):
            cls(gamma=bad).fit(X, _targets(cls, y))


def test_solver_functions_renamed_with_deprecated_aliases():
    rng = np.random.default_rng(0)
    n = 25
    K = rng.random((n, n)) + np.eye(n)
    Ks = K @ K.T
    y = np.where(rng.random(n) > 0.5, 1.0, -1.0)
    with pytest.warns(FutureWarning, match="askls_C_path"):
        old = askls_gamma_path(K, y, [0.5, 2.0])
    with pytest.warns(FutureWarning, match="lssvm_C_path"):
        old_l = lssvm_gamma_path(Ks, y, [0.5, 2.0])
    for a, b in zip(old, askls_C_path(K, y, [0.5, 2.0])):
        np.testing.assert_array_equal(a.coef[0], b.coef[0])
        assert a.C == b.C
    for a, b in zip(old_l, lssvm_C_path(Ks, y, [0.5, 2.0])):
        np.testing.assert_array_equal(a.coef[0], b.coef[0])
    with pytest.warns(FutureWarning, match="'gamma' was renamed 'C'"):
        s_old = askls_solve(K, y, gamma=3.0)
    np.testing.assert_array_equal(s_old.coef[1], askls_solve(K, y, C=3.0).coef[1])
    with pytest.warns(FutureWarning, match="'gamma' was renamed 'C'"):
        lssvm_solve(Ks, y, gamma=3.0)
    with pytest.raises(TypeError):
        lssvm_solve(Ks, y, 1.0, gamma=3.0)
    with pytest.raises(TypeError, match="C"):
        lssvm_solve(Ks, y)
    with pytest.warns(FutureWarning, match="Solution.C"):
        assert s_old.gamma == 3.0


# ------------------------------------------------------------------------- 2. sample_weight
@pytest.mark.parametrize("method", ["chol", "eig", "dense", "sparse"])
def test_weighted_lssvm_solve_equals_dense_kkt(method):
    rng = np.random.default_rng(1)
    n = 40
    X = rng.standard_normal((n, 3))
    K = get_kernel("rbf", gamma=0.4)(X, X)
    t = rng.standard_normal(n)
    v = rng.random(n) + 0.1
    b, a = _dense_lssvm(K, t, 3.0, v)
    if method == "sparse":
        sol = lssvm_solve(sp.csr_matrix(K), t, 3.0, sample_weight=v)
    else:
        sol = lssvm_solve(K, t, 3.0, method=method, sample_weight=v)
    np.testing.assert_allclose(sol.bias[0, 0], b, atol=1e-10)
    np.testing.assert_allclose(sol.coef[0][:, 0], a, atol=1e-10)
    (path,) = lssvm_C_path(K, t, [3.0], sample_weight=v)
    np.testing.assert_allclose(path.coef[0][:, 0], a, atol=1e-10)


@pytest.mark.parametrize("method", ["schur", "eig", "sparse", "lowrank", "dense", "path"])
def test_weighted_askls_solve_equals_dense_kkt(method):
    """Every AsK-LS path against np.linalg.solve of eq. (6) with diag(1/(C v)) blocks."""
    rng = np.random.default_rng(2)
    n, C = 35, 2.5
    K = rng.random((n, n)) + np.eye(n)
    y = np.where(rng.random(n) > 0.5, 1.0, -1.0)
    v = rng.random(n) + 0.2
    A = askls_kkt_matrix(K, y, C, v)
    np.testing.assert_allclose(np.diag(A)[2:], np.tile(1.0 / (C * v), 2))
    x = np.linalg.solve(A, np.concatenate([[0.0, 0.0], np.ones(2 * n)]))
    if method == "sparse":
        sol = askls_solve(sp.csr_matrix(K), y, C, sample_weight=v)
    elif method == "lowrank":
        U, s, Wt = np.linalg.svd(K)
        sol = askls_solve((U, s, Wt.T), y, C, method="lowrank", sample_weight=v)
    elif method == "path":
        (sol,) = askls_C_path(K, y, [C], sample_weight=v)
    else:
        sol = askls_solve(K, y, C, method=method, sample_weight=v)
    np.testing.assert_allclose(sol.bias[:, 0], x[:2], atol=1e-9)
    np.testing.assert_allclose(sol.coef[0][:, 0], x[2:n + 2] * y, atol=1e-9)
    np.testing.assert_allclose(sol.coef[1][:, 0], x[n + 2:] * y, atol=1e-9)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_integer_weights_equal_repeated_rows(cls):
    X, y = _data(40, classes=3 if cls is not LSSVMRegressor else 2, seed=3)
    t = _targets(cls, y)
    w = np.random.default_rng(4).integers(1, 4, X.shape[0])
    # AsK-LS with a kernel that is not row-normalised: repetition = weighting exactly
    kw = {"kernel": "rbf", "kernel_params": {"gamma": 0.3}, "C": 5.0}
    weighted = cls(**kw).fit(X, t, sample_weight=w)
    idx = np.repeat(np.arange(X.shape[0]), w)
    repeated = cls(**kw).fit(X[idx], t[idx])
    Xt = _data(20, seed=9)[0]
    f = "predict" if cls is LSSVMRegressor else "decision_function"
    np.testing.assert_allclose(getattr(weighted, f)(Xt), getattr(repeated, f)(Xt), atol=1e-8)


def test_askls_weighted_estimator_equals_dense_kkt_with_rownormalised_kernel():
    """SNE: repetition is not weighting (normalisers change), so the reference is the weighted
    dense KKT system of eq. (6) on the same kernel matrix."""
    X, y = _data(40, seed=5)
    v = np.random.default_rng(6).random(40) + 0.3
    m = AsKLSClassifier(kernel="sne", C=4.0).fit(X, y, sample_weight=v)
    k = get_kernel("sne")
    K = k(X, X)
    ys = np.where(y == m.classes_[1], 1.0, -1.0)
    x = np.linalg.solve(askls_kkt_matrix(K, ys, 4.0, v),
                        np.concatenate([[0.0, 0.0], np.ones(80)]))
    np.testing.assert_allclose(m.intercept_[:, 0], x[:2], atol=1e-9)
    np.testing.assert_allclose(m.coef_target_[:, 0], x[2:42] * ys, atol=1e-9)
    np.testing.assert_allclose(m.coef_source_[:, 0], x[42:] * ys, atol=1e-9)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_zero_weight_equals_leaving_the_sample_out(cls):
    X, y = _data(40, seed=7)
    t = _targets(cls, y)
    w = np.ones(40)
    w[[3, 10, 11]] = 0.0
    keep = w > 0
    a = cls().fit(X, t, sample_weight=w)
    b = cls().fit(X[keep], t[keep])
    f = "predict" if cls is LSSVMRegressor else "decision_function"
    np.testing.assert_allclose(getattr(a, f)(X), getattr(b, f)(X), atol=1e-9)


@pytest.mark.parametrize("cls", [LSSVMRegressor, AsKLSClassifier])
def test_zero_weight_with_precomputed_kernel(cls):
    X, y = _data(40, seed=8)
    t = _targets(cls, y)
    k = get_kernel("rbf", gamma=0.3)
    w = np.ones(40)
    w[[0, 5]] = 0.0
    keep = w > 0
    K = k(X, X)
    a = cls(kernel="precomputed").fit(K, t, sample_weight=w)
    b = cls(kernel="precomputed").fit(K[np.ix_(keep, keep)], t[keep])
    Xt = _data(10, seed=1)[0]
    if cls is AsKLSClassifier:
        fa = a.decision_function(KernelPair(k(Xt, X), k(X, Xt)))
        fb = b.decision_function(KernelPair(k(Xt, X[keep]), k(X[keep], Xt)))
    else:
        fa, fb = a.predict(k(Xt, X)), b.predict(k(Xt, X[keep]))
    np.testing.assert_allclose(fa, fb, atol=1e-9)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_bad_sample_weight(cls):
    X, y = _data(30)
    t = _targets(cls, y)
    with pytest.raises(ValueError, match="(?i)negative"):
        cls().fit(X, t, sample_weight=-np.ones(30))
    with pytest.raises(ValueError, match=r"sample_weight|shape"):
        cls().fit(X, t, sample_weight=np.ones(29))
    with pytest.raises(ValueError, match="non-zero|zero for every sample"):
        cls().fit(X, t, sample_weight=np.zeros(30))
    w = np.linspace(0.5, 2.0, 30)
    w0 = w.copy()
    cls().fit(X, t, sample_weight=w)
    np.testing.assert_array_equal(w, w0)  # input not modified


# ------------------------------------------------------------------------- 3. class_weight
@pytest.mark.parametrize("cls", [LSSVMClassifier, AsKLSClassifier])
@pytest.mark.parametrize("class_weight", ["balanced", {0: 1.0, 1: 3.0, 2: 0.5}])
def test_class_weight_is_per_sample_weight(cls, class_weight):
    X, y = _data(45, classes=3, seed=2)
    y = y[:40]
    X = X[:40]
    sw = np.linspace(0.5, 1.5, 40)
    a = cls(class_weight=class_weight).fit(X, y, sample_weight=sw)
    b = cls().fit(X, y, sample_weight=sw * compute_sample_weight(class_weight, y))
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-10)


def test_class_weight_bad_value():
    X, y = _data(30)
    with pytest.raises(ValueError, match="class_weight"):
        LSSVMClassifier(class_weight="balance").fit(X, y)


# ------------------------------------------------------------------------- 4. probability
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("kernel", ["rbf", "asymmetric"])
def test_lssvm_closed_form_loo_equals_refit(weighted, k, kernel):
    """f₋ᵢ(xᵢ) = yᵢ − aᵢ/(A⁻¹)ᵢᵢ (Cawley & Talbot 2004) against n leave-one-out refits
    (Cholesky inverse for the SPD case, LU for an asymmetric matrix)."""
    rng = np.random.default_rng(10)
    n, C = 30, 4.0
    X = rng.standard_normal((n, 2))
    K = get_kernel("rbf", gamma=0.5)(X, X) if kernel == "rbf" else rng.random((n, n))
    Y = np.where(rng.random((n, k)) > 0.5, 1.0, -1.0)
    v = rng.random(n) + 0.2 if weighted else None
    sol = lssvm_solve(K, Y, C, sample_weight=v)
    F = _lssvm_loo_values(_lssvm_loo_setup(K, C, v), sol, Y)
    ref = np.zeros((n, k))
    for i in range(n):
        m = np.arange(n) != i
        for j in range(k):
            b, a = _dense_lssvm(K[np.ix_(m, m)], Y[m, j], C, None if v is None else v[m])
            ref[i, j] = K[i, m] @ a + b
    np.testing.assert_allclose(F, ref, atol=1e-9)


@pytest.mark.parametrize("cls,kw", [(LSSVMClassifier, {}), (AsKLSClassifier, {}),
                                    (AsKLSClassifier, {"merge": "source"}),
                                    (AsKLSClassifier, {"nystrom": 10})])
@pytest.mark.parametrize("classes", [2, 3])
def test_predict_proba_only_with_probability(cls, kw, classes):
    X, y = _data(60, classes=classes, seed=11)
    plain = cls(**kw, **({"random_state": 0} if cls is AsKLSClassifier else {})).fit(X, y)
    assert not hasattr(plain, "predict_proba")
    est = cls(probability=True, **kw, **({"random_state": 0} if cls is AsKLSClassifier else {}))
    est.fit(X, y)
    P = est.predict_proba(X)
    assert P.shape == (60, classes)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    assert np.all((P >= 0) & (P <= 1))
    assert np.mean(est.classes_[P.argmax(axis=1)] == y) > 0.8
    np.testing.assert_allclose(np.exp(est.predict_log_proba(X)), P, atol=1e-12)
    if classes == 2:  # a monotone map of the decision values
        order = np.argsort(est.decision_function(X))
        assert np.all(np.diff(P[order, 1]) >= -1e-12)
    P32 = est.fit(X.astype(np.float32), y).predict_proba(X.astype(np.float32))
    assert P32.dtype == np.float32


def test_askls_probability_is_reproducible_and_stack_keeps_its_proba():
    X, y = _data(60, seed=12)
    a = AsKLSClassifier(probability=True, random_state=3).fit(X, y).predict_proba(X)
    b = AsKLSClassifier(probability=True, random_state=3).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    st = AsKLSClassifier(merge="stack", cv=4, random_state=0).fit(X, y)
    assert hasattr(st, "predict_proba")  # from the stacking regressions, probability unused
    st2 = AsKLSClassifier(merge="stack", cv=4, random_state=0, probability=True).fit(X, y)
    np.testing.assert_array_equal(st.predict_proba(X), st2.predict_proba(X))


# ------------------------------------------------------------------------- 5. validation
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_feature_names_and_count_are_checked(cls):
    pd = pytest.importorskip("pandas")
    X, y = _data(30)
    t = _targets(cls, y)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    est = cls().fit(df, t)
    assert list(est.feature_names_in_) == ["a", "b", "c"] and est.n_features_in_ == 3
    est.predict(df)
    with pytest.raises(ValueError, match="feature names"):
        est.predict(df[["c", "a", "b"]])
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])
    with pytest.raises(ValueError, match="Reshape"):
        est.predict(X[0])
    est.score(df, t)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_kernel_instance_never_mutated_and_cloned(cls):
    X, y = _data(30)
    k = RBFKernel(gamma=0.7)
    before = k.get_params()
    est = cls(kernel=k).fit(X, _targets(cls, y))
    assert est.kernel is k and k.get_params() == before
    c = clone(est)
    assert c.kernel is not k and c.kernel.get_params() == before
    c.set_params(kernel__gamma=0.1)
    assert c.kernel.gamma == 0.1 and k.gamma == 0.7


def test_grid_search_over_kernels_and_kernel_gamma():
    X, y = _data(60, seed=13)
    grid = [{"kernel": [SNEKernel(), RBFKernel()], "kernel__gamma": [0.05, 0.5], "C": [1, 10]},
            {"kernel": ["rbf"], "kernel_params": [{"gamma": 0.2}]}]
    sne = SNEKernel()
    gs = GridSearchCV(AsKLSClassifier(kernel=sne, random_state=0), grid, cv=3).fit(X, y)
    assert len(gs.cv_results_["params"]) == 9
    assert sne.get_params() == {"bandwidth": None, "gamma": None}  # the user's instance
    best = gs.best_estimator_
    assert best.score(X, y) > 0.8
    gl = GridSearchCV(LSSVMClassifier(), {"kernel": [RBFKernel()],
                                          "kernel__gamma": [0.1, 1.0]}, cv=3).fit(X, y)
    assert gl.best_params_["kernel__gamma"] in (0.1, 1.0)


def test_random_state_policy():
    X, y = _data(60, seed=14)
    with pytest.raises(TypeError, match="Generator"):
        AsKLSClassifier(nystrom=10, random_state=np.random.default_rng(0)).fit(X, y)
    a = AsKLSClassifier(nystrom=10, random_state=5).fit(X, y)
    b = AsKLSClassifier(nystrom=10, random_state=5).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    # None means fresh entropy, not a fixed seed: the calibration folds differ between fits
    coefs = {tuple(AsKLSClassifier(probability=True).fit(X, y).calibration_.coef_.ravel())
             for _ in range(4)}
    assert len(coefs) > 1


# ------------------------------------------------------------------------- 6. common checks
_PROBA_WEIGHTS = ("the Platt sigmoid is fitted on out-of-sample decision values: a repeated row "
                  "is in the training part of its twin's leave-one-out/CV fit, a weighted row "
                  "is not (scikit-learn's SVC(probability=True) has the same property)")
_PROBA_ARGMAX = ("predict uses the decision values (as SVC does); with several classes the "
                 "argmax of the one-vs-rest Platt probabilities can differ near a boundary")
_BALANCED = ("class_weight='balanced' counts samples (scikit-learn's definition), so repeating "
             "rows changes the class weights while sample weights do not")
_SW = ("check_sample_weight_equivalence_on_dense_data",
       "check_sample_weight_equivalence_on_sparse_data")
_TRAIN = ("check_classifiers_train", "check_classifiers_train(readonly_memmap=True)",
          "check_classifiers_train(readonly_memmap=True,X_dtype=float32)")


def _expected_failures(est):
    out = {}
    if est.get_params().get("probability"):
        out.update({c: _PROBA_WEIGHTS for c in _SW})
        out.update({c: _PROBA_ARGMAX for c in _TRAIN})
    if est.get_params().get("class_weight") == "balanced":
        out.update({c: _BALANCED for c in _SW})
    return out


@parametrize_with_checks([
    LSSVMClassifier(probability=True),
    LSSVMClassifier(class_weight="balanced"),
    AsKLSClassifier(kernel="rbf"),
    AsKLSClassifier(probability=True, random_state=0),
], expected_failed_checks=_expected_failures)
def test_sklearn_common_checks_new_parameters(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllConditionedWarning)
        check(estimator)


def test_nystrom_askls_with_weights_at_full_rank_equals_exact():
    """All landmarks (K̃ = K): the weighted low-rank solve equals the weighted exact one."""
    X, y = _data(30, seed=15)
    v = np.random.default_rng(16).random(30) + 0.5
    kw = {"kernel": "rbf", "kernel_params": {"gamma": 0.2}, "C": 3.0}
    ex = AsKLSClassifier(**kw).fit(X, y, sample_weight=v)
    ny = AsKLSClassifier(**kw, nystrom=30, random_state=0).fit(X, y, sample_weight=v)
    np.testing.assert_allclose(ny.decision_function(X), ex.decision_function(X), atol=1e-6)
