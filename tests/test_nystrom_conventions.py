"""Nyström machines: saving a Dask-fitted model leaves the live model intact, and a model
fitted on torch tensors predicts dask input (audit round 5).

* ``__getstate__`` wrote into the live ``__dict__`` (Python ≥ 3.11 hands it out from
  ``BaseEstimator.__getstate__``): ``pickle.dumps`` / ``copy.deepcopy`` of a Dask-fitted GSA
  model set its ``X_fit_`` and ``dual_coef_`` to None, and the next ``predict`` failed.
* A model fitted on torch tensors failed on dask input with "Cannot interpret 'torch.float64'
  as a data type"; it now refuses it with a message saying what to do.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from asymkern.nystrom import NystromKernelPCA, NystromKernelRidge

da = pytest.importorskip("dask.array")


def _data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    return X, X[:, 0] + 0.1 * X[:, 1]


@pytest.mark.parametrize("save", [pickle.dumps, copy.deepcopy])
@pytest.mark.parametrize("cls", [NystromKernelRidge, NystromKernelPCA])
def test_saving_a_dask_fit_leaves_the_live_model_intact(cls, save):
    import dask

    X, y = _data()
    with dask.config.set(scheduler="synchronous"):
        args = (da.from_array(X, chunks=30),) + (
            (da.from_array(y, chunks=30),) if cls is NystromKernelRidge else ())
        est = cls(mode="gsa", n_landmarks=20, random_state=0).fit(*args)
        use = est.predict if cls is NystromKernelRidge else est.transform
        before = np.asarray(use(X[:7]))
        save(est)
        np.testing.assert_array_equal(np.asarray(use(X[:7])), before)


def test_tensor_fit_refuses_dask_input_clearly():
    """A model fitted on torch tensors refuses dask input with a message saying what to do
    (it failed with "Cannot interpret 'torch.float64' as a data type"); a model fitted on
    numpy with device='cpu' predicts dask input as the numpy fit does."""
    torch = pytest.importorskip("torch")
    import dask

    X, y = _data()
    Xd = da.from_array(X[:12], chunks=5)
    with dask.config.set(scheduler="synchronous"):
        for est in (NystromKernelRidge(n_landmarks=20, random_state=0).fit(
                        torch.from_numpy(X), torch.from_numpy(y)),
                    NystromKernelPCA(n_components=2, n_landmarks=20, random_state=0).fit(
                        torch.from_numpy(X))):
            use = est.predict if hasattr(est, "predict") else est.transform
            with pytest.raises(ValueError, match="fitted on torch tensors"):
                use(Xd)
        ridge = NystromKernelRidge(n_landmarks=20, random_state=0, device="cpu").fit(X, y)
        np.testing.assert_allclose(ridge.predict(Xd).compute(), ridge.predict(X[:12]),
                                   rtol=1e-12, atol=1e-12)
