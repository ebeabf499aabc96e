"""Concrete kernels: classic symmetric ones, the asymmetric SNE and T kernels, user callables.

Parametrisation follows scikit-learn: ``gamma`` multiplies the squared distance,
κ_RBF(x, z) = exp(−gamma‖x − z‖²). Paper 000 writes exp(−‖x − z‖²/γ²): pass ``bandwidth=γ``
(gamma = 1/γ²). Paper 001 writes the SNE kernel with σ² in the same place: ``bandwidth=σ``.

Numerics (issue 12): the squared-distance kernels (RBF, Cauchy, SNE, T) centre the data before
the one-GEMM expansion, recompute near duplicates directly and scale by powers of two against
overflow (:func:`~asymkern.kernels.base.neg_scaled_sq_dists`); linear and polynomial kernels
raise ``OverflowError`` when their values leave the float range; every kernel validates its
parameters at construction and again at use (so a changed attribute is caught).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import manhattan_distances

from .._validation import DEPRECATED, user_stacklevel
from .base import (
    Kernel,
    _dense,
    check_bool,
    check_int,
    check_overflow,
    check_real,
    data_center,
    evaluate_callable,
    inplace_ufunc,
    neg_scaled_sq_dists,
)


def _resolve_gamma(gamma, bandwidth, n_features: int, kernel: str = "rbf") -> float:
    """The factor gamma of −gamma‖x − z‖² from ``gamma`` or ``bandwidth`` (validated)."""
    if gamma is not None and bandwidth is not None:
        raise ValueError(f"kernel {kernel!r}: give either gamma or bandwidth, not both")
    if bandwidth is not None:
        bw = check_real(bandwidth, "bandwidth", kernel, low=0.0)
        g = 1.0 / bw / bw
        if not (math.isfinite(g) and g > 0):
            raise ValueError(
                f"kernel {kernel!r}: bandwidth={bandwidth!r} gives gamma = 1/bandwidth² = {g!r} "
                "outside the float range; rescale the data and the bandwidth"
            )
        return g
    if gamma is None:
        return 1.0 / n_features
    return check_real(gamma, "gamma", kernel, low=0.0)


def _inverse_scale(scale, kernel: str) -> float:
    v = check_real(scale, "scale", kernel, low=0.0)
    inv = 1.0 / v
    if not math.isfinite(inv):
        raise ValueError(f"kernel {kernel!r}: scale={scale!r} is too small (1/scale overflows)")
    return inv


def _scale_given(scale) -> bool:
    """Whether the deprecated ``scale`` of the Cauchy/T kernels was set by the user."""
    return not (scale is None or (isinstance(scale, str) and scale == DEPRECATED))


def _t_gamma(gamma, bandwidth, scale, kernel: str) -> float:
    """The factor gamma of 1/(1 + gamma‖x − z‖²) from ``gamma``, ``bandwidth`` or the
    deprecated ``scale`` (gamma = 1/scale), validated; 1.0 when none is given."""
    given = [n for n, v in (("gamma", gamma), ("bandwidth", bandwidth)) if v is not None]
    if _scale_given(scale):
        given.append("scale")
    if len(given) > 1:
        raise ValueError(
            f"kernel {kernel!r}: give one of gamma and bandwidth (scale is the deprecated "
            f"name of 1/gamma), got {' and '.join(given)}"
        )
    if given == ["scale"]:
        return _inverse_scale(scale, kernel)
    if not given:
        return 1.0
    return _resolve_gamma(gamma, bandwidth, 1, kernel)


def _exp(K):
    np.exp(K, out=K)


def _neg(K):
    np.negative(K, out=K)


class LinearKernel(Kernel):
    """κ(x, z) = xᵀz.

    Raises ``OverflowError`` when xᵀz exceeds the float range (only checked when
    d·max|x|·max|z| could; Cauchy–Schwarz bounds |xᵀz| by it).
    """

    name = "linear"
    accepts_sparse = True

    def _raw(self, X, Z):
        with np.errstate(over="ignore", invalid="ignore"):  # checked just below
            K = _dense(X @ Z.T)
        if _may_overflow(X, Z, K.dtype):
            check_overflow(K, self.name, "xᵀz")
        return K


def _may_overflow(X, Z, dtype, gamma: float = 1.0, coef0: float = 0.0, degree: int = 1) -> bool:
    """Whether (gamma·xᵀz + coef0)^degree could leave the float range (a cheap a-priori bound
    on the logarithm: log|.| <= degree·log(gamma·d·max|x|·max|z| + |coef0|))."""
    from .base import _maxabs

    b = gamma * X.shape[1] * _maxabs(X) * _maxabs(Z) + abs(coef0)
    if b == 0:
        return False
    return degree * math.log(b) > math.log(np.finfo(dtype).max) - 3.0


class PolynomialKernel(Kernel):
    """κ(x, z) = (gamma·xᵀz + coef0)^degree (gamma defaults to 1/n_features).

    Parameters are validated (degree a positive integer, gamma > 0 finite, coef0 finite) at
    construction and again at every use. Raises ``OverflowError`` naming the kernel when the
    values exceed the float range.
    """

    name = "polynomial"
    accepts_sparse = True

    def __init__(self, degree: int = 3, gamma: float | None = None, coef0: float = 1.0):
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self._check_params()

    def _check_params(self):
        check_int(self.degree, "degree", self.name, low=1)
        check_real(self.gamma, "gamma", self.name, low=0.0, allow_none=True)
        check_real(self.coef0, "coef0", self.name)

    def _raw(self, X, Z):
        self._check_params()
        degree = int(self.degree)
        coef0 = float(self.coef0)
        gamma = _resolve_gamma(self.gamma, None, X.shape[1], self.name)
        with np.errstate(over="ignore", invalid="ignore"):  # checked just below
            K = _dense(X @ Z.T)
            K *= gamma
            K += coef0
            K = K ** degree
        if _may_overflow(X, Z, K.dtype, gamma, coef0, degree):
            check_overflow(K, self.name, "(gamma·xᵀz + coef0)^degree")
        return K

    @property
    def is_psd(self):  # type: ignore[override]
        return self.coef0 >= 0


class _SqDistKernel(Kernel):
    """Kernels that are functions of −s‖x − z‖² (RBF, Cauchy, SNE, T).

    They are computed by :func:`~asymkern.kernels.base.neg_scaled_sq_dists`: shifted by a
    common centre (no cancellation for data far from the origin), near duplicates recomputed
    directly (exact zeros), overflow avoided by power-of-two scaling; see its notes. A
    KernelMatrix passes one centre (``center``) to every block, so blocking never changes it.
    """

    accepts_sparse = True
    uses_center = True

    def _sq_scale(self, n_features: int) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    _value_func = None  # in-place map from −s‖x−z‖² to the kernel value
    _log_func = None  # in-place map from −s‖x−z‖² to log k (row-normalised kernels)

    def center_for(self, Z):
        """The shift a KernelMatrix uses for all blocks (None for sparse data)."""
        return data_center(Z)

    def _raw(self, X, Z, center=None):
        self._check_params()
        return neg_scaled_sq_dists(X, Z, self._sq_scale(X.shape[1]), center=center,
                                   func=type(self)._value_func)

    def _raw_into(self, X, Z, out, center=None):
        self._check_params()
        return neg_scaled_sq_dists(X, Z, self._sq_scale(X.shape[1]), center=center, out=out,
                                   func=type(self)._value_func)

    def _log_raw(self, X, Z, center=None, out=None, rows_func=None):
        """log k(X, Z); ``out`` and ``rows_func(Kc, a, b)`` as in
        :func:`~asymkern.kernels.base.neg_scaled_sq_dists` (``rows_func`` runs on each row
        chunk right after the logarithm, while the chunk is in cache)."""
        self._check_params()
        return neg_scaled_sq_dists(X, Z, self._sq_scale(X.shape[1]), center=center, out=out,
                                   func=type(self)._log_func, rows_func=rows_func)

    fuses_rows = True


class RBFKernel(_SqDistKernel):
    """Gaussian kernel κ(x, z) = exp(−gamma‖x − z‖²); ``bandwidth=γ`` means gamma = 1/γ².

    Accurate for data far from the origin and exactly 1 on identical rows (see
    :func:`~asymkern.kernels.base.neg_scaled_sq_dists`); values lie in [0, 1].
    """

    name = "rbf"

    def __init__(self, gamma: float | None = None, bandwidth: float | None = None):
        self.gamma = gamma
        self.bandwidth = bandwidth
        self._check_params()

    def _check_params(self):
        _resolve_gamma(self.gamma, self.bandwidth, 1, self.name)

    def _sq_scale(self, n_features):
        return _resolve_gamma(self.gamma, self.bandwidth, n_features, self.name)

    _value_func = staticmethod(_exp)
    _log_func = None


class LaplacianKernel(Kernel):
    """κ(x, z) = exp(−gamma‖x − z‖₁).

    ‖x − z‖₁ is summed from the coordinate differences directly, so it has no cancellation
    for data far from the origin; values lie in [0, 1] (an overflowing distance gives 0).
    """

    name = "laplacian"
    accepts_sparse = True

    def __init__(self, gamma: float | None = None):
        self.gamma = gamma
        self._check_params()

    def _check_params(self):
        check_real(self.gamma, "gamma", self.name, low=0.0, allow_none=True)

    def _raw(self, X, Z):
        self._check_params()
        gamma = _resolve_gamma(self.gamma, None, X.shape[1], self.name)
        dtype = np.result_type(X.dtype, Z.dtype)
        with np.errstate(over="ignore"):
            D = manhattan_distances(X, Z)
            D = np.multiply(D, -gamma, dtype=np.float64).astype(dtype, copy=False)
        return inplace_ufunc(np.exp, np.ascontiguousarray(D))


def _cauchy_value(K):
    np.subtract(1.0, K, out=K)  # 1 + gamma‖x−z‖²
    np.reciprocal(K, out=K)


def _t_log(K):
    np.negative(K, out=K)
    np.log1p(K, out=K)
    np.negative(K, out=K)


class CauchyKernel(_SqDistKernel):
    """κ(x, z) = 1 / (1 + gamma‖x − z‖²): the Student-t (one degree of freedom) similarity.

    The width follows :class:`RBFKernel`: ``gamma`` multiplies the squared distance and
    ``bandwidth=σ`` means gamma = 1/σ² (κ = 1/(1 + ‖x − z‖²/σ²)). With neither, gamma = 1
    (the paper's kernel 1/(1 + ‖x − z‖²); unlike RBF, not 1/n_features).

    Accurate for data far from the origin (see
    :func:`~asymkern.kernels.base.neg_scaled_sq_dists`); values lie in [0, 1].

    Parameters
    ----------
    gamma : float, optional
        Positive finite factor of ‖x − z‖²; default 1.0.
    bandwidth : float, optional
        σ > 0 with gamma = 1/σ²; give ``gamma`` or ``bandwidth``, not both.
    scale : float, optional
        Deprecated (``FutureWarning``) since 0.2, removed in 0.3: the former divisor of
        ‖x − z‖², ``scale = 1/gamma``. Use ``gamma=1/scale``.
    """

    name = "cauchy"

    def __init__(self, gamma: float | None = None, bandwidth: float | None = None,
                 scale: float | str | None = DEPRECATED):
        self.gamma = gamma
        self.bandwidth = bandwidth
        self.scale = scale
        if _scale_given(scale):
            self._warn_scale(scale)
        self._check_params()

    def _warn_scale(self, scale) -> None:
        warnings.warn(
            f"{type(self).__name__}: the parameter 'scale' is deprecated since 0.2 and will "
            f"be removed in 0.3; scale={scale!r} is gamma = 1/scale: use gamma="
            f"{_inverse_scale(scale, self.name)!r}",
            FutureWarning,
            stacklevel=user_stacklevel(),
        )

    def set_params(self, **params) -> CauchyKernel:
        """As :meth:`Kernel.set_params`; setting the deprecated ``scale`` warns."""
        if _scale_given(params.get("scale")):
            self._warn_scale(params["scale"])
        return super().set_params(**params)

    def _check_params(self):
        _t_gamma(self.gamma, self.bandwidth, self.scale, self.name)

    def _sq_scale(self, n_features):
        return _t_gamma(self.gamma, self.bandwidth, self.scale, self.name)

    _value_func = staticmethod(_cauchy_value)
    _log_func = staticmethod(_t_log)


class SNEKernel(RBFKernel):
    """Asymmetric SNE kernel (paper 000 §4.1; paper 001 §4.3).

    κ(x, z) = exp(−gamma‖x − z‖²) / Σ_{r∈R} exp(−gamma‖x − r‖²), with R the reference set
    (the second training set by default). Asymmetric even when X = Z; not PSD in general.
    The log-values −gamma‖x − z‖² are computed without cancellation (see
    :func:`~asymkern.kernels.base.neg_scaled_sq_dists`) and normalised by a log-sum-exp.
    """

    name = "sne"
    is_symmetric = False
    is_psd = False
    row_normalized = True


class TKernel(CauchyKernel):
    """Asymmetric T kernel (paper 001 §4.3): (1 + gamma‖x − z‖²)⁻¹ / Σ_{r∈R} (1 + gamma‖x − r‖²)⁻¹.

    Parameters as :class:`CauchyKernel` (``gamma`` default 1.0, ``bandwidth`` σ with
    gamma = 1/σ², ``scale`` deprecated: gamma = 1/scale).
    """

    name = "t"
    is_symmetric = False
    is_psd = False
    row_normalized = True


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
        self._check_params()

    def _check_params(self):
        if not callable(self.func):
            raise TypeError(f"kernel must be callable, got {type(self.func).__name__}")
        for flag in ("is_symmetric", "is_psd", "accepts_sparse", "checks_features"):
            check_bool(getattr(self, flag), flag, self.name)

    def _raw(self, X, Z):
        K = evaluate_callable(self.func, X, Z, name="kernel callable")
        if sp.issparse(K):  # pragma: no cover - _dense already handles it
            K = K.toarray()
        return K
