"""One dtype rule for every estimator and executor: what ``predict``, ``transform``,
``decision_function`` and ``predict_proba`` return has the precision of the X they are given
(float32 for float32 X, float64 otherwise), whatever the dtype of the training data
(``asymkern._validation.input_precision``).

Before this rule there were three: the operators and ``NystromFeatureMap`` followed the input;
the Nyström machines and the LS-SVMs followed the training data; ``KernelSVD`` and
``KernelPCA`` promoted (numpy) or followed the training data (``KernelSVD`` on torch), so a
float32 ``KernelSVD`` gave float64 scores on numpy and float32 on torch for the same input.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from asymkern import KernelPCA, KernelSVD
from asymkern.lssvm import AsKLSClassifier, LSSVMClassifier, LSSVMRegressor
from asymkern.nystrom import NystromFeatureMap, NystromKernelPCA, NystromKernelRidge, NystromSVC
from asymkern.operators import (
    ConditionalMeanEmbedding,
    CovarianceOperator,
    CrossCovarianceOperator,
    KernelCCA,
    KoopmanOperator,
)

RNG = np.random.RandomState(0)
X = RNG.randn(80, 3)
Y_REG = np.column_stack([2 * X[:, 0], X[:, 1] - X[:, 2]]) + 0.1 * RNG.randn(80, 2)
Y_CLS = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
P = X[:9] + 0.05

# (estimator, fit targets, methods, runs on torch)
CASES = {
    "KernelSVD": (lambda: KernelSVD(n_components=3, random_state=0), None, ["transform"], True),
    "KernelPCA": (lambda: KernelPCA(n_components=3, random_state=0), None, ["transform"],
                  False),
    "NystromFeatureMap": (lambda: NystromFeatureMap(n_components=20, random_state=0), None,
                          ["transform"], False),
    "NystromKernelPCA": (lambda: NystromKernelPCA(n_components=3, random_state=0), None,
                         ["transform"], True),
    "NystromKernelRidge": (lambda: NystromKernelRidge(n_landmarks=20, random_state=0), "reg",
                           ["predict"], True),
    "NystromSVC": (lambda: NystromSVC(n_landmarks=20, probability=True, random_state=0),
                   "cls", ["decision_function", "predict_proba"], True),
    "LSSVMRegressor": (LSSVMRegressor, "reg1", ["predict"], False),
    "LSSVMClassifier": (lambda: LSSVMClassifier(probability=True), "cls",
                        ["decision_function", "predict_proba"], False),
    "AsKLSClassifier": (lambda: AsKLSClassifier(probability=True), "cls",
                        ["decision_function", "predict_proba"], False),
    "ConditionalMeanEmbedding": (ConditionalMeanEmbedding, "reg", ["predict"], True),
    "CovarianceOperator": (lambda: CovarianceOperator(n_components=3), None, ["transform"],
                           True),
    "CrossCovarianceOperator": (lambda: CrossCovarianceOperator(n_components=2), "reg",
                                ["transform"], True),
    "KernelCCA": (lambda: KernelCCA(n_components=2), "reg", ["transform"], True),
    "KoopmanOperator": (KoopmanOperator, "shift", ["predict"], True),
}
PAIRS = [(np.float32, np.float64), (np.float64, np.float32), (np.float32, np.float32),
         (np.float64, np.float64)]


def _targets(kind):
    return {None: None, "reg": Y_REG, "reg1": Y_REG[:, 0], "cls": Y_CLS,
            "shift": 0.9 * X + 0.05 * np.sin(X)}[kind]


def _fit(name, fit_dtype, convert=np.asarray):
    make, kind, methods, _ = CASES[name]
    y = _targets(kind)
    Xf = convert(X.astype(fit_dtype))
    args = (Xf,) if y is None else (Xf, convert(y.astype(fit_dtype) if y.dtype.kind == "f"
                                                else y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make().fit(*args), methods


def _dtype_name(a) -> str:
    return str(a.dtype).replace("torch.", "")


@pytest.mark.parametrize("fit_dtype, in_dtype", PAIRS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_follow_the_input_precision_on_numpy(name, fit_dtype, in_dtype):
    est, methods = _fit(name, fit_dtype)
    for method in methods:
        out = getattr(est, method)(P.astype(in_dtype))
        assert out.dtype == in_dtype, (name, method)
        # the model is the fit's: the same values whatever the input's precision, to the
        # float32 rounding of the input and of the outputs
        ref = getattr(est, method)(P.astype(fit_dtype))
        scale = max(float(np.max(np.abs(ref))), 1e-30)
        assert np.max(np.abs(out.astype(np.float64) - ref)) <= 2e-4 * scale, (name, method)


@pytest.mark.parametrize("fit_dtype, in_dtype", PAIRS[:2], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c[3]))
def test_outputs_follow_the_input_precision_on_torch(name, fit_dtype, in_dtype):
    """Tensors out in the input tensor's precision, equal to the numpy outputs (float32 fits
    agree to float32 rounding); numpy input to a torch fit gives numpy in its precision."""
    pytest.importorskip("torch")
    from _torch_helpers import tensor, to_np

    est, methods = _fit(name, fit_dtype, convert=tensor)
    ref, _ = _fit(name, fit_dtype)
    for method in methods:
        got = getattr(est, method)(tensor(P.astype(in_dtype)))
        want = getattr(ref, method)(P.astype(in_dtype))
        assert _dtype_name(got) == want.dtype.name == np.dtype(in_dtype).name, (name, method)
        if name not in ("KernelSVD", "NystromKernelPCA", "CovarianceOperator",
                        "CrossCovarianceOperator", "KernelCCA"):  # components: signs are free
            scale = float(np.max(np.abs(want)))
            assert np.max(np.abs(to_np(got).astype(np.float64) - want)) <= 2e-3 * scale
        host = getattr(est, method)(P.astype(in_dtype))
        assert isinstance(host, np.ndarray) and host.dtype == in_dtype, (name, method)


@pytest.mark.parametrize("name", ["KernelSVD", "NystromKernelRidge", "NystromSVC"])
def test_outputs_follow_the_input_precision_on_dask(name):
    """A Dask fit answers dask and numpy inputs in their own precision too."""
    da = pytest.importorskip("dask.array")
    make, kind, methods, _ = CASES[name]
    y = _targets(kind)
    if name == "NystromSVC":
        make = lambda: NystromSVC(n_landmarks=20, mode="lla", random_state=0)  # noqa: E731
        methods = ["decision_function"]
    for fit_dtype, in_dtype in PAIRS[:2]:
        Xd = da.from_array(X.astype(fit_dtype), chunks=40)
        est = make()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(Xd) if y is None else est.fit(Xd, da.from_array(y, chunks=40))
        for method in methods:
            lazy = getattr(est, method)(da.from_array(P.astype(in_dtype), chunks=5))
            assert lazy.dtype == in_dtype and lazy.compute().dtype == in_dtype, (name, method)
            host = getattr(est, method)(P.astype(in_dtype))
            assert host.dtype == in_dtype, (name, method)


def test_float32_input_beyond_float32_range_is_refused():
    """A float64 model whose outputs exceed float32's range for float32 input raises an
    ``OverflowError`` naming the dtype, never returns infinity."""
    y = 3e38 * (1.5 + np.sin(X[:, 0]))
    est = LSSVMRegressor().fit(X, y)
    assert np.isfinite(est.predict(P)).all()
    with pytest.raises(OverflowError, match="input's dtype float32"):
        est.predict(P.astype(np.float32))
    nys = NystromKernelRidge(n_landmarks=20, random_state=0).fit(X, y)
    with pytest.raises(OverflowError, match="input's dtype float32"):
        nys.predict(P.astype(np.float32))


def test_dataframe_of_float32_columns_is_float32_input():
    """A DataFrame of float32 columns is float32 input for every family (the operators read
    the raw input's dtype attribute, which a DataFrame lacks, and answered in float64)."""
    pd = pytest.importorskip("pandas")
    from asymkern._validation import input_precision

    frame = pd.DataFrame(P.astype(np.float32))
    for name in ("KernelSVD", "ConditionalMeanEmbedding", "KernelCCA", "KoopmanOperator",
                 "NystromKernelRidge", "LSSVMRegressor"):
        est, methods = _fit(name, np.float64)
        assert getattr(est, methods[0])(frame).dtype == np.float32, name

    assert input_precision(pd.DataFrame(X.astype(np.float32))) == np.float32
    mixed = pd.DataFrame({"a": X[:, 0].astype(np.float32), "b": X[:, 1]})
    assert input_precision(mixed) == np.float64
    assert input_precision([[1.0, 2.0]]) == np.float64
    assert input_precision(np.arange(3, dtype=np.int32)) == np.float64
