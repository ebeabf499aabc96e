"""The Nyström machines on torch (private): the executor's primitives, not their algebra.

NystromKernelRidge, NystromKernelPCA and NystromSVC run one algebra for every executor
(:mod:`asymkern.nystrom._algebra`), one training side (the estimators' ``_Training``) and
one landmark step (Li, Liu and Zhang, Nyström kernel machines, Algorithm 1 steps 1–3:
:func:`asymkern._shared.nystrom_basis.fit_landmarks`, whose rows of K_nm come from the
executor's ``ops.kernel_matrix``); this module gives them what is specific to torch:

* :func:`training_input`: the training input on its device (a private copy, the tensor input
  checks, the precomputed square check, the kernels torch can evaluate);
* :func:`device_model`: the fitted :class:`DeviceModel` recorded on the estimator (what
  predictions read);
* predictions (:func:`predict_ridge`, :func:`transform_pca`, :func:`decision_svc`,
  :func:`predict_svc`): the shared algebra of :mod:`asymkern._shared.nystrom_predict`
  (K(Z, C)β + b or K(Z, X_fit)α + b over row blocks of Z, NystromSVC's label rules) on the
  :class:`DeviceModel`'s kernel blocks, tensors in and tensors out (numpy in, numpy out).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._backend import ops_of
from .._dispatch import any_torch, require_torch
from .._shared.nystrom_basis import RESCALE, check_finite, row_step
from .._shared.nystrom_predict import decision, label_index, svc_values
from .device import as_tensor, from_numpy, resolve_device, to_numpy


@dataclass(frozen=True)
class DeviceModel:
    """The fitted state of a Nyström machine on torch: what its predictions read (the
    :class:`asymkern._shared.nystrom_predict.FittedModel` of the torch executor).

    Attributes
    ----------
    kind : {'points', 'gaussian', 'precomputed'}
        Landmark points, a Gaussian sketch, or a precomputed kernel (an exact machine has
        'points', or 'precomputed').
    kernel : Kernel or None
        The kernel (None: precomputed), evaluated through ``ops.kernel_matrix``.
    X : tensor of shape (n, d)
        The training data on the device.
    device, dtype
        The fit's device and torch dtype.
    C, idx : tensor or None
        The landmark points (points), or the landmark columns of K (precomputed).
    beta : tensor of shape (m or n, k) or None
        The landmark coefficients (a sketch: S β).
    dual : tensor of shape (n, k) or None
        The coefficients of K(Z, X_fit) (GSA, SPA, exact).
    intercept : tensor of shape (k,)
    labels : tensor or None
        NystromSVC's numeric classes on the device.
    libsvm : bool
        NystromSVC's solver is libsvm's (one-vs-one values).
    """

    kind: str
    kernel: Any
    X: Any
    device: Any
    dtype: Any
    C: Any = None
    idx: Any = None
    beta: Any = None
    dual: Any = None
    intercept: Any = None
    labels: Any = None
    libsvm: bool = False

    @property
    def ops(self):
        return ops_of(self.X)

    def step(self, k: int) -> int:
        """Rows per block of K(Z, C) with k right-hand sides."""
        return row_step(int(self.C.shape[0]), k)

    def landmark_rows(self, Z):
        """K(Z, C) in float64 on the device (landmark points)."""
        return self.kernel_matrix(Z, self.C).to_dense().double()

    def kernel_matrix(self, Z, W):
        """The lazy K(Z, W) on the device (``ops.kernel_matrix``)."""
        return self.ops.kernel_matrix(self.kernel, Z, W)

    def full_times(self, Z, B, dtype=None):
        """K(Z, X_fit) B (float64) through the executor's kernel matrix (``ops.kernel_matrix``),
        streamed over row blocks of Z; ``dtype`` (default float64): the torch dtype the kernel
        blocks and B are multiplied in (float64 gives numpy's mixed-precision product of
        float32 kernel values)."""
        torch = require_torch()
        G = self.kernel_matrix(Z, self.X)
        if dtype is None or dtype == torch.float64:
            return G.matmat(B, dtype=torch.float64)
        return G.matmat(B.to(dtype)).double()


def device_model(est, X, rows, beta=None, dual=None, intercept=None, classes=None,
                 libsvm: bool = False) -> DeviceModel:
    """The fitted :class:`DeviceModel` of a torch fit.

    Parameters
    ----------
    est : NystromKernelRidge, NystromKernelPCA or NystromSVC
        The estimator (its kernel).
    X : tensor of shape (n, d)
        The training data on the device.
    rows : LandmarkRows or None
        The landmarks of the fit (None: exact).
    beta : ndarray of shape (m, k), optional
        The host landmark coefficients (a sketch keeps S β).
    dual : tensor of shape (n, k), optional
    intercept : ndarray or tensor
    classes : ndarray, optional
        A classifier's labels.
    libsvm : bool
        NystromSVC's solver is libsvm's.
    """
    kernel = None if est._precomputed() else est._kernel()
    ops, kind = ops_of(X), ("precomputed" if kernel is None else "points")
    C = idx = None
    if rows is not None:
        kind, idx = rows.kind, rows.idx
        C = rows.C if kind == "points" else None
    if beta is not None:
        beta = ops.from_host(beta, X, np.float64)
        beta = rows.S @ beta if kind == "gaussian" else beta  # K(Z, C_H)β = K(Z, X_fit)(Sβ)
    b = ops.from_host(np.atleast_1d(ops.to_host(intercept)), X, np.float64)
    labels = None if classes is None else device_labels(classes, X.device)
    return DeviceModel(kind=kind, kernel=kernel, X=X, device=X.device, dtype=X.dtype, C=C,
                       idx=idx, beta=beta, dual=dual, intercept=b, labels=labels,
                       libsvm=libsvm)


def _values(est, X, full: bool, what: str, hint: str = "", fit_dtype: bool = False):
    """K(X, ·) coef + b (float64 on the device; :func:`decision`, the kernel products in the
    training dtype with ``fit_dtype``) checked finite when ``what`` names it, the fitted
    state, and whether X was numpy."""
    state, Z, as_numpy = fitted_input(est, X)
    out = decision(state, Z, full, state.dtype if fit_dtype else None)
    return check_finite(state.ops, out, what, hint) if what else out, state, as_numpy


def _output(out, state, as_numpy: bool):
    """``out`` in the training dtype: numpy for numpy input, else the tensor."""
    out = out.to(state.dtype)
    return to_numpy(out) if as_numpy else out


def predict_ridge(est, X, approach: str):
    """Predictions K(X, C)β + b (K(X, X_fit)α + b for GSA and exact) of a NystromKernelRidge
    fitted on torch: a tensor on the fit's device for tensor input, numpy for numpy input."""
    out, state, as_numpy = _values(est, X, approach in ("gsa", "exact"), "", fit_dtype=True)
    out = out.to(state.dtype)
    if not bool(require_torch().isfinite(out).all()):
        raise ValueError("the predictions contain NaN or infinity; rescale X like the training "
                         "data")
    return _output(out.reshape(-1) if est._y_1d else out, state, as_numpy)


