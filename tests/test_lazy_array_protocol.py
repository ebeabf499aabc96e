"""``np.asarray`` of a lazy matrix (round 13 audit): it gave a 0-d object array, which failed
later far from the cause. Every executor's lazy matrix now refuses the implicit conversion
with a ``TypeError`` that names the explicit, budget-checked ways to form it."""

from __future__ import annotations

import numpy as np
import pytest

from asymkern.kernels import KernelMatrix, get_kernel

X = np.random.default_rng(0).standard_normal((7, 3))


def _matrices():
    yield "numpy", KernelMatrix("rbf", X, X[:5])
    try:
        import dask.array as da

        from asymkern._dask.kernel import DaskKernelMatrix

        Xd = da.from_array(X, chunks=3)
        yield "dask", DaskKernelMatrix(get_kernel("rbf"), Xd, Xd[:5])
    except ImportError:
        pass
    try:
        import torch

        from asymkern._torch.kernels import TorchKernel, TorchKernelMatrix

        Xt = torch.as_tensor(X)
        yield "torch", TorchKernelMatrix(TorchKernel(get_kernel("rbf"), 3), Xt, Xt[:5])
    except ImportError:
        pass


@pytest.mark.parametrize("name, G", list(_matrices()), ids=lambda v: v if isinstance(v, str)
                         else "")
def test_implicit_conversion_is_refused(name, G):
    with pytest.raises(TypeError, match=r"lazy 7×5 matrix.*to_array\(\).*max_dense_memory"):
        np.asarray(G)
    with pytest.raises(TypeError, match="lazy"):
        np.array(G, dtype=np.float64)
    dense = G.to_dense()  # the explicit way gives the matrix
    dense = dense.compute() if hasattr(dense, "compute") else dense
    dense = dense.numpy() if hasattr(dense, "numpy") else dense
    np.testing.assert_allclose(dense, get_kernel("rbf")(X, X[:5]), rtol=1e-12)
