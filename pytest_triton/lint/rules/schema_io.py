"""Schema checks of inputs, outputs, batch inputs and batch outputs (ValidateModelIOConfig)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.rules.schema_common import TENSORRT_PLAN
from pytest_triton.lint.rules.schema_common import enum_label
from pytest_triton.lint.rules.schema_common import first_present
from pytest_triton.lint.rules.schema_common import fmt_list
from pytest_triton.lint.rules.schema_common import has_field
from pytest_triton.lint.rules.schema_common import model_name
from pytest_triton.lint.rules.schema_common import normalized
from pytest_triton.lint.rules.schema_common import present
from pytest_triton.lint.rules.schema_common import quote

FieldPath = tuple[str | int, ...]

_WILDCARD = -1
_DIM_RULE = "must be integer >= 1, or -1 to indicate a variable-size dimension"
_BATCH_INPUT_KINDS = (
    "BATCH_ELEMENT_COUNT",
    "BATCH_ACCUMULATED_ELEMENT_COUNT",
    "BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO",
    "BATCH_MAX_ELEMENT_COUNT_AS_SHAPE",
    "BATCH_ITEM_SHAPE",
    "BATCH_ITEM_SHAPE_FLATTEN",
)
_BATCH_OUTPUT_KINDS = ("BATCH_SCATTER_WITH_INPUT_SHAPE",)


def element_count(dims: Sequence[int]) -> int:
    """Triton's GetElementCount: -1 when any dimension is variable, 0 for no dimensions."""
    if _WILDCARD in dims:
        return -1
    count = 0
    for index, dim in enumerate(dims):
        count = dim if index == 0 else count * dim
    return count


def _chunks(dims: Sequence[int]) -> list[int]:
    """Element counts of the runs between variable-size dimensions: [2, 4, -1, 6] -> [8, 6]."""
    chunks, current = [], 1
    for dim in dims:
        if dim == _WILDCARD:
            chunks.append(current)
            current = 1
        else:
            current *= dim
    chunks.append(current)
    return chunks


def _describe(count: int) -> str:
    return "a variable size" if count == -1 else f"{count} elements"


def check_inputs_outputs(model: ModelContext) -> None:
    """S226-S238: each input and output as ValidateModelInput/ValidateModelOutput see it."""
    config = model.config
    name = model_name(model)
    platform = normalized(model).platform
    for kind, field in (("input", "input"), ("output", "output")):
        first_seen: dict[str, int] = {}
        for index, io in enumerate(getattr(config, field)):
            at: FieldPath = (field, index)
            anchors = ((*at, "name"), at)  # where a finding points, the first written
            tensor = str(io.name)
            if not tensor:
                model.report(
                    "S226",
                    f"model {kind} must specify 'name' for {name} ({field} {index} has no name)",
                    f"name the {kind} exactly as the model file calls it",
                    *at,
                )
            elif tensor in first_seen:
                model.report(
                    "S238",
                    f"model {kind} '{tensor}' is declared twice in {name} ({field} {first_seen[tensor]} and "
                    f"{index} are both named '{tensor}'); Triton indexes {kind}s by name and silently "
                    "ignores one of them",
                    f"remove or rename one of the two {kind}s",
                    *first_present(model, *anchors),
                )
            else:
                first_seen[tensor] = index
            _check_shape(model, name, kind, io, at, anchors)
            _check_io_kind(model, name, kind, io, at, anchors, platform)


