"""Review of the Dask executor under unusual chunkings and schedulers.

Every case compares the Dask path with the in-memory numpy path on the same data, for chunkings
that stress the executor: one row per chunk, one chunk holding everything, very uneven chunks
(1, 97, 2), an empty last chunk, more chunks than workers; chunks along the feature axis and
unknown chunk sizes (boolean-mask indexing) must give a clear error (or work), never a hang or
a wrong result.

Tolerances are scaled by the conditioning of each computation, measured on the in-memory path
itself: the chunks change the order of the sums (and, for the distance kernels, the centre each
block expands about), so κ̂ = max rel(in-memory result under a smaller ``working_memory``, its
blocks summed in another order, in-memory result) / eps is how much that path amplifies a
reordering of its sums, floored at N (the length of a sum), and a Dask result may differ from
the in-memory one by ``100 · eps · κ̂`` (eps of the compared dtype). Dask and in-memory results
are therefore equal to rounding, not bitwise. What is bitwise, and pinned here, is a fixed
chunking across schedulers: synchronous, threaded and a distributed ``LocalCluster`` (threads,
``processes=False``) with more chunks than workers.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from _dask_helpers import one_blas_thread, rel, synchronous_scheduler  # noqa: E402, F401

from asymkern import config_context  # noqa: E402
from asymkern._dask import is_dask_array  # noqa: E402
from asymkern.decomposition import KernelSVD  # noqa: E402
from asymkern.kernels import KernelMatrix, get_kernel  # noqa: E402
from asymkern.linalg import asymmetric_nystrom, top_svd  # noqa: E402
from asymkern.lssvm import AsKLSClassifier  # noqa: E402
from asymkern.nystrom import NystromKernelRidge, NystromSVC  # noqa: E402
from asymkern.operators import (  # noqa: E402
    ConditionalMeanEmbedding,
    CovarianceOperator,
    KernelCCA,
    KoopmanOperator,
)

N, M, D = 100, 40, 4


def rows_for(n: int, chunking: str) -> tuple:
    """The row chunks of ``chunking`` for n rows."""
    return {"rows1": (1,) * n,  # one row per chunk
            "whole": (n,),  # one chunk holding everything
            "uneven": (1, n - 3, 2),
            "empty_last": (60, n - 60, 0),  # dask allows a zero-row chunk
            }[chunking]


#: row chunkings of the N training rows
ROWS = {c: rows_for(N, c) for c in ("rows1", "whole", "uneven", "empty_last")}
#: row chunkings of the M columns' set Z, paired with those of X (one chunk beside X's 1-row
#: chunks: 1-row chunks on both sides would make N·M tasks per product)
ZROWS = {"rows1": (M,), "whole": (M,), "uneven": (M - 3, 1, 2),
         "empty_last": (0, 25, M - 25)}


def _data(dtype=np.float64):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D))
    Z = rng.normal(size=(M, D))
    Xn = rng.normal(size=(9, D))
    return X.astype(dtype), Z.astype(dtype), Xn.astype(dtype)


def _clf(dtype=np.float64):
    X, y = make_classification(N, D, n_informative=3, n_redundant=0, random_state=0)
    return X.astype(dtype), y


def chunked(A, rows):
    """A dask array of A with the given row chunks and whole rows (all features in one chunk)."""
    return da.from_array(A, chunks=(rows,) + tuple((k,) for k in A.shape[1:]))


def unknown_rows(A):
    """A dask array of A whose row chunk sizes are unknown (NaN): boolean-mask indexing."""
    Ad = da.from_array(A, chunks=(30,) + A.shape[1:])
    keep = da.from_array(np.ones(A.shape[0], dtype=bool), chunks=30)
    out = Ad[keep]
    assert np.isnan(out.shape[0]) or any(np.isnan(c) for c in out.chunks[0])
    return out


def host(A):
    return np.asarray(A.compute() if is_dask_array(A) else A)


def scaled_tol(run, dtype=np.float64, factor: float = 100.0) -> float:
    """``factor · eps(dtype) · κ̂`` for results compared with ``run()``, the in-memory result.

    κ̂ = max over ``working_memory`` ∈ {0.001, 0.01} MiB of rel(``run()`` under it, ``run()``)
    / eps, at least N: how much the in-memory path amplifies a reordering of its sums (its
    blocks follow ``working_memory``), the perturbation a chunking makes.
    """
    eps = float(np.finfo(dtype).eps)
    ref = run()
    kappa = float(N)
    for wm in (0.001, 0.01):
        with config_context(working_memory=wm):
            kappa = max(kappa, rel(run(), ref) / eps)
    return factor * eps * kappa


def bounded(func, seconds: float = 60.0):
    """``func()`` run in a thread joined for at most ``seconds``; a hang fails the test (the
    environment has no pytest-timeout)."""
    from asymkern import get_config

    box: dict = {}
    settings = get_config()  # the asymkern settings are per thread: carried over

    def target():
        try:
            with config_context(**settings):
                box["value"] = func()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = exc

    with dask.config.set(scheduler="synchronous"):  # the config is process-wide
        t = threading.Thread(target=target, daemon=True)
        t.start()
        t.join(seconds)
    if t.is_alive():
        pytest.fail(f"did not finish within {seconds} s (a hang)")
    if "error" in box:
        raise box["error"]
    return box.get("value")


# ------------------------------------------------------------------- DaskKernelMatrix layer
@pytest.mark.parametrize("center,chunking", [  # one-row chunks (slow): centred only
    (center, chunking) for center in (False, True) for chunking in ROWS
    if center or chunking != "rows1"])
@pytest.mark.parametrize("name", ["sne", "t", "softmax"])
def test_row_normalised_products_every_chunking(name, center, chunking):
    """matmat / rmatmat / block / cols of a row-normalised (and centred) kernel equal the
    in-memory ones whatever the chunks; products chunked like X (resp. Z), empty chunks
    dropped; operands left unchanged."""
    X, Z, _ = _data()
    k = get_kernel(name, **({} if name == "softmax" else {"gamma": 0.3}))
    ref = KernelMatrix(k, X, Z, center=center)
    Xd, Zd = chunked(X, ROWS[chunking]), chunked(Z, ZROWS[chunking])
    G = KernelMatrix(k, Xd, Zd, center=center)
    rng = np.random.default_rng(1)
    V, U = rng.normal(size=(M, 3)), rng.normal(size=(N, 2))
    V0, U0 = V.copy(), U.copy()
    I, J = np.array([0, N - 1, 1, 57, N - 2]), np.array([M - 1, 0, 13])
    mm = G.matmat(V)
    assert mm.chunks[0] == tuple(c for c in ROWS[chunking] if c)
    # the kernel values lie in (0, 1]: products of N (or M) terms agree to ~N·eps
    assert rel(mm.compute(), ref.matmat(V)) < 1e-12
    rm = G.rmatmat(U)
    assert rm.chunks[0] == tuple(c for c in ZROWS[chunking] if c)
    assert rel(rm.compute(), ref.rmatmat(U)) < 1e-12
    # a dask operand chunked unlike Z
    assert rel(G.matmat(da.from_array(V, chunks=(7, 3))).compute(), ref.matmat(V)) < 1e-12
    assert rel(G.block(I, J), ref.block(I, J)) < 1e-12
    assert rel(G.cols(J).compute(), ref.block(slice(None), J)) < 1e-12
    np.testing.assert_array_equal(V, V0)
    np.testing.assert_array_equal(U, U0)
    np.testing.assert_array_equal(Xd.compute(), _data()[0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("solver", ["arpack", "randomized", "block_krylov", "nystrom"])
def test_top_svd_of_a_dask_kernel_matrix(solver, dtype):
    """top_svd on a centred SNE DaskKernelMatrix with uneven chunks on both sides: the
    in-memory factors, in the data's dtype (every chunking: the KernelSVD test below)."""
    opts = {"random_state": 0}
    if solver in ("randomized", "block_krylov"):
        opts["n_iter"] = 2
    k = get_kernel("sne", gamma=0.3)
    X, Z, _ = _data(dtype)

    def run():
        r = top_svd(KernelMatrix(k, X, Z, center=True), 3, solver=solver, **opts)
        return np.concatenate([r.U.ravel(), r.V.ravel(), r.s])

    ref, tol = run(), scaled_tol(run, dtype)
    G = KernelMatrix(k, chunked(X, ROWS["uneven"]), chunked(Z, ZROWS["uneven"]), center=True)
    got = top_svd(G, 3, solver=solver, **opts)
    U, V = host(got.U), host(got.V)
    assert U.dtype == dtype and V.dtype == dtype
    assert rel(np.concatenate([U.ravel(), V.ravel(), got.s]), ref) < tol


