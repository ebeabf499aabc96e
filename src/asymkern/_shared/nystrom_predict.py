"""The Nyström machines' predictions, written once for every executor.

A fitted machine of Li, Liu and Zhang (Nyström kernel machines, Algorithm 1) predicts
f(z) = K(z, C) β + b through its landmarks (LLA, NCR, SPA's landmark form) or
f(z) = K(z, X_fit) α + b through every training point (GSA's test phase, exact). The products
are the same for numpy and torch: one fitted-model class, :class:`NystromModel`, holds the
fitted arrays on the fit's executor (numpy for a numpy fit, tensors on the device for a torch
fit) and forms K's blocks through the executor's primitives
(:func:`~asymkern._backend.ops_of`, ``ops.kernel_matrix``):

* ``kind``: 'points' (K(Z, C) by row blocks, :meth:`NystromModel.landmark_rows`), 'gaussian'
  (a sketch C_H = X_H S: K(Z, C) β = K(Z, X_fit)(S β), the coefficients already S β) or
  'precomputed' (Z is K(Z, X_fit): K(Z, C) = Z[:, idx]);
* :func:`full_times`: K(Z, X_fit) B through the executor's lazy kernel matrix
  (numpy's :class:`~asymkern.kernels.KernelMatrix`, torch's ``TorchKernelMatrix``, both
  :class:`~asymkern._backend.LazyMatrix`), streamed over row blocks of Z.

:func:`host_model` builds it from a numpy fit's attributes when predicting (its landmark rows
are the basis' K(Z, C) in one block, a sketch's K(Z, X_fit) S, numpy's order of the
products); :func:`training_model` records a torch fit's at fit time. NystromSVC's labels
follow its solver (:func:`ovr_values`, :func:`label_index`), on the executor's arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from .._backend import ArrayOps, ops_of
from .nystrom_basis import pass_within, row_step  # noqa: F401 - pass_within: public here


@dataclass(frozen=True)
class NystromModel:
    """The fitted state of a Nyström machine on its executor: what its predictions read
    (Li, Liu and Zhang, Nyström kernel machines, Algorithm 1's test phase).

    Attributes
    ----------
    kind : {'points', 'gaussian', 'precomputed'}
        Landmark points, a Gaussian sketch, or a precomputed kernel (an exact machine has
        'points', or 'precomputed').
    kernel : Kernel or None
        The kernel (None: precomputed), evaluated through ``ops.kernel_matrix``.
    X : array of shape (n, d) or None
        The training data on the executor (None: a pickled Dask fit, landmarks only).
    dtype : numpy.dtype
        The training dtype (of the model and its computations; outputs follow the input).
    C : array of shape (m, d) or None
        The landmark points ('points' without ``basis``).
    idx : index array or None
        The landmark columns of K ('precomputed').
    beta : array of shape (m or n, k) or None
        The landmark coefficients (a 'gaussian' sketch: S β).
    dual : array of shape (n, k) or None
        The coefficients of K(Z, X_fit) (GSA, SPA, exact).
    intercept : array of shape (k,) or None
    labels : array or None
        NystromSVC's numeric classes on the executor (None: ``classes_`` on the host).
    libsvm : bool
        NystromSVC's solver is libsvm's (one-vs-one values).
    basis : NystromBasis or None
        A numpy fit's basis: K(Z, C) is its ``landmark_kernel`` (one block).
    ridge_dtype : numpy.dtype or None
        The dtype NystromKernelRidge forms K(Z, X_fit) α in (None: float64; a torch fit: its
        training dtype, the fused product).
    """

    kind: str
    kernel: Any
    X: Any
    dtype: Any
    C: Any = None
    idx: Any = None
    beta: Any = None
    dual: Any = None
    intercept: Any = None
    labels: Any = None
    libsvm: bool = False
    basis: Any = None
    ridge_dtype: Any = None

    @property
    def ops(self) -> ArrayOps:
        """The executor's primitives."""
        return ops_of(self.X, self.intercept, self.beta)

    def landmark_rows(self, Z):
        """K(Z, C) in float64 on the executor (landmark points; a numpy fit's sketch:
        K(Z, X_fit) S)."""
        if self.basis is not None:
            return self.basis.landmark_kernel(Z)
        G = self.ops.kernel_matrix(self.kernel, Z, self.C)
        return self.ops.astype(G.to_dense(), np.float64)


def host_model(est) -> NystromModel:
    """The :class:`NystromModel` of a numpy fit (in memory, or a Dask fit predicting numpy
    input), from its fitted attributes."""
    pre = est._precomputed()
    return NystromModel(kind="precomputed" if pre else "points",
                        kernel=None if pre else est._kernel(), X=est.X_fit_,
                        dtype=est._train_dtype(), idx=getattr(est, "landmark_indices_", None),
                        beta=getattr(est, "landmark_coef_", None),
                        dual=getattr(est, "dual_coef_", None),
                        intercept=getattr(est, "intercept_", None), basis=est.basis_)


def training_model(est, X, rows, beta=None, dual=None, intercept=None, classes=None,
                   libsvm: bool = False, ridge: bool = False) -> NystromModel:
    """The :class:`NystromModel` of a fit on X's executor, recorded at fit time (torch).

    Parameters
    ----------
    est : NystromKernelRidge, NystromKernelPCA or NystromSVC
        The estimator (its kernel).
    X : array of shape (n, d)
        The training data on the executor.
    rows : LandmarkRows or None
        The landmarks of the fit (None: exact).
    beta : ndarray of shape (m, k), optional
        The host landmark coefficients (a sketch keeps S β).
    dual : array of shape (n, k), optional
    intercept : ndarray or executor array
    classes : ndarray, optional
        A classifier's labels (numeric ones are kept on the executor as ``labels``).
    libsvm : bool
        NystromSVC's solver is libsvm's.
    ridge : bool
        NystromKernelRidge: K(Z, X_fit) α in the training dtype.
    """
    kernel = None if est._precomputed() else est._kernel()
    ops, kind = ops_of(X), ("precomputed" if kernel is None else "points")
    C = idx = None
    if rows is not None:
        kind, idx = rows.kind, rows.idx
        C = rows.C if kind == "points" else None
    if beta is not None:
        beta = ops.from_host(beta, X, np.float64)
        beta = rows.S @ beta if kind == "gaussian" else beta  # K(Z, C_H)β = K(Z, X_fit)(Sβ)
    b = ops.from_host(np.atleast_1d(ops.to_host(intercept)), X, np.float64)
    labels = None
    if classes is not None and classes.dtype.kind in "biuf":
        try:  # an unsigned dtype torch lacks: the labels stay numpy
            labels = ops.from_host(classes, X, classes.dtype)
        except (TypeError, RuntimeError, AttributeError):
            labels = None
    dtype = ops.dtype(X)
    return NystromModel(kind=kind, kernel=kernel, X=X, dtype=dtype, C=C, idx=idx, beta=beta,
                        dual=dual, intercept=b, labels=labels, libsvm=libsvm,
                        ridge_dtype=dtype if ridge else None)


# ------------------------------------------------------------------------- memory budget
def kernel_row_bytes(kernel, Z, P) -> tuple[int, int]:
    """(bytes per row of Z, fixed bytes) of forming K(Z, P) block by block in numpy: the
    blocks and their temporaries (:data:`~asymkern.linalg.svd.PASS_BLOCK_ARRAYS` float64
    entries a row) and the copies of the data forming them makes
    (:func:`~asymkern.linalg.svd.data_pass_bytes`: per row of Z, and once for P)."""
    from ..kernels import KernelMatrix
    from ..linalg.svd import PASS_BLOCK_ARRAYS, data_pass_bytes

    G = KernelMatrix(kernel, Z[:1], P)
    cols = int(G.shape[1])
    return (PASS_BLOCK_ARRAYS * 8 * cols + data_pass_bytes(G, 1, 0),
            data_pass_bytes(G, 0, cols))


def rows_within(n: int, per_row: float, fixed: float, what: str, alternatives: str,
                detail: str) -> int:
    """Rows of the new points a prediction takes at a time: as many as what ``fixed`` bytes
    (held whatever the rows) leave of ``max_dense_memory`` at ``per_row`` bytes a row (all
    n at most); :class:`~asymkern.config.MemoryBudgetError` before anything is formed when
    not even one row fits.

    Parameters
    ----------
    n : int
        The number of new points.
    per_row : float
        Bytes a row holds (its kernel block, features and outputs).
    fixed : float
        Bytes held whatever the rows (operands, data copies, outputs of every row).
    what, alternatives, detail : str
        For the error message (:func:`~asymkern.config.check_memory`).

    Returns
    -------
    int
        Between 1 and n.
    """
    from ..config import check_memory
    from ..linalg.svd import budget_bytes

    left = budget_bytes() - fixed
    if per_row > left:
        check_memory(fixed + per_row, what, alternatives, detail=detail)
    return int(max(1, min(n, left // max(1, per_row))))


def _basis_rows(model: NystromModel, Z, k: int) -> int:
    """Rows of Z whose K(Z, C) B a numpy basis forms at a time within the budget: K(Z, C)
    and its kernel block (a sketch's K(Z, X_fit) blocks and K(Z, X_fit) S), the product
    with B and the n_z × k output."""
    basis, n = model.basis, int(Z.shape[0])
    m = int(basis.n_landmarks)
    sketch = basis.sketch is not None
    per_row, data = kernel_row_bytes(basis.kernel, Z, basis.X_fit if sketch else basis.centers)
    per_row += 8 * (k + (2 * m if sketch else 0))
    return rows_within(n, per_row, data + 8 * (2 * n * k + m * k),
                       f"the Nyström kernel K(Z, C) of {n} new points against {m} landmarks",
                       "fewer new points at a time, or fewer landmarks (n_landmarks)",
                       "one row of K(Z, C), its kernel block and the products, beside the "
                       f"{n}×{k} output")


def landmark_times(model: NystromModel, Z, B):
    """K(Z, C) B in float64 (n_z × k) on the executor: Z[:, idx] B ('precomputed'),
    K(Z, X_fit) B ('gaussian', B = S β) or K(Z, C) B over row blocks of Z ('points'; a numpy
    basis: as many rows at a time as ``max_dense_memory`` holds, :func:`rows_within`)."""
    ops = model.ops
    if model.kind == "precomputed":
        return ops.astype(Z[:, model.idx], np.float64) @ B
    if model.kind == "gaussian":
        return full_times(model, Z, B)
    n = int(Z.shape[0])
    if model.basis is not None:
        step = _basis_rows(model, Z, int(B.shape[1]))
    else:
        step = row_step(int(model.C.shape[0]), int(B.shape[1]))
    if step >= n:
        return model.landmark_rows(Z) @ B
    out = ops.empty((n, int(B.shape[1])), B, np.float64)
    for a in range(0, n, step):
        out[a:a + step] = model.landmark_rows(Z[a:a + step]) @ B
    return out


def full_times(model: NystromModel, Z, B, dtype=None):
    """K(Z, X_fit) B (n_z × k, float64) on the executor, streamed over row blocks of Z; Z B
    for a precomputed kernel (Z is then K(Z, X_fit)). ``dtype``: the executor's dtype of the
    kernel blocks' products (default: float64 from the kernel values). In numpy the blocks
    fit what the n_z × k output and B leave of ``max_dense_memory`` (:func:`pass_within`)."""
    ops = model.ops
    if model.kind == "precomputed":
        return ops.astype(Z, np.float64) @ B
    G = ops.kernel_matrix(model.kernel, Z, model.X)
    n, k = int(G.shape[0]), int(B.shape[1]) if B.ndim == 2 else 1
    G = pass_within(G, 8 * (2 * n * k + int(G.shape[1]) * k),
                    f"the kernel K(Z, X_fit) of {n} new points against {G.shape[1]} training "
                    "points (the test phase of Li, Liu and Zhang's Algorithm 1)",
                    "fewer new points at a time, or a landmark mode ('lla', 'ncr')")
    if dtype is not None and np.dtype(dtype) != np.float64:
        return ops.astype(G.matmat(ops.astype(B, dtype)), np.float64)
    return ops.astype(G.matmat(B), np.float64)


def decision(model: NystromModel, Z, full: bool, dtype=None):
    """K(Z, X_fit) α + b (``full``: GSA's test phase, exact) or K(Z, C) β + b, float64
    (n_z × k) on the executor."""
    if full:
        return full_times(model, Z, model.dual, dtype) + model.intercept
    return landmark_times(model, Z, model.beta) + model.intercept


def ovr_values(raw, k: int):
    """scikit-learn's 'ovr' values from libsvm's one-vs-one ones (``_ovr_decision_function``
    of ``sklearn.utils.multiclass`` with predictions dec < 0 and confidences −dec)."""
    ops = ops_of(raw)
    dt = ops.dtype(raw)
    votes = ops.zeros((int(raw.shape[0]), k), raw)
    conf = ops.zeros((int(raw.shape[0]), k), raw)
    for p, (i, j) in enumerate(combinations(range(k), 2)):
        col = raw[:, p]
        neg = ops.astype(col < 0, dt)
        conf[:, i] += col
        conf[:, j] -= col
        votes[:, i] += 1 - neg
        votes[:, j] += neg
    return votes + conf / (3 * (abs(conf) + 1))


def label_index(raw, k: int, libsvm: bool):
    """The class index (int64, on the executor) of each row of the decision values ``raw``
    (n × machines) by the solver's rule: libsvm's one-vs-one vote (a tie to the first class;
    two classes: classes_[1] for a value ≥ 0, as libsvm votes classes_[1] unless its value,
    −ours, is > 0), liblinear's sign / first largest value."""
    ops = ops_of(raw)
    if raw.shape[1] == 1:
        return ops.astype((raw[:, 0] >= 0) if libsvm else (raw[:, 0] > 0), np.int64)
    if not libsvm:  # liblinear one-vs-rest: the first largest value
        return raw.argmax(1)
    votes = ops.zeros((int(raw.shape[0]), k), raw, np.int64)
    for p, (i, j) in enumerate(combinations(range(k), 2)):
        pos = ops.astype(raw[:, p] > 0, np.int64)
        votes[:, i] += pos
        votes[:, j] += 1 - pos
    return votes.argmax(1)


def svc_values(raw, k: int, libsvm: bool):
    """NystromSVC's decision values shaped as its solver's: a vector for two classes,
    scikit-learn's 'ovr' values from libsvm's one-vs-one ones (:func:`ovr_values`), else
    liblinear's one-vs-rest values as they are (views, no copy)."""
    if raw.shape[1] == 1:
        return raw[:, 0]
    return ovr_values(raw, k) if libsvm else raw
