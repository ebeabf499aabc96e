"""NystromKernelPCA on the torch backend (asymkern._torch.machines), on test-device tensors.

Every mode × ``center`` × dtype × input kind (tensors; numpy with ``device=TEST_DEVICE``) against
numpy path: the fitted attributes and the scores agree to 1e-12 (float64) / 1e-5 (float32)
relative, with the same signs (svd_flip's rule, no alignment). A laplacian kernel keeps K_mm
and the centred features well conditioned, so both paths agree to rounding.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import TEST_DEVICE, dtol, tensor, to_np  # noqa: E402
from _torch_helpers import rel_max as rel  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from asymkern import config_context  # noqa: E402
from asymkern._dispatch import is_torch_tensor  # noqa: E402
from asymkern.exceptions import ClippedParameterWarning  # noqa: E402
from asymkern.kernels import get_kernel  # noqa: E402
from asymkern.nystrom import NystromKernelPCA  # noqa: E402

MODES = ("lla", "ncr", "gsa", "spa", "exact")
TOL = {np.float64: dtol(1e-12), np.float32: 1e-5}
ATTRS = ("eigenvalues_", "coef_", "landmark_coef_", "dual_coef_", "intercept_")



@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(4)
    return rng.randn(160, 3), rng.randn(25, 3)


def kw(**extra):
    return {**dict(n_components=4, n_landmarks=30, kernel="laplacian", gamma=1.0,
                   random_state=1), **extra}


def _assert_matches(b, a, tol, tensors: bool):
    """Fitted ``b`` (torch) equals ``a`` (numpy): attributes, their kinds and dtypes."""
    assert b.n_components_ == a.n_components_ and b.torch_fit_ and not a.__dict__.get(
        "torch_fit_", False)
    assert b.subspace_dim_ == a.subspace_dim_ and b.n_landmarks_ == a.n_landmarks_
    if a.landmark_indices_ is None:
        assert b.landmark_indices_ is None
    else:
        np.testing.assert_array_equal(b.landmark_indices_, a.landmark_indices_)
    for name in ATTRS:
        va, vb = getattr(a, name), getattr(b, name)
        if va is None:
            assert vb is None, name
            continue
        assert is_torch_tensor(vb) == tensors, name
        assert to_np(vb).dtype == np.float64, name  # float64 fitted coefficients, as numpy
        if np.max(np.abs(va)) > 0:
            assert rel(vb, va) < tol, (name, rel(vb, va))
        else:  # intercept_ without centring
            assert np.max(np.abs(to_np(vb))) == 0, name


def _check_against_numpy(params, X, Xn, how):
    """Fit ``params`` on numpy, on a tensor (``how='tensor'``) or on numpy with
    ``device='cpu'`` (``how='device'``): the torch fit equals the numpy one (attributes,
    transform, fit_transform, kinds and dtypes); the inputs are not written to. Returns both
    fits."""
    dtype = X.dtype.type
    keep = X.copy()
    a = NystromKernelPCA(**params).fit(X)
    if how == "tensor":
        Xt = tensor(X.copy())
        b = NystromKernelPCA(**params).fit(Xt)
        np.testing.assert_array_equal(to_np(Xt), keep)
        assert not np.shares_memory(to_np(b.X_fit_), to_np(Xt))
        t = b.transform(tensor(Xn))
        assert is_torch_tensor(t) and t.dtype == tensor(Xn).dtype
        ft = b.fit_transform(Xt)
        assert is_torch_tensor(ft) and is_torch_tensor(b.X_fit_)
        np.testing.assert_array_equal(to_np(Xt), keep)
    else:
        b = NystromKernelPCA(device=TEST_DEVICE, **params).fit(X)
        t = b.transform(Xn)
        assert isinstance(t, np.ndarray) and t.dtype == dtype
        ft = b.fit_transform(X)
        assert isinstance(ft, np.ndarray) and isinstance(b.X_fit_, np.ndarray)
        assert not np.shares_memory(b.X_fit_, X)
    np.testing.assert_array_equal(X, keep)
    np.testing.assert_array_equal(to_np(b.X_fit_), keep)  # the model's copy is not written to
    tol = TOL[dtype]
    _assert_matches(b, a, tol, how == "tensor")
    assert rel(t, a.transform(Xn)) < tol
    assert rel(ft, a.transform(X)) < tol
    assert list(b.get_feature_names_out()) == [f"nystromkernelpca{i}" for i in range(4)]
    return a, b


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("how", ["tensor", "device"])
def test_torch_equals_numpy(mode, center, dtype, how, data):
    X, Xn = (v.astype(dtype) for v in data)
    _check_against_numpy(dict(mode=mode, center=center, **kw()), X, Xn, how)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("how", ["tensor", "device"])
def test_precomputed_equals_numpy(mode, center, dtype, how, data):
    """kernel='precomputed': X is the (n, n) Gram matrix, transform takes K(Z, X_fit); the
    landmarks are the same indices into K as the numpy fit's (the 'exact' machine uses K
    itself, centred in place on the model's own copy)."""
    k = get_kernel("laplacian", gamma=1.0)
    K, Kn = (v.astype(dtype) for v in (k(data[0]), k(data[1], data[0])))
    params = dict(mode=mode, center=center, **kw(kernel="precomputed", gamma=None))
    a, b = _check_against_numpy(params, K, Kn, how)
    assert b.n_features_in_ == len(K)
    if mode == "exact":
        assert b.basis_ is None and b.landmark_indices_ is None and b.landmarks_ is None
    else:
        np.testing.assert_array_equal(to_np(b.landmarks_), a.landmarks_)  # rows of K


