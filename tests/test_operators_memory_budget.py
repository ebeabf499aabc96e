"""The exact operator fits check their whole peak against max_dense_memory before they allocate
anything of size n×n: every n×n array a route holds at once (Gram matrices, factors, products,
the eigensolver's copies), not one Gram matrix (asymkern.config.check_memory).

For every estimator and route: (a) under a budget slightly below the route's declared need the
fit refuses with a MemoryBudgetError naming the estimator and the route, having allocated almost
nothing; (b) under the declared need it runs, and its tracemalloc peak stays within it, also
on the branch that costs most (full-rank Gram matrices, the dense fallback of ARPACK).
"""

import tracemalloc
import warnings

import numpy as np
import pytest
from scipy.sparse.linalg import ArpackNoConvergence

from asymkern import config_context
from asymkern.config import MemoryBudgetError
from asymkern.linalg._svd_core import dense_svd_bytes
from asymkern.operators import (
    ConditionalMeanEmbedding,
    CovarianceOperator,
    CrossCovarianceOperator,
    KernelCCA,
    KoopmanOperator,
    PerronFrobeniusOperator,
)

N = 300  # one n×n float64 array: 0.69 MiB
MiB = 2**20
_rng = np.random.default_rng(0)
X = _rng.standard_normal((N, 3))
Y = np.sin(X[:, :2]) + 0.1 * _rng.standard_normal((N, 2))
TRAJ = _rng.standard_normal((N + 1, 3))  # N time-lagged pairs
X0, X1 = TRAJ[:-1], TRAJ[1:]
FULL = {"gamma": 20.0}  # full-rank Gram matrices: the factorisations' most expensive branch
FULL2 = {"kernel_x_params": FULL, "kernel_y_params": FULL}


def _need(copies, columns, *samples, n=N):
    """The declared peak: ``copies`` n×n float64 arrays, the n-long vectors beside them and the
    samples with the kernel's copies of them."""
    return (int(8.0 * copies * n * n) + 8 * n * max(64, 4 * columns + 24)
            + 3 * sum(a.nbytes for a in samples))


def _qr(held):
    """The QR route: the held arrays, the r×r matrix and its dense SVD (r = n ≤ 1000)."""
    return held + (8.0 * N * N + dense_svd_bytes(N, N)) / (8.0 * N * N)


# (id, fit, declared n×n arrays, columns, samples, what the message names); center changes
# no route's need (the Gram matrices are centred in place): both values are covered
ROUTES = [
    *[(f"koopman-{est}-alpha={a}",
       lambda est=est, a=a: KoopmanOperator(estimator=est, alpha=a, rank=3,
                                            kernel_params=FULL).fit(TRAJ),
       k, 5, (X0, X1), f"KoopmanOperator(estimator='{est}')")
      for est, k in (("full", 7), ("pcr", 3), ("rrr", 7)) for a in (1e-6, None)],
    *[(f"perron-frobenius-{est}-alpha={a}",
       lambda est=est, a=a: PerronFrobeniusOperator(estimator=est, alpha=a, rank=3,
                                                    kernel_params=FULL).fit(TRAJ),
       k, 5, (X0, X1), f"PerronFrobeniusOperator(estimator='{est}')")
      for est, k in (("full", 9), ("pcr", 3.5), ("rrr", 7)) for a in (1e-6, None)],
    ("cme", lambda: ConditionalMeanEmbedding(kernel_x_params=FULL).fit(X, Y), 2, 2, (X, Y),
     "ConditionalMeanEmbedding"),
    *[(f"covariance-center={c}-jitter={j}",
       lambda c=c, j=j: CovarianceOperator(center=c, jitter=j, kernel_params=FULL).fit(X),
       7, 5, (X,), "CovarianceOperator") for c, j in ((False, 0.0), (True, 1e-3))],
    *[(f"cross-covariance-{m}-center={c}",
       lambda m=m, c=c: CrossCovarianceOperator(method=m, center=c, jitter=1e-3,
                                                **FULL2).fit(X, Y),
       k, 5, (X, Y), f"CrossCovarianceOperator(method='{m}')")
      for m, k, c in (("qr", _qr(6), True), ("auxiliary", 6, False), ("block", 18, True))],
    *[(f"kernel-cca-{m}-center={c}",
       lambda m=m, c=c: KernelCCA(method=m, center=c, **FULL2).fit(X, Y),
       k, 2, (X, Y), f"KernelCCA(method='{m}')")
      for m, k, c in (("qr", _qr(6), False), ("auxiliary", 10, True), ("block", 22, False))],
]
IDS = [r[0] for r in ROUTES]


