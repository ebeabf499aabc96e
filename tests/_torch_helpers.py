"""Helpers shared by the torch-backend tests (not a test module).

The device of every torch test is ``TEST_DEVICE``, read once from the environment variable
``ASYMKERN_TEST_DEVICE`` ('cpu' by default; 'cuda' or 'cuda:N' runs the torch tests with CUDA
tensors and ``device='cuda'``). ``tests/conftest.py`` refuses the run at start-up when a CUDA
device is asked for and torch cannot use it, so a GPU run never passes without a GPU.
"""

from __future__ import annotations

import os
import re

import numpy as np

from asymkern._dispatch import is_torch_tensor

#: the device of the torch tests: 'cpu' (default), 'cuda' or 'cuda:N'
TEST_DEVICE = os.environ.get("ASYMKERN_TEST_DEVICE", "cpu").strip() or "cpu"
ON_CUDA = TEST_DEVICE != "cpu"
#: what a tolerance against the host (numpy / LAPACK) reference is multiplied by on CUDA:
#: cuBLAS and cuSOLVER sum, block and pivot in other orders than the host BLAS/LAPACK and
#: CUDA's exp / log / sqrt are not glibc's (an ulp apart), so float64 results agree with the
#: host to a few hundred ulps times the conditioning rather than to a few tens; every
#: tolerance stays far below the size of a real error (see :func:`dtol`)
CUDA_SLACK = 100.0


def device_problem(device: str = TEST_DEVICE) -> str | None:
    """Why the torch tests cannot run on ``device`` (None when they can)."""
    if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        return (f"ASYMKERN_TEST_DEVICE={device!r} is not a test device; expected 'cpu' "
                "(default), 'cuda' or 'cuda:N'")
    if device == "cpu":
        return None
    try:
        import torch
    except ImportError:
        return f"ASYMKERN_TEST_DEVICE={device!r} but torch is not installed"
    if not torch.cuda.is_available():
        return (f"ASYMKERN_TEST_DEVICE={device!r} but torch.cuda.is_available() is False "
                f"(torch {torch.__version__}, CUDA build: {torch.version.cuda}): the torch tests "
                "would not run on a GPU; unset ASYMKERN_TEST_DEVICE (or set it to 'cpu') to "
                "run them on the CPU")
    index = int(device.split(":")[1]) if ":" in device else 0
    if index >= torch.cuda.device_count():
        return (f"ASYMKERN_TEST_DEVICE={device!r} but only {torch.cuda.device_count()} CUDA "
                "device(s) are visible")
    return None


def tensor(x, dtype=None):
    """``x`` (array-like or tensor) as a tensor on the test device (a copy off the CPU)."""
    import torch

    return torch.as_tensor(x, dtype=dtype, device=TEST_DEVICE)


def dtol(t: float) -> float:
    """A float64 tolerance against a host (numpy / LAPACK) reference: ``t`` on the CPU, ``t``
    times :data:`CUDA_SLACK` on CUDA. Tolerances of 1e-7 and above (float32 comparisons, and
    float64 ones already far from rounding) are the same on both devices."""
    return t * CUDA_SLACK if ON_CUDA and t < 1e-7 else t


def to_np(a) -> np.ndarray:
    """A numpy copy of a tensor (on the host), or the array itself."""
    return a.detach().cpu().numpy() if is_torch_tensor(a) else np.asarray(a)


def assert_same_up_to_sign(got, want, tol: float) -> None:
    """Columns of ``got`` equal those of ``want`` up to the sign LAPACK leaves free, to ``tol``
    relative to the largest entry of ``want`` (``dtol(tol)`` on CUDA)."""
    got, want = to_np(got).astype(np.float64), to_np(want).astype(np.float64)
    signs = np.sign(np.sum(got * want, axis=0))
    signs[signs == 0] = 1
    err = np.max(np.abs(got * signs - want)) / np.max(np.abs(want))
    assert err < dtol(tol), err


def rel_norm(a, b) -> float:
    """‖a − b‖ / ‖b‖ (Frobenius), either possibly a tensor (on any device)."""
    a, b = to_np(a).astype(np.float64), to_np(b).astype(np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def rel_max(a, b) -> float:
    """max |a − b| / max |b| (no sign alignment), either possibly a tensor (on any device)."""
    a, b = to_np(a).astype(np.float64), to_np(b).astype(np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
