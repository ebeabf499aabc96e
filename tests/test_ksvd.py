"""KernelSVD (paper 000 §2): CCE identities, solver agreement, KPCA special case, out-of-sample."""

import numpy as np
import pytest
import scipy.sparse as sp

from asymkern import KernelPCA, KernelSVD, config_context, get_kernel
from asymkern.exceptions import ClippedParameterWarning
from asymkern.kernels import KernelMatrix
from asymkern.linalg import top_svd


def principal_cosines(A, B):
    qa, _ = np.linalg.qr(A)
    qb, _ = np.linalg.qr(B)
    return np.linalg.svd(qa.T @ qb, compute_uv=False)


@pytest.fixture
def two_sets(rng):
    return rng.standard_normal((60, 5)), rng.standard_normal((45, 5)) * 1.3 + 0.2


@pytest.mark.parametrize("kernel", ["sne", "rbf", "t", "laplacian"])
@pytest.mark.parametrize("center", [False, True])
def test_cce_identities_and_training_scores(two_sets, kernel, center):
    X, Z = two_sets
    r = 6
    m = KernelSVD(r, kernel=kernel, center=center, solver="dense").fit(X, Z=Z)
    G = get_kernel(kernel)(X, Z)
    if center:
        G = G - G.mean(1, keepdims=True) - G.mean(0, keepdims=True) + G.mean()
    U, V, s = m.left_singular_vectors_, m.right_singular_vectors_, m.singular_values_
    # coupled covariances eigenproblem: G V = U Σ, Gᵀ U = V Σ (Prop. 2.4-2.5)
    np.testing.assert_allclose(G @ V, U * s, atol=1e-10)
    np.testing.assert_allclose(G.T @ U, V * s, atol=1e-10)
    np.testing.assert_allclose(s, np.linalg.svd(G, compute_uv=False)[:r], rtol=1e-10)
    assert np.all(np.diff(s) <= 0)
    # projection scores on the training data equal UΣ and VΣ
    np.testing.assert_allclose(m.transform(X), U * s, atol=1e-10)
    np.testing.assert_allclose(m.transform_right(Z), V * s, atol=1e-10)
    np.testing.assert_allclose(m.fit_transform(X, Z=Z), U * s, atol=1e-10)


def test_swapping_sets_swaps_singular_vectors(two_sets):
    X, Z = two_sets
    a = KernelSVD(5, kernel="rbf", solver="dense").fit(X, Z=Z)
    b = KernelSVD(5, kernel="rbf", solver="dense").fit(Z, Z=X)
    np.testing.assert_allclose(a.singular_values_, b.singular_values_, rtol=1e-10)
    # rbf is symmetric, so G(Z, X) = G(X, Z)ᵀ: U and V trade places (up to paired signs)
    for i in range(5):
        sgn = np.sign(a.left_singular_vectors_[:, i] @ b.right_singular_vectors_[:, i])
        np.testing.assert_allclose(a.left_singular_vectors_[:, i],
                                   sgn * b.right_singular_vectors_[:, i], atol=1e-9)
        np.testing.assert_allclose(a.right_singular_vectors_[:, i],
                                   sgn * b.left_singular_vectors_[:, i], atol=1e-9)


