"""Benchmarks of issue 14: the learning machines on Dask (Li, Liu and Zhang, 001 + 000, 002).

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
from bench_dask_scale import (  # noqa: E402
    RESULTS,
    PeakMemory,
    _cluster,
    repeats_table,
    write_section,
)

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
    import asymkern

    asymkern.set_config(max_dense_memory=a.max_dense_memory)  # the in-memory path holds K_nm
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
        f"cores (it holds K_nm, n×m, about three times: {3 * n * m * 8 / 2**30:.1f} GiB, so "
        f"n = 10⁶ with m = 1000 (22 GiB) does not fit this 24 GB machine; the Dask path holds "
        f"one chunk's block per worker). Each timing is fit + predict of 20,000 test rows. "
        f"Load average {load:.1f} at the end ({os.cpu_count()} cores).",
        "",
        *repeats_table({"in memory": mem, "Dask LocalCluster 2×1": dsk}),
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


# ------------------------------------------------------------------------- case: askls
def _histogram_chunk(seed: int, rows: int, d: int):
    """Histograms of two classes (Dirichlet with class-dependent, asymmetric profiles)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, rows)
    base = np.linspace(0.5, 2.0, d)
    alpha = np.where(y[:, None] == 1, base, base[::-1]) + 0.3
    P = rng.gamma(alpha)
    P /= P.sum(axis=1, keepdims=True)
    return np.column_stack([P, y])


def histogram_dask(n: int, d: int, chunk: int, seed: int):
    import dask.array as da
    from dask import delayed

    parts = []
    for k, a in enumerate(range(0, n, chunk)):
        rows = min(chunk, n - a)
        parts.append(da.from_delayed(delayed(_histogram_chunk, pure=True)(
            seed * 100003 + k, rows, d), shape=(rows, d + 1), dtype=np.float64))
    A = da.concatenate(parts, axis=0)
    return A[:, :d], A[:, d].astype(np.int64)


def case_askls(a) -> list[str]:
    from asymkern.lssvm import AsKLSClassifier

    cluster, client = _cluster(2, a.memory_limit)
    n, d, r, chunk = a.n, a.d, a.m, a.chunk
    X, y = histogram_dask(n, d, chunk, 1)
    Xt, yt = (np.asarray(v) for v in client.compute(list(histogram_dask(50_000, d, 50_000, 9)),
                                                     sync=True))
    est_kw = dict(kernel="kl", kernel_params={"a": 1.0}, C=1.0, merge="sum",
                  nystrom={"n_components": r, "n_row_landmarks": 2 * r,
                           "n_col_landmarks": 2 * r}, random_state=0)
    with PeakMemory(client) as mem:
        t0 = time.perf_counter()
        est = AsKLSClassifier(**est_kw).fit(X, y)
        t_fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        acc = float(np.mean(est.predict(Xt) == yt))
        t_pred = time.perf_counter() - t0
    # the same estimator in memory on a subsample, for the accuracy it reaches there
    Xs, ys = (np.asarray(v) for v in client.compute(list(histogram_dask(20_000, d, 20_000, 1)),
                                                     sync=True))
    acc_small = float(np.mean(AsKLSClassifier(**est_kw).fit(Xs, ys).predict(Xt) == yt))
    client.close()
    cluster.close()
    load = os.getloadavg()[0]
    return [
        "## Issue 14, benchmark 2: AsK-LS with asymmetric Nyström on Dask",
        "",
        f"Synthetic asymmetric problem: {n:,} histograms over {d} bins, two classes (Dirichlet "
        f"profiles reversed between the classes), generated chunk by chunk in the tasks (row "
        f"chunks of {chunk:,}); KL-divergence kernel exp(−KL(p_x‖p_z)) (He et al., 2023, eq. 14, "
        f"asymmetric), merge='sum', Nyström rank {r} with {2 * r} landmarks a side; "
        f"LocalCluster 2 workers × 1 thread, memory_limit = {a.memory_limit} each. Load average "
        f"{load:.1f} at the end.",
        "",
        f"Fit: **{t_fit:.1f} s** ({n / t_fit:,.0f} rows/s); predict 50,000 test rows: "
        f"{t_pred:.1f} s; test accuracy **{acc:.4f}** (the same estimator fitted in memory on "
        f"20,000 rows: {acc_small:.4f}). Peak RSS per worker: {mem.summary()}.",
    ]


