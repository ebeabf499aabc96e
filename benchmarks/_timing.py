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


def interleaved(fns: dict, repeats: int, rotate: bool = False) -> dict:
    """Median wall time of each callable, the callables run in turn ``repeats`` times
    (``rotate``: repeat r starts at the r-th callable, so none always runs first)."""
    names = list(fns)
    times: dict = {k: [] for k in names}
    for r in range(repeats):
        shift = r % len(names) if rotate else 0
        for k in names[shift:] + names[:shift]:
            times[k].append(timed(fns[k]))
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