# -------------------------------------------------- a plain dask G with a zero-size chunk
@pytest.mark.parametrize("solver", ["randomized", "block_krylov", "arpack", "auto"])
@pytest.mark.parametrize("chunks", [((60, 40, 0), (25, 0, 15)), ((0, 100), (40,)),
                                    ((50, 0, 50), (40,))])
def test_top_svd_of_a_dask_array_with_an_empty_chunk(solver, chunks):
    """A zero-size chunk (what slicing or concatenating leaves) changes nothing: dask's own
    max/min of such an array fail, which the randomized solvers and the cluster-side ARPACK
    (G past max_dense_memory) read; the old code raised numpy's "all the input array
    dimensions ... must match exactly" instead of giving the factors."""
    X, Z, _ = _data()
    G = KernelMatrix("rbf", X, Z).to_array()
    opts = {"random_state": 0}
    if solver in ("randomized", "block_krylov"):
        opts["n_iter"] = 2
    # 0.03 MiB: G (31 KiB) does not fit, ARPACK's arrays (~20 KiB) do — the cluster path;
    # 'auto' then picks the randomized SVD in the cluster
    ref = top_svd(G, 3, solver="randomized" if solver == "auto" else solver, **opts)
    with config_context(max_dense_memory=0.03):
        got = bounded(lambda: top_svd(da.from_array(G, chunks=chunks), 3, solver=solver,
                                      **opts))
    assert got.solver == ("randomized" if solver == "auto" else solver)
    tol = 1e-10  # an RBF kernel of 100 Gaussian points: σ1/σ4 gap ≫ 1e-4
    assert rel(got.s, ref.s) < tol
    assert rel(host(got.U), ref.U) < tol and rel(host(got.V), ref.V) < tol


