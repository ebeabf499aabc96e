"""An independent review of the RKHS-operator family (Mollenhauer, Schuster, Klus and Schütte,
2020) against dense references built from the paper's definitions.

The polynomial kernel (1 + xᵀz)² on R² has the explicit 6-dimensional feature map ``_phi``, so
each empirical operator S = Ψ B Φᵀ is a 6×6 matrix that numpy decomposes directly; a function
f = ⟨w, φ(·)⟩ is then evaluated as ``_phi(Z) @ w``. Every estimator is compared with that
matrix: spectra, singular/eigen-functions at new points (up to the sign or complex phase the
paper leaves free), predictions and transforms, with centring on and off. Then the edges a
demanding user hits: tiny regularisation on a rank-deficient Gram matrix, duplicate samples,
n = 2, k above the rank, data far from the origin, read-only Fortran inputs, pickling, the
torch executor on the same edges, and bad arguments (refused by name, before any work).

Tolerances: 1e-8 relative in float64 for well-conditioned problems, scaled by the condition
where the problem itself amplifies rounding (stated at each comparison).
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from _torch_helpers import tensor, to_np
from sklearn.base import clone

from asymkern.kernels import get_kernel
from asymkern.operators import (
    ConditionalMeanEmbedding,
    CovarianceOperator,
    CrossCovarianceOperator,
    EmpiricalOperator,
    IllConditionedLaggedGramWarning,
    KernelCCA,
    KoopmanOperator,
    PerronFrobeniusOperator,
    RKHSFunction,
)

# the polynomial Gram matrices have rank 6: their RankDeficientGramWarning is expected here
pytestmark = pytest.mark.filterwarnings(
    "ignore::asymkern.linalg.operator_svd.RankDeficientGramWarning")

POLY = get_kernel("poly", degree=2, gamma=1.0, coef0=1.0)
METHODS = ("qr", "auxiliary", "block")


def _phi(X):
    """Explicit feature map of (1 + xᵀz)² on R² (φ(x)ᵀφ(z) = k(x, z))."""
    x1, x2 = X[:, 0], X[:, 1]
    r = np.sqrt(2.0)
    return np.column_stack([np.ones_like(x1), r * x1, r * x2, x1**2, x2**2, r * x1 * x2])


def _phi3(X):
    """Explicit feature map of (1 + xᵀz)³ on R² (10 monomials, multinomial weights)."""
    from math import factorial

    cols = []
    for a in range(4):
        for b in range(4 - a):
            c = 3 - a - b
            w = factorial(3) / (factorial(a) * factorial(b) * factorial(c))
            cols.append(np.sqrt(w) * X[:, 0] ** a * X[:, 1] ** b)
    return np.column_stack(cols)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rank / clipping warnings are pinned elsewhere
        return fn(*args, **kwargs)


def _rel(got, want) -> float:
    got, want = np.asarray(got), np.asarray(want)
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300))


def _aligned(got, want) -> float:
    """Relative distance of the columns of ``got`` to those of ``want`` after removing each
    column's sign (complex phase)."""
    got = np.asarray(got, dtype=np.complex128)
    want = np.asarray(want, dtype=np.complex128)
    c = np.sum(np.conj(got) * want, axis=0)
    ph = np.where(np.abs(c) > 0, c / np.where(np.abs(c) > 0, np.abs(c), 1.0), 1.0)
    return float(np.max(np.abs(got * ph - want)) / max(np.max(np.abs(want)), 1e-300))


def _paired(n=40, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 2))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] ** 2]) + 0.1 * rng.uniform(-1, 1, (n, 2))
    return X, Y, rng.uniform(-1, 1, (7, 2)), rng.uniform(-1, 1, (7, 2))


def _rotation_pairs(n=50, seed=3, noise=0.05):
    rng = np.random.default_rng(seed)
    th = 0.4
    A = 0.9 * np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    X = rng.uniform(-1, 1, (n, 2))
    return X, X @ A.T + noise * rng.standard_normal((n, 2)), rng.uniform(-1, 1, (7, 2))


