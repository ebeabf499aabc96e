"""Kernel layer: symmetric and asymmetric kernels, the lazy KernelMatrix, compatibility transforms.

``get_kernel(spec, **params)`` turns a name, a :class:`Kernel` or a callable into a kernel.

Kernel width: one convention
----------------------------
Every kernel with a width follows scikit-learn: ``gamma`` *multiplies* the (squared)
distance, as in :func:`sklearn.metrics.pairwise.rbf_kernel`, ``SVC(gamma=...)`` and
``Nystroem(gamma=...)``. The squared-distance kernels also take ``bandwidth`` σ, the papers'
width that *divides* the squared distance: ``bandwidth=σ`` is ``gamma = 1/σ²``. Give one of the
two. An estimator's own ``gamma`` parameter sets the kernel's ``gamma``
(:func:`resolve_kernel`).

=============  ===============================  ====================  =============================
kernel         κ(x, z)                          default width         papers' notation
=============  ===============================  ====================  =============================
``rbf``        exp(−gamma‖x − z‖²)              gamma = 1/n_features  Tao et al. (2024):
                                                                      exp(−‖x − z‖²/γ²):
                                                                      ``bandwidth=γ``
``sne``        exp(−gamma‖x − z‖²) / Σ_r (…)    gamma = 1/n_features  Tao / He: γ² or σ²
                                                                      divides: ``bandwidth=γ`` (σ)
``cauchy``     1 / (1 + gamma‖x − z‖²)          gamma = 1             1/(1 + ‖x − z‖²): gamma = 1
``t``          (1 + gamma‖x − z‖²)⁻¹ / Σ_r (…)  gamma = 1             He et al. (2023) §4.3:
                                                                      gamma = 1
``laplacian``  exp(−gamma‖x − z‖₁)              gamma = 1/n_features  (no ``bandwidth``)
``poly``       (gamma·xᵀz + coef0)^degree       gamma = 1/n_features  (no ``bandwidth``); real
                                                                      degree >= 0
``softmax``    exp(gamma qᵀk) / Σ_r (…)         1/√n_features         Vaswani et al. (2017):
                                                                      attention of queries X
                                                                      over keys Z
``kl_*``       exp(−a·KL(p_x ‖ p_z))            a = 1                 He et al. (2023) eq. (14): a
=============  ===============================  ====================  =============================

Conversions, for a kernel of exp(−gamma‖x − z‖²) (``rbf``, ``sne``):

* scikit-learn's ``gamma`` (``rbf_kernel``, ``SVC``, ``KernelRidge``, ``Nystroem``): the same
  number, ``gamma``;
* the papers' width γ or σ of exp(−‖x − z‖²/γ²): ``bandwidth=γ``, i.e. gamma = 1/γ²;
* a Gaussian process length scale l of exp(−‖x − z‖²/(2l²)) (``sklearn.gaussian_process.
  kernels.RBF(length_scale=l)``): gamma = 1/(2l²), i.e. ``bandwidth = √2·l``.

The Cauchy and T kernels' ``gamma`` plays the same role inside 1/(1 + gamma‖x − z‖²)
(``bandwidth=σ``: 1/(1 + ‖x − z‖²/σ²)); their former ``scale`` (the divisor of ‖x − z‖²) is
deprecated since 0.2 (``FutureWarning``; removed in 0.3): ``scale=s`` is ``gamma=1/s``.
scikit-learn's ``RationalQuadratic(length_scale=l, alpha=1)`` is ``cauchy`` with
gamma = 1/(2l²).
"""

from __future__ import annotations

from ._registry import KERNELS, WIDTH_PARAMS, get_kernel, resolve_kernel
from .base import Kernel
from .compat import CompatibilityTransform
from .divergence import GMMKLKernel, KLHistogramKernel
from .graph import DirectedGraphKernel
from .matrix import KernelMatrix, MemoryBudgetError
from .pairwise import (
    CallableKernel,
    CauchyKernel,
    LaplacianKernel,
    LinearKernel,
    PolynomialKernel,
    RBFKernel,
    SNEKernel,
    SoftmaxKernel,
    TKernel,
)

__all__ = [
    "Kernel",
    "KernelMatrix",
    "MemoryBudgetError",
    "CompatibilityTransform",
    "LinearKernel",
    "PolynomialKernel",
    "RBFKernel",
    "LaplacianKernel",
    "CauchyKernel",
    "SNEKernel",
    "SoftmaxKernel",
    "TKernel",
    "CallableKernel",
    "KLHistogramKernel",
    "GMMKLKernel",
    "DirectedGraphKernel",
    "KERNELS",
    "WIDTH_PARAMS",
    "get_kernel",
    "resolve_kernel",
]
