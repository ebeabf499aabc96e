"""LS-SVM and AsK-LS estimators (He et al., 2023): scikit-learn compatible.

* :class:`LSSVMClassifier`, :class:`LSSVMRegressor` — the classic dual system, eq. (4).
* :class:`AsKLSClassifier` — AsK-LS, eq. (6): two discriminant functions from one asymmetric
  kernel, f_s(x) = Σ_i β_i y_i κ(x, x_i) + b1 (source view) and f_t(x) = Σ_i α_i y_i κ(x_i, x) + b2
  (target view), eq. (7), merged by sum or by stacking.

Multi-class problems are one-vs-rest over the sorted ``classes_``; all binary problems share one
factorisation (the system in signed coefficients does not depend on the labels, see
:mod:`asymkern.lssvm._solvers`). Kernel matrices are built and the dual systems solved in float64
(they are often ill-conditioned, and coefficients rounded to float32 could change the predictions
by up to cond·eps32), so the fitted coefficients are float64; float32 input gives float32 decision
values and predictions. The training data are copied (``X_fit_``).

Precomputed kernels (``kernel='precomputed'``): ``fit`` takes the n × n training matrix
K_ij = κ(x_i, x_j); prediction of an asymmetric model needs both orientations, passed as a
:class:`KernelPair` ``(test_train=K(x_test, X_train) (m × n),
train_test=K(X_train, x_test) (n × m))``.
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.utils import check_array, column_or_1d, compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length, check_is_fitted

from .._calibration import PlattCalibration
from .._dask import any_dask, is_dask_array
from .._dispatch import host_copy, is_torch_tensor, refuse_meta
from .._shared.lssvm import _RESCALE, _check_merge, _encode_labels, _labels_of
from .._validation import (
    DEPRECATED,
    array_nbytes,
    as_weights,
    available_if_explained,
    check_bool,
    check_finite_output,
    check_input,
    check_not_both,
    check_positive,
    check_random_state,
    clip_count,
    forgets_previous_fit,
    host_score,
    input_precision,
    like_input,
    ndim_of,
    real_numeric,
    user_stacklevel,
    why_no_probability,
)
from ..config import check_memory, format_bytes
from ..kernels import KernelMatrix, resolve_kernel
from ._solvers import _absorb_weight_scale, _check_C, _nearly_symmetric, askls_solve, lssvm_solve


class KernelPair(NamedTuple):
    """Both orientations of a precomputed kernel between test and training samples.

    Prediction of an asymmetric model with ``kernel='precomputed'`` needs both orientations
    of the kernel, one per discriminant function of He et al. (2023) eq. (7).

    Parameters
    ----------
    test_train : array-like or sparse matrix of shape (m, n)
        [κ(x_test_a, x_train_i)], used by the source function f_s.
    train_test : array-like or sparse matrix of shape (n, m)
        [κ(x_train_i, x_test_a)], used by the target function f_t.

    See Also
    --------
    AsKLSClassifier : The estimator that predicts on a KernelPair.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.lssvm import AsKLSClassifier, KernelPair
    >>> from asymkern.kernels import get_kernel
    >>> rng = np.random.RandomState(0)
    >>> X, Xt = rng.randn(20, 3), rng.randn(5, 3)
    >>> y = np.where(X[:, 0] > 0, 1, -1)
    >>> k = get_kernel("sne", bandwidth=1.0)
    >>> clf = AsKLSClassifier(kernel="precomputed").fit(k(X, X), y)
    >>> pair = KernelPair(test_train=k(Xt, X, reference=X), train_test=k(X, Xt, reference=X))
    >>> clf.predict(pair).shape
    (5,)
    """

    test_train: Any
    train_test: Any


# ----------------------------------------------------------------------------------- helpers
def _as_float(K):
    """``(K, values)``: K as a float64 CSR matrix or ndarray, and the array of its stored values
    (the CSR ``data``, else K itself)."""
    if sp.issparse(K):
        K = sp.csr_matrix(K, dtype=np.float64)
        return K, K.data
    K = np.asarray(K, dtype=np.float64)
    return K, K


def _check_square(K, name="X"):
    K, values = _as_float(K)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(
            f"with kernel='precomputed', {name} must be square, got {K.shape}" if sp.issparse(K)
            else f"with kernel='precomputed', {name} must be the square (n, n) training kernel "
                 f"matrix, got shape {K.shape}"
        )
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} (precomputed kernel) contains NaN or infinity")
    return K


def _check_block(K, shape, name):
    if K is None:
        raise ValueError(f"{name} is None; expected an array of shape {shape}")
    K, values = _as_float(K)
    if K.ndim != 2 or K.shape != shape:
        raise ValueError(
            f"{name} has shape {K.shape}, expected {shape}: the two orientations of a "
            "precomputed kernel must be K(test, train) (m × n) and K(train, test) (n × m)"
        )
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} contains NaN or infinity")
    return K


def _pair_size(pair: KernelPair, n: int) -> int:
    """The number m of test points of a :class:`KernelPair` (rows of ``test_train``, else
    columns of ``train_test``: one orientation may be None when the merge rule does not read
    it); a ValueError naming the orientation when neither gives it."""
    for name, block, axis in (("test_train", pair.test_train, 0),
                              ("train_test", pair.train_test, 1)):
        if block is not None:
            shape = np.shape(block)
            if len(shape) != 2:
                raise ValueError(
                    f"{name} has shape {shape}; expected a 2-D array: the two orientations of "
                    f"a precomputed kernel are K(test, train) (m × {n}) and K(train, test) "
                    f"({n} × m)")
            return int(shape[axis])
    raise ValueError("KernelPair(test_train=None, train_test=None): pass K(X_test, X_train) "
                     f"(m × {n}) and/or K(X_train, X_test) ({n} × m)")


def _block(K, rows, cols):
    """K[rows][:, cols] of a dense or sparse matrix."""
    if sp.issparse(K):
        return K[rows][:, cols]
    return K[np.ix_(rows, cols)]


def _folds(yi, cv: int, rs):
    """Cross-validation folds: stratified when every class has ``cv`` samples, else plain;
    shuffled with a seed drawn from ``rs`` (a RandomState), in order when ``rs`` is None."""
    n = yi.size
    if n < cv:
        raise ValueError(f"the internal {cv}-fold cross-validation needs at least {cv} samples, "
                         f"got {n}")
    seed = None if rs is None else rs.randint(np.iinfo(np.int32).max)
    kw = {"shuffle": True, "random_state": seed} if rs is not None else {}
    if np.bincount(yi).min() >= cv:
        return list(StratifiedKFold(cv, **kw).split(np.zeros(n), yi))
    return list(KFold(cv, **kw).split(np.zeros(n)))


_LS_ALTERNATIVE = "fewer samples or AsKLSClassifier(nystrom=r) (never forms the n×n matrix)"


def _one_row_passes(X) -> int:
    """Bytes of the smallest blocks of a pass over a kernel matrix between (landmarks of) the
    n training samples X and X itself: one row of n float64 entries (n entries for the
    streaming log-sum-exp over the reference set X), their temporaries and the data copies
    of the squared-distance expansion (:func:`~asymkern.linalg.svd.data_pass_bytes`), as
    :func:`~asymkern.linalg.svd.pass_block_bytes` counts them."""
    from ..linalg._svd_core import data_copy_bytes
    from ..linalg.svd import PASS_BLOCK_ARRAYS

    n, d = int(X.shape[0]), int(X.shape[1])
    data = 0 if sp.issparse(X) else data_copy_bytes(d, n, n)
    return PASS_BLOCK_ARRAYS * 8 * n + data


def _predictor_blocks(mats: list, held: float, owner: str) -> list:
    """The kernel matrices of a Nyström AsK-LS predictor with blocks within what the fit's
    arrays (``held`` bytes, the landmark core W = K[I, J] included) leave of the budget,
    checked before their passes run."""
    from ..linalg.svd import blocks_within, budget_bytes, pass_block_bytes

    mats = [blocks_within(M, budget_bytes() - held) for M in mats]
    check_memory(held + max(pass_block_bytes(M) for M in mats),
                 f"{owner}(nystrom=...) predictor on {mats[1].shape[0]} samples",
                 "fewer components or landmarks (nystrom)",
                 detail="the factors, the coefficients, the landmark core and one-row kernel "
                        "blocks of the passes over the training set")
    return mats


def _prediction_pass(G, X, coef, est):
    """The kernel matrix G of a prediction pass over the m new points X (rows or columns of
    G), with blocks within what the decision values leave of ``max_dense_memory`` (f_s and
    f_t, k columns each, their float64 copies and sum; the coefficients ``coef``), checked
    before the pass (:func:`~asymkern._shared.nystrom_predict.pass_within`)."""
    from .._shared.nystrom_predict import pass_within

    m, k = int(X.shape[0]), int(np.shape(coef)[1]) if np.ndim(coef) == 2 else 1
    return pass_within(G, 8 * (4 * m * k + int(np.shape(coef)[0]) * k),
                       f"{type(est).__name__} decision values of {m} new points",
                       "fewer new points at a time")


def _check_class_weight(class_weight) -> None:
    if not (class_weight is None or isinstance(class_weight, dict)
            or (isinstance(class_weight, str) and class_weight == "balanced")):
        raise ValueError(f"class_weight must be None, a dict {{class: weight}} or "
                         f"'balanced', got {class_weight!r}")


class _KernelMixin:
    """Kernel evaluation shared by the estimators (training matrix and both cross blocks)."""

    # constructor parameters of the estimators that use this mixin
    kernel: Any  # a kernel name, a Kernel, a callable or "precomputed"
    C: float
    solver: str
    rcond_tol: float
    ridge: float | None
    _solvers: tuple[str, ...] = ()  # the values of ``solver``

    def _check_solver_params(self) -> None:
        """``solver``, ``rcond_tol`` (≥ 0) and ``ridge`` (None or ≥ 0), checked before any
        kernel work (and, for AsK-LS, before the fit goes to an executor)."""
        if not isinstance(self.solver, str) or self.solver not in self._solvers:
            names = ", ".join(repr(k) for k in self._solvers[:-1])
            raise ValueError(f"solver must be {names} or {self._solvers[-1]!r}, got "
                             f"{self.solver!r}")
        check_positive(self.rcond_tol, "rcond_tol", allow_zero=True)
        check_positive(self.ridge, "ridge", allow_zero=True, allow_none=True)

    def _kernel_products(self, X, coef_s, coef_t, I=None, J=None):
        """(K(x, X[J]) coef_s, K(X[I], x)ᵀ coef_t) for new X (validated) and the training set
        X (all of it without I, J), float64; either is None when its coef is (shared by the
        exact and the Nyström predict paths)."""
        kern = self._kernel_obj()
        X = check_input(self, X, reset=False, allow_sparse=bool(kern.accepts_sparse))
        Xtr = self.X_fit_
        fs = ft = None
        if coef_s is not None:
            XJ = Xtr if J is None else Xtr[J]
            G = _prediction_pass(KernelMatrix(kern, X, XJ, reference=Xtr), X, coef_s, self)
            fs = G.matmat(coef_s).astype(np.float64)
        if coef_t is not None:
            XI = Xtr if I is None else Xtr[I]
            G = _prediction_pass(KernelMatrix(kern, XI, X, reference=Xtr), X, coef_t, self)
            ft = G.rmatmat(coef_t).astype(np.float64)
        return fs, ft

    def _kernel_obj(self):
        # the fitted model's kernel once fit has resolved it (a copy: set_params on the
        # caller's Kernel instance later cannot change the model); before, a fresh
        # resolution (never modifying an instance passed as ``kernel``); the kernel width is
        # kernel_params / the instance's own parameter
        fitted = vars(self).get("_fitted_kernel")
        return fitted if fitted is not None else resolve_kernel(self.kernel, self.kernel_params)

    def _resolved_C(self) -> float:
        """C, or its deprecated alias ``gamma`` (FutureWarning), checked > 0 by name."""
        gamma = getattr(self, "gamma", DEPRECATED)
        if isinstance(gamma, str) and gamma == DEPRECATED:
            return _check_C(self.C, "C")
        check_not_both(self, "C", "gamma")
        warnings.warn(
            f"{type(self).__name__}: the parameter 'gamma' (the LS-SVM regularisation "
            f"constant) was renamed 'C' in 0.2 and will be removed in 0.3, when 'gamma' "
            f"will become the kernel width as in scikit-learn; use C={gamma!r} (and set "
            f"the kernel width through kernel_params or kernel__gamma)",
            FutureWarning, stacklevel=user_stacklevel(),
        )
        return _check_C(gamma, "gamma")

    def _sample_weights(self, X, y, sample_weight, class_weight=None):
        """Per-sample weights v (float64, ≥ 0; None when all equal one) from ``sample_weight``
        (:func:`~asymkern._validation.as_weights`) times the ``class_weight`` of each label."""
        if sample_weight is None and class_weight is None:
            return None
        n = X.shape[0]
        v = np.ones(n) if sample_weight is None else as_weights(sample_weight, n)
        if class_weight is not None:
            _check_class_weight(class_weight)
            v = v * compute_sample_weight(class_weight, y)
        if not np.any(v > 0):
            raise ValueError("sample_weight (times class_weight) is zero for every sample; "
                             "at least one sample needs a positive weight")
        return v

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._is_precomputed()
        try:
            tags.input_tags.sparse = (not self._is_precomputed()) and bool(
                self._kernel_obj().accepts_sparse)
        except (TypeError, ValueError):
            tags.input_tags.sparse = False
        return tags

    def _is_precomputed(self) -> bool:
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    def _validate_X_fit(self, X, y, y_numeric=False, multi_output=False, sample_weight=None,
                        class_weight=None):
        """Validated training data and weights, zero-weight samples dropped.

        X is copied (the estimator keeps it as ``X_fit_``, and a later change to the caller's
        array must not change the model). Samples of weight 0 are removed before anything else
        (also from the reference set of a row-normalised kernel): a zero weight is the same as
        leaving the sample out, as in scikit-learn. With ``kernel='precomputed'`` the training
        matrix keeps its n rows (prediction takes K(test, train) with n columns) and
        ``_active`` records the rows that enter the solve (their coefficients; the others
        get 0). Returns (X or K, y, v) with v the positive weights of the kept samples or None.
        """
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             "is None")
        pre = self._is_precomputed()
        self._fitted_kernel = None if pre else resolve_kernel(self.kernel, self.kernel_params)
        allow_sparse = True if pre else bool(self._kernel_obj().accepts_sparse)
        X = check_input(self, X, reset=True, allow_sparse=allow_sparse,
                        dtype=np.float64 if pre else (np.float64, np.float32))
        refuse_meta(y, "y")
        if is_torch_tensor(y) and y.device.type != "cpu":  # as X: no torch executor here
            raise TypeError(f"y is a tensor on {y.device}, which this estimator reads on the "
                            "host (it has no torch executor): pass y.cpu()")
        y = host_copy(y, "y")  # a CPU tensor: without its graph, bfloat16 as float32
        if y_numeric:  # never cut complex targets to their real part
            y = real_numeric(np.asarray(y), complex_message="Complex data not supported: y is "
                             "complex-valued; expected real targets",
                             nonnumeric_message="y must be numeric")
        if ndim_of(y) > 2:
            raise ValueError(f"y must be 1-D or 2-D, got shape {np.asarray(y).shape}")
        y = check_array(y, ensure_2d=False, dtype="numeric" if y_numeric else None, input_name="y")
        if not multi_output or y.ndim == 1:
            y = column_or_1d(y, warn=True)
        if y_numeric:
            y = np.asarray(y, dtype=np.float64)
        check_consistent_length(X, y)
        if not y_numeric:
            check_classification_targets(y)
        v = self._sample_weights(X, y, sample_weight, class_weight)
        self._active = None
        if v is not None and np.any(v == 0):
            keep = np.flatnonzero(v > 0)
            if pre:
                self._active = keep
            else:
                X = X[keep]
            y, v = y[keep], v[keep]
        elif not pre:
            X = X.copy()
        if pre:
            return _check_square(X), y, v
        # the dual systems are solved in float64; decision values come back in the precision
        # of the X they are computed for (_as_out)
        return X, y, v

    def _active_matrix(self, K):
        """The training matrix restricted to the samples that enter the solve."""
        a = getattr(self, "_active", None)
        return K if a is None else _block(K, a, a)

    def _scatter(self, coef, n):
        """Coefficients of the active samples placed in the n training rows (0 elsewhere)."""
        a = getattr(self, "_active", None)
        if a is None:
            return coef
        out = np.zeros((n,) + coef.shape[1:], dtype=coef.dtype)
        out[a] = coef
        return out

    @staticmethod
    def _as_out(F, X):
        """Decision values or probabilities in the precision of the input ``X``
        (:func:`~asymkern._validation.input_precision`: float32 for float32 X, float64
        otherwise, whatever the training dtype); a lazy dask F is cast in its tasks."""
        if is_dask_array(F):
            return F.astype(input_precision(X))
        return like_input(F, X, "pass float64 input")

    def _train_matrix(self, X, loo: bool = False) -> np.ndarray:
        """K = κ(X, X) (or the precomputed X), after the budget check of the whole fit:
        n×n float64 copies measured 13× ('dense'), 3–4× (else), 6.2× with the leave-one-out
        inverse of ``loo`` (LS-SVM ``probability=True``, :func:`_lssvm_loo_setup`)."""
        n, dense = X.shape[0], getattr(self, "solver", None) == "dense"
        check_memory(8 * n * n * (14 if dense else 6.5 if loo else 5),
                     f"{type(self).__name__}(solver={getattr(self, 'solver', None)!r}"
                     f"{', probability=True' if loo else ''}) on {n} samples",
                     _LS_ALTERNATIVE)
        if self._is_precomputed():
            return X
        kern = self._kernel_obj()
        K = np.asarray(KernelMatrix(kern, X, X, reference=X).to_array(), dtype=np.float64)
        return check_finite_output(K, "the kernel matrix of X", _RESCALE)

    def _cross_products(self, X, coef_s, coef_t):
        """(K(x, X) coef_s, K(X, x)ᵀ coef_t), each (m, k); either coef may be None (exact
        models: the Nyström ones go through ``_nystrom_cross``)."""
        n = self.n_train_
        if self._is_precomputed():
            if isinstance(X, KernelPair):
                m = _pair_size(X, n)
                A = _check_block(X.test_train, (m, n), "test_train") if coef_s is not None else None
                B = _check_block(X.train_test, (n, m), "train_test") if coef_t is not None else None
            else:
                if coef_t is not None and not getattr(self, "_symmetric_only", False):
                    raise ValueError(
                        "an asymmetric model with kernel='precomputed' needs both orientations: "
                        "pass KernelPair(test_train=K(X_test, X_train), "
                        "train_test=K(X_train, X_test))"
                    )
                A, values = _as_float(X)
                if A.ndim != 2 or A.shape[1] != n:
                    raise ValueError(
                        f"precomputed test kernel must have shape (m, {n}), got {A.shape}"
                    )
                if not np.all(np.isfinite(values)):
                    raise ValueError("X (precomputed kernel) contains NaN or infinity")
                B = None
            fs = np.asarray(A @ coef_s) if coef_s is not None else None
            ft = np.asarray(B.T @ coef_t) if coef_t is not None else None
            return fs, ft
        return self._kernel_products(X, coef_s, coef_t)


# -------------------------------------------------------------------------------- LS-SVM

class _AccuracyScore(ClassifierMixin):
    """``score`` of the classifiers: scikit-learn's mean accuracy, with tensor targets and
    weights read on the host and the weights validated as in ``fit``."""

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy of ``predict(X)`` against ``y``, weighted by ``sample_weight``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test samples (with ``kernel='precomputed'``, the kernel matrix between the test and
            the training samples).
        y : array-like of shape (n_samples,)
            True labels (a torch tensor is read on the host).
        sample_weight : array-like of shape (n_samples,), optional
            One finite weight >= 0 per sample, not all zero.

        Returns
        -------
        float
        """
        from sklearn.metrics import accuracy_score

        return host_score(accuracy_score, self, X, y, sample_weight)


