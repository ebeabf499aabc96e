"""The public estimators inside the scikit-learn workflows a practitioner uses.

``tests/test_sklearn_api.py`` runs scikit-learn's common checks, kernel-object cloning and grid
search over kernels, ``set_output`` and pickling; the ``test_*_sklearn.py`` files pin each
family's own conventions. This file covers what those leave out, for every estimator family
(docs/ARCHITECTURE.md, "scikit-learn conventions"):

* ``Pipeline`` / ``make_pipeline`` under ``GridSearchCV`` and ``cross_val_score`` with process
  workers (``n_jobs=2``): the same scores as ``n_jobs=1``, no warning raised in a worker (the
  parent's ``"error"`` filter reaches the workers), the fitted search pickles;
* pandas input: column names recorded and checked on every prediction method, a Series ``y``
  and string labels, nullable dtypes, object/categorical columns, ``set_output`` inside a
  ``ColumnTransformer``; the transfer operators' snapshots ``y`` (X's own state space);
* ``n_features_in_`` on numpy arrays and CPU tensors for every prediction method;
* ``clone``, ``get_params(deep=True)``/``set_params`` round trips with kernel objects, ``repr``;
* ``score`` = R² / accuracy with ``sample_weight``; no ``partial_fit``/``warm_start``;
* meta-estimators (``TransformedTargetRegressor``, ``CalibratedClassifierCV``,
  ``OneVsRestClassifier``, ``StackingClassifier``) around the classifiers and regressors;
* ``random_state`` as scikit-learn defines it (None: numpy's global RandomState, an int, a
  RandomState instance that successive fits advance, cross-validation reproducible).
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.ensemble import StackingClassifier
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from asymkern.decomposition import KernelPCA, KernelSVD
from asymkern.exceptions import ClippedParameterWarning
from asymkern.kernels import RBFKernel, SNEKernel
from asymkern.lssvm import AsKLSClassifier, LSSVMClassifier, LSSVMRegressor
from asymkern.nystrom import NystromFeatureMap, NystromKernelPCA, NystromKernelRidge, NystromSVC
from asymkern.operators import (
    ConditionalMeanEmbedding,
    CovarianceOperator,
    CrossCovarianceOperator,
    IllConditionedLaggedGramWarning,
    KernelCCA,
    KoopmanOperator,
    PerronFrobeniusOperator,
)

pd = pytest.importorskip("pandas")

N = 48
CV = KFold(3)
PAIRED = (KernelCCA, CrossCovarianceOperator, ConditionalMeanEmbedding)
TRANSFER = (KoopmanOperator, PerronFrobeniusOperator)
ALL = [KernelPCA, KernelSVD, AsKLSClassifier, LSSVMClassifier, LSSVMRegressor, NystromKernelPCA,
       NystromKernelRidge, NystromSVC, NystromFeatureMap, KernelCCA, CovarianceOperator,
       CrossCovarianceOperator, ConditionalMeanEmbedding, KoopmanOperator,
       PerronFrobeniusOperator]
#: small, reproducible settings (landmark counts below N so the Nyström draws matter)
SMALL = {NystromKernelPCA: {"n_landmarks": 20}, NystromKernelRidge: {"n_landmarks": 20},
         NystromSVC: {"n_landmarks": 20}, NystromFeatureMap: {"n_components": 20},
         CovarianceOperator: {"n_components": 3}, CrossCovarianceOperator: {"n_components": 2},
         KoopmanOperator: {"n_components": 3}, PerronFrobeniusOperator: {"n_components": 3}}
_ids = [c.__name__ for c in ALL]


def make(cls, **kw):
    """``cls`` at its small settings (``random_state=0`` where it has one) updated by ``kw``."""
    params = dict(SMALL.get(cls, {}))
    if "random_state" in cls().get_params():
        params["random_state"] = 0
    return cls(**{**params, **kw})


def data(cls, n: int = N, seed: int = 0):
    """(X, y) for ``cls``: labels, a target, a paired second view, or y=None (a trajectory for
    the transfer operators, X alone for the one-view transformers)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    if issubclass(cls, TRANSFER):
        X = np.cumsum(0.3 * rng.normal(size=(n, 3)), axis=0)
        return X, None
    est = cls()
    if is_classifier(est):
        return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    if is_regressor(est) and not issubclass(cls, ConditionalMeanEmbedding):
        return X, X[:, 0] - 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n)
    if issubclass(cls, PAIRED):
        return X, np.column_stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2]]) + 0.1 * rng.normal(
            size=(n, 2))
    return X, None


