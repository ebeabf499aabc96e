"""Asymmetric Nyström (Tao et al., 2024, §3, eq. 8–9) on Dask: the executor behind
``asymmetric_nystrom``.

``asymmetric_nystrom`` itself (landmark counts, the random draws, the growth loop) runs
unchanged on the client; for dask inputs it gets a :class:`DaskAccess` instead of the in-memory
``_Access``. Landmarks are drawn on the client from the sizes only (uniform: the same
``random_state`` calls as in memory, hence the same indices), the core G[I, J] is computed and
decomposed locally by the shared ``_core_solve``, and Ũ = c·G[:, J] V_W Σ_W⁻¹,
Ṽ = c·G[I, :]ᵀ U_W Σ_W⁻¹ are dask arrays chunked like X and Z, computed once and persisted in
the cluster (one pass over G[:, J] and one over G[I, :], as in memory). The paired sign rule of
the in-memory path (largest-magnitude entry of each ũ_i positive) reads the persisted Ũ and
returns only 2·r numbers per chunk; Ũ and Ṽ themselves are never gathered on the client.

Extreme magnitudes are handled as in memory (exact powers of two, bitwise the old computation
for data of ordinary size): the leverage sketch C is rescaled when CᵀC would over- or
underflow, the nearest-point search of k-means landmarks scales each chunk, and the cosines of
the 'change' estimate scale each column.
"""

from __future__ import annotations

import numpy as np

from .._dispatch import require_dask
from ..kernels.base import _maxabs
from .kernel import DaskKernelMatrix, _chunk_bounds, _nearest_task, _tree, aligned, gather, task

_KMEANS_GATHER_MAX = 20000  # k-means on all points (gathered) up to this n, as in memory


def persist(*arrays):
    """``dask.persist`` (results stay on the workers; in-process for local schedulers)."""
    import dask

    return dask.persist(*arrays)


def _signed_max(U):
    """Per column of one chunk: (max |u|, u at the first position of that maximum)."""
    U = np.asarray(U)
    if U.shape[0] == 0:
        return np.full(U.shape[1], -1.0), np.zeros(U.shape[1])
    idx = np.argmax(np.abs(U), axis=0)
    val = U[idx, np.arange(U.shape[1])].astype(np.float64)
    return np.abs(val), val


def paired_signs(U) -> np.ndarray:
    """Signs that make the largest-magnitude entry of each column of dask U positive.

    Same rule and tie-break (first row) as the in-memory ``flip_signs``; r numbers per chunk.
    """

    parts = [task(_signed_max, b) for b in U.to_delayed()[:, 0]]
    pairs = gather("sign pass (2r per chunk)", *parts)
    best = np.full(U.shape[1], -1.0)
    val = np.zeros(U.shape[1])
    for mx, v in pairs:  # chunks in row order: strictly larger wins, so the first row wins ties
        take = mx > best
        best[take] = mx[take]
        val[take] = v[take]
    signs = np.sign(val)
    signs[signs == 0] = 1
    return signs


def _col_stats(A, B):
    """Chunk sums of A*B, A*A, B*B per column (float64)."""
    A = aligned(np.asarray(A, dtype=np.float64))
    B = aligned(np.asarray(B, dtype=np.float64))
    return np.stack([np.einsum("ij,ij->j", A, B), np.einsum("ij,ij->j", A, A),
                     np.einsum("ij,ij->j", B, B)])


def column_stats(A, B) -> np.ndarray:
    """(3, k): column dots, squared norms of A and of B for equally chunked dask A, B."""
    da = require_dask()
    B = B.rechunk({0: A.chunks[0], 1: -1})
    A = A.rechunk({1: -1})
    k = A.shape[1]
    parts = da.map_blocks(_col_stats, A, B, dtype=np.float64, chunks=((3,) * A.numblocks[0], (k,)))
    tot = parts.reshape(A.numblocks[0], 3, k).sum(axis=0)
    (out,) = gather("column statistics (3r)", tot)
    return out


def _ldexp_cols(B, e):
    """B·2^e in float64 (``e`` a scalar or one exponent per column): exact."""
    return np.ldexp(np.asarray(B, dtype=np.float64), e)