def test_precomputed_kernel_svd_on_a_dask_matrix_with_an_empty_chunk():
    X, Z, _ = _data()
    G = KernelMatrix("sne", X, Z).to_array()
    kw = dict(kernel="precomputed", n_components=3, solver="randomized", n_iter=2,
              random_state=0)
    a = KernelSVD(**kw).fit(G)
    b = bounded(lambda: KernelSVD(**kw).fit(da.from_array(G, chunks=((60, 40, 0), (M,)))))
    assert rel(b.singular_values_, a.singular_values_) < 1e-12
    t = b.transform(da.from_array(G[:7], chunks=((3, 4, 0), (M,))))
    assert rel(host(t), a.transform(G[:7])) < 1e-10


# -------------------------------------------------------------------------- KernelSVD
KSVD = dict(n_components=3, kernel="sne", gamma=0.3, center=True, random_state=0,
            n_row_landmarks=30, n_col_landmarks=25)


@pytest.mark.parametrize("chunking", list(ROWS))
@pytest.mark.parametrize("solver", ["dense", "arpack", "randomized", "block_krylov", "nystrom"])
def test_kernel_svd_every_solver_every_chunking(solver, chunking):
    """Singular values, vectors, transforms of numpy (numpy out) and of dask in 1-row chunks
    (dask out) equal the in-memory fit's; the inputs are not modified."""
    kw = dict(KSVD, solver=solver)
    if solver in ("randomized", "block_krylov"):
        kw["n_iter"] = 2
    X, Z, Xn = _data()
    a = KernelSVD(**kw).fit(X, Z=Z)

    def run():
        e = KernelSVD(**kw).fit(X, Z=Z)
        return np.concatenate([e.transform(Xn).ravel(), e.transform_right(Xn).ravel(),
                               e.left_singular_vectors_.ravel(), e.singular_values_])

    tol = scaled_tol(run)
    Xd, Zd = chunked(X, ROWS[chunking]), chunked(Z, ZROWS[chunking])
    b = KernelSVD(**kw).fit(Xd, Z=Zd)
    assert rel(b.singular_values_, a.singular_values_) < tol
    assert rel(host(b.left_singular_vectors_), a.left_singular_vectors_) < tol
    assert rel(host(b.right_singular_vectors_), a.right_singular_vectors_) < tol
    t_np = b.transform(Xn)
    assert isinstance(t_np, np.ndarray) and rel(t_np, a.transform(Xn)) < tol
    t_da = b.transform(chunked(Xn, (1,) * Xn.shape[0]))
    assert is_dask_array(t_da) and rel(t_da.compute(), a.transform(Xn)) < tol
    tr = b.transform_right(chunked(Xn, (2, 0, 7)))
    assert rel(host(tr), a.transform_right(Xn)) < tol
    X0, Z0, Xn0 = _data()
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(Z, Z0)
    np.testing.assert_array_equal(Xn, Xn0)


