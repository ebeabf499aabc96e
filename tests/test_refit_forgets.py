"""A refit forgets the previous fit: after ``set_params`` and ``fit`` an estimator holds
exactly the attributes, public and private, of a fresh estimator fitted with the same
parameters (nothing stale: the means of a centred fit, landmarks, an n-sized cache), and
scikit-learn's own settings (``set_output``) survive."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from asymkern._validation import _SKLEARN_OWNED
from asymkern.decomposition import KernelPCA, KernelSVD
from asymkern.lssvm import AsKLSClassifier
from asymkern.nystrom import NystromKernelPCA, NystromKernelRidge, NystromSVC
from asymkern.operators import ConditionalMeanEmbedding, KoopmanOperator

rs = np.random.RandomState(0)
X, Q, Z = rs.randn(100, 4), rs.randn(12, 4), rs.randn(80, 4)
LABELS = (X[:, 0] > 0).astype(int)
INPUTS = {"y": (X, np.sin(X[:, 0])), "labels": (X, LABELS), "X": (X,), "Y": (X, X[:, :2] ** 2)}

CASES = [  # estimator, first parameters, second parameters, inputs, output method
    (KernelSVD, dict(n_components=3, solver="nystrom", random_state=0, center=True),
     dict(solver="dense", center=False), "Z", "transform"),
    (NystromSVC, dict(mode="spa", n_landmarks=20, random_state=0, probability=True),
     dict(mode="lla", probability=False), "labels", "decision_function"),
    (NystromSVC, dict(mode="gsa", n_landmarks=20, random_state=0), dict(mode="exact"),
     "labels", "decision_function"),
    (NystromKernelRidge, dict(mode="gsa", n_landmarks=20, random_state=0), dict(mode="lla"),
     "y", "predict"),
    (NystromKernelPCA, dict(mode="exact"), dict(mode="spa", n_landmarks=20, random_state=0),
     "X", "transform"),
    (AsKLSClassifier, dict(nystrom=10, random_state=0), dict(nystrom=None), "labels",
     "decision_function"),
    (AsKLSClassifier, dict(merge="stack", cv=3, random_state=0), dict(merge="sum"), "labels",
     "decision_function"),
    (ConditionalMeanEmbedding, dict(n_landmarks=20, random_state=0), dict(n_landmarks=None),
     "Y", "predict"),
    (KoopmanOperator, dict(n_landmarks=20, random_state=0), dict(n_landmarks=None), "X",
     "predict"),
    (KoopmanOperator, dict(estimator="pcr", rank=5), dict(estimator="full"), "X", "predict"),
    (KernelPCA, dict(n_components=3, fit_inverse_transform=True),
     dict(fit_inverse_transform=False), "X", "transform"),
]


def _fit(est, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, Z=Z) if kind == "Z" else est.fit(*INPUTS[kind])


def _state(est) -> set:
    return {k for k in vars(est) if not k.startswith(_SKLEARN_OWNED)}


@pytest.mark.parametrize("Est, first, second, kind, method", CASES)
def test_refit_holds_what_a_fresh_fit_holds(Est, first, second, kind, method):
    est = _fit(Est(**first), kind)
    getattr(est, method)(Q)  # outputs may cache what they compute
    _fit(est.set_params(**second), kind)
    fresh = _fit(Est(**{**first, **second}), kind)
    assert _state(est) == _state(fresh), _state(est) ^ _state(fresh)
    np.testing.assert_array_equal(np.asarray(getattr(est, method)(Q)),
                                  np.asarray(getattr(fresh, method)(Q)))


def test_refit_keeps_set_output():
    pd = pytest.importorskip("pandas")
    est = NystromKernelPCA(n_components=2, n_landmarks=20, random_state=0)
    est.set_output(transform="pandas")
    _fit(est, "X")
    _fit(est.set_params(n_components=3), "X")
    out = est.transform(Q)
    assert isinstance(out, pd.DataFrame) and out.shape == (12, 3)
