"""UCI tabular datasets read from the data directory (MANIFEST.md §3); nothing is shipped.

``load_uci(name)`` returns a :class:`UCIDataset` with ``X`` (float64, n × d), ``y`` and the task.
Labels are kept as they appear in the files (``0/1``, ``1/2``, ``'g'/'b'``, ``'M'/'R'``);
estimators map them to classes themselves. Regression targets are float64.

Per-dataset conventions (read from MANIFEST.md; file formats differ):

* ``pima``: CSV, no header, 8 features, class (0/1) last. Zeros that stand for missing values
  are left as they are (as most papers do).
* ``ionosphere``: CSV, no header, 34 features, label ``'g'``/``'b'`` last.
* ``sonar``: CSV, no header, 60 features, label ``'M'``/``'R'`` last.
* ``liver``: BUPA liver disorders, CSV with a header line added by the hosting repo. The label is
  column 7, UCI's train/test *selector* (values 1/2), which is what most papers use as the class;
  the documented target ``drinks`` (column 6) is kept as a feature.
* ``yacht``: whitespace-separated, no header; 6 features, residuary resistance is the target.
* ``cholesterol``: ARFF (Cleveland heart-disease attributes), target ``chol`` (last attribute);
  the 6 rows with a ``'?'`` (in ``ca``/``thal``) are **dropped**, leaving 297 rows. Nominal
  attributes are kept as their numeric codes.
* ``casp``: protein tertiary structure, CSV with header ``RMSD,F1..F9`` (gzipped, CRLF); the
  target is RMSD (first column).
* ``heart``: Statlog heart, whitespace-separated with a header line added by the repo; class
  1 (absent) / 2 (present) last.
* ``monks-1``, ``monks-2``, ``monks-3``: whitespace-separated ``class a1..a6 data_id``; the first
  line of every file is a junk header added by the repo and is skipped. ``X``/``y`` hold the
  ``.train`` file and ``X_test``/``y_test`` the ``.test`` file (the standard split).
* ``australian``: Statlog credit, whitespace-separated, no header, 14 attributes, class 0/1 last.
* ``spambase``: CSV with a header line added by the repo (57 feature names, then the class).
"""

from __future__ import annotations

import functools
import gzip
import io
from dataclasses import dataclass, field

import numpy as np

from ._paths import data_path

__all__ = ["UCI_DATASETS", "UCIDataset", "load_uci"]


