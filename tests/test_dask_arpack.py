"""ARPACK on Dask inputs past the dense budget: the client iterates, the products G·v and Gᵀ·u
run in the cluster, and the result is the in-memory ARPACK's (same starting vector, same
products to rounding). Before, ``solver='arpack'`` refused any G that did not fit
``max_dense_memory``, where the numpy path runs on the lazy matrix within it."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from asymkern import KernelSVD, config_context  # noqa: E402
from asymkern.config import MemoryBudgetError  # noqa: E402
from asymkern.linalg import top_svd  # noqa: E402

RNG = np.random.default_rng(11)
X = RNG.standard_normal((900, 4))
Z = RNG.standard_normal((800, 4)) + 0.2
BUDGET = 2.0  # MiB: G (900×800 float64) takes 5.5


def _close_vectors(a, b, rtol):
    a, b = np.asarray(a), np.asarray(b)
    assert np.abs(a - b).max() <= rtol * np.abs(b).max()


@pytest.mark.parametrize("kernel, center, scheduler", [("rbf", False, "synchronous"),
                                                       ("sne", False, "threads"),
                                                       ("rbf", True, "threads")])
def test_kernel_svd_arpack_past_the_budget_equals_numpy(kernel, center, scheduler):
    est = dict(n_components=4, kernel=kernel, kernel_params={"gamma": 0.5}, solver="arpack",
               center=center, random_state=0)
    with config_context(max_dense_memory=BUDGET):
        ref = KernelSVD(**est).fit(X, Z=Z)
        with dask.config.set(scheduler=scheduler):
            got = KernelSVD(**est).fit(da.from_array(X, chunks=300),
                                       Z=da.from_array(Z, chunks=300))
    assert got.solver_ == "arpack"
    np.testing.assert_allclose(got.singular_values_, ref.singular_values_, rtol=1e-10)
    _close_vectors(got.left_singular_vectors_, ref.left_singular_vectors_, 1e-8)
    _close_vectors(got.right_singular_vectors_, ref.right_singular_vectors_, 1e-8)


def test_top_svd_arpack_on_a_dask_array_past_the_budget():
    """A dask matrix past the budget, with entries far below the normal range of GᵀG: the
    scale rule of a formed G applies (ARPACK iterates on c·G)."""
    A = RNG.standard_normal((900, 800)) * 1e-200
    with config_context(max_dense_memory=BUDGET):
        res = top_svd(da.from_array(A, chunks=(300, 300)), 3, solver="arpack", random_state=0)
        with pytest.raises(MemoryBudgetError, match="a dense SVD of the 900×800 matrix G needs"):
            top_svd(da.from_array(A, chunks=(300, 300)), 3, solver="dense")
    want = np.linalg.svd(A, compute_uv=False)[:3]
    np.testing.assert_allclose(res.s, want, rtol=1e-10)
    assert res.solver == "arpack" and res.info["executor"] == "dask"
    assert isinstance(res.U, np.ndarray) and res.U.shape == (900, 3)


def test_float32_stays_float32_and_a_nan_is_named():
    """float32 data give float32 factors on either side of the budget; a NaN in G is refused
    with an error naming G (ARPACK itself fails with an opaque message)."""
    A = RNG.standard_normal((900, 800)).astype(np.float32)
    with config_context(max_dense_memory=BUDGET):
        res = top_svd(da.from_array(A, chunks=(300, 300)), 3, solver="arpack", random_state=0)
        fit = KernelSVD(n_components=3, solver="arpack", random_state=0).fit(
            da.from_array(X.astype(np.float32), chunks=300),
            Z=da.from_array(Z.astype(np.float32), chunks=300))
        A[7, 3] = np.nan
        with pytest.raises(ValueError, match="G contains NaN or infinity"):
            top_svd(da.from_array(A, chunks=(300, 300)), 3, solver="arpack", random_state=0)
    assert res.U.dtype == res.s.dtype == res.V.dtype == np.float32
    assert fit.singular_values_.dtype == np.float32
    assert np.asarray(fit.left_singular_vectors_).dtype == np.float32
