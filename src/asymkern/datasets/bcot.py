"""Document–term biclustering benchmarks used by BCOT (Fettal et al., 2022) and Tao et al. (2024)
Table 2.

Files (MANIFEST.md §5): ``bcot/acm/acm.mat`` (3025 × 1870 binary, gnd 0..2 — 0-based),
``bcot/dblp/DBLP.mat`` (4057 × 334 binary, gnd 1..4), ``bcot/wiki/wiki.mat`` (2405 × 4973 sparse
TF-IDF, gnd 1..17). The features are used as stored (BCOT's ``read_dataset`` reads ``fea`` as
float without preprocessing); labels are returned 0-based. PubMed's document–term matrix
(19717 × 500) is not in the data directory (MANIFEST.md: over the snapshot size limit), so
``load_bcot('pubmed')`` raises :class:`DataNotFoundError`.

``n_term_clusters`` is the number of term clusters of Tao et al. (2024) Table 9 / BCOT's
term-clustering script (ACM 18, DBLP 2, Wiki 23, PubMed 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.io as sio
import scipy.sparse as sp

from ._paths import DataNotFoundError, data_path

__all__ = ["BCOT_DATASETS", "BiclusterDataset", "load_bcot"]

# name -> (relative path, 0-based labels in the file?, number of term clusters)
BCOT_DATASETS = {
    "acm": ("bcot/acm/acm.mat", True, 18),
    "dblp": ("bcot/dblp/DBLP.mat", False, 2),
    "wiki": ("bcot/wiki/wiki.mat", False, 23),
}


@dataclass(frozen=True)
class BiclusterDataset:
    """A document–term matrix ``X`` (CSR float64, documents × terms) with document labels.

    Properties ``n_documents``, ``n_terms`` and ``n_document_clusters`` give the sizes.

    Parameters
    ----------
    name : str
        The dataset ('acm', 'dblp' or 'wiki').
    X : scipy.sparse.csr_matrix of shape (n_documents, n_terms)
        The document–term matrix (float64).
    labels : ndarray of shape (n_documents,)
        Document labels 0..k−1.
    n_term_clusters : int
        The number of term clusters of Tao et al. (2024) Table 9 (BCOT's term-clustering script).

    See Also
    --------
    load_bcot : Loads a BiclusterDataset.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from asymkern.datasets.bcot import BiclusterDataset
    >>> ds = BiclusterDataset("toy", sp.csr_matrix(np.eye(3)), np.array([0, 1, 1]), 2)
    >>> ds.n_documents, ds.n_terms, ds.n_document_clusters
    (3, 3, 2)
    """

    name: str
    X: sp.csr_matrix
    labels: np.ndarray
    n_term_clusters: int

    @property
    def n_documents(self) -> int:
        return self.X.shape[0]

    @property
    def n_terms(self) -> int:
        return self.X.shape[1]

    @property
    def n_document_clusters(self) -> int:
        return int(np.unique(self.labels).size)


def load_bcot(name: str, data_dir=None) -> BiclusterDataset:
    """Load 'acm', 'dblp' or 'wiki' (features as float64 CSR, labels 0..k-1).

    Parameters
    ----------
    name : str
        'acm', 'dblp' or 'wiki' (case-insensitive).
    data_dir : str or os.PathLike, optional
        The data directory (see :func:`~asymkern.datasets.get_data_dir`).

    Returns
    -------
    BiclusterDataset
        The document–term matrix, labels and number of term clusters.

    Raises
    ------
    ValueError
        For an unknown name, or a file whose label count differs from its row count.
    DataNotFoundError
        For 'pubmed' (not in the data directory) or a missing file.

    See Also
    --------
    asymkern.KernelSVD : KSVD biclustering (Tao et al., 2024, Table 2) uses these sets.

    Examples
    --------
    >>> from asymkern.datasets.bcot import load_bcot
    >>> ds = load_bcot("dblp")  # doctest: +SKIP
    >>> ds.X.shape, ds.n_document_clusters  # doctest: +SKIP
    ((4057, 334), 4)
    """
    key = str(name).lower()
    if key == "pubmed":
        raise DataNotFoundError("the PubMed document-term matrix (BCOT pubmed.mat, 19717 x 500) "
                                "is not in the data directory: it was over the snapshot size "
                                "limit (MANIFEST.md §5)")
    if key not in BCOT_DATASETS:
        raise ValueError(f"unknown biclustering dataset {name!r}; expected one of "
                         f"{tuple(BCOT_DATASETS)}")
    rel, zero_based, k_terms = BCOT_DATASETS[key]
    m = sio.loadmat(data_path(rel, data_dir))
    X = sp.csr_matrix(m["fea"], dtype=np.float64)
    X.sum_duplicates()
    gnd = np.asarray(m["gnd"]).ravel().astype(np.int64)
    labels = gnd if zero_based else gnd - 1
    if labels.shape[0] != X.shape[0]:
        raise ValueError(f"{rel}: {labels.shape[0]} labels for {X.shape[0]} documents")
    _, labels = np.unique(labels, return_inverse=True)
    return BiclusterDataset(key, X, labels.astype(np.int64), k_terms)
