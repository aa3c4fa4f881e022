"""Nothing is left behind: a SIGKILLed owner's containers go (its reaper), dead owners are swept, and an
xdist worker killed mid-run loses its containers while the run goes on."""

from __future__ import annotations

import contextlib
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

from pytest_triton.servers.docker.owners import OWNER
from pytest_triton.servers.docker.owners import OWNER_HOST
from pytest_triton.servers.docker.owners import OWNER_PID
from pytest_triton.servers.docker.owners import OWNER_PIDNS
from pytest_triton.servers.docker.owners import RUN_ID
from pytest_triton.servers.docker.owners import owner_labels
from pytest_triton.servers.docker.owners import sweep_dead_owner_containers
from pytest_triton.servers.process import children_of
from tests.owners import dead_owner_token

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
    dead = dead_owner_token()
    ours = owner_labels(run="sweep-test")
    cases = {
        "dead": {**ours, OWNER: dead},
        "alive": ours,
        "reused-pid": {**ours, OWNER: dead, OWNER_PID: "1"},  # a pid proves nothing either way
        "elsewhere": {**ours, OWNER: dead, OWNER_HOST: "another-host/boot"},
        "unknown": {**ours, OWNER: "0123456789abcdef" * 2},  # no lock file here: another container's /tmp
        "no-token": {k: v for k, v in ours.items() if k != OWNER},  # an older version's labels
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
        removed = set(sweep_dead_owner_containers(docker_client))
        # another xdist worker's session may sweep at the same moment and remove a dead owner's container
        # first: what counts is that both are gone and only they are, not which sweep took them
        made = {container.name for container in created.values()}
        assert removed & made <= {created["dead"].name, created["reused-pid"].name}
        kept = {created[name].name for name in ("alive", "elsewhere", "unknown", "no-token")}
        assert _names(docker_client, f"{RUN_ID}=sweep-test") == kept
    finally:
        for container in _containers(docker_client, f"{RUN_ID}=sweep-test"):
            docker_client.api.remove_container(container["Id"], force=True)


PIDNS_OWNER = """
import sys, time
import docker
from pytest_triton.servers.docker.owners import owner_labels
client = docker.from_env()
container = client.containers.create(sys.argv[1], ["sleep", "300"], labels=owner_labels(run=sys.argv[2]),
                                     network_mode="none")
print(container.id, flush=True)
time.sleep(300)
"""


def test_a_container_whose_owner_runs_in_another_pid_namespace_is_kept_until_it_dies(
    standin_image: str, docker_client: Any
) -> None:
    # a CI job in its own container beside ours, sharing the host's docker socket and /tmp: its pid means
    # nothing here (it is pid 1 of its namespace), so a /proc-based sweep removed its live container
    run = f"pidns-{uuid.uuid4().hex[:8]}"
    cmd = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", sys.executable, "-c", PIDNS_OWNER]
    owner = subprocess.Popen([*cmd, standin_image, run], stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert owner.stdout is not None
        container_id = owner.stdout.readline().strip()
        assert container_id, f"the owner in its PID namespace did not create a container (exit {owner.poll()})"
        labels = docker_client.containers.get(container_id).labels
        assert labels[OWNER_PID] == "1"
        assert labels[OWNER_PIDNS] != os.readlink("/proc/self/ns/pid")
        sweep_dead_owner_containers(docker_client)
        assert _containers(docker_client, f"{RUN_ID}={run}"), "a live owner's container was swept"
        owner.kill()
        owner.wait()
        deadline = time.monotonic() + 30  # its lock is free once the namespace's processes are gone
        while _containers(docker_client, f"{RUN_ID}={run}"):
            assert time.monotonic() < deadline, "the dead owner's container was never swept"
            sweep_dead_owner_containers(docker_client)
            time.sleep(0.2)
    finally:
        owner.kill()
        owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()
        for container in _containers(docker_client, f"{RUN_ID}={run}"):
            docker_client.api.remove_container(container["Id"], force=True)


NESTED_TESTS = """
import os
import docker
from pytest_triton.servers.docker.owners import owner_labels

def test_leaves_one_of_its_own():
    client = docker.from_env()
    container = client.containers.create(os.environ["STANDIN"], ["sleep", "300"], labels=owner_labels(),
                                         network_mode="none", name=os.environ["INNER_NAME"])
    print("INNER RUN", container.labels["org.pytest-triton.run-id"])
"""


def test_a_nested_session_removes_only_what_it_created(standin_image: str, docker_client: Any, tmp_path: Path) -> None:
    # a pytest run from a test (pytester's subprocess, a tool) inherits $PYTEST_TRITON_RUN_ID: it used to end
    # by force-removing every container of the outer run, those of live owners included
    outer_run = f"outer-{uuid.uuid4().hex[:8]}"
    inner_name = f"pytest-triton-nested-{uuid.uuid4().hex[:6]}"
    outer = docker_client.containers.create(
        standin_image, ["sleep", "300"], labels=owner_labels(run=outer_run), network_mode="none"
    )
    (tmp_path / "test_nested.py").write_text(NESTED_TESTS)
    env = {**_env(), "PYTEST_TRITON_RUN_ID": outer_run, "OUTER_RUN": outer_run}
    env.update(STANDIN=standin_image, INNER_NAME=inner_name)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-s"]
    cmd += ["--triton-launcher", "docker", str(tmp_path / "test_nested.py")]
    try:
        done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert _containers(docker_client, f"{RUN_ID}={outer_run}"), "the nested session removed the outer's container"
        assert "INNER RUN " in done.stdout
        assert f"INNER RUN {outer_run}" not in done.stdout, "the nested session adopted the outer run"
        assert not _containers(docker_client, f"name={inner_name}"), "the nested session left its own container"
    finally:
        with contextlib.suppress(Exception):
            outer.remove(force=True)
        with contextlib.suppress(Exception):
            docker_client.api.remove_container(inner_name, force=True)


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


def _containers_of_children(client: Any, parent: int) -> list[dict[str, Any]]:
    """Running containers whose owner is a child of ``parent`` (xdist workers are the controller's children)."""
    workers = {str(pid) for pid in children_of(parent)}
    return [c for c in _containers(client, OWNER_PID) if c["State"] == "running" and c["Labels"][OWNER_PID] in workers]


def test_sigkill_of_one_xdist_worker(standin_image: str, docker_client: Any, tmp_path: Path) -> None:
    pytest.importorskip("xdist", reason="this test runs pytest-xdist workers")
    (tmp_path / "test_hold.py").write_text(textwrap.dedent(XDIST_TESTS))
    release = tmp_path / "release"
    # the inherited run id is ignored (the session makes its own): the run is found through its workers
    env = {**_env(), "STANDIN": standin_image, "RELEASE": str(release), "PYTEST_TRITON_RUN_ID": "ignored"}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-q", str(tmp_path / "test_hold.py")]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run = "not-started"
    try:
        deadline = time.monotonic() + 300  # two workers start pytest and a container each on a shared machine
        while len(running := _containers_of_children(docker_client, proc.pid)) < 2:
            assert proc.poll() is None, f"the run ended early: {proc.stdout.read() if proc.stdout else ''}"
            assert time.monotonic() < deadline, "the two workers did not both start a container"
            time.sleep(0.5)
        run = running[0]["Labels"][RUN_ID]
        assert run != "ignored"  # a run of its own,
        assert running[1]["Labels"][RUN_ID] == run  # shared by its workers
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
