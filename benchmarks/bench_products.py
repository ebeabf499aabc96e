"""Kernel products on torch: our lazy products and blocks against the peers, as ratios.

One script, interleaved repeats, medians; the RATIOS are the result (absolute times depend on
the machine and its load). Rows are printed as they finish.

1. The device GEMM rate (TFLOP/s of a bare ``X @ Zᵀ``), for reference.
2. Kernel blocks ``TorchKernelMatrix(rbf|sne).to_dense()`` against one write of the block
   (``torch.empty(n, n).fill_``: the floor, with its rate in GB/s), the bare ``X @ Zᵀ``, the
   naive torch expression (``exp(-γ·cdist²)`` or ``softmax``) and GPyTorch's ``RBFKernel``
   when installed; the blocks of the other kernels (Laplacian, Cauchy, T, softmax,
   polynomial, linear) against their naive expressions, with
   the relative error of ours against the float64 expression, and a new row-normalised matrix
   (SNE, T, softmax: the normalisers included) formed whole (part ``kernels``).
3. Lazy products G·B (n = m, d = r = 16): ``TorchKernelMatrix.matmat`` (fused attention kernels
   for RBF, SNE and softmax, :mod:`asymkern._torch.fused`): its time, and its ratio to the naive
   torch expression over row blocks and (float32 SNE and softmax) to the stock
   ``scaled_dot_product_attention`` expression, with the relative error against a float64 run.
   ``precision='low'`` (float16/bfloat16 operands): its time against ours in float32 and
   against the stock SDPA expression in float16, with its error against float64.
4. Exact lazy KSVD of an SNE kernel matrix (``top_svd(solver='block_krylov')``, r = 10) in
   float32 against float64 at the same n (the largest singular-value difference, relative),
   and with ``precision='low'`` against float32 (time ratio and singular values).

Sizes: on CUDA those of the issue (blocks 20 000², products at 2·10⁵, KSVD at 10⁵ and 10⁶,
whose float64 twin runs only at 10⁵); on the CPU small ones (that is the torch CPU path against
the naive torch CPU expression, not a GPU figure). ``--quick`` is a smoke test.

Usage: python benchmarks/bench_products.py [--quick] [--repeats 3] [--device cuda]
       [--out docs/results/torch_products.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from asymkern._torch.kernels import TorchKernel, TorchKernelMatrix
from asymkern.kernels import get_kernel
from asymkern.linalg import top_svd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_torch import _sync, interleaved  # noqa: E402  (one timing loop)


def _matrix(torch, name: str, X, Z, gamma: float, wm: float = 256):
    return TorchKernelMatrix(TorchKernel(get_kernel(name, gamma=gamma), int(X.shape[1])), X, Z,
                             working_memory=wm)


def _naive_product(torch, name: str, X, Z, B, gamma: float, rows: int):
    out = torch.empty((X.shape[0], B.shape[1]), dtype=X.dtype, device=X.device)
    for a in range(0, X.shape[0], rows):
        Xb = X[a:a + rows]
        if name == "softmax":
            K = torch.softmax(gamma * (Xb @ Z.T), dim=1)
        elif name == "sne":
            K = torch.softmax(-gamma * torch.cdist(Xb, Z) ** 2, dim=1)
        else:
            K = torch.exp(-gamma * torch.cdist(Xb, Z) ** 2)
        out[a:a + rows] = K @ B
    return out


def _sdpa_product(torch, name: str, X, Z, B, gamma: float):
    """The stock fused attention a user would call for G·B (issue 31): softmax attention with
    q = γx, k = z, or for SNE q = [2γx, 1], k = [z, −γ‖z‖²] (no centring), head sizes padded to
    a multiple of 8; only the fused backends (the math backend would form the n×m matrix)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if name == "softmax":
        q, k = gamma * X, Z
    else:
        one = torch.ones((X.shape[0], 1), dtype=X.dtype, device=X.device)
        q = torch.cat([2 * gamma * X, one], dim=1)
        k = torch.cat([Z, -gamma * (Z * Z).sum(dim=1, keepdim=True)], dim=1)
    w = 8 * -(-max(q.shape[1], B.shape[1]) // 8)
    q, k, v = (torch.nn.functional.pad(t, (0, w - t.shape[1]))[None, None] for t in (q, k, B))
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=1.0)
    return out[0, 0, :, :B.shape[1]]


