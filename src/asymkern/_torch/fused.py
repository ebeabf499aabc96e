"""Fused kernel products on torch: G·B and Gᵀ·B through PyTorch's attention kernels (private).

The kernels that are exponentials of an inner product after an augmentation never need G:

* softmax attention (the row-normalised kernel κ(x, z) = exp(γ⟨x, z⟩) / Σ_{r∈R} exp(γ⟨x, r⟩))
  is ``softmax(q kᵀ) B`` with q = γx, k = z;
* SNE (κ(x, z) = exp(−γ‖x − z‖²) / Σ_r exp(−γ‖x − r‖²)): with both sets shifted by the centre c
  of the reference set (x' = x − c, z' = z − c, so offset data lose no digits),
  −γ‖x' − z'‖² = q·k − γ‖x'‖² for q = [2γx', 1] and k = [z', −γ‖z'‖²], and the term −γ‖x'‖² cancels
  in the normalisation: G·B = ``softmax(q kᵀ) B``;
* RBF (unnormalised): G·B = exp(ℓ − γ‖x'‖²) ⊙ ``softmax(q kᵀ) B`` with ℓ the row log-sum-exp of
  q kᵀ, which the fused kernels return beside the product.

Gᵀ·B of a row-normalised G is an unnormalised product with the row normalisers L_i known from
the forward pass: κ(x_i, z_j) = exp(k_j·q_i − L_i), so with queries [k_j, 1] and keys
[q_i, −L_i], Gᵀ·B = exp(ℓ') ⊙ ``softmax(...) B`` (ℓ' the log column sums of G).

:func:`attention_lse` runs PyTorch's own fused kernels — the CPU flash-attention kernel (float32
and float64) and the CUDA memory-efficient kernel (float32, float16, bfloat16) — which stream over
key blocks with an online softmax, so no n×m matrix is formed; where none applies (float64 on
CUDA, a torch without these kernels) it falls back to the plain expression over row blocks
(``softmax(q kᵀ) B`` per block, one kernel launch per operation, the row maximum, exponentials
and float64 row sums each read once, the log-sum-exp taken from the same pass). No CUDA code
is written here.
"""

from __future__ import annotations

import math
import warnings

from .._dispatch import require_torch

#: the kernels whose products are fused
FUSED_KERNELS = ("rbf", "gaussian", "sne", "softmax")

_PAD = 8  # head sizes padded to a multiple of 8 (the fused CUDA kernels' alignment)


def _padded(t, width: int):
    """``t`` (rows × e) with zero columns appended up to ``width`` columns."""
    torch = require_torch()
    if t.shape[1] == width:
        return t.contiguous()
    out = torch.zeros((t.shape[0], width), dtype=t.dtype, device=t.device)
    out[:, :t.shape[1]] = t
    return out


def _fused_op(q):
    """The fused attention kernel with log-sum-exp for q's device and dtype, or None."""
    torch = require_torch()
    aten = torch.ops.aten
    if q.device.type == "cpu" and q.dtype in (torch.float32, torch.float64, torch.float16,
                                              torch.bfloat16):
        return getattr(aten, "_scaled_dot_product_flash_attention_for_cpu", None), "cpu"
    if q.device.type == "cuda" and q.dtype in (torch.float32, torch.float16, torch.bfloat16):
        return getattr(aten, "_scaled_dot_product_efficient_attention", None), "cuda"
    return None, None


def exp_rows_(S):
    """``S`` ← exp(S − μ) in place, μ the row maxima (every value in (0, 1], the maximum exactly
    1): returns μ (shape (n, 1), S's dtype) and the row sums of the new S in float64. The one
    pass of the log-sum-exp shared by the products' fallback, the row normalisers and whole
    row-normalised matrices (:mod:`asymkern._torch.kernels`)."""
    torch = require_torch()
    mu = S.amax(dim=1, keepdim=True)
    S.sub_(torch.where(mu.isfinite(), mu, 0.0)).exp_()  # a row of zeros k sums to 0, not NaN
    return mu, S.sum(dim=1, dtype=torch.float64)


#: float16 operands when every entry of the split q and k is below this (its largest finite
#: value is 65504), else bfloat16 (float32's exponent range)
_HALF_LIMIT = 2.0**14


