"""Estimators of RKHS operators from data (paper 002, §4), each exposing its operator's SVD/EVD.

Every estimator builds an :class:`~asymkern.operators.EmpiricalOperator` ``operator_`` = Ψ B Φᵀ in
``fit`` and offers ``svd``/``eig`` (delegated to it) plus what a user of that operator expects:

============================  ==================================================================
estimator                     B (S = Ψ B Φᵀ), paper 002
============================  ==================================================================
CovarianceOperator            I/n, Ψ = Φ (§4.2) — eigenvalues/Mercer eigenfunctions (Ex. 3.10)
CrossCovarianceOperator       I/n (§4.2) — singular values/functions (Ex. 3.16)
ConditionalMeanEmbedding      (G_Φ + nεI)⁻¹ (§4.3, Tikhonov) — E[g(Y) | X = x]
KoopmanOperator               (G_Φ + nεI)⁻¹ with the roles of X_t, X_{t+τ} swapped (§4.4)
PerronFrobeniusOperator       G_ΦΨ⁻¹ (G_Φ + nεI)⁻¹ G_ΦΨ (§4.4)
KernelCCA                     (G_Ψ + nεI)^{-1/2} (G_Φ + nεI)^{-1/2} (App. A.2, regularised)
============================  ==================================================================

The Tikhonov parameter ε (``regularization``) regularises the covariance operator, C + εI; on the
Gram matrices it appears as G + nεI. Inverses are never formed: B is a LinearOperator backed by a
Cholesky (or LU) factorisation, or by the eigendecomposition the matrix square roots need.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import as_data, check_finite_output
from ..linalg.operator_svd import gram_eigh
from .empirical import (
    EmpiricalOperator,
    MatmatOperator,
    OperatorEig,
    RKHSFunction,
    _center_gram,
    as_rkhs_kernel,
    scaled_identity,
)

_RESCALE = "rescale X (e.g. StandardScaler) or change the kernel parameters"


class IllConditionedLaggedGramWarning(RuntimeWarning):
    """A PerronFrobeniusOperator regularised its ill-conditioned time-lagged Gram matrix."""


def _like_input(X_in, values):
    """Outputs follow the input's precision: float32 input gives float32 values (complex64 for
    complex eigenfunction values); the computation itself is float64."""
    if getattr(X_in, "dtype", None) == np.float32:
        return values.astype(np.complex64 if np.iscomplexobj(values) else np.float32)
    return values


def _check_reg(value, name: str = "regularization") -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive real number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(
            f"{name} must be finite and > 0 (Tikhonov parameter ε of (C + εI)⁻¹), got {value}"
        )
    return value


def _check_int(value, name: str, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


class CholeskyInverse(MatmatOperator):
    """(G + shift·I)⁻¹ as a symmetric LinearOperator backed by a Cholesky factor (never formed)."""

    def __init__(self, G: np.ndarray, shift: float, name: str = "G"):
        n = G.shape[0]
        super().__init__((n, n))
        try:
            self.cho = sla.cho_factor(G + shift * np.eye(n), lower=False, check_finite=False)
        except np.linalg.LinAlgError as exc:
            raise ValueError(
                f"{name} + nεI is not positive definite (nε = {shift:.3g}); the kernel must be "
                "PSD and the regularization large enough"
            ) from exc

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


class PerronFrobeniusRepresentation(MatmatOperator):
    """B = G_XY⁻¹ (G_X + nεI)⁻¹ G_XY (G_XY⁻¹ as given by a :class:`LaggedGramSolver`)."""

    def __init__(self, Gxy: np.ndarray, inv: CholeskyInverse, solver: LaggedGramSolver):
        super().__init__(Gxy.shape)
        self.Gxy, self.inv, self.solver = Gxy, inv, solver

    def _apply(self, V):
        return self.solver.solve(self.inv._apply(self.Gxy @ V))

    def _apply_t(self, V):
        W = self.solver.solve_t(V)
        return self.Gxy.T @ self.inv._apply(W)


class CCARepresentation(MatmatOperator):
    """B = (G_Ψ + nεI)^{-1/2} (G_Φ + nεI)^{-1/2} from eigendecompositions U diag(d) Uᵀ."""

    def __init__(self, Ux, dx, Uy, dy):
        super().__init__((Uy.shape[0], Ux.shape[0]))
        self.Ux, self.dx, self.Uy, self.dy = Ux, dx, Uy, dy

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


def landmark_whitening(K_LL: np.ndarray) -> np.ndarray:
    """T = Q Λ^{-1/2} (m×p) with K_LL = Q Λ Qᵀ (eigh; eigenvalues ≤ m·eps·λ_max dropped).

    The whitened landmark features F(x) = k(x, L) T are orthonormal in the RKHS
    (TᵀK_LLT = I): the Nyström features of paper 004 (LLA/SPA, F = K_nm U Λ^{-1/2}).
    """
    K_LL = np.asarray(K_LL, dtype=np.float64)
    lam, Q = sla.eigh(0.5 * (K_LL + K_LL.T), check_finite=False)
    if not lam.size or lam[-1] <= 0:
        raise ValueError("the landmark Gram matrix K_LL is zero; choose other landmarks or "
                         "kernel parameters")
    keep = lam > lam[-1] * K_LL.shape[0] * np.finfo(float).eps
    return Q[:, keep] / np.sqrt(lam[keep])


def landmark_stats(kernel, L: np.ndarray, T: np.ndarray, X, X1=None, Y=None) -> tuple:
    """Row-block sums of the Nyström-restricted estimators (one block function, two executors).

    For the rows x_i of the block (partners x1_i, targets y_i) and the whitened landmark
    features F = k(X, L) T, F⁺ = k(X1, L) T: returns (FᵀF (p×p), FᵀF⁺ (p×p) or None,
    FᵀY (p×d) or None), float64. The in-memory fit sums them over row blocks, the Dask fit over
    row chunks (tree reduction); whitening inside the block keeps the sums well conditioned.
    """
    L = np.asarray(L, dtype=np.float64)
    F0 = np.asarray(kernel(np.asarray(X, dtype=np.float64), L), dtype=np.float64) @ T
    C = None
    if X1 is not None:
        F1 = np.asarray(kernel(np.asarray(X1, dtype=np.float64), L), dtype=np.float64) @ T
        C = F0.T @ F1
    FY = None if Y is None else F0.T @ np.asarray(Y, dtype=np.float64)
    return F0.T @ F0, C, FY


def _add_stats(a: tuple, b: tuple) -> tuple:
    return tuple(None if p is None else p + q for p, q in zip(a, b))


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


def landmark_evaluate(kernel, L: np.ndarray, coef: np.ndarray, X) -> np.ndarray:
    """k(X, L) @ coef in float64 (the prediction / eigenfunction evaluation of one block)."""
    K = np.asarray(kernel(np.asarray(X, dtype=np.float64), np.asarray(L, dtype=np.float64)))
    return K @ coef


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


def _check_landmark_options(est, n: int):
    """Landmark indices (or None for the exact estimator): same draws for every executor."""
    from ..landmarks import select_landmarks

    m, how = est.n_landmarks, est.landmarks
    if m is None and isinstance(how, str):
        if how != "uniform":
            raise ValueError(f"landmarks must be 'uniform' or an index array, got {how!r}")
        return None
    if isinstance(how, str):
        if how != "uniform":
            raise ValueError(f"landmarks must be 'uniform' or an index array, got {how!r}")
        if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m < 1:
            raise ValueError(f"n_landmarks must be None or a positive integer, got {m!r}")
        if m > n:
            raise ValueError(f"n_landmarks={m} is larger than the number of samples n={n}")
        return select_landmarks(None, int(m), "uniform", est.random_state, n_samples=n)
    idx = np.asarray(how)
    if m is not None and (isinstance(m, bool) or not isinstance(m, numbers.Integral)
                          or m != idx.size):
        raise ValueError(f"n_landmarks={m!r} does not match the {idx.size} given landmark "
                         "indices (pass n_landmarks=None with an index array)")
    return select_landmarks(None, idx.size, "fixed", indices=idx, n_samples=n)


class _OperatorEstimator(BaseEstimator):
    """Shared ``svd``/``eig`` delegation to the fitted ``operator_``."""

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


def _pairs(est, X, Y, multi_output=True, name="Y"):
    """Validate paired samples (copies: the estimator never aliases the caller's arrays)."""
    if Y is None:
        raise ValueError(
            f"{type(est).__name__} requires y to be passed, but the target y is None "
            f"(paired samples {name} of shape (n_samples, d_y) are needed)"
        )
    if name == "Y":  # the second data set: its errors name it (not sklearn's "y")
        Y = as_data(Y, "Y", ensure_2d=False)
        if Y.ndim not in (1, 2):
            raise ValueError(f"Y must be 1-D or 2-D (n_samples, d_y), got {Y.ndim} dimensions")
        try:  # sparse X (refused below) and scalars are left to validate_data
            n_x = None if sp.issparse(X) else len(X)
        except TypeError:
            n_x = None
        if n_x is not None and Y.shape[0] != n_x:
            raise ValueError(f"Y has {Y.shape[0]} samples; expected {n_x}, one per row of X "
                             "(paired samples (x_i, y_i))")
    X, Y = validate_data(est, X, Y, multi_output=multi_output, y_numeric=True, dtype=np.float64,
                         ensure_min_samples=2, copy=True)
    Y = np.array(Y, dtype=np.float64, copy=True)
    return X, Y


class _PreservesFloat32:
    """Transformers whose ``transform`` returns float32 for float32 input."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class CovarianceOperator(_PreservesFloat32, TransformerMixin, _OperatorEstimator):
    """Empirical (uncentred by default) covariance operator Ĉ_XX = (1/n) ΦΦᵀ (paper 002 §4.2).

    ``fit`` computes its top ``n_components`` eigenpairs (kernel QR route, Cor. 3.6). With the
    uncentred operator the eigenfunctions φ_i = √λ_i e_i approximate the Mercer features of the
    kernel (Example 3.10): ``transform(X)`` returns [φ_i(x)], and k(x, x') ≈ Σ_i φ_i(x) φ_i(x').

    Attributes: ``operator_``, ``eigenvalues_``, ``eigenfunctions_`` (RKHS-normalised, i.e.
    e_i = φ_i / √λ_i has unit empirical L² norm).
    """

    def __init__(self, kernel="rbf", kernel_params=None, n_components: int = 5,
                 center: bool = False, jitter: float = 0.0):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.center = center
        self.jitter = jitter

    def fit(self, X, y=None):
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2, copy=True)
        n = X.shape[0]
        k = as_rkhs_kernel(self.kernel, self.kernel_params)
        self.operator_ = EmpiricalOperator(k, X, k, X, scaled_identity(n, 1.0 / n),
                                           center_in=self.center, center_out=self.center,
                                           jitter=self.jitter)
        res = self.operator_.eig(_check_int(self.n_components, "n_components"), method="qr")
        self.eigenvalues_ = res.eigenvalues
        self.eigenfunctions_ = res.eigenfunctions
        return self

    def transform(self, X):
        check_is_fitted(self, "operator_")
        X_in = X
        X = validate_data(self, X, reset=False)
        vals = self.eigenfunctions_(X)
        if self.center:
            vals = vals - self.eigenfunctions_(self.operator_.X).mean(axis=0)
        return _like_input(X_in, check_finite_output(vals, "the transformed values",
                                                     "rescale X like the training data"))


class CrossCovarianceOperator(_PreservesFloat32, TransformerMixin, _OperatorEstimator):
    """Empirical cross-covariance operator Ĉ_YX = (1/n) ΨΦᵀ : H → F (paper 002 §4.2, Ex. 3.16).

    ``fit(X, Y)`` computes the top ``n_components`` singular triplets by ``method``.
    Attributes: ``singular_values_``, ``left_singular_functions_`` (u_i ∈ F, functions of y),
    ``right_singular_functions_`` (v_i ∈ H, functions of x). ``transform(X)`` = [v_i(x)].
    """

    def __init__(self, kernel_x="rbf", kernel_y="rbf", kernel_x_params=None,
                 kernel_y_params=None, n_components: int = 5, center: bool = False,
                 method: str = "qr", jitter: float = 0.0):
        self.kernel_x = kernel_x
        self.kernel_y = kernel_y
        self.kernel_x_params = kernel_x_params
        self.kernel_y_params = kernel_y_params
        self.n_components = n_components
        self.center = center
        self.method = method
        self.jitter = jitter

    def fit(self, X, Y=None):
        X, Y = _pairs(self, X, Y)
        Y2 = Y.reshape(-1, 1) if Y.ndim == 1 else Y
        n = X.shape[0]
        kx = as_rkhs_kernel(self.kernel_x, self.kernel_x_params, "kernel_x")
        ky = as_rkhs_kernel(self.kernel_y, self.kernel_y_params, "kernel_y")
        self.operator_ = EmpiricalOperator(kx, X, ky, Y2, scaled_identity(n, 1.0 / n),
                                           center_in=self.center, center_out=self.center,
                                           jitter=self.jitter)
        res = self.operator_.svd(_check_int(self.n_components, "n_components"),
                                 method=self.method)
        self.singular_values_ = res.singular_values
        self.left_singular_functions_ = res.left
        self.right_singular_functions_ = res.right
        return self

    def transform(self, X):
        check_is_fitted(self, "operator_")
        X_in = X
        X = validate_data(self, X, reset=False)
        return _like_input(X_in, check_finite_output(self.right_singular_functions_(X),
                                                     "the transformed values",
                                                     "rescale X like the training data"))


class ConditionalMeanEmbedding(RegressorMixin, _OperatorEstimator):
    """Conditional mean embedding Û_{Y|X} = Ψ (G_Φ + nεI)⁻¹ Φᵀ (paper 002 §4.3, Tikhonov ε).

    μ_{Y|x} = Û φ(x) = Σ_i β_i(x) ψ(y_i) with β(x) = (G_Φ + nεI)⁻¹ [k(x_j, x)]_j, so
    E[g(Y) | X = x] ≈ Σ_i β_i(x) g(y_i) (:meth:`expectation`); :meth:`predict` is the case
    g(y) = y, which is kernel ridge regression with ridge parameter nε.

    Landmarks (``n_landmarks`` = m, or ``landmarks`` = an index array): the Nyström-restricted
    estimator, whose embedding lies in span{φ(x̃_l)} of the landmarks x̃_l = x_{i_l}:
    β(x) = K_nL B_L k(L, x) with B_L = (K_LnK_nL + nεK_LL)⁻¹ (computed in whitened landmark
    features, see :func:`landmark_inverse`), so E[Y | x] = k(x, L) B_L K_Ln Y. Only the m×m matrix
    K_LnK_nL and the m×d_y matrix K_LnY are needed (sums over the samples), so the fit also runs
    on row-chunked dask arrays (tree reductions; the fitted model keeps the landmarks and small
    matrices only). With all samples as landmarks it equals the exact estimator.

    Parameters
    ----------
    kernel_x, kernel_y, kernel_x_params, kernel_y_params : the two symmetric PSD kernels.
    regularization : ε > 0.
    n_landmarks : None (exact estimator) or m, the number of uniformly drawn landmarks.
    landmarks : ``'uniform'`` or an index array of landmark rows of X.
    random_state : seed of the landmark draw (the same indices on numpy and dask inputs).

    Attributes
    ----------
    operator_ : the EmpiricalOperator (None after a dask fit); ``dual_coef_``: (G + nεI)⁻¹Y
    (n×d_y), or with landmarks the m×d_y coefficients B_L K_LnY on ``landmark_points_``;
    ``landmarks_`` (indices, or None).
    """

    def __init__(self, kernel_x="rbf", kernel_y="rbf", kernel_x_params=None,
                 kernel_y_params=None, regularization: float = 1e-3, n_landmarks=None,
                 landmarks="uniform", random_state=None):
        self.kernel_x = kernel_x
        self.kernel_y = kernel_y
        self.kernel_x_params = kernel_x_params
        self.kernel_y_params = kernel_y_params
        self.regularization = regularization
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def fit(self, X, y=None):
        from .._dask import any_dask

        if any_dask(X, y):
            from .._dask.operators import fit_cme_dask

            return fit_cme_dask(self, X, y)
        eps = _check_reg(self.regularization)
        X, Y = _pairs(self, X, y, name="y")
        self._y_1d = Y.ndim == 1
        Y2 = Y.reshape(-1, 1) if Y.ndim == 1 else Y
        n = X.shape[0]
        self.kernel_x_ = as_rkhs_kernel(self.kernel_x, self.kernel_x_params, "kernel_x")
        self.kernel_y_ = as_rkhs_kernel(self.kernel_y, self.kernel_y_params, "kernel_y")
        idx = _check_landmark_options(self, n)
        self.landmarks_ = idx
        self.X_fit_, self.Y_fit_ = X, Y2
        if idx is not None:
            L = X[idx]
            T = landmark_whitening(self.kernel_x_(L))
            A, _, FY = _landmark_stats_in_memory(self.kernel_x_, L, T, X, Y=Y2)
            self._set_landmark_model(L, T, A, FY, n, eps)
            F = landmark_evaluate(self.kernel_x_, L, T, X)
            self.operator_ = EmpiricalOperator(self.kernel_x_, X, self.kernel_y_, Y2,
                                               _LandmarkRepresentation(F, self._M, T, idx,
                                                                       "in"))
            return self
        G = np.asarray(self.kernel_x_(X), dtype=np.float64)
        check_finite_output(G, "the Gram matrix G_X of X", _RESCALE)
        B = CholeskyInverse(G, n * eps, "G_X")
        self._cho = B.cho
        self.operator_ = EmpiricalOperator(self.kernel_x_, X, self.kernel_y_, Y2, B)
        self.operator_._cache["in"] = G
        self.dual_coef_ = check_finite_output(
            sla.cho_solve(self._cho, Y2, check_finite=False),
            "the coefficients (G_X + nεI)⁻¹Y", _RESCALE)
        return self

    def _set_landmark_model(self, L, T, A, FY, n: int, eps: float):
        """Landmark fit from the reduced matrices (shared by the in-memory and dask fits)."""
        check_finite_output(A, "the landmark Gram matrix FᵀF", _RESCALE)
        self.landmark_points_ = np.asarray(L, dtype=np.float64)
        M = landmark_inverse(A, n, eps)
        self._T, self._M = T, M
        self.dual_coef_ = check_finite_output(T @ (M @ FY), "the coefficients B_L K_Ln Y",
                                              _RESCALE)
        self._cho = None

    def weights(self, X) -> np.ndarray:
        """β(x) for each row of X: (n_train, n_points), μ_{Y|x} = Σ_i β_i(x) ψ(y_i)."""
        check_is_fitted(self, "operator_")
        if self.X_fit_ is None:
            raise ValueError("weights/embedding/expectation need the training samples, which a "
                             "model fitted on dask arrays does not keep; use predict")
        X = validate_data(self, X, reset=False)
        if getattr(self, "landmarks_", None) is not None:
            L, T = self.landmark_points_, self._T
            Fx = check_finite_output(landmark_evaluate(self.kernel_x_, L, T, X),
                                     "the kernel values k(x, x̃_l)",
                                     "rescale X like the training data")
            return landmark_evaluate(self.kernel_x_, L, T, self.X_fit_) @ (self._M @ Fx.T)
        K = check_finite_output(self.kernel_x_(self.X_fit_, X), "the kernel values k(x_i, x)",
                                "rescale X like the training data")
        return sla.cho_solve(self._cho, K, check_finite=False)

    def embedding(self, X) -> RKHSFunction:
        """The conditional mean embeddings μ_{Y|x} ∈ F, one function per row of X."""
        return RKHSFunction(self.kernel_y_, self.Y_fit_, self.weights(X))

    def expectation(self, func, X) -> np.ndarray:
        """E[g(Y) | X = x] ≈ Σ_i β_i(x) g(y_i); ``func`` maps (n, d_y) samples to (n,) or (n, p)."""
        vals = np.asarray(func(self.Y_fit_), dtype=np.float64)
        if vals.shape[0] != self.Y_fit_.shape[0]:
            raise ValueError(f"func returned {vals.shape[0]} values for "
                             f"{self.Y_fit_.shape[0]} samples")
        if not np.all(np.isfinite(vals)):
            raise ValueError("func returned non-finite values")
        return self.weights(X).T @ vals

    def predict(self, X) -> np.ndarray:
        """E[Y | X = x] (kernel ridge regression with ridge nε); a dask array for dask X
        (landmark or dask-fitted models)."""
        check_is_fitted(self, "operator_")
        X_in = X
        if getattr(self, "landmarks_", None) is not None:
            out = _landmark_predict(self, X, self.kernel_x_, self.landmark_points_,
                                    self.dual_coef_)
            return out[:, 0] if self._y_1d else out
        X = validate_data(self, X, reset=False)
        out = self.kernel_x_(X, self.X_fit_) @ self.dual_coef_
        check_finite_output(out, "the predictions", "rescale X like the training data")
        out = _like_input(X_in, out)
        return out[:, 0] if self._y_1d else out


def _landmark_predict(est, X, kernel, L, coef):
    """k(x, L) coef for numpy X (numpy out) or row-chunked dask X (dask out); float32 kept."""
    from .._dask import is_dask_array

    if is_dask_array(X):
        from .._dask.operators import evaluate_dask

        if X.ndim != 2 or X.shape[1] != est.n_features_in_:
            raise ValueError(f"X has shape {X.shape}; expected (n, {est.n_features_in_})")
        out = evaluate_dask(kernel, L, coef, X)
        return out.astype(np.float32) if X.dtype == np.float32 else out
    X_in = X
    X = validate_data(est, X, reset=False)
    out = check_finite_output(landmark_evaluate(kernel, L, coef, X), "the predictions",
                              "rescale X like the training data")
    return _like_input(X_in, out)


def _lagged(est, X, Y, lag: int):
    """Validate a trajectory X (or pairs X, Y); always copies (never aliases the caller's data)."""
    X = validate_data(est, X, dtype=np.float64, ensure_min_samples=2, copy=True)
    if Y is None:
        if lag >= X.shape[0] - 1:
            raise ValueError(f"lag={lag} must be smaller than the trajectory length "
                             f"{X.shape[0]} minus one (at least two time-lagged pairs)")
        return X[:-lag].copy(), X[lag:].copy()
    Y = np.array(as_data(Y, "Y"), dtype=np.float64, copy=True)
    if Y.shape != X.shape:
        raise ValueError(f"Y has shape {Y.shape}; expected the shape of X {X.shape} "
                         "(time-lagged pairs y_i = Ξ^τ(x_i))")
    return X, Y


class _TransferOperator(_OperatorEstimator):
    def _lagged_gram(self, X, Y):
        """Validate, form the time-lagged pairs and the Gram matrix of the x_t (shared by fit)."""
        eps = _check_reg(self.regularization)
        lag = _check_int(self.lag, "lag")
        X0, X1 = _lagged(self, X, Y, lag)
        self.kernel_ = as_rkhs_kernel(self.kernel, self.kernel_params)
        G = np.asarray(self.kernel_(X0), dtype=np.float64)
        check_finite_output(G, "the Gram matrix G_X of the samples x_t", _RESCALE)
        return eps, X0, X1, X0.shape[0], G

    def __init__(self, kernel="rbf", kernel_params=None, regularization: float = 1e-6,
                 lag: int = 1, n_components: int = 5, timestep: float = 1.0):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.regularization = regularization
        self.lag = lag
        self.n_components = n_components
        self.timestep = timestep

    def _finish(self, res=None):
        if res is None:
            res = self.operator_.eig(_check_int(self.n_components, "n_components"),
                                     method="auxiliary")
        self.eigenvalues_ = res.eigenvalues
        self.eigenfunctions_ = res.eigenfunctions
        mod = np.abs(self.eigenvalues_)
        with np.errstate(divide="ignore"):
            ts = -self.lag * float(self.timestep) / np.log(np.clip(mod, 1e-300, None))
        ts[mod >= 1] = np.inf
        self.timescales_ = ts
        return self

    def implied_timescales(self) -> np.ndarray:
        """t_i = −τ / ln|λ_i| (τ = lag·timestep); ∞ for |λ_i| ≥ 1."""
        check_is_fitted(self, "operator_")
        return self.timescales_


class KoopmanOperator(_TransferOperator):
    """Kernel Koopman operator K̂ = Φ (G_Φ + nεI)⁻¹ Ψᵀ (paper 002 §4.4, Tikhonov ε).

    ``fit(X)`` takes a trajectory (rows = time steps) and pairs x_t with x_{t+lag};
    ``fit(X, Y=Y)`` takes the pairs y_i = Ξ^τ(x_i) directly (keyword, as
    ``KernelSVD.fit(X, Z=Z)``). Eigenpairs by the auxiliary problem (Prop. 3.8):
    ``eigenvalues_`` (complex if the dynamics rotate), ``eigenfunctions_`` (functions of x),
    ``timescales_`` = −τ/ln|λ|. ``predict(X)`` = E[x_{t+τ} | x_t = x] = (K̂ id)(x).

    Landmarks (``n_landmarks`` = m or ``landmarks`` = indices of the x_t): the
    Nyström-restricted estimator on span{φ(x̃_l)}, x̃_l = x_{t_l}. With K_nL = [k(x_t, x̃_l)],
    the lagged K⁺_nL = [k(x_{t+τ}, x̃_l)] and B_L = (K_LnK_nL + nεK_LL)⁻¹ (whitened, see
    :func:`landmark_inverse`), (K̂f)(x) = k(x, L) B_L K_Ln f(X⁺) for f = k(·, L)ξ, i.e. the m×m
    matrix B_L K_LnK⁺_nL acting on ξ. Its eigenpairs (λ, ξ) (the auxiliary problem, Prop. 3.8,
    with G_cross = K_LnK⁺_nL and the landmark Gram K_LL for the RKHS normalisation) give the
    eigenfunctions φ(x) = k(x, L)ξ; predict(x) = k(x, L) B_L K_Ln X⁺. Only m×m (and m×d) sums
    over the pairs are needed, so the fit also runs on dask arrays (trajectory X, or X and Y
    chunked alike). With all x_t as landmarks it equals the exact estimator.

    Parameters
    ----------
    kernel, kernel_params : symmetric PSD kernel; regularization : ε > 0; lag : τ in steps;
    n_components : eigenpairs kept; timestep : time per step (for ``timescales_``).
    n_landmarks : None (exact estimator) or m.
    landmarks : ``'uniform'`` or an index array into the pairs.
    random_state : seed of the landmark draw (same indices on numpy and dask inputs).
    """

    def __init__(self, kernel="rbf", kernel_params=None, regularization: float = 1e-6,
                 lag: int = 1, n_components: int = 5, timestep: float = 1.0, n_landmarks=None,
                 landmarks="uniform", random_state=None):
        super().__init__(kernel=kernel, kernel_params=kernel_params,
                         regularization=regularization, lag=lag, n_components=n_components,
                         timestep=timestep)
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.random_state = random_state

    def _set_landmark_model(self, L, T, A, C, FY, n: int, eps: float):
        """Landmark fit from the reduced matrices (shared by the in-memory and dask fits).

        In whitened features the Koopman matrix is M FᵀF⁺ (p×p, M = (FᵀF + nεI)⁻¹); its
        eigenvectors w are RKHS-normalised by ‖w‖ = 1 (TᵀK_LLT = I) and give ξ = T w.
        """
        from ..linalg.operator_svd import eig_auxiliary

        check_finite_output(A, "the landmark Gram matrix FᵀF", _RESCALE)
        check_finite_output(C, "the lagged landmark matrix FᵀF⁺", _RESCALE)
        self.landmark_points_ = np.asarray(L, dtype=np.float64)
        M = landmark_inverse(A, n, eps)
        self._T, self._M = T, M
        self._pred_coef = T @ (M @ FY)
        k = min(_check_int(self.n_components, "n_components"), M.shape[0])
        res = eig_auxiliary(C, np.eye(M.shape[0]), M, k)
        fn = LandmarkFunction(self.kernel_, self.landmark_points_, T @ res.C)
        return self._finish(OperatorEig(res.eigenvalues, fn, "auxiliary", dict(res.info)))

    def fit(self, X, y=None, *, Y=None):
        """``fit(X)``: trajectory (rows are time steps), pairs (x_t, x_{t+lag});
        ``fit(X, Y=Y)``: the time-lagged pairs y_i = Ξ^τ(x_i) directly (``y`` is ignored, as for
        unsupervised scikit-learn estimators). Dask X (and Y): see the class docstring."""
        from .._dask import any_dask

        if any_dask(X, Y):
            from .._dask.operators import fit_koopman_dask

            return fit_koopman_dask(self, X, Y)
        eps = _check_reg(self.regularization)
        lag = _check_int(self.lag, "lag")
        X0, X1 = _lagged(self, X, Y, lag)
        idx = _check_landmark_options(self, X0.shape[0])
        self.landmarks_ = idx
        if idx is not None:
            self.kernel_ = as_rkhs_kernel(self.kernel, self.kernel_params)
            n = X0.shape[0]
            L = X0[idx]
            T = landmark_whitening(self.kernel_(L))
            A, C, FY = _landmark_stats_in_memory(self.kernel_, L, T, X0, X1=X1, Y=X1)
            self.X_fit_, self.Y_fit_ = X0, X1
            self.operator_ = None
            self._set_landmark_model(L, T, A, C, FY, n, eps)
            F = landmark_evaluate(self.kernel_, L, T, X0)
            self.operator_ = EmpiricalOperator(self.kernel_, X1, self.kernel_, X0,
                                               _LandmarkRepresentation(F, self._M, T, idx,
                                                                       "out"))
            return self
        self.kernel_ = as_rkhs_kernel(self.kernel, self.kernel_params)
        n = X0.shape[0]
        G = np.asarray(self.kernel_(X0), dtype=np.float64)
        check_finite_output(G, "the Gram matrix G_X of the samples x_t", _RESCALE)
        B = CholeskyInverse(G, n * eps, "G_X")
        self._cho = B.cho
        # S = Ψ' B Φ'ᵀ with Ψ' = features of x_t (output side), Φ' = features of x_{t+τ}
        self.operator_ = EmpiricalOperator(self.kernel_, X1, self.kernel_, X0, B)
        self.operator_._cache["out"] = G
        self.X_fit_, self.Y_fit_ = X0, X1
        return self._finish()

    def predict(self, X) -> np.ndarray:
        """E[x_{t+τ} | x_t = x] = (K̂ id)(x) (float32 for float32 X; dask for dask X with
        landmarks)."""
        check_is_fitted(self, "operator_")
        if getattr(self, "landmarks_", None) is not None:
            return _landmark_predict(self, X, self.kernel_, self.landmark_points_,
                                     self._pred_coef)
        X_in = X
        X = validate_data(self, X, reset=False)
        out = self.kernel_(X, self.X_fit_) @ sla.cho_solve(self._cho, self.Y_fit_)
        return _like_input(X_in, check_finite_output(out, "the predictions",
                                                     "rescale X like the training data"))


class PerronFrobeniusOperator(_TransferOperator):
    """Kernel Perron–Frobenius operator P̂ = Ψ G_ΦΨ⁻¹ (G_Φ + nεI)⁻¹ G_ΦΨ Φᵀ (paper 002 §4.4).

    ``fit`` as for :class:`KoopmanOperator` (trajectory, or pairs with ``Y=``).
    G_ΦΨ = [k(x_i, y_j)] is the time-lagged Gram matrix. Eigenfunctions live on the lagged
    samples y_i.

    **Ill-conditioned G_ΦΨ.** In exact arithmetic the eigenvalues of P̂ are those of
    A = (G_Φ + nεI)⁻¹ G_ΦΨ (the auxiliary matrix B G_ΦΨ = G_ΦΨ⁻¹ A G_ΦΨ is similar to A), but the
    eigenfunctions f = Ψ w need w = G_ΦΨ⁻¹ v, and an LU solve with G_ΦΨ loses about
    log10(1/rcond) digits. With a smooth kernel G_ΦΨ is numerically singular as soon as the
    samples are dense (i.i.d. samples instead of a trajectory, or a trajectory that revisits
    states exactly): the exact formula then yields spurious eigenvalues of any size and
    eigenfunctions that are numerically the zero function. Therefore G_ΦΨ is LU-factorised and
    its reciprocal condition number ``lagged_gram_rcond_`` estimated first; when it is below
    ``RCOND_MIN`` = √eps (≈ 1.5e-8, i.e. more than half of the float64 digits would be lost) the
    inverse is replaced, with an :class:`IllConditionedLaggedGramWarning`, by the Tikhonov-
    regularised inverse with the estimator's own parameter, δ = nε:

        B_δ = G_ΦΨ^{+δ} (G_Φ + nεI)⁻¹ G_ΦΨ,  G_ΦΨ^{+δ} = (G_ΦΨᵀG_ΦΨ + δ²I)⁻¹G_ΦΨᵀ
            = V diag(σ_i/(σ_i² + δ²)) Uᵀ  (SVD G_ΦΨ = U diag(σ) Vᵀ).

    The eigenvalues of B_δ G_ΦΨ are those of F^{1/2} Uᵀ A U F^{1/2} with filter factors
    F = diag(σ_i²/(σ_i² + δ²)): directions of G_ΦΨ with σ ≫ δ are kept exactly, the
    numerically null ones (σ ≪ δ) are damped to zero instead of amplified by 1/σ, and every
    eigenvalue satisfies |λ| ≤ ‖A‖₂ (the exact formula produced |λ| ~ 3e4 on i.i.d. samples
    whose exact-arithmetic eigenvalues are ≤ 1.0001). Well-conditioned G_ΦΨ
    (rcond ≥ RCOND_MIN) keeps the exact formula. ``lagged_gram_solver_`` is ``'lu'`` or
    ``'tikhonov'``. Eigenfunctions whose RKHS norm is numerically zero are dropped with a
    warning (fewer than ``n_components`` are then returned).
    """

    RCOND_MIN = float(np.sqrt(np.finfo(np.float64).eps))

    def fit(self, X, y=None, *, Y=None):
        """``fit(X)``: trajectory (rows are time steps), pairs (x_t, x_{t+lag});
        ``fit(X, Y=Y)``: the time-lagged pairs y_i = Ξ^τ(x_i) directly (``y`` is ignored, as for
        unsupervised scikit-learn estimators)."""
        eps, X0, X1, n, G = self._lagged_gram(X, Y)
        Gxy = np.asarray(self.kernel_(X0, X1), dtype=np.float64)
        check_finite_output(Gxy, "the time-lagged Gram matrix G_XY = [k(x_i, y_j)]",
                            "rescale X (and Y) or choose a kernel parameter that keeps it finite")
        inv = CholeskyInverse(G, n * eps, "G_X")
        solver = LaggedGramSolver(Gxy, n * eps, self.RCOND_MIN)
        self.lagged_gram_rcond_ = solver.rcond
        self.lagged_gram_solver_ = solver.kind
        if solver.kind == "tikhonov":
            warnings.warn(
                f"the time-lagged Gram matrix G_XY ({n}×{n}) is ill-conditioned "
                f"(rcond={solver.rcond:.2e} < {self.RCOND_MIN:.1e}); the exact estimate "
                "G_XY⁻¹(G_X + nεI)⁻¹G_XY would amplify rounding errors, so G_XY⁻¹ is replaced by "
                f"the Tikhonov-regularised (G_XYᵀG_XY + δ²I)⁻¹G_XYᵀ with δ = nε = {n * eps:.3g} "
                f"({solver.n_damped} of {n} singular values of G_XY are below δ). Typical causes: "
                "samples that are not a trajectory, repeated states, a large kernel bandwidth",
                IllConditionedLaggedGramWarning,
                stacklevel=2,
            )

        B = PerronFrobeniusRepresentation(Gxy, inv, solver)
        self.operator_ = EmpiricalOperator(self.kernel_, X0, self.kernel_, X1, B)
        self.operator_._cache["in"] = G
        self.operator_._cache["cross"] = Gxy
        self.X_fit_, self.Y_fit_ = X0, X1
        return self._finish()


class KernelCCA(_PreservesFloat32, TransformerMixin, _OperatorEstimator):
    """Kernel CCA as the SVD of S = (Ĉ_YY + εI)^{-1/2} Ĉ_YX (Ĉ_XX + εI)^{-1/2} (paper 002 App. A.2).

    S = Ψ B Φᵀ with B = (G_Ψ + nεI)^{-1/2} (G_Φ + nεI)^{-1/2} — exact for the Tikhonov-regularised
    empirical operators (App. A.2 with Λ → Λ + ε). ``center=True`` uses centred features (the usual
    CCA; the paper's App. A.2 is uncentred, ``center=False``). The inverse square roots come from
    eigendecompositions of the Gram matrices (computed through a rank-revealing pivoted Cholesky
    when they are numerically low-rank, :func:`~asymkern.linalg.operator_svd.gram_eigh`; directions
    with eigenvalue ≤ n·eps·max diag are dropped), which also serve as the kernel QR factors.

    Attributes: ``canonical_correlations_`` (the singular values σ_i ≤ 1),
    ``x_singular_functions_`` (right singular functions v_i ∈ H, plotted in Ex. 4.2),
    ``y_singular_functions_`` (left, u_i ∈ F),
    ``x_canonical_functions_`` f_i = (Ĉ_XX + ε)^{-1/2} v_i and ``y_canonical_functions_``
    g_i = (Ĉ_YY + ε)^{-1/2} u_i, scaled to unit empirical variance.
    ``transform(X)`` / ``transform_y(Y)`` give the (centred) canonical variates.
    """

    def __init__(self, kernel_x="rbf", kernel_y="rbf", kernel_x_params=None,
                 kernel_y_params=None, regularization: float = 1e-3, n_components: int = 2,
                 center: bool = True, method: str = "qr"):
        self.kernel_x = kernel_x
        self.kernel_y = kernel_y
        self.kernel_x_params = kernel_x_params
        self.kernel_y_params = kernel_y_params
        self.regularization = regularization
        self.n_components = n_components
        self.center = center
        self.method = method

    def fit(self, X, Y=None):
        eps = _check_reg(self.regularization)
        X, Y = _pairs(self, X, Y)
        Y2 = Y.reshape(-1, 1) if Y.ndim == 1 else Y
        n = X.shape[0]
        kx = as_rkhs_kernel(self.kernel_x, self.kernel_x_params, "kernel_x")
        ky = as_rkhs_kernel(self.kernel_y, self.kernel_y_params, "kernel_y")
        c = bool(self.center)
        Gx = _center_gram(check_finite_output(kx(X), "the Gram matrix of X", _RESCALE), c, c)
        Gy = _center_gram(check_finite_output(ky(Y2), "the Gram matrix of Y",
                                              "rescale Y or change kernel_y's parameters"), c, c)
        Fx = gram_eigh(Gx, name="Gram matrix of X")
        Fy = gram_eigh(Gy, name="Gram matrix of Y")
        dx = 1.0 / np.sqrt(Fx.evals + n * eps)
        dy = 1.0 / np.sqrt(Fy.evals + n * eps)
        B = CCARepresentation(Fx.evecs, dx, Fy.evecs, dy)
        op = EmpiricalOperator(kx, X, ky, Y2, B, center_in=c, center_out=c)
        op._cache["in"], op._cache["out"] = Gx, Gy
        op.set_factor("in", Fx)
        op.set_factor("out", Fy)
        self.operator_ = op
        res = op.svd(_check_int(self.n_components, "n_components"), method=self.method)
        self.canonical_correlations_ = res.singular_values
        self.x_singular_functions_ = res.right
        self.y_singular_functions_ = res.left
        self.x_canonical_functions_ = self._canonical(res.right.coef, Fx, Gx, eps, n, kx, X)
        self.y_canonical_functions_ = self._canonical(res.left.coef, Fy, Gy, eps, n, ky, Y2)
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

    def _variates(self, f: RKHSFunction, Z, train: np.ndarray) -> np.ndarray:
        vals = f(Z)
        if self.center:
            vals = vals - f(train).mean(axis=0)
        return check_finite_output(vals, "the canonical variates", "rescale the samples like "
                                   "the training data")

    def transform(self, X):
        """Canonical variates f_i(x) of the X side."""
        check_is_fitted(self, "operator_")
        X_in = X
        X = validate_data(self, X, reset=False)
        return _like_input(X_in, self._variates(self.x_canonical_functions_, X,
                                                self.operator_.X))

    def transform_y(self, Y):
        """Canonical variates g_i(y) of the Y side."""
        check_is_fitted(self, "operator_")
        Y_in = Y
        Y = np.asarray(as_data(Y, "Y", ensure_2d=False), dtype=np.float64)
        Y = Y.reshape(-1, 1) if Y.ndim == 1 else Y
        if Y.ndim != 2 or Y.shape[1] != self.operator_.Y.shape[1]:
            raise ValueError(f"Y has shape {Y.shape}; expected (n_samples, "
                             f"{self.operator_.Y.shape[1]}) like the Y passed to fit")
        return _like_input(Y_in, self._variates(self.y_canonical_functions_, Y,
                                                self.operator_.Y))


__all__ = [
    "ConditionalMeanEmbedding",
    "IllConditionedLaggedGramWarning",
    "CovarianceOperator",
    "CrossCovarianceOperator",
    "KernelCCA",
    "KoopmanOperator",
    "PerronFrobeniusOperator",
]
