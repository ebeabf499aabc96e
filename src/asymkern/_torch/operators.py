"""Covariance and cross-covariance operators on torch: Gram matrices and their
decompositions on the device.

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

The cross-covariance Ĉ_YX = (1/n) ΨΦᵀ (Ex. 3.16) takes the SVD of B̃ = R_Ψ (I/n) R_Φᵀ
(Cor. 3.5) with the eigen-factors R = M^{1/2} Uᵀ of the two Gram matrices (rank directions
kept), so v_i = Φ U_Φ M_Φ^{-1/2} q_i and u_i = Ψ U_Ψ M_Ψ^{-1/2} p_i; the numpy path uses
pivoted-Cholesky factors of the same Gram matrices, which give the same singular values and
functions (up to sign). Only ``method='qr'`` runs here.
"""

from __future__ import annotations

import numpy as np

from .._dispatch import any_torch, require_torch
from .device import as_tensor, resolve_device, to_numpy
from .kernels import TorchKernel, TorchKernelMatrix

#: relative threshold of a numerically zero operator eigenvalue (``linalg.eig_qr``)
_EIG_RTOL = 1e-12
#: the same for singular values on the kernel QR route (``DEFAULT_RANK_RTOL['qr']``)
_SVD_RTOL = 1e-10


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
    mu, U, rank = _gram_eigh(tk, X64, est.center, est.jitter, "X (input)")
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


def _gram_eigh(tk, X64, center: bool, jitter: float, which: str):
    """Eigendecomposition of the (centred, jittered) float64 Gram matrix of X64 on the device.

    Returns the eigenvalues μ (descending), the eigenvectors U and the numerical rank: the
    number of μ above n·eps·max diag(G), the threshold of the numpy path's pivoted Cholesky
    (:func:`asymkern.linalg.kernel_qr`), which warns the same way when it is below n.
    """
    torch = require_torch()
    n = int(X64.shape[0])
    G = TorchKernelMatrix(tk, X64, X64).to_dense()
    if not bool(torch.isfinite(G).all()):
        raise ValueError(f"the Gram matrix of {which} has non-finite entries; rescale the "
                         "samples (e.g. StandardScaler) or change the kernel parameters")
    if center:  # H G H through the means, in the numpy path's order
        G -= G.mean(dim=1, keepdim=True)
        G -= G.mean(dim=0, keepdim=True)
    G = 0.5 * (G + G.T)
    if jitter:
        G.diagonal().add_(float(jitter))
    dmax = float(G.diagonal().max())
    if dmax <= 0:
        raise ValueError(f"Gram matrix of {which} has a non-positive diagonal: every feature "
                         "is the zero function")
    mu, U = torch.linalg.eigh(G)
    mu, U = mu.flip(0), U.flip(1)  # descending
    tol = n * float(np.finfo(np.float64).eps) * dmax
    rank = int((mu > tol).sum())
    if rank < n:  # as the numpy path's kernel QR warns
        import warnings

        from ..linalg.operator_svd import RankDeficientGramWarning

        warnings.warn(
            f"Gram matrix of {which} ({n}×{n}) is numerically singular: numerical rank "
            f"{rank} (directions with squared RKHS norm ≤ {tol:.3g} dropped); pass jitter > 0 "
            "to regularise instead", RankDeficientGramWarning, stacklevel=4)
    return mu, U, rank


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
    state, Xn, as_numpy = _transform_input(est, X)
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