class _R2Score(RegressorMixin):
    """``score`` of the regressor: scikit-learn's R², with tensor targets and weights read on
    the host and the weights validated as in ``fit``."""

    def score(self, X, y, sample_weight=None) -> float:
        """Coefficient of determination R² of ``predict(X)`` against ``y``.

        As scikit-learn's ``r2_score`` with ``multioutput='uniform_average'``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test samples (with ``kernel='precomputed'``, the kernel matrix between the test and
            the training samples).
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            True values (a torch tensor is read on the host).
        sample_weight : array-like of shape (n_samples,), optional
            One finite weight >= 0 per sample, not all zero.

        Returns
        -------
        float
        """
        from sklearn.metrics import r2_score

        return host_score(r2_score, self, X, y, sample_weight)


class _LSSVMBase(_KernelMixin, BaseEstimator):
    _symmetric_only = True
    _solvers = ("auto", "chol", "eig", "dense")

    def __init__(self, kernel="rbf", kernel_params=None, C: float = 1.0,
                 solver: str = "auto", rcond_tol: float = 1e-8, ridge: float | None = 1.0,
                 gamma=DEPRECATED):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.C = C
        self.solver = solver
        self.rcond_tol = rcond_tol
        self.ridge = ridge
        self.gamma = gamma

    def _solve(self, K, Y, C, v, own):
        method = {"auto": "chol"}.get(self.solver, self.solver)
        # K = κ(X, X) of a kernel flagged symmetric is symmetric by construction (up to
        # rounding; Cholesky reads one triangle); a precomputed matrix is checked by the solver
        # (and our own: it may be factored in place; a precomputed one is the caller's)
        symmetric = bool(self._kernel_obj().is_symmetric) if own else None
        return lssvm_solve(K, Y, C, method=method, rcond_tol=self.rcond_tol,
                           ridge=self.ridge, symmetric=symmetric, overwrite_K=own,
                           sample_weight=v)

    def _fit_targets(self, X, Y, v, loo: bool = False):
        C = self._resolved_C()
        K = self._train_matrix(X, loo)
        n_all = K.shape[0]
        Ka = self._active_matrix(K)
        own = not self._is_precomputed() and Ka is K
        F_loo = _lssvm_loo_setup(Ka, C, v) if loo else None  # before K is factored in place
        sol = self._solve(Ka, Y, C, v, own)
        check_finite_output(sol.coef[0], "the LS-SVM dual coefficients α", _RESCALE)
        check_finite_output(sol.bias[0], "the LS-SVM bias b", _RESCALE)
        self.dual_coef_ = self._scatter(sol.coef[0], n_all)
        self.intercept_ = sol.bias[0]
        self.rcond_ = sol.rcond
        self.fallback_ = sol.fallback
        self.factorization_ = sol.info.get("factorization")
        self.n_train_ = n_all
        self.X_fit_ = None if self._is_precomputed() else X
        if loo:
            return _lssvm_loo_values(F_loo, sol, Y)
        return None

    def _raw_decision(self, X):
        check_is_fitted(self, "dual_coef_")
        fs, _ = self._cross_products(X, self.dual_coef_, None)
        return self._as_out(check_finite_output(fs + self.intercept_[None, :],
                                                "the decision values",
                                                "rescale X like the training data"), X)


