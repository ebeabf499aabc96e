"""Graph orientation option of the citation-graph loaders (paper 000 Table 1, Tables 4/6)."""

import numpy as np
import pytest

from asymkern.datasets.graphs import ORIENTATIONS, check_orientation, load_citation_graph
from asymkern.experiments._graph_data import graph_problem
from asymkern.testing import requires_data


def test_check_orientation():
    assert ORIENTATIONS == ("cites", "cited_by")
    for o in ORIENTATIONS:
        assert check_orientation(o) == o
    with pytest.raises(ValueError, match="orientation"):
        check_orientation("transposed")


@requires_data("cora/cora.npz")
def test_orientations_load_the_same_edges_transposed():
    a = load_citation_graph("cora")
    b = load_citation_graph("cora", orientation="cited_by")
    assert a.orientation == "cites" and b.orientation == "cited_by"
    assert (a.adjacency != b.adjacency.T).nnz == 0
    assert a.adjacency.nnz == b.adjacency.nnz
    np.testing.assert_array_equal(a.labels, b.labels)
    # default unchanged: out-degree of 'cites' is the in-degree of 'cited_by'
    np.testing.assert_array_equal(np.asarray(a.adjacency.sum(1)).ravel(),
                                  np.asarray(b.adjacency.sum(0)).ravel())
    with pytest.raises(ValueError, match="orientation"):
        load_citation_graph("cora", orientation="up")


@requires_data("cora/cora.npz")
def test_graph_problem_orientation():
    A1, X1, Z1, g1, y1 = graph_problem("cora", n_sub=300)
    A2, X2, Z2, g2, y2 = graph_problem("cora", n_sub=300, orientation="cited_by")
    np.testing.assert_array_equal(y1, y2)
    assert A1.shape == A2.shape and g1 > 0 and g2 > 0
    # both are D⁻¹(A + I) of transposed adjacencies: the same nonzero pattern, transposed
    assert ((A1 != 0).astype(int) != (A2 != 0).astype(int).T).nnz == 0
