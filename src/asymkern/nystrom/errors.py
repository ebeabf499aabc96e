"""Approximation errors of Nyström machines, computed exactly in the Hilbert space (Li, Liu and
Zhang).

f* = X_H α̃ is the exact machine (``mode='exact'``, ``dual_coef_`` α̃) of the same problem: same
training data, kernel and machine parameters (ridge ``alpha`` and ``fit_intercept``; SVM ``svm``,
``nu`` or ``C`` and ``class_weight``; PCA ``center``), else the pair is refused. Then

* LLA / NCR / SPA (eq. (15)): ‖f_LLA − f*‖² = α̂ᵀK̃α̂ + α̃ᵀKα̃ − 2α̂ᵀK̃α̃, with f_LLA = X̃_H α̂ =
  B_H ŵ (eq. (14)). We evaluate it in the equivalent landmark form f_LLA = C_H β (β =
  ``landmark_coef_``), which needs no α̂ and stays valid for k-means landmarks (weak
  equivalence). When the landmarks are combinations of training points — rows of X
  (``'uniform'``, ``'leverage'``, indices: C_H = X_H P) or a Gaussian sketch (C_H = X_H S) —
  f_LLA = X_H b with b = Pβ (resp. Sβ), and (15) is evaluated as the quadratic form of the
  difference, ‖f_LLA − f*‖² = (b − α̃)ᵀK(b − α̃), like eq. (19). The expanded sum of (15) cancels:
  its three terms are each ≈ ‖f*‖², so it cannot resolve a distance below ≈ √ε·‖f*‖ (1.5e-8·‖f*‖);
  the difference form resolves distances down to ≈ √(ε‖K‖)·‖b − α̃‖ (the effect of rounding the
  entries of K itself), far smaller when the coefficients are close. For k-means centres
  (points outside the data) the expanded landmark form βᵀK_mmβ + α̃ᵀKα̃ − 2βᵀK_mn α̃ is used, with
  that resolution. ``formula='eq15'`` evaluates (15) literally from α̂ = G^†ŵ (GSA fits only;
  the same resolution) — the tests check both agree.
* GSA (eq. (19)): ‖f_GSA − f*‖² = (α̃ − α̂)ᵀK(α̃ − α̂), a quadratic form of the difference.

K products stream through :class:`~asymkern.kernels.KernelMatrix` (no n×n matrix) unless a
precomputed ``K`` is passed: a dense array (2-D, real, finite; integer values are taken as
float64), a scipy sparse matrix (multiplied as it is, never densified) or a KernelMatrix, of
shape (n, n) — anything else raises an error naming ``K``. Intercepts are not part of f (the
paper's machines (1) have none). One error per output (KRR target column, libsvm one-vs-one
machine, KPCA component); a float when there is one. For KPCA the sign of each component is
arbitrary, so the smaller of ‖f̂ − f*‖ and ‖f̂ + f*‖ is returned. With ``squared=True`` the raw
squared values come back (they may be −1e-12-ish by rounding; the square roots clip them at 0).
Machines fitted on the torch backend are read through numpy copies of their fitted tensors (the
formulas run on the host).
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
    _check_same_problem(approx, exact)
    at = exact.dual_coef_
    if approx.landmark_coef_ is not None and approx.landmark_coef_.shape[1] != at.shape[1]:
        raise ValueError(f"approx has {approx.landmark_coef_.shape[1]} outputs/machines, "
                         f"exact has {at.shape[1]}")
    return approx, exact, _check_K(K, exact.X_fit_.shape[0]), np.asarray(at, dtype=np.float64)


def _problem_params(est) -> tuple[str, ...]:
    """The parameters that define the machine's problem (1) of Li, Liu and Zhang (its loss and
    regulariser), beside the kernel and the training data: what f* and the approximate f̂ of
    eq. (15) / (19) must share."""
    name = type(est).__name__
    if name == "NystromKernelRidge":
        return ("alpha", "fit_intercept")
    if name == "NystromKernelPCA":
        return ("center",)
    if name == "NystromSVC":  # ν for ν-SVC, C for C-SVC: the other is not read
        return ("svm", "class_weight") + (("nu",) if est.svm == "nusvc" else ("C",))
    return ()


def _equal(a, b) -> bool:
    """Whether two parameter values are equal (numbers, strings, None, dicts)."""
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # values whose comparison is not a truth value
        return False


def _check_same_problem(approx, exact) -> None:
    """Refuse a pair whose machines solve different problems: eq. (15) and (19) measure f̂
    against the optimum f* of the *same* problem (1), so an exact fit with another ridge
    parameter, intercept, centring, solver or ν / C would give a number that is no
    approximation error. ``svm='linearsvc'`` (liblinear's squared hinge, one-vs-rest) has no
    exact counterpart at all."""
    if getattr(approx, "svm", None) == "linearsvc":
        raise ValueError("approx was fitted with svm='linearsvc' (liblinear: squared hinge loss, "
                         "one-vs-rest), which has no exact counterpart (mode='exact' runs "
                         "libsvm); fit approx with svm='nusvc' or 'svc' for approximation errors")
    for name in _problem_params(approx):
        a, b = getattr(approx, name), getattr(exact, name)
        if not _equal(a, b):
            raise ValueError(
                f"approx ({name}={a!r}) and exact ({name}={b!r}) solve different problems: "
                f"eq. (15) / (19) compare f̂ with the exact machine of the same problem; fit "
                f"exact with {name}={a!r}")


def _check_K(K, n: int):
    """The optional training kernel matrix: None, or a dense array (2-D, real, finite; integer
    and boolean values → float64), a scipy sparse matrix (its entries checked; products with it
    need no dense copy) or a :class:`~asymkern.kernels.KernelMatrix`, of shape (n, n)."""
    if K is None:
        return None
    from ..linalg._svd_core import check_matrix

    K, kind = check_matrix(host_copy(K), "K", allow_operator=False)
    if kind not in ("dense", "sparse", "kernel"):
        raise TypeError(f"K must be the ({n}, {n}) training kernel matrix as an array, a sparse "
                        f"matrix or a KernelMatrix, got {type(K).__name__}")
    if tuple(K.shape) != (n, n):
        raise ValueError(f"K must be the ({n}, {n}) training kernel matrix, got shape "
                         f"{tuple(K.shape)}")
    return K


def _Kmat(exact, V, K):
    """K V for the training kernel matrix K (the validated ``K``, else streamed)."""
    if K is not None:
        return np.asarray(K @ V)
    if exact._precomputed():  # X_fit_ is the training kernel matrix itself
        return np.asarray(exact.X_fit_, dtype=np.float64) @ V
    return KernelMatrix(exact._kernel(), exact.X_fit_).matmat(V)


def _quad(D, KD) -> np.ndarray:
    """The quadratic forms d_jᵀ K d_j of the columns of D, given KD = K D."""
    return np.einsum("ij,ij->j", D, KD)


def _lifted_landmark_coef(approx) -> np.ndarray | None:
    """b (n × outputs) with C_H β = X_H b, when the landmarks are combinations of training
    points: rows of X (``b[I] = β``) or a Gaussian sketch C_H = X_H S (``b = Sβ``); None for
    k-means centres (points outside the data)."""
    basis = approx.basis_
    beta = np.asarray(approx.landmark_coef_, dtype=np.float64)
    X = approx.X_fit_
    n = X.shape[0]
    if basis.sketch is not None:
        S = np.asarray(basis.sketch, dtype=np.float64)
        return S @ beta if S.shape == (n, beta.shape[0]) else None
    idx = basis.indices
    if idx is None or basis.centers is None:
        return None
    idx = np.asarray(idx)
    if idx.shape != (beta.shape[0],):
        return None
    rows = X[idx]
    C = basis.centers
    if tuple(rows.shape) != tuple(C.shape) or not _same(rows, C):
        return None  # k-means centres (the indices are only the nearest rows)
    b = np.zeros((n, beta.shape[1]))
    np.add.at(b, idx, beta)
    return b


def _finish(sq, squared):
    sq = np.asarray(sq, dtype=np.float64)
    out = sq if squared else np.sqrt(np.maximum(sq, 0.0))
    return float(out[0]) if out.size == 1 else out


def lla_approximation_error(approx, exact, K=None, *, formula="landmark", squared=False):
    """‖f_LLA − f*‖_H (eq. (15)) for an approx machine in mode lla, ncr, gsa or spa.

    For a GSA fit, f_LLA is the LLA solution it was trained through (Algorithm 1).

    Li, Liu and Zhang, eq. (15): ‖f_LLA − f*‖²_H = α̂ᵀK̃α̂ + α̃ᵀKα̃ − 2α̂ᵀK̃α̃. With landmarks
    that are training rows or a Gaussian sketch (C_H = X_H P, f_LLA = C_H β = X_H Pβ) it is
    computed as the quadratic form of the difference (Pβ − α̃)ᵀK(Pβ − α̃), which does not
    cancel (the expanded sum cannot resolve distances below ≈ √ε·‖f*‖); for k-means centres
    and ``formula='eq15'`` the expanded form is evaluated.

    Parameters
    ----------
    approx : NystromKernelRidge, NystromSVC or NystromKernelPCA
        A fitted Nyström machine (mode 'lla', 'ncr', 'gsa' or 'spa').
    exact : same type as ``approx``
        The same machine fitted with ``mode='exact'`` on the same data and kernel (data,
        kernel and the parameters of the problem are checked; a ``sample_weight`` is not
        kept by the fit, so give both fits the same one).
    K : array-like, sparse matrix or KernelMatrix of shape (n, n), optional
        The training kernel matrix (real and finite); when None, products with K are streamed.
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
        training data, kernel, number of outputs or problem (``alpha``, ``fit_intercept``;
        ``svm``, ``nu`` / ``C``, ``class_weight``; ``center``), ``approx`` was fitted with
        ``svm='linearsvc'``, ``approx.mode`` does not fit, ``formula`` is invalid, or ``K``
        has the wrong shape, is complex or not finite.
    TypeError
        If ``K`` is not numeric or not an array, sparse matrix or KernelMatrix.

    See Also
    --------
    gsa_approximation_error : Eq. (19) for GSA fits.
    approximation_error : Picks the right one of the two.

    References
    ----------
    .. [1] W. Li, M. Liu and D. Zhang, "Geometric Interpretation of Running Nyström-Based Kernel
       Machines and Error Analysis", eq. (14)–(15).

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
    if formula not in ("landmark", "eq15"):
        raise ValueError(f"formula must be 'landmark' or 'eq15', got {formula!r}")
    basis = approx.basis_
    b = _lifted_landmark_coef(approx) if formula == "landmark" else None
    if b is not None:
        # f_LLA − f* = X_H (b − α̃): eq. (15) as the quadratic form of the difference (as eq.
        # (19)); no cancellation between ‖f_LLA‖² and ‖f*‖² (both ≈ the cross term when the
        # error is small), so errors down to the rounding of K (b − α̃) are resolved
        D = b - at
        if isinstance(approx, NystromKernelPCA):  # sign of each component: min over ±f*
            k = D.shape[1]
            Sg = b + at
            KDS = _Kmat(exact, np.hstack([D, Sg]), K)
            sq = np.minimum(_quad(D, KDS[:, :k]), _quad(Sg, KDS[:, k:]))
        else:
            sq = _quad(D, _Kmat(exact, D, K))
        return _finish(sq, squared)
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
        The same machine fitted with ``mode='exact'`` on the same data and kernel (data,
        kernel and the parameters of the problem are checked; a ``sample_weight`` is not
        kept by the fit, so give both fits the same one).
    K : array-like, sparse matrix or KernelMatrix of shape (n, n), optional
        The training kernel matrix (real and finite); when None, products with K are streamed.
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
        training data, kernel, number of outputs or problem (``alpha``, ``fit_intercept``;
        ``svm``, ``nu`` / ``C``, ``class_weight``; ``center``), ``approx`` was fitted with
        ``svm='linearsvc'``, ``approx.mode`` does not fit, or ``K`` has the wrong shape, is
        complex or not finite.
    TypeError
        If ``K`` is not numeric or not an array, sparse matrix or KernelMatrix.

    See Also
    --------
    lla_approximation_error : Eq. (15) for LLA / NCR / SPA fits.
    approximation_error : Picks the right one of the two.

    References
    ----------
    .. [1] W. Li, M. Liu and D. Zhang, "Geometric Interpretation of Running Nyström-Based Kernel
       Machines and Error Analysis", eq. (19).

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
    D = at - ah  # eq. (19) is already the quadratic form of a difference: no cancellation
    sq = _quad(D, _Kmat(exact, D, K))
    if isinstance(approx, NystromKernelPCA):
        S = at + ah
        sq = np.minimum(sq, _quad(S, _Kmat(exact, S, K)))
    return _finish(sq, squared)


def approximation_error(approx, exact, K=None, *, squared=False):
    """‖f̂ − f*‖_H: eq. (19) for a GSA fit, eq. (15) for LLA / NCR / SPA fits.

    Parameters
    ----------
    approx : NystromKernelRidge, NystromSVC or NystromKernelPCA
        A fitted Nyström machine.
    exact : same type as ``approx``
        The same machine fitted with ``mode='exact'`` on the same data and kernel (data,
        kernel and the parameters of the problem are checked; a ``sample_weight`` is not
        kept by the fit, so give both fits the same one).
    K : array-like, sparse matrix or KernelMatrix of shape (n, n), optional
        The training kernel matrix (real and finite); when None, products with K are streamed.
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
        training data, kernel, number of outputs or problem (``alpha``, ``fit_intercept``;
        ``svm``, ``nu`` / ``C``, ``class_weight``; ``center``), ``approx`` was fitted with
        ``svm='linearsvc'``, ``approx.mode`` does not fit, or ``K`` has the wrong shape, is
        complex or not finite.
    TypeError
        If ``K`` is not numeric or not an array, sparse matrix or KernelMatrix.

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
