"""Nyström kernel machines (Li, Liu and Zhang) on Dask: map-reduce fit, lazy predict / transform.

``NystromKernelRidge``, ``NystromKernelPCA`` and ``NystromSVC`` hand dask inputs here at the
top of ``fit`` / ``predict`` / ``transform`` (``asymkern._dask.any_dask``). The pattern is
map-reduce over the row chunks of X (and of y, chunked like X):

* **landmarks** are chosen on the client from the sizes (uniform: the same ``random_state``
  calls as in memory, hence the same indices), or from a gathered sample (k-means, n ≤ 20000:
  the in-memory selector on the gathered rows, identical), or by two passes (ridge leverage:
  the Gram FᵀF of a uniform Nyström sketch as a tree reduction, then the scores per chunk);
  only the m landmark rows C (m×d) reach the client, and A = V_s Λ_s^{-1/2} comes from the
  shared :func:`~asymkern._shared.nystrom_basis.basis_from_landmarks`. As in memory, the
  leverage and k-means landmarks do not depend on the scale of X (exact powers of two, and
  bitwise the unscaled computation for data of ordinary size);
* **one kernel pass** per fit: each task computes K_c = K(X_c, C) (``kernel_block``, the very
  function of the in-memory path) and returns its m×m / m×outputs / s×s summaries — n_c,
  Σ K_c, K_cᵀK_c, K_cᵀ(Y_c − ȳ), Σ(Y_c − ȳ) and, where KPCA needs the singular values of the
  (centred) features G_cᵀ = (K − 1k̄ᵀ)A, the R factor of a QR of that chunk's features centred
  on the chunk mean. The summaries are combined by a deterministic pairwise tree (fixed order,
  any scheduler); the R factors merge as in a tall-skinny QR, with the between-chunk mean term
  √(n_a n_b / (n_a + n_b)) (ḡ_a − ḡ_b)ᵀ stacked under [R_a; R_b] (the pairwise-variance
  identity), so RᵀR = G_c G_cᵀ without ever forming the Gram matrix from uncentred sums;
* the **m×m solves** run on the client with the same formulas as in memory (eq. (11) for NCR,
  LLA's ridge system, SPA's Woodbury form); GSA's eq. (20) runs on its own tall-skinny QR of
  [e, G_c, y_c] (e = 1/√n: the centring is exact in the factorisation, as in memory) whose Q
  is applied through the tree (:mod:`asymkern._dask.tsqr`) for the lazy dual coefficients;
* ``predict`` / ``transform`` of a dask array are dask arrays computed chunk by chunk
  (K(Z_c, C) β + b per chunk; GSA: the exact kernel against the training chunks, times the
  lazy α̂ = Q F, one pass over the training chunks: each recomputes its leaf of the TSQR and
  applies it to the small factor F_c the fit kept).

Nothing n×m or n×s is ever held: n-sized fitted quantities (GSA/SPA dual coefficients, KPCA's
SPA eigenvectors) are *lazy* dask arrays chunked like X, recomputed from X when asked for, and
they (and the training data that GSA's test phase needs) are dropped when the model is pickled.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._dispatch import is_dask_array, require_dask
from ..kernels.base import _maxabs, _needs_scaling, _pow2_exponent
from .kernel import _tree, as_dask_data, gather, task

_RESCALE = "rescale X (e.g. StandardScaler) or change the kernel parameters"
_KMEANS_GATHER_MAX = 20000  # k-means on all rows (gathered) up to this n, as in _dask.nystrom


@dataclass(frozen=True)
class DaskMachineFit:
    """What a Dask fit of a Nyström machine hands back to its estimator (which alone sets the
    fitted attributes, ``_NystromBase._keep_dask``).

    Attributes
    ----------
    basis : NystromBasis
        The landmarks and A = V_s Λ_s^{-1/2}.
    n_features : int
    dtype : numpy dtype
        X's dtype (outputs are cast to it).
    coef, landmark_coef, intercept : ndarray or None
        ``coef_`` (LLA/GSA weights ŵᵀ; SVC: the linear SVM's), ``landmark_coef_`` (β on the
        landmarks), ``intercept_``.
    dual : dask array or None
        ``dual_coef_`` (SPA/GSA), lazy and chunked like X.
    X_fit : dask array or None
        X, kept for GSA's test phase (K against all training points).
    y_1d : bool or None
        Whether y was 1-D (ridge).
    eigenvalues : ndarray or None
    n_components : int or None
        KPCA's.
    svm : estimator or None
        NystromSVC's fitted linear SVM (``estimator_``; its classes and n_iter_ are read there).
    """

    basis: Any
    n_features: int
    dtype: np.dtype
    coef: np.ndarray | None = None
    landmark_coef: np.ndarray | None = None
    intercept: Any = None
    dual: Any = None
    X_fit: Any = None
    y_1d: bool | None = None
    eigenvalues: np.ndarray | None = None
    n_components: int | None = None
    svm: Any = None


# ================================================================================ validation
def check_X(X, name: str = "X"):
    """Row-chunked dense dask X (numpy input wrapped as one chunk); NaN found per chunk."""
    return as_dask_data(X, name, allow_sparse=False)


def _check_y_chunk(yc, name, block_info=None):
    yc = np.asarray(yc)
    if yc.dtype == object or not (np.issubdtype(yc.dtype, np.number) or yc.dtype == bool):
        raise TypeError(f"{name} must be numeric")
    yc = yc.astype(np.float64)
    if not np.all(np.isfinite(yc)):
        loc = block_info[0]["array-location"][0] if block_info else ("?", "?")
        raise ValueError(f"{name} contains NaN or infinity in rows [{loc[0]}, {loc[1]}) (one "
                         "dask chunk); expected finite values")
    return yc


def check_y(y, X, name: str = "y", numeric: bool = True):
    """y as a dask array chunked exactly like the rows of (validated) dask X.

    A dask y must have known chunk sizes along its rows equal to X's (empty chunks ignored);
    a numpy y is accepted and split like X (it is already on the client). Numeric targets are
    checked per chunk (finite, float64) when computed.
    """
    from .._validation import check_target_columns

    da = require_dask()
    n = int(X.shape[0])
    if y is None:
        raise ValueError("y is None; expected targets/labels with one entry per row of X")
    if is_dask_array(y):
        if y.ndim not in (1, 2):
            raise ValueError(f"{name} must be 1-D or 2-D, got a dask array with {y.ndim} "
                             "dimensions")
        if any(np.isnan(c) for cs in y.chunks for c in cs):
            raise ValueError(f"{name} has unknown chunk sizes (NaN in {name}.chunks); call "
                             f"{name}.compute_chunk_sizes() first")
        if y.shape[0] != n:
            raise ValueError(f"{name} has {y.shape[0]} entries but X has {n} samples")
        check_target_columns(y.shape, name)
        yc = tuple(c for c in y.chunks[0] if c)
        if yc != tuple(X.chunks[0]):
            raise ValueError(
                f"{name} is chunked differently from the rows of X ({name}.chunks[0]={yc} vs "
                f"X.chunks[0]={tuple(X.chunks[0])}); chunk them alike, e.g. "
                f"{name} = {name}.rechunk({{0: X.chunks[0]}})")
        if y.ndim == 2 and y.numblocks[1] != 1:
            y = y.rechunk({1: -1})
        if 0 in y.chunks[0]:
            y = y.rechunk({0: X.chunks[0]})
    else:
        y = np.asarray(y)
        if y.ndim not in (1, 2):
            raise ValueError(f"{name} must be 1-D or 2-D, got shape {y.shape}")
        if y.shape[0] != n:
            raise ValueError(f"{name} has {y.shape[0]} entries but X has {n} samples")
        check_target_columns(y.shape, name)
        y = da.from_array(y, chunks=(X.chunks[0],) + y.shape[1:])
    if numeric:
        if not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
            raise TypeError(f"{name} must be numeric")
        y = y.map_blocks(_check_y_chunk, name, dtype=np.float64)
    return y


# ================================================================================ landmarks
def _gather_rows(X, idx, what):
    from .kernel import DaskKernelMatrix

    return np.asarray(DaskKernelMatrix.gather_rows(X, idx, what))


def _lev_gram(kern, Xc, XI, B):
    """``(max |F_c|, e_c, (F_c 2^-e_c)ᵀ(F_c 2^-e_c))`` of one chunk, F_c = k(X_c, X_I) B and
    e_c the ``_gram_exponent`` of max |F_c| (0 for entries of ordinary size: the plain FᵀF)."""
    from ..landmarks import _unscaled
    from ..linalg.nystrom import _gram_exponent

    F = np.asarray(kern(Xc, XI), dtype=np.float64) @ B
    big = _maxabs(F)
    e = _gram_exponent(big)
    F = _unscaled(F, -e)
    return big, e, F.T @ F


def _merge_gram(a, b):
    """Sum of two scaled Grams ``(max |F|, e, (F 2^-e)ᵀ(F 2^-e))`` in the units of the larger
    maximum (``_gram_exponent`` is nondecreasing in it, so both shifts are exact powers of two
    that can only shrink a term): the running rescaling of the in-memory leverage sums. With
    e = 0 on both sides, the plain sum."""
    from ..linalg.nystrom import _gram_exponent

    big = max(a[0], b[0])
    e = _gram_exponent(big)
    ga, gb = ((g if ex == e else np.ldexp(g, 2 * (ex - e))) for _, ex, g in (a, b))
    return big, e, ga + gb


def _lev_scores(kern, Xc, XI, B, Wk, e=0):
    F = np.asarray(kern(Xc, XI), dtype=np.float64) @ B
    if e:
        from ..landmarks import _unscaled

        F = _unscaled(F, -e)
    U = F @ Wk
    return np.einsum("ij,ij->i", U, U)


def _pow2_scaled_rows(X):
    """Dask X multiplied by the exact power of two of :func:`asymkern.landmarks._pow2_scaled`
    (max |X| brought into [0.5, 1)) when its entries are so large or small that squares or
    kernel values of a homogeneous kernel would over- or underflow; X itself otherwise (one
    reduction for max |X|; the scaling is lazy, chunk by chunk)."""
    from .nystrom import global_maxabs

    dtype = np.dtype(X.dtype)
    if not np.issubdtype(dtype, np.floating):
        return X
    big = global_maxabs(X)
    if not (np.isfinite(big) and _needs_scaling(big, dtype)):
        return X
    return X * dtype.type(math.ldexp(1.0, -_pow2_exponent(big, dtype)))


def leverage_indices(kern, X, m: int, rng) -> np.ndarray:
    """Ridge-leverage landmarks of ``select_landmarks(..., 'leverage')`` in two passes.

    The sketch, the directions and the draw are those of :func:`asymkern.landmarks.
    leverage_scores` (the same random calls); pass 1 reduces the p×p Gram FᵀF over the chunks,
    pass 2 computes the scores per chunk. The score vector (n floats) is gathered for the
    weighted draw without replacement.

    Scale-invariant as in memory, by exact powers of two: for a homogeneous kernel (linear;
    polynomial with ``coef0=0``) X of extreme magnitude is rescaled first (one more reduction,
    max |X|); F = k(X, X_I) B is rescaled by 2^-e, e from max |F| over all chunks — each chunk
    sends its Gram in its own units and the tree brings them to the common one — so FᵀF
    neither overflows nor underflows (K_mm and FᵀF themselves are scaled inside
    ``leverage_sketch`` / ``leverage_directions``). Data of ordinary size give bitwise the
    unscaled computation.
    """
    from dask import delayed

    from ..landmarks import _homogeneous, leverage_directions, leverage_draw, leverage_sketch

    da = require_dask()
    if _homogeneous(kern):  # k(cX, cZ) = c^q k(X, Z): the same scores for the scaled data
        X = _pow2_scaled_rows(X)
    XI, B = leverage_sketch(kern, int(X.shape[0]), m, rng,
                            lambda idx: _gather_rows(X, idx, "leverage sketch rows"))
    XId, Bd = delayed(XI, pure=True), delayed(B, pure=True)
    parts = [task(_lev_gram, kern, xc, XId, Bd) for xc in X.to_delayed()[:, 0]]
    (gram,) = gather("leverage Gram FᵀF (p×p)", _tree(parts, _merge_gram))
    _, e, FtF = gram
    Wk = delayed(leverage_directions(FtF, m))
    sc = da.concatenate([
        da.from_delayed(task(_lev_scores, kern, xc, XId, Bd, Wk, e), shape=(c,),
                        dtype=np.float64)
        for xc, c in zip(X.to_delayed()[:, 0], X.chunks[0])])
    (scores,) = gather("leverage scores (n)", sc)
    return leverage_draw(scores, m, rng)


def kmeans_centers(X, m: int, rng):
    """(indices, centres) of k-means landmarks (Li, Liu and Zhang, §IV, Zhang & Kwok).

    n ≤ 20000 (``_KMEANS_GATHER_MAX``): the rows are gathered and the in-memory
    ``landmarks.kmeans_landmarks`` runs with the same random state — identical to the
    in-memory fit. Above: the memory-bounded ``landmarks.sampled_kmeans`` (the sample gathered
    on the client) and the training row nearest to each centre by a distributed argmin
    (``indices`` are then informational and may repeat; the centres are the landmarks). Both
    are scale-free: a sample of extreme magnitude is clustered rescaled by a power of two
    (centres scaled back), and the nearest-row search scales each chunk
    (:func:`asymkern._dask.nystrom.nearest_indices`).
    """
    from ..landmarks import kmeans_landmarks, sampled_kmeans
    from .nystrom import nearest_indices

    n = int(X.shape[0])
    if n <= _KMEANS_GATHER_MAX:
        pts = _gather_rows(X, np.arange(n), "k-means points (n <= 20000)")
        idx, centers = kmeans_landmarks(pts, m, return_centers=True, random_state=rng)
        return idx, centers.astype(X.dtype, copy=False)
    centers = np.asarray(sampled_kmeans(n, m, rng,
                                        lambda sub: _gather_rows(X, sub, "k-means sample")),
                         dtype=X.dtype)
    return nearest_indices(centers, X), centers


def build_basis_dask(kern, X, n_landmarks, landmarks="uniform", subspace_dim=None, rcond=None,
                     random_state=None):
    """The Nyström basis of :func:`~asymkern._shared.nystrom_basis.build_basis` for dask X.

    Same landmark indices for the same ``random_state`` (uniform, fixed, leverage, k-means for
    n ≤ 20000); the Gaussian sketch (C_H = X_H S, an n×m S) is refused.
    """
    from sklearn.utils import check_random_state

    from .._shared.nystrom_basis import basis_from_landmarks, check_psd_kernel, landmark_request
    from ..landmarks import select_landmarks

    n = int(X.shape[0])
    check_psd_kernel(kern)
    rng = check_random_state(random_state)
    centers = None
    method, m, indices = landmark_request(landmarks, n_landmarks, n)
    if method == "gaussian":
        raise NotImplementedError(
            "landmarks='gaussian' (a Gaussian sketch C_H = X_H S with an n×m matrix S, "
            "K_nm = K S over all n² pairs) is not available on dask inputs; use 'uniform', "
            "'kmeans', 'leverage' or row indices")
    if method == "uniform":
        indices = select_landmarks(None, m, "uniform", random_state=rng, n_samples=n)
    elif method == "leverage":
        indices = leverage_indices(kern, X, m, rng)
    elif method is not None:
        indices, centers = kmeans_centers(X, m, rng)
    if centers is None:
        centers = _gather_rows(X, indices, "landmark rows")
    return basis_from_landmarks(kern, centers, indices, X.dtype, subspace_dim=subspace_dim,
                                rcond=rcond)


# ================================================================================ chunk tasks
def _knm(kern, Xc, C):
    """K(X_c, C) (float64) by the in-memory ``kernel_block``, checked for overflow."""
    from .._shared.nystrom_basis import kernel_block
    from .._validation import check_finite_output

    return check_finite_output(kernel_block(kern, Xc, C),
                               "the kernel matrix K_nm between X and the landmarks", _RESCALE)


def _add(a, b):
    return a + b


def _qr_r(G):
    return np.linalg.qr(G, mode="r") if G.shape[0] else np.zeros((0, G.shape[1]))


def _chunk_stats(kern, Xc, C, A, center: bool):
    """Summaries of one row chunk (one kernel evaluation): n, Σ K_c and the R factor of the
    chunk's features G_c = K_c A, centred on their chunk mean."""
    K = _knm(kern, Xc, C)
    st = {"n": K.shape[0], "ksum": K.sum(axis=0)}
    G = K @ A
    st["gmean"] = G.mean(axis=0) if (center and G.shape[0]) else np.zeros(G.shape[1])
    st["R"] = _qr_r(G - st["gmean"] if center else G)
    return st


