"""The Nyström machines' per-mode algebra, written once for every executor.

Li, Liu and Zhang (Nyström kernel machines) train kernel ridge regression, kernel PCA and
support vector classification in the span of m landmarks: with K_nm = K(X, C) and the basis
A = V_s Σ_s⁻¹ of K_mm (:mod:`asymkern._shared.nystrom_basis`), the features are F = K_nm A and
the modes differ in what they solve:

* LLA / NCR (ridge): the centred, weighted Gram M = K_mn W K_nm − Σw·k̄k̄ᵀ and R = K_mn W y_c,
  then an s×s (LLA, eq. (12)) or m×m (NCR, eq. (11)) solve on the host;
* GSA: eq. (20)'s α̂ = G_c^†ŵ from the thin SVD of G_cᵀ = (K_nm − 1k̄ᵀ)A, reached through one
  Householder QR of [e, K_nm A] (:func:`ridge_gsa_householder`; ``gsa_solver='woodbury'``
  forms G_cᵀ);
* SPA: the dual problem (K̃_c + αI) a = y_c with K̃_c = G_cᵀG_c, by Woodbury;
* exact: the n×n kernel itself.

Each function here takes the executor's arrays (numpy arrays or torch tensors, on any
device) and runs through :class:`asymkern._backend.ArrayOps` and the array operators both
kinds share (``@``, ``.T``, ``.sum(0)``, broadcasting), so numpy and torch execute the same
formulas; the small m×m and s×s solves stay numpy on the host. K_nm is read through a
:class:`KnmSource` (``knm(a, e)``: its rows a:e in float64 on the executor; every executor's
fit gives the same :class:`~asymkern._shared.nystrom_basis.LandmarkRows`, which streams
kernel blocks of landmark points and holds a sketch's K S). The functions return frozen
dataclasses; only the estimators set fitted attributes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .._backend import ArrayOps, ops_of
from .._shared.nystrom_basis import (
    RidgeStats,
    check_finite,
    gsa_solve,
    pca_factors,
    rank_cut,
    ridge_lla_weights,
    ridge_ncr_coef,
    ridge_stats,
    row_step,
    row_sums,
)


class KnmSource(Protocol):
    """Rows of K_nm on an executor: ``shape`` (n, m), ``ops`` and ``knm(a, e)`` (rows a:e,
    float64, a fresh array of the executor that the caller may overwrite); optionally
    ``step(k)``, the rows per block with k right-hand sides (default :func:`row_step`), and
    ``Knm``, K_nm when formed (then read in one product). Every executor's fit gives a
    :class:`~asymkern._shared.nystrom_basis.LandmarkRows`."""

    shape: tuple[int, int]
    ops: ArrayOps

    def knm(self, a: int, e: int) -> Any: ...


def _step(src: KnmSource, k: int) -> int:
    """Rows per block of ``src`` with k right-hand sides."""
    step = getattr(src, "step", None)
    return step(k) if step is not None else row_step(src.shape[1], k)


def _like(src: KnmSource):
    """A float64 array of ``src``'s executor (the device of the results)."""
    return src.knm(0, 1)


def features(src: KnmSource, A: np.ndarray, shift: np.ndarray | None = None):
    """F = (K_nm − 1 shiftᵀ) A (n × s, float64, on the executor), over row blocks of K_nm.

    Parameters
    ----------
    src : KnmSource
    A : ndarray of shape (m, s)
        The basis coefficients (host).
    shift : ndarray of shape (m,), optional
        Subtracted from every row of K_nm (k̄ centres the features: G_cᵀ).
    """
    ops = src.ops
    n, m = src.shape
    like = _like(src)
    Ad = ops.from_host(A, like, np.float64)
    sd = None if shift is None else ops.from_host(shift, like, np.float64)
    Knm = getattr(src, "Knm", None)
    if Knm is not None:  # formed: one product
        return (Knm if sd is None else Knm - sd) @ Ad
    F = ops.empty((n, A.shape[1]), like, np.float64)
    step = _step(src, A.shape[1])
    for a in range(0, n, step):
        Kb = src.knm(a, a + step)
        F[a:a + step] = (Kb if sd is None else Kb - sd) @ Ad
    return F


