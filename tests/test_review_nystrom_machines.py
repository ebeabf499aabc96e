"""An independent review of the Nyström kernel machines (Li, Liu and Zhang, paper 004).

Every mode is compared with its definition in the paper, written out densely with numpy
(K (n×n), K_nm, K_mm formed explicitly; nothing of the library but the fitted estimator):

* the standard basis A = V_s Σ_s⁻¹ of K_mm (§IV-A), its cut-off m·eps·λ_max, F = K_nm A = Gᵀ;
* LLA, problem (4): ridge / SVM on the rows of F, t(z) = K(z, C) A (§II-E);
* NCR, §II-F and eq. (11): f = C_H β, β = (K_mn K_nm + λ₀K_mm)^† K_mn y;
* GSA, problem (3) through Algorithm 1 / eq. (20): α̂ = G^† ŵ, test phase (G^†)ᵀ k(X, z);
* SPA, problem (6): the dual machine on K̃ = FFᵀ, test kernel t(z) Fᵀ;
* exact, problem (2), and the errors (15) and (19) evaluated literally.

Cases the existing tests do not pin: multi-output targets, a single landmark, a
rank-deficient K_mm from duplicated points, a truncated subspace, regularisation tiny and huge,
string and non-contiguous class labels, float32 and data far from the origin, the same
``random_state`` on numpy / torch / Dask, a weight of 2 against a duplicated row on every
executor, clone / pickle of every mode, inputs never written to, and bad arguments.
"""

from __future__ import annotations

import contextlib
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.svm import SVC, LinearSVC, NuSVC

from asymkern.nystrom import (
    NystromKernelPCA,
    NystromKernelRidge,
    NystromSVC,
    approximation_error,
    gsa_approximation_error,
    lla_approximation_error,
)

