"""Top-r SVD of a lazy Dask kernel (or a dask array): the executor behind ``top_svd``.

``solver='randomized'`` runs the same passes as the in-memory solver
(:func:`asymkern.linalg.svd.randomized_passes`: Halko et al. 2011, Alg. 4.4, subspace
iteration on Gᵀ G stabilised by QR; in memory by LU, the same subspace), with the products
G·B and Gᵀ·B computed blockwise in tasks
(every pass recomputes the kernel blocks; G is never stored) and the QR of each tall n×k
iterate by ``dask.array.linalg.tsqr``. We do not call ``dask.array.linalg.svd_compressed``,
although it runs this very algorithm, for one reason: it draws its test matrix Ω per column
chunk with ``dask.array.random``, so its result depends on how Z is chunked. Here Ω comes
from :func:`asymkern._random.normal_rows` (fixed global row blocks, one seed), the same Ω the
in-memory solver draws, so the result is the in-memory one to rounding whatever the chunking
(bitwise for a fixed chunking and scheduler). Centring and row normalisation need no pass of
their own: their statistics (log-normalisers, row/column means) are tree reductions persisted
*before*, after which every block of the centred, normalised G is a function of (chunk of X,
chunk of Z, statistics) alone. ``solver='nystrom'`` goes through ``asymmetric_nystrom``
(:mod:`asymkern._dask.nystrom`). 'dense'/'arpack' gather G when it fits ``max_dense_memory``;
where it does not, 'arpack' iterates on the client with G's products computed in the cluster
(:func:`cluster_operator`, as the device executors run ARPACK on the host) and 'dense'
refuses. 'auto' is the in-memory rule (:func:`asymkern.linalg.svd.auto_solver`): dense or
ARPACK on the gathered G when it fits that budget, else the randomized SVD in the cluster.

"That budget" is G's own: the ``max_dense_memory`` of a :class:`DaskKernelMatrix` (fixed when
it is built, as for the in-memory :class:`~asymkern.kernels.KernelMatrix`), the setting for a
dask array. Every client-side check of this module uses it — the choice of 'auto', the gather,
the LAPACK workspace of a gathered G and ARPACK's Lanczos arrays (n·ncv and m·ncv floats on the
client) — as the in-memory solvers check a lazy KernelMatrix against its own budget.
"""

from __future__ import annotations

import numpy as np

from .._dispatch import require_dask
from .kernel import DaskKernelMatrix, _chunk_bounds, gather, stack_rows
from .nystrom import paired_signs, persist


def gaussian_rows_dask(seed: int, chunks: tuple, k: int, dtype):
    """The Gaussian matrix of :func:`asymkern._random.normal_rows` as a dask array.

    Row chunks ``chunks``; each chunk draws its own rows inside its task (nothing is sent from
    the client), and the numbers do not depend on ``chunks``.
    """
    from dask import delayed

    from .._random import normal_rows

    bounds = _chunk_bounds(chunks)
    parts = [delayed(normal_rows, pure=True)(seed, int(a), int(b), k, dtype)
             for a, b in zip(bounds[:-1], bounds[1:])]
    return stack_rows(parts, chunks, dtype, k)


def _orth(Y):
    """Orthonormal basis of the tall dask Y by TSQR, persisted (one pass of G per call)."""
    da = require_dask()
    Q, _ = da.linalg.tsqr(Y.rechunk({1: -1}))
    (Q,) = persist(Q)
    return Q


