"""AsK-LS with the asymmetric Nyström option on Dask inputs (He et al., 2023, eq. 6–7, Tao et al.
(2024) eq. 8–9).

Data flow
---------
::

    client                                      cluster (tasks, per row chunk c of X)
    ------                                      -------------------------------------
    X (n×d) row-chunked, y chunked like X ────▶ per chunk: np.unique(y_c) → union (classes)
    classes (small) ◀─────────────────────────  ±1 targets Y_c (one-vs-rest), never gathered
    asymmetric_nystrom(G) (existing executor) ▶ Ũ, Ṽ (n×r) persisted, chunked like X
    LowRankStats (r×r, r×k sums) ◀────────────  per chunk LowRankStats.of(Ũ_c, Ṽ_c, Y_c), tree +
    askls_lowrank_reduced: bias, r×k weights    (the same function the in-memory path calls)
    R b̃ = G[I, :] b̃, Cᵀ ã = G[:, J]ᵀ ã ◀──────  per chunk: expand (ã_c, b̃_c), kernel blocks
      (|I|×k, |J|×k), W = G[I, J]                 G[I, c], G[c, J] in the task, tree +
    predictor weights (|J|×k, |I|×k)
    decision_function(X_new) ─────────────────▶ per new chunk: k(x, X_J)·w_s, k(X_I, x)ᵀ·w_t

The solve is the reduced form of the low-rank (Woodbury) AsK-LS solver
(:func:`asymkern._shared.lssvm.askls_lowrank_reduced`): every n-sized quantity it needs is a
sum over rows, so only r×r, r×k and k-sized statistics reach the client; the dual coefficients
ã = α ⊙ y, b̃ = β ⊙ y stay affine in the rows of (Y, Ũ, Ṽ) and are re-expanded inside the
tasks that need them. The fitted model keeps the landmark rows X[I], X[J], their normalisers
(row-normalised kernels) and small matrices only; it pickles without any dask object.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

from .._dispatch import is_dask_array, require_dask
from .._shared.lssvm import (
    _RESCALE,
    LowRankStats,
    _check_two_classes,
    _encode_labels,
    _labels_of,
    _one_vs_rest,
    askls_lowrank_reduced,
)
from .kernel import (
    DaskKernelMatrix,
    _add,
    _local,
    _tree,
    as_dask_data,
    gather,
    split_like,
    stack_rows,
    task,
)


# ------------------------------------------------------------------------------- labels
def _encode_chunk(yc, classes):
    """±1 one-vs-rest targets of one label chunk (one column for two classes)."""
    yc = np.asarray(yc).ravel()
    idx = np.clip(np.searchsorted(classes, yc), 0, classes.size - 1)
    if not np.all(classes[idx] == yc):  # pragma: no cover - classes come from these chunks
        raise ValueError("y has a label that is not in classes_")
    return _one_vs_rest(idx, classes.size)


def dask_labels(y, row_chunks: tuple, n: int):
    """Classes (gathered, small) and the ±1 target matrix Y (dask, chunked like X's rows).

    ``y`` is a numpy array (n,) or a 1-D dask array whose chunks equal X's row chunks.
    """
    da = require_dask()
    if not is_dask_array(y):
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must be 1-D with one label per row of X ({n}), got shape "
                             f"{y.shape}")
        classes, _, Y = _encode_labels(y)
        return classes, da.from_array(Y, chunks=(row_chunks, Y.shape[1]))
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D dask array of labels, got {y.ndim} dimensions")
    if any(np.isnan(c) for c in y.chunks[0]):
        raise ValueError("y has unknown chunk sizes (NaN in y.chunks), e.g. after boolean "
                         "indexing; call y.compute_chunk_sizes() before passing it")
    if y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} labels; expected {n}, one per row of X")
    ych = tuple(c for c in y.chunks[0] if c)
    if ych != tuple(row_chunks):
        def show(c):
            return f"{tuple(c)[:5]}{'…' if len(c) > 5 else ''}"

        raise ValueError(
            f"y is chunked differently from X's rows (y chunks {show(ych)}, X row chunks "
            f"{show(row_chunks)}); chunk the labels like X: y = y.rechunk((X.chunks[0],))"
        )
    from dask import delayed

    y = y.rechunk((tuple(row_chunks),))  # drops empty chunks like X's validation

    parts = [delayed(np.unique, pure=True)(b) for b in y.to_delayed()]
    (classes,) = gather("class labels", _tree(parts, np.union1d))
    classes = np.asarray(classes)
    if classes.dtype.kind == "f" and np.any(np.isnan(classes)):
        raise ValueError("y contains NaN (in at least one chunk); expected class labels")
    check_classification_targets(classes)
    _check_two_classes(classes)
    k = 1 if classes.size == 2 else classes.size
    Y = y.map_blocks(_encode_chunk, classes, chunks=(tuple(row_chunks), (k,)), new_axis=1,
                     dtype=np.float64)
    return classes, Y


# ------------------------------------------------------------------------------- tasks
def _train_cross_task(kernel, XI, XJ, Xc, lse_I, lse_c, Uc, Vc, Yc, red):
    """(G[I, c] b̃_c, G[c, J]ᵀ ã_c) of one row chunk c: the pieces of the Nyström predictor."""
    a, b = red.expand(Uc, Vc, Yc)
    R = np.asarray(_local(kernel, XI, Xc, lse_I).block(), dtype=np.float64)
    C = np.asarray(_local(kernel, Xc, XJ, lse_c).block(), dtype=np.float64)
    return R @ b, C.T @ a


def _pair_add(p, q):
    return p[0] + q[0], p[1] + q[1]


def cross_block(kernel, Xc, XI, XJ, lse_c, lse_I, ws, wt, need_s: bool, need_t: bool):
    """(f_s − b1, f_t − b2) of new points Xc (eq. 7 with the Nyström extension, eq. 8):
    k(x, X_J) w_s and k(X_I, x)ᵀ w_t, float64 (m, k); either may be None."""
    fs = ft = None
    if need_s:
        fs = np.asarray(_local(kernel, Xc, XJ, lse_c).block(), dtype=np.float64) @ ws
    if need_t:
        ft = np.asarray(_local(kernel, XI, Xc, lse_I).block(), dtype=np.float64).T @ wt
    return fs, ft


def _cross_task(kernel, Xc, XI, XJ, lse_c, lse_I, ws, wt, need_s, need_t):
    fs, ft = cross_block(kernel, Xc, XI, XJ, lse_c, lse_I, ws, wt, need_s, need_t)
    return np.hstack([p for p in (fs, ft) if p is not None])


# ------------------------------------------------------------------------------- fit
@dataclass(frozen=True)
class DaskAsKLSFit:
    """What the Dask fit of :class:`~asymkern.lssvm.AsKLSClassifier` hands back to the
    estimator (which alone sets the fitted attributes).

    Attributes
    ----------
    classes : ndarray
    n_train, n_features : int
    dtype : numpy dtype
        X's dtype (the outputs').
    bias : ndarray
        The biases b1, b2 (``intercept_``).
    fallback : bool
        Whether the ridge fallback ran.
    reference : dask array
        The training set (transient: normalisers of new rows for row-normalised kernels).
    nystrom : NystromResult
        The asymmetric Nyström result without its n-sized factors.
    predictor : tuple
        ``(I, J, R b̃, Cᵀ ã, W, X[I], X[J], lse_I)`` for ``_set_nystrom_predictor``.
    """

    classes: np.ndarray
    n_train: int
    n_features: int
    dtype: np.dtype
    bias: np.ndarray
    fallback: bool
    reference: Any
    nystrom: Any
    predictor: tuple


def fit_askls_dask(est, X, y, C: float) -> DaskAsKLSFit:
    """Fit an :class:`~asymkern.lssvm.AsKLSClassifier` (Nyström option) on dask X (and y),
    its parameters checked by the estimator (C resolved); nothing is set on ``est``."""
    from .._validation import check_finite_output, check_random_state
    from ..linalg.nystrom import asymmetric_nystrom

    if est._is_precomputed():
        raise NotImplementedError("kernel='precomputed' with a dask matrix is not available for "
                                  "AsKLSClassifier yet; pass the data X (row-chunked)")
    if est.nystrom is None:
        raise NotImplementedError("AsKLSClassifier on dask inputs needs the Nyström option "
                                  "(nystrom=r or a dict with 'n_components'): the exact solvers "
                                  "form the n×n kernel matrix")
    if est.merge == "stack":
        raise NotImplementedError("merge='stack' (out-of-fold logistic stacking) is not available "
                                  "on dask inputs yet; use merge='sum', 'source' or 'target'")
    if y is None:
        raise ValueError("y is None; expected one class label per row of X")
    kern = est._fitted_kernel = est._kernel_obj()  # kept: predictions use the fit's kernel
    # a numpy X with dask labels: split like them (as the Nyström machines do)
    X = split_like(X, y, allow_sparse=kern.accepts_sparse)
    Xd = as_dask_data(X, "X", allow_sparse=kern.accepts_sparse)
    n, d = (int(k) for k in Xd.shape)
    classes, Y = dask_labels(y, Xd.chunks[0], n)
    opts = est._nystrom_options(n)
    # the AsK-LS solution depends on the approximation Ĝ = C W_r⁺ R only, not on its
    # factorisation: the eq. 9 factors give the same model as the orthogonalised ones
    opts["orthogonalize"] = False
    rs = check_random_state(est.random_state)
    G = DaskKernelMatrix(kern, Xd)
    res: Any = asymmetric_nystrom(G, random_state=rs, **opts)  # U, V: dask arrays
    from dask import delayed

    Ud, Vd, Yd = (list(M.rechunk({0: Xd.chunks[0], 1: -1}).to_delayed()[:, 0])
                  for M in (res.U, res.V, Y))
    stats = _tree([task(LowRankStats.of, u, v, t) for u, v, t in zip(Ud, Vd, Yd)], _add)
    (st,) = gather("low-rank AsK-LS statistics (r×r)", stats)
    for what, val in (("U", st.UtU), ("V", st.WtW)):
        check_finite_output(val, f"the Nyström factor {what} of the kernel matrix of X", _RESCALE)
    red = askls_lowrank_reduced(st, res.s, C, ridge=est.ridge)

    I = np.asarray(res.row_landmarks)
    J = np.asarray(res.col_landmarks)
    XI = G.gather_rows(G.X, I, "row landmarks X[I]")
    XJ = G.gather_rows(G.X, J, "column landmarks X[J]")
    lse_I = None
    if kern.row_normalized:
        (lse_I,) = gather("normalisers of the row landmarks", G.row_lse()[I])
    W = G.block(I, J)
    XId, XJd, redd = (delayed(v, pure=True) for v in (XI, XJ, red))
    parts = [task(_train_cross_task, kern, XId, XJd, xc, lse_I, lc, u, v, t, redd)
             for xc, lc, u, v, t in zip(G._xd(), G._lse_chunks(), Ud, Vd, Yd)]
    (pair,) = gather("Nyström predictor products (landmarks × classes)", _tree(parts, _pair_add))
    R_b, Ct_a = pair

    check_finite_output(red.bias, "the AsK-LS biases b1, b2", _RESCALE)
    return DaskAsKLSFit(classes=classes, n_train=n, n_features=d, dtype=np.dtype(Xd.dtype),
                        bias=red.bias, fallback=bool(red.fallback), reference=Xd,
                        nystrom=dataclasses.replace(res, U=None, V=None),
                        predictor=(I, J, R_b, Ct_a, W, XI, XJ, lse_I))


# ------------------------------------------------------------------------------- predict
def _reference(est):
    """The training set as a dask array (normalisers of new rows for row-normalised kernels)."""
    ref = getattr(est, "_dask_reference", None)
    if ref is not None:
        return ref
    if getattr(est, "X_fit_", None) is not None:
        da = require_dask()
        return da.from_array(est.X_fit_, chunks=est.X_fit_.shape,
                             asarray=not hasattr(est.X_fit_, "tocsr"))
    raise ValueError(
        f"kernel {est._kernel_obj().name!r} is row-normalised over the training set, and this "
        "model (fitted on dask, then pickled) no longer holds the training set: the source "
        "function f_s needs it; use merge='target', or predict with the model before pickling"
    )


def nystrom_cross_dask(est, X, need_s: bool, need_t: bool):
    """(k(x, X_J) w_s, k(X_I, x)ᵀ w_t) for new X: dask arrays for dask X, numpy for numpy X."""
    if est._is_precomputed():
        raise NotImplementedError("dask inputs with kernel='precomputed' are not available for "
                                  "AsKLSClassifier")
    kern = est._kernel_obj()
    XI, XJ, lse_I = est._ny_points
    ws, wt = est._ny_ws, est._ny_wt
    was_dask = is_dask_array(X)
    if not was_dask and not (need_s and kern.row_normalized):
        from sklearn.utils.validation import validate_data

        Xc = validate_data(est, X, reset=False, dtype=[np.float64, np.float32],
                           accept_sparse="csr" if kern.accepts_sparse else False)
        return cross_block(kern, Xc, XI, XJ, None, lse_I, ws, wt, need_s, need_t)
    # the training set first: an unpickled model without it is refused by name (also where
    # dask is not installed) before dask is needed
    ref = _reference(est) if need_s and kern.row_normalized else None
    from dask import delayed

    Xn = as_dask_data(X, "X", allow_sparse=kern.accepts_sparse)
    if Xn.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {Xn.shape[1]} features, but {type(est).__name__} is expecting "
                         f"{est.n_features_in_} features as input")
    lses = [None] * len(Xn.chunks[0])
    if need_s and kern.row_normalized:
        G = DaskKernelMatrix(kern, Xn, ref)
        lses = list(G.lse_of(Xn).rechunk((Xn.chunks[0],)).to_delayed())
    k = (ws if ws is not None else wt).shape[1]
    width = k * (int(need_s) + int(need_t))
    cst = [delayed(v, pure=True) for v in (XI, XJ, lse_I, ws, wt)]
    parts = [task(_cross_task, kern, xc, *cst[:2], lc, *cst[2:], need_s, need_t)
             for xc, lc in zip(Xn.to_delayed()[:, 0], lses)]
    F = stack_rows(parts, Xn.chunks[0], np.float64, width)
    if not was_dask:
        (F,) = gather("decision values of in-memory input", F)
    fs = F[:, :k] if need_s else None
    ft = F[:, width - k:] if need_t else None
    return fs, ft


def predict_labels(F, classes):
    """Class labels from decision values (dask in, dask out)."""
    return F.map_blocks(_labels_of, classes, chunks=(F.chunks[0],),
                        drop_axis=list(range(1, F.ndim)), dtype=classes.dtype)