GAMMA = 0.4
ALPHA = 0.3
MODES = ("lla", "ncr", "gsa", "spa")


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """One BLAS thread: the problems are tiny (and the results must not depend on it)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


def _rbf(A, B):
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    return np.exp(-GAMMA * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))


def _rel(got, want) -> float:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


def _quad(a, M, b):
    """Column-wise aᵢᵀ M bᵢ."""
    return np.einsum("ij,ij->j", a, M @ b)


@pytest.fixture(scope="module")
def reg():
    rs = np.random.RandomState(0)
    X = rs.randn(64, 3)
    X[48:56] = X[:8]  # eight duplicated points (rank-deficient K_mm when both are landmarks)
    Y = np.c_[np.sin(X[:, 0]) + 0.3 * X[:, 1], X[:, 2] ** 2 - 0.5]  # two outputs
    return X, Y, rs.randn(12, 3)


@pytest.fixture(scope="module")
def clf():
    rs = np.random.RandomState(1)
    X = rs.randn(84, 3)
    score = X[:, 0] + X[:, 1] ** 2 + 0.2 * rs.randn(84)
    lab = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))
    return X, lab, rs.randn(15, 3)


LANDMARK_CASES = {
    "rows": np.arange(0, 64, 4),
    "one": np.array([5]),
    "duplicated_points": np.r_[np.arange(12), np.arange(48, 54)],  # rank 12 of 18
}


def _basis(X, idx, s=None):
    """A = V_s Σ_s⁻¹ of K_mm with the numerical rank cut m·eps·λ_max (§IV-A)."""
    Kmm = _rbf(X[idx], X[idx])
    lam, V = np.linalg.eigh(Kmm)
    lam, V = lam[::-1], V[:, ::-1]
    r = int(np.sum(lam > len(idx) * np.finfo(np.float64).eps * lam[0]))
    s = r if s is None else s
    return V[:, :s] / np.sqrt(lam[:s]), Kmm


def _ridge_references(X, Y, Xt, idx, alpha, center, s=None):
    """Predictions of every mode of Nyström kernel ridge regression, from the paper's problems
    written densely; with ``center`` the features / kernel are centred and ȳ added back."""
    n = X.shape[0]
    K, Kt = _rbf(X, X), _rbf(Xt, X)
    Knm, Ktm = _rbf(X, X[idx]), _rbf(Xt, X[idx])
    A, Kmm = _basis(X, idx, s)
    F, Ft = Knm @ A, Ktm @ A
    fbar = F.mean(0) if center else np.zeros(F.shape[1])
    ybar = Y.mean(0) if center else np.zeros(Y.shape[1])
    Fc, Yc = F - fbar, Y - ybar
    # LLA, problem (4) (KRR: ‖Y_c − F_c w‖² + λ₀‖w‖²)
    w = np.linalg.solve(Fc.T @ Fc + alpha * np.eye(F.shape[1]), Fc.T @ Yc)
    out = {"lla": (Ft - fbar) @ w + ybar}
    # NCR, eq. (11): f ∈ span(C_H), f = C_H β (centred rows of K_nm with an intercept)
    kbar = Knm.mean(0) if center else np.zeros(len(idx))
    Kc = Knm - kbar
    beta = np.linalg.pinv(Kc.T @ Kc + alpha * Kmm, rcond=1e-10, hermitian=True) @ (Kc.T @ Yc)
    out["ncr"] = (Ktm - kbar) @ beta + ybar
    # GSA, eq. (20) and Algorithm 1: α̂ = G^† ŵ; t(z) = (G^†)ᵀ k(X, z) fed to the linear model
    a_hat = np.linalg.pinv(Fc.T) @ w
    out["gsa"] = Kt @ a_hat + ybar - fbar @ w
    # SPA, problem (6): kernel ridge on K̃ = F_c F_cᵀ, the test kernel the projected one
    a_spa = np.linalg.solve(Fc @ Fc.T + alpha * np.eye(n), Yc)
    out["spa"] = (Ft - fbar) @ (Fc.T @ a_spa) + ybar
    # exact, problem (2) (the centred kernel HKH with an intercept)
    H = np.eye(n) - (1.0 / n if center else 0.0)
    a_ex = np.linalg.solve(H @ K @ H + alpha * np.eye(n), Yc)
    out["exact"] = (Kt - (K.mean(0) if center else 0.0)) @ a_ex + ybar
    return out, {"gsa": a_hat, "spa": a_spa, "exact": a_ex, "w": w}


# ============================================================================ kernel ridge
@pytest.mark.parametrize("case", sorted(LANDMARK_CASES))
@pytest.mark.parametrize("center", [False, True])
def test_ridge_modes_equal_the_dense_definitions(reg, case, center):
    """Each mode's predictions (two outputs), GSA's α̂ of eq. (20) and SPA's dual equal the
    paper's problems solved densely: one landmark, landmarks from rows, and a singular K_mm
    (duplicated points among the landmarks: K_mm^† with the m·eps cut-off)."""
    X, Y, Xt = reg
    idx = LANDMARK_CASES[case]
    want, duals = _ridge_references(X, Y, Xt, idx, ALPHA, center)
    for mode in MODES + ("exact",):
        est = NystromKernelRidge(mode=mode, landmarks=idx, alpha=ALPHA, gamma=GAMMA,
                                 fit_intercept=center).fit(X, Y)
        got = est.predict(Xt)
        assert got.shape == (len(Xt), 2)
        assert _rel(got, want[mode]) < 1e-9, (mode, _rel(got, want[mode]))
        if mode in ("gsa", "spa"):
            assert _rel(est.dual_coef_, duals[mode]) < 1e-9, mode
        if mode == "gsa":  # LLA's model, the same training (Algorithm 1)
            assert _rel(est.predict_lla(Xt), want["lla"]) < 1e-9
            assert _rel(est.coef_.T, duals["w"]) < 1e-9
        if mode != "exact" and case == "duplicated_points":
            assert est.basis_.rank == 12 and est.subspace_dim_ == 12


def test_ridge_truncated_subspace_equals_dense(reg):
    """subspace_dim = s < rank keeps the top-s eigenpairs of K_mm (the basis B_H of §III-B)."""
    X, Y, Xt = reg
    idx = LANDMARK_CASES["rows"]
    want, _ = _ridge_references(X, Y, Xt, idx, ALPHA, True, s=5)
    for mode in ("lla", "gsa", "spa"):
        est = NystromKernelRidge(mode=mode, landmarks=idx, subspace_dim=5, alpha=ALPHA,
                                 gamma=GAMMA, fit_intercept=True).fit(X, Y)
        assert est.subspace_dim_ == 5
        assert _rel(est.predict(Xt), want[mode]) < 1e-9, mode


@pytest.mark.parametrize("alpha", [1e-9, 1e9])
def test_ridge_regularisation_extremes(reg, alpha):
    """λ₀ tiny (tolerance scaled by the condition number of the s×s system) and huge (the
    predictions shrink to ȳ, and still equal the definitions). SPA's n×n dual reference has
    condition number ≈ σ₁²/λ₀ = 1e11 at λ₀ = 1e-9, so there SPA is held to LLA's reference
    instead (the strong equivalence of Propositions 5–6: landmarks are training rows)."""
    X, Y, Xt = reg
    idx = np.arange(0, 64, 8)
    want, _ = _ridge_references(X, Y, Xt, idx, alpha, True)
    A, _ = _basis(X, idx)
    F = _rbf(X, X[idx]) @ A
    Fc = F - F.mean(0)
    cond = np.linalg.cond(Fc.T @ Fc + alpha * np.eye(F.shape[1]))
    tol = max(1e-9, 1e-14 * cond)
    for mode in MODES:
        est = NystromKernelRidge(mode=mode, landmarks=idx, alpha=alpha, gamma=GAMMA,
                                 fit_intercept=True).fit(X, Y)
        ref = want["lla" if mode == "spa" and alpha < 1 else mode]
        assert _rel(est.predict(Xt), ref) < tol, (mode, _rel(est.predict(Xt), ref), tol)
        if alpha > 1:
            np.testing.assert_allclose(est.predict(Xt), np.broadcast_to(Y.mean(0), (12, 2)),
                                       atol=1e-6 * np.abs(Y).max())


# ============================================================================ errors (15), (19)
@pytest.mark.parametrize("landmarks", ["uniform", "kmeans", "gaussian", "one"])
@pytest.mark.parametrize("center", [False, True])
def test_ridge_errors_equal_eq15_and_eq19_literally(reg, landmarks, center):
    """lla_approximation_error is eq. (15) with α̂ = G^†ŵ and K̃ = GᵀG, gsa_approximation_error
    eq. (19); one value per output; for LLA, NCR and SPA fits as well as GSA's."""
    X, Y, _ = reg
    kw = dict(alpha=ALPHA, gamma=GAMMA, fit_intercept=center)
    lm = dict(landmarks=np.array([5])) if landmarks == "one" else dict(
        landmarks=landmarks, n_landmarks=10, random_state=1)
    exact = NystromKernelRidge(mode="exact", **kw).fit(X, Y)
    K = _rbf(X, X)
    at = exact.dual_coef_
    for mode in MODES:
        est = NystromKernelRidge(mode=mode, **lm, **kw).fit(X, Y)
        G = (est.basis_.landmark_kernel(X) @ est.basis_.A).T  # s × n
        Kt = G.T @ G
        Gc = G - G.mean(1, keepdims=True) if center else G
        Yc = Y - Y.mean(0) if center else Y
        w = np.linalg.solve(Gc @ Gc.T + ALPHA * np.eye(G.shape[0]), Gc @ Yc)
        ah = np.linalg.pinv(Gc) @ w
        eq15 = _quad(ah, Kt, ah) + _quad(at, K, at) - 2 * _quad(ah, Kt, at)
        scale = _quad(at, K, at)  # (15) cancels: its rounding is relative to ‖f*‖²
        got = lla_approximation_error(est, exact, squared=True)
        assert got.shape == (2,)
        np.testing.assert_allclose(got, eq15, rtol=1e-7, atol=1e-10 * scale.max(),
                                   err_msg=mode)
        if mode == "gsa":
            eq19 = _quad(at - ah, K, at - ah)
            np.testing.assert_allclose(gsa_approximation_error(est, exact, squared=True), eq19,
                                       rtol=1e-8, atol=1e-12 * scale.max())
            np.testing.assert_allclose(approximation_error(est, exact), np.sqrt(eq19),
                                       rtol=1e-7)
        else:
            np.testing.assert_allclose(approximation_error(est, exact),
                                       np.sqrt(np.maximum(eq15, 0)), rtol=1e-6,
                                       atol=1e-5 * np.sqrt(scale.max()))