# ------------------------------------------------------------------- Nyström machines
MACHINES = {
    "krr-lla": (NystromKernelRidge, dict(mode="lla")),
    "krr-ncr": (NystromKernelRidge, dict(mode="ncr")),
    "krr-spa": (NystromKernelRidge, dict(mode="spa")),
    "krr-gsa": (NystromKernelRidge, dict(mode="gsa")),
    "svc-lla": (NystromSVC, dict(mode="lla", svm="svc")),
    "svc-ncr": (NystromSVC, dict(mode="ncr", svm="nusvc")),
}


def _machine(name):
    cls, kw = MACHINES[name]
    return cls(n_landmarks=20, gamma=0.2, random_state=1, **kw)


def _targets(name, X):
    if name.startswith("svc"):
        return np.where(X[:, 0] + 0.3 * X[:, 1] > 0, "yes", "no")  # string labels
    return np.sin(X[:, 0]) + X[:, 1] ** 2 + 3.0


def _scores(est, Xn):
    return est.decision_function(Xn) if hasattr(est, "decision_function") else est.predict(Xn)


@pytest.mark.parametrize("chunking", list(ROWS))
@pytest.mark.parametrize("name", list(MACHINES))
def test_nystrom_machines_every_chunking(name, chunking):
    X, _, Xn = _data()
    y = _targets(name, X)
    a = _machine(name).fit(X, y)
    tol = scaled_tol(lambda: _scores(_machine(name).fit(X, y), Xn))
    Xd, yd = chunked(X, ROWS[chunking]), chunked(y, ROWS[chunking])
    b = _machine(name).fit(Xd, yd)
    np.testing.assert_array_equal(b.landmark_indices_, a.landmark_indices_)
    s_np = _scores(b, Xn)
    assert isinstance(s_np, np.ndarray) and rel(s_np, _scores(a, Xn)) < tol
    s_da = _scores(b, chunked(Xn, (1,) * Xn.shape[0]))
    assert is_dask_array(s_da) and rel(s_da.compute(), _scores(a, Xn)) < tol
    if name.startswith("svc"):
        np.testing.assert_array_equal(b.predict(Xn), a.predict(Xn))
    np.testing.assert_array_equal(X, _data()[0])


# ------------------------------------------------------------ AsK-LS and the operators
def _trajectory(n=N, dtype=np.float64):
    """A noisy AR(1) path x_t observed through D features."""
    rng = np.random.default_rng(3)
    x = np.empty(n)
    x[0] = 0.0
    for t in range(1, n):
        x[t] = 0.9 * x[t - 1] + 0.3 * rng.normal()
    return np.c_[x, np.sin(x), x ** 2, np.cos(x)].astype(dtype)


def _paired(dtype=np.float64):
    """Samples X and paired targets y for the conditional mean embedding."""
    X = _clf(dtype)[0]
    return X, np.c_[np.sin(X[:, 0]), X[:, 1] ** 2].astype(dtype)


