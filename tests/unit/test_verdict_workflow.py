"""The reusable verdict workflow (.github/workflows/triton-verdict.yml): called with a contracts file, an image,
runner labels and a baseline ref, it runs the baseline pairs and keeps one sticky PR comment; this repository's
ci and gpu workflows call it. The schema check of every workflow is in test_workflows.py."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_triton.baseline.verdict import MARKER
from pytest_triton.bench.report import ReportData
from pytest_triton.bench.report import to_json

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


def test_shards_fan_out_over_a_matrix_and_merge_into_one_comment() -> None:
    flow = load("triton-verdict.yml")
    call = flow[True]["workflow_call"] if True in flow else flow["on"]["workflow_call"]
    assert call["inputs"]["shards"] == {
        "description": call["inputs"]["shards"]["description"],
        "type": "number",
        "default": 1,
    }
    verdict = flow["jobs"]["verdict"]
    assert verdict["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    run = next(s for s in verdict["steps"] if s.get("name") == "Contracts against the base")
    assert '--triton-shard "$SHARD/$SHARDS"' in run["run"]
    merge = flow["jobs"]["merge"]
    assert merge["needs"] == "verdict"
    assert merge["if"] == "always() && inputs.shards > 1"
    comments = [
        s for job in ("verdict", "merge") for s in flow["jobs"][job]["steps"] if "github-script" in s.get("uses", "")
    ]
    assert len(comments) == 2
    assert comments[0] == comments[1]  # one step (a YAML anchor): the merge job's comment is the single job's
    assert "(github.job == 'merge' || inputs.shards == 1)" in comments[0]["if"]


def _step(job: str, name: str) -> str:
    steps = load("triton-verdict.yml")["jobs"][job]["steps"]
    return str(next(s for s in steps if s.get("name") == name)["run"])


def test_the_plan_lists_the_shards(tmp_path: Path) -> None:
    script = str(load("triton-verdict.yml")["jobs"]["plan"]["steps"][0]["run"])
    output = tmp_path / "output"
    for shards, expected in (("3", 0), ("0", 1), ("two", 1)):
        output.write_text("")
        env = {"SHARDS": shards, "GITHUB_OUTPUT": str(output), "PATH": os.environ["PATH"]}
        done = subprocess.run(["bash", "-e", "-c", script], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == expected, done.stdout + done.stderr
    output.write_text("")
    subprocess.run(["bash", "-e", "-c", script], env={**env, "SHARDS": "3"}, check=True, timeout=60)
    assert output.read_text() == "shards=[1,2,3]\n"


def _shard(folder: Path, index: int, status: str) -> None:
    shard = {"index": index, "total": 2, "run": "github run 1 attempt 1", "contracts": "abc", "variants": []}
    outcome = {"item": f"c.toml::parity[v{index}]", "check": f"parity[v{index}]", "status": status, "text": ""}
    data = dataclasses.replace(ReportData(), contracts=(outcome,), shard=shard)
    folder.mkdir(parents=True)
    (folder / "pr.json").write_text(json.dumps(to_json(data)))
    (folder / "pr-verdict.md").write_text(f"{MARKER}\n### shard {index} table\n")


def test_the_merge_step_writes_one_comment_and_one_verdict(tmp_path: Path) -> None:
    script = _step("merge", "One report and one verdict")
    summary = tmp_path / "summary.md"
    env = {"VENV": sys.prefix, "SHARDS": "2", "RESULT": "success", "GITHUB_STEP_SUMMARY": str(summary)}
    env["PATH"] = os.environ["PATH"]
    _shard(tmp_path / "shards" / "triton-verdict-default-shard-1", 1, "passed")
    _shard(tmp_path / "shards" / "triton-verdict-default-shard-2", 2, "failed")

    def run() -> subprocess.CompletedProcess[str]:
        command = ["bash", "-e", "-c", script]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    done = run()
    assert done.returncode == 1, done.stdout + done.stderr  # shard 2's item failed
    comment = (tmp_path / "report" / "pr-verdict.md").read_text()
    assert comment.count(MARKER) == 1
    assert comment.index("shard 1 table") < comment.index("shard 2 table")
    assert "verdict: FAIL: 1 failed of 2 contract item(s): c.toml::parity[v2]" in comment
    assert summary.read_text() == comment
    assert (tmp_path / "report" / "merged.json").is_file()

    shutil.rmtree(tmp_path / "shards" / "triton-verdict-default-shard-1")
    done = run()
    assert done.returncode == 2, done.stdout + done.stderr
    assert "shard(s) 1/2 missing" in (tmp_path / "report" / "pr-verdict.md").read_text()
