"""Review of the softmax-attention kernel (kernel='softmax') on every executor.

κ(q, k) = exp(γ⟨q, k⟩) / Σ_{r∈R} exp(γ⟨q, r⟩) is checked against a dense float64 reference
computed here by a log-sum-exp by hand (``scipy.special.logsumexp``), on numpy
(:class:`~asymkern.kernels.KernelMatrix`, small and large ``working_memory``), Dask (several
chunkings) and torch CPU tensors (float64 and float32; the fused products of
:mod:`asymkern._torch.fused`): blocks, whole matrices, G·B, Gᵀ·B and the row log-normalisers,
for ordinary data, huge logits (|γ⟨q, k⟩| ~ 1e4 and ~700, a row where one logit dominates by
more than 800), a reference set R ≠ Z (values above 1), rows of zeros, n or m = 1, an
explicit ``gamma`` and float32 input. Then the estimators (KernelSVD with every solver,
AsKLS with the Nyström option) agree across executors and are reproducible, inputs are never
modified, bad input (NaN, infinity, sparse, Nyström machines) is refused naming what is wrong,
and ``precision='low'`` keeps the singular values.

Tolerances follow the rounding of the logits: a float computation of γ⟨q, k⟩ carries an
absolute error of about eps·|γ⟨q, k⟩|, which moves κ by that much relatively, so values are
compared within ``TOL_FACTOR``·eps·(1 + max|logit|) (times max κ), products within that times
the largest column sum of |B|. The worst errors measured are recorded beside each check.

The defects this review found (torch's LU basis raising on a rank-deficient iterate, the
float16 passes missing σ₂… of a nearly constant matrix, a reference set of other features
accepted) are fixed; their tests close the module.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

import asymkern
from asymkern import KernelSVD
from asymkern.kernels import KernelMatrix, get_kernel

torch = pytest.importorskip("torch")
da = pytest.importorskip("dask.array")

from asymkern._torch.kernels import TorchKernel, TorchKernelMatrix  # noqa: E402

#: values within TOL_FACTOR·eps·(1 + max|logit|) (times max κ; products: times max Σ|B|):
#: measured at most 0.97 of that unit, float64 and float32 alike (worst: torch's blocks at
#: logits ~700, torch's float32 log-normalisers over a reference set)
TOL_FACTOR = 64.0


# --------------------------------------------------------------------------- references
def _reference(Q, K, gamma=None, R=None):
    """(κ(Q, K), log Σ_{r∈R} exp(γ⟨q, r⟩), max |logit|) in float64 from the inputs as given
    (float32 inputs: their exact float64 values)."""
    Q, K = np.asarray(Q, dtype=np.float64), np.asarray(K, dtype=np.float64)
    R = K if R is None else np.asarray(R, dtype=np.float64)
    g = 1.0 / np.sqrt(Q.shape[1]) if gamma is None else gamma
    lse = logsumexp(g * (Q @ R.T), axis=1)
    L = g * (Q @ K.T)
    top = max(np.abs(L).max(), np.abs(g * (Q @ R.T)).max())
    return np.exp(L - lse[:, None]), lse, float(top)


def _case(name: str):
    """(Q, K, gamma, R) of the value checks."""
    rng = np.random.default_rng(sum(map(ord, name)))
    Q, K = rng.standard_normal((37, 5)), rng.standard_normal((29, 5))
    if name == "ordinary":
        return Q, K, None, None
    if name == "explicit_gamma":
        return Q, K, 0.37, None
    if name == "logits_1e4":  # |γ⟨q, k⟩| up to ~1e4: exp overflows, κ does not
        return 45.0 * Q, 45.0 * K, 1.0, None
    if name == "logits_700":  # around the float64 exp limit
        return Q, K, 700.0 / 5.0, None
    if name == "dominant":  # row 5: one logit above the others by 900
        Q[:, 0] = 0.0
        Q[5] = 0.0
        Q[5, 0] = 900.0
        K[0] = 0.0
        K[0, 0] = 1.0
        K[1:, 0] = np.minimum(K[1:, 0], 0.0)
        return Q, K, 1.0, None
    if name == "reference":  # R ≠ Z: values far above 1 (up to ~1e9)
        return Q, K, 2.0, rng.standard_normal((17, 5)) + 1.0
    if name == "zero_rows":
        Q[3], K[7] = 0.0, 0.0
        return Q, K, None, None
    if name == "n1":
        return Q[:1], K, None, None
    if name == "m1":
        return Q, K[:1], None, None
    raise AssertionError(name)


CASES = ["ordinary", "explicit_gamma", "logits_1e4", "logits_700", "dominant", "reference",
         "zero_rows", "n1", "m1"]


def _np(x):
    if hasattr(x, "compute"):
        x = x.compute()
    if torch.is_tensor(x):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


class _Exec:
    """One executor's view of G: ``dense()``, ``mm(B)``, ``rm(C)``, ``lse()``."""

    def __init__(self, kind: str, Q, K, gamma, R, dtype):
        self.kind, kern = kind, get_kernel("softmax", gamma=gamma)
        if kind.startswith("numpy"):
            wm = 0.002 if kind == "numpy-small" else 64.0
            self.G = KernelMatrix(kern, Q.astype(dtype), K.astype(dtype),
                                  reference=None if R is None else R.astype(dtype),
                                  working_memory=wm)
        elif kind.startswith("dask"):
            rq, rk = {"dask-small": (7, 6), "dask-one": (Q.shape[0], K.shape[0]),
                      "dask-odd": (13, 11)}[kind]
            self.G = KernelMatrix(
                kern, da.from_array(Q.astype(dtype), chunks=(rq, -1)),
                da.from_array(K.astype(dtype), chunks=(rk, -1)),
                reference=None if R is None else da.from_array(R.astype(dtype), chunks=(5, -1)))
        else:
            t = {np.float64: torch.float64, np.float32: torch.float32}[dtype]
            self.G = TorchKernelMatrix(
                TorchKernel(kern, Q.shape[1]), torch.as_tensor(Q, dtype=t),
                torch.as_tensor(K, dtype=t),
                reference=None if R is None else torch.as_tensor(R, dtype=t),
                working_memory=0.002)
        self.dtype = dtype

    def _arg(self, B):
        B = B.astype(self.dtype)
        return torch.as_tensor(B) if self.kind == "torch" else B

    def dense(self):
        return _np(self.G.to_dense() if self.kind == "torch" else self.G.to_array())

    def mm(self, B):
        return _np(self.G.matmat(self._arg(B)))

    def rm(self, C):
        return _np(self.G.rmatmat(self._arg(C)))

    def lse(self):
        if self.kind == "torch":
            ln = self.G.log_norm()
            return _np(ln[:, 0] + ln[:, 1])
        return _np(self.G.row_lse())

    def block(self, rows, cols):
        return _np(self.G.block(rows, cols))