# ------------------------------------------------------------------------------------------------
# EmpiricalOperator against the explicit 6×6 matrix, centring on and off (§3–4.1)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("center_in,center_out", [(False, True), (True, False), (True, True)])
def test_empirical_operator_centred_equals_explicit_matrix(center_in, center_out):
    rng = np.random.default_rng(0)
    X, Y = rng.uniform(-1, 1, (25, 2)), rng.uniform(-1, 1, (30, 2))
    B = rng.standard_normal((30, 25)) / 25
    PX, PY = _phi(X), _phi(Y)
    PXc = PX - PX.mean(0) if center_in else PX
    PYc = PY - PY.mean(0) if center_out else PY
    A = PYc.T @ B @ PXc  # S = Ψ_c B Φ_cᵀ as a 6×6 matrix
    U, s, Vt = np.linalg.svd(A)
    op = EmpiricalOperator(POLY, X, POLY, Y, B, center_in=center_in, center_out=center_out)
    Z = rng.uniform(-1, 1, (7, 2))
    for method in METHODS:
        u, sv, v = _quiet(op.svd, 3, method=method)
        assert _rel(sv, s[:3]) < 1e-10
        # the singular functions are functions ⟨w, φ(·)⟩ (not centred evaluations)
        vals_v, vals_u = v(Z), u(Z)
        ref_v, ref_u = _phi(Z) @ Vt[:3].T, _phi(Z) @ U[:, :3]
        sign = np.sign(np.sum(vals_v * ref_v, axis=0))
        assert _rel(vals_v, ref_v * sign) < 1e-9
        assert _rel(vals_u, ref_u * sign) < 1e-9  # (u_i, v_i) signed together
    assert op.hs_norm() == pytest.approx(np.linalg.norm(A), rel=1e-10)
    assert _quiet(op.truncate, 2).hs_norm() == pytest.approx(np.linalg.norm(s[:2]), rel=1e-10)
    # S f and S* g for f = ⟨w, φ⟩ given on other centres
    w = rng.standard_normal(6)
    C = rng.uniform(-1, 1, (6, 2))
    f = RKHSFunction(POLY, C, np.linalg.solve(_phi(C).T, w))
    assert _rel(op.apply(f)(Z), _phi(Z) @ (A @ w)) < 1e-9
    assert _rel(op.apply_adjoint(f)(Z), _phi(Z) @ (A.T @ w)) < 1e-9
    assert _rel(op.adjoint().apply(f)(Z), _phi(Z) @ (A.T @ w)) < 1e-9
    # S⁺ S f is the projection of f onto the row space of A
    x = _quiet(op.pinv_apply, op.apply(f))
    assert _rel(x(Z), _phi(Z) @ (np.linalg.pinv(A, rcond=1e-10) @ A @ w)) < 1e-8


@pytest.mark.parametrize("center", [False, True])
def test_empirical_operator_eig_non_self_adjoint_equals_explicit(center):
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (40, 2))
    B = rng.standard_normal((40, 40)) / 40
    PX = _phi(X) - _phi(X).mean(0) if center else _phi(X)
    A = PX.T @ B @ PX
    lam = np.linalg.eigvals(A)
    lam = lam[np.argsort(-np.abs(lam))]
    res = EmpiricalOperator(POLY, X, POLY, X, B, center_in=center,
                            center_out=center).eig(4)
    assert res.method == "auxiliary"
    # the same multiset (conjugate pairs come in either order)
    assert _rel(np.sort_complex(res.eigenvalues), np.sort_complex(lam[:4])) < 1e-9
    Z = rng.uniform(-1, 1, (6, 2))
    vals = res.eigenfunctions(Z)
    for i, mu in enumerate(res.eigenvalues):
        w, V = np.linalg.eig(A)
        j = int(np.argmin(np.abs(w - mu)))
        ref = _phi(Z) @ (V[:, j] / np.linalg.norm(V[:, j]))  # RKHS-normalised
        assert _aligned(vals[:, i:i + 1], ref[:, None]) < 1e-8


