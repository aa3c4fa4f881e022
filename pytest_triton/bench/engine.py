"""Which engine path a latency row ran on, and the adapter's own cost measured beside it.

A row's path is one of:

- ``adapter``: an ONNX model served by the python-backend ONNX Runtime adapter (a server without Triton's
  onnxruntime backend: the embedded tritonserver of nvidia-pytriton). Every request pays the python backend's
  hand-over (request tensors to the stub process and back) on top of ONNX Runtime's own run;
- ``native``: the model served by the backend its config names (Triton's own onnxruntime, tensorrt, python...
  backend), nothing adapted;
- ``in-process``: ONNX Runtime in the test process (a declaration's reference);
- ``unknown``: a server the plugin did not prepare (``--triton-url``), whose backends it cannot see.

The adapter's cost is *measured*, never estimated: a calibration model with the same inputs and outputs (names,
types, shapes, batching, instance group, providers) whose ONNX graph does no work (each output a
``ConstantOfShape`` of the request's batch) is written beside the adapted model in the server's staged
repository, loaded on the same server, and timed interleaved with the row's model, the same request through the
same client (:class:`Calibration`). What it measures is the hand-over and the transport; Triton's native
onnxruntime backend does not pay the hand-over (it runs ONNX Runtime in the server process). An ensemble row
whose steps are adapted gets a calibration ensemble: the same steps, each adapted one calling its calibration
model, so its calibration is the row without ONNX Runtime's work (the other steps still run).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import Literal
from typing import final

__all__ = [
    "BUDGET_PATHS",
    "CALIBRATION_SUFFIX",
    "UNNAMED",
    "Calibration",
    "Engine",
    "EnginePath",
    "engine_at",
    "engine_of",
    "write_calibration_ensemble",
    "write_calibration_model",
]

EnginePath = Literal["adapter", "native", "in-process", "unknown"]
BUDGET_PATHS: tuple[EnginePath, ...] = ("adapter", "native", "in-process")
"""The paths a budget may be written on (``path = ...`` in the budget file)."""
CALIBRATION_SUFFIX = "__pytest_triton_calibration"
NATIVE_STATEMENT = "Triton's native onnxruntime backend does not pay the adapter's hand-over"


@final
@dataclass(frozen=True)
class Calibration:
    """The calibration model's latency, measured interleaved with the row's model on the same server.

    ``p50_ms`` and ``p90_ms`` are the client's (same request, same client as the row); ``server_infer_us`` is
    Triton's compute-infer time per request of the calibration model (the adapter's execute with no work), when
    the statistics API was read; ``share`` is the calibration p50 over the row's p50.
    """

    model: str
    p50_ms: float
    p90_ms: float
    count: int
    share: float
    server_infer_us: float | None = None

    def describe(self) -> str:
        infer = f", server infer {self.server_infer_us:.0f} µs" if self.server_infer_us is not None else ""
        return (
            f"adapter calibration (the row's request to a copy whose ONNX models do no work, through the same "
            f"adapter, interleaved): "
            f"p50 {self.p50_ms:.3f} ms{infer}, {self.share:.0%} of the row's p50; {NATIVE_STATEMENT}"
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@final
@dataclass(frozen=True)
class Engine:
    """How one row is served: its ``path``, why (``reason``), and the calibration model's call (adapter path,
    when one could be loaded: the same request to the calibration model) or why there is none."""

    path: EnginePath
    reason: str
    calibration_model: str | None = None
    calibration_call: Callable[[], object] | None = None
    calibration_missing: str = ""

    def with_call(self, call: Callable[[], object] | None) -> Engine:
        return Engine(self.path, self.reason, self.calibration_model, call, self.calibration_missing)


def engine_of(server: Any, model: str, *, calibrate: bool = True) -> Engine:
    """The engine path of ``model`` on ``server`` (a running launcher, or None for the in-process reference).

    On the adapter path with ``calibrate``, the calibration model is written into the server's staged
    repository and loaded there (the caller builds its call: the row's request to ``calibration_model``).
    """
    if server is None:
        return Engine("in-process", "ONNX Runtime in the test process")
    prepared = getattr(server, "prepared", None)
    if prepared is None:
        return Engine("unknown", f"{type(server).__name__} does not say how it serves its models")
    adapted = {a.name: a for a in prepared.adapted}
    steps: list[str] = []
    if model not in adapted:
        steps = sorted(set(_ensemble_steps(Path(prepared.folder), model)) & set(adapted))
        if not steps:
            return Engine("native", f"{model} is served by the backend its config names (nothing adapted)")
        reason = f"ensemble {model}: its step(s) {', '.join(steps)} served by the python-backend ONNX Runtime adapter"
    else:
        reason = adapted[model].describe()
    if not calibrate:
        return Engine(
            "adapter",
            reason,
            calibration_missing="calibration not measured (a side-by-side row: measure it alone for its calibration)",
        )
    control = getattr(server, "control", None)
    if control is None:
        missing = f"{type(server).__name__} has no model control: no calibration model can be loaded beside the row"
        return Engine("adapter", reason, calibration_missing=missing)
    try:
        if steps:  # the same ensemble with its adapted steps' no-work models: the row without ONNX Runtime's work
            for step in steps:
                control.load(write_calibration_model(Path(prepared.folder), step))
            name = write_calibration_ensemble(Path(prepared.folder), model, steps)
        else:
            name = write_calibration_model(Path(prepared.folder), model)
        control.load(name)
    except Exception as exc:  # the row is still measured and marked; the report says why it has no calibration
        return Engine("adapter", reason, calibration_missing=f"calibration model not loaded: {exc}"[:400])
    return Engine("adapter", reason, calibration_model=name)


UNNAMED = "measured without http_url= and model=: which server ran it, and how, is not known"


def engine_at(servers: Sequence[Any], http_url: str, model: str, rows: int, *, calibrate: bool = True) -> Engine:
    """The engine path of ``model`` on the server at ``http_url``, for a row measured through the fixture API
    (``triton_bench.measure(call, http_url=..., model=...)``), whose request the bench cannot replay.

    A server among ``servers`` (the ones this session started) says how it serves the model; on the adapter
    path (with ``calibrate``) the calibration model gets a request of ``rows`` rows of zeros at the model's
    declared shapes (a free axis: length 1). Any other server is ``unknown``, with that reason.
    """
    wanted = http_url.rstrip("/")
    for server in servers:
        urls = getattr(server, "urls", None)
        if urls is None or not urls.http or urls.http.rstrip("/") != wanted:
            continue
        engine = engine_of(server, model, calibrate=calibrate)
        if engine.calibration_model is not None:
            engine = engine.with_call(_zeros_call(server.transport("http"), engine.calibration_model, rows))
        return engine
    return Engine("unknown", f"{http_url} is not a server this session started: how it serves {model} is not known")


def _zeros_call(transport: Any, model: str, rows: int) -> Callable[[], object]:
    """One request of zeros to ``model`` at its declared shapes: ``rows`` on a batch axis, 1 on a free one."""
    import numpy as np

    from pytest_triton.dtypes import BY_KSERVE

    tensors = {}
    for spec in transport.input_specs(model):
        shape = [rows if i == 0 and d == -1 else max(d, 1) for i, d in enumerate(spec.shape)]
        tensors[spec.name] = np.zeros(shape, dtype=BY_KSERVE[spec.datatype].numpy or "float32")
    return lambda: transport.infer(model, tensors, [])


def write_calibration_ensemble(folder: Path, ensemble: str, adapted: Sequence[str]) -> str:
    """Write the calibration of ``ensemble`` into the staged repository ``folder``: its config under a new name,
    each step that calls an ``adapted`` model calling that model's calibration model instead (written before);
    its name."""
    from pytest_triton.config import read_config
    from pytest_triton.config import write_config

    config = read_config(folder / ensemble / "config.pbtxt").message
    name = ensemble + CALIBRATION_SUFFIX
    dest = folder / name
    shutil.rmtree(dest, ignore_errors=True)
    (dest / "1").mkdir(parents=True)  # an ensemble's version folder is empty, but Triton needs one
    config.name = name
    for step in config.ensemble_scheduling.step:
        if step.model_name in adapted:
            step.model_name += CALIBRATION_SUFFIX
    write_config(config, dest / "config.pbtxt")
    return name


def _ensemble_steps(folder: Path, model: str) -> list[str]:
    """The models an ensemble's steps call (nothing for another model, or a config that does not parse)."""
    from pytest_triton.config import read_config

    path = folder / model / "config.pbtxt"
    try:
        config = read_config(path).message if path.is_file() else None
    except Exception:
        return []
    if config is None or config.platform != "ensemble":
        return []
    return [step.model_name for step in config.ensemble_scheduling.step]


_ONNX_TYPES = {
    "TYPE_FP32": "FLOAT",
    "TYPE_FP16": "FLOAT16",
    "TYPE_FP64": "DOUBLE",
    "TYPE_BF16": "BFLOAT16",
    "TYPE_INT64": "INT64",
    "TYPE_INT32": "INT32",
    "TYPE_INT16": "INT16",
    "TYPE_INT8": "INT8",
    "TYPE_UINT8": "UINT8",
    "TYPE_BOOL": "BOOL",
}


def write_calibration_model(folder: Path, model: str) -> str:
    """Write the calibration model of adapted ``model`` into the staged repository ``folder``; its name.

    Its config is the adapted model's (python backend, same I/O, batching, instance group, adapter parameters)
    under a new name, with one version ``1`` holding the adapter's ``model.py`` and a no-work ONNX graph.
    """
    import onnx
    from onnx import TensorProto
    from onnx import helper

    from pytest_triton.config import read_config
    from pytest_triton.config import write_config

    source = folder / model
    config = read_config(source / "config.pbtxt").message
    name = model + CALIBRATION_SUFFIX
    dest = folder / name
    shutil.rmtree(dest, ignore_errors=True)
    versions = sorted((p for p in source.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))
    if not versions or not (versions[-1] / "model.py").is_file():
        raise FileNotFoundError(f"{source}: no version folder with the adapter's model.py")
    batching = config.max_batch_size > 0

    def dtype(data_type: int) -> int:
        text = type(config.input[0]).DESCRIPTOR.fields_by_name["data_type"].enum_type.values_by_number[data_type]
        return int(getattr(TensorProto, _ONNX_TYPES[text.name]))

    def shape(dims: Any) -> list[Any]:
        return (["batch"] if batching else []) + [int(d) if d >= 0 else f"d{i}" for i, d in enumerate(dims)]

    inputs = [helper.make_tensor_value_info(i.name, dtype(i.data_type), shape(i.dims)) for i in config.input]
    outputs, nodes, inits = [], [], []
    first = config.input[0].name
    for index, out in enumerate(config.output):
        fixed = [int(d) if d >= 0 else 1 for d in out.dims]  # a free output axis gets length 1
        inits.append(helper.make_tensor(f"dims{index}", TensorProto.INT64, [len(fixed)], fixed))
        shape_name = f"dims{index}"
        if batching:
            nodes.append(helper.make_node("Shape", [first], [f"in_shape{index}"], start=0, end=1))
            nodes.append(helper.make_node("Concat", [f"in_shape{index}", f"dims{index}"], [f"shape{index}"], axis=0))
            shape_name = f"shape{index}"
        value = helper.make_tensor("value", dtype(out.data_type), [1], [0])
        nodes.append(helper.make_node("ConstantOfShape", [shape_name], [out.name], value=value))
        outputs.append(helper.make_tensor_value_info(out.name, dtype(out.data_type), shape(out.dims)))
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    onnx_model.ir_version = 8
    params = config.parameters
    model_file = params["pytest_triton_model_file"].string_value if "pytest_triton_model_file" in params else ""
    (dest / "1").mkdir(parents=True)
    shutil.copyfile(versions[-1] / "model.py", dest / "1" / "model.py")
    onnx.save(onnx_model, str(dest / "1" / (model_file or "model.onnx")))
    config.name = name
    config.ClearField("version_policy")
    config.ClearField("model_warmup")
    write_config(config, dest / "config.pbtxt")
    return name
