"""Least-squares SVMs with symmetric and asymmetric kernels (He et al. (2023), AsK-LS).

Estimators: :class:`LSSVMClassifier`, :class:`LSSVMRegressor` (classic dual system, eq. 4) and
:class:`AsKLSClassifier` (eq. 6–7). Functional solvers: :func:`askls_solve`,
:func:`askls_C_path`, :func:`lssvm_solve`, :func:`lssvm_C_path`, and the dense reference
matrix :func:`askls_kkt_matrix`. The regularisation constant γ of the paper (weight of the
squared errors) is called ``C`` (scikit-learn's SVC convention); ``askls_gamma_path`` and
``lssvm_gamma_path`` are deprecated aliases of the path functions (removed in 0.3).
"""

from ._estimators import AsKLSClassifier, KernelPair, LSSVMClassifier, LSSVMRegressor
from ._solvers import (
    IllConditionedWarning,
    Solution,
    askls_C_path,
    askls_gamma_path,
    askls_kkt_matrix,
    askls_solve,
    lssvm_C_path,
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
    "askls_C_path",
    "askls_gamma_path",
    "askls_kkt_matrix",
    "askls_solve",
    "lssvm_C_path",
    "lssvm_gamma_path",
    "lssvm_solve",
]
