"""Kernel blocks, row normalisers and blocked products with G and Gᵀ on torch (private).

:class:`TorchKernel` evaluates the kernels of :mod:`asymkern.kernels` on torch tensors with
the same numerics as the numpy kernel layer (:func:`asymkern.kernels.base.neg_scaled_sq_dists`):
scaled squared distances −γ‖x − z‖² written by one GEMM of augmented rows after shifting both
sets by the centre of the reference set (no cancellation for data far from 0), checked by one
min/max reduction (one device synchronisation per block), entries below the rounding bound
2(d+2)·eps·(‖x−c‖² + ‖z−c‖²) recomputed directly in float64 (identical rows give exactly 0),
and the row normalisers of the asymmetric kernels by a streaming log-sum-exp over column
blocks: the row maximum μ kept apart (exact: a value of the block), the terms
exp(log k − μ) ∈ (0, 1] formed in the data dtype and summed in float64 (SNE:
log Σ_r exp(−γ‖x − r‖²) never overflows or underflows, whatever the bandwidth; T:
log Σ_r (1 + γ‖x − r‖²)⁻¹). A whole row-normalised matrix (``to_dense``) is normalised in one
pass over its formed values.

:class:`TorchKernelMatrix` is the lazy G = [κ(x_i, z_j)] on the device: blocks over rows (and
over columns for the normalisers) of at most ``working_memory`` MiB, products G·B and Gᵀ·B
accumulated block by block, so no n×m matrix is held.
"""

from __future__ import annotations

import math
from typing import Any

from .._backend import LazyMatrix, ops_of
from .._dispatch import require_torch
from . import fused

#: kernel names the torch backend evaluates ('gaussian' is the registry's alias of 'rbf')
SUPPORTED_KERNELS = ("rbf", "gaussian", "laplacian", "linear", "polynomial", "cauchy", "sne", "t",
                     "softmax")

_SQDIST = ("rbf", "cauchy", "sne", "t")


def check_torch_kernel(kernel) -> None:
    """Refuse a kernel the torch backend cannot evaluate.

    Parameters
    ----------
    kernel : Kernel
        A resolved kernel instance (``kernel_`` of an estimator).

    Raises
    ------
    ValueError
        Naming ``kernel`` and :data:`SUPPORTED_KERNELS`.
    """
    name = getattr(kernel, "name", None)
    if name not in SUPPORTED_KERNELS or type(kernel).__module__ != "asymkern.kernels.pairwise":
        raise ValueError(
            f"kernel={name or kernel!r} is not available on the torch backend; supported "
            f"kernels: {', '.join(SUPPORTED_KERNELS)} (use device=None with numpy input for "
            "the other kernels)"
        )


def _numpy_dtype(X):
    """numpy's dtype of a floating tensor (float16/bfloat16 read as float32)."""
    import numpy as np

    return np.float64 if str(X.dtype) == "torch.float64" else np.float32


