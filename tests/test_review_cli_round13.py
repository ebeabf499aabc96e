"""Review round 13 of the command line: list options in Python spelling, edge-list headers, a
missing matplotlib, quick reports that state the settings used, and cleanup after a failed or
terminated run."""

from __future__ import annotations

import os
import re
import shlex
import signal
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from asymkern import cli
from asymkern.cli import build_parser, main, read_graph_or_matrix
from asymkern.experiments import (
    askls,
    ksvd_general,
    ksvd_graphs,
    nystrom_f1,
    nystrom_solvers,
    params,
)
from asymkern.experiments import operators as operators_module
from asymkern.experiments.params import parse_experiment_params

ROOT = Path(__file__).resolve().parents[1]


def _one_error(capsys, *needles):
    # one error line; warnings of third-party packages (pyparsing's deprecations under the
    # minimum versions) may come before it, each on its own "asymkern: warning:" line
    lines = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(lines)
    assert all(line.startswith("asymkern: warning:") for line in lines[:-1]), lines
    err = lines[-1]
    assert err.startswith("asymkern: error:")
    for needle in needles:
        assert needle in err, (needle, err)
    return err


# ------------------------------------------------------------------- 1, 2: list options
@pytest.mark.parametrize("name,item,expected", [
    ("nystrom-solvers", "f1_mults=(4.0,)", {"f1_mults": (4.0,)}),
    ("ksvd-graphs", "grid=(2.0,)", {"grid": (2.0,)}),
    ("ksvd-graphs", "grid=[1.0, 2.0,]", {"grid": (1.0, 2.0)}),
    ("ksvd-graphs", "grid=(1.0,2.0,4.0,8.0)", {"grid": (1.0, 2.0, 4.0, 8.0)}),
    ("ksvd-graphs", "datasets=(cora,)", {"datasets": ("cora",)}),
])
def test_list_option_in_python_tuple_spelling(name, item, expected):
    assert parse_experiment_params(name, [item]) == expected


@pytest.mark.parametrize("value", ["()", "(,)", "(2.0,,)", "2.0,", ",2.0", "(,2.0)", "2.0,,3"])
def test_list_option_still_refuses_empty_entries(capsys, value):
    assert main(["reproduce", "ksvd-graphs", "-p", f"grid={value}"]) == 2
    _one_error(capsys, "--param grid", "an empty entry")


@pytest.mark.parametrize("item,expected", [
    ("columns=KPCA (RBF)", ("KPCA (RBF)",)),
    ("columns=KPCA (RBF),RBF a0", ("KPCA (RBF)", "RBF a0")),
    ("columns=(KPCA (RBF), RBF a0)", ("KPCA (RBF)", "RBF a0")),
    ("columns=[KPCA (RBF),]", ("KPCA (RBF)",)),
])
def test_column_name_with_its_own_bracket(item, expected):
    assert parse_experiment_params("ksvd-general", [item]) == {"columns": expected}


@pytest.mark.parametrize("raw,inner", [
    ("(1,2)", "1,2"), ("[a]", "a"), ("KPCA (RBF)", "KPCA (RBF)"), ("(a),(b)", "(a),(b)"),
    ("((a)", "((a)"), ("(a))", "(a))"), ("(a]", "(a]"), ("((a),(b))", "(a),(b)"), ("()", ""),
])
def test_unbracket_strips_one_enclosing_pair_only(raw, inner):
    assert params._unbracket(raw) == inner