# ------------------------------------------------------------------------------------------------
# the estimators against their explicit matrices (§4.2–4.4, App. A.2)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("center", [False, True])
def test_covariance_and_cross_covariance_equal_explicit(center):
    X, Y, Z, W = _paired()
    PX, PY = _phi(X), _phi(Y)
    PXc = PX - PX.mean(0) if center else PX
    PYc = PY - PY.mean(0) if center else PY
    n = X.shape[0]
    lam, V = np.linalg.eigh(PXc.T @ PXc / n)
    lam, V = lam[::-1], V[:, ::-1]
    cov = _quiet(CovarianceOperator(kernel=POLY, n_components=4, center=center).fit, X)
    assert _rel(cov.eigenvalues_, lam[:4]) < 1e-10
    ref = _phi(Z) @ V[:, :4]  # φ_i = ⟨v_i, φ(·)⟩, RKHS-normalised
    assert _aligned(cov.eigenfunctions_(Z), ref) < 1e-9
    ref_t = ref - (PX @ V[:, :4]).mean(0) if center else ref  # minus the training mean
    assert _aligned(cov.transform(Z), ref_t) < 1e-9
    U, s, Vt = np.linalg.svd(PYc.T @ PXc / n)
    rx, ry = _phi(Z) @ Vt[:3].T, _phi(W) @ U[:, :3]
    if center:
        rx, ry = rx - (PX @ Vt[:3].T).mean(0), ry - (PY @ U[:, :3]).mean(0)
    for method in METHODS:
        cc = _quiet(CrossCovarianceOperator(kernel_x=POLY, kernel_y=POLY, n_components=3,
                                            center=center, method=method).fit, X, Y)
        assert _rel(cc.singular_values_, s[:3]) < 1e-10
        tx, ty = cc.transform(Z, W)
        sign = np.sign(np.sum(tx * rx, axis=0))
        assert _rel(tx, rx * sign) < 1e-9
        assert _rel(ty, ry * sign) < 1e-9


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("eps", [1e-2, 1e-10])
def test_kernel_cca_rank_deficient_gram_equals_explicit(center, eps):
    # G_X and G_Y have rank 6 of 40: (G + nεI)^{-1/2} acts on their null spaces with 1/√(nε)
    X, Y, Z, W = _paired()
    n = X.shape[0]
    PX, PY = _phi(X), _phi(Y)
    PXc = PX - PX.mean(0) if center else PX
    PYc = PY - PY.mean(0) if center else PY

    def isqrt(C):
        w, V = np.linalg.eigh(C + eps * np.eye(len(C)))
        return V @ np.diag(w**-0.5) @ V.T

    Ix, Iy = isqrt(PXc.T @ PXc / n), isqrt(PYc.T @ PYc / n)
    U, s, Vt = np.linalg.svd(Iy @ (PYc.T @ PXc / n) @ Ix)
    fx, gy = Ix @ Vt[:3].T, Iy @ U[:, :3]  # f_i = (C_XX + ε)^{-1/2} v_i, g_i likewise

    def unit(P, Pc, coef):  # scaled to unit empirical variance (centred with center)
        vals = Pc @ coef
        vals = vals - vals.mean(0) if center else vals
        return coef / np.sqrt((vals**2).mean(0))

    fx, gy = unit(PX, PXc, fx), unit(PY, PYc, gy)
    rx, ry = _phi(Z) @ fx, _phi(W) @ gy
    if center:
        rx, ry = rx - (PX @ fx).mean(0), ry - (PY @ gy).mean(0)
    for method in METHODS:
        est = KernelCCA(kernel_x=POLY, kernel_y=POLY, alpha=eps, n_components=3,
                        center=center, method=method)
        kc = _quiet(est.fit, X, Y)
        assert np.max(np.abs(kc.canonical_correlations_ - s[:3])) < 1e-9
        tx, ty = kc.transform(Z, W)
        sign = np.sign(np.sum(tx * rx, axis=0))
        assert _rel(tx, rx * sign) < 1e-8
        assert _rel(ty, ry * sign) < 1e-8
        assert _aligned(kc.x_singular_functions_(Z), _phi(Z) @ Vt[:3].T) < 1e-8


