"""Decompositions: KernelSVD (paper 000) and the KernelPCA baseline."""

from .kpca import KernelPCA
from .ksvd import KernelSVD

__all__ = ["KernelSVD", "KernelPCA"]
