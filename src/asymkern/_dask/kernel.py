"""The lazy Dask kernel operator: G = [κ(x_i, z_j)] over row-chunked dask arrays X and Z.

Data flow
---------
X (n×d) and Z (m×d) are dask arrays chunked along rows only (numpy or scipy-sparse CSR chunks).
A kernel block G[chunk i of X, chunk j of Z] exists only inside the task that needs it, and only
in pieces: every task builds a small in-memory :class:`~asymkern.kernels.KernelMatrix` over its
two chunks (the global statistics plugged in) and runs its blocked loops — ``matmat`` /
``rmatmat``, ``iter_row_blocks``, column blocks of ``block()``, the row passes of the
log-normalisers — the very code the in-memory path runs, so there is one copy of the
mathematics and two executors. Those loops form sub-blocks of the matrix's ``working_memory``
(:attr:`DaskKernelMatrix.working_memory`), so a task's memory follows that budget, not the chunk
sizes; only :meth:`DaskKernelMatrix.to_dask_array` (whose chunks are whole chunk-pair blocks)
forms a whole chunk pair, checked against ``max_dense_memory`` first.

Statistics that need whole rows or columns are tree reductions over chunk pairs, computed once
and kept in the cluster (``persist``), never on the client:

* log-normalisers of row-normalised kernels (SNE, T): per block the float64 log-sum-exp of the
  row (``KernelMatrix._block_lse``), combined over the chunks of the reference set by
  ``np.logaddexp`` (exact in float64 to rounding);
* centring statistics: per block row and column sums of the uncentred (normalised) block,
  summed over the other side's chunks; grand mean from the row sums.

Products with small dense matrices (``G @ B``, ``Gᵀ @ B``, ``G[:, J] @ B``, ``G[I, :]ᵀ @ B``) are
dask arrays chunked like X (resp. Z). Only small things reach the client: gathered landmark rows
X[I], Z[J] (s×d), the core G[I, J] (s_x×s_z), r-vectors and scalars. Every client-side compute
goes through :func:`gather`, which records the size of what it brought back (tests check it).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._backend import LazyMatrix
from .._dispatch import is_dask_array, require_dask
from .._validation import as_data, check_positive

#: (description, nbytes) of every object :func:`gather` brought to the client (tests inspect it)
GATHER_LOG: list[tuple[str, int]] = []


def gather(what: str, *objs):
    """``dask.compute`` of small objects, logging the bytes that reach the client."""
    import dask

    from ..config import get_config

    if get_config()["show_progress"]:
        client = _active_client()
        if client is not None:  # the distributed progress bar
            from distributed import progress

            futures = client.compute(list(objs))
            progress(futures)
            out = tuple(client.gather(futures))
        else:
            from dask.diagnostics import ProgressBar

            with ProgressBar():
                out = dask.compute(*objs)
    else:
        out = dask.compute(*objs)
    size = sum(o.data.nbytes + o.indices.nbytes + o.indptr.nbytes if sp.issparse(o)
               else int(getattr(o, "nbytes", 8)) for o in out)
    GATHER_LOG.append((what, size))
    return out


def _active_client():
    """The distributed Client dask would use now, or None (local schedulers)."""
    import dask

    if dask.config.get("scheduler", None) not in (None, "dask.distributed", "distributed"):
        return None
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


# ------------------------------------------------------------------------------ validation
def _check_chunk(chunk, name: str, dtype, block_info=None):
    """Task: finite values and the working dtype of one row chunk (error names its rows)."""
    data = chunk.data if sp.issparse(chunk) else np.asarray(chunk)
    if not np.all(np.isfinite(data)):
        loc = block_info[0]["array-location"][0] if block_info else ("?", "?")
        raise ValueError(
            f"{name} contains NaN or infinity in rows [{loc[0]}, {loc[1]}) (one dask chunk); "
            "expected finite values"
        )
    out = sp.csr_matrix(chunk) if sp.issparse(chunk) else chunk
    return out if out.dtype == dtype else out.astype(dtype)


def as_dask_data(X, name: str = "X", *, allow_sparse: bool = False):
    """Validate a row-chunked dask array (numpy/CSR chunks) or wrap an in-memory one.

    Raises clear errors for unknown chunk sizes, chunking along the features, non-2-D input and
    sparse chunks where the kernel needs dense ones; NaN/inf inside a chunk is found when the
    chunk is computed and raised with its row range.
    """
    da = require_dask()
    if not isinstance(X, da.Array):
        A = as_data(X, name, allow_sparse=allow_sparse)
        return da.from_array(A, chunks=A.shape, asarray=not sp.issparse(A))
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D dask array (n_samples, n_features), got "
                         f"{X.ndim} dimensions")
    if any(np.isnan(c) for cs in X.chunks for c in cs):
        raise ValueError(
            f"{name} has unknown chunk sizes (NaN in {name}.chunks), e.g. after boolean "
            f"indexing; call {name}.compute_chunk_sizes() (or {name} = "
            f"{name}.compute_chunk_sizes()) before passing it"
        )
    if X.numblocks[1] != 1:
        raise ValueError(
            f"{name} is chunked along its features ({X.numblocks[1]} chunks on axis 1); the kernel "
            f"needs whole rows in each chunk: rechunk with {name}.rechunk({{1: -1}})"
        )
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {X.shape}); expected rows and features")
    if 0 in X.chunks[0]:  # empty row chunks (e.g. after slicing) carry no rows: drop them
        X = X.rechunk({0: tuple(c for c in X.chunks[0] if c)})
    sparse = sp.issparse(X._meta)
    if sparse and not allow_sparse:
        raise TypeError(f"{name} has sparse chunks, which this kernel does not accept; pass "
                        "dense chunks (e.g. X.map_blocks(lambda c: c.toarray()))")
    if np.iscomplexobj(X._meta):  # ValueError, as numpy and torch input
        raise ValueError(f"Complex data not supported: {name} is complex-valued; expected "
                         "real numbers")
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise TypeError(f"{name} must be real numeric, got dtype {X.dtype}")
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    meta = sp.csr_matrix((0, 0), dtype=dtype) if sparse else np.empty((0, 0), dtype=dtype)
    return X.map_blocks(_check_chunk, name, dtype, dtype=dtype, meta=meta)


def split_like(X, y, name: str = "X", *, allow_sparse: bool = False):
    """An in-memory ``X`` paired with a dask ``y``: X as a dask array row-chunked like ``y``.

    The estimators whose paired inputs must be chunked alike (labels, targets, time-shifted
    snapshots) then accept a numpy X with a dask y, as the Nyström machines do: X is already
    on the client, so it is split along ``y.chunks[0]`` (empty chunks are dropped by
    :func:`as_dask_data` afterwards). Anything else is returned unchanged for the usual
    checks to report: a dask X, a numpy y, a y with unknown chunk sizes or another number of
    rows.

    Parameters
    ----------
    X : array-like, sparse matrix or dask array
        The samples.
    y : array-like or dask array
        The paired second input (one entry or row per sample).
    name : str, default 'X'
        The name of ``X`` in error messages.
    allow_sparse : bool, default False
        Accept a sparse X (kept as CSR chunks).

    Returns
    -------
    X : dask array or the input
        X split like the rows of ``y``, or ``X`` itself.
    """
    if is_dask_array(X) or not is_dask_array(y) or y.ndim < 1:
        return X
    if any(np.isnan(c) for c in y.chunks[0]):
        return X
    A = as_data(X, name, allow_sparse=allow_sparse)
    if A.shape[0] != y.shape[0]:
        return X
    da = require_dask()
    return da.from_array(A, chunks=(y.chunks[0], A.shape[1]), asarray=not sp.issparse(A))


# ------------------------------------------------------------------------- aligned operands
def aligned(x):
    """``x`` with its numpy arrays (also inside tuples/lists) aligned in memory.

    distributed hands a task the arrays it received over the network as views of the message
    buffer, at any byte offset; numpy's ``@`` runs BLAS only on aligned operands and falls back to
    its own loop (other rounding) otherwise. Re-aligning (a copy only when needed) keeps every
    task's arithmetic identical to the in-process one, so results are bitwise the same whatever
    the workers.
    """
    if isinstance(x, np.ndarray):
        return x if x.flags.aligned else np.require(x, requirements=["A"])
    if isinstance(x, (tuple, list)):
        return type(x)(aligned(v) for v in x)
    return x


def call_aligned(func, *args, **kwargs):
    """``func(*args, **kwargs)`` with every array argument :func:`aligned` (a task wrapper)."""
    return func(*(aligned(a) for a in args), **{k: aligned(v) for k, v in kwargs.items()})


def _configured(settings: dict, func, *args):
    """``func(*args)`` (operands aligned) under the asymkern ``settings`` of the caller that
    built the task (a task wrapper)."""
    from ..config import config_context

    with config_context(**settings):
        return call_aligned(func, *args)


def task(func, *args):
    """The delayed task ``func(*args)`` (pure: deterministic keys), its operands aligned.

    It runs under the asymkern settings the caller sees when building it, those of an
    enclosing :func:`~asymkern.config.config_context` included: the budgets checked inside a
    task (``max_dense_memory``, ``working_memory``) are then the same whatever the scheduler
    (the synchronous one runs tasks in the caller's thread, the threaded one in a pool whose
    threads see only the process-wide settings, processes and cluster workers their own).
    """
    from dask import delayed

    from ..config import get_config

    return delayed(_configured, pure=True)(get_config(), func, *args)


# ------------------------------------------------------------------------------ block tasks
def _local(kernel, Xc, Zc, lse=None, means=None, working_memory: float | None = None):
    """The in-memory KernelMatrix of one chunk pair, with the global statistics plugged in;
    its blocked loops form sub-blocks of ``working_memory`` MiB (default: the setting in
    effect, the caller's inside a :func:`task`)."""
    from ..kernels.matrix import KernelMatrix

    km = KernelMatrix(kernel, Xc, Zc, working_memory=working_memory)
    if kernel.row_normalized:
        if lse is None:  # pragma: no cover - internal misuse
            raise RuntimeError("row-normalised kernel block without its normalisers")
        km._normalizers = np.asarray(lse, dtype=np.float64)
    if means is not None:
        km.center = True
        km._means = means
    return km


def _means_of(rmean, cmean, grand) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The centring statistics (row means, column means, grand mean) of one chunk pair in the
    float64 form :meth:`KernelMatrix._means64` holds them, or None (uncentred)."""
    if rmean is None:
        return None
    return (np.asarray(rmean, dtype=np.float64), np.asarray(cmean, dtype=np.float64),
            float(grand))


def _quiet():
    """No progress bars from the loops of the local matrices inside a task (the progress of a
    computation is dask's bar, shown by :func:`gather`)."""
    from ..config import config_context

    return config_context(show_progress=False)


def _block(kernel, Xc, Zc, lse=None, rmean=None, cmean=None, grand=None, dtype=None):
    """Dense block G[rows of Xc, rows of Zc] (normalised, centred when statistics are given),
    formed whole: the gathered blocks of :meth:`DaskKernelMatrix.block` and the chunks of
    :meth:`DaskKernelMatrix.to_dask_array`, both checked against ``max_dense_memory``."""
    B = _local(kernel, Xc, Zc, lse, _means_of(rmean, cmean, grand)).block()
    return B if dtype is None or B.dtype == dtype else B.astype(dtype)


def _lse_task(kernel, Xc, Rc, working_memory: float):
    """log Σ_{r ∈ chunk} k(x, r) per row of Xc: the block part of the streaming log-sum-exp.

    The rows of Xc in blocks of ``working_memory`` MiB against the whole chunk Rc, each block
    reduced in the pass that forms it (the row pass of
    :meth:`~asymkern.kernels.KernelMatrix.row_lse`). A row whose every value in this chunk is 0
    gives −inf, which the ``np.logaddexp`` tree over the chunks of the reference set absorbs.
    """
    from ..kernels.matrix import KernelMatrix, _lse_rows

    km = KernelMatrix(kernel, Xc, Rc, working_memory=working_memory)
    lse = np.empty(km.shape[0])
    with _quiet():
        for sl in km._row_slices():
            km._raw_rows(km.X[sl], km.Z, _lse_rows(lse[sl]))
    return lse


def _sums_task(kernel, Xc, Zc, lse, working_memory: float):
    """Row and column sums (float64) of one uncentred chunk pair (for the centring
    statistics), accumulated over its row blocks of ``working_memory`` MiB as
    :meth:`~asymkern.kernels.KernelMatrix.means` does."""
    km = _local(kernel, Xc, Zc, lse, None, working_memory)
    with _quiet():
        return km._block_sums(km._iter_blocks_uncentered())


def _add(a, b):
    return a + b


def _tree(items, op):
    """Deterministic pairwise tree reduction of delayed objects (fixed order, any scheduler)."""
    from dask import delayed

    items = list(items)
    while len(items) > 1:
        items = [delayed(op, pure=True)(items[k], items[k + 1]) if k + 1 < len(items)
                 else items[k] for k in range(0, len(items), 2)]
    return items[0]


def stack_rows(parts, chunks, dtype, *width):
    """The delayed row blocks ``parts`` (``chunks`` rows each, ``width`` columns when given)
    as one dask array."""
    da = require_dask()
    return da.concatenate([da.from_delayed(p, shape=(c, *width), dtype=dtype)
                           for p, c in zip(parts, chunks)], axis=0)


def _matmul(B, V):
    """B @ V in the promoted dtype (float32 kernel values times a float64 V: float64, as the
    in-memory KernelMatrix and the declared dtype of the dask result)."""
    V = np.asarray(V)
    dt = np.result_type(B.dtype, V.dtype)
    return B.astype(dt, copy=False) @ V.astype(dt, copy=False)


def _product_task(kernel, Xc, Zc, lse, rmean, cmean, grand, transpose: bool, V,
                  working_memory: float):
    """block @ V (or blockᵀ @ V with ``transpose``) of one chunk pair: the local matrix's
    blocked :meth:`~asymkern.kernels.KernelMatrix.matmat` / ``rmatmat`` (row blocks of
    ``working_memory`` MiB, centring through the global means as in memory)."""
    km = _local(kernel, Xc, Zc, lse, _means_of(rmean, cmean, grand), working_memory)
    with _quiet():
        return km.rmatmat(V) if transpose else km.matmat(V)


def _checked_rows(out, n_rows: int, func):
    """``out``, the value of ``func`` on a block of ``n_rows`` output rows, if it has as many
    rows (apply_cols / apply_rows need row-separable functions)."""
    if np.ndim(out) < 1 or np.shape(out)[0] != n_rows:
        raise ValueError(
            f"apply_cols/apply_rows: func {getattr(func, '__name__', func)!r} returned shape "
            f"{np.shape(out)} for a block of {n_rows} rows; it must be row-separable (one "
            "output row per row of the block), since the blocks are evaluated in row pieces "
            "within working_memory")
    return out


def _apply_task(kernel, Xc, Zc, lse, rmean, cmean, grand, transpose: bool,
                working_memory: float, func, *args):
    """func(block) (or func(blockᵀ)) of one chunk pair, in pieces along its output rows.

    ``func`` must be row-separable: func(B)[a:b] = func(B[a:b]) (G[:, J]·B, eq. 8 extensions,
    a dtype conversion). Without ``transpose`` the rows of Xc go in the local matrix's row
    blocks of ``working_memory`` MiB (``iter_row_blocks``); with it, the block is G[I, chunk of
    Z] and its columns (the rows of blockᵀ) go in column blocks of the same size
    (``block(:, columns)``, the normalisers and the centre of the whole chunk). The pieces of
    the output are stacked (one piece: returned as it is).
    """
    km = _local(kernel, Xc, Zc, lse, _means_of(rmean, cmean, grand), working_memory)
    parts = []
    with _quiet():
        if transpose:
            m = km.shape[1]
            # columns per block: as many as rows of a block with |I| columns
            step = int(max(1, min(m, km.working_memory * 2**20 // km.row_bytes(km.shape[0]))))
            for a in range(0, m, step):
                cols = slice(a, min(a + step, m))
                B = km.block(slice(None), cols)
                parts.append(_checked_rows(func(B.T, *args), cols.stop - a, func))
        else:
            for sl, B in km.iter_row_blocks():
                parts.append(_checked_rows(func(B, *args), sl.stop - sl.start, func))
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([np.asarray(p) for p in parts], axis=0)


def _empty_apply_task(n_rows: int, dtype, func, *args):
    """func(B) of the empty block B = G[chunk, ∅] (``n_rows`` × 0, the matrix dtype): what
    :meth:`DaskKernelMatrix.apply_cols` / ``apply_rows`` compute for an empty index set, with
    no kernel evaluation (a product B @ W gives the zero n_rows × k sum over no columns)."""
    return _checked_rows(func(np.empty((int(n_rows), 0), dtype=dtype), *args), int(n_rows), func)


def _chunk_bounds(chunks) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(chunks)]).astype(np.int64)


def _take_rows(chunk, local):
    return chunk[local]


def _nearest_task(C, Xc, offset: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(sq_dists, global row indices, e)``: the row of the non-empty chunk X_c nearest to each
    centre (row of C), and its squared distance in units of 2^(2e).

    The rows are those of the in-memory search, :func:`asymkern.landmarks.nearest_rows` (exact
    up to the rounding of the squared distances wherever the data lie, the lower index on
    ties). Its distances come in units that depend on the chunk, so the winners' squared
    distances Σ_k (c_k − x_k)² are recomputed here from the data in float64, multiplied by the
    power of two 2^-e (e = 0 unless the centred magnitudes of C and the winners could over- or
    underflow when squared), with the same arithmetic as the in-memory search: brought to
    common units by exact powers of two, they compare across chunks as the in-memory values
    do. scikit-learn's ``pairwise_distances_argmin_min`` (the expansion ‖c‖² + ‖x‖² − 2cᵀx
    about the origin) gave other rows than the nearest for 10 of 12 centres at an offset of 1e8.
    """
    from ..config import get_config
    from ..kernels.base import _needs_scaling, _pow2_exponent, pair_sq_dists
    from ..landmarks import nearest_rows

    Q = np.asarray(C, dtype=np.float64)
    i = nearest_rows(Q, Xc, 1)[0][:, 0]
    W = Xc[i]
    W = np.asarray(W.toarray() if sp.issparse(W) else W, dtype=np.float64)
    c = Q.mean(axis=0) if Q.shape[0] else np.zeros(Q.shape[1])
    with np.errstate(over="ignore", invalid="ignore"):
        big = float(np.max(np.abs(np.concatenate([Q - c, W - c])), initial=0.0))
    e = _pow2_exponent(big, np.float64) if np.isfinite(big) and _needs_scaling(
        big, np.float64) else 0
    budget = int(get_config()["working_memory"] * 2**20)
    rows = np.arange(Q.shape[0])
    d = pair_sq_dists(Q, W, rows, rows, math.ldexp(1.0, -e), budget)
    return d, i + offset, e


def _vstack(*parts):
    if any(sp.issparse(p) for p in parts):
        return sp.vstack(parts, format="csr")
    return np.concatenate(parts, axis=0)


# ---------------------------------------------------------------------------- the operator
class DaskKernelMatrix(LazyMatrix):
    """Lazy kernel matrix G = [κ(x_i, z_j)] over row-chunked dask arrays (never stored).

    Created by ``KernelMatrix(kernel, X, Z)`` whenever X, Z or ``reference`` is a dask array.
    The interface follows :class:`~asymkern.kernels.KernelMatrix` where it makes sense for
    distributed data: ``block``/``rows`` of *selected* (small) index sets return numpy arrays,
    while ``cols`` and the products ``matmat``/``rmatmat`` return dask arrays chunked like X
    (resp. Z). Row normalisers and centring statistics are tree reductions over chunk pairs,
    computed once and persisted in the cluster.

    Memory: no task forms a whole chunk-pair block for the lazy computations. The products
    (``matmat``/``rmatmat``, ``left``/``right``/``cols``, :meth:`apply_cols`/:meth:`apply_rows`),
    the log-normalisers and the centring statistics evaluate the kernel of each chunk pair in
    sub-blocks of ``working_memory`` MiB — the blocked loops of the in-memory
    :class:`~asymkern.kernels.KernelMatrix`, products and sums accumulated over the sub-blocks —
    so a task holds about ``working_memory`` of kernel values (plus its inputs and output)
    whatever the chunk sizes. Only :meth:`to_dask_array` (and :meth:`to_array`, which gathers
    it) has whole chunk-pair blocks as its chunks; it refuses, before computing, a block above
    ``max_dense_memory`` with the chunk sizes and the rechunk to apply.

    Parameters
    ----------
    kernel : Kernel, name or callable.
    X : (n, d) dask array, row-chunked (numpy or CSR chunks); numpy inputs are wrapped.
    Z : (m, d) dask array or None (Z = X).
    reference : normalisation set of row-normalised kernels (default: Z).
    center : double centring H_n G H_m (Tao et al., 2024, §2) through the persisted means.
    working_memory : MiB of kernel values (a sub-block and its temporary) a task forms at once;
        default None: the ``working_memory`` setting when the matrix is built (an enclosing
        :func:`~asymkern.config.config_context` included), see :attr:`working_memory`.
    max_dense_memory : MiB a gathered block (:meth:`block`, :meth:`to_array`), a chunk of
        :meth:`to_dask_array` or the client's arrays of ``top_svd`` on this matrix may take
        (default: the setting when the matrix is built).

    Both budgets are read when the matrix is built and fixed for its life, as for the
    in-memory :class:`~asymkern.kernels.KernelMatrix`: a later
    :func:`~asymkern.config.config_context` does not change them (build the matrix inside
    it, pass them to the constructor or assign :attr:`working_memory`).

    Empty index sets select nothing, as in memory: ``block``/``rows`` give an empty numpy
    array, ``cols(∅)`` an n×0 and ``left(∅, B)`` / ``right(∅, A)`` zero n×k / m×k dask arrays
    (the sum over no columns or rows), without a kernel evaluation.

    Raises
    ------
    ValueError, TypeError
        If ``working_memory`` or ``max_dense_memory`` is given and is not a positive finite
        number of MiB.
    """

    is_dask = True

    def __init__(self, kernel, X, Z=None, *, reference=None, center: bool = False,
                 working_memory: float | None = None, max_dense_memory: float | None = None):
        from ..config import get_config
        from ..kernels import get_kernel
        from ..kernels.matrix import check_reference_features

        self.kernel = get_kernel(kernel)
        ok = self.kernel.accepts_sparse
        self.same_sets = Z is None or Z is X
        self.X = as_dask_data(X, "X", allow_sparse=ok)
        self.Z = self.X if self.same_sets else as_dask_data(Z, "Z", allow_sparse=ok)
        if self.kernel.checks_features and self.X.shape[1] != self.Z.shape[1]:
            raise ValueError(
                f"X has {self.X.shape[1]} features but Z has {self.Z.shape[1]}; kernel "
                f"{self.kernel.name!r} needs equal feature counts"
            )
        self.reference = (self.Z if reference is None or reference is Z
                          else as_dask_data(reference, "reference", allow_sparse=ok))
        check_reference_features(self.kernel, self.Z.shape[1], self.reference.shape[1])
        self.center = bool(center)
        cfg = get_config()
        # validated like set_config's values; both are fixed for the life of this matrix, as
        # those of the in-memory KernelMatrix
        self._working_memory = check_positive(
            cfg["working_memory"] if working_memory is None else working_memory,
            "working_memory")
        self.max_dense_memory = check_positive(
            cfg["max_dense_memory"] if max_dense_memory is None else max_dense_memory,
            "max_dense_memory")
        both32 = self.X.dtype == np.float32 and self.Z.dtype == np.float32
        self.dtype: np.dtype = np.dtype(np.float32 if both32 else np.float64)
        self.shape = (int(self.X.shape[0]), int(self.Z.shape[0]))
        self._lse = None
        self._means: tuple[Any, Any] | None = None  # (row means, column means), dask arrays
        self._grand: float | None = None

    # ---------------------------------------------------------------------- layout helpers
    @property
    def working_memory(self) -> float:
        """MiB of kernel values a task of this matrix forms at once (a sub-block of a chunk
        pair and its temporary, as :meth:`~asymkern.kernels.KernelMatrix.block_rows` counts):
        the value given to the constructor, else the ``working_memory`` setting when the matrix
        was built (the in-memory :class:`~asymkern.kernels.KernelMatrix`'s rule); assigning a
        value replaces it (None: the setting in effect at the assignment). A computation reads
        it when it is built, and its tasks keep that value whatever the scheduler or the
        settings of the workers."""
        return self._working_memory

    @working_memory.setter
    def working_memory(self, value: float | None) -> None:
        if value is None:
            from ..config import get_config

            value = get_config()["working_memory"]
        self._working_memory = check_positive(value, "working_memory")

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.shape[1] * self.dtype.itemsize

    @property
    def row_chunks(self) -> tuple:
        return self.X.chunks[0]

    @property
    def col_chunks(self) -> tuple:
        return self.Z.chunks[0]

    def _xd(self):
        return list(self.X.to_delayed()[:, 0])

    def _zd(self):
        return list(self.Z.to_delayed()[:, 0])

    @staticmethod
    def gather_rows(A, idx, what: str = "rows"):
        """Rows A[idx] of a row-chunked dask array as a small numpy/CSR array (idx in order).

        ``idx``: integer indices (negative ones from the end) or a boolean mask, validated as
        the in-memory index sets (a ValueError or IndexError naming ``idx``); an empty one
        (``[]`` included) gives the 0 × d rows of A's dtype and layout.
        """
        from ..kernels.matrix import _as_index

        size = int(A.shape[0])
        if not isinstance(idx, slice) and np.size(idx) == 0:  # also [] (float64 to numpy)
            idx = np.zeros(0, dtype=np.int64)
        idx = _as_index(idx, size, "idx")
        idx = (np.arange(size)[idx] if isinstance(idx, slice)
               else np.asarray(idx, dtype=np.int64) % max(size, 1))
        bounds = _chunk_bounds(A.chunks[0])
        order = np.argsort(idx, kind="stable")
        sidx = idx[order]
        which = np.searchsorted(bounds, sidx, side="right") - 1
        blocks = A.to_delayed()[:, 0]
        # no index: the empty rows of the first chunk (its dtype and layout)
        parts = [task(_take_rows, blocks[b], sidx[which == b] - bounds[b])
                 for b in (np.unique(which) if idx.size else [0])]
        (out,) = gather(f"{what} ({len(idx)} rows)", task(_vstack, *parts))
        if np.array_equal(order, np.arange(order.size)):
            return out
        return out[np.argsort(order)]  # the inverse permutation: rows back in idx's order

    # ---------------------------------------------------------------------- statistics
    def lse_of(self, X):
        """log Σ_{r∈R} k(x, r) of the rows of a dask array X: (n,) float64 dask array, per
        chunk of X a tree reduction over the chunks of R (each chunk pair in row blocks of
        :attr:`working_memory`)."""
        rd = list(self.reference.to_delayed()[:, 0])
        wm = self.working_memory
        parts = [_tree([task(_lse_task, self.kernel, xc, rc, wm) for rc in rd], np.logaddexp)
                 for xc in X.to_delayed()[:, 0]]
        return stack_rows(parts, X.chunks[0], np.float64)

    def row_lse(self):
        """Persisted log-normalisers of every row (row-normalised kernels), chunked like X."""
        if self._lse is None and self.kernel.row_normalized:
            self._lse = self.lse_of(self.X).persist()
        return self._lse

    def row_normalizers(self):
        """Σ_{r∈R} k(x_i, r) as a dask array (None unless the kernel is row-normalised); a
        normaliser outside the normal range of the matrix dtype raises ``OverflowError`` when
        computed (:meth:`asymkern.kernels.KernelMatrix.row_normalizers`): use
        :meth:`row_lse` then."""
        from ..kernels.matrix import normalizers_from_lse

        if not self.kernel.row_normalized:
            return None

        def block(lse, block_info=None):
            first = block_info[0]["array-location"][0][0] if block_info else 0
            return normalizers_from_lse(lse, self.dtype, self.kernel.name, first)

        return self.row_lse().map_blocks(block, dtype=self.dtype)

    def _lse_chunks(self):
        lse = self.row_lse()
        if lse is None:
            return [None] * len(self.row_chunks)
        return list(lse.rechunk((self.row_chunks,)).to_delayed())

    def means(self):
        """(row means (n,), column means (m,)) as persisted dask arrays and the grand mean."""
        if self._means is None:
            import dask
            from dask import delayed

            from ..config import get_config

            n, m = self.shape
            zd = self._zd()
            cfg, wm = get_config(), self.working_memory
            # each task as task() builds it (the caller's settings, aligned operands), two outputs
            sums = [[delayed(_configured, pure=True, nout=2)(cfg, _sums_task, self.kernel, xc,
                                                             zc, lse, wm)
                     for zc in zd] for xc, lse in zip(self._xd(), self._lse_chunks())]
            rows = [_tree([s[0] for s in row], _add) for row in sums]
            cols = [_tree([row[j][1] for row in sums], _add) for j in range(len(zd))]
            r = stack_rows(rows, self.row_chunks, np.float64) / m
            c = stack_rows(cols, self.col_chunks, np.float64) / n
            r, c = dask.persist(r, c)
            (grand,) = gather("grand mean", r.sum() / n)
            self._means = (r, c)
            self._grand = float(grand)
        return self._means[0], self._means[1], self._grand

    def set_means(self, row_means, col_means, grand: float):
        """Centre with given statistics (e.g. new rows against the training columns' means)."""
        self.center = True
        self._means = (row_means, col_means)
        self._grand = float(grand)

    def _stat_chunks(self):
        """Per-chunk delayed (lse, row means) of X and column means of Z."""
        lses = self._lse_chunks()
        if not self.center:
            return lses, [None] * len(lses), [None] * len(self.col_chunks), None
        r, c, g = self.means()
        return (lses, list(r.rechunk((self.row_chunks,)).to_delayed()),
                list(c.rechunk((self.col_chunks,)).to_delayed()), g)

    # ---------------------------------------------------------------------- blocks
    def _index(self, idx, size: int, name: str) -> np.ndarray:
        from ..kernels.matrix import _as_index

        idx = _as_index(idx, size, name)
        if isinstance(idx, slice):
            idx = np.arange(size)[idx]
        return np.asarray(idx, dtype=np.int64) % size

    def block(self, rows, cols) -> np.ndarray:
        """Dense small sub-matrix G[rows][:, cols] for index arrays (gathered to numpy).

        Refuses when the block would exceed ``max_dense_memory`` (use :meth:`cols`/products).
        """
        from ..config import check_memory

        I = self._index(rows, self.shape[0], "rows")
        J = self._index(cols, self.shape[1], "cols")
        if I.size == 0 or J.size == 0:  # nothing selected: the empty block, as in memory
            return np.empty((I.size, J.size), dtype=self.dtype)
        # through check_memory, so that the error carries nbytes, budget and what (the
        # matrix's own budget, fixed when it was built, as the in-memory KernelMatrix's)
        check_memory(I.size * J.size * self.dtype.itemsize,
                     f"a {I.size}×{J.size} {self.dtype} block of the dask kernel matrix "
                     "(gathered on the client)", "the lazy products (matmat, rmatmat, cols)",
                     limit=self.max_dense_memory)
        XI = self.gather_rows(self.X, I, "X rows")
        ZJ = self.gather_rows(self.Z, J, "Z rows")
        lse = rm = cm = g = None
        if self.kernel.row_normalized:
            (lse,) = gather("row normalisers", self.row_lse()[I])
        if self.center:
            r, c, g = self.means()
            rm, cm = gather("means", r[I], c[J])
        return _block(self.kernel, XI, ZJ, lse, rm, cm, g, self.dtype)

    def rows(self, idx) -> np.ndarray:
        """Selected full rows G[idx, :] (small idx), gathered."""
        return self.block(idx, slice(None))

    def apply_cols(self, J, func, n_out: int, out_dtype, *args):
        """Dask (n, n_out) chunked like X: ``func(G[chunk, J], *args)`` per row chunk of X.

        The block G[chunk, J] (normalised, centred) exists only inside its task, in row blocks
        of :attr:`working_memory`: ``func`` must be row-separable (func(B)[a:b] equals
        func(B[a:b]) and has one row per row of B, as a product ``B @ W`` or a conversion;
        a task refuses a result with another number of rows), and the pieces are stacked. An
        empty ``J``: ``func`` of the empty (rows × 0) block per chunk, no kernel evaluated.
        """
        from dask import delayed

        J = self._index(J, self.shape[1], "cols")
        if J.size == 0:
            parts = [task(_empty_apply_task, c, self.dtype, func, *args)
                     for c in self.row_chunks]
            return stack_rows(parts, self.row_chunks, out_dtype, n_out)
        Zd = delayed(self.gather_rows(self.Z, J, "Z rows"), pure=True)
        cm = None
        if self.center:
            (cm,) = gather("column means", self.means()[1][J])
        lses, rms, _, g = self._stat_chunks()
        wm = self.working_memory
        parts = [task(_apply_task, self.kernel, xc, Zd, lse, rm, cm, g, False, wm, func, *args)
                 for xc, lse, rm in zip(self._xd(), lses, rms)]
        return stack_rows(parts, self.row_chunks, out_dtype, n_out)

    def apply_rows(self, I, func, n_out: int, out_dtype, *args):
        """Dask (m, n_out) chunked like Z: ``func(G[I, chunk]ᵀ, *args)`` per row chunk of Z.

        G[I, chunk] is formed in column blocks of :attr:`working_memory` (the rows of its
        transpose): ``func`` must be row-separable, as for :meth:`apply_cols`. An empty ``I``:
        ``func`` of the empty (rows of the chunk × 0) block, no kernel evaluated.
        """
        from dask import delayed

        I = self._index(I, self.shape[0], "rows")
        if I.size == 0:
            parts = [task(_empty_apply_task, c, self.dtype, func, *args)
                     for c in self.col_chunks]
            return stack_rows(parts, self.col_chunks, out_dtype, n_out)
        XI = delayed(self.gather_rows(self.X, I, "X rows"), pure=True)
        lse = rm = None
        if self.kernel.row_normalized:
            (lse,) = gather("row normalisers", self.row_lse()[I])
        _, _, cms, g = self._stat_chunks()
        if self.center:
            (rm,) = gather("row means", self.means()[0][I])
        wm = self.working_memory
        parts = [task(_apply_task, self.kernel, XI, zc, lse, rm, cm, g, True, wm, func, *args)
                 for zc, cm in zip(self._zd(), cms)]
        return stack_rows(parts, self.col_chunks, out_dtype, n_out)

    def left(self, J, B, out_dtype=None):
        """G[:, J] @ B as a dask array chunked like X (B: small (|J|, k) numpy; an empty J:
        the n×k zero matrix, as in memory)."""
        from dask import delayed

        B = self._operand(B, self._index(J, self.shape[1], "cols").size, "B", "cols")
        out = self.apply_cols(J, _matmul, B.shape[1], self.dtype, delayed(B, pure=True))
        return out if out_dtype is None or out.dtype == out_dtype else out.astype(out_dtype)

    def right(self, I, A, out_dtype=None):
        """G[I, :]ᵀ @ A as a dask array chunked like Z (A: small (|I|, k) numpy; an empty I:
        the m×k zero matrix, as in memory)."""
        from dask import delayed

        A = self._operand(A, self._index(I, self.shape[0], "rows").size, "A", "rows")
        out = self.apply_rows(I, _matmul, A.shape[1], self.dtype, delayed(A, pure=True))
        return out if out_dtype is None or out.dtype == out_dtype else out.astype(out_dtype)

    def _operand(self, B, n_rows: int, name: str, index: str) -> np.ndarray:
        """The small (n_rows, k) numpy operand of :meth:`left` / :meth:`right` in the matrix
        dtype; a ValueError naming it when its rows do not match the index set ``index``."""
        B = np.asarray(B)
        if B.ndim != 2 or B.shape[0] != n_rows:
            raise ValueError(f"{name} has shape {B.shape}; expected ({n_rows}, k), one row per "
                             f"index of {index}")
        return B.astype(self.dtype, copy=False)

    def cols(self, idx):
        """G[:, idx] as a dask array (n × |idx|) chunked like X (never gathered)."""
        J = self._index(idx, self.shape[1], "cols")
        return self.left(J, np.eye(J.size, dtype=self.dtype), self.dtype)

    # ---------------------------------------------------------------------- products
    def _full_products(self, V, transpose: bool):
        """G @ V, or Gᵀ @ V with ``transpose`` (V numpy or dask, (size,) or (size, k)): Σ over
        chunk pairs of block @ V_j (or blockᵀ @ U_i), chunked like X (like Z); each chunk
        pair's product by the local matrix's blocked ``matmat`` / ``rmatmat`` (row blocks of
        :attr:`working_memory`, centred through the global means)."""
        da = require_dask()
        size = self.shape[0 if transpose else 1]
        V = V if isinstance(V, da.Array) else np.asarray(V)
        if V.shape[0] != size:
            raise ValueError(f"{'U' if transpose else 'V'} has {V.shape[0]} rows; expected {size}")
        if not isinstance(V, da.Array):
            V = da.from_array(V, chunks=(V.shape[0],) + V.shape[1:])
        vec, V = V.ndim == 1, V.reshape(size, -1)
        lses, rms, cms, g = self._stat_chunks()
        xd, zd = self._xd(), self._zd()
        chunks = self.row_chunks if transpose else self.col_chunks
        Vd = list(V.rechunk({0: chunks, 1: -1}).to_delayed()[:, 0])
        wm = self.working_memory

        def part(i, j):  # block (i, j) times the chunk of V it meets
            return task(_product_task, self.kernel, xd[i], zd[j], lses[i], rms[i], cms[j], g,
                        transpose, Vd[i if transpose else j], wm)

        if transpose:  # output chunk j: Σ_i block(i, j)ᵀ U_i
            sums = [_tree([part(i, j) for i in range(len(xd))], _add) for j in range(len(zd))]
        else:  # output chunk i: Σ_j block(i, j) V_j
            sums = [_tree([part(i, j) for j in range(len(zd))], _add) for i in range(len(xd))]
        out = stack_rows(sums, self.col_chunks if transpose else self.row_chunks,
                         np.result_type(self.dtype, V.dtype), V.shape[1])
        return out[:, 0] if vec else out

    def template(self) -> np.ndarray:
        """The protocol's dtype template (an empty numpy array of the matrix dtype)."""
        return np.empty((0, 0), dtype=self.dtype)

    def matmat(self, V, cols=None):
        """G @ V (V: (m,) or (m, k), numpy or dask) as a dask array chunked like X;
        ``cols`` (an index array): G[:, cols] @ V for a small numpy V."""
        return self._full_products(V, False) if cols is None else self.left(cols, V)

    def rmatmat(self, U, rows=None):
        """Gᵀ @ U (U: (n,) or (n, k), numpy or dask) as a dask array chunked like Z;
        ``rows`` (an index array): G[rows, :]ᵀ @ U for a small numpy U."""
        return self._full_products(U, True) if rows is None else self.right(rows, U)

    matvec = matmat
    rmatvec = rmatmat

    def __matmul__(self, V):
        return self.matmat(V)

    def to_dask_array(self, max_dense_memory: float | None = None):
        """G as a dask array whose (i, j) block is computed in its task (for dask algorithms).

        Its chunks are the whole chunk-pair blocks (rows of X's chunk i × rows of Z's chunk
        j), formed whole in their tasks: the largest is checked against ``max_dense_memory``
        MiB (default: the matrix's) before anything is computed.

        Raises
        ------
        MemoryBudgetError
            If the largest chunk-pair block exceeds the budget (a :class:`MemoryError` naming
            the chunk sizes and the smaller chunks to use).
        """
        from ..config import check_memory

        da = require_dask()
        n_i, m_j = max(self.row_chunks), max(self.col_chunks)
        check_memory(
            n_i * m_j * self.dtype.itemsize,
            f"a {n_i}×{m_j} {self.dtype} chunk-pair block of the dask kernel matrix (X row "
            f"chunks of up to {n_i} rows, Z row chunks of up to {m_j})",
            "smaller row chunks (e.g. X.rechunk({0: k}), Z.rechunk({0: k})) or the lazy "
            "products (matmat, rmatmat, cols), whose tasks stay within working_memory",
            limit=self.max_dense_memory if max_dense_memory is None else max_dense_memory)
        lses, rms, cms, g = self._stat_chunks()
        tasks = [[task(_block, self.kernel, xc, zc, lse, rm, cm, g, self.dtype)
                  for zc, cm in zip(self._zd(), cms)] for xc, lse, rm in zip(self._xd(), lses, rms)]
        return da.block([[da.from_delayed(t, shape=(n_i, m_j), dtype=self.dtype)
                          for t, m_j in zip(row, self.col_chunks)]
                         for row, n_i in zip(tasks, self.row_chunks)])

    def to_array(self, max_dense_memory: float | None = None) -> np.ndarray:
        """The dense n×m matrix on the client; refuses past ``max_dense_memory`` MiB.

        Parameters
        ----------
        max_dense_memory : float, optional
            The budget in MiB (default: the matrix's own, fixed when it was built).

        Returns
        -------
        ndarray of shape (n, m)
            The kernel matrix (centred when ``center``).

        Raises
        ------
        MemoryBudgetError
            Before anything is computed, when the matrix exceeds the budget (with its
            ``nbytes``, ``budget`` and ``what``, as the in-memory ``KernelMatrix.to_array``).
        """
        from ..config import check_memory

        limit = self.max_dense_memory if max_dense_memory is None else max_dense_memory
        check_memory(self.nbytes, f"a dense {self.shape[0]}×{self.shape[1]} {self.dtype} "
                     "kernel matrix (gathered from dask on the client)", "the lazy operator "
                     "(matmat, blocks, a Nystrom or randomized solver)", limit=limit)
        (out,) = gather("dense kernel matrix", self.to_dask_array(limit))
        return out

    def __repr__(self) -> str:
        return (f"DaskKernelMatrix(kernel={self.kernel!r}, shape={self.shape}, "
                f"dtype={self.dtype}, chunks=({len(self.row_chunks)}, {len(self.col_chunks)}), "
                f"center={self.center})")
