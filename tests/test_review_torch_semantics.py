"""The torch executor's user-facing semantics on unusual tensors, mixed inputs and fitted models.

Every estimator with a ``device`` parameter, and the public functions that take tensors
(``top_svd``, ``asymmetric_nystrom``), on test-device tensors (``ASYMKERN_TEST_DEVICE``):

* unusual tensors — a transposed or strided view, ``requires_grad=True``, int64, bool,
  float16 and bfloat16 — fit as the numpy path fits the same values (float64: the
  integer, boolean and half-precision values converted as numpy converts them), leave the
  input unchanged (no gradient, no autograd graph in the outputs or the fitted model);
* 0-d, 1-D, NaN / infinity, empty and featureless tensors are refused naming X (or Z);
* the conversion of integer tensors is checked against ``max_dense_memory`` as numpy's is;
* mixed inputs: a tensor fit predicts numpy as numpy, a numpy fit with ``device`` keeps
  numpy attributes and gives numpy (tensors for tensor points), ``torch.device`` equals the
  string, a missing CUDA device is refused naming ``device``;
* pickling and ``clone`` of a torch fit; torch's thread setting is left as the user set it.

The comparisons against numpy are of well-conditioned small problems (top singular values and
eigenvalues far apart), at 1e-8 relative: far above rounding (measured ≤ 1e-12), far below
a real error.
"""

from __future__ import annotations

import dataclasses
import pickle
import warnings
from collections.abc import Callable

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import TEST_DEVICE, assert_same_up_to_sign, dtol, tensor, to_np  # noqa: E402
from _torch_helpers import rel_max as rel  # noqa: E402
from sklearn.base import clone  # noqa: E402

import asymkern  # noqa: E402
from asymkern import KernelSVD  # noqa: E402
from asymkern._dispatch import is_torch_tensor  # noqa: E402
from asymkern._torch.device import as_tensor  # noqa: E402
from asymkern.config import MemoryBudgetError  # noqa: E402
from asymkern.kernels import KernelMatrix  # noqa: E402
from asymkern.linalg import asymmetric_nystrom, top_svd  # noqa: E402
from asymkern.nystrom import NystromKernelPCA, NystromKernelRidge, NystromSVC  # noqa: E402
from asymkern.operators import (  # noqa: E402
    ConditionalMeanEmbedding,
    CovarianceOperator,
    CrossCovarianceOperator,
    KernelCCA,
    KoopmanOperator,
    PerronFrobeniusOperator,
)

N, N_NEW = 40, 8
#: numpy's reading of a CPU tensor (tests/conftest.py makes tensors refuse it during a test)
_HOST_ARRAY = torch.Tensor.__array__
TOL = dtol(1e-8)


# ------------------------------------------------------------------------------ the cases
@dataclasses.dataclass(frozen=True)
class Case:
    """One estimator: how to build it, its other fit inputs, what its fit is compared by."""

    make: Callable
    #: the other inputs of fit from the (float64) training values R: (positional, keyword)
    others: Callable
    #: the compared outputs of a fitted model at the new points P
    output: Callable
    #: the outputs' columns have a sign LAPACK leaves free
    signed: bool = False
    #: ``output`` takes no points (the model's eigenvalues)
    pointless: bool = False


def _y(R):
    return R[:, 0] + 0.5 * np.sin(R[:, 1])


def _y2(R):
    return np.c_[np.sin(R[:, 0]) + 0.1 * R[:, 1], R[:, 1] ** 2 - R[:, 2]]


def _labels(R):
    y = _y(R)
    return (y > np.median(y)).astype(np.int64)


def _z(R):
    return np.random.RandomState(5).randn(30, R.shape[1])


def _first(out):
    return out[0] if isinstance(out, tuple) else out


