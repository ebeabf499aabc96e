"""Predictions, transforms and landmark selections that the ``max_dense_memory`` check lets
run stay within it, whatever ``working_memory`` says (the conventions of
``tests/test_budget_small.py``).

Each case runs once under a generous budget (the reference, and the warm-up of one-time
allocations) and once under a tight one with ``working_memory`` at its default 512 MiB,
traced with ``tracemalloc``: it runs with a peak within the budget (a margin of 10 % for
what is counted but not traced exactly) and the results of the generous run to rounding
(the new points and the kernel blocks only come in smaller pieces), or refuses with
:class:`MemoryBudgetError` naming the budget. Before these checks the passes of the
predictions used blocks of ``working_memory`` and formed K(Z, C) or the features of every
new point at once: 4 to 190 times the budgets below.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _budget import rel as _rel
from _budget import run as _run
from _budget import within as _within

from asymkern import KernelSVD, config_context
from asymkern.config import MemoryBudgetError
from asymkern.kernels import KernelMatrix
from asymkern.linalg import asymmetric_nystrom, symmetric_nystrom
from asymkern.lssvm import AsKLSClassifier, LSSVMClassifier
from asymkern.nystrom import NystromKernelPCA, NystromKernelRidge, NystromSVC


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1200, 4))
    y = (X[:, 0] + 0.3 * rng.standard_normal(1200) > 0).astype(int)
    Xq = rng.standard_normal((8000, 4))
    return X, y, Xq


# ------------------------------------------------------------------------ Nyström machines
@pytest.mark.parametrize("mode, landmarks", [("lla", "uniform"), ("gsa", "uniform"),
                                             ("exact", "uniform"), ("lla", "gaussian")])
def test_nystrom_ridge_predictions_within_the_budget(data, mode, landmarks):
    # K(Z, C) of the 8000 new points (3.1 MiB) was formed at once; GSA's and exact's
    # K(Z, X_fit) came in one 73 MiB block, a sketch's K(Z, X_fit) S too
    X, _, Xq = data
    est = NystromKernelRidge(mode=mode, n_landmarks=50, landmarks=landmarks,
                             random_state=0).fit(X, X[:, 0] - X[:, 1])
    ref, out = _within(lambda: est.predict(Xq), 1.0)
    assert _rel(out, ref) < 1e-12


@pytest.mark.parametrize("mode", ["lla", "gsa", "spa", "exact"])
def test_nystrom_svc_decisions_within_the_budget(data, mode):
    # the features of every new point (8000×50, or 8000×1200 for SPA and exact) and their
    # kernel blocks were formed at once
    X, y, Xq = data
    est = NystromSVC(mode=mode, n_landmarks=50, random_state=0).fit(X, y)
    ref, out = _within(lambda: est.decision_function(Xq), 1.0)
    assert _rel(out, ref) < 1e-12
    labels, _ = _run(lambda: est.predict(Xq), 1.0)
    assert labels is not None and np.array_equal(labels, est.predict(Xq))


@pytest.mark.parametrize("mode", ["ncr", "gsa"])
def test_nystrom_kpca_transform_within_the_budget(data, mode):
    X, _, Xq = data
    est = NystromKernelPCA(3, mode=mode, n_landmarks=50, random_state=0).fit(X)
    ref, out = _within(lambda: est.transform(Xq), 1.0)
    assert _rel(out, ref) < 1e-12


def test_gsa_predictions_refuse_when_one_row_does_not_fit(data):
    X, _, Xq = data
    est = NystromKernelRidge(mode="gsa", n_landmarks=50, random_state=0).fit(X, X[:, 0])
    # the 8000 predictions (twice) alone are 0.12 MiB
    with config_context(max_dense_memory=0.05):
        with pytest.raises(MemoryBudgetError, match="max_dense_memory is 0.05 MiB"):
            est.predict(Xq)


# -------------------------------------------------------------------------------- KernelSVD
@pytest.mark.parametrize("solver", ["randomized", "nystrom"])
@pytest.mark.parametrize("kernel, center", [("rbf", True), ("sne", False)])
@pytest.mark.parametrize("left", [True, False])
def test_ksvd_transforms_within_the_budget(data, solver, kernel, center, left):
    # the 8000×1000 kernel of the new points was one 61 MiB block at working_memory=512
    X, _, Xq = data
    Z = np.random.default_rng(1).standard_normal((1000, 4))
    est = KernelSVD(3, kernel=kernel, solver=solver, center=center,
                    random_state=0).fit(X, Z=Z)
    call = (lambda: est.transform(Xq)) if left else (lambda: est.transform_right(Xq))
    ref, out = _within(call, 1.0)
    assert _rel(out, ref) < 1e-10


# -------------------------------------------------------------------------- AsK-LS, LS-SVM
@pytest.mark.parametrize("kernel, nystrom", [("rbf", None), ("sne", None), ("sne", 5)])
def test_askls_decisions_within_the_budget(data, kernel, nystrom):
    # K(Z, X) (73 MiB) in one block; the SNE normalisers of the 8000 new points over the
    # training set in blocks of working_memory / 16 (100 times the budget)
    # (the one-row blocks of the pass over the 1200×8000 K(X, Z) and their data copies
    # take 0.9 MiB: below 1.1 MiB the call refuses)
    X, y, Xq = data
    est = AsKLSClassifier(kernel=kernel, nystrom=nystrom, random_state=0).fit(X, y)
    ref, out = _within(lambda: est.decision_function(Xq), 2.0)
    assert _rel(out, ref) < 1e-10


def test_lssvm_decisions_within_the_budget(data):
    X, y, Xq = data
    est = LSSVMClassifier().fit(X, y)
    ref, out = _within(lambda: est.decision_function(Xq), 1.0)
    assert _rel(out, ref) < 1e-10


# ------------------------------------------------------- landmark selection, symmetric Nyström
@pytest.mark.parametrize("kernel", ["rbf", "sne"])
def test_asymmetric_nystrom_leverage_passes_within_the_budget(kernel):
    # the leverage sketch's passes took blocks of all 20000 rows (23 times a 4 MiB budget)
    # before the landmark check ran
    X = np.random.default_rng(2).standard_normal((20000, 3))

    def call():
        res = asymmetric_nystrom(KernelMatrix(kernel, X), 5, 100, 100, random_state=0,
                                 sampling="leverage")
        return res.s

    ref, out = _within(call, 8.0)
    assert _rel(out, ref) < 1e-10


def test_asymmetric_nystrom_leverage_refuses_before_its_passes():
    # the sketch's Gram matrix and the 20000 scores with one-row blocks fit 0.5 MiB, but
    # not the landmark core's check after them: refused before the passes now (the old
    # check refused after passes of 4.5 MiB blocks)
    X = np.random.default_rng(3).standard_normal((20000, 3))
    out, err = _run(lambda: asymmetric_nystrom(KernelMatrix("rbf", X), 5, 100, 100,
                                               random_state=0, sampling="leverage"), 0.25)
    assert out is None and isinstance(err, MemoryBudgetError)
    assert "leverage-score landmark sampling" in str(err), str(err)
    assert "max_dense_memory is 0.25 MiB" in str(err)


@pytest.mark.parametrize("sampling", ["uniform", "leverage"])
def test_symmetric_nystrom_passes_within_the_budget(sampling):
    # its last pass took full rows of G in one 92 MiB block (12 times an 8 MiB budget)
    rng = np.random.default_rng(4)
    G = KernelMatrix("sne", rng.standard_normal((4000, 3)), rng.standard_normal((3000, 3)))

    def call():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return symmetric_nystrom(G, 5, 50, 50, random_state=0, sampling=sampling).s

    ref, out = _within(call, 8.0)
    assert _rel(out, ref) < 1e-10

