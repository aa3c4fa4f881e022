"""A user's first day from a wheel: build it, install it with the serving extras in a new virtual environment, and
go from a model repository the project has never seen to asserted latency budgets without writing any TOML:
``pytest-triton init REPO``, ``pytest --triton-contracts``, ``--triton-budgets-record``, a run that asserts them.

The wheel is built from a copy of the sources (the checkout is never written to); pip installs from the package
index it is configured with, and the run fails, not skips, where it cannot. Slow (an install of the serve extra and
three pytest runs on a real tritonserver): the time to the first green run is printed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

from tests.package_index import without_proxies

ROOT = Path(__file__).resolve().parents[3]
# two python-backend models no file of the project declares: one batching with two outputs, one not batching with
# a variable dim (init writes the shape it is sent as)
MODELS = {
    "scale_shift": (
        'name: "scale_shift"\nbackend: "python"\nmax_batch_size: 4\n'
        'input [ { name: "X" data_type: TYPE_FP32 dims: [ 3 ] } ]\n'
        'output [ { name: "Y" data_type: TYPE_FP32 dims: [ 3 ] },\n'
        '  { name: "TOTAL" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
        "instance_group [ { kind: KIND_CPU count: 1 } ]\n",
        "y = (x * 2.0 + 1.0).astype(np.float32)\n"
        '            out = [pb_utils.Tensor("Y", y), pb_utils.Tensor("TOTAL", y.sum(axis=1, keepdims=True))]',
        "X",
    ),
    "running_max": (
        'name: "running_max"\nbackend: "python"\nmax_batch_size: 0\n'
        'input [ { name: "VALUES" data_type: TYPE_INT32 dims: [ -1 ] } ]\n'
        'output [ { name: "PEAKS" data_type: TYPE_INT32 dims: [ -1 ] } ]\n',
        'out = [pb_utils.Tensor("PEAKS", np.maximum.accumulate(x).astype(np.int32))]',
        "VALUES",
    ),
}
MODEL_PY = """import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "{input}").as_numpy()
            {body}
            responses.append(pb_utils.InferenceResponse(out))
        return responses
"""

pytestmark = pytest.mark.xdist_group("first-day")


def _run(*cmd: str | Path, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = without_proxies(os.environ, "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")  # pip goes to the index directly
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _ok(done: subprocess.CompletedProcess[str], what: str) -> str:
    assert done.returncode == 0, f"{what} exited {done.returncode}:\n{done.stdout[-6000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def _repository(root: Path) -> Path:
    for name, (config, body, input_name) in MODELS.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(config, encoding="utf-8")
        (root / name / "1" / "model.py").write_text(MODEL_PY.format(input=input_name, body=body), encoding="utf-8")
    return root


def _wheel(work: Path) -> Path:
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "CHANGELOG.md"):
        shutil.copy(ROOT / name, source / name)
    # the docs link is followed: the copy holds the pages themselves
    shutil.copytree(ROOT / "pytest_triton", source / "pytest_triton", ignore=shutil.ignore_patterns("__pycache__"))
    done = _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", work / "dist", source, cwd=work)
    _ok(done, "pip wheel")
    (wheel,) = (work / "dist").glob("pytest_triton-*.whl")
    return wheel


def test_from_a_wheel_to_asserted_budgets_without_writing_toml(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    started = time.monotonic()
    venv.create(tmp_path / "env", with_pip=True)
    bin_dir = tmp_path / "env" / "bin"
    python = bin_dir / "python"
    _ok(_run(python, "-m", "pip", "install", "--quiet", "--upgrade", "pip", cwd=tmp_path), "pip upgrade")
    _ok(_run(python, "-m", "pip", "install", "--quiet", f"{wheel}[serve,contracts]", cwd=tmp_path), "pip install")
    installed = time.monotonic()

    shown = _ok(_run(python, "-m", "pip", "show", "pytest-triton", cwd=tmp_path), "pip show")
    assert re.search(r"^License(-Expression)?: Apache-2\.0$", shown, re.M), shown
    page = _ok(_run(bin_dir / "pytest-triton", "docs", "contracts", cwd=tmp_path), "pytest-triton docs contracts")
    assert page.startswith("# Contracts for any model"), page[:200]

    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # the user's project, not this one's
    _repository(project / "models")
    said = _ok(_run(bin_dir / "pytest-triton", "init", "models", "--out", "contracts", cwd=project), "init")
    files = sorted((project / "contracts").glob("*.contracts.toml"))
    assert [f.name for f in files] == ["running_max.contracts.toml", "scale_shift.contracts.toml"], said
    contracts = [arg for f in files for arg in ("--triton-contracts", f"contracts/{f.name}")]
    pytest_cmd: list[str | Path] = [python, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", *contracts]

    first = _ok(_run(*pytest_cmd, cwd=project), "the first run")
    first_green = time.monotonic()
    print(
        f"\nfirst day from a wheel: install {installed - started:.0f} s, then init and a first green run "
        f"{first_green - installed:.0f} s: {first_green - started:.0f} s to a first green run"
    )
    assert re.search(r"\b6 passed\b", first), first[-3000:]
    assert "report-only" in first.lower(), first[-3000:]  # no budgets yet: measured, not asserted

    budgets = project / "contracts" / "budgets.toml"
    recorded = _ok(
        _run(*pytest_cmd, "--triton-budgets-record", budgets, "--triton-budgets-margin", "20", cwd=project), "record"
    )
    assert "budgets recorded:" in recorded, recorded[-3000:]
    text = budgets.read_text(encoding="utf-8")
    for variant in ("running_max", "running_max-grpc", "scale_shift", "scale_shift-grpc"):
        assert f".{variant}]" in text, text

    # budgets.toml beside the first contracts file is read without naming it
    asserted = _ok(_run(*pytest_cmd, cwd=project), "the asserted run")
    assert re.search(r"\b6 passed\b", asserted), asserted[-3000:]
    assert "absolute and relative budgets of 'cpu-" in asserted or "budgets of 'nvidia-" in asserted, asserted[-3000:]
    assert "REPORT-ONLY" not in asserted, asserted[-3000:]
    rows = {
        line.split()[0]: line
        for line in asserted.splitlines()
        if re.match(r"(running_max|scale_shift)\S* +native", line)
    }
    assert sorted(rows) == ["running_max", "running_max-grpc", "scale_shift", "scale_shift-grpc"], asserted[-3000:]
    for variant, line in rows.items():  # held to the recorded budget: passed, or within it on a busy machine
        assert re.search(r"p50≤\S+ p90≤\S+ ms ≥\S+/s .*(PASS|UNSTABLE: within budget)", line), (variant, line)
