"""The kernel abstraction: κ(x, z) evaluated between two sets of samples (rows).

A kernel may be asymmetric (κ(x, z) ≠ κ(z, x)) and need not be positive semi-definite; its flags
``is_symmetric`` and ``is_psd`` say what holds, and the linear algebra relies on them only when
they are true (never symmetrise silently).

*Row-normalised* kernels (SNE, T; Tao et al. (2024) §4.1, He et al. (2023) §4.3) divide by a
normaliser that sums over a *reference set* R (the second training set): κ(x, z) = k(x, z) /
Σ_{r∈R} k(x, r). They are evaluated through :class:`~asymkern.kernels.matrix.KernelMatrix`, which
computes the normalisers in memory-bounded blocks.
"""

from __future__ import annotations

import copy
import inspect
import math
import numbers
import os
import threading
from abc import ABC, abstractmethod
from contextlib import contextmanager, nullcontext
from typing import Any, ClassVar, TypeVar

import numpy as np
import scipy.sparse as sp

from .._validation import as_data, check_finite_result
from .._validation import check_bool as _check_bool

_KernelT = TypeVar("_KernelT", bound="Kernel")


class Kernel(ABC):
    """Base class of all kernels.

    Subclasses implement :meth:`_raw`, the unnormalised kernel block k(X, Z) for validated 2-D
    inputs. Calling a kernel, ``kernel(X, Z)``, returns the dense matrix [κ(x_i, z_j)]
    (float32 for float32 inputs, float64 otherwise), computed in memory-bounded blocks by a
    :class:`~asymkern.kernels.KernelMatrix`.

    A kernel may be asymmetric, κ(x, z) ≠ κ(z, x), and need not be positive semi-definite;
    the class flags ``is_symmetric`` and ``is_psd`` say what holds, and the linear algebra
    relies on them only when they are true. In the coupled-covariance view of Tao et al.
    (2024), Prop. 2.2, an asymmetric kernel is κ(x, z) = ⟨φ(x), ψ(z)⟩ with two feature maps
    φ and ψ. Row-normalised kernels (``row_normalized = True``: SNE, T) divide by a sum over
    a reference set R, κ(x, z) = k(x, z) / Σ_{r∈R} k(x, r).

    Kernels follow scikit-learn's estimator protocol (:meth:`get_params`,
    :meth:`set_params`), so ``sklearn.base.clone`` and grid searches over kernel
    parameters work.

    See Also
    --------
    asymkern.kernels.get_kernel : Build a kernel from a name, an instance or a callable.
    asymkern.kernels.KernelMatrix : The lazy matrix [κ(x_i, z_j)].
    asymkern.kernels.RBFKernel : A symmetric positive definite kernel.
    asymkern.kernels.SNEKernel : An asymmetric, row-normalised kernel.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, §2.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import Kernel, RBFKernel
    >>> k = RBFKernel(gamma=0.5)
    >>> isinstance(k, Kernel), k.is_symmetric, k.is_psd
    (True, True, True)
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> K = k(X)                      # dense 2 x 2 matrix exp(-0.5 ||x - z||^2)
    >>> K.shape, round(float(K[0, 1]), 3)
    ((2, 2), 0.607)
    """

    name: str = "kernel"
    is_symmetric: bool = True
    is_psd: bool = True
    accepts_sparse: bool = False
    row_normalized: bool = False
    #: whether :meth:`_raw`/:meth:`_raw_into`/:meth:`_log_raw` take a ``center`` keyword
    #: (squared-distance kernels: one shift for every block of a KernelMatrix)
    uses_center: bool = False
    #: whether :meth:`_log_raw` takes ``out`` and ``rows_func`` keywords (a per-row-chunk
    #: function fused into the pass that forms the block: the row normalisation)
    fuses_rows: bool = False
    #: The lazy matrix class :meth:`matrix` and ``kernel(X, Z)`` build:
    #: :class:`~asymkern.kernels.KernelMatrix`, registered by :mod:`asymkern.kernels.matrix`
    #: when it is defined. That module sits above this one (a KernelMatrix resolves kernel
    #: names through the registry of kernel classes), so this module never imports it.
    _matrix_type: ClassVar[type | None] = None

    # -- to implement -------------------------------------------------------------------------
    @abstractmethod
    def _raw(self, X, Z) -> np.ndarray:
        """Unnormalised kernel block for validated inputs (dense result, float32/64)."""

    def _check_params(self) -> None:
        """Validate the parameters (called at construction and again at every use, so that a
        parameter changed after construction is caught); raise ``ValueError`` naming it."""
        return None

    def feature_rank(self, n_features: int) -> int | None:
        """An upper bound of the rank of every Gram matrix of the kernel.

        The dimension of a finite feature map; estimators that solve with a shifted Gram
        matrix read it to work on the matrix's numerical range, whose complement then holds
        only rounding (``KoopmanOperator(estimator='full')``).

        Parameters
        ----------
        n_features : int
            The number of features d of the data.

        Returns
        -------
        int or None
            The bound, or None where none is known (the RBF kernel's feature map is
            infinite-dimensional).
        """
        return None

    def center_for(self, Z):
        """The shift used for every block of a KernelMatrix over columns ``Z`` (or None).

        Squared-distance kernels return the column means of ``Z``
        (:func:`~asymkern.kernels.base.data_center`), so that every block of a matrix is
        computed with the same centre; the base class returns None (no shift).

        Parameters
        ----------
        Z : ndarray or sparse matrix of shape (m, d)
            The validated column samples.

        Returns
        -------
        ndarray of shape (d,) or None
            The shift, or None when the kernel uses none.
        """
        return None

    def _raw_into(self, X, Z, out: np.ndarray, **kw) -> np.ndarray:
        """Write the kernel block into ``out`` (kernels may override to skip a copy)."""
        out[...] = self._raw(X, Z, **kw)
        return out

    def _log_raw(self, X, Z, **kw) -> np.ndarray:
        """log k(X, Z) for row-normalised kernels (normalised with a stable log-sum-exp)."""
        with np.errstate(divide="ignore"):
            return np.log(self._raw(X, Z, **kw))

    # -- public ---------------------------------------------------------------------------------
    def __call__(self, X, Z=None, *, reference=None, working_memory=None) -> np.ndarray:
        """Dense kernel matrix [κ(x_i, z_j)], computed in memory-bounded blocks.

        ``reference`` is the normalisation set of row-normalised kernels (default: ``Z``).
        """
        return self.matrix(X, Z, reference=reference, working_memory=working_memory).to_array()

    def matrix(self, X, Z=None, **kwargs):
        """The lazy :class:`~asymkern.kernels.KernelMatrix` over (X, Z).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, d)
            Row samples.
        Z : array-like or sparse matrix of shape (m, d), optional
            Column samples; None (default) means ``Z = X``.
        **kwargs
            Keyword arguments of :class:`~asymkern.kernels.KernelMatrix` (``reference``,
            ``center``, ``working_memory``, ``max_dense_memory``).

        Returns
        -------
        KernelMatrix
            The n × m matrix G_ij = κ(x_i, z_j), evaluated lazily in blocks.
        """
        matrix_type = Kernel._matrix_type
        if matrix_type is None:  # pragma: no cover - importing asymkern.kernels registers it
            raise RuntimeError("KernelMatrix is not registered; import asymkern.kernels first")
        return matrix_type(self, X, Z, **kwargs)

    def validate_pair(self, X, Z=None, names=("X", "Z")):
        """Validate the two sets and check that their feature counts match.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, d)
            Row samples (sparse only if the kernel has ``accepts_sparse``).
        Z : array-like or sparse matrix of shape (m, d), optional
            Column samples; None (default) returns ``X`` for both.
        names : tuple of str, default ("X", "Z")
            The names used in error messages.

        Returns
        -------
        X, Z : ndarray or CSR matrix
            The validated (2-D, finite, floating) sets.

        Raises
        ------
        ValueError
            If the data are not finite 2-D numeric arrays, or (when the kernel checks
            features) ``X`` and ``Z`` have different numbers of columns.
        """
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

    # -- parameters (scikit-learn's estimator protocol, so that clone and grid search work) --
    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The constructor's parameter names (every kernel stores them under the same name)."""
        init = cls.__init__
        if init is object.__init__:
            return []
        sig = inspect.signature(init)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters, as scikit-learn's ``BaseEstimator.get_params``.

        With ``deep=True`` the parameters of nested objects that have ``get_params`` are
        included as ``name__param``. This makes a kernel usable as an estimator parameter:
        ``clone(est)``, ``GridSearchCV(est, {'kernel': [RBFKernel(), SNEKernel()]})`` and
        ``est.set_params(kernel__gamma=0.5)`` work.

        Parameters
        ----------
        deep : bool, default True
            Also return the parameters of nested objects, as ``name__param``.

        Returns
        -------
        dict
            Parameter name → value, for every constructor parameter.
        """
        out: dict[str, Any] = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params(deep=True).items())
            out[name] = value
        return out

    def set_params(self: _KernelT, **params) -> _KernelT:
        """Set parameters (``name`` or nested ``name__param``) and re-validate them.

        The kernel's own checks run after the update, so an invalid value raises here rather
        than at the next evaluation.

        Parameters
        ----------
        **params
            New values of constructor parameters, by name.

        Returns
        -------
        Kernel
            The kernel itself, updated in place.

        Raises
        ------
        ValueError
            If a name is not a parameter of the kernel, or a value is out of range.
        TypeError
            If a value has the wrong type (e.g. a non-real width).
        """
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested: dict[str, dict] = {}
        for key, value in params.items():
            name, delim, sub = key.partition("__")
            if name not in valid:
                raise ValueError(
                    f"invalid parameter {name!r} for kernel {type(self).__name__}; valid "
                    f"parameters are {self._get_param_names()}"
                )
            if delim:
                if not hasattr(valid[name], "set_params"):
                    raise ValueError(
                        f"invalid parameter {key!r} for kernel {type(self).__name__}: "
                        f"{name!r} holds {valid[name]!r}, which has no parameters of its own")
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub_params in nested.items():
            valid[name].set_params(**sub_params)
        self._params_changed()
        return self

    def _copy(self: _KernelT) -> _KernelT:
        """A new kernel object with this one's parameters and derived state (nested kernels
        copied too; arrays such as an adjacency matrix shared, not copied).

        What a fit keeps: a later :meth:`set_params` on the caller's kernel (directly, or
        through ``est.set_params(kernel__gamma=...)`` of another estimator holding the same
        object) then cannot change a fitted model.
        """
        self._check_params()  # derived state brought up to date first (it is shared)
        new = copy.copy(self)
        for name, value in vars(self).items():  # not get_params: a subclass may keep its
            if isinstance(value, Kernel):  # parameters under other attribute names
                setattr(new, name, value._copy())
        return new

    def _params_changed(self) -> None:
        """Hook run after :meth:`set_params` (kernels with derived state rebuild it here)."""
        self._check_params()

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({params})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.get_params(deep=False) == other.get_params(
            deep=False
        )

    def __hash__(self) -> int:
        # consistent with __eq__ (equal parameters): numbers hash by value (1 and 1.0, a numpy
        # scalar and its float alike); an unhashable value (an array) only by its name
        items: list[tuple[str, int | None]] = []
        for name, value in sorted(self.get_params(deep=False).items()):
            try:
                items.append((name, hash(value)))
            except TypeError:
                items.append((name, None))
        return hash((type(self).__name__, tuple(items)))


def _dense(A) -> np.ndarray:
    return A.toarray() if sp.issparse(A) else np.asarray(A)


# ------------------------------------------------------------------ parameter validation
def check_real(value, name: str, kernel: str, *, low: float | None = None,
               low_open: bool = True, allow_none: bool = False):
    """Check a kernel parameter is a finite real number (optionally > or >= ``low``).

    Raises ``TypeError`` for a non-real value and ``ValueError`` naming the parameter and the
    kernel otherwise; returns the value as ``float`` (or None when ``allow_none``).
    """
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"kernel {kernel!r}: {name} must be a real number, got {value!r}")
    v = float(value)
    what = "finite" if low is None else f"finite and {'>' if low_open else '>='} {low:g}"
    if not math.isfinite(v) or (low is not None and (v <= low if low_open else v < low)):
        raise ValueError(f"kernel {kernel!r}: {name} must be {what}, got {value!r}")
    return v


def check_int(value, name: str, kernel: str, *, low: int = 1) -> int:
    """Check a kernel parameter is an integer (an integral float is accepted) >= ``low``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"kernel {kernel!r}: {name} must be an integer, got {value!r}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    else:
        f = float(value)
        if not math.isfinite(f) or f != round(f):
            raise ValueError(f"kernel {kernel!r}: {name} must be an integer, got {value!r}")
        v = int(f)  # f is finite and integral: int(f) is the value itself
    if v < low:
        raise ValueError(f"kernel {kernel!r}: {name} must be an integer >= {low}, got {value!r}")
    return v


