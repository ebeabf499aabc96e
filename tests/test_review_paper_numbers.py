"""The papers' own numbers that the ``asymkern reproduce`` reports print in their "paper" columns.

Every constant below was read digit by digit from the paper texts (Tao et al., 2024; He et al.,
2023; Mollenhauer et al., 2020). The printed tables must show them as the papers print them:
the reports' 4-significant-digit number format turned Tao et al.'s 44.914 into 44.91, 53.297
into 53.3, 49.0867 into 49.09 and 15.0002 into 15, so those columns are now text.
"""

import os
import re
from pathlib import Path

import numpy as np
import pytest

from asymkern.experiments import askls, ksvd_biclustering, ksvd_general, ksvd_graphs, operators
from asymkern.experiments import nystrom_solvers as ns
from asymkern.testing import requires_data

# Tao et al. (2024) Table 4 (ε = 1e-1) and Table 6 (ε = 1e-1 and 1e-2), as printed:
# Task, TSVD, RSVD, Sym. Nys., Ours, Speedup (the ε = 1e-1 half of Table 6 repeats Table 4)
TABLE_4_6_TEXT = {
    ("cora", 0.1): ("0.841", "0.274", "0.673", "0.160", "1.71"),
    ("citeseer", 0.1): ("0.568", "0.290", "0.214", "0.136", "2.14"),
    ("pubmed", 0.1): ("9.223", "4.577", "44.914", "0.141", "32.51"),
    ("cora", 0.01): ("0.841", "0.313", "0.681", "0.225", "1.39"),
    ("citeseer", 0.01): ("0.568", "0.396", "0.425", "0.239", "1.66"),
    ("pubmed", 0.01): ("9.223", "5.209", "53.297", "0.590", "8.83"),
}
# Tao et al. (2024) Table 5 (App. B.1): Nonlinear+SVD row, KSVD row, as printed
TABLE_5_TEXT = {
    "pima": ("0.6296", "0.7607"), "ionosphere": ("0.7292", "0.8374"),
    "liver": ("0.7032", "0.7100"), "cholesterol": ("49.0867", "49.1592"),
    "yacht": ("15.0002", "14.6489"), "casp": ("5.9517", "5.4583"),
}


def test_table_4_6_cells_are_the_printed_values():
    for (name, eps), text in TABLE_4_6_TEXT.items():
        cells = ns.paper_cells(name, eps)
        assert tuple(cells[c] for c in ns.PAPER_COLUMNS) == text, (name, eps)
        assert ns.PAPER[(name, eps)] == tuple(float(t) for t in text)
    assert all(np.isnan(v) for v in ns.paper_cells("cora", 0.5).values())


def test_table_5_constants():
    for name, text in TABLE_5_TEXT.items():
        assert ksvd_general.PAPER_TABLE5[name] == tuple(float(t) for t in text), name


@requires_data("pubmed/linqs/Pubmed-Diabetes.DIRECTED.cites.tab.gz")
def test_nystrom_report_prints_table_4_6_digits():
    rep = ns.run(quick=True, datasets=["pubmed"], parts=("table",))
    rows = rep.tables["Time (s) on the precomputed kernel, η as printed (w_i = λ_i)"]
    cols = ("paper TSVD", "paper RSVD", "paper Sym.", "paper Ours", "paper speedup")
    assert [r["ε"] for r in rows] == [0.1, 0.01]
    for row in rows:
        assert tuple(row[c] for c in cols) == TABLE_4_6_TEXT[("pubmed", row["ε"])]
    md = rep.to_markdown()
    assert "| 9.223 | 4.577 | 44.914 | 0.141 | 32.51 |" in md
    assert "| 9.223 | 5.209 | 53.297 | 0.590 | 8.83 |" in md


@requires_data("uci/cholesterol/cholesterol.arff")
@requires_data("uci/yacht/yacht_hydrodynamics.data")
def test_ksvd_general_report_prints_table_5_digits():
    rep = ksvd_general.run(quick=True, datasets=("cholesterol", "yacht"), columns=("RBF a1",),
                           with_a3=False)
    t5 = rep.tables["Table 5 (ablation)"]
    assert [(r["paper Nonlinear+SVD"], r["paper KSVD"]) for r in t5] == [
        TABLE_5_TEXT["cholesterol"], TABLE_5_TEXT["yacht"]]
    md = rep.to_markdown()
    assert "49.0867" in md and "49.1592" in md and "15.0002" in md and "14.6489" in md


# --------------------------------------------------- every other constant against the paper text
# the paper texts sit beside the data directory (shared/papers next to shared/data)
PAPERS = (Path(os.environ["ASYMKERN_DATA"]).parent / "papers" if os.environ.get("ASYMKERN_DATA")
          else Path(__file__).resolve().parents[2] / "shared" / "papers")
TAO = PAPERS / "000_dd7b3dcf077e3946.txt"
HE = PAPERS / "001_5479aa78ec2c2e70.txt"
MOLL = PAPERS / "002_b252d67b4b9f3aae.txt"
needs_papers = pytest.mark.skipif(not (TAO.exists() and HE.exists() and MOLL.exists()),
                                  reason="paper texts not found beside the checkout")
_NUM = re.compile(r"-?\d+\.\d+(?:±\d+(?:\.\d+)?)?")


