"""Docker out of Docker, the usual self-hosted runner set-up: pytest itself runs in a container (here the stand-in
image, with this machine's Python mounted read-only) that has the host's docker socket, and the plugin's docker
launcher starts Triton beside it. testcontainers then looks for the network of the container it runs in and adds
it to every container it creates unless one is given (the launcher gives ``network``, not ``network_mode``, so that
its choice stands). Here the outer container is on the host's network, the network the launcher asks for too.

The outer container gets its own hostname, so that the inner run's sweep never judges this machine's containers
by pids it cannot see (its owners are on "another host"), and shares this machine's network (the inner server
listens on 127.0.0.1). Folders the inner run stages are at the same path inside and out (a bind mount is named by
the host's path).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..local.local_triton_helpers import add_model

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.xdist_group("docker")

INNER = """
from pathlib import Path


def test_serves_from_inside_a_container(triton_server_factory):
    assert Path("/.dockerenv").exists()  # testcontainers' sign that it runs inside a container
    server = triton_server_factory.start(Path(__file__).parent / "repo")
    assert server.control is not None and server.control.ready("add")
    assert server.container.attrs()["HostConfig"]["NetworkMode"] == "host"
"""


def _mounts(*paths: Path, writable: Path) -> list[str]:
    args: list[str] = []
    for path in dict.fromkeys(paths):
        args += ["-v", f"{path}:{path}:ro"]
    return [*args, "-v", f"{writable}:{writable}"]


def test_docker_launcher_runs_from_inside_a_container(
    standin_image: str, docker_client: Any, tmp_path: Path, no_leftovers: None
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_inner.py").write_text(INNER, encoding="utf-8")
    add_model(project / "repo")
    python = Path(sys.executable).resolve()
    prefixes = [Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), ROOT]
    socket = "/var/run/docker.sock"
    env = {
        "PYTHONPATH": str(ROOT),
        "TMPDIR": str(tmp_path),
        "TESTCONTAINERS_RYUK_DISABLED": "true",
        "PYTEST_TRITON_DOCKER_ULIMITS": os.environ.get("PYTEST_TRITON_DOCKER_ULIMITS", ""),
    }
    command = [
        "docker",
        "run",
        "--rm",
        "--network",
        "host",
        "--hostname",
        "pytest-triton-outer",
        "-v",
        f"{socket}:{socket}",
        *_mounts(*prefixes, writable=tmp_path),
        *(arg for key, value in env.items() if value for arg in ("-e", f"{key}={value}")),
        "-w",
        str(project),
        standin_image,
        str(python),
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-c",
        os.devnull,
        "--rootdir",
        str(project),
        "-q",
        "--triton-launcher",
        "docker",
        "--triton-image",
        standin_image,
        "--triton-setting",
        "pull=never",
        "test_inner.py",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "1 passed" in done.stdout, done.stdout
