"""The report of benchmarks.gpu_mdeberta: floor, tables with ratios, verdicts (Markdown and JSON)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from benchmarks import gpu_calibration
from benchmarks import gpu_duty
from benchmarks import gpu_fusion_report
from benchmarks.gpu_common import GOAL_SAMPLES_PER_S
from benchmarks.gpu_common import HBM_TBPS
from benchmarks.gpu_common import PEAK_TFLOPS
from benchmarks.gpu_common import floor

# H200 figures the issue gives: bf16/fp16 dense ~790 TFLOP/s, HBM ~4.3 TB/s. ONNX Runtime's CUDA provider runs
# fp32 matmuls as TF32 by default: taken as half the fp16 rate (the ratio of the two on Hopper's data sheet).
SEED_A10G = {"triton-ort-gpu (CUDA EP)": (27.3, 57.0), "triton-tensorrt-fp16": (15.4, 185.0)}
ADAPTER_LIMIT = 1.05
THROUGHPUT_LIMIT = 0.97


def _f(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _inprocess_rows(state: dict[str, Any], build: dict[str, Any]) -> list[str]:
    variants = state.get("inprocess", {}).get("variants", {})
    lines = [
        "| in-process ORT | p50 ms | samples/s | floor ms | p50 / floor | A10G CUDA EP p50 / this |",
        "|---|---|---|---|---|---|",
    ]
    for key, row in variants.items():
        dtype, batch = key.split("_b")
        for how, m in row.items():
            fl = floor(build, dtype, int(batch))
            seed = SEED_A10G["triton-ort-gpu (CUDA EP)"][0] / m["p50_ms"] if batch == "1" else None
            lines.append(
                f"| {dtype} b={batch} {how} | {m['p50_ms']:.3f} | {m['samples_per_s']:.0f} | {fl['floor_ms']:.3f} "
                f"| {m['p50_ms'] / fl['floor_ms']:.1f}x | {_f(seed, 2)}{'x' if seed else ''} |"
            )
    return lines


def adapter_ratios(state: dict[str, Any]) -> list[dict[str, Any]]:
    """Triton's compute (infer) time / in-process ONNX Runtime p50, same dtype, batch, provider, options."""
    variants = state.get("inprocess", {}).get("variants", {})
    out = []
    for key, row in state.get("served", {}).get("models", {}).items():
        ref = variants.get(f"{row['dtype']}_b{row['batch']}", {}).get("run")
        server = row.get("server", {})
        if not ref or not server:
            continue
        infer_ms = server["compute_infer_us"] / 1e3
        compute_ms = (server["compute_input_us"] + server["compute_infer_us"] + server["compute_output_us"]) / 1e3
        out.append(
            {
                "model": key,
                "dtype": row["dtype"],
                "batch": row["batch"],
                "served_p50_ms": row["p50_ms"],
                "queue_ms": server["queue_us"] / 1e3,
                "infer_ms": infer_ms,
                "compute_ms": compute_ms,
                "adapter_session_run_ms": row.get("adapter", {}).get("session_run_ms"),
                "adapter_execute_ms": row.get("adapter", {}).get("execute_ms"),
                "inprocess_p50_ms": ref["p50_ms"],
                "infer_over_inprocess": infer_ms / ref["p50_ms"],
                "served_samples_per_s": row["samples_per_s"],
                "inprocess_samples_per_s": ref["samples_per_s"],
                "samples_ratio": row["samples_per_s"] / ref["samples_per_s"],
            }
        )
    return out


