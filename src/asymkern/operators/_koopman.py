"""Reduced-rank (PCR, RRR) kernel Koopman estimators, multi-step forecasts and modes.

Every Koopman estimator here has the form (Kostic et al. 2022, §3; dual form)

    (K̂ f)(x) = e(x) U Vᵀ d(f),    K̂ᵏ f (x) = e(x) U Mᵏ⁻¹ Vᵀ d(f),    M = Vᵀ C U  (r×r),

where e(x) is the evaluation basis — e(x) = [k(x, x_i)]_i (exact estimators, n columns) or the
whitened landmark features e(x) = k(x, L) T (Nyström, p columns) — d(f) the data of f at the
shifted samples — f(Y) (exact) or Fᵀ f(Y) with F = k(X, L) T (Nyström) — and C maps basis
coefficients to data: C = k(Y, X) (exact) or FᵀF⁺ (Nyström, F⁺ = k(Y, L) T).

* full rank (kernel ridge regression): U Vᵀ = (G + nεI)⁻¹ (exact) or (FᵀF + nεI)⁻¹ (Nyström);
* PCR (principal-component regression): U Vᵀ = Q_r (Λ_r + nεI)⁻¹ Q_rᵀ with (Λ_r, Q_r) the top r
  eigenpairs of G (exact) or of FᵀF (Nyström);
* RRR (reduced-rank regression): the rank-r minimiser of the regularised empirical risk
  ‖F⁺ − F W‖² + nε‖W‖² (Kostic et al. 2022, Thm. 3; Meanti et al. 2023 for the Nyström
  version). Exact: U = the r leading solutions of the generalised eigenproblem
  (1/n) H G u = σ² (G + nεI) u (H = k(Y, Y)), normalised by uᵀ G (G + nεI) u = n, V = G U / n.
  Nyström: U = V = A_ε⁻¹ C V_r Σ_r⁻¹ with A_ε = FᵀF + nεI and (Σ_r², V_r) the top eigenpairs of
  Cᵀ A_ε⁻¹ C.

ε = 0 (``alpha=None``): every inverse is the pseudo-inverse of the PSD matrix (eigenvalues at or
below n·eps·λ_max dropped, :func:`~asymkern.operators._numerics.pinv_spectrum`, which warns when
the kept spectrum is ill-conditioned); exact RRR then uses the symmetric form of
:func:`_rrr_dual_dense` restricted to range(G) (ARPACK's Cholesky solves need ε > 0).

With M = Z Λ Z⁻¹ the eigenfunctions are ψ_i = e(·) U z_i, and for an observable g with data
d(g), K̂ᵏ g = Σ_i λ_iᵏ ψ_i m_i with the Koopman modes m_i = (Λ⁻¹ Z⁻¹ Vᵀ d(g))_i.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigs, eigsh

from .._backend import NUMPY, DenseMatrix, ops_of
from ._numerics import (
    GramSolver,
    cholesky_shifted,
    pinv_spectrum,
    sym_eigh,
    symmetrize_,
    value_phases,
)

ESTIMATORS = ("full", "pcr", "rrr")
_EPS = float(np.finfo(np.float64).eps)


def _v0(n: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(n)


def _above_rounding(v):
    """The entries of v (a vector of any executor) above the rounding level 1000·eps·max(v)."""
    vmax = float(v.max()) if v.shape[0] else 0.0
    return v > 1000.0 * _EPS * max(vmax, 1e-300)


def top_eigh(G, r: int, dense_below: int = 200):
    """Top-r eigenpairs of the symmetric PSD matrix G, descending (ARPACK for large n).

    G is a numpy array or an executor's array (the eigenpairs are then on its device; ARPACK
    runs on the host with its products G·v on the device).
    """
    ops = ops_of(G)
    n = G.shape[0]
    if not (n <= dense_below or r >= n - 1):
        op = G if ops is NUMPY else DenseMatrix(G).aslinearoperator()
        try:
            lam, Q = eigsh(op, k=r, which="LA", v0=_v0(n), tol=0.0,
                           ncv=min(n, max(2 * r + 1, 20)))
        except ArpackNoConvergence:  # rare: fall back to the dense reference
            return ops.eigh_top(G, r)
        order = np.argsort(-lam, kind="stable")
        return ops.from_host(lam[order], G), ops.from_host(Q[:, order], G)
    return ops.eigh_top(G, r)


def pcr_dual(G, r: int, shift: float):
    """Exact PCR: U = Q_r (Λ_r + nε)⁻¹, V = Q_r (U Vᵀ = Q_r (Λ_r + nεI)⁻¹ Q_rᵀ); directions
    with λ ≤ λ₁·n·eps are dropped. G: a numpy array or an executor's array."""
    lam, Q = top_eigh(G, r)
    if shift == 0:  # alpha=None: the pseudo-inverse of the top-r part (cutoff, warning)
        lam, Q, _ = pinv_spectrum(lam, Q, G.shape[0], "the Gram matrix G_X (top-r part)")
    elif lam.shape[0] and float(lam[0]) > 0:
        keep = lam > float(lam[0]) * G.shape[0] * _EPS
        lam, Q = lam[keep], Q[:, keep]
    else:
        lam, Q = lam[:0], Q[:, :0]
    return Q / (lam + shift), Q


