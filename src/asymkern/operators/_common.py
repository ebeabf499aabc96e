"""What the operator estimators share: input handling, the n×n representations B that
several estimators use (Cholesky inverse, low rank, Nyström landmark restriction), component
clipping and the ``svd``/``eig`` delegation of the fitted operator (private).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin
from sklearn.utils.validation import _get_feature_names, check_is_fitted

from .._backend import NUMPY, ops_of
from .._shared.operators import (
    _RESCALE,  # noqa: F401 - the estimators' hint, imported from here
    KERNEL_BLOCKS,
    OperatorSamples,
    _check_int,
    _check_reg,
    check_fit_memory,
    evaluate,
    gram,
)
from .._torch import use_torch
from .._validation import (
    as_data,
    check_finite_output,
    check_input,
    clip_count,
    like_input,
    narrowed,
    renamed_param,
)
from ..linalg.operator_svd import SVD_METHODS, _max_asymmetry, svd_qr, symmetrize_in_place
from ._numerics import cholesky_shifted, pinv_spectrum, value_phases
from .empirical import (
    EmpiricalOperator,
    MatmatOperator,
    RKHSFunction,
    _center_coef,
    _center_gram,
    as_rkhs_kernel,
)


def _like_input(X_in, values):
    """Outputs follow the input's precision (:func:`~asymkern._validation.input_precision`,
    the rule of every estimator): float32 input gives float32 values (complex64 for complex
    eigenfunction values); the computation itself is float64."""
    return like_input(values, X_in, "pass float64 input or rescale the targets")


def _single(values):
    """Finite float64 (complex128) ``values`` as float32 (complex64), refused with an
    ``OverflowError`` when one lies beyond float32's range (3.4e38) rather than returned as
    infinity."""
    return narrowed(values, np.float32, "the input's", "pass float64 input or rescale the "
                    "targets")


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
    G = gram(kernel, X, what="the Gram matrix of the samples")
    return _centred_in_place(G, True)[0] if center else G


class CholeskyInverse(_Recomputable, MatmatOperator):
    """(G + shift·I)⁻¹ as a symmetric LinearOperator backed by a Cholesky factor (never formed).

    ``source=(kernel, X)``: G = kernel(X); the factor is then not pickled but recomputed.
    """

    _heavy = ("cho",)

    def __init__(self, G: np.ndarray, shift: float, name: str = "G", source=None, factor=None):
        n = G.shape[0]
        super().__init__((n, n))
        self.shift, self.name, self._source = float(shift), name, source
        self.cho = self._factor(G) if factor is None else factor

    def _factor(self, G):
        return cholesky_shifted(G, self.shift, self.name)

    def _rebuild(self):
        kernel, X = self._source
        self.cho = self._factor(_sym_gram(kernel, X))

    def _apply(self, V):
        return NUMPY.cho_solve(self.cho, V)

    _apply_t = _apply


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


def landmark_inverse(Aw: np.ndarray, n: int, eps: float) -> np.ndarray:
    """M = (FᵀF + nεI)⁻¹ (p×p, Cholesky) — the regularised inverse in whitened features
    (ε = 0, ``alpha=None`` of the transfer operators: the pseudo-inverse (FᵀF)⁺).

    In landmark coordinates B_L = T M Tᵀ = (K_LnK_nL + nεK_LL)⁻¹ when K_LL is invertible (the
    Nyström / subset-of-regressors Tikhonov solution); with every sample a landmark,
    K_nL B_L K_Ln = G (G + nεI)⁻¹, so the estimators equal the exact ones (Mollenhauer et al.,
    2020, §4.3–4.4).
    """
    Aw = 0.5 * (np.asarray(Aw, dtype=np.float64) + np.asarray(Aw, dtype=np.float64).T)
    if eps == 0:  # alpha=None (transfer operators): the pseudo-inverse (FᵀF)⁺, cutoff p·eps·λ_max
        w, V = sla.eigh(Aw, check_finite=False)
        lam, Q, _ = pinv_spectrum(w, V, Aw.shape[0], "the landmark Gram matrix FᵀF")
        return (Q / lam) @ Q.T
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


def _clipped_decomposition(est, decompose, limit: int, what: str):
    """``decompose(k)`` with k = ``n_components`` clipped (ClippedParameterWarning) to ``limit``,
    and, when the operator's numerical rank is smaller still, to that rank.

    Records ``n_components_``: the number of components actually returned.
    """
    k = _clip_components(est, limit, what)
    try:
        res = decompose(k)
    except ValueError as exc:
        if "exceeds the num" not in str(exc):  # not the rank error of the dense solvers
            raise
        res = decompose(None)  # every numerically nonzero component (dense solvers)
        found = next(int(getattr(res, a).shape[0]) for a in ("singular_values", "s",
                                                              "eigenvalues") if hasattr(res, a))
        clip_count(k, found, "n_components", "the numerical rank of the operator",
                   owner=type(est).__name__)
    return res


def _clip_components(est, limit: int, what: str) -> int:
    """``n_components``, validated, clipped to ``limit`` (``what``) with a
    ClippedParameterWarning."""
    k = _check_int(est.n_components, "n_components")
    return clip_count(k, limit, "n_components", what, owner=type(est).__name__)


def _check_decomposition_params(est, method: str | None = None) -> None:
    """``n_components`` (and the SVD ``method``) checked before the fit goes to an executor,
    with the numpy path's rules and messages."""
    _check_int(est.n_components, "n_components")
    if method is not None and method not in SVD_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {SVD_METHODS}")


