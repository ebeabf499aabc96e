"""KernelSVD's torch primitives: input conversion to tensors on the device (private).

:class:`~asymkern.KernelSVD` runs its own code on every executor (the fit through
``_fit_matrix`` and :func:`asymkern.linalg.top_svd`, the weighted fit, the centring and the
transforms, written once against :mod:`asymkern._backend`). What is left here is what only
torch knows: turning the inputs of one call into tensors on the compute device (dense data,
dense or sparse precomputed kernel matrices, the lazy :class:`~.kernels.TorchKernelMatrix`),
the limits of the torch kernels (no sparse data features), and whether the outputs go back
as numpy arrays (numpy input with ``device`` set) or stay tensors (tensor input).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._backend import DenseMatrix, LazyMatrix
from .._dispatch import any_torch, is_torch_tensor, require_torch
from .._validation import check_tensor_shape
from .device import as_tensor, resolve_device, to_numpy
from .kernels import TorchKernel, TorchKernelMatrix
from .sparse import as_sparse_matrix, is_sparse_input


@dataclass(frozen=True)
class TorchInputs:
    """The torch executor's conversions for one KernelSVD call.

    Parameters
    ----------
    device : torch.device
        Where the tensors live.
    host_out : bool
        Numpy input (``device`` set): results go back as numpy arrays.
    dtype : torch.dtype, optional
        Cast every input to it (a transform: the fit's dtype); default: float32 and float64
        kept, other types as float64.
    """

    device: Any
    host_out: bool
    dtype: Any = None

    @classmethod
    def for_fit(cls, device, X, Z) -> TorchInputs:
        """The conversions of ``fit(X, Z=Z)`` with the estimator's ``device`` parameter."""
        require_torch()
        return cls(resolve_device(device, X, Z), not any_torch(X, Z))

    @classmethod
    def for_transform(cls, like, X) -> TorchInputs:
        """The conversions of a transform: the device and dtype of the fitted tensor
        ``like``."""
        return cls(like.device, not any_torch(X), like.dtype)

    @staticmethod
    def is_sparse(A) -> bool:
        """Whether ``A`` is a scipy sparse matrix or a sparse tensor."""
        return A is not None and is_sparse_input(A)

    @staticmethod
    def check_sparse_fit(precomputed: bool, solver: str) -> None:
        """Refuse the sparse fits the torch kernels cannot run (``NotImplementedError``)."""
        if not precomputed:
            raise NotImplementedError(
                "sparse data features are not available on the torch backend (its kernels work "
                "on dense feature blocks): pass dense X and Z (e.g. X.toarray()), a sparse "
                "kernel matrix with kernel='precomputed', or use device=None for the numpy path")
        if solver == "nystrom":
            raise NotImplementedError(
                "solver='nystrom' with a sparse precomputed G is not available on the torch "
                "backend (the landmark blocks G[I, J] need entries of G); use solver='arpack', "
                "'randomized', 'block_krylov' or 'dense', or pass G dense")

    @staticmethod
    def refuse_sparse(name: str) -> None:
        """Refuse sparse new data (not kernel values) in a transform."""
        raise NotImplementedError(
            f"sparse {name} is not available on the torch backend (its kernels work on dense "
            f"feature blocks); pass a dense {name} (e.g. {name}.toarray())")

    def data(self, A, name: str, *, copy: bool = False, like=None):
        """Dense data ``A`` as a checked 2-D tensor on the device (``like``: in its dtype;
        ``copy``: never sharing the caller's memory).

        Raises
        ------
        ValueError
            Besides :func:`~.device.as_tensor`'s refusals, for no rows or no features, naming
            ``name`` (the numpy path's :func:`~asymkern._validation.as_data` rule).
        """
        dtype = like.dtype if like is not None else self.dtype
        T = as_tensor(A, self.device, name, dtype=dtype, copy=copy)
        check_tensor_shape(T, "KernelSVD", name)
        return T

    def matrix(self, G, name: str) -> LazyMatrix:
        """A precomputed kernel matrix (or kernel rows): CSR tensors when sparse, else the
        dense tensor (never copied, never written to) read in blocks within the memory
        budget (:class:`~asymkern._backend.DenseMatrix`).

        Raises
        ------
        ValueError
            Besides the conversions' refusals, for a matrix without rows or columns, naming
            ``name``.
        """
        M: LazyMatrix
        if self.is_sparse(G):
            M = as_sparse_matrix(G, self.device, name, dtype=self.dtype)
        else:
            M = DenseMatrix(as_tensor(G, self.device, name, dtype=self.dtype))
        check_tensor_shape(M, "KernelSVD", name)
        return M

    @staticmethod
    def kernel_matrix(kernel, X, Z, *, reference=None, working_memory: float | None = None,
                      row_norms=None) -> TorchKernelMatrix:
        """The lazy G = [κ(x_i, z_j)] on the device (``row_norms``: the rows' normalisers
        over ``reference``, from :meth:`row_norms`)."""
        from ..config import get_config

        wm = get_config()["working_memory"] if working_memory is None else working_memory
        return TorchKernelMatrix(TorchKernel(kernel, int(X.shape[1])), X, Z,
                                 reference=reference, working_memory=float(wm),
                                 log_norm=row_norms)

    @staticmethod
    def row_norms(G):
        """The normalisers of G's rows (a row-normalised kernel), else None: kept by the fit
        for the right scores of new columns."""
        normalised = isinstance(G, TorchKernelMatrix) and G.kernel.row_normalized
        return G.log_norm() if normalised else None

    def out(self, a):
        """``a`` as the caller's type: numpy for numpy input, else the tensor."""
        return to_numpy(a) if self.host_out and is_torch_tensor(a) else a

