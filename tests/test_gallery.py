"""The example gallery (examples/plot_*.py): every script compiles; the fastest ones run.

The run part needs matplotlib (the docs build executes the whole gallery); it is skipped
cleanly where matplotlib is not installed (the minimum-versions CI environment).
"""

import os
import py_compile
import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCRIPTS = sorted(EXAMPLES.glob("plot_*.py"))
# The quickest scripts (a few seconds each on two idle cores), run end to end.
FAST = ["plot_askls_graph.py", "plot_koopman.py", "plot_load_your_data.py"]


def test_gallery_has_examples():
    assert (EXAMPLES / "README.txt").is_file()
    assert SCRIPTS, "no plot_*.py scripts in examples/"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_example_compiles(script, tmp_path):
    py_compile.compile(str(script), cfile=str(tmp_path / "out.pyc"), doraise=True)
    text = script.read_text(encoding="utf-8")
    assert text.lstrip().startswith('"""'), "a sphinx-gallery script starts with its docstring"


@pytest.mark.parametrize("name", FAST)
def test_fast_example_runs(name, monkeypatch):
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg", force=True)
    import matplotlib.pyplot as plt

    script = EXAMPLES / name
    assert script.is_file()
    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    monkeypatch.setattr(sys, "argv", [str(script)])
    monkeypatch.setenv("MPLBACKEND", "Agg")
    try:
        runpy.run_path(str(script), run_name="__main__")
        assert plt.get_fignums(), f"{name} made no figure"
    finally:
        plt.close("all")
    assert os.fspath(script)
