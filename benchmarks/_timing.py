"""Timing and memory helpers shared by the benchmark scripts (not part of the package)."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np


def timed(fn) -> float:
    """Wall time of one call of ``fn`` (seconds)."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleaved(fns: dict, repeats: int) -> dict:
    """Median wall time of each callable, the callables run in turn ``repeats`` times."""
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            times[k].append(timed(fn))
    return {k: float(np.median(v)) for k, v in times.items()}


def peak_traced(fn) -> int:
    """Peak bytes traced by ``tracemalloc`` while ``fn()`` runs (its result is released)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    out = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del out
    return peak
