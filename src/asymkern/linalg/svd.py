"""Top-r SVD solvers for dense arrays, sparse matrices, LinearOperators and lazy KernelMatrix.

``top_svd(G, r, solver=...)`` returns an :class:`SVDResult` (U, s, V) with s in decreasing order
and deterministic signs: each pair (u_i, v_i) is flipped together so that the entry of u_i with
the largest magnitude is positive (G = U diag(s) Vᵀ is unchanged by a paired flip).

Solvers: ``'dense'`` (LAPACK gesdd), ``'arpack'`` (scipy ``svds``), ``'randomized'`` (Halko et
al. range finder with power iterations, using only products with G and Gᵀ, so a lazy kernel is
never formed), ``'block_krylov'`` (the randomized block Krylov method of Musco & Musco, same
products, about half the passes for the same accuracy), ``'nystrom'`` (asymmetric Nyström,
Tao et al. (2024) §3) and ``'auto'``.

Inputs
------
G may be a numpy array or any array-like (nested Python lists are accepted and converted, as
numpy does), a scipy sparse matrix, a scipy ``LinearOperator`` or a lazy
:class:`~asymkern.kernels.KernelMatrix`. Entries must be real and finite (NaN, infinity and
complex values are refused with a ``ValueError`` naming the argument); integer and boolean
arrays are converted to float64, float32 stays float32. Ranks, oversampling and iteration counts
must be integers (not bool) in range; unknown keyword options raise ``TypeError``. Inputs are
never modified.

Memory
------
The dense solver holds, besides G, a copy of G, the n×k and k×m factors (k = min(n, m)) and the
LAPACK ``gesdd`` workspace (≈ 3k² to 4k² entries): about 6 copies of G when it is square, 7
for a lazy kernel, which is formed first. The estimate (:func:`dense_svd_bytes`) is checked
against ``max_dense_memory`` (:func:`asymkern.config.check_memory`) before anything is
allocated. The iterative solvers are checked the same way: ARPACK's Lanczos basis (min(n, m) ×
ncv, ncv ≈ 2r) and the n×r, m×r factors (:func:`arpack_svd_bytes`), and the randomized range
finders' n×k and m×k blocks with k = r + n_oversamples (k(q + 1) columns for block Krylov) and
the SVD of the sketch (:func:`randomized_svd_bytes`), so a request for many components is
refused up front (:func:`check_svd_budget`). On a lazy kernel matrix the iterative solvers
also count the kernel blocks of their passes (:func:`pass_block_bytes`), and shrink those
blocks to what their own arrays leave of the budget (:func:`blocks_within`) rather than use
blocks of ``working_memory`` that the budget does not hold.
"""

from __future__ import annotations

import inspect

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from ._svd_core import (  # noqa: F401 (re-exported: asymkern.linalg.svd.* stays valid)
    PASS_BLOCK_ARRAYS,
    RANDOMIZED_SOLVERS,
    SOLVERS,
    SVDResult,
    _check_options,
    _check_random_state,
    _rank,
    arpack_svd,
    arpack_svd_bytes,
    blocks_within,
    budget_bytes,
    check_lazy_dtype,
    check_matrix,
    check_randomized_options,
    check_svd_budget,
    data_pass_bytes,
    dense_svd,
    dense_svd_bytes,
    flip_signs,
    lowered_matrix,
    pass_block_bytes,
    randomized_passes,
    randomized_svd,
    randomized_svd_bytes,
    svd_solver_bytes,
)
from .nystrom import asymmetric_nystrom

_SOLVER_OPTIONS = {
    "dense": (),
    "arpack": ("tol",),
    "randomized": ("n_oversamples", "n_iter", "precision"),
    "block_krylov": ("n_oversamples", "n_iter", "precision"),
    "auto": ("tol", "n_oversamples", "n_iter"),
}


def _nystrom_options() -> tuple:
    skip = ("G", "n_components", "random_state")
    return tuple(p for p in inspect.signature(asymmetric_nystrom).parameters if p not in skip)


