"""Accuracy of approximate singular vectors: the metric η of Tao et al. (2024) (§4.4 and App. C.2).

For the exact rank-r SVD G = U Λ Vᵀ (singular values λ_1 ≥ … ≥ λ_r) and an approximation
(Ũ, Ṽ) (columns need not be normalised, signs are irrelevant)

    η = (1/r) Σ_i w_i (1 − ``|u_iᵀ ũ_i|`` / ‖ũ_i‖) + (1/r) Σ_i w_i (1 − ``|v_iᵀ ṽ_i|`` / ‖ṽ_i‖).

*As printed* (``weights='paper'``) the weights are the singular values themselves, w_i = λ_i,
not normalised. η then depends on the scale of G: for a row-stochastic SNE kernel matrix
λ_1 ≈ 1 and the other λ_i are far below 1, so the later components barely count. The *strict*
variant (``weights='uniform'``, :func:`eta_strict`) uses w_i = 1, so every component counts
equally and η ∈ [0, 2]. ``weights='normalized'`` (w_i = r·λ_i / Σλ) is scale-free.

A component missing from the approximation (fewer columns than r, e.g. dropped for a zero
singular value) or an all-zero column counts as a complete miss: 1 − 0 = 1. The cosines do not
depend on the length of the vectors at any scale: a column whose entries are so large or small
that its norm or a product of norms would over- or underflow (~1e160, ~1e-200) is multiplied
by an exact power of two first (columns of ordinary size are used as they are).

Inputs are dense array-likes (nested lists are accepted and converted); they must be 2-D, real
and finite, otherwise a ``ValueError`` (``TypeError`` for non-numeric or sparse input) names the
argument.
"""

from __future__ import annotations

import numpy as np

from ._svd_core import check_matrix

WEIGHTS = ("paper", "uniform", "normalized")


def _unit_range(A: np.ndarray) -> np.ndarray:
    """The columns of A, each multiplied by an exact power of two when its largest entry is so
    large or small that the squares, norms or the product of two norms could over- or
    underflow (then into [0.5, 1)); columns of ordinary size are left untouched (bitwise)."""
    from ..kernels.base import _needs_scaling

    if A.shape[0] == 0:
        return A
    big = np.max(np.abs(A), axis=0)
    bad = np.array([_needs_scaling(float(b), np.float64) for b in big], dtype=bool)
    if not bad.any():
        return A
    A = A.copy()  # never scale the caller's array
    A[:, bad] = np.ldexp(A[:, bad], -np.frexp(big[bad])[1])
    return A


def _cosines(X: np.ndarray, Y: np.ndarray, r: int) -> np.ndarray:
    """``|x_iᵀ y_i|`` / (‖x_i‖ ‖y_i‖) for the first r columns; 0 for missing or zero columns.

    The cosine does not depend on the length of either vector, so each column is first brought
    to a safe range by a power of two (:func:`_unit_range`): the same value at every scale,
    where ‖x‖ ‖y‖ would otherwise underflow (vectors ~1e-200) or overflow (~1e160).
    """
    out = np.zeros(r)
    k = min(r, Y.shape[1])
    if k == 0:
        return out
    Xk = _unit_range(np.asarray(X[:, :k], dtype=np.float64))
    Yk = _unit_range(np.asarray(Y[:, :k], dtype=np.float64))
    dots = np.abs(np.einsum("ij,ij->j", Xk, Yk))
    nx = np.linalg.norm(Xk, axis=0)
    ny = np.linalg.norm(Yk, axis=0)
    denom = nx * ny
    ok = denom > 0
    out[:k][ok] = np.minimum(1.0, dots[ok] / denom[ok])
    return out


def _vectors(A, name: str) -> np.ndarray:
    """A dense, real, finite 2-D array of column vectors."""
    import scipy.sparse as sp

    from .._dispatch import host_copy

    if sp.issparse(A):
        raise TypeError(f"{name} must be a dense array of column vectors, got a sparse matrix")
    A = host_copy(A, name)  # a tensor's values on the host (the metrics are host numbers)
    A, kind = check_matrix(A, f"{name} (columns are vectors)", allow_operator=False)
    if kind != "dense":
        raise TypeError(f"{name} must be a dense array of column vectors, got {type(A).__name__}")
    return A


