"""The conditional mean embedding on torch: Gram matrix, Cholesky factor and solves on the device.

:class:`~asymkern.operators.ConditionalMeanEmbedding` hands ``fit`` / ``predict`` /
``weights`` / ``expectation`` here for torch tensors or a set ``device``. The Tikhonov-
regularised embedding Û_{Y|X} = Ψ (G_Φ + nεI)⁻¹ Φᵀ (Mollenhauer et al., 2020, §4.3) needs the
Cholesky factor of G_Φ + nεI: G_Φ = [k(x_i, x_j)] is formed on the device in float64 (as the numpy
path forms it, :func:`cme_samples_torch`); the estimator factorises it and solves with the
executor's primitives (``torch.linalg.cholesky_ex``, ``torch.cholesky_solve``), the code the numpy
fit runs; the weights are β(x) = (G_Φ + nεI)⁻¹ [k(x_j, x)]_j and E[Y | x] = k(x, X) (G_Φ + nεI)⁻¹
Y. With landmarks the Nyström-restricted estimator runs instead (:func:`cme_landmark_sums_torch`):
its n×m blocks k(X, L) are reduced on the device to the sums FᵀF and FᵀY of the whitened landmark
features, and the m×m solve is the numpy path's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._dispatch import require_torch
from .device import as_tensor, to_numpy
from .kernels import TorchKernel, TorchKernelMatrix
from .operators import _transform_input, evaluate, gram, paired_input


@dataclass(frozen=True)
class CMESamples:
    """The paired samples of an exact conditional-mean-embedding fit on the device.

    Attributes
    ----------
    X, Y : tensor
        Float64 copies of the samples (Y 2-D) on the device (never the caller's memory).
    G : tensor
        The Gram matrix G_X = k(X, X), float64, on the device.
    kernel : TorchKernel
        The kernel on X.
    device : torch.device
        Where the fit runs.
    as_numpy : bool
        Whether the inputs were numpy (numpy outputs then).
    """

    X: Any
    Y: Any
    G: Any
    kernel: Any
    device: Any
    as_numpy: bool


def cme_samples_torch(est, X, y, kernel_x) -> CMESamples:
    """Validate the paired samples of a conditional mean embedding, copy them to the device in
    float64 and form G_X there.

    Parameters
    ----------
    est : ConditionalMeanEmbedding
        The estimator (``device``; ``n_features_in_`` is set).
    X : tensor or array-like of shape (n, d)
        The inputs.
    y : tensor or array-like of shape (n,) or (n, d_y)
        The outputs.
    kernel_x : Kernel
        The resolved kernel on X.

    Returns
    -------
    CMESamples

    Raises
    ------
    ValueError
        If G_X has non-finite entries, or the samples are not paired.
    """
    torch = require_torch()
    dev, as_numpy, Xt, Yt = paired_input(est, X, y)
    X64, Y64 = Xt.to(torch.float64, copy=True), Yt.to(torch.float64, copy=True)
    tk = TorchKernel(kernel_x, int(X64.shape[1]))
    G = gram(tk, X64, X64, "the Gram matrix G_X of X")
    return CMESamples(X=X64, Y=Y64, G=G, kernel=tk, device=dev, as_numpy=as_numpy)


def cme_landmark_sums_torch(est, X, y, kernel_x):
    """The landmark (Nyström) conditional mean embedding's sums FᵀF and FᵀY, formed on the
    device from the validated paired samples (:func:`.operators.landmark_sums_torch`).

    Parameters
    ----------
    est : ConditionalMeanEmbedding
        The estimator (``n_landmarks`` / ``landmarks``, ``random_state``, ``device``).
    X : tensor or array-like of shape (n, d)
    y : tensor or array-like of shape (n,) or (n, d_y)
    kernel_x : Kernel

    Returns
    -------
    LandmarkSums
    """
    from .operators import landmark_sums_torch

    torch = require_torch()
    _, _, Xt, Yt = paired_input(est, X, y)
    X64, Y64 = Xt.to(torch.float64), Yt.to(torch.float64)
    return landmark_sums_torch(est, X64, TorchKernel(kernel_x, int(X64.shape[1])), Y=Y64)


def predict_cme_torch(est, X):
    """E[Y | X = x] = k(x, X) (G_Φ + nεI)⁻¹ Y on the device.

    Parameters
    ----------
    est : ConditionalMeanEmbedding
        Fitted on the torch backend.
    X : tensor or array-like of shape (n_points, d)

    Returns
    -------
    tensor or ndarray of shape (n_points,) or (n_points, d_y)
        A tensor in X's dtype for tensor input, numpy otherwise; 1-D when y was.
    """
    state, Xn, as_numpy = _transform_input(est, X)
    out = evaluate(state["kernel"], Xn, state["X"], state["coef"], "the predictions")
    out = out[:, 0] if est._y_1d else out
    return to_numpy(out) if as_numpy else out


def weights_cme_torch(est, X):
    """The embedding weights β(x) = (G_Φ + nεI)⁻¹ [k(x_j, x)]_j on the device.

    Parameters
    ----------
    est : ConditionalMeanEmbedding
        Fitted on the torch backend.
    X : tensor or array-like of shape (n_points, d)

    Returns
    -------
    tensor or ndarray of shape (n_train, n_points)
        A tensor in X's dtype for tensor input, float64 numpy otherwise.
    """
    torch = require_torch()
    state, Xn, as_numpy = _transform_input(est, X)
    K = TorchKernelMatrix(state["kernel"], state["X"], Xn.to(torch.float64)).to_dense()
    if not bool(torch.isfinite(K).all()):
        raise ValueError("the kernel values k(x_i, x) have non-finite entries; rescale X like "
                         "the training data")
    W = torch.cholesky_solve(K, state["L"])
    return to_numpy(W) if as_numpy else W.to(Xn.dtype)


def expectation_cme_torch(est, vals, X):
    """E[g(Y) | X = x] ≈ Σ_i β_i(x) g(y_i) on the device, from the values g(y_i).

    Parameters
    ----------
    est : ConditionalMeanEmbedding
        Fitted on the torch backend.
    vals : ndarray of shape (n_train,) or (n_train, p)
        The finite float64 values g(y_i).
    X : tensor or array-like of shape (n_points, d)

    Returns
    -------
    tensor or ndarray of shape (n_points,) or (n_points, p)
        A tensor in X's dtype for tensor input, float64 numpy otherwise.
    """
    torch = require_torch()
    state, Xn, as_numpy = _transform_input(est, X)
    V = as_tensor(vals.reshape(vals.shape[0], -1), state["device"], "func(y)",
                  dtype=torch.float64)
    K = TorchKernelMatrix(state["kernel"], Xn.to(torch.float64), state["X"])
    out = K.matmat(torch.cholesky_solve(V, state["L"]))  # β(x)ᵀ g = k(x, X)(G + nεI)⁻¹ g
    out = out[:, 0] if vals.ndim == 1 else out
    return to_numpy(out) if as_numpy else out.to(Xn.dtype)