def rrr_dual(G, H, r: int, shift: float, dense_below: int = 200):
    """Exact RRR (Kostic et al. 2022): U from (1/n) H G u = σ² (G + nεI) u, V = G U / n.

    For n > ``dense_below`` the generalised problem is solved by ARPACK as the ordinary
    eigenproblem of the operator v ↦ (G + nεI)⁻¹ H G v / n (a Cholesky solve per product, never
    an n×n product of matrices; on G's device for an executor's arrays); its eigenvalues σ² are
    real and ≥ 0 (it is similar to a symmetric PSD matrix). Small problems (and an ARPACK
    failure) use the symmetric form of :func:`_rrr_dual_dense`, whose eigenvalues are well
    conditioned.
    """
    ops = ops_of(G)
    n = G.shape[0]
    if n <= dense_below or r >= n - 2 or shift == 0:  # alpha=None: G may be singular
        return _rrr_dual_dense(G, H, r, shift)
    # (a holder: the Cholesky factor is freed before the dense solve's n×n arrays)
    factor = {"cho": cholesky_shifted(G, shift, "G_X")}

    def matvec(v):
        return ops.to_host(ops.cho_solve(factor["cho"], H @ (G @ ops.from_host(v, G))) / n)

    op = LinearOperator((n, n), dtype=np.float64, matvec=matvec)
    try:
        s2, W = eigs(op, k=r, which="LR", v0=_v0(n), tol=0.0, ncv=min(n, max(2 * r + 1, 20)))
    except ArpackNoConvergence:  # rare: fall back to the dense reference
        factor.clear()
        return _rrr_dual_dense(G, H, r, shift)
    factor.clear()
    order = np.argsort(-s2.real, kind="stable")[:r]
    s2, W = s2.real[order], ops.from_host(W[:, order].real, G)
    GW = G @ W
    norms2 = ops.to_host(ops.col_dots(GW, GW + shift * W)) / n
    keep = _above_rounding(norms2) & (s2 > 0)
    U = W[:, ops.index(np.flatnonzero(keep), G)] / ops.from_host(np.sqrt(norms2[keep]), G)
    return U, G @ U / n, ops.from_host(s2[keep], G)


