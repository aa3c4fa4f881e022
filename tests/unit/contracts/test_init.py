"""``init REPO``: the contracts files it writes are accepted as written, per kind of model, and it never
overwrites a file unasked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_triton.contracts import load_declaration
from pytest_triton.contracts.init import write_contracts

ROOT = Path(__file__).resolve().parents[3]

CONFIGS = {
    # batching, two float inputs
    "adder": 'name: "adder"\nbackend: "python"\nmax_batch_size: 8\n'
    'input [ { name: "A" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "B" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
    'output [ { name: "SUM" data_type: TYPE_FP32 dims: [ 4 ] } ]\n',
    # not batching, a variable dim
    "peaks": 'name: "peaks"\nbackend: "python"\nmax_batch_size: 0\n'
    'input [ { name: "VALUES" data_type: TYPE_INT32 dims: [ -1 ] } ]\n'
    'output [ { name: "PEAKS" data_type: TYPE_INT32 dims: [ -1 ] } ]\n',
    # text in: a samples file
    "tokenize": 'name: "tokenize"\nbackend: "python"\nmax_batch_size: 4\n'
    'input [ { name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] } ]\n'
    'output [ { name: "IDS" data_type: TYPE_INT64 dims: [ -1 ] } ]\n',
    # on a GPU only: skipped with the reason elsewhere
    "gpu_only": 'name: "gpu_only"\nbackend: "python"\nmax_batch_size: 0\n'
    'input [ { name: "X" data_type: TYPE_FP16 dims: [ 2 ] } ]\n'
    'output [ { name: "Y" data_type: TYPE_FP16 dims: [ 2 ] } ]\n'
    "instance_group [ { kind: KIND_GPU count: 1 } ]\n",
    # decoupled: a streamed variant
    "repeat": 'name: "repeat"\nbackend: "python"\nmax_batch_size: 0\n'
    "model_transaction_policy { decoupled: true }\n"
    'input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
    'output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n',
}


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    for name, config in CONFIGS.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(config, encoding="utf-8")
    return root


def test_every_written_file_is_a_valid_declaration(repository: Path, tmp_path: Path) -> None:
    out = tmp_path / "contracts"
    files = write_contracts(repository, out)
    assert sorted(f.name for f in files) == [f"{n}.contracts.toml" for n in sorted(CONFIGS)]
    declarations = {f.name.split(".")[0]: load_declaration(f) for f in files}

    adder = declarations["adder"]
    assert adder.reference.variant == "adder"
    assert {n: v.protocol for n, v in adder.variants.items()} == {"adder": "http", "adder-grpc": "grpc"}
    assert adder.variants["adder"].repository == repository.resolve()
    assert adder.inputs.generated is not None
    assert adder.inputs.generated.batch_size == 2
    assert adder.latency is not None
    assert adder.latency.throughput_batch_size == 8

    peaks = declarations["peaks"]  # not batching: one row per request; the -1 dim gets a shape
    assert peaks.inputs.generated is not None
    assert peaks.inputs.generated.tensors["VALUES"].shape == (4,)
    assert peaks.latency is not None
    assert peaks.latency.throughput_batch_size == 1

    gpu_only = declarations["gpu_only"]
    assert {v.requires for v in gpu_only.variants.values()} == {("gpu",)}
    assert adder.variants["adder"].requires == ()

    repeat = declarations["repeat"]  # decoupled: HTTP refuses it
    assert {n: v.protocol for n, v in repeat.variants.items()} == {"repeat": "stream"}

    tokenize = declarations["tokenize"]  # text cannot be generated: a samples file with every input
    assert tokenize.inputs.samples == (out / "tokenize.samples.jsonl").resolve()
    lines = [json.loads(line) for line in tokenize.inputs.samples.read_text().splitlines()]
    assert lines
    assert all(r["inputs"][0]["name"] == "TEXT" and r["inputs"][0]["datatype"] == "BYTES" for r in lines)
    assert lines[0]["inputs"][0]["shape"] == [1, 1]


def test_files_that_exist_are_kept_unless_forced(repository: Path, tmp_path: Path) -> None:
    out = tmp_path / "contracts"
    out.mkdir()
    (out / "adder.contracts.toml").write_text("# mine\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"1 file\(s\) exist: .*adder.contracts.toml; kept: pass --force"):
        write_contracts(repository, out)
    assert (out / "adder.contracts.toml").read_text() == "# mine\n"
    assert not (out / "peaks.contracts.toml").exists()  # nothing written when anything would be overwritten
    write_contracts(repository, out, force=True)
    assert (out / "adder.contracts.toml").read_text().startswith("# Contracts of model 'adder'")


def test_the_cli_says_how_to_run_and_record(repository: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_triton", "init", str(repository), "--out", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert f"--triton-budgets-record {tmp_path / 'c' / 'budgets.toml'}" in done.stdout


def test_a_model_without_config_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "models" / "bare" / "1").mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_triton", "init", str(tmp_path / "models"), "--out", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"{tmp_path / 'models' / 'bare' / 'config.pbtxt'} does not exist" in done.stderr


def test_without_hypothesis_init_names_the_extra(repository: Path, tmp_path: Path) -> None:
    hidden = (  # this environment has Hypothesis: hide it as an install without the contracts extra would
        "import sys; sys.modules['hypothesis'] = None; from pytest_triton.__main__ import main; "
        f"sys.exit(main(['init', {str(repository)!r}, '--out', {str(tmp_path / 'c')!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", hidden], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "generated inputs need Hypothesis, not installed here: pip install 'pytest-triton[contracts]'" in done.stdout
