"""UrlLauncher against a fake Triton HTTP endpoint (standard library http.server)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_triton.errors import ModelLoadError
from pytest_triton.errors import ServerStartError
from pytest_triton.errors import ServerTimeout
from pytest_triton.servers import TritonServer
from pytest_triton.servers import UrlLauncher
from pytest_triton.servers.ports import free_port


class FakeTriton:
    """Models: name -> (state, reason, backend). Ready = state READY."""

    def __init__(self) -> None:
        self.models: dict[str, tuple[str, str, str]] = {
            "add": ("READY", "", "python"),
            "enc": ("READY", "", "onnxruntime"),
            "broken": ("UNAVAILABLE", "Internal: ValueError: boom", "python"),
            "later": ("UNAVAILABLE", "unloaded", "python"),
        }
        self.metrics = 'nv_inference_count{model="add",version="1"} 3\n'
        self.requests: list[str] = []


@pytest.fixture
def fake() -> Iterator[tuple[FakeTriton, str]]:
    state = FakeTriton()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any = None, text: str | None = None) -> None:
            data = text.encode() if text is not None else (json.dumps(body).encode() if body is not None else b"")
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            state.requests.append(f"GET {self.path}")
            parts = self.path.strip("/").split("/")
            if self.path in ("/v2/health/live", "/v2/health/ready"):
                self._send(200)
            elif self.path == "/metrics":
                self._send(200, text=state.metrics)
            elif parts[:2] == ["v2", "models"] and parts[-1] == "ready":
                model = state.models.get(parts[2])
                self._send(200 if model and model[0] == "READY" else 400)
            elif parts[:2] == ["v2", "models"] and parts[-1] == "config":
                self._send(200, {"name": parts[2], "backend": state.models[parts[2]][2]})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:
            state.requests.append(f"POST {self.path}")
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            parts = self.path.strip("/").split("/")
            if self.path == "/v2/repository/index":
                rows = [
                    {"name": n, "version": "1", "state": s, **({"reason": r} if r else {})}
                    for n, (s, r, _) in state.models.items()
                ]
                self._send(200, rows)
            elif parts[-1] == "load":
                name = parts[3]
                if name == "later":
                    state.models[name] = ("READY", "", "python")
                    self._send(200)
                else:
                    self._send(400, {"error": f"failed to load '{name}', failed to poll from model repository"})
            elif parts[-1] == "unload":
                state.models[parts[3]] = ("UNAVAILABLE", "unloaded", state.models[parts[3]][2])
                self._send(200)
            else:
                self._send(404, {"error": "not found"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_urls_default_to_tritons_port_layout() -> None:
    launcher = UrlLauncher("http://127.0.0.1:8000/")
    assert launcher.urls.http == "http://127.0.0.1:8000"
    assert launcher.urls.grpc == "127.0.0.1:8001"
    assert launcher.urls.metrics == "http://127.0.0.1:8002/metrics"
    assert launcher.urls.sagemaker is None
    other = UrlLauncher("localhost:9000", "h:1", metrics_url="http://m/metrics", sagemaker_url="http://s:8080")
    assert other.urls.http == "http://localhost:9000"
    assert (other.urls.grpc, other.urls.metrics, other.urls.sagemaker) == ("h:1", "http://m/metrics", "http://s:8080")


def test_start_waits_for_models_and_stop_does_nothing(fake: tuple[FakeTriton, str]) -> None:
    state, url = fake
    with UrlLauncher(url, models=["add", "enc"], progress=None) as launcher:
        checked: TritonServer = launcher
        assert isinstance(checked, TritonServer)
        assert launcher.control.ready("add")
        assert not launcher.control.ready("broken")
        assert launcher.logs() == ""
        assert launcher.log_tail() == ""
    assert not any("unload" in r for r in state.requests)


def test_backends_are_those_of_ready_models(fake: tuple[FakeTriton, str]) -> None:
    _, url = fake
    assert UrlLauncher(url).backends == frozenset({"python", "onnxruntime"})
    assert UrlLauncher(url, backends=frozenset({"tensorrt"})).backends == frozenset({"tensorrt"})


def test_has_gpu_from_metrics(fake: tuple[FakeTriton, str]) -> None:
    state, url = fake
    assert not UrlLauncher(url, metrics_url=url + "/metrics").has_gpu
    state.metrics += 'nv_gpu_utilization{gpu_uuid="GPU-1"} 0.5\n'
    assert UrlLauncher(url, metrics_url=url + "/metrics").has_gpu
    assert not UrlLauncher(url, metrics_url=f"http://127.0.0.1:{free_port()}/metrics").has_gpu
    assert UrlLauncher(url, has_gpu=True).has_gpu


def test_failed_model_raises_with_tritons_reason(fake: tuple[FakeTriton, str]) -> None:
    _, url = fake
    with pytest.raises(ModelLoadError, match="model 'broken' failed to load: Internal: ValueError: boom"):
        UrlLauncher(url, models=["add", "broken"], progress=None).start()


def test_model_control(fake: tuple[FakeTriton, str]) -> None:
    _, url = fake
    launcher = UrlLauncher(url, progress=None).start()
    with pytest.raises(ServerTimeout, match=r"not ready after 0\.3 s \(0/1 models ready, waiting for 'later'\)"):
        launcher.control.wait_ready(["later"], timeout=0.3)  # "unloaded" is not a failure: it may be loaded later
    launcher.control.load("later")
    launcher.control.wait_ready(["later"], timeout=1)
    launcher.control.unload("later")
    assert not launcher.control.ready("later")
    with pytest.raises(ModelLoadError, match="failed to poll from model repository"):
        launcher.control.load("missing")


def test_nothing_answers() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServerStartError, match=rf"no Triton server answers at http_url='{url}'"):
        UrlLauncher(url, startup_timeout=0.2, progress=None).start()


SERVE = "import sys; from pytest_triton.servers.serve_cli import serve_main; sys.exit(serve_main(sys.argv[1:]))"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux signals")
def test_serve_cli_with_url_launcher(fake: tuple[FakeTriton, str], tmp_path: Path) -> None:
    _, url = fake
    (tmp_path / "add").mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(tmp_path), "--launcher", "url", "--url", url, "--timeout", "10"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        payload = json.loads(proc.stdout.readline())
        port = int(url.rsplit(":", 1)[1])
        assert payload == {
            "http": url,
            "grpc": f"127.0.0.1:{port + 1}",
            "metrics": f"http://127.0.0.1:{port + 2}/metrics",
            "models": ["add"],
            "launcher": "url",
            "changes": [f"served by the Triton at {url}, from its own copy of the repository"],
            "control_headers": {},
        }
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
