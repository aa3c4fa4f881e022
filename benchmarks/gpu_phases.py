"""More phases of benchmarks.gpu_mdeberta: the plugin against perf_analyzer (fidelity), the b=8 fp16
settings sweep, a static batch shape and CUDA graphs, ONNX Runtime's thread count at b=1, and the provider
proof (a requested CUDA provider that cannot start is a load error)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import fidelity
from benchmarks import gpu_common as gpu
from benchmarks import perf_analyzer
from benchmarks.common import ROOT
from benchmarks.common import cycle
from pytest_triton.repository import RepositoryBuilder
from pytest_triton.repository.ort_placement import placement
from pytest_triton.servers.factory import ServerFactory
from pytest_triton.servers.protocol import ServeOptions

PROOF_MARK = "PROOF-RESULT "

SWEEP: list[tuple[str, str, dict[str, Any], Callable[[Any], None] | None]] = [  # name, what, keywords, edit
    ("fp16_default", "the adapter's defaults (ORT_ENABLE_ALL, 1 instance, no dynamic batching)", {}, None),
    ("fp16_level_extended", "optimization { graph { level: 1 } } (ORT_ENABLE_EXTENDED)", {}, gpu.graph_level(1)),
    ("fp16_level_basic", "optimization { graph { level: -1 } } (ORT_ENABLE_BASIC)", {}, gpu.graph_level(-1)),
    ("fp16_instances2", "instance_group count 2", {"instance_count": 2}, None),
    (
        "fp16_dynamic",
        "dynamic_batching (delay 0), max_batch_size 32",
        {"max_batch_size": 32, "max_queue_delay_microseconds": 0},
        None,
    ),
    (
        "fp16_instances2_dynamic",
        "count 2 + dynamic batching, max_batch_size 32",
        {"instance_count": 2, "max_batch_size": 32, "max_queue_delay_microseconds": 0},
        None,
    ),
    (
        "fp16_gpu_output",
        "pytest_triton_output_device=cuda (logits left on the GPU for Triton)",
        {},
        gpu.params(pytest_triton_output_device="cuda"),
    ),
]


def _served_rows(run: Any, url: str, names: list[str], batch: int) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    request = run.batches(batch, count=1)[0]
    for name in names:
        try:
            row = gpu.served_latency(run, url, name, batch, Path(run.work) / "adapter-timings.txt")
            row["concurrency"] = {
                str(c): gpu.concurrent_throughput(url, name, request, c, run.args.sweep_seconds) for c in (1, 2, 4)
            }
        except Exception as exc:  # one model's failure is its row
            row = {"error": f"{type(exc).__name__}: {str(exc)[:1500]}"}
        rows[name] = row
        shown = {k: v for k, v in row.items() if k in ("p50_ms", "samples_per_s", "concurrency", "error")}
        print(f"static {name}: {shown}")
    return rows


def phase_static(run: Any) -> None:
    import onnxruntime as ort

    batch = run.args.batch
    path = gpu.static_model(run, batch)
    run.files["fp16_static"] = path
    device = "cpu" if run.args.cpu else "cuda"
    feeds = run.batches(batch)
    result: dict[str, Any] = {"batch": batch, "file": path.name}
    result["placement"] = placement(path, run.providers, name=path.name).to_json()
    print(f"static placement: {result['placement']['by_provider']}, memcpy {result['placement']['memcpy_nodes']}")
    session = ort.InferenceSession(str(path), providers=run.providers)
    result["inprocess"] = {
        "run": gpu.latency(run, cycle([gpu.run_call(session, f) for f in feeds]), batch),
        "gpu_resident": gpu.latency(run, cycle([gpu.resident_call(ort, session, f, device) for f in feeds]), batch),
    }
    expected = session.run([gpu.OUTPUT], feeds[0])[0]
    del session
    if not run.args.cpu:
        try:
            graphs = [("CUDAExecutionProvider", {"enable_cuda_graph": "1"}), "CPUExecutionProvider"]
            session = ort.InferenceSession(str(path), providers=graphs)
            call, output = gpu.graph_call(ort, session, feeds[0], device)
            result["inprocess"]["cuda_graph"] = gpu.latency(run, call, batch)
            call()
            got = output.numpy()  # a graph replay's output against the plain session's
            result["inprocess"]["cuda_graph_max_abs_diff"] = float(np.abs(got - expected).max())
            del session
        except Exception as exc:  # ONNX Runtime refuses graphs while nodes run elsewhere: that is the result
            result["inprocess"]["cuda_graph_error"] = f"{type(exc).__name__}: {str(exc)[:1500]}"
    print(f"static in-process: {result['inprocess']}")
    models: list[gpu.Model] = [
        ("static8", "fp16_static", {}, None),
        ("static8_persistent", "fp16_static", {}, gpu.params(pytest_triton_persistent_io="1")),
    ]
    factory, server = gpu.serve(run, "static", models, strict=False)
    try:
        result["served"] = _served_rows(run, server.urls.http, [m[0] for m in models], batch)
    finally:
        factory.stop_all()
        gpu.cleanup(run, "static")
    if not run.args.cpu:
        graph_models = [
            ("static8_cuda_graph", "fp16_static", {}, gpu.cuda_graphs),
            ("static8_cuda_graph_x2", "fp16_static", {"instance_count": 2}, gpu.cuda_graphs),
        ]
        try:
            factory, server = gpu.serve(run, "static-graph", graph_models, strict=False)
        except Exception as exc:
            result["served_cuda_graph_error"] = f"{type(exc).__name__}: {str(exc)[:2000]}"
        else:
            try:
                result["served"].update(_served_rows(run, server.urls.http, [m[0] for m in graph_models], batch))
            finally:
                factory.stop_all()
        gpu.cleanup(run, "static-graph")
    run.state["static"] = result


def phase_static1(run: Any) -> None:
    """b=1 with the batch fixed to 1: does the served b=1 gap follow the graph's CPU nodes and Memcpy?"""
    import onnxruntime as ort

    result: dict[str, Any] = {"placement": {}, "inprocess": {}}
    models = []
    for dtype in ("fp32", "fp16"):
        path = gpu.static_model(run, 1, dtype)
        run.files[f"{dtype}_static1"] = path
        result["placement"][dtype] = placement(path, run.providers, name=path.name).to_json()
        session = ort.InferenceSession(str(path), providers=run.providers)
        row = gpu.latency(run, cycle([gpu.run_call(session, f) for f in run.batches(1)]), 1)
        result["inprocess"][dtype] = row
        print(f"static1 {dtype}: {result['placement'][dtype]['by_provider']}, in-process p50 {row['p50_ms']:.3f} ms")
        del session
        models.append((f"static1_{dtype}", f"{dtype}_static1", {"max_batch_size": 1}, None))
    timings = Path(run.work) / "adapter-timings.txt"
    factory, server = gpu.serve(run, "static1", models, env={gpu.TIMINGS_ENV: str(timings)}, strict=False)
    result["served"] = {}
    try:
        for name, _, _, _ in models:
            row = gpu.served_latency(run, server.urls.http, name, 1, timings)
            result["served"][name] = row
            print(f"static1 served {name}: p50 {row['p50_ms']:.3f} ms, server {row.get('server')}, {row['adapter']}")
    finally:
        factory.stop_all()
        gpu.cleanup(run, "static1")
    run.state["static1"] = result


