"""Dask execution of the kernel layer, KernelSVD and asymmetric Nyström (private).

The library imports without dask: :func:`is_dask_array` (:mod:`asymkern._dispatch`) looks at
``sys.modules`` and never imports dask itself, so a non-dask input costs nothing and dask stays
optional. Every entry point (``KernelMatrix``, ``KernelSVD``, ``top_svd``, ``asymmetric_nystrom``)
asks :func:`is_dask_array` at its top and hands dask inputs to this subpackage: the estimator
packages (above it) import it directly; the kernel layer and :mod:`asymkern.linalg` (below it)
call the hooks this package registers in :mod:`asymkern._dispatch` when imported.

"One block function, two executors": the tasks here call the same block-level code as the
in-memory loops (``Kernel._raw``/``_log_raw`` through ``KernelMatrix.block``,
``KernelMatrix._block_lse``, the Nyström core solve); only the scheduling differs.
"""

from __future__ import annotations

import importlib

from .._dispatch import (
    DASK_EXTRA_HINT,
    any_dask,
    is_dask_array,
    register_dask_executor,
    require_dask,
)


def _lazy(module: str, name: str):
    """The executor ``name`` of the submodule ``module``, imported at its first call (importing
    asymkern._dask must not import dask)."""

    def executor(*args, **kwargs):
        return getattr(importlib.import_module(module, __name__), name)(*args, **kwargs)

    return executor


# the kernel layer, asymkern.linalg and asymkern._shared sit below this package: they reach it
# through these hooks
register_dask_executor("kernel_matrix", _lazy(".kernel", "DaskKernelMatrix"))
register_dask_executor("top_svd", _lazy(".svd", "dask_top_svd"))
register_dask_executor("nystrom_access", _lazy(".nystrom", "DaskAccess"))
register_dask_executor("nystrom_once", _lazy(".nystrom", "nystrom_once"))
register_dask_executor("nystrom_features", _lazy(".machines", "features"))


def __getattr__(name):  # lazy: importing asymkern._dask must not import dask
    if name == "DaskKernelMatrix":
        from .kernel import DaskKernelMatrix

        return DaskKernelMatrix
    raise AttributeError(name)


__all__ = ["DASK_EXTRA_HINT", "DaskKernelMatrix", "any_dask", "is_dask_array", "require_dask"]
