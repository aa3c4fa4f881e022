"""ONNX model vs config rules (O5xx): one failing and one passing model per rule id.

The models are built in tmp_path with ``onnx.helper`` (Identity nodes, opset 13): the seed's
NLI classifier shape, input_ids and attention_mask INT64 [batch, seq] and logits FLOAT
[batch, 3]. A failing config marks its expected line with ``# <-``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_triton.errors import OnnxReadError
from pytest_triton.lint import Finding
from pytest_triton.lint import lint_path
from pytest_triton.lint.rules import catalog
from pytest_triton.onnx_io import read_onnx_io
from tests.unit.lint.helpers import write_model

MARK = "# <-"
Dims = Sequence[int | str | None]
Spec = Sequence[tuple[str, int, Dims]]
INT64, FLOAT = 7, 1
NLI_INPUTS: Spec = [("input_ids", INT64, ["batch", "seq"]), ("attention_mask", INT64, ["batch", "seq"])]
NLI_OUTPUTS: Spec = [("logits", FLOAT, ["batch", 3])]


def tiny_onnx(
    inputs: Spec = NLI_INPUTS, outputs: Spec = NLI_OUTPUTS, *, initializers: Sequence[str] = (), opset: int = 13
) -> bytes:
    """A model whose outputs are Identity copies of its first input (types are not checked)."""
    from onnx import TensorProto
    from onnx import helper

    def info(name: str, elem: int, dims: Dims) -> Any:
        return helper.make_tensor_value_info(name, elem, list(dims))

    nodes = [helper.make_node("Identity", [inputs[0][0]], [name]) for name, _, _ in outputs]
    weights = [helper.make_tensor(name, TensorProto.FLOAT, [1], [0.0]) for name in initializers]
    graph = helper.make_graph(nodes, "g", [info(*i) for i in inputs], [info(*o) for o in outputs], initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return bytes(model.SerializeToString())


HEAD = 'name: "nli"\nbackend: "onnxruntime"\nmax_batch_size: 8\n'
INPUTS = (
    "input [\n"
    '  { name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] },\n'
    '  { name: "attention_mask" data_type: TYPE_INT64 dims: [ -1 ] }\n'
    "]\n"
)
OUTPUTS = 'output [ { name: "logits" data_type: TYPE_FP32 dims: [ 3 ] } ]\n'
GOOD = HEAD + INPUTS + OUTPUTS


def write(root: Path, config: str, model: bytes | None = None, name: str = "nli") -> Path:
    return write_model(root, name, config, {"1/model.onnx": tiny_onnx() if model is None else model})


def marked(config: str, old: str, new: str) -> str:
    """Replace ``old`` by ``new`` and mark the line it is on."""
    assert old in config
    start = config.index(old)
    end = config.index("\n", start)
    return config[:start] + config[start:end].replace(old, new, 1) + f" {MARK}" + config[end:]


def marked_line(text: str) -> int:
    (line,) = [n for n, content in enumerate(text.splitlines(), 1) if MARK in content]
    return line


FIXED_BATCH = tiny_onnx([("input_ids", INT64, [1, 16])], [("logits", FLOAT, [1, 3])])
ONE_INPUT = 'input [ { name: "input_ids" data_type: TYPE_INT64 dims: [ 16 ] } ]\n'

# rule -> (config with the expected line marked, model bytes or None for the NLI model, message part)
FAILING: dict[str, tuple[str, bytes | None, str]] = {
    "O502": (
        marked(GOOD, '{ name: "attention_mask"', '{ name: "attn_mask"'),
        tiny_onnx([*NLI_INPUTS[:1], ("attn", INT64, ["batch", "seq"])]),
        "unexpected inference input 'attn_mask', allowed inputs are: attn, input_ids",
    ),
    "O503": (
        HEAD + f'input [ {{ name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] }} ] {MARK}\n' + OUTPUTS,
        None,
        "ONNX model input 'attention_mask' is not in the configuration (unable to load model 'nli', "
        "configuration expects 1 inputs, model provides 2)",
    ),
    "O504": (
        HEAD + INPUTS + f'output [ {{ name: "probs" data_type: TYPE_FP32 dims: [ 3 ] }} ] {MARK}\n',
        None,
        "unexpected inference output 'probs', allowed outputs are: logits",
    ),
    "O505": (
        marked(GOOD, "data_type: TYPE_INT64 dims: [ -1 ] },", "data_type: TYPE_INT32 dims: [ -1 ] },"),
        None,
        "unable to load model 'nli', configuration expects datatype TYPE_INT32 for input 'input_ids', "
        "model provides TYPE_INT64",
    ),
    "O506": (
        HEAD + INPUTS + f'output [ {{ name: "logits" data_type: TYPE_FP32 dims: [ -1 ] }} ] {MARK}\n',
        None,
        "model 'nli', tensor 'logits': the model expects 2 dimensions (shape [-1,3]) but the model configuration "
        "specifies 2 dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit "
        "tensor shape, making complete shape [-1,-1])",
    ),
    "O507": (
        HEAD + f'input [ {{ name: "input_ids" data_type: TYPE_INT64 dims: [ 16 ] }} ] {MARK}\n'
        'output [ { name: "logits" data_type: TYPE_FP32 dims: [ 3 ] } ]\n',
        FIXED_BATCH,
        "model 'nli', tensor 'input_ids': for the model to support batching the shape should have at least 1 "
        "dimension and the first dimension must be -1; but shape expected by the model is [1,16]",
    ),
    "O508": (
        f'name: "nli" {MARK}\nbackend: "onnxruntime"\n',
        None,
        "the config lists no inputs and max_batch_size is not set: Triton's onnxruntime auto-complete sets "
        "max_batch_size to 4",
    ),
    "O509": (
        'name: "nli"\nbackend: "onnxruntime"\n' + INPUTS.replace("input [", f"input [ {MARK}", 1) + OUTPUTS,
        None,
        "inputs and outputs are listed but max_batch_size is not",
    ),
}

# rule -> a config and model the backend accepts
PASSING: dict[str, tuple[str, bytes | None]] = {
    # an initializer of the model may be overridden as an optional input (IR >= 4, no batching)
    "O502": (
        GOOD.replace("max_batch_size: 8", "max_batch_size: 0")
        .replace("[ -1 ]", "[ -1, -1 ]")
        .replace("[ 3 ]", "[ -1, 3 ]")
        .replace("]\noutput", '  ,{ name: "scale" data_type: TYPE_FP32 dims: [ 1 ] optional: true }\n]\noutput', 1),
        tiny_onnx([*NLI_INPUTS, ("scale", FLOAT, [1])], initializers=["scale"]),
    ),
    "O503": (GOOD, None),
    # the config may list a subset of the outputs
    "O504": (GOOD, tiny_onnx(NLI_INPUTS, [*NLI_OUTPUTS, ("hidden", FLOAT, ["batch", "seq", 8])])),
    "O505": (GOOD, None),
    # a reshape is compared instead of dims; symbolic model dims accept fixed config dims
    "O506": (
        HEAD
        + ONE_INPUT.replace("dims: [ 16 ]", "dims: [ 16 ] reshape: { shape: [ 1, 16 ] }")
        + 'output [ { name: "logits" data_type: TYPE_FP32 dims: [ 3 ] } ]\n',
        tiny_onnx([("input_ids", INT64, ["batch", 1, "seq"])], NLI_OUTPUTS),
    ),
    # a model with a fixed batch dimension is served with max_batch_size 0 and the full shape
    "O507": (
        GOOD.replace("max_batch_size: 8", "max_batch_size: 0")
        .replace(INPUTS, ONE_INPUT.replace("[ 16 ]", "[ 1, 16 ]"))
        .replace("[ 3 ]", "[ 1, 3 ]"),
        FIXED_BATCH,
    ),
    "O508": (GOOD, None),
    "O509": (GOOD, None),
}


def rule_findings(root: Path, rule: str) -> list[Finding]:
    return [f for f in lint_path(root) if f.rule == rule]


def test_every_rule_has_a_failing_and_a_passing_case() -> None:
    ids = {rule for rule in catalog.RULES if rule.startswith("O5")}
    assert ids - {"O501"} == set(FAILING) == set(PASSING)


@pytest.mark.parametrize("rule", sorted(FAILING))
def test_failing_case(tmp_path: Path, rule: str) -> None:
    config, model, message = FAILING[rule]
    write(tmp_path, config, model)
    findings = rule_findings(tmp_path, rule)
    matching = [f for f in findings if message in f.message]
    assert matching, [f.message for f in findings]
    assert matching[0].severity == catalog.RULES[rule].severity
    assert matching[0].line == marked_line(config)
    assert "checked against 1/model.onnx" in matching[0].hint or rule == "O509"


@pytest.mark.parametrize("rule", sorted(PASSING))
def test_passing_case(tmp_path: Path, rule: str) -> None:
    config, model = PASSING[rule]
    write(tmp_path, config, model)
    assert [f.format() for f in lint_path(tmp_path)] == []


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\n", "Git LFS pointer"),
        (b"", "the file is empty"),
        (b"\x0a\xff\xff\xff\xff\x0f", "not an ONNX model"),
        (b"\x08\x07", "no graph in the file"),
    ],
)
def test_unreadable_model_file(tmp_path: Path, content: bytes, reason: str) -> None:
    write(tmp_path, GOOD, content)
    (finding,) = lint_path(tmp_path)
    assert (finding.rule, finding.severity, finding.line) == ("O501", "error", 0)
    assert finding.path.endswith("nli/1/model.onnx")
    assert reason in finding.message


def test_large_files_are_scanned_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(tiny_onnx([*NLI_INPUTS, ("scale", FLOAT, [1])], initializers=["scale"]))
    assert read_onnx_io(path, full_load_limit=0) == read_onnx_io(path)
    assert set(read_onnx_io(path, full_load_limit=0).initializers) == {"scale"}
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(OnnxReadError, match="truncated"):
        read_onnx_io(path, full_load_limit=0)


def test_model_folder_holds_model_onnx(tmp_path: Path) -> None:
    write_model(tmp_path, "nli", GOOD, {"1/model.onnx/model.onnx": tiny_onnx(NLI_INPUTS[:1])})
    assert [f.rule for f in lint_path(tmp_path)] == ["O502"]


def test_explicit_zero_does_not_stop_autocomplete(tmp_path: Path) -> None:
    write(tmp_path, 'name: "nli"\nbackend: "onnxruntime"\nmax_batch_size: 0\n')
    (finding,) = lint_path(tmp_path)
    assert (finding.rule, finding.line) == ("O508", 3)
    assert "the backend cannot tell 0 from unset" in finding.hint


def test_autofill_refuses_max_batch_size_for_a_fixed_batch_model(tmp_path: Path) -> None:
    write(tmp_path, 'name: "nli"\nbackend: "onnxruntime"\nmax_batch_size: 8\n', FIXED_BATCH)
    (finding,) = lint_path(tmp_path)
    assert finding.rule == "O507"
    assert finding.message == (
        "autofill failed for model 'nli': model does not support batching while non-zero max_batch_size is specified"
    )


def test_no_batching_config_against_a_batching_model(tmp_path: Path) -> None:
    write(tmp_path, GOOD.replace("max_batch_size: 8", "max_batch_size: 0"))
    findings = lint_path(tmp_path)
    assert {f.rule for f in findings} == {"O506"}
    assert "set max_batch_size > 0" in findings[0].hint


def test_fixed_model_dim_against_config_wildcard_is_an_error(tmp_path: Path) -> None:
    model = tiny_onnx([("input_ids", INT64, ["batch", 16])], NLI_OUTPUTS)
    write(tmp_path, HEAD + ONE_INPUT.replace("[ 16 ]", "[ -1 ]") + OUTPUTS, model)
    (finding,) = lint_path(tmp_path)
    assert (finding.rule, finding.severity) == ("O506", "error")
    assert "the model fixes a dimension" in finding.hint


def test_data_type_names(tmp_path: Path) -> None:
    model = tiny_onnx([("text", 8, ["batch", 1])], [("logits", FLOAT, ["batch", 3])])
    config = HEAD + 'input [ { name: "text" data_type: TYPE_BF16 dims: [ 1 ] } ]\n' + OUTPUTS
    write(tmp_path, config, model)
    (finding,) = lint_path(tmp_path)
    assert finding.message == "unsupported datatype TYPE_BF16 for input 'text' for model 'nli'"
    assert "the model provides TYPE_BYTES" in finding.hint


def test_non_onnxruntime_models_are_not_read(tmp_path: Path) -> None:
    write_model(tmp_path, "py", 'name: "py"\nbackend: "python"\nmax_batch_size: 0\n', {"1/model.py": ""})
    write_model(tmp_path, "py", 'name: "py"\nbackend: "python"\n', {"1/model.onnx": b"garbage"})
    assert not [f for f in lint_path(tmp_path) if f.rule.startswith("O")]


def test_findings_are_not_repeated_per_version(tmp_path: Path) -> None:
    config = HEAD + INPUTS + 'output [ { name: "logits" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
    write_model(tmp_path, "nli", config, {"1/model.onnx": tiny_onnx(), "2/model.onnx": tiny_onnx()})
    assert [f.rule for f in lint_path(tmp_path)] == ["O506"]


def test_model_without_config_is_auto_completed_with_batch_4(tmp_path: Path) -> None:
    (tmp_path / "nli" / "1").mkdir(parents=True)
    (tmp_path / "nli" / "1" / "model.onnx").write_bytes(tiny_onnx())
    finding, missing = lint_path(tmp_path)
    assert (missing.rule, missing.severity) == ("C002", "warning")
    assert (finding.rule, finding.severity, finding.line) == ("O508", "warning", 0)
    assert "config.pbtxt is missing" in finding.message
    assert "max_batch_size 4" in finding.message
    (tmp_path / "nli" / "1" / "model.onnx").write_bytes(FIXED_BATCH)
    assert [f.rule for f in lint_path(tmp_path)] == ["C002"]
    (tmp_path / "nli" / "1" / "model.onnx").write_bytes(b"\x08\x07")
    assert sorted(f.rule for f in lint_path(tmp_path)) == ["C002", "O501"]


def test_overriding_an_initializer_needs_optional(tmp_path: Path) -> None:
    config = PASSING["O502"][0].replace(" optional: true", "")
    write(tmp_path, config, PASSING["O502"][1])
    (finding,) = lint_path(tmp_path)
    assert finding.rule == "O503"
    assert finding.message == "unable to load model 'nli', configuration expects 3 inputs, model provides 2"
    assert finding.hint.startswith("scale: initializers of the model, so mark them optional: true")


def test_one_reader_for_the_builder_and_the_linter(tmp_path: Path) -> None:
    from pytest_triton.errors import ConfigError
    from pytest_triton.repository.builder import onnx_io

    model = Path(__file__).resolve().parents[3] / "model_repos" / "assets" / "tiny-mdeberta" / "model.onnx"
    inputs, outputs = onnx_io(model, 8)
    found = read_onnx_io(model)
    assert [t.name for t in inputs] == list(found.inputs)
    assert [t.name for t in outputs] == list(found.outputs)
    assert [t.dims for t in inputs] == [tuple((found.inputs[t.name].dims or ())[1:]) for t in inputs]
    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"\x08")
    with pytest.raises(ConfigError, match=r"not an ONNX model|truncated"):
        onnx_io(broken, 0)
    assert issubclass(OnnxReadError, ConfigError)