def lowered(q, k, v):
    """float16 (or bfloat16) operands q₃, k₃, v₃ and column scales s with
    ``softmax(q kᵀ) v ≈ (softmax(q₃ k₃ᵀ) v₃) s``, for ``precision='low'``.

    The logits keep about twice the low format's digits: with q = q_h + q_l and
    k = k_h + k_l (q_h the rounding of q, q_l that of the remainder),
    q₃ = [q_h, q_h, q_l] and k₃ = [k_h, k_l, k_h], so q₃·k₃ = q_h·k_h + q_h·k_l + q_l·k_h, each
    product exact in the kernels' float32 accumulation; only q_l·k_l ≈ eps²·‖q‖‖k‖ is lost.
    The augmented coordinates of a squared distance (γ‖z‖², the normalisers L) are large
    beside the differences that matter, so rounding q and k once would cost
    eps·γ‖x‖² in every logit. v is divided by a power of two per column (exact) so that
    its largest entry is in [½, 1] and rounded once: the products carry a relative
    error of about the format's eps (2⁻¹¹ in float16), which the float32 Rayleigh–Ritz step
    of :func:`asymkern.linalg.randomized_svd` keeps out of the singular values.

    float16 is used when every entry of q_h and k_h is below 2¹⁴ (its range ends at 65504),
    else bfloat16 (2⁻⁸, the exponent range of float32).
    """
    torch = require_torch()
    big = float(torch.maximum(q.abs().max(), k.abs().max())) if q.numel() and k.numel() else 0.0
    low = torch.float16 if big < _HALF_LIMIT else torch.bfloat16
    qh, kh = q.to(low), k.to(low)
    ql, kl = (q - qh.to(q.dtype)).to(low), (k - kh.to(k.dtype)).to(low)
    s = v.abs().amax(dim=0)
    s = torch.where(s > 0, torch.exp2(torch.ceil(torch.log2(s))), torch.ones_like(s))
    return (torch.cat([qh, qh, ql], dim=1), torch.cat([kh, kl, kh], dim=1), (v / s).to(low),
            s)


def attention_lse(q, k, v, block_rows: int = 4096, low: bool = False):
    """``softmax(q kᵀ) v`` and the row log-sum-exp of ``q kᵀ``, never forming ``q kᵀ``.

    Parameters
    ----------
    q : tensor (n, e)
    k : tensor (m, e)
    v : tensor (m, r)
        On one device, of one dtype.
    block_rows : int, default 4096
        Rows per block of the fallback (no fused kernel for this device and dtype).
    low : bool, default False
        Run the kernel on float16/bfloat16 operands (:func:`lowered`), ``precision='low'``.

    Returns
    -------
    out : tensor (n, r)
        In q's dtype.
    lse : tensor (n,)
        log Σ_j exp(q_i·k_j), in float64.
    """
    torch = require_torch()
    if low:
        q3, k3, v3, s = lowered(q, k, v)
        try:
            out, lse = attention_lse(q3, k3, v3, block_rows)
        except RuntimeError as exc:  # a head size or layout the fused kernel refuses
            if isinstance(exc, torch.cuda.OutOfMemoryError):
                raise
            warnings.warn(f"precision='low': the fused attention kernel refused the "
                          f"float16 operands ({str(exc)[:200]}); the products run over row "
                          "blocks instead (same values, slower)", RuntimeWarning,
                          stacklevel=2)
            out, lse = _blocked_lse(q3, k3, v3, block_rows)
        return out.to(q.dtype) * s.to(q.dtype), lse
    n, r = int(q.shape[0]), int(v.shape[1])
    op, kind = _fused_op(q)
    if op is not None and n and k.shape[0]:
        width = _PAD * math.ceil(max(q.shape[1], r) / _PAD)
        q4, k4, v4 = (_padded(t, width)[None, None] for t in (q, k, v))
        if kind == "cpu":
            out, lse = op(q4, k4, v4, 0.0, False, scale=1.0)
        else:
            out, lse = op(q4, k4, v4, None, True, 0.0, False, scale=1.0)[:2]
        return out[0, 0, :, :r], lse[0, 0, :n].to(torch.float64)
    return _blocked_lse(q, k, v, block_rows)


