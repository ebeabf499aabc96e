"""Covariance and cross-covariance operators on torch: Gram matrices and their
decompositions on the device.

:class:`~asymkern.operators.CovarianceOperator` hands ``fit`` / ``transform`` here for torch
tensors or a set ``device``. The empirical covariance operator Ĉ_XX = (1/n) ΦΦᵀ (Mollenhauer
et al., 2020, §4.2) has the eigenpairs (λ, e = Φα) with G α = nλ α, G = ΦᵀΦ the Gram matrix
(centred, G̃ = H G H, with ``center=True``; plus ``jitter``·I), and ‖e‖² = αᵀGα = 1 for
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

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._backend import ops_of
from .._dispatch import any_torch, require_torch
from .device import as_tensor, resolve_device, to_numpy
from .kernels import TorchKernel, TorchKernelMatrix

#: relative threshold of a numerically zero operator eigenvalue (``linalg.eig_qr``)
_EIG_RTOL = 1e-12
#: the same for singular values on the kernel QR route (``DEFAULT_RANK_RTOL['qr']``)
_SVD_RTOL = 1e-10


@dataclass(frozen=True)
class SpectralFit:
    """The result of a covariance, cross-covariance or kernel CCA fit on the device.

    Attributes
    ----------
    X, Y : ndarray
        Float64 numpy copies of the samples (Y None for the covariance operator).
    values : ndarray or tensor
        The spectrum, descending: eigenvalues, singular values or canonical correlations (a
        float64 tensor on the device for tensor input).
    coef_v, coef_u : ndarray
        Coefficients of the RKHS-normalised right (x) / left (y) functions before centring
        (the eigenfunctions for the covariance operator: ``coef_v``).
    coef_f, coef_g : ndarray or None
        Kernel CCA's canonical functions (final).
    state : dict
        What ``transform`` needs on the device.
    """

    X: np.ndarray
    values: Any
    coef_v: np.ndarray
    state: dict
    Y: np.ndarray | None = None
    coef_u: np.ndarray | None = None
    coef_f: np.ndarray | None = None
    coef_g: np.ndarray | None = None


def fit_covariance_torch(est, X, kernel) -> SpectralFit:
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
    SpectralFit
        ``values``: the eigenvalues; ``coef_v``: the eigenfunctions' coefficients.
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
    X64 = Xt.to(torch.float64, copy=True)  # the model never shares the caller's memory
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
    ops = ops_of(coef)  # the numpy path's sign rule: largest-magnitude entry positive
    coef = ops.scale_cols(coef, ops.sign_flips(coef)) if coef.numel() else coef
    state = {"device": dev, "dtype": dtype, "kernel": tk, "X": X64, "coef": coef}
    if est.center:
        coef_c = coef - coef.mean(dim=0, keepdim=True)
        state["coef"] = coef_c
        # the numpy path's transform subtracts the eigenfunctions' mean over the samples
        state["offset"] = (TorchKernelMatrix(tk, X64, X64).matmat(coef_c)).mean(dim=0)
    lam = mu / n
    return SpectralFit(X=to_numpy(X64), values=to_numpy(lam) if as_numpy else lam,
                       coef_v=to_numpy(coef), state=state)


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


def _gram_eigh(tk, X64, center: bool, jitter: float, which: str, warn: bool = True):
    """Eigendecomposition of the (centred, jittered) float64 Gram matrix of X64 on the device.

    Returns the eigenvalues μ (descending), the eigenvectors U and the numerical rank: the
    number of μ above n·eps·max diag(G), the threshold of the numpy path's pivoted Cholesky
    (:func:`asymkern.linalg.kernel_qr`) and of :func:`asymkern.linalg.gram_eigh`. With ``warn``
    a rank below n gives the ``RankDeficientGramWarning`` of the kernel QR route (the
    regularised estimators, e.g. kernel CCA, do not warn). A clearly indefinite G (smallest
    eigenvalue below −max(1000·n·eps, 1e-8)·μ₁, the rule of ``GramFactor.from_eigh``) is
    refused: Mollenhauer et al. (2020) needs a PSD kernel.
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
    eps = float(np.finfo(np.float64).eps)
    if float(mu[-1]) < -max(1e3 * n * eps, 1e-8) * float(mu[0]):
        raise ValueError(f"the Gram matrix of {which} is not positive semi-definite (smallest "
                         f"eigenvalue {float(mu[-1]):.3g}, largest {float(mu[0]):.3g}); paper "
                         "002 needs a symmetric PSD kernel")
    tol = n * eps * dmax
    rank = int((mu > tol).sum())
    if warn and rank < n:  # as the numpy path's kernel QR warns
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
    vals = evaluate(state["kernel"], Xn, state["X"], state["coef"], "the transformed values",
                    state.get("offset"))
    return to_numpy(vals) if as_numpy else vals