# ----------------------------------------------------------------------- case: koopman
def ou_trajectory(n: int, theta: float, tau: float, seed: int) -> np.ndarray:
    """Exact discretisation of dx = −θx dt + √2 dW (stationary N(0, 1)): an AR(1) filter."""
    from scipy.signal import lfilter

    rng = np.random.default_rng(seed)
    a = np.exp(-theta * tau)
    e = rng.standard_normal(n) * np.sqrt(1 - a * a)
    e[0] = rng.standard_normal()
    return lfilter([1.0], [1.0, -a], e)[:, None]


def case_koopman(a) -> list[str]:
    import dask.array as da
    from distributed import wait

    from asymkern.operators import KoopmanOperator

    theta, tau, k = 1.0, 0.1, 4
    cluster, client = _cluster(2, a.memory_limit)
    x = ou_trajectory(a.n, theta, tau, 0)
    X = client.persist(da.from_array(x, chunks=(a.chunk, 1)))
    wait(X)
    del x
    with PeakMemory(client) as mem:
        t0 = time.perf_counter()
        est = KoopmanOperator(kernel="rbf", kernel_params={"gamma": 0.5}, alpha=1e-7,
                              n_components=k, timestep=tau, n_landmarks=a.m,
                              random_state=0).fit(X)
        wall = time.perf_counter() - t0
    client.close()
    cluster.close()
    lam = np.sort(np.real(est.eigenvalues_))[::-1][:k]
    exact = np.exp(-theta * tau * np.arange(k))
    load = os.getloadavg()[0]
    return [
        "## Issue 14, benchmark 3: Koopman eigenvalues of an Ornstein–Uhlenbeck trajectory",
        "",
        f"dx = −θx dt + √2 dW, θ = {theta}, τ = {tau} (exact AR(1) discretisation), "
        f"{a.n:,} steps as a dask array (chunks of {a.chunk:,}); KoopmanOperator with "
        f"{a.m} uniform landmarks, RBF gamma = 0.5, ε = 1e-7; LocalCluster 2 workers × 1 thread. "
        f"Fit {wall:.1f} s; peak RSS per worker {mem.summary()}. Load average {load:.1f}.",
        "",
        "| k | λ_k (Dask Nyström) | exp(−kθτ) | difference |",
        "|---|---|---|---|",
        *[f"| {i} | {lam[i]:.5f} | {exact[i]:.5f} | {lam[i] - exact[i]:+.5f} |"
          for i in range(k)],
    ]


CASES = {"krr": case_krr, "krr-zarr": case_krr_zarr, "askls": case_askls,
         "koopman": case_koopman}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--case", choices=sorted(CASES), required=True)
    p.add_argument("--n", type=int, default=None)
    p.add_argument("--d", type=int, default=20)
    p.add_argument("--m", type=int, default=1000)
    p.add_argument("--chunk", type=int, default=None)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--memory-limit", default="1GB")
    p.add_argument("--max-dense-memory", type=float, default=16384,
                   help="MiB allowed to the in-memory path (krr: it forms K_nm, n×m, 3 times)")
    p.add_argument("--workdir", default="/tmp/asymkern_bench_machines")
    p.add_argument("--out", default=str(RESULTS))
    a = p.parse_args(argv)
    defaults = {"krr": (1_000_000, 50_000), "krr-zarr": (50_000_000, 50_000),
                "askls": (10_000_000, 50_000), "koopman": (10_000_000, 250_000)}[a.case]
    if a.case == "askls" and a.d == 20 and a.m == 1000:  # defaults of this case
        a.d, a.m = 10, 100
    if a.case == "koopman" and a.m == 1000:
        a.m = 300
    a.n = a.n or defaults[0]
    a.chunk = a.chunk or defaults[1]
    write_section(Path(a.out), a.case, CASES[a.case](a))


if __name__ == "__main__":
    main()
