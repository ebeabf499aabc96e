"""The softmax-attention kernel (kernel='softmax'): against a dense float64 reference
(scipy.special.softmax), through KernelMatrix's blocks and products, KernelSVD, float32, large
logits, Dask, parameters and errors."""

import numpy as np
import pytest
from scipy.special import softmax

from asymkern import KernelSVD
from asymkern.kernels import KernelMatrix, SoftmaxKernel, get_kernel


def _data(seed=0, n=130, m=95, d=6, scale=1.0):
    rng = np.random.default_rng(seed)
    return scale * rng.standard_normal((n, d)), scale * rng.standard_normal((m, d))


def _reference(Q, K, gamma=None):
    g = 1 / np.sqrt(Q.shape[1]) if gamma is None else gamma
    return softmax(g * (Q.astype(np.float64) @ K.astype(np.float64).T), axis=1)


@pytest.mark.parametrize("gamma", [None, 1e-6, 0.3, 40.0])
def test_softmax_equals_the_dense_reference(gamma):
    Q, K = _data()
    G = KernelMatrix(get_kernel("softmax", gamma=gamma), Q, K, working_memory=0.01)  # blocks
    A = _reference(Q, K, gamma)
    rng = np.random.default_rng(1)
    B, C = rng.standard_normal((95, 3)), rng.standard_normal((130, 2))
    assert np.abs(G.to_array() - A).max() < 1e-12
    assert np.abs(G.matmat(B) - A @ B).max() < 1e-12 * np.abs(B).sum(0).max()
    assert np.abs(G.rmatmat(C) - A.T @ C).max() < 1e-12 * np.abs(C).sum(0).max()
    assert np.allclose(G.to_array().sum(axis=1), 1.0, atol=1e-12)
    rows, cols = np.array([5, 0, 77]), np.array([3, 90])
    assert np.abs(G.block(rows, cols) - A[np.ix_(rows, cols)]).max() < 1e-12


def test_softmax_large_logits_do_not_overflow():
    # logits up to ~1e4: exp overflows, the normalised kernel does not (one-hot rows)
    Q, K = _data(scale=30.0)
    A = get_kernel("softmax", gamma=1.0)(Q, K)
    assert np.all(np.isfinite(A)) and np.allclose(A.sum(axis=1), 1.0)
    assert np.abs(A - _reference(Q, K, 1.0)).max() < 1e-12
    with pytest.raises(OverflowError, match="softmax"):
        SoftmaxKernel(gamma=1.0)._raw(Q, K)  # the unnormalised values overflow: refused


def test_softmax_float32_stays_float32():
    Q, K = _data()
    A = get_kernel("softmax")(Q.astype(np.float32), K.astype(np.float32))
    assert A.dtype == np.float32
    assert np.abs(A - _reference(Q.astype(np.float32), K.astype(np.float32))).max() < 1e-5


def test_ksvd_of_an_attention_matrix_equals_the_dense_svd():
    Q, K = _data()
    A = _reference(Q, K)
    want = np.linalg.svd(A, compute_uv=False)[:6]
    for solver in ("dense", "randomized", "arpack", "block_krylov"):
        m = KernelSVD(6, kernel="softmax", center=False, solver=solver, random_state=0)
        m.fit(Q, Z=K)
        tol = 1e-10 if solver in ("dense", "arpack") else 1e-3
        assert np.abs(m.singular_values_ - want).max() < tol * want[0], solver
    m = KernelSVD(3, kernel="softmax", gamma=0.5, center=False).fit(Q, Z=K)
    assert np.abs(m.singular_values_ - np.linalg.svd(_reference(Q, K, 0.5),
                                                     compute_uv=False)[:3]).max() < 1e-10


def test_softmax_parameters_and_errors():
    k = SoftmaxKernel(gamma=0.25)
    assert k.get_params() == {"gamma": 0.25} and not k.is_symmetric and k.row_normalized
    assert k.set_params(gamma=2.0).gamma == 2.0
    for bad in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="gamma"):
            SoftmaxKernel(gamma=bad)
    Q, K = _data()
    with pytest.raises(ValueError, match="features"):
        get_kernel("softmax")(Q, K[:, :3])


def test_softmax_on_dask_equals_numpy():
    da = pytest.importorskip("dask.array")
    import dask

    Q, K = _data(n=200, m=150)
    want = KernelSVD(4, kernel="softmax", solver="randomized", random_state=0).fit(Q, Z=K)
    with dask.config.set(scheduler="synchronous"):
        got = KernelSVD(4, kernel="softmax", solver="randomized", random_state=0).fit(
            da.from_array(Q, chunks=(64, 6)), Z=da.from_array(K, chunks=(50, 6)))
        U = np.asarray(got.left_singular_vectors_.compute())
    assert np.abs(got.singular_values_ - want.singular_values_).max() < \
        1e-10 * want.singular_values_[0]
    assert np.abs(U - want.left_singular_vectors_).max() < 1e-8


def test_default_width_resolved_as_the_kernel_does():
    """``fix_default_width`` (the data-dependent default of KernelPCA) gives the softmax kernel
    its own default γ = 1/√d, not the 1/d of the distance kernels."""
    from asymkern.kernels import SoftmaxKernel
    from asymkern.kernels._registry import fix_default_width

    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 4))
    fixed, gamma = fix_default_width(SoftmaxKernel(), 4)
    assert gamma == 0.5
    np.testing.assert_allclose(fixed(X, X), SoftmaxKernel()(X, X), rtol=1e-14)