def _askls(kernel):
    kp = {"bandwidth": 3.0} if kernel == "sne" else {"gamma": 0.3}
    return AsKLSClassifier(kernel=kernel, kernel_params=kp, C=10.0, random_state=0,
                           nystrom={"n_components": 10, "n_row_landmarks": 25,
                                    "n_col_landmarks": 25})


OPERATORS = {
    # (estimator factory, training inputs, output on new points)
    "askls-rbf": (lambda: _askls("rbf"), lambda dt: _clf(dt),
                  lambda e, Xn: e.decision_function(Xn)),
    "askls-sne": (lambda: _askls("sne"), lambda dt: _clf(dt),
                  lambda e, Xn: e.decision_function(Xn)),
    "cme": (lambda: ConditionalMeanEmbedding(kernel_x_params={"gamma": 1.0}, alpha=1e-3,
                                             n_landmarks=30, random_state=0),
            _paired,
            lambda e, Xn: e.predict(Xn)),
    "koopman": (lambda: KoopmanOperator(kernel_params={"gamma": 0.5}, alpha=1e-4,
                                        n_components=2, n_landmarks=30, random_state=1),
                lambda dt: (_trajectory(dtype=dt),),
                lambda e, Xn: e.predict(Xn)),
}


@pytest.mark.parametrize("chunking", list(ROWS))
@pytest.mark.parametrize("name", list(OPERATORS))
def test_askls_and_operators_every_chunking(name, chunking):
    if name == "askls-sne" and chunking == "rows1":
        pytest.skip("100 one-row chunks of a row-normalised AsK-LS fit take ~8 s; "
                    "askls-rbf covers one-row chunks")
    make, inputs, out = OPERATORS[name]
    _, _, Xn = _data()
    args = inputs(np.float64)
    a = make().fit(*args)
    ref = out(a, Xn)
    tol = scaled_tol(lambda: out(make().fit(*args), Xn))
    copies = [np.array(A, copy=True) for A in args]
    b = make().fit(*(chunked(A, ROWS[chunking]) for A in args))
    got = out(b, Xn)
    assert isinstance(got, np.ndarray) and rel(got, ref) < tol
    got_d = out(b, chunked(Xn, (1, 0, 8)))
    assert is_dask_array(got_d) and rel(got_d.compute(), ref) < tol
    if name == "koopman":
        tol = scaled_tol(lambda: make().fit(*args).eigenvalues_)
        assert rel(b.eigenvalues_, a.eigenvalues_) < tol
    for A, A0 in zip(args, copies):
        np.testing.assert_array_equal(A, A0)


@pytest.mark.parametrize("chunking", ["rows1", "uneven", "empty_last"])
@pytest.mark.parametrize("name", ["askls-rbf", "cme", "koopman"])
def test_numpy_X_with_a_dask_y(name, chunking):
    """A numpy X paired with a dask y is split like y, as the Nyström machines do; the old
    code refused it with "y is chunked differently from X's rows" and the advice
    ``y.rechunk((X.chunks[0],))``, for which a numpy X has no chunks."""
    make, inputs, out = OPERATORS[name]
    _, _, Xn = _data()
    if name == "koopman":  # the paired form: snapshots x_t and their successors x_{t+1}
        T = inputs(np.float64)[0]
        X, y = T[:-1], T[1:]
    else:
        X, y = inputs(np.float64)
    a = make().fit(X, y)
    tol = scaled_tol(lambda: out(make().fit(X, y), Xn))
    b = make().fit(X, chunked(y, rows_for(X.shape[0], chunking)))
    assert rel(out(b, Xn), out(a, Xn)) < tol


# ------------------------------------------------------------------------------- float32
@pytest.mark.parametrize("name", ["ksvd-randomized", "ksvd-nystrom", "krr-gsa", "svc-lla",
                                  "askls-rbf", "cme", "koopman"])
