"""UCI loaders (MANIFEST.md §3): shapes, class counts and conventions from the manifest."""

from __future__ import annotations

import numpy as np
import pytest

from asymkern.datasets import DataNotFoundError
from asymkern.datasets.uci import UCI_DATASETS, load_uci
from asymkern.testing import requires_data

# name -> (n, d, task, class counts in sorted-label order or None)
EXPECTED = {
    "pima": (768, 8, "classification", [500, 268]),
    "ionosphere": (351, 34, "classification", [126, 225]),  # 'b', 'g'
    "sonar": (208, 60, "classification", [111, 97]),  # 'M', 'R'
    "liver": (345, 6, "classification", [145, 200]),  # selector 1, 2
    "yacht": (308, 6, "regression", None),
    "cholesterol": (297, 13, "regression", None),  # 303 rows, 6 with '?' dropped
    "casp": (45730, 9, "regression", None),
    "heart": (270, 13, "classification", [150, 120]),
    "monks-1": (124, 6, "classification", [62, 62]),
    "monks-2": (169, 6, "classification", [105, 64]),
    "monks-3": (122, 6, "classification", [62, 60]),
    "australian": (690, 14, "classification", [384, 306]),
    "spambase": (4601, 57, "classification", [2788, 1813]),
}


def test_all_names_listed():
    assert set(UCI_DATASETS) == set(EXPECTED)


@requires_data("uci")
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shapes_and_classes(name):
    n, d, task, counts = EXPECTED[name]
    ds = load_uci(name)
    assert ds.X.shape == (n, d)
    assert ds.X.dtype == np.float64
    assert np.all(np.isfinite(ds.X))
    assert ds.y.shape == (n,)
    assert ds.task == task
    assert len(ds.feature_names) == d
    if counts is None:
        assert ds.y.dtype == np.float64 and np.all(np.isfinite(ds.y))
    else:
        _, c = np.unique(ds.y, return_counts=True)
        assert c.tolist() == counts
    if name.startswith("monks"):
        assert ds.X_test.shape == (432, 6) and ds.y_test.shape == (432,)
        assert set(np.unique(ds.y_test)) <= {0, 1}
        # attributes are small integer codes: the junk header line was skipped
        assert ds.X.min() >= 1 and ds.X.max() <= 4
    else:
        assert ds.X_test is None and ds.y_test is None


@requires_data("uci")
def test_conventions():
    liver = load_uci("liver")
    assert liver.feature_names[-1] == "ALCOHOL"  # drinks kept as a feature; label = selector
    chol = load_uci("cholesterol")
    assert "chol" not in chol.feature_names and chol.feature_names[0] == "age"
    assert chol.y[0] == 233.0  # first data row of the ARFF
    casp = load_uci("casp")
    assert casp.feature_names == tuple(f"F{k}" for k in range(1, 10))
    assert casp.y[0] == pytest.approx(17.284) and casp.X[0, 0] == pytest.approx(13558.3)
    heart = load_uci("heart")
    assert heart.X[0, 0] == 70.0 and heart.y[0] == 2
    spam = load_uci("spambase")
    assert spam.feature_names[0] == "word_freq_make"
    assert load_uci("monks1").name == "monks-1"  # alias


def test_unknown_name_and_missing_dir(tmp_path):
    with pytest.raises(ValueError, match="unknown UCI dataset"):
        load_uci("iris")
    with pytest.raises(DataNotFoundError):
        load_uci("pima", data_dir=tmp_path)
