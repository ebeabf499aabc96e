"""The Nyström machines on torch (private): the executor's primitives, not their algebra.

NystromKernelRidge, NystromKernelPCA and NystromSVC run one algebra for every executor
(:mod:`asymkern.nystrom._algebra`), one training side (the estimators' ``_Training``), one
landmark step (Li, Liu and Zhang, Nyström kernel machines, Algorithm 1 steps 1–3:
:func:`asymkern._shared.nystrom_basis.fit_landmarks`, whose rows of K_nm come from the
executor's ``ops.kernel_matrix``) and one prediction path on one fitted model
(:class:`asymkern._shared.nystrom_predict.NystromModel`, tensors on the device for a torch
fit); this module gives them the input and output primitives specific to torch:

* :func:`training_input`: the training input on its device (a private copy, the tensor input
  checks, the precomputed square check, the kernels torch can evaluate);
* :func:`fitted_input`: new points on the fit's device in its dtype (their features
  checked), and whether the outputs go back to numpy.
"""

from __future__ import annotations

from sklearn.utils.validation import check_is_fitted

from .._dispatch import any_torch
from .._shared.nystrom_predict import NystromModel
from .._validation import check_tensor_shape
from .device import as_tensor, resolve_device
from .primitives import torch_dtype


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
    model : NystromModel
        The fitted model on the device.
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
    if not isinstance(state, NystromModel) or not getattr(est, "torch_fit_", False):
        raise ValueError(f"this {owner} was fitted on numpy arrays without device=...; fit it "
                         "with torch tensors (or a device) to predict on torch tensors")
    as_numpy = not any_torch(X)
    if as_numpy:
        X = est._check_X(X)
    Xt = as_tensor(X, state.X.device, "X", dtype=torch_dtype(state.dtype))
    check_tensor_shape(Xt, owner)
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
    if est._precomputed():  # the private copy of an n×n matrix: checked before it is made
        from .._validation import array_nbytes
        from ..config import check_memory

        n = int(X.shape[0])
        check_memory(array_nbytes(X), f"{type(est).__name__}(kernel='precomputed') on {n} "
                     "samples", "the data X with a kernel (no n×n matrix is then held)",
                     detail=f"the private copy of the {n}×{n} kernel matrix on the device")
    Xt = as_tensor(X, dev, "X", copy=True)
    if not as_numpy:
        check_tensor_input(est, Xt, min_samples=1)
    if est._precomputed():  # no gamma / kernel_params; X is the square training kernel matrix
        est._check_precomputed_fit(tuple(Xt.shape))
    else:
        check_torch_kernel(est._kernel())
    return as_numpy, Xt
