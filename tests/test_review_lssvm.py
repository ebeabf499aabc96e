"""Independent review of the AsK-LS family (He, He, Shi, Huang & Suykens, TPAMI 2023).

Everything is compared with an obviously-correct dense reference written here from the paper
alone: the kernels by hand in numpy, the (2n + 2) matrix of eq. (6)

    [[0, 0, yᵀ, 0], [0, 0, 0, yᵀ], [y, 0, I/γ, H], [0, y, Hᵀ, I/γ]] [b1, b2, α, β] = [0, 0, 1, 1]

with H_ij = y_i κ(x_i, x_j) y_j, solved by ``numpy.linalg.solve`` (or, below the paper's rcond
rule, by its ridge-regularised normal equations (AᵀA + I)⁻¹Aᵀb), the two functions of eq. (7)

    f_s(x) = Σ_i β_i y_i κ(x, x_i) + b1,    f_t(x) = Σ_i α_i y_i κ(x_i, x) + b2,

and the documented merge (sum; one-vs-rest over the sorted classes, sign / arg max). Nothing
of the package's solvers, kernels or label encoding enters the reference. Tolerances are
relative, 1e-8 in float64 or 100·cond(A)·eps where the system is worse conditioned.

Cases pinned elsewhere are not repeated (tests/test_lssvm*.py, test_askls_*.py,
test_dask_askls_operators.py); the defects this review found have their own tests:
the AsK-LS fast solvers' accuracy near the rcond threshold, the C paths with weights far from
one, the Nyström ``normalize`` option, one-sided KernelPairs, and a string C.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.base import clone

from asymkern.lssvm import (
    AsKLSClassifier,
    IllConditionedWarning,
    KernelPair,
    LSSVMClassifier,
    askls_C_path,
    askls_solve,
    lssvm_C_path,
    lssvm_solve,
)

EPS = np.finfo(np.float64).eps


# ------------------------------------------------------------------------ the reference
def _sq(A, B):
    """Squared distances by direct differences (no expansion)."""
    return ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)


def _kernel(name, p, A, B, R):
    """κ(a, b) by hand; R the reference set of the row-normalised kernels (the training X)."""
    if name == "rbf":
        return np.exp(-p["gamma"] * _sq(A, B))
    if name == "laplacian":
        return np.exp(-p["gamma"] * np.abs(A[:, None, :] - B[None, :, :]).sum(-1))
    if name == "sne":  # exp(−γd²) / Σ_R exp(−γd²), normalised in the log domain
        return np.exp(-p["gamma"] * _sq(A, B) - logsumexp(-p["gamma"] * _sq(A, R), axis=1)[:, None])
    if name == "t":
        return (1 / (1 + p["gamma"] * _sq(A, B))) / (1 / (1 + p["gamma"] * _sq(A, R))).sum(
            1)[:, None]
    if name == "softmax":
        return np.exp(p["gamma"] * A @ B.T - logsumexp(p["gamma"] * A @ R.T, axis=1)[:, None])
    if name == "kl_histogram":
        P = (A + 1e-6) / (A + 1e-6).sum(1, keepdims=True)
        Q = (B + 1e-6) / (B + 1e-6).sum(1, keepdims=True)
        kl = (P * np.log(P)).sum(1)[:, None] - P @ np.log(Q).T
        return np.exp(-p["a"] * kl)
    raise AssertionError(name)


def _eq6(K, y, C):
    """The matrix of eq. (6) for labels y ∈ {±1}, as printed in the paper."""
    n = K.shape[0]
    H = y[:, None] * K * y[None, :]
    A = np.zeros((2 * n + 2, 2 * n + 2))
    A[0, 2:n + 2] = y
    A[1, n + 2:] = y
    A[2:n + 2, 0] = y
    A[n + 2:, 1] = y
    A[2:n + 2, 2:n + 2] = np.eye(n) / C
    A[2:n + 2, n + 2:] = H
    A[n + 2:, 2:n + 2] = H.T
    A[n + 2:, n + 2:] = np.eye(n) / C
    return A


def _solve6(K, y, C, fallback=False):
    """(b1, b2, α, β, cond(A)): LU of eq. (6), or the paper's (AᵀA + I)⁻¹Aᵀb fallback."""
    n = K.shape[0]
    A = _eq6(K, y, C)
    rhs = np.concatenate([[0.0, 0.0], np.ones(2 * n)])
    x = (np.linalg.solve(A.T @ A + np.eye(2 * n + 2), A.T @ rhs) if fallback
         else np.linalg.solve(A, rhs))
    return x[0], x[1], x[2:n + 2], x[n + 2:], np.linalg.cond(A)


