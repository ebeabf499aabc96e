"""Errors that say what is wrong (audit issue 29, item 5): each names the argument."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import aslinearoperator

from asymkern.linalg import arpack_svd, top_svd
from asymkern.lssvm import AsKLSClassifier, LSSVMClassifier
from asymkern.nystrom import NystromSVC


def _two_blobs(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.r_[np.zeros(n // 2, int), np.ones(n - n // 2, int)]
    X[y == 1] += 2.0
    return X, y


# --- predict_proba without probability=True ---------------------------------------------------

@pytest.mark.parametrize("make, needs", [
    (lambda: NystromSVC(n_landmarks=10), "probability=True"),
    (lambda: LSSVMClassifier(), "probability=True"),
    (lambda: AsKLSClassifier(), "probability=True or merge='stack'"),
])
@pytest.mark.parametrize("method", ["predict_proba", "predict_log_proba"])
def test_predict_proba_names_probability(make, needs, method):
    X, y = _two_blobs()
    est = make().fit(X, y)
    assert not hasattr(est, method)  # the scikit-learn convention stays
    with pytest.raises(AttributeError, match=f"has no attribute '{method}'.*needs "
                       + needs.replace("(", r"\(")):
        getattr(est, method)(X)
    with pytest.raises(AttributeError, match="probability=True"):  # unbound access too
        getattr(type(est), method)(est, X)


def test_predict_proba_still_there_with_probability():
    X, y = _two_blobs()
    est = NystromSVC(n_landmarks=10, probability=True, random_state=0).fit(X, y)
    assert hasattr(est, "predict_proba")
    P = est.predict_proba(X)
    assert P.shape == (len(X), 2) and np.allclose(P.sum(axis=1), 1.0)


# --- top_svd / arpack_svd of a zero matrix -----------------------------------------------------

@pytest.mark.parametrize("G", [
    np.zeros((30, 20)),
    np.zeros((20, 30), dtype=np.float32),
    sp.csr_matrix((30, 20)),
    aslinearoperator(np.zeros((25, 30))),
], ids=["dense", "float32-wide", "sparse", "operator"])
def test_arpack_svd_of_zero_matrix(G):
    res = top_svd(G, 3, solver="arpack", random_state=0)
    n, m = G.shape
    assert res.U.shape == (n, 3) and res.V.shape == (m, 3)
    np.testing.assert_array_equal(res.s, 0.0)
    # orthonormal to the working precision (float32 vectors: ~1e-7, not 1e-12)
    tol = 100 * np.finfo(res.U.dtype).eps
    np.testing.assert_allclose(res.U.T @ res.U, np.eye(3), rtol=0, atol=tol)
    np.testing.assert_allclose(res.V.T @ res.V, np.eye(3), rtol=0, atol=tol)
    assert res.s.dtype == res.U.dtype == (np.float32 if G.dtype == np.float32 else np.float64)
    assert arpack_svd(G, 2, random_state=1).s.tolist() == [0.0, 0.0]


# --- NystromSVC: ν infeasible for the class balance (whole fit or calibration folds) ----------

def test_nusvc_infeasible_nu_names_nu_and_counts():
    X, _ = _two_blobs(42)
    y = np.r_[np.zeros(40, int), np.ones(2, int)]
    with pytest.raises(ValueError, match=r"nu=0\.5 is infeasible.*2 and 40 samples.*svm='svc'"):
        NystromSVC(n_landmarks=5).fit(X, y)
    # below the bound it fits; svm='svc' has no such limit
    NystromSVC(n_landmarks=5, nu=0.05).fit(X, y)
    NystromSVC(n_landmarks=5, svm="svc").fit(X, y)


def test_nusvc_infeasible_nu_in_probability_folds_names_probability():
    X, _ = _two_blobs(7)
    y = np.r_[np.zeros(5, int), np.ones(2, int)]  # 2·2/7 ≈ 0.57 > 0.5, but a fold has 1 and 3
    NystromSVC(n_landmarks=3).fit(X, y)
    with pytest.raises(ValueError, match=r"nu=0\.5 is infeasible.*probability=True.*1 and 3"):
        NystromSVC(n_landmarks=3, probability=True, random_state=0).fit(X, y)


def test_nusvc_without_margin_names_svm():
    # boolean X with every input carrying both labels: ν-SVC's margin scale is 0
    X = np.r_[np.zeros((20, 1)), np.ones((20, 1))] > 0
    y = np.tile(np.r_[np.zeros(10, int), np.ones(10, int)], 2)
    for mode in ("gsa", "spa", "exact"):
        with pytest.raises(ValueError, match="svm='nusvc'.*no margin.*svm='svc'"):
            NystromSVC(n_landmarks=2, mode=mode).fit(X, y)


def test_bool_X_is_read_as_zero_one():
    rng = np.random.default_rng(3)
    X = rng.random((40, 6)) > 0.5
    y = X[:, 0].astype(int)
    a = NystromSVC(n_landmarks=8, random_state=0).fit(X, y)
    b = NystromSVC(n_landmarks=8, random_state=0).fit(X.astype(float), y)
    assert a.X_fit_.dtype == np.float64
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X.astype(float)),
                               rtol=1e-10, atol=1e-12)


# --- LS-SVM / AsK-LS: only C·sample_weight matters, whatever the scale of the weights --------

@pytest.mark.parametrize("make", [
    lambda C: AsKLSClassifier(C=C, solver="schur"),
    lambda C: AsKLSClassifier(C=C, solver="eig"),
    lambda C: AsKLSClassifier(C=C, solver="dense"),
    lambda C: LSSVMClassifier(C=C),
], ids=["askls-schur", "askls-eig", "askls-dense", "lssvm"])
@pytest.mark.parametrize("scale", [1e300, 1e50, 1e-300])
def test_weight_scale_is_absorbed_into_C(make, scale):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3))
    y = (X[:, 0] > 0).astype(int)
    w = rng.uniform(0.5, 2.0, 30)
    ref = make(10.0).fit(X, y, sample_weight=w).decision_function(X)
    out = make(10.0 / scale).fit(X, y, sample_weight=w * scale).decision_function(X)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-9)


@pytest.mark.filterwarnings("ignore::asymkern.lssvm.IllConditionedWarning")
def test_weight_overflow_names_sample_weight():
    X, y = _two_blobs(30)
    w = np.full(30, 3e307)
    with pytest.raises(ValueError, match="sample_weight.*stack_C"):
        AsKLSClassifier(merge="stack").fit(X, y, sample_weight=w)
    with pytest.raises(ValueError, match="sample_weight.*C=1e\\+300"):
        LSSVMClassifier(C=1e300).fit(X, y, sample_weight=w)


# --- torch tensors on the meta device ----------------------------------------------------------

def test_meta_tensors_are_refused_by_name():
    torch = pytest.importorskip("torch")
    from asymkern import KernelMatrix, KernelPCA, KernelSVD
    from asymkern.nystrom import NystromKernelRidge

    X, y = _two_blobs(20)
    Xm = torch.empty((20, 3), device="meta", dtype=torch.float64)
    meta = "'meta' device"
    for fit in (lambda: NystromSVC(n_landmarks=4).fit(Xm, y),
                lambda: NystromKernelRidge(n_landmarks=4).fit(Xm, y.astype(float)),
                lambda: KernelSVD(n_components=2).fit(Xm),
                lambda: KernelPCA(n_components=2).fit(Xm),
                lambda: KernelMatrix("rbf", Xm, Xm).to_array(),
                lambda: LSSVMClassifier().fit(Xm, y)):
        with pytest.raises(ValueError, match=meta):
            fit()
    with pytest.raises(ValueError, match="G is a torch tensor on the 'meta' device"):
        top_svd(torch.zeros((5, 4), device="meta"), 2)
    for dev in ("meta", torch.device("meta")):
        with pytest.raises(ValueError, match="device=.*'meta' device"):
            KernelSVD(n_components=2, device=dev).fit(X)
    est = NystromSVC(n_landmarks=4).fit(torch.as_tensor(X), y)
    with pytest.raises(ValueError, match="X is a torch tensor on the 'meta' device"):
        est.predict(Xm)


# --- ConditionalMeanEmbedding on sparse X (and y) ----------------------------------------------

@pytest.mark.parametrize("params", [{}, {"kernel_x": "linear"},
                                    {"n_landmarks": 10, "random_state": 0}],
                         ids=["exact-rbf", "exact-linear", "landmarks"])
@pytest.mark.parametrize("sparse_y", [False, True])
def test_cme_accepts_sparse_X(params, sparse_y):
    from asymkern.operators import ConditionalMeanEmbedding

    rng = np.random.default_rng(0)
    X = rng.random((30, 4))
    X[X < 0.5] = 0.0
    Y = rng.random((30, 2))
    Xs = sp.csr_matrix(X)
    X_before = Xs.copy()
    a = ConditionalMeanEmbedding(**params).fit(Xs, sp.csr_matrix(Y) if sparse_y else Y)
    b = ConditionalMeanEmbedding(**params).fit(X, Y)
    assert (Xs != X_before).nnz == 0  # input not modified
    Q = rng.random((5, 4))
    Q[Q < 0.5] = 0.0
    for q in (sp.csr_matrix(Q), Q):
        np.testing.assert_allclose(a.predict(q), b.predict(Q), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(a.weights(q), b.weights(Q), rtol=1e-10, atol=1e-12)
    assert a.__sklearn_tags__().input_tags.sparse


# --- KernelSVD's low-rank warning names the right direction of a bad bandwidth -----------------

@pytest.mark.parametrize("bandwidth, says, not_says", [
    (1e-3, "far smaller than the distances", "far larger"),
    (1e6, "far larger than the distances", "far smaller"),
])
def test_ksvd_bandwidth_warning_direction(bandwidth, says, not_says):
    from asymkern import KernelSVD

    rng = np.random.default_rng(0)
    X = 100 * rng.standard_normal((30, 3))
    Z = 100 * rng.standard_normal((25, 3))
    est = KernelSVD(n_components=5, kernel="rbf", kernel_params={"bandwidth": bandwidth})
    with pytest.warns(UserWarning, match=says) as rec:
        est.fit(X, Z=Z)
    assert not any(not_says in str(w.message) for w in rec)