@dataclass(frozen=True)
class UCIDataset:
    """One UCI dataset: features ``X`` (float64), target ``y``, ``task`` and optional test split.

    Properties ``n_samples``, ``n_features`` and ``classes`` (sorted labels of ``y`` and
    ``y_test``; None for regression) describe it.

    Parameters
    ----------
    name : str
        The dataset's name.
    X : ndarray of shape (n_samples, n_features)
        Features (float64).
    y : ndarray of shape (n_samples,)
        Labels as in the file (classification) or float64 targets (regression).
    task : {'classification', 'regression'}
        The task.
    feature_names : tuple of str, default ()
        Feature names, when known.
    X_test : ndarray, optional
        Features of a standard test split (monks-1/2/3), else None.
    y_test : ndarray, optional
        Targets of that split.

    See Also
    --------
    load_uci : Loads a UCIDataset.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.datasets.uci import UCIDataset
    >>> ds = UCIDataset("toy", np.zeros((4, 2)), np.array([1, 2, 2, 1]), "classification")
    >>> ds.n_samples, ds.n_features, ds.classes.tolist()
    (4, 2, [1, 2])
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    task: str  # 'classification' | 'regression'
    feature_names: tuple = ()
    X_test: np.ndarray | None = field(default=None, repr=False)
    y_test: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def classes(self) -> np.ndarray | None:
        """Sorted distinct labels (classification only)."""
        if self.task != "classification":
            return None
        ys = self.y if self.y_test is None else np.concatenate([self.y, self.y_test])
        return np.unique(ys)


_PIMA_NAMES = (
    "pregnancies", "glucose", "blood_pressure", "skin_thickness", "insulin", "bmi",
    "diabetes_pedigree", "age",
)
_YACHT_NAMES = (
    "lc_position", "prismatic_coefficient", "length_displacement_ratio", "beam_draught_ratio",
    "length_beam_ratio", "froude_number",
)
_AUSTRALIAN_NAMES = tuple(f"A{k}" for k in range(1, 15))


def _read_text(path) -> str:
    """The text of a file, gunzipped when its name ends in ``.gz``."""
    with (gzip.open if str(path).endswith(".gz") else open)(
            path, "rt", encoding="utf-8", newline=None) as fh:
        return fh.read()


def _rows(text: str, sep: str | None, skip: int = 0) -> list[list[str]]:
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines[skip:] if ln]
    if sep is None:
        return [ln.split() for ln in lines]
    return [[c.strip() for c in ln.split(sep)] for ln in lines]


def _check_width(rows: list[list[str]], width: int, name: str) -> None:
    bad = [k for k, r in enumerate(rows) if len(r) != width]
    if bad:
        raise ValueError(f"{name}: expected {width} fields per row, row {bad[0]} has "
                         f"{len(rows[bad[0]])}")


def _numeric_xy(rows, name, label_numeric=True):
    """Float64 features and the labels (last field) of equally wide rows."""
    _check_width(rows, len(rows[0]), name)
    arr = np.array(rows, dtype=object)
    # fancy indexing, not a slice: X keeps the (non-C-contiguous) layout it always had
    X, y = arr[:, list(range(arr.shape[1] - 1))].astype(np.float64), arr[:, -1]
    if label_numeric:
        yf = y.astype(np.float64)
        y = yf.astype(np.int64) if np.all(yf == np.round(yf)) else yf
    else:
        y = y.astype(str)
    return X, y


def _load_csv_classification(relpath, name, data_dir, sep=",", header=False,
                             label_numeric=True, names=None):
    rows = _rows(_read_text(data_path(relpath, data_dir)), sep)
    if header:
        names, rows = tuple(rows[0][:-1]), rows[1:]
    X, y = _numeric_xy(rows, name, label_numeric)
    if names is None:
        names = tuple(f"x{k}" for k in range(X.shape[1]))
    return UCIDataset(name, X, y, "classification", tuple(names))


def _load_yacht(data_dir):
    rows = _rows(_read_text(data_path("uci/yacht/yacht_hydrodynamics.data", data_dir)), None)
    _check_width(rows, 7, "yacht")
    arr = np.array(rows, dtype=np.float64)
    return UCIDataset("yacht", arr[:, :6].copy(), arr[:, 6].copy(), "regression", _YACHT_NAMES)


def _load_casp(data_dir):
    text = _read_text(data_path("uci/casp_protein/CASP.csv.gz", data_dir))
    head = text.split("\n", 1)[0].strip().split(",")
    arr = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != len(head):
        raise ValueError(f"casp: expected {len(head)} columns, got shape {arr.shape}")
    return UCIDataset("casp", arr[:, 1:].copy(), arr[:, 0].copy(), "regression",
                      tuple(head[1:]))


def _load_cholesterol(data_dir):
    text = _read_text(data_path("uci/cholesterol/cholesterol.arff", data_dir))
    names: list[str] = []
    rows: list[list[str]] = []
    in_data = False
    for raw in text.splitlines():
        ln = raw.strip()
        if not ln or ln.startswith("%"):
            continue
        low = ln.lower()
        if not in_data:
            if low.startswith("@attribute"):
                names.append(ln.split(None, 2)[1].strip("'\""))
            elif low.startswith("@data"):
                in_data = True
            continue
        rows.append([c.strip() for c in ln.split(",")])
    _check_width(rows, len(names), "cholesterol")
    kept = [r for r in rows if "?" not in r]  # 6 rows with missing ca/thal are dropped
    arr = np.array(kept, dtype=np.float64)
    target = names.index("chol")
    feat = [c for c in range(len(names)) if c != target]
    return UCIDataset("cholesterol", arr[:, feat].copy(), arr[:, target].copy(), "regression",
                      tuple(names[c] for c in feat))


def _monks_file(path, name):
    # first line of every file is a junk header added by the hosting repo
    rows = _rows(_read_text(path), None, skip=1)
    _check_width(rows, 8, name)
    arr = np.array([r[:7] for r in rows], dtype=np.float64)
    return arr[:, 1:].copy(), arr[:, 0].astype(np.int64)


def _load_monks(k, data_dir):
    name = f"monks-{k}"
    X, y = _monks_file(data_path(f"uci/monks/{name}.train", data_dir), name)
    Xt, yt = _monks_file(data_path(f"uci/monks/{name}.test", data_dir), name)
    return UCIDataset(name, X, y, "classification", tuple(f"a{j}" for j in range(1, 7)), Xt, yt)


def _csv(relpath, name, **options):
    """The loader of a CSV-like classification set (:func:`_load_csv_classification`)."""
    return functools.partial(_load_csv_classification, relpath, name, **options)


_LOADERS = {
    "pima": _csv("uci/pima/pima-indians-diabetes.csv", "pima", names=_PIMA_NAMES),
    "ionosphere": _csv("uci/ionosphere/ionosphere.csv", "ionosphere", label_numeric=False),
    "sonar": _csv("uci/sonar/sonar.csv", "sonar", label_numeric=False),
    "liver": _csv("uci/liver_bupa/bupa.data", "liver", header=True),
    "yacht": _load_yacht,
    "cholesterol": _load_cholesterol,
    "casp": _load_casp,
    "heart": _csv("uci/heart_statlog/heart.dat", "heart", sep=None, header=True),
    "monks-1": functools.partial(_load_monks, 1),
    "monks-2": functools.partial(_load_monks, 2),
    "monks-3": functools.partial(_load_monks, 3),
    "australian": _csv("uci/australian/australian.dat", "australian", sep=None,
                       names=_AUSTRALIAN_NAMES),
    "spambase": _csv("uci/spambase/spambase.data", "spambase", header=True),
}
_ALIASES = {"bupa": "liver", "monks1": "monks-1", "monks2": "monks-2", "monks3": "monks-3",
            "protein": "casp", "heart-statlog": "heart"}

UCI_DATASETS = tuple(_LOADERS)


def load_uci(name: str, data_dir=None) -> UCIDataset:
    """Load one UCI dataset of MANIFEST.md §3 by name (see the module docstring for conventions).

    Names: ``pima, ionosphere, sonar, liver, yacht, cholesterol, casp, heart, monks-1, monks-2,
    monks-3, australian, spambase`` (case-insensitive; ``_`` and ``-`` are interchangeable).

    Parameters
    ----------
    name : str
        The dataset's name.
    data_dir : str or os.PathLike, optional
        The data directory (see :func:`~asymkern.datasets.get_data_dir`).

    Returns
    -------
    UCIDataset
        Features, target, task and (monks) the test split.

    Raises
    ------
    ValueError
        For an unknown name or a malformed file.
    DataNotFoundError
        When the file is missing.

    See Also
    --------
    asymkern.KernelSVD : Tao et al. (2024)'s general-data experiments use these sets.

    Examples
    --------
    >>> from asymkern.datasets.uci import load_uci
    >>> ds = load_uci("sonar")  # doctest: +SKIP
    >>> ds.X.shape, ds.task  # doctest: +SKIP
    ((208, 60), 'classification')
    """
    if not isinstance(name, str):
        raise ValueError(f"name must be a string, one of {UCI_DATASETS}; got {name!r}")
    key = name.strip().lower().replace("_", "-")
    key = _ALIASES.get(key, _ALIASES.get(key.replace("-", ""), key))
    if key not in _LOADERS:
        raise ValueError(f"unknown UCI dataset {name!r}; expected one of {UCI_DATASETS}")
    return _LOADERS[key](data_dir)