class Ref:
    """The one-vs-rest AsK-LS model of eq. (6)–(7) on the training matrix K."""

    def __init__(self, K, labels, C, fallback=False):
        self.classes = np.unique(labels)
        problems = self.classes[1:] if self.classes.size == 2 else self.classes
        self.cols, self.cond = [], 1.0
        for c in problems:
            y = np.where(labels == c, 1.0, -1.0)
            b1, b2, al, be, cond = _solve6(K, y, C, fallback)
            self.cols.append((b1, b2, al * y, be * y))
            self.cond = max(self.cond, cond)
        self.coef_source = np.column_stack([c[3] for c in self.cols])  # β ⊙ y
        self.coef_target = np.column_stack([c[2] for c in self.cols])  # α ⊙ y
        self.bias = np.array([[c[0] for c in self.cols], [c[1] for c in self.cols]])

    def parts(self, K_test_train, K_train_test):
        fs = K_test_train @ self.coef_source + self.bias[0]
        ft = K_train_test.T @ self.coef_target + self.bias[1]
        return fs, ft

    def decision(self, K_test_train, K_train_test):
        fs, ft = self.parts(K_test_train, K_train_test)
        return fs + ft

    def predict(self, F):
        if F.shape[1] == 1:
            return self.classes[(F[:, 0] > 0).astype(int)]
        return self.classes[F.argmax(1)]

    def tol(self, floor=1e-8):
        return max(floor, 100 * self.cond * EPS)


def _rel(got, ref, scale=None):
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    s = np.abs(ref).max() if scale is None else scale
    return float(np.abs(got - ref).max() / s)


def _as2d(F):
    F = np.asarray(F)
    return F[:, None] if F.ndim == 1 else F


def _check_model(est, ref, Ktt, Ktr, tol):
    """Coefficients, biases, f_s / f_t, the merged decision and the labels of ``est``."""
    fs, ft = ref.parts(Ktt, Ktr)
    # the decision values are sums of terms of size |K||coef| + |b|: their scale (also that
    # of the biases, which can be rounding-sized, e.g. in the ridge fallback)
    scale = (np.abs(Ktt) @ np.abs(ref.coef_source) + np.abs(Ktr.T) @ np.abs(ref.coef_target)
             + np.abs(ref.bias).sum(0)).max()
    assert _rel(est.coef_source_, ref.coef_source) <= tol
    assert _rel(est.coef_target_, ref.coef_target) <= tol
    assert _rel(est.intercept_, ref.bias, scale) <= tol
    return fs, ft, scale


# --------------------------------------------------------------------------------- data
def _features(kernel, n, m, seed):
    rng = np.random.RandomState(seed)
    if kernel == "kl_histogram":  # histograms
        return rng.rand(n, 5), rng.rand(m, 5)
    return rng.randn(n, 3), rng.randn(m, 3)


def _labelset(kind, X, seed):
    rng = np.random.RandomState(seed + 100)
    n = X.shape[0]
    if kind == "bool":
        y = X[:, 0] + 0.5 * rng.randn(n) > np.median(X[:, 0])
        y[:2] = [False, True]
        return y
    if kind == "strings":
        return np.array(["pear", "apple", "fig"])[rng.randint(0, 3, n)]
    # non-contiguous integers, the largest class of one sample
    y = np.where(X[:, 1] > np.median(X[:, 1]), 10, -4)
    y[5] = 1001
    return y


PARAMS = {"sne": {"gamma": 0.3}, "t": {"gamma": 0.5}, "kl_histogram": {"a": 0.7},
          "softmax": {"gamma": 0.5}, "rbf": {"gamma": 0.3}, "laplacian": {"gamma": 0.3}}


