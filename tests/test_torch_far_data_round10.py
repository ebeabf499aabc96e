"""Torch kernel layer: SNE windows anchored at the normalisers over another reference set,
batched direct recomputation, normalisers that are not finite, and row-normalised matrices
without columns (:mod:`asymkern._torch.kernels`, :mod:`asymkern._torch.fused`)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from asymkern import get_kernel

torch = pytest.importorskip("torch")

from asymkern._torch.kernels import TorchKernel, TorchKernelMatrix  # noqa: E402


def _exact_sq(X, Z) -> list[list[Fraction]]:
    """‖x_i − z_j‖² in exact arithmetic (fractions of the float64 data)."""
    Xf = [[Fraction(float(v)) for v in r] for r in np.asarray(X, dtype=np.float64)]
    Zf = [[Fraction(float(v)) for v in r] for r in np.asarray(Z, dtype=np.float64)]
    return [[sum(((a - b) ** 2 for a, b in zip(x, z)), Fraction(0)) for z in Zf] for x in Xf]


def _exact_sne(X, Z, R, gamma: float) -> np.ndarray:
    """SNE over the reference set R, up to one rounding of each exponent difference."""
    g = Fraction(float(gamma))
    out = np.zeros((np.shape(X)[0], np.shape(Z)[0]))
    for i, (dz, dr) in enumerate(zip(_exact_sq(X, Z), _exact_sq(X, R))):
        low = min(dr)
        s = math.fsum(math.exp(-float(min(g * (q - low), 10**6))) for q in dr)
        out[i] = [math.exp(-float(min(g * (q - low), 10**6))) / s for q in dz]
    return out


def _max_rel(K, E, floor: float = 1e-290) -> float:
    K = np.asarray(K, dtype=np.float64)
    assert K.shape == E.shape and not np.isnan(K).any()
    big = E > floor
    assert not np.any(np.abs(K[~big]) > 10 * floor)
    return float(np.max(np.abs(K[big] - E[big]) / E[big]))


def test_sne_far_reference_blocks_and_products(far_reference_set):
    """Blocks of any rows and columns, and the products with G and Gᵀ, of SNE over a reference
    set that lacks the columns nearest to the rows: exact to 1e-9 (the window of entries
    recomputed hangs from the normalisers over R, not from the block's row maxima)."""
    X, Z, R = far_reference_set
    E = _exact_sne(X, Z, R, 1.0)
    G = TorchKernelMatrix(TorchKernel(get_kernel("sne", gamma=1.0), 2), torch.tensor(X),
                          torch.tensor(Z), reference=torch.tensor(R))
    assert _max_rel(G.block(slice(1, 2), slice(None)).numpy(), E[1:2]) < 1e-9
    cols = np.arange(1, 9)  # without the columns of x itself: the maxima are far lower
    assert _max_rel(G.block(slice(None), cols).numpy(), E[:, cols]) < 1e-9
    B = np.abs(np.random.default_rng(0).normal(size=(Z.shape[0], 2)))
    U = np.abs(np.random.default_rng(1).normal(size=(X.shape[0], 2)))
    np.testing.assert_allclose(G.matmat(torch.tensor(B)).numpy(), E @ B, rtol=1e-9)
    # Gᵀ·B: each column's largest term is e^(−150)-scaled at most; compare where they are
    P, Pe = G.rmatmat(torch.tensor(U)).numpy(), E.T @ U
    big = Pe > 1e-290
    np.testing.assert_allclose(P[big], Pe[big], rtol=1e-9)


def test_sne_reference_containing_the_columns_is_unchanged():
    """A reference set holding the columns (a copy of Z, so the normalisers are passed down)
    changes no bit of far-cluster blocks: the window then hangs from the row maxima."""
    rng = np.random.default_rng(2)
    X = np.vstack([rng.normal(size=(40, 5)) + 1e6, rng.normal(size=(40, 5)) - 1e6])
    Xt = torch.tensor(X)
    k = TorchKernel(get_kernel("sne", gamma=0.5), 5)
    own = TorchKernelMatrix(k, Xt, Xt).block(slice(None), slice(None))
    copy = TorchKernelMatrix(k, Xt, Xt, reference=Xt.clone()).block(slice(None), slice(None))
    assert torch.equal(own, copy)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_recompute_batches_do_not_change_values(dtype):
    """Far clusters recompute half of the pairs: batches of a few pairs (a 4 KiB budget) give
    the values of one batch bit for bit."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 30))
    X[:60, 0] += 1e6
    Xt = torch.tensor(X, dtype=dtype)
    c = TorchKernel.center(Xt)
    for s, value in ((-1.0 / 30, "exp"), (-1.0 / 30, "exp_rows"), (1.0 / 30, "reciprocal")):
        one = TorchKernel.scaled_sq_dists(Xt, Xt, c, s, value, budget=2.0**40)
        few = TorchKernel.scaled_sq_dists(Xt, Xt, c, s, value, budget=4096)
        assert torch.equal(one, few), value
    G = TorchKernelMatrix(TorchKernel(get_kernel("rbf", gamma=1.0 / 30), 30), Xt, Xt)
    H = TorchKernelMatrix(TorchKernel(get_kernel("rbf", gamma=1.0 / 30), 30), Xt, Xt,
                          working_memory=0.01)
    assert torch.equal(G.block(slice(None), slice(None)), H.block(slice(None), slice(None)))


def test_t_kernel_overflowing_exponent_keeps_representable_weights():
    """T kernel, gamma 1e300: γ‖x − z‖² ≈ 1e316 overflows, log k = −727.6 does not; the
    normalised weight 2.5e-17 is kept (log k = −(log γ + log‖x − z‖²) there), as numpy's."""
    X = np.array([[1e8, 0.0]])
    Z = np.array([[0.0, 0.0], [1e8 + 0.5, 0.0]])
    G = TorchKernelMatrix(TorchKernel(get_kernel("t", gamma=1e300), 2), torch.tensor(X),
                          torch.tensor(Z))
    g = Fraction(1e300)
    k = [1 / (1 + g * q) for q in _exact_sq(X, Z)[0]]
    E = np.array([[float(v / sum(k)) for v in k]])  # [2.5e-17, 1]
    for K in (G.to_dense(), G.block(slice(None), slice(None))):
        np.testing.assert_allclose(K.numpy(), E, rtol=1e-12)


def test_sne_overflowed_row_raises_naming_kernel_and_row():
    """SNE, gamma 1e300: row 1 has every γ‖x − z‖² overflowing (log k = −inf, NaN from
    exp(−inf − (−inf)) before): an OverflowError naming the kernel and the row, on every
    route (the whole matrix, a block, the product, the normalisers)."""
    X = torch.tensor([[0.0, 0.0], [1e8, 0.0]], dtype=torch.float64)
    Z = torch.tensor([[0.0, 0.0]], dtype=torch.float64)
    k = TorchKernel(get_kernel("sne", gamma=1e300), 2)
    forms = (lambda G: G.to_dense(), lambda G: G.block(slice(None), slice(None)),
             lambda G: G.matmat(torch.ones((1, 1), dtype=torch.float64)),
             lambda G: G.rmatmat(torch.ones((2, 1), dtype=torch.float64)),
             lambda G: G.log_norm())
    for form in forms:
        with pytest.raises(OverflowError, match=r"'sne'.*row 1"):
            form(TorchKernelMatrix(k, X, Z))


def test_softmax_fused_products_of_overflowing_logits_raise():
    """Fused softmax products whose logits γ⟨x, z⟩ overflow: an OverflowError naming the
    kernel (NaN, or zeros for Gᵀ·B, before)."""
    X = torch.tensor([[1e200, 0.0], [1.0, 2.0]], dtype=torch.float64)
    Z = torch.tensor([[1e200, 1.0], [-1e200, 0.0], [0.5, 0.5]], dtype=torch.float64)
    k = TorchKernel(get_kernel("softmax", gamma=1e200), 2)
    with pytest.raises(OverflowError, match="softmax"):
        TorchKernelMatrix(k, X, Z).matmat(torch.ones((3, 1), dtype=torch.float64))
    with pytest.raises(OverflowError, match="softmax"):
        TorchKernelMatrix(k, X, Z).rmatmat(torch.ones((2, 1), dtype=torch.float64))


@pytest.mark.parametrize("name", ["sne", "t", "softmax"])
def test_row_normalised_without_reference_rows_raise_value_error(name):
    """No columns (numpy's KernelMatrix refuses such a Z): a ValueError naming Z from every
    route, or naming ``reference`` when only the reference set is empty."""
    X = torch.tensor(np.random.default_rng(0).normal(size=(4, 3)))
    E = torch.empty((0, 3), dtype=torch.float64)
    k = TorchKernel(get_kernel(name), 3)
    forms = (lambda G: G.to_dense(), lambda G: G.block(slice(None), slice(None)),
             lambda G: G.matmat(torch.ones((G.shape[1], 1), dtype=torch.float64)),
             lambda G: G.rmatmat(torch.ones((4, 1), dtype=torch.float64)),
             lambda G: G.log_norm())
    for form in forms:
        with pytest.raises(ValueError, match=r"^Z has 0 sample"):
            form(TorchKernelMatrix(k, X, E))
        with pytest.raises(ValueError, match=r"^reference has 0 sample"):
            form(TorchKernelMatrix(k, X, X[:2], reference=E))
