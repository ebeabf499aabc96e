"""Issue 16 (GPU): the torch backend against the bare device GEMM and the CPU numpy path.

One script, interleaved repeats, medians; the RATIOS are the result (absolute times depend on
the machine and its load):

Rows run in the order 5, 4, 2, 3, 1 (a time bound cuts the last ones off).

1. Kernel blocks on the device: ``TorchKernelMatrix(rbf|sne).to_dense()`` (the SNE block with
   its streaming log-sum-exp normaliser) against the bare ``X @ Zᵀ`` of the same shape and
   dtype on the same device.
2. ``KernelSVD(solver='nystrom')`` fitted on torch tensors on the device against the same fit
   on numpy arrays (CPU path), same ``random_state``; the agreement of the singular values is
   printed next to the ratio.
3. ``NystromKernelRidge`` (mode 'lla') fit + predict on the device against the CPU path.
4. ``KoopmanOperator(estimator='rrr', n_landmarks=m)`` (the Nyström estimator: n×m kernel
   blocks reduced on the device) fit + 3-step forecast, against the CPU path.
5. ``KernelCCA`` (exact: two n×n Gram matrices eigendecomposed in float64 on the device) fit +
   transform, against the CPU path.

With CUDA available the sizes are those of issue 16 (kernel blocks 20000², KernelSVD at
n = m = 10⁶ and 10⁷, KRR at 10⁶; the CPU path of the 10⁷ fit runs once), the Nyström Koopman
operator at n = 10⁶ (m = 1000) and kernel CCA at n = 4000. Without CUDA the
script says so and runs the same comparison on CPU tensors at small sizes: that measures the
overhead of the torch path on the CPU, not a GPU speed-up, and no GPU figure is reported.

``--device`` picks the device (default: CUDA when available, else the CPU); the test suite
runs the quick mode on its test device (``ASYMKERN_TEST_DEVICE``).

Usage: python benchmarks/bench_torch.py [--quick] [--repeats 3] [--device cuda]
       [--out docs/results/torch_bench.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from asymkern import KernelSVD, config_context
from asymkern.kernels import get_kernel
from asymkern.nystrom import NystromKernelRidge
from asymkern.operators import KernelCCA, KoopmanOperator


def _sync(torch, device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def interleaved(torch, device, fns: dict, repeats: int, warmup: bool = True) -> dict:
    """Median wall time of each callable, run in turn ``repeats`` times (device synchronised),
    after one untimed call of each (``warmup``: library handles, kernel loading and caches
    are not timed)."""
    times = {k: [] for k in fns}
    for fn in fns.values() if warmup else ():
        fn()
    _sync(torch, device)
    for _ in range(repeats):
        for k, fn in fns.items():
            _sync(torch, device)
            t0 = time.perf_counter()
            fn()
            _sync(torch, device)
            times[k].append(time.perf_counter() - t0)
    return {k: float(np.median(v)) for k, v in times.items()}


def kernel_blocks(torch, device, n: int, d: int, dtype, repeats: int) -> list[dict]:
    from asymkern._torch.kernels import TorchKernel, TorchKernelMatrix

    rng = np.random.RandomState(0)
    X = torch.as_tensor(rng.randn(n, d).astype(dtype), device=device)
    Z = torch.as_tensor(rng.randn(n, d).astype(dtype), device=device)
    rows = []
    wm = 4096.0 if device.type == "cuda" else 256.0
    for name in ("rbf", "sne"):
        G = TorchKernelMatrix(TorchKernel(get_kernel(name), d), X, Z, working_memory=wm)
        t = interleaved(torch, device, {"gemm": lambda: X @ Z.T,
                                        "kernel": lambda G=G: G.to_dense()}, repeats)
        rows.append({"what": f"{name} block {n}×{n}, d={d}, {np.dtype(dtype).name}",
                     "ratio": t["kernel"] / t["gemm"], "vs": "bare X @ Zᵀ on the device"})
    return rows


def ksvd(torch, device, n: int, d: int, dtype, repeats: int, cpu_repeats: int) -> dict:
    rng = np.random.RandomState(1)
    X = rng.randn(n, d).astype(dtype)
    Z = (rng.randn(n, d) + 0.3).astype(dtype)
    Xt, Zt = torch.as_tensor(X, device=device), torch.as_tensor(Z, device=device)
    s = min(1000, n // 10)
    kw = dict(n_components=10, kernel="rbf", solver="nystrom", random_state=0,
              working_memory=1024.0 if device.type == "cuda" else None,
              n_row_landmarks=s, n_col_landmarks=s)
    out = {}

    def run_torch():
        out["torch"] = KernelSVD(**kw).fit(Xt, Z=Zt)

    def run_numpy():
        out["numpy"] = KernelSVD(**kw).fit(X, Z=Z)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = interleaved(torch, device, {"torch": run_torch}, repeats)
        t.update(interleaved(torch, device, {"numpy": run_numpy}, cpu_repeats, warmup=False))
    s_t = out["torch"].singular_values_.double().cpu().numpy()
    s_n = np.asarray(out["numpy"].singular_values_, dtype=np.float64)
    agree = float(np.max(np.abs(s_t - s_n) / s_n))
    return {"what": f"KernelSVD nystrom, n = m = {n:.0e}, d={d}, r=10, {s} landmarks, "
                    f"{np.dtype(dtype).name}",
            "ratio": t["torch"] / t["numpy"], "vs": f"CPU numpy path (max rel. diff of σ "
                                                   f"{agree:.1e})"}


def krr(torch, device, n: int, d: int, dtype, repeats: int) -> dict:
    rng = np.random.RandomState(2)
    X = rng.randn(n, d).astype(dtype)
    y = np.sin(X).sum(axis=1)
    Xt, yt = torch.as_tensor(X, device=device), torch.as_tensor(y, device=device)
    m = min(1000, n // 10)
    kw = dict(mode="lla", n_landmarks=m, alpha=1e-3, random_state=0)
    out = {}

    def run_torch():
        out["torch"] = NystromKernelRidge(**kw).fit(Xt, yt).predict(Xt)

    def run_numpy():
        out["numpy"] = NystromKernelRidge(**kw).fit(X, y).predict(X)

    with config_context(max_dense_memory=65536):  # K_nm of n = 10⁶ needs ~22 GiB (float64)
        t = interleaved(torch, device, {"torch": run_torch, "numpy": run_numpy}, repeats)
    diff = float(np.linalg.norm(out["torch"].double().cpu().numpy() - out["numpy"])
                 / np.linalg.norm(out["numpy"]))
    return {"what": f"NystromKernelRidge lla fit+predict, n={n:.0e}, d={d}, m={m}, "
                    f"{np.dtype(dtype).name}",
            "ratio": t["torch"] / t["numpy"],
            "vs": f"CPU numpy path (rel. diff of predictions {diff:.1e})"}


def koopman(torch, device, n: int, m: int, repeats: int) -> dict:
    rng = np.random.RandomState(3)
    R = 0.95 * np.array([[np.cos(0.2), -np.sin(0.2), 0], [np.sin(0.2), np.cos(0.2), 0],
                         [0, 0, 0.5]])
    x = np.zeros((n, 3))
    noise = 0.3 * rng.randn(n, 3)
    for t in range(n - 1):
        x[t + 1] = R @ x[t] + noise[t]
    xt = torch.as_tensor(x, device=device)
    kw = dict(estimator="rrr", rank=10, n_components=5, n_landmarks=m, alpha=1e-6,
              kernel_params={"gamma": 0.5}, random_state=0)
    out = {}

    def run_torch():
        est = KoopmanOperator(**kw).fit(xt)
        out["torch"] = (est.eigenvalues_, est.predict(xt[:1000], n_steps=3))

    def run_numpy():
        est = KoopmanOperator(**kw).fit(x)
        out["numpy"] = (est.eigenvalues_, est.predict(x[:1000], n_steps=3))

    t = interleaved(torch, device, {"torch": run_torch, "numpy": run_numpy}, repeats)
    lam_t, lam_n = out["torch"][0], out["numpy"][0]
    diff = float(np.max(np.abs(lam_t - lam_n)) / np.max(np.abs(lam_n)))
    return {"what": f"KoopmanOperator rrr (Nyström, m={m}) fit + 3-step forecast, n={n:.0e}, "
                    "d=3, float64",
            "ratio": t["torch"] / t["numpy"],
            "vs": f"CPU numpy path (max rel. diff of λ {diff:.1e})"}


def cca(torch, device, n: int, repeats: int) -> dict:
    rng = np.random.RandomState(4)
    X = rng.randn(n, 5)
    Y = np.c_[np.sin(X[:, :2]), X[:, 2:3] ** 2] + 0.1 * rng.randn(n, 3)
    Xt, Yt = torch.as_tensor(X, device=device), torch.as_tensor(Y, device=device)
    kw = dict(n_components=3, alpha=1e-3)
    out = {}

    def run_torch():
        est = KernelCCA(**kw).fit(Xt, Yt)
        out["torch"] = est.canonical_correlations_.cpu().numpy()
        est.transform(Xt)

    def run_numpy():
        est = KernelCCA(**kw).fit(X, Y)
        out["numpy"] = est.canonical_correlations_
        est.transform(X)

    t = interleaved(torch, device, {"torch": run_torch, "numpy": run_numpy}, repeats)
    diff = float(np.max(np.abs(out["torch"] - out["numpy"])))
    return {"what": f"KernelCCA exact fit + transform, n={n}, float64",
            "ratio": t["torch"] / t["numpy"],
            "vs": f"CPU numpy path (max abs. diff of the correlations {diff:.1e})"}


def run(quick: bool = False, repeats: int = 3, out: str | None = None, device=None,
        ksvd_sizes: list[int] | None = None) -> str:
    """Run the benchmark and write the markdown table; returns the text written.

    ``device``: None (CUDA when available, else the CPU), 'cpu', 'cuda' or 'cuda:N'.
    ``ksvd_sizes``: the n of the KernelSVD rows (default: the device's sizes, above).
    """
    import torch

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={str(device)!r}: CUDA is not available (torch "
                         f"{torch.__version__})")
    cuda = device.type == "cuda"
    if quick:
        sizes = dict(block=300, ksvd=[1500], krr=1500, koopman=(2000, 50), cca=200, repeats=1,
                     cpu_repeats=1)
    elif cuda:
        sizes = dict(block=20000, ksvd=[10**6, 10**7], krr=10**6, koopman=(10**6, 1000),
                     cca=4000, repeats=repeats, cpu_repeats=1)
    else:
        sizes = dict(block=2000, ksvd=[20000], krr=20000, koopman=(50000, 300), cca=1000,
                     repeats=repeats, cpu_repeats=repeats)
    if ksvd_sizes:
        sizes["ksvd"] = list(ksvd_sizes)
    rows = []

    def add(*new):  # each row printed as it finishes (a long GPU run shows its progress)
        for r in new:
            rows.append(r)
            print(f"[{r['what']}] ratio {r['ratio']:.3g} vs {r['vs']}", flush=True)

    # the rows a GPU run has not yet measured first (a time bound cuts the last ones off:
    # docs/results/gpu_h200.md), the kernel blocks last (bench_products.py times them too)
    add(cca(torch, device, sizes["cca"], sizes["repeats"]))
    add(koopman(torch, device, *sizes["koopman"], sizes["repeats"]))
    for n in sizes["ksvd"]:
        add(ksvd(torch, device, n, 10, np.float32, sizes["repeats"],
                 sizes["cpu_repeats"] if n < 10**7 else 1))
    add(krr(torch, device, sizes["krr"], 10, np.float32, sizes["repeats"]))
    for dtype in (np.float32, np.float64):
        add(*kernel_blocks(torch, device, sizes["block"], 10, dtype, sizes["repeats"]))
    why = ("A GPU was available but the CPU was asked for" if torch.cuda.is_available() else
           "No GPU was available for this run")
    dev_line = (f"CUDA device: {torch.cuda.get_device_name(device)}" if cuda else
                f"**{why}: no GPU figures are reported.** The rows "
                "below compare the torch path on CPU tensors with the numpy path on the same "
                "CPU (the overhead of the torch backend, not a GPU speed-up), at small sizes.")
    lines = [
        "# Torch backend benchmark",
        "",
        "Generated by `python benchmarks/bench_torch.py" + (" --quick" if quick else "") + "`.",
        "",
        dev_line,
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores (shared with other jobs: "
        f"only the ratios are meaningful), Python {platform.python_version()}, "
        f"torch {torch.__version__}, numpy {np.__version__}. Medians of "
        f"{sizes['repeats']} interleaved repeats.",
        "",
        "| case | time ratio | compared with |",
        "|---|---:|---|",
    ]
    for r in rows:
        lines.append(f"| {r['what']} | {r['ratio']:.3g} | {r['vs']} |")
    lines += ["", "A ratio < 1 means the torch path is faster than what it is compared with.", ""]
    text = "\n".join(lines)
    print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text)
    return text


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--ksvd-sizes", default=None, help="comma-separated n of the KernelSVD rows "
                   "(default: 10⁶,10⁷ on CUDA)")
    p.add_argument("--device", default=None, help="'cpu', 'cuda' or 'cuda:N' (default: CUDA "
                   "when available, else the CPU)")
    p.add_argument("--out", default=None, help="markdown output (default: "
                   "docs/results/torch_bench.md, none in --quick mode)")
    a = p.parse_args(argv)
    out = a.out
    if out is None and not a.quick:
        out = str(Path(__file__).resolve().parent.parent / "docs" / "results" / "torch_bench.md")
    sizes = [int(float(v)) for v in a.ksvd_sizes.split(",")] if a.ksvd_sizes else None
    run(quick=a.quick, repeats=a.repeats, out=out, device=a.device, ksvd_sizes=sizes)


if __name__ == "__main__":
    sys.exit(main())
