"""The operator estimators fix each eigen/singular function's free sign (complex phase for the
transfer operators) by one rule on its values at the fit's own points: the largest-magnitude
value made real and positive, the lowest index winning a tie within a relative 1e-8.

The coefficients of a function are not unique when the Gram matrix is singular, and the
landmark estimators hold them in a whitened basis whose column signs ``eigh`` leaves free, so a
rule read on coefficients gave opposite functions on numpy and torch, or with the eigensolvers'
signs flipped. The evaluated functions must agree, on full-rank data, on rank-deficient data
(duplicated samples; a linear kernel on 3-D data) and on an integer grid where f(x) = −f(x′)
ties the largest magnitude exactly.

Tolerance: a flipped function differs by 2·max|f|; the functions agree to about 1e-11 of
max|f| (measured, the worst case the linear kernel on the integer grid), so 1e-7 of max|f|
is far from both.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg

import asymkern._shared.operators as shared_ops
from asymkern.operators import (
    CovarianceOperator,
    CrossCovarianceOperator,
    KernelCCA,
    KoopmanOperator,
    PerronFrobeniusOperator,
)

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None

RTOL = 1e-7


def _data(name: str) -> dict:
    """X (fit), T (shifted snapshots), y (second view), Xn, yn (new points), kernel."""
    r = np.random.default_rng(int(name[4:]) if name.startswith("full") else 0)
    A = np.eye(3) * 0.8
    A[0, -1] = 0.3
    noise = r
    if name.startswith("full"):  # full-rank Gram: seeds where the landmark Koopman flipped
        X = r.standard_normal((80, 3))
        kernel, params = "rbf", {"gamma": 2.0}
    elif name == "dup":  # every sample three times: G has rank n/3
        X0 = r.standard_normal((30, 3))
        X = np.r_[X0, X0, X0][r.permutation(90)]
        kernel, params = "rbf", {"gamma": 0.5}
        noise = np.random.default_rng(5)
    elif name == "lin3":  # linear kernel on 3-D data: G has rank 3
        X = r.standard_normal((80, 3))
        kernel, params = "linear", {}
        noise = np.random.default_rng(5)
    else:  # 'grid': integer grid, linear kernel: exact ties f(x) = −f(x′)
        X = r.integers(-2, 3, (80, 3)).astype(float)
        kernel, params = "linear", {}
        noise = np.random.default_rng(5)
    T = X @ A.T + 0.05 * noise.standard_normal(X.shape)
    if name == "grid":
        y = np.c_[X[:, 0] + X[:, 1], X[:, 2]]
    else:
        y = np.c_[np.sin(X[:, 0]), X[:, 1]]
    Xn = np.random.default_rng(9).standard_normal((25, 3))
    yn = np.random.default_rng(10).standard_normal((25, 2))
    return dict(X=X, T=T, y=y, Xn=Xn, yn=yn, kernel=kernel, params=params)


def _estimators(d: dict) -> dict:
    k, p = d["kernel"], d["params"]
    two = dict(kernel_x=k, kernel_x_params=p, kernel_y=k, kernel_y_params=p, n_components=2)
    out = {
        "cov": lambda: CovarianceOperator(kernel=k, kernel_params=p, n_components=3),
        "cov_c": lambda: CovarianceOperator(kernel=k, kernel_params=p, n_components=3,
                                            center=True),
        "xcov": lambda: CrossCovarianceOperator(**two),
        "xcov_c": lambda: CrossCovarianceOperator(**two, center=True),
        "kcca": lambda: KernelCCA(**two),
        "kcca_u": lambda: KernelCCA(**two, center=False),
    }
    for e in ("full", "pcr", "rrr"):
        kw = dict(kernel=k, kernel_params=p, n_components=3, estimator=e, alpha=1e-3,
                  rank=None if e == "full" else 3)
        out[f"koop_{e}"] = lambda kw=kw: KoopmanOperator(**kw)
        out[f"pf_{e}"] = lambda kw=kw: PerronFrobeniusOperator(**kw)
        out[f"kooplm_{e}"] = lambda kw=kw: KoopmanOperator(**kw, n_landmarks=30, random_state=0)
    return out


DATA = ("full0", "full6", "dup", "lin3", "grid")
NAMES = tuple(_estimators(_data("grid")))


def _host(a) -> np.ndarray:
    if torch is not None and isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def _functions(est, d: dict, conv) -> dict:
    """Every evaluated function the estimator exposes, at new points and at the fit's X."""
    out = {}
    for attr in ("eigenfunctions_", "left_eigenfunctions_", "right_singular_functions_",
                 "left_singular_functions_", "x_canonical_functions_", "y_canonical_functions_",
                 "x_singular_functions_", "y_singular_functions_"):
        f = getattr(est, attr, None)
        if f is None:
            continue
        y_side = attr.startswith(("y_", "left_singular"))
        out[attr] = f(d["yn"] if y_side else d["Xn"])
        out[attr + "@train"] = f(d["y"] if y_side else d["X"])
    if hasattr(est, "transform"):
        out["transform"] = _host(est.transform(conv(d["Xn"])))
    return out


