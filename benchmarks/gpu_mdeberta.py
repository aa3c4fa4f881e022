"""A full-size mDeBERTa on a GPU, measured as a user of the plugin would: floor, in-process ONNX Runtime,
served through the plugin's launcher and adapter, fidelity against perf_analyzer, placement, a b=8 fp16
settings sweep and the provider proof. Not a timed test: a script that prints and writes a report.

    python benchmarks/gpu_mdeberta.py --models DIR --work DIR --out DIR [--phases ...] [--cpu]

``--models`` holds ``model.onnx``, ``model_fp16.onnx`` and ``build.json`` from ``gpu_build_mdeberta.py``.
Phases (default: all, in this order): inprocess, served, fidelity, sweep, static, static1, threads, duty,
fusion, proof, report (fidelity, sweep, static, static1, threads and proof are in ``gpu_phases.py``, duty in
``gpu_duty.py``, fusion in ``gpu_fusion.py``). Every phase adds to ``WORK/state.json``, so a run can be split
over several calls; ``report`` writes ``gpu-mdeberta.md`` and ``gpu-mdeberta.json`` under ``--out``. ``--cpu`` runs
everything on the CPU provider (to test the script with the tiny model on a machine without a GPU); its
numbers mean nothing for a GPU.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fidelity
import gpu_report

from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import measure
from pytest_triton.bench.server_stats import StatsSnapshot
from pytest_triton.bench.server_stats import fetch_statistics
from pytest_triton.bench.server_stats import stats_delta
from pytest_triton.client.transports import TritonHttpTransport
from pytest_triton.config import read_config
from pytest_triton.config import write_config
from pytest_triton.repository import RepositoryBuilder
from pytest_triton.repository.ort_placement import placement
from pytest_triton.servers.base import ServeOptions
from pytest_triton.servers.factory import ServerFactory

ROOT = Path(__file__).resolve().parent.parent
PHASES = (
    "inprocess",
    "served",
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
TIMINGS_ENV = "PYTEST_TRITON_ADAPTER_TIMINGS"
OUTPUT = "logits"
INPUTS = ("input_ids", "attention_mask")


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
        self.samples = fidelity.tokenized_samples(args.tokenizer, args.samples)
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


def _cycle(calls: Sequence[Callable[[], object]]) -> Callable[[], object]:
    it = itertools.cycle(calls)
    return lambda: next(it)()


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
                row["run"] = latency(run, _cycle([_run_call(session, f) for f in feeds]), batch)
                row["iobinding_cpu_inputs"] = latency(
                    run, _cycle([_bound_call(session, f, "cpu") for f in feeds]), batch
                )
            row["gpu_resident"] = latency(run, _cycle([_resident_call(ort, session, f, device) for f in feeds]), batch)
            result["variants"][f"{dtype}_b{batch}"] = row
            print(
                f"in-process {dtype} b={batch}: " + ", ".join(f"{k} p50 {v['p50_ms']:.3f} ms" for k, v in row.items())
            )
        probe = run.batches(big, count=max(1, 64 // big))
        logits[dtype] = np.concatenate([session.run([OUTPUT], f)[0] for f in probe])
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


def _run_call(session: Any, feeds: dict[str, NDArray[Any]]) -> Callable[[], object]:
    return lambda: session.run([OUTPUT], feeds)


def _bound_call(session: Any, feeds: dict[str, NDArray[Any]], output_device: str) -> Callable[[], object]:
    """What the adapter does per request: a fresh binding, CPU inputs, outputs bound to ``output_device``."""

    def call() -> object:
        binding = session.io_binding()
        for name, value in feeds.items():
            binding.bind_cpu_input(name, value)
        binding.bind_output(OUTPUT, output_device)
        session.run_with_iobinding(binding)
        return binding.copy_outputs_to_cpu()

    return call


def _resident_call(ort: Any, session: Any, feeds: dict[str, NDArray[Any]], device: str) -> Callable[[], object]:
    """Inputs copied to the device once and the output left there: ONNX Runtime's own ceiling."""
    binding = session.io_binding()
    for name, value in feeds.items():
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(value, device, 0))
    binding.bind_output(OUTPUT, device)

    def call() -> object:
        session.run_with_iobinding(binding)
        return None

    return call


# -- served through the plugin ---------------------------------------------------------------------------------


def _add(builder: RepositoryBuilder, run: Run, name: str, dtype: str, **kwargs: Any) -> None:
    builder.add_onnx(
        name, run.files[dtype], max_batch_size=kwargs.pop("max_batch_size", 8), instance_kind=run.kind, **kwargs
    )


def _edit(repo: Path, name: str, edit: Callable[[Any], None]) -> None:
    """Change a built model's config.pbtxt the way a user would (parameters, optimization, accelerators)."""
    path = repo / name / "config.pbtxt"
    config = read_config(path).message
    edit(config)
    write_config(config, path)


def _params(**values: str) -> Callable[[Any], None]:
    def edit(config: Any) -> None:
        for key, value in values.items():
            config.parameters[key].string_value = value

    return edit


def _graph_level(level: int) -> Callable[[Any], None]:
    def edit(config: Any) -> None:
        config.optimization.graph.level = level

    return edit


