"""The executor seam: array primitives and the lazy-matrix protocol (lowest layer).

Every algorithm of the library is written once, against two small interfaces, and runs on
numpy, on Dask and on PyTorch tensors (CPU or GPU) alike:

* :class:`ArrayOps` — the primitives an algorithm needs of the arrays it holds (the tall n×k
  factors: QR, LU normalisation, thin SVD, column norms, the paired sign rule, moving small
  host matrices to the arrays' device and back). :data:`NUMPY` is the numpy table; an executor
  registers its own table with :func:`register_ops` (:mod:`asymkern._torch` does so when
  imported, without importing torch), and :func:`ops_of` picks the table from the inputs. This
  follows KeOps' design (the algebra once, a small primitives table per backend) rather than a
  full array namespace: the few primitives needed here must keep numpy's LAPACK drivers
  (``scipy.linalg``) bit for bit, and the small dense problems (r×r, s×s) stay numpy on the host,
  where scipy's solvers live.
* :class:`LazyMatrix` — the protocol of the lazy kernel matrix G = [κ(x_i, z_j)]: ``shape``,
  ``dtype``, ``ops``, ``block(rows, cols)``, ``matmat(B, cols)`` (G[:, cols]·B) and
  ``rmatmat(B, rows)`` (G[rows, :]ᵀ·B). The other operations (landmark extensions, probes,
  a host :class:`scipy.sparse.linalg.LinearOperator` for ARPACK, the dense form, double
  centring through :class:`Centered`) are derived here once. Implemented by the numpy
  :class:`~asymkern.kernels.KernelMatrix`, the Dask ``DaskKernelMatrix`` and the torch
  ``TorchKernelMatrix`` / ``TorchSparseMatrix``; like linear_operator's ``LinearOperator``, a
  new executor implements three methods and inherits the rest.

Nothing here imports an executor: this module sits below the kernel layer and
:mod:`asymkern.linalg`, which reach the executors only through what they registered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.linalg as sla

_ROW_CHUNK = 1 << 13  # rows per chunk of the O(n r) reductions (no n×r temporary)


class ArrayOps:
    """The array primitives of one executor; this base class is numpy's (:data:`NUMPY`).

    An executor overrides every method for its arrays (:mod:`asymkern._torch.primitives`).
    "Host" arrays are numpy arrays in memory; the executor's arrays may live on a device.
    """

    name = "numpy"

    # ------------------------------------------------------------------ conversions
    def owns(self, a) -> bool:
        """Whether ``a`` is one of this executor's arrays."""
        return isinstance(a, np.ndarray)

    def to_host(self, a) -> np.ndarray:
        """``a`` as a numpy array on the host (no copy for numpy)."""
        return np.asarray(a)

    def from_host(self, A, like, dtype=None):
        """The host array ``A`` as an array of ``like``'s kind (device), in ``dtype``
        (default: ``like``'s dtype)."""
        return np.asarray(A, dtype=like.dtype if dtype is None else dtype)

    def dtype(self, a) -> np.dtype:
        """The numpy dtype of ``a``'s entries."""
        return np.dtype(a.dtype)

    def astype(self, a, dtype):
        """``a`` in the numpy ``dtype`` (no copy when it already is)."""
        return a.astype(dtype, copy=False)

    def empty(self, shape: tuple, like, dtype=None):
        """An uninitialised array of ``shape`` next to ``like`` (its dtype by default)."""
        return np.empty(shape, dtype=like.dtype if dtype is None else dtype)

    def index(self, idx, like):
        """A host index array (or a slice) usable to index arrays of ``like``'s kind."""
        return idx

    # --------------------------------------------------------- tall-skinny algebra
    def qr(self, Y):
        """Economic QR factors (Q, R) of Y."""
        return np.linalg.qr(Y)

    def orth(self, Y):
        """An orthonormal basis of range(Y) (economic QR's Q)."""
        return np.linalg.qr(Y)[0]

    def lu_basis(self, Y):
        """A well-conditioned basis of range(Y): the permuted unit lower LU factor P L
        (entries ≤ 1 in magnitude), about half the flops of a QR. Y may be overwritten.

        Y is first scaled by a power of two (exact, so L is unchanged) that brings its
        largest entry to [½, 1): the elimination never meets subnormal numbers, where an
        iterate of tiny values (a kernel matrix of values near 1e-140, whose products
        underflow) would otherwise give infinite multipliers in older LAPACK builds."""
        top = float(np.max(np.abs(Y))) if Y.size else 0.0
        if 0.0 < top < np.inf:  # ldexp: 2^e itself overflows for subnormal tops (e > 1023)
            np.ldexp(Y, -int(np.frexp(top)[1]), out=Y)
        return sla.lu(Y, permute_l=True, overwrite_a=True, check_finite=False)[0]

    def svd(self, A):
        """Thin SVD (U, s, Vᵀ) of A (s decreasing)."""
        return sla.svd(A, full_matrices=False, check_finite=False)

    def householder(self, A):
        """Householder QR of A (n × m, n ≥ m, float64; overwritten) with Q kept as its
        reflectors: ``(reflectors, R)``, R the m × m upper triangle. Apply Q with
        :meth:`householder_apply`, never forming it. LAPACK ``geqrt`` (recursive panels, block
        size 32: about 1.3× one n×m×m GEMM on one thread, where ``geqrf`` took 2×)."""
        A = np.asfortranarray(A, dtype=np.float64)
        nb = max(1, min(32, A.shape[1]))
        H, T, info = sla.lapack.dgeqrt(nb, A, overwrite_a=1)
        if info != 0:
            raise RuntimeError(f"LAPACK geqrt failed (info={info})")
        m = A.shape[1]
        return (H, T), np.triu(H[:m])

    def householder_apply(self, reflectors, C, transpose: bool = False):
        """Q C (or Qᵀ C with ``transpose``) for the full n × n Q of :meth:`householder`; C is
        n × k (LAPACK ``gemqrt``)."""
        H, T = reflectors
        C = np.array(C, dtype=np.float64, order="F")
        out, info = sla.lapack.dgemqrt(H, T, C, side="L", trans="T" if transpose else "N",
                                       overwrite_c=1)
        if info != 0:
            raise RuntimeError(f"LAPACK gemqrt failed (info={info})")
        return out

    def concat(self, blocks: Sequence):
        """The column-wise concatenation of ``blocks``."""
        return np.hstack(blocks)

    def col_norms(self, U) -> np.ndarray:
        """Euclidean norms of the columns of U (host, U's dtype), by row chunks."""
        sq = np.zeros(U.shape[1], dtype=U.dtype)
        for a in range(0, U.shape[0], _ROW_CHUNK):
            B = U[a:a + _ROW_CHUNK]
            sq += np.einsum("ij,ij->j", B, B)
        return np.sqrt(sq)

    def argmax_abs_cols(self, U) -> np.ndarray:
        """First index of each column's largest magnitude (host), by row chunks."""
        best = np.full(U.shape[1], -1.0)
        idx = np.zeros(U.shape[1], dtype=np.intp)
        cols = np.arange(U.shape[1])
        for a in range(0, U.shape[0], _ROW_CHUNK):
            A = np.abs(U[a:a + _ROW_CHUNK])
            j = np.argmax(A, axis=0)
            v = A[j, cols]
            better = v > best
            idx[better] = a + j[better]
            best[better] = v[better]
        return idx

    def rows(self, U, idx) -> np.ndarray:
        """U[idx] on the host (``idx`` a host index array)."""
        return np.asarray(U[idx])

    def scale_cols(self, U, v, inplace: bool = False):
        """U · diag(v) (``v`` a host vector), in place when ``inplace`` and U allows it."""
        v = np.asarray(v).astype(U.dtype, copy=False)
        if inplace:
            U *= v
            return U
        return U * v

    def sign_flips(self, U) -> np.ndarray:
        """The paired sign rule: signs (host, float64) that make the largest-magnitude entry of
        each column of U positive (0 counts as positive)."""
        if U.shape[0] == 0:
            return np.ones(U.shape[1])
        idx = self.argmax_abs_cols(U)
        vals = np.asarray(self.rows(U, idx), dtype=np.float64)[np.arange(U.shape[1]),
                                                                np.arange(U.shape[1])]
        signs = np.sign(vals)
        signs[signs == 0] = 1
        return signs

    def contiguous(self, a):
        """``a`` in C order (the fitted factors are kept so)."""
        return np.ascontiguousarray(a)

    def all_finite(self, a) -> bool:
        """Whether every entry of ``a`` is finite."""
        return bool(np.isfinite(a).all())

    # --- Nyström machines
    def add_diag_(self, K, alpha: float):
        """K + αI in place (K square, owned by the caller); returns K (:meth:`add_diag` makes
        a new array)."""
        K[np.diag_indices(K.shape[0])] += alpha
        return K

    def solve(self, A, B):
        """The solution X of A X = B (A square, LU with partial pivoting)."""
        return np.linalg.solve(A, B)


    # --- operators
    def eigh(self, A):
        """Eigendecomposition (w ascending, V) of the symmetric A."""
        return sla.eigh(A, check_finite=False)

    def eigh_top(self, A, r: int):
        """The ``r`` largest eigenpairs (w descending, V) of the symmetric A.

        LAPACK's subset drivers (``syevr``, scipy's default, and ``syevx``) can return fewer
        eigenpairs than asked for, even none, or fail with "Internal Error", on a cluster of
        equal eigenvalues (e.g. the centred identity I − 11ᵀ/n, with OpenBLAS's LAPACK); the
        full decomposition (``syevd``) then gives them."""
        n = A.shape[0]
        try:
            lam, Q = sla.eigh(A, subset_by_index=[n - r, n - 1], check_finite=False)
        except np.linalg.LinAlgError:
            lam = np.empty(0)
        if lam.shape[0] != r:
            lam, Q = sla.eigh(A, check_finite=False, driver="evd")
            lam, Q = lam[n - r:], Q[:, n - r:]
        order = np.argsort(-lam, kind="stable")
        return lam[order], Q[:, order]

    def argsort_desc(self, w):
        """Indices that sort the real vector ``w`` decreasingly (stable)."""
        return np.argsort(-w, kind="stable")

    def eig(self, A):
        """Eigenvalues and right eigenvectors (λ, W) of the square A (complex)."""
        return sla.eig(A, check_finite=False)

    def cho_factor(self, A):
        """A Cholesky factor of the symmetric positive definite A, as :meth:`cho_solve` takes
        it; raises :class:`numpy.linalg.LinAlgError` when A is not positive definite."""
        return sla.cho_factor(A, lower=False, check_finite=False)

    def cho_solve(self, factor, B):
        """A⁻¹ B from ``factor`` = :meth:`cho_factor` (A)."""
        return sla.cho_solve(factor, B, check_finite=False)

    def lu_factor(self, A):
        """The pivoted LU factors (LU, piv) of the square A (no warning when A is singular:
        :meth:`lu_rcond` says so)."""
        return lu_factor_quiet(A)

    def lu_solve(self, factor, B, trans: bool = False):
        """A⁻¹ B (Aᵀ⁻¹ B with ``trans``) from ``factor`` = :meth:`lu_factor` (A)."""
        return sla.lu_solve(factor, B, trans=int(trans), check_finite=False)

    def lu_rcond(self, factor, anorm: float) -> float:
        """LAPACK's estimate (``gecon``, 1-norm) of the reciprocal condition number of A from
        ``factor`` = :meth:`lu_factor` (A) and ``anorm`` = ‖A‖₁, on the host; 0 for a singular
        or non-finite factor."""
        LU = np.asfortranarray(self.to_host(factor[0]), dtype=np.float64)
        piv = np.abs(np.diag(LU))
        if not (anorm > 0 and np.all(np.isfinite(LU)) and piv.min() > 0):
            return 0.0
        rcond = float(sla.lapack.dgecon(LU, anorm, norm="1")[0])
        return rcond if np.isfinite(rcond) else 0.0

    def svd_gesvd(self, A):
        """Thin SVD (U, s, Vᵀ) of A by the QR-iteration driver (``gesvd``: accurate small
        singular values, as a regularised inverse needs)."""
        return sla.svd(A, full_matrices=False, check_finite=False, lapack_driver="gesvd")

    def sqrt(self, a):
        """Entry-wise square root."""
        return np.sqrt(a)

    def add_diag(self, A, shift: float):
        """A + shift·I (a new array)."""
        return A + shift * np.eye(A.shape[0])

    def zeros(self, shape: tuple, like, dtype=None):
        """An array of zeros of ``shape`` next to ``like`` (its dtype by default)."""
        return np.zeros(shape, dtype=like.dtype if dtype is None else dtype)

    def col_dots(self, A, B):
        """The column-wise inner products Σ_i A_ij B_ij (conjugating nothing)."""
        return np.einsum("ij,ij->j", A, B)

    def pivoted_cholesky(self, G, tol: float):
        """Cholesky with diagonal pivoting of the symmetric PSD G (LAPACK ``pstrf``), stopped at
        the first pivot ≤ ``tol``: (U, piv, r) with U (r×m, upper triangular in its first r
        columns) the rows of the factor in pivoted column order (G[piv][:, piv] ≈ UᵀU) and
        ``piv`` the host pivot order (0-based, length m)."""
        c, piv, rank, info = sla.lapack.dpstrf(G, tol=tol, lower=0)
        if info < 0:  # pragma: no cover - LAPACK argument error
            raise RuntimeError(f"dpstrf failed with info={info}")
        r = int(rank)
        return np.triu(c[:r, :]), np.asarray(piv) - 1, r

    def solve_triangular(self, T, B):
        """T⁻¹ B for the upper triangular T."""
        return sla.solve_triangular(T, B, lower=False, check_finite=False)

    # ------------------------------------------------------------------ kernel matrices
    def kernel_matrix(self, kernel, X, Z=None, *, reference=None,
                      working_memory: float | None = None) -> LazyMatrix:
        """The lazy G = [κ(x_i, z_j)] of ``kernel`` (a :class:`~asymkern.kernels.Kernel`) on
        this executor, the factory every shared algorithm evaluates kernels through:
        :class:`~asymkern.kernels.KernelMatrix` for numpy (``Z`` None: X against itself), the
        executor's :class:`LazyMatrix` otherwise; blocks of ``working_memory`` MiB (default:
        the library setting)."""
        return kernel.matrix(X, Z, reference=reference, working_memory=working_memory)