def dask_randomized_svd(G, r: int, n_oversamples: int = 10, n_iter="auto", random_state=None,
                        method: str = "power"):
    """Randomized SVD of a DaskKernelMatrix or a dask array (see the module docstring).

    Same options, same Ω and same passes as :func:`asymkern.linalg.svd.randomized_svd`; U and
    V are dask arrays chunked like X and Z (persisted, never gathered).
    """
    from .._random import seed_from
    from ..linalg._svd_core import (
        krylov_passes,
        needs_two_pass,
        resolve_randomized_plan,
        two_pass_refinement,
        unit_scale,
    )
    from ..linalg.svd import (
        SVDResult,
        _check_random_state,
        check_randomized_options,
        randomized_passes,
    )

    da = require_dask()
    n_oversamples, n_iter = check_randomized_options(n_oversamples, n_iter, method)
    rng = _check_random_state(random_state)
    c = 1.0
    if isinstance(G, DaskKernelMatrix):
        col_chunks, dtype = G.col_chunks, np.dtype(G.dtype)

        def mm(B):
            return G.matmat(B)

        def rmm(B):
            return G.rmatmat(B)
    else:
        dtype = np.dtype(G.dtype)
        if dtype not in (np.float32, np.float64):
            dtype = np.dtype(np.float64)
            G = G.astype(dtype)
        col_chunks = G.chunks[1]
        top = max(float(v) for v in gather("max and -min of G", G.max(), -G.min()))
        if not np.isfinite(top):  # a NaN or inf among the entries (the max reduction carries it)
            raise ValueError("G contains NaN or infinity; expected finite values")
        c = unit_scale(top)

        def mm(B):
            return G @ B if c == 1.0 else (G @ B) * c

        def rmm(B):
            return G.T @ B if c == 1.0 else (G.T @ B) * c
    n, m = (int(k) for k in G.shape)
    k = min(r + n_oversamples, n, m)
    method, n_iter = resolve_randomized_plan(method, n_iter, r, k, n, m)
    Omega = gaussian_rows_dask(seed_from(rng), col_chunks, k, dtype)
    def gram(B):
        return rmm(mm(B))

    if method == "block_krylov":
        W, Y = krylov_passes(mm, gram, _orth, Omega, n_iter,
                             concat=lambda blocks: da.concatenate(blocks, axis=1))
    else:
        W, Y = randomized_passes(mm, gram, _orth, _orth, Omega, n_iter)

    def svd_of(Y):
        # G W = P S Rᵀ (TSQR + SVD of the small R) and G ≈ G W Wᵀ: U = P, V = W R
        P, s, Rt = da.linalg.tsqr(Y.rechunk({1: -1}), compute_svd=True)
        # the three outputs persisted in one submission (as _tsqr does): the small ones
        # gathered and U = P[:, order] persisted in separate calls sent shared keys twice
        # with other specs
        P, s, Rt = persist(P, s, Rt)
        (s, Rt) = gather("singular values and the k×k factor", s, Rt)
        return P, s, Rt

    P, s, Rt = svd_of(Y)
    refined = 0
    if (method == "power" and n_iter and k < min(n, m)
            and needs_two_pass(np.sort(s)[::-1], r, dtype, max(n, m))):
        # σ_r below the fused passes' floor: iterate on in the two-pass form, as in memory
        W, Y = two_pass_refinement(mm, rmm, _orth, Y, n_iter)
        refined = n_iter
        P, s, Rt = svd_of(Y)
    order = np.argsort(s)[::-1][:r]
    U = P[:, order].astype(dtype)
    V = W @ np.ascontiguousarray(Rt.T[:, order]).astype(dtype, copy=False)
    U, V = persist(U, V)  # kept in the cluster; the sign flip below is a lazy view of them
    signs = paired_signs(U)
    return SVDResult(U * signs.astype(dtype), np.asarray(s[order]) / c, V * signs.astype(dtype),
                     "randomized" if method == "power" else method,
                     {"n_oversamples": n_oversamples, "method": method, "n_iter": n_iter,
                      "precision": "high", "refined": refined, "executor": "dask"})


def drop_empty_chunks(G):
    """The non-empty 2-D dask array ``G`` without its zero-size chunks (``G`` itself if none).

    dask's whole-array ``max``/``min`` reductions fail on a zero-size chunk (a NumPy
    concatenation error), and a slice or a concatenation easily leaves one; the randomized
    solvers and the scale of the cluster-side ARPACK read those reductions. Dropping the empty
    chunks changes no value, as the empty row chunks of a data set X are dropped by
    :func:`asymkern._dask.kernel.as_dask_data`.

    Parameters
    ----------
    G : dask array
        A 2-D dask array with known chunk sizes and at least one row and one column.

    Returns
    -------
    dask array
        ``G`` rechunked to its non-empty chunks along both axes.
    """
    if not any(0 in cs for cs in G.chunks):
        return G
    return G.rechunk(tuple(tuple(c for c in cs if c) for cs in G.chunks))


