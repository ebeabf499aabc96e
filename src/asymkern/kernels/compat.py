"""Dimensionality-compatibility matrices (Tao et al. (2024), Remark 2.3 and Algorithm 1, App. D).

A data matrix A ∈ R^{N×M} is read as two sets: its rows x_i ∈ R^M (N of them) and its columns
z_j ∈ R^N (M of them). A kernel κ(x, z) needs equal dimensions, so one side is mapped:
if M > N, x ↦ C_xᵀ x with C_x ∈ R^{M×N}; if N > M, z ↦ C_zᵀ z with C_z ∈ R^{N×M}; if N = M, C = I.

Methods: ``'pinv'`` (a0, C_x = ((XXᵀ)^† X)ᵀ), ``'pca'`` (a1, C_x = argmin ‖X − X C Cᵀ‖_F over
orthonormal C: the leading right singular vectors, no centring, as printed), ``'polar'`` (a1c,
a1 corrected so that both sets end up in the same coordinates: C_x = V Wᵀ, see
:func:`polar_factor`), ``'random'`` (a2, C_x = randn(M, N)), or a user-given matrix (e.g.
learned end to end, a3).

Notation used below and by the Dask executor (:mod:`asymkern._dask.compat`): S (small × big) is
the set that gets mapped, one sample per row (S = A for side 'x', S = Aᵀ for side 'z'), and
T = Sᵀ (big × small) — A itself for side 'z', Aᵀ for side 'x'. Then C has shape (big, small), the
mapped set is S C = Tᵀ C (small × small) and every method is a function of T:

* a2: C is drawn by :func:`random_rows`, block by block from ``(seed, block index)``, so any
  partition of its rows (any chunking of T) gives the same C;
* a1: T = Q R, R = U_R Σ Wᵀ (:func:`r_factor`, :func:`pca_factor`), C = Q U_R = T W Σ⁺ and
  S C = W Σ; the sign of each column of W is fixed (its largest-``|.|`` entry positive,
  :func:`fix_signs`), so the result does not depend on the LAPACK build;
* a1c: C = Q U_R Wᵀ = T W Σ⁺ Wᵀ and S C = W Σ Wᵀ (:func:`polar_factor`; no sign convention
  needed: the signs of W cancel);
* a0: C = T (TᵀT)^† = (Sᵀ)^† (A^† for side 'x', (Aᵀ)^† for side 'z'), from the same QR and
  SVD of R as a1 and never from the Gram matrix TᵀT: (TᵀT)^† = W (Σ⁺)² Wᵀ, C = Q U_R Σ⁺ Wᵀ and
  S C = W_r W_rᵀ, the orthogonal projector onto the kept right singular directions, with the
  rank rule of a1 (:func:`pinv_matrix` in memory, :func:`pinv_factor` where Q is not formed).
  Forming TᵀT squares the condition number (its rounding errors are eps·σ_1², and a cut-off on
  its eigenvalues is a cut-off on σ²), so the error in C would grow like cond(T)²·eps and
  directions that the rank rule of a1 keeps would be dropped from cond(T) ≈ 10⁸ on; from the QR
  the error is that of ``np.linalg.pinv``, of order cond(T)·eps.

The helpers operate on one block of rows of T at a time (numpy or CSR), so the in-memory fit here
and the Dask tasks run the same code (except a0 in memory, :func:`pinv_matrix`, which needs Q).

References
----------
.. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
   "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
   Nyström method", ICML 2024, Remark 2.3, Algorithm 1 and App. D.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import scipy.sparse as sp

from .._random import BLOCK_ROWS, normal_rows, seed_from
from .._validation import as_data
from ..config import check_memory
from .base import _dense

_ALIASES = {"a0": "pinv", "a1": "pca", "a1c": "polar", "a2": "random", "a3": "learnable"}

#: Rows of C per block of the a2 generator (:data:`asymkern._random.BLOCK_ROWS`): block b
#: (rows [b·B, (b+1)·B)) is drawn from ``numpy.random.default_rng([seed, b])`` alone.
RANDOM_BLOCK_ROWS = BLOCK_ROWS

#: The integer seed of the a2 generator from ``random_state`` (:func:`asymkern._random.seed_from`).
compat_seed = seed_from

#: Rows [start, stop) of the a2 compatibility matrix C = randn(big, n_cols) (App. D, a2), the
#: same rows whichever blocks are requested (:func:`asymkern._random.normal_rows`).
random_rows = normal_rows


def random_products(T, seed: int, start: int, dtype) -> np.ndarray:
    """Tᵀ C[start:start + len(T)] for one block of rows of T with a2's C, block by block of C.

    Only (:data:`RANDOM_BLOCK_ROWS` × small) of C exists at a time (never the whole C).
    """
    n, k = T.shape
    out = np.zeros((k, k), dtype=dtype)
    B = RANDOM_BLOCK_ROWS
    i = 0
    while i < n:
        j = min(n, (((start + i) // B) + 1) * B - start)
        C = random_rows(seed, start + i, start + j, k, dtype)
        out += _dense(T[i:j].T @ C)
        i = j
    return out


def matrix_products(T, C) -> np.ndarray:
    """Tᵀ C for one block of rows of T and the matching rows of a given C."""
    return _dense(T.T @ C)


def _qr_r(A) -> np.ndarray:
    """The R factor of A (``np.linalg.qr(A, mode="r")``)."""
    # mode="r" returns the bare R array; numpy's stubs type every mode as a QRResult
    return cast(np.ndarray, np.linalg.qr(A, mode="r"))


def r_factor(T, R=None) -> np.ndarray:
    """The R of a QR factorisation of [R; T] (float64), without Q (one TSQR step).

    A dense T is factorised in one LAPACK call. A CSR T is densified max(4k, 1024) rows at a
    time (k = its column count), so its dense temporary is at most (5k + 1024) × k.
    """
    k = T.shape[1]
    step = max(4 * k, 1024) if sp.issparse(T) else max(T.shape[0], 1)  # dense: one block
    for i in range(0, T.shape[0], step):
        block = np.asarray(_dense(T[i:i + step]), dtype=np.float64)
        R = _qr_r(block if R is None else np.vstack([R, block]))
    return np.zeros((0, k)) if R is None else R


def stack_r(R1, R2) -> np.ndarray:
    """R of [R1; R2] (the combine step of the TSQR tree)."""
    return _qr_r(np.vstack([R1, R2]))


def fix_signs(W: np.ndarray) -> np.ndarray:
    """±1 per column of W making the largest-``|.|`` entry of each column positive."""
    W = np.asarray(W)
    if W.shape[0] == 0:
        return np.ones(W.shape[1])
    idx = np.argmax(np.abs(W), axis=0)
    return np.where(W[idx, np.arange(W.shape[1])] < 0, -1.0, 1.0)


def _sigma_pinv(s: np.ndarray, size: int) -> np.ndarray:
    """Σ⁺ of the singular values ``s`` (descending): 1/σ, and 0 for σ ≤ size·eps·σ_1.

    The rank rule of a1, a1c and a0, the one of ``np.linalg.pinv(·, rtol=None)``.
    """
    tol = (s[0] if s.size else 0.0) * size * np.finfo(np.float64).eps
    return np.divide(1.0, s, out=np.zeros_like(s), where=s > tol)


def pca_factor(R: np.ndarray, k: int, big: int):
    """a1 from the R of T = QR: (W, σ, W Σ⁺), with R = U_R Σ Wᵀ and fixed signs.

    S C = W Σ is the mapped set and C = T (W Σ⁺) (= Q U_R, orthonormal on the range of T);
    singular values below max(big, k)·eps·σ_1 count as zero (their columns of C are zero).
    """
    R = np.asarray(R, dtype=np.float64)
    if R.shape[0] < k:  # fewer rows than columns: pad (the QR of a short T)
        R = np.vstack([R, np.zeros((k - R.shape[0], k))])
    _, s, Wt = np.linalg.svd(R)
    W = Wt.T
    W = W * fix_signs(W)
    return W, s, W * _sigma_pinv(s, max(big, k))


def polar_factor(R: np.ndarray, k: int, big: int):
    """a1c (a1 corrected) from the R of T = QR: (P, S C) with C = T P = V Wᵀ and S C = W Σ Wᵀ.

    Derivation (side 'x', M > N; side 'z' is the same with A replaced by Aᵀ). Write the thin SVD
    A = W Σ Vᵀ (W ∈ R^{N×N} orthogonal, V ∈ R^{M×N} orthonormal columns); T = Aᵀ = V Σ Wᵀ.
    a1 as printed takes C = V, so a row x_i ∈ R^M is mapped to Vᵀ x_i = Σ W[i, :]ᵀ: its
    coordinates are indexed by the singular component k. The other set, the columns
    z_j = A[:, j] ∈ R^N, is kept as is: its coordinates are indexed by the sample i
    (z_j[i] = A[i, j]). κ(Cᵀx_i, z_j) therefore compares component k of one vector with sample k
    of the other, which are unrelated (permuting the samples permutes the coordinates of every
    z_j but not those of Cᵀx_i).

    The correction expresses the mapped x in the coordinates z already has: a coordinate of
    R^N, the sample index, is reached from the component coordinates by the orthogonal change
    of basis W (A = W Σ Vᵀ: component k of the column space is the vector W[:, k] of sample
    coordinates). Hence x_i ↦ W Vᵀ x_i, i.e.

        C = V Wᵀ = T W Σ⁺ Wᵀ  (P = W Σ⁺ Wᵀ),   S C = A C = W Σ Wᵀ = (A Aᵀ)^{1/2}.

    Equivalently C is the orthonormal polar factor of T (T = (V Wᵀ)(W Σ Wᵀ)), the matrix with
    orthonormal columns closest to T in Frobenius norm (orthogonal Procrustes): column i of C is
    the orthonormalised direction of sample x_i, so coordinate i of Cᵀx is the component of x
    along sample i, the index z's coordinate i also refers to. Because W is orthogonal,
    ‖W Vᵀ x − z‖ = ‖Vᵀ x − Wᵀ z‖: mapping x by W Vᵀ and keeping z equals mapping both sides into
    the component coordinates (x by Vᵀ, z by Wᵀ) for every kernel of distances or inner
    products. Defining property (tested): for any permutation Π of the samples, A ↦ Π A gives
    C ↦ C Πᵀ, so the mapped rows become Π (S C) Πᵀ — their coordinates permute with those of z,
    and the kernel matrix of Π A is Π times that of A (rows permuted, columns unchanged). C does
    not depend on the signs or, for repeated singular values, the basis of the singular
    vectors; for a rank-deficient T it is the partial isometry V_r W_rᵀ (singular values below
    max(big, k)·eps·σ_1 count as zero).

    Parameters
    ----------
    R : ndarray of shape (k, k) or (n, k) with n < k
        The R factor of T = QR (:func:`r_factor`).
    k : int
        The common dimension (columns of T).
    big : int
        The row count of T (for the rank tolerance).

    Returns
    -------
    P : ndarray of shape (k, k)
        W Σ⁺ Wᵀ, so that C = T P.
    mapped : ndarray of shape (k, k)
        S C = W Σ Wᵀ, the mapped set (symmetric positive semidefinite).

    See Also
    --------
    pca_factor : a1 as printed (C = V).
    CompatibilityTransform : ``method='polar'`` (alias ``'a1c'``) uses this factor.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, Remark 2.3 and App. D (a1).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels.compat import polar_factor, r_factor
    >>> A = np.random.default_rng(0).standard_normal((3, 5))      # N = 3 rows in R^5
    >>> P, mapped = polar_factor(r_factor(A.T), 3, 5)
    >>> C = A.T @ P                                                # (5, 3), orthonormal columns
    >>> bool(np.allclose(C.T @ C, np.eye(3))), bool(np.allclose(A @ C, mapped))
    (True, True)
    """
    W, s, Ws = pca_factor(R, k, big)
    return Ws @ W.T, (W * s) @ W.T


def pinv_factor(R: np.ndarray, k: int, big: int):
    """a0 from the R of T = QR: (P, S C) with P = (TᵀT)^† = W (Σ⁺)² Wᵀ and S C = W_r W_rᵀ.

    a0 (Tao et al. (2024), App. D) is C_x = ((X Xᵀ)^† X)ᵀ = X^†: with the notation of this module,
    C = T (TᵀT)^† = (Sᵀ)^† (A^† for side 'x', (Aᵀ)^† for side 'z'). The Gram matrix TᵀT is never
    formed: with R = U_R Σ Wᵀ (the factors of a1, :func:`pca_factor`) TᵀT = RᵀR = W Σ² Wᵀ, so

        P = W (Σ⁺)² Wᵀ,   C = T P = Q U_R Σ⁺ Wᵀ,   S C = Tᵀ T P = W_r W_rᵀ,

    W_r the columns of W whose singular value is kept. Singular values below
    max(big, k)·eps·σ_1 count as zero, the rank rule of a1 and of ``np.linalg.pinv(·, rtol=None)``
    applied to σ (not to σ², as a pseudo-inverse of TᵀT would). The error of C = T P is then of
    order cond(T)·eps relative to ``np.linalg.pinv``, instead of the cond(T)²·eps of a
    pseudo-inverse of the Gram matrix, whose cut-off on σ² (NumPy's default rcond 1e-15) also
    drops every direction with σ_i/σ_1 below about 3·10⁻⁸. The mapped set is exact (formed from
    W, not as Tᵀ C). C = T P itself is not what the library uses to map samples: the rounding of
    the product T P, of order eps·‖T‖·‖P‖ = eps·cond(T)²/σ_1 in arbitrary directions, makes the
    residual ‖Tᵀ C − W_r W_rᵀ‖ of order cond(T)²·eps. :func:`pinv_matrix` forms C from Q with
    residual cond(T)·eps; the Dask executor (:mod:`asymkern._dask.compat`), where Q is not
    formed, maps new samples by the corrected seminormal equations with the factors of
    :func:`pinv_svd`.

    Parameters
    ----------
    R : ndarray of shape (k, k) or (n, k) with n < k
        The R factor of T = QR (:func:`r_factor`, or the TSQR tree on Dask).
    k : int
        The common dimension (columns of T).
    big : int
        The row count of T (for the rank tolerance).

    Returns
    -------
    P : ndarray of shape (k, k)
        (TᵀT)^† = W (Σ⁺)² Wᵀ, so that C = T P.
    mapped : ndarray of shape (k, k)
        S C = W_r W_rᵀ, the mapped set (the orthogonal projector onto the column space of S).

    See Also
    --------
    pinv_matrix : a0's C in memory, from Q and the same SVD of R.
    pinv_svd : W and Σ⁺ (P unformed), as the Dask executor applies them.
    pca_factor : a1, from the same R.
    CompatibilityTransform : ``method='pinv'`` (alias ``'a0'``): :func:`pinv_matrix` in memory,
        this factor on Dask (:mod:`asymkern._dask.compat`).

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, Remark 2.3, Algorithm 1 and App. D (a0).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels.compat import pinv_factor, r_factor
    >>> A = np.random.default_rng(0).standard_normal((3, 5))      # N = 3 rows in R^5
    >>> P, mapped = pinv_factor(r_factor(A.T), 3, 5)
    >>> C = A.T @ P                                                # (5, 3): C = A^†
    >>> bool(np.allclose(C, np.linalg.pinv(A))), bool(np.allclose(mapped, np.eye(3)))
    (True, True)
    """
    W, inv = pinv_svd(R, k, big)
    return (W * inv**2) @ W.T, (W * (inv > 0)) @ W.T


def pinv_svd(R: np.ndarray, k: int, big: int) -> tuple[np.ndarray, np.ndarray]:
    """a0's factors from the R of T = QR: (W, Σ⁺), so that (TᵀT)^† = W (Σ⁺)² Wᵀ.

    R = U_R Σ Wᵀ as in :func:`pca_factor` (signs of W fixed), Σ⁺ with the rank rule of a1 and of
    :func:`pinv_factor` (σ ≤ max(big, k)·eps·σ_1 gives 0). The Dask executor applies
    g ↦ ((g W) Σ⁺) Σ⁺ Wᵀ with these factors instead of g ↦ g P (Tao et al. (2024), App. D, a0):
    the rounding of the explicit P = W (Σ⁺)² Wᵀ, of order eps·‖P‖ in every direction, spreads
    the large components of g = y T (of order σ_1²) into the smallest directions and would stop
    the corrected seminormal equations (:mod:`asymkern._dask.compat`) from converging above
    cond(T) ≈ 10⁸.

    Parameters
    ----------
    R : ndarray of shape (k, k) or (n, k) with n < k
        The R factor of T = QR (:func:`r_factor`, or the TSQR tree on Dask).
    k : int
        The common dimension (columns of T).
    big : int
        The row count of T (for the rank tolerance).

    Returns
    -------
    W : ndarray of shape (k, k)
        The right singular vectors of R (and of T), signs fixed (:func:`fix_signs`).
    inv : ndarray of shape (k,)
        1/σ for the kept singular values, 0 for the dropped ones (descending σ).

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, Remark 2.3 and App. D (a0).
    """
    W, s, _ = pca_factor(R, k, big)
    return W, _sigma_pinv(s, max(big, k))


def pinv_right(R: np.ndarray, big: int) -> np.ndarray:
    """F = U_R Σ⁺ Wᵀ from the R of T = QR (R = U_R Σ Wᵀ), so that a0's C = T (TᵀT)^† = Q F.

    The rank rule is that of :func:`pinv_factor` (σ ≤ max(big, k)·eps·σ_1 gives 0). Used with an
    explicit Q by :func:`pinv_matrix` and by the Dask executor's dense C (a TSQR that keeps its
    Q factors, :meth:`asymkern._dask.compat.DaskCompatibility.to_in_memory`).

    Parameters
    ----------
    R : ndarray of shape (h, k), h ≤ k
        The R factor of T = QR.
    big : int
        The row count of T (for the rank tolerance).

    Returns
    -------
    ndarray of shape (h, k)
        U_R Σ⁺ Wᵀ.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, Remark 2.3 and App. D (a0).
    """
    R = np.asarray(R, dtype=np.float64)
    U, s, Wt = np.linalg.svd(R)
    return (U * _sigma_pinv(s, max(big, R.shape[1]))) @ Wt[:s.size]


def pinv_matrix(T) -> np.ndarray:
    """a0's C = T (TᵀT)^† = (Tᵀ)^† (float64, dense) from the thin QR of T: C = Q U_R Σ⁺ Wᵀ.

    T = QR (Householder, ``np.linalg.qr``) and R = U_R Σ Wᵀ, with the rank rule of a1 and of
    :func:`pinv_factor` (singular values below max(big, k)·eps·σ_1 count as zero). The computed
    C is the exact pseudo-inverse of a matrix within eps·‖T‖ of T, as ``np.linalg.pinv`` gives:
    its error is of order cond(T)·eps and so is the residual ‖Tᵀ C − W_r W_rᵀ‖ (the mapped set
    S C = Tᵀ C of the in-memory fit). C = T (W (Σ⁺)² Wᵀ) (:func:`pinv_factor`) has the same
    forward error but a residual of order cond(T)²·eps, and the Gram route T (TᵀT)^† an error of
    order cond(T)²·eps. A CSR T is densified (big × small, the size of C).

    Parameters
    ----------
    T : ndarray or sparse matrix of shape (big, k), big ≥ k
        The mapped set as columns (Aᵀ for side 'x', A for side 'z').

    Returns
    -------
    ndarray of shape (big, k)
        C, so that S C = Tᵀ C ≈ W_r W_rᵀ.

    See Also
    --------
    pinv_factor : (TᵀT)^† and the mapped set from R alone (Q not formed).

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, Remark 2.3, Algorithm 1 and App. D (a0).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels.compat import pinv_matrix
    >>> A = np.random.default_rng(0).standard_normal((3, 5))      # N = 3 rows in R^5
    >>> C = pinv_matrix(A.T)                                       # (5, 3): C = A^†
    >>> bool(np.allclose(C, np.linalg.pinv(A))), bool(np.allclose(A @ C, np.eye(3)))
    (True, True)
    """
    Q, R = np.linalg.qr(np.asarray(_dense(T), dtype=np.float64))
    return Q @ pinv_right(R, T.shape[0])


class CompatibilityTransform:
    """Fit a compatibility matrix for a data matrix A and map rows/columns into one dimension.

    A data matrix A ∈ R^{N×M} gives two sets, its rows x_i ∈ R^M and its columns
    z_j ∈ R^N. A kernel κ(x, z) needs equal dimensions, so the larger side is mapped by a
    compatibility matrix (Tao et al. (2024), Remark 2.3 and Algorithm 1, App. D): if M > N,
    x ↦ C_xᵀ x with C_x ∈ R^{M×N}; if N > M, z ↦ C_zᵀ z with C_z ∈ R^{N×M}; if N = M, no
    map is needed.

    Parameters
    ----------
    method : {'pca', 'polar', 'pinv', 'random'} or ndarray, default 'pca'
        ``'pinv'`` (a0: C_x = ((AAᵀ)^† A)ᵀ), ``'pca'`` (a1: the leading right singular
        vectors, no centring, as printed), ``'polar'`` (a1c: a1 corrected so that the mapped
        set is in the same coordinates as the other set, C_x = V Wᵀ for A = W Σ Vᵀ; derivation
        in :func:`polar_factor`), ``'random'`` (a2: C = randn), or a user-given matrix of
        shape (max(N, M), min(N, M)) (e.g. learned end to end, a3). The aliases
        ``'a0'``, ``'a1'``, ``'a1c'``, ``'a2'`` are accepted; ``'a3'`` raises, pointing at
        :func:`asymkern.experiments.learnable_compat`.
    random_state : int, numpy Generator or None, default None
        Seed of the a2 matrix.

    Attributes
    ----------
    side_ : {'x', 'z', 'none'}
        Which set is mapped.
    C_ : ndarray of shape (max(N, M), min(N, M)) or None
        The compatibility matrix, in the data dtype (None when ``side_ == 'none'``).
    n_rows_, n_cols_ : int
        N and M.
    dim_ : int
        The common dimension min(N, M).
    seed_ : int or None
        The integer seed of a2, else None.

    See Also
    --------
    asymkern.kernels.KernelMatrix : The kernel matrix of the mapped sets.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, Remark 2.3 and App. D.

    Notes
    -----
    a2 draws C with :func:`random_rows` (blocks of rows seeded by ``(seed, block)``), the same
    generator as the Dask executor, so ``random_state`` gives the same C on numpy and dask
    inputs whatever the chunking. These draws differ from those of the first development snapshots
    (``RandomState(random_state).standard_normal``). a1 fixes the sign of every singular vector
    (the largest-``|.|`` entry of each column of the small factor W positive, :func:`fix_signs`),
    so its C does not depend on the LAPACK build. a0 is computed from the thin QR of the mapped
    set and the SVD of its R, as a1 (:func:`pinv_matrix`), never from the Gram matrix A Aᵀ or
    Aᵀ A: its C and its mapped set match ``np.linalg.pinv`` to about cond(A)·eps, with the rank
    rule of a1 (singular values below max(N, M)·eps·σ_1 count as zero).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import CompatibilityTransform
    >>> A = np.random.default_rng(0).standard_normal((4, 6))   # N = 4 rows in R^6
    >>> ct = CompatibilityTransform("pca").fit(A)
    >>> ct.side_, ct.C_.shape, ct.dim_
    ('x', (6, 4), 4)
    >>> Xm, Zm = ct.fit_transform(A)       # rows mapped to R^4; columns (in R^4) kept
    >>> Xm.shape, Zm.shape
    ((4, 4), (6, 4))
    """

    def __init__(self, method="pca", random_state=None):
        self.method = method
        self.random_state = random_state

    def _method(self) -> str | np.ndarray:
        m = self.method
        if isinstance(m, np.ndarray):
            return m
        if not isinstance(m, str):
            raise TypeError(
                "compat must be one of 'pinv'/'a0', 'pca'/'a1', 'polar'/'a1c', 'random'/'a2' or "
                "a matrix, "
                f"got {m!r}"
            )
        m = _ALIASES.get(m.lower(), m.lower())
        if m == "learnable":
            raise ValueError(
                "compat='a3' (learnable) is trained end to end with a downstream head: use "
                "asymkern.experiments.learnable_compat (needs the torch extra) and pass the "
                "learned matrix as compat=C"
            )
        if m not in ("pinv", "pca", "polar", "random"):
            raise ValueError(
                f"unknown compat {self.method!r}; expected 'pinv', 'pca', 'polar', 'random'"
            )
        return m

    @staticmethod
    def check_matrix(C, big: int, small: int, N: int, M: int) -> np.ndarray:
        """Validate a user-given compatibility matrix (shape (big, small), finite).

        Parameters
        ----------
        C : array-like
            The matrix.
        big, small : int
            The expected shape, (max(N, M), min(N, M)).
        N, M : int
            The data matrix shape, for the error message.

        Returns
        -------
        ndarray of shape (big, small)
            ``C`` as a float array.

        Raises
        ------
        ValueError
            If the shape is wrong or ``C`` holds NaN or infinity.
        """
        C = np.asarray(C, dtype=float)
        if C.shape != (big, small):
            raise ValueError(
                f"compat matrix has shape {C.shape}; expected ({big}, {small}) for a "
                f"{N}x{M} data matrix"
            )
        if not np.all(np.isfinite(C)):
            raise ValueError("compat matrix contains NaN or infinity")
        return C

    def fit(self, A):
        """Fit the compatibility matrix of a data matrix.

        Parameters
        ----------
        A : array-like or sparse matrix of shape (N, M)
            The data matrix: rows x_i ∈ R^M, columns z_j ∈ R^N.

        Returns
        -------
        CompatibilityTransform
            The fitted transform.

        Raises
        ------
        ValueError
            If the method is unknown or ``'a3'``, or a given matrix has the wrong shape.
        TypeError
            If ``method`` is neither a string nor an array.
        MemoryBudgetError
            If computing the matrix would exceed ``max_dense_memory`` (checked before).
        """
        A = as_data(A, "X", allow_sparse=True)
        N, M = A.shape
        self.n_rows_, self.n_cols_ = N, M
        self.dim_ = min(N, M)
        self.seed_ = None
        method = self._method()
        if N == M and not isinstance(method, np.ndarray):
            self.side_, self.C_ = "none", None
            return self
        self.side_ = "x" if M > N else "z"
        # T: the mapped set as columns (big × small): Aᵀ for side 'x', A for side 'z'
        T = A.T if self.side_ == "x" else A
        if sp.issparse(T):
            T = T.tocsr()
        big, small = T.shape  # C has shape (big, small)
        # peaks traced: T in float64, Q, R, C, SVDs (numpy 2.5's SVD takes ~1.3× numpy 2.2's)
        if not isinstance(method, np.ndarray):
            check_memory(8.0 * (3.4 * big * small + 6.1 * small * small),
                         f"CompatibilityTransform({method!r}) of a {N}×{M} matrix",
                         "a precomputed compatibility matrix or compat='random'",
                         detail=f"float64 {big}×{small} copies of the mapped side and "
                                f"{small}×{small} factors")
        if isinstance(method, np.ndarray):
            C = self.check_matrix(method, big, small, N, M)
        elif method == "random":
            self.seed_ = compat_seed(self.random_state)
            C = random_rows(self.seed_, 0, big, small)
        elif method == "pinv":  # a0: ((S Sᵀ)^† S)ᵀ = T (TᵀT)^† = Q U_R Σ⁺ Wᵀ, never via TᵀT
            C = pinv_matrix(T)
        else:  # C = T P, P from the R of T = QR
            R = r_factor(T)
            P = (pca_factor(R, small, big)[2] if method == "pca"
                 else polar_factor(R, small, big)[0])
            C = _dense(T @ P) if sp.issparse(T) else np.asarray(T, dtype=np.float64) @ P
        self.C_ = C.astype(A.dtype, copy=False)
        return self

    def transform_x(self, Xrows):
        """Map row samples x ∈ R^M into the common dimension.

        Parameters
        ----------
        Xrows : ndarray or sparse matrix of shape (k, M)
            Row samples.

        Returns
        -------
        ndarray of shape (k, min(N, M)), or ``Xrows`` unchanged
            ``Xrows @ C_`` when the rows are the mapped side, else ``Xrows`` itself.

        Raises
        ------
        RuntimeError
            If the transform is not fitted.
        ValueError
            If ``Xrows`` is not a finite 2-D array with M columns (on either side: rows that
            are passed through unchanged must have the common dimension too).
        """
        return self._map(Xrows, "x")

    def transform_z(self, Zrows):
        """Map column samples z ∈ R^N (given as rows, i.e. Aᵀ) into the common dimension.

        Parameters
        ----------
        Zrows : ndarray or sparse matrix of shape (k, N)
            Column samples, one per row.

        Returns
        -------
        ndarray of shape (k, min(N, M)), or ``Zrows`` unchanged
            ``Zrows @ C_`` when the columns are the mapped side, else ``Zrows`` itself.

        Raises
        ------
        RuntimeError
            If the transform is not fitted.
        ValueError
            If ``Zrows`` is not a finite 2-D array with N columns (on either side: rows that
            are passed through unchanged must have the common dimension too).
        """
        return self._map(Zrows, "z")

    def _map(self, rows, side: str):
        """``rows @ C_`` (dense) when ``side`` is the mapped side, else ``rows`` itself.

        The rows are validated first (finite, 2-D, the width of their set: M for row samples,
        N for column samples), so that NaN, a 1-D array or rows of the wrong dimension raise
        an error naming the argument instead of a NaN result or rows passed through unmapped.
        """
        if not hasattr(self, "side_"):
            raise RuntimeError("CompatibilityTransform is not fitted; call fit(A) first")
        name = "Xrows" if side == "x" else "Zrows"
        checked = as_data(rows, name, allow_sparse=True, min_samples=0)
        width = self.n_cols_ if side == "x" else self.n_rows_
        if checked.shape[1] != width:
            what = "row samples x ∈ R^M" if side == "x" else "column samples z ∈ R^N"
            raise ValueError(
                f"{name} has {checked.shape[1]} features; expected {width} ({what} of the "
                f"{self.n_rows_}x{self.n_cols_} data matrix the transform was fitted on)"
            )
        return _dense(checked @ self.C_) if self.side_ == side else rows

    def fit_transform(self, A):
        """Fit on A and return (mapped rows of A, mapped columns of A as rows).

        Parameters
        ----------
        A : array-like or sparse matrix of shape (N, M)
            The data matrix.

        Returns
        -------
        X : ndarray of shape (N, min(N, M))
            The rows of A, mapped if needed.
        Z : ndarray of shape (M, min(N, M))
            The columns of A (rows of Aᵀ), mapped if needed.
        """
        self.fit(A)
        A = as_data(A, "X", allow_sparse=True)
        At = A.T.tocsr() if sp.issparse(A) else A.T
        return self.transform_x(A), self.transform_z(At)
