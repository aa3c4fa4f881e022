"""A fresh ``pip install pytest-triton`` (no extras) into a new virtual environment: what it pulls, and that it
lints, through the CLI and as pytest items, without grpcio, gevent or an ONNX Runtime.

The package is built from a copy of its sources (the checkout is never written to) and its dependencies come
from the package index pip is configured with; the run fails, not skips, where pip cannot install it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.package_index import without_proxies

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "model_repos" / "examples"
BROKEN = ROOT / "model_repos" / "broken"
# what the serve extra brings and linting must not need
SERVING_ONLY = {"grpcio", "gevent", "geventhttpclient", "aiohttp", "onnxruntime", "onnxruntime-gpu", "nvidia-pytriton"}

pytestmark = pytest.mark.xdist_group("base-install")


def _run(*cmd: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = without_proxies(os.environ, "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")  # pip goes to the index directly
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def base_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with pytest-triton installed without extras; its bin folder."""
    work = tmp_path_factory.mktemp("base-install")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "pytest_triton", source / "pytest_triton", ignore=shutil.ignore_patterns("__pycache__"))
    venv.create(work / "env", with_pip=True)
    bin_dir = work / "env" / ("Scripts" if sys.platform == "win32" else "bin")
    done = _run(bin_dir / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", source, cwd=work)
    assert done.returncode == 0, f"pip install of the base package failed:\n{done.stdout}\n{done.stderr}"
    return bin_dir


def test_base_install_pulls_no_serving_dependency(base_env: Path) -> None:
    done = _run(base_env / "python", "-m", "pip", "list", "--format", "json", cwd=base_env)
    assert done.returncode == 0, done.stderr
    names = {entry["name"].lower().replace("_", "-") for entry in json.loads(done.stdout)}
    assert {"pytest-triton", "protobuf", "tritonclient"} <= names, sorted(names)
    pulled = sorted(names & SERVING_ONLY)
    assert not pulled, f"a base install pulls what only serving needs: {pulled} (all: {sorted(names)})"


def test_base_install_lints_from_the_cli(base_env: Path, tmp_path: Path) -> None:
    clean = _run(base_env / "python", "-m", "pytest_triton", "lint", EXAMPLES, cwd=tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    broken = _run(base_env / "python", "-m", "pytest_triton", "lint", BROKEN, cwd=tmp_path)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "L103 unexpected directory name 'add_python' for model 'add'" in broken.stdout, broken.stdout
    assert " errors" in broken.stderr, broken.stderr


def test_base_install_lints_as_pytest_items(base_env: Path, tmp_path: Path) -> None:
    # -c /dev/null: not this repository's pytest configuration (its filterwarnings name the test extra's plugins)
    args = ("-c", os.devnull, "--rootdir", tmp_path, "-p", "no:cacheprovider", "-q", "--triton-lint", EXAMPLES)
    done = _run(base_env / "python", "-m", "pytest", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout, done.stdout
    assert "warning" not in done.stdout.lower(), done.stdout