@pytest.mark.parametrize("svm", ["nusvc", "svc"])
def test_svc_errors_equal_eq15_and_eq19_literally(clf, svm):
    """Per one-vs-one machine: (15) with α̂ = G^†ŵ (LLA, NCR, GSA) or SPA's duals D on K̃, (19)
    with GSA's α̂; string labels."""
    X, lab, _ = clf
    y = np.array(["zeta", "alpha", "mid"])[lab]
    kw = dict(landmarks=np.arange(0, 84, 6), gamma=GAMMA, svm=svm, tol=1e-10, nu=0.3, C=2.0)
    exact = NystromSVC(mode="exact", **kw).fit(X, y)
    K = _rbf(X, X)
    at = exact.dual_coef_
    for mode in MODES:
        est = NystromSVC(mode=mode, **kw).fit(X, y)
        G = (est.basis_.landmark_kernel(X) @ est.basis_.A).T
        Kt = G.T @ G
        ah = est.dual_coef_ if mode == "spa" else np.linalg.pinv(G) @ est.coef_.T
        eq15 = _quad(ah, Kt, ah) + _quad(at, K, at) - 2 * _quad(ah, Kt, at)
        got = lla_approximation_error(est, exact, squared=True)
        assert got.shape == (3,)
        np.testing.assert_allclose(got, eq15, rtol=1e-7,
                                   atol=1e-10 * _quad(at, K, at).max(), err_msg=mode)
        if mode == "gsa":
            np.testing.assert_allclose(est.dual_coef_, ah, rtol=1e-8, atol=1e-10)
            np.testing.assert_allclose(gsa_approximation_error(est, exact, squared=True),
                                       _quad(at - ah, K, at - ah), rtol=1e-8)


