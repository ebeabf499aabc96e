"""What the kernel transfer operators (Koopman, Perron–Frobenius) share: the time-lagged
pairs, the estimator base class and the solver of the time-lagged Gram matrix (Mollenhauer,
Schuster, Klus and Schütte, 2020, §4.4).
"""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import _get_feature_names, check_is_fitted

from .._shared.operators import _check_int, _check_timestep, check_fit_memory, gram, lagged_pairs
from .._validation import DEPRECATED, as_data, clip_count, renamed_param
from ._common import (
    _RESCALE,
    CholeskyInverse,
    _c_copy,
    _cheaper,
    _clip_components,
    _columns,
    _fit_X,
    _kernel_accepts_sparse,
    _OperatorEstimator,
    _Recomputable,
    _same_format,
    _sym_gram,
)
from ._koopman import ESTIMATORS, pcr_dual, rrr_dual
from ._numerics import GramSolver, LaggedGramSolver, auxiliary_eig
from .empirical import MatmatOperator, OperatorEig, RKHSFunction


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


class PseudoInverse(CholeskyInverse):
    """G⁺ (``alpha=None``) as a symmetric LinearOperator: the pseudo-inverse of a PSD Gram
    matrix from its eigendecomposition (:class:`~asymkern.operators._numerics.GramSolver` with
    shift 0; eigenvalues at or below n·eps·λ_max dropped), never formed; with a shift > 0,
    (G + shift·I)⁻¹ on that numerical range (``restrict``: a kernel with a finite feature map).

    ``source=(kernel, X)``: G = kernel(X); the factors are then not pickled but recomputed.
    """

    def _factor(self, G, warn: bool = True):
        return GramSolver(G, self.shift, self.name, restrict=True, warn=warn)

    def _rebuild(self):
        kernel, X = self._source  # the fit already warned about the conditioning
        self.cho = self._factor(_sym_gram(kernel, X), warn=False)

    def _apply(self, V):
        return self.cho.solve(V)

    _apply_t = _apply


def gram_inverse(G, solver: GramSolver, name: str, source=None, lazy: bool = False):
    """The n×n representation (G + nεI)⁻¹ (:class:`CholeskyInverse`) or, for ``alpha=None``,
    G⁺ (:class:`PseudoInverse`) from a fitted :class:`GramSolver`; ``lazy``: factors computed
    from ``source`` on first use (``G`` then only gives the shape)."""
    n = int(G.shape[0])
    cls = PseudoInverse if solver.kind == "pinv" else CholeskyInverse
    if lazy:
        return cls.lazy((n, n), source, shift=solver.shift, name=name)
    factor = solver if solver.kind == "pinv" else solver.cho
    return cls(G, solver.shift, name, source=source, factor=factor)


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
        G = _sym_gram(kernel, X0)
        # the fit already warned about the conditioning
        self.inv = gram_inverse(G, GramSolver(G, delta, "G_X", warn=False), "G_X", (kernel, X0))
        self.solver = LaggedGramSolver(self.Gxy, delta, rcond_min)

    def _apply(self, V):
        return self.solver.solve(self.inv._apply(self.Gxy @ V))

    def _apply_t(self, V):
        W = self.solver.solve_t(V)
        return self.Gxy.T @ self.inv._apply(W)


def _check_snapshot_names(est, y) -> None:
    """Refuse a DataFrame of snapshots y whose columns are not those of ``fit``'s X, in order.

    y holds states of X's own space, which the kernel compares with X's feature by feature (by
    position): reordered or other columns would fit (or score) a different model silently, as a
    reordered X would. Checked when both X's names (``feature_names_in_``) and y's are known.

    Raises
    ------
    ValueError
        Naming y, X and both lists of names.
    """
    fitted = getattr(est, "feature_names_in_", None)
    names = _get_feature_names(y)
    if fitted is None or names is None or list(names) == list(fitted):
        return
    raise ValueError(
        f"the feature names of y ({list(names)[:5]}...) must be those of X "
        f"({list(fitted)[:5]}...), in the same order: y holds the time-shifted states, which "
        "the kernel compares with X feature by feature; reorder y's columns as X's "
        "(y[X.columns])")