# ------------------------------------------------------------------------ eq. (6)–(7)
@pytest.mark.parametrize("kernel", ["sne", "t", "kl_histogram", "softmax", "rbf"])
@pytest.mark.parametrize("labels", ["bool", "strings", "one_sample_class"])
@pytest.mark.parametrize("solver", ["auto", "eig", "dense"])
def test_estimator_equals_dense_eq6_eq7(kernel, labels, solver):
    n, m, C = 36, 9, 7.0
    X, Xt = _features(kernel, n, m, seed=1)
    y = _labelset(labels, X, 1)
    p = PARAMS[kernel]
    K, Ktt, Ktr = (_kernel(kernel, p, A, B, X) for A, B in ((X, X), (Xt, X), (X, Xt)))
    ref = Ref(K, y, C)
    est = AsKLSClassifier(kernel=kernel, kernel_params=p, C=C, solver=solver).fit(X, y)
    np.testing.assert_array_equal(est.classes_, ref.classes)
    tol = ref.tol()
    fs, ft, scale = _check_model(est, ref, Ktt, Ktr, tol)
    gs, gt = (_as2d(f) for f in est.decision_function(Xt, return_parts=True))
    assert _rel(gs, fs, scale) <= tol and _rel(gt, ft, scale) <= tol
    F = _as2d(est.decision_function(Xt))
    assert _rel(F, fs + ft, scale) <= tol
    pred = est.predict(Xt)
    assert pred.dtype == np.asarray(y).dtype
    np.testing.assert_array_equal(pred, ref.predict(fs + ft))
    if kernel == "rbf":  # symmetric: f_s = f_t, α = β, b1 = b2 (Prop. 2)
        assert _rel(est.coef_source_, est.coef_target_) <= tol
        assert _rel(gs, gt, scale) <= tol
    else:
        assert _rel(gs, gt, scale) > 1e-6  # the two functions really differ


@pytest.mark.parametrize("merge", ["source", "target"])
def test_single_function_merges(merge):
    X, Xt = _features("t", 30, 8, seed=2)
    y = _labelset("strings", X, 2)
    K, Ktt, Ktr = (_kernel("t", PARAMS["t"], A, B, X) for A, B in ((X, X), (Xt, X), (X, Xt)))
    ref = Ref(K, y, 3.0)
    est = AsKLSClassifier(kernel="t", kernel_params=PARAMS["t"], C=3.0, merge=merge).fit(X, y)
    fs, ft, scale = _check_model(est, ref, Ktt, Ktr, ref.tol())
    want = fs if merge == "source" else ft
    assert _rel(est.decision_function(Xt), want, scale) <= ref.tol()
    np.testing.assert_array_equal(est.predict(Xt), ref.predict(want))


# ------------------------------------------------------------------------ precomputed
def test_precomputed_asymmetric_orientation_convention():
    """fit(K) with K_ij = κ(x_i, x_j); f_s reads K(test, train) rows, f_t K(train, test)
    columns. At the training points (KernelPair(K, K)) f_s = K b̃ + b1, f_t = Kᵀ ã + b2."""
    rng = np.random.RandomState(3)
    n = 30
    K = rng.rand(n, n) ** 3 + np.eye(n)  # strongly asymmetric
    y = np.array([2, 7, 9])[rng.randint(0, 3, n)]
    ref = Ref(K, y, 4.0)
    est = AsKLSClassifier(kernel="precomputed", C=4.0).fit(K, y)
    fs, ft, scale = _check_model(est, ref, K, K, ref.tol())
    gs, gt = est.decision_function(KernelPair(test_train=K, train_test=K), return_parts=True)
    assert _rel(gs, K @ ref.coef_source + ref.bias[0], scale) <= ref.tol()
    assert _rel(gt, K.T @ ref.coef_target + ref.bias[1], scale) <= ref.tol()
    # the other orientation is another model: the convention matters
    hs, ht = est.decision_function(KernelPair(K.T, K.T), return_parts=True)
    assert _rel(hs, gs, scale) > 1e-3 and _rel(ht, gt, scale) > 1e-3


@pytest.mark.parametrize("nystrom", [None, 6])
@pytest.mark.parametrize("merge", ["source", "target"])
def test_one_sided_kernel_pair(merge, nystrom):
    """merge='source' reads K(test, train) only and 'target' K(train, test) only: the other
    orientation may be None. Before the review the Nyström model raised IndexError on
    KernelPair(None, K(train, test)) and KernelPair(None, None) was an IndexError too."""
    rng = np.random.RandomState(4)
    n, m = 40, 7
    K = rng.rand(n, n) + np.eye(n)
    Kt, Kr = rng.rand(m, n), rng.rand(n, m)
    y = (rng.rand(n) > 0.5).astype(int)
    est = AsKLSClassifier(kernel="precomputed", C=2.0, merge=merge, nystrom=nystrom,
                          random_state=0).fit(K, y)
    full = est.decision_function(KernelPair(Kt, Kr))
    one = KernelPair(Kt, None) if merge == "source" else KernelPair(None, Kr)
    np.testing.assert_array_equal(est.decision_function(one), full)
    with pytest.raises(ValueError, match="test_train|train_test"):
        est.decision_function(KernelPair(None, None))
    wrong = KernelPair(None, Kr) if merge == "source" else KernelPair(Kt, None)
    with pytest.raises(ValueError, match="test_train" if merge == "source" else "train_test"):
        est.decision_function(wrong)