def _documented_commands():
    """Every ``asymkern reproduce NAME ...`` the docs and README quote (not placeholders)."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        spans = re.findall(r"`(asymkern reproduce [^`]*)`", text)
        spans += [line.split(" #")[0] for line in text.splitlines()
                  if line.startswith("asymkern reproduce ")]
        for span in spans:
            argv = shlex.split(" ".join(span.split()))[1:]
            if "|" in argv or "NAME" in argv or len(argv) < 2 or argv[1].startswith("-"):
                continue
            found.append((path.name, argv))
    return found


def test_documented_reproduce_commands_parse():
    commands = _documented_commands()
    assert any("f1_mults=(4.0,)" in argv for _, argv in commands)  # the commands of defect 1
    assert any("grid=(2.0,)" in argv for _, argv in commands)
    parser = build_parser()
    for where, argv in commands:
        args = parser.parse_args(argv)
        parse_experiment_params(args.name, args.param)  # raises on a refused option
        assert where


# --------------------------------------------------------------------- 3: edge-list header
@pytest.mark.parametrize("content,ids,nnz,header", [
    # a header above integer edges: skipped, and the ids stay integers
    ("citing_paper,cited_paper\n1,2\n2,3\n3,1\n1,3\n", [1, 2, 3], 4, True),
    ("node_a\tnode_b\n10\t11\n11\t12\n", [10, 11, 12], 2, True),
    ("source,target,weight\n1,2,0.5\n2,1,2\n", [1, 2], 2, True),
    # column names of HEADER_WORDS above string ids that are not those names
    ("source,target\nalice,bob\nbob,carol\n", ["alice", "bob", "carol"], 2, True),
    # 'u,v' is an edge when u and v are node ids of the other lines
    ("u,v\nu,w\nw,v\nv,u\n", ["u", "v", "w"], 4, False),
    ("from,to\nfrom,x\nx,to\n", ["from", "to", "x"], 3, False),
    # a first line with a number is data
    ("1,2\n2,3\n", [1, 2, 3], 2, False),
    ("a,1\n1,2\n", ["a", "1", "2"], 2, False),
    ("x,y\nx,z\n", ["x", "y", "z"], 2, False),
])
def test_edge_list_header_rule(tmp_path, content, ids, nnz, header):
    p = tmp_path / "edges.csv"
    p.write_text(content)
    notes: list[str] = []
    A, got = read_graph_or_matrix(p, notes=notes)
    assert got.tolist() == ids and A.nnz == nnz
    if all(isinstance(i, int) for i in ids):
        assert got.dtype == np.int64  # a header never turns integer ids into strings
    assert bool(notes) == header
    if header:
        assert "skipped as a header" in notes[0] and repr(content.split("\n")[0]) in notes[0]


def test_header_above_integer_edges_keeps_integer_ids(tmp_path):
    p = tmp_path / "cites.csv"
    p.write_text("citing_paper,cited_paper\n1,2\n2,3\n3,1\n")
    A, ids = read_graph_or_matrix(p)
    assert ids.dtype == np.int64 and ids.tolist() == [1, 2, 3] and A.shape == (3, 3)


def test_edge_list_first_edge_u_v_is_kept(tmp_path):
    p = tmp_path / "edges.csv"
    p.write_text("u,v\nu,w\nw,v\n")
    A, ids = read_graph_or_matrix(p)
    index = {v: i for i, v in enumerate(ids.tolist())}
    assert A[index["u"], index["v"]] == 1.0


def test_header_only_file_still_has_no_edges(tmp_path, capsys):
    p = tmp_path / "h.csv"
    p.write_text("source,target\n")
    assert main(["embed", str(p), "--out", str(tmp_path / "e.npz")]) == 2
    _one_error(capsys, "contains no edges")


def test_embed_help_states_the_header_rule(capsys):
    with pytest.raises(SystemExit):
        main(["embed", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "skipped as a header when none of its fields is a number" in text
    assert "otherwise it is an edge" in text


# ------------------------------------------------------------------- 4: matplotlib missing
@pytest.fixture
def no_matplotlib(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def test_missing_matplotlib_refused_before_the_run(tmp_path, capsys, monkeypatch, no_matplotlib):
    ran = []

    def fake_run(quick=False, data_dir=None, out=None, seed=0):  # never called
        ran.append(1)
        raise AssertionError("the experiment ran")

    fake_run.__module__, fake_run.__name__ = "asymkern.experiments.operators", "run_crosscov"
    monkeypatch.setattr(operators_module, "run_crosscov", fake_run)
    out = tmp_path / "new" / "out"
    assert main(["reproduce", "operators-crosscov", "--quick", "--out", str(out)]) == 2
    _one_error(capsys, "--out", "matplotlib", "asymkern[plot]")
    assert not ran and not (tmp_path / "new").exists()


def test_which_runs_write_figures():
    from asymkern.experiments import get_experiment

    solvers = get_experiment("nystrom-solvers")
    assert not cli._writes_figures("askls-uci", get_experiment("askls-uci"), {})
    assert not cli._writes_figures("nystrom-solvers", solvers, {"parts": ("table",)})
    assert cli._writes_figures("nystrom-solvers", solvers, {"parts": ("table", "f1")})
    assert cli._writes_figures("nystrom-solvers", solvers, {})
    assert cli._writes_figures("operators-gyre", get_experiment("operators-gyre"), {})


def test_table_only_run_needs_no_matplotlib(tmp_path, capsys, monkeypatch, no_matplotlib):
    from asymkern.experiments import Report

    def fake_run(quick=False, data_dir=None, out=None, seed=0):
        return Report("fake", {"t": [{"a": 1}]}, quick=quick)

    fake_run.__module__, fake_run.__name__ = "asymkern.experiments.askls", "run_kl"
    monkeypatch.setattr(askls, "run_kl", fake_run)
    assert main(["reproduce", "askls-kl", "--quick", "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "askls-kl.md").exists()
    assert [p.name for p in (tmp_path / "o").iterdir()] == ["askls-kl.md"]


# ----------------------------------------------------------- 5: quick reports state settings
def _tiny_uci(name, data_dir):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    return X, np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0)


def test_askls_uci_quick_text_states_datasets_and_splits(monkeypatch):
    monkeypatch.setattr(askls, "_uci_data", _tiny_uci)
    rep = askls.run_uci(quick=True, datasets=("monks-1",), n_repeats=2)
    assert "monks-1, 2 splits" in rep.protocol and "heart" not in rep.protocol
    rep = askls.run_uci(quick=True, datasets=("pima", "sonar"))
    assert "pima and sonar, 1 split," in rep.protocol


def _tiny_graph(name, data_dir):
    rng = np.random.default_rng(1)
    n = 45
    labels = np.arange(n) % 3
    A = (rng.random((n, n)) < 0.15).astype(float) + np.eye(n)
    A[labels[:, None] == labels[None, :]] += 0.5
    G = A / A.sum(axis=1, keepdims=True)
    return sp.csr_matrix(G), labels, "tiny test graph"


def test_askls_nodes_quick_text_states_the_datasets(monkeypatch):
    monkeypatch.setattr(askls, "_graph_matrix", _tiny_graph)
    rep = askls.run_nodes(quick=True, datasets=("citeseer",))
    assert "quick mode: citeseer, 1 repeat." in rep.protocol and "Cora" not in rep.protocol
    rep = askls.run_nodes(quick=True, datasets=("citeseer",), n_repeats=3)
    assert "quick mode: citeseer, 3 repeats (n_repeats)." in rep.protocol
    # and three splits ran (quick mode ran one before, whatever n_repeats said)
    assert {row["repeats"] for row in rep.tables["Micro/Macro-F1"]} == {3}


def _fake_general(name, quick, data_dir, seed, **opts):
    cols = opts["columns"]
    return {"name": name, "task": "regression", "n": 10, "m": 2,
            "scores": {c: [1.0] if c in cols else [] for c in ksvd_general.ALL_COLUMNS},
            "table5": {"Nonlinear+SVD": [1.0], "KSVD (poly)": [1.0]},
            "chosen": {c: [] for c in ksvd_general.ALL_COLUMNS}, "seconds": 0.0,
            "have_torch": True}


def test_ksvd_general_quick_text_states_a3_and_table5(monkeypatch):
    monkeypatch.setattr(ksvd_general, "run_dataset", _fake_general)
    text = ksvd_general.run(quick=True, with_a3=False).protocol
    assert "no a3 column (with_a3 = false)" in text and "trained for" not in text
    text = ksvd_general.run(quick=True, columns=("RBF a1",), with_table5=False).protocol
    assert "no a3 column selected" in text and "no Table 5" in text
    text = ksvd_general.run(quick=True).protocol
    assert "a3 (RBF a3, SNE a3) trained for 100 steps" in text and "Table 5 computed" in text


def test_nystrom_solvers_quick_text_follows_parts_and_f1_options(monkeypatch):
    monkeypatch.setattr(nystrom_f1, "run_f1_study", lambda *a, **k: ([], []))
    text = nystrom_solvers.run(quick=True, parts=("f1",), f1_mults=(4.0,), f1_r_max=8).protocol
    assert "r ≤ 8" in text and "γ/γ₀ = 4 (fixed)" in text
    assert "Figure 4" not in text and "timing repeats" not in text
    text = nystrom_solvers.run(quick=True, parts=("f1",)).protocol
    assert "r ≤ 16" in text and "γ/γ₀ ∈ {1, 2} by 3-fold CV" in text


def test_ksvd_graphs_says_when_r_is_capped(monkeypatch):
    def fake(name, quick, data_dir, seed, train_size, over, orientation):
        return [{"dataset": name, "r": 498}], {}

    monkeypatch.setattr(ksvd_graphs, "run_dataset", fake)
    text = ksvd_graphs.run(quick=True, r=600).protocol
    assert "requested r = 600" in text and "cora (r = 498 used)" in text
    assert "r = 498" not in ksvd_graphs.run(quick=True, r=100).protocol


def test_cli_report_records_the_param_options(tmp_path, capsys, monkeypatch):
    from asymkern.experiments import Report

    def fake_run(quick=False, data_dir=None, out=None, seed=0, regularization=1e-4,
                 center=True):
        return Report("fake", {"t": [{"a": 1}]}, protocol="Settings.", quick=quick)

    fake_run.__module__, fake_run.__name__ = "asymkern.experiments.operators", "run_gyre"
    monkeypatch.setattr(operators_module, "run_gyre", fake_run)
    assert main(["reproduce", "operators-gyre", "--quick", "-p", "center=false",
                 "-p", "regularization=0.01"]) == 0
    out = capsys.readouterr().out
    assert "Settings. Options of this run (-p): center=false, regularization=0.01." in out


# ------------------------------------------------------------- 6: cleanup, SIGTERM, --seed
def test_failed_run_removes_every_folder_it_created(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    existing = tmp_path / "existing"
    existing.mkdir()
    code = main(["reproduce", "ksvd-graphs", "--quick", "--data-dir", str(empty),
                 "--out", str(existing / "a" / "b")])
    assert code == 2
    _one_error(capsys, "not found")
    assert list(existing.iterdir()) == []


def test_remove_empty_keeps_folders_with_other_files(tmp_path):
    a = tmp_path / "a"
    (a / "b").mkdir(parents=True)
    (a / "keep.txt").write_text("x")
    cli._remove_empty([a / "b", a])
    assert not (a / "b").exists() and (a / "keep.txt").exists()


class _TestKilled(BaseException):
    """Raised by the test's own SIGTERM handler when the CLI installs none."""


