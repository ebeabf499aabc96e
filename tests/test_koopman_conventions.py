"""Conventions users bring from scikit-learn and kooplearn (transfer operators).

* ``alpha=None`` (and ``alpha=0``): the unregularised estimators, solved with pseudo-inverses
  (eigenvalues at or below n·eps·λ_max dropped), with an ``IllConditionedGramWarning`` when the
  kept spectrum has a condition number above 1/√eps; every ``estimator=`` (exact and Nyström)
  and every executor (numpy, torch, dask).
* ``KoopmanOperator.score(multioutput=...)``: :func:`sklearn.metrics.r2_score`'s options; the
  default ``None`` keeps the pooled ``'variance_weighted'`` R² with a ``FutureWarning`` for a
  multi-feature state.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from _transfer_checks import TRANSFER_CHECKS
from sklearn.metrics import r2_score
from sklearn.utils.estimator_checks import parametrize_with_checks

from asymkern.exceptions import ClippedParameterWarning
from asymkern.operators import (
    ConditionalMeanEmbedding,
    IllConditionedLaggedGramWarning,
    KoopmanOperator,
    PerronFrobeniusOperator,
)
from asymkern.operators._numerics import COND_MAX, IllConditionedGramWarning

A_TRUE = np.array([[0.9, 0.2], [-0.1, 0.7]])
ESTIMATORS = ("full", "pcr", "rrr")


def _linear_trajectory(n: int = 241, seed: int = 0) -> np.ndarray:
    """x_{t+1} = A x_t + noise (2-D): with the linear kernel the unregularised Koopman
    estimator of the state is ordinary least squares, x ↦ x W with W = X⁺ Y."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, 2))
    x[0] = [1.0, -0.5]
    for t in range(n - 1):
        x[t + 1] = A_TRUE @ x[t] + 0.1 * rng.standard_normal(2)
    return x


def _lstsq(x: np.ndarray) -> np.ndarray:
    """The dense least-squares reference W (2×2) of the pairs (x_t, x_{t+1})."""
    W, *_ = np.linalg.lstsq(x[:-1], x[1:], rcond=None)
    return W


