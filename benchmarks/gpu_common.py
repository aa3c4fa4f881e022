"""What the GPU phases share (benchmarks.gpu_mdeberta and the phase modules): the run's state, latency rows, the
served model's repository and server, Triton's split and the adapter's own timings, the floor of a model.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import shutil
import statistics
import threading
import time
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.common import cycle
from benchmarks.common import tokenized_samples
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import measure
from pytest_triton.bench.server_stats import StatsSnapshot
from pytest_triton.bench.server_stats import fetch_statistics
from pytest_triton.bench.server_stats import stats_delta
from pytest_triton.client.transports import TritonHttpTransport
from pytest_triton.config import read_config
from pytest_triton.config import write_config
from pytest_triton.repository import RepositoryBuilder
from pytest_triton.servers.factory import ServerFactory
from pytest_triton.servers.protocol import ServeOptions

TIMINGS_ENV = "PYTEST_TRITON_ADAPTER_TIMINGS"
OUTPUT = "logits"
INPUTS = ("input_ids", "attention_mask")
Model = tuple[str, str, dict[str, Any], Callable[[Any], None] | None]
"""A served model: (name, dtype "fp32" or "fp16", RepositoryBuilder.add_onnx keywords, a config edit or None)."""

PEAK_TFLOPS = {"fp16": 790.0, "fp32": 395.0}

HBM_TBPS = 4.3

GOAL_SAMPLES_PER_S = 1850.0


class Run:
    """The run's options, its request data and its state (saved after every phase)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work: Path = args.work
        self.work.mkdir(parents=True, exist_ok=True)
        self.state_path = self.work / "state.json"
        self.state: dict[str, Any] = (
            json.loads(self.state_path.read_text(encoding="utf-8")) if self.state_path.exists() else {}
        )
        self.gpu = not args.cpu
        self.providers = ["CPUExecutionProvider"] if args.cpu else ["CUDAExecutionProvider", "CPUExecutionProvider"]
        self.kind = "KIND_CPU" if args.cpu else "KIND_GPU"
        self.samples = tokenized_samples(args.tokenizer, args.samples)
        self.files = {"fp32": args.models / "model.onnx", "fp16": args.models / "model_fp16.onnx"}

    def save(self) -> None:
        self.state_path.write_text(json.dumps(self.state, indent=2, default=str), encoding="utf-8")

    def batches(self, batch: int, count: int = 3) -> list[dict[str, NDArray[Any]]]:
        """``count`` distinct requests of ``batch`` tokenized samples each (cycled through the sample set)."""
        rows = itertools.cycle(self.samples)
        out = []
        for _ in range(count):
            chosen = [next(rows) for _ in range(batch)]
            out.append({name: np.concatenate([r[name] for r in chosen]) for name in INPUTS})
        return out

    def policy(self) -> WindowPolicy:
        return WindowPolicy(
            mode="time", window_ms=self.args.window_ms, threshold=0.10, stable_windows=3, max_windows=8, max_seconds=40
        )


def latency(
    run: Run, call: Callable[[], object], batch: int, on_boundary: Callable[[], object] | None = None
) -> dict[str, Any]:
    m = measure(call, batch_size=batch, warmup=10, policy=run.policy(), on_boundary=on_boundary)
    s = m.stats()
    return {
        "p50_ms": s.p50_ms,
        "p90_ms": s.p90_ms,
        "p99_ms": s.p99_ms,
        "mean_ms": s.mean_ms,
        "samples_per_s": s.samples_per_s,
        "count": s.count,
        "stable": m.stable,
        "windows": len(m.windows),
    }


def run_call(session: Any, feeds: dict[str, NDArray[Any]]) -> Callable[[], object]:
    return lambda: session.run([OUTPUT], feeds)


