"""The kernel Koopman operator: full (kernel ridge), PCR and RRR estimators (Kostic et al.,
2022), exact or Nyström (Meanti et al., 2023), with forecasts and modes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from .._backend import ops_of
from .._shared.operators import (
    DeviceState,
    _check_int,
    _check_landmark_options,
    checked,
    evaluate,
    gram,
    landmark_evaluate,
    landmark_step,
)
from .._torch import check_device, use_torch
from .._validation import (
    DEPRECATED,
    as_data,
    as_weights,
    check_finite_output,
    check_finite_result,
    check_input,
    forgets_previous_fit,
    n_rows,
    renamed_argument,
)
from ._common import (
    _RESCALE,
    LandmarkFunction,
    _clip_components,
    _clipped_decomposition,
    _landmark_predict,
    _LandmarkRepresentation,
    _LowRank,
    _predict_exact,
    landmark_inverse,
    r2_multioutput,
)
from ._koopman import (
    fix_phases,
    forecast_coef,
    landmark_values,
    pcr_primal,
    reduced_eig,
    reduced_koopman,
    rrr_primal,
)
from ._numerics import GramSolver
from .empirical import EmpiricalOperator, OperatorEig, RKHSFunction, as_rkhs_kernel
from .transfer import (
    _check_snapshot_names,
    _device_samples,
    _reduced_factors,
    _snapshot_pairs,
    _TransferOperator,
    gram_inverse,
)


@dataclass(frozen=True)
class DeviceForecast:
    """The executor arrays the forecasts of an exact Koopman fit iterate on its device
    (``_torch_state.forecast``; the host model keeps the same in ``_fc``).

    Attributes
    ----------
    coef : array of shape (n, d)
        The one-step coefficients ((G + nεI)⁻¹Y for 'full', U VᵀY for 'pcr'/'rrr').
    state : array
        What the state forecasts propagate: Y ('full') or VᵀY.
    obs : array or None
        The same for the observables: g(Y) ('full') or Vᵀg(Y).
    solver : GramSolver, optional
        (G + nεI)⁻¹ ('full').
    cross : array, optional
        k(Y, X) ('full').
    U, M : array, optional
        The factor U and the r×r matrix M = Vᵀ C U ('pcr'/'rrr').
    """

    coef: Any
    state: Any
    obs: Any
    solver: Any = None
    cross: Any = None
    U: Any = None
    M: Any = None


def _landmark_eig(C, M, k, values):
    """Eigenpairs of the whitened landmark Koopman matrix M C: the eigenvalues and the
    coefficients W in the whitened features, their sign (phase) fixed by the rule on the
    eigenfunctions' values at the landmarks, ``values @ W`` (``values`` = K_LL T,
    :func:`~asymkern.operators._koopman.landmark_values`)."""
    from ..linalg.operator_svd import eig_auxiliary

    res = eig_auxiliary(C, np.eye(M.shape[0]), M, k)
    W, _ = fix_phases(values, res.C)
    return res.eigenvalues, W, "auxiliary", dict(res.info)


class KoopmanOperator(_TransferOperator):
    """Kernel Koopman operator K̂ of a dynamical system from time-lagged snapshots (Mollenhauer et
    al., 2020, §4.4).

    (K̂ f)(x) ≈ E[f(x_{t+τ}) | x_t = x] is estimated by kernel regression of the shifted
    snapshots y_i = x_{t+τ} on the x_i, with one of three estimators (``estimator``; Kostic et
    al. 2022), each written as (K̂ f)(x) = k(x, X) U Vᵀ f(Y) with n×r matrices U, V:

    * ``'full'`` (default): kernel ridge regression, U Vᵀ = (G + nεI)⁻¹ (G = [k(x_i, x_j)]),
      i.e. K̂ = Φ (G_Φ + nεI)⁻¹ Ψᵀ of Mollenhauer et al. (2020) §4.4;
    * ``'pcr'``: principal-component regression, U Vᵀ = Q_r (Λ_r + nεI)⁻¹ Q_rᵀ with the top
      ``rank`` eigenpairs (Λ_r, Q_r) of G (ARPACK, never a full eigendecomposition);
    * ``'rrr'``: reduced-rank regression, the rank-r minimiser of the Tikhonov-regularised
      empirical risk: U holds the r leading solutions of (1/n) H G u = σ² (G + nεI) u
      (H = [k(y_i, y_j)]) normalised by uᵀ G (G + nεI) u = n, and V = G U / n.

    The eigenpairs of K̂ are those of the r×r matrix M = Vᵀ [k(y_i, x_j)] U (pcr, rrr) or of the
    auxiliary matrix (G + nεI)⁻¹[k(y_i, x_j)] (full; Prop. 3.8, ARPACK for n > 150). Forecasts
    iterate the learned operator: E[g(x_{t+kτ}) | x_t = x] ≈ (K̂ᵏ g)(x) = k(x, X) U Mᵏ⁻¹ Vᵀ g(Y).

    Landmarks (``n_landmarks`` = m or ``landmarks`` = indices of the x_t): the Nyström version of
    each estimator (Meanti et al. 2023), the same regressions on the whitened landmark features
    F(x) = k(x, L) T (TᵀK_LLT = I): only m×m (and m×d) sums over the pairs are needed, so the fit
    also runs on row-chunked dask arrays and scales to n = 10⁵–10⁶. With all x_t as landmarks it
    equals the exact estimator.

    **Unregularised estimator** (``alpha=None`` or ``alpha=0``, the same estimator). Every
    inverse (G + nεI)⁻¹ above becomes the pseudo-inverse G⁺ (the minimum-norm least-squares
    solution, ε → 0⁺): computed from the eigendecomposition of the symmetric PSD Gram matrix
    (G, or FᵀF with landmarks), with the eigenvalues at or below n·eps·λ_max treated as zero
    (relative cutoff rcond = n·eps, eps the float64 machine epsilon). 'full': U Vᵀ = G⁺;
    'pcr': U Vᵀ = Q_r Λ_r⁻¹ Q_rᵀ; 'rrr': the rank-r minimiser of the unregularised empirical
    risk over the range of G (Kostic et al. 2022, Thm. 3 with ε = 0), i.e. the generalised
    eigenproblem (1/n) H G u = σ² G u restricted to range(G), solved in its symmetric form
    Q₊ᵀ H Q₊ z = n σ² z, u = √n Q₊ Λ₊⁻¹ z (G ≈ Q₊ Λ₊ Q₊ᵀ, the kept eigenpairs), never through
    a Cholesky factor of the singular G; with landmarks, A⁺ replaces A_ε⁻¹ = (FᵀF + nεI)⁻¹.
    With the linear kernel the state forecast is then ordinary least squares (DMD). When the
    kept eigenvalues span a condition number λ_max/λ_min above 1/√eps ≈ 6.7e7 (more than half
    of the digits of the coefficients lost: repeated samples, a smooth kernel) an
    ``IllConditionedGramWarning`` (a ``RuntimeWarning``, from
    :mod:`asymkern.operators._numerics`) says so; the results stay finite. A rank-deficient G
    alone (e.g. the linear kernel, n > d) is not ill-conditioned: its null space is dropped.
    PCR's truncation to the top r eigenpairs is itself a regulariser, so 'pcr' warns only when
    those r are ill-conditioned. The numpy, torch (``device``) and dask (landmark) fits all
    support it.

    Parameters
    ----------
    kernel : str, Kernel or callable, default='rbf'
        A symmetric PSD kernel (see :func:`~asymkern.operators.as_rkhs_kernel`).
    kernel_params : dict or None, default=None
        Keyword arguments of the kernel (e.g. ``{'gamma': 0.5}``).
    alpha : float or None, default=1e-6
        Tikhonov parameter ε > 0 (``regularization`` is its deprecated former name). ``None``
        or ``0``: the unregularised estimator (kooplearn's convention), see *Unregularised
        estimator* above. With ``estimator='full'`` the eigenvalues come from the dual matrix
        (G + nεI)⁻¹k(Y, X), whose rounding grows like λ_max(G)/(nε) times the eigenvalues'
        condition. A kernel with a finite feature map of dimension below n (linear,
        polynomial: :meth:`~asymkern.kernels.Kernel.feature_rank`) is solved on the range of
        G, where the eigenvalues are those of the primal problem whatever ε. On a smooth
        kernel's numerically rank-deficient G an ε far below λ_max(G)/n loses digits or
        resolves no eigenfunction (an error naming ``alpha``); ``'pcr'``/``'rrr'`` and
        ``alpha=None`` solve on the range of G.
    lag : int, default=1
        τ in time steps for a trajectory ``fit(X)``.
    n_components : int, default=5
        Number of eigenpairs kept (``eigenvalues_``); clipped with a
        :class:`~asymkern.exceptions.ClippedParameterWarning` to what the estimator has.
    timestep : float, default=1.0
        Time per step (``timescales_`` are in these units).
    n_landmarks : int or None, default=None
        None (exact estimator) or m, the number of uniformly drawn landmarks (Nyström).
    landmarks : 'uniform' or array of int, default='uniform'
        How landmarks are chosen, or their indices into the pairs.
    random_state : int, RandomState or None, default=None
        Seed of the landmark draw.
    estimator : {'full', 'pcr', 'rrr'}, default='full'
        The regression estimator (see above).
    rank : int or None, default=None
        Rank r of the 'pcr'/'rrr' estimators; None uses ``n_components``. Clipped to the number
        of pairs (or landmark features). Ignored by 'full'.
    regularization : float, deprecated
        Former name of ``alpha``.
    device : None, str or torch.device, default=None
        Run ``fit`` / ``predict`` on the torch backend on this device (``'cpu'``,
        ``'cuda'``, …): the n×n Gram matrices k(X, X), k(Y, X) (and k(Y, Y) for 'rrr') are
        formed there in float64 (as the numpy path computes) and the estimator's n×n
        eigenproblem runs there (``'full'``: Cholesky solve, then the top eigenpairs of the
        auxiliary matrix (G + nεI)⁻¹k(Y, X) by ``torch.linalg.eig`` for n ≤ 150 and by the
        numpy path's ARPACK call above, its products on the device; ``'pcr'``/``'rrr'``:
        ``torch.linalg.eigh``, then
        the r×r matrix M on the host); numpy inputs give numpy outputs. ``None``: the numpy path
        for numpy input, the tensor's own device for torch tensors (``predict`` then returns
        tensors, dtype kept). With landmarks, the sums FᵀF, FᵀF⁺, FᵀY of the whitened landmark
        features are formed on the device and the p×p estimator is the numpy path's; the
        model then keeps the landmarks only (``operator_``, ``X_fit_`` None, as after a Dask
        fit). ``observables`` too (a callable gets the shifted samples as tensors on the
        device for tensor input). The kernels of
        ``asymkern._torch.kernels.SUPPORTED_KERNELS``; needs PyTorch
        (``pip install "asymkern[torch]"``). Eigenvalues and forecasts equal the numpy path's
        to rounding, and so do the eigenfunctions: each one's sign (complex phase) is fixed by
        its values at the samples (at the landmarks for the Nyström estimators), largest
        modulus real positive, the lowest index on a tie, which neither LAPACK's free signs,
        the whitening basis nor a singular Gram matrix change. Eigenfunctions of a repeated
        eigenvalue are a basis of its eigenspace that no sign rule makes unique.

    Attributes
    ----------
    operator_ : EmpiricalOperator or None
        S = Ψ B Φᵀ with B = U Vᵀ (``svd``/``eig`` work on it; None after a dask fit). After a
        torch fit: the numpy operator on the same samples (its methods run with numpy; the
        n×n factorisations are computed only when they are used).
    eigenvalues_ : ndarray of shape (``n_components_``,)
        Eigenvalues by decreasing modulus (complex if the dynamics rotate); a numpy array also
        after a fit on torch tensors.
    eigenfunctions_ : RKHSFunction
        Right eigenfunctions ψ_i (RKHS-normalised), evaluable at new points: ``eigenfunctions_(X)``
        (numpy, also after a torch fit).
    left_eigenfunctions_ : RKHSFunction or None
        Left eigenfunctions ξ_i (eigenfunctions of K̂*), biorthogonal to ψ_j in the RKHS,
        ⟨ξ_i, ψ_j⟩ = δ_ij (bilinear); 'pcr'/'rrr' only (None for 'full').
    timescales_ : ndarray
        Implied timescales −τ/ln|λ_i|.
    n_components_ : int
        Number of eigenpairs kept.
    rank_ : int or None
        Rank of the 'pcr'/'rrr' estimator (None for 'full').

    See Also
    --------
    PerronFrobeniusOperator : the adjoint (density propagation).
    ConditionalMeanEmbedding : the same regression for general outputs.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus, C. Schütte, "Singular value decomposition
       of operators on reproducing kernel Hilbert spaces", in Advances in Dynamics,
       Optimization and Computation, Springer, 2020, §4.4 (kernel transfer
       operators, Prop. 3.8 auxiliary eigenproblem).
    .. [2] V. Kostic, P. Novelli, A. Maurer, C. Ciliberto, L. Rosasco, M. Pontil, "Learning
       dynamical systems via Koopman operator regression in reproducing kernel Hilbert
       spaces", NeurIPS 2022 (PCR and RRR estimators, Thm. 3).
    .. [3] G. Meanti, A. Chatalic, V. Kostic, P. Novelli, M. Pontil, L. Rosasco, "Estimating
       Koopman operators with sketching to provably learn large scale dynamical systems",
       NeurIPS 2023 (Nyström PCR/RRR).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import KoopmanOperator
    >>> rng = np.random.RandomState(0)
    >>> x = np.zeros((400, 1))
    >>> for t in range(399):
    ...     x[t + 1] = 0.8 * x[t] + 0.3 * rng.randn()
    >>> est = KoopmanOperator(kernel="linear", estimator="rrr", rank=1, n_components=1).fit(x)
    >>> round(float(est.eigenvalues_[0]), 1)
    0.8
    >>> est.predict(x[:3], n_steps=2).shape
    (3, 1)
    """

    #: n×n arrays an exact fit holds at once (measured with tracemalloc at n = 600, 1000 and
    #: 2000, on the branch that costs most): 'full' G, k(Y, X), the factor of G + nεI and the
    #: auxiliary matrix, with the dense eigensolver's real and complex eigenvectors (n ≤ 150,
    #: or ARPACK not converging); 'pcr' G and k(Y, X) with a dense top-r eigh's copy of G;
    #: 'rrr' G, k(Y, X), k(Y, Y) and the four of the dense symmetric solve (n ≤ 200,
    #: alpha=None, or ARPACK not converging)
    _FIT_COPIES = {"full": 7, "pcr": 3, "rrr": 7}
    _FIT_ALTERNATIVES = ("landmarks (n_landmarks=...: the Nyström estimator forms no n×n "
                         "matrix), fewer time-lagged pairs")

    def __init__(self, kernel="rbf", kernel_params=None, alpha: float = 1e-6,
                 lag: int = 1, n_components: int = 5, timestep: float = 1.0, n_landmarks=None,
                 landmarks="uniform", random_state=None, estimator: str = "full", rank=None,
                 regularization=DEPRECATED, device=None):
        super().__init__(kernel=kernel, kernel_params=kernel_params,
                         alpha=alpha, lag=lag, n_components=n_components,
                         timestep=timestep, regularization=regularization)
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.random_state = random_state
        self.estimator = estimator
        self.rank = rank
        self.device = device

    # ---------------------------------------------------------------------------- parameters
    def _observable_data(self, observables, X0, X1, lag: int, y_given: bool):
        """The observable values g(y_i) at the shifted samples (n, p) float64, or None.

        Always a float64 copy, never a view of the caller's array (nor of what a callable
        returned): the fitted model keeps these values (``predict(..., observable=True)``,
        :meth:`modes`), and a caller that reuses its buffer after ``fit`` must not change it.
        The torch fit (:func:`asymkern._torch.transfer.observable_values`) moves this copy to
        the device, so it does not share memory with the caller's array either.
        """
        self._obs_1d = False
        if observables is None:
            return None
        if callable(observables):
            where = "observables(y)"
            # real numbers only: a complex return is refused, never cast (ComplexWarning)
            vals = np.array(check_finite_result(observables(X1), where), dtype=np.float64,
                            copy=True)
        else:
            vals = np.array(as_data(observables, "observables", ensure_2d=False),
                            dtype=np.float64, copy=True)
            where = "observables"
            if vals.ndim == 2 and vals.shape[1] == 0:
                raise ValueError(f"observables has 0 columns (shape {vals.shape}); expected at "
                                 "least one observable: an array of shape (n_rows,) or "
                                 "(n_rows, p) with p >= 1, or None")
            if not y_given and vals.ndim:  # one row per step of X: the values at x_{t+lag}
                if vals.shape[0] != X0.shape[0] + lag:
                    raise ValueError(f"observables has {vals.shape[0]} rows; expected one per "
                                     f"row of the trajectory X ({X0.shape[0] + lag})")
                vals = vals[lag:]
        if vals.ndim == 1:
            self._obs_1d = True
            vals = vals.reshape(-1, 1)
        if vals.ndim != 2 or vals.shape[0] != X1.shape[0] or vals.shape[1] == 0:
            raise ValueError(f"{where} has shape {vals.shape}; expected ({X1.shape[0]},) or "
                             f"({X1.shape[0]}, p) with p >= 1 observables (at least one "
                             "column): one row per shifted snapshot y_i")
        return check_finite_output(vals, where, "pass finite observable values")

    # ---------------------------------------------------------------------------- fits
    def _set_landmark_model(self, step, eps: float):
        """Landmark fit from the reduced matrices of the landmark ``step`` (a
        :class:`~asymkern._shared.operators.LandmarkStep`, of every executor).

        With whitened features (FᵀF = A, FᵀF⁺ = C, FᵀY = FY) the estimator is U Vᵀ
        (``'full'``: (A + nεI)⁻¹; ``'pcr'``/``'rrr'``: see :mod:`._koopman`); eigenvectors w of
        the Koopman matrix are RKHS-normalised by ‖w‖ = 1 (TᵀK_LLT = I) and give ξ = T w, its
        sign (phase) fixed by the rule on ξ's values at the landmarks, K_LL T w (T's own
        column signs, which ``eigh`` leaves free, do not matter).
        """
        kind = self._estimator_kind()
        T, A, C, FY, FG, n = step.T, step.A, step.C, step.FY, step.FG, step.n
        check_finite_output(A, "the landmark Gram matrix FᵀF", _RESCALE)
        check_finite_output(C, "the lagged landmark matrix FᵀF⁺", _RESCALE)
        self.landmark_points_ = np.asarray(step.L_host, dtype=np.float64)
        self._T, self._M = T, None
        p = A.shape[0]
        if kind == "full":
            M = landmark_inverse(A, n, eps)  # (A + nεI)⁻¹, or A⁺ for alpha=None
            self._M = M
            self._pred_coef = T @ (M @ FY)
            self.rank_ = None
            self._fc = {"kind": "landmark", "U": M, "M": C @ M, "state": FY, "obs": FG}
            res = _clipped_decomposition(
                self, lambda k: OperatorEig(*_landmark_eig(C, M, k, landmark_values(T))), p,
                "the rank of the landmark Gram matrix")
            fn = LandmarkFunction(self.kernel_, self.landmark_points_, T @ res.eigenfunctions)
            self.left_eigenfunctions_ = None
            return self._finish(OperatorEig(res.eigenvalues, fn, "auxiliary", dict(res.info)))
        r = self._rank(p, "the rank of the landmark Gram matrix")
        if kind == "pcr":
            U, V = pcr_primal(A, r, n * eps)
        else:
            U, V, _ = rrr_primal(A, C, r, n * eps)
        Mr = V.T @ C @ U
        self._pred_coef = T @ (U @ (V.T @ FY))
        self._fc = {"kind": "landmark", "U": U, "V": V, "M": Mr, "state": V.T @ FY,
                    "obs": None if FG is None else V.T @ FG}
        lam, Z, Zinv = reduced_eig(Mr)
        Z, Zinv = fix_phases(landmark_values(T) @ U, Z, Zinv)  # the rule on ψ_i(x̃_l)
        coef = U @ Z
        norms = np.sqrt(np.maximum(np.real(np.einsum("ij,ij->j", np.conj(coef), coef)), 1e-300))
        left = (C.T @ V) @ (Zinv.T / lam) * norms  # ξ_i coefficients in whitened features
        Lp = self.landmark_points_
        make = lambda c: LandmarkFunction(self.kernel_, Lp, T @ c)  # noqa: E731
        return self._finish_reduced(lam, coef / norms, Zinv, norms, left, r, make, make)

    def _finish_reduced(self, lam, coef, Zinv, norms, left, r, make, make_left):
        self.rank_ = int(r)
        k = _clip_components(self, lam.size,
                             f"the number of nonzero eigenvalues of the rank-{r} estimator")
        self._modes_map = (Zinv / lam[:, None]) * norms[:, None]  # modes = this @ Vᵀ d(g)
        self._modes_map = self._modes_map[:k]
        self.left_eigenfunctions_ = make_left(left[:, :k])
        fn = make(coef[:, :k])
        return self._finish(OperatorEig(lam[:k], fn, self.estimator, {"rank": int(r)}))

    @forgets_previous_fit
    def fit(self, X, y=None, *, observables=None, Y=None):
        """Fit the Koopman operator on a trajectory or on snapshot pairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            One trajectory (rows are time steps; pairs (x_t, x_{t+lag})) when ``y`` is None,
            else the snapshots x_i. Dask arrays are accepted with landmarks.
        y : array-like of shape (n_samples, n_features) or None, default=None
            The time-shifted snapshots y_i = Ξ^τ(x_i) (same shape as X; a DataFrame y has the
            columns of a DataFrame X, in their order).
        observables : array-like of shape (n_rows,) or (n_rows, p), callable or None
            Observables g to forecast with ``predict(..., observable=True)`` and to decompose
            with :meth:`modes`: their values at the rows of the trajectory X (``y=None``) or at
            the rows of ``y``, or a callable mapping samples (n, d) to values (n, p). The
            model keeps a copy of the values (changing the array after ``fit`` does not change
            the model).
        Y : array-like, deprecated
            Former keyword of ``y``.

        Returns
        -------
        self : KoopmanOperator
            The fitted estimator.
        """
        from .._dask import any_dask

        y = renamed_argument(y, Y, "y", "Y", where="KoopmanOperator.fit")
        kind, eps, lag = self._check_params()  # before the fit goes to an executor
        check_device(self, X, y)
        self.torch_fit_ = False
        self._torch_state = None
        if any_dask(X, y):
            if observables is not None:
                raise NotImplementedError("observables are not supported with dask inputs; fit "
                                          "on numpy arrays or forecast the state "
                                          "(observable=False)")
            from .._dask.operators import fit_koopman_dask

            fit = fit_koopman_dask(self, X, y)
            self.kernel_ = fit.kernel
            self.n_features_in_ = fit.n_features
            self._sparse_ok = False
            return self._landmarks_only(fit.step, eps)
        if use_torch(self, X, y):  # torch executor (asymkern._torch)
            return self._fit_torch(X, y, kind, eps, lag, observables)
        self.kernel_ = as_rkhs_kernel(self.kernel, self.kernel_params)
        idx_probe = self.n_landmarks is not None or not isinstance(self.landmarks, str)
        X0, X1 = _snapshot_pairs(self, X, y, lag, None if idx_probe else self.kernel_)
        n = X0.shape[0]
        self.X_fit_, self.Y_fit_ = X0, X1
        obs = self._observable_data(observables, X0, X1, lag, y is not None)
        step = landmark_step(self, self.kernel_, X0, X1=X1, Y=X1, obs=obs)  # None: exact
        self.landmarks_ = None if step is None else step.idx
        if step is not None:
            T, idx = step.T, step.idx
            self.operator_ = None
            self._set_landmark_model(step, eps)
            F = landmark_evaluate(self.kernel_, step.L, T, X0)
            if kind == "full":
                rep = _LandmarkRepresentation(F, self._M, T, idx, "out")
            else:  # B = P T U Vᵀ Fᵀ (P scatters the landmark rows)
                Ub = np.zeros((n, self._fc["U"].shape[1]))
                Ub[idx] = T @ self._fc["U"]
                rep = _LowRank(Ub, F @ self._fc["V"])
            self.operator_ = EmpiricalOperator(self.kernel_, X1, self.kernel_, X0, rep)
            return self
        # the whole exact fit, before its first Gram matrix
        self._check_fit_memory(kind, n, (X0, X1, obs))
        G = gram(self.kernel_, X0, what="the Gram matrix G_X of the samples x_t")
        X1d = X1.toarray() if sp.issparse(X1) else X1
        self._fit_grams(kind, eps, G, self._pair_grams(X0, X1), X1d, obs, host=True)
        return self

    def _fit_torch(self, X, y, kind: str, eps: float, lag: int, observables):
        """The fit on the torch executor: the pairs, the observables and the Gram matrices on
        the device (:mod:`asymkern._torch.transfer`), then :meth:`_fit_grams`, the code of the
        numpy fit; ``_torch_state`` keeps what ``predict`` needs on the device."""
        from .._torch.transfer import observable_values, transfer_samples_torch

        kernel = as_rkhs_kernel(self.kernel, self.kernel_params)
        nystrom = self.n_landmarks is not None or not isinstance(self.landmarks, str)
        if nystrom:
            d = transfer_samples_torch(self, X, y, lag)
        else:
            _check_landmark_options(self, n_rows(X))  # the exact estimators: validates the options
            d = _device_samples(self, X, y, kernel, lag, kind)  # budget checked before G_X
        self.kernel_, self._sparse_ok, self.torch_fit_ = kernel, False, True
        obs = observable_values(self, observables, d.X0, d.X1, lag, y is not None, d.as_numpy)
        if nystrom:  # as after a Dask fit: the landmarks and small matrices only
            step = landmark_step(self, kernel, d.X0, X1=d.X1, Y=d.X1, obs=obs)
            assert step is not None  # landmarks were asked for
            self._torch_state = DeviceState(device=d.X0.device, dtype=d.dtype, kernel=kernel,
                                            X=step.L)
            return self._landmarks_only(step, eps)
        self.X_fit_, self.Y_fit_ = d.X0n, d.X1n
        self.landmarks_ = None
        state = self._fit_grams(kind, eps, d.G, self._pair_grams(d.X0, d.X1), d.X1, obs,
                                host=False)
        self._torch_state = DeviceState(device=d.X0.device, dtype=d.dtype, kernel=kernel,
                                        X=d.X0, forecast=state)
        return self

    def _fit_grams(self, kind: str, eps: float, G, gram, Y, obs, host: bool) -> DeviceForecast:
        """The exact fit from G_X, ``gram(which)`` (the other Gram matrices, see
        :meth:`_pair_grams`), the shifted samples Y and the observables' values on one executor
        (numpy, or tensors on their device); ``host``: numpy arrays, whose Gram matrices the
        fitted ``operator_`` keeps (else its factors are recomputed on first use).

        Returns the executor arrays the forecasts iterate ('full': the solver, k(Y, X), Y,
        (G + nεI)⁻¹Y and the observables; 'pcr'/'rrr': U, M, VᵀY, U VᵀY and Vᵀg(Y)).
        """
        ops = ops_of(G)
        n = int(G.shape[0])
        shift = n * eps
        X0, X1 = self.X_fit_, self.Y_fit_
        Cyx = gram("cross")
        if kind == "full":
            # alpha=None: the pseudo-inverse G_X⁺; a kernel of finite rank below n: the
            # shifted inverse on the range of G_X (its null space holds only rounding)
            solver = GramSolver(G, shift, "G_X", restrict=self._finite_rank_below(n))
            coef = checked(ops, solver.solve(Y), "the coefficients (G_X + nεI)⁻¹Y", _RESCALE)
            B = gram_inverse(G, solver, "G_X", (self.kernel_, X0), lazy=not host)
            # S = Ψ' B Φ'ᵀ with Ψ' = features of x_t (output side), Φ' = features of x_{t+τ}
            self.operator_ = EmpiricalOperator(self.kernel_, X1, self.kernel_, X0, B)
            self._pred_coef = ops.to_host(coef)
            self.rank_ = None
            self.left_eigenfunctions_ = None
            self._fc = {"kind": "exact", "U": None, "M": None, "state": ops.to_host(Y),
                        "obs": None if obs is None else ops.to_host(obs)}
            self._finish_full(G, solver.solve(Cyx), X0, n)
            state = DeviceForecast(coef=coef, state=Y, obs=obs, solver=solver, cross=Cyx)
        else:
            r = self._rank(n, "the number of time-lagged pairs")
            U, V, _ = _reduced_factors(kind, G, lambda: gram("out"), r, shift)
            res = reduced_koopman(U, V, G, Cyx, Y, obs)
            self._set_reduced_exact(res, U, V, X0, X1)
            state = DeviceForecast(coef=res.coef, state=res.VtY, obs=res.obs, U=U, M=res.M)
        if host:
            self.operator_._cache.update(out=G, cross=Cyx)
        return state

    def _set_reduced_exact(self, res, U, V, X0, X1):
        """The fitted attributes of an exact 'pcr'/'rrr' fit from :func:`reduced_koopman`'s
        result (U, V: the factors on their executor; X0, X1: the host samples)."""
        ops = ops_of(U)
        Un, Vn = ops.to_host(U), ops.to_host(V)
        self.operator_ = EmpiricalOperator(self.kernel_, X1, self.kernel_, X0, _LowRank(Un, Vn))
        self._pred_coef = ops.to_host(res.coef)
        self._fc = {"kind": "exact", "U": Un, "M": ops.to_host(res.M),
                    "state": ops.to_host(res.VtY),
                    "obs": None if res.obs is None else ops.to_host(res.obs)}
        Z, Zinv = fix_phases(res.values, res.Z, res.Zinv)  # the rule on ψ_i(x_j)
        left = Vn @ (Zinv.T / res.lam) * res.norms
        kern = self.kernel_
        return self._finish_reduced(res.lam, (Un @ Z) / res.norms, Zinv, res.norms,
                                    left, U.shape[1], lambda c: RKHSFunction(kern, X0, c),
                                    lambda c: RKHSFunction(kern, X1, c))

    # ---------------------------------------------------------------------------- forecasts
    def _propagate(self, c, n_steps: int) -> np.ndarray:
        """Basis coefficients of K̂ⁿ g from the data coefficients c = Vᵀ d(g) (host model)."""
        fc = self._fc
        return forecast_coef(c, n_steps, fc["U"], fc["M"],
                             lambda V: self.operator_.B._apply(V),
                             lambda: self.operator_._gram("cross"))

    @staticmethod
    def _device_coef(fc: DeviceForecast, n_steps: int, observable: bool):
        """The forecast coefficients from the executor arrays of a torch fit (``_fit_grams``'s
        :class:`DeviceForecast`), on their device: the propagation of the host model."""
        c = fc.obs if observable else fc.state
        if n_steps == 1 and not observable:
            return fc.coef
        if fc.solver is not None:  # 'full'
            return forecast_coef(c, n_steps, None, None, fc.solver.solve, lambda: fc.cross)
        return forecast_coef(c, n_steps, fc.U, fc.M, None, None)

    def _forecast_data(self, observable: bool):
        """The data coefficients forecasts propagate: the state's, or the observables'."""
        fc = getattr(self, "_fc", None)
        c = None if fc is None else fc["obs" if observable else "state"]
        if observable and c is None:
            raise ValueError("observable=True needs observables: pass fit(X, y, "
                             "observables=...) first")
        return c

    def predict(self, X, n_steps: int = 1, observable: bool = False) -> np.ndarray:
        """Forecast the state (or the observables) ``n_steps`` lags ahead.

        Iterates the learned operator: E[g(x_{t+kτ}) | x_t = x] ≈ (K̂ᵏ g)(x)
        = k(x, X) U Mᵏ⁻¹ Vᵀ g(Y) with g the identity (the state) or the observables passed to
        ``fit``. ``n_steps=1`` is the one-step regression E[x_{t+τ} | x_t = x].

        Parameters
        ----------
        X : array-like of shape (n_points, n_features)
            Initial states (a dask array with landmark models: a dask array out).
        n_steps : int, default=1
            Number of lags k ≥ 1 to forecast.
        observable : bool, default=False
            Forecast the observables given to ``fit`` instead of the state.

        Returns
        -------
        ndarray of shape (n_points, n_features) or (n_points, p)
            The forecasts (float32 for float32 X).

        Raises
        ------
        ValueError
            If ``n_steps`` is not a positive integer, or ``observable=True`` without
            observables in ``fit``.
        """
        check_is_fitted(self, "operator_")
        k = _check_int(n_steps, "n_steps")
        c = self._forecast_data(observable)
        if use_torch(self, X) and getattr(self, "landmarks_", None) is None:  # torch executor
            from .._torch.operators import device_points

            state, Xn, back = device_points(self, X)
            coef = self._device_coef(state.forecast, k, observable)  # on the fit's device
            out = back(evaluate(self.kernel_, Xn, state.X, coef))
        else:
            coef = self._pred_coef if c is None or (k == 1 and not observable) else \
                self._propagate(c, k)
            if getattr(self, "landmarks_", None) is not None:
                if k > 1 or observable:
                    coef = self._T @ coef
                out = _landmark_predict(self, X, self.kernel_, self.landmark_points_, coef)
            else:
                out = _predict_exact(self, X, self.kernel_, self.X_fit_, coef)
        if observable and getattr(self, "_obs_1d", False):
            return out[:, 0]
        return out

    def modes(self, observable: bool = False) -> np.ndarray:
        """Koopman modes m_i of the state (or of the observables): K̂ᵏ g ≈ Σ_i λ_iᵏ ψ_i m_i.

        With ψ_i = ``eigenfunctions_`` and λ_i = ``eigenvalues_``, the forecast
        ``predict(X, k, observable)`` equals Σ_i λ_iᵏ ψ_i(x) m_i exactly when every eigenpair of
        the rank-r estimator is kept (``n_components ≥ rank``); otherwise the sum is its
        truncation to the leading ``n_components_`` eigenpairs.

        Parameters
        ----------
        observable : bool, default=False
            Modes of the observables given to ``fit`` instead of the state.

        Returns
        -------
        ndarray of shape (``n_components_``, n_features) or (``n_components_``, p)
            The modes (complex when the eigenvalues are).

        Raises
        ------
        ValueError
            For ``estimator='full'`` (use 'pcr' or 'rrr') or without observables in ``fit``.
        """
        check_is_fitted(self, "operator_")
        if getattr(self, "rank_", None) is None:
            raise ValueError("modes need a reduced-rank estimator: use estimator='pcr' or "
                             "'rrr' (with rank=...); estimator='full' keeps no left eigenvectors")
        return self._modes_map @ self._forecast_data(observable)

    def score(self, X, y=None, sample_weight=None, n_steps: int = 1, multioutput=None):
        """R² of the one-step prediction of the snapshots y from X (for model selection).

        :func:`sklearn.metrics.r2_score` of ŷ = ``predict(X)`` against y, combined over the
        state's features as ``multioutput`` says: a scikit-learn regressor's ``score``, so
        ``GridSearchCV``/``cross_val_score`` select ``alpha``, the kernel parameters,
        ``estimator`` and ``rank`` by held-out one-step prediction (the one-step prediction
        risk of Kostic et al. 2022 measured on the state). For a one-feature state every
        choice gives the same number (``'raw_values'``: as an array of one).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A trajectory (``y=None``; pairs (x_t, x_{t+lag}) as in ``fit``) or the snapshots.
        y : array-like of shape (n_samples, n_features) or None, default=None
            The time-shifted snapshots (a DataFrame y: the columns of ``fit``'s X, in order).
        sample_weight : array-like of shape (n_pairs,) or None, default=None
            Weights of the pairs.
        n_steps : int, default=1
            Score the ``n_steps``-lag forecast ``predict(x_t, n_steps)`` against
            x_{t + n_steps·lag} instead (trajectory input, ``y=None``, only), as kooplearn's
            ``score(n_steps=...)``.
        multioutput : str, array-like of shape (n_features,) or None, default=None
            ``'raw_values'``, ``'uniform_average'``, ``'variance_weighted'``, weights or None:
            how the per-feature R² are combined, as in :func:`sklearn.metrics.r2_score`:
            ``'uniform_average'`` their mean (scikit-learn's ``RegressorMixin.score`` and
            kooplearn's convention), ``'variance_weighted'`` weighted by the variance of each
            feature of y, i.e. 1 − Σ‖y_i − ŷ_i‖² / Σ‖y_i − ȳ‖² pooled over the features,
            ``'raw_values'`` one R² per feature, an array its weighted mean. ``None``:
            ``'variance_weighted'`` (the behaviour so far), with a ``FutureWarning`` when the
            state has several features: the default becomes ``'uniform_average'`` in 0.3.

        Returns
        -------
        float or ndarray of shape (n_features,)
            The R² score (1 is a perfect forecast); one per feature for
            ``multioutput='raw_values'``.

        Raises
        ------
        ValueError
            If ``n_steps > 1`` with snapshot pairs ``y``, the trajectory is too short,
            ``sample_weight`` is not one finite, non-negative real weight per pair (not all
            zero), or ``multioutput`` is not one of the values above.
        """
        from .._dispatch import host_copy

        check_is_fitted(self, "operator_")
        lag = _check_int(self.lag, "lag")
        # scored on the host (predict runs on the fit's device)
        X, y = host_copy(X, "X"), host_copy(y, "y")
        sample_weight = host_copy(sample_weight, "sample_weight")
        X_in = X
        sparse_ok = getattr(self, "_sparse_ok", False)
        X = check_input(self, X, reset=False, allow_sparse=sparse_ok, min_samples=2)
        k = _check_int(n_steps, "n_steps")
        if y is None:
            shift = lag * k
            if shift >= X.shape[0] - 1:
                raise ValueError(f"lag·n_steps={shift} must be smaller than the trajectory "
                                 f"length {X.shape[0]} minus one (at least two pairs)")
            X0, Y = X[:-shift], X[shift:]
        elif k > 1:
            raise ValueError(f"n_steps={k} > 1 needs a trajectory (y=None): snapshot pairs y "
                             "give one-step targets only")
        else:
            X0 = X
            _check_snapshot_names(self, y)  # y's columns pair with X's by position
            Y = as_data(y, "y", ensure_2d=False, allow_sparse=sparse_ok)
            if not sp.issparse(Y) and Y.ndim == 1 and X.shape[1] == 1:
                Y = Y.reshape(-1, 1)
            if Y.shape != X.shape:
                raise ValueError(f"y has shape {Y.shape}; expected the time-shifted snapshots "
                                 f"with the shape of X {X.shape}")
        Y = Y.toarray() if sp.issparse(Y) else np.asarray(Y)
        # fit's weight validation: real, finite, >= 0 (a negative weight can push R² above 1)
        sw = as_weights(sample_weight, Y.shape[0], "sample_weight", "time-lagged pair")
        X0 = X0 if not hasattr(X_in, "columns") else X_in.iloc[: X0.shape[0]]
        pred = self.predict(X0, n_steps=k)
        return r2_multioutput(Y, pred, sw, multioutput, type(self).__name__)


__all__ = ["KoopmanOperator"]
