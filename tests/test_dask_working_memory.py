"""The tasks of the Dask kernel matrix evaluate the kernel in sub-blocks of ``working_memory``.

Each task of the lazy products (``matmat``/``rmatmat``, ``left``/``right``/``cols`` through
``apply_cols``/``apply_rows``) and of the statistics (log-normalisers, centring sums) formed its
whole chunk-pair block: a 6000-row chunk held ~277 MiB under a 4 MiB ``working_memory``. They
now run the blocked loops of the in-memory ``KernelMatrix`` over the chunk pair; the results
stay those of the numpy path (to rounding) whatever the chunks and the budget. No cluster is
needed: the synchronous scheduler (and once the threaded one).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from _dask_helpers import rel, synchronous_scheduler  # noqa: E402, F401

from asymkern import config_context  # noqa: E402
from asymkern._dask.kernel import DaskKernelMatrix  # noqa: E402
from asymkern.config import MemoryBudgetError  # noqa: E402
from asymkern.decomposition.ksvd import KernelSVD  # noqa: E402
from asymkern.kernels import KernelMatrix, get_kernel  # noqa: E402

N, M, D = 4000, 3000, 5
RNG = np.random.default_rng(0)
X = RNG.standard_normal((N, D))
Z = RNG.standard_normal((M, D)) + 0.3
V = RNG.standard_normal((M, 3))
U = RNG.standard_normal((N, 3))
I = np.sort(RNG.choice(N, 300, replace=False))  # landmark rows (apply_rows)
J = np.sort(RNG.choice(M, 200, replace=False))  # landmark columns (apply_cols)
A = RNG.standard_normal((I.size, 2))
B = RNG.standard_normal((J.size, 2))
WM = 1  # MiB: a 4000 × 3000 float64 chunk pair is 92 MiB


def kernel(name: str):
    return get_kernel(name, gamma=0.3)


@pytest.fixture
def evaluated(monkeypatch) -> list[tuple[int, int]]:
    """The (rows, columns) of every kernel block evaluated (RBF and SNE, any entry point)."""
    sizes: list[tuple[int, int]] = []
    for cls in {type(kernel("rbf")), type(kernel("sne"))}:
        for name in ("_raw", "_raw_into", "_log_raw"):
            orig = getattr(cls, name)

            def recording(self, Xb, Zb, *args, _orig=orig, **kw):
                sizes.append((int(Xb.shape[0]), int(Zb.shape[0])))
                return _orig(self, Xb, Zb, *args, **kw)

            monkeypatch.setattr(cls, name, recording)
    return sizes


def within(sizes, wm: float = WM, itemsize: int = 8) -> bool:
    """Every block and its temporary within ``wm`` MiB (``KernelMatrix.row_bytes``: 2 values
    an entry), or a single row (resp. column) of it."""
    return all(r * c * itemsize * 2 <= wm * 2**20 or min(r, c) == 1 for r, c in sizes)


PRODUCTS = {
    "matmat": (lambda G: G.matmat(V), lambda K: K.matmat(V)),
    "rmatmat": (lambda G: G.rmatmat(U), lambda K: K.rmatmat(U)),
    "left": (lambda G: G.left(J, B), lambda K: K.matmat(B, cols=J)),
    "right": (lambda G: G.right(I, A), lambda K: K.rmatmat(A, rows=I)),
    "cols": (lambda G: G.cols(J), lambda K: K.cols(J)),
}

_REFERENCE: dict = {}


def reference(name: str, center: bool, product: str) -> np.ndarray:
    """The numpy KernelMatrix's product (computed once per case)."""
    key = (name, center, product)
    if key not in _REFERENCE:
        K = KernelMatrix(kernel(name), X, Z, center=center)
        _REFERENCE[key] = PRODUCTS[product][1](K)
    return _REFERENCE[key]


