"""The quick mode of benchmarks/bench_torch.py runs on the test device (a smoke test; no timing
is checked): on CUDA with ``ASYMKERN_TEST_DEVICE=cuda``, else on CPU tensors."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import ON_CUDA, TEST_DEVICE  # noqa: E402

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_torch.py"


def test_bench_torch_quick(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_torch", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "torch_bench.md"
    text = mod.run(quick=True, out=str(out), device=TEST_DEVICE)
    assert out.read_text() == text
    assert "| case | time ratio |" in text
    if ON_CUDA:
        assert "CUDA device:" in text and "no GPU figures" not in text
    else:
        assert "no GPU figures are reported" in text
        assert ("No GPU was available" in text) == (not torch.cuda.is_available())
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 1 + 8  # header + 4 kernel blocks, KernelSVD, KRR, Koopman, CCA
    for row in rows[1:]:  # every ratio is a positive number
        ratio = float(row.split("|")[2])
        assert ratio > 0 and ratio == ratio
    assert not re.search(r"\bnan\b|\binf\b", text)  # nor any agreement figure