# ============================================================================ SVC
@pytest.mark.parametrize("labels", ["strings", "non_contiguous", "binary"])
@pytest.mark.parametrize("svm", ["nusvc", "svc", "linearsvc"])
def test_svc_modes_equal_the_dense_definitions(clf, labels, svm):
    """Decision values and labels of every mode equal scikit-learn's solvers on the paper's
    inputs: F (LLA, NCR), (G^†)ᵀ k(X, z) fed to LLA's model (GSA, Algorithm 1), the
    precomputed K̃ = FFᵀ with test kernel t(z)Fᵀ (SPA), K itself (exact). Labels keep their
    type; ``classes_`` is sorted."""
    X, lab, Xt = clf
    y = {"strings": np.array(["zeta", "alpha", "mid"])[lab],
         "non_contiguous": np.array([7, -3, 40])[lab],
         "binary": np.where(lab > 0, 7, 2)}[labels]
    idx = np.arange(0, 84, 5)
    A, _ = _basis(X, idx)
    F, Ft = _rbf(X, X[idx]) @ A, _rbf(Xt, X[idx]) @ A
    K, Kt = _rbf(X, X), _rbf(Xt, X)
    solver = {"nusvc": lambda k: NuSVC(nu=0.3, kernel=k, tol=1e-10),
              "svc": lambda k: SVC(C=2.0, kernel=k, tol=1e-10),
              "linearsvc": lambda k: LinearSVC(C=2.0, tol=1e-10, max_iter=100000,
                                               random_state=0)}[svm]
    lin = solver("linear").fit(F, y)
    Tg = Kt @ np.linalg.pinv(F.T)  # t_GSA(z) = (G^†)ᵀ k(X, z), G = Fᵀ
    want = {"lla": (lin, Ft), "ncr": (lin, Ft), "gsa": (lin, Tg)}
    if svm != "linearsvc":
        want["spa"] = (solver("precomputed").fit(F @ F.T, y), Ft @ F.T)
        want["exact"] = (solver("precomputed").fit(K, y), Kt)
    for mode, (ref, T) in want.items():
        est = NystromSVC(mode=mode, landmarks=idx, gamma=GAMMA, svm=svm, nu=0.3, C=2.0,
                         tol=1e-10, max_iter=100000 if svm == "linearsvc" else -1,
                         random_state=0).fit(X, y)
        np.testing.assert_array_equal(est.classes_, np.unique(y))
        dref = ref.decision_function(T)
        assert _rel(est.decision_function(Xt), dref) < 1e-7, mode
        pred = est.predict(Xt)
        assert pred.dtype == y.dtype
        np.testing.assert_array_equal(pred, ref.predict(T), err_msg=mode)