def _quiet(est, *args, **kw):
    """``est.fit`` without the conditioning warnings (checked by their own tests)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return est.fit(*args, **kw)


def _rbf_pairs(n: int = 20):
    """Snapshot pairs on a grid with a narrow RBF kernel: G well conditioned (cond ≈ 1e2)."""
    X = np.linspace(0.0, 1.0, n)[:, None]
    return X, 0.6 * X + 0.2 * np.sin(3.0 * X)


# --------------------------------------------------------------------------- alpha=None
@pytest.mark.parametrize("landmarks", [None, 12])
@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_alpha_none_is_least_squares(estimator, landmarks):
    x = _linear_trajectory()
    W = _lstsq(x)
    kw = dict(kernel="linear", estimator=estimator, rank=2, n_components=2, alpha=None)
    if landmarks is not None:
        kw.update(n_landmarks=landmarks, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedGramWarning)  # a rank-2 G is not ill-posed
        est = KoopmanOperator(**kw).fit(x)
    Z = x[:7]
    np.testing.assert_allclose(est.predict(Z), Z @ W, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(est.predict(Z, n_steps=3), Z @ W @ W @ W, rtol=1e-6, atol=1e-10)
    lam = np.linalg.eigvals(W)
    np.testing.assert_allclose(np.sort_complex(est.eigenvalues_), np.sort_complex(lam),
                               rtol=1e-6)
    # alpha=0 is the same estimator, bit for bit
    kw["alpha"] = 0
    np.testing.assert_array_equal(KoopmanOperator(**kw).fit(x).predict(Z, n_steps=3),
                                  est.predict(Z, n_steps=3))


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_alpha_none_perron_frobenius_eigenvalues(estimator):
    x = _linear_trajectory(121)
    lam = np.sort_complex(np.linalg.eigvals(_lstsq(x)))
    est = PerronFrobeniusOperator(kernel="linear", estimator=estimator, rank=2, n_components=2,
                                  alpha=None)
    if estimator == "full":  # G_XY = X Yᵀ has rank 2: the truncated pseudo-inverse, announced
        with pytest.warns(IllConditionedLaggedGramWarning, match="alpha=None"):
            est.fit(x)
        assert est.lagged_gram_solver_ == "pinv"
    else:
        est.fit(x)
    np.testing.assert_allclose(np.sort_complex(est.eigenvalues_), lam, rtol=1e-6)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_alpha_none_agrees_with_tiny_alpha(estimator):
    X, Y = _rbf_pairs()
    G = np.exp(-200.0 * (X - X.T) ** 2)
    assert np.linalg.cond(G) < 1e4  # well conditioned: ε = 1e-12 changes ~1e-10 relatively
    kw = dict(kernel="rbf", kernel_params={"gamma": 200.0}, estimator=estimator, rank=8,
              n_components=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedGramWarning)
        a = KoopmanOperator(alpha=None, **kw).fit(X, Y)
    b = KoopmanOperator(alpha=1e-12, **kw).fit(X, Y)
    Z = np.linspace(0.05, 0.95, 9)[:, None]
    for k in (1, 4):
        pa, pb = a.predict(Z, n_steps=k), b.predict(Z, n_steps=k)
        np.testing.assert_allclose(pa, pb, rtol=1e-6, atol=1e-9 * np.abs(pb).max())
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, rtol=1e-6)
    # and a larger alpha does change the estimate (the comparison above is not vacuous)
    c = KoopmanOperator(alpha=1e-2, **kw).fit(X, Y)
    assert np.abs(c.predict(Z, n_steps=4) - pa).max() > 1e-4


@pytest.mark.parametrize("landmarks", [None, 25])
@pytest.mark.parametrize("estimator", ["full", "rrr"])
def test_alpha_none_duplicated_samples_warns_and_stays_finite(estimator, landmarks):
    x = _linear_trajectory(41)[:, :1]
    X, Y = np.repeat(x[:-1], 2, axis=0), np.repeat(x[1:], 2, axis=0)  # every pair twice
    kw = dict(kernel="rbf", kernel_params={"gamma": 0.5}, estimator=estimator, rank=6,
              n_components=3, alpha=None)
    if landmarks is not None:
        kw.update(n_landmarks=landmarks, random_state=0)
    with pytest.warns(IllConditionedGramWarning, match=r"alpha=None .*ill-conditioned"):
        est = KoopmanOperator(**kw).fit(X, Y)
    assert np.all(np.isfinite(est.predict(X, n_steps=3)))
    assert np.all(np.isfinite(est.eigenvalues_))
    assert est.score(X, Y) > 0.5  # still a sensible (least-squares) regression
    pf = PerronFrobeniusOperator(kernel="rbf", kernel_params={"gamma": 0.5},
                                 estimator=estimator, rank=6, n_components=3, alpha=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllConditionedLaggedGramWarning)  # 'full': G_XY too
        with pytest.warns(IllConditionedGramWarning):
            pf.fit(X, Y)
    assert np.all(np.isfinite(pf.eigenvalues_)) and pf.eigenvalues_.size > 0


def test_ill_conditioning_threshold_documented():
    assert COND_MAX == pytest.approx(1 / np.sqrt(np.finfo(float).eps))
    assert issubclass(IllConditionedGramWarning, RuntimeWarning)


def test_alpha_none_pcr_truncation_needs_no_warning():
    """PCR keeps the top r eigenpairs: the truncation is the regulariser, duplicates are fine."""
    x = _linear_trajectory(41)[:, :1]
    X, Y = np.repeat(x[:-1], 2, axis=0), np.repeat(x[1:], 2, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedGramWarning)
        est = KoopmanOperator(kernel_params={"gamma": 0.5}, estimator="pcr", rank=3,
                              n_components=2, alpha=None).fit(X, Y)
    assert np.all(np.isfinite(est.predict(X)))


def test_alpha_none_pickles():
    """The pseudo-inverse is not pickled but recomputed, without a second warning."""
    X, Y = _rbf_pairs()
    est = KoopmanOperator(kernel_params={"gamma": 200.0}, alpha=None, n_components=2).fit(X, Y)
    ref = est.predict(X, n_steps=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = pickle.loads(pickle.dumps(est))
        np.testing.assert_allclose(back.predict(X, n_steps=3), ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(back.operator_.B._apply(Y), est.operator_.B._apply(Y),
                                   rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("alpha, err, match", [
    (-1e-3, ValueError, r"alpha must be finite and > 0 .*, or None or 0"),
    (float("nan"), ValueError, "alpha must be finite"),
    (float("inf"), ValueError, "alpha must be finite"),
    ("1e-3", TypeError, "alpha must be None or a real number"),
    (True, TypeError, "alpha must be None or a real number"),
])
@pytest.mark.parametrize("cls", [KoopmanOperator, PerronFrobeniusOperator])
def test_alpha_still_refuses_negative_and_junk(cls, alpha, err, match):
    x = _linear_trajectory(30)
    with pytest.raises(err, match=match):
        cls(alpha=alpha).fit(x)


def test_alpha_none_other_estimators_unchanged():
    """The conditional mean embedding keeps its strict rule (not a transfer operator)."""
    X, Y = _rbf_pairs()
    with pytest.raises(TypeError, match="alpha"):
        ConditionalMeanEmbedding(alpha=None).fit(X, Y)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_alpha_none_torch_executor(estimator):
    pytest.importorskip("torch")
    x = _linear_trajectory()
    W = _lstsq(x)
    for lm in (None, 12):
        kw = dict(kernel="linear", estimator=estimator, rank=2, n_components=2, alpha=None)
        if lm is not None:
            kw.update(n_landmarks=lm, random_state=0)
        est = KoopmanOperator(device="cpu", **kw).fit(x)
        np.testing.assert_allclose(est.predict(x[:5], n_steps=2), x[:5] @ W @ W, rtol=1e-6,
                                   atol=1e-10)
        back = pickle.loads(pickle.dumps(est))  # the device state (pseudo-inverse) pickles
        np.testing.assert_allclose(back.predict(x[:5], n_steps=2), x[:5] @ W @ W, rtol=1e-6,
                                   atol=1e-10)
    pf = _quiet(PerronFrobeniusOperator(kernel="linear", estimator=estimator, rank=2,
                                        n_components=2, alpha=None, device="cpu"), x)
    np.testing.assert_allclose(np.sort_complex(pf.eigenvalues_),
                               np.sort_complex(np.linalg.eigvals(W)), rtol=1e-6)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_alpha_none_dask_landmarks(estimator):
    da = pytest.importorskip("dask.array")
    x = _linear_trajectory()
    W = _lstsq(x)
    est = KoopmanOperator(kernel="linear", estimator=estimator, rank=2, n_components=2,
                          alpha=None, n_landmarks=12, random_state=0)
    est.fit(da.from_array(x, chunks=60))
    np.testing.assert_allclose(np.asarray(est.predict(x[:5], n_steps=2)), x[:5] @ W @ W,
                               rtol=1e-6, atol=1e-10)


# --------------------------------------------------------------------------- multioutput
def _fitted_2d():
    x = _linear_trajectory(121)
    x[:, 1] *= 10.0  # unequal variances: the three averages differ
    est = KoopmanOperator(kernel_params={"gamma": 0.01}, alpha=1e-3, estimator="pcr",
                          rank=6).fit(x[:80])
    return est, x[80:]


@pytest.mark.parametrize("multioutput", ["raw_values", "uniform_average", "variance_weighted",
                                         [0.2, 0.8]])
def test_score_multioutput_is_r2_score(multioutput):
    est, test = _fitted_2d()
    w = np.linspace(0.5, 1.5, len(test) - 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        for k, sw in ((1, None), (2, w)):
            got = est.score(test, n_steps=k, sample_weight=sw, multioutput=multioutput)
            ref = r2_score(test[k:], est.predict(test[:-k], n_steps=k), sample_weight=sw,
                           multioutput=multioutput)
            np.testing.assert_allclose(got, ref, rtol=1e-12)
        got = est.score(test[:-1], test[1:], multioutput=multioutput)  # snapshot pairs
        ref = r2_score(test[1:], est.predict(test[:-1]), multioutput=multioutput)
        np.testing.assert_allclose(got, ref, rtol=1e-12)
    if multioutput == "raw_values":
        assert got.shape == (2,)
    else:
        assert isinstance(got, float)


def test_score_default_warns_and_keeps_the_pooled_r2():
    est, test = _fitted_2d()
    pooled = est.score(test, multioutput="variance_weighted")
    uniform = est.score(test, multioutput="uniform_average")
    assert abs(pooled - uniform) > 1e-6  # the change of default would change the number
    with pytest.warns(FutureWarning, match=r"'uniform_average'.* in 0\.3"):
        assert est.score(test) == pooled


def test_score_default_silent_for_one_feature():
    x = _linear_trajectory(81)[:, :1]
    est = KoopmanOperator(kernel_params={"gamma": 0.5}, alpha=1e-3).fit(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        s = est.score(x)
    for m in ("uniform_average", "variance_weighted"):
        assert est.score(x, multioutput=m) == pytest.approx(s, rel=1e-12)
    assert est.score(x, multioutput="raw_values") == pytest.approx([s], rel=1e-12)
    with pytest.raises(ValueError, match="multi-output"):  # as r2_score: weights need outputs
        est.score(x, multioutput=[3.0])


@pytest.mark.parametrize("bad", ["mean", [1.0], [1.0, np.nan], [[1.0, 2.0]], ["a", "b"]])
def test_score_multioutput_invalid(bad):
    est, test = _fitted_2d()
    with pytest.raises(ValueError, match="multioutput must be one of"):
        est.score(test, multioutput=bad)


# --------------------------------------------------------------------------- common checks
_WHY = ("fit(X, y) takes y = the time-shifted snapshots (tests/test_sklearn_api.py lists the same "
        "expected failures for the default estimators)")


@parametrize_with_checks([KoopmanOperator(alpha=None), KoopmanOperator(alpha=None, estimator="rrr"),
                          KoopmanOperator(alpha=0, estimator="pcr", n_landmarks=10,
                                          random_state=0),
                          PerronFrobeniusOperator(alpha=None)],
                         expected_failed_checks=lambda e: dict.fromkeys(
                             [c for c in TRANSFER_CHECKS
                              if getattr(e, "n_landmarks", None) is None or "sparse" not in c],
                             _WHY))
def test_common_checks_alpha_none(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the conditioning warnings
        warnings.simplefilter("ignore", ClippedParameterWarning)
        check(estimator)
