"""Matrix-level routines for the SVD / EVD of empirical RKHS operators (Mollenhauer et al. (2020),
§3).

An empirical RKHS operator is S = Ψ B Φᵀ : H → F with feature matrices Φ = [φ(x_1) … φ(x_m)],
Ψ = [ψ(y_1) … ψ(y_n)], Gram matrices G_Φ = ΦᵀΦ (m×m), G_Ψ = ΨᵀΨ (n×n) and B ∈ R^{n×m}. Every
routine here works on those matrices only and returns *coefficients*: a function f = Φ c ∈ H is
represented by c ∈ R^m (f(x) = Σ_j c_j k(x_j, x)).

Three SVD routes that agree (tested):

* :func:`svd_qr` — kernel QR (Prop. 3.4): G = RᵀR (Cholesky, with diagonal pivoting by default),
  Φ = Φ̃R with Φ̃ orthonormal, so
  S = Ψ̃ (R_Ψ B R_Φᵀ) Φ̃ᵀ and the SVD of the small matrix B̃ = R_Ψ B R_Φᵀ is the SVD of S
  (Cor. 3.5). (The paper's eq. (5) prints R⁻¹; with Φ = Φ̃R the representation matrix is R B Rᵀ.)
* :func:`svd_auxiliary` — the auxiliary eigenproblem M G_Φ w = λ w, M = Bᵀ G_Ψ B (Prop. 3.13):
  σ = √λ, v = Φw / ‖Φw‖, u = S v / σ.
* :func:`svd_block` — the block auxiliary matrix [[0, B G_Φ], [Bᵀ G_Ψ, 0]] whose positive
  eigenvalues are the σ_i with eigenvectors [w; z], u = Ψw/‖Ψw‖, v = Φz/‖Φz‖ (Thm. 3.17).

Eigendecompositions: :func:`eig_auxiliary` (Prop. 3.8, any operator H → H) and :func:`eig_qr`
(Cor. 3.6, self-adjoint operators).

Gram matrices that are only positive *semi*-definite (duplicate points, finite-dimensional feature
maps such as the linear or polynomial kernel, fast-decaying spectra of Gaussian kernels) are handled
by :func:`kernel_qr` in a documented way, never silently: the Cholesky factorisation uses diagonal
pivoting (LAPACK ``pstrf``), which is rank-revealing: when the Gram matrix is numerically singular
it keeps the r numerically independent features (G ≈ RᵀR with R of shape r×m; the dropped directions
have RKHS norm ≤ √tol, i.e. they are numerically the zero function, so the operator is unchanged
to that accuracy) and a :class:`RankDeficientGramWarning` says so. A ``jitter`` > 0 instead
factorises G + jitter·I (a Tikhonov shift of the Gram matrix; it changes the operator by
O(jitter)). Clearly indefinite or non-symmetric Gram matrices raise ``ValueError``.

The kernel QR route (:func:`kernel_qr`, :func:`gram_eigh`, :func:`eig_qr`, :func:`svd_qr`) is
written against the executor primitives (:func:`asymkern._backend.ops_of`): given Gram matrices
that are torch tensors it runs on their device, with the same pivoting, rank rule and sign rule
as on numpy (the numpy arrays go through scipy's LAPACK drivers, unchanged); the factors,
coefficients and eigenpairs are then tensors too.

Repeated singular values (Remark 3.14): the auxiliary and block routes return eigenvectors of a
non-symmetric matrix, which need not be orthogonal inside an eigenspace; those clusters are
re-orthonormalised in the RKHS inner product (Gram–Schmidt through a Cholesky factor).
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, aslinearoperator, eigs

from .._backend import NUMPY, ops_of
from .._validation import check_n_components
from ..config import check_memory

EPS = np.finfo(np.float64).eps
SVD_METHODS = ("qr", "auxiliary", "block")
EIG_METHODS = ("auto", "qr", "auxiliary")
EIG_SOLVERS = ("auto", "dense", "arpack")
# default relative threshold σ_k / σ_1 below which a singular value counts as numerically zero;
# the auxiliary route squares the singular values (λ = σ²), so it resolves only ~√eps. So does
# the block route near zero: with rank-deficient Gram matrices the block matrix's zero
# eigenvalue is defective, and rounding splits each of its 2×2 Jordan blocks into a pair
# ±√(eps·‖T‖), seen as spurious σ ≈ 1e-8·σ_1 (a 4th σ of a rank-3 operator, on OpenBLAS's
# kernels without FMA).
DEFAULT_RANK_RTOL = {"qr": 1e-10, "block": 1e-7, "auxiliary": 1e-7}


class RankDeficientGramWarning(UserWarning):
    """A Gram matrix was numerically singular and a rank-revealing factorisation was used.

    Issued by :func:`kernel_qr` with ``method='auto'``; pass ``jitter > 0`` to regularise
    instead, or ``method='pivoted'`` to accept the rank without a warning.

    See Also
    --------
    kernel_qr : Issues it.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from asymkern.linalg import RankDeficientGramWarning, kernel_qr
    >>> X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])    # a duplicate point
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     F = kernel_qr(X @ X.T)
    >>> F.rank, issubclass(w[0].category, RankDeficientGramWarning)
    (2, True)
    """


# ------------------------------------------------------------------------------------------------
# B as an operator
# ------------------------------------------------------------------------------------------------
def as_representation(B, shape: tuple[int, int] | None = None, name: str = "B") -> LinearOperator:
    """Validate the representation matrix B (array, sparse matrix or LinearOperator) of S = ΨBΦᵀ.

    Parameters
    ----------
    B : array-like, sparse matrix or LinearOperator of shape (n, m)
        The representation matrix; dense or sparse B must be finite.
    shape : tuple of int, optional
        The expected shape (n, m) = (len(Y), len(X)).
    name : str, default 'B'
        The name used in error messages.

    Returns
    -------
    scipy.sparse.linalg.LinearOperator
        B as a float64 operator (a LinearOperator is returned as is).

    Raises
    ------
    ValueError
        If B is not 2-D, not finite, complex-valued (a complex LinearOperator included), or
        has the wrong shape.
    TypeError
        If B is not numeric.

    See Also
    --------
    operator_svd : The SVD of S = ΨBΦᵀ.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg.operator_svd import as_representation
    >>> as_representation(np.ones((2, 3)), (2, 3)).shape
    (2, 3)
    """
    if isinstance(B, LinearOperator):
        if B.dtype is not None and np.issubdtype(np.dtype(B.dtype), np.complexfloating):
            raise ValueError(f"{name} is a complex LinearOperator; expected a real one")
        op = B
    elif sp.issparse(B):
        _check_real_dtype(B.dtype, name)
        if B.format not in ("csr", "csc", "coo", "bsr"):  # LIL/DOK data are not the entries
            B = B.tocsr()
        if not np.all(np.isfinite(B.data)):
            raise ValueError(f"{name} contains NaN or infinity; expected finite values")
        op = aslinearoperator(B.astype(np.float64))
    else:
        arr = np.asarray(B)
        _check_real_dtype(arr.dtype, name)
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got an array of shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinity; expected finite values")
        op = aslinearoperator(arr.astype(np.float64, copy=False))
    if shape is not None and tuple(op.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(op.shape)}; expected (n, m) = {tuple(shape)} "
                         "(rows: output samples Y, columns: input samples X, for S = Ψ B Φᵀ)")
    return op


def _check_real_dtype(dtype, name: str) -> None:
    """Refuse a complex (``ValueError``) or non-numeric (``TypeError``) dtype, naming ``name``:
    a cast to float64 would drop the imaginary part silently."""
    dt = np.dtype(dtype)
    if np.issubdtype(dt, np.complexfloating):
        raise ValueError(f"{name} is complex-valued; expected real numbers")
    if not (np.issubdtype(dt, np.number) or dt == np.bool_):
        raise TypeError(f"{name} must be a numeric matrix, got dtype {dt}")


def _check_rtol(rtol, name: str = "rtol", *, optional: bool = True):
    """A relative threshold: a finite real in [0, 1) (σ_k/σ_1 ≤ 1 and |λ_k|/|λ_1| ≤ 1, so a
    value ≥ 1 would keep nothing), or None where ``optional``; returned as float (or None).
    A negative or NaN value would keep numerically zero values, silently."""
    if rtol is None and optional:
        return None
    if isinstance(rtol, (bool, np.bool_)) or not isinstance(rtol, numbers.Real):
        raise TypeError(f"{name} must be {'None or ' if optional else ''}a real number in "
                        f"[0, 1), got {rtol!r}")
    value = float(rtol)
    if not (0.0 <= value < 1.0):
        raise ValueError(f"{name} must be {'None or ' if optional else ''}a finite number in "
                         f"[0, 1) (a relative threshold of the numerical rank), got {rtol!r}")
    return value


def _mm(B: LinearOperator, V):
    """B V; for an array of another executor (a torch tensor) through B's own ``_apply`` (the
    representations of the operator estimators write their products with array operators, so
    they run on the array's device)."""
    if ops_of(V) is not NUMPY:
        if not hasattr(B, "_apply"):
            raise TypeError(f"B ({type(B).__name__}) has no products with "
                            f"{ops_of(V).name} arrays; pass a representation with _apply")
        return B._apply(V)
    V = np.asarray(V)
    return np.asarray(B.matvec(V) if V.ndim == 1 else B.matmat(V))


