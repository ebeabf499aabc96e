"""Defects fixed in round 16.

* A centred ``KernelMatrix.to_array`` copied each block of the passes' row partition into
  the output: where the output fits ``working_memory`` that partition is one block, so the
  peak was about twice the output (2.03× for RBF and SNE, traced). The blocks are now formed
  straight into the output's rows (a cached block is copied), with the same partition, so
  the entries are unchanged bit for bit.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from asymkern.kernels import KernelMatrix, get_kernel


def _data():
    rng = np.random.default_rng(3)
    return rng.standard_normal((700, 6)), rng.standard_normal((600, 6)) * 1.3 + 0.4


def _centred_definition(kernel, X, Z):
    K = KernelMatrix(kernel, X, Z, center=False).to_array()
    return K - K.mean(axis=1, keepdims=True) - K.mean(axis=0, keepdims=True) + K.mean(), K


@pytest.mark.parametrize("kernel", ["rbf", "sne"])
def test_centred_to_array_peaks_near_its_output(kernel):
    X, Z = _data()
    G = KernelMatrix(get_kernel(kernel), X, Z, center=True)  # one block: 700×600 ≪ 64 MiB
    assert G.block_rows() == X.shape[0]
    tracemalloc.start()
    try:
        A = G.to_array()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 1.3 * A.nbytes, peak / A.nbytes  # the block copy made it 2.03×
    H, K = _centred_definition(G.kernel, X, Z)
    np.testing.assert_allclose(A, H, rtol=0, atol=1e-14 * np.abs(K).max())


@pytest.mark.parametrize("kernel", ["rbf", "sne", "laplacian"])
@pytest.mark.parametrize("wm", [0.05, None])
def test_centred_to_array_equals_the_passes_blocks_bitwise(kernel, wm):
    X, Z = _data()
    kw = {} if wm is None else {"working_memory": wm}
    G = KernelMatrix(get_kernel(kernel), X, Z, center=True, **kw)
    blocks = np.vstack([B for _, B in G.iter_row_blocks()])  # the passes' own blocks
    np.testing.assert_array_equal(G.to_array(), blocks)
    # a cached copy: its blocks are filled by a pass, then copied into the output
    C = KernelMatrix(get_kernel(kernel), X, Z, center=True, **kw).cached(G.nbytes * 2)
    C @ np.ones((Z.shape[0], 2))
    assert C._cache  # the pass filled the cache
    np.testing.assert_array_equal(C.to_array(), blocks)
    np.testing.assert_array_equal(C.to_array(), blocks)


def test_linear_operator_without_adjoint_is_refused_naming_b():
    """A LinearOperator B without ``rmatvec``: scipy's ``rmatmat`` failed with a bare
    "'NoneType' object is not callable" in the auxiliary and block routes and in
    ``apply_adjoint``; the error now names B and the missing product."""
    from scipy.sparse.linalg import LinearOperator

    from asymkern.operators import EmpiricalOperator

    rng = np.random.default_rng(0)
    X, Y, M = rng.standard_normal((20, 2)), rng.standard_normal((20, 3)), rng.standard_normal(
        (20, 20))
    B = LinearOperator((20, 20), matvec=lambda v: M @ v, dtype=float)
    op = EmpiricalOperator("rbf", X, "rbf", Y, B)
    ref = EmpiricalOperator("rbf", X, "rbf", Y, M).svd(2).singular_values
    np.testing.assert_allclose(op.svd(2, method="qr").singular_values, ref, rtol=1e-10)
    for method in ("auxiliary", "block"):
        with pytest.raises(TypeError, match=r"B \(.*\) has no product with its transpose"):
            op.svd(2, method=method)
    g = EmpiricalOperator("rbf", X, "rbf", Y, M).svd(1).left
    with pytest.raises(TypeError, match="rmatvec/rmatmat"):
        op.apply_adjoint(g)


def test_kernel_pair_of_float32_blocks_answers_in_float32():
    """``AsKLSClassifier(kernel='precomputed')`` answered a KernelPair of float32 blocks in
    float64 (the output-dtype rule read the pair's missing dtype)."""
    from asymkern.lssvm import AsKLSClassifier, KernelPair

    rng = np.random.default_rng(1)
    X = rng.standard_normal((60, 3))
    y = (X[:, 0] > 0).astype(int)
    k = get_kernel("sne")
    K = k(X, X).astype(np.float32)
    T = rng.standard_normal((7, 3))
    A, B = k(T, X).astype(np.float32), k(X, T).astype(np.float32)
    clf = AsKLSClassifier(kernel="precomputed", probability=True).fit(K, y)
    pair = KernelPair(A, B)
    assert clf.decision_function(pair).dtype == np.float32
    assert all(p.dtype == np.float32 for p in clf.decision_function(pair, return_parts=True))
    assert clf.predict_proba(pair).dtype == np.float32
    ref = clf.decision_function(KernelPair(A.astype(np.float64), B.astype(np.float64)))
    assert ref.dtype == np.float64
    np.testing.assert_allclose(clf.decision_function(pair), ref, rtol=1e-5, atol=1e-6)
    mixed = KernelPair(A, B.astype(np.float64))  # one float64 block: float64
    assert clf.decision_function(mixed).dtype == np.float64


def test_lu_basis_of_subnormal_iterates():
    """The LU basis scaled its iterate by 2.0 ** -e, which overflows (OverflowError) for
    subnormal iterates (e > 1023); the scaling is now an ldexp."""
    from asymkern._backend import NUMPY

    Y = np.array([[1e-310, 2e-311], [3e-311, -1e-310], [5e-312, 4e-311]])
    L = NUMPY.lu_basis(Y.copy())
    assert np.isfinite(L).all() and np.abs(L).max() <= 1.0
    # P L spans range(Y): Y = (P L) R for the R of least squares, to rounding
    R = np.linalg.lstsq(L, Y * 2.0**1000, rcond=None)[0]
    np.testing.assert_allclose(L @ R, Y * 2.0**1000, rtol=0, atol=1e-13 * 2.0**1000 * 1e-310)


def test_randomized_ksvd_of_kernel_values_near_1e_155():
    """Kernel values near 1e-155 made the randomized solver's power iterations underflow
    into subnormal numbers, and the LU basis's rescaling raised OverflowError."""
    from asymkern import KernelSVD

    rng = np.random.default_rng(0)
    X = 0.05 * rng.normal(size=(200, 2))
    Z = 0.05 * rng.normal(size=(100, 2)) + [19.2, 0]
    dense = KernelSVD(3, kernel="rbf", gamma=1.0, solver="dense").fit(X, Z=Z)
    rand = KernelSVD(3, kernel="rbf", gamma=1.0, solver="randomized",
                     random_state=0).fit(X, Z=Z)
    assert 1e-156 < dense.singular_values_[0] < 1e-154
    np.testing.assert_allclose(rand.singular_values_[0], dense.singular_values_[0], rtol=1e-10)
    assert np.isfinite(rand.singular_values_).all()


@pytest.mark.parametrize("solver", ["arpack", "randomized", "block_krylov"])
def test_iterative_solvers_on_a_subnormal_precomputed_matrix(solver):
    """For a largest entry below 2⁻¹⁰²² the solvers' power-of-two scale 2^(−⌊log2 top⌋) was
    infinite: NaN (randomized, block Krylov: "A has a NaN entry") or ArpackError -9999. The
    scale is now capped at 2¹⁰²³ (finite; the entries reach the normal range)."""
    from asymkern import KernelSVD

    rng = np.random.default_rng(0)
    G = 1e-310 * rng.random((120, 50))
    ref = np.linalg.svd(G, compute_uv=False)[:3]
    s = KernelSVD(3, kernel="precomputed", solver=solver, random_state=0).fit(G).singular_values_
    assert np.isfinite(s).all()
    # σ_1 is well separated; σ_2, σ_3 of a uniform random matrix are close (the randomized
    # solvers resolve them to their own accuracy, 1.3e-5 here)
    np.testing.assert_allclose(s[0], ref[0], rtol=1e-9)
    np.testing.assert_allclose(s, ref, rtol=1e-8 if solver == "arpack" else 1e-3)


@pytest.mark.parametrize("center", [False, True])
def test_kpca_arpack_on_a_subnormal_precomputed_kernel(center):
    from asymkern import KernelPCA

    rng = np.random.default_rng(0)
    B = rng.random((1100, 3))
    K = B @ B.T
    K *= 1e-310 / K.max()
    Kc = K - K.mean(0) - K.mean(1)[:, None] + K.mean() if center else K
    ref = np.linalg.eigvalsh(Kc)[-3:][::-1]
    p = KernelPCA(3, kernel="precomputed", solver="arpack", center=center,
                  random_state=0).fit(K)
    np.testing.assert_allclose(p.eigenvalues_, ref, rtol=1e-10)


def test_graph_reconstruction_with_dangling_rows_in_a_shrunk_batch():
    """A batch shrunk to fit ``working_memory`` whose rows are all dangling (out-degree 0)
    passed k_max = 0 to the nearest-rows search, which raised."""
    import scipy.sparse as sp

    import asymkern
    from asymkern.graphs import graph_reconstruction, reconstruct_adjacency

    rng = np.random.default_rng(0)
    n = 600
    E = rng.standard_normal((n, 3))
    A = sp.lil_matrix((n, n))
    A[n - 1, : n - 1] = 1.0  # one hub with 599 out-edges, every other node dangling
    A = A.tocsr()
    ref = reconstruct_adjacency(E, np.asarray(A.sum(axis=1)).ravel())
    with asymkern.config_context(working_memory=0.05):  # batches of ~100 rows
        small = reconstruct_adjacency(E, np.asarray(A.sum(axis=1)).ravel())
        scores = graph_reconstruction(E, A)
    assert (small != ref).nnz == 0 and small.nnz == n - 1
    assert scores["edge_recall"] == 1.0  # the hub's edges: every other node


def test_memory_settings_have_an_upper_bound():
    import asymkern

    for key in ("working_memory", "max_dense_memory", "cache_memory"):
        with pytest.raises(ValueError, match=rf"{key} must be at most 2\*\*40 MiB"):
            with asymkern.config_context(**{key: 1e306}):
                pass
    with asymkern.config_context(working_memory=2**40):  # the bound itself is accepted
        assert asymkern.get_config()["working_memory"] == 2**40


def test_adjacency_shapes_are_named_as_given():
    from asymkern.datasets.graphs import row_normalized_adjacency
    from asymkern.graphs import graph_reconstruction
    from asymkern.kernels import DirectedGraphKernel

    with pytest.raises(ValueError, match=r"adjacency must be a square 2-D .* got shape \(3,\)"):
        DirectedGraphKernel(np.ones(3))
    with pytest.raises(ValueError, match=r"adjacency .* got shape \(2, 2, 2\)"):
        graph_reconstruction(np.ones((2, 1)), np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match=r"A must be a square 2-D matrix, got shape \(2, 3\)"):
        row_normalized_adjacency(np.ones((2, 3)))


def test_select_by_cv_names_the_short_embedding():
    from asymkern.graphs import select_by_cv

    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 10)
    E = rng.standard_normal((20, 2))
    with pytest.raises(ValueError, match=r"embeddings\['bad'\] has 19 rows but labels has 20"):
        select_by_cv({"good": E, "bad": E[:-1]}, y)


