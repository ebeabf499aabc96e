"""Edge cases of KernelSVD's weights and KernelPCA's ARPACK route (audit round 5).

* KernelPCA(solver='arpack') on a kernel of small magnitude: ARPACK's stopping rule is absolute
  below eps^{2/3}, so the eigenvectors of a kernel scaled by 1e-25 were 1e-4 off the dense ones;
  it now runs on an exactly rescaled K and agrees with the dense solver whatever the scale.
* KernelSVD with sample weights: weights whose sums or square roots leave the float range, and a
  row-normalised kernel whose whole mass lies on columns of weight 0, gave "G contains NaN or
  infinity" (G is not an argument); they are now refused naming the weight argument.
"""

from __future__ import annotations

import numpy as np
import pytest

from asymkern.decomposition import KernelPCA, KernelSVD


@pytest.mark.parametrize("scale", [1.0, 1e-12, 1e-25, 1e-60, 1e40])
def test_kpca_arpack_scale_invariant(scale):
    X = np.random.default_rng(0).standard_normal((40, 60)) * scale
    a = KernelPCA(3, kernel="linear", solver="arpack", random_state=0).fit(X)
    d = KernelPCA(3, kernel="linear", solver="dense").fit(X)
    np.testing.assert_allclose(a.eigenvalues_, d.eigenvalues_, rtol=1e-9)
    U, Ud = a.eigenvectors_, d.eigenvectors_
    U = U * np.sign(np.sum(U * Ud, axis=0))
    assert np.max(np.abs(U - Ud)) < 1e-9
    T, Td = a.transform(X), d.transform(X)
    assert np.max(np.abs(np.abs(T) - np.abs(Td))) < 1e-9 * np.max(np.abs(Td))


def _sets():
    rng = np.random.default_rng(0)
    return rng.standard_normal((10, 2)), rng.standard_normal((8, 2))


@pytest.mark.parametrize("name", ["sample_weight", "sample_weight_Z"])
@pytest.mark.parametrize("value", [1e-320, 1e-200, 1e200, 1e308])
def test_ksvd_weights_out_of_range_refused(name, value):
    X, Z = _sets()
    n = {"sample_weight": 10, "sample_weight_Z": 8}[name]
    est = KernelSVD(3, kernel="rbf", center=True, solver="dense")
    with pytest.raises(ValueError, match=f"{name}: the positive weights must lie in"):
        est.fit(X, Z=Z, **{name: np.full(n, value)})


def test_ksvd_weights_in_range_scale_singular_values():
    """Inside the range a common factor c scales σ by √c (unnormalised kernel, centred)."""
    X, Z = _sets()
    base = KernelSVD(3, kernel="rbf", center=True, solver="dense").fit(X, Z=Z)
    for c in (2.0**-400, 2.0**400):
        w = KernelSVD(3, kernel="rbf", center=True, solver="dense").fit(
            X, Z=Z, sample_weight=np.full(10, c))
        np.testing.assert_allclose(w.singular_values_, np.sqrt(c) * base.singular_values_,
                                   rtol=1e-12)


def test_ksvd_row_normaliser_on_zero_weight_columns_refused():
    X, Z = _sets()
    Z[0] = X[0]
    wz = np.ones(8)
    wz[0] = 0.0  # row 0's mass (SNE, gamma 1e4) lies on z_0 alone
    est = KernelSVD(3, kernel="sne", gamma=1e4, solver="dense")
    with pytest.raises(ValueError, match="sample_weight_Z: the weighted normaliser"):
        est.fit(X, Z=Z, sample_weight_Z=wz)


def test_complex_input_is_a_value_error_on_every_executor():
    """Complex X is a ValueError on numpy, torch and Dask input alike (it was a TypeError on
    torch and Dask, so code catching numpy's error missed the others)."""
    X = np.ones((6, 2)) + 1j
    with pytest.raises(ValueError, match="complex"):
        KernelSVD(2).fit(X, Z=X.real)
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="complex"):
        KernelSVD(2).fit(torch.from_numpy(X), Z=torch.from_numpy(X.real))
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match="complex"):
        KernelSVD(2).fit(da.from_array(X, chunks=3), Z=da.from_array(X.real, chunks=3))


