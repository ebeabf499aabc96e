"""Kernel layer: symmetric and asymmetric kernels, the lazy KernelMatrix, compatibility transforms.

``get_kernel(spec, **params)`` turns a name, a :class:`Kernel` or a callable into a kernel.
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
