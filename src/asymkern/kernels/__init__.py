"""Kernel layer: symmetric and asymmetric kernels, the lazy KernelMatrix, compatibility transforms.

``get_kernel(spec, **params)`` turns a name, a :class:`Kernel` or a callable into a kernel.
"""

from __future__ import annotations

import inspect

from .base import Kernel
from .compat import CompatibilityTransform
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

KERNELS: dict[str, type[Kernel]] = {
    "linear": LinearKernel,
    "poly": PolynomialKernel,
    "polynomial": PolynomialKernel,
    "rbf": RBFKernel,
    "gaussian": RBFKernel,
    "laplacian": LaplacianKernel,
    "cauchy": CauchyKernel,
    "sne": SNEKernel,
    "t": TKernel,
}

# paper 001 kernels (AsK-LS): KL-divergence kernels and the directed-graph kernel
from .divergence import GMMKLKernel, KLHistogramKernel  # noqa: E402
from .graph import DirectedGraphKernel  # noqa: E402

KERNELS.update(
    {
        "kl_histogram": KLHistogramKernel,
        "kl": KLHistogramKernel,
        "kl_gmm": GMMKLKernel,
        "directed_graph": DirectedGraphKernel,
    }
)


def _init_params(cls) -> list[str]:
    sig = inspect.signature(cls.__init__)
    return [p.name for p in sig.parameters.values()
            if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def get_kernel(kernel="rbf", **params) -> Kernel:
    """Build a kernel from a name (see ``KERNELS``), a :class:`Kernel` instance or a callable.

    ``params`` go to the kernel's constructor (a name or callable) and must be empty for an
    instance; an unknown parameter raises ``ValueError`` naming it, and every kernel validates
    its parameters (finite, in range) at construction and again when used. ``'precomputed'``
    is handled by the estimators, not here.
    """
    if isinstance(kernel, Kernel):
        if params:
            raise ValueError(
                "kernel_params cannot be combined with a Kernel instance; set them on the instance"
            )
        return kernel
    if isinstance(kernel, str):
        key = kernel.lower()
        if key == "precomputed":
            raise ValueError("kernel='precomputed' has no kernel function; pass the matrix itself")
        if key not in KERNELS:
            raise ValueError(
                f"unknown kernel {kernel!r}; expected one of {sorted(KERNELS)}, "
                "'precomputed', a Kernel instance or a callable f(X, Z) -> (n, m) array"
            )
        cls = KERNELS[key]
        valid = _init_params(cls)
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise ValueError(
                f"unknown kernel_params {unknown} for kernel {kernel!r}; its parameters are "
                f"{valid}"
            )
        return cls(**params)
    if callable(kernel):
        return CallableKernel(kernel, **params)
    raise TypeError(
        f"kernel must be a name, a Kernel or a callable, got {type(kernel).__name__}"
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
    "KERNELS",
    "get_kernel",
]