EXECUTORS = ["numpy-small", "numpy-large", "dask-small", "dask-one", "dask-odd", "torch"]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES)
def test_values_products_and_normalisers_equal_the_reference(case, dtype):
    """Measured worst (error / (eps·(1 + max|logit|)·scale)): values 0.70, log-normalisers
    0.97, G·B 0.04, Gᵀ·B 0.11, on every executor and both dtypes."""
    Q, K, gamma, R = _case(case)
    rng = np.random.default_rng(7)
    B = rng.standard_normal((K.shape[0], 3)).astype(dtype)
    C = rng.standard_normal((Q.shape[0], 2)).astype(dtype)
    A, lse, top = _reference(Q.astype(dtype), K.astype(dtype), gamma,
                             None if R is None else R.astype(dtype))
    eps = float(np.finfo(dtype).eps)
    tol = TOL_FACTOR * eps * (1.0 + top) * max(1.0, A.max())
    B64, C64 = B.astype(np.float64), C.astype(np.float64)
    for kind in EXECUTORS:
        ex = _Exec(kind, Q, K, gamma, R, dtype)
        what = f"{kind} {case} {np.dtype(dtype).name}"
        assert np.abs(ex.lse() - lse).max() <= TOL_FACTOR * eps * (1.0 + top), what
        D = ex.dense()
        assert D.shape == A.shape and np.all(np.isfinite(D)), what
        assert np.abs(D - A).max() <= tol, what
        assert np.abs(ex.mm(B) - A @ B64).max() <= tol * np.abs(B64).sum(0).max(), what
        assert np.abs(ex.rm(C) - A.T @ C64).max() <= tol * np.abs(C64).sum(0).max(), what
        if kind != "dask-small":  # blocks of a fresh matrix (normalisers not yet known)
            ex = _Exec(kind, Q, K, gamma, R, dtype)
            rows, cols = np.array([0, Q.shape[0] - 1]), np.array([K.shape[0] - 1, 0])
            assert np.abs(ex.block(rows, cols) - A[np.ix_(rows, cols)]).max() <= tol, what
        if R is None:
            assert np.allclose(D.sum(axis=1), 1.0, atol=tol * K.shape[0]), what


