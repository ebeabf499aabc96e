"""Approximation errors of Nyström machines, computed exactly in the Hilbert space (Li, Liu and
Zhang).

f* = X_H α̃ is the exact machine (``mode='exact'``, ``dual_coef_`` α̃). Then

* LLA / NCR / SPA (eq. (15)): ‖f_LLA − f*‖² = α̂ᵀK̃α̂ + α̃ᵀKα̃ − 2α̂ᵀK̃α̃, with f_LLA = X̃_H α̂ =
  B_H ŵ (eq. (14)). We evaluate it in the equivalent landmark form f_LLA = C_H β (β =
  ``landmark_coef_``): βᵀK_mmβ + α̃ᵀKα̃ − 2βᵀK_mn α̃, which needs no α̂ and stays valid for
  k-means landmarks (weak equivalence); ``formula='eq15'`` evaluates (15) literally from α̂ = G^†ŵ
  (GSA fits only) — the tests check both agree.
* GSA (eq. (19)): ‖f_GSA − f*‖² = (α̃ − α̂)ᵀK(α̃ − α̂).

K products stream through :class:`~asymkern.kernels.KernelMatrix` (no n×n matrix) unless a
precomputed ``K`` is passed. Intercepts are not part of f (the paper's machines (1) have none).
One error per output (KRR target column, libsvm one-vs-one machine, KPCA component); a float
when there is one. For KPCA the sign of each component is arbitrary, so the smaller of
‖f̂ − f*‖ and ‖f̂ + f*‖ is returned. With ``squared=True`` the raw squared values come back
(they may be −1e-12-ish by rounding; the square roots clip them at 0). Machines fitted on the
torch backend are read through numpy copies of their fitted tensors (the formulas run on the
host).
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from .._dispatch import host_copy
from ..kernels import KernelMatrix
from .estimators import NystromKernelPCA

__all__ = ["approximation_error", "gsa_approximation_error", "lla_approximation_error"]


def _on_host(est):
    """``est`` itself, or — for a machine fitted on the torch backend — a shallow copy whose
    tensor attributes (``X_fit_``, ``dual_coef_``, …) are numpy copies on the host, so that the
    error formulas below, which are numpy, apply to it unchanged (the model is not modified)."""
    if not getattr(est, "torch_fit_", False):
        return est
    view = copy.copy(est)
    vars(view).update({name: host_copy(value) for name, value in vars(est).items()})
    return view


def _same(A, B) -> bool:
    if sp.issparse(A) or sp.issparse(B):
        return bool(sp.issparse(A) and sp.issparse(B) and (A != B).nnz == 0)
    return np.array_equal(A, B)


def _check_pair(approx, exact, K):
    """The pair and K on the host (:func:`_on_host`), checked, and exact's α̃ in float64."""
    approx, exact = _on_host(approx), _on_host(exact)
    for est, name in ((approx, "approx"), (exact, "exact")):
        if not hasattr(est, "X_fit_"):
            raise ValueError(f"{name} is not a fitted Nyström machine (call fit first)")
    if getattr(exact, "mode", None) != "exact":
        raise ValueError(f"exact must be fitted with mode='exact', got mode={exact.mode!r}")
    if type(approx) is not type(exact):
        raise ValueError(f"approx ({type(approx).__name__}) and exact ({type(exact).__name__}) "
                         "must be the same kind of machine")
    if approx.X_fit_.shape != exact.X_fit_.shape or not _same(approx.X_fit_, exact.X_fit_):
        raise ValueError("approx and exact were fitted on different training data")
    if approx._precomputed() != exact._precomputed() or (
            not approx._precomputed() and approx._kernel() != exact._kernel()):
        raise ValueError("approx and exact use different kernels")
    at = exact.dual_coef_
    if approx.landmark_coef_ is not None and approx.landmark_coef_.shape[1] != at.shape[1]:
        raise ValueError(f"approx has {approx.landmark_coef_.shape[1]} outputs/machines, "
                         f"exact has {at.shape[1]}")
    return approx, exact, host_copy(K), np.asarray(at, dtype=np.float64)


def _Kmat(exact, V, K):
    if K is not None:
        K = np.asarray(K)
        n = exact.X_fit_.shape[0]
        if K.shape != (n, n):
            raise ValueError(f"K must be the ({n}, {n}) training kernel matrix, got {K.shape}")
        return K @ V
    if exact._precomputed():  # X_fit_ is the training kernel matrix itself
        return np.asarray(exact.X_fit_, dtype=np.float64) @ V
    return KernelMatrix(exact._kernel(), exact.X_fit_).matmat(V)


