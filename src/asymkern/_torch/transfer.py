"""Kernel transfer operators on torch: the exact Koopman and Perron–Frobenius estimators with
their n×n Gram matrices and eigenproblems on the device (private).

:class:`~asymkern.operators.KoopmanOperator` hands ``fit`` / ``predict`` here for torch tensors
or a set ``device``, :class:`~asymkern.operators.PerronFrobeniusOperator` its ``fit`` (see
:func:`fit_perron_frobenius_torch`). The Koopman estimators are those of the numpy path (paper
002 §4.4; Kostic et al. 2022, §3, dual form), (K̂ f)(x) = k(x, X) U Vᵀ f(Y) with the pairs
(x_i, y_i), G = k(X, X), C = k(Y, X) and H = k(Y, Y), all formed on the device in float64 (as
the numpy path computes):

* ``'full'`` (kernel ridge regression, U Vᵀ = (G + nεI)⁻¹): the eigenpairs of K̂ are those of the
  auxiliary matrix A = (G + nεI)⁻¹ C (Prop. 3.8; ``torch.linalg.cholesky`` + ``cholesky_solve``,
  then, as on the numpy path, the dense eigenproblem for n ≤ 150 — ``torch.linalg.eig`` — and
  above it ARPACK, the numpy path's call with the same starting vector, on the host with its
  products A·v on the device), sorted by decreasing ``|λ|``; the eigenfunctions are
  ψ = k(·, X) w, RKHS-normalised (wᴴ G w = 1), with the post-processing of the numpy path's
  ``EmpiricalOperator.eig(method='auxiliary')`` (:func:`asymkern.linalg.eig_auxiliary`): real
  eigenpairs when every ``|Im λ|`` ≤ 1e-8·``|λ₁|``, eigenvalues ≤ 1e-12·``|λ₁|`` treated as
  zero, eigenfunctions of numerically zero norm dropped with a warning, repeated eigenvalues'
  eigenfunctions orthonormalised, the complex phase fixed (largest coefficient real positive).
  These steps need only the k×k Gram matrix Wᴴ G W of the k kept eigenvectors, computed on the
  device. Forecasts use the coefficients (G + nεI)⁻¹ Y and iterate a ← (G + nεI)⁻¹ C a.
* ``'pcr'`` / ``'rrr'``: the estimators' own algorithms (:func:`asymkern.operators._koopman.
  pcr_dual` / ``rrr_dual``, written once against the executor primitives and handed down by
  the estimator) run on the device tensors: ``torch.linalg.eigh`` for n ≤ 200, ARPACK with
  its products on the device above, as for numpy arrays; the small r×r matrix M = Vᵀ C U
  goes to numpy, where :func:`~asymkern.operators._koopman.reduced_eig` and the estimator's
  ``_finish_reduced`` do the bookkeeping (left eigenfunctions, modes).

So every estimator runs the numpy path's eigensolver at every n, and the two paths agree to
rounding even where ``n_components`` cuts a complex-conjugate pair (a dense solver and ARPACK
may keep different members of the pair).

Nothing of size n×n goes to the host: the fitted ``operator_`` is the numpy
:class:`~asymkern.operators.EmpiricalOperator` on the same samples, whose B is lazy for
``'full'`` (its Cholesky factor is computed on first use) and the n×r factors for 'pcr'/'rrr'.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._dispatch import any_torch, is_torch_tensor, require_torch
from .._validation import check_finite_result
from .device import as_tensor, resolve_device, to_numpy
from .kernels import TorchKernel, TorchKernelMatrix
from .operators import gram

#: machine epsilon of float64
_EPS = float(np.finfo(np.float64).eps)
_RESCALE = "rescale X (e.g. StandardScaler) or change the kernel parameters"


# ------------------------------------------------------------------------------ inputs
def snapshot_pairs_torch(est, X, y, lag: int, device):
    """The time-lagged pairs (x_i, y_i) on the device, with the numpy path's validation.

    Parameters
    ----------
    est : KoopmanOperator or PerronFrobeniusOperator
        The estimator (``n_features_in_`` is recorded).
    X : tensor or array-like of shape (n, d)
        One trajectory (``y`` None) or the snapshots x_i.
    y : tensor, array-like or None
        The time-shifted snapshots y_i, X's shape (1-D only when d = 1).
    lag : int
        τ in steps for a trajectory.
    device : None, str or torch.device
        The estimator's ``device``.

    Returns
    -------
    X0, X1 : tensors (float64, on the device, never the caller's memory)
    dtype : torch.dtype
        X's dtype (float32 or float64).
    as_numpy : bool
        Whether every input was numpy (outputs are then numpy).

    Raises
    ------
    ValueError
        For a trajectory shorter than lag + 2, or a y whose shape is not X's (naming y).
    """
    from .._validation import as_data, check_input

    torch = require_torch()
    dev = resolve_device(device, X, y)
    as_numpy = not any_torch(X, y)
    owner = type(est).__name__
    if not is_torch_tensor(X):
        X = check_input(est, X, reset=True, min_samples=2)
    Xt = as_tensor(X, dev, "X")
    if is_torch_tensor(X):
        if Xt.shape[0] < 2:
            raise ValueError(f"X has {Xt.shape[0]} sample(s); {owner} needs at least 2")
        est.n_features_in_ = int(Xt.shape[1])
    dtype = Xt.dtype
    X64 = Xt.to(torch.float64)
    n, d = int(X64.shape[0]), int(X64.shape[1])
    if y is None:
        if lag >= n - 1:
            raise ValueError(f"lag={lag} must be smaller than the trajectory length "
                             f"{n} minus one (at least two time-lagged pairs)")
        return X64[:-lag].clone(), X64[lag:].clone(), dtype, as_numpy
    expected = (f"expected the time-shifted snapshots y_i = Ξ^τ(x_i) with the shape of X "
                f"{(n, d)} (or y=None when X is one trajectory)")
    Y = y if is_torch_tensor(y) else as_data(y, "y", ensure_2d=False)
    if Y.ndim == 1 and d == 1:
        Y = Y.reshape(-1, 1)
    if Y.ndim != 2:
        raise ValueError(f"y has shape {tuple(Y.shape)}; {expected}")
    Yt = as_tensor(Y, dev, "y")
    if tuple(Yt.shape) != (n, d):
        raise ValueError(f"y has shape {tuple(Yt.shape)}; {expected}")
    return X64.clone(), Yt.to(torch.float64).clone(), dtype, as_numpy


# ------------------------------------------------------------------------------ full
#: above this many pairs the exact 'full' estimators take their top eigenpairs from ARPACK, as
#: the numpy estimators do (``KoopmanOperator`` / ``PerronFrobeniusOperator``: n > 150)
ARPACK_MIN_PAIRS = 150


def _arpack_top(A, k: int):
    """Top-k eigenpairs (largest ``|λ|``) of the n×n device matrix A by the numpy path's ARPACK
    call (:func:`asymkern.linalg.operator_svd._eig_top`: the same v0, ncv and tolerance), with
    the products A·v on the device; only vectors cross to the host. Returns (λ, W) (numpy),
    or None when the dense solver should run instead (k ≥ n − 1, as ``_eig_top`` decides)."""
    from scipy.sparse.linalg import LinearOperator

    from ..linalg.operator_svd import _eig_top

    torch = require_torch()
    n = int(A.shape[0])
    if k >= n - 1:
        return None

    def matvec(v):
        x = torch.as_tensor(np.ascontiguousarray(v, dtype=np.float64).reshape(n, -1),
                            device=A.device)
        return to_numpy(A @ x).reshape(v.shape)

    op = LinearOperator((n, n), matvec=matvec, matmat=matvec, dtype=np.float64)
    lam, W, _ = _eig_top(op, n, k, "LM", "arpack")
    return lam, W


def _auxiliary_eig(G, A, k: int, owner: str):
    """Top-k eigenpairs of the auxiliary matrix A = B C with eigenfunctions k(·, X) w on the
    samples of G, post-processed exactly as :func:`asymkern.linalg.eig_auxiliary` does.

    For n ≤ :data:`ARPACK_MIN_PAIRS` the dense eigenproblem runs on the device
    (``torch.linalg.eig``); above it ARPACK runs on the host with its products A·v on the device
    (:func:`_arpack_top`), the numpy estimators' choice, falling back to the dense solver when
    ARPACK does not converge, as they do. The k×k Gram matrix Wᴴ G W of the kept eigenvectors
    (computed on the device) is all the normalisation, cluster orthonormalisation and zero-norm
    test need. Returns the eigenvalues, the n×k coefficients (numpy) and the solver that ran
    ('arpack' or 'dense').
    """
    from scipy.sparse.linalg import ArpackNoConvergence

    from .._validation import clip_count
    from ..linalg.operator_svd import _real_if_close

    torch = require_torch()
    n = int(G.shape[0])
    found_by: dict = {}  # the dense eigen-decomposition (computed at most once) and the solver

    def top(m):
        if m <= k and "lam" not in found_by and n > ARPACK_MIN_PAIRS:
            try:
                found = _arpack_top(A, m)
            except ArpackNoConvergence:  # rare (clustered spectra): the dense reference
                found = None
            if found is not None:
                found_by["solver"] = "arpack"
                lam, W = found
                return _real_if_close(lam, W, max(abs(lam[0]), 1e-300))
        if "lam" not in found_by:
            lam_t, W_t = torch.linalg.eig(A)
            order = torch.argsort(-lam_t.abs(), stable=True)
            found_by.update(lam=to_numpy(lam_t[order]), W=W_t[:, order], solver="dense")
        lam, W = found_by["lam"][:m], to_numpy(found_by["W"][:, :m])
        if not np.any(lam.imag):
            lam, W = lam.real.copy(), W.real.copy()
        return _real_if_close(lam, W, max(abs(lam[0]), 1e-300))

    lam, W = top(k)
    scale = max(abs(lam[0]), 1e-300)
    small = np.flatnonzero(np.abs(lam) <= 1e-12 * scale)
    if abs(lam[0]) == 0 or small.size:  # the numpy path retries with every nonzero eigenpair
        lam, W = top(n)
        scale = max(abs(lam[0]), 1e-300)
        small = np.flatnonzero(np.abs(lam) <= 1e-12 * scale)
        if small.size and small[0] > 0:
            lam, W = lam[: small[0]], W[:, : small[0]]
        else:
            r = int(small[0]) if small.size else 0
            raise ValueError(f"n_components={n} exceeds the number {r} of numerically nonzero "
                             "eigenvalues of the operator; ask for fewer components")
        clip_count(k, lam.size, "n_components", "the numerical rank of the operator",
                   owner=owner)
    Wd = torch.as_tensor(W, device=G.device)
    Gc = G.to(Wd.dtype) if Wd.is_complex() else G
    S = to_numpy(Wd.conj().T @ (Gc @ Wd))  # Wᴴ G W (k×k)
    norms2 = np.real(np.diag(S))
    scale2 = np.real(np.einsum("ij,ij->j", np.conj(W), W)) * max(
        float(G.diagonal().max()), 1e-300)
    zero = ~(norms2 > 10.0 * n * _EPS * scale2)
    if np.all(zero):
        raise ValueError("every computed eigenfunction has a numerically zero RKHS norm (wᴴ G w "
                         "at rounding level): the operator is numerically zero or its "
                         "representation B is too ill-conditioned to resolve eigenfunctions")
    if np.any(zero):
        warnings.warn(
            f"{int(zero.sum())} of {lam.size} computed eigenfunctions have a numerically zero "
            f"RKHS norm (spurious eigenpairs of an ill-conditioned representation) and were "
            f"dropped; returning {int((~zero).sum())} eigenpairs", RuntimeWarning, stacklevel=4)
        lam, W, S = lam[~zero], W[:, ~zero], S[np.ix_(~zero, ~zero)]
    T = _normalise_transform(lam, S)
    C = W @ T
    if np.iscomplexobj(C):  # phase: largest-modulus coefficient real positive
        idx = np.argmax(np.abs(C), axis=0)
        ph = C[idx, np.arange(C.shape[1])]
        C = C * (np.abs(ph) / ph)
    return lam, C, found_by["solver"]


def _normalise_transform(lam, S):
    """The k×k T with W T = the coefficients :func:`~asymkern.linalg.operator_svd.eig_auxiliary`
    returns: ``rkhs_normalize``, then (real eigenpairs) ``orthonormalize_clusters`` with
    rtol 1e-9 and no merging, all through S = Wᴴ G W."""
    import scipy.linalg as sla

    from ..linalg.operator_svd import clusters

    def normalise(T):
        n2 = np.real(np.einsum("ij,ij->j", np.conj(T), S @ T))
        nr = np.sqrt(np.maximum(n2, 0.0))
        if np.any(nr <= 0):
            raise ValueError("a computed singular/eigen-function has zero RKHS norm")
        return T / nr

    T = normalise(np.eye(S.shape[0], dtype=S.dtype if np.iscomplexobj(lam) else np.float64))
    if np.iscomplexobj(lam):
        return T
    S = np.real(S)
    for g in clusters(lam, 1e-9):
        if g.size < 2:
            continue
        Gram = T[:, g].T @ S @ T[:, g]
        Gram = 0.5 * (Gram + Gram.T)
        try:
            L = np.linalg.cholesky(Gram)
        except np.linalg.LinAlgError:  # numerically dependent: the numpy path's eigh fallback
            mu, V = np.linalg.eigh(Gram)
            mu = np.maximum(mu, _EPS * mu.max())
            T[:, g] = T[:, g] @ (V / np.sqrt(mu))
            continue
        T[:, g] = sla.solve_triangular(L, T[:, g].T, lower=True).T
    return normalise(T)


# ------------------------------------------------------------------------------ Koopman
def observable_values(est, observables, X0, X1, lag: int, y_given: bool, as_numpy: bool):
    """The observable values g(y_i) at the shifted samples, validated by the numpy path's
    ``KoopmanOperator._observable_data``: a float64 (n, p) tensor on the device, or None.

    A callable is called with the shifted samples in the type of the input (torch tensors on
    the device for tensor input, numpy arrays otherwise), so a torch function runs on the
    device; values given as a tensor are copied to the host for the checks.
    """
    torch = require_torch()
    if observables is None:
        est._obs_1d = False
        return None
    if callable(observables):
        vals = observables(to_numpy(X1) if as_numpy else X1)
        vals = to_numpy(vals) if is_torch_tensor(vals) else np.asarray(vals)
        vals = check_finite_result(vals, "observables(y)")  # real: complex is refused
        if vals.shape[:1] != (X1.shape[0],) or (vals.ndim == 2 and vals.shape[1] == 0):
            raise ValueError(f"observables(y) has shape {vals.shape}; expected "
                             f"({X1.shape[0]},) or ({X1.shape[0]}, p) with p >= 1 observables "
                             "(at least one column): one row per shifted snapshot y_i")
        obs, y_given = vals, True
    else:
        obs = to_numpy(observables) if is_torch_tensor(observables) else observables
    vals = est._observable_data(obs, X0, X1, lag, y_given)
    return torch.as_tensor(vals, dtype=torch.float64, device=X1.device)


def fit_koopman_torch(est, X, y, kernel, observables=None):
    """``KoopmanOperator.fit`` on the torch backend (exact estimators, paper 002 §4.4).

    Parameters
    ----------
    est : KoopmanOperator
        The estimator (``estimator``, ``alpha``, ``lag``, ``n_components``, ``rank``,
        ``device``); fitted in place.
    X : tensor or array-like of shape (n, d)
        One trajectory (``y`` None) or the snapshots x_i.
    y : tensor, array-like or None
        The time-shifted snapshots.
    kernel : Kernel
        The resolved kernel.
    observables : tensor, array-like, callable or None, default=None
        As in ``KoopmanOperator.fit`` (:func:`observable_values`).

    Returns
    -------
    KoopmanOperator
        ``est``, with the numpy path's fitted attributes (numpy ``eigenvalues_``,
        ``eigenfunctions_``, ``X_fit_``…), ``operator_`` (no n×n work on the host) and the device
        state ``_torch_state`` that ``predict`` uses.

    With landmarks (``n_landmarks`` / a ``landmarks`` index array) the Nyström estimators run
    instead (:func:`_fit_koopman_landmarks`).
    """
    from .._shared.operators import _check_int, _check_landmark_options
    from .._validation import clip_count

    parts = est._numpy_parts()  # the estimators' numpy classes, handed down (no upward import)
    EmpiricalOperator, OperatorEig, RKHSFunction = (
        parts.EmpiricalOperator, parts.OperatorEig, parts.RKHSFunction)
    CholeskyInverse = parts.CholeskyInverse

    torch = require_torch()
    owner = type(est).__name__
    if est.n_landmarks is not None or not isinstance(est.landmarks, str):
        return _fit_koopman_landmarks(est, X, y, kernel, observables)
    _check_landmark_options(est, len(X))  # the exact estimators: validates the options
    kind, eps, X0, X1, dtype, tk, G = _fit_start(est, X, y, kernel)
    n = int(X0.shape[0])
    shift = n * eps
    lag = _check_int(est.lag, "lag")
    obs = observable_values(est, observables, X0, X1, lag, y is not None,
                            not any_torch(X, y))
    Cyx = gram(tk, X1, X0, "the time-lagged Gram matrix [k(y_i, x_j)]")
    X0n, X1n = est.X_fit_, est.Y_fit_
    est.landmarks_ = None
    state = {"device": X0.device, "dtype": dtype, "kernel": tk, "X": X0, "kind": kind,
             "obs": obs}
    if kind == "full":
        L = parts.cholesky_shifted(G, shift, "G_X")
        A = torch.cholesky_solve(Cyx, L)  # (G + nεI)⁻¹ C
        coef = torch.cholesky_solve(X1, L)
        if not bool(torch.isfinite(coef).all()):
            raise ValueError(f"the coefficients (G_X + nεI)⁻¹Y have non-finite entries; "
                             f"{_RESCALE}")
        state.update(L=L, Cyx=Cyx, Y=X1, coef=coef)
        B = CholeskyInverse.lazy((n, n), (kernel, X0n), shift=shift, name="G_X")
        est.operator_ = EmpiricalOperator(kernel, X1n, kernel, X0n, B)
        est.rank_ = None
        est.left_eigenfunctions_ = None
        est._pred_coef = to_numpy(coef)
        est._fc = {"kind": "exact", "U": None, "M": None, "state": X1n,
                   "obs": None if obs is None else to_numpy(obs)}
        est._torch_state = state
        k = _check_int(est.n_components, "n_components")
        k = clip_count(k, n, "n_components", "the number of time-lagged pairs", owner=owner)
        lam, C, used = _auxiliary_eig(G, A, k, owner)
        fn = RKHSFunction(kernel, X0n, C)
        return est._finish(OperatorEig(lam, fn, "auxiliary", {"solver": used}))
    U, V, _ = _reduced_factors(est, kind, tk, G, X1, n, shift)
    res = parts.reduced_koopman(U, V, G, Cyx, X1, obs)
    state.update(U=U, M=res.M, state=res.VtY, coef=res.coef, obs=res.obs)
    est._torch_state = state
    return est._set_reduced_exact(res, U, V, X0n, X1n)


def _fit_koopman_landmarks(est, X, y, kernel, observables=None):
    """The Nyström Koopman estimators (Meanti et al. 2023) with their n-sums on the device.

    The whitened landmark features F = k(X, L) T and F⁺ = k(Y, L) T enter only through the
    sums FᵀF, FᵀF⁺ and FᵀY (:func:`.operators.landmark_stats_torch`), formed block by block on
    the device; the p×p estimator (``'full'``, ``'pcr'``, ``'rrr'``) is then the numpy path's
    own ``_set_landmark_model``. As after a Dask fit, the model keeps the landmarks and small
    matrices only (``operator_`` and ``X_fit_`` are None), and ``predict`` evaluates k(x, L) on
    the device.
    """
    from .._shared.operators import _check_int
    from .operators import landmark_basis_torch, landmark_stats_torch

    eps = est._alpha()
    est._timestep()
    est._estimator_kind()
    lag = _check_int(est.lag, "lag")
    X0, X1, dtype, _ = snapshot_pairs_torch(est, X, y, lag, est.device)
    n = int(X0.shape[0])
    tk = TorchKernel(kernel, int(X0.shape[1]))
    obs = observable_values(est, observables, X0, X1, lag, y is not None,
                            not any_torch(X, y))
    idx, L, T = landmark_basis_torch(est, X0, tk)
    A, C, FY = landmark_stats_torch(tk, L, T, X0, X1, X1)
    FG = None if obs is None else landmark_stats_torch(tk, L, T, X0, Y=obs)[2]
    est.kernel_ = kernel
    est._sparse_ok = False
    est.landmarks_ = idx
    est.X_fit_ = est.Y_fit_ = None
    est.operator_ = None
    est.torch_fit_ = True
    est._torch_state = {"device": X0.device, "dtype": dtype, "kernel": tk, "L": L,
                        "kind": "landmark"}
    return est._set_landmark_model(to_numpy(L), T, A, C, FY, n, eps, FG)


def _fit_start(est, X, y, kernel):
    """Shared start of the transfer-operator fits: parameters, the pairs on the device, the
    Gram matrix G_X there, and the numpy bookkeeping (``kernel_``, ``X_fit_``, ``Y_fit_``)."""
    from .._shared.operators import _check_int

    kind = est._estimator_kind()
    eps = est._alpha()
    est._timestep()
    lag = _check_int(est.lag, "lag")
    X0, X1, dtype, _ = snapshot_pairs_torch(est, X, y, lag, est.device)
    tk = TorchKernel(kernel, int(X0.shape[1]))
    G = gram(tk, X0, X0, "the Gram matrix G_X of the samples x_t", symmetric=True)
    est.kernel_ = kernel
    est._sparse_ok = False
    est.X_fit_, est.Y_fit_ = to_numpy(X0).copy(), to_numpy(X1).copy()
    est.torch_fit_ = True
    return kind, eps, X0, X1, dtype, tk, G


def _reduced_factors(est, kind, tk, G, X1, n: int, shift: float):
    """U, V of the exact 'pcr'/'rrr' estimator on the device (and H = k(Y, Y) when formed):
    the estimators' own algorithm (handed down), with H formed here."""
    r = est._rank(n, "the number of time-lagged pairs")
    return est._numpy_parts().reduced_factors(
        kind, G, lambda: gram(tk, X1, X1, "the Gram matrix of the shifted samples y_i",
                              symmetric=True), r, shift)