def column_exponents(*arrays) -> list[np.ndarray]:
    """For each dask array, the exponents e_j (one per column) of the powers of two 2^-e_j that
    bring columns whose squares or products of norms would over- or underflow into [0.5, 1)
    (``linalg.nystrom._gram_exponent`` of the column's largest |entry|, as ``metrics.
    _unit_range`` does in memory); 0 for columns of ordinary size. One reduction, r numbers
    per array reach the client."""
    from ..linalg.nystrom import _gram_exponent

    def colmax(A):
        A = A.rechunk({1: -1})
        k = A.shape[1]
        parts = A.map_blocks(_col_maxabs, dtype=np.float64,
                             chunks=((1,) * A.numblocks[0], (k,)))
        return parts.max(axis=0)

    bigs = gather("column maxima (r per array)", *(colmax(A) for A in arrays))
    return [np.array([_gram_exponent(float(b)) for b in big], dtype=np.int64) for big in bigs]


def _col_maxabs(B):
    """max |B| per column of one chunk as a (1, k) float64 row (zeros for an empty chunk)."""
    B = np.asarray(B, dtype=np.float64)
    return (np.abs(B).max(axis=0) if B.shape[0] else np.zeros(B.shape[1]))[None, :]


def _cos(U, Up, eu=None, ep=None) -> np.ndarray:
    """|u_iᵀ u'_i| / (‖u_i‖ ‖u'_i‖) per column of dask U, U' (0 for zero columns).

    The cosine does not depend on the length of either vector: columns whose norms or the
    product of two norms would over- or underflow (entries ~1e160 or ~1e-200) are multiplied
    by exact powers of two first (exponents ``eu``, ``ep`` from :func:`column_exponents`,
    computed here when not given), as the in-memory ``metrics._cosines`` does; columns of
    ordinary size are used as they are (bitwise the unscaled statistics).
    """
    if eu is None or ep is None:
        eu, ep = column_exponents(U, Up)
    if eu.any():
        U = U.map_blocks(_ldexp_cols, -eu, dtype=np.float64)
    if ep.any():
        Up = Up.map_blocks(_ldexp_cols, -ep, dtype=np.float64)
    st = column_stats(U, Up)
    den = np.sqrt(st[1]) * np.sqrt(st[2])
    out = np.zeros(U.shape[1])
    ok = den > 0
    out[ok] = np.minimum(1.0, np.abs(st[0][ok]) / den[ok])
    return out


