"""Schema rules (S2xx): one failing and one passing config per rule id.

A failing config marks the line the finding must point at with ``# <-``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_triton.config import parse_config
from pytest_triton.lint import Finding
from pytest_triton.lint import lint_path
from pytest_triton.lint.rules import catalog
from pytest_triton.lint.rules.schema import FAMILY
from tests.unit.lint.helpers import write_model

MARK = "# <-"
WARNINGS = {"S208", "S238", "S248"}

ONNX = 'name: "m"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n'
TRT = 'name: "m"\nplatform: "tensorrt_plan"\nmax_batch_size: 8\n'
IO = (
    'input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
    'output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
)
STEP = (
    'ensemble_scheduling { step [ { model_name: "a" model_version: -1\n'
    '  input_map { key: "x" value: "x" } output_map { key: "y" value: "y" } } ] }\n'
)
MODEL_FILES = {
    "onnxruntime_onnx": "1/model.onnx",
    "onnxruntime": "1/model.onnx",
    "tensorrt_plan": "1/model.plan",
    "tensorrt": "1/model.plan",
    "python": "1/model.py",
    "pytorch_libtorch": "1/model.pt",
}


def cfg(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def seq(controls: str, head: str = ONNX) -> str:
    """A sequence-batching config with the given control_input list."""
    return head + IO + "sequence_batching {\n  control_input [\n" + cfg(controls) + "  ]\n}\n"


X, Y, FP32, INT32 = 'name: "x"', 'name: "y"', "data_type: TYPE_FP32", "data_type: TYPE_INT32"
COUNT, SCATTER = "kind: BATCH_ELEMENT_COUNT", "kind: BATCH_SCATTER_WITH_INPUT_SHAPE"
SOURCE_X, TARGET_Y = 'source_input: "x"', 'target_name: "y"'


def block(field: str, *lines: str) -> str:
    """One element of a repeated message field, a field per line (so a finding's line is unambiguous)."""
    return f"{field} [ {{\n" + "".join(f"  {line}\n" for line in lines) + "} ]\n"


def lint_config(root: Path, text: str, files: dict[str, str | bytes] | None = None) -> list[Finding]:
    if files is None:
        config = parse_config(text).message
        rel = MODEL_FILES.get(config.platform) or MODEL_FILES.get(config.backend)
        files = {rel: b""} if rel else {}
        if not rel:
            (root / "m" / "1").mkdir(parents=True)
    write_model(root, "m", text, files)
    return lint_path(root)


FAILING = [
    # platform and backend
    pytest.param("S201", 'name: "m"\nplatform: "ensemble"\nbackend: "onnxruntime"  # <-\n' + IO + STEP, id="S201"),
    pytest.param("S202", 'name: "m"\nplatform: "onnx"  # <-\nmax_batch_size: 8\n' + IO, id="S202"),
    pytest.param("S203", 'name: "m"\nplatform: "tensorrt_plan"  # <-\nbackend: "onnxruntime"\n' + IO, id="S203"),
    pytest.param("S203", 'name: "m"\nbackend: "tensorflow"  # <-\n' + IO, id="S203-tensorflow-without-platform"),
    pytest.param("S204", ONNX + IO + STEP.replace("\n", "  # <-\n", 1), id="S204"),
    # batch size and dynamic batching
    pytest.param("S205", 'name: "m"\nplatform: "onnxruntime_onnx"\nmax_batch_size: -1  # <-\n' + IO, id="S205"),
    pytest.param("S206", ONNX + IO + "dynamic_batching {\n  preferred_batch_size: [ 4, 0 ]  # <-\n}\n", id="S206"),
    pytest.param("S207", ONNX + IO + "dynamic_batching {\n  preferred_batch_size: [ 16 ]  # <-\n}\n", id="S207"),
    pytest.param(
        "S208",
        'name: "m"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\n' + IO + "dynamic_batching { }  # <-\n",
        id="S208",
    ),
    pytest.param(
        "S209",
        ONNX + IO + "dynamic_batching {\n  priority_levels: 3\n  default_priority_level: 4  # <-\n}\n",
        id="S209",
    ),
    pytest.param("S209", ONNX + IO + "dynamic_batching {\n  priority_levels: 3  # <-\n}\n", id="S209-unset"),
    pytest.param(
        "S210",
        ONNX
        + IO
        + cfg(
            """
            dynamic_batching {
              priority_levels: 3
              default_priority_level: 1
              priority_queue_policy { key: 2 value { max_queue_size: 4 } }
              priority_queue_policy {
                key: 0  # <-
                value { max_queue_size: 4 }
              }
            }
            """
        ),
        id="S210",
    ),
    pytest.param(
        "S211",
        ONNX
        + IO
        + "dynamic_batching {\n  preserve_ordering: true\n  priority_levels: 2  # <-\n  default_priority_level: 1\n}\n",
        id="S211",
    ),
    pytest.param(
        "S212",
        ONNX
        + IO
        + cfg(
            """
            dynamic_batching {
              preserve_ordering: true
              default_queue_policy {
                timeout_action: DELAY  # <-
                default_timeout_microseconds: 100
              }
            }
            """
        ),
        id="S212",
    ),
    pytest.param(
        "S212",
        ONNX
        + IO
        + cfg(
            """
            dynamic_batching {
              preserve_ordering: true
              priority_levels: 1
              default_priority_level: 1
              priority_queue_policy {
                key: 1
                value {
                  timeout_action: DELAY  # <-
                  default_timeout_microseconds: 100
                }
              }
            }
            """
        ),
        id="S212-priority-policy",
    ),
    # sequence batching
    pytest.param(
        "S213",
        seq(
            """
            {  # <-
              control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ]
            }
            """
        ),
        id="S213",
    ),
    pytest.param(
        "S214",
        seq(
            """
            { name: "S" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
            {
              name: "S"  # <-
              control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ]
            }
            """
        ),
        id="S214",
    ),
    pytest.param(
        "S215",
        seq(
            """
            { name: "A" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
            {
              name: "B"
              control [ {
                kind: CONTROL_SEQUENCE_START  # <-
                int32_false_true: [ 0, 1 ]
              } ]
            }
            """
        ),
        id="S215",
    ),
    pytest.param(
        "S216",
        seq('{ name: "R" control [ { kind: CONTROL_SEQUENCE_READY } ] }  # <-\n'),
        id="S216",
    ),
    pytest.param(
        "S217",
        seq(
            """
            { name: "R" control [ {
              kind: CONTROL_SEQUENCE_READY
              int32_false_true: [ 0, 1 ]
              fp32_false_true: [ 0, 1 ]  # <-
            } ] }
            """
        ),
        id="S217",
    ),
    pytest.param(
        "S218",
        seq(
            """
            { name: "E" control [ {
              kind: CONTROL_SEQUENCE_END
              bool_false_true: [ true ]  # <-
            } ] }
            """
        ),
        id="S218",
    ),
    pytest.param(
        "S219",
        seq(
            """
            { name: "C" control [ {
              kind: CONTROL_SEQUENCE_CORRID
              data_type: TYPE_UINT64
              int32_false_true: [ 0, 1 ]  # <-
            } ] }
            """
        ),
        id="S219",
    ),
    pytest.param(
        "S220",
        seq(
            """
            { name: "C" control [ {
              kind: CONTROL_SEQUENCE_CORRID
              data_type: TYPE_FP32  # <-
            } ] }
            """
        ),
        id="S220",
    ),
    pytest.param(
        "S221", ONNX + IO + "sequence_batching {\n  oldest { preferred_batch_size: [ 0 ] }  # <-\n}\n", id="S221"
    ),
    pytest.param(
        "S222", ONNX + IO + "sequence_batching {\n  oldest { preferred_batch_size: [ 9 ] }  # <-\n}\n", id="S222"
    ),
    pytest.param(
        "S223",
        ONNX + IO + "sequence_batching {\n  direct {\n    minimum_slot_utilization: 1.5  # <-\n  }\n}\n",
        id="S223",
    ),
    pytest.param(
        "S224",
        ONNX + IO + "sequence_batching { }\nresponse_cache {\n  enable: true  # <-\n}\n",
        id="S224",
    ),
    pytest.param(
        "S225",
        ONNX + IO + "model_transaction_policy { decoupled: true }\nresponse_cache {\n  enable: true  # <-\n}\n",
        id="S225",
    ),
    # inputs and outputs
    pytest.param(
        "S226",
        ONNX + "input [\n  {  # <-\n    data_type: TYPE_FP32\n    dims: [ 4 ]\n  }\n]\n",
        id="S226",
    ),
    pytest.param("S227", ONNX + block("input", 'name: "x"  # <-', "dims: [ 4 ]"), id="S227"),
    pytest.param(
        "S227",
        ONNX + block("input", 'name: "x"', "data_type: TYPE_INVALID  # <-", "dims: [ 4 ]"),
        id="S227-explicit",
    ),
    pytest.param("S228", ONNX + block("output", 'name: "y"  # <-', "data_type: TYPE_FP32"), id="S228"),
    pytest.param(
        "S229",
        ONNX + block("input", X, FP32, "dims: [ 4, 0 ]  # <-"),
        id="S229",
    ),
    pytest.param(
        "S229",
        ONNX + block("output", Y, FP32, "dims: [ -2 ]  # <-"),
        id="S229-output",
    ),
    pytest.param(
        "S230",
        'name: "m"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\n'
        + block("input", X, FP32, "dims: [ 1 ]", "reshape: { shape: [ ] }  # <-"),
        id="S230",
    ),
    pytest.param(
        "S231",
        ONNX + block("input", X, FP32, "dims: [ 4 ]", "reshape: { shape: [ 4, 0 ] }  # <-"),
        id="S231",
    ),
    pytest.param(
        "S232",
        ONNX + block("input", X, FP32, "dims: [ 4 ]", "reshape: { shape: [ 3 ] }  # <-"),
        id="S232",
    ),
    pytest.param(
        "S232",
        ONNX + block("input", X, FP32, "dims: [ 2, -1 ]", "reshape: { shape: [ -1, 2 ] }  # <-"),
        id="S232-variable",
    ),
    pytest.param(
        "S233",
        ONNX + block("output", Y, FP32, "dims: [ 2, -1 ]", "reshape: { shape: [ 2, -1, -1 ] }  # <-"),
        id="S233",
    ),
    pytest.param(
        "S234",
        ONNX + block("input", X, FP32, "format: FORMAT_NCHW  # <-", "dims: [ 3, 224 ]"),
        id="S234",
    ),
    pytest.param(
        "S235",
        ONNX + block("input", 'name: "x"', "data_type: TYPE_INT32", "dims: [ 2 ]", "is_shape_tensor: true  # <-"),
        id="S235",
    ),
    pytest.param(
        "S236",
        ONNX + block("input", X, FP32, "dims: [ 3, 8, 8 ]", "is_non_linear_format_io: true  # <-"),
        id="S236",
    ),
    pytest.param(
        "S237",
        TRT + block("output", Y, FP32, "dims: [ 8 ]", "is_non_linear_format_io: true  # <-"),
        id="S237",
    ),
    pytest.param(
        "S238",
        ONNX
        + 'input [\n  { name: "x" data_type: TYPE_FP32 dims: [ 4 ] },\n'
        + '  {\n    name: "x"  # <-\n    data_type: TYPE_FP16\n    dims: [ 4 ]\n  }\n]\n',
        id="S238",
    ),
    # batch inputs and batch outputs
    pytest.param(
        "S239",
        TRT + IO + block("batch_input", "kind: BATCH_ELEMENT_COUNT  # <-", 'target_name: "n"', "data_type: TYPE_INT32"),
        id="S239",
    ),
    pytest.param(
        "S239",
        TRT
        + IO
        + block("batch_output", TARGET_Y, "kind: BATCH_SCATTER_WITH_INPUT_SHAPE", 'source_input: [ "x", "x" ]  # <-'),
        id="S239-output",
    ),
    pytest.param(
        "S240",
        TRT + IO + block("batch_input", COUNT, 'target_name: "n"', "data_type: TYPE_FP16  # <-", SOURCE_X),
        id="S240",
    ),
    pytest.param(
        "S241",
        TRT + IO + block("batch_input", COUNT, 'target_name: "n"', INT32, 'source_input: "nope"  # <-'),
        id="S241",
    ),
    pytest.param(
        "S242",
        TRT + IO + block("batch_output", 'target_name: "nope"  # <-', SCATTER, SOURCE_X),
        id="S242",
    ),
    pytest.param(
        "S243",
        TRT + IO + block("batch_output", 'target_name: [ "y", "y" ]  # <-', SCATTER, SOURCE_X),
        id="S243",
    ),
    pytest.param(
        "S244",
        TRT + IO + block("batch_input", "kind: 42  # <-", 'target_name: "n"', INT32, SOURCE_X),
        id="S244",
    ),
    # instance groups
    pytest.param("S245", ONNX + IO + block("instance_group", "kind: KIND_CPU", "gpus: [ 0 ]  # <-"), id="S245"),
    pytest.param("S246", ONNX + IO + block("instance_group", "kind: KIND_MODEL", "gpus: [ 1 ]  # <-"), id="S246"),
    pytest.param("S247", ONNX + IO + block("instance_group", "kind: KIND_GPU", "gpus: [ 0, -1 ]  # <-"), id="S247"),
    pytest.param("S247", ONNX + IO + block("instance_group", "gpus: [ -1 ]  # <-"), id="S247-auto"),
    pytest.param("S248", ONNX + IO + block("instance_group", "count: -2  # <-", "kind: KIND_CPU"), id="S248"),
    pytest.param("S249", ONNX + IO + block("instance_group", "kind: KIND_GPU", 'profile: [ "0" ]  # <-'), id="S249"),
    pytest.param("S250", TRT + IO + block("instance_group", "kind: KIND_GPU", 'profile: [ "-1" ]  # <-'), id="S250"),
    pytest.param("S250", TRT + IO + block("instance_group", 'profile: [ "0", "abc" ]  # <-'), id="S250-text"),
    pytest.param("S250", TRT + IO + block("instance_group", 'profile: [ "" ]  # <-'), id="S250-empty"),
    pytest.param("S251", ONNX + IO + block("instance_group", "kind: 7  # <-"), id="S251"),
]

PASSING = [
    pytest.param("S201", 'name: "m"\nplatform: "ensemble"\n' + IO + STEP, id="S201"),
    pytest.param("S202", ONNX + IO, id="S202"),
    pytest.param("S202", 'name: "m"\nplatform: "anything"\nbackend: "my_backend"\n' + IO, id="S202-custom-backend"),
    pytest.param("S203", 'name: "m"\nplatform: "onnxruntime_onnx"\nbackend: "onnxruntime"\n' + IO, id="S203"),
    pytest.param("S203", 'name: "m"\nbackend: "pytorch"\n' + IO, id="S203-platform-filled-in"),
    pytest.param("S204", 'name: "m"\nplatform: "ensemble"\n' + IO + STEP, id="S204"),
    pytest.param("S205", 'name: "m"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\n' + IO, id="S205"),
    pytest.param("S206", ONNX + IO + "dynamic_batching { preferred_batch_size: [ 4, 8 ] }\n", id="S206"),
    pytest.param("S207", ONNX + IO + "dynamic_batching { preferred_batch_size: [ 8 ] }\n", id="S207"),
    pytest.param("S208", ONNX + IO + "dynamic_batching { }\n", id="S208"),
    pytest.param("S209", ONNX + IO + "dynamic_batching { priority_levels: 3 default_priority_level: 3 }\n", id="S209"),
    pytest.param(
        "S210",
        ONNX
        + IO
        + "dynamic_batching { priority_levels: 3 default_priority_level: 1\n"
        + "  priority_queue_policy { key: 3 value { max_queue_size: 4 } } }\n",
        id="S210",
    ),
    pytest.param(
        "S211",
        ONNX + IO + "dynamic_batching { preserve_ordering: true priority_levels: 1 default_priority_level: 1 }\n",
        id="S211",
    ),
    pytest.param(
        "S212",
        ONNX
        + IO
        + "dynamic_batching { preserve_ordering: true\n"
        + "  default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 100 } }\n",
        id="S212",
    ),
    pytest.param(
        "S212",
        ONNX + IO + "dynamic_batching { preserve_ordering: true default_queue_policy { timeout_action: DELAY } }\n",
        id="S212-no-timeout",
    ),
    pytest.param(
        "S213",
        seq('{ name: "S" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }\n'),
        id="S213",
    ),
    pytest.param(
        "S214",
        seq(
            """
            { name: "S" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
            { name: "E" control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ] }
            """
        ),
        id="S214",
    ),
    pytest.param(
        "S215",
        seq(
            """
            { name: "S" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } ] },
            { name: "R" control [ { kind: CONTROL_SEQUENCE_READY bool_false_true: [ false, true ] } ] },
            { name: "C" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
            """
        ),
        id="S215",
    ),
    pytest.param(
        "S216",
        seq('{ name: "R" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] }\n'),
        id="S216",
    ),
    pytest.param(
        "S217", seq('{ name: "R" control [ { kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0, 1 ] } ] }\n'), id="S217"
    ),
    pytest.param(
        "S218",
        seq('{ name: "E" control [ { kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ] } ] }\n'),
        id="S218",
    ),
    pytest.param(
        "S219", seq('{ name: "C" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }\n'), id="S219"
    ),
    pytest.param(
        "S220", seq('{ name: "C" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING } ] }\n'), id="S220"
    ),
    pytest.param("S221", ONNX + IO + "sequence_batching { oldest { preferred_batch_size: [ 2, 8 ] } }\n", id="S221"),
    pytest.param("S222", ONNX + IO + "sequence_batching { oldest { preferred_batch_size: [ 8 ] } }\n", id="S222"),
    pytest.param("S223", ONNX + IO + "sequence_batching { direct { minimum_slot_utilization: 0.5 } }\n", id="S223"),
    pytest.param("S224", ONNX + IO + "dynamic_batching { }\nresponse_cache { enable: true }\n", id="S224"),
    pytest.param("S225", ONNX + IO + "model_transaction_policy { decoupled: true }\n", id="S225"),
    pytest.param("S226", ONNX + IO, id="S226"),
    pytest.param("S227", ONNX + IO, id="S227"),
    pytest.param("S228", ONNX + IO, id="S228"),
    pytest.param(
        "S229", ONNX + 'input [ { name: "x" data_type: TYPE_FP32 dims: [ 4, -1 ] } ]\n', id="S229-variable-size"
    ),
    pytest.param(
        "S230",
        ONNX + 'input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] reshape: { shape: [ ] } } ]\n',
        id="S230-batching-scalar",
    ),
    pytest.param(
        "S231",
        ONNX + 'input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] reshape: { shape: [ 2, 2 ] } } ]\n',
        id="S231",
    ),
    pytest.param(
        "S232",
        ONNX + 'input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] reshape: { shape: [ 2, 2 ] } } ]\n',
        id="S232",
    ),
    pytest.param(
        "S233",
        ONNX
        + 'input [ { name: "x" data_type: TYPE_FP32 dims: [ 2, 4, -1, 6 ] reshape: { shape: [ 8, -1, 1, 6 ] } } ]\n',
        id="S233",
    ),
    pytest.param(
        "S234",
        ONNX + 'input [ { name: "x" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [ 224, 224, 3 ] } ]\n',
        id="S234",
    ),
    pytest.param(
        "S235", TRT + 'input [ { name: "x" data_type: TYPE_INT32 dims: [ 2 ] is_shape_tensor: true } ]\n', id="S235"
    ),
    pytest.param(
        "S236",
        TRT + 'input [ { name: "x" data_type: TYPE_FP32 dims: [ 3, 8, 8 ] is_non_linear_format_io: true } ]\n',
        id="S236",
    ),
    pytest.param(
        "S237",
        TRT + 'output [ { name: "y" data_type: TYPE_FP32 dims: [ 3, 8, 8 ] is_non_linear_format_io: true } ]\n',
        id="S237",
    ),
    pytest.param(
        "S238",
        ONNX + 'input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
        'output [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]\n',
        id="S238-input-and-output-may-share-a-name",
    ),
    pytest.param(
        "S239",
        TRT + IO + 'batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "n" data_type: TYPE_INT32 '
        'source_input: "x" } ]\n',
        id="S239",
    ),
    pytest.param(
        "S240",
        TRT + IO + 'batch_input [ { kind: BATCH_ITEM_SHAPE target_name: "n" data_type: TYPE_FP32 '
        'source_input: "x" } ]\n',
        id="S240",
    ),
    pytest.param(
        "S241",
        TRT + IO + 'batch_output [ { target_name: "y" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "x" } ]\n',
        id="S241",
    ),
    pytest.param(
        "S242",
        TRT + IO + 'batch_output [ { target_name: "y" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "x" } ]\n',
        id="S242",
    ),
    pytest.param(
        "S243",
        TRT + IO + 'batch_output [ { target_name: [ "y" ] kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "x" } ]\n',
        id="S243",
    ),
    pytest.param(
        "S244",
        TRT + IO + 'batch_input [ { kind: BATCH_ITEM_SHAPE_FLATTEN target_name: "n" data_type: TYPE_INT32 '
        'source_input: "x" } ]\n',
        id="S244",
    ),
    pytest.param("S245", ONNX + IO + "instance_group [ { kind: KIND_GPU gpus: [ 0 ] } ]\n", id="S245"),
    pytest.param("S246", ONNX + IO + "instance_group [ { kind: KIND_MODEL count: 2 } ]\n", id="S246"),
    pytest.param("S247", ONNX + IO + "instance_group [ { kind: KIND_GPU gpus: [ 0, 42 ] } ]\n", id="S247-unknown-id"),
    pytest.param("S248", ONNX + IO + "instance_group [ { count: 2 kind: KIND_CPU } ]\n", id="S248"),
    pytest.param("S249", TRT + IO + 'instance_group [ { kind: KIND_GPU profile: [ "0" ] } ]\n', id="S249"),
    pytest.param("S250", TRT + IO + 'instance_group [ { kind: KIND_GPU profile: [ "0", "1" ] } ]\n', id="S250"),
    pytest.param("S251", ONNX + IO + "instance_group [ { kind: KIND_CPU } ]\n", id="S251"),
]


def expected_line(text: str) -> int:
    (line,) = [number for number, content in enumerate(text.splitlines(), 1) if MARK in content]
    return line


@pytest.mark.parametrize(("rule", "config"), FAILING)
def test_failing_config_reports_rule_at_its_line(tmp_path: Path, rule: str, config: str) -> None:
    findings = [f for f in lint_config(tmp_path, config) if f.rule == rule]
    assert findings, f"{rule} not reported"
    assert [(f.line, f.severity) for f in findings] == [
        (expected_line(config), "warning" if rule in WARNINGS else "error")
    ] * len(findings)
    assert all(f.hint for f in findings)
    assert all(f.path.endswith("config.pbtxt") for f in findings)


@pytest.mark.parametrize(("rule", "config"), PASSING)
def test_passing_config_does_not_report_rule(tmp_path: Path, rule: str, config: str) -> None:
    assert rule not in {f.rule for f in lint_config(tmp_path, config)}


def test_every_schema_rule_has_a_failing_and_a_passing_case() -> None:
    registered = {rule for rule in catalog.RULES if rule.startswith("S2")}
    assert registered == {p.values[0] for p in FAILING}
    assert registered == {p.values[0] for p in PASSING}
    assert {r for r in registered if catalog.RULES[r].severity == "warning"} == WARNINGS


def test_clean_models_have_no_schema_findings(tmp_path: Path) -> None:
    write_model(tmp_path, "onnx", ONNX.replace('"m"', '"onnx"') + IO, {"1/model.onnx": b""})
    write_model(tmp_path, "py", 'name: "py"\nbackend: "python"\nmax_batch_size: 0\n', {"1/model.py": ""})
    assert [f for f in lint_path(tmp_path) if f.rule.startswith("S")] == []


def test_messages_quote_triton_and_name_the_value(tmp_path: Path) -> None:
    config = ONNX.replace('name: "m"\n', "") + 'input [ { name: "x" data_type: TYPE_FP32 dims: [ 0 ] } ]\n'
    (finding,) = [f for f in lint_config(tmp_path, config) if f.rule == "S229"]
    # no name in the config: Triton names the model after its folder
    assert finding.message == (
        "model input 'x' dimension must be integer >= 1, or -1 to indicate a variable-size dimension for m (dims: [0])"
    )


def test_platform_is_read_from_the_first_version_folder(tmp_path: Path) -> None:
    config = 'name: "m"\nbackend: "tensorflow"\n' + IO
    assert "S203" not in {f.rule for f in lint_config(tmp_path, config, {"1/model.savedmodel/saved_model.pb": b""})}
    assert "S203" not in {f.rule for f in lint_config(tmp_path, config, {"1/model.graphdef": b""})}


def test_unknown_platform_without_backend_uses_custom_backend_from_folder_name(tmp_path: Path) -> None:
    write_model(tmp_path, "m.identity", 'input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]\n', {"1/x": ""})
    assert not [f for f in lint_path(tmp_path) if f.rule.startswith("S2")]


EXTREMES = """
name: ""
platform: "ensemble"
backend: "tensorrt"
max_batch_size: -2147483648
input [ { dims: [ -9223372036854775808, 9223372036854775807, 9223372036854775807 ] reshape { shape: [ -1 ] }
          format: FORMAT_NHWC is_shape_tensor: true is_non_linear_format_io: true } ]
output [ { name: "" data_type: 99 reshape { } } ]
batch_input [ { kind: 99 data_type: 77 source_input: [ "", "" ] } ]
batch_output [ { kind: 5 target_name: [ "", "" ] } ]
instance_group [ { kind: 11 count: -2147483648 gpus: [ -2147483648 ] profile: [ " +12x", "99999999999" ] } ]
response_cache { enable: true }
model_transaction_policy { decoupled: true }
"""
# dynamic_batching, sequence_batching and ensemble_scheduling are one protobuf oneof
SCHEDULERS = {
    "dynamic": """
dynamic_batching { preferred_batch_size: [ -5, 0, 2147483647 ] priority_levels: 18446744073709551615
  default_priority_level: 18446744073709551615 preserve_ordering: true
  default_queue_policy { timeout_action: 9 default_timeout_microseconds: 18446744073709551615 }
  priority_queue_policy { key: 0 value { timeout_action: DELAY default_timeout_microseconds: 1 } }
  priority_queue_policy { key: 18446744073709551615 value { } } }
""",
    "sequence": """
sequence_batching { control_input [ { control [ { kind: 17 } ] }, { name: "a" control [ { kind: 3 data_type: 44
  int32_false_true: [ 1 ] bool_false_true: [ true ] } ] }, { name: "a" control [ { kind: 3 } ] } ]
  direct { minimum_slot_utilization: nan } }
""",
    "ensemble": "ensemble_scheduling { }\n",
}


@pytest.mark.parametrize("scheduler", sorted(SCHEDULERS))
def test_extreme_values_give_findings_not_crashes(tmp_path: Path, scheduler: str) -> None:
    rules = {f.rule for f in lint_config(tmp_path, EXTREMES + SCHEDULERS[scheduler], {})}
    assert "X001" not in rules
    assert {"S201", "S205", "S226", "S227", "S228", "S244"} <= rules
    # Triton skips the instance groups of a model with ensemble_scheduling
    assert ("S251" in rules) == (scheduler != "ensemble")


def test_checks_accept_an_empty_config(tmp_path: Path) -> None:
    write_model(tmp_path, "m", "", {"1/model.onnx": b""})
    assert "X001" not in {f.rule for f in lint_path(tmp_path)}
    assert len(FAMILY.model_checks) >= 4
