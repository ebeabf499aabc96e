"""Defects fixed in round 17 (an audit by input type, estimator lifecycle and memory).

* Tensors are read on the host by one reader (``asymkern._dispatch.host_copy``): bfloat16 as
  float32, a tensor that requires grad without its graph, a sparse one refused naming the
  argument — in ``fit`` and ``score`` alike (``score`` used to fail where ``fit`` worked).
* The LS-SVM solver functions validate ``K`` and ``Y`` (NaN gave NaN coefficients, complex
  values were cut to their real part); complex regression targets are refused.
* Adjacency matrices are real and finite; ``nearest_rows``, ``build_basis`` and a second
  view without columns are validated by name.
* A fitted model keeps its own copy of a Kernel instance: a later ``set_params`` on the
  caller's kernel (also through another estimator holding it) changed its predictions.
* A deprecated parameter name set together with its new name is refused (the old one
  silently won, so a grid search over the new name fitted one model).
* ``AsKLSClassifier(nystrom=r)`` clips r to the training samples with a warning.
* The Laplacian kernel reads CSR input with int64 indices.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from asymkern.exceptions import ClippedParameterWarning
from asymkern.kernels import RBFKernel, SNEKernel, get_kernel

RNG = np.random.default_rng(17)
X = RNG.standard_normal((60, 3))
XT = RNG.standard_normal((12, 3))
Y_BIN = np.where(X[:, 0] > 0, 1, 0)
Y_REG = np.sin(X[:, 0]) + 0.1 * X[:, 1]


# ------------------------------------------------------------------ tensors on the host
def test_host_copy_reads_bfloat16_grad_and_names_sparse():
    torch = pytest.importorskip("torch")
    from asymkern._dispatch import host_copy

    t = torch.tensor([[1.5, -2.25]], dtype=torch.bfloat16)
    out = host_copy(t, "y")
    assert out.dtype == np.float32 and out.tolist() == [[1.5, -2.25]]
    g = torch.tensor([1.0, 2.0], requires_grad=True)
    assert host_copy(g, "y").tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match=r"^sample_weight is a sparse tensor .*to_dense\(\)"):
        host_copy(torch.eye(2).to_sparse(), "sample_weight")
    assert host_copy([1, 2], "y") == [1, 2]  # not a tensor: as is


def test_scores_read_bfloat16_targets_and_weights():
    torch = pytest.importorskip("torch")
    from asymkern.lssvm import LSSVMClassifier, LSSVMRegressor
    from asymkern.nystrom import NystromKernelRidge

    w = np.linspace(0.5, 2.0, X.shape[0]).astype(np.float32)
    w_bf = torch.tensor(w).bfloat16()
    w_read = w_bf.float().numpy().astype(np.float64)  # the weights the score sees
    y_bf = torch.tensor(Y_REG).bfloat16()
    y_read = y_bf.float().numpy().astype(np.float64)
    for est in (NystromKernelRidge(n_landmarks=20, random_state=0), LSSVMRegressor()):
        est.fit(X, Y_REG)
        want = est.score(X, y_read, sample_weight=w_read)
        assert est.score(X, y_bf, sample_weight=w_bf) == want
    clf = LSSVMClassifier().fit(X, Y_BIN)
    want = clf.score(X, Y_BIN, sample_weight=w_read)
    assert clf.score(X, torch.tensor(Y_BIN), sample_weight=w_bf) == want


@pytest.mark.parametrize("make", ["classifier", "regressor", "askls"])
def test_lssvm_fit_reads_tensor_targets_and_names_bad_ones(make):
    torch = pytest.importorskip("torch")
    from asymkern.lssvm import AsKLSClassifier, LSSVMClassifier, LSSVMRegressor

    est, y = {"classifier": (LSSVMClassifier(), Y_BIN), "regressor": (LSSVMRegressor(), Y_REG),
              "askls": (AsKLSClassifier(kernel="sne"), Y_BIN)}[make]
    want = est.fit(X, y).decision_function(XT) if make != "regressor" else \
        est.fit(X, y).predict(XT)
    yt = torch.tensor(y, dtype=torch.float64 if make == "regressor" else torch.int64)
    if make == "regressor":
        yt.requires_grad_(True)
    got = est.fit(X, yt)
    got = got.predict(XT) if make == "regressor" else got.decision_function(XT)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError, match="^y is a sparse tensor"):
        est.fit(X, torch.tensor(y).to_sparse())
    with pytest.raises(ValueError, match=r"^y must be 1-D or 2-D, got shape \(60, 1, 1\)"):
        est.fit(X, np.asarray(y).reshape(-1, 1, 1))


def test_regression_targets_complex_refused():
    from asymkern.lssvm import LSSVMRegressor
    from asymkern.nystrom import NystromKernelRidge

    for est in (NystromKernelRidge(n_landmarks=20, random_state=0), LSSVMRegressor()):
        with pytest.raises(ValueError, match="y is complex-valued"):
            est.fit(X, Y_REG + 1j)


def test_feature_map_transform_reads_tensors_that_require_grad():
    torch = pytest.importorskip("torch")
    from asymkern.nystrom import NystromFeatureMap

    fm = NystromFeatureMap(n_components=10, random_state=0).fit(X)
    want = fm.transform(X)
    got = fm.transform(torch.tensor(X, requires_grad=True))  # a numpy fit answers in numpy
    got = got if isinstance(got, np.ndarray) else got.detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------------ LS-SVM solver functions
def test_lssvm_solvers_validate_K_and_Y():
    from asymkern.lssvm import (
        askls_C_path,
        askls_kkt_matrix,
        askls_solve,
        lssvm_C_path,
        lssvm_solve,
    )

    K = get_kernel("rbf")(X, X)
    Ka = get_kernel("sne")(X, X)
    y = np.where(Y_BIN > 0, 1.0, -1.0)
    y_nan = y.copy()
    y_nan[3] = np.nan
    K_nan = Ka.copy()
    K_nan[2, 5] = np.inf
    cases = [
        (lambda: lssvm_solve(K, y_nan, 1.0), ValueError, "^Y contains NaN"),
        (lambda: askls_solve(Ka, y_nan, 1.0), ValueError, "^Y contains NaN"),
        (lambda: askls_solve(K_nan, y, 1.0), ValueError, "^K contains NaN"),
        (lambda: lssvm_C_path(K_nan, y, [1.0]), ValueError, "^K contains NaN"),
        (lambda: askls_C_path(K_nan, y, [1.0]), ValueError, "^K contains NaN"),
        (lambda: askls_kkt_matrix(K_nan, y, 1.0), ValueError, "^K contains NaN"),
        (lambda: lssvm_solve(K + 1j * K, y, 1.0), ValueError, "K is complex-valued"),
        (lambda: askls_solve(Ka, y + 1j, 1.0), ValueError, "Y is complex-valued"),
        (lambda: lssvm_solve(K[0], y, 1.0), ValueError, "^K must be a square 2-D"),
        (lambda: lssvm_solve(K[:, :10], y, 1.0), ValueError, "^K must be a square 2-D"),
        (lambda: lssvm_solve(K, 1.0, 1.0), ValueError, "^Y must be 1-D or 2-D"),
        (lambda: askls_kkt_matrix(Ka, y[:5], 1.0), ValueError, "^y must be 1-D with one"),
    ]
    for call, exc, match in cases:
        with pytest.raises(exc, match=match):
            call()
    # valid input: unchanged results (a float32 K is solved in float64, as before)
    a = lssvm_solve(K.astype(np.float32), y, 1.0)
    b = lssvm_solve(K.astype(np.float32).astype(np.float64), y, 1.0)
    np.testing.assert_array_equal(a.coef[0], b.coef[0])
    s = lssvm_solve(sp.csr_matrix(K), y, 1.0)
    np.testing.assert_allclose(s.coef[0], lssvm_solve(K, y, 1.0).coef[0], rtol=1e-8,
                               atol=1e-10)


# ------------------------------------------------------------------ graphs and landmarks
def test_adjacency_matrices_are_real_and_finite():
    from asymkern.graphs import graph_reconstruction, matrix_norm_errors
    from asymkern.kernels import DirectedGraphKernel

    A = (np.random.default_rng(0).random((30, 30)) < 0.15).astype(float)
    E = np.random.default_rng(1).standard_normal((30, 4))
    A_nan = A.copy()
    A_nan[0, 5] = np.nan
    with pytest.raises(ValueError, match="adjacency is complex-valued"):
        DirectedGraphKernel(A + 1j)
    with pytest.raises(ValueError, match="^adjacency contains NaN"):
        graph_reconstruction(E, A_nan)
    with pytest.raises(ValueError, match="^A_hat contains NaN"):
        matrix_norm_errors(A, A_nan)
    with pytest.raises(ValueError, match="A is complex-valued"):
        matrix_norm_errors(sp.csr_matrix(A + 1j * A), A)
    with pytest.raises(ValueError, match=r"^A must be a 2-D matrix, got shape \(30,\)"):
        matrix_norm_errors(A[0], A)
    A_copy = A.copy()
    assert matrix_norm_errors(A, A)["l1"] == 0.0
    np.testing.assert_array_equal(A, A_copy)


def test_nearest_rows_validates_queries_and_points_by_name():
    from asymkern.landmarks import nearest_rows

    Q, P = XT, X
    with pytest.raises(ValueError, match="queries is complex-valued"):
        nearest_rows(Q + 1j, P, 2)
    with pytest.raises(ValueError, match="points is complex-valued"):
        nearest_rows(Q, P + 1j, 2)
    with pytest.raises(TypeError, match="^points must be numeric"):
        nearest_rows(Q, np.full(P.shape, "a"), 2)
    want = nearest_rows(Q, P, 3)
    for Pv in (P.astype(object), P.tolist(), np.asfortranarray(P)):
        got = nearest_rows(Q, Pv, 3)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_build_basis_validates_X():
    pd = pytest.importorskip("pandas")
    from asymkern.nystrom import build_basis

    Xi = np.round(X * 3).astype(np.int64)
    want = build_basis(RBFKernel(gamma=1.0), Xi.astype(np.float64), 8, random_state=0)
    for Xv in (Xi, Xi.tolist(), pd.DataFrame(Xi)):
        got = build_basis(RBFKernel(gamma=1.0), Xv, 8, random_state=0)
        np.testing.assert_array_equal(got.centers, want.centers)
    with pytest.raises(ValueError, match="^X contains NaN"):
        build_basis(RBFKernel(gamma=1.0), np.full((5, 2), np.nan), 2, random_state=0)


@pytest.mark.parametrize("name", ["CrossCovarianceOperator", "KernelCCA"])
def test_second_view_without_columns_is_named(name):
    import asymkern.operators as ops

    with pytest.raises(ValueError, match=r"^y has 0 feature\(s\)"):
        getattr(ops, name)(n_components=2).fit(X, np.empty((X.shape[0], 0)))


# ------------------------------------------------------------------ the fit's kernel
def _models():
    from asymkern import KernelPCA, KernelSVD
    from asymkern.lssvm import AsKLSClassifier, LSSVMClassifier
    from asymkern.nystrom import NystromFeatureMap, NystromKernelRidge
    from asymkern.operators import KoopmanOperator

    return {
        "LSSVMClassifier": (lambda k: LSSVMClassifier(kernel=k), "decision_function", Y_BIN),
        "AsKLSClassifier": (lambda k: AsKLSClassifier(kernel=k, nystrom=10, random_state=0),
                            "decision_function", Y_BIN),
        "NystromKernelRidge": (lambda k: NystromKernelRidge(kernel=k, n_landmarks=20,
                                                            random_state=0), "predict", Y_REG),
        "NystromKernelRidge-exact": (lambda k: NystromKernelRidge(kernel=k, mode="exact"),
                                     "predict", Y_REG),
        "NystromFeatureMap": (lambda k: NystromFeatureMap(kernel=k, n_components=10,
                                                          random_state=0), "transform", None),
        "KernelSVD": (lambda k: KernelSVD(kernel=k, n_components=3), "transform", None),
        "KernelPCA": (lambda k: KernelPCA(kernel=k, n_components=3), "transform", None),
        "KoopmanOperator": (lambda k: KoopmanOperator(kernel=k, n_components=3), "predict",
                            "shift"),
    }


@pytest.mark.parametrize("name", list(_models()))
def test_fitted_models_keep_their_kernel(name):
    make, method, y = _models()[name]
    k = RBFKernel(gamma=0.5)
    est = make(k)
    args = (X[:-1], X[1:]) if isinstance(y, str) else ((X,) if y is None else (X, y))
    data = XT
    before = getattr(est.fit(*args), method)(data)
    make(k).set_params(kernel__gamma=5.0)  # configures a second model holding the same k
    assert k.gamma == 5.0
    np.testing.assert_array_equal(getattr(est, method)(data), before)
    k.gamma = 0.05  # and a direct change
    np.testing.assert_array_equal(getattr(est, method)(data), before)
    # a refit reads the kernel as it is then
    est.fit(*args)
    fresh = getattr(make(RBFKernel(gamma=0.05)).fit(*args), method)(data)
    np.testing.assert_array_equal(getattr(est, method)(data), fresh)


def test_get_kernel_returns_a_copy_with_the_same_parameters():
    k = SNEKernel(gamma=0.3)
    c = get_kernel(k)
    assert c is not k and c == k
    k.set_params(gamma=2.0)
    assert c.gamma == 0.3


# ------------------------------------------------------------------ renamed parameters
def test_deprecated_name_and_new_name_both_set_are_refused():
    from asymkern.lssvm import LSSVMClassifier
    from asymkern.operators import KernelCCA

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(ValueError, match="both C=0.01 and its deprecated name gamma=100.0"):
            LSSVMClassifier(C=0.01, gamma=100.0).fit(X, Y_BIN)
        with pytest.raises(ValueError, match="both alpha=1.0 and its deprecated name"):
            KernelCCA(alpha=1.0, regularization=1e-6).fit(X, X[:, :2] ** 2)
        # the old name alone still works (with its FutureWarning), as the new one
        a = LSSVMClassifier(gamma=3.0).fit(X, Y_BIN).decision_function(XT)
    b = LSSVMClassifier(C=3.0).fit(X, Y_BIN).decision_function(XT)
    np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ AsK-LS Nyström rank
def test_askls_nystrom_rank_clipped_to_the_samples():
    from asymkern.lssvm import AsKLSClassifier

    Xs, ys = X[:40], Y_BIN[:40]
    want = AsKLSClassifier(kernel="rbf", nystrom=40, random_state=0).fit(Xs, ys)
    with pytest.warns(ClippedParameterWarning, match="nystrom=90 is larger than the number "
                                                     "of training samples"):
        got = AsKLSClassifier(kernel="rbf", nystrom=90, random_state=0).fit(Xs, ys)
    np.testing.assert_array_equal(got.decision_function(XT), want.decision_function(XT))


# ------------------------------------------------------------------ Laplacian, sparse input
def test_laplacian_reads_csr_with_int64_indices():
    A = sp.random(40, 5, density=0.4, format="csr", random_state=0)
    A64 = A.copy()
    A64.indices = A64.indices.astype(np.int64)
    A64.indptr = A64.indptr.astype(np.int64)
    k = get_kernel("laplacian", gamma=0.7)
    want = k(A.toarray(), A.toarray())
    np.testing.assert_allclose(k(A64, A64), want, rtol=1e-13)
    assert A64.indices.dtype == np.int64  # the input is not modified


def test_solvers_name_a_sparse_tensor():
    torch = pytest.importorskip("torch")
    from asymkern.linalg import top_svd

    G = torch.tensor(get_kernel("rbf")(X, X)).to_sparse()
    with pytest.raises(TypeError, match=r"^G is a sparse tensor .*to_dense\(\)"):
        top_svd(G, 2)


def test_eta_reads_tensors_on_the_host():
    torch = pytest.importorskip("torch")
    from asymkern.linalg import eta, eta_strict

    U = np.linalg.qr(RNG.standard_normal((30, 3)))[0]
    V = np.linalg.qr(RNG.standard_normal((30, 3)))[0]
    Ua = U + 1e-3 * RNG.standard_normal(U.shape)
    args = (U, V, Ua, V)
    targs = tuple(torch.tensor(a) for a in args)
    sv = np.array([3.0, 2.0, 1.0])
    assert eta(*targs, singular_values=torch.tensor(sv)) == eta(*args, singular_values=sv)
    assert eta_strict(*targs) == eta_strict(*args)


def test_torch_precomputed_copy_checked_before_it_is_made():
    torch = pytest.importorskip("torch")
    from asymkern import config_context
    from asymkern.config import MemoryBudgetError
    from asymkern.nystrom import NystromKernelRidge

    K = torch.tensor(get_kernel("rbf")(X, X))  # 60×60 float64: 28 KiB
    with config_context(max_dense_memory=0.01), \
            pytest.raises(MemoryBudgetError, match="private copy of the 60×60"):
        NystromKernelRidge(kernel="precomputed", n_landmarks=10, random_state=0).fit(
            K, torch.tensor(Y_REG))


# ------------------------------------------------------------------ LLA's normal equations
def _lla_reference(est, X, y, alpha, w=None):
    """The ridge minimiser on the estimator's own features F = K(X, C) A, by QR of the
    stacked system [W½F; √α I] (no Gram matrix): the obviously-correct solution."""
    F = get_kernel("rbf", gamma=0.3)(X, est.basis_.centers) @ est.basis_.A
    s = F.shape[1]
    sw = np.ones(len(y)) if w is None else w
    lhs = np.vstack([np.sqrt(sw)[:, None] * F, np.sqrt(alpha) * np.eye(s)])
    wq = np.linalg.lstsq(lhs, np.r_[np.sqrt(sw) * y, np.zeros(s)], rcond=None)[0]
    return F @ wq


@pytest.mark.parametrize("mode", ["lla", "spa"])
def test_lla_sums_the_features_gram_not_the_landmark_gram(mode):
    # AᵀMA formed from M amplified M's rounding by cond(K_mm): 2e-2 off the minimiser here
    from asymkern.nystrom import NystromKernelRidge

    rng = np.random.default_rng(4)
    Xs = rng.standard_normal((300, 3))
    y = np.sin(Xs[:, 0]) + 0.1 * rng.standard_normal(300)
    est = NystromKernelRidge(mode=mode, n_landmarks=150, alpha=1e-6, gamma=0.3,
                             random_state=0).fit(Xs, y)
    ref = _lla_reference(est, Xs, y, 1e-6)
    assert np.linalg.norm(est.predict(Xs) - ref) <= 1e-7 * np.linalg.norm(ref)


def test_lla_features_gram_on_every_executor():
    torch = pytest.importorskip("torch")
    da = pytest.importorskip("dask.array")
    import dask

    from asymkern.nystrom import NystromKernelRidge

    rng = np.random.default_rng(5)
    Xs = rng.standard_normal((240, 3))
    y = np.cos(Xs[:, 1]) + 0.1 * rng.standard_normal(240)
    w = np.exp(rng.uniform(-4, 4, 240))
    kw = dict(n_landmarks=60, alpha=1e-5, gamma=0.3, random_state=0, fit_intercept=True)
    ref = NystromKernelRidge(**kw).fit(Xs, y, sample_weight=w)
    want = ref.predict(Xs)
    with dask.config.set(scheduler="synchronous"):
        dk = NystromKernelRidge(**kw).fit(da.from_array(Xs, chunks=70), da.from_array(y, 70),
                                          sample_weight=da.from_array(w, 70))
        got = np.asarray(dk.predict(Xs))
    assert np.linalg.norm(got - want) <= 1e-9 * np.linalg.norm(want)
    tt = NystromKernelRidge(**kw).fit(torch.tensor(Xs), torch.tensor(y),
                                      sample_weight=torch.tensor(w))
    got = tt.predict(torch.tensor(Xs)).numpy()
    assert np.linalg.norm(got - want) <= 1e-9 * np.linalg.norm(want)


def test_centred_noise_level_of_huge_entries():
    # the bound summed squares of means near 1e300: inf, and "only 0 of 3 informative"
    from asymkern import KernelSVD

    rng = np.random.default_rng(9)
    A, B = rng.standard_normal((40, 4)), rng.standard_normal((30, 4))
    small = KernelSVD(3, kernel="linear", center=True).fit(A, Z=B)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither an overflow nor a noise-level warning
        big = KernelSVD(3, kernel="linear", center=True).fit(A * 1e150, Z=B * 1e150)
    assert big.n_informative_ == small.n_informative_ == 3
    np.testing.assert_allclose(big.singular_values_ / 1e300, small.singular_values_,
                               rtol=1e-12)


def test_a_user_kernel_keeping_its_parameter_elsewhere_is_copied():
    from asymkern.kernels.base import Kernel
    from asymkern.lssvm import LSSVMClassifier

    class Scaled(Kernel):  # the parameter kept as _scale (get_params cannot read it)
        name = "scaled"
        is_symmetric = True
        is_psd = True

        def __init__(self, scale=1.0):
            self._scale = scale

        def _raw(self, A, B):
            return self._scale * np.exp(-0.5 * ((A[:, None, :] - B[None]) ** 2).sum(-1))

    est = LSSVMClassifier(kernel=Scaled()).fit(X, Y_BIN)
    assert np.all(np.isfinite(est.decision_function(XT)))


def test_square_fit_refused_before_any_copy_at_default_working_memory():
    import tracemalloc

    from asymkern import KernelSVD, config_context
    from asymkern.config import MemoryBudgetError

    A = np.random.default_rng(2).standard_normal((1000, 1000))  # 7.6 MiB
    with config_context(max_dense_memory=4):  # working_memory at its default, 512 MiB
        tracemalloc.start()
        try:
            with pytest.raises(MemoryBudgetError):
                KernelSVD(3, solver="dense").fit(A)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < A.nbytes / 4


def test_lssvm_y_meta_conj_and_device_tensors():
    torch = pytest.importorskip("torch")
    from asymkern.lssvm import LSSVMRegressor

    with pytest.raises(ValueError, match="^y is a torch tensor on the 'meta' device"):
        LSSVMRegressor().fit(X, torch.empty(X.shape[0], device="meta"))
    if hasattr(torch.Tensor, "_neg_view"):  # a lazy negative view numpy cannot read
        neg = torch.tensor(Y_REG)._neg_view()
        assert neg.is_neg()
        want = LSSVMRegressor().fit(X, -Y_REG).predict(XT)
        np.testing.assert_array_equal(LSSVMRegressor().fit(X, neg).predict(XT), want)


def test_lssvm_refuses_a_device_y_as_it_refuses_a_device_X(monkeypatch):
    torch = pytest.importorskip("torch")
    from asymkern.lssvm import LSSVMRegressor

    y = torch.tensor(Y_REG)
    monkeypatch.setattr(torch.Tensor, "device", property(lambda self: torch.device("cuda")))
    with pytest.raises(TypeError, match="^y is a tensor on cuda, .* pass y.cpu()"):
        LSSVMRegressor().fit(X, y)
