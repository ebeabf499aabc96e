"""Numerics of the operator estimators written once for every executor (private).

Each function takes the arrays of one executor (numpy arrays, or torch tensors on their
device) and reaches them only through the executor's primitives
(:class:`asymkern._backend.ArrayOps`, picked by :func:`asymkern._backend.ops_of`), so the
numpy estimators and the torch fits run the same code: the n×n factorisations on the arrays'
device, small host matrices where the caller needs them.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.linalg as sla
from scipy.sparse.linalg import ArpackNoConvergence

from .._backend import NUMPY, DenseMatrix, ops_of
from .._validation import clip_count, user_stacklevel

_EPS = float(np.finfo(np.float64).eps)


def cholesky_shifted(G, shift: float, name: str = "G", overwrite: bool = False):
    """The Cholesky factor of G + shift·I (for the executor's ``cho_solve``).

    Parameters
    ----------
    G : array (n, n)
        A symmetric PSD Gram matrix (numpy or an executor's array; written to only with
        ``overwrite``).
    shift : float
        The Tikhonov shift nε.
    name : str, default='G'
        How G is named in the error.
    overwrite : bool, default=False
        G is the caller's to overwrite (G + shift·I is formed in G itself on executors other
        than numpy, where the factor is a new array; numpy factorises a shifted copy in
        place either way).

    Returns
    -------
    factor
        What ``ops_of(G).cho_solve`` takes.

    Raises
    ------
    ValueError
        If G + shift·I is not positive definite.
    """
    ops = ops_of(G)
    try:
        if ops is NUMPY:  # the factor overwrites the shifted copy: G and one n×n array
            A = np.array(G, dtype=np.float64, order="F")
            A[np.diag_indices_from(A)] += shift
            return sla.cho_factor(A, lower=False, overwrite_a=True, check_finite=False)
        return ops.cho_factor(ops.add_diag_(G if overwrite else owned_copy(G), shift))
    except np.linalg.LinAlgError as exc:
        raise ValueError(f"{name} + nεI is not positive definite (nε = {shift:.3g}); the kernel "
                         "must be PSD and alpha large enough") from exc


#: relative tolerance within which two values of a function tie for its largest magnitude in
#: :func:`value_phases`. Far above the rounding of tied values (exact ties f(x) = −f(x′), a
#: linear kernel on an integer grid: numpy and torch values agreed to 2e-11 of max|f|), far
#: below the real gaps (over the audit's 12 data sets × 18 estimators, the smallest gap
#: between max|f| and a value of another sign or phase was 1e-3 of max|f|, ties excepted;
#: 2e-6 only on samples duplicated up to 1e-6, whose functions differ between the executors
#: by 5e-5 anyway). A gap of the order of ``rtol`` itself can still be decided differently.
SIGN_TIE_RTOL = 1e-8


def value_phases(values, rtol: float = SIGN_TIE_RTOL) -> np.ndarray:
    """The sign (complex phase) rule of every operator estimator, read on function values.

    For the values F[i, j] = f_j(x_i) of each function f_j at the fit's own points, the unit
    factor c_j that makes c_j·f_j(x_p) real and positive, where p is the lowest index i with
    ``|f_j(x_i)|`` ≥ (1 − ``rtol``)·max_i ``|f_j(x_i)|``. Values, unlike the coefficients α of
    f = Σ_i α_i k(x_i, ·), do not depend on which coefficients represent f (not unique where
    the Gram matrix is singular) nor on the basis the eigen- or singular vectors were computed
    in (the eigensolvers' free signs, the landmark whitening), so numpy, torch and Dask fits
    give the same functions (an eigen- or singular function of the operators of Mollenhauer
    et al., 2020, is defined up to a unit factor only). The lowest index settles exact ties as
    f(x) = −f(x′), which a linear kernel on an integer grid produces.

    Parameters
    ----------
    values : array of shape (n, k)
        The functions' values at the fit's points (numpy, or a tensor on its device; real or
        complex). An all-zero column gets the factor 1.
    rtol : float, default=:data:`SIGN_TIE_RTOL`
        The relative tolerance of a tie.

    Returns
    -------
    ndarray of shape (k,)
        The factors (host): ±1.0 (float64) for real values, unit-modulus complex128 for
        complex ones. Multiply the functions' coefficients (columns) by them.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, "Singular Value
       Decomposition of Operators on Reproducing Kernel Hilbert Spaces", in Advances in
       Dynamics, Optimization and Computation, Springer, 2020.
    """
    ops = ops_of(values)
    k = int(values.shape[1])
    if values.shape[0] == 0 or k == 0:
        return np.ones(k)
    cols = np.arange(k)
    mags = abs(values)  # (real, on the executor)
    top = ops.rows(mags, ops.argmax_abs_cols(mags))[cols, cols]
    near = mags >= ops.from_host((1.0 - rtol) * top, mags)
    # the first index of each column's largest 0/1 entry: the lowest index within the tie
    first = ops.argmax_abs_cols(ops.astype(near, np.float64))
    v = ops.rows(values, first)[cols, cols]
    mod = np.abs(v)
    safe = np.where(mod == 0, 1.0, mod)
    c = np.where(mod == 0, 1.0, np.conj(v) / safe)
    return c if np.iscomplexobj(c) else np.sign(c).astype(np.float64)


def owned_copy(A):
    """A copy of the executor's array A that the caller owns (and may overwrite)."""
    return np.array(A, order="F") if ops_of(A) is NUMPY else A.clone()


def sym_eigh(S):
    """All eigenpairs of the exactly symmetric array S, which the caller owns and hands over
    (S is overwritten): on numpy LAPACK works in S itself — its transpose, the same values in
    Fortran order — instead of a copy, with the result of ``ops.eigh(S)`` bit for bit."""
    ops = ops_of(S)
    if ops is NUMPY:
        return sla.eigh(S.T, overwrite_a=True, check_finite=False)
    return ops.eigh(S)


def symmetrize_(T, block: int = 512):
    """(T + Tᵀ)/2 of a square array T the caller owns, in T itself on numpy (entry by entry
    the values of ``0.5 * (T + T.T)``, without its n×n temporary); a new array on other
    executors. Returns the symmetric array."""
    if ops_of(T) is not NUMPY:
        return 0.5 * (T + T.T)
    n = T.shape[0]
    for a in range(0, n, block):
        for b in range(a, n, block):
            I, J = slice(a, min(a + block, n)), slice(b, min(b + block, n))
            S = T[I, J] + T[J, I].T
            S *= 0.5
            T[I, J] = S
            T[J, I] = S.T
    return T


#: ``alpha=None``: a kept spectrum with condition number λ_max / λ_min above 1/√eps ≈ 6.7e7
#: (more than half of the float64 digits of the coefficients lost) is reported by an
#: :class:`IllConditionedGramWarning`
COND_MAX = float(1.0 / np.sqrt(_EPS))


class IllConditionedGramWarning(RuntimeWarning):
    """An unregularised (``alpha=None`` or ``alpha=0``) transfer-operator fit solved with an
    ill-conditioned Gram matrix.

    The pseudo-inverse drops the eigenvalues below the relative cutoff n·eps·λ_max; the warning
    is issued when the kept ones still span a condition number above :data:`COND_MAX` (1/√eps),
    so that the coefficients of the estimator carry less than half of the float64 digits. The
    fitted values stay finite; pass ``alpha > 0`` (e.g. 1e-6) for a regularised estimator.

    See Also
    --------
    asymkern.operators.KoopmanOperator : emits it with ``alpha=None``.
    asymkern.operators.PerronFrobeniusOperator : emits it with ``alpha=None``.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from asymkern.operators import IllConditionedGramWarning, KoopmanOperator
    >>> X = np.repeat(np.linspace(0.0, 1.0, 20)[:, None], 2, axis=0)  # duplicated samples
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = KoopmanOperator(kernel="rbf", alpha=None, n_components=2).fit(X)
    >>> any(issubclass(w.category, IllConditionedGramWarning) for w in caught)
    True
    """


def pinv_spectrum(lam, Q, n: int, what: str, warn: bool = True):
    """The kept part (λ, Q) of the eigendecomposition of a PSD Gram matrix for its
    pseudo-inverse (eigenvalues > n·eps·λ_max: the relative cutoff rcond = n·eps, the default
    of ``scipy.linalg.pinvh`` up to the factor n), with an
    :class:`IllConditionedGramWarning` when their condition number exceeds :data:`COND_MAX`.

    ``lam``, ``Q``: eigenvalues (any order) and eigenvectors on one executor. Raises a
    ``ValueError`` when the matrix is numerically zero (no eigenvalue above the cutoff).
    ``warn=False``: no conditioning warning (a shifted inverse on the kept range, whose shift
    bounds it).
    """
    lmax = float(lam.max()) if lam.shape[0] else 0.0
    if not lmax > 0:
        raise ValueError(f"{what} is numerically zero (no positive eigenvalue); alpha=None "
                         "needs a nonzero kernel matrix: rescale X or change the kernel")
    keep = lam > n * _EPS * lmax
    if not bool(keep.all()):  # (no n×n copy of Q when every eigenpair is kept)
        lam, Q = lam[keep], Q[:, keep]
    cond = lmax / float(lam.min())
    if warn and cond > COND_MAX:
        # relative error of the coefficients up to cond·eps: the digits that rounding can take
        lost = ("all of their digits" if cond * _EPS >= 1.0 else
                f"up to {math.log10(cond):.0f} of their ~16 significant digits (relative error "
                f"up to cond·eps = {cond * _EPS:.1e})")
        warnings.warn(
            f"alpha=None (no Tikhonov term): {what} is ill-conditioned; the pseudo-inverse keeps "
            f"{int(lam.shape[0])} of {int(keep.shape[0])} eigenvalues (those above "
            f"n·eps·λ_max = {n * _EPS * lmax:.3g}) with condition number {cond:.3g} > "
            f"1/√eps = {COND_MAX:.3g}, so the estimator's coefficients can lose {lost} to "
            "rounding, and eigenvalues computed from them more (those of a non-normal "
            "operator amplify coefficient errors). Typical causes: repeated samples, a "
            "smooth kernel (large bandwidth); pass alpha > 0 (e.g. 1e-6) to regularise",
            IllConditionedGramWarning, stacklevel=user_stacklevel())
    return lam, Q, cond


class GramSolver:
    """Solves with G + shift·I for a symmetric PSD Gram matrix G on any executor.

    ``shift > 0``: a Cholesky factor (:func:`cholesky_shifted`). ``shift == 0`` (``alpha=None``):
    the pseudo-inverse G⁺ = Q_+ Λ_+⁻¹ Q_+ᵀ from the eigendecomposition of G, the eigenvalues at
    or below n·eps·λ_max dropped (:func:`pinv_spectrum`, which warns when the kept spectrum is
    ill-conditioned), so that G⁺V is the minimum-norm least-squares solution of G W = V.

    ``restrict=True`` with ``shift > 0``: (G + shift·I)⁻¹ on the numerical range of G,
    Q_+ (Λ_+ + shift)⁻¹ Q_+ᵀ from the same eigendecomposition and cutoff: for the Gram matrix
    of a kernel with a finite feature map (linear, polynomial), whose exact null space the
    rounding fills with noise that a Cholesky solve would amplify by 1/shift (the eigenvalues
    of (G + shift·I)⁻¹k(Y, X) of the 'full' Koopman estimator then lose every digit at small
    shifts; on the range they are those of the primal problem).

    ``warn=False``: no :class:`IllConditionedGramWarning` (factors recomputed after
    unpickling, whose fit already warned; a parameter, not a warnings filter, which is
    process-wide and not thread-safe).

    Attributes
    ----------
    kind : {'cholesky', 'pinv'}
        'pinv': the eigendecomposition route (shift 0, or ``restrict``).
    """

    def __init__(self, G, shift: float, name: str = "G", restrict: bool = False,
                 warn: bool = True):
        self._like, self.shift = G[:0, :0], float(shift)  # picklable (no executor object kept)
        if self.shift > 0 and not restrict:
            self.kind = "cholesky"
            self.cho = cholesky_shifted(G, self.shift, name)
            return
        self.kind = "pinv"
        lam, Q = sym_eigh(0.5 * (G + G.T))
        self.lam, self.Q, _ = pinv_spectrum(lam, Q, int(G.shape[0]), f"the Gram matrix {name}",
                                            warn=warn and self.shift == 0)
        if self.shift > 0:
            self.lam = self.lam + self.shift

    @property
    def ops(self):
        """The executor's primitives (:func:`asymkern._backend.ops_of` of G)."""
        return ops_of(self._like)

    def solve(self, V):
        """(G + shift·I)⁻¹ V, or G⁺ V for ``shift == 0`` (on the range of G for ``restrict``)."""
        if self.kind == "cholesky":
            return self.ops.cho_solve(self.cho, V)
        W = self.Q.T @ V
        W = W / (self.lam[:, None] if W.ndim == 2 else self.lam)
        return self.Q @ W


class LaggedGramSolver:
    """Solves with the time-lagged Gram matrix G_XY = [k(x_i, y_j)] (square, not symmetric).

    G_XY is LU-factorised and its reciprocal condition number ``rcond`` (1-norm, LAPACK ``gecon``,
    on the host from the LU factor) estimated *before* any further solve. When
    ``rcond ≥ rcond_min`` the exact inverse is used (``kind = 'lu'``). Otherwise (numerically
    singular or ill-conditioned, e.g. exact repeats in a trajectory, or i.i.d. samples with a
    smooth kernel) G_XY⁻¹ is replaced by the Tikhonov-regularised inverse (``kind = 'tikhonov'``)

        G_XY^{+δ} = (G_XYᵀ G_XY + δ² I)⁻¹ G_XYᵀ = V diag(σ_i / (σ_i² + δ²)) Uᵀ,

    from the SVD G_XY = U diag(σ) Vᵀ, i.e. the minimiser of ‖G_XY w − v‖² + δ²‖w‖², whose filter
    factors σ²/(σ² + δ²) damp the directions with σ ≲ δ that an exact solve would amplify by 1/σ.
    With δ = 0 (``alpha=None``) the truncated pseudo-inverse V diag(1/σ_i) Uᵀ over the σ_i above
    n·eps·σ_max is used instead (``kind = 'pinv'``; the minimum-norm least-squares solution).
    Works on the arrays of any executor (the factors stay on G_XY's device).

    Parameters
    ----------
    Gxy : array (n, n)
        The time-lagged Gram matrix.
    delta : float
        δ of the regularised inverse.
    rcond_min : float
        The smallest reciprocal condition number solved exactly.
    """

    def __init__(self, Gxy, delta: float, rcond_min: float):
        ops = ops_of(Gxy)
        self.ops = ops
        n = Gxy.shape[0]
        self.delta = float(delta)
        anorm = float(abs(Gxy).sum(0).max())
        lu = ops.lu_factor(Gxy)
        self.rcond = rcond = ops.lu_rcond(lu, anorm)
        self.n_damped = 0
        if rcond >= rcond_min:
            self.kind, self.lu = "lu", lu
        else:
            del lu  # not kept: freed before the SVD's factors are allocated
            U, s, Vt = ops.svd_gesvd(Gxy)
            self.U, self.Vt, self.s = U, Vt, s
            if self.delta > 0:
                self.kind = "tikhonov"
                self.filt = s / (s**2 + self.delta**2)
                self.n_damped = int((s < self.delta).sum())
            else:  # alpha=None: the truncated pseudo-inverse (σ ≤ n·eps·σ_max dropped)
                self.kind = "pinv"
                smax = float(s.max()) if s.shape[0] else 0.0
                kept = s > n * _EPS * smax
                self.filt = s * 0.0
                self.filt[kept] = 1.0 / s[kept]
                self.n_damped = int(n - int(kept.sum()))

    def solve(self, V):
        """G_XY⁻¹ V (or G_XY^{+δ} V)."""
        if self.kind == "lu":
            return self.ops.lu_solve(self.lu, V)
        return self.Vt.T @ (self.filt[:, None] * (self.U.T @ V))

    def solve_t(self, V):
        """G_XY⁻ᵀ V (or (G_XY^{+δ})ᵀ V)."""
        if self.kind == "lu":
            return self.ops.lu_solve(self.lu, V, trans=True)
        return self.U @ (self.filt[:, None] * (self.Vt @ V))


#: above this many pairs the exact 'full' estimators take their top eigenpairs from ARPACK, as
#: the numpy estimators do (``KoopmanOperator`` / ``PerronFrobeniusOperator``: n > 150), with
#: the restart budget of :func:`arpack_maxiter`
ARPACK_MIN_PAIRS = 150


def arpack_maxiter(n: int, k: int, ncv: int) -> int:
    """ARPACK's restart budget for the top k of n eigenpairs: about the time of one dense
    eigendecomposition, after which the caller falls back to the dense solver. Measured on one
    thread (n = 500 to 2000), LAPACK's ``geev`` took as long as 2n to 5n products A·v; a
    restart costs ncv − k products, so the budget is 2n / (ncv − k) restarts (at least 20).
    A Koopman spectrum clusters near 1, where ARPACK can iterate for minutes: one eigenpair of
    a Lorenz-63 trajectory at n = 1000 took 167 s with scipy's default budget (10n restarts),
    3.4 s by the dense solver."""
    return max(20, int(np.ceil(2.0 * n / max(ncv - k, 1))))


def _arpack_top(A, k: int):
    """Top-k eigenpairs (largest ``|λ|``) of the n×n matrix A (numpy, or on a device) by the
    ARPACK call of :func:`asymkern.linalg.operator_svd._eig_top` (its v0, ncv and tolerance),
    with the products A·v on A's device; only vectors cross to the host. Returns (λ, W)
    (numpy), or None when the dense solver should run instead (k ≥ n − 1, as ``_eig_top``
    decides)."""
    from ..linalg.operator_svd import _eig_top

    n = int(A.shape[0])
    if k >= n - 1:
        return None
    op = A if ops_of(A) is NUMPY else DenseMatrix(A).aslinearoperator()
    ncv = min(n, max(2 * k + 1, 20))  # _eig_top's
    lam, W, _ = _eig_top(op, n, k, "LM", "arpack", maxiter=arpack_maxiter(n, k, ncv))
    return lam, W


def auxiliary_eig(G, A, k: int, owner: str, lift=None, floor: float = 0.0):
    """Top-k eigenpairs of the auxiliary matrix A = B C with eigenfunctions k(·, X) w on the
    samples of G, post-processed exactly as :func:`asymkern.linalg.eig_auxiliary` does.

    G and A are arrays of one executor (numpy, or tensors on their device); G may also be a
    callable that forms it, called once the eigensolver's n×n arrays are freed (so that they
    and G are never held at once). For n ≤
    :data:`ARPACK_MIN_PAIRS` the dense eigenproblem runs on the arrays' device; above it ARPACK
    runs on the host with its products A·v on the device (:func:`_arpack_top`), falling back to
    the dense solver when ARPACK does not converge. ``lift`` (optional, an executor's
    ``V ↦ L V``) maps the eigenvectors v of A to those of a similar matrix L A L⁻¹ before they
    are normalised: the eigenpairs (λ, L v) of a matrix whose own eigenproblem is worse
    conditioned than A's. Eigenvalues of modulus at most 1e-12·|λ₁| or ``floor`` (A's
    rounding level, when the caller knows it; at most √eps·|λ₁|) are numerically zero: their
    eigenpairs are dropped. The k×k Gram matrix Wᴴ G W of the kept
    eigenvectors (computed on the device) is all the normalisation, cluster orthonormalisation
    and zero-norm test need; the same product G W gives the eigenfunctions' values at the
    samples, on which :func:`value_phases` fixes each one's sign (complex phase). Returns the
    eigenvalues, the n×k coefficients (numpy) and the solver that ran ('arpack' or 'dense').
    """
    from ..linalg.operator_svd import _real_if_close, _too_few_eigs, _zero_norms

    ops = ops_of(A)
    n = int(A.shape[0])
    found_by: dict = {}  # the dense eigen-decomposition (computed at most once) and the solver

    def top(m):
        if m <= k and "lam" not in found_by and n > ARPACK_MIN_PAIRS:
            try:
                found = _arpack_top(A, m)
            except ArpackNoConvergence:  # rare (clustered spectra): the dense reference
                found = None
            if found is not None:
                found_by["solver"] = "arpack"
                lam, W = found
                return _real_if_close(lam, W, max(abs(lam[0]), 1e-300))
        lam = dense(m)
        # only the m leading eigenvectors are copied out of the n×n W (never all n reordered)
        order = found_by["order"][:m]
        W = ops.to_host(found_by["W"][:, ops.index(order, found_by["W"])])
        if not np.any(lam.imag):
            lam, W = lam.real.copy(), W.real.copy()
        return _real_if_close(lam, W, max(abs(lam[0]), 1e-300))

    def dense(m):
        """The m leading eigenvalues of the dense decomposition (computed at most once)."""
        if "lam" not in found_by:
            lam_t, W_t = ops.eig(A)
            order = ops.argsort_desc(abs(lam_t))
            found_by.update(lam=ops.to_host(lam_t[order]), W=W_t, order=ops.to_host(order),
                            solver="dense")
        return found_by["lam"][:m]

    lam, W = top(k)
    scale = max(abs(lam[0]), 1e-300)
    small = np.flatnonzero(np.abs(lam) <= _zero_level(scale, floor))
    if abs(lam[0]) == 0 or small.size:  # the numpy path retries with every nonzero eigenpair
        # every eigenvalue, as top(n) returns them (real when top(n)'s would be), decides
        # where the nonzero ones end; only their eigenvectors are then extracted (top(n)'s
        # leading columns: the n×n eigenvector matrix is never copied whole)
        lam = dense(n)
        if np.all(np.abs(lam.imag) <= 1e-8 * max(abs(lam[0]), 1e-300)):  # _real_if_close
            lam = lam.real
        scale = max(abs(lam[0]), 1e-300)
        small = np.flatnonzero(np.abs(lam) <= _zero_level(scale, floor))
        if small.size and small[0] > 0:
            lam, W = top(int(small[0]))
        else:
            raise _too_few_eigs(k, int(small[0]) if small.size else 0)
        clip_count(k, lam.size, "n_components", "the numerical rank of the operator",
                   owner=owner)
    found_by.pop("W", None)  # the n×n eigenvectors of the dense solver, freed
    if lift is not None:
        W = _lifted(lift, W, ops, A)
    if callable(G):
        G = G()
    Wd = ops.from_host(W, G, W.dtype)
    GW = _gram_times(G, Wd, W.dtype)
    S = ops.to_host(Wd.conj().T @ GW)  # Wᴴ G W (k×k)
    GW = ops.to_host(GW)  # the eigenvectors' functions at the samples (n×k, for the signs)
    # (the warning of dropped eigenpairs points at the user's call, whatever the call path)
    zero = _zero_norms(np.real(np.diag(S)), W, float(G.diagonal().max()),
                       stacklevel=user_stacklevel())
    if np.any(zero):
        lam, W, S, GW = lam[~zero], W[:, ~zero], S[np.ix_(~zero, ~zero)], GW[:, ~zero]
    T = _normalise_transform(lam, S)
    C = W @ T
    # the sign (phase) rule on the eigenfunctions' values at the samples, G C = (G W) T
    return lam, C * value_phases(GW @ T), found_by["solver"]


def _zero_level(scale: float, floor: float) -> float:
    """The modulus up to which an eigenvalue is numerically zero: 1e-12·|λ₁|, or the caller's
    rounding ``floor`` of A, which is a worst-case bound and is capped at √eps·|λ₁| (at an
    extreme regularisation the bound exceeded eigenvalues that A resolves to 3e-5)."""
    return max(1e-12 * scale, min(floor, float(np.sqrt(_EPS)) * scale))


def _lifted(lift, W, ops, like):
    """``lift`` applied to the host n×k eigenvectors W on the executor of ``like`` (the real
    and imaginary parts of complex eigenvectors separately: the solvers are real)."""
    def real(V):
        return ops.to_host(lift(ops.from_host(np.ascontiguousarray(V), like, np.float64)))

    if np.iscomplexobj(W):
        return real(W.real) + 1j * real(W.imag)
    return real(W)


def _gram_times(G, W, dtype):
    """G W for the n×k coefficients W of dtype ``dtype`` (complex eigenvectors: G cast, as
    the product needs, one block of rows at a time, never the n×n complex copy of G; the
    same products, row by row, as with the whole cast G)."""
    if not np.issubdtype(np.dtype(dtype), np.complexfloating):
        return G @ W
    ops = ops_of(G)
    n = int(G.shape[0])
    out = ops.empty((n, int(W.shape[1])), G, dtype)
    step = max(1, -(-n // 16))
    for a in range(0, n, step):
        out[a:a + step] = ops.astype(G[a:a + step], dtype) @ W
    return out


def _normalise_transform(lam, S):
    """The k×k T with W T = the coefficients :func:`~asymkern.linalg.operator_svd.eig_auxiliary`
    returns: ``rkhs_normalize``, then (real eigenpairs) ``orthonormalize_clusters`` with
    rtol 1e-9 and no merging, all through S = Wᴴ G W."""
    from ..linalg.operator_svd import clusters, rkhs_normalize

    dtype = S.dtype if np.iscomplexobj(lam) else np.float64
    T = rkhs_normalize(np.eye(S.shape[0], dtype=dtype), S)
    if np.iscomplexobj(lam):
        return T
    S = np.real(S)
    for g in clusters(lam, 1e-9):
        if g.size < 2:
            continue
        Gram = T[:, g].T @ S @ T[:, g]
        Gram = 0.5 * (Gram + Gram.T)
        try:
            L = np.linalg.cholesky(Gram)
        except np.linalg.LinAlgError:  # numerically dependent: the numpy path's eigh fallback
            mu, V = np.linalg.eigh(Gram)
            mu = np.maximum(mu, _EPS * mu.max())
            T[:, g] = T[:, g] @ (V / np.sqrt(mu))
            continue
        T[:, g] = sla.solve_triangular(L, T[:, g].T, lower=True).T
    return rkhs_normalize(T, S)


__all__ = ["SIGN_TIE_RTOL", "GramSolver", "IllConditionedGramWarning", "LaggedGramSolver",
           "auxiliary_eig", "cholesky_shifted", "pinv_spectrum", "value_phases"]
