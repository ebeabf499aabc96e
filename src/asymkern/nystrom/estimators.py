"""Nyström kernel machines with four ways to use the landmarks (Li, Liu and Zhang).

``mode``:

* ``'lla'`` — low-rank linearisation (§II-E, problem (4)): map data by t(z) = Aᵀ⟨C_H, Φ(z)⟩ and
  solve the *linear* problem with scikit-learn's linear solvers (Ridge / libsvm linear kernel /
  LinearSVC / an SVD for PCA). f_LLA = B_H ŵ.
* ``'gsa'`` — Gram-matrix substitution (§II-D, problem (3)) computed through LLA's training
  (Algorithm 1, Corollary 3 / eq. (20)): α̂ = G^† ŵ with G^† = Gᵀ(GGᵀ)^†, so it costs one extra
  n×m product; f_GSA = X_H α̂ and predictions use the exact kernel against all training points
  (Algorithm 1's test phase: t = (G^†)ᵀ⟨X_H, Φ(z)⟩ fed to the same linear model).
  Of the many minimisers of problem (3) (they differ by null(G)) this is the minimum-norm one,
  the paper's choice; with ``sample_weight`` W it is the one of least αᵀW⁻¹α (so an integer
  weight equals repeating the row), and with ``fit_intercept`` the minimum-norm one of the
  centred problem (1ᵀα = 0). Each such choice fits the training data alike but gives other
  predictions on new points. ``NystromKernelRidge(gsa_solver='woodbury')`` solves (3)
  directly with Woodbury solves instead (same α̂; a test checks it).
* ``'ncr'`` — Nyström computational regularisation (§II-F): f restricted to span(C_H). For KRR
  the closed form (11) β = (K_mn K_nm + λ₀K_mm)^† K_mn y, which equals A ŵ with LLA's weights on
  the full standard basis (Proposition 2; M shares K_mm's null space). Every machine computes
  NCR so, from the features' Gram matrix: forming M + λ₀K_mm and its pseudo-inverse carried
  M's rounding amplified by cond(K_mm).
* ``'spa'`` — subspace projection (§III-A, problem (6)): the dual problem solved with the
  projected Gram matrix K̃ = FFᵀ (for the SVM an n×n precomputed kernel — a reference, not a
  scalable path; for KRR a Woodbury solve).
* ``'exact'`` — the non-approximated machine on the full n×n kernel (reference for the
  approximation errors (15), (19)); O(n²) memory.

Fitted attributes common to all modes: ``basis_`` (a :class:`~asymkern.nystrom.NystromBasis`,
None for exact), ``landmark_indices_`` (None for a Gaussian sketch), ``landmarks_`` (landmark
points, None for a sketch; rows of K for ``kernel='precomputed'``), ``n_landmarks_`` (m used,
after clipping to n_samples), ``subspace_dim_``; ``coef_`` (ŵ, outputs × s, for lla/gsa),
``landmark_coef_`` (β with f = C_H β, m × outputs; lla/ncr/gsa/spa), ``dual_coef_`` (α with
f = X_H α — gsa, exact — or f = X̃_H α — spa; n × outputs), ``X_fit_`` (a copy of the training
data). Fitted coefficients are float64 (the basis A = V_s Σ_s⁻¹ and the solves are computed in
float64); predictions, decision values and transforms have the precision of the X they are given
(float32 for float32 X, float64 otherwise, whatever the training dtype).

**Dask inputs** (row-chunked dask X, y chunked like X's rows; see ``asymkern._dask.machines``):
``fit`` is a map-reduce — one kernel pass K(X_c, C) per chunk, m×m / s×s summaries combined
by a tree, the m×m solve on the client — and ``predict``/``transform``/``decision_function`` of
a dask array return a dask array computed chunk by chunk (numpy in, numpy out). Landmarks
(uniform, leverage, k-means for n ≤ 20000, row indices) are the in-memory ones for the same
``random_state``; the Gaussian sketch and ``mode='exact'`` (n×n) are refused. A Dask fit keeps
``X_fit_ = None`` (GSA: the training dask array, for its test phase) and n-sized attributes
(``dual_coef_`` of GSA/SPA) as lazy dask arrays chunked like X; pickling drops both, so a
pickled Dask-fitted model holds only landmarks and small matrices (a GSA model then predicts
through ``predict_lla`` only). ``NystromSVC`` gathers the features F (n×s) within
``max_dense_memory`` (libsvm/liblinear solve on all rows at once) and refuses past it.

**scikit-learn conventions**, common to the machines:

* ``n_landmarks`` larger than n_samples (and ``subspace_dim`` larger than the number of
  landmarks) is clipped with a :class:`~asymkern.exceptions.ClippedParameterWarning`;
  ``n_landmarks_`` / ``subspace_dim_`` record the values used. With ``landmarks`` an array
  of row indices, ``n_landmarks`` is ignored (m = the number of indices).
* ``gamma`` is the kernel width (exp(−gamma‖x − z‖²) for ``'rbf'``), applied by
  :func:`~asymkern.kernels.resolve_kernel`; None keeps the kernel's default. A Kernel
  instance passed as ``kernel`` is never modified (``clone`` / ``kernel__gamma`` work).
* ``kernel='precomputed'``: ``fit(K)`` with K the (n, n) training kernel matrix and
  ``predict(K_test)`` / ``transform`` with K_test = [κ(z_i, x_j)] of shape
  (n_test, n_train), as ``SVC``/``KernelRidge``; landmarks are row/column indices of K
  (``'uniform'`` — the same indices as a fit on the data with the same ``random_state`` —
  or an index array; ``'kmeans'``, ``'leverage'``, ``'gaussian'`` need the data and are
  refused), K_nm = K[:, idx], K_mm = K[idx][:, idx]. Tagged ``pairwise``. K must be
  symmetric and positive semi-definite: in the landmark modes a K_mm with an eigenvalue
  below −√ε·λ_max (beyond rounding; ε of X's dtype) is refused with a ``ValueError`` (the
  pseudo-inverse would drop its negative part and fit another kernel's machine); mode
  ``'exact'`` solves with K as given, as ``KernelRidge`` and ``SVC`` do.
* Sparse X (CSR) is accepted when the kernel accepts it (``kernel.accepts_sparse``:
  linear, poly, rbf, laplacian, cauchy) with landmarks ``'uniform'``, ``'leverage'`` or
  indices, and tagged accordingly.
* ``random_state``: None, an int or a ``RandomState`` (a numpy ``Generator`` is refused).
* Inputs are validated by :func:`~asymkern._validation.check_input` (``n_features_in_``,
  ``feature_names_in_``).
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    ClassNamePrefixFeaturesOutMixin,
    RegressorMixin,
    TransformerMixin,
)
from sklearn.utils.validation import check_is_fitted

from .._backend import ops_of
from .._dask import any_dask
from .._dispatch import host_copy
from .._shared.nystrom_basis import check_psd_kernel, fit_landmarks, row_step
from .._shared.nystrom_predict import (
    decision,
    full_times,
    host_model,
    kernel_row_bytes,
    label_index,
    landmark_times,
    rows_within,
    svc_values,
    training_model,
)
from .._torch import check_device, is_torch_tensor, use_torch
from .._validation import (
    array_nbytes,
    as_data,
    available_if_explained,
    check_bool,
    check_finite_output,
    check_input,
    check_n_components,
    check_nonnegative_weights,
    check_positive,
    check_random_state,
    check_regression_targets,
    clip_count,
    forgets_previous_fit,
    host_score,
    like_input,
    ndim_of,
    why_no_probability,
)
from ..config import check_memory
from ..kernels import resolve_kernel
from ..kernels.base import Kernel
from ._algebra import (
    check_finite,
    features,
    pca_exact,
    pca_nystrom,
    pinv_factor_bytes,
    ridge_exact,
    ridge_nystrom,
    svc_nystrom,
)

MODES = ("gsa", "lla", "ncr", "spa", "exact")


class _NystromBase(BaseEstimator):
    """Shared fitting of the Nyström basis (Algorithm 1 steps 1–4)."""

    def _check_common(self, *arrays) -> str:
        """The checks every machine runs before its fit goes to an executor (the same error
        on numpy, torch and dask inputs): ``mode``, ``device``, NCR's full basis, and no
        precomputed kernel on dask inputs; returns the mode."""
        if not isinstance(self.mode, str) or self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; expected one of {MODES}")
        check_device(self, *arrays)
        self._ncr_requires_full()
        if any_dask(*arrays):
            self._refuse_dask_precomputed()
        return self.mode

    def _precomputed(self) -> bool:
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    def _kernel(self):
        """The kernel used: ``kernel``/``kernel_params`` with the estimator-level ``gamma``
        (:func:`~asymkern.kernels.resolve_kernel`; a Kernel instance is never modified).
        ``kernel='precomputed'``: the columns of a given kernel matrix at the landmark indices."""
        if self._precomputed():
            if self.gamma is not None or self.kernel_params:
                raise ValueError("kernel='precomputed' takes the kernel matrix as X; leave "
                                 "gamma=None and kernel_params=None")
            return _PrecomputedColumns(getattr(self, "landmark_indices_", None))
        fitted = vars(self).get("_fitted_kernel")  # the fit's (a copy: later set_params on
        if fitted is not None:  # the caller's Kernel instance cannot change the model)
            return fitted
        return resolve_kernel(self.kernel, self.kernel_params, gamma=self.gamma)

    def _refuse_dask_precomputed(self):
        if self._precomputed():
            raise NotImplementedError("kernel='precomputed' is not available on dask inputs; "
                                      "pass the kernel matrix as a numpy array")

    def _accepts_sparse(self) -> bool:
        if self._precomputed():
            return False
        try:
            return bool(self._kernel().accepts_sparse)
        except Exception:  # an invalid kernel is reported by fit, not by the tags
            return False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # the torch backend (device set) needs dense input
        tags.input_tags.sparse = self._accepts_sparse() and getattr(self, "device", None) is None
        tags.input_tags.pairwise = self._precomputed()
        return tags

    def _landmark_count(self, n: int):
        """n_landmarks clipped to n_samples (``ClippedParameterWarning``) for the samplers;
        the number of indices for explicit landmark indices."""
        if isinstance(self.landmarks, str):
            return clip_count(self.n_landmarks, n, "n_landmarks",
                              "the number of samples n_samples", owner=type(self).__name__)
        return np.asarray(self.landmarks).size

    def _subspace_request(self, m: int):
        if self.subspace_dim is None:
            return None
        return clip_count(self.subspace_dim, m, "subspace_dim",
                          "the number of landmarks n_landmarks_", owner=type(self).__name__)

    def _validate_fit_X(self, X):
        """check_input (``n_features_in_``, ``feature_names_in_``); a private copy as ``X_fit_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n, d), or (n, n) when precomputed
            The training input.

        Returns
        -------
        {ndarray, sparse matrix}
            A copy of the validated X.

        Raises
        ------
        MemoryBudgetError
            With ``kernel='precomputed'``, before the copy, when the copy of the n×n kernel
            matrix alone exceeds ``max_dense_memory`` (the fit's later checks count it too).
        """
        X = check_input(self, X, reset=True, name="X", allow_sparse=self._accepts_sparse())
        if self._precomputed():
            self._check_precomputed_fit(X.shape)
            n = int(X.shape[0])
            # the copy is n×n: checked before it is made (the caller's K is not ours to count),
            # with the row panel of the symmetry test that follows (_check_symmetric_gram: its
            # difference, whose abs numpy computes in place; up to another n×n array when
            # working_memory is large)
            panels = min(n, row_step(n, 0)) * n * X.dtype.itemsize
            check_memory(array_nbytes(X) + panels, f"{type(self).__name__}(kernel='precomputed')"
                         f" on {n} samples", "the data X with a kernel (no n×n matrix is then "
                         "held)", detail=f"the private copy of the {n}×{n} kernel matrix and "
                         "the panels of its symmetry test")
        return X.copy() if sp.issparse(X) else np.array(X, copy=True)

    def _held_kernel_bytes(self, X, X_fit=None) -> int:
        """Bytes of the fit's private copies of a precomputed kernel matrix.

        With ``kernel='precomputed'`` the fit holds the n×n training matrix (``X_fit_``, and on
        the torch executor with numpy input also its host copy) for its whole duration, beside
        everything its budget estimates count; a data matrix (n×d) is small and not counted.

        Parameters
        ----------
        X : array of shape (n, n)
            The fit's copy of the training input (numpy array or tensor).
        X_fit : array of shape (n, n), optional
            A second (host) copy, when it is another array.

        Returns
        -------
        int
            The bytes held; 0 unless ``kernel='precomputed'``.
        """
        if not self._precomputed():
            return 0
        return array_nbytes(X) + (array_nbytes(X_fit) if X_fit is not None and X_fit is not X
                                  else 0)

    def _check_precomputed_fit(self, shape):
        """``kernel='precomputed'``: no gamma / kernel_params, and a square training matrix
        (shared by the numpy and torch executors)."""
        self._kernel()  # refuses gamma / kernel_params
        if shape[0] != shape[1]:
            raise ValueError("kernel='precomputed': X must be the square (n_samples, "
                             f"n_samples) training kernel matrix, got shape {tuple(shape)}")

    def _precomputed_landmarks(self, n: int, m, rng):
        """``kernel='precomputed'``: the landmark indices into K ('uniform', drawn from ``rng``
        as for the data, or an index array) and the kernel of their columns; the samplers that
        need the data points are refused. Shared by the numpy and torch executors."""
        from .._shared.nystrom_basis import landmark_request
        from ..landmarks import select_landmarks

        landmarks = self.landmarks
        if isinstance(landmarks, str) and landmarks != "uniform":
            raise ValueError(f"kernel='precomputed' supports landmarks='uniform' or an "
                             f"array of row indices, not {landmarks!r} (it needs the data "
                             "points or a sketch over them)")
        _, _, idx = landmark_request(landmarks, m if isinstance(landmarks, str) else None, n)
        if idx is None:
            idx = select_landmarks(None, m, "uniform", random_state=rng, n_samples=n)
        return idx, _PrecomputedColumns(idx)

    def _fit_basis(self, X, X_fit=None):
        """The landmarks and basis of a fit on X's executor (Li, Liu and Zhang, Algorithm 1
        steps 1–3; :func:`~asymkern._shared.nystrom_basis.fit_landmarks`), recorded on the
        estimator; returns the rows of K_nm. ``X_fit``: a host copy of X for the basis."""
        n = X.shape[0]
        m = self._landmark_count(n)
        # measured peak ≤ 3 n×m blocks + 5 m×m matrices; NystromKernelPCA's thin SVD of the
        # n×s features (s ≤ m: their copy, U and gesdd's ~5 s² workspace) runs beside the
        # basis (A, K_mm), 3 m×m more (n=3000, m=800: traced peak 0.95 of the estimate)
        mm = 8 if isinstance(self, NystromKernelPCA) else 5
        held = self._held_kernel_bytes(X, X_fit)
        if held:  # precomputed: the landmark "points" (landmarks_) are m rows of K, m×n
            held += array_nbytes(X) // max(n, 1) * m
        check_memory(held + 8 * (3 * n * m + mm * m * m), f"{type(self).__name__}(n_landmarks="
                     f"{m}) on {n} samples", "fewer landmarks (n_landmarks)",
                     detail=(f"K_nm ({n}×{m}) three times and K_mm ({m}×{m}) {mm} times"
                             + (f", beside the copy of the {n}×{n} precomputed kernel matrix "
                                f"and its {m} landmark rows" if held else "")))
        rng = check_random_state(self.random_state, "random_state")
        landmarks = self.landmarks
        if self._precomputed():  # landmarks are row/column indices into the kernel matrix
            landmarks, kern = self._precomputed_landmarks(n, m, rng)
        else:
            kern = self._fitted_kernel = self._kernel()
        if sp.issparse(X) and isinstance(landmarks, str) and landmarks in ("kmeans", "gaussian"):
            raise TypeError(f"landmarks={self.landmarks!r} is not available for sparse X; "
                            "use 'uniform', 'leverage' or row indices (or densify X)")
        rows = fit_landmarks(check_psd_kernel(kern), X, landmarks,
                             m if isinstance(landmarks, str) else None, rng,
                             subspace_dim=self._subspace_request, rcond=self.rcond,
                             X_fit=X_fit)
        self._set_basis(rows.basis)
        return rows

    def _set_basis(self, b) -> None:
        """Record a fitted Nyström basis: ``basis_``, ``landmark_indices_``, ``landmarks_``,
        ``n_landmarks_`` and ``subspace_dim_``."""
        self.basis_ = b
        self.landmark_indices_ = b.indices
        self.landmarks_ = b.centers
        self.n_landmarks_ = b.n_landmarks
        self.subspace_dim_ = b.subspace_dim

    def _keep_dask(self, fit):
        """Set the fitted attributes from a Dask fit (:class:`asymkern._dask.machines.
        DaskMachineFit`); returns self."""
        self._set_basis(fit.basis)
        self.X_fit_ = fit.X_fit
        self.n_features_in_ = fit.n_features
        self._fit_dtype = fit.dtype
        self.dask_fit_ = True
        self.coef_ = fit.coef
        self.landmark_coef_ = fit.landmark_coef
        self.dual_coef_ = fit.dual
        if fit.intercept is not None:
            self.intercept_ = fit.intercept
        if fit.y_1d is not None:
            self._y_1d = fit.y_1d
        if fit.eigenvalues is not None:
            self.eigenvalues_ = fit.eigenvalues
            self.n_components_ = fit.n_components
        if fit.svm is not None:
            self.estimator_ = fit.svm
            self.classes_ = fit.svm.classes_
            if hasattr(fit.svm, "n_iter_"):
                self.n_iter_ = fit.svm.n_iter_
        return self

    def _no_basis(self, X):
        n = X.shape[0]  # mode='exact': the n×n kernel, its centred copies and the solver's copy
        # (+ the fit's held copy of a precomputed kernel matrix, X_fit_, beside them)
        check_memory(self._held_kernel_bytes(X) + 8 * n * n * 4,
                     f"{type(self).__name__}(mode='exact') on {n} samples",
                     "a Nyström mode ('lla', 'gsa', 'ncr', 'spa')")
        self.basis_ = None
        self.landmark_indices_ = None
        self.landmarks_ = None
        self.n_landmarks_ = None
        self.subspace_dim_ = X.shape[0]
        if not self._precomputed():  # the fit's kernel, kept (as _fit_basis does)
            self._fitted_kernel = self._kernel()

    def _check_X(self, X, name="X"):
        """Prediction input: ``n_features_in_`` / feature names checked against fit."""
        if not sp.issparse(X) and ndim_of(X) == 1:  # "reshape your data" first
            as_data(X, name)
        return check_input(self, X, reset=False, name=name, allow_sparse=self._accepts_sparse())

    def _use_dask(self, X) -> bool:
        """Dask executor for dask inputs, and for in-memory inputs of a model that still holds
        lazy dask attributes (the training data and ``dual_coef_`` of a live GSA/SPA fit on
        dask). Every other model, an unpickled Dask-fitted one included, predicts numpy input
        in memory (numpy in → numpy out, dask not needed)."""
        from .._dask import is_dask_array

        if any_dask(X) and is_torch_tensor(getattr(self, "X_fit_", None)):
            raise ValueError(
                f"this {type(self).__name__} was fitted on torch tensors, whose fitted arrays "
                "live on their device; predict torch tensors or numpy arrays (X.compute()), or "
                "fit it on dask arrays (or numpy with device=...) to predict dask arrays")
        return any_dask(X) or any(is_dask_array(getattr(self, key, None))
                                  for key in ("X_fit_", "dual_coef_"))

    def _train_dtype(self) -> np.dtype:
        """The training data's dtype (the fitted model's); a Dask fit keeps
        it as ``_fit_dtype`` (its ``X_fit_`` is None or lazy)."""
        if getattr(self, "dask_fit_", False):
            return np.dtype(self._fit_dtype)
        return np.dtype(ops_of(self.X_fit_).dtype(self.X_fit_))  # numpy or a tensor

    def _check_exact_available(self) -> None:
        """GSA's / exact test phase reads all training points: clear refusal when a Dask fit
        was unpickled without them (``__getstate__`` drops the lazy training data)."""
        if getattr(self, "dask_fit_", False) and self.X_fit_ is None:
            raise ValueError(
                f"{type(self).__name__}(mode={self.mode!r}) was fitted on dask inputs and then "
                "unpickled: GSA's test phase uses the kernel against all training points "
                "(Algorithm 1), which a pickled Dask-fitted model does not carry; use "
                "predict_lla / the LLA scores (the same training), or refit")

    def __getstate__(self):
        """Pickle without dask objects: a Dask-fitted model keeps only landmarks and small
        matrices; its lazy n-sized attributes (``dual_coef_`` of GSA/SPA) and the training
        data GSA's test phase reads (``X_fit_``) are dropped."""
        state = dict(super().__getstate__())  # a copy: Python ≥ 3.11 hands out __dict__
        from .._dask import is_dask_array

        for key in ("X_fit_", "dual_coef_"):
            if is_dask_array(state.get(key)):
                state[key] = None
        return state

    def _fitted_input(self, X, approach: str):
        """The fitted :class:`~asymkern._shared.nystrom_predict.NystromModel` on its executor
        (recorded by a torch fit; built from the fitted attributes of a numpy one), X checked
        and on that executor (:func:`asymkern._torch.machines.fitted_input` moves it to the
        fit's device and dtype), and whether the outputs are numpy; ``approach`` 'gsa' or
        'exact' (Algorithm 1's test phase) needs the training points."""
        check_is_fitted(self, "X_fit_")
        if use_torch(self, X):
            from .._torch.machines import fitted_input

            fitted = fitted_input(self, X)
        else:
            fitted = host_model(self), self._check_X(X), True
        if approach in ("gsa", "exact"):
            self._check_exact_available()
        return fitted

    def _values(self, X, approach: str, what: str):
        """f(X) = K(X, X_fit)α + b (``approach`` 'gsa' or 'exact': Algorithm 1's test phase)
        or K(X, C)β + b of Li, Liu and Zhang (Nyström kernel machines, Algorithm 1), float64
        on the fit's executor, checked finite (``what`` names them); with the model and
        whether X was numpy."""
        model, Z, as_numpy = self._fitted_input(X, approach)
        out = decision(model, Z, approach in ("gsa", "exact"), model.ridge_dtype)
        return check_finite(model.ops, out, what, "rescale X like the training data"), model, \
            as_numpy

    @staticmethod
    def _output(out, model, as_numpy: bool, X):
        """``out`` (finite float64) in the precision of the input ``X``
        (:func:`~asymkern._validation.input_precision`): numpy for numpy input, else the
        executor's array; refused with an ``OverflowError`` when a value lies beyond float32's
        range (3.4e38) for float32 input rather than returned as infinity."""
        cast = like_input(out, X, "pass float64 input or rescale the targets")
        return model.ops.to_host(cast) if as_numpy else cast

    def _ncr_requires_full(self):
        if self.mode == "ncr" and self.subspace_dim is not None:
            raise ValueError("mode='ncr' restricts f to span(C_H) and uses the full standard "
                             "Nyström basis; leave subspace_dim=None")


