"""The SVD solvers behind :func:`asymkern.linalg.top_svd` and their input checks.

Dense (LAPACK), ARPACK and randomized solvers, :class:`SVDResult`, :func:`flip_signs` and the
argument checks shared with :mod:`asymkern.linalg.nystrom`. This module sits below both
:mod:`.svd` (the ``top_svd`` dispatcher, which also reaches the Nyström solver) and
:mod:`.nystrom`, so neither imports the other for them; :mod:`.svd` re-exports the public
names.
See :mod:`asymkern.linalg.svd` for the conventions (inputs, signs, memory).
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackError, LinearOperator, aslinearoperator, svds

from .._backend import NUMPY, PASS_BLOCK_ARRAYS, DenseMatrix, LazyMatrix, ops_of
from .._dispatch import refuse_meta
from .._random import normal_rows, seed_from
from .._validation import check_n_components, check_random_state, user_stacklevel
from ..config import check_memory, format_bytes

SOLVERS = ("auto", "dense", "arpack", "randomized", "block_krylov", "nystrom")


@dataclass(frozen=True)
class SVDResult:
    """Truncated SVD G ≈ U diag(s) Vᵀ: U (n, r), s (r,) decreasing, V (m, r).

    Returned by every solver of :func:`top_svd`. With an asymmetric kernel matrix G, the
    top-r SVD solves the coupled covariance eigenproblem: G V = U Σ, Gᵀ U = V Σ (Tao et al.
    (2024), Prop. 2.4–2.5).

    Parameters
    ----------
    U : ndarray of shape (n, r)
        Left singular vectors (orthonormal columns).
    s : ndarray of shape (r,)
        Singular values, decreasing.
    V : ndarray of shape (m, r)
        Right singular vectors (orthonormal columns).
    solver : str, default 'dense'
        The solver that produced the result.
    info : dict or None, default None
        Solver details (e.g. ``{'nystrom': NystromResult}``).

    See Also
    --------
    top_svd : Computes it.
    flip_signs : The sign convention of (U, V).

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, §2.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import top_svd
    >>> G = np.diag([3.0, 2.0, 1.0])
    >>> res = top_svd(G, 2, solver="dense")
    >>> res.U.shape, res.s.tolist(), res.V.shape, res.solver
    ((3, 2), [3.0, 2.0], (3, 2), 'dense')
    """

    U: np.ndarray
    s: np.ndarray
    V: np.ndarray
    solver: str = "dense"
    info: dict | None = None


_check_random_state = check_random_state  # one policy for the whole library


def _check_int(value, name: str, minimum: int = 0) -> int:
    """An integer (not bool) ≥ ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def _check_real(value, name: str, minimum: float = 0.0) -> float:
    """A finite real number (not bool) ≥ ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number >= {minimum:g}, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value < minimum:
        raise ValueError(f"{name} must be a finite number >= {minimum:g}, got {value}")
    return value


def _check_options(options: dict, valid: tuple, where: str) -> None:
    """Refuse keyword options that ``where`` does not know, naming them and the valid ones."""
    unknown = sorted(set(options) - set(valid))
    if unknown:
        listed = ", ".join(valid) if valid else "none"
        raise TypeError(
            f"{where} got unknown option(s) {', '.join(map(repr, unknown))}; valid options: "
            f"{listed}"
        )


def _all_finite(A: np.ndarray) -> bool:
    """True when every entry is finite: one float64 sum (no n×m temporary), then, only when the
    sum is not finite (NaN/inf, or an overflow of finite values), an exact check by rows."""
    if A.size == 0:
        return True
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(A, dtype=np.float64)):
            return True
    step = max(1, (1 << 22) // max(1, A.shape[-1]))
    flat = A.reshape(A.shape[0], -1) if A.ndim > 1 else A.reshape(1, -1)
    return all(np.isfinite(flat[a:a + step]).all() for a in range(0, flat.shape[0], step))


def check_matrix(G, name: str = "G", *, allow_operator: bool = True):
    """Validate a matrix argument and return ``(G, kind)``.

    kind is ``'kernel'`` (a :class:`~asymkern.kernels.KernelMatrix`, validated when built),
    ``'sparse'`` (scipy sparse, entries checked, integer → float64), ``'operator'`` (a
    ``LinearOperator``: only its dtype can be checked) or ``'dense'`` (any array-like, nested
    lists included: 2-D, real, finite; integer/bool → float64, float32 kept). Raises
    ``TypeError`` for non-numeric input and ``ValueError`` naming ``name`` otherwise.
    """
    from ..kernels.matrix import KernelMatrix

    if isinstance(G, KernelMatrix):
        return G, "kernel"
    if isinstance(G, LazyMatrix):  # another executor's lazy matrix (validated when built)
        return G, "device"
    if G is not None and not sp.issparse(G) and ops_of(G) is not NUMPY:
        return _check_device_matrix(G, name), "device"
    if G is None:
        raise TypeError(f"{name} is None; expected a 2-D array, sparse matrix, LinearOperator "
                        "or KernelMatrix")
    if sp.issparse(G):
        if G.ndim != 2:  # pragma: no cover - scipy sparse arrays are 2-D here
            raise ValueError(f"{name} must be 2-D, got {G.ndim} dimensions")
        dt = np.dtype(G.dtype)
        if np.issubdtype(dt, np.complexfloating):
            raise ValueError(f"{name} is complex-valued; expected real numbers")
        if not (np.issubdtype(dt, np.number) or dt == np.bool_):
            raise TypeError(f"{name} must be numeric, got dtype {dt}")
        if dt not in (np.float32, np.float64):
            G = G.astype(np.float64)
        if G.format not in ("csr", "csc", "coo", "bsr"):
            # LIL, DOK and DIA have no max() (the scale rule of the iterative solvers), and a
            # DIA matrix's data holds unused padding: CSR, whose data are the stored entries
            G = G.tocsr()
        data = G.data
        if not _all_finite(np.asarray(data)):
            raise ValueError(f"{name} contains NaN or infinity; expected finite values")
        return G, "sparse"
    if isinstance(G, LinearOperator):
        if not allow_operator:
            raise TypeError(f"{name} must be an array, a sparse matrix or a KernelMatrix, not a "
                            "LinearOperator (this operation needs its entries)")
        if G.dtype is not None and np.issubdtype(np.dtype(G.dtype), np.complexfloating):
            raise ValueError(f"{name} is a complex LinearOperator; expected a real one")
        if len(G.shape) != 2:  # pragma: no cover
            raise ValueError(f"{name} must be 2-D, got shape {G.shape}")
        return G, "operator"
    refuse_meta(G, name)
    try:
        A = np.asarray(G)
    except Exception as exc:  # ragged lists and other non-arrays
        raise TypeError(f"{name} could not be converted to a numeric array: {exc}") from exc
    if A.dtype == object:
        try:
            A = A.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be numeric: {exc}") from exc
    if np.issubdtype(A.dtype, np.complexfloating):
        raise ValueError(f"{name} is complex-valued; expected real numbers")
    if not (np.issubdtype(A.dtype, np.number) or A.dtype == bool):
        raise TypeError(f"{name} must be numeric, got dtype {A.dtype}")
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got an array with {A.ndim} dimensions "
                         f"(shape {A.shape})")
    if A.dtype not in (np.float32, np.float64):
        A = A.astype(np.float64)
    if not _all_finite(A):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    return A, "dense"


def check_lazy_dtype(G, name: str = "G") -> None:
    """Refuse a matrix checked lazily (a dask array, whose entries are read later) of a
    complex or non-numeric dtype, from its dtype alone: its solvers would cast it to float,
    dropping the imaginary part.

    Parameters
    ----------
    G : dask array or any object with a ``dtype``
        The matrix.
    name : str, default 'G'
        The name used in the error.

    Raises
    ------
    ValueError
        If G is complex-valued.
    TypeError
        If G is not numeric.
    """
    dt = getattr(G, "dtype", None)
    if dt is None:
        return
    dt = np.dtype(dt)
    if np.issubdtype(dt, np.complexfloating):
        raise ValueError(f"{name} is complex-valued; expected real numbers")
    if not (np.issubdtype(dt, np.number) or dt == np.bool_):
        raise TypeError(f"{name} must be numeric, got dtype {dt}")


def _check_device_matrix(G, name: str):
    """A dense array of another executor (a torch tensor) as a :class:`LazyMatrix`, checked:
    2-D, real, floating (integers → float64), finite."""
    refuse_meta(G, name)
    layout = getattr(G, "layout", None)
    if layout is not None and str(layout) != "torch.strided":
        raise TypeError(f"{name} is a sparse tensor ({layout}), which the solvers do not read; "
                        f"pass {name}.to_dense() or a scipy sparse matrix")
    if getattr(G, "requires_grad", False):
        G = G.detach()  # the factors must not carry (nor keep alive) an autograd graph
    ops = ops_of(G)
    if G.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got an array with {G.ndim} dimensions "
                         f"(shape {tuple(G.shape)})")
    dt = ops.dtype(G)
    if np.issubdtype(dt, np.complexfloating):
        raise ValueError(f"{name} is complex-valued; expected real numbers")
    if dt not in (np.float32, np.float64):
        G = ops.astype(G, np.float64)
    if not ops.all_finite(G):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    return DenseMatrix(G)


def dense_svd_bytes(n: int, m: int, dtype=np.float64, *, input_copy: bool = True) -> int:
    """Estimated peak bytes of :func:`dense_svd` of an n×m matrix, besides the matrix itself.

    The copy LAPACK works on (``input_copy``), U (n×k), Vᵀ (k×m) with k = min(n, m), and the
    ``gesdd`` workspace as LAPACK itself reports it (≈ 3k² + 4k entries for a square matrix).
    Checked against ``tracemalloc`` in the test suite.
    """
    n, m = int(n), int(m)
    dtype = np.dtype(np.float32 if np.dtype(dtype) == np.float32 else np.float64)
    k = min(n, m)
    if k == 0:
        return 0
    query = sla.lapack.sgesdd_lwork if dtype == np.float32 else sla.lapack.dgesdd_lwork
    try:
        lwork = int(query(n, m, compute_uv=1, full_matrices=0)[0])
    except Exception:  # pragma: no cover - an implementation without the query
        lwork = 4 * k * k + 7 * k + max(n, m)
    entries = (n * m if input_copy else 0) + n * k + k * m + lwork
    return entries * dtype.itemsize + 8 * k * 4  # + iwork (8k int32)


def _check_dense_budget(n: int, m: int, dtype, matrix_bytes: int, what: str,
                        limit: float | None = None) -> None:
    """check_memory for a dense SVD that also forms a matrix of ``matrix_bytes``."""
    dtype = np.dtype(np.float32 if np.dtype(dtype) == np.float32 else np.float64)
    need = matrix_bytes + dense_svd_bytes(n, m, dtype, input_copy=matrix_bytes == 0)
    copies = need / max(1, n * m * dtype.itemsize)
    formed = "the matrix formed, " if matrix_bytes else "a copy of the matrix, "
    check_memory(
        need, what, "solver='randomized', 'arpack' or 'nystrom' (top_svd / KernelSVD)",
        detail=f"{formed}U, Vᵀ and the LAPACK workspace: ≈{copies:.1f} copies of a "
               f"{n}×{m} {dtype} matrix of {format_bytes(n * m * dtype.itemsize)}",
        limit=limit,
    )


def arpack_svd_bytes(n: int, m: int, r: int, dtype=np.float64) -> int:
    """Estimated peak bytes of :func:`arpack_svd` of an n×m matrix for r components (besides G).

    The largest of its phases: scipy's ``svds`` runs ARPACK on the s×s Gram operator
    (s = min(n, m)) with ncv = min(max(2r + 1, 20), s) Lanczos vectors (s×ncv, twice: scipy
    keeps them C-ordered and its Fortran wrapper works on a copy) and its ncv(ncv + 8)
    workspace; then it forms the r eigenvectors (s×r, with their QR), the
    products G·V (L×r, L = max(n, m)) and their thin SVD (:func:`dense_svd_bytes`); last the
    results U (n×r) and V (m×r) with their reordered, sign-flipped copies.
    """
    n, m, r = int(n), int(m), int(r)
    itemsize = np.dtype(np.float32 if np.dtype(dtype) == np.float32 else np.float64).itemsize
    s, big = min(n, m), max(n, m)
    ncv = min(max(2 * r + 1, 20), s)
    lanczos = (2 * s * ncv + ncv * (ncv + 8) + 6 * s + 2 * big + s * r) * itemsize
    extract = (2 * s * r + big * r) * itemsize + dense_svd_bytes(big, r, dtype)
    finish = (s * r + 3 * (n + m) * r) * itemsize
    return int(max(lanczos, extract, finish))


def randomized_svd_bytes(n: int, m: int, r: int, n_oversamples: int = 10,
                         n_iter: int | str = "auto", method: str = "power",
                         dtype=np.float64) -> int:
    """Estimated peak bytes of :func:`randomized_svd` of an n×m matrix (besides G itself).

    With k = min(r + n_oversamples, n, m) columns (k(q + 1) for the block Krylov basis of q
    steps, :func:`resolve_randomized_plan`): the test matrix Ω and the basis W (m×k each, the
    Krylov blocks and their concatenation for ``'block_krylov'``), one pass Gᵀ(G W) (an n×k
    and two m×k temporaries, one accumulated in float64 for a lazy kernel), Y = G W (n×k), the
    thin SVD of Y (:func:`dense_svd_bytes`) and the results with their reordered, sign-flipped
    copies.
    """
    n, m, r = int(n), int(m), int(r)
    itemsize = np.dtype(np.float32 if np.dtype(dtype) == np.float32 else np.float64).itemsize
    k = min(r + int(n_oversamples), n, m)
    method, q = resolve_randomized_plan(method, n_iter, r, k, n, m)
    width = k * (q + 1) if method == "block_krylov" else k
    held = m * k + (2 * m * width if method == "block_krylov" else m * k)  # Ω, W (blocks, V)
    passes = held * itemsize + (n * k + 2 * m * k) * itemsize + 8 * m * k
    final = (held + n * width) * itemsize + dense_svd_bytes(n, width, dtype)
    finish = (held + n * width + n * width + 3 * (n + m) * r) * itemsize
    return int(max(passes, final, finish))


def _iterative_need(solver: str, n: int, m: int, r: int, dtype, n_oversamples, n_iter
                    ) -> tuple[int, str, str] | None:
    """(bytes, detail, alternatives) of the iterative solver ``solver`` ('arpack',
    'randomized', 'block_krylov') besides G and its blocks; None for any other solver."""
    if solver == "arpack":
        detail = (f"ARPACK's Lanczos basis of min(n, m) = {min(n, m)} rows and the n×r, m×r "
                  "factors with their copies")
        return (arpack_svd_bytes(n, m, r, dtype), detail,
                "fewer components, or solver='randomized' or 'nystrom'")
    if solver in RANDOMIZED_SOLVERS:
        method = RANDOMIZED_SOLVERS[solver]
        n_oversamples, n_iter = check_randomized_options(n_oversamples, n_iter, method)
        detail = (f"the range finder's n×k and m×k blocks (k = r + n_oversamples = "
                  f"{min(r + int(n_oversamples), n, m)}), the SVD of the n×k sketch and the "
                  "factors")
        return (randomized_svd_bytes(n, m, r, n_oversamples, n_iter, method, dtype), detail,
                "fewer components, or solver='nystrom'")
    return None


def svd_solver_bytes(solver: str, n: int, m: int, r: int, dtype=np.float64, *,
                     n_oversamples: int = 10, n_iter: int | str = "auto") -> int:
    """Estimated peak bytes of a top-r SVD of an n×m matrix by ``solver``, besides G itself
    and the kernel blocks of its passes over a lazy G (:func:`pass_block_bytes`).

    Parameters
    ----------
    solver : str
        'dense' (a copy of G, U, Vᵀ and the LAPACK workspace: :func:`dense_svd_bytes`),
        'arpack' (:func:`arpack_svd_bytes`; the dense solver when r ≥ min(n, m)),
        'randomized' or 'block_krylov' (:func:`randomized_svd_bytes`); 0 for any other.
    n, m : int
        The shape of G.
    r : int
        The number of components.
    dtype : dtype, default float64
        G's dtype (float32 kept, anything else counted as float64).
    n_oversamples : int, default 10
        The randomized solvers' oversampling.
    n_iter : int or 'auto', default 'auto'
        The randomized solvers' iterations.

    Returns
    -------
    int
        The bytes.

    See Also
    --------
    check_svd_budget : Checks them, with the blocks of the passes, against the budget.

    Examples
    --------
    >>> from asymkern.linalg.svd import randomized_svd_bytes, svd_solver_bytes
    >>> svd_solver_bytes("randomized", 1000, 800, 5) == randomized_svd_bytes(1000, 800, 5)
    True
    """
    n, m, r = int(n), int(m), int(r)
    dtype = np.dtype(np.float32 if np.dtype(dtype) == np.float32 else np.float64)
    if solver == "arpack" and r >= min(n, m):
        solver = "dense"
    if solver == "dense":
        return dense_svd_bytes(n, m, dtype)
    found = _iterative_need(solver, n, m, r, dtype, n_oversamples, n_iter)
    return 0 if found is None else int(found[0])


def check_svd_budget(solver: str, n: int, m: int, r: int, dtype=np.float64, *,
                     n_oversamples: int = 10, n_iter: int | str = "auto",
                     extra: int = 0, block_bytes: int = 0, limit: float | None = None) -> None:
    """Refuse a top-r SVD of an n×m matrix whose solver would exceed the memory budget.

    Raised before anything is allocated. ``solver`` is one of 'dense' (the matrix formed or
    copied, U, Vᵀ and the LAPACK workspace), 'arpack', 'randomized' or 'block_krylov'
    (:func:`arpack_svd_bytes`, :func:`randomized_svd_bytes`); other solvers are checked by
    their own functions.

    Parameters
    ----------
    solver : str
        The solver.
    n, m : int
        The shape of G.
    r : int
        The number of components.
    dtype : dtype, default float64
        G's dtype.
    n_oversamples : int, default 10
        The randomized solvers' oversampling.
    n_iter : int or 'auto', default 'auto'
        The randomized solvers' iterations.
    extra : int, default 0
        Bytes held besides (e.g. a dense matrix the iterative solver runs on).
    block_bytes : int, default 0
        The kernel blocks an iterative solver's passes over a lazy G hold
        (:func:`pass_block_bytes`), counted besides the solver's own arrays.
    limit : float, optional
        The budget in MiB (default: the ``max_dense_memory`` setting).

    Raises
    ------
    MemoryBudgetError
        When the estimate exceeds the budget.

    See Also
    --------
    svd_solver_bytes : The solver's own bytes.
    blocks_within : Blocks that fit what the solver leaves of the budget.
    """
    n, m, r = int(n), int(m), int(r)
    dtype = np.dtype(np.float32 if np.dtype(dtype) == np.float32 else np.float64)
    if solver == "arpack" and r >= min(n, m):  # arpack_svd falls back to the dense solver
        solver = "dense"
    if solver == "dense":  # what the caller holds besides (``extra``) counted too
        _check_dense_budget(n, m, dtype, n * m * dtype.itemsize + int(extra),
                            f"a dense SVD of the {n}×{m} matrix G", limit=limit)
        return
    found = _iterative_need(solver, n, m, r, dtype, n_oversamples, n_iter)
    if found is None:
        return
    need, detail, alternatives = found
    if block_bytes:
        detail += f", and the kernel blocks of its passes ({format_bytes(block_bytes)})"
    check_memory(need + int(extra) + int(block_bytes), f"{solver!r} SVD of the {n}×{m} matrix "
                 f"G for r = {r} components", alternatives, detail=detail, limit=limit)




def _numpy_kernel_matrix(G) -> bool:
    from ..kernels.matrix import KernelMatrix

    return isinstance(G, KernelMatrix)


def data_copy_bytes(d: int, rows: int, cols: int) -> int:
    """Bytes of the copies of d-feature dense data that forming a ``rows`` × ``cols`` kernel
    block makes: (3d + 4) float64 entries a row, (2d + 3) a column (the rule of
    :func:`data_pass_bytes`, for any executor)."""
    d = int(d)
    return ((3 * d + 4) * int(rows) + (2 * d + 3) * int(cols)) * 8


def data_pass_bytes(G, rows: int, cols: int) -> int:
    """Bytes of the copies of the data that forming one block of a KernelMatrix makes.

    Those of the squared-distance expansion (the centred rows, the augmented (d + 2)-column
    copies, the squared norms and a d-column temporary of each side: (3d + 4) float64
    entries a row, (2d + 3) a column), counted for every kernel on dense data.

    Parameters
    ----------
    G : KernelMatrix or any matrix
        The matrix.
    rows : int
        Rows of the block (samples of X).
    cols : int
        Columns of the block (samples of Z, or of the reference set).

    Returns
    -------
    int
        The bytes; 0 for sparse data (not copied) and for anything but a numpy KernelMatrix.

    See Also
    --------
    pass_block_bytes : Counts them with the blocks of a pass.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import KernelMatrix
    >>> from asymkern.linalg.svd import data_pass_bytes
    >>> G = KernelMatrix("rbf", np.zeros((10, 3)), np.zeros((8, 3)))
    >>> data_pass_bytes(G, 10, 8) == (13 * 10 + 9 * 8) * 8
    True
    """
    if not _numpy_kernel_matrix(G) or sp.issparse(G.X) or sp.issparse(G.Z):
        return 0
    return data_copy_bytes(G.X.shape[1], rows, cols)


def _pass_bytes(G, working_memory: float) -> int:
    """Bytes a pass over the numpy KernelMatrix G with the given ``working_memory`` holds:
    :data:`PASS_BLOCK_ARRAYS` float64 blocks and the data copies forming a block makes
    (:func:`data_pass_bytes`). The blocks are those of ``block_rows()``, or, for a
    row-normalised kernel over another reference set R, those of the streaming log-sum-exp of
    its normalisers when larger (every row against columns of R: ``working_memory``/16
    entries, or all of R), plus, where there is more than one block, the previous block of
    G, which the loop consuming the blocks (``matmat``, ``rmatmat``) still holds while the
    next block's normalisers stream (traced: 4.1 blocks for the SNE kernel, not 3)."""
    n, m = (int(k) for k in G.shape)
    rows = int(max(1, min(n, working_memory * 2**20 // G.row_bytes())))  # G.block_rows()
    entries, data_rows, data_cols = rows * max(1, m), rows, m
    previous = 0
    if G.kernel.row_normalized and not G._reference_is_Z:
        n_ref = int(G.reference.shape[0])
        step = min(n_ref, int(max(1, working_memory * 2**20 // (max(1, n) * 16))))
        entries = max(entries, n * step)
        data_rows, data_cols = max(rows, n), max(m, step)
        previous = 8 * rows * m if rows < n else 0
    return (PASS_BLOCK_ARRAYS * 8 * entries + previous
            + data_pass_bytes(G, data_rows, data_cols))


def pass_block_bytes(G) -> int:
    """Bytes of the kernel blocks a pass over the lazy matrix G holds at once.

    :data:`PASS_BLOCK_ARRAYS` float64 arrays of one block of G (``G.block_rows()`` full
    rows, at least one) and the copies of the data that forming a block makes
    (:func:`data_pass_bytes`): what a product, a centring or a normalisation pass over a
    numpy :class:`~asymkern.kernels.KernelMatrix` adds to the arrays of the algorithm that
    runs it.

    Parameters
    ----------
    G : KernelMatrix or any matrix
        The matrix the passes run over.

    Returns
    -------
    int
        The bytes; 0 for anything but a numpy KernelMatrix (a formed array holds no blocks;
        the torch and Dask matrices size their own blocks, on their device or workers).

    See Also
    --------
    blocks_within : A KernelMatrix whose passes fit a given number of bytes.
    check_svd_budget : Counts these bytes besides the solver's arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import KernelMatrix
    >>> from asymkern.linalg.svd import PASS_BLOCK_ARRAYS, pass_block_bytes
    >>> G = KernelMatrix("linear", np.ones((100, 2)), working_memory=512)
    >>> pass_block_bytes(G) >= PASS_BLOCK_ARRAYS * G.nbytes   # the whole matrix is one block
    True
    >>> pass_block_bytes(np.ones((100, 100)))                  # a formed array: no blocks
    0
    """
    if not _numpy_kernel_matrix(G):
        return 0
    return _pass_bytes(G, G.working_memory)


def budget_bytes(G=None) -> float:
    """The memory budget in bytes: a KernelMatrix's own ``max_dense_memory``, else the
    ``max_dense_memory`` setting of the current thread.

    Parameters
    ----------
    G : KernelMatrix or any matrix, optional
        The matrix whose budget applies.

    Returns
    -------
    float
        The bytes.

    See Also
    --------
    blocks_within : Blocks within what is left of it.

    Examples
    --------
    >>> import asymkern
    >>> from asymkern.linalg.svd import budget_bytes
    >>> with asymkern.config_context(max_dense_memory=2):
    ...     budget_bytes()
    2097152.0
    """
    from ..config import get_config

    limit = _limit_of(G) if G is not None else None
    return float(get_config()["max_dense_memory"] if limit is None else limit) * 2**20


def blocks_within(G, budget_bytes: float):
    """G, with blocks small enough that a pass over it holds at most ``budget_bytes``.

    A numpy :class:`~asymkern.kernels.KernelMatrix` whose passes would hold more
    (:func:`pass_block_bytes`) comes back as a shallow copy with a smaller ``working_memory``
    (fewer rows per block, down to one row); the caller's G is never modified. The entries,
    and so any result, are those of G: only the order of the blocked sums changes.

    Parameters
    ----------
    G : KernelMatrix or any matrix
        The matrix (anything else than a numpy KernelMatrix is returned as it is).
    budget_bytes : float
        What is left of the memory budget for the blocks of a pass.

    Returns
    -------
    KernelMatrix or any matrix
        G itself when its blocks fit already (or it is not a numpy KernelMatrix), else the
        copy. Its blocks may still exceed ``budget_bytes`` when one row does not fit: the
        caller's budget check (which counts :func:`pass_block_bytes`) then refuses.

    See Also
    --------
    pass_block_bytes : The bytes of the blocks of a pass.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import KernelMatrix
    >>> from asymkern.linalg.svd import blocks_within, pass_block_bytes
    >>> G = KernelMatrix("rbf", np.random.default_rng(0).standard_normal((500, 3)))
    >>> H = blocks_within(G, 2**20)
    >>> pass_block_bytes(G) > 2**20 >= pass_block_bytes(H), H.block_rows() < G.block_rows()
    (True, True)
    >>> bool(np.allclose(H.matmat(np.ones(500)), G.matmat(np.ones(500))))
    True
    """
    import copy

    if not _numpy_kernel_matrix(G) or pass_block_bytes(G) <= budget_bytes:
        return G
    per_row = G.row_bytes()
    lo, hi = 1, max(1, int(G.block_rows()))  # the most rows whose pass fits (at least one)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _pass_bytes(G, mid * per_row / 2**20) <= budget_bytes \
            else (lo, mid - 1)
    # block_rows() gives exactly ``lo`` rows: working_memory·2²⁰ // (m·itemsize·2)
    wm = lo * per_row / 2**20
    if wm >= G.working_memory:
        return G
    H = copy.copy(G)
    H.working_memory = wm
    return H


def flip_signs(U: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Paired sign flip of (u_i, v_i): the largest-magnitude entry of each u_i becomes positive.

    Flipping u_i and v_i together leaves G = U diag(s) Vᵀ unchanged and makes the result
    independent of the LAPACK/ARPACK build.

    Parameters
    ----------
    U : array-like of shape (n, r)
        Left vectors (columns).
    V : array-like of shape (m, r)
        Right vectors, with the same number of columns.

    Returns
    -------
    U, V : ndarray
        The flipped vectors (new arrays; the inputs are not modified).

    Raises
    ------
    ValueError
        If ``U`` or ``V`` is not 2-D, or their column counts differ.

    See Also
    --------
    top_svd : Returns vectors with this sign convention.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import flip_signs
    >>> U, V = flip_signs(np.array([[0.6], [-0.8]]), np.array([[1.0], [0.0]]))
    >>> U.ravel().tolist(), V.ravel().tolist()
    ([-0.6, 0.8], [-1.0, -0.0])
    """
    U = np.asarray(U)
    V = np.asarray(V)
    if U.ndim != 2 or V.ndim != 2:
        raise ValueError(f"U and V must be 2-D (vectors are columns), got {U.ndim}-D and "
                         f"{V.ndim}-D arrays")
    if U.shape[1] != V.shape[1]:
        raise ValueError(f"U has {U.shape[1]} columns but V has {V.shape[1]}; expected equal")
    if U.shape[0] == 0:
        return U, V
    idx = np.argmax(np.abs(U), axis=0)
    signs = np.sign(U[idx, np.arange(U.shape[1])])
    signs[signs == 0] = 1
    return U * signs, V * signs


def _is_device(G) -> bool:
    """Whether G is another executor's lazy matrix (a torch matrix or tensor)."""
    from ..kernels.matrix import KernelMatrix

    return isinstance(G, LazyMatrix) and not isinstance(G, KernelMatrix)


def _as_operator(G) -> LinearOperator:
    from ..kernels.matrix import KernelMatrix

    if isinstance(G, KernelMatrix):
        return G.aslinearoperator()
    return aslinearoperator(G)


def _dtype_of(G) -> np.dtype:
    """The float dtype the solvers work in for G (float32 kept, anything else float64)."""
    dt = getattr(G, "dtype", None)
    return np.dtype(np.float32 if dt is not None and np.dtype(dt) == np.float32 else np.float64)


def _limit_of(G) -> float | None:
    """The budget of a lazy KernelMatrix (its own ``max_dense_memory``), else the setting's."""
    from ..kernels.matrix import KernelMatrix

    return G.max_dense_memory if isinstance(G, KernelMatrix) else None


def _solver_blocks(G, solver: str, r: int, *, cache: bool = True, **options):
    """G (a lazy KernelMatrix) with blocks within what the solver's own arrays leave of G's
    budget (:func:`blocks_within`), and (``cache``) a copy that keeps its evaluated blocks
    (:meth:`~asymkern.kernels.KernelMatrix.cached`) in what the blocks leave of it, at most
    the ``cache_memory`` setting; any other G as it is. A G that this function prepared
    already (not a user's :meth:`~asymkern.kernels.KernelMatrix.cached` copy, which is never
    filled), in no more than that room and whose blocks fit, comes back as it is, with what
    it keeps (KernelSVD's centring pass fills the cache its solver's passes then read)."""
    if not _numpy_kernel_matrix(G):
        return G
    from ..config import get_config

    n, m = G.shape
    left = budget_bytes(G) - svd_solver_bytes(solver, n, m, r, _dtype_of(G), **options)
    H, G = G, blocks_within(G, left)
    room = min(float(get_config()["cache_memory"]) * 2**20, left - pass_block_bytes(G))
    if G is H and G._cache is not None and G._solver_cache and G._cache_limit <= room:
        return G
    if cache and room >= G.block_rows() * m * G.dtype.itemsize:  # at least one block fits
        G = G.cached(room)
        G._solver_cache = True  # a solver's own copy: later calls may keep what it holds
    return G


def _finish(U, s, V, r, solver, info=None, ops=None) -> SVDResult:
    if ops is not None and ops.name != "numpy":  # another executor: factors stay there
        s = np.asarray(ops.to_host(s), dtype=np.float64)
        order = np.argsort(s, kind="stable")[::-1][:r].copy()
        oi = ops.index(order, U)
        U, s, V = U[:, oi], s[order], V[:, oi]
        signs = ops.sign_flips(U)
        U, V = ops.scale_cols(U, signs), ops.scale_cols(V, signs)
        return SVDResult(ops.contiguous(U), s, ops.contiguous(V), solver, info)
    order = np.argsort(s)[::-1][:r]
    U, s, V = U[:, order], s[order], V[:, order]
    U, V = flip_signs(U, V)
    return SVDResult(np.ascontiguousarray(U), s, np.ascontiguousarray(V), solver, info)


def _rank(r, shape, name: str = "r") -> int:
    if min(shape) == 0:
        raise ValueError(f"G is empty (shape {tuple(shape)}); expected at least one row and one "
                         "column")
    return check_n_components(r, min(shape), name=name,
                              what=f"min(n, m) of G with shape {tuple(shape)}")


def dense_svd(G, r: int, *, _checked: bool = False, _driver: str = "gesdd") -> SVDResult:
    """Exact top-r SVD by LAPACK (gesdd, falling back to gesvd if it does not converge).

    Parameters
    ----------
    G : array-like, sparse matrix, LinearOperator or KernelMatrix of shape (n, m)
        Real and finite; formed densely.
    r : int
        Number of components, 1 ≤ r ≤ min(n, m).
    _checked : bool, default False
        Internal: G was already validated.
    _driver : {'gesdd', 'gesvd'}, default 'gesdd'
        Internal: the LAPACK driver (``'gesvd'`` is the fallback).

    Returns
    -------
    SVDResult
        U (n, r), s (r,) decreasing, V (m, r), with paired deterministic signs; float32 for
        float32 input.

    Raises
    ------
    ValueError
        If G is not real and finite, or r is out of range.
    MemoryBudgetError
        When the whole operation (matrix formed, its copy, factors, workspace;
        :func:`dense_svd_bytes`) would exceed ``max_dense_memory``.

    See Also
    --------
    top_svd : Chooses a solver.
    arpack_svd : Iterative, for a few components of a large matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import dense_svd
    >>> G = np.random.default_rng(0).standard_normal((6, 4))
    >>> res = dense_svd(G, 2)
    >>> bool(np.allclose(res.s, np.linalg.svd(G, compute_uv=False)[:2]))
    True
    """
    from ..kernels.matrix import KernelMatrix

    if not _checked:
        G, _ = check_matrix(G)
    given = G
    n, m = G.shape
    r = _rank(r, G.shape)
    owned = not isinstance(G, np.ndarray)  # a matrix formed here can be overwritten by LAPACK
    dtype = G.dtype if np.dtype(G.dtype) == np.float32 else np.float64
    limit = getattr(G, "max_dense_memory", None) if isinstance(G, LazyMatrix) else None
    _check_dense_budget(n, m, dtype, n * m * np.dtype(dtype).itemsize if owned else 0,
                        f"a dense SVD of the {n}×{m} matrix G", limit=limit)
    if _is_device(G):  # another executor: formed and decomposed there
        U, s, Vt = G.ops.svd(G.to_dense())
        return _finish(U[:, :r], s[:r], Vt[:r].T, r, "dense", ops=G.ops)
    if isinstance(G, KernelMatrix):
        G = G.to_array(max_dense_memory=np.inf)
    elif sp.issparse(G):
        G = G.toarray()
    elif isinstance(G, LinearOperator):
        G = np.asarray(G @ np.eye(G.shape[1], dtype=dtype))
    G = np.asarray(G)
    if G.dtype not in (np.float32, np.float64):  # pragma: no cover - check_matrix converts
        G = G.astype(np.float64)
    if owned and G.flags.c_contiguous:
        # SVD of the Fortran-ordered view Gᵀ in place: no extra copy (Gᵀ = U' S V'ᵀ)
        A, swap = G.T, True
    else:
        A, swap = G, False

    def run(driver):
        return sla.svd(A, full_matrices=False, lapack_driver=driver, check_finite=False,
                       overwrite_a=owned)

    try:
        U, s, Vt = run(_driver)
    except np.linalg.LinAlgError:  # pragma: no cover - rare LAPACK failure
        if _driver == "gesvd":
            raise
        if owned:  # the formed matrix was overwritten: form it again for gesvd
            del A, G
            return dense_svd(given, r, _checked=True, _driver="gesvd")
        U, s, Vt = run("gesvd")
    if swap:
        U, Vt = Vt.T, U.T
    return _finish(U[:, :r], s[:r], Vt[:r].T, r, "dense")


def operator_matrix(G, kind: str, name: str = "G"):
    """``(G, kind)`` with scipy's ``aslinearoperator`` of an array or sparse matrix unwrapped to
    that matrix, checked as one by :func:`check_matrix` (kind ``'dense'`` or ``'sparse'``);
    anything else as given. The product solvers read such an operator as its matrix: scipy
    1.18 forms the adjoint products of the operator through a copy Aᵀ.conj() as large as A,
    outside the memory budget, and a NaN in A would reach the solver unseen."""
    base = getattr(G, "A", None) if type(G).__name__ == "MatrixLinearOperator" else None
    if kind == "operator" and (sp.issparse(base) or isinstance(base, np.ndarray)):
        return check_matrix(base, name)
    return G, kind


def arpack_svd(G, r: int, tol: float = 0.0, random_state=None) -> SVDResult:
    """Top-r SVD by implicitly restarted Lanczos (scipy ``svds``, ARPACK).

    Parameters
    ----------
    G : array-like, sparse matrix, LinearOperator or KernelMatrix of shape (n, m)
        Real and finite; a LinearOperator or KernelMatrix is never formed.
    r : int
        Number of components, 1 ≤ r ≤ min(n, m) (r = min(n, m) falls back to
        :func:`dense_svd`).
    tol : float, default 0.0
        ARPACK's relative tolerance, ≥ 0 (0: machine precision).
    random_state : None, int or RandomState, default None
        Seed of the starting vector.

    Returns
    -------
    SVDResult
        U (n, r), s (r,) decreasing, V (m, r), with paired deterministic signs.

    Raises
    ------
    ValueError
        If G is not real and finite, or r or tol is out of range.

    See Also
    --------
    top_svd : Chooses a solver.
    randomized_svd : Randomized range finder.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import arpack_svd
    >>> G = np.random.default_rng(0).standard_normal((30, 20))
    >>> res = arpack_svd(G, 3, random_state=0)
    >>> bool(np.allclose(res.s, np.linalg.svd(G, compute_uv=False)[:3]))
    True
    """
    G, kind = operator_matrix(*check_matrix(G))
    shape = G.shape
    r = _rank(r, shape)
    tol = _check_real(tol, "tol")
    rng = _check_random_state(random_state)
    if r >= min(shape):
        return dense_svd(G, r, _checked=True)
    G = _solver_blocks(G, "arpack", r)
    check_svd_budget("arpack", shape[0], shape[1], r, _dtype_of(G), limit=_limit_of(G),
                     block_bytes=pass_block_bytes(G))
    c = _formed_scale(G)  # ARPACK runs on c·G, a scaled operator (never a copy)
    if kind == "device":  # ARPACK on the host, the products on the executor
        op = G.aslinearoperator()
        res = arpack_svd(op if c == 1.0 else op * c, r, tol=tol, random_state=rng)
        like = G.template()
        return SVDResult(G.ops.from_host(res.U, like), np.asarray(res.s, dtype=np.float64) / c,
                         G.ops.from_host(res.V, like), "arpack", res.info)
    A = _as_operator(G) if kind in ("kernel", "operator") else G
    if sp.issparse(A) or isinstance(A, np.ndarray):
        # svds forms the adjoint of a matrix as a copy, G.T.conj() (sparse; dense too in newer
        # scipy), not budgeted: the adjoint products read the transposed view instead
        A = _adjoint_view_operator(A)
    if c != 1.0:
        A = aslinearoperator(A) * c
    v0 = rng.uniform(-1, 1, size=min(shape)).astype(np.result_type(A.dtype, np.float32))
    try:
        U, s, Vt = svds(A, k=r, tol=tol, v0=v0, solver="arpack", random_state=rng)
    except ArpackError as exc:
        if not str(exc).startswith("ARPACK error -9:"):  # pragma: no cover - others as they are
            raise
        # "Starting vector is zero": the Gram operator maps the random v0 to 0, i.e. G is zero
        # (or v0 fell into its null space, which has probability 0). Decide by probing G.
        return _zero_svd(A, r, rng, exc)
    return _finish(U, s / c, Vt.T, r, "arpack")


def _adjoint_view_operator(A) -> LinearOperator:
    """A real dense or sparse matrix as a LinearOperator whose adjoint products read the
    transposed view Aᵀ (no copy; CSR ↔ CSC): scipy's ``svds`` forms the adjoint of a matrix
    as a copy (``A.T.conj()``), as large as A, which :func:`arpack_svd_bytes` does not
    count."""
    At = A.T
    return LinearOperator(A.shape, matvec=A.dot, rmatvec=At.dot, matmat=A.dot,
                          rmatmat=At.dot, dtype=A.dtype)


def unit_scale(top: float, always: bool = False) -> float:
    """A power of two c (exact) bringing ``top`` = max |G| into [1, 2) when it lies outside
    [2⁻¹²⁸, 2¹²⁸] (whatever it is with ``always``); 1.0 otherwise (and for 0 or a non-finite
    ``top``). The iterative solvers run on c·G and divide the singular values by c: they
    iterate on GᵀG, whose entries leave the normal range of float64 for extreme G (entries of
    1e-150 gave ARPACK's singular values 5–84 % off, 1e-200 the randomized ones 27 %,
    silently; 1e200 failed to converge). c is at most 2¹⁰²³, the largest power of two
    float64 holds: a subnormal ``top`` (below 2⁻¹⁰²²) is brought to [2⁻⁵¹, 2) instead of
    making c infinite (and c·G NaN)."""
    if top == 0.0 or not math.isfinite(top) or (not always and 2.0**-128 <= top <= 2.0**128):
        return 1.0
    return math.ldexp(1.0, min(1023, -(math.frexp(top)[1] - 1)))


def _formed_scale(G) -> float:
    """:func:`unit_scale` of a formed G (a numpy array, a scipy sparse matrix or an executor's
    :class:`DenseMatrix`), read from its largest and smallest entries (no temporary); 1.0 for
    lazy matrices (kernel values are read block by block, their scale is the kernel's)."""
    A = G.A if isinstance(G, DenseMatrix) else G
    if not (isinstance(A, np.ndarray) or sp.issparse(A) or isinstance(G, DenseMatrix)):
        return 1.0
    if not A.shape[0] * A.shape[1]:
        return 1.0
    return unit_scale(max(float(A.max()), -float(A.min())))


def _zero_svd(A, r: int, rng, exc: Exception) -> SVDResult:
    """The SVD of a G that ARPACK found to be zero, after checking that it is.

    Returns r zero singular values with coordinate singular vectors (a valid SVD of the zero
    matrix, as LAPACK returns it) when G and Gᵀ annihilate random Gaussian probes; otherwise
    raises an error naming G.
    """
    n, m = A.shape
    dtype = np.result_type(A.dtype, np.float32)
    op = aslinearoperator(A) if not isinstance(A, LinearOperator) else A
    probe_right = np.asarray(op.matmat(rng.standard_normal((m, 2)).astype(dtype)))
    probe_left = np.asarray(op.rmatmat(rng.standard_normal((n, 2)).astype(dtype)))
    if np.any(probe_right) or np.any(probe_left):  # G nonzero, or zero up to rounding
        raise ArithmeticError(
            "arpack_svd: ARPACK's random starting vector fell into the null space of G (shape "
            f"{(n, m)}), or G is zero up to rounding (e.g. a centred kernel matrix of constant "
            "data: its singular values are then noise); use solver='dense' (or call again "
            "with another random_state)") from exc
    eye = np.eye(max(n, m), r, dtype=dtype)
    return SVDResult(np.ascontiguousarray(eye[:n]), np.zeros(r, dtype=dtype),
                     np.ascontiguousarray(eye[:m]), "arpack", None)


def randomized_passes(mm, gram, normalize, orth, Omega, n_iter: int):
    """The passes over G of the randomized SVD (Halko et al. 2011, Alg. 4.4 on the row space).

    W = normalize(Gᵀ G Ω), then ``n_iter`` times W = normalize(Gᵀ G W), the last normalisation
    being ``orth`` (an orthonormal basis); finally Y = G W. Returns (W, Y), and G ≈ Y Wᵀ: the
    top SVD of G is read from the thin SVD of Y. ``gram(W)`` computes Gᵀ(G W), fused into one
    pass over the kernel blocks for a lazy kernel matrix. W spans (GᵀG)^(n_iter+1) Ω, the row
    space of the former Q Qᵀ G with Q = orth((GGᵀ)^n_iter G Ω) (two passes per iteration), now
    in n_iter + 2 passes instead of 2 n_iter + 2; in exact arithmetic G W Wᵀ is at least as
    accurate as Q Qᵀ G, but in floating point the fused product squares the spectrum before
    the normalisation, so directions below about √eps·σ_1 are lost; :func:`randomized_svd`
    then iterates on in the two-pass form (:func:`two_pass_refinement`).
    Shared by the in-memory solver (fused products, LU between iterations) and the Dask
    executor (``gram`` = two lazy kernel products, TSQR), so both run the same passes.
    """
    W = Omega
    for i in range(n_iter + 1):
        Z = gram(W)
        W = orth(Z) if i == n_iter else normalize(Z)
    return W, mm(W)


def squared_floor(dtype) -> float:
    """The ratio σ_i/σ₁ below which the fused passes of :func:`randomized_passes` lose σ_i:
    2·eps^(1/3) of the working precision (1.2e-5 in float64, 9.8e-3 in float32).

    Gᵀ(G W) squares the spectrum before it is normalised, so the direction of σ_i is known
    only to about eps·(σ₁/σ_i)², and the Rayleigh–Ritz value carries about the square of that;
    the two-pass form (QR between G and Gᵀ) errs by about eps·σ₁/σ_i. The first exceeds the
    second below eps^(1/3)·σ₁ (measured on spectra 1, g·0.9^j: g = 1e-6 gave 1e-7 relative
    error in float64, 1e-5 gave 1e-11; g = 1e-3 gave 5e-3 in float32, 1e-2 gave 2e-6).
    """
    return 2.0 * float(np.finfo(dtype).eps) ** (1.0 / 3.0)


def needs_two_pass(s, r: int, dtype, size: int = 1) -> bool:
    """Whether one of the first r decreasing singular values ``s`` (host values of G W) lies
    below :func:`squared_floor` of σ₁, so that the fused passes may have lost it, and above
    the rounding of G's products, 10·√size·eps·σ₁ (``size`` = max(n, m)): values at the
    rounding level are noise of G itself, which no further pass recovers (a lazy kernel of
    rank 3 asked for 5 components was refined for nothing, at 3.6× the passes)."""
    s = np.asarray(s, dtype=np.float64)
    top = float(s[0]) if s.size else 0.0
    if not (top > 0.0 and s.size >= r):
        return False
    head = s[:r]
    noise = 10.0 * np.sqrt(max(int(size), 1)) * float(np.finfo(dtype).eps) * top
    return bool(np.any((head < squared_floor(dtype) * top) & (head > noise)))


def two_pass_refinement(mm, rmm, orth, Y, n_iter: int):
    """``n_iter`` subspace iterations in the two-pass form of Halko et al. (2011, Alg. 4.4),
    started from the column space of Y = G W: Q = orth(Y), W = orth(Gᵀ Q), Y = G W.

    Each product is normalised before the next, so G and Gᵀ are never applied back to back
    and the directions of singular values down to about eps·σ₁ are kept, where the fused
    Gᵀ(G W) of :func:`randomized_passes` keeps only about √eps·σ₁ (:func:`squared_floor`).
    Two passes over G per iteration. Returns (W, Y), G ≈ Y Wᵀ. Shared by the in-memory,
    torch and Dask executors.
    """
    W = None
    for _ in range(n_iter):
        W = orth(rmm(orth(Y)))
        Y = mm(W)
    return W, Y


def _project_out(W, blocks):
    """W minus its components along the orthonormal ``blocks``, twice (block CGS2)."""
    for _ in range(2):
        for B in blocks:
            W = W - B @ (B.T @ W)
    return W


def krylov_passes(mm, gram, orth, Omega, n_blocks: int, concat=np.hstack):
    """The passes over G of the randomized block Krylov SVD (Musco & Musco 2015, Alg. 2).

    V = orth[Ω, GᵀG Ω, …, (GᵀG)^q Ω] with q = ``n_blocks``, built block by block: each new
    block Gᵀ(G V_j) (one fused pass) is orthogonalised against the earlier blocks twice, its
    QR taken, and the result orthogonalised and factorised once more, so that V stays
    orthonormal to rounding even when the Krylov space becomes invariant (G of rank < k(q + 1)).
    Finally Y = G V. Returns (V, Y), and G ≈ Y Vᵀ, the Rayleigh–Ritz projection on the Krylov
    space: its top SVD is read from the thin SVD of Y. In the column space this is the space
    span[G Ω, (GGᵀ) G Ω, …, (GGᵀ)^q G Ω] of Musco & Musco, reached in q + 1 passes instead of
    the power method's q + 2; polynomials of degree q in GᵀG instead of the single power
    (GᵀG)^q make it converge in about the square root of the power method's passes.
    ``concat`` joins the blocks column-wise (numpy, dask or torch).
    """
    blocks = [orth(Omega)]
    for _ in range(n_blocks):
        W = orth(_project_out(gram(blocks[-1]), blocks))
        blocks.append(orth(_project_out(W, blocks)))
    V = concat(blocks)
    return V, mm(V)


RANDOMIZED_METHODS = ("power", "block_krylov")
# top_svd / KernelSVD solver name → randomized_svd method
RANDOMIZED_SOLVERS = {"randomized": "power", "block_krylov": "block_krylov"}
RANDOMIZED_NAMES = {v: k for k, v in RANDOMIZED_SOLVERS.items()}


def check_randomized_options(n_oversamples, n_iter, method: str = "power"
                             ) -> tuple[int, int | str]:
    """Validate ``n_oversamples`` (int ≥ 0), ``n_iter`` (int ≥ 0 or 'auto') and ``method``."""
    n_oversamples = _check_int(n_oversamples, "n_oversamples", 0)
    if isinstance(n_iter, str):
        if n_iter != "auto":
            raise ValueError(f"n_iter must be 'auto' or an integer >= 0, got {n_iter!r}")
    else:
        n_iter = _check_int(n_iter, "n_iter", 0)
    if not isinstance(method, str) or method not in RANDOMIZED_METHODS:
        raise ValueError(f"method must be one of {RANDOMIZED_METHODS}, got {method!r}")
    return n_oversamples, n_iter


PRECISIONS = ("high", "low")


def lowered_matrix(G, precision):
    """The matrix whose products run the passes of :func:`randomized_svd`: G itself for
    ``precision='high'``; for ``'low'``, G's reduced-precision twin
    (:meth:`asymkern._backend.LazyMatrix.lowered`: float32 kernel blocks of float64 numpy data,
    the fused torch kernels on float16/bfloat16 operands), refused with ``ValueError`` where G
    has none."""
    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "high":
        return G
    lower = getattr(G, "lowered", None)
    low = lower() if callable(lower) else None
    if low is None:
        raise ValueError(
            "precision='low' runs the subspace passes in a lower precision than G's: it "
            "needs a lazy kernel matrix of a kernel bounded by 1 on float64 numpy data "
            "(float32 passes), or a torch kernel matrix (torch tensors or device=...) of the "
            "kernel 'rbf', 'gaussian', 'sne' or 'softmax' normalised over its own columns "
            f"(float16 passes); got {type(G).__name__}. Use precision='high'")
    return low


#: ‖G W − G_low W‖_F / ‖G W‖_F above which the reduced-precision passes are rerun in full
#: precision (float16 products err by about 1e-3, float32 by 1e-7)
LOW_TOLERANCE = 1e-2


#: the singular value s_i of G W found by reduced-precision passes is resolved when the
#: error of the low products in its direction is below s_i / LOW_RESOLUTION (measured: about
#: s_i / 4000 for float16 products wherever the passes find the subspace, s_i / 5 to s_i / 18
#: where they miss it and the singular values come out 80 % low)
LOW_RESOLUTION = 64.0
#: the accuracy precision='low' keeps, relative to σ₁ (docs/results/torch_low_precision.md)
LOW_TARGET = 1e-4


def _checked_low(run, G, low, ops, info: dict, r: int | None = None):
    """(W, Y) of ``run(P)``, the passes over P, with P = ``low`` (the reduced-precision twin
    of G) when given; Y = G W is always in full precision (the Rayleigh–Ritz step). The low
    products are then checked on the subspace they found: one more product G_low W, compared
    with Y. The passes run again on G, with a ``RuntimeWarning`` and ``info['precision']``
    'high', where they differ by more than :data:`LOW_TOLERANCE` (values lost to the low
    format's range: a kernel whose every value underflows float32, say), or where the error
    of the low products in the direction of one of the ``r`` leading singular values s_i of Y
    exceeds s_i / :data:`LOW_RESOLUTION` and could hide a value above :data:`LOW_TARGET`·s₁
    (a kernel matrix nearly constant to the low format's resolution, e.g. softmax with a
    tiny ``gamma``: the passes then miss the directions of σ₂, σ₃, … and the Rayleigh–Ritz
    values, never above the true ones, came out 80 % low)."""
    if low is None:
        return run(G)
    try:
        W, Y = run(low)
        D = Y - low.matmat(W)
        diff = ops.col_norms(D)
        size = ops.col_norms(Y)
        err = float(np.sqrt(np.sum(diff**2))) / max(float(np.sqrt(np.sum(size**2))), 1e-300)
        why = (f"differ from G's by {err:.1e} (relative, on the subspace they found), where "
               f"at most {LOW_TOLERANCE:g} is expected: values of G lie beyond the low "
               "format's range")
        if err <= LOW_TOLERANCE:
            _, s, Vt = ops.svd(Y)
            k = int(s.shape[0]) if r is None else min(int(r), int(s.shape[0]))
            s = np.asarray(ops.to_host(s), dtype=np.float64)[:k]
            e = np.asarray(ops.col_norms(D @ Vt[:k].T), dtype=np.float64)
            top = float(s[0]) if s.size else 0.0
            bad = (e * LOW_RESOLUTION > s) & (e * LOW_RESOLUTION > LOW_TARGET * top)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                err = float("inf")
                why = (f"cannot resolve singular value {i + 1} ({s[i]:.3g} of σ₁ = "
                       f"{top:.3g}): their error in its direction is {e[i]:.2g}, above "
                       f"1/{LOW_RESOLUTION:g} of it (G is nearly constant to the low "
                       "format's resolution)")
    except (OverflowError, FloatingPointError, ValueError) as exc:
        # a kernel value beyond the format, or an iterate lost to it (an all-zero G_low W
        # normalised to NaN, refused by the next product)
        err, why = float("inf"), f"failed ({exc})"
    if err <= LOW_TOLERANCE:
        return W, Y
    warnings.warn(
        f"precision='low': the reduced-precision products {why}. The passes were run again "
        "in G's own precision (use precision='high')", RuntimeWarning,
        stacklevel=user_stacklevel())
    info["precision"] = "high"
    return run(G)


def resolve_randomized_plan(method: str, n_iter, r: int, k: int, n: int, m: int
                            ) -> tuple[str, int]:
    """(method, iterations) that run: ``n_iter='auto'`` is 7 (power) or 3 (block Krylov)
    when r < 0.1·min(n, m), else 4 or 2. Block Krylov keeps k(q + 1) ≤ min(n, m) columns: an
    explicit q is lowered to fit; with ``'auto'``, or when not even two blocks fit, the power
    method runs instead (a Krylov space cut short is less accurate than the power method's
    default, as measured on Cora at r = 1000: docs/results/ksvd.md)."""
    small = r < 0.1 * min(n, m)
    if method == "block_krylov":
        q = (3 if small else 2) if n_iter == "auto" else int(n_iter)
        q_fit = min(n, m) // max(k, 1) - 1
        if q <= q_fit or (n_iter != "auto" and q_fit >= 1):
            return "block_krylov", min(q, q_fit)
        method, n_iter = "power", "auto"
    return method, (7 if small else 4) if n_iter == "auto" else int(n_iter)


def randomized_svd(
    G,
    r: int,
    n_oversamples: int = 10,
    n_iter: int | str = "auto",
    random_state=None,
    method: str = "power",
    precision: str = "high",
) -> SVDResult:
    """Randomized SVD (Halko, Martinsson & Tropp 2011, Alg. 4.4/5.1) using only G·X and Gᵀ·Y.

    Works on dense or sparse arrays, LinearOperators and lazy KernelMatrix objects alike.
    Each power iteration is one product Gᵀ(G W) (one pass over the blocks of a lazy kernel
    matrix), normalised by LU between iterations and by QR at the end
    (:func:`randomized_passes`), so accuracy is kept in float32 too. The product Gᵀ(G W)
    squares the spectrum before it is normalised, so singular values below about √eps·σ_1
    fall under its rounding (σ_2 = 1e-9·σ_1 came out 78 % low, 1e-7·σ_1 2.5e-5 off). When
    one of σ_1..σ_r comes out below 2·eps^(1/3)·σ_1 (1.2e-5 in float64, 9.8e-3 in float32:
    :func:`squared_floor`) and above the rounding of G's products (10·√max(n, m)·eps·σ_1),
    with fewer than min(n, m) columns in the sketch, ``n_iter`` more iterations run in the
    two-pass form, QR between G and Gᵀ (:func:`two_pass_refinement`, two passes each),
    which resolves values down to about eps·σ_1 (measured: 4e-9 relative error at
    σ_2 = 1e-9·σ_1 in float64, 6e-7 at 1e-3·σ_1 in float32; ``info['refined']`` counts
    them). Values below eps·σ_1 are rounding
    noise of G itself and no method recovers them. 'block_krylov' keeps its first,
    unsquared block and is not refined.
    ``method='block_krylov'`` keeps every iterate instead of the last one (randomized block
    Krylov, Musco & Musco 2015, :func:`krylov_passes`): for the same accuracy it needs about
    half the passes, which is what a lazy kernel matrix pays for (every pass re-evaluates the
    kernel), at the price of k(q + 1) columns held instead of k.
    The Gaussian test matrix is drawn block by block from a seed, so the Dask executor draws
    the same one whatever the chunking.

    Parameters
    ----------
    G : array-like, sparse matrix, LinearOperator or KernelMatrix of shape (n, m)
        Real and finite; only products with G and Gᵀ are used.
    r : int
        Number of components, 1 ≤ r ≤ min(n, m).
    n_oversamples : int, default 10
        Extra columns of the sketch, ≥ 0.
    n_iter : int or 'auto', default 'auto'
        Power iterations (passes Gᵀ(G W)), ≥ 0; ``'auto'``: 7 when r < 0.1·min(n, m), else 4.
        With ``method='block_krylov'``: the Krylov steps q ≥ 1 (``'auto'``: 3, else 2), lowered
        so that the k(q + 1) basis columns (k = r + n_oversamples) fit in min(n, m); when the
        ``'auto'`` count does not fit, the power method runs with its own ``'auto'``.
    random_state : None, int or RandomState, default None
        Seed of the test matrix.
    method : {'power', 'block_krylov'}, default 'power'
        Subspace (power) iteration on the last iterate, or the randomized block Krylov method
        (falls back to 'power' when its basis does not fit in min(n, m), see ``n_iter``; the
        method that ran is ``info['method']``). Block Krylov pays off when each pass is
        expensive (a lazy kernel) and r ≪ min(n, m).
    precision : {'high', 'low'}, default 'high'
        ``'low'``: the passes that find the subspace (all but the last) run in a lower
        precision than G's; the last product Y = G W, whose SVD gives the result (the
        Rayleigh–Ritz step on the subspace), runs in G's own precision, so the singular values
        carry the square of the subspace's error. For a lazy :class:`KernelMatrix` of float64
        data and a kernel bounded by 1 (RBF, Laplacian, Cauchy, SNE, T, softmax), the passes
        form float32 kernel blocks (about half the time); for a torch kernel matrix with
        fused products (RBF, SNE, softmax) they run PyTorch's fused attention kernels on
        float16 operands (bfloat16 beyond float16's range) with float32 accumulation.
        Anything else raises ``ValueError``. Between the low passes the power method keeps
        the iterate's own singular directions (QR, then the SVD of the k×k factor) instead
        of an LU basis, so that each column of a low product is rounded relative to its own
        singular value (with the LU basis a flat tail of values near 4e-3·σ₁ came out
        60–80 % low). One more low-precision product checks the
        subspace: where it differs from Y by more than 1e-2 (relative; G's values beyond the
        low format's range) the passes run again in full precision with a
        ``RuntimeWarning``. ``info['precision']`` records what ran. Measured in
        docs/results/torch_low_precision.md.

    Returns
    -------
    SVDResult
        U (n, r), s (r,) decreasing, V (m, r), with paired deterministic signs;
        ``info`` records ``n_oversamples``, ``method`` and ``n_iter`` (the ones that ran),
        ``precision`` and ``refined`` (two-pass iterations run after the fused ones, 0 or
        ``n_iter``).

    Raises
    ------
    ValueError
        If G is not real and finite, or an option is out of range.

    See Also
    --------
    top_svd : Chooses a solver.
    asymmetric_nystrom : Uses only sampled rows and columns of G.

    References
    ----------
    .. [1] N. Halko, P.-G. Martinsson and J. A. Tropp, "Finding structure with randomness:
       probabilistic algorithms for constructing approximate matrix decompositions",
       SIAM Review 53(2), 2011, Alg. 4.4 and 5.1.
    .. [2] C. Musco and C. Musco, "Randomized block Krylov methods for stronger and faster
       approximate singular value decomposition", NeurIPS 2015, Alg. 2.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import randomized_svd
    >>> rng = np.random.default_rng(0)
    >>> G = rng.standard_normal((40, 3)) @ rng.standard_normal((3, 30))   # rank 3
    >>> res = randomized_svd(G, 3, random_state=0)
    >>> bool(np.allclose(res.U * res.s @ res.V.T, G))
    True
    >>> H = rng.standard_normal((200, 150)) * 0.9 ** np.arange(150)   # decaying columns
    >>> kry = randomized_svd(H, 5, random_state=0, method="block_krylov")
    >>> kry.info["method"], kry.info["n_iter"]
    ('block_krylov', 3)
    >>> bool(np.allclose(kry.s, np.linalg.svd(H, compute_uv=False)[:5]))
    True
    """
    G, kind = operator_matrix(*check_matrix(G))
    shape = G.shape
    n, m = shape
    r = _rank(r, shape)
    n_oversamples, n_iter = check_randomized_options(n_oversamples, n_iter, method)
    rng = _check_random_state(random_state)
    k = min(r + n_oversamples, n, m)
    # precision='low' runs its passes on a float32 twin: the blocks of G are formed once
    G = _solver_blocks(G, RANDOMIZED_NAMES[method], r, n_oversamples=n_oversamples,
                       n_iter=n_iter, cache=precision != "low")
    check_svd_budget(RANDOMIZED_NAMES[method], n, m, r, _dtype_of(G),
                     n_oversamples=n_oversamples, n_iter=n_iter, limit=_limit_of(G),
                     block_bytes=pass_block_bytes(G))
    method, n_iter = resolve_randomized_plan(method, n_iter, r, k, n, m)
    low = lowered_matrix(G, precision)  # validated; G itself for 'high'
    low = None if low is G else low
    info = {"n_oversamples": n_oversamples, "method": method, "n_iter": n_iter,
            "precision": precision}
    name = "randomized" if method == "power" else method
    ops = G.ops if kind == "device" else NUMPY
    # Ω from a chunk-independent generator: the Dask executor draws the same Ω per row chunk
    Omega = normal_rows(seed_from(rng), 0, m, k, _dtype_of(G))
    c = _formed_scale(G)  # 1.0 unless a formed G has extreme entries
    if kind in ("dense", "sparse"):
        A = np.asarray(G) if kind == "dense" else G.tocsr()
        AT = A.T

        def gram_of(P):
            return lambda X: AT @ (A @ X)
    else:
        A = AT = None
        if kind == "device":  # another executor: products and the n×k algebra stay there
            Omega = ops.from_host(Omega, G.template())

        def gram_of(P):  # a lazy kernel's fused Gᵀ(G W): one pass over the blocks
            return getattr(P, "_gram_matmat", None) or (lambda X: P.rmatmat(P.matmat(X)))

    def matmat(X):
        return G.matmat(X) if A is None else A @ X

    def rmatmat(X):
        return G.rmatmat(X) if AT is None else AT @ X

    def mm(X):
        return matmat(X) if c == 1.0 else matmat(X) * c

    if c != 1.0:  # extreme entries: the passes on c·G, scaled between the halves of GᵀG

        def gram_of(P):
            return lambda X: rmatmat(matmat(X) * c) * c

    def ritz_basis(Z):
        # the iterate's own singular directions (QR, then the SVD of the k×k factor): each
        # column of the next low product G W is then about σ_i u_i, scaled on its own
        Q, R = ops.qr(Z)
        return Q @ ops.svd(R)[0]

    def run(P):
        if method == "block_krylov":
            return krylov_passes(mm, gram_of(P), ops.orth, Omega, n_iter, concat=ops.concat)
        return randomized_passes(mm, gram_of(P), ops.lu_basis if P is G else ritz_basis,
                                 ops.orth, Omega, n_iter)

    W, Y = _checked_low(run, G, low, ops, info, r)
    U, s, Vyt = ops.svd(Y)  # G W = U S Vyᵀ
    info["refined"] = 0
    if (method == "power" and n_iter and k < min(n, m)  # k = min(n, m): W spans everything
            and needs_two_pass(ops.to_host(s), r, _dtype_of(G), max(n, m))):
        # σ_r below the fused passes' floor: iterate on in the two-pass form (full precision)

        def rmm(X):
            return rmatmat(X) if c == 1.0 else rmatmat(X) * c

        W, Y = two_pass_refinement(mm, rmm, ops.orth, Y, n_iter)
        info["refined"] = n_iter
        U, s, Vyt = ops.svd(Y)
    return _finish(U[:, :r], s[:r] / c, W @ Vyt[:r].T, r, name, info, ops=ops)
