"""The paired sign rule on torch tensors (private; kept for :mod:`.kpca`).

The SVD solvers that lived here run through :func:`asymkern.linalg.top_svd` and
:func:`asymkern.linalg.asymmetric_nystrom` on every executor (:mod:`asymkern._backend`).
"""

from __future__ import annotations

from .._dispatch import require_torch


def flip_signs(U, V):
    """Paired sign flip (torch): the largest-magnitude entry of each column of U positive."""
    torch = require_torch()
    idx = torch.argmax(torch.abs(U), dim=0)
    signs = torch.sign(U[idx, torch.arange(U.shape[1], device=U.device)])
    signs[signs == 0] = 1
    return U * signs, V * signs, signs
