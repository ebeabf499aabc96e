"""The public solvers that take a precomputed kernel or Gram matrix check ``max_dense_memory``
before they allocate (round 13 audit: ``askls_kkt_matrix`` peaked at 6 copies of K under a
budget of 2, ``gram_eigh`` at 5, and so did the LS-SVM solvers, ``kernel_qr`` and the
operator-SVD routes): a budget below the call's traced peak is refused before anything large
is allocated, naming the call; a generous one gives the same result. Sparse kernels reach the
densifying solvers ('eig', 'dense') as well as dense ones (these raised before)."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _budget import GENEROUS, run

from asymkern.kernels import get_kernel
from asymkern.linalg import (
    eig_auxiliary,
    gram_eigh,
    kernel_qr,
    svd_auxiliary,
    svd_block,
    svd_qr,
)
from asymkern.lssvm import (
    askls_C_path,
    askls_kkt_matrix,
    askls_solve,
    lssvm_C_path,
    lssvm_solve,
)

rng = np.random.default_rng(0)
N = 300
X, Z = rng.standard_normal((N, 4)), rng.standard_normal((N, 4)) + 0.3
K = get_kernel("rbf", gamma=0.3)(X)  # symmetric PSD
KA = get_kernel("sne", gamma=0.3)(X, Z)  # asymmetric
KS = sp.csr_matrix(KA * (KA > 2e-3))
Y = np.sign(rng.standard_normal(N))
W = rng.uniform(0.5, 2.0, N)
G_OUT = get_kernel("rbf", gamma=0.3)(X[:200])
G_CROSS = get_kernel("rbf", gamma=0.3)(Z[:250], X[:200])
G_IN = get_kernel("rbf", gamma=0.3)(Z[:250])
B = rng.standard_normal((200, 250))
F_IN, F_OUT = kernel_qr(G_IN), kernel_qr(G_OUT)

CASES = {
    **{f"askls_solve {m}{' w' * bool(w)}{' sparse' * s}": (
        lambda m=m, w=w, s=s: askls_solve(KS if s else KA, Y, 1.0, method=m,
                                          sample_weight=W if w else None))
       for m in ("schur", "eig", "dense") for w in (0, 1) for s in (0, 1)},
    **{f"askls_C_path {m}{' w' * bool(w)}": (
        lambda m=m, w=w: askls_C_path(KA, Y, [0.1, 10.0], method=m,
                                      sample_weight=W if w else None))
       for m in ("eig", "schur") for w in (0, 1)},
    **{f"lssvm_solve {m}{' w' * bool(w)}{' sparse' * s}": (
        lambda m=m, w=w, s=s: lssvm_solve(sp.csr_matrix(K) if s else K, Y, 1.0, method=m,
                                          sample_weight=W if w else None))
       for m in ("chol", "eig", "dense") for w in (0, 1) for s in (0, 1)
       if not (s and m == "chol")},  # sparse Cholesky: a sparse factorisation
    "lssvm_C_path": lambda: lssvm_C_path(K, Y, [0.1, 10.0]),
    "lssvm_C_path w": lambda: lssvm_C_path(K, Y, [0.1, 10.0], sample_weight=W),
    "askls_kkt_matrix": lambda: askls_kkt_matrix(KA, Y, 1.0),
    "askls_kkt_matrix sparse": lambda: askls_kkt_matrix(KS, Y, 1.0),
    **{f"kernel_qr {m}{' jitter' * bool(j)}": (
        lambda m=m, j=j: kernel_qr(K, method=m, jitter=1e-3 * j))
       for m in ("auto", "pivoted", "cholesky", "eigh") for j in (0, 1)},
    "gram_eigh": lambda: gram_eigh(K),
    "gram_eigh full rank": lambda: gram_eigh(K + np.eye(N)),
    **{f"{f.__name__} k={k}": (lambda f=f, k=k: f(G_IN, G_OUT, B, k))
       for f in (svd_auxiliary, svd_block) for k in (4, None)},
    **{f"svd_qr k={k}": (lambda k=k: svd_qr(F_IN, F_OUT, B, k)) for k in (4, None)},
    **{f"eig_auxiliary k={k}": (lambda k=k: eig_auxiliary(G_CROSS, G_OUT, B, k))
       for k in (4, None)},
}


def _traced_peak(call) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _refused_below_peak(name, call):
    """``call`` runs under a generous budget; a budget at 90 % of its traced peak is refused
    before the large arrays exist (the refusal traces under 35 % of the peak), naming the
    setting; and it runs under 6× its peak (the estimate is not absurdly large)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ill-conditioning and rank warnings: not the point
        ref, peak = run(call, GENEROUS)
        assert ref is not None
        budget = 0.9 * peak / 2**20
        out, err = run(call, budget)
        assert out is None, f"{name}: ran under {budget:.2f} MiB with a peak of " \
                            f"{peak / 2**20:.2f} MiB"
        assert "max_dense_memory" in str(err)
        refused_peak = _traced_peak(lambda: run(call, budget))
        assert refused_peak < 0.35 * peak, (name, refused_peak, peak)
        out, _ = run(call, 6 * peak / 2**20)
        assert out is not None, f"{name}: refused under 6× its peak"


