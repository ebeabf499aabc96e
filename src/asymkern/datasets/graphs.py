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
import pickle
from dataclasses import dataclass, field

import numpy as np
import scipy.io as sio
import scipy.sparse as sp

from .._validation import as_square_csr
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

    Returned as published (their orientation: G[i, j] ≠ 0 for j cites i, so the result's
    ``orientation`` is ``'cited_by'``), labels shifted to 0..k-1. ``adjacency`` here holds G
    itself (row-stochastic, with self-loops); He et al. (2023), §4.2.

    Parameters
    ----------
    name : str
        'cora' or 'citeseer' (case-insensitive).
    data_dir : str or os.PathLike, optional
        The data directory (see :func:`~asymkern.datasets.get_data_dir`).

    Returns
    -------
    DirectedGraph
        ``adjacency`` = G (CSR float64), labels 0..k−1, ``orientation='cited_by'``.

    Raises
    ------
    DataNotFoundError
        For another name (no such file exists) or a missing file.
    """
    key = str(name).lower()
    if key not in ("cora", "citeseer"):
        raise DataNotFoundError(f"no AsK-LS .mat file for {name!r}: only 'cora' and 'citeseer' "
                                "exist (MANIFEST.md)")
    m = sio.loadmat(data_path(f"{key}/{key}_askls.mat", data_dir))
    G = sp.csr_matrix(np.asarray(m["G"], dtype=np.float64))
    labels = np.asarray(m["label"]).ravel().astype(np.int64) - 1
    return DirectedGraph(f"{key}-askls", G, labels, orientation="cited_by")


AMAZON_GRAPHS = {"photo": "amazon_photo/amazon_photo.npz",
                 "computers": "amazon_computers/amazon_cs.npz"}


class _DataUnpickler(pickle.Unpickler):
    """Unpickles only numpy arrays, scipy sparse matrices and plain Python containers, and
    reads the scipy sparse classes from ``scipy.sparse`` itself: the Amazon files pickle
    them under their old module paths (``scipy.sparse.csr``), which SciPy deprecates and
    SciPy 2.0 removes."""

    _BUILTINS = frozenset({"dict", "list", "tuple", "set", "frozenset", "str", "bytes",
                           "int", "float", "complex", "bool", "slice", "object"})

    def find_class(self, module: str, name: str):
        if module == "scipy.sparse" or module.startswith("scipy.sparse."):
            cls = getattr(sp, name, None)
            if cls is not None:
                return cls
        if module.split(".")[0] == "numpy" or (module == "builtins" and name in self._BUILTINS):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to unpickle {module}.{name} from a data file")


def _read_npz_objects(path, keys) -> dict:
    """The members ``keys`` (those present) of an .npz file whose arrays may be pickled
    objects, read with :class:`_DataUnpickler` (numpy's own reader would unpickle anything,
    through the deprecated scipy module paths)."""
    import zipfile

    from numpy.lib import format as npformat

    out = {}
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        for key in keys:
            if f"{key}.npy" not in names:
                continue
            with zf.open(f"{key}.npy") as fp:
                major, _ = npformat.read_magic(fp)
                read_header = (npformat.read_array_header_1_0 if major == 1
                               else npformat.read_array_header_2_0)
                shape, fortran, dtype = read_header(fp)
                if dtype.hasobject:
                    out[key] = _DataUnpickler(fp).load()
                else:
                    count = int(np.prod(shape, dtype=np.int64))
                    flat = np.frombuffer(fp.read(count * dtype.itemsize), dtype=dtype,
                                         count=count)
                    out[key] = flat.reshape(shape, order="F" if fortran else "C").copy()
    return out


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
    members = _read_npz_objects(path, ("adj_matrix", "node_label", "metadata"))
    A = sp.csr_matrix(members["adj_matrix"].item(), dtype=np.float64)
    labels = np.asarray(members["node_label"]).ravel()
    meta = members["metadata"].item() if "metadata" in members else {}
    _, labels = np.unique(labels, return_inverse=True)
    names = tuple(str(c) for c in meta.get("class_names", ())) if isinstance(meta, dict) else ()
    return DirectedGraph(f"amazon_{key}", _binary(A), labels.astype(np.int64), names)


def row_normalized_adjacency(A, self_loops: bool = True) -> sp.csr_matrix:
    """D⁻¹(A + I) (or D⁻¹A): each row divided by its sum; empty rows stay zero.

    The random-walk matrix of the graph data matrix of Tao et al. (2024), §4.1: D is the
    diagonal of row sums (weighted out-degrees, plus 1 with ``self_loops``), so every row
    that is not empty sums to 1. Stored values are edge weights; duplicate entries of a COO
    matrix are summed (scipy's convention).

    Parameters
    ----------
    A : array-like or sparse matrix of shape (n, n)
        Non-negative, finite edge weights, ``A[i, j]`` for the edge i → j.
    self_loops : bool, default True
        Add the identity before normalising (D⁻¹(A + I)); False gives D⁻¹A, whose rows
        without edges stay zero.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n, n)
        The row-normalised matrix (float64); ``A`` itself is not modified.

    Raises
    ------
    ValueError
        If ``A`` is not square, or holds a negative, NaN or infinite entry (a row could then
        sum to zero or to NaN and be returned silently wrong).

    Notes
    -----
    A row whose sum overflows float64 (finite weights near the float range) is first scaled
    by a power of two (exact), so it is normalised rather than returned as zeros.
    """
    A = as_square_csr(A, "A")
    if A.nnz and not np.all(np.isfinite(A.data)):
        raise ValueError("A holds NaN or infinite entries; edge weights must be finite")
    if A.nnz and A.data.min() < 0:
        C = A.tocoo()
        k = int(np.argmin(C.data))
        raise ValueError(f"A must hold non-negative edge weights, got A[{int(C.row[k])}, "
                         f"{int(C.col[k])}] = {float(C.data[k])!r}")
    if self_loops:
        A = A + sp.identity(A.shape[0], format="csr")
    with np.errstate(over="ignore"):  # an overflowing row is rescaled just below
        deg = np.asarray(A.sum(axis=1)).ravel()
    bad = ~np.isfinite(deg)
    if bad.any():
        # weights near the float range: scale those rows by 2^-e (e the exponent of the row
        # maximum; exact) before normalising, which leaves D⁻¹(A + I) unchanged
        rmax = np.asarray(A.max(axis=1).todense()).ravel()
        scale = np.ones_like(deg)
        scale[bad] = np.ldexp(1.0, -np.frexp(rmax[bad])[1])
        A = sp.csr_matrix(sp.diags(scale) @ A)
        deg = np.asarray(A.sum(axis=1)).ravel()
    inv = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
    return sp.csr_matrix(sp.diags(inv) @ A)


def directed_sbm(n_per_class: int = 100, n_classes: int = 3, p_forward: float = 0.08,
                 p_backward: float = 0.01, p_within: float = 0.03,
                 random_state=None) -> tuple[sp.csr_matrix, np.ndarray]:
    """Directed stochastic block model whose class information lives in edge *direction*.

    Classes are arranged in a cycle: an edge from class c to class c+1 (mod k) appears with
    probability ``p_forward``, the reverse with ``p_backward``, within a class with
    ``p_within``; other pairs of classes (k ≥ 4) get (p_forward + p_backward)/2. With 3+
    classes the *undirected* graph has the same between-class density for every pair, so a
    symmetrised adjacency hides most of the class signal. With 2 classes, 0 → 1 is forward
    and 1 → 0 backward; with 1 class only ``p_within`` applies.

    Parameters
    ----------
    n_per_class : int, default 100
        Nodes per class.
    n_classes : int, default 3
        Number of classes k.
    p_forward, p_backward, p_within : float
        Edge probabilities in [0, 1].
    random_state : int, Generator or None, default None
        Seed of the draws.

    Returns
    -------
    A : scipy.sparse.csr_matrix of shape (n, n)
        Binary adjacency, ``A[i, j] = 1`` for the edge i → j, no self-loops (n =
        n_per_class · n_classes, nodes in random order).
    y : ndarray of shape (n,)
        Classes 0..k−1.

    Raises
    ------
    ValueError
        If a count is not a positive integer or a probability is outside [0, 1].
    """
    for name, count in (("n_per_class", n_per_class), ("n_classes", n_classes)):
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)) \
                or count < 1:
            raise ValueError(f"{name} must be a positive integer, got {count!r}")
    for name, p in (("p_forward", p_forward), ("p_backward", p_backward),
                    ("p_within", p_within)):
        if not (isinstance(p, (int, float, np.integer, np.floating)) and 0 <= p <= 1):
            raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")
    rng = np.random.default_rng(random_state)
    n = n_per_class * n_classes
    y = np.repeat(np.arange(n_classes), n_per_class)
    c = np.arange(n_classes)
    P = np.full((n_classes, n_classes), (p_forward + p_backward) / 2)
    if n_classes > 1:
        P[(c + 1) % n_classes, c] = p_backward
        fwd = c if n_classes > 2 else c[:1]  # 2 classes: 0 → 1 forward, 1 → 0 backward
        P[fwd, (fwd + 1) % n_classes] = p_forward
    P[c, c] = p_within
    prob = P[y][:, y]
    A = (rng.random((n, n)) < prob).astype(np.float64)
    np.fill_diagonal(A, 0.0)
    perm = rng.permutation(n)
    return sp.csr_matrix(A[perm][:, perm]), y[perm]
