#!/usr/bin/env bash
# The full-size mDeBERTa GPU run in one command, on any machine with an NVIDIA GPU and pip:
#
#   python -m venv .venv && . .venv/bin/activate
#   pip install -e '.[gpu-bench]' && bash benchmarks/gpu_mdeberta.sh
#
# (the gpu-bench extra has onnxruntime-gpu and no CPU onnxruntime: both install the same module; with both,
# `pip uninstall -y onnxruntime onnxruntime-gpu && pip install onnxruntime-gpu`.) It builds and exports the
# model (benchmarks.gpu_build_mdeberta), then runs every phase of benchmarks.gpu_mdeberta and writes benchmarks/results/gpu-mdeberta-DATE.{md,json}. Variables:
#   BUILD_PYTHON  a python with torch + transformers + onnx + onnxruntime (default: python3)
#   RUN_PYTHON    a python with pytest-triton's serve extra and onnxruntime-gpu (default: python3)
#   WORK          models, staged repositories, state (default /tmp/gpu-mdeberta); OUT: report folder
#   PHASES        comma-separated subset of inprocess,served,fidelity,sweep,static,static1,threads,duty,fusion,proof,report
#   BUILD_ARGS    extra arguments of benchmarks.gpu_build_mdeberta (BUILD_ARGS=--tiny with --cpu: a CPU test of the route)
# Extra arguments go to benchmarks.gpu_mdeberta (e.g. --window-ms 2000 --rounds 5).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_PYTHON=${BUILD_PYTHON:-python3}
RUN_PYTHON=${RUN_PYTHON:-python3}
WORK=${WORK:-/tmp/gpu-mdeberta}
OUT=${OUT:-benchmarks/results}
PHASES=${PHASES:-inprocess,served,fidelity,sweep,proof,report}
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# onnxruntime-gpu's CUDA provider loads cuBLAS/cuDNN from the nvidia-* wheels: every lib folder on the path
nvidia_root=$("$RUN_PYTHON" -c "import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))" 2>/dev/null ||
  "$BUILD_PYTHON" -c "import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))" 2>/dev/null || true)
if [ -n "$nvidia_root" ]; then
  libs=$(find "$nvidia_root/nvidia" -maxdepth 2 -type d -name lib | tr '\n' ':')
  export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:-}"
fi
mkdir -p "$WORK" "$OUT"
if [ ! -f "$WORK/models/build.json" ]; then
  # shellcheck disable=SC2086 # BUILD_ARGS is a list of words
  "$BUILD_PYTHON" -m benchmarks.gpu_build_mdeberta --out "$WORK/models" ${BUILD_ARGS:-} || exit 1
fi
"$RUN_PYTHON" -m benchmarks.gpu_mdeberta --models "$WORK/models" --work "$WORK" --out "$OUT" --phases "$PHASES" "$@"