CASES = {
    "KernelSVD": Case(lambda **p: KernelSVD(n_components=3, random_state=0, **p),
                      lambda R: ((), {"Z": _z(R)}), lambda e, P: e.transform(P), signed=True),
    "NystromKernelPCA": Case(
        lambda **p: NystromKernelPCA(n_components=3, n_landmarks=12, random_state=0, **p),
        lambda R: ((), {}), lambda e, P: e.transform(P), signed=True),
    "NystromKernelRidge": Case(
        lambda **p: NystromKernelRidge(n_landmarks=12, random_state=0, **p),
        lambda R: ((_y(R),), {}), lambda e, P: e.predict(P)),
    "NystromSVC": Case(lambda **p: NystromSVC(n_landmarks=12, random_state=0, tol=1e-12, **p),
                       lambda R: ((_labels(R),), {}), lambda e, P: e.decision_function(P)),
    "CovarianceOperator": Case(lambda **p: CovarianceOperator(n_components=3, **p),
                               lambda R: ((), {}), lambda e, P: e.transform(P), signed=True),
    "CrossCovarianceOperator": Case(lambda **p: CrossCovarianceOperator(n_components=2, **p),
                                    lambda R: ((_y2(R),), {}),
                                    lambda e, P: _first(e.transform(P)), signed=True),
    "KernelCCA": Case(lambda **p: KernelCCA(n_components=2, **p), lambda R: ((_y2(R),), {}),
                      lambda e, P: _first(e.transform(P)), signed=True),
    "ConditionalMeanEmbedding": Case(lambda **p: ConditionalMeanEmbedding(**p),
                                     lambda R: ((_y2(R),), {}), lambda e, P: e.predict(P)),
    "KoopmanOperator": Case(lambda **p: KoopmanOperator(n_components=3, **p),
                            lambda R: ((), {}), lambda e, P: e.predict(P)),
    # alpha: G_XY of i.i.d. samples taken as a trajectory is ill-conditioned at the default
    # 1e-6 (the two paths' eigenvalues then differ by ~1e-8); 1e-2 makes it well-conditioned
    "PerronFrobeniusOperator": Case(
        lambda **p: PerronFrobeniusOperator(n_components=3, alpha=1e-2, **p),
        lambda R: ((), {}), lambda e, P: e.eigenvalues_, pointless=True),
}
PREDICTING = [name for name, case in CASES.items() if not case.pointless]


def test_every_estimator_with_a_device_is_covered():
    """The cases cover every public estimator with a ``device`` parameter."""
    import importlib
    import inspect
    import pkgutil

    found = set()
    for mod in pkgutil.walk_packages(asymkern.__path__, "asymkern."):
        parts = mod.name.split(".")[1:]
        if any(p.startswith("_") for p in parts) or parts[0] in ("experiments", "datasets",
                                                                  "cli", "demo"):
            continue
        for name, obj in vars(importlib.import_module(mod.name)).items():
            if inspect.isclass(obj) and not name.startswith("_") \
                    and obj.__module__.startswith("asymkern") and hasattr(obj, "get_params"):
                try:
                    if "device" in obj().get_params():
                        found.add(name)
                except TypeError:  # needs constructor arguments: not an estimator
                    continue
    assert found == set(CASES), found ^ set(CASES)


