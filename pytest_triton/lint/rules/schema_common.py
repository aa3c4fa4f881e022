"""The schema family's rule table and the helpers its checks share.

The family reproduces what Triton core 2.51 checks when it loads a model configuration
(``ValidateModelConfig``, ``ValidateModelIOConfig`` and ``ValidateInstanceGroup`` in
``src/model_config_utils.cc``), quoting Triton's own error text so users can grep for it.
Triton stops at its first error; the linter reports every problem at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.finding import Severity

# Ids are stable and never reused; a retired rule keeps its line, commented out.
RULE_TABLE: list[tuple[str, Severity, str]] = [
    # platform and backend (ValidateModelConfig after the server-side auto-complete)
    ("S201", "error", "ensemble model sets a backend"),
    ("S202", "error", "platform is unknown and no backend is set"),
    ("S203", "error", "platform and backend do not belong together"),
    ("S204", "error", "ensemble_scheduling on a model whose platform is not ensemble"),
    # batch size and dynamic batching
    ("S205", "error", "max_batch_size is negative"),
    ("S206", "error", "dynamic batching preferred_batch_size is not positive"),
    ("S207", "error", "dynamic batching preferred_batch_size exceeds max_batch_size"),
    ("S208", "warning", "dynamic_batching on a model with max_batch_size 0 never batches"),
    ("S209", "error", "default_priority_level is outside [1, priority_levels]"),
    ("S210", "error", "priority_queue_policy level is outside [1, priority_levels]"),
    ("S211", "error", "preserve_ordering with more than one priority level"),
    ("S212", "error", "preserve_ordering with a DELAY queue policy"),
    # sequence batching
    ("S213", "error", "sequence batching control input has no name"),
    ("S214", "error", "sequence batching control tensor is listed more than once"),
    ("S215", "error", "sequence batching control kind is given by more than one tensor"),
    ("S216", "error", "sequence batching START/END/READY control has no false/true values"),
    ("S217", "error", "sequence batching control has more than one kind of false/true values"),
    ("S218", "error", "sequence batching control false/true values are not exactly 2 entries"),
    ("S219", "error", "sequence batching CORRID control has false/true values"),
    ("S220", "error", "sequence batching CORRID control has an unsupported data type"),
    ("S221", "error", "sequence batching oldest preferred_batch_size is not positive"),
    ("S222", "error", "sequence batching oldest preferred_batch_size exceeds max_batch_size"),
    ("S223", "error", "sequence batching direct minimum_slot_utilization is outside (0.0, 1.0]"),
    ("S224", "error", "response cache with sequence batching"),
    ("S225", "error", "response cache with a decoupled model"),
    # inputs and outputs
    ("S226", "error", "input or output has no name"),
    ("S227", "error", "input or output has no data_type"),
    ("S228", "error", "input or output has no dims"),
    ("S229", "error", "input or output dimension is 0 or below -1"),
    ("S230", "error", "empty reshape on a non-batching model"),
    ("S231", "error", "reshape dimension is 0 or below -1"),
    ("S232", "error", "dims and reshape hold different element counts"),
    ("S233", "error", "dims and reshape have different numbers of variable-size dimensions"),
    ("S234", "error", "FORMAT_NHWC/FORMAT_NCHW input without exactly 3 dims"),
    ("S235", "error", "shape tensor on a platform other than TensorRT"),
    ("S236", "error", "non-linear IO format on a platform other than TensorRT"),
    ("S237", "error", "non-linear IO format tensor without exactly 3 dims"),
    ("S238", "warning", "input or output name is declared twice"),
    # batch inputs and batch outputs
    ("S239", "error", "batch input or batch output kind needs exactly 1 source input"),
    ("S240", "error", "batch input data type is not TYPE_INT32 or TYPE_FP32"),
    ("S241", "error", "batch input or batch output names an unknown source input"),
    ("S242", "error", "batch output names an unknown target output"),
    ("S243", "error", "batch output names a target output more than once"),
    ("S244", "error", "batch input or batch output kind is unknown"),
    # instance groups
    ("S245", "error", "KIND_CPU instance group lists GPUs"),
    ("S246", "error", "KIND_MODEL instance group lists GPUs"),
    ("S247", "error", "instance group lists a negative GPU id"),
    ("S248", "warning", "instance group count is negative and replaced by the default"),
    ("S249", "error", "instance group profile on a platform other than TensorRT"),
    ("S250", "error", "instance group profile is not a non-negative integer"),
    ("S251", "error", "instance group kind is unknown"),
]


ENSEMBLE = "ensemble"
TENSORRT_PLAN = "tensorrt_plan"
# platform -> the backend Triton 2.51 pairs it with (GetBackendTypeFromPlatform)
PLATFORM_BACKEND = {
    "tensorflow_graphdef": "tensorflow",
    "tensorflow_savedmodel": "tensorflow",
    TENSORRT_PLAN: "tensorrt",
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
}
KNOWN_PLATFORMS = (*PLATFORM_BACKEND, ENSEMBLE)
# backends Triton knows by name; any other backend name is a custom one and takes any platform
KNOWN_BACKENDS = frozenset(PLATFORM_BACKEND.values())


def model_name(model: ModelContext) -> str:
    """The name Triton uses in its messages: the config's name, else the folder's."""
    return str(model.config.name) or model.name


def quote(text: str) -> str:
    """A string as config.pbtxt writes it: ``"onnxruntime"``."""
    return json.dumps(text, ensure_ascii=False)


WRITTEN_VALUES = 16
"""The most values of one list a finding writes out: a config may hold a dims list of a million entries, and a
finding is one line; the rest is counted, and the finding's position points into the list."""


