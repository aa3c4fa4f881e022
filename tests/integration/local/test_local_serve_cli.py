"""``serve``: one JSON line once ready, inference works, SIGINT/SIGTERM stop everything with exit 0."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from .local_triton_helpers import ADD_CONFIG
from .local_triton_helpers import add_model
from .local_triton_helpers import alive
from .local_triton_helpers import described
from .local_triton_helpers import echo_model
from .local_triton_helpers import group_of
from .local_triton_helpers import left_in
from .local_triton_helpers import parent_of
from .local_triton_helpers import skip_without_embedded_triton
from .local_triton_helpers import stubs_of
from .local_triton_helpers import triton_processes
from .local_triton_helpers import write_model

skip_without_embedded_triton()

SERVE = "import sys; from pytest_triton.servers.serve_cli import serve_main; sys.exit(serve_main(sys.argv[1:]))"


def _serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", SERVE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "serve printed nothing in time"
    return proc.stdout.readline()


def _server_pid(http_url: str) -> int:
    port = http_url.rsplit(":", 1)[1]
    for pid, name in triton_processes().items():
        if name == "tritonserver" and f"--http-port={port}" in Path(f"/proc/{pid}/cmdline").read_text():
            return int(pid)
    raise AssertionError(f"no tritonserver with --http-port={port}")


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("repo")
    add_model(repo)
    echo_model(repo)
    return repo


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_prints_urls_serves_and_stops(repository: Path, stop_signal: signal.Signals) -> None:
    import tritonclient.http as httpclient

    proc = _serve(str(repository), "--timeout", "120")
    try:
        line = _read_line(proc, 120)
        payload = json.loads(line)
        assert set(payload) == {"http", "grpc", "metrics", "models", "launcher", "changes", "control_headers"}
        assert (payload["launcher"], payload["changes"]) == ("local", [])
        headers = {"pytest-triton-control", "triton-grpc-protocol-pytest-triton-control"}
        assert set(payload["control_headers"]) == headers
        assert payload["models"] == ["add", "echo"]
        assert payload["http"].startswith("http://127.0.0.1:")
        assert payload["grpc"].startswith("127.0.0.1:")
        assert payload["metrics"].startswith("http://127.0.0.1:")
        assert payload["metrics"].endswith("/metrics")

        client = httpclient.InferenceServerClient(payload["http"].removeprefix("http://"))
        try:
            inputs = [httpclient.InferInput("A", [2], "FP32"), httpclient.InferInput("B", [2], "FP32")]
            inputs[0].set_data_from_numpy(np.array([1.5, 2.0], dtype=np.float32))
            inputs[1].set_data_from_numpy(np.array([0.5, 1.0], dtype=np.float32))
            np.testing.assert_array_equal(client.infer("add", inputs).as_numpy("C"), [2.0, 3.0])
        finally:
            client.close()

        server = _server_pid(payload["http"])
        group = group_of(server)
        stubs = stubs_of(server)
        assert stubs
        proc.send_signal(stop_signal)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 0, stderr
        deadline = time.monotonic() + 3
        while (alive(server) or any(alive(p) for p in stubs)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(server)
        assert not any(alive(p) for p in stubs)
        assert left_in(group) == [], described(left_in(group))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_serve_start_failure_exits_1(tmp_path: Path) -> None:
    add_model(tmp_path)
    (tmp_path / "add" / "config.pbtxt").write_text('backend: "python"\ninput [ { name: "A" } { name: "B" } ]\n')
    proc = _serve(str(tmp_path), "--timeout", "120")
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert stdout == ""
    assert "failed to read text proto" in stderr
    assert "model 'add' failed to load" in stderr


SLOW_MODEL = """
import time


class TritonPythonModel:
    def initialize(self, args):
        time.sleep(30)

    def execute(self, requests):
        return []
"""


def test_serve_signal_before_ready_exits_130(tmp_path: Path) -> None:
    write_model(tmp_path, "slow", SLOW_MODEL, ADD_CONFIG)
    proc = _serve(str(tmp_path), "--timeout", "120")
    try:
        deadline = time.monotonic() + 30
        server = group = None
        while group is None and time.monotonic() < deadline:
            # the server is serve's child, or its sandbox supervisor's: a first attempt may end (a port taken,
            # a known start crash), so the group is the one whose server lived to start the slow model's stub
            server = next((p for p in triton_processes() if proc.pid in (parent_of(p), parent_of(parent_of(p)))), None)
            if server is not None and stubs_of(server):
                with contextlib.suppress(ProcessLookupError):
                    group = group_of(server)
            time.sleep(0.05)
        assert group is not None, "serve's tritonserver started no stub in 30 s"
        assert server is not None
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
        assert stdout == ""
        assert proc.returncode == 130, stderr
        assert "interrupted before the server was ready" in stderr
        assert not alive(server)
        assert left_in(group) == [], described(left_in(group))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_serve_exits_1_when_the_server_dies(repository: Path) -> None:
    proc = _serve(str(repository), "--timeout", "120", "--model", "add")
    try:
        payload = json.loads(_read_line(proc, 120))
        assert payload["models"] == ["add"]
        server = _server_pid(payload["http"])
        group = group_of(server)
        os.kill(server, signal.SIGKILL)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 1
        assert "error: the server ended while serving: tritonserver (pid " in stderr
        assert "is no longer running: it was killed by SIGKILL" in stderr
        assert left_in(group) == [], described(left_in(group))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
