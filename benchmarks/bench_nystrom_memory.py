"""Issue 16 gap 7: peak memory of the float64 asymmetric Nyström SVD at N = M = 10⁶.

RBF kernel, d = 32, 1000 landmarks per side, r = 20, lazy ``KernelMatrix`` (working_memory =
64 MiB), exactly the scale run of ``bench_nystrom_svd.py`` but in float64. Each run is a fresh
subprocess (OMP/OpenBLAS threads = 2) reporting its peak RSS (``resource.getrusage``) and the
RSS after the data are generated; ``before`` and ``after`` alternate.

* ``after``: the library as it is (signs flipped in place, column norms and the largest-entry
  search by row chunks: the N×r factors are held once);
* ``before``: the same code with the former temporaries put back by monkeypatching (a copy of
  U and V before the sign flip, ``np.argmax(np.abs(U), axis=0)``, ``np.linalg.norm``), which is
  what the former code allocated.

Target: ≤ 1 GB beyond the inputs (X and Z: 2 × 256 MB in float64).

Usage: python benchmarks/bench_nystrom_memory.py [--quick] [--n 1000000] [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
import numpy as np
import asymkern.linalg.nystrom as ny
from asymkern.kernels import KernelMatrix, get_kernel
n, s, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
d, r = 32, 20
if mode == "before":
    orig = ny.nystrom_result
    ny.nystrom_result = lambda U, s_, V, *a, **k: orig(U * 1, s_, V * 1, *a, **k)
    ny._argmax_abs_cols = lambda U: np.argmax(np.abs(U), axis=0)
    ny._col_norms = lambda U: np.linalg.norm(U, axis=0)
rng = np.random.default_rng(0)
X = rng.standard_normal((n, d))
Z = rng.standard_normal((n, d)) * 1.1 + 0.1
G = KernelMatrix(get_kernel("rbf", gamma=1.0 / (2 * d)), X, Z, working_memory=64)
rss_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.perf_counter()
res = ny.asymmetric_nystrom(G, r, s, s, random_state=0)
wall = time.perf_counter() - t0
print(json.dumps({"mode": mode, "n": n, "wall_s": wall, "dtype": str(res.U.dtype),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_after_data_mib": rss_data, "inputs_mib": (X.nbytes + Z.nbytes) / 2**20,
                  "top_s": [float(v) for v in res.s[:3]]}))
"""


def child(n: int, s: int, mode: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2", MKL_NUM_THREADS="2")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", CHILD, str(n), str(s), mode], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 20,000, no file written")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs/results"))
    a = ap.parse_args(argv)
    n, s = (20_000, 100) if a.quick else (a.n, 1000)
    runs = [child(n, s, mode) for _ in range(a.repeats) for mode in ("before", "after")]
    by = {m: [r for r in runs if r["mode"] == m] for m in ("before", "after")}
    lines = ["# Nyström float64 peak-memory benchmark\n",
             f"Machine: {platform.machine()}, {os.cpu_count()} logical CPUs, shared with other "
             f"work (load average {os.getloadavg()[0]:.1f} at the end; memory figures do not "
             "depend on the load). Fresh subprocess per run, before/after alternating.\n",
             f"RBF, N = M = {n:,}, d = 32, 1000 landmarks per side, r = 20, float64 lazy kernel, "
             "working_memory = 64 MiB.\n",
             "| route | peak RSS (MiB) | RSS after data (MiB) | inputs X, Z (MiB) | peak − RSS "
             "after data (MiB) |",
             "|---|---|---|---|---|"]
    for m in ("before", "after"):
        for r in by[m]:
            lines.append(f"| {m} | {r['peak_rss_mib']:.0f} | {r['rss_after_data_mib']:.0f} | "
                         f"{r['inputs_mib']:.0f} | "
                         f"{r['peak_rss_mib'] - r['rss_after_data_mib']:.0f} |")
    b, f = by["before"][0], by["after"][0]
    lines += ["", f"**Peak RSS before → after: {b['peak_rss_mib']:.0f} → {f['peak_rss_mib']:.0f} "
              f"MiB** (beyond the data: {b['peak_rss_mib'] - b['rss_after_data_mib']:.0f} → "
              f"{f['peak_rss_mib'] - f['rss_after_data_mib']:.0f} MiB; target ≤ 1 GB beyond the "
              f"inputs). Same singular values: {b['top_s'] == f['top_s']}."]
    text = "\n".join(lines) + "\n"
    print(text)
    if not a.quick:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "nystrom_memory_bench.md").write_text(text)
    return by


if __name__ == "__main__":
    main()
