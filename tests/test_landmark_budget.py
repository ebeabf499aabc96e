"""The landmark sums of the Nyström-restricted operator estimators (conditional mean
embedding, Koopman) run in row blocks within ``max_dense_memory`` on every executor: the torch
fit formed one block of every row (104 MiB RSS for n = 30 000, 200 landmarks) under an 8 MiB
budget."""

from __future__ import annotations

import numpy as np
import pytest

from asymkern import config_context
from asymkern._shared import operators as shared
from asymkern.operators import ConditionalMeanEmbedding, KoopmanOperator

RNG = np.random.default_rng(0)
X = RNG.standard_normal((6000, 4))
Y = np.sin(X[:, :2])


def _largest_block(monkeypatch):
    sizes = []
    orig = shared.kernel_block

    def recorded(kernel, P, L):
        if P is not L:  # the row blocks k(X_block, L), not the landmark Gram matrix
            sizes.append(int(P.shape[0]) * int(L.shape[0]) * 8)
        return orig(kernel, P, L)

    monkeypatch.setattr(shared, "kernel_block", recorded)
    return sizes


def _executors():
    out = [("numpy", lambda A: A)]
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is an optional extra
        return out
    return out + [("torch", lambda A: torch.as_tensor(A))]


@pytest.mark.parametrize("name, conv", _executors(), ids=[e[0] for e in _executors()])
@pytest.mark.parametrize("make", [
    lambda: KoopmanOperator(n_components=3, n_landmarks=100, random_state=0),
    lambda: ConditionalMeanEmbedding(n_landmarks=100, random_state=0),
], ids=["koopman", "cme"])
def test_landmark_sums_blocks_within_budget(monkeypatch, name, conv, make):
    est = make()
    args = (conv(X), conv(Y)) if isinstance(est, ConditionalMeanEmbedding) else (conv(X),)
    with config_context(max_dense_memory=64):
        ref = make().fit(*args)
    sizes = _largest_block(monkeypatch)
    with config_context(max_dense_memory=2):  # a 6000 × 100 block is 4.6 MiB
        try:
            fit = make().fit(*args)
        except MemoryError:  # the numpy fits keep F = k(X, L) T (n × p) whole: they refuse
            assert name == "numpy"
            return
    assert len(sizes) >= 4 and max(sizes) <= 2 * 2**20 / 4  # a quarter of the budget
    a = ref.predict(conv(X[:20])) if hasattr(ref, "predict") else ref.eigenvalues_
    b = fit.predict(conv(X[:20])) if hasattr(fit, "predict") else fit.eigenvalues_
    a, b = (v.cpu().numpy() if hasattr(v, "cpu") else np.asarray(v) for v in (a, b))
    np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12 * np.abs(a).max())