def transform_pca(est, X):
    """Scores ⟨f_k, Φ(z) − μ⟩ of a NystromKernelPCA fitted on torch (training dtype; a tensor
    for tensor input, numpy for numpy input)."""
    return _output(*_values(est, X, est.mode in ("gsa", "exact"), "the transformed values",
                            "rescale X like the training data"))


def decision_svc(est, X, approach: str):
    """Decision values of a NystromSVC fitted on torch (shaped as the solver's)."""
    raw, state, as_numpy = _values(est, X, approach in ("gsa", "exact"), "the decision values",
                                   RESCALE)
    return _output(svc_values(raw, len(est.classes_), state.libsvm), state, as_numpy)


def predict_svc(est, X, approach: str):
    """Labels of a NystromSVC fitted on torch, by the solver's rule on the decision values
    (:func:`asymkern._shared.nystrom_predict.label_index`)."""
    raw, state, as_numpy = _values(est, X, approach in ("gsa", "exact"), "the decision values",
                                   RESCALE)
    idx = label_index(raw, len(est.classes_), state.libsvm)
    if as_numpy or state.labels is None:
        return est.classes_[to_numpy(idx)]
    return state.labels[idx]


def proba_svc(calibration, d):
    """Platt probabilities (host) of the device decision values ``d``; a tensor like ``d``."""
    return from_numpy(calibration.predict_proba(to_numpy(d)), d)


