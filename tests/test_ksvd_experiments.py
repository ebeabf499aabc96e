"""Paper 000 KSVD experiments: embeddings, biclustering metrics, loaders, a3, quick runs."""

import sys

import numpy as np
import pytest
import scipy.sparse as sp

from asymkern.datasets import DataNotFoundError
from asymkern.datasets.bcot import load_bcot
from asymkern.datasets.graphs import directed_sbm, row_normalized_adjacency
from asymkern.experiments import ksvd_biclustering as bic
from asymkern.experiments import ksvd_general as gen
from asymkern.experiments import ksvd_graphs as kg
from asymkern.testing import requires_data

# ----------------------------------------------------------------------------- graph embeddings


@pytest.fixture(scope="module")
def sbm():
    A, y = directed_sbm(n_per_class=30, n_classes=3, random_state=0)
    return A, y, row_normalized_adjacency(A)


def test_normalize_embedding(rng):
    E = rng.standard_normal((50, 4)) * 7
    N = kg.normalize_embedding(E)
    assert np.mean(np.sum(N**2, axis=1)) == pytest.approx(1.0)
    np.testing.assert_allclose(N / N[0, 0], E / E[0, 0])


def test_embedding_shapes(sbm):
    _, _, An = sbm
    n, r = An.shape[0], 5
    assert kg.embed("PCA", An, r).shape == (n, r)
    assert kg.embed("SVD", An, r).shape == (n, 2 * r)
    assert kg.embed("KPCA", An, r, bandwidth=1.0).shape == (n, r)
    assert kg.embed("KSVD", An, r, bandwidth=1.0).shape == (n, 2 * r)
    with pytest.raises(ValueError, match="unknown method"):
        kg.embed("HOPE", An, r)


def test_ksvd_graph_embedding_matches_dense_reference(sbm):
    # KSVD embedding = [UΣ, VΣ] of the centred SNE kernel between rows and columns of Â
    _, _, An = sbm
    X = An.toarray()
    bw, r = 0.8, 4
    Z = X.T
    D2 = (X**2).sum(1)[:, None] + (Z**2).sum(1)[None, :] - 2 * X @ Z.T
    K = np.exp(-D2 / bw**2)
    G = K / K.sum(1, keepdims=True)
    G = G - G.mean(1, keepdims=True) - G.mean(0, keepdims=True) + G.mean()
    s = np.linalg.svd(G, compute_uv=False)[:r]
    E = kg.embed("KSVD", An, r, bandwidth=bw)
    # column norms of UΣ and VΣ are the singular values (float32 kernel: loose tolerance)
    np.testing.assert_allclose(np.linalg.norm(E[:, :r], axis=0), s, rtol=2e-3)
    np.testing.assert_allclose(np.linalg.norm(E[:, r:], axis=0), s, rtol=2e-3)


def test_pca_embedding_matches_numpy(sbm):
    _, _, An = sbm
    X = An.toarray()
    Xc = X - X.mean(0)
    U, s, _ = np.linalg.svd(Xc, full_matrices=False)
    E = kg.embed("PCA", An, 3)
    np.testing.assert_allclose(np.abs(E), np.abs(U[:, :3] * s[:3]), atol=1e-8)


def test_reference_bandwidth_sparse_dense_agree(sbm):
    _, _, An = sbm
    assert kg.reference_bandwidth(An) == pytest.approx(kg.reference_bandwidth(An.toarray()))


# ----------------------------------------------------------------------------- biclustering


def _coherence_reference(X, labels):
    C = X.T @ X
    tot = C.sum()
    M = C.shape[0]
    P = np.zeros_like(C, dtype=float)
    for i in range(M):
        for j in range(M):
            den = C[i].sum() * C[:, j].sum()
            if C[i, j] > 0 and den > 0:
                P[i, j] = np.log(C[i, j] * tot / den)
    val = 0.0
    for k in np.unique(labels):
        a = labels == k
        inter = P[a][:, ~a].mean() if (~a).any() else 0.0
        val += (P[a][:, a].mean() - inter) * a.sum() / M
    return val


def test_term_coherence_matches_reference(rng):
    X = (rng.random((30, 8)) < 0.3).astype(float)
    X[:, 7] = 0  # a term that never occurs: PMI 0 by convention
    labels = rng.integers(0, 3, 8)
    assert bic.term_coherence(sp.csr_matrix(X), labels) == pytest.approx(
        _coherence_reference(X, labels)
    )


def test_term_coherence_rewards_planted_clusters(rng):
    # documents use terms of one topic only: topic-aligned term clusters are coherent
    topics = rng.integers(0, 2, 60)
    X = np.zeros((60, 10))
    for d, t in enumerate(topics):
        X[d, rng.choice(5, 3, replace=False) + 5 * t] = 1
    planted = np.repeat([0, 1], 5)
    shuffled = rng.permutation(planted)
    assert bic.term_coherence(X, planted) > bic.term_coherence(X, shuffled)
    with pytest.raises(ValueError, match="term_labels"):
        bic.term_coherence(X, planted[:5])