def test_float32_in_float32_out_uneven_chunks(name):
    """float32 data keep float32 results (the dask array's declared dtype and its chunks, and
    numpy out of a Dask fit), equal to the in-memory float32 fit."""
    _, _, Xn = _data(np.float32)
    if name.startswith("ksvd"):
        X, Z, _ = _data(np.float32)
        kw = dict(KSVD, solver=name.split("-")[1])

        def make():
            return KernelSVD(**kw)

        args, fit_kw, dask_kw = (X,), {"Z": Z}, {"Z": chunked(Z, ZROWS["uneven"])}

        def out(e, A):
            return e.transform(A)
    elif name in MACHINES:
        X = _data(np.float32)[0]
        args, fit_kw, dask_kw, out = (X, _targets(name, X)), {}, {}, _scores

        def make():
            return _machine(name)
    else:
        make, inputs, out = OPERATORS[name]
        args, fit_kw, dask_kw = inputs(np.float32), {}, {}
    a = make().fit(*args, **fit_kw)
    ref = out(a, Xn)
    tol = scaled_tol(lambda: out(make().fit(*args, **fit_kw), Xn), np.float32)
    b = make().fit(*(chunked(A, (1, 97, 2)) for A in args), **dask_kw)
    if name.startswith("ksvd"):  # as in memory (the Nyström solver's values are float64)
        assert b.singular_values_.dtype == a.singular_values_.dtype
        assert host(b.left_singular_vectors_).dtype == np.float32
    got = out(b, Xn)
    assert got.dtype == np.float32 and rel(got, ref) < tol
    got_d = out(b, chunked(Xn, (1, 0, 8)))
    assert got_d.dtype == np.float32
    got_d = got_d.compute()
    assert got_d.dtype == np.float32 and rel(got_d, ref) < tol


# ----------------------------------------------- unknown chunk sizes, features in chunks
def _fitted():
    X, Z, _ = _data()
    Xc, yc = _clf()
    T = _trajectory()
    return {
        "ksvd": KernelSVD(**dict(KSVD, solver="nystrom")).fit(chunked(X, (50, 50)),
                                                             Z=chunked(Z, (M,))),
        "krr": _machine("krr-gsa").fit(chunked(X, (50, 50)), chunked(_targets("krr", X), (50, 50))),
        "askls": _askls("rbf").fit(chunked(Xc, (50, 50)), chunked(yc, (50, 50))),
        "cme": OPERATORS["cme"][0]().fit(chunked(Xc, (50, 50)), _paired()[1]),
        "koopman": OPERATORS["koopman"][0]().fit(chunked(T, (50, 50))),
    }


#: entry point -> (call on (fitted models, X, y) with one input of unknown chunk sizes, the
#: name its error starts with)
UNKNOWN = {
    "DaskKernelMatrix X": (lambda f, X, y: KernelMatrix("sne", unknown_rows(X), X), "X"),
    "DaskKernelMatrix Z": (lambda f, X, y: KernelMatrix("sne", X, unknown_rows(X)), "Z"),
    "top_svd G": (lambda f, X, y: top_svd(unknown_rows(np.abs(X @ X.T)), 2,
                                          solver="randomized", random_state=0), "G"),
    "asymmetric_nystrom G": (lambda f, X, y: asymmetric_nystrom(
        unknown_rows(np.abs(X @ X.T)), 2, random_state=0), "G"),
    "KernelSVD.fit Z": (lambda f, X, y: KernelSVD(**dict(KSVD, solver="randomized")).fit(
        chunked(X, (N,)), Z=unknown_rows(X)), "Z"),
    "KernelSVD.transform": (lambda f, X, y: f["ksvd"].transform(unknown_rows(X)), "X"),
    "KernelSVD.transform_right": (lambda f, X, y: f["ksvd"].transform_right(unknown_rows(X)),
                                  "Z"),
    "NystromKernelRidge.fit X": (lambda f, X, y: _machine("krr-gsa").fit(unknown_rows(X), y),
                                 "X"),
    "NystromKernelRidge.fit y": (lambda f, X, y: _machine("krr-gsa").fit(X, unknown_rows(y)),
                                 "y"),
    "NystromKernelRidge.predict": (lambda f, X, y: f["krr"].predict(unknown_rows(X)), "X"),
    "NystromSVC.fit X": (lambda f, X, y: _machine("svc-lla").fit(unknown_rows(X), y > 3.5),
                         "X"),
    "AsKLSClassifier.fit X": (lambda f, X, y: _askls("rbf").fit(unknown_rows(X), y > 3.5),
                              "X"),
    "AsKLSClassifier.fit y": (lambda f, X, y: _askls("rbf").fit(X, unknown_rows(y > 3.5)),
                              "y"),
    "AsKLSClassifier.decision_function": (lambda f, X, y: f["askls"].decision_function(
        unknown_rows(X)), "X"),
    "ConditionalMeanEmbedding.fit X": (lambda f, X, y: OPERATORS["cme"][0]().fit(
        unknown_rows(X), X[:, :2]), "X"),
    "ConditionalMeanEmbedding.fit y": (lambda f, X, y: OPERATORS["cme"][0]().fit(
        chunked(X, (N,)), unknown_rows(X[:, :2])), "y"),
    "ConditionalMeanEmbedding.predict": (lambda f, X, y: f["cme"].predict(unknown_rows(X)),
                                         "X"),
    "KoopmanOperator.fit X": (lambda f, X, y: OPERATORS["koopman"][0]().fit(unknown_rows(X)),
                              "X"),
    "KoopmanOperator.fit y": (lambda f, X, y: OPERATORS["koopman"][0]().fit(
        chunked(X, (N,)), unknown_rows(X)), "y"),
    "KoopmanOperator.predict": (lambda f, X, y: f["koopman"].predict(unknown_rows(X)), "X"),
}


