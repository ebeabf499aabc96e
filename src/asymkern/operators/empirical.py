"""Empirical RKHS operators S = Ψ B Φᵀ and their decompositions (Mollenhauer et al. (2020), §3–4.1).

:class:`EmpiricalOperator` holds the two kernels, the samples and B; :meth:`~EmpiricalOperator.svd`
and :meth:`~EmpiricalOperator.eig` return singular/eigen-functions as :class:`RKHSFunction`
callables (normalised in the RKHS norm) that can be evaluated at new points. The matrix work is in
:mod:`asymkern.linalg.operator_svd`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .._backend import NUMPY, ops_of
from .._shared.operators import _check_jitter, as_rkhs_kernel
from .._validation import as_data, check_bool, check_finite_output
from ..config import check_memory
from ..kernels import Kernel
from ..linalg.operator_svd import (
    EIG_METHODS,
    EIG_SOLVERS,
    SVD_METHODS,
    GramFactor,
    _rmm,
    as_representation,
    eig_auxiliary,
    eig_qr,
    kernel_qr,
    svd_auxiliary,
    svd_block,
    svd_qr,
)
from ._numerics import value_phases


def _center_gram(K, rows: bool, cols: bool, overwrite: bool = False):
    """H K, K H or H K H through row/column means (no n×n centring matrix); a float64 copy
    for numpy, a new array of the executor otherwise (K itself when nothing is centred), or,
    with ``overwrite``, K itself centred in place (a float64 array the caller owns)."""
    ops = ops_of(K)
    if ops is not NUMPY and not overwrite:
        K = ops.astype(K, np.float64)
        if cols:
            K = K - K.mean(axis=1, keepdims=True)
        if rows:
            K = K - K.mean(axis=0, keepdims=True)
        return K
    if not overwrite:
        K = np.array(K, dtype=np.float64, copy=True)
    if cols:
        K -= K.mean(axis=1, keepdims=True)
    if rows:
        K -= K.mean(axis=0, keepdims=True)
    return K


def _center_coef(C: np.ndarray) -> np.ndarray:
    return C - C.mean(axis=0, keepdims=True)


def _check_real(B) -> None:
    """Refuse a complex representation B (array, sparse matrix or LinearOperator of a complex
    dtype): S = Ψ B Φᵀ maps between real RKHSs, and the float64 cast of B would drop its
    imaginary part with no more than a ``ComplexWarning``."""
    dtype = getattr(B, "dtype", None)
    if dtype is None and not isinstance(B, LinearOperator) and not sp.issparse(B):
        dtype = np.asarray(B).dtype
    if dtype is not None and np.issubdtype(np.dtype(dtype), np.complexfloating):
        raise ValueError(f"B has the complex dtype {np.dtype(dtype)}; the representation of "
                         "S = Ψ B Φᵀ between real RKHSs must be real (pass B.real if the "
                         "imaginary part is rounding, or decompose the real and imaginary "
                         "parts as two operators)")


def _check_rtol(rtol):
    """``rtol`` of :meth:`EmpiricalOperator.svd`: None, or a finite real in [0, 1) (σ_k/σ_1
    ≤ 1 always, so rtol ≥ 1 would keep nothing); returned as float (or None)."""
    if rtol is None:
        return None
    if isinstance(rtol, (bool, np.bool_)) or not isinstance(rtol, numbers.Real):
        raise ValueError(f"rtol must be None or a real number in [0, 1), got {rtol!r}")
    value = float(rtol)
    if not (0.0 <= value < 1.0):
        raise ValueError(f"rtol must be None or a finite number in [0, 1) (the threshold "
                         f"σ_k/σ_1 of the numerical rank), got {rtol!r}")
    return value


class RKHSFunction:
    """Functions f_j = Σ_i C_ij k(c_i, ·) in an RKHS: a callable, ``f(Z)`` → (n_points, k).

    Centred features are folded into the coefficients, so evaluation is plain.

    Parameters
    ----------
    kernel : Kernel
        The reproducing kernel k.
    centers : ndarray or sparse matrix of shape (n_centers, d)
        The expansion points c_i (rows).
    coef : array-like of shape (n_centers, k) or (n_centers,)
        Coefficients C; a vector defines one function (then evaluation returns a vector).

    Raises
    ------
    ValueError
        If ``coef`` and ``centers`` have different numbers of rows.

    See Also
    --------
    EmpiricalOperator : Returns singular and eigenfunctions as RKHSFunction.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import get_kernel
    >>> from asymkern.operators import RKHSFunction
    >>> X = np.random.RandomState(0).randn(5, 2)
    >>> f = RKHSFunction(get_kernel("rbf"), X, np.ones((5, 2)))
    >>> f(X[:3]).shape, len(f)
    ((3, 2), 2)
    """

    def __init__(self, kernel: Kernel, centers: np.ndarray, coef: np.ndarray):
        self.kernel = kernel
        self.centers = centers
        coef = np.asarray(coef)
        self._vector = coef.ndim == 1
        self.coef = coef[:, None] if self._vector else coef
        if self.coef.shape[0] != centers.shape[0]:
            raise ValueError(f"coef has {self.coef.shape[0]} rows but there are "
                             f"{centers.shape[0]} centers")

    @property
    def n_functions(self) -> int:
        return int(self.coef.shape[1])

    def __len__(self) -> int:
        return self.n_functions

    def __call__(self, Z) -> np.ndarray:
        """Values at the rows of Z: (n_points, k), or (n_points,) for a single function."""
        Z = as_data(Z, "Z", allow_sparse=self.kernel.accepts_sparse)
        if Z.shape[1] != self.centers.shape[1]:
            raise ValueError(f"Z has {Z.shape[1]} features; the function lives on "
                             f"{self.centers.shape[1]}")
        K = self.kernel(Z, self.centers)
        vals = K @ self.coef
        return vals[:, 0] if self._vector else vals

    def __getitem__(self, idx) -> RKHSFunction:
        return RKHSFunction(self.kernel, self.centers, self.coef[:, idx])

    def gram(self) -> np.ndarray:
        """Inner products ⟨f_i, f_j⟩_H.

        Returns
        -------
        ndarray of shape (k, k)
            The Gram matrix Cᴴ K C of the functions.
        """
        G = self.kernel(self.centers)
        return np.conj(self.coef).T @ (G @ self.coef)

    def norms(self) -> np.ndarray:
        """RKHS norms ‖f_j‖_H.

        Returns
        -------
        ndarray of shape (k,)
            The norms (rounding below zero clipped to 0).
        """
        return np.sqrt(np.maximum(np.real(np.diag(self.gram())), 0.0))

    def inner(self, other: RKHSFunction) -> np.ndarray:
        """⟨f_i, g_j⟩_H for two function sets of the same kernel.

        Parameters
        ----------
        other : RKHSFunction
            Functions g_j of the same kernel (any expansion points).

        Returns
        -------
        ndarray of shape (k, k_other)
            The inner products, by the reproducing property.
        """
        K = self.kernel(self.centers, other.centers)
        return np.conj(self.coef).T @ (K @ other.coef)

    def __repr__(self) -> str:
        return (f"RKHSFunction(n_functions={self.n_functions}, n_centers={self.centers.shape[0]}, "
                f"kernel={self.kernel!r})")


@dataclass(frozen=True)
class OperatorSVD:
    """S ≈ Σ σ_i u_i ⊗ v_i. Unpacks like ``numpy.linalg.svd``: ``u, s, v = op.svd(k)``.

    Parameters
    ----------
    singular_values : ndarray of shape (k,)
        σ_1 ≥ … ≥ σ_k.
    left : RKHSFunction
        Left singular functions u_i ∈ F (on the output samples Y), orthonormal in F.
    right : RKHSFunction
        Right singular functions v_i ∈ H (on the input samples X), orthonormal in H.
    method : str
        The route that computed it ('qr', 'auxiliary' or 'block').
    info : dict, optional
        Solver details.

    See Also
    --------
    EmpiricalOperator.svd : Returns an OperatorSVD.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import EmpiricalOperator
    >>> rng = np.random.RandomState(0)
    >>> X, Y = rng.randn(20, 2), rng.randn(15, 2)
    >>> B = rng.randn(15, 20)
    >>> op = EmpiricalOperator("rbf", X, "rbf", Y, B)
    >>> u, sv, v = op.svd(3)
    >>> sv.shape, len(u), len(v)
    ((3,), 3, 3)
    """

    singular_values: np.ndarray
    left: RKHSFunction
    right: RKHSFunction
    method: str
    info: dict = field(default_factory=dict)

    def __iter__(self):
        return iter((self.left, self.singular_values, self.right))


@dataclass(frozen=True)
class OperatorEig:
    """S f_i = λ_i f_i. Unpacks like ``numpy.linalg.eig``: ``lam, f = op.eig(k)``.

    Parameters
    ----------
    eigenvalues : ndarray of shape (k,)
        Eigenvalues λ_i, largest ``|λ|`` first (complex for the auxiliary route when needed).
    eigenfunctions : RKHSFunction
        The eigenfunctions f_i, unit-norm in the RKHS.
    method : str
        The route that computed it ('qr' or 'auxiliary').
    info : dict, optional
        Solver details.

    See Also
    --------
    EmpiricalOperator.eig : Returns an OperatorEig.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import EmpiricalOperator
    >>> X = np.random.RandomState(0).randn(20, 2)
    >>> op = EmpiricalOperator("rbf", X, "rbf", X, np.eye(20) / 20)  # covariance operator
    >>> lam, f = op.eig(2)
    >>> lam.shape, len(f)
    ((2,), 2)
    """

    eigenvalues: np.ndarray
    eigenfunctions: RKHSFunction
    method: str
    info: dict = field(default_factory=dict)

    def __iter__(self):
        return iter((self.eigenvalues, self.eigenfunctions))


class EmpiricalOperator:
    """The finite-rank operator S = Ψ B Φᵀ : H → F (Mollenhauer et al. (2020), §3.2).

    Parameters
    ----------
    kernel_in : str or Kernel
        Kernel of the input space H (feature map φ on the samples X); symmetric PSD.
    X : array-like or sparse matrix of shape (m, d_x)
        Input samples; Φ = [φ(x_1) … φ(x_m)].
    kernel_out : str or Kernel
        Kernel of the output space F (ψ on the samples Y); symmetric PSD.
    Y : array-like or sparse matrix of shape (n, d_y)
        Output samples; Ψ = [ψ(y_1) … ψ(y_n)].
    B : array-like, sparse matrix or LinearOperator of shape (n, m)
        The coefficient matrix (a ``scipy.sparse.linalg.LinearOperator`` needs ``rmatvec``
        for the auxiliary/block routes); applied, never inverted.
    kernel_in_params : dict, optional
        Keyword arguments of ``kernel_in`` when given by name.
    kernel_out_params : dict, optional
        Keyword arguments of ``kernel_out`` when given by name.
    center_in : bool, default False
        Use centred input features φ(x_i) − mean (Φ H); done with means, never an m×m
        centring matrix. Must be True or False (numpy's bool too): any other value is
        refused with a ``TypeError`` naming ``center_in``.
    center_out : bool, default False
        Use centred output features (True or False, as ``center_in``).
    jitter : float, default 0.0
        ≥ 0, added to the Gram diagonals before the kernel QR (see
        :func:`~asymkern.linalg.operator_svd.kernel_qr`; 0: a numerically singular Gram
        matrix gets a rank-revealing pivoted Cholesky factor and a
        ``RankDeficientGramWarning``).

    Raises
    ------
    ValueError
        If ``jitter`` is negative or not finite, B's shape is not (n, m), or B is complex
        (S maps between real RKHSs; its imaginary part would otherwise be dropped).
    TypeError
        If ``center_in`` or ``center_out`` is not a bool.

    See Also
    --------
    OperatorSVD : The result of :meth:`svd`.
    OperatorEig : The result of :meth:`eig`.
    asymkern.operators.CrossCovarianceOperator : An estimator built on this class.

    Notes
    -----
    (S v)(y) = Σ_i ψ(y_i)(y) Σ_j B_ij v(x_j). Kernels must be symmetric PSD. Gram matrices and
    decompositions are computed in float64 (float32 input is upcast: the symmetry checks and the
    Cholesky factorisations need it). Gram matrices are dense (n² and m² entries).

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus, C. Schütte, "Singular Value Decomposition of
       Operators on Reproducing Kernel Hilbert Spaces".

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import EmpiricalOperator
    >>> rng = np.random.RandomState(0)
    >>> X, Y = rng.randn(20, 2), rng.randn(15, 2)
    >>> B = rng.randn(15, 20)
    >>> op = EmpiricalOperator("rbf", X, "rbf", Y, B)
    >>> res = op.svd(3)
    >>> res.singular_values.shape, res.left(Y[:4]).shape
    ((3,), (4, 3))
    >>> s_qr = op.svd(3, method="qr").singular_values
    >>> s_block = op.svd(3, method="block").singular_values
    >>> bool(np.allclose(s_qr, s_block))
    True
    """

    def __init__(self, kernel_in, X, kernel_out, Y, B, *, kernel_in_params=None,
                 kernel_out_params=None, center_in: bool = False, center_out: bool = False,
                 jitter: float = 0.0):
        self.kernel_in = as_rkhs_kernel(kernel_in, kernel_in_params, "kernel_in")
        self.kernel_out = as_rkhs_kernel(kernel_out, kernel_out_params, "kernel_out")
        # decompositions are computed in float64 (Gram symmetry and Cholesky need it); sparse
        # samples (CSR) are kept when the kernel accepts them
        self.X = as_data(X, "X", allow_sparse=self.kernel_in.accepts_sparse).astype(
            np.float64, copy=False)
        self.Y = as_data(Y, "Y", allow_sparse=self.kernel_out.accepts_sparse).astype(
            np.float64, copy=False)
        _check_real(B)
        self.B = as_representation(B, (self.Y.shape[0], self.X.shape[0]), "B")
        self.jitter: float = _check_jitter(jitter)
        self.center_in: bool = check_bool(center_in, "center_in")
        self.center_out: bool = check_bool(center_out, "center_out")
        self._cache: dict = {}

    def __getstate__(self):
        """Pickled without the cached Gram matrices and factors (O(n²)); they are recomputed
        from the samples on first use."""
        state = self.__dict__.copy()
        state["_cache"] = {}
        return state

    # -- shapes and Gram matrices ----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        """(n, m): number of output and input samples (the shape of B)."""
        return (self.Y.shape[0], self.X.shape[0])

    def _gram(self, which: str) -> np.ndarray:
        if which not in self._cache:
            X, Y, c_in, c_out = self.X, self.Y, self.center_in, self.center_out
            kernel, A, Z, rows, cols, what = {  # cross: Φᵀ Ψ (m×n), only for the same space
                "in": (self.kernel_in, X, None, c_in, c_in, "the Gram matrix of X (input)"),
                "out": (self.kernel_out, Y, None, c_out, c_out, "the Gram matrix of Y (output)"),
                "cross": (self.kernel_in, X, Y, c_in, c_out, "the cross Gram matrix [k(x_i, y_j)]"),
            }[which]
            # 4 copies: the Gram, its centred copy and its factorisation
            a, b = A.shape[0], (A if Z is None else Z).shape[0]
            check_memory(8 * a * b * 4, f"EmpiricalOperator Gram {which!r} ({a}×{b})",
                         "fewer samples", detail=f"4 copies of a {a}×{b} float64 matrix")
            G = _center_gram(kernel(A) if Z is None else kernel(A, Z), rows, cols)
            self._cache[which] = check_finite_output(
                np.asarray(G, dtype=np.float64), what,
                "rescale the samples (e.g. StandardScaler) or change the kernel parameters")
        return self._cache[which]

    @property
    def gram_in(self) -> np.ndarray:
        """G_Φ = ΦᵀΦ (m×m)."""
        return self._gram("in")

    @property
    def gram_out(self) -> np.ndarray:
        """G_Ψ = ΨᵀΨ (n×n)."""
        return self._gram("out")

    def factor(self, which: str) -> GramFactor:
        """Kernel QR factor of G_Φ (``'in'``) or G_Ψ (``'out'``), computed once.

        Parameters
        ----------
        which : {'in', 'out'}
            Which Gram matrix.

        Returns
        -------
        GramFactor
            The factor R with G = RᵀR (cached).
        """
        key = "F_" + which
        if key not in self._cache:
            G = self.gram_in if which == "in" else self.gram_out
            name = "Gram matrix of X (input)" if which == "in" else "Gram matrix of Y (output)"
            self._cache[key] = kernel_qr(G, jitter=self.jitter, name=name)
        return self._cache[key]

    def set_factor(self, which: str, factor: GramFactor) -> None:
        """Install a precomputed kernel QR factor (e.g. an eigendecomposition already at hand).

        Parameters
        ----------
        which : {'in', 'out'}
            Which Gram matrix it factors.
        factor : GramFactor
            The factor; its size must be m ('in') or n ('out').

        Raises
        ------
        ValueError
            If the factor has the wrong size.
        """
        size = self.shape[1] if which == "in" else self.shape[0]
        if factor.size != size:
            raise ValueError(f"factor has size {factor.size}; expected {size}")
        self._cache["F_" + which] = factor

    @property
    def same_space(self) -> bool:
        """True when H = F (same kernel, same feature dimension): eig is defined."""
        return (self.kernel_in == self.kernel_out and self.X.shape[1] == self.Y.shape[1]
                and self.center_in == self.center_out)

    def _fn_in(self, C) -> RKHSFunction:
        C = _center_coef(C) if self.center_in else C
        return RKHSFunction(self.kernel_in, self.X, C)

    def _fn_out(self, C) -> RKHSFunction:
        C = _center_coef(C) if self.center_out else C
        return RKHSFunction(self.kernel_out, self.Y, C)

    def _signed(self, side: str, C, *pair) -> tuple:
        """``C`` (and the coefficient arrays ``pair`` that go with it) with each column
        scaled by the sign rule of every operator estimator, read on the values of C's
        functions at their own samples (X for ``side='in'``, Y for ``'out'``; centred
        functions with centring): the largest magnitude, the lowest index on a tie, made
        real positive (:func:`~asymkern.operators._numerics.value_phases`). Values, unlike
        coefficients, do not depend on the route (``method``) nor on which coefficients
        represent a function when the Gram matrix is singular; eigen- and singular functions
        are defined up to a unit factor only (Mollenhauer et al., 2020)."""
        G, c = (self.gram_in, self.center_in) if side == "in" else (self.gram_out,
                                                                     self.center_out)
        phases = value_phases(G @ (_center_coef(C) if c else C))
        return tuple(A * phases for A in (C, *pair))

    # -- decompositions --------------------------------------------------------------------------
    def svd(self, n_components: int | None = None, method: str = "qr", *, solver: str = "auto",
            rtol: float | None = None) -> OperatorSVD:
        """Top-k SVD S = Σ σ_i u_i ⊗ v_i (Mollenhauer et al., 2020, Cor. 3.5, Prop. 3.13, Thm.
        3.17).

        ``method``: ``'qr'`` (kernel QR), ``'auxiliary'`` or ``'block'``; ``solver``: ``'auto'``,
        ``'dense'`` or ``'arpack'`` (for the eigenproblems; the QR route uses
        :func:`asymkern.linalg.top_svd`). ``n_components=None``: all numerically nonzero singular
        values (dense solvers). Each pair (u_i, v_i) is signed by the rule of every operator
        estimator, read on the values of v_i at X (centred values with ``center_in``): the
        largest magnitude positive, the lowest index on a tie. The three routes therefore give
        the same functions, signs included.

        Parameters
        ----------
        n_components : int or None, default None
            Number k of singular triplets; None = all numerically nonzero ones.
        method : {'qr', 'auxiliary', 'block'}, default 'qr'
            SVD of R_Ψ B R_Φᵀ (Cor. 3.5), the auxiliary eigenproblem (Prop. 3.13) or the
            block eigenproblem (Thm. 3.17).
        solver : {'auto', 'dense', 'arpack'}, default 'auto'
            Eigen/SVD solver.
        rtol : float or None, default None
            Numerical-rank threshold σ_k/σ_1 in [0, 1) (default 1e-10; 1e-7 for the auxiliary
            route, whose eigenvalues are σ², and the block route, whose zero eigenvalue is
            defective for rank-deficient Gram matrices).

        Returns
        -------
        OperatorSVD
            Singular values and left/right singular functions.

        Raises
        ------
        ValueError
            If ``method`` is unknown, ``rtol`` is not None or a finite number in [0, 1), or
            more components than the numerical rank are asked for.
        """
        if method not in SVD_METHODS:
            raise ValueError(f"unknown method {method!r}; expected one of {SVD_METHODS}")
        rtol = _check_rtol(rtol)
        if method == "qr":
            res = svd_qr(self.factor("in"), self.factor("out"), self.B, n_components,
                         solver=solver, rtol=rtol)
        else:
            route = svd_auxiliary if method == "auxiliary" else svd_block
            res = route(self.gram_in, self.gram_out, self.B, n_components, solver=solver,
                        rtol=rtol)
        # each pair (u_i, v_i) signed by the values of v_i at X, as the estimators do
        C_v, C_u = self._signed("in", res.C_v, res.C_u)
        return OperatorSVD(res.s, self._fn_out(C_u), self._fn_in(C_v), res.method,
                           dict(res.info))

    def is_self_adjoint(self) -> bool:
        """S = Φ B Φᵀ with the same samples on both sides and B symmetric (checked on B̃).

        Returns
        -------
        bool
            True when S is self-adjoint (B's symmetry probed with random vectors).
        """
        if not self.same_space or self.X.shape != self.Y.shape:
            return False
        if self.X is not self.Y:
            if sp.issparse(self.X) or sp.issparse(self.Y):
                if not (sp.issparse(self.X) and sp.issparse(self.Y)) or (self.X != self.Y).nnz:
                    return False
            elif not np.array_equal(self.X, self.Y):
                return False
        # probe: B is symmetric iff Zᵀ B Z is, for random Z (almost surely); B is never formed
        Z = np.random.default_rng(0).standard_normal((self.shape[1], 5))
        lhs = Z.T @ np.asarray(self.B.matmat(Z))
        scale = max(float(np.abs(lhs).max()), 1e-300)
        return bool(np.max(np.abs(lhs - lhs.T)) <= 1e-10 * scale)

    def eig(self, n_components: int | None = None, method: str = "auto", *,
            solver: str = "auto") -> OperatorEig:
        """Top-k eigenpairs (by ``|λ|``) of S : H → H (needs H = F): Prop. 3.8 / Cor. 3.6.

        ``method``: ``'auxiliary'`` (eigenproblem of B ΦᵀΨ; any operator, complex eigenpairs
        possible), ``'qr'`` (self-adjoint operators: eigh of R B Rᵀ) or ``'auto'`` (``'qr'`` when
        S is self-adjoint). Eigenfunctions live on the output samples Y ('auxiliary') or the
        input samples X ('qr'), normalised in the RKHS; each one's sign (complex phase) makes
        its largest-magnitude value at those samples real and positive (the lowest index on a
        tie; centred values with centring), the rule of every operator estimator.

        Parameters
        ----------
        n_components : int or None, default None
            Number k of eigenpairs (largest ``|λ|``); None = all.
        method : {'auto', 'qr', 'auxiliary'}, default 'auto'
            See above.
        solver : {'auto', 'dense', 'arpack'}, default 'auto'
            Eigensolver of the auxiliary route (checked whichever route runs).

        Returns
        -------
        OperatorEig
            Eigenvalues and eigenfunctions.

        Raises
        ------
        ValueError
            If H ≠ F, ``method`` or ``solver`` is unknown, or 'qr' is asked for a
            non-self-adjoint operator.
        """
        if not self.same_space:
            raise ValueError("eig needs an operator from a space to itself: kernel_in and "
                             "kernel_out must be the same kernel on samples of the same "
                             "dimension (use svd otherwise)")
        if method not in EIG_METHODS:
            raise ValueError(f"unknown method {method!r}; expected one of {EIG_METHODS}")
        if not isinstance(solver, str) or solver not in EIG_SOLVERS:
            raise ValueError(f"unknown solver {solver!r}; expected one of {EIG_SOLVERS}")
        if method == "auto":
            method = "qr" if self.is_self_adjoint() else "auxiliary"
        if method == "qr":
            if not self.is_self_adjoint():
                raise ValueError("eig method 'qr' needs a self-adjoint operator (same samples on "
                                 "both sides and symmetric B); use method='auxiliary'")
            res = eig_qr(self.factor("in"), self.B, n_components)
            (C,) = self._signed("in", res.C)
            return OperatorEig(res.eigenvalues, self._fn_in(C), "qr", dict(res.info))
        res = eig_auxiliary(self._gram("cross"), self.gram_out, self.B, n_components,
                            solver=solver)
        (C,) = self._signed("out", res.C)
        return OperatorEig(res.eigenvalues, self._fn_out(C), "auxiliary", dict(res.info))

    # -- operations ------------------------------------------------------------------------------
    def apply(self, f: RKHSFunction) -> RKHSFunction:
        """S f for f ∈ H given as an :class:`RKHSFunction` of ``kernel_in``: Ψ B [f(x_j)]_j.

        Parameters
        ----------
        f : RKHSFunction
            Function(s) of ``kernel_in``.

        Returns
        -------
        RKHSFunction
            S f, expanded on the output samples Y.
        """
        return self._apply_on(f, self.X, self.center_in, self.B.matmat, self._fn_out)

    def apply_adjoint(self, g: RKHSFunction) -> RKHSFunction:
        """S* g = Φ Bᵀ [g(y_i)]_i (Prop. 3.3 (ii)).

        Parameters
        ----------
        g : RKHSFunction
            Function(s) of ``kernel_out``.

        Returns
        -------
        RKHSFunction
            S* g, expanded on the input samples X.
        """
        return self._apply_on(g, self.Y, self.center_out, lambda v: _rmm(self.B, v),
                              self._fn_in)

    @staticmethod
    def _apply_on(f: RKHSFunction, samples, center: bool, product, expand) -> RKHSFunction:
        """``expand(product(v))`` of the (centred) values v of f on ``samples``: the body of
        :meth:`apply` (product B, samples X) and :meth:`apply_adjoint` (Bᵀ, Y)."""
        vals = np.asarray(f(samples))
        vals = vals[:, None] if vals.ndim == 1 else vals
        if center:
            vals = vals - vals.mean(axis=0, keepdims=True)
        out = np.asarray(product(vals))
        if f._vector:
            out = out[:, 0]
        return expand(out)

    def adjoint(self) -> EmpiricalOperator:
        """S* = Φ Bᵀ Ψᵀ : F → H as an :class:`EmpiricalOperator`.

        Returns
        -------
        EmpiricalOperator
            The adjoint (input and output swapped, B transposed).
        """
        return EmpiricalOperator(self.kernel_out, self.Y, self.kernel_in, self.X, self.B.T,
                                 center_in=self.center_out, center_out=self.center_in,
                                 jitter=self.jitter)

    def hs_norm(self) -> float:
        """Hilbert–Schmidt norm ‖S‖_HS = tr(Bᵀ G_Ψ B G_Φ)^{1/2} = ‖R_Ψ B R_Φᵀ‖_F (Remark 2.5).

        Returns
        -------
        float
            The Hilbert–Schmidt norm.
        """
        Fi, Fo = self.factor("in"), self.factor("out")
        return float(np.linalg.norm(Fo.R @ np.asarray(self.B.matmat(Fi.R.T))))

    def truncate(self, n_components: int, method: str = "qr") -> EmpiricalOperator:
        """Best rank-k approximation S_k = Σ_{i≤k} σ_i u_i ⊗ v_i (Eckart–Young, §4.1).

        Returned as an :class:`EmpiricalOperator` on the same samples with
        B_k = C_u diag(σ) C_vᵀ (C_u, C_v the singular-function coefficients).

        Parameters
        ----------
        n_components : int
            Rank k.
        method : {'qr', 'auxiliary', 'block'}, default 'qr'
            SVD route (see :meth:`svd`).

        Returns
        -------
        EmpiricalOperator
            S_k on the same samples.
        """
        res = self.svd(n_components, method=method)
        Bk = (res.left.coef * res.singular_values) @ res.right.coef.T
        # centring is already folded into the coefficients
        return EmpiricalOperator(self.kernel_in, self.X, self.kernel_out, self.Y, Bk,
                                 jitter=self.jitter)

    def pinv_apply(self, g, n_components: int | None = None, *, method: str = "qr",
                   rtol: float | None = None) -> RKHSFunction:
        """Minimum-norm least-squares solution S⁺g = Σ σ_i⁻¹ ⟨u_i, g⟩ v_i (§4.1).

        ``g`` is an :class:`RKHSFunction` of ``kernel_out`` (any expansion points);
        ⟨u_i, g⟩ is computed by the reproducing property. ``n_components`` truncates the SVD
        (regularisation by truncation); default: the numerical rank.

        Parameters
        ----------
        g : RKHSFunction
            Function(s) of ``kernel_out``.
        n_components : int or None, default None
            Truncation rank of the SVD; None = the numerical rank.
        method : {'qr', 'auxiliary', 'block'}, default 'qr'
            SVD route (see :meth:`svd`).
        rtol : float or None, default None
            Numerical-rank threshold (see :meth:`svd`).

        Returns
        -------
        RKHSFunction
            S⁺g, expanded on the input samples X.

        Raises
        ------
        TypeError
            If g is not an RKHSFunction.
        ValueError
            If g is not a function of ``kernel_out``.
        """
        if not isinstance(g, RKHSFunction):
            raise TypeError("g must be an RKHSFunction of kernel_out (e.g. from op.apply(...))")
        if g.kernel != self.kernel_out:
            raise ValueError("g must be a function of the output kernel kernel_out")
        res = self.svd(n_components, method=method, rtol=rtol)
        proj = res.left.inner(g)  # ⟨u_i, g⟩ by the reproducing property
        C = res.right.coef @ (proj / res.singular_values[:, None])
        if g._vector:
            C = C[:, 0]
        return RKHSFunction(self.kernel_in, self.X, C)

    def __repr__(self) -> str:
        return (f"EmpiricalOperator(n={self.shape[0]}, m={self.shape[1]}, "
                f"kernel_in={self.kernel_in!r}, kernel_out={self.kernel_out!r})")


class MatmatOperator(LinearOperator):
    """A picklable LinearOperator defined by ``_apply(V)`` (B V) and ``_apply_t(V)`` (Bᵀ V).

    Subclasses implement both on 2-D blocks; vectors are handled by reshaping and complex
    blocks by their real and imaginary parts. Used for the coefficient matrices B of the
    operator estimators.

    Parameters
    ----------
    shape : tuple of int
        (rows, columns) of B.

    See Also
    --------
    scaled_identity : A MatmatOperator for scale·I.
    scipy.sparse.linalg.LinearOperator : The base class.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators.empirical import MatmatOperator
    >>> class Double(MatmatOperator):
    ...     def _apply(self, V):
    ...         return 2 * V
    ...     _apply_t = _apply
    >>> (Double((3, 3)) @ np.ones(3)).tolist()
    [2.0, 2.0, 2.0]
    """

    def __init__(self, shape):
        super().__init__(dtype=np.dtype(np.float64), shape=tuple(shape))

    def __getstate__(self):
        # scipy >= 1.18 keeps its array namespace (a module, not picklable) as ``_xp``: dropped
        # here, set again by LinearOperator.__init__ on unpickling
        state = self.__dict__.copy()
        state.pop("_xp", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        LinearOperator.__init__(self, dtype=state["dtype"], shape=state["shape"])

    def _apply(self, V):  # pragma: no cover - abstract
        raise NotImplementedError

    def _apply_t(self, V):  # pragma: no cover - abstract
        raise NotImplementedError

    def _matmat(self, V):
        return self._by_real_parts(V, self._matmat, self._apply)

    def _rmatmat(self, V):
        return self._by_real_parts(V, self._rmatmat, self._apply_t)

    @staticmethod
    def _by_real_parts(V, matmat, apply):
        """``apply(V)`` in float64; a complex V as ``matmat(Re V) + i·matmat(Im V)``."""
        V = np.asarray(V)
        if np.iscomplexobj(V):
            return matmat(V.real) + 1j * matmat(V.imag)
        return apply(V.astype(np.float64, copy=False))

    def _matvec(self, v):
        return self._matmat(np.reshape(v, (-1, 1))).ravel()

    def _rmatvec(self, v):
        return self._rmatmat(np.reshape(v, (-1, 1))).ravel()


class ScaledIdentity(MatmatOperator):
    """scale·I (or scale·H, H = I − 11ᵀ/n, when ``center``) — applied through means."""

    def __init__(self, n: int, scale: float, center: bool = False):
        super().__init__((n, n))
        self.scale = float(scale)
        self.center = bool(center)

    def _apply(self, V):
        return self.scale * (V - V.mean(axis=0, keepdims=True) if self.center else V)

    _apply_t = _apply


def scaled_identity(n: int, scale: float, center: bool = False) -> LinearOperator:
    """scale·I (or scale·H when ``center``) as a LinearOperator.

    H = I − 11ᵀ/n is applied through column means, never formed.

    Parameters
    ----------
    n : int
        Size.
    scale : float
        The factor.
    center : bool, default False
        Return scale·H instead of scale·I.

    Returns
    -------
    LinearOperator
        An (n, n) picklable operator.

    See Also
    --------
    MatmatOperator : The base class.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators.empirical import scaled_identity
    >>> (scaled_identity(3, 0.5, center=True) @ np.array([1.0, 2.0, 3.0])).tolist()
    [-0.5, 0.0, 0.5]
    """
    return ScaledIdentity(n, scale, center)


__all__ = ["EmpiricalOperator", "MatmatOperator", "OperatorEig", "OperatorSVD", "RKHSFunction",
           "as_rkhs_kernel", "scaled_identity"]
