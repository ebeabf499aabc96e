"""Trust, round 18: defects found on this round, each test failing on the round's start.

The randomized solver's fused passes Gᵀ(G W) square the spectrum before normalising, so
singular values below about √eps·σ₁ came out too small (σ₂ = 1e-9·σ₁ 75 % low in float64,
1e-3·σ₁ 1e-2 off in float32). When σ_r lies below 2·eps^(1/3)·σ₁ the solver now iterates on
in the two-pass form (QR between G and Gᵀ), on every executor. References are dense LAPACK
SVDs in float64; every tolerance is at least 50× the error measured after the fix and at
least 50× below the one measured before it.
"""

from __future__ import annotations

import numpy as np
import pytest

from asymkern import KernelSVD
from asymkern.linalg import _svd_core, randomized_svd, top_svd


def _spectrum_matrix(gap: float, dtype=np.float64, n: int = 300, m: int = 200, seed: int = 0):
    """G = U diag(1, gap·0.9^j) Vᵀ with Haar-random U, V, and its float64 singular values."""
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((n, m)))
    V, _ = np.linalg.qr(rng.standard_normal((m, m)))
    s = np.r_[1.0, gap * 0.9 ** np.arange(m - 1)]
    G = ((U * s) @ V.T).astype(dtype)
    return G, np.linalg.svd(G.astype(np.float64), compute_uv=False)


@pytest.mark.parametrize("dtype,gap,tol", [
    (np.float64, 1e-9, 1e-6),   # before: 0.75; after: 4e-9
    (np.float64, 1e-7, 1e-8),   # before: 6e-4; after: 6e-11
    (np.float32, 1e-3, 1e-4),   # before: 1e-2; after: 6e-7
])
def test_randomized_resolves_values_below_the_squared_floor(dtype, gap, tol):
    G, ref = _spectrum_matrix(gap, dtype)
    res = randomized_svd(G, 5, random_state=0)
    assert res.info["refined"] == res.info["n_iter"] == 7
    assert res.s.dtype == dtype
    np.testing.assert_allclose(res.s, ref[:5], rtol=tol)
    # U and V are singular vectors: G V = U S to the same accuracy, relative to each σ_i
    resid = np.linalg.norm(G.astype(np.float64) @ res.V - res.U * res.s, axis=0)
    assert np.all(resid <= 50 * tol * ref[:5] + 50 * np.finfo(dtype).eps * ref[0])


def test_refinement_runs_only_below_the_floor_and_leaves_the_rest_bitwise(monkeypatch):
    G, ref = _spectrum_matrix(1e-3)  # σ_5 ≈ 7e-4·σ₁: above the float64 floor (1.2e-5)
    res = randomized_svd(G, 5, random_state=0)
    assert res.info["refined"] == 0
    np.testing.assert_allclose(res.s, ref[:5], rtol=1e-10)
    monkeypatch.setattr(_svd_core, "needs_two_pass", lambda *a: False)
    same = randomized_svd(G, 5, random_state=0)
    np.testing.assert_array_equal(res.s, same.s)
    np.testing.assert_array_equal(res.U, same.U)


def test_floor_is_per_precision():
    assert _svd_core.squared_floor(np.float64) == pytest.approx(1.2e-5, rel=0.02)
    assert _svd_core.squared_floor(np.float32) == pytest.approx(9.8e-3, rel=0.02)
    assert _svd_core.needs_two_pass([1.0, 1e-6], 2, np.float64)
    assert not _svd_core.needs_two_pass([1.0, 1e-4], 2, np.float64)
    assert _svd_core.needs_two_pass([1.0, 1e-3], 2, np.float32)
    assert not _svd_core.needs_two_pass([0.0, 0.0], 2, np.float64)  # G = 0: nothing to resolve


def test_block_krylov_and_zero_iterations_are_not_refined():
    G, _ = _spectrum_matrix(1e-9)
    assert randomized_svd(G, 5, random_state=0, method="block_krylov").info["refined"] == 0
    assert randomized_svd(G, 5, random_state=0, n_iter=0).info["refined"] == 0


