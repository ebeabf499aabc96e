"""Estimators of RKHS operators from data (paper 002, §4), each exposing its operator's SVD/EVD.

Every estimator builds an :class:`~asymkern.operators.EmpiricalOperator` ``operator_`` = Ψ B Φᵀ in
``fit`` and offers ``svd``/``eig`` (delegated to it) plus what a user of that operator expects:

============================  ==================================================================
estimator                     B (S = Ψ B Φᵀ), paper 002
============================  ==================================================================
CovarianceOperator            I/n, Ψ = Φ (§4.2) — eigenvalues/Mercer eigenfunctions (Ex. 3.10)
CrossCovarianceOperator       I/n (§4.2) — singular values/functions (Ex. 3.16)
ConditionalMeanEmbedding      (G_Φ + nεI)⁻¹ (§4.3, Tikhonov) — E[g(Y) | X = x]
KoopmanOperator               (G_Φ + nεI)⁻¹ with the roles of X_t, X_{t+τ} swapped (§4.4);
                              PCR/RRR: rank-r U Vᵀ (Kostic et al. 2022), see the class
PerronFrobeniusOperator       G_ΦΨ⁻¹ (G_Φ + nεI)⁻¹ G_ΦΨ (§4.4);
                              PCR/RRR: V Uᵀ, the adjoint of the Koopman U Vᵀ, see the class
KernelCCA                     (G_Ψ + nεI)^{-1/2} (G_Φ + nεI)^{-1/2} (App. A.2, regularised)
============================  ==================================================================

The Tikhonov parameter ε (``alpha``; ``regularization`` is its deprecated former name)
regularises the covariance operator, C + εI; on the
Gram matrices it appears as G + nεI. Inverses are never formed: B is a LinearOperator backed by a
Cholesky (or LU) factorisation, or by the eigendecomposition the matrix square roots need.

Conventions (scikit-learn)
--------------------------
* **The second data set is** ``y``. For :class:`CrossCovarianceOperator` and :class:`KernelCCA`
  it is the *paired second view* (samples (x_i, y_i), as scikit-learn's ``CCA``/``PLSSVD``):
  ``fit(X, y)``; ``transform(X)`` gives the X scores, ``transform(X, y)`` the pair
  ``(x_scores, y_scores)``. For :class:`ConditionalMeanEmbedding` it is the output sample
  (any number of columns, or 1-D: a regressor's target). For :class:`KoopmanOperator` and
  :class:`PerronFrobeniusOperator` it is the *time-shifted snapshots* y_i = Ξ^τ(x_i):
  ``fit(X)`` (y=None) takes X as one trajectory and pairs (x_t, x_{t+lag}); ``fit(X, y)``
  requires y of X's shape (n, d) — a 1-D y only when d = 1 — and refuses anything else (e.g.
  class labels) with a ``ValueError`` naming y and the expected shape, never fitting a
  different model silently. The former keyword ``Y=`` is a deprecated alias (FutureWarning).
* ``n_components`` (``n_landmarks``) larger than the numerical rank (the number of samples) is
  clipped with a :class:`~asymkern.exceptions.ClippedParameterWarning`; the value used is
  ``n_components_`` (``n_landmarks_``), and the transformers' outputs have ``n_components_``
  columns (``get_feature_names_out``).
* ``random_state``: None, an int or a ``numpy.random.RandomState`` (a ``Generator`` is refused).
* Sparse (CSR) X, and y, are accepted where the kernel accepts them (``kernel.accepts_sparse``;
  exact estimators only — the landmark paths and ConditionalMeanEmbedding's X are dense); the
  ``input_tags.sparse`` tag says so.
* Pickles hold the samples and the O(n·k) coefficients only: the n×n Gram matrices and
  factorisations are recomputed from the samples on first use after unpickling.
"""

from __future__ import annotations

import types
import warnings
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackNoConvergence
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    RegressorMixin,
    TransformerMixin,
)
from sklearn.utils.validation import check_is_fitted

from .._shared.operators import (
    _add_stats,
    _check_int,
    _check_landmark_options,
    _check_reg,
    _check_timestep,
    landmark_evaluate,
    landmark_stats,
    landmark_whitening,
)
from .._torch import use_torch
from .._validation import (
    DEPRECATED,
    as_data,
    as_weights,
    check_finite_output,
    check_finite_result,
    check_input,
    clip_count,
    renamed_argument,
    renamed_param,
)
from ..linalg.operator_svd import gram_eigh
from ._koopman import (
    ESTIMATORS,
    pcr_dual,
    pcr_primal,
    reduced_eig,
    rrr_dual,
    rrr_primal,
)
from .empirical import (
    EmpiricalOperator,
    MatmatOperator,
    OperatorEig,
    RKHSFunction,
    _center_coef,
    _center_gram,
    as_rkhs_kernel,
    scaled_identity,
)

_RESCALE = "rescale X (e.g. StandardScaler) or change the kernel parameters"


class IllConditionedLaggedGramWarning(RuntimeWarning):
    """A PerronFrobeniusOperator regularised its ill-conditioned time-lagged Gram matrix.

    Raised (as a warning) when the reciprocal condition number of G_XY = [k(x_i, y_j)] is below
    ``PerronFrobeniusOperator.RCOND_MIN``; the estimator then uses the Tikhonov-regularised inverse
    (see :class:`PerronFrobeniusOperator`).

    See Also
    --------
    PerronFrobeniusOperator : the estimator that emits it.

    Examples
    --------
    >>> import warnings
    >>> from asymkern.operators import IllConditionedLaggedGramWarning
    >>> issubclass(IllConditionedLaggedGramWarning, RuntimeWarning)
    True
    """


def _like_input(X_in, values):
    """Outputs follow the input's precision: float32 input gives float32 values (complex64 for
    complex eigenfunction values); the computation itself is float64."""
    if getattr(X_in, "dtype", None) == np.float32:
        return values.astype(np.complex64 if np.iscomplexobj(values) else np.float32)
    return values


class _Recomputable:
    """Mixin: the heavy (n×n) factorisations named in ``_heavy`` are not pickled.

    They are recomputed from the samples and parameters the object keeps (``_rebuild``) on first
    use after unpickling, so a fitted estimator pickles in O(n·d + n·k), not O(n²).
    """

    _heavy: tuple = ()

    def __getstate__(self):
        state = super().__getstate__()  # MatmatOperator's: a dict copy
        if state.get("_source") is not None:
            for key in self._heavy:
                state.pop(key, None)
        return state

    def __getattr__(self, name):  # called only for attributes that are missing
        if name in type(self)._heavy and self.__dict__.get("_source") is not None:
            self._rebuild()
            return self.__dict__[name]
        raise AttributeError(name)

    def _rebuild(self):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def lazy(cls, shape: tuple, source, **attrs):
        """An instance whose heavy factorisations are computed from ``source`` on first use.

        For a fit on the torch backend, which decomposes on the device: the numpy operator's
        own methods (``operator_.svd`` …) then factorise with numpy only if they are called.
        ``attrs`` are the light attributes of the class (e.g. ``shift``, ``name``).
        """
        obj: Any = cls.__new__(cls)
        MatmatOperator.__init__(obj, shape)
        obj.__dict__.update(attrs)
        obj._source = source
        return obj


def _sym_gram(kernel, X, center: bool = False) -> np.ndarray:
    G = np.asarray(kernel(X), dtype=np.float64)
    check_finite_output(G, "the Gram matrix of the samples", _RESCALE)
    return _center_gram(G, center, center) if center else G


class CholeskyInverse(_Recomputable, MatmatOperator):
    """(G + shift·I)⁻¹ as a symmetric LinearOperator backed by a Cholesky factor (never formed).

    ``source=(kernel, X)``: G = kernel(X); the factor is then not pickled but recomputed.
    """

    _heavy = ("cho",)

    def __init__(self, G: np.ndarray, shift: float, name: str = "G", source=None):
        n = G.shape[0]
        super().__init__((n, n))
        self.shift, self.name, self._source = float(shift), name, source
        self.cho = self._factor(G)

    def _factor(self, G):
        n = G.shape[0]
        try:
            return sla.cho_factor(G + self.shift * np.eye(n), lower=False, check_finite=False)
        except np.linalg.LinAlgError as exc:
            raise ValueError(
                f"{self.name} + nεI is not positive definite (nε = {self.shift:.3g}); the kernel "
                "must be PSD and alpha large enough"
            ) from exc

    def _rebuild(self):
        kernel, X = self._source
        self.cho = self._factor(_sym_gram(kernel, X))

    def _apply(self, V):
        return sla.cho_solve(self.cho, V, check_finite=False)

    _apply_t = _apply


class LaggedGramSolver:
    """Solves with the time-lagged Gram matrix G_XY = [k(x_i, y_j)] (square, not symmetric).

    G_XY is LU-factorised and its reciprocal condition number ``rcond`` (1-norm, LAPACK ``gecon``)
    estimated *before* any further LAPACK call. When ``rcond ≥ rcond_min`` the exact inverse is
    used (``kind = 'lu'``). Otherwise (numerically singular or ill-conditioned, e.g. exact repeats
    in a trajectory, or i.i.d. samples with a smooth kernel) G_XY⁻¹ is replaced by the Tikhonov-
    regularised inverse (``kind = 'tikhonov'``)

        G_XY^{+δ} = (G_XYᵀ G_XY + δ² I)⁻¹ G_XYᵀ = V diag(σ_i / (σ_i² + δ²)) Uᵀ,

    from the SVD G_XY = U diag(σ) Vᵀ, i.e. the minimiser of ‖G_XY w − v‖² + δ²‖w‖², whose filter
    factors σ²/(σ² + δ²) damp the directions with σ ≲ δ that an exact solve would amplify by 1/σ.
    """

    def __init__(self, Gxy: np.ndarray, delta: float, rcond_min: float):
        n = Gxy.shape[0]
        self.shape = Gxy.shape
        self.delta = float(delta)
        anorm = float(np.abs(Gxy).sum(axis=0).max())
        with warnings.catch_warnings():  # an exactly singular G_XY is detected just below
            warnings.simplefilter("ignore", sla.LinAlgWarning)
            lu = sla.lu_factor(Gxy, check_finite=False)
        piv = np.abs(np.diag(lu[0]))
        if anorm > 0 and np.all(np.isfinite(lu[0])) and piv.min() > 0:
            rcond = float(sla.lapack.dgecon(lu[0], anorm, norm="1")[0])
            rcond = rcond if np.isfinite(rcond) else 0.0
        else:
            rcond = 0.0
        self.rcond = rcond
        if rcond >= rcond_min:
            self.kind, self.lu = "lu", lu
        else:
            self.kind = "tikhonov"
            U, s, Vt = sla.svd(Gxy, full_matrices=False, check_finite=False,
                               lapack_driver="gesvd")
            self.U, self.Vt, self.s = U, Vt, s
            self.filt = s / (s**2 + self.delta**2)
            self.n_damped = int(np.sum(s < self.delta))
        self.n = n

    def solve(self, V):
        """G_XY⁻¹ V (or G_XY^{+δ} V)."""
        if self.kind == "lu":
            return sla.lu_solve(self.lu, V, check_finite=False)
        return self.Vt.T @ (self.filt[:, None] * (self.U.T @ V))

    def solve_t(self, V):
        """G_XY⁻ᵀ V (or (G_XY^{+δ})ᵀ V)."""
        if self.kind == "lu":
            return sla.lu_solve(self.lu, V, trans=1, check_finite=False)
        return self.U @ (self.filt[:, None] * (self.Vt @ V))


class PerronFrobeniusRepresentation(_Recomputable, MatmatOperator):
    """B = G_XY⁻¹ (G_X + nεI)⁻¹ G_XY (G_XY⁻¹ as given by a :class:`LaggedGramSolver`).

    ``source=(kernel, X0, X1, delta, rcond_min)``: the factors are recomputed after unpickling.
    """

    _heavy = ("Gxy", "inv", "solver")

    def __init__(self, Gxy: np.ndarray, inv: CholeskyInverse, solver: LaggedGramSolver,
                 source=None):
        super().__init__(Gxy.shape)
        self.Gxy, self.inv, self.solver, self._source = Gxy, inv, solver, source

    def _rebuild(self):
        kernel, X0, X1, delta, rcond_min = self._source
        self.Gxy = np.asarray(kernel(X0, X1), dtype=np.float64)
        self.inv = CholeskyInverse(_sym_gram(kernel, X0), delta, "G_X")
        self.solver = LaggedGramSolver(self.Gxy, delta, rcond_min)

    def _apply(self, V):
        return self.solver.solve(self.inv._apply(self.Gxy @ V))

    def _apply_t(self, V):
        W = self.solver.solve_t(V)
        return self.Gxy.T @ self.inv._apply(W)


class CCARepresentation(_Recomputable, MatmatOperator):
    """B = (G_Ψ + nεI)^{-1/2} (G_Φ + nεI)^{-1/2} from eigendecompositions U diag(d) Uᵀ.

    ``source=(kx, X, ky, Y, center, shift)``: the eigenvectors are recomputed after unpickling.
    """

    _heavy = ("Ux", "dx", "Uy", "dy")

    def __init__(self, Ux, dx, Uy, dy, source=None):
        super().__init__((Uy.shape[0], Ux.shape[0]))
        self.Ux, self.dx, self.Uy, self.dy, self._source = Ux, dx, Uy, dy, source

    def _rebuild(self):
        kx, X, ky, Y, center, shift = self._source
        Fx = gram_eigh(_sym_gram(kx, X, center), name="Gram matrix of X")
        Fy = gram_eigh(_sym_gram(ky, Y, center), name="Gram matrix of y")
        self.Ux, self.dx = Fx.evecs, 1.0 / np.sqrt(Fx.evals + shift)
        self.Uy, self.dy = Fy.evecs, 1.0 / np.sqrt(Fy.evals + shift)

    def _apply(self, V):
        W = self.Ux @ (self.dx[:, None] * (self.Ux.T @ V))
        return self.Uy @ (self.dy[:, None] * (self.Uy.T @ W))

    def _apply_t(self, V):
        W = self.Uy @ (self.dy[:, None] * (self.Uy.T @ V))
        return self.Ux @ (self.dx[:, None] * (self.Ux.T @ W))


