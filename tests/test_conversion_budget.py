"""Converting integer, boolean or float16 data to float64 is checked against the budget.

An int8 matrix grows 8× when it becomes float64; the copy is refused before it is made when
it exceeds ``max_dense_memory`` (a ``MemoryBudgetError`` naming the argument), as every other
large allocation is.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import asymkern
from asymkern import KernelSVD
from asymkern._validation import as_data
from asymkern.config import MemoryBudgetError


@pytest.mark.parametrize("dtype", [np.int8, np.bool_, np.float16, np.int64])
def test_conversion_past_the_budget_is_refused(dtype):
    X = np.ones((2000, 1000), dtype=dtype)  # 15.3 MiB as float64
    with asymkern.config_context(max_dense_memory=10):
        with pytest.raises(MemoryBudgetError, match=r"converting X from .* to float64"):
            as_data(X, "X")
        with pytest.raises(MemoryBudgetError, match="converting X"):
            KernelSVD(n_components=2).fit(X)
    with asymkern.config_context(max_dense_memory=20):
        assert as_data(X, "X").dtype == np.float64


def test_sparse_conversion_past_the_budget_is_refused():
    X = sp.random(20000, 2000, density=0.05, format="csr", random_state=0,
                  dtype=np.float64).astype(np.int16)  # 2e6 stored values: 15.3 MiB float64
    with asymkern.config_context(max_dense_memory=10):
        with pytest.raises(MemoryBudgetError, match="converting K from int16"):
            as_data(X, "K", allow_sparse=True)


def test_float_data_are_not_copied_or_checked():
    X = np.ones((2000, 1000))
    with asymkern.config_context(max_dense_memory=1):
        assert as_data(X, "X") is X
        assert as_data(X.astype(np.float32), "X").dtype == np.float32