def _rmm(B: LinearOperator, U: np.ndarray) -> np.ndarray:
    """Bᵀ U, refusing with an error that names B where B has no adjoint product.

    scipy raises ``NotImplementedError`` for a missing ``rmatvec`` of a vector, but a bare
    ``TypeError`` ("'NoneType' object is not callable") for a block through ``rmatmat``; both
    become a ``TypeError`` that says what the route needs (the original is chained and quoted,
    so an error of the user's own ``rmatvec`` stays visible)."""
    U = np.asarray(U)
    try:
        out = B.rmatvec(U) if U.ndim == 1 else B.rmatmat(U)
    except (NotImplementedError, TypeError) as exc:
        raise TypeError(f"B ({type(B).__name__}) has no product with its transpose "
                        "(rmatvec/rmatmat), which this operation needs (the SVD's 'qr' route "
                        f"does not; {type(exc).__name__}: {exc})") from exc
    return np.asarray(out)


# ------------------------------------------------------------------------------------------------
# Kernel QR
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GramFactor:
    """Factorisation G ≈ Rᵀ R of a Gram matrix G = ΦᵀΦ (m×m), R of shape (r, m), r = rank.

    It defines the orthonormal feature matrix Φ̃ (r functions, Φ̃ᵀΦ̃ = I_r) with Φ ≈ Φ̃ R
    (kernel QR, Mollenhauer et al. (2020) Prop. 3.4). :meth:`coefficients` maps coordinates A (r×k)
    in the basis Φ̃ to coefficients C (m×k) with Φ̃ A = Φ C.

    Parameters
    ----------
    R : ndarray of shape (r, m)
        The factor, G ≈ RᵀR.
    kind : {'cholesky', 'pivoted', 'eigh'}
        ``'cholesky'`` (R upper triangular, r = m), ``'pivoted'`` (rank-revealing pivoted
        Cholesky; R upper triangular up to a column permutation) or ``'eigh'``
        (R = Λ^{1/2} Uᵀ from an eigendecomposition — not triangular, but
        Φ̃ = Φ U Λ^{-1/2} is orthonormal all the same).
    size : int
        m, the number of samples.
    jitter : float, default 0.0
        The diagonal shift that was added to G.
    tol : float, default 0.0
        The absolute threshold below which directions were dropped.
    perm : ndarray of shape (r,) or None, default None
        Pivoted: the r pivot columns.
    tri : ndarray of shape (r, r) or None, default None
        Cholesky / pivoted: the triangular block.
    evecs : ndarray of shape (m, r) or None, default None
        Eigh: the eigenvectors U.
    evals : ndarray of shape (r,) or None, default None
        Eigh: the eigenvalues Λ, decreasing.
    info : dict
        Details (``rank``, ``dropped``).

    See Also
    --------
    kernel_qr : Computes a Cholesky factor.
    gram_eigh : Computes an eigendecomposition factor.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, "Singular Value
       Decomposition of Operators on Reproducing Kernel Hilbert Spaces", in Advances in
       Dynamics, Optimization and Computation, Springer, 2020, Prop. 3.4.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import RBFKernel
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((6, 2)), rng.standard_normal((5, 2))
    >>> G_in, G_out = RBFKernel(gamma=0.5)(X), RBFKernel(gamma=0.5)(Y)
    >>> B = rng.standard_normal((5, 6))
    >>> from asymkern.linalg import kernel_qr
    >>> F = kernel_qr(G_in, method="cholesky")
    >>> F.kind, F.rank, bool(np.allclose(F.R.T @ F.R, G_in))
    ('cholesky', 6, True)
    >>> C = F.coefficients(np.eye(6))      # the orthonormal basis: C^T G C = I
    >>> bool(np.allclose(C.T @ G_in @ C, np.eye(6)))
    True
    """

    R: np.ndarray
    kind: str
    size: int
    jitter: float = 0.0
    tol: float = 0.0
    perm: np.ndarray | None = None  # pivoted: the r pivot columns
    tri: np.ndarray | None = None  # cholesky / pivoted: the r×r triangular block
    evecs: np.ndarray | None = None  # eigh: U (m×r)
    evals: np.ndarray | None = None  # eigh: Λ (r)
    info: dict = field(default_factory=dict)

    @property
    def rank(self) -> int:
        return int(self.R.shape[0])

    def coefficients(self, A):
        """C (m×k) with Φ C = Φ̃ A for A (r×k) (or a vector).

        Parameters
        ----------
        A : ndarray of shape (r, k) or (r,)
            Coordinates in the orthonormal basis Φ̃ (an array of the factor's executor).

        Returns
        -------
        ndarray of shape (m, k) or (m,)
            Coefficients over the features Φ.

        Raises
        ------
        ValueError
            If ``A`` does not have r rows.
        """
        ops = ops_of(self.R)
        A = np.asarray(A) if ops is NUMPY else A
        vec = A.ndim == 1
        A2 = A[:, None] if vec else A
        if A2.shape[0] != self.rank:
            raise ValueError(f"A has {A2.shape[0]} rows; expected the rank {self.rank}")
        if self.kind == "cholesky":
            C = ops.solve_triangular(self.tri, A2)
        elif self.kind == "pivoted":
            dtype = np.result_type(ops.dtype(A2), np.float64)
            C = ops.zeros((self.size, A2.shape[1]), self.R, dtype)
            C[ops.index(self.perm, C)] = ops.solve_triangular(self.tri, A2)
        else:  # eigh: a factor built by from_eigh always holds its eigenpairs
            assert self.evecs is not None and self.evals is not None
            C = self.evecs @ (A2 / ops.sqrt(self.evals)[:, None])
        return C[:, 0] if vec else C

    @classmethod
    def from_eigh(cls, evals, evecs, *, rtol: float | None = None, jitter: float = 0.0,
                  name: str = "G") -> GramFactor:
        """Factor from an eigendecomposition G = U Λ Uᵀ, keeping λ > rtol·λ_max.

        Parameters
        ----------
        evals : array-like of shape (m,)
            Eigenvalues of G.
        evecs : array-like of shape (m, m)
            Eigenvectors of G (columns).
        rtol : float, optional
            Relative threshold in [0, 1) (default m·eps).
        jitter : float, default 0.0
            The diagonal shift that was added to G (recorded).
        name : str, default 'G'
            The name used in error messages.

        Returns
        -------
        GramFactor
            ``kind='eigh'``, eigenpairs sorted by decreasing eigenvalue.

        Raises
        ------
        ValueError
            If G has no positive eigenvalue or is clearly indefinite, or ``rtol`` is not in
            [0, 1).
        """
        ops = ops_of(evals, evecs)
        if ops is NUMPY:
            evals = np.asarray(evals, dtype=np.float64)
            evecs = np.asarray(evecs, dtype=np.float64)
        else:
            evals, evecs = ops.astype(evals, np.float64), ops.astype(evecs, np.float64)
        m = evecs.shape[0]
        w = ops.to_host(evals)  # the m eigenvalues: the rank rule runs on the host
        lmax = float(np.max(w)) if w.size else 0.0
        if lmax <= 0:
            raise ValueError(f"{name} has no positive eigenvalue: the features are all zero")
        if w.min() < -max(1e3 * m * EPS, 1e-8) * lmax:
            raise ValueError(f"{name} is not positive semi-definite (smallest eigenvalue "
                             f"{w.min():.3g}, largest {lmax:.3g}); Mollenhauer et al. (2020) "
                             "needs a symmetric PSD kernel")
        rtol = m * EPS if rtol is None else _check_rtol(rtol, optional=False)
        keep = np.flatnonzero(w > rtol * lmax)
        order = keep[np.argsort(w[keep])[::-1]]
        idx = ops.index(order, evals)
        lam, U = evals[idx], evecs[:, idx]
        R = ops.sqrt(lam)[:, None] * U.T
        return cls(R=R, kind="eigh", size=m, jitter=jitter, tol=rtol * lmax, evecs=U, evals=lam,
                   info={"rank": int(lam.shape[0]), "dropped": int(m - lam.shape[0])})


#: float64 arrays the routes hold at their peak besides their inputs (tracemalloc, sizes
#: 300–900, rounded up), in units of m × m for the Gram factorisations (m = G's size; +1 for
#: a jitter, which shifts a copy of G), of max(n, m)² for the dense SVD / EVD routes
#: (``True``: all components; ``False``: k of them, with a dense eigensolver) and of
#: (n + m)² for the dense block route: the budget checks of :func:`_check_route_memory`.
#: A matrix-free (ARPACK) solve is counted by :func:`_matrix_free_bytes`, the qr route by
#: :func:`_qr_route_bytes`.
_ROUTE_COPIES = {"auto": 2.2, "pivoted": 2.2, "cholesky": 1.1, "eigh": 3.1, "gram_eigh": 6.1,
                 ("auxiliary", True): 7.1, ("auxiliary", False): 4.1,
                 ("eig_auxiliary", True): 9.4, ("eig_auxiliary", False): 4.1,
                 ("block", True): 4.1, ("block", False): 4.1}


def _check_route_memory(G, route, size: int, what: str, extra: float = 0.0) -> None:
    """Refuse, before anything large is allocated, a factorisation or dense SVD route whose
    peak (:data:`_ROUTE_COPIES` ``[route]`` + ``extra`` float64 ``size`` × ``size`` arrays)
    exceeds ``max_dense_memory``."""
    copies = _ROUTE_COPIES[route] + extra
    _check_route_bytes(G, copies * 8.0 * size * size, what,
                       f"about {copies:g} float64 {size}×{size} arrays")


def _check_route_bytes(G, nbytes: float, what: str, detail: str) -> None:
    """Refuse a route whose estimated peak ``nbytes`` exceeds ``max_dense_memory``
    (:func:`asymkern.config.check_memory`). Host (numpy) arrays only: the torch executor's
    device arrays are budgeted by its callers."""
    if ops_of(G) is not NUMPY:
        return
    check_memory(nbytes, what, "a Nyström (landmark) estimator or fewer samples",
                 detail=detail)


