"""Dask part 2: AsK-LS (Nyström option) and landmark RKHS operators on dask arrays.

Every Dask result is compared with the in-memory estimator on the same data (an independent
executor): agreement to 1e-10 relative (single- and multi-chunk), float32 kept, bitwise for a
fixed chunking across schedulers, nothing n-sized gathered, pickles without dask.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from _dask_helpers import rel, synchronous_scheduler, watch_client  # noqa: E402, F401 - autouse fixture

from asymkern._dask import is_dask_array  # noqa: E402
from asymkern.lssvm import AsKLSClassifier, IllConditionedWarning, askls_solve  # noqa: E402
from asymkern.lssvm._solvers import (  # noqa: E402
    LowRankStats,
    _AsymLowRank,
    askls_lowrank_reduced,
)
from asymkern.operators import ConditionalMeanEmbedding, KoopmanOperator  # noqa: E402


def clf_data(n=240, classes=2, seed=0, dtype=np.float64):
    X, y = make_classification(n, 5, n_informative=3, n_classes=classes, random_state=seed)
    return X.astype(dtype), y


def ou(N=800, theta=1.0, tau=0.1, seed=0):
    rng = np.random.default_rng(seed)
    a = np.exp(-theta * tau)
    x = np.empty(N)
    x[0] = 0.0
    noise = rng.normal(size=N) * np.sqrt((1 - a * a) / 2)
    for t in range(1, N):
        x[t] = a * x[t - 1] + noise[t]
    return x[:, None]


ASK = dict(kernel_params={"bandwidth": 3.0}, C=10.0, random_state=0,
           nystrom={"n_components": 15, "n_row_landmarks": 40, "n_col_landmarks": 40})


# ------------------------------------------------------------------ reduced low-rank solver
def test_reduced_lowrank_solver_matches_dense_and_fallback():
    rng = np.random.default_rng(6)
    n, r = 60, 5
    U, W = rng.standard_normal((n, r)), rng.standard_normal((n, r))
    s = np.sort(rng.random(r))[::-1] + 0.5
    Y = np.sign(rng.standard_normal((n, 3)))
    ref = askls_solve(U @ np.diag(s) @ W.T, Y, 0.8, method="dense")
    st = LowRankStats.of(U[:25], W[:25], Y[:25]) + LowRankStats.of(U[25:], W[25:], Y[25:])
    red = askls_lowrank_reduced(st, s, 0.8)
    a, b = red.expand(U, W, Y)
    assert rel(a, ref.coef[0]) < 1e-9 and rel(b, ref.coef[1]) < 1e-9
    assert rel(red.bias, ref.bias) < 1e-9
    # an exactly singular system (c = σ with U = W = 1/√n): the paper's ridge fallback
    U1 = np.full((64, 1), 1 / 8)
    Y1 = np.sign(rng.standard_normal((64, 1)))
    with pytest.warns(IllConditionedWarning):
        red = askls_lowrank_reduced(LowRankStats.of(U1, U1, Y1), np.array([1.0]), 1.0)
    assert red.fallback
    # the same fallback as the n-sized structured solve (complex shift) ...
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inner = _AsymLowRank(U1, np.array([1.0]), U1)
        sol = askls_solve(None, Y1, 1.0, method="lowrank", _inner=inner)
    a, _ = red.expand(U1, U1, Y1)
    assert sol.fallback and rel(a, sol.coef[0]) < 1e-12
    # ... and the minimiser of ‖A₀x − b‖² + ‖x‖² (A₀ of eq. 6 in signed coefficients)
    from asymkern.lssvm import askls_kkt_matrix

    A0 = askls_kkt_matrix(U1 @ U1.T, np.ones(64), 1.0)
    rhs = np.concatenate([[0.0, 0.0], Y1[:, 0], Y1[:, 0]])
    x = np.linalg.solve(A0.T @ A0 + np.eye(A0.shape[0]), A0.T @ rhs)
    assert rel(a[:, 0], x[2:66]) < 1e-10


# ------------------------------------------------------------------ AsK-LS agreement
@pytest.mark.parametrize("kernel", ["sne", "rbf"])
@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("chunks", [None, 70])
def test_askls_dask_matches_in_memory(kernel, classes, chunks):
    X, y = clf_data(classes=classes)
    params = {"bandwidth": 3.0} if kernel == "sne" else {"gamma": 0.3}
    kw = dict(ASK, kernel=kernel, kernel_params=params)
    mem = AsKLSClassifier(**kw).fit(X, y)
    c = chunks or X.shape[0]
    Xd, yd = da.from_array(X, chunks=c), da.from_array(y, chunks=c)
    est = AsKLSClassifier(**kw).fit(Xd, yd)
    assert est.coef_source_ is None and est.X_fit_ is None
    np.testing.assert_array_equal(est.classes_, mem.classes_)
    np.testing.assert_array_equal(est.nystrom_landmarks_[0], mem.nystrom_landmarks_[0])
    assert rel(est.intercept_, mem.intercept_) < 1e-10
    Xn = X[:50] + 0.1
    F = est.decision_function(da.from_array(Xn, chunks=20))
    assert is_dask_array(F) and F.chunks[0] == (20, 20, 10)
    assert rel(F.compute(), mem.decision_function(Xn)) < 1e-10
    assert isinstance(est.decision_function(Xn), np.ndarray)
    assert rel(est.decision_function(Xn), mem.decision_function(Xn)) < 1e-10
    fs, ft = est.decision_function(Xn, return_parts=True)
    ms, mt = mem.decision_function(Xn, return_parts=True)
    assert rel(fs, ms) < 1e-10 and rel(ft, mt) < 1e-10
    p = est.predict(da.from_array(Xn, chunks=20))
    assert is_dask_array(p)
    np.testing.assert_array_equal(p.compute(), mem.predict(Xn))
    # an in-memory model predicts on dask input too
    assert rel(mem.decision_function(da.from_array(Xn, chunks=25)).compute(),
               mem.decision_function(Xn)) < 1e-10


@pytest.mark.parametrize("merge", ["source", "target"])
def test_askls_dask_merge_and_numpy_labels(merge):
    X, y = clf_data()
    kw = dict(ASK, kernel="sne", merge=merge)
    mem = AsKLSClassifier(**kw).fit(X, y)
    est = AsKLSClassifier(**kw).fit(da.from_array(X, chunks=60), y)  # numpy y
    assert rel(est.decision_function(X[:40]), mem.decision_function(X[:40])) < 1e-10


def test_askls_float32_kept_and_chunking_invariance():
    X, y = clf_data(dtype=np.float32)
    kw = dict(ASK, kernel="sne")
    mem = AsKLSClassifier(**kw).fit(X, y)
    est = AsKLSClassifier(**kw).fit(da.from_array(X, chunks=50), da.from_array(y, chunks=50))
    F = est.decision_function(da.from_array(X[:30], chunks=10))
    assert F.dtype == np.float32 and F.compute().dtype == np.float32
    assert rel(F.compute(), mem.decision_function(X[:30])) < 1e-5
    X64 = X.astype(np.float64)
    ref = AsKLSClassifier(**kw).fit(da.from_array(X64, chunks=240), y).decision_function(X64)
    for c in (33, (100, 0, 140)):
        Xd = da.from_array(X64, chunks=(c, 5) if isinstance(c, tuple) else c)
        yd = da.from_array(y, chunks=(c,))
        out = AsKLSClassifier(**kw).fit(Xd, yd).decision_function(X64)
        assert rel(out, ref) < 1e-12


def test_askls_csr_chunks():
    import scipy.sparse as sp

    Xs = sp.random(200, 30, density=0.2, format="csr", random_state=1)
    rs = np.asarray(Xs.sum(axis=1)).ravel()
    y = (rs > np.median(rs)).astype(int)
    Xd = da.concatenate([da.from_array(Xs[i:i + 50], chunks=Xs[i:i + 50].shape, asarray=False)
                         for i in range(0, 200, 50)])
    kw = dict(ASK, kernel="rbf", kernel_params={"gamma": 0.5})
    mem = AsKLSClassifier(**kw).fit(Xs, y)
    est = AsKLSClassifier(**kw).fit(Xd, y)
    assert rel(est.decision_function(Xd[:20]).compute(), mem.decision_function(Xs[:20])) < 1e-10


def test_askls_classes_missing_from_chunks():
    X, y = clf_data(classes=3)
    order = np.argsort(y, kind="stable")  # sorted labels: every chunk holds one class only
    X, y = X[order], y[order]
    kw = dict(ASK, kernel="rbf", kernel_params={"gamma": 0.3})
    mem = AsKLSClassifier(**kw).fit(X, y)
    est = AsKLSClassifier(**kw).fit(da.from_array(X, chunks=40), da.from_array(y, chunks=40))
    np.testing.assert_array_equal(est.classes_, [0, 1, 2])
    assert rel(est.decision_function(X[::5]), mem.decision_function(X[::5])) < 1e-10


# ------------------------------------------------------------------ operators agreement
@pytest.mark.parametrize("chunks", [None, 70])
@pytest.mark.parametrize("y_dask", [True, False])
def test_cme_dask_matches_in_memory(chunks, y_dask):
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (300, 2))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] ** 2]) + 0.05 * rng.normal(size=(300, 2))
    kw = dict(kernel_x_params={"gamma": 1.0}, alpha=1e-3, n_landmarks=40,
              random_state=0)
    mem = ConditionalMeanEmbedding(**kw).fit(X, Y)
    c = chunks or 300
    est = ConditionalMeanEmbedding(**kw).fit(da.from_array(X, chunks=c),
                                             da.from_array(Y, chunks=(c, 2)) if y_dask else Y)
    np.testing.assert_array_equal(est.landmarks_, mem.landmarks_)
    Xt = rng.uniform(-2, 2, (45, 2))
    P = est.predict(da.from_array(Xt, chunks=20))
    assert is_dask_array(P)
    assert rel(P.compute(), mem.predict(Xt)) < 1e-10
    assert rel(est.predict(Xt), mem.predict(Xt)) < 1e-10
    with pytest.raises(ValueError, match="fitted on dask"):
        est.svd(2)
    with pytest.raises(ValueError, match="does not keep"):
        est.weights(Xt)


@pytest.mark.parametrize("chunks", [None, 130])
@pytest.mark.parametrize("pairs", [False, True])
def test_koopman_dask_matches_in_memory(chunks, pairs):
    T = ou()
    kw = dict(kernel_params={"gamma": 0.5}, alpha=1e-4, n_components=3, timestep=0.1,
              n_landmarks=50, random_state=1)
    mem = KoopmanOperator(**kw).fit(T)
    c = chunks or T.shape[0]
    if pairs:  # x_t and x_{t+1} as two equally chunked arrays
        est = KoopmanOperator(**kw).fit(da.from_array(T[:-1], chunks=(c, 1)),
                                        da.from_array(T[1:], chunks=(c, 1)))
    else:
        est = KoopmanOperator(**kw).fit(da.from_array(T, chunks=(c, 1)))
    np.testing.assert_array_equal(est.landmarks_, mem.landmarks_)
    assert rel(est.eigenvalues_, mem.eigenvalues_) < 1e-10
    Xq = np.linspace(-1.2, 1.2, 31)[:, None]
    E = est.eigenfunctions_(da.from_array(Xq, chunks=10))
    assert is_dask_array(E)
    assert rel(E.compute(), mem.eigenfunctions_(Xq)) < 1e-10
    assert rel(est.predict(da.from_array(Xq, chunks=10)).compute(), mem.predict(Xq)) < 1e-10
    np.testing.assert_allclose(est.timescales_, mem.timescales_, rtol=1e-10)
    # OU: eigenvalues exp(−kθτ)
    np.testing.assert_allclose(np.real(est.eigenvalues_), np.exp(-0.1 * np.arange(3)), atol=0.06)


def test_operators_float32_kept():
    T = ou().astype(np.float32)
    kw = dict(n_landmarks=30, random_state=0, n_components=2)
    mem = KoopmanOperator(**kw).fit(T)
    est = KoopmanOperator(**kw).fit(da.from_array(T, chunks=(200, 1)))
    P = est.predict(da.from_array(T[:50], chunks=(25, 1)))
    assert P.dtype == np.float32 and P.compute().dtype == np.float32
    assert rel(P.compute(), mem.predict(T[:50])) < 1e-6


def test_bitwise_across_schedulers():
    X, y = clf_data()
    T = ou()
    out = {}
    for sched in ("synchronous", "threads"):
        with dask.config.set(scheduler=sched):
            a = AsKLSClassifier(**dict(ASK, kernel="sne")).fit(da.from_array(X, chunks=70),
                                                              da.from_array(y, chunks=70))
            k = KoopmanOperator(n_landmarks=40, random_state=0, n_components=3).fit(
                da.from_array(T, chunks=(130, 1)))
            out[sched] = (a.decision_function(X[:30]), k.eigenvalues_, k.predict(T[:20]))
    for p, q in zip(out["synchronous"], out["threads"]):
        np.testing.assert_array_equal(p, q)


# ------------------------------------------------------------------ nothing big gathered
def test_nothing_n_sized_reaches_the_client(monkeypatch):
    X, y = clf_data(n=900)
    T = ou(900)
    sizes = watch_client(monkeypatch, lambda o: int(getattr(o, "nbytes", 8)))
    est = AsKLSClassifier(**dict(ASK, kernel="sne")).fit(da.from_array(X, chunks=150),
                                                         da.from_array(y, chunks=150))
    F = est.decision_function(da.from_array(X[:100], chunks=50))
    KoopmanOperator(n_landmarks=40, random_state=0).fit(da.from_array(T, chunks=(150, 1)))
    ConditionalMeanEmbedding(n_landmarks=40, random_state=0).fit(
        da.from_array(X, chunks=150), da.from_array(X[:, :2], chunks=(150, 2)))
    assert sizes, "nothing was recorded"
    # every gathered object is smaller than one n-vector (nothing n×r, n×m or even n×1)
    assert max(sizes) < X.shape[0] * 8, sorted(sizes)[-5:]
    monkeypatch.undo()
    assert F.shape == (100,)


# ------------------------------------------------------------------ persistence
_UNPICKLE = """
import pickle, sys
import numpy as np
sys.modules["dask"] = None  # any dask object inside the pickle would fail to load
sys.modules["distributed"] = None
models, X, T = pickle.load(open(sys.argv[1], "rb"))
outs = [models[0].decision_function(X), models[1].predict(X[:, :2]),
        models[2].predict(T), models[2].eigenfunctions_(T)]
