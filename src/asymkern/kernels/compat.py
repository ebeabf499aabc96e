"""Dimensionality-compatibility matrices (paper 000, Remark 2.3 and Algorithm 1, App. D).

A data matrix A ∈ R^{N×M} is read as two sets: its rows x_i ∈ R^M (N of them) and its columns
z_j ∈ R^N (M of them). A kernel κ(x, z) needs equal dimensions, so one side is mapped:
if M > N, x ↦ C_xᵀ x with C_x ∈ R^{M×N}; if N > M, z ↦ C_zᵀ z with C_z ∈ R^{N×M}; if N = M, C = I.

Methods: ``'pinv'`` (a0, C_x = ((XXᵀ)^† X)ᵀ), ``'pca'`` (a1, C_x = argmin ‖X − X C Cᵀ‖_F over
orthonormal C: the leading right singular vectors, no centring, as printed), ``'random'``
(a2, C_x = randn(M, N)), or a user-given matrix (e.g. learned end to end, a3).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from .._validation import as_data

_ALIASES = {"a0": "pinv", "a1": "pca", "a2": "random", "a3": "learnable"}


class CompatibilityTransform:
    """Fit a compatibility matrix for a data matrix A and map rows/columns into one dimension.

    Attributes after :meth:`fit`: ``side_`` ('x', 'z' or 'none'), ``C_`` (or None),
    ``n_rows_`` (N), ``n_cols_`` (M), ``dim_`` (the common dimension min(N, M)).
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
                "compat must be one of 'pinv'/'a0', 'pca'/'a1', 'random'/'a2' or a matrix, "
                f"got {m!r}"
            )
        m = _ALIASES.get(m.lower(), m.lower())
        if m == "learnable":
            raise ValueError(
                "compat='a3' (learnable) is trained end to end with a downstream head: use "
                "asymkern.experiments.learnable_compat (needs the torch extra) and pass the "
                "learned matrix as compat=C"
            )
        if m not in ("pinv", "pca", "random"):
            raise ValueError(f"unknown compat {self.method!r}; expected 'pinv', 'pca', 'random'")
        return m

    def fit(self, A):
        A = as_data(A, "X", allow_sparse=True)
        N, M = A.shape
        self.n_rows_, self.n_cols_ = N, M
        self.dim_ = min(N, M)
        method = self._method()
        if N == M and not isinstance(method, np.ndarray):
            self.side_, self.C_ = "none", None
            return self
        self.side_ = "x" if M > N else "z"
        # the set that gets mapped, as a (count × dim) matrix: rows of A, or columns of A
        S = A if self.side_ == "x" else A.T
        big, small = S.shape[1], S.shape[0]  # C has shape (big, small)
        if isinstance(method, np.ndarray):
            C = np.asarray(method, dtype=float)
            if C.shape != (big, small):
                raise ValueError(
                    f"compat matrix has shape {C.shape}; expected ({big}, {small}) for a "
                    f"{N}x{M} data matrix"
                )
            if not np.all(np.isfinite(C)):
                raise ValueError("compat matrix contains NaN or infinity")
        elif method == "random":
            C = check_random_state(self.random_state).standard_normal((big, small))
        else:
            Sd = S.toarray() if sp.issparse(S) else np.asarray(S, dtype=float)
            if method == "pca":
                _, _, Vt = np.linalg.svd(Sd, full_matrices=False)
                C = Vt[:small].T
            else:  # pinv: ((S Sᵀ)^† S)ᵀ
                C = (np.linalg.pinv(Sd @ Sd.T, hermitian=True) @ Sd).T
        self.C_ = C.astype(A.dtype, copy=False)
        return self

    def _check(self):
        if not hasattr(self, "side_"):
            raise RuntimeError("CompatibilityTransform is not fitted; call fit(A) first")

    def transform_x(self, Xrows):
        """Map row samples x ∈ R^M into the common dimension."""
        self._check()
        if self.side_ == "x":
            out = Xrows @ self.C_
            return np.asarray(out.toarray() if sp.issparse(out) else out)
        return Xrows

    def transform_z(self, Zrows):
        """Map column samples z ∈ R^N (given as rows, i.e. Aᵀ) into the common dimension."""
        self._check()
        if self.side_ == "z":
            out = Zrows @ self.C_
            return np.asarray(out.toarray() if sp.issparse(out) else out)
        return Zrows

    def fit_transform(self, A):
        """Fit on A and return (mapped rows of A, mapped columns of A as rows)."""
        self.fit(A)
        A = as_data(A, "X", allow_sparse=True)
        At = A.T.tocsr() if sp.issparse(A) else A.T
        return self.transform_x(A), self.transform_z(At)
