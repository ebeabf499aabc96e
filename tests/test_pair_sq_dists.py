"""``kernels.base.pair_sq_dists``: the one direct recomputation of squared distances.

Used by the kernels' near-duplicate and far-data recomputation (``neg_scaled_sq_dists``) and by
the exact nearest-row search (``landmarks.nearest_rows``); checked here against exact rational
arithmetic, for dense and sparse rows, both power-of-two branches and any batch size.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from asymkern.kernels.base import pair_sq_dists


def _exact(X, Z, I, J, f):
    X, Z = np.asarray(X, dtype=np.float64), np.asarray(Z, dtype=np.float64)
    F = Fraction(f)
    return np.array([float(sum(((Fraction(float(a)) - Fraction(float(b))) * F) ** 2
                               for a, b in zip(X[i], Z[j]))) for i, j in zip(I, J)])


@pytest.mark.parametrize("f", [1.0, 2.0**-40, 2.0**600])
@pytest.mark.parametrize("kind", ["dense", "sparse", "mixed", "float32"])
@pytest.mark.parametrize("batch_bytes", [1, 200, None])
def test_pair_sq_dists_equal_exact_values_for_any_batch(f, kind, batch_bytes):
    rng = np.random.default_rng(3)
    scale = 1e-200 if f > 1 else 1.0  # f > 1: data whose squares would underflow
    X = (1e8 + rng.normal(size=(7, 5))) * scale
    Z = (1e8 + rng.normal(size=(6, 5))) * scale
    X[:, 1] = 0.0
    Z[:3, 3] = 0.0
    I = rng.integers(0, 7, 40)
    J = rng.integers(0, 6, 40)
    if kind == "float32":
        X, Z = X.astype(np.float32), Z.astype(np.float32)
    A = sp.csr_matrix(X) if kind in ("sparse", "mixed") else X
    B = sp.csr_matrix(Z) if kind == "sparse" else Z
    got = pair_sq_dists(A, B, I, J, 1.0 if kind == "sparse" else f, batch_bytes)
    ref = _exact(X, Z, I, J, 1.0 if kind == "sparse" else f)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(got, pair_sq_dists(A, B, I, J, 1.0 if kind == "sparse"
                                                     else f))


def test_pair_sq_dists_batches_are_bounded():
    """One batch holds at most about ``batch_bytes`` of temporaries (here 3 pairs of d = 8)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2000))
    I = np.repeat(np.arange(50), 50)
    J = np.tile(np.arange(50), 50)
    tracemalloc.start()
    try:
        pair_sq_dists(X, X, I, J, 1.0, batch_bytes=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # 2500 pairs × 2000 × 8 bytes = 40 MB if gathered at once
    assert peak < 4 * 2**20, f"{peak / 2**20:.1f} MiB"


def test_float32_data_with_a_huge_gamma_warn_of_nothing():
    """Whether the scale folds into the GEMM was judged by comparing a float64 bound with the
    float32 maximum, which cast the bound to float32 and warned of an overflow."""
    import warnings

    from asymkern import get_kernel

    X = (np.random.default_rng(0).normal(size=(5, 3)) * 1e-30).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        K = get_kernel("rbf", gamma=1e298)(X, X)
    assert K.dtype == np.float32 and np.all(np.diag(K) == 1.0)