# ------------------------------------------------------------------------ sample_weight
@pytest.mark.parametrize("solver", ["auto", "eig", "dense"])
def test_integer_weight_equals_repeated_row_asymmetric(solver):
    """Documented: an integer weight equals repeating the sample in the dual system (a kernel
    that is not row-normalised: KL; and a precomputed asymmetric matrix)."""
    X, Xt = _features("kl_histogram", 30, 8, seed=5)
    y = _labelset("strings", X, 5)
    w = np.random.RandomState(6).randint(1, 4, 30)
    idx = np.repeat(np.arange(30), w)
    kw = dict(kernel="kl_histogram", kernel_params=PARAMS["kl_histogram"], C=4.0, solver=solver)
    a = AsKLSClassifier(**kw).fit(X, y, sample_weight=w)
    b = AsKLSClassifier(**kw).fit(X[idx], y[idx])
    Fa, Fb = a.decision_function(Xt), b.decision_function(Xt)
    K = _kernel("kl_histogram", PARAMS["kl_histogram"], X[idx], X[idx], X[idx])
    tol = Ref(K, y[idx], 4.0).tol()
    assert _rel(Fa, Fb) <= tol
    kw.pop("kernel_params")
    kw["kernel"] = "precomputed"
    Ktt = _kernel("kl_histogram", PARAMS["kl_histogram"], Xt, X, X)
    Ktr = _kernel("kl_histogram", PARAMS["kl_histogram"], X, Xt, X)
    K = _kernel("kl_histogram", PARAMS["kl_histogram"], X, X, X)
    pa = AsKLSClassifier(**kw).fit(K, y, sample_weight=w.astype(float))
    pb = AsKLSClassifier(**kw).fit(K[np.ix_(idx, idx)], y[idx])
    assert _rel(pa.decision_function(KernelPair(Ktt, Ktr)),
                pb.decision_function(KernelPair(Ktt[:, idx], Ktr[idx]))) <= tol
    assert _rel(pa.decision_function(KernelPair(Ktt, Ktr)), Fa) <= tol


@pytest.mark.parametrize("C, scale", [(2.5e-6, 1e6), (2.5e5, 1e-5)])
def test_C_paths_with_weights_far_from_one(C, scale):
    """The problem depends on C·w only. Before the review the path functions rescaled weights
    outside [2⁻¹⁶, 2¹⁶] without rescaling C: another problem (errors of order one)."""
    rng = np.random.RandomState(7)
    n = 24
    K = rng.rand(n, n) + np.eye(n)
    y = np.where(rng.rand(n) > 0.5, 1.0, -1.0)
    v = rng.rand(n) + 0.5
    # reference: eq. (6) with I/C → diag(1/(C w)), C·w = 2.5·v
    A = _eq6(K, y, 1.0)
    A[np.arange(2, 2 * n + 2), np.arange(2, 2 * n + 2)] = np.tile(1 / (2.5 * v), 2)
    x = np.linalg.solve(A, np.concatenate([[0.0, 0.0], np.ones(2 * n)]))
    tol = max(1e-8, 100 * np.linalg.cond(A) * EPS)
    for method in ("eig", "schur"):
        (sol,) = askls_C_path(K, y, [C], method=method, sample_weight=scale * v)
        assert sol.C == C and not sol.fallback
        assert _rel(sol.coef[0][:, 0], x[2:n + 2] * y) <= tol
        assert _rel(sol.coef[1][:, 0], x[n + 2:] * y) <= tol
        assert _rel(sol.bias[:, 0], x[:2]) <= tol
    Ks = K + K.T
    B = np.zeros((n + 1, n + 1))
    B[0, 1:] = B[1:, 0] = 1.0
    B[1:, 1:] = Ks + np.diag(1 / (2.5 * v))
    z = np.linalg.solve(B, np.concatenate([[0.0], y]))
    (sol,) = lssvm_C_path(Ks, y, [C], sample_weight=scale * v)
    one = lssvm_solve(Ks, y, C, sample_weight=scale * v)
    tol = max(1e-8, 100 * np.linalg.cond(B) * EPS)
    for s in (sol, one):
        assert _rel(s.coef[0][:, 0], z[1:]) <= tol and _rel(s.bias[0], z[:1]) <= tol


