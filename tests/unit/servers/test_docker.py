"""The docker launcher's pieces that need no daemon: messages, pull events, labels, options, the reaper's protocol."""

from __future__ import annotations

import io
import os
from typing import Any

import pytest

from pytest_triton.errors import ConfigError
from pytest_triton.servers.docker import owners as docker_owners
from pytest_triton.servers.docker.engine import PullProgress
from pytest_triton.servers.docker.engine import default_ulimits
from pytest_triton.servers.docker.engine import parse_ulimits
from pytest_triton.servers.docker.engine import pull_failure
from pytest_triton.servers.docker.engine import registry_of
from pytest_triton.servers.docker.engine import split_reference
from pytest_triton.servers.docker.engine import start_failure
from pytest_triton.servers.docker.engine import stream_error
from pytest_triton.servers.docker.launcher import DockerLauncher
from pytest_triton.servers.docker.reaper import serve
from tests.owners import dead_owner_token

NGC = "nvcr.io/nvidia/tritonserver:26.05-py3"


@pytest.mark.parametrize(
    ("image", "registry", "reference"),
    [
        (NGC, "nvcr.io", ("nvcr.io/nvidia/tritonserver", "26.05-py3")),
        ("ubuntu", "docker.io", ("ubuntu", None)),
        ("library/ubuntu:22.04", "docker.io", ("library/ubuntu", "22.04")),
        ("localhost:5000/t/triton", "localhost:5000", ("localhost:5000/t/triton", None)),
        ("127.0.0.1:5000/t@sha256:ab", "127.0.0.1:5000", ("127.0.0.1:5000/t", "sha256:ab")),
    ],
)
def test_image_references(image: str, registry: str, reference: tuple[str, str | None]) -> None:
    assert registry_of(image) == registry
    assert split_reference(image) == reference


@pytest.mark.parametrize(
    ("detail", "start"),
    [
        # moby's words for an unknown tag, a private repository, no DNS, no route
        ("manifest for nvcr.io/nvidia/tritonserver:26.05-py3 not found: manifest unknown", "image 'nvcr.io/"),
        ("pull access denied for x, repository does not exist or may require 'docker login'", "image 'nvcr.io/"),
        ('Get "https://nvcr.io/v2/": dial tcp: lookup nvcr.io on 10.0.0.2:53: no such host', "cannot reach registry"),
        ('Get "https://nvcr.io/v2/": net/http: TLS handshake timeout', "cannot reach registry"),
        ("something else went wrong", "pulling image"),
    ],
)
def test_pull_failures_are_one_line_each(detail: str, start: str) -> None:
    message = str(pull_failure(NGC, detail))
    assert message.startswith(start)
    assert "\n" not in message
    if start.startswith("image"):
        assert "docker login nvcr.io" in message


def test_pull_stream_error_is_found_and_progress_is_folded() -> None:
    lines: list[str] = []
    sink = PullProgress(NGC, lines.append, every=0.0)
    events: list[dict[str, Any]] = [
        {"status": "Pulling from nvidia/tritonserver", "id": "26.05-py3"},
        {"status": "Pulling fs layer", "id": "a"},
        {"status": "Downloading", "id": "a", "progressDetail": {"current": 5 * 10**8, "total": 10**9}},
        {"status": "Already exists", "id": "b"},
        {"errorDetail": {"message": "unexpected EOF"}, "error": "unexpected EOF"},
        {"status": "never read"},
    ]
    assert stream_error(events, sink) == "unexpected EOF"
    assert lines[-1] == f"pulling {NGC}: 1/2 layers done, downloading 0.50/1.00 GB"
    assert stream_error([{"status": "Digest: sha256:00"}], sink) is None


def test_start_failures_name_the_fix() -> None:
    gpu = start_failure(NGC, 'could not select device driver "" with capabilities: [[gpu]]', gpu=True)
    assert str(gpu).startswith("the Docker daemon cannot give GPUs to containers")
    assert "nvidia-ctk runtime configure --runtime=docker" in str(gpu)
    rlimit = start_failure(
        NGC,
        "error setting rlimits for ready process: error setting rlimit type 8: operation not permitted",
        gpu=False,
        ulimits={"memlock": -1},
    )
    assert "ulimit memlock=-1" in str(rlimit)
    assert "PYTEST_TRITON_DOCKER_ULIMITS=memlock=" in str(rlimit)


def test_ulimits_parse_and_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_ulimits("memlock=-1, stack=67108864") == {"memlock": -1, "stack": 67108864}
    with pytest.raises(ConfigError, match="ulimit 'stack' is not NAME=INTEGER"):
        parse_ulimits("stack")
    monkeypatch.setenv("PYTEST_TRITON_DOCKER_ULIMITS", "memlock=8388608")
    assert default_ulimits() == {"memlock": 8388608, "stack": 67108864}


def test_options_are_checked_before_anything_starts(tmp_path: pytest.TempPathFactory) -> None:
    with pytest.raises(ConfigError, match="network='overlay' must be 'host' or 'bridge'"):
        DockerLauncher(".", network="overlay")
    with pytest.raises(ConfigError, match="pull='sometimes'"):
        DockerLauncher(".", pull="sometimes")
    assert DockerLauncher(".").container.gpu is False
    assert DockerLauncher(".", gpus="0,1").container.gpu is True
    assert DockerLauncher(".", gpus=True).has_gpu is True


def test_device_requests() -> None:
    pytest.importorskip("docker", reason="device requests are docker-py types")
    from pytest_triton.servers.docker.engine import device_requests

    assert device_requests(False) == []
    every = device_requests(True)[0]
    assert (every["Count"], every["Capabilities"]) == (-1, [["gpu"]])
    assert device_requests("0, 2")[0]["DeviceIDs"] == ["0", "2"]


def test_owner_labels_and_liveness(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_TRITON_RUN_ID", raising=False)
    labels = docker_owners.owner_labels()
    assert labels[docker_owners.RUN_ID] == os.environ["PYTEST_TRITON_RUN_ID"]  # shared with later xdist workers
    assert labels[docker_owners.OWNER_PID] == str(os.getpid())
    assert labels[docker_owners.OWNER_PIDNS] == os.readlink("/proc/self/ns/pid")
    assert docker_owners.owner_alive(labels)
    assert docker_owners.owner_alive({**labels, docker_owners.OWNER_PID: "1"})  # the pid decides nothing
    dead = dead_owner_token()  # an owner that took its lock and exited
    assert not docker_owners.owner_alive({**labels, docker_owners.OWNER: dead})
    elsewhere = {**labels, docker_owners.OWNER: dead, docker_owners.OWNER_HOST: "other/boot"}
    assert docker_owners.owner_alive(elsewhere)  # not ours to judge
    no_token = {k: v for k, v in labels.items() if k != docker_owners.OWNER}
    assert docker_owners.owner_alive(no_token)  # an older label set: cannot be judged, never swept


def test_reaper_protocol_keeps_what_is_still_watched() -> None:
    lines = io.BytesIO(b"watch aaa\nwatch bbb\nforget aaa\nnoise\nwatch ccc\n")
    assert serve(lines) == {"bbb", "ccc"}