@pytest.mark.parametrize("eps", [1e-2, 1e-8])
def test_conditional_mean_embedding_equals_primal_ridge(eps):
    X, Y, Z, _ = _paired()
    n = X.shape[0]
    PX = _phi(X)
    A = PX.T @ PX + n * eps * np.eye(6)
    Wt = np.linalg.solve(A, PX.T @ Y)
    cme = ConditionalMeanEmbedding(kernel_x=POLY, kernel_y="linear", alpha=eps).fit(X, Y)
    # the dual solve (G + nεI)⁻¹ on a rank-6 G has condition λ_max/(nε)
    cond = np.linalg.eigvalsh(PX @ PX.T)[-1] / (n * eps)
    assert _rel(cme.predict(Z), _phi(Z) @ Wt) < 1e-13 * cond + 1e-10
    # duplicating every pair leaves the empirical measure, hence the estimator, unchanged
    dup = ConditionalMeanEmbedding(kernel_x=POLY, alpha=eps).fit(np.vstack([X, X]),
                                                                 np.vstack([Y, Y]))
    assert _rel(dup.predict(Z), cme.predict(Z)) < 1e-13 * cond + 1e-10


@pytest.mark.parametrize("estimator", ["full", "pcr", "rrr"])
@pytest.mark.parametrize("alpha", [1e-3, None])
def test_koopman_equals_explicit_matrix(estimator, alpha):
    X, Y, Z = _rotation_pairs()
    n = X.shape[0]
    PX, PY = _phi(X), _phi(Y)
    eps = 0.0 if alpha is None else alpha
    # K̂ f = ⟨Kp w, φ⟩ for f = ⟨w, φ⟩: Kp = (ΦΦᵀ + nεI)⁺ Φ Ψᵀ (§4.4, primal form)
    Kp = np.linalg.pinv(PX.T @ PX + n * eps * np.eye(6)) @ PX.T @ PY
    lam, V = np.linalg.eig(Kp)
    kw = {} if estimator == "full" else {"rank": 6}
    ko = _quiet(KoopmanOperator(kernel=POLY, alpha=alpha, n_components=6, estimator=estimator,
                                **kw).fit, X, Y)
    assert ko.n_components_ == 6
    assert np.iscomplexobj(ko.eigenvalues_)  # the rotation
    assert _rel(np.sort_complex(ko.eigenvalues_), np.sort_complex(lam)) < 1e-10
    vals = ko.eigenfunctions_(Z)
    for i, mu in enumerate(ko.eigenvalues_):
        j = int(np.argmin(np.abs(lam - mu)))
        ref = _phi(Z) @ (V[:, j] / np.linalg.norm(V[:, j]))
        assert _aligned(vals[:, i:i + 1], ref[:, None]) < 1e-8
    # the state x = (φ₂, φ₃)/√2 forecast three lags ahead: Kp³ applied to its coefficients
    Wx = np.zeros((6, 2))
    Wx[1, 0] = Wx[2, 1] = 1 / np.sqrt(2)
    ref = _phi(Z) @ np.linalg.matrix_power(Kp, 3) @ Wx
    assert _rel(ko.predict(Z, n_steps=3), ref) < 1e-9
    if estimator == "full":  # the operator itself: ‖K̂‖_HS = ‖Kp‖_F
        assert ko.operator_.hs_norm() == pytest.approx(np.linalg.norm(Kp), rel=1e-9)