def _peak(fn):
    """fn()'s result (or the exception it raised) and its tracemalloc peak in bytes."""
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out = fn()
            except Exception as exc:  # noqa: BLE001 - returned to the caller
                out = exc
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture
def arpack_fails(monkeypatch):
    """ARPACK never converges: the transfer operators' eigensolvers take their dense
    fallbacks (the branch that costs most)."""
    import asymkern.operators._koopman as koopman
    import asymkern.operators._numerics as numerics

    def fail(*args, **kwargs):
        raise ArpackNoConvergence("no convergence (forced by the test)", None, None)

    monkeypatch.setattr(numerics, "_arpack_top", fail)
    monkeypatch.setattr(koopman, "eigs", fail)
    monkeypatch.setattr(koopman, "eigsh", fail)


@pytest.mark.parametrize("name, fit, copies, columns, samples, what", ROUTES, ids=IDS)
def test_refused_below_the_routes_need_before_allocating(name, fit, copies, columns, samples,
                                                         what):
    need = _need(copies, columns, *samples)
    with config_context(max_dense_memory=0.97 * need / MiB):
        err, peak = _peak(fit)
    assert isinstance(err, MemoryBudgetError), f"{name}: accepted under 97% of its need ({err})"
    msg = str(err)
    assert what in msg and f"on {N} samples" in msg, msg
    assert f"{copies:g} {N}×{N} float64 arrays" in msg, msg
    assert abs(err.nbytes - need) <= 8, (err.nbytes, need)
    if "Koopman" in what or "ConditionalMean" in what:
        assert "n_landmarks=" in msg, msg  # the landmark estimator forms no n×n matrix
    # (less than a quarter of one n×n array allocated before refusing)
    assert peak < min(MiB, 2 * N * N), f"{name}: {peak} bytes allocated before refusing"


@pytest.mark.parametrize("name, fit, copies, columns, samples, what", ROUTES, ids=IDS)
def test_runs_within_the_routes_need(name, fit, copies, columns, samples, what, arpack_fails):
    need = _need(copies, columns, *samples)
    with config_context(max_dense_memory=need / MiB):
        est, peak = _peak(fit)
    assert not isinstance(est, Exception), f"{name}: {est!r}"
    assert peak <= need, f"{name}: peak {peak / (8 * N * N):.2f} n×n arrays > {copies:g} declared"


@pytest.mark.parametrize("symmetric, copies", [(False, 1.5), (True, 2.0)])
def test_a_gram_matrix_formed_outside_a_fit_keeps_its_own_check(symmetric, copies):
    from asymkern._shared.operators import as_rkhs_kernel, gram

    k = as_rkhs_kernel("laplacian")  # the kernel with the largest blocks in flight
    need = copies * 8 * N * N + 3 * X.nbytes + 8 * 64 * N  # with the copies of X, vectors
    with config_context(max_dense_memory=0.97 * need / MiB):
        err, peak = _peak(lambda: gram(k, X, symmetric=symmetric, what="the test Gram"))
    assert isinstance(err, MemoryBudgetError) and "the test Gram" in str(err)
    assert peak < MiB
    with config_context(max_dense_memory=need / MiB):
        K, peak = _peak(lambda: gram(k, X, symmetric=symmetric))
    assert K.shape == (N, N) and peak <= need


DEVICE_ROUTES = [
    ("koopman-full", lambda: KoopmanOperator(device="cpu", kernel_params=FULL).fit(TRAJ), 7),
    ("koopman-rrr", lambda: KoopmanOperator(estimator="rrr", rank=3, device="cpu",
                                            kernel_params=FULL).fit(TRAJ), 7),
    ("perron-frobenius-full", lambda: PerronFrobeniusOperator(device="cpu",
                                                              kernel_params=FULL).fit(TRAJ), 9),
    ("cme", lambda: ConditionalMeanEmbedding(device="cpu", kernel_x_params=FULL).fit(X, Y), 2),
    ("covariance", lambda: CovarianceOperator(device="cpu", kernel_params=FULL).fit(X), 7),
    ("cross-covariance", lambda: CrossCovarianceOperator(device="cpu", **FULL2).fit(X, Y),
     _qr(6)),
    ("kernel-cca", lambda: KernelCCA(device="cpu", **FULL2).fit(X, Y), _qr(6)),
]


@pytest.mark.parametrize("name, fit, copies", DEVICE_ROUTES, ids=[r[0] for r in DEVICE_ROUTES])
def test_device_fits_check_the_same_need(name, fit, copies, arpack_fails):
    """The torch fits run the numpy fit's code: the same check, before G_X is formed on the
    device (their samples are held twice, on the device and on the host)."""
    pytest.importorskip("torch")
    with config_context(max_dense_memory=0.97 * copies * 8 * N * N / MiB):
        with pytest.raises(MemoryBudgetError, match=f"{copies:g} {N}×{N} float64 arrays"):
            fit()
    samples = (X, Y, X, Y) if name in ("cme", "cross-covariance", "kernel-cca") else \
        (X0, X1, X0, X1) if name.startswith(("koopman", "perron")) else (X, X)
    with config_context(max_dense_memory=_need(copies, 5, *samples) / MiB):
        fit()
