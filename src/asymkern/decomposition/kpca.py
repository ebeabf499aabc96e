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


def _center_in_place(K: np.ndarray, row_means: np.ndarray, grand_mean: float,
                     block: int = 64) -> None:
    """K ← K − m 1ᵀ − 1 mᵀ + μ (double centring of a symmetric K), one pass in row blocks."""
    col = row_means - grand_mean
    for a in range(0, K.shape[0], block):
        blk = K[a:a + block]
        blk -= col[None, :]
        blk -= row_means[a:a + block, None]


def _nonnegative_int(value, name: str, expected: str) -> int:
    """``value`` as an int ≥ 0 (not bool, integral), or a ValueError naming ``name``."""
    try:
        out = int(value)
    except (TypeError, ValueError):
        out = -1
    if isinstance(value, bool) or out < 0 or out != value:
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return out


def randomized_eigh(K: np.ndarray, n_components: int, *, n_oversamples: int = 10,
                    iterated_power="auto", random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """Largest eigenpairs of a symmetric matrix by randomized subspace iteration.

    Q₀ = orth(K Ω) for a Gaussian n×l test matrix Ω (l = n_components + n_oversamples), then
    ``iterated_power`` steps Q ← orth(K Q) (QR each time, Halko, Martinsson & Tropp 2011
    alg. 4.4), then the SVD of K Q: its singular values are √eig(Qᵀ K² Q), which approximate
    |λ_i| more closely than the Rayleigh quotients eig(Qᵀ K Q); signs from u_iᵀ Q w_i. Being
    symmetric, K needs one product per power step where a randomized SVD needs two (K and Kᵀ).

    Parameters
    ----------
    K : (n, n) symmetric array (only read).
    n_components : number of eigenpairs returned (largest algebraic Ritz values).
    n_oversamples : extra columns of Ω.
    iterated_power : int ≥ 0 or ``'auto'``: 2q + 1 with q = 7, or 4 when
        n_components ≥ 0.1·n (scikit-learn's rule), i.e. the subspace K^(2q+2)Ω, one power
        beyond the K^(2q+1)Ω of scikit-learn's randomized KernelPCA, for 2q + 3 products with K
        against its 2q + 2.
    random_state : seed or :class:`numpy.random.Generator`.

    Returns
    -------
    (eigenvalues (n_components,) in increasing order, eigenvectors (n, n_components)).
    """
    n = K.shape[0]
    if isinstance(iterated_power, str):
        if iterated_power != "auto":
            raise ValueError(f"iterated_power must be 'auto' or an int ≥ 0, got {iterated_power!r}")
        q = 7 if n_components < 0.1 * n else 4
        n_iter = 2 * q + 1
    else:
        n_iter = _nonnegative_int(iterated_power, "iterated_power", "'auto' or an int ≥ 0")
    n_over = _nonnegative_int(n_oversamples, "n_oversamples", "an int ≥ 0")
    ell = min(n, n_components + n_over)
    rng = np.random.default_rng(random_state)
    Q = rng.standard_normal((n, ell)).astype(K.dtype, copy=False)
    Q, _ = np.linalg.qr(K @ Q)
    for _ in range(n_iter):
        Q, _ = np.linalg.qr(K @ Q)
    # last product: Y = K Q = U S Wᵀ. |λ_i| ≈ s_i = √eig(Qᵀ K² Q) (closer to |λ_i| than the
    # Rayleigh quotients of Qᵀ K Q on the same subspace), u_i the eigenvector, and the sign of
    # λ_i that of u_iᵀ Q w_i (K Q w_i = s_i u_i with Q w_i ≈ ±u_i)
    U, sv, Wt = np.linalg.svd(K @ Q, full_matrices=False)
    sign = np.sign(np.einsum("ij,ij->j", U, Q @ Wt.T))
    sign[sign == 0] = 1.0
    lam = sv * sign
    order = np.argsort(lam, kind="stable")[ell - n_components:]
    return lam[order], U[:, order]


class KernelPCA(TransformerMixin, BaseEstimator):
    """Kernel PCA with a symmetric kernel; refuses kernels flagged asymmetric.

    Parameters
    ----------
    n_components : number of components asked for (≤ n_samples).
    kernel, kernel_params : the kernel (name, :class:`~asymkern.kernels.Kernel` or callable).
    center : centre the features (K → HKH).
    solver : ``'auto'``, ``'dense'`` (LAPACK ``syevr``), ``'arpack'`` or ``'randomized'``
        (randomized subspace iteration, Halko et al. 2011 alg. 4.4, see
        :func:`randomized_eigh`).
    iterated_power : ``'auto'`` or int ≥ 0, power steps of the randomized solver (see
        :func:`randomized_eigh`; ``'auto'`` searches a subspace one power of K beyond
        scikit-learn's randomized KernelPCA for one product with K more).
    n_oversamples : extra random vectors of the randomized solver (default 10).
    tol : relative eigenvalue cut-off. Eigenvalues λ ≤ max(tol, n·eps)·λ_max are dropped with
        their components, where eps is the machine precision of the data's dtype (2.2e-16 for
        float64, 1.2e-7 for float32; n·eps·λ_max bounds the rounding error of the computed
        eigenvalues, so smaller ones carry no variance and cannot be normalised).
    copy_X : keep a copy of the training data (default); ``False`` keeps a reference, and a later
        change to the caller's array changes ``transform``.
    random_state : starting vector of ARPACK, random test matrix of the randomized solver.

    Attributes
    ----------
    eigenvalues_, eigenvectors_ : the kept eigenpairs (dtype of X: float32 stays float32).
    n_components_ : number of components returned by ``transform`` — ``n_components``, or fewer
        (with a ``RuntimeWarning`` that says how many) when the kernel matrix has fewer
        eigenvalues above the cut-off (e.g. rank-2 data with a linear kernel).
    X_fit_ : the training data (a copy unless ``copy_X=False``).
    """

    def __init__(self, n_components=2, kernel="rbf", kernel_params=None, center=True,
                 solver="auto", tol=1e-12, copy_X=True, random_state=None,
                 iterated_power="auto", n_oversamples=10):
        self.n_components = n_components
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.center = center
        self.solver = solver
        self.tol = tol
        self.copy_X = copy_X
        self.random_state = random_state
        self.iterated_power = iterated_power
        self.n_oversamples = n_oversamples

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
        if self.solver not in ("auto", "dense", "arpack", "randomized"):
            raise ValueError("solver must be 'auto', 'dense', 'arpack' or 'randomized', got "
                             f"{self.solver!r}")
        # no copy when the kernel matrix is already float64 (it is ours)
        K = np.asarray(KernelMatrix(self.kernel_, X).to_array(), dtype=np.float64)
        # finiteness from the row sums (needed for centring anyway): no n×n boolean temporary
        with np.errstate(over="ignore", invalid="ignore"):
            row_sums = K.sum(axis=1)
        if not np.all(np.isfinite(row_sums)):
            hint = "rescale X (e.g. StandardScaler) or change the kernel parameters"
            check_finite_output(K, "the kernel matrix of X", hint)
            if self.center:  # finite entries whose sums overflow: centring cannot be done
                raise OverflowError("the row sums of the kernel matrix of X overflowed although "
                                    f"the input is finite; {hint}")
        if self.copy_X:  # as_data may return the caller's array (or share its buffers)
            X = X.copy()
        self.X_fit_ = X
        self.n_features_in_ = X.shape[1]
        if self.center:
            self.row_means_ = row_sums / n
            self.grand_mean_ = float(self.row_means_.mean())
            _center_in_place(K, self.row_means_, self.grand_mean_)
        if self.solver == "randomized":
            lam, U = randomized_eigh(K, r, n_oversamples=self.n_oversamples,
                                     iterated_power=self.iterated_power,
                                     random_state=(0 if self.random_state is None
                                                   else self.random_state))
        elif self.solver == "arpack" or (self.solver == "auto" and n > 1000 and r < n // 10):
            rng = np.random.default_rng(0 if self.random_state is None else self.random_state)
            lam, U = eigsh(K, k=r, which="LA", v0=rng.uniform(-1, 1, n))
        else:
            lam, U = sla.eigh(K, subset_by_index=(n - r, n - 1))
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