# ============================================================================ KPCA
@pytest.mark.parametrize("center", [True, False])
def test_kpca_modes_equal_the_dense_definitions(reg, center):
    """LLA / NCR: principal directions of F_c; SPA: eigenvectors of K̃_c = F_cF_cᵀ; GSA:
    α̂ = F_c^{†ᵀ}W (eq. (20)); exact: eigenvectors of HKH; eigenvalues σ² of F_c (λ of HKH);
    and (15), (19) with the better sign of each component."""
    X, _, Xt = reg
    idx, k, n = LANDMARK_CASES["rows"], 3, X.shape[0]
    A, _ = _basis(X, idx)
    F, Ft = _rbf(X, X[idx]) @ A, _rbf(Xt, X[idx]) @ A
    K, Kt = _rbf(X, X), _rbf(Xt, X)
    fbar = F.mean(0) if center else np.zeros(F.shape[1])
    Fc = F - fbar
    U, S, Vt = np.linalg.svd(Fc, full_matrices=False)
    W = Vt[:k].T
    H = np.eye(n) - (1.0 / n if center else 0.0)
    lam, E = np.linalg.eigh(H @ K @ H)
    lam, E = lam[::-1][:k], E[:, ::-1][:, :k]
    a_ex = E / np.sqrt(lam)
    a_gsa = np.linalg.pinv(Fc.T) @ W
    want = {"lla": (Ft - fbar) @ W, "ncr": (Ft - fbar) @ W,
            "spa": (Ft - fbar) @ (Fc.T @ (U[:, :k] / S[:k])),
            "gsa": Kt @ a_gsa - fbar @ W,
            "exact": (Kt - (K.mean(0) if center else 0.0)) @ a_ex}
    exact = NystromKernelPCA(k, mode="exact", gamma=GAMMA, center=center).fit(X)
    at = exact.dual_coef_
    for mode, ref in want.items():
        est = NystromKernelPCA(k, mode=mode, landmarks=idx, gamma=GAMMA, center=center).fit(X)
        got = est.transform(Xt)
        sign = np.sign(np.sum(got * ref, axis=0))
        assert _rel(got * sign, ref) < 1e-9, mode
        np.testing.assert_allclose(est.eigenvalues_, lam if mode == "exact" else S[:k] ** 2,
                                   rtol=1e-9)
        if mode == "exact":
            continue
        ah = est.dual_coef_ if mode == "spa" else np.linalg.pinv(Fc.T) @ est.coef_.T
        Ktl = F @ F.T
        common = _quad(ah, Ktl, ah) + _quad(at, K, at)
        cross = 2 * _quad(ah, Ktl, at)
        np.testing.assert_allclose(lla_approximation_error(est, exact, squared=True),
                                   np.minimum(common - cross, common + cross), rtol=1e-7,
                                   atol=1e-10, err_msg=mode)
        if mode == "gsa":
            eq19 = np.minimum(_quad(at - ah, K, at - ah), _quad(at + ah, K, at + ah))
            np.testing.assert_allclose(gsa_approximation_error(est, exact, squared=True),
                                       eq19, rtol=1e-8, atol=1e-12)


# ============================================================================ dtypes, offsets
def _every_machine(X, y_reg, y_clf, Xt, mode, **extra):
    """(predict, decision_function, transform) of the three machines in ``mode``."""
    kw = dict(mode=mode, n_landmarks=12, gamma=GAMMA, random_state=3, **extra)
    return (NystromKernelRidge(alpha=0.1, fit_intercept=True, **kw).fit(X, y_reg).predict(Xt),
            NystromSVC(nu=0.3, tol=1e-10, **kw).fit(X, y_clf).decision_function(Xt),
            NystromKernelPCA(3, **kw).fit(X).transform(Xt))


@pytest.mark.parametrize("mode", MODES + ("exact",))
def test_float32_and_data_far_from_the_origin(clf, mode):
    """float32 in → float32 out, within 1e-4 of the float64 fit on the same values; data
    shifted by 1e6 give the unshifted results (RBF is translation invariant; 1e-7 leaves room
    for the rounding of the shifted inputs themselves, 1e6·eps ≈ 2e-10)."""
    X, lab, Xt = clf
    y = np.sin(X[:, 0]) + X[:, 1]
    X32, Xt32 = X.astype(np.float32), Xt.astype(np.float32)
    ref = _every_machine(X32.astype(np.float64), y, lab, Xt32.astype(np.float64), mode)
    for got, want in zip(_every_machine(X32, y, lab, Xt32, mode), ref):
        assert got.dtype == np.float32
        assert _rel(got, want) < 1e-4
    ref = _every_machine(X, y, lab, Xt, mode)
    for got, want in zip(_every_machine(X + 1e6, y, lab, Xt + 1e6, mode), ref):
        assert _rel(got, want) < 1e-7


# ============================================================================ executors
def _on(backend, a):
    """``a`` as an input of ``backend`` (labels that are strings stay numpy)."""
    a = np.asarray(a)
    if backend == "numpy" or a.dtype.kind not in "biuf":
        return a
    if backend == "torch":
        import torch

        return torch.as_tensor(a)
    import dask.array as da

    return da.from_array(a, chunks=(20,) + a.shape[1:])


