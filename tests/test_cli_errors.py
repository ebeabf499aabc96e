"""Every user error of the asymkern command: exit status 2, exactly one stderr line
``asymkern: error: ...``, no traceback, nothing written (issue 12, "Results a user can trust")."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from asymkern.cli import main

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _edges(tmp_path, name="edges.csv", n=30):
    lines = [f"{i},{(i + 1) % n}" for i in range(n)] + [f"{i},{(i + 5) % n}" for i in range(n)]
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _assert_one_error(capsys, code, *needles):
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("asymkern: error:"), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def _run(argv):
    """main(argv) as the console script runs it: SystemExit becomes the exit status."""
    try:
        return main(argv)
    except SystemExit as exc:  # pragma: no cover - main returns instead of raising
        return exc.code


# ------------------------------------------------------------------------------ embed inputs
def _matrix_files(tmp_path):
    files = {}
    np.save(tmp_path / "vec.npy", np.ones(5))
    files["1-D .npy"] = ("vec.npy", "2-D")
    np.save(tmp_path / "scalar.npy", np.float64(2.0))
    files["0-D .npy"] = ("scalar.npy", "2-D")
    np.save(tmp_path / "text.npy", np.array([["a", "b"], ["c", "d"]]))
    files["string .npy"] = ("text.npy", "numeric")
    np.save(tmp_path / "empty.npy", np.zeros((0, 0)))
    files["empty .npy"] = ("empty.npy", "empty")
    np.save(tmp_path / "nan.npy", np.array([[1.0, np.nan], [0.0, 1.0]]))
    files["NaN .npy"] = ("nan.npy", "NaN or infinite")
    np.save(tmp_path / "inf.npy", np.array([[1.0, np.inf], [0.0, 1.0]]))
    files["inf .npy"] = ("inf.npy", "NaN or infinite")
    np.save(tmp_path / "neg.npy", np.array([[1.0, -1.0], [0.0, 1.0]]))
    files["negative .npy"] = ("neg.npy", "negative")
    sp.save_npz(tmp_path / "nan.npz", sp.csr_matrix(np.array([[1.0, np.nan], [0.0, 1.0]])))
    files["NaN sparse .npz"] = ("nan.npz", "NaN or infinite")
    sp.save_npz(tmp_path / "neg.npz", sp.csr_matrix(np.array([[1.0, -2.0], [0.0, 1.0]])))
    files["negative sparse .npz"] = ("neg.npz", "negative")
    scipy.io.mmwrite(tmp_path / "neg.mtx", sp.csr_matrix(np.array([[1.0, -2.0], [0.0, 1.0]])))
    files["negative .mtx"] = ("neg.mtx", "negative")
    scipy.io.mmwrite(tmp_path / "inf.mtx", np.array([[1.0, np.inf], [0.0, 1.0]]))
    files["inf .mtx"] = ("inf.mtx", "NaN or infinite")
    (tmp_path / "garbage.npy").write_bytes(b"not an npy file")
    files["corrupt .npy"] = ("garbage.npy", "cannot read")
    (tmp_path / "garbage.npz").write_bytes(b"PK\x03\x04 broken zip")
    files["corrupt .npz"] = ("garbage.npz", "cannot read")
    (tmp_path / "binary.csv").write_bytes(b"\x80\x81\xfe\xff\x00\x01")
    files["binary edge list"] = ("binary.csv", "UTF-8")
    (tmp_path / "empty.csv").write_text("")
    files["empty edge list"] = ("empty.csv", "no edges")
    (tmp_path / "header.csv").write_text("source,target\n")
    files["header-only edge list"] = ("header.csv", "no edges")
    (tmp_path / "negw.csv").write_text("0,1,2\n1,2,-1\n")
    files["negative edge weight"] = ("negw.csv", "negative")
    (tmp_path / "nanw.csv").write_text("0,1,nan\n1,2,1\n")
    files["NaN edge weight"] = ("nanw.csv", "finite")
    (tmp_path / "bad.csv").write_text("0,1\n1\n")
    files["malformed line"] = ("bad.csv", "malformed")
    return files


CASES = ["1-D .npy", "0-D .npy", "string .npy", "empty .npy", "NaN .npy", "inf .npy",
         "negative .npy", "NaN sparse .npz", "negative sparse .npz", "negative .mtx", "inf .mtx",
         "corrupt .npy", "corrupt .npz", "binary edge list", "empty edge list",
         "header-only edge list", "negative edge weight", "NaN edge weight", "malformed line"]


@pytest.mark.parametrize("case", CASES)
def test_embed_bad_input_file(tmp_path, capsys, case):
    name, needle = _matrix_files(tmp_path)[case]
    out = tmp_path / "out" / "emb.npz"
    code = _run(["embed", str(tmp_path / name), "--out", str(out), "-r", "1"])
    _assert_one_error(capsys, code, needle)
    assert not out.exists()


def test_embed_negative_entries_allowed_without_row_normalisation(tmp_path, capsys):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "data.npy", rng.standard_normal((20, 6)))
    out = tmp_path / "emb.npz"
    assert main(["embed", str(tmp_path / "data.npy"), "--out", str(out), "-r", "2",
                 "--normalize", "none", "--kernel", "rbf"]) == 0
    with np.load(out) as d:
        assert d["left"].shape == (20, 2) and np.all(np.isfinite(d["left"]))


def test_embed_directory_as_input(tmp_path, capsys):
    code = _run(["embed", str(tmp_path), "--out", str(tmp_path / "e.npz")])
    _assert_one_error(capsys, code, "is a directory")


@pytest.mark.parametrize("kind", ["folder", "file in path", "proc", "bad suffix"])
def test_embed_unwritable_output(tmp_path, capsys, kind):
    edges = _edges(tmp_path)
    if kind == "folder":
        out = tmp_path / "emb.npz"
        out.mkdir()
        needle = "is a folder"
    elif kind == "file in path":
        (tmp_path / "blocker").write_text("x")
        out = tmp_path / "blocker" / "sub" / "emb.npz"
        needle = "is a file"
    elif kind == "proc":
        out = Path("/proc/asymkern_test_dir/emb.npz")
        needle = "--out" if not os.access("/proc", os.W_OK) else "cannot"
        if not Path("/proc").is_dir():
            pytest.skip("no /proc")
        needle = ""
    else:
        out = tmp_path / "emb.txt"
        needle = ".npz or .csv"
    code = _run(["embed", str(edges), "--out", str(out), "-r", "1"])
    _assert_one_error(capsys, code, needle)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="needs POSIX permissions and a non-root user")
def test_embed_read_only_folder(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        code = _run(["embed", str(_edges(tmp_path)), "--out", str(ro / "e.npz"), "-r", "1"])
        _assert_one_error(capsys, code, "permission denied")
    finally:
        ro.chmod(0o755)


@pytest.mark.parametrize(
    "argv,needle",
    [(["-r", "x"], "--n-components"), (["-r", "0"], "positive integer"),
     (["-r", "2.5"], "positive integer"), (["--bandwidth", "-1"], "--bandwidth"),
     (["--bandwidth", "wide"], "'auto' or 'median'"), (["--gamma", "nan"], "--gamma"),
     (["--seed", "-3"], "--seed"), (["--solver", "magic"], "--solver"),
     (["--kernel", "nosuch"], "unknown --kernel"), (["-r", "99"], "exceeds"),
     (["--gamma", "1", "--bandwidth", "2"], "not both"),
     (["--kernel", "linear", "--bandwidth", "2"], "bandwidth")],
)
def test_embed_bad_options(tmp_path, capsys, argv, needle):
    edges = _edges(tmp_path)
    out = tmp_path / "e.npz"
    code = _run(["embed", str(edges), "--out", str(out)] + argv)
    _assert_one_error(capsys, code, needle)
    assert not out.exists()


def test_missing_arguments_one_line(capsys):
    _assert_one_error(capsys, _run(["embed"]), "required")
    _assert_one_error(capsys, _run(["nosuchcommand"]), "invalid choice")


# ------------------------------------------------------------------------ embed: good inputs
def test_edge_list_byte_order_mark_is_not_part_of_the_first_id(tmp_path, capsys):
    p = tmp_path / "bom.csv"
    p.write_bytes("\ufeffsource,target\n10,11\n11,12\n12,10\n".encode())
    out = tmp_path / "e.npz"
    assert main(["embed", str(p), "--out", str(out), "-r", "1"]) == 0
    with np.load(out) as d:
        assert list(d["row_ids"]) == [10, 11, 12]
    # a BOM right before a data line (no header) is also stripped
    p.write_bytes("\ufeff10,11\n11,12\n12,10\n".encode())
    assert main(["embed", str(p), "--out", str(out), "-r", "1"]) == 0
    with np.load(out) as d:
        assert list(d["row_ids"]) == [10, 11, 12]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("suffix", [".npz", ".csv"])
def test_output_file_gets_the_umask_permissions(tmp_path, capsys, suffix):
    edges = _edges(tmp_path)
    out = tmp_path / f"e{suffix}"
    old = os.umask(0o027)
    try:
        assert main(["embed", str(edges), "--out", str(out), "-r", "1"]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert not list(tmp_path.glob(".e*"))  # no temporary file left


def test_embed_help_shows_defaults(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["embed", "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for needle in ("(default: 16)", "(default: sne)", "(default: auto", "(default: row)",
                   "(default: pca)", "(default: 0)", "(default: True)", "(default: auto)"):
        assert needle in text, needle


# ---------------------------------------------------------------------------------- reproduce
@pytest.mark.parametrize(
    "param,needle",
    [("n_repeats=0", "n_repeats expects an integer >= 1"),
     ("n_repeats=-2", "n_repeats expects an integer >= 1"),
     ("n_repeats=abc", "n_repeats expects an integer"),
     ("n_repeats=1.5", "n_repeats expects an integer"),
     ("n_repeats=True", "n_repeats expects an integer"),
     ("rcond_tol=x", "rcond_tol expects a number"),
     ("rcond_tol=-1", "rcond_tol expects a number >= 0"),
     ("rcond_tol=nan", "rcond_tol expects a number"),
     ("datasets={1: 2}", "datasets expects"),
     ("n_repeats", "KEY=VALUE"), ("bogus=1", "not an option")],
)
def test_reproduce_bad_param(capsys, param, needle):
    code = _run(["reproduce", "askls-uci", "--quick", "-p", param])
    _assert_one_error(capsys, code, needle)


def test_parse_params_types():
    from asymkern.cli import parse_params
    from asymkern.experiments import get_experiment

    run = get_experiment("askls-uci")
    assert parse_params(["rcond_tol=0", "n_repeats=2"], run) == {"rcond_tol": 0.0,
                                                                  "n_repeats": 2}
    assert isinstance(parse_params(["rcond_tol=0"], run)["rcond_tol"], float)
    assert parse_params(["n_repeats=None"], run) == {}  # None keeps the default
    gyre = get_experiment("operators-gyre")
    assert parse_params(["center=false"], gyre) == {"center": False}
    graphs = get_experiment("ksvd-graphs")
    assert parse_params(["datasets=cora"], graphs) == {"datasets": ("cora",)}
    from asymkern.cli import InputError

    with pytest.raises(InputError, match="train_size expects a number > 0 and < 1"):
        parse_params(["train_size=1.5"], graphs)
    with pytest.raises(InputError, match="center expects true or false"):
        parse_params(["center=maybe"], gyre)


@pytest.mark.parametrize("kind", ["file", "file in path", "proc"])
def test_reproduce_bad_out_folder(tmp_path, capsys, kind):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    out = {"file": blocker, "file in path": blocker / "sub",
           "proc": Path("/proc/asymkern_test_out")}[kind]
    if kind == "proc" and not Path("/proc").is_dir():
        pytest.skip("no /proc")
    code = _run(["reproduce", "operators-covariance", "--quick", "--out", str(out)])
    _assert_one_error(capsys, code)


def test_reproduce_unknown_name_and_bad_seed(capsys):
    _assert_one_error(capsys, _run(["reproduce", "no-such-table"]), "unknown experiment")
    _assert_one_error(capsys, _run(["reproduce", "ksvd-graphs", "--seed", "x"]), "--seed")


def test_asymkern_data_missing_folder_is_an_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ASYMKERN_DATA", str(tmp_path / "missing"))
    code = _run(["reproduce", "ksvd-graphs", "--quick"])
    _assert_one_error(capsys, code, "ASYMKERN_DATA")
    from asymkern.datasets import DataNotFoundError, get_data_dir

    with pytest.raises(DataNotFoundError, match="ASYMKERN_DATA"):
        get_data_dir()
    monkeypatch.setenv("ASYMKERN_DATA", str(tmp_path))
    assert get_data_dir() == tmp_path.resolve()


def test_console_script_no_traceback(tmp_path):
    """The module run as a program: status 2 and one line for a 1-D .npy input."""
    np.save(tmp_path / "v.npy", np.ones(4))
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop("ASYMKERN_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "asymkern.cli", "embed", str(tmp_path / "v.npy"), "--out",
         str(tmp_path / "e.npz")], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("asymkern: error:")


@pytest.mark.parametrize(
    "argv,needle",
    [([], "square adjacency"), (["--normalize", "none", "--compat", "foo"], "compat"),
     (["--normalize", "none", "--out-csv"], "square input")],
)
def test_embed_rectangular_matrix_errors(tmp_path, capsys, argv, needle):
    np.save(tmp_path / "rect.npy", np.random.default_rng(0).random((10, 4)))
    out = tmp_path / "r.npz"
    if "--out-csv" in argv:
        argv = [a for a in argv if a != "--out-csv"]
        out = tmp_path / "r.csv"
    code = _run(["embed", str(tmp_path / "rect.npy"), "--out", str(out), "-r", "2"] + argv)
    _assert_one_error(capsys, code, needle)
    assert not out.exists()


def test_warnings_are_one_line(tmp_path, capsys):
    # rbf with a bandwidth 1e9 times the distances: the kernel matrix is all ones in float64
    edges = _edges(tmp_path)
    out = tmp_path / "e.npz"
    assert main(["embed", str(edges), "--out", str(out), "-r", "3", "--kernel", "rbf",
                 "--bandwidth", "1e9", "--no-center"]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("asymkern: warning: KernelSVD: only 1 of")
    assert "bandwidth" in lines[0]


def test_arpack_failure_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    from scipy.sparse.linalg import ArpackNoConvergence

    from asymkern.decomposition import KernelSVD

    def boom(self, *a, **k):
        raise ArpackNoConvergence("ARPACK error -1: No convergence", None, None)

    monkeypatch.setattr(KernelSVD, "fit", boom)
    code = _run(["embed", str(_edges(tmp_path)), "--out", str(tmp_path / "e.npz"), "-r", "2"])
    _assert_one_error(capsys, code, "did not converge", "--bandwidth")


# ------------------------------------------------- audit issue 29 item 5: every bad value refused
@pytest.mark.parametrize("name, param, needles", [
    ("nystrom-machines", "ratios=abc", ("ratios expects", "numbers")),
    ("nystrom-machines", "ratios=0.5,2", ("ratios expects", "<= 1")),
    ("ksvd-graphs", "grid=abc", ("grid expects", "numbers")),
    ("ksvd-graphs", "grid=-1", ("grid expects", "> 0")),
    ("ksvd-graphs", "datasets=cora,nope", ("datasets expects", "cora, citeseer, pubmed",
                                           "'nope'")),
    ("ksvd-graphs", "solver=foo", ("solver expects one of", "block_krylov")),
    ("ksvd-graphs", "folds=1", ("folds expects an integer >= 2",)),
    ("nystrom-solvers", "parts=foo", ("parts expects", "table, gamma, f1", "'foo'")),
    ("nystrom-solvers", "parts=table,", ("parts expects", "empty entry")),
    ("ksvd-general", "columns=nope", ("columns expects", "SNE a1c", "'nope'")),
    ("ksvd-biclustering", "compats=a9", ("compats expects", "a0, a1, a1c, a2")),
    ("operators-gyre", "regularization=0", ("regularization expects a number > 0",)),
    ("askls-nodes", "n_repeats=x", ("n_repeats expects an integer >= 1",)),
])
def test_reproduce_param_schema_refuses(capsys, name, param, needles):
    _assert_one_error(capsys, _run(["reproduce", name, "--quick", "-p", param]), *needles)


def test_reproduce_param_schema_values():
    from asymkern.cli import parse_params
    from asymkern.experiments import REGISTRY, get_experiment
    from asymkern.experiments.params import SCHEMAS

    gyre = get_experiment("operators-gyre")
    assert parse_params(["regularization=None"], gyre) == {}  # documented: keeps the default
    assert parse_params(["regularization=1e-3", "center=no"], gyre) == {
        "regularization": 1e-3, "center": False}
    assert parse_params(["ratios=0.02,0.1"], get_experiment("nystrom-machines")) == {
        "ratios": (0.02, 0.1)}
    assert parse_params(["methods=ksvd,svd,KSVD"], get_experiment("ksvd-biclustering")) == {
        "methods": ("KSVD", "SVD")}
    assert parse_params(["columns=rbf a1c"], get_experiment("ksvd-general")) == {
        "columns": ("RBF a1c",)}
    # every experiment has a schema, with exactly its keyword options
    import inspect

    common = {"quick", "data_dir", "out", "seed"}
    for name in REGISTRY:
        sig = inspect.signature(get_experiment(name)).parameters
        assert set(SCHEMAS[name]) == set(sig) - common, name


def test_reproduce_param_schema_matches_the_experiments():
    from asymkern.experiments import askls, ksvd_biclustering, ksvd_general
    from asymkern.experiments.params import SCHEMAS

    assert SCHEMAS["askls-uci"]["datasets"].choices == tuple(askls.PAPER_TABLE4)
    assert SCHEMAS["ksvd-general"]["columns"].choices == ksvd_general.ALL_COLUMNS
    assert SCHEMAS["ksvd-general"]["datasets"].choices == ksvd_general.DATASETS
    assert SCHEMAS["ksvd-biclustering"]["methods"].choices == ksvd_biclustering.METHODS


@pytest.mark.parametrize("normalize, peak", [("none", 1e300), ("row", 1e308)])
def test_embed_huge_entries_exit_2(tmp_path, capsys, normalize, peak):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "big.npy", rng.random((12, 12)) * peak)
    out = tmp_path / "e.npz"
    code = _run(["embed", str(tmp_path / "big.npy"), "--out", str(out), "-r", "2",
                 "--normalize", normalize])
    _assert_one_error(capsys, code, "too large for float64", "rescale")
    assert not out.exists()


def test_embed_overflow_error_is_a_user_error(tmp_path, capsys, monkeypatch):
    from asymkern.decomposition import KernelSVD

    def overflow(self, *args, **kwargs):
        raise OverflowError("kernel 'sne': the row normaliser overflowed; rescale the data")

    monkeypatch.setattr(KernelSVD, "fit", overflow)
    code = _run(["embed", str(_edges(tmp_path)), "--out", str(tmp_path / "e.npz"), "-r", "2"])
    _assert_one_error(capsys, code, "row normaliser overflowed")


def test_embed_block_krylov_solver(tmp_path, capsys):
    out = tmp_path / "e.npz"
    assert _run(["embed", str(_edges(tmp_path)), "--out", str(out), "-r", "3",
                 "--solver", "block_krylov"]) == 0
    ref = tmp_path / "d.npz"
    assert _run(["embed", str(_edges(tmp_path)), "--out", str(ref), "-r", "3",
                 "--solver", "dense"]) == 0
    np.testing.assert_allclose(np.load(out)["singular_values"],
                               np.load(ref)["singular_values"], rtol=1e-6)
