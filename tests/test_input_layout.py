"""as_data returns one memory layout, so results do not depend on the caller's layout."""

from __future__ import annotations

import numpy as np
import pytest

import asymkern
from asymkern._validation import as_data


def test_fortran_input_comes_back_c_contiguous_and_unchanged():
    X = np.asfortranarray(np.random.default_rng(0).normal(size=(50, 4)))
    before = X.copy()
    out = as_data(X)
    assert out.flags.c_contiguous and not np.shares_memory(out, X)
    np.testing.assert_array_equal(out, before)
    np.testing.assert_array_equal(X, before)  # the caller's array is never modified


def test_strided_view_is_copied():
    X = np.random.default_rng(1).normal(size=(40, 6))[:, ::2]
    out = as_data(X)
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, X)


def test_large_fortran_matrix_is_not_duplicated():
    """Past working_memory (here 0.01 MiB) the layout is kept rather than copied."""
    X = np.asfortranarray(np.ones((200, 100)))  # 0.16 MB
    with asymkern.config_context(working_memory=0.01):
        out = as_data(X)
    assert np.shares_memory(out, X)


def test_kernel_svd_refuses_z_columns_in_another_order():
    """Two DataFrames pair their features by position: Z's columns must be X's, in order
    (the RBF distance used X's column 'a' against Z's 'c' without a word)."""
    pd = pytest.importorskip("pandas")
    from asymkern import KernelSVD

    rng = np.random.RandomState(0)
    X = pd.DataFrame(rng.randn(40, 3), columns=list("abc"))
    Z = pd.DataFrame(rng.randn(30, 3), columns=list("abc"))
    with pytest.raises(ValueError, match="feature names of Z"):
        KernelSVD(n_components=2).fit(X, Z=Z[["c", "b", "a"]])
    KernelSVD(n_components=2).fit(X, Z=Z)


def _torch_estimators():
    from asymkern import KernelSVD
    from asymkern.nystrom import NystromKernelRidge
    from asymkern.operators import CovarianceOperator, KoopmanOperator

    return [(CovarianceOperator(), False), (KoopmanOperator(), False),
            (NystromKernelRidge(n_landmarks=10, random_state=0), True),
            (KernelSVD(n_components=2, random_state=0), False)]


def test_tensors_without_features_or_samples_are_refused_by_name():
    """Tensors follow the arrays' shape rules: no features (ZeroDivisionError, or an error
    about the landmarks' shape, before) and, at predict/transform, no samples (an empty
    result, where arrays are refused)."""
    torch = pytest.importorskip("torch")
    from _torch_helpers import TEST_DEVICE

    rng = np.random.RandomState(0)
    X = torch.as_tensor(rng.randn(40, 3), device=TEST_DEVICE)
    y = torch.as_tensor(rng.randn(40), device=TEST_DEVICE)
    for est, needs_y in _torch_estimators():
        args = (y,) if needs_y else ()
        with pytest.raises(ValueError, match=r"X has 0 feature\(s\) \(shape=\(40, 0\)\)"):
            est.fit(X[:, :0], *args)
        est.fit(X, *args)
        apply = est.transform if hasattr(est, "transform") else est.predict
        with pytest.raises(ValueError, match=r"X has 0 sample\(s\) \(shape=\(0, 3\)\)"):
            apply(X[:0])


def test_kernel_svd_not_fitted_with_torch_refuses_tensors():
    torch = pytest.importorskip("torch")
    da = pytest.importorskip("dask.array")
    from asymkern import KernelSVD

    X = np.random.RandomState(0).randn(40, 3)
    for fit_input in (X, da.from_array(X, chunks=(20, 3))):
        est = KernelSVD(n_components=2, random_state=0).fit(fit_input)
        with pytest.raises(ValueError, match="not fitted with torch"):
            est.transform(torch.as_tensor(X[:3]))


def test_a_tensor_on_a_device_read_on_the_host_says_so():
    from asymkern._validation import as_data

    class DeviceTensor:  # what a CUDA tensor does when numpy asks for its values
        shape, ndim, dtype = (3, 2), 2, np.float64
        device = type("Device", (), {"type": "cuda", "__str__": lambda self: "cuda:0"})()

        def __array__(self, *args, **kwargs):
            raise TypeError("can't convert cuda:0 device type tensor to numpy")

    with pytest.raises(TypeError, match=r"X is a tensor on cuda:0.*pass X\.cpu\(\)"):
        as_data(DeviceTensor(), "X")
