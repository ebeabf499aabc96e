"""Shared pieces of the transfer-operator tests.

``TRANSFER_CHECKS``: the scikit-learn common checks a transfer-operator estimator fails by design.
fit(X, y) takes y = the time-shifted snapshots (of X's shape); these checks pass class labels of
shape (n,) with multi-feature X, which is refused with a ValueError naming y. Shared by
tests/test_sklearn_api.py (defaults) and the reduced-rank configurations' tests.

:func:`ou_trajectory`: the Ornstein–Uhlenbeck trajectory of the Koopman / Perron–Frobenius tests.
"""

import numpy as np


def ou_trajectory(n: int, theta: float = 0.223, seed: int = 0) -> np.ndarray:
    """Discretely sampled OU process dX = −θX dt + √2 dW (unit stationary variance), dt = 1."""
    rng = np.random.RandomState(seed)
    a = np.exp(-theta)
    x = np.zeros((n, 1))
    x[0] = rng.randn()
    for t in range(n - 1):
        x[t + 1] = a * x[t] + np.sqrt(1 - a * a) * rng.randn()
    return x

TRANSFER_CHECKS = (
    "check_fit_score_takes_y", "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
    "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_dtype_object",
    "check_pipeline_consistency", "check_estimators_nan_inf", "check_estimator_sparse_tag",
    "check_estimator_sparse_array", "check_estimator_sparse_matrix", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_dict_unchanged", "check_fit_idempotent",
    "check_fit_check_is_fitted", "check_n_features_in", "check_fit2d_predict1d")
