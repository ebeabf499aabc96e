"""The covariance operator Ĉ_XX and the cross-covariance operator Ĉ_YX (Mollenhauer,
Schuster, Klus and Schütte, 2020, §4.2) with their eigen- and singular decompositions.
"""

from __future__ import annotations

from sklearn.base import TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._backend import ops_of
from .._shared.operators import _check_jitter
from .._torch import use_torch
from .._validation import check_bool, forgets_previous_fit, renamed_argument
from ..linalg.operator_svd import eig_qr, kernel_qr
from ._common import (
    _centred_in_place,
    _check_decomposition_params,
    _clipped_decomposition,
    _ComponentsOut,
    _device_transform,
    _fitted_pair,
    _operator_samples,
    _OperatorEstimator,
    _paired_svd,
    _PreservesFloat32,
    _sample_operator,
    _transformed,
    check_cov_memory,
    check_two_view_memory,
    fit_samples,
    signed_by_values,
)
from .empirical import RKHSFunction, _center_coef, as_rkhs_kernel, scaled_identity

_NAME_X = "Gram matrix of X (input)"
_NAME_Y = "Gram matrix of Y (output)"


class CovarianceOperator(_PreservesFloat32, _ComponentsOut, TransformerMixin, _OperatorEstimator):
    """Empirical covariance operator Ĉ_XX = (1/n) ΦΦᵀ and its eigendecomposition (Mollenhauer et
    al., 2020, §4.2).

    ``fit`` computes the top ``n_components`` eigenpairs (λ_i, φ_i) (kernel QR route, Cor. 3.6).
    The eigenfunctions φ_i are normalised in the RKHS, ‖φ_i‖_H = 1; with e_i the same
    eigenfunctions normalised in L²(μ̂) (the empirical measure of the samples, ‖e_i‖_μ̂ = 1)
    they are φ_i = √λ_i e_i, the Mercer features of Mollenhauer et al. (2020), Example 3.10.
    ``transform(X)`` returns [φ_i(x)] (= ``eigenfunctions_(X)``), and with the uncentred
    operator k(x, x') ≈ Σ_i φ_i(x) φ_i(x') (Example 3.10); with ``center=True`` the features
    are centred: φ_i(x) minus its mean (1/n) Σ_j φ_i(x_j) over the training samples.

    Parameters
    ----------
    kernel : str, Kernel or callable, default='rbf'
        A symmetric PSD kernel.
    kernel_params : dict or None, default=None
        Keyword arguments of the kernel.
    n_components : int, default=5
        Number of eigenpairs; more than the numerical rank of the Gram matrix is clipped with a
        :class:`~asymkern.exceptions.ClippedParameterWarning` (``n_components_``: the number kept).
    center : bool, default=False
        Use centred features (the covariance in the usual sense). Must be True or False: any
        other value is refused by ``fit`` with a ``TypeError`` naming ``center``.
    jitter : float, default=0.0
        Diagonal added to the Gram matrix before factorising it.
    device : None, str or torch.device, default=None
        Run ``fit`` / ``transform`` on the torch backend on this device (``'cpu'``,
        ``'cuda'``, …): the Gram matrix is formed there in float64 and the numpy path's
        algorithm runs on it (the same pivoted-Cholesky kernel QR, rank rule and sign rule,
        through the executor's primitives), and numpy inputs give numpy outputs. ``None``:
        the numpy path for numpy input, the tensor's own device for torch tensors (which give
        tensors back, dtype kept). Supports the kernels of
        ``asymkern._torch.kernels.SUPPORTED_KERNELS``; needs PyTorch
        (``pip install "asymkern[torch]"``). The eigenvalues and eigenfunctions equal the numpy
        path's to rounding, also on a singular Gram matrix: the sign rule reads each
        eigenfunction's values at the samples (largest magnitude positive, the lowest index on
        a tie), not its coefficients, which are then not unique. Eigenfunctions of a repeated
        eigenvalue are a basis of its eigenspace that no sign rule makes unique.

    Attributes
    ----------
    operator_ : EmpiricalOperator
        The fitted operator (after a torch fit: the numpy operator on the same samples; its
        own methods run with numpy).
    eigenvalues_ : ndarray of shape (``n_components_``,)
        Eigenvalues, descending (a float64 tensor on the device after a fit on tensors).
    eigenfunctions_ : RKHSFunction
        The RKHS-normalised eigenfunctions φ_i = √λ_i e_i (‖φ_i‖_H = 1; e_i = φ_i / √λ_i are
        the L²(μ̂)-normalised ones of Example 3.10), the Mercer features that ``transform``
        returns (``transform(X)`` equals ``eigenfunctions_(X)`` without centring); numpy, also
        after a torch fit (``transform`` evaluates them on the device).
    n_components_ : int
        Number of eigenpairs kept.

    See Also
    --------
    CrossCovarianceOperator : the cross-covariance Ĉ_YX and its SVD.
    asymkern.operators.EmpiricalOperator : the operator and its ``svd``/``eig``.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, 2020, §4.2 and Example 3.10
       (Mercer features from Ĉ_XX).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import CovarianceOperator
    >>> X = np.random.RandomState(0).uniform(-1, 1, size=(60, 2))
    >>> cov = CovarianceOperator(kernel="polynomial", n_components=3).fit(X)
    >>> cov.transform(X).shape
    (60, 3)
    >>> bool(np.all(np.diff(cov.eigenvalues_) <= 0))
    True
    """

    def __init__(self, kernel="rbf", kernel_params=None, n_components: int = 5,
                 center: bool = False, jitter: float = 0.0, device=None):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.center = center
        self.jitter = jitter
        self.device = device

    @forgets_previous_fit
    def fit(self, X, y=None):
        """Fit the operator and its top eigenpairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (CSR when the kernel accepts sparse input).
        y : None
            Ignored.

        Returns
        -------
        self : CovarianceOperator
            The fitted estimator.
        """
        c = check_bool(self.center, "center")  # before any work
        k = as_rkhs_kernel(self.kernel, self.kernel_params)
        _check_jitter(self.jitter)
        _check_decomposition_params(self)
        # the one fit of every executor: only the samples (and what a device fit records for
        # transform) depend on it; the rest runs with the executor's primitives
        s = _operator_samples(self, X, kernel_x=k)
        n = s.n
        check_cov_memory(self, n, fit_samples(s))  # the whole fit, before the Gram matrix
        G, k_means, noise = _centred_in_place(s.gram("x"), c)  # (centred in place)
        B = scaled_identity(n, 1.0 / n)
        F, lam, coef = self._eig(G, B, noise)
        # the eigenfunctions' mean over the samples, which transform subtracts (centred)
        offset = k_means @ coef if c else None
        self.eigenvalues_ = s.fitted(self, lam, coef, offset)
        self.operator_ = _sample_operator(s, B, c, self.jitter, grams=(G, None),
                                          factors=(F, None))
        self.eigenfunctions_ = RKHSFunction(k, self.operator_.X, ops_of(coef).to_host(coef))
        self.n_components_ = int(coef.shape[1])
        return self

    def _eig(self, G, B, noise: float = 0.0):
        """The top eigenpairs of Ĉ_XX = Φ B Φᵀ, B = I/n, from the (centred) Gram matrix G of
        any executor: the kernel QR factor G ≈ RᵀR (pivoted Cholesky, its numerical rank) and
        the eigenpairs of R B Rᵀ (Mollenhauer et al., 2020, Cor. 3.6), ``n_components``
        clipped to the ranks. Returns the factor, the eigenvalues and the eigenfunctions'
        coefficients (centred with ``center``), arrays of G's executor; ``noise`` is the
        rounding level of G's entries (:func:`_centred_in_place`)."""
        F = kernel_qr(G, jitter=self.jitter, name=_NAME_X, noise=noise)
        res = _clipped_decomposition(self, lambda m: eig_qr(F, B, m), F.rank,
                                     "the numerical rank of the Gram matrix")
        C = _center_coef(res.C) if self.center else res.C
        # the sign rule on the eigenfunctions' values at the samples (what transform returns
        # there: G is centred for centred fits), which, unlike the coefficients, are unique
        # when G is singular
        (C,) = signed_by_values(G @ C, C)
        return F, res.eigenvalues, C

    def transform(self, X):
        """Mercer features [φ_i(x)] = [√λ_i e_i(x)] (Mollenhauer et al., 2020, Example 3.10).

        φ_i are the RKHS-normalised eigenfunctions ``eigenfunctions_`` (e_i: the same ones
        normalised in L²(μ̂)), so ``transform(X)`` equals ``eigenfunctions_(X)``; with
        ``center=True`` minus their means over the training samples.

        Parameters
        ----------
        X : array-like of shape (n_points, n_features)
            Points to evaluate.

        Returns
        -------
        ndarray of shape (n_points, ``n_components_``)
            The features (float32 for float32 X).
        """
        check_is_fitted(self, "operator_")
        if use_torch(self, X):  # torch executor (asymkern._torch)
            return _device_transform(self, X)
        mean = self.eigenfunctions_(self.operator_.X).mean(axis=0) if self.center else None
        return _transformed(self, self.eigenfunctions_, X, mean)