def bound_call(session: Any, feeds: dict[str, NDArray[Any]], output_device: str) -> Callable[[], object]:
    """What the adapter does per request: a fresh binding, CPU inputs, outputs bound to ``output_device``."""

    def call() -> object:
        binding = session.io_binding()
        for name, value in feeds.items():
            binding.bind_cpu_input(name, value)
        binding.bind_output(OUTPUT, output_device)
        session.run_with_iobinding(binding)
        return binding.copy_outputs_to_cpu()

    return call


def resident_call(ort: Any, session: Any, feeds: dict[str, NDArray[Any]], device: str) -> Callable[[], object]:
    """Inputs copied to the device once and the output left there: ONNX Runtime's own ceiling."""
    binding = session.io_binding()
    for name, value in feeds.items():
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(value, device, 0))
    binding.bind_output(OUTPUT, device)

    def call() -> object:
        session.run_with_iobinding(binding)
        return None

    return call


def add_model(builder: RepositoryBuilder, run: Run, name: str, dtype: str, **kwargs: Any) -> None:
    builder.add_onnx(
        name, run.files[dtype], max_batch_size=kwargs.pop("max_batch_size", 8), instance_kind=run.kind, **kwargs
    )


def edit_config(repo: Path, name: str, edit: Callable[[Any], None]) -> None:
    """Change a built model's config.pbtxt the way a user would (parameters, optimization, accelerators)."""
    path = repo / name / "config.pbtxt"
    config = read_config(path).message
    edit(config)
    write_config(config, path)


def params(**values: str) -> Callable[[Any], None]:
    def edit(config: Any) -> None:
        for key, value in values.items():
            config.parameters[key].string_value = value

    return edit


def graph_level(level: int) -> Callable[[Any], None]:
    def edit(config: Any) -> None:
        config.optimization.graph.level = level

    return edit


def cuda_graphs(config: Any) -> None:
    accel = config.optimization.execution_accelerators.gpu_execution_accelerator.add(name="cuda")
    accel.parameters["enable_cuda_graph"] = "1"


def serve(
    run: Run,
    label: str,
    models: Sequence[Model],
    env: dict[str, str] | None = None,
    *,
    strict: bool = True,
) -> tuple[ServerFactory, Any]:
    builder = RepositoryBuilder(run.work / f"repo-{label}")
    for name, dtype, kwargs, _ in models:
        add_model(builder, run, name, dtype, **kwargs)
    repo = builder.build(strict=strict)  # strict=False: a static batch dim is a lint error, served anyway
    for name, _, _, edit in models:
        if edit is not None:
            edit_config(repo, name, edit)
    options = ServeOptions(gpu=run.gpu, startup_timeout=900, staging=run.work / f"staging-{label}")
    factory = ServerFactory("local", options)
    started = time.monotonic()
    server = factory.start(repo, env=env)
    print(f"server {label}: {len(models)} models ready in {time.monotonic() - started:.1f} s at {server.urls.http}")
    return factory, server


def adapter_timings(path: Path, model: str, batch: int, skip: int) -> dict[str, float]:
    lines = path.read_text(encoding="utf-8").splitlines()[skip:] if path.exists() else []
    rows = [line.split() for line in lines]
    run_us = [float(r[2]) for r in rows if r[0] == model and int(r[1]) == batch]
    total_us = [float(r[3]) for r in rows if r[0] == model and int(r[1]) == batch]
    if not run_us:
        return {}
    return {
        "executes": len(run_us),
        "session_run_ms": statistics.median(run_us) / 1e3,
        "execute_ms": statistics.median(total_us) / 1e3,
    }


