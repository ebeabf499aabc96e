"""Linear-system solvers for LS-SVM (He et al., 2023, eq. 4) and AsK-LS (He et al., 2023, eq. 6).

Both systems are written in *signed* coefficients ã = α ⊙ y, b̃ = β ⊙ y. With D = diag(y),
y ∈ {±1}ⁿ, the AsK-LS matrix of eq. (6) is P A₀ P with P = diag(1, 1, D, D) and

    A₀ = [[0, 0, 1ᵀ, 0], [0, 0, 0, 1ᵀ], [1, 0, I/γ, K], [0, 1, Kᵀ, I/γ]],

(γ is the paper's regularisation constant, the keyword ``C`` of the public functions),

so eq. (6) is equivalent to A₀ [b1, b2, ã, b̃] = [0, 0, y, y]. A₀ does not depend on the labels:
one factorisation serves every one-vs-rest problem (and the paper's 1-norm rcond and its
ridge-regularised normal equations are invariant under P, so the fallback is unchanged too).

Inner block B = [[cI, K], [Kᵀ, cI]], c = 1/γ, is solved without forming it:

* ``'schur'``: β = M⁻¹(c q − Kᵀp), α = (p − Kβ)/c with M = c²I − KᵀK (one GEMM and one n×n LU,
  against an LU of the (2n + 2) system: about 4× fewer flops);
* ``'eig'``: KᵀK = V Λ Vᵀ once; M⁻¹ = V (c² − Λ)⁻¹ Vᵀ for every γ of a grid in O(n²);
* ``'lowrank'``: K ≈ U diag(s) Wᵀ (asymmetric Nyström); Woodbury identity, O(n r²), solved
  on the r×r sums of :class:`LowRankStats` (:func:`askls_lowrank_reduced`; the Dask executor
  reduces the same sums over row chunks);
* ``'dense'``: LU of the full (2n + 2) matrix — the obviously-correct reference.

The two bias unknowns are eliminated by a 2×2 Schur complement (bordered system).

Ill-conditioning (the authors' MATLAB: ``rcond(A) > 1e-8`` else ``(AᵀA + λI)⁻¹Aᵀb`` with λ = 1):
we estimate rcond(A₀) in the 1-norm (Hager–Higham, using the fast solve) and, below
``rcond_tol``, return the ridge-regularised normal-equation solution with a warning. Because A₀ is
symmetric, (A₀² + μ²I)⁻¹A₀ b = Re[(A₀ − iμI)⁻¹ b] with μ = √λ, which is the same structured
system with complex shifts (c → c − iμ on the inner diagonal, −iμ on the bias block): the
fallback costs one complex structured solve instead of a dense (2n + 2) normal-equation solve.
For a sparse K (graph kernels) the complex LU of γ⁻²I − KᵀK fills in badly, so there the
fallback runs damped LSQR on the sparse A₀ instead (same minimiser, O(nnz) per step), and an
exact singularity that shows in the sparsity pattern (an isolated node with K_ii = 1/γ, as on
the citation graphs at γ = 1) is detected without attempting the LU.

Weighted systems (``sample_weight`` v, Suykens et al. 2002 weighted LS-SVM): the error terms of
the primal become (C/2) Σ_i v_i e_i² (and (C/2) Σ_i v_i h_i² for the second error vector of
AsK-LS, He et al. (2023) eq. 5), so stationarity gives e_i = α_i/(C v_i) and the identity blocks
I/C of eq. (4)/(6) become D = diag(1/(C v_i)). With S = diag(√v) the system is solved as the
unweighted one of the scaled kernel S K S (every fast path, the rcond check and the ridge fallback
unchanged): (K + D)⁻¹ = S (S K S + I/C)⁻¹ S, bias border vector √v instead of 1 — i.e. with
x = S x′: [[0, (S1)ᵀ], [S1, S K S + I/C]] [b; x′] = [0; S y]. The rcond estimate and the ridge
fallback refer to that scaled system (identical to the unweighted system when v = 1). An integer
weight equals repeating the sample.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from .._shared.lssvm import (  # noqa: F401 - LowRankCoef: part of this module's interface
    IllConditionedWarning,
    LowRankCoef,
    LowRankStats,
    _check_C,
    _lu_or_none,
    askls_lowrank_reduced,
)
from .._validation import (
    all_finite,
    as_data,
    as_weights,
    check_regression_targets,
    renamed_argument,
)
from ..config import check_memory

#: float64 n×n arrays each solver holds at its peak besides the caller's K (tracemalloc at
#: n = 300–900, rounded up; the eigendecompositions take 2–3 more with numpy 2.5 / scipy 1.18
#: than with numpy 2.2 / scipy 1.15, the larger is kept): the budget checks of the public
#: solvers (:func:`_check_solve_memory`); the callers add what sample weights (a scaled copy
#: of K, two for the symmetric eigendecomposition) and a densified sparse K cost
_SOLVE_COPIES = {"askls schur": 3.1, "askls schur sparse": 4.25, "askls eig": 5.1,
                 "askls dense": 12.1, "askls path schur": 3.1, "askls path eig": 5.1,
                 "lssvm chol": 1.1, "lssvm eig": 4.1, "lssvm dense": 3.1, "kkt": 6.1}


def _check_solve_memory(K, route: str, what: str, extra: float = 0.0) -> None:
    """Refuse, before anything n×n is allocated, a solve whose peak (:data:`_SOLVE_COPIES`
    ``[route]`` + ``extra`` float64 n×n arrays besides K) exceeds ``max_dense_memory``
    (:func:`asymkern.config.check_memory`)."""
    n = int(np.shape(K)[0]) if np.ndim(K) else 0
    copies = _SOLVE_COPIES[route] + extra
    check_memory(copies * 8.0 * n * n, f"{what} on a {n}×{n} kernel matrix",
                 "a Nyström or low-rank model (nystrom=..., method='lowrank'), or a smaller "
                 "training set", detail=f"about {copies:g} float64 {n}×{n} arrays besides K")


# --------------------------------------------------------------------------------------------
# inner solvers: apply B(c)⁻¹ to stacked right-hand sides
# --------------------------------------------------------------------------------------------
def _schur_solve(R, n, c, solve_M, matmul):
    """B(c)⁻¹ R: β = M⁻¹(c q − Kᵀp), α = (p − Kβ)/c (``matmul(X, transpose)``: Kᵀ X or K X)."""
    P, Q = R[:n], R[n:]
    beta = solve_M(c * Q - matmul(P, True))
    return np.vstack([(P - matmul(beta, False)) / c, beta])


def _apply_block(R, n, c, matmul):
    """B(c) R = [[cI, K], [Kᵀ, cI]] [P; Q] = [cP + KQ; KᵀP + cQ] (``matmul(X, transpose)``:
    Kᵀ X or K X): the residuals of the iterative refinement (:func:`_refine`)."""
    P, Q = R[:n], R[n:]
    return np.vstack([c * P + matmul(Q, False), matmul(P, True) + c * Q])


def _splu_or_none(M, **kw):
    """SuperLU factors of the sparse M (CSC, so that SuperLU has nothing to warn about: no
    process-wide warnings filter, which is not thread-safe), or None when it is exactly
    singular."""
    try:
        return splu(sp.csc_matrix(M), **kw)
    except RuntimeError:
        return None


class _AsymSchur:
    """B = [[cI, K], [Kᵀ, cI]] via the Schur complement M = c²I − KᵀK (LU)."""

    # A dense array with at most this fraction of nonzeros (a graph kernel such as a degree-
    # normalised adjacency, stored dense) is also held as CSR: KᵀK costs O(nnz·n) instead of a
    # GEMM, and the ridge fallback's iterations apply Kᵀ(K v) in O(nnz) instead of reading the
    # dense KᵀK. Same arithmetic, other summation order (rounding-level differences only).
    _SPARSE_DENSITY = 0.01
    _SPARSE_MIN_N = 256

    def __init__(self, K: np.ndarray, KtK: np.ndarray | None = None):
        self.K = K
        self.n = K.shape[0]
        self.K_csr = None
        if self.n >= self._SPARSE_MIN_N and (np.count_nonzero(K)
                                             <= self._SPARSE_DENSITY * K.size):
            self.K_csr = sp.csr_matrix(K)
        if KtK is None:
            KtK = K.T @ K if self.K_csr is None else np.asarray(self.K_csr.T @ K)
        self.KtK = KtK

    def _matmul(self, X, transpose: bool = False):
        """K X (or Kᵀ X) for a real or complex X, through the CSR copy when there is one."""
        A = self.K if self.K_csr is None else self.K_csr
        return _real_matmul(A.T if transpose else A, X)

    # The ridge fallback's shift z = c − iμ: z²I − KᵀK = −(P + iτI), P = (μ² − c²)I + KᵀK,
    # τ = 2cμ. When μ² − c² > 0, P is symmetric positive definite and P + iτI is complex
    # symmetric and normal, with its spectrum on the segment [λ_min(P), λ_max(P)] + iτ. Then,
    # instead of the complex LU of z²I − KᵀK (≈ 2.8 real LUs on this BLAS):
    # * 'cocg': conjugate orthogonal CG (unconjugated inner products) on P + iτI with the KᵀK
    #   already formed: O(n²) per step, about ½√κ(P)·ln(2/tol) steps; used when the bound
    #   κ(P) ≤ (‖K‖₁‖K‖∞ + μ² − c²)/(μ² − c²) predicts at most _CG_MAX_ITER(n) steps, its true
    #   residual checked at the end;
    # * 'fixed-point': a real Cholesky of P and x ← P⁻¹(r − iτx), error × ρ = τ/(μ² − c²) per
    #   step, when ρ ≤ _RHO_MAX;
    # * otherwise, or when COCG misses its tolerance: the complex LU (the former path).
    _RHO_MAX = 0.5
    _FP_MAX_ITER = 200
    _CG_TOL = 1e-14

    def abs_sums(self) -> tuple[float, float]:
        """(max row sum, max column sum) of ``|K|``, computed once."""
        if getattr(self, "_abs_sums", None) is None:
            self._abs_sums = _abs_sums_max(self.K)
        return self._abs_sums

    @staticmethod
    def _cg_max_iter(n: int) -> int:
        return max(100, n // 30)

    def _factor_shifted(self, c, methods=("cocg", "fixed-point")):
        c0, mu = float(np.real(c)), -float(np.imag(c))
        shift, tau = mu * mu - c0 * c0, 2.0 * c0 * mu
        if not shift > 0:
            return None
        if "cocg" in methods:
            r_max, c_max = self.abs_sums()
            lam_max = r_max * c_max  # λ_max(KᵀK) ≤ ‖K‖₁‖K‖∞
            kappa = (lam_max + shift) / shift
            if 0.5 * np.sqrt(kappa) * np.log(2.0 / self._CG_TOL) <= self._cg_max_iter(self.n):
                return ("cocg", c, shift, tau, {})
        if "fixed-point" in methods and abs(tau) <= self._RHO_MAX * shift:
            P = self.KtK.copy()
            P[np.diag_indices_from(P)] += shift
            try:
                cho = sla.cho_factor(P, lower=False, overwrite_a=True, check_finite=False)
            except np.linalg.LinAlgError:  # pragma: no cover - P is SPD
                return None
            return ("fixed-point", c, cho, tau)
        return None

    def _cocg(self, shift, tau, R):
        """(P + iτI)⁻¹ R by COCG, all columns at once; None when it misses the tolerance."""
        R = np.asarray(R, dtype=np.complex128)
        KtK, Kc = self.KtK, self.K_csr

        def apply(V):  # (P + iτI) V
            W = _split_apply(lambda V2: KtK @ V2 if Kc is None else Kc.T @ (Kc @ V2), V)
            return W + (shift + 1j * tau) * V

        bnorm = np.linalg.norm(R, axis=0)
        if not np.all(bnorm > 0):
            bnorm = np.where(bnorm > 0, bnorm, 1.0)
        x = np.zeros_like(R)
        r = R.copy()
        p = r.copy()
        rho = np.einsum("ij,ij->j", r, r)
        done = False
        for _ in range(self._cg_max_iter(self.n)):
            q = apply(p)
            pq = np.einsum("ij,ij->j", p, q)
            if np.any(pq == 0):
                return None
            alpha = rho / pq
            x += alpha * p
            r -= alpha * q
            if np.all(np.linalg.norm(r, axis=0) <= self._CG_TOL * bnorm):
                done = True
                break
            rho_new = np.einsum("ij,ij->j", r, r)
            if np.any(rho == 0):
                return None
            p = r + (rho_new / rho) * p
            rho = rho_new
        if not done:
            return None
        # the true residual (the recursive one can drift): accept at 10× the tolerance
        res = np.linalg.norm(R - apply(x), axis=0)
        if not np.all(res <= 10 * self._CG_TOL * bnorm):
            return None
        return x

    def _solve_shifted(self, cho, tau, R):
        """x = (z²I − KᵀK)⁻¹ R = −(P + iτI)⁻¹ R by the fixed point x ← P⁻¹(R − iτx)."""
        R = np.asarray(R, dtype=np.complex128)

        def pinv(V):  # P⁻¹ V for complex V
            return _split_apply(lambda V2: sla.cho_solve(cho, V2, check_finite=False), V)

        b = pinv(R)
        x = b
        scale = max(float(np.abs(b).max()), np.finfo(float).tiny)
        prev = np.inf
        for _ in range(self._FP_MAX_ITER):
            x_new = b - (1j * tau) * pinv(x)
            step = float(np.abs(x_new - x).max())
            x = x_new
            # converged, or at the rounding floor (the step no longer shrinks)
            if step <= 16 * np.finfo(float).eps * scale or (step >= prev and step
                                                              <= 1e-12 * scale):
                break
            prev = step
        else:  # pragma: no cover - ρ ≤ 1/2 converges in < 60 steps
            raise np.linalg.LinAlgError("fixed-point solve of the ridge-shifted system did not "
                                        "converge")
        return -x

    def _shifted_inverse(self, fac, R):
        """(z²I − KᵀK)⁻¹ R for a 'cocg' or 'fixed-point' factorisation."""
        if fac[0] == "fixed-point":
            return self._solve_shifted(fac[2], fac[3], R)
        _, c, shift, tau, cache = fac
        x = None if "fallback" in cache else self._cocg(shift, tau, R)
        if x is not None:
            return -x
        if "fallback" not in cache:  # COCG missed its tolerance: factorise once, keep it
            cache["fallback"] = (self._factor_shifted(c, methods=("fixed-point",))
                                 or self._lu(c))
        fb = cache["fallback"]
        if fb is None:  # pragma: no cover - the complex shift is never singular
            raise np.linalg.LinAlgError("ridge-regularised system could not be factorised")
        if fb[0] == "fixed-point":
            return self._solve_shifted(fb[2], fb[3], R)
        return sla.lu_solve(fb[1], R, check_finite=False)

    def factor(self, c):
        if not np.isrealobj(c):
            fac = self._factor_shifted(c)
            if fac is not None:
                return fac
        return self._lu(c)

    def _lu(self, c):
        """``(c, LU of c²I − KᵀK)`` (real or complex c), or None when it is singular."""
        M = -self.KtK if np.isrealobj(c) else -self.KtK.astype(np.complex128)
        M[np.diag_indices_from(M)] += c * c
        lu = _lu_or_none(M)
        return None if lu is None else (c, lu)

    def apply(self, c, R):
        """B(c) R for the iterative refinement."""
        return _apply_block(R, self.n, c, self._matmul)

    def solve(self, fac, R):
        if isinstance(fac[0], str):  # 'cocg' / 'fixed-point' (the ridge fallback)
            return _schur_solve(R, self.n, fac[1], lambda X: self._shifted_inverse(fac, X),
                                self._matmul)
        c, lu = fac
        return _schur_solve(R, self.n, c, lambda X: sla.lu_solve(lu, X, check_finite=False),
                            self._matmul)


class _AsymSchurSparse:
    """Sparse K (e.g. a graph kernel): M = c²I − KᵀK stays sparse; SuperLU factorisation."""

    def __init__(self, K):
        self.K = sp.csr_matrix(K, dtype=np.float64)
        self.KT = sp.csr_matrix(self.K.T)
        self.n = self.K.shape[0]
        self.KtK = sp.csc_matrix(self.KT @ self.K)
        self._isolated = None

    def ridge_solve(self, c, p, Y, ridge, tol: float = 1e-13, e=None):
        """The paper's fallback (AᵀA + λI)⁻¹Aᵀb for the sparse A₀ of eq. (6) by damped LSQR.

        A₀ is never factorised: LSQR (Paige & Saunders) minimises ‖A₀x − b‖² + λ‖x‖², whose
        minimiser is exactly (A₀ᵀA₀ + λI)⁻¹A₀ᵀb, with one product by A₀ and A₀ᵀ per step
        (O(nnz(K) + n)). Returns (bias (p, k), stacked inner solution (p·n, k)).
        """
        from scipy.sparse.linalg import lsqr  # looked up per call (tests replace it)

        if p != 2:
            raise ValueError("ridge_solve is the AsK-LS (two-bias) system")
        n = self.n
        one = sp.csr_matrix(np.ones((1, n)) if e is None else np.asarray(e)[None, :])
        z = sp.csr_matrix((1, n))
        eye = sp.identity(n, format="csr") * c
        A0 = sp.bmat([[None, None, one, z], [None, None, z, one],
                      [one.T, None, eye, self.K], [None, one.T, self.KT, eye]],
                     format="csr")
        k = Y.shape[1]
        out = np.zeros((p + p * n, k))
        info = []
        for j in range(k):
            rhs = np.concatenate([np.zeros(p), Y[:, j], Y[:, j]])
            res = lsqr(A0, rhs, damp=float(np.sqrt(ridge)), atol=tol, btol=tol, conlim=1e16,
                       iter_lim=max(20 * A0.shape[0], 1000))
            out[:, j] = res[0]
            info.append(int(res[2]))
            if res[1] in (3, 6, 7):  # condition limit or iteration limit: not converged
                warnings.warn(
                    f"LSQR for the ridge-regularised AsK-LS system stopped without converging "
                    f"(istop={res[1]}, {res[2]} iterations, ‖Aᵀr‖ = {res[7]:.2e})",
                    IllConditionedWarning, stacklevel=5,
                )
        self.last_lsqr_iterations = info
        return out[:p], out[p:]

    def _isolated_singular(self, c) -> bool:
        """Exact singularity visible in the sparsity pattern: a node i with no off-diagonal
        entry in row or column i is a 1×1 block of K with singular value ``|K_ii|``, so B(c) is
        singular when ``|K_ii|`` = c (a node without in- or out-edges and self-loop weight 1/γ)."""
        if self._isolated is None:
            K = self.K
            d = K.diagonal()
            nnz_r = np.diff(K.indptr) - (d != 0)
            nnz_c = np.diff(self.KT.indptr) - (d != 0)
            self._isolated = np.abs(d[(nnz_r == 0) & (nnz_c == 0)])
        return bool(np.isrealobj(c) and np.any(self._isolated == abs(c)))

    def factor(self, c):
        if self._isolated_singular(c):  # skip a SuperLU that would only abort (or crawl)
            return None
        dt = np.float64 if np.isrealobj(c) else np.complex128
        M = sp.csc_matrix(sp.identity(self.n, dtype=dt, format="csc") * (c * c) - self.KtK)
        # M is symmetric: a minimum-degree ordering of its own pattern (Mᵀ + M = 2M) fills in
        # about half as much as the default COLAMD (3× faster on a random directed graph of
        # 3000 nodes)
        lu = _splu_or_none(M, permc_spec="MMD_AT_PLUS_A")
        return None if lu is None else (c, lu)

    def apply(self, c, R):
        """B(c) R for the iterative refinement."""
        return _apply_block(R, self.n, c, lambda X, t: (self.KT if t else self.K) @ X)

    def solve(self, fac, R):
        c, lu = fac
        return _schur_solve(R, self.n, c, lambda X: lu.solve(np.asarray(
            X, dtype=np.result_type(X, c))), lambda X, t: (self.KT if t else self.K) @ X)


class _AsymEig:
    """B via the eigendecomposition KᵀK = V Λ Vᵀ: O(n²) per γ once it is known."""

    def __init__(self, K: np.ndarray, KtK: np.ndarray | None = None):
        self.K = K
        self.n = K.shape[0]
        G = K.T @ K if KtK is None else KtK
        self.lam, self.V = np.linalg.eigh(G)

    def factor(self, c):
        den = c * c - self.lam
        if np.any(den == 0) or not np.all(np.isfinite(den)):
            return None
        return (c, 1.0 / den)

    def apply(self, c, R):
        """B(c) R for the iterative refinement."""
        return _apply_block(R, self.n, c, lambda X, t: (self.K.T if t else self.K) @ X)

    def solve(self, fac, R):
        c, inv = fac
        return _schur_solve(R, self.n, c, lambda X: self.V @ (inv[:, None] * (self.V.T @ X)),
                            lambda X, t: (self.K.T if t else self.K) @ X)


class _AsymLowRank:
    """The factors of K = U diag(s) Wᵀ (n×r), solved in reduced form by
    :func:`askls_lowrank_reduced` (Woodbury on r×r sums)."""

    def __init__(self, U, s, W):
        self.U, self.s, self.W = U, np.asarray(s, dtype=np.float64), W
        self.n = U.shape[0]


def _nearly_symmetric(K: np.ndarray, rtol: float = 16.0, block: int = 128) -> bool:
    """Whether max|K − Kᵀ| ≤ rtol·eps·max|K| (for matrices of unknown origin, e.g. precomputed).

    A symmetric kernel evaluated in floating point is symmetric only to rounding (an RBF matrix
    differs from its transpose by ~1e-16); Cholesky reads one triangle, i.e. it solves with a
    symmetric matrix within rtol·eps·max|K| elementwise of K: a perturbation of the size of the
    backward error of the LU it replaces. A matrix with NaN or infinity is not.

    max|K| comes first (two streaming reductions, which also find any NaN or infinity); then
    each ``block``×``block`` tile of the upper triangle is compared with the transpose of its
    mirror tile, both in cache (each entry of K is read once; no n×n temporary), and the
    first tile beyond the tolerance ends the scan. The decision is that of the full
    elementwise comparison: the differences and maxima are exact operations on the same
    entries.
    """
    n = K.shape[0]
    if n == 0:
        return True
    eps = float(np.finfo(np.float64).eps)
    with np.errstate(invalid="ignore", over="ignore"):
        kmax = max(float(K.max()), -float(K.min()))  # NaN if K holds a NaN
        if not math.isfinite(kmax):
            return False
        tol = rtol * eps * kmax
        b = min(block, n)
        buf = np.empty((b, b), dtype=K.dtype)
        for i in range(0, n, b):
            ie = min(i + b, n)
            for j in range(i, n, b):
                je = min(j + b, n)
                D = buf[: ie - i, : je - j]
                np.subtract(K[i:ie, j:je], K[j:je, i:ie].T, out=D)
                np.abs(D, out=D)
                if not float(D.max()) <= tol:  # beyond the tolerance (or overflowed)
                    return False
    return True


class _SymChol:
    """LS-SVM inner block K + cI: Cholesky when K is symmetric and K + cI is PD, else LU.

    ``symmetric``: what the caller knows — ``True`` when K is the Gram matrix of a kernel flagged
    ``is_symmetric`` on one set (X = Z; only its lower triangle is read, so rounding-level
    asymmetry of the computed matrix does not matter), ``False`` for an asymmetric kernel (never
    Cholesky), ``None`` when unknown (a user's precomputed matrix): then a tolerance check
    (:func:`_nearly_symmetric`) decides. For a PSD kernel K + I/γ is SPD, so the Cholesky
    factorisation exists; a symmetric indefinite K for which it fails falls back to LU.
    ``factorization`` records the real factorisation used (``'cholesky'`` or ``'lu'``).
    """

    def __init__(self, K: np.ndarray, symmetric: bool | None = None, overwrite_K: bool = False):
        self.K = K
        self.n = K.shape[0]
        self.symmetric = bool(_nearly_symmetric(K) if symmetric is None else symmetric)
        # overwrite_K (only with a symmetric C-ordered float64 K the caller discards): factor in
        # K's own memory, as KernelRidge does, saving an n×n copy; K's strict upper triangle is
        # left intact, so K (symmetrised from it) is rebuilt when another factorisation is needed
        self._in_place = bool(overwrite_K and self.symmetric and K.dtype == np.float64
                              and K.flags.c_contiguous and K.flags.writeable)
        self._diag = None
        self.factorization = None

    def _restore(self):
        """Rebuild K after an in-place factorisation from its untouched strict upper triangle."""
        K, b = self.K, 512
        for i in range(0, self.n, b):
            j = min(i + b, self.n)
            blk = K[i:j, i:j]
            up = np.triu(blk, 1)
            blk[...] = up + up.T
            K[i:j, :i] = K[:i, i:j].T
        K[np.diag_indices_from(K)] = self._diag
        self._diag = None

    def _matrix(self, c, in_place: bool = True):
        if self._diag is not None:
            self._restore()
        if in_place and self._in_place and np.isrealobj(c):
            self._diag = self.K.diagonal().copy()
            M = self.K
        else:
            M = self.K.astype(np.result_type(self.K, c), order="C", copy=True)
        M[np.diag_indices_from(M)] += c
        return M

    def factor(self, c):
        # LAPACK works on Fortran-ordered arrays: M is built C-ordered (one copy of K) and
        # factored as its F-contiguous transpose view Mᵀ, so neither the factorisation nor the
        # later solves copy the n×n matrix again. For Cholesky, the upper triangle of Mᵀ is the
        # lower triangle of K + cI; LU factors Mᵀ and solves with trans=1 (Mᵀ)ᵀ = M.
        real = np.isrealobj(c)
        M = self._matrix(c)
        if real and self.symmetric:
            try:
                f = sla.cho_factor(M.T, lower=False, overwrite_a=True, check_finite=False)
            except np.linalg.LinAlgError:  # not positive definite: rebuild M, use LU
                M = self._matrix(c, in_place=False)
            else:
                self.factorization = "cholesky"
                return ("chol", f)
        lu = _lu_or_none(M.T)
        if lu is None:
            return None
        if real:
            self.factorization = "lu"
        return ("luT", lu)

    def solve(self, fac, R):
        kind, f = fac
        if kind == "chol":
            return sla.cho_solve(f, R, check_finite=False)
        return sla.lu_solve(f, R, trans=1, check_finite=False)


class _SymSparse:
    """Sparse symmetric-or-not LS-SVM block K + cI: SuperLU."""

    def __init__(self, K):
        self.K = sp.csc_matrix(K, dtype=np.float64)
        self.n = self.K.shape[0]

    def factor(self, c):
        dt = np.float64 if np.isrealobj(c) else np.complex128
        return _splu_or_none(sp.csc_matrix(self.K.astype(dt)
                                           + sp.identity(self.n, dtype=dt, format="csc") * c))

    def solve(self, lu, R):
        return lu.solve(np.asarray(R, dtype=np.result_type(R, lu.U.dtype)))


class _SymEig:
    """Symmetric inner block K + cI through K = V Λ Vᵀ (one eigendecomposition for all γ)."""

    def __init__(self, K: np.ndarray):
        self.n = K.shape[0]
        if not np.allclose(K, K.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(K).max())):
            raise ValueError("method='eig' of the LS-SVM needs a symmetric kernel matrix")
        self.lam, self.V = np.linalg.eigh(K)

    def factor(self, c):
        den = self.lam + c
        if np.any(den == 0):
            return None
        return 1.0 / den

    def solve(self, inv, R):
        return self.V @ (inv[:, None] * (self.V.T @ R))


# --------------------------------------------------------------------------------------------
# bordered systems [[s I_p, E], [Eᵀ, B]]
# --------------------------------------------------------------------------------------------
def _E(X, p: int, n: int, e=None):
    """E X: the bias-constraint rows (sums over each block of n rows; weighted by the border
    vector ``e`` of a weighted system, see :func:`lssvm_solve`)."""
    if e is None:
        return np.vstack([X[k * n:(k + 1) * n].sum(axis=0) for k in range(p)])
    return np.vstack([e @ X[k * n:(k + 1) * n] for k in range(p)])


def _split_apply(f, X):
    """f(X) for a real-linear f and a complex X, as one real call f([Re X, Im X])."""
    X2 = X.reshape(X.shape[0], -1)
    k = X2.shape[1]
    W = f(np.hstack([X2.real, X2.imag]))
    return (W[:, :k] + 1j * W[:, k:]).reshape((W.shape[0],) + X.shape[1:])


def _real_matmul(A, X):
    """A @ X for a real (dense or sparse) A and a real or complex X (numpy would cast a dense A
    to complex: an n×n complex copy and a slower product)."""
    return A @ X if np.isrealobj(X) else _split_apply(A.__matmul__, X)


class _Bordered:
    """Solve [[s I_p, E], [Eᵀ, B(c)]] x = r for any right-hand side, given an inner solver.

    ``rhs``: an inner right-hand side solved together with the border columns (one call of the
    inner solver; :meth:`solve` with that very array reuses it).
    """

    def __init__(self, inner, fac, p: int, n: int, s=0.0, e=None, rhs=None):
        self.inner, self.fac, self.p, self.n, self.s, self.e = inner, fac, p, n, s, e
        N = p * n
        ones = np.zeros((N, p))
        for k in range(p):
            ones[k * n:(k + 1) * n, k] = 1.0 if e is None else e
        self._rhs, self._Zr = rhs, None
        if rhs is None:
            self.Zb = inner.solve(fac, ones)  # B⁻¹ Eᵀ
        else:
            Z = inner.solve(fac, np.hstack([ones.astype(rhs.dtype), rhs]))
            self.Zb, self._Zr = Z[:, :p], Z[:, p:]
        self.S = S = _E(self.Zb, p, n, e) - s * np.eye(p)
        cond = np.linalg.cond(S) if np.all(np.isfinite(S)) else np.inf
        self.ok = bool(np.isfinite(cond) and cond < 1e15)

    def solve(self, r_bias, r_inner):
        """Return (bias (p, k), inner solution (p·n, k))."""
        Zr = self._Zr if r_inner is self._rhs else self.inner.solve(self.fac, r_inner)
        rhs = _E(Zr, self.p, self.n, self.e) - r_bias
        b = np.linalg.solve(self.S, rhs)
        x = Zr - self.Zb @ b
        return b, x

    def apply_inv(self, v):
        """A⁻¹ v for a full-length vector/matrix v (bias rows first)."""
        v = v.reshape(v.shape[0], -1)
        b, x = self.solve(v[: self.p], v[self.p:])
        return np.vstack([b, x])


def _inv_norm1_estimate(apply_inv, N: int, max_iter: int = 5) -> float:
    """Hager–Higham estimate of ‖A⁻¹‖₁ for symmetric A (deterministic; LAPACK xLACON idea)."""
    x = np.full((N, 1), 1.0 / N)
    est, est_old = 0.0, -1.0
    j_old = -1
    for it in range(max_iter):
        y = apply_inv(x)
        if not np.all(np.isfinite(y)):
            return np.inf
        est = float(np.abs(y).sum())
        if it > 0 and est <= est_old:
            break
        est_old = est
        xi = np.where(y.real >= 0, 1.0, -1.0)
        z = apply_inv(xi).real
        if not np.all(np.isfinite(z)):
            return np.inf
        j = int(np.argmax(np.abs(z)))
        if it > 0 and (j == j_old or np.abs(z[j, 0]) <= float((z * x).sum())):
            break
        x = np.zeros((N, 1))
        x[j] = 1.0
        j_old = j
    alt = np.array([(-1.0) ** i * (1.0 + i / max(N - 1, 1)) for i in range(N)])[:, None]
    y = apply_inv(alt)
    if not np.all(np.isfinite(y)):
        return np.inf
    return max(est, 2.0 * float(np.abs(y).sum()) / (3.0 * N))


@dataclass
class Solution:
    """Dual solution in signed coefficients, as returned by the LS-SVM / AsK-LS solvers.

    Parameters
    ----------
    bias : ndarray of shape (p, k)
        (b1, b2) for AsK-LS (p = 2), b for LS-SVM (p = 1); one column per right-hand side.
    coef : list of ndarray of shape (n, k)
        [ã, b̃] = [α⊙y, β⊙y] for AsK-LS, [α⊙y] for LS-SVM.
    C : float
        The regularisation constant (γ of He et al. (2023)).
    rcond : float, default nan
        The 1-norm reciprocal condition estimate of the system (NaN when not estimated).
    fallback : bool, default False
        Whether the ridge-regularised solution was used.
    info : dict, optional
        Solver details (``'method'``, and ``'factorization'`` for :func:`lssvm_solve`).

    See Also
    --------
    askls_solve : Returns a Solution of eq. (6).
    lssvm_solve : Returns a Solution of eq. (4).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.lssvm import lssvm_solve
    >>> K = np.eye(3) + 0.5
    >>> sol = lssvm_solve(K, np.array([1.0, -1.0, 1.0]), C=1.0)
    >>> sol.bias.shape, sol.coef[0].shape, sol.fallback
    ((1, 1), (3, 1), False)
    """

    bias: np.ndarray
    coef: list
    C: float
    rcond: float = np.nan
    fallback: bool = False
    info: dict = field(default_factory=dict)

    @property
    def gamma(self) -> float:
        """Deprecated name of :attr:`C` (renamed in 0.2, removed in 0.3)."""
        warnings.warn("Solution.gamma was renamed Solution.C in 0.2 and will be removed in 0.3",
                      FutureWarning, stacklevel=2)
        return self.C


def _abs_sums_max(K, block: int = 512, rows: bool = True) -> tuple[float, float]:
    """(max row sum (0 unless ``rows``), max column sum) of ``|K|`` — dense K by row blocks
    (no n×n temporary)."""
    if isinstance(K, np.ndarray):
        cs = np.zeros(K.shape[1])
        rs = np.zeros(K.shape[0])
        for i in range(0, K.shape[0], block):
            a = np.abs(K[i:i + block])
            cs += a.sum(axis=0)
            if rows:
                rs[i:i + block] = a.sum(axis=1)
        return float(rs.max(initial=0.0)), float(cs.max(initial=0.0))
    a = abs(K)
    return (float(np.asarray(a.sum(axis=1)).max()) if rows else 0.0,
            float(np.asarray(a.sum(axis=0)).max()))


def _norm1(K, c, e=None, sums=None, asym: bool = True) -> float:
    """1-norm bound of the bordered matrix (AsK-LS ``asym``: Kᵀ's columns, K's rows, count too;
    else r = 0 leaves the column sums)."""
    n, one = (K.shape[0], 1.0) if e is None else (float(e.sum()), float(e.max()))
    r, cs = _abs_sums_max(K, rows=asym) if sums is None else sums
    return float(max(n, one + abs(c) + r, one + abs(c) + cs))


#: at most this many steps of iterative refinement (:func:`_refine`); one or two are typical
_REFINE_STEPS = 4
#: the normwise backward error below which a solution is not refined: a few units of
#: rounding, what a backward-stable (LU) solve of the bordered system gives
_REFINE_ETA = 8 * np.finfo(np.float64).eps


def _refine(inner, bord: _Bordered, c, p: int, n: int, e, r_bias, r_inner, b, x,
            norm1: float | None = None):
    """Iterative refinement of a solution (b, x) of [[0, E], [Eᵀ, B(c)]] [b; x] = r.

    The Schur-complement and eigen solvers of the AsK-LS inner block (He et al. (2023),
    eq. 6) work with M = c²I − KᵀK, whose condition number is up to cond(K)²: they are not
    backward stable for eq. (6), and their error grows like cond(K)²·eps where that of a
    backward-stable solve grows like cond(A)·eps (near the rcond threshold, coefficient errors
    of 1e-2 relative instead of 1e-9). The residual is formed with K itself (two products,
    O(n²k)); a column whose normwise backward error ‖r‖∞ / (‖A‖∞‖x‖∞ + ‖rhs‖∞) is already at
    the rounding level (≤ ``_REFINE_ETA``: what a backward-stable solve gives) is left as it
    is, the others are corrected with the same factorisation — fixed-precision refinement,
    which converges while the solver's relative error is below one — while their residual
    decreases, so the result is never worse than the first solve. Inner solvers without
    ``apply`` (the LS-SVM's Cholesky / LU of K + cI: backward stable) are left as they are.

    Parameters
    ----------
    inner : object
        The inner solver (``apply(c, R)`` = B(c) R when it refines).
    bord : _Bordered
        The bordered solver built on ``inner`` and its factorisation.
    c : float
        The diagonal 1/C of the inner block.
    p, n : int
        Number of bias unknowns (blocks) and rows per block.
    e : ndarray or None
        The border vector (√v of a weighted system; None for ones).
    r_bias, r_inner : ndarray
        The right-hand side, (p, k) and (p·n, k).
    b, x : ndarray
        The solution to refine, (p, k) and (p·n, k).
    norm1 : float or None, default None
        ‖A‖₁ = ‖A‖∞ (A is symmetric) or a bound of it; None refines every column.

    Returns
    -------
    tuple of ndarray
        The refined (b, x).
    """
    apply = getattr(inner, "apply", None)
    if apply is None:
        return b, x
    border = np.ones(n) if e is None else np.asarray(e, dtype=np.float64)
    b, x = b.copy(), x.copy()
    rhs = np.maximum(np.abs(r_bias).max(axis=0), np.abs(r_inner).max(axis=0))

    def residual(cols, bc, xc):
        Etb = np.vstack([border[:, None] * bc[k][None, :] for k in range(p)])
        rb = r_bias[:, cols] - _E(xc, p, n, e)
        rx = r_inner[:, cols] - Etb - apply(c, xc)
        return rb, rx, np.maximum(np.abs(rb).max(axis=0), np.abs(rx).max(axis=0))

    cols = np.arange(x.shape[1])
    rb, rx, res = residual(cols, b, x)
    for step in range(_REFINE_STEPS + 1):
        xmax = np.maximum(np.abs(b[:, cols]).max(axis=0), np.abs(x[:, cols]).max(axis=0))
        if norm1 is not None:  # columns not yet at a backward-stable solve's rounding level
            active = res > _REFINE_ETA * (norm1 * xmax + rhs[cols])
            cols, rb, rx, res = cols[active], rb[:, active], rx[:, active], res[active]
        if cols.size == 0 or step == _REFINE_STEPS:
            break
        db, dx = bord.solve(rb, rx)
        if not (np.all(np.isfinite(db)) and np.all(np.isfinite(dx))):
            break
        b2, x2 = b[:, cols] + db, x[:, cols] + dx
        rb2, rx2, res2 = residual(cols, b2, x2)
        better = res2 < res  # a column stops when its residual no longer decreases
        b[:, cols[better]], x[:, cols[better]] = b2[:, better], x2[:, better]
        cols, rb, rx, res = cols[better], rb2[:, better], rx2[:, better], res2[better]
    return b, x


def _solve_bordered(inner, c, p, n, Y, norm1, rcond_tol, ridge, check_rcond=True, e=None):
    """Core: solve with the rcond check and the ridge fallback. Y: (n, k) signed targets;
    ``e`` the border vector (√v of a weighted system, None for ones)."""
    k = Y.shape[1]
    r_inner = np.vstack([Y] * p)
    r_bias = np.zeros((p, k))
    fac = inner.factor(c)
    rcond = 0.0
    bord = None
    if fac is not None:
        bord = _Bordered(inner, fac, p, n, 0.0, e)
        if bord.ok:
            if check_rcond and norm1 is not None:
                inv = _inv_norm1_estimate(bord.apply_inv, p + p * n)
                rcond = 0.0 if not np.isfinite(inv) or inv == 0 else 1.0 / (norm1 * inv)
            else:
                rcond = np.nan
    good = bord is not None and bord.ok and (not check_rcond or not rcond < rcond_tol)
    if good:
        b, x = bord.solve(r_bias, r_inner)
        if np.all(np.isfinite(x)) and np.all(np.isfinite(b)):
            b, x = _refine(inner, bord, c, p, n, e, r_bias, r_inner, b, x, norm1)
            return b, x, rcond, False
    if ridge is None or ridge <= 0:
        raise np.linalg.LinAlgError(
            f"the LS-SVM system is singular or ill-conditioned (rcond ≈ {rcond:.2e} < "
            f"rcond_tol={rcond_tol}) and ridge fallback is disabled (ridge={ridge})"
        )
    lsqr = hasattr(inner, "ridge_solve")
    warnings.warn(
        f"ill-conditioned LS-SVM system (rcond ≈ {rcond:.2e} < {rcond_tol:g}); using the "
        f"ridge-regularised normal equations (AᵀA + {ridge:g}·I)⁻¹Aᵀb as the paper's code does"
        + (" (damped LSQR on the sparse system)" if lsqr else ""),
        IllConditionedWarning,
        stacklevel=4,
    )
    if lsqr:
        b, x = inner.ridge_solve(c, p, Y, ridge, e=e)
        return b, x, rcond, True
    mu = float(np.sqrt(ridge))
    cz = complex(c, -mu)
    facz = inner.factor(cz)
    if facz is None:  # pragma: no cover - the complex shift is never singular in exact arithmetic
        raise np.linalg.LinAlgError("ridge-regularised system could not be factorised")
    r_inner_z = r_inner.astype(complex)
    bordz = _Bordered(inner, facz, p, n, complex(0.0, -mu), e, rhs=r_inner_z)
    b, x = bordz.solve(r_bias.astype(complex), r_inner_z)
    return b.real.copy(), x.real.copy(), rcond, True


def _as_targets(Y, name: str = "Y"):
    """The targets as a float64 (n, k) array: real, finite, 1-D (one column) or 2-D."""
    Y = check_regression_targets(Y, None, name)
    return Y[:, None] if Y.ndim == 1 else Y


def _check_kernel_matrix(K, name: str = "K"):
    """A solver's kernel matrix: square and 2-D, real and finite; a dense one as float64 (the
    systems are solved in float64), a sparse one as given. Errors name ``name``."""
    shape = K.shape if sp.issparse(K) else np.shape(K)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{name} must be a square 2-D kernel matrix (n, n), got shape "
                         f"{tuple(shape)}")
    if sp.issparse(K):
        if np.issubdtype(K.dtype, np.complexfloating):
            raise ValueError(f"Complex data not supported: {name} is complex-valued; expected "
                             "a real kernel matrix")
        if not (np.issubdtype(K.dtype, np.number) or K.dtype == bool):
            raise TypeError(f"{name} must be numeric; got dtype {K.dtype}")
        if not all_finite(K.data):
            raise ValueError(f"{name} contains NaN or infinity; expected finite values")
        return K
    return as_data(K, name, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# public functional API
# --------------------------------------------------------------------------------------------
def _check_weights(sample_weight, n: int):
    """None (all ones) or a float64 (n,) array of finite weights > 0 (``sample_weight``)."""
    if sample_weight is None:
        return None
    v = as_weights(sample_weight, n, "sample_weight", "row of the kernel matrix")
    if np.any(v <= 0):
        raise ValueError("sample_weight must be finite and > 0 in the solvers (the estimators "
                         "drop samples of weight 0 before solving)")
    return None if np.all(v == 1.0) else v


def _absorb_weight_scale(v, C: float, name: str = "C"):
    """(v / s, C·s) for a power of four s that brings max(v) into [1, 4) when it is far from 1.

    The weighted systems depend on the weights and C only through the products C·vᵢ (the
    diagonal diag(1/(C v))), so this is the same problem; it keeps the scaled kernel
    diag(√v) K diag(√v) and its products representable (weights like 1e300 overflowed them,
    and weights like 1e50 already gave wrong coefficients). Powers of four are exact in
    floating point. Weights within [2⁻¹⁶, 2¹⁶] are left as they are.
    """
    if v is None:
        return None, C
    top = float(v.max())
    if 2.0 ** -16 <= top <= 2.0 ** 16:
        return v, C
    j = int(np.floor(np.log2(top) / 2))
    C_eff = C * 4.0 ** j if abs(j) < 511 else C * 2.0 ** j * 2.0 ** j
    if not np.isfinite(C_eff) or C_eff <= 0:
        raise ValueError(
            f"sample_weight (largest {top:.3g}) times {name}={C!r} is outside the float64 "
            f"range (the weighted problem depends on the products {name}·sample_weight only); "
            f"rescale sample_weight and {name} so that {name}·sample_weight is representable")
    return np.ldexp(v, -2 * j), C_eff


def _scale_kernel(K, e):
    """diag(e) K diag(e) (dense or sparse) — the symmetric scaling of a weighted system."""
    if sp.issparse(K):
        d = sp.diags(e)
        return sp.csr_matrix(d @ K @ d)
    K = np.asarray(K, dtype=np.float64)
    return e[:, None] * K * e[None, :]




def askls_solve(
    K,
    Y,
    C: float | None = None,
    *,
    method: str = "schur",
    rcond_tol: float = 1e-8,
    ridge: float | None = 1.0,
    check_rcond: bool = True,
    sample_weight=None,
    gamma: float | None = None,
    _inner=None,
) -> Solution:
    """Solve the AsK-LS dual system, He et al. (2023) eq. (6), for one or several ±1 label columns.

    Parameters
    ----------
    K : array-like, sparse matrix or tuple
        (n, n) asymmetric kernel matrix K_ij = κ(x_i, x_j), dense or sparse (or ``(U, s, W)``
        low-rank factors K ≈ U diag(s) Wᵀ with ``method='lowrank'``).
    Y : array-like of shape (n,) or (n, k)
        Targets (±1 for classification), one system per column.
    C : float
        The regularisation constant γ > 0 of eq. (5)–(6): the weight of the squared errors
        (larger = weaker regularisation, like SVC's C).
    method : {'schur', 'eig', 'lowrank', 'dense'}, default 'schur'
        Schur complement (one n×n LU), eigendecomposition of KᵀK, Woodbury on low-rank
        factors, or the reference LU of the (2n + 2) matrix of eq. (6).
    rcond_tol : float, default 1e-8
        Below this 1-norm rcond estimate the system is treated as ill-conditioned (the
        authors' MATLAB rule) and the ridge-regularised normal equations are solved with an
        :class:`IllConditionedWarning`.
    ridge : float or None, default 1.0
        λ of that fallback (AᵀA + λI)⁻¹Aᵀb; None or 0 raises ``numpy.linalg.LinAlgError``.
    check_rcond : bool, default True
        Estimate rcond at all (False skips the estimate and the fallback).
    sample_weight : array-like of shape (n,), optional
        Weights > 0 of the error terms: the identity blocks I/C become diag(1/(C v_i))
        (weighted LS-SVM, Suykens et al. 2002); an integer weight equals repeating the sample.
    gamma : float, optional
        Former name of ``C`` (``FutureWarning``).

        .. deprecated:: 0.2
            Use ``C``; removed in 0.3.
    _inner : object, optional
        Internal: a factorisation prepared by the caller (the path functions); not part of
        the public interface.

    Returns
    -------
    Solution
        Signed coefficients ``coef = [ã, b̃]``, ``bias = (b1, b2)``:
        f_s(x) = κ(x, X)·b̃ + b1, f_t(x) = κ(X, x)ᵀ·ã + b2 (eq. 7).

    Raises
    ------
    ValueError
        If ``method`` is unknown, C is not positive, or Y's rows do not match K.
    TypeError
        If neither C nor ``gamma`` is given.
    MemoryBudgetError
        If the method's dense copies of K (counted per method, before any is made) exceed
        ``max_dense_memory``.

    See Also
    --------
    askls_kkt_matrix : The dense (2n + 2) matrix of eq. (6).
    askls_C_path : The same system for a grid of C.
    asymkern.lssvm.AsKLSClassifier : The estimator built on this solver.

    Notes
    -----
    The system of eq. (6) of [1]_ is solved in signed coefficients ã = α ⊙ y, b̃ = β ⊙ y, in
    which its matrix does not depend on the labels (one factorisation for every column of Y);
    the bias unknowns are eliminated by a 2×2 Schur complement.

    References
    ----------
    .. [1] M. He, F. He, L. Shi, X. Huang, J. A. K. Suykens, "Learning with Asymmetric
       Kernels: Least Squares and Feature Interpretation", IEEE TPAMI 45(8), 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.lssvm import askls_solve
    >>> rng = np.random.RandomState(0)
    >>> K = rng.rand(6, 6)
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    >>> sol = askls_solve(K, y, C=1.0)
    >>> a, b = sol.coef
    >>> a.shape, b.shape, sol.bias.shape
    ((6, 1), (6, 1), (2, 1))
    >>> ref = askls_solve(K, y, C=1.0, method="dense")
    >>> bool(np.allclose(a, ref.coef[0]))
    True
    """
    C = _check_C(_renamed_C(C, gamma, "askls_solve"))
    Y2 = _as_targets(Y)
    if _inner is None and method != "lowrank":
        K = _check_kernel_matrix(K)
    n_rows = Y2.shape[0]
    v, C_sys = _absorb_weight_scale(_check_weights(sample_weight, n_rows), C)
    c = 1.0 / C_sys
    if _inner is None and method in ("dense", "schur", "eig"):
        sparse = sp.issparse(K)
        route = "askls schur sparse" if sparse and method == "schur" else f"askls {method}"
        _check_solve_memory(K, route, f"askls_solve(method={method!r})",
                            (v is not None and method != "dense")
                            + (sparse and method != "schur"))
    if method == "dense":
        return replace(_askls_dense(K, Y2, C_sys, rcond_tol, ridge, v, check_rcond), C=C)
    e = None if v is None else np.sqrt(v)
    if _inner is not None:  # built by the caller on the (scaled) kernel
        inner = _inner
    elif method == "schur":
        Kw = K if e is None else _scale_kernel(K, e)
        inner = (_AsymSchurSparse(Kw) if sp.issparse(Kw)
                 else _AsymSchur(np.asarray(Kw, dtype=np.float64)))
    elif method == "eig":
        Kw = np.asarray(K.toarray() if sp.issparse(K) else K, dtype=np.float64)
        inner = _AsymEig(Kw if e is None else _scale_kernel(Kw, e))
    elif method == "lowrank":
        U, s, W = K
        U, W = np.asarray(U, float), np.asarray(W, float)
        if e is not None:
            U, W = e[:, None] * U, e[:, None] * W
        inner = _AsymLowRank(U, s, W)
    else:
        raise ValueError(f"method must be 'schur', 'eig', 'lowrank' or 'dense', got {method!r}")
    n = inner.n
    if n_rows != n:
        raise ValueError(f"Y has {n_rows} rows but the kernel matrix has {n}")
    Ys = Y2 if e is None else e[:, None] * Y2
    if isinstance(inner, _AsymLowRank):  # the reduced form (shared with the Dask executor)
        red = askls_lowrank_reduced(LowRankStats.of(inner.U, inner.W, Ys, e=e), inner.s,
                                    C_sys, ridge=ridge)
        a, b = red.expand(inner.U, inner.W, Ys, e)
        if e is not None:
            a, b = e[:, None] * a, e[:, None] * b
        return Solution(red.bias, [a, b], C, np.nan, red.fallback, {"method": "lowrank"})
    norm1 = _norm1(inner.K, c, e=e, sums=inner.abs_sums() if isinstance(inner, _AsymSchur)
                   else None)
    b, x, rcond, fb = _solve_bordered(inner, c, 2, n, Ys, norm1, rcond_tol, ridge, check_rcond,
                                      e=e)
    if e is not None:
        x = np.vstack([e[:, None] * x[:n], e[:, None] * x[n:]])
    return Solution(b, [x[:n], x[n:]], C, rcond, fb, {"method": method})


def askls_C_path(K, Y, Cs, *, method: str = "eig", rcond_tol: float = 1e-8,
                 ridge: float | None = 1.0, check_rcond: bool = True,
                 sample_weight=None) -> list[Solution]:
    """Solve eq. (6) for every C (γ of the paper) in ``Cs`` sharing the C-independent work.

    ``method='eig'``: one eigendecomposition KᵀK = VΛVᵀ, then O(n²) per C (a few matrix–vector
    products). ``method='schur'``: KᵀK once (one GEMM), then one n×n LU per C — BLAS-3 only,
    better for short grids or a CPU shared with other jobs (the eigensolver is partly BLAS-2).

    Parameters
    ----------
    K : array-like of shape (n, n)
        Dense asymmetric kernel matrix.
    Y : array-like of shape (n,) or (n, k)
        Targets (±1 for classification).
    Cs : iterable of float
        Regularisation constants, each > 0.
    method : {'eig', 'schur'}, default 'eig'
        How the C-independent work is shared (see above).
    rcond_tol : float, default 1e-8
        Ill-conditioning threshold, as in :func:`askls_solve`.
    ridge : float or None, default 1.0
        λ of the ridge fallback, as in :func:`askls_solve`.
    check_rcond : bool, default True
        Estimate rcond at all.
    sample_weight : array-like of shape (n,), optional
        As in :func:`askls_solve` (the scaled kernel is formed once).

    Returns
    -------
    list of Solution
        One solution per C, in the order of ``Cs``.

    Raises
    ------
    ValueError
        If ``method`` is unknown or some C is not positive.
    MemoryBudgetError
        If the method's dense copies of K (counted per method, before any is made) exceed
        ``max_dense_memory``.

    See Also
    --------
    askls_solve : One C.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.lssvm import askls_C_path
    >>> K = np.random.RandomState(0).rand(6, 6)
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    >>> [sol.C for sol in askls_C_path(K, y, [0.1, 1.0, 10.0])]
    [0.1, 1.0, 10.0]
    """
    if method not in ("eig", "schur"):
        raise ValueError(f"method must be 'eig' or 'schur', got {method!r}")
    K = _check_kernel_matrix(K)
    _as_targets(Y)  # before the factorisation
    _check_solve_memory(K, f"askls path {method}", f"askls_C_path(method={method!r})",
                        float(sample_weight is not None))
    K = np.asarray(K, dtype=np.float64)
    w = _check_weights(sample_weight, K.shape[0])
    # the kernel is scaled once by the rescaled weights v = w/s; askls_solve rescales w to the
    # same v for each C and multiplies C by s (the problem depends on C·w only), so the
    # weights passed on are the caller's w, not v
    v, _ = _absorb_weight_scale(w, 1.0)
    Kw = K if v is None else _scale_kernel(K, np.sqrt(v))
    inner = (_AsymEig if method == "eig" else _AsymSchur)(Kw)
    return [
        askls_solve(K, Y, C, method=method, rcond_tol=rcond_tol, ridge=ridge,
                    check_rcond=check_rcond, sample_weight=w, _inner=inner)
        for C in Cs
    ]


def lssvm_solve(K, Y, C: float | None = None, *, method: str = "chol", rcond_tol: float = 1e-8,
                ridge: float | None = 1.0, check_rcond: bool = True,
                symmetric: bool | None = None, overwrite_K: bool = False,
                sample_weight=None, gamma: float | None = None, _inner=None) -> Solution:
    """Solve the classic LS-SVM system (He et al., 2023, eq. 4) in signed form.

    The system is [[0, 1ᵀ], [1, K + I/C]] [b, α⊙y] = [0, y] (for regression, y is the real
    target). The bias is eliminated by the bordered (Schur-complement) solve: with
    Z = (K + I/C)⁻¹[1, y], b = (1ᵀZ_y)/(1ᵀZ_1) and α⊙y = Z_y − Z_1 b — two right-hand sides
    of the inner block K + I/C, which is SPD for a PSD kernel (``method='chol'``: Cholesky,
    LU otherwise).
    ``symmetric`` (``method='chol'``): ``True`` when K is the Gram matrix of a kernel flagged
    symmetric on one set, ``False`` never tries Cholesky, ``None`` (default) checks K to a
    rounding-level tolerance. ``info['factorization']`` says which factorisation ran.
    ``overwrite_K`` (with ``method='chol'``, a symmetric float64 K): factor in K's memory,
    saving an n×n copy; K's contents are then unspecified (for callers that discard K).

    Parameters
    ----------
    K : array-like or sparse matrix of shape (n, n)
        Kernel matrix.
    Y : array-like of shape (n,) or (n, k)
        Targets (±1 labels or real values), one system per column.
    C : float
        The regularisation constant γ > 0 of eq. (4) (weight of the squared errors: larger =
        weaker regularisation, like SVC's C).
    method : {'chol', 'eig', 'dense'}, default 'chol'
        Bordered solve with Cholesky (LU when K + I/C is not SPD), with an eigendecomposition
        of K, or the reference LU of the (n + 1) system.
    rcond_tol : float, default 1e-8
        Ill-conditioning threshold of the 1-norm rcond estimate (see :func:`askls_solve`).
    ridge : float or None, default 1.0
        λ of the ridge fallback; None or 0 raises ``numpy.linalg.LinAlgError`` instead.
    check_rcond : bool, default True
        Estimate rcond at all.
    symmetric : bool or None, default None
        Whether K is symmetric (see above).
    overwrite_K : bool, default False
        Allow factoring in K's memory (see above).
    sample_weight : array-like of shape (n,), optional
        Weights > 0 of the squared errors: I/C becomes diag(1/(C v_i)).
    gamma : float, optional
        Former name of ``C`` (``FutureWarning``).

        .. deprecated:: 0.2
            Use ``C``; removed in 0.3.
    _inner : object, optional
        Internal: a factorisation prepared by the caller (the path functions); not part of
        the public interface.

    Returns
    -------
    Solution
        ``coef = [α⊙y]`` (n, k) and ``bias`` (1, k): f(x) = κ(x, X)·(α⊙y) + b.

    Raises
    ------
    ValueError
        If ``method`` is unknown, C is not positive, or Y's rows do not match K.
    TypeError
        If neither C nor ``gamma`` is given.
    MemoryBudgetError
        If the method's dense copies of K (counted per method, before any is made) exceed
        ``max_dense_memory``.

    See Also
    --------
    lssvm_C_path : The same system for a grid of C.
    askls_solve : The asymmetric (AsK-LS) system of eq. (6).

    References
    ----------
    .. [1] M. He, F. He, L. Shi, X. Huang, J. A. K. Suykens, "Learning with Asymmetric
       Kernels: Least Squares and Feature Interpretation", IEEE TPAMI 45(8), 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.lssvm import lssvm_solve
    >>> X = np.random.RandomState(0).randn(8, 2)
    >>> K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))
    >>> y = np.sign(X[:, 0])
    >>> sol = lssvm_solve(K, y, C=10.0)
    >>> sol.info["factorization"], sol.coef[0].shape
    ('cholesky', (8, 1))
    >>> bool(abs(sol.coef[0].sum()) < 1e-10)  # the border row: 1ᵀ(α⊙y) = 0
    True
    """
    C = _check_C(_renamed_C(C, gamma, "lssvm_solve"))
    Y2 = _as_targets(Y)
    if _inner is None:
        K = _check_kernel_matrix(K)
    sparse = sp.issparse(K)
    # the dense routes (a sparse K's Cholesky is a sparse factorisation, not checked here)
    if _inner is None and (method in ("eig", "dense") or (method == "chol" and not sparse)):
        weights = 0.0 if sample_weight is None or method == "dense" else (
            2.0 if method == "eig" else 1.0)
        _check_solve_memory(K, f"lssvm {method}", f"lssvm_solve(method={method!r})",
                            weights + 2.6 * sparse)  # a sparse K densified, with temporaries
    if not sp.issparse(K):
        K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    if Y2.shape[0] != n:
        raise ValueError(f"Y has {Y2.shape[0]} rows but the kernel matrix has {n}")
    v, C_sys = _absorb_weight_scale(_check_weights(sample_weight, n), C)
    c = 1.0 / C_sys
    if method == "dense":
        return replace(_lssvm_dense(np.asarray(K.toarray() if sp.issparse(K) else K), Y2,
                                    C_sys, rcond_tol, ridge, v, check_rcond), C=C)
    e = None if v is None else np.sqrt(v)
    if e is not None and _inner is None:
        K, overwrite_K = _scale_kernel(K, e), True  # a fresh matrix of our own
    if _inner is not None:  # built by the caller on the (scaled) kernel
        inner = _inner
    elif method == "chol":
        inner = _SymSparse(K) if sp.issparse(K) else _SymChol(K, symmetric, overwrite_K)
    elif method == "eig":  # a sparse K densified: the eigendecomposition is dense anyway
        inner = _SymEig(np.asarray(K.toarray(), dtype=np.float64) if sp.issparse(K) else K)
    else:
        raise ValueError(f"method must be 'chol', 'eig' or 'dense', got {method!r}")
    Ys = Y2 if e is None else e[:, None] * Y2
    # (K is already the scaled matrix unless a caller's _inner was built on it)
    norm1 = _norm1(K if (e is None or _inner is None) else _scale_kernel(K, e), c, e=e,
                   asym=False)
    b, x, rcond, fb = _solve_bordered(inner, c, 1, n, Ys, norm1, rcond_tol, ridge, check_rcond,
                                      e=e)
    if e is not None:
        x = e[:, None] * x
    info = {"method": method}
    if getattr(inner, "factorization", None) is not None:
        info["factorization"] = inner.factorization
    return Solution(b, [x], C, rcond, fb, info)


def lssvm_C_path(K, Y, Cs, *, sample_weight=None, **kwargs) -> list[Solution]:
    """Classic LS-SVM for every C in ``Cs`` with one eigendecomposition of K (O(n²) per C).

    Parameters
    ----------
    K : array-like of shape (n, n)
        Dense kernel matrix.
    Y : array-like of shape (n,) or (n, k)
        Targets.
    Cs : iterable of float
        Regularisation constants, each > 0.
    sample_weight : array-like of shape (n,), optional
        As in :func:`lssvm_solve` (the scaled kernel is decomposed once).
    **kwargs
        Further keywords of :func:`lssvm_solve` (``rcond_tol``, ``ridge``, ``check_rcond``).

    Returns
    -------
    list of Solution
        One solution per C, in the order of ``Cs``.

    Raises
    ------
    ValueError
        If some C is not positive or Y's rows do not match K.
    MemoryBudgetError
        If the eigendecomposition's dense copies of K exceed ``max_dense_memory``.

    See Also
    --------
    lssvm_solve : One C.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.lssvm import lssvm_C_path
    >>> K = np.eye(4) + 0.5
    >>> sols = lssvm_C_path(K, np.array([1.0, -1.0, 1.0, -1.0]), [1.0, 10.0])
    >>> len(sols), sols[1].C
    (2, 10.0)
    """
    K = _check_kernel_matrix(K)
    _as_targets(Y)  # before the factorisation
    _check_solve_memory(K, "lssvm eig", "lssvm_C_path", 2.0 * (sample_weight is not None))
    K = np.asarray(K, dtype=np.float64)
    w = _check_weights(sample_weight, K.shape[0])
    # as in askls_C_path: the kernel scaled once by v = w/s, the caller's w passed on (each
    # lssvm_solve rescales it to the same v and multiplies C by s)
    v, _ = _absorb_weight_scale(w, 1.0)
    inner = _SymEig(K if v is None else _scale_kernel(K, np.sqrt(v)))
    return [lssvm_solve(K, Y, C, method="eig", sample_weight=w, _inner=inner, **kwargs)
            for C in Cs]


def askls_gamma_path(K, Y, gammas, **kwargs) -> list[Solution]:
    """Deprecated name of :func:`askls_C_path` (renamed in 0.2, removed in 0.3).

    .. deprecated:: 0.2
        Use :func:`askls_C_path`; removed in 0.3.

    Parameters
    ----------
    K : array-like of shape (n, n)
        Dense asymmetric kernel matrix.
    Y : array-like of shape (n,) or (n, k)
        Targets.
    gammas : iterable of float
        The regularisation constants (now called C).
    **kwargs
        Keywords of :func:`askls_C_path`.

    Returns
    -------
    list of Solution
        One solution per constant.

    See Also
    --------
    askls_C_path : The new name.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from asymkern.lssvm import askls_gamma_path
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", FutureWarning)
    ...     sols = askls_gamma_path(np.eye(4) + 0.5, np.array([1.0, -1.0, 1.0, -1.0]), [2.0])
    >>> len(sols)
    1
    """
    return _renamed_path("askls_gamma_path", askls_C_path, K, Y, gammas, kwargs)


def lssvm_gamma_path(K, Y, gammas, **kwargs) -> list[Solution]:
    """Deprecated name of :func:`lssvm_C_path` (renamed in 0.2, removed in 0.3).

    .. deprecated:: 0.2
        Use :func:`lssvm_C_path`; removed in 0.3.

    Parameters
    ----------
    K : array-like of shape (n, n)
        Dense kernel matrix.
    Y : array-like of shape (n,) or (n, k)
        Targets.
    gammas : iterable of float
        The regularisation constants (now called C).
    **kwargs
        Keywords of :func:`lssvm_C_path`.

    Returns
    -------
    list of Solution
        One solution per constant.

    See Also
    --------
    lssvm_C_path : The new name.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from asymkern.lssvm import lssvm_gamma_path
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", FutureWarning)
    ...     sols = lssvm_gamma_path(np.eye(4) + 0.5, np.array([1.0, -1.0, 1.0, -1.0]), [1.0])
    >>> len(sols)
    1
    """
    return _renamed_path("lssvm_gamma_path", lssvm_C_path, K, Y, gammas, kwargs)


def _renamed_path(old: str, new, K, Y, gammas, kwargs) -> list[Solution]:
    """``new(K, Y, gammas, **kwargs)`` after the FutureWarning of the deprecated name ``old``."""
    warnings.warn(f"{old} was renamed {new.__name__} in 0.2 (the LS-SVM constant γ is "
                  "now called C) and will be removed in 0.3", FutureWarning, stacklevel=3)
    return new(K, Y, gammas, **kwargs)


# --------------------------------------------------------------------------------------------
# dense references (obviously correct; O((2n+2)³))
# --------------------------------------------------------------------------------------------
def askls_kkt_matrix(K, y, C: float | None = None, sample_weight=None, *,
                     gamma: float | None = None) -> np.ndarray:
    """The (2n + 2) matrix of He et al. (2023) eq. (6) with H = (y yᵀ) ⊙ K (labels y ∈ {±1}).

    The matrix is [[0, 0, yᵀ, 0], [0, 0, 0, yᵀ], [y, 0, I/C, H], [0, y, Hᵀ, I/C]] for the
    unknowns (b1, b2, α, β); it is the dense reference of :func:`askls_solve`
    (``method='dense'``).

    Parameters
    ----------
    K : array-like of shape (n, n)
        Kernel matrix K_ij = κ(x_i, x_j).
    y : array-like of shape (n,)
        Labels in {−1, +1}.
    C : float
        The regularisation constant γ > 0 of eq. (6).
    sample_weight : array-like of shape (n,), optional
        Weights v: the identity blocks I/C become diag(1/(C v_i)) (the weighted primal, see
        :func:`askls_solve`).
    gamma : float, optional
        Former name of ``C`` (``FutureWarning``).

        .. deprecated:: 0.2
            Use ``C``; removed in 0.3.

    Returns
    -------
    ndarray of shape (2n + 2, 2n + 2)
        The system matrix.

    Raises
    ------
    ValueError
        If C is not positive.
    TypeError
        If neither C nor ``gamma`` is given.
    MemoryBudgetError
        If the (n + 1)×(n + 1) matrix and the copies of K its assembly holds exceed
        ``max_dense_memory``.

    See Also
    --------
    askls_solve : Solves this system without forming it.

    References
    ----------
    .. [1] M. He, F. He, L. Shi, X. Huang, J. A. K. Suykens, "Learning with Asymmetric
       Kernels: Least Squares and Feature Interpretation", IEEE TPAMI 45(8), 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.lssvm import askls_kkt_matrix
    >>> A = askls_kkt_matrix(np.eye(3), np.array([1.0, -1.0, 1.0]), C=2.0)
    >>> A.shape, float(A[2, 2])
    ((8, 8), 0.5)
    """
    C = _check_C(_renamed_C(C, gamma, "askls_kkt_matrix"))
    K = _check_kernel_matrix(K)
    y = check_regression_targets(y, None, "y")
    if y.shape != (K.shape[0],):
        raise ValueError(f"y must be 1-D with one label per row of K (shape ({K.shape[0]},)), "
                         f"got shape {y.shape}")
    _check_solve_memory(K, "kkt", "askls_kkt_matrix", float(sp.issparse(K)))
    K = np.asarray(K.toarray() if sp.issparse(K) else K, dtype=np.float64)
    n = K.shape[0]
    v = _check_weights(sample_weight, n)
    d = np.full(n, 1.0 / C) if v is None else 1.0 / (C * v)
    H = y[:, None] * K * y[None, :]
    A = np.zeros((2 * n + 2, 2 * n + 2))
    A[0, 2:n + 2] = y
    A[1, n + 2:] = y
    A[2:n + 2, 0] = y
    A[n + 2:, 1] = y
    A[2:n + 2, 2:n + 2] = np.diag(d)
    A[2:n + 2, n + 2:] = H
    A[n + 2:, 2:n + 2] = H.T
    A[n + 2:, n + 2:] = np.diag(d)
    return A


def _dense_with_fallback(A, rhs, rcond_tol, ridge, check_rcond=True):
    """LU solve of A x = rhs; below ``rcond_tol`` (1-norm estimate) the ridge fallback, unless
    ``check_rcond`` is False (then no estimate, rcond NaN, and only an exactly singular LU
    falls back), as the structured solvers do (:func:`_solve_bordered`)."""
    lu = sla.lu_factor(A, check_finite=False)
    nonsingular = bool(np.all(lu[0].diagonal() != 0))
    if not check_rcond:
        rcond = np.nan if nonsingular else 0.0
        if nonsingular:
            x = sla.lu_solve(lu, rhs, check_finite=False)
            if np.all(np.isfinite(x)):
                return x, rcond, False
    else:
        anorm = np.abs(A).sum(axis=0).max()
        gecon = sla.get_lapack_funcs("gecon", (A,))
        rcond, _ = gecon(lu[0], anorm, norm="1")
        if rcond > rcond_tol and nonsingular:
            return sla.lu_solve(lu, rhs, check_finite=False), float(rcond), False
    if ridge is None or ridge <= 0:
        raise np.linalg.LinAlgError(f"singular system (rcond={rcond:.2e})")
    warnings.warn(
        f"ill-conditioned LS-SVM system (rcond ≈ {rcond:.2e}); ridge-regularised normal equations",
        IllConditionedWarning, stacklevel=4,
    )
    N = A.shape[0]
    x = np.linalg.solve(A.T @ A + ridge * np.eye(N), A.T @ rhs)
    return x, float(rcond), True


def _askls_dense(K, Y2, C, rcond_tol, ridge, v=None, check_rcond=True) -> Solution:
    """Reference: LU of eq. (6) per label column (no signed-coefficient trick); for weights v
    the scaled system of the module notes (kernel S K S, borders S y, x = S x′), so that the
    rcond check and the ridge fallback see the system the fast solvers see."""
    K = np.asarray(K.toarray() if sp.issparse(K) else K, dtype=np.float64)
    n = K.shape[0]
    e = np.ones(n) if v is None else np.sqrt(v)
    k = Y2.shape[1]
    b = np.zeros((2, k))
    a = np.zeros((n, k))
    be = np.zeros((n, k))
    rc, fb = np.inf, False
    for j in range(k):
        y = np.where(Y2[:, j] >= 0, 1.0, -1.0)
        scale = e * np.abs(Y2[:, j])  # |y| = 1 for labels; general targets: rhs = y ⊙ |y|
        A = askls_kkt_matrix(e[:, None] * K * e, y, C)
        A[0, 2:n + 2] *= e
        A[1, n + 2:] *= e
        A[2:n + 2, 0] *= e
        A[n + 2:, 1] *= e
        rhs = np.concatenate([[0.0, 0.0], scale, scale])
        x, r, f = _dense_with_fallback(A, rhs, rcond_tol, ridge, check_rcond)
        rc, fb = (r if np.isnan(r) else min(rc, r)), fb or f
        b[:, j] = x[:2]
        a[:, j] = x[2:n + 2] * y * e
        be[:, j] = x[n + 2:] * y * e
    return Solution(b, [a, be], C, rc, fb, {"method": "dense"})


def _lssvm_dense(K, Y2, C, rcond_tol, ridge, v=None, check_rcond=True) -> Solution:
    """Reference: LU of the (n + 1) system of eq. (4); for weights v the scaled system of the
    module notes ([[0, eᵀ], [e, S K S + I/C]], e = √v, α = S x′), as the fast solvers see it."""
    n = K.shape[0]
    e = np.ones(n) if v is None else np.sqrt(v)
    A = np.zeros((n + 1, n + 1))
    A[0, 1:] = e
    A[1:, 0] = e
    A[1:, 1:] = e[:, None] * K * e + np.diag(np.full(n, 1.0 / C))
    rhs = np.vstack([np.zeros((1, Y2.shape[1])), e[:, None] * Y2])
    x, r, f = _dense_with_fallback(A, rhs, rcond_tol, ridge, check_rcond)
    return Solution(x[:1], [e[:, None] * x[1:]], C, r, f, {"method": "dense"})


def _renamed_C(C, gamma, where: str):
    """``C``, honouring the deprecated keyword ``gamma`` (FutureWarning) of ``where``."""
    C = renamed_argument(C, gamma, "C", "gamma", where=where)
    if C is None:
        raise TypeError(f"{where}() missing the regularisation constant C (γ of He et al. (2023))")
    return C
