"""Execution accelerator rules (A4xx): ``optimization { execution_accelerators { ... } }``.

The onnxruntime backend reads the block when it creates a session (``ModelState::LoadModel``
in onnxruntime_backend ``src/onnxruntime.cc``): GPU accelerators ("tensorrt", "cuda") only for
instances of kind GPU (or AUTO), CPU accelerators ("openvino") for every instance. An unknown
name, an unknown TensorRT parameter or a value it cannot parse fails the load with
INVALID_ARG; we quote those messages. The TensorRT engine cache rules carry a measurement
(mDeBERTa NLI on an A10G): without a persistent cache every cold start rebuilds the engine.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from typing import Any

from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.rules.ensemble import Path
from pytest_triton.lint.rules.ensemble import entry_path
from pytest_triton.lint.rules.family import Family
from pytest_triton.lint.rules.family import RuleTable
from pytest_triton.lint.rules.schema_common import normalized
from pytest_triton.lint.rules.step_io import ENSEMBLE_PLATFORM

# the ids of this family (its FAMILY below; the catalogue gathers it)
RULES: RuleTable = [
    ("A401", "error", "unknown execution accelerator for the onnxruntime backend"),
    ("A402", "error", "unknown TensorRT execution accelerator parameter"),
    ("A403", "error", "TensorRT execution accelerator parameter value is invalid"),
    ("A404", "warning", "TensorRT cache path is lost at every container restart"),
    ("A405", "warning", "TensorRT execution accelerator without an engine cache"),
    ("A406", "warning", "execution accelerators on a backend that ignores them"),
    ("A407", "warning", "GPU execution accelerators on a model with only CPU instances"),
    ("A408", "warning", "TensorRT parameter value is read only in part"),
    ("A409", "warning", "TensorRT accelerator on dynamic input shapes without explicit profiles"),
]

ACCELERATORS: Path = ("optimization", 0, "execution_accelerators", 0)
GPU_ACCELERATORS = ("tensorrt", "cuda")
CPU_ACCELERATORS = ("openvino",)
PRECISION_MODES = ("FP32", "FP16", "INT8")
# every key the onnxruntime backend's TensorRT branch accepts, and how it parses the value
TENSORRT_PARAMETERS = {
    "precision_mode": "precision",
    "max_workspace_size_bytes": "uint",
    "int8_calibration_table_name": "str",
    "int8_use_native_calibration_table": "bool",
    "trt_engine_cache_enable": "bool",
    "trt_engine_cache_path": "str",
    "trt_engine_cache_prefix": "str",
    "trt_max_partition_iterations": "int",
    "trt_min_subgraph_size": "int",
    "trt_dla_enable": "bool",
    "trt_dla_core": "int",
    "trt_dump_subgraphs": "bool",
    "trt_force_sequential_engine_build": "bool",
    "trt_context_memory_sharing_enable": "bool",
    "trt_layer_norm_fp32_fallback": "bool",
    "trt_timing_cache_enable": "bool",
    "trt_timing_cache_path": "str",
    "trt_force_timing_cache": "bool",
    "trt_detailed_build_log": "bool",
    "trt_build_heuristics_enable": "bool",
    "trt_sparsity_enable": "bool",
    "trt_builder_optimization_level": "int",
    "trt_auxiliary_streams": "int",
    "trt_tactic_sources": "str",
    "trt_extra_plugin_lib_paths": "str",
    "trt_profile_min_shapes": "str",
    "trt_profile_max_shapes": "str",
    "trt_profile_opt_shapes": "str",
    "trt_cuda_graph_enable": "bool",
    "trt_dump_ep_context_model": "bool",
    "trt_ep_context_file_path": "str",
    "trt_ep_context_embed_mode": "int",
}
CACHE_PATHS = ("trt_engine_cache_path", "trt_timing_cache_path")
PROFILES = ("trt_profile_min_shapes", "trt_profile_opt_shapes", "trt_profile_max_shapes")
# backend ParseBoolValue: case-insensitive
_TRUE = ("true", "on", "1")
_FALSE = ("false", "off", "0")
_VOLATILE = ("/tmp", "/var/tmp", "/dev/shm")
_INTEGER = re.compile(r"\s*[+-]?\d+")
_INT32 = (-(2**31), 2**31 - 1)
ENGINE_BUILD_COST = (
    "a first batch-1 call of mDeBERTa NLI with TensorRT FP16 took 47.7 s on an A10G while the engine was built, "
    "and a first batch-8 call more than 60 s, past SageMaker's 60 s invocation timeout"
)
KIND_AUTO, KIND_GPU = 0, 1


def gpu_instances_possible(config: Any) -> bool:
    """Whether some instance may be of kind GPU (no instance_group: Triton picks GPU when it has one)."""
    groups = config.instance_group
    return not len(groups) or any(g.kind in (KIND_AUTO, KIND_GPU) for g in groups)


def check_accelerators(model: ModelContext) -> None:
    config = model.config
    if not config.HasField("optimization") or config.platform == ENSEMBLE_PLATFORM:
        return  # an ensemble's optimization block is E303
    accelerators = config.optimization.execution_accelerators
    gpu, cpu = accelerators.gpu_execution_accelerator, accelerators.cpu_execution_accelerator
    if not len(gpu) and not len(cpu):
        return
    backend = normalized(model).backend
    if backend != "onnxruntime":
        if backend and backend != "tensorflow":  # tensorflow reads its own accelerator names
            message = f"optimization.execution_accelerators is ignored by the {backend} backend"
            hint = "only the onnxruntime (and tensorflow) backends read execution accelerators: remove the block"
            model.report("A406", message, hint, *ACCELERATORS)
        return
    on_gpu = gpu_instances_possible(config)
    if len(gpu) and not on_gpu:
        message = "gpu_execution_accelerator is ignored: no instance_group of this model is KIND_GPU"
        hint = "the onnxruntime backend adds GPU execution providers to KIND_GPU instances only"
        model.report("A407", message, hint, *ACCELERATORS, "gpu_execution_accelerator")
    for kind, entries, names in (("gpu", gpu, GPU_ACCELERATORS), ("cpu", cpu, CPU_ACCELERATORS)):
        for j, accelerator in enumerate(entries):
            path = (*ACCELERATORS, f"{kind}_execution_accelerator", j)
            if kind == "gpu" and not on_gpu:
                continue
            if accelerator.name == "tensorrt" and kind == "gpu":
                check_tensorrt(model, accelerator, path)
            elif accelerator.name not in names:
                _unknown_accelerator(model, kind, accelerator.name, path)


def _unknown_accelerator(model: ModelContext, kind: str, name: str, path: Path) -> None:
    other = "cpu" if kind == "gpu" else "gpu"
    if name in (CPU_ACCELERATORS if kind == "gpu" else GPU_ACCELERATORS):
        hint = f"{name!r} is a {other.upper()} accelerator: move it to {other}_execution_accelerator"
    else:
        hint = (
            f"the onnxruntime backend accepts {kind}_execution_accelerator names "
            f"{', '.join(repr(n) for n in (GPU_ACCELERATORS if kind == 'gpu' else CPU_ACCELERATORS))} "
            "(case-sensitive)"
        )
    model.report("A401", f"unknown Execution Accelerator '{name}' is requested", hint, *path, "name")


def check_tensorrt(model: ModelContext, accelerator: Any, path: Path) -> None:
    params = dict(accelerator.parameters)
    for key, value in params.items():
        where = entry_path(model, (*path, "parameters"), key=key)
        kind = TENSORRT_PARAMETERS.get(key)
        if kind is None:
            close = difflib.get_close_matches(key, TENSORRT_PARAMETERS, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(TENSORRT_PARAMETERS)}"
            message = f"unknown parameter '{key}' is provided for TensorRT Execution Accelerator"
            model.report("A402", message, hint, *where)
        elif kind == "precision":
            _check_precision(model, value, where)
        elif kind == "bool" and value.lower() not in _TRUE + _FALSE:
            hint = f"write {key} as 'true' or 'false'"
            model.report("A403", f"TensorRT parameter {key}: failed to convert '{value}' to boolean", hint, *where)
        elif kind in ("int", "uint"):
            _check_integer(model, key, kind, value, where)
        elif key in CACHE_PATHS:
            _check_cache_path(model, key, value, where)
    if params.get("trt_engine_cache_enable", "").lower() not in _TRUE:
        message = 'TensorRT accelerator without trt_engine_cache_enable "true": every cold start builds the engine'
        hint = (
            f'{ENGINE_BUILD_COST}; add parameters {{ key: "trt_engine_cache_enable" value: "true" }} and a '
            "trt_engine_cache_path on persistent storage"
        )
        where = entry_path(model, (*path, "parameters"), key="trt_engine_cache_enable")
        model.report("A405", message, hint, *(where if "trt_engine_cache_enable" in params else path))
    config = model.config
    dynamic = config.max_batch_size > 0 or any(
        -1 in (io.reshape.shape if io.HasField("reshape") else io.dims) for io in config.input
    )
    if dynamic and not any(key in params for key in PROFILES):
        message = (
            "TensorRT accelerator on dynamic input shapes without trt_profile_min/opt/max_shapes: ONNX Runtime "
            "builds the engine for the first request's shapes and again for each request outside them"
        )
        hint = (
            "on an A10G, mDeBERTa NLI's first batch-1 call took 47.7 s and its first batch-8 call more than 60 s "
            "while engines were built; set "
            f"{', '.join(PROFILES)} for every dynamic input, e.g. {_profile_example(config)}"
        )
        model.report("A409", message, hint, *path)


def _profile_example(config: Any) -> str:
    """trt_profile_min_shapes and _max_shapes for the config's inputs (N: the largest size served)."""
    batch = [int(config.max_batch_size)] if config.max_batch_size > 0 else []
    low, high = [], []
    for io in config.input:
        dims = [int(d) for d in (io.reshape.shape if io.HasField("reshape") else io.dims)]
        low.append(io.name + ":" + "x".join(str(d) for d in [1] * len(batch) + [1 if d == -1 else d for d in dims]))
        high.append(io.name + ":" + "x".join(str(d) for d in [*batch, *("N" if d == -1 else d for d in dims)]))
    return f"min '{','.join(low)}' and max '{','.join(high)}'"


