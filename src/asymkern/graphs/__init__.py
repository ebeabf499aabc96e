"""Directed-graph evaluation protocols for node embeddings (Tao et al., 2024, §4.1, App. C.1).

* :func:`node_classification` — a linear LS-SVM classifier (regularisation γ, one-vs-rest) on
  node embeddings, averaged over random stratified splits; Micro-/Macro-F1.
* :func:`reconstruct_adjacency` / :func:`graph_reconstruction` — for every node v with
  out-degree k_v, its k_v nearest other nodes in embedding space become its reconstructed
  out-neighbours; the reconstruction is compared with the true adjacency through the matrix
  norms ‖A − Â‖₁ (largest absolute column sum) and ‖A − Â‖₂ (largest singular value), the
  MATLAB ``norm(X, 1)`` / ``norm(X)`` the paper's experiments were run with.
* :func:`select_by_cv` — k-fold cross-validated Micro-F1 for picking a kernel parameter.

The linear LS-SVM with regularisation γ, ``min ½‖w‖² + γ/2 Σ e_i²`` with an unpenalised bias and
±1 targets, is exactly ridge regression on ±1 targets with ``alpha = 1/γ``; one-vs-rest then
predicts the class of the largest score. That is scikit-learn's ``RidgeClassifier(alpha=1/γ)``,
which :func:`lssvm_classifier` returns.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import svds
from sklearn.linear_model import RidgeClassifier
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit

from .._validation import as_data, as_square_csr, check_positive
from ..config import check_memory, get_config
from ..landmarks import nearest_rows

__all__ = ["graph_reconstruction", "lssvm_classifier", "matrix_norm_errors",
           "node_classification", "reconstruct_adjacency", "select_by_cv"]


def lssvm_classifier(gamma: float = 1.0) -> RidgeClassifier:
    """Linear one-vs-rest LS-SVM classifier with regularisation ``gamma`` (ridge, alpha = 1/γ).

    Parameters
    ----------
    gamma : float, default 1.0
        Positive LS-SVM regularisation γ (``RidgeClassifier(alpha=1/gamma)``).

    Returns
    -------
    sklearn.linear_model.RidgeClassifier
        The unfitted classifier.

    Raises
    ------
    ValueError
        If ``gamma`` is not positive and finite.

    See Also
    --------
    node_classification : Scores embeddings with this classifier.

    Examples
    --------
    >>> from asymkern.graphs import lssvm_classifier
    >>> lssvm_classifier(4.0).alpha
    0.25
    """
    return RidgeClassifier(alpha=1.0 / check_positive(gamma, "gamma"))


def _check_embedding_labels(embedding, labels):
    """The embedding as data and the labels as an array, one label per row."""
    E = as_data(embedding, "embedding")
    y = np.asarray(labels)
    if y.ndim != 1 or y.shape[0] != E.shape[0]:
        raise ValueError(f"labels must be 1-D with one entry per node ({E.shape[0]}), got "
                         f"shape {y.shape}")
    return E, y


def node_classification(embedding, labels, train_size: float = 0.5, n_trials: int = 10,
                        gamma: float = 1.0, random_state=0) -> dict:
    """Micro-/Macro-F1 of a linear LS-SVM (one-vs-rest, regularisation γ) on node embeddings.

    ``n_trials`` random stratified splits with a fraction ``train_size`` of labelled nodes for
    training; the rest is the test set (Tao et al. (2024), §4.1 and App. C.1).

    Parameters
    ----------
    embedding : array-like of shape (n_nodes, d)
        Node embeddings.
    labels : array-like of shape (n_nodes,)
        Node classes.
    train_size : float, default 0.5
        Fraction of nodes used for training, in (0, 1).
    n_trials : int, default 10
        Number of random splits.
    gamma : float, default 1.0
        LS-SVM regularisation.
    random_state : int or None, default 0
        Seed of the splits.

    Returns
    -------
    dict
        ``micro_f1``, ``micro_f1_std``, ``macro_f1``, ``macro_f1_std`` (floats, over trials).

    Raises
    ------
    ValueError
        If the labels do not match the embedding, or ``train_size``/``n_trials`` is out of
        range.

    See Also
    --------
    select_by_cv : Choose among candidate embeddings.
    lssvm_classifier : The classifier.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.graphs import node_classification
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 20)
    >>> E = rng.standard_normal((40, 2)) + 4.0 * y[:, None]     # separable classes
    >>> node_classification(E, y, n_trials=3)["micro_f1"]
    1.0
    """
    E, y = _check_embedding_labels(embedding, labels)
    if not 0 < train_size < 1:
        raise ValueError(f"train_size must be in (0, 1), got {train_size!r}")
    n_trials = _check_count(n_trials, "n_trials")
    splitter = StratifiedShuffleSplit(n_splits=n_trials, train_size=train_size,
                                      random_state=random_state)
    scores: dict = {"micro": [], "macro": []}
    for tr, te in splitter.split(E, y):
        pred = lssvm_classifier(gamma).fit(E[tr], y[tr]).predict(E[te])
        for avg, s in scores.items():
            s.append(f1_score(y[te], pred, average=avg))
    out = {}
    for avg, s in scores.items():
        out[f"{avg}_f1"], out[f"{avg}_f1_std"] = float(np.mean(s)), float(np.std(s))
    return out


def select_by_cv(embeddings: dict, labels, n_folds: int = 10, gamma: float = 1.0,
                 random_state=0) -> tuple:
    """Pick the key of ``embeddings`` (e.g. a bandwidth) with the best k-fold CV Micro-F1.

    The same stratified folds are used for every candidate.

    Parameters
    ----------
    embeddings : dict
        Candidate key → embedding of shape (n_nodes, d).
    labels : array-like of shape (n_nodes,)
        Node classes.
    n_folds : int, default 10
        Number of folds.
    gamma : float, default 1.0
        LS-SVM regularisation.
    random_state : int or None, default 0
        Seed of the folds.

    Returns
    -------
    best_key : object
        The key with the best mean CV Micro-F1.
    scores : dict
        Key → mean CV Micro-F1.

    Raises
    ------
    ValueError
        If ``embeddings`` is empty, an embedding does not match the labels, or ``n_folds``
        is not an integer >= 2.

    See Also
    --------
    node_classification : The test-set evaluation.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.graphs import select_by_cv
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 20)
    >>> good = rng.standard_normal((40, 2)) + 4.0 * y[:, None]
    >>> noise = rng.standard_normal((40, 2))
    >>> select_by_cv({"good": good, "noise": noise}, y, n_folds=4)[0]
    'good'
    """
    if not embeddings:
        raise ValueError("embeddings must hold at least one candidate")
    y = np.asarray(labels)
    if y.ndim != 1:
        raise ValueError(f"labels must be 1-D (one entry per node), got shape {y.shape}")
    checked = {}
    for key, emb in embeddings.items():  # each candidate named where its rows differ
        checked[key] = E = as_data(emb, f"embeddings[{key!r}]")
        if E.shape[0] != y.shape[0]:
            raise ValueError(f"embeddings[{key!r}] has {E.shape[0]} rows but labels has "
                             f"{y.shape[0]} entries; give one row per node")
    n_folds = _check_count(n_folds, "n_folds")
    if n_folds < 2:
        raise ValueError(f"n_folds must be at least 2, got {n_folds}")
    splitter = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=random_state)
    folds = list(splitter.split(np.zeros(len(y)), y))
    scores = {}
    for key, E in checked.items():
        scores[key] = float(np.mean([
            f1_score(y[te], lssvm_classifier(gamma).fit(E[tr], y[tr]).predict(E[te]),
                     average="micro") for tr, te in folds]))
    return max(scores, key=lambda k: scores[k]), scores


def _check_count(value, name: str) -> int:
    """``value`` as a positive int; a ValueError/TypeError naming ``name`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    x = float(value)
    if not (np.isfinite(x) and x == int(x) and x >= 1):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(x)


def _check_out_degree(out_degree, n: int) -> np.ndarray:
    """The out-degrees as int64, one integer in [0, n − 1] per node; else a ValueError."""
    raw = np.asarray(out_degree)
    if raw.ndim != 1 or raw.shape[0] != n:
        raise ValueError(f"out_degree must be 1-D with one entry per node ({n}), got shape "
                         f"{raw.shape}")
    if raw.dtype == np.bool_ or not np.issubdtype(raw.dtype, np.number) \
            or np.iscomplexobj(raw):
        raise ValueError(f"out_degree must hold integers, got dtype {raw.dtype}")
    if not np.issubdtype(raw.dtype, np.integer):
        bad = ~np.isfinite(raw) | (raw != np.round(raw))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"out_degree must hold integers, got out_degree[{i}] = "
                             f"{raw[i]!r}")
    if n and (raw.min() < 0 or raw.max() > n - 1):
        raise ValueError(f"out_degree entries must lie in [0, {n - 1}], got values in "
                         f"[{raw.min()}, {raw.max()}]")
    return raw.astype(np.int64)


def reconstruct_adjacency(embedding, out_degree, batch_size: int = 1024) -> sp.csr_matrix:
    """Binary Â whose row v holds the ``out_degree[v]`` nearest *other* nodes of v.

    Distances are Euclidean between embedding rows, exact up to their own rounding wherever
    the embedding lies (:func:`asymkern.landmarks.nearest_rows`; the expansion
    ‖e‖² + ‖f‖² − 2eᵀf picked other neighbours for embeddings at an offset of 1e8); ties are
    broken by index. Rows with k_v = 0 stay empty (Tao et al. (2024), App. C.1).

    Parameters
    ----------
    embedding : array-like of shape (n_nodes, d)
        Node embeddings.
    out_degree : array-like of shape (n_nodes,)
        k_v per node, in [0, n_nodes − 1].
    batch_size : int, default 1024
        Rows of distances computed at a time (at most: fewer where the degrees are so large
        that a batch's neighbour arrays would exceed ``working_memory``).

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n_nodes, n_nodes)
        The reconstructed adjacency (entries 1.0).

    Raises
    ------
    ValueError
        If ``out_degree`` is not 1-D with one integer in [0, n_nodes − 1] per node (a
        fractional or NaN degree is refused, not truncated), or ``batch_size`` is not a
        positive integer.
    TypeError
        If ``batch_size`` is not a number.

    See Also
    --------
    graph_reconstruction : Reconstruct and score.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.graphs import reconstruct_adjacency
    >>> E = np.array([[0.0], [1.0], [5.0]])
    >>> reconstruct_adjacency(E, [1, 1, 0]).toarray().tolist()
    [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    E = np.asarray(as_data(embedding, "embedding"), dtype=np.float64)
    n = E.shape[0]
    k = _check_out_degree(out_degree, n)
    batch_size = _check_count(batch_size, "batch_size")
    # a batch's k_max nearest nodes per row take 16 float64 arrays of rows × k_max at their
    # peak (landmarks._nearest_rows_nbytes): fewer rows where the degrees are large, so that
    # they fit in working_memory (one row may need more: nearest_rows checks it against
    # max_dense_memory)
    working = float(get_config()["working_memory"]) * 2**20
    nnz = int(k.sum())
    index_dtype = np.int32 if max(n, nnz) < 2**31 else np.int64
    # Â itself, checked before the first batch (its column pieces accumulate batch by batch):
    # at assembly the pieces, their concatenation (Â's indices), the data (ones, float64) and
    # indptr are alive together; the batches' own arrays are bounded by working_memory above
    isize = np.dtype(index_dtype).itemsize
    check_memory(nnz * (2 * isize + 8) + (n + 1) * isize,
                 f"reconstruct_adjacency of {n} nodes with {nnz} edges",
                 "smaller out_degree", detail=f"the CSR result with {nnz} entries (its column "
                 "indices twice while they are assembled)")
    cols: list = []
    start = 0
    while start < n:
        stop = min(start + batch_size, n)
        kmax = int(k[start:stop].max(initial=0))
        fit = max(1, int(working // (8 * 16 * max(kmax, 1))))
        if stop - start > fit:  # the shorter batch's own k_max (0 if its rows are dangling)
            stop = start + fit
            kmax = int(k[start:stop].max())
        if kmax == 0:
            start = stop
            continue
        # the kmax nearest other nodes by exact distances, nearest first, ties by index
        # (nearest_rows: the expansion ‖e‖² + ‖f‖² − 2eᵀf about the origin is rounded by more
        # than the distances themselves for embeddings far from it)
        near, _ = nearest_rows(E[start:stop], E, kmax, skip=start)
        # row v's columns, nearest first: the rows' slices in order are Â's CSR indices
        keep = np.arange(kmax) < k[start:stop, None]
        cols.append(near[keep].astype(index_dtype))
        start = stop
    indptr = np.zeros(n + 1, dtype=index_dtype)
    np.cumsum(k, out=indptr[1:])
    indices = np.concatenate(cols) if cols else np.zeros(0, dtype=index_dtype)
    A_hat = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(n, n))
    A_hat.sort_indices()
    return A_hat


def matrix_norm_errors(A, A_hat) -> dict:
    """Matrix-norm errors ‖A − Â‖₁ and ‖A − Â‖₂ of a reconstructed adjacency.

    ‖·‖₁ is the maximum absolute column sum and ‖·‖₂ the spectral norm (Tao et al. (2024),
    §4.1, lower is better).

    Parameters
    ----------
    A : array-like or sparse matrix of shape (n, n)
        The true adjacency (or any (n, m) matrix).
    A_hat : array-like or sparse matrix of the shape of A
        The reconstruction.

    Returns
    -------
    dict
        ``l1`` and ``l2`` (floats), ``n_wrong`` (int, differing entries) and
        ``edge_recall`` (fraction of true edges recovered; NaN without edges). Entries
        stored as explicit zeros in a sparse matrix are not edges.

    Raises
    ------
    ValueError
        If either matrix is not 2-D, the shapes differ, or an entry is complex, NaN or
        infinite.

    See Also
    --------
    graph_reconstruction : Reconstruct and score.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.graphs import matrix_norm_errors
    >>> A = np.array([[0, 1], [1, 0]])
    >>> err = matrix_norm_errors(A, np.array([[0, 1], [0, 0]]))
    >>> err["l1"], round(err["l2"], 3), err["n_wrong"], err["edge_recall"]
    (1.0, 1.0, 1, 0.5)
    """
    # copies: stored zeros are dropped (not edges) without touching the caller's matrices
    A = as_square_csr(A, "A", copy=True, square=False)
    A_hat = as_square_csr(A_hat, "A_hat", copy=True, square=False)
    if A.shape != A_hat.shape:
        raise ValueError(f"A_hat has shape {A_hat.shape}; expected {A.shape}")
    A.eliminate_zeros()
    A_hat.eliminate_zeros()
    D = (A - A_hat).tocsc()
    l1 = float(np.abs(D).sum(axis=0).max()) if D.nnz else 0.0
    if D.nnz == 0:
        l2 = 0.0
    elif min(D.shape) <= 3:
        l2 = float(np.linalg.norm(D.toarray(), 2))
    else:
        l2 = float(svds(D.astype(np.float64), k=1, return_singular_vectors=False,
                        random_state=0)[0])
    recall = float(A.multiply(A_hat).nnz / A.nnz) if A.nnz else float("nan")
    return {"l1": l1, "l2": l2, "n_wrong": int(abs(D).count_nonzero()), "edge_recall": recall}


def graph_reconstruction(embedding, adjacency, batch_size: int = 1024) -> dict:
    """Graph reconstruction of Tao et al. (2024) App. C.1: k-nearest-neighbour Â from an embedding.

    k_v is the out-degree of node v in the binary adjacency (self-loops removed); Â is
    compared with it by :func:`matrix_norm_errors`.

    Parameters
    ----------
    embedding : array-like of shape (n_nodes, d)
        Node embeddings.
    adjacency : array-like or sparse matrix of shape (n_nodes, n_nodes)
        The graph; nonzero entries are edges.
    batch_size : int, default 1024
        Rows of distances computed at a time.

    Returns
    -------
    dict
        The errors of :func:`matrix_norm_errors`.

    Raises
    ------
    ValueError
        If the adjacency is not square or the embedding does not have one row per node.

    See Also
    --------
    reconstruct_adjacency : The reconstruction.
    matrix_norm_errors : The scores.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos and J. A. K. Suykens,
       "Learning in Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and
       Nyström method", ICML 2024, §4.1 and App. C.1.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.graphs import graph_reconstruction
    >>> A = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    >>> E = np.array([[0.0], [1.0], [5.0]])
    >>> graph_reconstruction(E, A)["n_wrong"]
    0
    """
    A = as_square_csr(adjacency, "adjacency")
    E = as_data(embedding, "embedding")
    if E.shape[0] != A.shape[0]:
        raise ValueError(f"embedding has {E.shape[0]} rows but adjacency has {A.shape[0]} "
                         "nodes; give one embedding row per node")
    A = A - sp.diags(A.diagonal())
    A.eliminate_zeros()
    A.data[:] = 1.0
    k = np.diff(A.indptr)
    A_hat = reconstruct_adjacency(E, k, batch_size=batch_size)
    return matrix_norm_errors(A, A_hat)