def test_perron_frobenius_full_equals_explicit_matrix():
    # degree-3 features (10) and 8 pairs: G_XY is invertible, so B = G_XY⁻¹(G_X + nεI)⁻¹G_XY
    rng = np.random.default_rng(8)
    k3 = get_kernel("poly", degree=3, gamma=1.0, coef0=1.0)
    X = rng.uniform(-1, 1, (8, 2))
    th = 0.5
    A = 0.95 * np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    Y = X @ A.T + 0.02 * rng.standard_normal((8, 2))
    Z = rng.uniform(-1, 1, (5, 2))
    n, eps = 8, 1e-3
    Px, Py = _phi3(X), _phi3(Y)
    Gxy = Px @ Py.T
    B = np.linalg.solve(Gxy, np.linalg.solve(Px @ Px.T + n * eps * np.eye(n), Gxy))
    S = Py.T @ B @ Px
    lam, V = np.linalg.eig(S)
    order = np.argsort(-np.abs(lam))
    lam, V = lam[order], V[:, order]
    pf = PerronFrobeniusOperator(kernel=k3, alpha=eps, n_components=4).fit(X, Y)
    assert pf.lagged_gram_solver_ == "lu"
    # the dual route amplifies rounding by about 3e7 here (x, y perturbed by 1e-15 relative
    # move its eigenvalues by 3–5e-8; on an AVX-512 OpenBLAS they are 4.1e-8 from a 50-digit
    # reference, where the primal reference is 6.5e-12 off): 1e-6 leaves room for that
    assert _rel(np.sort_complex(pf.eigenvalues_), np.sort_complex(lam[:4])) < 1e-6
    vals = pf.eigenfunctions_(Z)
    for i, mu in enumerate(pf.eigenvalues_):
        j = int(np.argmin(np.abs(lam - mu)))
        ref = _phi3(Z) @ (V[:, j] / np.linalg.norm(V[:, j]))
        # G_XY⁻¹ has condition ≈ 1e6 here: the eigenvectors carry it
        assert _aligned(vals[:, i:i + 1], ref[:, None]) < 1e-6


# ------------------------------------------------------------------------------------------------
# edges
# ------------------------------------------------------------------------------------------------
def test_far_from_the_origin_is_a_translation():
    X, Y, Z, W = _paired()
    kp, off = {"gamma": 1.0}, 1e6
    pairs = [
        (lambda: CovarianceOperator(kernel_params=kp, n_components=3, center=True),
         lambda e, s: (e.fit(X + s).eigenvalues_, e.transform(Z + s))),
        (lambda: CrossCovarianceOperator(kernel_x_params=kp, kernel_y_params=kp,
                                         n_components=3, center=True),
         lambda e, s: (e.fit(X + s, Y + s).singular_values_, e.transform(Z + s))),
        (lambda: KernelCCA(kernel_x_params=kp, kernel_y_params=kp, alpha=1e-2),
         lambda e, s: (e.fit(X + s, Y + s).canonical_correlations_, e.transform(Z + s))),
        (lambda: ConditionalMeanEmbedding(kernel_x_params=kp, alpha=1e-3),
         lambda e, s: (np.zeros(1), e.fit(X + s, Y).predict(Z + s))),
        (lambda: KoopmanOperator(kernel_params=kp, alpha=1e-4, n_components=3),
         lambda e, s: (e.fit(X + s, Y + s).eigenvalues_, e.eigenfunctions_(Z + s))),
    ]
    for make, run in pairs:
        a_spec, a_out = _quiet(run, make(), 0.0)
        b_spec, b_out = _quiet(run, make(), off)
        # the inputs themselves carry rounding eps·1e6 ≈ 2e-10
        assert np.max(np.abs(b_spec - a_spec)) <= 1e-8 * max(np.max(np.abs(a_spec)), 1.0)
        assert _aligned(b_out, a_out) < 1e-7


def _estimators():
    return [
        (CovarianceOperator(n_components=2, center=True), False, "transform"),
        (CrossCovarianceOperator(n_components=2, center=True), True, "transform"),
        (KernelCCA(n_components=2), True, "transform"),
        (ConditionalMeanEmbedding(), True, "predict"),
        (ConditionalMeanEmbedding(n_landmarks=10, random_state=0), True, "predict"),
        (KoopmanOperator(n_components=2, estimator="rrr"), True, "predict"),
        (PerronFrobeniusOperator(n_components=2, alpha=1e-3), True, None),
    ]