def _rrr_dual_dense(G, H, r: int, shift: float):
    """Exact RRR through the symmetric form of (1/n) H G u = σ² (G + nεI) u (dense, small n).

    The generalised eigenproblem is that of Kostic et al. (2022), Thm. 3 (the dual form of the
    rank-r minimiser of the Tikhonov-regularised empirical risk; Mollenhauer et al., 2020,
    §4.4, for the operators). With G = Q Λ Qᵀ and D = diag(√(λ/(λ + nε))) ≤ I, the nonzero σ²
    are the eigenvalues of the symmetric PSD T = D Qᵀ H Q D / n. Unlike the non-normal
    (G + nεI)⁻¹HG/n, whose eigenvalues amplify rounding errors by up to 1/(nε) when G is
    numerically rank-deficient, T has perfectly conditioned eigenvalues.

    ε > 0 (``shift`` = nε > 0): every eigen-direction of G is kept, its eigenvalue clipped at 0
    (rounding can make it slightly negative), so D is defined without a division by λ. For
    T z = σ² z, G u = √n Q D z; u itself then follows from the eigen-equation,
    u = (G + nεI)⁻¹ H (G u) / (nσ²) (with (G + nεI)⁻¹ = Q diag(1/(λ + nε)) Qᵀ, λ clipped:
    divisions by λ + nε ≥ nε only), and is normalised by uᵀ G (G + nεI) u = n. The exact u has
    components along the eigen-directions of G whose λ is at the rounding level: dropping
    them (or forming u = √n Q diag(1/√(λ(λ + nε))) z, which divides by λ) loses the accuracy
    of the estimator at small ε.

    ε = 0 (``shift`` = 0, ``alpha=None``): the problem restricted to range(G): the eigenvalues
    at or below n·eps·λ_max are dropped (pseudo-inverse cutoff, warning,
    :func:`~asymkern.operators._numerics.pinv_spectrum`) and u = √n Q₊ Λ₊⁻¹ D₊ z with D₊ = I.

    Parameters
    ----------
    G, H : array (n, n)
        G = k(X, X) and H = k(Y, Y): numpy arrays or an executor's arrays (never written to).
    r : int
        The rank.
    shift : float
        nε ≥ 0.

    Returns
    -------
    U, V : arrays (n, r')
        The factors (V = G U / n) on G's executor, r' ≤ r (numerically zero σ² dropped).
    s2 : array (r',)
        The σ², descending.

    Raises
    ------
    ValueError
        If G + nεI is not positive definite (ε > 0).
    """
    ops = ops_of(G)
    n = G.shape[0]
    # at most four n×n arrays besides G and H at once: Q, QᵀHQ and, in turn, QᵀH or T
    lam, Q = sym_eigh(0.5 * (G + G.T))
    if lam.shape[0] == 0 or float(lam[-1]) <= 0:
        return ops.zeros((n, 0), G), ops.zeros((n, 0), G), ops.zeros((0,), G)
    if shift == 0:  # alpha=None: G's range only (pseudo-inverse cutoff, warning)
        lam, Q, _ = pinv_spectrum(lam, Q, n, "the Gram matrix G_X")
        keep = lam > float(lam.max()) * n * _EPS
        if not bool(keep.all()):
            lam, Q = lam[keep], Q[:, keep]
    elif float(lam[0]) + shift <= 0:  # where the Cholesky factorisation of G + nεI would fail
        raise ValueError(f"G_X + nεI is not positive definite (nε = {shift:.3g}, smallest "
                         f"eigenvalue of G_X {float(lam[0]):.3g}); the kernel must be PSD and "
                         "alpha large enough")
    else:  # every direction kept: rounding-level negative eigenvalues are zero
        lam = lam * (lam > 0)
    d = ops.sqrt(lam / (lam + shift))
    QtHQ = Q.T @ H @ Q
    T = d[:, None] * QtHQ * d / n
    s2, Z = sym_eigh(symmetrize_(T))  # (T + Tᵀ)/2 in T itself, its eigenvectors beside it
    del T
    order = ops.argsort_desc(s2)[:r]
    s2, Z = s2[order], Z[:, order]
    keep = _above_rounding(s2)
    s2, Z = s2[keep], Z[:, keep]
    if shift == 0:
        U = float(np.sqrt(n)) * (Q @ (Z / lam[:, None]))
        return U, G @ U / n, s2
    # Qᵀ G u = √n D z, then Qᵀ u = (Λ + nεI)⁻¹ Qᵀ H G u / (nσ²) with Qᵀ H G u = QᵀHQ Qᵀ G u
    QtU = (QtHQ @ (float(np.sqrt(n)) * (d[:, None] * Z))) / (lam + shift)[:, None] / (n * s2)
    U = Q @ QtU
    GU = G @ U
    norms2 = ops.col_dots(GU, GU + shift * U) / n
    U = U / ops.sqrt(norms2)
    return U, G @ U / n, s2


def pcr_primal(A: np.ndarray, r: int, shift: float):
    """Nyström PCR in whitened landmark features: U = Q_r (Λ_r + nε)⁻¹, V = Q_r (A = FᵀF)."""
    lam, Q = top_eigh(0.5 * (A + A.T), r, dense_below=10**9)
    if shift == 0:  # alpha=None: the pseudo-inverse of the top-r part
        lam, Q, _ = pinv_spectrum(lam, Q, A.shape[0], "the landmark Gram matrix FᵀF (top-r part)")
    return Q / (lam + shift), Q


