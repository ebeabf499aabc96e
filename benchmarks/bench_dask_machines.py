"""Benchmarks of issue 14: the learning machines on Dask (paper 004, 001 + 000, 002).

* ``--case krr`` (benchmark 1): ``NystromKernelRidge(mode='lla')``, RBF, d = 20, m = 1000
  landmarks, n rows. The in-memory fit + predict and the Dask fit + predict on a
  ``LocalCluster`` (2 workers × 1 thread, processes, 127.0.0.1) on the same 2 cores are timed
  interleaved; medians of the repeats and the ratio; the predictions of the two paths on the
  same data are compared (max relative difference).
* ``--case krr-zarr`` (benchmark 1, out of core): n rows (default 5·10⁷) written to Zarr by the
  cluster, worker memory limited (default 2 × 1 GB), fit from Zarr, predict a held-out set of
  10⁵ rows; wall time, test RMSE against the noise level, peak RSS per worker.
* ``--case askls`` (benchmark 2): ``AsKLSClassifier`` with its Nyström option on a synthetic
  asymmetric problem (histograms, KL-divergence kernel) of n rows on Dask.
* ``--case koopman`` (benchmark 3): ``KoopmanOperator`` with landmarks on an Ornstein–Uhlenbeck
  trajectory of n steps held as a dask array; leading eigenvalues against the analytic
  exp(−kθτ).

The data for the Dask paths are generated inside the cluster (chunk by chunk, from seeds), so
the same rows exist on both paths when the in-memory path is compared. Each case writes its
section into ``docs/results/dask_bench.md`` (``--out`` to change). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dask_scale import RESULTS, PeakMemory, _cluster, write_section  # noqa: E402

W_SEED = 12345


def _regression_chunk(seed: int, rows: int, d: int, noise: float):
    """Rows of the synthetic regression problem: y = sin(x·w) + 0.5 x·w' + noise."""
    w = np.random.default_rng(W_SEED).standard_normal((2, d)) / np.sqrt(d)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, d))
    y = np.sin(X @ w[0]) + 0.5 * (X @ w[1]) + noise * rng.standard_normal(rows)
    return np.column_stack([X, y])


def regression_dask(n: int, d: int, chunk: int, seed: int, noise: float = 0.1):
    """(X, y) as dask arrays whose chunks are generated in their tasks (float64)."""
    import dask.array as da
    from dask import delayed

    parts = []
    for k, a in enumerate(range(0, n, chunk)):
        rows = min(chunk, n - a)
        parts.append(da.from_delayed(delayed(_regression_chunk, pure=True)(
            seed * 100003 + k, rows, d, noise), shape=(rows, d + 1), dtype=np.float64))
    A = da.concatenate(parts, axis=0)
    return A[:, :d], A[:, d]


def _krr(m: int, d: int):
    from asymkern.nystrom import NystromKernelRidge

    return NystromKernelRidge(mode="lla", n_landmarks=m, alpha=1.0, kernel="rbf",
                              kernel_params={"gamma": 1.0 / (2 * d)}, random_state=0)


def case_krr(a) -> list[str]:
    from distributed import wait

    cluster, client = _cluster(2)
    n, d, m, chunk = a.n, a.d, a.m, a.chunk
    Xd, yd = regression_dask(n, d, chunk, 1)
    Xd, yd = client.persist([Xd, yd])
    wait([Xd, yd])
    Xn, yn = client.compute([Xd, yd], sync=True)  # the same rows for the in-memory path
    Xt, yt = (np.asarray(v) for v in client.compute(list(regression_dask(20_000, d, 20_000, 9)),
                                                     sync=True))
    _krr(100, d).fit(Xd[:20_000], yd[:20_000])  # warm-up (imports in the workers)
    mem, dsk, diffs = [], [], []
    for k in range(a.repeats):
        t0 = time.perf_counter()
        p_mem = _krr(m, d).fit(Xn, yn).predict(Xt)
        mem.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        est = _krr(m, d).fit(Xd, yd)
        p_dsk = est.predict(Xt)
        dsk.append(time.perf_counter() - t0)
        diffs.append(float(np.abs(p_dsk - p_mem).max() / np.abs(p_mem).max()))
        print(f"repeat {k}: in-memory {mem[-1]:.2f} s, dask {dsk[-1]:.2f} s, "
              f"rel diff {diffs[-1]:.1e}", flush=True)
    rmse = float(np.sqrt(np.mean((p_mem - yt) ** 2)))
    client.close()
    cluster.close()
    m_mem, m_dsk = float(np.median(mem)), float(np.median(dsk))
    load = os.getloadavg()[0]
    return [
        "## Issue 14, benchmark 1: Nyström KRR (LLA), Dask vs in memory",
        "",
        f"RBF (gamma = 1/(2d)), n = {n:,}, d = {d}, m = {m} uniform landmarks, alpha = 1, "
        f"float64; Dask: LocalCluster 2 workers × 1 thread, row chunks of {chunk:,}, data "
        f"persisted in the cluster; in memory: the same rows on the client, BLAS on the same 2 "
        f"cores. Each timing is fit + predict of 20,000 test rows. Load average {load:.1f} at "
        f"the end ({os.cpu_count()} cores).",
        "",
        "| path | repeats (s) | median (s) |",
        "|---|---|---|",
        f"| in memory | {', '.join(f'{t:.2f}' for t in mem)} | {m_mem:.2f} |",
        f"| Dask LocalCluster 2×1 | {', '.join(f'{t:.2f}' for t in dsk)} | {m_dsk:.2f} |",
        "",
        f"**Ratio Dask / in-memory: {m_dsk / m_mem:.2f}×** (target ≤ 1.3×). Predictions of the "
        f"two paths: max relative difference {max(diffs):.1e} (target 1e-10). Test RMSE "
        f"{rmse:.4f} (noise level 0.1, standard deviation of y {np.std(yt):.3f}).",
    ]


