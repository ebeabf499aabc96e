"""Kernel PCA baseline (symmetric kernels), sharing the kernel layer with KernelSVD.

Eigendecomposition K = U Λ Uᵀ of the (optionally centred) Gram matrix of one set; scores of new
points are [k(x, x_i)]_i U Λ^{-1/2} (unit-norm eigenfunctions in feature space), so on the
training set they equal U Λ^{1/2}. With a symmetric PSD kernel, X = Z and no centring, KernelSVD
finds the same U with σ_i = λ_i (Tao et al., 2024, §2: KSVD generalises KPCA).

``kernel='precomputed'`` takes the Gram matrix itself (centred as scikit-learn's
``KernelCenterer``), and ``fit_inverse_transform=True`` learns scikit-learn's pre-image map
(kernel ridge from the training scores back to X, regularised by ``alpha``).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, eigsh
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from .._backend import NUMPY
from .._validation import (
    as_data,
    check_bool,
    check_finite_output,
    check_input,
    check_positive,
    check_random_state,
    clip_count,
    forgets_previous_fit,
    like_input,
)
from ..config import check_memory, get_config
from ..kernels import KernelMatrix, resolve_kernel
from ..kernels._registry import fix_default_width
from ..kernels.base import _dense
from ..linalg._svd_core import unit_scale
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


#: scikit-learn's ``_check_psd_eigenvalues`` rule: a negative eigenvalue is significant (the
#: kernel is not PSD) when it is below −ratio·max|λ|, ratio by the precision of the kernel values
_SIGNIFICANT_NEGATIVE_RATIO = {np.dtype(np.float64): 1e-5, np.dtype(np.float32): 5e-3}


def check_psd_eigenvalues(eigenvalues, *, dtype=np.float64, noise: float = 0.0,
                          name: str = "the kernel") -> np.ndarray:
    """Eigenvalues of a kernel matrix that must be positive semi-definite (PSD), checked.

    The rule of scikit-learn's ``KernelPCA`` (``sklearn.utils.validation.
    _check_psd_eigenvalues``): an eigenvalue below −max(ratio·max|λ|, ``noise``) is
    *significantly* negative — the kernel is not PSD, and a ``ValueError`` naming ``name``
    says so (dropping it as "numerically zero" would silently discard part of the spectrum).
    Negative eigenvalues above that threshold are rounding errors of a PSD matrix and come back
    as 0. The ratio is 1e-5 for float64 kernel values and 5e-3 for float32 (scikit-learn's);
    ``noise`` is an absolute bound on the rounding error of the eigenvalues (e.g. n·eps·max|K_ij|
    of the uncentred matrix, which centring cancels down to rounding), so that a numerically zero
    matrix is not mistaken for an indefinite one.

    Parameters
    ----------
    eigenvalues : array-like of shape (k,)
        The computed eigenvalues (any order), not modified.
    dtype : dtype, default float64
        Precision of the kernel values (that of the data).
    noise : float, default 0.0
        Absolute rounding level of the eigenvalues.
    name : str, default 'the kernel'
        What to name in the error (the argument that supplied the kernel).

    Returns
    -------
    ndarray of shape (k,)
        The eigenvalues (float64) with the insignificant negative ones set to 0.

    Raises
    ------
    ValueError
        If an eigenvalue is significantly negative.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.decomposition.kpca import check_psd_eigenvalues
    >>> check_psd_eigenvalues(np.array([3.0, 1.0, -1e-14])).tolist()
    [3.0, 1.0, 0.0]
    """
    lam = np.array(eigenvalues, dtype=np.float64)
    if not lam.size:
        return lam
    ratio = _SIGNIFICANT_NEGATIVE_RATIO.get(np.dtype(dtype), 5e-3)
    ref = float(np.max(np.abs(lam)))
    low = float(lam.min())
    if low < -max(ratio * ref, float(noise)):
        high = float(lam.max())
        raise ValueError(
            f"{name} is not positive semi-definite: its kernel matrix has the significantly "
            f"negative eigenvalue {low:.4g} (largest eigenvalue {high:.4g}; eigenvalues below "
            f"-{ratio:g}·max|λ| are not rounding errors). Kernel PCA needs a positive "
            "semi-definite kernel; use KernelSVD for an indefinite or asymmetric kernel, or make "
            "the kernel matrix PSD (e.g. clip its negative eigenvalues) before fitting"
        )
    lam[lam < 0] = 0.0
    return lam


def randomized_eigh(K: np.ndarray, n_components: int, *, n_oversamples: int = 10,
                    iterated_power="auto", random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """Largest eigenpairs of a symmetric matrix by randomized subspace iteration.

    Q₀ = orth(K Ω) for a Gaussian n×l test matrix Ω (l = n_components + n_oversamples), then
    ``iterated_power`` steps Q ← orth(K Q) (QR each time, Halko, Martinsson & Tropp 2011
    alg. 4.4), then the SVD of K Q: its singular values are √eig(Qᵀ K² Q), which approximate
    ``|λ_i|`` more closely than the Rayleigh quotients eig(Qᵀ K Q); signs from u_iᵀ Q w_i. Being
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
    random_state : None, int or :class:`numpy.random.RandomState` (the library's policy,
        :func:`asymkern._validation.check_random_state`: None draws from numpy's global
        RandomState, a :class:`numpy.random.Generator` is refused with a ``TypeError``).

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
    rng = check_random_state(random_state)
    Q = rng.standard_normal((n, ell)).astype(K.dtype, copy=False)
    for _ in range(n_iter + 1):  # Q₀ = orth(K Ω), then the power steps
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


def _centred_rows(K: np.ndarray, means: np.ndarray, grand_mean: float) -> np.ndarray:
    """Centre new kernel rows as in the fit, in place.

    Parameters
    ----------
    K : ndarray of shape (n_test, n)
        Kernel rows (one per new point) against the training samples; overwritten, so it must
        be an array the caller owns (a second n_test×n array would double the peak that the
        budget check counted once).
    means : ndarray of shape (n,)
        Row means of the training kernel matrix.
    grand_mean : float
        Grand mean of the training kernel matrix.

    Returns
    -------
    ndarray of shape (n_test, n)
        ``K`` itself: minus its own row means and ``means``, plus ``grand_mean`` (the same
        operations in the same order as an out-of-place centring, so the same values).
    """
    K -= K.mean(axis=1, keepdims=True)
    K -= means.astype(K.dtype)[None, :]
    K += K.dtype.type(grand_mean)
    return K


def _symmetric_within(K: np.ndarray, atol: float) -> bool:
    """Whether max |K − Kᵀ| ≤ ``atol``, checked in row panels within ``working_memory``.

    The same answer as ``np.allclose(K, K.T, rtol=0, atol=atol)`` on a finite K, without its
    n×n temporaries (the difference, its absolute value, the boolean masks): one panel of
    rows × n float64 at a time.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        A finite square matrix (only read).
    atol : float
        The absolute tolerance.

    Returns
    -------
    bool
        True when every |K_ij − K_ji| ≤ ``atol``.
    """
    n = K.shape[0]
    budget = float(get_config()["working_memory"]) * 2**20
    step = int(max(1, budget // (8 * max(n, 1))))  # the panel's one float64 difference
    for a in range(0, n, step):
        diff = K[a:a + step] - K[:, a:a + step].T
        np.abs(diff, out=diff)
        if diff.size and not diff.max() <= atol:
            return False
    return True


class KernelPCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Kernel PCA with a symmetric kernel; refuses kernels flagged asymmetric.

    Parameters
    ----------
    n_components : int, default 2
        Number of components asked for. More than the number of training samples is clipped to
        it with a :class:`~asymkern.exceptions.ClippedParameterWarning`; the number kept is
        ``n_components_``.
    kernel : str, Kernel, callable or ``'precomputed'``, default 'rbf'
        The kernel (name, :class:`~asymkern.kernels.Kernel` or callable), or ``'precomputed'``:
        ``fit(K)`` takes the (n, n) symmetric Gram matrix of the training set and
        ``transform(K_test)`` the (n_test, n) kernel values against the training samples
        (centred as scikit-learn's :class:`~sklearn.preprocessing.KernelCenterer`).
    kernel_params : dict, optional
        Constructor arguments of a named kernel.
    center : bool, default True
        Centre the features (K → HKH).
    solver : {'auto', 'dense', 'arpack', 'randomized'}, default 'auto'
        Eigensolver: 'dense' (LAPACK ``syevr``), 'arpack' (Lanczos; ARPACK finds fewer
        eigenpairs than the n samples, so with ``n_components_`` = n the dense solver runs, as
        in KernelSVD), 'randomized' (randomized subspace iteration, Halko et al. 2011 alg. 4.4,
        see :func:`~asymkern.decomposition.kpca.randomized_eigh`); 'auto' uses arpack when
        n > 1000 and n_components < n/10, else dense.
    tol : float, default 1e-12
        Relative eigenvalue cut-off. Eigenvalues λ ≤ max(tol, n·eps)·λ_max are dropped with
        their components, where eps is the machine precision of the data's dtype (2.2e-16 for
        float64, 1.2e-7 for float32; n·eps·λ_max bounds the rounding error of the computed
        eigenvalues, so smaller ones carry no variance and cannot be normalised). Negative
        eigenvalues are never dropped silently: a significantly negative one (below
        −1e-5·max|λ| for float64 data, −5e-3·max|λ| for float32, scikit-learn's rule) raises
        ``ValueError`` (the kernel is not PSD); smaller ones are rounding errors and count as
        zero (see :func:`~asymkern.decomposition.kpca.check_psd_eigenvalues`).
    copy_X : bool, default True
        Keep a copy of the training data; ``False`` keeps a reference, and a later change to
        the caller's array changes ``transform``.
    random_state : None, int or numpy.random.RandomState, default None
        Starting vector of ARPACK and random test matrix of the randomized solver. ``None``
        draws from numpy's global RandomState (fresh entropy, as scikit-learn's
        ``KernelPCA``: two fits may differ in the last digits), an int makes fits
        reproducible; a :class:`numpy.random.Generator` is refused with a ``TypeError``
        (:func:`asymkern._validation.check_random_state`). The dense solver uses no randomness.
    iterated_power : int or 'auto', default 'auto'
        Power steps (≥ 0) of the randomized solver, checked whatever the solver (see
        :func:`~asymkern.decomposition.kpca.randomized_eigh`; ``'auto'`` searches a subspace
        one power of K beyond scikit-learn's randomized KernelPCA for one product with K more).
    n_oversamples : int, default 10
        Extra random vectors (≥ 0) of the randomized solver, checked whatever the solver.
    gamma : float or None, default None
        Kernel width at estimator level (scikit-learn's meaning, κ = exp(−gamma‖x − z‖²) for
        ``'rbf'``), resolved by :func:`asymkern.kernels.resolve_kernel`: ``None`` keeps the
        kernel's own default; a kernel without a width, or a width also given in
        ``kernel_params``, raises ``ValueError``. A Kernel instance is never modified. A
        default that depends on the data (1/n_features for 'rbf', 'laplacian', 'poly') is
        resolved once at fit and stored as ``gamma_``: ``transform`` and the pre-image map of
        ``inverse_transform`` (whose kernel acts on the scores) use that same width, as
        scikit-learn's ``KernelPCA`` does since its fix of the same defect (PR #26280).
    fit_inverse_transform : bool, default False
        Learn the pre-image map of :meth:`inverse_transform` (as scikit-learn's ``KernelPCA``):
        kernel ridge regression from the training scores to the training data, with the same
        kernel applied to the scores (Bakır, Weston & Schölkopf 2004).
    alpha : float ≥ 0, default 1.0
        Ridge regularisation of that pre-image map (larger = stronger).

    Attributes
    ----------
    eigenvalues_ : ndarray of shape (``n_components_``,)
        The kept eigenvalues λ of the (centred) kernel matrix, decreasing (dtype of X: float32
        stays float32).
    eigenvectors_ : ndarray of shape (n, ``n_components_``)
        The matching unit-norm eigenvectors U (signs fixed deterministically).
    n_components_ : int
        Number of components returned by ``transform`` — ``n_components`` (clipped to the
        number of samples), or fewer (with a ``RuntimeWarning`` that says how many) when the
        kernel matrix has fewer eigenvalues above the cut-off (e.g. rank-2 data with a linear
        kernel).
    row_means_ : ndarray of shape (n,)
        Row means of the training kernel matrix (only when ``center``).
    grand_mean_ : float
        Grand mean of the training kernel matrix (only when ``center``).
    X_fit_ : ndarray or sparse matrix or None
        The training data (a copy unless ``copy_X=False``); None when precomputed.
    kernel_ : Kernel or None
        The kernel used (None when precomputed), with a data-dependent default width fixed to
        ``gamma_``.
    gamma_ : float or None
        The kernel width gamma actually used (``gamma``, the kernel's own width, or its default
        1/n_features resolved at fit); None when precomputed or the kernel has no width.
    dual_coef_ : ndarray of shape (n, ``n_features_in_``)
        Coefficients of the pre-image map (only when ``fit_inverse_transform``).
    X_transformed_fit_ : ndarray of shape (n, ``n_components_``)
        Training scores U Λ^{1/2}, the inputs of the pre-image map (only when
        ``fit_inverse_transform``).
    n_features_in_ : int
        Number of features of X seen in fit.
    feature_names_in_ : ndarray of str
        Column names of X, when X is a DataFrame with string column names.

    See Also
    --------
    KernelSVD : Kernel SVD with asymmetric kernels; with a symmetric PSD kernel, X = Z and no
        centring it finds the same U with σ_i = λ_i.
    asymkern.nystrom.NystromKernelPCA : Nyström approximation for large n.
    sklearn.decomposition.KernelPCA : scikit-learn's kernel PCA.

    Notes
    -----
    Eigendecomposition H K H = U Λ Uᵀ of the centred Gram matrix; new samples get the scores
    [k̃(x, x_i)]_i U Λ^{-1/2}, which on the training set equal U Λ^{1/2} [2]_. Tao et al.
    [1]_ (§2.2, "CCE versus 2KPCA") compare KernelSVD with kernel PCA.

    Differences from :class:`sklearn.decomposition.KernelPCA` (the same scores, up to signs,
    for the same kernel, width and number of components):

    - Defaults: ``kernel='rbf'`` and ``n_components=2`` here, ``'linear'`` and ``None`` (all
      non-zero components) there. This class is a baseline for kernel methods, where a linear
      kernel (plain PCA) is rarely what is meant; pass both explicitly for code that must run
      the same under either class.
    - Zero eigenvalues: components whose eigenvalue is at the rounding level are always removed
      (with a warning), as scikit-learn does with ``remove_zero_eig=True``; there is no
      ``remove_zero_eig=False``, because such components carry no variance and their scores
      cannot be normalised (scikit-learn returns them as columns of zeros).
    - A precomputed kernel that is not symmetric is refused with a ``ValueError``; scikit-learn
      accepts it and hands it to a symmetric eigensolver (its dense solver reads one triangle
      only), so the result decomposes a matrix the user never gave. Use
      :class:`~asymkern.KernelSVD` for an asymmetric kernel.
    - A kernel that is significantly indefinite raises ``ValueError`` (scikit-learn's own rule,
      which it applies too).
    - ``kernel_params`` is a dict of constructor arguments of a named kernel, and ``gamma``
      resolves through the kernel layer (see ``gamma`` above); ``degree`` and ``coef0`` are
      given in ``kernel_params``.
    - Extra: ``center=False`` (no centring) and the eigensolver ``solver='randomized'`` with
      its own ``iterated_power`` rule.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos, J. A. K. Suykens, "Learning in
       Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and Nyström method",
       ICML 2024.
    .. [2] B. Schölkopf, A. Smola, K.-R. Müller, "Nonlinear Component Analysis as a Kernel
       Eigenvalue Problem", Neural Computation 10(5):1299–1319, 1998.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern import KernelPCA
    >>> X = np.random.RandomState(0).randn(40, 3)
    >>> kpca = KernelPCA(n_components=2, gamma=0.5).fit(X)
    >>> kpca.transform(X).shape
    (40, 2)
    >>> bool(kpca.eigenvalues_[0] >= kpca.eigenvalues_[1])
    True
    """

    def __init__(self, n_components=2, kernel="rbf", kernel_params=None, center=True,
                 solver="auto", tol=1e-12, copy_X=True, random_state=None,
                 iterated_power="auto", n_oversamples=10, gamma=None,
                 fit_inverse_transform=False, alpha=1.0):
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
        self.gamma = gamma
        self.fit_inverse_transform = fit_inverse_transform
        self.alpha = alpha

    def _precomputed(self) -> bool:
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    def _iterative(self, n: int) -> bool:
        """Whether the fit's eigensolver on n samples is ARPACK or the randomized one (the
        rule of :meth:`_fit`), which hold n-vectors besides K rather than n×n arrays."""
        r = n if self.n_components is None else min(int(self.n_components), n)
        return (self.solver == "randomized" or (self.solver == "arpack" and r < n)
                or (self.solver == "auto" and n > 1000 and r < n // 10))

    def _eigen_copies(self, n: int) -> float:
        """n×n float64 arrays a fit holds at its peak, K included: 4 for the dense ``eigh``
        (K, its copy, the eigenvectors and the workspace; traced 2.0 with numpy 2.4, more
        with other LAPACK builds), 1.25 for ARPACK and the randomized solver (traced 1.05)."""
        return 1.25 if self._iterative(n) else 4.0

    def _gram(self, X):
        """Validate the training input; return (X kept, K as float64 array, dtype)."""
        if self._precomputed():
            if self.gamma is not None or self.kernel_params:
                raise ValueError("gamma and kernel_params must be None with kernel='precomputed' "
                                 "(the kernel matrix is given)")
            K = check_input(self, X, reset=True, name="X (precomputed kernel matrix K)",
                            allow_sparse=True)
            if K.shape[0] != K.shape[1]:
                raise ValueError(f"X (precomputed kernel matrix K) must be square (n, n) with "
                                 f"kernel='precomputed', got shape {K.shape}")
            dtype = K.dtype
            n = K.shape[0]
            # the whole peak before anything n×n is allocated: our float64 copy of K, then the
            # eigensolver's copy and workspace (as for a kernel matrix computed from X below)
            wm = float(get_config()["working_memory"]) * 2**20  # the symmetry test's panel
            panel = min(n, max(1, int(wm // (8 * max(n, 1))))) * n * 8
            # the panel lives beside the copy only, before the eigensolver runs
            check_memory(max(8 * n * n * self._eigen_copies(n), 8 * n * n * 1.25 + panel),
                         f"KernelPCA(kernel='precomputed') on {n} samples",
                         "asymkern.nystrom.NystromKernelPCA(kernel='precomputed')",
                         detail=f"a float64 copy of the {n}×{n} kernel matrix, the panel of its "
                                "symmetry test and the eigensolver's arrays")
            # ours: a copy (toarray already is one: no second n×n copy of a sparse K)
            K = (K.toarray().astype(np.float64, copy=False) if sp.issparse(K)
                 else np.array(K, dtype=np.float64))
            # max |K_ij| without an n×n |K| temporary (K is finite: as_data checked it)
            scale = max(abs(float(K.max())), abs(float(K.min()))) if K.size else 0.0
            if not _symmetric_within(K, 1e-6 * max(scale, 1e-300)):
                raise ValueError("X (precomputed kernel matrix K) is not symmetric; KernelPCA "
                                 "needs a symmetric kernel matrix (use KernelSVD for an "
                                 "asymmetric one)")
            self.kernel_ = self.gamma_ = self.X_fit_ = None
            return None, K, dtype
        self.kernel_ = resolve_kernel(self.kernel, self.kernel_params, gamma=self.gamma)
        if not self.kernel_.is_symmetric:
            raise ValueError(
                f"kernel {self.kernel_.name!r} is asymmetric; KernelPCA needs a symmetric kernel "
                "(use KernelSVD for asymmetric kernels)"
            )
        X = check_input(self, X, reset=True, allow_sparse=self.kernel_.accepts_sparse)
        # one width for every use of the kernel: transform (on X's dimension) and the pre-image
        # map of inverse_transform (on the scores' dimension) — scikit-learn's gamma_
        self.kernel_, self.gamma_ = fix_default_width(self.kernel_, X.shape[1])
        n = X.shape[0]
        check_memory(8 * n * n * self._eigen_copies(n), f"KernelPCA on {n} samples",
                     "asymkern.nystrom.NystromKernelPCA",
                     detail=f"the {n}×{n} kernel and the eigensolver's arrays")
        # no copy when the kernel matrix is already float64 (it is ours)
        K = np.asarray(KernelMatrix(self.kernel_, X).to_array(), dtype=np.float64)
        return X, K, X.dtype

    def fit(self, X, y=None):
        """Fit on X (n, d), or on the (n, n) Gram matrix when ``kernel='precomputed'``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n, d) or (n, n)
            Training data, or the symmetric Gram matrix when ``kernel='precomputed'``.
        y : None
            Ignored (scikit-learn's transformer signature).

        Returns
        -------
        self : KernelPCA
            The fitted estimator.

        Raises
        ------
        ValueError
            If the kernel is asymmetric, a precomputed matrix is not square or not symmetric,
            ``solver`` is unknown, ``tol`` or ``alpha`` is negative, ``n_oversamples`` or
            ``iterated_power`` is not a valid count (whatever the solver), X has one sample with
            ``center=True``, ``fit_inverse_transform`` is combined with ``'precomputed'``, or
            the (centred) kernel matrix has a significantly negative eigenvalue (the kernel,
            or the precomputed matrix, is not positive semi-definite; scikit-learn's rule, see
            :func:`~asymkern.decomposition.kpca.check_psd_eigenvalues`).
        """
        self._fit(X)
        return self

    @forgets_previous_fit
    def _fit(self, X):
        for flag in ("center", "copy_X", "fit_inverse_transform"):
            check_bool(getattr(self, flag), flag)
        tol = check_positive(self.tol, "tol", allow_zero=True)
        alpha = check_positive(self.alpha, "alpha", allow_zero=True)
        if self.solver not in ("auto", "dense", "arpack", "randomized"):
            raise ValueError("solver must be 'auto', 'dense', 'arpack' or 'randomized', got "
                             f"{self.solver!r}")
        rng = check_random_state(self.random_state)
        # the randomized solver's options, checked whatever the solver (as KernelSVD's)
        _nonnegative_int(self.n_oversamples, "n_oversamples", "an int ≥ 0")
        if not (isinstance(self.iterated_power, str) and self.iterated_power == "auto"):
            _nonnegative_int(self.iterated_power, "iterated_power", "'auto' or an int ≥ 0")
        if self.fit_inverse_transform and self._precomputed():
            raise ValueError("fit_inverse_transform=True needs the data X, not a precomputed "
                             "kernel matrix (kernel='precomputed')")
        X, K, dtype = self._gram(X)
        n = K.shape[0]
        if n == 1 and self.center:
            raise ValueError("X has 1 sample: the centred kernel matrix of 1 sample is zero, so "
                             "KernelPCA(center=True) needs at least 2 samples")
        r = clip_count(self.n_components, n, "n_components", "the number of samples",
                       owner="KernelPCA")
        # finiteness from the row sums (needed for centring anyway): no n×n boolean temporary
        with np.errstate(over="ignore", invalid="ignore"):
            row_sums = K.sum(axis=1)
        if not np.all(np.isfinite(row_sums)):
            hint = "rescale X (e.g. StandardScaler) or change the kernel parameters"
            check_finite_output(K, "the kernel matrix of X", hint)
            if self.center:  # finite entries whose sums overflow: centring cannot be done
                raise OverflowError("the row sums of the kernel matrix of X overflowed although "
                                    f"the input is finite; {hint}")
        # absolute rounding level of the eigenvalues: n·eps·max|K_ij| of the *uncentred* matrix
        # (centring a numerically constant kernel leaves entries at that level), no temporary
        kmax = max(abs(float(K.max())), abs(float(K.min()))) if K.size else 0.0
        noise = n * float(np.finfo(dtype).eps) * kmax
        if X is not None:  # as_data may return the caller's array (or share its buffers)
            self.X_fit_ = X.copy() if self.copy_X else X
        if self.center:
            self.row_means_ = row_sums / n
            self.grand_mean_ = float(self.row_means_.mean())
            _center_in_place(K, self.row_means_, self.grand_mean_)
        if self.solver == "randomized":
            lam, U = randomized_eigh(K, r, n_oversamples=self.n_oversamples,
                                     iterated_power=self.iterated_power, random_state=rng)
        elif (self.solver == "arpack" and r < n) or (self.solver == "auto" and n > 1000
                                                      and r < n // 10):
            # scikit-learn's _init_arpack_v0: v0 ~ U(-1, 1) from check_random_state(random_state).
            # ARPACK's stopping rule ‖r‖ ≤ eps·max(eps^{2/3}, |λ|) is absolute below eps^{2/3}:
            # it runs on c·K, c a power of two (exact) bringing max |K_ij| into [1, 2)
            c = unit_scale(kmax, always=True)
            op = LinearOperator(K.shape, matvec=lambda v: K @ (c * v), dtype=K.dtype)
            lam, U = eigsh(op, k=r, which="LA", v0=rng.uniform(-1, 1, n))
            lam = lam / c
        else:
            lam, U = NUMPY.eigh_top(K, r)
        order = np.argsort(lam)[::-1]
        lam, U = lam[order], U[:, order]
        # scikit-learn's rule: significantly negative eigenvalues mean a kernel that is not
        # PSD (ValueError); the others are rounding errors and become 0 (dropped below)
        what = ("X (precomputed kernel matrix K)" if self._precomputed()
                else f"kernel={self.kernel!r}")
        lam = check_psd_eigenvalues(lam, dtype=dtype, noise=noise, name=what)
        # rounding in the kernel values (computed in X's dtype) perturbs the eigenvalues by up
        # to ~n·eps(dtype)·λ_max: anything below that is noise, whatever tol says
        cut = max(tol, n * float(np.finfo(dtype).eps))
        keep = lam > cut * max(lam[0], 0) if lam[0] > 0 else np.zeros(r, bool)
        lam, U = lam[keep], U[:, keep]
        if lam.size < r:
            warnings.warn(
                f"KernelPCA: n_components={r} was asked for, but only {lam.size} eigenvalues of "
                f"the {'centred ' if self.center else ''}kernel matrix exceed the cut-off "
                f"{cut:.2g}·λ_max (the others are numerically zero, or rounding-level negative "
                f"values counted as zero); returning {lam.size} components",
                RuntimeWarning,
                stacklevel=3,
            )
        U, _ = flip_signs(U, U)
        self.n_components_ = int(lam.size)
        self.eigenvalues_ = lam.astype(dtype)
        self.eigenvectors_ = U.astype(dtype)
        if self.fit_inverse_transform:
            self._fit_inverse(alpha)

    def _fit_inverse(self, alpha: float) -> None:
        """Kernel ridge from the training scores to X: (K_s + alpha I) A = X (the pre-image map
        of scikit-learn's ``KernelPCA``)."""
        scores = self.eigenvectors_ * np.sqrt(self.eigenvalues_)
        Ks = np.array(self.kernel_(scores, scores), dtype=np.float64)
        Ks.flat[:: Ks.shape[0] + 1] += alpha
        Xf = np.asarray(_dense(self.X_fit_), dtype=np.float64)  # the target: dense pre-images
        try:
            dual = sla.solve(Ks, Xf, assume_a="pos")
        except (sla.LinAlgError, ValueError):  # singular with alpha=0: least squares
            dual = sla.lstsq(Ks, Xf)[0]
        self.dual_coef_ = dual.astype(self.X_fit_.dtype)
        self.X_transformed_fit_ = scores

    def _kernel_rows(self, X) -> np.ndarray:
        """The (n_test, n) kernel rows of new samples, dense; an array of our own (that
        :func:`_centred_rows` may overwrite) when ``center``.

        Parameters
        ----------
        X : {array-like, sparse matrix}
            New samples, or their precomputed kernel rows.

        Returns
        -------
        ndarray of shape (n_test, n)
            The kernel rows (the caller's array itself when precomputed, dense and not
            centred).

        Raises
        ------
        MemoryBudgetError
            Before allocating, when the dense rows exceed ``max_dense_memory``.
        """
        if self._precomputed():
            K = check_input(self, X, reset=False, name="X (precomputed kernel rows K_test)",
                            allow_sparse=True)
            if sp.issparse(K) or self.center:  # a dense n_test×n array of ours: checked first
                n_test, n = K.shape
                check_memory(n_test * n * K.dtype.itemsize,
                             f"KernelPCA(kernel='precomputed').transform of {n_test} rows",
                             "fewer rows per call", detail=f"the dense {n_test}×{n} kernel "
                             "rows" + (", centred" if self.center else ""))
                # toarray is a new array already; a dense K may be the caller's: copy it
                return K.toarray() if sp.issparse(K) else np.array(K, copy=True)
            return _dense(K)
        X = check_input(self, X, reset=False, allow_sparse=self.kernel_.accepts_sparse)
        # a new array (to_array checks its size): centred in place, within that check
        return KernelMatrix(self.kernel_, X, self.X_fit_).to_array()

    def transform(self, X):
        """Scores [k̃(x, x_i)]_i U Λ^{-1/2} of new samples (U Λ^{1/2} on the training set).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_test, d)
            New samples; with ``kernel='precomputed'`` the (n_test, n_train) matrix of kernel
            values against the training samples.

        Returns
        -------
        ndarray of shape (n_test, ``n_components_``)
            The scores.
        """
        check_is_fitted(self, "eigenvalues_")
        K = self._kernel_rows(X)
        if self.center:
            K = _centred_rows(K, self.row_means_, self.grand_mean_)
        out = K @ (self.eigenvectors_ / np.sqrt(self.eigenvalues_))
        return like_input(check_finite_output(out, "the transformed values",
                                              "rescale X like the training data"), X,
                          "pass float64 input")

    def fit_transform(self, X, y=None):
        """Fit and return the training scores U Λ^{1/2}.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n, d) or (n, n)
            Training data, or the Gram matrix when ``kernel='precomputed'``.
        y : None
            Ignored.

        Returns
        -------
        ndarray of shape (n, ``n_components_``)
            The training scores.
        """
        self._fit(X)
        return self.eigenvectors_ * np.sqrt(self.eigenvalues_)

    def inverse_transform(self, X):
        """Approximate pre-images of scores: [k(s, s_i)]_i · ``dual_coef_`` (kernel ridge map from
        the training scores s_i to the training samples, learnt when
        ``fit_inverse_transform=True``; the kernel is applied to the scores).

        Parameters
        ----------
        X : array-like of shape (n_samples, ``n_components_``)
            Scores (as returned by ``transform``).

        Returns
        -------
        ndarray of shape (n_samples, ``n_features_in_``)
            The approximate pre-images.

        Raises
        ------
        NotFittedError
            When not fitted, or fitted with ``fit_inverse_transform=False``.
        ValueError
            If X does not have ``n_components_`` columns.
        """
        check_is_fitted(self, "eigenvalues_")
        if not hasattr(self, "dual_coef_"):
            raise NotFittedError(
                "KernelPCA.inverse_transform needs fit_inverse_transform=True when fitting "
                "(the pre-image map is learnt in fit); refit with fit_inverse_transform=True"
            )
        S = as_data(X, "X (scores)")
        if S.shape[1] != self.n_components_:
            raise ValueError(f"X (scores) has {S.shape[1]} columns; expected n_components_="
                             f"{self.n_components_}")
        K = self.kernel_(S, self.X_transformed_fit_.astype(S.dtype, copy=False))
        return np.asarray(K @ self.dual_coef_.astype(K.dtype, copy=False))

    @property
    def _n_features_out(self) -> int:
        return self.n_components_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = self._precomputed()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