def phase_threads(run: Any) -> None:
    """b=1 fp32, where the graph's CPU nodes weigh most: ONNX Runtime's intra-op thread count, both sides."""
    import onnxruntime as ort

    result: dict[str, Any] = {"inprocess": {}, "served": {}}
    feeds = run.batches(1)
    for threads in (1, 4, 0):
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        session = ort.InferenceSession(str(run.files["fp32"]), options, providers=run.providers)
        row = gpu.latency(run, cycle([gpu.run_call(session, f) for f in feeds]), 1)
        result["inprocess"][str(threads or "default")] = row
        print(f"threads in-process {threads or 'default'}: p50 {row['p50_ms']:.3f} ms")
        del session
    models: list[gpu.Model] = [
        (f"mdeberta_t{t}", "fp32", {}, gpu.params(intra_op_thread_count=str(t)) if t else None) for t in (1, 4, 0)
    ]
    timings = Path(run.work) / "adapter-timings.txt"
    factory, server = gpu.serve(run, "threads", models, env={gpu.TIMINGS_ENV: str(timings)})
    try:
        for name, _, _, _ in models:
            row = gpu.served_latency(run, server.urls.http, name, 1, timings)
            result["served"][name] = row
            print(f"threads served {name}: p50 {row['p50_ms']:.3f} ms, server {row.get('server')}, {row['adapter']}")
    finally:
        factory.stop_all()
        gpu.cleanup(run, "threads")
    run.state["threads"] = result