class CrossCovarianceOperator(_PreservesFloat32, _ComponentsOut, TransformerMixin,
                              _OperatorEstimator):
    """Empirical cross-covariance operator Ĉ_YX = (1/n) ΨΦᵀ : H → F and its SVD (Mollenhauer et
    al., 2020, §4.2).

    ``fit(X, y)`` (y: the paired second view, samples (x_i, y_i)) computes the top ``n_components``
    singular triplets (Ex. 3.16). ``transform(X)`` = [v_i(x)]; ``transform(X, y)`` =
    ([v_i(x)], [u_i(y)]). With ``center=True`` the scores are centred: v_i(x) − (1/n) Σ_j
    v_i(x_j) and u_i(y) − (1/n) Σ_j u_i(y_j), i.e. ⟨v_i, φ(x) − μ̂_X⟩ and ⟨u_i, ψ(y) − μ̂_Y⟩
    with the training means μ̂ of the features, so the training scores have mean zero; with
    linear kernels they are then scikit-learn's ``PLSSVD(scale=False)`` scores (up to sign).

    Parameters
    ----------
    kernel_x, kernel_y : str, Kernel or callable, default='rbf'
        Symmetric PSD kernels on X and y.
    kernel_x_params, kernel_y_params : dict or None, default=None
        Keyword arguments of the kernels.
    n_components : int, default=5
        Number of singular triplets; more than the numerical rank is clipped with a
        :class:`~asymkern.exceptions.ClippedParameterWarning`.
    center : bool, default=False
        Use centred features (the cross-covariance in the usual sense; ``transform`` then
        subtracts the training means of the scores). Must be True or False: any other value
        is refused by ``fit`` with a ``TypeError`` naming ``center``.
    method : {'qr', 'auxiliary', 'block'}, default='qr'
        SVD route (see :meth:`EmpiricalOperator.svd`).
    jitter : float, default=0.0
        Diagonal added to the Gram matrices before factorising them.
    device : None, str or torch.device, default=None
        Run ``fit`` / ``transform`` on the torch backend on this device (``'cpu'``,
        ``'cuda'``, …): both Gram matrices are formed there in float64 and the numpy path's
        kernel QR route runs on them (pivoted Cholesky, the SVD of Cor. 3.5), and numpy
        inputs give numpy outputs. ``None``: the numpy path for numpy input, the tensor's own
        device for torch tensors (tensors back, dtype kept). Only ``method='qr'`` and the
        kernels of ``asymkern._torch.kernels.SUPPORTED_KERNELS``; needs PyTorch
        (``pip install "asymkern[torch]"``). Singular values and functions equal the numpy
        path's to rounding, also on singular Gram matrices: each pair (u_i, v_i) is signed by
        the values of v_i at the samples (largest magnitude positive, the lowest index on a
        tie).

    Attributes
    ----------
    singular_values_ : ndarray of shape (``n_components_``,)
        Singular values, descending (a float64 tensor on the device after a fit on
        tensors).
    left_singular_functions_ : RKHSFunction
        u_i ∈ F (functions of y); numpy, also after a torch fit.
    right_singular_functions_ : RKHSFunction
        v_i ∈ H (functions of x); numpy, also after a torch fit.
    n_components_ : int
        Number of triplets kept.

    See Also
    --------
    KernelCCA : the normalised (canonical-correlation) version.
    CovarianceOperator : the covariance Ĉ_XX.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, 2020, §4.2 and Example
       3.16.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import CrossCovarianceOperator
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(50, 2)
    >>> y = np.sin(X[:, :1]) + 0.1 * rng.randn(50, 1)
    >>> cc = CrossCovarianceOperator(n_components=2).fit(X, y)
    >>> cc.transform(X).shape
    (50, 2)
    """

    def __init__(self, kernel_x="rbf", kernel_y="rbf", kernel_x_params=None,
                 kernel_y_params=None, n_components: int = 5, center: bool = False,
                 method: str = "qr", jitter: float = 0.0, device=None):
        self.kernel_x = kernel_x
        self.kernel_y = kernel_y
        self.kernel_x_params = kernel_x_params
        self.kernel_y_params = kernel_y_params
        self.n_components = n_components
        self.center = center
        self.method = method
        self.jitter = jitter
        self.device = device

    @forgets_previous_fit
    def fit(self, X, y=None, *, Y=None):
        """Fit on paired samples (x_i, y_i).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The x samples.
        y : array-like of shape (n_samples,) or (n_samples, n_features_y)
            The paired y samples.
        Y : array-like, deprecated
            Former keyword of ``y``.

        Returns
        -------
        self : CrossCovarianceOperator
            The fitted estimator.
        """
        y = renamed_argument(y, Y, "y", "Y", where="CrossCovarianceOperator.fit")
        c = check_bool(self.center, "center")  # before any work
        kx = as_rkhs_kernel(self.kernel_x, self.kernel_x_params, "kernel_x")
        ky = as_rkhs_kernel(self.kernel_y, self.kernel_y_params, "kernel_y")
        _check_jitter(self.jitter)
        _check_decomposition_params(self, self.method)
        # the one fit of every executor (only the samples and what a device fit records for
        # transform depend on it); the 'auxiliary' and 'block' routes are numpy's
        s = _operator_samples(self, X, y, kx, ky)
        n = s.n
        check_two_view_memory(self, n, fit_samples(s))  # the whole fit, before the Grams
        # (centred in place; the column means of the uncentred Gram matrices kept for the
        # training means of the scores)
        Gx, kx_means, noise_x = _centred_in_place(s.gram("x"), c)
        Gy, ky_means, noise_y = _centred_in_place(s.gram("y"), c)
        B = scaled_identity(n, 1.0 / n)
        F = ((kernel_qr(Gx, jitter=self.jitter, name=_NAME_X, noise=noise_x),
              kernel_qr(Gy, jitter=self.jitter, name=_NAME_Y, noise=noise_y))
             if self.method == "qr"
             else (None, None))
        self.operator_ = op = _sample_operator(s, B, c, self.jitter, (Gx, Gy), F)
        sv, cu, cv = _paired_svd(self, B, op, F, n)
        # each pair (u_i, v_i) signed by the values of v_i at the samples (transform's)
        cu, cv = signed_by_values(Gx @ cv, cu, cv)
        # the training means of the scores (centring): (1/n) Σ_j v_i(x_j)
        (self.singular_values_, self.right_singular_functions_,
         self.left_singular_functions_) = _fitted_pair(self, s, sv, cv, cu, kx_means, ky_means)
        return self

    def transform(self, X, y=None):
        """Right singular functions at X; with ``y`` also the left ones at y (the scores of
        Mollenhauer et al., 2020, Example 3.16).

        With ``center=True`` the scores are centred by the training means: v_i(x) − (1/n)
        Σ_j v_i(x_j) (and likewise u_i(y)), so they have mean zero on the training samples.

        Parameters
        ----------
        X : array-like of shape (n_points, n_features)
            Points x.
        y : array-like of shape (n_points, n_features_y) or None, default=None
            Points y.

        Returns
        -------
        ndarray of shape (n_points, ``n_components_``) or tuple of two such arrays
            [v_i(x)], or ([v_i(x)], [u_i(y)]) when ``y`` is given (centred with ``center``).
        """
        check_is_fitted(self, "operator_")
        if use_torch(self, X, y):  # torch executor (asymkern._torch)
            return _device_transform(self, X, y)
        xs = _transformed(self, self.right_singular_functions_, X, self._x_mean)
        if y is None:
            return xs
        return xs, _transformed(self, self.left_singular_functions_, y, self._y_mean,
                                "the transformed values of y", "rescale y like the training data",
                                y=True)


__all__ = ["CovarianceOperator", "CrossCovarianceOperator"]
