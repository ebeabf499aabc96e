"""Parameters are checked once, before a fit goes to an executor: a bad value gets the same
error, word for word, on numpy arrays, torch tensors and dask arrays (the ``any_backend``
fixture), whether or not the solver it configures would run."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from _backends import as_backend

from asymkern.decomposition import KernelSVD
from asymkern.lssvm import AsKLSClassifier, LSSVMClassifier, LSSVMRegressor
from asymkern.nystrom import NystromKernelPCA, NystromKernelRidge, NystromSVC
from asymkern.operators import ConditionalMeanEmbedding, KoopmanOperator

LANDMARKS = {"n_landmarks": 10, "random_state": 0}
ASKLS = {"nystrom": {"n_components": 5}, "random_state": 0}

# (estimator, its base parameters, the bad ones, what fit gets, the error, its message)
CASES = [
    (KernelSVD, {"random_state": 0}, {"n_oversamples": -1}, "X", ValueError,
     r"n_oversamples must be an integer >= 0, got -1"),
    (KernelSVD, {"random_state": 0}, {"n_iter": "many"}, "X", ValueError,
     r"n_iter must be 'auto' or an integer >= 0, got 'many'"),
    (KernelSVD, {"random_state": 0}, {"n_iter": -2}, "X", ValueError,
     r"n_iter must be an integer >= 0, got -2"),
    (KernelSVD, {"random_state": 0}, {"working_memory": -5}, "X", ValueError,
     r"working_memory must be finite and > 0, got -5"),
    (KernelSVD, {"random_state": 0}, {"center": "yes"}, "X", TypeError,
     r"center must be True or False, got 'yes'"),
    (KernelSVD, {"random_state": 0}, {"precision": "half"}, "X", ValueError,
     r"precision must be one of \('high', 'low'\), got 'half'"),
    (NystromKernelRidge, LANDMARKS, {"fit_intercept": "yes"}, "Xy", TypeError,
     r"fit_intercept must be True or False, got 'yes'"),
    (NystromKernelRidge, LANDMARKS, {"alpha": -1.0}, "Xy", ValueError,
     r"alpha must be finite and > 0, got -1.0"),
    (NystromKernelPCA, LANDMARKS, {"center": 1}, "X", TypeError,
     r"center must be True or False, got 1"),
    (NystromSVC, LANDMARKS, {"probability": "yes"}, "Xc", TypeError,
     r"probability must be True or False, got 'yes'"),
    (NystromSVC, LANDMARKS, {"mode": "spa", "svm": "linearsvc"}, "Xc", ValueError,
     r"svm='linearsvc' supports modes lla/gsa/ncr only, not 'spa'"),
    (NystromSVC, LANDMARKS, {"svm": "libsvm"}, "Xc", ValueError,
     r"svm must be 'nusvc', 'svc' or 'linearsvc', got 'libsvm'"),
    (AsKLSClassifier, ASKLS, {"solver": "lu"}, "Xc", ValueError,
     r"solver must be 'auto', 'schur', 'eig' or 'dense', got 'lu'"),
    (AsKLSClassifier, ASKLS, {"rcond_tol": -1.0}, "Xc", ValueError,
     r"rcond_tol must be finite and >= 0, got -1.0"),
    (AsKLSClassifier, ASKLS, {"ridge": float("nan")}, "Xc", ValueError,
     r"ridge must be finite and >= 0, got nan"),
    (AsKLSClassifier, ASKLS, {"stack_C": 0.0}, "Xc", ValueError,
     r"stack_C must be finite and > 0, got 0.0"),
    (AsKLSClassifier, ASKLS, {"class_weight": "even"}, "Xc", ValueError,
     r"class_weight must be None, a dict \{class: weight\} or 'balanced', got 'even'"),
    (AsKLSClassifier, ASKLS, {"probability": "yes"}, "Xc", TypeError,
     r"probability must be True or False, got 'yes'"),
    (AsKLSClassifier, ASKLS, {"refit": None}, "Xc", TypeError,
     r"refit must be True or False, got None"),
    (AsKLSClassifier, {"random_state": 0}, {"nystrom": {"n_components": 5, "solver": "lu"}},
     "Xc", TypeError, r"nystrom has unknown option\(s\) \['solver'\]"),
    (AsKLSClassifier, {"random_state": 0}, {"nystrom": 2.5}, "Xc", TypeError,
     r"nystrom must be None, a number of components r or a dict"),
    (ConditionalMeanEmbedding, LANDMARKS, {"alpha": -1.0}, "Xy2", ValueError,
     r"alpha must be finite and > 0"),
    (KoopmanOperator, LANDMARKS, {"lag": 0}, "X", ValueError, r"lag must be an integer >= 1"),
]


def _inputs(kind: str):
    rs = np.random.RandomState(0)
    X = rs.randn(60, 3)
    return {"X": (X,), "Xy": (X, np.sin(X[:, 0])), "Xc": (X, (X[:, 0] > 0).astype(int)),
            "Xy2": (X, X[:, :2])}[kind]


def _error(est, args, backend):
    """The exception type and message of ``est.fit`` on ``backend``'s arrays."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(*(as_backend(a, backend) for a in args))
        except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
            return type(exc), str(exc)
    return None, "fit accepted the parameters"


