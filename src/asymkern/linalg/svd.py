"""Top-r SVD solvers for dense arrays, sparse matrices, LinearOperators and lazy KernelMatrix.

``top_svd(G, r, solver=...)`` returns an :class:`SVDResult` (U, s, V) with s in decreasing order
and deterministic signs: each pair (u_i, v_i) is flipped together so that the entry of u_i with
the largest magnitude is positive (G = U diag(s) Vᵀ is unchanged by a paired flip).

Solvers: ``'dense'`` (LAPACK gesdd), ``'arpack'`` (scipy ``svds``), ``'randomized'`` (Halko et
al. range finder with power iterations, using only products with G and Gᵀ, so a lazy kernel is
never formed), ``'nystrom'`` (asymmetric Nyström, paper 000 §3) and ``'auto'``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, aslinearoperator, svds
from sklearn.utils import check_random_state

from .._validation import check_n_components

SOLVERS = ("auto", "dense", "arpack", "randomized", "nystrom")


@dataclass(frozen=True)
class SVDResult:
    """Truncated SVD G ≈ U diag(s) Vᵀ: U (n, r), s (r,) decreasing, V (m, r)."""

    U: np.ndarray
    s: np.ndarray
    V: np.ndarray
    solver: str = "dense"
    info: dict | None = None


def flip_signs(U: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Paired sign flip of (u_i, v_i): the largest-magnitude entry of each u_i becomes positive."""
    if U.shape[0] == 0:
        return U, V
    idx = np.argmax(np.abs(U), axis=0)
    signs = np.sign(U[idx, np.arange(U.shape[1])])
    signs[signs == 0] = 1
    return U * signs, V * signs


def _shape_and_kind(G):
    from ..kernels.matrix import KernelMatrix

    if isinstance(G, KernelMatrix):
        return G.shape, "kernel"
    if sp.issparse(G):
        return G.shape, "sparse"
    if isinstance(G, LinearOperator):
        return G.shape, "operator"
    G = np.asarray(G)
    if G.ndim != 2:
        raise ValueError(f"G must be a 2-D matrix, got an array with {G.ndim} dimensions")
    return G.shape, "dense"


def _as_operator(G) -> LinearOperator:
    from ..kernels.matrix import KernelMatrix

    if isinstance(G, KernelMatrix):
        return G.aslinearoperator()
    return aslinearoperator(G)


def _finish(U, s, V, r, solver, info=None) -> SVDResult:
    order = np.argsort(s)[::-1][:r]
    U, s, V = U[:, order], s[order], V[:, order]
    U, V = flip_signs(U, V)
    return SVDResult(np.ascontiguousarray(U), s, np.ascontiguousarray(V), solver, info)


def dense_svd(G, r: int) -> SVDResult:
    """Exact SVD by LAPACK (gesdd, falling back to gesvd if it does not converge)."""
    from ..kernels.matrix import KernelMatrix

    if isinstance(G, KernelMatrix):
        G = G.to_array()
    elif sp.issparse(G):
        G = G.toarray()
    elif isinstance(G, LinearOperator):
        G = G @ np.eye(G.shape[1], dtype=G.dtype)
    G = np.asarray(G)
    try:
        U, s, Vt = sla.svd(G, full_matrices=False, lapack_driver="gesdd", check_finite=False)
    except np.linalg.LinAlgError:  # pragma: no cover - rare LAPACK failure
        U, s, Vt = sla.svd(G, full_matrices=False, lapack_driver="gesvd", check_finite=False)
    return _finish(U[:, :r], s[:r], Vt[:r].T, r, "dense")


def arpack_svd(G, r: int, tol: float = 0.0, random_state=None) -> SVDResult:
    """Top-r SVD by implicitly restarted Lanczos (scipy ``svds``, ARPACK)."""
    shape, kind = _shape_and_kind(G)
    if r >= min(shape):
        return dense_svd(G, r)
    A = _as_operator(G) if kind in ("kernel", "operator") else G
    rng = check_random_state(random_state)
    v0 = rng.uniform(-1, 1, size=min(shape)).astype(np.result_type(A.dtype, np.float32))
    U, s, Vt = svds(A, k=r, tol=tol, v0=v0, solver="arpack", random_state=rng)
    return _finish(U, s, Vt.T, r, "arpack")


