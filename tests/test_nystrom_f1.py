"""Figures 5–6 study of paper 000 (KSVD + asymmetric Nyström vs KPCA + symmetric Nyström):
both Nyström embeddings equal the exact ones when every point is a landmark; quick run."""

from __future__ import annotations

import numpy as np

from asymkern.experiments.nystrom_f1 import (
    kpca_nystrom_embedding,
    ksvd_nystrom_embedding,
    run_f1_study,
)
from asymkern.kernels import KernelMatrix, get_kernel
from asymkern.testing import requires_data


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((60, 5)), rng.standard_normal((60, 5)) + 0.3


def test_kpca_nystrom_with_all_landmarks_is_exact():
    X, _ = _data()
    K = KernelMatrix(get_kernel("rbf", bandwidth=2.0), X)
    r = 6
    E = kpca_nystrom_embedding(K, r, X.shape[0], seed=0)
    lam, W = np.linalg.eigh(K.to_array())
    lam, W = lam[::-1][:r], W[:, ::-1][:, :r]
    # sign-free comparison: the score Gram matrices E Eᵀ = W Λ Wᵀ
    np.testing.assert_allclose(E @ E.T, (W * lam) @ W.T, atol=1e-9)


def test_ksvd_nystrom_with_all_landmarks_is_exact():
    X, Z = _data(1)
    G = KernelMatrix(get_kernel("rbf", bandwidth=2.0), X, Z)
    r = 5
    E = ksvd_nystrom_embedding(G, r, X.shape[0], seed=0)
    U, s, Vt = np.linalg.svd(G.to_array())
    Eu, Ev = E[:, :r], E[:, r:]
    np.testing.assert_allclose(Eu @ Eu.T, (U[:, :r] * s[:r] ** 2) @ U[:, :r].T, atol=1e-9)
    np.testing.assert_allclose(Ev @ Ev.T, (Vt[:r].T * s[:r] ** 2) @ Vt[:r], atol=1e-9)
    # and the two blocks are paired (same sign per component): Eu Evᵀ = U Σ² Vᵀ
    np.testing.assert_allclose(Eu @ Ev.T, (U[:, :r] * s[:r] ** 2) @ Vt[:r], atol=1e-9)


@requires_data("cora")
def test_quick_f1_study_runs_on_cora(tmp_path):
    figs = []
    rows, chosen = run_f1_study(["cora"], quick=True, out=tmp_path, figures=figs)
    assert [r["m"] for r in rows] == [32, 64, 128, "exact"]
    for r in rows:
        for key in ("KSVD micro", "KSVD macro", "KPCA micro", "KPCA macro"):
            assert 0.0 <= r[key] <= 1.0
    assert {c["method"] for c in chosen} == {"KSVD", "KPCA"}
    assert figs and (tmp_path / "nystrom_fig5_6_f1.png").exists()


@requires_data("cora")
def test_quick_f1_study_cited_by_single_bandwidth():
    rows, chosen = run_f1_study(["cora"], quick=True, m_grid=[32], mults=(2.0,),
                                orientation="cited_by", n_trials=1)
    assert [r["m"] for r in rows] == [32, "exact"]
    assert all(r["orientation"] == "cited_by" for r in rows + chosen)
    assert [r["r"] for r in rows] == [16, 16]
    assert {c["bandwidth / γ0"] for c in chosen} == {2.0}
