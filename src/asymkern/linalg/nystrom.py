"""Asymmetric Nyström method (Tao et al., 2024, §3, eq. 8–9) and the symmetric Nyström baseline.

Asymmetric Nyström
------------------
Sample row landmarks I (``|I|`` = s_x) and column landmarks J (``|J|`` = s_z) of the N×M matrix
G = [κ(x_i, z_j)]. With the SVD of the core W = G[I, J] = U_W Λ_W V_Wᵀ (top r), eq. 9 with the
scaling l_λ = 1/√(NM) (which rescales the singular values to the full problem) reads

    λ̃_s = √(NM / (s_x s_z)) · λ_s^W,
    ũ_s = c / λ_s^W · G[:, J] v_s^W,     ṽ_s = c / λ_s^W · G[I, :]ᵀ u_s^W,
    c = (s_x s_z / (N M))^{1/4}            (c = √(s/N) when N = M and s_x = s_z = s).

The same formulas evaluated at a new x or z are the out-of-sample extension of the adjoint
eigenfunctions (eq. 8): u_s(x) = c/λ_s^W Σ_{j∈J} κ(x, z_j) V^W_{js} and
v_s(z) = c/λ_s^W Σ_{i∈I} κ(x_i, z) U^W_{is} (:meth:`NystromResult.extend_rows`,
:meth:`NystromResult.extend_cols`); at a training point they equal the in-sample rows of Ũ, Ṽ.
With every row and column as landmark (I = [N], J = [M]) c = 1 and the result is the exact SVD.

Only G[:, J] and G[I, :] are touched, block by block: Ũ and Ṽ are accumulated over row blocks of
G[:, J] and column blocks of G[I, :], so the peak memory is O((N + M) r + s_x s_z) plus one block
of ``working_memory`` MiB; nothing N×s or s×M is held. A lazy :class:`KernelMatrix` is never
formed; row-normalised kernels (SNE, T) need their row normalisers, which take one streaming
pass over the kernel (no storage).

Landmarks are chosen independently for rows and columns: ``'uniform'`` (without replacement),
a fixed index array, ``'kmeans'`` (the data points nearest to k-means centres) or
``'leverage'`` (approximate ridge leverage scores of the rows of G, resp. of Gᵀ, computed from
a uniform sketch of the other side).

Growing to a tolerance
----------------------
With ``tol`` the landmark counts double (starting from the given counts or max(4r, 64)) until an
a-posteriori estimate of η (:mod:`asymkern.linalg.metrics`) that needs no exact SVD is ≤ tol:

* ``estimate='change'`` (default): η between the two latest solutions, the previous one measured
  against the new one. It estimates the error of the previous (smaller) solution, so it is
  conservative for the returned one whenever the error decreases with the landmark count.
* ``estimate='residual'``: residuals ρ_i² = ‖G v̂_i − λ̃_i û_i‖² + ‖Gᵀ û_i − λ̃_i v̂_i‖² (unit
  û, v̂) estimated on a uniform probe of p rows and p columns (scaled by N/p, M/p), turned into
  an angle estimate by Wedin's bound sin²θ_u + sin²θ_v ≲ ρ²/δ² (δ_i the gap of λ̃_i to the other
  λ̃ and to λ̃_{r+1}): η̂ = (1/r) Σ w_i min(2, ρ_i²/(2δ_i²)), using 1 − cos θ ≈ sin²θ/2.

Symmetric Nyström baseline
--------------------------
:func:`symmetric_nystrom` applies classic Nyström (Tao et al., 2024, App. A.2.1, eq. 13) to GGᵀ and
GᵀG separately, as the paper's comparison does: W = G[I, :] G[I, :]ᵀ with eigenpairs
(λ_W, u_W), ũ = √(s/N) G G[I, :]ᵀ u_W / λ_W, σ̃ = √(N λ_W / s), and the same for GᵀG with
column landmarks. It needs whole passes over G (products with G and Gᵀ), which is why it is slow.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .._backend import NUMPY, block_slices
from .._validation import check_bool, check_indices, check_n_components
from ..config import check_memory
from ..kernels.base import _maxabs, _needs_scaling, _pow2_exponent
from ..landmarks import (
    leverage_draw,
    nearest_points,
    sampled_kmeans,
    select_landmarks,
    unique_topped_up,
)
from ._svd_core import (
    PASS_BLOCK_ARRAYS,
    _check_int,
    _check_random_state,
    _check_real,
    arpack_svd,
    blocks_within,
    check_lazy_dtype,
    check_matrix,
    data_pass_bytes,
    dense_svd_bytes,
    pass_block_bytes,
    randomized_svd,
)
from .metrics import eta, eta_components

SAMPLINGS = ("uniform", "kmeans", "leverage")
ESTIMATES = ("change", "residual")


# ------------------------------------------------------------------------------------ result
@dataclass(frozen=True)
class NystromResult:
    """Nyström approximation G ≈ U diag(s) Vᵀ with its landmarks (Tao et al., 2024, eq. 8–9).

    Parameters
    ----------
    U : ndarray of shape (N, r) or None
        Eq. 9 left vectors (not orthonormal in general, unit norm on average); None where a
        model keeps only the landmarks and the r-sized parts (a fit on Dask, the AsK-LS
        Nyström model): :meth:`extend_rows` still evaluates them anywhere.
    s : ndarray of shape (r,)
        Singular values, decreasing, rescaled to the full problem.
    V : ndarray of shape (M, r) or None
        Eq. 9 right vectors (None as ``U``).
    row_landmarks : ndarray of shape (s_x,)
        Indices I of the sampled rows of G.
    col_landmarks : ndarray of shape (s_z,)
        Indices J of the sampled columns of G.
    core_U : ndarray of shape (s_x, r) or None, default None
        Left singular vectors of the core G[I, J].
    core_s : ndarray of shape (r,) or None, default None
        Singular values of the core.
    core_V : ndarray of shape (s_z, r) or None, default None
        Right singular vectors of the core.
    scale : float, default 1.0
        c of eq. 9.
    method : str, default 'asymmetric'
        ``'asymmetric'`` or ``'symmetric'`` (the baseline).
    info : dict
        Details (landmark growth history, estimates, change-of-basis matrices).

    See Also
    --------
    asymmetric_nystrom : Computes it.
    symmetric_nystrom : The symmetric baseline.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, §3, Eq. (8)–(9).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import asymmetric_nystrom
    >>> rng = np.random.default_rng(0)
    >>> G = rng.standard_normal((30, 2)) @ rng.standard_normal((2, 20))
    >>> res = asymmetric_nystrom(G, 2, 10, 10, random_state=0)
    >>> res.U.shape, res.V.shape, res.row_landmarks.shape, res.n_components
    ((30, 2), (20, 2), (10,), 2)
    """

    U: np.ndarray | None
    s: np.ndarray
    V: np.ndarray | None
    row_landmarks: np.ndarray
    col_landmarks: np.ndarray
    core_U: np.ndarray | None = None
    core_s: np.ndarray | None = None
    core_V: np.ndarray | None = None
    scale: float = 1.0
    method: str = "asymmetric"
    info: dict = field(default_factory=dict)

    @property
    def n_components(self) -> int:
        return int(self.s.shape[0])

    def factors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The factors (U, s, V) of G ≈ U diag(s) Vᵀ (Tao et al., 2024, eq. 9).

        Returns
        -------
        U, s, V : ndarrays of shape (N, r), (r,), (M, r)

        Raises
        ------
        ValueError
            If this result keeps no n × r factors (``U`` or ``V`` is None).
        """
        if self.U is None or self.V is None:
            raise ValueError("this Nyström result keeps only its landmarks and r-sized parts "
                             "(U and V are None): evaluate the factors with extend_rows and "
                             "extend_cols")
        return self.U, self.s, self.V

    def extend_rows(self, K_rows) -> np.ndarray:
        """Left eigenfunctions at new x (eq. 8): u_s(x) = c/λ_s^W Σ_{j∈J} κ(x, z_j) V^W_{js}.

        Parameters
        ----------
        K_rows : array-like or sparse matrix of shape (n_new, s_z)
            Kernel values against the column landmarks, K_rows[a, j] = κ(x_a, z_{J_j}): real
            and finite (integer or boolean values are taken as float64, float32 is kept).

        Returns
        -------
        ndarray of shape (n_new, r)
            The extension; at a training row i (K_rows = G[i, J]) it equals ``U[i]``.

        Raises
        ------
        ValueError
            If ``K_rows`` has the wrong shape, is complex or contains NaN or infinity, or the
            result has no core SVD (symmetric baseline).
        TypeError
            If ``K_rows`` is not numeric (integer and boolean values are taken as float64).
        """
        return self._extend(K_rows, self.core_V, "mix_u", "K_rows", "n_new", "column landmarks")

    def extend_cols(self, K_cols) -> np.ndarray:
        """Right eigenfunctions at new z (eq. 8): v_s(z) = c/λ_s^W Σ_{i∈I} κ(x_i, z) U^W_{is}.

        Parameters
        ----------
        K_cols : array-like or sparse matrix of shape (m_new, s_x)
            Kernel values against the row landmarks, K_cols[b, i] = κ(x_{I_i}, z_b): real and
            finite (integer or boolean values are taken as float64, float32 is kept).

        Returns
        -------
        ndarray of shape (m_new, r)
            The extension; at a training column j (K_cols = G[I, j]ᵀ) it equals ``V[j]``.

        Raises
        ------
        ValueError
            If ``K_cols`` has the wrong shape, is complex or contains NaN or infinity, or the
            result has no core SVD (symmetric baseline).
        TypeError
            If ``K_cols`` is not numeric (integer and boolean values are taken as float64).
        """
        return self._extend(K_cols, self.core_U, "mix_v", "K_cols", "m_new", "row landmarks")

    def _extend(self, K, core, mix_key: str, name: str, n_name: str, what: str) -> np.ndarray:
        """Eq. 8: kernel values against the landmarks of the other side, times core/σ."""
        if core is None:
            raise ValueError(
                f"{name} extension needs the core SVD (asymmetric Nyström results only)"
            )
        from .._dispatch import host_copy

        # 2-D, real, finite; integer and boolean kernel values → float64 (a float64 extension
        # map cast to an integer dtype would truncate it), float32 kept; sparse accepted
        K, kind = check_matrix(host_copy(K), name, allow_operator=False)
        if kind not in ("dense", "sparse"):
            raise TypeError(f"{name} must be an array or a sparse matrix of kernel values "
                            f"against the {what}, got {type(K).__name__}")
        if K.shape[1] != core.shape[0]:
            raise ValueError(
                f"{name} must have shape ({n_name}, {core.shape[0]}) (kernel values against the "
                f"{what}), got {K.shape}"
            )
        M = self.extension_map(mix_key == "mix_u")
        return np.asarray(K @ M.astype(K.dtype, copy=False))

    def extension_map(self, left: bool = True) -> np.ndarray:
        """The (s, r) matrix M of eq. 8 with u(x) = K_rows @ M (``left``) or v(z) = K_cols @ M:
        the core singular vectors over the core singular values, times the scale c (and the
        mixing of ``normalize`` / ``orthogonalize``).

        Parameters
        ----------
        left : bool, default True
            The left extension (against the column landmarks) or the right one.

        Returns
        -------
        ndarray of shape (s, r)
            float64, on the host (an executor moves it to its device).
        """
        core = self.core_V if left else self.core_U
        if core is None:
            raise ValueError("the extension needs the core SVD (asymmetric Nyström results "
                             "only)")
        M = (core / self.core_s) * self.scale
        mix = self.info.get("mix_u" if left else "mix_v")
        return M @ mix if mix is not None else M