def auto_solver(kind: str, n: int, m: int, r: int, dtype=np.float64,
                limit: float | None = None) -> tuple[str, bool]:
    """The solver ``solver='auto'`` runs for an n×m matrix of the given kind, r components.

    Dense LAPACK for small problems (min(n, m) ≤ 1000) or many components (r > min(n, m)/4),
    ARPACK otherwise. A lazy kernel (``kind='kernel'``) is formed only when the matrix and the
    solver's own memory fit ``limit`` MiB (default ``max_dense_memory``); otherwise the
    randomized solver runs on it lazily.

    Parameters
    ----------
    kind : {'dense', 'sparse', 'operator', 'kernel'}
        What G is (:func:`~asymkern.linalg.svd.check_matrix`).
    n, m : int
        The shape of G.
    r : int
        The number of components.
    dtype : dtype, default float64
        The dtype of G.
    limit : float, optional
        Budget in MiB (default: the ``max_dense_memory`` setting).

    Returns
    -------
    solver : str
        'dense', 'arpack' or 'randomized'.
    form : bool
        True when a lazy kernel is to be formed densely first (for ARPACK).
    """
    from ..config import get_config

    small = min(n, m) <= 1000 or r > 0.25 * min(n, m)
    if kind == "kernel":
        itemsize = np.dtype(np.float32 if np.dtype(dtype) == np.float32 else np.float64).itemsize
        extra = (dense_svd_bytes(n, m, dtype, input_copy=False) if small
                 else arpack_svd_bytes(n, m, r, dtype))
        budget = (get_config()["max_dense_memory"] if limit is None else limit) * 2**20
        if n * m * itemsize + extra <= budget:
            return ("dense", False) if small else ("arpack", True)
        return "randomized", False
    if small:
        return ("dense" if kind != "operator" else "arpack"), False
    return "arpack", False


def matrix_kind(G) -> str:
    """What G is for the 'auto' rule, on any executor, without validating it: 'kernel' (a
    lazy kernel matrix), 'sparse', 'dense' (a formed array) or 'operator'. A doubly centred
    matrix (:class:`~asymkern._backend.Centered`) is of the kind of the matrix it centres.

    Parameters
    ----------
    G : array, sparse matrix, LinearOperator or LazyMatrix (KernelMatrix, torch matrices)

    Returns
    -------
    str
    """
    from .._backend import Centered, DenseMatrix, LazyMatrix
    from ..kernels.matrix import KernelMatrix

    if isinstance(G, Centered):
        G = G.G
    if isinstance(G, KernelMatrix):
        return "kernel"
    if isinstance(G, DenseMatrix):
        return "dense"
    if isinstance(G, LazyMatrix):
        return "sparse" if getattr(G, "is_sparse", False) else "kernel"
    if sp.issparse(G):
        return "sparse"
    return "operator" if isinstance(G, LinearOperator) else "dense"


def _auto_kind(G, kind: str) -> str:
    """The kind the 'auto' rule sees: another executor's matrix counts as the numpy matrix of
    the same nature (formed array, sparse matrix or lazy kernel), so both pick one solver."""
    return matrix_kind(G) if kind == "device" else kind