def _cuda_graphs(config: Any) -> None:
    accel = config.optimization.execution_accelerators.gpu_execution_accelerator.add(name="cuda")
    accel.parameters["enable_cuda_graph"] = "1"


def _serve(
    run: Run,
    label: str,
    models: list[tuple[str, str, dict[str, Any], Callable[[Any], None] | None]],
    env: dict[str, str] | None = None,
    *,
    strict: bool = True,
) -> tuple[ServerFactory, Any]:
    builder = RepositoryBuilder(run.work / f"repo-{label}")
    for name, dtype, kwargs, _ in models:
        _add(builder, run, name, dtype, **kwargs)
    repo = builder.build(strict=strict)  # strict=False: a static batch dim is a lint error, served anyway
    for name, _, _, edit in models:
        if edit is not None:
            _edit(repo, name, edit)
    options = ServeOptions(gpu=run.gpu, startup_timeout=900, staging=run.work / f"staging-{label}")
    factory = ServerFactory("local", options)
    started = time.monotonic()
    server = factory.start(repo, env=env)
    print(f"server {label}: {len(models)} models ready in {time.monotonic() - started:.1f} s at {server.urls.http}")
    return factory, server


def _timings(path: Path, model: str, batch: int, skip: int) -> dict[str, float]:
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
        row = latency(run, _cycle(calls), batch, on_boundary=lambda: snapshots.append(fetch_statistics(url, model)))
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
        row["adapter"] = _timings(timings, model, batch, skip)
    finally:
        transport.close()
    return row


def phase_served(run: Run) -> None:
    timings = run.work / "adapter-timings.txt"
    models: list[tuple[str, str, dict[str, Any], Callable[[Any], None] | None]] = [
        ("mdeberta", "fp32", {}, None),
        ("mdeberta_fp16", "fp16", {}, None),
        ("mdeberta_q1000", "fp32", {"max_queue_delay_microseconds": 1000}, None),
        ("mdeberta_gpuout", "fp32", {}, _params(pytest_triton_output_device="cuda")),
    ]
    factory, server = _serve(run, "served", models, env={TIMINGS_ENV: str(timings)})
    adapted = server.prepared.adapted if server.prepared is not None else ()
    result: dict[str, Any] = {"adapted": [a.describe() for a in adapted], "models": {}}
    try:
        for name, dtype, _, _ in models:
            for batch in (1, run.args.batch):
                try:
                    row = served_latency(run, server.urls.http, name, batch, timings)
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
        _cleanup(run, "served")
    run.state["served"] = result


# -- b=8 fp16 settings sweep --------------------------------------------------------------------------------------


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


def _cleanup(run: Run, label: str) -> None:
    for folder in (run.work / f"repo-{label}", run.work / f"staging-{label}"):
        shutil.rmtree(folder, ignore_errors=True)


SWEEP: list[tuple[str, str, dict[str, Any], Callable[[Any], None] | None]] = [
    ("fp16_default", "the adapter's defaults (ORT_ENABLE_ALL, 1 instance, no dynamic batching)", {}, None),
    ("fp16_level_extended", "optimization { graph { level: 1 } } (ORT_ENABLE_EXTENDED)", {}, _graph_level(1)),
    ("fp16_level_basic", "optimization { graph { level: -1 } } (ORT_ENABLE_BASIC)", {}, _graph_level(-1)),
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
        _params(pytest_triton_output_device="cuda"),
    ),
]


# -- main -----------------------------------------------------------------------------------------------------


def conditions(run: Run) -> dict[str, Any]:
    gpu = "none (--cpu)"
    if not run.args.cpu:
        query = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm", "--format=csv,noheader"]
        gpu = subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip()
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": gpu,
        "cpus": len(os.sched_getaffinity(0)),
        "cpu": fidelity._cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {
            d: fidelity._version(d)
            for d in ("onnxruntime-gpu", "onnxruntime", "nvidia-pytriton", "numpy", "tritonclient")
        },
        "build": json.loads((run.args.models / "build.json").read_text(encoding="utf-8")),
        "window_ms": run.args.window_ms,
        "command": " ".join(sys.argv),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--models", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--cpu", action="store_true", help="CPU provider and KIND_CPU (a test of the script)")
    parser.add_argument("--window-ms", type=float, default=1000.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fidelity-window-ms", type=float, default=1500.0)
    parser.add_argument("--batch", type=int, default=8, help="the throughput batch (default 8)")
    parser.add_argument("--ceiling-batch", type=int, default=32, help="in-process fp16 ceiling batch (default 32)")
    parser.add_argument("--sweep-seconds", type=float, default=3.0)
    parser.add_argument("--tool-dir", type=Path, default=fidelity.TOOL_DIR)
    parser.add_argument("--tokenizer", type=Path, default=ROOT / "model_repos/assets/tiny-mdeberta/tokenizer.json")
    parser.add_argument("--samples", type=Path, default=ROOT / "model_repos/samples/nli_samples.jsonl")
    parser.add_argument("--proof-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    import gpu_duty
    import gpu_fusion
    import gpu_phases

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