def _value(model, out, Z):
    """What the user reads of a fitted model at Z: ``transform``/``predict``, or the
    eigenfunctions for the Perron-Frobenius operator (``out`` None)."""
    return model.eigenfunctions_(Z) if out is None else getattr(model, out)(Z)


def test_read_only_fortran_inputs_unchanged_and_pickle_round_trip():
    X, Y, Z, _ = _paired(30)
    for est, paired, out in _estimators():
        A, B = np.asfortranarray(X), Y.copy()
        A.setflags(write=False)
        B.setflags(write=False)
        A0, B0 = A.copy(), B.copy()
        args = (A, B) if paired else (A,)
        e = _quiet(clone(est).fit, *args)
        assert np.array_equal(A, A0) and np.array_equal(B, B0)
        ref = _quiet(clone(est).fit, *((X.copy(), Y.copy()) if paired else (X.copy(),)))
        np.testing.assert_array_equal(_value(e, out, Z), _value(ref, out, Z))  # layout-free
        back = pickle.loads(pickle.dumps(e))
        np.testing.assert_array_equal(_value(back, out, Z), _value(e, out, Z))
        # the operator's own SVD is rebuilt from the samples after unpickling
        s = _quiet(e.operator_.svd, 2).singular_values
        assert _rel(_quiet(back.operator_.svd, 2).singular_values, s) < 1e-12


@pytest.mark.parametrize("case", ["n2", "duplicates", "k_above_rank", "y_1d"])
def test_torch_cpu_equals_numpy_on_edges(case):
    pytest.importorskip("torch")
    X, Y, Z, _ = _paired(25, seed=9)
    if case == "n2":
        X, Y = X[:2], Y[:2]
    elif case == "duplicates":
        X, Y = np.vstack([X, X[:5]]), np.vstack([Y, Y[:5]])
    elif case == "y_1d":
        Y = Y[:, 0].copy()
    lin = case == "k_above_rank"
    kx = {"kernel": "linear"} if lin else {}
    kxy = {"kernel_x": "linear", "kernel_y": "linear"} if lin else {}
    k = 4 if lin else 2
    cases = [
        (CovarianceOperator(n_components=k, center=True, **kx), False, "eigenvalues_"),
        (CrossCovarianceOperator(n_components=k, center=True, **kxy), True, "singular_values_"),
        (KernelCCA(n_components=1 if case == "n2" else k, **kxy), True,
         "canonical_correlations_"),
        (ConditionalMeanEmbedding(**kxy), True, None),
        (KoopmanOperator(n_components=1 if case == "n2" else k, estimator="rrr", **kx), True,
         "eigenvalues_"),
    ]
    for est, paired, spec in cases:
        if case == "y_1d" and isinstance(est, KoopmanOperator):
            continue  # y is the shifted state (X's shape)
        if case == "y_1d" and not paired:
            continue
        args = (X, Y) if paired else (X,)
        a = _quiet(clone(est).fit, *args)
        b = _quiet(clone(est).fit, *(tensor(v) for v in args))
        out = "predict" if hasattr(a, "predict") else "transform"
        oa = getattr(a, out)(Z)
        ob = to_np(getattr(b, out)(tensor(Z)))
        assert _aligned(ob.reshape(oa.shape[0], -1), oa.reshape(oa.shape[0], -1)) < 1e-9
        if spec is not None:
            assert a.n_components_ == b.n_components_
            sa, sb = to_np(getattr(a, spec)), to_np(getattr(b, spec))
            assert np.max(np.abs(sb - sa)) < 1e-9 * np.max(np.abs(sa))


