"""Issue 16 gap 1: row-normalised (SNE) kernel blocks vs the bare product and scikit-learn.

One script, interleaved: each repeat runs (in rotating order) the bare X Zᵀ product (numpy
matmul, allocating its output), our ``KernelMatrix(SNE, X, Z).to_array()`` and the scikit-learn
route ``rbf_kernel`` followed by an in-place row division. Medians of the repeats; the ratios
are the result (absolute times depend on the machine's load). Peak traced memory
(tracemalloc) of our route is reported relative to the output's size.

Targets: ≤ 1.3× the bare product, ≤ 0.5× the scikit-learn route, peak ≤ output + 5 %.

Usage: python benchmarks/bench_rownorm.py [--n 20000] [--d 100] [--repeats 5]
       [--out docs/results/rownorm_bench.md] [--quick] [--ablation]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics.pairwise import rbf_kernel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved, peak_traced  # noqa: E402

from asymkern.kernels import KernelMatrix, get_kernel
from asymkern.kernels.base import _blas_threads


def sklearn_route(X, Z, gamma):
    K = rbf_kernel(X, Z, gamma=gamma)
    K /= K.sum(axis=1, keepdims=True)
    return K




def bench(n: int, d: int, dtype, repeats: int, gamma: float) -> dict:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d)).astype(dtype)
    Z = rng.standard_normal((n, d)).astype(dtype)
    kern = get_kernel("sne", gamma=gamma)
    # preallocated, prefaulted outputs: the "into" routes time the computation alone, free of
    # the operating system's page faults on a fresh n×n allocation (which on this virtual
    # machine vary between 0.1 and 3 s for 3.2 GB, from one allocation to the next)
    bufs = {"product": np.ones((n, n), dtype=dtype), "ours": np.ones((n, n), dtype=dtype)}
    routes = {
        "product": lambda: X @ Z.T,
        "ours": lambda: KernelMatrix(kern, X, Z).to_array(),
        "sklearn": lambda: sklearn_route(X, Z, gamma),
        "product_into": lambda: np.matmul(X, Z.T, out=bufs["product"]),
        "ours_into": lambda: KernelMatrix(kern, X, Z).to_array(out=bufs["ours"]),
    }
    # correctness on a slice (cheap), so the timed routes compute the same thing
    ref = sklearn_route(X[:200], Z, gamma)
    got = KernelMatrix(kern, X, Z).block(slice(0, 200))
    err = float(np.max(np.abs(got.astype(np.float64) - ref) / ref.max(axis=1, keepdims=True)))
    names = list(routes)
    times: dict[str, list[float]] = {k: [] for k in names}
    routes["ours"]()  # warm-up (thread pool, page cache)
    for r in range(repeats):
        shift = r % len(names)
        for k in names[shift:] + names[:shift]:
            t0 = time.perf_counter()
            out = routes[k]()
            times[k].append(time.perf_counter() - t0)
            del out
    # the "into" routes really wrote the same matrix
    full_err = float(np.max(np.abs(bufs["ours"][:200].astype(np.float64) - ref)
                            / ref.max(axis=1, keepdims=True)))
    err = max(err, full_err)
    bufs.clear()
    med = {k: float(np.median(v)) for k, v in times.items()}
    out_bytes = n * n * np.dtype(dtype).itemsize
    peak = peak_traced(routes["ours"])
    peak_sk = peak_traced(routes["sklearn"])
    return {"n": n, "d": d, "dtype": np.dtype(dtype).name, "med": med, "times": times,
            "peak_ratio": peak / out_bytes, "peak_sk_ratio": peak_sk / out_bytes,
            "max_rel_err_vs_sklearn": err}


def ablation(n: int, d: int, dtype, repeats: int, gamma: float) -> dict:
    """The fused route against one GEMM followed by the finishing pass, in the same code.

    Only ``kernels.base._FUSE_MIN_ENTRIES`` is toggled; every route writes into a prefaulted
    array, so the medians compare the computation alone. Returns the ratios to the bare
    product (also written into a prefaulted array).
    """
    from asymkern.kernels import base as kernel_base

    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d)).astype(dtype)
    Z = rng.standard_normal((n, d)).astype(dtype)
    buf = np.ones((n, n), dtype=dtype)
    default = kernel_base._FUSE_MIN_ENTRIES
    routes = {"product": lambda: np.matmul(X, Z.T, out=buf)}
    for name in ("sne", "rbf"):
        kern = get_kernel(name, gamma=gamma)

        def run(kern=kern, fuse=True):
            kernel_base._FUSE_MIN_ENTRIES = default if fuse else 1 << 62
            try:
                KernelMatrix(kern, X, Z).to_array(out=buf)
            finally:
                kernel_base._FUSE_MIN_ENTRIES = default

        routes[f"{name} fused"] = run
        routes[f"{name} one GEMM"] = lambda run=run: run(fuse=False)
    med = interleaved(routes, repeats, rotate=True)
    return {k: v / med["product"] for k, v in med.items() if k != "product"}


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--gamma", type=float, default=0.01)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--quick", action="store_true",
                    help="n = 1500, one repeat, nothing written (the test suite runs this)")
    ap.add_argument("--ablation", action="store_true",
                    help="also time the fused route against one GEMM + the finishing pass")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.repeats, args.out = 1500, 1, None
    load = os.getloadavg()
    rows = []
    for dtype in (np.float64, np.float32):
        res = bench(args.n, args.d, dtype, args.repeats, args.gamma)
        med = res["med"]
        res["vs_product"] = med["ours"] / med["product"]
        res["vs_sklearn"] = med["ours"] / med["sklearn"]
        res["into_vs_product"] = med["ours_into"] / med["product_into"]
        rows.append(res)
        print(f"{res['dtype']}: product {med['product']:.3f}s  ours {med['ours']:.3f}s  "
              f"sklearn {med['sklearn']:.3f}s  | ours/product {res['vs_product']:.2f} "
              f"(into preallocated: {res['into_vs_product']:.2f})  "
              f"ours/sklearn {res['vs_sklearn']:.2f}  | peak/output ours "
              f"{res['peak_ratio']:.3f} sklearn {res['peak_sk_ratio']:.3f}  | max rel err "
              f"{res['max_rel_err_vs_sklearn']:.1e}", flush=True)
    ablations = {}
    if args.ablation:
        for dtype in (np.float64, np.float32):
            ab = ablation(args.n, args.d, dtype, args.repeats, args.gamma)
            ablations[np.dtype(dtype).name] = ab
            print(f"ablation {np.dtype(dtype).name}: " + "  ".join(
                f"{k} {v:.2f}" for k, v in ab.items()), flush=True)
    load_after = os.getloadavg()
    if args.out is not None:
        lines = [
            f"## Row-normalised SNE block, {args.n} × {args.n}, d = {args.d} "
            f"(`benchmarks/bench_rownorm.py`)",
            "",
            f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared with another "
            f"developer's jobs), numpy {np.__version__}; load average before "
            f"{load[0]:.2f}, after {load_after[0]:.2f}; BLAS threads "
            f"{_blas_threads()}. Medians of {args.repeats} interleaved "
            "repeats; the ratios are the result, absolute times vary with the load. "
            "\"Into\": both routes write into preallocated, prefaulted arrays "
            "(`np.matmul(..., out=)`, `to_array(out=)`), which times the computation alone; "
            "the other columns allocate their output, as a user's call does.",
            "",
            "| dtype | ours / bare X·Zᵀ, into (target ≤ 1.3) | same, allocating | ours / "
            "sklearn rbf_kernel + row division (target ≤ 0.5) | peak traced / output, ours "
            "(target ≤ 1.05) | same for sklearn | max rel. diff vs sklearn (200 rows) |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            lines.append(f"| {r['dtype']} | {r['into_vs_product']:.2f} | {r['vs_product']:.2f} | "
                         f"{r['vs_sklearn']:.2f} | "
                         f"{r['peak_ratio']:.3f} | {r['peak_sk_ratio']:.3f} | "
                         f"{r['max_rel_err_vs_sklearn']:.1e} |")
        lines.append("")
        lines.append("Raw medians (s): " + "; ".join(
            f"{r['dtype']}: product {r['med']['product']:.3f}, ours {r['med']['ours']:.3f}, "
            f"sklearn {r['med']['sklearn']:.3f}, product into {r['med']['product_into']:.3f}, "
            f"ours into {r['med']['ours_into']:.3f}" for r in rows))
        lines.append("")
        if ablations:
            lines += ["Fused route against one GEMM + the finishing pass (`--ablation`; "
                      "ratios to the bare product, all written into prefaulted arrays):", "",
                      "| dtype | " + " | ".join(next(iter(ablations.values()))) + " |",
                      "|---|" + "---|" * len(next(iter(ablations.values())))]
            for name, ab in ablations.items():
                lines.append(f"| {name} | " + " | ".join(f"{v:.2f}" for v in ab.values())
                             + " |")
            lines.append("")
        text = "\n".join(lines) + "\n"
        mode = "a" if args.out.exists() else "w"
        with open(args.out, mode) as f:
            if mode == "w":
                f.write("# Row-normalised kernel blocks\n\n")
            f.write(text)
        print(f"wrote {args.out}")
    return rows


if __name__ == "__main__":
    main()