def _blocked_lse(q, k, v, block_rows: int):
    """:func:`attention_lse` over row blocks of ``q kᵀ`` (no fused kernel): one pass each for
    the row maximum, the exponentials and the float64 row sums; float16 logits in float32."""
    torch = require_torch()
    n, r = int(q.shape[0]), int(v.shape[1])
    out = torch.empty((n, r), dtype=q.dtype, device=q.device)
    lse = torch.empty(n, dtype=torch.float64, device=q.device)
    if not k.shape[0]:  # no columns: an empty product (zeros), log 0 = −inf
        out.zero_()
        lse.fill_(-float("inf"))
        return out, lse
    wide = torch.promote_types(q.dtype, torch.float32)  # float16 logits summed in float32
    if wide != q.dtype:
        k, v = k.to(wide), v.to(wide)
    for a in range(0, n, block_rows):  # one pass each: max, shift, exp, row sums (float64)
        S = q[a:a + block_rows].to(wide) @ k.T
        mx, s = exp_rows_(S)
        lse[a:a + block_rows] = mx[:, 0].double() + torch.log(s)
        out[a:a + block_rows] = (S @ v).div_(s.to(S.dtype)[:, None])
    return out, lse


def operands(name: str, gamma: float, X, Z, c=None):
    """The augmented queries q and keys k with κ(x, z) ∝ exp(q·k) (module docstring), and
    γ‖x'‖² (float64, RBF's scale; None for the others).

    Parameters
    ----------
    name : {'rbf', 'gaussian', 'sne', 'softmax'}
    gamma : float
        The kernel's γ.
    X, Z : tensors (n, d), (m, d)
    c : tensor (d,), optional
        The shift of the squared-distance kernels (the centre of the reference set).
    """
    torch = require_torch()
    if name == "softmax":
        return X * gamma, Z, None
    Xc, Zc = (X, Z) if c is None else (X - c, Z - c)
    zz = (Zc.double() * Zc.double()).sum(dim=1)
    q = torch.cat([Xc * (2.0 * gamma), torch.ones((X.shape[0], 1), dtype=X.dtype,
                                                  device=X.device)], dim=1)
    k = torch.cat([Zc, (-gamma * zz).to(Z.dtype)[:, None]], dim=1)
    xx = gamma * (Xc.double() * Xc.double()).sum(dim=1) if name in ("rbf", "gaussian") else None
    return q, k, xx


def matmat(name: str, gamma: float, X, Z, B, c=None, block_rows: int = 4096,
           low: bool = False):
    """G·B for G = [κ(x_i, z_j)], the row-normalised kernels normalised over Z itself.

    Returns the product in B's dtype (that of X and Z) and, for the row-normalised kernels, the
    row log-normalisers L (float64, what :func:`rmatmat` needs). ``low``: float16/bfloat16
    operands (:func:`lowered`).
    """
    torch = require_torch()
    q, k, xx = operands(name, gamma, X, Z, c)
    out, lse = attention_lse(q, k, B, block_rows, low)
    if xx is None:
        return out, lse
    scale = torch.exp(lse - xx)  # Σ_j exp(−γ‖x' − z_j'‖²) ∈ [0, m]: no overflow
    return out * scale.to(out.dtype)[:, None], None


def rmatmat(name: str, gamma: float, X, Z, B, c=None, row_lse=None, block_rows: int = 4096,
            low: bool = False):
    """Gᵀ·B (B has one row per row of G). ``row_lse``: the row normalisers L of the
    row-normalised kernels (from :func:`matmat` or :func:`row_lse_of`; computed when None).
    ``low``: float16/bfloat16 operands (:func:`lowered`; L itself in full precision)."""
    torch = require_torch()
    if name in ("rbf", "gaussian"):  # symmetric in its two arguments: G(X, Z)ᵀ = G(Z, X)
        return matmat(name, gamma, Z, X, B, c, block_rows, low)[0]
    q, k, _ = operands(name, gamma, X, Z, c)
    L = row_lse_of(q, k, block_rows) if row_lse is None else row_lse
    q2 = torch.cat([k, torch.ones((k.shape[0], 1), dtype=k.dtype, device=k.device)], dim=1)
    k2 = torch.cat([q, (-L).to(q.dtype)[:, None]], dim=1)
    out, lse = attention_lse(q2, k2, B, block_rows, low)
    return out * torch.exp(lse).to(out.dtype)[:, None]


def row_lse_of(q, k, block_rows: int = 4096):
    """The row log-sum-exp of ``q kᵀ`` (float64), by the fused kernel with a one-column v."""
    torch = require_torch()
    v = torch.zeros((k.shape[0], 1), dtype=q.dtype, device=q.device)
    return attention_lse(q, k, v, block_rows)[1]


