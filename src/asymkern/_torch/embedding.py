"""The conditional mean embedding's samples on torch: the paired samples and G_X on the device.

:class:`~asymkern.operators.ConditionalMeanEmbedding` runs ``fit`` / ``predict`` / ``weights`` /
``expectation`` once, against the executor's primitives: the Tikhonov-regularised embedding
Û_{Y|X} = Ψ (G_Φ + nεI)⁻¹ Φᵀ (Mollenhauer et al., 2020, §4.3) needs the Cholesky factor of
G_Φ + nεI (``ops.cho_factor`` / ``ops.cho_solve``), the weights are β(x) = (G_Φ + nεI)⁻¹
[k(x_j, x)]_j and E[Y | x] = k(x, X) (G_Φ + nεI)⁻¹ Y; with landmarks the Nyström-restricted
estimator runs the landmark step of :mod:`asymkern._shared.operators` (Meanti et al., 2023). For
torch tensors or a set ``device`` it takes from here the validated samples as float64 copies on
the device with G_X = [k(x_i, x_j)] formed there (:func:`cme_samples_torch`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._dispatch import require_torch
from .._shared.operators import gram
from .operators import paired_input


@dataclass(frozen=True)
class CMESamples:
    """The paired samples of a conditional-mean-embedding fit on the device.

    Attributes
    ----------
    X, Y : tensor
        Float64 copies of the samples (Y 2-D) on the device (never the caller's memory).
    G : tensor or None
        The Gram matrix G_X = k(X, X), float64, on the device (None when not asked for).
    device : torch.device
        Where the fit runs.
    dtype : torch.dtype
        X's dtype (outputs of tensor input follow it).
    as_numpy : bool
        Whether the inputs were numpy (numpy outputs then).
    """

    X: Any
    Y: Any
    G: Any
    device: Any
    dtype: Any
    as_numpy: bool


def cme_samples_torch(est, X, y, kernel_x, with_gram: bool = True) -> CMESamples:
    """Validate the paired samples of a conditional mean embedding, copy them to the device in
    float64 and (``with_gram``) form G_X there.

    Parameters
    ----------
    est : ConditionalMeanEmbedding
        The estimator (``device``; ``n_features_in_`` is set).
    X : tensor or array-like of shape (n, d)
        The inputs.
    y : tensor or array-like of shape (n,) or (n, d_y)
        The outputs.
    kernel_x : Kernel
        The resolved kernel on X.
    with_gram : bool, default=True
        Form G_X (not for the landmark estimator, which never forms an n×n matrix).

    Returns
    -------
    CMESamples

    Raises
    ------
    ValueError
        If G_X has non-finite entries, or the samples are not paired.
    """
    torch = require_torch()
    dev, as_numpy, Xt, Yt = paired_input(est, X, y)
    X64, Y64 = Xt.to(torch.float64, copy=True), Yt.to(torch.float64, copy=True)
    G = gram(kernel_x, X64, what="the Gram matrix G_X of X") if with_gram else None
    return CMESamples(X=X64, Y=Y64, G=G, device=dev, dtype=Xt.dtype, as_numpy=as_numpy)
