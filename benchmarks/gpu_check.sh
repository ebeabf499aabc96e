#!/usr/bin/env bash
# One GPU check (issue 29, item 7): the torch test suite with CUDA tensors and device='cuda',
# then the GPU benchmarks (estimators, then kernel products), each result printed as it
# finishes. Budget: under 8 minutes on one H100 (each part bounded, see the *_S variables).
#
# Usage, from the repository root, on a machine with a CUDA build of torch:
#   bash benchmarks/gpu_check.sh                 # PYTHON=python by default
#   PYTHON=.venv/bin/python bash benchmarks/gpu_check.sh
# Exit status: 2 without a usable CUDA device; otherwise pytest's status (the benchmark's
# failure or time-out is reported but does not hide the tests' verdict).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
SUITE_S=${SUITE_S:-240}   # time bound of the torch suite (seconds)
BENCH_S=${BENCH_S:-100}   # time bound of the estimator benchmark (seconds)
PRODUCTS_S=${PRODUCTS_S:-120}  # time bound of the kernel-products benchmark (seconds)

if ! "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  echo "gpu_check: torch cannot use a CUDA device here (torch.cuda.is_available() is False)" >&2
  exit 2
fi
"$PYTHON" - <<'PY'
import torch
p = torch.cuda.get_device_properties(0)
print(f"device: {p.name}, {p.total_memory / 2**30:.0f} GiB; torch {torch.__version__}, "
      f"CUDA {torch.version.cuda}", flush=True)
PY

echo "==== torch suite on CUDA (ASYMKERN_TEST_DEVICE=cuda, bound ${SUITE_S} s) ===="
set +e
ASYMKERN_TEST_DEVICE=cuda timeout "$SUITE_S" "$PYTHON" -m pytest -v -p no:cacheprovider \
  --durations=15 -rfE tests/test_torch_*.py
suite=$?
set -e
[ "$suite" -eq 124 ] && echo "gpu_check: the torch suite ran past ${SUITE_S} s"

echo "==== GPU benchmark (benchmarks/bench_torch.py, bound ${BENCH_S} s) ===="
mkdir -p "${OUT:-docs/results}"
set +e
timeout "$BENCH_S" "$PYTHON" benchmarks/bench_torch.py --repeats 3 \
  --out "${OUT:-docs/results}/torch_bench.md"
bench=$?
set -e
[ "$bench" -ne 0 ] && echo "gpu_check: the benchmark exited with status $bench"

echo "==== kernel products (benchmarks/bench_products.py, bound ${PRODUCTS_S} s) ===="
set +e
timeout "$PRODUCTS_S" "$PYTHON" benchmarks/bench_products.py --repeats 3 \
  --out "${OUT:-docs/results}/torch_products.md"
products=$?
set -e
[ "$products" -ne 0 ] && echo "gpu_check: the products benchmark exited with status $products"
echo "==== gpu_check: torch suite status $suite, benchmarks $bench / $products ===="
exit "$suite"
