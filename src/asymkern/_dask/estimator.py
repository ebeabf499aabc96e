"""KernelSVD on Dask: ``fit``/``transform``/``transform_right`` for dask inputs.

``fit(A)`` with one dask data matrix (rows against columns) builds its two sets with the
compatibility transform of :mod:`asymkern._dask.compat`; transforms after such a fit map the new
samples by the same C inside the tasks.

``KernelSVD`` hands dask inputs here at the top of its entry points. The fit builds a
:class:`~asymkern._dask.kernel.DaskKernelMatrix` and then runs the estimator's own
``_fit_matrix`` (centring statistics, ``top_svd``), which dispatches to the Dask executors:
U and V are dask arrays chunked like X and Z. Transforms of new points are dask arrays whose
row chunks follow the new data; each task computes its kernel block against the landmarks (or
all training points) and applies the same in-memory function (``NystromResult.extend_rows`` /
``extend_cols``, centring of ``KernelMatrix``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._backend import DenseMatrix
from .._dispatch import is_dask_array, require_dask
from .kernel import DaskKernelMatrix, as_dask_data, gather


@dataclass(frozen=True)
class DaskFitInputs:
    """What KernelSVD's fit needs from the Dask executor (the estimator sets the fitted
    attributes from it and runs its own ``_fit_matrix`` on ``G``).

    Attributes
    ----------
    G : DaskKernelMatrix or dask array
        The lazy kernel matrix (a precomputed G as given).
    n_features : int
        ``n_features_in_``.
    z_features : int or None
        ``z_features_in_`` (None for a precomputed G).
    kernel : Kernel or None
        The resolved kernel (None for a precomputed G).
    bandwidth : float or None
        The 'auto' bandwidth resolved by the median heuristic (None otherwise).
    compat : DaskCompatibility or None
        The compatibility transform of ``fit(A)`` with N ≠ M.
    X_fit, Z_fit : dask array or None
        The two sets the kernel sees.
    """

    G: Any
    n_features: int
    z_features: int | None = None
    kernel: Any = None
    bandwidth: float | None = None
    compat: Any = None
    X_fit: Any = None
    Z_fit: Any = None


def fit_inputs(est, X, Z) -> DaskFitInputs:
    """KernelSVD's fit inputs on dask X (and Z): checks, the kernel (with the 'auto'
    bandwidth), the compatibility transform of one data matrix, and the lazy G; nothing is set
    on ``est``."""
    from ..kernels import get_kernel

    da = require_dask()
    if est._precomputed():
        if Z is not None:
            raise ValueError("Z must be None when kernel='precomputed' (pass G as X)")
        if est.gamma is not None:
            raise ValueError(f"gamma={est.gamma!r} cannot be used with kernel='precomputed' "
                             "(the kernel matrix is given); leave gamma=None")
        if est.center:
            raise NotImplementedError("center=True with a precomputed dask G is not available "
                                      "yet; centre G yourself or pass the data sets")
        G = X if is_dask_array(X) else da.from_array(np.asarray(X))
        if any(np.isnan(c) for cs in G.chunks for c in cs):
            raise ValueError("X (precomputed G) has unknown chunk sizes; call "
                             "X.compute_chunk_sizes() first")
        return DaskFitInputs(G=G, n_features=int(G.shape[1]))
    from .._shared.ksvd import build_kernel

    # estimator-level gamma and the 'auto' bandwidth placeholder, exactly as in memory
    kernel, auto_bw = build_kernel(est)
    compat = features = bandwidth = None
    if Z is None:  # one data matrix A: rows against columns (Tao et al., 2024, Remark 2.3)
        X, Z, features, compat = _data_matrix_sets(est, X, kernel)
    G = DaskKernelMatrix(kernel, X, Z, center=False, working_memory=est.working_memory)
    if auto_bw:
        from .._shared.ksvd import _resolve_bandwidth, median_sample_indices

        # the same rows as the in-memory heuristic (≤ 500 per side), gathered: same value
        i, j = median_sample_indices(int(G.X.shape[0]), int(G.Z.shape[0]))
        Xs = G.gather_rows(G.X, i, "bandwidth sample of X")
        Zs = G.gather_rows(G.Z, j, "bandwidth sample of Z")
        params, bandwidth = _resolve_bandwidth(dict(est.kernel_params), Xs, Zs)
        kernel = get_kernel(est.kernel, **params)
        G = DaskKernelMatrix(kernel, G.X, G.Z, center=False, working_memory=est.working_memory)
    # fit(A): rows have M features, columns (the new z of transform_right) N
    n_feat, z_feat = features or (int(G.X.shape[1]), int(G.Z.shape[1]))
    return DaskFitInputs(G=G, n_features=n_feat, z_features=z_feat, kernel=kernel,
                         bandwidth=bandwidth, compat=compat, X_fit=G.X, Z_fit=G.Z)


def _data_matrix_sets(est, X, kernel):
    """``fit(A)`` with one dask data matrix A (N×M): the two sets (X, Z) the kernel sees.

    Rows x_i ∈ R^M against columns z_j ∈ R^N; when N ≠ M one side is mapped by the
    compatibility matrix of ``est.compat`` (Tao et al., 2024, Remark 2.3, Alg. 1 App. D), computed
    on Dask by :class:`~asymkern._dask.compat.DaskCompatibility`; N = M: X = A, Z = Aᵀ (as in
    memory, no compat). Returns (X, Z, (n_features_in_, z_features_in_) = (M, N), the fitted
    compatibility transform or None).
    """
    import dask

    from .compat import DaskCompatibility, densify, transpose_rows

    A = as_dask_data(X, "X", allow_sparse=True)
    N, M = (int(k) for k in A.shape)
    if N != M and est.compat is None:
        raise ValueError(
            f"X is a {N}x{M} data matrix whose rows (dimension {M}) and columns "
            f"(dimension {N}) differ: set compat to 'pca', 'pinv', 'random' or a matrix, "
            "or pass the second set as Z"
        )
    compat = None
    if N == M:  # Aᵀ once, by a shuffle of A's chunks; kept in the cluster (as for side 'x')
        (Zt,) = dask.persist(transpose_rows(A))
        Xv, Zv = A, Zt
    else:
        compat = DaskCompatibility(est.compat, est.random_state).fit(A)
        Xv, Zv = compat.sets(A)
    if not kernel.accepts_sparse:
        Xv, Zv = densify(Xv), densify(Zv)
    return Xv, Zv, (M, N), compat


def _result(out, was_dask: bool):
    if was_dask:
        return out
    (res,) = gather("transform of in-memory input", out)
    return res


def _check_new(est, A, name: str, expected: int):
    """Validate new dask samples; after a ``fit(A)`` with a compat, map them by C."""
    from ..kernels import CompatibilityTransform
    from .compat import DaskCompatibility, densify, map_in_memory

    ok = est.kernel_.accepts_sparse
    compat = est.compat_
    A = as_dask_data(A, name, allow_sparse=ok or compat is not None)
    if A.shape[1] != expected:
        raise ValueError(f"{name} has {A.shape[1]} features, but KernelSVD is expecting "
                         f"{expected} features as input")
    left = name == "X"
    if isinstance(compat, DaskCompatibility):
        A = compat.transform_x(A) if left else compat.transform_z(A)
    elif isinstance(compat, CompatibilityTransform):
        A = map_in_memory(compat, A, left)
    return A if ok else densify(A)


def transform_dask(est, X, left: bool = True):
    """Left (``left=True``: e(x)) or right (e(z)) projection scores as a dask array.

    The new points' lazy matrix (a :class:`DaskKernelMatrix`, or the precomputed dask rows)
    goes through the estimator's own score algebra (``KernelSVD._scores``: the products with
    the weighted singular vectors or the Nyström extension, the centring of new points and the
    weighted row normaliser), written once for every executor.
    """
    check_is_fitted(est, "singular_values_")
    if getattr(est, "torch_fit_", False):
        raise ValueError("this KernelSVD was fitted with torch (tensors or device=...), whose "
                         "factors live on its device; transform torch tensors or numpy arrays "
                         "(X.compute()), or fit it on dask arrays to transform dask arrays")
    was_dask = is_dask_array(X)
    if est._precomputed():
        da = require_dask()
        K = X if is_dask_array(X) else da.from_array(np.asarray(X))
        expected = est.n_cols_ if left else est.n_rows_
        if K.shape[1] != expected:
            raise ValueError(f"precomputed input has {K.shape[1]} columns; expected {expected}")
        K = K.rechunk({1: -1}).astype(np.float64 if K.dtype != np.float32 else np.float32)
        return _result(est._scores(DenseMatrix(K), False, left), was_dask)
    if left:
        Xn = _check_new(est, X, "X", est.n_features_in_)
        G = DaskKernelMatrix(est.kernel_, Xn, est.Z_fit_, reference=est.Z_fit_,
                             working_memory=est.working_memory)
    else:  # κ(x_i, z): the training rows against the new columns, used transposed
        Zn = _check_new(est, X, "Z", est.z_features_in_)
        G = DaskKernelMatrix(est.kernel_, est.X_fit_, Zn, reference=est.Z_fit_,
                             working_memory=est.working_memory)
        lse_fit = getattr(est, "_dask_lse", None)
        if est.kernel_.row_normalized and lse_fit is not None:
            G._lse = lse_fit  # the training rows' normalisers, persisted at fit time
    return _result(est._scores(G, not left, left), was_dask)


def plain_state(state: dict) -> dict:
    """The pickled state of a Dask-fitted KernelSVD with every dask array gathered to numpy.

    A model fitted on dask arrays keeps its training sets, singular vectors and centring
    means as lazy dask arrays in the cluster; a pickle of them would need dask to load and a
    scheduler to use. Here they are computed once (one ``dask.compute``, checked against
    ``max_dense_memory`` first), a :class:`~asymkern._dask.compat.DaskCompatibility` becomes
    the equivalent in-memory :class:`~asymkern.kernels.CompatibilityTransform` (C formed) and
    the Nyström result's vectors are gathered, so the unpickled model transforms numpy input
    in memory without dask (and dask input still gives dask output). The live estimator is
    not changed.
    """
    import dataclasses

    import dask

    from ..config import check_memory, format_bytes
    from .compat import DaskCompatibility

    state = dict(state)
    keys = [k for k, v in state.items() if is_dask_array(v)]
    res = state.get("nystrom_")
    res_keys = [f for f in ("U", "V") if res is not None and is_dask_array(getattr(res, f, None))]
    compat = state.get("compat_")
    lazy = [state[k] for k in keys] + [getattr(res, f) for f in res_keys]
    nbytes = sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in lazy)
    if isinstance(compat, DaskCompatibility):
        nbytes += compat.dense_nbytes()
    check_memory(nbytes, "pickling a KernelSVD fitted on dask arrays (its training sets, "
                 "singular vectors and means gathered as numpy)",
                 "joblib/cloudpickle of the live model with dask installed where it is loaded, "
                 f"or a fit on fewer samples (the arrays are {format_bytes(nbytes)})")
    values = dask.compute(*lazy) if lazy else ()
    state.update(zip(keys, values))  # the estimator's own arrays come first in ``values``
    if res is not None and res_keys:
        state["nystrom_"] = dataclasses.replace(res, **dict(zip(res_keys, values[len(keys):])))
    if isinstance(compat, DaskCompatibility):
        state["compat_"] = compat.to_in_memory()
    state["_dask_lse"] = None  # recomputed from Z_fit_ by the in-memory transforms
    return state


def holds_dask(est) -> bool:
    """True when ``est`` keeps lazy dask objects (a live Dask fit), False for a model with plain
    numpy attributes (fitted in memory, or a Dask fit unpickled)."""
    res = getattr(est, "nystrom_", None)
    return (any(is_dask_array(v) for v in vars(est).values())
            or type(getattr(est, "compat_", None)).__name__ == "DaskCompatibility"
            or any(is_dask_array(getattr(res, f, None)) for f in ("U", "V")))
