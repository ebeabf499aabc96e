"""Where the fitted arrays of a torch fit live (the GPU guide's rule): after a fit on tensors
the fitted arrays of the Nyström machines are tensors on the data's device (the
landmark-sized ones are computed on the host and copied there; before, ``coef_``,
``landmark_coef_``, ``landmarks_`` and ``intercept_`` of the ridge and the SVC stayed numpy
while ``X_fit_`` was a tensor); after a fit on numpy input with ``device=`` they are numpy."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import TEST_DEVICE, tensor, to_np  # noqa: E402

from asymkern.nystrom import NystromKernelPCA, NystromKernelRidge, NystromSVC  # noqa: E402

RNG = np.random.RandomState(3)
X = RNG.randn(70, 3)
Y = np.column_stack([X[:, 0] ** 2, X[:, 1]])
LABELS = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0)
NAMES = ("landmarks_", "coef_", "landmark_coef_", "dual_coef_", "intercept_", "eigenvalues_")

CASES = [
    (lambda **kw: NystromKernelRidge(n_landmarks=15, random_state=0, **kw), Y),
    (lambda **kw: NystromKernelRidge(n_landmarks=15, mode="gsa", random_state=0, **kw), Y),
    (lambda **kw: NystromKernelPCA(n_components=3, n_landmarks=15, random_state=0, **kw), None),
    (lambda **kw: NystromSVC(n_landmarks=15, random_state=0, **kw), LABELS),
]


def _arrays(est):
    return {k: getattr(est, k) for k in NAMES
            if getattr(est, k, None) is not None and not np.isscalar(getattr(est, k))}


@pytest.mark.parametrize("case", range(len(CASES)), ids=["krr-lla", "krr-gsa", "kpca", "svc"])
def test_fitted_arrays_live_where_the_data_were_given(case):
    make, y = CASES[case]
    ref = make().fit(X) if y is None else make().fit(X, y)
    on_device = make().fit(tensor(X)) if y is None else make().fit(tensor(X), tensor(y))
    with_device = (make(device=TEST_DEVICE).fit(X) if y is None
                   else make(device=TEST_DEVICE).fit(X, y))
    want = _arrays(ref)
    assert {"landmarks_", "landmark_coef_"} <= set(want) or "eigenvalues_" in want
    got = _arrays(on_device)
    assert set(got) == set(want)
    for name, value in got.items():
        assert isinstance(value, torch.Tensor), name
        assert value.device == on_device.X_fit_.device, name
        # the same model: the landmark-sized arrays are the numpy path's, on the device
        np.testing.assert_allclose(to_np(value), want[name], rtol=1e-8, atol=1e-10,
                                   err_msg=name)
    for name, value in _arrays(with_device).items():
        assert isinstance(value, np.ndarray), name
    assert isinstance(on_device.X_fit_, torch.Tensor) and isinstance(with_device.X_fit_,
                                                                      np.ndarray)
