"""The Nyström machines on torch (private): the executor's primitives, not their algebra.

NystromKernelRidge, NystromKernelPCA and NystromSVC run one algebra for every executor
(:mod:`asymkern.nystrom._algebra`); this module gives it what is specific to torch:

* :class:`TorchTraining`: the training input on the device (a private copy, the precomputed
  square check), the n×n Gram matrix of the exact machines, the landmarks, and the fitted
  :class:`DeviceModel` recorded on the estimator (what predictions read);
* the landmarks (:func:`nystrom_landmarks_torch`), chosen exactly as the numpy path chooses
  them (Li, Liu and Zhang, Nyström kernel machines, Algorithm 1 steps 1–3: the numpy samplers
  on the host, from the same ``random_state`` stream), for landmark points (K_nm = k(X, C)),
  a Gaussian sketch (C_H = X_H S: K_nm = K S, accumulated over row blocks of K on the device
  and kept during the fit) and a precomputed K (K_nm = K[:, idx]); their
  :class:`LandmarkBasis` gives the rows a:e of K_nm in float64 on the device
  (:meth:`LandmarkBasis.knm`);
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
from .._shared.nystrom_basis import (
    RESCALE,
    basis_from_landmarks,
    check_finite,
    check_psd_kernel,
    draw_landmarks,
    landmark_request,
    row_step,
)
from .._shared.nystrom_predict import decision, label_index, svc_values
from .device import as_tensor, from_numpy, numpy_dtype, resolve_device, to_numpy


class LandmarkBasis:
    """The landmarks of a torch fit and the rows of K_nm they give (built by
    :func:`nystrom_landmarks_torch`).

    Attributes
    ----------
    basis : NystromBasis
        The fitted basis (numpy, on the host; recorded on the estimator).
    kind : {'points', 'gaussian', 'precomputed'}
        Landmark points (rows of X or k-means centres), a Gaussian sketch C_H = X_H S, or
        indices into a precomputed kernel matrix.
    C : tensor of shape (m, d) or None
        The landmark points on the device in X's dtype; the landmark rows of K for
        'precomputed'; None for a sketch.
    center : tensor or None
        The shift of the squared-distance expansion of C (points, 'rbf' / 'cauchy').
    idx : tensor of int or None
        The landmark columns of K ('precomputed').
    sketch : tensor of shape (n, m) or None
        S in float64 on the device ('gaussian').
    """

    def __init__(self, basis, kind: str, tk, X, C=None, center=None, idx=None, sketch=None,
                 KS=None):
        self.basis, self.kind, self.tk, self.X = basis, kind, tk, X
        self.C, self.center, self.idx, self.sketch = C, center, idx, sketch
        self._KS = KS
        self.shape = (int(X.shape[0]), int(basis.n_landmarks))  # K_nm's
        self.ops = ops_of(X)

    def knm(self, a: int, e: int):
        """Rows a:e of K_nm in float64 on the device: K[a:e, idx] ('precomputed'),
        (K S)[a:e] ('gaussian', computed once in the fit) or k(X[a:e], C) (points)."""
        if self.kind == "precomputed":
            return self.X[a:e, self.idx].double()
        if self.kind == "gaussian":
            if self._KS is None:
                raise RuntimeError("the sketch's K S was released after the fit")
            return self._KS[a:e]
        return self.tk.raw(self.X[a:e], self.C, self.center).double()

    def release(self) -> None:
        """Drop K S (n × m) of a sketch: the fitted model keeps only S."""
        self._KS = None

    def column_coef(self, beta):
        """The coefficients of K(Z, ·)'s columns for landmark coefficients β (m × k, float64
        tensor): S β for a sketch (K(Z, C_H) β = K(Z, X_fit)(S β), one n×k product instead of
        K(Z, X_fit) S), else β."""
        return self.sketch @ beta if self.kind == "gaussian" else beta


def nystrom_landmarks_torch(est, Xt, tk, X_fit=None) -> LandmarkBasis:
    """The landmarks and Nyström basis of a torch fit, chosen as the numpy path chooses them.

    Li, Liu and Zhang, Algorithm 1 steps 1–3, for the three kinds of landmarks:

    * points ('uniform', row indices, 'kmeans' centres, 'leverage' scores): drawn on the host
      by the numpy samplers from the same ``random_state`` stream
      (:func:`asymkern._shared.nystrom_basis.draw_landmarks`), K_mm = K(C, C) on the host;
    * ``landmarks='gaussian'`` (§IV, C_H = X_H S): S (n × m) drawn on the host by
      :func:`asymkern.landmarks.gaussian_sketch` from the same stream, K S accumulated over
      row blocks of K on the device (K is never formed whole) and kept until
      :meth:`LandmarkBasis.release`, K_mm = SᵀK S;
    * ``kernel='precomputed'`` (``Xt`` is the training Gram matrix K): indices into K
      ('uniform' from the same stream, or an index array; the estimator's
      ``_precomputed_landmarks``), K_nm = K[:, idx], K_mm = K[idx][:, idx].

    A = V_s Σ_s⁻¹ comes from K_mm on the host
    (:func:`asymkern._shared.nystrom_basis.basis_from_landmarks`). Records the basis on
    ``est`` (``_set_basis``).

    Parameters
    ----------
    est : NystromKernelRidge, NystromKernelPCA or NystromSVC
        The estimator (``landmarks``, ``n_landmarks``, ``subspace_dim``, ``rcond``,
        ``random_state``, ``kernel``).
    Xt : tensor of shape (n, d)
        The training data on the device (the (n, n) Gram matrix for 'precomputed').
    tk : TorchKernel or None
        The resolved (symmetric PSD) kernel on torch; None for 'precomputed'.
    X_fit : ndarray, optional
        A host copy of the training data to record in the basis of a sketch (default: a host
        view of ``Xt``).

    Returns
    -------
    LandmarkBasis
    """
    from .._validation import check_random_state
    from ..config import get_config
    from ..landmarks import gaussian_sketch
    from .kernels import TorchKernelMatrix

    torch = require_torch()
    n, dev = int(Xt.shape[0]), Xt.device
    rng = check_random_state(est.random_state, "random_state")
    m = est._landmark_count(n) if isinstance(est.landmarks, str) else None
    Ct = c = St = KS = Kmm = it = None
    if tk is None:  # precomputed: landmarks are indices into K
        idx, kernel = est._precomputed_landmarks(n, m, rng)
        m = len(idx)
        it = torch.as_tensor(np.asarray(idx), device=dev)
        Ct = Xt[it]  # the landmark rows of K (landmarks_, as in memory)
        Kmm = to_numpy(Ct[:, it].double())
        kind = "precomputed"
    else:
        kernel = tk.kernel
        check_psd_kernel(kernel)  # as build_basis: a symmetric PSD kernel
        method, m, idx = landmark_request(est.landmarks, m, n)
        kind = "gaussian" if method == "gaussian" else "points"
        if method == "gaussian":  # C_H = X_H S: K_nm = K S, K_mm = SᵀK S, K streamed by rows
            S = gaussian_sketch(n, m, random_state=rng)  # the numpy draw, same stream
            St = torch.as_tensor(S, dtype=torch.float64, device=dev)
            KS = TorchKernelMatrix(tk, Xt, Xt, working_memory=get_config()["working_memory"]
                                   ).matmat(St, dtype=torch.float64)
            Kmm = to_numpy(St.T @ KS)
        else:  # landmark points: the numpy samplers on the host, same stream
            idx, Ct = draw_landmarks(Xt, kernel, rng, method, m, idx)
            c = tk.center(Ct) if tk.name in ("rbf", "cauchy") else None
    b = basis_from_landmarks(
        kernel, to_numpy(Ct) if Ct is not None else None, idx, numpy_dtype(Xt),
        subspace_dim=est._subspace_request(m), rcond=est.rcond, Kmm=Kmm,
        sketch=None if St is None else to_numpy(St),
        X_fit=None if St is None else (to_numpy(Xt) if X_fit is None else X_fit))
    est._set_basis(b)
    return LandmarkBasis(b, kind, tk, Xt, C=Ct, center=c, idx=it, sketch=St, KS=KS)


@dataclass(frozen=True)
class DeviceModel:
    """The fitted state of a Nyström machine on torch: what its predictions read (the
    :class:`asymkern._shared.nystrom_predict.FittedModel` of the torch executor).

    Attributes
    ----------
    kind : {'points', 'gaussian', 'precomputed'}
        Landmark points, a Gaussian sketch, or a precomputed kernel (an exact machine has
        'points', or 'precomputed').
    kernel : TorchKernel or None
        The kernel on torch (None: precomputed).
    X : tensor of shape (n, d)
        The training data on the device.
    device, dtype
        The fit's device and torch dtype.
    C, center, idx : tensor or None
        The landmark points and their squared-distance shift (points), or the landmark
        columns of K (precomputed).
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
    center: Any = None
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
        return self.kernel.raw(Z, self.C, self.center).double()

    def full_times(self, Z, B, dtype=None):
        """K(Z, X_fit) B (float64) through a TorchKernelMatrix, streamed over row blocks of Z;
        ``dtype`` (default float64): the torch dtype the kernel blocks and B are multiplied in
        (float64 gives numpy's mixed-precision product of float32 kernel values)."""
        from ..config import get_config
        from .kernels import TorchKernelMatrix

        torch = require_torch()
        G = TorchKernelMatrix(self.kernel, Z, self.X,
                              working_memory=get_config()["working_memory"])
        if dtype is None or dtype == torch.float64:
            return G.matmat(B, dtype=torch.float64)
        return G.matmat(B.to(dtype)).double()