def fmt_list(values: Iterable[Any], *, separator: str = ", ") -> str:
    """``[1, -1, 3]``: a repeated field as config.pbtxt writes it (``separator=","``: as Triton writes a shape);
    past :data:`WRITTEN_VALUES`, its first and last values around the count of those left out."""
    items = list(values)
    if len(items) > WRITTEN_VALUES:
        head = separator.join(_fmt_value(v) for v in items[: WRITTEN_VALUES - 4])
        tail = separator.join(_fmt_value(v) for v in items[-4:])
        left_out = len(items) - WRITTEN_VALUES
        return f"[{head}{separator}... {left_out:,} more{separator}{tail}] ({len(items):,} values)"
    return "[" + separator.join(_fmt_value(v) for v in items) + "]"


def fmt_shape(dims: Iterable[Any]) -> str:
    """``[-1,3,224]``: a shape as Triton's messages write it (no spaces), as :func:`fmt_list` shortens it."""
    return fmt_list((int(d) for d in dims), separator=",")


def _fmt_value(value: Any) -> str:
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def enum_label(message: Any, field: str) -> str:
    """The enum value's name (``TYPE_FP32``), or its number when the config used an unknown one."""
    number = int(getattr(message, field))
    enum = message.DESCRIPTOR.fields_by_name[field].enum_type
    value = enum.values_by_number.get(number)
    return str(value.name) if value is not None else str(number)


def has_field(message: Any, field: str) -> bool:
    """``HasField`` that tolerates fields an older or newer schema lacks."""
    if field not in message.DESCRIPTOR.fields_by_name:
        return False
    return bool(message.HasField(field))


def present(model: ModelContext, *path: str | int) -> bool:
    """Whether ``path`` is written in config.pbtxt (not only implied by a default)."""
    return model.parsed is not None and tuple(path) in model.parsed.positions.positions


def first_present(model: ModelContext, *paths: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """The first of ``paths`` written in the file, else the last one (its ancestor is then used)."""
    for path in paths:
        if present(model, *path):
            return path
    return paths[-1]


def map_entry_index(model: ModelContext, prefix: tuple[str | int, ...], key: int | str) -> int | None:
    """Position (in the file) of the map entry whose key is ``key``; protobuf maps keep no order."""
    if model.parsed is None:
        return None
    path = model.parsed.positions.map_entry(*prefix, key=str(key))
    return int(path[-1]) if len(path) > len(prefix) else None


@dataclass(frozen=True)
class Normalized:
    """Platform and backend as Triton sees them after its server-side auto-complete."""

    platform: str
    backend: str


def _version_listing(model: ModelContext) -> tuple[bool, dict[str, bool]]:
    """Whether the model has a subfolder, and the first subfolder's entries (name -> is a folder).

    Triton inspects the first subfolder in byte order, whatever its name.
    """
    folders = model.reporter.folders
    subdirs = folders.subfolders(model.folder)
    if not subdirs:
        return False, {}
    return True, {entry.name: entry.is_dir for entry in folders.entries(subdirs[0])}


def normalized(model: ModelContext) -> Normalized:
    """Fill platform and backend the way Triton 2.51's AutoCompleteBackendFields does.

    The backend stays empty when Triton cannot pick one; for an empty platform the layout
    family reports that (Triton's "Could not determine backend").
    """
    found: Normalized | None = model.memo.get("normalized")
    if found is None:
        found = model.memo["normalized"] = _normalize(model)
    return found


def _normalize(model: ModelContext) -> Normalized:
    config = model.config
    platform, backend = str(config.platform), str(config.backend)
    filename = str(config.default_model_filename)
    has_version, entries = _version_listing(model)
    probe = not platform and not filename and has_version

    def file_in_version(name: str) -> bool:
        return probe and entries.get(name) is False

    if not platform and backend in ("", "tensorflow"):
        if filename == "model.savedmodel":
            platform = "tensorflow_savedmodel"
        elif filename == "model.graphdef":
            platform = "tensorflow_graphdef"
        elif not filename and has_version:
            if entries.get("model.savedmodel") is True:
                platform = "tensorflow_savedmodel"
            if entries.get("model.graphdef") is False:
                platform = "tensorflow_graphdef"
    if platform in ("tensorflow_savedmodel", "tensorflow_graphdef"):
        return Normalized(platform, backend or "tensorflow")
    if not backend and (platform == TENSORRT_PLAN or filename == "model.plan" or file_in_version("model.plan")):
        backend = "tensorrt"
    if backend == "tensorrt":
        return Normalized(platform or TENSORRT_PLAN, backend)
    if not backend and (
        platform == "onnxruntime_onnx" or filename == "model.onnx" or (probe and "model.onnx" in entries)
    ):
        backend = "onnxruntime"
    if backend == "onnxruntime":
        return Normalized(platform or "onnxruntime_onnx", backend)
    if not backend and (filename == "model.xml" or (probe and "model.xml" in entries)):
        backend = "openvino"
    if not backend and (platform == "pytorch_libtorch" or filename == "model.pt" or file_in_version("model.pt")):
        backend = "pytorch"
    if backend == "pytorch":
        return Normalized(platform or "pytorch_libtorch", backend)
    if not backend and (filename == "model.py" or (probe and "model.py" in entries)):
        backend = "python"
    if not backend and not platform and not filename and "." in model.name:
        backend = model.name.split(".", 1)[1]  # a custom backend named by the folder: model.<backend>
    return Normalized(platform, backend)
