"""The block cache of the iterative solvers' passes (``cache_memory``): a lazy kernel matrix
keeps the blocks its passes evaluate, within the budget, and the results are bitwise those
without it; the caller's matrix is never changed."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from asymkern import KernelSVD, config_context, get_config
from asymkern.kernels import KernelMatrix
from asymkern.linalg import arpack_svd, randomized_svd

RNG = np.random.default_rng(7)
X = RNG.standard_normal((600, 5))
Z = RNG.standard_normal((500, 5)) + 0.3
WM = 0.25  # MiB: about 65 rows of 500 float64 columns a block, 10 blocks


def _count_blocks(monkeypatch):
    """Count the blocks the passes evaluate (calls of KernelMatrix._normalized_block)."""
    calls = []
    orig = KernelMatrix._normalized_block

    def counted(self, *args, **kwargs):
        calls.append(1)
        return orig(self, *args, **kwargs)

    monkeypatch.setattr(KernelMatrix, "_normalized_block", counted)
    return calls


def _solve(solver, G):
    if solver == "arpack":
        return arpack_svd(G, 4, random_state=0)
    return randomized_svd(G, 4, random_state=0, method=solver, n_iter=3)


@pytest.mark.parametrize("solver", ["power", "block_krylov", "arpack"])
@pytest.mark.parametrize("kernel, center", [("rbf", False), ("sne", False), ("rbf", True),
                                            ("softmax", True), ("linear", False)])
@pytest.mark.parametrize("cache_mib", [0.0, 0.6, 1024.0])  # none, a few blocks, all
def test_results_bitwise_equal_and_kernel_evaluated_less(monkeypatch, solver, kernel, center,
                                                         cache_mib):
    G = KernelMatrix(kernel, X, Z, center=center, working_memory=WM)
    if center:
        G.means()  # the centring statistics are a pass of their own: formed before counting
    with config_context(cache_memory=0):
        ref = _solve(solver, G)
    calls = _count_blocks(monkeypatch)
    with config_context(cache_memory=0):
        _solve(solver, G)
    uncached = len(calls)
    calls.clear()
    with config_context(cache_memory=cache_mib):
        res = _solve(solver, G)
    for a, b in ((res.U, ref.U), (res.s, ref.s), (res.V, ref.V)):
        assert np.array_equal(a, b)
    n_blocks = -(-G.shape[0] // G.block_rows())
    assert n_blocks >= 8 and uncached >= 2 * n_blocks  # several passes over several blocks
    if cache_mib == 0:
        assert len(calls) == uncached
    elif cache_mib >= 1:  # every block kept: the kernel is evaluated once
        assert len(calls) == n_blocks
    else:  # some blocks kept: they are evaluated once, the others in every pass
        room, kept, step = int(cache_mib * 2**20), 0, G.block_rows()
        for start in range(0, G.shape[0], step):  # in pass order, while each block fits
            nbytes = (min(start + step, G.shape[0]) - start) * G.shape[1] * 8
            if nbytes <= room:
                room, kept = room - nbytes, kept + 1
        passes = uncached // n_blocks
        assert 1 <= kept < n_blocks
        assert len(calls) == uncached - kept * (passes - 1)
    assert G._cache is None  # the caller's matrix keeps nothing


def test_cached_copy_blocks_are_shared_read_only_and_centring_copies():
    G = KernelMatrix("rbf", X, Z, center=True, working_memory=WM)
    H = G.cached(G.nbytes)
    first = [B.copy() for _, B in H.iter_row_blocks()]  # centred blocks; fills the cache
    second = [B for _, B in H.iter_row_blocks()]  # centred copies of the kept blocks
    plain = [B for _, B in G.iter_row_blocks()]
    assert len(first) == len(plain) >= 8
    for a, b, c in zip(first, second, plain):
        assert np.array_equal(a, c) and np.array_equal(b, c)
    kept = list(H._cache.values())
    assert len(kept) == len(first) and not any(B.flags.writeable for B in kept)
    assert np.array_equal(H.matmat(np.ones(Z.shape[0])), G.matmat(np.ones(Z.shape[0])))
    with pytest.raises(ValueError, match="read-only"):
        kept[0][0, 0] = 1.0
    assert G._cache is None and G.cached(0)._cache == {}


def test_cache_stays_within_the_budget():
    """The kept blocks fill at most what the solver and its blocks leave of max_dense_memory:
    the traced peak of a fit whose matrix (32 MiB) is larger than that stays in the budget."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((2048, 4))
    budget = 12.0  # MiB
    G = KernelMatrix("rbf", A, working_memory=1, max_dense_memory=budget)
    with config_context(cache_memory=1024):
        with config_context(cache_memory=0):
            ref = randomized_svd(G, 5, random_state=0, n_iter=2)
        tracemalloc.start()
        try:
            res = randomized_svd(G, 5, random_state=0, n_iter=2)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert np.array_equal(res.s, ref.s) and np.array_equal(res.U, ref.U)
    assert G.nbytes > budget * 2**20 and peak <= 1.05 * budget * 2**20, peak / 2**20


