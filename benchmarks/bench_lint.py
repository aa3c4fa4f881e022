"""Lint speed: a 100-model repository (python and ONNX-config models, one ensemble).

Run: ``python -m pytest benchmarks/bench_lint.py -p no:xdist --benchmark-only``.
The goal from issue 2: well under a second for 100 models.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_triton.lint import lint_path

CONFIG = """name: "{name}"
backend: "python"
max_batch_size: 8
input [ {{ name: "INPUT" data_type: TYPE_FP32 dims: [ 16 ] }} ]
output [ {{ name: "OUTPUT" data_type: TYPE_FP32 dims: [ 16 ] }} ]
dynamic_batching {{ max_queue_delay_microseconds: 100 }}
instance_group [ {{ kind: KIND_CPU count: 1 }} ]
"""
ENSEMBLE = """name: "pipeline"
platform: "ensemble"
max_batch_size: 8
input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 16 ] } ]
ensemble_scheduling { step [
  { model_name: "model_000" model_version: -1 input_map { key: "INPUT" value: "INPUT" }
    output_map { key: "OUTPUT" value: "mid" } },
  { model_name: "model_001" model_version: -1 input_map { key: "INPUT" value: "mid" }
    output_map { key: "OUTPUT" value: "OUTPUT" } }
] }
"""


def make_repository(root: Path, count: int = 99) -> Path:
    for index in range(count):
        name = f"model_{index:03d}"
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(CONFIG.format(name=name))
        (root / name / "1" / "model.py").write_text("class TritonPythonModel:\n    pass\n")
    (root / "pipeline" / "1").mkdir(parents=True)
    (root / "pipeline" / "config.pbtxt").write_text(ENSEMBLE)
    return root


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repository(tmp_path_factory.mktemp("lint-bench"))


def test_lint_100_models(benchmark: Any, repository: Path) -> None:
    lint_path(repository)  # warm imports (protobuf, rule modules) outside the measurement
    findings = benchmark.pedantic(lint_path, args=(repository,), rounds=10, iterations=1)
    assert [f for f in findings if f.severity == "error"] == []
