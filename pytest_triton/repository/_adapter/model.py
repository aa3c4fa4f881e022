"""Python-backend model that serves an ONNX file with ONNX Runtime (the pytest-triton adapter).

Copied into each version folder of an ONNX model when the server has no onnxruntime backend.
It proves what it runs: onnxruntime is imported from the test process's environment (its
site folders are put first on sys.path), and a requested GPU provider that is not active
is a load error, never a silent CPU fallback.

It adds no work the onnxruntime backend would not do: the session options come from the same
config fields (``optimization.graph.level``, the ``intra_op_thread_count`` ... parameters, the
``cuda`` accelerator's provider options), requests run through I/O binding, inputs that Triton
hands over on the GPU (``FORCE_CPU_ONLY_INPUT_TENSORS=no``) are bound in place through DLPack, and
outputs are bound to the CPU (one device-to-host copy, as the backend makes) or, with
``pytest_triton_output_device=cuda``, left on the GPU for Triton to copy. With the ``cuda``
accelerator's ``enable_cuda_graph`` (or ``pytest_triton_persistent_io=1``), every input shape gets
device buffers bound once and refilled in place, as ONNX Runtime's CUDA graphs need the same
addresses on every run (one graph per shape, ``gpu_graph_id``).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from typing import Any

import numpy as np

PARAM_PREFIX = "pytest_triton_"
TIMINGS_ENV = "PYTEST_TRITON_ADAPTER_TIMINGS"  # a file: one "model batch run_us execute_us" line per execute()
# the onnxruntime backend's optimization.graph.level values (its README: -1 basic, 1 extended, 2 none)
_NUMPY_TYPES = {"tensor(float16)": np.float16, "tensor(float)": np.float32, "tensor(int64)": np.int64}
_GRAPH_LEVELS = {-1: "ORT_ENABLE_BASIC", 1: "ORT_ENABLE_EXTENDED", 2: "ORT_DISABLE_ALL"}


def _param(config: dict[str, Any], key: str, default: str = "") -> str:
    value = config.get("parameters", {}).get(key, {})
    return str(value.get("string_value", default)) if isinstance(value, dict) else default


def _own(config: dict[str, Any], key: str, default: str = "") -> str:
    return _param(config, PARAM_PREFIX + key, default)


def _import_onnxruntime(config: dict[str, Any]) -> Any:
    site_dirs = json.loads(_own(config, "sys_path", "[]"))
    for entry in reversed(site_dirs):
        if entry in sys.path:
            sys.path.remove(entry)
        sys.path.insert(0, entry)
    import onnxruntime

    expected = _own(config, "onnxruntime_dir")
    actual = os.path.dirname(os.path.realpath(onnxruntime.__file__))
    if expected and os.path.realpath(expected) != actual:
        raise RuntimeError(
            f"pytest-triton adapter imported onnxruntime from {actual}, not from the test environment's "
            f"{expected}; the python stub's sys.path put another installation first"
        )
    return onnxruntime


def session_options(ort: Any, config: dict[str, Any]) -> Any:
    """SessionOptions from the config fields the onnxruntime backend reads."""
    options = ort.SessionOptions()
    level = int(config.get("optimization", {}).get("graph", {}).get("level", 0) or 0)
    if level in _GRAPH_LEVELS:
        options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _GRAPH_LEVELS[level])
    threads = _param(config, "intra_op_thread_count") or _own(config, "intra_op_threads", "0")
    if int(threads):
        options.intra_op_num_threads = int(threads)
    if int(_param(config, "inter_op_thread_count", "0")):
        options.inter_op_num_threads = int(_param(config, "inter_op_thread_count"))
    if _param(config, "execution_mode") == "1":
        options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    for key, attribute in (("enable_mem_arena", "enable_cpu_mem_arena"), ("enable_mem_pattern", "enable_mem_pattern")):
        if _param(config, key) in ("0", "1"):
            setattr(options, attribute, _param(config, key) == "1")
    return options


def _rows(value: Any) -> int:
    shape = value.shape if isinstance(value, np.ndarray) else value.shape()
    return int(shape[0])


def _from_dlpack(ort: Any, tensor: Any) -> Any:
    """An OrtValue sharing the memory of a pb_utils tensor (no copy)."""
    capsule = tensor.to_dlpack()
    wrapper = getattr(ort.OrtValue, "from_dlpack", None)
    if wrapper is not None:
        return wrapper(capsule)
    return ort.OrtValue(ort.capi._pybind_state.OrtValue.from_dlpack(capsule, False))


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        ort = self.ort = _import_onnxruntime(config)
        version_dir = os.path.join(args["model_repository"], args["model_version"])
        filename = _own(config, "model_file", "model.onnx")
        # JSON has no tuples; ONNX Runtime wants (name, options) pairs as tuples
        providers = [p if isinstance(p, str) else tuple(p) for p in json.loads(_own(config, "providers", "[]"))]
        providers = providers or ["CPUExecutionProvider"]
        options = session_options(ort, config)
        self.session = ort.InferenceSession(os.path.join(version_dir, filename), options, providers=providers)
        active = self.session.get_providers()
        wanted = providers[0] if isinstance(providers[0], str) else providers[0][0]
        if wanted not in active:
            raise RuntimeError(
                f"pytest-triton adapter asked ONNX Runtime for {wanted} but the session runs on {active} "
                f"(available: {ort.get_available_providers()}); refusing to fall back silently"
            )
        on_gpu = active[0] in ("CUDAExecutionProvider", "TensorrtExecutionProvider")
        graphs = any(not isinstance(p, str) and str(p[1].get("enable_cuda_graph", "0")) == "1" for p in providers)
        self.persistent = graphs or _own(config, "persistent_io") == "1"
        self.buffer_device = "cuda" if on_gpu else "cpu"
        self.bindings: dict[tuple[tuple[int, ...], ...], tuple[Any, dict[str, Any], list[Any], Any]] = {}
        self.device_id = int(args.get("model_instance_device_id", "0") or 0)
        self.output_device = _own(config, "output_device", "cpu") if on_gpu else "cpu"
        self.batching = int(config.get("max_batch_size", 0)) > 0
        self.inputs = [tensor["name"] for tensor in config.get("input", [])]
        self.outputs = [tensor["name"] for tensor in config.get("output", [])]
        self.name = args.get("model_name", "")
        timings = os.environ.get(TIMINGS_ENV)
        self.timings = open(timings, "a", buffering=1, encoding="utf-8") if timings else None  # noqa: SIM115

    def _run(self, feeds: dict[str, Any]) -> list[Any]:
        """One I/O-bound run; ``feeds`` hold numpy arrays (CPU) or pb_utils GPU tensors."""
        if self.persistent and all(isinstance(v, np.ndarray) for v in feeds.values()):
            return self._run_persistent(feeds)
        binding = self.session.io_binding()
        for name, value in feeds.items():
            if isinstance(value, np.ndarray):
                binding.bind_cpu_input(name, np.ascontiguousarray(value))
            else:
                binding.bind_ortvalue_input(name, _from_dlpack(self.ort, value))
        for name in self.outputs:
            binding.bind_output(name, self.output_device, self.device_id)
        started = time.perf_counter_ns()
        self.session.run_with_iobinding(binding)
        self.run_ns += time.perf_counter_ns() - started
        return list(binding.get_outputs())

    def _run_persistent(self, feeds: dict[str, np.ndarray[Any, Any]]) -> list[Any]:
        """Refill this shape's device buffers in place and replay (CUDA graphs need fixed addresses)."""
        ort = self.ort
        key = tuple(tuple(v.shape) for v in feeds.values())
        if key not in self.bindings:
            binding = self.session.io_binding()
            inputs = {}
            for name, value in feeds.items():
                buffer = ort.OrtValue.ortvalue_from_shape_and_type(
                    value.shape, value.dtype.type, self.buffer_device, self.device_id
                )
                binding.bind_ortvalue_input(name, buffer)
                inputs[name] = buffer
            rows = _rows(next(iter(feeds.values())))
            metas = {meta.name: meta for meta in self.session.get_outputs()}
            outputs = []
            for name in self.outputs:  # the config's order, which the responses follow
                shape = [d if isinstance(d, int) else rows for d in metas[name].shape]
                dtype = _NUMPY_TYPES.get(metas[name].type, np.float32)
                buffer = ort.OrtValue.ortvalue_from_shape_and_type(shape, dtype, self.buffer_device, self.device_id)
                binding.bind_ortvalue_output(name, buffer)
                outputs.append(buffer)
            options = ort.RunOptions()
            options.add_run_config_entry("gpu_graph_id", str(len(self.bindings) + 1))
            self.bindings[key] = (binding, inputs, outputs, options)
        binding, inputs, outputs, options = self.bindings[key]
        for name, value in feeds.items():
            inputs[name].update_inplace(np.ascontiguousarray(value))
        started = time.perf_counter_ns()
        self.session.run_with_iobinding(binding, options)
        self.run_ns += time.perf_counter_ns() - started
        return outputs

    def _feed(self, request: Any, pb_utils: Any) -> dict[str, Any]:
        feeds: dict[str, Any] = {}
        for name in self.inputs:
            tensor = pb_utils.get_input_tensor_by_name(request, name)
            feeds[name] = tensor.as_numpy() if tensor.is_cpu() else tensor
        return feeds

    def _tensor(self, pb_utils: Any, name: str, value: Any) -> Any:
        if self.output_device != "cpu" and not self.persistent:
            return pb_utils.Tensor.from_dlpack(name, value._ortvalue.to_dlpack())
        return pb_utils.Tensor(name, value.numpy())

    def execute(self, requests: list[Any]) -> list[Any]:
        import triton_python_backend_utils as pb_utils

        began = time.perf_counter_ns()
        self.run_ns = 0
        feeds_per_request = [self._feed(request, pb_utils) for request in requests]
        on_cpu = all(isinstance(v, np.ndarray) for feeds in feeds_per_request for v in feeds.values())
        if self.batching and len(requests) > 1 and on_cpu:
            # dynamic batching: one run over the concatenated requests, outputs split on the CPU
            sizes = [_rows(next(iter(feeds.values()))) for feeds in feeds_per_request]
            merged = {name: np.concatenate([f[name] for f in feeds_per_request]) for name in self.inputs}
            results = [value.numpy() for value in self._run(merged)]
            bounds = np.cumsum([0, *sizes])
            responses = [
                [pb_utils.Tensor(n, np.ascontiguousarray(r[lo:hi])) for n, r in zip(self.outputs, results, strict=True)]
                for lo, hi in itertools.pairwise(bounds)
            ]
        else:
            responses = [
                [self._tensor(pb_utils, n, v) for n, v in zip(self.outputs, self._run(feeds), strict=True)]
                for feeds in feeds_per_request
            ]
        if self.timings is not None:
            total_us = (time.perf_counter_ns() - began) / 1e3
            batch = sum(_rows(next(iter(f.values()))) for f in feeds_per_request) if self.batching else 1
            self.timings.write(f"{self.name} {batch} {self.run_ns / 1e3:.1f} {total_us:.1f}\n")
        return [pb_utils.InferenceResponse(output_tensors=tensors) for tensors in responses]

    def finalize(self) -> None:
        if self.timings is not None:
            self.timings.close()
