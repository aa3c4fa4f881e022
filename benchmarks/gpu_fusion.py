"""The ``fusion`` phase of benchmarks.gpu_mdeberta: where one b=8 fp16 run's time goes, and what ONNX Runtime's
transformer optimizer (``onnxruntime.transformers.optimizer.optimize_model``) changes about it.

1. An op-time profile of the fp16 model with its batch fixed (``gpu.static_model``): ONNX Runtime's own
   profiler, ``PROFILE_WARM`` runs then ``PROFILE_RUNS`` profiled ones, node time summed per op type per run,
   against the p50 of an unprofiled session. Under the CUDA provider a node's time is the host's time in its
   ``Compute``: kernels are launched asynchronously, so a node is charged whatever the launch queue makes it
   wait for. On a GPU the profile is therefore taken twice: in-process as it is, and in a child process with
   ``CUDA_LAUNCH_BLOCKING=1``, where every launch waits for its kernel (device time per op, plus a launch cost).
2. ``optimize_model`` (model_type bert) on the fp32 export, its fused-operator statistics, then fp16 with the
   I/O kept fp32 and the batch fixed: ``WORK/model_fp16_fused_b8.onnx``.
3. Fused against unfused: placement, in-process p50 (and with CUDA graphs), parity against the fp32 logits,
   the same profile.
4. Both served side by side in one server, and with CUDA graphs in another: samples/s with 1, 2 and 4 clients.

    python -m benchmarks.gpu_fusion --profile-child MODEL FEEDS.npz OUT.json PROVIDER...   (used by step 1)
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections import defaultdict
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks import gpu_common as gpu
from benchmarks.common import ROOT
from benchmarks.common import cycle
from benchmarks.gpu_common import Model
from pytest_triton.repository.ort_placement import PlacementReport
from pytest_triton.repository.ort_placement import nodes_from_trace

PROFILE_WARM = 5
PROFILE_RUNS = 20
TOP_OPS = 15
# the python fusions only: at level 1 with use_gpu, ONNX Runtime writes its CUDA Memcpy nodes into the file
OPT_LEVELS = (0,)
CONCURRENCY = (1, 2, 4)
# an If/Loop/Scan node's time holds its subgraph's nodes, which the trace lists too: kept out of the sum
CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})
EXTERNAL_DATA_BYTES = 2**31 - 2**26  # protobuf's 2 GB limit, with room for the graph itself
Feeds = dict[str, NDArray[Any]]


# -- the profile trace (pure) -------------------------------------------------------------------------------------


def _node_name(event: Mapping[str, Any]) -> str:
    return str(event.get("name", "")).removesuffix("_kernel_time")


def runs_of(events: Sequence[Mapping[str, Any]]) -> tuple[list[float], list[list[Mapping[str, Any]]]]:
    """Each ``model_run`` of an ONNX Runtime trace: its duration (ms) and the node events that started in it."""
    spans = sorted(
        (int(e["ts"]), int(e["ts"]) + int(e["dur"]))
        for e in events
        if e.get("cat") == "Session" and e.get("name") == "model_run"
    )
    starts = [start for start, _ in spans]
    nodes: list[list[Mapping[str, Any]]] = [[] for _ in spans]
    for event in events:
        if event.get("cat") != "Node" or "op_name" not in (event.get("args") or {}):
            continue
        index = bisect.bisect_right(starts, int(event["ts"])) - 1
        if index >= 0 and int(event["ts"]) <= spans[index][1]:
            nodes[index].append(event)
    return [(end - start) / 1e3 for start, end in spans], nodes


def op_profile(events: Sequence[Mapping[str, Any]], skip: int = 0) -> dict[str, Any]:
    """Node time per op type, averaged over the runs after the first ``skip``: ms per run, share of the summed
    node time, distinct nodes; with the summed node time and the runs' own p50 to hold them against."""
    durations, runs = runs_of(events)
    kept = runs[skip:]
    if not kept:
        raise ValueError(f"the trace has {len(runs)} model_run events, none left after skip={skip}")
    spent: defaultdict[str, float] = defaultdict(float)
    per_run: list[float] = []
    names: defaultdict[str, set[str]] = defaultdict(set)
    providers: defaultdict[str, float] = defaultdict(float)
    for run in kept:
        per_run.append(0.0)
        for event in run:
            op = str(event["args"]["op_name"])
            names[op].add(_node_name(event))
            ms = float(event["dur"]) / 1e3
            if op in CONTROL_FLOW:
                continue
            spent[op] += ms
            per_run[-1] += ms
            providers[str(event["args"].get("provider", "?"))] += ms
    count = len(kept)
    total = sum(spent.values()) / count
    ops = {
        op: {"ms": ms / count, "share": ms / count / total if total else 0.0, "nodes": len(names[op])}
        for op, ms in sorted(spent.items(), key=lambda item: -item[1])
    }
    control = {op: len(names[op]) for op in CONTROL_FLOW if op in names}
    return {
        "runs": count,
        "model_run_p50_ms": statistics.median(durations[skip:]),
        "node_ms_per_run": total,
        "node_ms_per_run_p50": statistics.median(per_run),
        "nodes": sum(len(n) for op, n in names.items() if op not in CONTROL_FLOW),
        "control_flow_nodes": control,
        "by_provider_ms": {p: ms / count for p, ms in sorted(providers.items(), key=lambda item: -item[1])},
        "ops": ops,
    }