# ------------------------------------------------------------------------------------------------
# defects found by this review (each test fails on the code before its fix)
# ------------------------------------------------------------------------------------------------
def test_empirical_operator_refuses_a_complex_B():
    # formerly cast to float64 with a ComplexWarning: the SVD of Re B came back as that of B
    rng = np.random.default_rng(5)
    X, Y = rng.uniform(-1, 1, (20, 2)), rng.uniform(-1, 1, (20, 3))
    B = rng.standard_normal((20, 20))
    with pytest.raises(ValueError, match="B has the complex dtype"):
        EmpiricalOperator("rbf", X, "rbf", Y, B + 1j * B)
    from scipy.sparse.linalg import aslinearoperator

    with pytest.raises(ValueError, match="B has the complex dtype"):
        EmpiricalOperator("rbf", X, "rbf", Y, aslinearoperator(B + 0j))
    EmpiricalOperator("rbf", X, "rbf", Y, (B + 0j).real)  # a real B is fine


@pytest.mark.parametrize("name", ["center_in", "center_out"])
def test_empirical_operator_centring_flags_must_be_bool(name):
    # formerly bool('no') = True: a string silently switched centring on
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (10, 2))
    with pytest.raises(TypeError, match=name):
        EmpiricalOperator("rbf", X, "rbf", X, np.eye(10), **{name: "no"})
    op = EmpiricalOperator("rbf", X, "rbf", X, np.eye(10), **{name: np.bool_(True)})
    assert getattr(op, name) is True


@pytest.mark.parametrize("rtol", [-1.0, float("nan"), 1.0, 2.0, "1e-3", True])
def test_empirical_operator_svd_refuses_a_bad_rtol(rtol):
    # formerly: a negative or NaN rtol was taken silently (and kept zero singular values, so
    # pinv_apply divided by them), rtol >= 1 returned an empty SVD
    rng = np.random.default_rng(5)
    X, Y = rng.uniform(-1, 1, (20, 2)), rng.uniform(-1, 1, (20, 3))
    op = EmpiricalOperator("linear", X, "linear", Y, rng.standard_normal((20, 20)))
    for method in METHODS:
        with pytest.raises(ValueError, match="rtol"):
            op.svd(None, method=method, rtol=rtol)
    g = RKHSFunction(get_kernel("linear"), Y, np.ones(20))
    with pytest.raises(ValueError, match="rtol"):
        op.pinv_apply(g, rtol=rtol)
    assert _quiet(op.svd, None, rtol=0.0).singular_values.size == 2  # [0, 1) is accepted


def test_empirical_operator_eig_checks_the_solver_on_every_route():
    # formerly ignored when the self-adjoint ('qr') route ran
    X = np.random.default_rng(5).uniform(-1, 1, (20, 2))
    op = EmpiricalOperator("rbf", X, "rbf", X, np.eye(20) / 20)
    for method in ("auto", "qr", "auxiliary"):
        with pytest.raises(ValueError, match="unknown solver 'x'"):
            op.eig(2, method=method, solver="x")


@pytest.mark.parametrize("cls", [KoopmanOperator, PerronFrobeniusOperator])
@pytest.mark.parametrize("executor", ["numpy", "torch", "dask"])
def test_transfer_rank_and_n_components_refused_before_any_work(cls, executor):
    # formerly: rank was never checked with estimator='full' ('a', 0 accepted), and
    # PerronFrobeniusOperator checked n_components only after its n×n solves (warning first)
    x = np.cumsum(np.random.default_rng(4).standard_normal((30, 2)), axis=0) * 0.1
    x = np.repeat(x, 2, axis=0)  # repeated states: G_XY is singular
    extra: dict = {}
    if executor == "torch":
        pytest.importorskip("torch")
        data = tensor(x)
    elif executor == "dask":
        if cls is PerronFrobeniusOperator:
            pytest.skip("the Perron-Frobenius operator has no dask executor")
        da = pytest.importorskip("dask.array")
        data, extra = da.from_array(x, chunks=(14, 2)), {"n_landmarks": 5}
    else:
        data = x
    for kw, name in [({"estimator": "full", "rank": 0}, "rank"),
                     ({"estimator": "full", "rank": "a"}, "rank"),
                     ({"n_components": 0}, "n_components"),
                     ({"n_components": 2.0, "estimator": "rrr", "rank": 3}, "n_components")]:
        with warnings.catch_warnings():
            warnings.simplefilter("error", IllConditionedLaggedGramWarning)
            with pytest.raises(ValueError, match=f"{name} must be an integer >= 1"):
                cls(**kw, **extra).fit(data)


