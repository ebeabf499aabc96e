"""Fits that the ``max_dense_memory`` check lets run stay within it: the kernel blocks of their
passes are counted and shrunk to what the rest of the fit leaves of the budget
(:func:`asymkern.linalg.svd.blocks_within`), whatever ``working_memory`` says.

Each case runs once under a generous budget (also the reference, and the warm-up of one-time
allocations) and once under a tight one with ``working_memory`` at its default 512 MiB: the
tight fit either refuses with :class:`MemoryBudgetError` naming the budget, or runs with a
``tracemalloc`` peak within the budget (a margin of 10 %), and its results are those of the
generous fit to rounding (the blocked sums only run in another order).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from scipy.sparse.linalg import aslinearoperator

from asymkern import KernelSVD, config_context
from asymkern.config import MemoryBudgetError
from asymkern.kernels import KernelMatrix
from asymkern.linalg import asymmetric_nystrom, top_svd
from asymkern.linalg.svd import arpack_svd, arpack_svd_bytes
from asymkern.lssvm import AsKLSClassifier
from asymkern.nystrom import NystromSVC

MARGIN = 1.1  # the traced peak may exceed the budget by this factor at most
GENEROUS = 4096  # MiB


def _rel(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def _paired(U, V, U0, V0):
    """U, V with the paired signs of U0, V0 (the sign rule may flip on rounding-level ties)."""
    signs = np.sign(np.sum(U * U0, axis=0))
    signs[signs == 0] = 1
    return U * signs, V * signs


def _run(fit, budget: float, result=None):
    """``fit()`` under ``max_dense_memory=budget`` MiB and ``working_memory=512``: (its
    ``result`` (default: itself), taken after, untraced; the traced peak in bytes), or (None,
    the error) when the budget check refused it."""
    with config_context(max_dense_memory=budget, working_memory=512):
        tracemalloc.start()
        try:
            out = fit()
            peak = tracemalloc.get_traced_memory()[1]
        except MemoryBudgetError as err:
            return None, err
        finally:
            tracemalloc.stop()
    return (out if result is None else result(out)), peak


def _within(fit, budget: float, *, must_run: bool = True, result=None):
    """The reference (generous budget) and the tight result; asserts that the tight fit
    refused naming the budget, or ran within it. ``result(fitted)`` reads the results out of
    the fit's return value after the traced run (predictions are not part of the fit)."""
    ref, _ = _run(fit, GENEROUS, result)
    assert ref is not None
    out, peak = _run(fit, budget, result)
    if out is None:
        assert not must_run, f"refused under {budget} MiB: {peak}"
        assert f"max_dense_memory is {budget:g} MiB" in str(peak), str(peak)
        return ref, None
    assert peak <= budget * 2**20 * MARGIN, (
        f"traced peak {peak / 2**20:.2f} MiB over a budget of {budget} MiB")
    return ref, out


@pytest.fixture(scope="module")
def sets():
    rng = np.random.default_rng(0)
    return rng.standard_normal((600, 5)), rng.standard_normal((500, 5))


# -------------------------------------------------------------------------------- KernelSVD
@pytest.mark.parametrize("solver", ["randomized", "arpack"])
@pytest.mark.parametrize("kernel", ["rbf", "sne"])
def test_ksvd_on_a_lazy_kernel_holds_its_blocks_within_the_budget(sets, solver, kernel):
    # the 600×500 kernel is one 2.3 MiB block at working_memory=512: over a 1 MiB budget
    X, Z = sets

    def fit():
        est = KernelSVD(3, kernel=kernel, solver=solver, random_state=0).fit(X, Z=Z)
        return est.singular_values_, est.left_singular_vectors_, est.right_singular_vectors_

    (s0, U0, V0), (s, U, V) = _within(fit, 1.0)
    assert _rel(s, s0) < 1e-10
    U, V = _paired(U, V, U0, V0)
    assert _rel(U, U0) < 1e-8 and _rel(V, V0) < 1e-8


