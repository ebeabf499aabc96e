"""Pieces of the RKHS operator estimators written once for every executor (numpy, torch, Dask).

The kernel check of Mollenhauer et al. (2020) (:func:`as_rkhs_kernel`), the parameter checks, the
landmark draw, and the executor-agnostic steps of the estimators, written against the executor's
primitives ``ops = asymkern._backend.ops_of(array)`` and its kernel matrices
(``ops.kernel_matrix``): the checked Gram matrix (:func:`gram`), the landmark step of the
Nyström-restricted estimators (:func:`landmark_step`: indices, landmarks, whitening and the
row-block sums), the evaluation Σ_i coef_ij k(p, c_i) of fitted functions (:func:`evaluate`), the
time-lagged pairs of the transfer operators (:func:`lagged_pairs`) and the device state a fit on
an executor other than numpy keeps (:class:`DeviceState`). :mod:`asymkern.operators` calls them
for numpy arrays and torch tensors alike; the Dask tasks call the block functions
(:func:`landmark_stats`, :func:`landmark_evaluate`).

:func:`gram` keeps the numpy path's contract on every executor: an ``OverflowError`` naming the
matrix, and a ``max_dense_memory`` check before the matrix is formed; an exact fit checks its
whole peak (every n×n array it holds at once) before its first Gram matrix
(:func:`check_fit_memory`).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .._backend import ArrayOps, ops_of
from .._validation import (
    array_nbytes,
    check_finite_output,
    check_indices,
    check_random_state,
    clip_count,
)
from ..kernels import CallableKernel, Kernel, get_kernel
from ..kernels._registry import check_callable_params

_RESCALE = "rescale X (e.g. StandardScaler) or change the kernel parameters"


def as_rkhs_kernel(kernel, params: dict | None = None, name: str = "kernel") -> Kernel:
    """A symmetric PSD kernel for Mollenhauer et al. (2020) from a name, a :class:`Kernel` or a
    callable.

    A plain callable ``f(X, Z) -> (n, m)`` is taken to be a symmetric PSD kernel (its Gram matrices
    are checked numerically when factorised). Kernels flagged asymmetric or indefinite (SNE, T)
    are rejected: an RKHS needs a symmetric positive semi-definite kernel.

    Parameters
    ----------
    kernel : str, Kernel or callable
        A kernel name (see :func:`asymkern.kernels.get_kernel`), a :class:`Kernel` instance, or a
        callable ``f(X, Z)`` returning the (n, m) kernel matrix.
    params : dict, optional
        Keyword parameters of the kernel (e.g. ``{"gamma": 0.5}``).
    name : str, default='kernel'
        The argument's name in error messages.

    Returns
    -------
    Kernel
        A symmetric positive semi-definite kernel.

    Raises
    ------
    ValueError
        If the kernel is flagged asymmetric or indefinite (``sne``, ``t``, KL kernels); the
        message for an asymmetric kernel explains why (two feature maps, no Gram matrices of
        either) and names :class:`~asymkern.decomposition.KernelSVD` for its SVD.

    See Also
    --------
    asymkern.operators.EmpiricalOperator : Uses it for both of its kernels.
    asymkern.kernels.get_kernel : Builds a kernel from its name.

    References
    ----------
    .. [1] M. Mollenhauer, I. Schuster, S. Klus and C. Schütte, "Singular Value
       Decomposition of Operators on Reproducing Kernel Hilbert Spaces", in Advances in
       Dynamics, Optimization and Computation, Springer, 2020, §2.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.operators import as_rkhs_kernel
    >>> k = as_rkhs_kernel("rbf", {"gamma": 0.5})
    >>> k(np.zeros((2, 3)), np.ones((4, 3))).shape
    (2, 4)
    >>> try:
    ...     as_rkhs_kernel("sne")
    ... except ValueError:
    ...     print("refused")
    refused
    """
    params = dict(params or {})
    k: Kernel
    if callable(kernel) and not isinstance(kernel, (Kernel, str)):
        check_callable_params(params, name)
        k = CallableKernel(kernel, **{"is_symmetric": True, "is_psd": True, **params})
    else:
        k = get_kernel(kernel, **params)
    if not k.is_symmetric:
        raise ValueError(
            f"{name}={k!r} is asymmetric, not a symmetric positive semi-definite kernel; "
            "empirical RKHS operators (Mollenhauer et al. (2020): "
            "covariance, conditional mean embedding, Koopman/Perron–Frobenius, CCA) need an "
            "RKHS, i.e. a symmetric PSD kernel. An asymmetric kernel κ(x, z) = ⟨φ(x), ψ(z)⟩ has "
            "two feature maps (Tao et al., 2024) and gives only the cross inner products κ(x_i, "
            "z_j), not the Gram matrices ⟨φ(x_i), φ(x_j)⟩ and ⟨ψ(z_i), ψ(z_j)⟩ that an operator "
            "estimate and its regularisation, eigen- and singular functions need. Use a PSD "
            "kernel here (e.g. 'rbf'), or, for the SVD of the asymmetric kernel matrix "
            "between the states and their successors, asymkern.decomposition.KernelSVD"
            "(kernel=...).fit(X[:-lag], Z=X[lag:])")
    if not k.is_psd:
        raise ValueError(f"{name}={k!r} is not a positive semi-definite kernel; empirical RKHS "
                         "operators (Mollenhauer et al., 2020) need an RKHS, i.e. a symmetric "
                         "PSD kernel (e.g. 'rbf', 'laplacian')")
    return k


def _check_reg(value, name: str = "alpha") -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive real number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0 (Tikhonov parameter ε of (C + εI)⁻¹), "
                         f"got {value}")
    return value


def _check_jitter(value, name: str = "jitter") -> float:
    """The diagonal added to a Gram matrix before it is factorised: a finite real number >= 0
    (one rule and one message for every executor and for :class:`EmpiricalOperator`)."""
    ok = not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Real)
    if not ok or not (np.isfinite(float(value)) and float(value) >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _check_timestep(value, name: str = "timestep") -> float:
    """The time per step of a transfer operator: a finite real number > 0.

    The implied timescales −lag·timestep / ln|λ| are in its units, so 0, a negative, NaN or
    infinite value would give meaningless (negative, zero or non-finite) timescales.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive real number (the time per step), got "
                        f"{value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0 (the time per step; the implied "
                         f"timescales -lag*{name}/ln|λ| are in its units), got {value}")
    return value


