"""Benchmark: asymmetric Nyström KSVD on Dask (LocalCluster, 2 workers × 1 thread) vs in memory.

Issue 13, benchmark 1 (overhead): RBF kernel, N = M, d = 32, s landmarks per side, r = 20,
float32. The in-memory path (lazy KernelMatrix, BLAS on the same 2 cores) and the Dask path
(``DaskKernelMatrix`` over row chunks, ``distributed.LocalCluster(n_workers=2,
threads_per_worker=1, processes=True)``, workers' BLAS at 1 thread) are timed interleaved;
each Dask timing covers the whole fit including the persisted Ũ, Ṽ (``distributed.wait``). The
data are generated inside the cluster (not timed) and, for the in-memory run, on the client.
Medians of the repeats, ratio Dask / in-memory.

Run: ``python benchmarks/bench_dask.py [--n 200000] [--s 500] [--repeats 3] [--chunk 50000]``;
writes its section of ``docs/results/dask_bench.md`` (``--out`` to change). Not part of the
test suite.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dask_scale import repeats_table, write_section  # noqa: E402


def _in_memory(n: int, d: int, s: int, r: int, seed: int) -> tuple[float, np.ndarray]:
    from asymkern.kernels import KernelMatrix, get_kernel
    from asymkern.linalg.nystrom import asymmetric_nystrom

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d), dtype=np.float32)
    Z = rng.standard_normal((n, d), dtype=np.float32) * np.float32(1.1) + np.float32(0.1)
    G = KernelMatrix(get_kernel("rbf", gamma=1.0 / (2 * d)), X, Z, working_memory=64)
    t0 = time.perf_counter()
    res = asymmetric_nystrom(G, r, s, s, random_state=0)
    return time.perf_counter() - t0, res.s


def _dask(client, n: int, d: int, s: int, r: int, chunk: int, seed: int):
    import dask.array as da
    from distributed import wait

    from asymkern.kernels import KernelMatrix, get_kernel
    from asymkern.linalg.nystrom import asymmetric_nystrom

    rs = da.random.RandomState(seed)
    X = rs.standard_normal((n, d), chunks=(chunk, d)).astype(np.float32)
    Z = (rs.standard_normal((n, d), chunks=(chunk, d)) * 1.1 + 0.1).astype(np.float32)
    X, Z = client.persist([X, Z])
    wait([X, Z])
    G = KernelMatrix(get_kernel("rbf", gamma=1.0 / (2 * d)), X, Z)
    t0 = time.perf_counter()
    res = asymmetric_nystrom(G, r, s, s, random_state=0)
    wait([res.U, res.V])
    wall = time.perf_counter() - t0
    ok = bool(da.isfinite(res.U).all().compute() and da.isfinite(res.V).all().compute())
    return wall, res.s, ok


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=int, default=200_000)
    p.add_argument("--d", type=int, default=32)
    p.add_argument("--s", type=int, default=500)
    p.add_argument("--r", type=int, default=20)
    p.add_argument("--chunk", type=int, default=50_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "results"
                                        / "dask_bench.md"))
    a = p.parse_args(argv)

    # workers (spawned below) inherit one BLAS thread each; this process already loaded numpy
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    from distributed import Client, LocalCluster

    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None)
    client = Client(cluster)
    start_s = time.perf_counter() - t0
    _dask(client, min(a.n, 20_000), a.d, min(a.s, 100), a.r, a.chunk, 1)  # warm-up (imports)
    mem, dsk = [], []
    s_mem = s_dsk = None
    ok_all = True
    for k in range(a.repeats):
        t, s_mem = _in_memory(a.n, a.d, a.s, a.r, k)
        mem.append(t)
        t, s_dsk, ok = _dask(client, a.n, a.d, a.s, a.r, a.chunk, k)
        dsk.append(t)
        ok_all &= ok
        print(f"repeat {k}: in-memory {mem[-1]:.2f} s, dask {dsk[-1]:.2f} s", flush=True)
    client.close()
    cluster.close()
    load = os.getloadavg()[0]
    m_mem, m_dsk = float(np.median(mem)), float(np.median(dsk))
    lines = [
        "## Benchmark 1: overhead of the Dask path",
        "",
        f"Machine: {os.cpu_count()} cores shared with other jobs (load average {load:.1f} at the "
        "end); times are medians of interleaved repeats, so the ratio is the number to read.",
        "",
        f"RBF (gamma = 1/(2d)), N = M = {a.n:,}, d = {a.d}, {a.s} landmarks per side, r = {a.r}, "
        f"float32; Dask: LocalCluster 2 workers × 1 thread (processes), row chunks of "
        f"{a.chunk:,}; in memory: lazy KernelMatrix on the same 2 cores. Dask times include "
        f"the persisted Ũ, Ṽ; cluster start-up ({start_s:.1f} s) and data generation excluded.",
        "",
        *repeats_table({"in memory": mem, "Dask LocalCluster 2×1": dsk}),
        "",
        f"**Overhead ratio Dask / in-memory: {m_dsk / m_mem:.2f}×** (target ≤ 1.3×). "
        f"Results finite: {ok_all}. Top singular values (last repeat; different random data "
        f"on the two paths): in memory {np.round(s_mem[:3], 1).tolist()}, Dask "
        f"{np.round(s_dsk[:3], 1).tolist()}.",
    ]
    write_section(Path(a.out), "overhead", lines)


if __name__ == "__main__":
    main()
