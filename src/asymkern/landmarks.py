"""Landmark selection for Nyström methods (shared by the Nyström machines and asymmetric Nyström).

A functional API. :func:`select_landmarks` returns *indices* of rows of ``X`` (unique ints):

* ``'uniform'``  — m rows drawn uniformly without replacement (Li, Liu and Zhang, §IV; Tao et
  al. (2024), §3);
* ``'leverage'`` — m rows drawn without replacement with probabilities proportional to
  approximate rank-m leverage scores of the kernel matrix (Gittens & Mahoney's "approximate
  leverage score" sampling, used in Li, Liu and Zhang, §IV): the leverage scores are the squared
  row norms of the top-m left singular vectors of a uniform Nyström feature matrix with ``1.5m``
  landmarks (see :func:`leverage_scores`);
* ``'kmeans'``   — k-means with m clusters (Zhang & Kwok's clustering-based Nyström; Li, Liu and
  Zhang, §IV); as *indices* this returns the training row nearest to each centre (unique). The
  centres themselves — which Li, Liu and Zhang use as landmarks, points *outside* the data —
  come from :func:`kmeans_landmarks` with ``return_centers=True``;
* ``'fixed'``    — the given ``indices`` (validated: in range, unique).

``'gaussian'`` (Li, Liu and Zhang, §IV, "Gaussian sampling") is *not* a subset of rows: it is a
Gaussian sketch, landmarks C_H = X_H S with S an n×m standard normal matrix (Gittens & Mahoney),
so that K_nm = K S and K_mm = SᵀKS. :func:`gaussian_sketch` returns S; ``select_landmarks(...,
method='gaussian')`` raises a ValueError that says so.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp

from ._validation import (
    as_data,
    check_bool,
    check_indices,
    check_n_components,
    check_random_state,
)

__all__ = [
    "LANDMARK_METHODS",
    "gaussian_sketch",
    "kmeans_landmarks",
    "leverage_scores",
    "nearest_rows",
    "select_landmarks",
]

LANDMARK_METHODS = ("uniform", "leverage", "kmeans", "fixed", "gaussian")


def _check_m(n_landmarks, n: int, name: str = "n_landmarks") -> int:
    """A positive integer count ``n_landmarks``, at most ``n``."""
    m = check_n_components(n_landmarks, np.inf, name)
    if m > n:
        raise ValueError(
            f"{name}={m} is larger than the number of samples n={n}; "
            "a landmark subset cannot have more points than the data"
        )
    return m


def _n_of(X_or_None, n_samples) -> int:
    """n: the rows of X, or ``n_samples`` (which, given with X, must equal its row count)."""
    if X_or_None is None and n_samples is None:
        raise ValueError("give X or n_samples to select landmarks")
    if n_samples is not None and (isinstance(n_samples, (bool, np.bool_))
                                  or not isinstance(n_samples, numbers.Integral)
                                  or n_samples < 1):
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    if X_or_None is None:
        return int(n_samples)  # type: ignore[arg-type]  # checked an Integral just above
    n = int(np.shape(X_or_None)[0])
    if n_samples is not None and int(n_samples) != n:
        raise ValueError(f"n_samples={n_samples!r} contradicts X, which has {n} rows; give "
                         "one of them (or both equal)")
    return n


def _pow2_scaled(X, what: str):
    """``(X·2^-e, e)``: X (dense or sparse) multiplied by the exact power of two that brings
    max|X| into [0.5, 1) when it lies outside the range in which squares and sums of squares
    of its entries neither overflow nor underflow (``kernels.base._needs_scaling``); ``(X, 0)``
    — the same object, so ordinary data give bitwise the old results — otherwise.

    k-means, nearest-point searches and the leverage scores of a homogeneous kernel are the
    same problem up to this scaling (multiplying by a power of two is exact), so they are run
    on the scaled copy. The copy is checked against the memory budget first.
    """
    from .config import check_memory
    from .kernels.base import _maxabs, _needs_scaling, _pow2_exponent

    dtype = np.dtype(X.dtype)
    if not np.issubdtype(dtype, np.floating):
        return X, 0
    big = _maxabs(X)
    if not (np.isfinite(big) and _needs_scaling(big, dtype)):
        return X, 0
    e = _pow2_exponent(big, dtype)
    f = dtype.type(math.ldexp(1.0, -e))
    if sp.issparse(X):
        check_memory(X.data.nbytes, f"{what} (a rescaled copy of the data)",
                     detail=f"{X.nnz} stored values of {dtype}")
        Xs = X.copy()
        Xs.data = Xs.data * f
        return Xs, e
    check_memory(X.nbytes, f"{what} (a rescaled copy of the data)",
                 detail=f"a {X.shape[0]}×{X.shape[1]} array of {dtype}")
    return X * f, e


def _unscaled(A: np.ndarray, e: int) -> np.ndarray:
    """A·2^e (exact), A itself for e = 0."""
    return A if e == 0 else A * A.dtype.type(math.ldexp(1.0, e))


#: Entries of a block of distance bounds in :func:`nearest_rows` at most (16 MiB of float64 per
#: array: few enough blocks that the per-block merge costs little), unless the budget allows fewer
_BLOCK_ENTRIES = 1 << 21


def _rows_of(points, a: int, b: int, c: np.ndarray | None, f: float):
    """Rows [a, b) of ``points`` in float64, shifted by ``c`` (dense only) and multiplied by the
    power of two ``f``: a dense array, or a CSR matrix for sparse points."""
    P = points[a:b]
    if sp.issparse(P):
        P = sp.csr_matrix(P, dtype=np.float64)
        P.data = P.data * f
        return P
    P = np.asarray(P, dtype=np.float64)
    return (P - c) * f if c is not None else P * f


def _nearest_rows_nbytes(q: int, k: int, step: int, d: int, batch_bytes: float) -> float:
    """Peak bytes of :func:`nearest_rows` for ``q`` queries of ``d`` features, ``k`` neighbours
    and blocks of ``step`` points: the q×k best distances and indices with their merges and
    sorts (traced at most 14 q×k float64 arrays at once, counted as 16), per pair of a block
    its bounds and the candidates' merge with the best so far (up to 10 values per pair when
    every pair is a candidate), and the direct differences of :func:`pair_sq_dists` (three
    arrays of d values per pair, in batches of at most ``batch_bytes``)."""
    from .kernels.base import _REFINE_BATCH

    pairs = float(q) * step
    direct = 24.0 * d * min(pairs, _REFINE_BATCH, max(1.0, batch_bytes // (24 * max(d, 1))))
    return 8.0 * q * (16.0 * k + 10.0 * step) + direct


def nearest_rows(queries, points, k: int = 1, *, skip: int | None = None, exclude=None):
    """The ``k`` rows of ``points`` nearest to each query (Euclidean), nearest first, ties by index.

    Exact up to the rounding of the squared distances themselves, wherever the data lie: the
    expansion ‖q − c‖² + ‖p − c‖² − 2(q − c)ᵀ(p − c) (one GEMM per block of points) is taken
    about the mean c of the queries (translation invariant; sparse points are not shifted),
    and its error is bounded by ε_d(‖q − c‖² + ‖p − c‖²), ε_d = 10(d + 4)·eps (Higham,
    *Accuracy and Stability of Numerical Algorithms*, §3.1, for the (d + 2)-term products and
    the shift, with a margin that also covers the rounding of the direct sums below and of the
    bounds themselves). Every pair whose lower
    bound does not exceed the k-th smallest upper bound of its query — which includes the k
    nearest — is recomputed directly as Σ_k (q_k − p_k)² from the unshifted data, and the k
    smallest of those values are kept. Without this, data far from the origin (unit-scale data
    at an offset of 1e8: the expanded distances are rounded by about 1) or far from the
    centre (a few outliers pulling the mean) give nearest rows that are not the nearest. For
    ordinary data about k pairs per query are recomputed. Data whose centred squares could
    over- or underflow are multiplied by one power of two first (exact), so the result does
    not depend on their scale either.

    Parameters
    ----------
    queries : array-like of shape (q, d)
        The query rows (dense).
    points : array-like or sparse matrix of shape (n, d)
        The rows searched, in blocks of at most ``working_memory`` (``asymkern.get_config()``).
    k : int, default 1
        Neighbours per query, at most the number of eligible rows.
    skip : int or None, default None
        Query i is the row ``skip + i`` of ``points`` and is not its own neighbour (an
        integer, not a bool).
    exclude : ndarray of bool of shape (n,), optional
        Rows that are never neighbours: a mask, boolean or 0/1 (an index array is refused).

    Returns
    -------
    indices : ndarray of shape (q, k)
        Row indices into ``points``, nearest first (the lower index first on equal distances).
    sq_dists : ndarray of shape (q, k)
        Their squared distances times 2^(−2e), for one power of two 2^e common to the call
        (e = 0 unless the data are so large or small that their squares could over- or
        underflow): comparable within the call.

    Raises
    ------
    ValueError
        If ``k`` is not an integer between 1 and the number of eligible rows, the feature
        counts of ``queries`` and ``points`` differ, either holds a value that is not finite,
        ``exclude`` is not a boolean mask with one entry per row of ``points``, or ``skip`` is
        not an integer that puts every query inside ``points``.
    MemoryBudgetError
        If the q×k neighbour arrays and one block's pairs (about 8q(16k + 10·block) bytes,
        and the direct differences within ``working_memory``) exceed ``max_dense_memory``:
        ask for fewer queries per call.

    See Also
    --------
    kmeans_landmarks : k-means landmarks; the rows nearest to the centres come from here.

    Examples
    --------
    Unit-scale points far from the origin, where the expansion about the origin rounds the
    squared distances by about 1:

    >>> import numpy as np
    >>> from asymkern.landmarks import nearest_rows
    >>> P = 1e8 + np.array([[0.0, 0.0], [0.5, 0.0], [3.0, 1.0]])
    >>> idx, d2 = nearest_rows(P[[2]] + 0.25, P, k=2)
    >>> idx.tolist(), d2.tolist()
    ([[2, 1]], [[0.125, 9.125]])
    """
    from .config import check_memory, get_config
    from .kernels.base import _maxabs, _needs_scaling, _pow2_exponent, pair_sq_dists

    qshape = queries.shape if sp.issparse(queries) else np.shape(queries)
    pshape = points.shape if sp.issparse(points) else np.shape(points)
    if len(qshape) != 2 or len(pshape) != 2 or qshape[1] != pshape[1]:
        raise ValueError(f"queries and points must be 2-D with equal feature counts, got shapes "
                         f"{tuple(qshape)} and {tuple(pshape)}")
    Q = as_data(queries, "queries", dtype=np.float64, min_samples=0)  # real, finite
    points = as_data(points, "points", allow_sparse=True, min_samples=0)
    q, d = Q.shape
    n = points.shape[0]
    excl = np.zeros(n, dtype=bool) if exclude is None else np.asarray(exclude)
    if excl.dtype != bool:  # a 0/1 mask; any other value is an index array, not a mask
        if not (np.issubdtype(excl.dtype, np.number) and np.isin(excl, (0, 1)).all()):
            raise ValueError(f"exclude must be a mask (bool, or 0/1) with one entry per row of "
                             f"points, not indices; got dtype {excl.dtype}")
        excl = excl.astype(bool)
    if excl.shape != (n,):
        raise ValueError(f"exclude must have one entry per row of points ({n}), got shape "
                         f"{excl.shape}")
    if skip is not None and not (isinstance(skip, numbers.Integral)
                                 and not isinstance(skip, (bool, np.bool_))
                                 and 0 <= skip and skip + q <= n):
        raise ValueError(f"skip must be an integer with skip + len(queries) <= {n} (query i is "
                         f"row skip + i of points), got {skip!r}")
    eligible = max(n - int(excl.sum()) - (1 if skip is not None else 0), 0)
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= eligible:
        raise ValueError(f"k must be an integer between 1 and the {eligible} eligible rows, got "
                         f"{k!r}")
    k = int(k)
    budget = int(get_config()["working_memory"] * 2**20)
    # one block of points (d values per row) and six q-row arrays of distances and bounds
    step = max(1, min(budget // (8 * (d + 6 * max(q, 1))), _BLOCK_ENTRIES // max(q, 1)))
    check_memory(_nearest_rows_nbytes(q, k, min(step, n), d, budget), "nearest_rows",
                 "fewer queries per call (or a smaller k)",
                 detail=f"{q} queries × {k} neighbours and {q}×{min(step, n)} blocks")
    sparse = sp.issparse(points)
    c = None if sparse or q == 0 else Q.mean(axis=0)
    # one power of two for the whole call, from the largest shifted magnitude (fl(p − c) is
    # monotonic in p, so the column extremes give max |p − c| without a shifted copy)
    Qc = Q if c is None else Q - c
    big = _maxabs(Qc)
    for a in range(0, n, step):
        B = points[a:a + step]
        if sparse or c is None:
            big = max(big, _maxabs(B))
        elif B.shape[0]:
            big = max(big, float(np.max(np.maximum(np.subtract(B.max(axis=0), c),
                                                   np.subtract(c, B.min(axis=0))))))
    e = _pow2_exponent(big, np.float64) if np.isfinite(big) and _needs_scaling(
        big, np.float64) else 0
    f = math.ldexp(1.0, -e)
    Qc = Qc * f
    qq = np.einsum("ij,ij->i", Qc, Qc)
    # bound of the expansion's error relative to ‖q − c‖² + ‖p − c‖² (with a margin for the
    # rounding of the bounds themselves)
    tol = 10.0 * (d + 4) * np.finfo(np.float64).eps
    Qm2 = -2.0 * Qc  # exact
    q_hi, q_lo = qq * (1.0 + tol), qq * (1.0 - tol)
    best_d = np.full((q, k), np.inf)
    best_i = np.full((q, k), -1, dtype=np.intp)
    rows_q = np.arange(q)
    for a in range(0, n, step):
        b = min(n, a + step)
        P = _rows_of(points, a, b, c, f)
        pp = np.asarray(P.multiply(P).sum(axis=1)).ravel() if sparse else np.einsum(
            "ij,ij->i", P, P)
        # −2(q − c)ᵀ(p − c); the bounds ‖q − c‖²(1 ± tol) + ‖p − c‖²(1 ± tol) − 2(q − c)ᵀ(p − c)
        # of the squared distances, with the row terms q_hi, q_lo added where needed
        lo = np.asarray((P @ Qm2.T).T) if sparse else Qm2 @ P.T
        with np.errstate(over="ignore", invalid="ignore"):
            hi = lo + pp * (1.0 + tol)
            lo += pp * (1.0 - tol)
        # rows that are no neighbours: upper bound inf, lower bound nan (never a candidate)
        out_cols = np.flatnonzero(excl[a:b])
        hi[:, out_cols] = np.inf
        lo[:, out_cols] = np.nan
        if skip is not None:
            own = rows_q + skip - a
            inside = (own >= 0) & (own < b - a)
            hi[rows_q[inside], own[inside]] = np.inf
            lo[rows_q[inside], own[inside]] = np.nan
        # t: the k-th smallest upper bound among the best so far and this block's
        with np.errstate(over="ignore", invalid="ignore"):
            if k == 1:
                t = np.minimum(best_d[:, 0], hi.min(axis=1) + q_hi)
            else:
                if hi.shape[1] > k:
                    hi.partition(k - 1, axis=1)
                hi = np.concatenate([best_d, hi[:, :k] + q_hi[:, None]], axis=1)
                hi.partition(k - 1, axis=1)
                t = hi[:, k - 1]
            t = t - q_lo
        with np.errstate(invalid="ignore"):
            I, J = np.divmod(np.flatnonzero(lo <= t[:, None]), b - a)  # (faster than nonzero)
        if I.size == 0:
            continue
        exact = pair_sq_dists(Q, points, I, J + a, f, budget)
        keep = best_i.ravel() >= 0
        rows = np.concatenate([np.repeat(rows_q, k)[keep], I])
        cols = np.concatenate([best_i.ravel()[keep], J + a])
        vals = np.concatenate([best_d.ravel()[keep], exact])
        order = np.lexsort((cols, vals, rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        rank = np.arange(rows.size) - np.searchsorted(rows, rows)
        top = rank < k
        best_d[rows[top], rank[top]] = vals[top]
        best_i[rows[top], rank[top]] = cols[top]
    return best_i, best_d


def nearest_points(centers, points) -> np.ndarray:
    """For each centre, the index of the nearest row of ``points`` (the first one on ties).

    :func:`nearest_rows` with k = 1: exact up to the rounding of the squared distances, for
    data at any offset from the origin (unit-scale data at 1e8: scikit-learn's expanded
    ``pairwise_distances_argmin`` picked rows up to 2 units from the nearest) and at any scale
    (data ~1e160 or ~1e-200 are searched multiplied by an exact power of two).

    Parameters
    ----------
    centers : ndarray of shape (s, d)
        The centres.
    points : ndarray or sparse matrix of shape (n, d)
        The points.

    Returns
    -------
    ndarray of shape (s,)
        Row indices into ``points``.
    """
    return nearest_rows(np.asarray(centers), points, 1)[0][:, 0]


def gaussian_sketch(n_samples: int, n_landmarks: int, random_state=None, dtype=np.float64):
    """Gaussian sketching matrix S (n × m, i.i.d. N(0, 1/m)): landmarks C_H = X_H S.

    The scale does not matter to any Nyström approximation (K_nm K_mm^† K_mn is invariant to
    S ↦ S D for invertible D); 1/√m keeps the entries of K_mm = SᵀKS of order one.

    Parameters
    ----------
    n_samples : int
        n, the number of data points.
    n_landmarks : int
        m, 1 ≤ m ≤ n.
    random_state : None, int or RandomState, default None
        Seed (a ``numpy.random.Generator`` is refused, the library's convention).
    dtype : {numpy.float64, numpy.float32}, default numpy.float64
        Result dtype.

    Returns
    -------
    ndarray of shape (n_samples, n_landmarks)
        The sketch S.

    Raises
    ------
    TypeError
        If ``n_samples`` or ``n_landmarks`` is not an integer (Python or numpy; a float such
        as 2.0 is refused rather than truncated), or ``random_state`` is a Generator or a bool.
    ValueError
        If ``n_samples`` < 1, ``n_landmarks`` is not in [1, n_samples], or ``dtype`` is not
        float32 or float64 (an integer sketch would truncate the draws).

    See Also
    --------
    select_landmarks : Landmarks that are data points.

    References
    ----------
    .. [1] Y. Li, Y. Liu and Q. Zhang, "Geometric Interpretation of Running Nyström-Based
       Kernel Machines and Error Analysis", §IV (Gaussian sampler).

    Examples
    --------
    >>> from asymkern.landmarks import gaussian_sketch
    >>> gaussian_sketch(100, 10, random_state=0).shape
    (100, 10)
    """
    n = check_n_components(n_samples, np.iinfo(np.int64).max, "n_samples")
    m = _check_m(n_landmarks, n)
    try:
        out_dtype = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"dtype must be a floating dtype (float32 or float64), got "
                        f"{dtype!r}") from exc
    if out_dtype not in (np.float32, np.float64):
        # an integer or boolean sketch would truncate the normal draws (mostly to 0)
        raise ValueError(f"dtype must be float32 or float64, got {out_dtype}")
    rng = check_random_state(random_state)
    return (rng.standard_normal((n, m)) / np.sqrt(m)).astype(out_dtype, copy=False)


def leverage_scores(X, rank: int, kernel="rbf", kernel_params=None, random_state=None,
                    oversampling: float = 1.5) -> np.ndarray:
    """Approximate rank-``rank`` leverage scores of the kernel matrix of ``X`` (sum = rank').

    A uniform Nyström feature map F (n × p, p = min(n, ⌈oversampling·rank⌉) landmarks, eigenvalue
    cut-off as in :mod:`asymkern.nystrom`) approximates K ≈ F Fᵀ; the scores are the squared row
    norms of the top-``rank`` left singular vectors of F. Cost O(n p² + n p d).

    The scores do not change when K is multiplied by a positive constant; extreme magnitudes
    are handled by exact powers of two: K_mm, F and FᵀF are rescaled when their squares could
    over- or underflow, and for the homogeneous kernels (linear; polynomial with
    ``coef0=0``), whose values at data ~1e-200 or ~1e160 are not representable, the data are
    rescaled first — the same scores at every scale of X. Data of ordinary size give bitwise
    the unscaled computation.

    A sketch on which the kernel vanishes (K_mm = 0, e.g. all-zero data with the linear
    kernel) has numerical rank 0: every score is 0 (all rows equal, summing to the numerical
    rank), and :func:`select_landmarks` then draws uniformly.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
        Data.
    rank : int
        Target rank, 1 ≤ rank ≤ n.
    kernel : str, Kernel or callable, default 'rbf'
        The kernel (anything :func:`~asymkern.kernels.get_kernel` accepts). For an
        asymmetric kernel (SNE, T, softmax) the scores are those of the symmetric part
        (K_mm + K_mmᵀ)/2 of the sketch: a distribution to draw landmarks from, which the
        Nyström solve that uses them does not symmetrise.
    kernel_params : dict, optional
        Its parameters.
    random_state : None, int or RandomState, default None
        Seed of the uniform landmarks.
    oversampling : float, default 1.5
        Landmarks per unit of rank, a finite number ≥ 1.

    Returns
    -------
    ndarray of shape (n,)
        Non-negative scores summing to the numerical rank (≤ ``rank``; 0, all scores 0, when
        the kernel vanishes on the sketch).

    Raises
    ------
    TypeError
        If ``rank`` is not an integer or ``oversampling`` not a real number.
    ValueError
        If ``rank`` is out of range, ``oversampling`` is not a finite number ≥ 1, or the data
        are invalid.

    See Also
    --------
    select_landmarks : ``method='leverage'`` samples by these scores.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.landmarks import leverage_scores
    >>> X = np.random.default_rng(0).standard_normal((50, 2))
    >>> s = leverage_scores(X, 5, random_state=0)
    >>> s.shape, round(float(s.sum()), 6)
    ((50,), 5.0)
    """
    from .kernels import get_kernel

    X = as_data(X, "X", allow_sparse=True)
    n = X.shape[0]
    rank = _check_m(rank, n, "rank")
    if isinstance(oversampling, bool) or not isinstance(oversampling, numbers.Real):
        raise TypeError(f"oversampling must be a real number >= 1, got {oversampling!r}")
    if not (np.isfinite(oversampling) and oversampling >= 1):
        raise ValueError(f"oversampling must be a finite number >= 1 (landmarks per unit of "
                         f"rank), got {oversampling!r}")
    kern = get_kernel(kernel, **(kernel_params or {}))
    if _homogeneous(kern):  # k(cX, cZ) = c^q k(X, Z): the same scores for the scaled data
        X, _ = _pow2_scaled(X, "leverage_scores")
    XI, B = leverage_sketch(kern, n, rank, check_random_state(random_state),
                            lambda idx: X[idx], oversampling)
    F = np.asarray(kern(X, XI), dtype=np.float64) @ B
    F, _ = _pow2_scaled(F, "leverage_scores")  # the scores of F and of F·2^-e are equal
    U = F @ leverage_directions(F.T @ F, rank)
    return np.einsum("ij,ij->i", U, U)


def _homogeneous(kern) -> bool:
    """Whether k(cx, cz) = c^q k(x, z) for c > 0: the linear kernel, and the polynomial kernel
    with coef0 = 0. Leverage scores do not change when every kernel value is multiplied by the
    same positive number, so for these kernels the data may be rescaled."""
    from .kernels.pairwise import LinearKernel, PolynomialKernel

    if type(kern) is LinearKernel:
        return True
    return type(kern) is PolynomialKernel and float(kern.coef0) == 0.0


def leverage_sketch(kern, n: int, rank: int, rng, take_rows, oversampling: float = 1.5):
    """The uniform Nyström sketch of :func:`leverage_scores`: ``(XI, B)`` with F = k(·, XI) B.

    XI are p = min(n, ⌈oversampling·rank⌉) rows drawn uniformly by ``rng`` (``take_rows(idx)``
    fetches them: numpy indexing, or a gather from a Dask array) and B = V Λ^{-1/2} whitens
    their Gram matrix, eigenvalues at or below p·eps·λ_max dropped (none kept when K_mm has no
    positive eigenvalue: B is p × 0). K_mm is symmetrised, (K_mm + K_mmᵀ)/2 (the scores of an
    asymmetric kernel are those of its symmetric part). K_mm of extreme magnitude is scaled
    by an exact even power of two 2^-e before the eigenproblem and B by 2^{-e/2} after it.
    Shared by the in-memory scores and the Dask executor's two passes over the row chunks.
    """
    p = min(n, max(rank, int(np.ceil(oversampling * rank))))
    XI = take_rows(np.sort(rng.choice(n, p, replace=False)))
    Kmm = np.asarray(kern(XI), dtype=np.float64)
    # an asymmetric kernel (SNE, T, softmax) is sampled by the scores of the sketch's
    # symmetric part (documented in leverage_scores: a sampling distribution, not a result)
    Kmm, e = _even_pow2_scaled((Kmm + Kmm.T) / 2)
    lam, V = np.linalg.eigh(Kmm)
    keep = lam > lam.max() * p * np.finfo(np.float64).eps if lam.max() > 0 else lam > 0
    # (Kmm 2^-e)^{-1/2} 2^{-e/2} whitens Kmm; e is even, so the factor is exact
    return XI, _unscaled(V[:, keep] / np.sqrt(lam[keep]), -e // 2)


def _even_pow2_scaled(A: np.ndarray):
    """``(A·2^-e, e)`` with an even e, so that square roots scale by the exact 2^{-e/2}; e = 0
    (A itself) when the entries of A are of ordinary size."""
    As, e = _pow2_scaled(A, "leverage scores")
    if e % 2:
        As, e = As * 0.5, e + 1
    return As, e


def leverage_directions(FtF: np.ndarray, rank: int) -> np.ndarray:
    """W_k S_k⁻¹ from the eigenproblem of FᵀF, so that U_k = F W_k S_k⁻¹ are the top-k left
    singular vectors of F (k ≤ ``rank``, directions at the rounding level dropped).

    k = 0 (a (p, 0) array, hence all-zero scores) when FᵀF has no positive eigenvalue or is
    empty: a sketch on which the kernel vanishes. FᵀF of extreme magnitude is scaled by an
    exact power of two first (the directions are scaled back).
    """
    FtF, e = _even_pow2_scaled(np.asarray(FtF, dtype=np.float64))
    s2, W = np.linalg.eigh(FtF)
    s2, W = s2[::-1], W[:, ::-1]
    if s2.size == 0 or not s2[0] > 0:
        return W[:, :0]
    k = int(min(rank, np.sum(s2 > s2[0] * FtF.shape[0] * np.finfo(np.float64).eps)))
    return _unscaled(W[:, :k] / np.sqrt(s2[:k]), -e // 2)


def leverage_draw(scores: np.ndarray, m: int, rng) -> np.ndarray:
    """m distinct indices drawn by ``rng`` with probabilities ∝ the (clipped) ``scores``."""
    p = np.maximum(scores, 0) + 1e-12 * max(scores.max(), 1e-300)
    return rng.choice(scores.shape[0], m, replace=False, p=p / p.sum()).astype(np.intp)


def sampled_kmeans(n: int, s: int, rng, take_rows) -> np.ndarray:
    """Centres of k-means with s clusters on max(20s, 2000) rows drawn uniformly by ``rng``.

    The memory-bounded k-means of large inputs (in memory above 20 000 points, and on Dask):
    ``take_rows(idx)`` fetches the sample; mini-batch k-means above 20 000 sampled rows. A
    sample so large or small that its squared distances over- or underflow is clustered scaled
    by an exact power of two, and the centres are scaled back (the same centres at every scale).
    """
    from sklearn.cluster import KMeans, MiniBatchKMeans

    fit_n = min(n, max(20 * s, 2000))
    sub = rng.choice(n, fit_n, replace=False) if fit_n < n else np.arange(n)
    seed = int(rng.randint(0, 2**31 - 1))
    km_cls = KMeans if fit_n <= 20000 else MiniBatchKMeans
    # k-means of the sample scaled by an exact power of two when its squared distances could
    # over- or underflow (the same clustering up to scale), centres scaled back
    sample, e = _pow2_scaled(take_rows(sub), "k-means landmarks")
    centers = km_cls(n_clusters=s, n_init=1, random_state=seed).fit(sample).cluster_centers_
    return _unscaled(centers, e)


def unique_topped_up(idx: np.ndarray, n: int, s: int, rng) -> np.ndarray:
    """The distinct entries of ``idx``, topped up to s with uniform draws from the rest; sorted."""
    idx = np.unique(idx)
    if idx.size < s:
        rest = np.setdiff1d(np.arange(n), idx)
        idx = np.concatenate([idx, rng.choice(rest, s - idx.size, replace=False)])
    return np.sort(idx)


def kmeans_landmarks(X, n_landmarks: int, return_centers: bool = True, random_state=None,
                     max_iter: int = 20, n_init: int = 1):
    """k-means landmarks (Li, Liu and Zhang, §IV): ``(indices, centers)`` or ``indices``.

    ``centers`` (m × d) are the k-means centres (scikit-learn ``KMeans``, ``n_init`` runs of at
    most ``max_iter`` Lloyd iterations); ``indices`` are the distinct training rows nearest to the
    centres — the centres in order of the distance to their nearest row (ties: the lower centre
    index first), each taking its nearest unused row (ties: the lower row index), so exactly m
    unique indices come back. Empty clusters are impossible in scikit-learn's KMeans. The
    distances are exact up to their own rounding (:func:`nearest_rows`), so the indices do not
    depend on an offset of X (scikit-learn's expanded ``pairwise_distances`` picked other rows
    for unit-scale data at 1e8). The result does not depend on the scale of X either: data so
    large or small that squared distances would over- or underflow are clustered after
    multiplication by an exact power of two, and the centres are scaled back.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
        Data.
    n_landmarks : int
        m, 1 ≤ m ≤ n.
    return_centers : bool, default True
        Also return the centres.
    random_state : None, int or RandomState, default None
        Seed of k-means.
    max_iter : int, default 20
        Lloyd iterations per run.
    n_init : int, default 1
        k-means runs.

    Returns
    -------
    indices : ndarray of shape (m,)
        Distinct row indices nearest to the centres.
    centers : ndarray of shape (m, d)
        The centres (only with ``return_centers``).

    Raises
    ------
    TypeError
        If ``n_landmarks``, ``max_iter`` or ``n_init`` is not an integer, ``return_centers``
        not a bool, or ``random_state`` a Generator or a bool.
    ValueError
        If ``n_landmarks`` is out of range, or ``max_iter`` or ``n_init`` is < 1.

    See Also
    --------
    select_landmarks : ``method='kmeans'``.

    References
    ----------
    .. [1] Y. Li, Y. Liu and Q. Zhang, "Geometric Interpretation of Running Nyström-Based
       Kernel Machines and Error Analysis", §IV.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.landmarks import kmeans_landmarks
    >>> X = np.array([[0.0], [0.1], [5.0], [5.1]])
    >>> idx, C = kmeans_landmarks(X, 2, random_state=0)
    >>> sorted(int(i) // 2 for i in idx), C.shape     # one point from each cluster
    ([0, 1], (2, 1))
    """
    from sklearn.cluster import KMeans

    X = as_data(X, "X", allow_sparse=True)
    m = _check_m(n_landmarks, X.shape[0])
    return_centers = check_bool(return_centers, "return_centers")
    max_iter = check_n_components(max_iter, np.iinfo(np.int32).max, "max_iter")
    n_init = check_n_components(n_init, np.iinfo(np.int32).max, "n_init")
    km = KMeans(n_clusters=m, n_init=n_init, max_iter=max_iter,
                random_state=check_random_state(random_state).randint(2**31 - 1))
    # k-means is the same problem up to scale: data whose squared distances would over- or
    # underflow (max|X| beyond 2^±256 in float64) are clustered multiplied by an exact power
    # of two; ordinary data are used as they are (bitwise the old result)
    Xs, e = _pow2_scaled(X, "kmeans_landmarks")
    km.fit(Xs)
    centers = np.asarray(km.cluster_centers_, dtype=X.dtype)
    # the nearest rows by exact distances (nearest_rows: not the expansion about the origin,
    # which at an offset of 1e8 is rounded by more than the distances themselves); centres in
    # order of their nearest distance, each taking its nearest unused row
    near, dist = nearest_rows(centers, Xs, 1)
    used = np.zeros(Xs.shape[0], dtype=bool)
    idx = np.empty(m, dtype=np.intp)
    for j in np.argsort(dist[:, 0], kind="stable"):
        i = near[j, 0]
        if used[i]:
            i = nearest_rows(centers[j:j + 1], Xs, 1, exclude=used)[0][0, 0]
        idx[j] = i
        used[i] = True
    centers = _unscaled(centers, e)
    return (idx, centers) if return_centers else idx


def select_landmarks(
    X_or_None,
    n_landmarks: int,
    method: str = "uniform",
    random_state=None,
    indices=None,
    kernel="rbf",
    kernel_params=None,
    n_samples: int | None = None,
) -> np.ndarray:
    """Indices (unique ints, length ``n_landmarks``) of the landmark rows of ``X``.

    ``X_or_None`` may be None for ``'uniform'`` and ``'fixed'`` when ``n_samples`` is given.
    ``kernel``/``kernel_params`` are used by ``'leverage'`` only. Uniform indices are returned
    sorted; leverage and k-means indices in sampling order.

    Parameters
    ----------
    X_or_None : array-like, sparse matrix of shape (n, d), or None
        Data (None allowed for ``'uniform'`` and ``'fixed'`` with ``n_samples``).
    n_landmarks : int
        m, 1 ≤ m ≤ n.
    method : {'uniform', 'leverage', 'kmeans', 'fixed'}, default 'uniform'
        The sampler (``'gaussian'`` raises: use :func:`gaussian_sketch`).
    random_state : None, int or RandomState, default None
        Seed.
    indices : array-like of int, optional
        The landmarks of ``'fixed'``.
    kernel : str, Kernel or callable, default 'rbf'
        Kernel of ``'leverage'``.
    kernel_params : dict, optional
        Its parameters.
    n_samples : int, optional
        n when ``X_or_None`` is None (with X: must equal its number of rows).

    Returns
    -------
    ndarray of shape (n_landmarks,)
        Unique row indices (intp).

    Raises
    ------
    ValueError
        If m > n, the method is unknown or ``'gaussian'``, fixed indices are out of range,
        duplicated or of the wrong length, a method that needs X gets none, ``n_samples``
        differs from the rows of X.
    TypeError
        If ``n_landmarks`` is not an integer or ``random_state`` is a Generator or a bool.

    See Also
    --------
    kmeans_landmarks, leverage_scores, gaussian_sketch : The samplers.

    References
    ----------
    .. [1] Y. Li, Y. Liu and Q. Zhang, "Geometric Interpretation of Running Nyström-Based
       Kernel Machines and Error Analysis", §IV.

    Examples
    --------
    >>> from asymkern.landmarks import select_landmarks
    >>> idx = select_landmarks(None, 3, "uniform", random_state=0, n_samples=10)
    >>> idx.shape, bool((idx[:-1] < idx[1:]).all())
    ((3,), True)
    >>> select_landmarks(None, 2, "fixed", indices=[4, 1], n_samples=10).tolist()
    [4, 1]
    """
    if not isinstance(method, str) or method not in LANDMARK_METHODS:
        raise ValueError(f"unknown landmark method {method!r}; expected one of {LANDMARK_METHODS}")
    if method == "gaussian":
        raise ValueError(
            "method='gaussian' is a Gaussian sketch (landmarks X_H S), not a subset of rows; "
            "use asymkern.landmarks.gaussian_sketch(n_samples, n_landmarks) to get S"
        )
    if method in ("leverage", "kmeans") and X_or_None is None:
        raise ValueError(f"method={method!r} needs the data X")
    if X_or_None is not None:
        X_or_None = as_data(X_or_None, "X", allow_sparse=True)
    n = _n_of(X_or_None, n_samples)
    if method == "fixed":
        if indices is None:
            raise ValueError("method='fixed' needs indices=...")
        idx = check_indices(indices, n, "indices")
        m = _check_m(n_landmarks, n)
        if idx.size != m:
            raise ValueError(f"indices has {idx.size} entries but n_landmarks={m}")
        return idx
    m = _check_m(n_landmarks, n)
    rng = check_random_state(random_state)
    if method == "uniform":
        return np.sort(rng.choice(n, m, replace=False)).astype(np.intp)
    if method == "leverage":
        return leverage_draw(leverage_scores(X_or_None, m, kernel=kernel,
                                             kernel_params=kernel_params, random_state=rng),
                             m, rng)
    # kmeans
    return kmeans_landmarks(X_or_None, m, return_centers=False, random_state=rng)