def test_symmetric_psd_kernel_same_sets_equals_kpca(rng):
    X = rng.standard_normal((80, 3))
    ks = KernelSVD(5, kernel="rbf", kernel_params={"gamma": 0.3}, solver="dense").fit(X, Z=X)
    kp = KernelPCA(5, kernel="rbf", kernel_params={"gamma": 0.3}, center=False).fit(X)
    np.testing.assert_allclose(ks.singular_values_, kp.eigenvalues_, rtol=1e-10)
    np.testing.assert_allclose(ks.left_singular_vectors_, kp.eigenvectors_, atol=1e-9)
    np.testing.assert_allclose(ks.right_singular_vectors_, kp.eigenvectors_, atol=1e-9)
    Xn = rng.standard_normal((7, 3))
    # KSVD scores are KPCA scores scaled by sqrt(λ_i) per component
    np.testing.assert_allclose(
        ks.transform(Xn), kp.transform(Xn) * np.sqrt(kp.eigenvalues_), atol=1e-9
    )
    # with centring on both sides KSVD equals centred KPCA too
    ksc = KernelSVD(5, kernel="rbf", kernel_params={"gamma": 0.3}, center=True).fit(X, Z=X)
    kpc = KernelPCA(5, kernel="rbf", kernel_params={"gamma": 0.3}, center=True).fit(X)
    np.testing.assert_allclose(ksc.singular_values_, kpc.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(
        ksc.transform(Xn), kpc.transform(Xn) * np.sqrt(kpc.eigenvalues_), atol=1e-8
    )


@pytest.mark.parametrize("center", [False, True])
def test_all_solvers_agree_on_top_subspace(two_sets, center):
    X, Z = two_sets
    ref = KernelSVD(4, kernel="sne", center=center, solver="dense").fit(X, Z=Z)
    for solver in ("arpack", "randomized"):
        m = KernelSVD(4, kernel="sne", center=center, solver=solver, random_state=0,
                      n_iter=10).fit(X, Z=Z)
        np.testing.assert_allclose(m.singular_values_, ref.singular_values_, rtol=1e-7)
        assert principal_cosines(m.left_singular_vectors_,
                                 ref.left_singular_vectors_).min() > 1 - 1e-8
        assert principal_cosines(m.right_singular_vectors_,
                                 ref.right_singular_vectors_).min() > 1 - 1e-8


def test_randomized_on_lazy_operator_never_forms_matrix(rng):
    # G (600×450 float64, 2.1 MiB) does not fit the 1 MiB budget, the range finder's n×k and
    # m×k blocks (k = 13, ~0.3 MiB, checked against the budget too) do
    X, Z = rng.standard_normal((600, 5)), rng.standard_normal((450, 5))
    ref = KernelSVD(3, kernel="rbf", solver="dense").fit(X, Z=Z)
    with config_context(max_dense_memory=1, working_memory=0.2):
        km = KernelMatrix(get_kernel("rbf"), X, Z)
        with pytest.raises(MemoryError):
            km.to_array()
        res = top_svd(km, 3, solver="auto", random_state=0, n_iter=10)  # auto -> randomized
        assert res.solver == "randomized"
        m = KernelSVD(3, kernel="rbf", solver="auto", n_iter=10, random_state=0).fit(X, Z=Z)
    np.testing.assert_allclose(res.s, ref.singular_values_, rtol=1e-8)
    np.testing.assert_allclose(m.singular_values_, ref.singular_values_, rtol=1e-8)
    np.testing.assert_allclose(np.abs(res.U), np.abs(ref.left_singular_vectors_), atol=1e-6)


def test_out_of_sample_centring_is_consistent(two_sets, rng):
    """A new point equal to a training point gets the training score, centred or not."""
    X, Z = two_sets
    for kernel in ("sne", "rbf"):
        m = KernelSVD(3, kernel=kernel, center=True).fit(X, Z=Z)
        emb_l, emb_r = m.embeddings()
        np.testing.assert_allclose(m.transform(X[[4, 9]]), emb_l[[4, 9]], atol=1e-10)
        np.testing.assert_allclose(m.transform_right(Z[[2]]), emb_r[[2]], atol=1e-10)
        # and the score of a new point is the explicit formula with centred feature maps
        xn = rng.standard_normal((1, 5))
        g = get_kernel(kernel)(xn, Z)
        G = get_kernel(kernel)(X, Z)
        gt = g - g.mean() - G.mean(0) + G.mean()
        np.testing.assert_allclose(m.transform(xn), gt @ m.right_singular_vectors_, atol=1e-10)


def test_float32_preserved(two_sets):
    X, Z = (a.astype(np.float32) for a in two_sets)
    for solver in ("dense", "arpack", "randomized"):
        m = KernelSVD(3, kernel="sne", solver=solver, random_state=0).fit(X, Z=Z)
        assert m.left_singular_vectors_.dtype == np.float32
        assert m.singular_values_.dtype == np.float32
        assert m.transform(X).dtype == np.float32
    m64 = KernelSVD(3, kernel="sne", solver="dense").fit(*[a.astype(float) for a in (X,)],
                                                          Z=Z.astype(float))
    np.testing.assert_allclose(m.singular_values_, m64.singular_values_, rtol=1e-3)


def test_data_matrix_mode_and_precomputed_mode(rng):
    A = np.abs(rng.standard_normal((30, 12)))  # rows in R^12, columns in R^30
    m = KernelSVD(4, kernel="rbf", compat="pca").fit(A)
    assert m.left_singular_vectors_.shape == (30, 4)
    assert m.right_singular_vectors_.shape == (12, 4)
    np.testing.assert_allclose(m.transform(A), m.embeddings()[0], atol=1e-10)
    np.testing.assert_allclose(m.transform_right(A.T), m.embeddings()[1], atol=1e-10)
    with pytest.raises(ValueError, match="set compat"):
        KernelSVD(4, compat=None).fit(A)
    # square data matrix (a directed graph): rows vs columns, no compat
    Adj = (rng.random((25, 25)) < 0.2).astype(float)
    g = KernelSVD(3, kernel="sne", compat=None).fit(sp.csr_matrix(Adj))
    G = get_kernel("sne")(Adj, Adj.T)
    np.testing.assert_allclose(g.singular_values_, np.linalg.svd(G, compute_uv=False)[:3],
                               rtol=1e-10)
    # precomputed: linear SVD of the matrix itself (the SVD baseline)
    p = KernelSVD(3, kernel="precomputed").fit(G)
    np.testing.assert_allclose(p.singular_values_, g.singular_values_, rtol=1e-10)
    np.testing.assert_allclose(p.transform(G), p.embeddings()[0], atol=1e-10)
    np.testing.assert_allclose(p.transform_right(G.T), p.embeddings()[1], atol=1e-10)


def test_deterministic_signs(two_sets):
    X, Z = two_sets
    a = KernelSVD(4, kernel="sne", solver="arpack", random_state=1).fit(X, Z=Z)
    b = KernelSVD(4, kernel="sne", solver="dense").fit(X, Z=Z)
    np.testing.assert_allclose(a.left_singular_vectors_, b.left_singular_vectors_, atol=1e-8)
    np.testing.assert_allclose(a.right_singular_vectors_, b.right_singular_vectors_, atol=1e-8)


def test_bad_input(two_sets):
    X, Z = two_sets
    Xc, Zc = X.copy(), Z.copy()
    bad = X.copy()
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        KernelSVD(2).fit(bad, Z=Z)
    with pytest.raises(ValueError, match="X has 5 features but Z has 4"):
        KernelSVD(2).fit(X, Z=Z[:, :4])
    with pytest.raises(ValueError, match="Z has 0 sample"):
        KernelSVD(2).fit(X, Z=Z[:0])
    # issue 15: too many components are clipped (scikit-learn's convention), not an error
    with pytest.warns(ClippedParameterWarning, match="n_components=46 is larger than min"):
        clipped = KernelSVD(46, solver="dense").fit(X, Z=Z)
    assert clipped.n_components_ == 45 and clipped.singular_values_.shape == (45,)
    with pytest.raises(ValueError, match="n_components must be >= 1"):
        KernelSVD(0).fit(X, Z=Z)
    with pytest.raises(ValueError, match="shape"):
        KernelSVD(2, kernel=lambda A, B: np.ones((2, 2))).fit(X, Z=Z)
    with pytest.raises(ValueError, match="non-finite"):
        KernelSVD(2, kernel=lambda A, B: np.full((len(A), len(B)), np.nan)).fit(X, Z=Z)
    with pytest.raises(TypeError, match="Z=Z"):
        KernelSVD(2).fit(X, Z)
    with pytest.raises(ValueError, match="solver must be one of"):
        KernelSVD(2, solver="magic").fit(X, Z=Z)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        KernelSVD(2).transform(X)
    m = KernelSVD(2).fit(X, Z=Z)
    with pytest.raises(ValueError, match="X has 4 features, but KernelSVD is expecting 5"):
        m.transform(X[:, :4])
    np.testing.assert_array_equal(X, Xc)
    np.testing.assert_array_equal(Z, Zc)


# scikit-learn's common checks at default parameters (issue 15) run in
# tests/test_decomposition_sklearn.py::test_sklearn_common_checks