# -- profiling a session ----------------------------------------------------------------------------------------


def profile_model(
    path: Path, providers: Sequence[Any], feeds: Sequence[Feeds], warm: int = PROFILE_WARM, runs: int = PROFILE_RUNS
) -> dict[str, Any]:
    """``warm + runs`` runs of a profiled session; the op profile of the last ``runs`` and the trace's placement."""
    import onnxruntime as ort

    with tempfile.TemporaryDirectory(prefix="ort-fusion-profile-") as tmp:
        options = ort.SessionOptions()
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(tmp, "profile")
        session = ort.InferenceSession(str(path), options, providers=list(providers))
        for index in range(warm + runs):
            session.run([gpu.OUTPUT], feeds[index % len(feeds)])
        events = json.loads(Path(session.end_profiling()).read_text(encoding="utf-8"))
    result = op_profile(events, skip=warm)
    # device-side kernel events exist only in builds with CUDA profiling (not the release wheels): counted, so that
    # a build that has them shows it
    result["kernel_events"] = sum(1 for e in events if e.get("cat") == "Kernel")
    wanted = providers[0] if isinstance(providers[0], str) else str(providers[0][0])
    report = PlacementReport(path.name, wanted, tuple(session.get_providers()), nodes_from_trace(events))
    placed = report.to_json()
    placed["off_wanted_names"] = placed["off_wanted_names"][:50]
    result["placement"] = placed
    return result


def profile_blocking(run: Any, path: Path, feeds: Sequence[Feeds]) -> dict[str, Any]:
    """The same profile in a child process with ``CUDA_LAUNCH_BLOCKING=1`` (it must be set before CUDA starts)."""
    work = Path(run.work)
    feeds_file, out = work / "fusion-feeds.npz", work / f"fusion-profile-{path.stem}.json"
    np.savez(feeds_file, **{f"{name}__{i}": value for i, f in enumerate(feeds) for name, value in f.items()})
    command = [
        sys.executable,
        "-m",
        "benchmarks.gpu_fusion",
        "--profile-child",
        str(path),
        str(feeds_file),
        str(out),
        *run.providers,
    ]
    env = {**os.environ, "CUDA_LAUNCH_BLOCKING": "1"}
    proc = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=400, check=False)
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"profile child exit {proc.returncode}: {(proc.stdout + proc.stderr)[-1500:]}")
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    result.pop("placement", None)  # the same graph as the in-process profile's
    return result


