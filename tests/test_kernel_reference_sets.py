"""Row-normalised kernels over a reference set R other than the columns: κ(x, z) =
k(x, z) / Σ_{r∈R} k(x, r) is no longer ≤ 1 and can leave the float range. Every executor
(numpy blocks and products, Dask chunks, torch blocks) raises ``OverflowError`` naming the
kernel instead of returning inf; values in range are unchanged (dense float64 reference)."""

import numpy as np
import pytest

from asymkern.kernels import KernelMatrix, get_kernel

dask_array = pytest.importorskip("dask.array")


def _case(dtype):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3)).astype(dtype)
    return X, (X[:29] + 3).astype(dtype)


def _dense_reference(name, gamma, X, R):
    X64, R64 = X.astype(np.float64), R.astype(np.float64)
    if name == "sne":
        logk = lambda A, B: -gamma * ((A[:, None] - B[None]) ** 2).sum(-1)  # noqa: E731
    else:  # softmax
        logk = lambda A, B: gamma * A @ B.T  # noqa: E731
    L, LR = logk(X64, X64), logk(X64, R64)
    m = LR.max(axis=1, keepdims=True)
    with np.errstate(over="ignore"):  # the float64 truth itself may be out of range
        return np.exp(L - m - np.log(np.exp(LR - m).sum(axis=1, keepdims=True)))


def _matrices(kernel, X, R):
    yield "numpy", KernelMatrix(kernel, X, X, reference=R)
    chunks = (7, X.shape[1])
    yield "dask", KernelMatrix(kernel, dask_array.from_array(X, chunks=chunks),
                               dask_array.from_array(X, chunks=chunks),
                               reference=dask_array.from_array(R, chunks=chunks))
    try:
        import torch
        from _torch_helpers import TEST_DEVICE

        from asymkern._backend import ops_of
    except ImportError:
        return
    Xt = torch.as_tensor(X, device=TEST_DEVICE)
    yield "torch", ops_of(Xt).kernel_matrix(kernel, Xt, Xt,
                                            reference=torch.as_tensor(R, device=TEST_DEVICE))


def _values(name, G, what):
    B = np.ones((G.shape[1], 2), dtype=G.dtype if name != "torch" else None)
    if name == "torch":
        import torch

        from asymkern._backend import ops_of

        out = {"dense": G.to_dense, "block": lambda: G.block(slice(0, 9), slice(0, 40)),
               "matmat": lambda: G.matmat(torch.ones(40, 2, dtype=G.X.dtype,
                                                     device=G.X.device))}[what]()
        return ops_of(out).to_host(out)
    if name == "dask":
        out = {"dense": G.to_dask_array, "block": lambda: G.block(np.arange(9), np.arange(40)),
               "matmat": lambda: G.matmat(B)}[what]()
        return np.asarray(out.compute() if hasattr(out, "compute") else out)
    return {"dense": G.to_array, "block": lambda: G.block(np.arange(9), np.arange(40)),
            "matmat": lambda: G.matmat(B)}[what]()


@pytest.mark.parametrize("what", ["dense", "block", "matmat"])
@pytest.mark.parametrize("name,gamma", [("sne", 30.0), ("softmax", 40.0)])
def test_overflow_over_a_far_reference_set_raises(name, gamma, what):
    X, R = _case(np.float32)
    truth = _dense_reference(name, gamma, X, R)
    assert truth.max() > np.finfo(np.float32).max  # the case under test: out of float32
    for executor, G in _matrices(get_kernel(name, gamma=gamma), X, R):
        with pytest.raises(OverflowError, match=name):
            _values(executor, G, what)


@pytest.mark.parametrize("what", ["dense", "block", "matmat"])
@pytest.mark.parametrize("name,gamma", [("sne", 0.7), ("softmax", 1.5)])
def test_values_over_a_reference_set_in_range(name, gamma, what):
    X, R = _case(np.float64)
    truth = _dense_reference(name, gamma, X, R)
    assert truth.max() > 1  # not bounded by 1: the reference set is not the columns
    expected = {"dense": truth, "block": truth[:9], "matmat": truth @ np.ones((40, 2))}[what]
    for executor, G in _matrices(get_kernel(name, gamma=gamma), X, R):
        got = _values(executor, G, what)
        np.testing.assert_allclose(got, expected, rtol=1e-9, err_msg=executor)


def test_reference_blocks_of_underflowed_values_do_not_poison_the_normaliser():
    """A block (numpy working memory, Dask chunk, torch column block) of reference points
    where every k(x, r) underflows to 0 adds nothing to Σ_r k(x, r); it once made the
    normaliser NaN, and whether it was refused depended on the block size."""
    kernel = get_kernel("sne", gamma=1e3)
    X = np.array([[0.0], [0.5]])
    R = np.vstack([np.full((4100, 1), 50.0), [[0.0], [0.25]]])  # far block first, near last
    truth = _dense_reference("sne", 1e3, X, R)
    assert np.isfinite(truth).all() and truth.max() > 0.5
    for wm in (64, 1e-3):
        got = KernelMatrix(kernel, X, X, reference=R, working_memory=wm).to_array()
        np.testing.assert_allclose(got, truth, rtol=1e-12)
    G = KernelMatrix(kernel, dask_array.from_array(X, chunks=(1, 1)),
                     dask_array.from_array(X, chunks=(1, 1)),
                     reference=dask_array.from_array(R, chunks=(4100, 1)))
    np.testing.assert_allclose(np.asarray(G.to_dask_array().compute()), truth, rtol=1e-12)
    try:
        import torch
        from _torch_helpers import TEST_DEVICE

        from asymkern._backend import ops_of
    except ImportError:
        return
    Xt = torch.as_tensor(X, device=TEST_DEVICE)
    Gt = ops_of(Xt).kernel_matrix(kernel, Xt, Xt, reference=torch.as_tensor(R, device=TEST_DEVICE))
    # torch expands the squared distances about the reference set's centre (50 away from X):
    # log k carries about eps·γ·50² of rounding, 5e-10 relative after the exp
    np.testing.assert_allclose(ops_of(Xt).to_host(Gt.to_dense()), truth, rtol=1e-8)