def _snapshot_pairs(est, X, y, lag: int, kernel):
    """The time-lagged pairs (x_i, y_i) of a transfer-operator fit (float64 copies).

    ``y is None``: X is one trajectory (rows = time steps), pairs (x_t, x_{t+lag}). Otherwise y
    holds the time-shifted snapshots y_i = Ξ^τ(x_i) and must have X's shape (n, d); a 1-D y is
    accepted only when X has a single feature (d = 1). Anything else — e.g. class labels — is a
    ``ValueError`` naming y and the expected shape, never a silently different estimator.
    """
    X = _fit_X(est, X, kernel)  # records est._sparse_ok
    _check_snapshot_names(est, y)
    if sp.issparse(y) and not est._sparse_ok:
        why = (f"the kernel {kernel!r} does not accept sparse input" if kernel is not None
               else "the landmark (Nyström) fit needs dense samples")
        raise TypeError(f"y is a sparse matrix but {why}; pass y.toarray()")
    if y is not None:
        y = as_data(y, "y", allow_sparse=True) if sp.issparse(y) else \
            as_data(y, "y", ensure_2d=False)
    X0, X1 = lagged_pairs(X, y, lag)  # the pairs of every executor
    if y is None:
        return X0.copy(), X1.copy()
    return _same_format(X, _c_copy(X1))  # one representation for the Gram evaluations


def _device_samples(est, X, y, kernel, lag: int, kind: str):
    """The validated pairs of an exact transfer-operator fit on the torch executor
    (:func:`asymkern._torch.transfer.transfer_samples_torch`), G_X formed on the device only
    after the fit's whole peak was checked against the budget (:meth:`_check_fit_memory`, as
    on the numpy path), with the host copies of the pairs."""
    from .._torch.device import to_numpy
    from .._torch.transfer import transfer_samples_torch

    d = transfer_samples_torch(est, X, y, lag)  # nothing n×n yet
    est._check_fit_memory(kind, int(d.X0.shape[0]), (d.X0, d.X1, d.X0, d.X1))  # (+ host)
    G = gram(kernel, d.X0, what="the Gram matrix G_X of the samples x_t")
    return dataclasses.replace(d, G=G, X0n=to_numpy(d.X0).copy(), X1n=to_numpy(d.X1).copy())


def _reduced_factors(kind: str, G, gram_H, r: int, shift: float):
    """The exact PCR/RRR factors U, V (B_Koopman = U Vᵀ) on G's executor, and H = k(Y, Y) when
    it was formed (RRR; ``gram_H()`` forms it); None for PCR.

    Raises
    ------
    ValueError
        If the estimator is numerically zero (no direction above the rounding level).
    """
    H = None
    if kind == "pcr":
        U, V = pcr_dual(G, r, shift)
    else:
        H = gram_H()
        U, V, _ = rrr_dual(G, H, r, shift)
    if U.shape[1] == 0:
        raise ValueError("the reduced-rank estimator is numerically zero (no direction "
                         "above the rounding level); " + _RESCALE)
    return U, V, H