# ============================================================================ ridge regression
@dataclass(frozen=True)
class RidgeSolution:
    """A fitted ridge machine.

    Attributes
    ----------
    coef : ndarray of shape (s, k) or None
        LLA's weights ŵ in the basis (``coef_`` is its transpose); LLA and GSA only.
    landmark_coef : ndarray of shape (m, k) or None
        β with f(z) = K(z, C) β + b (not for 'exact').
    dual : array of shape (n, k) or None
        α with f(z) = K(z, X) α + b (GSA, SPA, exact), on the executor.
    intercept : ndarray of shape (k,)
    """

    coef: np.ndarray | None
    landmark_coef: np.ndarray | None
    dual: Any
    intercept: np.ndarray


def ridge_nystrom(mode: str, src: KnmSource, A: np.ndarray, Yc: np.ndarray,
                  ybar: np.ndarray, sw: np.ndarray, weighted: bool, alpha: float,
                  center: bool, gsa_solver: str, dtype, w_given: np.ndarray | None = None
                  ) -> RidgeSolution:
    """Nyström kernel ridge regression in one of the modes 'lla', 'ncr', 'gsa', 'spa'.

    Li, Liu and Zhang (Nyström kernel machines), Algorithm 1: LLA solves the s×s system of
    eq. (12) from :func:`ridge_stats`, NCR the m×m one of eq. (11); GSA goes through
    :func:`ridge_gsa` (eq. (20)); SPA solves the dual (W½K̃_cW½ + αI) b = W½y_c,
    K̃_c = G_cᵀG_c, by Woodbury: its s×s system is LLA's, so G_c a = ŵ (LLA's weights) and
    a = W(y_c − G_cᵀŵ)/α (:func:`spa_dual`), β = A ŵ.

    Parameters
    ----------
    mode : {'lla', 'ncr', 'gsa', 'spa'}
    src : KnmSource
    A : ndarray
        The basis (m × s; the full one, s the rank of K_mm, for NCR).
    Yc, ybar : ndarray
        Centred targets (n × k) and their (weighted) mean (k,).
    sw : ndarray of shape (n,)
        Sample weights (ones when none were given).
    weighted : bool
        Whether ``sw`` are given weights (False: unit weights, skipped).
    alpha : float
    center : bool
        ``fit_intercept``.
    gsa_solver : {'eq20', 'woodbury'}
    dtype : numpy dtype
        The data's dtype (the pseudo-inverse cut-offs).
    w_given : ndarray of shape (s, k), optional
        Ridge weights of another solver (scikit-learn's ``Ridge``) for LLA / GSA.

    Returns
    -------
    RidgeSolution
    """
    w = dual = None
    kbar = None
    if mode in ("lla", "ncr", "spa"):
        own = mode != "lla" or w_given is None  # LLA's own s×s solve (NCR's, SPA's too)
        # they sum the features' Gram G_cWG_cᵀ = AᵀMA directly (ridge_lla_weights)
        st = ridge_stats(src, Yc, sw if weighted else None, center, basis=A if own else None)
        kbar = st.kbar
        if mode == "ncr":  # eq. (11) on the full basis (subspace_dim None)
            beta = ridge_ncr_coef(st.M, st.R, A, alpha)
        else:
            w = ridge_lla_weights(st.M, st.R, alpha) if own else w_given
            beta = A @ w
        if mode == "spa":
            dual = spa_dual(src, beta, kbar, Yc, sw if weighted else None, alpha)
            w = None
    elif mode == "gsa" and gsa_solver == "eq20":
        w, dual, kbar = ridge_gsa_householder(src, A, Yc, sw if weighted else None, alpha,
                                              center, dtype, w_given)
        beta = A @ w
    else:  # gsa, gsa_solver='woodbury': G_cᵀ (n × s) formed on the executor
        if center:
            kbar = _weighted_mean_knm(src, sw if weighted else None)
        w, dual = ridge_gsa(src.ops, features(src, A, kbar), Yc, sw if weighted else None,
                            alpha, dtype, gsa_solver, w_given)
        beta = A @ w
    intercept = ybar - (kbar @ beta if kbar is not None else 0.0)
    return RidgeSolution(w, beta, dual, intercept)


def _mean_parts(Kb, wb):
    return (Kb.sum(0) if wb is None else wb @ Kb,)


