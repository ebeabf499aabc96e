"""The kernel machines' fits and predictions that the ``max_dense_memory`` check lets run stay
within it: NystromSVC in modes 'lla' and 'ncr', and AsKLSClassifier with a Nyström solver and
a row-normalised kernel (the conventions of ``tests/test_budget_predict.py``).

Each case runs under a tight budget with ``working_memory`` at its default 512 MiB, traced
with ``tracemalloc`` (numpy's arrays are traced; the inputs are allocated before the trace
starts): it runs with a peak within the budget (a margin of 10 % for what is counted but not
traced exactly) and the results of a run under a generous budget, or refuses with
:class:`MemoryBudgetError` naming the budget. Before these checks:

* NystromSVC(mode='lla' / 'ncr') was checked only for its landmark basis: the pass forming
  the features F = K(X, C)A took blocks of 2048 rows of K_nm with the data copies of the
  kernel evaluation, beside X's copy and F (1.2 to 1.6 times the budgets below), and
  liblinear's own copy of F (16 bytes an entry, not traced) was not counted;
* the prediction passes of AsKLSClassifier(kernel='sne', nystrom=r), and the predictor pass
  of its fit, held one kernel block more than counted: the log-normalisers of a block are
  streamed over the training set (a block-sized chunk and two temporaries) while the loop
  consuming the blocks still holds the previous block (1.2 to 1.3 times the budgets below);
* ``landmarks='gaussian'`` formed its sketch K S in blocks of ``working_memory`` (the whole
  n × n kernel at these sizes).
"""

from __future__ import annotations

import numpy as np
import pytest
from _budget import MARGIN
from _budget import rel as _rel
from _budget import run as _run
from _budget import within as _within

from asymkern._shared.nystrom_predict import pass_within
from asymkern.config import MemoryBudgetError
from asymkern.kernels import KernelMatrix
from asymkern.linalg.svd import pass_block_bytes
from asymkern.lssvm import AsKLSClassifier
from asymkern.nystrom import NystromSVC


