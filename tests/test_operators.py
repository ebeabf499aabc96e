"""Tests for empirical RKHS operators (paper 002): SVD routes, EVD, estimators, bad input."""

import warnings

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge

from asymkern.exceptions import ClippedParameterWarning
from asymkern.kernels import get_kernel
from asymkern.linalg.operator_svd import (
    RankDeficientGramWarning,
    gram_eigh,
    kernel_qr,
)
from asymkern.operators import (
    ConditionalMeanEmbedding,
    CovarianceOperator,
    CrossCovarianceOperator,
    EmpiricalOperator,
    KernelCCA,
    KoopmanOperator,
    PerronFrobeniusOperator,
    RKHSFunction,
)

METHODS = ["qr", "auxiliary", "block"]


def _op(rng, n=30, m=40, scale=1.0):
    X = rng.standard_normal((m, 2))
    Y = rng.standard_normal((n, 3))
    B = scale * rng.standard_normal((n, m)) / m
    return EmpiricalOperator(get_kernel("rbf", gamma=0.5), X, get_kernel("rbf", gamma=0.3), Y, B)


def _cosines(f: RKHSFunction, g: RKHSFunction) -> np.ndarray:
    """Cosines of the principal angles between span(f) and span(g) (both RKHS-orthonormal)."""
    return np.linalg.svd(f.inner(g), compute_uv=False)


def _poly_features(X):
    """Explicit feature map of (1 + xᵀx')² in 2-D."""
    x1, x2 = X[:, 0], X[:, 1]
    r2 = np.sqrt(2.0)
    return np.column_stack([np.ones_like(x1), r2 * x1, r2 * x2, x1**2, x2**2, r2 * x1 * x2])


# ------------------------------------------------------------------------------------------------
# kernel QR
# ------------------------------------------------------------------------------------------------
def test_kernel_qr_cholesky_orthonormal(rng):
    X = rng.standard_normal((25, 2))
    G = get_kernel("rbf", gamma=1.0)(X)
    for method, kind in (("auto", "pivoted"), ("cholesky", "cholesky"), ("eigh", "eigh")):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RankDeficientGramWarning)  # full rank: no warning
            F = kernel_qr(G, method=method)
        assert F.kind == kind and F.rank == 25
        np.testing.assert_allclose(F.R.T @ F.R, G, atol=1e-12)
        C = F.coefficients(np.eye(F.rank))  # Φ̃ = Φ C must be orthonormal: Cᵀ G C = I
        np.testing.assert_allclose(C.T @ G @ C, np.eye(25), atol=1e-8)
    # plain Cholesky: the upper-triangular R of Prop. 3.4
    Rc = kernel_qr(G, method="cholesky").R
    np.testing.assert_allclose(Rc, np.triu(Rc))


def test_kernel_qr_rank_deficient_pivoted_warns(rng):
    X = rng.standard_normal((50, 2))
    G = get_kernel("poly", degree=2, gamma=1.0, coef0=1.0)(X)  # rank 6
    with pytest.warns(RankDeficientGramWarning, match="rank 6"):
        F = kernel_qr(G)
    assert F.kind == "pivoted" and F.rank == 6
    np.testing.assert_allclose(F.R.T @ F.R, G, atol=1e-9 * np.abs(G).max())
    C = F.coefficients(np.eye(6))
    np.testing.assert_allclose(C.T @ G @ C, np.eye(6), atol=1e-8)
    with pytest.raises(ValueError, match="not numerically positive definite"):
        kernel_qr(G, method="cholesky")
    # jitter: documented Tikhonov shift, then a plain Cholesky
    Fj = kernel_qr(G, jitter=1e-6, method="cholesky")
    assert Fj.kind == "cholesky" and Fj.jitter == 1e-6
    np.testing.assert_allclose(Fj.R.T @ Fj.R, G + 1e-6 * np.eye(50), atol=1e-9 * np.abs(G).max())
    # spectral factor agrees on the Gram matrix
    Fe = gram_eigh(G)
    assert Fe.rank == 6
    np.testing.assert_allclose(Fe.R.T @ Fe.R, G, atol=1e-9 * np.abs(G).max())