class _TransferOperator(_OperatorEstimator):
    #: n×n float64 arrays an exact fit holds at once at its peak, per estimator ('full',
    #: 'pcr', 'rrr'; the worst of its data-dependent branches), set by each subclass
    _FIT_COPIES: dict = {}
    #: what the budget error suggests instead
    _FIT_ALTERNATIVES = "fewer time-lagged pairs"

    def _check_fit_memory(self, kind: str, n: int, samples=()) -> None:
        """One ``max_dense_memory`` check of an exact fit on n pairs (every executor), before
        its first n×n array (:func:`asymkern._shared.operators.check_fit_memory`); ``samples``:
        the pairs (and observables) the fit holds."""
        check_fit_memory(n, self._FIT_COPIES[kind],
                         f"{type(self).__name__}(estimator={kind!r}) exact fit",
                         _cheaper(self._FIT_ALTERNATIVES, "estimator", self._FIT_COPIES, kind),
                         samples=samples,
                         columns=_columns(self.n_components, getattr(self, "rank", None)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        exact = getattr(self, "n_landmarks", None) is None and isinstance(
            getattr(self, "landmarks", "uniform"), str)
        tags.input_tags.sparse = exact and _kernel_accepts_sparse(self.kernel, self.kernel_params)
        return tags

    def _alpha(self) -> float:
        """ε of ``alpha``: a finite number > 0, or 0.0 for ``alpha=None`` / ``alpha=0`` (the
        unregularised estimator, solved with pseudo-inverses); checked before every fit (numpy,
        torch and dask executors: one rule, one message)."""
        value = renamed_param(self, "alpha", "regularization")
        if value is None:
            return 0.0
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"alpha must be None or a real number >= 0 (the Tikhonov parameter "
                            f"ε; None or 0: unregularised), got {value!r}")
        value = float(value)
        if not np.isfinite(value) or value < 0:
            raise ValueError(f"alpha must be finite and > 0 (Tikhonov parameter ε of "
                             f"(G + nεI)⁻¹), or None or 0 for the unregularised estimator; got "
                             f"{value}")
        return value

    def _check_params(self) -> tuple[str, float, int]:
        """``estimator``, ``alpha``, ``timestep``, ``lag``, ``n_components`` and ``rank``
        checked before the fit is handed to an executor (numpy, torch or dask: one rule, one
        message), before any Gram matrix is formed; ``rank`` also when ``estimator='full'``
        ignores it. Returns (estimator, ε, lag)."""
        kind = self._estimator_kind()
        eps = self._alpha()
        _check_timestep(self.timestep)
        _check_int(self.n_components, "n_components")
        if getattr(self, "rank", None) is not None:
            _check_int(self.rank, "rank")
        return kind, eps, _check_int(self.lag, "lag")

    def _pair_grams(self, X0, X1):
        """``gram(which)`` for the pairs on their executor (numpy, or tensors on their
        device): ``'cross'`` k(Y, X), ``'lagged'`` k(X, Y), ``'out'`` k(Y, Y),
        float64, refused (OverflowError) when not finite
        (:func:`asymkern._shared.operators.gram`)."""
        lagged_hint = "rescale X (and Y) or choose a kernel parameter that keeps it finite"
        table = {"cross": (X1, X0, "the time-lagged Gram matrix [k(y_i, x_j)]", _RESCALE),
                 "lagged": (X0, X1, "the time-lagged Gram matrix G_XY = [k(x_i, y_j)]",
                            lagged_hint),
                 "out": (X1, None, "the Gram matrix of the shifted samples y_i", _RESCALE)}

        def pair_gram(which: str):
            A, B, what, hint = table[which]
            return gram(self.kernel_, A, B, what, hint)

        return pair_gram

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

    def _finish(self, res: OperatorEig):
        """Record the eigenpairs ``res`` and the implied timescales."""
        self.eigenvalues_ = res.eigenvalues
        self.eigenfunctions_ = res.eigenfunctions
        self.n_components_ = int(res.eigenvalues.size)
        mod = np.abs(self.eigenvalues_)
        with np.errstate(divide="ignore"):
            ts = -self.lag * _check_timestep(self.timestep) / np.log(np.clip(mod, 1e-300, None))
        ts[mod >= 1] = np.inf
        self.timescales_ = ts
        return self

    def _finish_full(self, G_out, A, X_out, n: int, lift=None, floor: float = 0.0):
        """The top eigenpairs of a 'full' estimator from its auxiliary matrix A (n×n, Prop. 3.8
        of Mollenhauer, Schuster, Klus and Schütte, 2020) and the Gram matrix G_out of the
        samples X_out (host) its eigenfunctions live on; A and G_out on any executor (G_out
        may be a callable that forms it after the eigensolver, see :func:`auxiliary_eig`);
        ``lift`` maps A's eigenvectors to the coefficients, and eigenvalues up to ``floor``
        are numerically zero (:func:`auxiliary_eig`)."""
        k = _clip_components(self, n, "the number of time-lagged pairs")
        try:
            lam, C, used = auxiliary_eig(G_out, A, k, type(self).__name__, lift, floor)
        except ValueError as exc:
            if "numerically zero RKHS norm" not in str(exc):
                raise
            # the usual cause here: a regularisation far below the Gram matrix's scale on a
            # numerically rank-deficient G (a smooth kernel, a large bandwidth), where the
            # dual solve amplifies the rounding of the near-null directions by 1/(nε)
            raise ValueError(
                f"{exc}. With estimator='full' this usually means alpha={self.alpha!r} is too "
                "small for a numerically rank-deficient Gram matrix (a smooth kernel, a large "
                "bandwidth): the dual eigenproblem amplifies rounding by 1/(n·alpha). Use a "
                "larger alpha, alpha=None, or estimator='pcr'/'rrr' with a rank (they solve "
                "on the range of the Gram matrix)") from exc
        fn = RKHSFunction(self.kernel_, X_out, C)
        return self._finish(OperatorEig(lam, fn, "auxiliary", {"solver": used}))

    def _finite_rank_below(self, n: int) -> bool:
        """Whether the kernel has a finite feature map (:meth:`Kernel.feature_rank`) of
        dimension below the n samples: its Gram matrices are then rank-deficient, and the
        'full' estimator solves on their numerical range."""
        rank = getattr(self.kernel_, "feature_rank", None)
        bound = rank(int(self.X_fit_.shape[1])) if rank is not None else None
        return bound is not None and bound < n

    def _estimator_kind(self) -> str:
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {self.estimator!r}")
        return self.estimator

    def _rank(self, limit: int, what: str) -> int:
        r = self.n_components if self.rank is None else self.rank
        r = _check_int(r, "rank" if self.rank is not None else "n_components")
        return clip_count(r, limit, "rank", what, owner=type(self).__name__)

    def implied_timescales(self) -> np.ndarray:
        """t_i = −τ / ln|λ_i| (τ = lag·timestep); ∞ for ``|λ_i|`` ≥ 1."""
        check_is_fitted(self, "operator_")
        return self.timescales_


__all__ = ["IllConditionedLaggedGramWarning"]