# ------------------------------------------------------------------- Nyström (landmark) restriction
class LandmarkFunction(RKHSFunction):
    """f_j = Σ_l C_lj k(x̃_l, ·) with expansion points the landmarks x̃_l (an :class:`RKHSFunction`).

    Evaluable on numpy arrays (numpy out) and on row-chunked dask arrays (a dask array out, one
    task per chunk calling the same in-memory evaluation).
    """

    def __call__(self, Z):
        from .._dask import is_dask_array

        if is_dask_array(Z):
            from .._dask.operators import evaluate_dask

            vals = evaluate_dask(self.kernel, self.centers, self.coef, Z)
            return vals[:, 0] if self._vector else vals
        return super().__call__(Z)

    def __getitem__(self, idx) -> LandmarkFunction:
        return LandmarkFunction(self.kernel, self.centers, self.coef[:, idx])


def _landmark_stats_in_memory(kernel, L, T, X, X1=None, Y=None) -> tuple:
    from ..config import get_config

    n, m = X.shape[0], L.shape[0]
    step = max(1, int(get_config()["working_memory"] * 2**20 // (8 * 4 * max(m, 1))))
    out = None
    for a in range(0, n, step):
        sl = slice(a, min(a + step, n))
        part = landmark_stats(kernel, L, T, X[sl], None if X1 is None else X1[sl],
                              None if Y is None else Y[sl])
        out = part if out is None else _add_stats(out, part)
    assert out is not None  # n ≥ 1: X was validated by the caller
    return out


def landmark_inverse(Aw: np.ndarray, n: int, eps: float) -> np.ndarray:
    """M = (FᵀF + nεI)⁻¹ (p×p, Cholesky) — the regularised inverse in whitened features.

    In landmark coordinates B_L = T M Tᵀ = (K_LnK_nL + nεK_LL)⁻¹ when K_LL is invertible (the
    Nyström / subset-of-regressors Tikhonov solution); with every sample a landmark,
    K_nL B_L K_Ln = G (G + nεI)⁻¹, so the estimators equal the exact ones (paper 002 §4.3–4.4).
    """
    Aw = 0.5 * (np.asarray(Aw, dtype=np.float64) + np.asarray(Aw, dtype=np.float64).T)
    Aw[np.diag_indices_from(Aw)] += n * eps
    try:
        cho = sla.cho_factor(Aw, check_finite=False)
    except np.linalg.LinAlgError as exc:  # pragma: no cover - Aw ⪰ nεI in exact arithmetic
        raise ValueError("the landmark system FᵀF + nεI is not positive definite; increase the "
                         "regularization") from exc
    return sla.cho_solve(cho, np.eye(Aw.shape[0]), check_finite=False)


class _LandmarkRepresentation(MatmatOperator):
    """n×n representation B of a Nyström-restricted operator S = Ψ B Φᵀ (in-memory fits).

    With the whitened features F = K_nL T and M = (FᵀF + nεI)⁻¹: ``side='in'`` (conditional
    mean embedding, landmarks among the inputs) B = F M Tᵀ Pᵀ; ``side='out'`` (Koopman,
    landmarks among the outputs) B = P T M Fᵀ. P (n×m) selects the landmark rows.
    """

    def __init__(self, F: np.ndarray, M: np.ndarray, T: np.ndarray, idx: np.ndarray, side: str):
        n = F.shape[0]
        super().__init__((n, n))
        self.F, self.M, self.Tw, self.idx, self.side = F, M, T, np.asarray(idx), side

    def _scatter(self, V):
        out = np.zeros((self.shape[0], V.shape[1]))
        out[self.idx] = V
        return out

    def _apply(self, V):
        if self.side == "in":
            return self.F @ (self.M @ (self.Tw.T @ V[self.idx]))
        return self._scatter(self.Tw @ (self.M @ (self.F.T @ V)))

    def _apply_t(self, V):
        if self.side == "in":
            return self._scatter(self.Tw @ (self.M.T @ (self.F.T @ V)))
        return self.F @ (self.M.T @ (self.Tw.T @ V[self.idx]))


class _LowRank(MatmatOperator):
    """B = U Vᵀ (n×n, rank r) of a reduced-rank Koopman estimator (PCR/RRR), never formed."""

    def __init__(self, U: np.ndarray, V: np.ndarray):
        super().__init__((U.shape[0], V.shape[0]))
        self.U, self.V = U, V

    def _apply(self, W):
        return self.U @ (self.V.T @ W)

    def _apply_t(self, W):
        return self.V @ (self.U.T @ W)


def _landmark_eig(C, M, k):
    """Eigenpairs of the whitened landmark Koopman matrix M C (coefficients, not functions)."""
    from ..linalg.operator_svd import eig_auxiliary

    res = eig_auxiliary(C, np.eye(M.shape[0]), M, k)
    return res.eigenvalues, res.C, "auxiliary", dict(res.info)


def _is_rank_error(exc: ValueError) -> bool:
    return "exceeds the num" in str(exc)


def _clipped_decomposition(est, decompose, limit: int, what: str):
    """``decompose(k)`` with k = ``n_components`` clipped (ClippedParameterWarning) to ``limit``,
    and, when the operator's numerical rank is smaller still, to that rank.

    Records ``n_components_``: the number of components actually returned.
    """
    owner = type(est).__name__
    k = _check_int(est.n_components, "n_components")
    k = clip_count(k, limit, "n_components", what, owner=owner)
    try:
        res = decompose(k)
    except ValueError as exc:
        if not _is_rank_error(exc):
            raise
        res = decompose(None)  # every numerically nonzero component (dense solvers)
        found = res.singular_values.size if hasattr(res, "singular_values") else \
            res.eigenvalues.size
        clip_count(k, found, "n_components", "the numerical rank of the operator", owner=owner)
    return res


class _OperatorEstimator(BaseEstimator):
    """Shared ``svd``/``eig`` delegation to the fitted ``operator_``."""

    def _alpha(self) -> float:
        return _check_reg(renamed_param(self, "alpha", "regularization"), "alpha")

    def _operator(self):
        check_is_fitted(self, "operator_")
        if self.operator_ is None:
            raise ValueError(
                f"this {type(self).__name__} was fitted on dask arrays and keeps only its "
                "landmarks and small matrices (no n×n operator representation); use its fitted "
                "attributes (eigenvalues_, eigenfunctions_, predict)"
            )
        return self.operator_

    def svd(self, n_components: int | None = None, method: str = "qr", **kwargs):
        """SVD of the estimated operator (see :meth:`EmpiricalOperator.svd`)."""
        return self._operator().svd(n_components, method=method, **kwargs)

    def eig(self, n_components: int | None = None, method: str = "auto", **kwargs):
        """Eigendecomposition of the estimated operator (see :meth:`EmpiricalOperator.eig`)."""
        return self._operator().eig(n_components, method=method, **kwargs)


def _kernel_accepts_sparse(kernel, params) -> bool:
    """Whether the kernel given as a parameter accepts sparse input (for the sparse tag)."""
    try:
        return _kernel_sparse(as_rkhs_kernel(kernel, params))
    except Exception:  # an invalid kernel is reported by fit
        return False


def _c_copy(A):
    """A float64 copy in C order (CSR stays CSR): the caller's array is never aliased, and the
    result does not depend on the memory layout of the input."""
    if sp.issparse(A):
        return sp.csr_matrix(A, dtype=np.float64, copy=True)
    return np.array(A, dtype=np.float64, order="C", copy=True)


def _same_format(A, B):
    """A and B both CSR when either is sparse (for a kernel that accepts sparse input)."""
    if sp.issparse(A) != sp.issparse(B):
        return sp.csr_matrix(A), sp.csr_matrix(B)
    return A, B


def _dense(K):
    return K.toarray() if sp.issparse(K) else K


def _kernel_sparse(kernel) -> bool:
    return bool(getattr(kernel, "accepts_sparse", False))


def _fit_X(est, X, kernel):
    """X of ``fit``: validated (``n_features_in_``/``feature_names_in_``), ≥ 2 samples, float64
    copy (the estimator never aliases the caller's array); CSR when the kernel accepts sparse."""
    X = check_input(est, X, reset=True, allow_sparse=_kernel_sparse(kernel), min_samples=2)
    return _c_copy(X)


def _second_view(y, n: int, kernel, name: str = "y"):
    """The paired second view y (same samples as X): 1-D or 2-D, dense or (if the kernel accepts
    it) CSR, returned as a 2-D float64 copy plus whether it was 1-D."""
    if y is None:
        raise ValueError(f"{name} is None; expected the paired samples {name} of shape "
                         f"(n_samples,) or (n_samples, n_features_{name}) with n_samples = {n}")
    if sp.issparse(y):
        if not _kernel_sparse(kernel):
            raise TypeError(f"{name} is a sparse matrix but the kernel {kernel!r} does not "
                            f"accept sparse input; pass {name}.toarray()")
        Y = _c_copy(as_data(y, name, allow_sparse=True))
        one_d = False
    else:
        Y = as_data(y, name, ensure_2d=False)
        if Y.ndim not in (1, 2):
            raise ValueError(f"{name} must be 1-D or 2-D (n_samples, n_features_{name}), got "
                             f"{Y.ndim} dimensions")
        one_d = Y.ndim == 1
        Y = _c_copy(Y.reshape(-1, 1) if one_d else Y)
    if Y.shape[0] != n:
        raise ValueError(f"{name} has {Y.shape[0]} samples; expected {n}, one per row of X "
                         f"(paired samples (x_i, {name}_i))")
    return Y, one_d


def _transform_X(est, X):
    """X of ``transform``/``predict``: checked against the fit (features, names)."""
    X_in = X
    X = check_input(est, X, reset=False, allow_sparse=getattr(est, "_sparse_ok", False))
    return X_in, X


class _PreservesFloat32:
    """Transformers whose ``transform`` returns float32 for float32 input."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        kernel = getattr(self, "kernel", None) or getattr(self, "kernel_x", None)
        params = getattr(self, "kernel_params", None) if hasattr(self, "kernel") else \
            getattr(self, "kernel_x_params", None)
        tags.input_tags.sparse = _kernel_accepts_sparse(kernel, params)
        return tags


class _ComponentsOut(ClassNamePrefixFeaturesOutMixin):
    """``get_feature_names_out``: ``<classname>0 … <classname>{n_components_ − 1}``."""

    @property
    def _n_features_out(self):
        return self.n_components_


class CovarianceOperator(_PreservesFloat32, _ComponentsOut, TransformerMixin, _OperatorEstimator):
    """Empirical covariance operator Ĉ_XX = (1/n) ΦΦᵀ and its eigendecomposition (paper 002 §4.2).

    ``fit`` computes the top ``n_components`` eigenpairs (kernel QR route, Cor. 3.6). With the
    uncentred operator the eigenfunctions φ_i = √λ_i e_i approximate the Mercer features of the
    kernel (Example 3.10): ``transform(X)`` returns [φ_i(x)], and k(x, x') ≈ Σ_i φ_i(x) φ_i(x').

    Parameters
    ----------
    kernel : str, Kernel or callable, default='rbf'
        A symmetric PSD kernel.
    kernel_params : dict or None, default=None
        Keyword arguments of the kernel.
    n_components : int, default=5
        Number of eigenpairs; more than the numerical rank of the Gram matrix is clipped with a
        :class:`~asymkern.exceptions.ClippedParameterWarning` (``n_components_``: the number kept).
    center : bool, default=False
        Use centred features (the covariance in the usual sense).
    jitter : float, default=0.0
        Diagonal added to the Gram matrix before factorising it.
    device : None, str or torch.device, default=None
        Run ``fit`` / ``transform`` on the torch backend on this device (``'cpu'``,
        ``'cuda'``, …): the Gram matrix is formed and eigendecomposed there
        (``torch.linalg.eigh``, float64, as the numpy path computes) and numpy inputs give
        numpy outputs. ``None``: the numpy path for numpy input, the tensor's own device for
        torch tensors (which give tensors back, dtype kept). Supports the kernels of
        ``asymkern._torch.kernels.SUPPORTED_KERNELS``; needs PyTorch
        (``pip install "asymkern[torch]"``). The eigenvalues equal the numpy path's to
        rounding; eigenfunctions agree up to sign (LAPACK leaves it free on both paths).

    Attributes
    ----------
    operator_ : EmpiricalOperator
        The fitted operator (after a torch fit: the numpy operator on the same samples; its
        own methods run with numpy).
    eigenvalues_ : ndarray of shape (``n_components_``,)
        Eigenvalues, descending (a float64 tensor on the device after a fit on tensors).
    eigenfunctions_ : RKHSFunction
        RKHS-normalised eigenfunctions e_i (e_i = φ_i / √λ_i); numpy, also after a torch fit
        (``transform`` evaluates them on the device).
    n_components_ : int
        Number of eigenpairs kept.

    See Also
    --------
    CrossCovarianceOperator : the cross-covariance Ĉ_YX and its SVD.
    asymkern.operators.EmpiricalOperator : the operator and its ``svd``/``eig``.

    References
    ----------
    .. [1] Paper 002, §4.2 and Example 3.10 (Mercer features from Ĉ_XX).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import CovarianceOperator
    >>> X = np.random.RandomState(0).uniform(-1, 1, size=(60, 2))
    >>> cov = CovarianceOperator(kernel="polynomial", n_components=3).fit(X)
    >>> cov.transform(X).shape
    (60, 3)
    >>> bool(np.all(np.diff(cov.eigenvalues_) <= 0))
    True
    """

    def __init__(self, kernel="rbf", kernel_params=None, n_components: int = 5,
                 center: bool = False, jitter: float = 0.0, device=None):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.center = center
        self.jitter = jitter
        self.device = device

    def fit(self, X, y=None):
        """Fit the operator and its top eigenpairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (CSR when the kernel accepts sparse input).
        y : None
            Ignored.

        Returns
        -------
        self : CovarianceOperator
            The fitted estimator.
        """
        k = as_rkhs_kernel(self.kernel, self.kernel_params)
        self.torch_fit_ = False
        if use_torch(self, X):  # torch executor (asymkern._torch)
            from .._torch.operators import fit_covariance_torch

            if not np.isfinite(self.jitter) or self.jitter < 0:
                raise ValueError(f"jitter must be finite and >= 0, got {self.jitter}")
            res_t = fit_covariance_torch(self, X, k)
            self._sparse_ok = False
            X64, n = res_t["X"], res_t["X"].shape[0]
            self._torch_state = res_t["state"]
            self.operator_ = EmpiricalOperator(k, X64, k, X64, scaled_identity(n, 1.0 / n),
                                               center_in=self.center, center_out=self.center,
                                               jitter=self.jitter)
            coef = _center_coef(res_t["coef"]) if self.center else res_t["coef"]
            self.eigenvalues_ = res_t["eigenvalues"]
            self.eigenfunctions_ = RKHSFunction(k, X64, coef)
            self.n_components_ = int(coef.shape[1])
            return self
        X = _fit_X(self, X, k)
        self._sparse_ok = _kernel_sparse(k)
        n = X.shape[0]
        op = EmpiricalOperator(k, X, k, X, scaled_identity(n, 1.0 / n), center_in=self.center,
                               center_out=self.center, jitter=self.jitter)
        self.operator_ = op
        res = _clipped_decomposition(
            self, lambda m: op.eig(m, method="qr"), op.factor("in").rank,
            "the numerical rank of the Gram matrix")
        self.eigenvalues_ = res.eigenvalues
        self.eigenfunctions_ = res.eigenfunctions
        self.n_components_ = int(res.eigenvalues.size)
        return self

    def transform(self, X):
        """Mercer features [φ_i(x)] = [√λ_i e_i(x)].

        Parameters
        ----------
        X : array-like of shape (n_points, n_features)
            Points to evaluate.

        Returns
        -------
        ndarray of shape (n_points, ``n_components_``)
            The features (float32 for float32 X).
        """
        check_is_fitted(self, "operator_")
        if use_torch(self, X):  # torch executor (asymkern._torch)
            from .._torch.operators import transform_covariance_torch

            return transform_covariance_torch(self, X)
        X_in, X = _transform_X(self, X)
        vals = self.eigenfunctions_(X)
        if self.center:
            vals = vals - self.eigenfunctions_(self.operator_.X).mean(axis=0)
        return _like_input(X_in, check_finite_output(vals, "the transformed values",
                                                     "rescale X like the training data"))


class CrossCovarianceOperator(_PreservesFloat32, _ComponentsOut, TransformerMixin,
                              _OperatorEstimator):
    """Empirical cross-covariance operator Ĉ_YX = (1/n) ΨΦᵀ : H → F and its SVD (paper 002 §4.2).

    ``fit(X, y)`` (y: the paired second view, samples (x_i, y_i)) computes the top ``n_components``
    singular triplets (Ex. 3.16). ``transform(X)`` = [v_i(x)]; ``transform(X, y)`` =
    ([v_i(x)], [u_i(y)]) as scikit-learn's ``PLSSVD``.

    Parameters
    ----------
    kernel_x, kernel_y : str, Kernel or callable, default='rbf'
        Symmetric PSD kernels on X and y.
    kernel_x_params, kernel_y_params : dict or None, default=None
        Keyword arguments of the kernels.
    n_components : int, default=5
        Number of singular triplets; more than the numerical rank is clipped with a
        :class:`~asymkern.exceptions.ClippedParameterWarning`.
    center : bool, default=False
        Use centred features.
    method : {'qr', 'auxiliary', 'block'}, default='qr'
        SVD route (see :meth:`EmpiricalOperator.svd`).
    jitter : float, default=0.0
        Diagonal added to the Gram matrices before factorising them.
    device : None, str or torch.device, default=None
        Run ``fit`` / ``transform`` on the torch backend on this device (``'cpu'``,
        ``'cuda'``, …): both Gram matrices are formed and decomposed there (float64, as the
        numpy path computes) and numpy inputs give numpy outputs. ``None``: the numpy path for
        numpy input, the tensor's own device for torch tensors (tensors back, dtype kept).
        Only ``method='qr'`` and the kernels of ``asymkern._torch.kernels.SUPPORTED_KERNELS``;
        needs PyTorch (``pip install "asymkern[torch]"``). Singular values equal the numpy
        path's to rounding; singular functions agree up to sign.

    Attributes
    ----------
    singular_values_ : ndarray of shape (``n_components_``,)
        Singular values, descending (a float64 tensor on the device after a fit on
        tensors).
    left_singular_functions_ : RKHSFunction
        u_i ∈ F (functions of y); numpy, also after a torch fit.
    right_singular_functions_ : RKHSFunction
        v_i ∈ H (functions of x); numpy, also after a torch fit.
    n_components_ : int
        Number of triplets kept.

    See Also
    --------
    KernelCCA : the normalised (canonical-correlation) version.
    CovarianceOperator : the covariance Ĉ_XX.

    References
    ----------
    .. [1] Paper 002, §4.2 and Example 3.16.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import CrossCovarianceOperator
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(50, 2)
    >>> y = np.sin(X[:, :1]) + 0.1 * rng.randn(50, 1)
    >>> cc = CrossCovarianceOperator(n_components=2).fit(X, y)
    >>> cc.transform(X).shape
    (50, 2)
    """

    def __init__(self, kernel_x="rbf", kernel_y="rbf", kernel_x_params=None,
                 kernel_y_params=None, n_components: int = 5, center: bool = False,
                 method: str = "qr", jitter: float = 0.0, device=None):
        self.kernel_x = kernel_x
        self.kernel_y = kernel_y
        self.kernel_x_params = kernel_x_params
        self.kernel_y_params = kernel_y_params
        self.n_components = n_components
        self.center = center
        self.method = method
        self.jitter = jitter
        self.device = device

    def fit(self, X, y=None, *, Y=None):
        """Fit on paired samples (x_i, y_i).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The x samples.
        y : array-like of shape (n_samples,) or (n_samples, n_features_y)
            The paired y samples.
        Y : array-like, deprecated
            Former keyword of ``y``.

        Returns
        -------
        self : CrossCovarianceOperator
            The fitted estimator.
        """
        y = renamed_argument(y, Y, "y", "Y", where="CrossCovarianceOperator.fit")
        kx = as_rkhs_kernel(self.kernel_x, self.kernel_x_params, "kernel_x")
        ky = as_rkhs_kernel(self.kernel_y, self.kernel_y_params, "kernel_y")
        self.torch_fit_ = False
        if use_torch(self, X, y):  # torch executor (asymkern._torch)
            from .._torch.operators import fit_cross_covariance_torch

            if y is None:
                raise ValueError("y is None; expected the paired samples y of shape "
                                 "(n_samples,) or (n_samples, n_features_y)")
            if not np.isfinite(self.jitter) or self.jitter < 0:
                raise ValueError(f"jitter must be finite and >= 0, got {self.jitter}")
            res_t = fit_cross_covariance_torch(self, X, y, kx, ky)
            self._sparse_ok = self._y_sparse_ok = False
            self._y_1d = getattr(y, "ndim", np.ndim(y)) == 1
            X64, Y64 = res_t["X"], res_t["Y"]
            self._torch_state = res_t["state"]
            n = X64.shape[0]
            self.operator_ = EmpiricalOperator(kx, X64, ky, Y64, scaled_identity(n, 1.0 / n),
                                               center_in=self.center, center_out=self.center,
                                               jitter=self.jitter)
            cu, cv = res_t["coef_u"], res_t["coef_v"]
            if self.center:
                cu, cv = _center_coef(cu), _center_coef(cv)
            self.singular_values_ = res_t["singular_values"]
            self.left_singular_functions_ = RKHSFunction(ky, Y64, cu)
            self.right_singular_functions_ = RKHSFunction(kx, X64, cv)
            self.n_components_ = int(cv.shape[1])
            return self
        X = _fit_X(self, X, kx)
        Y2, self._y_1d = _second_view(y, X.shape[0], ky)
        self._sparse_ok, self._y_sparse_ok = _kernel_sparse(kx), _kernel_sparse(ky)
        n = X.shape[0]
        op = EmpiricalOperator(kx, X, ky, Y2, scaled_identity(n, 1.0 / n),
                               center_in=self.center, center_out=self.center,
                               jitter=self.jitter)
        self.operator_ = op
        if self.method == "qr":
            ri, ro = op.factor("in").rank, op.factor("out").rank
            limit = min(ri, ro)
            what = f"the numerical rank of the Gram matrices ({ri} for X, {ro} for y)"
        else:
            limit, what = min(op.shape), "the number of samples"
        res = _clipped_decomposition(self, lambda m: op.svd(m, method=self.method), limit, what)
        self.singular_values_ = res.singular_values
        self.left_singular_functions_ = res.left
        self.right_singular_functions_ = res.right
        self.n_components_ = int(res.singular_values.size)
        return self

    def transform(self, X, y=None):
        """Right singular functions at X; with ``y`` also the left ones at y.

        Parameters
        ----------
        X : array-like of shape (n_points, n_features)
            Points x.
        y : array-like of shape (n_points, n_features_y) or None, default=None
            Points y.

        Returns
        -------
        ndarray of shape (n_points, ``n_components_``) or tuple of two such arrays
            [v_i(x)], or ([v_i(x)], [u_i(y)]) when ``y`` is given.
        """
        check_is_fitted(self, "operator_")
        if use_torch(self, X, y):  # torch executor (asymkern._torch)
            from .._torch.operators import transform_cross_covariance_torch

            return transform_cross_covariance_torch(self, X, y)
        X_in, X = _transform_X(self, X)
        xs = _like_input(X_in, check_finite_output(self.right_singular_functions_(X),
                                                   "the transformed values",
                                                   "rescale X like the training data"))
        if y is None:
            return xs
        Y_in, Y = _transform_y(self, y)
        ys = _like_input(Y_in, check_finite_output(self.left_singular_functions_(Y),
                                                   "the transformed values of y",
                                                   "rescale y like the training data"))
        return xs, ys



def _transform_y(est, y):
    """The y side of a fitted paired estimator: 1-D or 2-D with the fit's number of columns."""
    y_in = y
    d = est.operator_.Y.shape[1]
    if sp.issparse(y):
        Y = as_data(y, "y", allow_sparse=est._y_sparse_ok)
    else:
        Y = np.asarray(as_data(y, "y", ensure_2d=False))
        Y = Y.reshape(-1, 1) if Y.ndim == 1 else Y
    if Y.ndim != 2 or Y.shape[1] != d:
        raise ValueError(f"y has shape {Y.shape}; expected (n_samples, {d}) like the y passed "
                         "to fit")
    return y_in, Y


class ConditionalMeanEmbedding(RegressorMixin, _OperatorEstimator):
    """Conditional mean embedding Û_{Y|X} = Ψ (G_Φ + nεI)⁻¹ Φᵀ (paper 002 §4.3, Tikhonov ε).

    μ_{Y|x} = Û φ(x) = Σ_i β_i(x) ψ(y_i) with β(x) = (G_Φ + nεI)⁻¹ [k(x_j, x)]_j, so
    E[g(Y) | X = x] ≈ Σ_i β_i(x) g(y_i) (:meth:`expectation`); :meth:`predict` is the case
    g(y) = y, which is kernel ridge regression with ridge parameter nε (ε = ``alpha``).
    ``y`` (the output samples) may have any number of columns, or be 1-D: a regressor's target.

    Landmarks (``n_landmarks`` = m, or ``landmarks`` = an index array): the Nyström-restricted
    estimator, whose embedding lies in span{φ(x̃_l)} of the landmarks x̃_l = x_{i_l}:
    β(x) = K_nL B_L k(L, x) with B_L = (K_LnK_nL + nεK_LL)⁻¹ (computed in whitened landmark
    features, see :func:`landmark_inverse`), so E[Y | x] = k(x, L) B_L K_Ln Y. Only the m×m matrix
    K_LnK_nL and the m×d_y matrix K_LnY are needed (sums over the samples), so the fit also runs
    on row-chunked dask arrays (tree reductions; the fitted model keeps the landmarks and small
    matrices only). With all samples as landmarks it equals the exact estimator.

    Parameters
    ----------
    kernel_x, kernel_y : str, Kernel or callable, default='rbf'
        The two symmetric PSD kernels (on X and on y).
    kernel_x_params, kernel_y_params : dict or None, default=None
        Keyword arguments of the kernels.
    alpha : float, default=1e-3
        ε > 0, the Tikhonov parameter (``regularization`` is its deprecated former name).
    n_landmarks : int or None, default=None
        None (exact estimator) or m, the number of uniformly drawn landmarks (clipped to the number
        of samples with a ``ClippedParameterWarning``; ``n_landmarks_``).
    landmarks : 'uniform' or array of int, default='uniform'
        How landmarks are drawn, or the indices of the landmark rows of X.
    random_state : int, RandomState or None, default=None
        The landmark draw (same indices on numpy and dask inputs).
    regularization : float, deprecated
        Former name of ``alpha``.
    device : None, str or torch.device, default=None
        Run ``fit``, ``predict``, ``weights`` and ``expectation`` on the torch backend on this
        device (``'cpu'``, ``'cuda'``, …): G_X is formed there in float64 (as the numpy path
        forms it), Cholesky-factorised and solved with (``torch.linalg.cholesky_ex``,
        ``torch.cholesky_solve``); numpy inputs give numpy outputs. ``None``: the numpy path
        for numpy input, the tensor's own device for torch tensors (tensors back, in X's
        dtype). With landmarks the n×m blocks k(X, L) are reduced on the device to the
        sums of the whitened landmark features and the m×m solve is the numpy path's; the
        model then keeps the landmarks only (``operator_``, ``X_fit_`` None, as after a Dask
        fit). The kernels of ``asymkern._torch.kernels.SUPPORTED_KERNELS`` for ``kernel_x``;
        needs PyTorch (``pip install "asymkern[torch]"``). Equals the numpy path to rounding.

    Attributes
    ----------
    operator_ : EmpiricalOperator or None
        The fitted operator (None after a dask fit; after a torch fit the numpy operator on
        the same samples, which factorises with numpy only when its own methods are called).
    dual_coef_ : ndarray
        (G + nεI)⁻¹Y (n×d_y), or with landmarks the m×d_y coefficients B_L K_LnY on
        ``landmark_points_`` (a float64 tensor on the device after an exact fit on tensors).
    landmarks_ : ndarray of int or None
        Landmark indices.

    See Also
    --------
    KoopmanOperator : the same regression with y the time-shifted snapshots.

    References
    ----------
    .. [1] Paper 002, §4.3 (conditional mean embedding, Tikhonov-regularised).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import ConditionalMeanEmbedding
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-2, 2, size=(80, 1))
    >>> y = np.sin(X[:, 0]) + 0.05 * rng.randn(80)
    >>> cme = ConditionalMeanEmbedding(alpha=1e-4).fit(X, y)
    >>> bool(np.max(np.abs(cme.predict(X) - np.sin(X[:, 0]))) < 0.2)
    True
    """

    def __init__(self, kernel_x="rbf", kernel_y="rbf", kernel_x_params=None,
                 kernel_y_params=None, alpha: float = 1e-3, n_landmarks=None,
                 landmarks="uniform", random_state=None, regularization=DEPRECATED,
                 device=None):
        self.kernel_x = kernel_x
        self.kernel_y = kernel_y
        self.kernel_x_params = kernel_x_params
        self.kernel_y_params = kernel_y_params
        self.alpha = alpha
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.random_state = random_state
        self.regularization = regularization
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.input_tags.sparse = _kernel_accepts_sparse(self.kernel_x, self.kernel_x_params)
        return tags

    def fit(self, X, y=None):
        """Fit on paired samples (x_i, y_i).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs (dask arrays with landmarks; sparse, kept as CSR, when ``kernel_x`` accepts
            sparse input, as the built-in kernels do).
        y : {array-like, sparse matrix} of shape (n_samples,) or (n_samples, d_y)
            Outputs (sparse when ``kernel_y`` accepts it; E[Y | x] is dense).

        Returns
        -------
        self : ConditionalMeanEmbedding
            The fitted estimator.
        """
        from .._dask import any_dask

        if any_dask(X, y):
            from .._dask.operators import fit_cme_dask

            return fit_cme_dask(self, X, y)
        eps = self._alpha()
        self.kernel_x_ = as_rkhs_kernel(self.kernel_x, self.kernel_x_params, "kernel_x")
        self.kernel_y_ = as_rkhs_kernel(self.kernel_y, self.kernel_y_params, "kernel_y")
        self.torch_fit_ = False
        if use_torch(self, X, y):  # torch executor (asymkern._torch)
            return self._fit_torch(X, y, eps)
        if y is None:
            raise ValueError("ConditionalMeanEmbedding requires y to be passed, but the target y "
                             "is None (paired samples y of shape (n_samples, d_y) are needed)")
        X = _fit_X(self, X, self.kernel_x_)  # CSR when kernel_x accepts sparse input
        self._sparse_ok = _kernel_sparse(self.kernel_x_)
        Y2, self._y_1d = _second_view(y, X.shape[0], self.kernel_y_)
        Yd = Y2.toarray() if sp.issparse(Y2) else Y2  # E[Y | x] is dense
        n = X.shape[0]
        idx = _check_landmark_options(self, n)
        self.landmarks_ = idx
        self.X_fit_, self.Y_fit_ = X, Y2
        if idx is not None:
            L = X[idx]
            T = landmark_whitening(self.kernel_x_(L))
            A, _, FY = _landmark_stats_in_memory(self.kernel_x_, L, T, X, Y=Yd)
            self._set_landmark_model(L, T, A, FY, n, eps)
            F = landmark_evaluate(self.kernel_x_, L, T, X)
            self.operator_ = EmpiricalOperator(self.kernel_x_, X, self.kernel_y_, Y2,
                                               _LandmarkRepresentation(F, self._M, T, idx,
                                                                       "in"))
            return self
        G = np.asarray(self.kernel_x_(X), dtype=np.float64)
        check_finite_output(G, "the Gram matrix G_X of X", _RESCALE)
        B = CholeskyInverse(G, n * eps, "G_X", source=(self.kernel_x_, X))
        self.operator_ = EmpiricalOperator(self.kernel_x_, X, self.kernel_y_, Y2, B)
        self.operator_._cache["in"] = G
        self.dual_coef_ = check_finite_output(B._apply(Yd), "the coefficients (G_X + nεI)⁻¹Y",
                                              _RESCALE)
        return self

    def _fit_torch(self, X, y, eps: float):
        from .._torch.embedding import fit_cme_landmarks_torch, fit_cme_torch

        if self.n_landmarks is not None or not isinstance(self.landmarks, str):
            # as after a Dask fit: landmarks and small matrices only
            res = fit_cme_landmarks_torch(self, X, y, self.kernel_x_, eps)
            self._sparse_ok = False
            self._y_1d = getattr(y, "ndim", np.ndim(y)) == 1
            self._torch_state = res["state"]
            self.landmarks_ = res["idx"]
            self.X_fit_ = self.Y_fit_ = None
            self.operator_ = None
            self._set_landmark_model(res["L"], res["T"], res["A"], res["FY"], res["n"], eps)
            return self
        _check_landmark_options(self, len(X))  # the exact estimator: validates the options
        res = fit_cme_torch(self, X, y, self.kernel_x_, eps)
        self._sparse_ok = False
        self._y_1d = getattr(y, "ndim", np.ndim(y)) == 1
        self._torch_state = res["state"]
        self.landmarks_ = None
        X64, Y64 = res["X"], res["Y"]
        n = X64.shape[0]
        self.X_fit_, self.Y_fit_ = X64, Y64
        B = CholeskyInverse.lazy((n, n), (self.kernel_x_, X64), shift=n * eps, name="G_X")
        self.operator_ = EmpiricalOperator(self.kernel_x_, X64, self.kernel_y_, Y64, B)
        self.dual_coef_ = res["dual_coef"]
        return self

    def _set_landmark_model(self, L, T, A, FY, n: int, eps: float):
        """Landmark fit from the reduced matrices (shared by the in-memory and dask fits)."""
        check_finite_output(A, "the landmark Gram matrix FᵀF", _RESCALE)
        self.landmark_points_ = (sp.csr_matrix(L, dtype=np.float64) if sp.issparse(L)
                                 else np.asarray(L, dtype=np.float64))
        M = landmark_inverse(A, n, eps)
        self._T, self._M = T, M
        self.dual_coef_ = check_finite_output(T @ (M @ FY), "the coefficients B_L K_Ln Y",
                                              _RESCALE)

    def _check_keeps_samples(self) -> None:
        check_is_fitted(self, "operator_")
        if self.X_fit_ is None:
            raise ValueError("weights/embedding/expectation need the training samples, which a "
                             "landmark model fitted on dask arrays or torch tensors does not "
                             "keep; use predict")

    def weights(self, X) -> np.ndarray:
        """Weights β(x) of the embedding, μ_{Y|x} = Σ_i β_i(x) ψ(y_i).

        Parameters
        ----------
        X : array-like of shape (n_points, n_features)
            Conditioning points.

        Returns
        -------
        ndarray of shape (n_train, n_points)
            β(x) for each row of X.
        """
        self._check_keeps_samples()
        if use_torch(self, X):  # torch executor (asymkern._torch)
            from .._torch.embedding import weights_cme_torch

            return weights_cme_torch(self, X)
        X = check_input(self, X, reset=False, allow_sparse=getattr(self, "_sparse_ok", False))
        if getattr(self, "landmarks_", None) is not None:
            L, T = self.landmark_points_, self._T
            Fx = check_finite_output(landmark_evaluate(self.kernel_x_, L, T, X),
                                     "the kernel values k(x, x̃_l)",
                                     "rescale X like the training data")
            return landmark_evaluate(self.kernel_x_, L, T, self.X_fit_) @ (self._M @ Fx.T)
        K = check_finite_output(_dense(self.kernel_x_(*_same_format(self.X_fit_, X))),
                                "the kernel values k(x_i, x)", "rescale X like the training data")
        return self.operator_.B._apply(np.asarray(K, dtype=np.float64))

    def embedding(self, X) -> RKHSFunction:
        """The conditional mean embeddings μ_{Y|x} ∈ F, one function per row of X.

        Parameters
        ----------
        X : array-like of shape (n_points, n_features)
            Conditioning points.

        Returns
        -------
        RKHSFunction
            n_points functions of y.
        """
        W = self.weights(X)
        if use_torch(self, X):
            from .._torch.device import to_numpy

            W = to_numpy(W).astype(np.float64) if not isinstance(W, np.ndarray) else W
        return RKHSFunction(self.kernel_y_, self.Y_fit_, W)

    def expectation(self, func, X) -> np.ndarray:
        """E[g(Y) | X = x] ≈ Σ_i β_i(x) g(y_i).

        Parameters
        ----------
        func : callable
            Maps (n, d_y) samples to (n,) or (n, p) values.
        X : array-like of shape (n_points, n_features)
            Conditioning points.

        Returns
        -------
        ndarray of shape (n_points,) or (n_points, p)
            The conditional expectations.
        """
        self._check_keeps_samples()
        vals = np.asarray(func(self.Y_fit_), dtype=np.float64)
        if vals.shape[0] != self.Y_fit_.shape[0]:
            raise ValueError(f"func returned {vals.shape[0]} values for "
                             f"{self.Y_fit_.shape[0]} samples")
        if not np.all(np.isfinite(vals)):
            raise ValueError("func returned non-finite values")
        if use_torch(self, X):  # torch executor (asymkern._torch)
            from .._torch.embedding import expectation_cme_torch

            return expectation_cme_torch(self, vals, X)
        return self.weights(X).T @ vals

    def predict(self, X) -> np.ndarray:
        """E[Y | X = x] (kernel ridge regression with ridge nε).

        Parameters
        ----------
        X : array-like of shape (n_points, n_features)
            Points (a dask array for landmark or dask-fitted models gives a dask array).

        Returns
        -------
        ndarray of shape (n_points,) or (n_points, d_y)
            The predictions (float32 for float32 X).
        """
        check_is_fitted(self, "operator_")
        if use_torch(self, X) and getattr(self, "landmarks_", None) is None:  # torch executor
            from .._torch.embedding import predict_cme_torch

            return predict_cme_torch(self, X)
        X_in = X
        if getattr(self, "landmarks_", None) is not None:
            out = _landmark_predict(self, X, self.kernel_x_, self.landmark_points_,
                                    self.dual_coef_)
            return out[:, 0] if self._y_1d else out
        X = check_input(self, X, reset=False, allow_sparse=getattr(self, "_sparse_ok", False))
        out = _dense(self.kernel_x_(*_same_format(X, self.X_fit_))) @ self.dual_coef_
        check_finite_output(out, "the predictions", "rescale X like the training data")
        out = _like_input(X_in, out)
        return out[:, 0] if self._y_1d else out

    def score(self, X, y, sample_weight=None) -> float:
        """R² of ``predict(X)`` against y (scikit-learn's ``RegressorMixin.score``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test points.
        y : array-like of shape (n_samples,) or (n_samples, d_y)
            True outputs.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weights of the samples: real, finite and non-negative (a negative weight can push
            R² above 1), not all zero.

        Returns
        -------
        float
            The R² score.
        """
        from sklearn.utils.validation import _num_samples

        from .._dispatch import is_torch_tensor

        if is_torch_tensor(sample_weight):
            sample_weight = sample_weight.detach().cpu().numpy()
        sw = as_weights(sample_weight, _num_samples(X), "sample_weight", "sample")
        return super().score(X, y, sample_weight=sw)


def _landmark_predict(est, X, kernel, L, coef):
    """k(x, L) coef for numpy X (numpy out), row-chunked dask X (dask out) or, for a model
    fitted on torch, tensors (on the device); float32 kept."""
    from .._dask import is_dask_array

    if use_torch(est, X):  # torch executor (asymkern._torch)
        from .._torch.operators import landmark_predict_torch

        return landmark_predict_torch(est, X, coef)
    if is_dask_array(X):
        from .._dask.operators import evaluate_dask

        if X.ndim != 2 or X.shape[1] != est.n_features_in_:
            raise ValueError(f"X has shape {X.shape}; expected (n, {est.n_features_in_})")
        out = evaluate_dask(kernel, L, coef, X)
        return out.astype(np.float32) if X.dtype == np.float32 else out
    X_in = X
    X = check_input(est, X, reset=False, allow_sparse=getattr(est, "_sparse_ok", False))
    out = check_finite_output(landmark_evaluate(kernel, L, coef, X), "the predictions",
                              "rescale X like the training data")
    return _like_input(X_in, out)


def _snapshot_pairs(est, X, y, lag: int, kernel):
    """The time-lagged pairs (x_i, y_i) of a transfer-operator fit (float64 copies).

    ``y is None``: X is one trajectory (rows = time steps), pairs (x_t, x_{t+lag}). Otherwise y
    holds the time-shifted snapshots y_i = Ξ^τ(x_i) and must have X's shape (n, d); a 1-D y is
    accepted only when X has a single feature (d = 1). Anything else — e.g. class labels — is a
    ``ValueError`` naming y and the expected shape, never a silently different estimator.
    """
    sparse_ok = _kernel_sparse(kernel)
    X = _c_copy(check_input(est, X, reset=True, allow_sparse=sparse_ok, min_samples=2))
    if y is None:
        if lag >= X.shape[0] - 1:
            raise ValueError(f"lag={lag} must be smaller than the trajectory length "
                             f"{X.shape[0]} minus one (at least two time-lagged pairs)")
        return X[:-lag].copy(), X[lag:].copy()
    expected = (f"expected the time-shifted snapshots y_i = Ξ^τ(x_i) with the shape of X "
                f"{X.shape} (or y=None when X is one trajectory)")
    if sp.issparse(y):
        if not sparse_ok:
            why = (f"the kernel {kernel!r} does not accept sparse input" if kernel is not None
                   else "the landmark (Nyström) fit needs dense samples")
            raise TypeError(f"y is a sparse matrix but {why}; pass y.toarray()")
        Y = _c_copy(as_data(y, "y", allow_sparse=True))
    else:
        Y = as_data(y, "y", ensure_2d=False)
        if Y.ndim == 1 and X.shape[1] == 1:
            Y = Y.reshape(-1, 1)
        if Y.ndim != 2:
            raise ValueError(f"y has shape {Y.shape}; {expected}")
        Y = _c_copy(Y)
    if Y.shape != X.shape:
        raise ValueError(f"y has shape {Y.shape}; {expected}")
    if sp.issparse(X) != sp.issparse(Y):  # one representation for the Gram evaluations
        X = sp.csr_matrix(X) if not sp.issparse(X) else X
        Y = sp.csr_matrix(Y) if not sp.issparse(Y) else Y
    return X, Y


class _TransferOperator(_OperatorEstimator):
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        exact = getattr(self, "n_landmarks", None) is None and isinstance(
            getattr(self, "landmarks", "uniform"), str)
        tags.input_tags.sparse = exact and _kernel_accepts_sparse(self.kernel, self.kernel_params)
        return tags

    def _timestep(self) -> float:
        """``timestep``, validated (finite, > 0): checked with the other parameters at the start
        of every fit (numpy, torch and dask executors) and used by ``_finish``."""
        return _check_timestep(self.timestep)

    def _lagged_gram(self, X, y):
        """Validate, form the time-lagged pairs and the Gram matrix of the x_t (shared by fit)."""
        eps = self._alpha()
        self._timestep()
        lag = _check_int(self.lag, "lag")
        self.kernel_ = as_rkhs_kernel(self.kernel, self.kernel_params)
        X0, X1 = _snapshot_pairs(self, X, y, lag, self.kernel_)
        self._sparse_ok = _kernel_sparse(self.kernel_)
        G = np.asarray(self.kernel_(X0), dtype=np.float64)
        check_finite_output(G, "the Gram matrix G_X of the samples x_t", _RESCALE)
        return eps, X0, X1, X0.shape[0], G

    def __init__(self, kernel="rbf", kernel_params=None, alpha: float = 1e-6,
                 lag: int = 1, n_components: int = 5, timestep: float = 1.0,
                 regularization=DEPRECATED):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.alpha = alpha
        self.lag = lag
        self.n_components = n_components
        self.timestep = timestep
        self.regularization = regularization

    def _finish(self, res=None, solver: str = "auto"):
        if res is None:
            op = self.operator_
            def decompose(m):
                try:
                    return op.eig(m, method="auxiliary",
                                  solver=solver if m is not None else "auto")
                except ArpackNoConvergence:  # rare (clustered spectra): the dense reference
                    return op.eig(m, method="auxiliary", solver="dense")

            res = _clipped_decomposition(self, decompose, min(op.shape),
                                         "the number of time-lagged pairs")
        self.eigenvalues_ = res.eigenvalues
        self.eigenfunctions_ = res.eigenfunctions
        self.n_components_ = int(res.eigenvalues.size)
        mod = np.abs(self.eigenvalues_)
        with np.errstate(divide="ignore"):
            ts = -self.lag * self._timestep() / np.log(np.clip(mod, 1e-300, None))
        ts[mod >= 1] = np.inf
        self.timescales_ = ts
        return self

    def _numpy_parts(self) -> types.SimpleNamespace:
        """The numpy classes and helpers a backend executor (:mod:`asymkern._torch.transfer`)
        builds the fitted model from: handed down by the estimator, so the executor layer
        never imports the estimator packages (the layering of ``tests/test_layout.py``)."""
        return types.SimpleNamespace(
            EmpiricalOperator=EmpiricalOperator, OperatorEig=OperatorEig,
            RKHSFunction=RKHSFunction, CholeskyInverse=CholeskyInverse, LowRank=_LowRank,
            PerronFrobeniusRepresentation=PerronFrobeniusRepresentation,
            reduced_eig=reduced_eig)

    def _estimator_kind(self) -> str:
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {self.estimator!r}")
        return self.estimator

    def _rank(self, limit: int, what: str) -> int:
        r = self.n_components if self.rank is None else self.rank
        r = _check_int(r, "rank" if self.rank is not None else "n_components")
        return clip_count(r, limit, "rank", what, owner=type(self).__name__)

    def _reduced_dual(self, kind: str, G, X0, X1, r: int, shift: float):
        """Exact PCR/RRR factors U, V (B_Koopman = U Vᵀ) with k(Y, X) and, for RRR, k(Y, Y).

        Returns ``(U, V, Cyx, H)``; H is None for PCR (it is not needed there).
        """
        Cyx = np.asarray(self.kernel_(X1, X0), dtype=np.float64)
        check_finite_output(Cyx, "the time-lagged Gram matrix [k(y_i, x_j)]", _RESCALE)
        H = None
        if kind == "pcr":
            U, V = pcr_dual(G, r, shift)
        else:
            H = np.asarray(self.kernel_(X1), dtype=np.float64)
            check_finite_output(H, "the Gram matrix of the shifted samples y_i", _RESCALE)
            U, V, _ = rrr_dual(G, H, r, shift)
        if U.shape[1] == 0:
            raise ValueError("the reduced-rank estimator is numerically zero (no direction "
                             "above the rounding level); " + _RESCALE)
        return U, V, Cyx, H

    def implied_timescales(self) -> np.ndarray:
        """t_i = −τ / ln|λ_i| (τ = lag·timestep); ∞ for ``|λ_i|`` ≥ 1."""
        check_is_fitted(self, "operator_")
        return self.timescales_
class KoopmanOperator(_TransferOperator):
    """Kernel Koopman operator K̂ of a dynamical system from time-lagged snapshots (paper 002 §4.4).

    (K̂ f)(x) ≈ E[f(x_{t+τ}) | x_t = x] is estimated by kernel regression of the shifted
    snapshots y_i = x_{t+τ} on the x_i, with one of three estimators (``estimator``; Kostic et
    al. 2022), each written as (K̂ f)(x) = k(x, X) U Vᵀ f(Y) with n×r matrices U, V:

    * ``'full'`` (default): kernel ridge regression, U Vᵀ = (G + nεI)⁻¹ (G = [k(x_i, x_j)]),
      i.e. K̂ = Φ (G_Φ + nεI)⁻¹ Ψᵀ of paper 002 §4.4;
    * ``'pcr'``: principal-component regression, U Vᵀ = Q_r (Λ_r + nεI)⁻¹ Q_rᵀ with the top
      ``rank`` eigenpairs (Λ_r, Q_r) of G (ARPACK, never a full eigendecomposition);
    * ``'rrr'``: reduced-rank regression, the rank-r minimiser of the Tikhonov-regularised
      empirical risk: U holds the r leading solutions of (1/n) H G u = σ² (G + nεI) u
      (H = [k(y_i, y_j)]) normalised by uᵀ G (G + nεI) u = n, and V = G U / n.

    The eigenpairs of K̂ are those of the r×r matrix M = Vᵀ [k(y_i, x_j)] U (pcr, rrr) or of the
    auxiliary matrix (G + nεI)⁻¹[k(y_i, x_j)] (full; Prop. 3.8, ARPACK for n > 150). Forecasts
    iterate the learned operator: E[g(x_{t+kτ}) | x_t = x] ≈ (K̂ᵏ g)(x) = k(x, X) U Mᵏ⁻¹ Vᵀ g(Y).

    Landmarks (``n_landmarks`` = m or ``landmarks`` = indices of the x_t): the Nyström version of
    each estimator (Meanti et al. 2023), the same regressions on the whitened landmark features
    F(x) = k(x, L) T (TᵀK_LLT = I): only m×m (and m×d) sums over the pairs are needed, so the fit
    also runs on row-chunked dask arrays and scales to n = 10⁵–10⁶. With all x_t as landmarks it
    equals the exact estimator.

    Parameters
    ----------
    kernel : str, Kernel or callable, default='rbf'
        A symmetric PSD kernel (see :func:`~asymkern.operators.as_rkhs_kernel`).
    kernel_params : dict or None, default=None
        Keyword arguments of the kernel (e.g. ``{'gamma': 0.5}``).
    alpha : float, default=1e-6
        Tikhonov parameter ε > 0 (``regularization`` is its deprecated former name).
    lag : int, default=1
        τ in time steps for a trajectory ``fit(X)``.
    n_components : int, default=5
        Number of eigenpairs kept (``eigenvalues_``); clipped with a
        :class:`~asymkern.exceptions.ClippedParameterWarning` to what the estimator has.
    timestep : float, default=1.0
        Time per step (``timescales_`` are in these units).
    n_landmarks : int or None, default=None
        None (exact estimator) or m, the number of uniformly drawn landmarks (Nyström).
    landmarks : 'uniform' or array of int, default='uniform'
        How landmarks are chosen, or their indices into the pairs.
    random_state : int, RandomState or None, default=None
        Seed of the landmark draw.
    estimator : {'full', 'pcr', 'rrr'}, default='full'
        The regression estimator (see above).
    rank : int or None, default=None
        Rank r of the 'pcr'/'rrr' estimators; None uses ``n_components``. Clipped to the number
        of pairs (or landmark features). Ignored by 'full'.
    regularization : float, deprecated
        Former name of ``alpha``.
    device : None, str or torch.device, default=None
        Run ``fit`` / ``predict`` on the torch backend on this device (``'cpu'``,
        ``'cuda'``, …): the n×n Gram matrices k(X, X), k(Y, X) (and k(Y, Y) for 'rrr') are
        formed there in float64 (as the numpy path computes) and the estimator's n×n
        eigenproblem runs there (``'full'``: Cholesky solve, then the top eigenpairs of the
        auxiliary matrix (G + nεI)⁻¹k(Y, X) by ``torch.linalg.eig`` for n ≤ 150 and by the
        numpy path's ARPACK call above, its products on the device; ``'pcr'``/``'rrr'``:
        ``torch.linalg.eigh``, then
        the r×r matrix M on the host); numpy inputs give numpy outputs. ``None``: the numpy path
        for numpy input, the tensor's own device for torch tensors (``predict`` then returns
        tensors, dtype kept). With landmarks, the sums FᵀF, FᵀF⁺, FᵀY of the whitened landmark
        features are formed on the device and the p×p estimator is the numpy path's; the
        model then keeps the landmarks only (``operator_``, ``X_fit_`` None, as after a Dask
        fit). ``observables`` too (a callable gets the shifted samples as tensors on the
        device for tensor input). The kernels of
        ``asymkern._torch.kernels.SUPPORTED_KERNELS``; needs PyTorch
        (``pip install "asymkern[torch]"``). Eigenvalues and forecasts equal the numpy path's
        to rounding; eigenfunctions agree up to sign (complex phase) that LAPACK leaves free.

    Attributes
    ----------
    operator_ : EmpiricalOperator or None
        S = Ψ B Φᵀ with B = U Vᵀ (``svd``/``eig`` work on it; None after a dask fit). After a
        torch fit: the numpy operator on the same samples (its methods run with numpy; the
        n×n factorisations are computed only when they are used).
    eigenvalues_ : ndarray of shape (``n_components_``,)
        Eigenvalues by decreasing modulus (complex if the dynamics rotate); a numpy array also
        after a fit on torch tensors.
    eigenfunctions_ : RKHSFunction
        Right eigenfunctions ψ_i (RKHS-normalised), evaluable at new points: ``eigenfunctions_(X)``
        (numpy, also after a torch fit).
    left_eigenfunctions_ : RKHSFunction or None
        Left eigenfunctions ξ_i (eigenfunctions of K̂*), biorthogonal to ψ_j in the RKHS,
        ⟨ξ_i, ψ_j⟩ = δ_ij (bilinear); 'pcr'/'rrr' only (None for 'full').
    timescales_ : ndarray
        Implied timescales −τ/ln|λ_i|.
    n_components_ : int
        Number of eigenpairs kept.
    rank_ : int or None
        Rank of the 'pcr'/'rrr' estimator (None for 'full').

    See Also
    --------
    PerronFrobeniusOperator : the adjoint (density propagation).
    ConditionalMeanEmbedding : the same regression for general outputs.

    References
    ----------
    .. [1] Paper 002, §4.4 (kernel transfer operators, Prop. 3.8 auxiliary eigenproblem).
    .. [2] V. Kostic, P. Novelli, A. Maurer, C. Ciliberto, L. Rosasco, M. Pontil, "Learning
       dynamical systems via Koopman operator regression in reproducing kernel Hilbert
       spaces", NeurIPS 2022 (PCR and RRR estimators, Thm. 3).
    .. [3] G. Meanti, A. Chatalic, V. Kostic, P. Novelli, M. Pontil, L. Rosasco, "Estimating
       Koopman operators with sketching to provably learn large scale dynamical systems",
       NeurIPS 2023 (Nyström PCR/RRR).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import KoopmanOperator
    >>> rng = np.random.RandomState(0)
    >>> x = np.zeros((400, 1))
    >>> for t in range(399):
    ...     x[t + 1] = 0.8 * x[t] + 0.3 * rng.randn()
    >>> est = KoopmanOperator(kernel="linear", estimator="rrr", rank=1, n_components=1).fit(x)
    >>> round(float(est.eigenvalues_[0]), 1)
    0.8
    >>> est.predict(x[:3], n_steps=2).shape
    (3, 1)
    """

    def __init__(self, kernel="rbf", kernel_params=None, alpha: float = 1e-6,
                 lag: int = 1, n_components: int = 5, timestep: float = 1.0, n_landmarks=None,
                 landmarks="uniform", random_state=None, estimator: str = "full", rank=None,
                 regularization=DEPRECATED, device=None):
        super().__init__(kernel=kernel, kernel_params=kernel_params,
                         alpha=alpha, lag=lag, n_components=n_components,
                         timestep=timestep, regularization=regularization)
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.random_state = random_state
        self.estimator = estimator
        self.rank = rank
        self.device = device

    # ---------------------------------------------------------------------------- parameters
    def _observable_data(self, observables, X0, X1, lag: int, y_given: bool):
        """The observable values g(y_i) at the shifted samples (n, p) float64, or None."""
        self._obs_1d = False
        if observables is None:
            return None
        if callable(observables):
            where = "observables(y)"
            # real numbers only: a complex return is refused, never cast (ComplexWarning)
            vals = np.asarray(check_finite_result(observables(X1), where), dtype=np.float64)
        else:
            vals = np.asarray(as_data(observables, "observables", ensure_2d=False),
                              dtype=np.float64)
            where = "observables"
            if vals.ndim == 2 and vals.shape[1] == 0:
                raise ValueError(f"observables has 0 columns (shape {vals.shape}); expected at "
                                 "least one observable: an array of shape (n_rows,) or "
                                 "(n_rows, p) with p >= 1, or None")
            if not y_given and vals.ndim:  # one row per step of X: the values at x_{t+lag}
                if vals.shape[0] != X0.shape[0] + lag:
                    raise ValueError(f"observables has {vals.shape[0]} rows; expected one per "
                                     f"row of the trajectory X ({X0.shape[0] + lag})")
                vals = vals[lag:]
        if vals.ndim == 1:
            self._obs_1d = True
            vals = vals.reshape(-1, 1)
        if vals.ndim != 2 or vals.shape[0] != X1.shape[0] or vals.shape[1] == 0:
            raise ValueError(f"{where} has shape {vals.shape}; expected ({X1.shape[0]},) or "
                             f"({X1.shape[0]}, p) with p >= 1 observables (at least one "
                             "column): one row per shifted snapshot y_i")
        return check_finite_output(vals, where, "pass finite observable values")

    # ---------------------------------------------------------------------------- fits
    def _set_landmark_model(self, L, T, A, C, FY, n: int, eps: float, FG=None):
        """Landmark fit from the reduced matrices (shared by the in-memory and dask fits).

        With whitened features (FᵀF = A, FᵀF⁺ = C, FᵀY = FY) the estimator is U Vᵀ
        (``'full'``: (A + nεI)⁻¹; ``'pcr'``/``'rrr'``: see :mod:`._koopman`); eigenvectors w of
        the Koopman matrix are RKHS-normalised by ‖w‖ = 1 (TᵀK_LLT = I) and give ξ = T w.
        """
        kind = self._estimator_kind()
        check_finite_output(A, "the landmark Gram matrix FᵀF", _RESCALE)
        check_finite_output(C, "the lagged landmark matrix FᵀF⁺", _RESCALE)
        self.landmark_points_ = np.asarray(L, dtype=np.float64)
        M = landmark_inverse(A, n, eps)
        self._T, self._M = T, M
        self._pred_coef = T @ (M @ FY)
        p = M.shape[0]
        if kind == "full":
            self.rank_ = None
            self._fc = {"kind": "landmark", "U": M, "M": C @ M, "state": FY, "obs": FG}
            res = _clipped_decomposition(
                self, lambda k: OperatorEig(*_landmark_eig(C, M, k)), p,
                "the rank of the landmark Gram matrix")
            fn = LandmarkFunction(self.kernel_, self.landmark_points_, T @ res.eigenfunctions)
            self.left_eigenfunctions_ = None
            return self._finish(OperatorEig(res.eigenvalues, fn, "auxiliary", dict(res.info)))
        r = self._rank(p, "the rank of the landmark Gram matrix")
        if kind == "pcr":
            U, V = pcr_primal(A, r, n * eps)
        else:
            U, V, _ = rrr_primal(A, C, r, n * eps)
        Mr = V.T @ C @ U
        self._pred_coef = T @ (U @ (V.T @ FY))
        self._fc = {"kind": "landmark", "U": U, "V": V, "M": Mr, "state": V.T @ FY,
                    "obs": None if FG is None else V.T @ FG}
        lam, Z, Zinv = reduced_eig(Mr)
        coef = U @ Z
        norms = np.sqrt(np.maximum(np.real(np.einsum("ij,ij->j", np.conj(coef), coef)), 1e-300))
        left = (C.T @ V) @ (Zinv.T / lam) * norms  # ξ_i coefficients in whitened features
        Lp = self.landmark_points_
        make = lambda c: LandmarkFunction(self.kernel_, Lp, T @ c)  # noqa: E731
        return self._finish_reduced(lam, coef / norms, Zinv, norms, left, r, make, make)

    def _finish_reduced(self, lam, coef, Zinv, norms, left, r, make, make_left):
        self.rank_ = int(r)
        k = _check_int(self.n_components, "n_components")
        k = clip_count(k, lam.size, "n_components",
                       f"the number of nonzero eigenvalues of the rank-{r} estimator",
                       owner=type(self).__name__)
        self._modes_map = (Zinv / lam[:, None]) * norms[:, None]  # modes = this @ Vᵀ d(g)
        self._modes_map = self._modes_map[:k]
        self.left_eigenfunctions_ = make_left(left[:, :k])
        fn = make(coef[:, :k])
        return self._finish(OperatorEig(lam[:k], fn, self.estimator, {"rank": int(r)}))

    def fit(self, X, y=None, *, observables=None, Y=None):
        """Fit the Koopman operator on a trajectory or on snapshot pairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            One trajectory (rows are time steps; pairs (x_t, x_{t+lag})) when ``y`` is None,
            else the snapshots x_i. Dask arrays are accepted with landmarks.
        y : array-like of shape (n_samples, n_features) or None, default=None
            The time-shifted snapshots y_i = Ξ^τ(x_i) (same shape as X).
        observables : array-like of shape (n_rows,) or (n_rows, p), callable or None
            Observables g to forecast with ``predict(..., observable=True)`` and to decompose
            with :meth:`modes`: their values at the rows of the trajectory X (``y=None``) or at
            the rows of ``y``, or a callable mapping samples (n, d) to values (n, p).
        Y : array-like, deprecated
            Former keyword of ``y``.

        Returns
        -------
        self : KoopmanOperator
            The fitted estimator.
        """
        from .._dask import any_dask

        y = renamed_argument(y, Y, "y", "Y", where="KoopmanOperator.fit")
        kind = self._estimator_kind()
        self.torch_fit_ = False
        self._torch_state = None
        if any_dask(X, y):
            if observables is not None:
                raise ValueError("observables are not supported with dask inputs; fit on "
                                 "numpy arrays or forecast the state (observable=False)")
            from .._dask.operators import fit_koopman_dask

            return fit_koopman_dask(self, X, y)
        if use_torch(self, X, y):  # torch executor (asymkern._torch)
            from .._torch.transfer import fit_koopman_torch

            return fit_koopman_torch(self, X, y, as_rkhs_kernel(self.kernel, self.kernel_params),
                                     observables)
        eps = self._alpha()
        self._timestep()
        lag = _check_int(self.lag, "lag")
        self.kernel_ = as_rkhs_kernel(self.kernel, self.kernel_params)
        idx_probe = self.n_landmarks is not None or not isinstance(self.landmarks, str)
        X0, X1 = _snapshot_pairs(self, X, y, lag, None if idx_probe else self.kernel_)
        self._sparse_ok = not idx_probe and _kernel_sparse(self.kernel_)
        idx = _check_landmark_options(self, X0.shape[0])
        self.landmarks_ = idx
        n = X0.shape[0]
        self.X_fit_, self.Y_fit_ = X0, X1
        obs = self._observable_data(observables, X0, X1, lag, y is not None)
        if idx is not None:
            L = X0[idx]
            T = landmark_whitening(self.kernel_(L))
            A, C, FY = _landmark_stats_in_memory(self.kernel_, L, T, X0, X1=X1, Y=X1)
            FG = None if obs is None else \
                _landmark_stats_in_memory(self.kernel_, L, T, X0, Y=obs)[2]
            self.operator_ = None
            self._set_landmark_model(L, T, A, C, FY, n, eps, FG)
            F = landmark_evaluate(self.kernel_, L, T, X0)
            if kind == "full":
                rep = _LandmarkRepresentation(F, self._M, T, idx, "out")
            else:  # B = P T U Vᵀ Fᵀ (P scatters the landmark rows)
                Ub = np.zeros((n, self._fc["U"].shape[1]))
                Ub[idx] = T @ self._fc["U"]
                rep = _LowRank(Ub, F @ self._fc["V"])
            self.operator_ = EmpiricalOperator(self.kernel_, X1, self.kernel_, X0, rep)
            return self
        G = np.asarray(self.kernel_(X0), dtype=np.float64)
        check_finite_output(G, "the Gram matrix G_X of the samples x_t", _RESCALE)
        X1d = X1.toarray() if sp.issparse(X1) else X1
        if kind == "full":
            B = CholeskyInverse(G, n * eps, "G_X", source=(self.kernel_, X0))
            # S = Ψ' B Φ'ᵀ with Ψ' = features of x_t (output side), Φ' = features of x_{t+τ}
            self.operator_ = EmpiricalOperator(self.kernel_, X1, self.kernel_, X0, B)
            self.operator_._cache["out"] = G
            self._pred_coef = check_finite_output(B._apply(X1d),
                                                  "the coefficients (G_X + nεI)⁻¹Y", _RESCALE)
            self.rank_ = None
            self.left_eigenfunctions_ = None
            self._fc = {"kind": "exact", "U": None, "M": None, "state": X1d, "obs": obs}
            return self._finish(solver="arpack" if n > 150 else "auto")
        r = self._rank(n, "the number of time-lagged pairs")
        U, V, Cyx, _ = self._reduced_dual(kind, G, X0, X1, r, n * eps)
        self.operator_ = EmpiricalOperator(self.kernel_, X1, self.kernel_, X0, _LowRank(U, V))
        self.operator_._cache["out"] = G
        self.operator_._cache["cross"] = Cyx
        Mr = V.T @ (Cyx @ U)
        self._pred_coef = U @ (V.T @ X1d)
        self._fc = {"kind": "exact", "U": U, "M": Mr, "state": V.T @ X1d,
                    "obs": None if obs is None else V.T @ obs}
        lam, Z, Zinv = reduced_eig(Mr)
        coef = U @ Z
        norms = np.sqrt(np.maximum(np.real(np.einsum("ij,ij->j", np.conj(coef), G @ coef)),
                                   1e-300))
        left = V @ (Zinv.T / lam) * norms
        kern = self.kernel_
        return self._finish_reduced(lam, coef / norms, Zinv, norms, left, U.shape[1],
                                    lambda c: RKHSFunction(kern, X0, c),
                                    lambda c: RKHSFunction(kern, X1, c))

    # ---------------------------------------------------------------------------- forecasts
    def _propagate(self, c, n_steps: int) -> np.ndarray:
        """Basis coefficients of K̂ⁿ g from the data coefficients c = Vᵀ d(g)."""
        fc = self._fc
        if fc["U"] is None:  # exact full rank: U = (G + nεI)⁻¹, V = I, M = k(Y, X) U
            B = self.operator_.B
            a = B._apply(c)
            if n_steps > 1:
                Cyx = self.operator_._gram("cross")
                for _ in range(n_steps - 1):
                    a = B._apply(Cyx @ a)
            return a
        for _ in range(n_steps - 1):
            c = fc["M"] @ c
        return fc["U"] @ c

    def predict(self, X, n_steps: int = 1, observable: bool = False) -> np.ndarray:
        """Forecast the state (or the observables) ``n_steps`` lags ahead.

        Iterates the learned operator: E[g(x_{t+kτ}) | x_t = x] ≈ (K̂ᵏ g)(x)
        = k(x, X) U Mᵏ⁻¹ Vᵀ g(Y) with g the identity (the state) or the observables passed to
        ``fit``. ``n_steps=1`` is the one-step regression E[x_{t+τ} | x_t = x].

        Parameters
        ----------
        X : array-like of shape (n_points, n_features)
            Initial states (a dask array with landmark models: a dask array out).
        n_steps : int, default=1
            Number of lags k ≥ 1 to forecast.
        observable : bool, default=False
            Forecast the observables given to ``fit`` instead of the state.

        Returns
        -------
        ndarray of shape (n_points, n_features) or (n_points, p)
            The forecasts (float32 for float32 X).

        Raises
        ------
        ValueError
            If ``n_steps`` is not a positive integer, or ``observable=True`` without
            observables in ``fit``.
        """
        check_is_fitted(self, "operator_")
        k = _check_int(n_steps, "n_steps")
        fc = getattr(self, "_fc", None)
        if observable:
            if fc is None or fc["obs"] is None:
                raise ValueError("observable=True needs observables: pass fit(X, y, "
                                 "observables=...) first")
            c = fc["obs"]
        else:
            c = None if fc is None else fc["state"]
        if use_torch(self, X) and getattr(self, "landmarks_", None) is None:  # torch executor
            from .._torch.transfer import predict_koopman_torch

            return predict_koopman_torch(self, X, k, observable)
        if c is None or (k == 1 and not observable):
            coef = self._pred_coef
        else:
            coef = self._propagate(c, k)
        if getattr(self, "landmarks_", None) is not None:
            if k > 1 or observable:
                coef = self._T @ coef
            out = _landmark_predict(self, X, self.kernel_, self.landmark_points_, coef)
        else:
            X_in, X = _transform_X(self, X)
            out = np.asarray(self.kernel_(X, self.X_fit_)) @ coef
            out = _like_input(X_in, check_finite_output(out, "the predictions",
                                                        "rescale X like the training data"))
        if observable and getattr(self, "_obs_1d", False):
            return out[:, 0]
        return out

    def modes(self, observable: bool = False) -> np.ndarray:
        """Koopman modes m_i of the state (or of the observables): K̂ᵏ g ≈ Σ_i λ_iᵏ ψ_i m_i.

        With ψ_i = ``eigenfunctions_`` and λ_i = ``eigenvalues_``, the forecast
        ``predict(X, k, observable)`` equals Σ_i λ_iᵏ ψ_i(x) m_i exactly when every eigenpair of
        the rank-r estimator is kept (``n_components ≥ rank``); otherwise the sum is its
        truncation to the leading ``n_components_`` eigenpairs.

        Parameters
        ----------
        observable : bool, default=False
            Modes of the observables given to ``fit`` instead of the state.

        Returns
        -------
        ndarray of shape (``n_components_``, n_features) or (``n_components_``, p)
            The modes (complex when the eigenvalues are).

        Raises
        ------
        ValueError
            For ``estimator='full'`` (use 'pcr' or 'rrr') or without observables in ``fit``.
        """
        check_is_fitted(self, "operator_")
        if getattr(self, "rank_", None) is None:
            raise ValueError("modes need a reduced-rank estimator: use estimator='pcr' or "
                             "'rrr' (with rank=...); estimator='full' keeps no left eigenvectors")
        c = self._fc["obs"] if observable else self._fc["state"]
        if c is None:
            raise ValueError("observable=True needs observables: pass fit(X, y, "
                             "observables=...) first")
        return self._modes_map @ c

    def score(self, X, y=None, sample_weight=None, n_steps: int = 1) -> float:
        """R² of the one-step prediction of the snapshots y from X (for model selection).

        1 − Σ‖y_i − ŷ_i‖² / Σ‖y_i − ȳ‖² with ŷ = ``predict(X)``, pooled over the features
        (``r2_score`` with ``multioutput='variance_weighted'``): a scikit-learn regressor's
        ``score``, so ``GridSearchCV``/``cross_val_score`` select ``alpha``, the kernel
        parameters, ``estimator`` and ``rank`` by held-out one-step prediction (the one-step
        prediction risk of Kostic et al. 2022 measured on the state).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A trajectory (``y=None``; pairs (x_t, x_{t+lag}) as in ``fit``) or the snapshots.
        y : array-like of shape (n_samples, n_features) or None, default=None
            The time-shifted snapshots.
        sample_weight : array-like of shape (n_pairs,) or None, default=None
            Weights of the pairs.
        n_steps : int, default=1
            Score the ``n_steps``-lag forecast ``predict(x_t, n_steps)`` against
            x_{t + n_steps·lag} instead (trajectory input, ``y=None``, only), as kooplearn's
            ``score(n_steps=...)``.

        Returns
        -------
        float
            The R² score (1 is a perfect forecast).

        Raises
        ------
        ValueError
            If ``n_steps > 1`` with snapshot pairs ``y``, the trajectory is too short, or
            ``sample_weight`` is not one finite, non-negative real weight per pair (not all
            zero).
        """
        from sklearn.metrics import r2_score

        from .._dispatch import is_torch_tensor

        check_is_fitted(self, "operator_")
        lag = _check_int(self.lag, "lag")
        if is_torch_tensor(X):  # scored on the host (predict runs on the fit's device)
            X = X.detach().cpu().numpy()
        if is_torch_tensor(y):
            y = y.detach().cpu().numpy()
        if is_torch_tensor(sample_weight):
            sample_weight = sample_weight.detach().cpu().numpy()
        X_in = X
        sparse_ok = getattr(self, "_sparse_ok", False)
        X = check_input(self, X, reset=False, allow_sparse=sparse_ok, min_samples=2)
        k = _check_int(n_steps, "n_steps")
        if y is None:
            shift = lag * k
            if shift >= X.shape[0] - 1:
                raise ValueError(f"lag·n_steps={shift} must be smaller than the trajectory "
                                 f"length {X.shape[0]} minus one (at least two pairs)")
            X0, Y = X[:-shift], X[shift:]
        elif k > 1:
            raise ValueError(f"n_steps={k} > 1 needs a trajectory (y=None): snapshot pairs y "
                             "give one-step targets only")
        else:
            X0 = X
            Y = as_data(y, "y", ensure_2d=False, allow_sparse=sparse_ok)
            if not sp.issparse(Y) and Y.ndim == 1 and X.shape[1] == 1:
                Y = Y.reshape(-1, 1)
            if Y.shape != X.shape:
                raise ValueError(f"y has shape {Y.shape}; expected the time-shifted snapshots "
                                 f"with the shape of X {X.shape}")
        Y = Y.toarray() if sp.issparse(Y) else np.asarray(Y)
        # fit's weight validation: real, finite, >= 0 (a negative weight can push R² above 1)
        sw = as_weights(sample_weight, Y.shape[0], "sample_weight", "time-lagged pair")
        X0 = X0 if not hasattr(X_in, "columns") else X_in.iloc[: X0.shape[0]]
        pred = self.predict(X0, n_steps=k)
        return float(r2_score(Y, pred, sample_weight=sw, multioutput="variance_weighted"))


class PerronFrobeniusOperator(_TransferOperator):
    """Kernel Perron–Frobenius operator P̂ = Ψ G_ΦΨ⁻¹ (G_Φ + nεI)⁻¹ G_ΦΨ Φᵀ (paper 002 §4.4).

    ``fit`` as for :class:`KoopmanOperator` (one trajectory X, or snapshot pairs ``fit(X, y)``).
    No ``score``: P̂ propagates densities, it predicts no state, so there is no natural
    supervised score. G_ΦΨ = [k(x_i, y_j)] is the time-lagged Gram matrix. Eigenfunctions live on
    the lagged samples y_i; the top eigenpairs come from ARPACK (n > 150), never a full
    eigendecomposition.

    **Ill-conditioned G_ΦΨ.** In exact arithmetic the eigenvalues of P̂ are those of
    A = (G_Φ + nεI)⁻¹ G_ΦΨ, but the eigenfunctions f = Ψ w need w = G_ΦΨ⁻¹ v, and an LU solve with
    G_ΦΨ loses about log10(1/rcond) digits. G_ΦΨ is therefore LU-factorised and its reciprocal
    condition number ``lagged_gram_rcond_`` estimated first; when it is below ``RCOND_MIN`` = √eps
    the inverse is replaced, with an :class:`IllConditionedLaggedGramWarning`, by the Tikhonov-
    regularised inverse with δ = nε:

        B_δ = G_ΦΨ^{+δ} (G_Φ + nεI)⁻¹ G_ΦΨ,  G_ΦΨ^{+δ} = (G_ΦΨᵀG_ΦΨ + δ²I)⁻¹G_ΦΨᵀ
            = V diag(σ_i/(σ_i² + δ²)) Uᵀ  (SVD G_ΦΨ = U diag(σ) Vᵀ),

    which keeps the directions with σ ≫ δ exactly and damps the numerically null ones
    (every eigenvalue then satisfies ``|λ|`` ≤ ‖A‖₂). ``lagged_gram_solver_`` is ``'lu'`` or
    ``'tikhonov'``. Eigenfunctions whose RKHS norm is numerically zero are dropped with a warning.

    **Reduced-rank estimators** (``estimator='pcr'`` or ``'rrr'``, rank r = ``rank``). The
    Perron–Frobenius operator is the adjoint of the Koopman operator; in the RKHS its embedded
    form is P_E = C_YX C_XX⁻¹ = (C_XX⁻¹ C_XY)* (Klus et al. 2020, §3), so its estimator is the
    adjoint of the Koopman estimator (Kostic et al. 2022, §3): with the Koopman estimator
    K̂ = Φ U Vᵀ Ψᵀ of :class:`KoopmanOperator` (same ``estimator``/``rank``; Φ the features of the
    x_i, Ψ those of the y_i, U, V n×r),

        P̂ = K̂* = Ψ V Uᵀ Φᵀ,  i.e. B = V Uᵀ (rank r, never formed).

    Its eigenpairs come from the r×r matrix Mᵀ = Uᵀ G_ΦΨ V (M = Vᵀ G_ΨΦ U is the Koopman
    matrix): P̂ (Ψ V z) = λ Ψ V z when Mᵀ z = λ z, so the eigenvalues are those of the Koopman
    estimator and the eigenfunctions are its left eigenfunctions
    (``KoopmanOperator.left_eigenfunctions_``), here RKHS-normalised. G_ΦΨ is only multiplied,
    never inverted, so the reduced-rank estimators need no conditioning safeguard. At full rank
    (r = n) 'pcr' and 'rrr' equal Ψ (G_Φ + nεI)⁻¹ Φᵀ (the regularised P_E); ``'full'`` (the default)
    is the paper-002 estimator above, of the kernel PF operator C_XX⁻¹C_YX (Klus et al. 2020):
    the two are similar operators, P_E = C_XX P C_XX⁻¹, so their eigenvalues coincide and
    their eigenfunctions differ by the covariance operator.

    Parameters
    ----------
    kernel : str, Kernel or callable, default='rbf'
        A symmetric PSD kernel.
    kernel_params : dict or None, default=None
        Keyword arguments of the kernel.
    alpha : float, default=1e-6
        Tikhonov parameter ε > 0 (``regularization`` is its deprecated former name).
    lag : int, default=1
        τ in time steps for a trajectory ``fit(X)``.
    n_components : int, default=5
        Number of eigenpairs kept.
    timestep : float, default=1.0
        Time per step (for ``timescales_``).
    estimator : {'full', 'pcr', 'rrr'}, default='full'
        'full': the paper-002 estimator; 'pcr'/'rrr': the adjoint of the reduced-rank
        Koopman estimator (see above).
    rank : int or None, default=None
        Rank r of the 'pcr'/'rrr' estimators; None uses ``n_components``. Clipped to the number
        of pairs. Ignored by 'full'.
    regularization : float, deprecated
        Former name of ``alpha``.
    device : None, str or torch.device, default=None
        Run ``fit`` on the torch backend on this device (``'cpu'``, ``'cuda'``, …): the n×n
        Gram matrices are formed there in float64 and the n×n work runs there (``'full'``:
        Cholesky and LU factors of G_X + nεI and G_XY — the reciprocal condition number
        ``lagged_gram_rcond_`` is LAPACK's ``gecon`` estimate from that LU factor, as on the
        numpy path, and below ``RCOND_MIN`` the SVD of G_XY gives the Tikhonov-regularised
        inverse — then the top eigenpairs of the auxiliary matrix, by ``torch.linalg.eig`` for
        n ≤ 150 and above by the numpy path's ARPACK call with its products on the device;
        ``'pcr'``/``'rrr'``:
        ``torch.linalg.eigh``, then the r×r matrix on the host). ``None``: the numpy path for
        numpy input, the tensor's own device for torch tensors. The fitted attributes are numpy
        arrays either way. Exact estimators only; the kernels of
        ``asymkern._torch.kernels.SUPPORTED_KERNELS``; needs PyTorch
        (``pip install "asymkern[torch]"``).

    Attributes
    ----------
    eigenvalues_ : ndarray of shape (``n_components_``,)
        Eigenvalues by decreasing modulus (numpy, also after a fit on torch tensors).
    eigenfunctions_ : RKHSFunction
        Eigenfunctions (functions on the lagged samples' space; numpy, also after a torch fit).
    timescales_ : ndarray
        Implied timescales −τ/ln|λ_i|.
    lagged_gram_rcond_ : float or None
        Estimated reciprocal condition number of G_ΦΨ ('full' only).
    lagged_gram_solver_ : {'lu', 'tikhonov'} or None
        How G_ΦΨ⁻¹ was applied ('full' only; None for 'pcr'/'rrr').
    rank_ : int or None
        Rank of the 'pcr'/'rrr' estimator (None for 'full').

    See Also
    --------
    KoopmanOperator : the adjoint (function propagation, forecasts).

    References
    ----------
    .. [1] Paper 002, §4.4 (kernel transfer operators).
    .. [2] S. Klus, I. Schuster, K. Muandet, "Eigendecompositions of transfer operators in
       reproducing kernel Hilbert spaces", J. Nonlinear Sci. 30, 283–315 (2020), §3.
    .. [3] V. Kostic, P. Novelli, A. Maurer, C. Ciliberto, L. Rosasco, M. Pontil, "Learning
       dynamical systems via Koopman operator regression in reproducing kernel Hilbert
       spaces", NeurIPS 2022 (PCR and RRR estimators).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import PerronFrobeniusOperator
    >>> rng = np.random.RandomState(0)
    >>> x = np.zeros((120, 1))
    >>> for t in range(119):
    ...     x[t + 1] = 0.8 * x[t] + 0.5 * rng.randn()
    >>> pf = PerronFrobeniusOperator(kernel_params={"gamma": 0.5}, alpha=1e-3,
    ...                              n_components=2).fit(x)
    >>> pf.eigenvalues_.shape
    (2,)
    >>> from asymkern.operators import KoopmanOperator
    >>> kw = dict(kernel="linear", estimator="rrr", rank=1, n_components=1)
    >>> pf_rrr = PerronFrobeniusOperator(**kw).fit(x)  # the adjoint of the Koopman RRR
    >>> bool(np.isclose(pf_rrr.eigenvalues_[0], KoopmanOperator(**kw).fit(x).eigenvalues_[0]))
    True
    """

    RCOND_MIN = float(np.sqrt(np.finfo(np.float64).eps))

    def __init__(self, kernel="rbf", kernel_params=None, alpha: float = 1e-6,
                 lag: int = 1, n_components: int = 5, timestep: float = 1.0,
                 estimator: str = "full", rank=None, regularization=DEPRECATED, device=None):
        super().__init__(kernel=kernel, kernel_params=kernel_params,
                         alpha=alpha, lag=lag, n_components=n_components,
                         timestep=timestep, regularization=regularization)
        self.estimator = estimator
        self.rank = rank
        self.device = device

    def fit(self, X, y=None, *, Y=None):
        """Fit on a trajectory or on snapshot pairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            One trajectory (rows are time steps, pairs (x_t, x_{t+lag})) when ``y`` is None, else
            the snapshots x_i.
        y : array-like of shape (n_samples, n_features) or None, default=None
            The time-shifted snapshots y_i = Ξ^τ(x_i), same shape as X.
        Y : array-like, deprecated
            Former keyword of ``y``.

        Returns
        -------
        self : PerronFrobeniusOperator
            The fitted estimator.
        """
        y = renamed_argument(y, Y, "y", "Y", where="PerronFrobeniusOperator.fit")
        kind = self._estimator_kind()
        self.torch_fit_ = False
        if use_torch(self, X, y):  # torch executor (asymkern._torch)
            from .._torch.transfer import fit_perron_frobenius_torch

            return fit_perron_frobenius_torch(self, X, y,
                                              as_rkhs_kernel(self.kernel, self.kernel_params))
        eps, X0, X1, n, G = self._lagged_gram(X, y)
        self.X_fit_, self.Y_fit_ = X0, X1
        if kind != "full":
            return self._fit_reduced(kind, G, X0, X1, n, eps)
        self.rank_ = None
        Gxy = np.asarray(self.kernel_(X0, X1), dtype=np.float64)
        check_finite_output(Gxy, "the time-lagged Gram matrix G_XY = [k(x_i, y_j)]",
                            "rescale X (and Y) or choose a kernel parameter that keeps it finite")
        inv = CholeskyInverse(G, n * eps, "G_X", source=(self.kernel_, X0))
        solver = LaggedGramSolver(Gxy, n * eps, self.RCOND_MIN)
        self.lagged_gram_rcond_ = solver.rcond
        self.lagged_gram_solver_ = solver.kind
        if solver.kind == "tikhonov":
            self._warn_ill_conditioned(n, eps, solver.rcond, solver.n_damped, stacklevel=3)

        B = PerronFrobeniusRepresentation(Gxy, inv, solver,
                                          source=(self.kernel_, X0, X1, n * eps, self.RCOND_MIN))
        self.operator_ = EmpiricalOperator(self.kernel_, X0, self.kernel_, X1, B)
        self.operator_._cache["in"] = G
        self.operator_._cache["cross"] = Gxy
        return self._finish(solver="arpack" if n > 150 else "auto")

    def _warn_ill_conditioned(self, n: int, eps: float, rcond: float, n_damped: int,
                              stacklevel: int):
        """The :class:`IllConditionedLaggedGramWarning` of a fit that regularised G_XY⁻¹."""
        warnings.warn(
            f"the time-lagged Gram matrix G_XY ({n}×{n}) is ill-conditioned "
            f"(rcond={rcond:.2e} < {self.RCOND_MIN:.1e}); the exact estimate "
            "G_XY⁻¹(G_X + nεI)⁻¹G_XY would amplify rounding errors, so G_XY⁻¹ is replaced by "
            f"the Tikhonov-regularised (G_XYᵀG_XY + δ²I)⁻¹G_XYᵀ with δ = nε = {n * eps:.3g} "
            f"({n_damped} of {n} singular values of G_XY are below δ). Typical causes: "
            "samples that are not a trajectory, repeated states, a large kernel bandwidth",
            IllConditionedLaggedGramWarning,
            stacklevel=stacklevel,
        )

    def _fit_reduced(self, kind, G, X0, X1, n, eps):
        """P̂ = Ψ V Uᵀ Φᵀ, the adjoint of the reduced-rank Koopman estimator Φ U Vᵀ Ψᵀ."""
        r = self._rank(n, "the number of time-lagged pairs")
        U, V, Cyx, H = self._reduced_dual(kind, G, X0, X1, r, n * eps)
        if H is None:
            H = np.asarray(self.kernel_(X1), dtype=np.float64)
            check_finite_output(H, "the Gram matrix of the shifted samples y_i", _RESCALE)
        self.lagged_gram_rcond_ = None
        self.lagged_gram_solver_ = None
        op = EmpiricalOperator(self.kernel_, X0, self.kernel_, X1, _LowRank(V, U))
        op._cache["in"], op._cache["out"], op._cache["cross"] = G, H, Cyx.T
        self.operator_ = op
        self.rank_ = int(U.shape[1])
        lam, Z, _ = reduced_eig(U.T @ (Cyx.T @ V))  # Mᵀ = Uᵀ G_ΦΨ V
        coef = V @ Z
        norms = np.sqrt(np.maximum(np.real(np.einsum("ij,ij->j", np.conj(coef), H @ coef)),
                                   1e-300))
        k = _check_int(self.n_components, "n_components")
        k = clip_count(k, lam.size, "n_components",
                       f"the number of nonzero eigenvalues of the rank-{self.rank_} estimator",
                       owner=type(self).__name__)
        fn = RKHSFunction(self.kernel_, X1, coef[:, :k] / norms[:k])
        return self._finish(OperatorEig(lam[:k], fn, kind, {"rank": self.rank_}))


class KernelCCA(_PreservesFloat32, _ComponentsOut, TransformerMixin, _OperatorEstimator):
    """Kernel CCA as the SVD of S = (Ĉ_YY + εI)^{-1/2} Ĉ_YX (Ĉ_XX + εI)^{-1/2} (paper 002 App. A.2).

    S = Ψ B Φᵀ with B = (G_Ψ + nεI)^{-1/2} (G_Φ + nεI)^{-1/2} — exact for the Tikhonov-regularised
    empirical operators. The inverse square roots come from eigendecompositions of the Gram
    matrices (through a rank-revealing pivoted Cholesky when they are numerically low-rank,
    :func:`~asymkern.linalg.operator_svd.gram_eigh`), which also serve as the kernel QR factors.
    ``fit(X, y)``: y is the paired second view (samples (x_i, y_i)), as scikit-learn's ``CCA``.
    ``transform(X)`` gives the (centred) canonical variates of X, ``transform(X, y)`` the pair
    ``(x_scores, y_scores)``, ``transform_y(y)`` those of y alone.

    Parameters
    ----------
    kernel_x, kernel_y : str, Kernel or callable, default='rbf'
        Symmetric PSD kernels on X and y.
    kernel_x_params, kernel_y_params : dict or None, default=None
        Keyword arguments of the kernels.
    alpha : float, default=1e-3
        ε > 0 (``regularization`` is its deprecated former name).
    n_components : int, default=2
        Number of canonical pairs; more than the numerical rank is clipped with a
        :class:`~asymkern.exceptions.ClippedParameterWarning` (``n_components_``).
    center : bool, default=True
        Centred features (the usual CCA; the paper's App. A.2 is uncentred).
    method : {'qr', 'auxiliary', 'block'}, default='qr'
        SVD route.
    regularization : float, deprecated
        Former name of ``alpha``.
    device : None, str or torch.device, default=None
        Run ``fit`` / ``transform`` on the torch backend on this device (``'cpu'``,
        ``'cuda'``, …): both Gram matrices are formed and eigendecomposed there
        (``torch.linalg.eigh``, float64, as the numpy path computes), the small SVD of
        Cor. 3.5 too, and numpy inputs give numpy outputs. ``None``: the numpy path for numpy
        input, the tensor's own device for torch tensors (tensors back, dtype kept). Only
        ``method='qr'`` and the kernels of ``asymkern._torch.kernels.SUPPORTED_KERNELS``; needs
        PyTorch (``pip install "asymkern[torch]"``). Correlations equal the numpy path's to
        rounding; the functions agree up to sign.

    Attributes
    ----------
    canonical_correlations_ : ndarray of shape (``n_components_``,)
        The singular values σ_i ≤ 1 (a float64 tensor on the device after a fit on tensors).
    x_singular_functions_, y_singular_functions_ : RKHSFunction
        Right (v_i ∈ H, plotted in Ex. 4.2) and left (u_i ∈ F) singular functions.
    x_canonical_functions_, y_canonical_functions_ : RKHSFunction
        f_i = (Ĉ_XX + ε)^{-1/2} v_i and g_i = (Ĉ_YY + ε)^{-1/2} u_i, unit empirical variance.
    n_components_ : int
        Number of pairs kept.

    See Also
    --------
    CrossCovarianceOperator : the unnormalised cross-covariance SVD.
    KoopmanOperator : transfer operators (their SVD gives coherent sets).

    References
    ----------
    .. [1] Paper 002, Appendix A.2 and Example 4.2 (coherent sets of the double gyre).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import KernelCCA
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(60, 2)
    >>> y = X[:, :1] ** 2 + 0.1 * rng.randn(60, 1)
    >>> cca = KernelCCA(n_components=2).fit(X, y)
    >>> cca.transform(X).shape
    (60, 2)
    >>> bool(cca.canonical_correlations_[0] <= 1.0)
    True
    """

    def __init__(self, kernel_x="rbf", kernel_y="rbf", kernel_x_params=None,
                 kernel_y_params=None, alpha: float = 1e-3, n_components: int = 2,
                 center: bool = True, method: str = "qr", regularization=DEPRECATED,
                 device=None):
        self.kernel_x = kernel_x
        self.kernel_y = kernel_y
        self.kernel_x_params = kernel_x_params
        self.kernel_y_params = kernel_y_params
        self.alpha = alpha
        self.n_components = n_components
        self.center = center
        self.method = method
        self.regularization = regularization
        self.device = device

    def fit(self, X, y=None, *, Y=None):
        """Fit on paired samples (x_i, y_i).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The first view.
        y : array-like of shape (n_samples,) or (n_samples, n_features_y)
            The paired second view.
        Y : array-like, deprecated
            Former keyword of ``y``.

        Returns
        -------
        self : KernelCCA
            The fitted estimator.
        """
        y = renamed_argument(y, Y, "y", "Y", where="KernelCCA.fit")
        eps = self._alpha()
        kx = as_rkhs_kernel(self.kernel_x, self.kernel_x_params, "kernel_x")
        ky = as_rkhs_kernel(self.kernel_y, self.kernel_y_params, "kernel_y")
        self.torch_fit_ = False
        if use_torch(self, X, y):  # torch executor (asymkern._torch)
            return self._fit_torch(X, y, kx, ky, eps)
        X = _fit_X(self, X, kx)
        Y2, self._y_1d = _second_view(y, X.shape[0], ky)
        self._sparse_ok, self._y_sparse_ok = _kernel_sparse(kx), _kernel_sparse(ky)
        n = X.shape[0]
        c = bool(self.center)
        Gx = _center_gram(check_finite_output(kx(X), "the Gram matrix of X", _RESCALE), c, c)
        Gy = _center_gram(check_finite_output(ky(Y2), "the Gram matrix of y",
                                              "rescale y or change kernel_y's parameters"), c, c)
        Fx = gram_eigh(Gx, name="Gram matrix of X")
        Fy = gram_eigh(Gy, name="Gram matrix of y")
        dx = 1.0 / np.sqrt(Fx.evals + n * eps)
        dy = 1.0 / np.sqrt(Fy.evals + n * eps)
        B = CCARepresentation(Fx.evecs, dx, Fy.evecs, dy, source=(kx, X, ky, Y2, c, n * eps))
        op = EmpiricalOperator(kx, X, ky, Y2, B, center_in=c, center_out=c)
        op._cache["in"], op._cache["out"] = Gx, Gy
        op.set_factor("in", Fx)
        op.set_factor("out", Fy)
        self.operator_ = op
        if self.method == "qr":
            limit = min(Fx.rank, Fy.rank)
            what = f"the numerical rank of the Gram matrices ({Fx.rank} for X, {Fy.rank} for y)"
        else:
            limit, what = n, "the number of samples"
        res = _clipped_decomposition(self, lambda k: op.svd(k, method=self.method), limit, what)
        self.n_components_ = int(res.singular_values.size)
        self.canonical_correlations_ = res.singular_values
        self.x_singular_functions_ = res.right
        self.y_singular_functions_ = res.left
        self.x_canonical_functions_ = self._canonical(res.right.coef, Fx, Gx, eps, n, kx, X)
        self.y_canonical_functions_ = self._canonical(res.left.coef, Fy, Gy, eps, n, ky, Y2)
        # the training means of the variates (centring), so transform needs no n×n work
        self._x_mean = self.x_canonical_functions_(X).mean(axis=0) if c else None
        self._y_mean = self.y_canonical_functions_(Y2).mean(axis=0) if c else None
        return self

    def _fit_torch(self, X, y, kx, ky, eps: float):
        from .._torch.device import to_numpy
        from .._torch.operators import fit_cca_torch

        res = fit_cca_torch(self, X, y, kx, ky, eps)
        self._sparse_ok = self._y_sparse_ok = False
        self._y_1d = getattr(y, "ndim", np.ndim(y)) == 1
        X64, Y64, c = res["X"], res["Y"], bool(self.center)
        self._torch_state = res["state"]
        n = X64.shape[0]
        # the numpy operator on the same samples: its own methods factorise lazily, with numpy
        self.operator_ = EmpiricalOperator(
            kx, X64, ky, Y64, CCARepresentation.lazy((n, n), (kx, X64, ky, Y64, c, n * eps)),
            center_in=c, center_out=c)
        cu, cv = res["coef_u"], res["coef_v"]
        if c:
            cu, cv = _center_coef(cu), _center_coef(cv)
        self.n_components_ = int(cv.shape[1])
        self.canonical_correlations_ = res["correlations"]
        self.x_singular_functions_ = RKHSFunction(kx, X64, cv)
        self.y_singular_functions_ = RKHSFunction(ky, Y64, cu)
        self.x_canonical_functions_ = RKHSFunction(kx, X64, res["coef_f"])
        self.y_canonical_functions_ = RKHSFunction(ky, Y64, res["coef_g"])
        st = res["state"]
        self._x_mean = None if st["mean_x"] is None else to_numpy(st["mean_x"])
        self._y_mean = None if st["mean_y"] is None else to_numpy(st["mean_y"])
        return self

    def _canonical(self, C, F, G, eps, n, kernel, Z) -> RKHSFunction:
        # (Ĉ + ε)^{-1/2} Φ c = Φ (G/n + ε)^{-1/2} c, restricted to the kept eigen-directions
        U, lam = F.evecs, F.evals
        D = 1.0 / np.sqrt(lam / n + eps)
        coef = U @ (D[:, None] * (U.T @ C))
        vals = G @ coef  # f(x_i) for the (centred) training features
        if self.center:
            vals = vals - vals.mean(axis=0)
        sd = np.sqrt(np.mean(vals**2, axis=0))
        sd[sd == 0] = 1.0
        coef = coef / sd
        if self.center:
            coef = coef - coef.mean(axis=0)
        return RKHSFunction(kernel, Z, coef)

    def _variates(self, f: RKHSFunction, Z, mean) -> np.ndarray:
        vals = f(Z)
        if mean is not None:
            vals = vals - mean
        return check_finite_output(vals, "the canonical variates", "rescale the samples like "
                                   "the training data")

    def transform(self, X, y=None):
        """Canonical variates f_i(x) of X; with ``y`` the pair ``(x_scores, y_scores)``.

        Parameters
        ----------
        X : array-like of shape (n_points, n_features)
            Points of the first view.
        y : array-like of shape (n_points, n_features_y) or None, default=None
            Points of the second view.

        Returns
        -------
        ndarray of shape (n_points, ``n_components_``) or tuple of two such arrays
            The canonical variates.
        """
        check_is_fitted(self, "operator_")
        if use_torch(self, X, y):  # torch executor (asymkern._torch)
            from .._torch.operators import transform_cca_torch

            return transform_cca_torch(self, X, y)
        X_in, X = _transform_X(self, X)
        xs = _like_input(X_in, self._variates(self.x_canonical_functions_, X, self._x_mean))
        if y is None:
            return xs
        return xs, self.transform_y(y)


    def transform_y(self, y=None, *, Y=None):
        """Canonical variates g_i(y) of the second view.

        Parameters
        ----------
        y : array-like of shape (n_points, n_features_y)
            Points of the second view.
        Y : array-like, deprecated
            Former keyword of ``y``.

        Returns
        -------
        ndarray of shape (n_points, ``n_components_``)
            The canonical variates of y.
        """
        y = renamed_argument(y, Y, "y", "Y", where="KernelCCA.transform_y")
        check_is_fitted(self, "operator_")
        if y is None:
            raise ValueError("y is None; expected the samples y of shape (n_samples, "
                             f"{self.operator_.Y.shape[1]}) like the y passed to fit")
        if use_torch(self, y):  # torch executor (asymkern._torch)
            from .._torch.operators import transform_cca_torch

            return transform_cca_torch(self, None, y)
        y_in, Y = _transform_y(self, y)
        return _like_input(y_in, self._variates(self.y_canonical_functions_, Y, self._y_mean))


__all__ = [
    "ConditionalMeanEmbedding",
    "IllConditionedLaggedGramWarning",
    "CovarianceOperator",
    "CrossCovarianceOperator",
    "KernelCCA",
    "KoopmanOperator",
    "PerronFrobeniusOperator",
]
