"""Shared steps of the Nyström machines on torch (private): landmarks, basis, prediction input.

:mod:`.krr` (``NystromKernelRidge``), :mod:`.kpca` (``NystromKernelPCA``) and :mod:`.svc`
(``NystromSVC``) draw their landmark points and build A = V_s Σ_s⁻¹ exactly as the numpy path
does (paper 004, Algorithm 1 steps 1–3: the numpy samplers on the host, from the same
``random_state`` stream, so both paths pick the same landmarks), and check their prediction
input the same way.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._dispatch import any_torch, require_torch
from .device import as_tensor, resolve_device, to_numpy

#: the advice of the non-finite-output errors
RESCALE = "rescale X (e.g. StandardScaler) or change the kernel parameters"


def check_finite_tensor(T, what: str, hint: str = RESCALE):
    """The numpy path's :func:`~asymkern._validation.check_finite_output` for a tensor: an
    ``OverflowError`` naming ``what`` if T (computed from finite input) is not finite. The test
    runs on the device; the tensor goes to the host only to word the error. Returns T."""
    torch = require_torch()
    if T.numel() and not bool(torch.isfinite(T).all()):
        from .._validation import check_finite_output

        check_finite_output(to_numpy(T), what, hint)
    return T


def row_step(m: int, k: int) -> int:
    """Rows per block of an n×m kernel block with k right-hand sides, within ``working_memory``
    (float64 work arrays)."""
    from ..config import get_config

    budget = float(get_config()["working_memory"]) * 2**20
    return int(max(1, budget // (8 * 4 * (m + k))))


def draw_landmark_points(Xt, kernel, rng, method: str, m: int, idx):
    """Landmark points of a torch fit, drawn on the host by the numpy path's samplers.

    Parameters
    ----------
    Xt : tensor of shape (n, d)
        The training data on the device.
    kernel : Kernel
        The resolved kernel (for the leverage scores).
    rng : RandomState
        The estimator's random stream (the numpy path's draw order).
    method, m, idx
        As :func:`asymkern._shared.nystrom_basis.landmark_request` returns them: 'uniform'
        (``idx`` None: drawn here; else the given row indices), 'kmeans' or 'leverage'.

    Returns
    -------
    idx : ndarray of int
        The landmark rows (k-means: the rows nearest the centres).
    Ct : tensor of shape (m, d)
        The landmarks on the device in X's dtype (k-means: the centres).
    """
    from ..landmarks import kmeans_landmarks, select_landmarks

    torch = require_torch()
    n, dev = int(Xt.shape[0]), Xt.device
    if method == "kmeans":  # k-means centres (the numpy path's sampler and stream)
        idx, C = kmeans_landmarks(to_numpy(Xt), m, return_centers=True, random_state=rng)
        return idx, torch.as_tensor(np.ascontiguousarray(C), device=dev).to(Xt.dtype)
    if method == "leverage":  # approximate ridge leverage scores
        idx = select_landmarks(to_numpy(Xt), m, method="leverage", random_state=rng,
                               kernel=kernel)
    elif idx is None:
        idx = select_landmarks(None, m, method="uniform", random_state=rng, n_samples=n)
    return idx, Xt[torch.as_tensor(np.asarray(idx), device=dev)]


def set_basis(est, b) -> None:
    """Record a fitted Nyström basis on ``est``: ``basis_``, ``landmark_indices_``,
    ``landmarks_``, ``n_landmarks_`` and ``subspace_dim_``."""
    est.basis_ = b
    est.landmark_indices_ = b.indices
    est.landmarks_ = b.centers
    est.n_landmarks_ = b.n_landmarks
    est.subspace_dim_ = b.subspace_dim


def nystrom_landmarks_torch(est, Xt, kernel):
    """The landmarks and Nyström basis of a torch fit, chosen as the numpy path chooses them.

    The landmarks are drawn on the host by the numpy samplers from the same ``random_state``
    stream ('uniform', row indices, 'kmeans' centres, 'leverage' scores:
    :func:`draw_landmark_points`); A = V_s Σ_s⁻¹ comes from K_mm = K(C, C) on the host
    (:func:`asymkern._shared.nystrom_basis.basis_from_landmarks`, paper 004 Algorithm 1 steps
    1–3). Records the basis on ``est`` (:func:`set_basis`).

    Parameters
    ----------
    est : NystromKernelRidge or NystromKernelPCA
        The estimator (``landmarks``, ``n_landmarks``, ``subspace_dim``, ``rcond``,
        ``random_state``).
    Xt : tensor of shape (n, d)
        The training data on the device.
    kernel : Kernel
        The resolved (symmetric PSD) kernel.

    Returns
    -------
    Ct : tensor of shape (m, d)
        The landmarks on the device, in X's dtype.
    basis : NystromBasis
        The fitted basis (numpy, on the host).
    """
    from .._shared.nystrom_basis import basis_from_landmarks, landmark_request
    from .._validation import check_random_state

    n = int(Xt.shape[0])
    rng = check_random_state(est.random_state, "random_state")
    m = est._landmark_count(n) if isinstance(est.landmarks, str) else None
    method, m, idx = landmark_request(est.landmarks, m, n)
    idx, Ct = draw_landmark_points(Xt, kernel, rng, method, m, idx)
    centers = to_numpy(Ct)
    b = basis_from_landmarks(kernel, centers, idx, centers.dtype,
                             subspace_dim=est._subspace_request(m), rcond=est.rcond)
    set_basis(est, b)
    return Ct, b


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
    state : dict
        The device state of the fit (``device``, ``dtype``, ``kernel``, …).
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
    if state is None or not getattr(est, "torch_fit_", False):
        raise ValueError(f"this {owner} was fitted on numpy arrays without device=...; fit it "
                         "with torch tensors (or a device) to predict on torch tensors")
    as_numpy = not any_torch(X)
    if as_numpy:
        X = est._check_X(X)
    Xt = as_tensor(X, state["device"], "X", dtype=state["dtype"])
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
        If X has no samples, is not 2-D or is not finite.
    """
    from .._validation import check_input

    dev = resolve_device(est.device, X, *others)
    as_numpy = not any_torch(X)
    if as_numpy:
        X = check_input(est, X, reset=True, name="X")
    Xt = as_tensor(X, dev, "X", copy=True)
    if not as_numpy:
        if int(Xt.shape[0]) < 1:
            raise ValueError(f"X has 0 sample(s) (shape={tuple(Xt.shape)}) while a minimum of "
                             "1 is required.")
        est.n_features_in_ = int(Xt.shape[1])
        est.__dict__.pop("feature_names_in_", None)  # a tensor has no column names
    return dev, as_numpy, Xt
