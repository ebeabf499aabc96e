"""NystromSVC on the torch backend (asymkern._torch.machines) against numpy, on device tensors.

The kernel work (features, Gram matrices, GSA's pseudo-inverse, decision values) runs on the
device and the SVM on the host, so with the same ``random_state`` both paths fit the same
solver on the same inputs to rounding. The solvers stop at ``tol``: libsvm and liblinear turn a
rounding-level change of their input into a change of order tol·(something) of the solution
(scaling the numpy path's features by 1 + 1e-15 moves its ν-SVC weights by ~4e-9 at tol=1e-8,
~6e-13 at tol=1e-12), so the comparisons use ``tol=1e-12``, where both paths reach the same
optimum to ~1e-12.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import TEST_DEVICE, dtol, tensor, to_np  # noqa: E402
from _torch_helpers import rel_norm as rel  # noqa: E402
from sklearn.base import clone  # noqa: E402

from asymkern._dispatch import is_torch_tensor  # noqa: E402
from asymkern.nystrom import NystromSVC  # noqa: E402

MODES = ("lla", "ncr", "gsa", "spa", "exact")



@pytest.fixture(scope="module")
def clf():
    rng = np.random.RandomState(7)
    X = rng.randn(160, 3)
    t = X[:, 0] + 0.4 * X[:, 1] ** 2
    y2 = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    y3 = np.digitize(t, [-0.3, 0.8]).astype(np.int64)
    return X, y2, y3, rng.randn(40, 3)


def _kw(mode, svm="nusvc", **extra):
    # liblinear stops after max_iter=1000 by default, short of tol=1e-12
    return dict(mode=mode, svm=svm, nu=0.3, n_landmarks=25, gamma=0.5, tol=1e-12,
                max_iter=100_000 if svm == "linearsvc" else -1, random_state=0, **extra)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("svm", ["nusvc", "svc", "linearsvc"])
@pytest.mark.parametrize("mode", MODES)
def test_svc_torch_equals_numpy_float64(mode, svm, n_classes, clf):
    X, y2, y3, Xn = clf
    y = y2 if n_classes == 2 else y3
    if svm == "linearsvc" and mode in ("spa", "exact"):
        for Xin in (tensor(X), X):
            with pytest.raises(ValueError, match="linearsvc"):
                NystromSVC(**_kw(mode, svm), device=TEST_DEVICE).fit(Xin, y)
        return
    # liblinear's multiclass solution moves by ~1e-8 under a 1e-15 relative change of its
    # input at any tol (measured on the numpy path alone): compare LinearSVC fits to 1e-7
    tol = 1e-7 if svm == "linearsvc" else dtol(1e-10)
    a = NystromSVC(**_kw(mode, svm)).fit(X, y)
    b = NystromSVC(**_kw(mode, svm)).fit(tensor(X), tensor(y))
    assert b.torch_fit_ and not a.torch_fit_
    np.testing.assert_array_equal(b.classes_, a.classes_)
    if mode != "exact":
        np.testing.assert_array_equal(b.landmark_indices_, a.landmark_indices_)
        assert b.subspace_dim_ == a.subspace_dim_
        assert rel(b.landmark_coef_, a.landmark_coef_) < tol
    if mode in ("gsa", "spa", "exact"):
        assert is_torch_tensor(b.dual_coef_) and rel(b.dual_coef_, a.dual_coef_) < tol
    Xt = tensor(Xn)
    da, db = a.decision_function(Xn), b.decision_function(Xt)
    assert is_torch_tensor(db) and db.dtype == torch.float64 and tuple(db.shape) == da.shape
    assert rel(db, da) < tol
    if mode in ("lla", "ncr"):  # the device's values are the fitted solver's, to rounding
        assert rel(db, b.estimator_.decision_function(b.basis_.features(Xn))) < dtol(1e-12)
    pa, pb = a.predict(Xn), b.predict(Xt)
    assert is_torch_tensor(pb) and pb.dtype == torch.int64
    np.testing.assert_array_equal(to_np(pb), pa)
    np.testing.assert_array_equal(to_np(b.predict(tensor(X))), a.predict(X))
    if mode in ("lla", "ncr", "gsa"):
        np.testing.assert_array_equal(to_np(b.predict_lla(Xt)), a.predict_lla(Xn))
    # numpy in with device set: the same machine, numpy out
    c = NystromSVC(**_kw(mode, svm), device=TEST_DEVICE).fit(X, y)
    dc, pc = c.decision_function(Xn), c.predict(Xn)
    assert isinstance(dc, np.ndarray) and isinstance(pc, np.ndarray)
    assert rel(dc, da) < tol
    np.testing.assert_array_equal(pc, pa)
    assert isinstance(c.X_fit_, np.ndarray) and c.dual_coef_ is None or isinstance(
        c.dual_coef_, np.ndarray)
    assert c.score(Xn, pa) == 1.0


@pytest.mark.parametrize("mode", ["lla", "gsa", "spa"])
@pytest.mark.parametrize("landmarks", ["kmeans", "leverage", "indices"])
def test_svc_torch_landmark_selectors_equal_numpy(landmarks, mode, clf):
    """k-means and leverage-score landmarks are chosen on the host by the numpy samplers from
    the same random stream (same indices and centres); row indices are used as given."""
    X, _, y3, Xn = clf
    lm = np.arange(3, 150, 6) if landmarks == "indices" else landmarks
    kw = _kw(mode, landmarks=lm)
    if landmarks == "indices":
        kw.pop("n_landmarks")
    a = NystromSVC(**kw).fit(X, y3)
    b = NystromSVC(**kw).fit(tensor(X), y3)
    np.testing.assert_array_equal(b.landmark_indices_, a.landmark_indices_)
    np.testing.assert_array_equal(to_np(b.landmarks_), a.landmarks_)
    assert rel(b.decision_function(tensor(Xn)), a.decision_function(Xn)) < dtol(1e-10)
    np.testing.assert_array_equal(to_np(b.predict(tensor(Xn))), a.predict(Xn))


def _gram(clf):
    """The RBF Gram matrix (gamma 0.5, the kernel of ``_kw``) of the training and test data."""
    from asymkern.kernels import get_kernel

    X, _, _, Xn = clf
    k = get_kernel("rbf", gamma=0.5)
    return k(X), k(Xn, X)


def _option(option, mode, clf, svm="nusvc", **extra):
    """(kw, X, Xn) of ``option``: 'precomputed' (X the Gram matrix, Xn K(Z, X_fit)) or
    'gaussian' (landmarks='gaussian' on the data)."""
    X, _, _, Xn = clf
    kw = _kw(mode, svm, **extra)
    if option == "precomputed":
        kw.update(kernel="precomputed", gamma=None)
        X, Xn = _gram(clf)
    else:
        kw.update(landmarks="gaussian")
    return kw, X, Xn


@pytest.mark.parametrize("option", ["precomputed", "gaussian"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("svm", ["nusvc", "linearsvc"])
@pytest.mark.parametrize("mode", MODES)
def test_svc_torch_options_equal_numpy_float64(option, mode, svm, n_classes, clf):
    """kernel='precomputed' (landmarks: indices into K; 'exact' uses K itself) and
    landmarks='gaussian' (C_H = X_H S, K·S on the device), tensor and numpy + device input,
    against the numpy fit: fitted attributes, decision values and labels."""
    _, y2, y3, _ = clf
    y = y2 if n_classes == 2 else y3
    if (svm == "linearsvc" and mode in ("spa", "exact")) or (
            option == "gaussian" and mode == "exact"):
        return  # refused (linearsvc) or the same machine as without landmarks
    kw, X, Xn = _option(option, mode, clf, svm)
    tol = 1e-7 if svm == "linearsvc" else dtol(1e-10)
    a = NystromSVC(**kw).fit(X, y)
    Xt, keep = tensor(X.copy()), X.copy()
    b = NystromSVC(**kw).fit(Xt, tensor(y))
    c = NystromSVC(**kw, device=TEST_DEVICE).fit(X, y)
    np.testing.assert_array_equal(to_np(Xt), keep)
    np.testing.assert_array_equal(X, keep)
    assert b.X_fit_.data_ptr() != Xt.data_ptr() and not np.shares_memory(c.X_fit_, X)
    for est, tensors in ((b, True), (c, False)):
        assert est.torch_fit_ and est.n_features_in_ == X.shape[1]
        if mode != "exact":
            assert est.subspace_dim_ == a.subspace_dim_ and est.n_landmarks_ == a.n_landmarks_
            assert rel(est.landmark_coef_, a.landmark_coef_) < tol
            if option == "gaussian":
                np.testing.assert_array_equal(est.basis_.sketch, a.basis_.sketch)
                assert est.landmark_indices_ is None and est.landmarks_ is None
            else:
                np.testing.assert_array_equal(est.landmark_indices_, a.landmark_indices_)
                np.testing.assert_array_equal(to_np(est.landmarks_), a.landmarks_)  # rows of K
        if mode in ("gsa", "spa", "exact"):
            assert is_torch_tensor(est.dual_coef_) == tensors
            assert rel(est.dual_coef_, a.dual_coef_) < tol
        Zin = tensor(Xn) if tensors else Xn
        da, d = a.decision_function(Xn), est.decision_function(Zin)
        assert is_torch_tensor(d) == tensors and tuple(d.shape) == da.shape
        assert to_np(d).dtype == np.float64 and rel(d, da) < tol
        p = est.predict(Zin)
        assert is_torch_tensor(p) == tensors
        np.testing.assert_array_equal(to_np(p), a.predict(Xn))
        np.testing.assert_array_equal(to_np(est.predict(tensor(X) if tensors else X)),
                                      a.predict(X))
        if mode in ("lla", "ncr", "gsa"):
            np.testing.assert_array_equal(to_np(est.predict_lla(Zin)), a.predict_lla(Xn))
        if mode in ("lla", "ncr"):  # the fitted solver's values on the numpy features
            assert rel(d, est.estimator_.decision_function(est.basis_.features(Xn))) < dtol(1e-12)


@pytest.mark.parametrize("mode", ["lla", "gsa", "spa", "exact"])
def test_svc_torch_precomputed_equals_the_fit_on_the_data(mode, clf):
    """The same machine as on the data, with the same landmark indices (dense reference: the
    numpy kernel's Gram matrices against the torch kernel's own evaluations)."""
    X, _, y3, Xn = clf
    K, Kn = _gram(clf)
    kw = _kw(mode)
    b = NystromSVC(**{**kw, "kernel": "precomputed", "gamma": None}).fit(tensor(K), y3)
    d = NystromSVC(**kw).fit(tensor(X), y3)
    if mode != "exact":
        np.testing.assert_array_equal(b.landmark_indices_, d.landmark_indices_)
    assert rel(b.decision_function(tensor(Kn)),
               to_np(d.decision_function(tensor(Xn)))) < dtol(1e-8)
    np.testing.assert_array_equal(to_np(b.predict(tensor(Kn))),
                                  to_np(d.predict(tensor(Xn))))


@pytest.mark.parametrize("option", ["precomputed", "gaussian"])
@pytest.mark.parametrize("as_tensor", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_svc_torch_options_float32(option, mode, as_tensor, clf):
    """float32 in, float32 decision values out; the numpy fit's labels."""
    if option == "gaussian" and mode == "exact":
        return
    _, _, y3, _ = clf
    kw, X, Xn = _option(option, mode, clf)
    X32, Xn32 = X.astype(np.float32), Xn.astype(np.float32)
    a = NystromSVC(**kw).fit(X32, y3)
    if as_tensor:
        b = NystromSVC(**kw).fit(tensor(X32), y3)
        d = b.decision_function(tensor(Xn32))
        assert d.dtype == torch.float32
        p = to_np(b.predict(tensor(Xn32)))
    else:
        b = NystromSVC(**kw, device=TEST_DEVICE).fit(X32, y3)
        d = b.decision_function(Xn32)
        assert isinstance(d, np.ndarray) and d.dtype == np.float32
        p = b.predict(Xn32)
    assert rel(d, a.decision_function(Xn32)) < 1e-5
    np.testing.assert_array_equal(p, a.predict(Xn32))


