"""Kernel parameters: one width convention (gamma / bandwidth), the deprecated ``scale`` of the
Cauchy and T kernels, and kernels as scikit-learn parameters (clone, set_params, grid search)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.model_selection import GridSearchCV

from asymkern.kernels import (
    KERNELS,
    CauchyKernel,
    LaplacianKernel,
    RBFKernel,
    SNEKernel,
    TKernel,
    get_kernel,
    resolve_kernel,
)

rng = np.random.default_rng(0)
X = rng.normal(size=(12, 3))
Z = rng.normal(size=(9, 3)) + 0.3


def _sq(X, Z):
    return ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)


# ------------------------------------------------------------------------- width convention
@pytest.mark.parametrize("cls", [CauchyKernel, TKernel])
@pytest.mark.parametrize("g", [0.25, 1.0, 3.0])
def test_cauchy_t_gamma_equals_inverse_scale_and_scale_warns(cls, g):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = cls(gamma=g)(X, Z)
    with pytest.warns(FutureWarning, match=r"'scale' is deprecated.*use gamma="):
        old = cls(scale=1.0 / g)
    np.testing.assert_array_equal(old(X, Z), new)


def test_cauchy_values_and_unchanged_default():
    D = _sq(X, Z)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        np.testing.assert_allclose(CauchyKernel()(X, Z), 1.0 / (1.0 + D), rtol=1e-12)
        np.testing.assert_allclose(CauchyKernel(gamma=0.3)(X, Z), 1.0 / (1.0 + 0.3 * D),
                                   rtol=1e-12)
        # default unchanged: gamma=None is the former scale=1.0, i.e. gamma = 1 (not 1/d)
        np.testing.assert_array_equal(CauchyKernel()(X, Z), CauchyKernel(gamma=1.0)(X, Z))
        np.testing.assert_array_equal(TKernel()(X, Z), TKernel(gamma=1.0)(X, Z))
        T = 1.0 / (1.0 + 0.3 * D)
        np.testing.assert_allclose(TKernel(gamma=0.3)(X, Z), T / T.sum(1, keepdims=True),
                                   rtol=1e-12)


@pytest.mark.parametrize("cls", [RBFKernel, SNEKernel, CauchyKernel, TKernel])
@pytest.mark.parametrize("sigma", [0.5, 2.0])
def test_bandwidth_is_gamma_one_over_sigma_squared(cls, sigma):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        np.testing.assert_allclose(cls(bandwidth=sigma)(X, Z), cls(gamma=1 / sigma**2)(X, Z),
                                   rtol=1e-12)


def test_gp_length_scale_and_sklearn_gamma_conversions():
    from sklearn.gaussian_process.kernels import RBF, RationalQuadratic
    from sklearn.metrics.pairwise import rbf_kernel

    ell = 1.7
    np.testing.assert_allclose(RBFKernel(gamma=1 / (2 * ell**2))(X, Z), RBF(ell)(X, Z),
                               rtol=1e-12)
    np.testing.assert_allclose(RBFKernel(bandwidth=np.sqrt(2) * ell)(X, Z), RBF(ell)(X, Z),
                               rtol=1e-12)
    np.testing.assert_allclose(RBFKernel(gamma=0.4)(X, Z), rbf_kernel(X, Z, gamma=0.4),
                               rtol=1e-12)
    np.testing.assert_allclose(CauchyKernel(gamma=1 / (2 * ell**2))(X, Z),
                               RationalQuadratic(length_scale=ell, alpha=1.0)(X, Z), rtol=1e-12)


@pytest.mark.parametrize("name", ["cauchy", "t"])
def test_cauchy_t_width_given_twice_is_an_error_naming_both(name):
    with pytest.raises(ValueError, match="gamma and bandwidth"):
        get_kernel(name, gamma=1.0, bandwidth=2.0)
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="gamma and scale"):
        get_kernel(name, gamma=1.0, scale=2.0)
    with pytest.raises(ValueError, match=r"kernel 'cauchy|kernel 't'"):
        get_kernel(name, gamma=0.0)
    with pytest.raises(ValueError, match="scale"), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        get_kernel(name, scale=0.0)


def test_estimator_gamma_reaches_cauchy_and_t_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        k = resolve_kernel("cauchy", gamma=0.5)
        assert k.gamma == 0.5
        k = resolve_kernel(TKernel(), gamma=2.0)
        assert isinstance(k, TKernel) and k.gamma == 2.0
        np.testing.assert_array_equal(k(X, Z), TKernel(gamma=2.0)(X, Z))
    with pytest.raises(ValueError, match="set the kernel width once"):
        resolve_kernel("t", {"bandwidth": 1.0}, gamma=2.0)


def test_set_params_scale_warns_and_gamma_does_not():
    k = CauchyKernel()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        k.set_params(gamma=4.0)
    np.testing.assert_array_equal(k(X, Z), CauchyKernel(gamma=4.0)(X, Z))
    k = CauchyKernel()
    with pytest.warns(FutureWarning, match="scale"):
        k.set_params(scale=0.25)
    np.testing.assert_array_equal(k(X, Z), CauchyKernel(gamma=4.0)(X, Z))


# ------------------------------------------------------------------- scikit-learn citizenship
def _instance(cls):
    if cls.__name__ == "DirectedGraphKernel":
        return cls(np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=float))
    return cls()


KERNEL_CLASSES = sorted(set(KERNELS.values()), key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", KERNEL_CLASSES, ids=lambda c: c.__name__)
def test_every_kernel_clones_and_round_trips_its_params(cls):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        k = _instance(cls)
        c = clone(k)
        assert c == k and c is not k and type(c) is cls
        params = k.get_params(deep=False)
        again = cls(**params)
        assert again == k
        assert again.get_params(deep=False).keys() == params.keys()
        for name, value in params.items():
            assert again.get_params(deep=False)[name] is value  # stored as given (clone's check)


@pytest.mark.parametrize("cls", [c for c in KERNEL_CLASSES
                                 if "gamma" in _instance(c).get_params(deep=False)],
                         ids=lambda c: c.__name__)
def test_set_params_gamma_on_every_kernel_with_a_width(cls):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        k = _instance(cls)
        assert k.set_params(gamma=0.7) is k and k.gamma == 0.7
        assert clone(k) == cls(gamma=0.7)
        np.testing.assert_array_equal(k(X, Z), cls(gamma=0.7)(X, Z))
        with pytest.raises(ValueError, match="gamma"):
            k.set_params(gamma=-1.0)


class _KernelMean(RegressorMixin, BaseEstimator):
    """A tiny kernel smoother: prediction = Σ_j k(x, x_j) y_j / Σ_j k(x, x_j)."""

    def __init__(self, kernel=None):
        self.kernel = kernel

    def fit(self, X, y):
        self.kernel_ = get_kernel(self.kernel if self.kernel is not None else "rbf")
        self.X_, self.y_ = np.asarray(X), np.asarray(y)
        return self

    def predict(self, X):
        K = self.kernel_(np.asarray(X), self.X_)
        return K @ self.y_ / np.maximum(K.sum(1), 1e-300)


def test_grid_search_over_kernel_instances_and_nested_gamma():
    Xr = rng.uniform(-2, 2, size=(60, 1))
    y = np.sin(2 * Xr[:, 0])
    grid = {"kernel": [RBFKernel(gamma=0.1), LaplacianKernel(), CauchyKernel(gamma=5.0)]}
    gs = GridSearchCV(_KernelMean(), grid, cv=3).fit(Xr, y)
    assert gs.best_params_["kernel"] in grid["kernel"]
    # the instances in the grid are never modified (clone before set_params)
    assert grid["kernel"][0] == RBFKernel(gamma=0.1)
    gs = GridSearchCV(_KernelMean(kernel=RBFKernel()), {"kernel__gamma": [0.01, 10.0]},
                      cv=3).fit(Xr, y)
    assert gs.best_params_ == {"kernel__gamma": 10.0}
    assert gs.best_estimator_.kernel == RBFKernel(gamma=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        GridSearchCV(_KernelMean(kernel=TKernel()), {"kernel__bandwidth": [0.5, 2.0]},
                     cv=3).fit(Xr, y)
