"""Issue 19 (remaining parts): reduced-rank Perron–Frobenius estimators (the adjoint of the
reduced-rank Koopman estimators), the SVD of every transfer-operator estimator against a dense
reference, and the refusal of asymmetric kernels.

References are dense and obviously correct: numpy eig/svd of matrices assembled from the Gram
matrices, and the d×d primal closed forms of the linear kernel.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import scipy.linalg as sla
from _transfer_checks import TRANSFER_CHECKS
from _transfer_checks import ou_trajectory as _ou
from sklearn.utils.estimator_checks import parametrize_with_checks

from asymkern.exceptions import ClippedParameterWarning
from asymkern.operators import KoopmanOperator, PerronFrobeniusOperator


def _linear3(n: int = 300, seed: int = 0) -> np.ndarray:
    """x_{t+1} = A x_t + noise in R³ (A with distinct real eigenvalues 0.9, 0.6, 0.3)."""
    rng = np.random.RandomState(seed)
    Q = np.linalg.qr(rng.randn(3, 3))[0]
    A = Q @ np.diag([0.9, 0.6, 0.3]) @ Q.T + 0.05 * rng.randn(3, 3)
    x = np.zeros((n, 3))
    x[0] = rng.randn(3)
    for t in range(n - 1):
        x[t + 1] = A @ x[t] + 0.5 * rng.randn(3)
    return x


def _dense_B(est) -> np.ndarray:
    B = est.operator_.B
    return np.asarray(B @ np.eye(B.shape[1]))


def _align(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a with each column's sign (or complex phase) matched to b's, columns unit-normalised."""
    a = a / np.linalg.norm(a, axis=0)
    b = b / np.linalg.norm(b, axis=0)
    phase = np.sum(np.conj(a) * b, axis=0)
    return a * (phase / np.abs(phase)), b


# ------------------------------------------------------------ PF: reduced-rank estimators
@pytest.mark.parametrize("kind", ["pcr", "rrr"])
def test_pf_reduced_rank_is_the_adjoint_of_the_koopman_estimator(kind):
    X = _ou(120)
    kw = dict(alpha=1e-4, estimator=kind, rank=4, n_components=4)
    ko = KoopmanOperator(**kw).fit(X)
    pf = PerronFrobeniusOperator(**kw).fit(X)
    assert pf.rank_ == ko.rank_ == 4
    assert pf.lagged_gram_solver_ is None
    # B_PF = B_Koopmanᵀ with the roles of the samples swapped: P̂ = K̂* exactly
    np.testing.assert_allclose(_dense_B(pf), _dense_B(ko).T, atol=1e-12)
    assert pf.operator_.X is pf.X_fit_ and ko.operator_.Y is ko.X_fit_
    # same eigenvalues; PF eigenfunctions = Koopman left eigenfunctions (up to scale)
    np.testing.assert_allclose(pf.eigenvalues_, ko.eigenvalues_, rtol=1e-10)
    Z = np.linspace(-2.5, 2.5, 31)[:, None]
    a, b = _align(pf.eigenfunctions_(Z), ko.left_eigenfunctions_(Z))
    np.testing.assert_allclose(a, b, atol=1e-8)
    # RKHS-normalised, and eigenfunctions of the dense operator: B Gxy w = λ w on the y side
    np.testing.assert_allclose(pf.eigenfunctions_.norms(), 1.0, rtol=1e-10)
    G_xy = pf.kernel_(pf.X_fit_, pf.Y_fit_)
    W = pf.eigenfunctions_.coef
    np.testing.assert_allclose(_dense_B(pf) @ G_xy @ W, W * pf.eigenvalues_, atol=1e-8)


@pytest.mark.parametrize("kind", ["pcr", "rrr"])
def test_pf_full_rank_reduced_estimators_equal_the_embedded_pf(kind):
    """Rank n: P̂ = Ψ (G + nεI)⁻¹ Φᵀ; its eigenvalues are those of the 'full' (paper 002) PF,
    of the Koopman estimator and of the dense (G + nεI)⁻¹ G_XY."""
    rng = np.random.RandomState(0)  # the Laplacian kernel keeps G_XY well conditioned here
    X = rng.uniform(-1, 1, (40, 2))
    Y = X @ np.array([[0.9, -0.2], [0.2, 0.9]]).T + 0.05 * rng.standard_normal((40, 2))
    eps = 1e-3
    kw = dict(kernel="laplacian", kernel_params={"gamma": 2.0}, alpha=eps, n_components=4)
    red = PerronFrobeniusOperator(estimator=kind, rank=40, **kw).fit(X, Y)
    full = PerronFrobeniusOperator(**kw).fit(X, Y)
    assert full.lagged_gram_solver_ == "lu"
    n = 40
    G = red.kernel_(red.X_fit_)
    np.testing.assert_allclose(_dense_B(red), np.linalg.inv(G + n * eps * np.eye(n)),
                               atol=1e-8)
    ref = sla.eigvals(np.linalg.solve(G + n * eps * np.eye(n),
                                      red.kernel_(red.X_fit_, red.Y_fit_)))
    ref = ref[np.argsort(-np.abs(ref))][:4]
    np.testing.assert_allclose(red.eigenvalues_, ref, atol=1e-8)
    np.testing.assert_allclose(full.eigenvalues_, ref, atol=1e-8)
    np.testing.assert_allclose(KoopmanOperator(**kw).fit(X, Y).eigenvalues_, ref, atol=1e-8)


