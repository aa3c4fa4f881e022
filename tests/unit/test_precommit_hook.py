"""The pre-commit hook ``triton-lint`` (.pre-commit-hooks.yaml): staged config.pbtxt files stand for their
repositories, model.tar.gz files for themselves; run for real through ``pre-commit try-repo``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_triton.precommit import lint_targets
from pytest_triton.precommit import main
from tests.package_index import without_proxies

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / ".pre-commit-hooks.yaml"


def test_configs_stand_for_their_repository_once_and_archives_for_themselves() -> None:
    files = ["repo/a/config.pbtxt", "repo/b/config.pbtxt", "other/m/config.pbtxt", "dist/model.tar.gz"]
    assert lint_targets(files) == ["repo", "other", "dist/model.tar.gz"]
    assert lint_targets(["m/config.pbtxt"]) == ["."]


def test_the_hook_lints_with_the_options_given_before_the_files(capsys: pytest.CaptureFixture[str]) -> None:
    broken = str(ROOT / "model_repos" / "broken" / "classifier" / "config.pbtxt")
    assert main(["--format", "github", broken]) == 1
    assert "::error file=" in capsys.readouterr().out
    assert main([]) == 0  # nothing staged: nothing to lint
    assert main([str(ROOT / "model_repos" / "examples" / "python_add" / "config.pbtxt")]) == 0


def test_the_hook_manifest_names_the_entry_and_the_files() -> None:
    text = HOOKS.read_text(encoding="utf-8")
    for needed in ("- id: triton-lint", "entry: python -m pytest_triton.precommit", "language: python"):
        assert needed in text, needed
    assert r"files: (^|/)(config\.pbtxt|model\.tar\.gz)$" in text


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, timeout=60)


@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit try-repo needs git")
def test_pre_commit_try_repo_fails_the_commit_of_a_broken_config(tmp_path: Path) -> None:
    """pre-commit installs this checkout into a virtual environment of its own (pip, from PyPI: minutes) and runs
    the hook on a repository's staged files: the broken model's findings fail it; the good model beside it (in
    another repository folder) gives none."""
    pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install pre-commit)")
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--error-unmatch", HOOKS.name], capture_output=True)
    if tracked.returncode:
        pytest.skip(".pre-commit-hooks.yaml is not tracked by git yet: pre-commit try-repo reads tracked files only")
    project = tmp_path / "project"
    shutil.copytree(ROOT / "model_repos" / "broken" / "classifier", project / "models" / "classifier")
    shutil.copytree(ROOT / "model_repos" / "examples" / "python_add", project / "good" / "python_add")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    env = without_proxies(os.environ, "PYTHONPATH")  # the hook's own environment (pip to the index directly)
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    files = ["models/classifier/config.pbtxt", "good/python_add/config.pbtxt"]
    cmd = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "triton-lint", "--files", *files]
    done = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "triton-lint (Triton model repositories)" in done.stdout
    assert "models/classifier/config.pbtxt:7:3: C001 failed to read text proto" in done.stdout, done.stdout
    assert "2 paths linted: 2 errors, 0 warnings, 0 infos" in done.stdout, done.stdout  # models/ and good/
    assert "good/" not in done.stdout, done.stdout
