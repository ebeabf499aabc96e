import os

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


@pytest.fixture(params=["numpy", "torch"])
def backend(request):
    """The executor a parametrised estimator test runs on ('numpy' or 'torch'; see
    tests/_backends.py). The torch case is skipped when torch is not installed."""
    if request.param == "torch":
        pytest.importorskip("torch")
    return request.param
