"""Contracts files: what is accepted, and one clear error naming the file, line, key and value otherwise."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_triton.contracts import load_declaration
from pytest_triton.contracts import parse_declaration
from pytest_triton.errors import ConfigError

MODEL_REPOS = Path(__file__).resolve().parents[3] / "model_repos"

GOOD = """\
[reference]
onnx = "model.onnx"

[variants.fp32]
repository = "repo"
model = "m"

[variants.fp16]
repository = "repo"
model = "m"
precision = "fp16"
budget = { "cpu-*" = "m-cpu" }

[inputs]
samples = "samples.jsonl"

[parity.outputs.y]
atol = 0.5
argmax = true

[latency]
batch_size = 1
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "repo").mkdir()
    (tmp_path / "model.onnx").write_bytes(b"")
    (tmp_path / "samples.jsonl").write_text("")
    (tmp_path / "samples.csv").write_text("")
    return tmp_path


def parse(folder: Path, text: str) -> object:
    return parse_declaration(text, folder / "contracts.toml")


def test_a_good_declaration(folder: Path) -> None:
    declaration = parse_declaration(GOOD, folder / "contracts.toml")
    assert list(declaration.variants) == ["fp32", "fp16"]
    assert [v.name for v in declaration.candidates] == ["fp32", "fp16"]
    assert declaration.variants["fp16"].precision_on(True) == "fp16"
    assert declaration.variants["fp16"].budget_name("cpu-2core-x86_64") == "m-cpu"
    assert declaration.variants["fp16"].budget_name("nvidia-h200") == "fp16"
    (check,) = declaration.outputs
    assert check.tolerance is not None
    assert (check.tolerance.atol, check.tolerance.rtol) == (0.5, 1e-4)
    assert declaration.latency is not None
    assert declaration.latency.variants == ("fp32", "fp16")


# (replace this, with that) in GOOD -> the error's text, after "contracts.toml:LINE:1: "
INVALID = [
    ('precision = "fp16"', 'precision = "fp8"', "11", "variants.fp16.precision='fp8': expected one of 'fp32'"),
    (
        'model = "m"\n\n[variants.fp16]',
        'model = ""\n\n[variants.fp16]',
        "6",
        "variants.fp32.model='': expected a non-empty",
    ),
    (
        'repository = "repo"\nmodel = "m"\n\n[variants.fp16]',
        'repository = "nowhere"\nmodel = "m"\n\n[variants.fp16]',
        "5",
        "variants.fp32.repository='nowhere': repository",
    ),
    ("atol = 0.5", "atol = -1", "18", "parity.outputs.y.atol=-1: expected a finite number in [0, 1,000]"),
    ("argmax = true", "argmax = 1", "19", "parity.outputs.y.argmax=1: expected true or false"),
    ("batch_size = 1", "batch_size = 0", "22", "latency.batch_size=0: expected an integer from 1 to 4,096"),
    ("batch_size = 1", "concurrency = 0", "22", "latency.concurrency=0: expected an integer from 1 to 100,000"),
    ("batch_size = 1", "batchsize = 1", "22", "latency.batchsize: unknown key 'batchsize' in latency; known keys:"),
    ('samples = "samples.jsonl"', 'samples = "samples.csv"', "15", "inputs.samples='samples.csv': expected a .jsonl"),
    (
        'onnx = "model.onnx"',
        'variant = "int8"',
        "2",
        "reference.variant='int8': expected one of the variants (fp32, fp16)",
    ),
]


@pytest.mark.parametrize(("old", "new", "line", "message"), INVALID, ids=[case[3].split("=")[0] for case in INVALID])
def test_an_invalid_value_is_one_error_naming_file_line_key_and_value(
    folder: Path, old: str, new: str, line: str, message: str
) -> None:
    assert old in GOOD
    with pytest.raises(ConfigError) as info:
        parse(folder, GOOD.replace(old, new, 1))
    assert str(info.value).startswith(f"{folder / 'contracts.toml'}:{line}:1: {message}"), str(info.value)


