"""Directed citation graphs (Cora, CiteSeer, PubMed-Diabetes) and graph helpers.

Orientation. The default throughout asymkern is ``orientation='cites'``: ``adjacency[i, j] = 1``
iff paper i cites paper j (rows are out-edges). ``orientation='cited_by'`` returns the transpose,
``adjacency[i, j] = 1`` iff paper j cites paper i (rows are in-edges) — the orientation in which
the gnn-benchmark ``.npz`` files and the AsK-LS ``.mat`` files store Cora and CiteSeer. The choice
is always explicit (:data:`ORIENTATIONS`); no loader transposes silently. MANIFEST.md documents
the files: the gnn-benchmark ``.npz`` files store A[i, j] = 1 iff j cites i, LINQS PubMed lines
read ``citing | cited``.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field

import numpy as np
import scipy.io as sio
import scipy.sparse as sp

from ._paths import DataNotFoundError, data_path

GRAPHS = ("cora", "citeseer", "pubmed")

#: Edge orientations of :func:`load_citation_graph`: 'cites' (A[i, j] = 1 iff i cites j, the
#: default) and 'cited_by' (its transpose, A[i, j] = 1 iff j cites i: the .npz / AsK-LS .mat
#: orientation).
ORIENTATIONS = ("cites", "cited_by")


def check_orientation(orientation: str) -> str:
    """Validate an orientation name (one of :data:`ORIENTATIONS`) and return it.

    Parameters
    ----------
    orientation : str
        ``'cites'`` or ``'cited_by'``.

    Returns
    -------
    str
        ``orientation`` unchanged.

    Raises
    ------
    ValueError
        If it is not one of :data:`ORIENTATIONS`.

    Examples
    --------
    >>> from asymkern.datasets.graphs import check_orientation
    >>> check_orientation("cited_by")
    'cited_by'
    """
    if orientation not in ORIENTATIONS:
        raise ValueError(f"unknown orientation {orientation!r}; expected one of {ORIENTATIONS}")
    return orientation


@dataclass(frozen=True)
class DirectedGraph:
    """A directed graph with node labels: ``adjacency`` (CSR), ``labels`` (0..k-1).

    ``orientation`` says what ``adjacency[i, j] = 1`` means: 'cites' (i cites j) or 'cited_by'
    (j cites i); see :data:`ORIENTATIONS`.
    """

    name: str
    adjacency: sp.csr_matrix
    labels: np.ndarray
    class_names: tuple = ()
    node_ids: np.ndarray | None = field(default=None, repr=False)
    orientation: str = "cites"

    @property
    def n_nodes(self) -> int:
        return self.adjacency.shape[0]

    @property
    def n_classes(self) -> int:
        return int(self.labels.max()) + 1


def _binary(A: sp.csr_matrix) -> sp.csr_matrix:
    """``A`` (modified) with every stored entry set to 1, duplicates merged."""
    A.data[:] = 1.0
    A.sum_duplicates()
    return A


def _load_npz_graph(name: str, data_dir=None) -> DirectedGraph:
    path = data_path(f"{name}/{name}.npz", data_dir)
    with np.load(path, allow_pickle=True) as d:
        A = sp.csr_matrix((d["adj_data"], d["adj_indices"], d["adj_indptr"]),
                          shape=tuple(d["adj_shape"]))
        labels = np.asarray(d["labels"]).astype(np.int64)
        names = tuple(str(c) for c in d["class_names"]) if "class_names" in d else ()
        ids = np.asarray(d["node_names"]) if "node_names" in d else None
    A = _binary(sp.csr_matrix(A.T, dtype=np.float64))  # npz: "j cites i"; ours: "i cites j"
    return DirectedGraph(name, A, labels, names, ids)


def _load_pubmed(data_dir=None) -> DirectedGraph:
    table = data_path("pubmed/derived/pubmed_pmid_labels.tsv", data_dir)
    with open(table, encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        cols = {name: k for k, name in enumerate(header)}
        recs = [line.rstrip("\n").split("\t") for line in fh if line.strip()]
    pmids = np.array([r[cols["pmid"]] for r in recs])
    pidx = np.array([int(r[cols["planetoid_index"]]) for r in recs])
    labels = np.array([int(r[cols["planetoid_label"]]) for r in recs], dtype=np.int64)
    order = np.argsort(pidx)
    pmids, labels = pmids[order], labels[order]
    index = {p: i for i, p in enumerate(pmids)}
    edges = data_path("pubmed/linqs/Pubmed-Diabetes.DIRECTED.cites.tab.gz", data_dir)
    src, dst = [], []
    with gzip.open(edges, "rt") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4 or not parts[1].startswith("paper:"):
                continue
            a, b = parts[1][6:], parts[3][6:]
            if a in index and b in index:
                src.append(index[a])
                dst.append(index[b])
    n = len(pmids)
    A = _binary(sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n)))
    names = ("Diabetes Mellitus Experimental", "Diabetes Mellitus Type 2",
             "Diabetes Mellitus Type 1")
    return DirectedGraph("pubmed", A, labels, names, pmids)


def load_citation_graph(name: str, data_dir=None, orientation: str = "cites") -> DirectedGraph:
    """Load 'cora', 'citeseer' or 'pubmed' as a directed graph with labels.

    Cora/CiteSeer come from the gnn-benchmark ``.npz`` files; PubMed from the LINQS directed edge
    list with labels from the derived PMID table (Planetoid label codes 0..2, nodes in Planetoid
    order). Self-loops present in the data are kept. ``orientation='cites'`` (default):
    A[i, j] = 1 iff i cites j; ``'cited_by'``: the transpose (A[i, j] = 1 iff j cites i, the
    orientation of the .npz and AsK-LS .mat files). Only the edges' direction differs.
    """
    check_orientation(orientation)
    key = str(name).lower()
    if key not in GRAPHS:
        raise ValueError(f"unknown graph {name!r}; expected one of {GRAPHS}")
    g = _load_pubmed(data_dir) if key == "pubmed" else _load_npz_graph(key, data_dir)
    if orientation == "cites":
        return g
    At = sp.csr_matrix(g.adjacency.T)
    At.sort_indices()
    return DirectedGraph(g.name, At, g.labels, g.class_names, g.node_ids, orientation)


def load_askls_graph(name: str, data_dir=None) -> DirectedGraph:
    """The AsK-LS authors' graph matrices (He et al., 2023): G = D⁻¹(A + I) for 'cora'/'citeseer'.

    Returned as published (their orientation: G[i, j] ≠ 0 for j cites i), labels shifted to 0..k-1.
    ``adjacency`` here holds G itself (row-stochastic, with self-loops).
    """
    key = str(name).lower()
    if key not in ("cora", "citeseer"):
        raise DataNotFoundError(f"no AsK-LS .mat file for {name!r}: only 'cora' and 'citeseer' "
                                "exist (MANIFEST.md)")
    m = sio.loadmat(data_path(f"{key}/{key}_askls.mat", data_dir))
    G = sp.csr_matrix(np.asarray(m["G"], dtype=np.float64))
    labels = np.asarray(m["label"]).ravel().astype(np.int64) - 1
    return DirectedGraph(f"{key}-askls", G, labels)


AMAZON_GRAPHS = {"photo": "amazon_photo/amazon_photo.npz",
                 "computers": "amazon_computers/amazon_cs.npz"}


def load_amazon_graph(name: str = "photo", data_dir=None) -> DirectedGraph:
    """Amazon co-purchase graphs (Shchur et al.), 'photo' (7650 nodes, 8 classes) or 'computers'
    (13752 nodes, 10 classes), as stored in the data directory (MANIFEST.md §2).

    The files are pickled scipy objects (``np.load(..., allow_pickle=True)``); they come from a
    fixed public snapshot listed in SHA256SUMS. The stored adjacency is kept as is (it is not
    exactly symmetric), binarised, duplicates merged.
    """
    key = str(name).lower().removeprefix("amazon_").removeprefix("amazon-")
    if key not in AMAZON_GRAPHS:
        raise ValueError(f"unknown Amazon graph {name!r}; expected one of {sorted(AMAZON_GRAPHS)}")
    path = data_path(AMAZON_GRAPHS[key], data_dir)
    with np.load(path, allow_pickle=True) as d:
        A = sp.csr_matrix(d["adj_matrix"].item(), dtype=np.float64)
        labels = np.asarray(d["node_label"]).ravel()
        meta = d["metadata"].item() if "metadata" in d else {}
    _, labels = np.unique(labels, return_inverse=True)
    names = tuple(str(c) for c in meta.get("class_names", ())) if isinstance(meta, dict) else ()
    return DirectedGraph(f"amazon_{key}", _binary(A), labels.astype(np.int64), names)


def row_normalized_adjacency(A, self_loops: bool = True) -> sp.csr_matrix:
    """D⁻¹(A + I) (or D⁻¹A): each row divided by its sum; empty rows stay zero."""
    A = sp.csr_matrix(A, dtype=np.float64)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {A.shape}")
    if self_loops:
        A = A + sp.identity(A.shape[0], format="csr")
    deg = np.asarray(A.sum(axis=1)).ravel()
    inv = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
    return sp.csr_matrix(sp.diags(inv) @ A)


def directed_sbm(n_per_class: int = 100, n_classes: int = 3, p_forward: float = 0.08,
                 p_backward: float = 0.01, p_within: float = 0.03,
                 random_state=None) -> tuple[sp.csr_matrix, np.ndarray]:
    """Directed stochastic block model whose class information lives in edge *direction*.

    Classes are arranged in a cycle: an edge from class c to class c+1 (mod k) appears with
    probability ``p_forward``, the reverse with ``p_backward``, within a class with
    ``p_within``. With 3+ classes the *undirected* graph has the same between-class density for
    every pair, so a symmetrised adjacency hides most of the class signal.
    """
    rng = np.random.default_rng(random_state)
    n = n_per_class * n_classes
    y = np.repeat(np.arange(n_classes), n_per_class)
    P = np.zeros((n_classes, n_classes))
    for c in range(n_classes):
        P[c, c] = p_within
        P[c, (c + 1) % n_classes] = p_forward
        P[(c + 1) % n_classes, c] = p_backward
    if n_classes > 2:
        P[(P == 0) & ~np.eye(n_classes, dtype=bool)] = (p_forward + p_backward) / 2
    prob = P[y][:, y]
    A = (rng.random((n, n)) < prob).astype(np.float64)
    np.fill_diagonal(A, 0.0)
    perm = rng.permutation(n)
    return sp.csr_matrix(A[perm][:, perm]), y[perm]