class DaskAccess:
    """Access to G for the Nyström code when G is a DaskKernelMatrix or a dask array."""

    is_dask = True
    is_dask_access = True

    def __init__(self, G, working_memory=None):
        da = require_dask()
        if isinstance(G, DaskKernelMatrix):
            self.kind, self.G, self.dtype = "kernel", G, np.dtype(G.dtype)
        elif isinstance(G, da.Array):
            if G.ndim != 2:
                raise ValueError(f"G must be 2-D, got a dask array with {G.ndim} dimensions")
            if any(np.isnan(c) for cs in G.chunks for c in cs):
                raise ValueError("G has unknown chunk sizes (NaN in G.chunks); call "
                                 "G.compute_chunk_sizes() first")
            dt = G.dtype if G.dtype in (np.float32, np.float64) else np.dtype(np.float64)
            self.kind, self.G, self.dtype = "array", G.astype(dt), np.dtype(dt)
        else:  # pragma: no cover - dispatch guards this
            raise TypeError(f"DaskAccess needs a dask input, got {type(G).__name__}")
        self.shape = tuple(int(k) for k in G.shape)
        if min(self.shape) == 0:
            raise ValueError(f"G is empty (shape {self.shape}); expected rows and columns")
        self.budget = float(working_memory or 256) * 2**20

    # -------------------------------------------------------------------- access
    def prepare(self):
        if self.kind == "kernel":
            self.G.row_lse()
            if self.G.center:
                self.G.means()

    def block(self, rows, cols) -> np.ndarray:
        if self.kind == "kernel":
            return self.G.block(rows, cols)
        I = np.arange(self.shape[0])[rows] if isinstance(rows, slice) else np.asarray(rows)
        J = np.arange(self.shape[1])[cols] if isinstance(cols, slice) else np.asarray(cols)
        (out,) = gather(f"block {len(I)}x{len(J)}", self.G[I][:, J])
        return np.asarray(out)

    def left(self, J, B, out_dtype):
        if self.kind == "kernel":
            return self.G.left(J, B, out_dtype)
        out = self.G[:, np.asarray(J)] @ np.asarray(B).astype(self.dtype, copy=False)
        return out.astype(out_dtype)

    def right(self, I, A, out_dtype):
        if self.kind == "kernel":
            return self.G.right(I, A, out_dtype)
        out = self.G[np.asarray(I), :].T @ np.asarray(A).astype(self.dtype, copy=False)
        return out.astype(out_dtype)

    # -------------------------------------------------------------------- landmarks
    def select(self, side: str, s: int, method: str, r: int, rs, points=None) -> np.ndarray:
        """k-means landmarks on a gathered sample (the in-memory rule, distributed argmin)."""
        if method == "leverage":
            return self.leverage(side, s, r, rs)
        if points is None:
            if self.kind != "kernel":
                raise NotImplementedError("k-means landmarks on a dask G need row_points / "
                                          "col_points (the data points of that side)")
            points = self.G.X if side == "row" else self.G.Z
        return kmeans_landmarks(points, s, rs)

    def _sketch(self, side: str, Q):
        """C = G[:, Q] (side 'row') or G[Q, :]ᵀ (side 'col') as a float64 dask array."""
        if self.kind == "array":
            C = self.G[:, Q] if side == "row" else self.G[Q, :].T
            return C.astype(np.float64).rechunk({1: -1})
        apply = self.G.apply_cols if side == "row" else self.G.apply_rows
        return apply(Q, _as_float64, len(Q), np.float64)

    def leverage(self, side: str, s: int, r: int, rs) -> np.ndarray:
        """Ridge-leverage landmarks (``_leverage_landmarks``), its passes as dask reductions.

        Same random calls and the same block functions as in memory: CᵀC is a (p×p) reduction
        over the chunks, the scores a per-chunk map; the score vector (n floats, one per row
        of G or of Gᵀ) is gathered for the weighted draw on the client.

        The scores do not depend on the scale of G. The pass that forms CᵀC also reduces
        max |C|; when C's entries are so large or small that CᵀC over- or underflows
        (``_gram_exponent`` ≠ 0: G ~1e154 or ~1e-160), that Gram is discarded (chunks that
        would overflow enter it as zeros) and CᵀC and the scores are formed from C·2^-e, as
        in memory — one more pass over the sketch, at extreme scales only. For G of ordinary
        size the computation is bitwise the unscaled one (two passes).
        """
        from ..landmarks import leverage_draw
        from ..linalg.nystrom import _gram_exponent, _leverage_ridge

        n, m = self.shape if side == "row" else self.shape[::-1]
        if s >= n:
            return np.arange(n)
        p = min(m, max(2 * s, 4 * r, 64))
        Q = np.sort(rs.choice(m, p, replace=False))
        self.prepare()
        C = self._sketch(side, Q)
        Cg = C.map_blocks(_no_overflow, dtype=np.float64)
        big = C.map_blocks(_block_maxabs, dtype=np.float64, meta=np.empty((0, 0)),
                           chunks=tuple((1,) * len(c) for c in C.chunks)).max()
        CtC, big = gather("leverage Gram CᵀC (p×p) and max |C|", Cg.T @ Cg, big)
        e = _gram_exponent(float(big))
        if e:  # C·2^-e: the Gram of the in-memory path (exact powers of two)
            C = self._sketch(side, Q).map_blocks(_ldexp_cols, -e, dtype=np.float64)
            (CtC,) = gather("leverage Gram CᵀC (p×p), rescaled", C.T @ C)
        L = _leverage_ridge(np.asarray(CtC), r)
        C = self._sketch(side, Q)  # second pass, as in memory (nothing n×p is kept)
        if e:
            C = C.map_blocks(_ldexp_cols, -e, dtype=np.float64)
        scores = C.map_blocks(_aligned_scores, L, drop_axis=1, dtype=np.float64)
        (scores,) = gather("leverage scores (n)", scores)
        return np.sort(leverage_draw(np.asarray(scores), s, rs))

    # -------------------------------------------------------------------- estimates
    def change_estimate(self, res, prev, k: int, weights: str) -> float:
        """η between two consecutive solutions (the 'change' estimate), by dask reductions."""
        U, Up, V, Vp = (F[:, :k] for F in (res.U, prev.U, res.V, prev.V))
        eu, ep, ev, eq = column_exponents(U, Up, V, Vp)  # one reduction for the four
        cu = _cos(U, Up, eu, ep)
        cv = _cos(V, Vp, ev, eq)
        w = np.ones(k) if weights == "uniform" else np.asarray(res.s[:k], dtype=np.float64)
        return float((w @ (1 - cu) + w @ (1 - cv)) / k)

    def _probe_products(self, P, Q, Vh, Uh):
        """(G[P, :] @ Vh, G[:, Q]ᵀ @ Uh) for small probe sets, as small numpy arrays."""
        if self.kind == "array":
            return gather("probe products", self.G[P, :] @ Vh, self.G[:, Q].T @ Uh)
        G = self.G
        # the probe rows (columns) with the full problem's statistics plugged in: the same
        # block code evaluates G[P, :] and G[:, Q]
        XP = DaskKernelMatrix.gather_rows(G.X, P, "probe rows")
        ZQ = DaskKernelMatrix.gather_rows(G.Z, Q, "probe columns")
        Gp = DaskKernelMatrix(G.kernel, XP, G.Z, reference=G.reference)
        Gq = DaskKernelMatrix(G.kernel, G.X, ZQ, reference=G.reference)
        da = require_dask()
        if G.kernel.row_normalized:
            lse = G.row_lse()
            (lp,) = gather("probe normalisers", lse[P])
            Gp._lse = da.from_array(lp)
            Gq._lse = lse
        if G.center:
            r, c, g = G.means()
            rp, cq = gather("probe means", r[P], c[Q])
            Gp.set_means(da.from_array(rp), c, g)
            Gq.set_means(r, da.from_array(cq), g)
        return gather("probe products", Gp.matmat(Vh), Gq.rmatmat(Uh))

    def residual_estimate(self, result, n_probes, rs, weights) -> float:
        """The 'residual' estimate of ``linalg.nystrom.residual_estimate`` with dask Ũ, Ṽ.

        Same probes (same random calls) and formula; the products G[P, :] V̂ and G[:, Q]ᵀ Û
        are dask reductions over the chunks, and only r-vectors and probe rows are gathered.
        """
        from ..linalg.nystrom import _residual_eta

        N, M = self.shape
        Uh, Vh = (F.astype(np.float64) / np.where(nf == 0, 1.0, nf)
                  for F in (result.U, result.V) for nf in [np.sqrt(column_stats(F, F)[0])])
        s = np.asarray(result.s, dtype=np.float64)
        P, Q = (np.sort(rs.choice(n, min(n, n_probes or max(256, 2 * len(lm))), replace=False))
                for n, lm in ((N, result.row_landmarks), (M, result.col_landmarks)))
        GV, GU = self._probe_products(P, Q, Vh, Uh)
        UP, VQ = gather("probe rows of U, V", Uh[P], Vh[Q])
        return _residual_eta(np.asarray(GV) - UP * s, np.asarray(GU) - VQ * s, N, M, s,
                             result.info.get("next_singular_value", 0.0), weights)