_RESCALE = "rescale X (e.g. StandardScaler) or change the kernel parameters"


class _PrecomputedColumns(Kernel):
    """``kernel='precomputed'``: the "points" are rows of a kernel matrix (K or K_test) and
    κ(row, landmark j) is the row's entry in column ``indices[j]``; the second argument (the
    landmark rows) only fixes the shapes. Flagged symmetric PSD: the user's K must be."""

    name = "precomputed"

    def __init__(self, indices=None):
        self.indices = indices

    def _raw(self, X, Z):
        if self.indices is None:
            raise ValueError("kernel='precomputed' is evaluated through the landmark indices "
                             "of a fitted machine")
        if sp.issparse(X):
            X = X.toarray()
        return np.asarray(X[:, self.indices], dtype=np.float64)

    def __eq__(self, other) -> bool:
        return (isinstance(other, _PrecomputedColumns)
                and np.array_equal(np.asarray(self.indices), np.asarray(other.indices)))

    def __hash__(self) -> int:
        return hash(("precomputed", None if self.indices is None else
                     tuple(np.asarray(self.indices).tolist())))


_FITTED_ARRAYS = ("landmarks_", "coef_", "landmark_coef_", "dual_coef_", "intercept_",
                  "eigenvalues_")


def _finite_fit(est):
    """Fitted coefficients must be finite (overflow inside the solve is reported, not kept);
    the test runs where each array lives (numpy or the torch device). The fitted arrays then
    live where the training data were given (the GPU guide's rule): tensors on their device
    after a fit on tensors (the landmark-sized ones are computed on the host), numpy arrays
    after a fit on numpy input (``device=`` or not)."""
    for name in _FITTED_ARRAYS[1:]:
        val = getattr(est, name, None)
        if val is not None:
            check_finite(ops_of(val), val, f"the fitted {name}", _RESCALE)
    like = est.X_fit_ if is_torch_tensor(est.X_fit_) else None
    for name in _FITTED_ARRAYS:
        val = getattr(est, name, None)
        if like is not None and isinstance(val, np.ndarray) and val.dtype.kind == "f":
            setattr(est, name, ops_of(like).from_host(val, like, val.dtype))
        elif like is None and is_torch_tensor(val):
            setattr(est, name, ops_of(val).to_host(val).copy())
    return est


