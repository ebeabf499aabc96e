"""LIBSVM-archive classification sets used by Li, Liu and Zhang (MANIFEST.md §4); nothing is
shipped.

* :func:`load_usps` — ``libsvm/usps/USPS.mat``: ``Train_DAT`` (256 × 7291) and ``Test_DAT``
  (256 × 2007) hold samples as **columns** (transposed here to rows); labels 1..10 with 10 = digit
  0, returned as digits 0..9. Pixel values lie in [0, 1] (the ESL ``zip`` values rescaled by
  (x+1)/2); ``scale='libsvm'`` maps them back to [−1, 1] (2x − 1), the range LIBSVM's ``usps``
  and so Li, Liu and Zhang's γ = 10 refer to. Not the LIBSVM file byte-for-byte (row order,
  transposed pixels), but the same 7291/2007 split.
* :func:`load_dna` — ``libsvm/dna/dna.scale`` / ``dna.scale.t``: 2000 / 1186 rows, 180 binary
  features, classes 1, 2, 3.
* :func:`load_phishing` — ``libsvm/phishing/phishing.gz`` (gzipped LIBSVM): 11055 rows, 68
  features, labels 0/1; no standard split, so it returns ``(X, y)``.

All return dense float64 ``X`` and integer ``y``.
"""

from __future__ import annotations

import numpy as np

from ._paths import data_path

__all__ = ["load_dna", "load_phishing", "load_usps"]


def _svmlight(path, n_features=None):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(path), n_features=n_features)
    return np.asarray(X.toarray(), dtype=np.float64), y.astype(np.int64)


def load_usps(data_dir=None, scale: str = "unit"):
    """USPS digits → ``(X_train, y_train, X_test, y_test)`` (7291 / 2007 × 256), digits 0..9.

    Parameters
    ----------
    data_dir : str or os.PathLike, optional
        The data directory (see :func:`~asymkern.datasets.get_data_dir`).
    scale : {'unit', 'libsvm'}, default 'unit'
        'unit' keeps the stored [0, 1] values; 'libsvm' returns 2x − 1 ∈ [−1, 1] (the range
        of LIBSVM's ``usps``, to which Li, Liu and Zhang's γ = 10 refers).

    Returns
    -------
    X_train : ndarray of shape (7291, 256)
        Training images (float64), one per row.
    y_train : ndarray of shape (7291,)
        Digits 0..9.
    X_test : ndarray of shape (2007, 256)
        Test images.
    y_test : ndarray of shape (2007,)
        Digits 0..9.

    Raises
    ------
    ValueError
        For an unknown ``scale``.
    DataNotFoundError
        If the data directory or the file is missing.

    See Also
    --------
    load_dna, load_phishing : The other LIBSVM sets of Li, Liu and Zhang.

    Examples
    --------
    >>> from asymkern.datasets.libsvm import load_usps
    >>> X_train, y_train, X_test, y_test = load_usps()  # doctest: +SKIP
    >>> X_train.shape, X_test.shape  # doctest: +SKIP
    ((7291, 256), (2007, 256))
    """
    import scipy.io as sio

    if scale not in ("unit", "libsvm"):
        raise ValueError(f"scale must be 'unit' or 'libsvm', got {scale!r}")
    d = sio.loadmat(str(data_path("libsvm/usps/USPS.mat", data_dir)))
    out = []
    for dat, lab in (("Train_DAT", "trainlabels"), ("Test_DAT", "testlabels")):
        X = np.ascontiguousarray(np.asarray(d[dat], dtype=np.float64).T)
        if scale == "libsvm":
            X = 2.0 * X - 1.0
        y = np.asarray(d[lab]).ravel().astype(np.int64) % 10  # label 10 is digit 0
        out += [X, y]
    return tuple(out)


def load_dna(data_dir=None):
    """Statlog DNA → ``(X_train, y_train, X_test, y_test)`` (2000 / 1186 × 180), classes 1..3.

    Parameters
    ----------
    data_dir : str or os.PathLike, optional
        The data directory (see :func:`~asymkern.datasets.get_data_dir`).

    Returns
    -------
    X_train : ndarray of shape (2000, 180)
        Binary features (float64).
    y_train : ndarray of shape (2000,)
        Classes 1, 2, 3.
    X_test : ndarray of shape (1186, 180)
        Test features.
    y_test : ndarray of shape (1186,)
        Test classes.

    Raises
    ------
    DataNotFoundError
        If the data directory or a file is missing.

    See Also
    --------
    load_usps, load_phishing : The other LIBSVM sets of Li, Liu and Zhang.

    Examples
    --------
    >>> from asymkern.datasets.libsvm import load_dna
    >>> X_train, y_train, X_test, y_test = load_dna()  # doctest: +SKIP
    >>> X_train.shape  # doctest: +SKIP
    (2000, 180)
    """
    return tuple(a for f in ("dna.scale", "dna.scale.t")
                 for a in _svmlight(data_path(f"libsvm/dna/{f}", data_dir), n_features=180))


def load_phishing(data_dir=None):
    """Phishing websites → ``(X, y)`` (11055 × 68), labels 0/1 (no standard split).

    Parameters
    ----------
    data_dir : str or os.PathLike, optional
        The data directory (see :func:`~asymkern.datasets.get_data_dir`).

    Returns
    -------
    X : ndarray of shape (11055, 68)
        Features (float64).
    y : ndarray of shape (11055,)
        Labels 0/1.

    Raises
    ------
    DataNotFoundError
        If the data directory or a file is missing.

    See Also
    --------
    load_usps, load_dna : The other LIBSVM sets of Li, Liu and Zhang.

    Examples
    --------
    >>> from asymkern.datasets.libsvm import load_phishing
    >>> X, y = load_phishing()  # doctest: +SKIP
    >>> X.shape  # doctest: +SKIP
    (11055, 68)
    """
    return _svmlight(data_path("libsvm/phishing/phishing.gz", data_dir), n_features=68)
