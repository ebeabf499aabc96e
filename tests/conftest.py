import os
import sys

import numpy as np
import pytest


def pytest_configure(config):
    """ASYMKERN_TEST_DEVICE (tests/_torch_helpers.py): a run asked for on a device that torch
    cannot use stops here, loudly, instead of skipping (or silently running on the CPU)."""
    if os.environ.get("ASYMKERN_TEST_DEVICE", "cpu").strip() in ("", "cpu"):
        return
    from _torch_helpers import device_problem

    problem = device_problem()
    if problem:
        raise pytest.UsageError(problem)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def far_reference_set():
    """(X, Z, R) for SNE with γ = 1 over a reference set R without the columns nearest to X.

    x ≈ 1.2e8, far from the centre (a column at −1.2e8 pulls it); Z holds x itself (log-value
    0) and points with log-values −850 … −1350, R only a point at log-value −700. So the
    normalised values are e^700 for x itself and e^(−150) … e^(−650) for the others:
    representable, but more than 800 below the block's largest log-value.
    """
    A = 1.2345e8
    X = np.array([[A, 0.1], [A + 0.3, -0.2]])
    ds = np.sqrt(np.arange(850.0, 1400.0, 50.0))
    Z = np.vstack([[[A, 0.1]], np.c_[A + ds, np.linspace(-1, 1, ds.size)], [[-A, 0.7]]])
    R = np.array([[A + np.sqrt(700.0), 0.2], [-A, 0.5]])
    return X, Z, R


@pytest.fixture(params=["numpy", "torch"])
def backend(request):
    """The executor a parametrised estimator test runs on ('numpy' or 'torch'; see
    tests/_backends.py). The torch case is skipped when torch is not installed."""
    if request.param == "torch":
        pytest.importorskip("torch")
    return request.param


@pytest.fixture(params=["numpy", "torch", "dask"])
def any_backend(request):
    """The ``backend`` fixture with the Dask executor too ('dask': dask arrays in row chunks,
    run on dask's synchronous scheduler), for tests that hold on every executor; a case is
    skipped when its library is not installed."""
    if request.param == "numpy":
        yield request.param
        return
    pytest.importorskip(request.param)
    if request.param == "torch":
        yield request.param
        return
    import dask

    with dask.config.set(scheduler="synchronous"):
        yield request.param


def _refuse_tensor_array(self, *args, **kwargs):
    raise TypeError("numpy read a torch tensor through __array__, which a CUDA tensor refuses: "
                    "copy it to the host explicitly (.detach().cpu().numpy())")


@pytest.fixture(autouse=True)
def _tensors_refuse_numpy(monkeypatch):
    """Every torch tensor refuses ``numpy.asarray`` during a test, as a CUDA tensor does: the
    torch tests run on CPU tensors in CI, and a path that hands a device tensor to numpy (a
    scikit-learn metric reading the predictions, a reference compared through numpy) would
    pass there and fail only on a GPU. Tests and library copy tensors to the host explicitly."""
    torch = sys.modules.get("torch")
    if torch is not None:
        monkeypatch.setattr(torch.Tensor, "__array__", _refuse_tensor_array)
