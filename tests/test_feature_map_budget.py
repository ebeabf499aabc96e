"""NystromFeatureMap.transform within ``max_dense_memory``: row chunks of X, only the output whole.

The features φ̂(X) = K(X, C) V S^{-1/2} Uᵀ and ψ̂(Z) = K(C, Z)ᵀ U S^{-1/2} Uᵀ (Tao et al. (2024)
§3 eq. (8)–(9)) are formed a chunk of rows at a time, so a budget that holds the n × m output
and one chunk's kernel block runs the transform, with the result of an unconstrained one.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from asymkern import config_context
from asymkern.config import MemoryBudgetError
from asymkern.nystrom import NystromFeatureMap

N_ROWS, M = 5000, 20
#: 1 MiB: the 5000×20 output (0.76 MiB float64, 0.38 MiB float32) and chunks of a few hundred
#: rows fit; the whole float64 kernel block, the features and the cast copy (1.5 MiB float64,
#: 1.9 MiB float32) do not
BUDGET_MIB = 1.0


def _data(kind: str, dtype) -> np.ndarray | sp.csr_matrix:
    if kind == "dense":
        return np.random.default_rng(0).standard_normal((N_ROWS, 3)).astype(dtype)
    return sp.random(N_ROWS, 10, density=0.4, random_state=0, format="csr", dtype=dtype)


def _fitted(X, side: str) -> NystromFeatureMap:
    # gamma=1 and 20 landmarks: K_CC is well conditioned (s_max/s_min ≈ 80), so a product
    # blocked otherwise moves the features by a few eps of their largest magnitude
    return NystromFeatureMap(n_components=M, gamma=1.0, random_state=0, side=side).fit(X[:1000])


def _tolerance(dtype) -> float:
    # float64: the brief's 1e-12 of the largest feature (measured ≤ 1e-15); float32: the
    # float32 kernel block rounds at 6e-8, amplified ≈ 5× by the normalisation
    return 1e-12 if np.dtype(dtype) == np.float64 else 1e-5


CASES = [(kind, dtype, side) for kind in ("dense", "sparse") for dtype in (np.float64, np.float32)
         for side in ("left", "right")]


@pytest.mark.parametrize("kind, dtype, side", CASES)
def test_transform_runs_in_chunks_where_the_whole_block_does_not_fit(kind, dtype, side):
    """Under a budget the old whole-block estimate exceeded, transform (and transform_left /
    transform_right) gives the unconstrained features, in the input's dtype."""
    X = _data(kind, dtype)
    fm = _fitted(X, side)
    ref = fm.transform(X)
    whole = N_ROWS * M * (16 + (4 if dtype == np.float32 else 0))  # the old estimate
    assert whole > BUDGET_MIB * 2**20 > N_ROWS * M * np.dtype(dtype).itemsize
    with config_context(max_dense_memory=BUDGET_MIB):
        got = fm.transform(X)
        one_side = fm.transform_right(X) if side == "right" else fm.transform_left(X)
    tol = _tolerance(dtype) * np.abs(ref).max()
    for F in (got, one_side):
        assert F.dtype == np.dtype(dtype) and F.shape == (N_ROWS, M)
        assert np.abs(F.astype(np.float64) - ref).max() <= tol


@pytest.mark.parametrize("kind, dtype, side", CASES)
def test_transform_peak_stays_within_the_budget(kind, dtype, side):
    """The traced peak of a chunked transform (the output and one chunk) is within
    max_dense_memory."""
    X = _data(kind, dtype)
    fm = _fitted(X, side)
    with config_context(max_dense_memory=BUDGET_MIB):
        tracemalloc.start()
        try:
            out = fm.transform(X)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert out.nbytes <= peak <= BUDGET_MIB * 2**20, peak


def test_small_working_memory_gives_the_same_features():
    """Chunks capped by working_memory (a few rows each) change nothing beyond rounding."""
    X = _data("dense", np.float64)
    for side in ("left", "right"):
        fm = _fitted(X, side)
        ref = fm.transform(X)
        with config_context(working_memory=0.01):  # 32 rows of 20 float64 entries a chunk
            got = fm.transform(X)
        assert np.abs(got - ref).max() <= 1e-12 * np.abs(ref).max()


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("budget", [0.5, N_ROWS * M * 8 / 2**20])
def test_budget_below_output_and_one_row_is_refused(side, budget):
    """Below the output (0.5 MiB < 0.76 MiB), or at the output with no room for one row:
    a MemoryBudgetError naming the transform and its rows, before the output exists."""
    X = _data("dense", np.float64)
    fm = _fitted(X, side)
    with config_context(max_dense_memory=budget):
        tracemalloc.start()
        try:
            with pytest.raises(MemoryBudgetError) as exc:
                fm.transform(X)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    msg = str(exc.value)
    assert isinstance(exc.value, MemoryError)
    assert f"NystromFeatureMap.transform of {N_ROWS} samples ({N_ROWS}×{M} features)" in msg
    assert "a transform of fewer rows at a time" in msg
    assert exc.value.nbytes > exc.value.budget
    assert peak < N_ROWS * M * 8 / 2, peak  # refused before the output was allocated
