"""A full-size mDeBERTa on a GPU, measured as a user of the plugin would: floor, in-process ONNX Runtime,
served through the plugin's launcher and adapter, fidelity against perf_analyzer, placement, a b=8 fp16
settings sweep and the provider proof. Not a timed test: a script that prints and writes a report.

    python -m benchmarks.gpu_mdeberta --models DIR --work DIR --out DIR [--phases ...] [--cpu]

``--models`` holds ``model.onnx``, ``model_fp16.onnx`` and ``build.json`` from ``benchmarks.gpu_build_mdeberta``.
Phases (default: all, in this order): see ``PHASES`` (fidelity, sweep, static, static1, threads and proof are in
``gpu_phases``, calibration in ``gpu_calibration``, duty in ``gpu_duty``, fusion in ``gpu_fusion``). Every phase
adds to ``WORK/state.json``, so a run can be split over several calls; ``report`` writes ``gpu-mdeberta.md`` and
``gpu-mdeberta.json`` under ``--out``. ``--cpu`` runs everything on the CPU provider (to test the script with the
tiny model on a machine without a GPU); its numbers mean nothing for a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks import gpu_calibration
from benchmarks import gpu_common as gpu
from benchmarks import gpu_duty
from benchmarks import gpu_fusion
from benchmarks import gpu_phases
from benchmarks import gpu_report
from benchmarks import perf_analyzer
from benchmarks.common import RESULTS
from benchmarks.common import SAMPLES
from benchmarks.common import TOKENIZER
from benchmarks.common import cpu_model
from benchmarks.common import cycle
from benchmarks.common import version
from benchmarks.gpu_common import Run
from pytest_triton.repository.ort_placement import placement

PHASES = (
    "inprocess",
    "served",
    "calibration",
    "fidelity",
    "sweep",
    "static",
    "static1",
    "threads",
    "duty",
    "fusion",
    "proof",
    "report",
)


# -- in-process ONNX Runtime --------------------------------------------------------------------------------------


def phase_inprocess(run: Run) -> None:
    import onnxruntime as ort

    result: dict[str, Any] = {"onnxruntime": ort.__version__, "providers": run.providers, "variants": {}}
    logits: dict[str, NDArray[Any]] = {}
    for dtype, path in run.files.items():
        session = ort.InferenceSession(str(path), providers=run.providers)
        if session.get_providers()[0] != run.providers[0]:
            raise RuntimeError(f"in-process session on {session.get_providers()}, wanted {run.providers[0]}")
        device = "cpu" if run.args.cpu else "cuda"
        big, ceiling = run.args.batch, run.args.ceiling_batch
        for batch in (1, big, ceiling) if dtype == "fp16" and ceiling > big else (1, big):
            feeds = run.batches(batch)
            row: dict[str, Any] = {}
            if batch <= big:
                row["run"] = gpu.latency(run, cycle([gpu.run_call(session, f) for f in feeds]), batch)
                row["iobinding_cpu_inputs"] = gpu.latency(
                    run, cycle([gpu.bound_call(session, f, "cpu") for f in feeds]), batch
                )
            row["gpu_resident"] = gpu.latency(
                run, cycle([gpu.resident_call(ort, session, f, device) for f in feeds]), batch
            )
            result["variants"][f"{dtype}_b{batch}"] = row
            print(
                f"in-process {dtype} b={batch}: " + ", ".join(f"{k} p50 {v['p50_ms']:.3f} ms" for k, v in row.items())
            )
        probe = run.batches(big, count=max(1, 64 // big))
        logits[dtype] = np.concatenate([session.run([gpu.OUTPUT], f)[0] for f in probe])
        result.setdefault("placement", {})[dtype] = placement(path, run.providers, batch=1, name=path.name).to_json()
        print(
            f"placement {dtype}: {result['placement'][dtype]['by_provider']}, "
            f"memcpy {result['placement'][dtype]['memcpy_nodes']}"
        )
        del session
    diff = np.abs(logits["fp32"] - logits["fp16"])
    result["fp16_vs_fp32"] = {
        "sequences": int(diff.shape[0]),
        "max_abs_logit_diff": float(diff.max()),
        "labels_equal": int((logits["fp32"].argmax(1) == logits["fp16"].argmax(1)).sum()),
    }
    run.state["inprocess"] = result


# -- served through the plugin ---------------------------------------------------------------------------------


def phase_served(run: Run) -> None:
    timings = run.work / "adapter-timings.txt"
    models: list[tuple[str, str, dict[str, Any], Callable[[Any], None] | None]] = [
        ("mdeberta", "fp32", {}, None),
        ("mdeberta_fp16", "fp16", {}, None),
        ("mdeberta_q1000", "fp32", {"max_queue_delay_microseconds": 1000}, None),
        ("mdeberta_gpuout", "fp32", {}, gpu.params(pytest_triton_output_device="cuda")),
    ]
    factory, server = gpu.serve(run, "served", models, env={gpu.TIMINGS_ENV: str(timings)})
    adapted = server.prepared.adapted if server.prepared is not None else ()
    result: dict[str, Any] = {"adapted": [a.describe() for a in adapted], "models": {}}
    try:
        for name, dtype, _, _ in models:
            for batch in (1, run.args.batch):
                try:
                    row = gpu.served_latency(run, server.urls.http, name, batch, timings)
                except Exception as exc:  # one model's failure is its row, the others still run
                    result.setdefault("failed", {})[f"{name}_b{batch}"] = f"{type(exc).__name__}: {str(exc)[:1500]}"
                    print(f"served {name} b={batch} FAILED: {str(exc)[:500]}")
                    continue
                result["models"][f"{name}_b{batch}"] = {"dtype": dtype, "batch": batch, **row}
                infer = row.get("server", {}).get("compute_infer_us", float("nan")) / 1e3
                print(
                    f"served {name} b={batch}: p50 {row['p50_ms']:.3f} ms, infer {infer:.3f} ms, "
                    f"{row['samples_per_s']:.0f}/s, adapter {row['adapter']}"
                )
    finally:
        factory.stop_all()
        gpu.cleanup(run, "served")
    run.state["served"] = result


# -- main -----------------------------------------------------------------------------------------------------


def conditions(run: Run) -> dict[str, Any]:
    device = "none (--cpu)"
    if not run.args.cpu:
        query = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm", "--format=csv,noheader"]
        device = subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip()
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": device,
        "cpus": len(os.sched_getaffinity(0)),
        "cpu": cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {
            d: version(d) for d in ("onnxruntime-gpu", "onnxruntime", "nvidia-pytriton", "numpy", "tritonclient")
        },
        "build": json.loads((run.args.models / "build.json").read_text(encoding="utf-8")),
        "window_ms": run.args.window_ms,
        "command": " ".join(sys.argv),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--models", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--cpu", action="store_true", help="CPU provider and KIND_CPU (a test of the script)")
    parser.add_argument("--window-ms", type=float, default=1000.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fidelity-window-ms", type=float, default=1500.0)
    parser.add_argument("--batch", type=int, default=8, help="the throughput batch (default 8)")
    parser.add_argument("--ceiling-batch", type=int, default=32, help="in-process fp16 ceiling batch (default 32)")
    parser.add_argument("--sweep-seconds", type=float, default=3.0)
    parser.add_argument("--tool-dir", type=Path, default=perf_analyzer.TOOL_DIR)
    parser.add_argument("--tokenizer", type=Path, default=TOKENIZER)
    parser.add_argument("--samples", type=Path, default=SAMPLES)
    parser.add_argument("--proof-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.proof_child:
        return gpu_phases.proof_child(args)
    phases = [p for p in args.phases.split(",") if p]
    unknown = sorted(set(phases) - set(PHASES))
    if unknown:
        parser.error(f"--phases: unknown {unknown}; choose from {list(PHASES)}")
    run = Run(args)
    run.state.setdefault("conditions", conditions(run))
    run.state.setdefault("errors", {})
    run.state.setdefault("runs", []).append(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC: phases {','.join(phases)}")
    functions = {
        "inprocess": phase_inprocess,
        "served": phase_served,
        "calibration": gpu_calibration.phase_calibration,
        "fidelity": gpu_phases.phase_fidelity,
        "sweep": gpu_phases.phase_sweep,
        "static": gpu_phases.phase_static,
        "static1": gpu_phases.phase_static1,
        "threads": gpu_phases.phase_threads,
        "duty": gpu_duty.phase_duty,
        "fusion": gpu_fusion.phase_fusion,
        "proof": gpu_phases.phase_proof,
    }
    failed = False
    for phase in phases:
        started = time.monotonic()
        if phase == "report":
            gpu_report.write(run.state, args.out)
            continue
        try:
            functions[phase](run)
            run.state["errors"].pop(phase, None)
        except Exception:
            failed = True
            run.state["errors"][phase] = traceback.format_exc()[-3000:]
            print(f"phase {phase} FAILED:\n{run.state['errors'][phase]}", file=sys.stderr, flush=True)
        run.state.setdefault("phase_seconds", {})[phase] = round(time.monotonic() - started, 1)
        print(f"phase {phase}: {run.state['phase_seconds'][phase]} s", flush=True)
        run.save()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
