"""Empirical RKHS operators S = Ψ B Φᵀ, their SVD/EVD and estimators (Mollenhauer et al., 2020).

``EmpiricalOperator(kernel_in, X, kernel_out, Y, B)`` with ``svd(k, method='qr'|'auxiliary'|
'block')``, ``eig(k)``, ``truncate(k)``, ``pinv_apply(g)``; singular/eigen-functions are
:class:`RKHSFunction` callables. Estimators: :class:`CovarianceOperator`,
:class:`CrossCovarianceOperator`, :class:`ConditionalMeanEmbedding`, :class:`KoopmanOperator`,
:class:`PerronFrobeniusOperator`, :class:`KernelCCA`.
"""

from ..linalg.operator_svd import RankDeficientGramWarning
from ._numerics import IllConditionedGramWarning
from .cca import KernelCCA
from .covariance import CovarianceOperator, CrossCovarianceOperator
from .embedding import ConditionalMeanEmbedding
from .empirical import EmpiricalOperator, OperatorEig, OperatorSVD, RKHSFunction, as_rkhs_kernel
from .koopman import KoopmanOperator
from .perron_frobenius import PerronFrobeniusOperator
from .transfer import IllConditionedLaggedGramWarning

__all__ = ["ConditionalMeanEmbedding", "CovarianceOperator", "CrossCovarianceOperator",
           "EmpiricalOperator", "IllConditionedGramWarning", "IllConditionedLaggedGramWarning",
           "KernelCCA", "KoopmanOperator", "OperatorEig", "OperatorSVD", "PerronFrobeniusOperator",
           "RKHSFunction", "RankDeficientGramWarning", "as_rkhs_kernel"]
