"""Concrete kernels: classic symmetric ones, the asymmetric SNE and T kernels, user callables.

Parametrisation follows scikit-learn: ``gamma`` multiplies the squared distance,
κ_RBF(x, z) = exp(−gamma‖x − z‖²). Paper 000 writes exp(−‖x − z‖²/γ²): pass ``bandwidth=γ``
(gamma = 1/γ²). Paper 001 writes the SNE kernel with σ² in the same place: ``bandwidth=σ``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import manhattan_distances

from .._validation import check_positive
from .base import Kernel, _dense, evaluate_callable, inplace_ufunc, neg_scaled_sq_dists


def _resolve_gamma(gamma, bandwidth, n_features: int) -> float:
    if gamma is not None and bandwidth is not None:
        raise ValueError("give either gamma or bandwidth, not both")
    if bandwidth is not None:
        return 1.0 / check_positive(bandwidth, "bandwidth") ** 2
    if gamma is None:
        return 1.0 / n_features
    return check_positive(gamma, "gamma")


class LinearKernel(Kernel):
    """κ(x, z) = xᵀz."""

    name = "linear"
    accepts_sparse = True

    def _raw(self, X, Z):
        return _dense(X @ Z.T)


class PolynomialKernel(Kernel):
    """κ(x, z) = (gamma·xᵀz + coef0)^degree (gamma defaults to 1/n_features)."""

    name = "polynomial"
    accepts_sparse = True

    def __init__(self, degree: int = 3, gamma: float | None = None, coef0: float = 1.0):
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0

    def _raw(self, X, Z):
        if int(self.degree) != self.degree or self.degree < 1:
            raise ValueError(f"degree must be a positive integer, got {self.degree!r}")
        gamma = _resolve_gamma(self.gamma, None, X.shape[1])
        K = _dense(X @ Z.T)
        K *= gamma
        K += self.coef0
        return K ** int(self.degree)

    @property
    def is_psd(self):  # type: ignore[override]
        return self.coef0 >= 0


class RBFKernel(Kernel):
    """Gaussian kernel κ(x, z) = exp(−gamma‖x − z‖²); ``bandwidth=γ`` means gamma = 1/γ²."""

    name = "rbf"
    accepts_sparse = True

    def __init__(self, gamma: float | None = None, bandwidth: float | None = None):
        self.gamma = gamma
        self.bandwidth = bandwidth

    def _raw(self, X, Z):
        gamma = _resolve_gamma(self.gamma, self.bandwidth, X.shape[1])
        K = neg_scaled_sq_dists(X, Z, gamma, clip=False)
        return inplace_ufunc(np.exp, K)

    def _raw_into(self, X, Z, out):
        if sp.issparse(X) or sp.issparse(Z):
            return super()._raw_into(X, Z, out)
        gamma = _resolve_gamma(self.gamma, self.bandwidth, X.shape[1])
        return inplace_ufunc(np.exp, neg_scaled_sq_dists(X, Z, gamma, clip=False, out=out))


class LaplacianKernel(Kernel):
    """κ(x, z) = exp(−gamma‖x − z‖₁)."""

    name = "laplacian"
    accepts_sparse = True

    def __init__(self, gamma: float | None = None):
        self.gamma = gamma

    def _raw(self, X, Z):
        gamma = _resolve_gamma(self.gamma, None, X.shape[1])
        dtype = np.result_type(X.dtype, Z.dtype)
        D = manhattan_distances(X, Z).astype(dtype, copy=False)
        D *= -gamma
        return inplace_ufunc(np.exp, np.ascontiguousarray(D))


class CauchyKernel(Kernel):
    """κ(x, z) = 1 / (1 + ‖x − z‖²/scale): the Student-t (one degree of freedom) similarity."""

    name = "cauchy"
    accepts_sparse = True

    def __init__(self, scale: float = 1.0):
        self.scale = scale

    def _raw(self, X, Z):
        scale = check_positive(self.scale, "scale")
        K = neg_scaled_sq_dists(X, Z, 1.0 / scale)
        K *= -1.0
        K += 1.0
        return np.reciprocal(K, out=K)


class SNEKernel(RBFKernel):
    """Asymmetric SNE kernel (paper 000 §4.1; paper 001 §4.3).

    κ(x, z) = exp(−gamma‖x − z‖²) / Σ_{r∈R} exp(−gamma‖x − r‖²), with R the reference set
    (the second training set by default). Asymmetric even when X = Z; not PSD in general.
    """

    name = "sne"
    is_symmetric = False
    is_psd = False
    row_normalized = True

    def _log_raw(self, X, Z):
        return neg_scaled_sq_dists(X, Z, _resolve_gamma(self.gamma, self.bandwidth, X.shape[1]))


class TKernel(CauchyKernel):
    """Asymmetric T kernel (paper 001 §4.3): (1 + ‖x − z‖²)⁻¹ / Σ_{r∈R} (1 + ‖x − r‖²)⁻¹."""

    name = "t"
    is_symmetric = False
    is_psd = False
    row_normalized = True

    def _log_raw(self, X, Z):
        scale = check_positive(self.scale, "scale")
        K = neg_scaled_sq_dists(X, Z, 1.0 / scale)
        K *= -1.0
        np.log1p(K, out=K)
        K *= -1.0
        return K


class CallableKernel(Kernel):
    """A user function ``func(X, Z) -> (n, m) array``; its output is checked for shape and
    finiteness. Flags default to the safe values (asymmetric, not PSD)."""

    name = "callable"

    def __init__(
        self,
        func,
        is_symmetric: bool = False,
        is_psd: bool = False,
        accepts_sparse: bool = False,
        checks_features: bool = True,
    ):
        if not callable(func):
            raise TypeError(f"kernel must be callable, got {type(func).__name__}")
        self.func = func
        self.is_symmetric = is_symmetric
        self.is_psd = is_psd
        self.accepts_sparse = accepts_sparse
        self.checks_features = checks_features

    def _raw(self, X, Z):
        K = evaluate_callable(self.func, X, Z, name="kernel callable")
        if sp.issparse(K):  # pragma: no cover - _dense already handles it
            K = K.toarray()
        return K
