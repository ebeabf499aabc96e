"""Benchmark: asymmetric Nyström SVD (Tao et al., 2024, §3) against randomized SVD; a 10⁶ run.

1. Equal-accuracy comparison (DESIGN.md §4 row "asymmetric Nyström at η ≤ 1e-1 and 1e-2"): a
   synthetic asymmetric SNE kernel matrix (two Gaussian clouds, n = m = 4000, d = 8). Both the
   peer (scikit-learn ``randomized_svd``, grown in oversamples) and ours (grown in landmarks,
   s_x = s_z) are stopped at the first setting whose η (as printed, and strict) is ≤ ε against
   ARPACK; then timed side by side, interleaved, median of repeats.
2. Scale run (target: ≤ 30 s and ≤ 1 GB peak RSS on 2 cores): RBF kernel, n = m = 10⁶, d = 32,
   1000 landmarks on each side, r = 20, lazy KernelMatrix (float32), in a fresh subprocess that
   reports its wall time, CPU time and peak RSS (``resource.getrusage``).

Run: ``python benchmarks/bench_nystrom_svd.py [--quick] [--skip-scale]``; writes
``docs/results/nystrom_bench.md``. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SCALE_CHILD = r"""
import json, os, resource, sys, time
import numpy as np
from asymkern.kernels import KernelMatrix, get_kernel
from asymkern.linalg.nystrom import asymmetric_nystrom
n, d, s, r = int(sys.argv[1]), 32, int(sys.argv[2]), 20
rng = np.random.default_rng(0)
X = rng.standard_normal((n, d), dtype=np.float32)
Z = rng.standard_normal((n, d), dtype=np.float32) * np.float32(1.1) + np.float32(0.1)
G = KernelMatrix(get_kernel("rbf", gamma=1.0 / (2 * d)), X, Z, working_memory=64)
rss_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
c0 = time.process_time(); t0 = time.perf_counter()
res = asymmetric_nystrom(G, r, s, s, random_state=0)
wall = time.perf_counter() - t0; cpu = time.process_time() - c0
ok = bool(np.all(np.isfinite(res.U)) and np.all(np.isfinite(res.V)))
print(json.dumps({"n": n, "s": s, "wall_s": wall, "cpu_s": cpu,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_after_data_mib": rss_data, "finite": ok,
                  "dtype": str(res.U.dtype), "top_s": [float(v) for v in res.s[:3]]}))
"""


def _timed(f, *a, **k):
    t = time.perf_counter()
    out = f(*a, **k)
    return time.perf_counter() - t, out


def equal_accuracy(n: int, repeats: int, seed: int = 0) -> list[dict]:
    from sklearn.utils.extmath import randomized_svd

    from asymkern.kernels import KernelMatrix, get_kernel
    from asymkern.linalg.metrics import eta
    from asymkern.linalg.nystrom import asymmetric_nystrom
    from asymkern.linalg.svd import arpack_svd

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 8))
    Z = rng.standard_normal((n, 8)) * 1.3 + 0.3
    G = KernelMatrix(get_kernel("sne", bandwidth=4.0), X, Z).to_array()
    r = 20
    t_ref, ref = _timed(arpack_svd, G, r, tol=0.0, random_state=seed)

    def etas(U, V):
        return (eta(ref.U, ref.V, U, V, ref.s, weights="paper"),
                eta(ref.U, ref.V, U, V, weights="uniform"))

    def rsvd(p, sd):
        U, s, Vt = randomized_svd(G, r, n_oversamples=p, n_iter="auto", random_state=sd)
        return U, Vt.T

    def ours(s, sd):
        res = asymmetric_nystrom(G, r, s, s, random_state=sd)
        return res.U, res.V

    rows = []
    for crit, k in (("paper", 0), ("strict", 1)):
        for eps in (0.1, 0.01):
            p_sel = next((p for p in (0, 5, 10, 20, 40, 80, 160)
                          if np.median([etas(*rsvd(p, sd))[k] for sd in range(3)]) <= eps), None)
            s_sel = next((s for s in (25, 50, 100, 200, 400, 800, 1600, n)
                          if np.median([etas(*ours(s, sd))[k] for sd in range(3)]) <= eps), None)
            row = {"η": crit, "ε": eps, "RSVD oversamples": p_sel, "landmarks": s_sel}
            if p_sel is not None and s_sel is not None:
                tr, to = [], []
                for i in range(repeats):
                    tr.append(_timed(rsvd, p_sel, 100 + i)[0])
                    to.append(_timed(ours, s_sel, 100 + i)[0])
                row.update({"RSVD (s)": float(np.median(tr)), "ours (s)": float(np.median(to)),
                            "speedup": float(np.median(tr) / np.median(to))})
            rows.append(row)
    return rows, t_ref


def scale_run(n: int, s: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2", MKL_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", SCALE_CHILD, str(n), str(s)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs/results"))
    a = ap.parse_args(argv)
    n = 1500 if a.quick else 4000
    rows, t_ref = equal_accuracy(n, 3 if a.quick else 5)
    lines = ["# Asymmetric Nyström benchmark\n",
             f"Machine: {os.cpu_count()} cores, shared with other jobs (load average "
             f"{os.getloadavg()[0]:.1f} at the end); medians of interleaved repeats; ratios "
             "measured side by side.\n",
             "## 1. Equal accuracy vs scikit-learn randomized_svd (synthetic SNE kernel, "
             f"n = m = {n}, r = 20)\n",
             f"ARPACK reference (tol = 0): {t_ref:.2f} s.\n",
             "| η | ε | RSVD oversamples | landmarks s | RSVD (s) | ours (s) | speedup |",
             "|---|---|---|---|---|---|---|"]
    for r_ in rows:
        lines.append("| {η} | {ε} | {RSVD oversamples} | {landmarks} | {a} | {b} | {c} |".format(
            **r_, a=f"{r_['RSVD (s)']:.4f}" if "RSVD (s)" in r_ else "—",
            b=f"{r_['ours (s)']:.4f}" if "ours (s)" in r_ else "—",
            c=f"{r_['speedup']:.2f}" if "speedup" in r_ else "not reached"))
    print("\n".join(lines))
    if not a.skip_scale:
        n_s = 100_000 if a.quick else 1_000_000
        res = scale_run(n_s, 1000)
        print(res)
        lines += ["", "## 2. Scale run: RBF, n = m = "
                  f"{n_s:,}, d = 32, 1000 landmarks per side, r = 20, lazy float32 kernel\n",
                  "Target (DESIGN.md §4): ≤ 30 s and ≤ 1 GB peak RSS on 2 cores. Subprocess "
                  "with OMP/OpenBLAS threads = 2.\n",
                  "| wall (s) | CPU time (s) | CPU time / 2 cores (s) | peak RSS (MiB) | "
                  "RSS after data (MiB) | dtype |",
                  "|---|---|---|---|---|---|",
                  f"| {res['wall_s']:.1f} | {res['cpu_s']:.1f} | {res['cpu_s'] / 2:.1f} | "
                  f"{res['peak_rss_mib']:.0f} | {res['rss_after_data_mib']:.0f} | {res['dtype']} |",
                  "",
                  "Wall time depends on the load of the shared machine; CPU time / 2 is what the "
                  "run would take on two otherwise idle cores if both were kept busy."]
    Path(a.out).mkdir(parents=True, exist_ok=True)
    if not a.quick:
        (Path(a.out) / "nystrom_bench.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