# ------------------------------------------------------------------------------ matrix access
class BlockAccess(Protocol):
    """What the landmark selection needs of a matrix: its shape, blocks and point sets.

    Satisfied by :class:`_Access` (in memory), the Dask access of :mod:`asymkern._dask.nystrom`
    and another executor's :class:`~asymkern._backend.LazyMatrix` (torch).
    """

    shape: tuple

    def block(self, rows, cols) -> np.ndarray: ...

    def points(self, side: str): ...


class _Access:
    """Blocks of a dense array, sparse matrix or lazy KernelMatrix, within a memory budget."""

    def __init__(self, G, working_memory=None):
        from ..config import get_config
        from ..kernels.matrix import KernelMatrix

        if isinstance(G, LinearOperator) and not isinstance(G, KernelMatrix):
            raise TypeError(
                "the Nyström method needs entries of G: pass an array, a sparse matrix or a "
                "KernelMatrix, not a LinearOperator"
            )
        G, kind = check_matrix(G, "G", allow_operator=False)
        self.G = G
        self.kind = kind
        self.ops = getattr(G, "ops", NUMPY)
        if kind == "device":  # another executor's LazyMatrix (torch): blocks on its device
            self.dtype = np.dtype(G.dtype)
            wm = G.working_memory if working_memory is None else working_memory
        elif kind == "kernel":
            self.dtype = np.dtype(G.dtype)
            wm = G.working_memory if working_memory is None else working_memory
        elif kind == "sparse":
            self.G = sp.csr_matrix(G)
            self.dtype = np.dtype(np.float32 if G.dtype == np.float32 else np.float64)
            wm = get_config()["working_memory"] if working_memory is None else working_memory
        else:
            self.dtype = G.dtype
            wm = get_config()["working_memory"] if working_memory is None else working_memory
        if isinstance(wm, bool) or not isinstance(wm, numbers.Real):
            raise TypeError(f"working_memory must be a positive number of MiB, got {wm!r}")
        if not (np.isfinite(wm) and wm > 0):
            raise ValueError(f"working_memory must be a positive finite number of MiB, got {wm!r}")
        self.budget = float(wm) * 2**20
        self.shape = tuple(int(k) for k in G.shape)
        if min(self.shape) == 0:
            raise ValueError(f"G is empty (shape {self.shape}); expected rows and columns")
        self._prepared = False

    def prepare(self):
        """One-off statistics a lazy kernel needs before arbitrary blocks (normalisers, means)."""
        if self.kind == "device" and not self._prepared:
            self.G.prepare()
        if self.kind == "kernel" and not self._prepared:
            if self.G.kernel.row_normalized:
                self.G.row_lse()  # fills the cache (the normalisers may leave the float range)
            if self.G.center:
                self.G.means()
        self._prepared = True

    def step(self, other: int) -> int:
        """Block length along one axis when the other axis has ``other`` entries."""
        per = max(1, other) * self.dtype.itemsize * 3
        return int(max(1, self.budget // per))

    def _step_bytes(self, step: int, other: int) -> int:
        """Bytes a pass of blocks of ``step`` × ``other`` entries holds: the block and its
        temporaries (:data:`PASS_BLOCK_ARRAYS` float64 arrays) and, for a lazy KernelMatrix,
        the copies of the data forming it makes (:func:`data_pass_bytes`)."""
        data = max(data_pass_bytes(self.G, step, other), data_pass_bytes(self.G, other, step))
        return PASS_BLOCK_ARRAYS * 8 * step * other + data

    def _device_matrix(self):
        """Another executor's matrix whose blocks are counted (the torch kernel matrix, also
        under a double centring: ``pass_bytes`` and ``within``), else None."""
        from .._backend import Centered

        G = self.G.G if isinstance(self.G, Centered) else self.G
        return G if hasattr(G, "pass_bytes") and hasattr(G, "within") else None

    def block_bytes(self, others) -> int:
        """Bytes the blocks of a pass hold when the other axis has one of ``others`` entries
        (the landmark counts): those of :meth:`step` (:meth:`_step_bytes`) or, for a lazy
        KernelMatrix, those of its own passes (normalisers, means: :func:`pass_block_bytes`).
        On another executor: those of its kernel matrix's passes, counted as numpy counts them
        (``pass_bytes`` of the torch kernel matrix, with the landmark blocks this object
        forms for the leverage scores), 0 for a formed matrix."""
        own = max(self._step_bytes(self.step(max(1, int(k))), max(1, int(k))) for k in others)
        if self.kind == "device":
            D = self._device_matrix()
            return 0 if D is None else int(max(own, D.pass_bytes(others)))
        return int(max(own, pass_block_bytes(self.G)))

    def fit_blocks(self, left: float, others) -> int:
        """Shrink the blocks of the passes (this object's and a lazy KernelMatrix's own,
        :func:`blocks_within`, or the torch kernel matrix's, its ``within``) so that they
        hold at most ``left`` bytes when the other axis has one of ``others`` entries, down
        to one row or column; returns :meth:`block_bytes` after. Nothing changes for another
        executor's formed matrix. The caller's G is not modified (a kernel matrix is replaced
        by a shallow copy)."""
        if self.kind == "device":
            D = self._device_matrix()
            if D is None:
                return 0
            H = D.within(left, others)
            if H is not D:
                from .._backend import Centered

                C = self.G
                self.G = Centered(H, C.r, C.c, C.g) if isinstance(C, Centered) else H
        for other in (max(1, int(k)) for k in others):
            lo, hi = 1, self.step(other)  # the longest blocks whose pass fits (at least one)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if self._step_bytes(mid, other) <= left else (lo, mid - 1)
            self.budget = min(self.budget, float(lo * other * self.dtype.itemsize * 3))
        if self.kind == "kernel":
            self.G = blocks_within(self.G, left)
        return self.block_bytes(others)

    def block(self, rows, cols) -> np.ndarray:
        """G[rows, cols] as a host numpy array (the landmark and probe blocks)."""
        if self.kind == "device":
            self.prepare()
            return self.ops.to_host(self.G.block(rows, cols))
        if self.kind == "kernel":
            self.prepare()
            return self.G.block(rows, cols)
        if self.kind == "dense":
            if isinstance(rows, slice) or isinstance(cols, slice):
                return np.asarray(self.G[rows, cols] if not isinstance(rows, slice)
                                  else self.G[rows][:, cols])
            return self.G[np.ix_(rows, cols)]
        # sparse (CSR): a run of rows is read through a view of its entries, so a block of
        # ``step`` rows never copies those rows whole (all M columns) before selecting cols
        B = _csr_rows(self.G, rows) if isinstance(rows, slice) else self.G[rows]
        return B[:, cols].toarray()

    def left(self, J: np.ndarray, B: np.ndarray, out_dtype) -> np.ndarray:
        """G[:, J] @ B accumulated over row blocks: (N, k) (on the executor's device)."""
        if self.kind == "device":
            self.prepare()
            return self.G.left(J, B)
        n = self.shape[0]
        out = np.empty((n, B.shape[1]), dtype=out_dtype)
        Bc = B.astype(self.dtype, copy=False)
        for sl in block_slices(n, self.step(len(J))):
            out[sl] = self.block(sl, J) @ Bc
        return out

    def right(self, I: np.ndarray, A: np.ndarray, out_dtype) -> np.ndarray:
        """G[I, :]ᵀ @ A accumulated over column blocks: (M, k) (on the executor's device)."""
        if self.kind == "device":
            self.prepare()
            return self.G.right(I, A)
        m = self.shape[1]
        out = np.empty((m, A.shape[1]), dtype=out_dtype)
        Ac = A.astype(self.dtype, copy=False)
        step = self.step(len(I))
        if self.kind == "sparse":
            GI = self.G[I]
            for sl in block_slices(m, step):
                out[sl] = GI[:, sl].toarray().T @ Ac
            return out
        for sl in block_slices(m, step):
            out[sl] = self.block(I, sl).T @ Ac
        return out

    def row_probe(self, P: np.ndarray, V: np.ndarray) -> np.ndarray:
        """G[P, :] @ V over column blocks: (``|P|``, k)."""
        if self.kind == "device":
            self.prepare()
            return self.G.row_probe(P, V)
        m = self.shape[1]
        out = np.zeros((len(P), V.shape[1]))
        for sl in block_slices(m, self.step(len(P))):
            out += self.block(P, sl) @ V[sl]
        return out

    def col_probe(self, Q: np.ndarray, U: np.ndarray) -> np.ndarray:
        """G[:, Q]ᵀ @ U over row blocks: (``|Q|``, k)."""
        if self.kind == "device":
            self.prepare()
            return self.G.col_probe(Q, U)
        n = self.shape[0]
        out = np.zeros((len(Q), U.shape[1]))
        for sl in block_slices(n, self.step(len(Q))):
            out += self.block(sl, Q).T @ U[sl]
        return out

    def points(self, side: str):
        """Points for k-means: the data sets of a KernelMatrix, else rows of G (or of Gᵀ)."""
        if self.kind == "device":
            pts = self.G.points(side)
            if pts is None:  # a formed matrix: its rows (or columns)
                D = self.G.to_dense()
                pts = D if side == "row" else D.T
            return self.ops.to_host(pts)
        if self.kind == "kernel":
            return self.G.X if side == "row" else self.G.Z
        if self.kind == "dense":
            return self.G if side == "row" else self.G.T
        return self.G if side == "row" else sp.csr_matrix(self.G.T)


def _csr_rows(G: sp.csr_matrix, rows: slice) -> sp.csr_matrix:
    """The rows ``rows`` of the CSR matrix G as a CSR matrix sharing G's entries and column
    indices (no copy of them; only the row pointers are new). A slice with a step other than
    1 is taken by scipy's indexing (a copy).

    Parameters
    ----------
    G : scipy.sparse.csr_matrix of shape (N, M)
        The matrix.
    rows : slice
        The rows.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (len(range(N)[rows]), M)
    """
    start, stop, step = rows.indices(G.shape[0])
    if step != 1:
        return G[rows]
    stop = max(start, stop)
    p0, p1 = int(G.indptr[start]), int(G.indptr[stop])
    return sp.csr_matrix((G.data[p0:p1], G.indices[p0:p1], G.indptr[start:stop + 1] - p0),
                         shape=(stop - start, G.shape[1]), copy=False)


def _dask_access(G, working_memory):
    """The Dask executor's access object (asymkern._dask) for dask inputs, else None."""
    from .._dispatch import dask_executor, is_dask_array

    if getattr(G, "is_dask", False) or is_dask_array(G):
        check_lazy_dtype(G)  # complex or non-numeric: refused before the blocks are read
        return dask_executor("nystrom_access")(G, working_memory)
    return None


# --------------------------------------------------------------------------------- landmarks
def _kmeans_landmarks(points, s: int, rs) -> np.ndarray:
    """Indices of the data points nearest to s k-means centres fitted on a sample (unique;
    topped up uniformly). Both steps are scale-free (:func:`asymkern.landmarks.nearest_points`
    rescales by a power of two data whose squared distances would over- or underflow)."""
    n = points.shape[0]
    if s >= n:
        return np.arange(n)
    centers = sampled_kmeans(n, s, rs, lambda sub: points[sub])
    return unique_topped_up(nearest_points(centers, points), n, s, rs)


def _leverage_landmarks(acc: BlockAccess, side: str, s: int, r: int, rs) -> np.ndarray:
    """Sample s rows (side='row') or columns of G by approximate ridge leverage scores.

    Sketch C = G[:, Q] with ``|Q|`` = p uniform columns (rows for side='col'); scores
    ℓ_i = c_iᵀ (CᵀC + λI)⁻¹ c_i with λ the (r+1)-th eigenvalue of CᵀC (the ridge that keeps the
    top-r subspace), computed in two block passes; then s indices without replacement with
    probabilities ∝ ℓ.

    The scores do not change when G is multiplied by a constant (λ scales with CᵀC), so C is
    scaled by an exact power of two 2^-e whenever its entries are so large or small that CᵀC
    would over- or underflow (:func:`_gram_exponent`): the same landmarks at every scale of G,
    and bitwise the old computation when G is of ordinary size (e = 0).
    """
    n, m = acc.shape if side == "row" else acc.shape[::-1]
    if s >= n:
        return np.arange(n)
    p = _sketch_size(s, r, m)
    Q = np.sort(rs.choice(m, p, replace=False))

    def blocks():
        for sl in block_slices(n, acc.step(p)):
            B = acc.block(sl, Q) if side == "row" else acc.block(Q, sl).T
            yield sl, np.asarray(B, dtype=np.float64)

    CtC = np.zeros((p, p))
    big, e = 0.0, 0  # CtC holds (C 2^-e)ᵀ(C 2^-e), e = _gram_exponent(largest |entry| so far)
    for _, B in blocks():
        big = max(big, _maxabs(B))
        e_new = _gram_exponent(big)
        if e_new != e:  # re-express the sum so far in the new units (exact powers of two)
            CtC = np.ldexp(CtC, 2 * (e - e_new))
            e = e_new
        Bs = np.ldexp(B, -e) if e else B
        CtC += Bs.T @ Bs
    L = _leverage_ridge(CtC, r)
    scores = np.empty(n)
    for sl, B in blocks():
        scores[sl] = _leverage_block_scores(np.ldexp(B, -e) if e else B, L)
    return np.sort(leverage_draw(scores, s, rs))


def _gram_exponent(big: float) -> int:
    """The exponent e of the power of two 2^-e that brings entries of magnitude at most
    ``big`` into the range where sums of their squares neither overflow nor underflow; 0 when
    they already are (or ``big`` is 0 or not finite).

    Nondecreasing in ``big`` > 0, so a sum of squares rescaled at each increase of the running
    maximum stays exact up to the underflow of negligible terms.
    """
    if not (np.isfinite(big) and _needs_scaling(big, np.float64)):
        return 0
    return _pow2_exponent(big, np.float64)


def _leverage_ridge(CtC: np.ndarray, r: int):
    """Cholesky factor of CᵀC + λI, λ the (r+1)-th eigenvalue of CᵀC (shared by executors)."""
    p = CtC.shape[0]
    ev = np.linalg.eigvalsh(CtC)[::-1]
    lam = ev[min(r, p - 1)] if ev.size else 0.0
    lam = max(lam, 1e-12 * max(ev[0], 1e-300))
    return sla.cho_factor(CtC + lam * np.eye(p))


def _leverage_block_scores(B: np.ndarray, L) -> np.ndarray:
    """Ridge leverage scores c_iᵀ (CᵀC + λI)⁻¹ c_i of the rows of one block of C."""
    B = np.asarray(B, dtype=np.float64)
    return np.einsum("ij,ji->i", B, sla.cho_solve(L, B.T))


def _sketch_size(s: int, r: int, m: int) -> int:
    """Columns p of the leverage-score sketch C = G[:, Q] (:func:`_leverage_landmarks`)."""
    return min(m, max(2 * s, 4 * r, 64))


def _leverage_budget(acc, r: int, row: tuple, col: tuple) -> None:
    """Before the leverage-score passes (and the normaliser pass that precedes them) of an
    in-memory access: shrink their blocks to what the sketch's arrays leave of
    ``max_dense_memory`` and refuse, naming the budget, when even one-row blocks do not fit.

    ``row``, ``col``: (method, count) of each side. Held besides the blocks of a side
    (:meth:`_Access.fit_blocks`: the p-column blocks of C, the normalisers' own passes): CᵀC,
    the ridge's eigen- and Cholesky factors (three p×p) and the n scores. Dask and torch
    accesses size their own blocks (nothing changes).
    """
    from ..config import get_config

    sides = [(n, _sketch_size(s, r, m)) for (method, s), n, m in
             ((row, *acc.shape), (col, *acc.shape[::-1]))
             if isinstance(method, str) and method == "leverage" and s < n]
    if not sides or getattr(acc, "is_dask", False):
        return
    held = max(8 * (3 * p * p + n) for n, p in sides)
    others = tuple(p for _, p in sides)
    left = float(get_config()["max_dense_memory"]) * 2**20 - held
    blocks = acc.block_bytes(others)
    if blocks > left:  # (default settings: the blocks fit, nothing changes)
        blocks = acc.fit_blocks(left, others)
    check_memory(held + blocks,
                 f"leverage-score landmark sampling of the {acc.shape[0]}×{acc.shape[1]} "
                 f"matrix G (a {max(others)}-column sketch)",
                 "sampling='uniform' or 'kmeans', or fewer landmarks",
                 detail="the sketch's Gram matrix, its factors and the scores beside the "
                        "kernel blocks of the passes over G")


def select_indices(acc: BlockAccess, side: str, s: int, method, r: int, rs, points=None):
    """Landmark indices of one side ('row' or 'col') of G: method name or fixed index array.

    An internal helper of :func:`asymmetric_nystrom` and :func:`symmetric_nystrom`.

    Parameters
    ----------
    acc : _Access
        Block access to G (the wrapper built by :func:`asymmetric_nystrom`).
    side : {'row', 'col'}
        Which side of G.
    s : int
        Number of landmarks.
    method : {'uniform', 'kmeans', 'leverage'} or array-like of int
        The sampling, or fixed indices (validated and returned).
    r : int
        Target rank (used by the leverage scores).
    rs : numpy.random.RandomState
        Random state.
    points : ndarray of shape (size, d), optional
        Points for k-means (default: the data of a KernelMatrix, else the rows of G or Gᵀ).

    Returns
    -------
    ndarray of int
        The landmark indices (sorted for the sampled methods).

    Raises
    ------
    ValueError
        If the method is unknown, fixed indices are invalid, or the points do not match.

    See Also
    --------
    asymkern.landmarks.select_landmarks : Landmarks of a set of points.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg.nystrom import _Access, select_indices
    >>> acc = _Access(np.ones((8, 5)))
    >>> rs = np.random.RandomState(0)
    >>> select_indices(acc, "row", 3, "uniform", 1, rs).shape
    (3,)
    >>> select_indices(acc, "col", 2, [4, 1], 1, rs).tolist()
    [4, 1]
    """
    n = acc.shape[0] if side == "row" else acc.shape[1]
    if not isinstance(method, str):  # the user's row_sampling / col_sampling index array
        return check_indices(method, n, f"{side}_sampling")
    if getattr(acc, "is_dask", False) and method in ("kmeans", "leverage"):
        dask_access: Any = acc  # the Dask access selects landmarks chunk by chunk
        return dask_access.select(side, s, method, r, rs, points)

    if method == "uniform":
        return np.sort(select_landmarks(None, s, "uniform", random_state=rs, n_samples=n))
    if method == "kmeans":
        pts = acc.points(side) if points is None else points
        if pts.shape[0] != n:
            raise ValueError(f"{side} points have {pts.shape[0]} rows; expected {n}")
        if n > 20000:  # k-means on a subsample, nearest points among all (memory-bounded)
            return _kmeans_landmarks(pts, s, rs)
        return np.sort(select_landmarks(pts, s, "kmeans", random_state=rs))
    if method == "leverage":
        # ridge leverage scores of the rows of the asymmetric G itself (not of a symmetric
        # kernel on one set, which is what asymkern.landmarks' 'leverage' computes)
        return _leverage_landmarks(acc, side, s, r, rs)
    raise ValueError(f"unknown {side} sampling {method!r}; expected one of {SAMPLINGS} or indices")


# -------------------------------------------------------------------------------- core solve
def _core_svd(W: np.ndarray, k: int, core_solver: str, rs):
    """Top-k SVD of the small core (float64); k may be one more than r (for the gap)."""
    k = min(k, min(W.shape))
    if core_solver == "auto":
        core_solver = "dense" if min(W.shape) <= max(600, 10 * k) else "randomized"
    if core_solver == "dense":
        U, s, Vt = sla.svd(W, full_matrices=False, lapack_driver="gesdd", check_finite=False)
        # copies (same layout): views would keep the whole s_x×s, s×s_z factors alive
        return U[:, :k].copy(order="K"), s[:k].copy(), Vt[:k].T.copy(order="K")
    if core_solver == "randomized":
        res = randomized_svd(W, k, n_oversamples=10, n_iter=6, random_state=rs)
    elif core_solver == "arpack":
        res = arpack_svd(W, k, random_state=rs)
    else:
        raise ValueError(f"core_solver must be 'auto', 'dense', 'randomized' or 'arpack', got "
                         f"{core_solver!r}")
    return res.U, res.s, res.V


def _core_solve(acc, r: int, I: np.ndarray, J: np.ndarray, core_solver: str, rcond, rs,
                warn: bool = True, copies: int = 2):
    """SVD of the core W = G[I, J] (eq. 9), truncated at the rcond cut-off.

    Returns (U_W, σ_W, V_W, n_keep, σ_W of the next component, c); shared by the in-memory and
    the Dask executors. The memory check counts the core, its SVD, ``copies`` copies of U
    (N×r) and V (M×r) held at once (3 for the orthogonalisation: U, Q_u and Q_u A) and the
    blocks of the passes over G, which an in-memory access first shrinks to what the rest
    leaves of the budget (:meth:`_Access.fit_blocks`).
    """
    from ..config import get_config

    N, M = acc.shape
    sx, sz = len(I), len(J)
    if r > min(sx, sz):
        raise ValueError(
            f"n_components={r} is larger than the number of landmarks (rows {sx}, columns {sz}):"
            f" the core G[I, J] has at most {min(sx, sz)} singular values; use more landmarks"
        )
    # U, V are held on this machine in memory (or on the torch device: counted the same);
    # on Dask they live in the workers (persisted)
    on_client = not getattr(acc, "is_dask", False)
    uv = acc.dtype.itemsize * (N + M) * r * copies if on_client else 0
    core = 8 * sx * sz + dense_svd_bytes(sx, sz)
    blocks = 0
    if not on_client:  # Dask: its blocks are not here
        need = core + uv
    else:  # the core and its SVD come first, then the passes that form U, V beside them
        uv += 8 * (sx + sz) * (r + 1)  # the core's singular vectors, kept for eq. 9
        blocks = acc.fit_blocks(float(get_config()["max_dense_memory"]) * 2**20 - uv,
                                (sx, sz))
        need = max(core, uv + blocks)
    check_memory(need,
                 f"asymmetric Nyström with {sx}×{sz} landmarks",
                 "fewer landmarks (n_row_landmarks, n_col_landmarks, max_landmarks)",
                 detail=f"the {sx}×{sz} core in float64 with its SVD"
                        + (f", {copies} copies of U and V" if on_client
                           else " (U, V stay in the Dask cluster)")
                        + (", the kernel blocks of the passes over G" if blocks else ""))
    W = np.asarray(acc.block(I, J), dtype=np.float64)
    Uw, sw, Vw = _core_svd(W, r + 1, core_solver, rs)
    eps = np.finfo(acc.dtype).eps
    tol = (max(sx, sz) * eps if rcond is None else float(rcond)) * (sw[0] if sw.size else 0.0)
    keep = sw[:r] > max(tol, 0.0)
    n_keep = int(keep.sum())
    if n_keep == 0:
        raise ValueError(
            "the core G[I, J] of the landmarks is zero (no singular value above the cut-off); "
            "choose other landmarks"
        )
    if n_keep < r and warn:
        warnings.warn(
            f"the core G[I, J] ({sx}x{sz}) has only {n_keep} singular values above "
            f"{tol:.3g} (rank-deficient sample); returning {n_keep} of {r} components",
            RuntimeWarning,
            stacklevel=4,
        )
    s_next = float(sw[n_keep]) if sw.size > n_keep else 0.0
    Uw, swk, Vw = Uw[:, :n_keep], sw[:n_keep], Vw[:, :n_keep]
    c = (sx * sz / (N * M)) ** 0.25
    return Uw, swk, Vw, n_keep, s_next, c


def orthogonal_factors(U, V, s, qr, ops=NUMPY):
    """Exact SVD of the Nyström approximation Ĝ = Ũ Λ̃ Ṽᵀ = G[:, J] W_r⁺ G[I, :] (Tao et al., 2024,
    eq. 9).

    With Ũ = Q_u R_u and Ṽ = Q_v R_v (``qr``: numpy's for arrays, TSQR for dask arrays) and
    R_u Λ̃ R_vᵀ = A Σ Bᵀ (r×r), Ĝ = (Q_u A) Σ (Q_v B)ᵀ. Returns (Q_u A, Σ, Q_v B, R_u⁻¹A, R_v⁻¹B);
    the last two map the eq. 8 extension ũ(x) of a new point to the new u(x).
    """
    Qu, Ru = qr(U)
    Qv, Rv = qr(V)
    Ru = np.asarray(ops.to_host(Ru), dtype=np.float64)
    Rv = np.asarray(ops.to_host(Rv), dtype=np.float64)
    A, s, Bt = np.linalg.svd((Ru * s) @ Rv.T)
    U = Qu @ ops.from_host(A, Qu)
    V = Qv @ ops.from_host(Bt.T, Qv)
    return U, s, V, sla.solve_triangular(Ru, A), sla.solve_triangular(Rv, Bt.T)


def nystrom_result(U, s, V, I, J, Uw, swk, Vw, c: float, signs, mix_u, mix_v, *, r: int,
                   n_keep: int, s_next: float, shape, out_dtype, ops=None,
                   **info) -> NystromResult:
    """Apply the paired signs to (Ũ, Ṽ) and their extension maps and build the result.

    Shared by both executors: ``signs`` make the largest-magnitude entry of each ũ_i positive
    (computed on the client in memory, by a per-chunk pass on Dask). In-memory U and V (numpy
    arrays of ``out_dtype``, owned by the caller's computation) are flipped in place.
    """
    N, M = shape
    sx, sz = len(I), len(J)
    if ops is not None and ops.name != "numpy":  # another executor (torch): U, V stay there
        U = ops.contiguous(ops.scale_cols(U, signs, inplace=True))
        V = ops.contiguous(ops.scale_cols(V, signs, inplace=True))
    elif isinstance(U, np.ndarray) and U.dtype == out_dtype and V.dtype == out_dtype:
        # in place: U, V were formed by the in-memory executor (a copy would double the
        # O((N + M) r) part of the peak memory: 640 MB at N = M = 10⁶, r = 20, float64)
        U *= signs.astype(out_dtype)
        V *= signs.astype(out_dtype)
    else:  # dask arrays (lazy) or a dtype change
        U = (U * signs.astype(out_dtype)).astype(out_dtype, copy=False)
        V = (V * signs.astype(out_dtype)).astype(out_dtype, copy=False)
    if mix_u is not None:
        mix_u, mix_v = mix_u * signs, mix_v * signs
    else:
        Uw, Vw = Uw * signs, Vw * signs
    info = {"mix_u": mix_u, "mix_v": mix_v, "n_dropped": r - n_keep,
            "next_singular_value": s_next * np.sqrt(N * M / (sx * sz)),
            "n_row_landmarks": sx, "n_col_landmarks": sz, **info}
    return NystromResult(U, s, V, np.asarray(I), np.asarray(J), Uw, swk, Vw, float(c),
                         "asymmetric", info)


def _nystrom_once(acc: _Access, r: int, I: np.ndarray, J: np.ndarray, core_solver: str, rcond,
                  rs, normalize: bool, warn: bool = True,
                  orthogonalize: bool = False) -> NystromResult:
    if getattr(acc, "is_dask", False):  # Dask executor (asymkern._dask), same core solve
        from .._dispatch import dask_executor

        return dask_executor("nystrom_once")(acc, r, I, J, core_solver, rcond, rs, normalize, warn,
                                             orthogonalize)
    N, M = acc.shape
    sx, sz = len(I), len(J)
    # U and V, and with the orthogonalisation Q_u, Q_v and the rotated Q_u A, Q_v B beside
    # them (on the torch device too)
    copies = 3 if orthogonalize else 2
    Uw, swk, Vw, n_keep, s_next, c = _core_solve(acc, r, I, J, core_solver, rcond, rs, warn,
                                                 copies)
    out_dtype = acc.dtype
    ops = getattr(acc, "ops", NUMPY)
    # accumulate in the input precision (float32 stays float32: half the O((N + M) r) memory)
    U = acc.left(J, (Vw / swk) * c, out_dtype)
    V = acc.right(I, (Uw / swk) * c, out_dtype)
    s = swk * np.sqrt(N * M / (sx * sz))
    mix_u = mix_v = None
    if orthogonalize:
        U, s, V, mix_u, mix_v = orthogonal_factors(U, V, s, ops.qr, ops)
    elif normalize:
        tiny = np.finfo(float).tiny
        nu = np.maximum(np.asarray(ops.col_norms(U), dtype=np.float64), tiny)
        nv = np.maximum(np.asarray(ops.col_norms(V), dtype=np.float64), tiny)
        U = ops.scale_cols(U, 1 / nu, inplace=True)
        V = ops.scale_cols(V, 1 / nv, inplace=True)
        mix_u, mix_v = np.diag(1 / nu), np.diag(1 / nv)
    # paired sign flip: largest-magnitude entry of each u_i positive (as top_svd does)
    signs = ops.sign_flips(U)
    return nystrom_result(U, s, V, I, J, Uw, swk, Vw, c, signs, mix_u, mix_v, r=r,
                          n_keep=n_keep, s_next=s_next, shape=(N, M), out_dtype=out_dtype,
                          ops=ops)


# -------------------------------------------------------------------------------- estimates
def residual_estimate(G, result: NystromResult, n_probes: int | None = None, random_state=None,
                      weights: str = "uniform", working_memory=None) -> float:
    """A-posteriori η estimate from probe residuals (no exact SVD; see the module docstring).

    Residuals ρ_i² = ‖G v̂_i − λ̃_i û_i‖² + ‖Gᵀ û_i − λ̃_i v̂_i‖² (unit û, v̂) are estimated on
    a uniform probe of rows and columns and turned into an angle estimate with Wedin's bound:
    η̂ = (1/r) Σ w_i min(2, ρ_i²/(2δ_i²)), δ_i the gap of λ̃_i to the other values.

    Parameters
    ----------
    G : array-like, sparse matrix or KernelMatrix of shape (N, M)
        The matrix that was approximated.
    result : NystromResult
        The approximation.
    n_probes : int, optional
        Probe rows and columns (default: max(256, 2 × the landmark count), capped).
    random_state : None, int or RandomState, default None
        Seed of the probes.
    weights : {'uniform', 'paper'}, default 'uniform'
        Weights of the estimate (1, or λ̃_i).
    working_memory : float, optional
        MiB per block.

    Returns
    -------
    float
        The estimate η̂ ≥ 0.

    Raises
    ------
    ValueError
        If ``weights`` is unknown or ``n_probes`` is not a positive integer.

    See Also
    --------
    asymmetric_nystrom : ``estimate='residual'`` uses this estimate.
    eta : The exact metric.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import asymmetric_nystrom
    >>> from asymkern.linalg.nystrom import residual_estimate
    >>> rng = np.random.default_rng(0)
    >>> G = rng.standard_normal((40, 2)) @ rng.standard_normal((2, 30))   # rank 2
    >>> res = asymmetric_nystrom(G, 2, 10, 10, random_state=0, orthogonalize=True)
    >>> residual_estimate(G, res, random_state=0) < 1e-8
    True
    """
    acc: Any = G if isinstance(G, _Access) or getattr(G, "is_dask_access", False) else (
        _dask_access(G, working_memory) or _Access(G, working_memory))
    rs = _check_random_state(random_state)
    if n_probes is not None:
        n_probes = _check_int(n_probes, "n_probes", 1)
    if weights not in ("uniform", "paper"):
        raise ValueError(f"weights must be 'uniform' or 'paper', got {weights!r}")
    if getattr(acc, "is_dask", False):
        return acc.residual_estimate(result, n_probes, rs, weights)
    N, M = acc.shape
    host = getattr(acc, "ops", NUMPY).to_host
    U = np.asarray(host(result.U), dtype=np.float64)
    V = np.asarray(host(result.V), dtype=np.float64)
    nu = np.linalg.norm(U, axis=0)
    nv = np.linalg.norm(V, axis=0)
    nu[nu == 0] = 1.0
    nv[nv == 0] = 1.0
    U = U / nu
    V = V / nv
    s = np.asarray(result.s, dtype=np.float64)
    p = min(N, n_probes or max(256, 2 * len(result.row_landmarks)))
    q = min(M, n_probes or max(256, 2 * len(result.col_landmarks)))
    P = np.sort(rs.choice(N, p, replace=False))
    Q = np.sort(rs.choice(M, q, replace=False))
    Ru = acc.row_probe(P, V) - U[P] * s
    # Gᵀ û on the probe columns: G[:, Q]ᵀ U accumulated over row blocks
    Rv = acc.col_probe(Q, U) - V[Q] * s
    return _residual_eta(Ru, Rv, N, M, s, result.info.get("next_singular_value", 0.0), weights)


def _residual_eta(Ru, Rv, N: int, M: int, s, s_next: float, weights: str) -> float:
    """η̂ from probe residuals Ru (p×r), Rv (q×r) by Wedin's bound (module docstring)."""
    p, q, r = Ru.shape[0], Rv.shape[0], Ru.shape[1]
    rho2 = (N / p) * np.sum(Ru**2, axis=0) + (M / q) * np.sum(Rv**2, axis=0)
    ext = np.concatenate([s, [s_next]])
    gaps = np.array([np.min(np.abs(np.delete(ext, i) - s[i])) for i in range(r)])
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(gaps > 0, rho2 / (2 * gaps**2), 2.0)
    per = np.minimum(per, 2.0)
    w = np.ones(r) if weights == "uniform" else s
    return float(w @ per / r)


# ------------------------------------------------------------------------------- public API
def _check_common(n_row_landmarks, n_col_landmarks, sampling) -> None:
    """Types of the landmark counts (their ranges are checked against G later) and sampling."""
    for name, v in (("n_row_landmarks", n_row_landmarks), ("n_col_landmarks", n_col_landmarks)):
        if v is not None:
            _check_int(v, name, 1)
    if not isinstance(sampling, str):
        raise TypeError(f"sampling must be one of {SAMPLINGS} (use row_sampling/col_sampling for "
                        f"index arrays), got {sampling!r}")
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")


def check_nystrom_options(n_row_landmarks=None, n_col_landmarks=None, sampling="uniform", *,
                          tol=None, estimate="change", weights="uniform", max_landmarks=None,
                          n_probes=None, core_solver="auto", rcond=None, normalize=False,
                          orthogonalize=False) -> tuple:
    """The options of :func:`asymmetric_nystrom` that do not depend on G, checked (errors name
    the option): the estimators check them before any work, whatever their solver.

    Parameters
    ----------
    n_row_landmarks, n_col_landmarks, sampling : int, int, str
        As in :func:`asymmetric_nystrom` (the counts' ranges depend on G: checked there).
    tol, estimate, weights, max_landmarks, n_probes : optional
        As in :func:`asymmetric_nystrom`.
    core_solver, rcond, normalize, orthogonalize : optional
        As in :func:`asymmetric_nystrom`.

    Returns
    -------
    tuple
        (tol, max_landmarks, n_probes, rcond) validated.

    Raises
    ------
    ValueError, TypeError
        Naming the option that is out of range or of the wrong type.
    """
    _check_common(n_row_landmarks, n_col_landmarks, sampling)
    if tol is not None:
        tol = _check_real(tol, "tol")
        if tol <= 0:
            raise ValueError(f"tol must be > 0 (or None for fixed landmark counts), got {tol}")
    if estimate not in ESTIMATES:
        raise ValueError(f"estimate must be one of {ESTIMATES}, got {estimate!r}")
    if weights not in ("uniform", "paper"):
        raise ValueError(f"weights must be 'uniform' or 'paper', got {weights!r}")
    if max_landmarks is not None:
        max_landmarks = _check_int(max_landmarks, "max_landmarks", 1)
    if n_probes is not None:
        n_probes = _check_int(n_probes, "n_probes", 1)
    if rcond is not None:
        rcond = _check_real(rcond, "rcond")
    for flag, value in (("normalize", normalize), ("orthogonalize", orthogonalize)):
        check_bool(value, flag)
    if core_solver not in ("auto", "dense", "randomized", "arpack"):
        raise ValueError(f"core_solver must be 'auto', 'dense', 'randomized' or 'arpack', got "
                         f"{core_solver!r}")
    return tol, max_landmarks, n_probes, rcond


def _check_points(points, name: str, n: int):
    """k-means points of one side: None or an (n, d) real finite array (or sparse matrix)."""
    if points is None:
        return None
    P, kind = check_matrix(points, name, allow_operator=False)
    if kind == "kernel":
        raise TypeError(f"{name} must be an array of points, not a KernelMatrix")
    if P.shape[0] != n:
        raise ValueError(f"{name} has {P.shape[0]} rows; expected {n} (one point per "
                         f"{'row' if name.startswith('row') else 'column'} of G)")
    return P


def _count(value, size: int, name: str) -> int:
    return check_n_components(value, size, name, f"{name[2:5]}s of G")


def _resolve_samplings(sampling, row_sampling, col_sampling, shape, counts):
    """Each side's sampling (``sampling`` unless overridden) and landmark count: an index array
    is checked and fixes the count to its length."""
    methods = [sampling if m_ is None else m_ for m_ in (row_sampling, col_sampling)]
    for side, m_ in zip(("row", "col"), methods):
        if isinstance(m_, str) and m_ not in SAMPLINGS:
            raise ValueError(f"unknown {side}_sampling {m_!r}; expected one of {SAMPLINGS} or an "
                             "index array")
    counts = list(counts)
    for k, side in enumerate(("row", "col")):
        if not isinstance(methods[k], str):
            methods[k] = check_indices(methods[k], shape[k], f"{side}_sampling")
            counts[k] = len(methods[k])
    return methods, counts


def asymmetric_nystrom(
    G,
    n_components: int,
    n_row_landmarks: int | None = None,
    n_col_landmarks: int | None = None,
    random_state=None,
    *,
    sampling="uniform",
    row_sampling=None,
    col_sampling=None,
    row_points=None,
    col_points=None,
    tol: float | None = None,
    estimate: str = "change",
    weights: str = "uniform",
    max_landmarks: int | None = None,
    n_probes: int | None = None,
    core_solver: str = "auto",
    rcond: float | None = None,
    normalize: bool = False,
    orthogonalize: bool = False,
    working_memory: float | None = None,
) -> NystromResult:
    """Asymmetric Nyström approximation of the top-r SVD of G (Tao et al., 2024, §3, eq. 8–9).

    With the SVD of the core W = G[I, J] = U_W Λ_W V_Wᵀ (top r), Tao et al. (2024), Eq. (9)
    with the scaling l_λ = 1/√(NM) gives λ̃_s = √(NM/(s_x s_z)) λ_s^W,
    ũ_s = c/λ_s^W · G[:, J] v_s^W, ṽ_s = c/λ_s^W · G[I, :]ᵀ u_s^W, c = (s_x s_z/(NM))^{1/4};
    Eq. (8) is the same formula at new points (:meth:`NystromResult.extend_rows`). Only
    G[:, J] and G[I, :] are touched, block by block: a lazy kernel is never formed.

    Parameters
    ----------
    G : array-like, sparse matrix or KernelMatrix of shape (N, M)
        The matrix (a lazy :class:`~asymkern.kernels.KernelMatrix` is never formed).
    n_components : int
        Number of components r.
    n_row_landmarks : int, optional
        s_x ≤ N. A missing count takes the other's value (capped); both missing:
        min(size, max(10r, 100)). With ``tol`` it is the starting count.
    n_col_landmarks : int, optional
        s_z ≤ M, as ``n_row_landmarks``.
    random_state : None, int or RandomState, default None
        Seed of the landmark draws, k-means and randomized core SVD.
    sampling : {'uniform', 'kmeans', 'leverage'}, default 'uniform'
        Landmark sampling of both sides.
    row_sampling : str or array-like of int, optional
        Overrides ``sampling`` for the rows; an index array fixes the landmarks.
    col_sampling : str or array-like of int, optional
        Overrides ``sampling`` for the columns.
    row_points : array-like of shape (N, d), optional
        Points for k-means on the rows (default: X of a KernelMatrix, else the rows of G).
    col_points : array-like of shape (M, d), optional
        Points for k-means on the columns (default: Z of a KernelMatrix, else the rows of Gᵀ).
    tol : float, optional
        Grow the landmark counts (doubling) until the a-posteriori η estimate ≤ tol.
    estimate : {'change', 'residual'}, default 'change'
        The a-posteriori estimate (see the module docstring).
    weights : {'uniform', 'paper'}, default 'uniform'
        Weights of the estimate: 1 (strict η) or λ̃_i.
    max_landmarks : int, optional
        Cap of each side's count while growing (default: the side's size).
    n_probes : int, optional
        Probe rows/columns of ``estimate='residual'``.
    core_solver : {'auto', 'dense', 'randomized', 'arpack'}, default 'auto'
        SVD of the core: ``'auto'`` is LAPACK up to 600 landmarks, else randomized.
    rcond : float, optional
        Singular values of the core ≤ rcond·σ₁ are dropped with a warning (default
        max(s_x, s_z)·eps); the result then has fewer than r components.
    normalize : bool, default False
        Scale each column of U and V to unit norm (the paper's "scaling through
        normalization"); False keeps Eq. (9) exactly.
    orthogonalize : bool, default False
        Return instead the exact SVD of the Nyström approximation
        Ĝ = Ũ Λ̃ Ṽᵀ = G[:, J] W_r⁺ G[I, :] (QR of Ũ and Ṽ and an r×r SVD, O((N+M) r²)
        extra): orthonormal U, V, exact whenever rank(G) ≤ r is captured by the landmarks.
        Not in the paper; Eq. (8) then applies the same r×r change of basis.
    working_memory : float, optional
        MiB per block (default: the configuration's ``working_memory``).

    Returns
    -------
    NystromResult
        U, s, V, row_landmarks, col_landmarks and the core SVD.

    Raises
    ------
    ValueError
        If ``n_components`` or a landmark count is out of range (fewer landmarks than r), a
        sampling, estimate, weights or core solver is unknown, or ``tol`` is not positive.
    TypeError
        If ``normalize`` or ``orthogonalize`` is not a bool.

    See Also
    --------
    symmetric_nystrom : The symmetric baseline.
    top_svd : ``solver='nystrom'`` calls this function.
    eta : The accuracy metric.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, §3, Eq. (8)–(9).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import KernelMatrix
    >>> from asymkern.linalg import asymmetric_nystrom, eta_strict, top_svd
    >>> rng = np.random.default_rng(0)
    >>> G = KernelMatrix("rbf", rng.standard_normal((200, 2)), rng.standard_normal((150, 2)))
    >>> res = asymmetric_nystrom(G, 3, 60, 60, random_state=0)
    >>> res.U.shape, res.V.shape
    ((200, 3), (150, 3))
    >>> exact = top_svd(G, 3, solver="dense")
    >>> eta_strict(exact.U, exact.V, res.U, res.V) < 0.1     # accuracy metric eta
    True
    """
    acc: Any = _dask_access(G, working_memory) or _Access(G, working_memory)
    N, M = acc.shape
    r = check_n_components(n_components, min(N, M), what=f"min(N, M) of G with shape {(N, M)}")
    rs = _check_random_state(random_state)
    tol, max_landmarks, n_probes, rcond = check_nystrom_options(
        n_row_landmarks, n_col_landmarks, sampling, tol=tol, estimate=estimate,
        weights=weights, max_landmarks=max_landmarks, n_probes=n_probes,
        core_solver=core_solver, rcond=rcond, normalize=normalize,
        orthogonalize=orthogonalize)
    row_points = _check_points(row_points, "row_points", N)
    col_points = _check_points(col_points, "col_points", M)
    (row_m, col_m), (n_row_landmarks, n_col_landmarks) = _resolve_samplings(
        sampling, row_sampling, col_sampling, (N, M), (n_row_landmarks, n_col_landmarks))
    fixed_r, fixed_c = not isinstance(row_m, str), not isinstance(col_m, str)

    if tol is None:
        if n_row_landmarks is None and n_col_landmarks is None:
            n_row_landmarks = min(N, max(10 * r, 100))
            n_col_landmarks = min(M, max(10 * r, 100))
        elif n_row_landmarks is None:
            n_row_landmarks = min(N, _count(n_col_landmarks, M, "n_col_landmarks"))
        elif n_col_landmarks is None:
            n_col_landmarks = min(M, _count(n_row_landmarks, N, "n_row_landmarks"))
        sx = _count(n_row_landmarks, N, "n_row_landmarks")
        sz = _count(n_col_landmarks, M, "n_col_landmarks")
        if sx < r or sz < r:
            raise ValueError(
                f"n_components={r} is larger than the number of landmarks (rows {sx}, columns "
                f"{sz}); use at least {r} landmarks on each side"
            )
        if "leverage" in (row_m if isinstance(row_m, str) else None,
                          col_m if isinstance(col_m, str) else None):
            _leverage_budget(acc, r, (row_m, sx), (col_m, sz))
            acc.prepare()
        I = select_indices(acc, "row", sx, row_m, r, rs, row_points)
        J = select_indices(acc, "col", sz, col_m, r, rs, col_points)
        return _nystrom_once(acc, r, I, J, core_solver, rcond, rs, normalize,
                             orthogonalize=orthogonalize)

    # ---- growth to a tolerance: the given counts or max(4r, 64), capped by max_landmarks and
    # at least r, doubled until the estimate is at most tol (or the caps are reached); on a
    # 'uniform' side the landmark sets are the prefixes of one random permutation
    cap_r, cap_c = (N, M) if max_landmarks is None else (min(N, max_landmarks),
                                                        min(M, max_landmarks))
    start = max(4 * r, 64)
    sx = min(cap_r, start if n_row_landmarks is None else
             _count(n_row_landmarks, N, "n_row_landmarks"))
    sz = min(cap_c, start if n_col_landmarks is None else
             _count(n_col_landmarks, M, "n_col_landmarks"))
    if min(cap_r, cap_c) < r:
        raise ValueError(f"max_landmarks={max_landmarks} is below n_components={r}")
    sx, sz = max(sx, r), max(sz, r)
    perm_r = rs.permutation(N) if isinstance(row_m, str) and row_m == "uniform" else None
    perm_c = rs.permutation(M) if isinstance(col_m, str) and col_m == "uniform" else None
    leverage = "leverage" in (row_m if isinstance(row_m, str) else None,
                              col_m if isinstance(col_m, str) else None)
    if leverage:
        _leverage_budget(acc, r, (row_m, sx), (col_m, sz))
        acc.prepare()
    history: list[dict] = []
    prev = None
    while True:
        if leverage:  # the counts grow, and so do the sketches
            _leverage_budget(acc, r, (row_m, sx), (col_m, sz))
        I = (np.sort(perm_r[:sx]) if perm_r is not None
             else select_indices(acc, "row", sx, row_m, r, rs, row_points))
        J = (np.sort(perm_c[:sz]) if perm_c is not None
             else select_indices(acc, "col", sz, col_m, r, rs, col_points))
        res = _nystrom_once(acc, r, I, J, core_solver, rcond, rs, normalize, warn=False,
                            orthogonalize=orthogonalize)
        exact = sx == N and sz == M
        if estimate == "change":
            if prev is None:
                est = np.inf
            else:
                k = min(prev.n_components, res.n_components)
                if getattr(acc, "is_dask", False):
                    est = acc.change_estimate(res, prev, k, weights)
                else:
                    Ur, Vr, Up, Vp = (acc.ops.to_host(a[:, :k]) for a in (
                        res.factors()[0], res.factors()[2], prev.factors()[0],
                        prev.factors()[2]))
                    est = eta(Ur, Vr, Up, Vp, singular_values=res.s[:k], weights=weights)
        else:
            est = residual_estimate(acc, res, n_probes, rs, weights)
        est = 0.0 if exact else est
        history.append({"n_row_landmarks": sx, "n_col_landmarks": sz, "estimate": float(est)})
        if est <= tol or exact or ((fixed_r or sx >= cap_r) and (fixed_c or sz >= cap_c)):
            break
        prev = res
        sx, sz = (sx if fixed_r else min(cap_r, 2 * sx)), (sz if fixed_c else min(cap_c, 2 * sz))
    converged = bool(history[-1]["estimate"] <= tol)
    if not converged:
        warnings.warn(
            f"asymmetric Nyström did not reach tol={tol:g} (estimate "
            f"{history[-1]['estimate']:.3g} with {sx}x{sz} landmarks, the cap); returning the "
            "last solution", RuntimeWarning, stacklevel=2)
    if res.info["n_dropped"]:
        warnings.warn(f"the core G[I, J] is rank-deficient: {res.info['n_dropped']} of {r} "
                      "components dropped", RuntimeWarning, stacklevel=2)
    info = dict(res.info, history=history, estimate=history[-1]["estimate"], converged=converged,
                tol=tol, estimate_kind=estimate)
    return NystromResult(res.U, res.s, res.V, res.row_landmarks, res.col_landmarks, res.core_U,
                         res.core_s, res.core_V, res.scale, "asymmetric", info)


def symmetric_nystrom(
    G,
    n_components: int,
    n_row_landmarks: int | None = None,
    n_col_landmarks: int | None = None,
    random_state=None,
    *,
    sampling="uniform",
    row_sampling=None,
    col_sampling=None,
    eig_solver: str = "auto",
    working_memory: float | None = None,
) -> NystromResult:
    """Baseline: classic Nyström on GGᵀ (row landmarks) and on GᵀG (column landmarks).

    Tao et al. (2024), §4.4 / App. A.2.1, Eq. (13) applied twice: W = G[I, :] G[I, :]ᵀ with
    eigenpairs (λ_W, u_W), ũ = √(s/N) G G[I, :]ᵀ u_W / λ_W, σ̃ = √(N λ_W / s), and the same
    for GᵀG with column landmarks. The signs of (u_i, v_i) are paired with the sampled block
    G[I, J]. Needs G[I, :], G[:, J] and one streaming pass over the whole of G.

    Parameters
    ----------
    G : array-like, sparse matrix or KernelMatrix of shape (N, M)
        The matrix.
    n_components : int
        Number of components r.
    n_row_landmarks : int, optional
        s_x (default min(N, max(10r, 100)), or the column count).
    n_col_landmarks : int, optional
        s_z (default: the row count, capped at M).
    random_state : None, int or RandomState, default None
        Seed of the landmark draws.
    sampling : {'uniform', 'kmeans', 'leverage'}, default 'uniform'
        Landmark sampling of both sides.
    row_sampling : str or array-like of int, optional
        Overrides ``sampling`` for the rows; an index array fixes the landmarks.
    col_sampling : str or array-like of int, optional
        Overrides ``sampling`` for the columns.
    eig_solver : {'auto', 'dense', 'arpack'}, default 'auto'
        ``'auto'``/``'dense'``: LAPACK ``eigh`` for the top r; ``'arpack'``: Lanczos
        ``eigsh``, as in the paper.
    working_memory : float, optional
        MiB per block.

    Returns
    -------
    NystromResult
        U, s (from GGᵀ), V and the landmarks (``method='symmetric'``, no core SVD).

    Raises
    ------
    ValueError
        If ``n_components`` exceeds a landmark count, or a sampling or solver is unknown.
    MemoryBudgetError
        If G[I, :] and G[:, J] would exceed ``max_dense_memory``.

    See Also
    --------
    asymmetric_nystrom : The asymmetric method (faster, touches only G[I, :] and G[:, J]).

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, App. A.2.1, Eq. (13).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.linalg import symmetric_nystrom
    >>> rng = np.random.default_rng(0)
    >>> G = rng.standard_normal((30, 2)) @ rng.standard_normal((2, 20))   # rank 2
    >>> res = symmetric_nystrom(G, 2, 10, 10, random_state=0)
    >>> res.U.shape, res.V.shape, res.method, bool(res.s[0] >= res.s[1])
    ((30, 2), (20, 2), 'symmetric', True)
    """
    from scipy.sparse.linalg import eigsh

    acc = _Access(G, working_memory)
    N, M = acc.shape
    r = check_n_components(n_components, min(N, M), what=f"min(N, M) of G with shape {(N, M)}")
    rs = _check_random_state(random_state)
    _check_common(n_row_landmarks, n_col_landmarks, sampling)
    if eig_solver not in ("auto", "dense", "arpack"):
        raise ValueError(f"eig_solver must be 'auto', 'dense' or 'arpack', got {eig_solver!r}")
    (row_m, col_m), (n_row_landmarks, n_col_landmarks) = _resolve_samplings(
        sampling, row_sampling, col_sampling, (N, M), (n_row_landmarks, n_col_landmarks))
    if n_row_landmarks is None and n_col_landmarks is None:
        n_row_landmarks = min(N, max(10 * r, 100))
    if n_col_landmarks is None:
        n_col_landmarks = min(M, n_row_landmarks)
    if n_row_landmarks is None:
        n_row_landmarks = min(N, n_col_landmarks)
    sx = _count(n_row_landmarks, N, "n_row_landmarks")
    sz = _count(n_col_landmarks, M, "n_col_landmarks")
    if r > min(sx, sz):
        raise ValueError(f"n_components={r} is larger than the number of landmarks ({sx}, {sz})")
    # G[I, :] and G[:, J] are held in float64, with their Gram matrices and products, and
    # U, V with the maps a, b beside them; the blocks of the passes (the full rows of the
    # last pass, the sz columns of G[:, J] and the normalisers' own) are shrunk to what is
    # left (default settings: they fit, nothing changes), as are the leverage-score passes
    from ..config import get_config

    held = 8 * (sx * M + N * sz) * 2 + 8 * (sx * sx + sz * sz) * 2 + 8 * 2 * (N + M) * r
    others = (M, sz)
    blocks = acc.block_bytes(others)
    left = float(get_config()["max_dense_memory"]) * 2**20 - held
    if blocks > left:
        blocks = acc.fit_blocks(left, others)
    check_memory(held + blocks,
                 f"symmetric_nystrom with {sx}×{sz} landmarks of the {N}×{M} matrix G",
                 "fewer landmarks or asymmetric_nystrom (which never holds G[I, :] or G[:, J])",
                 detail=f"G[I, :] ({sx}×{M}) and G[:, J] ({N}×{sz}) in float64, twice, U and "
                        "V with their maps and the kernel blocks of the passes over G")
    _leverage_budget(acc, r, (row_m, sx), (col_m, sz))
    acc.prepare()
    I = select_indices(acc, "row", sx, row_m, r, rs)
    J = select_indices(acc, "col", sz, col_m, r, rs)
    GI = np.asarray(acc.block(I, slice(None)), dtype=np.float64)  # (sx, M)
    GJ = np.asarray(acc.left(J, np.eye(len(J)), np.float64))  # (N, sz) = G[:, J]

    def top_eig(W, k):
        k = min(k, W.shape[0])
        if eig_solver == "arpack" and k < W.shape[0] - 1:
            v0 = rs.uniform(-1, 1, W.shape[0])
            lam, vec = eigsh(W, k=k, which="LA", v0=v0)
        else:  # 'auto', 'dense', or 'arpack' for a W of at most k + 1 rows
            lam, vec = NUMPY.eigh_top(W, k)
        order = np.argsort(lam)[::-1]
        return lam[order], vec[:, order]

    lam_u, Wu = top_eig(GI @ GI.T, r)
    lam_v, Wv = top_eig(GJ.T @ GJ, r)
    ok = (lam_u > 0) & (lam_v > 0)
    if not np.all(ok):
        k = int(np.argmin(ok)) if not ok.all() else r
        warnings.warn(f"symmetric Nyström: only {k} positive eigenvalues; returning {k} "
                      "components", RuntimeWarning, stacklevel=2)
        lam_u, Wu, lam_v, Wv = lam_u[:k], Wu[:, :k], lam_v[:k], Wv[:, :k]
    a = GI.T @ (Wu / lam_u) * np.sqrt(sx / N)  # (M, r): Û = G a
    b = GJ @ (Wv / lam_v) * np.sqrt(sz / M)  # (N, r): V̂ = Gᵀ b
    U = np.empty((N, a.shape[1]))
    V = np.zeros((M, b.shape[1]))
    for sl in block_slices(N, acc.step(M)):
        B = np.asarray(acc.block(sl, slice(None)))
        U[sl] = B @ a.astype(B.dtype, copy=False)
        V += B.T @ b[sl].astype(B.dtype, copy=False)
    s = np.sqrt(lam_u * N / sx)
    # pair the signs with the sampled block: sign of ũ_Iᵀ G[I, J] ṽ_J
    pair = np.einsum("ij,ij->j", U[I], (GI[:, J] @ V[J]))
    sg = np.where(pair < 0, -1.0, 1.0)
    V *= sg
    idx = np.argmax(np.abs(U), axis=0)
    f = np.sign(U[idx, np.arange(U.shape[1])])
    f[f == 0] = 1
    U *= f
    V *= f
    return NystromResult(U.astype(acc.dtype, copy=False), s, V.astype(acc.dtype, copy=False),
                         I, J, None, None, None, 1.0, "symmetric",
                         {"n_row_landmarks": sx, "n_col_landmarks": sz})


__all__ = [
    "ESTIMATES",
    "SAMPLINGS",
    "NystromResult",
    "asymmetric_nystrom",
    "eta",
    "eta_components",
    "residual_estimate",
    "select_indices",
    "symmetric_nystrom",
]
