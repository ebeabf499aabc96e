"""RKHS operators with landmarks on Dask inputs (Mollenhauer et al., 2020, §4.3–4.4,
Nyström-restricted).

Data flow
---------
::

    client                                       cluster (tasks, per row chunk c)
    ------                                       --------------------------------
    landmark indices (select_landmarks, same
      draws as in memory) → gathered rows L (m×d)
    T = whitening of K_LL (m×p) ───────────────▶ landmark_stats(kernel, L, T, X_c, X⁺_c, Y_c):
                                                 FᵀF, FᵀF⁺ (p×p), FᵀY (p×d), F = k(X_c, L) T
    sums (p×p, p×d) ◀──────────────────────────  pairwise tree reduction over the chunks
    M = (FᵀF + nεI)⁻¹, eigenproblem / coefficients (the same functions as the in-memory fit)
    predict / eigenfunctions (dask X) ─────────▶ per chunk: landmark_evaluate(kernel, L, coef, ·)

Every task calls the block function of :mod:`asymkern._shared.operators` that the in-memory and
torch fits sum over their row blocks (``landmark_stats`` / ``landmark_sums``: one block
function, three executors). The fitted model holds the
landmark rows and small matrices only (no dask array, no client): it pickles and predicts on
numpy or dask inputs alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._dispatch import is_dask_array, require_dask
from .kernel import DaskKernelMatrix, _tree, as_dask_data, gather, split_like, task


def _eval_task(kernel, L, coef, Xc):
    from .._shared.operators import landmark_evaluate

    return landmark_evaluate(kernel, L, coef, Xc)


def evaluate_dask(kernel, L, coef, X):
    """k(X, L) @ coef for a row-chunked dask X: a dask array (n, k) chunked like X."""
    from dask import delayed

    da = require_dask()
    Xd = as_dask_data(X, "X", allow_sparse=False)
    if Xd.shape[1] != np.shape(L)[1]:
        raise ValueError(f"X has {Xd.shape[1]} features; the functions live on "
                         f"{np.shape(L)[1]}")
    coef = np.asarray(coef)
    coef2 = coef[:, None] if coef.ndim == 1 else coef
    dt = np.result_type(np.float64, coef2.dtype)
    Ld, Cd = delayed(np.asarray(L), pure=True), delayed(coef2, pure=True)
    blocks = [da.from_delayed(task(_eval_task, kernel, Ld, Cd, xc),
                              shape=(m, coef2.shape[1]), dtype=dt)
              for xc, m in zip(Xd.to_delayed()[:, 0], Xd.chunks[0])]
    out = da.concatenate(blocks, axis=0)
    return out[:, 0] if coef.ndim == 1 else out


def _stats_task(kernel, L, T, Xc, X1c, Yc):
    from .._shared.operators import landmark_stats

    return landmark_stats(kernel, L, T, Xc, X1c, Yc)


def _landmark_step(est, kernel, X0, X1=None, Y=None):
    """The landmark step of a Dask fit, as the in-memory one
    (:class:`~asymkern._shared.operators.LandmarkStep`, host arrays): the landmark indices
    (the in-memory draw), their gathered rows L, the whitening T of the checked K_LL
    (:func:`asymkern._shared.operators.gram`) and the reduced sums over the row chunks."""
    from .._shared.operators import LandmarkStep, gram, landmark_whitening

    n = int(X0.shape[0])
    idx = _landmarks(est, n)
    L = np.asarray(DaskKernelMatrix.gather_rows(X0, idx, "landmarks"), dtype=np.float64)
    T = landmark_whitening(gram(kernel, L, what="the landmark Gram matrix K_LL", symmetric=True))
    A, C, FY = _reduce_stats(kernel, L, T, X0, X1, Y)
    return LandmarkStep(idx=idx, L=L, L_host=L, T=T, A=A, C=C, FY=FY, FG=None, n=n)


def _reduce_stats(kernel, L, T, X0, X1=None, Y=None, what: str = "landmark statistics"):
    """Tree reduction of the per-chunk landmark statistics; gathered (p×p, p×d only)."""
    from dask import delayed

    from .._shared.operators import _add_stats

    def parts(A):
        return [None] * len(X0.chunks[0]) if A is None else list(
            A.rechunk({0: X0.chunks[0], 1: -1}).to_delayed()[:, 0])

    Ld, Td = delayed(L, pure=True), delayed(T, pure=True)
    tasks = [task(_stats_task, kernel, Ld, Td, x, x1, y)
             for x, x1, y in zip(parts(X0), parts(X1), parts(Y))]
    (out,) = gather(what, _tree(tasks, _add_stats))
    return out


def _check_same_rows(A, B, name_a: str, name_b: str):
    if tuple(A.chunks[0]) != tuple(B.chunks[0]):
        raise ValueError(
            f"{name_b} is chunked differently from {name_a}'s rows ({name_b} chunks "
            f"{tuple(B.chunks[0])[:5]}, {name_a} chunks {tuple(A.chunks[0])[:5]}); the paired "
            f"samples must be chunked alike: {name_b} = {name_b}.rechunk({{0: "
            f"{name_a}.chunks[0]}})")


def _landmarks(est, n: int):
    from .._shared.operators import _check_landmark_options

    idx = _check_landmark_options(est, n)
    if idx is None:
        raise NotImplementedError(f"{type(est).__name__} on dask inputs needs landmarks "
                                  "(n_landmarks=m or an index array): the exact estimator "
                                  "forms the n×n Gram matrix")
    return idx


@dataclass(frozen=True)
class DaskLandmarkFit:
    """A landmark (Nyström-restricted) operator fit on Dask, handed back to the estimator,
    which sets the fitted attributes.

    Attributes
    ----------
    kernel, kernel_y : Kernel
        The resolved kernels (``kernel_y``: the conditional mean embedding's output kernel).
    n_features : int
    step : LandmarkStep
        The landmarks and the reduced matrices (:func:`_landmark_step`; FᵀF⁺ ``C`` is None
        for the embedding).
    y_1d : bool or None
        Whether the embedding's y was 1-D.
    """

    kernel: Any
    n_features: int
    step: Any
    kernel_y: Any = None
    y_1d: bool | None = None


def fit_cme_dask(est, X, y):
    """Fit a :class:`~asymkern.operators.ConditionalMeanEmbedding` with landmarks on dask X."""
    from .._shared.operators import as_rkhs_kernel
    da = require_dask()
    est._alpha()  # validated here too (the caller passes its own eps to the model)
    if y is None:
        raise ValueError("ConditionalMeanEmbedding requires y to be passed, but the target y is "
                         "None (paired samples y of shape (n_samples, d_y) are needed)")
    Xd = as_dask_data(split_like(X, y), "X", allow_sparse=False)  # numpy X: split like y
    n, d = (int(k) for k in Xd.shape)
    if is_dask_array(y):
        if any(np.isnan(c) for cs in y.chunks for c in cs):
            raise ValueError("y has unknown chunk sizes (NaN in y.chunks); call "
                             "y.compute_chunk_sizes() before passing it")
        if y.ndim not in (1, 2):
            raise ValueError(f"y must be 1-D or 2-D (n_samples, d_y), got {y.ndim} dimensions")
        y1d = y.ndim == 1
        Y2 = y.reshape(-1, 1) if y1d else y
        if Y2.shape[0] != n:
            raise ValueError(f"y has {Y2.shape[0]} samples; expected {n}, one per row of X")
        _check_same_rows(Xd, Y2.rechunk({0: tuple(c for c in Y2.chunks[0] if c)}), "X", "y")
        Y2 = as_dask_data(Y2.rechunk({1: -1}), "y")
    else:
        Y = np.asarray(y, dtype=np.float64)
        if Y.ndim not in (1, 2) or Y.shape[0] != n:
            raise ValueError(f"y must have shape (n,) or (n, d_y) with n = {n}, got {Y.shape}")
        if not np.all(np.isfinite(Y)):
            raise ValueError("y contains NaN or infinity; expected finite values")
        y1d = Y.ndim == 1
        Y = Y.reshape(-1, 1) if y1d else Y
        Y2 = da.from_array(Y, chunks=(Xd.chunks[0], Y.shape[1]))
    kernel_x = as_rkhs_kernel(est.kernel_x, est.kernel_x_params, "kernel_x")
    kernel_y = as_rkhs_kernel(est.kernel_y, est.kernel_y_params, "kernel_y")
    return DaskLandmarkFit(kernel=kernel_x, kernel_y=kernel_y, n_features=d, y_1d=y1d,
                           step=_landmark_step(est, kernel_x, Xd, Y=Y2))


def fit_koopman_dask(est, X, Y) -> DaskLandmarkFit:
    """The landmark fit of a :class:`~asymkern.operators.KoopmanOperator` on dask inputs
    (nothing is set on ``est``).

    ``Y is None``: X is a trajectory, pairs (x_t, x_{t+lag}) by slicing (X[lag:] rechunked to
    the chunks of X[:-lag]); else X and Y (the estimator's ``y``, the time-shifted snapshots)
    are the paired samples, chunked alike.
    """
    from .._shared.operators import as_rkhs_kernel

    _, _, lag = est._check_params()  # validated here too (the caller passes its own eps)
    Xd = as_dask_data(split_like(X, Y), "X", allow_sparse=False)  # numpy X: split like y
    if Y is None:
        if lag >= Xd.shape[0] - 1:
            raise ValueError(f"lag={lag} must be smaller than the trajectory length "
                             f"{Xd.shape[0]} minus one (at least two time-lagged pairs)")
        X0 = Xd[:-lag]
        X0 = X0.rechunk({0: tuple(c for c in X0.chunks[0] if c)})
        X1 = Xd[lag:].rechunk({0: X0.chunks[0]})
    else:
        Yd = as_dask_data(Y, "y", allow_sparse=False)
        if Yd.shape != Xd.shape:
            raise ValueError(f"y has shape {Yd.shape}; expected the shape of X {Xd.shape} "
                             "(the time-shifted snapshots y_i = Ξ^τ(x_i))")
        _check_same_rows(Xd, Yd, "X", "y")
        X0, X1 = Xd, Yd
    kernel = as_rkhs_kernel(est.kernel, est.kernel_params)
    return DaskLandmarkFit(kernel=kernel, n_features=int(X0.shape[1]),
                           step=_landmark_step(est, kernel, X0, X1, X1))