@pytest.mark.parametrize("kind", ["pcr", "rrr"])
def test_pf_linear_kernel_equals_the_transposed_primal_koopman_matrix(kind):
    """Linear kernel: P̂ acts on f(x) = aᵀx as a ↦ K̂ᵀ a with the d×d primal Koopman matrix
    K̂ (RRR: A_ε⁻¹ C V_r V_rᵀ; PCR: Q_r (Λ_r + nε)⁻¹ Q_rᵀ C), so its eigenpairs are K̂ᵀ's."""
    X = _linear3()
    X0, X1 = X[:-1], X[1:]
    n, eps, r = X0.shape[0], 1e-3, 2
    Ag = X0.T @ X0 + n * eps * np.eye(3)
    C = X0.T @ X1
    if kind == "rrr":
        V = sla.eigh(C.T @ np.linalg.solve(Ag, C))[1][:, -r:]
        K = np.linalg.solve(Ag, C) @ V @ V.T
    else:
        lam, Q = sla.eigh(X0.T @ X0)
        K = Q[:, -r:] @ np.diag(1 / (lam[-r:] + n * eps)) @ Q[:, -r:].T @ C
    pf = PerronFrobeniusOperator(kernel="linear", alpha=eps, estimator=kind, rank=r,
                                 n_components=r).fit(X)
    lam_ref, vec_ref = np.linalg.eig(K.T)
    order = np.argsort(-np.abs(lam_ref))[:r]
    np.testing.assert_allclose(pf.eigenvalues_, lam_ref[order].real, rtol=1e-8)
    # eigenfunction f(x) = k(x, Y) w = xᵀ (X1ᵀ w): its primal vector is an eigenvector of K̂ᵀ
    a, b = _align(X1.T @ pf.eigenfunctions_.coef, vec_ref[:, order].real)
    np.testing.assert_allclose(a, b, atol=1e-8)
    # and the dense operator matrix itself: X1ᵀ B X0 = K̂ᵀ
    np.testing.assert_allclose(X1.T @ _dense_B(pf) @ X0, K.T, atol=1e-10)


def test_pf_reduced_errors_float32_pickle_and_inputs():
    X = _ou(80)
    Xc = X.copy()
    with pytest.raises(ValueError, match="estimator must be one of"):
        PerronFrobeniusOperator(estimator="svd").fit(X)
    with pytest.raises(ValueError, match="rank"):
        PerronFrobeniusOperator(estimator="rrr", rank=0).fit(X)
    with pytest.warns(ClippedParameterWarning, match="rank"):
        PerronFrobeniusOperator(estimator="pcr", rank=500, n_components=2).fit(X)
    pf = PerronFrobeniusOperator(estimator="rrr", rank=3, n_components=3).fit(X)
    np.testing.assert_array_equal(X, Xc)
    pf32 = PerronFrobeniusOperator(estimator="rrr", rank=3, n_components=3).fit(
        X.astype(np.float32))
    np.testing.assert_allclose(pf32.eigenvalues_, pf.eigenvalues_, rtol=1e-5)
    back = pickle.loads(pickle.dumps(pf))
    np.testing.assert_array_equal(back.eigenvalues_, pf.eigenvalues_)
    np.testing.assert_allclose(back.svd(2).singular_values, pf.svd(2).singular_values,
                               rtol=1e-12)
    again = PerronFrobeniusOperator(estimator="rrr", rank=3, n_components=3).fit(X)
    np.testing.assert_array_equal(again.eigenvalues_, pf.eigenvalues_)


