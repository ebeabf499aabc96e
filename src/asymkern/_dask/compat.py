"""Compatibility matrices (Tao et al. (2024), Remark 2.3 and Algorithm 1, App. D) for one dask
matrix A.

``KernelSVD.fit(A)`` with a row-chunked dask data matrix A (N×M, numpy or CSR chunks) reads its
rows x_i ∈ R^M and its columns z_j ∈ R^N as the two sets. With the notation of
:mod:`asymkern.kernels.compat` — T (big × small) the mapped set as columns, C (big × small) —

* side 'z' (N > M, tall, Tao et al. (2024) Table 7's case): T = A as given; X = A, Z = Aᵀ C_z (M×M);
* side 'x' (M > N, wide): T = Aᵀ, built once by a transpose + rechunk of A (CSR chunks stay CSR)
  and persisted; X = A C_x (N×N), Z = Aᵀ;
* N = M: X = A, Z = Aᵀ (no compat; Aᵀ built and persisted as for side 'x').

The mapped set Tᵀ C (small × small, dense) is a deterministic tree reduction over the row chunks
of T, every task calling the in-memory helpers of :mod:`asymkern.kernels.compat`:

* a2 (``'random'``): Σ_c T_cᵀ C[c], the rows of C generated inside each task, one block of
  :data:`~asymkern.kernels.compat.RANDOM_BLOCK_ROWS` rows at a time, from ``(seed, block)``
  (:func:`~asymkern.kernels.compat.random_rows`): C is never materialised and is the same C as
  the in-memory one whatever the chunking;
* a1 (``'pca'``): a TSQR tree of R factors only (R of each chunk, then R of stacked pairs;
  a CSR chunk is densified max(4·small, 1024) rows at a time inside its task), then on the
  client the SVD of the small R: Z = W Σ with the signs of W fixed as in memory. Chosen over
  ``dask.array.linalg.svd_compressed`` (randomized: exact only to its oversampling, and it needs
  dense chunks) and ``dask.array.linalg.svd`` (dense chunks; builds Q, an N×M array we never
  need): R is all the mapped set depends on;
* a0 (``'pinv'``): the same TSQR tree of R factors as a1 (never the Gram matrix TᵀT, whose
  rounding and cut-off act on σ² and make the error grow like cond(T)²·eps), then on the client
  the SVD R = U_R Σ Wᵀ with a1's rank rule (:func:`~asymkern.kernels.compat.pinv_factor`):
  P = (TᵀT)^† = W (Σ⁺)² Wᵀ and the mapped set S C = W_r W_rᵀ (exact, formed from W). Q is not
  formed, so the rows of C and the new samples go through T P (see below);
* a user matrix C: Σ_c T_cᵀ C[c] with the rows of C sliced per task.

Before anything is computed, the size of the dense mapped set and the peak of one task (or of the
client's small factorisation) are checked against ``max_dense_memory``
(:func:`asymkern.config.check_memory`): a literal a2 on a 10⁷ × 10⁶ matrix asks for a 10⁶ × 10⁶
dense product (8 TB) and is refused with the shape, the bytes and what to do instead.

New samples are mapped by the same C (``transform_x``/``transform_z``): a dask array chunked like
the new data, each task summing y[:, c] C[c] over the row chunks c of T, with C[c] generated from
the seed (a2), sliced (user C), or T_c P with P = W Σ⁺ (a1: yᵀ A W Σ⁺ for side 'z') or
P = (TᵀT)^† = W (Σ⁺)² Wᵀ (a0) — C itself is never formed. For a0 this C = T P agrees with
``np.linalg.pinv`` (and the in-memory C, :func:`~asymkern.kernels.compat.pinv_matrix`, formed
from Q) to about cond(T)·eps, but the rounding of the product T P puts errors of order
eps·cond(T)²/σ_1 in every direction: a new sample close to the span of the training set is
mapped to about cond(T)²·eps (absolute) of the in-memory value. The training fit is not
affected (its mapped set is W_r W_rᵀ).

References
----------
.. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
   "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
   Nyström method", ICML 2024, Remark 2.3, Algorithm 1 and App. D.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .._dispatch import require_dask
from ..kernels.compat import (
    RANDOM_BLOCK_ROWS,
    CompatibilityTransform,
    compat_seed,
    matrix_products,
    pca_factor,
    pinv_factor,
    polar_factor,
    r_factor,
    random_products,
    random_rows,
    stack_r,
)
from .kernel import _add, _chunk_bounds, _tree, as_dask_data, gather, task

#: Rows per chunk of the dense mapped set (small × small) as the kernel sees it: chunks of about
#: this many bytes (deterministic: a function of the shape only, never of A's chunking).
_MAPPED_CHUNK_BYTES = 64 * 2**20


# ----------------------------------------------------------------------------- tasks
def _piece(chunk, c0: int, c1: int):
    """Columns [c0, c1) of one row chunk of A, transposed (CSR stays CSR)."""
    P = chunk[:, c0:c1].T
    return P.tocsr() if sp.issparse(P) else np.ascontiguousarray(P)


def _hstack(*parts):
    return sp.hstack(parts, format="csr") if sp.issparse(parts[0]) else np.concatenate(parts, 1)


def _densify(chunk):
    return chunk.toarray() if sp.issparse(chunk) else chunk


def _rand_apply(Y, seed: int, start: int, stop: int, k: int, dtype):
    """Y[:, start:stop] @ C[start:stop] for a2's C, generated block by block."""
    Ys = Y[:, start:stop]
    out = np.zeros((Y.shape[0], k), dtype=np.result_type(Y.dtype, dtype))
    B = RANDOM_BLOCK_ROWS
    i = start
    while i < stop:
        j = min(stop, (i // B + 1) * B)
        prod = Ys[:, i - start:j - start] @ random_rows(seed, i, j, k, dtype)
        out += prod.toarray() if sp.issparse(prod) else prod
        i = j
    return out


def _mat_apply(Y, start: int, stop: int, C):
    """Y[:, start:stop] @ C (C: the rows [start, stop) of a given compatibility matrix)."""
    out = Y[:, start:stop] @ C
    return out.toarray() if sp.issparse(out) else np.asarray(out)


def _factor_apply(Y, start: int, stop: int, Tc, P, dtype):
    """(Y[:, start:stop] @ T_c) @ P: a1 / a0 (C = T P) without forming C."""
    YT = Y[:, start:stop] @ Tc
    YT = YT.toarray() if sp.issparse(YT) else np.asarray(YT)
    return (YT.astype(np.float64) @ P).astype(np.result_type(Y.dtype, dtype))


def _times_factor(Tc, P):
    """T_c P in float64 (rows of C = T P for a1 / a1c / a0), dense."""
    out = Tc @ P if sp.issparse(Tc) else np.asarray(Tc, dtype=np.float64) @ P
    return np.asarray(out.toarray() if sp.issparse(out) else out, dtype=np.float64)


# ----------------------------------------------------------------------------- helpers
def transpose_rows(A, rows: int | None = None):
    """Aᵀ of a row-chunked dask A (N×M) as a row-chunked dask array (M×N), chunks CSR if A's are.

    Each output chunk (rows [c0, c1) of Aᵀ) is assembled from one piece per chunk of A; by
    default its row count makes it about as large as A's largest chunk.
    """

    da = require_dask()
    N, M = (int(k) for k in A.shape)
    if rows is None:
        rows = math.ceil(max(A.chunks[0]) * M / max(N, 1))
    rows = int(min(max(rows, 1), M))
    sparse = sp.issparse(A._meta)
    meta = sp.csr_matrix((0, 0), dtype=A.dtype) if sparse else np.empty((0, 0), dtype=A.dtype)
    blocks = list(A.to_delayed()[:, 0])
    out = []
    for c0 in range(0, M, rows):
        c1 = min(M, c0 + rows)
        parts = [task(_piece, b, c0, c1) for b in blocks]
        out.append(da.from_delayed(task(_hstack, *parts), shape=(c1 - c0, N),
                                   dtype=A.dtype, meta=meta))
    return da.concatenate(out, axis=0)


def check_compat_budget(method: str, side: str, N: int, M: int, dtype,
                        block_rows: int) -> None:
    """Refuse (``MemoryBudgetError``) a compat whose dense mapped set or task peak is too large.

    The mapped set is min(N, M) × min(N, M) dense; one task of the reduction (or the client's
    SVD of the TSQR's R for a1 / a1c / a0) holds about four such matrices plus a
    ``block_rows`` × min(N, M) dense block (rows of C, or the rows of T that a QR copies).
    """
    from ..config import check_memory

    small = min(N, M)
    item = np.dtype(dtype).itemsize
    mapped = small * small * item
    peak = 4 * small * small * 8 + block_rows * small * 8
    name = "Aᵀ C_z" if side == "z" else "A C_x"
    check_memory(peak, f"KernelSVD.fit(A) with compat={method!r} on a {N}x{M} dask data matrix "
                 f"(side '{side}')", "fit(X, Z=Z) with two sets of equal dimension (e.g. reduced "
                 "beforehand) instead of fit(A)",
                 detail=(f"the dense {small}x{small} {np.dtype(dtype).name} mapped set {name} "
                         f"alone is {mapped} bytes; a task of its reduction holds ~4 such "
                         f"matrices plus a {block_rows}x{small} dense block: {peak} bytes"))


# ----------------------------------------------------------------------------- the transform
class DaskCompatibility:
    """Compatibility transform of a row-chunked dask data matrix A (see the module docstring).

    Parameters
    ----------
    method : {'pca', 'polar', 'pinv', 'random', 'a0', 'a1', 'a1c', 'a2'} or (big, small) ndarray
    random_state : int, RandomState or None (a2: one integer seed, :func:`compat_seed`)

    Attributes after :meth:`fit`
    ----------------------------
    side_ ('x', 'z'), method_ (the canonical name or 'matrix'), n_rows_ (N), n_cols_ (M),
    dim_ (min(N, M)), seed_ (a2's seed, else None), T_ (dask, big × small), mapped_ (dask,
    small × small, persisted), P_ (a1: W Σ⁺; a1c: W Σ⁺ Wᵀ; a0: (TᵀT)^† = W (Σ⁺)² Wᵀ from the
    TSQR's R; else None), singular_values_ (a1),
    C_ (None: C is never formed on Dask).
    """

    def __init__(self, method="pca", random_state=None):
        self.method = method
        self.random_state = random_state

    def fit(self, A):
        """Fit on a validated row-chunked dask A (N×M) with N ≠ M or a given matrix."""
        import dask
        from dask import delayed

        da = require_dask()
        method = CompatibilityTransform(self.method)._method()
        N, M = (int(k) for k in A.shape)
        self.n_rows_, self.n_cols_, self.dim_ = N, M, min(N, M)
        self.side_ = "x" if M > N else "z"
        self.seed_ = self.P_ = self.C_ = None
        self.dtype_ = dtype = np.dtype(A.dtype)
        user = isinstance(method, np.ndarray)
        self.method_ = "matrix" if user else method
        T = A if self.side_ == "z" else None
        big, small = max(N, M), min(N, M)
        rows = math.ceil(max(A.chunks[0]) * M / max(N, 1)) if T is None else max(T.chunks[0])
        # the dense rows a task holds besides the small matrices: a2's generator block, the
        # rows of T that the QR of a1 / a1c / a0 copies (a CSR chunk a block at a time), a
        # slice of a user C
        qr_rows = min(5 * small + 1024 if sp.issparse(A._meta) else rows, rows)
        block_rows = {"random": RANDOM_BLOCK_ROWS, "pca": qr_rows, "polar": qr_rows,
                      "pinv": qr_rows, "matrix": min(rows, big)}[self.method_]
        check_compat_budget(self.method_, self.side_, N, M, dtype, block_rows)
        if T is None:  # side 'x': Aᵀ once, by a shuffle of A's chunks; kept in the cluster
            (T,) = dask.persist(transpose_rows(A, rows))
        self.T_ = T
        bounds = _chunk_bounds(T.chunks[0])
        Td = list(T.to_delayed()[:, 0])
        spans = list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
        if user:
            C = CompatibilityTransform.check_matrix(method, big, small, N, M).astype(dtype)
            # its rows, one delayed slice per row chunk of T (in the graph once, reused by
            # every task of the fit and of the transforms)
            self._C_parts = [delayed(C[s:e], pure=True) for s, e in spans]
            parts = [task(matrix_products, t, c) for t, c in zip(Td, self._C_parts)]
            mapped = da.from_delayed(_tree(parts, _add), shape=(small, small), dtype=dtype)
        elif method == "random":
            self.seed_ = compat_seed(self.random_state)
            parts = [task(random_products, t, self.seed_, s, dtype)
                     for t, (s, _) in zip(Td, spans)]
            mapped = da.from_delayed(_tree(parts, _add), shape=(small, small), dtype=dtype)
        else:  # pca, polar (a1c: C = T W Σ⁺ Wᵀ), pinv (a0: C = T W (Σ⁺)² Wᵀ): one TSQR tree
            R = _tree([task(r_factor, t) for t in Td], stack_r)
            (R,) = gather(f"R factor of the TSQR ({small}x{small})", R)
            if method == "pca":
                W, self.singular_values_, self.P_ = pca_factor(R, small, big)
                dense = W * self.singular_values_
            elif method == "polar":
                self.P_, dense = polar_factor(R, small, big)
            else:  # never via TᵀT (its error grows like cond(T)²·eps)
                self.P_, dense = pinv_factor(R, small, big)
            mapped = da.from_array(dense.astype(dtype), chunks=(small, small))
        chunk = int(min(small, max(1, _MAPPED_CHUNK_BYTES // max(small * dtype.itemsize, 1))))
        mapped = mapped.rechunk({0: chunk, 1: -1})
        (self.mapped_,) = dask.persist(mapped)
        return self

    def sets(self, A):
        """(X, Z) as the kernel sees them: (A, mapped) for side 'z', (mapped, Aᵀ) for 'x'."""
        return (A, self.mapped_) if self.side_ == "z" else (self.mapped_, self.T_)

    def _apply(self, Y):
        """Y C for new samples Y (row-chunked dask, n_new × big), chunked like Y."""
        from dask import delayed

        da = require_dask()
        Y = as_dask_data(Y, "new samples", allow_sparse=True)  # numpy: one chunk
        T = self.T_
        bounds = _chunk_bounds(T.chunks[0])
        spans = list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
        small = self.dim_
        dt = np.result_type(Y.dtype, self.dtype_)
        Td = list(T.to_delayed()[:, 0])
        P = None if self.P_ is None else delayed(self.P_, pure=True)
        out = []
        for y, n_i in zip(Y.to_delayed()[:, 0], Y.chunks[0]):
            if self.method_ == "random":
                parts = [task(_rand_apply, y, self.seed_, s, e, small, self.dtype_)
                         for s, e in spans]
            elif self.method_ == "matrix":
                parts = [task(_mat_apply, y, s, e, c) for (s, e), c in zip(spans, self._C_parts)]
            else:
                parts = [task(_factor_apply, y, s, e, t, P, self.dtype_)
                         for t, (s, e) in zip(Td, spans)]
            out.append(da.from_delayed(_tree(parts, _add), shape=(n_i, small), dtype=dt))
        return da.concatenate(out, axis=0)

    def dense_nbytes(self) -> int:
        """Bytes of the dense C (big × small) that :meth:`to_in_memory` forms."""
        return max(self.n_rows_, self.n_cols_) * self.dim_ * max(self.dtype_.itemsize, 8)

    def to_in_memory(self) -> CompatibilityTransform:
        """The equivalent fitted in-memory :class:`CompatibilityTransform` (C formed densely,
        the same C as here: T P for a1 / a1c / a0, a2's seeded rows, the user's matrix)."""
        import dask

        big, small = max(self.n_rows_, self.n_cols_), self.dim_
        if self.method_ == "random":
            C = random_rows(self.seed_, 0, big, small)  # as the in-memory fit draws it
        elif self.method_ == "matrix":
            C = np.concatenate(dask.compute(*self._C_parts), axis=0)
        else:
            (C,) = dask.compute(self.T_.map_blocks(
                _times_factor, self.P_, dtype=np.float64, chunks=(self.T_.chunks[0], (small,)),
                meta=np.empty((0, 0))))
        ct = CompatibilityTransform(self.method, self.random_state)
        ct.n_rows_, ct.n_cols_, ct.dim_ = self.n_rows_, self.n_cols_, self.dim_
        ct.seed_, ct.side_ = self.seed_, self.side_
        ct.C_ = np.asarray(C).astype(self.dtype_, copy=False)
        return ct

    def transform_x(self, Y):
        """Map new rows x ∈ R^M (dask, row-chunked): x ↦ C_xᵀ x for side 'x', else unchanged."""
        return self._apply(Y) if self.side_ == "x" else Y

    def transform_z(self, Y):
        """Map new columns z ∈ R^N given as rows: z ↦ C_zᵀ z for side 'z', else unchanged."""
        return self._apply(Y) if self.side_ == "z" else Y


def map_in_memory(ct: CompatibilityTransform, Y, left: bool):
    """Map a dask Y by an in-memory fitted CompatibilityTransform, chunk by chunk."""
    if ct.side_ != ("x" if left else "z"):
        return Y
    func = ct.transform_x if left else ct.transform_z
    dt = np.result_type(Y.dtype, ct.C_.dtype)
    return Y.map_blocks(func, chunks=(Y.chunks[0], (ct.dim_,)), dtype=dt,
                        meta=np.empty((0, 0), dtype=dt))


def densify(Y):
    """Dense chunks of a dask array with CSR chunks (for kernels without sparse support)."""
    if not sp.issparse(Y._meta):
        return Y
    return Y.map_blocks(_densify, dtype=Y.dtype, meta=np.empty((0, 0), dtype=Y.dtype))