def _host(a) -> np.ndarray:
    if hasattr(a, "detach"):
        return a.detach().cpu().numpy()
    if hasattr(a, "compute"):
        return np.asarray(a.compute())
    return np.asarray(a)


@pytest.fixture(params=["torch", "dask"])
def other_backend(request):
    pytest.importorskip(request.param)
    if request.param == "torch":
        yield "torch"
        return
    import dask

    with dask.config.set(scheduler="synchronous"):
        yield "dask"


@pytest.mark.parametrize("landmarks", ["uniform", "leverage", "kmeans", "duplicated_points"])
def test_same_random_state_same_landmarks_and_results_on_every_executor(
        reg, clf, other_backend, landmarks):
    """The same ``random_state`` draws the same landmarks on numpy, torch and Dask, and the
    fits agree to rounding (two outputs with an intercept; string class labels), a singular
    K_mm included."""
    X, Y, Xt = reg
    Xc, lab, Xct = clf
    yc = np.array(["zeta", "alpha", "mid"])[lab]
    lm = (dict(landmarks=LANDMARK_CASES["duplicated_points"]) if landmarks ==
          "duplicated_points" else dict(landmarks=landmarks, n_landmarks=12, random_state=7))
    for mode in MODES:
        kw = dict(mode=mode, gamma=GAMMA, **lm)
        ref = NystromKernelRidge(alpha=0.1, fit_intercept=True, **kw).fit(X, Y)
        est = NystromKernelRidge(alpha=0.1, fit_intercept=True, **kw).fit(
            _on(other_backend, X), _on(other_backend, Y))
        np.testing.assert_array_equal(_host(est.landmark_indices_), ref.landmark_indices_)
        assert _rel(_host(est.predict(_on(other_backend, Xt))), ref.predict(Xt)) < 1e-9, mode
    for mode in ("lla", "ncr") if other_backend == "dask" else MODES:  # Dask: F gathered
        kw = dict(mode=mode, gamma=GAMMA, nu=0.3, tol=1e-10, **lm)
        ref = NystromSVC(**kw).fit(Xc, yc)
        est = NystromSVC(**kw).fit(_on(other_backend, Xc), yc)
        np.testing.assert_array_equal(_host(est.landmark_indices_), ref.landmark_indices_)
        np.testing.assert_array_equal(est.classes_, ref.classes_)
        got = _host(est.decision_function(_on(other_backend, Xct)))
        assert _rel(got, ref.decision_function(Xct)) < 1e-7, mode
        np.testing.assert_array_equal(_host(est.predict(_on(other_backend, Xct))),
                                      ref.predict(Xct))


@pytest.mark.parametrize("backend", ["numpy", "torch", "dask"])
def test_weight_two_equals_a_duplicated_row_on_every_executor(reg, backend):
    """The documented promise: an integer weight equals repeating the row (same landmarks),
    in every mode each executor offers weights for (Dask: lla, ncr, spa)."""
    if backend != "numpy":
        pytest.importorskip(backend)
    X, Y, Xt = reg
    n = X.shape[0]
    w = np.ones(n)
    w[[3, 10, 30, 41]] = 2.0
    w[[7, 20]] = 3.0
    rep = np.repeat(np.arange(n), w.astype(int))  # sorted: rows keep their order
    idx = np.arange(0, n, 5)
    idx_rep = np.searchsorted(rep, idx)  # the same landmark points in the repeated data
    modes = ("lla", "ncr", "spa") if backend == "dask" else MODES + ("exact",)
    ctx = contextlib.nullcontext()
    if backend == "dask":
        import dask

        ctx = dask.config.set(scheduler="synchronous")
    with ctx:
        for mode in modes:
            kw = dict(mode=mode, alpha=ALPHA, gamma=GAMMA, fit_intercept=True)
            a = NystromKernelRidge(landmarks=idx, **kw).fit(
                _on(backend, X), _on(backend, Y), sample_weight=_on(backend, w))
            b = NystromKernelRidge(landmarks=idx_rep, **kw).fit(X[rep], Y[rep])
            got = _host(a.predict(_on(backend, Xt)))
            assert _rel(got, b.predict(Xt)) < 1e-8, mode