def _merge(a, b):
    """Pairwise merge of two chunk summaries (sums add; R factors as in a tall-skinny QR)."""
    out = {k: a[k] + b[k] for k in a if k not in ("R", "gmean")}
    na, nb = a["n"], b["n"]
    n = na + nb
    rows = [a["R"], b["R"]]
    if n and na and nb:
        rows.append(np.sqrt(na * nb / n) * (a["gmean"] - b["gmean"])[None, :])
    out["R"] = _qr_r(np.vstack(rows))
    out["gmean"] = (na * a["gmean"] + nb * b["gmean"]) / n if n else a["gmean"]
    return out


def reduce_stats(kern, X, C, A, *, center=False, what="Nyström summaries"):
    """One pass over the chunks of X: the merged summaries, gathered (all small); ``R`` is the
    s × s R factor of the (centred) features (zero rows added when n < s)."""
    from dask import delayed

    Cd, Ad = delayed(C, pure=True), delayed(A, pure=True)
    parts = [task(_chunk_stats, kern, xc, Cd, Ad, center) for xc in X.to_delayed()[:, 0]]
    (st,) = gather(what, _tree(parts, _merge))
    R = st["R"]
    if R.shape[0] < R.shape[1]:  # fewer rows than columns: pad (rank-deficient)
        st["R"] = np.vstack([R, np.zeros((R.shape[1] - R.shape[0], R.shape[1]))])
    return st


