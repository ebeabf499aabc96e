"""Top-r SVD of a lazy Dask kernel (or a dask array): the executor behind ``top_svd``.

``solver='randomized'`` runs the engine's own algorithm, ``dask.array.linalg.svd_compressed``
(Halko et al. with QR-stabilised power iterations), with ``compute=True`` so that every pass
recomputes the kernel blocks in their tasks instead of keeping G. It fits every kernel here,
centred and row-normalised ones included: the statistics those need (log-normalisers, row and
column means) are tree reductions computed and persisted *before*, after which every block of
the centred, normalised G is a function of (chunk of X, chunk of Z, persisted statistics) alone
— exactly what ``DaskKernelMatrix.to_dask_array`` builds — so no pass of our own is needed.
Its random test matrix is drawn per column chunk, so the result is reproducible for a fixed
chunking and ``random_state`` (and agrees with the in-memory randomized solver to the accuracy of
a randomized SVD, not bitwise). ``solver='nystrom'`` goes through ``asymmetric_nystrom``
(:mod:`asymkern._dask.nystrom`). 'dense'/'arpack' gather G when it fits ``max_dense_memory``.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from . import require_dask
from .kernel import DaskKernelMatrix, gather
from .nystrom import paired_signs, persist


def _seed(random_state) -> int | None:
    if random_state is None:
        return None
    if isinstance(random_state, (int, np.integer)):
        return int(random_state)
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


def dask_randomized_svd(G, r: int, n_oversamples: int = 10, n_iter="auto", random_state=None):
    """Randomized SVD of a DaskKernelMatrix or a dask array by ``svd_compressed``."""
    from ..linalg.svd import SVDResult

    da = require_dask()
    A = G.to_dask_array() if isinstance(G, DaskKernelMatrix) else G
    n, m = A.shape
    if n_iter == "auto":
        n_iter = 7 if r < 0.1 * min(n, m) else 4
    k = min(r + int(n_oversamples), n, m)
    U, s, Vt = da.linalg.svd_compressed(
        A, k, iterator="QR", n_power_iter=int(n_iter), n_oversamples=0,
        seed=_seed(random_state), compute=True, coerce_signs=False,
    )
    # the last pass (QᵀG and its small SVD) once, kept in the cluster: s, the sign pass and
    # every later use of U, V read the stored chunks instead of recomputing kernel blocks
    U, s, Vt = persist(U, s, Vt)
    (s,) = gather("singular values", s)
    order = np.argsort(s)[::-1][:r]
    U = U[:, order]
    V = Vt.T[:, order]
    signs = paired_signs(U)
    return SVDResult(U * signs.astype(U.dtype), s[order], V * signs.astype(V.dtype),
                     "randomized", {"n_oversamples": n_oversamples, "executor": "dask"})


def dask_top_svd(G, n_components: int, solver: str = "auto", random_state=None, **options):
    """``top_svd`` for a DaskKernelMatrix or a dask array G (see the module docstring)."""
    from .._validation import check_n_components
    from ..linalg.svd import SOLVERS, top_svd

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
    r = check_n_components(n_components, min(shape), what=f"min(n, m) of G with shape {shape}")
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; expected one of {SOLVERS}")
    if solver == "auto":
        solver = "randomized"
    if solver == "randomized":
        opts = {k: v for k, v in options.items() if k in ("n_oversamples", "n_iter")}
        return dask_randomized_svd(G, r, random_state=random_state, **opts)
    if solver == "nystrom":
        from ..linalg.nystrom import asymmetric_nystrom
        from ..linalg.svd import SVDResult

        res = asymmetric_nystrom(G, r, random_state=random_state, **options)
        return SVDResult(res.U, res.s, res.V, "nystrom", {"nystrom": res})
    # dense / arpack: only when G fits the dense budget on the client
    if isinstance(G, DaskKernelMatrix):
        dense = G.to_array()
    else:
        from ..config import get_config

        limit = get_config()["max_dense_memory"]
        nbytes = shape[0] * shape[1] * np.dtype(G.dtype).itemsize
        if nbytes > limit * 2**20:
            from ..kernels.matrix import MemoryBudgetError

            raise MemoryBudgetError(
                f"solver={solver!r} gathers the {shape[0]}x{shape[1]} dask matrix G "
                f"({nbytes / 2**20:.1f} MiB, above max_dense_memory={limit} MiB); use "
                "solver='randomized' or 'nystrom' for dask inputs"
            )
        (dense,) = gather("dense G", G)
    return top_svd(np.asarray(dense), r, solver=solver, random_state=random_state, **options)