def test_kernel_qr_rejects_indefinite_and_asymmetric(rng):
    A = rng.standard_normal((10, 10))
    with pytest.raises(ValueError, match="not symmetric"):
        kernel_qr(A)
    S = A + A.T  # indefinite
    with pytest.raises(ValueError, match="not positive semi-definite"):
        kernel_qr(S)
    with pytest.raises(ValueError, match="not positive semi-definite"):
        kernel_qr(np.array([[0.0, 1.0], [1.0, 0.0]]) + 1e-20)
    with pytest.raises(ValueError, match="jitter"):
        kernel_qr(np.eye(3), jitter=-1.0)


# ------------------------------------------------------------------------------------------------
# SVD routes
# ------------------------------------------------------------------------------------------------
def test_three_svd_routes_agree(rng):
    op = _op(rng, scale=5.0)
    ref = op.svd(6, method="qr")
    for method in ("auxiliary", "block"):
        res = op.svd(6, method=method)
        np.testing.assert_allclose(res.singular_values, ref.singular_values, atol=1e-8, rtol=0)
        # distinct singular values: each pair of 1-D subspaces coincides (principal angle 0)
        for i in range(6):
            assert abs(ref.left[i].inner(res.left[i])[0, 0]) == pytest.approx(1.0, abs=1e-7)
            assert abs(ref.right[i].inner(res.right[i])[0, 0]) == pytest.approx(1.0, abs=1e-7)
        np.testing.assert_allclose(_cosines(ref.left, res.left), 1.0, atol=1e-8)
        np.testing.assert_allclose(_cosines(ref.right, res.right), 1.0, atol=1e-8)
    # against the dense reference: σ(S) = σ(G_Ψ^{1/2} B G_Φ^{1/2})
    from scipy.linalg import sqrtm

    M = np.real(sqrtm(op.gram_out)) @ op.B.matmat(np.eye(40)) @ np.real(sqrtm(op.gram_in))
    np.testing.assert_allclose(ref.singular_values, np.linalg.svd(M, compute_uv=False)[:6],
                               atol=1e-8)


@pytest.mark.filterwarnings("ignore::asymkern.linalg.operator_svd.RankDeficientGramWarning")
def test_routes_agree_with_arpack(rng):
    # 110 Gaussian features in 2-D: numerical rank ~106, so the QR route also exercises the
    # truncated (pivoted) factor against the untruncated auxiliary/block problems
    op = _op(rng, n=90, m=110, scale=5.0)
    ref = op.svd(4, method="qr", solver="dense")
    for method in METHODS:
        res = op.svd(4, method=method, solver="arpack")
        np.testing.assert_allclose(res.singular_values, ref.singular_values, atol=1e-8)
        np.testing.assert_allclose(_cosines(ref.right, res.right), 1.0, atol=1e-7)


def test_routes_agree_rank_deficient_gram(rng):
    # polynomial kernel: Gram matrices of rank 6, QR route uses pivoted Cholesky
    X = rng.uniform(-1, 1, (35, 2))
    Y = rng.uniform(-1, 1, (30, 2))
    k = get_kernel("poly", degree=2, gamma=1.0, coef0=1.0)
    op = EmpiricalOperator(k, X, k, Y, rng.standard_normal((30, 35)) / 35)
    with pytest.warns(RankDeficientGramWarning):
        ref = op.svd(4, method="qr")
    assert op.factor("in").kind == "pivoted" and op.factor("in").rank == 6
    for method in ("auxiliary", "block"):
        res = op.svd(4, method=method)
        np.testing.assert_allclose(res.singular_values, ref.singular_values, atol=1e-8)
        np.testing.assert_allclose(_cosines(ref.left, res.left), 1.0, atol=1e-7)


