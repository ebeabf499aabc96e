"""Linear algebra: top-r SVD solvers, Nyström approximations, accuracy metrics, operator SVD."""

from .svd import SOLVERS, SVDResult, arpack_svd, dense_svd, flip_signs, randomized_svd, top_svd

__all__ = [
    "SOLVERS",
    "SVDResult",
    "arpack_svd",
    "dense_svd",
    "flip_signs",
    "randomized_svd",
    "top_svd",
]
