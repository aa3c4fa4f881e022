"""The report section of the ``fusion`` phase (benchmarks.gpu_fusion): optimize_model's statistics, the
in-process and parity table, where one run's time goes (unfused against fused), and the served rows."""

from __future__ import annotations

from typing import Any

from benchmarks import gpu_common as gpu
from benchmarks.gpu_fusion import CONCURRENCY

TOP_OPS = 15
# Seen in this export (tiny model, same architecture code): the Softmax's input is Where(mask, QK^T/sqrt(3d) +
# c2p + p2c), the relative terms gathered with GatherElements; the bert attention fusion looks for a Softmax
# over QK^T/sqrt(d) plus an additive mask, so it finds no match.
ATTENTION_WHY = (
    "DeBERTa's scores are Where(mask, QK^T/sqrt(3d) + c2p + p2c) before the Softmax (relative terms by "
    "GatherElements, mask by Where); the bert fusion matches Softmax(QK^T/sqrt(d) + additive mask) only"
)


def report_lines(state: dict[str, Any]) -> list[str]:
    fusion = state.get("fusion")
    if not fusion:
        return ["not run"]
    build = state.get("conditions", {}).get("build", {})
    batch = int(fusion["batch"])
    floor = gpu.floor(build, "fp16", batch)["samples_per_s"] if build else float("nan")
    unfused, fused = fusion.get("unfused", {}), fusion.get("fused", {})
    lines = [
        f"fp16, batch fixed to {batch}; profiles: {fusion['warm_runs']} warm runs, then "
        f"{fusion['profiled_runs']} profiled (ONNX Runtime's profiler, node time per op type per run).",
        *[f"- step {k} FAILED: {v.strip().splitlines()[-1][:300]}" for k, v in fusion.get("errors", {}).items()],
        "",
        "### optimize_model (onnxruntime.transformers)",
        "",
        *_optimizer_lines(fusion.get("optimizer", {})),
        *_session_fusion_lines(unfused, fused),
        "",
        "### In-process and parity (against the unfused fp32 model's logits)",
        "",
        *_inprocess_lines(unfused, fused),
    ]
    for mode in {**unfused.get("profile", {}), **fused.get("profile", {})}:
        how = (
            "in-process (under CUDA: host time in each node's Compute, kernels launched asynchronously)"
            if mode == "inprocess"
            else "child process with CUDA_LAUNCH_BLOCKING=1 (each launch waits for its kernel: device time + launch)"
        )
        u, f = unfused.get("profile", {}).get(mode, {}), fused.get("profile", {}).get(mode, {})
        lines += ["", f"### Where the time goes: {how}", ""]
        lines += [f"- FAILED {k}: {p['error'][:300]}" for k, p in (("unfused", u), ("fused", f)) if "error" in p]
        lines += _profile_table(u, f)
        refs = ", ".join(f"{r['inprocess']['p50_ms']:.3f}" for r in (unfused, fused) if r)
        lines += ["", f"unprofiled in-process p50 ms (unfused, fused): {refs}"]
    lines += _served_lines(fusion.get("served", {}), floor)
    return lines


def _optimizer_lines(opt: dict[str, Any]) -> list[str]:
    lines = [
        f"- model_type {opt.get('model_type')}, num_heads {opt.get('num_heads')}, hidden_size "
        f"{opt.get('hidden_size')}, use_gpu {opt.get('use_gpu')}"
        + (f"; reused {opt['reused']}" if "reused" in opt else "")
    ]
    for attempt in opt.get("attempts", []):
        what = f"fused {_nonzero(attempt['fused'])}" if "fused" in attempt else f"FAILED: {attempt['error'][:300]}"
        lines.append(f"- opt_level={attempt['opt_level']} ({attempt['seconds']:.1f} s): {what}")
    if "import_error" in opt:
        lines.append(f"- not run: {opt['import_error']}")
    stats = next((a["fused"] for a in opt.get("attempts", []) if "fused" in a), None)
    if stats is None:
        return lines
    attention = {k: stats.get(k, 0) for k in ("Attention", "MultiHeadAttention")}
    if any(attention.values()):
        lines.append(f"- attention: fused {attention}")
    else:
        lines.append(f"- attention: NOT fused {attention}: {ATTENTION_WHY}")
    lines.append(
        f"- then fp16 (keep_io_types) and the batch fixed (fixed: {opt.get('batch_fixed')}): "
        f"{opt.get('graph_nodes')} nodes, {opt.get('bytes', 0) / 1e6:.0f} MB, "
        f"{opt.get('fp16_and_save_seconds', float('nan')):.1f} s"
    )
    return lines


