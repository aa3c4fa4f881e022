#!/usr/bin/env bash
# The --gpu contract suite on a GPU machine (the lent H200), without installing the package:
# wheels were unpacked into /tmp/site (see ../shared/device/README.md). Writes the report,
# the pytest output and the benchmark JSON under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-report}
mkdir -p "$out"
# shellcheck source=benchmarks/gpu_venv.sh
. benchmarks/gpu_venv.sh
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
python3 -c "import onnxruntime as o; print('onnxruntime', o.__version__, o.get_available_providers())" | tee -a "$out/gpu.txt"
python3 -m pytest -p pytest_triton.plugin -p no:cacheprovider tests/contracts --gpu -rs -v \
  --triton-contracts model_repos/scenario07.contracts.toml \
  --triton-report "$out/h200" --benchmark-json "$out/benchmark.json" "$@" 2>&1 | tee "$out/pytest.txt"
exit "${PIPESTATUS[0]}"