@pytest.mark.parametrize("method", METHODS)
def test_singular_function_relations_at_random_points(rng, method):
    op = _op(rng, scale=3.0)
    u, s, v = op.svd(5, method=method)
    Zy = rng.standard_normal((11, 3))
    Zx = rng.standard_normal((13, 2))
    # S v_i = σ_i u_i and S* u_i = σ_i v_i, evaluated at new points
    np.testing.assert_allclose(op.apply(v)(Zy), u(Zy) * s, atol=1e-10)
    np.testing.assert_allclose(op.apply_adjoint(u)(Zx), v(Zx) * s, atol=1e-10)
    np.testing.assert_allclose(u.gram(), np.eye(5), atol=1e-9)
    np.testing.assert_allclose(v.gram(), np.eye(5), atol=1e-9)
    assert np.all(np.diff(s) <= 0)


def test_linear_kernel_explicit_matrix(rng):
    # φ(x) = x: S = Ψ B Φᵀ is the explicit matrix A = Yᵀ B X : R^3 → R^4
    X = rng.standard_normal((20, 3))
    Y = rng.standard_normal((25, 4))
    B = rng.standard_normal((25, 20))
    A = Y.T @ B @ X
    Ua, sa, Vta = np.linalg.svd(A)
    op = EmpiricalOperator("linear", X, "linear", Y, B)
    for method in METHODS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RankDeficientGramWarning)
            u, s, v = op.svd(3, method=method)
        np.testing.assert_allclose(s, sa, rtol=1e-9)
        # v_i(x) = ⟨a_i, x⟩ with a_i the right singular vectors of A (up to sign)
        E = np.eye(3)
        np.testing.assert_allclose(np.abs(v(E)), np.abs(Vta.T), atol=1e-8)
        np.testing.assert_allclose(np.abs(u(np.eye(4))), np.abs(Ua[:, :3]), atol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankDeficientGramWarning)
        with pytest.raises(ValueError, match="larger than the maximum 3"):
            op.svd(4, method="qr")
        # n_components=None: all numerically nonzero singular values, by every route
        for method in METHODS:
            np.testing.assert_allclose(op.svd(None, method=method).singular_values, sa,
                                       rtol=1e-9)
    for method in ("auxiliary", "block"):
        with pytest.raises(ValueError, match="numerical rank"):
            op.svd(4, method=method)


def test_polynomial_feature_map_spectrum(rng):
    X = rng.uniform(-2, 2, (60, 2))
    Y = rng.uniform(-2, 2, (60, 2))
    k = get_kernel("poly", degree=2, gamma=1.0, coef0=1.0)
    PX, PY = _poly_features(X), _poly_features(Y)
    np.testing.assert_allclose(PX @ PX.T, k(X), rtol=1e-10, atol=1e-10)
    # covariance operator (1/m) Σ φ(x_i) φ(x_i)ᵀ as an explicit 6×6 matrix
    C = PX.T @ PX / 60
    lam_ref = np.sort(np.linalg.eigvalsh(C))[::-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankDeficientGramWarning)
        cov = CovarianceOperator(kernel=k, n_components=6).fit(X)
        np.testing.assert_allclose(cov.eigenvalues_, lam_ref, rtol=1e-9)
        lam_aux, f_aux = cov.eig(6, method="auxiliary")
        np.testing.assert_allclose(lam_aux, lam_ref, rtol=1e-8)
        with pytest.raises(ValueError, match="exceeds"):
            cov.eig(7, method="auxiliary")
        np.testing.assert_allclose(cov.eig(None, method="auxiliary").eigenvalues, lam_ref,
                                   rtol=1e-8)
        np.testing.assert_allclose(cov.eig(None, method="qr").eigenvalues, lam_ref, rtol=1e-9)
        # Mercer: k(x, x') = Σ φ_i(x) φ_i(x') with φ_i the RKHS-normalised eigenfunctions
        Z = rng.uniform(-2, 2, (9, 2))
        F = cov.transform(Z)
        np.testing.assert_allclose(F @ F.T, k(Z), rtol=1e-8, atol=1e-8)
        # cross-covariance (1/n) Σ φ(y_i) φ(x_i)ᵀ
        A = PY.T @ PX / 60
        cc = CrossCovarianceOperator(kernel_x=k, kernel_y=k, n_components=6).fit(X, Y)
        np.testing.assert_allclose(cc.singular_values_, np.linalg.svd(A, compute_uv=False),
                                   rtol=1e-8)


