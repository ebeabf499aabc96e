"""Decompositions: KernelSVD (Tao et al., 2024) and the KernelPCA baseline."""

from .kpca import KernelPCA
from .ksvd import KernelSVD

__all__ = ["KernelSVD", "KernelPCA"]