def check_bool(value, name: str, kernel: str) -> bool:
    """Check a kernel flag is a boolean."""
    return _check_bool(value, f"kernel {kernel!r}: {name}")


def check_overflow(K: np.ndarray, kernel: str, what: str) -> np.ndarray:
    """Raise ``OverflowError`` naming the kernel when a kernel block from finite data is not
    finite (e.g. xᵀz beyond the float range); return ``K`` otherwise."""
    if not np.isfinite(K).all():
        raise OverflowError(
            f"kernel {kernel!r}: {what} overflowed {K.dtype} for the finite inputs X and Z "
            f"(largest finite value {np.finfo(K.dtype).max:.3g}); rescale the data"
        )
    return K


# ------------------------------------------------------------------ squared distances
def sq_norms(X) -> np.ndarray:
    """Row-wise squared Euclidean norms of a dense or CSR matrix."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel().astype(X.dtype, copy=False)
    return np.einsum("ij,ij->i", X, X)


def _maxabs(A) -> float:
    if sp.issparse(A):
        A = A.data
    if A.size == 0:
        return 0.0
    return float(max(A.max(), -A.min()))


def _pow2_exponent(a: float, dtype) -> int:
    """Exponent e of a power of two 2^e with a/2^e in [0.5, 1), kept inside the float range."""
    fi = np.finfo(dtype)
    e = math.frexp(a)[1]
    return int(min(max(e, fi.minexp), fi.maxexp - 1))


def _needs_scaling(a: float, dtype) -> bool:
    """Whether values of magnitude ``a`` could over/underflow when squared and summed."""
    fi = np.finfo(dtype)
    return a > 2.0 ** (fi.maxexp // 4) or 0.0 < a < 2.0 ** (fi.minexp // 4)


#: exponent of the smallest positive (subnormal) float64, 2^-1074
_MIN_EXP64 = np.finfo(np.float64).minexp - np.finfo(np.float64).nmant


def data_center(Z) -> np.ndarray | None:
    """The shift used to centre squared-distance computations: the column means of ``Z``
    (None for sparse ``Z``, which centring would densify).

    The means are summed *exactly* in 64-bit fixed point (each value truncated to a multiple
    of 2^-50 of its column's largest magnitude), so the centre — and with it every kernel
    value — does not depend on the order of the rows: K(X, Z[p]) is exactly K(X, Z)[:, p].
    The truncation moves the centre by at most 2^-50 of the column range, which does not
    matter (any centre near the data removes the cancellation). For subnormal columns the
    quantum is the smallest subnormal 2^-1074 (every float64 is a multiple of it), so their
    means are summed exactly too and the centre lies within the data range. Returned in Z's
    dtype.
    """
    if sp.issparse(Z):
        return None
    Z = np.asarray(Z)
    m = Z.shape[0]
    if m == 0:
        return np.zeros(Z.shape[1], dtype=Z.dtype)
    amax = np.maximum(Z.max(axis=0), -Z.min(axis=0)).astype(np.float64)
    bits = 62 - int(m).bit_length()
    # quantum per column (a power of two: exact divisions), never below the smallest
    # subnormal 2^-1074 (of which every float64 is a multiple): a subnormal column would
    # otherwise get a zero quantum (division by zero, then an undefined cast to int64); a
    # coarser quantum only makes every term smaller, so the sum stays exact
    exp = np.maximum(np.frexp(amax)[1].astype(np.int64) - bits, _MIN_EXP64)
    q = np.ldexp(1.0, exp)
    total = np.zeros(Z.shape[1], dtype=np.int64)  # exact: |each term| < 2^bits, m of them
    step = max(1, 8192 // max(1, Z.shape[1]))  # small chunks: no large temporaries
    buf = np.empty((min(step, m), Z.shape[1]))
    with np.errstate(under="ignore"):
        for a in range(0, m, step):
            W = buf[: min(step, m - a)]
            np.divide(Z[a:a + step], q, out=W)
            np.floor(W, out=W)
            total += W.astype(np.int64).sum(axis=0)
    c = np.ldexp(total.astype(np.float64) / m, exp)
    return c.astype(Z.dtype)


def neg_scaled_sq_dists(X, Z, scale: float, clip: bool = True, out=None, *, center=None,
                        func=None, rows_func=None, value: str | None = None,
                        row_lse=None, unfolded_func=None) -> np.ndarray:
    """−scale·‖x_i − z_j‖², accurate for data far from the origin, with one GEMM.

    Numerics:

    * **Cancellation.** The expansion ‖x‖² + ‖z‖² − 2xᵀz loses every digit of ‖x − z‖² when
      ‖x‖ ≫ ‖x − z‖ (data at 1e8 gave RBF values of 403). Both sets are shifted by the same
      centre ``center`` (default: the mean of ``Z``, :func:`data_center`) before the expansion;
      distances are translation invariant, so the shift is exact in exact arithmetic, and for
      data near the centre x − c is even computed exactly (Sterbenz). The error of the expanded
      value is then bounded by about 2(d+2)·eps·(‖x−c‖² + ‖z−c‖²) (Higham, *Accuracy and
      Stability of Numerical Algorithms*, §3.1, for the d+2 term dot product).
    * **Near duplicates.** Every entry whose computed distance lies below that bound (this
      includes every rounding that came out positive, and every pair of identical rows) is
      recomputed directly as Σ_k (x_k − z_k)² (float64 accumulation, from the data, not the
      centred copies: a difference below eps·|x − c| does not survive the shift, so points
      far from the centre, as when a few outliers pull the mean, would otherwise come out as
      duplicates; values spanning 1e22 to 1e150 gave RBF values of 1). So the distances are
      clipped at 0, and identical rows give exactly 0: κ_RBF(x, x) = 1 exactly.
    * **Far from the centre.** The bound grows with ‖x−c‖², so where the data spread far
      beyond the kernel's width (a few outliers pulling the centre, or points 1e100 apart)
      the error s·bound of the exponent is no longer small, and an entry beyond the bound can
      still be wrong by a factor e^(s·bound): one point at 1e8 among ten unit-normal ones
      gave RBF values 1.6 % off. With ``value`` (how the kernel reads −s‖x − z‖²), every
      entry whose value the bound could move by more than :func:`_value_tol` is then
      recomputed directly too (:func:`_value_candidates`): for ``'exp'`` those not
      negligible (exponent above −:data:`_EXP_WINDOW`), for ``'exp_rows'`` those within
      that window of their row's log-normaliser (the softmax weights of SNE read exponent
      differences; the row's largest value in the block stands for it, or the smaller of
      the two when ``row_lse`` gives the normalisers over another reference set), for
      ``'reciprocal'`` (1/(1 + s‖x − z‖²), Cauchy, T) those whose relative
      error bound exceeds the tolerance. Which entries qualify depends on the pair alone (or,
      for ``'exp_rows'``, only among entries that are 0 either way), so blocking still never
      changes a value; data within the usual range never take this route.
    * **Overflow / underflow.** When the (centred) data are so large or small that their
      squared norms could overflow or underflow, both sets are scaled by one power of two σ
      (exact) and the scale becomes scale·σ². When scale·‖x−z‖² itself exceeds the float
      range, the exponent is formed in float64 after the GEMM (−inf where it overflows, which
      exp maps to the correct 0).
    * **Sparse input** is not shifted (a dense shift would densify it); it gets the same
      scaling, clipping and near-duplicate recomputation, so its relative error in ‖x − z‖²
      is about (d+2)·eps·(‖x‖² + ‖z‖²)/‖x − z‖² — accurate unless the data sit far from 0.

    The result has the data dtype (float32 stays float32). Power-of-two scalings do not change
    any rounding, so the values do not depend on how the rows of ``X`` are blocked, provided
    the same ``center`` is used (KernelMatrix computes it once per matrix).

    Parameters
    ----------
    X, Z : (n, d), (m, d) float arrays or CSR matrices (validated).
    scale : the factor s ≥ 0 in −s‖x − z‖².
    clip : kept for compatibility; the result is always ≤ 0.
    out : optional (n, m) array of the result dtype to write into.
    center : (d,) shift, or None for the mean of ``Z`` (ignored for sparse input).
    func : optional in-place function applied to row chunks of the result (e.g. exp), in the
        same multi-threaded pass.
    rows_func : optional ``rows_func(Kc, a, b, mx=None)`` called after ``func`` on each row
        chunk ``Kc = K[a:b]`` (full rows, still in cache; ``mx``: their maxima, or None): used
        for the fused row normalisation of the SNE and T kernels.
    value : None, 'exp', 'exp_rows' or 'reciprocal'
        How the kernel reads the result (see *Far from the centre*); None recomputes only the
        entries under the rounding bound.
    unfolded_func : optional ``unfolded_func(Kc, s)``
        Used instead of the float64 scaling by s followed by ``func`` on the chunks ``Kc`` =
        −‖x − z‖² (in units of the power-of-two scaling) when the scale cannot be folded
        into the GEMM, i.e. where s·‖x − z‖² may overflow: for a ``func`` whose result stays
        representable although that product does not (the T kernel's log k = −log1p(s‖x −
        z‖²) ≈ −(log s + log‖x − z‖²)). Writes ``func``'s result, in place.
    row_lse : (n,) float array, optional
        For ``value='exp_rows'``: the rows' known log-normalisers log Σ_{r∈R} exp(−s‖x − r‖²)
        over a reference set R. An entry's weight exp(−s‖x − z‖² − lse) is then not
        negligible down to lse − :data:`_EXP_WINDOW`, which lies below the block's row
        maximum when R lacks the columns nearest to x; without it the window hangs from that
        maximum (right when R contains the columns, as for the normalisers themselves).
    """
    del clip
    dtype = np.result_type(X.dtype, Z.dtype)
    if sp.issparse(X) or sp.issparse(Z):
        return _sparse_sq_dists(X, Z, scale, dtype, out, func, rows_func, value, row_lse,
                                unfolded_func)
    X = np.asarray(X)
    Z = np.asarray(Z)
    n, d = X.shape
    m = Z.shape[0]
    c = data_center(Z) if center is None else center
    c = np.asarray(c, dtype=dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        Xc = np.subtract(X, c, dtype=dtype)
        Za = np.empty((m, d + 2), dtype=dtype)
        Zc = Za[:, :d]
        np.subtract(Z, c, out=Zc, dtype=dtype)
    e = 0  # total scaling 2^e
    big = max(_maxabs(Xc), _maxabs(Zc))
    if not math.isfinite(big):  # x − c overflowed: scale first, then shift (exact)
        e = _pow2_exponent(max(_maxabs(X), _maxabs(Z), _maxabs(c)), dtype)
        f = np.float64(math.ldexp(1.0, -e))
        cs = (c * f).astype(dtype)
        np.subtract(np.multiply(X, f, dtype=dtype), cs, out=Xc)
        np.subtract(np.multiply(Z, f, dtype=dtype), cs, out=Zc)
        big = max(_maxabs(Xc), _maxabs(Zc))
    if _needs_scaling(big, dtype):
        e2 = _pow2_exponent(big, dtype)
        f = np.float64(math.ldexp(1.0, -e2))
        np.multiply(Xc, f, out=Xc, casting="same_kind")
        np.multiply(Zc, f, out=Zc, casting="same_kind")
        e += e2
    xx = np.einsum("ij,ij->i", Xc, Xc)
    zz = np.einsum("ij,ij->i", Zc, Zc)
    s_eff, folded, u = _fold_scale(scale, e, xx, zz, d, dtype)
    Xa = np.empty((n, d + 2), dtype=dtype)
    np.multiply(Xc, 2.0 * u, out=Xa[:, :d])
    Xa[:, d] = -u * xx
    Xa[:, d + 1] = 1.0
    Za[:, d] = 1.0
    Za[:, d + 1] = -u * zz
    gemm = None
    panel_bytes = None
    if out is not None and out.dtype == dtype and out.flags.c_contiguous:
        K = out
    elif out is None and _fused_panel_bytes(n * m, d) is not None:
        K = np.empty((n, m), dtype=dtype)
    else:
        K = None
    if K is not None:
        panel_bytes = _fused_panel_bytes(K.size, d, K)
    if panel_bytes is not None:
        ZaT = Za.T

        def gemm(a: int, b: int) -> None:
            np.matmul(Xa[a:b], ZaT, out=K[a:b])
    elif K is not None:
        np.matmul(Xa, Za.T, out=K)
    else:
        K = Xa @ Za.T
        if out is not None:
            out[...] = K
            K = out

    f = math.ldexp(1.0, -e)  # the total power-of-two scaling of Xc, Zc (exact)

    def direct(I, J):
        # from the data themselves, not the centred copies: x − c rounds away every
        # difference below eps·|c|, so points far from the centre (a few outliers pull the
        # mean) would come out as duplicates
        return pair_sq_dists(X, Z, I, J, f)

    _finish(K, xx, zz, d, u, s_eff, folded, direct, func, rows_func, gemm,
            panel_bytes=panel_bytes, value=value, row_lse=row_lse,
            unfolded_func=unfolded_func)
    return K


def _scaled(scale: float, e: int) -> float:
    """scale·2^(2e) as a Python float (inf on overflow)."""
    try:
        return math.ldexp(float(scale), 2 * e)
    except OverflowError:
        return math.inf


def _fold_scale(scale: float, e: int, xx, zz, d: int, dtype) -> tuple[float, bool, float]:
    """(s_eff, folded, u): the scale s_eff = scale·2^(2e) of data scaled by 2^-e (squared
    norms ``xx``, ``zz``), whether it can be folded into the GEMM operands (every entry of
    −s_eff·‖x − z‖² then stays far inside the float range) and the factor u folded in (1.0
    when not: the scale is applied in float64 after the GEMM)."""
    s_eff = _scaled(scale, e)
    bound = 2.0 * (float(xx.max(initial=0.0)) + float(zz.max(initial=0.0)) + 1.0)
    folded = s_eff * bound * (d + 2) < float(np.finfo(dtype).max) / 8  # no float32 cast
    return s_eff, folded, s_eff if folded else 1.0


def _sparse_sq_dists(X, Z, scale, dtype, out, func, rows_func=None, value=None, row_lse=None,
                     unfolded_func=None):
    # both sets in the result dtype first: the squared norms and the product X Zᵀ are then
    # accumulated in it (a float32 set with a float64 one gives float64 accuracy, not a
    # float64 result with float32 rounding); a no-op when the dtypes already agree
    X = sp.csr_matrix(X, dtype=dtype)
    Z = sp.csr_matrix(Z, dtype=dtype)
    d = X.shape[1]
    e = 0
    big = max(_maxabs(X), _maxabs(Z))
    if _needs_scaling(big, dtype):
        e = _pow2_exponent(big, dtype)
        f = np.float64(math.ldexp(1.0, -e))
        X = X.copy()
        X.data = np.multiply(X.data, f, dtype=X.dtype)
        Z = Z.copy()
        Z.data = np.multiply(Z.data, f, dtype=Z.dtype)
    xx = sq_norms(X).astype(dtype, copy=False)
    zz = sq_norms(Z).astype(dtype, copy=False)
    s_eff, folded, u = _fold_scale(scale, e, xx, zz, d, dtype)
    G = _dense(X @ Z.T).astype(dtype, copy=False)
    K = G if out is None else out
    np.multiply(G, 2.0 * u, out=K, casting="same_kind")
    K -= (u * xx)[:, None]
    K -= (u * zz)[None, :]

    def direct(I, J):
        return pair_sq_dists(X, Z, I, J)

    _finish(K, xx, zz, d, u, s_eff, folded, direct, func, rows_func, value=value,
            row_lse=row_lse, unfolded_func=unfolded_func)
    return K


def pair_sq_dists(X, Z, I: np.ndarray, J: np.ndarray, f: float = 1.0,
                  batch_bytes: int | None = None) -> np.ndarray:
    """Σ_k (x_{I_p k} − z_{J_p k})²·f² for the pairs (I_p, J_p), directly from the data.

    The direct recomputation of the squared distances whose expansion ‖x‖² + ‖z‖² − 2xᵀz
    cannot be trusted (:func:`neg_scaled_sq_dists`, and the exact nearest-row search of
    :func:`asymkern.landmarks.nearest_rows`): from the rows themselves, never from copies
    shifted by a far centre, in which every difference below eps·|x − c| is lost. In float64:
    x·f − z·f for f ≤ 1 (exact scalings by the power of two f, one rounding), (x − z)·f for
    f > 1 (data whose spread is so small that their squares underflow: x − z cannot overflow
    there). Sparse rows are subtracted as sparse rows (the scaling is then the caller's).

    Parameters
    ----------
    X, Z : ndarray or CSR matrix of shape (n, d), (m, d)
        The data (any float dtype; the arithmetic is float64).
    I, J : integer ndarrays of equal length
        Row indices into ``X`` and ``Z``.
    f : float, default 1.0
        A power of two.
    batch_bytes : int, optional
        The float64 temporaries of one batch of pairs (three arrays of d values per pair)
        stay within about this many bytes, and no batch exceeds :data:`_REFINE_BATCH` pairs;
        default :data:`_FINISH_CHUNK_BYTES` (1 MiB: the function runs in every worker of the
        kernels' finishing pass at once).

    Returns
    -------
    ndarray of shape (len(I),)
        The squared distances in float64.
    """
    d = X.shape[1]
    budget = _FINISH_CHUNK_BYTES if batch_bytes is None else int(batch_bytes)
    step = max(1, min(_REFINE_BATCH, budget // (24 * max(d, 1))))
    out = np.empty(I.size)
    for s in range(0, I.size, step):
        Ib, Jb = I[s:s + step], J[s:s + step]
        A, B = X[Ib], Z[Jb]
        if sp.issparse(A) and sp.issparse(B):
            D = (A - B).astype(np.float64)
            out[s:s + step] = np.asarray(D.multiply(D).sum(axis=1)).ravel()
            continue
        A = _dense(A) if sp.issparse(A) else A
        B = _dense(B) if sp.issparse(B) else B
        with np.errstate(over="ignore", under="ignore"):
            if f <= 1.0:
                D = np.multiply(A, f, dtype=np.float64)
                D -= np.multiply(B, f, dtype=np.float64)
            else:
                D = np.subtract(A, B, dtype=np.float64)
                D *= f
        out[s:s + step] = np.einsum("ij,ij->i", D, D)
    return out


#: the most pairs one batch of :func:`pair_sq_dists` recomputes (with at most
#: ``batch_bytes`` of temporaries)
_REFINE_BATCH = 1 << 16
_NO_PAIRS = (np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp))
#: bytes per sub-chunk of the finishing pass: 1 MiB, so that after the first pass (which
#: reads the chunk the GEMM wrote) the others run in the 2 MiB L2 cache; larger chunks fall
#: out of L2 and smaller ones lose to the per-chunk Python overhead (measured on 20 000²,
#: d = 100, SNE: 1.70× the bare product at 1 MiB, 1.71× at 2 MiB, 1.82× at 4 MiB, 1.90× at
#: 512 KiB, float64; float32 2.05× at 1 MiB, 2.08–2.15× at 2 MiB)
_FINISH_CHUNK_BYTES = 1 << 20


#: exponent range that matters: exp(−800) is 0 in float32 and float64 alike, so an entry
#: more than this below its anchor (0, or its row's largest log-value) is 0 however rounded
_EXP_WINDOW = 800.0


def neg_log1p_scaled(D, s: float, xp):
    """−log(1 + s·D) for D = ‖x − z‖² ≥ 0 and s > 0, representable also where s·D overflows:
    there log(1 + s·D) = log s + log D to within 1/(s·D) < 1e-308. The log-values of the
    Cauchy and T kernels (He et al. (2023), §4.3: the T kernel's weights are ratios of these,
    representable after the normalisation although each factor underflows), one formula for
    every executor: ``xp`` is the array namespace of ``D`` (numpy or torch), whose ``log``,
    ``log1p``, ``where`` and ``isinf`` it calls; D is not modified. In D's dtype (the callers
    pass float64)."""
    with np.errstate(over="ignore", divide="ignore"):
        P = D * s
        return -xp.where(xp.isinf(P), xp.log(D) + math.log(s), xp.log1p(P))


def _value_tol(dtype) -> float:
    """The error of a kernel value accepted from the expansion: 2^-24 (float64), 2^15·eps
    (float32: 3.9e-3; below it float32's own rounding of the data would dominate)."""
    return max(2.0 ** -24, 2.0 ** 15 * float(np.finfo(dtype).eps))


def _value_candidates(Kc, xr, zz64, c: float, w: float, T: float, value: str, mx,
                      typical: float, far_cols: np.ndarray, lse=None):
    """(I, J, whole): the entries of the chunk ``Kc`` = −u‖x − z‖² (expanded, its entries'
    rounding bounds c·(‖x'‖² + ‖z'‖²), at most ``T``; the exponent is w·Kc) whose value the
    rounding could move by more than :func:`_value_tol`, to recompute directly
    (``neg_scaled_sq_dists``, *Far from the centre*); ``whole``: whether the chunk was searched
    whole, and the entries under their rounding bound are included.

    Whether a value could move is judged on the probabilistic size of the rounding,
    ``typical``·(‖x'‖² + ‖z'‖²) in the exponent, i.e. w·c/√(d+2) (Higham & Mary, 2019, "A new
    approach to probabilistic rounding error analysis", SIAM J. Sci. Comput. 41(5)): the
    worst case c grows with d although the errors of a dot product grow like √d. The windows'
    margins take the worst case. Such an entry has ‖x'‖² or ‖z'‖² above half of
    tol/``typical``, so where few rows and columns (``far_cols``) are beyond it only those
    are searched (pairs may then repeat): a few far points cost their rows and columns, not
    the whole block. ``lse``: the chunk rows' known log-normalisers for 'exp_rows' (the
    window then hangs from min(row maximum, lse/w)).
    """
    tol = _value_tol(Kc.dtype)
    n, m = Kc.shape
    rows = np.flatnonzero(xr > 0.5 * tol / typical)
    if not (rows.size or far_cols.size):
        return _NO_PAIRS + (False,)
    whole = rows.size * m + n * far_cols.size >= n * m // 2
    anchor = trow = np.empty(0)
    if value == "exp_rows":
        anchor = (Kc.max(axis=1) if mx is None else mx).astype(np.float64)
        if lse is not None:  # normalisers over a reference set without the nearest columns
            with np.errstate(over="ignore", invalid="ignore"):
                np.minimum(anchor, np.asarray(lse, dtype=np.float64) / w, out=anchor)
        trow = c * (xr + float(zz64.max(initial=0.0)))
    parts = ((slice(None), slice(None)),) if whole else ((rows, slice(None)),
                                                         (slice(None), far_cols))
    found = []
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for R, C in parts:
            S = Kc[R][:, C] if isinstance(C, np.ndarray) else Kc[R]
            if not S.size:
                continue
            if value == "exp":
                M = S >= -(_EXP_WINDOW / w + T)
            elif value == "exp_rows":
                M = S >= (anchor[R] - (_EXP_WINDOW / w + 2.0 * trow[R]))[:, None]
            else:  # 'reciprocal': relative error w·t / (1 + w·(−K − t)) of 1/(1 − w·K)
                M = S >= -(T / tol + T)
            I, J = np.nonzero(M)
            found.append((I if isinstance(R, slice) else R[I],
                          J if isinstance(C, slice) else C[J]))
        I = np.concatenate([f[0] for f in found]) if found else _NO_PAIRS[0]
        J = np.concatenate([f[1] for f in found]) if found else _NO_PAIRS[1]
        k = Kc[I, J].astype(np.float64)
        t = c * (xr[I] + zz64[J])
        # the pair-level rule in the exponent's units (magnitude w·|K|), as every executor
        # applies it
        keep = value_moves(-w * k, w * t, typical * (xr[I] + zz64[J]), value, tol,
                           None if value != "exp_rows" else -w * anchor[I],
                           None if value != "exp_rows" else w * trow[I])
        if whole:  # and those under their bound, as in the usual pass
            keep |= k >= -t
    return I[keep], J[keep], whole


def value_moves(v, t, e, value: str, tol: float, anchor=None, trow=None):
    """Whether the rounding of an exponent could move a kernel value by more than ``tol``:
    the pair-level rule of the far-data recomputation (:func:`neg_scaled_sq_dists`, *Far from
    the centre*), one rule for every executor (numpy and torch arrays alike: operators only).

    Parameters
    ----------
    v : float64 array
        The pairs' exponent magnitudes s‖x − z‖² as expanded (≥ 0 up to the rounding).
    t : float64 array
        Their worst-case rounding bounds 2(d+2)·eps·s(‖x'‖² + ‖z'‖²) (Higham, §3.1).
    e : float64 array
        The rounding's probabilistic size, t/√(d+2) (Higham & Mary, 2019).
    value : {'exp', 'exp_rows', 'reciprocal'}
        How the kernel reads the exponent: exp(−v) (RBF: the value moves by about e where it
        is not negligible, v ≤ :data:`_EXP_WINDOW` + t), softmax weights exp(−v)/Σ (SNE: those
        within the window of their row's normaliser) or 1/(1 + v) (Cauchy, T: relative error
        e/(1 + v − t)).
    tol : float
        The accepted error (:func:`_value_tol`).
    anchor, trow : float64 arrays, optional
        For 'exp_rows': the magnitude of the pair's row normaliser (minus the row's largest
        log-value, or minus its known log-normaliser where that is smaller) and the row's
        rounding margin.

    Returns
    -------
    bool array
        True where the pair must be recomputed directly.
    """
    if value == "exp":
        return (e > tol) & (v <= _EXP_WINDOW + t)
    if value == "exp_rows":
        return (e > tol) & (v <= anchor + _EXP_WINDOW + t + trow)
    excess = v - t
    return e > tol * (1.0 + excess * (excess > 0))


def _wide_chunk(Kc, mx, E: float, T: float, w: float, tol: float, value: str) -> bool:
    """Whether some entry of the chunk ``Kc`` (exponent w·Kc, rounding at most ``T`` in Kc and
    typically at most ``E`` in the exponent) can have its value moved by more than ``tol``:
    E > tol, and for 'reciprocal' (relative error E / (1 + w·(−K − T))) E above tol times
    1 + the chunk's smallest w·(−K − T)."""
    if not E > tol:
        return False
    if value != "reciprocal":
        return True
    top = float(Kc.max() if mx is None else mx.max())
    with np.errstate(over="ignore"):
        return E > tol * (1.0 + w * max(0.0, -top - T))


def _finish(K, xx, zz, d, u, s_eff, folded, direct, func, rows_func=None, gemm=None,
            panel_bytes=None, value=None, row_lse=None, unfolded_func=None):
    """Chunked (multi-threaded) pass over K = −u·‖x − z‖² (expanded): recompute the entries
    within the rounding bound directly, apply the remaining scale, then ``func``, then
    ``rows_func(Kc, a, b)``.

    ``gemm(a, b)``, when given, forms rows a:b of K: each worker then computes its own row
    panels with a one-thread GEMM and finishes each panel right after it,
    instead of one multi-threaded GEMM over the whole block followed by the pass. One
    worker's GEMM then overlaps the other's memory-bound finishing, and no idle BLAS threads
    spin on the cores the finishing needs (measured 1.40× instead of 1.70× the bare product
    for SNE, float64, 20 000²; ``benchmarks/bench_rownorm.py --ablation``). Without ``func``,
    ``rows_func`` is also given the row maxima of the finished chunk (``mx=``), taken in the
    pass that looks for near duplicates. ``panel_bytes``: the size of those row panels
    (default ``_GEMM_PANEL_BYTES``; :func:`_fused_panel_bytes`). ``value``: see
    :func:`neg_scaled_sq_dists`; a chunk whose exponents' rounding could exceed
    :func:`_value_tol` takes :func:`_value_candidates` (``row_lse``: the rows' known
    log-normalisers, and ``unfolded_func``: see :func:`neg_scaled_sq_dists`).
    """
    dtype = K.dtype
    tau = 2.0 * (d + 2) * float(np.finfo(dtype).eps)
    zmax = float(zz.max(initial=0.0))
    zz64 = zz.astype(np.float64)
    s_cap = min(s_eff, float(np.finfo(np.float64).max))
    # rows_func gets the row maxima when no elementwise map follows the scaling (the maxima
    # of the scaled chunk are the scaled maxima: rounding is monotone)
    pass_max = rows_func is not None and func is None and K.shape[1] > 0
    w = 1.0 if folded else s_cap  # the exponent is w·K
    # the largest probabilistic rounding of an exponent, per unit of ‖x'‖² + ‖z'‖²
    wide = value is not None and w > 0 and K.shape[1] > 0
    typical = w * u * tau / math.sqrt(d + 2)
    tol = _value_tol(dtype)
    # the columns whose own norm can put a pair's rounding above tol (_value_candidates)
    far_cols = (np.flatnonzero(zz64 > 0.5 * tol / typical) if wide and typical > 0
                else _NO_PAIRS[1])

    # rows per sub-chunk (``_FINISH_CHUNK_BYTES``): the test, the fix-up, ``func`` and
    # ``rows_func`` run while the chunk is in cache
    sub = max(1, _FINISH_CHUNK_BYTES // max(1, K.shape[1] * K.itemsize))

    def part(a: int, b: int) -> None:
        Kc = K[a:b]
        xr = xx[a:b].astype(np.float64)
        xrmax = float(xr.max(initial=0.0))
        T = u * tau * (xrmax + zmax)
        # a max-reduction first: most chunks hold no candidate, and it is cheaper than the
        # comparison and the index search (much faster than a 2-D nonzero when it is needed)
        mx = Kc.max(axis=1) if pass_max else None
        if mx is not None:
            has = mx.size and mx.max() >= -T
        else:
            has = Kc.size and Kc.max() >= -T
        I, J = np.divmod(np.flatnonzero(Kc >= -T), Kc.shape[1]) if has else _NO_PAIRS
        if I.size:
            keep = Kc[I, J] >= -u * tau * (xr[I] + zz64[J])
            I, J = I[keep], J[keep]
        if wide and Kc.size and _wide_chunk(Kc, mx, typical * (xrmax + zmax), T, w, tol,
                                            value):
            # exponents whose rounding could matter (data far beyond the kernel's width)
            Iw, Jw, whole = _value_candidates(
                Kc, xr, zz64, u * tau, w, T, value, mx, typical, far_cols,
                None if row_lse is None or value != "exp_rows" else row_lse[a:b])
            if whole:  # the chunk searched whole: the entries under their bound included
                I, J = Iw, Jw
            elif Iw.size:
                ncol = Kc.shape[1]
                I, J = np.divmod(np.unique(np.concatenate([I * ncol + J, Iw * ncol + Jw])),
                                 ncol)
        if I.size:
            Kc[I, J] = -u * direct(I + a, J)  # in batches (pair_sq_dists)
            if mx is not None:
                touched = np.unique(I)
                mx[touched] = Kc[touched].max(axis=1)
        if not folded and unfolded_func is not None:
            if dtype == np.float64:
                unfolded_func(Kc, s_cap)
            else:
                K64 = Kc.astype(np.float64)
                unfolded_func(K64, s_cap)
                Kc[...] = K64
        elif not folded:
            with np.errstate(over="ignore"):
                if dtype == np.float64:
                    np.multiply(Kc, s_cap, out=Kc)
                    if mx is not None:
                        np.multiply(mx, s_cap, out=mx)
                else:
                    Kc[...] = Kc.astype(np.float64) * s_cap
                    if mx is not None:
                        mx[...] = mx.astype(np.float64) * s_cap
        if func is not None and (folded or unfolded_func is None):
            func(Kc)
        if rows_func is not None:
            rows_func(Kc, a, b, mx=mx)

    # row panels per GEMM: a multiple of ``sub`` of about ``panel_bytes``
    panel_bytes = _GEMM_PANEL_BYTES if panel_bytes is None else panel_bytes
    panel = max(1, panel_bytes // max(1, K.shape[1] * K.itemsize) // sub) * sub

    def finish_rows(a: int, b: int) -> None:
        for r in range(a, b, sub):
            part(r, min(r + sub, b))

    def work(a: int, b: int) -> None:
        if gemm is None:
            finish_rows(a, b)
            return
        for p in range(a, b, panel):
            q = min(p + panel, b)
            gemm(p, q)
            finish_rows(p, q)

    with nullcontext() if gemm is None else _blas_one_thread():
        apply_rows(K, work)


#: bytes of the row panel each worker forms with one GEMM before finishing it: one-thread
#: GEMMs of smaller panels lose more to packing the reference set than cache residency
#: gains (measured on 20 000², d = 100: 8 MiB panels 1.9×, 64 MiB 1.4×, 256 MiB 1.4× the
#: bare product's time)
_GEMM_PANEL_BYTES = 1 << 28
_BLAS = None


def _blas_controller():
    """The threadpoolctl controller of the BLAS libraries (created at first use)."""
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController().select(user_api="blas")
    return _BLAS


def _blas_threads() -> int:
    """Threads the BLAS would use for one call now (1 if it cannot be told, which keeps the
    one-GEMM route)."""
    try:
        libs = _blas_controller().lib_controllers
        return max((int(lib.num_threads) for lib in libs), default=1)
    except Exception:  # a BLAS threadpoolctl cannot drive: never limit it
        return 1


def _blas_limit_now() -> int | None:
    """The BLAS thread limit threadpoolctl reports now (``_blas_threads``), or None when no
    BLAS can be probed (none found, e.g. Apple Accelerate, or the probe fails)."""
    try:
        if not _blas_controller().lib_controllers:
            return None
    except Exception:  # a BLAS threadpoolctl cannot drive: it sets no limit
        return None
    return _blas_threads()


def _let_go_of_blas_control() -> None:
    """Give up threadpoolctl's control of OpenBLAS's shared pool unless a
    ``threadpool_limits`` of this thread is active.

    threadpoolctl (3.8 and later) lets only one thread, the first to set an OpenBLAS limit,
    change it until that thread lets go (which ``with threadpool_limits(...)`` does at its end);
    other threads' limits are silently ignored. A set or restore by the library must not keep
    that control: from a long-lived worker thread it would make every later
    ``threadpool_limits`` of the user's threads, and the library's own restore from another
    thread, do nothing (the BLAS then stays at one thread for good)."""
    try:
        import threadpoolctl

        owner = threadpoolctl.CONTROLLING_THREAD_OWNERSHIP
        owner.increment()
        owner.decrement()  # lets go when this thread holds no threadpool_limits of its own
    except (ImportError, AttributeError):  # threadpoolctl without the control rule
        pass


def _hold_blas_at_one() -> list:
    """Set every BLAS above one thread to one; return ``[(lib, previous limit)]`` of those
    the set took effect on (none where threadpoolctl ignores it or cannot probe the BLAS)."""
    held = []
    try:
        for lib in _blas_controller().lib_controllers:
            before = lib.num_threads
            if before is not None and before > 1:
                lib.set_num_threads(1)
                if lib.num_threads == 1:
                    held.append((lib, before))
    except Exception:  # a BLAS threadpoolctl cannot drive: it is not held
        pass
    finally:
        _let_go_of_blas_control()
    return held


def _release_blas(held: list) -> None:
    """Undo :func:`_hold_blas_at_one`: restore each BLAS still at the library's one thread.
    A limit set since (a user's ``threadpool_limits`` in another thread) is left alone: its
    owner restores what it replaced, and restoring ours would undo it while it is active."""
    try:
        for lib, before in held:
            if lib.num_threads == 1:
                lib.set_num_threads(before)
    except Exception:  # pragma: no cover - the BLAS was probed when held
        pass
    finally:
        _let_go_of_blas_control()


_BLAS_LOCK = threading.Lock()
_BLAS_DEPTH = 0
#: ``[(lib, previous limit)]`` of the BLAS libraries the passes hold at one thread
_BLAS_LIMITER: Any = None
#: the BLAS limit in force before the first :func:`_blas_one_thread` entered (the limit the
#: library's own one-thread setting must not be mistaken for)
_BLAS_OUTER: int | None = None


@contextmanager
def _blas_one_thread():
    """Limit the BLAS to one thread while fused passes run (each worker runs its own GEMMs).

    The limit is process-wide, so concurrent passes (Dask's threads) share it: the first to
    enter sets it, the last to leave (any thread) restores the original thread counts, of
    the libraries still at one thread only (a limit that a user's thread set meanwhile is
    theirs). Meanwhile :func:`pool_threads` keeps reading the limit that was in force before.
    """
    global _BLAS_DEPTH, _BLAS_LIMITER, _BLAS_OUTER
    with _BLAS_LOCK:
        if _BLAS_DEPTH == 0:
            _BLAS_OUTER = _blas_limit_now()
            _BLAS_LIMITER = _hold_blas_at_one()
        _BLAS_DEPTH += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_DEPTH -= 1
            if _BLAS_DEPTH == 0:
                _release_blas(_BLAS_LIMITER)
                _BLAS_LIMITER = None
                _BLAS_OUTER = None


def _env_threads(name: str = "OMP_NUM_THREADS") -> int | None:
    """A positive thread count from the environment variable ``name`` (the first entry of a
    nested OpenMP list such as ``"4,2"``), or None when it is unset or not a positive integer."""
    text = os.environ.get(name, "").split(",")[0].strip()
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value >= 1 else None


#: ``OMP_NUM_THREADS`` as it was when this module was imported (the pool's cap where no BLAS
#: can be probed): read once, as the OpenMP and BLAS runtimes read it when they load (a later
#: change of ``os.environ``, such as the one dask.distributed's Nanny makes in the client
#: process before spawning its workers, changes neither their threads nor this pool's)
_OMP_NUM_THREADS = _env_threads()


def pool_threads() -> int:
    """Threads the library's own row passes (:func:`apply_rows`) may use now.

    The rule: the CPU count (``os.cpu_count()``), capped by the BLAS thread limit that
    threadpoolctl reports (the largest over the loaded BLAS libraries, read at every call).
    That limit includes what the BLAS read from ``OPENBLAS_NUM_THREADS``,
    ``MKL_NUM_THREADS`` or ``OMP_NUM_THREADS`` when it loaded, and every later
    ``threadpoolctl`` limit, so the pool follows every way a user or a scheduler restricts
    the BLAS: ``with threadpoolctl.threadpool_limits(1):``, joblib's workers (which cap the
    BLAS and OpenMP threads of each worker), ``OMP_NUM_THREADS=1`` at start-up. Where no
    BLAS can be probed (none found, e.g. Apple Accelerate), ``OMP_NUM_THREADS`` as it was at
    import caps the pool instead. While the library's own fused passes hold the BLAS at one
    thread (each worker runs its own one-thread GEMMs), the limit in force before them is
    used.

    Returns
    -------
    int
        At least 1.
    """
    n = os.cpu_count() or 1
    with _BLAS_LOCK:
        held = _BLAS_DEPTH > 0 and bool(_BLAS_LIMITER)
        outer = _BLAS_OUTER
    blas = _blas_limit_now()
    if held and blas == 1:  # the passes' own one thread (a limit set since then counts)
        blas = outer
    cap = _OMP_NUM_THREADS if blas is None else blas
    if cap is not None:
        n = min(n, cap)
    return max(1, n)


def _fused_workers(size: int, K: np.ndarray | None = None) -> int:
    """Workers of a fused GEMM-and-finish pass over an n×m block of ``size`` entries: the
    pass's own thread count (:func:`pool_threads`) when the block is large and the BLAS would
    use at least as many threads (so a user's BLAS thread limit is never exceeded),
    otherwise 1 (one GEMM over the block, then the finishing pass)."""
    n_threads = pool_threads()
    if n_threads == 1 or size < _FUSE_MIN_ENTRIES:
        return 1
    if K is not None and _pool_bounds(K, n_threads) is None:
        return 1
    return n_threads if _blas_threads() >= n_threads else 1


#: blocks below this many entries keep one GEMM followed by the finishing pass
_FUSE_MIN_ENTRIES = 1 << 22
#: inner dimensions (d + 2 columns of the augmented product) up to which the GEMM costs
#: little per entry of the block, so that writing a large block to memory and reading it
#: back for the finishing pass costs about as much as the product itself: the block is then
#: formed in small row panels (``_SMALL_PANEL_BYTES``), each finished while in cache, on
#: one thread too. Measured on 5000², float64 (``benchmarks/bench_cpu_blocks.py`` and the
#: sweep in ``docs/results/cpu_blocks.md``): against one GEMM over the block on one thread,
#: d = 3 and 10 gain 5–12 %, d = 20–30 break even, d = 100 loses; against 256 MiB panels
#: on two workers, 4 MiB panels gain 13 % (d = 3), 8 % (d = 10), 5 % (d = 30) and lose
#: 5 % at d = 100 (the one-thread GEMM of a small panel repacks the reference set too often).
_SMALL_INNER = 32
_SMALL_PANEL_BYTES = 1 << 22


def _fused_panel_bytes(size: int, d: int, K: np.ndarray | None = None) -> int | None:
    """The row-panel size of the fused route (per-worker GEMM panels, each finished in
    cache) for a block of ``size`` entries of data with ``d`` features, or None for one GEMM
    over the block followed by the finishing pass.

    Small inner dimensions (d + 2 ≤ ``_SMALL_INNER``) take ``_SMALL_PANEL_BYTES`` panels,
    others ``_GEMM_PANEL_BYTES`` (never more). The route runs with several workers
    (:func:`_fused_workers`), and on one thread for small inner dimensions when the BLAS
    runs on one thread anyway (so that holding it at one thread costs nothing; a BLAS that
    threadpoolctl cannot probe is never held).
    """
    small = d + 2 <= _SMALL_INNER
    panel = min(_GEMM_PANEL_BYTES, _SMALL_PANEL_BYTES) if small else _GEMM_PANEL_BYTES
    if _fused_workers(size, K) > 1:
        return panel
    if (small and size >= _FUSE_MIN_ENTRIES and (K is None or K.flags.c_contiguous)
            and _blas_limit_now() == 1):  # a BLAS probed at one thread (none found: no)
        return panel
    return None


_POOL = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()
_IN_POOL = threading.local()


def _pool_bounds(K: np.ndarray, n_threads: int | None = None):
    """Row bounds of the chunks a pass over K is split into (None: run on one thread)."""
    if K.size < 2**20 or not K.flags.c_contiguous:  # small: not worth a thread (or a probe)
        return None
    n_threads = pool_threads() if n_threads is None else n_threads
    if n_threads == 1 or K.shape[0] < 2 * n_threads:
        return None
    return np.linspace(0, K.shape[0], n_threads + 1).astype(int)


def _executor(n_threads: int):
    """The library's thread pool, with at least ``n_threads`` workers (grown when needed)."""
    global _POOL, _POOL_SIZE
    with _POOL_LOCK:
        if _POOL is None or _POOL_SIZE < n_threads:
            from concurrent.futures import ThreadPoolExecutor

            # a smaller pool is dropped, not shut down: a pass of another thread may still be
            # submitting to it; its idle workers exit when it is collected
            _POOL_SIZE = max(n_threads, os.cpu_count() or 1)
            _POOL = ThreadPoolExecutor(max_workers=_POOL_SIZE, thread_name_prefix="asymkern",
                                       initializer=_mark_pool_thread)
        return _POOL


def _mark_pool_thread() -> None:
    _IN_POOL.active = True


def apply_rows(K: np.ndarray, work) -> np.ndarray:
    """Run ``work(a, b)`` (which updates rows a:b of K in place) over row chunks on the
    library's threads: :func:`pool_threads` of them, one chunk each.

    numpy ufuncs run on one thread (they release the GIL), while the GEMM before them uses every
    core; for large blocks the elementwise pass would otherwise dominate. Small blocks, a
    limit of one thread, and calls from inside the pool itself run in the calling thread.
    """
    bounds = None if getattr(_IN_POOL, "active", False) else _pool_bounds(K)
    if bounds is None:
        work(0, K.shape[0])
        return K
    pool = _executor(len(bounds) - 1)
    futures = [pool.submit(work, int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
    for f in futures:
        f.result()
    return K


def inplace_ufunc(func, K: np.ndarray) -> np.ndarray:
    """Apply an elementwise numpy ufunc in place, split over row chunks on all cores."""
    if not K.flags.c_contiguous:
        return func(K, out=K)

    def work(a, b):
        func(K[a:b], out=K[a:b])

    return apply_rows(K, work)


def evaluate_callable(func, X, Z, name: str = "kernel") -> np.ndarray:
    """Call a user kernel function and check shape and finiteness of what it returns."""
    values = check_finite_result(_dense(func(X, Z)), name, shape=(X.shape[0], Z.shape[0]))
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    return values