def _fold_task(kern, Xc, C, parts, *rows):
    """``parts(K(X_c, C), *row chunks)`` of one chunk (the block function of every executor)."""
    return parts(_knm(kern, Xc, C), *rows)


class DaskLandmarkRows:
    """K_nm = K(X, C) of a dask X read chunk by chunk in the cluster: the
    :class:`~asymkern.nystrom._algebra.KnmSource` of the Dask executor for the sums of the
    shared algebra (:func:`~asymkern.nystrom._algebra.row_sums`), whose block functions run
    in the tasks and whose results meet in a fixed-order tree (small arrays only reach the
    client).

    Parameters
    ----------
    kern : Kernel
    X : dask array of shape (n, d), row-chunked
    C : ndarray of shape (m, d)
        The landmark points.
    """

    def __init__(self, kern, X, C):
        self.kern, self.X, self.C = kern, X, np.asarray(C)
        self.shape = (int(X.shape[0]), int(self.C.shape[0]))

    def fold(self, parts, *rows, merge):
        """``parts(K(X_c, C), *row chunks)`` of every chunk, reduced by ``merge`` in a
        fixed-order tree and gathered (host float64)."""
        from dask import delayed

        Cd = delayed(self.C, pure=True)
        cols = [_row_chunks(r, self.X) for r in rows]
        tasks = [task(_fold_task, self.kern, xc, Cd, parts, *rs)
                 for xc, *rs in zip(self.X.to_delayed()[:, 0], *cols)]
        (total,) = gather("Nyström summaries (landmark-sized)", _tree(tasks, merge))
        return tuple(np.asarray(t, dtype=np.float64) for t in total)