def _fit(name: str, d: dict, conv=lambda a: a):
    est = _estimators(d)[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # clipping / conditioning warnings: not the point here
        if name.startswith(("koop", "pf")):
            est.fit(conv(d["X"]), conv(d["T"]))
        elif name.startswith("cov"):
            est.fit(conv(d["X"]))
        else:
            est.fit(conv(d["X"]), conv(d["y"]))
        return _functions(est, d, conv)


def _assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        fa, fb = np.atleast_2d(a[key].T).T, np.atleast_2d(b[key].T).T
        assert fa.shape == fb.shape, key
        scale = np.maximum(np.abs(fa).max(axis=0), 1e-300)
        err = np.abs(fb - fa).max(axis=0) / scale
        assert np.all(err <= RTOL), f"{key}: relative differences {err}"


def _flip_columns(V: np.ndarray) -> np.ndarray:
    """Another valid choice of the eigen/singular vectors' signs: every other column negated."""
    return V * np.where(np.arange(V.shape[-1]) % 2 == 0, -1.0, 1.0)


def _flip_lapack(monkeypatch) -> None:
    """scipy's eigh, eig and svd with every other vector's sign flipped (as another LAPACK
    build, thread count or executor may return them)."""
    eigh, eig, svd = scipy.linalg.eigh, scipy.linalg.eig, scipy.linalg.svd

    def f_eigh(*args, **kwargs):
        res = eigh(*args, **kwargs)
        return (res[0], _flip_columns(res[1])) if isinstance(res, tuple) else res

    def f_eig(*args, **kwargs):
        res = eig(*args, **kwargs)
        return (res[0], _flip_columns(res[1])) + tuple(res[2:]) if isinstance(res, tuple) \
            else res

    def f_svd(*args, **kwargs):
        res = svd(*args, **kwargs)
        if not isinstance(res, tuple):
            return res
        U, s, Vt = res
        return _flip_columns(U), s, _flip_columns(Vt.T).T

    monkeypatch.setattr(scipy.linalg, "eigh", f_eigh)
    monkeypatch.setattr(scipy.linalg, "eig", f_eig)
    monkeypatch.setattr(scipy.linalg, "svd", f_svd)


def _flip_whitening(monkeypatch) -> None:
    """The landmark whitening T = QΛ^{-1/2} with every other column flipped."""
    whiten = shared_ops.landmark_whitening
    monkeypatch.setattr(shared_ops, "landmark_whitening", lambda K: _flip_columns(whiten(K)))


@pytest.mark.parametrize("data", DATA)
@pytest.mark.parametrize("name", NAMES)
def test_functions_do_not_depend_on_the_eigensolvers_signs(name, data, monkeypatch):
    d = _data(data)
    ref = _fit(name, d)
    _flip_lapack(monkeypatch)
    _assert_same(ref, _fit(name, d))


@pytest.mark.parametrize("data", DATA)
@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("kooplm")])
def test_landmark_functions_do_not_depend_on_the_whitening_basis(name, data, monkeypatch):
    d = _data(data)
    ref = _fit(name, d)
    _flip_whitening(monkeypatch)
    _assert_same(ref, _fit(name, d))


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("data", DATA)
@pytest.mark.parametrize("name", NAMES)
def test_torch_functions_equal_numpy(name, data):
    d = _data(data)
    _assert_same(_fit(name, d), _fit(name, d, lambda a: torch.from_numpy(a.copy())))