def test_repeated_singular_values_orthonormal(rng):
    # Build B so that B̃ = R_Ψ B R_Φᵀ has singular values (3, 3, 3, 1, 0.5): B = R_Ψ⁻¹ B̃ R_Φ⁻ᵀ
    from scipy.linalg import solve_triangular

    m, n = 30, 25
    X = rng.standard_normal((m, 2))
    Y = rng.standard_normal((n, 2))
    kx, ky = get_kernel("rbf", gamma=0.7), get_kernel("rbf", gamma=0.4)
    Rx = kernel_qr(kx(X), method="cholesky").R
    Ry = kernel_qr(ky(Y), method="cholesky").R
    P, _ = np.linalg.qr(rng.standard_normal((n, 5)))
    Q, _ = np.linalg.qr(rng.standard_normal((m, 5)))
    Bt = P @ np.diag([3.0, 3.0, 3.0, 1.0, 0.5]) @ Q.T
    B = solve_triangular(Ry, solve_triangular(Rx, Bt.T, lower=False).T, lower=False)
    op = EmpiricalOperator(kx, X, ky, Y, B)
    ref = op.svd(5, method="qr")
    np.testing.assert_allclose(ref.singular_values, [3, 3, 3, 1, 0.5], atol=1e-8)
    Zy = rng.standard_normal((7, 2))
    for method in METHODS:
        u, s, v = op.svd(5, method=method)
        np.testing.assert_allclose(s, [3, 3, 3, 1, 0.5], atol=1e-7)
        np.testing.assert_allclose(u.gram(), np.eye(5), atol=1e-7)
        np.testing.assert_allclose(v.gram(), np.eye(5), atol=1e-7)
        np.testing.assert_allclose(op.apply(v)(Zy), u(Zy) * s, atol=1e-7)
        # the 3-dimensional singular subspaces coincide across routes
        np.testing.assert_allclose(_cosines(ref.right[:3], v[:3]), 1.0, atol=1e-7)
        np.testing.assert_allclose(_cosines(ref.left[:3], u[:3]), 1.0, atol=1e-7)


# ------------------------------------------------------------------------------------------------
# eigendecomposition
# ------------------------------------------------------------------------------------------------
def test_eig_self_adjoint_equals_svd(rng):
    X = rng.standard_normal((40, 2))
    k = get_kernel("rbf", gamma=0.5)
    op = EmpiricalOperator(k, X, k, X, np.eye(40) / 40)  # covariance operator
    assert op.is_self_adjoint()
    lam_qr, f_qr = op.eig(5)  # auto -> qr (Cor. 3.6)
    lam_aux, f_aux = op.eig(5, method="auxiliary")  # Prop. 3.8
    u, s, v = op.svd(5)
    np.testing.assert_allclose(lam_qr, s, rtol=1e-9)
    np.testing.assert_allclose(lam_aux, s, rtol=1e-9)
    np.testing.assert_allclose(_cosines(f_qr, v), 1.0, atol=1e-8)
    np.testing.assert_allclose(_cosines(f_aux, u), 1.0, atol=1e-8)
    for i in range(5):
        assert abs(f_aux[i].inner(v[i])[0, 0]) == pytest.approx(1.0, abs=1e-8)
    # symmetric indefinite B: |λ| = σ, eigenfunctions = singular functions up to sign
    Bs = rng.standard_normal((40, 40))
    op2 = EmpiricalOperator(k, X, k, X, (Bs + Bs.T) / 80)
    lam, f = op2.eig(4)
    lam2, f2 = op2.eig(4, method="auxiliary")
    u2, s2, v2 = op2.svd(4)
    np.testing.assert_allclose(np.abs(lam), s2, rtol=1e-8)
    np.testing.assert_allclose(lam2, lam, rtol=1e-8)
    Z = rng.standard_normal((6, 2))
    np.testing.assert_allclose(op2.apply(f)(Z), f(Z) * lam, atol=1e-10)
    for i in range(4):
        assert abs(f[i].inner(v2[i])[0, 0]) == pytest.approx(1.0, abs=1e-7)