def rrr_primal(A: np.ndarray, C: np.ndarray, r: int, shift: float):
    """Nyström RRR (Meanti et al. 2023): U = V = A_ε⁻¹ C V_r Σ_r⁻¹ (A_ε = FᵀF + nεI)."""
    # A_ε⁻¹ C; for ε = 0 (alpha=None) A⁺ C, the unregularised rank-r minimiser in range(A)
    AiC = GramSolver(0.5 * (A + A.T), shift, "FᵀF (landmark features)").solve(C)
    S = C.T @ AiC
    s2, Vr = top_eigh(0.5 * (S + S.T), r, dense_below=10**9)
    keep = _above_rounding(s2)
    B = AiC @ Vr[:, keep] / np.sqrt(s2[keep])
    return B, B, s2[keep]


def reduced_eig(M: np.ndarray, rtol: float = 1e-12):
    """All eigenpairs of the r×r matrix M sorted by decreasing ``|λ|`` (real when M's are), with
    Z⁻¹ for the modes. Eigenvalues ``|λ|`` ≤ rtol·``|λ_1|`` are dropped (no eigenfunction)."""
    lam, Z = sla.eig(M, check_finite=False)
    order = np.argsort(-np.abs(lam), kind="stable")
    lam, Z = lam[order], Z[:, order]
    scale = max(float(np.abs(lam[0])) if lam.size else 0.0, 1e-300)
    if np.all(np.abs(lam.imag) <= 1e-10 * scale) and np.all(np.abs(Z.imag) <= 1e-10):
        lam, Z = lam.real, Z.real
    elif np.all(np.abs(lam.imag) <= 1e-10 * scale):
        lam = lam.real
    try:
        Zinv = np.linalg.inv(Z)
    except np.linalg.LinAlgError:
        Zinv = None
    if Zinv is None or not np.all(np.isfinite(Zinv)):
        raise ValueError(
            "the reduced transfer operator is defective (its eigenvectors are linearly "
            "dependent, so it has no eigendecomposition), e.g. numerically nilpotent for a "
            "kernel that is numerically the identity on these samples (no two alike); widen "
            "the kernel (a smaller gamma), rescale X or lower rank")
    keep = np.abs(lam) > rtol * scale
    return lam[keep], Z[:, keep], Zinv[keep]


def fix_phases(values: np.ndarray, Z: np.ndarray, Zinv: np.ndarray | None = None) -> tuple:
    """The arbitrary phase of each eigenvector z_i fixed on the function it gives: the rule of
    every operator estimator (:func:`~asymkern.operators._numerics.value_phases`) on the
    function's values at the fit's points, ``values @ z_i``: its largest-modulus value (the
    lowest index on a tie) made real and positive.

    LAPACK leaves each eigenvector's sign (complex phase) free, and it changed with the number
    of BLAS threads, the Dask chunking and the executor; the basis (U or V of the reduced-rank
    estimators, the whitened landmark features) has free signs of its own, and the
    coefficients of a function are not unique where the Gram matrix is singular. The values of
    the function depend on none of these. z_i is scaled by that phase and the i-th row of Z⁻¹
    by its inverse (Z Z⁻¹ = I still holds; ``|phase|`` = 1 leaves the RKHS norms unchanged).

    Parameters
    ----------
    values : ndarray of shape (n, r)
        The values of the basis functions at the fit's points (host): G U for exact
        eigenfunctions k(·, X) U z on the samples X (G their Gram matrix), K_LL T U for the
        landmark ones k(·, L) T U z (:func:`landmark_values`).
    Z : ndarray of shape (r, k)
        The eigenvectors (columns), real or complex.
    Zinv : ndarray of shape (k, r), optional
        The rows of Z⁻¹ that go with them.

    Returns
    -------
    Z, Zinv : ndarray
        New arrays (``Zinv`` None when not given).
    """
    c = value_phases(values @ Z)
    return Z * c, None if Zinv is None else Zinv / c[:, None]


