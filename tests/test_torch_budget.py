"""The memory budget (``max_dense_memory``) on the torch path of KernelSVD(solver='nystrom').

The torch kernel matrix sized its blocks by ``working_memory`` alone: a Nyström fit formed
G[:, J] and G[I, :] whole (N×s at the default 512 MiB) and a transform formed the n_new×s kernel
values at once, whatever the budget, where the numpy path shrinks its kernel blocks to what the
budget leaves and takes the new points a few at a time, or refuses. Torch memory is not seen by
``tracemalloc``, so the checks here are deterministic: the largest kernel block the torch matrix
forms (recorded through :meth:`TorchKernelMatrix.block`), counted as numpy counts a block
(``PASS_BLOCK_ARRAYS`` float64 arrays), against the budget, and the refusals against numpy's.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import TEST_DEVICE, tensor, to_np  # noqa: E402

from asymkern import KernelSVD, config_context  # noqa: E402
from asymkern._torch.kernels import TorchKernel, TorchKernelMatrix  # noqa: E402
from asymkern.config import MemoryBudgetError  # noqa: E402
from asymkern.kernels import get_kernel  # noqa: E402
from asymkern.linalg.svd import PASS_BLOCK_ARRAYS  # noqa: E402

N, D, S, R = 3000, 5, 50, 3
BUDGET = 1.0  # MiB: the numpy path runs with shrunk blocks (the old torch blocks: 3.4 MiB)


@pytest.fixture
def largest_block(monkeypatch):
    """Records the entries of the largest block the torch kernel matrix forms."""
    seen = {"entries": 0}
    block = TorchKernelMatrix.block

    def recording(self, rows, cols):
        B = block(self, rows, cols)
        seen["entries"] = max(seen["entries"], int(B.numel()))
        return B

    monkeypatch.setattr(TorchKernelMatrix, "block", recording)
    return seen


def _data(seed: int, n: int = N):
    return np.random.default_rng(seed).standard_normal((n, D))


def _est(**kw):
    return KernelSVD(R, solver="nystrom", n_row_landmarks=S, n_col_landmarks=S,
                     random_state=0, **kw)


def _block_bytes(entries: int) -> int:
    return PASS_BLOCK_ARRAYS * 8 * entries


@pytest.mark.parametrize("kernel", ["rbf", "sne"])
@pytest.mark.parametrize("center", [False, True])
def test_nystrom_fit_blocks_within_budget(largest_block, kernel, center):
    X, Z = _data(1), _data(2)
    with config_context(max_dense_memory=BUDGET):
        ref = _est(kernel=kernel, center=center).fit(X, Z=Z)  # numpy runs here
        largest_block["entries"] = 0
        est = _est(kernel=kernel, center=center).fit(tensor(X), Z=tensor(Z))
    assert 0 < _block_bytes(largest_block["entries"]) <= BUDGET * 2**20
    # the same factorisation as numpy (the same landmarks; only the blocking differs)
    np.testing.assert_allclose(to_np(est.singular_values_), ref.singular_values_, rtol=1e-9)
    np.testing.assert_allclose(to_np(est.left_singular_vectors_), ref.left_singular_vectors_,
                               rtol=1e-8, atol=1e-10)


def test_default_settings_unchanged(largest_block):
    """At the default settings the blocks are the working_memory ones (the whole N×s
    landmark columns here): bitwise the same result as with an unbounded budget; with a small
    budget the blocks shrink and the result agrees far above the rounding floor."""
    X, Z, Xn = (tensor(_data(k)) for k in (1, 2, 3))
    est = _est().fit(X, Z=Z)
    assert largest_block["entries"] == N * S
    scores = est.transform(Xn)
    with config_context(max_dense_memory=2**30):
        big = _est().fit(X, Z=Z)
        big_scores = big.transform(Xn)
    assert torch.equal(est.left_singular_vectors_, big.left_singular_vectors_)
    assert torch.equal(est.right_singular_vectors_, big.right_singular_vectors_)
    assert torch.equal(scores, big_scores)
    with config_context(max_dense_memory=BUDGET):
        small = _est().fit(X, Z=Z)
        small_scores = small.transform(Xn)
    assert torch.allclose(small.left_singular_vectors_, est.left_singular_vectors_,
                          rtol=1e-10, atol=1e-12)
    assert torch.allclose(small_scores, scores, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("center", [False, True])
def test_nystrom_transform_blocks_within_budget(largest_block, center):
    X, Z, Xn = _data(1), _data(2), _data(3)
    ref = _est(center=center).fit(X, Z=Z)
    est = _est(center=center).fit(tensor(X), Z=tensor(Z))
    largest_block["entries"] = 0
    with config_context(max_dense_memory=BUDGET):
        want = ref.transform(Xn)
        got = est.transform(tensor(Xn))
    assert 0 < _block_bytes(largest_block["entries"]) <= BUDGET * 2**20
    np.testing.assert_allclose(to_np(got), want, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("left", [True, False])
def test_transform_refuses_where_numpy_refuses(left):
    X, Z, Xn = _data(1), _data(2), _data(3, 2 * N)
    ref = _est().fit(X, Z=Z)
    est = _est().fit(tensor(X), Z=tensor(Z))
    method = "transform" if left else "transform_right"
    for budget in (0.25, 0.5, 0.9, 1.5):
        with config_context(max_dense_memory=budget):
            try:
                getattr(ref, method)(Xn)
                numpy_refused = False
            except MemoryBudgetError:
                numpy_refused = True
            if numpy_refused:
                with pytest.raises(MemoryBudgetError, match=method):
                    getattr(est, method)(tensor(Xn))
            else:
                getattr(est, method)(tensor(Xn))
    with config_context(max_dense_memory=0.9):  # numpy refuses this one (the old torch ran)
        with pytest.raises(MemoryBudgetError):
            ref.transform_right(Xn)
        with pytest.raises(MemoryBudgetError, match="transform_right"):
            est.transform_right(tensor(Xn))


@pytest.mark.parametrize("budget", [0.3, 0.6, BUDGET])
def test_fit_refuses_where_numpy_refuses(budget):
    X, Z = _data(1), _data(2)
    with config_context(max_dense_memory=budget):
        try:
            _est().fit(X, Z=Z)
            numpy_refused = False
        except MemoryBudgetError:
            numpy_refused = True
        if numpy_refused:
            with pytest.raises(MemoryBudgetError):
                _est().fit(tensor(X), Z=tensor(Z))
        else:
            _est().fit(tensor(X), Z=tensor(Z))


def test_leverage_sampling_within_budget(largest_block):
    X, Z = _data(1), _data(2)
    with config_context(max_dense_memory=BUDGET):
        _est(sampling="leverage").fit(X, Z=Z)
        largest_block["entries"] = 0
        _est(sampling="leverage").fit(tensor(X), Z=tensor(Z))
    assert 0 < _block_bytes(largest_block["entries"]) <= BUDGET * 2**20


def test_within_shrinks_and_shares_normalisers():
    X, Z = tensor(_data(1, 500)), tensor(_data(2, 400))
    G = TorchKernelMatrix(TorchKernel(get_kernel("sne"), D), X, Z, working_memory=512)
    left = 2.0**18
    assert G.pass_bytes((30,)) > left
    H = G.within(left, (30,))
    assert H is not G and H.pass_bytes((30,)) <= left
    assert G.working_memory == 512  # the caller's matrix is not modified
    assert G.within(G.pass_bytes((30,)), (30,)) is G  # blocks that fit: G itself
    B = torch.ones((400, 2), dtype=X.dtype, device=TEST_DEVICE)
    assert torch.allclose(H.blocked_matmat(B), G.blocked_matmat(B), rtol=1e-12, atol=0)
    assert G._log_norm is not None  # computed by H's pass, shared with G
    assert H._log_norm is G._log_norm
