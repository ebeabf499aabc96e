"""Asymmetric / symmetric Nyström SVD (paper 000 §3, eq. 8–9) and the accuracy metric η."""

import numpy as np
import pytest
from scipy.sparse.linalg import aslinearoperator
from scipy.stats import spearmanr

from asymkern.decomposition import KernelSVD
from asymkern.kernels import KernelMatrix, get_kernel
from asymkern.linalg.metrics import eta, eta_components, eta_strict
from asymkern.linalg.nystrom import asymmetric_nystrom, residual_estimate, symmetric_nystrom
from asymkern.linalg.svd import dense_svd, top_svd
from asymkern.testing import requires_data


def known_spectrum(n=300, m=220, decay=0.7, seed=0):
    """G = U diag(decay^i) Vᵀ with random orthonormal U, V: a gapped, known spectrum."""
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((n, m)))
    V, _ = np.linalg.qr(rng.standard_normal((m, m)))
    s = decay ** np.arange(m)
    return (U * s) @ V.T, U, s, V


def sne_problem(n=240, m=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    Z = rng.standard_normal((m, 4)) * 1.3 + 0.2
    return X, Z, get_kernel("sne", bandwidth=2.0)


# ------------------------------------------------------------------------------------ metric
def test_eta_zero_for_exact_and_invariant_to_sign_and_scale():
    G, *_ = known_spectrum()
    ex = dense_svd(G, 6)
    assert eta(ex.U, ex.V, ex.U, ex.V, ex.s) == pytest.approx(0.0, abs=1e-12)
    flipped = eta(ex.U, ex.V, -3.0 * ex.U, 0.5 * ex.V, ex.s)
    assert flipped == pytest.approx(0.0, abs=1e-12)


def test_eta_weights_paper_vs_strict():
    rng = np.random.default_rng(1)
    U = np.linalg.qr(rng.standard_normal((50, 3)))[0]
    V = np.linalg.qr(rng.standard_normal((40, 3)))[0]
    lam = np.array([2.0, 0.5, 0.1])
    # approximation: exact first component, orthogonal (useless) later ones
    Ua, Va = U.copy(), V.copy()
    Ua[:, 1:] = np.linalg.qr(rng.standard_normal((50, 50)))[0][:, :2]
    Ua[:, 1:] -= U @ (U.T @ Ua[:, 1:])
    Va[:, 1:] = rng.standard_normal((40, 2))
    Va[:, 1:] -= V @ (V.T @ Va[:, 1:])
    eu, ev = eta_components(U, V, Ua, Va)
    np.testing.assert_allclose(eu, [0, 1, 1], atol=1e-12)
    # as printed: (1/r) Σ λ_i (eu_i + ev_i) = (0.5 + 0.1) * 2 / 3
    assert eta(U, V, Ua, Va, lam) == pytest.approx(2 * 0.6 / 3)
    assert eta_strict(U, V, Ua, Va) == pytest.approx(4 / 3)
    assert eta(U, V, Ua, Va, lam, weights="normalized") == pytest.approx(
        (3 * 0.6 / 2.6) * 2 / 3
    )


def test_eta_missing_components_count_as_misses_and_bad_shapes():
    G, *_ = known_spectrum()
    ex = dense_svd(G, 4)
    assert eta_strict(ex.U, ex.V, ex.U[:, :2], ex.V[:, :2]) == pytest.approx(2 * 2 / 4)
    with pytest.raises(ValueError, match="rows"):
        eta_strict(ex.U, ex.V, ex.U[:-1], ex.V)
    with pytest.raises(ValueError, match="singular values"):
        eta(ex.U, ex.V, ex.U, ex.V, weights="paper")


# -------------------------------------------------------------------------------- exactness
def test_all_landmarks_give_the_exact_svd_dense():
    G, *_ = known_spectrum()
    ex = dense_svd(G, 8)
    res = asymmetric_nystrom(G, 8, G.shape[0], G.shape[1], random_state=0)
    assert res.scale == pytest.approx(1.0)
    np.testing.assert_allclose(res.s, ex.s, rtol=1e-10)
    np.testing.assert_allclose(res.U, ex.U, atol=1e-10)
    np.testing.assert_allclose(res.V, ex.V, atol=1e-10)


def test_all_landmarks_give_the_exact_svd_lazy_sne():
    X, Z, k = sne_problem(90, 70)
    Gk = KernelMatrix(k, X, Z)
    ex = dense_svd(Gk.to_array(), 5)
    res = asymmetric_nystrom(Gk, 5, 90, 70, random_state=0)
    np.testing.assert_allclose(res.s, ex.s, rtol=1e-9)
    np.testing.assert_allclose(res.U, ex.U, atol=1e-9)
    np.testing.assert_allclose(res.V, ex.V, atol=1e-9)


def test_symmetric_nystrom_with_all_landmarks_is_exact():
    G, *_ = known_spectrum(120, 100)
    ex = dense_svd(G, 5)
    res = symmetric_nystrom(G, 5, 120, 100, random_state=0)
    np.testing.assert_allclose(res.s, ex.s, rtol=1e-8)
    assert eta_strict(ex.U, ex.V, res.U, res.V) < 1e-10
    # signs are paired: u_iᵀ G v_i > 0
    assert np.all(np.einsum("ij,ij->j", res.U, G @ res.V) > 0)


def test_scaling_of_eq9_square_case():
    """For N = M and s_x = s_z = s the scale is c = √(s/N) and λ̃ = (N/s) λ_W."""
    G, *_ = known_spectrum(200, 200)
    res = asymmetric_nystrom(G, 3, 50, 50, random_state=2)
    assert res.scale == pytest.approx(np.sqrt(50 / 200))
    W = G[np.ix_(res.row_landmarks, res.col_landmarks)]
    sw = np.linalg.svd(W, compute_uv=False)[:3]
    np.testing.assert_allclose(res.s, sw * 200 / 50, rtol=1e-10)


# -------------------------------------------------------------------------------- behaviour
def test_error_decreases_as_landmarks_grow():
    G, *_ = known_spectrum(400, 300)
    ex = dense_svd(G, 5)
    sizes = [20, 60, 180, 300]
    errs = np.array([
        np.median([
            eta_strict(ex.U, ex.V, *(lambda r: (r.U, r.V))(
                asymmetric_nystrom(G, 5, s, s, random_state=seed)))
            for seed in range(5)
        ])
        for s in sizes
    ])
    assert np.all(np.diff(errs) < 0), errs
    assert errs[-1] < 0.05 * errs[0]


def test_determinism_and_unique_landmarks():
    X, Z, k = sne_problem()
    G = KernelMatrix(k, X, Z).to_array()
    for sampling in ("uniform", "kmeans", "leverage"):
        a = asymmetric_nystrom(G, 4, 40, 30, random_state=7, sampling=sampling)
        b = asymmetric_nystrom(G, 4, 40, 30, random_state=7, sampling=sampling)
        np.testing.assert_array_equal(a.row_landmarks, b.row_landmarks)
        np.testing.assert_array_equal(a.col_landmarks, b.col_landmarks)
        np.testing.assert_array_equal(a.U, b.U)
        for idx, n, s in ((a.row_landmarks, G.shape[0], 40), (a.col_landmarks, G.shape[1], 30)):
            assert idx.size == s and np.unique(idx).size == s
            assert idx.min() >= 0 and idx.max() < n
    c = asymmetric_nystrom(G, 4, 40, 30, random_state=8)
    assert not np.array_equal(c.row_landmarks, a.row_landmarks) or not np.array_equal(
        c.col_landmarks, a.col_landmarks
    )


def test_independent_row_and_column_selectors_and_fixed_indices():
    X, Z, k = sne_problem()
    Gk = KernelMatrix(k, X, Z)
    rows = np.array([3, 10, 50, 77, 120, 200])
    res = asymmetric_nystrom(Gk, 3, random_state=0, row_sampling=rows, col_sampling="kmeans",
                             n_col_landmarks=25)
    np.testing.assert_array_equal(res.row_landmarks, rows)
    assert res.col_landmarks.size == 25
    with pytest.raises(ValueError, match="repeated"):
        asymmetric_nystrom(Gk, 3, random_state=0, row_sampling=np.array([1, 1, 2, 3]))


def test_out_of_sample_at_training_points_equals_in_sample():
    X, Z, k = sne_problem()
    Gk = KernelMatrix(k, X, Z)
    G = Gk.to_array()
    res = asymmetric_nystrom(Gk, 4, 50, 40, random_state=1)
    np.testing.assert_allclose(res.extend_rows(G[:, res.col_landmarks]), res.U, atol=1e-12)
    np.testing.assert_allclose(res.extend_cols(G[res.row_landmarks, :].T), res.V, atol=1e-12)
    for opt in ("orthogonalize", "normalize"):
        o = asymmetric_nystrom(Gk, 4, 50, 40, random_state=1, **{opt: True})
        np.testing.assert_allclose(o.extend_rows(G[:, o.col_landmarks]), o.U, atol=1e-10)
        np.testing.assert_allclose(o.extend_cols(G[o.row_landmarks, :].T), o.V, atol=1e-10)
    # through the estimator: transform (eq. 8 path) on the training sets
    est = KernelSVD(4, kernel="sne", kernel_params={"bandwidth": 2.0}, solver="nystrom",
                    n_row_landmarks=50, n_col_landmarks=40,
                    random_state=1)
    E = est.fit_transform(X, Z=Z)
    np.testing.assert_allclose(est.transform(X), E, atol=1e-10)
    np.testing.assert_allclose(est.transform_right(Z), est.embeddings()[1], atol=1e-10)
    assert est.row_landmarks_.size == 50 and est.col_landmarks_.size == 40
    # a new point: eq. 8 uses the kernel against the landmarks only
    xnew = X[:3] + 0.01
    Knew = KernelMatrix(k, xnew, Z).to_array()[:, res.col_landmarks]
    expected = est.nystrom_.extend_rows(Knew) * est.singular_values_
    np.testing.assert_allclose(est.transform(xnew), expected, atol=1e-10)


def test_lazy_and_dense_paths_agree_with_small_blocks():
    X, Z, k = sne_problem()
    Gk = KernelMatrix(k, X, Z, working_memory=0.01)  # many tiny blocks
    G = KernelMatrix(k, X, Z).to_array()
    a = asymmetric_nystrom(Gk, 5, 60, 45, random_state=3)
    b = asymmetric_nystrom(G, 5, 60, 45, random_state=3, working_memory=0.01)
    np.testing.assert_array_equal(a.row_landmarks, b.row_landmarks)
    np.testing.assert_allclose(a.s, b.s, rtol=1e-10)
    np.testing.assert_allclose(a.U, b.U, atol=1e-10)
    np.testing.assert_allclose(a.V, b.V, atol=1e-10)
    sa = symmetric_nystrom(Gk, 5, 60, 45, random_state=3)
    sb = symmetric_nystrom(G, 5, 60, 45, random_state=3)
    np.testing.assert_allclose(sa.U, sb.U, atol=1e-10)
    np.testing.assert_allclose(sa.V, sb.V, atol=1e-10)


def test_float32_stays_float32_and_top_svd_dispatch():
    X, Z, k = sne_problem()
    Gk = KernelMatrix(k, X.astype(np.float32), Z.astype(np.float32))
    res = top_svd(Gk, 3, solver="nystrom", random_state=0, n_row_landmarks=40,
                  n_col_landmarks=40)
    assert res.U.dtype == np.float32 and res.V.dtype == np.float32
    assert res.solver == "nystrom"
    assert res.info["nystrom"].row_landmarks.size == 40


# ------------------------------------------------------------------------ growth to tolerance
def test_change_estimate_tracks_the_true_error():
    G, *_ = known_spectrum(400, 300)
    ex = dense_svd(G, 5)
    ratios = []
    for seed in range(3):
        prev = None
        for s in (20, 40, 80, 160):
            res = asymmetric_nystrom(G, 5, s, s, random_state=seed)
            if prev is not None:
                est = eta(res.U, res.V, prev.U, prev.V, weights="uniform")
                ratios.append(est / eta_strict(ex.U, ex.V, prev.U, prev.V))
            prev = res
    ratios = np.array(ratios)
    assert np.all((ratios > 0.25) & (ratios < 4)), ratios
    res = asymmetric_nystrom(G, 5, random_state=0, tol=0.05)
    hist = res.info["history"]
    assert res.info["converged"] and hist[-1]["estimate"] <= 0.05
    assert [h["n_row_landmarks"] for h in hist] == [64 * 2**k for k in range(len(hist))][
        : len(hist)
    ] or hist[-1]["n_row_landmarks"] == 400
    assert eta_strict(ex.U, ex.V, res.U, res.V) < 0.1


def test_residual_estimate_is_conservative_and_correlated():
    G, *_ = known_spectrum(400, 300)
    ex = dense_svd(G, 5)
    true, est = [], []
    for seed in range(2):
        for s in (20, 40, 80, 160, 280):
            res = asymmetric_nystrom(G, 5, s, s, random_state=seed)
            true.append(eta_strict(ex.U, ex.V, res.U, res.V))
            est.append(residual_estimate(G, res, random_state=seed))
    true, est = np.array(true), np.array(est)
    assert spearmanr(true, est).statistic > 0.7
    assert np.all(est >= 0.5 * true)
    res = asymmetric_nystrom(G, 5, random_state=0, tol=0.2, estimate="residual")
    assert res.info["converged"]
    assert eta_strict(ex.U, ex.V, res.U, res.V) <= 0.2


def test_growth_stops_at_the_full_matrix_with_exact_result():
    G, *_ = known_spectrum(100, 90)
    ex = dense_svd(G, 3)
    res = asymmetric_nystrom(G, 3, random_state=0, tol=1e-12)
    assert res.U.shape == (100, 3)
    assert eta_strict(ex.U, ex.V, res.U, res.V) < 1e-10


# ------------------------------------------------------------------------------- bad input
def test_bad_input():
    G, *_ = known_spectrum(100, 80)
    with pytest.raises(ValueError, match="n_row_landmarks"):
        asymmetric_nystrom(G, 3, 101, 10)
    with pytest.raises(ValueError, match="n_col_landmarks"):
        asymmetric_nystrom(G, 3, 10, 81)
    with pytest.raises(ValueError, match="larger than the number of landmarks"):
        asymmetric_nystrom(G, 12, 10, 30)
    with pytest.raises(TypeError, match="LinearOperator"):
        asymmetric_nystrom(aslinearoperator(G), 3, 10, 10)
    with pytest.raises(ValueError, match="sampling"):
        asymmetric_nystrom(G, 3, 10, 10, sampling="nope")
    with pytest.raises(ValueError, match="tol"):
        asymmetric_nystrom(G, 3, tol=-1.0)
    with pytest.raises(ValueError, match="n_components"):
        asymmetric_nystrom(G, 0, 10, 10)


def test_rank_deficient_core_drops_components_with_warning():
    rng = np.random.default_rng(0)
    G = rng.standard_normal((60, 2)) @ rng.standard_normal((2, 50))  # rank 2
    with pytest.warns(RuntimeWarning, match="rank-deficient"):
        res = asymmetric_nystrom(G, 4, 20, 20, random_state=0)
    assert res.U.shape[1] == 2 and np.all(np.isfinite(res.U)) and np.all(np.isfinite(res.V))
    ex = dense_svd(G, 2)
    # eq. 9 vectors span the exact singular subspaces (not the exact vectors) ...
    Qu = np.linalg.qr(res.U)[0]
    np.testing.assert_allclose(np.abs(np.linalg.svd(ex.U.T @ Qu, compute_uv=False)), 1, atol=1e-8)
    # ... and the SVD of the Nyström approximation is exact for a captured rank
    with pytest.warns(RuntimeWarning, match="rank-deficient"):
        orth = asymmetric_nystrom(G, 4, 20, 20, random_state=0, orthogonalize=True)
    assert eta_strict(ex.U, ex.V, orth.U, orth.V) < 1e-8
    np.testing.assert_allclose(orth.s, ex.s, rtol=1e-8)
    with pytest.raises(ValueError, match="zero"):
        asymmetric_nystrom(np.zeros((30, 20)), 2, 10, 10, random_state=0)


# ----------------------------------------------------------------------- experiment helpers
def test_sparse_sne_normalizers_match_the_blocked_ones():
    import scipy.sparse as sp

    from asymkern.experiments.nystrom_solvers import SparseSNEKernelMatrix

    A = sp.random(150, 150, density=0.03, random_state=0, format="csr") + sp.identity(150)
    A = sp.csr_matrix(sp.diags(1 / np.asarray(A.sum(axis=1)).ravel()) @ A)
    Z = sp.csr_matrix(A.T)
    k = get_kernel("sne", bandwidth=0.7)
    fast = SparseSNEKernelMatrix(k, A, Z)
    slow = KernelMatrix(k, A, Z)
    np.testing.assert_allclose(fast.row_normalizers(), slow.row_normalizers(), rtol=1e-10)
    # G ≈ rank one + sparse: compare the well-conditioned leading component
    a = asymmetric_nystrom(fast, 1, 30, 30, random_state=0)
    b = asymmetric_nystrom(slow.to_array(), 1, 30, 30, random_state=0)
    np.testing.assert_allclose(a.s, b.s, rtol=1e-10)
    np.testing.assert_allclose(a.U, b.U, rtol=1e-8, atol=1e-12)


def test_subspace_reference_on_a_clustered_spectrum():
    """The certified Pubmed reference: one dominant value, then a near-degenerate cluster."""
    from asymkern.experiments.nystrom_solvers import subspace_svd, svd_residuals

    rng = np.random.default_rng(3)
    n, m, r = 260, 200, 20
    U0 = np.linalg.qr(rng.standard_normal((n, m)))[0]
    V0 = np.linalg.qr(rng.standard_normal((m, m)))[0]
    s0 = np.sort(np.r_[2.2, 0.0351 + 1e-4 * rng.random(40), 0.02 * 0.95 ** np.arange(m - 41)])
    G = (U0 * s0[::-1]) @ V0.T
    res, info = subspace_svd(G, r, oversamples=40, n_iter=25, tol=1e-12, random_state=0)
    ex = dense_svd(G, r + 1)
    np.testing.assert_allclose(res.s, ex.s[:r], rtol=1e-10)
    # the dominant pair is determined: it matches LAPACK's up to the paired sign
    sign = np.sign(res.U[:, 0] @ ex.U[:, 0])
    np.testing.assert_allclose(sign * res.U[:, 0], ex.U[:, 0], atol=1e-10)
    np.testing.assert_allclose(sign * res.V[:, 0], ex.V[:, 0], atol=1e-10)
    # the cluster's subspace (not its individual vectors) is determined
    P = ex.U[:, :r].T @ res.U
    np.testing.assert_allclose(np.linalg.svd(P, compute_uv=False), 1.0, atol=1e-8)
    # the reported residuals are the true ones, and small
    left = np.linalg.norm(G @ res.V - res.U * res.s, axis=0) / res.s[0]
    right = np.linalg.norm(G.T @ res.U - res.V * res.s, axis=0) / res.s[0]
    np.testing.assert_allclose(info["left"], left, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(info["right"], right, rtol=1e-12, atol=1e-15)
    assert info["max"] == pytest.approx(max(left.max(), right.max())) and info["max"] < 1e-10
    assert info["first"] == pytest.approx(max(left[0], right[0]))
    assert info["gap"] == pytest.approx((ex.s[r - 1] - ex.s[r]) / ex.s[0], rel=1e-6)
    # a perturbed triplet has a visibly larger residual
    bad = svd_residuals(G, res.U, res.s * (1 + 1e-3), res.V)
    assert bad["first"] > 5e-4


@pytest.mark.slow
@requires_data("cora")
def test_quick_study_runs_on_cora():
    from asymkern.experiments.nystrom_solvers import run

    rep = run(quick=True, parts=("table",))
    rows = rep.tables["Time (s) on the precomputed kernel, η as printed (w_i = λ_i)"]
    assert {r["ε"] for r in rows} == {0.1, 0.01}
    first = rows[0]
    assert first["dataset"] == "cora" and first["Ours"] > 0