def test_kernel_svd_float32_rbf_tail():
    # a smooth RBF kernel in float32: σ_6 ≈ 1.4e-3·σ₁, below the float32 floor
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3)).astype(np.float32)
    Z = (rng.standard_normal((300, 3)) + 0.3).astype(np.float32)
    kw = dict(n_components=6, kernel="rbf", gamma=0.02)
    ref = KernelSVD(solver="dense", **kw).fit(X.astype(np.float64), Z=Z.astype(np.float64))
    est = KernelSVD(solver="randomized", random_state=0, **kw).fit(X, Z=Z)
    # before: 3.4e-3 relative on σ_6; after: 1.4e-6
    np.testing.assert_allclose(est.singular_values_, ref.singular_values_, rtol=1e-4)


def test_lazy_kernel_matrix_is_refined_through_its_products():
    from asymkern.kernels import KernelMatrix, get_kernel

    rng = np.random.default_rng(1)
    X, Z = rng.standard_normal((350, 2)), rng.standard_normal((250, 2))
    G = KernelMatrix(get_kernel("rbf", gamma=0.005), X, Z)
    ref = np.linalg.svd(G.to_array(), compute_uv=False)
    assert ref[7] < 1.2e-5 * ref[0]  # below the float64 floor
    res = randomized_svd(G, 8, random_state=0)
    assert res.info["refined"] == 7
    np.testing.assert_allclose(res.s, ref[:8], rtol=1e-9)  # measured 8e-12


def test_torch_executor_refines_as_numpy():
    torch = pytest.importorskip("torch")
    from _torch_helpers import TEST_DEVICE, dtol, to_np

    G, ref = _spectrum_matrix(1e-9)
    Gt = torch.as_tensor(G, device=TEST_DEVICE)
    res = top_svd(Gt, 5, solver="randomized", random_state=0)
    assert res.info["refined"] == 7
    np.testing.assert_allclose(np.asarray(res.s), ref[:5], rtol=dtol(1e-6))
    host = randomized_svd(G, 5, random_state=0)
    np.testing.assert_allclose(to_np(res.U), host.U, atol=dtol(1e-5))


def test_dask_executor_refines_as_numpy():
    da = pytest.importorskip("dask.array")
    import dask

    G, ref = _spectrum_matrix(1e-9)
    with dask.config.set(scheduler="synchronous"):
        res = top_svd(da.from_array(G, chunks=(70, 200)), 5, solver="randomized",
                      random_state=0)
        U = np.asarray(res.U.compute())
    assert res.info["refined"] == 7
    np.testing.assert_allclose(res.s, ref[:5], rtol=1e-6)
    host = randomized_svd(G, 5, random_state=0)
    np.testing.assert_allclose(U, host.U, atol=1e-5)


# ------------------------------------------------------------------ NCR from the features
def _ridge_reference(est, X, y, alpha, w):
    """The weighted ridge minimiser over f = C_H β, β ∈ span(K_mm), with intercept, by QR of
    the stacked system [W½[1, F]; 0, √α I] on the features F = K(X, C) A of the full basis
    (β = A v, βᵀK_mmβ = ‖v‖²): no Gram matrix is formed."""
    from asymkern.kernels import get_kernel

    F = get_kernel("rbf", gamma=0.3)(X, est.basis_.centers) @ est.basis_.A
    s = F.shape[1]
    sq = np.sqrt(w)[:, None]
    lhs = np.vstack([sq * np.c_[np.ones(len(y)), F], np.c_[np.zeros((s, 1)),
                                                           np.sqrt(alpha) * np.eye(s)]])
    sol = np.linalg.lstsq(lhs, np.r_[sq[:, 0] * y, np.zeros(s)], rcond=None)[0]
    return sol[0] + F @ sol[1:]


