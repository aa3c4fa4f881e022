"""What a user sees when the docker launcher cannot start: one line each, against the real daemon."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from pytest_triton.errors import ServerError
from pytest_triton.errors import ServerStartError
from pytest_triton.servers.docker.launcher import DockerLauncher
from pytest_triton.servers.ports import free_port

from ..local.local_triton_helpers import add_model

pytestmark = pytest.mark.xdist_group("docker")


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    add_model(repo)
    return repo


@pytest.mark.usefixtures("no_leftovers")
def test_container_that_exits_reports_exit_code_and_log(standin_image: str, repository: Path) -> None:
    launcher = DockerLauncher(
        repository, image=standin_image, pull="never", startup_timeout=60, extra_args=["--no-such-flag=1"]
    )
    with pytest.raises(ServerStartError) as info:
        launcher.start()
    assert info.value.exit_code == 1
    text = str(info.value)
    assert "exited with code 1 before it was ready" in text
    assert "no-such-flag" in text  # tritonserver's own complaint, from the container log
    assert "Usage: tritonserver" in launcher.logs()  # the log is kept after the container is gone


@pytest.mark.usefixtures("no_leftovers")
def test_container_killed_after_start_is_named_with_its_end(
    standin_image: str, repository: Path, docker_client: Any
) -> None:
    with DockerLauncher(repository, image=standin_image, pull="never", startup_timeout=120) as launcher:
        assert launcher.container_id is not None
        docker_client.containers.get(launcher.container_id).kill(signal="SIGKILL")
        docker_client.containers.get(launcher.container_id).wait(timeout=30)
        assert launcher.exit_status() == "was killed by SIGKILL (exit code 137)"
        with pytest.raises(ServerError, match=r"is no longer running: it was killed by SIGKILL") as info:
            launcher.check_alive()
        assert "Started HTTPService" in str(info.value)  # with its log tail
        with pytest.raises(ServerError, match="no longer running"):
            launcher.control.wait_ready(["add"], timeout=5)
    assert launcher.exit_status() is None  # stopped by us now


@pytest.mark.usefixtures("no_leftovers")
def test_missing_image_with_pulling_off(docker_client: Any, repository: Path) -> None:
    launcher = DockerLauncher(repository, image="pytest-triton-absent:0", pull="never")
    with pytest.raises(ServerStartError) as info:
        launcher.start()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("image 'pytest-triton-absent:0' is not on the Docker host and pulling is off")


@pytest.mark.usefixtures("no_leftovers")
def test_unreachable_registry(docker_client: Any, repository: Path) -> None:
    image = f"127.0.0.1:{free_port()}/pytest-triton/absent:1"  # nothing listens there
    launcher = DockerLauncher(repository, image=image, progress=None)
    with pytest.raises(ServerStartError) as info:
        launcher.start()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"cannot reach registry '{image.split('/')[0]}' to pull image {image!r}")


@pytest.mark.parametrize("kind", ["no socket", "refusing socket"])
def test_stopped_daemon(kind: str, tmp_path: Path, repository: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "docker.sock"
    if kind == "refusing socket":  # what a daemon killed without cleanup leaves: a socket file nobody accepts on
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    launcher = DockerLauncher(repository, image="any:1")
    with pytest.raises(ServerStartError) as info:
        launcher.start()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"no Docker daemon answers at DOCKER_HOST='unix://{path}'")
    assert "start it" in message


@pytest.mark.usefixtures("no_leftovers")
def test_gpu_request_on_a_daemon_without_the_nvidia_runtime(
    standin_image: str, repository: Path, docker_client: Any
) -> None:
    if "nvidia" in docker_client.info().get("Runtimes", {}):
        pytest.skip("this daemon has the NVIDIA runtime: the failure cannot be shown here")
    launcher = DockerLauncher(repository, image=standin_image, pull="never", gpus=True)
    with pytest.raises(ServerStartError) as info:
        launcher.start()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("the Docker daemon cannot give GPUs to containers")
    assert "nvidia-ctk runtime configure --runtime=docker" in message
