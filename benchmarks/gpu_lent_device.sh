#!/usr/bin/env bash
# The lent H200 (the device tool, ../shared/device/README.md), after the wheels were carried in parts and
# installed into /tmp/site: one step per call, so that no call runs past the device's 10-minute limit.
#
#   bash benchmarks/gpu_lent_device.sh build   # the full-size model, built by the image's torch
#   bash benchmarks/gpu_lent_device.sh duty    # benchmarks.gpu_mdeberta's duty phase and its report section
#   bash benchmarks/gpu_lent_device.sh fusion  # the fusion phase (op-time profile, optimize_model) and its section
#   bash benchmarks/gpu_lent_device.sh suite   # the --gpu contract suite (benchmarks/gpu_suite.sh)
#   bash benchmarks/gpu_lent_device.sh calibration  # the adapter rows with their calibration (builds the model first
#                                                   # on a fresh machine), the plugin's own report of them
#   bash benchmarks/gpu_lent_device.sh fidelity     # the interleaved fidelity rounds (carry .tools/perf_analyzer/bin)
#   VERDICT_ARGS="--runs 40 ..." bash benchmarks/gpu_lent_device.sh verdict-power
#                                                   # benchmarks.verdict_power on the CPUs: each run pinned to 2 of
#                                                   # the 16 cores with its hogs, as on a 2-core CI runner
#
# Everything it writes for the caller goes under $OUT (at most 8 files come back).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?OUT is set by the device tool}
work=/tmp/gpu-mdeberta
case "${1:-}" in
  build)
    mkdir -p "$work"
    /opt/torch/.venv/bin/python3 -m benchmarks.gpu_build_mdeberta --out "$work/models" > "$out/build.txt" 2>&1
    echo "build exit $?"; tail -5 "$out/build.txt"
    ;;
  suite)
    bash benchmarks/gpu_suite.sh -q > "$out/suite-console.txt" 2>&1
    echo "gpu_suite.sh exit $?" | tee -a "$out/suite-console.txt"
    tail -25 "$out/suite-console.txt"
    ;;
  duty | fusion | calibration | fidelity)
    # shellcheck source=benchmarks/gpu_venv.sh
    . benchmarks/gpu_venv.sh
    export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
    phase=$1
    if [ ! -f "$work/models/build.json" ]; then  # a fresh machine: build the full-size model first (~35 s)
      mkdir -p "$work"
      /opt/torch/.venv/bin/python3 -m benchmarks.gpu_build_mdeberta --out "$work/models" > "$out/build.txt" 2>&1 ||
        { echo "build failed"; tail -20 "$out/build.txt"; exit 1; }
    fi
    python3 -m benchmarks.gpu_mdeberta --models "$work/models" --work "$work" --out "$out" --phases "$phase" \
      2>&1 | tee "$out/$phase-console.txt" | grep -v -e "^$" -e "W:onnxruntime" | tail -30
    cp "$work/state.json" "$out/$phase-state.json"
    case $phase in
      fusion) report=gpu_fusion_report ;;
      fidelity) report=gpu_phases ;;
      *) report=gpu_$phase ;;
    esac
    python3 -c "import json, sys; from benchmarks import $report as r; print('\n'.join(r.report_lines(json.load(open(sys.argv[1])))))" "$work/state.json" \
      | tee "$out/$phase.md"
    if [ "$phase" = calibration ]; then cp "$work"/calibration-report.* "$out/"; fi
    ;;
  verdict-power)
    # shellcheck source=benchmarks/gpu_venv.sh
    . benchmarks/gpu_venv.sh
    # the plugin is not installed there: PYTEST_PLUGINS loads it in each pytest run the benchmark starts
    export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 PYTEST_PLUGINS=pytest_triton.plugin
    # shellcheck disable=SC2086 # VERDICT_ARGS is a list of options
    timeout 540 python3 -m benchmarks.verdict_power ${VERDICT_ARGS:-} --out "$out/verdict-power.md" \
      > "$out/verdict-power-console.txt" 2>&1
    echo "verdict_power exit $?"
    tail -30 "$out/verdict-power-console.txt"
    ;;
  *)
    echo "usage: $0 build|duty|fusion|calibration|fidelity|suite|verdict-power" >&2
    exit 2
    ;;
esac