def device_labels(classes: np.ndarray, device):
    """Numeric ``classes`` as a tensor on ``device`` (None for other labels, or an unsigned
    dtype torch lacks: the labels then stay numpy)."""
    if classes.dtype.kind not in "biuf":
        return None
    try:
        return require_torch().tensor(classes, device=device)
    except (TypeError, RuntimeError):
        return None


def fitted_input(est, X):
    """The prediction input of a model fitted on torch, on its device in its dtype.

    Parameters
    ----------
    est : NystromKernelRidge, NystromKernelPCA or NystromSVC
        A model fitted on the torch backend.
    X : tensor or array-like of shape (n_test, d)
        The samples (numpy input is validated as the numpy path validates it).

    Returns
    -------
    state : DeviceModel
        The device state of the fit.
    Xt : tensor of shape (n_test, d)
        X on the fit's device, in the training dtype.
    as_numpy : bool
        Whether X was numpy (the outputs are then numpy).

    Raises
    ------
    ValueError
        If ``est`` was fitted on the numpy path, or X has the wrong number of features.
    """
    owner = type(est).__name__
    check_is_fitted(est, "X_fit_")
    state = getattr(est, "_torch_state", None)
    if not isinstance(state, DeviceModel) or not getattr(est, "torch_fit_", False):
        raise ValueError(f"this {owner} was fitted on numpy arrays without device=...; fit it "
                         "with torch tensors (or a device) to predict on torch tensors")
    as_numpy = not any_torch(X)
    if as_numpy:
        X = est._check_X(X)
    Xt = as_tensor(X, state.device, "X", dtype=state.dtype)
    if Xt.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {Xt.shape[1]} features, but {owner} is expecting "
                         f"{est.n_features_in_} features as input")
    return state, Xt, as_numpy


def training_input(est, X, *others):
    """The training samples of a Nyström machine on its device, validated as on the numpy path.

    Parameters
    ----------
    est : NystromKernelRidge, NystromKernelPCA or NystromSVC
        The estimator (``device``); its ``n_features_in_`` is set here for tensor input (numpy
        input is validated by :func:`asymkern._validation.check_input`, which sets it and the
        feature names).
    X : tensor or array-like of shape (n, d)
        The training samples.
    *others : tensor, array-like or None
        The other inputs of the call (targets, weights): a tensor among them picks the device.

    Returns
    -------
    as_numpy : bool
        Whether X was numpy (the fitted arrays and outputs are then numpy).
    Xt : tensor of shape (n, d)
        A private copy of X on the device (kept as ``X_fit_``: never the caller's memory).

    Raises
    ------
    ValueError
        If X has no samples, is not 2-D or is not finite; with ``kernel='precomputed'``, if X
        is not square or ``gamma`` / ``kernel_params`` are set; if torch cannot evaluate the
        kernel.
    """
    from .._validation import check_input, check_tensor_input
    from .kernels import check_torch_kernel

    dev = resolve_device(est.device, X, *others)
    as_numpy = not any_torch(X)
    if as_numpy:
        X = check_input(est, X, reset=True, name="X")
    Xt = as_tensor(X, dev, "X", copy=True)
    if not as_numpy:
        check_tensor_input(est, Xt, min_samples=1)
    if est._precomputed():  # no gamma / kernel_params; X is the square training kernel matrix
        est._check_precomputed_fit(tuple(Xt.shape))
    else:
        check_torch_kernel(est._kernel())
    return as_numpy, Xt