def _finish(sq, squared):
    sq = np.asarray(sq, dtype=np.float64)
    out = sq if squared else np.sqrt(np.maximum(sq, 0.0))
    return float(out[0]) if out.size == 1 else out


def lla_approximation_error(approx, exact, K=None, *, formula="landmark", squared=False):
    """‖f_LLA − f*‖_H (eq. (15)) for an approx machine in mode lla, ncr, gsa or spa.

    For a GSA fit, f_LLA is the LLA solution it was trained through (Algorithm 1).

    Parameters
    ----------
    approx : NystromKernelRidge, NystromSVC or NystromKernelPCA
        A fitted Nyström machine (mode 'lla', 'ncr', 'gsa' or 'spa').
    exact : same type as ``approx``
        The same machine fitted with ``mode='exact'`` on the same data and kernel.
    K : array-like of shape (n, n), optional
        The training kernel matrix; when None, products with K are streamed.
    formula : {'landmark', 'eq15'}, default 'landmark'
        Evaluate through the landmark coefficients β (any fit) or literally by eq. (15)
        from α̂ = G^†ŵ (GSA fits only).
    squared : bool, default False
        Return ‖f_LLA − f*‖²_H.

    Returns
    -------
    float or ndarray of shape (n_outputs,)
        The RKHS distance (its square with ``squared=True``), one per output (KRR target
        column, one-vs-one machine, KPCA component); a float when there is one.

    Raises
    ------
    ValueError
        If a machine is not fitted, ``exact`` is not ``mode='exact'``, the two differ in type,
        training data, kernel or number of outputs, ``approx.mode`` does not fit, or
        ``formula`` is invalid.

    See Also
    --------
    gsa_approximation_error : Eq. (19) for GSA fits.
    approximation_error : Picks the right one of the two.

    References
    ----------
    .. [1] W. Li, M. Liu and D. Zhang, "Geometric Interpretation of Running Nyström-Based Kernel
       Machines and Error Analysis".

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.nystrom import NystromKernelRidge, lla_approximation_error
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(80, 2)
    >>> y = np.sin(X[:, 0])
    >>> exact = NystromKernelRidge(mode="exact", alpha=0.1).fit(X, y)
    >>> approx = NystromKernelRidge(mode="lla", n_landmarks=20, alpha=0.1,
    ...                             random_state=0).fit(X, y)
    >>> err = lla_approximation_error(approx, exact)
    >>> isinstance(err, float), bool(err >= 0)
    (True, True)
    """
    approx, exact, K, at = _check_pair(approx, exact, K)
    if approx.mode not in ("lla", "ncr", "gsa", "spa"):
        raise ValueError(f"approx.mode={approx.mode!r} has no LLA solution")
    basis = approx.basis_
    Kat = _Kmat(exact, at, K)
    aKa = np.einsum("ij,ij->j", at, Kat)
    Knm = basis.landmark_kernel(approx.X_fit_)
    if formula == "landmark":
        beta = approx.landmark_coef_
        bKb = np.einsum("ij,ij->j", beta, basis.Kmm @ beta)
        cross = np.einsum("ij,ij->j", beta, Knm.T @ at)
    elif formula == "eq15":
        if approx.mode != "gsa":
            raise ValueError("formula='eq15' needs α̂ = G^†ŵ, i.e. a GSA fit")
        ah = approx.dual_coef_
        G_ah = basis.A.T @ (Knm.T @ ah)  # G α̂
        G_at = basis.A.T @ (Knm.T @ at)  # G α̃
        bKb = np.einsum("ij,ij->j", G_ah, G_ah)  # α̂ᵀK̃α̂
        cross = np.einsum("ij,ij->j", G_ah, G_at)  # α̂ᵀK̃α̃
    else:
        raise ValueError(f"formula must be 'landmark' or 'eq15', got {formula!r}")
    sq = bKb + aKa - 2 * cross
    if isinstance(approx, NystromKernelPCA):
        sq = np.minimum(sq, bKb + aKa + 2 * cross)
    return _finish(sq, squared)