def _weighted_mean_knm(src: KnmSource, sw: np.ndarray | None) -> np.ndarray:
    """k̄ = Σᵢ wᵢ K(xᵢ, C) / Σw (host), over row blocks of K_nm."""
    (S,) = row_sums(src, _mean_parts, sw)
    return S / (float(src.shape[0]) if sw is None else float(sw.sum()))


def _thin_svd_cut(ops: ArrayOps, Gt, dtype):
    """The thin SVD Gᵀ = V Σ Uᵀ of Gt (n × s) truncated at σ > max(n, s)·eps·σ₁ (eps of the
    data's ``dtype``): the rank-revealing cut-off of eq. (20)'s pseudo-inverse. The kept
    singular values are a prefix (σ decreasing), so V is a view of the SVD's own factor (a
    copy of the kept columns would hold a second n × s array)."""
    V, sig, Ut = ops.svd(Gt)
    k = int(rank_cut(sig, Gt.shape[0], Gt.shape[1], dtype).sum())
    return V[:, :k], sig[:k], Ut[:k]


def pinv_factor(ops: ArrayOps, Gt, dtype):
    """P = (G^†)ᵀ = V Σ⁻¹ Uᵀ (n × s) from the thin SVD Gᵀ = V Σ Uᵀ of Gt (n × s): eq. (20)'s
    α̂ = P ŵ for weights ŵ on the features (Li, Liu and Zhang).

    Computed from the SVD rather than the Gram route GGᵀ, which would square the condition
    number; the cut-off is σ > max(n, s)·eps·σ₁ (eps of the data's ``dtype``). V is scaled
    in place (the SVD's own array): besides Gt the peak is :func:`pinv_factor_bytes`.
    """
    V, sig, Ut = _thin_svd_cut(ops, Gt, dtype)
    V /= sig
    return V @ Ut


def pinv_factor_bytes(n: int, s: int) -> int:
    """Estimated peak bytes of :func:`pinv_factor` of an n × s float64 Gt, besides Gt itself:
    the larger of its thin SVD (the copy LAPACK works on, V, Uᵀ and the workspace:
    :func:`~asymkern.linalg.svd.dense_svd_bytes`) and of the product P = (V Σ⁻¹) Uᵀ (V, Uᵀ
    and P).

    Parameters
    ----------
    n, s : int
        The shape of Gt (samples × features).

    Returns
    -------
    int
        The bytes.

    See Also
    --------
    pinv_factor : The function whose memory this estimates.

    Examples
    --------
    >>> from asymkern.nystrom._algebra import pinv_factor_bytes
    >>> pinv_factor_bytes(1000, 50) >= 8 * 2 * 1000 * 50   # at least V and P
    True
    """
    from ..linalg.svd import dense_svd_bytes

    n, s = int(n), int(s)
    k = min(n, s)
    return int(max(dense_svd_bytes(n, s, np.float64), 8 * (2 * n * k + k * s)))


