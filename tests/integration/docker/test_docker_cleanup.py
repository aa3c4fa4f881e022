"""Nothing is left behind: a SIGKILLed owner's containers go (its reaper), dead owners are swept, and an
xdist worker killed mid-run loses its containers while the run goes on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_triton.servers.docker.owners import OWNER_HOST
from pytest_triton.servers.docker.owners import OWNER_PID
from pytest_triton.servers.docker.owners import OWNER_START
from pytest_triton.servers.docker.owners import RUN_ID
from pytest_triton.servers.docker.owners import owner_labels
from pytest_triton.servers.docker.owners import sweep_dead_owner_containers

pytestmark = pytest.mark.xdist_group("docker")

ROOT = Path(__file__).resolve().parents[3]

OWNER_SCRIPT = """
import sys, time
from pathlib import Path
from pytest_triton.servers.docker.launcher import DockerLauncher
sys.path.insert(0, {root!r})
from tests.integration.local.local_triton_helpers import add_model
repo = Path({repo!r})
add_model(repo)
launcher = DockerLauncher(repo, image={image!r}, pull="never", startup_timeout=120, progress=None).start()
print("READY", launcher.container_id, flush=True)
time.sleep(600)
"""


def _containers(client: Any, label: str) -> list[dict[str, Any]]:
    """The containers carrying ``label``, from one list call (no inspect that a removal could race)."""
    return list(client.api.containers(all=True, filters={"label": label}))


def _names(client: Any, label: str) -> set[str]:
    return {c["Names"][0].lstrip("/") for c in _containers(client, label)}


def _wait_gone(client: Any, label: str, timeout: float) -> float:
    start = time.monotonic()
    while _containers(client, label):
        if time.monotonic() - start > timeout:
            pytest.fail(f"containers with {label} still there after {timeout} s: {_names(client, label)}")
        time.sleep(0.2)
    return time.monotonic() - start


def _env() -> dict[str, str]:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def test_sigkill_of_the_owner_removes_its_container(standin_image: str, docker_client: Any, tmp_path: Path) -> None:
    script = OWNER_SCRIPT.format(root=str(ROOT), repo=str(tmp_path / "repo"), image=standin_image)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("READY "), f"the owner did not get ready: {line!r} (exit {proc.poll()})"
        container_id = line.split()[1]
        assert docker_client.containers.get(container_id).labels[OWNER_PID] == str(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        waited = _wait_gone(docker_client, f"{OWNER_PID}={proc.pid}", timeout=30)
        print(f"container removed {waited:.1f} s after SIGKILL of its owner")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_sweep_removes_only_containers_of_dead_owners_on_this_host(standin_image: str, docker_client: Any) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    ours = owner_labels(run="sweep-test")
    cases = {
        "dead": {**ours, OWNER_PID: str(dead.pid), OWNER_START: "1"},
        "reused-pid": {**ours, OWNER_START: "1"},  # our pid, another start time: not us
        "alive": ours,
        "elsewhere": {**ours, OWNER_PID: str(dead.pid), OWNER_HOST: "another-host/boot"},
    }
    created = {
        name: docker_client.containers.create(
            standin_image,
            ["sleep", "300"],
            labels=labels,
            network_mode="none",
            name=f"pytest-triton-sweep-{name}-{uuid.uuid4().hex[:6]}",
        )
        for name, labels in cases.items()
    }
    try:
        removed = sweep_dead_owner_containers(docker_client)
        assert set(removed) >= {created["dead"].name, created["reused-pid"].name}
        assert _names(docker_client, f"{RUN_ID}=sweep-test") == {created["alive"].name, created["elsewhere"].name}
    finally:
        for container in _containers(docker_client, f"{RUN_ID}=sweep-test"):
            docker_client.api.remove_container(container["Id"], force=True)


XDIST_TESTS = """
import os, time
from pathlib import Path
import pytest
from pytest_triton.servers.docker.launcher import DockerLauncher
from tests.integration.local.local_triton_helpers import add_model

@pytest.mark.parametrize("n", [0, 1])
def test_hold(n, tmp_path):
    add_model(tmp_path)
    with DockerLauncher(tmp_path, image=os.environ["STANDIN"], pull="never", startup_timeout=120, progress=None):
        release = Path(os.environ["RELEASE"])
        deadline = time.monotonic() + 120
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
"""


def test_sigkill_of_one_xdist_worker(standin_image: str, docker_client: Any, tmp_path: Path) -> None:
    pytest.importorskip("xdist", reason="this test runs pytest-xdist workers")
    (tmp_path / "test_hold.py").write_text(textwrap.dedent(XDIST_TESTS))
    run = f"xdist-kill-{uuid.uuid4().hex[:8]}"
    release = tmp_path / "release"
    env = {**_env(), "STANDIN": standin_image, "RELEASE": str(release), "PYTEST_TRITON_RUN_ID": run}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-q", str(tmp_path / "test_hold.py")]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 300  # two workers start pytest and a container each on a shared machine
        while len(running := [c for c in _containers(docker_client, f"{RUN_ID}={run}") if c["State"] == "running"]) < 2:
            assert proc.poll() is None, f"the run ended early: {proc.stdout.read() if proc.stdout else ''}"
            assert time.monotonic() < deadline, "the two workers did not both start a container"
            time.sleep(0.5)
        victim = int(running[0]["Labels"][OWNER_PID])
        os.kill(victim, signal.SIGKILL)
        _wait_gone(docker_client, f"{OWNER_PID}={victim}", timeout=30)
        release.touch()
        output, _ = proc.communicate(timeout=180)
        assert "1 passed" in output  # the other worker's test went on (xdist reports the killed one as crashed)
        assert not _containers(docker_client, f"{RUN_ID}={run}"), "the run left containers"
    finally:
        release.touch()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for container in _containers(docker_client, f"{RUN_ID}={run}"):
            docker_client.api.remove_container(container["Id"], force=True)
