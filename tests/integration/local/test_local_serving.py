"""A real tritonserver (nvidia-pytriton's) serving two python models: HTTP, gRPC, metrics, model control."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pytest_triton.client.rest import TritonRest
from pytest_triton.client.rest import fetch_text
from pytest_triton.client.transports import grpc_client
from pytest_triton.errors import ModelLoadError
from pytest_triton.servers import LocalLauncher
from pytest_triton.servers import ServeOptions
from pytest_triton.servers import TritonServer
from pytest_triton.servers import UrlLauncher
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import wait_until

from .local_triton_helpers import add_model
from .local_triton_helpers import echo_model
from .local_triton_helpers import skip_without_embedded_triton
from .local_triton_helpers import stubs_of

skip_without_embedded_triton()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalLauncher]:
    repository = tmp_path_factory.mktemp("repo")
    add_model(repository)
    echo_model(repository)
    with LocalLauncher(repository, startup_timeout=120) as launcher:
        yield launcher


def test_is_a_triton_launcher(server: LocalLauncher) -> None:
    launcher: TritonServer = server
    assert isinstance(launcher, TritonServer)
    assert server.backends == frozenset({"python"})
    assert server.running


def test_urls_are_loopback(server: LocalLauncher) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", server.urls.need("http"))
    assert re.fullmatch(r"127\.0\.0\.1:\d+", server.urls.need("grpc"))
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/metrics", server.urls.need("metrics"))
    assert server.urls.sagemaker is None


def _listening(port: int) -> set[str]:
    """Local addresses listening on ``port`` (hex from /proc/net/tcp*, state 0A = LISTEN)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hexport = local.rsplit(":", 1)
            if state == "0A" and int(hexport, 16) == port:
                found.add(address)
    return found


def test_ports_are_bound_to_127_0_0_1_only(server: LocalLauncher) -> None:
    loopback_v4 = "0100007F"  # 127.0.0.1, little-endian
    loopback_v6_mapped = "0000000000000000FFFF00000100007F"  # ::ffff:127.0.0.1 (gRPC binds this way)
    for url in (server.urls.need("http"), server.urls.need("grpc"), server.urls.need("metrics")):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        addresses = _listening(port)
        assert addresses, f"nothing listens on {port}"
        assert addresses <= {loopback_v4, loopback_v6_mapped}, (url, addresses)


def test_http_inference_adds(server: LocalLauncher) -> None:
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(server.urls.need("http").removeprefix("http://"))
    try:
        a = np.array([1.0, 2.0, 3.5], dtype=np.float32)
        b = np.array([10.0, 20.0, -3.5], dtype=np.float32)
        inputs = [httpclient.InferInput("A", [3], "FP32"), httpclient.InferInput("B", [3], "FP32")]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(b)
        result = client.infer("add", inputs)
        np.testing.assert_array_equal(result.as_numpy("C"), np.array([11.0, 22.0, 0.0], dtype=np.float32))
    finally:
        client.close()


def test_grpc_inference_echoes_and_adds(server: LocalLauncher) -> None:
    import tritonclient.grpc as grpcclient

    client = grpc_client(server.urls.need("grpc"))
    try:
        data = np.array([[1, 2, 3], [4, 5, -6]], dtype=np.int64)
        echo_in = grpcclient.InferInput("INPUT", [2, 3], "INT64")
        echo_in.set_data_from_numpy(data)
        np.testing.assert_array_equal(client.infer("echo", [echo_in]).as_numpy("OUTPUT"), data)

        a = np.arange(5, dtype=np.float32)
        inputs = [grpcclient.InferInput("A", [5], "FP32"), grpcclient.InferInput("B", [5], "FP32")]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(a * 2)
        np.testing.assert_array_equal(client.infer("add", inputs).as_numpy("C"), a * 3)
    finally:
        client.close()


def _metric(text: str, name: str, model: str) -> float:
    pattern = rf'^{name}\{{[^}}]*model="{re.escape(model)}"[^}}]*\}} ([0-9.e+]+)$'
    values = [float(m.group(1)) for m in re.finditer(pattern, text, re.MULTILINE)]
    assert values, f"{name} for model {model!r} not in the metrics"
    return sum(values)


def test_metrics_report_queue_and_compute_time(server: LocalLauncher) -> None:
    import tritonclient.http as httpclient

    before = fetch_text(server.urls.need("metrics"))
    count_before = _metric(before, "nv_inference_count", "echo")
    compute_before = _metric(before, "nv_inference_compute_infer_duration_us", "echo")
    queue_before = _metric(before, "nv_inference_queue_duration_us", "echo")
    request_before = _metric(before, "nv_inference_request_duration_us", "echo")

    client = httpclient.InferenceServerClient(server.urls.need("http").removeprefix("http://"))
    try:
        inp = httpclient.InferInput("INPUT", [1, 3], "INT64")
        inp.set_data_from_numpy(np.array([[7, 8, 9]], dtype=np.int64))
        client.infer("echo", [inp])
    finally:
        client.close()

    # Triton counts a request once its backend reports the request's statistics, which the python backend does
    # after the response has gone: on a loaded machine the client can read the metrics in between
    after = ""

    def counted() -> Poll:
        nonlocal after
        after = fetch_text(server.urls.need("metrics"))
        return Poll(_metric(after, "nv_inference_count", "echo") > count_before)

    wait_until(counted, timeout=10.0, what="the metrics", goal="counting the request", progress=None)
    assert _metric(after, "nv_inference_count", "echo") == count_before + 1
    compute = _metric(after, "nv_inference_compute_infer_duration_us", "echo") - compute_before
    queue = _metric(after, "nv_inference_queue_duration_us", "echo") - queue_before
    request = _metric(after, "nv_inference_request_duration_us", "echo") - request_before
    assert compute > 0
    assert queue > 0  # the dynamic batcher held it (max_queue_delay 100 µs) before execution
    assert queue + compute <= request