@pytest.mark.parametrize("name", sorted(CASES))
def test_solver_refuses_a_budget_below_its_peak(name):
    _refused_below_peak(name, CASES[name])


def test_sparse_kernels_reach_the_densifying_solvers():
    """askls_solve(method='dense'), askls_kkt_matrix and lssvm_solve(method='eig') raised on
    a sparse K (a ValueError of numpy's, or scipy's NotImplementedError); they now give the
    dense K's result."""
    for m in ("schur", "eig", "dense"):
        a, b = askls_solve(KS, Y, 1.0, method=m), askls_solve(KS.toarray(), Y, 1.0, method=m)
        np.testing.assert_allclose(a.coef[0], b.coef[0], rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(askls_kkt_matrix(KS, Y, 1.0),
                                  askls_kkt_matrix(KS.toarray(), Y, 1.0))
    for m in ("chol", "eig", "dense"):
        a = lssvm_solve(sp.csr_matrix(K), Y, 1.0, method=m, sample_weight=W)
        b = lssvm_solve(K, Y, 1.0, method=m, sample_weight=W)
        np.testing.assert_allclose(a.coef[0], b.coef[0], rtol=1e-8, atol=1e-10)


# ------------------------------------------------------- estimators whose checks missed arrays
def _estimator_cases():
    from asymkern import KernelSVD
    from asymkern.kernels import CompatibilityTransform
    from asymkern.lssvm import LSSVMClassifier

    A = rng.standard_normal((400, 250))
    As = sp.random(400, 250, density=0.05, random_state=0, format="csr")
    w = rng.uniform(0.5, 2.0, N)
    yc = (X[:, 0] > 0).astype(int)
    cases = {
        # the dense solver's estimate left out G and G_w (counted for the other solvers)
        "KernelSVD dense weighted": lambda: KernelSVD(solver="dense").fit(X, Z=Z,
                                                                          sample_weight=w),
        "KernelSVD dense weighted centred": lambda: KernelSVD(
            solver="dense", center=True).fit(X, Z=Z, sample_weight=w),
        # the leave-one-out inverse of the Platt calibration was not counted
        "LSSVMClassifier probability": lambda: LSSVMClassifier(probability=True).fit(X, yc),
        # the compatibility matrix of fit(A) was computed before any check
        "KernelSVD fit(A) compat pca": lambda: KernelSVD(compat="pca").fit(A),
    }
    for m in ("pca", "polar", "pinv", "random"):
        cases[f"CompatibilityTransform {m}"] = (
            lambda m=m: CompatibilityTransform(m, random_state=0).fit(A))
        cases[f"CompatibilityTransform {m} sparse"] = (
            lambda m=m: CompatibilityTransform(m, random_state=0).fit(As))
    cases["CompatibilityTransform pinv wide float32"] = (
        lambda: CompatibilityTransform("pinv").fit(A.T.astype(np.float32)))
    return cases


ESTIMATOR_CASES = _estimator_cases()


@pytest.mark.parametrize("name", sorted(ESTIMATOR_CASES))
def test_estimator_refuses_a_budget_below_its_peak(name):
    _refused_below_peak(name, ESTIMATOR_CASES[name])