@pytest.mark.parametrize("cls", [KoopmanOperator, PerronFrobeniusOperator])
def test_rrr_is_stable_under_rounding_level_perturbations(cls):
    """Rank-deficient G (linear kernel, d = 3 < n) and small ε: the dense RRR solves the
    symmetric form D QᵀHQ D/n (well-conditioned eigenvalues), so a CSR copy of X (different
    rounding in the Gram matrices) gives the same estimator to rounding. The former non-normal
    (G + nεI)⁻¹HG/n moved these eigenvalues by 1e-4."""
    import scipy.sparse as sp

    X = np.random.RandomState(0).randn(60, 3)
    kw = dict(kernel="linear", estimator="rrr", rank=2, n_components=2)
    a = cls(**kw).fit(X)
    b = cls(**kw).fit(sp.csr_matrix(X))
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, atol=1e-12)
    fa, fb = _align(a.eigenfunctions_(X[:5]), b.eigenfunctions_(X[:5]))  # up to sign
    np.testing.assert_allclose(fa, fb, atol=1e-9)


def test_pf_reduced_arpack_path_equals_dense():
    """n > 200: the PCR/RRR factors come from ARPACK; the eigenvalues equal the dense ones."""
    X = _ou(320)
    pf = PerronFrobeniusOperator(alpha=1e-4, estimator="rrr", rank=3, n_components=3).fit(X)
    X0, X1 = X[:-1], X[1:]
    n, eps = X0.shape[0], 1e-4
    G, H, Gxy = pf.kernel_(X0), pf.kernel_(X1), pf.kernel_(X0, X1)
    s2, W = sla.eig(np.linalg.solve(G + n * eps * np.eye(n), H @ G) / n)
    W = W[:, np.argsort(-s2.real)[:3]].real
    U = W / np.sqrt(np.einsum("ij,ij->j", G @ W, G @ W + n * eps * W) / n)
    Mt = U.T @ Gxy @ (G @ U / n)
    ref = np.sort(np.abs(np.linalg.eigvals(Mt)))[::-1]
    np.testing.assert_allclose(np.abs(pf.eigenvalues_), ref, rtol=1e-7)


# ------------------------------------------------------------ SVD vs a dense reference
def _dense_svd(op, k: int, Z_in, Z_out):
    """SVD of S = Ψ B Φᵀ from eigendecompositions of the Gram matrices (orthonormal bases
    E = Φ Q Λ^{-1/2}): S = E_out (Λ_out^{1/2} Q_outᵀ B Q_in Λ_in^{1/2}) E_inᵀ."""
    def basis(G):
        lam, Q = np.linalg.eigh(G)
        keep = lam > 1e-11 * lam.max()
        return Q[:, keep], lam[keep]

    Qi, li = basis(op.kernel_in(op.X))
    Qo, lo = basis(op.kernel_out(op.Y))
    B = np.asarray(op.B @ np.eye(op.B.shape[1]))
    core = (np.sqrt(lo)[:, None] * (Qo.T @ B @ Qi)) * np.sqrt(li)
    A, s, Dt = np.linalg.svd(core)
    u = op.kernel_out(Z_out, op.Y) @ (Qo @ (A[:, :k] / np.sqrt(lo)[:, None]))
    v = op.kernel_in(Z_in, op.X) @ (Qi @ (Dt[:k].T / np.sqrt(li)[:, None]))
    return s[:k], u, v


_SVD_CASES = [
    ("koopman", dict()), ("koopman", dict(estimator="pcr", rank=6)),
    ("koopman", dict(estimator="rrr", rank=6)),
    ("koopman", dict(n_landmarks=40, random_state=0)),
    ("koopman", dict(estimator="rrr", rank=6, n_landmarks=40, random_state=0)),
    ("pf", dict()), ("pf", dict(estimator="pcr", rank=6)), ("pf", dict(estimator="rrr", rank=6)),
]


@pytest.mark.filterwarnings("ignore::asymkern.operators.IllConditionedLaggedGramWarning")
@pytest.mark.filterwarnings("ignore:Gram matrix of")  # the QR route's rank-revealing factor
@pytest.mark.parametrize("which,kw", _SVD_CASES)
@pytest.mark.parametrize("method", ["qr", "auxiliary"])
def test_svd_of_every_transfer_estimator_equals_the_dense_svd(which, kw, method):
    """Paper 002's singular functions (the VAMP/CCA-type coherent-set analysis) of each
    estimator: singular values and left/right singular functions equal the dense SVD."""
    X = _ou(90, seed=1)
    cls = KoopmanOperator if which == "koopman" else PerronFrobeniusOperator
    est = cls(kernel="laplacian", kernel_params={"gamma": 1.0}, alpha=1e-3, n_components=3,
              **kw).fit(X)
    k = 3
    res = est.svd(k, method=method)
    Z = np.linspace(-2.5, 2.5, 25)[:, None]
    s, u, v = _dense_svd(est.operator_, k, Z, Z)
    assert np.all(np.diff(s) < -1e-3 * s[0])  # distinct: the singular functions are unique
    np.testing.assert_allclose(res.singular_values, s, rtol=1e-7)
    a, b = _align(res.left(Z), u)
    np.testing.assert_allclose(a, b, atol=1e-6)
    a, b = _align(res.right(Z), v)
    np.testing.assert_allclose(a, b, atol=1e-6)


