"""Least-squares SVMs with symmetric and asymmetric kernels (paper 001, AsK-LS).

Estimators: :class:`LSSVMClassifier`, :class:`LSSVMRegressor` (classic dual system, eq. 4) and
:class:`AsKLSClassifier` (eq. 6–7). Functional solvers: :func:`askls_solve`,
:func:`askls_gamma_path`, :func:`lssvm_solve`, :func:`lssvm_gamma_path`, and the dense reference
matrix :func:`askls_kkt_matrix`.
"""

from ._estimators import AsKLSClassifier, KernelPair, LSSVMClassifier, LSSVMRegressor
from ._solvers import (
    IllConditionedWarning,
    Solution,
    askls_gamma_path,
    askls_kkt_matrix,
    askls_solve,
    lssvm_gamma_path,
    lssvm_solve,
)

__all__ = [
    "AsKLSClassifier",
    "IllConditionedWarning",
    "KernelPair",
    "LSSVMClassifier",
    "LSSVMRegressor",
    "Solution",
    "askls_gamma_path",
    "askls_kkt_matrix",
    "askls_solve",
    "lssvm_gamma_path",
    "lssvm_solve",
]