class TorchKernel:
    """A kernel of :mod:`asymkern.kernels.pairwise` evaluated on torch tensors.

    Parameters
    ----------
    kernel : Kernel
        The resolved kernel (its parameters are read, never modified).
    n_features : int
        d, for the kernels whose default gamma is 1/d.
    """

    def __init__(self, kernel, n_features: int):
        from ..kernels.pairwise import _resolve_gamma

        check_torch_kernel(kernel)
        self.kernel = kernel
        self.name = kernel.name
        self.row_normalized = bool(kernel.row_normalized)
        if self.name in _SQDIST:
            self.gamma = float(kernel._sq_scale(n_features))
            self._value = type(kernel)._value_kind  # which entries the rounding can move
        elif self.name == "softmax":
            self.gamma = float(kernel._scale(n_features))
        elif self.name in ("laplacian", "polynomial"):
            self.gamma = float(_resolve_gamma(kernel.gamma, None, n_features, self.name))
        if self.name == "polynomial":
            d = float(kernel.degree)  # a whole number stays an exact integer power
            self.degree = int(d) if d == int(d) else d
            self.coef0 = float(kernel.coef0)

    # ------------------------------------------------------------------------- raw blocks
    @staticmethod
    def center(Z):
        """The shift of the squared-distance expansion: the column means of Z (its dtype)."""
        return Z.double().mean(dim=0).to(Z.dtype)

    @staticmethod
    def scaled_sq_dists(X, Z, c, s: float, value: str | None = None, row_lse=None,
                        budget: float | None = None, neg_log1p: bool = False):
        """s·‖x_i − z_j‖² (X's dtype, s ≠ 0) by one GEMM of augmented rows.

        With x' = x − c, z' = z − c: s·‖x' − z'‖² = q·k for q = [−2s·x', s‖x'‖², 1] and
        k = [z', 1, s‖z'‖²], so the block is written once, already scaled (the numpy layer's
        :func:`~asymkern.kernels.base.neg_scaled_sq_dists` does the same). One reduction
        (its minimum and maximum, one device synchronisation) then checks that every value is
        finite and whether any entry lies under the rounding bound 2(d+2)·eps·(‖x'‖² + ‖z'‖²)
        of the expansion; only then are the candidates located and recomputed directly in
        float64 (identical rows give exactly 0). Values that are not finite (data or s so large
        that the expansion overflows) take the unscaled route: ‖x' − z'‖² (an
        :class:`OverflowError` if it overflows), then the product with s (±inf where s·‖x' − z'‖²
        alone overflows). ``value`` (how the kernel reads the result, as
        :func:`~asymkern.kernels.base.neg_scaled_sq_dists`'s): where the data spread so far
        beyond the kernel's width that the rounding of s·‖x' − z'‖² could move a value by more
        than the tolerance, the entries whose values it could move are recomputed too
        (:meth:`_recompute_near`). ``row_lse`` (float64 (n,), optional): for
        ``value='exp_rows'``, the rows' known log-normalisers log Σ_{r∈R} exp(s‖x − r‖²) over a
        reference set R (the ``row_lse`` of
        :func:`~asymkern.kernels.base.neg_scaled_sq_dists`): the window of the entries that
        matter then reaches down to lse − 800 where R lacks the columns nearest to x.
        ``budget``: bytes of the float64 temporaries of the direct recomputation (default: as
        in :meth:`_recompute_near`). ``neg_log1p`` (s > 0): return −log(1 + s‖x − z‖²)
        instead, the log-values of the Cauchy and T kernels, representable also where
        s‖x − z‖² overflows (:meth:`_neg_log1p_unfolded`, the numpy layer's
        ``unfolded_func``).
        """
        torch = require_torch()
        n, m = int(X.shape[0]), int(Z.shape[0])
        if not (n and m):
            return torch.empty((n, m), dtype=X.dtype, device=X.device)
        Xc, Zc = X - c, Z - c
        xx, zz = (Xc * Xc).sum(dim=1), (Zc * Zc).sum(dim=1)
        q = torch.cat([Xc * (-2.0 * s), (xx * s)[:, None],
                       torch.ones((n, 1), dtype=X.dtype, device=X.device)], dim=1)
        k = torch.cat([Zc, torch.ones((m, 1), dtype=X.dtype, device=X.device),
                       (zz * s)[:, None]], dim=1)
        S = q @ k.T
        lo, hi = torch.aminmax(S)
        lo, hi, xm, zm = torch.stack([lo, hi, xx.max(), zz.max()]).tolist()
        if not all(map(math.isfinite, (lo, hi, xm, zm))):
            D = TorchKernel._sq_dists_unscaled(Xc, Zc, xx, zz, X, Z, abs(s), value,
                                               row_lse=row_lse, budget=budget)
            return TorchKernel._neg_log1p_unfolded(D, s) if neg_log1p else D.mul_(s)
        wide = TorchKernel._wide(X, abs(s), xm + zm, value, min(abs(lo), abs(hi)))
        if wide or min(abs(lo), abs(hi)) <= TorchKernel._bound(X, s) * (xm + zm):
            # else no entry under the largest rounding bound
            S = TorchKernel._recompute_near(S, X, Z, xx, zz, s, xm + zm,
                                            value if wide else None, row_lse=row_lse,
                                            budget=budget)
        return S.log1p_().neg_() if neg_log1p else S

    @staticmethod
    def _neg_log1p_unfolded(D, s: float):
        """−log(1 + s·D) (D's dtype) from the unscaled D = ‖x − z‖² ≥ 0 and s > 0, formed in
        float64, representable also where s·D overflows
        (:func:`~asymkern.kernels.base.neg_log1p_scaled`, the numpy layer's formula)."""
        from ..kernels.base import neg_log1p_scaled

        return neg_log1p_scaled(D.double(), s, require_torch()).to(D.dtype)

    @staticmethod
    def _bound(X, s: float) -> float:
        """2(d+2)·eps·|s|: the rounding bound of the expansion per unit of ‖x'‖² + ‖z'‖²."""
        return 2.0 * (X.shape[1] + 2) * float(require_torch().finfo(X.dtype).eps) * abs(s)

    @staticmethod
    def _wide(X, gamma: float, top: float, value: str | None, low: float) -> bool:
        """Whether the value of an exponent γ‖x − z‖² of pairs with ‖x'‖² + ‖z'‖² up to
        ``top`` can be moved by its rounding by more than the tolerance
        (:func:`~asymkern.kernels.base._value_tol`), judged on the probabilistic size
        2√(d+2)·eps of the rounding (Higham & Mary, 2019); ``low``: the smallest exponent
        magnitude, which damps the relative error of the 'reciprocal' kernels. The decision
        does not depend on where the window of 'exp_rows' hangs (the block's row maxima or
        the normalisers over another reference set): only :meth:`_wide_pairs` reads that."""
        from ..kernels.base import _value_tol

        if value is None:
            return False
        coef = TorchKernel._bound(X, gamma)
        E = coef / math.sqrt(X.shape[1] + 2) * top
        tol = _value_tol(_numpy_dtype(X))
        if value == "reciprocal":
            return E > tol * (1.0 + max(0.0, low - coef * top))
        return E > tol

    @staticmethod
    def _recompute_near(S, X, Z, xx, zz, s: float, top: float, value: str | None = None,
                        gamma: float | None = None, row_lse=None, budget: float | None = None):
        """``S`` (= s·‖x' − z'‖², rounded) with its entries under the rounding bound of their
        pair recomputed directly from the differences in float64 (``top``: the largest
        ‖x'‖² + ‖z'‖², which bounds the candidates located first). With ``value``, also the
        entries whose values the rounding could move (:meth:`_wide_pairs`; ``row_lse``: the
        rows' known log-normalisers for 'exp_rows'); ``gamma``: the factor of the exponent
        when ``S`` is unscaled (s = 1). The pairs are recomputed in batches whose float64
        temporaries (three arrays of d values a pair, as the numpy layer's
        :func:`~asymkern.kernels.base.pair_sq_dists` counts them) stay within ``budget``
        bytes (default: the configured ``working_memory``; a :class:`TorchKernelMatrix` passes
        its own); every batch but a lone one has
        the same number of pairs (the last one overlaps the one before), so the reduction
        over the d features, and with it each value, does not depend on how many pairs a
        block recomputes."""
        torch = require_torch()
        coef = TorchKernel._bound(X, s)
        if value is not None:
            i, j = TorchKernel._wide_pairs(S, X, xx, zz, s, top, value, gamma, row_lse)
        else:
            i, j = torch.nonzero(S.abs() <= coef * top, as_tuple=True)
            if i.numel():
                near = S[i, j].abs() <= coef * (xx[i] + zz[j])
                i, j = i[near], j[near]
        pairs = int(i.numel())
        if not pairs:
            return S
        if budget is None:
            from ..config import get_config

            budget = float(get_config()["working_memory"]) * 2**20
        step = max(1, min(pairs, int(budget // (24 * max(1, int(X.shape[1]))))))
        for a in range(0, pairs, step):
            a = min(a, pairs - step)  # the last batch as long as the others
            ib, jb = i[a:a + step], j[a:a + step]
            D = X[ib].double()
            D.sub_(Z[jb].double())
            S[ib, jb] = (D.mul_(D).sum(dim=1) * s).to(S.dtype)
        return S

    @staticmethod
    def _wide_pairs(S, X, xx, zz, s: float, top: float, value: str, gamma: float | None,
                    row_lse=None):
        """(i, j) of the entries of ``S`` to recompute when its exponents' rounding is not
        small (``neg_scaled_sq_dists``, *Far from the centre*): those under their rounding
        bound, and those whose value the bound could move by more than the tolerance — for
        'exp' those not negligible, for 'exp_rows' those within the window of their row's
        log-normaliser (the row's largest log-value in the block stands for it, or the smaller
        of the two when ``row_lse`` gives the normalisers over another reference set: an
        entry's weight exp(log k − lse) is not negligible down to lse − 800, below the
        block's maximum when that set lacks the columns nearest to x), for 'reciprocal'
        those whose relative error bound is above it.
        As in the numpy layer, only pairs with ‖x'‖² or ‖z'‖² above half of tol over the
        rounding's probabilistic size can be such entries; the block is read in slabs of
        about 2^20 entries, so the temporaries stay a fraction of it."""
        from ..kernels.base import _EXP_WINDOW, _value_tol, value_moves

        torch = require_torch()
        n, m = S.shape
        g = abs(s) if gamma is None else gamma  # |exponent| = g·|S| / |s|
        coef = TorchKernel._bound(X, g)  # worst-case rounding per unit of ‖x'‖² + ‖z'‖²
        typical = coef / math.sqrt(X.shape[1] + 2)
        tol = _value_tol(_numpy_dtype(X))
        T = coef * top
        xxd, zzd = xx.double(), zz.double()
        far_r, far_c = xxd > 0.5 * tol / typical, zzd > 0.5 * tol / typical
        zmax = float(zzd.max())
        found_i, found_j = [], []
        slab = max(1, (1 << 20) // max(1, m))
        for a in range(0, n, slab):
            V = S[a:a + slab] * (g / s)  # γ‖x − z‖² (expanded), the exponent's magnitude
            xs = xxd[a:a + slab]
            anchor: Any = None
            trow: Any = None
            if value == "exp":
                W = V <= _EXP_WINDOW + T
            elif value == "exp_rows":
                trow = coef * (xs + zmax)
                anchor = V.amin(dim=1).double()  # −(the row's largest log-value)
                if row_lse is not None:  # a normaliser below that maximum: −lse above it
                    anchor = torch.maximum(anchor, -row_lse[a:a + slab].to(anchor.device,
                                                                           torch.float64))
                W = V <= (anchor + _EXP_WINDOW + 2.0 * trow).to(V.dtype)[:, None]
            else:
                W = V <= T / tol + T
            W &= far_r[a:a + slab, None] | far_c[None, :]
            i, j = torch.nonzero(W | (V.abs() <= T), as_tuple=True)
            v = V[i, j].double()
            w = xs[i] + zzd[j]
            t = coef * w
            keep = v.abs() <= t  # under the bound, as in the usual pass
            keep |= value_moves(v, t, typical * w, value, tol,
                                None if anchor is None else anchor[i],
                                None if trow is None else trow[i])
            found_i.append(i[keep] + a)
            found_j.append(j[keep])
        return torch.cat(found_i), torch.cat(found_j)

    @staticmethod
    def _sq_dists_unscaled(Xc, Zc, xx, zz, X, Z, gamma: float = 1.0, value: str | None = None,
                           row_lse=None, budget: float | None = None):
        """‖x' − z'‖² by the plain expansion (the route of data whose scaled expansion is not
        finite), with the overflow check and the near-duplicate recomputation (``gamma``,
        ``value``, ``row_lse``, ``budget``: the exponent's factor, how the kernel reads it,
        the rows' known log-normalisers and the recomputation's bytes, as in
        :meth:`scaled_sq_dists`)."""
        torch = require_torch()
        D = torch.addmm(xx[:, None] + zz[None, :], Xc, Zc.T, beta=1.0, alpha=-2.0)
        if not bool(torch.isfinite(D).all()):
            raise OverflowError("squared distances overflow the float range on the torch "
                                "backend; rescale the data (e.g. StandardScaler)")
        top = float(xx.max() + zz.max())
        wide = TorchKernel._wide(X, gamma, top, value, gamma * max(0.0, float(D.min())))
        return TorchKernel._recompute_near(D, X, Z, xx, zz, 1.0, top, value if wide else None,
                                           gamma, row_lse=row_lse, budget=budget)

    def log_block(self, X, Z, c, row_lse=None, budget: float | None = None):
        """log k(x, z) in X's dtype: −γ‖x − z‖² (rbf/sne), −log(1 + γ‖x − z‖²) (cauchy/t),
        ⟨γx, z⟩ (softmax, checked by one min/max reduction). The values of the row-normalised
        blocks and the terms of their normalisers (summed in float64). ``row_lse``: the rows'
        known log-normalisers (float64, (n,); SNE reads them, :meth:`scaled_sq_dists`);
        ``budget``: bytes of the direct recomputation's temporaries."""
        torch = require_torch()
        if self.name == "softmax":
            L = (X * self.gamma) @ Z.T
            if L.numel() and not all(map(math.isfinite, torch.stack(torch.aminmax(L)).tolist())):
                raise OverflowError("kernel 'softmax': ⟨q, k⟩ overflowed the float range; "
                                    "rescale the data")
            return L
        if self.name in ("rbf", "sne"):
            return self.scaled_sq_dists(X, Z, c, -self.gamma, self._value,
                                        row_lse if self._value == "exp_rows" else None, budget)
        return self.scaled_sq_dists(X, Z, c, self.gamma, self._value, budget=budget,
                                    neg_log1p=True)

    def raw(self, X, Z, c=None, budget: float | None = None):
        """Unnormalised kernel values k(x_i, z_j), shape (n, m), in X's dtype (``budget``:
        bytes of the direct recomputation's temporaries, :meth:`scaled_sq_dists`)."""
        torch = require_torch()
        if self.name == "softmax":
            K = self.log_block(X, Z, None).exp_()
            if K.numel() and not bool(torch.isfinite(K).all()):
                raise OverflowError("kernel 'softmax': exp(γ⟨q, k⟩) overflowed; use the "
                                    "row-normalised kernel")
            return K
        if self.name in _SQDIST:
            c = self.center(Z) if c is None else c
            # in the data dtype: γ‖x − z‖² overflowing to inf still gives the correct 0
            if self.name in ("rbf", "sne"):
                return self.scaled_sq_dists(X, Z, c, -self.gamma, self._value,
                                            budget=budget).exp_()
            S = self.scaled_sq_dists(X, Z, c, self.gamma, self._value, budget=budget)
            return S.add_(1.0).reciprocal_()
        if self.name == "laplacian":  # ‖x − z‖₁ in the data dtype (no cancellation), unless
            # it overflows there: then in float64, γ‖x − z‖₁ rounded to the data dtype (numpy's)
            D = torch.cdist(X, Z, p=1.0)
            if D.numel() and not math.isfinite(float(D.max())):
                D = torch.cdist(X.double(), Z.double(), p=1.0).mul_(-self.gamma).to(X.dtype)
                return D.exp_()
            return D.mul_(-self.gamma).exp_()
        gamma, coef0 = 1.0, 0.0
        degree: float = 1
        if self.name == "linear":
            K = X @ Z.T
        else:  # polynomial
            gamma, coef0, degree = self.gamma, self.coef0, self.degree
            K = torch.addmm(torch.full((1, 1), coef0, dtype=X.dtype, device=X.device),
                            X, Z.T, alpha=gamma)
            if isinstance(degree, float) and K.numel():  # no NaN from a negative base
                from ..kernels.pairwise import check_base_for_real_degree

                check_base_for_real_degree(float(K.min()), self.kernel.degree)
            K = K.pow_(degree)
        if K.numel() and self._may_overflow(X, Z, gamma, coef0, degree) and \
                not bool(torch.isfinite(K).all()):
            raise OverflowError(f"kernel {self.name!r} values overflow the float range; rescale "
                                "the data")
        return K

    @staticmethod
    def _may_overflow(X, Z, gamma: float, coef0: float, degree) -> bool:
        """Whether (γ·xᵀz + c₀)^degree could leave the float range, by the numpy layer's cheap
        bound log|.| ≤ degree·log(γ·d·max|x|·max|z| + |c₀|) (two reductions of the data, one
        synchronisation; the n×m values are read only when the bound does not settle it)."""
        torch = require_torch()
        mx, mz = torch.stack([X.abs().max(), Z.abs().max()]).tolist()
        b = gamma * X.shape[1] * mx * mz + abs(coef0)
        if b == 0:
            return False
        if not math.isfinite(b):
            return True
        return degree * math.log(b) > math.log(float(torch.finfo(X.dtype).max)) - 3.0


class TorchKernelMatrix(LazyMatrix):
    """Lazy G = [κ(x_i, z_j)] on a torch device, evaluated block by block (the torch
    implementation of :class:`asymkern._backend.LazyMatrix`).

    Parameters
    ----------
    kernel : TorchKernel
    X, Z : tensors (n, d), (m, d) on the same device and of the same dtype.
    reference : tensor, optional
        The set R over which the row-normalised kernels normalise (default Z): the training
        set Z when new columns are evaluated against a subset (Nyström landmarks).
    working_memory : float
        MiB per block.
    log_norm : tensor (n, 2), optional
        Precomputed normalisers of the rows (:meth:`row_log_norm`; else computed on first
        use).
    center : tensor (d,), optional
        The shift of the squared-distance expansion (default: the mean of ``reference``).
    """

    def __init__(self, kernel: TorchKernel, X, Z, *, reference=None, working_memory: float = 64,
                 log_norm=None, center=None):
        self.kernel = kernel
        self.X, self.Z = X, Z
        self.reference = Z if reference is None else reference
        self.shape = (int(X.shape[0]), int(Z.shape[0]))
        self.ops = ops_of(X)
        self.dtype = self.ops.dtype(X)  # numpy dtype (the protocol's); X.dtype is torch's
        self.device = X.device
        self.working_memory = float(working_memory)
        self.budget = float(working_memory) * 2**20
        self.c = center if center is not None else (
            kernel.center(self.reference) if kernel.name in _SQDIST else None)
        # the rows' normalisers, shared with the copies of :meth:`within` (computed once)
        self._shared = {"log_norm": log_norm}

    @property
    def _log_norm(self):
        return self._shared["log_norm"]

    @_log_norm.setter
    def _log_norm(self, value) -> None:
        self._shared["log_norm"] = value

    def template(self):
        """The data tensor X: the device and dtype of results."""
        return self.X

    def step(self, other: int) -> int:
        """Rows per block when a block has ``other`` columns (≈ 4 float64 temporaries)."""
        return int(max(1, self.budget // (max(1, other) * 8 * 4)))

    # ------------------------------------------------------------------ memory budget
    def _norm_cols(self) -> int:
        """Columns of the reference set per block of the normalisers' pass
        (:meth:`row_log_norm`): 4096, fewer when ``working_memory`` holds fewer entries."""
        return int(max(1, min(int(self.reference.shape[0]), 4096,
                              self.budget // (8 * 4))))

    def data_bytes(self, rows: int, cols: int) -> int:
        """Bytes of the copies of the data that forming a ``rows`` × ``cols`` block makes,
        counted as numpy counts them (:func:`~asymkern.linalg.svd.data_pass_bytes`: (3d + 4)
        float64 entries a row, (2d + 3) a column)."""
        from ..linalg._svd_core import data_copy_bytes

        return data_copy_bytes(self.X.shape[1], rows, cols)

    def pass_bytes(self, others=()) -> int:
        """Bytes the kernel blocks of a pass over G hold, counted as numpy counts the passes
        of its :class:`~asymkern.kernels.KernelMatrix`
        (:func:`~asymkern.linalg.svd.pass_block_bytes`): :data:`PASS_BLOCK_ARRAYS
        <asymkern.linalg.svd.PASS_BLOCK_ARRAYS>` float64 arrays of a block and the copies of
        the data forming it makes (:meth:`data_bytes`).

        Parameters
        ----------
        others : iterable of int, default ()
            Lengths of the other axis of the passes besides the full rows (``m`` columns):
            the landmark counts of a Nyström pass, ``n`` for a pass over column blocks of
            every row. The normalisers' pass of a row-normalised kernel whose normalisers are
            not yet known is counted too.

        Returns
        -------
        int
            The bytes of the largest of these passes' blocks (:meth:`step` rows, at least
            one, against each length).
        """
        from ..linalg.svd import PASS_BLOCK_ARRAYS

        def rows_of(k: int) -> int:  # a pass over row blocks against k columns
            return PASS_BLOCK_ARRAYS * 8 * self.step(k) * k + self.data_bytes(self.step(k), k)

        full = [max(1, int(self.shape[1]))]
        if self.kernel.row_normalized and self._log_norm is None:
            full.append(self._norm_cols())
        # ``others``: either orientation (blocks of rows against k columns, or the reverse)
        sides = [rows_of(k) + max(0, self.data_bytes(k, self.step(k))
                                  - self.data_bytes(self.step(k), k))
                 for k in (max(1, int(k)) for k in others)]
        return int(max([rows_of(k) for k in full] + sides))

    def within(self, budget_bytes: float, others=()) -> TorchKernelMatrix:
        """G, with blocks small enough that a pass over it holds at most ``budget_bytes``
        (:meth:`pass_bytes`): the torch counterpart of :func:`~asymkern.linalg.svd.blocks_within`.

        Parameters
        ----------
        budget_bytes : float
            What is left of the memory budget for the blocks of a pass.
        others : iterable of int, default ()
            As in :meth:`pass_bytes`.

        Returns
        -------
        TorchKernelMatrix
            G itself when its blocks fit already, else a shallow copy with a smaller
            ``working_memory`` (fewer rows per block, down to one row; the same entries, the
            normalisers shared with G). Its blocks may still exceed ``budget_bytes`` when one
            row does not fit: the caller's budget check then refuses.
        """
        import copy

        if self.pass_bytes(others) <= budget_bytes:
            return self
        # entries per block E: working_memory = 32 E bytes gives step(k) = E // k exactly
        lo, hi = 1, max(1, int(self.budget // 32))
        H = copy.copy(self)

        def fits(entries: int) -> bool:
            H.budget = float(entries * 32)
            return H.pass_bytes(others) <= budget_bytes

        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
        H.budget = float(lo * 32)
        H.working_memory = H.budget / 2**20
        return H

    def _check_reference(self) -> None:
        """Refuse a row-normalised kernel over a reference set without rows (numpy's
        :class:`~asymkern.kernels.KernelMatrix` refuses such a Z when it is built): the
        normalisers Σ_{r∈R} k(x, r) would be empty sums."""
        R = self.reference
        if self.kernel.row_normalized and not int(R.shape[0]):
            what = "Z" if R is self.Z else "reference"
            raise ValueError(
                f"{what} has 0 sample(s) (shape={tuple(R.shape)}) while a minimum of 1 is "
                f"required: the row-normalised kernel {self.kernel.name!r} normalises each row "
                f"over {what}")

    def _check_lse(self, mu, ell=None) -> None:
        """Refuse row normalisers [μ, ℓ] (or log-normalisers μ alone) that are not finite
        (every k(x, r) of a row under- or overflowed): numpy's ``KernelMatrix._check_lse``,
        so that no NaN is returned. One reduction, one device synchronisation."""
        torch = require_torch()
        ok = torch.isfinite(mu)
        if ell is not None:
            ok &= torch.isfinite(ell)
        if not bool(ok.all()):
            from ..kernels.matrix import lse_overflow_error

            i = int(torch.nonzero(~ok)[0, 0])
            lse = float(mu[i]) + (0.0 if ell is None else float(ell[i]))
            raise lse_overflow_error(self.kernel.name, i, lse)

    def log_norm(self):
        """The rows' normalisers over ``reference`` (see :meth:`row_log_norm`)."""
        if self._log_norm is None:
            self._log_norm = self.row_log_norm(self.X)
        return self._log_norm

    def row_log_norm(self, X):
        """Normalisers log Σ_{r∈R} k(x, r) of the rows of X, blocked over rows and columns.

        Returned as an (n, 2) float64 tensor [μ, ℓ] with μ = max_r log k(x, r) and
        ℓ = log Σ_r exp(log k(x, r) − μ) ∈ [0, log ``|R|``]: the value κ(x, z) is then
        exp((log k(x, z) − μ) − ℓ). Keeping μ apart avoids rounding the large ``|μ|`` of a tiny
        SNE bandwidth into the small ℓ (a streaming log-sum-exp over column blocks).

        Raises
        ------
        ValueError
            When the reference set has no rows.
        OverflowError
            When a normaliser is not finite (every value of the row under- or overflowed),
            as numpy's :class:`~asymkern.kernels.KernelMatrix` does.
        """
        torch = require_torch()
        self._check_reference()
        R, k = self.reference, self.kernel
        out = torch.empty((X.shape[0], 2), dtype=torch.float64, device=X.device)
        cstep = self._norm_cols()
        rstep = self.step(cstep)
        for a in range(0, X.shape[0], rstep):
            Xb = X[a:a + rstep]
            mx = s = None
            for b in range(0, R.shape[0], cstep):  # log k in the data dtype (its maximum
                # is exact), exp(log k − μ) ∈ (0, 1] summed in float64: ℓ within a few eps
                m2, s2 = fused.exp_rows_(k.log_block(Xb, R[b:b + cstep], self.c,
                                                     budget=self.budget))
                m2 = m2[:, 0].double()
                if mx is None:
                    mx, s = m2, s2
                else:
                    new = torch.maximum(mx, m2)
                    shift = torch.where(new.isfinite(), new, 0.0)  # both blocks of zeros k
                    s = s * torch.exp(mx - shift) + s2 * torch.exp(m2 - shift)
                    mx = new
            out[a:a + rstep, 0] = mx
            out[a:a + rstep, 1] = torch.log(s)
        self._check_lse(out[:, 0], out[:, 1])
        return out

    def prepare(self) -> None:
        """Compute the row normalisers once (before arbitrary blocks are read)."""
        if self.kernel.row_normalized:
            self.log_norm()

    def points(self, side: str):
        """The data set of one side ('row': X, 'col': Z), for k-means landmarks."""
        return self.X if side == "row" else self.Z

    def block(self, rows, cols):
        """G[rows, cols] (X's dtype); ``rows``/``cols`` are slices, index tensors or host
        index arrays."""
        rows, cols = self.ops.index(rows, self.X), self.ops.index(cols, self.X)
        Xb, Zb = self.X[rows], self.Z[cols]
        k = self.kernel
        if not k.row_normalized:
            return k.raw(Xb, Zb, self.c, budget=self.budget)
        ln = self.log_norm()[rows]
        # in the data dtype: exp((log k − μ) − ℓ), μ rounded first so that the large terms
        # cancel exactly (Sterbenz) where κ is not negligible. Over another reference set the
        # normalisers may lie below the block's row maxima: the SNE entries that matter then
        # reach further below them (``row_lse``, :meth:`TorchKernel.scaled_sq_dists`)
        lse = None if self.reference is self.Z else ln[:, 0] + ln[:, 1]
        S = k.log_block(Xb, Zb, self.c, row_lse=lse, budget=self.budget)
        mu = ln[:, 0].to(S.dtype)
        ell = (ln[:, 1] + (ln[:, 0] - mu.double())).to(S.dtype)
        S = S.sub_(mu[:, None]).sub_(ell[:, None]).exp_()
        if self.reference is not self.Z and S.numel() and not math.isfinite(float(S.max())):
            raise OverflowError(f"kernel {k.name!r}: the normalised value k(x, z) / Σ_r k(x, r) "
                                f"overflowed {S.dtype} (the reference set is far from the "
                                "columns); rescale the data")
        return S

    def to_dense(self):
        """The whole G (n × m). A row-normalised G over its own columns whose normalisers are
        not yet known is normalised in one pass over the formed values (exp(log k − μ), μ the
        row maximum, divided by the float64 row sums), and keeps the normalisers [μ, ℓ].

        Raises
        ------
        ValueError
            A row-normalised kernel whose reference set has no rows.
        OverflowError
            A row-normalised kernel with a row whose every value under- or overflowed.
        """
        k = self.kernel
        if not (k.row_normalized and self._log_norm is None and self.reference is self.Z):
            return self.block(slice(None), slice(None))
        torch = require_torch()
        self._check_reference()
        S = k.log_block(self.X, self.Z, self.c, budget=self.budget)
        mu, s = fused.exp_rows_(S)
        ln = torch.stack([mu[:, 0].double(), torch.log(s)], dim=1)
        self._check_lse(ln[:, 0], ln[:, 1])
        self._log_norm = ln
        return S.div_(s.to(S.dtype)[:, None])

    def matmat(self, B, cols=None):
        """G[:, cols] @ B: the fused product (:mod:`.fused`; RBF, SNE, softmax: G is never
        formed) for every column and B in X's dtype, else the blocked one of
        :meth:`LazyMatrix.blocked_matmat <asymkern._backend.LazyMatrix.blocked_matmat>` in the
        promoted dtype of X and B (float32 kernel values times a float64 B: a float64
        product, numpy's rule)."""
        out = fused.product(self, B) if cols is None else None
        return out if out is not None else self.blocked_matmat(
            B, cols, require_torch().promote_types(self.X.dtype, B.dtype))

    def rmatmat(self, B, rows=None):
        """G[rows, :]ᵀ @ B: fused for every row, else blocked (see :meth:`matmat`)."""
        out = fused.product(self, B, transpose=True) if rows is None else None
        return out if out is not None else self.blocked_rmatmat(
            B, rows, require_torch().promote_types(self.X.dtype, B.dtype))

    def lowered(self):
        """G with float16/bfloat16 products (``precision='low'``, :func:`.fused.lowered`), or
        None when its products are not fused (another kernel, a row-normalised kernel over
        another reference set)."""
        return LowPrecision(self) if fused.applies(self) else None


class LowPrecision(LazyMatrix):
    """A fused :class:`TorchKernelMatrix` whose whole products G·B and Gᵀ·B run on float16 (or
    bfloat16) operands with float32 accumulation (:func:`.fused.lowered`): the passes of
    :func:`asymkern.linalg.randomized_svd` with ``precision='low'``. Blocks, and products with
    a subset of the rows or columns, are G's own.
    """

    def __init__(self, G: TorchKernelMatrix):
        self.G = G
        self.shape, self.dtype, self.ops = G.shape, G.dtype, G.ops
        self.working_memory = G.working_memory

    def template(self):
        return self.G.template()

    def block(self, rows, cols):
        return self.G.block(rows, cols)

    def matmat(self, B, cols=None):
        out = fused.product(self.G, B, low=True) if cols is None else None
        return self.G.matmat(B, cols) if out is None else out

    def rmatmat(self, B, rows=None):
        out = fused.product(self.G, B, transpose=True, low=True) if rows is None else None
        return self.G.rmatmat(B, rows) if out is None else out