def lu_factor_quiet(A, overwrite_a: bool = False):
    """``scipy.linalg.lu_factor(A, check_finite=False)`` without its ``LinAlgWarning`` on an
    exactly singular A (LAPACK's getrf itself; the caller checks the factors).

    Not silenced with ``warnings.catch_warnings``: the warnings filters are process-wide, and
    two threads whose blocks overlap (the first to enter leaving first) leave the ``ignore``
    filter behind for good, silencing the user's own warnings too.
    """
    a = np.asarray(A)
    if a.ndim != 2 or a.size == 0:
        return sla.lu_factor(a, overwrite_a=overwrite_a, check_finite=False)
    getrf, = sla.get_lapack_funcs(("getrf",), (a,))
    lu, piv, info = getrf(a, overwrite_a=overwrite_a)
    if info < 0:  # pragma: no cover - a bad argument (as scipy raises)
        raise ValueError(f"illegal value in {-info}th argument of internal getrf (lu_factor)")
    return lu, piv


def inv_quiet(A, overwrite_a: bool = False):
    """``scipy.linalg.inv(A, check_finite=False)`` without its ``LinAlgWarning`` on an
    ill-conditioned A (LAPACK's getrf and getri; the caller checks the result), for the same
    reason as :func:`lu_factor_quiet`.

    Raises
    ------
    numpy.linalg.LinAlgError
        If A is exactly singular.
    """
    lu, piv = lu_factor_quiet(A, overwrite_a=overwrite_a)
    if lu.ndim != 2 or lu.size == 0:
        return sla.inv(lu, check_finite=False)
    getri, getri_lwork = sla.get_lapack_funcs(("getri", "getri_lwork"), (lu,))
    lwork, info = getri_lwork(lu.shape[0])
    inv, info = getri(lu, piv, lwork=max(1, int(np.real(lwork))), overwrite_lu=True)
    if info > 0:
        raise np.linalg.LinAlgError("singular matrix")
    if info < 0:  # pragma: no cover - a bad argument (as scipy raises)
        raise ValueError(f"illegal value in {-info}th argument of internal getri (inv)")
    return inv