def _lincomb(Zc, kern, C, B, b, dtype, what):
    """K(Z_c, C) B + b for one chunk, in the data's dtype (predictions, transforms)."""
    from .._validation import check_finite_output, narrowed

    out = check_finite_output(_knm(kern, Zc, C) @ B + b, what,
                              "rescale X like the training data")
    return narrowed(out, dtype, "the input's", "pass float64 input or rescale the targets")


def _features_chunk(Xc, kern, C, A, shift, right):
    """(K(X_c, C) A − shift) @ right: per-chunk centred features times a small matrix."""
    G = _knm(kern, Xc, C) @ A - shift
    return G @ right


def _row_chunks(r, X) -> list:
    """The delayed chunks of the n-row array ``r`` (dask or numpy; None: Nones) aligned with
    the row chunks of X."""
    if r is None:
        return [None] * len(X.chunks[0])
    r = r if is_dask_array(r) else require_dask().from_array(np.asarray(r))
    r = r.rechunk({0: X.chunks[0]} if r.ndim == 1 else {0: X.chunks[0], 1: -1})
    parts = r.to_delayed()
    return list(parts if r.ndim == 1 else parts[:, 0])


def map_rows(func, X, n_out: int, dtype, *args, rows=()):
    """A dask (n, n_out) array chunked like X: func(X_c, *row chunks, *args) per chunk (args
    small; ``rows`` n-row arrays aligned with X's chunks by :func:`_row_chunks`)."""
    from dask import delayed

    da = require_dask()
    dargs = [delayed(a, pure=True) if isinstance(a, np.ndarray) else a for a in args]
    cols = [_row_chunks(r, X) for r in rows]
    blocks = [da.from_delayed(task(func, xc, *rs, *dargs), shape=(c, n_out), dtype=dtype)
              for xc, c, *rs in zip(X.to_delayed()[:, 0], X.chunks[0], *cols)]
    return da.concatenate(blocks, axis=0)


def features(basis, Z, dtype=np.float64, B=None):
    """The Nyström feature map t(Z) = K(Z, C) A (Li, Liu and Zhang, §II-E), chunk by chunk.

    Parameters
    ----------
    basis : NystromBasis
        A fitted basis with landmark points (not a Gaussian sketch).
    Z : dask array (n_z, d), row-chunked (numpy is wrapped as one chunk).
    dtype : output dtype (default float64, as in memory).
    B : (m, k) numpy, optional
        Right factor instead of A (``np.eye(m)`` gives K(Z, C)).

    Returns
    -------
    dask array (n_z, s) chunked like Z; each task evaluates ``kernel_block`` and one product.
    """
    if basis.centers is None:
        raise NotImplementedError("the Nyström feature map of a Gaussian sketch basis needs "
                                  "the kernel against all training points; not available on "
                                  "dask inputs")
    Z = check_X(Z, "Z")
    B = basis.A if B is None else B
    return map_rows(_lincomb, Z, B.shape[1], dtype, basis.kernel, basis.centers, B,
                    np.zeros(B.shape[1]), np.dtype(dtype), "the Nyström features")


# ================================================================================ estimators
def _fit_common(est, X, y=None, numeric: bool = True):
    """Validate X (and y, before any work), choose the landmarks, set the common attributes."""
    if not is_dask_array(X) and is_dask_array(y) and y.ndim >= 1:
        da = require_dask()  # in-memory X with dask y: split X like y (validated below)
        from .._validation import as_data

        Xa = as_data(X, "X")
        if Xa.shape[0] == y.shape[0] and not any(np.isnan(c) for c in y.chunks[0]):
            X = da.from_array(Xa, chunks=(y.chunks[0], -1))
    X = check_X(X)
    Y = None if y is None else check_y(y, X, numeric=numeric)
    if est.mode == "exact":
        raise NotImplementedError(
            f"mode='exact' needs the n×n kernel matrix of all {X.shape[0]} samples; it is not "
            "available on dask inputs: use a Nyström mode ('lla', 'ncr', 'spa', 'gsa')")
    kern = est._kernel()
    from .._validation import check_random_state

    n = int(X.shape[0])
    m = est._landmark_count(n)  # clipped to n_samples (ClippedParameterWarning)
    rng = check_random_state(est.random_state, "random_state")
    b = build_basis_dask(kern, X, m, landmarks=est.landmarks,
                         subspace_dim=est._subspace_request(m),
                         rcond=est.rcond, random_state=rng)
    return X, Y, kern, b


def _finite_small(fit: DaskMachineFit) -> DaskMachineFit:
    """``fit`` after checking its small fitted arrays are finite."""
    from .._validation import check_finite_output

    for name, val in (("coef_", fit.coef), ("landmark_coef_", fit.landmark_coef),
                      ("intercept_", fit.intercept), ("eigenvalues_", fit.eigenvalues)):
        if val is not None:
            check_finite_output(val, f"the fitted {name}", _RESCALE)
    return fit


def _check_w_chunk(wc):
    if np.any(wc < 0):
        raise ValueError("sample_weight has negative values; expected weights >= 0")
    return wc


def check_weights(sample_weight, X):
    """Sample weights as a float64 dask array chunked like X's rows: finite and ≥ 0, checked
    per chunk when computed (a numpy array is split like X)."""
    w = check_y(sample_weight, X, "sample_weight")
    if w.ndim != 1:
        raise ValueError(f"sample_weight must be a 1-D array with one weight per row of X "
                         f"(shape ({X.shape[0]},)), got shape {w.shape}")
    return w.map_blocks(_check_w_chunk, dtype=np.float64)


