"""Helpers shared by the torch-backend tests (not a test module)."""

from __future__ import annotations

import numpy as np

from asymkern._dispatch import is_torch_tensor


def to_np(a) -> np.ndarray:
    """A numpy copy of a tensor (on the host), or the array itself."""
    return a.detach().cpu().numpy() if is_torch_tensor(a) else np.asarray(a)


def assert_same_up_to_sign(got, want, tol: float) -> None:
    """Columns of ``got`` equal those of ``want`` up to the sign LAPACK leaves free, to ``tol``
    relative to the largest entry of ``want``."""
    got, want = to_np(got).astype(np.float64), np.asarray(want, dtype=np.float64)
    signs = np.sign(np.sum(got * want, axis=0))
    signs[signs == 0] = 1
    err = np.max(np.abs(got * signs - want)) / np.max(np.abs(want))
    assert err < tol, err


def rel_norm(a, b) -> float:
    """‖a − b‖ / ‖b‖ (Frobenius), with ``a`` possibly a tensor."""
    a, b = to_np(a).astype(np.float64), np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def rel_max(a, b) -> float:
    """max |a − b| / max |b| (no sign alignment), with ``a`` possibly a tensor."""
    a, b = to_np(a).astype(np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