# ============================================================================ conventions
def test_inputs_never_written_to(reg, clf):
    X, Y, Xt = reg
    Xc, lab, _ = clf
    w = np.linspace(0.5, 2.0, X.shape[0])
    arrays = (X, Y, Xt, Xc, lab, w)
    saved = [a.copy() for a in arrays]
    for mode in MODES + ("exact",):
        e = NystromKernelRidge(mode=mode, n_landmarks=10, gamma=GAMMA, fit_intercept=True,
                               random_state=0).fit(X, Y, sample_weight=w)
        e.predict(Xt)
        if mode != "exact":
            lla_approximation_error(e, NystromKernelRidge(
                mode="exact", gamma=GAMMA, fit_intercept=True).fit(X, Y, sample_weight=w))
        NystromSVC(mode=mode, n_landmarks=10, gamma=GAMMA, nu=0.3, random_state=0).fit(
            Xc, lab).decision_function(Xc)
        NystromKernelPCA(2, mode=mode, n_landmarks=10, gamma=GAMMA, random_state=0).fit(
            X).transform(Xt)
    for a, b in zip(arrays, saved):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("mode", MODES + ("exact",))
def test_clone_and_pickle_round_trip_of_every_mode(reg, clf, backend, mode):
    """clone keeps the parameters; an unpickled model (numpy or torch fit) gives the same
    outputs, on its executor's arrays and on numpy arrays."""
    if backend == "torch":
        pytest.importorskip("torch")
    X, Y, Xt = reg
    Xc, lab, Xct = clf
    yc = np.array(["b", "a", "c"])[lab]
    for est, args, Z, meth in (
            (NystromKernelRidge(mode=mode, n_landmarks=10, gamma=GAMMA, random_state=0),
             (X, Y), Xt, "predict"),
            (NystromSVC(mode=mode, n_landmarks=10, gamma=GAMMA, nu=0.3, random_state=0),
             (Xc, yc), Xct, "decision_function"),
            (NystromKernelPCA(2, mode=mode, n_landmarks=10, gamma=GAMMA, random_state=0),
             (X,), Xt, "transform")):
        assert clone(est).get_params() == est.get_params()
        est.fit(*(_on(backend, a) for a in args))
        want = _host(getattr(est, meth)(_on(backend, Z)))
        back = pickle.loads(pickle.dumps(est))
        np.testing.assert_array_equal(_host(getattr(back, meth)(_on(backend, Z))), want)
        np.testing.assert_allclose(_host(getattr(back, meth)(Z)), want, rtol=1e-12,
                                   atol=1e-14)


# ============================================================================ bad arguments
@pytest.mark.parametrize("params, error, match", [
    ({"svm": "svc", "nu": 5.0}, ValueError, r"nu must be in \(0, 1\]"),
    ({"svm": "svc", "nu": "half"}, TypeError, r"nu must be a real number"),
    ({"svm": "linearsvc", "nu": -3.0}, ValueError, r"nu must be finite and > 0"),
    ({"svm": "nusvc", "C": -1.0}, ValueError, r"C must be > 0"),
    ({"svm": "nusvc", "C": float("nan")}, ValueError, r"C must be > 0"),
    ({"svm": "nusvc", "C": "big"}, TypeError, r"C must be a real number"),
    ({"svm": "nusvc", "tol": 0.0}, ValueError, r"tol must be finite and > 0"),
    ({"svm": "linearsvc", "max_iter": -7}, ValueError, r"max_iter must be an integer >= -1"),
    ({"svm": "svc", "max_iter": 2.5}, TypeError, r"max_iter must be an integer >= -1"),
])
def test_svm_parameters_checked_whichever_solver_reads_them(clf, params, error, match):
    """A ``C`` given with ν-SVC, a ``nu`` with C-SVC or liblinear, or a negative ``max_iter``
    with liblinear was ignored silently (scikit-learn's solver never saw it); the package's
    convention is to check every parameter before any kernel work."""
    X, lab, _ = clf

    def refuse(A, B):
        raise AssertionError("the kernel was evaluated before the parameters were checked")

    with pytest.raises(error, match=match):
        NystromSVC(n_landmarks=10, kernel=refuse, **params).fit(X, lab)
    with pytest.raises(error, match=match):
        NystromSVC(n_landmarks=10, gamma=GAMMA, **params).fit(X, lab)