def _eig_goes_dense(N: int, k: int, solver: str) -> bool:
    """Whether :func:`_eig_top` solves the N×N eigenproblem densely (LAPACK on the formed
    matrix) rather than with ARPACK on its matrix-free products: ``solver='dense'``;
    ``'auto'`` for N ≤ 1500 or k ≥ N − 2; ``'arpack'`` for k ≥ N − 1 (beyond ARPACK)."""
    if solver == "dense":
        return True
    if solver == "auto":
        return N <= 1500 or k >= N - 2
    return solver == "arpack" and k >= N - 1


def _matrix_free_bytes(N: int, k: int, size: int) -> float:
    """Peak bytes of a matrix-free route besides its inputs: ARPACK's ncv Lanczos vectors of
    length N (twice: scipy's wrapper works on a copy) and workspace, the k (complex)
    eigenvectors with their products with a Gram matrix, and the row panels in which
    :func:`_check_gram` compares a ``size`` × ``size`` Gram matrix with its transpose."""
    ncv = min(N, max(2 * k + 1, 20))
    return 8.0 * (N * (2 * ncv + 4 * k + 8) + ncv * (ncv + 8)
                  + 2 * min(size * size, _PANEL_ENTRIES + size))


def _qr_route_bytes(n: int, m: int, r_out: int, r_in: int, k: int, solver: str,
                    truncate: bool) -> float:
    """Peak bytes of :func:`svd_qr` besides its inputs: B R_Φᵀ (n × r_in), B̃ (r_out × r_in)
    and the SVD of B̃ (:func:`top_svd`'s dense or ARPACK solver), then the coefficients
    (n × k and m × k)."""
    from ._svd_core import arpack_svd_bytes, dense_svd_bytes
    from .svd import auto_solver

    if truncate or solver == "dense":
        dense = True
    elif solver == "auto":
        dense = auto_solver("dense", r_out, r_in, k)[0] == "dense"
    else:
        dense = False
    svd = dense_svd_bytes(r_out, r_in) if dense else arpack_svd_bytes(r_out, r_in, k)
    return 8.0 * (n * r_in + r_out * r_in + 2 * (n + m) * k) + svd