@pytest.mark.parametrize("as_tensor", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_svc_torch_float32(mode, as_tensor, clf):
    X, _, y3, Xn = clf
    X32, Xn32 = X.astype(np.float32), Xn.astype(np.float32)
    a = NystromSVC(**_kw(mode)).fit(X32, y3)
    if as_tensor:
        b = NystromSVC(**_kw(mode)).fit(tensor(X32), y3)
        d = b.decision_function(tensor(Xn32))
        assert d.dtype == torch.float32
        p = to_np(b.predict(tensor(Xn32)))
    else:
        b = NystromSVC(**_kw(mode), device=TEST_DEVICE).fit(X32, y3)
        d = b.decision_function(Xn32)
        assert isinstance(d, np.ndarray) and d.dtype == np.float32
        p = b.predict(Xn32)
    da = a.decision_function(Xn32)
    assert da.dtype == np.float32
    assert rel(d, da) < 1e-5
    np.testing.assert_array_equal(p, a.predict(Xn32))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_svc_torch_probability(n_classes, clf, monkeypatch):
    """probability=True: the internal cross-validation refits clones, which keep ``device`` (and
    get tensor folds of a tensor fit), so every fold runs on the torch backend too."""
    import asymkern._torch.machines as machines_mod

    X, y2, y3, Xn = clf
    y = y2 if n_classes == 2 else y3
    calls = []

    real = machines_mod.training_input  # the torch executor's side of every fit

    def counting(est, *args):
        calls.append(est.probability)
        return real(est, *args)

    monkeypatch.setattr(machines_mod, "training_input", counting)
    kw = _kw("lla", probability=True)
    a = NystromSVC(**kw).fit(X, y)
    assert calls == []
    b = NystromSVC(**kw).fit(tensor(X), tensor(y))
    assert calls == [True] + [False] * 5
    c = NystromSVC(**kw, device=TEST_DEVICE).fit(X, y)
    assert clone(c).device == TEST_DEVICE and len(calls) == 12
    pa = a.predict_proba(Xn)
    pb = b.predict_proba(tensor(Xn))
    assert is_torch_tensor(pb) and pb.dtype == torch.float64 and tuple(pb.shape) == pa.shape
    assert rel(pb, pa) < dtol(1e-9)
    lb = b.predict_log_proba(tensor(Xn))
    assert is_torch_tensor(lb) and rel(lb, a.predict_log_proba(Xn)) < dtol(1e-9)
    pc = c.predict_proba(Xn)
    assert isinstance(pc, np.ndarray) and rel(pc, pa) < dtol(1e-9)
    p32 = b.predict_proba(tensor(Xn, dtype=torch.float64).float())
    # outputs follow the input's precision, whatever the training dtype (float64 here)
    assert p32.dtype == torch.float32 and rel(p32, pa) < 1e-5


def test_svc_torch_label_types(clf):
    """Numeric labels come back as tensors for tensor input, other labels as numpy arrays."""
    X, _, y3, Xn = clf
    Xt, Xnt = tensor(X), tensor(Xn)
    ref = NystromSVC(**_kw("lla")).fit(X, y3).predict(Xn)
    names = np.array(["low", "mid", "high"])  # sorted otherwise: other one-vs-one machines
    b = NystromSVC(**_kw("lla")).fit(Xt, names[y3])
    p = b.predict(Xnt)
    assert isinstance(p, np.ndarray) and p.dtype == names.dtype
    np.testing.assert_array_equal(p, NystromSVC(**_kw("lla")).fit(X, names[y3]).predict(Xn))
    f = NystromSVC(**_kw("lla")).fit(Xt, tensor(y3 * 2.0))
    pf = f.predict(Xnt)
    assert is_torch_tensor(pf) and pf.dtype == torch.float64
    np.testing.assert_array_equal(to_np(pf), ref * 2.0)
    assert isinstance(f.classes_, np.ndarray)
    assert isinstance(f.predict(Xn), np.ndarray)  # numpy in, numpy out


def test_svc_torch_ovr_values_equal_sklearn():
    """The 'ovr' transform (one for every executor) is scikit-learn's on the device and on
    numpy arrays, exact zeros included (its votes)."""
    from sklearn.utils.multiclass import _ovr_decision_function

    from asymkern._shared.nystrom_predict import ovr_values as _ovr

    rng = np.random.RandomState(0)
    raw = rng.randn(50, 6)
    raw[::4, 2] = 0.0
    want = _ovr_decision_function(raw < 0, -raw, 4)
    np.testing.assert_allclose(to_np(_ovr(tensor(raw), 4)), want, rtol=dtol(1e-15),
                               atol=dtol(1e-15))
    np.testing.assert_allclose(_ovr(raw, 4), want, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("mode", ["lla", "gsa", "spa", "exact"])
def test_svc_torch_inputs_unchanged_and_memory_not_shared(mode, clf):
    X, _, y3, Xn = clf
    Xt, yt = tensor(X.copy()), tensor(y3.copy())
    keep_X, keep_y = Xt.clone(), yt.clone()
    Xnt = tensor(Xn.copy())
    b = NystromSVC(**_kw(mode)).fit(Xt, yt)
    before = b.decision_function(Xnt).clone()
    assert torch.equal(Xt, keep_X) and torch.equal(yt, keep_y)
    assert torch.equal(Xnt, tensor(Xn))
    assert b.X_fit_.data_ptr() != Xt.data_ptr()
    Xt.mul_(2.0)
    yt.zero_()
    assert torch.equal(b.decision_function(Xnt), before)
    # numpy in with device set: the caller's array may change after fit
    Xc = X.copy()
    c = NystromSVC(**_kw(mode), device=TEST_DEVICE).fit(Xc, y3)
    dc = c.decision_function(Xn)
    Xc *= 2.0
    np.testing.assert_array_equal(c.decision_function(Xn), dc)
    # a pickled torch fit predicts the same
    again = pickle.loads(pickle.dumps(b))
    assert torch.equal(again.decision_function(Xnt), before)


@pytest.mark.parametrize("case", ["precomputed-lla", "precomputed-gsa", "precomputed-spa",
                                  "precomputed-exact", "gaussian-lla", "gaussian-gsa"])
def test_svc_torch_options_inputs_unchanged_and_memory_not_shared(case, clf):
    option, mode = case.split("-")
    _, _, y3, _ = clf
    kw, X, Xn = _option(option, mode, clf)
    Xt, Xnt = tensor(X.copy()), tensor(Xn.copy())
    b = NystromSVC(**kw).fit(Xt, y3)
    before = b.decision_function(Xnt).clone()
    assert torch.equal(Xt, tensor(X)) and torch.equal(Xnt, tensor(Xn))
    assert torch.equal(b.X_fit_, Xt) and b.X_fit_.data_ptr() != Xt.data_ptr()
    Xt.mul_(2.0)
    assert torch.equal(b.decision_function(Xnt), before)
    Xc = X.copy()
    c = NystromSVC(**kw, device=TEST_DEVICE).fit(Xc, y3)
    dc = c.decision_function(Xn)
    np.testing.assert_array_equal(Xc, X)
    Xc *= 2.0
    np.testing.assert_array_equal(c.decision_function(Xn), dc)
    again = pickle.loads(pickle.dumps(b))
    assert torch.equal(again.decision_function(Xnt), before)


def test_svc_torch_gaussian_probability(clf):
    """probability=True with a sketch: the clones of the cross-validation draw their own S
    from the same streams as on the numpy path."""
    X, _, y3, Xn = clf
    kw = _kw("lla", landmarks="gaussian", probability=True)
    a = NystromSVC(**kw).fit(X, y3)
    b = NystromSVC(**kw).fit(tensor(X), y3)
    assert rel(b.predict_proba(tensor(Xn)), a.predict_proba(Xn)) < dtol(1e-9)


def test_svc_torch_precomputed_and_gaussian_bad_inputs(clf):
    """The numpy path's errors, for tensors and for numpy input with a device."""
    X, _, y3, _ = clf
    K, _ = _gram(clf)
    Kt = tensor(K)
    for mode in ("lla", "exact"):
        for fit_X in (Kt[:, :100], K[:, :100], Kt[:100]):  # not square
            with pytest.raises(ValueError, match="square"):
                NystromSVC(mode=mode, kernel="precomputed", device=TEST_DEVICE).fit(
                    fit_X, y3[:len(fit_X)])
        with pytest.raises(ValueError, match="gamma=None"):
            NystromSVC(mode=mode, kernel="precomputed", gamma=0.5).fit(Kt, y3)
    for lm in ("gaussian", "kmeans", "leverage"):  # need the data points
        for fit_X, dev in ((Kt, None), (K, TEST_DEVICE), (K, None)):
            with pytest.raises(ValueError, match=f"not '{lm}'"):
                NystromSVC(kernel="precomputed", landmarks=lm, device=dev).fit(fit_X, y3)
    with pytest.raises(ValueError, match="y must be 1-D with 160 labels"):
        NystromSVC(kernel="precomputed").fit(Kt, y3[:-1])
    for mode in ("lla", "gsa", "exact"):
        b = NystromSVC(mode=mode, kernel="precomputed", n_landmarks=20, random_state=0).fit(
            Kt, y3)
        with pytest.raises(ValueError, match="expecting 160 features"):
            b.predict(torch.ones(3, 159, dtype=torch.float64, device=TEST_DEVICE))
        with pytest.raises(ValueError, match="2-D"):
            b.decision_function(torch.ones(160, dtype=torch.float64, device=TEST_DEVICE))
        with pytest.raises(ValueError, match="NaN"):
            b.decision_function(torch.full((2, 160), float("nan"), dtype=torch.float64,
                device=TEST_DEVICE))
        c = NystromSVC(mode=mode, kernel="precomputed", n_landmarks=20, random_state=0,
                       device=TEST_DEVICE).fit(K, y3)
        with pytest.raises(ValueError, match="expecting 160 features"):
            c.predict(np.ones((3, 10)))
    with pytest.raises(ValueError, match="n_landmarks"):
        NystromSVC(landmarks="gaussian", n_landmarks=0).fit(tensor(X), y3)
    g = NystromSVC(landmarks="gaussian", n_landmarks=20, random_state=0).fit(
        tensor(X), y3)
    with pytest.raises(ValueError, match="expecting 3 features"):
        g.predict(torch.ones(2, 4, dtype=torch.float64, device=TEST_DEVICE))


def test_svc_torch_exact_row_normalised_kernel(clf):
    """mode='exact' needs no PSD kernel in memory; on torch the SNE kernel is normalised over
    the training rows as the numpy kernel layer does."""
    X, _, y3, Xn = clf
    kw = dict(mode="exact", svm="svc", kernel="sne", tol=1e-8)
    a = NystromSVC(**kw).fit(X, y3)
    b = NystromSVC(**kw).fit(tensor(X), y3)
    assert rel(b.decision_function(tensor(Xn)), a.decision_function(Xn)) < dtol(1e-10)
    with pytest.raises(ValueError, match="positive semi-definite"):
        NystromSVC(mode="lla", kernel="sne").fit(tensor(X), y3)


def test_svc_torch_refusals_and_bad_inputs(clf):
    X, y2, y3, Xn = clf
    Xt = tensor(X)
    with pytest.raises(ValueError, match="subspace_dim"):
        NystromSVC(mode="ncr", subspace_dim=5).fit(Xt, y3)
    with pytest.raises(ValueError, match="not available on the torch backend"):
        NystromSVC(kernel=lambda a, b: a @ b.T).fit(Xt, y3)
    with pytest.raises(ValueError, match="device"):
        NystromSVC(device="tpu:7").fit(X, y3)
    bad = Xt.clone()
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match="X contains NaN"):
        NystromSVC().fit(bad, y3)
    with pytest.raises(ValueError, match="X must be a 2-D"):
        NystromSVC().fit(Xt[:, 0], y3)
    with pytest.raises(ValueError, match="X is complex"):
        NystromSVC().fit(Xt.to(torch.complex128), y3)
    with pytest.raises(TypeError, match="sparse"):
        NystromSVC().fit(Xt.to_sparse(), y3)
    with pytest.raises(ValueError, match="y must be 1-D with 160 labels"):
        NystromSVC().fit(Xt, tensor(y3[:-1]))
    with pytest.raises(ValueError, match="at least 2 classes"):
        NystromSVC().fit(Xt, torch.zeros(len(X), device=TEST_DEVICE))
    b = NystromSVC(**_kw("gsa")).fit(Xt, y3)
    with pytest.raises(ValueError, match="expecting 3 features"):
        b.predict(torch.ones(2, 5, dtype=torch.float64, device=TEST_DEVICE))
    with pytest.raises(ValueError, match="X contains NaN"):
        b.decision_function(torch.full((2, 3), float("inf"), dtype=torch.float64,
            device=TEST_DEVICE))
    with pytest.raises(ValueError, match="predict_lla needs mode"):
        NystromSVC(**_kw("spa")).fit(Xt, y3).predict_lla(tensor(Xn))
    a = NystromSVC(**_kw("lla")).fit(X, y3)  # numpy fit, device=None
    with pytest.raises(ValueError, match="fitted on numpy arrays"):
        a.predict(tensor(Xn))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_svc_torch_exact_equals_sklearn_svc(n_classes, clf):
    """Dense reference: mode='exact' with svm='svc' is scikit-learn's SVC on the RBF kernel."""
    from sklearn.svm import SVC

    X, y2, y3, Xn = clf
    y = y2 if n_classes == 2 else y3
    ref = SVC(kernel="rbf", gamma=0.5, tol=1e-12).fit(X, y)
    b = NystromSVC(mode="exact", svm="svc", gamma=0.5, tol=1e-12).fit(tensor(X), y)
    assert rel(b.decision_function(tensor(Xn)), ref.decision_function(Xn)) < dtol(1e-10)
    np.testing.assert_array_equal(to_np(b.predict(tensor(Xn))), ref.predict(Xn))


def test_svc_torch_probability_precomputed_and_index_landmarks(clf):
    """probability=True with a precomputed K (folds of K[train][:, train]) and with landmarks
    given as row indices (each fold keeps the given rows it trains on): torch equals numpy."""
    from asymkern.kernels import RBFKernel

    X, y2, _, Xn = clf
    K, Kn = RBFKernel(gamma=0.5)(X, X), RBFKernel(gamma=0.5)(Xn, X)
    idx = np.arange(100, 140)
    for kw, A, An in ((dict(_kw("lla", probability=True), kernel="precomputed", gamma=None),
                       K, Kn),
                      (dict(_kw("spa", probability=True), landmarks=idx, n_landmarks=None),
                       X, Xn)):
        a = NystromSVC(**kw).fit(A, y2)
        b = NystromSVC(**kw).fit(tensor(A), tensor(y2))
        assert rel(b.predict_proba(tensor(An)), a.predict_proba(An)) < dtol(1e-9)


@pytest.mark.parametrize("svm", ["svc", "nusvc"])
def test_gsa_budget_refuses_as_numpy(svm):
    """mode='gsa' counts its features, SVM and pseudo-inverse factor on every executor: the
    torch fit ran (peaking at 37 MiB) where numpy refused a 20 MiB budget."""
    from asymkern import config_context
    from asymkern.config import MemoryBudgetError

    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 5))
    y = (X[:, 0] > 0).astype(int)
    for data in (X, tensor(X)):
        with config_context(max_dense_memory=20):
            with pytest.raises(MemoryBudgetError, match="mode='gsa'"):
                NystromSVC(mode="gsa", svm=svm, n_landmarks=200, random_state=0).fit(data, y)