def _lssvm_loo_setup(K, C, v):
    """diag((A⁻¹)_inner) of the (weighted) LS-SVM matrix A = [[0, 1ᵀ], [1, K + D]],
    D = diag(1/(C v)): H⁻¹ − (H⁻¹1)(1ᵀH⁻¹)/(1ᵀH⁻¹1) with H = K + D (one n×n inverse:
    Cholesky + xPOTRI when H is symmetric positive definite, LU otherwise).
    None when H or the bordered system is singular."""
    import scipy.linalg as sla

    from .._backend import inv_quiet

    Kd = np.asarray(K.toarray() if sp.issparse(K) else K, dtype=np.float64)
    n = Kd.shape[0]
    H = Kd.copy()
    H[np.diag_indices(n)] += 1.0 / (C * (np.ones(n) if v is None else v))
    Hinv = None
    if _nearly_symmetric(H):  # SPD for a PSD kernel: Cholesky and its inverse (xPOTRI)
        try:
            L, _ = sla.cho_factor(H, lower=True, overwrite_a=False, check_finite=False)
            Li, info = sla.lapack.dpotri(L, lower=1)
            if info == 0:
                Hinv = np.tril(Li) + np.tril(Li, -1).T
        except np.linalg.LinAlgError:
            Hinv = None
    if Hinv is None:
        try:
            # (no warnings filter: process-wide, and not thread-safe)
            Hinv = inv_quiet(H, overwrite_a=True)
        except (np.linalg.LinAlgError, ValueError):
            return None
    h_row, h_col = Hinv.sum(axis=1), Hinv.sum(axis=0)  # H⁻¹1 and 1ᵀH⁻¹ (H may be asymmetric)
    s = h_row.sum()
    if not (np.all(np.isfinite(Hinv)) and np.isfinite(s) and s != 0):
        return None
    return Hinv.diagonal() - h_row * h_col / s


def _lssvm_loo_values(diag_inv, sol, Y):
    """Exact leave-one-out decision values of the LS-SVM (Cawley & Talbot 2004):
    f₋ᵢ(xᵢ) = yᵢ − aᵢ/(A⁻¹)ᵢᵢ with a = α ⊙ y the signed coefficients of row i of the bordered
    system A [b; a] = [0; y] (any positive diagonal D, i.e. also weighted). Proof: the
    leave-i-out solution extended by aᵢ = 0 solves A x = r − tᵢeᵢ with tᵢ = yᵢ − f₋ᵢ(xᵢ), so
    x₋ᵢ = x − tᵢA⁻¹eᵢ and its i-th entry 0 = aᵢ − tᵢ(A⁻¹)ᵢᵢ. None when not available (singular
    system or the ridge fallback was used: the formula is for the exact system)."""
    if diag_inv is None or sol.fallback or np.any(diag_inv == 0):
        return None
    F = Y - sol.coef[0] / diag_inv[:, None]
    return F if np.all(np.isfinite(F)) else None


