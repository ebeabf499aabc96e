"""Linear algebra: top-r SVD solvers, Nyström approximations, accuracy metrics, operator SVD."""

from .metrics import eta, eta_strict
from .nystrom import NystromResult, asymmetric_nystrom, symmetric_nystrom
from .operator_svd import (
    GramFactor,
    RankDeficientGramWarning,
    eig_auxiliary,
    eig_qr,
    gram_eigh,
    kernel_qr,
    operator_svd,
    svd_auxiliary,
    svd_block,
    svd_qr,
)
from .svd import SOLVERS, SVDResult, arpack_svd, dense_svd, flip_signs, randomized_svd, top_svd

__all__ = [
    "SOLVERS",
    "SVDResult",
    "arpack_svd",
    "dense_svd",
    "flip_signs",
    "randomized_svd",
    "top_svd",
    "NystromResult",
    "asymmetric_nystrom",
    "symmetric_nystrom",
    "eta",
    "eta_strict",
    "GramFactor",
    "RankDeficientGramWarning",
    "kernel_qr",
    "gram_eigh",
    "svd_qr",
    "svd_auxiliary",
    "svd_block",
    "operator_svd",
    "eig_auxiliary",
    "eig_qr",
]