def fit(est, X, y):
    """Fit with the documented clipping (and, on the random-walk trajectory, the
    Perron–Frobenius regularisation) warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippedParameterWarning)
        warnings.simplefilter("ignore", IllConditionedLaggedGramWarning)
        return est.fit(X) if y is None else est.fit(X, y)


def methods(est) -> list[str]:
    """The prediction methods of a fitted estimator that take X alone."""
    names = ("predict", "decision_function", "predict_proba", "transform")
    return [m for m in names if hasattr(est, m)]


# ------------------------------------------------- pipelines, GridSearchCV, process workers
def _corr(est, X, y) -> float:
    """Held-out score of a paired transformer: squared correlation of the first pair of
    canonical variates (a practitioner's scorer for CCA-like estimators)."""
    xs, ys = est[-1].transform(est[:-1].transform(X), y)
    return float(np.corrcoef(xs[:, 0], ys[:, 0])[0, 1] ** 2)


def _search_cases():
    sc = StandardScaler()
    return {
        "KernelPCA": (make_pipeline(sc, KernelPCA(), Ridge()),
                      {"kernelpca__gamma": [0.1, 1.0], "kernelpca__n_components": [2, 4]}, None),
        "KernelSVD": (make_pipeline(sc, make(KernelSVD), Ridge()),
                      {"kernelsvd__gamma": [0.1, 1.0], "kernelsvd__n_components": [1, 2]}, None),
        "NystromKernelPCA": (make_pipeline(sc, make(NystromKernelPCA), Ridge()),
                             {"nystromkernelpca__gamma": [0.1, 1.0],
                              "nystromkernelpca__mode": ["lla", "gsa"]}, None),
        "NystromFeatureMap": (make_pipeline(sc, make(NystromFeatureMap), Ridge()),
                              {"nystromfeaturemap__gamma": [0.1, 1.0],
                               "nystromfeaturemap__n_components": [10, 20]}, None),
        "CovarianceOperator": (make_pipeline(sc, make(CovarianceOperator), Ridge()),
                               {"covarianceoperator__kernel_params": [{"gamma": 0.1},
                                                                      {"gamma": 1.0}]}, None),
        "AsKLSClassifier": (Pipeline([("sc", sc), ("m", make(AsKLSClassifier))]),
                            {"m__C": [0.1, 10.0], "m__kernel_params": [None, {"gamma": 0.5}]},
                            None),
        "LSSVMClassifier": (Pipeline([("sc", sc), ("m", LSSVMClassifier())]),
                            {"m__C": [0.1, 10.0], "m__kernel": [RBFKernel(gamma=0.1),
                                                                RBFKernel(gamma=1.0)]}, None),
        "LSSVMRegressor": (Pipeline([("sc", sc), ("m", LSSVMRegressor())]),
                           {"m__C": [0.1, 10.0], "m__kernel_params": [{"gamma": 0.1},
                                                                      {"gamma": 1.0}]}, None),
        "NystromKernelRidge": (Pipeline([("sc", sc), ("m", make(NystromKernelRidge))]),
                               {"m__alpha": [1e-3, 1.0], "m__gamma": [0.1, 1.0],
                                "m__mode": ["lla", "gsa"]}, None),
        "NystromSVC": (Pipeline([("sc", sc), ("m", make(NystromSVC))]),
                       {"m__nu": [0.2, 0.4], "m__gamma": [0.1, 1.0]}, None),
        "ConditionalMeanEmbedding": (Pipeline([("sc", sc), ("m", ConditionalMeanEmbedding())]),
                                     {"m__alpha": [1e-3, 1e-1],
                                      "m__kernel_x_params": [{"gamma": 0.1}, {"gamma": 1.0}]},
                                     None),
        # a one-feature state: the multi-feature default of score still warns (FutureWarning)
        "KoopmanOperator": (make(KoopmanOperator), {"alpha": [1e-6, 1e-2],
                                                    "kernel_params": [{"gamma": 0.1},
                                                                      {"gamma": 1.0}]}, None),
        "KernelCCA": (Pipeline([("sc", sc), ("m", KernelCCA(n_components=1))]),
                      {"m__alpha": [1e-3, 1e-1],
                       "m__kernel_x_params": [{"gamma": 0.1}, {"gamma": 1.0}]}, _corr),
        "CrossCovarianceOperator": (Pipeline([("sc", sc), ("m", CrossCovarianceOperator(
            n_components=1))]), {"m__kernel_x_params": [{"gamma": 0.1}, {"gamma": 1.0}]}, _corr),
    }


SEARCH = _search_cases()
_BY_NAME = {c.__name__: c for c in ALL}


@pytest.mark.parametrize("name", sorted(SEARCH))
def test_grid_search_and_cross_val_score_in_process_workers(name):
    """n_jobs=2 (loky processes: the estimators travel pickled, BLAS capped at one thread per
    worker) gives n_jobs=1's scores and choice; with the ``"error"`` filter, which scikit-learn
    hands to its workers, any warning in a worker (clipping, thread oversubscription) fails."""
    est, grid, scoring = SEARCH[name]
    cls = _BY_NAME[name]
    X, y = data(cls)
    if y is None and cls is not KoopmanOperator:  # a transformer before Ridge: a target
        X, y = data(LSSVMRegressor)
    if cls is KoopmanOperator:
        X = X[:, :1]
    runs = {}
    for n_jobs in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            search = GridSearchCV(est, grid, cv=CV, n_jobs=n_jobs, scoring=scoring,
                                  error_score="raise").fit(X, y)
            cvs = cross_val_score(est, X, y, cv=CV, n_jobs=n_jobs, scoring=scoring,
                                  error_score="raise")
        runs[n_jobs] = search, cvs
    (s1, c1), (s2, c2) = runs[1], runs[2]
    scores = s1.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and np.all(np.isfinite(c1))
    np.testing.assert_allclose(s2.cv_results_["mean_test_score"], scores, rtol=0, atol=1e-7)
    np.testing.assert_allclose(c2, c1, rtol=0, atol=1e-7)
    assert s1.best_index_ == s2.best_index_
    # the fitted search pickles and predicts as before
    again = pickle.loads(pickle.dumps(s2))
    out = "transform" if not hasattr(s2, "predict") else "predict"
    np.testing.assert_array_equal(getattr(again, out)(X), getattr(s2, out)(X))


# ------------------------------------------------------------------------- pandas input
def _outputs(est, X) -> list:
    out = []
    for m in methods(est):
        r = getattr(est, m)(X)
        out.append(r[0] if isinstance(r, tuple) else r)
    return out


PREDICTING = [c for c in ALL if c is not PerronFrobeniusOperator]


@pytest.mark.parametrize("cls", PREDICTING, ids=lambda c: c.__name__)
def test_dataframe_names_recorded_and_checked_by_every_method(cls):
    """scikit-learn's rules on every prediction method (and ``score``): renamed or reordered
    columns raise, a numpy X after a DataFrame fit warns, a refit on numpy drops the names and
    a DataFrame then warns."""
    X, y = data(cls)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    est = fit(make(cls), frame, y)
    assert list(est.feature_names_in_) == ["a", "b", "c"] and est.n_features_in_ == 3
    calls = {m: getattr(est, m) for m in methods(est)}
    if cls is KoopmanOperator:  # the snapshots of the trajectory Z are its own rows
        calls["score"] = lambda Z: est.score(Z.iloc[:-1], Z.iloc[1:],
                                             multioutput="uniform_average")
    elif hasattr(est, "score"):
        calls["score"] = lambda Z: est.score(Z, y)
    for m, call in calls.items():
        for bad in (frame.set_axis(["a", "b", "x"], axis=1), frame[["c", "b", "a"]]):
            with pytest.raises(ValueError, match="feature names"):
                call(bad)
        if m != "score":
            with pytest.warns(UserWarning, match="does not have valid feature names"):
                call(X)
    plain = fit(est, X, y)  # a refit on numpy forgets the names
    with pytest.warns(UserWarning, match="has feature names"):
        getattr(plain, methods(plain)[0])(frame)
    assert not hasattr(plain, "feature_names_in_")


CLASSIFIERS = [LSSVMClassifier, AsKLSClassifier, NystromSVC]
REGRESSORS = [LSSVMRegressor, NystromKernelRidge, ConditionalMeanEmbedding]


@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("kind", ["object", "category", "string"])
def test_series_of_string_labels(cls, kind):
    X, y = data(cls)
    labels = pd.Series(np.where(y == 1, "yes", "no")).astype(kind)
    est = fit(make(cls), pd.DataFrame(X, columns=["a", "b", "c"]), labels)
    assert list(est.classes_) == ["no", "yes"]
    ref = fit(make(cls), X, y)
    np.testing.assert_array_equal(est.predict(X), np.where(ref.predict(X) == 1, "yes", "no"))
    assert est.score(X, labels) == ref.score(X, y)


@pytest.mark.parametrize("cls", REGRESSORS, ids=lambda c: c.__name__)
def test_series_and_one_column_frame_targets(cls):
    """A Series y gives 1-D predictions, a one-column DataFrame (n, 1) ones: scikit-learn's
    regressor convention (``KernelRidge``)."""
    X, _ = data(LSSVMRegressor)
    t = X[:, 0] - 0.5 * X[:, 1]
    one = fit(make(cls), X, pd.Series(t, name="t"))
    two = fit(make(cls), X, pd.DataFrame({"t": t}))
    assert one.predict(X).shape == (N,) and two.predict(X).shape == (N, 1)
    np.testing.assert_allclose(two.predict(X)[:, 0], one.predict(X), rtol=1e-10, atol=1e-12)


@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
@pytest.mark.parametrize("cls", [KernelPCA, LSSVMClassifier, NystromKernelRidge, KernelCCA,
                                 KoopmanOperator], ids=lambda c: c.__name__)
def test_nullable_dtypes_without_missing_values_equal_float64(cls):
    """pandas' nullable Float64/Int64 columns without missing values are numbers (scikit-learn
    accepts them): the fit equals the float64 fit bitwise."""
    X, y = data(cls)
    Xi = np.round(4 * X)
    ref = _outputs(fit(make(cls), Xi, y), Xi)
    for dtype in ("Float64", "Int64"):
        frame = pd.DataFrame(Xi, columns=["a", "b", "c"]).astype(dtype)
        for a, b in zip(_outputs(fit(make(cls), frame, y), Xi), ref):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("cls", [KernelPCA, LSSVMClassifier, NystromKernelRidge],
                         ids=lambda c: c.__name__)
def test_missing_value_in_a_nullable_column_is_reported_as_nan(cls):
    """A pd.NA in a nullable column is the missing value it is (a ValueError saying X contains
    NaN, as for NaN and as scikit-learn says), not a non-numeric X (it was a TypeError)."""
    X, y = data(cls)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).astype("Float64")
    frame.iloc[3, 1] = pd.NA
    with pytest.raises(ValueError, match="X contains NaN"):
        fit(make(cls), frame, y)