def _real_vector(a, name: str) -> np.ndarray:
    from .._dispatch import host_copy

    a = np.asarray(host_copy(a, name))
    if np.iscomplexobj(a):
        raise ValueError(f"{name} is complex-valued; expected real numbers")
    try:
        a = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric: {exc}") from exc
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array with {a.ndim} dimensions")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    return a


def eta_components(U, V, U_approx, V_approx) -> tuple[np.ndarray, np.ndarray]:
    """Per-component errors (1 − ``|cos ∠(u_i, ũ_i)|``, 1 − ``|cos ∠(v_i, ṽ_i)|``), length r.

    Columns need not be normalised and signs are irrelevant; a missing or all-zero column of
    the approximation counts as a complete miss (error 1).

    Parameters
    ----------
    U : array-like of shape (n, r)
        Exact left singular vectors (columns).
    V : array-like of shape (m, r)
        Exact right singular vectors (columns).
    U_approx : array-like of shape (n, k)
        Approximate left vectors (k < r: the missing ones count 1).
    V_approx : array-like of shape (m, k)
        Approximate right vectors.

    Returns
    -------
    err_u, err_v : ndarray of shape (r,)
        The errors of the left and right vectors, in [0, 1].

    Raises
    ------
    ValueError
        If the arrays are not 2-D, real and finite, U or V is empty (no component to
        measure), or their shapes do not match.
    TypeError
        If an input is sparse or not numeric.

    See Also
    --------
    eta : The weighted mean of these errors.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, §4.4 and App. C.2.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg.metrics import eta_components
    >>> I = np.eye(3)[:, :2]
    >>> eu, ev = eta_components(I, I, I, -2.0 * I)     # scale and sign do not matter
    >>> eu.tolist(), ev.tolist()
    ([0.0, 0.0], [0.0, 0.0])
    """
    U = _vectors(U, "U")
    V = _vectors(V, "V")
    for name, A in (("U", U), ("V", V)):
        if A.size == 0:  # no component to measure: the mean over r = 0 components is 0/0
            raise ValueError(f"{name} has shape {A.shape}; expected at least one row and one "
                             "column (the exact singular vectors)")
    U_approx = _vectors(U_approx, "U_approx")
    V_approx = _vectors(V_approx, "V_approx")
    if U.shape[1] != V.shape[1]:
        raise ValueError(f"U has {U.shape[1]} columns but V has {V.shape[1]}; expected equal")
    if U_approx.shape[0] != U.shape[0] or V_approx.shape[0] != V.shape[0]:
        raise ValueError(
            f"U_approx/V_approx have {U_approx.shape[0]}/{V_approx.shape[0]} rows; expected "
            f"{U.shape[0]}/{V.shape[0]} (the rows of the reference U/V)"
        )
    r = U.shape[1]
    return 1.0 - _cosines(U, U_approx, r), 1.0 - _cosines(V, V_approx, r)


def _weights(singular_values, r: int, weights) -> np.ndarray:
    if weights is None:
        raise TypeError(f"weights must be one of {WEIGHTS} or an array of r weights, got None")
    if isinstance(weights, str):
        if weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS} or an array, got {weights!r}")
        if weights == "uniform":
            return np.ones(r)
        if singular_values is None:
            raise ValueError(f"weights={weights!r} needs the exact singular values")
        lam = _real_vector(singular_values, "singular_values")
        if lam.shape[0] < r:
            raise ValueError(f"singular_values has {lam.shape[0]} entries; expected at least {r}")
        lam = lam[:r]
        if weights == "paper":
            return lam
        total = lam.sum()
        return r * lam / total if total > 0 else np.ones(r)
    w = _real_vector(weights, "weights")
    if np.any(w < 0):
        raise ValueError("weights must be >= 0")
    if w.shape[0] != r:
        raise ValueError(f"weights has {w.shape[0]} entries; expected r = {r}")
    return w


