"""CPU kernel blocks (RBF, SNE) against the bare X·Zᵀ product, float64, BLAS on one thread.

One script, interleaved (the order rotates every repeat), medians of ``--repeats``; every
route writes into a preallocated, prefaulted n×m output, so that the operating system's
page faults on a fresh allocation do not enter the timings. Routes:

* ``gemm``: the bare product ``np.matmul(X, Z.T, out=...)`` — the unit of every ratio;
* ``floor_rbf``: the same product, then ``np.exp`` in place on 1 MiB row chunks — the least
  any RBF block costs with numpy ufuncs (no centring, no near-duplicate test);
* ``floor_sne``: the product, then per 1 MiB row chunk the row maximum, the shift, ``exp``,
  the float64 row sum and the scaling by its inverse — the same for the row-normalised SNE
  kernel;
* ``rbf``, ``sne``: ``KernelMatrix(kernel, X, Z).to_array(out=...)``, the library's blocks
  (centring, near-duplicate recomputation, overflow guards, normalisers);
* ``rbf_previous``, ``sne_previous``: the same with the small-inner-dimension fused route
  switched off (``asymkern.kernels.base._SMALL_INNER = 0``), i.e. the earlier route
  on one thread: one GEMM over the block, then the finishing pass reading it back.

The values of the library routes are checked against a direct float64 reference on a few
rows. BLAS is pinned to one thread with threadpoolctl for every route (a noisy, shared
2-core machine); the library's own pool follows that limit.

``--sweep-panels D1,D2,...`` instead times the fused route of the library's own workers
(no BLAS limit: every worker forms its panels with a one-thread GEMM) with 4 MiB, 32 MiB and
256 MiB row panels against each other, for each d: the measurement behind the panel size of
small inner dimensions. No multi-threaded BLAS call runs between the timed calls (its
spinning threads would slow whichever call comes next).

Usage: python benchmarks/bench_cpu_blocks.py [--n 5000] [--d 10] [--repeats 9]
       [--out docs/results/cpu_blocks.md] [--label after] [--sweep-panels 3,10,30,100]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved  # noqa: E402

from asymkern.kernels import KernelMatrix, get_kernel  # noqa: E402
from asymkern.kernels import base as kernel_base  # noqa: E402

CHUNK_BYTES = 1 << 20


def floor_rbf(X, Z, out, gamma):
    np.matmul(X, Z.T, out=out)  # stands in for −gamma‖x − z‖² (same GEMM shape)
    rows = max(1, CHUNK_BYTES // (out.shape[1] * out.itemsize))
    for a in range(0, out.shape[0], rows):
        C = out[a:a + rows]
        np.exp(C, out=C)


def floor_sne(X, Z, out, gamma):
    np.matmul(X, Z.T, out=out)
    rows = max(1, CHUNK_BYTES // (out.shape[1] * out.itemsize))
    for a in range(0, out.shape[0], rows):
        C = out[a:a + rows]
        mx = C.max(axis=1)
        C -= mx[:, None]
        np.exp(C, out=C)
        s = C.sum(axis=1)
        C *= (1.0 / s)[:, None]


def previous(fn):
    """``fn`` with the small-inner-dimension fused route switched off."""
    def run():
        if not hasattr(kernel_base, "_SMALL_INNER"):  # a version without that route
            return fn()
        old = kernel_base._SMALL_INNER
        kernel_base._SMALL_INNER = 0
        try:
            return fn()
        finally:
            kernel_base._SMALL_INNER = old

    return run


def reference_rows(name, X, Z, gamma, rows):
    D = ((X[rows, None, :] - Z[None, :, :]) ** 2).sum(-1)
    L = -gamma * D
    if name == "rbf":
        return np.exp(L)
    L -= L.max(axis=1, keepdims=True)
    E = np.exp(L)
    return E / E.sum(axis=1, keepdims=True)


def bench(n: int, d: int, repeats: int) -> dict:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    Z = rng.standard_normal((n, d))
    gamma = 1.0 / d
    kernels = {"rbf": get_kernel("rbf", gamma=gamma), "sne": get_kernel("sne", gamma=gamma)}
    bufs = {k: np.ones((n, n)) for k in ("gemm", "floor_rbf", "floor_sne", "rbf", "sne",
                                          "rbf_previous", "sne_previous")}
    routes = {
        "gemm": lambda: np.matmul(X, Z.T, out=bufs["gemm"]),
        "floor_rbf": lambda: floor_rbf(X, Z, bufs["floor_rbf"], gamma),
        "floor_sne": lambda: floor_sne(X, Z, bufs["floor_sne"], gamma),
        "rbf": lambda: KernelMatrix(kernels["rbf"], X, Z).to_array(out=bufs["rbf"]),
        "sne": lambda: KernelMatrix(kernels["sne"], X, Z).to_array(out=bufs["sne"]),
        "rbf_previous": previous(
            lambda: KernelMatrix(kernels["rbf"], X, Z).to_array(out=bufs["rbf_previous"])),
        "sne_previous": previous(
            lambda: KernelMatrix(kernels["sne"], X, Z).to_array(out=bufs["sne_previous"])),
    }
    for fn in routes.values():  # warm-up (thread pool, caches)
        fn()
    check = np.array([0, 1, n // 2, n - 1])
    err = max(float(np.max(np.abs(bufs[k][check] - reference_rows(k[:3], X, Z, gamma, check))
                           / reference_rows(k[:3], X, Z, gamma, check).max(axis=1,
                                                                          keepdims=True)))
              for k in ("rbf", "sne", "rbf_previous", "sne_previous"))
    med = interleaved(routes, repeats, rotate=True)
    return {"n": n, "d": d, "err": err, **med}


def sweep_panels(n: int, ds: list[int], repeats: int) -> list[str]:
    """Time of the fused route with 4 and 32 MiB panels relative to 256 MiB panels."""
    rng = np.random.default_rng(0)
    lines = ["| d | RBF 4 MiB | RBF 32 MiB | SNE 4 MiB | SNE 32 MiB |",
             "|---:|---:|---:|---:|---:|"]
    sizes = {"256M": 1 << 28, "32M": 1 << 25, "4M": 1 << 22}
    for d in ds:
        X = rng.standard_normal((n, d))
        Z = rng.standard_normal((n, d))
        buf = np.ones((n, n))
        routes = {}
        for name in ("rbf", "sne"):
            kern = get_kernel(name, gamma=1.0 / d)
            for label, size in sizes.items():
                def run(kern=kern, size=size, X=X, Z=Z, buf=buf):
                    old = (kernel_base._GEMM_PANEL_BYTES, kernel_base._SMALL_PANEL_BYTES)
                    kernel_base._GEMM_PANEL_BYTES = kernel_base._SMALL_PANEL_BYTES = size
                    try:
                        KernelMatrix(kern, X, Z).to_array(out=buf)
                    finally:
                        kernel_base._GEMM_PANEL_BYTES, kernel_base._SMALL_PANEL_BYTES = old
                routes[f"{name}_{label}"] = run
        med = interleaved(routes, repeats, rotate=True)
        rel = {k: med[k] / med[k[:3] + "_256M"] for k in med}
        lines.append(f"| {d} | {rel['rbf_4M']:.2f} | {rel['rbf_32M']:.2f} | "
                     f"{rel['sne_4M']:.2f} | {rel['sne_32M']:.2f} |")
        print(lines[-1], flush=True)
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--label", default="current")
    ap.add_argument("--out", default=None)
    ap.add_argument("--sweep-panels", default=None)
    args = ap.parse_args()
    if args.sweep_panels:
        print(f"fused route, {kernel_base.pool_threads()} workers, n = m = {args.n}, float64, "
              f"time relative to 256 MiB panels, medians of {args.repeats} interleaved repeats")
        lines = sweep_panels(args.n, [int(v) for v in args.sweep_panels.split(",")],
                             args.repeats)
        print("\n".join(lines))
        return
    with threadpool_limits(limits=1):
        r = bench(args.n, args.d, args.repeats)
    g = r["gemm"]
    row = (f"| {args.label} | {args.d} | {r['rbf_previous'] / g:.2f} | {r['rbf'] / g:.2f} | "
           f"{r['sne_previous'] / g:.2f} | {r['sne'] / g:.2f} | "
           f"{r['floor_rbf'] / g:.2f} | {r['floor_sne'] / g:.2f} | "
           f"{g / (args.n * args.n) * 1e9:.2f} | {r['err']:.1e} |")
    header = [
        "| run | d | RBF previous | RBF | SNE previous | SNE | numpy floor RBF "
        "| numpy floor SNE | GEMM ns/entry | max rel. error |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    text = "\n".join(header + [row])
    print(f"n = m = {args.n}, d = {args.d}, float64, BLAS 1 thread, medians of "
          f"{args.repeats} interleaved repeats; {platform.machine()}, {os.cpu_count()} CPUs")
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