@pytest.mark.parametrize("cls", [KernelSVD, AsKLSClassifier, NystromSVC, CovarianceOperator,
                                 ConditionalMeanEmbedding], ids=lambda c: c.__name__)
def test_text_and_categorical_columns_refused_naming_X(cls):
    X, y = data(cls)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    text = frame.assign(b=np.where(X[:, 1] > 0, "up", "down"))
    cat = frame.assign(b=pd.Categorical(np.where(X[:, 1] > 0, "up", "down")))
    for bad in (text, cat):
        with pytest.raises(TypeError, match="X must be numeric"):
            fit(make(cls), bad, y)


@pytest.mark.parametrize("cls", [KernelPCA, KernelSVD, NystromKernelPCA, NystromFeatureMap,
                                 CovarianceOperator, KernelCCA], ids=lambda c: c.__name__)
def test_pandas_output_in_a_column_transformer_keeps_the_index(cls):
    X, y = data(cls)
    frame = pd.DataFrame(X, columns=["a", "b", "c"], index=pd.RangeIndex(100, 100 + N))
    ct = ColumnTransformer([("k", make(cls), ["a", "b"]), ("p", "passthrough", ["c"])])
    out = ct.set_output(transform="pandas").fit(frame, y).transform(frame)
    k = ct.named_transformers_["k"]
    assert list(out.columns) == [f"k__{n}" for n in k.get_feature_names_out()] + ["p__c"]
    assert out.index.equals(frame.index)
    direct = fit(make(cls), frame[["a", "b"]], y).transform(frame[["a", "b"]])
    np.testing.assert_array_equal(out.iloc[:, :-1].to_numpy(), direct)