def _check_shape(
    model: ModelContext, name: str, kind: str, io: Any, at: FieldPath, anchors: tuple[FieldPath, ...]
) -> None:
    who = f"model {kind} '{io.name}'"
    if int(io.data_type) == 0:
        written = "data_type: TYPE_INVALID" if present(model, *at, "data_type") else "data_type is missing"
        model.report(
            "S227",
            f"{who} must specify 'data_type' for {name} ({written})",
            "set data_type to the tensor's element type, e.g. data_type: TYPE_FP32",
            *first_present(model, (*at, "data_type"), *anchors),
        )
    dims = io.dims  # read in place: a list of a million dims would cost ~36 bytes per dim
    max_batch = int(model.config.max_batch_size)
    if not dims:
        model.report(
            "S228",
            f"{who} must specify 'dims' for {name} (dims: [])",
            "give the shape without the batch dimension, e.g. dims: [ 16 ]; for a scalar per request use "
            "dims: [ 1 ] with reshape: { shape: [ ] }",
            *first_present(model, (*at, "dims"), *anchors),
        )
    has_reshape = has_field(io, "reshape")
    shape = [int(d) for d in io.reshape.shape]
    if has_reshape and not shape and max_batch == 0:
        model.report(
            "S230",
            f"{who} cannot have empty reshape for non-batching model as scalar tensors are not supported "
            f"for {name} (reshape: {{ shape: [] }}, max_batch_size: 0)",
            "give reshape the model's full shape, or enable batching (max_batch_size > 0)",
            *first_present(model, (*at, "reshape"), *anchors),
        )
    bad_dim = next((i for i, d in enumerate(dims) if d < 1 and d != _WILDCARD), None)
    if bad_dim is not None:
        model.report(
            "S229",
            f"{who} dimension {_DIM_RULE} for {name} (dims: {fmt_list(dims)})",
            "use a positive size, or -1 for a dimension that varies between requests",
            *first_present(model, (*at, "dims", bad_dim), (*at, "dims")),
        )
    if not has_reshape:
        return
    bad_shape = next((i for i, d in enumerate(shape) if d < 1 and d != _WILDCARD), None)
    reshape_at = (*at, "reshape", 0, "shape")
    if bad_shape is not None:
        model.report(
            "S231",
            f"{who} reshape dimensions {_DIM_RULE} for {name} (reshape: {{ shape: {fmt_list(shape)} }})",
            "use a positive size, or -1 where dims has a variable-size dimension",
            *first_present(model, (*reshape_at, bad_shape), (*at, "reshape")),
        )
        return
    if not dims or bad_dim is not None:
        return
    _compare_reshape(model, name, who, dims, shape, first_present(model, (*at, "reshape"), *anchors))


def _compare_reshape(
    model: ModelContext, name: str, who: str, dims: list[int], shape: list[int], where: FieldPath
) -> None:
    dims_count, shape_count = element_count(dims), element_count(shape)
    values = f"dims: {fmt_list(dims)}, reshape: {{ shape: {fmt_list(shape)} }}"
    if dims_count != shape_count and (shape_count != 0 or dims_count != 1):
        model.report(
            "S232",
            f"{who} has different size for dims and reshape for {name} "
            f"({values}: {_describe(dims_count)} against {_describe(shape_count)})",
            "reshape must hold exactly the elements of dims (an empty reshape needs dims with 1 element)",
            *where,
        )
        return
    if dims_count != _WILDCARD:
        return
    dims_chunks, shape_chunks = _chunks(dims), _chunks(shape)
    if len(dims_chunks) != len(shape_chunks):
        model.report(
            "S233",
            f"{who} has different number of variable-size dimensions for dims and reshape for {name} ({values})",
            "use as many -1 in reshape as in dims",
            *where,
        )
    elif dims_chunks != shape_chunks:
        model.report(
            "S232",
            f"{who} has different size for dims and reshape for {name} ({values}: the fixed dimensions "
            f"between variable ones hold {fmt_list(dims_chunks)} against {fmt_list(shape_chunks)} elements)",
            "keep the product of the fixed dimensions between each pair of -1 the same in dims and reshape",
            *where,
        )