def _block(lines, head, n):
    i = next(k for k, ln in enumerate(lines) if ln.startswith(head))
    return lines[i:i + n]


def _micro_macro(block, names):
    """{dataset: (numbers of the Micro line, numbers of the Macro line)} of a two-line table."""
    out, cur = {}, None
    for ln in block:
        m = re.match(rf"({'|'.join(names)}) Micro (.*)", ln)
        if m:
            cur, micro = m.group(1).lower(), _NUM.findall(m.group(2))
        elif ln.startswith("Macro ") and cur:
            out[cur] = (micro, _NUM.findall(ln[6:]))
            cur = None
    return out


@needs_papers
def test_he_tables_against_text():
    lines = HE.read_text().splitlines()
    # Table III: graph columns SVM, LS-SVM, AsK-LS are the 3rd-5th numbers of each line
    t3 = _micro_macro(_block(lines, "TABLE III", 14), ["Cora", "Citeseer", "Pubmed"])
    for ds, methods in askls.PAPER_TABLE3.items():
        for col, meth in ((2, "SVM (graph)"), (3, "LS-SVM (graph)"), (4, "AsK-LS")):
            assert methods[meth] == (t3[ds][0][col], t3[ds][1][col]), (ds, meth)
    for ln in _block(lines, "TABLE IV", 11)[3:]:  # Table IV: RBF, SNE, T
        name, *vals = ln.split()
        assert askls.PAPER_TABLE4[name.replace("monks", "monks-")] == tuple(vals[:3])
    t1 = _block(lines, "TABLE I:", 4)  # Table I: SVM, LS-SVM, AsK-LS
    micro, macro = t1[2].split()[1:], t1[3].split()[1:]
    for j, meth in enumerate(("SVM", "LS-SVM", "AsK-LS")):
        assert askls.PAPER_TABLE1[meth] == (micro[j], macro[j])


@needs_papers
def test_tao_tables_against_text():
    lines = TAO.read_text().splitlines()
    # Table 1: per dataset, Micro line = 7 F1 then 7 ℓ1, Macro line = 7 F1 then 7 ℓ2
    t1 = _micro_macro(_block(lines, "Table 1:", 14), ["Cora", "Citeseer", "Pubmed"])
    for ds, methods in ksvd_graphs.PAPER_TABLE1.items():
        (mi, ma) = t1[ds]
        for j, meth in enumerate(("PCA", "KPCA", "SVD", "KSVD")):
            want = tuple(float(v) for v in (mi[j], ma[j], mi[7 + j], ma[7 + j]))
            assert methods[meth] == want, (ds, meth)
    for ln in _block(lines, "Table 2:", 8)[3:]:  # Table 2: NMI, Coh per ACM, DBLP, Pubmed, Wiki
        meth, *vals = ln.split()
        for j, ds in enumerate(("acm", "dblp", "pubmed", "wiki")):
            want = (float(vals[2 * j]), float(vals[2 * j + 1]))
            assert ksvd_biclustering.PAPER_TABLE2[meth][ds] == want, (meth, ds)
    # Table 3: KPCA, KPCA learnable C, KSVD RBF a0-a3, KSVD SNE a0-a3
    names = dict(zip(("Diabetes", "Ionosphere", "Liver", "Cholesterol", "Yacht",
                      "Physicochemical-protein"), ksvd_general.DATASETS))
    for ln in _block(lines, "Table 3:", 9)[3:]:
        vals = [float(v) for v in _NUM.findall(ln)]
        ds = names[ln.split()[0]]
        assert ksvd_general.PAPER_TABLE3[ds] == tuple([vals[0]] + vals[2:]), ds
        assert ksvd_general.PAPER_KPCA_LEARNABLE[ds] == vals[1], ds
    t5 = _block(lines, "Table 5:", 5)
    for row, col in ((t5[3], 0), (t5[4], 1)):
        for ds, v in zip(ksvd_general.DATASETS, _NUM.findall(row)):
            assert TABLE_5_TEXT[ds][col] == v, ds
    for ln in _block(lines, "Table 6:", 6)[3:]:
        vals = _NUM.findall(ln)
        ds = ln.split()[0].lower()
        assert TABLE_4_6_TEXT[(ds, 0.1)] == tuple(vals[:5]), ds
        assert TABLE_4_6_TEXT[(ds, 0.01)] == tuple(vals[5:10]), ds


@needs_papers
def test_mollenhauer_values_against_text():
    text = MOLL.read_text()
    # Example 3.10, Figure 1 captions (a)-(f): λ_i of the m = 5000 run
    lam = [float(m.group(1)) for m in re.finditer(r"\([a-f]\) λ\d=(\d+\.\d+)", text)]
    assert operators.COV_PAPER == lam
    # Example 3.16 text: "σ1 ≈ 0.47 and σ2 ≈ 0.43" (the LaTeX source keeps the ≈)
    s316 = re.search(r"\\sigma_\{1\}\\approx (\d\.\d+).*?\\sigma_\{2\}\\approx (\d\.\d+)",
                     text)
    assert operators.CROSSCOV_PAPER == (float(s316.group(1)), float(s316.group(2)))
    # Example 4.2, Figure 3 captions (a)-(c)
    sig = [float(m.group(1)) for m in re.finditer(r"\([a-c]\) σ\d=(\d+\.\d+)", text)]
    assert operators.GYRE_PAPER == tuple(sig)
