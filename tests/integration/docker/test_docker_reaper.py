"""The reaper process against a real daemon: when its pipe ends it removes what it watches, and only that.

``tests/unit/servers/test_docker.py`` checks the reaper's line protocol; the removal itself needs a daemon, so
a reaper that removed nothing passed the unit tier. Here ``python -m pytest_triton.servers.docker.reaper`` is
run as the docker launcher runs it, on two containers of the stand-in image: one watched, one watched and then
forgotten.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.xdist_group("docker")

ROOT = Path(__file__).resolve().parents[3]


def test_the_reaper_removes_the_watched_container_and_keeps_the_forgotten_one(
    standin_image: str, docker_client: Any
) -> None:
    label = f"pytest-triton-reaper-test={uuid.uuid4().hex[:8]}"
    key, value = label.split("=")
    created = {
        role: docker_client.containers.run(
            standin_image, ["sleep", "300"], labels={key: value}, network_mode="none", detach=True
        )
        for role in ("watched", "forgotten")
    }
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    try:
        reaper = subprocess.Popen(
            [sys.executable, "-m", "pytest_triton.servers.docker.reaper"], stdin=subprocess.PIPE, env=env
        )
        assert reaper.stdin is not None
        lines = [
            f"watch {created['watched'].id}",
            f"watch {created['forgotten'].id}",
            f"forget {created['forgotten'].id}",
        ]
        reaper.stdin.write(("\n".join(lines) + "\n").encode())
        reaper.stdin.close()  # the owner's end of the pipe: as when it exits or is killed
        assert reaper.wait(timeout=60) == 0
        left = {c["Id"] for c in docker_client.api.containers(all=True, filters={"label": label})}
        assert created["watched"].id not in left, "the reaper left the container it watched"
        assert created["forgotten"].id in left, "the reaper removed a container it was told to forget"
    finally:
        for container in docker_client.api.containers(all=True, filters={"label": label}):
            docker_client.api.remove_container(container["Id"], force=True)