def _check_io_kind(
    model: ModelContext, name: str, kind: str, io: Any, at: FieldPath, anchors: tuple[FieldPath, ...], platform: str
) -> None:
    dims = io.dims
    if kind == "input":
        layout = enum_label(io, "format")
        if layout in ("FORMAT_NHWC", "FORMAT_NCHW") and len(dims) != 3:
            model.report(
                "S234",
                f"model input NHWC/NCHW require 3 dims for {name} (input '{io.name}' format: {layout}, "
                f"dims: {fmt_list(dims)})",
                "give the 3 image dimensions (without the batch), or drop format",
                *first_present(model, (*at, "format"), *anchors),
            )
    if io.is_shape_tensor and platform != TENSORRT_PLAN:
        model.report(
            "S235",
            f"shape tensors are only supported for TensorRT platform for {name} "
            f"({kind} '{io.name}' is_shape_tensor: true, platform: {quote(platform)})",
            "remove is_shape_tensor: only TensorRT plans have shape tensors",
            *first_present(model, (*at, "is_shape_tensor"), *anchors),
        )
    if "is_non_linear_format_io" in io.DESCRIPTOR.fields_by_name and io.is_non_linear_format_io:
        where = first_present(model, (*at, "is_non_linear_format_io"), *anchors)
        if platform != TENSORRT_PLAN:
            model.report(
                "S236",
                f"Non-linear IO format is only supported for the TensorRT platform for {name} "
                f"({kind} '{io.name}' is_non_linear_format_io: true, platform: {quote(platform)})",
                "remove is_non_linear_format_io: only TensorRT plans have non-linear IO formats",
                *where,
            )
        elif len(dims) != 3:
            model.report(
                "S237",
                f"Non-linear IO format {kind} requires 3 dims for {name} ({kind} '{io.name}' dims: {fmt_list(dims)})",
                "give the 3 dimensions (without the batch) of the non-linear format tensor",
                *where,
            )


def check_batch_io(model: ModelContext) -> None:
    """S239-S244: batch_input and batch_output (ValidateBatchIO)."""
    config = model.config
    name = model_name(model)
    inputs = {str(io.name) for io in config.input}
    outputs = {str(io.name) for io in config.output}
    for field, known_kinds in (("batch_input", _BATCH_INPUT_KINDS), ("batch_output", _BATCH_OUTPUT_KINDS)):
        what = field.replace("_", " ")
        for index, batch_io in enumerate(getattr(config, field)):
            at: FieldPath = (field, index)
            kind = enum_label(batch_io, "kind")
            kind_at = ((*at, "kind"), at)  # where a finding points, the first written
            sources = [str(s) for s in batch_io.source_input]
            if kind not in known_kinds:
                model.report(
                    "S244",
                    f"unknown {what} kind '{kind}' for {name} (kind: {kind})",
                    f"use one of {', '.join(known_kinds)}",
                    *first_present(model, *kind_at),
                )
            elif len(sources) != 1:
                model.report(
                    "S239",
                    f"{what} kind '{kind}' expects 1 source input, got {len(sources)} for {name} "
                    f"(source_input: {fmt_list(sources)})",
                    "name exactly one model input in source_input",
                    *first_present(model, (*at, "source_input"), *kind_at),
                )
            if field == "batch_input":
                data_type = enum_label(batch_io, "data_type")
                if data_type not in ("TYPE_INT32", "TYPE_FP32"):
                    model.report(
                        "S240",
                        f"batch input data type must be TYPE_INT32 or TYPE_FP32 for {name} (data_type: {data_type})",
                        "set data_type: TYPE_INT32 or TYPE_FP32 on the batch input",
                        *first_present(model, (*at, "data_type"), *kind_at),
                    )
            for k, source in enumerate(sources):
                if source not in inputs:
                    model.report(
                        "S241",
                        f"unknown source input name '{source}' for {name} ({field} {index} source_input: "
                        f"{quote(source)}; inputs are {fmt_list(sorted(inputs))})",
                        "name one of the model's inputs in source_input",
                        *first_present(model, (*at, "source_input", k), *kind_at),
                    )
            if field == "batch_output":
                _check_targets(model, name, batch_io, at, outputs)


def _check_targets(model: ModelContext, name: str, batch_output: Any, at: FieldPath, outputs: set[str]) -> None:
    seen: set[str] = set()
    for k, target in enumerate(str(t) for t in batch_output.target_name):
        where = first_present(model, (*at, "target_name", k), at)
        if target not in outputs:
            model.report(
                "S242",
                f"unknown target output name '{target}' for {name} (target_name: {quote(target)}; outputs are "
                f"{fmt_list(sorted(outputs))})",
                "name one of the model's outputs in target_name",
                *where,
            )
        if target in seen:
            model.report(
                "S243",
                f"target output name '{target}' can only be specified once for {name} "
                f"(target_name: {fmt_list(batch_output.target_name)})",
                "list each target output once",
                *where,
            )
        seen.add(target)


CHECKS = [check_inputs_outputs, check_batch_io]
