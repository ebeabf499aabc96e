"""Traced-memory checks of the ``max_dense_memory`` budget shared by the budget tests: a call
runs under a tight budget with ``working_memory`` at 512 MiB, traced with ``tracemalloc``
(numpy's arrays are traced; the inputs are allocated before the trace starts)."""

from __future__ import annotations

import tracemalloc

import numpy as np

from asymkern import config_context
from asymkern.config import MemoryBudgetError

MARGIN = 1.1  # the traced peak may exceed the budget by this factor at most
GENEROUS = 4096  # MiB


def rel(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def run(call, budget: float):
    """``call()`` under ``max_dense_memory=budget`` MiB and ``working_memory=512``: (its
    result, the traced peak in bytes), or (None, the error) when the budget check refused."""
    with config_context(max_dense_memory=budget, working_memory=512):
        tracemalloc.start()
        try:
            out = call()
            peak = tracemalloc.get_traced_memory()[1]
        except MemoryBudgetError as err:
            return None, err
        finally:
            tracemalloc.stop()
    return out, peak


def within(call, budget: float):
    """The reference (generous budget) and the tight result; asserts that the tight call
    ran within the budget."""
    ref, _ = run(call, GENEROUS)
    out, peak = run(call, budget)
    assert out is not None, f"refused under {budget} MiB: {peak}"
    assert peak <= budget * 2**20 * MARGIN, (
        f"traced peak {peak / 2**20:.2f} MiB over a budget of {budget} MiB")
    return ref, out
