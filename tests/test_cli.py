"""The asymkern command end to end: demo, embed, reproduce, and its error handling."""

import numpy as np
import pytest

from asymkern.cli import main
from asymkern.testing import requires_data


def test_demo_runs_and_prints_table(capsys, recwarn):
    assert main(["demo", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "KSVD sne (directed A)" in out and "breast cancer" in out
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]  # no degenerate fit
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| ")][1:]
    assert rows and all(r[-1].strip().endswith(" ms") for r in rows)  # one format per column
    assert "What each row is:" in out
    assert max(len(line) for line in out.splitlines() if not line.startswith("|")) <= 100


def _ring_edges(tmp_path, n=30):
    lines = ["source,target"] + [f"{i},{(i + 1) % n}" for i in range(n)]
    lines += [f"{i},{(i + 3) % n}" for i in range(0, n, 2)]
    p = tmp_path / "edges.csv"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_embed_edge_list_to_npz_and_csv(tmp_path, capsys):
    edges = _ring_edges(tmp_path)
    out = tmp_path / "emb.npz"
    assert main(["embed", str(edges), "--out", str(out), "-r", "4", "--bandwidth", "0.5"]) == 0
    with np.load(out) as d:
        assert d["left"].shape == (30, 4) and d["right"].shape == (30, 4)
        assert np.all(np.diff(d["singular_values"]) <= 0)
        assert d["row_ids"].dtype == np.int64 and list(d["row_ids"][:3]) == [0, 1, 2]
    out_csv = tmp_path / "emb.csv"
    assert main(["embed", str(edges), "--out", str(out_csv), "-r", "3"]) == 0
    lines = out_csv.read_text().splitlines()
    assert lines[0].split(",")[:2] == ["node", "left_0"] and len(lines) == 31


@pytest.mark.parametrize(
    "content,message",
    [("1,2\n3\n", "malformed edge line"), ("", "contains no edges"),
     ("source,target\n", "contains no edges"), ("1,2,abc\n3,4,5\n", "not a finite number")],
)
def test_embed_malformed_input_exits_2_and_writes_nothing(tmp_path, capsys, content, message):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    out = tmp_path / "emb.npz"
    code = main(["embed", str(p), "--out", str(out), "-r", "1"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("asymkern: error:") and message in err and "\n" not in err
    assert not out.exists() and not list(tmp_path.glob(".emb*"))


def test_embed_missing_file_and_bad_options(tmp_path, capsys):
    assert main(["embed", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "e.npz")]) == 2
    assert "does not exist" in capsys.readouterr().err
    edges = _ring_edges(tmp_path)
    assert main(["embed", str(edges), "--out", str(tmp_path / "e.txt")]) == 2
    assert main(["embed", str(edges), "--out", str(tmp_path / "e.npz"), "-r", "99"]) == 2
    assert "exceeds" in capsys.readouterr().err


def test_reproduce_list_and_unknown(capsys):
    assert main(["reproduce", "--list"]) == 0
    assert "nystrom-solvers" in capsys.readouterr().out
    assert main(["reproduce", "no-such-table"]) == 2
    assert "unknown experiment" in capsys.readouterr().err
    assert main(["reproduce", "ksvd-graphs", "--data-dir", "/no/such/dir"]) == 2


def test_help_everywhere(capsys):
    for argv in (["--help"], ["demo", "--help"], ["embed", "--help"], ["reproduce", "--help"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
    assert "usage" in capsys.readouterr().out


@requires_data("cora")
def test_reproduce_missing_dataset_file_is_reported(tmp_path, capsys):
    # an empty data directory: the experiment cannot find its files -> exit 2, nothing written
    empty = tmp_path / "data"
    empty.mkdir()
    out = tmp_path / "out"
    assert main(["reproduce", "ksvd-graphs", "--quick", "--data-dir", str(empty),
                 "--out", str(out)]) == 2
    assert "not found" in capsys.readouterr().err
    assert not list(out.glob("*.md"))


def test_reproduce_param_parsing():
    from asymkern.cli import InputError, parse_params
    from asymkern.experiments import get_experiment

    run = get_experiment("askls-uci")
    got = parse_params(["n_repeats=3", "datasets=spambase,monks-1", "rcond-tol=0"], run)
    assert got == {"n_repeats": 3, "datasets": ("spambase", "monks-1"), "rcond_tol": 0}
    assert parse_params(["datasets=['heart']"], run) == {"datasets": ("heart",)}
    assert parse_params(None, run) == {}
    with pytest.raises(InputError, match="KEY=VALUE"):
        parse_params(["n_repeats"], run)
    with pytest.raises(InputError, match="rcond_tol"):  # the message lists the options
        parse_params(["no_such=1"], run)
    with pytest.raises(InputError, match="not an option"):
        parse_params(["seed=3"], run)  # the common options have their own flags


def test_reproduce_param_errors_exit_2(capsys):
    assert main(["reproduce", "askls-kl", "--quick", "-p", "n_repeats=2"]) == 2
    assert "not an option" in capsys.readouterr().err


@requires_data("uci")
def test_reproduce_with_params_runs_selected_dataset(capsys):
    assert main(["reproduce", "askls-uci", "--quick", "-p", "datasets=heart",
                 "-p", "n_repeats=1", "-p", "rcond_tol=0"]) == 0
    out = capsys.readouterr().out
    assert "| heart |" in out and "| sonar |" not in out
    assert main(["reproduce", "askls-uci", "--quick", "-p", "datasets=nosuch"]) == 2
    assert "datasets expects a comma-separated list of heart" in capsys.readouterr().err


def test_embed_separator_direction_and_ids(tmp_path, capsys):
    # a tab-separated citation list with the cited paper first: --edge-direction dst-src reads
    # it as citing -> cited; the rows follow the ids, which come back as integers
    p = tmp_path / "cites.tsv"
    p.write_text("".join(f"{(i + 1) % 12}\t{i}\n" for i in range(12)) + "0\t5\n")
    fwd, rev = tmp_path / "fwd.npz", tmp_path / "rev.npz"
    assert main(["embed", str(p), "--out", str(fwd), "-r", "2", "--sep", "tab"]) == 0
    assert "column 1 = source" in capsys.readouterr().out
    assert main(["embed", str(p), "--out", str(rev), "-r", "2", "--sep", "tab",
                 "--edge-direction", "dst-src"]) == 0
    assert "column 1 = target" in capsys.readouterr().out
    with np.load(fwd) as a, np.load(rev) as b:
        assert a["row_ids"].tolist() == b["row_ids"].tolist() == list(range(12))
        # reversing every edge transposes the adjacency: left and right embeddings swap roles
        assert not np.allclose(np.abs(a["left"]), np.abs(b["left"]))
    # --sep comma refuses a tab-separated line instead of guessing
    assert main(["embed", str(p), "--out", str(fwd), "-r", "2", "--sep", "comma"]) == 2
    assert "malformed edge line" in capsys.readouterr().err


def test_embed_string_ids_keep_input_order(tmp_path):
    p = tmp_path / "named.csv"
    p.write_text("zeta,alpha\nalpha,mid\nmid,zeta\nmid,alpha\n")
    out = tmp_path / "e.npz"
    assert main(["embed", str(p), "--out", str(out), "-r", "1"]) == 0
    with np.load(out) as d:
        assert d["row_ids"].tolist() == ["zeta", "alpha", "mid"]