def phase_proof(run: Any) -> None:
    """Serve a KIND_GPU model from an onnxruntime whose CUDA provider library is missing: a load error."""
    from pytest_triton.repository.onnx_adapter import tensorrt_unavailable_reason

    result: dict[str, Any] = {"tensorrt": tensorrt_unavailable_reason() or "available"}
    if run.args.cpu:
        result["cuda_unavailable"] = {"run": False, "why": "CPU run: there is no CUDA provider to take away"}
        run.state["proof"] = result
        return
    import onnxruntime

    source = Path(onnxruntime.__file__).resolve().parent
    root = Path(run.work) / "ort-without-cuda"
    missing = "libonnxruntime_providers_cuda.so"
    if not (root / "onnxruntime").exists():  # hard links: the copy costs no space and realpath stays in it
        shutil.copytree(
            source, root / "onnxruntime", copy_function=_link_or_copy, ignore=shutil.ignore_patterns(missing)
        )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)}
    command = [
        sys.executable,
        "-m",
        "benchmarks.gpu_mdeberta",
        "--proof-child",
        "--models",
        str(run.args.models),
        "--work",
        str(run.work),
    ]
    started = time.monotonic()
    proc = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=400, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(PROOF_MARK)]
    outcome: dict[str, Any] = (
        json.loads(lines[-1][len(PROOF_MARK) :]) if lines else {"child_output": proc.stdout[-2000:]}
    )
    outcome.update(run=True, seconds=round(time.monotonic() - started, 1), removed=f"{source}/capi/{missing}")
    outcome["proved"] = outcome.get("loaded") is False and "refusing to fall back" in str(outcome.get("error"))
    print(f"proof: {outcome}")
    result["cuda_unavailable"] = outcome
    run.state["proof"] = result


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system
        shutil.copy2(src, dst)


def proof_child(args: argparse.Namespace) -> int:
    """In the child (PYTHONPATH starts with the copy lacking the CUDA provider): start a KIND_GPU model."""
    import onnxruntime

    tiny = ROOT / "model_repos" / "assets" / "tiny-mdeberta" / "model.onnx"
    work = Path(args.work)
    outcome: dict[str, Any] = {
        "onnxruntime": os.path.dirname(onnxruntime.__file__),
        "listed_providers": onnxruntime.get_available_providers(),
    }
    builder = RepositoryBuilder(work / "repo-proof").add_onnx(
        "mdeberta", tiny, max_batch_size=8, instance_kind="KIND_GPU"
    )
    factory = ServerFactory("local", ServeOptions(gpu=True, startup_timeout=300, staging=work / "staging-proof"))
    started = time.monotonic()
    try:
        factory.start(builder.build())
        outcome.update(loaded=True, error=None)
    except Exception as exc:
        outcome.update(loaded=False, error_type=type(exc).__name__, error=str(exc)[:2500])
    finally:
        outcome["seconds_to_outcome"] = round(time.monotonic() - started, 1)
        prepared = [server.prepared for server in factory.servers if server.prepared is not None]
        outcome["adapted"] = [model.describe() for p in prepared for model in p.adapted]
        factory.stop_all()
    print(PROOF_MARK + json.dumps(outcome), flush=True)
    return 0


# -- fidelity: the plugin against perf_analyzer on the same server ----------------------------------------------