@pytest.mark.parametrize("mode", MODES)
def test_precomputed_equals_the_fit_on_the_data(mode, data):
    """The same machine as on the data with the same kernel and landmarks (dense reference:
    the numpy kernel's K and K(Z, X) against the torch kernel's own evaluations)."""
    X, Xn = data
    k = get_kernel("laplacian", gamma=1.0)
    b = NystromKernelPCA(mode=mode, **kw(kernel="precomputed", gamma=None)).fit(
        tensor(k(X)))
    d = NystromKernelPCA(mode=mode, **kw()).fit(tensor(X))
    if mode != "exact":
        np.testing.assert_array_equal(b.landmark_indices_, d.landmark_indices_)
    assert rel(b.eigenvalues_, to_np(d.eigenvalues_)) < dtol(1e-12)
    assert rel(b.transform(tensor(k(Xn, X))), to_np(d.transform(tensor(Xn)))) \
        < dtol(1e-11)


@pytest.mark.parametrize("mode", ["lla", "ncr", "gsa", "spa"])
@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("how", ["tensor", "device"])
def test_gaussian_sketch_equals_numpy(mode, center, dtype, how, data):
    """landmarks='gaussian' (C_H = X_H S): the same S from the same stream, K·S over row
    blocks of K on the device, no landmark points."""
    X, Xn = (v.astype(dtype) for v in data)
    a, b = _check_against_numpy(dict(mode=mode, center=center, **kw(landmarks="gaussian")),
                                X, Xn, how)
    np.testing.assert_array_equal(b.basis_.sketch, a.basis_.sketch)
    assert b.landmark_indices_ is None and b.landmarks_ is None and b.n_landmarks_ == 30
    assert rel(b.basis_.Kmm, a.basis_.Kmm) < TOL[dtype] / 10