def test_dominant_row_is_one_hot_and_large_logits_give_finite_log_normalisers():
    Q, K, gamma, _ = _case("dominant")
    G = KernelMatrix(get_kernel("softmax", gamma=gamma), Q, K)
    row = G.to_array()[5]
    assert row[0] == 1.0 and np.all(row[1:] == 0.0)  # exp(−900) underflows to exactly 0
    Q, K, gamma, _ = _case("logits_1e4")
    for X, Z in ((Q, K), (da.from_array(Q, chunks=(9, -1)), da.from_array(K, chunks=(8, -1)))):
        G = KernelMatrix(get_kernel("softmax", gamma=gamma), X, Z)
        assert np.all(np.isfinite(_np(G.row_lse())))
        with pytest.raises(OverflowError, match="row_lse"):  # exp(lse) beyond float64
            _np(G.row_normalizers())


def test_blocking_and_config_context_do_not_change_values():
    """Measured: at most 4e-16 (float64) apart between 0.002 MiB blocks and one block."""
    Q, K, gamma, R = _case("reference")
    rng = np.random.default_rng(3)
    B = rng.standard_normal((K.shape[0], 2))
    out = []
    for wm in (0.002, 0.05, 512.0):
        with asymkern.config_context(working_memory=wm):
            G = KernelMatrix(get_kernel("softmax", gamma=gamma), Q, K, reference=R)
            out.append((G.to_array(), G.matmat(B), G.row_lse()))
    for a, b in zip(out[0], out[2]):
        assert np.abs(a - b).max() <= 1e-13 * max(1.0, np.abs(b).max())
    for a, b in zip(out[1], out[2]):
        assert np.abs(a - b).max() <= 1e-13 * max(1.0, np.abs(b).max())
    Q, K, gamma, _ = _case("logits_1e4")
    a = KernelMatrix(get_kernel("softmax", gamma=gamma), Q, K, working_memory=0.002)
    b = KernelMatrix(get_kernel("softmax", gamma=gamma), Q, K, working_memory=512.0)
    assert np.abs(a.to_array() - b.to_array()).max() <= 1e-12
    assert np.abs(a.row_lse() - b.row_lse()).max() <= 64 * 2.0**-52 * 1e4


# --------------------------------------------------------------------------- estimators
def _data(seed=0, n=160, m=130, d=6, scale=1.0):
    rng = np.random.default_rng(seed)
    return scale * rng.standard_normal((n, d)), scale * rng.standard_normal((m, d))


def _inputs(kind: str, Q, K):
    if kind == "numpy":
        return Q, K, {}
    if kind == "dask":
        return da.from_array(Q, chunks=(45, -1)), da.from_array(K, chunks=(40, -1)), {}
    if kind == "torch64":
        return torch.as_tensor(Q), torch.as_tensor(K), {}
    if kind == "torch32":
        return (torch.as_tensor(Q, dtype=torch.float32), torch.as_tensor(K, dtype=torch.float32),
                {})
    return Q, K, {"device": "cpu"}  # numpy data on the torch backend


@pytest.mark.parametrize("solver,scale,gamma", [
    ("dense", 1.0, None), ("dense", 6.0, 1.0), ("randomized", 1.0, None),
    ("randomized", 6.0, 1.0), ("block_krylov", 1.0, None), ("arpack", 6.0, 1.0),
    ("nystrom", 1.0, None)])
def test_ksvd_agrees_across_executors_and_is_reproducible(solver, scale, gamma):
    """Measured: numpy, Dask and torch float64 within 2e-15·σ₁ of each other, torch float32
    within 3e-7·σ₁; refits with the same random_state equal."""
    Q, K = _data(scale=scale)
    kw = {"n_row_landmarks": 80, "n_col_landmarks": 80} if solver == "nystrom" else {}
    kinds = ["numpy", "dask", "torch64", "torch32"] + (["device"] if solver == "randomized" else [])
    res = {}
    for kind in kinds:
        X, Z, extra = _inputs(kind, Q, K)
        fits = [KernelSVD(4, kernel="softmax", gamma=gamma, center=False, solver=solver,
                          random_state=5, **kw, **extra).fit(X, Z=Z)
                for _ in range(1 if solver == "dense" else 2)]
        s = [_np(f.singular_values_) for f in fits]
        assert np.abs(s[0] - s[-1]).max() <= 1e-12 * s[0][0], kind
        res[kind] = s[0]
    ref = res["numpy"]
    for kind, s in res.items():
        tol = 1e-5 if kind == "torch32" else 1e-10
        assert s.shape == ref.shape and np.abs(s - ref).max() <= tol * ref[0], kind
    if solver in ("dense", "arpack"):
        A, _, _ = _reference(Q, K, gamma)
        want = np.linalg.svd(A, compute_uv=False)[:4]
        assert np.abs(ref - want).max() <= 1e-10 * want[0]