class LSSVMClassifier(_AccuracyScore, _LSSVMBase):
    """Least-squares SVM classifier (Suykens & Vandewalle 1999; He et al. (2023) eq. 4).

    Solves [[0, yᵀ], [y, Ω + I/C]] [b, α] = [0, 1] with Ω = (y yᵀ) ⊙ K, one-vs-rest over
    the sorted ``classes_``. Decision f(x) = Σ_i α_i y_i κ(x, x_i) + b.

    Parameters
    ----------
    kernel : str, Kernel, callable or 'precomputed', default 'rbf'
        Kernel name, :class:`~asymkern.kernels.Kernel`, callable f(X, Z) or
        ``'precomputed'`` (``fit(K)`` with the n × n training matrix, prediction on the
        (m, n) test–train matrix). A Kernel instance is never modified; its parameters are
        tunable through ``set_params(kernel__gamma=...)`` (grid search).
    kernel_params : dict or None, default None
        Parameters of a kernel given by name (e.g. ``{'gamma': 0.5}``: the kernel width).
    C : float > 0, default 1.0
        The regularisation constant γ of He et al. (2023) eq. (4): the weight of the squared errors
        (larger = weaker regularisation, like SVC's ``C``).
    solver : {'auto', 'chol', 'eig', 'dense'}, default 'auto'
        'auto'/'chol' (Cholesky of K + I/C, LU when K is indefinite or asymmetric), 'eig'
        or 'dense' (LU of the (n+1) system, reference).
        ``factorization_`` records which one ran (``'cholesky'``, ``'lu'`` or ``None``).
    rcond_tol : float, default 1e-8
        Threshold of the 1-norm reciprocal condition estimate of the system below which it is
        treated as ill-conditioned (the authors' MATLAB rule ``rcond(A) > 1e-8``).
    ridge : float or None, default 1.0
        λ of the fallback (AᵀA + λI)⁻¹Aᵀb used below ``rcond_tol`` (with an
        :class:`IllConditionedWarning`); None or 0 raises instead.
    class_weight : dict, 'balanced' or None, default None
        Weights of the classes, multiplied into the per-sample weights of the error terms
        (scikit-learn semantics: ``'balanced'`` is n_samples / (n_classes · bincount(y))).
    probability : bool, default False
        Fit a Platt sigmoid (:class:`asymkern._calibration.PlattCalibration`) on the exact
        leave-one-out decision values of the training samples (closed form from the KKT
        system, Cawley & Talbot 2004; one extra n×n inverse) — or, when the system needed the
        ridge fallback, on 5-fold cross-validated values — and enable ``predict_proba``.
        As with SVC, ``predict`` keeps using the decision values (argmax of the
        probabilities can differ from it near the boundary).
    gamma : float, optional
        Former name of ``C`` (``FutureWarning``).

        .. deprecated:: 0.2
            Renamed ``C`` because scikit-learn's ``gamma`` is the kernel width; removed in
            0.3, when ``gamma`` becomes the kernel width.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (p, k)
        Signed dual coefficients α ⊙ y of each one-vs-rest problem (k = 1 for two classes):
        p = ``n_train_`` rows, one per sample of ``X_fit_`` (samples of weight 0 removed); with
        ``kernel='precomputed'`` one per training row, 0 at those of weight 0.
    intercept_ : ndarray of shape (k,)
        Biases b.
    classes_ : ndarray of shape (n_classes,)
        The sorted class labels.
    rcond_ : float
        1-norm reciprocal condition estimate of the system.
    fallback_ : bool
        Whether the ridge-regularised fallback solution was used.
    factorization_ : {'cholesky', 'lu'} or None
        The factorisation of K + I/C that ran (None for 'eig'/'dense').
    calibration_ : PlattCalibration or None
        The Platt sigmoids of ``probability=True`` (else None).
    n_train_ : int
        Rows of the coefficients: the training samples of positive weight, or with
        ``kernel='precomputed'`` every training row.
    X_fit_ : ndarray or sparse matrix or None
        Copy of the training data (samples of weight 0 removed); None when precomputed.
    n_features_in_ : int
        Number of features of X seen in fit.

    See Also
    --------
    AsKLSClassifier : The asymmetric-kernel generalisation (AsK-LS).
    LSSVMRegressor : LS-SVM regression.
    asymkern.lssvm.lssvm_solve : The functional solver of eq. (4).

    Notes
    -----
    ``fit(X, y, sample_weight)``: the weighted LS-SVM (Suykens et al. 2002): the primal error
    term is (C/2) Σ_i v_i e_i², the identity block I/C of eq. (4) becomes diag(1/(C v_i))
    (see :func:`asymkern.lssvm.lssvm_solve`); an integer weight equals repeating the sample,
    and a zero weight equals leaving it out (such samples are dropped before the solve).

    References
    ----------
    .. [1] M. He, F. He, L. Shi, X. Huang, J. A. K. Suykens, "Learning with Asymmetric
       Kernels: Least Squares and Feature Interpretation", IEEE TPAMI 45(8), 2023.
    .. [2] J. A. K. Suykens, J. Vandewalle, "Least Squares Support Vector Machine
       Classifiers", Neural Processing Letters 9(3):293–300, 1999.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from asymkern.lssvm import LSSVMClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = LSSVMClassifier(C=10.0, kernel_params={"gamma": 0.5}).fit(X, y)
    >>> clf.decision_function(X[:4]).shape
    (4, 3)
    >>> round(float(clf.score(X, y)), 2) > 0.9
    True
    """

    def __init__(self, kernel="rbf", kernel_params=None, C: float = 1.0, solver: str = "auto",
                 rcond_tol: float = 1e-8, ridge: float | None = 1.0, class_weight=None,
                 probability: bool = False, gamma=DEPRECATED):
        super().__init__(kernel=kernel, kernel_params=kernel_params, C=C, solver=solver,
                         rcond_tol=rcond_tol, ridge=ridge, gamma=gamma)
        self.class_weight = class_weight
        self.probability = probability

    @forgets_previous_fit
    def fit(self, X, y, sample_weight=None):
        """Fit the one-vs-rest LS-SVMs of He et al. (2023) eq. (4).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n, d)
            Training samples, or the (n, n) kernel matrix with ``kernel='precomputed'``.
        y : array-like of shape (n,)
            Class labels.
        sample_weight : array-like of shape (n,), optional
            Weights ≥ 0 of the error terms (see Notes); a zero weight drops the sample.

        Returns
        -------
        self : LSSVMClassifier
            The fitted estimator.

        Raises
        ------
        ValueError
            If ``solver`` or ``class_weight`` is unknown, ``C`` is not positive, or every
            weight is zero.
        numpy.linalg.LinAlgError
            If the system is singular and ``ridge`` is None or 0.
        """
        self._check_solver_params()
        check_bool(self.probability, "probability")
        X, y, v = self._validate_X_fit(X, y, sample_weight=sample_weight,
                                       class_weight=self.class_weight)
        self.classes_, yi, Y = _encode_labels(y)
        F = self._fit_targets(X, Y, v, loo=bool(self.probability))
        self.calibration_ = None
        if self.probability:
            if F is None:  # fallback solve: out-of-fold values of 5 deterministic folds
                F = self._cv_decision(X, Y, yi, v)
            self.calibration_ = PlattCalibration(F[:, 0] if F.shape[1] == 1 else F, yi,
                                                 self.classes_.size)
        return self

    def _cv_decision(self, X, Y, yi, v):
        C = self._resolved_C()
        K = self._active_matrix(self._train_matrix(X))
        F = np.zeros_like(Y)
        for tr, va in _folds(yi, 5, None):
            sol = lssvm_solve(_block(K, tr, tr), Y[tr], C, rcond_tol=self.rcond_tol,
                              ridge=self.ridge, sample_weight=None if v is None else v[tr])
            F[va] = np.asarray(_block(K, va, tr) @ sol.coef[0]) + sol.bias[0]
        return F

    def decision_function(self, X):
        """Decision values f(x) = Σ_i α_i y_i κ(x, x_i) + b of each one-vs-rest problem.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (m, d)
            Samples (with ``kernel='precomputed'``: the (m, n) test–train kernel matrix).

        Returns
        -------
        ndarray of shape (m,) or (m, n_classes)
            (m,) for two classes (positive: ``classes_[1]``), else one column per class.
        """
        F = self._raw_decision(X)
        return F[:, 0] if self.classes_.size == 2 else F

    def predict(self, X):
        """Class labels: the sign of the decision value, or its argmax over classes.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (m, d)
            Samples (with ``kernel='precomputed'``: the (m, n) test–train kernel matrix).

        Returns
        -------
        ndarray of shape (m,)
            Predicted labels (elements of ``classes_``).
        """
        return _labels_of(self.decision_function(X), self.classes_)

    @available_if_explained(why_no_probability)
    def predict_proba(self, X):
        """Class probabilities (``probability=True``): Platt sigmoids of the decision values,
        fitted on leave-one-out values; one-vs-rest rows normalised to sum to one."""
        check_is_fitted(self, "calibration_")
        if self.calibration_ is None:
            raise AttributeError("predict_proba needs a model fitted with probability=True")
        return self._as_out(self.calibration_.predict_proba(self.decision_function(X)), X)

    @available_if_explained(why_no_probability)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))


