"""Adapt a staged repository for a server without the onnxruntime backend.

Each ONNX Runtime model becomes a python-backend model with the same name, inputs, outputs,
dims, max_batch_size, dynamic batching and version folders; its ``model.py`` is the adapter in
``_adapter/model.py``. Nothing is rewritten silently: every adapted model is listed, with how.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import site
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from pytest_triton.config import read_config
from pytest_triton.config import write_config
from pytest_triton.errors import ConfigError
from pytest_triton.repository.layout import model_folders

ADAPTER_SOURCE = Path(__file__).parent / "_adapter" / "model.py"
_GPU_PROVIDERS = {"tensorrt": "TensorrtExecutionProvider", "cuda": "CUDAExecutionProvider"}


def _tensorrt_options(parameters: Any) -> dict[str, str]:
    """The onnxruntime backend's TensorRT accelerator keys as ONNX Runtime TensorRT provider options."""
    options = {key: str(value) for key, value in parameters.items() if key.startswith("trt_")}
    if "max_workspace_size_bytes" in parameters:
        options["trt_max_workspace_size"] = str(parameters["max_workspace_size_bytes"])
    if "precision_mode" in parameters:
        options["trt_fp16_enable"] = str(parameters["precision_mode"] == "FP16")
    return options


@dataclass
class AdaptedModel:
    """What was changed to serve one ONNX model through the adapter."""

    name: str
    providers: list[str]
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        text = (
            f"{self.name}: no onnxruntime backend in this server; served by the python-backend "
            f"ONNX Runtime adapter on {self.providers[0]}"
        )
        return text + "".join(f"; {note}" for note in self.notes)


def _kind(group: Any) -> str:
    name: str = type(group).Kind.Name(group.kind)
    return name


def is_onnx_model(config: Any) -> bool:
    return bool(config.platform == "onnxruntime_onnx" or config.backend == "onnxruntime")


def _available_providers() -> list[str]:
    import onnxruntime

    return list(onnxruntime.get_available_providers())


@functools.cache
def tensorrt_unavailable_reason() -> str | None:
    """Why ONNX Runtime's TensorRT provider cannot run here, or None when a session starts on it.

    onnxruntime-gpu lists TensorrtExecutionProvider even where libnvinfer is missing; only a
    session tells (ONNX Runtime then falls back to another provider with an "EP Error")."""
    import onnxruntime

    if "TensorrtExecutionProvider" not in onnxruntime.get_available_providers():
        return "this onnxruntime offers no TensorrtExecutionProvider"
    from onnx import TensorProto
    from onnx import helper

    value = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "probe",
        [value],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4  # the probe's own fallback message is expected, keep it quiet
    try:
        session = onnxruntime.InferenceSession(
            model.SerializeToString(), options, providers=["TensorrtExecutionProvider"]
        )
    except Exception as exc:  # any failure to start means TensorRT is not usable
        return f"TensorrtExecutionProvider failed to start: {exc}"
    if "TensorrtExecutionProvider" not in session.get_providers():
        return "TensorrtExecutionProvider is listed but does not start (TensorRT's libnvinfer is not installed?)"
    return None


def _providers(config: Any, has_gpu: bool, report: AdaptedModel) -> list[Any]:
    """ONNX Runtime providers for the config's accelerators, in preference order."""
    available = _available_providers()
    providers: list[Any] = []
    gpu_kind = any(_kind(group) == "KIND_GPU" for group in config.instance_group)
    if has_gpu:
        for accel in config.optimization.execution_accelerators.gpu_execution_accelerator:
            provider = _GPU_PROVIDERS.get(accel.name)
            if provider is None:
                continue
            if provider not in available:
                report.notes.append(f"{accel.name} accelerator requested but {provider} is not in this onnxruntime")
                continue
            if provider == "TensorrtExecutionProvider" and (reason := tensorrt_unavailable_reason()) is not None:
                report.notes.append(f"tensorrt accelerator requested but not usable: {reason}")
                continue
            if provider == "TensorrtExecutionProvider":
                providers.append((provider, _tensorrt_options(accel.parameters)))
            elif accel.parameters:  # the onnxruntime backend passes these as CUDA provider options
                providers.append((provider, {key: str(value) for key, value in accel.parameters.items()}))
            else:
                providers.append(provider)
        named = [p if isinstance(p, str) else p[0] for p in providers]
        if gpu_kind and "CUDAExecutionProvider" in available and "CUDAExecutionProvider" not in named:
            providers.append("CUDAExecutionProvider")
    elif config.optimization.execution_accelerators.gpu_execution_accelerator:
        names = [a.name for a in config.optimization.execution_accelerators.gpu_execution_accelerator]
        report.notes.append(f"GPU accelerators {names} dropped: no GPU visible")
    providers.append("CPUExecutionProvider")
    return providers


