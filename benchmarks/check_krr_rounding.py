"""Control for issue 14 benchmark 1: how much the in-memory Nyström KRR itself moves at rounding.

Fits ``NystromKernelRidge`` (LLA, RBF, m = 1000 fixed landmark points, alpha = 1) on the rows of
the benchmark's regression problem in their order and in a permuted order, and on a dask array
of 4 chunks; prints the max relative difference of the test predictions of each pair. The
in-memory pair differs only by summation order, so its difference is the problem's own rounding
sensitivity, against which the Dask path's difference is read. Run:
``python benchmarks/check_krr_rounding.py`` (about a minute, n = 2·10⁵).
"""
import sys
from pathlib import Path

import dask
import dask.array as da
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dask_machines import _regression_chunk  # noqa: E402

from asymkern.nystrom import NystromKernelRidge  # noqa: E402


def rel(a, b) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


def main(n: int = 200_000, d: int = 20, m: int = 1000) -> None:
    A = _regression_chunk(1, n, d, 0.1)
    X, y = A[:, :d], A[:, d]
    Xt = _regression_chunk(9, 20000, d, 0.1)[:, :d]
    L = np.sort(np.random.default_rng(0).choice(n, m, replace=False))
    kw = dict(mode="lla", n_landmarks=m, alpha=1.0, kernel="rbf",
              kernel_params={"gamma": 1 / (2 * d)})
    p0 = NystromKernelRidge(landmarks=L, **kw).fit(X, y).predict(Xt)
    perm = np.random.default_rng(1).permutation(n)
    inv = np.argsort(perm)  # the same landmark points, at their new row numbers
    p1 = NystromKernelRidge(landmarks=inv[L], **kw).fit(X[perm], y[perm]).predict(Xt)
    with dask.config.set(scheduler="threads"):
        Xd, yd = da.from_array(X, chunks=(n // 4, d)), da.from_array(y, chunks=n // 4)
        p2 = NystromKernelRidge(landmarks=L, **kw).fit(Xd, yd).predict(Xt)
    print(f"in memory, rows permuted vs not: {rel(p1, p0):.2e}")
    print(f"Dask (4 chunks) vs in memory:    {rel(p2, p0):.2e}")


if __name__ == "__main__":
    main()
