"""Issue 19: Koopman estimators a dynamical-systems user works with (PCR/RRR, Nyström, forecasts,
observables, modes, left eigenfunctions) and issue 16 gap 4 (partial eigensolvers).

Every fast path is compared with a dense, obviously-correct reference (numpy eig/eigh/solve), and
the statistics with analytic values on linear systems and the Ornstein–Uhlenbeck process.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import scipy.linalg as sla
from _transfer_checks import TRANSFER_CHECKS
from _transfer_checks import ou_trajectory as _ou
from sklearn.model_selection import GridSearchCV
from sklearn.utils.estimator_checks import parametrize_with_checks

from asymkern.exceptions import ClippedParameterWarning
from asymkern.operators import KoopmanOperator

KINDS = ("full", "pcr", "rrr")


def _linear(n: int = 600, seed: int = 0, noise: float = 0.05):
    """x_{t+1} = A x_t + noise with a rotation-contraction A (known k-step map Aᵏ)."""
    rng = np.random.RandomState(seed)
    c, s = np.cos(0.3), np.sin(0.3)
    A = 0.9 * np.array([[c, -s], [s, c]])
    x = np.zeros((n, 2))
    x[0] = [1.0, 0.0]
    for t in range(n - 1):
        x[t + 1] = A @ x[t] + noise * rng.randn(2)
    return x, A


def _ridge(X0, X1, eps):
    n = X0.shape[0]
    return np.linalg.solve(X0.T @ X0 + n * eps * np.eye(X0.shape[1]), X0.T @ X1)


# ------------------------------------------------------------------ dense references
@pytest.mark.parametrize("kind", ["pcr", "rrr"])
def test_full_rank_reduced_estimators_equal_kernel_ridge(kind):
    X = _ou(60)
    full = KoopmanOperator(alpha=1e-3, n_components=3).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippedParameterWarning)
        red = KoopmanOperator(alpha=1e-3, n_components=3, estimator=kind, rank=59).fit(X)
    for k in (1, 3):
        np.testing.assert_allclose(red.predict(X, n_steps=k), full.predict(X, n_steps=k),
                                   atol=1e-6)
    np.testing.assert_allclose(red.eigenvalues_, full.eigenvalues_, atol=1e-6)


def test_linear_kernel_rrr_and_pcr_equal_primal_formulas():
    """Linear kernel: the dual (kernel) PCR/RRR equal the d×d primal closed forms."""
    X, _ = _linear(200)
    X0, X1 = X[:-1], X[1:]
    n, eps, r = X0.shape[0], 1e-3, 1
    Ag = X0.T @ X0 + n * eps * np.eye(2)
    C = X0.T @ X1
    s2, V = sla.eigh(C.T @ np.linalg.solve(Ag, C))
    K_rrr = np.linalg.solve(Ag, C) @ V[:, -r:] @ V[:, -r:].T
    lam, Q = sla.eigh(X0.T @ X0)  # top eigvecs of G = X0 X0ᵀ ↔ right singular vectors of X0
    Qr = Q[:, -r:]
    K_pcr = Qr @ np.diag(1 / (lam[-r:] + n * eps)) @ Qr.T @ C
    for kind, K in (("rrr", K_rrr), ("pcr", K_pcr)):
        for lm in (None, np.arange(n)):
            est = KoopmanOperator(kernel="linear", alpha=eps, estimator=kind, rank=r,
                                  n_components=1, landmarks="uniform" if lm is None else lm)
            est.fit(X)
            for k in (1, 2, 4):
                np.testing.assert_allclose(est.predict(X0[:5], n_steps=k),
                                           X0[:5] @ np.linalg.matrix_power(K, k), atol=1e-8)
            lam_ref = np.linalg.eigvals(K)
            lam_ref = lam_ref[np.argsort(-np.abs(lam_ref))][:1]
            np.testing.assert_allclose(est.eigenvalues_, lam_ref, atol=1e-8)


@pytest.mark.parametrize("kind", KINDS)
def test_nystrom_with_every_sample_a_landmark_equals_exact(kind):
    X = _ou(80)
    a = KoopmanOperator(alpha=1e-3, n_components=3, estimator=kind, rank=4).fit(X)
    b = KoopmanOperator(alpha=1e-3, n_components=3, estimator=kind, rank=4,
                        landmarks=np.arange(79)).fit(X)
    np.testing.assert_allclose(b.eigenvalues_, a.eigenvalues_, atol=1e-8)
    for k in (1, 4):
        np.testing.assert_allclose(b.predict(X, n_steps=k), a.predict(X, n_steps=k), atol=1e-8)
    fa, fb = a.eigenfunctions_(X), b.eigenfunctions_(X)
    np.testing.assert_allclose(np.abs(fa), np.abs(fb), atol=1e-6)


def test_full_rank_arpack_equals_dense_eig(monkeypatch):
    """The ARPACK path (here from n > 150; by default n > 1500) on (G + nεI)⁻¹[k(y_i, x_j)],
    never a full eig, equals the dense eigenpairs."""
    import asymkern.operators._numerics as numerics

    monkeypatch.setattr(numerics, "ARPACK_MIN_PAIRS", 150)
    X = _ou(420)
    est = KoopmanOperator(kernel_params={"gamma": 0.5}, alpha=1e-4, n_components=4).fit(X)
    X0, X1 = X[:-1], X[1:]
    n = X0.shape[0]
    G = est.kernel_(X0)
    A = np.linalg.solve(G + n * 1e-4 * np.eye(n), est.kernel_(X1, X0))
    lam, W = np.linalg.eig(A)
    order = np.argsort(-np.abs(lam))[:4]
    lam, W = lam[order].real, W[:, order].real
    np.testing.assert_allclose(est.eigenvalues_, lam, rtol=1e-9, atol=1e-10)
    W = W / np.sqrt(np.einsum("ij,ij->j", W, G @ W))  # RKHS-normalised
    ref = est.kernel_(X0[:50], X0) @ W
    got = est.eigenfunctions_(X0[:50])
    np.testing.assert_allclose(np.abs(got), np.abs(ref), atol=1e-8)
    assert est.operator_.eig(4, method="auxiliary", solver="dense").eigenvalues.size == 4


def test_rrr_arpack_equals_dense_generalised_eig():
    from asymkern.operators._koopman import rrr_dual

    X = _ou(400)
    est = KoopmanOperator(kernel_params={"gamma": 0.5})
    k = est.set_params().fit(X).kernel_
    X0, X1 = X[:-1], X[1:]
    G, H = k(X0), k(X1)
    n, shift = G.shape[0], G.shape[0] * 1e-4
    U1, V1, s1 = rrr_dual(G, H, 4, shift)  # ARPACK
    U2, V2, s2 = rrr_dual(G, H, 4, shift, dense_below=10**9)  # dense, symmetric form
    np.testing.assert_allclose(s1, s2, rtol=1e-9)
    # the operator (K̂f)(z) = k(z, X) U Vᵀ f(Y), on functions f = k(·, z'): the coefficients
    # themselves are not unique along the numerically null directions of G
    Z = np.linspace(-3, 3, 50)[:, None]
    A1, A2 = (k(Z, X0) @ U @ V.T @ k(X1, Z) for U, V in ((U1, V1), (U2, V2)))
    np.testing.assert_allclose(A1, A2, atol=1e-7 * np.abs(A2).max())
    assert n == 399


# ------------------------------------------------------------------ analytic values
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("landmarks", [None, 200])
def test_linear_system_multistep_forecast_matches_closed_form(kind, landmarks):
    X, A = _linear(800)
    est = KoopmanOperator(kernel="linear", alpha=1e-8, estimator=kind, rank=2, n_components=2,
                          n_landmarks=landmarks, random_state=0).fit(X)
    lam_true = np.linalg.eigvals(A)
    assert np.allclose(np.sort_complex(est.eigenvalues_), np.sort_complex(lam_true), atol=0.02)
    x0 = X[100:110]
    for k in (1, 3, 6):
        exact = x0 @ np.linalg.matrix_power(A, k).T
        assert np.max(np.abs(est.predict(x0, n_steps=k) - exact)) < 0.05
    # the k-step forecast iterates the learned one-step operator, not the state regression
    K1 = _ridge(X[:-1], X[1:], 1e-8)
    if kind == "full" and landmarks is None:
        np.testing.assert_allclose(est.predict(x0, n_steps=5),
                                   x0 @ np.linalg.matrix_power(K1, 5), atol=1e-8)


@pytest.mark.parametrize("kind", ["full", "pcr", "rrr"])
def test_ornstein_uhlenbeck_eigenvalues_and_hermite_eigenfunctions(kind):
    theta = 0.223
    X = _ou(1500, theta)
    est = KoopmanOperator(kernel_params={"gamma": 0.5}, alpha=1e-6, n_components=3,
                          estimator=kind, rank=5).fit(X)
    lam = np.real(est.eigenvalues_)
    truth = np.exp(-theta * np.arange(3))
    assert np.all(np.abs(lam - truth) < [0.01, 0.05, 0.12])
    grid = np.linspace(-1.5, 1.5, 40)[:, None]
    f = np.real(est.eigenfunctions_(grid))
    # ψ_1 ∝ H_1(x) = x, ψ_2 ∝ H_2(x) = x² − 1 (up to sign and normalisation)
    assert abs(np.corrcoef(f[:, 1], grid[:, 0])[0, 1]) > 0.98
    assert abs(np.corrcoef(f[:, 2], grid[:, 0] ** 2 - 1)[0, 1]) > 0.95


# ------------------------------------------------------------------ observables and modes
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("landmarks", [None, 50])
def test_linear_observable_forecast_is_state_forecast_composed(kind, landmarks):
    X, _ = _linear(300)
    Bo = np.array([[1.0, 2.0, 0.0], [-1.0, 0.5, 3.0]])
    est = KoopmanOperator(alpha=1e-4, estimator=kind, rank=6, n_landmarks=landmarks,
                          random_state=0).fit(X, observables=X @ Bo)
    est2 = KoopmanOperator(alpha=1e-4, estimator=kind, rank=6, n_landmarks=landmarks,
                           random_state=0).fit(X[:-1], X[1:], observables=lambda Z: Z @ Bo)
    x0 = X[:7]
    for k in (1, 2, 5):
        state = est.predict(x0, n_steps=k)
        np.testing.assert_allclose(est.predict(x0, n_steps=k, observable=True), state @ Bo,
                                   atol=1e-10)
        np.testing.assert_allclose(est2.predict(x0, n_steps=k, observable=True), state @ Bo,
                                   atol=1e-10)


@pytest.mark.parametrize("landmarks", [None, 60])
@pytest.mark.parametrize("kind", ["pcr", "rrr"])
def test_modes_reproduce_forecasts_and_left_eigenfunctions_are_biorthogonal(kind, landmarks):
    X, _ = _linear(300)
    est = KoopmanOperator(alpha=1e-4, estimator=kind, rank=5, n_components=5,
                          n_landmarks=landmarks, random_state=0)
    est.fit(X, observables=lambda Z: np.sin(Z[:, 0]))
    lam, psi = est.eigenvalues_, est.eigenfunctions_(X[:9])
    for obs in (False, True):
        m = est.modes(observable=obs)
        for k in (1, 4):
            ref = est.predict(X[:9], n_steps=k, observable=obs)
            got = (psi * lam**k) @ m
            got = got[:, 0] if obs else got
            np.testing.assert_allclose(np.real(got), ref, atol=1e-9)
            assert np.max(np.abs(np.imag(got))) < 1e-9
    xi, psi_f = est.left_eigenfunctions_, est.eigenfunctions_
    B = xi.coef.T @ xi.kernel(xi.centers, psi_f.centers) @ psi_f.coef  # bilinear ⟨ξ_i, ψ_j⟩
    # landmark functions: the RKHS inner products go through the (truncated) K_LL
    np.testing.assert_allclose(B, np.eye(5), atol=1e-8 if landmarks is None else 1e-5)
    assert est.predict(X[:3], observable=True).shape == (3,)


# ------------------------------------------------------------------ API, errors, dtypes
def test_errors_name_the_argument():
    X = _ou(50)
    with pytest.raises(ValueError, match="estimator"):
        KoopmanOperator(estimator="dmd").fit(X)
    with pytest.raises(ValueError, match="rank"):
        KoopmanOperator(estimator="rrr", rank=0).fit(X)
    est = KoopmanOperator(n_components=2).fit(X)
    with pytest.raises(ValueError, match="n_steps"):
        est.predict(X, n_steps=0)
    with pytest.raises(ValueError, match="observables"):
        est.predict(X, observable=True)
    with pytest.raises(ValueError, match="estimator='pcr'"):
        est.modes()
    with pytest.raises(ValueError, match="observables"):
        KoopmanOperator().fit(X, observables=np.ones(10))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippedParameterWarning)
        with pytest.raises(ClippedParameterWarning, match="rank"):
            KoopmanOperator(estimator="pcr", rank=500).fit(X)


@pytest.mark.parametrize("kind", KINDS)
def test_float32_pickle_inputs_unchanged(kind):
    X = _ou(120)
    X32 = X.astype(np.float32)
    before = X32.copy()
    est = KoopmanOperator(alpha=1e-4, estimator=kind, rank=3, n_components=3).fit(X32)
    assert np.array_equal(X32, before)
    out = est.predict(X32[:4], n_steps=3)
    assert out.dtype == np.float32
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_allclose(est2.predict(X[:4], n_steps=3), est.predict(X[:4], n_steps=3),
                               atol=1e-10)
    a = KoopmanOperator(estimator=kind, rank=3, n_landmarks=30, random_state=1).fit(X)
    b = KoopmanOperator(estimator=kind, rank=3, n_landmarks=30, random_state=1).fit(X)
    np.testing.assert_array_equal(a.predict(X, n_steps=2), b.predict(X, n_steps=2))


def test_grid_search_selects_estimator_rank_and_width():
    X = _ou(300)
    grid = GridSearchCV(KoopmanOperator(n_components=2),
                        {"estimator": ["pcr", "rrr"], "rank": [2, 4],
                         "kernel_params": [{"gamma": 0.1}, {"gamma": 1.0}]}, cv=3)
    grid.fit(X)
    assert grid.best_params_["estimator"] in ("pcr", "rrr")
    assert np.isfinite(grid.best_score_)


def test_svd_of_the_reduced_rank_operator():
    """Paper 002's SVD is available on the same (reduced-rank) estimator."""
    X = _ou(150)
    est = KoopmanOperator(alpha=1e-4, estimator="rrr", rank=3, n_components=3).fit(X)
    res = est.svd(2, method="auxiliary")
    assert res.singular_values.shape == (2,)
    # reference: singular values of the operator Ψ U Vᵀ Φᵀ from the Gram matrices
    G, H = est.kernel_(est.X_fit_), est.kernel_(est.Y_fit_)
    W = est.operator_.B @ np.eye(G.shape[0])
    Lg, Lh = np.linalg.cholesky(G + 1e-10 * np.eye(len(G))), np.linalg.cholesky(
        H + 1e-10 * np.eye(len(H)))
    s = np.linalg.svd(Lg.T @ W @ Lh, compute_uv=False)[:2]
    np.testing.assert_allclose(res.singular_values, s, rtol=1e-5)