def test_askls_with_nystrom_agrees_across_executors():
    """Measured: Dask's decision values within 1.1e-15 (relative) of numpy's. (AsKLS has no
    torch executor: tensors are read on the host.)"""
    from asymkern.lssvm._estimators import AsKLSClassifier

    rng = np.random.default_rng(1)
    X = rng.standard_normal((120, 5))
    y = (X[:, 0] + 0.3 * rng.standard_normal(120) > 0).astype(int)
    Xt = rng.standard_normal((30, 5))
    out = {}
    for kind in ("numpy", "dask"):
        if kind == "numpy":
            args, test = (X, y), Xt
        else:
            args = (da.from_array(X, chunks=(40, -1)), da.from_array(y, chunks=40))
            test = da.from_array(Xt, chunks=(10, -1))
        vals = [_np(AsKLSClassifier(kernel="softmax", cv=2, nystrom=30, random_state=0)
                    .fit(*args).decision_function(test)) for _ in range(2)]
        assert np.array_equal(vals[0], vals[1]), kind
        out[kind] = vals[0]
    for kind, v in out.items():
        assert np.abs(v - out["numpy"]).max() <= 1e-10 * np.abs(out["numpy"]).max(), kind


def test_inputs_are_never_modified():
    Q, K, gamma, R = _case("reference")
    rng = np.random.default_rng(2)
    B, C = rng.standard_normal((K.shape[0], 2)), rng.standard_normal((Q.shape[0], 2))
    arrays = [Q, K, R, B, C]
    before = [a.copy() for a in arrays]
    G = KernelMatrix(get_kernel("softmax", gamma=gamma), Q, K, reference=R, working_memory=0.002)
    G.to_array(), G.matmat(B), G.rmatmat(C), G.row_lse(), G.block([0, 1], [2, 3])
    KernelSVD(3, kernel="softmax", center=True, solver="randomized", random_state=0).fit(Q, Z=K)
    for a, b in zip(arrays, before):
        assert np.array_equal(a, b)
    for dt in (torch.float64, torch.float32):
        T = [torch.as_tensor(a, dtype=dt) for a in arrays]
        Tb = [t.clone() for t in T]
        for ref in (None, T[2]):
            G = TorchKernelMatrix(TorchKernel(get_kernel("softmax", gamma=1.0), 5), T[0], T[1],
                                  reference=ref)
            G.matmat(T[3]), G.rmatmat(T[4]), G.to_dense(), G.block(slice(0, 3), slice(None))
        for solver in ("dense", "randomized", "nystrom"):
            KernelSVD(3, kernel="softmax", gamma=1.0, solver=solver, random_state=0,
                      n_row_landmarks=20, n_col_landmarks=20).fit(T[0], Z=T[1])
        KernelSVD(3, kernel="softmax", solver="randomized", precision="low",
                  random_state=0).fit(T[0], Z=T[1])
        for a, b in zip(T, Tb):
            assert torch.equal(a, b)


# --------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["X", "Z", "reference"])
def test_non_finite_input_is_refused_naming_the_argument(where, bad):
    Q, K, _, R = _case("reference")
    Q, K, R = Q.copy(), K.copy(), R.copy()
    {"X": Q, "Z": K, "reference": R}[where][2, 1] = bad
    with pytest.raises(ValueError, match=where):
        KernelMatrix("softmax", Q, K, reference=R).to_array()
    with pytest.raises(ValueError, match=where):
        _np(KernelMatrix("softmax", da.from_array(Q, chunks=(10, -1)),
                         da.from_array(K, chunks=(10, -1)),
                         reference=da.from_array(R, chunks=(10, -1))).to_array())
    if where != "reference":
        with pytest.raises(ValueError, match=where):
            KernelSVD(2, kernel="softmax").fit(torch.as_tensor(Q), Z=torch.as_tensor(K))


def test_sparse_input_and_nystrom_machines_are_refused():
    import scipy.sparse as sp

    from asymkern.nystrom.estimators import NystromKernelRidge

    Q, K, _, _ = _case("ordinary")
    with pytest.raises(TypeError, match="sparse"):
        KernelMatrix("softmax", sp.csr_matrix(Q), K)
    with pytest.raises(TypeError, match="sparse"):
        KernelSVD(2, kernel="softmax").fit(sp.csr_matrix(Q), Z=K)
    with pytest.raises(ValueError, match="symmetric positive semi-definite"):
        NystromKernelRidge(n_landmarks=10, kernel="softmax").fit(Q, Q[:, 0])


