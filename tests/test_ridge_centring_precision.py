"""Nyström kernel ridge with an intercept keeps its digits when the kernel varies little.

With ``fit_intercept=True`` the LLA, NCR and SPA solves need the centred Gram
M = Σᵢ wᵢ(kᵢ − k̄)(kᵢ − k̄)ᵀ of the landmark kernel rows. Formed as K_mn W K_nm − Σw·k̄k̄ᵀ (one
pass of sums, then the difference) it cancels most of its digits when the kernel is nearly
constant over the data (a wide bandwidth): the predictions lost up to 5 digits against the
same model solved with explicitly centred features. The sums are now centred block by block
and merged pairwise (Chan, Golub and LeVeque), on every executor; the blocks here are small
(``working_memory``) and the Dask chunks 20 rows, so the merge itself is exercised, with a
block of zero weights.
"""

from __future__ import annotations

import numpy as np
import pytest
from _backends import as_backend, to_np

from asymkern import config_context
from asymkern.nystrom import NystromKernelRidge


def _reference(est, X, y, Z, alpha, w):
    """The same model solved with two-pass centred features and a QR least-squares solve."""
    b = est.basis_
    K = b.landmark_kernel(X)
    kbar = w @ K / w.sum()
    ybar = w @ y / w.sum()
    G = (K - kbar) @ b.A
    s = G.shape[1]
    rw = np.sqrt(w)[:, None]
    lhs = np.vstack([rw * G, np.sqrt(alpha) * np.eye(s)])
    rhs = np.concatenate([rw[:, 0] * (y - ybar), np.zeros(s)])
    wh = np.linalg.lstsq(lhs, rhs, rcond=None)[0]
    return (b.landmark_kernel(Z) - kbar) @ b.A @ wh + ybar


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("gamma", [1e-6, 1e-3])
@pytest.mark.parametrize("mode", ["lla", "spa", "ncr"])
def test_wide_bandwidth_intercept_keeps_digits(any_backend, mode, gamma, weighted):
    rs = np.random.RandomState(0)
    n, alpha = 200, 1e-3
    X, Z = rs.randn(n, 5), rs.randn(30, 5)
    y = np.sin(X[:, 0]) + 0.1 * rs.randn(n)
    w = rs.rand(n) + 0.5 if weighted else np.ones(n)
    if weighted:
        w[40:60] = 0.0  # a whole block (and a Dask chunk) without weight
    kw = dict(mode=mode, n_landmarks=25, kernel="rbf", gamma=gamma, alpha=alpha,
              fit_intercept=True, random_state=0)
    with config_context(working_memory=0.05):  # blocks of a few dozen rows
        est = NystromKernelRidge(**kw).fit(
            as_backend(X, any_backend), as_backend(y, any_backend),
            sample_weight=as_backend(w, any_backend) if weighted else None)
        pred = to_np(est.predict(as_backend(Z, any_backend)))
    ref = _reference(NystromKernelRidge(**kw).fit(X, y), X, y, Z, alpha, w)
    spread = np.abs(ref - ref.mean()).max()
    # NCR's m × m pseudo-inverse of M + αK_mm is cut at m·eps: a few digits fewer than LLA's
    # s × s solve (before the centred sums: 5e-5 for both)
    limit = 1e-6 if mode == "ncr" else 1e-8
    assert np.abs(pred - ref).max() / spread < limit


def test_sketch_rows_survive_the_centred_sums():
    """The centred sums overwrite each block of K_nm; a Gaussian sketch's formed K S is read
    again afterwards (SPA's dual), so its rows are handed out as copies: the dual is
    (y_c − (K S − 1k̄ᵀ)β)/α of the untouched K S."""
    rs = np.random.RandomState(1)
    X = rs.randn(150, 4)
    y = np.cos(X[:, 1]) + 0.1 * rs.randn(150)
    est = NystromKernelRidge(mode="spa", n_landmarks=12, landmarks="gaussian", kernel="rbf",
                             gamma=0.2, alpha=0.05, fit_intercept=True,
                             random_state=0).fit(X, y)
    KS = est.basis_.landmark_kernel(X)
    r = (KS - KS.mean(0)) @ est.landmark_coef_
    np.testing.assert_allclose(est.dual_coef_, ((y - y.mean())[:, None] - r) / 0.05,
                               rtol=1e-9, atol=1e-9)
