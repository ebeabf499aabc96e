"""Kernel canonical correlation analysis as the SVD of a regularised empirical operator
(Mollenhauer, Schuster, Klus and Schütte, 2020, App. A.2).
"""

from __future__ import annotations

from sklearn.base import TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._backend import ops_of
from .._shared.operators import gram
from .._torch import use_torch
from .._validation import DEPRECATED, check_bool, forgets_previous_fit, renamed_argument
from ..linalg.operator_svd import gram_eigh
from ._common import (
    _centred_in_place,
    _check_decomposition_params,
    _ComponentsOut,
    _device_transform,
    _fitted_pair,
    _operator_samples,
    _OperatorEstimator,
    _paired_svd,
    _PreservesFloat32,
    _Recomputable,
    _sample_operator,
    _transformed,
    check_two_view_memory,
    fit_samples,
    signed_by_values,
)
from .empirical import MatmatOperator, RKHSFunction, as_rkhs_kernel

_VARIATES = ("the canonical variates", "rescale the samples like the training data")


class CCARepresentation(_Recomputable, MatmatOperator):
    """B = (G_Ψ + nεI)^{-1/2} (G_Φ + nεI)^{-1/2} from eigendecompositions U diag(d) Uᵀ.

    ``source=(kx, X, ky, Y, center, shift)``: the eigenvectors are recomputed after unpickling.
    """

    _heavy = ("Ux", "dx", "Uy", "dy")

    def __init__(self, Ux, dx, Uy, dy, source=None):
        super().__init__((Uy.shape[0], Ux.shape[0]))
        self.Ux, self.dx, self.Uy, self.dy, self._source = Ux, dx, Uy, dy, source

    def _rebuild(self):
        kx, X, ky, Y, center, shift = self._source
        what = "the Gram matrix of the samples"
        Gx, _, noise_x = _centred_in_place(gram(kx, X, what=what), center)
        Gy, _, noise_y = _centred_in_place(gram(ky, Y, what=what), center)
        B = _cca_factors(Gx, Gy, shift, noise=(noise_x, noise_y))[2]
        self.Ux, self.dx, self.Uy, self.dy = B.Ux, B.dx, B.Uy, B.dy

    def _apply(self, V):
        W = self.Ux @ (self.dx[:, None] * (self.Ux.T @ V))
        return self.Uy @ (self.dy[:, None] * (self.Uy.T @ W))

    def _apply_t(self, V):
        W = self.Uy @ (self.dy[:, None] * (self.Uy.T @ V))
        return self.Ux @ (self.dx[:, None] * (self.Ux.T @ W))


def _cca_factors(Gx, Gy, shift: float, source=None, noise=(0.0, 0.0)):
    """The eigen-factors of the (centred) Gram matrices of any executor (rank-revealing
    pivoted Cholesky first, :func:`~asymkern.linalg.operator_svd.gram_eigh`, ``noise`` the
    rounding levels of their entries) and the representation
    B = (G_Ψ + nεI)^{-1/2} (G_Φ + nεI)^{-1/2} built from them."""
    Fx = gram_eigh(Gx, name="Gram matrix of X", noise=noise[0])
    Fy = gram_eigh(Gy, name="Gram matrix of y", noise=noise[1])
    assert Fx.evals is not None and Fy.evals is not None  # gram_eigh sets them
    ops = ops_of(Fx.evals)
    dx = 1.0 / ops.sqrt(Fx.evals + shift)
    dy = 1.0 / ops.sqrt(Fy.evals + shift)
    return Fx, Fy, CCARepresentation(Fx.evecs, dx, Fy.evecs, dy, source=source)


