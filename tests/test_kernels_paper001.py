"""Paper 001 kernels: KL-divergence kernels (histogram closed form, GMM Monte Carlo) and the
directed-graph kernel of §4.2."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from asymkern.kernels import KernelMatrix, get_kernel
from asymkern.kernels.divergence import GMMKLKernel, KLHistogramKernel, fit_gmm_features
from asymkern.kernels.graph import DirectedGraphKernel, node_ids
from asymkern.testing import requires_data


def _hist(n, k, seed):
    rng = np.random.default_rng(seed)
    H = rng.random((n, k)) ** 3
    H[rng.random((n, k)) < 0.2] = 0.0
    return H


# ----------------------------------------------------------------------------- histogram KL
def test_kl_histogram_closed_form():
    X, Z = _hist(6, 5, 0), _hist(4, 5, 1)
    k = KLHistogramKernel(a=0.7, eps=1e-3)
    K = k(X, Z)
    P = (X + 1e-3) / (X + 1e-3).sum(1, keepdims=True)
    Q = (Z + 1e-3) / (Z + 1e-3).sum(1, keepdims=True)
    ref = np.array([[np.exp(-0.7 * np.sum(p * np.log(p / q))) for q in Q] for p in P])
    np.testing.assert_allclose(K, ref, rtol=1e-12)
    assert not k.is_symmetric


def test_kl_histogram_asymmetry_and_symmetrised_version():
    X = _hist(8, 6, 2)
    Ka = KLHistogramKernel(a=1.0)(X, X)
    np.testing.assert_allclose(np.diag(Ka), 1.0)
    assert np.abs(Ka - Ka.T).max() > 1e-3  # KL is asymmetric
    Ks = KLHistogramKernel(a=1.0, symmetric=True)(X, X)
    np.testing.assert_allclose(Ks, Ks.T, rtol=1e-12)
    np.testing.assert_allclose(Ks, Ka * Ka.T, rtol=1e-10)  # exp(−a(KL + KLᵀ))


def test_kl_histogram_registry_and_errors():
    assert isinstance(get_kernel("kl", a=2.0), KLHistogramKernel)
    assert isinstance(get_kernel("kl_histogram"), KLHistogramKernel)
    with pytest.raises(ValueError, match="non-negative"):
        KLHistogramKernel()(-np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="a"):
        KLHistogramKernel(a=0.0)(np.ones((2, 3)), np.ones((2, 3)))


# ----------------------------------------------------------------------------- GMM KL
def _gauss_row(mu, var):
    return np.concatenate([[1.0], mu, var])


def test_gmm_kl_monte_carlo_matches_gaussian_closed_form():
    mu0, v0 = np.array([0.0, 1.0]), np.array([1.0, 0.5])
    mu1, v1 = np.array([0.5, 0.0]), np.array([2.0, 1.0])
    X = np.vstack([_gauss_row(mu0, v0), _gauss_row(mu1, v1)])
    k = GMMKLKernel(n_components=1, a=1.0, n_samples=20000, random_state=0)
    D = k.divergence(X, X)

    def kl(m0, s0, m1, s1):  # diagonal Gaussians
        return 0.5 * np.sum(s0 / s1 + (m1 - m0) ** 2 / s1 - 1.0 + np.log(s1 / s0))

    assert D[0, 1] == pytest.approx(kl(mu0, v0, mu1, v1), abs=0.08)
    assert D[1, 0] == pytest.approx(kl(mu1, v1, mu0, v0), abs=0.08)
    assert abs(D[0, 1] - D[1, 0]) > 0.1  # asymmetric
    np.testing.assert_allclose(np.diag(D), 0.0, atol=1e-12)
    np.testing.assert_array_equal(k(X, X), k(X, X))  # deterministic
    np.testing.assert_allclose(k(X[:1], X), k(X, X)[:1])  # draws depend only on P


def test_fit_gmm_features_and_kernel():
    rng = np.random.default_rng(3)
    sets = [rng.standard_normal((60, 3)) + (i % 2) * 2.0 for i in range(6)]
    F = fit_gmm_features(sets, n_components=2, random_state=0)
    assert F.shape == (6, 2 + 2 * 2 * 3)
    K = GMMKLKernel(n_components=2, a=0.5, n_samples=200)(F, F)
    assert K.shape == (6, 6) and np.all((K > 0) & (K <= 1.0 + 1e-12))
    same, diff = K[0, 2], K[0, 1]  # sets 0 and 2 share a distribution
    assert same > diff
    with pytest.raises(ValueError, match="n_components"):
        GMMKLKernel(n_components=3)(F, F)
    with pytest.raises(ValueError, match="fewer than"):
        fit_gmm_features([np.ones((1, 3))], n_components=2)
    assert isinstance(get_kernel("kl_gmm", n_components=2), GMMKLKernel)


# ----------------------------------------------------------------------------- graph kernel
def _small_graph():
    # edges i -> j (asymkern convention): 0->1, 0->2, 1->2, 3->2
    A = sp.csr_matrix(([1.0, 1, 1, 1], ([0, 0, 1, 3], [1, 2, 2, 2])), shape=(4, 4))
    return A


def test_directed_graph_kernel_in_degree_normalisation():
    A = _small_graph()
    k = DirectedGraphKernel(A)
    calA = A.toarray().T  # 𝒜_ij = 1 iff j -> i (paper §4.2)
    M = calA + np.eye(4)
    G = M / M.sum(1, keepdims=True)
    ids = node_ids(4)
    np.testing.assert_allclose(k(ids, ids), G)
    np.testing.assert_allclose(k(ids, ids).sum(1), 1.0)
    assert G[2, 0] > 0 and G[0, 2] == 0  # 0 -> 2: only row 2 (the cited node) sees it
    np.testing.assert_allclose(k(ids[[2]], ids[[0, 3]]), G[[2]][:, [0, 3]])
    ks = DirectedGraphKernel(A, symmetrize=True)
    np.testing.assert_allclose(ks(ids, ids), (G + G.T) / 2)
    assert ks.is_symmetric and not k.is_symmetric
    kn = DirectedGraphKernel(sp.csr_matrix(G), preprocess="none")
    np.testing.assert_allclose(kn(ids, ids), G)
    assert isinstance(get_kernel("directed_graph", adjacency=A), DirectedGraphKernel)
    with pytest.raises(ValueError, match="node ids"):
        k(np.array([[0.5]]), ids)
    with pytest.raises(ValueError, match="node ids"):
        k(np.array([[4.0]]), ids)
    with pytest.raises(ValueError, match="square"):
        DirectedGraphKernel(np.ones((2, 3)))


def test_askls_with_graph_kernel_on_directed_sbm():
    """Plumbing on a homophilous directed SBM: node ids in, labels out, well above chance."""
    from asymkern.datasets.graphs import directed_sbm
    from asymkern.lssvm import AsKLSClassifier

    A, y = directed_sbm(60, 3, p_forward=0.03, p_backward=0.0, p_within=0.15, random_state=0)
    k = DirectedGraphKernel(A)
    ids = node_ids(A.shape[0])
    rng = np.random.default_rng(0)
    perm = rng.permutation(A.shape[0])
    tr, te = perm[:108], perm[108:]
    m = AsKLSClassifier(kernel=k, C=1.0).fit(ids[tr], y[tr])
    assert m.score(ids[te], y[te]) > 0.9


@requires_data("cora/cora_askls.mat")
def test_authors_matrix_is_in_degree_normalised_adjacency():
    from asymkern.datasets.graphs import load_askls_graph

    g = load_askls_graph("cora")
    G = g.adjacency
    np.testing.assert_allclose(np.asarray(G.sum(1)).ravel(), 1.0)
    # G = D⁻¹(𝒜 + I): the diagonal is 1 / (in-degree + 1) and every row's non-zeros are equal
    kn = DirectedGraphKernel(G, preprocess="none")
    Kd = KernelMatrix(kn, node_ids(50), node_ids(50)).to_array()
    np.testing.assert_allclose(np.diag(Kd), [G[i].data.max() for i in range(50)])
    np.testing.assert_allclose([G[i].data.min() for i in range(50)],
                               [G[i].data.max() for i in range(50)])