def _aligned_scores(C, L):
    """``_leverage_block_scores`` of one chunk, its operands aligned (see ``kernel.aligned``)."""
    from ..linalg.nystrom import _leverage_block_scores

    return _leverage_block_scores(aligned(C), aligned(L))


def _as_float64(B):
    return np.asarray(B, dtype=np.float64)


def _no_overflow(B):
    """The chunk itself, or zeros when its squares could overflow (max |B| > 2^256): the
    Gram that such a chunk enters is discarded and formed again rescaled."""
    from ..linalg.nystrom import _gram_exponent

    return np.zeros_like(B) if _gram_exponent(_maxabs(B)) > 0 else B


def _block_maxabs(B):
    """max |B| of one block as a (1, 1) array (0 for an empty block)."""
    return np.full((1, 1), _maxabs(np.asarray(B)))


def _max_abs(A):
    """max |A| of a row-chunked dask array (dense or CSR chunks) as a delayed float: one
    task per chunk and a pairwise tree (0 for an empty array)."""
    parts = [task(_maxabs, b) for b in A.to_delayed().ravel()]
    return _tree(parts, max) if parts else 0.0


def global_maxabs(A) -> float:
    """max |A| of a dask array (one reduction, one number on the client)."""
    (big,) = gather("max |X| (one number)", _max_abs(A))
    return float(big)