class _OperatorEstimator(BaseEstimator):
    """Shared ``svd``/``eig`` delegation to the fitted ``operator_``."""

    operator_: Any  # the fitted EmpiricalOperator, or None (declared for the type checker)
    X_fit_: Any
    Y_fit_: Any

    def _alpha(self) -> float:
        return _check_reg(renamed_param(self, "alpha", "regularization"), "alpha")

    def _operator(self):
        check_is_fitted(self, "operator_")
        if self.operator_ is None:
            raise ValueError(f"this {type(self).__name__} was fitted on dask arrays and keeps "
                             "only its landmarks and small matrices (no n×n operator "
                             "representation); use its fitted attributes (eigenvalues_, "
                             "eigenfunctions_, predict)")
        return self.operator_

    def _landmarks_only(self, step, eps: float):
        """A landmark model that keeps the landmarks and small matrices only (a fit on Dask
        arrays or torch tensors: no samples, no ``operator_``) from the landmark ``step``."""
        self.landmarks_ = step.idx
        self.X_fit_ = self.Y_fit_ = None
        self.operator_ = None
        return self._set_landmark_model(step, eps)

    def svd(self, n_components: int | None = None, method: str = "qr", **kwargs):
        """SVD of the estimated operator (see :meth:`EmpiricalOperator.svd`)."""
        return self._operator().svd(n_components, method=method, **kwargs)

    def eig(self, n_components: int | None = None, method: str = "auto", **kwargs):
        """Eigendecomposition of the estimated operator (see :meth:`EmpiricalOperator.eig`)."""
        return self._operator().eig(n_components, method=method, **kwargs)


#: the string values of ``multioutput`` (as :func:`sklearn.metrics.r2_score` takes them)
MULTIOUTPUT = ("raw_values", "uniform_average", "variance_weighted")