@dataclass(frozen=True)
class AdapterTarget:
    """The server that will run the adapter: its backends, whether it sees a GPU, and its Python.

    ``python_paths`` go first on the python stub's ``sys.path`` and ``onnxruntime_dir`` is where the adapter
    must find onnxruntime (a load error otherwise); both empty for a server with a Python of its own (a
    container), where the stub's own ``sys.path`` is the right one and no host path may be written.
    """

    backends: frozenset[str]
    has_gpu: bool
    python_paths: tuple[str, ...] = ()
    onnxruntime_dir: str = ""

    @classmethod
    def this_environment(cls, backends: frozenset[str], has_gpu: bool) -> AdapterTarget:
        """A server whose python stub runs this process's environment (the local launcher)."""
        import onnxruntime

        onnxruntime_dir = os.path.dirname(os.path.realpath(onnxruntime.__file__))
        # the folder this process imports onnxruntime from goes first (it may come from PYTHONPATH,
        # which the python stub does not honour before its own site-packages)
        search = [os.path.dirname(onnxruntime_dir), *site.getsitepackages(), site.getusersitepackages()]
        return cls(backends, has_gpu, tuple(dict.fromkeys(search)), onnxruntime_dir)

    @property
    def adapts(self) -> bool:
        """Whether ONNX models need the adapter on this server (it has no onnxruntime backend)."""
        return "onnxruntime" not in self.backends


def _adapt_config(config: Any, target: AdapterTarget, report: AdaptedModel, model_file: str) -> None:
    providers = _providers(config, target.has_gpu, report)
    report.providers = [p if isinstance(p, str) else p[0] for p in providers]
    config.platform = ""
    config.backend = "python"
    config.default_model_filename = ""
    config.optimization.ClearField("execution_accelerators")
    if not config.optimization.ListFields():
        config.ClearField("optimization")
    for group in config.instance_group:
        if _kind(group) == "KIND_GPU" and not target.has_gpu:
            group.kind = type(group).Kind.Value("KIND_CPU")
            del group.gpus[:]
            report.notes.append("instance_group KIND_GPU mapped to KIND_CPU (the server sees no GPU)")
    params = {"providers": json.dumps(providers), "model_file": model_file}
    if target.python_paths:
        params["sys_path"] = json.dumps(list(target.python_paths))
    if target.onnxruntime_dir:
        params["onnxruntime_dir"] = target.onnxruntime_dir
    for key, value in params.items():
        config.parameters[f"pytest_triton_{key}"].string_value = value
    gpu_session = report.providers[0] != "CPUExecutionProvider"
    if gpu_session and "FORCE_CPU_ONLY_INPUT_TENSORS" not in config.parameters:
        # inputs that reach the python backend on the GPU stay there; the adapter binds them through DLPack
        config.parameters["FORCE_CPU_ONLY_INPUT_TENSORS"].string_value = "no"


def onnx_models(folder: Path) -> list[str]:
    """The model folders of ``folder`` whose config asks for ONNX Runtime.

    A config that does not parse is left to Triton, which refuses it with its own words.
    """
    found = []
    for name in model_folders(folder):
        config_path = folder / name / "config.pbtxt"
        try:
            onnx = config_path.exists() and is_onnx_model(read_config(config_path).message)
        except ConfigError:
            continue
        if onnx:
            found.append(name)
    return found


def adapt_repository(folder: Path, target: AdapterTarget) -> list[AdaptedModel]:
    """Rewrite the ONNX models of a staged repository ``folder`` into adapter models, in place."""
    if not target.adapts:
        return []
    adapted: list[AdaptedModel] = []
    for name in onnx_models(folder):
        config_path = folder / name / "config.pbtxt"
        config = read_config(config_path).message
        report = AdaptedModel(name=name, providers=[])
        model_file = config.default_model_filename or "model.onnx"
        _adapt_config(config, target, report, model_file)
        write_config(config, config_path)
        for version in (folder / name).iterdir():
            if version.is_dir() and version.name.isdigit():
                shutil.copyfile(ADAPTER_SOURCE, version / "model.py")
        adapted.append(report)
    return adapted