@pytest.mark.parametrize("cls", TRANSFER, ids=lambda c: c.__name__)
def test_snapshot_frame_must_have_the_columns_of_X(cls):
    """The snapshots y of a transfer operator are states, compared with X feature by feature
    by the kernel: a DataFrame y whose columns are X's reordered (or others) would fit (and
    score) a different model silently; it is refused naming y, as KernelSVD refuses such a Z.
    The same y in X's column order fits as the numpy arrays do."""
    X, _ = data(cls)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    X0, X1 = frame.iloc[:-1], frame.iloc[1:]
    ref = fit(make(cls), X[:-1], X[1:])
    same = fit(make(cls), X0, X1)
    np.testing.assert_array_equal(np.asarray(same.eigenvalues_), np.asarray(ref.eigenvalues_))
    for bad in (X1[["c", "b", "a"]], X1.set_axis(["a", "b", "z"], axis=1)):
        with pytest.raises(ValueError, match="feature names of y"):
            fit(make(cls), X0, bad)
    if cls is KoopmanOperator:
        s = same.score(X0, X1, multioutput="uniform_average")
        assert s == ref.score(X[:-1], X[1:], multioutput="uniform_average")
        with pytest.raises(ValueError, match="feature names of y"):
            same.score(X0, X1[["c", "b", "a"]], multioutput="uniform_average")


