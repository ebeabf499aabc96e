#!/usr/bin/env bash
# One GPU check (issues 29 and 31): the kernel-products benchmark (the GPU targets of issue 31),
# then every test that runs the torch backend, with CUDA tensors and device='cuda', then the
# estimator benchmark against the CPU path. Each result prints as it finishes; each part is
# bounded (the *_S variables), the whole under 8 minutes on one H100 or H200 (two runs on an
# H200, 2026-11-27: docs/results/gpu_h200.md).
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
PRODUCTS_S=${PRODUCTS_S:-200}  # time bound of the kernel-products benchmark (seconds)
SUITE_S=${SUITE_S:-160}        # time bound of the torch tests (seconds)
BENCH_S=${BENCH_S:-120}        # time bound of the estimator benchmark (seconds)
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
threads=()
if "$PYTHON" -c "import xdist" 2>/dev/null; then
  extra+=(-n 14 -p no:benchmark)
  # one BLAS / OpenMP thread per worker: 14 workers each starting a pool of every core
  # oversubscribe the host (a 2 s scipy SVD took 90 s on a 16-core H200 host, 2026-11-27)
  threads=(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1)
fi
"$PYTHON" -c "import pytest_timeout" 2>/dev/null && extra+=(--timeout 90)
# -v: each failure is named in the log as it happens, also when the time bound stops the run
env "${threads[@]}" ASYMKERN_TEST_DEVICE=cuda timeout "$SUITE_S" "$PYTHON" -m pytest -v -p no:cacheprovider \
  -rfE --tb=short --durations=10 "${extra[@]}" $tests > "$OUT/torch_suite.log" 2>&1
suite=$?
grep -E "FAILED|ERROR|[0-9]+ (passed|failed)" "$OUT/torch_suite.log" | grep -v "PASSED" | tail -n 40
[ "$suite" -eq 124 ] && echo "gpu_check: the torch tests ran past ${SUITE_S} s"

echo "==== estimators (benchmarks/bench_torch.py, bound ${BENCH_S} s) ===="
timeout "$BENCH_S" "$PYTHON" benchmarks/bench_torch.py --repeats 3 --ksvd-sizes 1e6 \
  --out "$OUT/torch_bench.md"
bench=$?
[ "$bench" -ne 0 ] && echo "gpu_check: the estimator benchmark exited with status $bench"
echo "==== gpu_check: tests status $suite, benchmarks $products / $bench ===="
exit "$suite"