def served_latency(run: Run, url: str, model: str, batch: int, timings: Path) -> dict[str, Any]:
    """The plugin's measurement (prepared requests, time windows) with Triton's split of the kept windows."""
    transport = TritonHttpTransport(url)
    try:
        prepared = [transport.prepare(model, f, [OUTPUT]) for f in run.batches(batch)]
        calls = [functools.partial(transport.send, p) for p in prepared]
        snapshots: list[StatsSnapshot] = []
        skip = len(timings.read_text(encoding="utf-8").splitlines()) if timings.exists() else 0
        row = latency(run, cycle(calls), batch, on_boundary=lambda: snapshots.append(fetch_statistics(url, model)))
        split = stats_delta(snapshots[-4], snapshots[-1], models=[model]).for_model(model)
        if split is not None:
            row["server"] = {
                k: getattr(split, k)
                for k in (
                    "requests",
                    "executions",
                    "queue_us",
                    "compute_input_us",
                    "compute_infer_us",
                    "compute_output_us",
                    "request_us",
                )
            }
        row["adapter"] = adapter_timings(timings, model, batch, skip)
    finally:
        transport.close()
    return row


def concurrent_throughput(
    url: str, model: str, request: dict[str, NDArray[Any]], concurrency: int, seconds: float
) -> float:
    """Samples/s of ``concurrency`` clients sending the prepared ``request`` back to back for ``seconds``."""
    counts = [0] * concurrency
    batch = int(request[INPUTS[0]].shape[0])
    warmed, go = threading.Barrier(concurrency + 1), threading.Barrier(concurrency + 1)
    deadline: list[float] = []

    def client(index: int) -> None:
        transport = TritonHttpTransport(url)
        try:
            prepared = transport.prepare(model, request, [OUTPUT])
            for _ in range(3):
                transport.send(prepared)
        finally:
            warmed.wait()
        go.wait()
        try:
            while time.perf_counter() < deadline[0]:
                transport.send(prepared)
                counts[index] += 1
        finally:
            transport.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(concurrency)]
    for t in threads:
        t.start()
    warmed.wait()
    began = time.perf_counter()
    deadline.append(began + seconds)
    go.wait()
    for t in threads:
        t.join(timeout=seconds + 120)
    return sum(counts) * batch / (time.perf_counter() - began)


def cleanup(run: Run, label: str) -> None:
    for folder in (run.work / f"repo-{label}", run.work / f"staging-{label}"):
        shutil.rmtree(folder, ignore_errors=True)


def static_model(run: Any, batch: int, dtype: str = "fp16") -> Path:
    """The model with its symbolic batch fixed to ``batch`` (ONNX Runtime can then fold shape arithmetic)."""
    import onnx
    from onnxruntime.tools.onnx_model_utils import fix_output_shapes
    from onnxruntime.tools.onnx_model_utils import make_dim_param_fixed

    dest = Path(run.work) / f"model_{dtype}_b{batch}.onnx"
    if not dest.exists():
        model = onnx.load(str(run.files[dtype]))
        make_dim_param_fixed(model.graph, "batch", batch)
        fix_output_shapes(model)
        onnx.save(model, str(dest))
    return dest


def graph_call(ort: Any, session: Any, feeds: dict[str, NDArray[Any]], device: str) -> tuple[Callable[[], object], Any]:
    """Inputs and the output at fixed device addresses, bound once (what CUDA graphs need); the output too."""
    binding = session.io_binding()
    for name, value in feeds.items():
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(value, device, 0))
    rows = int(next(iter(feeds.values())).shape[0])
    output = ort.OrtValue.ortvalue_from_shape_and_type([rows, 3], np.float32, device, 0)
    binding.bind_ortvalue_output(OUTPUT, output)

    def call() -> object:
        session.run_with_iobinding(binding)
        return None

    return call, output


def floor(build: dict[str, Any], dtype: str, batch: int) -> dict[str, float]:
    flops = build["flops_per_sequence"]["total"] * batch
    weight_bytes = build["weight_bytes_read_per_forward_fp32"] / (1 if dtype == "fp32" else 2)
    compute_ms = flops / (PEAK_TFLOPS[dtype] * 1e12) * 1e3
    memory_ms = weight_bytes / (HBM_TBPS * 1e12) * 1e3
    ms = max(compute_ms, memory_ms)
    return {"compute_ms": compute_ms, "memory_ms": memory_ms, "floor_ms": ms, "samples_per_s": batch / ms * 1e3}