@pytest.mark.parametrize("cls", [KernelCCA, CrossCovarianceOperator], ids=lambda c: c.__name__)
def test_paired_view_frame_columns_are_checked(cls):
    """transform(X, y) with y's columns reordered is refused (it returned wrong y-scores
    silently); the same columns in order give the fit's scores."""
    X, y = data(cls)
    Y = pd.DataFrame(y, columns=["u", "v"])
    est = fit(make(cls), X, Y)
    with pytest.raises(ValueError, match="feature names of y"):
        est.transform(X, Y[["v", "u"]])
    if cls is KernelCCA:
        with pytest.raises(ValueError, match="feature names of y"):
            est.transform_y(Y.rename(columns={"u": "w"}))
    same = est.transform(X, Y)
    np.testing.assert_array_equal(same[1], est.transform(X, y)[1])


# --------------------------------------------------------------------- n_features_in_
@pytest.mark.parametrize("array", ["numpy", "torch"])
@pytest.mark.parametrize("cls", PREDICTING, ids=lambda c: c.__name__)
def test_wrong_feature_count_names_X_on_every_method(cls, array):
    if array == "torch":
        torch = pytest.importorskip("torch")
        if "device" not in cls().get_params():
            pytest.skip(f"{cls.__name__} has no torch executor (it reads tensors on the host)")
        conv = torch.from_numpy
    else:
        def conv(a):
            return a
    kw = {"probability": True} if cls in CLASSIFIERS else {}
    X, y = data(cls)
    est = fit(make(cls, **kw), conv(X), None if y is None else conv(y))
    assert est.n_features_in_ == 3
    narrow = conv(np.ascontiguousarray(X[:, :2]))
    for m in methods(est) + ["score"] * hasattr(est, "score"):
        args = () if m != "score" else ((narrow,) if cls is KoopmanOperator else (conv(y),))
        with pytest.raises(ValueError, match=r"X has 2 features, but \w+ is expecting 3"):
            getattr(est, m)(narrow, *args)


# ------------------------------------------------------- clone, parameters, repr
@pytest.mark.parametrize("cls", ALL, ids=_ids)
def test_clone_of_a_fitted_estimator_is_unfitted(cls):
    X, y = data(cls)
    est = fit(make(cls), X, y)
    check_is_fitted(est)
    again = clone(est)
    with pytest.raises(NotFittedError):
        check_is_fitted(again)
    assert set(vars(again)) == set(again.get_params(deep=False))
    for m in methods(again):
        with pytest.raises(NotFittedError):
            getattr(again, m)(X)


