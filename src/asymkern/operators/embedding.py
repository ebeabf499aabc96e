"""The conditional mean embedding Û_{Y|X} = Ψ (G_Φ + nεI)⁻¹ Φᵀ (Mollenhauer, Schuster, Klus
and Schütte, 2020, §4.3), exact or restricted to landmarks (Nyström).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._backend import ops_of
from .._shared.operators import (
    DeviceState,
    _check_landmark_options,
    check_fit_memory,
    checked,
    evaluate,
    gram,
    landmark_evaluate,
    landmark_step,
)
from .._torch import check_device, use_torch
from .._validation import (
    DEPRECATED,
    as_weights,
    check_finite_output,
    check_input,
    forgets_previous_fit,
    n_rows,
)
from ._common import (
    _RESCALE,
    CholeskyInverse,
    _dense,
    _fit_X,
    _kernel_accepts_sparse,
    _landmark_predict,
    _LandmarkRepresentation,
    _OperatorEstimator,
    _predict_exact,
    _same_format,
    _second_view,
    landmark_inverse,
)
from ._numerics import cholesky_shifted
from .empirical import EmpiricalOperator, RKHSFunction, as_rkhs_kernel

#: n×n arrays the exact fit holds at once (measured with tracemalloc at n = 1000 and 2000):
#: G_X and the Cholesky factor of G_X + nεI (which overwrites the shifted copy of G_X)
_FIT_COPIES = 2


def _check_fit_memory(X, Y, samples) -> None:
    """One ``max_dense_memory`` check of the exact fit on the samples X with outputs Y (every
    executor), before G_X is formed (:func:`asymkern._shared.operators.check_fit_memory`);
    ``samples``: the arrays the fit holds."""
    check_fit_memory(int(X.shape[0]), _FIT_COPIES, "ConditionalMeanEmbedding exact fit",
                     "landmarks (n_landmarks=...: the Nyström estimator forms no n×n matrix), "
                     "or fewer samples", samples=samples, columns=int(Y.shape[1]))


def _cme_coefficients(G, Y, shift: float, overwrite: bool = False):
    """The Cholesky factor of G_X + nεI and the coefficients (G_X + nεI)⁻¹ Y of the exact
    conditional mean embedding, on the executor of G and Y (numpy, or tensors on their device);
    ``overwrite``: G is the caller's to overwrite (:func:`cholesky_shifted`).

    Raises
    ------
    ValueError
        If G_X + nεI is not positive definite.
    OverflowError
        If the coefficients are not finite.
    """
    ops = ops_of(G)
    cho = cholesky_shifted(G, shift, "G_X", overwrite=overwrite)
    return cho, checked(ops, ops.cho_solve(cho, Y), "the coefficients (G_X + nεI)⁻¹Y", _RESCALE)


class ConditionalMeanEmbedding(RegressorMixin, _OperatorEstimator):
    """Conditional mean embedding Û_{Y|X} = Ψ (G_Φ + nεI)⁻¹ Φᵀ (Mollenhauer et al., 2020, §4.3,
    Tikhonov ε).

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
    .. [1] Mollenhauer et al. (2020), §4.3 (conditional mean embedding, Tikhonov-regularised).

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

    @forgets_previous_fit
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

        eps = self._alpha()  # before the fit goes to an executor
        check_device(self, X, y)
        if any_dask(X, y):
            from .._dask.operators import fit_cme_dask

            fit = fit_cme_dask(self, X, y)
            self.kernel_x_, self.kernel_y_ = fit.kernel, fit.kernel_y
            self._y_1d = fit.y_1d
            self.n_features_in_ = fit.n_features
            return self._landmarks_only(fit.step, eps)
        self.kernel_x_ = as_rkhs_kernel(self.kernel_x, self.kernel_x_params, "kernel_x")
        self.kernel_y_ = as_rkhs_kernel(self.kernel_y, self.kernel_y_params, "kernel_y")
        self.torch_fit_ = False
        if use_torch(self, X, y):  # torch executor (asymkern._torch)
            return self._fit_torch(X, y, eps)
        if y is None:
            raise ValueError("ConditionalMeanEmbedding requires y to be passed, but the target y "
                             "is None (paired samples y of shape (n_samples, d_y) are needed)")
        X = _fit_X(self, X, self.kernel_x_)  # CSR when kernel_x accepts sparse input
        Y2, self._y_1d = _second_view(y, X.shape[0], self.kernel_y_)
        Yd = Y2.toarray() if sp.issparse(Y2) else Y2  # E[Y | x] is dense
        n = X.shape[0]
        step = landmark_step(self, self.kernel_x_, X, Y=Yd)  # None: the exact estimator
        self.landmarks_ = None if step is None else step.idx
        self.X_fit_, self.Y_fit_ = X, Y2
        if step is not None:
            self._set_landmark_model(step, eps)
            F = landmark_evaluate(self.kernel_x_, step.L, step.T, X)
            self.operator_ = EmpiricalOperator(
                self.kernel_x_, X, self.kernel_y_, Y2,
                _LandmarkRepresentation(F, self._M, step.T, step.idx, "in"))
            return self
        # the whole exact fit, before G_X
        _check_fit_memory(X, Yd, (X, Y2) if Yd is Y2 else (X, Y2, Yd))
        G = gram(self.kernel_x_, X, what="the Gram matrix G_X of X")
        cho, self.dual_coef_ = _cme_coefficients(G, Yd, n * eps)
        B = CholeskyInverse(G, n * eps, "G_X", source=(self.kernel_x_, X), factor=cho)
        self.operator_ = EmpiricalOperator(self.kernel_x_, X, self.kernel_y_, Y2, B)
        self.operator_._cache["in"] = G
        return self

    def _fit_torch(self, X, y, eps: float):
        """The fit of :meth:`fit` on the torch backend: the samples as float64 copies on the
        device (:func:`asymkern._torch.operators.operator_samples`), then the numpy fit's steps
        on them (the landmark step of :mod:`asymkern._shared.operators`, or G_X and the
        Cholesky solve); ``_torch_state`` keeps what ``predict`` / ``weights`` /
        ``expectation`` need on the device."""
        from .._torch.operators import operator_samples

        nystrom = self.n_landmarks is not None or not isinstance(self.landmarks, str)
        if not nystrom:
            _check_landmark_options(self, n_rows(X))  # the exact estimator: validates the options
        d = operator_samples(self, X, y, self.kernel_x_, self.kernel_y_)  # nothing n×n
        ops = ops_of(d.X)
        n = int(d.X.shape[0])
        self._sparse_ok = False
        self._y_1d = getattr(y, "ndim", np.ndim(y)) == 1
        self.torch_fit_ = True
        if nystrom:  # as after a Dask fit: landmarks and small matrices only
            step = landmark_step(self, self.kernel_x_, d.X, Y=d.Y)
            assert step is not None  # landmarks were asked for
            self._torch_state = DeviceState(device=d.device, dtype=d.dtype,
                                            kernel=self.kernel_x_, X=step.L)
            return self._landmarks_only(step, eps)
        _check_fit_memory(d.X, d.Y, (d.X, d.Y))  # as on the numpy path: before G_X
        G = gram(self.kernel_x_, d.X, what="the Gram matrix G_X of X")
        cho, coef = _cme_coefficients(G, d.Y, n * eps, overwrite=True)  # keeps the factor only
        del G
        self._torch_state = DeviceState(device=d.device, dtype=d.dtype, kernel=self.kernel_x_,
                                        X=d.X, coef=coef, cho=cho)
        self.landmarks_ = None
        self.X_fit_, self.Y_fit_ = X64, Y64 = d.host()  # the host copies of the samples
        B = CholeskyInverse.lazy((n, n), (self.kernel_x_, X64), shift=n * eps, name="G_X")
        self.operator_ = EmpiricalOperator(self.kernel_x_, X64, self.kernel_y_, Y64, B)
        self.dual_coef_ = ops.to_host(coef) if d.as_numpy else coef
        return self

    def _set_landmark_model(self, step, eps: float):
        """Landmark fit from the reduced matrices of the landmark ``step`` (a
        :class:`~asymkern._shared.operators.LandmarkStep`, of every executor); returns self."""
        check_finite_output(step.A, "the landmark Gram matrix FᵀF", _RESCALE)
        L, T = step.L_host, step.T
        self.landmark_points_ = (sp.csr_matrix(L, dtype=np.float64) if sp.issparse(L)
                                 else np.asarray(L, dtype=np.float64))
        M = landmark_inverse(step.A, step.n, eps)
        self._T, self._M = T, M
        self.dual_coef_ = check_finite_output(T @ (M @ step.FY), "the coefficients B_L K_Ln Y",
                                              _RESCALE)
        return self

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
        if use_torch(self, X):  # torch executor (asymkern._torch): on the fit's device
            from .._torch.operators import device_points

            state, Xn, back = device_points(self, X)
            K = gram(self.kernel_x_, state.X, Xn, "the kernel values k(x_i, x)",
                     "rescale X like the training data")
            return back(ops_of(Xn).cho_solve(state.cho, K), host64=True)
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
        """E[g(Y) | X = x] ≈ Σ_i β_i(x) g(y_i) = β(x)ᵀ g(Y) (Mollenhauer et al., 2020, §4.3).

        The weights β(x) are real, so the estimate is linear in the values g(y_i): complex
        values are kept, E[g | x] = β(x)ᵀ Re g(Y) + i β(x)ᵀ Im g(Y) (e.g. the conditional
        characteristic function E[e^{i t Y} | X = x] with g(y) = exp(i t y)), on every
        executor (numpy, torch) and for the landmark (Nyström) estimator alike; they are never
        cast to real.

        Parameters
        ----------
        func : callable
            Maps the (n, d_y) training outputs ``Y_fit_`` (a numpy array) to (n,) or (n, p)
            finite real or complex values.
        X : array-like of shape (n_points, n_features)
            Conditioning points.

        Returns
        -------
        ndarray of shape (n_points,) or (n_points, p)
            The conditional expectations: float64, or complex128 when ``func`` returns complex
            values (tensors on the fit's device for tensor X).

        Raises
        ------
        ValueError
            If ``func`` returns values of another length than the training samples, of more
            than two dimensions, or not finite.
        TypeError
            If ``func`` returns values that are not numbers.
        """
        self._check_keeps_samples()
        vals = np.asarray(func(self.Y_fit_))
        n = self.Y_fit_.shape[0]
        if vals.dtype.kind not in "biufc":
            try:  # e.g. an object array of Python numbers
                vals = vals.astype(np.complex128 if any(isinstance(v, complex) for v in
                                                        vals.ravel()) else np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"func returned values of dtype {vals.dtype}; expected real "
                                "or complex numbers") from exc
        if vals.ndim not in (1, 2) or vals.shape[0] != n:
            raise ValueError(f"func returned values of shape {vals.shape}; expected ({n},) or "
                             f"({n}, p), one row per training sample")
        if not np.all(np.isfinite(vals)):
            raise ValueError("func returned non-finite values")
        one_d = vals.ndim == 1
        V = vals.reshape(n, -1)
        p = V.shape[1]
        is_complex = vals.dtype.kind == "c"
        # β(x) is real: the real and imaginary parts are two real right-hand sides
        V = np.hstack([V.real, V.imag]) if is_complex else V
        V = np.asarray(V, dtype=np.float64)
        if use_torch(self, X):  # torch executor: β(x)ᵀ g = k(x, X)(G + nεI)⁻¹ g on the device
            from .._torch.operators import device_points

            state, Xn, back = device_points(self, X)
            ops = ops_of(Xn)
            Vd = ops.from_host(V, Xn, np.float64)
            out = back(evaluate(self.kernel_x_, Xn, state.X, ops.cho_solve(state.cho, Vd),
                                "the conditional expectations"), host64=True)
        else:
            out = self.weights(X).T @ V
        if is_complex:
            out = out[:, :p] + 1j * out[:, p:]
        return out[:, 0] if one_d else out

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
        if getattr(self, "landmarks_", None) is not None:
            out = _landmark_predict(self, X, self.kernel_x_, self.landmark_points_,
                                    self.dual_coef_)
        elif use_torch(self, X):  # torch executor (asymkern._torch): on the fit's device
            from .._torch.operators import device_points

            state, Xn, back = device_points(self, X)
            out = back(evaluate(self.kernel_x_, Xn, state.X, state.coef))
        else:
            out = _predict_exact(self, X, self.kernel_x_, self.X_fit_, self.dual_coef_)
        return out[:, 0] if self._y_1d else out

    def score(self, X, y, sample_weight=None) -> float:
        """R² of ``predict(X)`` against y (scikit-learn's ``RegressorMixin.score``), computed on
        the host (predictions on a GPU, and y or weights given as tensors, are copied there).

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
        from sklearn.metrics import r2_score
        from sklearn.utils.validation import _num_samples

        from .._dispatch import host_copy

        sw = as_weights(host_copy(sample_weight, "sample_weight"), _num_samples(X),
                        "sample_weight", "sample")
        return float(r2_score(host_copy(y, "y"), host_copy(self.predict(X)), sample_weight=sw))


__all__ = ["ConditionalMeanEmbedding"]
