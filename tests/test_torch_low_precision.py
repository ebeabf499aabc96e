"""``precision='low'``: the passes of the randomized solvers on float16/bfloat16 operands
(asymkern._torch.fused.lowered) and the float32 Rayleigh–Ritz step that keeps the singular
values.

The products are checked against a dense float64 reference at every bandwidth and offset of
the float32 product tests: their error is the low format's rounding of B and of the result
(a few units of 2⁻¹¹ for float16, 2⁻⁸ for bfloat16), whatever γ‖x‖², because the logits keep
twice the format's digits; rounding q and k once would give errors of γ‖x‖²·2⁻¹¹, tens of
percent at γ = 20 (checked: the test fails then). KernelSVD with ``precision='low'`` is checked
against the float32 fit with the same solver and ``random_state`` (singular values within 1e-4
of σ₁, the target of the issue), and every combination that has no low-precision products
raises ``ValueError`` naming ``precision``. No test depends on timing or a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import TEST_DEVICE, to_np  # noqa: E402
from test_torch_fused import CASES, _reference, _rel  # noqa: E402

from asymkern import KernelSVD  # noqa: E402
from asymkern._torch import fused  # noqa: E402
from asymkern._torch.kernels import TorchKernel, TorchKernelMatrix  # noqa: E402
from asymkern.kernels import get_kernel  # noqa: E402
from asymkern.linalg import randomized_svd, top_svd  # noqa: E402

#: unit roundoff of the two low formats
UNIT = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}


def _low_dtype(name, gamma, X, Z, c):
    q, k, _ = fused.operands(name, gamma, X, Z, c)
    return fused.lowered(q, k, torch.ones((k.shape[0], 1), dtype=k.dtype,
                                          device=k.device))[0].dtype


@pytest.mark.parametrize("name", ["rbf", "sne", "softmax"])
@pytest.mark.parametrize("scale,offset,gamma",
                         [(1.0, o, g) for o, g in CASES] + [(1e5, 0.0, 1e-10)])
@pytest.mark.parametrize("force_fallback", [False, True])
def test_low_products_equal_the_dense_reference(monkeypatch, name, scale, offset, gamma,
                                                force_fallback):
    if force_fallback:
        monkeypatch.setattr(fused, "_fused_op", lambda q: (None, None))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((301, 5)) * scale + offset
    Z = rng.standard_normal((203, 5)) * scale + offset
    if name == "softmax":
        X, Z = X - offset, Z - offset
    Xt = torch.as_tensor(X, dtype=torch.float32, device=TEST_DEVICE)
    Zt = torch.as_tensor(Z, dtype=torch.float32, device=TEST_DEVICE)
    G = _reference(name, gamma, Xt.double().cpu().numpy(), Zt.double().cpu().numpy())
    B, Bt = rng.standard_normal((203, 4)), rng.standard_normal((301, 4))
    c = Zt.double().mean(0).float() if name != "softmax" else None
    low = _low_dtype(name, gamma, Xt, Zt, c)
    assert low == (torch.bfloat16 if scale > 1 else torch.float16)  # 1e5: beyond float16
    out, _ = fused.matmat(name, gamma, Xt, Zt, torch.as_tensor(B, dtype=torch.float32,
                                                                device=TEST_DEVICE), c, low=True)
    rout = fused.rmatmat(name, gamma, Xt, Zt, torch.as_tensor(Bt, dtype=torch.float32,
                                                               device=TEST_DEVICE), c, low=True)
    assert out.dtype == rout.dtype == torch.float32
    tol = 8 * UNIT[low]  # measured: at most 2.6 units (float16), 1.3 (bfloat16)
    assert _rel(out, G @ B) < tol
    assert _rel(rout, G.T @ Bt) < tol


def test_lowered_splits_the_logits_and_scales_v_exactly():
    rng = np.random.default_rng(3)
    q = torch.as_tensor(rng.standard_normal((40, 6)) * 300, dtype=torch.float32)
    k = torch.as_tensor(rng.standard_normal((30, 6)), dtype=torch.float32)
    v = torch.as_tensor(rng.standard_normal((30, 3)) * [1e-3, 7.0, 1e4], dtype=torch.float32)
    q3, k3, v3, s = fused.lowered(q, k, v)
    assert q3.dtype == k3.dtype == v3.dtype == torch.float16
    assert q3.shape == (40, 18) and k3.shape == (30, 18)
    exact = q.double() @ k.double().T
    split = q3.double() @ k3.double().T
    once = q.half().double() @ k.half().double().T
    assert (split - exact).abs().max() < 1e-3 * (once - exact).abs().max()
    assert torch.equal(torch.exp2(torch.log2(s).round()), s)  # powers of two: exact scaling
    top = (v / s).abs().amax(dim=0)
    assert bool(((top > 0.5) & (top <= 1.0)).all())
    assert (v3.double() * s.double() - v.double()).abs().max() <= 2.0**-11 * v.abs().max()


def _fit(kernel, solver, precision, X, Z, **kw):
    return KernelSVD(n_components=8, kernel=kernel, solver=solver, precision=precision,
                     random_state=0, **kw).fit(X, Z=Z)


@pytest.mark.parametrize("kernel,gamma", [("sne", 0.1), ("rbf", 0.1), ("softmax", 0.25)])
@pytest.mark.parametrize("solver", ["randomized", "block_krylov"])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_low_precision_ksvd_keeps_the_singular_values(monkeypatch, kernel, gamma, solver,
                                                      center, dtype):
    rng = np.random.default_rng(4)
    X = torch.as_tensor(rng.standard_normal((700, 12)) + 5.0, dtype=dtype, device=TEST_DEVICE)
    Z = torch.as_tensor(rng.standard_normal((600, 12)) + 5.0, dtype=dtype, device=TEST_DEVICE)
    params = {"kernel_params": {"gamma": gamma}, "center": center}
    calls = []
    real = fused.lowered
    monkeypatch.setattr(fused, "lowered", lambda *a: calls.append(1) or real(*a))
    high = _fit(kernel, solver, "high", X, Z, **params)
    assert not calls
    low = _fit(kernel, solver, "low", X, Z, **params)
    assert calls  # the passes ran on the low-precision products
    s_high, s_low = to_np(high.singular_values_), to_np(low.singular_values_)
    assert low.singular_values_.dtype == dtype
    assert np.abs(s_low - s_high).max() < 1e-4 * s_high[0]
    # the components span the same space (a Ritz vector's angle is first order in the error)
    U_high, U_low = (to_np(m.left_singular_vectors_).astype(np.float64)
                      for m in (high, low))
    top = int(np.sum(s_high > 0.2 * s_high[0]))
    cos = np.linalg.svd(U_high[:, :top].T @ U_low[:, :top], compute_uv=False)
    assert cos.min() > 0.999


def test_low_precision_keeps_the_last_product_in_full_precision(monkeypatch):
    rng = np.random.default_rng(5)
    X = torch.as_tensor(rng.standard_normal((300, 4)), dtype=torch.float32, device=TEST_DEVICE)
    G = TorchKernelMatrix(TorchKernel(get_kernel("sne", gamma=0.5), 4), X, X)
    calls = []
    real = TorchKernelMatrix.matmat
    monkeypatch.setattr(TorchKernelMatrix, "matmat",
                        lambda self, B, cols=None: calls.append(1) or real(self, B, cols))
    res = randomized_svd(G, 3, n_iter=5, random_state=0, precision="low")
    assert len(calls) == 1  # Y = G W, the Rayleigh–Ritz step; the 6 passes ran lowered
    calls.clear()
    randomized_svd(G, 3, n_iter=5, random_state=0)
    assert len(calls) == 7
    assert res.info["precision"] == "low"
    assert top_svd(G, 3, solver="block_krylov", random_state=0,
                   precision="low").info["precision"] == "low"
    assert randomized_svd(G, 3, random_state=0).info["precision"] == "high"


@pytest.mark.parametrize("case", ["numpy", "laplacian", "reference", "float16-name"])
def test_low_precision_without_low_products_is_refused(case):
    rng = np.random.default_rng(6)
    X = rng.standard_normal((60, 3)).astype(np.float32)
    Xt = torch.as_tensor(X, device=TEST_DEVICE)
    if case == "numpy":
        G, match = X, "precision='low'.*ndarray"
    elif case == "laplacian":
        G = TorchKernelMatrix(TorchKernel(get_kernel("laplacian"), 3), Xt, Xt)
        match = "precision='low'.*TorchKernelMatrix"
    elif case == "reference":  # normalised over another set: the fused products do not apply
        G = TorchKernelMatrix(TorchKernel(get_kernel("sne"), 3), Xt, Xt[:20], reference=Xt)
        match = "precision='low'"
    else:
        G, match = X, "precision must be one of"
    with pytest.raises(ValueError, match=match):
        randomized_svd(G, 2, random_state=0,
                       precision="float16" if case == "float16-name" else "low")


def test_low_precision_ksvd_parameter_checks():
    X = np.random.default_rng(7).standard_normal((50, 3)).astype(np.float32)
    with pytest.raises(ValueError, match="precision='low' applies to .*solver='auto'"):
        KernelSVD(n_components=2, precision="low").fit(X)
    with pytest.raises(ValueError, match="precision must be one of"):
        KernelSVD(n_components=2, solver="randomized", precision="half").fit(X)
    with pytest.raises(ValueError, match="precision='low'"):  # numpy path: no low products
        KernelSVD(n_components=2, solver="randomized", precision="low").fit(X)
    with pytest.raises(ValueError, match="precision='low'"):  # torch, unfused kernel
        KernelSVD(n_components=2, solver="randomized", precision="low", kernel="laplacian",
                  device=TEST_DEVICE).fit(X)


def test_low_precision_refused_on_dask():
    da = pytest.importorskip("dask.array")
    from asymkern._dask.kernel import DaskKernelMatrix

    X = da.from_array(np.random.default_rng(8).standard_normal((60, 3)), chunks=(20, 3))
    G = DaskKernelMatrix(get_kernel("sne"), X, X)
    with pytest.raises(ValueError, match="precision='low'"):
        top_svd(G, 2, solver="randomized", random_state=0, precision="low")


def test_a_refused_fused_kernel_falls_back_to_row_blocks(monkeypatch):
    rng = np.random.default_rng(9)
    X = torch.as_tensor(rng.standard_normal((200, 4)), dtype=torch.float32, device=TEST_DEVICE)
    B = torch.as_tensor(rng.standard_normal((200, 3)), dtype=torch.float32, device=TEST_DEVICE)
    c = X.double().mean(0).float()
    want, _ = fused.matmat("sne", 0.5, X, X, B, c, low=True)
    real = fused._fused_op

    def refusing(q):
        op, kind = real(q)
        if q.dtype not in (torch.float16, torch.bfloat16) or op is None:
            return op, kind

        def refuse(*args, **kwargs):
            raise RuntimeError("No available kernel for this head size")
        return refuse, kind

    monkeypatch.setattr(fused, "_fused_op", refusing)
    with pytest.warns(RuntimeWarning, match="refused the float16 operands.*row blocks"):
        got, _ = fused.matmat("sne", 0.5, X, X, B, c, low=True)
    assert _rel(got, want.double().cpu().numpy()) < 8 * UNIT[torch.float16]