def fit_ridge(est, X, y, alpha: float, sample_weight=None):
    """``NystromKernelRidge.fit`` on dask X (modes lla, ncr, spa, gsa), Li, Liu and Zhang eq.
    (11)–(20).

    Parameters
    ----------
    est : NystromKernelRidge
        The estimator (its parameters are read; nothing is set on it).
    X : dask array (n, d), row-chunked (numpy X is split like a dask y).
    y : dask array (n,) or (n, k) chunked like X's rows, or numpy (split like X).
    alpha : float
        Ridge parameter λ₀ > 0 (validated by the caller).
    sample_weight : dask or numpy array of shape (n,), optional
        Weights ≥ 0 (modes lla, ncr and spa): the weighted sums of the in-memory fit.

    Returns
    -------
    DaskMachineFit
        ``coef`` (lla/gsa), ``landmark_coef``, ``intercept`` as numpy; ``dual`` of spa/gsa as a
        lazy dask array chunked like X.

    Notes
    -----
    One pass over the chunks gives n, Σ K_c, K_cᵀK_c and K_cᵀ(Y_c − ȳ) (ȳ from a pass over y
    alone), so M = K_mn K_nm − n k̄k̄ᵀ and R = K_mn(y − ȳ) are the in-memory quantities
    (:func:`~asymkern._shared.nystrom_basis.ridge_stats`, the features' sums AᵀMA, AᵀR):
    LLA (AᵀMA + λ₀I) ŵ = AᵀR; NCR β = (M + λ₀K_mm)^† R (eq. (11)) = A ŵ on the full
    basis; SPA LLA's ŵ and the lazy dual a = (y_c − G_cᵀŵ)/λ₀ (the in-memory
    ``spa_dual``). GSA (eq. (20)) replaces the in-memory Householder QR of
    [e, K_nm] (n×(1 + m), Q kept as reflectors) by a tall-skinny QR of [e, K_nm A, y − ȳ]
    over the chunks (:class:`_GSATree`): SVD(R₂) gives Σ and U of G_cᵀ, R's target columns
    give Q₂ᵀy_c (no R⁻¹, no Gram matrix), the solve is the shared ``gsa_solve``, and the lazy
    α̂ = Q₂ P z is Q applied through the tree, as the in-memory route applies its reflectors
    (the internal nodes at fit time, the leaves, one map over the chunks, when α̂ is computed)
    (α̂ = G_cᵀc per chunk, used before, lost ~eps·κ(G_c) and its centring to cancellation:
    predictions 1e-6 to 6e-5 away from the in-memory ones on ill-conditioned bases, now ≤ 1e-12).
    """
    from .._shared.nystrom_basis import ridge_lla_weights, ridge_ncr_coef, ridge_stats

    if est.solver == "sklearn":
        raise NotImplementedError(
            "solver='sklearn' fits scikit-learn's Ridge on the n×s features in memory; on dask "
            "inputs use solver='auto' (the same ridge solution in Gram form)")
    if sample_weight is not None and est.mode == "gsa":
        raise NotImplementedError(
            "NystromKernelRidge.fit: sample_weight on dask inputs is available for modes "
            "'lla', 'ncr' and 'spa', not 'gsa'; fit in memory or use one of those")
    X, Y, kern, b = _fit_common(est, X, y)
    n, mode, A = int(X.shape[0]), est.mode, b.A
    dtype = np.dtype(X.dtype)
    sw = None if sample_weight is None else check_weights(sample_weight, X)
    w = dual = None
    Y2 = Y.reshape(-1, 1) if Y.ndim == 1 else Y
    if sw is not None:
        ysum, wsum = gather("weighted target sums", sw @ Y2, sw.sum())
        if not wsum > 0:
            raise ValueError("sample_weight is all zero; at least one weight must be non-zero")
        ybar = ysum / wsum if est.fit_intercept else np.zeros(Y2.shape[1])
    elif est.fit_intercept:
        (ysum,) = gather("target sums", Y.sum(axis=0))
        ybar = np.atleast_1d(ysum / n)  # = Y.mean(axis=0) of the in-memory path
    else:
        ybar = np.zeros(1 if Y.ndim == 1 else Y.shape[1])
    if mode in ("lla", "ncr", "spa"):  # the in-memory fit's sums (_shared.nystrom_basis)
        rs = ridge_stats(DaskLandmarkRows(kern, X, b.centers), Y2 - ybar, sw,
                         est.fit_intercept, basis=A)
        kbar = rs.kbar
        if mode == "ncr":
            beta = ridge_ncr_coef(rs.M, rs.R, A, alpha)
        else:
            w = ridge_lla_weights(rs.M, rs.R, alpha)
            beta = A @ w
        if mode == "spa":  # a = W(y_c − G_cᵀŵ)/α, n-sized: lazy
            shift = kbar @ beta if kbar is not None else np.zeros(beta.shape[1])
            dual = map_rows(_spa_dual_chunk, X, beta.shape[1], np.float64, kern, b.centers,
                            beta, ybar, shift, alpha, rows=(Y, sw))
            w = None
    else:  # gsa: one TSQR of [e, K_nm A, y − ȳ]; α̂ = Q F lazily (_GSATree)
        tree = _GSATree(kern, X, Y, b, ybar, est.fit_intercept, est.gsa_solver, alpha, dtype)
        w, kbar = tree.fit()
        beta = A @ w
        dual = tree.dual()
    return _finite_small(DaskMachineFit(
        basis=b, n_features=int(X.shape[1]), dtype=dtype,
        coef=None if w is None else w.T, landmark_coef=beta,
        intercept=ybar - (kbar @ beta if kbar is not None else 0.0), dual=dual,
        X_fit=X if mode == "gsa" else None, y_1d=Y.ndim == 1))


def _spa_dual_chunk(Xc, Yc, wc, kern, C, beta, ybar, shift, alpha):
    """One chunk of SPA's dual W(y_c − (K − 1k̄ᵀ)β)/α (``spa_dual`` of the in-memory fit)."""
    r = _knm(kern, Xc, C) @ beta - shift
    a = (np.asarray(Yc, dtype=np.float64).reshape(r.shape[0], -1) - ybar - r) / alpha
    return a if wc is None else np.asarray(wc, dtype=np.float64)[:, None] * a


# ------------------------------------------------------------------------ GSA ridge (eq. (20))
def _gsa_block(kern, Xc, C, A, Yc, ybar, lead: float):
    """One row chunk of GSA's tall matrix B = [e, K_nm A, Y − ȳ] (float64) and Σ K_c.

    ``lead`` is the entry 1/√n of the centring column e (0: no such column, no centring).
    """
    K = _knm(kern, Xc, C)
    rows = K.shape[0]
    Y = np.asarray(Yc, dtype=np.float64).reshape(rows, -1) - ybar
    cols = [K @ A, Y] if not lead else [np.full((rows, 1), lead), K @ A, Y]
    return np.hstack(cols), K.sum(axis=0)


def _gsa_leaf(kern, Xc, C, A, Yc, ybar, lead: float):
    """A leaf of the upward TSQR sweep: ``(None, R_c, Σ K_c)``, R_c the R of the Householder
    QR of the chunk's rows of B (:func:`~asymkern._dask.tsqr.householder_leaf`, the very
    factorisation that :func:`_gsa_leaf_rows` repeats; its reflectors are not kept)."""
    from .tsqr import householder_leaf

    B, ksum = _gsa_block(kern, Xc, C, A, Yc, ybar, lead)
    return None, householder_leaf(B)[1], ksum