pickle.dump(outs, open(sys.argv[2], "wb"))
"""


def test_pickled_models_hold_no_dask_objects(tmp_path):
    X, y = clf_data()
    T = ou()
    ask = AsKLSClassifier(**dict(ASK, kernel="rbf", kernel_params={"gamma": 0.3})).fit(
        da.from_array(X, chunks=60), da.from_array(y, chunks=60))
    cme = ConditionalMeanEmbedding(n_landmarks=30, random_state=0).fit(
        da.from_array(X[:, :2], chunks=60), da.from_array(X[:, 2], chunks=60))
    koop = KoopmanOperator(n_landmarks=30, random_state=0, n_components=2).fit(
        da.from_array(T, chunks=(100, 1)))
    src, dst = tmp_path / "m.pkl", tmp_path / "out.pkl"
    with open(src, "wb") as fh:
        pickle.dump(([ask, cme, koop], X[:20], T[:20]), fh)
    assert src.stat().st_size < 200_000
    import os

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    subprocess.run([sys.executable, "-c", _UNPICKLE, str(src), str(dst)], check=True,
                   timeout=120, env=env)
    with open(dst, "rb") as fh:
        outs = pickle.load(fh)
    ref = [ask.decision_function(X[:20]), cme.predict(X[:20, :2]), koop.predict(T[:20]),
           koop.eigenfunctions_(T[:20])]
    for o, r in zip(outs, ref):
        np.testing.assert_array_equal(o, r)
    # the unpickled model predicts on dask input as well
    back = pickle.loads(pickle.dumps(ask))
    assert rel(back.decision_function(da.from_array(X[:20], chunks=7)).compute(), ref[0]) < 1e-12
    # a row-normalised (SNE) model needs the training set for f_s once it was pickled
    sne = AsKLSClassifier(**dict(ASK, kernel="sne")).fit(da.from_array(X, chunks=60), y)
    with pytest.raises(ValueError, match="no longer holds the training set"):
        pickle.loads(pickle.dumps(sne)).decision_function(X[:5])
    assert sne._dask_reference is not None  # pickling did not strip the live model
    assert np.all(np.isfinite(sne.decision_function(X[:5])))
    tgt = AsKLSClassifier(**dict(ASK, kernel="sne", merge="target")).fit(
        da.from_array(X, chunks=60), y)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(tgt)).decision_function(X[:5]),
                                  tgt.decision_function(X[:5]))


# ------------------------------------------------------------------ bad input
def test_bad_inputs_clear_errors():
    X, y = clf_data()
    Xd, yd = da.from_array(X, chunks=60), da.from_array(y, chunks=60)
    est = AsKLSClassifier(**dict(ASK, kernel="sne"))
    with pytest.raises(ValueError, match=r"y is chunked differently from X.*rechunk"):
        est.fit(Xd, da.from_array(y, chunks=50))
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        est.fit(Xd[Xd[:, 0] > 0], yd)
    with pytest.raises(ValueError, match="y has unknown chunk sizes"):
        est.fit(Xd, yd[yd >= 0])
    Xbad = X.copy()
    Xbad[123, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinity in rows \[120, 180\)"):
        est.fit(da.from_array(Xbad, chunks=60), yd)
    ybad = y.astype(float)
    ybad[7] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):
        est.fit(Xd, da.from_array(ybad, chunks=60))
    with pytest.raises(ValueError, match="1 class"):
        est.fit(Xd, da.zeros(240, chunks=60))
    with pytest.raises(ValueError, match="240"):
        est.fit(Xd, y[:200])
    with pytest.raises(NotImplementedError, match="stack"):
        AsKLSClassifier(**dict(ASK, merge="stack")).fit(Xd, yd)
    with pytest.raises(NotImplementedError, match="needs the Nyström option"):
        AsKLSClassifier(kernel="sne").fit(Xd, yd)
    fitted = AsKLSClassifier(**dict(ASK, kernel="rbf")).fit(Xd, yd)
    with pytest.raises(ValueError, match="features"):
        fitted.decision_function(da.from_array(X[:, :3], chunks=60))
    # operators
    T = ou(200)
    Td = da.from_array(T, chunks=(50, 1))
    with pytest.raises(NotImplementedError, match="needs landmarks"):
        KoopmanOperator().fit(Td)
    with pytest.raises(ValueError, match=r"y is chunked differently from X.*rechunk"):
        KoopmanOperator(n_landmarks=10).fit(Td[:-1], da.from_array(T[1:], chunks=(40, 1)))
    with pytest.raises(ValueError, match=r"y is chunked differently from X"):
        ConditionalMeanEmbedding(n_landmarks=10).fit(Td, da.from_array(T[:, 0], chunks=40))
    Tbad = T.copy()
    Tbad[70] = np.inf
    with pytest.raises(ValueError, match=r"NaN or infinity in rows \[50, 100\)"):
        KoopmanOperator(n_landmarks=10).fit(da.from_array(Tbad, chunks=(50, 1)))
    from asymkern.exceptions import ClippedParameterWarning

    with pytest.warns(ClippedParameterWarning, match="n_landmarks=500 is larger"):
        cme = ConditionalMeanEmbedding(n_landmarks=500).fit(Td, T[:, 0])
    assert cme.n_landmarks_ == 200


# ------------------------------------------------------------------ LocalCluster, processes
def test_local_cluster_processes_smoke():
    distributed = pytest.importorskip("distributed")
    X, y = clf_data()
    T = ou(400)
    kw = dict(ASK, kernel="sne")
    ref_a = AsKLSClassifier(**kw).fit(da.from_array(X, chunks=70), da.from_array(y, chunks=70))
    ref_k = KoopmanOperator(n_landmarks=30, random_state=0, n_components=2).fit(
        da.from_array(T, chunks=(100, 1)))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                  death_timeout=60) as cluster, \
            distributed.Client(cluster, timeout=60):
        with dask.config.set(scheduler="dask.distributed"):
            a = AsKLSClassifier(**kw).fit(da.from_array(X, chunks=70),
                                          da.from_array(y, chunks=70))
            F = a.decision_function(da.from_array(X[:40], chunks=20)).compute()
            k = KoopmanOperator(n_landmarks=30, random_state=0, n_components=2).fit(
                da.from_array(T, chunks=(100, 1)))
            P = k.predict(da.from_array(T[:30], chunks=(10, 1))).compute()
    # worker processes run single-threaded BLAS (distributed sets OMP_NUM_THREADS=1), so the
    # GEMMs may round differently from this process: equal to rounding, not bitwise (the
    # Koopman landmark system with the default bandwidth has cond ~1e6: looser bound there)
    assert rel(F, ref_a.decision_function(X[:40])) < 1e-12
    assert rel(k.eigenvalues_, ref_k.eigenvalues_) < 1e-10
    assert rel(P, ref_k.predict(T[:30])) < 1e-8
