"""KernelMatrix: the lazy n×m operator G_ij = κ(x_i, z_j), computed in memory-bounded blocks.

Nothing n×m is formed unless asked for (:meth:`KernelMatrix.to_array`, which refuses past the
configured budget). Blocks follow ``working_memory`` (MiB). Optional double centring
G̃ = H_n G H_m (Tao et al., 2024, §2, H_k = I − 11ᵀ/k) is applied through row/column means, never
with an n×n matrix.

Numerics: float32 inputs give float32 everywhere — blocks, rows/cols, products,
means, row/column sums and normalisers — while sums over many entries (means, the column sums
of ``rmatmat``, the log-sum-exp normalisers) are accumulated in float64 and cast at the end
(the row sums of float32 normalisation passes from 64-entry float32 partials).
Row-normalised kernels are normalised in the pass that forms each block: per
cache-sized row chunk a row maximum, one exp, a row sum and a scaling by its inverse
(exp(L − max)/Σ exp(L − max), which neither under- nor overflows).
Squared-distance kernels get one centre per matrix (``Kernel.center_for(Z)``), passed to every
block, so the shift that removes cancellation never depends on the blocking. Non-finite row
normalisers raise ``OverflowError`` naming the kernel instead of giving NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .._backend import NUMPY, LazyMatrix
from .._validation import as_data, check_bool, check_positive
from ..config import (  # noqa: F401 (MemoryBudgetError: re-exported)
    MemoryBudgetError,
    _check_limit,
    check_memory,
    get_config,
    progress_bar,
)
from ._registry import get_kernel
from .base import Kernel, apply_rows, check_overflow


def _as_index(idx, size: int, name: str):
    if isinstance(idx, slice):
        return idx
    idx = np.asarray(idx)
    if idx.dtype == bool:
        if idx.shape != (size,):
            raise ValueError(f"{name} boolean mask has shape {idx.shape}; expected ({size},)")
        return np.flatnonzero(idx)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"{name} must be a slice or a 1-D array of integer indices")
    if idx.size and (idx.min() < -size or idx.max() >= size):
        raise IndexError(f"{name} index out of range for size {size}")
    return idx


#: rows per sub-chunk of the row passes: about 4 MiB of a block, so that the passes of the
#: row normalisation (max, shift, exp, sum, scale) run while the chunk is in cache
_CHUNK_BYTES = 1 << 22


def _chunk_rows(n_cols: int, itemsize: int) -> int:
    return max(1, _CHUNK_BYTES // max(1, n_cols * itemsize))


#: float32 row sums: partial sums over this many consecutive entries in float32 (positive
#: terms, so each has relative error ≤ 63·2⁻²⁴ ≈ 4e-6), combined in float64
_SEG32 = 64


def _row_sums64(K: np.ndarray) -> np.ndarray:
    """Row sums of a C-ordered block of non-negative values, accumulated in float64 (float32
    blocks: float32 partial sums of ``_SEG32`` entries first, 3–4× faster than a float64
    accumulation of every entry)."""
    if K.dtype != np.float32 or K.shape[1] < 4 * _SEG32:
        return K.sum(axis=1, dtype=np.float64)
    m0 = K.shape[1] - K.shape[1] % _SEG32
    part = np.einsum("ijk->ij", K[:, :m0].reshape(K.shape[0], -1, _SEG32))
    s = part.sum(axis=1, dtype=np.float64)
    if m0 < K.shape[1]:
        s += K[:, m0:].sum(axis=1, dtype=np.float64)
    return s


def _shifted_exp_sums(K: np.ndarray, mx: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """In place K ← exp(K − max_row K); returns (row maxima, row sums of the result) in float64.

    ``mx``: the row maxima of K when the caller has them already (the fused pass of
    :func:`~asymkern.kernels.base.neg_scaled_sq_dists` takes them while it looks for near
    duplicates), saving one pass over the chunk.

    The sums are at least 1 for every row with a finite maximum (the maximum maps to 1), so
    they neither underflow nor (m terms ≤ 1) overflow. A row whose maximum is −inf (every
    kernel value 0) sums to 0, so its log-sum −inf merges with other column blocks (a Dask
    chunk of the reference set) and is refused by :meth:`KernelMatrix._check_lse` only when
    every block is empty. The shift is skipped when every maximum is exactly 0 (X = Z: the
    exact zeros of the diagonal).
    """
    if mx is None:
        mx = K.max(axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        if np.any(mx != 0):
            K -= np.where(mx == -np.inf, 0, mx)[:, None]
        np.exp(K, out=K)
        return mx.astype(np.float64), _row_sums64(K)


def check_reference_features(kernel, n_features: int, n_reference: int) -> None:
    """Refuse a reference set whose feature count differs from the data's (the sums
    Σ_{r∈R} k(x, r) of a row-normalised kernel pair x with every r), naming ``reference``;
    the in-memory and the Dask kernel matrices apply it when they are built."""
    if kernel.checks_features and int(n_reference) != int(n_features):
        raise ValueError(
            f"reference has {int(n_reference)} features but X and Z have {int(n_features)}; "
            f"kernel {kernel.name!r} normalises each row over the reference set, which needs "
            "the same features")


def lse_overflow_error(kernel: str, row: int, lse: float) -> OverflowError:
    """The error for a row normaliser log Σ_r k(x, r) that is not finite (every kernel value
    of the row under- or overflowed), naming the kernel and the row; raised by every
    executor's kernel matrix instead of dividing by it (which would give NaN)."""
    return OverflowError(
        f"kernel {kernel!r}: the row normaliser log Σ_r k(x_{row}, r) is {lse} (every kernel "
        f"value of row {row} under- or overflowed); rescale the data or enlarge the bandwidth")


