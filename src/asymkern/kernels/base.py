"""The kernel abstraction: κ(x, z) evaluated between two sets of samples (rows).

A kernel may be asymmetric (κ(x, z) ≠ κ(z, x)) and need not be positive semi-definite; its flags
``is_symmetric`` and ``is_psd`` say what holds, and the linear algebra relies on them only when
they are true (never symmetrise silently).

*Row-normalised* kernels (SNE, T; paper 000 §4.1, paper 001 §4.3) divide by a normaliser that sums
over a *reference set* R (the second training set):  κ(x, z) = k(x, z) / Σ_{r∈R} k(x, r).
They are evaluated through :class:`~asymkern.kernels.matrix.KernelMatrix`, which computes the
normalisers in memory-bounded blocks.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod

import numpy as np
import scipy.sparse as sp

from .._validation import as_data, check_finite_result


class Kernel(ABC):
    """Base class of all kernels.

    Subclasses implement :meth:`_raw`, the unnormalised kernel block k(X, Z) for validated 2-D
    inputs. Calling a kernel, ``kernel(X, Z)``, returns the dense matrix [κ(x_i, z_j)].
    """

    name: str = "kernel"
    is_symmetric: bool = True
    is_psd: bool = True
    accepts_sparse: bool = False
    row_normalized: bool = False

    # -- to implement -------------------------------------------------------------------------
    @abstractmethod
    def _raw(self, X, Z) -> np.ndarray:
        """Unnormalised kernel block for validated inputs (dense result, float32/64)."""

    def _raw_into(self, X, Z, out: np.ndarray) -> np.ndarray:
        """Write the kernel block into ``out`` (kernels may override to skip a copy)."""
        out[...] = self._raw(X, Z)
        return out

    def _log_raw(self, X, Z) -> np.ndarray:
        """log k(X, Z) for row-normalised kernels (normalised with a stable log-sum-exp)."""
        return np.log(self._raw(X, Z))

    # -- public ---------------------------------------------------------------------------------
    def __call__(self, X, Z=None, *, reference=None, working_memory=None) -> np.ndarray:
        """Dense kernel matrix [κ(x_i, z_j)], computed in memory-bounded blocks.

        ``reference`` is the normalisation set of row-normalised kernels (default: ``Z``).
        """
        from .matrix import KernelMatrix

        return KernelMatrix(
            self, X, Z, reference=reference, working_memory=working_memory
        ).to_array()

    def matrix(self, X, Z=None, **kwargs):
        """The lazy :class:`KernelMatrix` over (X, Z)."""
        from .matrix import KernelMatrix

        return KernelMatrix(self, X, Z, **kwargs)

    def validate_pair(self, X, Z=None, names=("X", "Z")):
        """Validate the two sets and check that their feature counts match."""
        X = as_data(X, names[0], allow_sparse=self.accepts_sparse)
        Z = X if Z is None else as_data(Z, names[1], allow_sparse=self.accepts_sparse)
        if self.checks_features and X.shape[1] != Z.shape[1]:
            raise ValueError(
                f"{names[0]} has {X.shape[1]} features but {names[1]} has {Z.shape[1]}; "
                f"kernel {self.name!r} needs equal feature counts (for a data matrix whose rows "
                "and columns differ in dimension use a compatibility transform, compat=...)"
            )
        return X, Z

    checks_features: bool = True

    def get_params(self) -> dict:
        """Constructor parameters (for repr and copying)."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.get_params() == other.get_params()

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self)))


def _dense(A) -> np.ndarray:
    return A.toarray() if sp.issparse(A) else np.asarray(A)


def sq_norms(X) -> np.ndarray:
    """Row-wise squared Euclidean norms of a dense or CSR matrix."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel().astype(X.dtype, copy=False)
    return np.einsum("ij,ij->i", X, X)


def neg_scaled_sq_dists(X, Z, scale: float, clip: bool = True, out=None) -> np.ndarray:
    """−scale·‖x_i − z_j‖², clipped to ≤ 0, with one GEMM.

    For dense inputs the squared norms are folded into the GEMM by augmenting both sides
    ([2s·x, −s‖x‖², 1]·[z, 1, −s‖z‖²]ᵀ), so only one pass over the output follows. With
    ``clip=False`` rounding may leave values of order 1e-13 above 0 (harmless under exp).
    """
    dtype = np.result_type(X.dtype, Z.dtype)
    xx = sq_norms(X)
    zz = xx if Z is X else sq_norms(Z)
    if sp.issparse(X) or sp.issparse(Z):
        K = _dense(X @ Z.T).astype(dtype, copy=False)
        K *= 2.0 * scale
        K -= (scale * xx)[:, None]
        K -= (scale * zz)[None, :]
    else:
        n, d = X.shape
        Xa = np.empty((n, d + 2), dtype=dtype)
        Xa[:, :d] = X
        Xa[:, :d] *= 2.0 * scale
        Xa[:, d] = -scale * xx
        Xa[:, d + 1] = 1.0
        m = Z.shape[0]
        Za = np.empty((m, d + 2), dtype=dtype)
        Za[:, :d] = Z
        Za[:, d] = 1.0
        Za[:, d + 1] = -scale * zz
        if out is not None and out.dtype == dtype and out.flags.c_contiguous:
            K = np.matmul(Xa, Za.T, out=out)
        else:
            K = Xa @ Za.T
            if out is not None:
                out[...] = K
                K = out
    if clip:  # rounding can leave tiny positive values where x ≈ z
        np.minimum(K, 0.0, out=K)
    return K


_POOL = None


def inplace_ufunc(func, K: np.ndarray) -> np.ndarray:
    """Apply an elementwise numpy ufunc in place, split over row chunks on all cores.

    numpy ufuncs run on one thread (they release the GIL), while the GEMM before them uses every
    core; for large blocks the elementwise pass would otherwise dominate.
    """
    global _POOL
    n_threads = os.cpu_count() or 1
    if n_threads == 1 or K.size < 2**20 or K.shape[0] < 2 * n_threads or not K.flags.c_contiguous:
        return func(K, out=K)
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="asymkern")
    bounds = np.linspace(0, K.shape[0], n_threads + 1).astype(int)
    futures = [
        _POOL.submit(func, K[a:b], out=K[a:b]) for a, b in zip(bounds[:-1], bounds[1:]) if b > a
    ]
    for f in futures:
        f.result()
    return K


def evaluate_callable(func, X, Z, name: str = "kernel") -> np.ndarray:
    """Call a user kernel function and check shape and finiteness of what it returns."""
    values = func(X, Z)
    values = _dense(values)
    values = check_finite_result(values, name, shape=(X.shape[0], Z.shape[0]))
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    return values