def _served_rows(ratios: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| served model | p50 ms | queue ms | Triton infer ms | adapter session.run ms | adapter execute ms "
        "| in-process p50 ms | infer / in-process (≤ 1.05) | samples/s "
        "| served / in-process samples/s (≥ 0.97 at b=8) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in ratios:
        ok = "met" if r["infer_over_inprocess"] <= ADAPTER_LIMIT else "NOT met"
        tp_ok = "" if r["batch"] != 8 else (" met" if r["samples_ratio"] >= THROUGHPUT_LIMIT else " NOT met")
        lines.append(
            f"| {r['model']} | {r['served_p50_ms']:.3f} | {r['queue_ms']:.3f} | {r['infer_ms']:.3f} "
            f"| {_f(r['adapter_session_run_ms'], 3)} | {_f(r['adapter_execute_ms'], 3)} | {r['inprocess_p50_ms']:.3f} "
            f"| {r['infer_over_inprocess']:.3f} {ok} | {r['served_samples_per_s']:.0f} "
            f"| {r['samples_ratio']:.3f}{tp_ok} |"
        )
    return lines


def _placement_rows(state: dict[str, Any]) -> list[str]:
    lines = [
        "| model | nodes | by provider | CPU nodes | Memcpy nodes | off-provider ops |",
        "|---|---|---|---|---|---|",
    ]
    for dtype, p in state.get("inprocess", {}).get("placement", {}).items():
        ops = ", ".join(f"{k} {v}" for k, v in p["off_wanted_ops"].items()) or "-"
        lines.append(
            f"| {dtype} | {p['nodes']} | {p['by_provider']} | {p['cpu_nodes']} | {p['memcpy_nodes']} | {ops} |"
        )
    return lines


def _sweep_rows(state: dict[str, Any], build: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    settings = state.get("sweep", {}).get("settings", {})
    base = settings.get("fp16_default", {}).get("samples_per_s")
    fl = floor(build, "fp16", 8)
    lines = [
        "| setting | what | b=8 p50 ms | samples/s c=1 | c=2 | c=4 | best / default | best / 1,850 goal "
        "| best / floor |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    best_name, best = "", 0.0
    for name, row in settings.items():
        conc = row.get("concurrency", {})
        top = max([row["samples_per_s"], *conc.values()])
        if top > best:
            best_name, best = name, top
        lines.append(
            f"| {name} | {row['what']} | {row['p50_ms']:.3f} | {row['samples_per_s']:.0f} | {_f(conc.get('2'), 0)} "
            f"| {_f(conc.get('4'), 0)} | {_f(top / base if base else None, 3)} | {top / GOAL_SAMPLES_PER_S:.3f} "
            f"| {top / fl['samples_per_s']:.3f} |"
        )
    summary = {
        "best_setting": best_name,
        "best_samples_per_s": best,
        "goal": GOAL_SAMPLES_PER_S,
        "floor_samples_per_s": fl["samples_per_s"],
    }
    return lines, summary


def _static_lines(state: dict[str, Any], build: dict[str, Any]) -> list[str]:
    static = state.get("static")
    if not static:
        return ["not run"]
    fl = floor(build, "fp16", int(static["batch"]))
    p = static.get("placement", {})
    lines = [
        f"`{static['file']}`: the fp16 model with its batch fixed to {static['batch']}: {p.get('nodes')} nodes, "
        f"{p.get('by_provider')}, CPU nodes {p.get('cpu_nodes')}, Memcpy {p.get('memcpy_nodes')}",
        "",
        "| path | p50 ms | samples/s c=1 | c=2 | c=4 | best / 1,850 goal | best / floor |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = [(f"in-process {k}", v) for k, v in static.get("inprocess", {}).items() if isinstance(v, dict)]
    rows += [(f"served {k}", v) for k, v in static.get("served", {}).items()]
    for label, row in rows:
        if "error" in row:
            lines.append(f"| {label} | error: {row['error'][:200]} | | | | | |")
            continue
        conc = row.get("concurrency", {})
        top = max([row["samples_per_s"], *conc.values()])
        lines.append(
            f"| {label} | {row['p50_ms']:.3f} | {row['samples_per_s']:.0f} | {_f(conc.get('2'), 0)} "
            f"| {_f(conc.get('4'), 0)} | {top / GOAL_SAMPLES_PER_S:.3f} | {top / fl['samples_per_s']:.3f} |"
        )
    for key in ("cuda_graph_error", "cuda_graph_max_abs_diff"):
        if key in static.get("inprocess", {}):
            lines.append(f"- in-process {key}: {static['inprocess'][key]}")
    if "served_cuda_graph_error" in static:
        lines.append(f"- served CUDA graphs: {static['served_cuda_graph_error']}")
    return lines


def _threads_lines(state: dict[str, Any]) -> list[str]:
    threads = state.get("threads")
    if not threads:
        return ["not run"]
    lines = [
        "| intra-op threads | in-process p50 ms | served p50 ms | Triton infer ms | adapter session.run ms "
        "| infer / in-process | session.run / in-process |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, name in (("1", "mdeberta_t1"), ("4", "mdeberta_t4"), ("default", "mdeberta_t0")):
        ref = threads["inprocess"].get(key)
        row = threads["served"].get(name)
        if not ref or not row or "server" not in row:
            continue
        infer = row["server"]["compute_infer_us"] / 1e3
        run_ms = row.get("adapter", {}).get("session_run_ms")
        lines.append(
            f"| {key} | {ref['p50_ms']:.3f} | {row['p50_ms']:.3f} | {infer:.3f} | {_f(run_ms, 3)} "
            f"| {infer / ref['p50_ms']:.3f} | {_f(run_ms / ref['p50_ms'] if run_ms else None, 3)} |"
        )
    return lines


def _static1_lines(state: dict[str, Any]) -> list[str]:
    data = state.get("static1")
    if not data:
        return ["not run"]
    lines = [
        "| model (batch fixed to 1) | nodes on CPU | Memcpy | in-process p50 ms | served p50 ms | Triton infer ms "
        "| adapter session.run ms | infer / in-process | session.run / in-process |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for dtype in ("fp32", "fp16"):
        p, ref, row = data["placement"][dtype], data["inprocess"][dtype], data["served"].get(f"static1_{dtype}", {})
        if "server" not in row:
            continue
        infer = row["server"]["compute_infer_us"] / 1e3
        run_ms = row.get("adapter", {}).get("session_run_ms")
        lines.append(
            f"| {dtype} | {p['cpu_nodes']} | {p['memcpy_nodes']} | {ref['p50_ms']:.3f} | {row['p50_ms']:.3f} "
            f"| {infer:.3f} | {_f(run_ms, 3)} | {infer / ref['p50_ms']:.3f} "
            f"| {_f(run_ms / ref['p50_ms'] if run_ms else None, 3)} |"
        )
    return lines


def write(state: dict[str, Any], out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    cond = state.get("conditions", {})
    build = cond.get("build", {})
    date = str(cond.get("date", "?"))[:10]
    batches = sorted({int(k.split("_b")[1]) for k in state.get("inprocess", {}).get("variants", {})} | {1, 8})
    floors = {f"{d}_b{b}": floor(build, d, b) for d in ("fp32", "fp16") for b in batches} if build else {}
    ratios = adapter_ratios(state)
    sweep_lines, sweep_summary = _sweep_rows(state, build) if build else ([], {})
    lines = [
        f"# mDeBERTa-v3-base-shaped model on {cond.get('gpu', '?')} ({cond.get('date', '?')})",
        "",
        f"- command: `{cond.get('command', '?')}`; windows {cond.get('window_ms')} ms, 3 stable within 10%",
        *[f"- run {i}: {r}" for i, r in enumerate(state.get("runs", []), 1)],
        f"- machine: {cond.get('cpus')} CPUs ({cond.get('cpu')}), {cond.get('platform')}, Python {cond.get('python')}",
        f"- versions: {cond.get('versions')}; build: {build.get('versions')}, exporter {build.get('exporter')}",
        f"- model: {build.get('parameters', 0):,} parameters ({build.get('embedding_parameters', 0):,} in the "
        f"embedding matrix), seq {build.get('seq')}, random weights (seed {build.get('seed')}); ONNX "
        f"{build.get('onnx_bytes', {})} bytes; build+export {build.get('seconds')} s",
        f"- FLOPs per sequence (matmuls): {build.get('flops_per_sequence', {}).get('total', 0) / 1e9:.1f} GFLOP; "
        f"weights read per forward {build.get('weight_bytes_read_per_forward_fp32', 0) / 1e9:.3f} GB fp32 "
        f"(all weights {build.get('weight_bytes_fp32', 0) / 1e9:.2f} GB fp32, "
        f"{build.get('weight_bytes_fp16', 0) / 1e9:.2f} GB fp16)",
        f"- floor: fp16 at {PEAK_TFLOPS['fp16']:.0f} TFLOP/s, fp32 (TF32) at {PEAK_TFLOPS['fp32']:.0f}, "
        f"HBM {HBM_TBPS} TB/s",
        "",
        "## Floor",
        "",
        "| dtype, batch | compute ms | weights ms | floor ms | floor samples/s |",
        "|---|---|---|---|---|",
        *[
            f"| {k} | {v['compute_ms']:.3f} | {v['memory_ms']:.3f} | {v['floor_ms']:.3f} | {v['samples_per_s']:.0f} |"
            for k, v in floors.items()
        ],
        "",
        "## In-process ONNX Runtime (same provider, default session options)",
        "",
        *_inprocess_rows(state, build),
        "",
        f"fp16 vs fp32: {state.get('inprocess', {}).get('fp16_vs_fp32')}",
        "",
        "## Served through the plugin (local launcher, python-backend ONNX Runtime adapter)",
        "",
        *_served_rows(ratios),
        "",
        "`mdeberta_q1000` has scenario 07's `max_queue_delay_microseconds: 1000`: its queue column is the config's "
        "delay, not the adapter's; `mdeberta_gpuout` leaves the logits on the GPU "
        "(`pytest_triton_output_device=cuda`).",
        "",
        "## Fidelity: plugin p50 / perf_analyzer p50 (b=1, same server, alternating rounds; goal [0.97, 1.03])",
        "",
        *state.get("fidelity", {}).get("table", ["not run"]),
        "",
        *state.get("fidelity", {}).get("verdict", []),
        "",
        "## What ONNX Runtime leaves on the CPU (one profiled b=1 run, optimized graph)",
        "",
        *_placement_rows(state),
        "",
        "## b=8 fp16 throughput settings",
        "",
        *sweep_lines,
        "",
        f"best: {sweep_summary}; A10G seed TensorRT fp16: {SEED_A10G['triton-tensorrt-fp16'][1]:.0f}/s",
        "",
        f"CUDA graphs (dynamic batch): {state.get('sweep', {}).get('cuda_graphs')}",
        "",
        "## Static batch shape and CUDA graphs (fp16)",
        "",
        *_static_lines(state, build),
        "",
        "## b=1 with the batch fixed to 1",
        "",
        *_static1_lines(state),
        "",
        "## b=1 fp32 and ONNX Runtime's intra-op threads",
        "",
        *_threads_lines(state),
        "",
        "## b=1: the adapter, or the idle time between requests? (`duty` phase)",
        "",
        *gpu_calibration.report_lines(state),
        *gpu_duty.report_lines(state),
        "",
        "## b=8 fp16: where the time goes, and ONNX Runtime's transformer fusions (`fusion` phase)",
        "",
        *gpu_fusion_report.report_lines(state),
        "",
        "## Provider proof and TensorRT",
        "",
        "- CUDA provider made unavailable on purpose (the server imports an onnxruntime copy without "
        f"libonnxruntime_providers_cuda.so): {state.get('proof', {}).get('cuda_unavailable')}",
        f"- TensorRT: not run: {state.get('proof', {}).get('tensorrt')}",
        "",
        f"Phase errors: {list(state.get('errors', {})) or 'none'}; phase seconds: {state.get('phase_seconds')}",
        "",
    ]
    md = out / f"gpu-mdeberta-{date}.md"
    js = out / f"gpu-mdeberta-{date}.json"
    md.write_text("\n".join(lines), encoding="utf-8")
    payload = {**state, "floor": floors, "adapter_ratios": ratios, "sweep_summary": sweep_summary}
    js.write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
    print("\n".join(lines))
    return md, js