def test_eig_requires_same_space(rng):
    op = _op(rng)
    with pytest.raises(ValueError, match="space to itself"):
        op.eig(2)
    X = rng.standard_normal((20, 2))
    k = get_kernel("rbf")
    op2 = EmpiricalOperator(k, X, k, X, rng.standard_normal((20, 20)))
    with pytest.raises(ValueError, match="self-adjoint"):
        op2.eig(2, method="qr")


# ------------------------------------------------------------------------------------------------
# truncation and pseudo-inverse (§4.1)
# ------------------------------------------------------------------------------------------------
def test_truncation_eckart_young(rng):
    op = _op(rng, scale=4.0)
    s_all = op.svd(12).singular_values
    full = op.svd(None).singular_values
    S2 = op.truncate(3)
    np.testing.assert_allclose(S2.svd(3).singular_values, s_all[:3], rtol=1e-9)
    # ‖S − S_k‖²_HS = Σ_{i>k} σ_i²  and ‖S‖²_HS = Σ σ_i²
    np.testing.assert_allclose(op.hs_norm() ** 2, np.sum(full**2), rtol=1e-8)
    diff = EmpiricalOperator(op.kernel_in, op.X, op.kernel_out, op.Y,
                             op.B.matmat(np.eye(40)) - S2.B.matmat(np.eye(40)))
    np.testing.assert_allclose(diff.hs_norm() ** 2, np.sum(full[3:] ** 2), rtol=1e-7)


def test_pinv_matches_matrix_pinv(rng):
    X = rng.standard_normal((20, 3))
    Y = rng.standard_normal((25, 4))
    B = rng.standard_normal((25, 20))
    A = Y.T @ B @ X  # 4×3 explicit operator
    op = EmpiricalOperator("linear", X, "linear", Y, B)
    b = rng.standard_normal(4)
    g = RKHSFunction(op.kernel_out, np.eye(4), b)  # g(y) = ⟨b, y⟩
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankDeficientGramWarning)
        x = op.pinv_apply(g)
    np.testing.assert_allclose(x(np.eye(3)), np.linalg.pinv(A) @ b, atol=1e-9)
    with pytest.raises(TypeError):
        op.pinv_apply(b)


# ------------------------------------------------------------------------------------------------
# estimators
# ------------------------------------------------------------------------------------------------
def test_cme_matches_kernel_ridge(rng):
    X = rng.uniform(-3, 3, (80, 1))
    Y = np.column_stack([np.sin(X[:, 0]), np.cos(X[:, 0])]) + 0.1 * rng.standard_normal((80, 2))
    eps = 1e-3
    cme = ConditionalMeanEmbedding(kernel_x="rbf", kernel_y="rbf",
                                   kernel_x_params={"gamma": 0.5}, alpha=eps).fit(X, Y)
    Z = rng.uniform(-3, 3, (15, 1))
    krr = KernelRidge(alpha=80 * eps, kernel="rbf", gamma=0.5).fit(X, Y)
    np.testing.assert_allclose(cme.predict(Z), krr.predict(Z), rtol=1e-8, atol=1e-10)
    # E[g(Y)|x] for a nonlinear g equals KRR on g(Y)
    g = lambda V: V[:, 0] ** 2 + V[:, 1]  # noqa: E731
    krr2 = KernelRidge(alpha=80 * eps, kernel="rbf", gamma=0.5).fit(X, g(Y))
    np.testing.assert_allclose(cme.expectation(g, Z), krr2.predict(Z), rtol=1e-8, atol=1e-10)
    # the embedding is Û φ(x): apply the operator to k(z, ·)
    kx = cme.kernel_x_
    phi_z = RKHSFunction(kx, Z[:1], np.ones(1))
    mu = cme.operator_.apply(phi_z)
    Yq = rng.standard_normal((5, 2))
    np.testing.assert_allclose(mu(Yq), cme.embedding(Z[:1])(Yq)[:, 0], atol=1e-10)
    with pytest.warns(RankDeficientGramWarning):  # 1-D inputs, Gaussian kernel: low numerical rank
        u, s, v = cme.svd(3)
    assert np.all(s > 0)
    np.testing.assert_allclose(cme.svd(3, method="block").singular_values, s, rtol=1e-7)