def test_kernel_svd_fit_uses_the_cache_with_the_same_result(monkeypatch):
    est = dict(n_components=3, kernel="rbf", solver="randomized", random_state=0)
    with config_context(working_memory=WM, cache_memory=0):
        ref = KernelSVD(**est).fit(X, Z=Z)
    calls = _count_blocks(monkeypatch)
    with config_context(working_memory=WM):
        fit = KernelSVD(**est).fit(X, Z=Z)
    cached = len(calls)
    calls.clear()
    with config_context(working_memory=WM, cache_memory=0):
        KernelSVD(**est).fit(X, Z=Z)
    assert get_config()["cache_memory"] == 1024 and cached < len(calls) / 2
    assert fit.solver_ == ref.solver_ == "randomized"
    for name in ("singular_values_", "left_singular_vectors_", "right_singular_vectors_"):
        assert np.array_equal(getattr(fit, name), getattr(ref, name)), name


@pytest.mark.parametrize("bad", [-1, np.nan, np.inf])
def test_cached_refuses_impossible_sizes(bad):
    G = KernelMatrix("rbf", X, Z)
    with pytest.raises(ValueError, match="nbytes"):
        G.cached(bad)


def _rows_evaluated(monkeypatch):
    """Rows of G evaluated (Σ rows of the blocks KernelMatrix._normalized_block forms)."""
    rows = []
    orig = KernelMatrix._normalized_block

    def counted(self, Xr, *args, **kwargs):
        rows.append(Xr.shape[0])
        return orig(self, Xr, *args, **kwargs)

    monkeypatch.setattr(KernelMatrix, "_normalized_block", counted)
    return rows


@pytest.mark.parametrize("solver", ["randomized", "block_krylov", "arpack", "dense", "auto"])
@pytest.mark.parametrize("kernel", ["rbf", "sne"])
def test_centred_kernel_svd_evaluates_the_kernel_once(monkeypatch, solver, kernel):
    """KernelSVD(center=True): the centring statistics come from the pass that also fills the
    block cache (iterative solvers) or from the formed matrix (dense solvers, 'auto' forming
    it), so the kernel is evaluated once in all where G fits the cache, not twice; the fit
    equals the one without the cache to rounding (the means' sums run in another order)."""
    est = dict(n_components=3, kernel=kernel, kernel_params={"gamma": 0.3}, solver=solver,
               center=True, random_state=0)
    with config_context(working_memory=WM, cache_memory=0):
        ref = KernelSVD(**est).fit(X, Z=Z)
    rows = _rows_evaluated(monkeypatch)
    with config_context(working_memory=WM):
        fit = KernelSVD(**est).fit(X, Z=Z)
    assert sum(rows) == X.shape[0], sum(rows) / X.shape[0]
    np.testing.assert_allclose(fit.singular_values_, ref.singular_values_, rtol=1e-10)
    np.testing.assert_allclose(fit.row_means_, ref.row_means_, rtol=1e-12)
    np.testing.assert_allclose(fit.col_means_, ref.col_means_, rtol=1e-12)
    Xn = X[:7] + 0.1
    np.testing.assert_allclose(fit.transform(Xn), ref.transform(Xn), rtol=1e-8, atol=1e-10)


def test_a_users_cached_copy_is_not_filled_by_the_solvers():
    """The solvers run on their own copy of a matrix the user made with ``cached``: its kept
    blocks and room are as the user left them (only KernelSVD's own prepared copy carries
    the blocks of its centring pass into the solver)."""
    H = KernelMatrix("rbf", X, Z, working_memory=WM).cached(2**20)
    room = H._cache_room
    for solver in ("power", "arpack"):
        _solve(solver, H)
        assert H._cache == {} and H._cache_room == room
