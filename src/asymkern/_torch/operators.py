"""The operator estimators' torch glue: their samples and their points on the device.

:class:`~asymkern.operators.CovarianceOperator`, :class:`~asymkern.operators.
CrossCovarianceOperator`, :class:`~asymkern.operators.KernelCCA`, :class:`~asymkern.operators.
ConditionalMeanEmbedding` and :class:`~asymkern.operators.KoopmanOperator` run their fits once, in
:mod:`asymkern.operators` on top of the kernel QR route of :mod:`asymkern.linalg.operator_svd`
(pivoted Cholesky, Cor. 3.5 and 3.6 of Mollenhauer et al., 2020) and the executor-agnostic steps
of :mod:`asymkern._shared.operators` (the checked Gram matrices, the landmark
step, the evaluation of fitted functions), which work with the executor's primitives; for torch
tensors or a set ``device`` they take from here only what is executor-specific: the validated
samples as float64 copies on the device (:func:`operator_samples`, :func:`paired_input`) and the
points of ``transform`` / ``predict`` moved to the fit's device (:func:`device_points`).
"""

from __future__ import annotations

import numpy as np

from .._dispatch import any_torch, is_torch_tensor, require_torch
from .._shared.operators import OperatorSamples
from .device import as_tensor, resolve_device, to_numpy


def operator_samples(est, X, y=None, kernel_x=None, kernel_y=None) -> OperatorSamples:
    """Validate the samples of a covariance (one view: ``kernel_y`` None) or two-view
    (cross-covariance, kernel CCA: only ``method='qr'``; conditional mean embedding) fit and
    copy them to the device.

    Parameters
    ----------
    est : estimator
        The estimator being fitted (``device``, ``method`` if it has one; ``n_features_in_``
        is set).
    X : tensor or array-like of shape (n, d_x)
    y : tensor or array-like of shape (n,) or (n, d_y), optional
        The paired second view (two-view fits).
    kernel_x, kernel_y : Kernel
        The resolved kernels.

    Returns
    -------
    OperatorSamples
        The samples on the device (:class:`asymkern._shared.operators.OperatorSamples`, the
        type the numpy fit's samples have too).
    """
    torch = require_torch()
    if kernel_y is not None and getattr(est, "method", "qr") != "qr":
        raise NotImplementedError(f"method={est.method!r} is not available on the torch "
                                  "backend; use method='qr' or device=None with numpy input")
    dev, as_numpy, Xt, Yt = paired_input(est, X, y, paired=kernel_y is not None)
    Y64 = None if Yt is None else Yt.to(torch.float64, copy=True)
    X64 = Xt.to(torch.float64, copy=True)  # the model never shares the caller's memory
    return OperatorSamples(X=X64, kernel_x=kernel_x, device=dev, dtype=Xt.dtype,
                           as_numpy=as_numpy, Y=Y64, kernel_y=kernel_y)


def device_points(est, X, view: str = "x"):
    """The points of a ``transform`` / ``predict`` call (X, or the second view y with
    ``view='y'``) on the device of a fit on the torch backend, checked as the numpy path
    checks them.

    Parameters
    ----------
    est : estimator
        Fitted on the torch backend (its ``_torch_state``, a
        :class:`~asymkern._shared.operators.DeviceState`).
    X : tensor or array-like of shape (n_points, d)
        The points (a 1-D y is one column).
    view : {'x', 'y'}, default='x'
        Which view X is.

    Returns
    -------
    state : DeviceState
        The device state of the fit.
    Xn : tensor of shape (n_points, d)
        The points on the fit's device, in their own dtype.
    back : callable
        ``back(values, host64=False)``: values of these points in the output convention
        (tensors in the points' dtype; numpy for numpy points, float64 with ``host64``).
    """
    from .._validation import check_input, check_tensor_shape

    state = getattr(est, "_torch_state", None)
    if state is None:
        raise ValueError(f"this {type(est).__name__} was fitted on numpy arrays without "
                         "device=...; fit it with torch tensors (or a device) to use it on "
                         "torch tensors")
    as_numpy = not any_torch(X)
    if view == "y":
        Xn = as_tensor(two_d(X), state.device, "y")
        if Xn.shape[1] != state.Y.shape[1]:
            raise ValueError(f"y has {Xn.shape[1]} features; expected {state.Y.shape[1]} "
                             "(as in fit)")
    else:
        Xn = as_tensor(check_input(est, X, reset=False) if as_numpy else X, state.device, "X")
        check_tensor_shape(Xn, type(est).__name__)
        if Xn.shape[1] != est.n_features_in_:
            raise ValueError(f"X has {Xn.shape[1]} features, but {type(est).__name__} is "
                             f"expecting {est.n_features_in_} features as input")

    def back(values, host64: bool = False):
        out = values if host64 else values.to(Xn.dtype)
        if out is not values and not bool(out.isfinite().all()):  # beyond float32's range
            raise OverflowError(f"the outputs exceed the range of the points' dtype "
                                f"{str(Xn.dtype).replace('torch.', '')} (finite in float64); "
                                "pass float64 points or rescale the targets")
        return to_numpy(out) if as_numpy else out

    return state, Xn, back


def paired_input(est, X, Y, paired: bool = True):
    """Validate the paired samples (x_i, y_i) of a torch fit (X alone without ``paired``) and
    move them to the device.

    Parameters
    ----------
    est : estimator
        The estimator being fitted (``device``; ``n_features_in_`` is set).
    X : tensor or array-like of shape (n, d_x)
    Y : tensor or array-like of shape (n,) or (n, d_y), or None
        The paired samples (ignored without ``paired``).
    paired : bool, default=True
        Whether Y is required.

    Returns
    -------
    device, bool, tensor, tensor or None
        The device, whether the inputs were numpy (numpy outputs then), X and Y (2-D; None
        without ``paired``) on the device in their own dtypes.
    """
    from .._validation import check_input, check_tensor_input

    Y = Y if paired else None
    if paired and Y is None:
        raise ValueError(f"{type(est).__name__} requires y to be passed, but the target y is "
                         "None (paired samples y of shape (n_samples,) or (n_samples, d_y) are "
                         "needed)")
    dev = resolve_device(est.device, X, Y)
    as_numpy = not any_torch(X, Y)
    if as_numpy:
        X = check_input(est, X, reset=True, min_samples=2)
    Xt = as_tensor(X, dev, "X")
    if not as_numpy:
        check_tensor_input(est, Xt)
    if Y is None:
        return dev, as_numpy, Xt, None
    Yt = as_tensor(two_d(Y), dev, "y")
    if Yt.shape[0] != Xt.shape[0]:
        raise ValueError(f"y has {Yt.shape[0]} samples; expected {Xt.shape[0]}, one per row "
                         "of X (paired samples (x_i, y_i))")
    return dev, as_numpy, Xt, Yt


def two_d(y):
    """A 1-D second view (tensor or array) as one column; 2-D inputs unchanged."""
    A = y if is_torch_tensor(y) else np.asarray(y)
    return A.reshape(-1, 1) if A.ndim == 1 else A