PARTS = ("blocks", "kernels", "products", "ksvd")


def run(quick: bool = False, repeats: int = 3, out: str | None = None, device=None,
        parts=PARTS) -> str:
    """Run the parts named in ``parts`` (:data:`PARTS`) and write the markdown table."""
    import torch

    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cuda = device.type == "cuda"
    if quick:
        sz = dict(block=400, prod=2000, ksvd=[2000], ksvd64=2000, repeats=1)
    elif cuda:
        sz = dict(block=20000, prod=200000, ksvd=[10**5, 10**6], ksvd64=10**5, repeats=repeats)
    else:
        sz = dict(block=4000, prod=20000, ksvd=[20000], ksvd64=20000, repeats=repeats)
    rows: list[dict] = []

    def add(what: str, ratio: float, vs: str, note: str = "") -> None:
        rows.append(dict(what=what, ratio=ratio, vs=vs, note=note))
        print(f"[{what}] {ratio:.3g} {vs} {note}", flush=True)

    g = torch.Generator(device="cpu").manual_seed(0)
    n = sz["block"]
    for dt in (torch.float32, torch.float64) if "blocks" in parts else ():
        X = torch.randn((n, 10), generator=g, dtype=dt).to(device)
        Z = torch.randn((n, 10), generator=g, dtype=dt).to(device)
        t = interleaved(torch, device, {"gemm": lambda X=X, Z=Z: X @ Z.T}, sz["repeats"])["gemm"]
        add(f"GEMM {n}² (d = 10), {str(dt)[6:]}", 2 * n * n * 10 / t / 1e12, "TFLOP/s")

        def write(n=n, dt=dt):  # the floor of any block: one write of its n² entries
            return torch.empty((n, n), dtype=dt, device=device).fill_(0.5)

        t = interleaved(torch, device, {"write": write}, sz["repeats"])["write"]
        add(f"write of a {n}² block, {str(dt)[6:]}", n * n * X.element_size() / t / 1e9,
            "GB/s (the blocks' floor)")
        for name in ("rbf", "sne"):
            G = _matrix(torch, name, X, Z, 0.1)
            fns = {"ours": G.to_dense, "gemm": lambda X=X, Z=Z: X @ Z.T, "write": write,
                   "naive": lambda X=X, Z=Z, name=name: (
                       torch.softmax(-0.1 * torch.cdist(X, Z) ** 2, 1) if name == "sne" else
                       torch.exp(-0.1 * torch.cdist(X, Z) ** 2))}
            try:
                import gpytorch  # noqa: F401

                if name == "rbf":
                    k = gpytorch.kernels.RBFKernel().to(device=device, dtype=dt)
                    k.lengthscale = float(np.sqrt(1 / (2 * 0.1)))
                    fns["gpytorch"] = lambda k=k, X=X, Z=Z: k(X, Z).to_dense()
            except ImportError:
                pass
            t = interleaved(torch, device, fns, sz["repeats"])
            for peer in [p for p in fns if p != "ours"]:
                add(f"{name} block {n}², {str(dt)[6:]}", t["ours"] / t[peer], f"x {peer}")
    naive = {  # the expression a torch user would write for each block
        "laplacian": lambda X, Z, g: torch.exp(-g * torch.cdist(X, Z, p=1.0)),
        "cauchy": lambda X, Z, g: 1 / (1 + g * torch.cdist(X, Z) ** 2),
        "t": lambda X, Z, g: (lambda K: K / K.sum(1, keepdim=True))(
            1 / (1 + g * torch.cdist(X, Z) ** 2)),
        "softmax": lambda X, Z, g: torch.softmax(g * X @ Z.T, 1),
        "polynomial": lambda X, Z, g: (g * X @ Z.T + 1.0) ** 3,
        "linear": lambda X, Z, g: X @ Z.T,
    }
    for dt in (torch.float32, torch.float64) if "kernels" in parts else ():
        X = torch.randn((n, 10), generator=g, dtype=dt).to(device)
        Z = torch.randn((n, 10), generator=g, dtype=dt).to(device)
        for name, expr in naive.items():
            gm = 0.3 if name == "softmax" else 0.1
            G = _matrix(torch, name, X, Z, gm) if name != "linear" else TorchKernelMatrix(
                TorchKernel(get_kernel("linear"), 10), X, Z, working_memory=256)
            G.prepare()  # the row normalisers of t and softmax, once
            ref = expr(X.double(), Z.double(), gm)
            err = float((G.to_dense().double() - ref).abs().max() / ref.abs().max())
            t = interleaved(torch, device, {"ours": G.to_dense,
                                            "naive": lambda X=X, Z=Z, e=expr, gm=gm: e(X, Z, gm)},
                            sz["repeats"])
            add(f"{name} block {n}², {str(dt)[6:]}", t["ours"] / t["naive"], "x naive",
                f"(rel. error vs float64 {err:.1e})")
        sne = lambda X, Z, g: torch.softmax(-g * torch.cdist(X, Z) ** 2, 1)  # noqa: E731
        for name, expr in (("sne", sne), ("t", naive["t"]), ("softmax", naive["softmax"])):
            gm = 0.3 if name == "softmax" else 0.1
            t = interleaved(torch, device, {  # a new matrix each call: the normalisers included
                "ours": lambda X=X, Z=Z, name=name, gm=gm: _matrix(torch, name, X, Z, gm,
                                                                   wm=4096).to_dense(),
                "naive": lambda X=X, Z=Z, e=expr, gm=gm: e(X, Z, gm)}, sz["repeats"])
            add(f"{name} whole matrix {n}² with its normalisers, {str(dt)[6:]}",
                t["ours"] / t["naive"], "x naive")
    n = sz["prod"]
    for name in ("sne", "rbf", "softmax") if "products" in parts else ():
        X64 = torch.randn((n, 16), generator=g, dtype=torch.float64).to(device)
        Z64 = torch.randn((n, 16), generator=g, dtype=torch.float64).to(device)
        B64 = torch.randn((n, 16), generator=g, dtype=torch.float64).to(device)
        gamma = 1 / 16 if name != "softmax" else 1 / 4
        ref = _matrix(torch, name, X64, Z64, gamma).matmat(B64)
        for dt in (torch.float32, torch.float64):
            X, Z, B = X64.to(dt), Z64.to(dt), B64.to(dt)
            G = _matrix(torch, name, X, Z, gamma)
            rows_ = max(1, int(256 * 2**20 // (n * 8 * 4)))
            fns = {"ours": lambda G=G, B=B: G.matmat(B),
                   "naive": lambda X=X, Z=Z, B=B, nm=name, gm=gamma, k=rows_:
                   _naive_product(torch, nm, X, Z, B, gm, k)}
            sdpa = None
            if name != "rbf" and dt == torch.float32:
                try:
                    sdpa = _sdpa_product(torch, name, X, Z, B, gamma)
                    fns["sdpa"] = lambda X=X, Z=Z, B=B, nm=name, gm=gamma: _sdpa_product(
                        torch, nm, X, Z, B, gm)
                except RuntimeError as e:  # no fused backend for this device / shape
                    print(f"[{name} SDPA peer unavailable: {str(e)[:120]}]", flush=True)
            low = G.lowered() if dt == torch.float32 else None
            if low is not None:  # precision='low': float16/bfloat16 operands
                fns["low"] = lambda low=low, B=B: low.matmat(B)
                if sdpa is not None:
                    fns["sdpa16"] = lambda X=X, Z=Z, B=B, nm=name, gm=gamma: _sdpa_product(
                        torch, nm, X.half(), Z.half(), B.half(), gm)
            t = interleaved(torch, device, fns, sz["repeats"])
            err = float((G.matmat(B).double() - ref).abs().max() / ref.abs().max())
            what = f"{name} G·B, n = m = {n}, d = r = 16, {str(dt)[6:]}"
            add(what, t["ours"] * 1e3, "ms (ours)", f"(rel. error vs float64 {err:.1e})")
            add(what, t["ours"] / t["naive"], "x naive torch over row blocks")
            if sdpa is not None:
                e2 = float((sdpa.double() - ref).abs().max() / ref.abs().max())
                add(what, t["ours"] / t["sdpa"], "x stock SDPA expression",
                    f"(SDPA rel. error vs float64 {e2:.1e})")
            if low is not None:
                e3 = float((low.matmat(B).double() - ref).abs().max() / ref.abs().max())
                lw = f"{name} G·B precision='low', n = m = {n}, d = r = 16"
                add(lw, t["low"] * 1e3, "ms (ours, low)", f"(rel. error vs float64 {e3:.1e})")
                add(lw, t["low"] / t["ours"], "x ours float32")
                if "sdpa16" in t:
                    e4 = float((_sdpa_product(torch, name, X.half(), Z.half(), B.half(), gamma)
                                .double() - ref).abs().max() / ref.abs().max())
                    add(lw, t["low"] / t["sdpa16"], "x stock SDPA expression in float16",
                        f"(its rel. error vs float64 {e4:.1e})")
    for n in sz["ksvd"] if "ksvd" in parts else ():
        X = torch.randn((n, 16), generator=g, dtype=torch.float32).to(device)
        Z = torch.randn((n, 16), generator=g, dtype=torch.float32).to(device) + 0.5
        G32 = _matrix(torch, "sne", X, Z, 1 / 16)
        t0 = time.perf_counter()
        res32 = top_svd(G32, 10, solver="block_krylov", random_state=0)
        _sync(torch, device)
        t32 = time.perf_counter() - t0
        note = f"{t32:.3g} s"
        if n <= sz["ksvd64"]:
            res64 = top_svd(_matrix(torch, "sne", X.double(), Z.double(), 1 / 16), 10,
                            solver="block_krylov", random_state=0)
            note += (f"; max ǀσ32 − σ64ǀ/σ1 = "
                     f"{float(np.max(np.abs(res32.s - res64.s)) / res64.s[0]):.1e}")
        add(f"exact lazy KSVD (SNE, r = 10, block Krylov) n = m = {n}, float32", t32, "s", note)
        t0 = time.perf_counter()
        low = top_svd(G32, 10, solver="block_krylov", random_state=0, precision="low")
        _sync(torch, device)
        tl = time.perf_counter() - t0
        add(f"exact lazy KSVD (SNE, r = 10, block Krylov) n = m = {n}, precision='low'",
            tl / t32, "x float32", f"{tl:.3g} s; max ǀσlow − σ32ǀ/σ1 = "
            f"{float(np.max(np.abs(low.s - res32.s)) / res32.s[0]):.1e}")
    dev_line = (f"Device: {torch.cuda.get_device_name(device)}" if cuda else
                "**No GPU was used for this run: no GPU figures are reported.** The rows are "
                "torch on CPU tensors against the naive torch CPU expression, at small sizes.")
    lines = ["# Kernel products on torch", "",
             "Generated by `python benchmarks/bench_products.py" + (" --quick" if quick else "")
             + ("" if tuple(parts) == PARTS else f" --parts {','.join(parts)}") + "`.", "",
             dev_line, "",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores (shared: only ratios "
             f"are meaningful), torch {torch.__version__}. Medians of {sz['repeats']} "
             "interleaved repeats.", "",
             "| case | value | unit / compared with | note |", "|---|---:|---|---|"]
    lines += [f"| {r['what']} | {r['ratio']:.3g} | {r['vs']} | {r['note']} |" for r in rows]
    lines += ["", "A ratio < 1 means ours is faster than the peer.", ""]
    text = "\n".join(lines)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text)
    return text


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device", default=None, help="'cpu', 'cuda' or 'cuda:N'")
    p.add_argument("--parts", default=",".join(PARTS), help="comma-separated parts to run "
                   f"(default: all of {', '.join(PARTS)})")
    p.add_argument("--out", default=None, help="markdown output (default: "
                   "docs/results/torch_products.md, none in --quick mode)")
    a = p.parse_args(argv)
    out = a.out
    if out is None and not a.quick:
        out = str(Path(__file__).resolve().parent.parent / "docs" / "results" /
                  "torch_products.md")
    parts = [v.strip() for v in a.parts.split(",") if v.strip()]
    bad = sorted(set(parts) - set(PARTS))
    if bad:
        p.error(f"--parts: unknown part(s) {bad}; expected some of {list(PARTS)}")
    print(run(quick=a.quick, repeats=a.repeats, out=out, device=a.device, parts=parts))


if __name__ == "__main__":
    sys.exit(main())