def randomized_svd(
    G,
    r: int,
    n_oversamples: int = 10,
    n_iter: int | str = "auto",
    random_state=None,
) -> SVDResult:
    """Randomized SVD (Halko, Martinsson & Tropp 2011, Alg. 4.4/5.1) using only G·X and Gᵀ·Y.

    Works on dense or sparse arrays, LinearOperators and lazy KernelMatrix objects alike.
    ``n_iter='auto'`` uses 7 power iterations when r is small relative to min(n, m), else 4.
    Power iterations are stabilised with QR (economic), so accuracy is kept in float32 too.
    """
    shape, kind = _shape_and_kind(G)
    n, m = shape
    k = min(r + int(n_oversamples), n, m)
    if n_iter == "auto":
        n_iter = 7 if r < 0.1 * min(n, m) else 4
    rng = check_random_state(random_state)

    if kind == "dense":
        A = np.asarray(G)

        def mm(X):
            return A @ X

        def rmm(Y):
            return A.T @ Y

        dtype = A.dtype
    elif kind == "sparse":
        A = G.tocsr()

        def mm(X):
            return A @ X

        def rmm(Y):
            return A.T @ Y

        dtype = A.dtype
    else:
        op = G

        def mm(X):
            return op.matmat(X) if hasattr(op, "matmat") else op @ X

        def rmm(Y):
            return op.rmatmat(Y)

        dtype = G.dtype
    dtype = np.dtype(dtype) if np.dtype(dtype) in (np.float32, np.float64) else np.dtype(float)

    Omega = rng.standard_normal((m, k)).astype(dtype, copy=False)
    Q = mm(Omega)
    Q, _ = np.linalg.qr(Q)
    for _ in range(int(n_iter)):
        W, _ = np.linalg.qr(rmm(Q))
        Q, _ = np.linalg.qr(mm(W))
    B = rmm(Q).T  # (k, m) = Qᵀ G
    Ub, s, Vt = sla.svd(B, full_matrices=False, check_finite=False)
    U = Q @ Ub
    return _finish(U[:, :r], s[:r], Vt[:r].T, r, "randomized", {"n_oversamples": n_oversamples})


def top_svd(G, n_components: int, solver: str = "auto", random_state=None, **options) -> SVDResult:
    """Top-``n_components`` SVD of G (array, sparse, LinearOperator or KernelMatrix).

    ``solver='auto'``: dense LAPACK for small problems (min(n, m) ≤ 1000) or many components,
    ARPACK for a large array, randomized SVD for a lazy kernel that does not fit the dense budget
    (a kernel that fits is formed once, then treated as an array).
    """
    from .._dask import is_dask_array
    from ..kernels.matrix import KernelMatrix

    if getattr(G, "is_dask", False) or is_dask_array(G):  # Dask executor (asymkern._dask)
        from .._dask.svd import dask_top_svd

        return dask_top_svd(G, n_components, solver, random_state, **options)
    shape, kind = _shape_and_kind(G)
    if min(shape) == 0:
        raise ValueError(f"G is empty (shape {shape}); expected at least one row and one column")
    r = check_n_components(n_components, min(shape), what=f"min(n, m) of G with shape {shape}")
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; expected one of {SOLVERS}")
    if solver == "auto":
        if kind == "kernel":
            if G.nbytes <= G.max_dense_memory * 2**20:
                G = G.to_array()
                kind = "dense"
            else:
                solver = "randomized"
        if solver == "auto":
            if min(shape) <= 1000 or r > 0.25 * min(shape):
                solver = "dense" if kind != "operator" else "arpack"
            else:
                solver = "arpack"
    if solver == "dense":
        return dense_svd(G, r)
    if solver == "arpack":
        opts = {k: v for k, v in options.items() if k in ("tol",)}
        return arpack_svd(G, r, random_state=random_state, **opts)
    if solver == "randomized":
        opts = {k: v for k, v in options.items() if k in ("n_oversamples", "n_iter")}
        return randomized_svd(G, r, random_state=random_state, **opts)
    # nystrom
    from .nystrom import asymmetric_nystrom

    if isinstance(G, LinearOperator) and not isinstance(G, KernelMatrix):
        raise TypeError("solver='nystrom' needs entries of G: pass an array or a KernelMatrix")
    res = asymmetric_nystrom(G, r, random_state=random_state, **options)
    return SVDResult(res.U, res.s, res.V, "nystrom", {"nystrom": res})