def _max_asymmetry(G) -> float:
    """max |G - Gᵀ| of a square array of any executor, formed in row panels of at most
    ``_PANEL_ENTRIES`` entries (the whole difference would be a temporary the size of G)."""
    m = G.shape[0]
    step = max(1, _PANEL_ENTRIES // max(m, 1))
    asym = 0.0
    for i in range(0, m, step):
        j = min(i + step, m)
        asym = max(asym, float(abs(G[i:j] - G[:, i:j].T).max()))
    return asym


_PANEL_ENTRIES = 1 << 20  # 8 MiB of float64 per temporary panel


def norm1(G) -> float:
    """‖G‖₁ (the largest column sum of |G|) of a 2-D array of any executor, in column panels
    of at most ``_PANEL_ENTRIES`` entries (|G| whole would be a temporary the size of G)."""
    n, m = G.shape
    step = max(1, _PANEL_ENTRIES // max(n, 1))
    return max((float(abs(G[:, j:j + step]).sum(0).max()) for j in range(0, m, step)),
               default=0.0)


def symmetrize_in_place(G):
    """G ← (G + Gᵀ)/2 for a square array of any executor that the caller owns, in row panels
    of at most ``_PANEL_ENTRIES`` entries (no temporary the size of G). Used on doubly centred
    Gram matrices: the centring's rounding (relative to the uncentred entries) leaves them
    asymmetric by more than their own scale allows when the centring cancels most digits."""
    m = G.shape[0]
    step = max(1, _PANEL_ENTRIES // max(m, 1))
    for i in range(0, m, step):
        j = min(i + step, m)
        avg = (G[i:j, i:] + G[i:, i:j].T) / 2
        G[i:j, i:] = avg
        G[i:, i:j] = avg.T
    return G


def _check_gram(G, name: str, noise: float = 0.0):
    """G as a float64 array of its executor, refused unless square, non-empty, finite and
    symmetric (to 1e-10 relative, or to 10× the entries' rounding level ``noise``)."""
    ops = ops_of(G)
    G = np.asarray(G) if ops is NUMPY else G
    _check_real_dtype(ops.dtype(G), name)
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise ValueError(f"{name} must be a square Gram matrix, got shape {tuple(G.shape)}")
    if G.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    if not ops.all_finite(G):
        raise ValueError(f"{name} contains NaN or infinity")
    G = ops.astype(G, np.float64)
    scale = max(float(G.max()), -float(G.min()))
    asym = _max_asymmetry(G)
    if scale > 0 and asym > max(1e-10 * scale, 10.0 * noise):
        raise ValueError(f"{name} is not symmetric (max |G - Gᵀ| = {asym:.3g}); operator "
                         "decompositions in Mollenhauer et al. (2020) need a symmetric positive "
                         "semi-definite kernel")
    return G


def _pivoted_cholesky(G, tol: float, name: str, jitter: float,
                      noise: float = 0.0) -> GramFactor:
    """The rank-revealing factor G ≈ RᵀR of the executor's primitive ``pivoted_cholesky``,
    refused when the Schur complement it leaves is not numerically zero (G not PSD)."""
    ops = ops_of(G)
    m = G.shape[0]
    U, piv, r = ops.pivoted_cholesky(G, tol)  # U: (r, m) in pivoted column order
    if r == 0:
        raise ValueError(f"{name} is numerically zero: every feature has RKHS norm ≤ √tol")
    R = ops.empty((r, m), G)
    R[:, ops.index(piv, R)] = U
    # PSD check: the Schur complement left over must be (numerically) zero. Probe it with a few
    # random vectors (O(m² p)); for a PSD matrix ‖G - RᵀR‖₂ ≤ trace ≤ (m - r)·tol.
    rng = np.random.default_rng(0)
    Zh = rng.standard_normal((m, 4))
    Z = ops.from_host(Zh, G)
    E = G @ Z - R.T @ (R @ Z)
    err = float(np.max(ops.col_norms(E) / np.linalg.norm(Zh, axis=0)))
    diag = G.diagonal()
    bound = 10.0 * max(m - r, 1) * tol + 1e3 * m * max(EPS * float(diag.max()), noise)
    resid_diag = diag - ops.col_dots(R, R)
    if err > bound or float(resid_diag.min()) < -bound:
        raise ValueError(f"{name} is not positive semi-definite (pivoted Cholesky leaves a "
                         f"residual of norm {err:.3g} > {bound:.3g}); Mollenhauer et al. (2020) "
                         "needs a symmetric PSD kernel")
    return GramFactor(R=R, kind="pivoted", size=m, jitter=jitter, tol=tol, perm=piv[:r],
                      tri=ops.contiguous(U[:, :r]), info={"rank": r, "dropped": m - r,
                                                 "residual_norm_estimate": err})


def kernel_qr(G, *, jitter: float = 0.0, rtol: float | None = None, method: str = "auto",
              name: str = "G", warn: bool = True, noise: float = 0.0) -> GramFactor:
    """Kernel QR factorisation Φ = Φ̃ R of the features behind the Gram matrix G (Prop. 3.4).

    Parameters
    ----------
    G : array-like of shape (m, m)
        Symmetric positive semi-definite Gram matrix.
    jitter : float, default 0.0
        Value ≥ 0 added to the diagonal before factorising (documented regularisation).
    rtol : float, optional
        Relative tolerance in [0, 1): directions whose squared RKHS norm is ≤ rtol·max
        diag(G) count as zero (default m·eps, LAPACK's choice for pivoted Cholesky).
    method : {'auto', 'pivoted', 'cholesky', 'eigh'}, default 'auto'
        ``'auto'`` (Cholesky with diagonal pivoting, LAPACK ``pstrf``: PᵀGP = UᵀU; it stops
        at the numerical rank and issues a :class:`RankDeficientGramWarning` if that is
        < m), ``'pivoted'`` (the same without the warning), ``'cholesky'`` (plain Cholesky,
        G = RᵀR with R upper triangular as in Prop. 3.4; raises if G is not numerically
        positive definite) or ``'eigh'``.
    name : str, default 'G'
        The name used in messages.
    warn : bool, default True
        Issue the warning of ``'auto'``.
    noise : float, default 0.0
        The absolute rounding level of G's entries when it exceeds eps·max diag(G): for a
        doubly centred H K H, eps·max|K| of the uncentred K (the centring cancels digits, and
        its rounding is relative to K's entries, not to the centred ones). The symmetry, rank
        and PSD tolerances are then at least this level (10·noise, m·noise, 1e3·m·noise).

    Returns
    -------
    GramFactor
        The factor R (r × m) with G + jitter·I ≈ RᵀR.

    Raises
    ------
    ValueError
        If G is not square, real, finite, symmetric and PSD, has a non-positive diagonal,
        the method is unknown, ``jitter`` is negative or not finite, ``rtol`` is not in
        [0, 1), or ``'cholesky'`` finds G not numerically positive definite.
    TypeError
        If ``jitter`` or ``rtol`` is not a real number, or G is not numeric.
    MemoryBudgetError
        If the route's dense copies (counted per route, before any is made) exceed
        ``max_dense_memory``.

    See Also
    --------
    gram_eigh : An eigendecomposition factor.
    svd_qr : The SVD of S through two kernel QR factors.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, "Singular Value
       Decomposition of Operators on Reproducing Kernel Hilbert Spaces", in Advances in
       Dynamics, Optimization and Computation, Springer, 2020, Prop. 3.4.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import RBFKernel
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((6, 2)), rng.standard_normal((5, 2))
    >>> G_in, G_out = RBFKernel(gamma=0.5)(X), RBFKernel(gamma=0.5)(Y)
    >>> B = rng.standard_normal((5, 6))
    >>> from asymkern.linalg import kernel_qr
    >>> F = kernel_qr(G_in)
    >>> F.kind, F.R.shape, bool(np.allclose(F.R.T @ F.R, G_in))
    ('pivoted', (6, 6), True)
    """
    noise = _check_noise(noise)
    G = _check_gram(G, name, noise)
    ops = ops_of(G)
    if isinstance(jitter, (bool, np.bool_)) or not isinstance(jitter, numbers.Real):
        raise TypeError(f"jitter must be a real number >= 0, got {jitter!r}")
    if not np.isfinite(jitter) or jitter < 0:
        raise ValueError(f"jitter must be finite and >= 0, got {jitter}")
    if method not in ("auto", "cholesky", "pivoted", "eigh"):
        raise ValueError(f"unknown method {method!r}; expected auto, cholesky, pivoted or eigh")
    m = G.shape[0]
    _check_route_memory(G, method, m, f"kernel_qr(method={method!r}) of the {m}×{m} matrix "
                        f"{name}", float(jitter > 0))
    if jitter > 0:
        G = ops.add_diag(G, jitter)
    rtol, tol = _tolerances(G, rtol, name, noise)
    if method == "eigh":
        return _eigh_factor(G, tol, jitter, name)
    if method == "cholesky":
        if ops is not NUMPY:
            raise NotImplementedError("kernel_qr(method='cholesky') takes numpy arrays; use "
                                      "method='pivoted' (or 'auto') on other executors")
        try:
            Rc = sla.cholesky(G, lower=False, check_finite=False)
            ok = float(np.min(np.diag(Rc))) ** 2 > tol
        except np.linalg.LinAlgError:
            ok = False
        if not ok:
            raise ValueError(f"{name} is not numerically positive definite (Cholesky failed or "
                             f"has a pivot ≤ √({tol:.3g})); pass jitter > 0 or use the "
                             "rank-revealing method='pivoted'")
        return GramFactor(R=Rc, kind="cholesky", size=m, jitter=jitter, tol=tol, tri=Rc,
                          info={"rank": m, "dropped": 0})
    # 'auto' / 'pivoted': Cholesky with diagonal pivoting (LAPACK pstrf); it stops at the numerical
    # rank r, so a numerically low-rank Gram matrix costs O(m² r) instead of O(m³)
    F = _pivoted_cholesky(G, tol, name, jitter, noise)
    if method == "auto" and warn and F.rank < m:
        warnings.warn(
            f"{name} ({m}×{m}) is numerically singular: using a rank-revealing pivoted Cholesky "
            f"factorisation with numerical rank {F.rank} (directions with squared RKHS norm ≤ "
            f"{tol:.3g} dropped); pass jitter > 0 to regularise instead",
            RankDeficientGramWarning, stacklevel=2)
    return F


def gram_eigh(G, *, rtol: float | None = None, name: str = "G",
              noise: float = 0.0) -> GramFactor:
    """Eigendecomposition factor of a PSD Gram matrix, fast when G is numerically low-rank.

    A pivoted Cholesky factor G ≈ RᵀR (rank r) is computed first; if r ≤ m/2 the eigenpairs come
    from the thin SVD of R (O(m r²)) instead of a full O(m³) ``eigh``. Eigenvalues ≤ rtol·max diag
    are dropped (as in :func:`kernel_qr`).

    Parameters
    ----------
    G : array-like of shape (m, m)
        Symmetric positive semi-definite Gram matrix.
    rtol : float, optional
        Relative tolerance in [0, 1) (default m·eps).
    name : str, default 'G'
        The name used in error messages.
    noise : float, default 0.0
        The absolute rounding level of G's entries (as in :func:`kernel_qr`).

    Returns
    -------
    GramFactor
        ``kind='eigh'``: the kept eigenpairs, decreasing.

    Raises
    ------
    ValueError
        If G is not square, real, finite, symmetric and PSD, has a non-positive diagonal,
        or ``rtol`` is not in [0, 1).
    TypeError
        If ``rtol`` is not a real number, or G is not numeric.
    MemoryBudgetError
        If the route's dense copies (counted per route, before any is made) exceed
        ``max_dense_memory``.

    See Also
    --------
    kernel_qr : A Cholesky factor.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import gram_eigh
    >>> X = np.random.default_rng(0).standard_normal((8, 2))
    >>> F = gram_eigh(X @ X.T)                  # rank 2
    >>> F.kind, F.rank
    ('eigh', 2)
    """
    noise = _check_noise(noise)
    G = _check_gram(G, name, noise)
    _check_route_memory(G, "gram_eigh", G.shape[0], f"gram_eigh of the {G.shape[0]}×"
                        f"{G.shape[0]} matrix {name}")
    _, tol = _tolerances(G, rtol, name, noise)
    F = _pivoted_cholesky(G, tol, name, 0.0, noise)
    if F.rank <= G.shape[0] // 2:
        _, s, Vt = ops_of(G).svd(F.R)
        return GramFactor.from_eigh(s**2, Vt.T, rtol=tol / max(float(s[0]) ** 2, 1e-300),
                                    name=name)
    return _eigh_factor(G, tol, name=name)


def _tolerances(G, rtol: float | None, name: str, noise: float = 0.0) -> tuple:
    """(rtol, tol): the relative tolerance of the rank rules (default m·eps) and the absolute
    one, rtol·max diag(G), at least m·``noise`` (the entries' rounding level); G is refused
    when its diagonal is not positive."""
    rtol = _check_rtol(rtol)
    dmax = float(G.diagonal().max())
    if dmax <= 0:
        raise ValueError(f"{name} has a non-positive diagonal: every feature is the zero function")
    rtol = G.shape[0] * EPS if rtol is None else rtol
    return rtol, max(rtol * dmax, G.shape[0] * noise)


def _check_noise(noise) -> float:
    """``noise`` as a finite float ≥ 0."""
    if isinstance(noise, (bool, np.bool_)) or not isinstance(noise, numbers.Real):
        raise TypeError(f"noise must be a real number >= 0, got {noise!r}")
    value = float(noise)
    if not (np.isfinite(value) and value >= 0):
        raise ValueError(f"noise must be finite and >= 0, got {value}")
    return value


def _eigh_factor(G, tol: float, jitter: float = 0.0, name: str = "G") -> GramFactor:
    """The factor of G's full eigendecomposition keeping the eigenvalues above ``tol``."""
    lam, U = ops_of(G).eigh(G)
    return GramFactor.from_eigh(lam, U, rtol=tol / max(float(lam.max()), 1e-300), jitter=jitter,
                                name=name)


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def _gram_apply(G: np.ndarray, C: np.ndarray) -> np.ndarray:
    """G C for a real Gram matrix G and real or complex coefficients C. For complex C the
    real and imaginary parts are multiplied separately: numpy's type promotion would otherwise
    make a complex copy of G (twice G's memory) for the product."""
    if np.iscomplexobj(C) and not np.iscomplexobj(G):
        return G @ C.real + 1j * (G @ C.imag)
    return G @ C


def rkhs_normalize(C: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Scale the columns of C so that the functions Φ c have unit RKHS norm (cᴴ G c = 1).

    Parameters
    ----------
    C : ndarray of shape (m, k)
        Coefficients (real or complex) over the features Φ.
    G : ndarray of shape (m, m)
        The Gram matrix ΦᵀΦ.

    Returns
    -------
    ndarray of shape (m, k)
        The scaled coefficients.

    Raises
    ------
    ValueError
        If a column has zero RKHS norm.

    See Also
    --------
    orthonormalize_clusters : Orthonormalises within clusters, then normalises.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg.operator_svd import rkhs_normalize
    >>> G = np.diag([4.0, 1.0])
    >>> rkhs_normalize(np.eye(2), G).tolist()
    [[0.5, 0.0], [0.0, 1.0]]
    """
    norms2 = np.real(np.einsum("ij,ij->j", np.conj(C), _gram_apply(G, C)))
    norms = np.sqrt(np.maximum(norms2, 0.0))
    if np.any(norms <= 0):
        raise ValueError("a computed singular/eigen-function has zero RKHS norm")
    return C / norms


def clusters(values: np.ndarray, rtol: float) -> list[np.ndarray]:
    """Groups of consecutive indices whose values differ by ≤ rtol·max|values| (sorted input).

    Parameters
    ----------
    values : array-like of shape (k,)
        Sorted values (singular values or eigenvalues).
    rtol : float
        Relative tolerance.

    Returns
    -------
    list of ndarray
        Index arrays of the groups, in order.

    See Also
    --------
    orthonormalize_clusters : Uses the groups.

    Examples
    --------
    >>> from asymkern.linalg.operator_svd import clusters
    >>> [g.tolist() for g in clusters([3.0, 2.0, 2.0, 1.0], 1e-6)]
    [[0], [1, 2], [3]]
    """
    values = np.asarray(values)
    if values.size == 0:
        return []
    scale = float(np.max(np.abs(values))) or 1.0
    groups, start = [], 0
    for i in range(1, values.size):
        if abs(values[i] - values[i - 1]) > rtol * scale:
            groups.append(np.arange(start, i))
            start = i
    groups.append(np.arange(start, values.size))
    return groups


def orthonormalize_clusters(values, pairs, rtol: float = 1e-6, merge_nonorthogonal: bool = True):
    """Remark 3.14: orthonormalise (in the RKHS inner product) inside groups of equal values.

    ``pairs`` is a list of (C, G) — coefficient matrices and their Gram matrices — transformed
    together: the Gram matrix of the first space (summed over spaces) is Cholesky-factorised per
    cluster and the same transformation applied to every C, then each column is normalised.
    ``merge_nonorthogonal`` (self-adjoint problems only): neighbouring groups whose functions are
    clearly non-orthogonal (``|cos|`` > 1e-6) are treated as one eigenspace.

    Parameters
    ----------
    values : array-like of shape (k,)
        Sorted singular values or eigenvalues.
    pairs : list of tuple of ndarray
        (C, G) pairs: coefficients (m_i × k) and Gram matrices (m_i × m_i).
    rtol : float, default 1e-6
        Relative tolerance of :func:`clusters`.
    merge_nonorthogonal : bool, default True
        Merge neighbouring non-orthogonal groups (self-adjoint problems only).

    Returns
    -------
    list of ndarray
        The transformed coefficient matrices, one per pair, with unit RKHS norms.

    Raises
    ------
    ValueError
        If a column has zero RKHS norm.

    See Also
    --------
    clusters : The grouping.
    rkhs_normalize : The final normalisation.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, "Singular Value
       Decomposition of Operators on Reproducing Kernel Hilbert Spaces", in Advances in
       Dynamics, Optimization and Computation, Springer, 2020, Remark 3.14.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg.operator_svd import orthonormalize_clusters
    >>> G = np.eye(2)
    >>> C = np.array([[1.0, 1.0], [0.0, 1.0]])     # equal values, non-orthogonal vectors
    >>> (Cn,) = orthonormalize_clusters([1.0, 1.0], [(C, G)])
    >>> bool(np.allclose(Cn.T @ G @ Cn, np.eye(2)))
    True
    """
    out = [C.copy() for C, _ in pairs]
    groups = clusters(values, rtol)
    # eigenvectors of a self-adjoint problem with different eigenvalues are orthogonal; a clearly
    # non-orthogonal neighbour means an eigenspace the value test split: merge the groups
    C0, G0 = pairs[0]
    N0 = rkhs_normalize(C0, G0)
    cos = np.abs(np.conj(N0).T @ (G0 @ N0))
    merged = [groups[0]] if groups else []
    for g in groups[1:]:
        if merge_nonorthogonal and np.max(cos[np.ix_(merged[-1], g)]) > 1e-6:
            merged[-1] = np.concatenate([merged[-1], g])
        else:
            merged.append(g)
    for g in merged:
        if g.size < 2:
            continue
        Gram = sum(np.conj(C[:, g]).T @ _gram_apply(G, C[:, g]) for C, (_, G) in zip(out, pairs))
        Gram = 0.5 * (Gram + np.conj(Gram).T)
        try:
            L = np.linalg.cholesky(Gram)
        except np.linalg.LinAlgError:  # eigenvectors numerically dependent: fall back to eigh
            lam, V = np.linalg.eigh(Gram)
            lam = np.maximum(lam, EPS * lam.max())
            T = V / np.sqrt(lam)
            for C in out:
                C[:, g] = C[:, g] @ T
            continue
        for C in out:
            C[:, g] = sla.solve_triangular(L, C[:, g].T, lower=True).T
    return [rkhs_normalize(C, G) for C, (_, G) in zip(out, pairs)]


def _check_rank(s: np.ndarray, k: int, rtol: float, what: str, truncate: bool = False) -> int:
    """Number of components to keep: k, or raise if σ_k is numerically zero (``truncate``: drop
    the numerically zero ones instead)."""
    if s.size == 0 or not np.isfinite(s[0]) or s[0] <= 0:
        raise ValueError(f"the operator is numerically zero ({what}); nothing to decompose")
    small = np.flatnonzero(s[:k] <= rtol * s[0])
    if small.size and truncate:
        return int(small[0])
    if small.size:
        r = int(small[0])
        raise ValueError(f"n_components={k} exceeds the numerical rank {r} of the operator "
                         f"({what}: σ_{r + 1}/σ_1 = {s[r] / s[0]:.2e} ≤ rtol={rtol:g}); ask for "
                         f"at most {r} components")
    return k


def _eig_top(A_or_op, N: int, k: int, which: str, solver: str, v0_seed: int = 0,
             maxiter: int | None = None):
    """Top-k eigenpairs of a (non-symmetric) N×N matrix or operator, sorted by ``which``
    (``maxiter``: ARPACK's restart budget, default scipy's 10N; past it ArpackNoConvergence)."""
    if solver in ("auto", "arpack"):
        solver = "dense" if _eig_goes_dense(N, k, solver) else "arpack"
    if solver == "dense":
        A = A_or_op if isinstance(A_or_op, np.ndarray) else A_or_op @ np.eye(N)
        lam, W = sla.eig(A, check_finite=False)
    elif solver == "arpack":
        op = A_or_op if isinstance(A_or_op, LinearOperator) else aslinearoperator(A_or_op)
        v0 = np.random.default_rng(v0_seed).standard_normal(N)
        ncv = min(N, max(2 * k + 1, 20))
        lam, W = eigs(op, k=k, which=which, v0=v0, ncv=ncv, tol=0.0, maxiter=maxiter)
    else:
        raise ValueError(f"unknown solver {solver!r}; expected one of {EIG_SOLVERS}")
    key = -lam.real if which == "LR" else -np.abs(lam)
    order = np.argsort(key, kind="stable")[:k]
    return lam[order], W[:, order], solver


def _real_if_close(lam, W, scale, tol=1e-8):
    """Real eigenpairs when every ``|Im λ|`` ≤ tol·scale.

    A (numerically) repeated real eigenvalue may come back from a non-symmetric solver as a
    complex-conjugate pair λ, λ̄ with tiny imaginary parts; the real parts of its two
    eigenvectors coincide, so the pair is replaced by (Re w, Im w), which spans the same real
    invariant subspace (the eigenspace is then orthonormalised by the caller).
    """
    if not np.all(np.abs(lam.imag) <= tol * scale):
        return lam, W
    Wr = np.real(W).copy()
    paired = np.zeros(lam.size, dtype=bool)
    for j in range(lam.size):
        if paired[j] or lam[j].imag == 0:
            continue
        d = np.abs(lam - np.conj(lam[j]))
        d[j] = np.inf
        d[paired] = np.inf
        i = int(np.argmin(d))
        if np.isfinite(d[i]) and d[i] <= tol * scale and lam[i].imag != 0:
            Wr[:, i] = np.imag(W[:, j])
            paired[i] = paired[j] = True
    return lam.real.copy(), Wr


# ------------------------------------------------------------------------------------------------
# SVD routes
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OperatorSVDCoefficients:
    """Result of an operator SVD: singular values and singular-function coefficients.

    The SVD S = Σ_i σ_i u_i ⊗ v_i of S = ΨBΦᵀ with u_i = Ψ C_u[:, i] and v_i = Φ C_v[:, i]
    (unit RKHS norm).

    Parameters
    ----------
    s : ndarray of shape (k,)
        Singular values σ, decreasing.
    C_u : ndarray of shape (n, k)
        Left coefficients over Ψ.
    C_v : ndarray of shape (m, k)
        Right coefficients over Φ.
    method : str
        ``'qr'``, ``'auxiliary'`` or ``'block'``.
    info : dict
        Solver details.

    See Also
    --------
    operator_svd : Computes it.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, "Singular Value
       Decomposition of Operators on Reproducing Kernel Hilbert Spaces", in Advances in
       Dynamics, Optimization and Computation, Springer, 2020, §3.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import RBFKernel
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((6, 2)), rng.standard_normal((5, 2))
    >>> G_in, G_out = RBFKernel(gamma=0.5)(X), RBFKernel(gamma=0.5)(Y)
    >>> B = rng.standard_normal((5, 6))
    >>> from asymkern.linalg import operator_svd
    >>> res = operator_svd(G_in, G_out, B, 2)
    >>> res.s.shape, res.C_u.shape, res.C_v.shape, res.method
    ((2,), (5, 2), (6, 2), 'qr')
    """

    s: np.ndarray
    C_u: np.ndarray
    C_v: np.ndarray
    method: str
    info: dict = field(default_factory=dict)


def _svd_inputs(G_in, G_out, B, k, solver, rtol=None, *, cross: bool = False,
                route: str = "auxiliary"):
    """Shared checks of the SVD routes and :func:`eig_auxiliary`: the Gram matrices (square,
    real, finite and symmetric, :func:`_check_gram`; with ``cross``, G_in is the m×n cross Gram
    matrix G_cross of :func:`eig_auxiliary`: 2-D, real and finite), B's representation of
    shape (n, m) (the sizes of G_out and G_in, or G_cross's shape transposed), ``rtol``
    (:func:`_check_rtol`; None allowed for the SVD routes) and k (None: all, computed
    densely), and the route's peak memory (``route``, :func:`_check_route_memory`). Returns
    float64 numpy arrays."""
    if cross:
        G_in = np.asarray(G_in)
        _check_real_dtype(G_in.dtype, "G_cross")
        if G_in.ndim != 2:
            raise ValueError(f"G_cross must be a 2-D matrix, got shape {G_in.shape}")
        G_in = G_in.astype(np.float64, copy=False)
        if not np.all(np.isfinite(G_in)):
            raise ValueError("G_cross contains NaN or infinity")
    else:
        G_in = np.asarray(_check_gram(G_in, "G_in"), dtype=np.float64)
    G_out = np.asarray(_check_gram(G_out, "G_out"), dtype=np.float64)
    n, m = G_out.shape[0], G_in.shape[0]
    if cross and G_in.shape[1] != n:
        raise ValueError(f"G_cross has shape {G_in.shape}; expected (m, n) with n = {n}, the "
                         "size of G_out")
    B = as_representation(B, (n, m))
    _check_rtol(rtol, optional=not cross)
    truncate = k is None
    if truncate:
        k, solver = min(n, m), "dense"
    k = check_n_components(k, min(n, m), what="rank(S) ≤ min(n, m)")
    N = {"block": n + m, "auxiliary": m, "eig_auxiliary": n}[route]
    what = f"the {route} route on {n} output and {m} input samples"
    if _eig_goes_dense(N, k, solver):
        _check_route_memory(G_out, (route, truncate), n + m if route == "block" else max(n, m),
                            what)
    else:
        _check_route_bytes(G_out, _matrix_free_bytes(N, k, max(n, m)), what,
                           f"ARPACK on the matrix-free {N}×{N} auxiliary problem, {k} "
                           "eigenpairs")
    return G_in, G_out, B, n, m, k, solver, truncate


def svd_qr(F_in: GramFactor, F_out: GramFactor, B, k: int | None, *, solver: str = "auto",
           rtol: float | None = None) -> OperatorSVDCoefficients:
    """SVD of S = ΨBΦᵀ through the kernel QR factors (Cor. 3.5): SVD of B̃ = R_Ψ B R_Φᵀ.

    Parameters
    ----------
    F_in : GramFactor
        Kernel QR factor of G_Φ (m × m, input samples X).
    F_out : GramFactor
        Kernel QR factor of G_Ψ (n × n, output samples Y).
    B : array-like, sparse matrix or LinearOperator of shape (n, m)
        The representation matrix.
    k : int or None
        Number of components; None: every numerically nonzero singular value
        (σ > rtol·σ_1).
    solver : str, default 'auto'
        Solver of :func:`top_svd` for the small matrix B̃.
    rtol : float, optional
        Relative threshold of a numerically zero singular value, in [0, 1) (default 1e-10).

    Returns
    -------
    OperatorSVDCoefficients
        ``method='qr'``.

    Raises
    ------
    ValueError
        If B has the wrong shape or is complex, ``rtol`` is not in [0, 1), or k exceeds the
        numerical rank.
    TypeError
        If ``rtol`` is not a real number, or B is not numeric.
    MemoryBudgetError
        If the route's dense copies (counted per route, before any is made) exceed
        ``max_dense_memory``.

    See Also
    --------
    svd_auxiliary, svd_block : The other two routes.
    operator_svd : Chooses the route.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, "Singular Value
       Decomposition of Operators on Reproducing Kernel Hilbert Spaces", in Advances in
       Dynamics, Optimization and Computation, Springer, 2020, Prop. 3.4 and Cor. 3.5.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import RBFKernel
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((6, 2)), rng.standard_normal((5, 2))
    >>> G_in, G_out = RBFKernel(gamma=0.5)(X), RBFKernel(gamma=0.5)(Y)
    >>> B = rng.standard_normal((5, 6))
    >>> from asymkern.linalg import kernel_qr, svd_qr
    >>> res = svd_qr(kernel_qr(G_in), kernel_qr(G_out), B, 2)
    >>> bool(np.allclose(res.C_u.T @ G_out @ res.C_u, np.eye(2)))    # orthonormal in H
    True
    """
    from .svd import top_svd

    B = as_representation(B, (F_out.size, F_in.size))
    rtol = _check_rtol(rtol)
    limit = min(F_in.rank, F_out.rank)
    truncate = k is None
    k = limit if truncate else k
    k = check_n_components(k, limit, what=f"the numerical ranks of the Gram matrices are "
                                          f"{F_in.rank} (input) and {F_out.rank} (output)")
    _check_route_bytes(F_out.R, _qr_route_bytes(F_out.size, F_in.size, F_out.rank, F_in.rank,
                                                k, solver, truncate),
                       f"the qr route on {F_out.size} output and {F_in.size} input samples",
                       f"B̃ of {F_out.rank}×{F_in.rank} (the numerical ranks), its SVD and "
                       f"B R_Φᵀ of {F_out.size}×{F_in.rank}")
    Bt = F_out.R @ _mm(B, F_in.R.T)
    res = top_svd(Bt, k, solver="dense" if truncate else solver)
    s = res.s  # host: top_svd returns the singular values on the host for every executor
    k = _check_rank(np.asarray(s), k, DEFAULT_RANK_RTOL["qr"] if rtol is None else rtol,
                    "kernel QR route", truncate)
    s = s[:k]
    C_u = F_out.coefficients(res.U[:, :k])
    C_v = F_in.coefficients(res.V[:, :k])
    return OperatorSVDCoefficients(s, C_u, C_v, "qr", {"solver": res.solver,
                                                       "shape_Btilde": Bt.shape})


def _dense_or_operator(dense, matvec, N: int, k: int, solver: str):
    """The N×N matrix ``dense()`` where :func:`_eig_top` solves densely (small N, or
    ``solver='dense'``), else the LinearOperator of ``matvec``."""
    if _eig_goes_dense(N, k, solver):
        return dense()
    return LinearOperator((N, N), matvec=matvec, dtype=np.float64)


def _real_top_eig(dense, matvec, N: int, k: int, solver: str, complex_msg: str,
                  zero_rtol: float = 0.0):
    """Top-k eigenpairs (largest real part) of the N × N auxiliary matrix of a route.

    Parameters
    ----------
    dense, matvec : callable
        ``dense()`` builds the matrix (small N, or ``solver='dense'``); ``matvec(x)`` applies it.
    N, k : int
        Size of the matrix and number of eigenpairs.
    solver : str
        Eigensolver (see :func:`_eig_top`).
    complex_msg : str
        Message of the ``LinAlgError`` raised when the eigenvalues are not real.
    zero_rtol : float, default 0.0
        Eigenvalues with ``|λ| ≤ zero_rtol·max|λ|`` are numerically zero: their imaginary
        parts (rounding splits a defective zero eigenvalue into pairs ±i·δ) are dropped, and
        the caller's rank check discards them.

    Returns
    -------
    tuple
        ``(lam, W, used)``: real eigenvalues, eigenvectors and the solver that ran.
    """
    lam, W, used = _eig_top(_dense_or_operator(dense, matvec, N, k, solver), N, k, "LR", solver)
    scale = max(float(np.max(np.abs(lam))), 1e-300)
    zero = np.abs(lam) <= zero_rtol * scale
    if np.iscomplexobj(lam) and np.any(zero):
        lam, W = lam.copy(), W.copy()
        lam[zero], W[:, zero] = lam[zero].real, W[:, zero].real
    lam, W = _real_if_close(lam, W, max(abs(lam[0]), 1e-300))
    if np.iscomplexobj(lam):
        raise np.linalg.LinAlgError(complex_msg)
    return lam, W, used


def svd_auxiliary(G_in, G_out, B, k: int | None, *, solver: str = "auto",
                  rtol: float | None = None) -> OperatorSVDCoefficients:
    """SVD via the auxiliary problem Bᵀ G_Ψ B G_Φ w = λ w (Prop. 3.13).

    σ_i = √λ_i, v_i = Φ w_i / (w_iᵀ G_Φ w_i)^{1/2}, u_i = λ_i^{-1/2} S v_i = Ψ (B G_Φ c_v) / σ_i.
    Squaring the singular values limits the resolution to about √eps.

    Parameters
    ----------
    G_in : array-like of shape (m, m)
        Gram matrix G_Φ of the input samples.
    G_out : array-like of shape (n, n)
        Gram matrix G_Ψ of the output samples.
    B : array-like, sparse matrix or LinearOperator of shape (n, m)
        The representation matrix.
    k : int or None
        Number of components; None: every numerically nonzero one (dense solve).
    solver : {'auto', 'dense', 'arpack'}, default 'auto'
        Eigensolver of the auxiliary problem.
    rtol : float, optional
        Relative threshold of a numerically zero singular value, in [0, 1) (default 1e-7).

    Returns
    -------
    OperatorSVDCoefficients
        ``method='auxiliary'``.

    Raises
    ------
    ValueError
        If a Gram matrix is not square, real, finite and symmetric, B has the wrong shape or
        is complex, ``rtol`` is not in [0, 1), or k exceeds the numerical rank.
    TypeError
        If ``rtol`` is not a real number, or an input is not numeric.
    numpy.linalg.LinAlgError
        If the eigenvalues come out complex (the Gram matrices are not PSD).
    MemoryBudgetError
        If the route's dense copies (counted per route, before any is made) exceed
        ``max_dense_memory``.

    See Also
    --------
    svd_qr, svd_block : The other two routes.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, "Singular Value
       Decomposition of Operators on Reproducing Kernel Hilbert Spaces", in Advances in
       Dynamics, Optimization and Computation, Springer, 2020, Prop. 3.13.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import RBFKernel
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((6, 2)), rng.standard_normal((5, 2))
    >>> G_in, G_out = RBFKernel(gamma=0.5)(X), RBFKernel(gamma=0.5)(Y)
    >>> B = rng.standard_normal((5, 6))
    >>> from asymkern.linalg import kernel_qr, svd_auxiliary, svd_qr
    >>> a = svd_auxiliary(G_in, G_out, B, 2)
    >>> q = svd_qr(kernel_qr(G_in), kernel_qr(G_out), B, 2)
    >>> bool(np.allclose(a.s, q.s))
    True
    """
    G_in, G_out, B, n, m, k, solver, truncate = _svd_inputs(G_in, G_out, B, k, solver,
                                                               rtol=rtol)
    lam, W, used = _real_top_eig(
        lambda: _rmm(B, G_out @ _mm(B, G_in)),  # Bᵀ G_Ψ B G_Φ without forming B
        lambda x: _rmm(B, G_out @ _mm(B, G_in @ x)), m, k, solver,
        "auxiliary eigenproblem returned complex eigenvalues for Sᴴ S (should be real ≥ 0); "
        "the Gram matrices are probably not PSD")
    s = np.sqrt(np.maximum(lam, 0.0))
    k = _check_rank(s, k, DEFAULT_RANK_RTOL["auxiliary"] if rtol is None else rtol,
                    "auxiliary route", truncate)
    s, W, lam = s[:k], W[:, :k], lam[:k]
    C_v = rkhs_normalize(W, G_in)
    (C_v,) = orthonormalize_clusters(s, [(C_v, G_in)])
    C_u = _mm(B, G_in @ C_v) / s
    return OperatorSVDCoefficients(s, C_u, C_v, "auxiliary", {"solver": used, "eigenvalues": lam})


def svd_block(G_in, G_out, B, k: int | None, *, solver: str = "auto",
              rtol: float | None = None) -> OperatorSVDCoefficients:
    """SVD via the block auxiliary matrix [[0, B G_Φ], [Bᵀ G_Ψ, 0]] (Thm. 3.17).

    Its positive eigenvalues are the σ_i, with eigenvectors [w; z]: u = Ψw/‖Ψw‖,
    v = Φz/‖Φz‖.

    Parameters
    ----------
    G_in : array-like of shape (m, m)
        Gram matrix G_Φ of the input samples.
    G_out : array-like of shape (n, n)
        Gram matrix G_Ψ of the output samples.
    B : array-like, sparse matrix or LinearOperator of shape (n, m)
        The representation matrix.
    k : int or None
        Number of components; None: every numerically nonzero one (dense solve).
    solver : {'auto', 'dense', 'arpack'}, default 'auto'
        Eigensolver of the block problem.
    rtol : float, optional
        Relative threshold of a numerically zero singular value, in [0, 1) (default 1e-7: the
        block matrix's zero eigenvalue is defective for rank-deficient Gram matrices, so
        rounding moves it by about √eps·σ_1).

    Returns
    -------
    OperatorSVDCoefficients
        ``method='block'``.

    Raises
    ------
    ValueError
        If a Gram matrix is not square, real, finite and symmetric, B has the wrong shape or
        is complex, ``rtol`` is not in [0, 1), k exceeds the numerical rank, or fewer
        positive eigenvalues than k are found.
    TypeError
        If ``rtol`` is not a real number, or an input is not numeric.
    numpy.linalg.LinAlgError
        If the eigenvalues come out complex.
    MemoryBudgetError
        If the route's dense copies (counted per route, before any is made) exceed
        ``max_dense_memory``.

    See Also
    --------
    svd_qr, svd_auxiliary : The other two routes.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, "Singular Value
       Decomposition of Operators on Reproducing Kernel Hilbert Spaces", in Advances in
       Dynamics, Optimization and Computation, Springer, 2020, Thm. 3.17.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import RBFKernel
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((6, 2)), rng.standard_normal((5, 2))
    >>> G_in, G_out = RBFKernel(gamma=0.5)(X), RBFKernel(gamma=0.5)(Y)
    >>> B = rng.standard_normal((5, 6))
    >>> from asymkern.linalg import kernel_qr, svd_block, svd_qr
    >>> b = svd_block(G_in, G_out, B, 2)
    >>> q = svd_qr(kernel_qr(G_in), kernel_qr(G_out), B, 2)
    >>> bool(np.allclose(b.s, q.s))
    True
    """
    G_in, G_out, B, n, m, k, solver, truncate = _svd_inputs(G_in, G_out, B, k, solver,
                                                               rtol=rtol, route="block")
    N = n + m

    def dense():
        T = np.zeros((N, N))
        T[:n, n:] = _mm(B, G_in)  # B G_Φ without forming B
        T[n:, :n] = _rmm(B, G_out)  # Bᵀ G_Ψ
        return T

    def mv(x):
        x = np.asarray(x).ravel()
        return np.concatenate([_mm(B, G_in @ x[n:]), _rmm(B, G_out @ x[:n])])

    rtol = DEFAULT_RANK_RTOL["block"] if rtol is None else rtol
    lam, W, used = _real_top_eig(dense, mv, N, k, solver,
                                 "block auxiliary problem returned complex eigenvalues",
                                 zero_rtol=rtol)
    s = lam
    k = _check_rank(np.abs(s), k, rtol, "block route", truncate)
    s, W = s[:k], W[:, :k]
    if np.any(s <= 0):
        raise ValueError("block route: fewer positive eigenvalues than requested components")
    C_u = rkhs_normalize(W[:n], G_out)
    C_v = rkhs_normalize(W[n:], G_in)
    C_u, C_v = orthonormalize_clusters(s, [(C_u, G_out), (C_v, G_in)])
    return OperatorSVDCoefficients(s, C_u, C_v, "block", {"solver": used})


def operator_svd(G_in, G_out, B, k: int, method: str = "qr", *, F_in: GramFactor | None = None,
                 F_out: GramFactor | None = None, solver: str = "auto", rtol: float | None = None,
                 jitter: float = 0.0) -> OperatorSVDCoefficients:
    """Top-k SVD of the empirical operator S = ΨBΦᵀ from its Gram matrices.

    Dispatches to one of the three routes of Mollenhauer et al. (2020): the
    kernel QR
    route (Cor. 3.5, :func:`svd_qr`), the auxiliary eigenproblem (Prop. 3.4,
    :func:`svd_auxiliary`) or the block eigenproblem (Thm. 3.17, :func:`svd_block`). All three
    return the same singular values; ``'qr'`` is the most accurate for ill-conditioned Gram
    matrices and lets precomputed factors be reused across calls.

    Parameters
    ----------
    G_in : ndarray of shape (m, m)
        Gram matrix G_Φ of the input samples X.
    G_out : ndarray of shape (n, n)
        Gram matrix G_Ψ of the output samples Y.
    B : array-like, sparse matrix or LinearOperator of shape (n, m)
        The representation matrix of S.
    k : int
        Number of singular triples to compute.
    method : {'qr', 'auxiliary', 'block'}, default='qr'
        The route (see above).
    F_in : GramFactor, optional
        Precomputed kernel QR factor of ``G_in`` (``method='qr'`` only); computed when None.
    F_out : GramFactor, optional
        Precomputed kernel QR factor of ``G_out`` (``method='qr'`` only); computed when None.
    solver : str, default='auto'
        Solver of :func:`top_svd` / the eigensolver for the small problem.
    rtol : float, optional
        Relative threshold below which a singular value counts as zero (default 1e-10 for
        ``'qr'``, 1e-7 for ``'auxiliary'`` and ``'block'``, which resolve only about √eps).
    jitter : float, default=0.0
        Diagonal shift added to the Gram matrices before the kernel QR factorisation.

    Returns
    -------
    OperatorSVDCoefficients
        Singular values (decreasing) and the coefficients of the left and right singular
        functions, orthonormal in their RKHS.

    Raises
    ------
    ValueError
        If ``method`` is not one of the three routes, if ``B`` has the wrong shape, or if
        ``k`` exceeds the numerical rank of the Gram matrices.

    See Also
    --------
    svd_qr, svd_auxiliary, svd_block : The three routes.
    eig_auxiliary, eig_qr : Eigendecompositions of a square empirical operator.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, "Singular Value
       Decomposition of Operators on Reproducing Kernel Hilbert Spaces", in Advances in
       Dynamics, Optimization and Computation, Springer, 2020, Prop. 3.4, Cor. 3.5 and
       Thm. 3.17.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import RBFKernel
    >>> from asymkern.linalg import operator_svd
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((6, 2)), rng.standard_normal((5, 2))
    >>> G_in, G_out = RBFKernel(gamma=0.5)(X), RBFKernel(gamma=0.5)(Y)
    >>> B = rng.standard_normal((5, 6))
    >>> s_qr = operator_svd(G_in, G_out, B, 2).s
    >>> s_aux = operator_svd(G_in, G_out, B, 2, method="auxiliary").s
    >>> bool(np.allclose(s_qr, s_aux))
    True
    """
    if method == "qr":
        F_in = F_in if F_in is not None else kernel_qr(G_in, jitter=jitter, name="G_in")
        F_out = F_out if F_out is not None else kernel_qr(G_out, jitter=jitter, name="G_out")
        return svd_qr(F_in, F_out, B, k, solver=solver, rtol=rtol)
    if method == "auxiliary":
        return svd_auxiliary(G_in, G_out, B, k, solver=solver, rtol=rtol)
    if method == "block":
        return svd_block(G_in, G_out, B, k, solver=solver, rtol=rtol)
    raise ValueError(f"unknown method {method!r}; expected one of {SVD_METHODS}")


# ------------------------------------------------------------------------------------------------
# eigendecomposition routes
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OperatorEigCoefficients:
    """Result of an operator eigendecomposition: eigenvalues and eigenfunction coefficients.

    Parameters
    ----------
    eigenvalues : ndarray of shape (k,)
        Eigenvalues by decreasing modulus (complex for complex pairs).
    C : ndarray of shape (n, k)
        Coefficients of the eigenfunctions (unit RKHS norm).
    method : str
        ``'auxiliary'`` or ``'qr'``.
    info : dict
        Solver details.

    See Also
    --------
    eig_auxiliary, eig_qr : Compute it.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, "Singular Value
       Decomposition of Operators on Reproducing Kernel Hilbert Spaces", in Advances in
       Dynamics, Optimization and Computation, Springer, 2020, Prop. 3.8 and Cor. 3.6.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import eig_qr, kernel_qr
    >>> res = eig_qr(kernel_qr(np.eye(3)), np.diag([3.0, 2.0, 1.0]), 2)
    >>> res.eigenvalues.tolist(), res.C.shape, res.method
    ([3.0, 2.0], (3, 2), 'qr')
    """

    eigenvalues: np.ndarray
    C: np.ndarray
    method: str
    info: dict = field(default_factory=dict)


def _cut_zero_eigs(lam, V, small, k: int, truncate: bool):
    """The rank rule of the eigen-routes: drop the numerically zero eigenvalues.

    Parameters
    ----------
    lam, V : array
        Eigenvalues (largest ``|λ|`` first) and eigenvectors (columns), any executor.
    small : ndarray of int
        Host indices of the numerically zero eigenvalues.
    k : int
        The requested number of components.
    truncate : bool
        Whether k was None (keep the nonzero ones) rather than requested.

    Returns
    -------
    tuple
        ``(lam, V)``, cut before the first zero eigenvalue when ``truncate``.

    Raises
    ------
    ValueError
        If a requested component has a numerically zero eigenvalue.
    """
    if truncate and small.size and small[0] > 0:
        return lam[: small[0]], V[:, : small[0]]
    if abs(lam[0]) == 0 or small.size:
        raise _too_few_eigs(k, int(small[0]) if small.size else 0)
    return lam, V


def _too_few_eigs(k, r: int) -> ValueError:
    """The error of n_components=k above the number r of numerically nonzero eigenvalues."""
    hint = ("; ask for fewer components" if r else
            ": the estimated operator is numerically nilpotent, e.g. for a kernel that is "
            "numerically the identity on these samples (no two alike); widen the kernel (a "
            "smaller gamma) or rescale X")
    return ValueError(f"n_components={k} exceeds the number {r} of numerically nonzero "
                      f"eigenvalues of the operator{hint}")


def eig_auxiliary(G_cross, G_out, B, k: int | None, *, solver: str = "auto",
                  rtol: float = 1e-12) -> OperatorEigCoefficients:
    """Eigenpairs of S = Υ B Φᵀ : H → H via the auxiliary matrix B ΦᵀΥ (Prop. 3.8).

    Eigenfunctions Υw, normalised in the RKHS norm; complex eigenpairs are returned as
    complex arrays (phase fixed: largest-modulus coefficient real positive). Eigenvalues with
    ``|λ|`` ≤ rtol·``|λ_1|`` are numerically zero and rejected (more components than the rank).
    Eigenvectors whose function has a numerically zero RKHS norm are dropped with a
    ``RuntimeWarning``.

    Parameters
    ----------
    G_cross : array-like of shape (m, n)
        ΦᵀΥ = [k(x_i, y_j)].
    G_out : array-like of shape (n, n)
        ΥᵀΥ.
    B : array-like, sparse matrix or LinearOperator of shape (n, m)
        The representation matrix.
    k : int or None
        Number of eigenpairs; None: every numerically nonzero one.
    solver : {'auto', 'dense', 'arpack'}, default 'auto'
        Eigensolver.
    rtol : float, default 1e-12
        Relative threshold of a numerically zero eigenvalue, in [0, 1).

    Returns
    -------
    OperatorEigCoefficients
        ``method='auxiliary'``.

    Raises
    ------
    ValueError
        If G_cross is not 2-D, real and finite, G_out is not square, real, finite and
        symmetric, B has the wrong shape or is complex, ``rtol`` is not in [0, 1), k exceeds
        the number of nonzero eigenvalues, or every eigenfunction has zero RKHS norm.
    TypeError
        If ``rtol`` is not a real number, or an input is not numeric.
    MemoryBudgetError
        If the route's dense copies (counted per route, before any is made) exceed
        ``max_dense_memory``.

    See Also
    --------
    eig_qr : The self-adjoint route.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, "Singular Value
       Decomposition of Operators on Reproducing Kernel Hilbert Spaces", in Advances in
       Dynamics, Optimization and Computation, Springer, 2020, Prop. 3.8.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import eig_auxiliary
    >>> G = np.eye(3)
    >>> res = eig_auxiliary(G, G, np.diag([3.0, 2.0, 1.0]), 2)
    >>> [round(float(v), 6) for v in res.eigenvalues]
    [3.0, 2.0]
    """
    G_cross, G_out, B, n, m, k, solver, truncate = _svd_inputs(G_cross, G_out, B, k, solver,
                                                               rtol, cross=True,
                                                               route="eig_auxiliary")
    A = _dense_or_operator(lambda: _mm(B, G_cross), lambda x: _mm(B, G_cross @ x), n, k, solver)
    lam, W, used = _eig_top(A, n, k, "LM", solver)
    scale = max(abs(lam[0]), 1e-300)
    lam, W = _real_if_close(lam, W, scale)
    small = np.flatnonzero(np.abs(lam) <= rtol * scale)
    lam, W = _cut_zero_eigs(lam, W, small, k, truncate)
    zero = _zero_norms(np.real(np.einsum("ij,ij->j", np.conj(W), _gram_apply(G_out, W))), W,
                      float(np.max(np.diag(G_out))), stacklevel=3)
    if np.any(zero):
        lam, W = lam[~zero], W[:, ~zero]
    C = rkhs_normalize(W, G_out)
    if not np.iscomplexobj(C):
        (C,) = orthonormalize_clusters(lam, [(C, G_out)], rtol=1e-9, merge_nonorthogonal=False)
    else:
        C = _fix_phase(C)
    return OperatorEigCoefficients(lam, C, "auxiliary", {"solver": used})


def _zero_norms(norms2, W, gmax: float, stacklevel: int):
    """Which eigenvectors w (columns of W, squared RKHS norms ``norms2`` = wᴴ G w, ``gmax`` the
    largest diagonal entry of G) give functions of numerically zero norm (wᴴ G w at rounding
    level, e.g. spurious eigenpairs of an ill-conditioned B): not eigenfunctions, dropped by
    the caller with a ``RuntimeWarning`` (``stacklevel`` as seen from the caller).

    Raises
    ------
    ValueError
        If every one is numerically zero.
    """
    n = W.shape[0]
    scale2 = np.real(np.einsum("ij,ij->j", np.conj(W), W)) * max(gmax, 1e-300)
    zero = ~(norms2 > 10.0 * n * EPS * scale2)
    if np.all(zero):
        raise ValueError("every computed eigenfunction has a numerically zero RKHS norm (wᴴ G w "
                         "at rounding level): the operator is numerically zero or its "
                         "representation B is too ill-conditioned to resolve eigenfunctions")
    if np.any(zero):
        warnings.warn(
            f"{int(zero.sum())} of {zero.size} computed eigenfunctions have a numerically zero "
            f"RKHS norm (spurious eigenpairs of an ill-conditioned representation) and were "
            f"dropped; returning {int((~zero).sum())} eigenpairs", RuntimeWarning,
            stacklevel=stacklevel + 1)
    return zero


def _fix_phase(C):
    """The arbitrary complex phase of each column fixed: its largest-modulus coefficient real
    positive."""
    idx = np.argmax(np.abs(C), axis=0)
    ph = C[idx, np.arange(C.shape[1])]
    return C * (np.abs(ph) / ph)


def eig_qr(F: GramFactor, B, k: int | None, *, rtol: float = 1e-12) -> OperatorEigCoefficients:
    """Eigenpairs of a self-adjoint S = Φ B Φᵀ (B symmetric) via B̃ = R B Rᵀ (Cor. 3.6).

    Parameters
    ----------
    F : GramFactor
        Kernel QR factor of G_Φ.
    B : array-like, sparse matrix or LinearOperator of shape (m, m)
        Symmetric representation matrix.
    k : int or None
        Number of eigenpairs (by decreasing modulus); None: every numerically nonzero one.
    rtol : float, default 1e-12
        Relative threshold of a numerically zero eigenvalue, in [0, 1).

    Returns
    -------
    OperatorEigCoefficients
        ``method='qr'``, real eigenvalues.

    Raises
    ------
    ValueError
        If B is not symmetric, is complex or has the wrong shape, ``rtol`` is not in [0, 1),
        or k exceeds the number of nonzero eigenvalues.
    TypeError
        If ``rtol`` is not a real number, or B is not numeric.

    See Also
    --------
    eig_auxiliary : For operators that are not self-adjoint.
    kernel_qr : Computes ``F``.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, "Singular Value
       Decomposition of Operators on Reproducing Kernel Hilbert Spaces", in Advances in
       Dynamics, Optimization and Computation, Springer, 2020, Cor. 3.6.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import eig_qr, kernel_qr
    >>> res = eig_qr(kernel_qr(np.eye(3)), np.diag([1.0, -3.0, 2.0]), 2)
    >>> res.eigenvalues.tolist()
    [-3.0, 2.0]
    """
    B = as_representation(B, (F.size, F.size))
    rtol = _check_rtol(rtol, optional=False)
    truncate = k is None
    k = F.rank if truncate else k
    k = check_n_components(k, F.rank, what=f"the numerical rank {F.rank} of the Gram matrix")
    ops = ops_of(F.R)
    Bt = F.R @ _mm(B, F.R.T)
    asym = float(abs(Bt - Bt.T).max())
    if asym > 1e-8 * max(float(abs(Bt).max()), 1e-300):
        raise ValueError("eig method 'qr' needs a self-adjoint operator (symmetric B); "
                         "use method='auxiliary'")
    lam, V = ops.eigh(0.5 * (Bt + Bt.T))
    order = ops.argsort_desc(abs(lam))[:k]
    lam, V = lam[order], V[:, order]
    lam_h = ops.to_host(lam)  # the rank rule on the host (k values)
    scale = max(abs(float(lam_h[0])), 1e-300)
    small = np.flatnonzero(np.abs(lam_h) <= rtol * scale)
    lam, V = _cut_zero_eigs(lam, V, small, k, truncate)
    return OperatorEigCoefficients(lam, _largest_positive(F.coefficients(V)), "qr", {})


def _largest_positive(C):
    """Each column's sign fixed so that its largest-magnitude coefficient is positive (the
    convention of the auxiliary route's phase): eigenfunctions that do not depend on the
    eigensolver's arbitrary sign, so equal data give equal functions whatever the rounding
    of the Gram matrix (dense or sparse input, chunking). Any executor's array (its
    ``sign_flips``, the same rule)."""
    ops = ops_of(C)
    return ops.scale_cols(C, ops.sign_flips(C)) if min(C.shape) else C


__all__ = ["DEFAULT_RANK_RTOL", "EIG_METHODS", "EIG_SOLVERS", "GramFactor",
           "OperatorEigCoefficients", "OperatorSVDCoefficients", "RankDeficientGramWarning",
           "SVD_METHODS", "as_representation", "clusters", "eig_auxiliary", "eig_qr", "gram_eigh",
           "kernel_qr", "operator_svd", "orthonormalize_clusters", "rkhs_normalize",
           "svd_auxiliary", "svd_block", "svd_qr"]
