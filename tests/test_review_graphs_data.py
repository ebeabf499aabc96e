"""Independent review of the directed-graph and data-loading surface a user meets first.

Every value is checked against a dense reference built here by hand with numpy from an explicit
edge list (or against the paper's formula evaluated directly, or against the raw data file read
without asymkern), not against the code under test:

* ``asymkern.graphs``: reconstruct_adjacency, matrix_norm_errors, graph_reconstruction and the
  argument checks of node_classification / select_by_cv (Tao et al., 2024, App. C.1);
* ``asymkern.datasets.graphs``: row_normalized_adjacency (D⁻¹(A + I)), directed_sbm and the
  graph loaders;
* ``asymkern.kernels.graph.DirectedGraphKernel``: G = D⁻¹(𝒜 + I) with 𝒜_ij = 1 iff j → i
  (He et al., 2023, §4.2);
* ``asymkern.kernels.divergence``: exp(−a·KL(P_x ‖ P_z)) (He et al., 2023, §4.1, Eq. 14);
* the dataset loaders against the files of the data directory (skipped when it is absent);
* ``asymkern embed`` / ``asymkern demo`` arguments and outputs.

Convention checked throughout: ``adjacency[i, j]`` is the weight of the edge i → j (row = source,
column = target).
"""

from __future__ import annotations

import csv
import gzip
import io
import warnings

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

from asymkern.cli import main
from asymkern.datasets import DataNotFoundError, _paths, data_available, data_path, get_data_dir
from asymkern.datasets.graphs import directed_sbm, row_normalized_adjacency
from asymkern.graphs import (
    graph_reconstruction,
    matrix_norm_errors,
    node_classification,
    reconstruct_adjacency,
    select_by_cv,
)
from asymkern.kernels.divergence import GMMKLKernel, KLHistogramKernel
from asymkern.kernels.graph import DirectedGraphKernel, node_ids

# a small directed graph as an explicit edge list (source, target, weight): node 4 has no
# out-edges, node 5 is isolated, (2, 2) is a self-loop and (0, 1) is listed twice
N = 6
EDGES = [(0, 1, 1.0), (0, 2, 1.0), (1, 2, 2.0), (2, 0, 1.0), (2, 2, 1.0), (3, 2, 0.5),
         (3, 4, 1.0), (0, 1, 1.0)]


def _dense(edges=EDGES, n=N, binary=False):
    """Dense adjacency by hand: A[s, t] += w for every listed edge s → t (duplicates add)."""
    A = np.zeros((n, n))
    for s, t, w in edges:
        A[s, t] = 1.0 if binary else A[s, t] + w
    return A


def _formats(edges=EDGES, n=N):
    """The same (duplicate-summed) adjacency as dense, COO with the duplicates, CSR and CSC."""
    r, c, w = (np.array(v) for v in zip(*edges))
    coo = sp.coo_matrix((w, (r, c)), shape=(n, n))
    return {"dense": _dense(edges, n), "coo": coo, "csr": coo.tocsr(), "csc": coo.tocsc(),
            "list": _dense(edges, n).tolist()}


def _snapshot(M):
    """A copy of a dense or sparse input, to check it is left unchanged."""
    return M.copy() if hasattr(M, "copy") else [list(r) for r in M]


def _same(M, snap):
    if sp.issparse(M):
        return M.format == snap.format and (M != snap).nnz == 0 and M.nnz == snap.nnz
    return np.array_equal(np.asarray(M), np.asarray(snap))


# ============================================================== asymkern.graphs: reconstruction
def test_reconstruct_adjacency_hand_example_ties_duplicates_and_batches():
    # points on a line; nodes 1 and 2 coincide (a duplicate row is never its own neighbour,
    # but is the other's nearest); ties are broken by the lower index
    E = np.array([[0.0], [2.0], [2.0], [3.0], [10.0], [-1.0]])
    k = [2, 1, 1, 3, 0, 1]
    want = np.zeros((6, 6))
    want[0, [5, 1]] = 1  # distances 1 (node 5), 2 (nodes 1, 2: tie -> 1)
    want[1, 2] = 1  # distance 0
    want[2, 1] = 1
    want[3, [1, 2, 0]] = 1  # 1, 1, 3
    want[5, 0] = 1
    for bs in (1, 2, 4, 1024):
        got = reconstruct_adjacency(E, k, batch_size=bs)
        assert sp.issparse(got) and got.shape == (6, 6)
        np.testing.assert_array_equal(got.toarray(), want)
    # integral floats and other integer dtypes are degrees too
    np.testing.assert_array_equal(
        reconstruct_adjacency(E, np.array(k, dtype=np.float64)).toarray(), want)
    np.testing.assert_array_equal(
        reconstruct_adjacency(E, np.array(k, dtype=np.uint8)).toarray(), want)


@pytest.mark.parametrize("bad", [[1.7, 1, 1, 0], [np.nan, 1, 1, 0], [[1, 1], [1, 0]],
                                 [True, True, False, False], ["1", "1", "1", "0"]])
def test_reconstruct_adjacency_refuses_non_integer_degrees(bad):
    # 1.7 was truncated to 1 and a 2x2 array raveled without a word
    E = np.array([[0.0], [1.0], [3.0], [7.0]])
    with pytest.raises(ValueError, match="out_degree"):
        reconstruct_adjacency(E, bad)


@pytest.mark.parametrize("bad,exc", [(0, ValueError), (-1, ValueError), (1.5, ValueError),
                                     ("2", TypeError), (True, TypeError)])
def test_reconstruct_adjacency_refuses_bad_batch_size(bad, exc):
    # batch_size=-1 returned an empty reconstruction (every node without neighbours)
    E = np.array([[0.0], [1.0], [3.0], [7.0]])
    with pytest.raises(exc, match="batch_size"):
        reconstruct_adjacency(E, [1, 1, 1, 0], batch_size=bad)


