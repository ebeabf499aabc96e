"""Directed-graph protocols: LS-SVM node classification, k_v-NN graph reconstruction, norms."""

import numpy as np
import pytest
import scipy.sparse as sp

from asymkern.graphs import (
    graph_reconstruction,
    lssvm_classifier,
    matrix_norm_errors,
    node_classification,
    reconstruct_adjacency,
    select_by_cv,
)


def test_lssvm_classifier_matches_lssvm_linear_system(rng):
    # LS-SVM (linear kernel, ±1 targets): [0 1ᵀ; 1 K + I/γ] [b; α] = [0; y], w = Xᵀα
    X = rng.standard_normal((40, 3))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(40) > 0, 1.0, -1.0)
    gamma = 0.7
    n = len(y)
    A = np.zeros((n + 1, n + 1))
    A[0, 1:] = A[1:, 0] = 1.0
    A[1:, 1:] = X @ X.T + np.eye(n) / gamma
    sol = np.linalg.solve(A, np.concatenate([[0.0], y]))
    b, alpha = sol[0], sol[1:]
    w = X.T @ alpha
    clf = lssvm_classifier(gamma).fit(X, y)
    np.testing.assert_allclose(clf.coef_.ravel(), w, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(clf.intercept_[0], b, rtol=1e-8, atol=1e-10)


def test_node_classification_separable_and_random(rng):
    y = np.repeat(np.arange(3), 30)
    E = np.eye(3)[y] * 5 + 0.01 * rng.standard_normal((90, 3))
    res = node_classification(E, y, n_trials=3)
    assert set(res) == {"micro_f1", "micro_f1_std", "macro_f1", "macro_f1_std"}
    assert res["micro_f1"] == pytest.approx(1.0)
    noise = node_classification(rng.standard_normal((90, 3)), y, n_trials=5)
    assert noise["micro_f1"] < 0.6


def test_node_classification_bad_input(rng):
    with pytest.raises(ValueError, match="labels"):
        node_classification(rng.standard_normal((10, 2)), np.zeros(9))
    with pytest.raises(ValueError, match="train_size"):
        node_classification(rng.standard_normal((10, 2)), np.arange(10) % 2, train_size=1.5)


def test_select_by_cv_prefers_informative_embedding(rng):
    y = np.repeat(np.arange(2), 40)
    good = np.c_[y * 3.0 + 0.1 * rng.standard_normal(80), rng.standard_normal(80)]
    bad = rng.standard_normal((80, 2))
    best, scores = select_by_cv({"bad": bad, "good": good}, y, n_folds=4)
    assert best == "good" and scores["good"] > scores["bad"]


def _brute_force_knn(E, k):
    n = len(E)
    D = ((E[:, None, :] - E[None, :, :]) ** 2).sum(-1)
    out = np.zeros((n, n))
    for v in range(n):
        d = D[v].copy()
        d[v] = np.inf
        order = np.lexsort((np.arange(n), d))
        out[v, order[: k[v]]] = 1
    return out


def test_reconstruct_adjacency_matches_brute_force(rng):
    E = rng.standard_normal((37, 4))
    k = rng.integers(0, 5, 37)
    got = reconstruct_adjacency(E, k, batch_size=8).toarray()
    np.testing.assert_array_equal(got, _brute_force_knn(E, k))
    assert np.all(np.diag(got) == 0)
    np.testing.assert_array_equal(got.sum(1), k)


def test_matrix_norm_errors_against_numpy(rng):
    A = (rng.random((20, 20)) < 0.2).astype(float)
    B = (rng.random((20, 20)) < 0.2).astype(float)
    res = matrix_norm_errors(sp.csr_matrix(A), sp.csr_matrix(B))
    np.testing.assert_allclose(res["l1"], np.linalg.norm(A - B, 1))
    np.testing.assert_allclose(res["l2"], np.linalg.norm(A - B, 2), rtol=1e-6)
    assert res["n_wrong"] == int((A != B).sum())
    assert res["edge_recall"] == pytest.approx((A * B).sum() / A.sum())


def test_graph_reconstruction_perfect_for_cliques():
    # two directed 4-cliques; an embedding placing clique members together reconstructs exactly
    blocks = sp.block_diag([np.ones((4, 4)) - np.eye(4)] * 2).tocsr()
    A = blocks + sp.identity(8)  # self-loops are ignored by the protocol
    E = np.repeat(np.array([[0.0, 0.0], [10.0, 0.0]]), 4, axis=0)
    E += 1e-3 * np.arange(8)[:, None]
    res = graph_reconstruction(E, A)
    assert res["l1"] == 0 and res["l2"] == 0 and res["edge_recall"] == 1.0


def test_reconstruct_adjacency_bad_degree(rng):
    with pytest.raises(ValueError, match="out_degree"):
        reconstruct_adjacency(rng.standard_normal((5, 2)), [1, 2, 3])
    with pytest.raises(ValueError, match="out_degree"):
        reconstruct_adjacency(rng.standard_normal((5, 2)), [5, 0, 0, 0, 0])


def test_lssvm_classifier_agrees_with_project_lssvm(rng):
    lssvm = pytest.importorskip("asymkern.lssvm")
    X = rng.standard_normal((45, 4))
    y = np.argmax(X[:, :3] + 0.5 * rng.standard_normal((45, 3)), axis=1)
    ours = lssvm_classifier(1.0).fit(X, y)
    ref = lssvm.LSSVMClassifier(kernel="linear", C=1.0).fit(X, y)
    Xt = rng.standard_normal((30, 4))
    np.testing.assert_array_equal(ours.predict(Xt), ref.predict(Xt))
    np.testing.assert_allclose(ours.decision_function(Xt), ref.decision_function(Xt),
                               rtol=1e-6, atol=1e-8)
