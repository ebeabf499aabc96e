"""Fused kernel products on torch (asymkern._torch.fused) against a dense float64 reference
and against the blocked products of TorchKernelMatrix: tiny and huge bandwidths, offset data,
float32 and float64, the fused kernels and the blocked fallback."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import TEST_DEVICE, dtol  # noqa: E402

from asymkern._torch import fused  # noqa: E402
from asymkern._torch.kernels import TorchKernel, TorchKernelMatrix  # noqa: E402
from asymkern.kernels import get_kernel  # noqa: E402


def _reference(name, gamma, X, Z):
    """The n×m kernel matrix in float64, from the differences themselves."""
    if name == "softmax":
        L = gamma * X @ Z.T
    else:
        L = -gamma * ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
        if name == "rbf":
            return np.exp(L)
    L = L - L.max(axis=1, keepdims=True)
    E = np.exp(L)
    return E / E.sum(axis=1, keepdims=True)


def _rel(got, want):
    got = got.detach().cpu().numpy().astype(np.float64)
    return float(np.abs(got - want).max() / np.abs(want).max())


# (offset, gamma): moderate data, tiny bandwidth (κ ≈ 0 but for the nearest points), huge
# bandwidth (κ ≈ 1), and data far from the origin. The float32 tolerance follows the data's own
# rounding: an entry of x carries eps·|x|, so γ‖x' − z'‖² carries about 4·eps·γ·|x|·‖x' − z'‖.
CASES = [(0.0, 0.5), (0.0, 20.0), (0.0, 1e-4), (1e3, 0.5), (1e6, 1e-12)]


@pytest.mark.parametrize("name", ["rbf", "sne", "softmax"])
@pytest.mark.parametrize("offset,gamma", CASES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("force_fallback", [False, True])
def test_fused_products_equal_the_dense_reference(monkeypatch, name, offset, gamma, dtype,
                                                  force_fallback):
    if force_fallback:
        monkeypatch.setattr(fused, "_fused_op", lambda q: (None, None))
    rng = np.random.default_rng(0)
    d = 5
    X = rng.standard_normal((301, d)) + offset
    Z = rng.standard_normal((203, d)) + offset
    if name == "softmax":  # attention logits: queries and keys of moderate size
        X, Z = X - offset, Z - offset
    Xt = torch.as_tensor(X, dtype=dtype, device=TEST_DEVICE)
    Zt = torch.as_tensor(Z, dtype=dtype, device=TEST_DEVICE)
    Xr, Zr = Xt.double().cpu().numpy(), Zt.double().cpu().numpy()  # the rounded inputs
    G = _reference(name, gamma, Xr, Zr)
    B = rng.standard_normal((203, 4))
    Bt = rng.standard_normal((301, 4))
    c = Zt.double().mean(0).to(dtype) if name != "softmax" else None
    out, _ = fused.matmat(name, gamma, Xt, Zt, torch.as_tensor(B, dtype=dtype,
                                                                device=TEST_DEVICE), c)
    rout = fused.rmatmat(name, gamma, Xt, Zt, torch.as_tensor(Bt, dtype=dtype,
                                                               device=TEST_DEVICE), c)
    if dtype == torch.float64:
        tol = dtol(1e-12)
    else:
        spread = np.abs(Zr - Zr.mean(0)).max() + np.abs(Xr - Zr.mean(0)).max()
        tol = 1e-5 + 40 * float(np.finfo(np.float32).eps) * gamma * spread * \
            (np.abs(Xr).max() + np.abs(Zr - Zr.mean(0)).max())
    assert _rel(out, G @ B) < tol
    assert _rel(rout, G.T @ Bt) < tol


@pytest.mark.parametrize("name", ["rbf", "sne"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_fused_products_equal_the_blocked_products(name, dtype):
    rng = np.random.default_rng(1)
    X = torch.as_tensor(rng.standard_normal((500, 7)) + 3.0, dtype=dtype, device=TEST_DEVICE)
    Z = torch.as_tensor(rng.standard_normal((400, 7)) + 3.0, dtype=dtype, device=TEST_DEVICE)
    B = torch.as_tensor(rng.standard_normal((400, 6)), dtype=dtype, device=TEST_DEVICE)
    A = torch.as_tensor(rng.standard_normal((500, 6)), dtype=dtype, device=TEST_DEVICE)
    gamma = 0.3
    G = TorchKernelMatrix(TorchKernel(get_kernel(name, gamma=gamma), 7), X, Z,
                          working_memory=0.5)  # 13 row blocks
    tol = dtol(1e-12) if dtype == torch.float64 else 1e-5
    want = G.blocked_matmat(B, None, dtype)  # not G.matmat: that is the fused product itself
    got, lse = fused.matmat(name, gamma, X, Z, B, G.c)
    assert _rel(got, want.double().cpu().numpy()) < tol
    want_t = G.blocked_rmatmat(A, None, dtype)
    assert _rel(fused.rmatmat(name, gamma, X, Z, A, G.c, row_lse=lse),
                want_t.double().cpu().numpy()) < tol


def test_attention_lse_is_the_log_sum_exp():
    rng = np.random.default_rng(2)
    q = torch.as_tensor(rng.standard_normal((50, 3)) * 30, device=TEST_DEVICE)
    k = torch.as_tensor(rng.standard_normal((40, 3)), device=TEST_DEVICE)
    v = torch.as_tensor(rng.standard_normal((40, 11)), device=TEST_DEVICE)  # r > head size
    out, lse = fused.attention_lse(q, k, v)
    S = q.cpu().numpy() @ k.cpu().numpy().T
    want_lse = np.log(np.exp(S - S.max(1, keepdims=True)).sum(1)) + S.max(1)
    assert np.abs(lse.cpu().numpy() - want_lse).max() < dtol(1e-12) * np.abs(want_lse).max()
    P = np.exp(S - want_lse[:, None])
    assert _rel(out, P @ v.cpu().numpy()) < dtol(1e-12)


@pytest.mark.parametrize("gamma,scale", [(1e4, 1.0), (1.0, 30.0), (0.01, 300.0)])
def test_rbf_products_keep_the_blocked_accuracy_in_float32(gamma, scale):
    """RBF's fused product scales by exp(ℓ − γ‖x'‖²), whose error is the rounding of the
    logits, eps·γ‖x'‖²: where that exceeds the blocked product's error the products are
    blocked (the fused ones were 8e-3 off at γ = 1e4 where the blocks are exact)."""
    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.standard_normal((300, 3)) * scale, dtype=torch.float32,
                        device=TEST_DEVICE)
    Xr = X.double().cpu().numpy()
    ref = _reference("rbf", gamma, Xr, Xr)
    G = TorchKernelMatrix(TorchKernel(get_kernel("rbf", gamma=gamma), 3), X, X)
    V = torch.as_tensor(rng.standard_normal((300, 2)), dtype=torch.float32, device=TEST_DEVICE)
    blocked = _rel(G.blocked_matmat(V, None, torch.float32), ref @ V.double().cpu().numpy())
    for got in (G.matmat(V), G.rmatmat(V)):
        assert _rel(got, ref @ V.double().cpu().numpy()) <= 10 * blocked + 1e-6


def test_well_scaled_rbf_products_stay_fused():
    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.standard_normal((200, 16)), dtype=torch.float32, device=TEST_DEVICE)
    G = TorchKernelMatrix(TorchKernel(get_kernel("rbf", gamma=1 / 16), 16), X, X)
    assert fused.applies(G, torch.zeros((200, 2), dtype=torch.float32, device=TEST_DEVICE))


def test_blocked_product_of_float64_blocks_and_a_float32_block():
    """A float64 G times a float32 B is a float64 product (it failed in the matmul)."""
    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.standard_normal((30, 3)), dtype=torch.float64, device=TEST_DEVICE)
    G = TorchKernelMatrix(TorchKernel(get_kernel("laplacian", gamma=0.5), 3), X, X)
    B = torch.as_tensor(rng.standard_normal((30, 2)), dtype=torch.float32, device=TEST_DEVICE)
    got = G.matmat(B)
    assert got.dtype == torch.float64
    want = G.to_dense() @ B.double()
    assert _rel(got, want.cpu().numpy()) < dtol(1e-12)