@pytest.mark.parametrize("product", list(PRODUCTS))
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("name", ["rbf", "sne"])
def test_one_chunk_product_stays_within_working_memory(evaluated, name, center, product):
    """One chunk of 4000 rows (and one of 3000) under working_memory = 1 MiB: no kernel block
    above the budget is formed — by the product nor by the statistics it needs (SNE
    normalisers, centring means) — and the result is the numpy KernelMatrix's."""
    ref = reference(name, center, product)
    evaluated.clear()
    with config_context(working_memory=WM):
        G = KernelMatrix(kernel(name), da.from_array(X, chunks=N), da.from_array(Z, chunks=M),
                         center=center)
        assert isinstance(G, DaskKernelMatrix) and G.working_memory == WM
        out = PRODUCTS[product][0](G).compute()
    assert evaluated, "no kernel block was recorded"
    big = max(evaluated, key=lambda s: s[0] * s[1])
    assert within(evaluated), f"a {big[0]}x{big[1]} kernel block under {WM} MiB"
    assert rel(out, ref) < 1e-12


def test_peak_memory_of_a_product_task_follows_working_memory():
    """tracemalloc: G @ V over one 4000-row chunk (a 4000 × 3000 block is 92 MiB) peaks at a
    few MiB under working_memory = 1 MiB."""
    Xd, Zd = da.from_array(X, chunks=N), da.from_array(Z, chunks=M)
    G = DaskKernelMatrix(kernel("sne"), Xd, Zd, center=True, working_memory=WM)
    G.row_lse(), G.means()  # the persisted statistics, outside the measurement
    G.matmat(V).compute()  # warm-up (first-call allocations of the libraries)
    tracemalloc.start()
    try:
        out = G.matmat(V).compute()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    assert rel(out, reference("sne", True, "matmat")) < 1e-12


def test_explicit_budget_and_the_budget_in_effect(evaluated):
    """The constructor's working_memory wins; without it the setting in effect when the
    matrix is built applies (as for the in-memory matrix), also in the threaded scheduler's
    pool threads and when the graph is computed after the context ended."""
    Xd, Zd = da.from_array(X, chunks=N), da.from_array(Z, chunks=M)
    G = KernelMatrix(kernel("rbf"), Xd, Zd, working_memory=0.5)  # outside any context
    assert G.working_memory == 0.5
    with dask.config.set(scheduler="threads"):
        out = G.matmat(V).compute()
    assert within(evaluated, 0.5) and rel(out, reference("rbf", False, "matmat")) < 1e-12
    evaluated.clear()
    with config_context(working_memory=WM):
        H = KernelMatrix(kernel("rbf"), Xd, Zd)  # no budget of its own: the setting now
    assert H.working_memory == WM  # kept after the context, as in memory
    lazy = H.rmatmat(U)  # its tasks keep 1 MiB
    with dask.config.set(scheduler="threads"):
        out = lazy.compute()
    assert within(evaluated) and rel(out, reference("rbf", False, "rmatmat")) < 1e-12
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="working_memory"):
            DaskKernelMatrix(kernel("rbf"), Xd, Zd, working_memory=bad)


@pytest.mark.parametrize("name, center", [("rbf", True), ("sne", False), ("sne", True)])
def test_chunkings_and_budgets_agree(name, center):
    """Other chunkings and budgets give the same products (to rounding), the statistics
    included; the same chunking and budget give the same bits."""
    k = kernel(name)
    results = []
    for cx, cz, wm in [(N, M, WM), (N, M, 512), ((1500, 1500, 1000), 1000, WM),
                       (700, (2000, 1000), 0.3)]:
        G = DaskKernelMatrix(k, da.from_array(X, chunks=(cx, D)),
                             da.from_array(Z, chunks=(cz, D)), center=center, working_memory=wm)
        got = [G.matmat(V).compute(), G.rmatmat(U).compute(), G.left(J, B).compute(),
               G.right(I, A).compute()]
        if k.row_normalized:
            got.append(G.row_lse().compute())
        if center:
            got += [G.means()[0].compute(), G.means()[1].compute()]
        results.append(got)
    for got in results[1:]:
        for a, b in zip(got, results[0]):
            assert rel(a, b) < 1e-12
    G = DaskKernelMatrix(k, da.from_array(X, chunks=(700, D)),
                         da.from_array(Z, chunks=((2000, 1000), D)), center=center,
                         working_memory=0.3)
    np.testing.assert_array_equal(G.matmat(V).compute(), results[-1][0])
    K = KernelMatrix(k, X, Z, center=center)
    if k.row_normalized:
        assert rel(results[0][4], K.row_lse()) < 1e-12