def test_koopman_linear_system(rng):
    A = np.array([[0.9, 0.1], [0.0, 0.5]])
    X = rng.standard_normal((50, 2))
    Y = X @ A.T
    kp = KoopmanOperator(kernel="linear", alpha=1e-12, n_components=2, lag=3,
                         timestep=0.5).fit(X, Y)
    np.testing.assert_allclose(np.sort(kp.eigenvalues_.real), [0.5, 0.9], atol=1e-6)
    np.testing.assert_allclose(kp.timescales_, -1.5 / np.log(np.abs(kp.eigenvalues_)))
    # eigenfunctions satisfy K f = λ f, i.e. f(Ax) = λ f(x) for linear observables
    Z = rng.standard_normal((5, 2))
    f = kp.eigenfunctions_
    np.testing.assert_allclose(f(Z @ A.T), f(Z) * kp.eigenvalues_, atol=1e-6)
    np.testing.assert_allclose(kp.predict(Z), Z @ A.T, atol=1e-6)


def test_koopman_trajectory_and_rotation(rng):
    th = 0.3
    A = 0.95 * np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    traj = np.empty((60, 2))
    traj[0] = [1.0, 0.0]
    for t in range(59):
        traj[t + 1] = traj[t] @ A.T
    kp = KoopmanOperator(kernel="linear", alpha=1e-12, n_components=2).fit(traj)
    assert np.iscomplexobj(kp.eigenvalues_)
    ref = np.linalg.eigvals(A)
    np.testing.assert_allclose(np.sort_complex(kp.eigenvalues_), np.sort_complex(ref), atol=1e-6)
    f = kp.eigenfunctions_
    np.testing.assert_allclose(f.norms(), 1.0, atol=1e-10)
    Z = rng.standard_normal((4, 2))
    np.testing.assert_allclose(f(Z @ A.T), f(Z) * kp.eigenvalues_, atol=1e-6)


def test_perron_frobenius_eigs(rng):
    X = rng.uniform(-1, 1, (40, 2))
    Y = X @ np.array([[0.9, -0.2], [0.2, 0.9]]).T + 0.05 * rng.standard_normal((40, 2))
    eps = 1e-4
    # the Laplacian kernel keeps the time-lagged Gram matrix G_XY well conditioned
    pf = PerronFrobeniusOperator(kernel="laplacian", kernel_params={"gamma": 2.0},
                                 alpha=eps, n_components=3).fit(X, Y)
    assert pf.lagged_gram_rcond_ > 1e-8
    assert pf.lagged_gram_solver_ == "lu"  # well conditioned: the exact formula is kept
    k = get_kernel("laplacian", gamma=2.0)
    A = np.linalg.solve(k(X) + 40 * eps * np.eye(40), k(X, Y))  # similar to B G_ΦΨ
    ref = np.linalg.eigvals(A)
    ref = ref[np.argsort(-np.abs(ref))][:3]
    np.testing.assert_allclose(pf.eigenvalues_, ref, rtol=1e-6)
    Z = rng.uniform(-1, 1, (5, 2))
    f = pf.eigenfunctions_
    np.testing.assert_allclose(pf.operator_.apply(f)(Z), f(Z) * pf.eigenvalues_,
                               atol=1e-6 * np.abs(f(Z)).max())


