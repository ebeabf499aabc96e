"""CovarianceOperator on torch: the Gram matrix and its eigendecomposition on the device.

:class:`~asymkern.operators.CovarianceOperator` hands ``fit`` / ``transform`` here for torch
tensors or a set ``device``. The empirical covariance operator Ĉ_XX = (1/n) ΦΦᵀ (paper 002
§4.2) has the eigenpairs (λ, e = Φα) with G α = nλ α, G = ΦᵀΦ the Gram matrix (centred,
G̃ = H G H, with ``center=True``; plus ``jitter``·I), and ‖e‖² = αᵀGα = 1 for
α = u/√(nλ)·√n = u/√μ where (μ, u) is an eigenpair of G (μ = nλ). The numpy path reaches the
same eigenpairs through a pivoted-Cholesky kernel QR factor (Cor. 3.6); here G is formed on the
device in float64 (as the numpy path does) and ``torch.linalg.eigh`` decomposes it, so the
eigenvalues and eigenfunctions agree to rounding (eigenfunctions up to sign, which LAPACK leaves
free on both paths).

Rank rule: a direction counts when its Gram eigenvalue exceeds n·eps·max diag(G), the
threshold of the numpy path's pivoted Cholesky, and when |λ| > 1e-12·λ₁ (its eigensolver's
rule); ``n_components`` beyond that is clipped with a ``ClippedParameterWarning``.
"""

from __future__ import annotations

import numpy as np

from .._dispatch import any_torch, require_torch
from .device import as_tensor, resolve_device, to_numpy
from .kernels import TorchKernel, TorchKernelMatrix

#: relative threshold of a numerically zero operator eigenvalue (``linalg.eig_qr``)
_EIG_RTOL = 1e-12


def fit_covariance_torch(est, X, kernel) -> dict:
    """Eigenpairs of the empirical covariance operator of X on the torch backend.

    Parameters
    ----------
    est : CovarianceOperator
        The estimator (``n_components``, ``center``, ``jitter``, ``device``).
    X : tensor or array-like of shape (n, d)
        The samples.
    kernel : Kernel
        The resolved kernel.

    Returns
    -------
    dict
        ``X`` (float64 numpy copy of the samples), ``eigenvalues`` (float64, descending; a
        tensor on the device for tensor input),
        ``coef`` (n × k float64 coefficients of the RKHS-normalised eigenfunctions before
        centring), ``state`` (what ``transform`` needs on the device) and ``as_numpy``.
    """
    from .._validation import check_input, clip_count

    torch = require_torch()
    dev = resolve_device(est.device, X)
    as_numpy = not any_torch(X)
    if as_numpy:
        X = check_input(est, X, reset=True, min_samples=2)
    Xt = as_tensor(X, dev, "X")
    if not as_numpy:
        if Xt.shape[0] < 2:
            raise ValueError(f"X has {Xt.shape[0]} sample(s); CovarianceOperator needs at "
                             "least 2")
        est.n_features_in_ = int(Xt.shape[1])
    dtype = Xt.dtype
    X64 = Xt.to(torch.float64)
    n = int(X64.shape[0])
    tk = TorchKernel(kernel, int(X64.shape[1]))
    G = TorchKernelMatrix(tk, X64, X64).to_dense()
    if not bool(torch.isfinite(G).all()):
        raise ValueError("the Gram matrix of X (input) has non-finite entries; rescale the "
                         "samples (e.g. StandardScaler) or change the kernel parameters")
    if est.center:  # H G H through the means, in the numpy path's order
        G -= G.mean(dim=1, keepdim=True)
        G -= G.mean(dim=0, keepdim=True)
    G = 0.5 * (G + G.T)
    if est.jitter:
        G.diagonal().add_(float(est.jitter))
    dmax = float(G.diagonal().max())
    if dmax <= 0:
        raise ValueError("Gram matrix of X (input) has a non-positive diagonal: every feature "
                         "is the zero function")
    mu, U = torch.linalg.eigh(G)
    mu, U = mu.flip(0), U.flip(1)  # descending
    tol = n * float(np.finfo(np.float64).eps) * dmax
    rank = int((mu > tol).sum())
    if rank < n:  # as the numpy path's kernel QR warns
        import warnings

        from ..linalg.operator_svd import RankDeficientGramWarning

        warnings.warn(
            f"Gram matrix of X (input) ({n}×{n}) is numerically singular: numerical rank "
            f"{rank} (directions with squared RKHS norm ≤ {tol:.3g} dropped); pass jitter > 0 "
            "to regularise instead", RankDeficientGramWarning, stacklevel=3)
    k = clip_count(est.n_components, rank, "n_components",
                   "the numerical rank of the Gram matrix", owner=type(est).__name__)
    nonzero = int((mu[:k].abs() > _EIG_RTOL * max(float(mu[0]), 1e-300)).sum())
    k = clip_count(k, nonzero, "n_components", "the numerical rank of the operator",
                   owner=type(est).__name__)
    mu, U = mu[:k], U[:, :k]
    coef = U / torch.sqrt(mu)
    est.torch_fit_ = True
    state = {"device": dev, "dtype": dtype, "kernel": tk, "X": X64, "coef": coef}
    if est.center:
        coef_c = coef - coef.mean(dim=0, keepdim=True)
        state["coef"] = coef_c
        # the numpy path's transform subtracts the eigenfunctions' mean over the samples
        state["offset"] = (TorchKernelMatrix(tk, X64, X64).matmat(coef_c)).mean(dim=0)
    lam = mu / n
    return {"X": to_numpy(X64), "eigenvalues": to_numpy(lam) if as_numpy else lam,
            "coef": to_numpy(coef), "state": state, "as_numpy": as_numpy}


def transform_covariance_torch(est, X):
    """``CovarianceOperator.transform`` on the torch backend (values of the eigenfunctions).

    Parameters
    ----------
    est : CovarianceOperator
        Fitted on the torch backend.
    X : tensor or array-like of shape (n_points, d)

    Returns
    -------
    tensor (for tensor input, the fit's device and the input dtype) or ndarray
    """
    from .._validation import check_input

    state = getattr(est, "_torch_state", None)
    if state is None:
        raise ValueError("this CovarianceOperator was fitted on numpy arrays without "
                         "device=...; fit it with torch tensors (or a device) to transform "
                         "torch tensors")
    as_numpy = not any_torch(X)
    if as_numpy:
        X = check_input(est, X, reset=False)
    Xn = as_tensor(X, state["device"], "X")
    if Xn.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {Xn.shape[1]} features, but CovarianceOperator is expecting "
                         f"{est.n_features_in_} features as input")
    out_dtype = Xn.dtype
    torch = require_torch()
    G = TorchKernelMatrix(state["kernel"], Xn.to(torch.float64), state["X"])
    vals = G.matmat(state["coef"])
    if "offset" in state:
        vals = vals - state["offset"]
    if not bool(torch.isfinite(vals).all()):
        raise ValueError("the transformed values have non-finite entries; rescale X like the "
                         "training data")
    vals = vals.to(out_dtype)
    return to_numpy(vals) if as_numpy else vals
