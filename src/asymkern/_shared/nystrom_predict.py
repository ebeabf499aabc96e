"""The Nyström machines' predictions, written once for every executor.

A fitted machine of Li, Liu and Zhang (Nyström kernel machines, Algorithm 1) predicts
f(z) = K(z, C) β + b through its landmarks (LLA, NCR, SPA's landmark form) or
f(z) = K(z, X_fit) α + b through every training point (GSA's test phase, exact). The products
are the same for numpy and torch; what differs per executor is where K's blocks come from,
which a :class:`FittedModel` gives:

* ``kind``: 'points' (K(Z, C) by row blocks, :meth:`FittedModel.landmark_rows`), 'gaussian'
  (a sketch C_H = X_H S: K(Z, C) β = K(Z, X_fit)(S β), the coefficients already S β) or
  'precomputed' (Z is K(Z, X_fit): K(Z, C) = Z[:, idx]);
* :meth:`FittedModel.step`: rows per block of K(Z, C) (None: one block);
* :meth:`FittedModel.full_times`: K(Z, X_fit) B through the executor's kernel matrix (numpy's
  :class:`~asymkern.kernels.KernelMatrix`, torch's ``TorchKernelMatrix``, both
  :class:`~asymkern._backend.LazyMatrix`), streamed over row blocks of Z.

:class:`HostModel` is the numpy side (built from the fitted attributes when predicting; a
sketch is 'points' there, its landmark rows the basis' K(Z, X_fit) S, numpy's order);
``asymkern._torch.machines.DeviceModel`` is torch's. NystromSVC's labels follow its solver
(:func:`ovr_values`, :func:`label_index`), on the executor's arrays through
:func:`~asymkern._backend.ops_of`.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .._backend import NUMPY, ArrayOps, ops_of


class FittedModel(Protocol):
    """What predictions read of a fitted Nyström machine on one executor (see the module
    docstring)."""

    kind: str
    idx: Any
    beta: Any
    dual: Any
    intercept: Any

    @property
    def ops(self) -> ArrayOps: ...

    def step(self, k: int) -> int | None: ...

    def landmark_rows(self, Z) -> Any: ...

    def full_times(self, Z, B, dtype=None) -> Any: ...


class HostModel:
    """The numpy side of the predictions of an in-memory fit.

    K(Z, C) is the basis' :meth:`~asymkern._shared.nystrom_basis.NystromBasis.landmark_kernel`
    in one block (its kernel values are written block by block; a sketch's K(Z, X_fit) S is
    formed there, then multiplied by β), K(Z, X_fit) the estimator's streamed kernel matrix.

    Parameters
    ----------
    est : NystromKernelRidge, NystromKernelPCA or NystromSVC
        Fitted in memory.
    """

    ops = NUMPY

    def __init__(self, est):
        self.est = est
        self.kind = "precomputed" if est._precomputed() else "points"
        self.idx = getattr(est, "landmark_indices_", None)
        self.beta = getattr(est, "landmark_coef_", None)
        self.dual = getattr(est, "dual_coef_", None)
        self.intercept = getattr(est, "intercept_", None)

    def step(self, k: int) -> int | None:
        return None

    def landmark_rows(self, Z) -> np.ndarray:
        return self.est.basis_.landmark_kernel(Z)

    def full_times(self, Z, B, dtype=None) -> np.ndarray:
        return self.est._exact_kernel(Z).matmat(B)


def landmark_times(model: FittedModel, Z, B):
    """K(Z, C) B in float64 (n_z × k) on the executor: Z[:, idx] B ('precomputed'),
    K(Z, X_fit) B ('gaussian', B = S β) or K(Z, C) B over row blocks of Z ('points')."""
    ops = model.ops
    if model.kind == "precomputed":
        return ops.astype(Z[:, model.idx], np.float64) @ B
    if model.kind == "gaussian":
        return full_times(model, Z, B)
    n = int(Z.shape[0])
    step = model.step(int(B.shape[1]))
    if step is None or step >= n:
        return model.landmark_rows(Z) @ B
    out = ops.empty((n, int(B.shape[1])), B, np.float64)
    for a in range(0, n, step):
        out[a:a + step] = model.landmark_rows(Z[a:a + step]) @ B
    return out


def full_times(model: FittedModel, Z, B, dtype=None):
    """K(Z, X_fit) B (n_z × k, float64) on the executor, streamed over row blocks of Z; Z B
    for a precomputed kernel (Z is then K(Z, X_fit)). ``dtype``: the executor's dtype of the
    kernel blocks' products (default: float64 from the kernel values)."""
    if model.kind == "precomputed":
        return model.ops.astype(Z, np.float64) @ B
    return model.full_times(Z, B, dtype)


def decision(model: FittedModel, Z, full: bool, dtype=None):
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
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            col = raw[:, p]
            neg = ops.astype(col < 0, dt)
            conf[:, i] += col
            conf[:, j] -= col
            votes[:, i] += 1 - neg
            votes[:, j] += neg
            p += 1
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
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            pos = ops.astype(raw[:, p] > 0, np.int64)
            votes[:, i] += pos
            votes[:, j] += 1 - pos
            p += 1
    return votes.argmax(1)


def svc_values(raw, k: int, libsvm: bool):
    """NystromSVC's decision values shaped as its solver's: a vector for two classes,
    scikit-learn's 'ovr' values from libsvm's one-vs-one ones (:func:`ovr_values`), else
    liblinear's one-vs-rest values as they are (views, no copy)."""
    if raw.shape[1] == 1:
        return raw[:, 0]
    return ovr_values(raw, k) if libsvm else raw
