"""Accuracy of approximate singular vectors: the metric η of paper 000 (§4.4 and App. C.2).

For the exact rank-r SVD G = U Λ Vᵀ (singular values λ_1 ≥ … ≥ λ_r) and an approximation
(Ũ, Ṽ) (columns need not be normalised, signs are irrelevant)

    η = (1/r) Σ_i w_i (1 − |u_iᵀ ũ_i| / ‖ũ_i‖) + (1/r) Σ_i w_i (1 − |v_iᵀ ṽ_i| / ‖ṽ_i‖).

*As printed* (``weights='paper'``) the weights are the singular values themselves, w_i = λ_i,
not normalised. η then depends on the scale of G: for a row-stochastic SNE kernel matrix
λ_1 ≈ 1 and the other λ_i are far below 1, so the later components barely count. The *strict*
variant (``weights='uniform'``, :func:`eta_strict`) uses w_i = 1, so every component counts
equally and η ∈ [0, 2]. ``weights='normalized'`` (w_i = r·λ_i / Σλ) is scale-free.

A component missing from the approximation (fewer columns than r, e.g. dropped for a zero
singular value) or an all-zero column counts as a complete miss: 1 − 0 = 1.
"""

from __future__ import annotations

import numpy as np

WEIGHTS = ("paper", "uniform", "normalized")


def _cosines(X: np.ndarray, Y: np.ndarray, r: int) -> np.ndarray:
    """|x_iᵀ y_i| / (‖x_i‖ ‖y_i‖) for the first r columns; 0 for missing or zero columns."""
    out = np.zeros(r)
    k = min(r, Y.shape[1])
    if k == 0:
        return out
    Xk = np.asarray(X[:, :k], dtype=np.float64)
    Yk = np.asarray(Y[:, :k], dtype=np.float64)
    dots = np.abs(np.einsum("ij,ij->j", Xk, Yk))
    nx = np.linalg.norm(Xk, axis=0)
    ny = np.linalg.norm(Yk, axis=0)
    denom = nx * ny
    ok = denom > 0
    out[:k][ok] = np.minimum(1.0, dots[ok] / denom[ok])
    return out


def eta_components(U, V, U_approx, V_approx) -> tuple[np.ndarray, np.ndarray]:
    """Per-component errors (1 − |cos ∠(u_i, ũ_i)|, 1 − |cos ∠(v_i, ṽ_i)|), each of length r."""
    U = np.asarray(U)
    V = np.asarray(V)
    U_approx = np.asarray(U_approx)
    V_approx = np.asarray(V_approx)
    if U.ndim != 2 or V.ndim != 2 or U_approx.ndim != 2 or V_approx.ndim != 2:
        raise ValueError("U, V, U_approx and V_approx must be 2-D (vectors are columns)")
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
    if isinstance(weights, str):
        if weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS} or an array, got {weights!r}")
        if weights == "uniform":
            return np.ones(r)
        if singular_values is None:
            raise ValueError(f"weights={weights!r} needs the exact singular values")
        lam = np.asarray(singular_values, dtype=np.float64).ravel()
        if lam.shape[0] < r:
            raise ValueError(f"singular_values has {lam.shape[0]} entries; expected at least {r}")
        lam = lam[:r]
        if weights == "paper":
            return lam
        total = lam.sum()
        return r * lam / total if total > 0 else np.ones(r)
    w = np.asarray(weights, dtype=np.float64).ravel()
    if w.shape[0] != r:
        raise ValueError(f"weights has {w.shape[0]} entries; expected r = {r}")
    return w


def eta(U, V, U_approx, V_approx, singular_values=None, weights="paper") -> float:
    """Accuracy η of (U_approx, V_approx) against the exact top-r singular vectors (U, V).

    Paper 000 §4.4 / App. C.2. ``weights``: ``'paper'`` (w_i = λ_i, as printed; needs
    ``singular_values``), ``'uniform'`` (w_i = 1, the strict variant), ``'normalized'``
    (w_i = r λ_i / Σ λ) or an array of r weights. Lower is better; 0 means every direction is
    exact.
    """
    eu, ev = eta_components(U, V, U_approx, V_approx)
    w = _weights(singular_values, eu.shape[0], weights)
    r = eu.shape[0]
    return float((w @ eu + w @ ev) / r)


def eta_strict(U, V, U_approx, V_approx) -> float:
    """η with equal weights w_i = 1 (every component counts; η ∈ [0, 2])."""
    return eta(U, V, U_approx, V_approx, weights="uniform")


__all__ = ["WEIGHTS", "eta", "eta_components", "eta_strict"]
