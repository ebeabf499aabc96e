"""The operator estimators' device-side pieces on torch: samples, Gram matrices and evaluations.

:class:`~asymkern.operators.CovarianceOperator`, :class:`~asymkern.operators.
CrossCovarianceOperator` and :class:`~asymkern.operators.KernelCCA` run their fits once, in
:mod:`asymkern.operators` on top of the kernel QR route of :mod:`asymkern.linalg.operator_svd`
(pivoted Cholesky, Cor. 3.5 and 3.6 of Mollenhauer et al., 2020), which works with the
executor's primitives; for torch tensors or a set ``device`` they take from here only what is
executor-specific: the validated samples as float64 copies on the device
(:func:`operator_samples`), the Gram matrices formed there (:func:`gram`) and the values of the
fitted functions at new points (:func:`evaluate`, ``transform_*_torch``). The landmark sums of
the Nyström-restricted estimators (conditional mean embedding, Koopman) are formed here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._dispatch import any_torch, require_torch
from .device import as_tensor, resolve_device, to_numpy
from .kernels import TorchKernel, TorchKernelMatrix


@dataclass(frozen=True)
class OperatorSamples:
    """The samples of a covariance, cross-covariance or kernel CCA fit on the device.

    Attributes
    ----------
    X, Y : tensor
        Float64 copies of the samples on the device (never the caller's memory); Y (2-D) is
        None for the covariance operator.
    kernel_x, kernel_y : TorchKernel
        The kernels on the device (``kernel_y`` None with Y).
    device : torch.device
        Where the fit runs.
    dtype : torch.dtype
        X's dtype (the outputs of ``transform`` follow the input's).
    as_numpy : bool
        Whether the inputs were numpy (numpy outputs then).
    """

    X: Any
    kernel_x: Any
    device: Any
    dtype: Any
    as_numpy: bool
    Y: Any = None
    kernel_y: Any = None

    def gram(self, which: str = "x"):
        """The Gram matrix k(Z, Z) of X (``'x'``) or Y (``'y'``), float64 and symmetrised, on
        the device."""
        Z, tk = (self.X, self.kernel_x) if which == "x" else (self.Y, self.kernel_y)
        name = "X (input)" if which == "x" else "y (output)"
        return gram(tk, Z, Z, f"the Gram matrix of {name}", symmetric=True)

    def host(self):
        """(X, Y) as float64 numpy copies (Y None for one view)."""
        return to_numpy(self.X), None if self.Y is None else to_numpy(self.Y)


def operator_samples(est, X, y=None, kernel_x=None, kernel_y=None) -> OperatorSamples:
    """Validate the samples of a covariance (one view: ``kernel_y`` None) or two-view
    (cross-covariance, kernel CCA: only ``method='qr'``) fit and copy them to the device.

    Parameters
    ----------
    est : estimator
        The estimator being fitted (``device``, ``method``; ``n_features_in_`` is set).
    X : tensor or array-like of shape (n, d_x)
    y : tensor or array-like of shape (n,) or (n, d_y), optional
        The paired second view (two-view fits).
    kernel_x, kernel_y : Kernel
        The resolved kernels.

    Returns
    -------
    OperatorSamples
    """
    from .._validation import check_input, check_tensor_input

    torch = require_torch()
    if kernel_y is None:
        dev = resolve_device(est.device, X)
        as_numpy = not any_torch(X)
        if as_numpy:
            X = check_input(est, X, reset=True, min_samples=2)
        Xt = as_tensor(X, dev, "X")
        if not as_numpy:
            check_tensor_input(est, Xt)
        Y64 = tky = None
    else:
        if est.method != "qr":
            raise NotImplementedError(f"method={est.method!r} is not available on the torch "
                                      "backend; use method='qr' or device=None with numpy input")
        dev, as_numpy, Xt, Yt = paired_input(est, X, y)
        Y64 = Yt.to(torch.float64, copy=True)
        tky = TorchKernel(kernel_y, int(Y64.shape[1]))
    X64 = Xt.to(torch.float64, copy=True)  # the model never shares the caller's memory
    return OperatorSamples(X=X64, kernel_x=TorchKernel(kernel_x, int(X64.shape[1])), device=dev,
                           dtype=Xt.dtype, as_numpy=as_numpy, Y=Y64, kernel_y=tky)


def gram(tk, A, B, what: str, symmetric: bool = False):
    """k(A, B) on the device (float64), refused with a ``ValueError`` naming ``what`` when it
    has non-finite entries; ``symmetric`` returns (K + Kᵀ)/2."""
    torch = require_torch()
    K = TorchKernelMatrix(tk, A, B).to_dense()
    if not bool(torch.isfinite(K).all()):
        raise ValueError(f"{what} has non-finite entries; rescale X (e.g. StandardScaler) or "
                         "change the kernel parameters")
    return 0.5 * (K + K.T) if symmetric else K


def _transform_input(est, X):
    """(torch state of the fit, X as a tensor on the fit's device, whether X was numpy),
    with the numpy path's checks of ``transform``'s X."""
    from .._validation import check_input

    state = getattr(est, "_torch_state", None)
    if state is None:
        raise ValueError(f"this {type(est).__name__} was fitted on numpy arrays without "
                         "device=...; fit it with torch tensors (or a device) to transform "
                         "torch tensors")
    as_numpy = not any_torch(X)
    if as_numpy:
        X = check_input(est, X, reset=False)
    Xn = as_tensor(X, state["device"], "X")
    if Xn.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {Xn.shape[1]} features, but {type(est).__name__} is "
                         f"expecting {est.n_features_in_} features as input")
    return state, Xn, as_numpy


def transform_torch(est, X=None, y=None, what: str = "the transformed values"):
    """The fitted functions of a covariance, cross-covariance or kernel CCA model fitted on the
    torch backend, at X (``state['coef_x']`` minus ``state['offset_x']``) and at y (the second
    view's ``coef_y`` and ``offset_y``), evaluated on the device.

    Parameters
    ----------
    est : estimator
        Fitted on the torch backend (its ``_torch_state``).
    X : tensor or array-like of shape (n_points, d_x), optional
    y : tensor or array-like of shape (n_points,) or (n_points, d_y), optional
    what : str
        The name of the values in error messages.

    Returns
    -------
    tensor or ndarray, or a tuple of two
        Tensors for tensor input (the input dtype), numpy arrays otherwise.
    """
    out = []
    if X is not None:
        state, Xn, as_numpy = _transform_input(est, X)
        xs = evaluate(state["kernel_x"], Xn, state["X"], state["coef_x"], what,
                      state.get("offset_x"))
        out.append(to_numpy(xs) if as_numpy else xs)
    if y is not None:
        state = est._torch_state
        y_numpy = not any_torch(y)
        Yn = as_tensor(two_d(y), state["device"], "y")
        if Yn.shape[1] != state["Y"].shape[1]:
            raise ValueError(f"y has {Yn.shape[1]} features; expected {state['Y'].shape[1]} "
                             "(as in fit)")
        ys = evaluate(state["kernel_y"], Yn, state["Y"], state["coef_y"],
                      what + ("" if X is None else " of y"), state.get("offset_y"))
        out.append(to_numpy(ys) if y_numpy else ys)
    return out[0] if len(out) == 1 else tuple(out)


def paired_input(est, X, Y):
    """Validate the paired samples (x_i, y_i) of a torch fit and move them to the device.

    Parameters
    ----------
    est : estimator
        The estimator being fitted (``device``; ``n_features_in_`` is set).
    X : tensor or array-like of shape (n, d_x)
    Y : tensor or array-like of shape (n,) or (n, d_y)

    Returns
    -------
    device, bool, tensor, tensor
        The device, whether the inputs were numpy (numpy outputs then), X and Y (2-D) on the
        device in their own dtypes.
    """
    from .._validation import check_input, check_tensor_input

    if Y is None:
        raise ValueError(f"{type(est).__name__} requires y to be passed, but the target y is "
                         "None (paired samples y of shape (n_samples,) or (n_samples, d_y) are "
                         "needed)")
    dev = resolve_device(est.device, X, Y)
    as_numpy = not any_torch(X, Y)
    if as_numpy:
        X = check_input(est, X, reset=True, min_samples=2)
    Xt = as_tensor(X, dev, "X")
    Yt = as_tensor(two_d(Y), dev, "y")
    if not as_numpy:
        check_tensor_input(est, Xt)
    if Yt.shape[0] != Xt.shape[0]:
        raise ValueError(f"y has {Yt.shape[0]} samples; expected {Xt.shape[0]}, one per row "
                         "of X (paired samples (x_i, y_i))")
    return dev, as_numpy, Xt, Yt


def evaluate(tk, P, centers, coef, what: str, offset=None):
    """Σ_i coef_ij k(p, c_i) (minus ``offset``) at the rows p of P, on the device.

    Computed in float64 from the float64 ``centers`` and returned in P's dtype; non-finite
    values are refused with a ``ValueError`` naming ``what``.
    """
    torch = require_torch()
    vals = TorchKernelMatrix(tk, P.to(torch.float64), centers).matmat(coef)
    if offset is not None:
        vals = vals - offset
    if not bool(torch.isfinite(vals).all()):
        raise ValueError(f"{what} have non-finite entries; rescale the data like the training "
                         "data")
    return vals.to(P.dtype)


# ------------------------------------------------------------------ landmark (Nyström) estimators
def landmark_basis_torch(est, X0, tk):
    """The landmarks of an operator fit on the device, drawn as the numpy path draws them.

    Parameters
    ----------
    est : ConditionalMeanEmbedding or KoopmanOperator
        The estimator (``n_landmarks``, ``landmarks``, ``random_state``; ``n_landmarks_`` is
        set).
    X0 : tensor of shape (n, d)
        The samples (float64, on the device).
    tk : TorchKernel
        The kernel.

    Returns
    -------
    idx : ndarray of int
        The landmark indices (the same draw as the numpy and Dask paths).
    L : tensor of shape (m, d)
        The landmarks x̃_l = x_{idx_l} on the device (a copy).
    T : ndarray of shape (m, p)
        The whitening T = Q Λ^{-1/2} of K_LL (:func:`asymkern._shared.operators.
        landmark_whitening`, on the host: m×m).
    """
    from .._shared.operators import _check_landmark_options, landmark_whitening

    torch = require_torch()
    idx = _check_landmark_options(est, int(X0.shape[0]))
    L = X0[torch.as_tensor(np.asarray(idx), device=X0.device)]
    K_LL = gram(tk, L, L, "the landmark Gram matrix K_LL", symmetric=True)
    return idx, L, landmark_whitening(to_numpy(K_LL))


@dataclass(frozen=True)
class LandmarkSums:
    """What a Nyström (landmark) operator fit needs of its n samples, reduced on the device.

    Attributes
    ----------
    idx : ndarray of int
        The landmark indices (the numpy path's draw).
    L : tensor (m, d)
        The landmarks on the device (for ``predict``).
    T : ndarray (m, p)
        The whitening of K_LL.
    A, C, FY, FG : ndarray or None
        FᵀF, FᵀF⁺, FᵀY and Fᵀg(Y) (float64, host); None where not asked for.
    n : int
        The number of samples.
    kernel : TorchKernel
        The kernel on the device.
    """

    idx: np.ndarray
    L: Any
    T: np.ndarray
    A: np.ndarray
    C: Any
    FY: Any
    FG: Any
    n: int
    kernel: Any


def landmark_sums_torch(est, X, tk, X1=None, Y=None, obs=None) -> LandmarkSums:
    """The landmarks of ``est`` (``n_landmarks``/``landmarks``/``random_state``; the numpy
    path's draw) among the device samples X and the sums of the whitened features against the
    partners X1, the targets Y and the observables' values ``obs`` (all float64 tensors)."""
    idx, L, T = landmark_basis_torch(est, X, tk)
    A, C, FY = landmark_stats_torch(tk, L, T, X, X1, Y)
    FG = None if obs is None else landmark_stats_torch(tk, L, T, X, Y=obs)[2]
    return LandmarkSums(idx=idx, L=L, T=T, A=A, C=C, FY=FY, FG=FG, n=int(X.shape[0]),
                        kernel=tk)


def landmark_stats_torch(tk, L, T, X, X1=None, Y=None) -> tuple:
    """FᵀF, FᵀF⁺ and FᵀY of the whitened landmark features, summed over row blocks on the
    device by :func:`asymkern._shared.operators.landmark_sums` (the code of the numpy and Dask
    fits), with the kernel blocks k(X, L) formed on the device.

    With F = k(X, L) T and F⁺ = k(X1, L) T (Mollenhauer et al., 2020, §4.3–4.4 restricted to the
    landmark span,
    Meanti et al. 2023), only these p×p and p×d sums over the n samples are needed, so the
    n×m blocks k(X, L) are formed and reduced on the device, ``working_memory`` MiB at a time.

    Parameters
    ----------
    tk : TorchKernel
    L : tensor of shape (m, d)
        The landmarks (float64, on the device).
    T : ndarray of shape (m, p)
        The whitening of K_LL.
    X : tensor of shape (n, d)
        The samples (float64).
    X1 : tensor of shape (n, d), optional
        Their partners (the time-shifted samples of a transfer operator).
    Y : tensor of shape (n, d_y), optional
        The targets.

    Returns
    -------
    tuple of ndarray or None
        (FᵀF, FᵀF⁺ or None, FᵀY or None), float64 numpy.
    """
    from .._shared.operators import landmark_sums

    torch = require_torch()
    Tt = torch.as_tensor(np.ascontiguousarray(T), dtype=torch.float64, device=X.device)
    out = landmark_sums(lambda P: TorchKernelMatrix(tk, P, L).to_dense(), Tt, X, X1,
                        None if Y is None else Y.to(torch.float64))
    return tuple(None if M is None else to_numpy(M) for M in out)


def landmark_predict_torch(est, X, coef):
    """k(x, L) @ coef on the device, for a landmark model fitted on the torch backend.

    Parameters
    ----------
    est : ConditionalMeanEmbedding or KoopmanOperator
        Fitted with landmarks on the torch backend.
    X : tensor or array-like of shape (n_points, d)
    coef : ndarray of shape (m, k)
        Coefficients on the landmarks (the numpy model's).

    Returns
    -------
    tensor (X's dtype, for tensor input) or ndarray
    """
    torch = require_torch()
    state, Xn, as_numpy = _transform_input(est, X)
    C = torch.as_tensor(np.ascontiguousarray(coef), dtype=torch.float64, device=state["device"])
    out = evaluate(state["kernel"], Xn, state["L"], C, "the predictions")
    return to_numpy(out) if as_numpy else out


def two_d(y):
    """A 1-D second view (tensor or array) as one column; 2-D inputs unchanged."""
    from .._dispatch import is_torch_tensor

    if is_torch_tensor(y):
        return y.reshape(-1, 1) if y.ndim == 1 else y
    A = np.asarray(y)
    return A.reshape(-1, 1) if A.ndim == 1 else A