def test_kcca_linear_equals_regularised_cca(rng):
    n = 70
    Zs = rng.standard_normal((n, 2))
    X = np.column_stack([Zs, rng.standard_normal(n)]) @ rng.standard_normal((3, 3))
    Y = np.column_stack([Zs[:, 0] + 0.3 * rng.standard_normal(n), rng.standard_normal(n)])
    eps = 1e-2
    kcca = KernelCCA(kernel_x="linear", kernel_y="linear", alpha=eps, n_components=2,
                     center=True).fit(X, Y)
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    Cxx, Cyy, Cyx = Xc.T @ Xc / n, Yc.T @ Yc / n, Yc.T @ Xc / n

    def isqrt(C):
        w, V = np.linalg.eigh(C + eps * np.eye(len(C)))
        return V @ np.diag(w**-0.5) @ V.T

    ref = np.linalg.svd(isqrt(Cyy) @ Cyx @ isqrt(Cxx), compute_uv=False)
    np.testing.assert_allclose(kcca.canonical_correlations_, ref[:2], rtol=1e-8)
    assert np.all(kcca.canonical_correlations_ <= 1.0)
    # canonical variates: unit variance, correlation ≈ canonical correlation (small ε)
    fx, gy = kcca.transform(X), kcca.transform_y(Y)
    np.testing.assert_allclose(np.mean(fx**2, axis=0), 1.0, rtol=1e-8)
    # regularisation shrinks the correlations: σ_i ≤ empirical correlation of the variates
    corr = abs(np.corrcoef(fx[:, 0], gy[:, 0])[0, 1])
    assert kcca.canonical_correlations_[0] <= corr + 1e-12
    # with a tiny ε the canonical correlation is the empirical correlation of the variates
    k2 = KernelCCA(kernel_x="linear", kernel_y="linear", alpha=1e-9,
                   n_components=1).fit(X, Y)
    c2 = abs(np.corrcoef(k2.transform(X)[:, 0], k2.transform_y(Y)[:, 0])[0, 1])
    assert c2 == pytest.approx(k2.canonical_correlations_[0], abs=1e-5)
    for method in ("auxiliary", "block"):
        np.testing.assert_allclose(kcca.svd(2, method=method).singular_values, ref[:2],
                                   rtol=1e-7)


def test_centred_covariance_operator(rng):
    X = rng.standard_normal((50, 2))
    k = get_kernel("rbf", gamma=0.5)
    G = k(X)
    Gc = G - G.mean(0) - G.mean(1)[:, None] + G.mean()
    ref = np.sort(np.linalg.eigvalsh(Gc / 50))[::-1][:4]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankDeficientGramWarning)  # H G H has rank n - 1
        cov = CovarianceOperator(kernel=k, n_components=4, center=True).fit(X)
    np.testing.assert_allclose(cov.eigenvalues_, ref, rtol=1e-9)
    T = cov.transform(X)
    np.testing.assert_allclose(T.mean(0), 0, atol=1e-10)  # centred scores
    # (1/n) Σ v_i(x)v_j(x) = ⟨v_i, Ĉ v_j⟩ = λ_i δ_ij for RKHS-normalised eigenfunctions
    np.testing.assert_allclose(T.T @ T / 50, np.diag(ref), atol=1e-9)