def eta(U, V, U_approx, V_approx, singular_values=None, weights="paper") -> float:
    """Accuracy η of (U_approx, V_approx) against the exact top-r singular vectors (U, V).

    Tao et al. (2024) §4.4 / App. C.2. ``weights``: ``'paper'`` (w_i = λ_i, as printed; needs
    ``singular_values``), ``'uniform'`` (w_i = 1, the strict variant), ``'normalized'``
    (w_i = r λ_i / Σ λ) or an array of r weights. Lower is better; 0 means every direction is
    exact.

    η = (1/r) Σ_i w_i (1 − ``|u_iᵀ ũ_i|`` / ‖ũ_i‖) + (1/r) Σ_i w_i (1 − ``|v_iᵀ ṽ_i|`` / ‖ṽ_i‖)
    (Tao et al. (2024), App. C.2; the equation is unnumbered there).

    Parameters
    ----------
    U : array-like of shape (n, r)
        Exact left singular vectors (columns).
    V : array-like of shape (m, r)
        Exact right singular vectors (columns).
    U_approx : array-like of shape (n, k)
        Approximate left vectors (k < r: the missing ones count 1).
    V_approx : array-like of shape (m, k)
        Approximate right vectors.
    singular_values : array-like of shape (>= r,), optional
        The exact λ_i (needed by ``'paper'`` and ``'normalized'``).
    weights : {'paper', 'uniform', 'normalized'} or array-like of shape (r,), default 'paper'
        The weights w_i (an array: r non-negative weights).

    Returns
    -------
    float
        η ≥ 0 (η ∈ [0, 2] with uniform weights).

    Raises
    ------
    ValueError
        If the arrays are not real and finite, U or V is empty, shapes do not match,
        ``weights`` is unknown or negative, or ``singular_values`` is missing or too short.
    TypeError
        If ``weights`` is None or a scalar, or an input is sparse or not numeric.

    See Also
    --------
    eta_strict : η with uniform weights.
    asymmetric_nystrom : Its ``tol`` targets an estimate of η.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, §4.4 and App. C.2.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import eta
    >>> U = np.eye(4)[:, :2]
    >>> Ua = U.copy(); Ua[:, 1] = [0.0, 1.0, 1.0, 0.0]   # second vector at 45 degrees
    >>> round(eta(U, U, Ua, U, singular_values=[2.0, 1.0]), 4)
    0.1464
    >>> round(eta(U, U, Ua, U, weights="uniform"), 4)
    0.1464
    """
    if not isinstance(weights, str) and weights is not None and np.ndim(weights) == 0:
        raise TypeError(f"weights must be one of {WEIGHTS} or an array of r weights, got "
                        f"{weights!r}")
    eu, ev = eta_components(U, V, U_approx, V_approx)
    w = _weights(singular_values, eu.shape[0], weights)
    r = eu.shape[0]
    return float((w @ eu + w @ ev) / r)


def eta_strict(U, V, U_approx, V_approx) -> float:
    """η with equal weights w_i = 1 (every component counts; η ∈ [0, 2]).

    Parameters
    ----------
    U : array-like of shape (n, r)
        Exact left singular vectors (columns).
    V : array-like of shape (m, r)
        Exact right singular vectors (columns).
    U_approx : array-like of shape (n, k)
        Approximate left vectors.
    V_approx : array-like of shape (m, k)
        Approximate right vectors.

    Returns
    -------
    float
        η ∈ [0, 2].

    See Also
    --------
    eta : The general metric (``weights='uniform'`` here).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import eta_strict
    >>> U = np.eye(3)[:, :2]
    >>> eta_strict(U, U, U[:, :1], U[:, :1])      # second component missing: 2/2
    1.0
    """
    return eta(U, V, U_approx, V_approx, weights="uniform")


__all__ = ["WEIGHTS", "eta", "eta_components", "eta_strict"]