def predict_koopman_torch(est, X, n_steps: int, observable: bool = False):
    """``KoopmanOperator.predict`` (the state, or the observables, ``n_steps`` lags ahead) on
    the torch backend.

    Parameters
    ----------
    est : KoopmanOperator
        Fitted on the torch backend.
    X : tensor or array-like of shape (n_points, d)
        Initial states.
    n_steps : int
        Number of lags k ≥ 1.
    observable : bool, default=False
        Forecast the observables given to ``fit`` (their data coefficients on the device)
        instead of the state.

    Returns
    -------
    tensor (tensor input: the fit's device, X's dtype) or ndarray of shape (n_points, d)
        k(x, X) U Mᵏ⁻¹ Vᵀ Y ('pcr'/'rrr') or k(x, X) ((G + nεI)⁻¹ C)ᵏ⁻¹ (G + nεI)⁻¹ Y ('full').
    """
    from .operators import _transform_input

    torch = require_torch()
    state, Xn, as_numpy = _transform_input(est, X)
    if state["kind"] == "full":
        if observable:
            coef = torch.cholesky_solve(state["obs"], state["L"])
        else:
            coef = state["coef"]
        for _ in range(n_steps - 1):
            coef = torch.cholesky_solve(state["Cyx"] @ coef, state["L"])
    else:
        c = state["obs"] if observable else state["state"]
        for _ in range(n_steps - 1):
            c = state["M"] @ c
        coef = state["U"] @ c if (n_steps > 1 or observable) else state["coef"]
    out = TorchKernelMatrix(state["kernel"], Xn.to(torch.float64), state["X"]).matmat(coef)
    if not bool(torch.isfinite(out).all()):
        raise ValueError("the predictions have non-finite entries; rescale X like the training "
                         "data")
    out = out.to(Xn.dtype)
    if observable and getattr(est, "_obs_1d", False):
        out = out[:, 0]
    return to_numpy(out) if as_numpy else out