def dask_top_svd(G, n_components: int, solver: str = "auto", random_state=None, **options):
    """``top_svd`` for a DaskKernelMatrix or a dask array G (see the module docstring)."""
    from .._validation import check_n_components
    from ..linalg._svd_core import RANDOMIZED_SOLVERS
    from ..linalg.svd import SOLVERS, auto_solver, top_svd

    da = require_dask()
    if isinstance(G, da.Array):
        if G.ndim != 2:
            raise ValueError(f"G must be a 2-D matrix, got a dask array with {G.ndim} dimensions")
        if any(np.isnan(c) for cs in G.chunks for c in cs):
            raise ValueError("G has unknown chunk sizes (NaN in G.chunks); call "
                             "G.compute_chunk_sizes() first")
    shape = tuple(int(k) for k in G.shape)
    if min(shape) == 0:
        raise ValueError(f"G is empty (shape {shape}); expected at least one row and one column")
    if isinstance(G, da.Array):
        G = drop_empty_chunks(G)
    r = check_n_components(n_components, min(shape), what=f"min(n, m) of G with shape {shape}")
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; expected one of {SOLVERS}")
    from ..config import config_context, get_config

    # G's budget: a DaskKernelMatrix's own (as KernelMatrix.max_dense_memory in memory)
    limit = getattr(G, "max_dense_memory", None) or get_config()["max_dense_memory"]
    if solver == "auto":  # the in-memory rule: G gathered when it fits its budget
        solver, _ = auto_solver("kernel", shape[0], shape[1], r, G.dtype, limit)
    if solver in RANDOMIZED_SOLVERS:
        opts = {k: v for k, v in options.items() if k in ("n_oversamples", "n_iter")}
        return dask_randomized_svd(G, r, random_state=random_state,
                                   method=RANDOMIZED_SOLVERS[solver], **opts)
    if solver == "nystrom":
        from ..linalg.nystrom import asymmetric_nystrom
        from ..linalg.svd import SVDResult

        res = asymmetric_nystrom(G, r, random_state=random_state, **options)
        return SVDResult(*res.factors(), "nystrom", {"nystrom": res})
    nbytes = shape[0] * shape[1] * np.dtype(G.dtype).itemsize
    if solver == "arpack" and nbytes > limit * 2**20 and r < min(shape):
        from ..linalg._svd_core import arpack_svd, unit_scale
        from ..linalg.svd import SVDResult

        # ARPACK's Lanczos basis and the factors are client arrays: checked against G's
        # budget before anything is computed (arpack_svd itself, which sees only a
        # LinearOperator, would read the setting), then run with that budget in effect
        _check_arpack_budget(G, shape, r, limit)
        # the scale rule of a formed G (extreme entries): read in the cluster, a dask G only
        c = 1.0 if isinstance(G, DaskKernelMatrix) else unit_scale(
            float(gather("max |G|", abs(G).max())[0]))
        opts = {k: v for k, v in options.items() if k == "tol"}
        with config_context(max_dense_memory=limit):
            found = arpack_svd(cluster_operator(G) * c, r, random_state=random_state, **opts)
        info = {**(found.info or {}), "executor": "dask"}
        dt = np.dtype(G.dtype)  # float32 G: float32 factors, as in memory and when gathered
        return SVDResult(found.U.astype(dt, copy=False), (found.s / c).astype(dt, copy=False),
                         found.V.astype(dt, copy=False), "arpack", info)
    # dense (and arpack on a G that fits): G gathered on the client, then solved there. The
    # whole client peak is checked before anything is gathered, as the numpy path checks it
    # (check_svd_budget: the gathered G and the dense solver's copy, U, Vᵀ and workspace, or
    # ARPACK's arrays beside the gathered G), through check_memory (nbytes, budget, what)
    from ..linalg._svd_core import check_svd_budget

    dense_solve = solver == "dense" or r >= min(shape)  # ARPACK's dense fallback counts G
    check_svd_budget(solver, shape[0], shape[1], r, G.dtype,
                     extra=0 if dense_solve else nbytes, limit=limit)
    if isinstance(G, DaskKernelMatrix):
        dense = G.to_array()
    else:
        (dense,) = gather("dense G", G)
    with config_context(max_dense_memory=limit):  # the gathered G's solver: G's budget too
        return top_svd(np.asarray(dense), r, solver=solver, random_state=random_state,
                       **options)