def top_svd(G, n_components: int, solver: str = "auto", random_state=None, **options) -> SVDResult:
    """Top-``n_components`` SVD of G (array, sparse, LinearOperator or KernelMatrix).

    Parameters
    ----------
    G : array-like, sparse matrix, LinearOperator or KernelMatrix of shape (n, m)
        Real and finite (nested lists are accepted).
    n_components : int
        Number of components r, 1 ≤ r ≤ min(n, m).
    solver : {'auto', 'dense', 'arpack', 'randomized', 'block_krylov', 'nystrom'}, default 'auto'
        ``'block_krylov'`` is :func:`randomized_svd` with ``method='block_krylov'``.
        ``'auto'``: dense LAPACK for small problems (min(n, m) ≤ 1000) or many components,
        ARPACK for a large array, randomized SVD for a lazy kernel that does not fit the dense
        budget (a kernel whose dense solve fits ``max_dense_memory`` is formed once).
    random_state : None, int or RandomState, default None
        Seed of the iterative and randomized solvers.
    **options
        Options of the chosen solver: ``tol`` (arpack), ``n_oversamples``, ``n_iter`` and
        ``precision`` (randomized, block_krylov), the keyword options of
        :func:`~asymkern.linalg.asymmetric_nystrom` (nystrom); with ``'auto'``, ``tol``,
        ``n_oversamples`` and ``n_iter`` are accepted and used by whichever of these solvers
        is chosen. Any other option raises ``TypeError``.

    Returns
    -------
    SVDResult
        U (n, r), s (r,) decreasing, V (m, r) with paired deterministic signs.

    Raises
    ------
    ValueError
        If the solver is unknown, G is not real and finite, or ``n_components`` is out of
        range.
    TypeError
        If an option does not belong to the solver, or ``solver='nystrom'`` is given a
        LinearOperator (it needs entries of G).

    See Also
    --------
    dense_svd, arpack_svd, randomized_svd : The solvers.
    asymmetric_nystrom : The ``'nystrom'`` solver.
    asymkern.kernels.KernelMatrix : A lazy kernel matrix G.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, §2 (Prop. 2.4–2.5) and §3.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import KernelMatrix
    >>> from asymkern.linalg import top_svd
    >>> rng = np.random.default_rng(0)
    >>> G = KernelMatrix("sne", rng.standard_normal((50, 3)), rng.standard_normal((40, 3)))
    >>> res = top_svd(G, 5, solver="randomized", random_state=0)
    >>> res.U.shape, res.V.shape
    ((50, 5), (40, 5))
    >>> exact = top_svd(G, 5, solver="dense")
    >>> bool(np.allclose(res.s, exact.s, rtol=1e-3))
    True
    """
    from .._dispatch import dask_executor, is_dask_array
    from ..kernels.matrix import KernelMatrix

    if not isinstance(solver, str) or solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; expected one of {SOLVERS}")
    valid = _nystrom_options() if solver == "nystrom" else _SOLVER_OPTIONS[solver]
    _check_options(options, valid, f"top_svd(solver={solver!r})")
    if getattr(G, "is_dask", False) or is_dask_array(G):  # Dask executor (asymkern._dask)
        check_lazy_dtype(G)  # complex or non-numeric: refused from the dtype, before any pass
        lowered_matrix(G, options.get("precision", "high"))  # 'low': torch only, refused
        return dask_executor("top_svd")(G, n_components, solver, random_state, **options)
    G, kind = check_matrix(G)
    shape = G.shape
    r = _rank(n_components, shape, name="n_components")
    _check_random_state(random_state)  # validated up front, whatever the solver
    if solver == "auto":
        limit = G.max_dense_memory if kind == "kernel" else getattr(G, "max_dense_memory", None)
        solver, form = auto_solver(_auto_kind(G, kind), shape[0], shape[1], r, G.dtype, limit)
        if form and kind == "device":  # formed once on the executor's device for ARPACK
            from .._backend import DenseMatrix

            G = DenseMatrix(G.to_dense())
        elif form:  # a lazy kernel that fits the budget is formed once for ARPACK
            G, kind = G.to_array(), "dense"
    if solver == "dense":
        return dense_svd(G, r, _checked=True)
    if solver == "arpack":
        opts = {k: v for k, v in options.items() if k in _SOLVER_OPTIONS["arpack"]}
        return arpack_svd(G, r, random_state=random_state, **opts)
    if solver in RANDOMIZED_SOLVERS:
        opts = {k: v for k, v in options.items() if k in _SOLVER_OPTIONS[solver]}
        return randomized_svd(G, r, random_state=random_state,
                              method=RANDOMIZED_SOLVERS[solver], **opts)
    # nystrom
    if isinstance(G, LinearOperator) and not isinstance(G, KernelMatrix):
        raise TypeError("solver='nystrom' needs entries of G: pass an array or a KernelMatrix")
    res = asymmetric_nystrom(G, r, random_state=random_state, **options)
    return SVDResult(*res.factors(), "nystrom", {"nystrom": res})
