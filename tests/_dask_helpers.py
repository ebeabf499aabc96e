"""Shared helpers of the Dask test files (imported after ``pytest.importorskip('dask')``)."""

from __future__ import annotations

import dask
import numpy as np
import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True)
def synchronous_scheduler():
    """Every test of a module that imports this runs on dask's synchronous scheduler."""
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture
def one_blas_thread():
    """BLAS on one thread (bitwise-comparable results, and no oversubscription on 2 cores)."""
    with threadpool_limits(1):
        yield


def rel(a, b) -> float:
    """max |a − b| / max |b| (complex-safe)."""
    a = np.asarray(a)
    b = np.asarray(b)
    kind = np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(b) else np.float64
    a, b = a.astype(kind), b.astype(kind)
    return float(np.abs(a - b).max() / np.abs(b).max())


def watch_client(monkeypatch, measure) -> list:
    """Record ``measure(obj)`` of everything ``dask.compute`` brings to the client (a live list),
    and fail the test if any dask array is converted to numpy (``__array__``)."""
    import dask.array as da

    seen: list = []
    real = dask.compute

    def recording(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.extend(measure(o) for o in out)
        return out

    def refuse(self, *a, **k):
        raise AssertionError(f"a dask array of shape {self.shape} was converted to numpy")

    monkeypatch.setattr(dask, "compute", recording)
    monkeypatch.setattr(da.Array, "__array__", refuse)
    return seen
