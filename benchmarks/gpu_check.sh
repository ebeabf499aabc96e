#!/usr/bin/env bash
# One GPU check (issues 29 and 31): the kernel-products benchmark (the GPU targets of issue 31),
# then every test that runs the torch backend, with CUDA tensors and device='cuda', then the
# estimator benchmark against the CPU path. Each result prints as it finishes; each part is
# bounded (the *_S variables), the whole under 9 minutes on one H100 or H200.
#
# Usage, from the repository root, on a machine with a CUDA build of torch:
#   bash benchmarks/gpu_check.sh                 # PYTHON=python by default
#   PYTHON=.venv/bin/python OUT=/tmp/gpu bash benchmarks/gpu_check.sh
# Outputs (markdown tables, the suite's log) go to $OUT (default docs/results).
# Exit status: 2 without a usable CUDA device; otherwise pytest's status (a benchmark's
# failure or time-out is reported but does not hide the tests' verdict).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
OUT=${OUT:-docs/results}
PRODUCTS_S=${PRODUCTS_S:-190}  # time bound of the kernel-products benchmark (seconds)
SUITE_S=${SUITE_S:-200}        # time bound of the torch tests (seconds)
BENCH_S=${BENCH_S:-100}        # time bound of the estimator benchmark (seconds)
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"

if ! "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  echo "gpu_check: torch cannot use a CUDA device here (torch.cuda.is_available() is False)" >&2
  exit 2
fi
"$PYTHON" - <<'PY'
import numpy, scipy, sklearn, torch
p = torch.cuda.get_device_properties(0)
print(f"device: {p.name}, {p.total_memory / 2**30:.0f} GiB; torch {torch.__version__}, "
      f"CUDA {torch.version.cuda}; numpy {numpy.__version__}, scipy {scipy.__version__}, "
      f"scikit-learn {sklearn.__version__}", flush=True)
PY

echo "==== kernel products (benchmarks/bench_products.py, bound ${PRODUCTS_S} s) ===="
timeout "$PRODUCTS_S" "$PYTHON" benchmarks/bench_products.py --repeats 3 \
  --out "$OUT/torch_products.md"
products=$?
[ "$products" -ne 0 ] && echo "gpu_check: the products benchmark exited with status $products"

echo "==== torch tests on CUDA (ASYMKERN_TEST_DEVICE=cuda, bound ${SUITE_S} s) ===="
tests=$(grep -l "_backends\|_torch_helpers" tests/test_*.py | tr '\n' ' ')
extra=()
"$PYTHON" -c "import xdist" 2>/dev/null && extra+=(-n 8)
"$PYTHON" -c "import pytest_timeout" 2>/dev/null && extra+=(--timeout 90)
ASYMKERN_TEST_DEVICE=cuda timeout "$SUITE_S" "$PYTHON" -m pytest -q -p no:cacheprovider \
  -rfE --durations=10 "${extra[@]}" $tests 2>&1 | tee "$OUT/torch_suite.log" | tail -n 60
suite=${PIPESTATUS[0]}
[ "$suite" -eq 124 ] && echo "gpu_check: the torch tests ran past ${SUITE_S} s"

echo "==== estimators (benchmarks/bench_torch.py, bound ${BENCH_S} s) ===="
timeout "$BENCH_S" "$PYTHON" benchmarks/bench_torch.py --repeats 3 --ksvd-sizes 1e6 \
  --out "$OUT/torch_bench.md"
bench=$?
[ "$bench" -ne 0 ] && echo "gpu_check: the estimator benchmark exited with status $bench"
echo "==== gpu_check: tests status $suite, benchmarks $products / $bench ===="
exit "$suite"