def test_dask_landmark_reduced_rank_matches_in_memory():
    da = pytest.importorskip("dask.array")
    import dask

    X = _ou(200)
    for kind in ("pcr", "rrr"):
        a = KoopmanOperator(estimator=kind, rank=3, n_components=3, n_landmarks=40,
                            random_state=0).fit(X)
        with dask.config.set(scheduler="synchronous"):
            b = KoopmanOperator(estimator=kind, rank=3, n_components=3, n_landmarks=40,
                                random_state=0).fit(da.from_array(X, chunks=50))
            np.testing.assert_allclose(b.eigenvalues_, a.eigenvalues_, atol=1e-10)
            np.testing.assert_allclose(np.asarray(b.predict(X[:5], n_steps=3)),
                                       a.predict(X[:5], n_steps=3), atol=1e-10)
        with pytest.raises(NotImplementedError, match="observables"):
            KoopmanOperator(n_landmarks=10).fit(da.from_array(X, chunks=50),
                                                observables=X)


_TRANSFER_CHECKS = TRANSFER_CHECKS
_WHY = ("fit(X, y) takes y = the time-shifted snapshots (tests/test_sklearn_api.py lists the same "
        "expected failures for the default KoopmanOperator)")


@parametrize_with_checks([KoopmanOperator(estimator="pcr"), KoopmanOperator(estimator="rrr"),
                          KoopmanOperator(estimator="rrr", n_landmarks=10, random_state=0)],
                         expected_failed_checks=lambda e: dict.fromkeys(
                             [c for c in _TRANSFER_CHECKS
                              if e.n_landmarks is None or "sparse" not in c], _WHY))
