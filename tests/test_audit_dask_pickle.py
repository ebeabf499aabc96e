"""A model fitted on dask arrays predicts without dask (issue 29, item 4).

Every estimator with a Dask path is fitted on dask arrays, pickled, and loaded in a fresh
process where dask cannot be imported (a meta-path blocker installed before unpickling): the
pickle must load and give, for numpy input, numpy output equal to the live model's prediction.
In process, the live and the unpickled model give numpy for numpy input and dask for dask input.
"""

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from _dask_helpers import synchronous_scheduler  # noqa: E402,F401 (autouse fixture)

from asymkern import KernelSVD  # noqa: E402
from asymkern.lssvm import AsKLSClassifier  # noqa: E402
from asymkern.nystrom import NystromKernelPCA, NystromKernelRidge, NystromSVC  # noqa: E402

_LOAD_WITHOUT_DASK = """
import pickle, sys

class _NoDask:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dask", "distributed"):
            raise ImportError(f"dask is blocked in this process ({name})")
        return None

for mod in [m for m in sys.modules if m.split(".")[0] in ("dask", "distributed")]:
    del sys.modules[mod]
sys.meta_path.insert(0, _NoDask())
import numpy as np
with open(sys.argv[1], "rb") as fh:
    calls = pickle.load(fh)
outs = []
for model, method, X in calls:
    try:
        outs.append(getattr(model, method)(X))
    except Exception as exc:  # reported to the test as text
        outs.append(f"{type(exc).__name__}: {exc}")
assert not any(m.split(".")[0] == "dask" for m in sys.modules), "dask was imported"
with open(sys.argv[2], "wb") as fh:
    pickle.dump(outs, fh)
"""


