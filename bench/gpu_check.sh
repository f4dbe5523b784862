#!/usr/bin/env bash
# The CUDA check for a machine with an NVIDIA GPU: the whole test suite and the benchmarks with
# DEV=CUDA. Needs the NVIDIA driver, the CUDA toolkit (nvcc on PATH) and pycuda in the venv:
#   .venv/bin/pip install -e ".[cuda]"      (the `cuda` extra is pycuda; CI never installs it)
# Usage: bench/gpu_check.sh            (from the repository root; exits non-zero on any failure)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}

"$PY" -c "import pycuda.driver" 2>/dev/null || {
  echo "pycuda is not installed: $PY -m pip install -e '.[cuda]'" >&2; exit 2; }
"$PY" -m tinylab.device
DEV=CUDA "$PY" -c "from tinylab import Device; assert Device.DEFAULT == 'CUDA', Device.DEFAULT"

echo "== tests with DEV=CUDA (the device fixture adds CUDA; default-device tests run on it) =="
DEV=CUDA "$PY" -m pytest -q -n "${JOBS:-4}" tests

echo "== CUDA vs CPU =="
"$PY" -m bench.backends --devices CUDA,CPU
if [ -f bench/run.py ]; then
  echo "== bench/run.py with DEV=CUDA =="
  DEV=CUDA "$PY" -m bench.run
fi