def _norm_reference(A, Ah):
    A, Ah = np.asarray(A, dtype=float), np.asarray(Ah, dtype=float)
    D = A - Ah
    rec = np.sum((A != 0) & (Ah != 0)) / np.sum(A != 0) if np.any(A != 0) else np.nan
    return {"l1": np.abs(D).sum(axis=0).max(), "l2": np.linalg.norm(D, 2),
            "n_wrong": int(np.sum(D != 0)), "edge_recall": rec}


@pytest.mark.parametrize("shape", [(6, 6), (5, 8)])
def test_matrix_norm_errors_against_numpy_every_input_type(shape):
    rng = np.random.default_rng(1)
    A = (rng.random(shape) < 0.4).astype(float)
    Ah = (rng.random(shape) < 0.4).astype(float)
    ref = _norm_reference(A, Ah)
    for conv in (np.asarray, sp.csr_matrix, sp.coo_matrix, sp.csc_matrix,
                 lambda M: M.astype(np.int64), lambda M: M.astype(bool),
                 lambda M: sp.csr_matrix(M.astype(bool))):
        a, ah = conv(A), conv(Ah)
        snap = (_snapshot(a), _snapshot(ah))
        got = matrix_norm_errors(a, ah)
        assert got["l1"] == pytest.approx(ref["l1"], rel=1e-12)
        assert got["l2"] == pytest.approx(ref["l2"], rel=1e-9)
        assert got["n_wrong"] == ref["n_wrong"]
        assert got["edge_recall"] == pytest.approx(ref["edge_recall"], rel=1e-12)
        assert _same(a, snap[0]) and _same(ah, snap[1])


def test_matrix_norm_errors_explicit_zeros_are_not_edges():
    # a sparse A holding a stored 0 counted it as a true edge: edge_recall 2/3 instead of 1
    A = sp.csr_matrix((np.array([1.0, 0.0, 1.0]), (np.array([0, 1, 2]), np.array([1, 2, 0]))),
                      shape=(3, 3))
    assert A.nnz == 3
    Ah = np.array([[0, 1, 0], [0, 0, 0], [1, 0, 0]])
    got = matrix_norm_errors(A, Ah)
    assert got["edge_recall"] == 1.0 and got["n_wrong"] == 0 and got["l1"] == 0.0
    assert A.nnz == 3  # the caller's matrix keeps its stored zero
    # a stored zero in A_hat is not a recovered edge either
    Ah0 = sp.csr_matrix((np.array([0.0, 1.0]), (np.array([0, 2]), np.array([1, 0]))),
                        shape=(3, 3))
    assert matrix_norm_errors(A, Ah0)["edge_recall"] == 0.5


def test_graph_reconstruction_binarises_drops_loops_every_format():
    # the graph of EDGES: weights, a duplicate and the self-loop (2, 2) are ignored; k_v is the
    # number of distinct out-neighbours other than v
    B = _dense(binary=True)
    np.fill_diagonal(B, 0.0)
    k = B.sum(axis=1).astype(int)
    assert k.tolist() == [2, 1, 1, 2, 0, 0]
    E = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.5], [5.0, 5.0], [6.0, 5.0], [9.0, -9.0]])
    Ah = np.zeros((N, N))
    for v in range(N):
        d = np.linalg.norm(E - E[v], axis=1)
        d[v] = np.inf
        Ah[v, np.argsort(d, kind="stable")[:k[v]]] = 1.0
    ref = _norm_reference(B, Ah)
    for name, adj in _formats().items():
        snap = _snapshot(adj)
        got = graph_reconstruction(E, adj, batch_size=4)
        assert got["n_wrong"] == ref["n_wrong"], name
        assert got["l1"] == pytest.approx(ref["l1"], rel=1e-12), name
        assert got["l2"] == pytest.approx(ref["l2"], rel=1e-9), name
        assert got["edge_recall"] == pytest.approx(ref["edge_recall"], rel=1e-12), name
        assert _same(adj, snap), name
    got = graph_reconstruction(E, sp.csr_matrix(_dense() != 0))  # bool
    assert got["n_wrong"] == ref["n_wrong"]


def test_graph_reconstruction_names_a_node_count_mismatch():
    # the error used to speak of an "out_degree" the caller never passed
    with pytest.raises(ValueError, match="embedding has 3 rows but adjacency has 4"):
        graph_reconstruction(np.zeros((3, 1)), np.eye(4))


def test_node_classification_and_select_by_cv_refuse_fractional_counts():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 20)
    E = rng.standard_normal((40, 2)) + 4.0 * y[:, None]
    with pytest.raises(ValueError, match="n_trials"):  # was silently int(2.5) = 2 trials
        node_classification(E, y, n_trials=2.5)
    with pytest.raises(ValueError, match="n_folds"):  # was scikit-learn's 'n_splits'
        select_by_cv({"a": E}, y, n_folds=1)
    with pytest.raises(ValueError, match="n_folds"):
        select_by_cv({"a": E}, y, n_folds=2.5)
    assert node_classification(E, y, n_trials=2.0)["micro_f1"] == 1.0


# ================================================ datasets.graphs: D⁻¹(A + I) and directed_sbm
def _rownorm_reference(A, self_loops=True):
    M = np.asarray(A, dtype=float) + (np.eye(len(A)) if self_loops else 0.0)
    s = M.sum(axis=1, keepdims=True)
    return np.divide(M, s, out=np.zeros_like(M), where=s > 0)


