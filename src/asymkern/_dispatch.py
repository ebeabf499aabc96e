"""Dask detection and the Dask executor hooks (lowest layer: imports nothing of asymkern).

The library imports without dask: :func:`is_dask_array` looks at ``sys.modules`` and never
imports dask itself, so a non-dask input costs nothing and dask stays optional.

The kernel layer and :mod:`asymkern.linalg` sit *below* the Dask executors
(:mod:`asymkern._dask`), so they must not import them. Instead, :mod:`asymkern._dask` registers
its entry points here when it is imported (the root package ``asymkern`` imports it, so the
hooks are in place whatever the user imported), and the lower layers look them up with
:func:`dask_executor` when they see a dask input — the same inversion as
``Kernel._matrix_type``, which :mod:`asymkern.kernels.matrix` fills in for
:mod:`asymkern.kernels.base`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

DASK_EXTRA_HINT = 'pip install "asymkern[dask]"'

_DASK_EXECUTORS: dict[str, Callable[..., Any]] = {}


def is_dask_array(x) -> bool:
    """True when ``x`` is a ``dask.array.Array`` (without importing dask)."""
    mod_da = sys.modules.get("dask.array")
    if mod_da is not None:
        return isinstance(x, mod_da.Array)
    # dask.array not imported yet: only an object from dask can be a dask array
    if (type(x).__module__ or "").startswith("dask"):
        return isinstance(x, require_dask().Array)
    return False


def any_dask(*objs) -> bool:
    """True when any of ``objs`` is a dask array."""
    return any(o is not None and is_dask_array(o) for o in objs)


def require_dask():
    """Import dask.array, or raise an ImportError naming the extra to install."""
    try:
        import dask  # noqa: F401
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - exercised only without dask
        raise ImportError(
            "a dask array was given, but dask (with dask.array) is not installed; install the "
            f"extra: {DASK_EXTRA_HINT}"
        ) from exc
    return da


def register_dask_executor(name: str, func: Callable[..., Any]) -> None:
    """Register the Dask executor ``func`` under ``name`` (called by :mod:`asymkern._dask`).

    Parameters
    ----------
    name : str
        The hook a lower layer asks for (``"kernel_matrix"``, ``"top_svd"``,
        ``"nystrom_access"``, ``"nystrom_once"``).
    func : callable
        The executor; registering a name again replaces it.
    """
    _DASK_EXECUTORS[name] = func


def dask_executor(name: str) -> Callable[..., Any]:
    """The Dask executor registered under ``name``.

    Parameters
    ----------
    name : str
        A name given to :func:`register_dask_executor`.

    Returns
    -------
    callable

    Raises
    ------
    RuntimeError
        When :mod:`asymkern._dask` has not registered ``name`` (it does so when imported, and
        importing ``asymkern`` imports it).
    """
    try:
        return _DASK_EXECUTORS[name]
    except KeyError:
        raise RuntimeError(
            f"no Dask executor {name!r} is registered; import asymkern._dask first"
        ) from None


# ----------------------------------------------------------------------------------- torch
TORCH_EXTRA_HINT = 'pip install "asymkern[torch]"'


def is_torch_tensor(x) -> bool:
    """True when ``x`` is a ``torch.Tensor`` (without importing torch).

    Parameters
    ----------
    x : object
        Any object.

    Returns
    -------
    bool
        ``False`` whenever torch has not been imported: nothing can then be a tensor.
    """
    mod = sys.modules.get("torch")
    return mod is not None and isinstance(x, mod.Tensor)


def host_copy(x, name: str | None = None):
    """``x`` as a host numpy array when it is a torch tensor (on any device), else ``x``.

    The one reader of a tensor's values on the host. Scores (R², accuracy) are computed on the
    host by scikit-learn's metrics, which cannot read a CUDA tensor: predictions on the device,
    and targets or weights given as tensors, are copied to the host first. A tensor that
    requires grad is read without its graph; a bfloat16 tensor (a dtype numpy lacks) becomes
    float32, which holds it exactly; a sparse tensor is refused, naming ``name``, with a
    ``TypeError`` that says how to pass it. A CPU tensor's array shares its memory.

    Parameters
    ----------
    x : object
        A tensor, an array-like or None.
    name : str, optional
        The argument's name, for the messages.
    """
    if not is_torch_tensor(x):
        return x
    torch = sys.modules["torch"]
    label = name or "the tensor"
    refuse_meta(x, label)
    if x.layout != torch.strided:
        raise TypeError(f"{label} is a sparse tensor ({x.layout}) where a dense array is "
                        f"expected: pass {name or 'it'}.to_dense()")
    x = x.detach().resolve_conj().resolve_neg()  # lazy conjugate / negative views: numpy
    if x.dtype == torch.bfloat16:  # reads neither
        x = x.to(torch.float32)
    return x.cpu().numpy()


def refuse_meta(x, name: str = "X") -> None:
    """Raise when ``x`` is a torch tensor on the ``'meta'`` device (a shape without data).

    Parameters
    ----------
    x : object
        Any input; only a torch tensor on the meta device is refused.
    name : str, default 'X'
        The argument's name, for the message.

    Raises
    ------
    ValueError
        When ``x`` is a meta tensor: no computation can read its (absent) entries.
    """
    if is_torch_tensor(x) and x.device.type == "meta":
        raise ValueError(f"{name} is a torch tensor on the 'meta' device, which has a shape "
                         f"(here {tuple(x.shape)}) but no data; pass a tensor on a device "
                         "with data ('cpu', 'cuda', ...) or a numpy array")


def any_torch(*objs) -> bool:
    """True when any of ``objs`` is a torch tensor (``None`` entries are skipped)."""
    return any(o is not None and is_torch_tensor(o) for o in objs)


def require_torch():
    """Import and return torch, or raise an ImportError naming the extra to install.

    Returns
    -------
    module
        The ``torch`` module.

    Raises
    ------
    ImportError
        When torch is not installed; the message names ``asymkern[torch]``.
    """
    try:
        import torch
    except ImportError as exc:
        raise ImportError(
            "the torch backend (a torch tensor input or device=...) needs PyTorch, which is not "
            f"installed; install the extra: {TORCH_EXTRA_HINT}"
        ) from exc
    return torch


__all__ = ["DASK_EXTRA_HINT", "TORCH_EXTRA_HINT", "any_dask", "any_torch", "dask_executor",
           "is_dask_array", "is_torch_tensor", "register_dask_executor", "require_dask",
           "require_torch"]
