"""The kernel Perron–Frobenius operator (Mollenhauer, Schuster, Klus and Schütte, 2020, §4.4;
Klus, Schuster and Muandet, 2020): full estimator with the conditioning safeguard of the
time-lagged Gram matrix, and the adjoints of the reduced-rank Koopman estimators.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._backend import ops_of
from .._shared.operators import gram
from .._torch import use_torch
from .._validation import DEPRECATED, forgets_previous_fit, renamed_argument
from ..linalg.operator_svd import norm1
from ._common import _clip_components, _LowRank
from ._koopman import fix_phases, reduced_eig, rkhs_norms
from ._numerics import GramSolver
from .empirical import EmpiricalOperator, OperatorEig, RKHSFunction, as_rkhs_kernel
from .transfer import (
    IllConditionedLaggedGramWarning,
    LaggedGramSolver,
    PerronFrobeniusRepresentation,
    _device_samples,
    _reduced_factors,
    _snapshot_pairs,
    _TransferOperator,
    gram_inverse,
)


class PerronFrobeniusOperator(_TransferOperator):
    """Kernel Perron–Frobenius operator P̂ = Ψ G_ΦΨ⁻¹ (G_Φ + nεI)⁻¹ G_ΦΨ Φᵀ (Mollenhauer et al.,
    2020, §4.4).

    ``fit`` as for :class:`KoopmanOperator` (one trajectory X, or snapshot pairs ``fit(X, y)``).
    No ``score``: P̂ propagates densities, it predicts no state, so there is no natural
    supervised score. G_ΦΨ = [k(x_i, y_j)] is the time-lagged Gram matrix. Eigenfunctions live on
    the lagged samples y_i; the top eigenpairs come from ARPACK (n > 150, with a restart budget of
    about one dense eigendecomposition, then the dense solver), never a full eigendecomposition.

    **Ill-conditioned G_ΦΨ.** In exact arithmetic the eigenvalues of P̂ are those of
    A = (G_Φ + nεI)⁻¹ G_ΦΨ, but the eigenfunctions f = Ψ w need w = G_ΦΨ⁻¹ v, and an LU solve with
    G_ΦΨ loses about log10(1/rcond) digits. G_ΦΨ is therefore LU-factorised and its reciprocal
    condition number ``lagged_gram_rcond_`` estimated first; when it is below ``RCOND_MIN`` = √eps
    the inverse is replaced, with an :class:`IllConditionedLaggedGramWarning`, by the Tikhonov-
    regularised inverse with δ = nε:

        B_δ = G_ΦΨ^{+δ} (G_Φ + nεI)⁻¹ G_ΦΨ,  G_ΦΨ^{+δ} = (G_ΦΨᵀG_ΦΨ + δ²I)⁻¹G_ΦΨᵀ
            = V diag(σ_i/(σ_i² + δ²)) Uᵀ  (SVD G_ΦΨ = U diag(σ) Vᵀ),

    which keeps the directions with σ ≫ δ exactly and damps the numerically null ones. The
    eigenvalues are always those of A, from A's own eigenproblem (as conditioned as the Koopman
    estimator's), and only the eigenfunctions' coefficients w = G_ΦΨ^{+δ} v go through the
    regularised inverse (the eigenvalues of B_δ G_ΦΨ, which the fit used to report, were 1e-3
    to O(1) off those of A whenever the safeguard was on). ``operator_`` still applies the
    regularised B_δ: with the safeguard on, its own spectrum (``operator_.eig``) is B_δ G_ΦΨ's,
    and P̂_δ f − λf is of the size of the regularisation (0.02–0.3 relative on the trajectories
    of the tests), while the eigenfunctions are as close to the exact estimator's as the
    regularised ones were (checked against a 60-digit reference: 3e-2 against 4e-2).
    ``lagged_gram_solver_`` is ``'lu'`` or ``'tikhonov'``. Eigenvalues below A's rounding
    level (n·eps·cond(G_Φ + nεI)·‖A‖₁, at most √eps times the largest modulus) and
    eigenfunctions whose RKHS norm
    is numerically zero are dropped, with a warning.

    **Reduced-rank estimators** (``estimator='pcr'`` or ``'rrr'``, rank r = ``rank``). The
    Perron–Frobenius operator is the adjoint of the Koopman operator; in the RKHS its embedded
    form is P_E = C_YX C_XX⁻¹ = (C_XX⁻¹ C_XY)* (Klus et al. 2020, §3), so its estimator is the
    adjoint of the Koopman estimator (Kostic et al. 2022, §3): with the Koopman estimator
    K̂ = Φ U Vᵀ Ψᵀ of :class:`KoopmanOperator` (same ``estimator``/``rank``; Φ the features of the
    x_i, Ψ those of the y_i, U, V n×r),

        P̂ = K̂* = Ψ V Uᵀ Φᵀ,  i.e. B = V Uᵀ (rank r, never formed).

    Its eigenpairs come from the r×r matrix Mᵀ = Uᵀ G_ΦΨ V (M = Vᵀ G_ΨΦ U is the Koopman
    matrix): P̂ (Ψ V z) = λ Ψ V z when Mᵀ z = λ z, so the eigenvalues are those of the Koopman
    estimator and the eigenfunctions are its left eigenfunctions
    (``KoopmanOperator.left_eigenfunctions_``), here RKHS-normalised. G_ΦΨ is only multiplied,
    never inverted, so the reduced-rank estimators need no conditioning safeguard. At full rank
    (r = n) 'pcr' and 'rrr' equal Ψ (G_Φ + nεI)⁻¹ Φᵀ (the regularised P_E); ``'full'`` (the default)
    is the estimator of Mollenhauer et al. (2020) above, of the kernel PF operator C_XX⁻¹C_YX
    (Klus et al. 2020): the two are similar operators, P_E = C_XX P C_XX⁻¹, so their
    eigenvalues coincide and their eigenfunctions differ by the covariance operator.

    **Unregularised estimator** (``alpha=None`` or ``alpha=0``). (G_Φ + nεI)⁻¹ becomes the
    pseudo-inverse G_Φ⁺ (eigenvalues at or below n·eps·λ_max dropped) and, for 'full', an
    ill-conditioned G_ΦΨ gets the truncated pseudo-inverse V diag(1/σ_i) Uᵀ over the σ_i above
    n·eps·σ_max (``lagged_gram_solver_ = 'pinv'``, with the
    :class:`IllConditionedLaggedGramWarning`) instead of the Tikhonov inverse (δ = 0); 'pcr' and
    'rrr' are the adjoints of the unregularised Koopman estimators (see
    :class:`KoopmanOperator`). A kept spectrum of G_Φ with condition number above 1/√eps gives
    an ``IllConditionedGramWarning`` (a ``RuntimeWarning``); the results stay finite.

    Parameters
    ----------
    kernel : str, Kernel or callable, default='rbf'
        A symmetric PSD kernel.
    kernel_params : dict or None, default=None
        Keyword arguments of the kernel.
    alpha : float or None, default=1e-6
        Tikhonov parameter ε > 0 (``regularization`` is its deprecated former name). ``None``
        or ``0``: the unregularised estimator, see *Unregularised estimator* above.
    lag : int, default=1
        τ in time steps for a trajectory ``fit(X)``.
    n_components : int, default=5
        Number of eigenpairs kept.
    timestep : float, default=1.0
        Time per step (for ``timescales_``).
    estimator : {'full', 'pcr', 'rrr'}, default='full'
        'full': the estimator of Mollenhauer et al. (2020); 'pcr'/'rrr': the adjoint of the
        reduced-rank
        Koopman estimator (see above).
    rank : int or None, default=None
        Rank r of the 'pcr'/'rrr' estimators; None uses ``n_components``. Clipped to the number
        of pairs. Ignored by 'full'.
    regularization : float, deprecated
        Former name of ``alpha``.
    device : None, str or torch.device, default=None
        Run ``fit`` on the torch backend on this device (``'cpu'``, ``'cuda'``, …): the n×n
        Gram matrices are formed there in float64 and the n×n work runs there (``'full'``:
        Cholesky and LU factors of G_X + nεI and G_XY — the reciprocal condition number
        ``lagged_gram_rcond_`` is LAPACK's ``gecon`` estimate from that LU factor, as on the
        numpy path, and below ``RCOND_MIN`` the SVD of G_XY gives the Tikhonov-regularised
        inverse — then the top eigenpairs of the auxiliary matrix, by ``torch.linalg.eig`` for
        n ≤ 150 and above by the numpy path's ARPACK call with its products on the device;
        ``'pcr'``/``'rrr'``:
        ``torch.linalg.eigh``, then the r×r matrix on the host). ``None``: the numpy path for
        numpy input, the tensor's own device for torch tensors. The fitted attributes are numpy
        arrays either way. Exact estimators only; the kernels of
        ``asymkern._torch.kernels.SUPPORTED_KERNELS``; needs PyTorch
        (``pip install "asymkern[torch]"``).

    Attributes
    ----------
    eigenvalues_ : ndarray of shape (``n_components_``,)
        Eigenvalues by decreasing modulus (numpy, also after a fit on torch tensors).
    eigenfunctions_ : RKHSFunction
        Eigenfunctions (functions on the lagged samples' space; numpy, also after a torch fit).
    timescales_ : ndarray
        Implied timescales −τ/ln|λ_i|.
    lagged_gram_rcond_ : float or None
        Estimated reciprocal condition number of G_ΦΨ ('full' only).
    lagged_gram_solver_ : {'lu', 'tikhonov', 'pinv'} or None
        How G_ΦΨ⁻¹ was applied ('full' only; None for 'pcr'/'rrr'; 'pinv': the truncated
        pseudo-inverse of an ill-conditioned G_ΦΨ with ``alpha=None``).
    rank_ : int or None
        Rank of the 'pcr'/'rrr' estimator (None for 'full').

    See Also
    --------
    KoopmanOperator : the adjoint (function propagation, forecasts).

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus, C. Schütte, "Singular value decomposition
       of operators on reproducing kernel Hilbert spaces", in Advances in Dynamics,
       Optimization and Computation, Springer, 2020, §4.4 (kernel transfer operators).
    .. [2] S. Klus, I. Schuster, K. Muandet, "Eigendecompositions of transfer operators in
       reproducing kernel Hilbert spaces", J. Nonlinear Sci. 30, 283–315 (2020), §3.
    .. [3] V. Kostic, P. Novelli, A. Maurer, C. Ciliberto, L. Rosasco, M. Pontil, "Learning
       dynamical systems via Koopman operator regression in reproducing kernel Hilbert
       spaces", NeurIPS 2022 (PCR and RRR estimators).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import PerronFrobeniusOperator
    >>> rng = np.random.RandomState(0)
    >>> x = np.zeros((120, 1))
    >>> for t in range(119):
    ...     x[t + 1] = 0.8 * x[t] + 0.5 * rng.randn()
    >>> pf = PerronFrobeniusOperator(kernel_params={"gamma": 0.5}, alpha=1e-3,
    ...                              n_components=2).fit(x)
    >>> pf.eigenvalues_.shape
    (2,)
    >>> from asymkern.operators import KoopmanOperator
    >>> kw = dict(kernel="linear", estimator="rrr", rank=1, n_components=1)
    >>> pf_rrr = PerronFrobeniusOperator(**kw).fit(x)  # the adjoint of the Koopman RRR
    >>> bool(np.isclose(pf_rrr.eigenvalues_[0], KoopmanOperator(**kw).fit(x).eigenvalues_[0]))
    True
    """

    RCOND_MIN = float(np.sqrt(np.finfo(np.float64).eps))
    #: n×n arrays an exact fit holds at once (measured with tracemalloc at n = 600, 1000 and
    #: 2000, on the branch that costs most): 'full' G_X, G_XY, the factor of G_X + nεI, the
    #: SVD factors U and Vᵀ of an ill-conditioned G_XY (the LU factor otherwise), the
    #: auxiliary matrix, and the dense eigensolver's real and complex eigenvectors (n ≤ 150,
    #: or ARPACK not converging; k(Y, Y) is formed after them); 'pcr' G_X, k(Y, X) and
    #: k(Y, Y) being formed; 'rrr' those three and the four of the dense symmetric solve
    #: (n ≤ 200, alpha=None, or ARPACK not converging)
    _FIT_COPIES = {"full": 9, "pcr": 3.5, "rrr": 7}

    def __init__(self, kernel="rbf", kernel_params=None, alpha: float = 1e-6,
                 lag: int = 1, n_components: int = 5, timestep: float = 1.0,
                 estimator: str = "full", rank=None, regularization=DEPRECATED, device=None):
        super().__init__(kernel=kernel, kernel_params=kernel_params,
                         alpha=alpha, lag=lag, n_components=n_components,
                         timestep=timestep, regularization=regularization)
        self.estimator = estimator
        self.rank = rank
        self.device = device

    @forgets_previous_fit
    def fit(self, X, y=None, *, Y=None):
        """Fit on a trajectory or on snapshot pairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            One trajectory (rows are time steps, pairs (x_t, x_{t+lag})) when ``y`` is None, else
            the snapshots x_i.
        y : array-like of shape (n_samples, n_features) or None, default=None
            The time-shifted snapshots y_i = Ξ^τ(x_i), same shape as X (a DataFrame y has the
            columns of a DataFrame X, in their order).
        Y : array-like, deprecated
            Former keyword of ``y``.

        Returns
        -------
        self : PerronFrobeniusOperator
            The fitted estimator.
        """
        y = renamed_argument(y, Y, "y", "Y", where="PerronFrobeniusOperator.fit")
        kind, eps, lag = self._check_params()  # before the fit goes to an executor
        self.torch_fit_ = False
        if use_torch(self, X, y):  # torch executor (asymkern._torch)
            kernel = as_rkhs_kernel(self.kernel, self.kernel_params)
            d = _device_samples(self, X, y, kernel, lag, kind)  # budget checked before G_X
            self.kernel_, self._sparse_ok, self.torch_fit_ = kernel, False, True
            self.X_fit_, self.Y_fit_ = d.X0n, d.X1n
            return self._fit_grams(kind, eps, d.G, self._pair_grams(d.X0, d.X1), host=False)
        self.kernel_ = as_rkhs_kernel(self.kernel, self.kernel_params)
        X0, X1 = _snapshot_pairs(self, X, y, lag, self.kernel_)
        self._check_fit_memory(kind, int(X0.shape[0]), (X0, X1))  # before its first Gram
        G = gram(self.kernel_, X0, what="the Gram matrix G_X of the samples x_t")
        self.X_fit_, self.Y_fit_ = X0, X1
        return self._fit_grams(kind, eps, G, self._pair_grams(X0, X1), host=True)

    def _fit_grams(self, kind: str, eps: float, G, gram, host: bool):
        """The fit from G_X and ``gram(which)`` (the other Gram matrices, see
        :meth:`_pair_grams`) on one executor; ``host``: numpy arrays, whose Gram matrices the
        fitted ``operator_`` keeps (else its factors are recomputed on first use)."""
        n = int(G.shape[0])
        shift = n * eps
        X0, X1 = self.X_fit_, self.Y_fit_
        if kind != "full":
            r = self._rank(n, "the number of time-lagged pairs")
            Cyx = gram("cross")
            U, V, H = _reduced_factors(kind, G, lambda: gram("out"), r, shift)
            if H is None:
                H = gram("out")
            self._set_reduced(kind, U, V, Cyx, H, X0, X1)
            if host:
                self.operator_._cache.update({"in": G, "out": H, "cross": Cyx.T})
            return self
        self.rank_: int | None = None
        Gxy = gram("lagged")
        gsolver = GramSolver(G, shift, "G_X")  # alpha=None: the pseudo-inverse G_X⁺
        solver = LaggedGramSolver(Gxy, shift, self.RCOND_MIN)
        self.lagged_gram_rcond_: float | None = solver.rcond
        self.lagged_gram_solver_: str | None = solver.kind
        if solver.kind != "lu":
            self._warn_ill_conditioned(n, eps, solver.rcond, solver.n_damped, stacklevel=4)
        source = (self.kernel_, X0, X1, shift, self.RCOND_MIN)
        if host:
            inv = gram_inverse(G, gsolver, "G_X", (self.kernel_, X0))
            B = PerronFrobeniusRepresentation(Gxy, inv, solver, source=source)
        else:
            B = PerronFrobeniusRepresentation.lazy((n, n), source)
        self.operator_ = EmpiricalOperator(self.kernel_, X0, self.kernel_, X1, B)
        # the auxiliary matrix B G_XY = G_XY⁻¹ M G_XY is similar to M = (G_X + nεI)⁻¹ G_XY:
        # its eigenvalues are M's and its eigenvectors G_XY⁻¹ v for M v = λ v. M's
        # eigenproblem is as well conditioned as Koopman's; G_XY⁻¹ (regularised when G_XY is
        # ill-conditioned) only maps the eigenvectors, so the safeguard never moves λ (formed
        # as G_XY^{+δ} M G_XY, the eigenvalues were 1e-3 to O(1) off eig(M))
        M = gsolver.solve(Gxy)
        # M's rounding level: a backward-stable solve errs by eps·cond(G_X + nεI)·‖M‖, with
        # cond ≤ (‖G_X‖ + nε)/(nε); eigenvalues below it are noise (A_δ's filter used to damp
        # them: the trajectory's repeated states give M such eigenvalues near 1e-11)
        floor = 0.0
        if shift > 0:
            floor = (n * float(np.finfo(np.float64).eps) * (norm1(G) + shift) / shift
                     * norm1(M))
        formed: dict = {}

        def out_gram():  # k(Y, Y), formed once the eigensolver's n×n arrays are freed
            formed["out"] = gram("out")
            return formed["out"]

        self._finish_full(out_gram, M, X1, n, lift=solver.solve, floor=floor)
        if host:
            self.operator_._cache.update({"in": G, "out": formed["out"], "cross": Gxy})
        return self

    def _warn_ill_conditioned(self, n: int, eps: float, rcond: float, n_damped: int,
                              stacklevel: int):
        """The :class:`IllConditionedLaggedGramWarning` of a fit that regularised G_XY⁻¹ (or, for
        ``alpha=None``, replaced it by the truncated pseudo-inverse)."""
        how, below, advice = (" and alpha=None gives no Tikhonov δ: G_XY⁻¹ is replaced by the "
                              "truncated pseudo-inverse G_XY⁺", "n·eps·σ_max and dropped",
                              "; pass alpha > 0 to regularise")
        if eps != 0:
            how, below, advice = (
                "; the exact estimate G_XY⁻¹(G_X + nεI)⁻¹G_XY would amplify rounding errors, so "
                "G_XY⁻¹ is replaced by the Tikhonov-regularised (G_XYᵀG_XY + δ²I)⁻¹G_XYᵀ with "
                f"δ = nε = {n * eps:.3g}", "δ", "")
        warnings.warn(
            f"the time-lagged Gram matrix G_XY ({n}×{n}) is ill-conditioned (rcond={rcond:.2e} "
            f"< {self.RCOND_MIN:.1e}){how} ({n_damped} of {n} singular values of G_XY are below "
            f"{below}) in the eigenfunctions and the operator; the eigenvalues, those of "
            "(G_X + nεI)⁻¹G_XY, are not affected. Typical causes: samples that are not a "
            f"trajectory, repeated states, a large kernel bandwidth{advice}",
            IllConditionedLaggedGramWarning,
            stacklevel=stacklevel)

    def _set_reduced(self, kind: str, U, V, Cyx, H, X0, X1):
        """The fitted attributes of a 'pcr'/'rrr' fit from the Koopman factors U, V, k(Y, X)
        and H = k(Y, Y) on their executor (X0, X1: the host samples); the eigenpairs come from
        the r×r Mᵀ = Uᵀ G_ΦΨ V on the host."""
        ops = ops_of(U)
        self.lagged_gram_rcond_ = None
        self.lagged_gram_solver_ = None
        Un, Vn = ops.to_host(U), ops.to_host(V)
        self.operator_ = EmpiricalOperator(self.kernel_, X0, self.kernel_, X1, _LowRank(Vn, Un))
        self.rank_ = int(U.shape[1])
        lam, Z, _ = reduced_eig(ops.to_host(U.T @ (Cyx.T @ V)))  # Mᵀ = Uᵀ G_ΦΨ V
        HV = H @ V  # the basis functions' values at Y (the RKHS norms' product too)
        Z, _ = fix_phases(ops.to_host(HV), Z)  # the sign rule on the eigenfunctions' values
        norms = rkhs_norms(Z, V, KP=HV)
        coef = Vn @ Z
        k = _clip_components(self, lam.size, "the number of nonzero eigenvalues of the "
                             f"rank-{self.rank_} estimator")
        fn = RKHSFunction(self.kernel_, X1, coef[:, :k] / norms[:k])
        return self._finish(OperatorEig(lam[:k], fn, kind, {"rank": self.rank_}))

__all__ = ["PerronFrobeniusOperator"]