def test_missing_tables_say_what_to_add(folder: Path) -> None:
    with pytest.raises(ConfigError, match=r"no variants: add at least one \[variants.NAME\] table"):
        parse(folder, '[reference]\nonnx = "model.onnx"\n')
    with pytest.raises(ConfigError, match=r"\[inputs\] is missing: give samples"):
        parse(folder, GOOD.split("[inputs]")[0])
    with pytest.raises(ConfigError, match="not valid TOML"):
        parse(folder, "[reference\n")


def test_a_renamed_output_must_be_a_compared_one(folder: Path) -> None:
    text = GOOD.replace('precision = "fp16"', 'precision = "fp16"\noutputs = { z = "Z" }')
    # and a precision table names the entry that is wrong, on its line
    table = GOOD.replace('precision = "fp16"', 'precision = { cpu = "fp32", gpu = "fp64" }')
    with pytest.raises(ConfigError, match=r"contracts.toml:11:29: variants.fp16.precision.gpu='fp64': expected one of"):
        parse(folder, table)
    with pytest.raises(ConfigError, match=r"variants.fp16.outputs='z': expected an output of \[parity.outputs\] \(y\)"):
        parse(folder, text)


def test_a_pyproject_table(folder: Path) -> None:
    body = GOOD.replace("[reference]", "[tool.pytest-triton.contracts.reference]")
    for table in ("variants.", "inputs", "parity.", "latency"):
        body = body.replace(f"[{table}", f"[tool.pytest-triton.contracts.{table}")
    (folder / "pyproject.toml").write_text(body.replace('"cpu-*"', '"cpu-*"'))
    declaration = load_declaration(folder / "pyproject.toml")
    assert list(declaration.variants) == ["fp32", "fp16"]
    bad = body.replace('precision = "fp16"', 'precision = "fp8"')
    (folder / "pyproject.toml").write_text(bad)
    with pytest.raises(
        ConfigError, match=r"pyproject.toml:11:1: tool.pytest-triton.contracts.variants.fp16.precision='fp8'"
    ):
        load_declaration(folder / "pyproject.toml")


def test_label_checks(folder: Path) -> None:
    labels = '\n[parity.labels.label]\nfrom = "y"\nnames = ["a", "b", "c"]\nvariants = { fp16 = "LABEL" }\n'
    declaration = parse_declaration(GOOD.replace("\n[latency]", labels + "\n[latency]"), folder / "contracts.toml")
    (check,) = declaration.labels
    assert (check.source, check.names, dict(check.outputs)) == ("y", ("a", "b", "c"), {"fp16": "LABEL"})
    assert check.reference_labels(np.array([[0.1, 0.9, 0.0], [2.0, 1.0, 0.0]])) == ["b", "a"]
    with pytest.raises(
        ConfigError, match=r"parity.labels.label.from='z': expected an output of \[parity.outputs\] \(y\)"
    ):
        parse(folder, GOOD.replace("\n[latency]", labels.replace('"y"', '"z"') + "\n[latency]"))
    with pytest.raises(ConfigError, match=r"parity.labels.label.variants='gpu': expected one of the variants"):
        parse(folder, GOOD.replace("\n[latency]", labels.replace("fp16 =", "gpu =") + "\n[latency]"))


@pytest.mark.parametrize("name", ["scenario07.contracts.toml", "tabular.contracts.toml"])
def test_the_shipped_declarations_load(name: str) -> None:
    declaration = load_declaration(MODEL_REPOS / name)
    assert declaration.candidates
    assert all(v.repository.is_dir() for v in declaration.variants.values())


def test_the_shipped_label_names_are_the_models() -> None:
    """The label names of the declarations are those the postprocess steps are built with."""
    id2label = json.loads((MODEL_REPOS / "assets" / "tiny-mdeberta" / "labels.json").read_text())["id2label"]
    (nli,) = load_declaration(MODEL_REPOS / "scenario07.contracts.toml").labels
    assert list(nli.names) == [id2label[str(i)] for i in range(len(id2label))]
    (tabular,) = load_declaration(MODEL_REPOS / "tabular.contracts.toml").labels
    config = (MODEL_REPOS / "tabular" / "ensemble" / "postprocess" / "config.pbtxt").read_text()
    assert f'string_value: "{",".join(tabular.names)}"' in config


