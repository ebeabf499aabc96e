"""Pieces of the RKHS operator estimators shared with the Dask executor (asymkern._dask.operators).

The kernel check of Mollenhauer et al. (2020) (:func:`as_rkhs_kernel`), the parameter checks, the
landmark draw and the row-block functions of the Nyström-restricted estimators (one block function,
two executors: :func:`landmark_stats`, :func:`landmark_evaluate`). :mod:`asymkern.operators`
re-exports what it uses.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .._validation import check_indices, check_random_state, clip_count
from ..kernels import CallableKernel, Kernel, get_kernel
from ..kernels._registry import check_callable_params


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
            "z_j), "
            "not the Gram matrices ⟨φ(x_i), φ(x_j)⟩ and ⟨ψ(z_i), ψ(z_j)⟩ that an operator "
            "estimate and its regularisation, eigen- and singular functions need. Use a PSD "
            "kernel here (e.g. 'rbf'), or, for the SVD of the asymmetric kernel matrix "
            "between the states and their successors, asymkern.decomposition.KernelSVD"
            "(kernel=...).fit(X[:-lag], Z=X[lag:])"
        )
    if not k.is_psd:
        raise ValueError(
            f"{name}={k!r} is not a positive semi-definite kernel; empirical RKHS operators "
            "(Mollenhauer et al., 2020) need an RKHS, i.e. a symmetric PSD kernel (e.g. 'rbf', "
            "'laplacian')"
        )
    return k


def _check_reg(value, name: str = "alpha") -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive real number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(
            f"{name} must be finite and > 0 (Tikhonov parameter ε of (C + εI)⁻¹), got {value}"
        )
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


def _pair_f64(X, L):
    """X and L in float64 and one representation: both CSR when either is sparse (a kernel that
    accepts sparse input evaluates CSR against CSR), else both dense."""
    if sp.issparse(X) or sp.issparse(L):
        return sp.csr_matrix(X, dtype=np.float64), sp.csr_matrix(L, dtype=np.float64)
    return np.asarray(X, dtype=np.float64), np.asarray(L, dtype=np.float64)


def landmark_stats(kernel, L: np.ndarray, T: np.ndarray, X, X1=None, Y=None) -> tuple:
    """Row-block sums of the Nyström-restricted estimators (one block function, two executors).

    For the rows x_i of the block (partners x1_i, targets y_i) and the whitened landmark
    features F = k(X, L) T, F⁺ = k(X1, L) T: returns (FᵀF (p×p), FᵀF⁺ (p×p) or None,
    FᵀY (p×d) or None), float64. The in-memory fit sums them over row blocks, the Dask fit over
    row chunks (tree reduction); whitening inside the block keeps the sums well conditioned.
    """
    if Y is not None:
        Y = np.asarray(Y.toarray() if sp.issparse(Y) else Y, dtype=np.float64)
    return landmark_sums(lambda P: np.asarray(kernel(*_pair_f64(P, L)), dtype=np.float64),
                         T, X, X1, Y, step=max(1, X.shape[0]))


def landmark_sums(block, T, X, X1=None, Y=None, step: int | None = None) -> tuple:
    """(FᵀF, FᵀF⁺ or None, FᵀY or None) summed over row blocks of ``step`` rows, with the
    whitened landmark features F = block(X) T, F⁺ = block(X1) T (Meanti et al., 2023).

    Written once for every executor: ``block(P)`` returns k(P, L) as an array of the executor
    (numpy, or a tensor on its device), T (m×p) and Y (n×d) are arrays of the same executor,
    and the sums stay there. ``step`` None sizes the blocks from ``working_memory``.
    """
    n, m = X.shape[0], T.shape[0]
    if step is None:
        from ..config import get_config

        step = max(1, int(get_config()["working_memory"] * 2**20 // (8 * 4 * max(m, 1))))
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
    """k(X, L) @ coef in float64 (the prediction / eigenfunction evaluation of one block)."""
    K = kernel(*_pair_f64(X, L))
    return np.asarray(K.toarray() if sp.issparse(K) else K) @ coef


def _check_landmark_options(est, n: int):
    """Landmark indices (or None for the exact estimator): same draws for every executor."""
    from ..landmarks import select_landmarks

    m, how = est.n_landmarks, est.landmarks
    est.n_landmarks_ = None
    if m is None and isinstance(how, str):
        if how != "uniform":
            raise ValueError(f"landmarks must be 'uniform' or an index array, got {how!r}")
        check_random_state(est.random_state)
        return None
    if isinstance(how, str):
        if how != "uniform":
            raise ValueError(f"landmarks must be 'uniform' or an index array, got {how!r}")
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