def _nearest_chunk(C, Xc, offset: int):
    """``(squared distances, global row indices, e)``: the row of the chunk X_c nearest to each
    centre and its squared distance in units of 2^(2e) (:func:`.kernel._nearest_task`);
    ``None`` for an empty chunk (no candidate)."""
    if Xc.shape[0] == 0:
        return None
    return _nearest_task(np.asarray(C), Xc, offset)


def nearest_indices(C, X) -> np.ndarray:
    """For each centre (row of C), the global index of the nearest row of the dask X.

    The distributed counterpart of :func:`asymkern.landmarks.nearest_points`, with the same
    result: one task per chunk (:func:`_nearest_chunk`: the chunk's nearest row by
    :func:`~asymkern.landmarks.nearest_rows`, exact wherever the data lie, and its squared
    distance recomputed directly from the data in float64) and an argmin over the chunks on
    the client, the lower index winning ties. A chunk whose squared distances could over- or
    underflow (data ~1e160 or ~1e-200) gives them multiplied by an exact power of two, and
    they are brought to the largest unit among the chunks by exact powers of two before the
    comparison. Two numbers per centre and chunk reach the client.

    Raises
    ------
    ValueError
        If X has no rows.
    """
    from dask import delayed

    Cd, bounds = delayed(np.asarray(C), pure=True), _chunk_bounds(X.chunks[0])
    parts = [task(_nearest_chunk, Cd, b, int(bounds[k]))
             for k, b in enumerate(X.to_delayed()[:, 0])]
    found = [p for p in gather("nearest rows", *parts) if p is not None]
    if not found:
        raise ValueError("X must have at least one row to search for the nearest rows")
    dists, inds, exps = zip(*found)
    top = max(exps)
    if top or min(exps):  # common units 2^(2·top) (exact: ldexp by a non-positive amount)
        dists = tuple(np.ldexp(np.asarray(d, dtype=np.float64), 2 * (e - top))
                      for d, e in zip(dists, exps))
    D, ind = np.stack(dists), np.stack(inds)
    best = np.argmin(D, axis=0)  # the first chunk, so the lower global index, on ties
    return ind[best, np.arange(D.shape[1])]