def landmark_values(T: np.ndarray) -> np.ndarray:
    """K_LL T (m×p), the values at the landmarks L of the whitened landmark features
    k(·, L) T, from the whitening T = Q Λ^{-1/2} alone: K_LL T = Q Λ^{1/2} = T Λ with
    λ_j = 1/‖t_j‖² (Q's columns orthonormal). Invariant to T's free column signs (and to any
    rotation within an eigenspace of K_LL), so the sign rule on k(·, L) T w reads the same
    values whatever basis T the eigensolver returned."""
    return T / np.einsum("ij,ij->j", T, T)


def forecast_coef(c, n_steps: int, U, M, solve, cross):
    """Basis coefficients of K̂ⁿ g from the data coefficients c = Vᵀ d(g), on c's executor.

    ``U`` None: the exact full-rank estimator (U = (G + nεI)⁻¹, V = I): a = (G + nεI)⁻¹ c, then
    a ← (G + nεI)⁻¹ k(Y, X) a, with ``solve`` applying (G + nεI)⁻¹ and ``cross()`` returning
    k(Y, X) (asked for only when n_steps > 1). Otherwise c ← M c (n_steps − 1 times), then U c.
    """
    if U is None:
        a = solve(c)
        if n_steps > 1:
            C = cross()
            for _ in range(n_steps - 1):
                a = solve(C @ a)
        return a
    for _ in range(n_steps - 1):
        c = M @ c
    return U @ c


def rkhs_norms(Z: np.ndarray, P, K=None, KP=None) -> np.ndarray:
    """‖P z_i‖ in the RKHS of the Gram matrix K for the columns z_i of the host matrix Z:
    √Re diag(Zᴴ (Pᵀ K P) Z), the r×r Pᵀ K P formed on P's executor (P: n×r); ``KP``: the
    product K P when the caller has formed it (K is then not needed)."""
    ops = ops_of(P)
    PKP = ops.to_host(P.T @ (K @ P if KP is None else KP))
    S = np.conj(Z).T @ (PKP @ Z)
    return np.sqrt(np.maximum(np.real(np.diag(S)), 1e-300))


@dataclass(frozen=True)
class ReducedKoopman:
    """The exact reduced-rank Koopman model (K̂ f)(x) = k(x, X) U Vᵀ f(Y) of
    :func:`reduced_koopman`: executor arrays for the forecasts, host arrays for the spectrum.

    Attributes
    ----------
    M : array (r, r)
        The Koopman matrix Vᵀ k(Y, X) U (executor).
    VtY : array (r, d)
        The data coefficients Vᵀ Y of the state (executor).
    coef : array (n, d)
        The one-step coefficients U Vᵀ Y (executor).
    obs : array (r, p) or None
        Vᵀ g(Y) of the observables (executor).
    lam : ndarray (q,)
        Eigenvalues of M by decreasing modulus (host; numerically zero ones dropped).
    Z, Zinv : ndarray
        Eigenvectors (r, q) and the rows (q, r) of Z⁻¹ kept (host).
    norms : ndarray (q,)
        RKHS norms of the eigenfunctions k(·, X) U z_i (host).
    values : ndarray (n, r)
        G U: the values at the samples X of the basis functions k(·, X) U (host), which the
        sign rule reads (:func:`fix_phases`).
    """

    M: Any
    VtY: Any
    coef: Any
    obs: Any
    lam: np.ndarray
    Z: np.ndarray
    Zinv: np.ndarray
    norms: np.ndarray
    values: np.ndarray


def reduced_koopman(U, V, G, Cyx, Y, obs=None) -> ReducedKoopman:
    """The exact reduced-rank Koopman model from its factors U, V (n×r), the Gram matrices
    G = k(X, X) and Cyx = k(Y, X), the shifted samples Y and the observables' values g(Y), all
    arrays of one executor (numpy, or tensors on their device); the r×r eigenproblem runs on
    the host."""
    ops = ops_of(G)
    M = V.T @ (Cyx @ U)
    VtY = V.T @ Y
    lam, Z, Zinv = reduced_eig(ops.to_host(M))
    GU = G @ U  # the basis functions' values at X (the RKHS norms' product too)
    return ReducedKoopman(M=M, VtY=VtY, coef=U @ VtY, obs=None if obs is None else V.T @ obs,
                          lam=lam, Z=Z, Zinv=Zinv, norms=rkhs_norms(Z, U, KP=GU),
                          values=ops.to_host(GU))