def _data(n=150, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    Z = rng.standard_normal((n - 30, d))
    y = np.sin(X[:, 0]) + X[:, 1]
    labels = (X[:, 0] + 0.3 * X[:, 2] > 0).astype(int)
    return X, Z, y, labels, rng.standard_normal((25, d))


def _models():
    """(name, dask-fitted model, method, numpy test input)."""
    X, Z, y, labels, Xt = _data()
    Xd, Zd = da.from_array(X, chunks=50), da.from_array(Z, chunks=40)
    yd, ld = da.from_array(y, chunks=50), da.from_array(labels, chunks=50)
    A = np.abs(np.random.default_rng(1).standard_normal((60, 40)))
    Ad = da.from_array(A, chunks=(20, 40))
    kp = {"gamma": 0.3}
    out = []
    for solver, center in [("dense", True), ("arpack", False), ("randomized", True),
                           ("block_krylov", False), ("nystrom", False)]:
        est = KernelSVD(3, solver=solver, center=center, kernel_params=kp,
                        random_state=0).fit(Xd, Z=Zd)
        out += [(f"ksvd-{solver}", est, "transform", Xt),
                (f"ksvd-{solver}-right", est, "transform_right", Xt)]
    sne = KernelSVD(3, kernel="sne", solver="randomized", random_state=0).fit(Xd, Z=Zd)
    out += [("ksvd-sne-right", sne, "transform_right", Xt)]
    G = X @ Z.T
    pre = KernelSVD(3, kernel="precomputed", solver="randomized", random_state=0).fit(
        da.from_array(G, chunks=50))
    out += [("ksvd-precomputed", pre, "transform", Xt @ Z.T)]
    for compat in ("pca", "random"):  # fit(A) with N ≠ M: the Dask compatibility transform
        est = KernelSVD(2, compat=compat, solver="randomized", random_state=0).fit(Ad)
        out += [(f"ksvd-A-{compat}", est, "transform", A[:7]),
                (f"ksvd-A-{compat}-right", est, "transform_right", A.T[:5])]
    for mode in ("lla", "ncr", "spa"):
        est = NystromKernelRidge(mode=mode, n_landmarks=25, kernel_params=kp,
                                 random_state=0).fit(Xd, yd)
        out += [(f"krr-{mode}", est, "predict", Xt)]
    gsa = NystromKernelRidge(mode="gsa", n_landmarks=25, kernel_params=kp,
                             random_state=0).fit(Xd, yd)
    out += [("krr-gsa-lla", gsa, "predict_lla", Xt)]
    for mode in ("lla", "spa"):
        est = NystromKernelPCA(2, mode=mode, n_landmarks=25, kernel_params=kp,
                               random_state=0).fit(Xd)
        out += [(f"kpca-{mode}", est, "transform", Xt)]
    for mode in ("lla", "ncr"):
        est = NystromSVC(mode=mode, n_landmarks=25, kernel_params=kp, random_state=0).fit(Xd, ld)
        out += [(f"svc-{mode}", est, "decision_function", Xt), (f"svc-{mode}-labels", est,
                                                                 "predict", Xt)]
    ask = AsKLSClassifier(kernel="rbf", kernel_params={"gamma": 0.3}, random_state=0,
                          nystrom={"n_components": 10, "n_row_landmarks": 30,
                                   "n_col_landmarks": 30}).fit(Xd, ld)
    out += [("askls", ask, "decision_function", Xt)]
    return out


@pytest.fixture(scope="module")
def fitted():
    import dask

    with dask.config.set(scheduler="synchronous"):
        return _models()


def _run_without_dask(calls, tmp_path):
    """Pickle (model, method, X) triples, run them in a process where dask is blocked."""
    src, dst = tmp_path / "models.pkl", tmp_path / "outs.pkl"
    with open(src, "wb") as fh:
        pickle.dump(calls, fh)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-c", _LOAD_WITHOUT_DASK, str(src), str(dst)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(dst, "rb") as fh:
        return pickle.load(fh)


def test_dask_fitted_models_predict_numpy_in_a_process_without_dask(fitted, tmp_path):
    calls = [(est, method, X) for _, est, method, X in fitted]
    refs = [getattr(est, method)(X) for est, method, X in calls]
    for (name, *_), ref in zip(fitted, refs):
        assert type(ref) is np.ndarray, (name, type(ref))  # numpy in → numpy out, live model
    outs = _run_without_dask(calls, tmp_path)
    for (name, *_), out, ref in zip(fitted, outs, refs):
        assert type(out) is np.ndarray, (name, out)
        if ref.dtype.kind in "iub":  # labels
            np.testing.assert_array_equal(out, ref, err_msg=name)
        else:
            scale = max(float(np.abs(ref).max()), 1e-300)
            assert float(np.abs(out - ref).max()) <= 1e-9 * scale, name


def test_unpickled_dask_fit_numpy_in_numpy_out_dask_in_dask_out(fitted):
    for name, est, method, X in fitted:
        back = pickle.loads(pickle.dumps(est))
        for key, val in vars(back).items():
            assert "dask" not in type(val).__module__, (name, key, type(val))
        ref = getattr(est, method)(X)
        out = getattr(back, method)(X)
        assert type(out) is np.ndarray, (name, type(out))
        lazy = getattr(back, method)(da.from_array(X, chunks=(10, -1)))
        assert isinstance(lazy, da.Array), (name, type(lazy))
        if ref.dtype.kind in "iub":
            np.testing.assert_array_equal(out, ref, err_msg=name)
            np.testing.assert_array_equal(lazy.compute(), ref, err_msg=name)
        else:
            scale = float(np.abs(ref).max())
            assert float(np.abs(out - ref).max()) <= 1e-9 * scale, name
            assert float(np.abs(lazy.compute() - ref).max()) <= 1e-9 * scale, name


def test_live_dask_fit_keeps_its_lazy_attributes_after_pickling(fitted):
    """Pickling gathers copies: the live KernelSVD keeps its dask arrays."""
    est = dict((name, e) for name, e, *_ in fitted)["ksvd-randomized"]
    pickle.dumps(est)
    assert isinstance(est.left_singular_vectors_, da.Array)
    assert isinstance(est.X_fit_, da.Array)


def test_without_dask_what_needs_the_training_set_is_refused_by_name(fitted, tmp_path):
    """GSA's test phase and a row-normalised AsK-LS source function need the training set,
    which the pickle of a Dask fit does not carry: a ValueError saying so, not an ImportError
    about dask."""
    X, _, y, labels, Xt = _data()
    gsa = dict((name, e) for name, e, *_ in fitted)["krr-gsa-lla"]
    sne = AsKLSClassifier(kernel="sne", kernel_params={"bandwidth": 3.0}, random_state=0,
                          nystrom={"n_components": 10, "n_row_landmarks": 30,
                                   "n_col_landmarks": 30}).fit(da.from_array(X, chunks=50),
                                                               labels)
    assert np.all(np.isfinite(sne.decision_function(Xt)))  # the live model has it
    outs = _run_without_dask([(gsa, "predict", Xt), (sne, "decision_function", Xt)], tmp_path)
    assert outs[0].startswith("ValueError") and "unpickled" in outs[0], outs[0]
    assert outs[1].startswith("ValueError") and "no longer holds the training set" in outs[1], \
        outs[1]
