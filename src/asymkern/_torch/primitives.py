"""The torch executor's array primitives (:class:`asymkern._backend.ArrayOps` for tensors).

Registered by :mod:`asymkern._torch` when it is imported (without importing torch): the
algorithms of :mod:`asymkern.linalg` and the estimators then run their tall n×k algebra on the
tensors' device with ``torch.linalg``, and move only small host matrices across.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._backend import ArrayOps
from .._dispatch import require_torch
from .device import to_numpy


def torch_dtype(dtype):
    """The torch dtype of a numpy dtype (or a torch dtype, returned as is)."""
    torch = require_torch()
    if isinstance(dtype, torch.dtype):
        return dtype
    return getattr(torch, np.dtype(dtype).name)


class TorchOps(ArrayOps):
    """:class:`~asymkern._backend.ArrayOps` for torch tensors (CPU or CUDA)."""

    name = "torch"

    def __init__(self):
        self.torch = require_torch()

    def owns(self, a) -> bool:
        return isinstance(a, self.torch.Tensor)

    def to_host(self, a) -> np.ndarray:
        """``a`` on the host (:func:`~asymkern._torch.device.to_numpy` for a tensor: bfloat16
        as float32, sparse refused)."""
        return to_numpy(a) if isinstance(a, self.torch.Tensor) else np.asarray(a)

    def from_host(self, A, like, dtype=None):
        dt = like.dtype if dtype is None else torch_dtype(dtype)
        T = A if isinstance(A, self.torch.Tensor) else self.torch.as_tensor(np.ascontiguousarray(A))
        return T.to(device=like.device, dtype=dt)

    def dtype(self, a) -> np.dtype:
        """The numpy dtype of the tensor ``a``'s entries.

        Raises
        ------
        TypeError
            For a torch dtype numpy has no equivalent of (bfloat16, the float8 types, ...),
            saying which dtypes to pass instead: the algorithms that take a tensor as it is
            (:func:`asymkern.linalg.top_svd`, :func:`asymkern.linalg.asymmetric_nystrom`)
            read its dtype here (the estimators convert such input to float64 first).
        """
        name = str(a.dtype).replace("torch.", "")
        try:
            return np.dtype(name)
        except TypeError:
            raise TypeError(
                f"a torch.{name} tensor has no numpy dtype, so it cannot be passed as it is: "
                "convert it to float32 or float64 first (.float() or .double())") from None

    def astype(self, a, dtype):
        return a.to(torch_dtype(dtype))

    def empty(self, shape: tuple, like, dtype=None):
        dt = like.dtype if dtype is None else torch_dtype(dtype)
        return self.torch.empty(shape, dtype=dt, device=like.device)

    def index(self, idx, like):
        if isinstance(idx, slice) or isinstance(idx, self.torch.Tensor):
            return idx
        return self.torch.as_tensor(np.asarray(idx), device=like.device)

    def qr(self, Y):
        return self.torch.linalg.qr(Y)

    def orth(self, Y):
        return self.torch.linalg.qr(Y).Q

    def lu_basis(self, Y):
        # P L from the packed factor and LAPACK's row interchanges (k of them, read on the
        # host): ``torch.linalg.lu`` would return P as a dense n × n matrix
        # ``_ex``: an exactly rank-deficient Y (a rank-one kernel matrix: zero queries of the
        # softmax kernel, float16 products of rows constant to its resolution) is no error,
        # as for scipy's ``lu``: LAPACK leaves the column of a zero pivot unscaled
        LU, pivots, info = self.torch.linalg.lu_factor_ex(Y)
        k = min(Y.shape)
        L = LU[:, :k].tril(-1)
        L.diagonal().fill_(1)
        if int(info) != 0 and not bool(self.torch.isfinite(L).all()):
            # a solver that divided by the zero pivot: an orthonormal basis of range(Y)
            return self.torch.linalg.qr(Y).Q
        perm = np.arange(Y.shape[0])
        for i, j in enumerate(pivots.cpu().numpy()[:k] - 1):  # row i swapped with row j
            perm[[i, j]] = perm[[j, i]]
        rows = np.empty_like(perm)
        rows[perm] = np.arange(perm.size)  # (P L)[perm] = L
        return L[self.torch.as_tensor(rows, device=L.device)]

    def svd(self, A):
        return self.torch.linalg.svd(A, full_matrices=False)

    def householder(self, A):
        H, tau = self.torch.geqrf(A)
        m = A.shape[1]
        return (H, tau), self.torch.triu(H[:m])

    def householder_apply(self, reflectors, C, transpose: bool = False):
        H, tau = reflectors
        return self.torch.ormqr(H, tau, C.to(H.dtype), left=True, transpose=transpose)

    def concat(self, blocks: Sequence):
        return self.torch.cat(list(blocks), dim=1)

    def col_norms(self, U) -> np.ndarray:
        return self.to_host(self.torch.linalg.norm(U, dim=0))

    def argmax_abs_cols(self, U) -> np.ndarray:
        return self.to_host(self.torch.argmax(self.torch.abs(U), dim=0)).astype(np.intp)

    def rows(self, U, idx) -> np.ndarray:
        return self.to_host(U[self.index(idx, U)])

    def scale_cols(self, U, v, inplace: bool = False):
        vt = self.from_host(np.asarray(v, dtype=np.float64), U)
        return U.mul_(vt) if inplace else U * vt

    def contiguous(self, a):
        return a.contiguous()

    def all_finite(self, a) -> bool:
        from .device import all_finite

        return all_finite(a)

    # --- operators
    def eigh(self, A):
        return self.torch.linalg.eigh(A)

    def eigh_top(self, A, r: int):
        lam, Q = self.torch.linalg.eigh(A)
        return lam.flip(0)[:r], Q.flip(1)[:, :r]

    def argsort_desc(self, w):
        return self.torch.argsort(-w, stable=True)

    def eig(self, A):
        return self.torch.linalg.eig(A)

    def cho_factor(self, A):
        L, info = self.torch.linalg.cholesky_ex(A)
        if int(info) != 0:
            raise np.linalg.LinAlgError("the matrix is not positive definite")
        return L

    def cho_solve(self, factor, B):
        X = self.torch.cholesky_solve(B[:, None] if B.ndim == 1 else B, factor)
        return X[:, 0] if B.ndim == 1 else X

    def lu_factor(self, A):
        LU, piv, _ = self.torch.linalg.lu_factor_ex(A)
        return LU, piv

    def lu_solve(self, factor, B, trans: bool = False):
        return self.torch.linalg.lu_solve(factor[0], factor[1], B, adjoint=trans)

    svd_gesvd = svd  # torch has one SVD driver

    def sqrt(self, a):
        return self.torch.sqrt(a)

    def add_diag(self, A, shift: float):
        return A + shift * self.torch.eye(A.shape[0], dtype=A.dtype, device=A.device)

    def zeros(self, shape: tuple, like, dtype=None):
        dt = like.dtype if dtype is None else torch_dtype(dtype)
        return self.torch.zeros(shape, dtype=dt, device=like.device)

    def col_dots(self, A, B):
        return (A * B).sum(dim=0)

    def pivoted_cholesky(self, G, tol: float):
        # LAPACK's blocked pstrf on a host copy of G, as the numpy path (torch has no pivoted
        # Cholesky): a per-pivot loop on the device costs a host round trip and a dozen kernel
        # launches for each of the r pivots; one copy each way is cheaper and pivots as numpy
        U, piv, r = super().pivoted_cholesky(self.to_host(G), tol)
        return self.from_host(U, G), piv, r

    def solve_triangular(self, T, B):
        X = self.torch.linalg.solve_triangular(T, B[:, None] if B.ndim == 1 else B, upper=True)
        return X[:, 0] if B.ndim == 1 else X

    def kernel_matrix(self, kernel, X, Z=None, *, reference=None,
                      working_memory: float | None = None):
        from ..config import get_config
        from .kernels import TorchKernel, TorchKernelMatrix

        wm = get_config()["working_memory"] if working_memory is None else working_memory
        return TorchKernelMatrix(TorchKernel(kernel, int(X.shape[1])), X, X if Z is None else Z,
                                 reference=reference, working_memory=float(wm))

    # --- Nyström machines
    def add_diag_(self, K, alpha: float):
        K.diagonal().add_(alpha)
        return K

    def solve(self, A, B):
        return self.torch.linalg.solve(A, B)