def _classes(n: int, d: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return X, y


# ------------------------------------------------------------- NystromSVC, modes 'lla', 'ncr'
@pytest.mark.parametrize("mode", ["lla", "ncr"])
@pytest.mark.parametrize("d, m, budget", [(10, 14, 1.0), (40, 10, 2.0)])
def test_nystrom_svc_features_within_the_budget(mode, d, m, budget):
    # the features' pass took blocks of 2048 rows of K_nm and their data copies beside X's
    # copy and F: 1.19 MiB under 1 MiB (d=10), 2.66 MiB under 2 MiB (d=40)
    X, y = _classes(3000, d, 0)
    Xq = _classes(400, d, 1)[0]

    def fit():
        return NystromSVC(mode=mode, n_landmarks=m, svm="svc", random_state=0).fit(X, y)

    ref, est = _within(fit, budget)
    # the same features (only the blocks forming them are smaller): the same machine
    assert np.mean(est.predict(Xq) == ref.predict(Xq)) >= 0.99
    assert _rel(est.decision_function(Xq), ref.decision_function(Xq)) < 1e-6


@pytest.mark.parametrize("mode", ["lla", "ncr"])
def test_nystrom_svc_counts_liblinears_copy_of_the_features(mode):
    # liblinear copies F into 16-byte entries (0.7 MiB here, not traced): with X's copy, F
    # and the blocks forming F the fit needs 1.3 MiB, and ran under 1 MiB before
    X, y = _classes(3000, 10, 0)
    out, err = _run(lambda: NystromSVC(mode=mode, n_landmarks=14, svm="linearsvc",
                                       random_state=0).fit(X, y), 1.0)
    assert out is None and isinstance(err, MemoryBudgetError)
    assert f"NystromSVC(mode='{mode}', n_landmarks=14) on 3000 samples" in str(err), str(err)
    assert "max_dense_memory is 1 MiB" in str(err), str(err)
    # what fits: the budget the message asks for
    est, peak = _run(lambda: NystromSVC(mode=mode, n_landmarks=14, svm="linearsvc",
                                        random_state=0).fit(X, y), 1.5)
    assert est is not None, peak
    assert peak <= 1.5 * 2**20 * MARGIN


# ------------------------------------------------- AsK-LS with a row-normalised kernel (SNE)
@pytest.fixture(scope="module")
def sne_askls():
    X, y = _classes(2000, 2, 2)
    return AsKLSClassifier(kernel="sne", nystrom=20, random_state=0).fit(X, y)


@pytest.mark.parametrize("budget", [8.0, 16.0])
def test_askls_sne_decisions_count_the_streamed_block(sne_askls, budget):
    # K(Z, X[J]) of 4000 new points against 200 landmarks, each block's normalisers streamed
    # over the 2000 training points: 10.2 MiB under 8 MiB, 20.8 MiB under 16 MiB
    Xq = _classes(4000, 2, 3)[0]
    ref, out = _within(lambda: sne_askls.decision_function(Xq, return_parts=True), budget)
    assert _rel(out[0], ref[0]) < 1e-10 and _rel(out[1], ref[1]) < 1e-10


def test_askls_sne_nystrom_fit_within_the_budget():
    # the predictor's pass over K(X, X[J]) with the normalisers streamed over X: 3.6 MiB
    # under 3 MiB
    X, y = _classes(2000, 2, 4)
    Xq = _classes(50, 2, 5)[0]

    def fit():
        return AsKLSClassifier(kernel="sne", nystrom=10, random_state=0).fit(X, y)

    ref, est = _within(fit, 3.0)
    assert _rel(est.decision_function(Xq), ref.decision_function(Xq)) < 1e-10


@pytest.mark.parametrize("product, n_ref, n_new, k", [("matmat", 1500, 4000, 200),
                                                     ("rmatmat", 6000, 2000, 400)])
def test_pass_within_counts_the_streamed_block(product, n_ref, n_new, k):
    # blocks of K(Z, R[:k]) or K(R[:k], Z) with their normalisers streamed over R in chunks
    # as large as a block: 10.4 MiB (matmat) and 10.5 MiB (rmatmat) under 8 MiB
    rng = np.random.default_rng(6)
    R = rng.standard_normal((n_ref, 2))  # the reference set of the normalisers
    Z = rng.standard_normal((n_new, 2))
    V = rng.standard_normal((k, 1))
    budget = 8.0

    def matrix():  # the budget of a KernelMatrix is the setting when it is made
        return (KernelMatrix("sne", Z, R[:k], reference=R) if product == "matmat"
                else KernelMatrix("sne", R[:k], Z, reference=R))

    ref = getattr(matrix(), product)(V)

    def call():
        return getattr(pass_within(matrix(), 0.0, "a pass", "smaller blocks"), product)(V)

    out, peak = _run(call, budget)
    assert out is not None, peak
    assert peak <= budget * 2**20 * MARGIN, f"traced peak {peak / 2**20:.2f} MiB"
    assert _rel(out, ref) < 1e-10


def test_pass_bytes_count_the_previous_block_when_normalisers_stream():
    """A pass over a row-normalised kernel whose reference set is not its columns holds the
    previous block besides the three arrays of the streaming log-sum-exp (several blocks);
    with one block there is no previous one."""
    from asymkern.linalg.svd import PASS_BLOCK_ARRAYS

    rng = np.random.default_rng(7)
    R, Z = rng.standard_normal((300, 2)), rng.standard_normal((500, 2))
    streamed = KernelMatrix("sne", Z, R[:40], reference=R, working_memory=0.05)
    rows = streamed.block_rows()
    assert rows < 500
    lse_entries = max(rows * 40, 500 * min(300, int(0.05 * 2**20 // (500 * 16))))
    assert pass_block_bytes(streamed) >= (PASS_BLOCK_ARRAYS * 8 * lse_entries
                                          + 8 * rows * 40)
    whole = KernelMatrix("sne", Z, R[:40], reference=R)  # one block: none held beside
    assert pass_block_bytes(whole) < PASS_BLOCK_ARRAYS * 8 * 500 * 300 + 8 * 500 * 40


# ------------------------------------------------------------ landmarks='gaussian' (a sketch)
@pytest.mark.parametrize("machine", ["ridge", "svc"])
def test_gaussian_sketch_within_the_budget(machine):
    """The sketch K S of ``landmarks='gaussian'`` (Li, Liu and Zhang, §IV) was one pass over
    K in blocks of ``working_memory`` (the whole 3000 × 3000 kernel, 69 MiB, under a 6 MiB
    budget); its blocks now fit what S and K S leave of the budget."""
    from asymkern.nystrom import NystromKernelRidge

    X, y = _classes(3000, 10, 5)
    Xt = X[:40] + 0.05
    est = (NystromKernelRidge if machine == "ridge" else NystromSVC)(
        landmarks="gaussian", n_landmarks=40, random_state=0)

    def call():
        fit = est.fit(X, y)
        return fit.predict(Xt) if machine == "ridge" else fit.decision_function(Xt)

    ref, out = _within(call, 6.0)
    assert _rel(out, ref) < 1e-10