class KernelCCA(_PreservesFloat32, _ComponentsOut, TransformerMixin, _OperatorEstimator):
    """Kernel CCA as the SVD of S = (Ĉ_YY + εI)^{-1/2} Ĉ_YX (Ĉ_XX + εI)^{-1/2} (Mollenhauer et al.,
    2020, App. A.2).

    S = Ψ B Φᵀ with B = (G_Ψ + nεI)^{-1/2} (G_Φ + nεI)^{-1/2} — exact for the Tikhonov-regularised
    empirical operators. The inverse square roots come from eigendecompositions of the Gram
    matrices (through a rank-revealing pivoted Cholesky when they are numerically low-rank,
    :func:`~asymkern.linalg.operator_svd.gram_eigh`), which also serve as the kernel QR factors.
    ``fit(X, y)``: y is the paired second view (samples (x_i, y_i)), as scikit-learn's ``CCA``.
    ``transform(X)`` gives the (centred) canonical variates of X, ``transform(X, y)`` the pair
    ``(x_scores, y_scores)``, ``transform_y(y)`` those of y alone. ``fit_transform(X, y)``
    returns the x-scores only (``fit(X, y).transform(X)``, so that the estimator can be a
    step of a pipeline; scikit-learn's ``CCA`` returns the pair).

    Parameters
    ----------
    kernel_x, kernel_y : str, Kernel or callable, default='rbf'
        Symmetric PSD kernels on X and y.
    kernel_x_params, kernel_y_params : dict or None, default=None
        Keyword arguments of the kernels.
    alpha : float, default=1e-3
        ε > 0 (``regularization`` is its deprecated former name).
    n_components : int, default=2
        Number of canonical pairs; more than the numerical rank is clipped with a
        :class:`~asymkern.exceptions.ClippedParameterWarning` (``n_components_``).
    center : bool, default=True
        Centred features (the usual CCA; the paper's App. A.2 is uncentred).
    method : {'qr', 'auxiliary', 'block'}, default='qr'
        SVD route.
    regularization : float, deprecated
        Former name of ``alpha``.
    device : None, str or torch.device, default=None
        Run ``fit`` / ``transform`` on the torch backend on this device (``'cpu'``,
        ``'cuda'``, …): both Gram matrices are formed there in float64 and the numpy path's
        fit runs on them (rank-revealing eigen-factors, the SVD of Cor. 3.5, the canonical
        functions), and numpy inputs give numpy outputs. ``None``: the numpy path for numpy
        input, the tensor's own device for torch tensors (tensors back, dtype kept). Only
        ``method='qr'`` and the kernels of ``asymkern._torch.kernels.SUPPORTED_KERNELS``; needs
        PyTorch (``pip install "asymkern[torch]"``). Correlations equal the numpy path's to
        rounding, and so do the functions: each pair's sign is fixed by the values of its
        canonical function f_i at the samples (largest magnitude positive, the lowest index on
        a tie), the same on every executor and on singular Gram matrices.

    Attributes
    ----------
    canonical_correlations_ : ndarray of shape (``n_components_``,)
        The singular values σ_i ≤ 1 (a float64 tensor on the device after a fit on tensors).
    x_singular_functions_, y_singular_functions_ : RKHSFunction
        Right (v_i ∈ H, plotted in Ex. 4.2) and left (u_i ∈ F) singular functions.
    x_canonical_functions_, y_canonical_functions_ : RKHSFunction
        f_i = (Ĉ_XX + ε)^{-1/2} v_i and g_i = (Ĉ_YY + ε)^{-1/2} u_i, unit empirical variance.
    n_components_ : int
        Number of pairs kept.

    See Also
    --------
    CrossCovarianceOperator : the unnormalised cross-covariance SVD.
    KoopmanOperator : transfer operators (their SVD gives coherent sets).

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, 2020, Appendix A.2 and
       Example 4.2 (coherent sets of the double gyre).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import KernelCCA
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(60, 2)
    >>> y = X[:, :1] ** 2 + 0.1 * rng.randn(60, 1)
    >>> cca = KernelCCA(n_components=2).fit(X, y)
    >>> cca.transform(X).shape
    (60, 2)
    >>> bool(cca.canonical_correlations_[0] <= 1.0)
    True
    """

    def __init__(self, kernel_x="rbf", kernel_y="rbf", kernel_x_params=None,
                 kernel_y_params=None, alpha: float = 1e-3, n_components: int = 2,
                 center: bool = True, method: str = "qr", regularization=DEPRECATED,
                 device=None):
        self.kernel_x = kernel_x
        self.kernel_y = kernel_y
        self.kernel_x_params = kernel_x_params
        self.kernel_y_params = kernel_y_params
        self.alpha = alpha
        self.n_components = n_components
        self.center = center
        self.method = method
        self.regularization = regularization
        self.device = device

    @forgets_previous_fit
    def fit(self, X, y=None, *, Y=None):
        """Fit on paired samples (x_i, y_i).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The first view.
        y : array-like of shape (n_samples,) or (n_samples, n_features_y)
            The paired second view.
        Y : array-like, deprecated
            Former keyword of ``y``.

        Returns
        -------
        self : KernelCCA
            The fitted estimator.
        """
        y = renamed_argument(y, Y, "y", "Y", where="KernelCCA.fit")
        check_bool(self.center, "center")
        eps = self._alpha()
        kx = as_rkhs_kernel(self.kernel_x, self.kernel_x_params, "kernel_x")
        ky = as_rkhs_kernel(self.kernel_y, self.kernel_y_params, "kernel_y")
        _check_decomposition_params(self, self.method)
        # the one fit of every executor (only the samples and what a device fit records for
        # transform depend on it); the 'auxiliary' and 'block' routes are numpy's
        s = _operator_samples(self, X, y, kx, ky)
        (X64, Y64), n, c = s.host(), s.n, bool(self.center)
        check_two_view_memory(self, n, fit_samples(s), cca=True)  # the whole fit, before the Grams
        # (centred in place; the column means of the uncentred Gram matrices kept for the
        # training means of the variates, so transform needs no n×n work)
        Gx, kx_means, noise_x = _centred_in_place(s.gram("x"), c)
        Gy, ky_means, noise_y = _centred_in_place(s.gram("y"), c)
        source = (kx, X64, ky, Y64, c, n * eps)
        Fx, Fy, B = _cca_factors(Gx, Gy, n * eps, source=source, noise=(noise_x, noise_y))
        # the numpy operator: B and the factors of a numpy fit; after a device fit its own
        # methods factorise lazily, with numpy
        rep = B if s.device is None else CCARepresentation.lazy((n, n), source)
        self.operator_ = op = _sample_operator(s, rep, c, grams=(Gx, Gy), factors=(Fx, Fy))
        sv, cu, cv = _paired_svd(self, B, op, (Fx, Fy), n)
        coef_f, vals_f = self._canonical(cv, Fx, Gx, eps, n)
        coef_g, _ = self._canonical(cu, Fy, Gy, eps, n)
        # each pair signed by the values of its canonical function f_i at the samples (what
        # transform returns there, up to the positive scale): u_i, v_i, f_i, g_i together
        cu, cv, coef_f, coef_g = signed_by_values(vals_f, cu, cv, coef_f, coef_g)
        # the canonical functions and the training means of the variates (centring)
        (self.canonical_correlations_, self.x_canonical_functions_,
         self.y_canonical_functions_) = _fitted_pair(self, s, sv, coef_f, coef_g, kx_means,
                                                     ky_means)
        host = ops_of(cv).to_host
        self.x_singular_functions_ = RKHSFunction(kx, op.X, host(cv))
        self.y_singular_functions_ = RKHSFunction(ky, op.Y, host(cu))
        return self

    def _canonical(self, C, F, G, eps, n):
        """Coefficients of f = (Ĉ + ε)^{-1/2} Φ c = Φ (G/n + ε)^{-1/2} c (restricted to the
        kept eigen-directions), scaled to unit empirical variance, and f's values at the
        samples before that scaling (centred with ``center``); any executor's arrays."""
        ops = ops_of(C)
        U, lam = F.evecs, F.evals
        D = 1.0 / ops.sqrt(lam / n + eps)
        coef = U @ (D[:, None] * (U.T @ C))
        vals = G @ coef  # f(x_i) for the (centred) training features
        if self.center:
            vals = vals - vals.mean(axis=0)
        sd = ops.sqrt((vals**2).mean(axis=0))
        sd[sd == 0] = 1.0
        coef = coef / sd
        if self.center:
            coef = coef - coef.mean(axis=0)
        return coef, vals

    def transform(self, X, y=None):
        """Canonical variates f_i(x) of X; with ``y`` the pair ``(x_scores, y_scores)``.

        Parameters
        ----------
        X : array-like of shape (n_points, n_features)
            Points of the first view.
        y : array-like of shape (n_points, n_features_y) or None, default=None
            Points of the second view.

        Returns
        -------
        ndarray of shape (n_points, ``n_components_``) or tuple of two such arrays
            The canonical variates.
        """
        check_is_fitted(self, "operator_")
        if use_torch(self, X, y):  # torch executor (asymkern._torch)
            return _device_transform(self, X, y, "the canonical variates")
        xs = _transformed(self, self.x_canonical_functions_, X, self._x_mean, *_VARIATES)
        if y is None:
            return xs
        return xs, self.transform_y(y)


    def transform_y(self, y=None, *, Y=None):
        """Canonical variates g_i(y) of the second view.

        Parameters
        ----------
        y : array-like of shape (n_points, n_features_y)
            Points of the second view.
        Y : array-like, deprecated
            Former keyword of ``y``.

        Returns
        -------
        ndarray of shape (n_points, ``n_components_``)
            The canonical variates of y.
        """
        y = renamed_argument(y, Y, "y", "Y", where="KernelCCA.transform_y")
        check_is_fitted(self, "operator_")
        if y is None:
            raise ValueError("y is None; expected the samples y of shape (n_samples, "
                             f"{self.operator_.Y.shape[1]}) like the y passed to fit")
        if use_torch(self, y):  # torch executor (asymkern._torch)
            return _device_transform(self, None, y, "the canonical variates")
        return _transformed(self, self.y_canonical_functions_, y, self._y_mean, *_VARIATES,
                            y=True)


__all__ = ["KernelCCA"]