class _Training:
    """The training data of a fit on its executor: numpy, or torch for tensor input or
    ``device`` set (sets ``torch_fit_``; a refit on numpy input without ``device`` is a numpy
    model again). Written once against the executor's primitives (``ops``); the torch parts
    (device placement, tensor input checks, the device copy of X, the fitted device model)
    are primitives of :mod:`asymkern._torch.machines`.

    Parameters
    ----------
    est : NystromKernelRidge, NystromKernelPCA or NystromSVC
    X : array-like, sparse matrix or tensor of shape (n, d)
        The training samples (validated; the (n, n) Gram matrix when precomputed).
    *others : array-like, tensor or None
        The other inputs (targets, weights; a tensor among them picks torch and its device).

    Attributes
    ----------
    X : array of shape (n, d)
        A private copy of X on the executor (never the caller's memory).
    X_fit : ndarray, sparse matrix or tensor
        What the model keeps as ``X_fit_`` (a numpy copy for numpy input).
    ops : ArrayOps
        The executor's primitives.
    as_numpy : bool
        Whether X was numpy (the fitted arrays are then numpy).
    n : int
    dtype : numpy.dtype
    rows : LandmarkRows or None
        The rows of K_nm (after :meth:`landmarks`).
    """

    def __init__(self, est, X, *others):
        est.dask_fit_ = False
        est.torch_fit_ = use_torch(est, X, *others)
        self.est, self.rows, self.as_numpy = est, None, True
        if est.torch_fit_:
            from .._torch.machines import training_input

            self.as_numpy, self.X = training_input(est, X, *others)
        else:
            self.X = est._validate_fit_X(X)
        self.ops = ops_of(self.X)
        self.n = int(self.X.shape[0])
        self.dtype = self.ops.dtype(self.X)
        if est._precomputed():
            _check_symmetric_gram(self.X, self.dtype)
        self.X_fit = self.out(self.X)

    @staticmethod
    def host(a, name: str):
        """A tensor input (targets, weights) on the host; other inputs unchanged. A sparse
        tensor is refused naming ``name``."""
        return host_copy(a, name)

    def out(self, a):
        """A fitted array as the model keeps it: a numpy copy of a tensor for numpy input
        (never the memory of the device state)."""
        return ops_of(a).to_host(a).copy() if self.as_numpy and is_torch_tensor(a) else a

    def gram(self):
        """The n×n kernel matrix K(X, X) in float64 on the executor, checked finite (a copy of
        a precomputed K: the caller may write to it)."""
        if not self.est._precomputed():
            K = self.ops.astype(self.ops.kernel_matrix(self.est._kernel(), self.X).to_dense(),
                                np.float64)
        else:
            K = self.ops.empty(tuple(self.X.shape), self.X, np.float64)
            K[:] = self.X
        return check_finite(self.ops, K, "the kernel matrix of X", _RESCALE)

    def landmarks(self, est):
        """The landmarks and basis (recorded on ``est``) and the rows of K_nm."""
        self.rows = est._fit_basis(self.X, self.X_fit if self.as_numpy else None)
        return self.rows

    def features(self, A, what: str):
        """F = K_nm A (n × s, float64 on the executor), checked finite (``what`` names it);
        a sketch's formed K S is released."""
        F = check_finite(self.ops, features(self.rows, A), what, _RESCALE)
        self.rows.release()
        return F

    def device_state(self, **state):
        """The fitted model of a torch fit on its device (what its predictions read,
        :func:`asymkern._shared.nystrom_predict.training_model`); None for numpy (its model
        is built from the fitted attributes when predicting)."""
        if not self.est.torch_fit_:
            return None
        return training_model(self.est, self.X, self.rows, **state)


def _check_symmetric_gram(K, dtype) -> None:
    """``kernel='precomputed'``: refuse a training matrix that is not symmetric.

    The machines of Li, Liu and Zhang need the Gram matrix K = ⟨X_H, X_H⟩ of a symmetric
    positive semi-definite kernel (§II-A); an asymmetric K would otherwise be used as it is in
    some places (K_nm = K[:, idx], the exact machine's solve) and symmetrised silently in
    others (K_mm = (K_mm + K_mmᵀ)/2, the exact kernel PCA). Rounding is tolerated:
    max |K − Kᵀ| ≤ √eps·max |K| (eps of K's dtype: 1.5e-8 in float64, 3.5e-4 in float32),
    far above what forming a symmetric kernel leaves and far below an actual asymmetry.
    Checked by row blocks within ``working_memory`` on K's executor (numpy or torch).

    Parameters
    ----------
    K : array of shape (n, n)
        The training kernel matrix (numpy array or tensor; square, finite: already checked).
    dtype : numpy dtype
        K's dtype (the tolerance).

    Raises
    ------
    ValueError
        If K is not symmetric to that tolerance (naming ``X``, the argument it came as).
    """
    n = int(K.shape[0])
    step = row_step(n, 0)
    gap = top = 0.0
    for a in range(0, n, step):
        block = K[a:a + step]
        gap = max(gap, float(abs(block - K[:, a:a + step].T).max()))
        top = max(top, float(abs(block).max()))
    eps = float(np.finfo(dtype if np.issubdtype(dtype, np.floating) else np.float64).eps)
    if gap > np.sqrt(eps) * top:
        raise ValueError(
            "kernel='precomputed': X must be the symmetric (n_samples, n_samples) training "
            "kernel matrix of a symmetric positive semi-definite kernel (the Nyström machines "
            f"of Li, Liu and Zhang); max |X - X.T| = {gap:.3g} beside max |X| = {top:.3g}. "
            "Pass a symmetric matrix, e.g. (K + K.T) / 2 if the asymmetry is rounding, or use "
            "NystromFeatureMap for an asymmetric kernel")


def _require_y(y, est):
    if y is None:
        raise ValueError(f"{type(est).__name__} requires y to be passed, but the target y is None")


