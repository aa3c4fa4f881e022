"""Execution accelerator rules (A4xx): one failing and one passing config per rule id.

The base is the seed's deployment: an onnxruntime model on a GPU instance with the TensorRT
accelerator in FP16 and a persistent engine cache. A failing config marks its line ``# <-``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_triton.lint import lint_path
from pytest_triton.lint.rules import catalog
from pytest_triton.lint.rules.accelerators import TENSORRT_PARAMETERS
from tests.unit.lint.helpers import write_model
from tests.unit.lint.test_rules_onnx import tiny_onnx

MARK = "# <-"
IO = (
    'input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
    'output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
)
HEAD = 'name: "m"\nbackend: "onnxruntime"\nmax_batch_size: 8\n' + IO
GPU = "instance_group [ { kind: KIND_GPU count: 1 } ]\n"
PARAMS = {
    "precision_mode": "FP16",
    "trt_engine_cache_enable": "true",
    "trt_engine_cache_path": "/models/trt_cache",
    "trt_profile_min_shapes": "x:1x4",
    "trt_profile_opt_shapes": "x:4x4",
    "trt_profile_max_shapes": "x:8x4",
}
NO_PROFILES = {k: "-" for k in PARAMS if k.startswith("trt_profile")}


def config(
    params: dict[str, str] = PARAMS,
    *,
    name: str = "tensorrt",
    head: str = HEAD,
    groups: str = GPU,
    cpu: str = "",
    mark: str | None = None,
) -> str:
    """The TensorRT accelerator with ``params``, a parameter per line; ``mark`` marks a key's line,
    "name" the accelerator's name line, "gpu" the gpu_execution_accelerator line."""

    def tag(what: str) -> str:
        return f" {MARK}" if what == mark else ""

    lines = [f'        parameters {{ key: "{k}" value: "{v}" }}' + tag(k) for k, v in params.items()]
    cpu_line = f'    cpu_execution_accelerator [ {{ name: "{cpu}" }} ]{tag("cpu")}\n' if cpu else ""
    return (
        f"{head}{groups}optimization {{\n  execution_accelerators {{\n"
        f"    gpu_execution_accelerator [{tag('gpu')}\n      {{\n"
        f'        name: "{name}"{tag("name")}\n' + "\n".join(lines) + "\n      }\n    ]\n"
        f"{cpu_line}  }}\n}}\n"
    )


def with_params(**changes: str) -> dict[str, str]:
    """PARAMS with some values changed; "-" drops the key."""
    params = {**PARAMS, **changes}
    return {k: v for k, v in params.items() if v != "-"}


PY_HEAD = HEAD.replace('backend: "onnxruntime"', 'backend: "python"')

# rule -> (config with the expected line marked, message part)
FAILING: dict[str, tuple[str, str]] = {
    "A401": (config(name="TensorRT", mark="name"), "unknown Execution Accelerator 'TensorRT' is requested"),
    "A402": (
        config({**PARAMS, "trt_engine_cahce_enable": "true"}, mark="trt_engine_cahce_enable"),
        "unknown parameter 'trt_engine_cahce_enable' is provided for TensorRT Execution Accelerator",
    ),
    "A403": (
        config(with_params(precision_mode="fp16"), mark="precision_mode"),
        "unsupported precision mode 'fp16' is requested",
    ),
    "A404": (
        config(with_params(trt_engine_cache_path="/tmp/trt"), mark="trt_engine_cache_path"),
        "trt_engine_cache_path '/tmp/trt' is under /tmp: lost at every container restart",
    ),
    "A405": (
        config(with_params(trt_engine_cache_enable="false"), mark="trt_engine_cache_enable"),
        'TensorRT accelerator without trt_engine_cache_enable "true": every cold start builds the engine',
    ),
    "A406": (
        config(head=PY_HEAD).replace("execution_accelerators {", f"execution_accelerators {{ {MARK}", 1),
        "optimization.execution_accelerators is ignored by the python backend",
    ),
    "A407": (
        config(groups="instance_group [ { kind: KIND_CPU } ]\n", mark="gpu"),
        "gpu_execution_accelerator is ignored: no instance_group of this model is KIND_GPU",
    ),
    "A408": (
        config({**PARAMS, "max_workspace_size_bytes": "1GB"}, mark="max_workspace_size_bytes"),
        "TensorRT parameter max_workspace_size_bytes: '1GB' is read as 1, the rest is ignored",
    ),
    "A409": (
        config(with_params(**NO_PROFILES)).replace(
            "gpu_execution_accelerator [\n      {", f"gpu_execution_accelerator [\n      {{ {MARK}", 1
        ),
        "TensorRT accelerator on dynamic input shapes without trt_profile_min/opt/max_shapes",
    ),
}

PASSING: dict[str, str] = {
    "A401": config(cpu="openvino"),
    "A402": config({**PARAMS, "trt_max_partition_iterations": "10", "trt_min_subgraph_size": "3"}),
    "A403": config(with_params(precision_mode="INT8", trt_engine_cache_enable="ON")),
    "A404": config(with_params(trt_engine_cache_path="/opt/ml/model/trt_cache")),
    "A405": config(),
    "A406": HEAD + GPU,
    # no instance_group: Triton gives the model GPU instances when it has GPUs
    "A407": config(groups=""),
    "A408": config({**PARAMS, "max_workspace_size_bytes": "1073741824"}),
    # fixed shapes: one engine serves every request
    "A409": config(
        with_params(**NO_PROFILES),
        head=HEAD.replace("max_batch_size: 8", "max_batch_size: 0").replace("[ 4 ]", "[ 1, 4 ]"),
    ),
}


