"""Python-backend model that serves an ONNX file with ONNX Runtime (the pytest-triton adapter).

Copied into each version folder of an ONNX model when the server has no onnxruntime backend.
It proves what it runs: onnxruntime is imported from the test process's environment (its
site folders are put first on sys.path), and a requested GPU provider that is not active
is a load error, never a silent CPU fallback.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import numpy as np

PARAM_PREFIX = "pytest_triton_"


def _param(config: dict[str, Any], key: str, default: str = "") -> str:
    value = config.get("parameters", {}).get(PARAM_PREFIX + key, {})
    return str(value.get("string_value", default)) if isinstance(value, dict) else default


def _import_onnxruntime(config: dict[str, Any]) -> Any:
    site_dirs = json.loads(_param(config, "sys_path", "[]"))
    for entry in reversed(site_dirs):
        if entry in sys.path:
            sys.path.remove(entry)
        sys.path.insert(0, entry)
    import onnxruntime

    expected = _param(config, "onnxruntime_dir")
    actual = os.path.dirname(os.path.realpath(onnxruntime.__file__))
    if expected and os.path.realpath(expected) != actual:
        raise RuntimeError(
            f"pytest-triton adapter imported onnxruntime from {actual}, not from the test environment's "
            f"{expected}; the python stub's sys.path put another installation first"
        )
    return onnxruntime


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        ort = _import_onnxruntime(config)
        version_dir = os.path.join(args["model_repository"], args["model_version"])
        filename = _param(config, "model_file", "model.onnx")
        # JSON has no tuples; ONNX Runtime wants (name, options) pairs as tuples
        providers = [p if isinstance(p, str) else tuple(p) for p in json.loads(_param(config, "providers", "[]"))]
        providers = providers or ["CPUExecutionProvider"]
        options = ort.SessionOptions()
        threads = int(_param(config, "intra_op_threads", "0"))
        if threads:
            options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(os.path.join(version_dir, filename), options, providers=providers)
        active = self.session.get_providers()
        wanted = providers[0] if isinstance(providers[0], str) else providers[0][0]
        if wanted not in active:
            raise RuntimeError(
                f"pytest-triton adapter asked ONNX Runtime for {wanted} but the session runs on {active} "
                f"(available: {ort.get_available_providers()}); refusing to fall back silently"
            )
        self.batching = int(config.get("max_batch_size", 0)) > 0
        self.inputs = [tensor["name"] for tensor in config.get("input", [])]
        self.outputs = [tensor["name"] for tensor in config.get("output", [])]

    def execute(self, requests: list[Any]) -> list[Any]:
        import triton_python_backend_utils as pb_utils

        feeds_per_request = [
            {name: pb_utils.get_input_tensor_by_name(request, name).as_numpy() for name in self.inputs}
            for request in requests
        ]
        if self.batching and len(requests) > 1:
            sizes = [next(iter(feeds.values())).shape[0] for feeds in feeds_per_request]
            merged = {name: np.concatenate([f[name] for f in feeds_per_request]) for name in self.inputs}
            results = self.session.run(self.outputs, merged)
            bounds = np.cumsum([0, *sizes])
            per_request = [[r[bounds[i] : bounds[i + 1]] for r in results] for i in range(len(requests))]
        else:
            per_request = [self.session.run(self.outputs, feeds) for feeds in feeds_per_request]
        return [
            pb_utils.InferenceResponse(
                output_tensors=[
                    pb_utils.Tensor(n, np.ascontiguousarray(v)) for n, v in zip(self.outputs, values, strict=False)
                ]
            )
            for values in per_request
        ]
