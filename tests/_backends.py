"""Backend parametrisation shared by the estimator tests (not a test module).

A test that takes the ``backend`` fixture (``tests/conftest.py``) runs once per executor:
``'numpy'`` (in-memory arrays, ``device=None``) and ``'torch'`` (tensors on
``ASYMKERN_TEST_DEVICE``, CPU by default; skipped when torch is not installed). Inputs go
through :func:`as_backend`, results come back through :func:`to_np`, and :func:`tol` widens a
float64 tolerance on CUDA (see ``tests/_torch_helpers.dtol``). The numpy results are the
reference: a test compares every backend with them at the parity tolerances of the torch
tests (1e-10 float64, 1e-4 float32, relative).
"""

from __future__ import annotations

import numpy as np
from _torch_helpers import TEST_DEVICE, dtol, to_np

BACKENDS = ("numpy", "torch")
#: with the Dask executor (the ``any_backend`` fixture), for tests that hold on all three
ALL_BACKENDS = BACKENDS + ("dask",)


def as_backend(x, backend: str, dtype=None):
    """``x`` (array-like) as an input of ``backend``: a numpy array, a tensor on the test
    device, or a dask array in row chunks of at most 20 (``dtype``: a numpy dtype, default
    x's float dtype)."""
    a = np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
    if backend == "numpy":
        return a
    if backend == "dask":
        import dask.array as da

        return da.from_array(a, chunks=(20,) + a.shape[1:])
    import torch

    return torch.as_tensor(a, device=TEST_DEVICE)


def tol(t: float, backend: str) -> float:
    """A float64 tolerance for ``backend`` (``dtol`` on torch: wider on CUDA)."""
    return t if backend == "numpy" else dtol(t)


__all__ = ["ALL_BACKENDS", "BACKENDS", "TEST_DEVICE", "as_backend", "to_np", "tol"]