@pytest.mark.parametrize("Est, base, bad, kind, error, match", CASES)
def test_bad_parameter_same_error_on_every_executor(any_backend, Est, base, bad, kind, error,
                                                    match):
    if any_backend == "torch" and "device" not in Est().get_params():
        pytest.skip(f"{Est.__name__} has no torch executor")
    args = _inputs(kind)
    got = _error(Est(**base, **bad), args, any_backend)
    assert got[0] is error, got
    assert re.search(match, got[1]), got
    assert got == _error(Est(**base, **bad), args, "numpy")


@pytest.mark.parametrize("Est, params", [
    (LSSVMClassifier, {"solver": "lu"}),
    (LSSVMRegressor, {"rcond_tol": float("inf")}),
    (LSSVMRegressor, {"ridge": -1.0}),
    (LSSVMClassifier, {"probability": "yes"}),
])
def test_lssvm_parameters_checked_before_the_kernel(Est, params):
    """The LS-SVMs check the same solver parameters as AsK-LS, before any kernel work."""
    X, y = _inputs("Xc")

    def refuse(*args, **kwargs):
        raise AssertionError("the kernel was evaluated before the parameters were checked")

    est = Est(kernel=refuse, **params)
    with pytest.raises((ValueError, TypeError), match=next(iter(params))):
        est.fit(X, y)


@pytest.mark.parametrize("Est, base, kind", [
    (KernelSVD, {"random_state": 0}, "X"),
    (NystromKernelRidge, LANDMARKS, "Xy"),
    (NystromKernelPCA, LANDMARKS, "X"),
    (NystromSVC, LANDMARKS, "Xc"),
    (ConditionalMeanEmbedding, LANDMARKS, "Xy2"),
    (KoopmanOperator, LANDMARKS, "X"),
])
def test_device_with_dask_inputs_is_refused(Est, base, kind):
    """``device`` selects the torch executor; with dask inputs (the Dask executor) it is an
    error naming ``device``, never silently ignored, and an invalid device is refused the
    same way as for numpy input."""
    pytest.importorskip("torch")
    pytest.importorskip("dask")
    import dask

    args = _inputs(kind)
    with dask.config.set(scheduler="synchronous"):
        typ, msg = _error(Est(**base, device="cpu"), args, "dask")
        assert typ is ValueError and "device='cpu'" in msg and "dask" in msg, msg
        assert _error(Est(**base, device="nowhere"), args, "dask") == _error(
            Est(**base, device="nowhere"), args, "numpy")