def write(root: Path, text: str) -> None:
    """The config with its model: a python stub, or an ONNX model batching unless max_batch_size is 0."""
    shape: list[int | str | None] = [1, 4] if "max_batch_size: 0" in text else ["b", 4]
    model = tiny_onnx([("x", 1, shape)], [("y", 1, shape)])
    files: dict[str, str | bytes] = {"1/model.py": ""} if 'backend: "python"' in text else {"1/model.onnx": model}
    write_model(root, "m", text, files)


def marked_line(text: str) -> int:
    (line,) = [n for n, content in enumerate(text.splitlines(), 1) if MARK in content]
    return line


def test_every_rule_has_a_failing_and_a_passing_case() -> None:
    ids = {rule for rule in catalog.RULES if rule.startswith("A4")}
    assert ids == set(FAILING) == set(PASSING)


@pytest.mark.parametrize("rule", sorted(FAILING))
def test_failing_case(tmp_path: Path, rule: str) -> None:
    text, message = FAILING[rule]
    write(tmp_path, text)
    findings = [f for f in lint_path(tmp_path) if f.rule == rule]
    matching = [f for f in findings if message in f.message]
    assert matching, [f.message for f in findings]
    assert matching[0].severity == catalog.RULES[rule].severity
    assert matching[0].line == marked_line(text)


@pytest.mark.parametrize("rule", sorted(PASSING))
def test_passing_case(tmp_path: Path, rule: str) -> None:
    write(tmp_path, PASSING[rule])
    assert [f.format() for f in lint_path(tmp_path)] == []


def test_every_known_parameter_is_accepted(tmp_path: Path) -> None:
    values = {"precision": "FP16", "bool": "true", "int": "1", "uint": "1", "str": "x"}
    params = {key: values[kind] for key, kind in TENSORRT_PARAMETERS.items()}
    write(tmp_path, config(params))
    assert lint_path(tmp_path) == []


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (with_params(precision_mode="BF16"), "unsupported precision mode 'BF16' is requested"),
        (with_params(trt_engine_cache_enable="yes"), "failed to convert 'yes' to boolean"),
        ({**PARAMS, "trt_min_subgraph_size": "three"}, "failed to convert 'three' to integral number"),
        ({**PARAMS, "trt_dla_core": "99999999999"}, "'99999999999' does not fit a 32-bit int"),
        (
            {**PARAMS, "max_workspace_size_bytes": "-"},
            "failed to convert '-' to unsigned long long integral number",
        ),
    ],
)
def test_values_the_backend_refuses(tmp_path: Path, params: dict[str, str], message: str) -> None:
    write(tmp_path, config(params))
    assert [f.rule for f in lint_path(tmp_path) if message in f.message] == ["A403"]


def test_bf16_hint_names_the_release(tmp_path: Path) -> None:
    write(tmp_path, config(with_params(precision_mode="BF16")))
    (finding,) = [f for f in lint_path(tmp_path) if f.rule == "A403"]
    assert "Triton 2.51 refuses it" in finding.hint


def test_missing_cache_flag_points_at_the_accelerator(tmp_path: Path) -> None:
    text = config(with_params(trt_engine_cache_enable="-"), mark="gpu")
    write(tmp_path, text)
    (finding,) = lint_path(tmp_path)
    assert (finding.rule, finding.severity) == ("A405", "warning")
    assert finding.line == marked_line(text) + 1  # the accelerator's opening brace
    assert "47.7 s" in finding.hint
    assert "60 s" in finding.hint


def test_negative_workspace_wraps(tmp_path: Path) -> None:
    write(tmp_path, config({**PARAMS, "max_workspace_size_bytes": "-1"}))
    (finding,) = lint_path(tmp_path)
    assert finding.rule == "A408"
    assert "wraps around to 18446744073709551615" in finding.message


def test_accelerator_in_the_wrong_list(tmp_path: Path) -> None:
    write(tmp_path, config(cpu="tensorrt", mark="cpu"))
    (finding,) = lint_path(tmp_path)
    assert finding.rule == "A401"
    assert "move it to gpu_execution_accelerator" in finding.hint


def test_gpu_accelerators_on_cpu_instances_are_not_checked_further(tmp_path: Path) -> None:
    write(tmp_path, config(with_params(precision_mode="fp16"), groups="instance_group [ { kind: KIND_CPU } ]\n"))
    assert [f.rule for f in lint_path(tmp_path)] == ["A407"]


def test_ensembles_and_tensorflow_are_left_alone(tmp_path: Path) -> None:
    write_model(
        tmp_path,
        "tf",
        config(head='name: "tf"\nplatform: "tensorflow_savedmodel"\nmax_batch_size: 8\n' + IO, name="gpu_io"),
        {"1/model.savedmodel/saved_model.pb": b""},
    )
    assert not [f for f in lint_path(tmp_path) if f.rule.startswith("A")]
