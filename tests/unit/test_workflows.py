"""The GitHub Actions workflows are valid (check-jsonschema's vendored schema, offline) and run what they say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))

pytest.importorskip("check_jsonschema", reason="the workflow linter is check-jsonschema (pip install '.[test]')")


def _check(*paths: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", *map(str, paths)]
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)


def test_there_is_a_cpu_and_a_gpu_workflow() -> None:
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "gpu.yml"}


def test_workflows_match_the_github_schema() -> None:
    done = _check(*WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_linter_rejects_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("name: broken\non: [push]\njobs:\n  a:\n    steps:\n      - run: true\n    runs_on: x\n")
    done = _check(broken)
    assert done.returncode == 1, done.stdout + done.stderr


def test_gpu_workflow_runs_the_contract_suite_in_docker_on_a_gpu_runner() -> None:
    text = (ROOT / ".github" / "workflows" / "gpu.yml").read_text()
    assert "runs-on: [self-hosted, gpu]" in text
    needed_words = ("--gpu", "--triton-launcher docker", "--triton-image", "tests/contracts", "upload-artifact")
    for needed in (*needed_words, "--triton-contracts model_repos/scenario07.contracts.toml"):
        assert needed in text, needed


def test_cpu_workflow_runs_ci_run() -> None:
    text = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    assert "run: bash .ci/run" in text
    assert "check-jsonschema --builtin-schema vendor.github-workflows" in text
