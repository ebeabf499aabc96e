"""Platt scaling (asymkern._calibration) against a direct maximum-likelihood fit."""

import numpy as np
import pytest
from scipy.optimize import minimize

from asymkern._calibration import PlattCalibration, fit_sigmoid


def _reference(f, positive):
    """Platt's smoothed-target cross-entropy minimised by a generic optimiser."""
    n_pos = positive.sum()
    n_neg = positive.size - n_pos
    t = np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))

    def loss(ab):
        z = ab[0] * f + ab[1]  # p = 1 / (1 + exp(z))
        return np.sum(t * z + np.logaddexp(0.0, -z))

    return minimize(loss, x0=[0.0, 0.0], method="BFGS", options={"gtol": 1e-10}).x


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fit_sigmoid_is_the_maximum_likelihood_sigmoid(seed):
    rng = np.random.default_rng(seed)
    f = rng.normal(size=300) * 2.0
    positive = f + rng.normal(size=300) > 0.3
    np.testing.assert_allclose(fit_sigmoid(f, positive), _reference(f, positive), rtol=1e-5,
                               atol=1e-6)


def test_separable_data_stays_finite_and_probabilities_sum_to_one():
    f = np.r_[-np.linspace(1, 50, 40), np.linspace(1, 50, 40)]  # perfectly separated, huge |f|
    positive = f > 0
    A, B = fit_sigmoid(f, positive)
    assert np.isfinite([A, B]).all() and A < 0
    cal = PlattCalibration(f, positive.astype(int), 2)
    P = cal.predict_proba(np.array([-1e6, 0.0, 1e6]))
    assert np.isfinite(P).all()
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert P[0, 0] > 0.5 > P[2, 0]


def test_multiclass_rows_sum_to_one():
    rng = np.random.default_rng(3)
    D = rng.normal(size=(90, 3))
    y = D.argmax(axis=1)
    P = PlattCalibration(D, y, 3).predict_proba(D)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert (P.argmax(axis=1) == y).mean() > 0.9