def test_model_control(server: LocalLauncher) -> None:
    assert server.control.ready("echo")
    assert server.control.ready("echo", "1")
    assert not server.control.ready("echo", "2")
    assert not server.control.ready("no_such_model")
    server.control.unload("echo")  # waits until Triton has finished unloading (Triton itself answers at once)
    assert not server.control.ready("echo")
    index = TritonRest(server.urls.need("http"), headers=server.control_headers).index()
    assert [e.state for e in index if e.name == "echo"] == ["UNAVAILABLE"]
    server.control.load("echo")
    server.control.wait_ready(["echo", "add"], timeout=30)
    assert server.control.ready("echo")


def test_model_control_answers_only_the_servers_own_header(server: LocalLauncher) -> None:
    # another session's client that reaches this port (a stale client, a reused port) cannot touch our models
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException

    key = server.control_headers["pytest-triton-control"]
    assert len(key) == 32
    assert server.control_headers["triton-grpc-protocol-pytest-triton-control"] == key
    url = server.urls.need("http")
    for headers in ({}, {"pytest-triton-control": "0" * 32}):
        stranger = TritonRest(url, headers=headers)
        for path in ("/v2/repository/models/echo/unload", "/v2/repository/models/echo/load", "/v2/repository/index"):
            status, body = stranger.request("POST", path, {})
            assert status == 403, (path, headers, status, body)
            assert b"restricted" in body
        assert stranger.ready()
        assert stranger.model_ready("echo")
    assert server.control.ready("echo")

    grpc = grpc_client(server.urls.need("grpc"))
    http = httpclient.InferenceServerClient(url.removeprefix("http://"))
    try:
        with pytest.raises(InferenceServerException, match="restricted"):
            grpc.unload_model("echo")
        with pytest.raises(InferenceServerException, match="restricted"):
            http.unload_model("echo")
        # the same headers open it for both of tritonclient's clients
        assert {m.name for m in grpc.get_model_repository_index(headers=server.control_headers).models} >= {"echo"}
        assert {m["name"] for m in http.get_model_repository_index(headers=server.control_headers)} >= {"echo"}
    finally:
        grpc.close()
        http.close()
    assert server.control.ready("echo")


def _attached(server: LocalLauncher, **settings: str) -> UrlLauncher:
    options = ServeOptions(settings={"url": server.urls.need("http"), **settings}, startup_timeout=30, progress=None)
    return UrlLauncher.from_options(None, options, models=["add"]).start()


def test_url_launcher_without_the_header_is_refused_model_control(server: LocalLauncher) -> None:
    attached = _attached(server)
    assert attached.control_headers == {}
    with pytest.raises(ModelLoadError, match="restricted, expecting header 'pytest-triton-control'"):
        attached.control.load("echo")
    assert server.control.ready("echo")


def test_url_launcher_with_the_header_controls_models(server: LocalLauncher) -> None:
    key = server.control_headers["pytest-triton-control"]
    attached = _attached(server, control_header=f"pytest-triton-control={key}")
    assert attached.control_headers == server.control_headers
    attached.control.unload("echo")
    assert not server.control.ready("echo")
    attached.control.load("echo")
    assert server.control.ready("echo")


def test_load_unknown_model_raises_with_tritons_text(server: LocalLauncher) -> None:
    with pytest.raises(ModelLoadError, match="no_such_model") as info:
        server.control.load("no_such_model")
    assert "failed to poll" in info.value.reason or "not found" in info.value.reason


def test_logs_and_python_stubs(server: LocalLauncher) -> None:
    assert "successfully loaded 'add'" in server.logs()
    assert "Started HTTPService at 127.0.0.1" in server.logs()
    assert len(server.log_tail(5).splitlines()) <= 5
    assert server.pid is not None
    assert stubs_of(server.pid), "expected python backend stub processes under tritonserver"


def test_no_other_process_can_take_our_http_port(server: LocalLauncher) -> None:
    port = int(server.urls.need("http").rsplit(":", 1)[1])
    with socket.socket() as sock, pytest.raises(OSError, match="Address already in use"):
        sock.bind(("127.0.0.1", port))


def test_sagemaker_frontend(tmp_path: Path) -> None:
    import json
    import urllib.request

    add_model(tmp_path)
    with LocalLauncher(tmp_path, sagemaker=True, progress=None) as launcher:
        assert launcher.urls.sagemaker is not None
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", launcher.urls.sagemaker)
        assert "--allow-sagemaker=true" in launcher.command
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(launcher.urls.sagemaker + "/ping") as resp:
            assert resp.status == 200
        body = {
            "inputs": [
                {"name": "A", "shape": [2], "datatype": "FP32", "data": [1, 2]},
                {"name": "B", "shape": [2], "datatype": "FP32", "data": [3, 4]},
            ]
        }
        request = urllib.request.Request(
            launcher.urls.sagemaker + "/invocations",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        # one model: SAGEMAKER_TRITON_DEFAULT_MODEL_NAME is set for it, as in the SageMaker image
        with opener.open(request) as resp:
            answer = json.loads(resp.read())
        assert answer["model_name"] == "add"
        assert answer["outputs"][0]["data"] == [4.0, 6.0]
