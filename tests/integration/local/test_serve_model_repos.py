"""``python -m pytest_triton serve`` on every servable repository under model_repos/, as a new user runs it.

Each one is served on the embedded Triton (ONNX through the adapter), answers inference correctly, is left
exactly as it was (the python backend writes ``__pycache__`` beside model.py: into the staged copy, not the
user's folder), and on Ctrl-C nothing is left: no process, no work folder, no shared memory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from .local_triton_helpers import alive
from .local_triton_helpers import skip_without_embedded_triton
from .local_triton_helpers import stubs_of
from .local_triton_helpers import triton_processes

skip_without_embedded_triton()
pytest.importorskip("onnxruntime", reason="the ONNX adapter and the reference need onnxruntime")

from pytest_triton.client.nli import NliClient  # noqa: E402
from pytest_triton.client.nli import NliTokenizer  # noqa: E402
from pytest_triton.client.nli import load_samples  # noqa: E402
from pytest_triton.client.reference import OnnxReference  # noqa: E402
from pytest_triton.client.transports import TritonHttpTransport  # noqa: E402
from pytest_triton.parity.tensors import assert_parity  # noqa: E402

MODEL_REPOS = Path(__file__).resolve().parents[3] / "model_repos"
ASSETS = MODEL_REPOS / "assets" / "tiny-mdeberta"
SAMPLES = load_samples(MODEL_REPOS / "samples" / "nli_samples.jsonl")[:6]

pytestmark = pytest.mark.xdist_group("embedded-triton")


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def _check_python_add(url: str) -> None:
    a = np.arange(4, dtype=np.float32).reshape(1, 4)
    out = TritonHttpTransport(url).infer("python_add", {"A": a, "B": a}, ["SUM"])
    np.testing.assert_array_equal(out["SUM"], a + a)


def _check_mdeberta(url: str) -> None:
    tokenizer = NliTokenizer(ASSETS / "tokenizer.json", max_length=512)
    pairs = [s.pair for s in SAMPLES]
    served = NliClient(TritonHttpTransport(url), tokenizer).logits(pairs)
    reference = NliClient(OnnxReference(ASSETS / "model.onnx"), tokenizer).logits(pairs)
    assert_parity({"logits": reference}, {"logits": served}, preset="fp32", candidate_name="served")


def _check_ensemble(url: str) -> None:
    results = NliClient(TritonHttpTransport(url)).classify_text([s.pair for s in SAMPLES])
    assert [r.label for r in results] == [s.label for s in SAMPLES]


REPOSITORIES = {
    "examples": (_check_python_add, []),
    "scenario07/onnx": (_check_mdeberta, ["mdeberta"]),
    "scenario07/tensorrt": (_check_mdeberta, ["mdeberta"]),
    "scenario07/ensemble": (_check_ensemble, ["mdeberta"]),
}


def _staged_repository(server: int) -> Path:
    for arg in Path(f"/proc/{server}/cmdline").read_text().split("\0"):
        if arg.startswith("--model-repository="):
            return Path(arg.split("=", 1)[1])
    raise AssertionError("tritonserver has no --model-repository")


def _server_of(serve: subprocess.Popen[str]) -> int:
    """The tritonserver started under ``serve`` (its child, or its sandbox supervisor's)."""
    for pid in (int(pid) for pid, name in triton_processes().items() if name == "tritonserver"):
        ancestor = pid
        while ancestor > 1:
            status = Path(f"/proc/{ancestor}/status").read_text()
            ancestor = int(status.split("PPid:\t", 1)[1].split("\n", 1)[0])
            if ancestor == serve.pid:
                return pid
    raise AssertionError(f"serve (pid {serve.pid}) has no tritonserver below it")


@pytest.mark.parametrize("name", sorted(REPOSITORIES))
def test_serve_every_example_repository(name: str) -> None:
    repository = MODEL_REPOS / name
    check, adapted = REPOSITORIES[name]
    before = _snapshot(repository)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_triton", "serve", str(repository)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},  # let it write bytecode
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, f"serve printed nothing: {proc.stderr.read() if proc.stderr else ''}"
        payload = json.loads(line)
        assert [c.split(":")[1].strip() for c in payload["changes"] if c.startswith("adapted:")] == adapted
        server = _server_of(proc)
        staged = _staged_repository(server)
        assert staged.name == "repository"
        assert staged.parent.name.startswith("pytest-triton-")
        stubs = stubs_of(server)
        check(payload["http"])
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 0, stderr
        deadline = time.monotonic() + 5
        while (alive(server) or any(alive(p) for p in stubs)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(server)
        assert not any(alive(p) for p in stubs)
        assert not staged.parent.exists(), "the launcher's work folder outlived the server"
        assert not list(Path("/dev/shm").glob(f"pytest_triton_{proc.pid}_*"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _snapshot(repository) == before, "serving changed the user's repository"
