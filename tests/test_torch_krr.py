"""NystromKernelRidge on the torch backend: GSA by Woodbury, the Gaussian sketch and
``kernel='precomputed'`` against the numpy path (asymkern.nystrom), on test-device tensors.

Each option is fitted on a torch tensor and on numpy input with ``device=TEST_DEVICE`` and compared
with the numpy fit of the same ``random_state``: 1e-12 relative in float64 (the Laplacian
kernel keeps K_mm well conditioned), 1e-5 in float32.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import TEST_DEVICE, dtol, tensor, to_np  # noqa: E402
from _torch_helpers import rel_norm as rel  # noqa: E402

from asymkern._dispatch import is_torch_tensor  # noqa: E402
from asymkern._torch.kernels import TorchKernel  # noqa: E402
from asymkern.config import config_context  # noqa: E402
from asymkern.kernels import get_kernel  # noqa: E402
from asymkern.nystrom import NystromKernelRidge  # noqa: E402

MODES = ["lla", "ncr", "gsa", "spa"]



@pytest.fixture(scope="module")
def reg():
    rng = np.random.RandomState(4)
    X = rng.randn(240, 3)
    y = np.sin(X).sum(axis=1) + 0.1 * rng.randn(240)
    return X, y, rng.uniform(0.2, 2.0, 240), rng.randn(25, 3)


def _fits(kw, X, Y, sw, wrap=lambda A: A):
    """The numpy fit, the tensor fit and the numpy fit with device='cpu' of the same kw."""
    a = NystromKernelRidge(**kw).fit(wrap(X), Y, sample_weight=sw)
    b = NystromKernelRidge(**kw).fit(tensor(wrap(X)), tensor(Y),
                                     sample_weight=None if sw is None else tensor(sw))
    c = NystromKernelRidge(device=TEST_DEVICE, **kw).fit(wrap(X), Y, sample_weight=sw)
    return a, b, c


def _check_same(a, b, c, Xn, tol=1e-12, attrs=("coef_", "landmark_coef_", "dual_coef_")):
    """Fitted attributes and predictions of the torch fits b (tensor) and c (numpy + device)
    equal the numpy fit a."""
    for name in attrs:
        want = getattr(a, name)
        if want is None:
            assert getattr(b, name) is None and getattr(c, name) is None, name
            continue
        assert rel(getattr(b, name), want) < dtol(tol), name
        assert rel(getattr(c, name), want) < dtol(tol), name
    if np.any(a.intercept_):
        assert max(rel(b.intercept_, a.intercept_), rel(c.intercept_, a.intercept_)) < dtol(tol)
    pa = a.predict(Xn)
    pb = b.predict(tensor(Xn))
    pc = c.predict(Xn)
    assert is_torch_tensor(pb) and pb.dtype == torch.float64 and tuple(pb.shape) == pa.shape
    assert isinstance(pc, np.ndarray) and pc.shape == pa.shape
    assert rel(pb, pa) < tol and rel(pc, pa) < tol
    if a.mode in ("gsa", "lla"):
        assert rel(b.predict_lla(tensor(Xn)), a.predict_lla(Xn)) < tol
        assert rel(c.predict_lla(Xn), a.predict_lla(Xn)) < tol


# ------------------------------------------------------------------------ GSA by Woodbury
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("multi", [False, True])
def test_gsa_woodbury_equals_numpy(fit_intercept, weighted, multi, reg):
    X, y, w, Xn = reg
    Y = np.c_[y, y**2] if multi else y
    sw = w if weighted else None
    kw = dict(mode="gsa", gsa_solver="woodbury", n_landmarks=30, alpha=0.5, kernel="laplacian",
              gamma=1.0, fit_intercept=fit_intercept, random_state=1)
    a, b, c = _fits(kw, X, Y, sw)
    _check_same(a, b, c, Xn)
    # the same α̂ as eq. (20) (the minimum-norm representative), on torch too
    e = NystromKernelRidge(**{**kw, "gsa_solver": "eq20"}).fit(tensor(X),
                                                              tensor(Y),
                                                              sample_weight=sw)
    assert rel(b.dual_coef_, to_np(e.dual_coef_)) < dtol(1e-10)
    assert rel(b.coef_, e.coef_) < dtol(1e-10)


def test_gsa_woodbury_all_landmarks_is_exact_krr(reg):
    """With every point a landmark K̃ = K, so GSA's α̂ is the exact (K + alpha I)⁻¹y (dense
    reference)."""
    X, y, _, Xn = reg
    X, y = X[:80], y[:80]
    kw = dict(mode="gsa", gsa_solver="woodbury", landmarks=np.arange(80), n_landmarks=None,
              alpha=0.1, kernel="laplacian", gamma=1.0)
    b = NystromKernelRidge(**kw).fit(tensor(X), tensor(y))
    k = get_kernel("laplacian", gamma=1.0)
    alpha = np.linalg.solve(k(X) + 0.1 * np.eye(80), y)
    assert tuple(b.dual_coef_.shape) == (80, 1)  # (n, n_outputs), as in memory
    assert rel(b.dual_coef_[:, 0], alpha) < dtol(1e-10)
    assert rel(b.predict(tensor(Xn)), k(Xn, X) @ alpha) < dtol(1e-10)


# -------------------------------------------------------------------------- Gaussian sketch
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_gaussian_sketch_equals_numpy(mode, fit_intercept, weighted, reg):
    X, y, w, Xn = reg
    sw = w if weighted else None
    kw = dict(mode=mode, landmarks="gaussian", n_landmarks=25, alpha=0.5, kernel="laplacian",
              gamma=1.0, fit_intercept=fit_intercept, random_state=3)
    a, b, c = _fits(kw, X, y, sw)
    for est in (b, c):  # the same draw of S from the same stream, no landmark points
        np.testing.assert_array_equal(est.basis_.sketch, a.basis_.sketch)
        assert est.landmark_indices_ is None and est.landmarks_ is None
        assert est.n_landmarks_ == 25 and est.subspace_dim_ == a.subspace_dim_
        assert rel(est.basis_.Kmm, a.basis_.Kmm) < dtol(1e-13)
    _check_same(a, b, c, Xn)


def test_gaussian_sketch_with_woodbury_and_rbf(reg):
    X, y, w, Xn = reg
    kw = dict(mode="gsa", landmarks="gaussian", gsa_solver="woodbury", n_landmarks=20,
              alpha=0.1, gamma=0.5, fit_intercept=True, random_state=0)
    a, b, c = _fits(kw, X, np.c_[y, -y], w)
    _check_same(a, b, c, Xn, tol=1e-9)


def test_gaussian_sketch_streams_row_blocks(reg):
    """K·S is accumulated over row blocks of K (never n×n at once) and equals numpy with
    several blocks; predictions K(Z, X)·(Sβ) stream too."""
    X, y, _, Xn = reg
    n = len(X)
    shapes = []
    raw = TorchKernel.raw

    def spy(self, A, B, c=None, **kw):
        shapes.append((int(A.shape[0]), int(B.shape[0])))
        return raw(self, A, B, c, **kw)

    kw = dict(mode="lla", landmarks="gaussian", n_landmarks=20, alpha=0.5, kernel="laplacian",
              gamma=1.0, random_state=0)
    a = NystromKernelRidge(**kw).fit(X, y)
    with config_context(working_memory=0.5):  # 0.5 MiB: 68 rows of 240 per block
        mp = pytest.MonkeyPatch()
        mp.setattr(TorchKernel, "raw", spy)
        try:
            b = NystromKernelRidge(**kw).fit(tensor(X), tensor(y))
            p = b.predict(tensor(np.r_[Xn, Xn, Xn, Xn, Xn, Xn, Xn, Xn, Xn, Xn]))
        finally:
            mp.undo()
    assert shapes and max(r for r, _ in shapes) < n // 2
    assert sum(r for r, cols in shapes if cols == n) >= n + 250  # fit pass + predict pass
    assert rel(b.landmark_coef_, a.landmark_coef_) < dtol(1e-12)
    assert rel(p, np.tile(a.predict(Xn), 10)) < dtol(1e-12)


# ---------------------------------------------------------------------- kernel='precomputed'
@pytest.mark.parametrize("mode", [*MODES, "exact"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_precomputed_equals_numpy(mode, fit_intercept, weighted, reg):
    X, y, w, Xn = reg
    k = get_kernel("laplacian", gamma=1.0)
    K, Kn = k(X), k(Xn, X)
    sw = w if weighted else None
    kw = dict(mode=mode, kernel="precomputed", n_landmarks=30, alpha=0.5,
              fit_intercept=fit_intercept, random_state=1)
    a, b, c = _fits(kw, K, np.c_[y, y**2], sw)
    for est in (b, c):
        assert est.n_features_in_ == len(X)
        if mode == "exact":
            assert est.basis_ is None and est.landmark_indices_ is None
        else:
            np.testing.assert_array_equal(est.landmark_indices_, a.landmark_indices_)
            np.testing.assert_array_equal(to_np(est.landmarks_), a.landmarks_)  # rows of K
    # exact with an intercept: Σa = 0 only to rounding (see test_torch_backend's exact test)
    _check_same(a, b, c, Kn, tol=1e-9 if mode == "exact" and fit_intercept else 1e-12)
    if mode != "exact":  # the same machine as on the data, with the same landmarks
        d = NystromKernelRidge(**{**kw, "kernel": "laplacian", "gamma": 1.0}).fit(
            tensor(X), tensor(np.c_[y, y**2]), sample_weight=sw)
        np.testing.assert_array_equal(d.landmark_indices_, b.landmark_indices_)
        assert rel(b.predict(tensor(Kn)), to_np(d.predict(tensor(Xn)))) < dtol(1e-12)


@pytest.mark.parametrize("mode", ["lla", "gsa"])
def test_precomputed_index_landmarks_and_woodbury(mode, reg):
    X, y, w, Xn = reg
    k = get_kernel("rbf", gamma=0.5)
    K, Kn = k(X), k(Xn, X)
    kw = dict(mode=mode, kernel="precomputed", landmarks=np.arange(0, 240, 8), n_landmarks=None,
              gsa_solver="woodbury", alpha=0.2, fit_intercept=True)
    a, b, c = _fits(kw, K, y, w)
    np.testing.assert_array_equal(b.landmark_indices_, np.arange(0, 240, 8))
    _check_same(a, b, c, Kn, tol=1e-9)


def test_precomputed_exact_equals_dense_solve(reg):
    X, y, _, Xn = reg
    k = get_kernel("rbf")
    K, Kn = k(X), k(Xn, X)
    b = NystromKernelRidge(mode="exact", kernel="precomputed", alpha=1e-2).fit(
        tensor(K), tensor(y))
    ref = Kn @ np.linalg.solve(K + 1e-2 * np.eye(len(X)), y)
    assert rel(b.predict(tensor(Kn)), ref) < dtol(1e-11)


# ---------------------------------------------------------------------------------- float32
@pytest.mark.parametrize("option", ["woodbury", "gaussian", "precomputed"])
@pytest.mark.parametrize("mode", MODES)
def test_float32(option, mode, reg):
    X, y, w, Xn = reg
    kw = dict(mode=mode, n_landmarks=30, alpha=0.5, random_state=1)
    if option == "woodbury":
        kw["gsa_solver"] = "woodbury"
    elif option == "gaussian":
        kw["landmarks"] = "gaussian"
    if option == "precomputed":
        k = get_kernel("rbf", gamma=0.5)
        X, Xn = k(X), k(Xn, X)
        kw["kernel"] = "precomputed"
    else:
        kw["gamma"] = 0.5
    X32, Xn32 = X.astype(np.float32), Xn.astype(np.float32)
    a = NystromKernelRidge(**kw).fit(X32, y, sample_weight=w)
    b = NystromKernelRidge(**kw).fit(tensor(X32), tensor(y), sample_weight=w)
    c = NystromKernelRidge(device=TEST_DEVICE, **kw).fit(X32, y, sample_weight=w)
    pa, pb, pc = a.predict(Xn32), b.predict(tensor(Xn32)), c.predict(Xn32)
    assert pb.dtype == torch.float32 and pc.dtype == np.float32
    assert rel(pb, pa) < 1e-5 and rel(pc, pa) < 1e-5


# -------------------------------------------------------------- inputs untouched, own memory
@pytest.mark.parametrize("case", ["woodbury", "gaussian", "precomputed-gsa",
                                  "precomputed-exact", "precomputed-lla"])
@pytest.mark.parametrize("weighted", [False, True])
def test_inputs_unchanged_and_memory_not_shared(case, weighted, reg):
    X, y, w, Xn = reg
    kw = dict(mode="gsa", n_landmarks=20, alpha=0.5, random_state=0)
    if case == "woodbury":
        kw["gsa_solver"] = "woodbury"
    elif case == "gaussian":
        kw.update(landmarks="gaussian", mode="lla")
    else:
        k = get_kernel("rbf")
        X, Xn = k(X), k(Xn, X)
        kw.update(kernel="precomputed", mode=case.split("-")[1])
    Xt, yt, wt = tensor(X.copy()), tensor(y.copy()), tensor(w.copy())
    keep = (Xt.clone(), yt.clone(), wt.clone())
    b = NystromKernelRidge(**kw).fit(Xt, yt, sample_weight=wt if weighted else None)
    assert torch.equal(Xt, keep[0]) and torch.equal(yt, keep[1]) and torch.equal(wt, keep[2])
    assert b.X_fit_.data_ptr() != Xt.data_ptr()
    assert torch.equal(b.X_fit_, keep[0])  # the model's copy is not written to either
    before = b.predict(tensor(Xn)).clone()
    Xt.mul_(2.0)
    yt.mul_(2.0)
    assert torch.equal(b.predict(tensor(Xn)), before), case
    # numpy input with a device: the arrays are not written to, the model keeps its own copy
    Xc, keepn = X.copy(), X.copy()
    c = NystromKernelRidge(device=TEST_DEVICE, **kw).fit(Xc, y,
                                                         sample_weight=w if weighted else None)
    np.testing.assert_array_equal(Xc, keepn)
    assert not np.shares_memory(c.X_fit_, Xc)
    before = c.predict(Xn)
    Xc *= 2.0
    np.testing.assert_array_equal(c.predict(Xn), before)


# ---------------------------------------------------------------------------------- errors
def test_precomputed_errors_match_numpy(reg):
    X, y, _, Xn = reg
    K = get_kernel("rbf")(X)
    Kt = tensor(K)
    yt = tensor(y)
    for fit_X in (Kt[:, :200], K[:, :200]):  # not square, tensor and numpy + device
        with pytest.raises(ValueError, match="square"):
            NystromKernelRidge(kernel="precomputed", device=TEST_DEVICE).fit(fit_X, y)
    with pytest.raises(ValueError, match="square"):
        NystromKernelRidge(mode="exact", kernel="precomputed").fit(Kt[:200], yt)
    with pytest.raises(ValueError, match="gamma=None"):
        NystromKernelRidge(kernel="precomputed", gamma=0.5).fit(Kt, yt)
    for lm in ("gaussian", "kmeans", "leverage"):
        with pytest.raises(ValueError, match=f"not '{lm}'"):
            NystromKernelRidge(kernel="precomputed", landmarks=lm).fit(K, y)  # numpy
        with pytest.raises(ValueError, match=f"not '{lm}'"):
            NystromKernelRidge(kernel="precomputed", landmarks=lm).fit(Kt, yt)
    with pytest.raises(ValueError, match="out of range|index|indices|must lie in"):
        NystromKernelRidge(kernel="precomputed", landmarks=[0, 5, 999]).fit(Kt, yt)
    with pytest.raises(ValueError, match="y|samples|length|shape"):
        NystromKernelRidge(kernel="precomputed").fit(Kt, yt[:100])
    for mode in ("lla", "gsa", "exact"):
        b = NystromKernelRidge(mode=mode, kernel="precomputed", n_landmarks=20,
                               random_state=0).fit(Kt, yt)
        with pytest.raises(ValueError, match="expecting 240 features"):
            b.predict(torch.ones(3, 239, dtype=torch.float64, device=TEST_DEVICE))
        with pytest.raises(ValueError, match="2-D|2D"):
            b.predict(torch.ones(240, dtype=torch.float64, device=TEST_DEVICE))
        with pytest.raises(ValueError, match="NaN|infinity"):
            b.predict(torch.full((2, 240), float("nan"), dtype=torch.float64, device=TEST_DEVICE))
    c = NystromKernelRidge(kernel="precomputed", n_landmarks=20, random_state=0,
                           device=TEST_DEVICE).fit(K, y)
    with pytest.raises(ValueError, match="expecting 240 features"):
        c.predict(np.ones((3, 10)))


def test_gaussian_and_woodbury_errors(reg):
    X, y, _, _ = reg
    Xt, yt = tensor(X), tensor(y)
    with pytest.raises(ValueError, match="n_landmarks"):
        NystromKernelRidge(landmarks="gaussian", n_landmarks=0).fit(Xt, yt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = NystromKernelRidge(landmarks="gaussian", n_landmarks=500, random_state=0).fit(Xt, yt)
    assert b.n_landmarks_ == 240  # clipped to n_samples, as in memory
    with pytest.raises(ValueError, match="gsa_solver"):
        NystromKernelRidge(mode="gsa", gsa_solver="svd").fit(Xt, yt)
    with pytest.raises(ValueError, match="expecting 3 features"):
        NystromKernelRidge(landmarks="gaussian", n_landmarks=20, random_state=0).fit(
            Xt, yt).predict(torch.ones(2, 4, dtype=torch.float64, device=TEST_DEVICE))


def test_solver_sklearn_refused_with_reason(reg):
    X, y, _, _ = reg
    for X_in, dev in ((tensor(X), None), (X, TEST_DEVICE)):
        with pytest.raises(NotImplementedError, match="scikit-learn's Ridge on host"):
            NystromKernelRidge(solver="sklearn", device=dev).fit(X_in, y)


def test_complex_sample_weight_is_refused(reg):
    """Issue 29: complex weights (a tensor or numpy) are refused by the torch path, naming
    sample_weight, never cast to real with a ComplexWarning."""
    X, y, w, _ = reg
    kw = dict(n_landmarks=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="sample_weight is complex-valued"):
            NystromKernelRidge(**kw).fit(tensor(X), tensor(y),
                                         sample_weight=tensor(w + 0j))
        with pytest.raises(ValueError, match="sample_weight is complex-valued"):
            NystromKernelRidge(device=TEST_DEVICE, **kw).fit(X, y, sample_weight=w + 1e-3j)