def _gsa_leaf_rows(kern, Xc, C, A, Yc, ybar, lead: float, F):
    """Q_c F_c of one chunk: its rows of α̂. The chunk's rows of B and their Householder QR are
    recomputed and Q_c is applied through its reflectors to the leaf's factor F_c, which the
    fit computed from the R_c of the same factorisation (no leaf's Q is ever held).

    Parameters
    ----------
    kern, Xc, C, A, Yc, ybar, lead
        As :func:`_gsa_block`.
    F : ndarray of shape (h_c, outputs)
        The leaf's share of Q_tree F (:func:`~asymkern._dask.tsqr.tsqr_leaf_factors`),
        h_c = min(n_c, lead + s + outputs).

    Returns
    -------
    ndarray of shape (n_c, outputs)

    Notes
    -----
    Q_c belongs to the R_c that went up the tree when the chunk is recomputed bitwise (the same
    kernel, BLAS and LAPACK on the same data: any scheduler, a homogeneous cluster; the fit's
    graph and this one compute the chunk with the same functions). Otherwise Q_c is the Q of a
    B_c differing by rounding, an equally backward-stable factorisation of B whose backward
    error is ‖R_c − R'_c‖ instead of eps·‖B_c‖ (measured: every chunk's B perturbed by one ulp
    in this step only moved α̂ by ≤ 5e-12 and the predictions by ≤ 2e-14, relative, for
    κ(G_c) up to 4e5).
    """
    from .tsqr import householder_leaf, householder_rows

    B, _ = _gsa_block(kern, Xc, C, A, Yc, ybar, lead)
    return householder_rows(householder_leaf(B)[0], F, B.shape[0])


def _gsa_solve_r(R, lead: int, s: int, n: int, alpha: float, dtype, woodbury: bool):
    """GSA's solve (ŵ, F) from the R factor of B = [e, G, Y − ȳ] (G = K_nm A: s columns;
    ``lead`` = 1 with the centring column e, else 0).

    With B = Q R and Q = [q_e, Q₂, ·], the centred features are G_cᵀ = Q₂R₂, R₂ the diagonal
    block of the feature columns; the SVD R₂ = P Σ Uᵀ gives the thin SVD G_cᵀ = (Q₂P) Σ Uᵀ,
    V = Q₂P, and Vᵀy_c = Pᵀ Q₂ᵀ y_c = Pᵀ R_Y (R_Y: R's rows of Q₂ in the target columns). The
    solve is the in-memory one (:func:`~asymkern._shared.nystrom_basis.gsa_solve` with the
    cut-off :func:`~asymkern._shared.nystrom_basis.rank_cut`); Woodbury's G_cG_cᵀ and G_cy_c
    are R₂ᵀR₂ and R₂ᵀR_Y.

    Parameters
    ----------
    R : ndarray of shape (h, lead + s + k)
        The R factor of B (h = min(n, lead + s + k)).
    lead, s : int
    n : int
        The sample count (the cut-off).
    alpha : float
    dtype : numpy dtype
        The data's dtype (the cut-off).
    woodbury : bool
        ``gsa_solver='woodbury'``.

    Returns
    -------
    w : ndarray of shape (s, k)
        ŵ.
    F : ndarray of shape (h, k)
        The right factor of α̂ = V z = Q F: P z in the rows of Q₂, zeros elsewhere.
    """
    from .._backend import NUMPY
    from .._shared.nystrom_basis import gsa_solve, rank_cut

    R = np.asarray(R, dtype=np.float64)
    h = R.shape[0]
    top = max(min(h, lead + s), lead)  # Q₂'s columns (fewer than s when n ≤ s)
    R2, RY = R[lead:top, lead:lead + s], R[lead:top, lead + s:]
    F = np.zeros((h, RY.shape[1]))
    if R2.shape[0] == 0:  # one sample, centred: G_c = 0
        return np.zeros((s, RY.shape[1])), F
    P, sig, Ut = NUMPY.svd(R2)
    keep = rank_cut(sig, n, s, dtype)
    P = P[:, keep]
    w, z = gsa_solve(sig[keep], Ut[keep], P.T @ RY, alpha,
                     woodbury=(R2.T @ R2, R2.T @ RY) if woodbury else None)
    F[lead:top] = P @ z
    return w, F


def _gsa_root_solve(root, *args):
    """(ŵ, F) of :func:`_gsa_solve_r` from the root node (item 1: the R factor of B), a task of
    the fit's graph."""
    return _gsa_solve_r(root[1], *args)


def _item(obj, i: int):
    return obj[i]