# ------------------------------------------------------------------------ conditioning
@pytest.mark.parametrize("seed", [1, 4])
@pytest.mark.parametrize("method", ["schur", "eig"])
def test_fast_solvers_accurate_near_the_rcond_threshold(method, seed):
    """Near the paper's rule rcond ≥ 1e-8 (cond(A) ≈ 2e7, KL kernel, C = 1e5), a backward-
    stable solve of eq. (6) is accurate to ~cond·eps ≈ 5e-9. The Schur / eigen solvers work
    with c²I − KᵀK (condition up to cond(K)²) and were off by up to 1e-2 relative before the
    review; iterative refinement against K restores cond·eps accuracy."""
    rng = np.random.RandomState(seed)
    n = 60
    X = np.abs(rng.randn(n, 4))
    y = np.where(rng.rand(n) > 0.5, 1.0, -1.0)
    K = _kernel("kl_histogram", {"a": 1.0}, X, X, X)
    C = 1e5
    b1, b2, al, be, cond = _solve6(K, y, C)
    sol = askls_solve(K, y, C, method=method)
    assert not sol.fallback  # above the threshold: the exact system is solved
    tol = max(1e-8, 100 * cond * EPS)
    assert _rel(sol.coef[0][:, 0], al * y) <= tol
    assert _rel(sol.coef[1][:, 0], be * y) <= tol
    assert _rel(sol.bias[:, 0], [b1, b2]) <= tol
    est = AsKLSClassifier(kernel="kl_histogram", kernel_params={"a": 1.0}, C=C,
                          solver="auto" if method == "schur" else "eig").fit(X, y > 0)
    assert _rel(est.coef_source_[:, 0], be * y) <= tol


@pytest.mark.parametrize("case", ["C=1e-8", "C=1e8", "gamma=1e-8", "gamma=1e4"])
def test_regularisation_and_width_extremes(case):
    """C = 1e-8 is below the rcond rule: the paper's ridge fallback, with a warning; the other
    extremes solve eq. (6) itself."""
    what, val = case.split("=")
    C = float(val) if what == "C" else 3.0
    p = {"gamma": float(val) if what == "gamma" else 0.3}
    X, Xt = _features("sne", 40, 10, seed=8)
    y = _labelset("bool", X, 8)
    K, Ktt, Ktr = (_kernel("sne", p, A, B, X) for A, B in ((X, X), (Xt, X), (X, Xt)))
    fallback = C < 1e-6
    ref = Ref(K, y, C, fallback=fallback)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est = AsKLSClassifier(kernel="sne", kernel_params=p, C=C).fit(X, y)
    assert est.fallback_ is fallback
    assert any(issubclass(w.category, IllConditionedWarning) for w in rec) is fallback
    if fallback:
        # the normal equations fix the coefficients (≈ C) accurately, but the biases only to
        # the rounding of AᵀA (entries 1/C² = 1e16 beside n): both are ≈ 1e-14, i.e. 1e-6 of
        # the decision values' scale, in the reference and in the estimator alike
        assert _rel(est.coef_source_, ref.coef_source) <= 1e-8
        assert _rel(est.coef_target_, ref.coef_target) <= 1e-8
        fs, ft = ref.parts(Ktt, Ktr)
        assert _rel(est.decision_function(Xt), (fs + ft)[:, 0]) <= 1e-4
        return
    tol = ref.tol()
    fs, ft, scale = _check_model(est, ref, Ktt, Ktr, tol)
    assert _rel(est.decision_function(Xt), (fs + ft)[:, 0], scale) <= tol