def r2_multioutput(y, pred, sample_weight, multioutput, owner: str):
    """R² of ``pred`` against ``y`` (2-D) with :func:`sklearn.metrics.r2_score`'s
    ``multioutput``; ``None`` is the former pooled default ``'variance_weighted'``, with a
    ``FutureWarning`` when y has several columns (the default becomes ``'uniform_average'``,
    scikit-learn's ``RegressorMixin.score``, in 0.3).

    Returns a float, or an ndarray of one R² per column for ``'raw_values'``.
    """
    from sklearn.metrics import r2_score

    from .._validation import user_stacklevel

    d = y.shape[1] if np.ndim(y) == 2 else 1
    if multioutput is None:
        multioutput = "variance_weighted"
        if d > 1:
            warnings.warn(
                f"{owner}.score: the default multioutput=None pools R² over the {d} outputs by "
                "their variance ('variance_weighted'); it will change to 'uniform_average' (the "
                "mean of the per-output R², as scikit-learn's RegressorMixin.score) in "
                "0.3. Pass multioutput='variance_weighted' to keep the current result "
                "or multioutput='uniform_average' to adopt the new one and silence this warning",
                FutureWarning, stacklevel=user_stacklevel())
    elif isinstance(multioutput, str):
        if multioutput not in MULTIOUTPUT:
            raise ValueError(f"multioutput must be one of {MULTIOUTPUT}, None or an array of "
                             f"{d} weights (one per output), got {multioutput!r}")
    else:
        w = np.asarray(multioutput)
        if w.dtype.kind not in "biuf" or w.shape != (d,) or not np.all(np.isfinite(w)):
            raise ValueError(f"multioutput must be one of {MULTIOUTPUT}, None or an array of "
                             f"{d} finite weights (one per output), got {multioutput!r}")
        multioutput = w.astype(np.float64)
    res = r2_score(y, pred, sample_weight=sample_weight, multioutput=multioutput)
    return np.asarray(res, dtype=np.float64) if np.ndim(res) else float(res)


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
    copy (the estimator never aliases the caller's array); CSR when the kernel accepts sparse
    (recorded in ``est._sparse_ok``)."""
    est._sparse_ok = _kernel_sparse(kernel)
    X = check_input(est, X, reset=True, allow_sparse=est._sparse_ok, min_samples=2)
    return _c_copy(X)


def _operator_samples(est, X, y=None, kernel_x=None, kernel_y=None) -> OperatorSamples:
    """The executor-specific step of the covariance, cross-covariance and kernel CCA fits: the
    validated samples (one view without ``kernel_y``, else the pairs (x_i, y_i)) on the
    executor that runs the fit.

    Numpy input without ``device``: :func:`_fit_X` / :func:`_second_view` (float64 copies, CSR
    for a kernel that accepts sparse input; ``_sparse_ok`` and ``_y_sparse_ok`` recorded);
    torch tensors or a set ``device``: :func:`asymkern._torch.operators.operator_samples`
    (float64 copies on the device, ``method='qr'`` only). Sets ``torch_fit_`` False (the device
    fit sets it when it records its state, :meth:`OperatorSamples.fitted`) and, for two views,
    ``_y_1d``.

    Returns
    -------
    OperatorSamples
        The samples; ``device`` None for the numpy fit.
    """
    est.torch_fit_ = False
    # the column names of a DataFrame y, which transform's y must carry in the same order
    est._y_names = None if kernel_y is None else _get_feature_names(y)
    if use_torch(est, X, y):  # torch executor (asymkern._torch): the samples on the device
        from .._torch.operators import operator_samples

        s = operator_samples(est, X, y, kernel_x, kernel_y)
        if kernel_y is not None:
            est._y_1d = getattr(y, "ndim", np.ndim(y)) == 1
        return s
    X = _fit_X(est, X, kernel_x)
    if kernel_y is None:
        return OperatorSamples(X=X, kernel_x=kernel_x, dtype=X.dtype)
    Y2, est._y_1d = _second_view(y, X.shape[0], kernel_y)
    est._y_sparse_ok = _kernel_sparse(kernel_y)
    return OperatorSamples(X=X, kernel_x=kernel_x, dtype=X.dtype, Y=Y2, kernel_y=kernel_y)


def _sample_operator(s: OperatorSamples, B, center: bool, jitter: float = 0.0,
                     grams=(None, None), factors=(None, None)) -> EmpiricalOperator:
    """The fitted ``operator_``: the :class:`EmpiricalOperator` S = Ψ B Φᵀ on the samples of
    ``s`` as numpy arrays (Y = X for one view), features centred with ``center``.

    A numpy fit hands it its (centred) Gram matrices ``grams`` and kernel QR ``factors``
    (in, out; None: computed lazily), so its own ``svd`` / ``eig`` reuse them; after a device
    fit its methods factorise lazily, with numpy.
    """
    X64, Y64 = s.host()
    kx = s.kernel_x
    ky = kx if s.kernel_y is None else s.kernel_y
    op = EmpiricalOperator(kx, X64, ky, X64 if Y64 is None else Y64, B, center_in=center,
                           center_out=center, jitter=jitter)
    if s.device is None:
        for which, G, F in zip(("in", "out"), grams, factors):
            if G is not None:
                op._cache[which] = G
            if F is not None:
                op.set_factor(which, F)
    return op


#: the dense rules of the solvers the covariance, cross-covariance and CCA routes call
#: (:mod:`asymkern.linalg`): ``top_svd`` factorises the r×r matrix of the QR route densely up
#: to r = 1000 (``auto_solver``), ``_eig_top`` the N×N auxiliary matrix up to N = 1500
_DENSE_SVD_MAX, _DENSE_EIG_MAX = 1000, 1500


def _qr_svd_copies(n: int) -> float:
    """n×n copies the QR route's SVD of the r×r matrix R_Y B R_Xᵀ holds besides the Gram
    matrices and factors, for the worst numerical rank r ≤ n: the matrix with ``top_svd``'s
    dense solve (its copy, U, Vᵀ and gesdd's workspace, ≈ 7 r×r) while r ≤ 1000, above it
    the matrix and the n×r product it is formed from (ARPACK's basis is n-long vectors)."""
    from ..linalg._svd_core import dense_svd_bytes

    r = min(n, _DENSE_SVD_MAX)
    dense = (8.0 * r * r + dense_svd_bytes(r, r)) / (8.0 * n * n)
    return max(dense, 2.0 if n > _DENSE_SVD_MAX else 0.0)


def two_view_fit_copies(cca: bool, method: str, n: int) -> float:
    """The n×n float64 arrays a cross-covariance (``cca`` False) or kernel CCA fit on n
    samples holds at once at its peak, per SVD ``method``, for full-rank Gram matrices
    (measured with ``tracemalloc`` at n = 600, 1000, 1200, 1600 and 2000).

    Both fits hold the two Gram matrices (centred in place) and, where factorised, two n×n
    arrays per view (the pivoted Cholesky factor R and its triangular block; kernel CCA's
    eigen-factors: R and the eigenvectors): 6 arrays; 9 while kernel CCA's second
    eigen-factor is computed (its pivoted factor, LAPACK's copy and the eigenvectors), 8
    while the cross-covariance's second pivoted Cholesky factor is (with its jittered copy,
    LAPACK's copy and the triangular block). The
    SVD adds: 'qr' the r×r matrix and its solve (:func:`_qr_svd_copies`, 7 for n ≤ 1000; for
    larger n at least the n×r product and the matrix, 2); 'auxiliary' (N = n ≤ 1500, else
    ARPACK) the auxiliary matrix and the dense eigensolver's real and complex eigenvectors
    (4); 'block' (N = 2n ≤ 1500, else ARPACK) the 2n×2n block matrix and its real and
    complex eigenvectors (16).
    """
    factors = 4.0 if cca or method == "qr" else 0.0
    held = 2.0 + factors
    # the second view's factor being computed: kernel CCA's eigen-factor (9); the pivoted
    # Cholesky factor of the cross-covariance's QR route, with its jittered copy (8); else
    # the second Gram matrix being formed
    factorising = 9.0 if cca else (8.0 if method == "qr" else 2.0 + KERNEL_BLOCKS)
    if method == "qr":
        solve = _qr_svd_copies(n)
    elif method == "auxiliary":
        solve = 4.0 if n <= _DENSE_EIG_MAX else 0.0
    else:  # 'block'
        solve = 16.0 if 2 * n <= _DENSE_EIG_MAX else 0.0
    return max(factorising, held + solve)


def cov_fit_copies(n: int) -> float:
    """The n×n float64 arrays a covariance fit holds at once at its peak (full rank; measured
    with ``tracemalloc`` at n = 600 to 2000): the Gram matrix (centred in place), its pivoted
    Cholesky factor R and triangular block, and the eigensolve of R B Rᵀ (the matrix, its
    symmetrised copy, LAPACK's copy and the eigenvectors)."""
    return 7.0


def check_two_view_memory(est, n: int, samples=(), cca: bool = False) -> None:
    """One ``max_dense_memory`` check of a cross-covariance or (``cca``) kernel CCA fit on n
    samples (every executor), before its first Gram matrix
    (:func:`asymkern._shared.operators.check_fit_memory`)."""
    copies = {m: two_view_fit_copies(cca, m, n) for m in SVD_METHODS}
    check_fit_memory(n, copies[est.method], f"{type(est).__name__}(method={est.method!r}) fit",
                     _cheaper("fewer samples", "method", copies, est.method),
                     samples=samples, columns=_columns(est.n_components))


def _cheaper(first: str, param: str, copies: dict, chosen) -> str:
    """What a budget error suggests: ``first``, then the values of ``param`` whose fit holds
    fewer n×n arrays (``copies``, per value) than the ``chosen`` one's."""
    cheaper = [f"{param}={v!r} ({c:g} n×n arrays)" for v, c in copies.items()
               if c < copies[chosen]]
    return first + (f", or {' or '.join(cheaper)}" if cheaper else "")


def check_cov_memory(est, n: int, samples=()) -> None:
    """One ``max_dense_memory`` check of a covariance fit on n samples (every executor),
    before its Gram matrix."""
    check_fit_memory(n, cov_fit_copies(n), "CovarianceOperator fit", "fewer samples",
                     samples=samples, columns=_columns(est.n_components))


def fit_samples(s: OperatorSamples) -> tuple:
    """The samples a covariance, cross-covariance or CCA fit holds: X and Y, and after a
    device fit their host copies beside them (the same sizes)."""
    views = (s.X,) if s.Y is None else (s.X, s.Y)
    return views if s.device is None else views + views


def _columns(*counts) -> int:
    """The largest of ``counts`` (``n_components``, ``rank``) that is an int, else 0 (for the
    memory checks; the counts are validated by the fit)."""
    return max([int(k) for k in counts
                if isinstance(k, numbers.Integral) and not isinstance(k, bool)] + [0])


def _centred_in_place(K, center: bool):
    """(G, m, noise): the Gram matrix K, which the fit owns, doubly centred in place with
    ``center`` (entry by entry :func:`_center_gram`'s G, without its copy, then made exactly
    symmetric), the column means m of the uncentred K (None without centring) that
    ``transform`` subtracts, and the rounding level of G's entries, eps·max|K| (0.0 without
    centring): the centring's rounding is relative to K's entries, and a wide kernel (or
    data of small scale) leaves centred entries near 1e-8 of K's, whose symmetry and PSD
    checks must allow for it (``noise`` of :func:`~asymkern.linalg.kernel_qr`)."""
    if not center:
        return K, None, 0.0
    means = K.mean(axis=0)
    scale = max(float(K.max()), -float(K.min()))
    noise = float(np.finfo(np.float64).eps) * scale
    # an asymmetric kernel is left asymmetric, for the decomposition's check to refuse
    symmetric = _max_asymmetry(K) <= 1e-10 * scale
    G = _center_gram(K, True, True, overwrite=True)
    return (symmetrize_in_place(G) if symmetric else G), means, noise


def _paired_svd(est, B, op: EmpiricalOperator, factors, n: int) -> tuple:
    """The top ``n_components`` singular triplets of S = Ψ B Φᵀ for a two-view fit on any
    executor (Mollenhauer et al., 2020), ``n_components`` clipped to the ranks.

    ``method='qr'``: the SVD of R_Ψ B R_Φᵀ from the Gram ``factors`` (X, y) of the fit's
    executor (Cor. 3.5); ``'auxiliary'`` / ``'block'`` (numpy only): ``op.svd`` (Prop. 3.13,
    Thm. 3.17).

    The signs are left to the caller, which fixes each pair (u_i, v_i) together by the rule
    on the values of its function of x (:func:`signed_by_values`): the eigenvectors of the
    Gram matrices carry arbitrary signs, which differ between executors, and the coefficients
    are not unique where a Gram matrix is singular.

    Returns
    -------
    tuple
        The singular values and the coefficients of the left (functions of y) and right
        (functions of x) singular functions, centred with ``est.center``; arrays of the
        executor.
    """
    if est.method != "qr":
        svd = _clipped_decomposition(est, lambda k: op.svd(k, method=est.method), n,
                                     "the number of samples")
        s, C_u, C_v = svd.singular_values, svd.left.coef, svd.right.coef
    else:
        Fx, Fy = factors
        ri, ro = Fx.rank, Fy.rank
        res = _clipped_decomposition(est, lambda k: svd_qr(Fx, Fy, B, k), min(ri, ro),
                                     f"the numerical rank of the Gram matrices ({ri} for X, "
                                     f"{ro} for y)")
        s = res.s
        C_u, C_v = (_center_coef(C) if est.center else C for C in (res.C_u, res.C_v))
    return s, C_u, C_v


def signed_by_values(values, *coefs) -> tuple:
    """The coefficient arrays ``coefs`` (n×k each, one executor) with their columns scaled
    together by the sign rule of every operator estimator read on ``values`` (n×k), the values
    of the deciding function of each column at the fit's points
    (:func:`~asymkern.operators._numerics.value_phases`: the largest magnitude, the lowest
    index on a tie, made positive; Mollenhauer et al., 2020, define eigen- and singular
    functions up to sign only). Real values and coefficients."""
    signs = value_phases(values)
    return tuple(ops_of(C).scale_cols(C, signs) for C in coefs)


def _fitted_pair(est, s: OperatorSamples, values, coef_x, coef_y, x_means, y_means) -> tuple:
    """What a two-view fit (cross-covariance, kernel CCA) keeps for ``transform``, from the
    coefficients of its functions of x and of y on the fit's executor: the training means of
    the scores (centred fits: ``x_means``/``y_means``, the column means of the uncentred Gram
    matrices, times the coefficients, so ``transform`` needs no n×n work; None uncentred), the
    device state (:meth:`OperatorSamples.fitted`) and ``n_components_``.

    Returns
    -------
    tuple
        ``values`` as the user reads them, and the functions of x and of y
        (:class:`RKHSFunction`, numpy).
    """
    mean_x = None if x_means is None else x_means @ coef_x
    mean_y = None if y_means is None else y_means @ coef_y
    values = s.fitted(est, values, coef_x, mean_x, coef_y, mean_y)
    host = ops_of(coef_x).to_host
    est._x_mean = None if mean_x is None else host(mean_x)
    est._y_mean = None if mean_y is None else host(mean_y)
    est.n_components_ = int(coef_x.shape[1])
    op = est.operator_
    return (values, RKHSFunction(s.kernel_x, op.X, host(coef_x)),
            RKHSFunction(s.kernel_y, op.Y, host(coef_y)))


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
        if Y.shape[1] == 0:
            raise ValueError(f"{name} has 0 feature(s) (shape={Y.shape}) while a minimum of 1 "
                             "is required.")
    if Y.shape[0] != n:
        raise ValueError(f"{name} has {Y.shape[0]} samples; expected {n}, one per row of X "
                         f"(paired samples (x_i, {name}_i))")
    return Y, one_d


def _transform_X(est, X):
    """X of ``transform``/``predict`` as given and checked against the fit (features,
    names)."""
    return X, check_input(est, X, reset=False, allow_sparse=getattr(est, "_sparse_ok", False))


class _PreservesFloat32:
    """Transformers whose ``transform`` returns float32 for float32 input."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        name = "kernel" if hasattr(self, "kernel") else "kernel_x"  # (the kernel of X)
        tags.input_tags.sparse = _kernel_accepts_sparse(getattr(self, name, None),
                                                        getattr(self, name + "_params", None))
        return tags


class _ComponentsOut(ClassNamePrefixFeaturesOutMixin):
    """``get_feature_names_out``: ``<classname>0 … <classname>{n_components_ − 1}``."""

    @property
    def _n_features_out(self):
        return self.n_components_


def _transform_y(est, y):
    """The y side of a fitted paired estimator as given and checked: 1-D or 2-D with the fit's
    number of columns, and a DataFrame with the column names of ``fit``'s y, in order (the
    kernel compares y with the training y feature by feature, by position)."""
    fitted, names = getattr(est, "_y_names", None), _get_feature_names(y)
    if fitted is not None and names is not None and (
            len(names) != len(fitted) or np.any(names != fitted)):
        raise ValueError("The feature names of y should match those that were passed during "
                         f"fit (fit: {list(fitted)[:5]}..., now: {list(names)[:5]}...)")
    d = est.operator_.Y.shape[1]
    if sp.issparse(y):
        Y = as_data(y, "y", allow_sparse=est._y_sparse_ok)
    else:
        Y = np.asarray(as_data(y, "y", ensure_2d=False))
        Y = Y.reshape(-1, 1) if Y.ndim == 1 else Y
    if Y.ndim != 2 or Y.shape[1] != d:
        raise ValueError(f"y has shape {Y.shape}; expected (n_samples, {d}) like the y passed "
                         "to fit")
    return y, Y


def _landmark_predict(est, X, kernel, L, coef):
    """k(x, L) coef for numpy X (numpy out), row-chunked dask X (dask out) or, for a model
    fitted on torch, tensors (on the device); float32 kept. One evaluation for numpy and torch
    (:func:`asymkern._shared.operators.evaluate`)."""
    from .._dask import is_dask_array

    if use_torch(est, X):  # torch executor (asymkern._torch): the landmarks on the device
        from .._torch.operators import device_points

        state, Xn, back = device_points(est, X)
        return back(evaluate(kernel, Xn, state.X, coef))
    if is_dask_array(X):
        from .._dask.operators import evaluate_dask

        if X.ndim != 2 or X.shape[1] != est.n_features_in_:
            raise ValueError(f"X has shape {X.shape}; expected (n, {est.n_features_in_})")
        out = evaluate_dask(kernel, L, coef, X)
        return out.map_blocks(_single, dtype=np.float32) if X.dtype == np.float32 else out
    return _predict_exact(est, X, kernel, L, coef)


def _predict_exact(est, X, kernel, centers, coef):
    """k(x, centers) coef at numpy X checked against the fit, in X's precision."""
    X_in, X = _transform_X(est, X)
    return _like_input(X_in, evaluate(kernel, X, centers, coef))


def _transformed(est, f, Z, mean=None, what: str = "the transformed values",
                 hint: str = "rescale X like the training data", y: bool = False):
    """The function(s) ``f`` at X (``y``: at the second view y) checked against the fit, minus
    ``mean``, refused when not finite, in the input's precision."""
    Z_in, Z = (_transform_y if y else _transform_X)(est, Z)
    vals = f(Z) if mean is None else f(Z) - mean
    return _like_input(Z_in, check_finite_output(vals, what, hint))


def _device_transform(est, X=None, y=None, what: str = "the transformed values"):
    """The fitted functions of a covariance, cross-covariance or kernel CCA model fitted on the
    torch backend at X (``coef`` minus ``offset`` of its
    :class:`~asymkern._shared.operators.DeviceState`) and at the second view y (``coef_y``
    minus ``offset_y``), evaluated on the device by the evaluation of every executor
    (:func:`asymkern._shared.operators.evaluate`); tensors in the input dtype for tensor
    input, numpy arrays otherwise (a tuple of two with both X and y)."""
    from .._torch.operators import device_points

    out = []
    if X is not None:
        s, Xn, back = device_points(est, X)
        out.append(back(evaluate(s.kernel, Xn, s.X, s.coef, what, s.offset)))
    if y is not None:
        s, Yn, back = device_points(est, y, "y")
        out.append(back(evaluate(s.kernel_y, Yn, s.Y, s.coef_y,
                                 what + ("" if X is None else " of y"), s.offset_y,
                                 "rescale y like the training data")))
    return out[0] if len(out) == 1 else tuple(out)