def test_sparse_chunks_within_working_memory(evaluated):
    """CSR chunks: the same sub-blocks (kernel values from sparse products) and results."""
    Xs = sp.random(N, 40, density=0.1, format="csr", random_state=1)
    Zs = sp.random(M, 40, density=0.1, format="csr", random_state=2)
    k = kernel("rbf")
    K = KernelMatrix(k, Xs, Zs, center=True)
    refs = [K.matmat(V), K.rmatmat(U), K.matmat(B, cols=J), K.rmatmat(A, rows=I)]
    evaluated.clear()
    G = DaskKernelMatrix(k, da.from_array(Xs, chunks=(N, 40), asarray=False),
                         da.from_array(Zs, chunks=(M, 40), asarray=False), center=True,
                         working_memory=WM)
    got = [G.matmat(V), G.rmatmat(U), G.left(J, B), G.right(I, A)]
    for a, b in zip(dask.compute(*got), refs):
        assert rel(a, b) < 1e-12
    assert evaluated and within(evaluated)


def _column_sums(Bk):
    return Bk.sum(axis=0, keepdims=True)


def test_apply_refuses_a_function_that_is_not_row_separable():
    """apply_cols/apply_rows evaluate their blocks in row pieces: a function that does not
    give one output row per block row is refused (not stacked into a wrong result)."""
    G = DaskKernelMatrix(kernel("rbf"), da.from_array(X, chunks=N), da.from_array(Z, chunks=M),
                         working_memory=WM)
    with pytest.raises(ValueError, match="row-separable"):
        G.apply_cols(J, _column_sums, J.size, np.float64).compute()
    with pytest.raises(ValueError, match="row-separable"):
        G.apply_rows(I, _column_sums, I.size, np.float64).compute()


def test_whole_chunk_blocks_are_checked_against_the_budget():
    """to_dask_array's chunks are whole chunk-pair blocks: one above max_dense_memory is
    refused before anything is computed, naming the chunk sizes and the rechunk; smaller
    chunks pass and equal the numpy matrix."""
    Xs, Zs = X[:600], Z[:500]
    k = kernel("sne")
    G = DaskKernelMatrix(k, da.from_array(Xs, chunks=600), da.from_array(Zs, chunks=500),
                         center=True, max_dense_memory=1)
    with pytest.raises(MemoryBudgetError, match=r"600×500.*rechunk") as err:
        G.to_dask_array()
    assert isinstance(err.value, MemoryError)
    H = DaskKernelMatrix(k, da.from_array(Xs, chunks=200), da.from_array(Zs, chunks=250),
                         center=True, max_dense_memory=1)
    ref = KernelMatrix(k, Xs, Zs, center=True, max_dense_memory=64).to_array()
    assert rel(H.to_dask_array().compute(), ref) < 1e-12
    assert rel(G.to_array(max_dense_memory=4), ref) < 1e-12  # the caller's limit for both


@pytest.mark.parametrize("name", ["rbf", "sne"])
def test_nystrom_fit_under_a_small_working_memory(name):
    """KernelSVD (Nyström, centred) on one-chunk dask arrays under a 0.05 MiB budget: the same
    landmarks (same random_state) and the in-memory result."""
    Xs, Zs = X[:900], Z[:700]
    kw = dict(n_components=3, kernel=name, kernel_params={"gamma": 0.3}, center=True,
              solver="nystrom", random_state=0, n_row_landmarks=60, n_col_landmarks=50)
    a = KernelSVD(**kw).fit(Xs, Z=Zs)
    with config_context(working_memory=0.05):
        b = KernelSVD(**kw).fit(da.from_array(Xs, chunks=900), Z=da.from_array(Zs, chunks=700))
        Ub, Vb = b.left_singular_vectors_.compute(), b.right_singular_vectors_.compute()
    np.testing.assert_array_equal(b.row_landmarks_, a.row_landmarks_)
    np.testing.assert_array_equal(b.col_landmarks_, a.col_landmarks_)
    assert rel(b.singular_values_, a.singular_values_) < 1e-10
    assert rel(Ub, a.left_singular_vectors_) < 1e-10
    assert rel(Vb, a.right_singular_vectors_) < 1e-10