def test_overflowing_logits_are_refused_on_every_executor():
    rng = np.random.default_rng(4)
    Q = (rng.standard_normal((12, 4)) * 1e19).astype(np.float32)
    K = (rng.standard_normal((9, 4)) * 1e19).astype(np.float32)
    k = get_kernel("softmax", gamma=1.0)
    with pytest.raises(OverflowError, match="softmax"):
        KernelMatrix(k, Q, K).to_array()
    G = TorchKernelMatrix(TorchKernel(k, 4), torch.as_tensor(Q), torch.as_tensor(K))
    for f in (lambda: G.matmat(torch.ones(9, 2)), lambda: G.rmatmat(torch.ones(12, 2)),
              G.to_dense):
        with pytest.raises(OverflowError, match="softmax"):
            f()


# --------------------------------------------------------------------------- precision
@pytest.mark.parametrize("scale,gamma", [(1.0, None), (1.0, 3.0), (10.0, 1.0)])
def test_low_precision_keeps_the_singular_values(scale, gamma):
    """Documented: within 1e-4·σ₁ of the full-precision fit. Measured: 3e-6·σ₁ (torch
    float16 passes), 2e-12·σ₁ (numpy float32 passes)."""
    Q, K = _data(seed=3, n=300, m=240, scale=scale)
    f32 = torch.float32
    for X, Z in ((Q, K), (torch.as_tensor(Q), torch.as_tensor(K)),
                 (torch.as_tensor(Q, dtype=f32), torch.as_tensor(K, dtype=f32))):
        s = {}
        for prec in ("high", "low"):
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)  # no fallback to 'high'
                m = KernelSVD(5, kernel="softmax", gamma=gamma, center=False,
                              solver="randomized", precision=prec, random_state=0).fit(X, Z=Z)
            s[prec] = _np(m.singular_values_)
        assert np.abs(s["low"] - s["high"]).max() <= 1e-4 * s["high"][0]


def test_low_precision_over_another_reference_set_is_refused_on_torch():
    from asymkern.linalg import randomized_svd

    Q, K, gamma, R = _case("reference")
    G = TorchKernelMatrix(TorchKernel(get_kernel("softmax", gamma=gamma), 5), torch.as_tensor(Q),
                          torch.as_tensor(K), reference=torch.as_tensor(R))
    with pytest.raises(ValueError, match="precision"):
        randomized_svd(G, 2, random_state=0, precision="low")


# ------------------------------------------------- defects found by this review (now fixed)
def test_torch_randomized_solver_on_a_rank_deficient_softmax_matrix():
    Q, K = np.zeros((100, 4)), np.random.default_rng(0).standard_normal((80, 4))
    want = KernelSVD(3, kernel="softmax", center=False, solver="randomized",
                     random_state=0).fit(Q, Z=K).singular_values_
    got = KernelSVD(3, kernel="softmax", center=False, solver="randomized",
                    random_state=0).fit(torch.as_tensor(Q), Z=torch.as_tensor(K))
    assert abs(float(got.singular_values_[0]) - want[0]) <= 1e-12


def test_torch_low_precision_with_a_small_gamma():
    Q, K = _data(seed=0, n=400, m=300)
    high = KernelSVD(5, kernel="softmax", gamma=1e-3, center=False, solver="randomized",
                     random_state=0).fit(torch.as_tensor(Q), Z=torch.as_tensor(K))
    # the float16 passes cannot resolve σ₂… of a matrix this close to constant (they came out
    # 80 % low): they are run again in full precision, with a warning that says why
    with pytest.warns(RuntimeWarning, match="cannot resolve singular value 2"):
        low = KernelSVD(5, kernel="softmax", gamma=1e-3, center=False, solver="randomized",
                        precision="low", random_state=0).fit(torch.as_tensor(Q),
                                                             Z=torch.as_tensor(K))
    s_high, s_low = _np(high.singular_values_), _np(low.singular_values_)
    assert np.abs(s_low - s_high).max() <= 1e-4 * s_high[0]


def test_reference_with_other_features_is_refused_naming_reference():
    Q, K, _, R = _case("reference")
    with pytest.raises(ValueError, match="reference has 3 features"):
        KernelMatrix("softmax", Q, K, reference=R[:, :3]).matmat(np.ones(K.shape[0]))
    with pytest.raises(ValueError, match="reference has 3 features"):  # the Dask operator
        KernelMatrix("softmax", da.from_array(Q, chunks=(7, -1)), da.from_array(K),
                     reference=da.from_array(R[:, :3]))