class TorchTraining:
    """The training data of a Nyström machine on torch (the executor's side of a fit).

    Parameters
    ----------
    est : NystromKernelRidge, NystromKernelPCA or NystromSVC
    X : tensor or array-like of shape (n, d)
        The training samples (validated; the (n, n) Gram matrix when precomputed).
    *others : tensor, array-like or None
        The other inputs (a tensor among them picks the device).

    Attributes
    ----------
    ops : ArrayOps
        The torch primitives.
    as_numpy : bool
        Whether X was numpy (the fitted arrays are then numpy).
    Xt : tensor of shape (n, d)
        A private copy of X on the device.
    X_fit : ndarray or tensor
        What the model keeps as ``X_fit_`` (a numpy copy for numpy input).
    n : int
    tk : TorchKernel or None
        The kernel on torch (None: precomputed).
    """

    def __init__(self, est, X, *others):
        from .kernels import TorchKernel

        self.device, self.as_numpy, self.Xt = training_input(est, X, *others)
        self.ops = ops_of(self.Xt)
        self.n = int(self.Xt.shape[0])
        self.tk = None if est._precomputed() else TorchKernel(est._kernel(),
                                                              int(self.Xt.shape[1]))
        self.X_fit = to_numpy(self.Xt).copy() if self.as_numpy else self.Xt
        self.dtype = numpy_dtype(self.Xt)
        self.lb = None

    @staticmethod
    def host(a):
        """A tensor input (targets, weights) on the host; other inputs unchanged."""
        return to_numpy(a) if any_torch(a) else a

    def out(self, a):
        """A fitted array as the model keeps it: a numpy copy for numpy input (never the
        memory of the device state)."""
        return to_numpy(a).copy() if self.as_numpy and any_torch(a) else a

    def gram(self):
        """The n×n kernel matrix K(X, X) in float64 on the device (a copy of a precomputed
        K: the caller may write to it)."""
        from .kernels import TorchKernelMatrix

        torch = require_torch()
        if self.tk is None:
            return self.Xt.to(torch.float64, copy=True)
        return TorchKernelMatrix(self.tk, self.Xt, self.Xt).to_dense().to(torch.float64)

    def landmarks(self, est) -> LandmarkBasis:
        """The landmarks and basis (recorded on ``est``); K_nm rows through ``knm``."""
        self.lb = nystrom_landmarks_torch(est, self.Xt, self.tk,
                                          self.X_fit if self.as_numpy else None)
        return self.lb

    def device_state(self, beta=None, dual=None, intercept=None, classes=None,
                     libsvm: bool = False) -> DeviceModel:
        """The fitted :class:`DeviceModel` the estimator keeps (``beta``: host landmark
        coefficients; ``dual`` a tensor; ``intercept`` host or tensor; ``classes``: a
        classifier's labels)."""
        labels = None if classes is None else device_labels(classes, self.device)
        lb, like = self.lb, self.Xt
        f64 = require_torch().float64
        if beta is not None:
            beta = lb.column_coef(self.ops.from_host(beta, like, f64))
        b = self.ops.from_host(np.atleast_1d(self.ops.to_host(intercept)), like, f64)
        points = lb is not None and lb.kind == "points"
        return DeviceModel(
            kind=lb.kind if lb is not None else ("precomputed" if self.tk is None else "points"),
            kernel=self.tk, X=self.Xt, device=self.device, dtype=self.Xt.dtype,
            C=lb.C if points else None, center=lb.center if lb is not None else None,
            idx=lb.idx if lb is not None else None, beta=beta, dual=dual, intercept=b,
            labels=labels, libsvm=libsvm)


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
    device : torch.device
    as_numpy : bool
        Whether X was numpy (the fitted arrays and outputs are then numpy).
    Xt : tensor of shape (n, d)
        A private copy of X on the device (kept as ``X_fit_``: never the caller's memory).

    Raises
    ------
    ValueError
        If X has no samples, is not 2-D or is not finite; with ``kernel='precomputed'``, if X
        is not square or ``gamma`` / ``kernel_params`` are set.
    """
    from .._validation import check_input, check_tensor_input

    dev = resolve_device(est.device, X, *others)
    as_numpy = not any_torch(X)
    if as_numpy:
        X = check_input(est, X, reset=True, name="X")
    Xt = as_tensor(X, dev, "X", copy=True)
    if not as_numpy:
        check_tensor_input(est, Xt, min_samples=1)
    if est._precomputed():  # no gamma / kernel_params; X is the square training kernel matrix
        est._check_precomputed_fit(tuple(Xt.shape))
    return dev, as_numpy, Xt