def test_embed_pair_shapes(rng):
    X = sp.csr_matrix((rng.random((40, 15)) < 0.3).astype(float))
    for method in bic.METHODS:
        Ed, Et, _ = bic.embed_pair(method, X, 3)
        assert Ed.shape == (40, 3) and Et.shape == (15, 3)
        assert np.all(np.isfinite(Ed)) and np.all(np.isfinite(Et))


def test_load_bcot_errors():
    with pytest.raises(DataNotFoundError, match="PubMed"):
        load_bcot("pubmed")
    with pytest.raises(ValueError, match="unknown"):
        load_bcot("ng20")


@requires_data("bcot/acm/acm.mat")
@pytest.mark.parametrize("name,shape,k", [("acm", (3025, 1870), 3), ("dblp", (4057, 334), 4),
                                          ("wiki", (2405, 4973), 17)])
def test_load_bcot_real(name, shape, k):
    ds = load_bcot(name)
    assert ds.X.shape == shape and sp.issparse(ds.X)
    assert ds.labels.min() == 0 and ds.n_document_clusters == k


# ----------------------------------------------------------------------------- general data


def test_general_embeddings_and_ablation(rng):
    X = rng.standard_normal((80, 5))
    y = (X[:, 0] + X[:, 1] ** 2 > 1).astype(int)
    Xtr, Xte = X[:60], X[60:]
    for col in gen.COLUMNS:
        if col.endswith("a3"):
            continue
        Ftr, Fte, bw = gen._embed_fixed(col, Xtr, Xte, 1.0, 0)
        assert Ftr.shape == (60, gen.R) and Fte.shape == (20, gen.R) and bw > 0
    a, b = gen._table5(Xtr, y[:60], Xte, y[60:], "classification", 0)
    assert 0 <= a <= 1 and 0 <= b <= 1


# ----------------------------------------------------------------------------- learnable a3


def test_learnable_compat_loss_decreases(rng):
    pytest.importorskip("torch")
    from asymkern.experiments.learnable_compat import fit_learnable_compat

    X = rng.standard_normal((60, 4))
    y = X[:, 0] ** 2 + X[:, 1]
    Z0 = X.T @ np.linalg.svd(X, full_matrices=False)[0]
    bw = float(np.median(np.linalg.norm(X[:, None] - Z0[None], axis=-1)))
    res = fit_learnable_compat(X, y, task="regression", kernel="sne", bandwidth=bw,
                               n_components=3, n_iter=150, lr=0.02, seed=0)
    assert np.mean(res.losses[-10:]) < 0.8 * np.mean(res.losses[:10])
    C0 = np.linalg.svd(X, full_matrices=False)[0]
    assert not np.allclose(res.C, C0)  # the gradient reached C
    np.testing.assert_allclose(res.Z, X.T @ res.C)
    pred = res.predict(X[:7])
    assert pred.shape == (7,) and np.all(np.isfinite(pred))
    # V is orthonormal (from an SVD) and the head sees G V of the final C
    np.testing.assert_allclose(res.V.T @ res.V, np.eye(3), atol=1e-10)


def test_learnable_compat_classification_and_errors(rng):
    pytest.importorskip("torch")
    from asymkern.experiments.learnable_compat import fit_learnable_compat

    X = rng.standard_normal((50, 3))
    y = np.where(X[:, 0] > 0, "a", "b")
    res = fit_learnable_compat(X, y, kernel="rbf", bandwidth=4.0, n_components=2, n_iter=60,
                               lr=0.02, batch_size=20)
    assert set(res.predict(X)) <= {"a", "b"}
    assert res.losses[-1] < res.losses[0]
    with pytest.raises(ValueError, match="kernel"):
        fit_learnable_compat(X, y, kernel="poly", n_components=2)
    with pytest.raises(ValueError, match="n_components"):
        fit_learnable_compat(X, y, n_components=5)
    with pytest.raises(ValueError, match="C_init"):
        fit_learnable_compat(X, y, n_components=2, C_init=np.zeros((3, 3)))


def test_learnable_compat_without_torch(monkeypatch, rng):
    from asymkern.experiments import learnable_compat

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"asymkern\[torch\]"):
        learnable_compat.fit_learnable_compat(rng.standard_normal((10, 2)), np.arange(10) % 2)


# ----------------------------------------------------------------------------- quick runs

GRAPH_COLS = {"dataset", "method", "micro_f1", "macro_f1", "paper_micro", "paper_macro", "l1",
              "l2", "paper_l1", "paper_l2", "bandwidth"}