def _lse_rows(lse: np.ndarray, normalize: bool = False):
    """rows_func: store log Σ_j exp(K_ij) of rows a:b in ``lse[a:b]`` (the chunk is destroyed).

    ``normalize``: the chunk becomes κ = exp(K − lse) = exp(K − max)/s with
    s = Σ_j exp(K_ij − max) ≥ 1: one exp per entry and a multiplication by 1/s (float64, cast
    to the block dtype), no second exp and no temporary.
    """

    def fn(Kc: np.ndarray, a: int, b: int, mx: np.ndarray | None = None) -> None:
        mx, s = _shifted_exp_sums(Kc, mx)
        with np.errstate(divide="ignore", invalid="ignore"):
            lse[a:b] = mx + np.log(s)
            if normalize:
                Kc *= (1.0 / s).astype(Kc.dtype)[:, None]

    return fn


def _exp_shift_fn(lse: np.ndarray, kernel: str):
    """rows_func: log-values → κ = exp(K − lse) with known row log-normalisers ``lse``.

    κ ≤ 1 when the normalisers sum over the columns themselves; over another reference set a
    value can exceed the float range, and the cache-resident chunk is checked for that.
    """

    def fn(Kc: np.ndarray, a: int, b: int, mx: np.ndarray | None = None) -> None:
        del mx  # the normalisers are known
        with np.errstate(invalid="ignore", over="ignore"):
            Kc -= lse[a:b].astype(Kc.dtype, copy=False)[:, None]
            np.exp(Kc, out=Kc)
        if Kc.size and not np.isfinite(Kc.max()):
            check_overflow(Kc, kernel, "the normalised value k(x, z) / Σ_r k(x, r)")

    return fn


def _apply_rows_chunked(K: np.ndarray, rows_func, copy: bool = False) -> np.ndarray:
    """Run ``rows_func(K[a:b], a, b)`` over cache-sized row chunks of K, on all cores
    (``copy``: on a copy of each chunk in a small buffer per thread, K unchanged)."""
    sub = _chunk_rows(K.shape[1], K.itemsize)

    def work(a: int, b: int) -> None:
        buf = np.empty((min(sub, b - a), K.shape[1]), dtype=K.dtype) if copy else None
        for r in range(a, b, sub):
            e = min(r + sub, b)
            if buf is not None:
                buf[: e - r] = K[r:e]
            rows_func(K[r:e] if buf is None else buf[: e - r], r, e)

    return apply_rows(K, work)


def normalizers_from_lse(lse: np.ndarray, dtype, kernel: str, first_row: int = 0) -> np.ndarray:
    """The row normalisers exp(lse) in ``dtype``, or ``OverflowError`` where one leaves its
    normal range (beyond the largest float, or below the smallest normal number: 0 or a
    subnormal that has lost its relative accuracy); ``first_row`` numbers the rows in the
    message (a chunk of a Dask matrix). Shared by :meth:`KernelMatrix.row_normalizers` and
    the Dask matrix's."""
    dtype = np.dtype(dtype)
    with np.errstate(over="ignore", under="ignore"):
        N = np.exp(lse).astype(dtype, copy=False)
    fi = np.finfo(dtype)
    bad = ~(np.isfinite(N) & (N >= fi.tiny))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "overflows" if lse[i] > 0 else "underflows"
        limit = (f"the largest {dtype} is {fi.max:.4g}" if lse[i] > 0
                 else f"the smallest normal {dtype} is {fi.tiny:.4g}")
        raise OverflowError(
            f"kernel {kernel!r}: the row normaliser Σ_r k(x_{first_row + i}, r) = "
            f"exp({lse[i]:.6g}) {what} {dtype} ({limit}; {int(bad.sum())} of "
            f"{bad.size} rows); the log-normalisers are finite: use row_lse()"
        )
    return N