def phase_fidelity(run: gpu.Run) -> None:
    """The interleaved fidelity rounds (benchmarks.fidelity) on the full-size fp32 model, through the adapter."""
    binary = perf_analyzer.ensure_perf_analyzer(run.args.tool_dir)
    factory, server = gpu.serve(run, "fidelity", [("mdeberta", "fp32", {}, None)])
    url = server.urls.http
    adapted = [a.describe() for a in server.prepared.adapted] if server.prepared is not None else []
    try:
        rounds = fidelity.run_fidelity(
            url,
            "mdeberta",
            run.samples,
            binary=binary,
            workdir=run.work,
            rounds=max(5, run.args.rounds),
            window_ms=run.args.fidelity_window_ms,
        )
    finally:
        factory.stop_all()
        gpu.cleanup(run, "fidelity")
    run.state["fidelity"] = {
        "window_ms": run.args.fidelity_window_ms,
        "interleaved": True,
        "engine_path": adapted or ["native backend"],
        "rounds": [{k: vars(v) for k, v in r.items()} for r in rounds],
        "table": fidelity.table(rounds),
        "verdict": fidelity.verdict(rounds),
    }


# -- b=8 fp16 settings sweep ------------------------------------------------------------------------------------------


def phase_sweep(run: gpu.Run) -> None:
    models = [(name, "fp16", kwargs, edit) for name, _, kwargs, edit in SWEEP]
    factory, server = gpu.serve(run, "sweep", models)
    url = server.urls.http
    result: dict[str, Any] = {"settings": {}}
    request = run.batches(run.args.batch, count=1)[0]
    timings = run.work / "none.txt"
    try:
        for name, what, _, _ in SWEEP:
            try:
                row = gpu.served_latency(run, url, name, run.args.batch, timings)
            except Exception as exc:
                result.setdefault("failed", {})[name] = f"{type(exc).__name__}: {str(exc)[:1500]}"
                print(f"sweep {name} FAILED: {str(exc)[:500]}")
                continue
            row["concurrency"] = {
                str(c): gpu.concurrent_throughput(url, name, request, c, run.args.sweep_seconds) for c in (1, 2, 4)
            }
            row["what"] = what
            result["settings"][name] = row
            print(
                f"sweep {name}: b={run.args.batch} p50 {row['p50_ms']:.3f} ms, {row['samples_per_s']:.0f}/s; "
                f"concurrency {row['concurrency']}"
            )
    finally:
        factory.stop_all()
        gpu.cleanup(run, "sweep")
    result["cuda_graphs"] = _try_cuda_graphs(run)
    run.state["sweep"] = result


def _try_cuda_graphs(run: gpu.Run) -> dict[str, Any]:
    if run.args.cpu:
        return {"run": False, "why": "CPU run: CUDA graphs need the CUDA provider"}
    started = time.monotonic()
    try:
        factory, server = gpu.serve(run, "cudagraph", [("fp16_cuda_graph", "fp16", {}, gpu.cuda_graphs)])
    except Exception as exc:  # the load error is the result
        gpu.cleanup(run, "cudagraph")
        return {"run": True, "loaded": False, "seconds": time.monotonic() - started, "error": str(exc)[:1500]}
    try:
        row = gpu.served_latency(run, server.urls.http, "fp16_cuda_graph", run.args.batch, run.work / "none.txt")
    except Exception as exc:
        row = {"error": str(exc)[:1500]}
    finally:
        factory.stop_all()
    return {"run": True, "loaded": True, "seconds": time.monotonic() - started, **row}


def report_lines(state: dict[str, Any]) -> list[str]:
    """The fidelity phase's section: the interleaved rounds' table and verdict."""
    section = state.get("fidelity")
    if not section:
        return []
    title = "## Fidelity, interleaved: plugin, perf_analyzer, tritonclient.http (b=1, same server)"
    return [
        title,
        "",
        f"- engine path: {'; '.join(section.get('engine_path', []))}",
        "",
        *section["table"],
        "",
        *section["verdict"],
        "",
    ]
