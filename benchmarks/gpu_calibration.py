"""The ``calibration`` phase of benchmarks.gpu_mdeberta: the full-size model's adapter rows as the plugin reports them.

One server holds the fp32 and the fp16 model, both through the python-backend ONNX Runtime adapter. Each row (b=1
and the throughput batch) is measured by the plugin's own bench (``TritonBench.measure``) with its engine path and
the adapter calibration (``pytest_triton.bench.engine``): a no-work model of the same I/O loaded on the same server
and timed in alternating windows with the row, the same requests through the same client. The b=1 rows carry the
budget names of ``model_repos/budgets.toml`` (written on the adapter path), so they are judged there; the plugin's
report (terminal lines, Markdown, JSON, SVG) is written under ``WORK/calibration-report.*``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks import gpu_common as gpu
from benchmarks.common import ROOT
from benchmarks.common import cycle
from pytest_triton.bench.budgets import load_budgets
from pytest_triton.bench.engine import engine_of
from pytest_triton.bench.report import table_lines
from pytest_triton.bench.report import write_report
from pytest_triton.bench.session import ServedBy
from pytest_triton.bench.session import TritonBench
from pytest_triton.client.transports import PreparedRequest
from pytest_triton.client.transports import TritonHttpTransport
from pytest_triton.hardware import hardware_key

ROWS = {"mdeberta": "mdeberta-base-ort-cuda-fp32", "mdeberta_fp16": "mdeberta-base-ort-cuda-fp16"}


def _sender(transport: TritonHttpTransport, prepared: PreparedRequest) -> Callable[[], object]:
    return lambda: transport.send(prepared)


def phase_calibration(run: gpu.Run) -> None:
    models: list[gpu.Model] = [("mdeberta", "fp32", {}, None), ("mdeberta_fp16", "fp16", {}, None)]
    factory, server = gpu.serve(run, "calibration", models)
    url = server.urls.http
    hardware = "cpu-test" if run.args.cpu else hardware_key()
    bench = TritonBench(
        hardware=hardware, budgets=load_budgets(ROOT / "model_repos" / "budgets.toml"), policy=run.policy()
    )
    transport = TritonHttpTransport(url)
    rows: dict[str, Any] = {}
    try:
        for name, _, _, _ in models:
            engine = engine_of(server, name)
            for batch in (1, run.args.batch):
                feeds = run.batches(batch)
                row = [transport.prepare(name, f, [gpu.OUTPUT]) for f in feeds]
                variant = ROWS[name] if batch == 1 else f"{ROWS[name]}-b{batch}"
                if engine.calibration_model is not None:
                    cal = [transport.prepare(engine.calibration_model, f, [gpu.OUTPUT]) for f in feeds]
                    engine = engine.with_call(cycle([_sender(transport, p) for p in cal]))
                result = bench.measure(
                    variant,
                    cycle([_sender(transport, p) for p in row]),
                    batch_size=batch,
                    warmup=10,
                    served_by=ServedBy(url, name),
                    engine=engine,
                )
                data = result.as_dict()
                data.pop("samples_ms", None)
                rows[variant] = data
                cal_text = result.calibration.describe() if result.calibration else result.calibration_missing
                p50 = result.latency.p50_ms if result.latency else float("nan")
                print(f"calibration {variant}: p50 {p50:.3f} ms, path {result.path}; {cal_text}", flush=True)
    finally:
        transport.close()
        factory.stop_all()
        gpu.cleanup(run, "calibration")
    lines = table_lines(bench.results)
    write_report(bench.results, run.work / "calibration-report")
    run.state["calibration"] = {"hardware": hardware, "rows": rows, "table": lines}


def report_lines(state: dict[str, Any]) -> list[str]:
    """The phase's section: the plugin's own table and notes, then each row's calibration share."""
    section = state.get("calibration")
    if not section:
        return []
    lines = [
        "## The adapter's cost, calibrated in the same run (the plugin's report)",
        "",
        "Each row is served through the python-backend ONNX Runtime adapter; its calibration is a no-work model",
        "of the same I/O through the same adapter on the same server, measured in alternating windows with it",
        "(hand-over and transport). Triton's native onnxruntime backend does not pay the hand-over.",
        "",
        "```",
        *section["table"],
        "```",
        "",
        "| row | path | p50 ms | calibration p50 ms | calibration / row | calibration's server infer µs | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for variant, row in section["rows"].items():
        cal = row.get("calibration") or {}
        latency = row.get("latency") or {}
        infer = cal.get("server_infer_us")
        lines.append(
            f"| {variant} | {row['path']} | {latency.get('p50_ms', float('nan')):.3f} "
            f"| {cal.get('p50_ms', float('nan')):.3f} | {cal.get('share', float('nan')):.2f} "
            f"| {'-' if infer is None else f'{infer:.0f}'} | {row['verdict']['status'].upper()} |"
        )
    return [*lines, ""]