# ------------------------------------------------------------------------ input types
def test_float32_input_solved_in_float64():
    X, Xt = _features("sne", 40, 10, seed=9)
    X, Xt = X.astype(np.float32), Xt.astype(np.float32)
    y = _labelset("strings", X, 9)
    X64, Xt64 = X.astype(np.float64), Xt.astype(np.float64)
    p = PARAMS["sne"]
    K, Ktt, Ktr = (_kernel("sne", p, A, B, X64) for A, B in ((X64, X64), (Xt64, X64),
                                                             (X64, Xt64)))
    ref = Ref(K, y, 5.0)
    est = AsKLSClassifier(kernel="sne", kernel_params=p, C=5.0).fit(X, y)
    assert est.coef_source_.dtype == np.float64
    fs, ft, scale = _check_model(est, ref, Ktt, Ktr, 1e-4)
    F = est.decision_function(Xt)
    assert F.dtype == np.float32
    assert _rel(F, fs + ft, scale) <= 1e-4


@pytest.mark.parametrize("kernel", ["sne", "t", "rbf"])
def test_data_far_from_the_origin(kernel):
    """Translation-invariant kernels: X + 1e6 is the same model as X (reference on X)."""
    X, Xt = _features(kernel, 40, 10, seed=10)
    y = _labelset("strings", X, 10)
    p = PARAMS[kernel]
    K, Ktt, Ktr = (_kernel(kernel, p, A, B, X) for A, B in ((X, X), (Xt, X), (X, Xt)))
    ref = Ref(K, y, 5.0)
    est = AsKLSClassifier(kernel=kernel, kernel_params=p, C=5.0).fit(X + 1e6, y)
    # the data carry 1e6·eps ≈ 2e-10 of rounding: 1e-6 relative, times the conditioning
    tol = max(1e-6, 1e-8 * ref.cond)
    fs, ft, scale = _check_model(est, ref, Ktt, Ktr, tol)
    assert _rel(est.decision_function(Xt + 1e6), fs + ft, scale) <= tol


# ------------------------------------------------------------------------ Nyström
NY_OPTIONS = [
    {"n_components": 6, "n_row_landmarks": 20, "n_col_landmarks": 15},
    {"n_components": 6, "n_row_landmarks": 20, "n_col_landmarks": 15, "orthogonalize": False},
    {"n_components": 5, "row_sampling": np.arange(0, 60, 3), "col_sampling": np.arange(1, 60, 4)},
    {"n_components": 6, "n_row_landmarks": 18, "n_col_landmarks": 18, "sampling": "kmeans"},
]


@pytest.mark.parametrize("opt", range(len(NY_OPTIONS)))
def test_nystrom_equals_documented_formula(opt):
    """Documented: eq. (6) solved on K̃ = C W_r⁺ R (C = K[:, J], R = K[I, :], W = K[I, J],
    W_r⁺ the rank-r pseudo-inverse), f_s(x) = k(x, X_J) W_r⁺ (R b̃) + b1 and
    f_t(x) = k(X_I, x)ᵀ (W_r⁺)ᵀ (Cᵀ ã) + b2."""
    options = NY_OPTIONS[opt]
    X, Xt = _features("sne", 60, 10, seed=11)
    y = _labelset("strings", X, 11)
    p = {"gamma": 0.4}
    K, Ktt, Ktr = (_kernel("sne", p, A, B, X) for A, B in ((X, X), (Xt, X), (X, Xt)))
    est = AsKLSClassifier(kernel="sne", kernel_params=p, C=5.0, nystrom=options,
                          random_state=0).fit(X, y)
    I, J = (np.asarray(i) for i in est.nystrom_landmarks_)
    if "row_sampling" in options:
        np.testing.assert_array_equal(I, options["row_sampling"])
        np.testing.assert_array_equal(J, options["col_sampling"])
    r = options["n_components"]
    Uw, sw, Vwt = np.linalg.svd(K[np.ix_(I, J)])
    Wp = Vwt[:r].T @ np.diag(1 / sw[:r]) @ Uw[:, :r].T
    Kn = K[:, J] @ Wp @ K[I, :]
    ref = Ref(Kn, y, 5.0)
    tol = ref.tol(1e-7)  # the landmark core's SVD enters twice (fit and reference)
    assert _rel(est.coef_source_, ref.coef_source) <= tol
    assert _rel(est.coef_target_, ref.coef_target) <= tol
    assert _rel(est.intercept_, ref.bias) <= tol
    fs = Ktt[:, J] @ Wp @ (K[I, :] @ ref.coef_source) + ref.bias[0]
    ft = Ktr[I, :].T @ Wp.T @ (K[:, J].T @ ref.coef_target) + ref.bias[1]
    gs, gt = est.decision_function(Xt, return_parts=True)
    assert _rel(gs, fs) <= tol and _rel(gt, ft) <= tol
    np.testing.assert_array_equal(est.predict(Xt), ref.predict(fs + ft))