def _ncr_problem():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((300, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(300)
    w = 10.0 ** rng.uniform(-12, 12, 300)  # weights spread over 24 decades
    return X, y, w


def test_ncr_solves_eq11_from_the_features():
    from asymkern.nystrom import NystromKernelRidge

    X, y, w = _ncr_problem()
    kw = dict(n_landmarks=60, alpha=1e-4, gamma=0.3, random_state=0, fit_intercept=True)
    est = NystromKernelRidge(mode="ncr", **kw).fit(X, y, sample_weight=w)
    ref = _ridge_reference(est, X, y, 1e-4, w)
    # before: 2.3e-4 relative (the m×m pseudo-inverse of M + αK_mm; 1.1 at m = 150,
    # α = 1e-6); after: 4.5e-10, as LLA's
    err = np.linalg.norm(est.predict(X) - ref) / np.linalg.norm(ref)
    lla = NystromKernelRidge(mode="lla", **kw).fit(X, y, sample_weight=w)
    assert err <= 1e-7
    np.testing.assert_allclose(est.predict(X), lla.predict(X), rtol=1e-10, atol=1e-12)


def test_ncr_equals_the_pseudo_inverse_of_eq11_when_well_conditioned():
    # the closed form of eq. (11), formed densely: β = (K_mn K_nm + αK_mm)^† K_mn y
    from asymkern.kernels import get_kernel
    from asymkern.nystrom import NystromKernelRidge

    rng = np.random.default_rng(2)
    X = rng.standard_normal((200, 2))
    y = np.cos(X[:, 1]) + 0.1 * rng.standard_normal(200)
    est = NystromKernelRidge(mode="ncr", n_landmarks=8, alpha=0.1, gamma=0.3,
                             random_state=0).fit(X, y)
    C = est.basis_.centers
    k = get_kernel("rbf", gamma=0.3)
    Knm, Kmm = k(X, C), k(C, C)
    assert np.linalg.cond(Kmm) < 1e6
    beta = np.linalg.solve(Knm.T @ Knm + 0.1 * Kmm, Knm.T @ y)
    np.testing.assert_allclose(est.landmark_coef_.ravel(), beta, rtol=1e-8)


def test_ncr_on_every_executor():
    torch = pytest.importorskip("torch")
    da = pytest.importorskip("dask.array")
    import dask

    from asymkern.nystrom import NystromKernelRidge

    X, y, w = _ncr_problem()
    kw = dict(mode="ncr", n_landmarks=60, alpha=1e-4, gamma=0.3, random_state=0)
    want = NystromKernelRidge(**kw).fit(X, y, sample_weight=w).predict(X)
    with dask.config.set(scheduler="synchronous"):
        dk = NystromKernelRidge(**kw).fit(da.from_array(X, chunks=70), da.from_array(y, 70),
                                          sample_weight=da.from_array(w, 70))
        got = np.asarray(dk.predict(X))
    assert np.linalg.norm(got - want) <= 1e-6 * np.linalg.norm(want)
    tt = NystromKernelRidge(**kw).fit(torch.tensor(X), torch.tensor(y),
                                      sample_weight=torch.tensor(w))
    got = tt.predict(torch.tensor(X)).numpy()
    assert np.linalg.norm(got - want) <= 1e-6 * np.linalg.norm(want)


# ------------------------------------------------------------------ LS-SVM dense reference
@pytest.mark.parametrize("which", ["lssvm", "askls"])
def test_dense_method_honours_check_rcond(which):
    # 'dense' tested rcond (and fell back to ridge: bias 6e-11 instead of 0.0667) even with
    # check_rcond=False, which the docstring says skips the estimate and the fallback
    import warnings

    from asymkern.lssvm import askls_solve, lssvm_solve

    rng = np.random.RandomState(0)
    X = rng.randn(30, 2)
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    if which == "askls":
        K = K * (1 + 0.3 * rng.rand(30, 30))
    solve, fast = (lssvm_solve, "chol") if which == "lssvm" else (askls_solve, "schur")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no IllConditionedWarning: no estimate, no fallback
        ref = solve(K, y, 1e-6, method=fast, check_rcond=False)
        got = solve(K, y, 1e-6, method="dense", check_rcond=False)
    assert not got.fallback and np.isnan(got.rcond)
    np.testing.assert_allclose(got.bias, ref.bias, rtol=1e-8)
    # with the check (the default) both fall back, as the paper's rule says
    with pytest.warns(Warning, match="ill-conditioned"):
        assert solve(K, y, 1e-6, method="dense").fallback


# ------------------------------------------------------------------ Perron–Frobenius 'full'
def _rotation_trajectory(T=121, seed=0):
    rng = np.random.RandomState(seed)
    th = 0.3
    R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]]) * 0.97
    x = np.zeros((T, 2))
    x[0] = [1, 0]
    for t in range(1, T):
        x[t] = R @ x[t - 1] + 0.05 * rng.randn(2)
    return x[:-1], x[1:]