def ridge_gsa(ops: ArrayOps, Gt, Yc: np.ndarray, sw: np.ndarray | None, alpha: float, dtype,
              gsa_solver: str = "eq20", w_given: np.ndarray | None = None):
    """GSA through LLA's training (Li, Liu and Zhang, eq. (20)), from one thin SVD of G_cᵀ.

    With G_cᵀ = V Σ Uᵀ (n × s, rank r), LLA's ridge weights are
    ŵ = (G_c G_cᵀ + αI)⁻¹ G_c y_c = U Σ(Σ² + α)⁻¹ Vᵀ y_c and eq. (20) gives
    α̂ = G_c^† ŵ = V (Σ² + α)⁻¹ Vᵀ y_c, the GSA dual solution (K̃_c + αI)⁻¹ y_c restricted to
    range(G_cᵀ). Working with Σ rather than the Gram matrix keeps the pseudo-inverse's cut-off
    rank-revealing (σ > max(n, s)·eps·σ₁) instead of squaring the condition number.
    ``gsa_solver='woodbury'`` solves problem (3) directly, α_W = (K̃_c + αI)⁻¹ y_c (the s×s
    system on the host), and projects: α̂ = V Vᵀ α_W. Given weights ``w_given`` (scikit-learn's
    ``Ridge``): α̂ = V Σ⁻¹ Uᵀ ŵ.

    With sample weights W everything runs on W½G_cᵀ and W½y_c and α̂ = W½(W½G_cᵀ)^{†ᵀ}ŵ: of the
    minimisers of the weighted problem (all α with G_cα = ŵ) the one of least αᵀW⁻¹α, so an
    integer weight equals repeating the row and a zero weight dropping it.

    Parameters
    ----------
    ops : ArrayOps
    Gt : array of shape (n, s)
        G_cᵀ on the executor (float64; scaled in place when weighted).
    Yc : ndarray of shape (n, k)
        Centred targets (host).
    sw : ndarray of shape (n,) or None
        Sample weights (None: unit weights).
    alpha : float
    dtype : numpy dtype
        The data's dtype (the cut-off).
    gsa_solver : {'eq20', 'woodbury'}
    w_given : ndarray of shape (s, k), optional

    Returns
    -------
    w : ndarray of shape (s, k)
        ŵ (host).
    dual : array of shape (n, k)
        α̂ on the executor.
    """
    Yd = ops.from_host(Yc, Gt, np.float64)
    rw = None
    if sw is not None:
        rw = ops.from_host(np.sqrt(sw)[:, None], Gt, np.float64)
        Gt, Yd = rw * Gt, rw * Yd
    V, sig, Ut = _thin_svd_cut(ops, Gt, dtype)
    wood = ((_host(ops, Gt.T @ Gt), _host(ops, Gt.T @ Yd)) if gsa_solver == "woodbury"
            else None)
    w, z = gsa_solve(_host(ops, sig), _host(ops, Ut), _host(ops, V.T @ Yd), alpha,
                     woodbury=wood, w_given=w_given)
    a = V @ ops.from_host(z, V, np.float64)
    return w, (rw * a if rw is not None else a)


def _host(ops: ArrayOps, a) -> np.ndarray:
    """A small executor array on the host, float64."""
    return np.asarray(ops.to_host(a), dtype=np.float64)


