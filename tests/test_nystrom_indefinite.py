"""The Nyström machines refuse an indefinite precomputed kernel (round 14: a symmetric matrix
with eigenvalues of both signs, e.g. tanh(XXᵀ − 1), was fitted without a word; the
pseudo-inverse of K_mm silently dropped its negative part, so the machine was another kernel's).
A PSD kernel whose computed K_mm has rounding-level negative eigenvalues is still accepted."""

from __future__ import annotations

import numpy as np
import pytest

from asymkern.nystrom import NystromKernelPCA, NystromKernelRidge, NystromSVC

rng = np.random.default_rng(0)
X = rng.standard_normal((80, 3))
y = X[:, 0] + 0.1 * rng.standard_normal(80)
yc = (y > 0).astype(int)
K_INDEF = np.tanh(X @ X.T - 1.0)  # symmetric, eigenvalues of both signs

FACTORIES = {
    **{f"ridge-{m}": (lambda m=m: NystromKernelRidge(mode=m, kernel="precomputed",
                                                     n_landmarks=20, random_state=0), y)
       for m in ("lla", "gsa", "ncr", "spa")},
    "kpca": (lambda: NystromKernelPCA(3, kernel="precomputed", n_landmarks=20,
                                      random_state=0), None),
    "svc": (lambda: NystromSVC(kernel="precomputed", n_landmarks=20, random_state=0), yc),
}


def test_the_test_matrix_is_indefinite_on_the_landmarks():
    lam = np.linalg.eigvalsh(K_INDEF)
    assert lam[0] < -0.3 * lam[-1]


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_indefinite_precomputed_kernel_is_refused(name):
    make, target = FACTORIES[name]
    with pytest.raises(ValueError, match=r"not positive semi-definite.*kernel='precomputed'"):
        make().fit(K_INDEF, target)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_psd_kernel_with_rounding_level_negative_eigenvalues_is_accepted(name):
    """A rank-3 linear kernel on 20 landmarks: 17 eigenvalues are zero up to rounding, some
    of them negative (about −1e-15 relative); in float32 (−1e-7 relative) too."""
    make, target = FACTORIES[name]
    for dtype in (np.float64, np.float32):
        K = (X @ X.T).astype(dtype)
        lam = np.linalg.eigvalsh(K[:20, :20].astype(np.float64))
        assert lam[0] < 0 < lam[-1]  # rounding-level negatives are present
        est = make().fit(K, target)
        out = est.transform(K) if name == "kpca" else est.predict(K)
        assert np.all(np.isfinite(out))


def test_torch_tensor_input_is_refused_too():
    torch = pytest.importorskip("torch")
    make, target = FACTORIES["ridge-lla"]
    with pytest.raises(ValueError, match="not positive semi-definite"):
        make().fit(torch.from_numpy(K_INDEF), torch.from_numpy(target))
