"""Directed-graph kernel of He et al. (2023) §4.2 (AsK-LS node classification).

Samples are *node indices*: ``X`` is an (m, 1) array of integer node ids and
κ(i, j) = G[i, j] with G the in-degree-normalised adjacency of the paper:

    𝒜_ij = 1 iff j → i (He et al., 2023, §4.2),   G = D⁻¹(𝒜 + I),   D = diag(in-degree + 1).

asymkern's graph convention is ``adjacency[i, j] = 1`` iff i → j, so 𝒜 = adjacencyᵀ.
Non-negative stored values are edge weights: 𝒜_ij = adjacency[j, i] ≥ 0 is the weight of
the edge j → i and D holds the weighted in-degrees plus 1 (a binary 0/1 adjacency gives the
paper's G exactly); negative values are refused (``ValueError``). The
authors' own Cora/CiteSeer matrices (``load_askls_graph``) already hold G: pass them with
``preprocess='none'``. ``symmetrize=True`` gives (G + Gᵀ)/2, the symmetrisation the paper's SVM
and LS-SVM baselines use.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import as_square_csr
from .base import Kernel, check_bool


class DirectedGraphKernel(Kernel):
    """κ(i, j) = G[i, j] between node ids (He et al., 2023, §4.2); asymmetric unless ``symmetrize``.

    Samples are node ids, an (m, 1) array (:func:`~asymkern.kernels.graph.node_ids`).
    With ``preprocess='in-degree'``, G = D⁻¹(𝒜 + I) with 𝒜 = adjacencyᵀ (𝒜_ij = 1 iff
    j → i) and D = diag(in-degree + 1), as in He et al. (2023), §4.2. Stored values are
    edge weights: 𝒜_ij = adjacency[j, i] ≥ 0 and D = diag(weighted in-degree + 1), so
    G_ij = (𝒜_ij + δ_ij) / (1 + Σ_k 𝒜_ik); a binary 0/1 adjacency gives the paper's G
    exactly, and every row of G sums to 1 with G_ii > 0. Rows whose weighted in-degree
    exceeds the float range are scaled by a power of two before normalising (exact).

    G is built (and the parameters validated) at construction, by :meth:`set_params`, and again
    at the next use after a parameter is assigned (``k.symmetrize = True``, ``k.adjacency =
    B``), so the values, :attr:`matrix_` and ``is_symmetric`` always follow the parameters.
    Changing the adjacency array in place is not detected: assign a new array instead.

    Parameters
    ----------
    adjacency : array-like or sparse matrix of shape (N, N)
        ``adjacency[i, j]``: the non-negative weight of edge i → j (0: no edge; a 0/1
        matrix for the paper's binary 𝒜), or the finished kernel matrix G with
        ``preprocess='none'`` (used as given, any finite values).
    preprocess : {'in-degree', 'none'}, default 'in-degree'
        ``'in-degree'``: G = D⁻¹(adjacencyᵀ + I); ``'none'``: G = adjacency.
    symmetrize : bool, default False
        Use (G + Gᵀ)/2 (the symmetric baseline).

    Raises
    ------
    ValueError
        If ``preprocess`` is unknown, the adjacency is not square or not finite, holds a
        negative weight (``preprocess='in-degree'``), or the samples are not integer node
        ids in [0, N).

    See Also
    --------
    asymkern.graphs.node_classification : AsK-LS node classification with this kernel.

    References
    ----------
    .. [1] M. He, F. He, L. Shi, X. Huang and J. A. K. Suykens, "Learning with Asymmetric
       Kernels: Least Squares and Feature Interpretation", IEEE TPAMI 2023, §4.2.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import DirectedGraphKernel
    >>> from asymkern.kernels.graph import node_ids
    >>> A = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])   # 0 -> 1 -> 2
    >>> k = DirectedGraphKernel(A)
    >>> k(node_ids(3)).tolist()
    [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]
    """

    name = "directed_graph"
    is_psd = False
    checks_features = True

    def __init__(self, adjacency, preprocess: str = "in-degree", symmetrize: bool = False):
        self.adjacency = adjacency
        self.preprocess = preprocess
        self.symmetrize = symmetrize
        self._params_changed()

    def _param_values(self) -> tuple:
        """The parameter objects G is built from (compared by identity with those of the
        last build, so that a parameter assigned after construction is noticed)."""
        return (self.adjacency, self.preprocess, self.symmetrize)

    def _check_params(self) -> None:
        """Rebuild G (validating the parameters) when a parameter was assigned since the last
        build, as every kernel re-checks its parameters at use; raises ``ValueError`` or
        ``TypeError`` naming the parameter."""
        built = getattr(self, "_built_from", None)
        if built is None or any(a is not b for a, b in zip(self._param_values(), built)):
            self._params_changed()

    def _graph(self) -> sp.csr_matrix:
        """G for the current parameters (rebuilt first if a parameter was assigned)."""
        self._check_params()
        return self._G

    def _params_changed(self) -> None:
        """Validate the parameters and build the kernel matrix G from the adjacency."""
        if not isinstance(self.preprocess, str) or self.preprocess not in ("in-degree", "none"):
            raise ValueError(
                f"preprocess must be 'in-degree' or 'none', got {self.preprocess!r}"
            )
        check_bool(self.symmetrize, "symmetrize", self.name)
        A = as_square_csr(self.adjacency, "adjacency")
        if A.nnz and not np.all(np.isfinite(A.data)):
            raise ValueError("adjacency contains NaN or infinity")
        if self.preprocess == "in-degree":
            if A.nnz and A.data.min() < 0:
                C = A.tocoo()
                k = int(np.argmin(C.data))
                raise ValueError(
                    "adjacency must hold non-negative edge weights (preprocess='in-degree'), "
                    f"got adjacency[{int(C.row[k])}, {int(C.col[k])}] = {float(C.data[k])!r}; "
                    "use preprocess='none' for a finished kernel matrix"
                )
            M = sp.csr_matrix(A.T) + sp.identity(A.shape[0], format="csr")
            with np.errstate(over="ignore"):  # an overflowing row is rescaled just below
                deg = np.asarray(M.sum(axis=1)).ravel()  # >= 1: weighted in-degree + 1
            if not np.all(np.isfinite(deg)):
                # weighted in-degree beyond the float range: scale those rows by 2^-e (e the
                # exponent of the row maximum; exact) before normalising
                bad = ~np.isfinite(deg)
                rmax = np.asarray(M.max(axis=1).todense()).ravel()
                scale = np.ones_like(deg)
                scale[bad] = np.ldexp(1.0, -np.frexp(rmax[bad])[1])
                M = sp.csr_matrix(sp.diags(scale) @ M)
                deg = np.asarray(M.sum(axis=1)).ravel()
            G = sp.csr_matrix(sp.diags(1.0 / deg) @ M)
        else:
            G = A
        if self.symmetrize:
            G = sp.csr_matrix((G + G.T) * 0.5)
        self._G = G
        self._built_from = self._param_values()

    @property
    def n_nodes(self) -> int:
        """Number of nodes N (the kernel is defined on node ids 0 … N−1)."""
        return int(self._graph().shape[0])

    @property
    def is_symmetric(self) -> bool:  # type: ignore[override]
        # an invalid flag (refused at use) never claims symmetry
        return isinstance(self.symmetrize, (bool, np.bool_)) and bool(self.symmetrize)

    @property
    def matrix_(self) -> sp.csr_matrix:
        """The full N × N kernel matrix G (CSR), for the current parameters."""
        return self._graph()

    def _ids(self, X, name) -> np.ndarray:
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != 1:
            raise ValueError(f"{name} must be an (m, 1) array of node ids, got shape {X.shape}")
        ids = X[:, 0]
        if not np.all(ids == np.round(ids)) or ids.min(initial=0) < 0 or (
            ids.size and ids.max() >= self.n_nodes
        ):
            raise ValueError(f"{name} must hold integer node ids in [0, {self.n_nodes})")
        return ids.astype(np.int64)

    def _raw(self, X, Z):
        G = self._graph()
        i = self._ids(X, "X")
        j = self._ids(Z, "Z")
        return G[i][:, j].toarray()

    def __repr__(self) -> str:
        # from the adjacency itself (never rebuilding G: a repr does not raise)
        shape = tuple(getattr(self.adjacency, "shape", None) or np.shape(self.adjacency))
        square = len(shape) == 2 and shape[0] == shape[1]
        size = f"{shape[0]}-node" if square else "x".join(map(str, shape))
        return (f"{type(self).__name__}(<{size} adjacency>, "
                f"preprocess={self.preprocess!r}, symmetrize={self.symmetrize!r})")

    def __eq__(self, other) -> bool:
        if type(self) is not type(other):
            return False
        G, H = self._graph(), other._graph()
        return (self.preprocess == other.preprocess and self.symmetrize == other.symmetrize
                and G.shape == H.shape and (G != H).nnz == 0)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.preprocess, self.symmetrize, self.n_nodes))


def node_ids(n: int) -> np.ndarray:
    """The (n, 1) float array [[0], …, [n−1]]: node ids, the samples of DirectedGraphKernel."""
    return np.arange(n, dtype=np.float64)[:, None]
