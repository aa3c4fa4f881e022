"""Fixtures of the integration suites: a real Docker daemon and the stand-in Triton image (the docker suite,
and the SageMaker suite where an endpoint's container runs in docker).

Without a daemon (or without the image) the tests skip with the reason; with
``PYTEST_TRITON_REQUIRE_DOCKER=1`` (set by ``.ci/run``) they fail instead, so CI never passes by skipping.
The image is ``$PYTEST_TRITON_STANDIN_IMAGE``, else the tag ``docker-images/standin/build.sh --print-tag``
names for the current inputs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "docker-images" / "standin" / "build.sh"


def _unavailable(reason: str) -> None:
    if os.environ.get("PYTEST_TRITON_REQUIRE_DOCKER") == "1":
        pytest.fail(f"PYTEST_TRITON_REQUIRE_DOCKER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    """A docker-py client of the daemon the environment names (skips when none answers)."""
    try:
        import docker
    except ImportError:
        _unavailable("docker-py is not installed: pip install 'pytest-triton[docker]'")
    from pytest_triton.errors import ServerStartError
    from pytest_triton.servers.docker.engine import connect

    try:
        client = connect(timeout=30)
    except ServerStartError as err:
        _unavailable(str(err))
    assert isinstance(client, docker.DockerClient)
    yield client
    client.close()


@pytest.fixture(scope="session")
def standin_image(docker_client: Any) -> str:
    """The stand-in image's tag (skips when it is not built)."""
    tag = os.environ.get("PYTEST_TRITON_STANDIN_IMAGE")
    if not tag:
        done = subprocess.run(
            ["bash", str(BUILD_SCRIPT), "--print-tag"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHON": sys.executable},
            check=False,
        )
        if done.returncode != 0:
            _unavailable(f"{BUILD_SCRIPT} --print-tag failed: {done.stderr.strip()}")
        tag = done.stdout.strip()
    from pytest_triton.servers.docker.engine import image_present

    if not image_present(docker_client, tag):
        _unavailable(f"the stand-in image {tag} is not built: run {BUILD_SCRIPT.relative_to(ROOT)}")
    return tag


@pytest.fixture
def no_leftovers(docker_client: Any) -> Iterator[None]:
    """Fail a test that leaves a container of this process behind."""
    from pytest_triton.servers.docker.owners import OWNER_PID

    label = f"{OWNER_PID}={os.getpid()}"
    before = {c["Id"] for c in docker_client.api.containers(all=True, filters={"label": label})}
    yield
    after = docker_client.api.containers(all=True, filters={"label": label})
    left = [c["Names"] for c in after if c["Id"] not in before]
    assert not left, f"containers left behind: {left}"