def _session_fusion_lines(unfused: dict[str, Any], fused: dict[str, Any]) -> list[str]:
    """Op types the session ran that its file does not hold: what ONNX Runtime fused when the session started."""
    lines = []
    for label, row in (("unfused", unfused), ("fused", fused)):
        ops = row.get("profile", {}).get("inprocess", {}).get("ops", {})
        if not ops or "file_op_types" not in row:
            continue
        added = {op: v["nodes"] for op, v in ops.items() if op not in row["file_op_types"]}
        lines.append(
            f"- {label}: op types the session ran that the file does not hold (ONNX Runtime's own fusions, "
            f"or functions it inlined): {added or 'none'}"
        )
    return lines


def _nonzero(stats: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in stats.items() if v}


def _inprocess_lines(unfused: dict[str, Any], fused: dict[str, Any]) -> list[str]:
    lines = [
        "| model | nodes | by provider | Memcpy | p50 ms | samples/s | CUDA graphs p50 ms | samples/s "
        "| max abs logit diff | labels equal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, row in (("unfused", unfused), ("fused", fused)):
        if not row:
            lines.append(f"| {label} | not measured | | | | | | | | |")
            continue
        p, ip, par = row["placement"], row["inprocess"], row["parity_vs_fp32"]
        graph = row.get("inprocess_cuda_graph", {})
        if "p50_ms" in graph:
            graph_cells = f"{graph['p50_ms']:.3f} | {graph['samples_per_s']:.0f}"
        else:
            graph_cells = f"{str(graph.get('error', '-'))[:160]} | -"
        lines.append(
            f"| {label} | {p['nodes']} | {p['by_provider']} | {p['memcpy_nodes']} | {ip['p50_ms']:.3f} "
            f"| {ip['samples_per_s']:.0f} | {graph_cells} | {par['max_abs_logit_diff']:.2e} "
            f"| {par['labels_equal']}/{par['sequences']} |"
        )
    return lines


def _profile_table(unfused: dict[str, Any], fused: dict[str, Any]) -> list[str]:
    top = list(unfused.get("ops", {}))[:TOP_OPS]
    top += [op for op in list(fused.get("ops", {}))[:TOP_OPS] if op not in top]
    lines = [
        "| op type | unfused ms/run | share | nodes | fused ms/run | share | nodes |",
        "|---|---|---|---|---|---|---|",
    ]

    def cells(prof: dict[str, Any], op: str) -> str:
        v = prof.get("ops", {}).get(op)
        return f"{v['ms']:.3f} | {v['share']:.1%} | {v['nodes']}" if v else "- | - | -"

    def value(prof: dict[str, Any], key: str) -> str:
        return f"{prof[key]:.3f}" if key in prof else "-"

    lines += [f"| {op} | {cells(unfused, op)} | {cells(fused, op)} |" for op in top]
    for label, key, nodes in (
        ("all nodes: mean sum per run", "node_ms_per_run", "nodes"),
        ("all nodes: p50 of the per-run sums", "node_ms_per_run_p50", ""),
        ("profiled model_run p50", "model_run_p50_ms", ""),
    ):
        lines.append(
            f"| {label} | {value(unfused, key)} | | {unfused.get(nodes, '')} "
            f"| {value(fused, key)} | | {fused.get(nodes, '')} |"
        )
    return lines


def _served_lines(served: dict[str, Any], floor: float) -> list[str]:
    goal = gpu.GOAL_SAMPLES_PER_S
    lines = [
        "",
        "### Served side by side (samples/s; one server holds both models, alternating within each client count)",
        "",
        "| server | model | 1 client | 2 | 4 | best | best / unfused best | best / 1,850 goal | best / floor |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for server, data in served.items():
        if not data:
            lines.append(f"| {server} | failed: see the phase's errors | | | | | | | |")
            continue
        if "error" in data:
            lines.append(f"| {server} | load error: {data['error'][:300]} | | | | | | | |")
            continue
        rows = data["samples_per_s"]
        base = max(next(iter(rows.values())).values())  # the unfused model comes first
        for name, rates in rows.items():
            best = max(rates.values())
            cells = " | ".join(f"{rates.get(str(c), float('nan')):.0f}" for c in CONCURRENCY)
            lines.append(
                f"| {server} | {name} | {cells} | {best:.0f} | {best / base:.3f} | {best / goal:.3f} "
                f"| {best / floor:.3f} |"
            )
    return lines