def fit_cross_covariance_torch(est, X, Y, kernel_x, kernel_y) -> SpectralFit:
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
    SpectralFit
        ``values``: the singular values.
    """
    from .._validation import clip_count

    torch = require_torch()
    dev, as_numpy, dtype, X64, Y64, tkx, tky = _two_view_start(est, X, Y, kernel_x, kernel_y)
    n = int(X64.shape[0])
    mu_x, U_x, rx = _gram_eigh(tkx, X64, est.center, est.jitter, "X (input)")
    mu_y, U_y, ry = _gram_eigh(tky, Y64, est.center, est.jitter, "Y (output)")
    owner = type(est).__name__
    k = clip_count(est.n_components, min(rx, ry), "n_components",
                   f"the numerical rank of the Gram matrices ({rx} for X, {ry} for y)",
                   owner=owner)
    # eigen-factors R = M^{1/2} Uᵀ of the kept directions; B̃ = R_Ψ (I/n) R_Φᵀ
    sx, sy = torch.sqrt(mu_x[:rx]), torch.sqrt(mu_y[:ry])
    Bt = (sy[:, None] * (U_y[:, :ry].T @ U_x[:, :rx]) * sx[None, :]) / n
    P, sig, Q = _small_svd(Bt, k, owner)
    coef_u = U_y[:, :ry] @ (P / sy[:, None])
    coef_v = U_x[:, :rx] @ (Q / sx[:, None])
    cu = coef_u - coef_u.mean(dim=0, keepdim=True) if est.center else coef_u
    cv = coef_v - coef_v.mean(dim=0, keepdim=True) if est.center else coef_v
    state = {"device": dev, "dtype": dtype, "kernel_x": tkx, "kernel_y": tky, "X": X64,
             "Y": Y64, "coef_u": cu, "coef_v": cv}
    return SpectralFit(X=to_numpy(X64), Y=to_numpy(Y64), values=to_numpy(sig) if as_numpy else sig,
                       coef_u=to_numpy(coef_u), coef_v=to_numpy(coef_v), state=state)


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
    from .._validation import check_input

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
        if Xt.shape[0] < 2:
            raise ValueError(f"X has {Xt.shape[0]} sample(s); {type(est).__name__} needs at "
                             "least 2")
        est.n_features_in_ = int(Xt.shape[1])
    if Yt.shape[0] != Xt.shape[0]:
        raise ValueError(f"y has {Yt.shape[0]} samples; expected {Xt.shape[0]}, one per row "
                         "of X (paired samples (x_i, y_i))")
    return dev, as_numpy, Xt, Yt


def _two_view_start(est, X, Y, kernel_x, kernel_y):
    """Shared start of the two-view fits (cross-covariance, kernel CCA): only ``method='qr'``;
    the paired samples on the device as float64 copies, and the two kernels.

    Returns (device, whether the inputs were numpy, X's dtype, X64, Y64, kernel of X,
    kernel of Y).
    """
    torch = require_torch()
    if est.method != "qr":
        raise NotImplementedError(f"method={est.method!r} is not available on the torch "
                                  "backend; use method='qr' or device=None with numpy input")
    dev, as_numpy, Xt, Yt = paired_input(est, X, Y)
    X64, Y64 = Xt.to(torch.float64, copy=True), Yt.to(torch.float64, copy=True)
    return (dev, as_numpy, Xt.dtype, X64, Y64, TorchKernel(kernel_x, int(X64.shape[1])),
            TorchKernel(kernel_y, int(Y64.shape[1])))


def _small_svd(Bt, k: int, owner: str):
    """The top-k SVD P Σ Qᵀ of the small matrix B̃ of Cor. 3.5 with the numpy path's rules:
    a numerically zero operator is refused, and k is clipped (``ClippedParameterWarning``) to
    the singular values above 1e-10·σ₁. Returns (P, σ, Q), k columns each."""
    from .._validation import clip_count

    torch = require_torch()
    P, sig, Qt = torch.linalg.svd(Bt, full_matrices=False)
    if sig.numel() == 0 or not bool(sig[0] > 0):
        raise ValueError("the operator is numerically zero (kernel QR route); nothing to "
                         "decompose")
    nonzero = int((sig[:k] > _SVD_RTOL * sig[0]).sum())
    k = clip_count(k, nonzero, "n_components", "the numerical rank of the operator",
                   owner=owner)
    return P[:, :k], sig[:k], Qt[:k].T

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
    state, Xn, as_numpy = _transform_input(est, X)
    xs = evaluate(state["kernel_x"], Xn, state["X"], state["coef_v"], "the transformed values")
    xs = to_numpy(xs) if as_numpy else xs
    if y is None:
        return xs
    ys, y_numpy = _second_view_values(state, y, state["coef_u"], "the transformed values of y")
    return xs, (to_numpy(ys) if y_numpy else ys)


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


def _second_view_values(state, y, coef, what: str, offset=None):
    """The fitted functions of the second view at y (1-D or 2-D, the fit's columns), and
    whether y was numpy."""
    y_numpy = not any_torch(y)
    Yn = as_tensor(two_d(y), state["device"], "y")
    if Yn.shape[1] != state["Y"].shape[1]:
        raise ValueError(f"y has {Yn.shape[1]} features; expected {state['Y'].shape[1]} "
                         "(as in fit)")
    return evaluate(state["kernel_y"], Yn, state["Y"], coef, what, offset), y_numpy


def fit_cca_torch(est, X, Y, kernel_x, kernel_y, eps: float) -> SpectralFit:
    """Kernel CCA on the torch backend: the SVD of S = Ψ B Φᵀ through the Gram eigen-factors.

    With the kept eigenpairs (λ, U) of the (centred) Gram matrices, the eigen-factors
    R = Λ^{1/2} Uᵀ and B = (G_Ψ + nεI)^{-1/2} (G_Φ + nεI)^{-1/2} (Mollenhauer et al., 2020, App.
    A.2), the small matrix of Cor. 3.5 is B̃ = R_Ψ B R_Φᵀ = diag(√λ_Ψ/√(λ_Ψ + nε)) U_Ψᵀ U_Φ
    diag(√λ_Φ/√(λ_Φ + nε)); its SVD P Σ Qᵀ gives the canonical correlations σ, the singular
    functions u = Ψ U_Ψ Λ_Ψ^{-1/2} p and v = Φ U_Φ Λ_Φ^{-1/2} q, and the canonical functions
    f = (Ĉ_XX + ε)^{-1/2} v = Φ U_Φ diag(1/√(λ_Φ/n + ε)) Λ_Φ^{-1/2} q, scaled to unit empirical
    variance (as :meth:`KernelCCA._canonical` does on numpy).

    Parameters
    ----------
    est : KernelCCA
        The estimator (``n_components``, ``center``, ``method``, ``device``).
    X : tensor or array-like of shape (n, d_x)
    Y : tensor or array-like of shape (n,) or (n, d_y)
    kernel_x, kernel_y : Kernel
        The resolved kernels.
    eps : float
        ε > 0 (``alpha``).

    Returns
    -------
    SpectralFit
        ``values``: the canonical correlations.
    """
    from .._validation import clip_count

    torch = require_torch()
    dev, as_numpy, dtype, X64, Y64, tkx, tky = _two_view_start(est, X, Y, kernel_x, kernel_y)
    n = int(X64.shape[0])
    c = bool(est.center)
    lx, Ux, rx = _gram_eigh(tkx, X64, c, 0.0, "X", warn=False)
    ly, Uy, ry = _gram_eigh(tky, Y64, c, 0.0, "y", warn=False)
    lx, Ux, ly, Uy = lx[:rx], Ux[:, :rx], ly[:ry], Uy[:, :ry]
    owner = type(est).__name__
    k = clip_count(est.n_components, min(rx, ry), "n_components",
                   f"the numerical rank of the Gram matrices ({rx} for X, {ry} for y)",
                   owner=owner)
    sx, sy = torch.sqrt(lx), torch.sqrt(ly)
    wx, wy = sx / torch.sqrt(lx + n * eps), sy / torch.sqrt(ly + n * eps)
    P, sig, Q = _small_svd(wy[:, None] * (Uy.T @ Ux) * wx[None, :], k, owner)
    coef_u, coef_v = Uy @ (P / sy[:, None]), Ux @ (Q / sx[:, None])

    def canonical(U, lam, Z64, tk, W):
        # (Ĉ + ε)^{-1/2} Φ U W = Φ U diag(1/√(λ/n + ε)) W; its values at the training features
        # are U diag(λ) (...) exactly, as U holds eigenvectors of the (centred) Gram matrix
        A = W / torch.sqrt(lam / n + eps)[:, None]
        vals = U @ (lam[:, None] * A)
        if c:
            vals = vals - vals.mean(dim=0, keepdim=True)
        sd = torch.sqrt((vals**2).mean(dim=0))
        sd = torch.where(sd == 0, torch.ones_like(sd), sd)
        coef = U @ (A / sd)
        if not c:
            return coef, None
        coef = coef - coef.mean(dim=0, keepdim=True)
        return coef, TorchKernelMatrix(tk, Z64, Z64).matmat(coef).mean(dim=0)

    coef_f, mean_x = canonical(Ux, lx, X64, tkx, Q / sx[:, None])
    coef_g, mean_y = canonical(Uy, ly, Y64, tky, P / sy[:, None])
    state = {"device": dev, "dtype": dtype, "kernel_x": tkx, "kernel_y": tky, "X": X64,
             "Y": Y64, "coef_f": coef_f, "coef_g": coef_g, "mean_x": mean_x,
             "mean_y": mean_y}
    return SpectralFit(X=to_numpy(X64), Y=to_numpy(Y64),
                       values=to_numpy(sig) if as_numpy else sig, coef_u=to_numpy(coef_u),
                       coef_v=to_numpy(coef_v), coef_f=to_numpy(coef_f),
                       coef_g=to_numpy(coef_g), state=state)


def transform_cca_torch(est, X=None, y=None):
    """Canonical variates of ``KernelCCA`` fitted on the torch backend.

    Parameters
    ----------
    est : KernelCCA
        Fitted on the torch backend.
    X : tensor or array-like of shape (n_points, d_x), optional
        Points of the first view (None: only ``y``).
    y : tensor or array-like of shape (n_points,) or (n_points, d_y), optional
        Points of the second view.

    Returns
    -------
    tensor or ndarray, or a tuple of two
        f_i(x) − mean (and g_i(y) − mean): tensors for tensor input (its dtype), numpy arrays
        otherwise.
    """
    what = "the canonical variates"
    out = []
    if X is not None:
        state, Xn, as_numpy = _transform_input(est, X)
        xs = evaluate(state["kernel_x"], Xn, state["X"], state["coef_f"], what,
                      state["mean_x"])
        out.append(to_numpy(xs) if as_numpy else xs)
    if y is not None:
        state = est._torch_state
        ys, y_numpy = _second_view_values(state, y, state["coef_g"], what, state["mean_y"])
        out.append(to_numpy(ys) if y_numpy else ys)
    return out[0] if len(out) == 1 else tuple(out)


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