def test_sigterm_cleans_up_and_exits_143(tmp_path, capsys, monkeypatch):
    def fake_run(quick=False, data_dir=None, out=None, seed=0, regularization=1e-4,
                 center=True):
        (Path(out) / "figure.png").write_bytes(b"partial")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)  # the handler raises here
        raise AssertionError("SIGTERM was not delivered")

    fake_run.__module__, fake_run.__name__ = "asymkern.experiments.operators", "run_gyre"
    monkeypatch.setattr(operators_module, "run_gyre", fake_run)

    def fallback(signum, frame):
        raise _TestKilled()

    previous = signal.signal(signal.SIGTERM, fallback)
    try:
        out = tmp_path / "killed" / "out"
        code = main(["reproduce", "operators-gyre", "--quick", "--out", str(out)])
        assert signal.getsignal(signal.SIGTERM) is fallback  # restored on the way out
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert code == 143
    assert "asymkern: terminated" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no staging folder, no 'killed'


@pytest.mark.parametrize("command", [["demo"], ["reproduce", "askls-kl"]])
def test_seed_beyond_32_bits_names_seed(capsys, command):
    assert main([*command, "--seed", str(2**32)]) == 2
    _one_error(capsys, "--seed", "4294967295")


def test_seed_at_32_bit_limit_is_accepted():
    args = build_parser().parse_args(["reproduce", "askls-kl", "--seed", str(2**32 - 1)])
    assert args.seed == 2**32 - 1


