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

from .._dispatch import (
    DASK_EXTRA_HINT,
    any_dask,
    is_dask_array,
    register_dask_executor,
    require_dask,
)


def _kernel_matrix(kernel, X, Z=None, *, reference=None, **kwargs):
    """``KernelMatrix(...)`` for dask inputs: the lazy :class:`~.kernel.DaskKernelMatrix`."""
    from .kernel import DaskKernelMatrix

    return DaskKernelMatrix(kernel, X, Z, reference=reference, **kwargs)


def _top_svd(G, n_components, solver, random_state, **options):
    """``top_svd`` for dask inputs (:func:`.svd.dask_top_svd`)."""
    from .svd import dask_top_svd

    return dask_top_svd(G, n_components, solver, random_state, **options)


def _nystrom_access(G, working_memory):
    """The Nyström access object for a dask input (:class:`.nystrom.DaskAccess`)."""
    from .nystrom import DaskAccess

    return DaskAccess(G, working_memory)


def _nystrom_once(*args, **kwargs):
    """One asymmetric Nyström solve on a :class:`.nystrom.DaskAccess`."""
    from .nystrom import nystrom_once

    return nystrom_once(*args, **kwargs)


def _nystrom_features(basis, Z, B=None):
    """``NystromBasis.features`` / ``landmark_kernel`` for dask Z (:func:`.machines.features`)."""
    from .machines import features

    return features(basis, Z, B=B)


# the kernel layer, asymkern.linalg and asymkern._shared sit below this package: they reach it
# through these hooks
register_dask_executor("kernel_matrix", _kernel_matrix)
register_dask_executor("top_svd", _top_svd)
register_dask_executor("nystrom_access", _nystrom_access)
register_dask_executor("nystrom_once", _nystrom_once)
register_dask_executor("nystrom_features", _nystrom_features)


def __getattr__(name):  # lazy: importing asymkern._dask must not import dask
    if name == "DaskKernelMatrix":
        from .kernel import DaskKernelMatrix

        return DaskKernelMatrix
    raise AttributeError(name)


__all__ = ["DASK_EXTRA_HINT", "DaskKernelMatrix", "any_dask", "is_dask_array", "require_dask"]
