"""as_data returns one memory layout, so results do not depend on the caller's layout."""

from __future__ import annotations

import numpy as np

import asymkern
from asymkern._validation import as_data


def test_fortran_input_comes_back_c_contiguous_and_unchanged():
    X = np.asfortranarray(np.random.default_rng(0).normal(size=(50, 4)))
    before = X.copy()
    out = as_data(X)
    assert out.flags.c_contiguous and not np.shares_memory(out, X)
    np.testing.assert_array_equal(out, before)
    np.testing.assert_array_equal(X, before)  # the caller's array is never modified


def test_strided_view_is_copied():
    X = np.random.default_rng(1).normal(size=(40, 6))[:, ::2]
    out = as_data(X)
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, X)


def test_large_fortran_matrix_is_not_duplicated():
    """Past working_memory (here 0.01 MiB) the layout is kept rather than copied."""
    X = np.asfortranarray(np.ones((200, 100)))  # 0.16 MB
    with asymkern.config_context(working_memory=0.01):
        out = as_data(X)
    assert np.shares_memory(out, X)
