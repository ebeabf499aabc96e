"""``score`` of the estimators that predict on the device: computed on the host, whatever
holds y and the weights (a CUDA run found scikit-learn's metrics reading the device tensor).

On the CPU the same bug hides (numpy reads a CPU tensor through ``__array__``), so each call
below runs with ``torch.Tensor.__array__`` refusing, as it does for a CUDA tensor: a path that
would hand a device tensor to numpy fails here too.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import tensor  # noqa: E402

from asymkern.nystrom import NystromKernelRidge, NystromSVC  # noqa: E402
from asymkern.operators import ConditionalMeanEmbedding  # noqa: E402


@pytest.fixture
def device_like_tensors(monkeypatch):
    """torch tensors that numpy cannot read (as CUDA tensors), for the duration of a test."""

    def refuse(self, *args, **kwargs):
        raise TypeError("can't convert this tensor to numpy through __array__ (as on CUDA)")

    monkeypatch.setattr(torch.Tensor, "__array__", refuse)


def _data():
    rng = np.random.RandomState(0)
    X = rng.randn(80, 3)
    y = np.sin(X).sum(axis=1)
    w = rng.uniform(0.5, 2.0, size=80)
    return X, y, w


@pytest.mark.parametrize("make", [
    lambda: NystromKernelRidge(mode="lla", n_landmarks=20, alpha=0.1, random_state=0),
    lambda: ConditionalMeanEmbedding(alpha=0.1),
], ids=["NystromKernelRidge", "ConditionalMeanEmbedding"])
def test_regressor_score_on_device_tensors(make, device_like_tensors):
    X, y, w = _data()
    ref = make().fit(X, y)
    est = make().fit(tensor(X), tensor(y))
    for yy, ww in [(y, None), (tensor(y), None), (y, w), (tensor(y), tensor(w))]:
        got = est.score(tensor(X), yy, sample_weight=ww)
        want = ref.score(X, y, sample_weight=w if ww is not None else None)
        assert isinstance(got, float)
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9)


def test_classifier_score_on_device_tensors(device_like_tensors):
    X, y, w = _data()
    labels = (y > 0).astype(np.int64)
    kw = dict(mode="lla", n_landmarks=20, random_state=0)
    ref = NystromSVC(**kw).fit(X, labels)
    est = NystromSVC(**kw).fit(tensor(X), labels)
    for yy, ww in [(labels, None), (tensor(labels), tensor(w))]:
        got = est.score(tensor(X), yy, sample_weight=ww)
        want = ref.score(X, labels, sample_weight=w if ww is not None else None)
        assert isinstance(got, float)
        assert got == pytest.approx(want, abs=1e-12)