def ridge_gsa_householder(src: KnmSource, A: np.ndarray, Yc: np.ndarray,
                          sw: np.ndarray | None, alpha: float, center: bool, dtype,
                          w_given: np.ndarray | None = None):
    """GSA (Li, Liu and Zhang, eq. (20)) from one Householder QR of the features.

    The solution of :func:`ridge_gsa` with ``gsa_solver='eq20'``, reached without the n × s
    SVD of G_cᵀ. Write G_cᵀ = W½(K_nm − 1k̄ᵀ)A = (I − eeᵀ) W½K_nm A with e = w½/‖w½‖ (the
    weighted centring is a projection). The Householder QR of B = [e, W½K_nm A] (formed over
    row blocks of K_nm, zero rows appended when n < 1 + s) has Q = [±e, Q₂, ·] and
    R = [[±1, ·], [0, R₂]], so G_cᵀ = Q₂R₂ with Q₂ orthogonal to e to rounding — the centring
    is exact in the factorisation, not left to cancellation, and the rounding is relative to
    the features, not to K_nm (whose R times A, or whose centred entries times A, amplified
    it by A's entries of about Λ^{-1/2}). With the SVD R₂ = P Σ Uᵀ of an s × s matrix,
    G_cᵀ = (Q₂P) Σ Uᵀ is the thin SVD of G_cᵀ, V = Q₂P, and

        α̂ = W½ Q₂ P (Σ² + α)⁻¹ Pᵀ Q₂ᵀ W½y_c,   ŵ = U Σ (Σ² + α)⁻¹ Pᵀ Q₂ᵀ W½y_c,

    with the cut-off of :func:`ridge_gsa` (σ > max(n, s)·eps·σ₁). Q is applied twice through
    its reflectors (LAPACK ``gemqrt``), K_nm is evaluated once and never held whole, and α̂ is
    never formed through R⁻¹.

    Parameters
    ----------
    src : KnmSource
    A : ndarray of shape (m, s)
        The basis coefficients (host).
    Yc : ndarray of shape (n, k)
        Centred targets (host).
    sw : ndarray of shape (n,) or None
        Sample weights (None: unit weights).
    alpha : float
    center : bool
        ``fit_intercept`` (centre K_nm on its weighted mean row k̄).
    dtype : numpy dtype
        The data's dtype (the cut-off).
    w_given : ndarray of shape (s, k), optional
        Ridge weights of another solver: α̂ = V Σ⁻¹ Uᵀ ŵ.

    Returns
    -------
    w : ndarray of shape (s, k)
        ŵ (host).
    dual : array of shape (n, k)
        α̂ on the executor.
    kbar : ndarray of shape (m,) or None
        k̄ (host); None without ``center``.
    """
    ops = src.ops
    n, m = src.shape
    lead = 1 if center else 0
    like = _like(src)
    total = float(n if sw is None else sw.sum())
    swd = None if sw is None else ops.from_host(sw, like, np.float64)
    rw = None if sw is None else ops.from_host(np.sqrt(sw)[:, None], like, np.float64)
    Yd = ops.from_host(Yc, like, np.float64)
    if rw is not None:
        Yd = rw * Yd
    Ad = ops.from_host(A, like, np.float64)
    s = int(Ad.shape[1])
    # B = [e, W½K_nm A], formed over row blocks of K_nm (never whole): the features are
    # factorised, not K_nm. The R of [e, W½K_nm] times A, or (K_nm − 1k̄ᵀ)A, amplified the
    # rounding of the centred K_nm by A's large entries (about Λ^{-1/2}): predictions 1.1e-3
    # from exact kernel ridge regression where cond(K_c + αI) was 33. B has at least lead + s
    # rows (zero rows appended: Q is the identity on them).
    h = max(n, lead + s)
    B = ops.zeros((lead + s, h), like, np.float64).T  # column-major, for LAPACK / cuSOLVER
    ksum = ops.zeros((m,), like, np.float64) if center else None
    Knm = getattr(src, "Knm", None)
    step = n if Knm is not None else _step(src, m)
    for a in range(0, n, step):
        e = min(a + step, n)
        Kb = ops.astype(Knm[a:e] if Knm is not None else src.knm(a, e), np.float64)
        if center:
            ksum += Kb.sum(0) if swd is None else swd[a:e] @ Kb
        B[a:e, lead:] = Kb @ Ad
    del Kb
    kbar = None if ksum is None else np.asarray(ops.to_host(ksum), dtype=np.float64) / total
    if rw is not None:
        B[:n, lead:] *= rw
    if center:
        B[:n, :1] = (ops.from_host(np.full((n, 1), 1.0 / np.sqrt(n)), like, np.float64)
                     if rw is None else rw / np.sqrt(total))
    refl, R = ops.householder(B)
    del B
    P, sig, Ut = ops.svd(R[lead:, lead:])  # R₂ = P Σ Uᵀ (s × s, on the executor)
    keep = rank_cut(sig, n, s, dtype)
    P = P[:, keep]
    Yh = Yd
    if h > n:
        Yh = ops.zeros((h, Yd.shape[1]), Yd, np.float64)
        Yh[:n] = Yd
    VtY = None if w_given is not None else _host(  # Vᵀ W½y_c = Pᵀ Q₂ᵀ W½y_c
        ops, P.T @ ops.householder_apply(refl, Yh, transpose=True)[lead:lead + s])
    w, z = gsa_solve(_host(ops, sig[keep]), _host(ops, Ut[keep]), VtY, alpha,
                     w_given=w_given)
    Z = ops.zeros((h, z.shape[1]), R, np.float64)
    Z[lead:lead + s] = P @ ops.from_host(z, R, np.float64)
    a = ops.householder_apply(refl, Z)[:n]
    return w, (rw * a if rw is not None else a), kbar


def spa_dual(src: KnmSource, beta: np.ndarray, kbar: np.ndarray | None, Yc: np.ndarray,
             sw: np.ndarray | None, alpha: float):
    """SPA's dual coefficients a = W(y_c − G_cᵀŵ)/α (n × k, on the executor), one pass over
    K_nm: G_cᵀŵ = (K_nm − 1k̄ᵀ)β with β = Aŵ.

    SPA solves (W½K̃_cW½ + αI) b = W½y_c, K̃_c = G_cᵀG_c, a = W½b (Li, Liu and Zhang, §II-D)
    by Woodbury; its s×s system (G_cWG_cᵀ + αI) ŵ = G_cWy_c is LLA's, so G_c a = ŵ and
    a = W(y_c − G_cᵀŵ)/α: the primal–dual relation of ridge regression.

    Parameters
    ----------
    src : KnmSource
    beta : ndarray of shape (m, k)
        A ŵ (host).
    kbar : ndarray of shape (m,) or None
        The (weighted) mean row of K_nm (None: no centring).
    Yc : ndarray of shape (n, k)
        Centred targets (host).
    sw : ndarray of shape (n,) or None
    alpha : float
    """
    ops = src.ops
    r = features(src, beta, kbar)  # G_cᵀŵ
    a = (ops.from_host(Yc, r, np.float64) - r) / alpha
    return a if sw is None else ops.from_host(sw[:, None], r, np.float64) * a