def case_krr_zarr(a) -> list[str]:
    import dask.array as da
    from distributed import wait

    work = Path(a.workdir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    cluster, client = _cluster(2, a.memory_limit, str(work / "spill"))
    n, d, m, chunk = a.n, a.d, a.m, a.chunk
    t = {}
    with PeakMemory(client) as mem:
        t0 = time.perf_counter()
        X, y = regression_dask(n, d, chunk, 1)
        da.to_zarr(X.astype(np.float64), str(work / "X.zarr"), compressors=None)
        da.to_zarr(y, str(work / "y.zarr"), compressors=None)
        t["write data"] = time.perf_counter() - t0
        X = da.from_zarr(str(work / "X.zarr"))
        y = da.from_zarr(str(work / "y.zarr"))
        Xt, yt = regression_dask(100_000, d, 25_000, 9)
        t0 = time.perf_counter()
        est = _krr(m, d).fit(X, y)
        t["fit from Zarr"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        pred = est.predict(Xt)
        pred, yt = client.compute([pred, yt], sync=True)
        t["predict 10⁵ rows (dask)"] = time.perf_counter() - t0
        wait([])
    rmse = float(np.sqrt(np.mean((np.asarray(pred) - np.asarray(yt)) ** 2)))
    client.close()
    cluster.close()
    shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()[0]
    gb = n * (d + 1) * 8 / 1e9
    return [
        "## Issue 14, benchmark 1b: Nyström KRR out of core (Zarr)",
        "",
        f"n = {n:,} rows, d = {d} (X and y {gb:.1f} GB on disk, float64, Zarr, row chunks of "
        f"{chunk:,}); LocalCluster 2 workers × 1 thread, memory_limit = {a.memory_limit} each; "
        f"LLA, RBF, m = {m}. Load average {load:.1f} at the end.",
        "",
        "| step | wall (s) |",
        "|---|---|",
        *[f"| {k} | {v:.1f} |" for k, v in t.items()],
        "",
        f"Test RMSE on 10⁵ held-out rows: **{rmse:.4f}** (noise level 0.1, standard "
        f"deviation of y {np.std(yt):.3f}). Peak RSS per "
        f"worker: {mem.summary()}. Fit throughput {n / t['fit from Zarr']:,.0f} rows/s.",
    ]


CASES = {"krr": case_krr, "krr-zarr": case_krr_zarr}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--case", choices=sorted(CASES), required=True)
    p.add_argument("--n", type=int, default=None)
    p.add_argument("--d", type=int, default=20)
    p.add_argument("--m", type=int, default=1000)
    p.add_argument("--chunk", type=int, default=None)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--memory-limit", default="1GB")
    p.add_argument("--workdir", default="/tmp/asymkern_bench_machines")
    p.add_argument("--out", default=str(RESULTS))
    a = p.parse_args(argv)
    defaults = {"krr": (1_000_000, 50_000), "krr-zarr": (50_000_000, 50_000),
                "askls": (10_000_000, 50_000), "koopman": (10_000_000, 100_000)}[a.case]
    a.n = a.n or defaults[0]
    a.chunk = a.chunk or defaults[1]
    write_section(Path(a.out), a.case, CASES[a.case](a))


if __name__ == "__main__":
    main()