#: the largest eps·γ·max(‖x'‖², ‖z'‖²) at which RBF and SNE products are fused: the rounding
#: of their logits in the data dtype. It is the relative error of RBF's scale
#: exp(ℓ − γ‖x'‖²), and of SNE's weights too, which read logit differences rounded as much as
#: the logits (one point at 1e8 among unit-normal ones gave SNE products 0.6 % off); above it
#: the blocked product (exact squared distances where they matter) is more accurate
_LOGIT_ROUNDING = 2e-6


def _exact_enough(G) -> bool:
    """Whether the fused RBF or SNE product of G keeps the blocked product's accuracy (cached
    on G)."""
    ok = getattr(G, "_fusable", None)
    if ok is None:
        torch = require_torch()

        def sq(A):
            A = A if G.c is None else A - G.c
            return float(torch.linalg.vector_norm(A, dim=1).max()) ** 2 if A.shape[0] else 0.0

        bound = G.kernel.gamma * max(sq(G.X), sq(G.Z))
        ok = G._fusable = torch.finfo(G.X.dtype).eps * bound <= _LOGIT_ROUNDING
    return ok


def applies(G, B=None) -> bool:
    """Whether :func:`product` runs for G (and B): a fused kernel, B in the data's dtype and
    on its device, a row-normalised kernel normalised over its own columns, RBF or SNE
    logits that the data dtype holds to :data:`_LOGIT_ROUNDING`."""
    k = G.kernel
    if k.name not in FUSED_KERNELS or (k.row_normalized and G.reference is not G.Z):
        return False
    if B is not None and (B.dtype != G.X.dtype or B.device != G.X.device):
        return False
    return k.name == "softmax" or _exact_enough(G)


def product(G, B, transpose: bool = False, low: bool = False):
    """G·B (or Gᵀ·B) of a :class:`~asymkern._torch.kernels.TorchKernelMatrix` by the fused
    kernels, or None when they do not apply (:func:`applies`).

    The row normalisers of a row-normalised G (needed by Gᵀ·B) are those G already holds
    (``log_norm``, converted to the logits' scale) or are computed once by the fused kernel
    (in full precision) and kept on G. ``low``: float16/bfloat16 operands (:func:`lowered`).

    Raises
    ------
    ValueError
        A row-normalised G over a reference set without rows.
    OverflowError
        A row-normalised G with a row normaliser that is not finite (checked on G's first
        product of each precision, as numpy's ``KernelMatrix._check_lse``).
    """
    if G.kernel.row_normalized:
        G._check_reference()
    if not applies(G, B):
        return None
    k, c = G.kernel, G.c
    rows = G.step(max(G.shape))  # the fallback's row blocks within working_memory
    if not transpose:
        out, lse = matmat(k.name, k.gamma, G.X, G.Z, B, c, rows, low)
        if lse is not None:
            _check_once(G, lse, low)
            if not low and getattr(G, "_fused_lse", None) is None:
                G._fused_lse = lse
        return out
    L = None
    if k.row_normalized:
        L = getattr(G, "_fused_lse", None)
        if L is None and getattr(G, "_log_norm", None) is not None:
            ln = G._log_norm  # [μ, ℓ] of log k(x, r); the logits add back γ‖x'‖² (SNE)
            L = ln[:, 0] + ln[:, 1]
            if k.name == "sne":
                Xc = (G.X - c).double()
                L = L + k.gamma * (Xc * Xc).sum(dim=1)
        if L is None:
            q, keys, _ = operands(k.name, k.gamma, G.X, G.Z, c)
            L = row_lse_of(q, keys, rows)
            _check_once(G, L, False)
            G._fused_lse = L
    return rmatmat(k.name, k.gamma, G.X, G.Z, B, c, row_lse=L, block_rows=rows, low=low)


def _check_once(G, lse, low: bool) -> None:
    """Refuse the fused row log-normalisers ``lse`` of a row-normalised G when one is not
    finite (a row of logits that all under- or overflowed would give NaN products):
    :meth:`~asymkern._torch.kernels.TorchKernelMatrix._check_lse`, once per G and precision
    (the logits do not change; the check costs a device synchronisation)."""
    done = G.__dict__.setdefault("_lse_checked", set())
    if low not in done:
        G._check_lse(lse)
        done.add(low)