# ======================================================================================= KRR
class NystromKernelRidge(RegressorMixin, _NystromBase):
    """Kernel ridge regression with Nyström landmarks (Li, Liu and Zhang; KRR = eq. (11)–(13)).

    Minimises ‖y − f(X) − b‖² + alpha‖f‖²_H (λ₀ = alpha = nλ in the paper's (1)), b = 0 unless
    ``fit_intercept``. ``solver='auto'`` solves LLA's ridge problem in Gram form,
    (AᵀK_mn K_nm A + alpha I) ŵ = AᵀK_mn y — exactly what ``Ridge`` solves on F = K_nm A, without
    forming F; ``solver='sklearn'`` calls ``sklearn.linear_model.Ridge`` on F (same predictions).
    With ``fit_intercept`` the features are centred (LLA/NCR/GSA/SPA) and the exact machine
    uses the centred kernel HKH; GSA keeps LLA's intercept.

    ``gsa_solver``: ``'eq20'`` (default) computes GSA through LLA's training, α̂ = G^†ŵ
    (Algorithm 1); ``'woodbury'`` solves the substituted dual (3) directly,
    α_W = (K̃ + alpha I)⁻¹y by the Woodbury identity (O(ns²), no n×n matrix), and returns its
    minimum-norm representative G^†G α_W — the same α̂. (Williams–Seeger's α_W itself differs
    from α̂ by (I − G^†G)y/alpha, a null(G) component that changes f_GSA = X_H α but not K̃α.)
    With ``sample_weight`` W the representative is the minimiser of least αᵀW⁻¹α (so an
    integer weight equals repeating the row), and with ``fit_intercept`` the minimum-norm one
    of the centred problem (G_c α = ŵ, 1ᵀα = 0): not the Euclidean minimum-norm α of the
    weighted or uncentred problem, whose predictions on new points differ.

    ``fit(X, y, sample_weight=None)``: weighted least squares Σᵢ wᵢ(yᵢ − f(xᵢ) − b)² +
    alpha‖f‖²_H in every mode (lla, ncr, gsa, spa, exact); an integer weight equals repeating
    the row (same landmarks), a zero weight equals dropping it. Not on dask inputs.

    Parameters
    ----------
    mode : {'lla', 'gsa', 'ncr', 'spa', 'exact'}, default 'lla'
        How the landmarks are used (module docstring).
    n_landmarks : int, default 100
        Number m of landmarks drawn by the sampler (clipped to n_samples with a
        ``ClippedParameterWarning``); ignored when ``landmarks`` is an index array.
    landmarks : str or array-like of int, default 'uniform'
        Landmark sampler ('uniform', 'gaussian', 'leverage' or 'kmeans'), or row indices of X.
    subspace_dim : int or None, default None
        Dimension s ≤ m of the landmark subspace; None = the numerical rank of K_mm.
    alpha : float, default 1.0
        Ridge regularisation λ₀ > 0.
    kernel : str, Kernel, callable or 'precomputed', default 'rbf'
        The kernel (see :func:`~asymkern.kernels.resolve_kernel`); ``'precomputed'`` takes
        kernel matrices (see the module docstring).
    gamma : float or None, default None
        Kernel width (exp(−gamma‖x − z‖²) for 'rbf'); None keeps the kernel's default.
    kernel_params : dict or None, default None
        Further parameters of a kernel given by name.
    fit_intercept : bool, default False
        Fit a bias b (centred features; HKH for the exact machine).
    solver : {'auto', 'sklearn'}, default 'auto'
        LLA's ridge problem in Gram form, or ``sklearn.linear_model.Ridge`` on F.
    gsa_solver : {'eq20', 'woodbury'}, default 'eq20'
        How GSA's α̂ is computed (see above).
    rcond : float or None, default None
        Eigenvalue cut-off of the pseudo-inverse of K_mm (λ ≤ rcond·λ_max is treated as zero;
        None = m·eps of X's dtype). Every mode honours it, NCR included: eq. (11) then runs
        on the directions of K_mm the cut keeps (a cut well above the rounding restricts f,
        as ``subspace_dim`` does for LLA).
    random_state : None, int or RandomState, default None
        Randomness of the landmark sampler (a numpy ``Generator`` is refused).
    device : None, str or torch.device, default None
        Run on the torch backend (:mod:`asymkern._torch.machines`; needs
        ``pip install "asymkern[torch]"``): 'cpu', 'cuda', 'cuda:0' or a ``torch.device``.
        Torch tensors in give tensors out on their device (dtype kept); numpy input with
        ``device`` set gives numpy arrays. On torch: modes 'lla', 'ncr', 'gsa' (``gsa_solver``
        'eq20' or 'woodbury'), 'spa' and 'exact' (the n×n machine, solved on the device),
        landmarks 'uniform', row indices, 'kmeans' or 'leverage' (chosen on the host) and
        'gaussian' (S drawn on the host, K·S streamed over row blocks on the device),
        ``kernel='precomputed'`` (a tensor or numpy Gram matrix; predict takes the
        (n_test, n_train) kernel matrix), sample weights, ``solver='auto'``;
        ``solver='sklearn'`` (scikit-learn's host ``Ridge``) raises ``NotImplementedError``.
        None (default) runs numpy, or torch for tensor inputs.

    Attributes
    ----------
    coef_ : ndarray of shape (n_outputs, s) or None
        ŵ, the linear model on the features F = K_nm A (lla, gsa).
    landmark_coef_ : ndarray of shape (m, n_outputs) or None
        β with f = C_H β (lla, ncr, gsa, spa).
    dual_coef_ : ndarray of shape (n, n_outputs) or None
        α with f = X_H α (gsa, exact) or f = X̃_H α (spa).
    intercept_ : float or ndarray of shape (n_outputs,)
        The bias b (0 unless ``fit_intercept``).
    basis_ : NystromBasis or None
        The landmark basis (None for ``mode='exact'``).
    landmark_indices_ : ndarray of int or None
        Row indices of the landmarks (None for a Gaussian sketch or ``'exact'``).
    landmarks_ : ndarray or None
        The landmark points (rows of K for ``'precomputed'``; None for a sketch).
    n_landmarks_ : int or None
        Number m of landmarks used (after clipping).
    subspace_dim_ : int
        Dimension s of the landmark subspace used (n for ``'exact'``).
    X_fit_ : ndarray or sparse matrix
        Copy of the training data (None after a Dask fit, except for GSA).
    n_features_in_ : int
        Number of features of X seen in fit.
    dask_fit_ : bool
        Whether the model was fitted on dask inputs.

    See Also
    --------
    NystromSVC : Nyström support vector classification.
    NystromKernelPCA : Nyström kernel PCA.
    approximation_error : ‖f̂ − f*‖_H of a fitted machine against the exact one.
    sklearn.kernel_ridge.KernelRidge : Exact kernel ridge regression.

    Notes
    -----
    scikit-learn conventions common to the Nyström machines (clipping, ``gamma``,
    ``kernel='precomputed'``, sparse input, ``random_state``, validation): see the module
    docstring. scikit-learn's common checks pass at default parameters
    (tests/test_nystrom_sklearn.py).

    References
    ----------
    .. [1] W. Li, M. Liu and D. Zhang, "Geometric Interpretation of Running Nyström-Based Kernel
       Machines and Error Analysis".

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.nystrom import NystromKernelRidge
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (200, 1))
    >>> y = np.sin(X[:, 0])
    >>> krr = NystromKernelRidge(n_landmarks=20, alpha=1e-3, gamma=0.5, random_state=0)
    >>> krr = krr.fit(X, y)
    >>> krr.predict(X[:3]).shape
    (3,)
    >>> bool(krr.score(X, y) > 0.99)
    True
    """

    def __init__(self, mode="lla", n_landmarks=100, landmarks="uniform", subspace_dim=None,
                 alpha=1.0, kernel="rbf", gamma=None, kernel_params=None, fit_intercept=False,
                 solver="auto", gsa_solver="eq20", rcond=None, random_state=None, device=None):
        self.mode = mode
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.subspace_dim = subspace_dim
        self.alpha = alpha
        self.kernel = kernel
        self.gamma = gamma
        self.kernel_params = kernel_params
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.gsa_solver = gsa_solver
        self.rcond = rcond
        self.random_state = random_state
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    @forgets_previous_fit
    def fit(self, X, y, sample_weight=None):
        """Fit the machine of ``mode`` on X (n × d) and targets y (n,) or (n, outputs).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n, d)
            Training data (the (n, n) kernel matrix with ``kernel='precomputed'``).
        y : array-like of shape (n,) or (n, n_outputs)
            Targets.
        sample_weight : array-like of shape (n,), optional
            Non-negative weights: weighted least squares Σᵢ wᵢ(yᵢ − f(xᵢ) − b)² +
            alpha‖f‖²_H in every in-memory mode (the intercept uses weighted means). An
            integer weight equals repeating the row (with the same landmarks). None = all
            ones. On dask inputs (a dask array chunked like X, or numpy): modes 'lla' and
            'ncr'.

        Returns
        -------
        self : NystromKernelRidge
            The fitted estimator.

        Raises
        ------
        ValueError
            If ``mode``, ``solver`` or ``gsa_solver`` is unknown, ``alpha`` is not positive,
            ``device`` is invalid or set with dask inputs, or y / the weights are malformed.
        TypeError
            If ``fit_intercept`` is not True or False.
        NotImplementedError
            For ``sample_weight`` with dask inputs in mode 'gsa'.
        """
        mode = self._check_common(X, y)
        check_bool(self.fit_intercept, "fit_intercept")
        if self.solver not in ("auto", "sklearn"):
            raise ValueError(f"solver must be 'auto' or 'sklearn', got {self.solver!r}")
        if self.gsa_solver not in ("eq20", "woodbury"):
            raise ValueError(f"gsa_solver must be 'eq20' or 'woodbury', got {self.gsa_solver!r}")
        alpha = check_positive(self.alpha, "alpha")
        _require_y(y, self)
        if any_dask(X, y):  # map-reduce over the row chunks (asymkern._dask.machines)
            from .._dask.machines import fit_ridge

            return self._keep_dask(fit_ridge(self, X, y, alpha, sample_weight))
        if use_torch(self, X, y, sample_weight) and self.solver != "auto":
            raise NotImplementedError(
                f"solver={self.solver!r} is not available on the torch backend: it runs "
                "scikit-learn's Ridge on host numpy features F = K_nm A, which would move the "
                "n×s features off the device; use solver='auto' (the same ridge problem in "
                "Gram form, equal predictions) or device=None with numpy input")
        tr = _Training(self, X, y, sample_weight)  # numpy, or torch (tensors / device)
        n = tr.n
        y = check_regression_targets(tr.host(y, "y"), n)
        sw = check_nonnegative_weights(tr.host(sample_weight, "sample_weight"), n)
        self._y_1d = y.ndim == 1
        Y = y.reshape(n, -1)
        # unit weights are no weights (a product by 1 is exact): the unweighted formulas
        weighted = sample_weight is not None and not bool(np.all(sw == 1.0))
        ybar = (((sw @ Y) / sw.sum() if weighted else Y.mean(axis=0)) if self.fit_intercept
                else np.zeros(Y.shape[1]))
        Yc = Y - ybar
        if mode == "exact":  # (W½ K_c W½ + alpha I) b = W½ y_c, a = W½ b
            self._no_basis(tr.X_fit)
            res = ridge_exact(  # K handed over (no second reference: it is freed early)
                tr.ops, tr.gram(), Yc, ybar, sw, weighted, alpha, self.fit_intercept)
        else:
            src = tr.landmarks(self)
            w_given = None
            if self.solver == "sklearn" and mode in ("lla", "gsa"):
                from sklearn.linear_model import Ridge

                rg = Ridge(alpha=alpha, fit_intercept=self.fit_intercept).fit(
                    features(src, self.basis_.A), Y, sample_weight=sample_weight)
                w_given = rg.coef_.reshape(Y.shape[1], -1).T
            res = ridge_nystrom(mode, src, self.basis_.A, Yc, ybar, sw,
                                weighted, alpha, self.fit_intercept, self.gsa_solver,
                                tr.dtype, w_given)
            src.release()  # a sketch's K S (n × m) is not kept
        self.X_fit_ = tr.X_fit
        self.coef_ = None if res.coef is None else res.coef.T
        self.landmark_coef_ = res.landmark_coef
        self.dual_coef_ = None if res.dual is None else tr.out(res.dual)
        self.intercept_ = res.intercept
        self._torch_state = tr.device_state(beta=res.landmark_coef, dual=res.dual,
                                            intercept=res.intercept, ridge=True)
        return _finite_fit(self)

    def _decision(self, X, approach=None):
        check_is_fitted(self, "X_fit_")
        if self._use_dask(X):  # a dask array chunked like X (numpy in → numpy out)
            from .._dask.machines import predict_ridge

            return predict_ridge(self, X, approach)
        out, model, as_numpy = self._values(X, approach or self.mode, "the predictions")
        return self._output(out.reshape(-1) if self._y_1d else out, model, as_numpy, X)

    def predict(self, X):
        """Predictions of the fitted mode (GSA and exact use K(X, X_fit), the others K(X, C)).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_test, d)
            Samples (the (n_test, n_train) kernel matrix with ``kernel='precomputed'``).

        Returns
        -------
        ndarray of shape (n_test,) or (n_test, n_outputs)
            Predicted targets (2-D when fitted on a 2-D y).
        """
        return self._decision(X)

    def score(self, X, y, sample_weight=None) -> float:
        """R² of ``predict(X)`` against y (scikit-learn's ``RegressorMixin.score``), computed on
        the host: predictions on a GPU, and y or weights given as tensors, are copied there.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, tensor} of shape (n_test, d)
            Samples.
        y : array-like or tensor of shape (n_test,) or (n_test, n_outputs)
            True targets.
        sample_weight : array-like or tensor of shape (n_test,), default=None
            Weights of the test samples (None: equal weights).

        Returns
        -------
        float
        """
        from sklearn.metrics import r2_score

        return host_score(r2_score, self, X, y, sample_weight)

    def predict_lla(self, X):
        """LLA predictions from a GSA (or LLA) fit: GSA is trained through LLA (Algorithm 1).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_test, d)
            Samples (the (n_test, n_train) kernel matrix with ``kernel='precomputed'``).

        Returns
        -------
        ndarray of shape (n_test,) or (n_test, n_outputs)
            The predictions of LLA's model.

        Raises
        ------
        ValueError
            If ``mode`` is not 'gsa' or 'lla'.
        """
        if self.mode not in ("gsa", "lla"):
            raise ValueError("predict_lla needs mode 'gsa' or 'lla'")
        return self._decision(X, "lla")


