"""Size of a fitted AsK-LS model with the Nyström option (He et al. (2023), eq. 6–7; the
Nyström extension of Tao et al. (2024), eq. 8–9).

Prediction needs kernel values against the landmarks only, so the fitted model must not keep
the n × r factors U, V of the training kernel matrix: besides the documented n-sized fitted
attributes (``X_fit_``, ``coef_source_``, ``coef_target_``, ``oof_parts_``) it holds nothing
with n rows, and its predictions equal the factor model's at the training points.
"""

from __future__ import annotations

import dataclasses
import pickle
import types

import numpy as np
import pytest
import scipy.sparse as sp

from asymkern._dask import is_dask_array
from asymkern.kernels import get_kernel
from asymkern.linalg import asymmetric_nystrom
from asymkern.lssvm import AsKLSClassifier, KernelPair

# the fitted attributes documented as n-sized (AsKLSClassifier's "Attributes" section)
_DOCUMENTED_N_SIZED = ("X_fit_", "coef_source_", "coef_target_", "oof_parts_")


def _arrays(obj, path: str = "est", seen: set | None = None) -> list[tuple[str, tuple, int]]:
    """(path, shape, bytes) of every numpy array (or sparse matrix) reachable from ``obj``
    through dicts, lists, tuples, dataclasses and plain objects' ``__dict__``."""
    seen = set() if seen is None else seen
    if id(obj) in seen or obj is None or isinstance(obj, (str, bytes, int, float, bool)):
        return []
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return [(path, obj.shape, int(obj.nbytes))]
    if sp.issparse(obj):
        csr = obj.tocsr()
        return [(path, obj.shape, int(csr.data.nbytes + csr.indices.nbytes + csr.indptr.nbytes))]
    if is_dask_array(obj) or isinstance(obj, (type, types.ModuleType, types.FunctionType)):
        return []  # a lazy graph (a dask fit's transient training set) or code
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _arrays(v, f"{path}[{k!r}]", seen)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out += _arrays(v, f"{path}[{i}]", seen)
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            out += _arrays(getattr(obj, f.name), f"{path}.{f.name}", seen)
    elif hasattr(obj, "__dict__"):
        out += _arrays(vars(obj), path, seen)
    return out


def _undocumented(est) -> list[tuple[str, tuple, int]]:
    """The arrays of ``est`` outside its documented n-sized fitted attributes."""
    state = {k: v for k, v in vars(est).items() if k not in _DOCUMENTED_N_SIZED}
    return _arrays(state)