class KernelMatrix(LazyMatrix):
    """Lazy kernel matrix G = [κ(x_i, z_j)] over two sets of samples (rows).

    Nothing n × m is formed unless asked for: products, rows, columns and means stream
    blocks of ``working_memory`` MiB. With ``center=True`` the matrix is the doubly centred
    G̃ = H_n G H_m, H_k = I − 11ᵀ/k (Tao et al. (2024), §2), applied through row and
    column means. float32 inputs give float32 results. Dask inputs give the lazy Dask
    operator instead. The numpy implementation of the lazy-matrix protocol
    (:class:`asymkern._backend.LazyMatrix`).

    Parameters
    ----------
    kernel : Kernel, str or callable
        The kernel (anything :func:`get_kernel` accepts).
    X : array-like or CSR matrix of shape (n, d)
        Row samples.
    Z : array-like or CSR matrix of shape (m, d), optional
        Column samples; None (default) means ``Z = X``.
    reference : array-like or CSR matrix of shape (r, d), optional
        Normalisation set R of row-normalised kernels (default: ``Z``).
    **kwargs
        Keyword-only options of ``__init__``:

        - ``center`` (bool, default False): apply the double centring H_n G H_m;
        - ``working_memory`` (float, optional): MiB per block (default:
          ``asymkern.get_config()['working_memory']``);
        - ``max_dense_memory`` (float, optional): MiB above which :meth:`to_array` refuses
          (default: the configuration's ``max_dense_memory``).

        Both budgets are read when the matrix is built and must be positive finite numbers.

    Attributes
    ----------
    shape : tuple of int
        (n, m).
    dtype : numpy.dtype
        float32 if both sets are float32, else float64.
    nbytes : int
        Bytes a dense copy would take.

    Raises
    ------
    ValueError
        If the data are invalid, the feature counts differ, or a budget is not positive.

    See Also
    --------
    Kernel.matrix : Builds this matrix from a kernel.
    asymkern.linalg.top_svd : The top singular triplets of a KernelMatrix.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, §2.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import KernelMatrix
    >>> rng = np.random.default_rng(0)
    >>> X, Z = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    >>> G = KernelMatrix("sne", X, Z)
    >>> G.shape, G.dtype.name
    ((5, 4), 'float64')
    >>> v = np.ones(4)
    >>> bool(np.allclose(G.matvec(v), G.to_array() @ v))    # rows of SNE sum to 1
    True
    >>> bool(np.allclose(KernelMatrix("rbf", X, center=True).row_sums(), 0.0))
    True
    """

    def __new__(cls, kernel=None, X=None, Z=None, *, reference=None, **kwargs):
        from .._dispatch import any_dask, dask_executor

        if any_dask(X, Z, reference):  # dask inputs: the lazy Dask operator (asymkern._dask)
            return dask_executor("kernel_matrix")(kernel, X, Z, reference=reference, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        kernel: Kernel,
        X,
        Z=None,
        *,
        reference=None,
        center: bool = False,
        working_memory: float | None = None,
        max_dense_memory: float | None = None,
    ):
        self.kernel = get_kernel(kernel)
        self.X, self.Z = self.kernel.validate_pair(X, Z)
        self.same_sets = Z is None or Z is X
        self.reference = self.Z if reference is None else as_data(
            reference, "reference", allow_sparse=self.kernel.accepts_sparse)
        check_reference_features(self.kernel, self.Z.shape[1], self.reference.shape[1])
        self._reference_is_Z = self.reference is self.Z
        self.center = check_bool(center, "center")
        cfg = get_config()
        # validated like set_config's values; both are fixed for the life of this matrix
        self.working_memory = check_positive(
            cfg["working_memory"] if working_memory is None else working_memory, "working_memory")
        self.max_dense_memory = check_positive(
            cfg["max_dense_memory"] if max_dense_memory is None else max_dense_memory,
            "max_dense_memory")
        self.dtype = np.dtype(np.float32 if self.X.dtype == self.Z.dtype == np.float32
                              else np.float64)
        self.shape = (self.X.shape[0], self.Z.shape[0])
        self.kernel._check_params()  # catches parameters changed after construction
        # one shift for every block (squared-distance kernels): blocking never changes it
        self._kw = (
            {"center": self.kernel.center_for(self.Z)} if self.kernel.uses_center else {}
        )
        self._normalizers: np.ndarray | None = None
        self._means: tuple[np.ndarray, np.ndarray, float] | None = None

    # ---------------------------------------------------------------- sizes and blocks
    @property
    def nbytes(self) -> int:
        """Bytes a dense copy of the full matrix would take."""
        return int(self.shape[0]) * int(self.shape[1]) * self.dtype.itemsize

    def block_rows(self, n_cols: int | None = None) -> int:
        """Rows per block so that one block and its temporaries fit ``working_memory``.

        Parameters
        ----------
        n_cols : int, optional
            Columns of a block (default: all m columns).

        Returns
        -------
        int
            Between 1 and n.
        """
        budget = self.working_memory * 2**20
        return int(max(1, min(self.shape[0], budget // self.row_bytes(n_cols))))

    def row_bytes(self, n_cols: int | None = None) -> int:
        """Working memory one row of a block counts (its entries and one temporary):
        ``block_rows`` fits ``working_memory // row_bytes()`` rows.

        Parameters
        ----------
        n_cols : int, optional
            Columns of a block (default: all m columns).

        Returns
        -------
        int
            Bytes.

        Examples
        --------
        >>> import numpy as np
        >>> from asymkern.kernels import KernelMatrix
        >>> KernelMatrix("rbf", np.zeros((4, 2)), np.zeros((3, 2))).row_bytes()
        48
        """
        n_cols = self.shape[1] if n_cols is None else n_cols
        return max(1, int(n_cols)) * self.dtype.itemsize * 2

    def _raw(self, X, Z, row_lse=None) -> np.ndarray:
        """Kernel values, or for row-normalised kernels their unnormalised logarithms
        (``row_lse``: the rows' known log-normalisers, for the kernels that fuse the row
        normalisation, see :meth:`_raw_rows`)."""
        raw = self.kernel._log_raw if self.kernel.row_normalized else self.kernel._raw
        kw = self._kw if row_lse is None or not self.kernel.fuses_rows else {
            **self._kw, "row_lse": row_lse}
        K = raw(X, Z, **kw)
        return K if K.dtype == self.dtype else K.astype(self.dtype)

    @staticmethod
    def _block_lse(L: np.ndarray) -> np.ndarray:
        """Row-wise log Σ exp(L) in float64, shifted by the row maximum (no under/overflow).

        ``L`` is not modified: cache-sized row chunks are copied into a small buffer per
        thread and reduced there (the values equal the unchunked max/shift/exp/sum).
        """
        L = np.ascontiguousarray(L)
        n, m = L.shape
        lse = np.empty(n)
        if m == 0 or n == 0:
            lse[:] = -np.inf
            return lse
        _apply_rows_chunked(L, _lse_rows(lse), copy=True)
        return lse

    def _raw_rows(self, X, Z, rows_func, out=None, row_lse=None) -> np.ndarray:
        """Log-values of a row-normalised kernel block with ``rows_func(Kc, a, b)`` applied to
        cache-sized row chunks — fused into the pass that forms the block where the kernel
        supports it (SNE, T), a separate multi-threaded pass otherwise. ``out``: optional
        C-contiguous array of the block's shape and the matrix dtype to write into.
        ``row_lse``: the rows' log-normalisers when they are known (over a reference set
        that may lack the block's nearest columns, the SNE weights that matter reach further
        below the block's row maxima: :func:`~asymkern.kernels.base.neg_scaled_sq_dists`)."""
        kern = self.kernel
        if kern.fuses_rows and np.result_type(X.dtype, Z.dtype) == self.dtype:
            if out is not None and not (out.dtype == self.dtype and out.flags.c_contiguous):
                out[...] = self._raw_rows(X, Z, rows_func, row_lse=row_lse)
                return out
            kw = self._kw if row_lse is None else {**self._kw, "row_lse": row_lse}
            return kern._log_raw(X, Z, out=out, rows_func=rows_func, **kw)
        K = self._raw(X, Z, row_lse)
        if out is not None:
            out[...] = K
            K = out
        return _apply_rows_chunked(np.ascontiguousarray(K), rows_func)

    def _lse_for(self, X_rows) -> np.ndarray:
        """log Σ_{r∈R} k(x, r) for the given rows: a streaming log-sum-exp over reference blocks."""
        R = self.reference
        n_r = R.shape[0]
        mx = np.full(X_rows.shape[0], -np.inf)
        acc = np.zeros(X_rows.shape[0])
        step = max(1, int(self.working_memory * 2**20 // (max(1, X_rows.shape[0]) * 16)))
        with np.errstate(divide="ignore", invalid="ignore"):
            for start in range(0, n_r, step):
                L = self._raw(X_rows, R[start : start + step])
                bm = L.max(axis=1).astype(np.float64)
                mx, prev = np.maximum(mx, bm), mx
                shift = np.where(np.isfinite(mx), mx, 0.0)  # a block of zeros k adds nothing
                acc = acc * np.exp(prev - shift) + np.exp(
                    L - shift[:, None].astype(L.dtype)
                ).sum(axis=1, dtype=np.float64)
            return self._check_lse(mx + np.log(acc))

    def _row_lse(self) -> np.ndarray:
        """Cached log-normalisers of every row."""
        if self._normalizers is None:
            if self._reference_is_Z and self.shape[1] > 0:
                lse = np.empty(self.shape[0])
                for sl in self._row_slices():  # each block is reduced as it is formed
                    self._raw_rows(self.X[sl], self.Z, _lse_rows(lse[sl]))
                self._normalizers = self._check_lse(lse)
            else:
                self._normalizers = self._lse_for(self.X)
        return self._normalizers

    def _check_lse(self, lse: np.ndarray) -> np.ndarray:
        """Refuse log-normalisers that are not finite (every k(x, r) underflowed to 0 or the
        exponent overflowed): dividing by them would give NaN, never a silent result."""
        if not np.all(np.isfinite(lse)):
            i = int(np.flatnonzero(~np.isfinite(lse))[0])
            raise lse_overflow_error(self.kernel.name, i, float(lse[i]))
        return lse

    def row_lse(self) -> np.ndarray | None:
        """Log-normalisers log Σ_{r∈R} k(x_i, r) of every row (None unless the kernel is
        row-normalised).

        The library works with these logarithms (a streaming log-sum-exp, Tao et al. (2024),
        §4.1; He et al. (2023), §4.3), so they are finite wherever the normalised kernel is,
        even where the normalisers themselves leave the float range (large softmax logits,
        an SNE reference set far from the data): prefer them to :meth:`row_normalizers`.
        The same method as the Dask operator's ``row_lse``.

        Returns
        -------
        ndarray of shape (n,) or None
            The log-normalisers, float64 for every input dtype (as the Dask operator's; a
            float32 logarithm of a large normaliser would lose its relative accuracy). A copy
            of the cached values (computed at the first call).

        Raises
        ------
        OverflowError
            When a log-normaliser is not finite (every kernel value of a row under- or
            overflowed), naming the kernel and the row.
        """
        if not self.kernel.row_normalized:
            return None
        return np.array(self._row_lse(), dtype=np.float64)

    def row_normalizers(self) -> np.ndarray | None:
        """Normalisers Σ_{r∈R} k(x_i, r) of every row (None unless the kernel is row-normalised).

        Internally the library works with their logarithms (a log-sum-exp, :meth:`row_lse`), so
        a small bandwidth never divides by an underflowed zero. The normalisers themselves are
        exp of those: a normaliser beyond the largest float of the matrix dtype, or below its
        smallest normal number (0 or a subnormal that has lost its relative accuracy), raises
        instead of returning inf or 0; use :meth:`row_lse` then.

        Returns
        -------
        ndarray of shape (n,) or None
            The normalisers, in the matrix dtype (the log-normalisers are cached after the
            first call).

        Raises
        ------
        OverflowError
            When a normaliser overflows, or underflows below the smallest normal number of the
            matrix dtype, although its logarithm is finite (named after the kernel and the row,
            with its log-normaliser).
        """
        if not self.kernel.row_normalized:
            return None
        return normalizers_from_lse(self._row_lse(), self.dtype, self.kernel.name)

    def _row_slices(self, block_rows: int | None = None):
        step = block_rows or self.block_rows()
        starts = range(0, self.shape[0], step)
        if get_config()["show_progress"] and len(starts) > 4:
            starts = progress_bar(starts, desc=f"kernel {self.kernel.name} {self.shape[0]}x"
                                  f"{self.shape[1]}", enabled=True, unit="block", leave=False)
        for start in starts:
            yield slice(start, min(start + step, self.shape[0]))

    def _lse_of(self, rows) -> np.ndarray:
        """Log-normalisers of the given rows (cached, or a streaming log-sum-exp)."""
        if self._normalizers is not None:
            return self._normalizers[rows]
        return self._lse_for(self.X[rows])

    def _normalized_block(self, Xr, Zc, rows, full_cols: bool, out=None) -> np.ndarray:
        """Uncentred block κ(Xr, Zc) (rows: the indices of Xr), written into ``out`` if given.

        Row-normalised kernels: one pass forms the log-values and normalises each cache-sized
        row chunk in place (a row maximum, one exp, a row sum and a scaling) when the block
        holds full rows of the reference set and the normalisers are not cached; otherwise
        exp(log k − lse) with the known (or streamed) normalisers, in the same pass.
        """
        if not self.kernel.row_normalized:
            if out is None:
                return self._raw(Xr, Zc)
            self.kernel._raw_into(Xr, Zc, out, **self._kw)
            return out
        if self._normalizers is None and full_cols and self._reference_is_Z \
                and Zc.shape[0] > 0:
            lse = np.empty(Xr.shape[0])
            K = self._raw_rows(Xr, Zc, _lse_rows(lse, normalize=True), out)
            self._check_lse(lse)
            return K
        lse = self._lse_of(rows)
        return self._raw_rows(Xr, Zc, _exp_shift_fn(lse, self.kernel.name), out, row_lse=lse)

    def means(self) -> tuple[np.ndarray, np.ndarray, float]:
        """(row means (n,), column means (m,), grand mean) of the uncentred matrix.

        Accumulated in float64; the means are returned in the matrix dtype (float32 for
        float32 data), the grand mean as a Python float.

        Returns
        -------
        row_means : ndarray of shape (n,)
            Means of the rows of G.
        col_means : ndarray of shape (m,)
            Means of the columns of G.
        grand_mean : float
            Mean of all entries.
        """
        r, c, g = self._means64()
        return r.astype(self.dtype, copy=False), c.astype(self.dtype, copy=False), g

    def _means64(self) -> tuple[np.ndarray, np.ndarray, float]:
        if self._means is None:
            return self._set_means(*self._block_sums(self._iter_blocks_uncentered()))
        return self._means

    def _block_sums(self, blocks) -> tuple[np.ndarray, np.ndarray]:
        """Row and column sums (float64) of the uncentred matrix from its row ``blocks``
        ((row slice, block) pairs covering the rows, in order): the one accumulation of the
        centring statistics, whatever formed the blocks (a pass, a formed matrix, a task)."""
        row_sum, col_sum = np.empty(self.shape[0]), np.zeros(self.shape[1])
        for sl, B in blocks:
            row_sum[sl] = B.sum(axis=1, dtype=np.float64)
            col_sum += B.sum(axis=0, dtype=np.float64)
        return row_sum, col_sum

    def _set_means(self, row_sum: np.ndarray,
                   col_sum: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        n, m = self.shape
        self._means = (row_sum / m, col_sum / n, float(row_sum.sum() / (n * m)))
        return self._means

    def row_sums(self) -> np.ndarray:
        """Σ_j G_ij (after centring, if enabled).

        Returns
        -------
        ndarray of shape (n,)
            The row sums, in the matrix dtype (zeros when centred).
        """
        if self.center:
            return np.zeros(self.shape[0], dtype=self.dtype)
        return (self._means64()[0] * self.shape[1]).astype(self.dtype, copy=False)

    def col_sums(self) -> np.ndarray:
        """Σ_i G_ij (after centring, if enabled).

        Returns
        -------
        ndarray of shape (m,)
            The column sums, in the matrix dtype (zeros when centred).
        """
        if self.center:
            return np.zeros(self.shape[1], dtype=self.dtype)
        return (self._means64()[1] * self.shape[0]).astype(self.dtype, copy=False)

    #: evaluated row blocks kept by a copy from :meth:`cached` ((start, stop) rows → read-only
    #: block), and the bytes it may still add; None: nothing is kept
    _cache: dict[tuple[int, int], np.ndarray] | None = None
    _cache_room = 0
    _cache_limit = 0  # the nbytes it was given
    _solver_cache = False  # made by the solvers' _solver_blocks (not a user's cached copy)

    def cached(self, nbytes: float) -> KernelMatrix:
        """A copy of this matrix that keeps up to ``nbytes`` of its evaluated row blocks.

        The passes of the iterative solvers (power iteration, block Krylov, ARPACK) form every
        block of G once per pass. This copy keeps the blocks its passes form, in pass order,
        until ``nbytes`` are held, and hands them out again instead of recomputing them: the
        kernel is then evaluated once in all where the matrix fits, and the work of the later
        passes shrinks by the fraction that fits where it does not. The blocks are the ones
        the passes form anyway (same rows, same values), so every product equals this
        matrix's bitwise. This matrix is not modified; the kept blocks go when the copy
        does.

        Parameters
        ----------
        nbytes : float
            Bytes the kept blocks may take (≥ 0; a block larger than what is left is not kept).

        Returns
        -------
        KernelMatrix
            The copy (a shallow one: the data are shared, never copied).

        Raises
        ------
        ValueError
            If ``nbytes`` is negative, NaN or infinite.

        See Also
        --------
        asymkern.linalg.randomized_svd : Runs its passes on such a copy, sized by the
            ``cache_memory`` setting and what the solver leaves of ``max_dense_memory``.

        Examples
        --------
        >>> import numpy as np
        >>> from asymkern.kernels import KernelMatrix
        >>> G = KernelMatrix("rbf", np.random.default_rng(0).standard_normal((300, 4)))
        >>> H = G.cached(G.nbytes)
        >>> V = np.ones((300, 2))
        >>> bool(np.array_equal(H.matmat(V), G.matmat(V)))   # the pass that fills the cache
        True
        >>> bool(np.array_equal(H.rmatmat(V), G.rmatmat(V)))  # one that reads it
        True
        """
        import copy

        room = float(nbytes)
        if not (math.isfinite(room) and room >= 0):
            raise ValueError(f"cached: nbytes must be a finite number of bytes ≥ 0, got {nbytes!r}")
        H = copy.copy(self)
        H._cache, H._cache_room = {}, int(room)
        H._cache_limit, H._solver_cache = H._cache_room, False
        return H

    def _iter_blocks_uncentered(self, block_rows: int | None = None):
        cache = self._cache if block_rows is None else None  # the passes' own blocks only
        for sl in self._row_slices(block_rows):
            key = (sl.start, sl.stop)  # a copy with other blocks never reads these
            B = None if cache is None else cache.get(key)
            if B is None:
                B = self._normalized_block(self.X[sl], self.Z, sl, True)
                if cache is not None and B.nbytes <= self._cache_room:
                    B.flags.writeable = False  # shared by the later passes
                    cache[key] = B
                    self._cache_room -= B.nbytes
            yield sl, B

    def iter_row_blocks(self, block_rows: int | None = None) -> Iterator[tuple[slice, np.ndarray]]:
        """Yield (row slice, dense block of full rows) covering the matrix.

        Parameters
        ----------
        block_rows : int, optional
            Rows per block (default: :meth:`block_rows`).

        Yields
        ------
        rows : slice
            The rows of the block.
        block : ndarray of shape (rows, m)
            G[rows, :] (centred if enabled).
        """
        for sl, B in self._iter_blocks_uncentered(block_rows):
            if self.center:
                B = self._center_block(B if B.flags.writeable else B.copy(), sl, slice(None))
            yield sl, B

    def _center_block(self, B: np.ndarray, rows, cols) -> np.ndarray:
        r, c, g = self._means64()
        B -= r[rows].astype(B.dtype)[:, None]
        B -= c[cols].astype(B.dtype)[None, :]
        B += B.dtype.type(g)
        return B

    def block(self, rows=slice(None), cols=slice(None)) -> np.ndarray:
        """Dense sub-matrix G[rows][:, cols].

        Parameters
        ----------
        rows : slice, int array or bool mask, default slice(None)
            Row selection.
        cols : slice, int array or bool mask, default slice(None)
            Column selection.

        Returns
        -------
        ndarray of shape (len(rows), len(cols))
            The sub-matrix (centred if enabled), in the matrix dtype.

        Raises
        ------
        ValueError
            If an index array is not 1-D integer or a mask has the wrong length.
        IndexError
            If an index is out of range.
        """
        rows = _as_index(rows, self.shape[0], "rows")
        cols = _as_index(cols, self.shape[1], "cols")
        Xr = self.X[rows]
        Zc = self.Z[cols]
        full_cols = isinstance(cols, slice) and cols == slice(None)
        B = self._normalized_block(Xr, Zc, rows, full_cols)
        if self.center:
            self._center_block(B, rows, cols)
        return B

    def rows(self, idx) -> np.ndarray:
        """Selected full rows G[idx, :].

        Parameters
        ----------
        idx : slice, int array or bool mask
            Row selection.

        Returns
        -------
        ndarray of shape (len(idx), m)
            The rows.
        """
        return self.block(idx, slice(None))

    def cols(self, idx) -> np.ndarray:
        """Selected full columns G[:, idx], computed in row blocks.

        Parameters
        ----------
        idx : slice, int array or bool mask
            Column selection.

        Returns
        -------
        ndarray of shape (n, len(idx))
            The columns.
        """
        idx = _as_index(idx, self.shape[1], "cols")
        n_sel = len(range(*idx.indices(self.shape[1]))) if isinstance(idx, slice) else len(idx)
        out = np.empty((self.shape[0], n_sel), dtype=self.dtype)
        if self.kernel.row_normalized:
            self._row_lse()
        step = self.block_rows(n_sel)
        for start in range(0, self.shape[0], step):
            sl = slice(start, min(start + step, self.shape[0]))
            out[sl] = self.block(sl, idx)
        return out

    # ---------------------------------------------------------------- products
    ops = NUMPY

    def template(self) -> np.ndarray:
        """The protocol's dtype template.

        Returns
        -------
        ndarray of shape (0, 0)
            An empty array of the matrix dtype.
        """
        return np.empty((0, 0), dtype=self.dtype)

    def matmat(self, V: np.ndarray, cols=None) -> np.ndarray:
        """G @ V for V of shape (m,) or (m, k), streaming row blocks.

        ``matvec`` is the same method.

        Parameters
        ----------
        V : array-like of shape (m,) or (m, k)
            Real, finite right-hand side.
        cols : int array, optional
            Only these columns: G[:, cols] @ V, V of shape (len(cols), k).

        Returns
        -------
        ndarray of shape (n,) or (n, k)
            The product.

        Raises
        ------
        TypeError
            If ``V`` is not real numeric.
        ValueError
            If ``V`` has the wrong shape or is not finite.
        """
        if cols is not None:  # landmark columns: G[:, cols] formed (n × len(cols))
            K = self.cols(cols)
            return K @ _check_operand(V, K.shape[1], "V", "matmat")
        V = _check_operand(V, self.shape[1], "V", "matmat")
        vec = V.ndim == 1
        V2 = V.reshape(self.shape[1], -1)
        out = np.empty((self.shape[0], V2.shape[1]), dtype=np.result_type(self.dtype, V2.dtype))
        for sl, B in self._iter_blocks_uncentered():
            out[sl] = B @ V2
        if self.center:
            self._row_centring(V2)(out)
        return out.ravel() if vec else out

    def rmatmat(self, U: np.ndarray, rows=None) -> np.ndarray:
        """Gᵀ @ U for U of shape (n,) or (n, k), streaming row blocks.

        ``rmatvec`` is the same method. The sum over row blocks is accumulated in float64.

        Parameters
        ----------
        U : array-like of shape (n,) or (n, k)
            Real, finite left-hand side.
        rows : int array, optional
            Only these rows: G[rows, :]ᵀ @ U, U of shape (len(rows), k).

        Returns
        -------
        ndarray of shape (m,) or (m, k)
            The product.

        Raises
        ------
        TypeError
            If ``U`` is not real numeric.
        ValueError
            If ``U`` has the wrong shape or is not finite.
        """
        if rows is not None:  # landmark rows: G[rows, :] formed (len(rows) × m)
            K = self.rows(rows)
            return K.T @ _check_operand(U, K.shape[0], "U", "rmatmat")
        U = _check_operand(U, self.shape[0], "U", "rmatmat")
        vec = U.ndim == 1
        U2 = U.reshape(self.shape[0], -1)
        dtype = np.result_type(self.dtype, U2.dtype)
        # the sum over row blocks is accumulated in float64, returned in the result dtype
        acc = np.zeros((self.shape[1], U2.shape[1]), dtype=np.float64)
        for sl, B in self._iter_blocks_uncentered():
            acc += B.T @ U2[sl]
        if self.center:
            self._center_rproduct(acc, U2)
        out = acc.astype(dtype, copy=False)
        return out.ravel() if vec else out

    def _gram_matmat(self, W: np.ndarray) -> np.ndarray:
        """Gᵀ(G W) for W of shape (m, k) in one pass over the row blocks (each block is formed
        once; ``rmatmat(matmat(W))`` forms it twice). Same blocks, same operations and the same
        float64 accumulation as that composition, so the result is equal to it bitwise."""
        W = _check_operand(W, self.shape[1], "W", "_gram_matmat").reshape(self.shape[1], -1)
        Y = np.empty((self.shape[0], W.shape[1]), dtype=np.result_type(self.dtype, W.dtype))
        acc = np.zeros((self.shape[1], W.shape[1]), dtype=np.float64)
        centre = self._row_centring(W) if self.center else None
        for sl, B in self._iter_blocks_uncentered():
            Ys = Y[sl]
            np.matmul(B, W, out=Ys)
            if centre is not None:  # row block of G_c W
                centre(Ys, sl)
            acc += B.T @ Ys
        if self.center:
            self._center_rproduct(acc, Y)
        return acc.astype(Y.dtype, copy=False)

    def _row_centring(self, V: np.ndarray):
        """``centre(out, rows=slice(None))``, which centres in place rows ``rows`` of the
        product G V of the uncentred G: G_c V = G V − (r 1ᵀV + 1 cᵀV − g 1 1ᵀV) (r, c, g: the
        float64 means of G), the correction formed in float64, then cast to ``out``'s dtype."""
        r, c, g = self._means64()
        ones_v = V.sum(axis=0, dtype=np.float64)
        cv = (c @ V)[None, :]

        def centre(out: np.ndarray, rows=slice(None)) -> None:
            corr = np.outer(r[rows], ones_v)
            corr += cv
            corr -= g * ones_v[None, :]
            out -= corr.astype(out.dtype, copy=False)

        return centre

    def _center_rproduct(self, acc: np.ndarray, U: np.ndarray) -> None:
        """The float64 product Gᵀ U of the uncentred G centred in place:
        G_cᵀ U = Gᵀ U − (c 1ᵀU + 1 rᵀU − g 1 1ᵀU)."""
        r, c, g = self._means64()
        ones_u = U.sum(axis=0, dtype=np.float64)
        acc -= (r @ U)[None, :]
        acc -= np.outer(c, ones_u)
        acc += g * ones_u[None, :]

    def lowered(self):
        """This matrix on float32 copies of float64 data, for the subspace passes of
        ``precision='low'`` (:func:`asymkern.linalg.randomized_svd`): the kernel blocks and
        products in float32, about half the time of a float64 pass.

        Returns
        -------
        LazyMatrix or None
            The float32 twin (products take and return float64 arrays); None for float32 or
            sparse data and for the kernels whose values are not bounded by 1 (linear,
            polynomial, callables: their float32 values could overflow).
        """
        if self.dtype != np.float64 or self.kernel.name not in _LOWERED_KERNELS or any(
                sp.issparse(a) for a in (self.X, self.Z, self.reference)):
            return None
        return _Float32Passes(self)

    matvec = matmat
    rmatvec = rmatmat

    def __matmul__(self, V):
        return self.matmat(V)

    @property
    def T(self):
        """Transposed view as a scipy LinearOperator."""
        return self.aslinearoperator().T

    def aslinearoperator(self) -> LinearOperator:
        """scipy ``LinearOperator`` view (matvec/rmatvec/matmat/rmatmat stream blocks).

        Returns
        -------
        scipy.sparse.linalg.LinearOperator
            An operator of shape (n, m) and the matrix dtype.
        """
        return LinearOperator(
            shape=self.shape,
            matvec=self.matmat,
            rmatvec=self.rmatmat,
            matmat=self.matmat,
            rmatmat=self.rmatmat,
            dtype=self.dtype,
        )

    def to_array(self, max_dense_memory: float | None = None, *,
                 out: np.ndarray | None = None) -> np.ndarray:
        """The dense n×m matrix; refuses when it would exceed ``max_dense_memory`` MiB.

        Parameters
        ----------
        max_dense_memory : float, optional
            Limit in MiB for this call (default: the matrix's ``max_dense_memory``;
            ``math.inf``: none). Not compared with the matrix's size when ``out`` is given
            (nothing n×m is allocated).
        out : ndarray of shape (n, m), optional
            A C-contiguous array of the matrix dtype to write the matrix into (for example
            a preallocated buffer or a ``numpy.memmap``); it is returned.

        Returns
        -------
        ndarray of shape (n, m)
            The matrix (centred if enabled), in the matrix dtype (``out`` when given).

        Raises
        ------
        MemoryBudgetError
            If the dense matrix would exceed the limit.
        TypeError
            If ``out`` is not a numpy array of the matrix dtype, or ``max_dense_memory`` is
            not a real number.
        ValueError
            If ``out`` does not have shape (n, m) or is not C-contiguous, or
            ``max_dense_memory`` is not > 0 (``math.inf``: no limit).

        Examples
        --------
        >>> import numpy as np
        >>> from asymkern.kernels import KernelMatrix, get_kernel
        >>> X = np.random.default_rng(0).standard_normal((5, 2))
        >>> G = KernelMatrix(get_kernel("sne", gamma=0.5), X)
        >>> buf = np.empty(G.shape)
        >>> K = G.to_array(out=buf)
        >>> K is buf, bool(np.allclose(K.sum(axis=1), 1.0))
        (True, True)
        """
        if max_dense_memory is not None:  # a bad limit is refused even where out is given
            _check_limit(max_dense_memory)
        if out is None:
            limit = self.max_dense_memory if max_dense_memory is None else max_dense_memory
            check_memory(self.nbytes, f"a dense {self.shape[0]}×{self.shape[1]} {self.dtype} "
                         "kernel matrix", "the lazy operator (matmat, blocks, a Nystrom or "
                         "randomized solver)", limit=limit)
            out = np.empty(self.shape, dtype=self.dtype)
        else:
            self._check_out(out)
        # blocks of at most ~4 % of the output keep the peak near the output's own size
        rows = max(1, min(self.block_rows(), -(-self.shape[0] // 25)))
        if not self.center:
            return self._fill_uncentered(out, rows)
        # centred: the uncentred blocks of the passes' own row partition (the blocks of
        # _means64, whose means every other operation uses), their means read from them
        # where not known yet (one evaluation), then centred in place. A GEMM's rounding may
        # depend on the blocks' shapes (OpenBLAS's edge kernels on AVX-512): blocks of
        # another partition made the means, hence every later product, depend on whether
        # to_array ran first, and a second call's entries differ from the first's. Each
        # block is formed straight into its rows of ``out`` (a cached block is copied), so
        # the peak stays near the output even where one block covers the whole matrix
        slices = []
        for sl in self._row_slices():
            B = None if self._cache is None else self._cache.get((sl.start, sl.stop))
            if B is None:
                self._normalized_block(self.X[sl], self.Z, sl, True, out=out[sl])
            else:
                out[sl] = B
            slices.append(sl)
        if self._means is None:
            self._set_means(*self._block_sums((sl, out[sl]) for sl in slices))
        for sl in slices:
            self._center_block(out[sl], sl, slice(None))
        return out

    def _fill_uncentered(self, out: np.ndarray, rows: int) -> np.ndarray:
        """Write the uncentred matrix into ``out`` (blocks of ``rows`` rows or more)."""
        if not self.kernel.row_normalized or self.kernel.fuses_rows:
            # write each block straight into the output (no block copy, so no temporary
            # beyond the small augmented inputs: large blocks keep the GEMM efficient); a
            # row-normalised kernel is normalised in the same pass, chunk by chunk
            rows = max(rows, -(-self.shape[0] // 4))
            for start in range(0, self.shape[0], rows):
                sl = slice(start, min(start + rows, self.shape[0]))
                self._normalized_block(self.X[sl], self.Z, sl, True, out=out[sl])
            return out
        for sl, B in self._iter_blocks_uncentered(rows):
            out[sl] = B
        return out

    def _check_out(self, out) -> None:
        """Refuse an ``out`` that is not a C-contiguous (n, m) array of the matrix dtype."""
        if not isinstance(out, np.ndarray) or out.dtype != self.dtype:
            raise TypeError(f"out must be a numpy array of dtype {self.dtype} (the matrix "
                            f"dtype), got {type(out).__name__} of dtype "
                            f"{getattr(out, 'dtype', None)}")
        if out.shape != self.shape:
            raise ValueError(f"out must have shape {self.shape}, got {out.shape}")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("out must be a writeable C-contiguous array")

    def __repr__(self) -> str:
        return (
            f"KernelMatrix(kernel={self.kernel!r}, shape={self.shape}, dtype={self.dtype}, "
            f"center={self.center})"
        )


# Kernel.matrix() and kernel(X, Z) build this class (base.py cannot import this module)
Kernel._matrix_type = KernelMatrix


def _check_operand(V, n_rows: int, name: str, method: str) -> np.ndarray:
    """The dense right-hand side of a product with G: real, finite, (n_rows,) or (n_rows, k)."""
    V = np.asarray(V)
    if V.dtype == bool or not (np.issubdtype(V.dtype, np.integer)
                               or np.issubdtype(V.dtype, np.floating)):
        raise TypeError(f"{method}: {name} must be a real numeric array, got dtype {V.dtype}")
    if V.ndim not in (1, 2) or V.shape[0] != n_rows:
        raise ValueError(f"{method}: {name} must have shape ({n_rows},) or ({n_rows}, k) to "
                         f"multiply G, got {V.shape}")
    if not np.all(np.isfinite(V)):
        raise ValueError(f"{method}: {name} contains NaN or infinity; expected finite values")
    return V


#: kernels bounded by 1 (their float32 values cannot overflow): :meth:`KernelMatrix.lowered`
_LOWERED_KERNELS = ("rbf", "laplacian", "cauchy", "sne", "t", "softmax")


class _Float32Passes(LazyMatrix):
    """A float64 :class:`KernelMatrix` whose products run on float32 copies of its data (the
    kernel blocks, the GEMMs and the row normalisers in float32, the centring with the
    float64 means of G), operands and results cast at the boundary: the passes of
    ``precision='low'``."""

    def __init__(self, G: KernelMatrix):
        def f32(A):
            with np.errstate(over="ignore"):
                B = A.astype(np.float32)
            if not np.all(np.isfinite(B)):
                raise ValueError(
                    "precision='low' forms the kernel blocks of the passes from float32 copies "
                    f"of the data, but entries of magnitude up to {np.abs(A).max():.3g} "
                    "exceed float32's range (3.4e38); use precision='high'")
            return B

        self.low = KernelMatrix(
            G.kernel, f32(G.X), None if G.same_sets else f32(G.Z),
            reference=None if G._reference_is_Z else f32(G.reference), center=G.center,
            working_memory=G.working_memory, max_dense_memory=G.max_dense_memory)
        if G.center:
            self.low._means = G._means64()
        self.shape, self.dtype, self.working_memory = G.shape, G.dtype, G.working_memory

    def template(self):
        return self.low.template()

    def block(self, rows, cols):
        return self.low.block(rows, cols).astype(np.float64)

    def matmat(self, B, cols=None):
        return self.low.matmat(B.astype(np.float32), cols).astype(np.float64)

    def rmatmat(self, B, rows=None):
        return self.low.rmatmat(B.astype(np.float32), rows).astype(np.float64)

    def _gram_matmat(self, W):
        return self.low._gram_matmat(W.astype(np.float32)).astype(np.float64)
