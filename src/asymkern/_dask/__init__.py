"""Dask execution of the kernel layer, KernelSVD and asymmetric Nyström (private).

The library imports without dask: :func:`is_dask_array` looks at ``sys.modules`` and never
imports dask itself, so a non-dask input costs nothing and dask stays optional. Every entry point
(``KernelMatrix``, ``KernelSVD``, ``top_svd``, ``asymmetric_nystrom``) asks :func:`is_dask_array`
at its top and hands dask inputs to this subpackage.

"One block function, two executors": the tasks here call the same block-level code as the
in-memory loops (``Kernel._raw``/``_log_raw`` through ``KernelMatrix.block``,
``KernelMatrix._block_lse``, the Nyström core solve); only the scheduling differs.
"""

from __future__ import annotations

import sys

DASK_EXTRA_HINT = 'pip install "asymkern[dask]"'


def is_dask_array(x) -> bool:
    """True when ``x`` is a ``dask.array.Array`` (without importing dask)."""
    mod_da = sys.modules.get("dask.array")
    if mod_da is not None:
        return isinstance(x, mod_da.Array)
    # dask.array not imported yet: only an object from dask can be a dask array
    mod = type(x).__module__ or ""
    if mod.startswith("dask"):
        require_dask()
        return isinstance(x, sys.modules["dask.array"].Array)
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


def __getattr__(name):  # lazy: importing asymkern._dask must not import dask
    if name == "DaskKernelMatrix":
        from .kernel import DaskKernelMatrix

        return DaskKernelMatrix
    raise AttributeError(name)


__all__ = ["DASK_EXTRA_HINT", "DaskKernelMatrix", "any_dask", "is_dask_array", "require_dask"]