# ------------------------------------------------------------ asymmetric kernels: refused
@pytest.mark.parametrize("cls", [KoopmanOperator, PerronFrobeniusOperator])
def test_asymmetric_kernels_are_refused_with_the_reason_and_the_alternative(cls):
    X = _ou(40)
    with pytest.raises(ValueError, match="asymmetric.*two feature maps.*KernelSVD"):
        cls(kernel="sne").fit(X)
    with pytest.raises(ValueError, match="asymmetric"):
        cls(kernel="sne", estimator="rrr", rank=2).fit(X)


# ------------------------------------------------------------ scikit-learn common checks
_TRANSFER_CHECKS = TRANSFER_CHECKS
_WHY = ("fit(X, y) takes y = the time-shifted snapshots (tests/test_sklearn_api.py lists the same "
        "expected failures for the default PerronFrobeniusOperator)")


@parametrize_with_checks([PerronFrobeniusOperator(estimator="pcr"),
                          PerronFrobeniusOperator(estimator="rrr")],
                         expected_failed_checks=lambda e: dict.fromkeys(_TRANSFER_CHECKS, _WHY))
def test_common_checks_reduced_rank_pf(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippedParameterWarning)
        check(estimator)


# ------------------------------------------------------------ double gyre (Ex. 4.2) helper
def test_gyre_l2_svd_of_the_rrr_estimator_equals_the_dense_svd():
    """gyre_transfer_estimators: the L² SVD of K̂ (values (K̂g)(X) = G U Vᵀ g(Y)) from two thin
    QRs equals the dense SVD of the n×n matrix G U Vᵀ; Nyström with every point a landmark
    equals the exact estimator."""
    from asymkern.experiments.operators import double_gyre_flow, gyre_transfer_estimators

    g1, g2 = np.meshgrid((np.arange(16) + 0.5) / 8, (np.arange(8) + 0.5) / 8)
    X = np.column_stack([g1.ravel(), g2.ravel()])
    Y = double_gyre_flow(X, tau=2.0)
    V_cca = np.column_stack([X[:, 0] - 1.0, X[:, 1] - 0.5, X[:, 0] * X[:, 1]])
    rows, panels = gyre_transfer_estimators(X, Y, gamma=8.0, alpha=1e-4, V_cca=V_cca, k=3,
                                            n_landmarks=X.shape[0], rank=6)
    est = KoopmanOperator(kernel="rbf", kernel_params={"gamma": 8.0}, alpha=1e-4,
                          estimator="rrr", rank=6, n_components=4).fit(X, Y)
    A = est.kernel_(X) @ _dense_B(est)
    W, s_ref = np.linalg.svd(A)[:2]
    _, U, sv = panels[0]
    np.testing.assert_allclose(sv[:4], s_ref[:4], rtol=1e-8)
    a, b = _align(U, W[:, :4])
    np.testing.assert_allclose(a, b, atol=1e-6)
    np.testing.assert_allclose(np.mean(U**2, axis=0), 1.0, rtol=1e-10)  # unit empirical L²
    np.testing.assert_allclose(panels[1][2][:4], sv[:4], rtol=1e-6)  # Nyström, m = n
    for row in rows:
        assert all(0.0 <= row[f"cos∠(v_{i}, span u)"] <= 1.0 + 1e-12 for i in (1, 2, 3))


@pytest.mark.parametrize("kind", ["full", "rrr"])
@pytest.mark.parametrize("value, err", [(-1, ValueError), (0, ValueError),
                                        (np.nan, ValueError), (np.inf, ValueError),
                                        ("1", TypeError), (None, TypeError)])
def test_pf_timestep_must_be_finite_and_positive(value, err, kind):
    """Issue 29: timestep=-1 gave negative implied timescales (0 zero, NaN/inf non-finite)."""
    X = _ou(60)
    with pytest.raises(err, match="timestep"):
        PerronFrobeniusOperator(timestep=value, estimator=kind, rank=2,
                                n_components=2).fit(X)
    pf = PerronFrobeniusOperator(timestep=0.5, estimator=kind, rank=2, n_components=2).fit(X)
    assert np.all(pf.timescales_ > 0)