# ======================================================================================= SVC
def machine_duals(est, n: int) -> np.ndarray:
    """Per-machine dual coefficients (y_i α_i) of a fitted libsvm SVC/NuSVC, (n × n_machines).

    Machines are scikit-learn's one-vs-one pairs (0,1), (0,2), …, (1,2), … (one machine for two
    classes), with the coefficient layout that ``coef_`` of a linear-kernel SVC uses, so that for
    training features F: ``coef_`` = Dᵀ F and decision_p(z) = D[:, p]ᵀ k(X, z) + intercept_[p].

    Parameters
    ----------
    est : sklearn.svm.SVC or sklearn.svm.NuSVC
        A fitted libsvm classifier.
    n : int
        Number of training samples (rows of the output).

    Returns
    -------
    ndarray of shape (n, n_machines)
        Signed dual coefficients; zero for samples that are not support vectors.

    See Also
    --------
    NystromSVC : Uses these duals for the GSA/SPA/exact machines.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.svm import SVC
    >>> from asymkern.nystrom import machine_duals
    >>> X, y = load_iris(return_X_y=True)
    >>> svc = SVC(kernel="linear").fit(X, y)
    >>> D = machine_duals(svc, X.shape[0])
    >>> D.shape
    (150, 3)
    >>> bool(abs(D.T @ X - svc.coef_).max() < 1e-8)
    True
    """
    dual = np.asarray(est.dual_coef_)
    sup = np.asarray(est.support_)
    nsv = np.asarray(est.n_support_)
    k = len(est.classes_)
    if k == 2:
        D = np.zeros((n, 1))
        D[sup, 0] = dual[0]
        return D
    locs = np.concatenate([[0], np.cumsum(nsv)])
    D = np.zeros((n, k * (k - 1) // 2))
    p = 0
    for c1 in range(k):
        for c2 in range(c1 + 1, k):
            s1 = slice(locs[c1], locs[c1 + 1])
            s2 = slice(locs[c2], locs[c2 + 1])
            D[sup[s1], p] = dual[c2 - 1, s1]
            D[sup[s2], p] = dual[c1, s2]
            p += 1
    return D


class NystromSVC(ClassifierMixin, _NystromBase):
    """Support vector classification with Nyström landmarks (Li, Liu and Zhang, §IV uses ν-SVM).

    ``svm``: ``'nusvc'`` (scikit-learn ``NuSVC``, the paper's choice, parameter ``nu``), ``'svc'``
    (``SVC``, parameter ``C``) — both libsvm, linear kernel on F for LLA/GSA/NCR, precomputed
    kernel for SPA/exact, one-vs-one for several classes — or ``'linearsvc'`` (``LinearSVC``,
    liblinear, LLA/GSA/NCR only; no exact counterpart, so no approximation errors).
    GSA feeds t_GSA(z) = (G^†)ᵀ k(X, z) to the same fitted linear model (Algorithm 1).
    ``max_iter`` goes to the solver (-1 = libsvm's unlimited).

    ``class_weight`` (None, a dict {class: weight} or ``'balanced'``) is passed to the solver as
    in ``SVC`` (libsvm's ν-SVC largely ignores it, as scikit-learn's ``NuSVC`` does; use
    ``svm='svc'`` or ``'linearsvc'`` for weighted classes). ``probability=True`` makes
    ``predict_proba`` / ``predict_log_proba`` available: Platt sigmoids
    (:class:`~asymkern._calibration.PlattCalibration`; one per class, normalised, for more
    than two) fitted in ``fit`` on out-of-sample decision values of an internal stratified
    5-fold cross-validation of a clone (fewer folds when a class has fewer than 5 samples;
    shuffled with ``random_state``), as ``SVC(probability=True)``; it costs 5 extra fits, and
    argmax of the probabilities may differ from ``predict`` near the margin. Not on dask
    inputs.

    Parameters
    ----------
    mode : {'lla', 'gsa', 'ncr', 'spa', 'exact'}, default 'lla'
        How the landmarks are used (module docstring).
    n_landmarks : int, default 100
        Number m of landmarks drawn by the sampler (clipped to n_samples with a
        ``ClippedParameterWarning``); ignored when ``landmarks`` is an index array.
    landmarks : str or array-like of int, default 'uniform'
        Landmark sampler ('uniform', 'gaussian', 'leverage' or 'kmeans'), or row indices of X.
    subspace_dim : int or None, default None
        Dimension s ≤ m of the landmark subspace; None = the numerical rank of K_mm.
    svm : {'nusvc', 'svc', 'linearsvc'}, default 'nusvc'
        The solver (see above).
    nu : float, default 0.5
        ν of ``NuSVC`` (``svm='nusvc'``).
    C : float, default 1.0
        C of ``SVC`` / ``LinearSVC``.
    kernel : str, Kernel, callable or 'precomputed', default 'rbf'
        The kernel (see :func:`~asymkern.kernels.resolve_kernel`); ``'precomputed'`` takes
        kernel matrices (see the module docstring).
    gamma : float or None, default None
        Kernel width (exp(−gamma‖x − z‖²) for 'rbf'); None keeps the kernel's default.
    kernel_params : dict or None, default None
        Further parameters of a kernel given by name.
    tol : float, default 1e-3
        Stopping tolerance of the solver.
    max_iter : int, default -1
        Iteration limit of the solver (-1 = libsvm's unlimited; 1000 for LinearSVC).
    class_weight : dict, 'balanced' or None, default None
        Class weights passed to the solver (see above).
    probability : bool, default False
        Fit Platt sigmoids for ``predict_proba`` (see above).
    rcond : float or None, default None
        Eigenvalue cut-off of the pseudo-inverse of K_mm (λ ≤ rcond·λ_max is treated as zero;
        None = m·eps of X's dtype).
    random_state : None, int or RandomState, default None
        Randomness of the landmark sampler (a numpy ``Generator`` is refused).
    device : None, str or torch.device, default None
        Run the kernel work on the torch backend (:mod:`asymkern._torch.machines`; needs
        ``pip install "asymkern[torch]"``): 'cpu', 'cuda', 'cuda:0' or a ``torch.device``.
        The SVM itself is scikit-learn's (libsvm / liblinear) and runs on the host, fitted on
        a numpy copy of what the device computed: the features F = K(X, C)A, the n×n Gram
        matrix of 'spa' (FFᵀ) and 'exact' (K), GSA's pseudo-inverse factor. Decision values
        and labels are computed on the device (streamed over row blocks of the test points);
        ``predict_proba`` applies the Platt sigmoids on the host. Torch tensors in give
        tensors out on their device (dtype kept; ``predict`` gives a tensor when the labels
        are numeric, else a numpy array; ``classes_`` stays numpy); numpy input with
        ``device`` set gives numpy arrays. On torch: every mode and ``svm``, landmarks
        'uniform', row indices, 'kmeans' or 'leverage' (chosen on the host) and 'gaussian'
        (S drawn on the host, K·S streamed over row blocks on the device; decision values
        K(Z, X_fit)·(Sβ)), ``kernel='precomputed'`` (a tensor or numpy Gram matrix, landmarks
        'uniform' or row indices as on numpy; ``predict`` / ``decision_function`` take the
        (n_test, n_train) kernel matrix), ``probability=True`` (its cross-validation refits
        clones that keep ``device``). None (default) runs numpy, or torch for tensor inputs.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    estimator_ : SVC, NuSVC or LinearSVC
        The fitted scikit-learn solver (linear on the features F, or precomputed).
    coef_ : ndarray of shape (n_machines, s) or None
        Weights of the linear model on F (lla, gsa, ncr).
    landmark_coef_ : ndarray of shape (m, n_machines) or None
        β with f = C_H β (not for 'exact').
    dual_coef_ : ndarray of shape (n, n_machines) or None
        Signed duals (gsa: eq. (20); spa, exact: :func:`machine_duals`); a tensor on the
        device after a fit on tensors.
    calibration_ : PlattCalibration or None
        The sigmoids of ``probability=True``.
    n_iter_ : int or ndarray
        Iterations of the solver (when it reports them).
    basis_ : NystromBasis or None
        The landmark basis (None for ``mode='exact'``).
    landmark_indices_ : ndarray of int or None
        Row indices of the landmarks (None for a Gaussian sketch or ``'exact'``).
    landmarks_ : ndarray or None
        The landmark points (rows of K for ``'precomputed'``; None for a sketch).
    n_landmarks_ : int or None
        Number m of landmarks used (after clipping).
    subspace_dim_ : int
        Dimension s of the landmark subspace used (n for ``'exact'``).
    X_fit_ : ndarray or sparse matrix
        Copy of the training data (None after a Dask fit, except for GSA; a tensor on the
        device after a fit on tensors).
    n_features_in_ : int
        Number of features of X seen in fit.
    dask_fit_ : bool
        Whether the model was fitted on dask inputs.
    torch_fit_ : bool
        Whether the model was fitted on the torch backend (tensors or ``device``).

    See Also
    --------
    NystromKernelRidge : Nyström kernel ridge regression.
    machine_duals : Per-machine dual coefficients of a libsvm classifier.
    sklearn.svm.NuSVC : The exact ν-SVM.

    Notes
    -----
    scikit-learn conventions common to the Nyström machines (clipping, ``gamma``,
    ``kernel='precomputed'``, sparse input, ``random_state``, validation): see the module
    docstring. scikit-learn's common checks pass at default parameters except
    ``check_class_weight_classifiers`` (ν-SVC; it passes with ``svm='svc'``).

    References
    ----------
    .. [1] W. Li, M. Liu and D. Zhang, "Geometric Interpretation of Running Nyström-Based Kernel
       Machines and Error Analysis".

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from asymkern.nystrom import NystromSVC
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = NystromSVC(n_landmarks=30, gamma=0.5, random_state=0).fit(X, y)
    >>> clf.predict(X[:3]).shape
    (3,)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    def __init__(self, mode="lla", n_landmarks=100, landmarks="uniform", subspace_dim=None,
                 svm="nusvc", nu=0.5, C=1.0, kernel="rbf", gamma=None, kernel_params=None,
                 tol=1e-3, max_iter=-1, class_weight=None, probability=False, rcond=None,
                 random_state=None, device=None):
        self.mode = mode
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.subspace_dim = subspace_dim
        self.svm = svm
        self.nu = nu
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.kernel_params = kernel_params
        self.tol = tol
        self.max_iter = max_iter
        self.class_weight = class_weight
        self.probability = probability
        self.rcond = rcond
        self.random_state = random_state
        self.device = device

    def _make_svm(self, kernel):
        from sklearn.svm import SVC, LinearSVC, NuSVC

        cw = self.class_weight
        # libsvm's seed (the shuffling of probability=True's cross-validation) from
        # random_state, not from numpy's global generator
        rs = self.random_state
        if self.svm == "nusvc":
            return NuSVC(nu=self.nu, kernel=kernel, tol=self.tol, max_iter=self.max_iter,
                         class_weight=cw, random_state=rs)
        if self.svm == "svc":
            return SVC(C=self.C, kernel=kernel, tol=self.tol, max_iter=self.max_iter,
                       class_weight=cw, random_state=rs)
        if self.svm == "linearsvc":
            if kernel != "linear":
                raise ValueError(f"svm='linearsvc' supports modes lla/gsa/ncr only, not "
                                 f"{self.mode!r}")
            mi = 1000 if self.max_iter is None or self.max_iter < 0 else self.max_iter
            return LinearSVC(C=self.C, tol=self.tol, max_iter=mi, class_weight=cw,
                             random_state=self.random_state)
        raise ValueError(f"svm must be 'nusvc', 'svc' or 'linearsvc', got {self.svm!r}")

    def _check_solver_params(self) -> None:
        """Check ``nu``, ``C``, ``tol`` and ``max_iter`` at the top of ``fit``, whichever
        ``svm`` reads them.

        The package checks every parameter before a fit goes to an executor, whether or not
        the solver it configures runs: a ``C`` given with ``svm='nusvc'`` or a ``nu`` given
        with ``svm='svc'`` is not silently ignored when it is invalid, and a bad value gets
        the same error on numpy, torch and dask inputs, before any kernel work.

        Raises
        ------
        TypeError
            If ``nu``, ``C`` or ``tol`` is not a real number, or ``max_iter`` not an integer.
        ValueError
            If ``nu`` is not in (0, 1], ``C`` is not > 0 (NaN included; +inf is libsvm's hard
            margin), ``tol`` is not finite and > 0, or ``max_iter`` is below -1.
        """
        nu = check_positive(self.nu, "nu")
        if nu > 1:
            raise ValueError(f"nu must be in (0, 1] (libsvm's ν), got {nu}")
        C = self.C
        if isinstance(C, bool) or not isinstance(C, numbers.Real):
            raise TypeError(f"C must be a real number, got {C!r}")
        if not float(C) > 0:
            raise ValueError(f"C must be > 0, got {float(C)}")
        check_positive(self.tol, "tol")
        mi = self.max_iter
        if mi is not None and (isinstance(mi, bool) or not isinstance(mi, numbers.Integral)):
            raise TypeError(f"max_iter must be an integer >= -1 (-1: the solver's default), "
                            f"got {mi!r}")
        if mi is not None and int(mi) < -1:
            raise ValueError(f"max_iter must be an integer >= -1 (-1: the solver's default), "
                             f"got {int(mi)}")

    def _fit_solver(self, svm, A, y):
        """``svm.fit(A, y)`` with libsvm's degenerate ν-SVC case explained.

        First refuses a ν that is infeasible for the class counts of y
        (:meth:`_check_nu_feasible`). libsvm's ν-SVC divides its dual coefficients and
        intercept by a margin scale r that is 0 when the classes are not separated at all in
        the kernel's feature space (e.g. every input repeated with each label, as happens with
        a few boolean features); scikit-learn then reports non-finite dual coefficients and
        blames large input values. A and y are
        finite here, so that message is replaced by one that names the cause and ``svm``.
        """
        self._check_nu_feasible(y)
        try:
            return svm.fit(A, y)
        except ValueError as exc:
            if self.svm != "nusvc" or "are not finite" not in str(exc):
                raise
            raise ValueError(
                f"svm='nusvc' (nu={self.nu!r}): libsvm's ν-SVC found no margin on these "
                "training data (its margin scale is 0, so the dual coefficients are not "
                "finite): the classes are not separated at all in the kernel's feature "
                "space, e.g. identical inputs carry different labels; use svm='svc' (C-SVC), "
                "another kernel or bandwidth, or informative features") from exc

    def _check_labels(self, y, n):
        """1-D labels with at least two classes (scikit-learn's one-class message)."""
        from sklearn.utils.multiclass import check_classification_targets
        from sklearn.utils.validation import column_or_1d

        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must be 1-D with {n} labels, got shape {y.shape}")
        if np.issubdtype(y.dtype, np.floating) and not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity")
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"NystromSVC needs samples of at least 2 classes in y; got 1 "
                             f"class ({classes[0]!r})")
        return y

    def _check_nu_feasible(self, y, where: str = "") -> None:
        """Refuse a ν that libsvm's ν-SVC cannot fit on the labels y (``svm='nusvc'``).

        libsvm trains one machine per pair of classes (i, j) with counts nᵢ, nⱼ; the problem
        is feasible only for ν ≤ 2·min(nᵢ, nⱼ)/(nᵢ + nⱼ), and at equality the solution is
        degenerate (scikit-learn reports non-finite dual coefficients). So ν must be below
        that bound for the least balanced pair: 2·n_min/(n_min + n_max). An invalid ν (not in
        (0, 1]) is left to scikit-learn's own parameter check.
        """
        nu = self.nu
        if self.svm != "nusvc" or isinstance(nu, bool) or not isinstance(nu, (int, float)) \
                or not 0 < nu <= 1:
            return
        _, counts = np.unique(np.asarray(y), return_counts=True)
        if counts.size < 2:
            return
        lo, hi = int(counts.min()), int(counts.max())
        bound = 2 * lo / (lo + hi)
        if nu >= bound:
            raise ValueError(
                f"nu={nu!r} is infeasible for svm='nusvc' on {where or 'y'}: its smallest and "
                f"largest classes have {lo} and {hi} samples, and libsvm's ν-SVC needs "
                f"nu < 2·{lo}/({lo}+{hi}) = {bound:.4g} for that pair; lower nu, use "
                "svm='svc', or balance the classes")

    @forgets_previous_fit
    def fit(self, X, y):
        """Fit on X (n × d) and class labels y (n,).

        With ``probability=True`` also the Platt sigmoids of ``predict_proba`` (from 5-fold
        cross-validated decision values).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n, d)
            Training data (the (n, n) kernel matrix with ``kernel='precomputed'``).
        y : array-like of shape (n,)
            Class labels (at least two classes).

        Returns
        -------
        self : NystromSVC
            The fitted estimator.

        Raises
        ------
        ValueError
            If ``mode`` or ``svm`` is unknown or ``svm='linearsvc'`` is given with mode 'spa'
            or 'exact', ``nu`` is not in (0, 1], ``C`` or ``tol`` is not positive or
            ``max_iter`` is below -1 (checked whichever ``svm`` reads them), ``device`` is
            invalid or set with dask inputs, y is malformed or has one class, or
            ``probability=True`` with a class of fewer than 2 samples.
        TypeError
            If ``probability`` is not True or False, or ``nu``, ``C``, ``tol`` or
            ``max_iter`` is not a number.
        NotImplementedError
            For ``probability=True`` with dask inputs.
        """
        mode = self._check_common(X, y)
        check_bool(self.probability, "probability")
        self._make_svm("precomputed" if mode in ("spa", "exact") else "linear")  # svm, mode
        self._check_solver_params()
        _require_y(y, self)
        if any_dask(X, y):  # features gathered within max_dense_memory (_dask.machines)
            if self.probability:
                raise NotImplementedError("NystromSVC(probability=True) is not available on "
                                          "dask inputs (its internal cross-validation refits "
                                          "in memory); use probability=False")
            from .._dask.machines import fit_svc

            return self._keep_dask(fit_svc(self, X, y))
        svm = self._make_svm("precomputed" if mode in ("spa", "exact") else "linear")
        tr = _Training(self, X, y)  # numpy, or torch (the kernel work on the device)
        y = self._check_labels(tr.host(y, "y"), tr.n)
        self._fit_svm(tr, svm, y, mode)
        # the cross-validation's clones keep ``device`` and get row folds of the device copy
        self.calibration_ = (self._fit_calibration(tr.X, y)
                             if self.probability else None)
        return self

    def _fit_svm(self, tr, svm, y, mode):
        """The kernel side (:func:`asymkern.nystrom._algebra.svc_nystrom`, on the executor
        of ``tr``) and the SVM (scikit-learn's, on the host)."""
        n = tr.n
        self.coef_ = self.landmark_coef_ = self.dual_coef_ = None

        def fit_linear(F):
            self.estimator_ = self._fit_solver(svm, F, y)
            return self.estimator_.coef_

        def fit_gram(G):
            self.estimator_ = self._fit_solver(svm, G, y)
            return machine_duals(self.estimator_, n)

        if mode == "exact":
            self._no_basis(tr.X_fit)
            K = tr.gram()
            dual = tr.ops.from_host(fit_gram(np.asarray(tr.ops.to_host(K))), K, np.float64)
            del K
        else:
            if mode == "spa":  # libsvm's precomputed kernel: F Fᵀ and its host copy
                check_memory(8 * n * n * 2, f"NystromSVC(mode='spa') on {n} samples (the "
                             "n×n projected Gram matrix F Fᵀ of its precomputed-kernel SVM)",
                             "mode='lla', 'ncr' or 'gsa' (a linear SVM on the n×s features)")
            tr.landmarks(self)
            A = self.basis_.A
            if mode != "spa":  # the same check on every executor (SPA's n×n one above)
                self._features_budget(tr, A.shape[1], mode)
            F = tr.features(A, "the features F = K(X, C)A")
            res = svc_nystrom(mode, F, A, fit_linear, fit_gram, tr.dtype)
            if not self.torch_fit_:  # the in-memory test phase's features
                if mode == "spa":
                    self._F = F
                elif mode == "gsa":
                    self._P = res.pinv
            del F
            self.coef_, self.landmark_coef_, dual = res.coef, res.landmark_coef, res.dual
        self.X_fit_ = tr.X_fit
        if dual is not None:
            self.dual_coef_ = tr.out(dual)
        self.classes_ = self.estimator_.classes_
        if hasattr(self.estimator_, "n_iter_"):
            self.n_iter_ = self.estimator_.n_iter_
        self._torch_state = tr.device_state(
            beta=self.landmark_coef_, dual=dual,
            intercept=np.asarray(self.estimator_.intercept_, dtype=np.float64),
            classes=self.classes_, libsvm=self.svm != "linearsvc")
        return _finite_fit(self)

    def _features_budget(self, tr, s: int, mode: str) -> None:
        """Modes 'lla', 'ncr' and 'gsa': refuse, before the features are formed, a fit whose
        peak exceeds ``max_dense_memory``, and shrink the blocks of K_nm that form them to
        what the rest leaves of it.

        Counted besides X's copy and the basis: the features F (n × s) and the largest of the
        passes forming them (the blocks of K_nm with their temporaries, the data copies of the
        kernel evaluation, the block of F) and the SVM's fit on F (liblinear's own copy of F,
        16-byte entries; libsvm's support vectors, up to every row of F); for GSA also, beside
        the support vectors libsvm keeps, the pseudo-inverse factor P = (G^†)ᵀ
        (:func:`~asymkern.nystrom._algebra.pinv_factor_bytes`: the thin SVD of F, then P).
        Not counted: libsvm's kernel cache (4-byte entries of the kernel of F, filled column
        by column as the solver asks for them, up to scikit-learn's ``cache_size`` of 200 MB
        or 4n² bytes), which is not traced and is released when the fit returns.
        """
        from ..linalg._svd_core import data_copy_bytes
        from ..linalg.svd import PASS_BLOCK_ARRAYS, budget_bytes

        rows = tr.rows
        n, m = (int(k) for k in rows.shape)
        d = int(tr.X.shape[1])
        points = rows.kind == "points"  # landmark points (their kernel blocks), not indices
        dense_points = points and not sp.issparse(tr.X)
        # X's copy (the kernel matrix when precomputed), the basis and the landmark points
        base = array_nbytes(tr.X) + 8 * (m * s + m * m + (m * d if points else 0))
        F = 8 * n * s
        linear = self.svm == "linearsvc"
        svm_fit = 16 * n * (s + 2) if linear else 8 * n * s
        after = svm_fit
        if mode == "gsa":
            after = max(svm_fit, (0 if linear else 8 * n * s) + pinv_factor_bytes(n, s))

        def blocks(k: int) -> int:  # a pass forming F with blocks of k rows of K_nm
            data = data_copy_bytes(d, k, m) if dense_points else 0
            return PASS_BLOCK_ARRAYS * 8 * k * m + 8 * k * s + data

        if rows.Knm is None:  # formed from blocks: as many rows as what is left holds
            left = budget_bytes() - base - F
            lo, hi = 1, max(1, int(rows.step(s)))
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if blocks(mid) <= left else (lo, mid - 1)
            if lo < rows.step(s):
                rows.block_rows = lo
            passes = blocks(rows.step(s))
        else:  # a sketch's formed K S (released after), copied one block at a time
            passes = 8 * n * m + 2 * 8 * min(n, int(rows.step(s))) * (m + s)
        need = base + F + max(passes, after)
        what = ("the SVM's fit on them and the thin SVD of F for the pseudo-inverse factor "
                "beside them" if mode == "gsa" else "the blocks of K_nm forming them and the "
                "SVM's fit on them")
        alternatives = {"gsa": "fewer landmarks (n_landmarks) or subspace_dim, or mode='lla'",
                        "lla": "fewer landmarks (n_landmarks) or subspace_dim"}
        check_memory(need, f"NystromSVC(mode={mode!r}, n_landmarks={m}) on {n} samples",
                     alternatives.get(mode, "fewer landmarks (n_landmarks)"),
                     detail=f"X's copy, the {n}×{s} features F, {what}")

    def _fit_calibration(self, X, y):
        """Platt sigmoids on out-of-sample decision values (as ``SVC(probability=True)``).

        A clone with the same parameters (``probability=False``) is fitted on each of 5
        stratified folds (fewer when the smallest class has fewer than 5 samples; shuffled
        with ``random_state``) and its decision values on the held-out fold are collected;
        :class:`~asymkern._calibration.PlattCalibration` fits one sigmoid per class on them.
        With ``kernel='precomputed'`` a fold fits on K[train][:, train] and scores
        K[test][:, train]. Landmarks given as row indices become, in each fold, those of them
        that lie in the fold's training rows (re-indexed), as a sampler would draw them there.
        """
        from sklearn.base import clone
        from sklearn.model_selection import StratifiedKFold

        from .._calibration import PlattCalibration

        y_index = np.searchsorted(self.classes_, y)
        k = len(self.classes_)
        folds = min(5, int(np.bincount(y_index, minlength=k).min()))
        if folds < 2:
            raise ValueError("probability=True needs at least 2 samples of every class in y "
                             "(its internal cross-validation); use probability=False")
        rng = check_random_state(self.random_state, "random_state")
        cv = StratifiedKFold(folds, shuffle=True, random_state=rng.randint(2**31 - 1))
        dec = np.zeros((X.shape[0],) if k == 2 else (X.shape[0], k))
        splits = list(cv.split(np.zeros((X.shape[0], 1)), y_index))
        for train, _ in splits:  # name the cross-validation, not a bare fold, when ν fails
            self._check_nu_feasible(
                y[train], f"the training part of a fold of the {folds}-fold cross-validation "
                "that probability=True fits (or use probability=False)")
        inner = clone(self).set_params(probability=False)
        given = None if isinstance(self.landmarks, str) or self.landmark_indices_ is None \
            else np.asarray(self.landmark_indices_, dtype=np.int64)
        pre = self._precomputed()
        for train, test in splits:
            est = clone(inner)
            if given is not None:  # the given landmark rows that the fold trains on
                kept = given[np.isin(given, train)]
                if kept.size == 0:
                    raise ValueError("probability=True: a cross-validation fold holds none of "
                                     "the given landmarks; give more landmark indices or use "
                                     "a sampler ('uniform', 'kmeans', 'leverage')")
                est.set_params(landmarks=np.searchsorted(train, kept))
            Xtr, Xte = (X[train][:, train], X[test][:, train]) if pre else (X[train], X[test])
            est.fit(Xtr, y[train])
            d = est.decision_function(Xte)
            if is_torch_tensor(d):  # a torch fit (device set, or tensor X): sigmoids on the host
                d = d.detach().cpu().numpy()
            if k > 2 and len(est.classes_) < k:  # a fold lacking a class (not with stratified)
                full = np.full((len(test), k), -np.inf)
                full[:, np.searchsorted(self.classes_, est.classes_)] = d
                d = full
            dec[test] = d
        return PlattCalibration(dec, y_index, k)

    @available_if_explained(why_no_probability)
    def predict_proba(self, X):
        """Class probabilities (n, n_classes), columns in ``classes_`` order.

        Available when ``probability=True``: Platt scaling (Platt 1999; Lin, Lin & Weng 2007)
        of the decision values, the sigmoids fitted in ``fit`` on out-of-sample decision values
        of an internal 5-fold cross-validation. As for ``SVC``, the most probable class may
        differ from ``predict`` near the margin.
        """
        check_is_fitted(self, "calibration_")
        if self.calibration_ is None:
            raise AttributeError("predict_proba needs a model fitted with probability=True")
        if self._use_dask(X):
            raise NotImplementedError("predict_proba is not available on dask inputs")
        d = self.decision_function(X)  # sigmoids on the host, the probabilities like d
        ops = ops_of(d)
        return like_input(ops.from_host(self.calibration_.predict_proba(ops.to_host(d)), d), X,
                          "pass float64 input")

    @available_if_explained(why_no_probability)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        P = self.predict_proba(X)
        if is_torch_tensor(P):
            return P.log()
        with np.errstate(divide="ignore"):
            return np.log(P)

    def _inputs(self, model, Z, approach):
        """The host features of the fitted solver for the checked samples Z: t(z) = K(z, C)A
        (LLA, NCR; SPA: t(z) F_trainᵀ), (G^†)ᵀ k(X_fit, z) (GSA's test phase, Algorithm 1)
        or k(X_fit, z) (exact)."""
        if approach == "exact":
            T = (np.array(Z, dtype=np.float64) if self._precomputed()
                 else np.asarray(self._kernel()(Z, self.X_fit_), dtype=np.float64))
        elif approach == "gsa":  # t_GSA = (G^†)ᵀ k(X, z)
            T = full_times(model, Z, self._P)
        else:
            T = landmark_times(model, Z, self.basis_.A)  # t(z) = K(z, C) A
            T = T @ self._F.T if approach == "spa" else T
        return check_finite_output(T, "the kernel features of X (input of the linear SVM)",
                                   "rescale X like the training data")

    def _input_rows(self, model, Z, approach: str) -> int:
        """Rows of the checked samples Z whose solver inputs (:meth:`_inputs`) are formed at a
        time within ``max_dense_memory``: per row the kernel block forming them
        (:func:`~asymkern._shared.nystrom_predict.kernel_row_bytes`: against the landmarks,
        or every training point for GSA's test phase and 'exact'), the features (s wide;
        n_train for 'exact' and SPA, whose t(z) F_trainᵀ is formed beside t(z)) and the
        solver's copy of them; held whatever the rows: the decision values of every row and
        their concatenation."""
        n = int(Z.shape[0])
        if approach == "exact":
            width = int(self.X_fit_.shape[0])
        elif approach == "gsa":  # (G^†)ᵀ k(X_fit, z)
            width = int(self._P.shape[1])
        else:  # t(z) = K(z, C) A; SPA: and t(z) F_trainᵀ (F_train: n_train × s)
            width = int(self.basis_.A.shape[1]) + (
                int(self._F.shape[0]) if approach == "spa" else 0)
        per_row, fixed = 0, 0
        if not self._precomputed():
            points = self.X_fit_ if approach in ("exact", "gsa") else (
                self.basis_.X_fit if self.basis_.sketch is not None else self.basis_.centers)
            per_row, fixed = kernel_row_bytes(self._kernel(), Z, points)
        n_out = max(1, len(self.classes_) * (len(self.classes_) - 1) // 2)  # ≥ the columns
        return rows_within(n, per_row + 2 * 8 * width, fixed + 2 * 8 * n * n_out,
                           f"NystromSVC(mode={approach!r}) features of {n} new points",
                           "fewer new points at a time, or fewer landmarks (n_landmarks)",
                           f"one row of the {width} features, its kernel block and the solver's "
                           "copy, beside the decision values of every row")

    def _apply(self, X, approach: str, method: str):
        """``method`` ('decision_function' or 'predict') of the model of ``approach`` on X.

        A numpy fit applies its fitted scikit-learn solver (libsvm / liblinear) to the host
        features of the mode (:meth:`_inputs`); a torch fit computes the decision values
        K(z, C)β + b or K(z, X_fit)α + b (Li, Liu and Zhang, Nyström kernel machines,
        Algorithm 1) on its device and applies the solver's rules
        (:func:`~asymkern._shared.nystrom_predict.svc_values`,
        :func:`~asymkern._shared.nystrom_predict.label_index`).
        """
        if self._use_dask(X):
            from .._dask.machines import svc_apply

            check_is_fitted(self, "X_fit_")
            return svc_apply(self, X, method, approach)
        if not getattr(self, "torch_fit_", False):
            model, Z, _ = self._fitted_input(X, approach)
            solver, n = getattr(self.estimator_, method), int(Z.shape[0])
            step = self._input_rows(model, Z, approach)
            if step >= n:
                out = solver(self._inputs(model, Z, approach))
            else:  # the features of a few rows at a time (each row's values are its own)
                out = np.concatenate([solver(self._inputs(model, Z[a:a + step], approach))
                                      for a in range(0, n, step)])
            if method == "predict":
                return out
            return self._output(check_finite_output(out, "the decision values", "rescale X "
                                                    "like the training data"), model, True,
                                X)
        raw, model, as_numpy = self._values(X, approach, "the decision values")
        k = len(self.classes_)
        if method == "decision_function":
            return self._output(svc_values(raw, k, model.libsvm), model, as_numpy, X)
        idx = label_index(raw, k, model.libsvm)
        if as_numpy or model.labels is None:
            return self.classes_[model.ops.to_host(idx)]
        return model.labels[idx]

    def decision_function(self, X):
        """Decision values of the fitted solver on the features of the fitted mode.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_test, d)
            Samples (the (n_test, n_train) kernel matrix with ``kernel='precomputed'``).

        Returns
        -------
        ndarray of shape (n_test,) or (n_test, n_machines)
            As the decision function of the underlying scikit-learn solver.
        """
        return self._apply(X, self.mode, "decision_function")

    def predict(self, X):
        """Class labels predicted by the fitted mode.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_test, d)
            Samples (the (n_test, n_train) kernel matrix with ``kernel='precomputed'``).

        Returns
        -------
        ndarray of shape (n_test,)
            Predicted labels.
        """
        return self._apply(X, self.mode, "predict")

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy of ``predict(X)`` against y (scikit-learn's ``ClassifierMixin.score``),
        computed on the host: predictions on a GPU, and y or weights given as tensors, are
        copied there.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, tensor} of shape (n_test, d)
            Samples.
        y : array-like or tensor of shape (n_test,)
            True labels.
        sample_weight : array-like or tensor of shape (n_test,), default=None
            Weights of the test samples (None: equal weights).

        Returns
        -------
        float
        """
        from sklearn.metrics import accuracy_score

        return host_score(accuracy_score, self, X, y, sample_weight)

    def predict_lla(self, X):
        """LLA predictions from a GSA (or LLA) fit: both share LLA's training (Algorithm 1).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_test, d)
            Samples (the (n_test, n_train) kernel matrix with ``kernel='precomputed'``).

        Returns
        -------
        ndarray of shape (n_test,)
            Labels predicted by LLA's model.

        Raises
        ------
        ValueError
            If ``mode`` is not 'gsa', 'lla' or 'ncr'.
        """
        if self.mode not in ("gsa", "lla", "ncr"):
            raise ValueError("predict_lla needs mode 'gsa', 'lla' or 'ncr'")
        return self._apply(X, "lla", "predict")


# ====================================================================================== KPCA
class NystromKernelPCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, _NystromBase):
    """Kernel PCA with Nyström landmarks (Li, Liu and Zhang; KPCA is one of the machines of (1)).

    Components are unit-norm functions f_k in H (‖f_k‖_H = 1) ordered by the variance they
    capture; ``transform`` returns ⟨f_k, Φ(z) − μ⟩ (μ the training mean when ``center``; GSA:
    the landmark-projected mean, see below).
    LLA: PCA (an SVD) of F = K_nm A; GSA: α̂_k = G_c^† w_k (eq. (20)), scores α̂ᵀk(X, z) minus
    LLA's mean term f̄ᵀw_k = ⟨f_k, Pμ⟩ (1ᵀα̂ = 0; P the Nyström projection onto the
    landmarks' span), so the training scores average to about 0, not exactly (the exact mean
    term α̂ᵀK1/n would cost a pass over the n×n kernel); SPA: eigenvectors of the n×n K̃_c
    (reference); exact: eigenvectors of HKH.
    Signs follow ``sklearn.utils.extmath.svd_flip``; the error functions align signs.
    ``n_components`` larger than the subspace dimension s (n_samples for ``'exact'``) is
    clipped with a ``ClippedParameterWarning``; ``n_components_`` is the value used, and
    ``get_feature_names_out`` gives nystromkernelpca0, … (so ``set_output(transform='pandas')``
    works).

    Parameters
    ----------
    n_components : int, default 2
        Number of components.
    mode : {'lla', 'gsa', 'ncr', 'spa', 'exact'}, default 'lla'
        How the landmarks are used (module docstring).
    n_landmarks : int, default 100
        Number m of landmarks drawn by the sampler (clipped to n_samples with a
        ``ClippedParameterWarning``); ignored when ``landmarks`` is an index array.
    landmarks : str or array-like of int, default 'uniform'
        Landmark sampler ('uniform', 'gaussian', 'leverage' or 'kmeans'), or row indices of X.
    subspace_dim : int or None, default None
        Dimension s ≤ m of the landmark subspace; None = the numerical rank of K_mm.
    center : bool, default True
        Centre the features on the training mean.
    kernel : str, Kernel, callable or 'precomputed', default 'rbf'
        The kernel (see :func:`~asymkern.kernels.resolve_kernel`); ``'precomputed'`` takes
        kernel matrices (see the module docstring).
    gamma : float or None, default None
        Kernel width (exp(−gamma‖x − z‖²) for 'rbf'); None keeps the kernel's default.
    kernel_params : dict or None, default None
        Further parameters of a kernel given by name.
    rcond : float or None, default None
        Eigenvalue cut-off of the pseudo-inverse of K_mm (λ ≤ rcond·λ_max is treated as zero;
        None = m·eps of X's dtype).
    random_state : None, int or RandomState, default None
        Randomness of the landmark sampler (a numpy ``Generator`` is refused).
    device : None, str or torch.device, default None
        Run on the torch backend (:mod:`asymkern._torch.machines`; needs
        ``pip install "asymkern[torch]"``): 'cpu', 'cuda', 'cuda:0' or a ``torch.device``.
        Torch tensors in give tensors out on their device (``transform`` in X's dtype, the
        fitted coefficients float64 as on the numpy path); numpy input with ``device`` set
        gives numpy arrays. On torch: every mode ('lla', 'ncr', 'gsa', 'spa', 'exact'),
        ``center`` True or False, landmarks 'uniform', row indices, 'kmeans' or 'leverage'
        (chosen on the host by the numpy samplers, same random stream) and 'gaussian' (S drawn
        on the host, K·S streamed over row blocks on the device), ``kernel='precomputed'`` (a
        tensor or numpy Gram matrix, landmarks 'uniform' or row indices as on numpy;
        ``transform`` takes the (n_test, n_train) kernel matrix; 'exact' decomposes the
        centred K itself); the features F, their centring and SVD, SPA's and exact's n×n
        eigenproblems run on the device. None (default) runs numpy, or torch for tensor
        inputs.

    Attributes
    ----------
    n_components_ : int
        Number of components used (``n_components`` clipped).
    eigenvalues_ : ndarray of shape (``n_components_``,)
        Variance captured by each component (squared singular values of the centred F, or
        eigenvalues of the centred kernel matrix).
    coef_ : ndarray of shape (``n_components_``, s) or None
        Components in the feature space of F (not for 'exact').
    landmark_coef_ : ndarray of shape (m, ``n_components_``) or None
        β with f_k = C_H β_k (not for 'exact').
    dual_coef_ : ndarray of shape (n, ``n_components_``) or None
        α with f_k = X_H α_k (gsa, spa, exact).
    intercept_ : ndarray of shape (``n_components_``,)
        Offset of the scores (the centring term).
    basis_ : NystromBasis or None
        The landmark basis (None for ``mode='exact'``).
    landmark_indices_ : ndarray of int or None
        Row indices of the landmarks (None for a Gaussian sketch or ``'exact'``).
    landmarks_ : ndarray or None
        The landmark points (rows of K for ``'precomputed'``; None for a sketch).
    n_landmarks_ : int or None
        Number m of landmarks used (after clipping).
    subspace_dim_ : int
        Dimension s of the landmark subspace used (n for ``'exact'``).
    X_fit_ : ndarray or sparse matrix
        Copy of the training data (None after a Dask fit, except for GSA).
    n_features_in_ : int
        Number of features of X seen in fit.
    dask_fit_ : bool
        Whether the model was fitted on dask inputs.

    See Also
    --------
    asymkern.KernelPCA : Exact kernel PCA.
    NystromKernelRidge : Nyström kernel ridge regression.
    asymkern.nystrom.NystromFeatureMap : Nyström features (also for asymmetric kernels).

    Notes
    -----
    scikit-learn conventions common to the Nyström machines (clipping, ``gamma``,
    ``kernel='precomputed'``, sparse input, ``random_state``, validation): see the module
    docstring. scikit-learn's common checks pass at default parameters.

    References
    ----------
    .. [1] W. Li, M. Liu and D. Zhang, "Geometric Interpretation of Running Nyström-Based Kernel
       Machines and Error Analysis".

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.nystrom import NystromKernelPCA
    >>> X = np.random.RandomState(0).randn(100, 3)
    >>> pca = NystromKernelPCA(n_components=2, n_landmarks=20, random_state=0).fit(X)
    >>> pca.transform(X).shape
    (100, 2)
    """

    def __init__(self, n_components=2, mode="lla", n_landmarks=100, landmarks="uniform",
                 subspace_dim=None, center=True, kernel="rbf", gamma=None, kernel_params=None,
                 rcond=None, random_state=None, device=None):
        self.n_components = n_components
        self.mode = mode
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.subspace_dim = subspace_dim
        self.center = center
        self.kernel = kernel
        self.gamma = gamma
        self.kernel_params = kernel_params
        self.rcond = rcond
        self.random_state = random_state
        self.device = device

    @forgets_previous_fit
    def fit(self, X, y=None):
        """Fit the components of ``mode`` on X.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, torch tensor} of shape (n, d)
            Training data (the (n, n) kernel matrix with ``kernel='precomputed'``); a tensor
            (or ``device`` set) fits on the torch backend.
        y : None
            Ignored.

        Returns
        -------
        self : NystromKernelPCA
            The fitted estimator.

        Raises
        ------
        ValueError
            If ``mode`` is unknown, ``device`` is invalid or set with dask inputs, X has fewer
            than 2 samples with ``center=True``, or the (centred) kernel has fewer than
            ``n_components`` positive directions.
        TypeError
            If ``center`` is not True or False.
        """

        mode = self._check_common(X)
        check_bool(self.center, "center")
        if any_dask(X):  # map-reduce over the row chunks (asymkern._dask.machines)
            from .._dask.machines import fit_pca

            return self._keep_dask(fit_pca(self, X))
        tr = _Training(self, X)  # numpy, or torch (tensors / device)
        n = tr.n
        check_n_components(self.n_components, np.iinfo(np.int64).max)
        if self.center and n < 2:
            raise ValueError(f"X has {n} sample(s) (shape={tuple(tr.X_fit.shape)}) while a "
                             "minimum of 2 is required by NystromKernelPCA(center=True): one "
                             "centred sample has no variance")
        self.coef_ = self.landmark_coef_ = self.dual_coef_ = None
        beta = None
        if mode == "exact":
            self._no_basis(tr.X_fit)
            k = self.n_components_ = self._clip_components(*self._rank_limit(n, n))
            K = tr.gram()
            res = pca_exact(tr.ops, K, k, self.center)
            del K
            lam = res.eigenvalues
            self._check_positive_eigenvalues(float(lam[k - 1]), float(lam[0]), n, k)
        else:
            tr.landmarks(self)
            A = self.basis_.A
            k = self.n_components_ = self._components_for(A.shape[1], n)
            F = tr.features(A, "the kernel matrix K_nm between X and the landmarks")
            res = pca_nystrom(mode, F, k, self.center, tr.dtype)
            del F
            beta = A @ np.asarray(tr.ops.to_host(res.coef))
            self.coef_ = tr.out(tr.ops.contiguous(res.coef.T))
            self.landmark_coef_ = beta if tr.as_numpy else tr.ops.from_host(beta, res.coef)
        self.X_fit_ = tr.X_fit
        if res.dual is not None:
            self.dual_coef_ = tr.out(res.dual)
        self.eigenvalues_ = tr.out(tr.ops.contiguous(res.eigenvalues))
        self.intercept_ = tr.out(res.intercept)
        self._torch_state = tr.device_state(beta=beta, dual=res.dual, intercept=res.intercept)
        return _finite_fit(self)

    def _rank_limit(self, limit: int, n: int, what: str = "the number of samples n_samples"
                    ) -> tuple[int, str]:
        """The most components the problem can deliver: ``limit`` (with its description
        ``what``), lowered to n − 1 when ``center`` (the centred kernel or features of n samples
        have rank at most n − 1, so an n-th component would be numerically zero)."""
        if self.center and n - 1 < limit:
            return n - 1, "n_samples - 1 (the rank of a centred kernel of n samples)"
        return limit, what

    @staticmethod
    def _check_positive_eigenvalues(lam_min: float, lam_max: float, n: int, k: int) -> None:
        """Refuse a kept eigenvalue of the (centred) n×n kernel at or below the numerical zero
        n·eps·λ_max (its component would be rounding noise divided by √λ): the data span
        fewer than ``k`` directions (duplicate or degenerate samples)."""
        if not lam_min > n * np.finfo(np.float64).eps * max(lam_max, 0.0):
            raise ValueError(f"the centred kernel matrix has fewer than n_components={k} "
                             f"numerically positive eigenvalues (the {k}-th is {lam_min:.3g} "
                             f"beside the largest {lam_max:.3g}: degenerate or duplicate "
                             "samples); lower n_components")

    def _components_for(self, s: int, n: int, n_landmarks: int | None = None) -> int:
        """n_components clipped to the size limit (``n_landmarks`` (default the fitted
        ``n_landmarks_``), or subspace_dim when set; n − 1 when centring n samples) with a
        warning; a numerical rank s of K_mm below it is an error (degenerate data: never
        silently fewer components)."""
        limit = self.n_landmarks_ if n_landmarks is None else n_landmarks
        what = "the number of landmarks n_landmarks_"
        if self.subspace_dim is not None and int(self.subspace_dim) < limit:
            limit, what = int(self.subspace_dim), "subspace_dim"
        k = self._clip_components(*self._rank_limit(limit, n, what))
        if k > s:
            raise ValueError(
                f"n_components={k} is larger than the subspace dimension s={s}, the numerical "
                f"rank of K_mm (the landmarks span only {s} directions: rank-deficient X or "
                "kernel); lower n_components")
        return k

    def _clip_components(self, limit, what):
        return clip_count(self.n_components, limit, "n_components", what,
                          owner=type(self).__name__)

    @property
    def _n_features_out(self):
        """Number of output columns (``get_feature_names_out``: nystromkernelpca0, …)."""
        return self.n_components_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def transform(self, X):
        """Scores ⟨f_k, Φ(z) − μ⟩ of new samples (GSA: ⟨f_k, Φ(z) − Pμ⟩, see the class notes).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, torch tensor} of shape (n_test, d)
            Samples (the (n_test, n_train) kernel matrix with ``kernel='precomputed'``).

        Returns
        -------
        ndarray or tensor of shape (n_test, ``n_components_``)
            The scores (float32 for float32 X, else float64; a tensor on the fit's device for tensor
            input).
        """
        check_is_fitted(self, "X_fit_")
        if self._use_dask(X):  # a dask array chunked like X (numpy in → numpy out)
            from .._dask.machines import transform_pca

            return transform_pca(self, X)
        return self._output(*self._values(X, self.mode, "the transformed values"), X)
