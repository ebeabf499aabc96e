"""Data-driven bandwidths ('auto', 'median'), the KernelSVD rounding-noise warning, and the
defaults of ``asymkern embed`` giving a useful embedding (issue 12, task 4)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import euclidean_distances

from asymkern.cli import main
from asymkern.datasets.graphs import directed_sbm, row_normalized_adjacency
from asymkern.decomposition import KernelSVD
from asymkern.decomposition.ksvd import AUTO_BANDWIDTH_FACTOR, median_bandwidth
from asymkern.graphs import node_classification
from asymkern.testing import requires_data


def _normalize(E):
    return E / np.sqrt(np.sum(E * E) / E.shape[0])


# ------------------------------------------------------------------------- median heuristic
def test_median_bandwidth_matches_brute_force():
    rng = np.random.default_rng(1)
    X, Z = rng.standard_normal((40, 3)), rng.standard_normal((25, 3)) + 1.0
    D = euclidean_distances(X, Z)
    assert median_bandwidth(X, Z) == pytest.approx(np.median(D[D > 0]), rel=1e-12)
    # sparse input gives the same value; a subsample is deterministic
    assert median_bandwidth(sp.csr_matrix(X), sp.csr_matrix(Z)) == pytest.approx(
        median_bandwidth(X, Z), rel=1e-12)
    big = rng.standard_normal((900, 2))
    assert median_bandwidth(big, big) == median_bandwidth(big, big)
    assert median_bandwidth(np.zeros((5, 2)), np.zeros((4, 2))) == 1.0


@pytest.mark.parametrize("offset", [1e8, 1e9])
def test_median_bandwidth_of_data_far_from_the_origin(offset):
    """Distances are translation invariant: data at 1e8 or 1e9 (whose unit-scale noise the
    float64 offset keeps to 1e-7) give the bandwidth of the data at 0. scikit-learn's
    expanded ``euclidean_distances`` gave 2.83 and 22.6 instead of 2.16."""
    rng = np.random.default_rng(0)
    X, Z = rng.normal(size=(300, 3)), rng.normal(size=(200, 3))
    at0 = median_bandwidth(X, Z)
    assert median_bandwidth(X + offset, Z + offset) == pytest.approx(at0, rel=1e-6)
    m = KernelSVD(3, kernel="rbf", kernel_params={"bandwidth": "median"})
    assert m.fit(X + offset, Z=Z + offset).bandwidth_ == pytest.approx(at0, rel=1e-6)


@pytest.mark.parametrize("rule,factor", [("auto", AUTO_BANDWIDTH_FACTOR), ("median", 1.0)])
@pytest.mark.parametrize("kernel", ["rbf", "sne"])
def test_named_bandwidth_equals_explicit_value(rule, factor, kernel):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, 4))
    Z = rng.standard_normal((50, 4)) * 2
    m = KernelSVD(3, kernel=kernel, kernel_params={"bandwidth": rule}).fit(X, Z=Z)
    expected = factor * median_bandwidth(X, Z)
    assert m.bandwidth_ == pytest.approx(expected, rel=1e-12)
    ref = KernelSVD(3, kernel=kernel, kernel_params={"bandwidth": expected}).fit(X, Z=Z)
    np.testing.assert_allclose(m.singular_values_, ref.singular_values_, rtol=1e-10)
    np.testing.assert_allclose(m.transform(X[:5]), ref.transform(X[:5]), rtol=1e-8, atol=1e-12)
    assert m.kernel_params == {"bandwidth": rule}  # the parameter itself is not modified


def test_auto_bandwidth_with_compat_uses_the_transformed_sets():
    rng = np.random.default_rng(3)
    A = rng.random((30, 12))
    m = KernelSVD(2, kernel="rbf", kernel_params={"bandwidth": "auto"}, compat="pca").fit(A)
    assert m.bandwidth_ == pytest.approx(
        AUTO_BANDWIDTH_FACTOR * median_bandwidth(m.X_fit_, m.Z_fit_), rel=1e-12)


def test_bad_named_bandwidth():
    X = np.random.default_rng(0).standard_normal((10, 2))
    with pytest.raises(ValueError, match="'auto' or 'median'"):
        KernelSVD(2, kernel="rbf", kernel_params={"bandwidth": "wide"}).fit(X, Z=X)
    with pytest.raises(ValueError, match="either gamma or bandwidth"):
        KernelSVD(2, kernel="rbf", kernel_params={"bandwidth": "auto", "gamma": 1.0}).fit(X, Z=X)


# ------------------------------------------------------------------------- noise warning
def test_warning_when_trailing_singular_values_are_rounding_noise():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((120, 3)).astype(np.float32)
    # bandwidth 1e4: the RBF kernel matrix is 1 - O(1e-8): rank one in float32
    with pytest.warns(UserWarning, match=r"only 1 of the 5 singular values.*bandwidth=10000"):
        m = KernelSVD(5, kernel="rbf", kernel_params={"bandwidth": 1e4}).fit(X, Z=X)
    assert m.n_informative_ == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = KernelSVD(5, kernel="rbf", kernel_params={"bandwidth": "auto"}).fit(X, Z=X)
    assert m.n_informative_ == 5
    m = KernelSVD(5, kernel="rbf", kernel_params={"bandwidth": "median"}).fit(X, Z=X)
    assert m.singular_values_[-1] / m.singular_values_[0] > 1e-2


def test_warning_for_a_low_rank_precomputed_matrix():
    rng = np.random.default_rng(5)
    G = rng.standard_normal((30, 2)) @ rng.standard_normal((2, 20))
    with pytest.warns(UserWarning, match="only 2 of the 4.*low rank"):
        m = KernelSVD(4, kernel="precomputed", solver="dense").fit(G)
    assert m.n_informative_ == 2


def test_centred_fit_noise_level_uses_the_uncentred_scale():
    # float32 SNE with a huge bandwidth: centring leaves only rounding noise of the ~1/n entries
    A, _ = directed_sbm(n_per_class=40, n_classes=3, random_state=0)
    P = row_normalized_adjacency(A).astype(np.float32)
    with pytest.warns(UserWarning, match="carry no information"):
        KernelSVD(4, kernel="sne", kernel_params={"bandwidth": 1e4}, center=True).fit(P)


# ------------------------------------------------------------------------- CLI defaults
def _sbm_edge_list(tmp_path):
    A, y = directed_sbm(n_per_class=100, n_classes=3, p_forward=0.04, p_backward=0.01,
                        p_within=0.02, random_state=0)
    A = sp.coo_matrix(A)
    p = tmp_path / "sbm.csv"
    p.write_text("\n".join(f"{i},{j}" for i, j in zip(A.row, A.col)) + "\n")
    return p, y, A.shape[0]


def _cli_f1(tmp_path, extra, capsys):
    edges, y, n = _sbm_edge_list(tmp_path)
    out = tmp_path / "e.npz"
    assert main(["embed", str(edges), "--out", str(out), "-r", "8"] + extra) == 0
    with np.load(out) as d:
        ids = d["row_ids"].astype(int)
        E = np.hstack([d["left"], d["right"]])
        s = d["singular_values"]
    labels = y[ids]
    f1 = node_classification(_normalize(E), labels, n_trials=3)["micro_f1"]
    majority = np.bincount(labels).max() / len(labels)
    return f1, majority, s, capsys.readouterr().err


def test_embed_defaults_give_a_useful_embedding(tmp_path, capsys):
    f1, majority, s, err = _cli_f1(tmp_path, [], capsys)
    assert "warning" not in err
    assert s[-1] / s[0] > 0.1  # a real spectrum, not [1, 1e-7, 1e-7, ...]
    assert f1 > majority + 0.05
    # the old defaults (uncentred, gamma = 1/N): components 2.. are ~1e-5 of the first and the
    # classifier sees only the trivial leading component
    f1_old, majority, s_old, _ = _cli_f1(tmp_path, ["--no-center", "--gamma",
                                                    str(1.0 / 300)], capsys)
    assert s_old[1] / s_old[0] < 1e-3
    assert f1_old < majority + 0.03


@requires_data("cora")
def test_embed_defaults_on_cora(tmp_path, capsys):
    from asymkern.datasets.graphs import load_citation_graph

    g = load_citation_graph("cora")
    A = sp.coo_matrix(g.adjacency)
    edges = tmp_path / "cora.csv"
    edges.write_text("\n".join(f"{i},{j}" for i, j in zip(A.row, A.col)) + "\n")
    out = tmp_path / "cora.npz"
    assert main(["embed", str(edges), "--out", str(out)]) == 0
    with np.load(out) as d:
        ids = d["row_ids"].astype(int)
        E = np.hstack([d["left"], d["right"]])
        s = d["singular_values"]
    assert s[1] / s[0] > 0.1 and s[-1] / s[0] > 0.1
    f1 = node_classification(_normalize(E), g.labels[ids], n_trials=3)["micro_f1"]
    assert f1 > 0.5  # the old default scored the majority rate 0.302