def ridge_exact(ops: ArrayOps, K, Yc: np.ndarray, ybar: np.ndarray, sw: np.ndarray,
                weighted: bool, alpha: float, center: bool) -> RidgeSolution:
    """Exact kernel ridge regression, the reference machine: (W½K_cW½ + αI) b = W½y_c,
    a = W½b, K_c the kernel centred with the (weighted) mean feature r:
    K_c = K − r1ᵀ − 1rᵀ + (mean r)11ᵀ.

    Parameters
    ----------
    ops : ArrayOps
    K : array of shape (n, n)
        The symmetric kernel matrix, float64 on the executor (overwritten).
    Yc, ybar, sw, weighted, alpha, center
        As :func:`ridge_nystrom`.

    Returns
    -------
    RidgeSolution
        ``dual`` and ``intercept`` only.
    """
    wd = ops.from_host(sw, K, np.float64) if weighted else None

    def wmean(T):  # (weighted) mean of the rows; the plain mean when unweighted
        return T.mean(0) if wd is None else (wd @ T) / float(sw.sum())

    r = None
    if center:
        r = wmean(K)
        K = K - r[:, None] - r[None, :] + float(wmean(r))
    rw = None
    if weighted:
        rw = ops.from_host(np.sqrt(sw)[:, None], K, np.float64)
        K = rw * K * rw.T
    K = ops.add_diag_(K, alpha)
    Yd = ops.from_host(Yc, K, np.float64)
    a = ops.solve(K, rw * Yd) if rw is not None else ops.solve(K, Yd)
    if rw is not None:
        a = rw * a
    del K
    intercept = ybar - (np.asarray(ops.to_host(r @ a)) if r is not None else 0.0)
    return RidgeSolution(None, None, a, intercept)


# ================================================================================ kernel PCA
@dataclass(frozen=True)
class PCASolution:
    """A fitted kernel PCA (arrays of the executor, float64).

    Attributes
    ----------
    eigenvalues : array of shape (k,)
    coef : array of shape (s, k) or None
        W (``coef_`` is its transpose); None for 'exact'.
    dual : array of shape (n, k) or None
        α with scores K(z, X) α + b (GSA, SPA, exact).
    intercept : array of shape (k,)
    shift : array of shape (s,) or None
        The mean feature f̄ (zeros without centring); None for 'exact'.
    """

    eigenvalues: Any
    coef: Any
    dual: Any
    intercept: Any
    shift: Any


def _flip(ops: ArrayOps, U):
    """U with the largest-magnitude entry of each column positive (scikit-learn's
    ``svd_flip`` rule); returns (U, signs) with the host signs."""
    signs = ops.sign_flips(U)
    return ops.scale_cols(U, signs), signs


def pca_nystrom(mode: str, F, k: int, center: bool, dtype) -> PCASolution:
    """Nyström kernel PCA on the features F = K_nm A (n × s, float64 on the executor): the
    thin SVD of the centred features and :func:`pca_factors`.

    Parameters
    ----------
    mode : {'lla', 'ncr', 'gsa', 'spa'}
    F : array of shape (n, s)
        Overwritten (centred in place).
    k : int
        Number of components (already checked against s and n).
    center : bool
    dtype : numpy dtype
        The data's dtype (GSA's cut-off).

    Returns
    -------
    PCASolution
    """
    ops = ops_of(F)
    fbar = F.mean(0) if center else ops.from_host(np.zeros(F.shape[1]), F, np.float64)
    F -= fbar  # F_c, in place
    U, S, Vt = ops.svd(F)
    signs = ops.sign_flips(U[:, :k])
    lam, W, keep, D = pca_factors(mode, np.asarray(ops.to_host(S)), np.asarray(ops.to_host(Vt)),
                                  signs, k, F.shape[0], dtype)
    dual = None
    if D is not None:
        dual = U[:, ops.index(keep, U)] @ ops.from_host(D, U, np.float64)
    del U
    Wd = ops.from_host(W, F, np.float64)
    return PCASolution(ops.from_host(lam, F, np.float64), Wd, dual, -(fbar @ Wd), fbar)