def _profile_child(model: str, feeds_file: str, out: str, providers: list[str]) -> int:
    with np.load(feeds_file) as data:
        count = 1 + max(int(key.rsplit("__", 1)[1]) for key in data.files)
        feeds = [{name: data[f"{name}__{i}"] for name in gpu.INPUTS} for i in range(count)]
    result = profile_model(Path(model), providers, feeds)
    Path(out).write_text(json.dumps(result), encoding="utf-8")
    return 0


# -- step 2: optimize_model --------------------------------------------------------------------------------------


def fused_model(run: Any, batch: int, info: dict[str, Any]) -> Path | None:
    """optimize_model on the fp32 export, then fp16 (fp32 I/O) with the batch fixed; reused when already built.
    What it did goes into ``info`` as it goes (a later failure leaves the attempts recorded)."""
    dest = Path(run.work) / f"model_fp16_fused_b{batch}.onnx"
    meta = dest.with_suffix(".json")
    if dest.exists() and meta.exists():
        info.update(json.loads(meta.read_text(encoding="utf-8")), reused=str(dest))
        return dest
    config = json.loads((Path(run.args.models) / "build.json").read_text(encoding="utf-8"))["config"]
    info.update(
        model_type="bert",
        num_heads=config["num_attention_heads"],
        hidden_size=config["hidden_size"],
        use_gpu=run.gpu,
        attempts=[],
    )
    try:
        import onnx
        from onnxruntime.tools.onnx_model_utils import fix_output_shapes
        from onnxruntime.tools.onnx_model_utils import make_dim_param_fixed
        from onnxruntime.transformers.float16 import convert_float_to_float16
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model
    except ImportError as exc:  # e.g. onnx or sympy missing from the run's python: the reason is the result
        info["import_error"] = f"{type(exc).__name__}: {exc}"
        return None
    # symbolic shape inference (sympy) only removes casts and reshapes that change nothing; on the full-size
    # model it took most of 475 s on the H200 host (2026-12-01), more than a device call may run
    options = FusionOptions("bert")
    options.enable_shape_inference = False
    info["symbolic_shape_inference"] = False
    optimized = None
    for level in OPT_LEVELS:
        started = time.monotonic()
        try:
            optimized = optimize_model(
                str(run.files["fp32"]),
                model_type="bert",
                num_heads=info["num_heads"],
                hidden_size=info["hidden_size"],
                optimization_options=options,
                opt_level=level,
                use_gpu=run.gpu,
            )
        except Exception as exc:
            error = f"{type(exc).__name__}: {str(exc)[:1000]}"
            info["attempts"].append({"opt_level": level, "seconds": time.monotonic() - started, "error": error})
            print(f"fusion optimize_model opt_level={level} FAILED: {error[:300]}")
            continue
        stats = {k: int(v) for k, v in optimized.get_fused_operator_statistics().items()}
        info["attempts"].append({"opt_level": level, "seconds": time.monotonic() - started, "fused": stats})
        info["opt_level"] = level
        print(f"fusion optimize_model opt_level={level}: {time.monotonic() - started:.1f} s, fused {_nonzero(stats)}")
        break
    if optimized is None:
        return None
    started = time.monotonic()
    # the converter itself, without shape inference: ONNX's cannot type com.microsoft ops (SkipLayerNormalization)
    model = convert_float_to_float16(optimized.model, keep_io_types=True, disable_shape_infer=True)
    make_dim_param_fixed(model.graph, "batch", batch)
    try:
        fix_output_shapes(model)  # ONNX's shape inference: it cannot type com.microsoft ops, and need not
    except Exception as exc:
        info["output_shapes_left"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    info["batch_fixed"] = all(i.type.tensor_type.shape.dim[0].dim_value == batch for i in model.graph.input)
    info["graph_nodes"] = len(model.graph.node)
    info["graph_op_types"] = dict(Counter(n.op_type for n in model.graph.node).most_common())
    weights = sum(len(t.raw_data) for t in model.graph.initializer)
    info["external_data"] = weights > EXTERNAL_DATA_BYTES
    location = dest.name + ".data" if info["external_data"] else None
    onnx.save(model, str(dest), save_as_external_data=info["external_data"], location=location)
    info["fp16_and_save_seconds"] = time.monotonic() - started
    info["bytes"] = dest.stat().st_size
    meta.write_text(json.dumps(info, indent=2), encoding="utf-8")
    return dest


def _nonzero(stats: Mapping[str, int]) -> dict[str, int]:
    return {k: v for k, v in stats.items() if v}


# -- step 1 and 3: one model, in-process ------------------------------------------------------------------------


def _logits(session: Any, probe: Sequence[Feeds]) -> NDArray[Any]:
    return np.concatenate([session.run([gpu.OUTPUT], f)[0] for f in probe])


def _measure(
    run: Any, path: Path, feeds: Sequence[Feeds], probe: Sequence[Feeds], reference: NDArray[Any]
) -> dict[str, Any]:
    import onnx
    import onnxruntime as ort

    batch = run.args.batch
    row: dict[str, Any] = {"file": path.name}
    # what the file holds, against the profile's op types: what ONNX Runtime fuses itself when the session starts
    row["file_op_types"] = dict(Counter(n.op_type for n in onnx.load(str(path)).graph.node).most_common())
    session = ort.InferenceSession(str(path), providers=run.providers)
    row["inprocess"] = gpu.latency(run, cycle([gpu.run_call(session, f) for f in feeds]), batch)
    logits = _logits(session, probe)
    del session
    diff = np.abs(logits - reference)
    row["parity_vs_fp32"] = {
        "sequences": int(diff.shape[0]),
        "max_abs_logit_diff": float(diff.max()),
        "labels_equal": int((logits.argmax(1) == reference.argmax(1)).sum()),
    }
    if run.gpu:
        try:
            graphs = [("CUDAExecutionProvider", {"enable_cuda_graph": "1"}), "CPUExecutionProvider"]
            session = ort.InferenceSession(str(path), providers=graphs)
            call, _ = gpu.graph_call(ort, session, feeds[0], "cuda")
            row["inprocess_cuda_graph"] = gpu.latency(run, call, batch)
            del session
        except Exception as exc:  # a graph capture ONNX Runtime refuses is the result
            row["inprocess_cuda_graph"] = {"error": f"{type(exc).__name__}: {str(exc)[:1500]}"}
    profiles = {"inprocess": profile_model(path, run.providers, feeds)}
    row["placement"] = profiles["inprocess"].pop("placement")
    if run.gpu:
        try:
            profiles["launch_blocking"] = profile_blocking(run, path, feeds)
        except Exception as exc:
            profiles["launch_blocking"] = {"error": f"{type(exc).__name__}: {str(exc)[:1500]}"}
    row["profile"] = profiles
    return row


def _show(label: str, row: dict[str, Any]) -> None:
    p, ip = row["placement"], row["inprocess"]
    graph = row.get("inprocess_cuda_graph", {})
    graph_text = f", CUDA graphs p50 {graph['p50_ms']:.3f} ms" if "p50_ms" in graph else ""
    print(
        f"fusion {label}: {p['nodes']} nodes {p['by_provider']}, memcpy {p['memcpy_nodes']}; in-process p50 "
        f"{ip['p50_ms']:.3f} ms ({ip['samples_per_s']:.0f}/s){graph_text}; vs fp32 {row['parity_vs_fp32']}"
    )
    for mode, prof in row["profile"].items():
        if "error" in prof:
            print(f"fusion {label} profile {mode} FAILED: {prof['error'][:300]}")
            continue
        top = ", ".join(f"{op} {v['ms']:.2f}" for op, v in list(prof["ops"].items())[:6])
        print(
            f"fusion {label} profile {mode}: nodes {prof['node_ms_per_run']:.3f} ms/run, model_run p50 "
            f"{prof['model_run_p50_ms']:.3f} ms; top ms/run: {top}"
        )


# -- step 4: served side by side ----------------------------------------------------------------------------------


def _served(run: Any, label: str, models: list[Model]) -> dict[str, Any]:
    """Samples/s of each model per client count, the models alternating within each count (one server)."""
    try:
        factory, server = gpu.serve(run, label, models, strict=False)
    except Exception as exc:  # e.g. a CUDA-graph capture refused at load: recorded, not fatal
        gpu.cleanup(run, label)
        return {"error": f"{type(exc).__name__}: {str(exc)[:2000]}"}
    request = run.batches(run.args.batch, count=1)[0]
    rows: dict[str, Any] = {name: {} for name, _, _, _ in models}
    try:
        for clients in CONCURRENCY:
            for name in rows:
                rate = gpu.concurrent_throughput(server.urls.http, name, request, clients, run.args.sweep_seconds)
                rows[name][str(clients)] = rate
        for name, rates in rows.items():
            print(f"fusion served {name}: " + ", ".join(f"{r:.0f}/s with {c}" for c, r in rates.items()) + " clients")
    finally:
        factory.stop_all()
        gpu.cleanup(run, label)
    return {"samples_per_s": rows}


# -- the phase --------------------------------------------------------------------------------------------------


def _step(result: dict[str, Any], run: Any, name: str, work: Callable[[], Any]) -> Any:
    """Run one step; its failure is recorded under ``errors`` and the state saved either way."""
    try:
        return work()
    except Exception:
        result["errors"][name] = traceback.format_exc()[-3000:]
        print(f"fusion step {name} FAILED:\n{result['errors'][name]}", file=sys.stderr, flush=True)
        return None
    finally:
        run.save()


def phase_fusion(run: Any) -> None:
    import onnxruntime as ort

    batch = run.args.batch
    result: dict[str, Any] = {"batch": batch, "warm_runs": PROFILE_WARM, "profiled_runs": PROFILE_RUNS, "errors": {}}
    run.state["fusion"] = result
    feeds = run.batches(batch)
    probe = run.batches(batch, count=max(1, 64 // batch))
    reference_session = ort.InferenceSession(str(run.files["fp32"]), providers=run.providers)
    reference = _logits(reference_session, probe)
    del reference_session
    unfused = gpu.static_model(run, batch)
    run.files["fp16_static"] = unfused
    row = _step(result, run, "unfused", lambda: _measure(run, unfused, feeds, probe, reference))
    if row is not None:
        result["unfused"] = row
        _show("unfused", row)
    info = result["optimizer"] = {}
    fused = _step(result, run, "optimize", lambda: fused_model(run, batch, info))
    if fused is None:
        print(f"fusion: no fused model: {result['optimizer']}")
        return
    run.files["fp16_fused"] = fused
    row = _step(result, run, "fused", lambda: _measure(run, fused, feeds, probe, reference))
    if row is not None:
        result["fused"] = row
        _show("fused", row)
    plain: list[Model] = [("static8", "fp16_static", {}, None), ("fused8", "fp16_fused", {}, None)]
    served = result["served"] = {}
    served["plain"] = _step(result, run, "served", lambda: _served(run, "fusion", plain))
    if run.gpu:
        graphs: list[Model] = [(f"{name}_cuda_graph", dtype, {}, gpu.cuda_graphs) for name, dtype, _, _ in plain]
        served["cuda_graphs"] = _step(result, run, "served_cuda_graphs", lambda: _served(run, "fusion-graph", graphs))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the fusion phase's profile child (see the module docstring)")
    parser.add_argument("--profile-child", nargs=3, metavar=("MODEL", "FEEDS", "OUT"), required=True)
    parser.add_argument("providers", nargs="+")
    args = parser.parse_args(argv)
    model, feeds, out = args.profile_child
    return _profile_child(model, feeds, out, args.providers)


if __name__ == "__main__":
    raise SystemExit(main())