@pytest.mark.parametrize("gamma,alpha", [(0.5, 1e-6), (20.0, 1e-6), (50.0, 1e-6), (0.5, 1.0)])
def test_perron_frobenius_full_eigenvalues_are_those_of_A(gamma, alpha):
    # the docstring: the eigenvalues of P̂ are those of A = (G_X + nεI)⁻¹ G_XY; with the
    # G_XY safeguard on they were those of G_XY^{+δ} A G_XY: 1.5e-3 to O(1) off (a pair
    # missing at γ = 50, 61 % off at α = 1); after: ≤ 1e-11
    import warnings

    from asymkern.operators import PerronFrobeniusOperator

    X0, X1 = _rotation_trajectory()
    n = len(X0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pf = PerronFrobeniusOperator(kernel_params={"gamma": gamma}, alpha=alpha,
                                     n_components=5).fit(X0, X1)
    assert pf.lagged_gram_solver_ == "tikhonov"  # the safeguard is on in every case

    def rbf(A, B):
        return np.exp(-gamma * ((A[:, None] - B[None]) ** 2).sum(-1))

    A = np.linalg.solve(rbf(X0, X0) + n * alpha * np.eye(n), rbf(X0, X1))
    lam = np.linalg.eigvals(A)
    lam = lam[np.argsort(-np.abs(lam))][:5]
    lam = np.r_[lam, lam.conj()]  # a conjugate pair may straddle the cut at 5 (γ = 50)
    dist = max(np.min(np.abs(lam - v)) for v in pf.eigenvalues_)
    assert dist <= 1e-8 * np.abs(lam[0])


def test_perron_frobenius_full_eigenvectors_without_the_safeguard():
    # G_XY well conditioned (LU): the coefficients w = G_XY⁻¹ v are eigenvectors of the
    # auxiliary matrix B G_XY = G_XY⁻¹ (G_X + nεI)⁻¹ G_XY G_XY, as before
    from asymkern.operators import PerronFrobeniusOperator

    X0, X1 = _rotation_trajectory(T=41)
    n, gamma, alpha = len(X0), 50.0, 1e-6
    pf = PerronFrobeniusOperator(kernel_params={"gamma": gamma}, alpha=alpha,
                                 n_components=4).fit(X0, X1)
    assert pf.lagged_gram_solver_ == "lu"

    def rbf(A, B):
        return np.exp(-gamma * ((A[:, None] - B[None]) ** 2).sum(-1))

    Gxy = rbf(X0, X1)
    aux = np.linalg.solve(Gxy, np.linalg.solve(rbf(X0, X0) + n * alpha * np.eye(n), Gxy @ Gxy))
    W = pf.eigenfunctions_.coef
    resid = np.linalg.norm(aux @ W - W * pf.eigenvalues_, axis=0) / np.linalg.norm(W, axis=0)
    assert np.all(resid <= 1e-6), resid


# ------------------------------------------------------------------ CLI
def test_embed_refuses_to_overwrite_its_input(tmp_path, capsys, monkeypatch):
    # `embed same.csv --out same.csv` exited 0 and replaced the edge list by the embedding
    from asymkern.cli import main

    edges = tmp_path / "same.csv"
    text = "0,1\n1,2\n2,0\n2,3\n3,4\n4,0\n"
    edges.write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["embed", str(edges), "--out", "./same.csv", "-r", "2"]) == 2
    assert "is the input file" in capsys.readouterr().err
    assert edges.read_text() == text
    assert main(["embed", str(edges), "--out", str(tmp_path / "emb.csv"), "-r", "2"]) == 0


# ------------------------------------------------------------------ KernelSVD median bandwidth
def _weighted_sets():
    rng = np.random.RandomState(0)
    X, Z = rng.randn(40, 3), rng.randn(30, 3)
    X[:10] += 6.0  # ten far-away rows, given weight 0
    w = np.ones(40)
    w[:10] = 0.0
    w[10:15] = 3.0
    return X, Z, w