@pytest.mark.parametrize("self_loops", [True, False])
def test_row_normalized_adjacency_against_hand_reference(self_loops):
    ref = _rownorm_reference(_dense(), self_loops)
    # row = source: node 0's out-edges 0 -> 1 (twice) and 0 -> 2 share its row
    assert ref[0, 1] == pytest.approx((2.0 / 4.0) if self_loops else 2.0 / 3.0)
    inputs = dict(_formats())
    inputs["int"] = sp.csr_matrix(np.round(_dense() * 2).astype(np.int32))
    inputs["bool"] = sp.csr_matrix(_dense() != 0)
    refs = {"int": _rownorm_reference(np.round(_dense() * 2), self_loops),
            "bool": _rownorm_reference(_dense() != 0, self_loops)}
    for name, A in inputs.items():
        snap = _snapshot(A)
        got = row_normalized_adjacency(A, self_loops=self_loops)
        assert sp.issparse(got) and got.dtype == np.float64
        G = got.toarray()
        assert np.all(np.isfinite(G)), name  # node 5 (isolated) and node 4 (a sink): no NaN
        np.testing.assert_allclose(G, refs.get(name, ref), rtol=1e-14, atol=0, err_msg=name)
        assert _same(A, snap), name
    G = row_normalized_adjacency(_dense(), self_loops=self_loops).toarray()
    if self_loops:
        np.testing.assert_allclose(G.sum(axis=1), 1.0, rtol=1e-14)
        assert G[5, 5] == 1.0
    else:
        assert not G[4].any() and not G[5].any()


@pytest.mark.parametrize("value,needle", [(-1.0, "non-negative"), (np.nan, "NaN"),
                                          (np.inf, "NaN or infinit")])