@pytest.mark.parametrize("mode", ["lla", "gsa"])
def test_gaussian_sketch_streams_row_blocks(mode, data):
    """A tiny working_memory forces many row blocks of K·S and of K(Z, X_fit): same
    results, and no block spans more than a fraction of the rows."""
    from asymkern._torch.kernels import TorchKernel

    X, Xn = data
    Xt = tensor(X)
    Z = tensor(np.r_[Xn, Xn, Xn, Xn, Xn, Xn])
    ref = NystromKernelPCA(mode=mode, **kw(landmarks="gaussian")).fit(X).transform(to_np(Z))
    rows = []
    raw = TorchKernel.raw

    def spy(self, A, B, c=None, **kw):
        rows.append(int(A.shape[0]))
        return raw(self, A, B, c, **kw)

    with config_context(working_memory=0.1), pytest.MonkeyPatch.context() as mp:
        mp.setattr(TorchKernel, "raw", spy)
        b = NystromKernelPCA(mode=mode, **kw(landmarks="gaussian")).fit(Xt)
        t = b.transform(Z)
    assert rows and max(rows) < len(X) // 2
    assert rel(t, ref) < dtol(1e-12)


@pytest.mark.parametrize("option", ["precomputed", "gaussian"])
def test_pickle_round_trip_of_the_options(option, data):
    X, Xn = data
    if option == "precomputed":
        k = get_kernel("laplacian", gamma=1.0)
        X, Xn = k(X), k(Xn, X)
        params = kw(kernel="precomputed", gamma=None)
    else:
        params = kw(landmarks="gaussian")
    for mode in ("lla", "gsa"):
        b = NystromKernelPCA(mode=mode, **params).fit(tensor(X))
        c = pickle.loads(pickle.dumps(b))
        assert torch.equal(c.transform(tensor(Xn)), b.transform(tensor(Xn)))


def test_precomputed_and_gaussian_bad_input(data):
    """The numpy path's errors, for tensors and for numpy input with a device."""
    X, Xn = data
    K = get_kernel("laplacian", gamma=1.0)(X)
    Kt = tensor(K)
    for mode in ("lla", "exact"):
        for fit_X in (Kt[:, :100], K[:, :100], Kt[:100]):  # not square
            with pytest.raises(ValueError, match="square"):
                NystromKernelPCA(mode=mode, kernel="precomputed", device=TEST_DEVICE).fit(fit_X)
        with pytest.raises(ValueError, match="gamma=None"):
            NystromKernelPCA(mode=mode, kernel="precomputed", gamma=0.5).fit(Kt)
        with pytest.raises(ValueError, match="kernel_params=None"):
            NystromKernelPCA(mode=mode, kernel="precomputed", kernel_params={"a": 1}).fit(K)
    for lm in ("gaussian", "kmeans", "leverage"):  # need the data points
        for fit_X, dev in ((Kt, None), (K, TEST_DEVICE), (K, None)):
            with pytest.raises(ValueError, match=f"not '{lm}'"):
                NystromKernelPCA(kernel="precomputed", landmarks=lm, device=dev).fit(fit_X)
    with pytest.raises(ValueError, match="out of range|index|indices|must lie in"):
        NystromKernelPCA(kernel="precomputed", landmarks=[0, 5, 999]).fit(Kt)
    for mode in ("lla", "gsa", "exact"):
        b = NystromKernelPCA(mode=mode, **kw(kernel="precomputed", gamma=None)).fit(Kt)
        with pytest.raises(ValueError, match="expecting 160 features"):
            b.transform(torch.ones(3, 159, dtype=torch.float64, device=TEST_DEVICE))
        with pytest.raises(ValueError, match="2-D"):
            b.transform(torch.ones(160, dtype=torch.float64, device=TEST_DEVICE))
        with pytest.raises(ValueError, match="NaN or infinity"):
            b.transform(torch.full((2, 160), float("nan"), dtype=torch.float64, device=TEST_DEVICE))
        c = NystromKernelPCA(mode=mode, device=TEST_DEVICE, **kw(kernel="precomputed", gamma=None)
                             ).fit(K)
        with pytest.raises(ValueError, match="expecting 160 features"):
            c.transform(np.ones((3, 10)))
    with pytest.raises(ValueError, match="n_landmarks"):
        NystromKernelPCA(landmarks="gaussian", n_landmarks=0).fit(tensor(X))
    g = NystromKernelPCA(**kw(landmarks="gaussian")).fit(tensor(X))
    with pytest.raises(ValueError, match="expecting 3 features"):
        g.transform(torch.ones(2, 4, dtype=torch.float64, device=TEST_DEVICE))