def test_gmm_kl_kernel_ignores_components_of_weight_zero():
    """A component of weight 0 still added a density 1e-300·N(s | μ, σ²), which capped
    log q(s) near −690 and with it KL(P‖Q): 0.501 instead of exp(−0.9) = 0.407 here."""
    from asymkern.kernels import GMMKLKernel

    P = np.array([[1.0, 0.0, 0, 0, 0, 0, 1, 1, 1, 1]])  # N(0, I) and an unused component
    Q = np.array([[1.0, 0.0, 30, 30, 0, 0, 1, 1, 1, 1]])  # N((30, 30), I), unused at 0
    two = float(GMMKLKernel(n_components=2, a=1e-3, n_samples=2000)(P, Q)[0, 0])
    one = float(GMMKLKernel(n_components=1, a=1e-3, n_samples=2000)(
        np.array([[1.0, 0, 0, 1, 1]]), np.array([[1.0, 30, 30, 1, 1]]))[0, 0])
    exact = np.exp(-1e-3 * 900.0)  # KL(N(0, I) ‖ N(m, I)) = ‖m‖²/2
    assert abs(two - exact) < 2e-3 and abs(one - exact) < 2e-3
    assert abs(two - one) < 1e-3


def test_torch_float32_x_with_float64_z_is_float64_as_on_numpy():
    """The torch fit cast Z to X's dtype: float32 X with float64 Z gave float32 results
    (2.5e-6 off); numpy promotes both to float64."""
    torch = pytest.importorskip("torch")
    from asymkern import KernelSVD

    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 5)).astype(np.float32)
    Z = rng.standard_normal((60, 5))
    kw = dict(n_components=3, kernel="rbf", solver="dense")
    ref = KernelSVD(**kw).fit(X, Z=Z)
    got = KernelSVD(**kw).fit(torch.from_numpy(X), Z=torch.from_numpy(Z))
    assert ref.singular_values_.dtype == np.float64
    assert got.singular_values_.dtype == torch.float64 and got.Z_fit_.dtype == torch.float64
    np.testing.assert_allclose(got.singular_values_.numpy(), ref.singular_values_, rtol=1e-12)
    # the other way round too
    got2 = KernelSVD(**kw).fit(torch.from_numpy(Z[:50].copy()), Z=torch.from_numpy(X))
    assert got2.singular_values_.dtype == torch.float64 and got2.X_fit_.dtype == torch.float64