@pytest.mark.parametrize("cls", ALL, ids=_ids)
def test_deep_params_round_trip_with_kernel_objects(cls):
    """``set_params(**get_params(deep=True))`` rebuilds the estimator with its kernel objects'
    parameters; ``<kernel>__gamma`` addresses the kernel; ``repr`` shows only what changed."""
    names = [k for k in ("kernel", "kernel_x", "kernel_y") if k in cls().get_params()]
    if not names:
        pytest.skip(f"{cls.__name__} has no kernel parameter")
    kernels = {k: (SNEKernel(gamma=0.4) if k == "kernel_y" else RBFKernel(gamma=0.3))
               for k in names}
    est = cls(**kernels)
    deep = est.get_params(deep=True)
    rebuilt = cls().set_params(**{k: type(v)() for k, v in kernels.items()})
    rebuilt.set_params(**{k: v for k, v in deep.items() if "__" in k})
    for k, kern in kernels.items():
        assert rebuilt.get_params()[f"{k}__gamma"] == kern.gamma
        assert type(rebuilt.get_params()[k]) is type(kern)
    assert repr(rebuilt) == repr(est)
    rebuilt.set_params(**{f"{names[0]}__gamma": 2.0})
    assert kernels[names[0]].gamma != 2.0  # the kernel given to est is not shared
    assert f"{names[0]}=RBFKernel(bandwidth=None, gamma=2.0)" in repr(rebuilt).replace("\n", "")
    assert repr(cls()) == f"{cls.__name__}()"


# ------------------------------------------------------------------------ score methods
@pytest.mark.parametrize("cls", [c for c in ALL if hasattr(c, "score")],
                         ids=lambda c: c.__name__)
def test_score_is_r2_or_accuracy_with_sample_weight(cls):
    X, y = data(cls)
    est = fit(make(cls), X, y)
    Xt, yt = data(cls, n=30, seed=7)
    w = np.random.default_rng(3).uniform(0.1, 2.0, size=30 - (cls is KoopmanOperator))
    if cls is KoopmanOperator:
        p = est.predict(Xt[:-1])
        for sw in (None, w):
            assert est.score(Xt[:-1], Xt[1:], sample_weight=sw, multioutput="uniform_average") \
                == pytest.approx(r2_score(Xt[1:], p, sample_weight=sw), rel=1e-12)
        return
    metric = accuracy_score if is_classifier(est) else r2_score
    p = est.predict(Xt)
    for sw in (None, w):
        assert est.score(Xt, yt, sample_weight=sw) == pytest.approx(
            metric(yt, p, sample_weight=sw), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("cls", ALL, ids=_ids)
def test_no_partial_fit_or_warm_start(cls):
    """None is documented: every fit starts from the constructor parameters alone."""
    assert not hasattr(cls, "partial_fit")
    assert "warm_start" not in cls().get_params()


# --------------------------------------------------------------- meta-estimators
def _blobs(n: int, seed: int, k: int = 3):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0, 0.0], [3.0, 0.0, 0.0], [0.0, 3.0, 0.0]])[:k]
    y = np.arange(n) % k
    return centres[y] + 0.6 * rng.normal(size=(n, 3)), y


@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_classifiers_inside_meta_estimators(cls):
    X, y = _blobs(60, 0)
    Xt, yt = _blobs(60, 1)
    yb, ybt = (y == 0).astype(int), (yt == 0).astype(int)
    base = make(cls, nu=0.3) if cls is NystromSVC else make(cls)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cal = CalibratedClassifierCV(clone(base), cv=3).fit(X, yb)
        ovr = OneVsRestClassifier(clone(base)).fit(X, y)
        stack = StackingClassifier([("k", clone(base)), ("lr", LogisticRegression())],
                                   cv=3).fit(X, y)
    assert cal.score(Xt, ybt) > 0.9 and ovr.score(Xt, yt) > 0.9 and stack.score(Xt, yt) > 0.9
    for model, k in ((cal, 2), (stack, 3)):
        P = model.predict_proba(Xt)
        assert P.shape == (60, k) and np.allclose(P.sum(axis=1), 1.0) and np.all(P >= 0)
    # a one-vs-rest binary problem: the decision values of the wrapped machine are the
    # column OneVsRestClassifier reads
    est = ovr.estimators_[0]
    np.testing.assert_array_equal(ovr.decision_function(Xt)[:, 0], est.decision_function(Xt))