class _GSATree:
    """GSA ridge regression (Li, Liu and Zhang, eq. (20)) on dask X through one TSQR of
    B = [e, K_nm A, Y − ȳ] (e = 1/√n, the centring column: only with ``fit_intercept``).

    The in-memory route (:func:`~asymkern.nystrom._algebra.ridge_gsa_householder`, a
    Householder QR of [e, K_nm A] kept as reflectors) on a tree: the R factors of the row chunks
    go up the tree (:mod:`asymkern._dask.tsqr`), the s×s solve runs on the root's R
    (:func:`_gsa_solve_r`), and α̂ = Q F comes down it: through the internal nodes in the fit's
    graph, which keeps each leaf's share F_c (:func:`~asymkern._dask.tsqr.tsqr_leaf_factors`),
    and through the leaves whenever α̂ is computed, each chunk recomputing its rows of B and
    their Householder QR (:func:`_gsa_leaf_rows`). Q is orthonormal to rounding and α̂ is
    never formed through R⁻¹ or as G_cᵀc, so α̂ and K(Z, X) α̂ keep the in-memory accuracy
    however ill-conditioned G_c; the centring is exact in the factorisation (Q₂ ⟂ e), not left
    to cancellation. B holds the features G = K_nm A rather than K_nm, as in memory: a chunk's
    rows of G are the same whatever the chunking (up to the GEMM's blocking), and the QR's
    rounding is then relative to ‖G‖, not to ‖K_nm‖‖A‖ (different chunkings agreed 4–15× more
    closely on α̂ of ill-conditioned bases than with K_nm in B).

    Cost and memory: the fit is one kernel evaluation and one QR per chunk (the upward sweep,
    the solve and the push through the internal nodes in one graph); α̂ is one more of each
    per chunk each time it is computed (no sweep up the tree again). A task holds one chunk's
    rows of K_nm and of B (n_c × (1 + s + outputs)) and its reflectors; the tree's nodes are
    (1 + s + outputs)-sized, and what the fit keeps, the leaves' F_c, (chunks × (1 + s +
    outputs) × outputs) floats at most. Nothing n-sized is held.
    """

    def __init__(self, kern, X, Y, basis, ybar, center: bool, gsa_solver: str, alpha: float,
                 dtype):
        from dask import delayed

        self.X, self.n = X, int(X.shape[0])
        self.lead = 1 if center else 0
        self.s = int(basis.A.shape[1])
        self.k = 1 if Y.ndim == 1 else int(Y.shape[1])
        self.solve_args = (self.lead, self.s, self.n, alpha, dtype, gsa_solver == "woodbury")
        self.chunk_args = (delayed(basis.centers, pure=True), delayed(basis.A, pure=True))
        self.row_args = (np.asarray(ybar, dtype=np.float64),
                         1.0 / math.sqrt(self.n) if center else 0.0)
        self.kern = kern
        self.xs = list(X.to_delayed()[:, 0])
        self.ys = list(Y.to_delayed().reshape(len(self.xs), -1)[:, 0])
        self.leaf_factors: list[np.ndarray] | None = None

    def fit(self) -> tuple[np.ndarray, np.ndarray | None]:
        """(ŵ, k̄) in one kernel pass; keeps the leaves' factors F_c for :meth:`dual`.

        One graph: the upward sweep (one kernel evaluation and one Householder QR per chunk,
        :func:`_gsa_leaf`), the solve on the root's R (:func:`_gsa_root_solve`) and F pushed
        down through the internal nodes while their Q factors are in the scheduler
        (:func:`~asymkern._dask.tsqr.tsqr_leaf_factors`); ŵ, Σ K_nm and the F_c are gathered.

        Returns
        -------
        w : ndarray of shape (s, outputs)
        kbar : ndarray of shape (m,) or None
            k̄ (with the intercept only).
        """
        from .tsqr import tsqr_leaf_factors, tsqr_tree

        leaves = [task(_gsa_leaf, self.kern, xc, *self.chunk_args, yc, *self.row_args)
                  for xc, yc in zip(self.xs, self.ys)]
        root = tsqr_tree(leaves, [int(c) for c in self.X.chunks[0]], self.lead + self.s + self.k)
        sol = task(_gsa_root_solve, root[0], *self.solve_args)
        ksum = _tree([task(_item, leaf, 2) for leaf in leaves], _add)
        w, ksum, *factors = gather(
            "GSA's ŵ (s × outputs), Σ K_nm (m) and leaf factors (chunks × (1 + s + outputs) × "
            "outputs)", task(_item, sol, 0), ksum,
            *tsqr_leaf_factors(root, task(_item, sol, 1)))
        self.leaf_factors = [np.asarray(f, dtype=np.float64) for f in factors]
        return np.asarray(w), (np.asarray(ksum) / self.n if self.lead else None)

    def dual(self):
        """α̂ = Q F, a lazy dask array chunked like X: one map over the chunks, each Q_c F_c
        (:func:`_gsa_leaf_rows`, its F_c from :meth:`fit`).

        Returns
        -------
        dask array of shape (n, outputs), float64
        """
        from .kernel import stack_rows

        if self.leaf_factors is None:  # pragma: no cover - internal misuse
            raise RuntimeError("_GSATree.dual before fit")
        parts = [task(_gsa_leaf_rows, self.kern, xc, *self.chunk_args, yc, *self.row_args, F)
                 for xc, yc, F in zip(self.xs, self.ys, self.leaf_factors)]
        return stack_rows(parts, self.X.chunks[0], np.float64, self.k)


def _out(out, was_dask):
    if was_dask:
        return out
    (res,) = gather("predictions of in-memory input", out)
    return res


def _lazy_values(est, Z, approach: str, what: str):
    """f(Z) = K(Z, X_fit) α + b (GSA's and exact's test phase, Algorithm 1) or K(Z, C) β + b,
    a dask array chunked like Z in Z's precision (``input_precision``; ``what`` names it in
    errors)."""
    from .._validation import input_precision

    Zd = _check_new(est, Z)
    dt = input_precision(Z)
    if approach not in ("gsa", "exact"):
        B = est.landmark_coef_
        return map_rows(_lincomb, Zd, B.shape[1], dt, est._kernel(), est.basis_.centers, B,
                        est.intercept_, dt, what)
    return _gsa_out(est, Zd, est.intercept_, dt, what)


def predict_ridge(est, Z, approach=None):
    out = _lazy_values(est, Z, approach or est.mode, "the predictions")
    return _out(out[:, 0] if est._y_1d else out, is_dask_array(Z))


def _gsa_out(est, Zd, intercept, dt, what):
    """K(Z, X_fit) α + b chunked like Z (refused for an unpickled Dask fit, which no longer
    holds the training points)."""
    from .kernel import DaskKernelMatrix

    est._check_exact_available()
    out = DaskKernelMatrix(est._kernel(), Zd, est.X_fit_).matmat(est.dual_coef_)
    return out.map_blocks(_finish, intercept, dt, what, dtype=dt)


def _finish(B, b, dt, what):
    from .._validation import check_finite_output, narrowed

    return narrowed(check_finite_output(B + b, what, "rescale X like the training data"), dt,
                    "the input's", "pass float64 input or rescale the targets")


def _check_new(est, Z, name="X"):
    if est.basis_ is not None and est.basis_.centers is None:
        raise NotImplementedError(
            "this model was fitted in memory with landmarks='gaussian' (a sketch over all "
            "training points); predictions of dask inputs need landmark points: refit with "
            "'uniform', 'kmeans', 'leverage' or row indices")
    Zd = check_X(Z, name)
    if Zd.shape[1] != est.n_features_in_:
        raise ValueError(f"{name} has {Zd.shape[1]} features, but {type(est).__name__} is "
                         f"expecting {est.n_features_in_} features as input")
    return Zd