def _data(n: int, seed: int = 0, classes: int = 2):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    score = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.4 * rng.randn(n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y


_KERNELS = {"sne": {"bandwidth": 1.5}, "rbf": {"gamma": 0.5}}


@pytest.mark.parametrize("kernel", ["sne", "rbf"])
@pytest.mark.parametrize("options", [{"merge": "sum"}, {"merge": "stack", "cv": 3},
                                     {"merge": "target", "probability": True}])
def test_nystrom_model_keeps_no_n_by_r_factors(kernel, options):
    n, r = 6000, 8
    X, y = _data(n)
    est = AsKLSClassifier(kernel=kernel, kernel_params=_KERNELS[kernel], nystrom=r,
                          random_state=0, **options).fit(X, y)
    rest = _undocumented(est)
    # nothing with n rows outside the documented attributes (the n × r factors U, V were)
    with_n_rows = [a for a in rest if a[1] and a[1][0] == n]
    assert not with_n_rows, with_n_rows
    # landmark-sized state only: less than one float64 n-vector (U, V alone: 2·n·r·8 bytes)
    small = sum(b for *_, b in rest)
    assert small < n * 8, sorted(rest, key=lambda a: -a[2])[:5]
    documented = sum(b for *_, b in _arrays({k: getattr(est, k, None)
                                             for k in _DOCUMENTED_N_SIZED}))
    assert sum(b for *_, b in _arrays(est)) == documented + small
    assert len(pickle.dumps(est)) < documented + n * 8 + 200_000


def test_precomputed_nystrom_model_keeps_no_n_by_r_factors():
    n, r = 3000, 6
    X, y = _data(n, seed=1)
    K = get_kernel("sne", bandwidth=1.5)(X, X)
    est = AsKLSClassifier(kernel="precomputed", nystrom=r, random_state=1).fit(K, y)
    assert est.X_fit_ is None
    rest = _undocumented(est)
    assert not [a for a in rest if a[1] and a[1][0] == n]
    assert sum(b for *_, b in rest) < n * 8
    # the n-sized coefficients are all that is left of the training set
    assert len(pickle.dumps(est)) < 2 * n * 8 + 60_000


def test_predictions_equal_the_factor_model_at_training_points():
    """The stored predictor (landmark weights only) reproduces f_s, f_t of eq. (7) with the
    Nyström matrix K̃ = U diag(s) Vᵀ the fit was solved on: f_s = K̃ b̃ + b1, f_t = K̃ᵀ ã + b2."""
    n, r, seed = 400, 7, 3
    X, y = _data(n, seed=seed, classes=3)
    K = get_kernel("sne", bandwidth=1.5)(X, X)  # asymmetric (row-normalised)
    est = AsKLSClassifier(kernel="precomputed", nystrom=r, random_state=seed, C=5.0).fit(K, y)
    res = asymmetric_nystrom(K, n_components=r, random_state=seed, orthogonalize=True)
    np.testing.assert_array_equal(est.nystrom_landmarks_[0], res.row_landmarks)
    np.testing.assert_array_equal(est.nystrom_landmarks_[1], res.col_landmarks)
    Kt = (res.U * res.s) @ res.V.T
    fs, ft = est.decision_function(KernelPair(test_train=K, train_test=K), return_parts=True)
    ref_s = Kt @ est.coef_source_ + est.intercept_[0]
    ref_t = Kt.T @ est.coef_target_ + est.intercept_[1]
    for got, ref in ((fs, ref_s), (ft, ref_t)):
        assert np.abs(got - ref).max() <= 1e-7 * np.abs(ref).max()


@pytest.mark.parametrize("kernel", ["sne", "rbf"])
def test_prediction_deterministic_and_survives_pickling(kernel):
    X, y = _data(1200, seed=2, classes=3)
    Xtr, Xte, ytr = X[:1000], X[1000:], y[:1000]

    def fitted():
        return AsKLSClassifier(kernel=kernel, kernel_params=_KERNELS[kernel], nystrom=10,
                               random_state=2, probability=True).fit(Xtr, ytr)

    est = fitted()
    F, P, parts = (est.decision_function(Xte), est.predict_proba(Xte),
                   est.decision_function(Xte, return_parts=True))
    again = fitted()
    np.testing.assert_array_equal(again.decision_function(Xte), F)
    loaded = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(loaded.decision_function(Xte), F)
    np.testing.assert_array_equal(loaded.predict_proba(Xte), P)
    for a, b in zip(loaded.decision_function(Xte, return_parts=True), parts):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(loaded.predict(Xte), est.predict(Xte))
    assert est.score(Xte, y[1000:]) > 0.5


def test_dask_fit_keeps_no_n_by_r_factors():
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    n = 3000
    X, y = _data(n, seed=4)
    with dask.config.set(scheduler="synchronous"):
        est = AsKLSClassifier(kernel="rbf", kernel_params={"gamma": 0.5}, nystrom=8,
                              random_state=4).fit(da.from_array(X, chunks=1000),
                                                  da.from_array(y, chunks=1000))
        rest = _arrays(est)  # nothing documented n-sized either (coefficients are None)
        assert not [a for a in rest if a[1] and a[1][0] == n]
        assert sum(b for *_, b in rest) < n * 8
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict(X[:50]),
                                      est.predict(X[:50]))


def test_nystrom_result_factors_and_a_result_without_them():
    G = np.random.default_rng(0).random((30, 20))
    res = asymmetric_nystrom(G, 2, 10, 10, random_state=0)
    U, s, V = res.factors()
    assert U is res.U and s is res.s and V is res.V
    with pytest.raises(ValueError, match="extend_rows"):
        dataclasses.replace(res, U=None, V=None).factors()
