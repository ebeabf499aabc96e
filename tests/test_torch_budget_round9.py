"""The memory budget on the torch path of KernelSVD(kernel='precomputed', solver='nystrom').

A precomputed dense G on the torch backend was seen through a plain ``DenseMatrix``: the
Nyström solver gathered the landmark columns G[:, J] (N×s_z) and rows G[I, :] (s_x×M) whole,
the core block G[I, J] and the leverage and probe blocks through the full rows G[I] first,
whatever ``max_dense_memory`` said, and counted none of it (the numpy path reads a dense G in
blocks that it shrinks to what the budget leaves, and counts them). Torch memory is not seen
by ``tracemalloc``, so the tests record every tensor storage a fit allocates inside the solver
(:class:`torch.utils._python_dispatch.TorchDispatchMode`): the largest one must fit the budget,
the result must be numpy's, and the fit must refuse exactly where numpy refuses.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import dtol, tensor, to_np  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import asymkern.decomposition.ksvd as ksvd_module  # noqa: E402
from asymkern import KernelSVD, config_context  # noqa: E402
from asymkern.config import MemoryBudgetError  # noqa: E402
from asymkern.kernels import KernelMatrix  # noqa: E402

N, M, D, S, R = 3000, 2900, 5, 50, 3


class _Allocations(TorchDispatchMode):
    """Records the size of every new tensor storage (an output sharing no input's storage)."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = set()

        def walk(a):
            if isinstance(a, torch.Tensor):
                inputs.add(a.untyped_storage().data_ptr())
            elif isinstance(a, (list, tuple)):
                for b in a:
                    walk(b)

        walk(args)
        walk(list((kwargs or {}).values()))
        for o in out if isinstance(out, (list, tuple)) else (out,):
            if isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() not in inputs:
                self.largest = max(self.largest, int(o.untyped_storage().nbytes()))
        return out


@pytest.fixture(scope="module")
def G():
    rng = np.random.default_rng(0)
    return KernelMatrix("rbf", rng.standard_normal((N, D)),
                        rng.standard_normal((M, D))).to_array()


@pytest.fixture
def solver_allocations(monkeypatch):
    """The allocations of the SVD solver of a KernelSVD fit (not of the input conversion)."""
    rec = _Allocations()
    top_svd = ksvd_module.top_svd

    def recorded(*args, **kwargs):
        with rec:
            return top_svd(*args, **kwargs)

    monkeypatch.setattr(ksvd_module, "top_svd", recorded)
    return rec


def _est(**kw):
    return KernelSVD(R, kernel="precomputed", solver="nystrom", n_row_landmarks=S,
                     random_state=0, **kw)


@pytest.mark.parametrize("options, budget", [
    ({}, 0.5),
    ({"center": True}, 0.5),
    ({"sampling": "leverage"}, 0.5),
    ({"nystrom_params": {"orthogonalize": True}}, 0.5),
    # growth to a tolerance with the residual estimate (probe blocks of 256+ rows)
    ({"nystrom_params": {"tol": 1e-3, "estimate": "residual", "max_landmarks": 200}}, 5.0),
])
def test_precomputed_nystrom_allocations_within_budget(G, solver_allocations, options, budget):
    """Every tensor the solver allocates fits the budget (the old path gathered the N×s
    landmark columns, 1.1 MiB here, or the 3000×400 probe block, 9.2 MiB, at once), and the
    result is numpy's (the same landmarks; only the blocking differs). The numpy reference
    runs at the default budget: with ``center`` it forms the centred G (refused at this
    budget), which the torch path centres through its products instead."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # growth that stops at the cap
        ref = _est(**options).fit(G)
        with config_context(max_dense_memory=budget):
            est = _est(**options).fit(tensor(G))
    assert 0 < solver_allocations.largest <= budget * 2**20
    np.testing.assert_array_equal(est.row_landmarks_, ref.row_landmarks_)
    np.testing.assert_array_equal(est.col_landmarks_, ref.col_landmarks_)
    np.testing.assert_allclose(to_np(est.singular_values_), ref.singular_values_,
                               rtol=dtol(1e-9))
    for got, want in ((est.left_singular_vectors_, ref.left_singular_vectors_),
                      (est.right_singular_vectors_, ref.right_singular_vectors_)):
        np.testing.assert_allclose(to_np(got), want, rtol=dtol(1e-8), atol=dtol(1e-10))


def _fits(G, budget_bytes: int, options: dict) -> bool:
    with config_context(max_dense_memory=budget_bytes / 2**20):
        try:
            _est(**options).fit(G)
        except MemoryBudgetError:
            return False
    return True


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("options", [
    {},
    {"sampling": "leverage"},
    {"nystrom_params": {"orthogonalize": True}},
])
def test_precomputed_nystrom_refuses_where_numpy_refuses(G, dtype, options):
    """The smallest budget numpy runs with (found by bisection, in bytes) is torch's too: one
    byte less and both refuse (the old torch path counted no landmark blocks and ran below
    it), naming the landmarks to reduce."""
    Gd = G.astype(dtype)
    lo, hi = 1, 2**24
    while lo < hi:  # numpy's threshold
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _fits(Gd, mid, options) else (mid + 1, hi)
    assert _fits(tensor(Gd), lo, options)
    with config_context(max_dense_memory=(lo - 1) / 2**20):
        with pytest.raises(MemoryBudgetError, match="landmarks"):
            _est(**options).fit(tensor(Gd))


def test_finiteness_check_forms_no_array_as_large_as_the_input(monkeypatch):
    """The input check of the torch executor read ``torch.isfinite(T).all()``: 11 bytes per
    entry (94 MiB for a 3000² precomputed G), not counted by the budget. It now sums T and
    checks row chunks of about 1 MiB only when the sum is not finite."""
    torch = pytest.importorskip("torch")
    from asymkern._torch.device import as_tensor

    real = torch.isfinite
    seen = []

    def small_only(t):
        seen.append(t.numel())
        assert t.numel() * t.element_size() <= 2 << 20, "isfinite of the whole input"
        return real(t)

    monkeypatch.setattr(torch, "isfinite", small_only)
    G = torch.zeros((1200, 1200), dtype=torch.float64)
    as_tensor(G, "cpu", "G")
    G[-1, -1] = float("nan")
    with pytest.raises(ValueError, match="G contains NaN"):
        as_tensor(G, "cpu", "G")
    assert seen  # the chunked check ran for the non-finite sum
    big = torch.full((1200, 1200), 1e308, dtype=torch.float64)  # finite, sum overflows
    assert as_tensor(big, "cpu", "G") is not None
