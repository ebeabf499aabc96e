"""KoopmanOperator on the torch backend against the numpy path and a dense reference, on
test-device tensors: eigenvalues to 1e-10 relative to ``|λ₁|``, eigenfunction values to 1e-8
up to the sign (complex phase) LAPACK leaves free, forecasts (1 and 3 steps) to 1e-10
relative (float64), float32 forecasts to 1e-5. No test depends on timing.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import TEST_DEVICE, dtol, tensor  # noqa: E402

from asymkern._dispatch import is_torch_tensor  # noqa: E402
from asymkern.kernels import KernelMatrix, get_kernel  # noqa: E402
from asymkern.operators import KoopmanOperator  # noqa: E402

KERNELS = [("rbf", {"gamma": 5.0}), ("linear", None)]


@pytest.fixture(scope="module")
def data():
    """A noisy damped rotation (trajectory), independent snapshot pairs and query points."""
    rng = np.random.RandomState(0)
    R = 0.95 * np.array([[0.9, -0.3], [0.3, 0.9]])
    x = np.zeros((110, 2))
    for t in range(109):
        x[t + 1] = R @ x[t] + 0.2 * rng.randn(2)
    X = rng.uniform(-1, 1, size=(80, 2))
    Y = np.tanh(X @ R.T) + 0.05 * rng.randn(80, 2)
    return x, X, Y, 0.5 * rng.randn(15, 2)


def _np(a):
    return a.detach().cpu().numpy() if is_torch_tensor(a) else np.asarray(a)


def _fit(est, X, y=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # clipping warnings: checked separately
        return est.fit(X, y)


def _phase_err(got, want):
    """max |got_j·c_j − want_j| / max |want| with the best unit-modulus c_j per column."""
    got, want = _np(got), np.asarray(want)
    err = 0.0
    for j in range(want.shape[1]):
        ph = np.vdot(got[:, j], want[:, j])
        ph = ph / abs(ph) if abs(ph) > 0 else 1.0
        err = max(err, float(np.max(np.abs(got[:, j] * ph - want[:, j]))))
    return err / float(np.max(np.abs(want)))


def _rel(got, want):
    got, want = _np(got), np.asarray(want)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def _args(kind, data):
    x, X, Y, _ = data
    return (x, None) if kind == "trajectory" else (X, Y)


def _tensor(a):
    return None if a is None else tensor(a)


@pytest.mark.parametrize("kernel,params", KERNELS)
@pytest.mark.parametrize("estimator", ["full", "pcr", "rrr"])
@pytest.mark.parametrize("kind", ["trajectory", "pairs"])
def test_koopman_torch_equals_numpy(kernel, params, estimator, kind, data):
    X, y = _args(kind, data)
    Xq = data[3]
    keep = [A.copy() for A in data]
    kw = dict(kernel=kernel, kernel_params=params, alpha=1e-4, estimator=estimator, rank=6,
              n_components=4)
    a = _fit(KoopmanOperator(**kw), X, y)
    Xt, yt = _tensor(X), _tensor(y)
    Xt_keep, yt_keep = Xt.clone(), None if yt is None else yt.clone()
    b = _fit(KoopmanOperator(**kw), Xt, yt)
    assert b.torch_fit_ and not a.torch_fit_
    assert b.n_components_ == a.n_components_ and b.rank_ == a.rank_
    assert isinstance(b.eigenvalues_, np.ndarray)  # numpy also for tensor input
    assert b.eigenvalues_.dtype == a.eigenvalues_.dtype
    lam = a.eigenvalues_
    assert np.max(np.abs(b.eigenvalues_ - lam)) <= dtol(1e-9) * abs(lam[0])
    np.testing.assert_allclose(b.timescales_, a.timescales_, rtol=dtol(1e-8))
    assert _phase_err(b.eigenfunctions_(Xq), a.eigenfunctions_(Xq)) < dtol(1e-8)
    np.testing.assert_array_equal(b.X_fit_, a.X_fit_)
    for steps in (1, 3):
        want = a.predict(Xq, n_steps=steps)
        got = b.predict(tensor(Xq), n_steps=steps)
        assert is_torch_tensor(got) and got.dtype == torch.float64
        assert _rel(got, want) < dtol(1e-10)
        out = b.predict(Xq, n_steps=steps)  # numpy in: numpy out
        assert isinstance(out, np.ndarray) and _rel(out, want) < dtol(1e-10)
    if estimator != "full":  # Koopman modes: ψ_i m_i is free of the eigenfunctions' phase
        pa = a.eigenfunctions_(Xq)[:, :, None] * a.modes()[None]
        pb = b.eigenfunctions_(Xq)[:, :, None] * b.modes()[None]
        assert np.max(np.abs(pa - pb)) < dtol(1e-8) * np.max(np.abs(pa))
        assert _phase_err(b.left_eigenfunctions_(Xq), a.left_eigenfunctions_(Xq)) < dtol(1e-8)
    else:
        assert b.left_eigenfunctions_ is None
    assert b.score(X, y) == pytest.approx(a.score(X, y), abs=dtol(1e-10))
    assert b.score(Xt, yt) == pytest.approx(a.score(X, y), abs=dtol(1e-10))
    for A, B in zip(data, keep):
        np.testing.assert_array_equal(A, B)
    assert torch.equal(Xt, Xt_keep) and (yt is None or torch.equal(yt, yt_keep))


def test_koopman_torch_full_against_dense_reference(data):
    """'full': the eigenvalues of (G + nεI)⁻¹ k(Y, X) from numpy's dense eig; the
    eigenfunctions k(·, X) w are RKHS-normalised and w are eigenvectors of that matrix."""
    x = data[0]
    X0, X1 = x[:-1], x[1:]
    n, eps = X0.shape[0], 1e-4
    k = get_kernel("rbf", gamma=0.5)
    G = KernelMatrix(k, X0).to_array()
    Cyx = KernelMatrix(k, X1, X0).to_array()
    A = np.linalg.solve(G + n * eps * np.eye(n), Cyx)
    ev = np.linalg.eigvals(A)
    ev = ev[np.argsort(-np.abs(ev), kind="stable")][:6]
    b = KoopmanOperator(kernel_params={"gamma": 0.5}, alpha=eps, n_components=6).fit(
        tensor(x))
    lam = b.eigenvalues_
    # conjugate pairs may come in either order: compare as multisets
    assert np.max(np.abs(np.sort_complex(lam) - np.sort_complex(ev))) < dtol(1e-10) * abs(ev[0])
    C = b.eigenfunctions_.coef
    np.testing.assert_allclose(np.real(np.einsum("ij,ij->j", np.conj(C), G @ C)), 1.0,
                               atol=dtol(1e-10))
    np.testing.assert_allclose(A @ C, C * lam[None, :], atol=dtol(1e-8) * np.max(np.abs(C)))
    # forecasts: k(x, X) (G + nεI)⁻¹ X1, iterated with A
    Xq = data[3]
    Kq = KernelMatrix(k, Xq, X0).to_array()
    coef = np.linalg.solve(G + n * eps * np.eye(n), X1)
    assert _rel(b.predict(tensor(Xq)), Kq @ coef) < dtol(1e-10)
    assert _rel(b.predict(tensor(Xq), n_steps=3), Kq @ (A @ (A @ coef))) < dtol(1e-9)
    # the numpy operator_ (its Cholesky factor made on first use) has the same eigenvalues
    res = b.eig(6, method="auxiliary")
    assert np.max(np.abs(res.eigenvalues - lam)) < dtol(1e-10) * abs(lam[0])


def test_koopman_torch_float32_and_device_numpy(data):
    x, _, _, Xq = data
    x32, q32 = x.astype(np.float32), Xq.astype(np.float32)
    a = KoopmanOperator(n_components=3).fit(x32)
    b = KoopmanOperator(n_components=3).fit(tensor(x32))
    for steps in (1, 3):
        got = b.predict(tensor(q32), n_steps=steps)
        assert got.dtype == torch.float32
        assert _rel(got, a.predict(q32, n_steps=steps)) < 1e-5
    # numpy in, device set: numpy out, the numpy path's values
    kw = dict(n_components=3, estimator="rrr", kernel_params={"gamma": 5.0}, alpha=1e-4)
    ref = KoopmanOperator(**kw).fit(x)
    c = KoopmanOperator(**kw, device=TEST_DEVICE).fit(x)
    assert c.torch_fit_ and c.n_features_in_ == 2
    assert isinstance(c.eigenvalues_, np.ndarray)
    out = c.predict(Xq, n_steps=2)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    assert _rel(out, ref.predict(Xq, n_steps=2)) < dtol(1e-10)
    assert c.predict(q32).dtype == np.float32
    # refitting on numpy without a device returns to the numpy path
    c.set_params(device=None).fit(x)
    assert not c.torch_fit_
    with pytest.raises(ValueError, match="fitted on numpy"):
        c.predict(tensor(Xq))


def _warned(fit):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est = fit()
    return est, sorted({w.category.__name__ for w in rec})


@pytest.mark.parametrize("estimator", ["full", "pcr", "rrr"])
def test_koopman_torch_clipping_and_pickle(estimator, data):
    """A linear kernel on 2-D states has a rank-2 operator: n_components=5 (and rank=5) give
    two eigenpairs on both paths, with the same warnings ('full': the three spurious
    eigenpairs of zero RKHS norm dropped with a RuntimeWarning; 'pcr'/'rrr':
    ClippedParameterWarning)."""
    x, _, _, Xq = data
    kw = dict(kernel="linear", n_components=5, rank=5, estimator=estimator, alpha=1e-4)
    a, wa = _warned(lambda: KoopmanOperator(**kw).fit(x))
    b, wb = _warned(lambda: KoopmanOperator(**kw).fit(tensor(x)))
    assert wa == wb and wa
    if estimator != "full":
        assert "ClippedParameterWarning" in wb
    assert a.n_components_ == b.n_components_ == 2
    np.testing.assert_allclose(b.eigenvalues_, a.eigenvalues_, rtol=dtol(1e-10))
    b2 = pickle.loads(pickle.dumps(b))
    assert torch.equal(b2.predict(tensor(Xq), n_steps=2),
                       b.predict(tensor(Xq), n_steps=2))


def test_koopman_torch_refusals(data):
    x, X, Y, Xq = data
    xt = tensor(x)
    with pytest.raises(ValueError, match="observables has 5 rows"):
        KoopmanOperator().fit(xt, observables=np.ones(5))
    with pytest.raises(ValueError, match=r"observables\(y\) has shape"):
        KoopmanOperator().fit(xt, observables=lambda Y: Y[:3])
    with pytest.raises(ValueError, match="n_landmarks must be None or a positive integer"):
        KoopmanOperator(n_landmarks=0).fit(xt)  # the landmark options' own validation
    # snapshot shapes: the numpy path's messages, naming y
    for bad in (tensor(Y[:10]), tensor(Y[:, :1]), Y[:10],
                torch.ones(80, 2, 1, dtype=torch.float64, device=TEST_DEVICE)):
        with pytest.raises(ValueError, match="y has shape"):
            KoopmanOperator().fit(tensor(X), bad)
    with pytest.raises(ValueError, match=r"y has shape \(10, 2\)"):
        KoopmanOperator(device=TEST_DEVICE).fit(X, Y[:10])
    with pytest.raises(ValueError, match="lag=200"):
        KoopmanOperator(lag=200).fit(xt)
    with pytest.raises(ValueError, match="minimum of 2 is required"):
        KoopmanOperator().fit(torch.ones(1, 2, dtype=torch.float64, device=TEST_DEVICE))
    with pytest.raises(ValueError, match="NaN|finite"):
        KoopmanOperator().fit(torch.full((5, 2), float("nan"), dtype=torch.float64,
            device=TEST_DEVICE))
    with pytest.raises(ValueError, match="not available on the torch backend"):
        KoopmanOperator(kernel=lambda A, B: A @ B.T).fit(xt)
    with pytest.raises(ValueError, match="fitted on numpy"):
        KoopmanOperator(n_components=2).fit(x).predict(tensor(Xq))
    b = KoopmanOperator(n_components=2).fit(xt)
    with pytest.raises(ValueError, match="expecting 2 features"):
        b.predict(torch.ones(4, 3, dtype=torch.float64, device=TEST_DEVICE))
    with pytest.raises(ValueError, match="observables"):
        b.predict(tensor(Xq), observable=True)
    with pytest.raises(ValueError, match="modes need a reduced-rank"):
        b.modes()


def test_koopman_torch_default_parameters_conditioning(data):
    """With the defaults (alpha=1e-6, gamma=1/d) the auxiliary matrix and the RRR problem are
    ill-conditioned (nε = 1e-4 against numerically zero eigenvalues of G): the numpy path itself
    moves by ~2e-8 ('full' eigenvalues) and ~2e-9 ('rrr' forecasts) when the inputs are
    perturbed at the rounding level, and the torch path agrees to that level (2.6e-8, 1.5e-8
    measured), not to 1e-10."""
    x, _, _, Xq = data
    for estimator in ("full", "rrr"):
        kw = dict(estimator=estimator, rank=6, n_components=4)
        a = _fit(KoopmanOperator(**kw), x)
        b = _fit(KoopmanOperator(**kw), tensor(x))
        lam = a.eigenvalues_
        assert np.max(np.abs(b.eigenvalues_ - lam)) <= 1e-6 * abs(lam[0])
        assert _rel(b.predict(Xq, n_steps=3), a.predict(Xq, n_steps=3)) < 1e-6


# ------------------------------------------------------------------ PerronFrobeniusOperator
from asymkern.operators import (  # noqa: E402
    IllConditionedLaggedGramWarning,
    PerronFrobeniusOperator,
)


@pytest.mark.parametrize("kernel,params", KERNELS)
@pytest.mark.parametrize("estimator", ["full", "pcr", "rrr"])
@pytest.mark.parametrize("kind", ["trajectory", "pairs"])
def test_perron_frobenius_torch_equals_numpy(kernel, params, estimator, kind, data):
    """Eigenvalues, eigenfunctions (on the lagged samples), the G_XY solver and its rcond, and
    the warnings (here G_XY is ill-conditioned: 'full' regularises it on both paths)."""
    X, y = _args(kind, data)
    Xq = data[3]
    keep = [A.copy() for A in data]
    kw = dict(kernel=kernel, kernel_params=params, alpha=1e-4, estimator=estimator, rank=6,
              n_components=4)
    a, wa = _warned(lambda: PerronFrobeniusOperator(**kw).fit(X, y))
    b, wb = _warned(lambda: PerronFrobeniusOperator(**kw).fit(_tensor(X), _tensor(y)))
    assert wa == wb
    assert b.torch_fit_ and b.n_components_ == a.n_components_ and b.rank_ == a.rank_
    assert isinstance(b.eigenvalues_, np.ndarray)
    assert b.eigenvalues_.dtype == a.eigenvalues_.dtype
    lam = a.eigenvalues_
    assert np.max(np.abs(b.eigenvalues_ - lam)) <= dtol(1e-9) * abs(lam[0])
    assert _phase_err(b.eigenfunctions_(Xq), a.eigenfunctions_(Xq)) < dtol(1e-8)
    np.testing.assert_array_equal(b.eigenfunctions_.centers, a.eigenfunctions_.centers)
    assert b.lagged_gram_solver_ == a.lagged_gram_solver_
    if estimator == "full":
        assert b.lagged_gram_rcond_ == pytest.approx(a.lagged_gram_rcond_, rel=1e-3)
    for A, B in zip(data, keep):
        np.testing.assert_array_equal(A, B)


def test_perron_frobenius_torch_lu_branch_against_dense_reference(data):
    """A well-conditioned G_XY (gamma=20, 40 steps): the exact LU inverse on both paths, no
    warning; the eigenvalues are those of G_XY⁻¹ (G + nεI)⁻¹ G_XY G_XY (numpy's dense eig) and
    the eigenfunctions k(·, Y) w are RKHS-normalised eigenvectors of that matrix."""
    x = data[0][:40]
    X0, X1 = x[:-1], x[1:]
    n, eps = X0.shape[0], 1e-4
    kw = dict(kernel_params={"gamma": 20.0}, alpha=eps, n_components=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = PerronFrobeniusOperator(**kw).fit(x)
        b = PerronFrobeniusOperator(**kw).fit(tensor(x))
    assert a.lagged_gram_solver_ == b.lagged_gram_solver_ == "lu"
    assert b.lagged_gram_rcond_ == pytest.approx(a.lagged_gram_rcond_, rel=dtol(1e-8))
    k = get_kernel("rbf", gamma=20.0)
    G = KernelMatrix(k, X0).to_array()
    Gxy = KernelMatrix(k, X0, X1).to_array()
    H = KernelMatrix(k, X1).to_array()
    A = np.linalg.solve(Gxy, np.linalg.solve(G + n * eps * np.eye(n), Gxy @ Gxy))
    ev = np.linalg.eigvals(A)
    ev = ev[np.argsort(-np.abs(ev), kind="stable")][:5]
    lam = b.eigenvalues_
    assert np.max(np.abs(np.sort_complex(lam) - np.sort_complex(ev))) < dtol(1e-9) * abs(ev[0])
    assert np.max(np.abs(lam - a.eigenvalues_)) < dtol(1e-10) * abs(lam[0])
    C = b.eigenfunctions_.coef
    np.testing.assert_allclose(np.real(np.einsum("ij,ij->j", np.conj(C), H @ C)), 1.0,
                               atol=dtol(1e-10))
    np.testing.assert_allclose(A @ C, C * lam[None, :], atol=1e-7 * np.max(np.abs(C)))
    # the numpy operator_ (its factors made on first use) has the same eigenvalues
    res = b.eig(5, method="auxiliary")
    assert np.max(np.abs(res.eigenvalues - lam)) < dtol(1e-10) * abs(lam[0])


def test_perron_frobenius_torch_tikhonov_warning_and_device_numpy(data):
    x = data[0]
    kw = dict(kernel_params={"gamma": 5.0}, alpha=1e-4, n_components=3)
    with pytest.warns(IllConditionedLaggedGramWarning, match="ill-conditioned"):
        b = PerronFrobeniusOperator(**kw).fit(tensor(x))
    assert b.lagged_gram_solver_ == "tikhonov"
    with pytest.warns(IllConditionedLaggedGramWarning):
        a = PerronFrobeniusOperator(**kw).fit(x)
        c = PerronFrobeniusOperator(**kw, device=TEST_DEVICE).fit(x)
    assert c.torch_fit_ and isinstance(c.eigenvalues_, np.ndarray) and c.n_features_in_ == 2
    assert np.max(np.abs(c.eigenvalues_ - a.eigenvalues_)) <= dtol(1e-10) * abs(a.eigenvalues_[0])
    # float32 tensors: fitted in float64 all the same
    d = _fit(PerronFrobeniusOperator(**kw), tensor(x.astype(np.float32)))
    e = _fit(PerronFrobeniusOperator(**kw), x.astype(np.float32))
    assert np.max(np.abs(d.eigenvalues_ - e.eigenvalues_)) <= dtol(1e-10) * abs(e.eigenvalues_[0])


def test_perron_frobenius_torch_refusals(data):
    _, X, Y, _ = data
    Xt = tensor(X)
    with pytest.raises(ValueError, match=r"y has shape \(10, 2\)"):
        PerronFrobeniusOperator().fit(Xt, tensor(Y[:10]))
    with pytest.raises(ValueError, match="y has shape"):
        PerronFrobeniusOperator(device=TEST_DEVICE).fit(X, Y[:, :1])
    with pytest.raises(ValueError, match="estimator must be one of"):
        PerronFrobeniusOperator(estimator="svd").fit(Xt, tensor(Y))
    with pytest.raises(ValueError, match="not available on the torch backend"):
        PerronFrobeniusOperator(kernel=lambda A, B: A @ B.T).fit(Xt, tensor(Y))


def test_koopman_torch_large_n_numpy_uses_arpack(monkeypatch):
    """n = 399 pairs with the ARPACK threshold at 150 (default 1500): both paths switch to
    ARPACK for 'full' (n > 150; on torch its products
    run on the device), so 'full' agrees to rounding, eigenfunctions included without any
    phase alignment, even when ``n_components`` = 9 cuts a complex-conjugate pair (a dense
    solver may keep the other member of the pair: the torch path did, before it used
    ARPACK). 'pcr' and 'rrr' (n > 200: both executors run the same ARPACK call, its products
    on the device) agree to rounding (rrr forecasts 3.6e-12 apart, measured)."""
    import asymkern.operators._numerics as numerics

    monkeypatch.setattr(numerics, "ARPACK_MIN_PAIRS", 150)
    rng = np.random.RandomState(0)
    R = 0.95 * np.array([[0.9, -0.3], [0.3, 0.9]])
    x = np.zeros((400, 2))
    for t in range(399):
        x[t + 1] = R @ x[t] + 0.2 * rng.randn(2)
    Xq = 0.5 * rng.randn(15, 2)
    cases = [(KoopmanOperator, "full", k, 1e-10) for k in (6, 9)] + [
        (PerronFrobeniusOperator, "full", 9, 1e-10), (KoopmanOperator, "pcr", 6, 1e-10),
        (KoopmanOperator, "rrr", 6, 1e-9)]  # 3.6e-12 measured
    for cls, estimator, k, tol in cases:
        tol = dtol(tol)
        kw = dict(kernel_params={"gamma": 5.0}, alpha=1e-4, estimator=estimator, rank=8,
                  n_components=k)
        a = _fit(cls(**kw), x)
        b = _fit(cls(**kw), tensor(x))
        lam = a.eigenvalues_
        assert np.max(np.abs(b.eigenvalues_ - lam)) <= dtol(1e-10) * abs(lam[0])
        if estimator == "full":  # the same ARPACK run: no phase left free
            assert _rel(b.eigenfunctions_(Xq), a.eigenfunctions_(Xq)) < dtol(1e-9)
        if cls is KoopmanOperator:
            got = b.predict(tensor(Xq), n_steps=3)
            assert _rel(got, a.predict(Xq, n_steps=3)) < tol


def test_koopman_torch_validates_landmark_options(data):
    x = data[0]
    with pytest.raises(ValueError, match="landmarks must be 'uniform' or an index array"):
        KoopmanOperator(landmarks="kmeans").fit(tensor(x))


@pytest.mark.parametrize("estimator", ["full", "pcr", "rrr"])
@pytest.mark.parametrize("landmarks", [None, 50])
@pytest.mark.parametrize("kind", ["array", "1d", "tensor", "callable"])
def test_koopman_torch_observables_equal_numpy(estimator, landmarks, kind, data):
    """observables on torch (exact and landmark estimators): forecasts of g K̂ᵏ steps ahead and
    the Koopman modes of the observables equal the numpy path's. A callable gets the shifted
    samples in the type of the input (tensors for tensor input).

    The forecasts are compared to 1e-8 of their largest entry: with 50 landmarks the whitening
    T = Q Λ^{-1/2} of K_LL keeps eigenvalues down to m·eps·λ_max, and the 'full' forecasts move
    by 1.2e-10 (relative) when the inputs are perturbed by 1e-14, so rounding alone puts the two
    paths 1.4e-11 apart (measured with other BLAS kernels): 1e-10 sat at the rounding floor."""
    x = data[0]
    g = np.c_[x[:, 0] ** 2, np.sin(x[:, 1])]
    obs_np = {"array": g, "1d": g[:, 0], "tensor": g, "callable": lambda Y: Y[:, :1] ** 2}[kind]
    obs_t = {"array": g, "1d": g[:, 0], "tensor": tensor(g),
             "callable": lambda Y: Y[:, :1] ** 2}[kind]
    kw = dict(estimator=estimator, alpha=1e-4, kernel_params={"gamma": 5.0}, n_components=3,
              rank=5, n_landmarks=landmarks, random_state=0)
    a = KoopmanOperator(**kw).fit(x, observables=obs_np)
    seen = []

    def spy(Y):
        seen.append(type(Y))
        return obs_t(Y)

    b = KoopmanOperator(**kw).fit(tensor(x),
                                  observables=spy if kind == "callable" else obs_t)
    if kind == "callable":
        assert seen == [torch.Tensor]
    Xq = x[:7]
    for k in (1, 3):
        pa = a.predict(Xq, n_steps=k, observable=True)
        pb = b.predict(tensor(Xq), n_steps=k, observable=True)
        assert is_torch_tensor(pb) and pb.shape == pa.shape
        np.testing.assert_allclose(_np(pb), pa, rtol=0, atol=dtol(1e-8) * np.abs(pa).max())
    if estimator != "full":  # ψ_i m_i is free of the eigenvectors' phase
        ea, eb = a.eigenfunctions_(Xq), b.eigenfunctions_(Xq)
        ta = np.einsum("ni,ij->nij", ea, a.modes(observable=True))
        tb = np.einsum("ni,ij->nij", eb, b.modes(observable=True))
        np.testing.assert_allclose(tb, ta, rtol=0, atol=dtol(1e-9) * np.abs(ta).max())


def test_koopman_torch_observables_with_pairs(data):
    """Snapshot pairs: the observables are given at the rows of y (no lag offset)."""
    _, X, Y, Xq = data
    g = Y[:, :1] ** 2 + Y[:, 1:]
    kw = dict(estimator="pcr", rank=4, n_components=2, kernel_params={"gamma": 2.0},
              alpha=1e-4)
    a = KoopmanOperator(**kw).fit(X, Y, observables=g)
    b = KoopmanOperator(**kw, device=TEST_DEVICE).fit(X, Y, observables=g)
    pb = b.predict(Xq, n_steps=2, observable=True)
    assert isinstance(pb, np.ndarray)
    np.testing.assert_allclose(pb, a.predict(Xq, n_steps=2, observable=True), rtol=dtol(1e-10),
                               atol=dtol(1e-12))


def test_koopman_torch_arpack_no_convergence_falls_back_to_dense(monkeypatch):
    """As on the numpy path, ARPACK's rare non-convergence falls back to the dense solver."""
    from scipy.sparse.linalg import ArpackNoConvergence

    import asymkern.operators._numerics as numerics  # the ARPACK call of every executor

    monkeypatch.setattr(numerics, "ARPACK_MIN_PAIRS", 150)  # n = 199 runs ARPACK
    rng = np.random.RandomState(1)
    x = np.cumsum(0.1 * rng.randn(200, 2), axis=0)
    kw = dict(kernel_params={"gamma": 5.0}, alpha=1e-4, n_components=4)
    want = _fit(KoopmanOperator(**kw), tensor(x)).eigenvalues_
    calls = []

    def fail(A, k):
        calls.append(k)
        raise ArpackNoConvergence("no convergence", np.empty(0), np.empty((0, 0)))

    monkeypatch.setattr(numerics, "_arpack_top", fail)
    got = _fit(KoopmanOperator(**kw), tensor(x)).eigenvalues_
    assert calls == [4]
    assert np.max(np.abs(got - want)) <= dtol(1e-10) * abs(want[0])


@pytest.mark.parametrize("cls, kw", [(KoopmanOperator, {}),
                                     (KoopmanOperator, {"estimator": "rrr", "rank": 2}),
                                     (KoopmanOperator, {"n_landmarks": 20, "random_state": 0}),
                                     ("pf", {}), ("pf", {"estimator": "pcr", "rank": 2})])
def test_torch_fit_refuses_a_bad_timestep(cls, kw, data):
    """Issue 29: the torch executor refuses timestep <= 0, NaN, inf and non-numbers as the
    numpy path does (numpy input with device='cpu' and tensor input)."""
    from asymkern.operators import PerronFrobeniusOperator

    cls = PerronFrobeniusOperator if cls == "pf" else cls
    x = data[0]
    for value, err in ((-1.0, ValueError), (0, ValueError), (float("nan"), ValueError),
                       (float("inf"), ValueError), ("1", TypeError)):
        with pytest.raises(err, match="timestep"):
            cls(timestep=value, n_components=2, **kw).fit(tensor(x))
        with pytest.raises(err, match="timestep"):
            cls(timestep=value, n_components=2, device=TEST_DEVICE, **kw).fit(x)
    b = _fit(cls(timestep=0.5, n_components=2, **kw), tensor(x))
    lam = np.abs(b.eigenvalues_)
    assert np.all(b.timescales_ > 0)
    np.testing.assert_allclose(b.timescales_[lam < 1], -0.5 / np.log(lam[lam < 1]),
                               rtol=1e-12)


def test_koopman_torch_observables_and_score_refusals(data):
    """Issue 29: observables with no column or complex values, and bad score weights, on the
    torch path (tensor input and tensor weights)."""
    x = data[0]
    xt = tensor(x)
    with pytest.raises(ValueError, match="observables has 0 columns"):
        KoopmanOperator(n_components=2).fit(xt, observables=torch.zeros(len(x), 0,
                                                                           dtype=torch.float64))
    with pytest.raises(ValueError, match=r"observables\(y\) has shape \(109, 0\)"):
        KoopmanOperator(n_components=2).fit(xt, observables=lambda Y: Y[:, :0])
    with pytest.raises(ValueError, match=r"observables\(y\) returned complex values"):
        KoopmanOperator(n_components=2).fit(xt, observables=lambda Y: Y * (1 + 1j))
    with pytest.raises(ValueError, match="observables is complex-valued"):
        KoopmanOperator(n_components=2).fit(xt, observables=torch.ones(len(x), 1,
                                                                          dtype=torch.complex128))
    est = KoopmanOperator(n_components=2).fit(xt)
    w = torch.ones(len(x) - 1, dtype=torch.float64)
    w[0] = -50.0
    with pytest.raises(ValueError, match="sample_weight has negative values"):
        est.score(xt, sample_weight=w)
    with pytest.raises(ValueError, match="sample_weight is complex-valued"):
        est.score(xt, sample_weight=torch.ones(len(x) - 1, dtype=torch.complex128))
    assert est.score(xt, sample_weight=torch.ones(len(x) - 1)) == pytest.approx(est.score(xt))