def test_common_checks_reduced_rank(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippedParameterWarning)
        check(estimator)


def test_benchmark_quick_mode(tmp_path):
    """The benchmark's quick mode runs (kooplearn optional) and writes its table."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_operators_koopman.py"
    spec = importlib.util.spec_from_file_location("bench_operators_koopman", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "table.md"
    table = mod.main(["--quick", "--out", str(out)])
    text = out.read_text()
    assert text.startswith("# ") and text.endswith(table)  # a titled page holding the table
    assert "| 300 | RRR |" in table and "Noisy linear system" in table


def test_multistep_score_matches_r2_of_the_forecast():
    from sklearn.metrics import r2_score

    X = _ou(300)
    est = KoopmanOperator(estimator="rrr", rank=3, n_components=3).fit(X)
    ref = r2_score(X[3:], est.predict(X[:-3], n_steps=3), multioutput="variance_weighted")
    assert abs(est.score(X, n_steps=3) - ref) < 1e-12
    assert est.score(X, n_steps=3) < est.score(X)  # harder to forecast further ahead
    with pytest.raises(ValueError, match="n_steps"):
        est.score(X[:-1], X[1:], n_steps=2)


def test_arpack_failure_falls_back_to_the_dense_reference(monkeypatch):
    """ARPACK not converging (rare, clustered spectra) falls back to the dense solvers."""
    import importlib

    from scipy.sparse.linalg import ArpackNoConvergence

    osvd = importlib.import_module("asymkern.linalg.operator_svd")
    kmod = importlib.import_module("asymkern.operators._koopman")

    monkeypatch.setattr(importlib.import_module("asymkern.operators._numerics"),
                        "ARPACK_MIN_PAIRS", 150)  # 'full' at n = 399 through ARPACK
    X = _ou(400)
    kw = dict(rank=3, n_components=3, alpha=1e-3)
    ref = {k: KoopmanOperator(estimator=k, **kw).fit(X) for k in KINDS}

    def fail(*args, **kwargs):
        raise ArpackNoConvergence("no convergence", np.zeros(0), np.zeros((0, 0)))

    monkeypatch.setattr(kmod, "eigs", fail)
    monkeypatch.setattr(kmod, "eigsh", fail)
    monkeypatch.setattr(osvd, "eigs", fail)
    for k in KINDS:
        est = KoopmanOperator(estimator=k, **kw).fit(X)
        np.testing.assert_allclose(est.eigenvalues_, ref[k].eigenvalues_, atol=1e-9)
        np.testing.assert_allclose(est.predict(X[:5], n_steps=2),
                                   ref[k].predict(X[:5], n_steps=2), atol=1e-9)


# ------------------------------------------------------------------ issue 29: silent results
_BAD_TIMESTEPS = [(-1, ValueError), (-0.5, ValueError), (0, ValueError), (0.0, ValueError),
                  (np.nan, ValueError), (np.inf, ValueError), (-np.inf, ValueError),
                  ("1", TypeError), (None, TypeError), (True, TypeError), ([1.0], TypeError)]


@pytest.mark.parametrize("landmarks", [None, 20])
@pytest.mark.parametrize("value, err", _BAD_TIMESTEPS)
def test_timestep_must_be_finite_and_positive(value, err, landmarks):
    """timestep=-1 gave negative implied timescales, 0 zero ones, NaN/inf non-finite ones."""
    X = _ou(60)
    with pytest.raises(err, match="timestep"):
        KoopmanOperator(timestep=value, n_landmarks=landmarks, random_state=0).fit(X)


def test_timestep_scales_the_implied_timescales():
    X = _ou(80)
    a = KoopmanOperator(n_components=2, timestep=1.0).fit(X)
    b = KoopmanOperator(n_components=2, timestep=np.float32(0.25)).fit(X)
    assert np.all(a.timescales_ > 0)
    np.testing.assert_allclose(b.timescales_, 0.25 * a.timescales_, rtol=1e-12)


def test_dask_fit_refuses_a_bad_timestep():
    da = pytest.importorskip("dask.array")
    X = da.from_array(_ou(100), chunks=25)
    for value in (-1.0, 0.0, np.nan):
        with pytest.raises(ValueError, match="timestep"):
            KoopmanOperator(timestep=value, n_landmarks=10, random_state=0).fit(X)


def test_observables_with_no_column_are_refused():
    """observables of shape (n, 0) were accepted (forecasts of nothing, silently)."""
    X = _ou(60)
    est = KoopmanOperator(n_components=2)
    with pytest.raises(ValueError, match=r"observables has 0 columns \(shape \(60, 0\)\)"):
        est.fit(X, observables=np.zeros((60, 0)))
    with pytest.raises(ValueError, match=r"observables has 0 columns"):
        est.fit(X[:-1], X[1:], observables=np.zeros((59, 0)))
    with pytest.raises(ValueError, match=r"observables\(y\) has shape \(59, 0\)"):
        est.fit(X, observables=lambda Y: np.zeros((Y.shape[0], 0)))
    with pytest.raises(ValueError, match=r"observables\(y\) has shape \(59, 0\)"):
        KoopmanOperator(n_components=2, n_landmarks=20, random_state=0).fit(
            X, observables=lambda Y: np.zeros((Y.shape[0], 0)))
    with pytest.raises(ValueError, match="observables"):
        est.fit(X, observables=np.float64(1.0))  # a scalar: a named error, no IndexError
    # complex observables are refused, not cast to real with a ComplexWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"observables\(y\) returned complex values"):
            est.fit(X, observables=lambda Y: Y * (1 + 1j))
        with pytest.raises(ValueError, match="observables is complex-valued"):
            est.fit(X, observables=X * 1j)
    one = est.fit(X, observables=np.sin(X))  # one column stays fine
    assert one.predict(X[:3], observable=True).shape == (3, 1)


@pytest.mark.parametrize("y_given", [False, True])
def test_score_refuses_bad_sample_weight(y_given):
    """A negative weight gave R² > 1; non-finite or complex weights must not pass either."""
    X = _ou(120)
    est = KoopmanOperator(n_components=2).fit(X)
    args = (X[:-1], X[1:]) if y_given else (X,)
    n = 119
    neg = np.ones(n)
    neg[0] = -50.0
    bad = [(neg, ValueError, "sample_weight has negative values"),
           (np.r_[np.nan, np.ones(n - 1)], ValueError, "sample_weight contains NaN"),
           (np.r_[np.inf, np.ones(n - 1)], ValueError, "sample_weight contains NaN or inf"),
           (np.ones(n) + 1j, ValueError, "sample_weight is complex-valued"),
           (np.ones(n - 1), ValueError, r"sample_weight must be a 1-D array .*\(119,\)"),
           (np.zeros(n), ValueError, "sample_weight is all zero"),
           (np.array(["a"] * n), TypeError, "sample_weight must be numeric")]
    for w, err, msg in bad:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(err, match=msg):
                est.score(*args, sample_weight=w)
    from sklearn.metrics import r2_score

    w = np.random.RandomState(0).uniform(0.1, 2.0, n)
    ref = r2_score(X[1:], est.predict(X[:-1]), sample_weight=w,
                   multioutput="variance_weighted")
    assert abs(est.score(*args, sample_weight=w) - ref) < 1e-12
    assert abs(est.score(*args, sample_weight=list(w)) - ref) < 1e-12
    assert est.score(*args, sample_weight=w) <= 1.0


def test_implied_timescales_returns_the_fitted_scales():
    from asymkern.operators import KoopmanOperator, PerronFrobeniusOperator

    rng = np.random.default_rng(0)
    x = np.cumsum(rng.standard_normal((200, 1)) * 0.1, axis=0)
    for cls in (KoopmanOperator, PerronFrobeniusOperator):
        m = cls(n_components=3, timestep=0.5).fit(x)
        t = m.implied_timescales()
        lam = np.abs(m.eigenvalues_)
        want = np.where(lam < 1, -0.5 / np.log(np.minimum(lam, 1 - 1e-300)), np.inf)
        assert t is not None and np.allclose(t, want), cls.__name__


def test_full_arpack_budget_falls_back_to_dense(monkeypatch):
    """'full' takes its eigenpairs from ARPACK above ARPACK_MIN_PAIRS pairs with a restart
    budget of about one dense eigendecomposition (a Koopman spectrum clusters near 1, where
    scipy's default budget let one eigenpair take minutes); an exhausted budget falls back to
    the dense solver, with the same eigenpairs as the dense solver below the threshold."""
    import asymkern.operators._numerics as numerics

    assert numerics.arpack_maxiter(1000, 1, 20) == 106  # ≈ 2n/(ncv − k) restarts
    X = _ou(400)
    kw = dict(kernel_params={"gamma": 0.5}, alpha=1e-4, n_components=4)
    calls = []
    real = numerics._arpack_top
    monkeypatch.setattr(numerics, "_arpack_top", lambda A, k: calls.append(k) or real(A, k))
    arpack = KoopmanOperator(**kw).fit(X)
    assert calls == [4]  # n = 399 > 150
    monkeypatch.setattr(numerics, "ARPACK_MIN_PAIRS", 1000)
    dense = KoopmanOperator(**kw).fit(X)
    assert calls == [4]  # below the threshold: no ARPACK
    np.testing.assert_allclose(arpack.eigenvalues_, dense.eigenvalues_, rtol=1e-9, atol=1e-12)
    monkeypatch.setattr(numerics, "ARPACK_MIN_PAIRS", 150)
    monkeypatch.setattr(numerics, "arpack_maxiter", lambda n, k, ncv: 1)  # budget exhausted
    capped = KoopmanOperator(**kw).fit(X)
    assert calls == [4, 4]
    np.testing.assert_allclose(capped.eigenvalues_, dense.eigenvalues_, rtol=1e-9, atol=1e-12)