@pytest.mark.parametrize("executor", ["numpy", "dask"])
def test_nystrom_normalize_refused(executor):
    """``normalize=True`` rescales U, V, so U diag(s) Vᵀ is no longer C W_r⁺ R: before the
    review the in-memory fit (with orthogonalize=False) solved eq. (6) on that other matrix
    while predicting with the extension of C W_r⁺ R, and the Dask fit (which always uses the
    eq. 9 factors) disagreed with the in-memory one by O(1)."""
    X, _ = _features("sne", 60, 1, seed=12)
    y = (X[:, 0] > 0).astype(int)
    if executor == "dask":
        da = pytest.importorskip("dask.array")
        X = da.from_array(X, chunks=20)
    for extra in ({"normalize": True}, {"normalize": True, "orthogonalize": False}):
        est = AsKLSClassifier(kernel="sne", random_state=0,
                              nystrom={"n_components": 4, "n_row_landmarks": 20,
                                       "n_col_landmarks": 20, **extra})
        with pytest.raises(ValueError, match="normalize"):
            est.fit(X, y)


# ------------------------------------------------------------------------ executors
def test_same_random_state_same_model_on_every_executor(monkeypatch):
    """numpy, Dask (Nyström; the exact solvers form n×n and are numpy-only) and torch CPU
    tensors (AsK-LS has no torch executor: tensors are read on the host) give the same model
    for the same random_state."""
    X, Xt = _features("sne", 80, 12, seed=13)
    y = _labelset("strings", X, 13)
    kw = dict(kernel="sne", kernel_params={"gamma": 0.4}, C=5.0, random_state=3,
              nystrom={"n_components": 8, "n_row_landmarks": 30, "n_col_landmarks": 30})
    ref = AsKLSClassifier(**kw).fit(X, y)
    F = ref.decision_function(Xt)
    da = pytest.importorskip("dask.array")
    import dask

    with dask.config.set(scheduler="synchronous"):
        dk = AsKLSClassifier(**kw).fit(da.from_array(X, chunks=25), y)
        np.testing.assert_array_equal(dk.nystrom_landmarks_[0], ref.nystrom_landmarks_[0])
        assert _rel(dk.decision_function(Xt), F) <= 1e-10
        np.testing.assert_array_equal(dk.predict(Xt), ref.predict(Xt))
    torch = pytest.importorskip("torch")

    def refuse(self, *args, **kwargs):
        raise TypeError("this tensor has no host view")

    with monkeypatch.context() as mp:  # a tensor on a GPU, which numpy cannot read: refused
        # by name, never read on the host
        mp.setattr(torch.Tensor, "__array__", refuse)
        mp.setattr(torch.Tensor, "device", property(lambda self: torch.device("cuda")))
        with pytest.raises(TypeError, match="X is a tensor on cuda"):
            AsKLSClassifier(**kw).fit(torch.as_tensor(X), y)
    monkeypatch.undo()  # CPU tensors as outside the tests (conftest refuses them): host reads
    tt = AsKLSClassifier(**kw).fit(torch.as_tensor(X), y)
    np.testing.assert_array_equal(tt.decision_function(torch.as_tensor(Xt)), F)
    for exact in ({}, {"nystrom": None}):
        a = AsKLSClassifier(**{**kw, **exact}).fit(X, y)
        b = AsKLSClassifier(**{**kw, **exact}).fit(torch.as_tensor(X), y)
        np.testing.assert_array_equal(a.decision_function(Xt), b.decision_function(Xt))


# ------------------------------------------------------------------------ API hygiene
MODELS = [
    dict(kernel="t", C=3.0),
    dict(kernel="sne", solver="eig", C=3.0),
    dict(kernel="sne", nystrom=7, random_state=0),
    dict(kernel="sne", merge="stack", cv=3, random_state=0),
    dict(kernel="kl_histogram", probability=True, random_state=1),
]


