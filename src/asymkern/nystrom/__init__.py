"""Nyström-based kernel machines and their approximation errors (Li, Liu and Zhang: GSA, LLA, NCR,
SPA).

Estimators ``NystromKernelRidge``, ``NystromSVC``, ``NystromKernelPCA`` with
``mode in {'gsa', 'lla', 'ncr', 'spa', 'exact'}``; error functions
``lla_approximation_error`` (eq. (15)), ``gsa_approximation_error`` (eq. (19)),
``approximation_error``; the transformer ``NystromFeatureMap`` (symmetric and
asymmetric Nyström feature maps). Landmark selection lives in :mod:`asymkern.landmarks`.
"""

from .._shared.nystrom_basis import NystromBasis, build_basis
from .errors import approximation_error, gsa_approximation_error, lla_approximation_error
from .estimators import MODES, NystromKernelPCA, NystromKernelRidge, NystromSVC, machine_duals
from .feature_map import NystromFeatureMap

__all__ = [
    "MODES",
    "NystromBasis",
    "NystromFeatureMap",
    "NystromKernelPCA",
    "NystromKernelRidge",
    "NystromSVC",
    "approximation_error",
    "build_basis",
    "gsa_approximation_error",
    "lla_approximation_error",
    "machine_duals",
]