# ------------------------------------------------------------------------------ helpers
def _fit(case: Case, X, R, *, as_tensors: bool, grad: bool = False, **params):
    """Fit ``case``'s estimator on X with its other inputs (from R) as test-device tensors
    (``grad``: the float ones requiring grad) or as numpy arrays."""
    pos, kw = case.others(R)

    def conv(a):
        if not as_tensors:
            return a
        t = tensor(a)
        return t.requires_grad_(True) if grad and t.is_floating_point() else t

    pos, kw = [conv(a) for a in pos], {k: conv(a) for k, a in kw.items()}
    est = case.make(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # clipped counts, informative components
        est.fit(X, *pos, **kw)
    return est, pos, kw


def _compare(case: Case, got, want, tol: float = TOL) -> None:
    got, want = to_np(got), to_np(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if case.signed:
        assert_same_up_to_sign(got, want, tol)
    else:  # eigenvalues may be complex
        assert np.max(np.abs(got - want)) / np.max(np.abs(want)) < tol


def _tensors_in(obj, seen=None, depth: int = 0):
    """Every tensor a fitted model holds (its attributes, dataclasses, containers, and the
    package's own objects, a few levels deep)."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 4:
        return
    seen.add(id(obj))
    if is_torch_tensor(obj):
        yield obj
        return
    if isinstance(obj, dict):
        values = obj.values()
    elif isinstance(obj, (list, tuple)):
        values = obj
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        values = [getattr(obj, f.name) for f in dataclasses.fields(obj)]
    elif type(obj).__module__.startswith("asymkern") and hasattr(obj, "__dict__"):
        values = vars(obj).values()
    else:
        return
    for v in values:
        yield from _tensors_in(v, seen, depth + 1)


def _public_arrays(est) -> dict:
    return {k: v for k, v in vars(est).items()
            if k.endswith("_") and not k.startswith("_") and hasattr(v, "dtype")}


# ------------------------------------------------------------------------------ unusual tensors
def _unusual(kind: str):
    """(X tensor on the test device, the float64 numpy values the numpy path fits)."""
    rng = np.random.RandomState(3)
    B = rng.randn(N, 3)
    if kind == "transposed":  # a column-major view: not contiguous
        return tensor(np.ascontiguousarray(B.T)).T, B
    if kind == "strided":  # every other row of a larger tensor
        return tensor(np.repeat(B, 2, axis=0))[::2], B
    if kind == "requires_grad":
        return tensor(B).requires_grad_(True), B
    if kind == "int64":
        Bi = np.round(3 * B).astype(np.int64)
        return tensor(Bi), Bi.astype(np.float64)
    if kind == "bool":
        Bb = rng.rand(N, 10) > 0.5
        return tensor(Bb), Bb.astype(np.float64)
    if kind == "float16":
        A = tensor(B, dtype=torch.float16)
        return A, to_np(A).astype(np.float64)
    if kind == "bfloat16":
        A = tensor(B, dtype=torch.bfloat16)
        return A, to_np(A.double())
    raise AssertionError(kind)


KINDS = ("transposed", "strided", "requires_grad", "int64", "bool", "float16", "bfloat16")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(CASES))
def test_unusual_tensors_fit_as_numpy_fits_their_values(name, kind):
    """An unusual X tensor: the fit equals the numpy path's on the same (float64) values, the
    outputs are float64 tensors on the device without gradient, the input is unchanged and
    neither it nor anything the model holds records an autograd graph."""
    case = CASES[name]
    A, R = _unusual(kind)
    keep = A.detach().clone()
    grad = kind == "requires_grad"
    est, pos, kw = _fit(case, A, R, as_tensors=True, grad=grad)
    ref, _, _ = _fit(case, R, R, as_tensors=False)
    P = R[:N_NEW] + 0.1
    Pt = tensor(P).requires_grad_(grad)
    got, want = case.output(est, Pt), case.output(ref, P)
    if not case.pointless:
        assert is_torch_tensor(got) and got.device == A.device and got.dtype == torch.float64
        assert not got.requires_grad and got.grad_fn is None
    _compare(case, got, want)
    # the caller's tensors: unchanged, no gradient accumulated
    assert A.dtype == keep.dtype and torch.equal(A.detach(), keep)
    for t in [A, Pt, *pos, *kw.values()]:
        if is_torch_tensor(t):
            assert t.grad is None
    assert not any(t.requires_grad or t.grad_fn is not None for t in _tensors_in(est))


# ------------------------------------------------------------------------------ refusals
def _bad(kind: str):
    X = np.random.RandomState(1).randn(N, 3)
    if kind == "0d":
        return tensor(1.5, dtype=torch.float64)
    if kind == "1d":
        return tensor(X[:, 0])
    if kind in ("nan", "inf"):
        X[4, 1] = np.nan if kind == "nan" else -np.inf
        return tensor(X)
    if kind == "empty":
        return tensor(np.empty((0, 3)))
    if kind == "no_features":
        return tensor(np.empty((N, 0)))
    raise AssertionError(kind)


BAD = ("0d", "1d", "nan", "inf", "empty", "no_features")
@pytest.mark.parametrize("kind", BAD)
@pytest.mark.parametrize("name", list(CASES))
def test_bad_training_tensors_are_refused_naming_x(request, name, kind):
    case = CASES[name]
    R = np.random.RandomState(1).randn(N, 3)
    with pytest.raises(ValueError, match=r"\bX\b"):
        _fit(case, _bad(kind), R, as_tensors=True)


@pytest.mark.parametrize("kind", BAD)
@pytest.mark.parametrize("name", PREDICTING)
def test_bad_new_points_are_refused_naming_x(name, kind):
    case = CASES[name]
    R = np.random.RandomState(1).randn(N, 3)
    est, _, _ = _fit(case, tensor(R), R, as_tensors=True)
    with pytest.raises(ValueError, match=r"\bX\b"):
        case.output(est, _bad(kind))


@pytest.mark.parametrize("which", ["Z empty", "Z no_features", "precomputed empty"])
def test_kernel_svd_empty_tensors_name_the_argument(which):
    """KernelSVD's torch fit refuses an empty or featureless Z and an empty precomputed
    matrix naming the argument (was: 'G is empty' naming nothing the caller passed, or a
    ZeroDivisionError of the default bandwidth)."""
    X = tensor(np.random.RandomState(2).randn(N, 3))
    if which == "precomputed empty":
        with pytest.raises(ValueError, match=r"^X has 0 sample"):
            KernelSVD(n_components=2, kernel="precomputed").fit(tensor(np.empty((0, 5))))
        return
    Z = tensor(np.empty((0, 3)) if which == "Z empty" else np.empty((30, 0)))
    with pytest.raises(ValueError, match=r"^Z has 0 (sample|feature)"):
        KernelSVD(n_components=2).fit(X, Z=Z)


@pytest.mark.parametrize("name", ["KernelSVD", "NystromKernelRidge", "CovarianceOperator"])
def test_integer_tensor_conversion_is_checked_against_the_budget(name):
    """An int8 tensor grows 8× as float64: the copy is refused before it is made, naming X,
    as the numpy path refuses the conversion of an int8 array."""
    X = tensor(np.ones((2000, 1000), dtype=np.int8))  # 15.3 MiB as float64
    case = CASES[name]
    R = np.ones((2000, 1000))
    with asymkern.config_context(max_dense_memory=10):
        with pytest.raises(MemoryBudgetError, match=r"converting X from int8 to float64"):
            _fit(case, X, R, as_tensors=True)
    with asymkern.config_context(max_dense_memory=20):
        assert as_tensor(X, X.device).dtype == torch.float64


# ------------------------------------------------------------------------------ mixed inputs
@pytest.mark.parametrize("name", PREDICTING)
def test_mixed_inputs_and_devices(name):
    """A tensor fit predicts numpy points as numpy arrays (the same values); a numpy fit with
    ``device`` keeps numpy attributes, gives numpy for numpy points and tensors on the device
    for tensor points; ``torch.device`` equals its string; float32 stays float32; a numpy
    fit without ``device`` refuses tensor points."""
    case = CASES[name]
    R = np.random.RandomState(6).randn(N, 3)
    P = R[:N_NEW] + 0.1
    est, _, _ = _fit(case, tensor(R), R, as_tensors=True)
    on_tensor, on_numpy = case.output(est, tensor(P)), case.output(est, P)
    assert is_torch_tensor(on_tensor) and str(on_tensor.device).startswith(TEST_DEVICE)
    assert isinstance(on_numpy, np.ndarray) and on_numpy.dtype == np.float64
    assert rel(on_numpy, on_tensor) < dtol(1e-12)

    for device in (TEST_DEVICE, torch.device(TEST_DEVICE)):
        dev, _, _ = _fit(case, R, R, as_tensors=False, device=device)
        assert not any(is_torch_tensor(v) for v in _public_arrays(dev).values())
        # what the model keeps on the torch side lives on the asked device
        assert all(str(t.device).startswith(TEST_DEVICE) for t in _tensors_in(dev))
        out_n, out_t = case.output(dev, P), case.output(dev, tensor(P))
        assert isinstance(out_n, np.ndarray) and out_n.dtype == np.float64
        assert is_torch_tensor(out_t) and str(out_t.device).startswith(TEST_DEVICE)
        assert rel(out_n, on_tensor) < dtol(1e-12) and rel(out_t, on_tensor) < dtol(1e-12)

    R32, P32 = R.astype(np.float32), P.astype(np.float32)
    f32, _, _ = _fit(case, tensor(R32), R, as_tensors=True)
    assert case.output(f32, tensor(P32)).dtype == torch.float32
    f32n, _, _ = _fit(case, R32, R, as_tensors=False, device=TEST_DEVICE)
    assert case.output(f32n, P32).dtype == np.float32

    plain, _, _ = _fit(case, R, R, as_tensors=False)
    with pytest.raises(ValueError, match="torch"):
        case.output(plain, tensor(P))


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("name", list(CASES))
def test_missing_cuda_is_refused_naming_the_device(name):
    R = np.random.RandomState(6).randn(N, 3)
    with pytest.raises(ValueError, match=r"device='cuda'.*CUDA is not available"):
        _fit(CASES[name], R, R, as_tensors=False, device="cuda")


@pytest.mark.parametrize("name", list(CASES))
def test_pickle_and_clone_of_a_torch_fit(name):
    """A torch fit pickles with its tensors and predicts the same after loading; its clone
    keeps ``device`` and forgets the fit (a numpy refit runs the numpy path)."""
    case = CASES[name]
    R = np.random.RandomState(8).randn(N, 3)
    P = tensor(R[:N_NEW] + 0.1)
    est, _, _ = _fit(case, tensor(R), R, as_tensors=True)
    again = pickle.loads(pickle.dumps(est))
    got, want = case.output(again, P), case.output(est, P)
    if case.pointless:
        np.testing.assert_array_equal(got, want)
    else:
        assert is_torch_tensor(got) and got.device == P.device
        assert rel(got, want) < dtol(1e-12)
    twin = clone(est)
    assert twin.get_params()["device"] is None and not hasattr(twin, "n_features_in_")
    pos, kw = case.others(R)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        twin.fit(R, *pos, **kw)
    assert not getattr(twin, "torch_fit_", False)
    assert not any(is_torch_tensor(v) for v in _public_arrays(twin).values())
    if not case.pointless:
        assert isinstance(case.output(twin, to_np(P)), np.ndarray)


def test_torch_threads_left_as_set_and_results_independent_of_them():
    """The library never changes torch's intra-op thread count; a fit inside
    ``threadpool_limits(1)`` equals the fit outside it (no promise that threadpoolctl drives
    torch's threads: torch's OpenMP runtime follows it where threadpoolctl finds it)."""
    from threadpoolctl import threadpool_limits

    R = np.random.RandomState(9).randn(300, 4)
    X, Z = tensor(R), tensor(R[::-1].copy() + 0.3)
    before = torch.get_num_threads()
    ref = KernelSVD(n_components=4, solver="randomized", random_state=0).fit(X, Z=Z)
    assert torch.get_num_threads() == before
    with threadpool_limits(1):
        inside = torch.get_num_threads()
        one = KernelSVD(n_components=4, solver="randomized", random_state=0).fit(X, Z=Z)
        assert torch.get_num_threads() == inside
    assert torch.get_num_threads() == before
    assert rel(one.singular_values_, ref.singular_values_) < dtol(1e-10)
    assert_same_up_to_sign(one.left_singular_vectors_, ref.left_singular_vectors_, 1e-8)


# ------------------------------------------------------------------------------ public functions
def _g(kind: str):
    rng = np.random.RandomState(11)
    X, Z = rng.randn(40, 3), rng.randn(30, 3)
    G = np.exp(-((X[:, None] - Z[None]) ** 2).sum(-1) / 3)
    if kind == "transposed":
        return tensor(np.ascontiguousarray(G.T)).T, G
    if kind == "strided":
        return tensor(np.repeat(G, 2, axis=0))[::2], G
    if kind == "requires_grad":
        return tensor(G).requires_grad_(True), G
    if kind == "int64":
        Gi = np.round(10 * G).astype(np.int64)
        return tensor(Gi), Gi.astype(np.float64)
    if kind == "bool":
        Gb = rng.rand(40, 30) > 0.5
        return tensor(Gb), Gb.astype(np.float64)
    if kind == "float16":
        A = tensor(G, dtype=torch.float16)
        return A, to_np(A).astype(np.float64)
    raise AssertionError(kind)


def _solve(fn: str, G):
    if fn == "asymmetric_nystrom":
        res = asymmetric_nystrom(G, 3, 12, 12, random_state=0)
        return res.U, res.V, None
    res = top_svd(G, 3, solver=fn, random_state=0)
    return res.U, res.V, res.s


@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad:UserWarning")
@pytest.mark.parametrize("kind", ["transposed", "strided", "requires_grad", "int64", "bool",
                                  "float16"])
@pytest.mark.parametrize("fn", ["dense", "randomized", "arpack", "nystrom", "asymmetric_nystrom"])
def test_public_functions_on_unusual_tensors(request, fn, kind):
    """top_svd (every solver) and asymmetric_nystrom on an unusual tensor G equal the numpy
    call on the same float64 values; the factors are float64 tensors on G's device without
    gradient, and G is unchanged."""
    A, Gn = _g(kind)
    keep = A.detach().clone()
    U, V, s = _solve(fn, A)
    Un, Vn, sn = _solve(fn, Gn)
    assert torch.equal(A.detach(), keep) and A.grad is None
    for F, Fn in ((U, Un), (V, Vn)):
        assert is_torch_tensor(F) and F.device == A.device and F.dtype == torch.float64
        assert_same_up_to_sign(F, Fn, 1e-8)
    if s is not None:
        assert rel(s, sn) < TOL
    assert not (U.requires_grad or V.requires_grad)


@pytest.mark.parametrize("fn", ["dense", "arpack", "nystrom", "asymmetric_nystrom"])
def test_public_functions_refuse_bfloat16_clearly(fn):
    """A bfloat16 G, which has no numpy dtype, is refused with a TypeError that names the
    dtype and what to pass (was numpy's "data type 'bfloat16' not understood")."""
    G = _g("transposed")[0].contiguous().to(torch.bfloat16)
    with pytest.raises(TypeError, match=r"bfloat16.*float32 or float64"):
        _solve(fn, G)


@pytest.mark.skipif(TEST_DEVICE != "cpu", reason="host readers refuse device tensors by name")
def test_host_readers_take_a_cpu_tensor_that_requires_grad(monkeypatch):
    """KernelMatrix has no torch executor: it reads a CPU tensor on the host. One that
    requires grad must be read as the same tensor without grad."""
    monkeypatch.setattr(torch.Tensor, "__array__", _HOST_ARRAY)  # as numpy reads CPU tensors
    rng = np.random.RandomState(12)
    X, Z, B = rng.randn(20, 3), rng.randn(15, 3), rng.randn(15, 2)
    want = KernelMatrix("rbf", tensor(X), tensor(Z)).matmat(B)
    got = KernelMatrix("rbf", tensor(X).requires_grad_(True), tensor(Z)).matmat(B)
    assert rel(got, want) < TOL


def test_kernel_svd_transform_dtype_follows_numpy():
    R = np.random.RandomState(13).randn(N, 3)
    Z = _z(R)
    P = R[:N_NEW] + 0.1
    ref = KernelSVD(n_components=3, random_state=0).fit(R.astype(np.float32),
                                                         Z=Z.astype(np.float32))
    est = KernelSVD(n_components=3, random_state=0).fit(tensor(R, dtype=torch.float32),
                                                        Z=tensor(Z, dtype=torch.float32))
    want = ref.transform(P)
    got = est.transform(tensor(P))
    assert str(got.dtype).replace("torch.", "") == want.dtype.name
