"""Kernel PCA baseline (symmetric kernels), sharing the kernel layer with KernelSVD.

Eigendecomposition K = U Λ Uᵀ of the (optionally centred) Gram matrix of one set; scores of new
points are [k(x, x_i)]_i U Λ^{-1/2} (unit-norm eigenfunctions in feature space), so on the
training set they equal U Λ^{1/2}. With a symmetric PSD kernel, X = Z and no centring, KernelSVD
finds the same U with σ_i = λ_i (paper 000 §2: KSVD generalises KPCA).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as sla
from scipy.sparse.linalg import eigsh
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import as_data, check_finite_output, check_n_components, check_positive
from ..config import check_memory
from ..kernels import KernelMatrix, get_kernel
from ..linalg.svd import flip_signs


class KernelPCA(TransformerMixin, BaseEstimator):
    """Kernel PCA with a symmetric kernel; refuses kernels flagged asymmetric.

    Parameters
    ----------
    n_components : number of components asked for (≤ n_samples).
    kernel, kernel_params : the kernel (name, :class:`~asymkern.kernels.Kernel` or callable).
    center : centre the features (K → HKH).
    solver : ``'auto'``, ``'dense'`` (LAPACK ``syevr``) or ``'arpack'``.
    tol : relative eigenvalue cut-off. Eigenvalues λ ≤ max(tol, n·eps)·λ_max are dropped with
        their components, where eps is the machine precision of the data's dtype (2.2e-16 for
        float64, 1.2e-7 for float32; n·eps·λ_max bounds the rounding error of the computed
        eigenvalues, so smaller ones carry no variance and cannot be normalised).
    copy_X : keep a copy of the training data (default); ``False`` keeps a reference, and a later
        change to the caller's array changes ``transform``.
    random_state : starting vector of ARPACK.

    Attributes
    ----------
    eigenvalues_, eigenvectors_ : the kept eigenpairs (dtype of X: float32 stays float32).
    n_components_ : number of components returned by ``transform`` — ``n_components``, or fewer
        (with a ``RuntimeWarning`` that says how many) when the kernel matrix has fewer
        eigenvalues above the cut-off (e.g. rank-2 data with a linear kernel).
    X_fit_ : the training data (a copy unless ``copy_X=False``).
    """

    def __init__(self, n_components=2, kernel="rbf", kernel_params=None, center=True,
                 solver="auto", tol=1e-12, copy_X=True, random_state=None):
        self.n_components = n_components
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.center = center
        self.solver = solver
        self.tol = tol
        self.copy_X = copy_X
        self.random_state = random_state

    def fit(self, X, y=None):
        self.kernel_ = get_kernel(self.kernel, **(self.kernel_params or {}))
        if not self.kernel_.is_symmetric:
            raise ValueError(
                f"kernel {self.kernel_.name!r} is asymmetric; KernelPCA needs a symmetric kernel "
                "(use KernelSVD for asymmetric kernels)"
            )
        tol = check_positive(self.tol, "tol", allow_zero=True)
        X = as_data(X, "X", allow_sparse=self.kernel_.accepts_sparse)
        n = X.shape[0]
        r = check_n_components(self.n_components, n, what="the number of samples")
        check_memory(8 * n * n * 4, f"KernelPCA on {n} samples", "asymkern.nystrom."
                     "NystromKernelPCA", detail=f"the {n}×{n} kernel, its copy and eigh's")
        K = KernelMatrix(self.kernel_, X).to_array().astype(np.float64)
        check_finite_output(K, "the kernel matrix of X",
                            "rescale X (e.g. StandardScaler) or change the kernel parameters")
        if self.copy_X:  # as_data may return the caller's array (or share its buffers)
            X = X.copy()
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
        # rounding in the kernel values (computed in X's dtype) perturbs the eigenvalues by up
        # to ~n·eps(dtype)·λ_max: anything below that is noise, whatever tol says
        cut = max(tol, n * float(np.finfo(X.dtype).eps))
        keep = lam > cut * max(lam[0], 0) if lam[0] > 0 else np.zeros(r, bool)
        lam, U = lam[keep], U[:, keep]
        if lam.size < r:
            warnings.warn(
                f"KernelPCA: n_components={r} was asked for, but only {lam.size} eigenvalues of "
                f"the {'centred ' if self.center else ''}kernel matrix exceed the cut-off "
                f"{cut:.2g}·λ_max (the others are numerically zero); returning {lam.size} "
                "components",
                RuntimeWarning,
                stacklevel=2,
            )
        U, _ = flip_signs(U, U)
        self.n_components_ = int(lam.size)
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
        out = K @ (self.eigenvectors_ / np.sqrt(self.eigenvalues_))
        return check_finite_output(out, "the transformed values",
                                   "rescale X like the training data")

    def fit_transform(self, X, y=None):
        self.fit(X)
        return self.eigenvectors_ * np.sqrt(self.eigenvalues_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
