"""Landmark selectors (asymkern.landmarks): contracts, exactness of leverage scores, bad input."""

import numpy as np
import pytest

from asymkern.kernels import get_kernel
from asymkern.landmarks import (
    gaussian_sketch,
    kmeans_landmarks,
    leverage_scores,
    select_landmarks,
)


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """One BLAS thread: these problems are tiny, and threads only thrash on a busy machine."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield

@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(120, 4))


@pytest.mark.parametrize("method", ["uniform", "leverage", "kmeans"])
def test_indices_unique_in_range_and_reproducible(X, method):
    idx = select_landmarks(X, 30, method=method, random_state=3)
    assert idx.shape == (30,) and np.issubdtype(idx.dtype, np.integer)
    assert np.unique(idx).size == 30
    assert idx.min() >= 0 and idx.max() < X.shape[0]
    np.testing.assert_array_equal(idx, select_landmarks(X, 30, method=method, random_state=3))


def test_uniform_without_data_and_all_points():
    idx = select_landmarks(None, 10, "uniform", random_state=0, n_samples=10)
    np.testing.assert_array_equal(idx, np.arange(10))


def test_leverage_scores_match_exact_when_presample_is_everything(X):
    # oversampling so large that the Nyström presample is all n points: K = F Fᵀ exactly
    kp = {"gamma": 0.3}
    k = 15
    lev = leverage_scores(X, k, kernel_params=kp, oversampling=100, random_state=0)
    K = get_kernel("rbf", **kp)(X)
    lam, U = np.linalg.eigh(K)
    Uk = U[:, ::-1][:, :k]
    np.testing.assert_allclose(lev, np.sum(Uk**2, axis=1), atol=1e-8)
    assert np.all(lev >= -1e-12) and np.all(lev <= 1 + 1e-12)
    np.testing.assert_allclose(lev.sum(), k, rtol=1e-8)


def test_kmeans_centers_and_nearest_rows():
    rng = np.random.default_rng(1)
    means = np.array([[0, 0], [10, 0], [0, 10], [10, 10]], float)
    X = np.vstack([mu + 0.1 * rng.normal(size=(25, 2)) for mu in means])
    idx, centers = kmeans_landmarks(X, 4, random_state=0)
    assert centers.shape == (4, 2)
    # every centre is one of the cluster means and its index is a point of that cluster
    for j in range(4):
        c = np.argmin(np.linalg.norm(means - centers[j], axis=1))
        assert np.linalg.norm(means[c] - centers[j]) < 0.1
        assert idx[j] // 25 == c
    assert np.unique(idx).size == 4


def test_gaussian_sketch_shape_and_scale():
    S = gaussian_sketch(500, 50, random_state=0)
    assert S.shape == (500, 50)
    assert abs(S.var() * 50 - 1) < 0.05


def test_bad_input(X):
    with pytest.raises(ValueError, match="larger than the number of samples"):
        select_landmarks(X, 121)
    with pytest.raises(ValueError, match=">= 1"):
        select_landmarks(X, 0)
    with pytest.raises(ValueError, match="unknown landmark method"):
        select_landmarks(X, 5, method="nope")
    with pytest.raises(ValueError, match="gaussian_sketch"):
        select_landmarks(X, 5, method="gaussian")
    with pytest.raises(ValueError, match="duplicates"):
        select_landmarks(X, 3, method="fixed", indices=[1, 1, 2])
    with pytest.raises(ValueError, match=r"\[0, 120\)"):
        select_landmarks(X, 2, method="fixed", indices=[0, 120])
    with pytest.raises(ValueError, match="needs the data"):
        select_landmarks(None, 5, method="kmeans", n_samples=100)
    Xbad = X.copy()
    Xbad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        select_landmarks(Xbad, 5)
    with pytest.raises(ValueError, match="larger than the number of samples"):
        gaussian_sketch(10, 11)