def block_slices(n: int, step: int):
    """The slices ``[a, a + step)`` that cover ``range(n)``, in order."""
    return (slice(a, min(a + step, n)) for a in range(0, n, step))


#: the numpy primitives (the default executor)
NUMPY = ArrayOps()

_OPS: list[tuple[Callable[[Any], bool], Callable[[], ArrayOps]]] = []
_OPS_CACHE: dict[int, ArrayOps] = {}


def register_ops(owns: Callable[[Any], bool], factory: Callable[[], ArrayOps]) -> None:
    """Register an executor's primitives (called by the executor package when imported).

    Parameters
    ----------
    owns : callable
        ``owns(a)`` is true for the executor's arrays; it must not import the executor's
        library (look in ``sys.modules``, as :func:`asymkern._dispatch.is_torch_tensor` does).
    factory : callable
        Returns the :class:`ArrayOps` instance; called once, on first use.
    """
    _OPS.append((owns, factory))


def ops_of(*arrays) -> ArrayOps:
    """The primitives of the first input that belongs to a registered executor (numpy's
    otherwise). A :class:`LazyMatrix` answers with its own ``ops``; ``None`` entries are
    skipped."""
    for a in arrays:
        if a is None:
            continue
        own = getattr(a, "ops", None)
        if isinstance(own, ArrayOps):
            return own
        for k, (owns, factory) in enumerate(_OPS):
            if owns(a):
                if k not in _OPS_CACHE:
                    _OPS_CACHE[k] = factory()
                return _OPS_CACHE[k]
    return NUMPY