def test_one_repeat_has_no_standard_deviation():
    """A sample standard deviation (ddof = 1) of one split is undefined: it printed as
    ±0.000, read as a measured spread of zero."""
    from asymkern.experiments.askls import _ms

    assert _ms([0.75]) == "0.750±n/a"
    assert _ms([0.7, 0.8]) == "0.750±0.071"


def test_list_with_a_name(capsys):
    """``reproduce --list NAME`` ignored NAME (an unknown one exited 0 with the full list)."""
    from asymkern.cli import main

    assert main(["reproduce", "--list", "nope"]) == 2
    assert "unknown experiment 'nope'" in capsys.readouterr().err
    assert main(["reproduce", "--list", "askls-kl"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("askls-kl ")


def test_no_command_is_an_error_line(capsys):
    """Plain ``asymkern`` printed the help to stdout with status 2 and no error line."""
    from asymkern.cli import main

    assert main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.rstrip().splitlines()[-1].startswith("asymkern: error: a command")


def test_wrong_format_names_what_the_file_looks_like(tmp_path, capsys):
    """``--format npz`` on a .npy file answered "'numpy.ndarray' object does not support the
    context manager protocol"; ``--format npy`` on a CSV spoke of pickled data. The error now
    says what the file's first bytes show and which --format reads it."""
    import numpy as np

    from asymkern.cli import main

    npy, csv = tmp_path / "m.npy", tmp_path / "e.csv"
    np.save(npy, np.eye(3))
    csv.write_text("0,1\n1,2\n")
    for path, fmt, hint in ((npy, "npz", "--format npy"), (csv, "npy", "looks like text"),
                            (npy, "mtx", "--format npy")):
        assert main(["embed", str(path), "--format", fmt, "--out",
                     str(tmp_path / "o.npz")]) == 2
        assert hint in capsys.readouterr().err