@pytest.mark.parametrize("bw", ["median", "auto"])
@pytest.mark.parametrize("executor", ["numpy", "torch"])
def test_data_driven_bandwidth_follows_the_sample_weights(bw, executor):
    # the median ignored the weights: bandwidth 2.590 for the weighted fit against 2.224 for
    # the rows repeated (0.54 apart in transform), though a weight 0 removes the row and an
    # integer weight repeats it (KernelSVD's Notes)
    X, Z, w = _weighted_sets()
    kw = dict(n_components=3, kernel="rbf", kernel_params={"bandwidth": bw}, solver="dense")
    if executor == "torch":
        pytest.importorskip("torch")
        kw["device"] = "cpu"
    rep = np.repeat(np.arange(40), w.astype(int))
    a = KernelSVD(**kw).fit(X, Z=Z, sample_weight=w)
    c = KernelSVD(**kw).fit(X[rep], Z=Z)
    assert a.bandwidth_ == pytest.approx(c.bandwidth_, rel=1e-12)
    np.testing.assert_allclose(a.singular_values_, c.singular_values_, rtol=1e-10)


def test_unweighted_median_bandwidth_is_unchanged():
    from asymkern.decomposition.ksvd import median_bandwidth
    from asymkern.kernels.base import neg_scaled_sq_dists

    rng = np.random.default_rng(3)
    X, Z = rng.standard_normal((700, 4)), rng.standard_normal((600, 4))
    # unit weights draw the same ≤ 500 rows and give the plain median
    assert median_bandwidth(X, Z) == median_bandwidth(X, Z, wx=np.ones(700), wz=np.ones(600))
    small_x, small_z = X[:50], Z[:40]
    D = np.sqrt(-neg_scaled_sq_dists(small_x, small_z, 1.0))
    assert median_bandwidth(small_x, small_z) == pytest.approx(np.median(D), rel=1e-14)


# ------------------------------------------------------------------ centred operators, wide kernel
@pytest.mark.parametrize("scale", [1e-3, 1e-4])
def test_centred_operators_accept_a_wide_kernel(scale):
    # the centring cancels ~8 digits of K; its rounding (relative to K's entries) was checked
    # against tolerances of the centred matrix: "not symmetric (6e-16)" or "not PSD (7e-15)"
    import warnings

    from asymkern.operators import CovarianceOperator, CrossCovarianceOperator, KernelCCA

    X = np.random.RandomState(0).randn(100, 2) * scale
    Y = np.sin(X[:, :1] / scale)
    n = len(X)
    G = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    H = np.eye(n) - 1.0 / n
    Gc = H @ G @ H
    ref = np.linalg.eigvalsh((Gc + Gc.T) / 2)[::-1][:2] / n
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rank-deficiency warnings of the wide kernel
        cov = CovarianceOperator(n_components=2, center=True).fit(X)
        CrossCovarianceOperator(n_components=2, center=True).fit(X, Y)
        KernelCCA(n_components=2).fit(X, Y)
    # the centred eigenvalues carry the centring's rounding, eps·n relative to K's scale
    np.testing.assert_allclose(cov.eigenvalues_, ref, rtol=1e-5)


def test_centred_operators_still_refuse_an_asymmetric_kernel():
    from asymkern.operators import CovarianceOperator

    X = np.random.RandomState(0).randn(50, 2)

    def k(A, B=None):
        B = A if B is None else B
        d = A[:, None] - B[None]
        return np.exp(-(d**2).sum(-1)) * (1 + 0.1 * np.tanh(d[..., 0]))

    with pytest.raises(ValueError, match="not symmetric"):
        CovarianceOperator(kernel=k, n_components=2, center=True).fit(X)


def test_cli_option_errors_name_their_subcommand(capsys):
    from asymkern.cli import main

    assert main(["demo", "--quik"]) == 2
    assert "demo: unrecognized arguments: --quik" in capsys.readouterr().err
    # a run's options with no experiment named: an error, not the list and exit 0
    assert main(["reproduce", "--quick", "--out", "zz"]) == 2
    assert "without an experiment" in capsys.readouterr().err
    assert main(["reproduce", "askls-kl", "--list", "-p", "n=1"]) == 2
    assert main(["reproduce", "--list"]) == 0