def kmeans_landmarks(P, s: int, rs) -> np.ndarray:
    """Indices of the points nearest to s k-means centres fitted on a gathered sample.

    Same random calls as the in-memory ``_kmeans_landmarks`` / ``select_landmarks``: for
    n ≤ 20000 (``_KMEANS_GATHER_MAX``) the points (a sample by definition) are gathered and
    the in-memory selector runs; above, k-means runs on a gathered subsample of max(20s, 2000)
    rows (``landmarks.sampled_kmeans``, which clusters a sample of extreme magnitude rescaled
    by a power of two) and the nearest point to each centre is found by a distributed argmin
    over the chunks (:func:`nearest_indices`, scale-free like the in-memory
    ``nearest_points``): the same landmarks at every scale of the points. Points that are
    already in memory (``row_points`` / ``col_points``, which ``asymmetric_nystrom`` checks
    into numpy) take the in-memory selectors directly.
    """
    from .._dispatch import is_dask_array
    from ..landmarks import sampled_kmeans, select_landmarks, unique_topped_up

    n = int(P.shape[0])
    if s >= n:
        return np.arange(n)
    if not is_dask_array(P):  # the in-memory rule of linalg.nystrom.select_indices
        from ..linalg.nystrom import _kmeans_landmarks

        if n > _KMEANS_GATHER_MAX:
            return _kmeans_landmarks(P, s, rs)
        return np.sort(select_landmarks(P, s, "kmeans", random_state=rs))
    if n <= _KMEANS_GATHER_MAX:
        pts = DaskKernelMatrix.gather_rows(P, np.arange(n), "k-means points (n <= 20000)")
        return np.sort(select_landmarks(pts, s, "kmeans", random_state=rs))
    centers = sampled_kmeans(n, s, rs,
                             lambda sub: DaskKernelMatrix.gather_rows(P, sub, "k-means sample"))
    return unique_topped_up(nearest_indices(centers, P), n, s, rs)


def _tsqr(A):
    """Q, R of a tall dask array (TSQR); R gathered (r×r), Q persisted in the cluster."""
    da = require_dask()
    Q, R = da.linalg.tsqr(A.rechunk({1: -1}))
    # one submission of the one graph: Q persisted and R computed in two calls sent the
    # tsqr's shared keys to the scheduler twice, with other task specs, which under a
    # distributed Client can fail a scheduler assertion and leave the fit waiting forever
    Q, R = persist(Q, R)
    (R,) = gather("R factor (r×r)", R)
    return Q, R


def nystrom_once(acc: DaskAccess, r: int, I, J, core_solver: str, rcond, rs, normalize: bool,
                 warn: bool = True, orthogonalize: bool = False):
    """One asymmetric Nyström solve (eq. 9) with Ũ, Ṽ as dask arrays (never gathered)."""
    from ..linalg.nystrom import _core_solve, nystrom_result, orthogonal_factors

    N, M = acc.shape
    Uw, swk, Vw, n_keep, s_next, c = _core_solve(acc, r, I, J, core_solver, rcond, rs, warn)
    out_dtype = acc.dtype
    U = acc.left(J, (Vw / swk) * c, out_dtype)
    V = acc.right(I, (Uw / swk) * c, out_dtype)
    # one pass each, kept in the cluster (workers' memory, O((N + M) r)): the sign rule below
    # reads U, and every later use (transforms, user computes) starts from the stored chunks,
    # so the fit costs the same kernel evaluations as in memory
    U, V = persist(U, V)
    # the in-memory path refuses a non-finite G before it starts; here only the columns J
    # and rows I are read, and a NaN or inf among them reaches Ũ or Ṽ (one reduction each)
    da = require_dask()
    if not all(gather("finiteness of the Nyström factors", da.isfinite(U).all(),
                      da.isfinite(V).all())):
        raise ValueError(
            "G contains NaN or infinity in the columns or rows the Nyström method reads (its "
            "landmark columns G[:, J] and rows G[I, :]); expected finite values")
    s = swk * np.sqrt(N * M / (len(I) * len(J)))
    mix_u = mix_v = None
    if orthogonalize:  # the same algebra as in memory, with a tall-skinny QR of Ũ and Ṽ
        U, s, V, mix_u, mix_v = orthogonal_factors(U, V, s, _tsqr)
        U, V = persist(U.astype(out_dtype), V.astype(out_dtype))
    elif normalize:
        nu, nv = (np.maximum(np.sqrt(column_stats(F, F)[0]), np.finfo(float).tiny)
                  for F in (U, V))
        U, V = (U / nu).astype(out_dtype), (V / nv).astype(out_dtype)
        mix_u, mix_v = np.diag(1 / nu), np.diag(1 / nv)
    signs = paired_signs(U)
    return nystrom_result(U, s, V, I, J, Uw, swk, Vw, c, signs, mix_u, mix_v, r=r,
                          n_keep=n_keep, s_next=s_next, shape=(N, M), out_dtype=out_dtype,
                          executor="dask")
