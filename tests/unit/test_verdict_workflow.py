"""The reusable verdict workflow (.github/workflows/triton-verdict.yml): called with a contracts file, an image,
runner labels and a baseline ref, it runs the baseline pairs and keeps one sticky PR comment; this repository's
ci and gpu workflows call it. The schema check of every workflow is in test_workflows.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_triton.baseline.verdict import MARKER

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"

yaml = pytest.importorskip("ruamel.yaml", reason="ruamel.yaml comes with check-jsonschema (pip install '.[test]')")


def load(name: str) -> Any:
    return yaml.YAML(typ="safe").load((WORKFLOWS / name).read_text(encoding="utf-8"))


def test_it_is_called_with_contracts_image_runner_and_a_baseline_defaulting_to_the_pr_base() -> None:
    flow = load("triton-verdict.yml")
    call = flow[True]["workflow_call"] if True in flow else flow["on"]["workflow_call"]  # YAML 1.1 reads on: as true
    inputs = call["inputs"]
    assert inputs["contracts"]["required"] is True
    assert {"triton-image", "runner", "baseline", "gpu", "comment-key"} <= set(inputs)
    assert inputs["baseline"]["default"] == ""
    steps = flow["jobs"]["verdict"]["steps"]
    run = next(s for s in steps if s.get("name") == "Contracts against the base")
    assert run["env"]["BASELINE"] == "${{ inputs.baseline || format('origin/{0}', github.base_ref) }}"
    for needed in (
        "--triton-baseline",
        "--triton-verdict report/pr-verdict.md",
        "--triton-launcher docker",
        "--triton-gpu",
    ):
        assert needed in run["run"], needed
    assert flow["jobs"]["verdict"]["runs-on"] == "${{ fromJSON(inputs.runner) }}"
    checkout = steps[0]
    assert checkout["with"]["fetch-depth"] == 0  # the base's objects


def test_the_comment_is_found_again_by_its_marker_and_edited() -> None:
    flow = load("triton-verdict.yml")
    comment = next(s for s in flow["jobs"]["verdict"]["steps"] if s.get("name") == "Sticky pull-request comment")
    script = comment["with"]["script"]
    assert "<!-- pytest-triton verdict: ${process.env.KEY} -->" in script
    assert "updateComment" in script
    assert "createComment" in script
    assert MARKER == "<!-- pytest-triton verdict -->"  # the table's own first line (docs/pr-verdicts.md)


def test_ci_calls_it_on_the_hosted_runner_and_gpu_in_the_ngc_image() -> None:
    ci = load("ci.yml")["jobs"]["verdict"]
    assert ci["uses"] == "./.github/workflows/triton-verdict.yml"
    assert ci["with"]["contracts"] == "model_repos/tabular.contracts.toml"
    assert "triton-image" not in ci["with"]  # the embedded tritonserver
    assert ci["permissions"]["pull-requests"] == "write"
    gpu = load("gpu.yml")["jobs"]["verdict"]
    assert gpu["uses"] == "./.github/workflows/triton-verdict.yml"
    assert gpu["with"]["runner"] == '["self-hosted", "gpu"]'
    assert gpu["with"]["triton-image"].startswith("nvcr.io/nvidia/tritonserver:")
    assert gpu["with"]["gpu"] is True