def test_torch_bfloat16_targets_weights_and_observables():
    """A bfloat16 y, sample_weight or observables failed with torch's bare "Got unsupported
    ScalarType BFloat16" (numpy has no bfloat16); they are now read as float32 (exact), as a
    float16 one is. A sparse y is refused saying a dense array is expected."""
    torch = pytest.importorskip("torch")
    from asymkern.nystrom import NystromKernelRidge
    from asymkern.operators import KoopmanOperator

    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    y = rng.standard_normal(60)
    yb = torch.tensor(y).bfloat16()
    kw = dict(n_landmarks=20, random_state=0)
    got = NystromKernelRidge(**kw).fit(torch.tensor(X), yb).predict(torch.tensor(X))
    ref = NystromKernelRidge(**kw).fit(torch.tensor(X), yb.to(torch.float64)).predict(
        torch.tensor(X))
    np.testing.assert_array_equal(got.numpy(), ref.numpy())
    w = torch.tensor(rng.uniform(0.5, 2, 60)).bfloat16()
    NystromKernelRidge(**kw).fit(torch.tensor(X), torch.tensor(y), sample_weight=w)
    obs = torch.tensor(X[:, :2]).bfloat16()
    KoopmanOperator(n_components=2).fit(torch.tensor(X), observables=obs)
    with pytest.raises(TypeError, match="^y is a sparse tensor .* dense array is expected"):
        NystromKernelRidge(**kw).fit(torch.tensor(X), torch.tensor(y).to_sparse())


