"""The Nyström basis shared by every mode (Li, Liu and Zhang, §II-C, §III-B, Algorithm 1 steps 1–4).

Landmarks C_H (m of them) give K_nm = ⟨X_H, C_H⟩ and K_mm = ⟨C_H, C_H⟩. The *standard* Nyström
method's embedded orthogonal basis is B_H = C_H A with A = V_s Σ_s⁻¹ from the eigendecomposition
K_mm = V Σ² Vᵀ (Li, Liu and Zhang, §IV-A), so AᵀK_mm A = I, G = AᵀK_mn (s × n) and
K̃ = GᵀG = K_nm K_mm^† K_mn (for s = rank K_mm). The approximate feature map (LLA's Φ̃) is
t(z) = Aᵀ⟨C_H, Φ(z)⟩; we store training features as F = Gᵀ (n × s, samples are rows).

**Pseudo-inverse cut-off.** Eigenvalues λ of K_mm with λ ≤ rcond·λ_max are treated as zero
(default rcond = m·ε, numpy's ``matrix_rank`` rule, with ε the machine precision of X's dtype:
float32 kernel values are only accurate to ~1e-7, and a float64 cut-off would keep rounding noise
and amplify it by 1/√λ); duplicate landmark points therefore
give a rank-deficient K_mm that is handled exactly like K_mm^† with that cut-off. The subspace
dimension s (``subspace_dim``) keeps the top-s eigenpairs (s ≤ numerical rank ≤ m).

Landmark kinds: rows of X (``'uniform'``, ``'leverage'``, explicit indices), k-means centres
(``'kmeans'``, points outside the data) and a Gaussian sketch C_H = X_H S (``'gaussian'``,
K_nm = K S, so it needs the kernel against all training points).

The landmark step is written once for the in-memory executors (numpy, torch):
:func:`fit_landmarks` draws the landmarks on the host, builds the basis and returns a
:class:`LandmarkRows`, the rows of K_nm on X's executor through its ``ops.kernel_matrix``
(the Dask executor gathers its landmark rows itself, ``asymkern._dask.machines``).
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from .._backend import NUMPY, ops_of
from .._dispatch import dask_executor, is_dask_array, is_torch_tensor
from .._validation import as_data, check_finite_output, check_indices
from ..kernels import Kernel, KernelMatrix
from ..landmarks import gaussian_sketch, kmeans_landmarks, select_landmarks

SAMPLERS = ("uniform", "gaussian", "leverage", "kmeans")

#: the advice of the non-finite-output errors
RESCALE = "rescale X (e.g. StandardScaler) or change the kernel parameters"


def check_finite(ops, a, what: str, hint: str = RESCALE):
    """:func:`~asymkern._validation.check_finite_output` for an array of any executor (``ops``
    its :class:`~asymkern._backend.ArrayOps`; the test runs where ``a`` lives, which moves to
    the host only to word the error). Returns a."""
    if a is not None and not ops.all_finite(a):
        check_finite_output(ops.to_host(a), what, hint)
    return a


@dataclass
class NystromBasis:
    """A fitted Nyström basis: landmarks, K_mm and A (m × s) with AᵀK_mm A = I.

    The standard Nyström method's embedded orthonormal basis B_H = C_H A, with
    A = V_s Σ_s⁻¹ from the eigendecomposition K_mm = V Σ² Vᵀ (Li, Liu and Zhang, §IV-A), so that
    the approximate feature map is t(z) = K(z, C) A and K̃ = K_nm K_mm^† K_mn. Built by
    :func:`build_basis`; shared by every mode of the Nyström kernel machines.

    Parameters
    ----------
    kernel : Kernel
        The symmetric positive semi-definite kernel.
    X_fit : ndarray of shape (n, d) or None
        Training data (needed for a Gaussian sketch; None when the landmarks came from a
        dask array).
    centers : ndarray of shape (m, d) or None
        Landmark points, or None for a Gaussian sketch.
    sketch : ndarray of shape (n, m) or None
        The Gaussian sketch S (C_H = X_H S), or None for landmark points.
    indices : ndarray of shape (m,) or None
        Row indices of the landmarks in ``X_fit`` (None for k-means centres or a sketch).
    Kmm : ndarray of shape (m, m)
        The (symmetrised) landmark kernel matrix.
    A : ndarray of shape (m, s)
        The basis coefficients, AᵀK_mm A = I.
    eigenvalues : ndarray of shape (s,)
        The kept eigenvalues of K_mm, decreasing.
    rank : int
        Numerical rank of K_mm (eigenvalues above rcond·λ_max).

    See Also
    --------
    build_basis : Selects the landmarks and builds the basis.
    asymkern.nystrom.NystromKernelRidge : Uses it.

    References
    ----------
    .. [1] Li, Liu and Zhang, "Geometric Interpretation of Running Nyström-Based Kernel
       Machines and Error Analysis", §II-C, §IV-A and Algorithm 1.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import RBFKernel
    >>> from asymkern.nystrom import build_basis
    >>> X = np.random.default_rng(0).standard_normal((50, 3))
    >>> basis = build_basis(RBFKernel(gamma=0.5), X, 10, random_state=0)
    >>> basis.n_landmarks, basis.features(X).shape
    (10, (50, 10))
    >>> bool(np.allclose(basis.A.T @ basis.Kmm @ basis.A, np.eye(basis.subspace_dim)))
    True
    """

    kernel: Kernel
    X_fit: np.ndarray
    centers: np.ndarray | None  # (m, d) landmark points, or None for a sketch
    sketch: np.ndarray | None  # (n, m) Gaussian sketch S, or None
    indices: np.ndarray | None
    Kmm: np.ndarray
    A: np.ndarray
    eigenvalues: np.ndarray  # kept eigenvalues of K_mm (descending), length s
    rank: int  # numerical rank of K_mm

    @property
    def n_landmarks(self) -> int:
        return self.Kmm.shape[0]

    @property
    def subspace_dim(self) -> int:
        return self.A.shape[1]

    def landmark_kernel(self, Z) -> np.ndarray:
        """The kernel between ``Z`` and the landmarks, K(Z, C).

        For a Gaussian sketch this is K(Z, X_fit) S, streamed in blocks. A dask ``Z`` gives a
        dask array chunked like ``Z`` (computed chunk by chunk).

        Parameters
        ----------
        Z : array-like of shape (n_z, d) or dask array
            Points at which to evaluate the kernel.

        Returns
        -------
        ndarray of shape (n_z, m)
            K(Z, C) in float64 (a dask array for a dask ``Z``).
        """
        if is_dask_array(Z):  # the Dask executor (asymkern._dask.machines.features)
            return dask_executor("nystrom_features")(self, Z, B=np.eye(self.n_landmarks))
        if self.sketch is not None:
            return np.asarray(KernelMatrix(self.kernel, Z, self.X_fit).matmat(self.sketch),
                              dtype=np.float64)
        return kernel_block(self.kernel, Z, self.centers)

    def features(self, Z=None, Knm=None) -> np.ndarray:
        """The approximate feature map t(Z) = K(Z, C) A (LLA's Φ̃, Li, Liu and Zhang §II-E).

        A dask ``Z`` gives a dask array chunked like ``Z``, float64, one task per chunk
        (``asymkern._dask.machines.features``); nothing n×m is held.

        Parameters
        ----------
        Z : array-like of shape (n_z, d) or dask array, optional
            Points at which to evaluate the features (ignored when ``Knm`` is given).
        Knm : ndarray of shape (n_z, m), optional
            A precomputed :meth:`landmark_kernel` of ``Z``.

        Returns
        -------
        ndarray of shape (n_z, s)
            The features, float64 (a dask array for a dask ``Z``).
        """
        if Knm is None and is_dask_array(Z):
            return dask_executor("nystrom_features")(self, Z)
        if Knm is None:
            Knm = self.landmark_kernel(Z)
        return Knm @ self.A


def check_psd_kernel(kernel):
    """Li, Liu and Zhang need a symmetric positive semi-definite kernel (a Hilbert-space feature
    map)."""
    if not (kernel.is_symmetric and kernel.is_psd) or kernel.row_normalized:
        raise ValueError(
            f"Nyström kernel machines need a symmetric positive semi-definite kernel; "
            f"{kernel!r} is_symmetric={kernel.is_symmetric}, is_psd={kernel.is_psd}, "
            f"row_normalized={kernel.row_normalized}")
    return kernel


def kernel_block(kernel, Z, C, working_memory: float | None = None) -> np.ndarray:
    """Dense K(Z, C) as float64, written block by block straight into the output (no copy of a
    full-size temporary); blocks of at most ``working_memory`` MiB (library setting)."""
    from ..config import get_config

    Z, C = kernel.validate_pair(Z, C)
    n, m = Z.shape[0], C.shape[0]
    wm = get_config()["working_memory"] if working_memory is None else working_memory
    rows = int(max(1, min(n, wm * 2**20 // max(1, 2 * m * 8))))
    if rows >= n:
        return np.asarray(kernel._raw(Z, C), dtype=np.float64)
    out = np.empty((n, m), dtype=np.float64)
    for start in range(0, n, rows):
        out[start:start + rows] = kernel._raw(Z[start:start + rows], C)
    return out


def _check_int(v, name, lo, hi=None, hi_what=""):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {v!r}")
    v = int(v)
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise ValueError(f"{name}={v} is larger than {hi} ({hi_what})")
    return v


def landmark_request(landmarks, n_landmarks, n: int):
    """Validate the landmark options: (method or None, m, fixed indices or None).

    ``landmarks`` is a selector name of :data:`SAMPLERS` (then m = ``n_landmarks``, 1 ≤ m ≤ n)
    or an array of row indices (then m is its size, and ``n_landmarks`` must be None or m).
    Shared by the in-memory and the Dask executors.
    """
    if isinstance(landmarks, str):
        if landmarks not in SAMPLERS:
            raise ValueError(f"unknown landmarks={landmarks!r}; expected one of {SAMPLERS} "
                             "or an array of row indices")
        m = _check_int(n_landmarks, "n_landmarks", 1, n, f"the number of samples n_samples={n}")
        return landmarks, m, None
    idx = check_indices(landmarks, n, "landmarks")
    m = idx.size
    if n_landmarks is not None and int(n_landmarks) != m:
        raise ValueError(f"landmarks has {m} indices but n_landmarks={n_landmarks}")
    return None, m, idx


def draw_landmarks(X, kernel, rng, method: str | None, m: int, indices=None):
    """The landmark points of Li, Liu and Zhang's Algorithm 1 (steps 1–2), on any executor.

    The numpy samplers draw on the host from ``rng`` for every executor (the same stream, so
    the same landmarks); a device ``X`` is copied to the host only for 'kmeans' and
    'leverage'.

    Parameters
    ----------
    X : array-like or executor array of shape (n, d)
        The training data.
    kernel : Kernel
        The kernel (for the leverage scores).
    rng : RandomState
        The random stream.
    method : {'uniform', 'leverage', 'kmeans'} or None
        As :func:`landmark_request` returns it (None: ``indices`` are given).
    m : int
        The number of landmarks.
    indices : ndarray of int, optional
        The given row indices (``method`` None).

    Returns
    -------
    indices : ndarray of int
        The landmark rows (k-means: the rows nearest the centres).
    centers : array of shape (m, d)
        The landmarks on X's executor in X's dtype (k-means: the centres).
    """
    ops = ops_of(X)
    host = X if ops is NUMPY else None
    if host is None and method in ("kmeans", "leverage"):
        host = ops.to_host(X)
    if method == "kmeans":
        indices, centers = kmeans_landmarks(host, m, return_centers=True, random_state=rng)
        return indices, ops.from_host(centers, X)
    if method is not None:
        indices = select_landmarks(host, m, method=method, random_state=rng, kernel=kernel,
                                   n_samples=int(X.shape[0]))
    return indices, X[ops.index(indices, X)]


def build_basis(kernel, X, n_landmarks, landmarks="uniform", subspace_dim=None, rcond=None,
                random_state=None) -> NystromBasis:
    """Select landmarks and compute the Nyström basis (Li, Liu and Zhang, Algorithm 1, steps 1–3).

    Parameters
    ----------
    kernel : Kernel
        A symmetric positive semi-definite kernel.
    X : ndarray of shape (n, d)
        Training data.
    n_landmarks : int
        Number of landmarks m (ignored when ``landmarks`` is an array of indices).
    landmarks : {'uniform', 'leverage', 'kmeans', 'gaussian'} or array of int, default='uniform'
        How to choose the landmarks: uniform rows, approximate leverage-score rows, k-means
        centres, a Gaussian sketch C_H = X_H S, or explicit row indices.
    subspace_dim : int, optional
        Keep the top-s eigenpairs of K_mm (default: its numerical rank).
    rcond : float in [0, 1), optional
        Relative eigenvalue cut-off of K_mm (default m·ε of ``X``'s dtype).
    random_state : None, int or numpy.random.RandomState, optional
        Seed of the landmark selection.

    Returns
    -------
    NystromBasis
        The landmarks, K_mm and A with AᵀK_mm A = I.

    Raises
    ------
    ValueError
        If the kernel is not symmetric positive semi-definite (or is row-normalised), if
        ``rcond`` is outside [0, 1), or if K_mm has no positive eigenvalue.

    See Also
    --------
    NystromBasis : The result.
    fit_landmarks : The same step on any executor, with the rows of K_nm.
    asymkern.landmarks.select_landmarks : The landmark samplers.

    References
    ----------
    .. [1] Li, Liu and Zhang, "Geometric Interpretation of Running Nyström-Based Kernel
       Machines and Error Analysis", §IV-A and Algorithm 1.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import RBFKernel
    >>> from asymkern.nystrom import build_basis
    >>> X = np.random.default_rng(0).standard_normal((40, 2))
    >>> basis = build_basis(RBFKernel(gamma=1.0), X, 8, landmarks="kmeans", random_state=0)
    >>> basis.centers.shape, basis.subspace_dim
    ((8, 2), 8)
    """
    check_psd_kernel(kernel)
    if not (is_dask_array(X) or is_torch_tensor(X)):  # the executors validate their own
        X = as_data(X, "X", allow_sparse=True)
    return fit_landmarks(kernel, X, landmarks, n_landmarks, check_random_state(random_state),
                         subspace_dim=subspace_dim, rcond=rcond, X_fit=X).basis


class LandmarkRows:
    """K_nm = K(X, C) of a fit on its executor, read by rows (built by :func:`fit_landmarks`).

    The :class:`~asymkern.nystrom._algebra.KnmSource` of every executor (numpy, torch): rows
    a:e of K_nm in float64 (:meth:`knm`), from the executor's lazy kernel matrix
    (``ops.kernel_matrix``) for landmark points, K[a:e, idx] for a precomputed K, or a
    formed K_nm (a sketch's K S, Li, Liu and Zhang §IV, kept until :meth:`release`).

    Parameters
    ----------
    X : array of shape (n, d)
        The training data on its executor (the (n, n) kernel matrix for 'precomputed'; for a
        formed ``Knm`` only its executor and row count are read).
    kernel : Kernel, optional
        The kernel (landmark points).
    C : array of shape (m, d), optional
        The landmark points on X's executor (the landmark rows of K for 'precomputed').
    idx : index array of X's executor, optional
        The landmark columns of a precomputed K.
    S : array of shape (n, m), optional
        A Gaussian sketch (float64, on X's executor).
    Knm : array of shape (n, m), optional
        K_nm formed (float64, on X's executor; a sketch's K S).
    basis : NystromBasis, optional
        The fitted basis.

    Attributes
    ----------
    kind : {'points', 'gaussian', 'precomputed'}
        Landmark points, a Gaussian sketch, or indices into a precomputed K.
    shape : tuple of int
        (n, m).
    ops : ArrayOps
        X's executor.
    """

    #: rows per block: BLAS-3 sized, a few MB of K_nm at a time
    block_rows = 2048

    def __init__(self, X, kernel=None, *, C=None, idx=None, S=None, Knm=None, basis=None):
        self.X, self.kernel, self.C, self.idx, self.S, self.Knm = X, kernel, C, idx, S, Knm
        self.basis, self.ops, self._G = basis, ops_of(X), None
        m = Knm.shape[1] if Knm is not None else S.shape[1] if S is not None else C.shape[0]
        self.shape = (int(X.shape[0]), int(m))
        self.kind = ("gaussian" if S is not None else "precomputed" if idx is not None
                     else "points")

    def step(self, k: int) -> int:
        """Rows per block with k right-hand sides."""
        return min(self.block_rows, row_step(self.shape[1], k))

    def knm(self, a: int, e: int):
        """Rows a:e of K_nm in float64 on the executor, checked finite: a fresh array the
        caller may overwrite (a formed K_nm's rows are copied)."""
        if self.Knm is not None:
            return self.Knm[a:e] * 1.0
        if self.S is not None:
            raise RuntimeError("the sketch's K S was released after the fit")
        if self.idx is not None:
            K = self.X[a:e][:, self.idx]
        else:
            if self._G is None:
                self._G = self.ops.kernel_matrix(self.kernel, self.X, self.C)
            K = self._G.block(slice(a, e), slice(None))
        return check_finite(self.ops, self.ops.astype(K, np.float64),
                            "the kernel matrix K_nm between X and the landmarks")

    def release(self) -> None:
        """Drop a formed K_nm (a sketch's K S, n × m): the fitted model keeps only S."""
        self.Knm = None


def _host(ops, a):
    """``a`` on the host (a sparse matrix as it is)."""
    return a if a is None or sp.issparse(a) else ops.to_host(a)


def pass_within(G, held: float, what: str, alternatives: str):
    """The lazy kernel matrix G of a pass (a prediction, a sketch), with blocks within what
    ``held`` bytes (the outputs and operands the caller holds beside the pass) leave of
    ``max_dense_memory``.

    A numpy :class:`~asymkern.kernels.KernelMatrix` gets blocks shrunk by
    :func:`~asymkern.linalg.svd.blocks_within` (one row at least), and the whole
    (``held`` and the blocks of its passes, :func:`~asymkern.linalg.svd.pass_block_bytes`)
    is checked before the pass runs. Anything else (a torch or Dask matrix sizes its own
    blocks, on its device or workers) is returned as it is.

    Parameters
    ----------
    G : KernelMatrix or any lazy matrix
        The matrix of the pass.
    held : float
        Bytes held beside the pass (its output, its operand).
    what : str
        The operation, for the error message.
    alternatives : str
        What to do instead, for the error message.

    Returns
    -------
    KernelMatrix or any lazy matrix
        G, or a shallow copy of it with smaller blocks (the same entries).

    Raises
    ------
    MemoryBudgetError
        When ``held`` and the blocks of one row exceed ``max_dense_memory``.
    """
    from ..config import check_memory
    from ..kernels import KernelMatrix
    from ..linalg.svd import blocks_within, budget_bytes, pass_block_bytes

    if not isinstance(G, KernelMatrix):
        return G
    H = blocks_within(G, budget_bytes(G) - held)
    check_memory(held + pass_block_bytes(H), what, alternatives, limit=G.max_dense_memory,
                 detail=f"the outputs and operands ({held / 2**20:.2f} MiB) beside the kernel "
                        f"blocks of the {G.shape[0]}×{G.shape[1]} kernel matrix's pass")
    return H


def fit_landmarks(kernel, X, landmarks, n_landmarks, rng, *, subspace_dim=None, rcond=None,
                  X_fit=None) -> LandmarkRows:
    """The landmark step of Li, Liu and Zhang's Algorithm 1 (steps 1–3) on X's executor.

    Written once for every executor through its primitives (:func:`~asymkern._backend.ops_of`):

    * landmark points ('uniform', 'leverage', 'kmeans', row indices): drawn on the host by
      the numpy samplers from ``rng`` (:func:`draw_landmarks`: the same landmarks for the same
      stream on every executor), K_mm = K(C, C) on the host, K_nm = K(X, C) evaluated by row
      blocks of the executor's lazy kernel matrix when read;
    * ``'gaussian'`` (§IV, C_H = X_H S): S (n × m) drawn on the host by
      :func:`asymkern.landmarks.gaussian_sketch`, K S = K_nm formed once on the executor
      (streamed over row blocks of K, never formed whole), K_mm = SᵀK S;
    * a precomputed kernel (``kernel.name == 'precomputed'``, X the training Gram matrix K,
      ``landmarks`` the column indices): K_nm = K[:, idx], K_mm = K[idx][:, idx].

    A = V_s Σ_s⁻¹ then comes from K_mm on the host (:func:`basis_from_landmarks`).

    Parameters
    ----------
    kernel : Kernel
        A symmetric positive semi-definite kernel (checked by the caller).
    X : array or sparse matrix of shape (n, d)
        The training data on its executor.
    landmarks : str or array of int
        As for :func:`build_basis`.
    n_landmarks : int or None
        The number of landmarks m of a sampler (None with indices).
    rng : RandomState
        The random stream.
    subspace_dim : int, callable or None, optional
        Keep the top-s eigenpairs of K_mm; a callable gets m and returns s (or None).
    rcond : float, optional
        Relative eigenvalue cut-off of K_mm.
    X_fit : ndarray, optional
        A host copy of X recorded in the basis (default: a host copy for a sketch only).

    Returns
    -------
    LandmarkRows
        The rows of K_nm, with the fitted basis as ``basis``.

    References
    ----------
    .. [1] Li, Liu and Zhang, "Geometric Interpretation of Running Nyström-Based Kernel
       Machines and Error Analysis", §IV-A and Algorithm 1.
    """
    ops, n = ops_of(X), int(X.shape[0])
    method, m, idx = landmark_request(landmarks, n_landmarks, n)
    C = S = KS = Kmm = None
    if method == "gaussian":
        S = ops.from_host(gaussian_sketch(n, m, random_state=rng), X, np.float64)
        # float64 (numpy's mixed precision); S and K S held beside the pass over K
        G = pass_within(ops.kernel_matrix(kernel, X), 16 * n * m,
                        f"the Gaussian sketch K S of {n} samples ({n}×{m}, landmarks='gaussian')",
                        "fewer landmarks (n_landmarks) or another landmarks method")
        KS = G.matmat(S)
        Kmm, idx = ops.to_host(S.T @ KS), None
        if X_fit is None:
            X_fit = ops.to_host(X)
    else:
        idx, C = draw_landmarks(X, kernel, rng, method, m, idx)
    basis = basis_from_landmarks(
        kernel, _host(ops, C), idx, ops.dtype(X), rcond=rcond, X_fit=X_fit, Kmm=Kmm,
        subspace_dim=subspace_dim(m) if callable(subspace_dim) else subspace_dim,
        sketch=_host(ops, S))
    precomputed = getattr(kernel, "name", None) == "precomputed"
    return LandmarkRows(X, kernel, C=C, S=S, Knm=KS, basis=basis,
                        idx=ops.index(idx, X) if precomputed else None)


def basis_from_landmarks(kernel, centers, indices, dtype, subspace_dim=None, rcond=None,
                         X_fit=None, sketch=None, Kmm=None) -> NystromBasis:
    """A = V_s Σ_s⁻¹ from K_mm = K(C, C) (Li, Liu and Zhang, §IV-A, Algorithm 1 step 3).

    The step of :func:`build_basis` after the landmarks are chosen; the Dask executor
    (``asymkern._dask.machines``) calls it with landmark rows gathered from a dask X
    (``X_fit=None``). ``dtype`` is the data's dtype (it sets the default cut-off).
    """
    if Kmm is None:
        Kmm = kernel_block(kernel, centers, centers)
    m = Kmm.shape[0]
    Kmm = (Kmm + Kmm.T) / 2
    check_finite_output(Kmm, "the landmark kernel matrix K_mm", RESCALE)
    lam, V = np.linalg.eigh(Kmm)
    lam, V = lam[::-1], V[:, ::-1]
    if rcond is None:  # the kernel values carry the rounding of X's dtype (float32: 1.2e-7)
        rcond = m * float(np.finfo(dtype).eps)
    elif not (isinstance(rcond, numbers.Real) and 0 <= float(rcond) < 1):
        raise ValueError(f"rcond must be a number in [0, 1), got {rcond!r}")
    top = lam[0] if lam.size else 0.0
    if not top > 0:
        raise ValueError("K_mm has no positive eigenvalue: the kernel must be positive "
                         "semi-definite and not identically zero on the landmarks")
    # a materially negative eigenvalue (beyond the rounding of a PSD kernel's values, taken
    # as √ε of X's dtype relative to λ_max) means an indefinite kernel: the pseudo-inverse
    # would silently drop that part of K_mm and fit another kernel's machine
    floor = max(rcond, math.sqrt(float(np.finfo(dtype).eps))) * top
    if lam[-1] < -floor:
        raise ValueError(
            f"the landmark kernel matrix K_mm has the eigenvalue {lam[-1]:.4g} against "
            f"λ_max = {top:.4g}: the kernel is not positive semi-definite (for "
            "kernel='precomputed': X at the landmarks' rows and columns). The Nyström machines "
            "of Li, Liu and Zhang need a symmetric PSD kernel; make the matrix PSD (e.g. clip "
            "its negative eigenvalues) or use KernelSVD for indefinite or asymmetric kernels")
    rank = int(np.sum(lam > rcond * top))
    s = rank if subspace_dim is None else _check_int(subspace_dim, "subspace_dim", 1, m,
                                                     f"the number of landmarks m={m}")
    if s > rank:
        warnings.warn(f"subspace_dim={s} exceeds the numerical rank {rank} of K_mm (cut-off "
                      f"rcond={rcond:.3g}); using s={rank}", RuntimeWarning, stacklevel=4)
        s = rank
    A = V[:, :s] / np.sqrt(lam[:s])
    return NystromBasis(kernel=kernel, X_fit=X_fit, centers=centers, sketch=sketch,
                        indices=indices, Kmm=Kmm, A=A, eigenvalues=lam[:s].copy(), rank=rank)


# ------------------------------------------------------------- the small host solves (m×m, s×s)
def ridge_lla_weights(MF: np.ndarray, RF: np.ndarray, alpha: float) -> np.ndarray:
    """LLA's ridge weights ŵ = (AᵀMA + αI)⁻¹AᵀR (s × k), Li, Liu and Zhang (Nyström kernel
    machines), eq. (12), from the sums of the features (:func:`ridge_stats` with the basis):
    MF = AᵀMA = G_cWG_cᵀ (s × s) and RF = AᵀR = G_cW(y − ȳ) (s × k). Shared by every
    executor (the small solve stays on the host).

    AᵀMA is summed over the features' rows, never formed from M: A = UΛ^(−1/2) amplifies
    M's rounding by cond(K_mm), and with a small α or widely spread weights the weights so
    formed were far from the minimiser (2 % off the predictions at α = 1e-6, m = 150; 6.7×
    with weights from 1e-12 to 1e12).
    """
    return np.linalg.solve(NUMPY.add_diag_(np.array(MF, dtype=np.float64), alpha), RF)


def ridge_ncr_coef(MF: np.ndarray, RF: np.ndarray, A: np.ndarray, alpha: float) -> np.ndarray:
    """NCR's landmark coefficients β = (M + αK_mm)^† R (m × k), Li, Liu and Zhang (Nyström
    kernel machines), eq. (11), from the sums of the features of the full basis A (m × s,
    s the numerical rank of K_mm): MF = AᵀMA, RF = AᵀR (:func:`ridge_stats` with the basis).

    With K_mm = U_s Λ_s U_sᵀ and A = U_s Λ_s^(−1/2), M shares K_mm's null space (K_nm β = 0
    when β ∈ null(K_mm), for a PSD kernel), so (M + αK_mm)^† = A (AᵀMA + αI)⁻¹ Aᵀ: β = A ŵ with
    LLA's weights on the full basis (their Proposition 2). Formed from M itself, the m × m
    pseudo-inverse carried M's rounding amplified by cond(K_mm) (predictions 0.92 off the
    minimiser with weights spread over 1e-12..1e12); from the features it is LLA's accuracy.
    Shared by every executor.
    """
    return A @ ridge_lla_weights(MF, RF, alpha)


def rank_cut(sig, n: int, s: int, dtype):
    """The singular values of an n × s factor (G_cᵀ, F_c) kept by eq. (20)'s pseudo-inverse
    (Li, Liu and Zhang): σ > max(n, s)·eps·σ₁, eps of the data's ``dtype`` (a mask, on the
    executor of ``sig``)."""
    top = float(sig[0]) if sig.shape[0] else 0.0
    return sig > max(n, s) * float(np.finfo(dtype).eps) * top


def gsa_solve(sig: np.ndarray, Ut: np.ndarray, VtY: np.ndarray | None, alpha: float, *,
              woodbury: tuple | None = None, w_given: np.ndarray | None = None):
    """GSA through LLA's training, Li, Liu and Zhang (Nyström kernel machines), eq. (20), in
    the coordinates of the thin SVD G_cᵀ = V Σ Uᵀ (rank r, host arrays, r- and s-sized only).

    Written once for every executor: each reaches the SVD its own way (numpy and torch from a
    Householder QR of K_nm or the formed G_cᵀ, Dask from its merged TSQR) and lifts the dual
    coefficients α̂ = V z to the n samples itself. With the projected targets VᵀY:

    * eq. (20): ŵ = U Σ (Σ² + α)⁻¹ VᵀY and z = (Σ² + α)⁻¹ VᵀY, i.e. α̂ = V (Σ² + α)⁻¹ Vᵀ y_c,
      the dual solution (K̃_c + αI)⁻¹ y_c restricted to range(G_cᵀ);
    * ``woodbury=(GᵀG, Gᵀy)`` (s × s and s × k, G = G_c): problem (3) solved directly,
      α_W = (K̃_c + αI)⁻¹ y_c = (y_c − G_cᵀ t)/α with t = (G_cG_cᵀ + αI)⁻¹ G_c y_c (an s × s
      system), then projected: ŵ = G_c α_W and z = Vᵀα_W = (VᵀY − Σ Uᵀ t)/α;
    * given weights ŵ (``w_given``, another solver's): z = Σ⁻¹ Uᵀ ŵ.

    Parameters
    ----------
    sig : ndarray of shape (r,)
        The kept singular values (:func:`rank_cut`).
    Ut : ndarray of shape (r, s)
        Uᵀ, the kept right singular vectors as rows.
    VtY : ndarray of shape (r, k) or None
        Vᵀ y_c (not read with ``w_given``).
    alpha : float
    woodbury : (ndarray, ndarray), optional
    w_given : ndarray of shape (s, k), optional

    Returns
    -------
    w : ndarray of shape (s, k)
        ŵ.
    z : ndarray of shape (r, k)
        The dual coefficients in the basis V (α̂ = V z).
    """
    if w_given is not None:
        return w_given, (Ut @ w_given) / sig[:, None]
    assert VtY is not None, "gsa_solve: VtY is needed without w_given"
    if woodbury is not None:
        GtG, Gty = woodbury
        t = np.linalg.solve(NUMPY.add_diag_(np.array(GtG, dtype=np.float64), alpha), Gty)
        return (Gty - GtG @ t) / alpha, (VtY - sig[:, None] * (Ut @ t)) / alpha
    filt = VtY / (sig**2 + alpha)[:, None]
    return Ut.T @ (sig[:, None] * filt), filt


def pca_factors(mode: str, S: np.ndarray, Vt: np.ndarray, signs: np.ndarray, k: int, n: int,
                dtype):
    """Nyström kernel PCA from the SVD F_c = U Σ Vᵀ of the n × s centred features, written
    once for every executor (host arrays, s-sized only; U is the executor's).

    W = V_k (signs by the ``svd_flip`` rule on U, given as ``signs``), eigenvalues σ_k². The
    dual coefficients are U[:, keep] D: SPA's α = U_k Σ_k⁻¹, since the top eigenvectors of
    the n×n F_c F_cᵀ are the left singular vectors of F_c (the n×n matrix is never formed);
    GSA's α̂ = F_c^{†ᵀ}W = U Σ⁻¹ Vᵀ W (Li, Liu and Zhang, eq. (20)) with the cut-off
    σ > max(n, s)·eps·σ₁ (eps of the data's ``dtype``). The numpy and torch executors have U
    itself; the Dask executor reaches U[:, keep] = F_c V_keep Σ_keep⁻¹ lazily, chunk by chunk.

    Parameters
    ----------
    mode : {'lla', 'ncr', 'gsa', 'spa'}
    S : ndarray of shape (s,)
        The singular values of F_c, decreasing.
    Vt : ndarray of shape (s, s)
        Its right singular vectors (rows).
    signs : ndarray of shape (k,)
        The signs that flip U[:, :k] by the ``svd_flip`` rule.
    k : int
        Number of components.
    n : int
        Number of samples (GSA's cut-off).
    dtype : numpy dtype
        The data's dtype (GSA's cut-off).

    Returns
    -------
    eigenvalues : ndarray of shape (k,)
    W : ndarray of shape (s, k)
    keep : ndarray of int or None
        The columns of U in the dual coefficients (None for LLA / NCR: no dual).
    D : ndarray of shape (len(keep), k) or None
    """
    W = Vt[:k].T * signs
    lam = S[:k] ** 2
    if mode == "spa":
        return lam, W, np.arange(k), np.diag(signs / S[:k])
    if mode == "gsa":
        keep = np.flatnonzero(rank_cut(S, n, Vt.shape[1], dtype))
        return lam, W, keep, (Vt[keep] @ W) / S[keep, None]
    return lam, W, None, None


def row_step(m: int, k: int) -> int:
    """Rows per block of an n×m kernel block with k right-hand sides, within the library's
    ``working_memory`` (float64 work arrays): the blocks every executor streams K_nm by."""
    from ..config import get_config

    budget = float(get_config()["working_memory"]) * 2**20
    return int(max(1, budget // (8 * 4 * (m + k))))


@dataclass(frozen=True)
class RidgeStats:
    """One pass over K_nm for ridge regression (host, float64).

    Attributes
    ----------
    M : ndarray of shape (m, m), or (s, s) with a basis
        Σᵢ wᵢ(kᵢ − k̄)(kᵢ − k̄)ᵀ = K_mn W K_nm − Σw·k̄k̄ᵀ (the centred weighted Gram; uncentred,
        K_mn W K_nm, without intercept); with a basis A (:func:`ridge_stats`), the same sum
        of the features Aᵀ(kᵢ − k̄), i.e. AᵀMA formed without M.
    R : ndarray of shape (m, k), or (s, k) with a basis
        Σᵢ wᵢ(kᵢ − k̄)(yᵢ − ȳ)ᵀ (uncentred, K_mn W y, without intercept); with a basis, AᵀR.
    kbar : ndarray of shape (m,) or None
        The (weighted) mean row k̄ of K_nm; None without intercept.
    """

    M: np.ndarray
    R: np.ndarray
    kbar: np.ndarray | None


def _add(a: tuple, b: tuple) -> tuple:
    return tuple(x + y for x, y in zip(a, b))


def row_sums(src, parts, *rows, k: int = 1, merge=_add) -> tuple:
    """The reduction over the row blocks of K_nm of ``parts(K_block, *row_blocks)``, a tuple of
    small arrays, returned on the host in float64: their sum, or any associative ``merge``.

    ``rows`` are n-row arrays (or None) sliced like the block; ``parts`` may overwrite the
    block of K_nm (a fresh array, :meth:`LandmarkRows.knm`). The source's own ``fold`` runs
    when it has one: the Dask executor's, a tree reduction over its chunks in the cluster.
    Otherwise the reduction is a loop over row blocks on the executor (numpy, torch), the host
    rows moved there first. ``parts`` and ``merge`` are written once for every executor, with
    the array operators they share.

    Parameters
    ----------
    src : KnmSource
        Rows of K_nm (:class:`~asymkern.nystrom._algebra.KnmSource`).
    parts : callable
        ``parts(Kb, *row_blocks) -> tuple`` of arrays (or numbers) of fixed shapes.
    *rows : ndarray of shape (n, ...) or None
    k : int, default 1
        Right-hand sides per block (the block size).
    merge : callable, default: elementwise sum
        ``merge(a, b) -> tuple`` of two blocks' (or merged) tuples.

    Returns
    -------
    tuple of ndarray
    """
    fold = getattr(src, "fold", None)
    if fold is not None:
        return fold(parts, *rows, merge=merge)
    ops = src.ops
    n, m = src.shape
    like = src.knm(0, 1)  # a float64 array of the executor (the device of the sums)
    rows_d = [None if r is None else ops.from_host(r, like, np.float64) for r in rows]
    step = src.step(k) if hasattr(src, "step") else row_step(m, k)
    total: tuple = ()
    for a in range(0, n, step):
        out = tuple(parts(src.knm(a, a + step), *(None if r is None else r[a:a + step]
                                                  for r in rows_d)))
        total = merge(total, out) if total else out
    return tuple(np.asarray(t if isinstance(t, numbers.Number) else ops.to_host(t),
                            dtype=np.float64) for t in total)


def _ridge_parts(Kb, Yb, wb):
    """One block's K_bᵀW_bK_b and K_bᵀW_bY_b (wb None: unit weights)."""
    WK = Kb if wb is None else wb[:, None] * Kb
    return Kb.T @ WK, WK.T @ Yb


def _centred_parts(Kb, Yb, wb):
    """One block's weight W_b = Σ w, weighted mean row k̄_b, and its sums centred on k̄_b:
    Σ w(k − k̄_b)(k − k̄_b)ᵀ, Σ w(k − k̄_b)yᵀ and Σ w y (wb None: unit weights). Kb is centred in
    place (a fresh block: a new n_b × m array per block costs a third more time)."""
    Wb = float(Kb.shape[0]) if wb is None else wb.sum()
    kb = (Kb.sum(0) if wb is None else wb @ Kb) / (Wb + (Wb == 0))  # 0 for a zero weight
    Kb -= kb
    WK = Kb if wb is None else wb[:, None] * Kb
    return Wb, kb, Kb.T @ WK, WK.T @ Yb, (Yb.sum(0) if wb is None else wb @ Yb)


def _merge_centred(a: tuple, b: tuple) -> tuple:
    """The sums of :func:`_centred_parts` of two sets of rows, centred on their joint mean:
    the pairwise update of Chan, Golub and LeVeque (1983), M = M_a + M_b + (W_aW_b/W) d dᵀ with
    d = k̄_a − k̄_b, and R = R_a + R_b + (k̄_a − k̄) s_aᵀ + (k̄_b − k̄) s_bᵀ."""
    Wa, ka, Ma, Ra, sa = a
    Wb, kb, Mb, Rb, sb = b
    W = Wa + Wb
    Ws = W + (W == 0)
    k = (Wa * ka + Wb * kb) / Ws
    d = ka - kb
    M = Ma + Mb + (Wa * Wb / Ws) * (d[:, None] * d[None, :])
    return W, k, M, Ra + Rb + (ka - k)[:, None] * sa + (kb - k)[:, None] * sb, sa + sb


class _FeatureParts:
    """The ridge sums of one row block of K_nm taken over its features F_b = (K_b − k̄_b)A
    (s columns) instead of its m kernel columns: ``(W_b, k̄_b, k̄_bA, F_bᵀW_bF_b, F_bᵀW_bY_b,
    Σ w y)`` centred (:func:`_centred_parts`'s sums of the features, with the block's mean
    kernel row k̄_b kept for the intercept), or ``(F_bᵀW_bF_b, F_bᵀW_bY_b)`` uncentred.

    A callable object (not a closure), so that the Dask executor can ship it to the workers
    with A. A is float64 on the executor of the blocks (a torch tensor on the torch one)."""

    def __init__(self, A, center: bool):
        self.A = A
        self.center = center

    def __call__(self, Kb, Yb, wb):
        A = self.A
        if self.center:
            Wb = float(Kb.shape[0]) if wb is None else wb.sum()
            kb = (Kb.sum(0) if wb is None else wb @ Kb) / (Wb + (Wb == 0))
            Kb -= kb
            Fb = Kb @ A
            WF = Fb if wb is None else wb[:, None] * Fb
            return (Wb, kb, kb @ A, Fb.T @ WF, WF.T @ Yb,
                    (Yb.sum(0) if wb is None else wb @ Yb))
        Fb = Kb @ A
        WF = Fb if wb is None else wb[:, None] * Fb
        return Fb.T @ WF, WF.T @ Yb


def _merge_centred_features(a: tuple, b: tuple) -> tuple:
    """:func:`_merge_centred` of two :class:`_FeatureParts` tuples (on the features' sums and
    means), with the mean kernel rows k̄ merged alongside (weighted by W)."""
    W, kf, M, R, s = _merge_centred(a[:1] + a[2:], b[:1] + b[2:])
    k = (a[0] * a[1] + b[0] * b[1]) / (W + (W == 0))
    return W, k, kf, M, R, s


def ridge_stats(src, Yc, sw, center: bool, basis=None) -> RidgeStats:
    """M, R and k̄ of :class:`RidgeStats`: one pass over the row blocks of K_nm
    (:func:`row_sums`, on every executor).

    With ``center`` the sums are centred block by block and merged by the pairwise update of
    Chan, Golub and LeVeque (:func:`_merge_centred`), never as K_mn W K_nm − Σw·k̄k̄ᵀ: when the
    kernel varies little over the data (a wide bandwidth) that difference cancels most of its
    digits (the one-pass variance formula), and the ridge solution lost up to 5 digits.

    Parameters
    ----------
    src : KnmSource
        Rows of K_nm (:class:`~asymkern.nystrom._algebra.KnmSource`).
    Yc : ndarray of shape (n, k)
        The centred targets y − ȳ (host; a dask array chunked like X on Dask).
    sw : ndarray of shape (n,) or None
        Sample weights (None: unit weights, no product formed).
    center : bool
        Whether to centre (``fit_intercept``).
    """
    if basis is not None:
        s_cols = int(basis.shape[1])
        A = np.asarray(basis, dtype=np.float64)
        if getattr(src, "fold", None) is None:  # blocks on the executor: A moved there once
            A = src.ops.from_host(A, src.knm(0, 1), np.float64)
        parts = _FeatureParts(A, center)
        k = Yc.shape[1] + s_cols  # the features' block beside the kernel block
        if center:
            _, kbar, _, M, R, _ = row_sums(src, parts, Yc, sw, k=k,
                                           merge=_merge_centred_features)
            return RidgeStats(M, R, kbar)
        M, R = row_sums(src, parts, Yc, sw, k=k)
        return RidgeStats(M, R, None)
    if center:
        _, kbar, M, R, _ = row_sums(src, _centred_parts, Yc, sw, k=Yc.shape[1],
                                    merge=_merge_centred)
        return RidgeStats(M, R, kbar)
    M, R = row_sums(src, _ridge_parts, Yc, sw, k=Yc.shape[1])
    return RidgeStats(M, R, None)