def gsa_approximation_error(approx, exact, K=None, *, squared=False):
    """‖f_GSA − f*‖_H (eq. (19)) = √((α̃ − α̂)ᵀK(α̃ − α̂)) for a GSA fit.

    Parameters
    ----------
    approx : NystromKernelRidge, NystromSVC or NystromKernelPCA
        A fitted Nyström machine with ``mode='gsa'``.
    exact : same type as ``approx``
        The same machine fitted with ``mode='exact'`` on the same data and kernel.
    K : array-like of shape (n, n), optional
        The training kernel matrix; when None, products with K are streamed.
    squared : bool, default False
        Return ‖f_GSA − f*‖²_H.

    Returns
    -------
    float or ndarray of shape (n_outputs,)
        The RKHS distance (its square with ``squared=True``), one per output (KRR target
        column, one-vs-one machine, KPCA component); a float when there is one.

    Raises
    ------
    ValueError
        If a machine is not fitted, ``exact`` is not ``mode='exact'``, the two differ in type,
        training data, kernel or number of outputs, or ``approx.mode`` does not fit.

    See Also
    --------
    lla_approximation_error : Eq. (15) for LLA / NCR / SPA fits.
    approximation_error : Picks the right one of the two.

    References
    ----------
    .. [1] W. Li, M. Liu and D. Zhang, "Geometric Interpretation of Running Nyström-Based Kernel
       Machines and Error Analysis".

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.nystrom import NystromKernelRidge, gsa_approximation_error
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(80, 2)
    >>> y = np.sin(X[:, 0])
    >>> exact = NystromKernelRidge(mode="exact", alpha=0.1).fit(X, y)
    >>> approx = NystromKernelRidge(mode="gsa", n_landmarks=20, alpha=0.1,
    ...                             random_state=0).fit(X, y)
    >>> bool(gsa_approximation_error(approx, exact) >= 0)
    True
    """
    approx, exact, K, at = _check_pair(approx, exact, K)
    if approx.mode != "gsa":
        raise ValueError(f"approx.mode={approx.mode!r}; eq. (19) needs a GSA fit (mode='gsa')")
    ah = np.asarray(approx.dual_coef_, dtype=np.float64)
    D = at - ah
    sq = np.einsum("ij,ij->j", D, _Kmat(exact, D, K))
    if isinstance(approx, NystromKernelPCA):
        S = at + ah
        sq = np.minimum(sq, np.einsum("ij,ij->j", S, _Kmat(exact, S, K)))
    return _finish(sq, squared)


def approximation_error(approx, exact, K=None, *, squared=False):
    """‖f̂ − f*‖_H: eq. (19) for a GSA fit, eq. (15) for LLA / NCR / SPA fits.

    Parameters
    ----------
    approx : NystromKernelRidge, NystromSVC or NystromKernelPCA
        A fitted Nyström machine.
    exact : same type as ``approx``
        The same machine fitted with ``mode='exact'`` on the same data and kernel.
    K : array-like of shape (n, n), optional
        The training kernel matrix; when None, products with K are streamed.
    squared : bool, default False
        Return the squared distance.

    Returns
    -------
    float or ndarray of shape (n_outputs,)
        The RKHS distance (its square with ``squared=True``), one per output (KRR target
        column, one-vs-one machine, KPCA component); a float when there is one.

    Raises
    ------
    ValueError
        If a machine is not fitted, ``exact`` is not ``mode='exact'``, the two differ in type,
        training data, kernel or number of outputs, or ``approx.mode`` does not fit.

    See Also
    --------
    lla_approximation_error : Eq. (15).
    gsa_approximation_error : Eq. (19).

    References
    ----------
    .. [1] W. Li, M. Liu and D. Zhang, "Geometric Interpretation of Running Nyström-Based Kernel
       Machines and Error Analysis".

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.nystrom import NystromKernelRidge, approximation_error
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(80, 2)
    >>> y = np.sin(X[:, 0])
    >>> exact = NystromKernelRidge(mode="exact", alpha=0.1).fit(X, y)
    >>> approx = NystromKernelRidge(mode="spa", n_landmarks=20, alpha=0.1,
    ...                             random_state=0).fit(X, y)
    >>> bool(approximation_error(approx, exact) >= 0)
    True
    """
    if getattr(approx, "mode", None) == "gsa":
        return gsa_approximation_error(approx, exact, K, squared=squared)
    return lla_approximation_error(approx, exact, K, squared=squared)