@pytest.mark.parametrize("solver", ["randomized", "nystrom"])
def test_ksvd_centring_pass_uses_blocks_within_the_budget(sets, solver, monkeypatch):
    """The centring statistics (one pass over G before the solver) run on blocks that fit
    what the solver leaves of the budget, not on blocks of ``working_memory``."""
    X, Z = sets
    peaks = []
    means = KernelMatrix._means64

    def traced_means(self):
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = means(self)
        peaks.append(tracemalloc.get_traced_memory()[1] - start)
        return out

    monkeypatch.setattr(KernelMatrix, "_means64", traced_means)

    def fit():
        peaks.clear()  # the passes of this run only
        est = KernelSVD(3, kernel="rbf", solver=solver, center=True, random_state=0)
        est.fit(X, Z=Z)
        return est.singular_values_, est.row_means_, est.col_means_

    (s0, r0, c0), (s, r, c) = _within(fit, 1.0)
    assert max(peaks) <= 2**20, f"centring pass {max(peaks) / 2**20:.2f} MiB"
    assert _rel(r, r0) < 1e-12 and _rel(c, c0) < 1e-12
    assert _rel(s, s0) < 1e-10


def test_top_svd_randomized_on_a_lazy_kernel_within_its_budget(sets):
    X, Z = sets

    def fit():
        G = KernelMatrix("sne", X, Z)
        return top_svd(G, 3, solver="randomized", random_state=0).s

    s0, s = _within(fit, 1.0)
    assert _rel(s, s0) < 1e-10


def test_ksvd_refuses_when_even_one_row_blocks_do_not_fit(sets):
    X, Z = sets
    with config_context(max_dense_memory=0.05):
        with pytest.raises(MemoryBudgetError, match="max_dense_memory is 0.05 MiB"):
            KernelSVD(3, solver="randomized", random_state=0).fit(X, Z=Z)


# ----------------------------------------------------------------------- asymmetric Nyström
@pytest.mark.parametrize("budget, landmarks, must_run", [(3.5, 100, False), (5.0, 200, True)])
def test_asymmetric_nystrom_counts_the_orthogonalisation_and_the_blocks(budget, landmarks,
                                                                        must_run):
    # U, V: 0.6 MiB each; the orthogonalisation holds 6 of them (the old check counted 4) and
    # the row blocks of G[:, J] were 3 or 6 MiB at working_memory=512
    X = np.random.default_rng(1).standard_normal((4000, 3))

    def fit():
        res = asymmetric_nystrom(KernelMatrix("rbf", X), 20, landmarks, landmarks,
                                 random_state=0, orthogonalize=True)
        return res.s, res.U, res.V

    ref, out = _within(fit, budget, must_run=must_run)
    if out is not None:
        U, V = _paired(out[1], out[2], ref[1], ref[2])
        assert _rel(out[0], ref[0]) < 1e-10
        assert _rel(U, ref[1]) < 1e-10 and _rel(V, ref[2]) < 1e-10


def test_asymmetric_nystrom_sne_normalisers_within_the_budget():
    # the row normalisers of the SNE kernel take a pass over all of G (2.7 MiB at 512 MiB)
    X = np.random.default_rng(2).standard_normal((600, 3))

    def fit():
        res = asymmetric_nystrom(KernelMatrix("sne", X), 5, 60, 60, random_state=0)
        return res.s, res.U, res.V

    (s0, U0, V0), (s, U, V) = _within(fit, 0.6)
    assert _rel(s, s0) < 1e-10
    assert _rel(U, U0) < 1e-10 and _rel(V, V0) < 1e-10


# --------------------------------------------------------------------------- AsK-LS Nyström
@pytest.mark.parametrize("kernel", ["rbf", "sne"])
def test_askls_nystrom_fit_within_the_budget(kernel):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((1500, 4))
    y = (X[:, 0] + 0.3 * rng.standard_normal(1500) > 0).astype(int)
    Xq = rng.standard_normal((50, 4))

    def fit():
        return AsKLSClassifier(kernel=kernel, nystrom=5, random_state=0).fit(X, y)

    f0, f = _within(fit, 1.0, result=lambda est: est.decision_function(Xq))
    assert _rel(f, f0) < 1e-10


def test_askls_nystrom_refusal_names_the_whole_budget():
    X = np.random.default_rng(4).standard_normal((800, 4))
    y = (X[:, 0] > 0).astype(int)
    with config_context(max_dense_memory=0.2):
        with pytest.raises(MemoryBudgetError, match="max_dense_memory is 0.2 MiB"):
            AsKLSClassifier(kernel="sne", nystrom=5, random_state=0).fit(X, y)