def test_embed_refuses_kl_gmm_and_hints_another_format(tmp_path, capsys):
    from asymkern.cli import main

    edges = tmp_path / "e.csv"
    edges.write_text("0,1\n1,2\n2,0\n")
    assert main(["embed", str(edges), "--out", str(tmp_path / "o.npz"), "-r", "1",
                 "--kernel", "kl_gmm"]) == 2
    err = capsys.readouterr().err
    assert "cannot be used by embed" in err and "expected one of" in err
    np.savez(tmp_path / "dense.npz", a=np.ones(3))  # an .npz, not a sparse one
    assert main(["embed", str(tmp_path / "dense.npz"), "--out", str(tmp_path / "o.npz")]) == 2
    assert "--format npz" not in capsys.readouterr().err  # the format it was read as


def test_zero_weights_clip_n_components_as_dropping_the_rows():
    # 6 of 10 rows with weight 0 and n_components=6: two components with σ = 0 and arbitrary
    # vectors were returned (transform 6 columns wide, against 4 for the rows dropped)
    from asymkern.exceptions import ClippedParameterWarning

    rng = np.random.RandomState(0)
    X, Z, Xt = rng.randn(10, 3), rng.randn(30, 3), rng.randn(4, 3)
    w = np.zeros(10)
    w[:4] = [1, 2, 1, 3]
    kw = dict(n_components=6, kernel="rbf", gamma=0.5, solver="dense")
    with pytest.warns(ClippedParameterWarning, match="positive weight"):
        a = KernelSVD(**kw).fit(X, Z=Z, sample_weight=w)
    with pytest.warns(ClippedParameterWarning):
        b = KernelSVD(**kw).fit(X[:4], Z=Z, sample_weight=w[:4])
    assert a.n_components_ == b.n_components_ == 4
    np.testing.assert_allclose(a.singular_values_, b.singular_values_, rtol=1e-12)
    assert a.transform(Xt).shape == b.transform(Xt).shape == (4, 4)


# ------------------------------------------------------------------ review of this round
def test_weighted_median_depends_on_the_weights_up_to_a_factor():
    # the position was taken from the raw total: weights summing below 1 gave the smallest
    # distance, weights summing to 1 (min + max)/2
    from asymkern._shared.ksvd import weighted_median

    rng = np.random.default_rng(0)
    for _ in range(300):
        k = int(rng.integers(1, 9))
        v, w = rng.standard_normal(k), rng.integers(1, 5, k).astype(float)
        ref = np.median(np.repeat(v, w.astype(int)))
        for c in (1.0, 0.01, 1 / 3, 1 / w.sum(), 1e6):
            assert weighted_median(v, w * c) == pytest.approx(ref, abs=1e-12)
    X, Z, w = _weighted_sets()
    kw = dict(n_components=2, kernel="rbf", kernel_params={"bandwidth": "median"})
    a = KernelSVD(**kw).fit(X, Z=Z, sample_weight=w)
    b = KernelSVD(**kw).fit(X, Z=Z, sample_weight=w * 1e-3)
    assert a.bandwidth_ == pytest.approx(b.bandwidth_, rel=1e-12)


def test_refinement_skips_rounding_noise_and_a_full_sketch():
    rng = np.random.default_rng(0)
    G = rng.standard_normal((300, 3)) @ rng.standard_normal((3, 200))  # rank 3: σ_4.. noise
    assert randomized_svd(G, 5, random_state=0).info["refined"] == 0
    H, _ = _spectrum_matrix(1e-9, m=20, n=40)
    assert randomized_svd(H, 12, random_state=0).info["refined"] == 0  # k = 20 = min(n, m)


def test_perron_frobenius_keeps_resolved_eigenvalues_at_extreme_alpha():
    # the worst-case rounding bound of A (n·eps·cond·‖A‖₁) exceeded eigenvalues A resolves to
    # 3e-5 at α = 1e-13 (only λ₁ kept), and made α = 1e-14 an error
    import warnings

    from asymkern.operators import PerronFrobeniusOperator

    rng = np.random.RandomState(0)
    x = np.zeros((201, 1))
    for t in range(200):
        x[t + 1] = 0.8 * x[t] + 0.5 * rng.randn()
    for alpha in (1e-13, 1e-14):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pf = PerronFrobeniusOperator(kernel_params={"gamma": 0.5}, alpha=alpha,
                                         n_components=5).fit(x)
        assert pf.eigenvalues_.shape == (5,)
        assert abs(pf.eigenvalues_[1] - 0.877) < 5e-3