# ------------------------------------------------------------------------ the lazy matrix
#: Block-sized arrays a pass over a lazy :class:`~asymkern.kernels.KernelMatrix` holds at
#: once, in float64 blocks of ``block_rows()`` full rows (the blocks ``working_memory`` sizes,
#: half of it): the block being formed, the previous one (still bound by the loop that
#: consumes the blocks) and the kernel's temporaries. Measured with ``tracemalloc``: 2.1–2.3
#: for the RBF, SNE, t, Cauchy, softmax and linear kernels, 3.1–3.2 for the Laplacian and
#: polynomial ones (float32 data: at most 2.6 float64 blocks); the streaming log-sum-exp of a
#: row-normalised kernel over another reference set holds three arrays of the same size.
PASS_BLOCK_ARRAYS = 3


class LazyMatrix:
    """The lazy n×m matrix protocol every executor implements (see the module docstring).

    Subclasses set ``shape`` (a tuple of ints), ``dtype`` (a numpy dtype) and ``ops`` (their
    :class:`ArrayOps`), and implement :meth:`block` and :meth:`template`; the products
    :meth:`matmat` and :meth:`rmatmat` follow from them (:meth:`blocked_matmat`,
    :meth:`blocked_rmatmat`), and an executor overrides them where it has faster ones
    (threads, fused kernels, a task graph).
    ``working_memory`` (MiB per block) sizes the blocks of the derived operations.
    """

    shape: tuple
    dtype: np.dtype
    ops: ArrayOps = NUMPY
    is_dask = False
    working_memory: float = 64.0

    def __array__(self, dtype=None, copy=None):
        """Refused: ``np.asarray(G)`` of a lazy matrix gave a 0-d object array, which later
        failed far from the cause (or not at all). Forming G is an explicit, budget-checked
        step: ``to_array()`` (numpy) or ``to_dense()`` (any executor)."""
        raise TypeError(f"{type(self).__name__} is a lazy {self.shape[0]}×{self.shape[1]} "
                        "matrix: numpy cannot convert it implicitly; form it with "
                        ".to_array() (numpy) or .to_dense(), which check max_dense_memory, "
                        "or use its products (matmat, rmatmat)")

    # ------------------------------------------------------------- the primitive
    def block(self, rows, cols):
        """G[rows, cols] (an array of the executor); rows/cols: slices or host index arrays."""
        raise NotImplementedError

    # ---------------------------------------------- products (executors may fuse them)
    def matmat(self, B, cols=None):
        """G[:, cols] · B (``cols`` None: every column; B an array of the executor): by
        default :meth:`blocked_matmat`."""
        return self.blocked_matmat(B, cols)

    def rmatmat(self, B, rows=None):
        """G[rows, :]ᵀ · B (``rows`` None: every row; B has one row per selected row of G):
        by default :meth:`blocked_rmatmat`."""
        return self.blocked_rmatmat(B, rows)

    def blocked_matmat(self, B, cols=None, dtype=None):
        """G[:, cols] · B accumulated over row blocks of :meth:`block`, so no n×m matrix is
        held; ``dtype`` (default G's): the dtype of the product, each block cast to it first
        (float64 for float32 kernel values gives a mixed-precision product)."""
        return self._blocked_product(B, cols, dtype, False)

    def blocked_rmatmat(self, B, rows=None, dtype=None):
        """G[rows, :]ᵀ · B accumulated over column blocks of :meth:`block` (``dtype`` as in
        :meth:`blocked_matmat`)."""
        return self._blocked_product(B, rows, dtype, True)

    def _blocked_product(self, B, idx, dtype, transpose: bool):
        """G[:, idx] · B over row blocks, or G[idx, :]ᵀ · B over column blocks (``transpose``)."""
        ops = self.ops
        n, other = (int(k) for k in (self.shape[::-1] if transpose else self.shape))
        sel = slice(None) if idx is None else idx
        dtype = self.dtype if dtype is None else dtype
        B = ops.astype(B, dtype)  # a float32 B times float64 blocks: in float64
        out = ops.empty((n, int(B.shape[1])), self.template(), dtype)
        for sl in block_slices(n, self.step(other if idx is None else len(idx))):
            blk = ops.astype(self.block(sel, sl) if transpose else self.block(sl, sel), dtype)
            out[sl] = (blk.T if transpose else blk) @ B
        return out

    # ------------------------------------------------------------------ derived
    def step(self, other: int) -> int:
        """Block length along one axis when the other axis has ``other`` entries (≈ 3
        temporaries of the block in ``working_memory``)."""
        per = max(1, other) * np.dtype(self.dtype).itemsize * 3
        return int(max(1, float(self.working_memory) * 2**20 // per))

    def left(self, J, B, out_dtype=None):
        """G[:, J] · B for host landmark columns J and a host matrix B (the Nyström extension
        of eq. 8 of Tao et al., 2024), in the executor's arrays."""
        like = self.template()
        Bd = self.ops.from_host(B, like, self.dtype)
        return self.matmat(Bd, cols=self.ops.index(np.asarray(J), like))

    def right(self, I, A, out_dtype=None):
        """G[I, :]ᵀ · A for host landmark rows I and a host matrix A."""
        like = self.template()
        Ad = self.ops.from_host(A, like, self.dtype)
        return self.rmatmat(Ad, rows=self.ops.index(np.asarray(I), like))

    def row_probe(self, P, V) -> np.ndarray:
        """G[P, :] · V (host float64, ``|P|`` × k) for host probe rows P and host V."""
        return self._probe(P, V, rows=True)

    def col_probe(self, Q, U) -> np.ndarray:
        """G[:, Q]ᵀ · U (host float64, ``|Q|`` × k) for host probe columns Q and host U."""
        return self._probe(Q, U, rows=False)

    def _probe(self, idx, V, rows: bool) -> np.ndarray:
        """G[idx, :] · V (``rows``) or G[:, idx]ᵀ · V, over blocks of the other dimension."""
        like = self.template()
        Vd = self.ops.from_host(np.asarray(V, dtype=np.float64), like, np.float64)
        out = np.zeros((len(idx), V.shape[1]))
        ii = self.ops.index(np.asarray(idx), like)
        other = self.shape[1 if rows else 0]
        for sl in block_slices(other, self.step(len(idx))):
            B = self.ops.astype(self.block(ii, sl) if rows else self.block(sl, ii).T, np.float64)
            out += self.ops.to_host(B @ Vd[sl])
        return out

    def template(self):
        """An array of the executor that carries the device and dtype of results."""
        raise NotImplementedError

    def to_dense(self):
        """The whole G, formed (the caller checks the memory budget)."""
        return self.block(slice(None), slice(None))

    def aslinearoperator(self):
        """A host :class:`scipy.sparse.linalg.LinearOperator` whose products run on the
        executor (only the vectors cross): what ARPACK needs."""
        from scipy.sparse.linalg import LinearOperator

        like = self.template()
        ops = self.ops

        def on_executor(f):
            def apply(x):
                x = np.asarray(x)
                return ops.to_host(f(ops.from_host(x.reshape(x.shape[0], -1), like)))
            return apply

        mv, rmv = on_executor(self.matmat), on_executor(self.rmatmat)
        return LinearOperator(shape=tuple(int(k) for k in self.shape), dtype=self.dtype,
                              matvec=mv, rmatvec=rmv, matmat=mv, rmatmat=rmv)

    # --- KernelSVD
    def means64(self) -> tuple:
        """Row means (n,) and column means (m,) of G as float64 arrays of the executor, and
        the grand mean (a float): one pass over row blocks, accumulated in float64 (the
        centring statistics of Tao et al., 2024, §2)."""
        ops, like = self.ops, self.template()
        n, m = (int(k) for k in self.shape)
        rows = ops.empty((n,), like, np.float64)
        cols = ops.from_host(np.zeros(m), like, np.float64)
        for sl in block_slices(n, self.step(m)):
            B = ops.astype(self.block(sl, slice(None)), np.float64)
            rows[sl] = B.sum(1)
            cols += B.sum(0)
        return rows / m, cols / n, float(ops.to_host(rows.sum())) / (n * m)

    def points(self, side: str):
        """The data set of one side ('row' or 'col') for k-means landmarks; None when G has
        none (a formed matrix: its rows or columns are used)."""
        return None

    def prepare(self) -> None:
        """One-off statistics needed before arbitrary blocks are read (none by default)."""

    def lowered(self):
        """This matrix with reduced-precision products (``precision='low'`` of
        :func:`~asymkern.linalg.randomized_svd`: float16/bfloat16 operands, float32
        accumulation), or None where the executor has none (the default)."""
        return None


class Centered(LazyMatrix):
    """G̃ = G − r1ᵀ − 1cᵀ + g11ᵀ (= H_n G H_m for the means r, c, g of G): the double centring
    of Tao et al., 2024, §2, over any :class:`LazyMatrix` or dense array of an executor,
    through G's products and the means (nothing beyond G is formed).

    Parameters
    ----------
    G : LazyMatrix or array (n, m)
    row_means, col_means : arrays (n,), (m,) of the executor, in G's dtype
    grand_mean : float
    """

    def __init__(self, G, row_means, col_means, grand_mean: float):
        self.G = G if isinstance(G, LazyMatrix) else DenseMatrix(G)
        self.r, self.c, self.g = row_means, col_means, float(grand_mean)
        self.shape = tuple(int(k) for k in self.G.shape)
        self.dtype, self.ops, self.working_memory = self.G.dtype, self.G.ops, self.G.working_memory

    def template(self):
        return self.G.template()

    def step(self, other: int) -> int:
        return self.G.step(other)

    def block(self, rows, cols):
        B = self.G.block(rows, cols)
        return B - self.r[rows][:, None] - self.c[cols][None, :] + self.g

    def matmat(self, B, cols=None):
        c = self.c if cols is None else self.c[cols]
        return _centred_product(self.G.matmat(B, cols=cols), self.r, c, B, self.g)

    def rmatmat(self, B, rows=None):
        r = self.r if rows is None else self.r[rows]
        return _centred_product(self.G.rmatmat(B, rows=rows), self.c, r, B, self.g)

    def to_dense(self):
        D = self.G.to_dense() - self.r[:, None]  # a new array: G itself is never written
        D -= self.c[None, :]
        D += self.g
        return D

    # --- KernelSVD
    def points(self, side: str):
        """The data sets of the centred kernel matrix (None for a formed G: the centred rows
        are used, as in memory)."""
        return self.G.points(side)

    def prepare(self) -> None:
        self.G.prepare()

    def lowered(self):
        """The centred matrix of G's reduced-precision products (None where G has none)."""
        low = self.G.lowered()
        return None if low is None else Centered(low, self.r, self.c, self.g)


class DenseMatrix(LazyMatrix):
    """A formed array of an executor (a torch tensor; a numpy array where a solver needs the
    protocol) seen through the protocol, read in blocks within the memory budget.

    The Nyström solver (Tao et al., 2024, §3, eq. 8–9) reads only the landmark columns
    G[:, J] and rows G[I, :]: those gathers run over row (or column) blocks of
    ``working_memory`` (:meth:`LazyMatrix.step`), and a pass's blocks are counted
    (:meth:`pass_bytes`) and shrunk to what the budget leaves (:meth:`within`) as the solvers
    count the blocks of a lazy matrix, so the same settings refuse on every executor. Products
    with every row or column use the array itself.

    Parameters
    ----------
    A : array (n, m)
        Never written to, never copied.
    working_memory : float, optional
        MiB per block (default: the ``working_memory`` setting).
    """

    def __init__(self, A, working_memory: float | None = None):
        from .config import get_config

        self.A = A
        self.ops = ops_of(A)
        self.shape = tuple(int(k) for k in A.shape)
        self.dtype = self.ops.dtype(A)
        self.working_memory = float(get_config()["working_memory"] if working_memory is None
                                    else working_memory)

    def template(self):
        return self.A

    def pass_bytes(self, others=()) -> int:
        """Bytes the blocks of a pass against each of ``others`` entries (the landmark
        counts) hold: :data:`PASS_BLOCK_ARRAYS` float64 arrays of
        :meth:`step` × ``other`` entries; 0 without ``others`` (whole rows use G itself)."""
        return int(max([PASS_BLOCK_ARRAYS * 8 * self.step(max(1, int(k))) * max(1, int(k))
                        for k in others], default=0))

    def within(self, budget_bytes: float, others=()) -> DenseMatrix:
        """G with blocks small enough that a pass against each of ``others`` holds at most
        ``budget_bytes`` (down to one row or column: the caller's check then refuses); G
        itself when its blocks fit. The copy shares the array."""
        if self.pass_bytes(others) <= budget_bytes:
            return self
        wm = self.working_memory * 2**20
        per = np.dtype(self.dtype).itemsize * 3
        for k in (max(1, int(k)) for k in others):
            longest = max(1, int(budget_bytes // (PASS_BLOCK_ARRAYS * 8 * k)))
            wm = min(wm, float(min(longest, self.step(k)) * k * per))
        return DenseMatrix(self.A, wm / 2**20)

    def block(self, rows, cols):
        """G[rows, cols], without gathering whole rows (or columns) of a subset first."""
        rows, cols = self.ops.index(rows, self.A), self.ops.index(cols, self.A)
        if isinstance(rows, slice):
            return self.A[rows][:, cols]
        if isinstance(cols, slice):
            return self.A[:, cols][rows]
        return self.A[rows[:, None], cols[None, :]]

    def matmat(self, B, cols=None):
        """G·B at once; G[:, cols]·B over row blocks of :meth:`step` rows."""
        if cols is None:
            return self.A @ B
        return self._subset_product(B, self.ops.index(cols, self.A), False)

    def rmatmat(self, B, rows=None):
        """Gᵀ·B at once; G[rows, :]ᵀ·B over column blocks of :meth:`step` columns."""
        if rows is None:
            return self.A.T @ B
        return self._subset_product(B, self.ops.index(rows, self.A), True)

    def _subset_product(self, B, idx, transpose: bool):
        n = self.shape[1 if transpose else 0]
        k = len(range(*idx.indices(self.shape[0 if transpose else 1]))) \
            if isinstance(idx, slice) else len(idx)
        step = self.step(k)
        if step >= n:
            return (self.A[idx].T if transpose else self.A[:, idx]) @ B
        out = self.ops.empty((n, int(B.shape[1])), B)
        for a in range(0, n, step):
            blk = self.A[:, a:a + step][idx].T if transpose else self.A[a:a + step][:, idx]
            out[a:a + step] = blk @ B
        return out

    def to_dense(self):
        """The array itself (not a copy: callers never write to it)."""
        return self.A


def _centred_product(out, own_means, other_means, B, g: float):
    """(G − a1ᵀ − 1bᵀ + g11ᵀ)·B from ``out`` = G·B: out − a(1ᵀB) − 1(bᵀB) + g1(1ᵀB), with a the
    means along the output's axis and b along B's."""
    s = B.sum(0)[None, :]
    return out - own_means[:, None] * s - (other_means @ B - g * s)


__all__ = ["NUMPY", "ArrayOps", "Centered", "DenseMatrix", "LazyMatrix", "ops_of", "register_ops"]
