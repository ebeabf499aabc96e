"""Round 17: report sentences are built from the run's own numbers, not fixed conclusions."""

from __future__ import annotations

import math

import numpy as np

from asymkern.experiments import askls
from asymkern.experiments import ksvd_graphs as kg
from asymkern.experiments import operators as ops


def _rows(c_kpca: float, c_ksvd: float, dataset: str = "cora") -> list[dict]:
    rows = []
    for method, c in (("PCA", math.nan), ("KPCA", c_kpca), ("SVD", math.nan), ("KSVD", c_ksvd)):
        rows.append({"dataset": dataset, "orientation": "cites", "method": method, "r": 1000,
                     "bw/γ0": c})
    return rows


def test_ksvd_graphs_full_protocol_states_this_runs_bandwidths_not_a_fixed_cv_outcome():
    over = {"r": None, "grid": (1.0, 2.0), "solver": None, "trials": None, "folds": None}
    text = kg.table1_protocol(_rows(1.0, 2.0), quick=False, datasets=("cora",), over=over)
    assert "cora (cites) KPCA c = 1" in text and "cora (cites) KSVD c = 2" in text
    assert "c = 4 for both kernels" not in text  # the old fixed sentence
    assert "grid = (1.0, 2.0)" in text  # the override is stated
    # KPCA's scaled features are flagged as a deviation from App. C.1
    assert "U Λ^½" in text and "top 1000 eigenvectors" in text
    other = kg.table1_protocol(_rows(8.0, 4.0), quick=False, datasets=("cora",))
    assert "KPCA c = 8" in other and "KSVD c = 4" in other


def test_ksvd_graphs_cv_choice_text_skips_methods_without_bandwidth():
    assert kg.cv_choice_text(_rows(math.nan, math.nan)) == ""
    assert "PCA c" not in kg.cv_choice_text(_rows(1.0, 2.0)).replace("KPCA c", "")


def test_gyre_centring_note_follows_the_values():
    paper = np.array(ops.GYRE_PAPER)
    ours = paper + [-0.001, 0.002, -0.012]
    close = ops.gyre_centring_note(ours, [0.999, *ours], 1e-4, defaults=True)
    assert "0.989, 0.982, 0.928" in close
    assert "centred values are the closer" in close
    assert "With the default options" in close and ops.GYRE_FIGURE_DATE in close
    far = ops.gyre_centring_note([0.89, 0.77, 0.53], [0.93, 0.89, 0.75, 0.53], 1e-2)
    assert "0.890, 0.770, 0.530" in far
    assert "to two decimals" not in far and "are the closer" not in far
    assert "Neither matches" in far
    assert "v_1 separates" not in far  # the figure reading is for the default run only
    # options other than the defaults never print the figure reading
    assert "v_1 separates" not in ops.gyre_centring_note(paper, [1.0, *paper], 1e-4,
                                                         quick=True, defaults=True)


def test_askls_reports_label_their_standard_deviation():
    assert "ddof = 1" in askls.STD_NOTE
    assert askls._ms([1.0, 2.0, 3.0]) == "2.000±1.000"  # the sample std (ddof = 1)