# ------------------------------------------------------------------------------------ KPCA
def fit_pca(est, X):
    """``NystromKernelPCA.fit`` on dask X (lla, ncr, gsa, spa) from the merged R of F_c.

    Parameters
    ----------
    est : NystromKernelPCA
    X : dask array (n, d), row-chunked.

    Returns
    -------
    DaskMachineFit
        ``coef``, ``landmark_coef``, ``eigenvalues``, ``intercept`` as numpy; ``dual`` of
        spa/gsa as a lazy dask array chunked like X.

    Notes
    -----
    The in-memory fit is the SVD F_c = U S Vᵀ of the centred features F_c = K_nm A − 1f̄ᵀ
    (n×s). Here one pass gives the R factor of F_c (tree-merged tall-skinny QR, centring by
    the pairwise mean-difference rows), so SVD(R) gives S and V exactly as the thin SVD would;
    svd_flip's sign rule (largest |u| of each left vector positive) runs as a distributed
    sign pass over U_k = F_c V_k S_k⁻¹ (k numbers per chunk). SPA's eigenvectors of the n×n
    F_c F_cᵀ are the same left singular vectors (so SPA needs no n×n matrix); GSA's
    α̂ = G_c^† W (eq. (20)) is F_c U Σ⁻² Uᵀ W. After the SVD the algebra is the in-memory
    one, :func:`asymkern._shared.nystrom_basis.pca_factors`.
    """
    from .._shared.nystrom_basis import pca_factors
    from .._validation import check_n_components
    from .nystrom import paired_signs

    check_n_components(est.n_components, np.iinfo(np.int64).max)
    X, _, kern, b = _fit_common(est, X)
    A = b.A
    s = A.shape[1]
    n = int(X.shape[0])
    k = est._components_for(s, n, b.n_landmarks)
    st = reduce_stats(kern, X, b.centers, A, center=est.center,
                      what="KPCA summaries (s×s R factor)")
    fbar = st["gmean"] if est.center else np.zeros(s)
    dual = None
    _, S, Vt = np.linalg.svd(st["R"])
    # svd_flip's rule (largest |u| of each left singular vector positive) on the lazy
    # U_k = F_c V_k S_k⁻¹: a distributed sign pass (k numbers per chunk)
    Uk = map_rows(_features_chunk, X, k, np.float64, kern, b.centers, A, fbar, Vt[:k].T / S[:k])
    lam, W, keep, D = pca_factors(est.mode, S, Vt, paired_signs(Uk), k, n, np.dtype(X.dtype))
    if D is not None:  # U[:, keep] D = F_c V_keep Σ_keep⁻¹ D, lazily
        dual = map_rows(_features_chunk, X, k, np.float64, kern, b.centers, A, fbar,
                        (Vt[keep].T / S[keep]) @ D)
    return _finite_small(DaskMachineFit(
        basis=b, n_features=int(X.shape[1]), dtype=np.dtype(X.dtype), coef=W.T,
        landmark_coef=A @ W, intercept=-(fbar @ W), dual=dual,
        X_fit=X if est.mode == "gsa" else None, eigenvalues=lam, n_components=k))


def transform_pca(est, Z):
    return _out(_lazy_values(est, Z, est.mode, "the transformed values"), is_dask_array(Z))


# ------------------------------------------------------------------------------------- SVC
def fit_svc(est, X, y):
    """``NystromSVC.fit`` on dask X: the features F (n×s) are gathered within the budget.

    libsvm / liblinear solve on all n rows at once (the ν-SVM dual has no chunked form), so
    the Dask path computes F = K(X, C) A chunk by chunk in the cluster and gathers F and the
    labels on the client only when 2·n·s·8 bytes fit in ``max_dense_memory``; past it, a
    MemoryBudgetError names the way out. Modes lla / ncr (gsa's test phase and spa's n×n
    kernel are refused).
    """
    from ..config import check_memory

    if est.mode not in ("lla", "ncr"):
        raise NotImplementedError(
            f"NystromSVC(mode={est.mode!r}) is not available on dask inputs: "
            + ("it needs the n×n kernel" if est.mode in ("spa", "exact") else
               "its test phase needs the n×s factor G^† against all training points")
            + "; use mode='lla' or 'ncr'")
    if is_dask_array(X) and any(np.isnan(c) for c in X.chunks[0]):
        check_X(X)  # its row count is read below: refused first, naming X and the fix
    n = int(X.shape[0])
    m = min(int(est.n_landmarks), n) if isinstance(est.n_landmarks, numbers.Integral) else n
    check_memory(2 * 8 * n * int(m), f"NystromSVC on dask inputs ({n} samples, {m} landmarks)",
                 "NystromKernelRidge on ±1 targets (a chunked map-reduce fit) or fewer "
                 "landmarks", detail="libsvm needs the Nyström features F (n×s) in memory, "
                 "gathered from the cluster, and its own copy")
    X, yd, kern, b = _fit_common(est, X, y, numeric=False)
    if yd.ndim == 2 and yd.shape[1] == 1:
        yd = yd[:, 0]
    if yd.ndim != 1:
        raise ValueError(f"y must be 1-D with {n} labels, got shape {yd.shape}")
    F = features(b, X)
    F, yv = gather("NystromSVC features F (n×s, within max_dense_memory)", F, yd)
    if np.issubdtype(yv.dtype, np.floating) and not np.all(np.isfinite(yv)):
        raise ValueError("y contains NaN or infinity")
    svm = est._fit_solver(est._make_svm("linear"), F, yv)
    W = np.atleast_2d(np.asarray(svm.coef_))
    return _finite_small(DaskMachineFit(
        basis=b, n_features=int(X.shape[1]), dtype=np.dtype(X.dtype), coef=W,
        landmark_coef=b.A @ W.T, svm=svm))


def _svc_chunk(Xc, kern, C, A, svm, method, dt):
    from .._validation import check_finite_output, narrowed

    T = check_finite_output(_knm(kern, Xc, C) @ A,
                            "the kernel features of X (input of the linear SVM)",
                            "rescale X like the training data")
    out = getattr(svm, method)(T)
    if method != "decision_function":
        return out
    return narrowed(out, dt, "the input's", "pass float64 input or rescale the targets")


def svc_apply(est, Z, method: str, approach: str):
    from dask import delayed

    da = require_dask()
    if approach not in ("lla", "ncr"):
        raise NotImplementedError(f"mode {approach!r} on dask inputs: refit with mode='lla'")
    was_dask = is_dask_array(Z)
    from .._validation import input_precision

    Zd = _check_new(est, Z)
    dt = input_precision(Z)
    svm = delayed(est.estimator_, pure=True)
    args = [delayed(a, pure=True) for a in (est.basis_.centers, est.basis_.A)]
    if method == "predict":
        shape, odt = (), est.classes_.dtype
    else:  # (n,) for two classes, (n, n_machines or n_classes) otherwise
        probe = est.estimator_.decision_function(np.zeros((1, est.basis_.A.shape[1])))
        shape, odt = np.asarray(probe).shape[1:], dt
    blocks = [da.from_delayed(task(_svc_chunk, zc, est._kernel(), *args, svm,
                                                             method, dt),
                              shape=(c,) + shape, dtype=odt)
              for zc, c in zip(Zd.to_delayed()[:, 0], Zd.chunks[0])]
    return _out(da.concatenate(blocks, axis=0), was_dask)