@requires_data("cora/cora.npz")
def test_ksvd_graphs_quick(tmp_path):
    rep = kg.run(quick=True, out=tmp_path)
    rows = rep.tables["Table 1"]
    assert [r["method"] for r in rows] == list(kg.METHODS)
    for r in rows:
        assert GRAPH_COLS <= set(r)
        assert 0 <= r["micro_f1"] <= 1 and r["l1"] >= 0
    assert all(p.endswith(".png") for p in rep.figures)
    assert "QUICK" in rep.protocol


@requires_data("bcot/dblp/DBLP.mat")
def test_ksvd_biclustering_quick():
    rep = bic.run(quick=True)
    rows = rep.tables["Table 2 (bandwidth = median distance)"]
    assert [r["method"] for r in rows] == list(bic.METHODS)
    for r in rows:
        assert {"dataset", "method", "NMI", "Coh", "paper_NMI", "paper_Coh"} <= set(r)
        assert 0 <= r["NMI"] <= 1 and np.isfinite(r["Coh"])
    assert rep.quick and "QUICK RUN" in rep.protocol
    assert not any("PubMed" in n for n in rep.notes)  # the full run's notes are not carried


@requires_data("uci/yacht/yacht_hydrodynamics.data")
def test_ksvd_general_quick():
    rep = gen.run(quick=True)
    rows = rep.tables["Table 3"]
    assert {r["source"] for r in rows} == {"ours", "paper"}
    for r in rows:
        assert {"dataset", "metric", *gen.COLUMNS} <= set(r)
    ours = [r for r in rows if r["source"] == "ours"]
    for r in ours:
        fixed = [r[c] for c in gen.COLUMNS if not c.endswith("a3")]
        assert np.all(np.isfinite(fixed))
    t5 = rep.tables["Table 5 (ablation)"]
    assert {"Nonlinear+SVD", "KSVD (poly)", "paper KSVD"} <= set(t5[0])


# ----------------------------------------------------------------- compatibility a1 corrected


def _polar_reference(T):
    """Orthonormal polar factor of T (big × small) from numpy's SVD: T = U S Vᵀ → U Vᵀ."""
    U, _, Vt = np.linalg.svd(T, full_matrices=False)
    return U @ Vt


@pytest.mark.parametrize("shape", [(5, 9), (9, 5)])
def test_compat_a1c_is_polar_factor_and_a1_unchanged(shape):
    from asymkern.kernels import CompatibilityTransform

    A = np.random.default_rng(3).standard_normal(shape)
    ct = CompatibilityTransform("a1c").fit(A)
    T = A.T if ct.side_ == "x" else A
    np.testing.assert_allclose(ct.C_, _polar_reference(T), atol=1e-12)
    # the mapped set is (S Sᵀ)^{1/2}: symmetric PSD with square = S Sᵀ
    S = T.T
    mapped = S @ ct.C_
    np.testing.assert_allclose(mapped, mapped.T, atol=1e-12)
    np.testing.assert_allclose(mapped @ mapped, S @ S.T, atol=1e-10)
    # a1 (as printed) is still the leading singular vectors: C = V with S C = W Σ
    a1 = CompatibilityTransform("a1").fit(A).C_
    _, s, Vt = np.linalg.svd(S, full_matrices=False)
    np.testing.assert_allclose(np.abs(a1), np.abs(Vt.T), atol=1e-10)
    np.testing.assert_allclose(np.linalg.svd(S @ a1, compute_uv=False), s, atol=1e-10)


def test_compat_a1c_maps_both_sets_into_sample_coordinates():
    """Defining property: permuting the samples (rows of A, M > N) permutes the coordinates of
    the mapped rows exactly as it permutes those of the columns z_j; a1 as printed does not."""
    from asymkern.kernels import CompatibilityTransform, KernelMatrix, get_kernel

    rng = np.random.default_rng(4)
    A = rng.standard_normal((6, 11))
    perm = rng.permutation(6)
    X, Z = CompatibilityTransform("a1c").fit_transform(A)
    Xp, Zp = CompatibilityTransform("a1c").fit_transform(A[perm])
    np.testing.assert_allclose(Zp, Z[:, perm])                       # z: coordinates permuted
    np.testing.assert_allclose(Xp, X[perm][:, perm], atol=1e-12)     # x: the same permutation
    kern = get_kernel("rbf", bandwidth=3.0)
    K = KernelMatrix(kern, X, Z).to_array()
    Kp = KernelMatrix(kern, Xp, Zp).to_array()
    np.testing.assert_allclose(Kp, K[perm], atol=1e-12)              # kernel: rows permuted
    X1, Z1 = CompatibilityTransform("a1").fit_transform(A)
    X1p, Z1p = CompatibilityTransform("a1").fit_transform(A[perm])
    K1 = KernelMatrix(kern, X1, Z1).to_array()
    K1p = KernelMatrix(kern, X1p, Z1p).to_array()
    assert not np.allclose(K1p, K1[perm], atol=1e-3)                 # a1: not equivariant


