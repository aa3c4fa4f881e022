#!/usr/bin/env bash
# The --gpu contract suite on a GPU machine (the lent H200), without installing the package:
# wheels were unpacked into /tmp/site (see ../shared/device/README.md). Writes the report,
# the pytest output and the benchmark JSON under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-report}
mkdir -p "$out"
# The python backend stub imports from the environment of the first python3 on PATH, and the
# image's venv has numpy 2, with which the stub (built for numpy 1) returns empty output tensors.
# A venv whose .pth puts /tmp/site (numpy 1.26, onnxruntime-gpu, tritonclient) before the image's
# packages gives the tests and the stub one consistent environment.
if [ ! -x /tmp/venv/bin/python3 ]; then
  /usr/bin/python3 -m venv /tmp/venv
  sp=$(/tmp/venv/bin/python3 -c "import site; print(site.getsitepackages()[0])")
  printf '/tmp/site\n/opt/torch/.venv/lib/python3.12/site-packages\n' > "$sp/zz_site.pth"
fi
export PATH=/tmp/venv/bin:$PATH PYTHONPATH=$PWD
# onnxruntime-gpu's CUDA provider needs every lib folder of the nvidia packages
nvidia_root=$(python3 -c "import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))" 2>/dev/null || true)
if [ -n "$nvidia_root" ]; then
  libs=$(find "$nvidia_root/nvidia" -maxdepth 2 -type d -name lib | tr '\n' ':')
  export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:-}"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
python3 -c "import onnxruntime as o; print('onnxruntime', o.__version__, o.get_available_providers())" | tee -a "$out/gpu.txt"
python3 -m pytest -p pytest_triton.plugin -p no:cacheprovider tests/contracts --gpu -rs -v \
  --triton-contracts model_repos/scenario07.contracts.toml \
  --triton-report "$out/h200" --benchmark-json "$out/benchmark.json" "$@" 2>&1 | tee "$out/pytest.txt"
exit "${PIPESTATUS[0]}"