class LSSVMRegressor(_R2Score, _LSSVMBase):
    """Least-squares SVM regression, i.e. kernel ridge with a bias (Suykens et al. 2002).

    Solves [[0, 1ᵀ], [1, K + I/C]] [b, α] = [0, y] (He et al., 2023, eq. (4) with real targets);
    f(x) = Σ_i α_i κ(x, x_i) + b.

    Parameters
    ----------
    kernel : str, Kernel, callable or 'precomputed', default 'rbf'
        Kernel name, :class:`~asymkern.kernels.Kernel`, callable f(X, Z) or
        ``'precomputed'`` (``fit(K)`` with the n × n training matrix, prediction on the
        (m, n) test–train matrix). A Kernel instance is never modified; its parameters are
        tunable through ``set_params(kernel__gamma=...)`` (grid search).
    kernel_params : dict or None, default None
        Parameters of a kernel given by name (e.g. ``{'gamma': 0.5}``: the kernel width).
    C : float > 0, default 1.0
        The regularisation constant γ of He et al. (2023) eq. (4): the weight of the squared errors
        (larger = weaker regularisation, like SVC's ``C``).
    solver : {'auto', 'chol', 'eig', 'dense'}, default 'auto'
        'auto'/'chol' (Cholesky of K + I/C, LU when K is indefinite or asymmetric), 'eig'
        or 'dense' (LU of the (n+1) system, reference).
        ``factorization_`` records which one ran (``'cholesky'``, ``'lu'`` or ``None``).
    rcond_tol : float, default 1e-8
        Threshold of the 1-norm reciprocal condition estimate of the system below which it is
        treated as ill-conditioned (the authors' MATLAB rule ``rcond(A) > 1e-8``).
    ridge : float or None, default 1.0
        λ of the fallback (AᵀA + λI)⁻¹Aᵀb used below ``rcond_tol`` (with an
        :class:`IllConditionedWarning`); None or 0 raises instead.
    gamma : float, optional
        Former name of ``C`` (``FutureWarning``).

        .. deprecated:: 0.2
            Renamed ``C`` because scikit-learn's ``gamma`` is the kernel width; removed in
            0.3, when ``gamma`` becomes the kernel width.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (p, k)
        Dual coefficients α (k = 1 for a 1-D y): p = ``n_train_`` rows, one per sample of
        ``X_fit_`` (samples of weight 0 removed); with ``kernel='precomputed'`` one per
        training row, 0 at those of weight 0.
    intercept_ : ndarray of shape (k,)
        Biases b.
    rcond_ : float
        1-norm reciprocal condition estimate of the system.
    fallback_ : bool
        Whether the ridge-regularised fallback solution was used.
    factorization_ : {'cholesky', 'lu'} or None
        The factorisation of K + I/C that ran (None for 'eig'/'dense').
    n_train_ : int
        Rows of the coefficients: the training samples of positive weight, or with
        ``kernel='precomputed'`` every training row.
    X_fit_ : ndarray or sparse matrix or None
        Copy of the training data (samples of weight 0 removed); None when precomputed.
    n_features_in_ : int
        Number of features of X seen in fit.

    See Also
    --------
    LSSVMClassifier : LS-SVM classification.
    asymkern.nystrom.NystromKernelRidge : Nyström kernel ridge regression for large n.
    asymkern.lssvm.lssvm_solve : The functional solver.

    Notes
    -----
    Multi-output: y of shape (n, k) fits k independent regressions with one factorisation of
    the shared system (its matrix does not depend on y); ``dual_coef_`` is (n, k),
    ``intercept_`` (k,) and ``predict`` returns (m, k) — column j equals the fit on y[:, j]
    alone. A 1-D y gives 1-D predictions.

    ``fit(X, y, sample_weight)``: weighted LS-SVM (Suykens et al. 2002), I/C → diag(1/(C v_i));
    an integer weight equals repeating the sample, a zero weight leaving it out.

    References
    ----------
    .. [1] M. He, F. He, L. Shi, X. Huang, J. A. K. Suykens, "Learning with Asymmetric
       Kernels: Least Squares and Feature Interpretation", IEEE TPAMI 45(8), 2023.
    .. [2] J. A. K. Suykens, J. Vandewalle, "Least Squares Support Vector Machine
       Classifiers", Neural Processing Letters 9(3):293–300, 1999.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.lssvm import LSSVMRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (60, 1))
    >>> y = np.sin(X[:, 0])
    >>> reg = LSSVMRegressor(C=100.0, kernel_params={"gamma": 0.5}).fit(X, y)
    >>> reg.predict(X[:5]).shape
    (5,)
    >>> bool(reg.score(X, y) > 0.99)
    True
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    @forgets_previous_fit
    def fit(self, X, y, sample_weight=None):
        """Fit the regression.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n, d)
            Training samples, or the (n, n) kernel matrix with ``kernel='precomputed'``.
        y : array-like of shape (n,) or (n, k)
            Real targets (k independent regressions for a 2-D y).
        sample_weight : array-like of shape (n,), optional
            Weights ≥ 0 of the squared errors; a zero weight drops the sample.

        Returns
        -------
        self : LSSVMRegressor
            The fitted estimator.

        Raises
        ------
        ValueError
            If ``solver`` is unknown, ``C`` is not positive, or every weight is zero.
        """
        self._check_solver_params()
        X, y, v = self._validate_X_fit(X, y, y_numeric=True, multi_output=True,
                                       sample_weight=sample_weight)
        self._multi_output = y.ndim == 2
        self._fit_targets(X, y if y.ndim == 2 else y[:, None], v)
        return self

    def predict(self, X):
        """Predicted targets f(x) = Σ_i α_i κ(x, x_i) + b.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (m, d)
            Samples (with ``kernel='precomputed'``: the (m, n) test–train kernel matrix).

        Returns
        -------
        ndarray of shape (m,) or (m, k)
            (m, k) when fitted on a 2-D y.
        """
        F = self._raw_decision(X)
        return F if self._multi_output else F[:, 0]


# -------------------------------------------------------------------------------- AsK-LS
class AsKLSClassifier(_AccuracyScore, _KernelMixin, BaseEstimator):
    """AsK-LS: least-squares SVM with an asymmetric kernel (He et al. (2023), eq. 5–7, Algorithm 1).

    Solves eq. (6) and keeps both discriminant functions of eq. (7),
    f_s(x) = Σ_i β_i y_i κ(x, x_i) + b1 and f_t(x) = Σ_i α_i y_i κ(x_i, x) + b2.
    With a symmetric kernel f_s = f_t and the model equals :class:`LSSVMClassifier` (Prop. 2).

    Parameters
    ----------
    kernel : str, Kernel, callable or 'precomputed', default 'sne'
        A name (``'sne'``, ``'t'``, ``'kl_histogram'``, ``'directed_graph'``, …), a
        :class:`~asymkern.kernels.Kernel`, a callable f(X, Z) or ``'precomputed'`` (then
        ``fit(K)`` with the n × n training matrix and prediction on a :class:`KernelPair`).
        Row-normalised kernels (SNE, T) are normalised over the *training* set, also at
        prediction time.
        A Kernel instance is never modified (tunable as ``kernel__gamma`` etc. in a grid search).
    kernel_params : dict or None, default None
        Parameters of the kernel (e.g. ``{'bandwidth': σ}`` or ``{'gamma': g}`` for SNE: the
        kernel width).
    C : float > 0, default 1.0
        The regularisation constant γ of eq. (5)–(6): the weight of the squared errors e, h
        (larger = weaker regularisation, like SVC's ``C``).
    merge : {'sum', 'stack', 'source', 'target'}, default 'sum'
        'sum' (f_s + f_t; the paper's "average"), 'stack' (out-of-fold (f_s, f_t) → logistic
        regression per class, the authors' protocol; always has ``predict_proba`` from those
        regressions), 'source' (f_s only) or 'target' (f_t only). 'sum', 'source' and
        'target' predict with the sign (two classes: positive → the second of the sorted
        ``classes_``) or the arg max over the one-vs-rest problems of the merged values,
        exactly as the paper. Each of f_s, f_t is a kernel-weighted vote of the training
        labels, and eq. (5) is a saddle problem (ωᵀν is indefinite), so nothing makes them
        fit even the training set: where a sample's kernel neighbours mostly carry *other*
        classes (heterophily, e.g. a directed graph whose class c links to class c+1) these
        three rules score below chance, and so does the symmetric LS-SVM. 'stack' learns the
        sign and weight of f_s and f_t per class and recovers such structure; compare it
        with 'sum' (e.g. by cross-validation) on a new kind of data.
    cv : int, default 10
        Folds of the stacking (``merge='stack'``).
    refit : bool, default False
        With 'stack': test-time (f_s, f_t) from a model refit on all training data (True) or,
        as in the authors' code, the average of the ``cv`` fold models (False).
    stack_C : float, default 1e4
        Inverse regularisation ``C`` of the stacking ``LogisticRegression`` (large ≈ the
        authors' unpenalised ``glmfit``); unrelated to ``C``.
    solver : {'auto', 'schur', 'eig', 'dense'}, default 'auto'
        'auto'/'schur' (Schur complement, one n×n LU), 'eig' (one eigendecomposition of
        KᵀK, for C grids), 'dense' (LU of the (2n + 2) system).
    rcond_tol : float, default 1e-8
        The paper's ill-conditioning rule: a 1-norm rcond estimate of A below ``rcond_tol``
        gives an :class:`IllConditionedWarning` and the ridge-regularised normal equations
        (AᵀA + ridge·I)⁻¹Aᵀb (authors' MATLAB: 1e-8 and 1).
    ridge : float or None, default 1.0
        λ of that fallback; None or 0 raises ``numpy.linalg.LinAlgError`` instead.
    nystrom : int, dict or None, default None
        None, an int r, or a dict of :func:`asymkern.linalg.nystrom.asymmetric_nystrom`
        keywords with ``n_components``: train on the rank-r asymmetric Nyström approximation
        K ≈ U diag(s) Vᵀ = C W_r⁺ R (the n × n matrix is never formed; O(n r²) solve;
        prediction uses the same Nyström extension, i.e. kernel values against the
        landmarks only, so the fitted model keeps the landmarks and a k-column weight row
        per landmark, not the n × r factors U, V). The rcond check is skipped; the approximation
        changes the model (see
        docs/results/askls_bench.md for the accuracy cost). The solve runs on r×r statistics
        (:func:`asymkern.lssvm._solvers.askls_lowrank_reduced`, the Woodbury form of eq. 6).
    random_state : None, int or RandomState, default None
        Folds of the stacking / of the calibration and the landmark sampling (None: fresh
        entropy; a numpy Generator is refused, see :func:`asymkern._validation.check_random_state`).
    class_weight : dict, 'balanced' or None, default None
        Weights of the classes, multiplied into the per-sample weights (scikit-learn
        semantics).
    probability : bool, default False
        For ``merge`` 'sum', 'source' or 'target': fit a Platt sigmoid
        (:class:`asymkern._calibration.PlattCalibration`) on the merged decision values of an
        internal 5-fold cross-validation (same parameters, folds from ``random_state``) and
        enable ``predict_proba``. With ``merge='stack'`` the stacking regressions already give
        probabilities and ``probability`` is not used.
    gamma : float, optional
        Former name of ``C`` (``FutureWarning``).

        .. deprecated:: 0.2
            Renamed ``C`` because scikit-learn's ``gamma`` is the kernel width; removed in
            0.3, when ``gamma`` becomes the kernel width.

    Notes
    -----
    ``fit(X, y, sample_weight)``: both error terms of the primal (eq. 5) are weighted,
    (C/2) Σ_i v_i e_i² + (C/2) Σ_i v_i h_i², so the two identity blocks I/γ of eq. (6) become
    diag(1/(C v_i)) (:func:`asymkern.lssvm.askls_kkt_matrix` with ``sample_weight``; solved
    by the symmetric scaling of :func:`asymkern.lssvm.askls_solve`). A zero weight leaves the
    sample out (also of the normalising set of a row-normalised kernel). An integer weight
    equals repeating the sample in the dual system; with a row-normalised kernel (SNE, T) a
    repeated row also changes the normalisers κ(x, ·)/Σ_j κ(x, x_j), a weight does not.

    Dask inputs (``nystrom`` required; ``merge`` 'sum', 'source' or 'target'): X row-chunked
    (numpy or CSR chunks), y a numpy array or a 1-D dask array chunked like X's rows. The
    Nyström factors come from the Dask ``asymmetric_nystrom`` (same landmarks as in memory for
    the same ``random_state``), the r×r statistics of the low-rank system and the landmark
    products R b̃, Cᵀ ã are tree reductions over the row chunks, and the small system is solved
    on the client by the same function as in memory; ``decision_function``/``predict`` of dask
    X are lazy dask arrays (numpy X → numpy). The fitted model keeps landmark rows and small
    matrices only (``coef_source_``/``coef_target_`` are None: n-sized) and pickles without
    dask; with a row-normalised kernel (SNE, T) the source part f_s of new points needs the
    training set for their normalisers, which a pickled dask model no longer holds.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The sorted class labels.
    coef_source_ : ndarray of shape (p, k)
        β ⊙ y of each one-vs-rest problem (k = 1 for two classes), the coefficients of f_s:
        p = ``n_train_`` rows, one per sample of ``X_fit_`` (samples of weight 0 removed); with
        ``kernel='precomputed'`` one per training row, 0 at those of weight 0. None after a
        dask fit.
    coef_target_ : ndarray of shape (p, k)
        α ⊙ y, the coefficients of f_t (rows as ``coef_source_``). None after a dask fit.
    intercept_ : ndarray of shape (2, k)
        The biases b1 (row 0) and b2 (row 1).
    rcond_ : float
        Smallest rcond estimate over the solves (NaN with ``nystrom``).
    fallback_ : bool
        Whether any solve used the ridge-regularised fallback.
    stackers_ : list of LogisticRegression or None
        One stacking regression per one-vs-rest problem (``merge='stack'``).
    oof_parts_ : tuple of two ndarrays of shape (n, k)
        Out-of-fold (f_s, f_t) of the training samples (``merge='stack'``).
    calibration_ : PlattCalibration or None
        The Platt sigmoids of ``probability=True`` (else None).
    nystrom_landmarks_ : tuple of two ndarrays of int
        Row and column landmarks (I, J) (with ``nystrom``).
    n_train_ : int
        Rows of the coefficients: the training samples of positive weight, or with
        ``kernel='precomputed'`` every training row.
    X_fit_ : ndarray or sparse matrix or None
        Copy of the training data (samples of weight 0 removed); None when precomputed.
    n_features_in_ : int
        Number of features of X seen in fit.
    dask_fit_ : bool
        Whether the model was fitted on dask inputs.

    See Also
    --------
    LSSVMClassifier : The symmetric special case (Prop. 2 of [1]_).
    KernelPair : Both orientations of a precomputed test kernel.
    asymkern.lssvm.askls_solve : The functional solver of eq. (6).

    References
    ----------
    .. [1] M. He, F. He, L. Shi, X. Huang, J. A. K. Suykens, "Learning with Asymmetric
       Kernels: Least Squares and Feature Interpretation", IEEE TPAMI 45(8), 2023.
    .. [2] J. A. K. Suykens, J. Vandewalle, "Least Squares Support Vector Machine
       Classifiers", Neural Processing Letters 9(3):293–300, 1999.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from asymkern.lssvm import AsKLSClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = AsKLSClassifier(kernel="sne", kernel_params={"bandwidth": 1.0}).fit(X, y)
    >>> fs, ft = clf.decision_function(X[:4], return_parts=True)
    >>> fs.shape, ft.shape
    ((4, 3), (4, 3))
    >>> bool(clf.score(X, y) > 0.8)
    True
    """

    def __init__(self, kernel="sne", kernel_params=None, C: float = 1.0,
                 merge: str = "sum", cv: int = 10, refit: bool = False,
                 stack_C: float = 1e4, solver: str = "auto", rcond_tol: float = 1e-8,
                 ridge: float | None = 1.0, nystrom=None, random_state=None,
                 class_weight=None, probability: bool = False, gamma=DEPRECATED):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.C = C
        self.class_weight = class_weight
        self.probability = probability
        self.gamma = gamma
        self.merge = merge
        self.cv = cv
        self.refit = refit
        self.stack_C = stack_C
        self.solver = solver
        self.rcond_tol = rcond_tol
        self.ridge = ridge
        self.nystrom = nystrom
        self.random_state = random_state

    _solvers = ("auto", "schur", "eig", "dense")

    # -------------------------------------------------------------- fitting
    def _check_params(self) -> float:
        """Every parameter, checked before the fit goes to an executor (the same error for
        numpy and dask inputs); returns C."""
        self._check_solver_params()
        _check_merge(self.merge)
        C = self._resolved_C()
        check_bool(self.probability, "probability")
        check_bool(self.refit, "refit")
        check_positive(self.stack_C, "stack_C")
        cv = self.cv  # read by merge='stack' only (scikit-learn's checks set other values)
        if self.merge == "stack" and (isinstance(cv, bool) or not isinstance(cv, (int, np.integer))
                                      or cv < 2):
            raise ValueError(f"cv must be an integer ≥ 2 for merge='stack', got {cv!r}")
        _check_class_weight(self.class_weight)
        self._nystrom_options()
        return C

    def _nystrom_options(self, n: int | None = None) -> dict | None:
        """The options of :func:`~asymkern.linalg.asymmetric_nystrom` that ``nystrom`` gives
        (None without the Nyström option); the same on every executor. With ``n`` (the
        training samples of the fit), a rank above n is clipped to n with a
        :class:`~asymkern.exceptions.ClippedParameterWarning`, as every component count."""
        import inspect

        from ..linalg.nystrom import asymmetric_nystrom

        ny = self.nystrom
        if ny is None:
            return None
        if isinstance(ny, dict):
            opts = dict(ny)
        elif isinstance(ny, numbers.Integral) and not isinstance(ny, bool):
            opts = {"n_components": ny}
        else:
            raise TypeError("nystrom must be None, a number of components r or a dict of "
                            f"asymmetric_nystrom options with 'n_components', got {ny!r}")
        if "n_components" not in opts:
            raise ValueError("nystrom dict needs 'n_components'")
        known = set(inspect.signature(asymmetric_nystrom).parameters) - {"G", "random_state"}
        unknown = sorted(set(map(str, opts)) - known)
        if unknown:
            raise TypeError(f"nystrom has unknown option(s) {unknown}; expected options of "
                            f"asymmetric_nystrom: {sorted(known)}")
        if opts.get("normalize", False) is not False:
            # unit-norm columns of U and V change U diag(s) Vᵀ: the fit would solve eq. (6)
            # on another matrix than the Nyström approximation C W_r⁺ R that prediction
            # extends (and the Dask fit, on the eq. 9 factors, would solve a third one)
            raise ValueError(
                f"nystrom option normalize={opts['normalize']!r} is not available for "
                f"{type(self).__name__}: AsK-LS is trained on the Nyström approximation "
                "C W_r⁺ R itself, which rescaled factors no longer represent; leave "
                "normalize out (or False)")
        if n is not None:
            name = "nystrom" if isinstance(ny, numbers.Integral) else "nystrom['n_components']"
            opts["n_components"] = clip_count(opts["n_components"], n, name,
                                              "the number of training samples",
                                              owner=type(self).__name__)
        return opts

    def _nystrom_budget(self, X, n_targets: int, opts: dict) -> tuple[float, float]:
        """Check the memory of a Nyström fit before it starts; ``(fit, held)``: the bytes the
        fit holds besides the factorisation (X's copy, the targets, the weights), and those
        it holds while the predictor's passes run (with the factors and the coefficients).

        The fit holds, besides the factorisation (which
        :func:`~asymkern.linalg.asymmetric_nystrom` checks against what ``fit`` leaves of
        ``max_dense_memory``): the factors U, V (n×r, float64, besides the float32 ones of
        float32 data), the solve's n×k arrays (k targets; copies of U and V for each fold of
        ``probability`` or ``merge='stack'``), then the coefficients and the kernel blocks of
        the predictor's passes (:meth:`_nystrom_predictor`, shrunk to what is left). Raises
        :class:`~asymkern.config.MemoryBudgetError` when even blocks of one row do not fit.
        """
        from ..linalg.svd import budget_bytes

        n = int(X.shape[0])
        r = opts.get("n_components")
        r = min(n, int(r)) if isinstance(r, numbers.Integral) and int(r) > 0 else 1
        pre = self._is_precomputed()
        itemsize = 8 if pre else np.dtype(X.dtype).itemsize
        fit = (0 if pre else array_nbytes(X)) + 8 * n * (n_targets + 2)  # X's copy, Y, labels, v
        factors = 2 * n * r * (8 + (itemsize if itemsize != 8 else 0))
        folds = 2 * n * r * 8 if self.probability or self.merge == "stack" else 0
        solve = factors + folds + 12 * n * n_targets * 8
        held = fit + factors + 3 * n * n_targets * 8  # + coef_source_, coef_target_
        blocks = 0 if pre else _one_row_passes(X)
        need = fit + max(solve, held - fit + blocks)
        if need > budget_bytes():
            check_memory(need, f"{type(self).__name__}(nystrom={r}) on {n} samples",
                         "fewer components (nystrom) or samples",
                         detail=f"besides the Nyström factorisation: X, the targets, the n×{r} "
                                "factors and their fold copies, the coefficients and one-row "
                                "kernel blocks of the predictor's passes")
        return float(fit), float(held)

    def _nystrom_factors(self, X, rs, n_targets: int = 1):
        """The Nyström factors (U, s, V) of the kernel matrix of X (float64), within the
        budget (:meth:`_nystrom_budget`), and the bytes the fit holds while the predictor's
        passes run.

        Sets ``_ny_result`` to the :class:`~asymkern.linalg.nystrom.NystromResult` without its
        n × r factors U, V (None there, as after a Dask fit): only the caller holds those, and
        they go with the fit."""
        from ..config import MemoryBudgetError, config_context
        from ..linalg.nystrom import asymmetric_nystrom
        from ..linalg.svd import budget_bytes

        opts = dict(self._nystrom_options(int(X.shape[0])) or {})  # with nystrom set only
        opts.setdefault("orthogonalize", True)
        fit, held = self._nystrom_budget(X, n_targets, opts)
        if self._is_precomputed():
            G = X
        else:
            G = KernelMatrix(self._kernel_obj(), X, X, reference=X)
        budget = budget_bytes()
        try:  # the factorisation within what the fit's own arrays leave of the budget
            with config_context(max_dense_memory=max(budget - fit, 1.0) / 2**20):
                res = asymmetric_nystrom(G, random_state=rs, **opts)
        except MemoryBudgetError as err:  # refused: said against the whole budget
            check_memory((err.nbytes or 0) + fit, err.what or "asymmetric Nyström",
                         "fewer components or landmarks (nystrom)",
                         detail=f"the factorisation's {format_bytes(err.nbytes or 0)} and X, "
                                f"the targets and the weights of the fit "
                                f"({format_bytes(fit)})")
            raise
        for what, val in (("U", res.U), ("s", res.s), ("V", res.V)):
            check_finite_output(val, f"the Nyström factor {what} of the kernel matrix of X",
                                _RESCALE)
        factors = tuple(np.asarray(f, np.float64) for f in res.factors())
        # the model keeps the landmarks and the r-sized parts only: the n × r factors are
        # the fit's (prediction uses kernel values against the landmarks, eq. 8)
        self._ny_result = dataclasses.replace(res, U=None, V=None)
        return factors, held

    def _nystrom_predictor(self, X, held: float = 0.0):
        """Consistent out-of-sample extension of the Nyström model.

        K̃ = C W_r⁺ R with C = K[:, J], R = K[I, :], W = K[I, J] (Tao et al., 2024, eq. 8–9), so
        f_s(x) = k(x, X_J) W_r⁺ (R b̃) + b1 and f_t(x) = k(X_I, x)ᵀ (W_r⁺)ᵀ (Cᵀ ã) + b2:
        at training points these equal the rows of K̃ used in the fit, and prediction only
        needs kernel values against the landmarks.
        """
        res = self._ny_result
        I = np.asarray(res.row_landmarks)
        J = np.asarray(res.col_landmarks)
        if self._is_precomputed():
            Kd = X.toarray() if sp.issparse(X) else np.asarray(X)
            R_b = Kd[I] @ self.coef_source_
            Ct_a = Kd[:, J].T @ self.coef_target_
            W = Kd[np.ix_(I, J)]
            XI = XJ = lse_I = None
        else:
            kern = self._kernel_obj()
            XI, XJ = X[I], X[J]
            mats = [KernelMatrix(kern, XI, X, reference=X), KernelMatrix(kern, X, XJ, reference=X),
                    KernelMatrix(kern, XI, XJ, reference=X), KernelMatrix(kern, XI, X, reference=X)]
            mats = _predictor_blocks(mats, held + len(I) * len(J) * 8, type(self).__name__)
            R_b = mats[0].matmat(self.coef_source_)
            Ct_a = mats[1].rmatmat(self.coef_target_)
            W = mats[2].to_array()
            lse_I = (mats[3]._row_lse() if kern.row_normalized else None)
        self._set_nystrom_predictor(I, J, R_b, Ct_a, W, XI, XJ, lse_I)

    def _keep_dask(self, fit):
        """Set the fitted attributes from the Dask fit (:class:`asymkern._dask.askls.
        DaskAsKLSFit`); n-sized coefficients are never kept. Returns self."""
        self.classes_ = fit.classes
        self.n_train_ = fit.n_train
        self.n_features_in_ = fit.n_features
        self.X_fit_ = None
        self.stackers_ = None
        self.coef_source_ = self.coef_target_ = None
        self.intercept_ = fit.bias
        self.rcond_ = np.nan
        self.fallback_ = fit.fallback
        self.dask_fit_ = True
        self._dask_reference = fit.reference  # transient (dropped by pickle)
        self._ny_result = fit.nystrom
        self._set_nystrom_predictor(*fit.predictor)
        return self

    def _set_nystrom_predictor(self, I, J, R_b, Ct_a, W, XI=None, XJ=None, lse_I=None):
        """Predictor weights from R b̃ (``|I|``×k), Cᵀ ã (``|J|``×k) and the core W = K[I, J].

        Shared by the in-memory and the Dask fits (which obtain R b̃ and Cᵀ ã by reductions
        over row chunks). Keeps the landmark rows X[I], X[J] and, for row-normalised kernels,
        the normalisers of X[I] over the training set (prediction of f_t needs nothing else).
        """
        res = self._ny_result
        Uw, sw, Vwt = np.linalg.svd(np.asarray(W, dtype=np.float64), full_matrices=False)
        r = min(int(res.s.shape[0]), int(np.sum(sw > sw[0] * max(W.shape) * np.finfo(float).eps)))
        Uw, sw, Vw = Uw[:, :r], sw[:r], Vwt[:r].T
        self.nystrom_landmarks_ = (I, J)
        self._ny_points = (XI, XJ, lse_I)
        self._ny_ws = Vw @ ((Uw.T @ np.asarray(R_b, np.float64)) / sw[:, None])  # |J| × k
        self._ny_wt = Uw @ ((Vw.T @ np.asarray(Ct_a, np.float64)) / sw[:, None])  # |I| × k

    def _make_solver(self, C, K=None, factors=None, idx=None, v=None):
        """A function Y -> Solution for the (sub)problem on rows/cols ``idx`` (weights v)."""
        method = self.solver
        w = None if v is None else (v if idx is None else v[idx])
        kw = {"rcond_tol": self.rcond_tol, "ridge": self.ridge, "sample_weight": w}
        if factors is not None:
            U, s, V = factors
            if idx is not None:
                U, V = U[idx], V[idx]
            return lambda Y: askls_solve((U, s, V), Y, C, method="lowrank", **kw)
        Ks = K if idx is None else _block(K, idx, idx)
        m = "schur" if method == "auto" else method
        return lambda Y: askls_solve(Ks, Y, C, method=m, **kw)

    @forgets_previous_fit
    def fit(self, X, y, sample_weight=None):
        """Fit on training samples X (or the n × n kernel matrix with ``kernel='precomputed'``).

        Dask X (row-chunked; y a numpy array or a 1-D dask array chunked like X's rows) is
        fitted by :func:`asymkern._dask.askls.fit_askls_dask` (Nyström option only).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n, d)
            Training samples, or the (n, n) kernel matrix with ``kernel='precomputed'``.
        y : array-like of shape (n,)
            Class labels.
        sample_weight : array-like of shape (n,), optional
            Weights ≥ 0 of both error terms of eq. (5) (see Notes).

        Returns
        -------
        self : AsKLSClassifier
            The fitted estimator.

        Raises
        ------
        ValueError
            If ``merge``, ``solver`` or ``class_weight`` is unknown, ``C`` or ``stack_C`` is
            not positive, ``rcond_tol`` or ``ridge`` is negative or not finite, every weight
            is zero, a ``nystrom`` dict lacks ``n_components``, or ``cv`` is invalid for
            ``merge='stack'`` (all checked before the fit goes to an executor).
        TypeError
            If ``probability`` or ``refit`` is not True or False, or ``nystrom`` is neither
            None, an integer nor a dict of :func:`~asymkern.linalg.asymmetric_nystrom`
            options.
        NotImplementedError
            For dask inputs with weights or ``probability=True``, and for zero weights with
            ``'precomputed'`` and ``nystrom``.
        """
        C = self._check_params()
        if any_dask(X, y):
            from .._dask.askls import fit_askls_dask

            if sample_weight is not None or self.class_weight is not None or self.probability:
                raise NotImplementedError(
                    "sample_weight, class_weight and probability=True are not available for "
                    "dask inputs yet; pass numpy arrays or leave them at their defaults")
            return self._keep_dask(fit_askls_dask(self, X, y, C))
        self.dask_fit_ = False
        self._dask_reference = None
        rs = check_random_state(self.random_state)
        X, y, v = self._validate_X_fit(X, y, sample_weight=sample_weight,
                                       class_weight=self.class_weight)
        self.classes_, yi, Y = _encode_labels(y)
        n_all = X.shape[0]
        self.n_train_ = n_all
        self.X_fit_ = None if self._is_precomputed() else X
        self._ny_result = None
        factors = K = None
        held = 0.0  # bytes the Nyström fit holds beside the predictor's passes
        if self.nystrom is not None:
            if self._active is not None:
                raise NotImplementedError("zero sample weights with kernel='precomputed' and "
                                          "nystrom: drop those rows and columns of X instead")
            factors, held = self._nystrom_factors(X, rs, Y.shape[1])
        else:
            K = self._active_matrix(self._train_matrix(X))
        rconds, fallbacks = [], []

        def run(solver, Yt):
            # the solver's warnings pass through as they are (a catch_warnings(record=True)
            # here swapped the process-wide warnings.showwarning: two fits in two threads
            # could leave one fit's recorder in place, and every later warning was lost)
            sol = solver(Yt)
            rconds.append(sol.rcond)
            fallbacks.append(sol.fallback)
            return sol

        self.stackers_ = None
        self.calibration_ = None
        if self.merge != "stack" or self.refit:
            sol = run(self._make_solver(C, K, factors, v=v), Y)
            self.coef_source_ = self._scatter(sol.coef[1], n_all)
            self.coef_target_ = self._scatter(sol.coef[0], n_all)
            self.intercept_ = sol.bias
        if self.merge == "stack":
            self._fit_stack(C, K, factors, Y, yi, v, rs, run)
        elif self.probability:
            folds = _folds(yi, 5, rs)
            oof_s, oof_t, *_ = self._oof_parts(C, K, factors, Y, v, folds, run)
            F = {"sum": oof_s + oof_t, "source": oof_s, "target": oof_t}[self.merge]
            self.calibration_ = PlattCalibration(F[:, 0] if F.shape[1] == 1 else F, yi,
                                                 self.classes_.size)
        if factors is not None:
            self._nystrom_predictor(X, held)
        for what, val in (("coefficients β ⊙ y", self.coef_source_),
                          ("coefficients α ⊙ y", self.coef_target_),
                          ("biases b1, b2", self.intercept_)):
            check_finite_output(val, f"the AsK-LS {what}", _RESCALE)
        self.rcond_ = float(np.nanmin(rconds)) if not all(np.isnan(rconds)) else np.nan
        self.fallback_ = bool(any(fallbacks))
        return self

    def _oof_parts(self, C, K, factors, Y, v, folds, run):
        """Out-of-fold (f_s, f_t) of every training sample and the fold-averaged model."""
        n, k = Y.shape
        oof_s, oof_t, avg_s, avg_t = (np.zeros((n, k)) for _ in range(4))
        avg_b = np.zeros((2, k))
        for tr, va in folds:
            sol = run(self._make_solver(C, K, factors, tr, v), Y[tr])
            a_t, b_s = sol.coef[0], sol.coef[1]
            if factors is not None:
                U, s, V = factors
                oof_s[va] = U[va] @ (s[:, None] * (V[tr].T @ b_s))
                oof_t[va] = V[va] @ (s[:, None] * (U[tr].T @ a_t))
            else:
                oof_s[va] = np.asarray(_block(K, va, tr) @ b_s)
                oof_t[va] = np.asarray(_block(K, tr, va).T @ a_t)
            oof_s[va] += sol.bias[0]
            oof_t[va] += sol.bias[1]
            avg_s[tr] += b_s / len(folds)
            avg_t[tr] += a_t / len(folds)
            avg_b += sol.bias / len(folds)
        return oof_s, oof_t, avg_s, avg_t, avg_b

    def _fit_stack(self, C, K, factors, Y, yi, v, rs, run):
        cv = self.cv  # checked by _check_params
        if yi.size < cv:
            raise ValueError(f"merge='stack' with cv={cv} needs at least {cv} samples, "
                             f"got {yi.size}")
        folds = _folds(yi, int(cv), rs)
        oof_s, oof_t, avg_s, avg_t, avg_b = self._oof_parts(C, K, factors, Y, v, folds, run)
        n_all = self.n_train_
        if not self.refit:
            self.coef_source_ = self._scatter(avg_s, n_all)
            self.coef_target_ = self._scatter(avg_t, n_all)
            self.intercept_ = avg_b
        self.stackers_ = []
        # only stack_C·v matters to the logistic regressions: keep the weights representable
        v_lr, C_lr = _absorb_weight_scale(v, self.stack_C, "stack_C")
        for j in range(Y.shape[1]):
            lr = LogisticRegression(C=C_lr, max_iter=1000)
            lr.fit(np.column_stack([oof_s[:, j], oof_t[:, j]]), (Y[:, j] > 0).astype(int),
                   sample_weight=v_lr)
            self.stackers_.append(lr)
        self.oof_parts_ = (oof_s, oof_t)

    # -------------------------------------------------------------- prediction
    def _nystrom_cross(self, X, need_s, need_t):
        if getattr(self, "dask_fit_", False) or is_dask_array(X):
            from .._dask.askls import nystrom_cross_dask

            return nystrom_cross_dask(self, X, need_s, need_t)
        I, J = self.nystrom_landmarks_
        n = self.n_train_
        if self._is_precomputed():
            if not isinstance(X, KernelPair):
                raise ValueError(
                    "an asymmetric model with kernel='precomputed' needs both orientations: "
                    "pass KernelPair(test_train=K(X_test, X_train), train_test=K(X_train, X_test))"
                )
            m = _pair_size(X, n)
            fs = ft = None
            if need_s:
                A = _check_block(X.test_train, (m, n), "test_train")
                fs = np.asarray(A[:, J] @ self._ny_ws)
            if need_t:
                B = _check_block(X.train_test, (n, m), "train_test")
                ft = np.asarray(B[I].T @ self._ny_wt)
            return fs, ft
        return self._kernel_products(X, self._ny_ws if need_s else None,
                                     self._ny_wt if need_t else None, I, J)

    def _parts(self, X, both: bool = False):
        """(f_s, f_t) of eq. (7) that ``merge`` needs (both with ``both``; else None)."""
        check_is_fitted(self, "intercept_")
        need_s = both or self.merge in ("sum", "stack", "source")
        need_t = both or self.merge in ("sum", "stack", "target")
        if getattr(self, "_ny_result", None) is not None:
            fs, ft = self._nystrom_cross(X, need_s, need_t)
        else:
            fs, ft = self._cross_products(X, self.coef_source_ if need_s else None,
                                          self.coef_target_ if need_t else None)
        if fs is not None:
            fs = fs + self.intercept_[0][None, :]
        if ft is not None:
            ft = ft + self.intercept_[1][None, :]
        return fs, ft

    def _stacked(self, fs, ft, score):
        """One column per one-vs-rest problem j: ``score(lr_j, (f_s, f_t)[:, j])`` of its
        stacking regression."""
        return np.column_stack([score(lr, np.column_stack([fs[:, j], ft[:, j]]))
                                for j, lr in enumerate(self.stackers_)])

    def decision_function(self, X, return_parts: bool = False):
        """Merged decision values, (m,) for two classes or (m, k) one-vs-rest.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, KernelPair} of shape (m, d)
            Samples; with ``kernel='precomputed'`` a :class:`KernelPair`.
        return_parts : bool, default False
            Return (f_s, f_t) of eq. (7) instead (same shapes); for
            ``merge='source'``/``'target'`` both parts are computed.

        Returns
        -------
        ndarray of shape (m,) or (m, k), or tuple of two of them
            (m,) for two classes (positive: ``classes_[1]``), else one column per class.
        """
        if return_parts:
            fs, ft = (self._as_out(f, X) for f in self._parts(X, both=True))
            return (fs[:, 0], ft[:, 0]) if self.classes_.size == 2 else (fs, ft)
        fs, ft = self._parts(X)
        if self.merge == "sum":
            F = fs + ft
        elif self.merge == "source":
            F = fs
        elif self.merge == "target":
            F = ft
        else:
            F = self._stacked(fs, ft, lambda lr, Z: lr.decision_function(Z))
        if is_dask_array(F):  # lazy: NaN/inf checks happen in the tasks that read the chunks
            F = self._as_out(F, X)
        else:
            F = self._as_out(check_finite_output(F, "the decision values",
                                                 "rescale X like the training data"), X)
        return F[:, 0] if self.classes_.size == 2 else F

    def predict(self, X):
        """Class labels (a dask array for dask X).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, KernelPair} of shape (m, d)
            Samples; with ``kernel='precomputed'`` a :class:`KernelPair`.

        Returns
        -------
        ndarray of shape (m,)
            Predicted labels (elements of ``classes_``).
        """
        F = self.decision_function(X)
        if is_dask_array(F):
            from .._dask.askls import predict_labels

            return predict_labels(F, self.classes_)
        return _labels_of(F, self.classes_)

    def _why_no_proba(self):
        if self.merge != "stack" and not self.probability:
            return (f"predict_proba needs probability=True or merge='stack' at fit (got "
                    f"probability={self.probability!r}, merge={self.merge!r}); set one and "
                    "fit again")
        return None

    @available_if_explained(_why_no_proba)
    def predict_proba(self, X):
        """Class probabilities: from the stacking logistic regressions (``merge='stack'``) or
        from Platt sigmoids fitted on cross-validated merged decision values
        (``probability=True``); one-vs-rest probabilities are normalised to sum to one."""
        check_is_fitted(self, "intercept_")
        if self.merge != "stack":
            if getattr(self, "calibration_", None) is None:
                raise AttributeError("predict_proba needs a model fitted with probability=True "
                                     "or merge='stack'")
            return self._as_out(self.calibration_.predict_proba(self.decision_function(X)), X)
        if getattr(self, "stackers_", None) is None:
            raise AttributeError("predict_proba needs a model fitted with merge='stack'")
        fs, ft = self._parts(X)
        P = self._stacked(fs, ft, lambda lr, Z: lr.predict_proba(Z)[:, 1])
        if self.classes_.size == 2:
            return self._as_out(np.column_stack([1.0 - P[:, 0], P[:, 0]]), X)
        s = P.sum(axis=1, keepdims=True)
        s[s == 0] = 1.0
        return self._as_out(P / s, X)

    @available_if_explained(_why_no_proba)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def __getstate__(self):
        state = dict(super().__getstate__())  # a copy: the live estimator keeps its reference
        state.pop("_dask_reference", None)  # a dask fit's training data stays out of pickles
        return state