@pytest.mark.parametrize("name", ["cov", "kooplm_full", "koop_rrr"])
def test_the_rule_holds_at_the_training_points(name):
    """The largest-magnitude value at the fit's points is positive, the first one on a tie."""
    from asymkern.operators._numerics import SIGN_TIE_RTOL

    d = _data("grid")
    vals = _fit(name, d)["eigenfunctions_@train"]
    if name == "kooplm_full":  # the landmark estimators read the values at the landmarks
        est = _estimators(d)[name]()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(d["X"], d["T"])
        vals = est.eigenfunctions_(est.landmark_points_)
    absv = np.abs(vals)
    for j in range(vals.shape[1]):
        first = np.flatnonzero(absv[:, j] >= (1 - SIGN_TIE_RTOL) * absv[:, j].max())[0]
        top = vals[first, j]
        assert abs(np.imag(top)) <= 1e-12 * abs(top) and np.real(top) > 0


def test_value_phases_tie_break_and_phase():
    from asymkern.operators._numerics import value_phases

    V = np.array([[1.0, 2.0, 1j], [-1.0, -2.0 + 1e-12, -1j], [0.5, 1.0, 0.0]])
    c = value_phases(V)
    np.testing.assert_array_equal(c[:2], [1.0, 1.0])  # lowest index wins the (near-)tie
    assert abs(c[2] - (-1j)) < 1e-15  # i·(−i) = 1: real positive
    V2 = -V
    np.testing.assert_allclose(value_phases(V2) * V2[0], c * V[0])
    np.testing.assert_array_equal(value_phases(np.zeros((3, 2))), [1.0, 1.0])


# ---------------------------------------------------------------- EmpiricalOperator (public)
def _empirical(d: dict, center: bool, square: bool):
    """S = Ψ B Φᵀ on the data of ``d``: the covariance-like operator (same samples, symmetric
    B) when ``square``, else the cross-covariance-like one from x to the second view y."""
    from asymkern.operators import EmpiricalOperator

    n = d["X"].shape[0]
    B = np.eye(n) / n
    if not square:
        B = B + 0.3 * np.random.default_rng(3).standard_normal((n, n)) / n
    Y = d["X"] if square else d["y"]
    return EmpiricalOperator(d["kernel"], d["X"], d["kernel"], Y, B,
                             kernel_in_params=d["params"], kernel_out_params=d["params"],
                             center_in=center, center_out=center)


@pytest.mark.parametrize("data", DATA)
@pytest.mark.parametrize("center", [False, True])
def test_empirical_operator_svd_routes_give_the_same_functions(data, center):
    """The three SVD routes (Mollenhauer et al., 2020, Cor. 3.5, Prop. 3.13, Thm. 3.17) hold
    the singular functions in different coefficients; evaluated, they agree, signs included,
    and the rule holds at X (the right functions' largest value positive; centred values in
    a centred fit, as the estimators' transform returns them)."""
    d = _data(data)
    op = _empirical(d, center, square=False)
    ref = op.svd(2, method="qr")
    vx = ref.right(d["X"])
    if center:  # the values of the centred functions (their means at X subtracted)
        vx = vx - vx.mean(axis=0)
    top = np.abs(vx).argmax(axis=0)
    assert (vx[top, [0, 1]] > 0).all()
    for method in ("auxiliary", "block"):
        res = op.svd(2, method=method)
        np.testing.assert_allclose(res.singular_values, ref.singular_values, rtol=1e-6)
        for side, Z in (("right", d["Xn"]), ("left", d["yn"])):
            a, b = getattr(res, side)(Z), getattr(ref, side)(Z)
            assert np.abs(a - b).max() <= 1e-5 * np.abs(b).max(), (method, side)


@pytest.mark.parametrize("data", DATA)
@pytest.mark.parametrize("center", [False, True])
def test_empirical_operator_eig_matches_the_covariance_estimator(data, center):
    """A covariance operator written as an EmpiricalOperator (B = I/n) has the eigenfunctions
    of :class:`CovarianceOperator` (same sign rule), by both eig routes."""
    d = _data(data)
    op = _empirical(d, center, square=True)
    est = CovarianceOperator(kernel=d["kernel"], kernel_params=d["params"], n_components=2,
                             center=center).fit(d["X"])
    want = est.eigenfunctions_(d["Xn"])
    for method in ("qr", "auxiliary"):
        got = np.real(op.eig(2, method=method).eigenfunctions(d["Xn"]))
        assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max(), method
