"""The finiteness checks of the input and output validation form no mask as large as the
array (``np.all(np.isfinite(a))`` allocates an eighth of a float64 matrix, counted by no
budget: 8.6 MiB for the 3000 × 3000 kernel matrix of a precomputed prediction), and still
find every NaN and infinity, also where the array's sum overflows from finite entries."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from asymkern._validation import all_finite, as_data, check_finite_output


@pytest.mark.parametrize("values, finite", [
    (np.ones((3, 4)), True),
    (np.array([1e308, 1e308]), True),  # the sum overflows; the entries are finite
    (np.array([1e308, 1e308, np.nan]), False),
    (np.array([np.inf, -np.inf]), False),  # the sum is NaN
    (np.array([np.nan, 1.0], dtype=np.float32), False),
    (np.array([1 + 1j, complex(np.inf, 0)]), False),
    (np.arange(5), True),
    (np.array(np.nan), False),
    (np.empty((0, 3)), True),
])
def test_all_finite(values, finite):
    assert all_finite(values) is finite


def test_an_overflowing_sum_is_settled_exactly_in_chunks():
    A = np.full((2000, 700), 1e308)
    assert all_finite(A)
    A[1999, 699] = np.inf
    assert not all_finite(A)


def test_validation_forms_no_mask_of_the_array():
    X = np.random.default_rng(0).standard_normal((3000, 1000))  # 22.9 MiB
    tracemalloc.start()
    try:
        out = as_data(X, "X")
        check_finite_output(X, "the kernel matrix")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out is X or np.shares_memory(out, X)
    assert peak < 1.5 * 2**20, peak  # chunks of 1 MiB of mask; the whole mask: 2.9 MiB
    X[5, 7] = np.nan
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        as_data(X, "X")
