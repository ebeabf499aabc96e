"""Devices and array conversion of the torch backend (private)."""

from __future__ import annotations

import math

import numpy as np

from .._dispatch import host_copy, is_torch_tensor, refuse_meta, require_torch


def resolve_device(device, *arrays):
    """The ``torch.device`` to compute on.

    Parameters
    ----------
    device : None, str or torch.device
        ``None``: the device of the first tensor among ``arrays`` (CPU when there is none);
        ``'cpu'``, ``'cuda'``, ``'cuda:0'``, … or a ``torch.device``.
    *arrays : array-like or None
        The inputs of the call.

    Returns
    -------
    torch.device

    Raises
    ------
    ValueError
        When ``device`` is not a valid device string, names a CUDA device while CUDA is not
        available, or is (or, for ``None``, a tensor input is on) the ``'meta'`` device,
        which holds no data.
    TypeError
        When ``device`` is neither None, a string nor a ``torch.device``.
    """
    torch = require_torch()
    for a in arrays:
        refuse_meta(a, "an input")
    if device is None:
        return next((a.device for a in arrays if is_torch_tensor(a)), torch.device("cpu"))
    if isinstance(device, str):
        try:
            dev = torch.device(device)
        except RuntimeError as exc:
            raise ValueError(f"device={device!r} is not a valid torch device; expected None, "
                             "'cpu', 'cuda', 'cuda:0', ... or a torch.device") from exc
    elif isinstance(device, torch.device):
        dev = device
    else:
        raise TypeError(f"device must be None, a string such as 'cpu' or 'cuda', or a "
                        f"torch.device, got {device!r}")
    if dev.type == "meta":
        raise ValueError(f"device={device!r}: the 'meta' device holds shapes but no data, so "
                         "nothing can be computed there; use device='cpu', 'cuda', ... or None")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r}: CUDA is not available on this machine (torch "
                         f"{torch.__version__}); use device='cpu' or None")
    return dev


def as_tensor(X, device, name: str = "X", dtype=None, copy: bool = False):
    """A 2-D, finite, floating tensor on ``device`` (the input is never modified).

    Integer, boolean, float16 and bfloat16 inputs become float64 (as the numpy path's
    :func:`asymkern._validation.as_data` converts integer, boolean and float16 arrays);
    float32 and float64 are kept (or cast to ``dtype`` when given). A conversion to another
    dtype is a copy, checked against ``max_dense_memory`` before it is made, as the numpy
    path checks its conversions. Numpy input is copied to the device; a tensor already there
    is used as is (never written to; a tensor that requires grad is read through
    ``detach``, so no autograd graph is recorded). With ``copy`` the result never shares the
    input's memory (a fitted model keeping it is then unaffected by later changes to the
    caller's array; a CPU tensor made from a numpy array shares that array's memory).

    Parameters
    ----------
    X : tensor or array-like of shape (n, d)
        The input.
    device : torch.device or str
        Where the result lives.
    name : str, default='X'
        The argument's name in error messages.
    dtype : torch.dtype, optional
        The result's dtype (default: float32 and float64 kept, every other type float64).
    copy : bool, default=False
        Never share the input's memory.

    Returns
    -------
    tensor of shape (n, d)

    Raises
    ------
    TypeError
        For a sparse matrix or a non-numeric input.
    ValueError
        For a complex input (as scikit-learn's ``check_array``), a non-2-D input, NaN /
        infinity or a tensor on the ``'meta'`` device (no data), naming ``name``; for
        ``device`` the meta device.
    MemoryBudgetError
        When the converted copy would exceed ``max_dense_memory`` (naming ``name``, its dtype
        and the target dtype).
    """
    torch = require_torch()
    refuse_meta(X, name)
    if getattr(device, "type", device) == "meta":
        raise ValueError(f"device={device!r}: the 'meta' device holds no data; use 'cpu', "
                         "'cuda', ... or None")
    if is_torch_tensor(X):
        if X.is_sparse or X.layout != torch.strided:
            raise TypeError(f"{name} is a sparse torch tensor; the torch backend needs dense "
                            "tensors")
        T = X.detach()
    else:
        import scipy.sparse as sp

        if sp.issparse(X):
            raise TypeError(f"{name} is a scipy sparse matrix; the torch backend needs dense "
                            "input (densify it, or use device=None for the numpy path)")
        A = np.asarray(X)
        if A.dtype == object or not (np.issubdtype(A.dtype, np.number) or A.dtype == bool):
            raise TypeError(f"{name} must be numeric, got dtype {A.dtype}")
        T = torch.as_tensor(A)
    if T.is_complex():
        raise ValueError(f"Complex data not supported: {name} is complex-valued; expected "
                         "real numbers")
    target = dtype if dtype is not None else (
        T.dtype if T.dtype in (torch.float32, torch.float64) else torch.float64)
    if T.dtype != target:
        _check_conversion(T, target, name)
        T = T.to(target)
    if T.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features), got "
                         f"{T.ndim} dimensions (shape {tuple(T.shape)})")
    T = T.to(device)
    if T.numel() and not all_finite(T):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    if copy and T.numel():
        source = X.data_ptr() if is_torch_tensor(X) else \
            np.asarray(X).__array_interface__["data"][0]
        if T.data_ptr() == source:
            T = T.clone()
    return T


def _check_conversion(T, target, name: str) -> None:
    """Refuse, before it is made, a copy of the tensor ``T`` in the dtype ``target`` larger
    than the ``max_dense_memory`` budget (an int8 matrix grows 8× as float64), with the
    words of the numpy path's conversion check.

    Parameters
    ----------
    T : tensor
        The input, in its own dtype.
    target : torch.dtype
        The dtype of the copy.
    name : str
        The argument's name in the message.

    Raises
    ------
    MemoryBudgetError
        When the copy exceeds the budget.
    """
    from ..config import check_memory

    torch = require_torch()
    source, dest = (str(t).replace("torch.", "") for t in (T.dtype, target))
    nbytes = T.numel() * torch.empty((), dtype=target).element_size()  # torch 2.0: no itemsize
    check_memory(nbytes, f"converting {name} from {source} to {dest}",
                 f"float32 or float64 data for {name}", detail=f"a copy of {T.numel()} values")


def all_finite(T) -> bool:
    """Whether every entry of the tensor T is finite, without a temporary as large
    as T (``torch.isfinite(T).all()`` forms a boolean copy and more: 11 bytes per entry, 94
    MiB for a 3000² precomputed kernel). Its sum is finite unless an entry is not (or the
    sum overflows); only then are row chunks of about 1 MiB checked."""
    torch = require_torch()
    if not T.is_floating_point() or T.numel() == 0:
        return True
    T = T.detach()  # a tensor that requires grad: no graph of the sums, no scalar warning
    if math.isfinite(float(T.sum())):
        return True
    if T.ndim == 0:
        return False
    step = max(1, (1 << 20) // max(1, T[0].numel() * T.element_size()))
    return all(bool(torch.isfinite(T[a:a + step]).all()) for a in range(0, T.shape[0], step))


def to_numpy(T, name: str | None = None) -> np.ndarray:
    """A numpy array of a tensor's values on the host (a copy unless T is a CPU tensor): a
    bfloat16 tensor as float32, a sparse tensor refused naming ``name``
    (:func:`asymkern._dispatch.host_copy`, the one reader)."""
    return host_copy(T, name)
