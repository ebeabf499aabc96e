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
  the SVD R = U_R Σ Wᵀ with a1's rank rule (:func:`~asymkern.kernels.compat.pinv_svd`):
  P = (TᵀT)^† = W (Σ⁺)² Wᵀ and the mapped set S C = W_r W_rᵀ (exact, formed from W). Q is not
  formed: new samples go through the corrected seminormal equations (below);
* a user matrix C: Σ_c T_cᵀ C[c] with the rows of C sliced per task.

Before anything is computed, the size of the dense mapped set and the peak of one task (or of the
client's small factorisation) are checked against ``max_dense_memory``
(:func:`asymkern.config.check_memory`): a literal a2 on a 10⁷ × 10⁶ matrix asks for a 10⁶ × 10⁶
dense product (8 TB) and is refused with the shape, the bytes and what to do instead.

New samples are mapped by the same C (``transform_x``/``transform_z``): a dask array chunked like
the new data, each task summing y[:, c] C[c] over the row chunks c of T, with C[c] generated from
the seed (a2), sliced (user C), or T_c P with P = W Σ⁺ (a1: yᵀ A W Σ⁺ for side 'z'; a1c:
W Σ⁺ Wᵀ) — C itself is never formed. For a1 the order (y T) P instead of the in-memory y (T P)
costs nothing: both are within cond(T)·eps of the exact map (measured against 60-digit mpmath,
relative to each row's largest entry, for 6×40, 40×6 and 30×120 matrices at cond(T) = 10⁹:
3·10⁻⁸–5·10⁻⁸ in memory, 4·10⁻⁸–10⁻⁷ on Dask, 2·10⁻⁸–10⁻⁷ after one or two corrections as for
a0 below, so a1 is not refined), and Dask and memory agree to 1.6·10⁻¹¹–1.5·10⁻⁷ for
cond(T) = 10⁶–10⁹ (≤ 1.1·10⁻⁶ at 10¹⁰).

a0 maps y by y C = (T^† yᵀ)ᵀ, the minimum-norm least-squares solution of T x ≈ yᵀ, with the
corrected seminormal equations (Björck (1987) [2]): x₀ = R⁻¹R⁻ᵀ Tᵀy, then
n corrections x ← x + R⁻¹R⁻ᵀ Tᵀ(y − T x), R⁻¹R⁻ᵀ applied as g ↦ ((g W) Σ⁺) Σ⁺ Wᵀ (dropped
directions: 0), never as the formed P. Every pass is one tree reduction over the row chunks of T
in the same graph, each task forming the residual y[:, c] − x T_cᵀ of its rows entry by entry
(:func:`_cross`, max(4k, 1024) rows of T at a time, CSR kept) before multiplying by T_c. The
seminormal equations alone (x₀, the former map, y T P) err by about eps·cond(T)²·‖y‖/σ_1: the
training rows, whose exact image is e_i, came out up to 86 (absolute) away from the in-memory
value at cond(T) = 10⁹ (0.1–0.94 at 10⁸, 2.9·10³ at 10¹⁰). Each correction multiplies the error
by about cond(T)·eps; n is the smallest n ≥ 1 with κ·(κ·eps)ⁿ ≤ 1 for the kept κ = σ_1/σ_r
(:func:`refine_steps`: 1 pass for κ ≤ 6.7·10⁷, 2 up to 2.7·10¹⁰, at most
:data:`MAX_REFINE_STEPS`), fixed at fit time, so the map costs 1 + 2n products with T (the
transform of a 40000×200 T took 0.96 s instead of 0.41 s with n = 1, one BLAS thread). Measured
against the in-memory :class:`~asymkern.kernels.CompatibilityTransform` (C from Q), max |Δ| /
max |in-memory| for 6×40, 40×6, 30×200 and 200×30 matrices, dense and CSR chunks: training rows
≤ 1.3·10⁻⁹ / 3.2·10⁻⁸ / 7.6·10⁻⁷ at cond(T) = 10⁸ / 10⁹ / 10¹⁰ (was 0.94 / 86 / 2.9·10³), rows
near the span of the training set ≤ 1.0·10⁻⁸ / 5.4·10⁻⁸ / 9.7·10⁻⁷ (was 5.5·10⁻³ / 0.1 / 0.55),
random rows ≤ 8.4·10⁻⁸ at 10⁹ (was 2.2·10⁻⁷: far from the span the seminormal error is
no larger than cond(T)·eps relative): the two agree to their own cond(T)·eps. Each row of Y is
mapped alone, so the result depends on the chunking of Y and of A only through rounding (the
TSQR's R, the order of the sums): other chunkings agree to cond(T)·eps, the same chunking is
bitwise the same. The passes run one after the other, so the chunks of T are read 1 + n times (or
kept between passes by the scheduler): side 'x' reads the persisted Aᵀ, side 'z' A as given.

:meth:`DaskCompatibility.to_in_memory` (the dense C of a pickled model) cannot be corrected that
way (the residual of a row of C is a vector of length big for every one of the big rows): for a0
it runs a second TSQR tree that keeps its Q factors (:meth:`DaskCompatibility._pinv_rows`), each
chunk of T densified in its task, and forms C = Q U_R Σ⁺ Wᵀ as
:func:`~asymkern.kernels.compat.pinv_matrix` does in memory. C = T P, used before, has the
forward error of C but the residual ‖Tᵀ C − W_r W_rᵀ‖ of order cond(T)²·eps: training rows
mapped by it were up to 83 away at cond(T) = 10⁹, by C from Q ≤ 3.6·10⁻⁸ (≤ 3.7·10⁻⁷ at 10¹⁰).
It costs a QR with Q of T: 1.3 s instead of 0.24 s for a dense 40000×200 T, 8.6 s instead of
1.0 s for a 200000×200 CSR T at density 0.02 (one BLAS thread).

The training fit is not affected by any of this (its mapped set is W_r W_rᵀ).

References
----------
.. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
   "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
   Nyström method", ICML 2024, Remark 2.3, Algorithm 1 and App. D.
.. [2] Å. Björck, "Stability analysis of the method of seminormal equations for linear least
   squares problems", Linear Algebra Appl. 88/89 (1987), 31–48.
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
    pinv_right,
    pinv_svd,
    polar_factor,
    r_factor,
    random_products,
    random_rows,
    stack_r,
)
from .kernel import _add, _chunk_bounds, _tree, as_dask_data, gather, stack_rows, task
from .tsqr import qr_leaf, tsqr_apply, tsqr_tree

#: Most correction passes of a0's corrected seminormal equations (:func:`refine_steps`).
MAX_REFINE_STEPS = 6

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
        out += _densify(Ys[:, i - start:j - start] @ random_rows(seed, i, j, k, dtype))
        i = j
    return out


def _mat_apply(Y, start: int, stop: int, C):
    """Y[:, start:stop] @ C (C: the rows [start, stop) of a given compatibility matrix)."""
    return np.asarray(_densify(Y[:, start:stop] @ C))


def _factor_apply(Y, start: int, stop: int, Tc, P, dtype):
    """(Y[:, start:stop] @ T_c) @ P: a1 / a0 (C = T P) without forming C."""
    YT = np.asarray(_densify(Y[:, start:stop] @ Tc))
    return (YT.astype(np.float64) @ P).astype(np.result_type(Y.dtype, dtype))


def _cross(Y, start: int, stop: int, Tc, x=None) -> np.ndarray:
    """(Y[:, start:stop] − x T_cᵀ) T_c in float64 (x None: Y[:, start:stop] T_c).

    One task of a0's corrected seminormal equations: the residual r = y − x Tᵀ of the rows
    [start, stop) of T, formed entry by entry (where its cancellation happens) and multiplied by
    T_c at once. T_c (numpy or CSR) and the slice of Y are taken ``max(4k, 1024)`` rows of T at
    a time, so the dense temporaries are at most ``len(Y)`` × max(4k, 1024) (and a float64 copy
    of that block of a dense T_c).
    """
    Ys = Y[:, start:stop]
    k = Tc.shape[1]
    out = np.zeros((Ys.shape[0], k))
    step = max(4 * k, 1024)
    for i in range(0, Tc.shape[0], step):
        Tb = Tc[i:i + step]
        Yb = np.asarray(_densify(Ys[:, i:i + step]), dtype=np.float64)
        if sp.issparse(Tb):
            if x is not None:
                Yb = Yb - np.asarray(Tb @ x.T).T
            out += np.asarray(Tb.T @ Yb.T).T
        else:
            Tb = np.asarray(Tb, dtype=np.float64)
            if x is not None:
                Yb = Yb - x @ Tb.T
            out += Yb @ Tb
    return out


def _seminormal(G, W, inv, x=None) -> np.ndarray:
    """x + ((G W) Σ⁺) Σ⁺ Wᵀ: one solve with RᵀR = W Σ² Wᵀ, P = (TᵀT)^† never formed."""
    d = (((G @ W) * inv) * inv) @ W.T
    return d if x is None else x + d


def _cast(x, dtype):
    return x.astype(dtype, copy=False)


def _root_right(node, big: int):
    """F = U_R Σ⁺ Wᵀ of the root's R (a0's C = Q F, :func:`pinv_right`)."""
    return pinv_right(node[1], big)


def _times_factor(Tc, P):
    """T_c P in float64 (rows of C = T P for a1 / a1c), dense."""
    out = Tc @ P if sp.issparse(Tc) else np.asarray(Tc, dtype=np.float64) @ P
    return np.asarray(_densify(out), dtype=np.float64)


# ----------------------------------------------------------------------------- helpers
def _row_spans(T) -> tuple[list, list]:
    """The delayed row chunks of T and the [start, stop) rows of each."""
    bounds = _chunk_bounds(T.chunks[0]).tolist()
    return list(T.to_delayed()[:, 0]), list(zip(bounds[:-1], bounds[1:]))


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


def refine_steps(inv: np.ndarray) -> int:
    """Correction passes of a0's corrected seminormal equations for the kept 1/σ of T.

    With κ = σ_1/σ_r (r the kept rank) each correction multiplies the error by about κ·eps
    (R⁻¹R⁻ᵀ TᵀT − I, measured in the norm of R, is of order κ·eps when R is the R of a
    backward-stable QR of T; cf. Björck (1987)), starting from the κ²·eps of the seminormal
    equations (measured: 1, 2, 3 and 4 corrections reach the in-memory error at κ = 10⁶, 10⁹,
    10¹¹ and 10¹²; one correction at 10⁹ left 7·10⁻⁷, two 3·10⁻⁸); the count is the smallest
    n ≥ 1 with κ·(κ·eps)ⁿ ≤ 1, so that the excess over the backward-stable cond(T)·eps is gone:
    1 for κ ≤ eps^(-1/2) ≈ 6.7·10⁷, 2 for κ ≤ eps^(-2/3) ≈ 2.7·10¹⁰, 3 up to 5.5·10¹¹, ...,
    at most :data:`MAX_REFINE_STEPS`; 0 for T = 0.
    """
    kept = inv[inv > 0]
    if kept.size == 0:
        return 0
    kappa = float(kept.max() / kept.min())  # σ_1 / σ_r ≥ 1
    rho = kappa * np.finfo(np.float64).eps
    if rho >= 1.0:
        return MAX_REFINE_STEPS
    return int(min(MAX_REFINE_STEPS, max(1, math.ceil(math.log(kappa) / -math.log(rho) - 1e-12))))


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
    TSQR's R, kept for reference: the transforms apply W and Σ⁺ instead; else None),
    singular_values_ (a1), refine_steps_ (a0: the corrections of its corrected seminormal
    equations, :func:`refine_steps`; else None), C_ (None: C is never formed on Dask).
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
        self.seed_ = self.P_ = self.C_ = self.refine_steps_ = None
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
        Td, spans = _row_spans(T)
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
                # W, Σ⁺ kept for the transforms (one SVD; P_ and the mapped set as pinv_factor)
                self._W, self._inv = W, inv = pinv_svd(R, small, big)
                self.P_, dense = (W * inv**2) @ W.T, (W * (inv > 0)) @ W.T
                self.refine_steps_ = refine_steps(inv)
            mapped = da.from_array(dense.astype(dtype), chunks=(small, small))
        chunk = int(min(small, max(1, _MAPPED_CHUNK_BYTES // max(small * dtype.itemsize, 1))))
        mapped = mapped.rechunk({0: chunk, 1: -1})
        (self.mapped_,) = dask.persist(mapped)
        return self

    def sets(self, A):
        """(X, Z) as the kernel sees them: (A, mapped) for side 'z', (mapped, Aᵀ) for 'x'."""
        return (A, self.mapped_) if self.side_ == "z" else (self.mapped_, self.T_)

    def _apply(self, Y):
        """Y C for new samples Y (row-chunked dask, n_new × big), chunked like Y.

        a0: 1 + ``refine_steps_`` tree reductions over the row chunks of T per chunk of Y (the
        corrected seminormal equations, module docstring), in float64, cast at the end.
        """
        from dask import delayed

        Y = as_dask_data(Y, "new samples", allow_sparse=True)  # numpy: one chunk
        Td, spans = _row_spans(self.T_)
        small = self.dim_
        dt = np.result_type(Y.dtype, self.dtype_)
        P = None if self.P_ is None else delayed(self.P_, pure=True)
        if self.method_ == "pinv":
            W, inv = delayed(self._W, pure=True), delayed(self._inv, pure=True)
        out = []
        for y in Y.to_delayed()[:, 0]:
            if self.method_ == "pinv":  # corrected seminormal equations (module docstring)
                x = None
                for _ in range(1 + self.refine_steps_):
                    g = _tree([task(_cross, y, s, e, t, x) for t, (s, e) in zip(Td, spans)], _add)
                    x = task(_seminormal, g, W, inv, x)
                out.append(task(_cast, x, dt))
                continue
            if self.method_ == "random":
                parts = [task(_rand_apply, y, self.seed_, s, e, small, self.dtype_)
                         for s, e in spans]
            elif self.method_ == "matrix":
                parts = [task(_mat_apply, y, s, e, c) for (s, e), c in zip(spans, self._C_parts)]
            else:
                parts = [task(_factor_apply, y, s, e, t, P, self.dtype_)
                         for t, (s, e) in zip(Td, spans)]
            out.append(_tree(parts, _add))
        return stack_rows(out, Y.chunks[0], dt, small)

    def dense_nbytes(self) -> int:
        """Bytes of the dense C (big × small) that :meth:`to_in_memory` forms."""
        return max(self.n_rows_, self.n_cols_) * self.dim_ * max(self.dtype_.itemsize, 8)

    def to_in_memory(self) -> CompatibilityTransform:
        """The equivalent fitted in-memory :class:`CompatibilityTransform` (C formed densely,
        the same C as here: T P for a1 / a1c, Q U_R Σ⁺ Wᵀ from a TSQR that keeps Q for a0
        (:meth:`_pinv_rows`), a2's seeded rows, the user's matrix)."""
        import dask

        big, small = max(self.n_rows_, self.n_cols_), self.dim_
        if self.method_ == "random":
            C = random_rows(self.seed_, 0, big, small)  # as the in-memory fit draws it
        elif self.method_ == "matrix":
            C = np.concatenate(dask.compute(*self._C_parts), axis=0)
        elif self.method_ == "pinv":  # C = Q F from a TSQR that keeps Q (module docstring)
            C = np.concatenate(dask.compute(*self._pinv_rows()), axis=0)
        else:
            (C,) = dask.compute(self.T_.map_blocks(
                _times_factor, self.P_, dtype=np.float64, chunks=(self.T_.chunks[0], (small,)),
                meta=np.empty((0, 0))))
        ct = CompatibilityTransform(self.method, self.random_state)
        ct.n_rows_, ct.n_cols_, ct.dim_ = self.n_rows_, self.n_cols_, self.dim_
        ct.seed_, ct.side_ = self.seed_, self.side_
        ct.C_ = np.asarray(C).astype(self.dtype_, copy=False)
        return ct

    def _pinv_rows(self) -> list:
        """Delayed row blocks (one per row chunk of T) of a0's C = Q U_R Σ⁺ Wᵀ.

        A TSQR tree that keeps its Q factors (:mod:`asymkern._dask.tsqr`; each chunk of T
        densified in its task, as the rows of C it yields are dense), the same pairing as the
        fit's tree of R factors; the root's F = U_R Σ⁺ Wᵀ
        (:func:`~asymkern.kernels.compat.pinv_right`) is sent down the tree, each node handing
        its children their rows of Q_node F, and a leaf's rows of C are Q_c F_c. This is
        :func:`~asymkern.kernels.compat.pinv_matrix` with a tree QR: residual
        ‖Tᵀ C − W_r W_rᵀ‖ of order cond(T)·eps, where C = T P has cond(T)²·eps.
        """
        k, big = self.dim_, max(self.n_rows_, self.n_cols_)
        root = tsqr_tree([task(qr_leaf, t) for t in self.T_.to_delayed()[:, 0]],
                         [int(n) for n in self.T_.chunks[0]], k)
        return tsqr_apply(root, task(_root_right, root[0], big))

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