@pytest.mark.parametrize("kernel,gamma", [("rbf", 0.002), ("rbf", 0.01), ("softmax", 0.01),
                                          ("sne", 0.01)])
def test_low_precision_keeps_a_flat_tail(kernel, gamma):
    """KernelSVD(precision='low', solver='randomized') on torch: a tail of nearly equal
    singular values below about 2 % of σ₁ came out 5e-4 to 3.2e-3·σ₁ off the float32 fit
    (RBF γ = 0.002: σ₅ … σ₈ 60–80 % low), silently. The float16 products err relative to
    each column's size, and the LU basis between the passes mixes σ₁'s direction into every
    column; the passes now keep the iterate's own singular directions (a Ritz basis), so each
    column is about σ_i u_i: 3e-8 here, without a fallback."""
    torch = pytest.importorskip("torch")
    import warnings

    from asymkern import KernelSVD

    rng = np.random.default_rng(0)
    X = torch.tensor(rng.standard_normal((700, 12)) + 5.0, dtype=torch.float32)
    Z = torch.tensor(rng.standard_normal((600, 12)) + 5.3, dtype=torch.float32)
    kw = dict(n_components=8, kernel=kernel, solver="randomized", random_state=0, gamma=gamma,
              n_iter=7)
    high = KernelSVD(**kw).fit(X, Z=Z).singular_values_.double().numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no fallback to full precision
        low = KernelSVD(precision="low", **kw).fit(X, Z=Z)
    s = low.singular_values_.double().numpy()
    assert np.abs(s - high).max() < 1e-5 * high[0]  # was 5e-4 to 3.2e-3