@pytest.fixture(scope="module")
def fitted():
    with dask.config.set(scheduler="synchronous"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _fitted()


@pytest.mark.parametrize("entry", list(UNKNOWN))
def test_unknown_chunk_sizes_give_a_clear_error(entry, fitted):
    """Boolean-mask indexing leaves NaN chunk sizes: every Dask entry point refuses them at
    once, naming the argument and the fix (no hang, no wrong result)."""
    X, _, _ = _data()
    y = _targets("krr", X)
    call, arg = UNKNOWN[entry]
    with pytest.raises(ValueError, match=rf"^{arg} .*unknown chunk sizes.*compute_chunk_sizes"):
        bounded(lambda: call(fitted, X, y), 30)


@pytest.mark.parametrize("est", ["cca", "covariance"])
def test_in_memory_estimators_gather_unknown_chunk_sizes(est):
    """Estimators without a Dask executor read a dask input as numpy (within the budget):
    unknown chunk sizes are fine there, and the result is the in-memory one."""
    X, _, Xn = _data()
    Y = np.c_[np.sin(X[:, 0]), X[:, 1] ** 2]
    if est == "cca":
        a = KernelCCA(n_components=2).fit(X, Y)
        b = bounded(lambda: KernelCCA(n_components=2).fit(unknown_rows(X), unknown_rows(Y)))
        np.testing.assert_array_equal(b.transform(Xn, Y[:9])[0], a.transform(Xn, Y[:9])[0])
    else:
        a = CovarianceOperator(n_components=2).fit(X)
        b = bounded(lambda: CovarianceOperator(n_components=2).fit(unknown_rows(X)))
        np.testing.assert_array_equal(b.transform(Xn), a.transform(Xn))


FEATURES = {
    "DaskKernelMatrix X": lambda f, Xf, X: KernelMatrix("sne", Xf, X),
    "KernelSVD.fit Z": lambda f, Xf, X: KernelSVD(**dict(KSVD, solver="nystrom")).fit(
        chunked(X, (N,)), Z=Xf),
    "KernelSVD.transform": lambda f, Xf, X: f["ksvd"].transform(Xf),
    "NystromKernelRidge.fit X": lambda f, Xf, X: _machine("krr-lla").fit(Xf, X[:, 0]),
    "NystromKernelRidge.predict": lambda f, Xf, X: f["krr"].predict(Xf),
    "AsKLSClassifier.fit X": lambda f, Xf, X: _askls("rbf").fit(Xf, X[:, 0] > 0),
    "ConditionalMeanEmbedding.fit X": lambda f, Xf, X: OPERATORS["cme"][0]().fit(Xf, X[:, :2]),
    "KoopmanOperator.fit X": lambda f, Xf, X: OPERATORS["koopman"][0]().fit(Xf),
}


@pytest.mark.parametrize("entry", list(FEATURES))
def test_feature_chunks_give_a_clear_error(entry, fitted):
    """A data set chunked along its features: refused at once, naming the argument and the
    rechunk to apply (the kernel needs whole rows in a chunk)."""
    X, _, _ = _data()
    Xf = da.from_array(X, chunks=((30, 70), (1, 3)))
    arg = entry.split()[-1] if entry.endswith((" X", " Z")) else "X"
    with pytest.raises(ValueError, match=rf"^{arg} is chunked along its features.*rechunk"):
        bounded(lambda: FEATURES[entry](fitted, Xf, X), 30)


def test_targets_chunked_along_their_columns_work():
    """Paired targets need no whole-row chunks: 2-D y chunked in columns is accepted."""
    X, _, Xn = _data()
    Y = np.c_[np.sin(X[:, 0]), X[:, 1] ** 2, X[:, 2]]
    Yd = da.from_array(Y, chunks=((1, 97, 2), (1, 2)))
    a = NystromKernelRidge(n_landmarks=20, gamma=0.2, random_state=1).fit(X, Y)
    b = NystromKernelRidge(n_landmarks=20, gamma=0.2, random_state=1).fit(
        chunked(X, (1, 97, 2)), Yd)
    assert rel(b.predict(Xn), a.predict(Xn)) < 1e-10
    cme = OPERATORS["cme"][0]
    got = cme().fit(chunked(X, (1, 97, 2)), Yd).predict(Xn)
    assert rel(got, cme().fit(X, Y).predict(Xn)) < 1e-10


# ---------------------------------------------------------------------------- schedulers
SCHED_ROWS = (1, 30, 9, 17, 40, 3, 0)  # six non-empty chunks for two workers


def _scheduler_run():
    X, Z, Xn = _data()
    Xc, yc = _clf()
    T = _trajectory()
    out = {}
    Xd, Zd = chunked(X, SCHED_ROWS), chunked(Z, (7, 30, 3))
    e = KernelSVD(**dict(KSVD, solver="randomized", n_iter=2)).fit(Xd, Z=Zd)
    out["ksvd"] = (host(e.left_singular_vectors_), e.singular_values_, e.transform(Xn))
    e = _machine("krr-gsa").fit(Xd, chunked(_targets("krr", X), SCHED_ROWS))
    out["krr-gsa"] = (e.predict(Xn), host(e.dual_coef_))
    e = _askls("sne").fit(chunked(Xc, SCHED_ROWS), chunked(yc, SCHED_ROWS))
    out["askls"] = (e.decision_function(Xn),)
    e = OPERATORS["koopman"][0]().fit(chunked(T, SCHED_ROWS))
    out["koopman"] = (e.eigenvalues_, e.predict(T[:9]))
    return out


@pytest.mark.usefixtures("one_blas_thread")
def test_synchronous_threaded_and_distributed_schedulers_are_bitwise_equal():
    """A fixed chunking gives bitwise the same results on the synchronous and threaded
    schedulers and on a distributed LocalCluster (threads in this process, two workers, more
    chunks than workers), and those agree with the in-memory path."""
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = {}
        for sched in ("synchronous", "threads"):
            with dask.config.set(scheduler=sched):
                res[sched] = _scheduler_run()

        def on_cluster():
            # the in-process transport has no address to bind; tcp on the loopback has
            with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                          protocol="tcp", host="127.0.0.1",
                                          dashboard_address=None) as cluster, \
                    distributed.Client(cluster, timeout=30), \
                    dask.config.set(scheduler="dask.distributed"):
                return _scheduler_run()

        res["distributed"] = bounded(on_cluster, 120)
    for key, ref in res["synchronous"].items():
        for sched in ("threads", "distributed"):
            for i, (p, q) in enumerate(zip(ref, res[sched][key])):
                np.testing.assert_array_equal(q, p, err_msg=f"{key}[{i}] on {sched}")
    X, Z, Xn = _data()
    a = KernelSVD(**dict(KSVD, solver="randomized", n_iter=2)).fit(X, Z=Z)
    assert rel(res["distributed"]["ksvd"][2], a.transform(Xn)) < 1e-10