def _check_precision(model: ModelContext, value: str, where: Path) -> None:
    if value in PRECISION_MODES:
        return
    if value.upper() == "BF16":
        hint = (
            "precision_mode BF16 came to the onnxruntime backend in 2025, with ONNX Runtime's trt_bf16_enable; "
            "Triton 2.51 refuses it: use FP16 or FP32"
        )
    elif value.upper() in PRECISION_MODES:
        hint = f"precision_mode is case-sensitive: write {value.upper()!r}"
    else:
        hint = f"use one of {', '.join(PRECISION_MODES)}"
    model.report("A403", f"unsupported precision mode '{value}' is requested", hint, *where)


def _check_integer(model: ModelContext, key: str, kind: str, value: str, where: Path) -> None:
    """The backend parses with std::stoi / std::stoull: a leading integer, the rest ignored."""
    match = _INTEGER.match(value)
    what = "unsigned long long integral number" if kind == "uint" else "integral number"
    if match is None:
        hint = f"{key} takes an integer"
        model.report("A403", f"TensorRT parameter {key}: failed to convert '{value}' to {what}", hint, *where)
        return
    number = int(match.group())
    if kind == "int" and not _INT32[0] <= number <= _INT32[1]:
        hint = "std::stoi throws out_of_range, which the backend does not catch"
        model.report("A403", f"TensorRT parameter {key}: '{value}' does not fit a 32-bit int", hint, *where)
    elif kind == "uint" and number < 0:
        message = f"TensorRT parameter {key}: '{value}' wraps around to {number % 2**64} (std::stoull)"
        model.report("A408", message, "write a non-negative number of bytes", *where)
    elif value[match.end() :].strip():
        message = f"TensorRT parameter {key}: '{value}' is read as {number}, the rest is ignored"
        hint = "write the whole value as digits" + (" (1 GiB is 1073741824)" if kind == "uint" else "")
        model.report("A408", message, hint, *where)


def _check_cache_path(model: ModelContext, key: str, value: str, where: Path) -> None:
    path = posixpath.normpath(value) if value else ""
    root = next((r for r in _VOLATILE if path == r or path.startswith(r + "/")), None)
    if root is None:
        return
    message = f"{key} {value!r} is under {root}: lost at every container restart, so each cold start rebuilds"
    hint = f"{ENGINE_BUILD_COST}; put the cache on a persistent volume mounted into the container"
    model.report("A404", f"{message} the TensorRT engine", hint, *where)


FAMILY = Family(
    "A",
    "execution accelerators",
    RULES,
    model_checks=[check_accelerators],
)