def test_approximation_errors_refuse_machines_of_different_problems(reg, clf):
    """(15) and (19) measure f̂ against the optimum f* of the same problem (1): an exact fit
    with another ridge parameter, intercept, ν, C, solver or centring is refused (it returned a
    number), and so is ``svm='linearsvc'``, which the class documents as having no exact
    counterpart (it was compared with libsvm's one-vs-one machines)."""
    X, Y, _ = reg
    Xc, lab, _ = clf
    ap = NystromKernelRidge(mode="gsa", n_landmarks=10, gamma=GAMMA, alpha=0.3,
                            random_state=0).fit(X, Y)
    for other, name in ((dict(alpha=0.5), "alpha"), (dict(fit_intercept=True),
                                                     "fit_intercept")):
        ex = NystromKernelRidge(mode="exact", gamma=GAMMA, **dict(dict(alpha=0.3), **other))
        ex.fit(X, Y)
        for fn in (approximation_error, lla_approximation_error, gsa_approximation_error):
            with pytest.raises(ValueError, match=f"{name}=.*solve different problems"):
                fn(ap, ex)
    svc = dict(n_landmarks=12, gamma=GAMMA, random_state=0)
    for a_kw, e_kw, name in ((dict(nu=0.3), dict(nu=0.5), "nu"),
                             (dict(svm="svc", C=1.0), dict(svm="svc", C=3.0), "C"),
                             (dict(svm="svc"), dict(svm="nusvc"), "svm")):
        ap = NystromSVC(mode="lla", **svc, **a_kw).fit(Xc, lab)
        ex = NystromSVC(mode="exact", **svc, **e_kw).fit(Xc, lab)
        with pytest.raises(ValueError, match=f"{name}=.*solve different problems"):
            lla_approximation_error(ap, ex)
    ap = NystromSVC(mode="gsa", svm="linearsvc", **svc).fit(Xc, lab)
    ex = NystromSVC(mode="exact", svm="svc", **svc).fit(Xc, lab)
    with pytest.raises(ValueError, match="svm='linearsvc'.*no exact counterpart"):
        approximation_error(ap, ex)
    ap = NystromKernelPCA(2, mode="lla", **svc).fit(X)
    ex = NystromKernelPCA(2, mode="exact", gamma=GAMMA, center=False).fit(X)
    with pytest.raises(ValueError, match="center=.*solve different problems"):
        lla_approximation_error(ap, ex)
    # the same problem (parameters equal, other solver settings free) is accepted
    ap = NystromSVC(mode="lla", nu=0.3, C=5.0, tol=1e-6, **svc).fit(Xc, lab)
    ex = NystromSVC(mode="exact", nu=0.3, C=1.0, tol=1e-9, **svc).fit(Xc, lab)
    assert np.all(lla_approximation_error(ap, ex) >= 0)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("Est", [NystromKernelRidge, NystromSVC, NystromKernelPCA])
def test_precomputed_asymmetric_kernel_matrix_is_refused(reg, clf, backend, Est):
    """``kernel='precomputed'`` needs the symmetric Gram matrix of a PSD kernel; an
    asymmetric one was used as it is for K_nm and symmetrised silently for K_mm. Rounding-level
    asymmetry (1e-13) is still accepted."""
    if backend == "torch":
        pytest.importorskip("torch")
    X, _, _ = reg
    y = {NystromKernelRidge: np.sin(X[:, 0]), NystromSVC: (X[:, 0] > 0).astype(int),
         NystromKernelPCA: None}[Est]
    K = _rbf(X, X)
    bad = K + 0.05 * np.random.RandomState(0).rand(*K.shape)
    for mode in ("lla", "gsa", "exact"):
        est = Est(mode=mode, kernel="precomputed", n_landmarks=10, random_state=0)
        with pytest.raises(ValueError, match="X must be the symmetric"):
            est.fit(_on(backend, bad), y)
        noisy = K + 1e-13 * np.random.RandomState(1).rand(*K.shape)
        est.fit(_on(backend, noisy), y)


@pytest.mark.parametrize("backend", ["numpy", "torch", "dask", "dask_y"])
def test_targets_without_columns_are_refused(reg, backend):
    """y of shape (n, 0) has nothing to fit: refused naming y on every executor (it gave
    empty predictions), as scikit-learn refuses it."""
    X, _, _ = reg
    y = np.empty((X.shape[0], 0))
    if backend == "dask_y":  # a dask y: the Dask executor's own check of dask targets
        Xb, yb = _on("dask", X), _on("dask", np.zeros((X.shape[0], 1)))[:, :0]
    else:
        pytest.importorskip(backend if backend != "numpy" else "numpy")
        Xb, yb = _on(backend, X), y
    with pytest.raises(ValueError, match=r"y has shape \(\d+, 0\)"):
        NystromKernelRidge(n_landmarks=10, gamma=GAMMA, random_state=0).fit(Xb, yb)