# ------------------------------------------------------------------------------ Perron–Frobenius
def fit_perron_frobenius_torch(est, X, y, kernel):
    """``PerronFrobeniusOperator.fit`` on the torch backend (paper 002 §4.4).

    'full': P̂ = Ψ G_ΦΨ⁻¹ (G_Φ + nεI)⁻¹ G_ΦΨ Φᵀ, whose eigenpairs are those of the auxiliary
    matrix G_ΦΨ⁻¹ (G_Φ + nεI)⁻¹ G_ΦΨ G_ΦΨ with eigenfunctions on the lagged samples y_i
    (RKHS-normalised with H = k(Y, Y)); G_ΦΨ⁻¹ follows the numpy path's LU / rcond / Tikhonov
    rule (the estimators' ``LaggedGramSolver`` on the device tensors, an
    ``IllConditionedLaggedGramWarning`` when regularised).
    'pcr'/'rrr': the adjoint Ψ V Uᵀ Φᵀ of the reduced-rank Koopman estimator (Kostic et al.
    2022), eigenpairs from the r×r Mᵀ = Uᵀ k(X, Y) V on the host, eigenfunctions Ψ V z.

    Parameters
    ----------
    est : PerronFrobeniusOperator
        The estimator; fitted in place.
    X : tensor or array-like of shape (n, d)
        One trajectory (``y`` None) or the snapshots x_i.
    y : tensor, array-like or None
        The time-shifted snapshots.
    kernel : Kernel
        The resolved kernel.

    Returns
    -------
    PerronFrobeniusOperator
        ``est`` with the numpy path's fitted attributes (numpy arrays) and an ``operator_`` whose
        n×n factors are computed on first use only.
    """
    from .._shared.operators import _check_int
    from .._validation import clip_count

    parts = est._numpy_parts()  # the estimators' numpy classes, handed down (no upward import)
    EmpiricalOperator, OperatorEig, RKHSFunction = (
        parts.EmpiricalOperator, parts.OperatorEig, parts.RKHSFunction)
    PerronFrobeniusRepresentation = parts.PerronFrobeniusRepresentation

    torch = require_torch()
    owner = type(est).__name__
    kind, eps, X0, X1, _, tk, G = _fit_start(est, X, y, kernel)
    n = int(X0.shape[0])
    shift = n * eps
    X0n, X1n = est.X_fit_, est.Y_fit_
    k = _check_int(est.n_components, "n_components")
    if kind == "full":
        est.rank_ = None
        Gxy = gram(tk, X0, X1, "the time-lagged Gram matrix G_XY = [k(x_i, y_j)]")
        L = parts.cholesky_shifted(G, shift, "G_X")
        solver = parts.LaggedGramSolver(Gxy, shift, est.RCOND_MIN)
        est.lagged_gram_rcond_ = solver.rcond
        est.lagged_gram_solver_ = solver.kind
        if solver.kind == "tikhonov":
            est._warn_ill_conditioned(n, eps, solver.rcond, solver.n_damped, stacklevel=4)
        A = solver.solve(torch.cholesky_solve(Gxy @ Gxy, L))  # B G_XY, B = G_XY⁻¹(G + nεI)⁻¹G_XY
        est.operator_ = EmpiricalOperator(
            kernel, X0n, kernel, X1n,
            PerronFrobeniusRepresentation.lazy((n, n),
                                               (kernel, X0n, X1n, shift, est.RCOND_MIN)))
        H = gram(tk, X1, X1, "the Gram matrix of the shifted samples y_i", symmetric=True)
        k = clip_count(k, n, "n_components", "the number of time-lagged pairs", owner=owner)
        lam, C, used = _auxiliary_eig(H, A, k, owner)
        fn = RKHSFunction(kernel, X1n, C)
        return est._finish(OperatorEig(lam, fn, "auxiliary", {"solver": used}))
    Cyx = gram(tk, X1, X0, "the time-lagged Gram matrix [k(y_i, x_j)]")
    U, V, H = _reduced_factors(est, kind, tk, G, X1, n, shift)
    if H is None:
        H = gram(tk, X1, X1, "the Gram matrix of the shifted samples y_i", symmetric=True)
    return est._set_reduced(kind, U, V, Cyx, H, X0n, X1n)