def pca_exact(ops: ArrayOps, K, k: int, center: bool) -> PCASolution:
    """Exact kernel PCA: the top-k eigenpairs of the (double-centred) n×n kernel,
    α = U_k Λ_k^{-1/2}, intercept −rᵀα (r the row means).

    Parameters
    ----------
    ops : ArrayOps
    K : array of shape (n, n)
        float64 on the executor (not written to).
    k : int
    center : bool

    Returns
    -------
    PCASolution
        ``coef`` and ``shift`` None; the caller checks the eigenvalues are positive.
    """
    r = K.mean(1) if center else ops.from_host(np.zeros(K.shape[0]), K, np.float64)
    Kc = K - r[:, None] - r[None, :] + float(r.mean()) if center else K
    lam, U = ops.eigh_top((Kc + Kc.T) / 2, k)
    del Kc
    U, _ = _flip(ops, U)
    dual = U / lam**0.5
    return PCASolution(lam, None, dual, -(r @ dual), None)


# ===================================================================================== SVC
@dataclass(frozen=True)
class SVCSolution:
    """The kernel-side fit of a Nyström SVC (the SVM itself is scikit-learn's).

    Attributes
    ----------
    coef : ndarray of shape (n_machines, s) or None
        The linear solver's weights W on the features (LLA, NCR, GSA).
    landmark_coef : ndarray of shape (m, n_machines) or None
        β with decision values K(z, C) β + b (not for 'exact').
    dual : array of shape (n, n_machines) or None
        α with decision values K(z, X) α + b (GSA, SPA, exact), on the executor.
    pinv : array of shape (n, s) or None
        GSA's (G^†)ᵀ factor (its features are K(z, X) P).
    """

    coef: np.ndarray | None
    landmark_coef: np.ndarray | None
    dual: Any
    pinv: Any = None


def svc_nystrom(mode: str, F, A: np.ndarray, fit_linear, fit_gram, dtype) -> SVCSolution:
    """The kernel side of a Nyström SVC on the features F = K_nm A (n × s, executor).

    SPA trains the SVM on the projected Gram matrix F Fᵀ (precomputed kernel) and gets
    β = A Fᵀ D from its signed duals D; LLA / NCR / GSA train a linear SVM on F (weights W,
    β = A Wᵀ) and GSA adds α̂ = (G^†)ᵀ Wᵀ (Li, Liu and Zhang, eq. (20)).

    Parameters
    ----------
    mode : {'lla', 'ncr', 'gsa', 'spa'}
    F : array of shape (n, s)
    A : ndarray of shape (m, s)
    fit_linear : callable
        ``fit_linear(F_host)`` fits the linear SVM and returns W (n_machines × s).
    fit_gram : callable
        ``fit_gram(K_host)`` fits the precomputed-kernel SVM and returns D (n × n_machines).
    dtype : numpy dtype
        The data's dtype (GSA's cut-off).

    Returns
    -------
    SVCSolution
    """
    ops = ops_of(F)
    if mode == "spa":
        D = fit_gram(np.asarray(ops.to_host(F @ F.T)))
        Dd = ops.from_host(D, F, np.float64)
        return SVCSolution(None, A @ np.asarray(ops.to_host(F.T @ Dd)), Dd)
    W = np.array(np.atleast_2d(fit_linear(ops.to_host(F))), dtype=np.float64)  # writable
    dual = P = None
    if mode == "gsa":
        P = pinv_factor(ops, F, dtype)
        dual = P @ ops.from_host(W.T, F, np.float64)
    return SVCSolution(W, A @ W.T, dual, P)


__all__ = ["KnmSource", "PCASolution", "RidgeSolution", "RidgeStats",
           "SVCSolution", "check_finite", "features", "pca_exact", "pca_nystrom",
           "pinv_factor", "pinv_factor_bytes", "ridge_exact", "ridge_gsa", "ridge_nystrom",
           "ridge_stats", "row_step", "row_sums", "spa_dual", "svc_nystrom"]
