"""``precision='low'`` on the numpy executor: the subspace passes of the randomized solvers on
float32 kernel blocks of float64 data (``KernelMatrix.lowered``), the last product G·W in
float64.

The singular values are checked against the float64 passes with the same ``random_state``
(measured: at most 4e-9 of σ₁; bound 1e-7), the last product is checked to run on G itself,
the guard against values beyond float32's range reruns the passes in float64 with a warning,
and every matrix without float32 passes is refused with ``ValueError`` naming ``precision``.
No test depends on timing.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from asymkern import KernelSVD
from asymkern.kernels import KernelMatrix, get_kernel
from asymkern.linalg import randomized_svd, top_svd


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((400, 6)), rng.standard_normal((300, 6)) + 0.3


@pytest.mark.parametrize("name", ["rbf", "laplacian", "cauchy", "sne", "t", "softmax"])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("method", ["power", "block_krylov"])
def test_float32_passes_keep_the_singular_values(data, name, center, method):
    X, Z = data
    X0, Z0 = X.copy(), Z.copy()
    high = randomized_svd(KernelMatrix(get_kernel(name), X, Z, center=center), 8,
                          random_state=0, method=method)
    low = randomized_svd(KernelMatrix(get_kernel(name), X, Z, center=center), 8,
                         random_state=0, method=method, precision="low")
    assert low.info["precision"] == "low" and low.s.dtype == np.float64
    assert np.abs(low.s - high.s).max() < 1e-7 * high.s[0]
    cos = np.abs(np.sum(low.U[:, :3] * high.U[:, :3], axis=0))
    assert cos.min() > 1 - 1e-6
    np.testing.assert_array_equal(X, X0)  # the inputs are never modified
    np.testing.assert_array_equal(Z, Z0)


def test_the_lowered_products_are_float32_blocks(data):
    X, Z = data
    G = KernelMatrix(get_kernel("sne"), X, Z, center=True)
    G.means()
    L = G.lowered()
    assert L.low.dtype == np.float32 and G.X.dtype == np.float64
    B = np.random.default_rng(1).standard_normal((300, 4))
    want = G.matmat(B)
    got = L.matmat(B)
    assert got.dtype == np.float64
    rel = np.abs(got - want).max() / np.abs(want).max()
    assert 1e-12 < rel < 1e-5  # float32 rounding, neither exact nor lost
    W = np.random.default_rng(2).standard_normal((300, 3))
    np.testing.assert_allclose(L._gram_matmat(W), G.rmatmat(G.matmat(W)), rtol=0,
                               atol=1e-5 * np.abs(G.rmatmat(G.matmat(W))).max())


def test_the_last_product_runs_on_G(data, monkeypatch):
    X, Z = data
    G = KernelMatrix(get_kernel("rbf"), X, Z)
    calls = []
    real = KernelMatrix.matmat
    monkeypatch.setattr(KernelMatrix, "matmat", lambda self, V, cols=None: (
        calls.append(self.dtype) or real(self, V, cols)))
    randomized_svd(G, 4, n_iter=3, random_state=0, precision="low")
    # Y = G W on G (float64); the check product G_low W on the float32 copy; the passes
    # are fused Gᵀ(G W) on the float32 copy
    assert calls == [np.float64, np.float32]


def test_values_beyond_float32_rerun_the_passes_in_float64():
    rng = np.random.default_rng(3)
    X, Z = rng.standard_normal((120, 3)), rng.standard_normal((90, 3)) + 10.0
    G = KernelMatrix(get_kernel("rbf", gamma=1.0), X, Z)
    assert G.to_array().max() < 1e-50  # 0 in float32, far from float64's limits
    high = randomized_svd(G, 3, random_state=0)
    with pytest.warns(RuntimeWarning, match="precision='low'.*run again"):
        low = randomized_svd(G, 3, random_state=0, precision="low")
    assert low.info["precision"] == "high"
    np.testing.assert_array_equal(low.s, high.s)
    assert high.s[0] > 0


def test_kernel_values_that_fail_in_float32_rerun_the_passes(monkeypatch, data):
    X, Z = data
    G = KernelMatrix(get_kernel("rbf"), X, Z)
    high = randomized_svd(G, 3, random_state=0)

    def overflow(self, W):
        raise OverflowError("kernel 'rbf': a value overflowed float32")

    from asymkern.kernels import matrix

    monkeypatch.setattr(matrix._Float32Passes, "_gram_matmat", overflow)
    with pytest.warns(RuntimeWarning, match="failed .*overflowed float32.*run again"):
        low = randomized_svd(G, 3, random_state=0, precision="low")
    np.testing.assert_array_equal(low.s, high.s)


def test_data_beyond_float32_is_refused_by_name():
    X = np.random.default_rng(4).standard_normal((30, 2))
    X[0, 0] = 1e300
    with pytest.raises(ValueError, match="precision='low'.*1e\\+300.*float32"):
        randomized_svd(KernelMatrix(get_kernel("rbf"), X), 2,
                       random_state=0, precision="low")


def test_ksvd_low_precision_on_numpy(data):
    X, Z = data
    kw = dict(n_components=5, kernel="sne", solver="block_krylov", random_state=0)
    high = KernelSVD(**kw).fit(X, Z=Z)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        low = KernelSVD(precision="low", **kw).fit(X, Z=Z)
    assert np.abs(low.singular_values_ - high.singular_values_).max() < \
        1e-7 * high.singular_values_[0]


@pytest.mark.parametrize("case", ["float32", "linear", "polynomial", "dense", "sparse",
                                  "operator"])
def test_matrices_without_float32_passes_are_refused(data, case):
    X, Z = data
    G = {"float32": lambda: KernelMatrix(get_kernel("rbf"), X.astype(np.float32),
                                         Z.astype(np.float32)),
         "linear": lambda: KernelMatrix(get_kernel("linear"), X, Z),
         "polynomial": lambda: KernelMatrix(get_kernel("polynomial"), X, Z),
         "dense": lambda: X @ Z.T,
         "sparse": lambda: sp.csr_matrix(X @ Z.T),
         "operator": lambda: KernelMatrix(get_kernel("rbf"), X, Z).aslinearoperator()}[case]()
    with pytest.raises(ValueError, match="precision='low'"):
        randomized_svd(G, 3, random_state=0, precision="low")
    with pytest.raises(ValueError, match="precision='low'"):
        top_svd(G, 3, solver="randomized", random_state=0, precision="low")


def test_precision_is_validated():
    G = np.eye(5)
    with pytest.raises(ValueError, match="precision must be one of"):
        randomized_svd(G, 2, random_state=0, precision="half")
    with pytest.raises(TypeError):  # not an option of the dense solver
        top_svd(G, 2, solver="dense", precision="low")
