"""The quick mode of benchmarks/bench_torch.py runs (a smoke test; no timing is checked)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_torch.py"


def test_bench_torch_quick(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_torch", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "torch_bench.md"
    text = mod.run(quick=True, out=str(out))
    assert out.read_text() == text
    assert "| case | time ratio |" in text
    import torch

    if not torch.cuda.is_available():
        assert "No GPU was available" in text
    assert text.count("\n| ") >= 7  # header + 6 rows