@pytest.mark.parametrize("mode", ["lla", "gsa", "spa"])
@pytest.mark.parametrize("landmarks", ["kmeans", "leverage", "indices"])
def test_landmark_selectors_equal_numpy(mode, landmarks, data):
    """k-means centres and leverage-score rows are chosen on the host by the numpy samplers
    from the same random stream; explicit row indices are used as given."""
    X, Xn = data
    lm = np.arange(0, 160, 5) if landmarks == "indices" else landmarks
    a = NystromKernelPCA(mode=mode, **kw(landmarks=lm)).fit(X)
    b = NystromKernelPCA(mode=mode, **kw(landmarks=lm)).fit(tensor(X))
    np.testing.assert_array_equal(to_np(b.landmarks_), a.landmarks_)
    _assert_matches(b, a, 1e-12, True)
    assert rel(b.transform(tensor(Xn)), a.transform(Xn)) < dtol(1e-12)


@pytest.mark.parametrize("kernel", ["rbf", "polynomial", "sne"])
def test_exact_other_kernels_and_dense_reference(kernel, data):
    """mode='exact' equals numpy (also for the row-normalised 'sne', symmetrised as numpy
    does) and, uncentred with a symmetric kernel, the top of ``eigvalsh`` of K."""
    X, Xn = data
    params = dict(n_components=3, mode="exact", kernel=kernel, center=False)
    a = NystromKernelPCA(**params).fit(X)
    b = NystromKernelPCA(**params).fit(tensor(X))
    _assert_matches(b, a, 1e-11, True)
    assert rel(b.transform(tensor(Xn)), a.transform(Xn)) < dtol(1e-11)
    if kernel != "sne":
        ref = np.linalg.eigvalsh(get_kernel(kernel)(X))[::-1][:3]
        assert rel(b.eigenvalues_, ref) < dtol(1e-12)


def test_lla_eigenvalues_equal_the_dense_svd_of_the_features(data):
    X, _ = data
    b = NystromKernelPCA(mode="lla", **kw()).fit(tensor(X))
    F = b.basis_.features(X)
    S = np.linalg.svd(F - F.mean(axis=0), compute_uv=False)
    assert rel(b.eigenvalues_, S[:4] ** 2) < dtol(1e-12)


@pytest.mark.parametrize("mode", ["lla", "gsa", "exact"])
def test_transform_streamed_over_row_blocks(mode, data):
    """A tiny working_memory forces many row blocks in fit and transform: same results."""
    X, Xn = data
    Xt = tensor(X)
    ref = NystromKernelPCA(mode=mode, **kw()).fit(Xt).transform(tensor(Xn))
    with config_context(working_memory=0.001):
        b = NystromKernelPCA(mode=mode, **kw()).fit(Xt)
        assert rel(b.transform(tensor(Xn)), ref) < dtol(1e-12)  # 2e-14 measured


@pytest.mark.parametrize("mode", ["gsa", "exact", "lla"])
@pytest.mark.parametrize("how", ["tensor", "device"])
def test_fit_never_shares_the_callers_memory(mode, how, data):
    """GSA and exact transform with K(Z, X_fit): the model keeps its own copy of X."""
    X, Xn = data
    Xc = X.copy()
    Xt = tensor(Xc)  # shares Xc's memory
    est = NystromKernelPCA(mode=mode, **kw()) if how == "tensor" else \
        NystromKernelPCA(mode=mode, device=TEST_DEVICE, **kw())
    b = est.fit(Xt if how == "tensor" else Xc)
    Zn = tensor(Xn) if how == "tensor" else Xn
    before = to_np(b.transform(Zn)).copy()
    fitted = to_np(b.X_fit_)
    assert not np.shares_memory(fitted, Xc)
    Xt.mul_(2.0)  # changes Xc too
    np.testing.assert_array_equal(to_np(b.transform(Zn)), before)


