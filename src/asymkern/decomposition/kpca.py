"""Kernel PCA baseline (symmetric kernels), sharing the kernel layer with KernelSVD.

Eigendecomposition K = U Λ Uᵀ of the (optionally centred) Gram matrix of one set; scores of new
points are [k(x, x_i)]_i U Λ^{-1/2} (unit-norm eigenfunctions in feature space), so on the
training set they equal U Λ^{1/2}. With a symmetric PSD kernel, X = Z and no centring, KernelSVD
finds the same U with σ_i = λ_i (paper 000 §2: KSVD generalises KPCA).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from scipy.sparse.linalg import eigsh
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import as_data, check_n_components
from ..config import check_memory
from ..kernels import KernelMatrix, get_kernel
from ..linalg.svd import flip_signs


class KernelPCA(TransformerMixin, BaseEstimator):
    """Kernel PCA with a symmetric kernel; refuses kernels flagged asymmetric.

    Eigenvalues at or below ``tol · λ_max`` are dropped with their components (they carry no
    variance and cannot be normalised).
    """

    def __init__(self, n_components=2, kernel="rbf", kernel_params=None, center=True,
                 solver="auto", tol=1e-12, random_state=None):
        self.n_components = n_components
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.center = center
        self.solver = solver
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, y=None):
        self.kernel_ = get_kernel(self.kernel, **(self.kernel_params or {}))
        if not self.kernel_.is_symmetric:
            raise ValueError(
                f"kernel {self.kernel_.name!r} is asymmetric; KernelPCA needs a symmetric kernel "
                "(use KernelSVD for asymmetric kernels)"
            )
        X = as_data(X, "X", allow_sparse=self.kernel_.accepts_sparse)
        n = X.shape[0]
        r = check_n_components(self.n_components, n, what="the number of samples")
        check_memory(8 * n * n * 4, f"KernelPCA on {n} samples", "asymkern.nystrom."
                     "NystromKernelPCA", detail=f"the {n}×{n} kernel, its copy and eigh's")
        K = KernelMatrix(self.kernel_, X).to_array().astype(np.float64)
        self.X_fit_ = X
        self.n_features_in_ = X.shape[1]
        if self.center:
            self.row_means_ = K.mean(axis=1)
            self.grand_mean_ = float(self.row_means_.mean())
            K -= self.row_means_[:, None]
            K -= self.row_means_[None, :]
            K += self.grand_mean_
        if self.solver == "arpack" or (self.solver == "auto" and n > 1000 and r < n // 10):
            rng = np.random.default_rng(0 if self.random_state is None else self.random_state)
            lam, U = eigsh(K, k=r, which="LA", v0=rng.uniform(-1, 1, n))
        elif self.solver in ("auto", "dense"):
            lam, U = sla.eigh(K, subset_by_index=(n - r, n - 1))
        else:
            raise ValueError(f"solver must be 'auto', 'dense' or 'arpack', got {self.solver!r}")
        order = np.argsort(lam)[::-1]
        lam, U = lam[order], U[:, order]
        keep = lam > self.tol * max(lam[0], 0) if lam[0] > 0 else np.zeros(r, bool)
        lam, U = lam[keep], U[:, keep]
        U, _ = flip_signs(U, U)
        self.eigenvalues_ = lam.astype(X.dtype)
        self.eigenvectors_ = U.astype(X.dtype)
        return self

    def transform(self, X):
        check_is_fitted(self, "eigenvalues_")
        X = as_data(X, "X", allow_sparse=self.kernel_.accepts_sparse)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but KernelPCA is expecting "
                f"{self.n_features_in_} features as input")
        K = KernelMatrix(self.kernel_, X, self.X_fit_).to_array()
        if self.center:
            K = K - K.mean(axis=1, keepdims=True)
            K -= self.row_means_.astype(K.dtype)[None, :]
            K += K.dtype.type(self.grand_mean_)
        return K @ (self.eigenvectors_ / np.sqrt(self.eigenvalues_))

    def fit_transform(self, X, y=None):
        self.fit(X)
        return self.eigenvectors_ * np.sqrt(self.eigenvalues_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