def test_row_normalized_adjacency_refuses_negative_and_non_finite(value, needle):
    # a row [1, -1] summed to 0 and was returned as zeros; a NaN entry zeroed its row
    A = np.array([[0.0, 1.0, value], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    for M in (A, sp.csr_matrix(A)):
        with pytest.raises(ValueError, match=needle) as info:
            row_normalized_adjacency(M)
        assert str(info.value).startswith("A ")


def test_row_normalized_adjacency_row_sum_beyond_the_float_range():
    # the sum 2e308 overflowed: 1/inf gave a zero row instead of (1/2, 1/2, 0)
    A = np.array([[1e308, 1e308, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    for self_loops in (True, False):
        G = row_normalized_adjacency(A, self_loops=self_loops).toarray()
        np.testing.assert_allclose(G[0], [0.5, 0.5, 0.0], rtol=1e-14, atol=1e-300)
        rest = [[0, 0.5, 0.5], [0, 0, 1]] if self_loops else [[0, 0, 1], [0, 0, 0]]
        np.testing.assert_array_equal(G[1:], rest)


def _block_density(A, y, a, b):
    blk = A[np.ix_(y == a, y == b)]
    return blk.sum() / (blk.size - (np.sum(y == a) if a == b else 0))


def test_directed_sbm_block_probabilities():
    # one class: p_within is the only probability (it was overwritten by p_backward)
    A, y = directed_sbm(150, 1, p_forward=0.0, p_backward=0.0, p_within=0.3, random_state=0)
    assert abs(A.toarray().sum() / (150 * 149) - 0.3) < 0.02
    # two classes: class 0 -> class 1 is forward (edge i -> j is A[i, j])
    A, y = directed_sbm(150, 2, p_forward=0.3, p_backward=0.05, p_within=0.1, random_state=0)
    A = A.toarray()
    assert abs(_block_density(A, y, 0, 1) - 0.3) < 0.02
    assert abs(_block_density(A, y, 1, 0) - 0.05) < 0.02
    # three classes without backward edges: none at all (0 was replaced by (p_f + p_b)/2)
    A, y = directed_sbm(100, 3, p_forward=0.2, p_backward=0.0, p_within=0.1, random_state=0)
    A = A.toarray()
    for c in range(3):
        assert _block_density(A, y, (c + 1) % 3, c) == 0.0
        assert abs(_block_density(A, y, c, (c + 1) % 3) - 0.2) < 0.03
    assert not np.diag(A).any() and set(np.unique(A)) <= {0.0, 1.0}


@pytest.mark.parametrize("kwargs,needle", [({"p_forward": 1.5}, "p_forward"),
                                           ({"p_within": -0.1}, "p_within"),
                                           ({"p_backward": np.nan}, "p_backward"),
                                           ({"n_classes": 0}, "n_classes"),
                                           ({"n_per_class": 2.5}, "n_per_class")])
def test_directed_sbm_refuses_bad_parameters(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        directed_sbm(**kwargs)


# ===================================================== DirectedGraphKernel (He et al. §4.2)
def _paper_G(adj):
    """𝒜_ij = adj[j, i] (the edge j → i), G = D⁻¹(𝒜 + I), D_ii = Σ_j 𝒜_ij + 1."""
    calA = np.asarray(adj, dtype=float).T
    M = calA + np.eye(len(calA))
    return M / M.sum(axis=1, keepdims=True)


def test_directed_graph_kernel_paper_formula_every_input_type():
    G = _paper_G(_dense())
    # node 2 is pointed to by 0 (w 1), 1 (w 2), 3 (w 0.5) and itself (loop w 1): its row
    assert G[2, 1] == pytest.approx(2.0 / (1 + 2 + 0.5 + 1 + 1))
    assert G[0, 2] > 0 and G[2, 0] > 0 and G[1, 0] > 0 and G[0, 1] == 0.0  # 0 -> 1 only
    ids = node_ids(N)
    inputs = dict(_formats())
    inputs["int"] = sp.csr_matrix(np.round(_dense() * 2).astype(np.int64))
    inputs["bool"] = sp.coo_matrix(_dense() != 0)
    refs = {"int": _paper_G(np.round(_dense() * 2)), "bool": _paper_G(_dense() != 0)}
    for name, A in inputs.items():
        snap = _snapshot(A)
        k = DirectedGraphKernel(A)
        K = k(ids, ids)
        np.testing.assert_allclose(K, refs.get(name, G), rtol=1e-14, atol=0, err_msg=name)
        assert np.all(np.isfinite(K)) and K[5, 5] == 1.0  # the isolated node
        assert _same(A, snap), name
        # any rows against any columns, in any order, integer ids of any dtype
        rows, cols = np.array([[4], [2], [0]]), np.array([[2], [5], [0], [2]])
        np.testing.assert_allclose(k(rows, cols), refs.get(name, G)[np.ix_([4, 2, 0],
                                                                             [2, 5, 0, 2])],
                                   rtol=1e-14, atol=0)
    ks = DirectedGraphKernel(_formats()["coo"], symmetrize=True)
    np.testing.assert_allclose(ks(ids, ids), (G + G.T) / 2, rtol=1e-14, atol=0)
    # float32 node ids: float32 values of the same G
    K32 = DirectedGraphKernel(_dense())(ids.astype(np.float32))
    assert K32.dtype == np.float32
    np.testing.assert_allclose(K32, G, rtol=1e-6)


@pytest.mark.parametrize("ids", [np.array([[6.0]]), np.array([[-1.0]]), np.array([[1.5]]),
                                 np.array([[np.nan]])])
def test_directed_graph_kernel_refuses_bad_node_ids(ids):
    with pytest.raises(ValueError, match="X"):
        DirectedGraphKernel(_dense())(ids, node_ids(N))
    with pytest.raises(ValueError, match="Z"):
        DirectedGraphKernel(_dense())(node_ids(N), ids)


# ========================================================= divergence kernels (He et al. §4.1)
def _kl_reference(x, z, a, eps):
    p = (np.asarray(x, float) + eps) / (np.asarray(x, float) + eps).sum()
    q = (np.asarray(z, float) + eps) / (np.asarray(z, float) + eps).sum()
    return np.exp(-a * np.sum(p * np.log(p / q)))


def test_kl_histogram_hand_values_zeros_and_asymmetry():
    # p = (1/2, 1/2), q = (1/4, 3/4): KL(p‖q) = ½ log 2 + ½ log(2/3), KL(q‖p) = ¼ log ½ + ¾ log(3/2)
    P, Q = np.array([[2.0, 2.0]]), np.array([[1.0, 3.0]])  # counts: rows not summing to 1
    k = KLHistogramKernel(a=0.7, eps=1e-12)
    kl_pq = 0.5 * np.log(2.0) + 0.5 * np.log(2.0 / 3.0)
    kl_qp = 0.25 * np.log(0.5) + 0.75 * np.log(1.5)
    assert k(P, Q)[0, 0] == pytest.approx(np.exp(-0.7 * kl_pq), rel=1e-9)
    assert k(Q, P)[0, 0] == pytest.approx(np.exp(-0.7 * kl_qp), rel=1e-9)
    assert abs(kl_pq - kl_qp) > 1e-2  # K(x, z) ≠ K(z, x): the first argument is P
    # a zero in p: 0·log 0 = 0, KL((0, 1) ‖ (½, ½)) = log 2
    assert k(np.array([[0.0, 5.0]]), np.array([[1.0, 1.0]]))[0, 0] == pytest.approx(
        np.exp(-0.7 * np.log(2.0)), rel=1e-9)
    # a zero in q where p > 0: KL is infinite in the paper; eps keeps it finite and tiny
    v = KLHistogramKernel(a=1.0, eps=1e-12)(np.array([[1.0, 1.0]]), np.array([[1.0, 0.0]]))
    assert np.isfinite(v).all() and 0.0 < v[0, 0] < 1e-5


def test_kl_histogram_formula_with_zero_bins_float32_and_scaling():
    rng = np.random.default_rng(5)
    X = rng.random((5, 7)) * 10
    Z = rng.random((4, 7)) * 3
    X[rng.random(X.shape) < 0.3] = 0.0
    Z[rng.random(Z.shape) < 0.3] = 0.0
    Z[0] = 0.0  # an all-zero histogram is the uniform distribution after eps
    a, eps = 0.4, 1e-3
    ref = np.array([[_kl_reference(x, z, a, eps) for z in Z] for x in X])
    k = KLHistogramKernel(a=a, eps=eps)
    np.testing.assert_allclose(k(X, Z), ref, rtol=1e-11)
    np.testing.assert_allclose(k(X, X).diagonal(), 1.0, rtol=1e-12)
    X32, Z32 = X.astype(np.float32), Z.astype(np.float32)
    K32 = k(X32, Z32)
    assert K32.dtype == np.float32
    ref32 = np.array([[_kl_reference(x, z, a, eps) for z in Z32.astype(float)] for x in X32])
    np.testing.assert_allclose(K32, ref32, rtol=1e-5)
    ks = KLHistogramKernel(a=a, eps=eps, symmetric=True)
    ref_s = np.array([[_kl_reference(x, z, a, eps) * _kl_reference(z, x, a, eps) for z in Z]
                      for x in X])
    np.testing.assert_allclose(ks(X, Z), ref_s, rtol=1e-10)


@pytest.mark.parametrize("where", ["X", "Z"])
def test_kl_histogram_negative_entries_name_the_argument(where):
    good, bad = np.ones((2, 3)), np.array([[1.0, -0.5, 1.0], [1.0, 1.0, 1.0]])
    X, Z = (bad, good) if where == "X" else (good, bad)
    with pytest.raises(ValueError, match=f"^{where} must hold non-negative"):
        KLHistogramKernel()(X, Z)


def _gauss(w, mu, var):
    return np.concatenate([[w], mu, var])


def test_gmm_kl_weights_not_summing_to_one_are_the_same_mixture():
    # [2, μ, σ²] and [1, μ, σ²] describe the same Gaussian: KL 0 both ways (was log 2 one way)
    X = np.vstack([_gauss(2.0, [0.0, 1.0], [1.0, 2.0]), _gauss(1.0, [0.0, 1.0], [1.0, 2.0])])
    D = GMMKLKernel(n_components=1, n_samples=64).divergence(X, X)
    np.testing.assert_allclose(D, 0.0, atol=1e-12)
    # a two-component row with weights (3, 1) against the same mixture with (0.75, 0.25)
    row = lambda w: np.concatenate([w, [0.0, 4.0], [1.0, 1.0]])  # noqa: E731
    Y = np.vstack([row([3.0, 1.0]), row([0.75, 0.25])])
    np.testing.assert_allclose(GMMKLKernel(n_components=2, n_samples=64).divergence(Y, Y), 0.0,
                               atol=1e-12)
    # against a different Gaussian, the unnormalised row gives the closed-form KL of N(0, 1)
    # vs N(1, 2) like the normalised one (Monte Carlo, 20000 draws)
    P = np.vstack([_gauss(5.0, [0.0], [1.0]), _gauss(1.0, [0.0], [1.0])])
    Q = np.array([_gauss(1.0, [1.0], [2.0])])
    kl = 0.5 * (1.0 / 2.0 + 1.0 / 2.0 - 1.0 + np.log(2.0))
    D = GMMKLKernel(n_components=1, n_samples=20000).divergence(P, Q)
    np.testing.assert_allclose(D[:, 0], kl, atol=0.03)


def test_gmm_kl_bad_rows_name_the_argument():
    good = np.array([_gauss(1.0, [0.0], [1.0])])
    for bad in (_gauss(-1.0, [0.0], [1.0]), _gauss(1.0, [0.0], [0.0]),
                _gauss(0.0, [0.0], [1.0])):
        for where in ("X", "Z"):
            X, Z = (bad[None], good) if where == "X" else (good, bad[None])
            with pytest.raises(ValueError, match=f"^{where}"):
                GMMKLKernel(n_components=1)(X, Z)


# ================================================================= loaders against raw files
DATA = "/work/shared/data"
requires = pytest.mark.skipif(
    not data_available(""),
    reason="the data directory was not found (looked at $ASYMKERN_DATA, then ../shared/data "
    "next to the working directory and the checkout); set ASYMKERN_DATA to the datasets folder")


def _raw(rel):
    return str(data_path(rel))


def test_missing_data_directory_names_where_it_looked_and_how_to_set_it(tmp_path, monkeypatch):
    monkeypatch.delenv("ASYMKERN_DATA", raising=False)
    tried = [tmp_path / "nowhere" / "shared" / "data", tmp_path / "elsewhere"]
    monkeypatch.setattr(_paths, "_candidates", lambda: list(tried))
    with pytest.raises(DataNotFoundError) as info:
        get_data_dir()
    msg = str(info.value)
    assert all(str(p) in msg for p in tried) and "ASYMKERN_DATA" in msg and "data_dir" in msg
    assert not data_available("uci")
    monkeypatch.setenv("ASYMKERN_DATA", str(tmp_path / "missing"))
    with pytest.raises(DataNotFoundError, match="ASYMKERN_DATA=.*missing.*is not a directory"):
        get_data_dir()
    from asymkern.datasets.uci import load_uci

    with pytest.raises(DataNotFoundError, match="ASYMKERN_DATA"):
        load_uci("pima")
    with pytest.raises(DataNotFoundError, match="not a directory"):
        load_uci("pima", data_dir=tmp_path / "missing")


def test_missing_file_error_says_how_to_point_elsewhere(tmp_path):
    # "not found under <dir>" alone did not say how to use another folder
    with pytest.raises(DataNotFoundError) as info:
        data_path("uci/pima/pima-indians-diabetes.csv", data_dir=tmp_path)
    msg = str(info.value)
    assert str(tmp_path) in msg and "ASYMKERN_DATA" in msg and "data_dir" in msg


def _read_cites(name, index):
    """Edges citing → cited of a LINQS .cites file (``<cited>\\t<citing>`` lines)."""
    E = set()
    with open(_raw(f"{name}/{name}.cites")) as fh:
        for line in fh:
            parts = line.split()
            if len(parts) == 2 and parts[0] in index and parts[1] in index:
                E.add((index[parts[1]], index[parts[0]]))
    return E


@requires
@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_citation_graph_against_linqs_cites(name):
    from asymkern.datasets.graphs import load_citation_graph

    g = load_citation_graph(name)
    with np.load(_raw(f"{name}/{name}.npz"), allow_pickle=True) as d:
        labels, names = d["labels"], [str(c) for c in d["class_names"]]
        ids = [str(v) for v in d["node_names"]]
    index = {v: i for i, v in enumerate(ids)}
    C = g.adjacency.tocoo()
    assert set(zip(C.row.tolist(), C.col.tolist())) == _read_cites(name, index)
    assert g.orientation == "cites" and g.adjacency.dtype == np.float64
    assert np.all(g.adjacency.data == 1.0) and g.n_nodes == len(ids)
    np.testing.assert_array_equal(g.labels, labels)
    assert list(g.class_names) == names and g.n_classes == len(names)
    assert [str(v) for v in g.node_ids] == ids
    t = load_citation_graph(name, orientation="cited_by")
    assert t.orientation == "cited_by" and (t.adjacency != g.adjacency.T).nnz == 0


@requires
def test_pubmed_graph_against_linqs_tab_and_label_table():
    from asymkern.datasets.graphs import load_citation_graph

    g = load_citation_graph("pubmed")
    rows = list(csv.DictReader(open(_raw("pubmed/derived/pubmed_pmid_labels.tsv")),
                               delimiter="\t"))
    rows.sort(key=lambda r: int(r["planetoid_index"]))
    pmids = [r["pmid"] for r in rows]
    assert [int(r["planetoid_index"]) for r in rows] == list(range(len(rows)))
    index = {p: i for i, p in enumerate(pmids)}
    E = set()
    with gzip.open(_raw("pubmed/linqs/Pubmed-Diabetes.DIRECTED.cites.tab.gz"), "rt") as fh:
        for line in fh:
            f = line.rstrip("\n").split("\t")
            if len(f) == 4 and f[1].startswith("paper:"):  # citing | cited
                E.add((index[f[1][6:]], index[f[3][6:]]))
    C = g.adjacency.tocoo()
    assert len(E) == 44338 and set(zip(C.row.tolist(), C.col.tolist())) == E
    assert g.adjacency.shape == (19717, 19717) and np.all(g.adjacency.data == 1.0)
    np.testing.assert_array_equal(g.labels, [int(r["planetoid_label"]) for r in rows])
    assert [str(v) for v in g.node_ids] == pmids
    # Planetoid label -> LINQS code {0: 1, 1: 3, 2: 2}; LINQS 1 Experimental, 2 Type 1, 3 Type 2
    linqs = {1: "Experimental", 2: "Type 1", 3: "Type 2"}
    for r in rows[:200]:
        assert g.class_names[int(r["planetoid_label"])].endswith(linqs[int(r["linqs_label"])])


@requires
@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_askls_graph_against_mat_and_its_orientation(name):
    from asymkern.datasets.graphs import load_askls_graph, load_citation_graph

    g = load_askls_graph(name)
    m = sio.loadmat(_raw(f"{name}/{name}_askls.mat"))
    np.testing.assert_array_equal(g.adjacency.toarray(), m["G"])
    np.testing.assert_array_equal(g.labels, m["label"].ravel() - 1)
    # G[i, j] != 0 (i != j) iff j cites i: its rows count the citations a paper receives, so
    # the row degrees are the in-degrees of the 'cites' graph (the .mat has no paper ids; the
    # two graphs are isomorphic for cora and nearly so for citeseer)
    cites = load_citation_graph(name).adjacency
    off = (g.adjacency - sp.diags(g.adjacency.diagonal())).tocsr()
    off.eliminate_zeros()
    row_deg = np.sort(np.diff(off.indptr))
    in_deg = np.sort(np.asarray((cites - sp.diags(cites.diagonal()) != 0).sum(axis=0)).ravel())
    out_deg = np.sort(np.asarray((cites - sp.diags(cites.diagonal()) != 0).sum(axis=1)).ravel())
    assert np.abs(row_deg - in_deg).sum() < np.abs(row_deg - out_deg).sum() / 10
    if name == "cora":
        np.testing.assert_array_equal(row_deg, in_deg)
    # so the graph says so (it said 'cites', the opposite)
    assert g.orientation == "cited_by"


@requires
@pytest.mark.parametrize("name,rel", [("photo", "amazon_photo/amazon_photo.npz"),
                                      ("computers", "amazon_computers/amazon_cs.npz")])
def test_amazon_graph_against_npz(name, rel):
    from asymkern.datasets.graphs import load_amazon_graph

    with warnings.catch_warnings():
        # the stored pickles name scipy's deprecated module paths (scipy.sparse.csr, gone in
        # SciPy 2.0): the loader reads them from scipy.sparse itself, without the warning
        warnings.simplefilter("error", DeprecationWarning)
        g = load_amazon_graph(name)
    try:  # the independent reference: numpy's own reader (through scipy's old module paths)
        with warnings.catch_warnings(), np.load(_raw(rel), allow_pickle=True) as d:
            warnings.simplefilter("ignore", DeprecationWarning)
            A = sp.csr_matrix(d["adj_matrix"].item())
            y = np.asarray(d["node_label"]).ravel()
            names = [str(c) for c in d["metadata"].item()["class_names"]]
    except (ModuleNotFoundError, AttributeError) as exc:  # a SciPy without those paths
        pytest.skip(f"numpy's reader cannot unpickle the stored matrices here: {exc}")
    np.testing.assert_array_equal(g.adjacency.toarray() != 0, A.toarray() != 0)
    assert np.all(g.adjacency.data == 1.0) and g.adjacency.dtype == np.float64
    _, codes = np.unique(y, return_inverse=True)
    np.testing.assert_array_equal(g.labels, codes)
    assert list(g.class_names) == names


@requires
@pytest.mark.parametrize("name,rel,zero_based", [("acm", "bcot/acm/acm.mat", True),
                                                 ("dblp", "bcot/dblp/DBLP.mat", False),
                                                 ("wiki", "bcot/wiki/wiki.mat", False)])
def test_bcot_against_mat(name, rel, zero_based):
    from asymkern.datasets.bcot import load_bcot

    ds = load_bcot(name)
    m = sio.loadmat(_raw(rel))
    fea = m["fea"].toarray() if sp.issparse(m["fea"]) else np.asarray(m["fea"])
    assert sp.isspmatrix_csr(ds.X) and ds.X.dtype == np.float64
    np.testing.assert_array_equal(ds.X.toarray(), fea.astype(np.float64))
    gnd = m["gnd"].ravel().astype(np.int64)
    np.testing.assert_array_equal(ds.labels, gnd if zero_based else gnd - 1)
    assert ds.labels.min() == 0 and ds.n_document_clusters == len(np.unique(gnd))


def _svmlight_by_hand(text, n_features):
    y, rows = [], []
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        y.append(int(float(f[0])))
        row = np.zeros(n_features)
        for item in f[1:]:
            i, v = item.split(":")
            row[int(i) - 1] = float(v)
        rows.append(row)
    return np.array(rows), np.array(y)


@requires
def test_libsvm_loaders_against_raw_files():
    from asymkern.datasets.libsvm import load_dna, load_phishing, load_usps

    got = load_dna()
    for k, f in enumerate(("dna.scale", "dna.scale.t")):
        X, y = _svmlight_by_hand(open(_raw(f"libsvm/dna/{f}")).read(), 180)
        np.testing.assert_array_equal(got[2 * k], X)
        np.testing.assert_array_equal(got[2 * k + 1], y)
    X, y = _svmlight_by_hand(gzip.open(_raw("libsvm/phishing/phishing.gz"), "rt").read(), 68)
    Xp, yp = load_phishing()
    np.testing.assert_array_equal(Xp, X)
    np.testing.assert_array_equal(yp, y)
    m = sio.loadmat(_raw("libsvm/usps/USPS.mat"))
    unit, libsvm = load_usps(), load_usps(scale="libsvm")
    for k, (dat, lab) in enumerate((("Train_DAT", "trainlabels"), ("Test_DAT", "testlabels"))):
        X = m[dat].T.astype(np.float64)  # samples are columns in the file
        digits = np.where(m[lab].ravel() == 10, 0, m[lab].ravel())
        np.testing.assert_array_equal(unit[2 * k], X)
        np.testing.assert_allclose(libsvm[2 * k], 2.0 * X - 1.0, rtol=0, atol=1e-15)
        np.testing.assert_array_equal(unit[2 * k + 1], digits)
        assert libsvm[2 * k].min() >= -1.0 and libsvm[2 * k].max() <= 1.0
    with pytest.raises(ValueError, match="scale"):
        load_usps(scale="minmax")


def _table(rel, sep=None, skip=0):
    raw = (gzip.open if rel.endswith(".gz") else open)(_raw(rel), "rt").read()
    lines = [ln.strip() for ln in raw.splitlines()][skip:]
    return [ln.split(sep) if sep else ln.split() for ln in lines if ln]


def _uci_reference(name):
    """(X, y) of a UCI set read here with plain Python, following MANIFEST.md §3."""
    f64 = lambda rows: np.array(rows, dtype=np.float64)  # noqa: E731
    if name in ("pima", "australian"):
        rel = ("uci/pima/pima-indians-diabetes.csv" if name == "pima"
               else "uci/australian/australian.dat")
        t = f64(_table(rel, "," if name == "pima" else None))
        return t[:, :-1], t[:, -1].astype(np.int64)
    if name in ("ionosphere", "sonar"):
        t = _table(f"uci/{name}/{name}.csv", ",")
        return f64([r[:-1] for r in t]), np.array([r[-1] for r in t])
    if name in ("liver", "spambase", "heart"):
        rel, sep = {"liver": ("uci/liver_bupa/bupa.data", ","),
                    "spambase": ("uci/spambase/spambase.data", ","),
                    "heart": ("uci/heart_statlog/heart.dat", None)}[name]
        t = f64(_table(rel, sep, skip=1))  # header line added by the hosting repo
        return t[:, :-1], t[:, -1].astype(np.int64)
    if name == "yacht":
        t = f64(_table("uci/yacht/yacht_hydrodynamics.data"))
        return t[:, :6], t[:, 6]
    if name == "casp":
        t = f64(_table("uci/casp_protein/CASP.csv.gz", ",", skip=1))
        return t[:, 1:], t[:, 0]
    if name == "cholesterol":
        attrs, data, on = [], [], False
        for ln in open(_raw("uci/cholesterol/cholesterol.arff")).read().splitlines():
            ln = ln.strip()
            if not ln or ln.startswith("%"):
                continue
            if on:
                data.append([c.strip() for c in ln.split(",")])
            elif ln.lower().startswith("@attribute"):
                attrs.append(ln.split()[1].strip("'\""))
            elif ln.lower().startswith("@data"):
                on = True
        t = f64([r for r in data if "?" not in r])
        j = attrs.index("chol")
        assert j == len(attrs) - 1
        return t[:, :j], t[:, j]
    raise KeyError(name)


UCI_NAMES = ["pima", "ionosphere", "sonar", "liver", "yacht", "cholesterol", "casp", "heart",
             "australian", "spambase"]


@requires
@pytest.mark.parametrize("name", UCI_NAMES)
def test_uci_loader_against_raw_file(name):
    from asymkern.datasets.uci import load_uci

    ds = load_uci(name)
    X, y = _uci_reference(name)
    np.testing.assert_array_equal(ds.X, X)
    np.testing.assert_array_equal(ds.y, y)
    assert ds.X.dtype == np.float64 and ds.X_test is None


@requires
@pytest.mark.parametrize("k", [1, 2, 3])
def test_monks_against_raw_files(k):
    from asymkern.datasets.uci import load_uci

    ds = load_uci(f"monks-{k}")
    for X, y, part in ((ds.X, ds.y, "train"), (ds.X_test, ds.y_test, "test")):
        t = np.array([r[:7] for r in _table(f"uci/monks/monks-{k}.{part}", skip=1)],
                     dtype=np.float64)  # class a1..a6 data_id; the first line is junk
        np.testing.assert_array_equal(X, t[:, 1:])
        np.testing.assert_array_equal(y, t[:, 0].astype(np.int64))


# ======================================================================== asymkern embed / demo
def _fit_reference(P, r, seed=0, **kw):
    from asymkern.decomposition import KernelSVD

    m = KernelSVD(r, kernel="sne", kernel_params={"bandwidth": "auto"}, center=True,
                  compat="pca", solver="auto", random_state=seed).fit(sp.csr_matrix(P))
    left, right = m.embeddings()
    return left, right, m.singular_values_


def test_embed_edge_list_reads_source_target_weights_and_ids(tmp_path, capsys):
    # ids with gaps (10, 20, ...) are rows in numeric order; a weight column; a self-loop;
    # node 40 only receives edges (a sink) and gets a row of its own
    lines = ["source,target,weight", "10,20,2", "20,30,1", "30,10,0.5", "30,30,1", "10,40,1",
             "20,40,3", "50,10,1", "# a comment", "50,20,1"]
    p = tmp_path / "g.csv"
    p.write_text("\n".join(lines) + "\n")
    ids = [10, 20, 30, 40, 50]
    A = np.zeros((5, 5))
    for s, t, w in [(10, 20, 2), (20, 30, 1), (30, 10, 0.5), (30, 30, 1), (10, 40, 1),
                    (20, 40, 3), (50, 10, 1), (50, 20, 1)]:
        A[ids.index(s), ids.index(t)] += w
    P = (A + np.eye(5)) / (A + np.eye(5)).sum(axis=1, keepdims=True)
    out = tmp_path / "e.npz"
    assert main(["embed", str(p), "--out", str(out), "-r", "2"]) == 0
    assert "read 8 edges among 5 nodes" in capsys.readouterr().out
    left, right, sv = _fit_reference(P, 2)
    with np.load(out) as d:
        assert sorted(d.files) == ["col_ids", "left", "right", "row_ids", "singular_values"]
        assert d["row_ids"].tolist() == ids == d["col_ids"].tolist()
        assert d["left"].shape == (5, 2) and d["right"].shape == (5, 2)
        np.testing.assert_allclose(d["singular_values"], sv, rtol=1e-8)
        # sign-free comparison: Σ_k left_k right_kᵀ
        np.testing.assert_allclose(d["left"] @ d["right"].T, left @ right.T, rtol=1e-7,
                                   atol=1e-9 * np.abs(left @ right.T).max())
    # the transposed graph (every edge reversed) is a different input
    rev = tmp_path / "rev.npz"
    assert main(["embed", str(p), "--out", str(rev), "-r", "2",
                 "--edge-direction", "dst-src"]) == 0
    lt, rt, svt = _fit_reference((A.T + np.eye(5)) / (A.T + np.eye(5)).sum(1, keepdims=True), 2)
    with np.load(rev) as d:
        np.testing.assert_allclose(d["singular_values"], svt, rtol=1e-8)
        assert not np.allclose(d["singular_values"], sv, rtol=1e-3)


def test_embed_csv_output_and_matrix_inputs(tmp_path, capsys):
    rng = np.random.default_rng(0)
    M = rng.random((7, 7))
    np.savetxt(tmp_path / "m.txt", M, delimiter=",")
    np.save(tmp_path / "m.npy", M)
    npz, out_csv = tmp_path / "a.npz", tmp_path / "a.csv"
    assert main(["embed", str(tmp_path / "m.npy"), "--out", str(npz), "-r", "3"]) == 0
    assert main(["embed", str(tmp_path / "m.txt"), "--out", str(out_csv), "-r", "3",
                 "--format", "matrix"]) == 0
    rows = list(csv.reader(io.StringIO(out_csv.read_text())))
    assert rows[0] == ["node", "left_0", "left_1", "left_2", "right_0", "right_1", "right_2"]
    assert [r[0] for r in rows[1:]] == [str(i) for i in range(7)]
    vals = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    with np.load(npz) as d:  # the text file holds the same matrix (to 18 digits)
        np.testing.assert_allclose(vals, np.hstack([d["left"], d["right"]]), rtol=1e-8,
                                   atol=1e-9 * np.abs(d["left"]).max())
    # a rectangular data matrix: rows and columns are separate sets
    np.save(tmp_path / "rect.npy", rng.standard_normal((9, 4)))
    assert main(["embed", str(tmp_path / "rect.npy"), "--out", str(npz), "-r", "2",
                 "--normalize", "none", "--kernel", "rbf"]) == 0
    with np.load(npz) as d:
        assert d["left"].shape == (9, 2) and d["right"].shape == (4, 2)
        assert d["row_ids"].tolist() == list(range(9)) and d["col_ids"].tolist() == [0, 1, 2, 3]
        assert np.all(np.isfinite(d["left"])) and np.all(np.isfinite(d["right"]))


def test_embed_sink_without_self_loops_is_finite(tmp_path, capsys):
    p = tmp_path / "g.tsv"
    p.write_text("0\t1\n1\t2\n2\t3\n0\t2\n4\t0\n1\t4\n")  # node 3: no out-edges
    out = tmp_path / "e.npz"
    assert main(["embed", str(p), "--out", str(out), "-r", "2", "--no-self-loops"]) == 0
    with np.load(out) as d:
        assert np.all(np.isfinite(d["left"])) and np.all(np.isfinite(d["right"]))


def _one_error(capsys, code, *needles):
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("asymkern: error:"), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]


def _run(argv):
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_embed_dense_matrix_text_file_hints_at_format_matrix(tmp_path, capsys):
    # read as an edge list by default: the error now says how to read it as a matrix
    np.savetxt(tmp_path / "m.csv", np.ones((4, 5)), delimiter=",")
    code = _run(["embed", str(tmp_path / "m.csv"), "--out", str(tmp_path / "e.npz"), "-r", "1"])
    _one_error(capsys, code, "malformed edge line", "--format matrix")


@pytest.mark.parametrize("argv,needle", [
    (["--sep", "pipe"], "--sep"), (["--edge-direction", "up"], "--edge-direction"),
    (["--normalize", "sum"], "--normalize"), (["--compat", "x"], "--compat"),
    (["--format", "xls"], "--format"), (["--kernel", "directed_graph"], "adjacency")])
def test_embed_bad_choices_are_one_line(tmp_path, capsys, argv, needle):
    p = tmp_path / "g.csv"
    p.write_text("0,1\n1,2\n2,0\n")
    out = tmp_path / "e.npz"
    _one_error(capsys, _run(["embed", str(p), "--out", str(out), "-r", "1"] + argv), needle)
    assert not out.exists()


@pytest.mark.parametrize("argv,needle", [(["--seed", "-1"], "--seed"),
                                         (["--seed", "x"], "--seed"),
                                         (["--quick", "--fast"], "--fast")])
def test_demo_bad_arguments_are_one_line(capsys, argv, needle):
    _one_error(capsys, _run(["demo"] + argv), needle)


def test_data_files_unpickle_only_arrays_and_sparse_matrices(tmp_path):
    """The .npz reader of pickled data files refuses classes other than numpy's, scipy's
    sparse matrices and plain containers (a data file is not a program)."""
    import pickle

    from asymkern.datasets.graphs import _read_npz_objects

    good = tmp_path / "good.npz"
    np.savez(good, adj_matrix=np.array(sp.eye(3, format="csr"), dtype=object),
             node_label=np.arange(3), metadata=np.array({"class_names": ["a"]}, dtype=object))
    got = _read_npz_objects(good, ("adj_matrix", "node_label", "metadata", "absent"))
    assert sp.issparse(got["adj_matrix"].item()) and set(got) == {"adj_matrix", "node_label",
                                                                   "metadata"}
    np.testing.assert_array_equal(got["node_label"], np.arange(3))
    assert got["metadata"].item() == {"class_names": ["a"]}
    bad = tmp_path / "bad.npz"
    np.savez(bad, adj_matrix=np.array(warnings.WarningMessage, dtype=object))
    with pytest.raises(pickle.UnpicklingError, match="refusing to unpickle"):
        _read_npz_objects(bad, ("adj_matrix",))
