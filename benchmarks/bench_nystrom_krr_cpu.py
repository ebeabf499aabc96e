"""NystromKernelRidge on the CPU against scikit-learn's Nystroem + Ridge (run time, peak memory).

One interleaved script: each repeat fits, in turn, scikit-learn's ``Nystroem`` followed by
``Ridge`` and ``NystromKernelRidge`` in the modes under study, with BLAS pinned to one thread
(threadpoolctl); run times are medians of the repeats and peak memory is the largest block
traced by :mod:`tracemalloc` (numpy registers its buffers there) during one fit. Printed as
ratios to scikit-learn's pipeline (≤ 1 is as fast / as small).

Usage: ``python benchmarks/bench_nystrom_krr_cpu.py [n] [m] [repeats]`` (default 10000 200 5).
"""

from __future__ import annotations

import sys
import time
import tracemalloc

import numpy as np
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from threadpoolctl import threadpool_limits

from asymkern.nystrom import NystromKernelRidge


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    m = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    rs = np.random.RandomState(0)
    X = rs.randn(n, 8)
    y = np.sin(X[:, 0]) + 0.1 * rs.randn(n)
    gamma, alpha = 0.1, 1e-3
    fits = {
        "sklearn": lambda X: make_pipeline(
            Nystroem(gamma=gamma, n_components=m, random_state=0), Ridge(alpha=alpha)).fit(X, y),
        "gsa": lambda X: NystromKernelRidge(mode="gsa", n_landmarks=m, gamma=gamma,
                                            alpha=alpha, random_state=0).fit(X, y),
        "lla": lambda X: NystromKernelRidge(mode="lla", n_landmarks=m, gamma=gamma,
                                            alpha=alpha, random_state=0).fit(X, y),
        "lla-f32": lambda X: NystromKernelRidge(mode="lla", n_landmarks=m, gamma=gamma,
                                                alpha=alpha, random_state=0).fit(
            X.astype(np.float32), y),
    }
    times: dict[str, list[float]] = {k: [] for k in fits}
    peaks: dict[str, int] = {}
    with threadpool_limits(1):
        for name, fit in fits.items():  # warm-up, and the peak of one fit
            fit(X)
            tracemalloc.start()
            fit(X)
            peaks[name] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        for _ in range(repeats):
            for name, fit in fits.items():
                t0 = time.perf_counter()
                fit(X)
                times[name].append(time.perf_counter() - t0)
    base_t = float(np.median(times["sklearn"]))
    print(f"n={n} m={m} repeats={repeats} (BLAS 1 thread); ratios to Nystroem + Ridge")
    print(f"{'fit':10s} {'median s':>9s} {'time ratio':>10s} {'peak MB':>8s} {'peak ratio':>10s}")
    for name in fits:
        t = float(np.median(times[name]))
        print(f"{name:10s} {t:9.3f} {t / base_t:10.2f} {peaks[name] / 2**20:8.1f} "
              f"{peaks[name] / peaks['sklearn']:10.2f}")


if __name__ == "__main__":
    main()
