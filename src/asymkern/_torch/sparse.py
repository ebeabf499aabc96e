"""Sparse precomputed kernel matrices on a torch device (private).

:class:`~asymkern.KernelSVD` with ``kernel='precomputed'`` accepts a sparse G (a scipy sparse
matrix, as the numpy path does, or a sparse torch tensor of any layout). On the torch backend
it is held as two CSR tensors on the device, G and Gᵀ (``torch.sparse_csr_tensor``, duplicates
summed and column indices sorted), so that the products G·B and Gᵀ·B the ARPACK and randomized
solvers need are sparse-times-dense products with a row-compressed left factor on CPU and CUDA
alike. Nothing here forms G densely except :meth:`TorchSparseMatrix.to_dense`, which the dense
solver and the weighted fit call (the numpy path densifies G for them too).
"""

from __future__ import annotations

import warnings

import numpy as np

from .._backend import LazyMatrix, ops_of
from .._dispatch import is_torch_tensor, require_torch


def is_sparse_input(X) -> bool:
    """Whether ``X`` is a scipy sparse matrix or array, or a sparse torch tensor."""
    if is_torch_tensor(X):
        torch = require_torch()
        return X.layout != torch.strided
    import scipy.sparse as sp

    return sp.issparse(X)


def _scatter(B, index, k: int):
    """E (k × b) with E[index[j]] += B[j]: G[:, index] @ B = G @ E (repeated indices add up)."""
    torch = require_torch()
    E = torch.zeros((k, B.shape[1]), dtype=B.dtype, device=B.device)
    return E.index_add_(0, index, B)


class TorchSparseMatrix(LazyMatrix):
    """A sparse n×m matrix G on a torch device, for products with G and Gᵀ.

    Parameters
    ----------
    G, GT : sparse CSR tensors of shape (n, m) and (m, n)
        The matrix and its transpose, on the same device, of the same floating dtype.

    Notes
    -----
    It offers the interface of :class:`~.kernels.TorchKernelMatrix` that the product-only
    solvers use (``shape``, ``dtype``, ``device``, ``matmat``, ``rmatmat``, ``to_dense``), and
    is its own dtype/device template. Entry access (``block``, the Nyström landmark blocks) is
    not offered.
    """

    is_sparse = True

    def __init__(self, G, GT):
        torch = require_torch()
        self.G, self.GT = G, GT
        self.shape = (int(G.shape[0]), int(G.shape[1]))
        self._template = torch.empty((0, 0), dtype=G.dtype, device=G.device)
        self.ops = ops_of(self._template)
        self.dtype = self.ops.dtype(self._template)  # numpy dtype (the protocol's)
        self.device = G.device

    def template(self):
        """An empty tensor of G's dtype on G's device (the dtype/device of results)."""
        return self._template

    def block(self, rows, cols):
        """Entry access is not offered for a sparse G (the Nyström landmark blocks)."""
        raise NotImplementedError("entries of a sparse precomputed G are not available on the "
                                  "torch backend (solver='nystrom' with a sparse G); use "
                                  "'arpack', 'randomized' or 'block_krylov'")

    @property
    def T(self) -> TorchSparseMatrix:
        """Gᵀ (the two CSR tensors swapped, nothing copied)."""
        return TorchSparseMatrix(self.GT, self.G)

    def matmat(self, B, cols=None):
        """G[:, cols] @ B (``cols``: an index tensor, None for every column)."""
        if cols is not None:
            B = _scatter(B, cols, self.shape[1])
        return self.G @ B

    def rmatmat(self, B, rows=None):
        """G[rows, :]ᵀ @ B (``rows``: an index tensor, None for every row)."""
        if rows is not None:
            B = _scatter(B, rows, self.shape[0])
        return self.GT @ B

    def sums64(self):
        """Row sums (n,) and column sums (m,) of G as float64 tensors."""
        torch = require_torch()
        return tuple((M.to(torch.float64) @ torch.ones((M.shape[1], 1), dtype=torch.float64,
                                                        device=self.device))[:, 0]
                     for M in (self.G, self.GT))

    def to_dense(self):
        """The dense n×m tensor (a new tensor)."""
        return self.G.to_dense()

    def means64(self):
        """Row and column means (float64 tensors) and the grand mean, from the sums of the
        stored entries (:meth:`sums64`)."""
        rows, cols = self.sums64()
        n, m = self.shape
        return rows / m, cols / n, float(rows.sum()) / (n * m)


def as_sparse_matrix(X, device, name: str = "X", dtype=None) -> TorchSparseMatrix:
    """A validated :class:`TorchSparseMatrix` on ``device`` (the input is never modified).

    Parameters
    ----------
    X : scipy sparse matrix or sparse torch tensor (any layout) of shape (n, m)
    device : torch.device
    name : str
        The argument's name, for the error messages.
    dtype : torch.dtype, optional
        Cast to it; default: float32 and float64 kept, any other type to float64.

    Raises
    ------
    TypeError
        For non-numeric entries.
    ValueError
        For complex entries, a non-2-D or empty matrix, or NaN / infinity among the stored
        entries.
    """
    torch = require_torch()
    if is_torch_tensor(X):
        if X.is_complex():
            raise ValueError(f"Complex data not supported: {name} is complex-valued; "
                             "expected real numbers")
        if X.ndim != 2 or X.dense_dim() != 0:
            raise ValueError(f"{name} must be a 2-D sparse matrix, got a sparse tensor of "
                             f"shape {tuple(X.shape)}")
        C = X.detach().to_sparse_coo().coalesce()
        idx, vals, shape = C.indices(), C.values(), tuple(int(k) for k in X.shape)
        if min(shape) == 0:
            raise ValueError(f"{name} is empty (shape {shape}); expected at least one row and "
                             "one column")
    else:
        from .._validation import as_data

        A = as_data(X, name, allow_sparse=True).tocoo()  # named errors: dtype, NaN, empty
        idx = torch.as_tensor(np.vstack([A.row, A.col]).astype(np.int64))
        vals, shape = torch.as_tensor(A.data), tuple(int(k) for k in A.shape)
    if dtype is not None:
        vals = vals.to(dtype)
    elif vals.dtype not in (torch.float32, torch.float64):
        vals = vals.to(torch.float64)
    if vals.numel() and not bool(torch.isfinite(vals).all()):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    with warnings.catch_warnings():  # torch's one-time note that sparse CSR is a beta layout
        warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support")
        C = torch.sparse_coo_tensor(idx, vals, size=shape, check_invariants=True)
        C = C.coalesce().to(device)
        return TorchSparseMatrix(C.to_sparse_csr(), C.t().coalesce().to_sparse_csr())
