"""Concrete kernels: classic symmetric ones, the asymmetric SNE and T kernels, user callables.

Parametrisation follows scikit-learn: ``gamma`` multiplies the squared distance,
κ_RBF(x, z) = exp(−gamma‖x − z‖²). Tao et al. (2024) writes exp(−‖x − z‖²/γ²): pass ``bandwidth=γ``
(gamma = 1/γ²). He et al. (2023) writes the SNE kernel with σ² in the same place: ``bandwidth=σ``.

Numerics: the squared-distance kernels (RBF, Cauchy, SNE, T) centre the data before
the one-GEMM expansion, recompute near duplicates directly and scale by powers of two against
overflow (:func:`~asymkern.kernels.base.neg_scaled_sq_dists`); linear and polynomial kernels
raise ``OverflowError`` when their values leave the float range; every kernel validates its
parameters at construction and again at use (so a changed attribute is caught).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import manhattan_distances

from .._validation import DEPRECATED, user_stacklevel
from .base import (
    Kernel,
    _dense,
    _maxabs,
    check_bool,
    check_overflow,
    check_real,
    data_center,
    evaluate_callable,
    inplace_ufunc,
    neg_log1p_scaled,
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


class LinearKernel(Kernel):
    """Linear kernel κ(x, z) = xᵀz.

    Symmetric and positive semi-definite; accepts sparse (CSR) input. The kernel has no
    parameters.

    Raises
    ------
    OverflowError
        When xᵀz exceeds the float range (only checked when d·max|x|·max|z| could;
        Cauchy–Schwarz bounds ``|xᵀz|`` by it).

    See Also
    --------
    PolynomialKernel : (gamma·xᵀz + coef0)^degree.
    RBFKernel : The Gaussian kernel.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import LinearKernel
    >>> X = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> LinearKernel()(X).tolist()
    [[5.0, 11.0], [11.0, 25.0]]
    """

    name = "linear"
    accepts_sparse = True

    def feature_rank(self, n_features: int) -> int | None:
        """The dimension of the kernel's feature map (a bound of every Gram matrix's rank).

        Parameters
        ----------
        n_features : int
            The number of features d of the data.

        Returns
        -------
        int
            d: the feature map is the identity.
        """
        return int(n_features)

    def _raw(self, X, Z):
        with np.errstate(over="ignore", invalid="ignore"):  # checked just below
            K = _dense(X @ Z.T)
        if _may_overflow(X, Z, K.dtype):
            check_overflow(K, self.name, "xᵀz")
        return K


def _may_overflow(X, Z, dtype, gamma: float = 1.0, coef0: float = 0.0, degree: int = 1) -> bool:
    """Whether (gamma·xᵀz + coef0)^degree could leave the float range (a cheap a-priori bound
    on the logarithm: log|.| <= degree·log(gamma·d·max|x|·max|z| + ``|coef0|``))."""
    b = gamma * X.shape[1] * _maxabs(X) * _maxabs(Z) + abs(coef0)
    if b == 0:
        return False
    return degree * math.log(b) > math.log(np.finfo(dtype).max) - 3.0


def _integral_degree(degree) -> int | None:
    """``degree`` as an int when it is a whole number (3 or 3.0), else None."""
    d = float(degree)
    return int(d) if d == math.floor(d) else None


def check_base_for_real_degree(min_base: float, degree, kernel: str = "polynomial") -> None:
    """Refuse a non-integer ``degree`` when some base gamma·xᵀz + coef0 is negative: a real
    power of a negative number is not real (numpy gives NaN)."""
    if min_base < 0:
        raise ValueError(
            f"kernel {kernel!r}: degree={degree!r} is not an integer and gamma·xᵀz + coef0 is "
            f"negative for some pairs (down to {min_base:.3g}); a non-integer power of a "
            f"negative number is not real. Use an integer degree, or a coef0 (or data) that "
            f"keeps gamma·xᵀz + coef0 >= 0"
        )


class PolynomialKernel(Kernel):
    """Polynomial kernel κ(x, z) = (gamma·xᵀz + coef0)^degree.

    Parameters are validated at construction and again at every use. Symmetric; positive
    semi-definite when ``coef0 >= 0`` and ``degree`` is an integer (the ``is_psd`` flag).
    Accepts sparse (CSR) input.

    Parameters
    ----------
    degree : float, default 3
        The exponent, a real number >= 0, as in scikit-learn. A whole number (3 or 3.0) is
        applied as an integer power (exact, defined for every base); a non-integer degree
        (e.g. 2.5) needs gamma·xᵀz + coef0 >= 0 for every pair evaluated, else the kernel
        raises ``ValueError`` naming ``degree`` (a real power of a negative number is not
        real: never a NaN entry).
    gamma : float, optional
        Positive finite factor of xᵀz; None (default) means 1/n_features.
    coef0 : float, default 1.0
        Finite additive constant.

    Raises
    ------
    ValueError
        If a parameter is out of range (at construction or use), or ``degree`` is not an
        integer and gamma·xᵀz + coef0 < 0 for an evaluated pair.
    TypeError
        If a parameter is not a real number.
    OverflowError
        When the values exceed the float range (named after the kernel).

    See Also
    --------
    sklearn.metrics.pairwise.polynomial_kernel : The same kernel (a real degree >= 1).
    LinearKernel : The case degree 1, gamma 1, coef0 0.
    RBFKernel : The Gaussian kernel.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import PolynomialKernel
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> PolynomialKernel(degree=2, gamma=1.0, coef0=1.0)(X).tolist()
    [[4.0, 1.0], [1.0, 4.0]]
    """

    name = "polynomial"
    accepts_sparse = True

    def __init__(self, degree: float = 3, gamma: float | None = None, coef0: float = 1.0):
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self._check_params()

    def _check_params(self):
        check_real(self.degree, "degree", self.name, low=0.0, low_open=False)
        check_real(self.gamma, "gamma", self.name, low=0.0, allow_none=True)
        check_real(self.coef0, "coef0", self.name)

    def _raw(self, X, Z):
        self._check_params()
        whole = _integral_degree(self.degree)
        degree: float = float(self.degree) if whole is None else whole
        coef0 = float(self.coef0)
        gamma = _resolve_gamma(self.gamma, None, X.shape[1], self.name)
        with np.errstate(over="ignore", invalid="ignore"):  # checked just below
            K = _dense(X @ Z.T)
            K *= gamma
            K += coef0
            if whole is None and K.size:
                check_base_for_real_degree(float(K.min()), self.degree, self.name)
            K = K ** degree
        if _may_overflow(X, Z, K.dtype, gamma, coef0, degree):
            check_overflow(K, self.name, "(gamma·xᵀz + coef0)^degree")
        return K

    def feature_rank(self, n_features: int) -> int | None:
        """The dimension of the kernel's feature map (a bound of every Gram matrix's rank).

        Parameters
        ----------
        n_features : int
            The number of features d of the data.

        Returns
        -------
        int or None
            For an integer degree p the number of monomials of degree ≤ p in d variables,
            C(d + p, p) (coef0 ≠ 0), or of degree exactly p, C(d + p − 1, p) (coef0 = 0);
            None for a non-integer degree (no finite feature map).
        """
        p = _integral_degree(self.degree)
        if p is None:
            return None
        d = int(n_features)
        return math.comb(d + p, p) if float(self.coef0) != 0 else math.comb(d + p - 1, p)

    @property
    def is_psd(self):
        # a non-integer power of gamma·xᵀz + coef0 is not PSD in general (the binomial series
        # of (t + coef0)^degree has negative coefficients)
        return self.coef0 >= 0 and _integral_degree(self.degree) is not None


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

    def _check_params(self):
        self._sq_scale(1)

    # in-place map from −s‖x−z‖² to the kernel value
    _value_func: Callable[[np.ndarray], Any] | None = None
    # in-place map from −s‖x−z‖² to log k (row-normalised kernels)
    _log_func: Callable[[np.ndarray], Any] | None = None
    # how the value reads −s‖x−z‖² (``neg_scaled_sq_dists``'s ``value``: which entries are
    # recomputed directly when the data spread far beyond the kernel's width)
    _value_kind: str | None = None
    # in-place map (−‖x−z‖², s) → log k where s‖x−z‖² may overflow (``neg_scaled_sq_dists``'s
    # ``unfolded_func``), for a log k that stays representable there; None: the usual route
    _log_unfolded: Callable[[np.ndarray, float], Any] | None = None

    def center_for(self, Z):
        """The shift a KernelMatrix uses for all blocks (None for sparse data)."""
        return data_center(Z)

    def _sq_dists(self, X, Z, func, **kw):
        """``func`` applied to −s‖x − z‖² (s the checked scale), as
        :func:`~asymkern.kernels.base.neg_scaled_sq_dists` with the keywords ``kw``."""
        self._check_params()
        return neg_scaled_sq_dists(X, Z, self._sq_scale(X.shape[1]), func=func,
                                   value=type(self)._value_kind, **kw)

    def _raw(self, X, Z, center=None):
        return self._sq_dists(X, Z, type(self)._value_func, center=center)

    def _raw_into(self, X, Z, out, center=None):
        return self._sq_dists(X, Z, type(self)._value_func, center=center, out=out)

    def _log_raw(self, X, Z, center=None, out=None, rows_func=None, row_lse=None):
        """log k(X, Z); ``out``, ``rows_func(Kc, a, b)`` and ``row_lse`` as in
        :func:`~asymkern.kernels.base.neg_scaled_sq_dists` (``rows_func`` runs on each row
        chunk right after the logarithm, while the chunk is in cache; ``row_lse``: the rows'
        known log-normalisers, which decide which weights the rounding could move)."""
        return self._sq_dists(X, Z, type(self)._log_func, center=center, out=out,
                              rows_func=rows_func, row_lse=row_lse,
                              unfolded_func=type(self)._log_unfolded)

    fuses_rows = True


class RBFKernel(_SqDistKernel):
    """Gaussian kernel κ(x, z) = exp(−gamma‖x − z‖²); ``bandwidth=γ`` means gamma = 1/γ².

    ``gamma`` multiplies the squared distance, as in scikit-learn's ``rbf_kernel``. The
    papers' width γ divides it, exp(−‖x − z‖²/γ²) (Tao et al. (2024), §4.1): pass
    ``bandwidth=γ``. Accurate for data far from the origin and exactly 1 on identical rows
    (see :func:`~asymkern.kernels.base.neg_scaled_sq_dists`); values lie in [0, 1].
    Symmetric and positive definite; accepts sparse (CSR) input.

    Parameters
    ----------
    gamma : float, optional
        Positive finite factor of ‖x − z‖²; None (default, with no ``bandwidth``) means
        1/n_features.
    bandwidth : float, optional
        σ > 0 with gamma = 1/σ². Give ``gamma`` or ``bandwidth``, not both.

    Raises
    ------
    ValueError
        If both ``gamma`` and ``bandwidth`` are given, or either is not positive and finite.

    See Also
    --------
    SNEKernel : The row-normalised, asymmetric version.
    CauchyKernel : 1/(1 + gamma‖x − z‖²).
    LaplacianKernel : exp(−gamma‖x − z‖₁).

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, §4.1.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import RBFKernel
    >>> X = np.array([[0.0, 0.0], [1.0, 1.0]])
    >>> K = RBFKernel(bandwidth=2.0)(X)     # gamma = 1/4: exp(-2/4)
    >>> round(float(K[0, 1]), 3), float(K[0, 0])
    (0.607, 1.0)
    >>> bool(np.allclose(K, RBFKernel(gamma=0.25)(X)))
    True
    """

    name = "rbf"

    def __init__(self, gamma: float | None = None, bandwidth: float | None = None):
        self.gamma = gamma
        self.bandwidth = bandwidth
        self._check_params()

    def _sq_scale(self, n_features):
        return _resolve_gamma(self.gamma, self.bandwidth, n_features, self.name)

    _value_func = staticmethod(_exp)
    _log_func = None
    _value_kind = "exp"


class _GammaKernel(Kernel):
    """Kernels whose one parameter is the width ``gamma`` (Laplacian, softmax): a positive
    finite number, or None for a default that depends on the number of features."""

    def __init__(self, gamma: float | None = None):
        self.gamma = gamma
        self._check_params()

    def _check_params(self):
        check_real(self.gamma, "gamma", self.name, low=0.0, allow_none=True)


class LaplacianKernel(_GammaKernel):
    """Laplacian kernel κ(x, z) = exp(−gamma‖x − z‖₁).

    ‖x − z‖₁ is summed from the coordinate differences directly, so it has no cancellation
    for data far from the origin; values lie in [0, 1]. Where gamma·‖x − z‖₁ exceeds the
    float range the value is 0 (the correct limit); where only ‖x − z‖₁ overflows (data near
    the float range with a small ``gamma``) the distance is recomputed from the data scaled
    by a power of two (exact) and gamma·‖x − z‖₁ formed without overflow.
    Symmetric and positive definite; accepts sparse (CSR) input. It has no ``bandwidth``.

    Parameters
    ----------
    gamma : float, optional
        Positive finite factor of ‖x − z‖₁; None (default) means 1/n_features.

    Raises
    ------
    ValueError
        If ``gamma`` is not positive and finite.

    See Also
    --------
    RBFKernel : exp(−gamma‖x − z‖²).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import LaplacianKernel
    >>> X = np.array([[0.0, 0.0], [1.0, 2.0]])
    >>> K = LaplacianKernel(gamma=0.5)(X)    # exp(-0.5 * 3)
    >>> round(float(K[0, 1]), 3)
    0.223
    """

    name = "laplacian"
    accepts_sparse = True

    def _raw(self, X, Z):
        self._check_params()
        gamma = _resolve_gamma(self.gamma, None, X.shape[1], self.name)
        dtype = np.result_type(X.dtype, Z.dtype)
        if not (X.shape[0] and Z.shape[0]):  # scikit-learn refuses an empty set
            return np.empty((X.shape[0], Z.shape[0]), dtype=dtype)
        with np.errstate(over="ignore"):
            D = manhattan_distances(_int32_indices(X), _int32_indices(Z))
            over = np.nonzero(np.isinf(D)) if _l1_may_overflow(X, Z) else None
            D = np.multiply(D, -gamma, dtype=np.float64)
            if over is not None:
                _l1_overflowed(D, X, Z, gamma, *over)
            D = D.astype(dtype, copy=False)
        return inplace_ufunc(np.exp, np.ascontiguousarray(D))


def _int32_indices(A):
    """A sparse matrix whose index arrays are int64 as CSR with int32 indices when they fit
    (scikit-learn's sparse ``manhattan_distances`` reads int32 indices only, and fails with
    "Buffer dtype mismatch" on int64 ones); the values are not copied. Anything else as is."""
    if not sp.issparse(A) or A.indices.dtype == np.int32:
        return A
    A = sp.csr_matrix(A)
    if A.nnz > np.iinfo(np.int32).max or A.shape[1] > np.iinfo(np.int32).max:
        return A  # left to scikit-learn's message
    out = sp.csr_matrix((A.data, A.indices.astype(np.int32), A.indptr.astype(np.int32)),
                        shape=A.shape, copy=False)
    return out


def _l1_may_overflow(X, Z) -> bool:
    """Whether some ‖x − z‖₁ could exceed the float64 range (a cheap a-priori bound:
    ‖x − z‖₁ <= d·(max|x| + max|z|))."""
    return X.shape[1] * (_maxabs(X) + _maxabs(Z)) > np.finfo(np.float64).max


def _l1_overflowed(NG: np.ndarray, X, Z, gamma: float, I: np.ndarray, J: np.ndarray) -> None:
    """Recompute in place the entries (I, J) of NG = −gamma·‖x − z‖₁ whose distance
    overflowed to inf although gamma·‖x − z‖₁ may be finite.

    The data are scaled by one power of two 2^-e (exact: these pairs are at distance beyond
    the float range, so coordinates that the scaling takes into the subnormals do not
    matter) so that every scaled distance is below 1, and −gamma·‖x − z‖₁ is formed as
    ldexp(−m·D_s, g + e) with gamma = m·2^g (frexp): −inf only where it truly overflows,
    which exp maps to the correct 0. Pairs are processed in batches of about 1 MiB.
    """
    if I.size == 0:
        return
    d = X.shape[1]
    e = math.frexp(max(_maxabs(X), _maxabs(Z)))[1] + int(d).bit_length() + 1
    gm, ge = math.frexp(gamma)
    batch = max(1, (1 << 17) // max(1, d))
    for s in range(0, I.size, batch):
        Ib, Jb = I[s:s + batch], J[s:s + batch]
        if sp.issparse(X) or sp.issparse(Z):
            Xb = sp.csr_matrix(X[Ib], dtype=np.float64)
            Zb = sp.csr_matrix(Z[Jb], dtype=np.float64)
            Xb.data = np.ldexp(Xb.data, -e)
            Zb.data = np.ldexp(Zb.data, -e)
            Ds = np.asarray(abs(Xb - Zb).sum(axis=1), dtype=np.float64).ravel()
        else:
            diff = np.ldexp(np.asarray(X[Ib], dtype=np.float64), -e)
            diff -= np.ldexp(np.asarray(Z[Jb], dtype=np.float64), -e)
            Ds = np.abs(diff, out=diff).sum(axis=1)
        with np.errstate(over="ignore", under="ignore"):
            NG[Ib, Jb] = np.ldexp(-gm * Ds, ge + e)


def _cauchy_value(K):
    np.subtract(1.0, K, out=K)  # 1 + gamma‖x−z‖²
    np.reciprocal(K, out=K)


def _t_log(K):
    np.negative(K, out=K)
    np.log1p(K, out=K)
    np.negative(K, out=K)


def _t_log_unfolded(K, s: float) -> None:
    """K = −‖x − z‖² → log k = −log1p(s‖x − z‖²) in place (float64), also where s‖x − z‖²
    overflows (:func:`~asymkern.kernels.base.neg_log1p_scaled`)."""
    K[...] = neg_log1p_scaled(np.negative(K), s, np)


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

    Raises
    ------
    ValueError
        If more than one of ``gamma``, ``bandwidth`` and ``scale`` is given, or the value is
        not positive and finite.

    See Also
    --------
    TKernel : The row-normalised, asymmetric version.
    RBFKernel : exp(−gamma‖x − z‖²), with the same width convention.

    References
    ----------
    .. [1] M. He, F. He, L. Shi, X. Huang and J. A. K. Suykens, "Learning with Asymmetric
       Kernels: Least Squares and Feature Interpretation", IEEE TPAMI 2023, §4.3.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import CauchyKernel
    >>> X = np.array([[0.0, 0.0], [1.0, 1.0]])
    >>> K = CauchyKernel()(X)                # 1 / (1 + 2)
    >>> round(float(K[0, 1]), 3), float(K[1, 1])
    (0.333, 1.0)
    >>> round(float(CauchyKernel(bandwidth=2.0)(X)[0, 1]), 3)    # 1 / (1 + 2/4)
    0.667
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
        """Set parameters as :meth:`Kernel.set_params`; the deprecated ``scale`` warns.

        Parameters
        ----------
        **params
            New values of ``gamma``, ``bandwidth`` or (deprecated, ``FutureWarning``)
            ``scale``.

        Returns
        -------
        CauchyKernel
            The kernel itself, updated in place.
        """
        if _scale_given(params.get("scale")):
            self._warn_scale(params["scale"])
        return super().set_params(**params)

    def _sq_scale(self, n_features):
        return _t_gamma(self.gamma, self.bandwidth, self.scale, self.name)

    _value_func = staticmethod(_cauchy_value)
    _log_func = staticmethod(_t_log)
    # −log1p(s‖x − z‖²) where the product overflows: the T weights stay representable
    _log_unfolded = staticmethod(_t_log_unfolded)
    _value_kind = "reciprocal"


class SNEKernel(RBFKernel):
    """Asymmetric SNE kernel (Tao et al., 2024, §4.1; He et al. (2023) §4.3).

    κ(x, z) = exp(−gamma‖x − z‖²) / Σ_{r∈R} exp(−gamma‖x − r‖²), with R the reference set
    (the second training set by default). Asymmetric even when X = Z; not PSD in general.
    Tao et al. (2024), §4.1, write exp(−‖x − z‖²/γ²): ``bandwidth=γ``; He et al. (2023),
    §4.3, write σ² in the same place: ``bandwidth=σ``. The log-values −gamma‖x − z‖² are
    computed without cancellation (see :func:`~asymkern.kernels.base.neg_scaled_sq_dists`)
    and normalised by a log-sum-exp; each row of ``kernel(X, Z)`` sums to 1 when the
    reference set is ``Z``.

    Parameters
    ----------
    gamma : float, optional
        Positive finite factor of ‖x − z‖²; None (default, with no ``bandwidth``) means
        1/n_features.
    bandwidth : float, optional
        σ > 0 with gamma = 1/σ². Give ``gamma`` or ``bandwidth``, not both.

    Raises
    ------
    ValueError
        If both ``gamma`` and ``bandwidth`` are given, or either is not positive and finite.
    OverflowError
        When every kernel value of a row underflows (the row normaliser is not finite).

    See Also
    --------
    RBFKernel : The unnormalised, symmetric kernel.
    TKernel : The row-normalised Cauchy kernel.
    KernelMatrix : Evaluates the normalisers in memory-bounded blocks.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, §4.1.
    .. [2] M. He, F. He, L. Shi, X. Huang and J. A. K. Suykens, "Learning with Asymmetric
       Kernels: Least Squares and Feature Interpretation", IEEE TPAMI 2023, §4.3.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import SNEKernel
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    >>> K = SNEKernel(gamma=1.0)(X)
    >>> bool(np.allclose(K.sum(axis=1), 1.0)), bool(np.allclose(K, K.T))
    (True, False)
    """

    name = "sne"
    is_symmetric = False
    is_psd = False
    row_normalized = True
    _value_kind = "exp_rows"  # the weights read differences of −s‖x − z‖² within a row


class TKernel(CauchyKernel):
    """Asymmetric T kernel (He et al., 2023, §4.3): (1 + gamma‖x − z‖²)⁻¹ / Σ_{r∈R} (1 + gamma‖x −
    r‖²)⁻¹.

    R is the reference set (the second training set by default). Asymmetric even when
    X = Z; not PSD in general. Each row of ``kernel(X, Z)`` sums to 1 when the reference
    set is ``Z``.

    Parameters
    ----------
    gamma : float, optional
        Positive finite factor of ‖x − z‖²; default 1.0 (He et al. (2023), §4.3).
    bandwidth : float, optional
        σ > 0 with gamma = 1/σ². Give ``gamma`` or ``bandwidth``, not both.
    scale : float, optional
        Deprecated (``FutureWarning``) since 0.2, removed in 0.3: ``scale = 1/gamma``.

    Raises
    ------
    ValueError
        If more than one of ``gamma``, ``bandwidth`` and ``scale`` is given, or the value is
        not positive and finite.

    See Also
    --------
    CauchyKernel : The unnormalised, symmetric kernel.
    SNEKernel : The row-normalised Gaussian kernel.

    References
    ----------
    .. [1] M. He, F. He, L. Shi, X. Huang and J. A. K. Suykens, "Learning with Asymmetric
       Kernels: Least Squares and Feature Interpretation", IEEE TPAMI 2023, §4.3.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import TKernel
    >>> X = np.array([[0.0], [1.0], [3.0]])
    >>> K = TKernel()(X)
    >>> bool(np.allclose(K.sum(axis=1), 1.0)), bool(np.allclose(K, K.T))
    (True, False)
    """

    name = "t"
    is_symmetric = False
    is_psd = False
    row_normalized = True


class SoftmaxKernel(_GammaKernel):
    """Softmax-attention kernel κ(q, k) = exp(gamma⟨q, k⟩) / Σ_{r∈R} exp(gamma⟨q, r⟩).

    The asymmetric kernel of Transformer attention (Vaswani et al., 2017): row q_i of
    ``kernel(Q, K)`` is the attention distribution of query q_i over the keys K (R = K, the
    reference set, by default), so each row sums to 1. Tao et al. (2024) cite attention as an
    asymmetric kernel that KSVD can decompose without symmetrising it. The log-values
    gamma⟨q, k⟩ are normalised by a log-sum-exp with the row maximum kept apart, so the kernel
    neither overflows nor underflows to an all-zero row for large logits. Asymmetric and not
    PSD; queries and keys must have the same number of features.

    Parameters
    ----------
    gamma : float, optional
        Positive finite factor of ⟨q, k⟩; None (default) means 1/√n_features, the scaling of
        scaled dot-product attention.

    Raises
    ------
    ValueError
        If ``gamma`` is not positive and finite.

    See Also
    --------
    SNEKernel : The row-normalised Gaussian kernel (a softmax of −gamma‖q − k‖²).
    KernelMatrix : Evaluates the normalisers in memory-bounded blocks.

    References
    ----------
    .. [1] A. Vaswani, N. Shazeer, N. Parmar, J. Uszkoreit, L. Jones, A. N. Gomez,
       Ł. Kaiser and I. Polosukhin, "Attention is all you need", NeurIPS 2017, eq. 1.
    .. [2] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, §1.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import SoftmaxKernel
    >>> Q = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> K = np.array([[1.0, 1.0], [0.0, 0.0], [2.0, -1.0]])
    >>> A = SoftmaxKernel()(Q, K)         # gamma = 1/sqrt(2)
    >>> A.shape, bool(np.allclose(A.sum(axis=1), 1.0))
    ((2, 3), True)
    """

    name = "softmax"
    is_symmetric = False
    is_psd = False
    row_normalized = True

    def _scale(self, n_features: int) -> float:
        self._check_params()
        return 1.0 / math.sqrt(max(n_features, 1)) if self.gamma is None else float(self.gamma)

    def _log_raw(self, X, Z, **kw) -> np.ndarray:
        """gamma⟨x, z⟩, the log of the unnormalised kernel (overflow checked)."""
        g = self._scale(X.shape[1])
        with np.errstate(over="ignore", invalid="ignore"):
            L = _dense(X @ Z.T)
            L *= L.dtype.type(g)
        if _may_overflow(X, Z, L.dtype, gamma=g):
            check_overflow(L, self.name, "gamma⟨q, k⟩")
        return L

    def _raw(self, X, Z) -> np.ndarray:
        """exp(gamma⟨x, z⟩), unnormalised (an ``OverflowError`` when it leaves the range)."""
        K = self._log_raw(X, Z)
        with np.errstate(over="ignore"):
            np.exp(K, out=K)
        check_overflow(K, self.name, "exp(gamma⟨q, k⟩) (use the row-normalised kernel)")
        return K


class CallableKernel(Kernel):
    """A kernel given by a user function ``func(X, Z) -> (n, m) array``.

    The output is checked for shape and finiteness (and converted to float64 unless it is
    float32). Flags default to the safe values: an **unflagged callable is treated as
    asymmetric and not PSD** (κ(x, z) ≠ κ(z, x) is assumed, so no symmetric eigensolver,
    Cholesky factorisation or symmetrisation is used on it); set ``is_symmetric=True`` /
    ``is_psd=True`` (through ``kernel_params`` of an estimator) when the function is.

    ``func`` is called as ``func(X, Z)`` with no keyword arguments: unlike scikit-learn, which
    passes ``kernel_params`` to a callable kernel, asymkern takes the parameters of the
    function bound in it (a closure or ``functools.partial``); ``kernel_params`` of a callable
    are the flags below, and a width given as ``gamma`` (estimator parameter or
    ``kernel_params`` key) raises ``ValueError`` (:func:`~asymkern.kernels.get_kernel`).

    Parameters
    ----------
    func : callable
        ``func(X, Z)`` returning the (n, m) matrix [κ(x_i, z_j)] (dense or sparse).
    is_symmetric : bool, default False
        Whether κ(x, z) = κ(z, x); only then may solvers use symmetric routines.
    is_psd : bool, default False
        Whether the kernel is positive semi-definite.
    accepts_sparse : bool, default False
        Whether ``func`` accepts sparse (CSR) input.
    checks_features : bool, default True
        Whether X and Z must have the same number of columns.

    Raises
    ------
    TypeError
        If ``func`` is not callable or a flag is not a bool.
    ValueError
        If ``func`` returns an array of the wrong shape or with NaN or infinity.

    See Also
    --------
    get_kernel : Wraps a callable in this class.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import CallableKernel
    >>> k = CallableKernel(lambda X, Z: np.exp(X @ Z.T))
    >>> X = np.array([[0.0], [1.0]])
    >>> k(X).shape, k.is_symmetric
    ((2, 2), False)
    >>> import functools
    >>> def scaled_dot(X, Z, gamma):
    ...     return np.exp(gamma * X @ Z.T)
    >>> CallableKernel(functools.partial(scaled_dot, gamma=0.5))(X).round(3).tolist()
    [[1.0, 1.0], [1.0, 1.649]]
    """

    name = "callable"

    def __init__(
        self,
        func,
        is_symmetric: bool = False,
        is_psd: bool = False,
        accepts_sparse: bool = False,
        checks_features: bool = True,
    ):
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
        return evaluate_callable(self.func, X, Z, name="kernel callable")