def test_dropped_eigenpairs_warning_points_at_the_callers_line(monkeypatch):
    # formerly reported at src/asymkern/operators/koopman.py (stacklevel fixed at 4).
    # Spurious eigenpairs have RKHS norms at the rounding level, within a factor of a few of
    # the threshold either way, so which of them are dropped depends on the BLAS's rounding
    # (alpha=1e-13 dropped 0 to 5 of 5 between machines and 1e-14 relative perturbations of
    # x). Here every eigenfunction but the one of largest norm is made numerically zero, so
    # that the real warning is emitted on every machine; the wrapper adds one frame.
    import importlib

    svd_module = importlib.import_module("asymkern.linalg.operator_svd")
    zero_norms = svd_module._zero_norms

    def all_but_the_largest(norms2, W, gmax, stacklevel):
        norms2 = np.where(norms2 < norms2.max(), 0.0, norms2)
        return zero_norms(norms2, W, gmax, stacklevel + 1)

    monkeypatch.setattr(svd_module, "_zero_norms", all_but_the_largest)
    x = np.cumsum(np.random.default_rng(4).standard_normal((30, 2)), axis=0) * 0.1
    with pytest.warns(RuntimeWarning, match="numerically zero RKHS norm") as record:
        ko = KoopmanOperator(kernel="rbf", kernel_params={"gamma": 1e-2}, alpha=1e-10,
                             n_components=5).fit(x)
    assert ko.n_components_ == 1
    assert all(w.filename == __file__ for w in record
               if "numerically zero RKHS norm" in str(w.message))


@pytest.mark.parametrize("eps", [1e-5, 1e-7, 1e-9, 1e-12])
def test_koopman_full_small_alpha_on_a_low_rank_kernel(eps):
    """estimator='full' on a kernel of finite rank below n (a degree-2 polynomial: 6 features,
    30 samples) solves on the range of G: its eigenvalues are the primal problem's. From the
    dual matrix (G + nεI)⁻¹k(Y, X) they were 7e-6 off at ε = 1e-7, and at 1e-9 one eigenpair
    (1.0) came out instead of 1.289, 1.028±0.132i."""
    rng = np.random.default_rng(11)
    X = rng.uniform(-1, 1, (30, 2))
    Y = np.column_stack([np.sin(2 * X[:, 0]), X[:, 1] ** 2]) + 0.05 * rng.standard_normal((30, 2))
    PX, PY = _phi(X), _phi(Y)
    lam = np.linalg.eigvals(np.linalg.solve(PX.T @ PX + 30 * eps * np.eye(6), PX.T @ PY))
    lam = lam[np.argsort(-np.abs(lam))]
    ko = _quiet(KoopmanOperator(kernel=POLY, alpha=eps, n_components=3).fit, X, Y)
    assert ko.n_components_ == 3
    # the primal 6×6 problem has condition ≈ 1e3: 1e-8 leaves room for 1e5 of amplification
    assert _rel(np.sort_complex(ko.eigenvalues_), np.sort_complex(lam[:3])) < 1e-8


def test_koopman_full_too_small_alpha_error_names_alpha_and_the_remedies():
    """Where the dual eigenproblem of estimator='full' resolves no eigenfunction (alpha far
    below a rank-deficient Gram matrix's scale), the error names alpha and what to use
    instead; it said only that the operator was numerically zero."""
    rng = np.random.default_rng(11)
    X = rng.uniform(-1, 1, (30, 2))
    Y = np.column_stack([np.sin(2 * X[:, 0]), X[:, 1] ** 2]) + 0.05 * rng.standard_normal((30, 2))
    with pytest.raises(ValueError, match=r"alpha=1e-14 is too small.*estimator='pcr'"):
        _quiet(KoopmanOperator(kernel="rbf", kernel_params={"gamma": 1e-2}, alpha=1e-14,
                               n_components=3).fit, X, Y)
