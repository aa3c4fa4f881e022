"""The docker launcher against a real dockerd and the stand-in image: serve, infer, stage, logs, model control."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_triton.client.rest import TritonRest
from pytest_triton.errors import ModelLoadError
from pytest_triton.servers.docker.launcher import DockerLauncher

from ..local.local_triton_helpers import RAISING_MODEL
from ..local.local_triton_helpers import add_model
from ..local.local_triton_helpers import echo_model
from ..local.local_triton_helpers import write_model

pytestmark = pytest.mark.xdist_group("docker")

ROOT = Path(__file__).resolve().parents[3]
ASSETS = ROOT / "model_repos" / "assets" / "tiny-mdeberta"
SCENARIO = ROOT / "model_repos" / "scenario07"


@pytest.fixture(scope="module")
def server(standin_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DockerLauncher]:
    repository = tmp_path_factory.mktemp("repo")
    add_model(repository)
    echo_model(repository)
    with DockerLauncher(repository, image=standin_image, pull="never", startup_timeout=120) as launcher:
        yield launcher


def test_serves_on_loopback_with_the_image_backends(server: DockerLauncher) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", server.urls.need("http"))
    assert re.fullmatch(r"127\.0\.0\.1:\d+", server.urls.need("grpc"))
    assert server.backends == frozenset({"python"})  # read from the image, not from this machine
    assert server.control.ready("add")
    assert server.control.ready("echo")
    assert server.exit_status() is None
    server.check_alive()


def test_container_is_configured_as_the_issue_asks(server: DockerLauncher, docker_client: Any) -> None:
    assert server.container_id is not None
    attrs = docker_client.containers.get(server.container_id).attrs
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "host"
    assert host["ShmSize"] == 1024**3
    assert {u["Name"]: u["Hard"] for u in host["Ulimits"]}["stack"] == 67108864
    mount = next(m for m in attrs["Mounts"] if m["Destination"] == "/models")
    assert mount["RW"] is False
    command = attrs["Config"]["Cmd"]
    assert "--model-repository=/models" in command
    assert "--model-control-mode=explicit" in command
    assert attrs["Config"]["Labels"]["org.pytest-triton.owner-pid"].isdigit()


def test_http_and_grpc_inference(server: DockerLauncher) -> None:
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    from pytest_triton.client.transports import grpc_client

    a = np.array([1.0, 2.0, 3.5], dtype=np.float32)
    b = np.array([10.0, 20.0, -3.5], dtype=np.float32)
    http = httpclient.InferenceServerClient(server.urls.need("http").removeprefix("http://"))
    inputs = [httpclient.InferInput("A", [3], "FP32"), httpclient.InferInput("B", [3], "FP32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    np.testing.assert_array_equal(http.infer("add", inputs).as_numpy("C"), a + b)
    http.close()
    grpc = grpc_client(server.urls.need("grpc"))  # tritonclient's own would honour http_proxy
    batch = np.arange(6, dtype=np.int64).reshape(2, 3)
    echo_input = grpcclient.InferInput("INPUT", [2, 3], "INT64")
    echo_input.set_data_from_numpy(batch)
    np.testing.assert_array_equal(grpc.infer("echo", [echo_input]).as_numpy("OUTPUT"), batch)
    grpc.close()


def test_logs_are_read_from_the_container(server: DockerLauncher) -> None:
    logs = server.logs()
    assert "Started HTTPService at 127.0.0.1:" in logs
    assert "successfully loaded 'add'" in logs
    assert "Started Metrics Service" in server.log_tail(10)


def test_unload_and_load_through_model_control(server: DockerLauncher) -> None:
    server.control.unload("echo")
    assert not server.control.ready("echo")
    server.control.load("echo")
    assert server.control.ready("echo")


def test_model_control_answers_only_the_servers_own_header(server: DockerLauncher) -> None:
    # the image's tritonserver has the restricted-API options (read by the probe): model control needs our key
    assert server.container.facts().restricted_api
    assert set(server.control_headers) == {"pytest-triton-control", "triton-grpc-protocol-pytest-triton-control"}
    stranger = TritonRest(server.urls.need("http"))
    status, body = stranger.request("POST", "/v2/repository/models/echo/unload", {})
    assert status == 403, (status, body)
    assert b"restricted" in body
    assert stranger.model_ready("echo")
    assert server.control.ready("echo")


def test_prepared_says_where_the_container_sees_the_repository(server: DockerLauncher) -> None:
    assert server.prepared is not None
    assert server.prepared.location == "/models"
    assert server.prepared.models == ("add", "echo")
    assert any("read-only at /models" in note for note in server.prepared.notes)


def test_onnx_model_is_served_through_the_adapter_with_container_paths(standin_image: str) -> None:
    with DockerLauncher(SCENARIO / "onnx", image=standin_image, pull="never", startup_timeout=180) as launcher:
        assert launcher.prepared is not None
        assert [m.name for m in launcher.prepared.adapted] == ["mdeberta"]
        config = (launcher.prepared.folder / "mdeberta" / "config.pbtxt").read_text()
        assert 'backend: "python"' in config
        assert "pytest_triton_sys_path" not in config  # the image's stub finds the image's onnxruntime itself
        assert str(Path(np.__file__).parents[1]) not in config  # no path of this machine's environment
        from pytest_triton.client.nli import NliClient
        from pytest_triton.client.nli import NliTokenizer
        from pytest_triton.client.reference import OnnxReference

        tokenizer = NliTokenizer(ASSETS / "tokenizer.json")
        pairs = [("The cat sleeps on the sofa.", "An animal is resting."), ("It rains.", "The sun is out.")]
        served = NliClient(launcher.transport("http"), tokenizer).logits(pairs)
        reference = NliClient(OnnxReference(ASSETS / "model.onnx"), tokenizer).logits(pairs)
        np.testing.assert_allclose(served, reference, atol=1e-4)


def test_model_that_fails_to_load_reports_tritons_reason(standin_image: str, tmp_path: Path) -> None:
    add_model(tmp_path)
    write_model(tmp_path, "broken", RAISING_MODEL, 'name: "broken"\nbackend: "python"\n')
    launcher = DockerLauncher(tmp_path, image=standin_image, pull="never", startup_timeout=120)
    with pytest.raises(ModelLoadError, match="boom from initialize: the weights are missing") as info:
        launcher.start()
    assert info.value.model == "broken"
    assert launcher.container_id is None  # removed after the failed start


def test_sagemaker_frontend_in_the_container(standin_image: str, tmp_path: Path) -> None:
    from pytest_triton.client.rest import fetch_text

    add_model(tmp_path)
    with DockerLauncher(tmp_path, image=standin_image, pull="never", sagemaker=True, startup_timeout=120) as launcher:
        url = launcher.urls.need("sagemaker")
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
        fetch_text(f"{url}/ping")  # raises unless 200
        assert "SAGEMAKER_TRITON_DEFAULT_MODEL_NAME=add" in " ".join(launcher.container.attrs()["Config"]["Env"])