def _check_arpack_budget(G, shape: tuple, r: int, limit: float) -> None:
    """Refuse ARPACK on the client past G's budget (``limit`` MiB), before any pass.

    Its Lanczos basis (min(n, m) × ncv, twice), workspace and the n×r, m×r factors with their
    copies (:func:`asymkern.linalg._svd_core.arpack_svd_bytes`) live on the client. The error
    names the request and what to change: for a :class:`DaskKernelMatrix` its own
    ``max_dense_memory``, fixed when it was built (a later setting does not change it).

    Raises
    ------
    MemoryBudgetError
        When the estimate exceeds ``limit`` MiB (a :class:`MemoryError`).
    """
    from ..config import MemoryBudgetError, check_memory, format_bytes
    from ..linalg._svd_core import arpack_svd_bytes

    n, m = shape
    need = arpack_svd_bytes(n, m, r, G.dtype)
    what = (f"solver='arpack' on the {n}×{m} dask {'kernel ' * isinstance(G, DaskKernelMatrix)}"
            f"matrix G for r = {r} components (ARPACK iterates on the client)")
    detail = (f"ARPACK's Lanczos basis of min(n, m) = {min(n, m)} rows and the n×r, m×r "
              "factors with their copies")
    alternatives = "fewer components, or solver='randomized' or 'nystrom' (run in the cluster)"
    if not isinstance(G, DaskKernelMatrix):  # a dask array: the setting is its budget
        check_memory(need, what, alternatives, detail=detail, limit=limit)
        return
    if need > limit * 2**20:
        raise MemoryBudgetError(
            f"{what} needs ~{format_bytes(need)} ({detail}) but the max_dense_memory of G is "
            f"{limit:g} MiB (the matrix's own budget, fixed when it was built); build G with "
            "a larger one (KernelMatrix(..., max_dense_memory=...) or inside "
            f"asymkern.config_context(max_dense_memory=...)), or use {alternatives}",
            nbytes=int(need), budget=limit * 2**20, what=what)


def cluster_operator(G):
    """G (a DaskKernelMatrix or a 2-D dask array) as a scipy ``LinearOperator`` whose products
    G·V and Gᵀ·U are computed in the cluster and come back to the client as numpy arrays (n×k
    and m×k, never n×m): what ARPACK (Lehoucq, Sorensen & Yang, 1998), a host solver, needs to
    iterate on a G that the client cannot hold."""
    import dask
    from scipy.sparse.linalg import LinearOperator

    da = require_dask()
    dense = isinstance(G, da.Array)

    def product(V, transpose: bool):
        out = (G.T @ V if transpose else G @ V) if dense else (
            G.rmatmat(V) if transpose else G.matmat(V))
        out = np.asarray(dask.compute(out)[0])
        if not np.isfinite(out).all():  # a NaN or inf in G (ARPACK would fail obscurely)
            raise ValueError(f"G contains NaN or infinity (found in the product "
                             f"{'Gᵀ·U' if transpose else 'G·V'} computed in the cluster)")
        return out

    return LinearOperator(tuple(int(k) for k in G.shape), dtype=np.dtype(G.dtype),
                          matvec=lambda v: product(v, False), matmat=lambda V: product(V, False),
                          rmatvec=lambda u: product(u, True), rmatmat=lambda U: product(U, True))
