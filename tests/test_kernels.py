"""Kernel layer: every kernel against a dense numpy reference; KernelMatrix blocks vs dense."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import euclidean_distances, manhattan_distances

from asymkern import config_context
from asymkern.kernels import (
    CompatibilityTransform,
    KernelMatrix,
    MemoryBudgetError,
    get_kernel,
)


@pytest.fixture
def XZ(rng):
    return rng.standard_normal((37, 4)), rng.standard_normal((23, 4)) + 0.3


def reference(name, X, Z, R=None):
    D2 = euclidean_distances(X, Z, squared=True)
    if name == "rbf":
        return np.exp(-0.5 * D2)
    if name == "laplacian":
        return np.exp(-0.5 * manhattan_distances(X, Z))
    if name == "linear":
        return X @ Z.T
    if name == "poly":
        return (0.5 * X @ Z.T + 1.0) ** 3
    if name == "cauchy":
        return 1.0 / (1.0 + D2)
    R = Z if R is None else R
    if name == "sne":
        return np.exp(-0.5 * D2) / np.exp(-0.5 * euclidean_distances(X, R, squared=True)).sum(
            1, keepdims=True
        )
    if name == "t":
        return (1 / (1 + D2)) / (1 / (1 + euclidean_distances(X, R, squared=True))).sum(
            1, keepdims=True
        )
    raise KeyError(name)


PARAMS = {
    "rbf": {"gamma": 0.5},
    "laplacian": {"gamma": 0.5},
    "linear": {},
    "poly": {"gamma": 0.5, "degree": 3},
    "cauchy": {},
    "sne": {"gamma": 0.5},
    "t": {},
}


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_kernel_values_match_dense_reference(name, XZ):
    X, Z = XZ
    k = get_kernel(name, **PARAMS[name])
    np.testing.assert_allclose(k(X, Z), reference(name, X, Z), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_kernel_matrix_blocks_and_products_match_dense(name, XZ, rng):
    X, Z = XZ
    k = get_kernel(name, **PARAMS[name])
    G = reference(name, X, Z)
    for center in (False, True):
        Gref = G - G.mean(1, keepdims=True) - G.mean(0, keepdims=True) + G.mean() if center else G
        # tiny working memory forces many blocks
        km = KernelMatrix(k, X, Z, center=center, working_memory=0.001)
        assert km.block_rows() < X.shape[0]
        np.testing.assert_allclose(km.to_array(), Gref, atol=1e-12)
        rows, cols = np.array([5, 0, 30]), np.array([22, 3])
        np.testing.assert_allclose(km.block(rows, cols), Gref[np.ix_(rows, cols)], atol=1e-12)
        np.testing.assert_allclose(km.rows(rows), Gref[rows], atol=1e-12)
        np.testing.assert_allclose(km.cols(cols), Gref[:, cols], atol=1e-12)
        V = rng.standard_normal((Z.shape[0], 3))
        U = rng.standard_normal((X.shape[0], 2))
        np.testing.assert_allclose(km.matmat(V), Gref @ V, atol=1e-11)
        np.testing.assert_allclose(km.rmatmat(U), Gref.T @ U, atol=1e-11)
        np.testing.assert_allclose(km.matvec(V[:, 0]), Gref @ V[:, 0], atol=1e-11)
        op = km.aslinearoperator()
        np.testing.assert_allclose(op.rmatvec(U[:, 0]), Gref.T @ U[:, 0], atol=1e-11)
        np.testing.assert_allclose(km.row_sums(), Gref.sum(1), atol=1e-10)
        np.testing.assert_allclose(km.col_sums(), Gref.sum(0), atol=1e-10)


def test_row_normalized_kernels_are_asymmetric_and_rows_sum_to_one(rng):
    X = rng.standard_normal((20, 3))
    for name in ("sne", "t"):
        k = get_kernel(name)
        assert not k.is_symmetric and not k.is_psd
        G = k(X, X)
        np.testing.assert_allclose(G.sum(1), 1.0)
        assert np.abs(G - G.T).max() > 1e-3


def test_reference_set_controls_normalisation(XZ, rng):
    X, Z = XZ
    R = rng.standard_normal((11, 4))
    k = get_kernel("sne", gamma=0.5)
    np.testing.assert_allclose(k(X, Z, reference=R), reference("sne", X, Z, R), atol=1e-13)
    km = KernelMatrix(k, X, Z, reference=R, working_memory=0.001)
    np.testing.assert_allclose(km.cols([1, 2]), reference("sne", X, Z, R)[:, [1, 2]], atol=1e-13)


def test_bandwidth_parametrisation_of_paper_000():
    X = np.array([[0.0], [1.0]])
    k = get_kernel("rbf", bandwidth=2.0)
    assert k(X)[0, 1] == pytest.approx(np.exp(-1 / 4))
    with pytest.raises(ValueError, match="either gamma or bandwidth"):
        get_kernel("rbf", gamma=1.0, bandwidth=2.0)(X)


def test_float32_stays_float32(XZ):
    X, Z = (a.astype(np.float32) for a in XZ)
    for name in PARAMS:
        km = KernelMatrix(get_kernel(name, **PARAMS[name]), X, Z, center=True)
        assert km.dtype == np.float32
        assert km.to_array().dtype == np.float32
        assert km.matmat(np.ones((Z.shape[0], 2), np.float32)).dtype == np.float32
        np.testing.assert_allclose(
            km.to_array(), KernelMatrix(get_kernel(name, **PARAMS[name]), *XZ, center=True)
            .to_array(), rtol=2e-3, atol=2e-4
        )


def test_sparse_inputs_match_dense(XZ):
    X, Z = XZ
    X[X < 0.3] = 0
    Z[Z < 0.3] = 0
    for name in ("rbf", "linear", "poly", "laplacian", "sne"):
        k = get_kernel(name, **PARAMS[name])
        np.testing.assert_allclose(
            k(sp.csr_matrix(X), sp.csr_matrix(Z)), k(X, Z), rtol=1e-10, atol=1e-12
        )


def test_callable_kernel_is_checked(XZ):
    X, Z = XZ
    k = get_kernel(lambda A, B: A @ B.T + 1.0)
    np.testing.assert_allclose(k(X, Z), X @ Z.T + 1.0)
    with pytest.raises(ValueError, match=r"shape \(\d+, 22\); expected \(\d+, 23\)"):
        get_kernel(lambda A, B: (A @ B.T)[:, 1:])(X, Z)
    with pytest.raises(ValueError, match="non-finite"):
        get_kernel(lambda A, B: np.full((len(A), len(B)), np.nan))(X, Z)


def test_callable_kernel_complex_output_is_refused_not_cast(XZ):
    """Issue 29: a complex kernel value was cast to real with only a ComplexWarning."""
    X, Z = XZ
    for out in (lambda A, B: (A @ B.T) * (1 + 1j),  # complex dtype, nonzero imaginary part
                lambda A, B: (A @ B.T) + 0j,  # complex dtype, zero imaginary part
                lambda A, B: np.array((A @ B.T).tolist(), dtype=object) * 1j):  # objects
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no ComplexWarning on the way
            with pytest.raises(ValueError, match="kernel callable returned complex values"):
                get_kernel(out)(X, Z)
    with pytest.raises(TypeError, match="kernel callable returned non-numeric"):
        get_kernel(lambda A, B: np.full((len(A), len(B)), "a"))(X, Z)
    # an estimator with a complex callable kernel refuses too
    from asymkern.operators import KoopmanOperator

    with pytest.raises(ValueError, match="kernel callable returned complex values"):
        KoopmanOperator(kernel=lambda A, B: (A @ B.T) * (1 + 1j)).fit(X)


def test_bad_inputs_raise_named_errors(XZ):
    X, Z = XZ
    k = get_kernel("rbf")
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        k(Xn, Z)
    with pytest.raises(ValueError, match="X has 4 features but Z has 3"):
        k(X, Z[:, :3])
    with pytest.raises(ValueError, match="Z has 0 sample"):
        k(X, Z[:0])
    with pytest.raises(ValueError, match="2-D"):
        k(X[0], Z)
    with pytest.raises(ValueError, match="unknown kernel 'nope'"):
        get_kernel("nope")
    with pytest.raises(ValueError, match="gamma must be finite and > 0"):
        get_kernel("rbf", gamma=-1.0)(X, Z)
    before = X.copy()
    KernelMatrix(k, X, Z, center=True).to_array()
    np.testing.assert_array_equal(X, before)


def test_to_array_refuses_past_budget(XZ):
    X, Z = XZ
    km = KernelMatrix(get_kernel("rbf"), X, Z, max_dense_memory=1e-6)
    with pytest.raises(MemoryBudgetError, match="needs .* MiB"):
        km.to_array()
    with config_context(max_dense_memory=1e-6):
        with pytest.raises(MemoryBudgetError):
            get_kernel("rbf")(X, Z)


def test_compatibility_transforms_follow_algorithm_1(rng):
    A = rng.standard_normal((6, 10))  # N=6 rows in R^10, M=10 columns in R^6: M > N, map x
    for method in ("pinv", "pca", "random", "a0", "a1", "a2"):
        ct = CompatibilityTransform(method, random_state=0).fit(A)
        assert ct.side_ == "x" and ct.C_.shape == (10, 6)
        Xc, Zc = ct.fit_transform(A)
        assert Xc.shape == (6, 6) and Zc.shape == (10, 6)
    ct = CompatibilityTransform("pinv").fit(A)
    np.testing.assert_allclose(ct.C_, np.linalg.pinv(A), atol=1e-10)  # ((AAᵀ)^†A)ᵀ = A^†
    ct = CompatibilityTransform("pca").fit(A)
    np.testing.assert_allclose(ct.C_.T @ ct.C_, np.eye(6), atol=1e-10)
    np.testing.assert_allclose(A @ ct.C_ @ ct.C_.T, A, atol=1e-10)  # rank-N data: exact
    ct = CompatibilityTransform("pca").fit(A.T)  # N > M: map the columns
    assert ct.side_ == "z" and ct.C_.shape == (10, 6)
    assert CompatibilityTransform("pca").fit(rng.standard_normal((5, 5))).side_ == "none"
    with pytest.raises(ValueError, match="learnable"):
        CompatibilityTransform("a3").fit(A)
    with pytest.raises(ValueError, match="expected \\(10, 6\\)"):
        CompatibilityTransform(np.ones((3, 3))).fit(A)


def test_sne_with_tiny_bandwidth_does_not_underflow(rng):
    """exp(−‖x−z‖²/γ²) underflows to 0 for every z when γ is small; the log-sum-exp does not."""
    X = rng.standard_normal((15, 3)) * 10
    Z = rng.standard_normal((12, 3)) * 10
    k = get_kernel("sne", bandwidth=0.05)
    G = KernelMatrix(k, X, Z, working_memory=0.0005).to_array()
    assert np.all(np.isfinite(G))
    np.testing.assert_allclose(G.sum(1), 1.0)
    D2 = euclidean_distances(X, Z, squared=True)
    np.testing.assert_array_equal(G.argmax(1), D2.argmin(1))
    Gc = KernelMatrix(k, X, Z, working_memory=0.0005).cols([0, 3])
    np.testing.assert_allclose(Gc, G[:, [0, 3]])