@pytest.mark.parametrize("cls", REGRESSORS, ids=lambda c: c.__name__)
def test_regressors_inside_transformed_target_regressor(cls):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    t = np.exp(0.7 * X[:, 0]) + 0.05 * rng.normal(size=80)
    base = make(cls, alpha=1e-3) if cls is not LSSVMRegressor else make(cls, C=100.0)
    scaled = TransformedTargetRegressor(clone(base), transformer=StandardScaler()).fit(X, t)
    logged = TransformedTargetRegressor(clone(base), func=np.log1p,
                                        inverse_func=np.expm1).fit(X, t)
    Xt = rng.normal(size=(40, 3))
    tt = np.exp(0.7 * Xt[:, 0])
    assert scaled.score(Xt, tt) > 0.6 and logged.score(Xt, tt) > 0.6
    # the wrapped regressor saw the standardised target
    z = (t - t.mean()) / t.std()
    np.testing.assert_allclose(scaled.regressor_.predict(X),
                               fit(clone(base), X, z).predict(X), rtol=1e-9, atol=1e-10)


# ------------------------------------------------------------------------ random_state
#: settings under which the fit draws random numbers
RANDOM = {NystromKernelPCA: {}, NystromKernelRidge: {}, NystromSVC: {}, NystromFeatureMap: {},
          ConditionalMeanEmbedding: {"n_landmarks": 20}, KoopmanOperator: {"n_landmarks": 20},
          KernelSVD: {"solver": "randomized"}, KernelPCA: {"solver": "randomized"},
          AsKLSClassifier: {"probability": True}}


def _values(est, X):
    m = "decision_function" if hasattr(est, "decision_function") else methods(est)[0]
    return getattr(est, m)(X)


@pytest.mark.parametrize("cls", list(RANDOM), ids=lambda c: c.__name__)
def test_random_state_as_scikit_learn_defines_it(cls):
    """int: reproducible, and RandomState(seed) gives the same first fit; None: numpy's global
    RandomState (reseeding numpy reproduces the fit); an instance is advanced by each fit (a
    second fit with it draws new numbers), but never by predict/transform, and cloning (as
    cross-validation does) copies its state, so cross_val_score is reproducible and leaves the
    caller's instance untouched."""
    X, y = data(cls)
    kw = RANDOM[cls]

    def run(rs):
        return _values(fit(make(cls, random_state=rs, **kw), X, y), X)

    first = run(0)
    np.testing.assert_array_equal(run(0), first)
    np.testing.assert_array_equal(run(np.random.RandomState(0)), first)
    saved = np.random.get_state()  # noqa: NPY002 - None means numpy's global RandomState
    try:
        np.random.seed(11)  # noqa: NPY002
        a = run(None)
        np.random.seed(11)  # noqa: NPY002
        np.testing.assert_array_equal(run(None), a)
    finally:
        np.random.set_state(saved)  # noqa: NPY002
    rs = np.random.RandomState(0)
    est = fit(make(cls, random_state=rs, **kw), X, y)
    after_fit = rs.get_state()[1].copy()
    assert not np.array_equal(after_fit, np.random.RandomState(0).get_state()[1])
    _values(est, X)
    np.testing.assert_array_equal(rs.get_state()[1], after_fit)  # predict draws nothing
    if hasattr(est, "score") and cls is not KoopmanOperator:
        fresh = make(cls, random_state=np.random.RandomState(0), **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClippedParameterWarning)
            s1 = cross_val_score(fresh, X, y, cv=CV)
            s2 = cross_val_score(fresh, X, y, cv=CV)
        np.testing.assert_array_equal(s1, s2)
        np.testing.assert_array_equal(fresh.random_state.get_state()[1],
                                      np.random.RandomState(0).get_state()[1])