# ------------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------------
def test_bad_input(rng):
    X = rng.standard_normal((10, 2))
    Y = rng.standard_normal((8, 2))
    k = get_kernel("rbf")
    with pytest.raises(ValueError, match=r"B has shape \(10, 8\); expected \(n, m\) = \(8, 10\)"):
        EmpiricalOperator(k, X, k, Y, np.ones((10, 8)))
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        EmpiricalOperator(k, Xn, k, Y, np.ones((8, 10)))
    Bn = np.ones((8, 10))
    Bn[1, 1] = np.inf
    with pytest.raises(ValueError, match="B contains NaN"):
        EmpiricalOperator(k, X, k, Y, Bn)
    with pytest.raises(ValueError, match="symmetric positive semi-definite"):
        EmpiricalOperator("sne", X, k, Y, np.ones((8, 10)))
    op = EmpiricalOperator(k, X, k, Y, rng.standard_normal((8, 10)))
    with pytest.raises(ValueError, match="larger than the maximum"):
        op.svd(9)
    with pytest.raises(ValueError, match="unknown method"):
        op.svd(2, method="lu")
    for est in (ConditionalMeanEmbedding(alpha=0.0), KernelCCA(alpha=0.0)):
        with pytest.raises(ValueError, match="alpha must be finite and > 0"):
            est.fit(X[:8], Y)
    for est in (KoopmanOperator(alpha=-1.0), PerronFrobeniusOperator(alpha=-1e-3)):  # None, 0: OK
        with pytest.raises(ValueError, match="alpha must be finite and > 0"):
            est.fit(X[:8], Y)
    with pytest.raises(ValueError, match="with the shape of X"):
        KoopmanOperator().fit(X, Y)
    with pytest.raises(ValueError, match="lag"):
        KoopmanOperator(lag=20).fit(X)
    with pytest.raises(ValueError):
        CrossCovarianceOperator().fit(X, Y)  # different sample counts
    with pytest.warns(ClippedParameterWarning, match="n_components=11 is larger"):
        assert CovarianceOperator(n_components=11).fit(X).n_components_ <= 10
    # the caller's arrays are untouched
    X0, B0 = X.copy(), rng.standard_normal((8, 10))
    B1 = B0.copy()
    EmpiricalOperator(k, X, k, Y, B0).svd(2)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(B0, B1)


def test_callable_kernel_accepted(rng):
    X = rng.standard_normal((20, 2))

    def lin(A, Z):
        return (A @ Z.T + 1.0) ** 2

    ref = EmpiricalOperator(get_kernel("poly", degree=2, gamma=1.0, coef0=1.0), X,
                            get_kernel("poly", degree=2, gamma=1.0, coef0=1.0), X,
                            np.eye(20) / 20)
    op = EmpiricalOperator(lin, X, lin, X, np.eye(20) / 20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankDeficientGramWarning)
        np.testing.assert_allclose(op.svd(4).singular_values, ref.svd(4).singular_values,
                                   rtol=1e-10)


@pytest.mark.parametrize("n_landmarks", [None, 10])
def test_float32_outputs_beyond_the_range_are_refused(n_landmarks):
    """Predictions finite in float64 but beyond float32's range (3.4e38) at float32 points are
    an OverflowError, never infinity (in memory and on Dask); float64 points are unaffected."""
    from asymkern.operators import ConditionalMeanEmbedding

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    y = 3e38 * (1 + np.abs(rng.standard_normal((30, 1))))
    est = ConditionalMeanEmbedding(alpha=1e-3, n_landmarks=n_landmarks, random_state=0)
    est.fit(X, y)
    with pytest.raises(OverflowError, match="range of the input's dtype float32"):
        est.predict(X.astype(np.float32))
    assert np.isfinite(est.predict(X)).all()
    if n_landmarks is not None:
        da = pytest.importorskip("dask.array")
        lazy = ConditionalMeanEmbedding(alpha=1e-3, n_landmarks=n_landmarks, random_state=0)
        lazy.fit(da.from_array(X, chunks=10), da.from_array(y, chunks=10))
        with pytest.raises(OverflowError, match="range of the input's dtype float32"):
            lazy.predict(da.from_array(X.astype(np.float32), chunks=10)).compute()
