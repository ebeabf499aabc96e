"""Review round 14 of the command line and of KernelSVD's noise-level warning: a failed
``embed`` write leaves no folders behind, and a centred fit asked for min(n, m) components is
told that centring (not the bandwidth) makes the last one zero."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from asymkern import cli
from asymkern.cli import main
from asymkern.decomposition import KernelSVD

EDGES = "0,1\n1,2\n2,0\n2,3\n3,1\n0,3\n"


def test_failed_embed_write_removes_the_folders_it_created(tmp_path, monkeypatch, capsys):
    graph = tmp_path / "g.csv"
    graph.write_text(EDGES)
    out = tmp_path / "new" / "deeper" / "emb.npz"

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", fail)
    assert main(["embed", str(graph), "-r", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and "No space left on device" in err
    assert not (tmp_path / "new").exists()  # neither the file nor the folders made for it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.csv"]


def test_failed_write_keeps_folders_that_existed(tmp_path):
    (tmp_path / "kept").mkdir()
    target = tmp_path / "kept" / "a" / "b" / "f.txt"

    def writer(tmp):
        raise OSError(5, "Input/output error")

    with pytest.raises(cli.InputError, match="Input/output error"):
        cli._atomic_write(target, writer)
    assert (tmp_path / "kept").is_dir() and not (tmp_path / "kept" / "a").exists()
    # an interrupted write (not an OSError) cleans up too, and the interruption propagates
    with pytest.raises(KeyboardInterrupt):
        cli._atomic_write(target, lambda tmp: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert not (tmp_path / "kept" / "a").exists()


def test_successful_write_creates_the_folders(tmp_path):
    target = tmp_path / "x" / "y" / "f.txt"
    cli._atomic_write(target, lambda tmp: open(tmp, "w").write("ok"))
    assert target.read_text() == "ok"
    assert [p.name for p in target.parent.iterdir()] == ["f.txt"]  # no temporary file left


def _noise_warnings(est, X, **fit):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est.fit(X, **fit)
    return [str(w.message) for w in rec if "noise level" in str(w.message)]


@pytest.mark.parametrize("shape", [(6, 6), (5, 9)])
def test_centred_fit_with_min_shape_components_blames_centring(shape):
    rng = np.random.default_rng(0)
    n, m = shape
    X, Z = rng.standard_normal((n, 3)), rng.standard_normal((m, 3))
    est = KernelSVD(min(n, m), kernel="sne", kernel_params={"bandwidth": 1.0},
                    solver="dense", center=True)
    (msg,) = _noise_warnings(est, X, Z=Z)
    assert f"at most min(n, m) − 1 = {min(n, m) - 1}" in msg and "bandwidth" not in msg
    assert est.n_informative_ == min(n, m) - 1
    # one component fewer: no warning; uncentred: all min(n, m) carry information
    assert _noise_warnings(KernelSVD(min(n, m) - 1, kernel="sne", solver="dense",
                                     kernel_params={"bandwidth": 1.0}), X, Z=Z) == []
    assert _noise_warnings(KernelSVD(min(n, m), kernel="sne", solver="dense", center=False,
                                     kernel_params={"bandwidth": 1.0}), X, Z=Z) == []


def test_centred_fit_with_a_huge_bandwidth_still_blames_the_bandwidth():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 3))
    est = KernelSVD(8, kernel="rbf", kernel_params={"bandwidth": 1e9}, solver="dense")
    (msg,) = _noise_warnings(est, X)
    assert "bandwidth" in msg and "centring (center=True)" not in msg