RELATIVE = '\n[[latency.relative]]\nvariant = "fp16"\nbaseline = "{baseline}"\nmax_ratio = 1.5\n'


def test_latency_can_time_the_onnx_reference_and_record_into_pytest_benchmark(folder: Path) -> None:
    text = GOOD.replace("batch_size = 1", 'variants = ["fp16", "onnxruntime-inprocess"]\nbenchmark = true')
    declaration = parse_declaration(text + RELATIVE.format(baseline="onnxruntime-inprocess"), folder / "c.toml")
    latency = declaration.latency
    assert latency is not None
    assert latency.variants == ("fp16", "onnxruntime-inprocess")
    assert latency.benchmark
    (rule,) = latency.relative
    assert (rule.variant, rule.baseline, rule.name) == ("fp16", "onnxruntime-inprocess", "fp16/onnxruntime-inprocess")
    default = parse_declaration(GOOD, folder / "contracts.toml").latency
    assert default is not None
    assert default.benchmark is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            GOOD.replace('onnx = "model.onnx"', 'onnx = "model.onnx"\nname = "fp32"'),
            r"contracts.toml:3:1: reference.name='fp32': expected a name no variant has",
        ),
        (GOOD + "benchmark = 1\n", r"latency.benchmark=1: expected true or false"),
        (GOOD + RELATIVE.format(baseline="fp16"), r"latency.relative\[0\].baseline='fp16': expected another variant"),
        (
            GOOD + RELATIVE.format(baseline="gpu"),
            r"latency.relative\[0\].baseline='gpu': expected one of the variants or the reference "
            r"\(fp32, fp16, onnxruntime-inprocess\)",
        ),
        (
            GOOD.replace("batch_size = 1", "concurrency = 65"),
            r"latency.concurrency=65: expected 1 to 64 clients sending at once \(each its own connection",
        ),
    ],
    ids=["reference-name", "benchmark", "same-pair", "unknown-baseline", "concurrency"],
)
def test_latency_keys_are_checked(folder: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse(folder, text)


def test_a_variant_reference_is_timed_as_a_variant(folder: Path) -> None:
    text = GOOD.replace('onnx = "model.onnx"', 'variant = "fp32"') + RELATIVE.format(baseline="fp32")
    declaration = parse_declaration(text, folder / "contracts.toml")
    assert declaration.latency is not None
    assert declaration.latency.relative[0].baseline == "fp32"
    with pytest.raises(ConfigError, match=r"latency.relative\[0\].baseline='onnxruntime-inprocess': expected one of"):
        parse(folder, text.replace('baseline = "fp32"', 'baseline = "onnxruntime-inprocess"'))


@pytest.mark.parametrize(
    ("module", "old", "new", "message"),
    [
        ("hypothesis", 'samples = "samples.jsonl"', "generate = {}", "inputs.generate draws inputs with Hypothesis"),
        ("pytest_benchmark", "batch_size = 1", "benchmark = true", "latency.benchmark records into pytest-benchmark"),
        ("onnxruntime", "", "", "reference.onnx runs in this process on ONNX Runtime"),
    ],
)
def test_a_missing_extra_is_named_when_the_file_is_read(
    folder: Path, monkeypatch: pytest.MonkeyPatch, module: str, old: str, new: str, message: str
) -> None:
    text = GOOD.replace(old, new, 1) if old else GOOD
    parse(folder, text)  # with the module: read
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now fails, as without the extra
    extra = {"hypothesis": "contracts", "pytest_benchmark": "bench", "onnxruntime": "serve"}[module]
    with pytest.raises(ConfigError, match=rf"{message}: .* pip install 'pytest-triton\[{extra}\]'"):
        parse(folder, text)
