"""Random numbers that do not depend on how the data are split (chunk-independent draws).

A randomized algorithm on Dask draws its random matrices inside tasks, one row chunk at a
time. Drawn naively (one generator per chunk, or ``dask.array.random``), the numbers depend on
the chunk layout, and so does the result. Here a Gaussian matrix with rows 0, 1, 2, … is
defined by a seed alone: rows are grouped in fixed *blocks* of :data:`BLOCK_ROWS` global rows,
block b is drawn by ``numpy.random.default_rng([seed, b])``, and rows [start, stop) are sliced
from the blocks they overlap. Any chunking, and the in-memory path (rows [0, n) at once), sees
the same matrix, bitwise.

Used by the randomized SVD test matrix Ω (``linalg.svd.randomized_svd`` and its Dask
executor) and by the a2 compatibility matrix (``kernels.compat``, ``_dask.compat``), so that
each pair of executors draws the same matrix.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

#: Global rows per independently seeded block of a :func:`normal_rows` matrix (small, so that a
#: wide matrix — a2's compatibility matrix with 10⁴ columns — is drawn in small pieces).
#: A documented constant: changing it changes every draw.
BLOCK_ROWS = 256


def seed_from(random_state) -> int:
    """One integer seed from ``random_state`` (int, RandomState, Generator or None).

    A non-negative int is the seed itself; a RandomState (or None: numpy's global one) gives
    one draw ``randint(0, 2**31 - 1)`` (so repeated calls with one state differ, as with any
    draw from it); a Generator one ``integers(0, 2**31 - 1)``.
    """
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative int, got {random_state}")
        return int(random_state)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**31 - 1))
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


def normal_rows(seed: int, start: int, stop: int, n_cols: int, dtype=np.float64) -> np.ndarray:
    """Rows [start, stop) of the standard Gaussian matrix defined by ``seed`` (see module doc).

    Parameters
    ----------
    seed : int
        Seed of the whole matrix (from :func:`seed_from`).
    start, stop : int
        Global row range, 0 ≤ start ≤ stop.
    n_cols : int
        Number of columns.
    dtype : float32 or float64
        Output dtype (numbers are drawn in float64 and cast, so float32 and float64 matrices
        of one seed agree to float32 rounding).

    Returns
    -------
    (stop - start, n_cols) array
    """
    start, stop, n_cols = int(start), int(stop), int(n_cols)
    if not 0 <= start <= stop:
        raise ValueError(f"row range [{start}, {stop}) is invalid; expected 0 <= start <= stop")
    out = np.empty((stop - start, n_cols), dtype=dtype)
    first, last = start // BLOCK_ROWS, (stop - 1) // BLOCK_ROWS if stop > start else -1
    for b in range(first, last + 1):
        lo = b * BLOCK_ROWS
        block = np.random.default_rng([int(seed), b]).standard_normal((BLOCK_ROWS, n_cols))
        a, e = max(start, lo), min(stop, lo + BLOCK_ROWS)
        out[a - start:e - start] = block[a - lo:e - lo]
    return out
