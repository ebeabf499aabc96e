"""The quick modes of benchmarks/bench_torch.py and benchmarks/bench_products.py run on the test
device (smoke tests; no timing is checked): on CUDA with ``ASYMKERN_TEST_DEVICE=cuda``, else on
CPU tensors. They are what ``benchmarks/gpu_check.sh`` runs at full size."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from _torch_helpers import ON_CUDA, TEST_DEVICE  # noqa: E402

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_torch.py"
PRODUCTS = BENCH.parent / "bench_products.py"


def _quick_run(path: Path, tmp_path, **kwargs):
    """The script's quick mode on the test device: its markdown text and table rows (the
    output file checked to hold that text)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / f"{path.stem}.md"
    text = mod.run(quick=True, out=str(out), device=TEST_DEVICE, **kwargs)
    assert out.read_text() == text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    return text, rows


def test_bench_torch_quick(tmp_path):
    text, rows = _quick_run(BENCH, tmp_path)
    assert "| case | time ratio |" in text
    if ON_CUDA:
        assert "CUDA device:" in text and "no GPU figures" not in text
    else:
        assert "no GPU figures are reported" in text
        assert ("No GPU was available" in text) == (not torch.cuda.is_available())
    assert len(rows) == 1 + 8  # header + 4 kernel blocks, KernelSVD, KRR, Koopman, CCA
    for row in rows[1:]:  # every ratio is a positive number
        ratio = float(row.split("|")[2])
        assert ratio > 0 and ratio == ratio
    assert not re.search(r"\bnan\b|\binf\b", text)  # nor any agreement figure


def test_bench_products_quick(tmp_path):
    """Every part (blocks, the other kernels, lazy products with the SDPA peer, exact lazy
    KSVD) runs; every value is a positive number and every error figure is small."""
    text, rows = _quick_run(PRODUCTS, tmp_path)
    assert ("Device:" in text) == ON_CUDA and ("no GPU figures" in text) == (not ON_CUDA)
    cases = [row.split("|")[1] for row in rows[1:]]
    for part in ("GEMM", "rbf block", "laplacian block", "linear block", "sne G·B",
                 "softmax G·B", "exact lazy KSVD"):
        assert any(part in c for c in cases), part
    assert any("stock SDPA" in row for row in rows)
    for row in rows[1:]:
        value = float(row.split("|")[2])
        assert value > 0 and value == value, row
    half = [row for row in rows[1:] if "precision='low'" in row]  # float16 operands
    assert len(half) >= 4, rows
    errors = [float(e) for row in rows[1:] if row not in half
              for e in re.findall(r"error vs float64 ([0-9.e+-]+)", row)]
    errors += [float(e) for e in re.findall(r"/σ1 = ([0-9.e+-]+)", text)]
    assert errors and max(errors) < 1e-4, errors
    low = [float(e) for row in half for e in re.findall(r"error vs float64 ([0-9.e+-]+)", row)]
    assert low and max(low) < 8 * 2.0**-11, low  # float16's rounding of B and of the result
    assert not re.search(r"\bnan\b|\binf\b", text)


def test_bench_products_compiled_probe_quick(tmp_path):
    """The torch.compile probe (``--parts compiled``, issue 31): each candidate either reports
    a positive time with a small error against float64, or says why it could not be compiled
    (FlexAttention's log-sum-exp has no CPU kernel in torch 2.13); where nothing compiles here
    (no C++ compiler for Inductor) the test is skipped, naming the reason."""
    text, rows = _quick_run(PRODUCTS, tmp_path, parts=["compiled"])
    rows = rows[1:]
    assert any("compiled rbf block" in r for r in rows) and any("FlexAttention" in r
                                                                 for r in rows), text
    if not any("compiled in" in r for r in rows):  # no candidate compiled at all
        reason = next(r for r in rows if "failed:" in r).split("|")[4].strip()
        pytest.skip(f"torch.compile does not work here: {reason}")
    for row in rows:
        value = float(row.split("|")[2])
        assert ("failed:" in row) == (value != value), row  # NaN exactly where it failed
        assert value != value or value > 0, row
    errors = [float(e) for e in re.findall(r"error vs float64 ([0-9.e+-]+)", text)]
    assert errors and max(errors) < 1e-5, errors