def _check_int(value, name: str, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def landmark_whitening(K_LL: np.ndarray) -> np.ndarray:
    """T = Q Λ^{-1/2} (m×p) with K_LL = Q Λ Qᵀ (eigh; eigenvalues ≤ m·eps·λ_max dropped).

    The whitened landmark features F(x) = k(x, L) T are orthonormal in the RKHS
    (TᵀK_LLT = I): the Nyström features of Li, Liu and Zhang (LLA/SPA, F = K_nm U Λ^{-1/2}).
    """
    K_LL = np.asarray(K_LL, dtype=np.float64)
    lam, Q = sla.eigh(0.5 * (K_LL + K_LL.T), check_finite=False)
    if not lam.size or lam[-1] <= 0:
        raise ValueError("the landmark Gram matrix K_LL is zero; choose other landmarks or "
                         "kernel parameters")
    keep = lam > lam[-1] * K_LL.shape[0] * np.finfo(float).eps
    return Q[:, keep] / np.sqrt(lam[keep])


def _pair_f64(X, L, ops: ArrayOps | None = None):
    """X and L in float64 and one representation: both CSR when either is sparse (a kernel that
    accepts sparse input evaluates CSR against CSR), else both dense arrays of ``ops``'s
    executor (numpy by default); one object for X against itself."""
    sparse = sp.issparse(X) or sp.issparse(L)

    def f64(A):
        if sparse:
            return sp.csr_matrix(A, dtype=np.float64)
        if ops is None or ops.name == "numpy":
            return np.asarray(A, dtype=np.float64)
        return ops.astype(A, np.float64)

    Xf = f64(X)
    return Xf, Xf if L is X else f64(L)


def kernel_block(kernel, P, L):
    """The dense float64 k(P, L) on the executor of P and L (numpy: one representation,
    :func:`_pair_f64`), from the executor's kernel matrix ``ops.kernel_matrix`` (numpy's
    :meth:`~asymkern.kernels.KernelMatrix.to_array`: blocked, within ``max_dense_memory``)."""
    ops = ops_of(P, L)
    M = ops.kernel_matrix(kernel, *_pair_f64(P, L, ops))
    return ops.astype(getattr(M, "to_array", M.to_dense)(), np.float64)


#: n×n copies a kernel matrix being formed may hold besides itself: the row blocks that
#: :meth:`~asymkern.kernels.KernelMatrix.to_array` writes (a quarter of the rows) with their
#: temporaries (measured with ``tracemalloc``: 1/8 for 'rbf', 1/2 for 'laplacian' and
#: 'polynomial')
KERNEL_BLOCKS = 0.5


def gram_bytes(n_rows: int, n_cols: int, symmetric: bool = False, inputs: int = 0) -> int:
    """The peak bytes of :func:`gram`: the float64 matrix, its kernel blocks in flight
    (:data:`KERNEL_BLOCKS`) and, ``symmetric``, the symmetrised copy; with the kernel's copies
    of the ``inputs`` (their bytes), which grow as n·d, and n-long vectors (64 per row or
    column: the row norms, numpy's ufunc buffers)."""
    return (int(8 * n_rows * n_cols * (2 if symmetric else 1 + KERNEL_BLOCKS)) + 3 * inputs
            + 8 * 64 * max(n_rows, n_cols))


def gram(kernel, A, B=None, what: str = "the Gram matrix", hint: str = _RESCALE,
         symmetric: bool = False):
    """The checked Gram matrix k(A, B) (``B`` None: A against itself) of every executor.

    Dense float64 on the executor of A (:func:`kernel_block`, a tensor on its device),
    refused with the numpy path's ``OverflowError`` naming ``what`` (and suggesting ``hint``)
    when it is not finite; ``symmetric`` returns (K + Kᵀ)/2. The Gram matrices
    G_Φ = [k(x_i, x_j)] of the empirical operators of Mollenhauer et al. (2020), §4.

    Its own peak (:func:`gram_bytes`) is checked against ``max_dense_memory`` before anything
    is formed, on every executor; a fit that holds other n×n arrays besides checks its whole
    peak first (:func:`check_fit_memory`).

    Returns
    -------
    array of shape (n_A, n_B)

    Raises
    ------
    MemoryBudgetError
        When the matrix (with its blocks and symmetrised copy) exceeds ``max_dense_memory``.
    """
    from ..config import check_memory

    ops = ops_of(A, B)
    a, b = int(A.shape[0]), int((A if B is None else B).shape[0])
    inputs = array_nbytes(A) + (0 if B is None else array_nbytes(B))
    check_memory(gram_bytes(a, b, symmetric, inputs), f"{what} ({a}×{b})",
                 "fewer samples, or a landmark (Nyström) estimator where there is one",
                 detail=f"a {a}×{b} float64 matrix" + (" and its symmetrised copy"
                                                       if symmetric else " and its blocks"))
    K = checked(ops, kernel_block(kernel, A, A if B is None else B), what, hint)
    if not symmetric:
        return K
    S = K + K.T  # (K + Kᵀ)/2 with one n×n temporary on every executor
    del K
    S *= 0.5
    return S


def fit_memory_bytes(n: int, copies: float, samples=(), columns: int = 0) -> int:
    """The peak bytes :func:`check_fit_memory` checks: ``copies`` n×n float64 arrays, the
    n-long vectors beside them (the coefficients of ``columns`` components, ARPACK's Lanczos
    basis of max(2·columns + 1, 20) vectors, LAPACK's integer workspace: n × max(64,
    4·columns + 24) float64) and three times the ``samples`` the fit holds (the samples and
    the kernel's augmented copies of them, which grow as n·d, not n²)."""
    vectors = 8 * n * max(64, 4 * int(columns) + 24)
    return int(8.0 * copies * n * n) + vectors + 3 * sum(array_nbytes(A) for A in samples)


def check_fit_memory(n: int, copies: float, what: str, alternatives: str | None = None, *,
                     samples=(), columns: int = 0) -> None:
    """Refuse, before anything of size n×n is allocated, an exact operator fit whose peak
    exceeds ``max_dense_memory`` (one check of the whole route, on every executor).

    Parameters
    ----------
    n : int
        The number of samples (or time-lagged pairs).
    copies : float
        The n×n float64 arrays the route holds at once at its peak (Gram matrices, their
        factors and products, the eigensolver's copies and workspace; kernel blocks in flight
        count :data:`KERNEL_BLOCKS`), measured with ``tracemalloc`` for every route on data
        that takes its most expensive branch (full-rank Gram matrices, the dense fallback of
        an eigensolver).
    what : str
        The estimator and its route, e.g. ``"KoopmanOperator(estimator='rrr') exact fit"``.
    alternatives : str, optional
        What to use instead (landmarks where the estimator has them).
    samples : sequence of arrays, optional
        The samples the fit holds (any executor): counted with the kernel's copies of them
        (:func:`fit_memory_bytes`).
    columns : int, default 0
        The components (or right-hand sides) of the fit's n-long vectors.

    Raises
    ------
    MemoryBudgetError
        When the estimate (:func:`fit_memory_bytes`) exceeds the budget; the message names
        ``what`` and the number of n×n arrays.
    """
    from ..config import check_memory

    need = fit_memory_bytes(n, copies, samples, columns)
    check_memory(need, f"{what} on {n} samples", alternatives,
                 detail=f"{copies:g} {n}×{n} float64 arrays at once, with the samples and "
                        "n-long vectors")


def checked(ops: ArrayOps, values, what: str, hint: str = ""):
    """``values`` (an array of ``ops``'s executor), refused with the numpy path's
    ``OverflowError`` naming ``what`` when they are not finite although the input was."""
    if not ops.all_finite(values):
        check_finite_output(ops.to_host(values), what, hint)
    return values


def evaluate(kernel, P, centers, coef, what: str = "the predictions", offset=None,
             hint: str = "rescale X like the training data"):
    """Σ_i coef_ij k(p, c_i) − offset_j at the rows p of P: the values of fitted RKHS functions
    (Mollenhauer et al., 2020, §3) on any executor.

    Parameters
    ----------
    kernel : Kernel
        The (numpy-side) kernel; the executor's kernel matrix of P and ``centers`` streams the
        product in blocks (float64; numpy pairs as :func:`_pair_f64` makes them).
    P : array of shape (n_points, d)
        The points, on the executor of ``centers`` (numpy, CSR, or a tensor on its device).
    centers : array of shape (n_centers, d)
        The expansion points (samples or landmarks).
    coef : array of shape (n_centers, k)
        The coefficients (a host array or one of the executor).
    what : str, default='the predictions'
        The name of the values in the error message.
    offset : array of shape (k,), optional
        Subtracted from every row (the training means of centred functions).
    hint : str
        What the error message suggests.

    Returns
    -------
    array of shape (n_points, k)
        Float64, on the executor of ``centers``.

    Raises
    ------
    OverflowError
        If the values are not finite.
    """
    ops = ops_of(centers, P)
    Pd, Cd = _pair_f64(P, centers, ops)
    vals = ops.kernel_matrix(kernel, Pd, Cd).matmat(ops.from_host(coef, Pd, np.float64))
    return checked(ops, vals if offset is None else vals - offset, what, hint)


def landmark_stats(kernel, L: np.ndarray, T: np.ndarray, X, X1=None, Y=None) -> tuple:
    """Row-block sums of the Nyström-restricted estimators (one block function, every executor).

    For the rows x_i of the block (partners x1_i, targets y_i) and the whitened landmark
    features F = k(X, L) T, F⁺ = k(X1, L) T: returns (FᵀF (p×p), FᵀF⁺ (p×p) or None,
    FᵀY (p×d) or None), float64. The in-memory fits sum them over row blocks
    (:func:`landmark_step`), the Dask fit over row chunks (tree reduction); whitening inside
    the block keeps the sums well conditioned.
    """
    return landmark_sums(lambda P: kernel_block(kernel, P, L), T, X, X1, _dense64(Y),
                         step=max(1, X.shape[0]))


def _dense64(Y):
    """Y (targets or observable values) as a dense float64 array of its executor, or None."""
    if Y is None:
        return None
    if sp.issparse(Y):
        return np.asarray(Y.toarray(), dtype=np.float64)
    ops = ops_of(Y)
    return ops.astype(Y, np.float64) if ops.owns(Y) else np.asarray(Y, dtype=np.float64)


def landmark_sums(block, T, X, X1=None, Y=None, step: int | None = None) -> tuple:
    """(FᵀF, FᵀF⁺ or None, FᵀY or None) summed over row blocks of ``step`` rows, with the
    whitened landmark features F = block(X) T, F⁺ = block(X1) T (Meanti et al., 2023).

    Written once for every executor: ``block(P)`` returns k(P, L) as an array of the executor
    (numpy, or a tensor on its device), T (m×p) and Y (n×d) are arrays of the same executor,
    and the sums stay there. ``step`` None sizes the blocks from ``working_memory``, and
    within what T and the sums leave of ``max_dense_memory`` (the same blocks on every
    executor; :class:`~asymkern.config.MemoryBudgetError` when not even one row fits).
    """
    n, m = X.shape[0], T.shape[0]
    if step is None:
        from ..config import check_memory, get_config

        cfg = get_config()
        per_row = 8 * 4 * max(m, 1)  # the block k(P, L), F0 and their temporaries
        p = int(T.shape[1])
        held = 8 * (m * p + 3 * p * max(p, 1 if Y is None else int(Y.shape[-1])))
        left = cfg["max_dense_memory"] * 2**20 - held
        if per_row > left:
            check_memory(held + per_row, f"the landmark sums over {n} samples and {m} "
                         "landmarks", "fewer landmarks (n_landmarks)",
                         detail="one row of the kernel block k(X, L) and its features beside "
                                "the whitening T and the sums")
        step = max(1, int(min(cfg["working_memory"] * 2**20, left) // per_row))
    out: tuple | None = None
    for a in range(0, n, step):
        sl = slice(a, min(a + step, n))
        F0 = block(X[sl]) @ T
        part = (F0.T @ F0, None if X1 is None else F0.T @ (block(X1[sl]) @ T),
                None if Y is None else F0.T @ Y[sl])
        out = part if out is None else _add_stats(out, part)
    assert out is not None  # n ≥ 1: X was validated by the caller
    return out


def _add_stats(a: tuple, b: tuple) -> tuple:
    return tuple(None if p is None else p + q for p, q in zip(a, b))


def landmark_evaluate(kernel, L: np.ndarray, coef: np.ndarray, X) -> np.ndarray:
    """k(X, L) @ coef in float64 (the whitened features F = k(X, L) T, or the values of
    landmark functions, complex coefficients included, on one block)."""
    return kernel_block(kernel, X, L) @ coef


@dataclass(frozen=True)
class LandmarkStep:
    """The landmark step of a Nyström-restricted operator fit (Meanti et al., 2023).

    Attributes
    ----------
    idx : ndarray of int
        The landmark indices (the same draw on every executor).
    L : array of shape (m, d)
        The landmarks x̃_l = x_{idx_l} on the executor of the samples (a copy).
    L_host : ndarray or CSR matrix of shape (m, d)
        L on the host (the fitted ``landmark_points_``).
    T : ndarray of shape (m, p)
        The whitening T = Q Λ^{-1/2} of K_LL (:func:`landmark_whitening`).
    A, C, FY, FG : ndarray or None
        FᵀF, FᵀF⁺, FᵀY and Fᵀg(Y) of the whitened features F = k(X, L) T (float64, host);
        None where not asked for.
    n : int
        The number of samples.
    """

    idx: np.ndarray
    L: Any
    L_host: Any
    T: np.ndarray
    A: np.ndarray
    C: np.ndarray | None
    FY: np.ndarray | None
    FG: np.ndarray | None
    n: int


def landmark_step(est, kernel, X, X1=None, Y=None, obs=None) -> LandmarkStep | None:
    """The landmark step of a conditional mean embedding or Koopman fit, on any executor.

    The landmarks are drawn as on every executor (:func:`_check_landmark_options`), K_LL is
    formed on the executor (:func:`gram`) and whitened on the host (m×m), and the
    n×m blocks k(X, L) are reduced on the executor, ``working_memory`` MiB at a time, to the
    p×p and p×d sums the estimators need (:func:`landmark_sums`): with F = k(X, L) T and
    F⁺ = k(X1, L) T, the operators of Mollenhauer et al. (2020), §4.3–4.4, restricted to the
    landmark span (Meanti et al., 2023) need only FᵀF, FᵀF⁺, FᵀY and Fᵀg(Y).

    Parameters
    ----------
    est : ConditionalMeanEmbedding or KoopmanOperator
        The estimator (``n_landmarks``, ``landmarks``, ``random_state``; ``n_landmarks_`` is
        set).
    kernel : Kernel
        The kernel.
    X : array of shape (n, d)
        The samples (numpy, CSR or a float64 tensor on its device).
    X1 : array of shape (n, d), optional
        Their partners (the time-shifted samples of a transfer operator).
    Y : array of shape (n, d_y), optional
        The targets.
    obs : array of shape (n, p), optional
        The observables' values g(y_i).

    Returns
    -------
    LandmarkStep or None
        None for the exact estimator (no landmarks asked for).
    """
    ops = ops_of(X)
    idx = _check_landmark_options(est, int(X.shape[0]))
    if idx is None:
        return None
    L = X[ops.index(idx, X)]
    T = landmark_whitening(ops.to_host(gram(kernel, L, what="the landmark Gram matrix K_LL",
                                            symmetric=True)))
    Tx = ops.from_host(T, L, np.float64)
    block = lambda P: kernel_block(kernel, P, L)  # noqa: E731
    A, C, FY = landmark_sums(block, Tx, X, X1, _dense64(Y))
    FG = None if obs is None else landmark_sums(block, Tx, X, Y=_dense64(obs))[2]
    host = lambda M: None if M is None else ops.to_host(M)  # noqa: E731
    return LandmarkStep(idx=idx, L=L, L_host=L if sp.issparse(L) else ops.to_host(L), T=T,
                        A=ops.to_host(A), C=host(C), FY=host(FY), FG=host(FG),
                        n=int(X.shape[0]))


@dataclass(frozen=True)
class DeviceState:
    """What an operator estimator fitted on an executor other than numpy keeps on the device
    for ``transform`` / ``predict`` (its ``_torch_state``).

    Attributes
    ----------
    device : torch.device
        Where the fit ran.
    dtype : torch.dtype
        The input dtype (outputs of tensor input follow it).
    kernel : Kernel
        The kernel of X (``ops.kernel_matrix`` takes it).
    X : tensor of shape (n, d)
        The expansion points on the device: the float64 samples, or the landmarks.
    coef : tensor or ndarray of shape (n, k), optional
        The coefficients of the fitted functions of X (host landmark coefficients are passed at
        each call instead).
    offset : tensor of shape (k,), optional
        Subtracted from the values at X (the training means of centred functions).
    kernel_y, Y, coef_y, offset_y : optional
        The same for the second view (cross-covariance, kernel CCA).
    cho : tensor, optional
        The Cholesky factor of G_X + nεI (exact conditional mean embedding).
    forecast : DeviceForecast, optional
        The executor arrays an exact Koopman fit's forecasts iterate
        (:class:`asymkern.operators.koopman.DeviceForecast`).
    """

    device: Any
    dtype: Any
    kernel: Any
    X: Any
    coef: Any = None
    offset: Any = None
    kernel_y: Any = None
    Y: Any = None
    coef_y: Any = None
    offset_y: Any = None
    cho: Any = None
    forecast: Any = None


@dataclass(frozen=True)
class OperatorSamples:
    """The validated samples of a covariance, cross-covariance or kernel CCA fit on their
    executor: what the one fit body of these estimators (Mollenhauer et al., 2020, §4.2 and
    App. A.2) reads, and the only executor-specific part of it besides the validation.

    Attributes
    ----------
    X, Y : array or tensor
        Float64 copies of the samples (never the caller's memory): numpy arrays (CSR when the
        kernel accepts sparse input) for a numpy fit, tensors on the device otherwise; Y (2-D)
        is None for the covariance operator.
    kernel_x, kernel_y : Kernel
        The kernels (``kernel_y`` None without Y).
    device : torch.device or None
        Where a device fit runs; None for the numpy fit.
    dtype : dtype
        X's dtype (the outputs of a device ``transform`` follow the input's).
    as_numpy : bool
        Whether the inputs were numpy (numpy outputs then).
    """

    X: Any
    kernel_x: Any
    device: Any = None
    dtype: Any = None
    as_numpy: bool = True
    Y: Any = None
    kernel_y: Any = None

    @property
    def n(self) -> int:
        """The number of samples."""
        return int(self.X.shape[0])

    def gram(self, which: str = "x"):
        """The checked float64 Gram matrix k(Z, Z) of X (``'x'``) or Y (``'y'``) on the
        samples' executor (:func:`gram`): as the kernel gives it for numpy, symmetrised on a
        device. The fits that call it check their whole peak first
        (:func:`check_fit_memory`)."""
        Z, k = (self.X, self.kernel_x) if which == "x" else (self.Y, self.kernel_y)
        name = "X (input)" if which == "x" else "y (output)"
        hint = _RESCALE if which == "x" else "rescale y or change kernel_y's parameters"
        return gram(k, Z, what=f"the Gram matrix of {name}", hint=hint,
                    symmetric=self.device is not None)

    def host(self):
        """(X, Y) as float64 numpy arrays (Y None for one view; the samples themselves for
        a numpy fit)."""
        if self.device is None:
            return self.X, self.Y
        ops = ops_of(self.X)
        return ops.to_host(self.X), None if self.Y is None else ops.to_host(self.Y)

    def fitted(self, est, values, coef, offset=None, coef_y=None, offset_y=None):
        """Record what a device ``transform`` evaluates and return ``values`` as the user
        reads them.

        A numpy fit records nothing and returns ``values``. A device fit sets ``torch_fit_``
        and ``_torch_state``, the :class:`DeviceState` of the samples and kernels with the
        coefficients and offsets (training means) of the fitted functions of X and y, and
        returns ``values`` as a float64 tensor on the device for tensor input, numpy for
        numpy input.
        """
        if self.device is None:
            return values
        est.torch_fit_ = True
        est._sparse_ok = est._y_sparse_ok = False
        est._torch_state = DeviceState(device=self.device, dtype=self.dtype,
                                       kernel=self.kernel_x, X=self.X, coef=coef,
                                       offset=offset, kernel_y=self.kernel_y, Y=self.Y,
                                       coef_y=coef_y, offset_y=offset_y)
        ops = ops_of(self.X)
        return ops.to_host(values) if self.as_numpy else ops.from_host(values, self.X,
                                                                         np.float64)


def lagged_pairs(X, Y, lag: int):
    """The time-lagged pairs (x_i, y_i) of a transfer-operator fit from validated samples, on
    their executor (the transfer operators of Mollenhauer et al., 2020, §4.4).

    ``Y`` None: X is one trajectory (rows = time steps), pairs (x_t, x_{t+lag}) (views of X:
    the caller copies). Otherwise Y holds the time-shifted snapshots y_i = Ξ^τ(x_i) and must
    have X's shape (n, d); a 1-D Y is accepted only when X has a single feature (d = 1).
    Anything else — e.g. class labels — is a ``ValueError`` naming y and the expected shape,
    never a silently different estimator.

    Parameters
    ----------
    X : array of shape (n, d)
        The validated samples (numpy, CSR or a tensor).
    Y : array or None
        The time-shifted snapshots (any executor's array; its own checks are the caller's).
    lag : int
        τ in steps for a trajectory.

    Returns
    -------
    X0, X1 : arrays of shape (n', d)
        The pairs (X, and Y as 2-D, when Y is given).

    Raises
    ------
    ValueError
        For a trajectory shorter than lag + 2, or a Y whose shape is not X's.
    """
    n, d = int(X.shape[0]), int(X.shape[1])
    if Y is None:
        if lag >= n - 1:
            raise ValueError(f"lag={lag} must be smaller than the trajectory length "
                             f"{n} minus one (at least two time-lagged pairs)")
        return X[:-lag], X[lag:]
    expected = (f"expected the time-shifted snapshots y_i = Ξ^τ(x_i) with the shape of X "
                f"{(n, d)} (or y=None when X is one trajectory)")
    if Y.ndim == 1 and d == 1:
        Y = Y.reshape(-1, 1)
    if Y.ndim != 2 or tuple(Y.shape) != (n, d):
        raise ValueError(f"y has shape {tuple(Y.shape)}; {expected}")
    return X, Y


def _check_landmark_options(est, n: int):
    """Landmark indices (or None for the exact estimator): same draws for every executor."""
    from ..landmarks import select_landmarks

    m, how = est.n_landmarks, est.landmarks
    est.n_landmarks_ = None
    if isinstance(how, str):
        if how != "uniform":
            raise ValueError(f"landmarks must be 'uniform' or an index array, got {how!r}")
        if m is None:
            check_random_state(est.random_state)
            return None
        if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m < 1:
            raise ValueError(f"n_landmarks must be None or a positive integer, got {m!r}")
        m = clip_count(m, n, "n_landmarks", "the number of samples", owner=type(est).__name__)
        est.n_landmarks_ = m
        check_random_state(est.random_state)  # the library's policy (a Generator is refused)
        return select_landmarks(None, int(m), "uniform", est.random_state, n_samples=n)
    idx = check_indices(how, n, "landmarks")
    if m is not None and (isinstance(m, bool) or not isinstance(m, numbers.Integral)
                          or m != idx.size):
        raise ValueError(f"n_landmarks={m!r} does not match the {idx.size} given landmark "
                         "indices (pass n_landmarks=None with an index array)")
    est.n_landmarks_ = int(idx.size)
    return idx
