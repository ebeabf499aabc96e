"""A tall-skinny QR (TSQR) tree over the row chunks of a dask matrix that can apply its Q.

Shared by the compatibility map a0 (:meth:`asymkern._dask.compat.DaskCompatibility._pinv_rows`,
C = Q F) and the Nyström GSA ridge fit (:func:`asymkern._dask.machines.fit_ridge`,
α̂ = Q F). A leaf is one row chunk B_c = Q_c R_c; a node is the QR [R_a; R_b] = Q_node R of its
two children's R factors, paired in the fixed order of :func:`asymkern._dask.kernel._tree` (the
pairing of the trees of R factors built with it elsewhere). The full Q
of B = [B_1; …; B_p] is the product of the block-diagonal leaf factors and the node factors;
Q F is formed top-down: the root's right factor F is sent down the tree, each node handing its
children their rows of Q_node F, each leaf returning Q_c F_c — Householder's backward stability
(Q R = B + δB, ‖δB‖ of order eps·‖B‖, Q orthonormal to rounding) without ever forming B's Q
(n × k) in one place and without inverting R.

A leaf's Q either travels with it (``leaf = (Q_c, R_c)``, :func:`qr_leaf`: the leaves' Q factors,
n × k in all, are held by the scheduler between the two sweeps) or is recomputed by the caller's
``leaf_rows`` task in the downward sweep from the chunk itself (the leaf then only needs its
R_c: memory per task bounded by one chunk, nothing n × k held). The GSA fit does the latter
with :func:`householder_leaf` and :func:`householder_rows` (LAPACK ``geqrt`` / ``gemqrt``: Q
applied through its reflectors, as the in-memory Householder route does), and splits the
downward sweep in two: :func:`tsqr_leaf_factors` pushes F through the internal nodes only, in
the fit's graph (where the nodes' Q factors are), and gives each leaf its small share F_c
(h_c × r); Q F is then one map over the chunks, Q_c F_c, whenever it is asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from .kernel import task


def qr_leaf(T) -> tuple[np.ndarray, np.ndarray]:
    """(Q, R) of one row chunk of T (densified, float64): a leaf that keeps its Q.

    Parameters
    ----------
    T : ndarray or sparse matrix of shape (n_c, k)

    Returns
    -------
    Q : ndarray of shape (n_c, min(n_c, k))
    R : ndarray of shape (min(n_c, k), k)
    """
    T = T.toarray() if sp.issparse(T) else T
    Q, R = np.linalg.qr(np.asarray(T, dtype=np.float64))
    return Q, R


def householder_leaf(B) -> tuple[tuple | None, np.ndarray]:
    """Householder QR of one row chunk B (n_c × k, any shape) with Q kept as its reflectors:
    ``(reflectors, R)``, R of shape (min(n_c, k), k).

    LAPACK ``geqrt`` (block size min(32, n_c, k)), the factorisation of the in-memory
    :meth:`asymkern._backend.ArrayOps.householder`, for wide chunks too; apply Q with
    :func:`householder_rows`. ``reflectors`` is None for a chunk without rows.
    """
    import scipy.linalg as sla

    rows, k = B.shape
    kk = min(rows, k)
    if kk == 0:
        return None, np.zeros((0, k))
    H, T, info = sla.lapack.dgeqrt(min(32, kk), np.asfortranarray(B, dtype=np.float64),
                                   overwrite_a=1)
    if info != 0:
        raise RuntimeError(f"LAPACK geqrt failed (info={info})")
    return (H[:, :kk], T[:, :kk]), np.triu(H[:kk])


def householder_rows(reflectors, F: np.ndarray, rows: int) -> np.ndarray:
    """Q F for the reflectors of :func:`householder_leaf` (Q: rows × h, F: h × r), LAPACK
    ``gemqrt`` on [F; 0] as :meth:`asymkern._backend.ArrayOps.householder_apply`.

    Parameters
    ----------
    reflectors : tuple or None
        From :func:`householder_leaf` (None: a chunk without rows).
    F : ndarray of shape (h, r)
        h = min(rows, k), the rows of the leaf's R.
    rows : int
        The chunk's row count.

    Returns
    -------
    ndarray of shape (rows, r)
    """
    from .._backend import NUMPY

    F = np.asarray(F, dtype=np.float64)
    if reflectors is None:
        return np.zeros((rows, F.shape[1]))
    Z = np.zeros((rows, F.shape[1]), order="F")
    Z[:F.shape[0]] = F
    return NUMPY.householder_apply(reflectors, Z)


def qr_node(a, b) -> tuple[np.ndarray, np.ndarray]:
    """(Q, R) of [R_a; R_b], the R factors being item 1 of the children ``a`` and ``b`` (a
    combine step of the tree).

    Parameters
    ----------
    a, b : tuple
        Leaves or nodes: ``a[1]``, ``b[1]`` are their R factors (h_a × k, h_b × k).

    Returns
    -------
    Q : ndarray of shape (h_a + h_b, h)
    R : ndarray of shape (h, k), h = min(h_a + h_b, k)
    """
    Q, R = np.linalg.qr(np.vstack([a[1], b[1]]))
    return Q, R


def node_rows(node, F: np.ndarray, i0: int, i1: int | None) -> np.ndarray:
    """Rows [i0, i1) of the node's Q (item 0) times F: a child's share of Q_node F.

    Parameters
    ----------
    node : tuple
        ``(Q, R)`` of a node or of a leaf that keeps its Q.
    F : ndarray of shape (h, r)
        The node's right factor (h the column count of its Q).
    i0, i1 : int or None
        The row range.

    Returns
    -------
    ndarray of shape (i1 - i0, r)
    """
    return node[0][i0:i1] @ F


def tsqr_tree(leaves: list, heights: list[int], k: int) -> tuple:
    """The TSQR tree over ``leaves`` (delayed; item 1 of each is its R factor).

    Parameters
    ----------
    leaves : list of delayed
        One per row chunk, in order; each computes a tuple whose item 1 is R_c (and item 0, for
        :func:`tsqr_apply`'s default leaf step, Q_c).
    heights : list of int
        The row counts of the chunks (a leaf's R has min(n_c, k) rows).
    k : int
        The column count of the matrix.

    Returns
    -------
    tuple
        The root node ``(delayed (Q, R), rows of its R, children)``: ``children`` is None for a
        leaf (then ``(delayed leaf, rows, None, index)``) and the pair of child nodes otherwise.
        ``root[0]`` computes the root's ``(Q, R)`` (R: the R factor of the whole matrix).
    """
    nodes: list[tuple] = [(leaf, min(int(h), k), None, i)
                          for i, (leaf, h) in enumerate(zip(leaves, heights))]
    while len(nodes) > 1:
        nxt: list[tuple] = []
        for i in range(0, len(nodes), 2):
            if i + 1 < len(nodes):
                a, b = nodes[i], nodes[i + 1]
                nxt.append((task(qr_node, a[0], b[0]), min(a[1] + b[1], k), (a, b)))
            else:
                nxt.append(nodes[i])
        nodes = nxt
    return nodes[0]


def tsqr_apply(root: tuple, F, leaf_rows: Callable[[int, Any, Any], Any] | None = None
               ) -> list:
    """Delayed row blocks (one per leaf, in order) of Q F for the tree ``root`` of
    :func:`tsqr_tree`.

    Parameters
    ----------
    root : tuple
        The root node of :func:`tsqr_tree`.
    F : delayed or ndarray of shape (h, r)
        The root's right factor, h the row count of the root's R.
    leaf_rows : callable, optional
        ``leaf_rows(i, leaf, F_i)`` → delayed Q_i F_i of leaf i (F_i: its share, h_i × r).
        Default: ``leaf[0] @ F_i``, the Q the leaf kept.

    Returns
    -------
    list of delayed
        Q F, row chunk by row chunk (n_i × r each).
    """
    rows: list = []

    def descend(node, Fn):
        if node[2] is None:  # a leaf
            rows.append(task(node_rows, node[0], Fn, 0, None) if leaf_rows is None
                        else leaf_rows(node[3], node[0], Fn))
            return
        a, b = node[2]
        descend(a, task(node_rows, node[0], Fn, 0, a[1]))
        descend(b, task(node_rows, node[0], Fn, a[1], a[1] + b[1]))

    descend(root, F)
    return rows


def _share(i: int, leaf, F):
    """A leaf's step of :func:`tsqr_leaf_factors`: its share F_i itself."""
    return F


def tsqr_leaf_factors(root: tuple, F) -> list:
    """Each leaf's share F_i of Q F (delayed, h_i × r, in leaf order): F pushed down through
    the internal nodes of the tree ``root`` of :func:`tsqr_tree`, the leaves' Q left out.

    Q F is block-diagonal by leaves below them: its rows of leaf i are Q_i F_i. The shares are
    small (the leaves' R rows h_i = min(n_i, k) by r), so they can be computed once, with the
    tree's node factors, and kept, and Q F formed later by one map over the chunks.

    Parameters
    ----------
    root : tuple
        The root node of :func:`tsqr_tree`.
    F : delayed or ndarray of shape (h, r)
        The root's right factor, h the row count of the root's R.

    Returns
    -------
    list of delayed or ndarray
        F_i of each leaf (F itself when the root is a leaf).
    """
    return tsqr_apply(root, F, _share)


__all__ = ["householder_leaf", "householder_rows", "node_rows", "qr_leaf", "qr_node",
           "tsqr_apply", "tsqr_leaf_factors", "tsqr_tree"]
