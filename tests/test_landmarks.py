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


# ---------------------------------------------------------------- issue 29: no silent coercion
@pytest.mark.parametrize("value, error", [
    (-1, ValueError), (0, ValueError), (0.5, ValueError), (float("nan"), ValueError),
    (float("inf"), ValueError), ("1.5", TypeError), (True, TypeError), (None, TypeError),
])
def test_leverage_scores_refuses_bad_oversampling(X, value, error):
    with pytest.raises(error, match="oversampling"):
        leverage_scores(X, 5, oversampling=value, random_state=0)


def test_leverage_scores_names_rank(X):
    with pytest.raises(TypeError, match="rank"):
        leverage_scores(X, 2.0, random_state=0)
    with pytest.raises(ValueError, match="rank"):
        leverage_scores(X, 0, random_state=0)


@pytest.mark.parametrize("n, m, name", [
    (2.7, 1, "n_samples"), (10.0, 2, "n_samples"), ("10", 2, "n_samples"), (True, 1, "n_samples"),
    (10, 2.0, "n_landmarks"), (10, 2.7, "n_landmarks"),
])
def test_gaussian_sketch_refuses_non_integer_sizes(n, m, name):
    with pytest.raises(TypeError, match=name):
        gaussian_sketch(n, m, random_state=0)


def test_gaussian_sketch_accepts_numpy_integers():
    S = gaussian_sketch(np.int64(12), np.int32(3), random_state=0)
    np.testing.assert_array_equal(S, gaussian_sketch(12, 3, random_state=0))


@pytest.mark.parametrize("kwargs, name", [
    ({"n_init": True}, "n_init"), ({"n_init": 0}, "n_init"), ({"max_iter": 2.5}, "max_iter"),
    ({"max_iter": -1}, "max_iter"),
])
def test_kmeans_landmarks_names_bad_counts(X, kwargs, name):
    with pytest.raises((TypeError, ValueError), match=name):
        kmeans_landmarks(X, 3, random_state=0, **kwargs)


BAD_INDICES = {
    "negative": [-1, 0, 1], "too-large": [0, 1, 40], "float": [0.0, 1.0, 2.0],
    "bool-mask": [True, False, True], "duplicate": [0, 1, 1], "empty": [], "2-D": [[0, 1]],
}


def _landmark_estimators():
    from asymkern.nystrom import (
        NystromFeatureMap,
        NystromKernelPCA,
        NystromKernelRidge,
        NystromSVC,
    )
    from asymkern.operators import ConditionalMeanEmbedding, KoopmanOperator

    return {
        "NystromFeatureMap": lambda L, X, y: NystromFeatureMap(landmarks=L).fit(X),
        "NystromKernelRidge": lambda L, X, y: NystromKernelRidge(landmarks=L).fit(X, y),
        "NystromKernelRidge-precomputed": lambda L, X, y: NystromKernelRidge(
            kernel="precomputed", landmarks=L).fit(X @ X.T, y),
        "NystromKernelPCA": lambda L, X, y: NystromKernelPCA(landmarks=L,
                                                             n_components=1).fit(X),
        "NystromSVC": lambda L, X, y: NystromSVC(landmarks=L).fit(X, y > 0),
        "ConditionalMeanEmbedding": lambda L, X, y: ConditionalMeanEmbedding(
            landmarks=L).fit(X, y[:, None]),
        "KoopmanOperator": lambda L, X, y: KoopmanOperator(landmarks=L).fit(X),
    }


@pytest.mark.parametrize("case", list(BAD_INDICES))
@pytest.mark.parametrize("name", list(_landmark_estimators()))
def test_landmark_indices_in_range_everywhere(name, case):
    """landmarks=[-1, 0, 1] used to wrap −1 to the last row in NystromFeatureMap; every
    estimator that takes landmark indices refuses it (and other bad index arrays), naming
    ``landmarks``."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=40)
    fit = _landmark_estimators()[name]
    with pytest.raises(ValueError, match="landmarks"):
        fit(np.array(BAD_INDICES[case]), X, y)
    fit(np.array([0, 5, 30]), X, y)  # a valid index array fits


@pytest.mark.parametrize("case", ["negative", "too-large", "float", "bool-mask"])
def test_landmark_indices_in_range_torch(case):
    torch = pytest.importorskip("torch")
    from asymkern.nystrom import NystromKernelRidge
    from asymkern.operators import ConditionalMeanEmbedding

    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.normal(size=(40, 2)))
    y = X[:, 0].clone()
    bad = np.array(BAD_INDICES[case])
    with pytest.raises(ValueError, match="landmarks"):
        NystromKernelRidge(landmarks=bad).fit(X, y)
    with pytest.raises(ValueError, match="landmarks"):
        ConditionalMeanEmbedding(landmarks=bad).fit(X, y[:, None])


@pytest.mark.parametrize("case", ["negative", "too-large", "float", "bool-mask", "duplicate"])
@pytest.mark.parametrize("side", ["row", "col"])
def test_asymmetric_nystrom_sampling_indices(case, side):
    from asymkern.linalg import asymmetric_nystrom

    G = np.random.default_rng(0).normal(size=(40, 30))
    good = np.arange(0, 30, 3)
    kwargs = {"row_sampling": good, "col_sampling": good, f"{side}_sampling":
              np.array(BAD_INDICES[case])}
    with pytest.raises(ValueError, match=f"{side}_sampling"):
        asymmetric_nystrom(G, 2, **kwargs)


def test_select_landmarks_fixed_refuses_negative_indices():
    with pytest.raises(ValueError, match=r"indices must lie in \[0, 10\).*not wrapped"):
        select_landmarks(None, 3, "fixed", indices=[-1, 0, 1], n_samples=10)


@pytest.mark.parametrize("backend", ["numpy", "torch", "dask"])
def test_kernel_svd_nystrom_indices_and_dask_landmarks(backend):
    """KernelSVD's nystrom_params row_sampling and the Dask landmarks name the argument (the
    torch path named an internal 'row_landmarks')."""
    from asymkern import KernelSVD
    from asymkern.nystrom import NystromKernelRidge

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    Z = X[:25] + 1.0
    y = X[:, 0]
    if backend == "torch":
        torch = pytest.importorskip("torch")
        X, Z, y = torch.as_tensor(X), torch.as_tensor(Z), torch.as_tensor(y)
    elif backend == "dask":
        da = pytest.importorskip("dask.array")
        X, Z, y = (da.from_array(X, chunks=(10, 3)), da.from_array(Z, chunks=(10, 3)),
                   da.from_array(y, chunks=10))
    for case in ("negative", "float", "bool-mask"):
        bad = np.array(BAD_INDICES[case] if case != "bool-mask" else [True] * 30)
        with pytest.raises(ValueError, match="row_sampling"):
            KernelSVD(n_components=2, solver="nystrom",
                      nystrom_params={"row_sampling": bad}).fit(X, Z=Z)
        with pytest.raises(ValueError, match="landmarks"):
            NystromKernelRidge(landmarks=bad).fit(X, y)