def test_kernel_svd_keeps_float32():
    """The preserves_dtype tag says what transform does: float32 stays float32."""
    X = np.random.default_rng(0).standard_normal((20, 3)).astype(np.float32)
    est = KernelSVD(2, solver="dense").fit(X, Z=X[:10])
    assert "float32" in est.__sklearn_tags__().transformer_tags.preserves_dtype
    assert est.transform(X).dtype == np.float32


def test_dask_row_normalizers_refuse_overflow_like_numpy():
    """The Dask matrix's row normalisers raise as KernelMatrix's do, naming the global row,
    where exp of a finite log-normaliser overflows (it returned inf)."""
    da = pytest.importorskip("dask.array")
    from asymkern._dask.kernel import DaskKernelMatrix
    from asymkern.kernels import KernelMatrix

    X = np.random.default_rng(0).standard_normal((8, 3))
    X[5] *= 40.0
    G = DaskKernelMatrix("softmax", da.from_array(X * 30, chunks=3), X * 30)
    with pytest.raises(OverflowError, match=r"row normaliser Σ_r k\(x_\d, r\)"):
        G.row_normalizers().compute()
    with pytest.raises(OverflowError, match=r"row normaliser Σ_r k\(x_\d, r\)"):
        KernelMatrix("softmax", X * 30, X * 30).row_normalizers()
    ok = DaskKernelMatrix("softmax", da.from_array(X[:4], chunks=3), X[:4])
    np.testing.assert_allclose(ok.row_normalizers().compute(),
                               KernelMatrix("softmax", X[:4], X[:4]).row_normalizers(),
                               rtol=1e-12)


@pytest.mark.parametrize("solver", ["dense", "arpack", "randomized"])
def test_dask_fit_transform_is_dask_for_every_solver(solver):
    """fit_transform of dask input returns a dask array chunked like X with every solver (the
    client-side solvers returned numpy, so the type depended on the solver or the budget)."""
    da = pytest.importorskip("dask.array")
    X = np.random.default_rng(0).standard_normal((30, 3))
    Xd = da.from_array(X, chunks=10)
    est = KernelSVD(2, solver=solver, random_state=0)
    out = est.fit_transform(Xd, Z=da.from_array(X[:12], chunks=6))
    assert isinstance(out, da.Array) and out.chunks[0] == (10, 10, 10)
    np.testing.assert_allclose(out.compute(), est.embeddings()[0], rtol=0, atol=0)


def test_asymmetric_nystrom_on_softmax_logits_beyond_the_float_range():
    """The Nyström solver needs the log-normalisers only: large softmax logits (normalisers
    past the float range, which row_normalizers refuses) still factor, as the dense SVD."""
    from asymkern.kernels import KernelMatrix
    from asymkern.linalg import asymmetric_nystrom

    X = np.random.default_rng(0).standard_normal((40, 3)) * 30
    G = KernelMatrix("softmax", X, X[:30])
    with pytest.raises(OverflowError):
        G.row_normalizers()
    res = asymmetric_nystrom(G, 3, n_row_landmarks=40, n_col_landmarks=30, random_state=0)
    np.testing.assert_allclose(res.s, np.linalg.svd(G.to_array(), compute_uv=False)[:3],
                               rtol=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_kernel_cca_signs_equal_on_numpy_and_torch(seed):
    """KernelCCA's canonical variates follow one sign rule on every executor (the eigenvector
    signs of the Gram matrices differ between numpy and torch: whole columns came out
    negated)."""
    pytest.importorskip("torch")
    from asymkern.operators import KernelCCA

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((60, 3))
    y = X[:, :2] + 0.1 * rng.standard_normal((60, 2))
    a = KernelCCA(n_components=3).fit(X, y)
    b = KernelCCA(n_components=3, device="cpu").fit(X, y)
    np.testing.assert_allclose(b.transform(X), a.transform(X), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(b.transform_y(y), a.transform_y(y), rtol=1e-7, atol=1e-9)