def test_compat_a1c_sparse_rank_deficient_and_invariance():
    from asymkern.kernels import CompatibilityTransform

    rng = np.random.default_rng(5)
    A = rng.standard_normal((4, 3)) @ rng.standard_normal((3, 8))     # rank 3 < N = 4
    A_in = A.copy()
    ct = CompatibilityTransform("polar").fit(A)
    np.testing.assert_array_equal(A, A_in)                             # input not modified
    U, s, Vt = np.linalg.svd(A.T, full_matrices=False)
    np.testing.assert_allclose(ct.C_, U[:, :3] @ Vt[:3], atol=1e-10)  # partial isometry
    cts = CompatibilityTransform("a1c").fit(sp.csr_matrix(A))
    np.testing.assert_allclose(cts.C_, ct.C_, atol=1e-10)
    # an orthogonal change of the feature basis (A ↦ A Q) rotates C and leaves A C unchanged
    Q, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    ctq = CompatibilityTransform("a1c").fit(A @ Q)
    np.testing.assert_allclose(ctq.C_, Q.T @ ct.C_, atol=1e-10)
    with pytest.raises(ValueError, match="polar"):
        CompatibilityTransform("a9").fit(A)


def test_compat_a1c_dask_matches_in_memory():
    pytest.importorskip("dask")
    import dask.array as da

    from asymkern._dask.compat import DaskCompatibility
    from asymkern.kernels import CompatibilityTransform

    A = np.random.default_rng(6).standard_normal((40, 7))             # side 'z'
    ref = CompatibilityTransform("a1c").fit(A)
    dct = DaskCompatibility("a1c").fit(da.from_array(A, chunks=(10, 7)))
    np.testing.assert_allclose(np.asarray(dct.mapped_), A.T @ ref.C_, atol=1e-10)
    Zd = dct.transform_z(da.from_array(A.T.copy(), chunks=(4, 40)))
    np.testing.assert_allclose(np.asarray(Zd), ref.transform_z(A.T), atol=1e-10)


def test_biclustering_compat_rows(rng):
    X = sp.csr_matrix((rng.random((30, 12)) < 0.3).astype(float))
    for comp in ("a0", "a1", "a1c", "a2"):
        Ed, Et, bw = bic.embed_pair("KSVD", X, 3, compat_method=comp)
        assert Ed.shape == (30, 3) and Et.shape == (12, 3) and np.isfinite(bw)


@requires_data("bcot/dblp/DBLP.mat")
def test_ksvd_biclustering_quick_all_compats():
    rep = bic.run(quick=True, compats=("a0", "a1", "a1c", "a2"))
    rows = rep.tables["Table 2 (bandwidth = median distance)"]
    ksvd = [r for r in rows if r["method"] == "KSVD"]
    assert [r["compat"] for r in ksvd] == ["a0", "a1", "a1c", "a2"]
    assert all(0 <= r["NMI"] <= 1 for r in ksvd)
    assert any("Run time" in n for n in rep.notes)


@requires_data("uci/yacht/yacht_hydrodynamics.data")
def test_ksvd_general_quick_a1c_columns():
    cols = ("SNE a1", "SNE a1c")
    rep = gen.run(quick=True, columns=cols, with_a3=False, with_table5=False)
    t3 = [r for r in rep.tables["Table 3"] if r["dataset"] == "Yacht"]
    ours = [r for r in t3 if r["source"] == "ours"][0]
    assert all(np.isfinite(ours[c]) for c in cols) and "RBF a0" not in ours
    paper = [r for r in t3 if r["source"] == "paper"][0]
    assert np.isnan(paper["SNE a1c"]) and paper["SNE a1"] == gen.PAPER_TABLE3["yacht"][6]
    with pytest.raises(ValueError, match="unknown columns"):
        gen.run_dataset("yacht", quick=True, columns=("SNE a9",))


@requires_data("cora/cora.npz")
def test_ksvd_graphs_quick_both_orientations():
    rep = kg.run(quick=True, orientations=("cites", "cited_by"), r=8, grid=(1.0,), trials=2)
    rows = rep.tables["Table 1"]
    assert [r["orientation"] for r in rows] == ["cites"] * 4 + ["cited_by"] * 4
    assert all(r["r"] == 8 and 0 <= r["micro_f1"] <= 1 for r in rows)
    assert "overrides" in rep.protocol
    with pytest.raises(ValueError, match="orientation"):
        kg.run_dataset("cora", quick=True, orientation="sideways")