# ---------------------------------------------------------------------- NystromSVC(mode='gsa')
@pytest.mark.parametrize("svm", ["linearsvc", "nusvc"])
def test_nystrom_svc_gsa_within_the_budget(svm):
    # F is 3000×100 (2.3 MiB); the thin SVD of F for P = (G^†)ᵀ holds ~3 more, which the old
    # check (3 n×m + 5 m×m) did not count
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3000, 4))
    y = (X[:, 0] + 0.3 * rng.standard_normal(3000) > 0).astype(int)
    Xq = rng.standard_normal((40, 4))

    def fit():  # a small tol: the SVM stops at tol, so a rounding-level change of F (blocks
        # of another size) moves its solution by about tol times a problem-dependent factor
        return NystromSVC(mode="gsa", n_landmarks=100, svm=svm, tol=1e-12,
                          random_state=0).fit(X, y)

    (f0, d0), (f, d) = _within(fit, 10.0 if svm == "nusvc" else 8.0,
                               result=lambda est: (est.decision_function(Xq), est.dual_coef_))
    # measured: 8e-10 (decision values) and 4.5e-9 (dual coefficients, through the
    # pseudo-inverse of F) for LinearSVC, bitwise equal for NuSVC
    assert _rel(f, f0) < 1e-7 and _rel(d, d0) < 1e-7


def test_nystrom_svc_gsa_refuses_what_its_pseudo_inverse_needs():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((3000, 4))
    y = (X[:, 0] > 0).astype(int)
    # the old check let it run at 7.4 MiB (it counted 3 n×m + 5 m×m: 7.3 MiB); it peaked at
    # 9.5 MiB
    with config_context(max_dense_memory=7.4):
        with pytest.raises(MemoryBudgetError, match="max_dense_memory is 7.4 MiB"):
            NystromSVC(mode="gsa", n_landmarks=100, svm="linearsvc", random_state=0).fit(X, y)


# ------------------------------------------------------------------------------ the helpers
def test_arpack_estimate_counts_the_copy_of_the_lanczos_basis():
    # scipy's Fortran wrapper works on a copy of the C-ordered s×ncv Lanczos basis: with few
    # components (ncv = 20) that copy is the largest array of the solve
    rng = np.random.default_rng(7)
    op = aslinearoperator(rng.standard_normal((3000, 20))) @ aslinearoperator(
        rng.standard_normal((20, 2500)))
    arpack_svd(op, 5, random_state=0)
    tracemalloc.start()
    try:
        arpack_svd(op, 5, random_state=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= arpack_svd_bytes(3000, 2500, 5)


def test_blocks_within_shrinks_a_copy_and_keeps_the_entries(sets):
    from asymkern.linalg.svd import blocks_within, budget_bytes, pass_block_bytes

    X, Z = sets
    G = KernelMatrix("rbf", X, Z, working_memory=512)
    assert blocks_within(G, budget_bytes(G)) is G  # fits the default budget: unchanged
    H = blocks_within(G, 2**19)
    assert H is not G and G.working_memory == 512 and G.block_rows() == 600
    assert pass_block_bytes(H) <= 2**19 < pass_block_bytes(G)
    W = np.random.default_rng(8).standard_normal((500, 4))
    assert _rel(H.matmat(W), G.matmat(W)) < 1e-14
    assert _rel(H.rmatmat(G.matmat(W)), G.rmatmat(G.matmat(W))) < 1e-14
    tiny = blocks_within(G, 1)  # one row at least
    assert tiny.block_rows() == 1 and pass_block_bytes(tiny) > 1
    assert blocks_within(np.ones((3, 3)), 1).shape == (3, 3)
    assert pass_block_bytes(np.ones((3, 3))) == 0


def test_blocks_within_counts_the_normalisers_over_another_reference_set():
    # κ(X_I, X_J) normalised over all of X: its normaliser pass is |I| × |X|, not |I| × |J|
    from asymkern.linalg.svd import blocks_within, pass_block_bytes

    X = np.random.default_rng(9).standard_normal((2000, 3))
    G = KernelMatrix("sne", X[:50], X[:50], reference=X, working_memory=512)
    assert pass_block_bytes(G) >= 3 * 8 * 50 * 2000
    H = blocks_within(G, 2**18)
    assert pass_block_bytes(H) <= 2**18
    assert _rel(H.to_array(), G.to_array()) < 1e-14