@pytest.mark.parametrize("params", range(len(MODELS)))
def test_inputs_untouched_clone_and_pickle(params):
    kw = MODELS[params]
    X, Xt = _features("kl_histogram", 40, 8, seed=14)
    y = _labelset("strings", X, 14)
    w = np.random.RandomState(15).rand(40) + 0.5
    w[3] = 0.0
    copies = [a.copy() for a in (X, Xt, y, w)]
    X_mine = X.copy()
    est = AsKLSClassifier(**kw).fit(X_mine, y, sample_weight=w)
    F = est.decision_function(Xt)
    for a, b in zip((X_mine, Xt, y, w), copies):
        np.testing.assert_array_equal(a, b)
    X_mine[:] = 0.5  # the model holds a copy of the training data
    np.testing.assert_array_equal(est.decision_function(Xt), F)
    p = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(p.decision_function(Xt), F)
    np.testing.assert_array_equal(p.predict(Xt), est.predict(Xt))
    c = clone(est)
    assert c.get_params() == est.get_params() and not hasattr(c, "classes_")
    np.testing.assert_array_equal(c.fit(X, y, sample_weight=w).decision_function(Xt), F)


def test_precomputed_inputs_untouched():
    rng = np.random.RandomState(16)
    K, Kt, Kr = rng.rand(30, 30) + np.eye(30), rng.rand(5, 30), rng.rand(30, 5)
    y = np.where(rng.rand(30) > 0.5, "a", "b")
    w = rng.rand(30) + 0.5
    copies = [a.copy() for a in (K, Kt, Kr, w)]
    for kw in ({}, {"solver": "eig"}, {"solver": "dense"}, {"nystrom": 5, "random_state": 0}):
        est = AsKLSClassifier(kernel="precomputed", **kw).fit(K, y, sample_weight=w)
        est.decision_function(KernelPair(Kt, Kr))
        for a, b in zip((K, Kt, Kr, w), copies):
            np.testing.assert_array_equal(a, b)


def test_lssvm_classifier_asymmetric_precomputed_equals_eq4():
    """LSSVMClassifier (eq. 4) with an asymmetric precomputed matrix, one-vs-rest."""
    rng = np.random.RandomState(17)
    n, C = 30, 2.0
    K = rng.rand(n, n) + np.eye(n)
    y = np.array([3, 8, 5])[rng.randint(0, 3, n)]
    Kt = rng.rand(6, n)
    est = LSSVMClassifier(kernel="precomputed", C=C).fit(K, y)
    F = np.zeros((6, 3))
    for j, c in enumerate(np.unique(y)):
        t = np.where(y == c, 1.0, -1.0)
        A = np.zeros((n + 1, n + 1))
        A[0, 1:] = A[1:, 0] = t
        A[1:, 1:] = t[:, None] * K * t[None, :] + np.eye(n) / C
        x = np.linalg.solve(A, np.concatenate([[0.0], np.ones(n)]))
        assert _rel(est.dual_coef_[:, j], x[1:] * t) <= 1e-8
        F[:, j] = Kt @ (x[1:] * t) + x[0]
    assert _rel(est.decision_function(Kt), F) <= 1e-8
    np.testing.assert_array_equal(est.predict(Kt), np.unique(y)[F.argmax(1)])


BAD = [
    (dict(C="1"), None, r"\bC\b"),  # a string parsed by float() was accepted
    (dict(C=np.array([1.0])), None, r"\bC\b"),
    (dict(kernel="sne", kernel_params={"gamma": -1.0}), None, "gamma"),
    (dict(kernel="t", kernel_params={"gamma": 0.0}), None, "gamma"),
    (dict(), "nan_y", "y"),
    (dict(), "nan_X", "X"),
    (dict(kernel="precomputed"), "nonsquare", "square"),
    (dict(kernel="precomputed"), "nan_K", "NaN"),
    (dict(), "short_weights", "sample_weight"),
]


@pytest.mark.parametrize("params, data, match", BAD)
def test_bad_arguments_raise_value_error_naming_them(params, data, match):
    rng = np.random.RandomState(18)
    X = rng.randn(20, 3)
    y = (X[:, 0] > 0).astype(float)
    w = None
    if data == "nan_y":
        y[4] = np.nan
    elif data == "nan_X":
        X[2, 1] = np.nan
    elif data == "short_weights":
        w = np.ones(19)
    elif data in ("nonsquare", "nan_K"):
        X = rng.rand(20, 20)
        if data == "nonsquare":
            X = X[:, :-1]
        else:
            X[1, 2] = np.nan
    with pytest.raises(ValueError, match=match):
        AsKLSClassifier(**params).fit(X, y, sample_weight=w)