def fit_cross_covariance_torch(est, X, Y, kernel_x, kernel_y) -> dict:
    """Singular triplets of the empirical cross-covariance operator on the torch backend.

    Parameters
    ----------
    est : CrossCovarianceOperator
        The estimator (``n_components``, ``center``, ``jitter``, ``method``, ``device``).
    X : tensor or array-like of shape (n, d_x)
        The x samples.
    Y : tensor or array-like of shape (n, d_y)
        The paired y samples (2-D).
    kernel_x, kernel_y : Kernel
        The resolved kernels.

    Returns
    -------
    dict
        ``X``, ``Y`` (float64 numpy copies), ``singular_values`` (float64, descending; a tensor
        for tensor input), ``coef_u`` / ``coef_v`` (float64 numpy coefficients of the
        RKHS-normalised left (y) / right (x) singular functions before centring) and
        ``state`` (what ``transform`` needs on the device).
    """
    from .._validation import check_input, clip_count

    torch = require_torch()
    if est.method != "qr":
        raise NotImplementedError(f"method={est.method!r} is not available on the torch "
                                  "backend; use method='qr' or device=None with numpy input")
    dev = resolve_device(est.device, X, Y)
    as_numpy = not any_torch(X, Y)
    if as_numpy:
        X = check_input(est, X, reset=True, min_samples=2)
    Xt = as_tensor(X, dev, "X")
    Yt = as_tensor(two_d(Y), dev, "y")
    if not as_numpy:
        if Xt.shape[0] < 2:
            raise ValueError(f"X has {Xt.shape[0]} sample(s); {type(est).__name__} needs at "
                             "least 2")
        est.n_features_in_ = int(Xt.shape[1])
    if Yt.shape[0] != Xt.shape[0]:
        raise ValueError(f"y has {Yt.shape[0]} samples; expected {Xt.shape[0]}, one per row "
                         "of X (paired samples (x_i, y_i))")
    X64, Y64 = Xt.to(torch.float64), Yt.to(torch.float64)
    n = int(X64.shape[0])
    tkx = TorchKernel(kernel_x, int(X64.shape[1]))
    tky = TorchKernel(kernel_y, int(Y64.shape[1]))
    mu_x, U_x, rx = _gram_eigh(tkx, X64, est.center, est.jitter, "X (input)")
    mu_y, U_y, ry = _gram_eigh(tky, Y64, est.center, est.jitter, "Y (output)")
    owner = type(est).__name__
    k = clip_count(est.n_components, min(rx, ry), "n_components",
                   f"the numerical rank of the Gram matrices ({rx} for X, {ry} for y)",
                   owner=owner)
    # eigen-factors R = M^{1/2} Uᵀ of the kept directions; B̃ = R_Ψ (I/n) R_Φᵀ
    sx, sy = torch.sqrt(mu_x[:rx]), torch.sqrt(mu_y[:ry])
    Bt = (sy[:, None] * (U_y[:, :ry].T @ U_x[:, :rx]) * sx[None, :]) / n
    P, sig, Qt = torch.linalg.svd(Bt, full_matrices=False)
    if sig.numel() == 0 or not bool(sig[0] > 0):
        raise ValueError("the operator is numerically zero (kernel QR route); nothing to "
                         "decompose")
    nonzero = int((sig[:k] > _SVD_RTOL * sig[0]).sum())
    k = clip_count(k, nonzero, "n_components", "the numerical rank of the operator",
                   owner=owner)
    sig = sig[:k]
    coef_u = U_y[:, :ry] @ (P[:, :k] / sy[:, None])
    coef_v = U_x[:, :rx] @ (Qt[:k].T / sx[:, None])
    est.torch_fit_ = True
    cu = coef_u - coef_u.mean(dim=0, keepdim=True) if est.center else coef_u
    cv = coef_v - coef_v.mean(dim=0, keepdim=True) if est.center else coef_v
    state = {"device": dev, "dtype": Xt.dtype, "kernel_x": tkx, "kernel_y": tky, "X": X64,
             "Y": Y64, "coef_u": cu, "coef_v": cv}
    return {"X": to_numpy(X64), "Y": to_numpy(Y64),
            "singular_values": to_numpy(sig) if as_numpy else sig,
            "coef_u": to_numpy(coef_u), "coef_v": to_numpy(coef_v), "state": state}


def transform_cross_covariance_torch(est, X, y=None):
    """``CrossCovarianceOperator.transform`` on the torch backend: [v_i(x)], and [u_i(y)].

    Parameters
    ----------
    est : CrossCovarianceOperator
        Fitted on the torch backend.
    X : tensor or array-like of shape (n_points, d_x)
    y : tensor or array-like of shape (n_points,) or (n_points, d_y), optional

    Returns
    -------
    tensor or ndarray, or a tuple of two
        Tensors for tensor input (the input dtype), numpy arrays otherwise.
    """
    torch = require_torch()
    state, Xn, as_numpy = _transform_input(est, X)

    def values(tk, P, centers, coef, what):
        vals = TorchKernelMatrix(tk, P.to(torch.float64), centers).matmat(coef)
        if not bool(torch.isfinite(vals).all()):
            raise ValueError(f"the transformed values{what} have non-finite entries; rescale "
                             "the data like the training data")
        return vals.to(P.dtype)

    xs = values(state["kernel_x"], Xn, state["X"], state["coef_v"], "")
    xs = to_numpy(xs) if as_numpy else xs
    if y is None:
        return xs
    y_numpy = not any_torch(y)
    Yn = as_tensor(two_d(y), state["device"], "y")
    if Yn.shape[1] != state["Y"].shape[1]:
        raise ValueError(f"y has {Yn.shape[1]} features; expected {state['Y'].shape[1]} "
                         "(as in fit)")
    ys = values(state["kernel_y"], Yn, state["Y"], state["coef_u"], " of y")
    return xs, (to_numpy(ys) if y_numpy else ys)


def two_d(y):
    """A 1-D second view (tensor or array) as one column; 2-D inputs unchanged."""
    from .._dispatch import is_torch_tensor

    if is_torch_tensor(y):
        return y.reshape(-1, 1) if y.ndim == 1 else y
    A = np.asarray(y)
    return A.reshape(-1, 1) if A.ndim == 1 else A