def test_pickle_round_trip(data):
    X, Xn = data
    b = NystromKernelPCA(mode="gsa", **kw()).fit(tensor(X))
    c = pickle.loads(pickle.dumps(b))
    assert torch.equal(c.transform(tensor(Xn)), b.transform(tensor(Xn)))


def test_refusals_and_bad_input(data):
    X, _ = data
    Xt = tensor(X)
    # the exact machine uses no landmarks: 'gaussian' is irrelevant there, as on numpy
    NystromKernelPCA(mode="exact", landmarks="gaussian").fit(Xt[:30])
    with pytest.raises(ValueError, match="subspace_dim"):
        NystromKernelPCA(mode="ncr", subspace_dim=5).fit(Xt)
    with pytest.raises(ValueError, match="positive semi-definite"):
        NystromKernelPCA(kernel="sne", n_landmarks=20).fit(Xt)
    with pytest.raises(ValueError, match="unknown mode"):
        NystromKernelPCA(mode="nope").fit(Xt)
    with pytest.raises(ValueError, match="device='nope'"):
        NystromKernelPCA(device="nope").fit(X)
    with pytest.raises(TypeError, match="device must be"):
        NystromKernelPCA(device=3).fit(X)
    with pytest.raises(ValueError, match="n_components must be >= 1"):
        NystromKernelPCA(n_components=0).fit(Xt)
    with pytest.raises(TypeError, match="n_components must be a positive integer"):
        NystromKernelPCA(n_components=2.5).fit(Xt)
    with pytest.raises(ValueError, match="minimum of 2 is required"):
        NystromKernelPCA().fit(Xt[:1])
    with pytest.raises(ValueError, match="minimum of 1"):
        NystromKernelPCA(center=False).fit(Xt[:0])
    bad = Xt.clone()
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        NystromKernelPCA().fit(bad)
    with pytest.raises(ValueError, match="2-D"):
        NystromKernelPCA().fit(Xt[:, 0])
    with pytest.raises(ValueError, match="complex"):
        NystromKernelPCA().fit(Xt.to(torch.complex128))
    with pytest.raises(TypeError, match="sparse"):
        NystromKernelPCA().fit(Xt.to_sparse())
    with pytest.raises(ValueError, match="rank of K_mm|larger than the subspace"):
        NystromKernelPCA(n_components=3, n_landmarks=20, kernel="linear").fit(Xt[:, :2])
    with pytest.warns(ClippedParameterWarning, match="n_components=200 is larger"):
        assert NystromKernelPCA(200, mode="exact", center=False).fit(Xt[:20]).n_components_ == 20
    b = NystromKernelPCA(**kw()).fit(Xt)
    with pytest.raises(ValueError, match="expecting 3 features"):
        b.transform(torch.ones(2, 5, dtype=torch.float64, device=TEST_DEVICE))
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        b.transform(bad)
    numpy_fit = NystromKernelPCA(**kw()).fit(X)
    with pytest.raises(ValueError, match="fitted on numpy arrays"):
        numpy_fit.transform(Xt)


def test_refit_on_numpy_leaves_the_torch_path(data):
    """A model fitted on torch and refitted on numpy (device=None) is a numpy model again."""
    X, Xn = data
    est = NystromKernelPCA(**kw()).fit(tensor(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.fit(X)
    assert not est.torch_fit_ and isinstance(est.transform(Xn), np.ndarray)
    assert isinstance(est.eigenvalues_, np.ndarray)


@parametrize_with_checks([NystromKernelPCA(device=TEST_DEVICE),
                          NystromKernelPCA(mode="gsa", device=TEST_DEVICE)])
def test_common_checks_on_the_torch_path(estimator, check):
    """scikit-learn's common checks with numpy input and device='cpu' (the torch executor;
    the defaults, device=None, are checked in tests/test_sklearn_api.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippedParameterWarning)
        warnings.filterwarnings("ignore", "The given NumPy array is not writable")
        check(estimator)
