"""Who owns a container: labels naming the run and the owner process, and sweeps of what dead owners left.

Every container the docker launcher starts carries::

    org.pytest-triton.run-id       one id per pytest run, shared by its xdist workers ($PYTEST_TRITON_RUN_ID)
    org.pytest-triton.owner-pid    the process that started it (an xdist worker's containers are its own)
    org.pytest-triton.owner-start  that process's start time (clock ticks since boot: a reused pid is not it)
    org.pytest-triton.owner-host   this machine (hostname and boot id): owners elsewhere are never judged

Three things remove containers whose owner is gone, fastest first: the owner's reaper process
(:mod:`pytest_triton.servers.docker.reaper`, it sees the owner die even by SIGKILL), the pytest controller
at the end of its run (every container of its run id), and :func:`sweep_dead_owner_containers` at the start of a
session (what a killed reaper, or a reboot, left). testcontainers' Ryuk does the same where it can be
pulled; it cannot on air-gapped runners, so it is off by default.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import uuid
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_triton.servers.process import pid_alive
from pytest_triton.servers.process import process_start_time

LABEL_PREFIX = "org.pytest-triton"
RUN_ID = f"{LABEL_PREFIX}.run-id"
OWNER_PID = f"{LABEL_PREFIX}.owner-pid"
OWNER_START = f"{LABEL_PREFIX}.owner-start"
OWNER_HOST = f"{LABEL_PREFIX}.owner-host"
RUN_ID_ENV = "PYTEST_TRITON_RUN_ID"


def run_id() -> str:
    """This run's id: ``$PYTEST_TRITON_RUN_ID``, set here on first use so that xdist workers (started
    later, with this environment) share the controller's id."""
    value = os.environ.get(RUN_ID_ENV)
    if not value:
        value = uuid.uuid4().hex[:16]
        os.environ[RUN_ID_ENV] = value
    return value


def process_start(pid: int) -> str | None:
    """The start time of a live (not zombie) ``pid``, as a label value; None when it is gone."""
    if not pid_alive(pid):
        return None
    started = process_start_time(pid)
    return None if started is None else str(started)


def host_id() -> str:
    """This machine: its hostname and boot id (a container's pid means nothing on another host or boot)."""
    boot = ""
    with contextlib.suppress(OSError):
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return f"{socket.gethostname()}/{boot}"


def owner_labels(run: str | None = None) -> dict[str, str]:
    """The labels of a container owned by this process in run ``run`` (default: :func:`run_id`)."""
    pid = os.getpid()
    return {
        RUN_ID: run or run_id(),
        OWNER_PID: str(pid),
        OWNER_START: process_start(pid) or "",
        OWNER_HOST: host_id(),
    }


def owner_alive(labels: Mapping[str, str]) -> bool:
    """Whether the process named by a container's labels still runs (True when it is not on this host)."""
    if labels.get(OWNER_HOST) != host_id():
        return True
    try:
        pid = int(labels.get(OWNER_PID, ""))
    except ValueError:
        return False
    start = process_start(pid)
    return start is not None and start == labels.get(OWNER_START, start)


def _remove(client: Any, container_id: str) -> bool:
    from docker.errors import APIError
    from docker.errors import NotFound

    try:
        client.api.remove_container(container_id, force=True, v=True)
    except NotFound:
        return False  # already gone (its reaper or another sweep was quicker)
    except APIError as err:
        if "is already in progress" in str(err):
            return False
        raise
    return True


def _listed(client: Any, label: str) -> list[tuple[str, str, dict[str, str]]]:
    """(id, name, labels) of the containers carrying ``label``, from one list call: docker-py's
    ``containers.list()`` inspects each one afterwards and fails on a container removed meanwhile."""
    found = []
    for entry in client.api.containers(all=True, filters={"label": label}):
        names = entry.get("Names") or [""]
        found.append((str(entry["Id"]), str(names[0]).lstrip("/"), dict(entry.get("Labels") or {})))
    return found


def sweep_dead_owner_containers(client: Any) -> list[str]:
    """Remove containers of this host whose owner process is gone; returns their names."""
    return [
        name
        for container_id, name, labels in _listed(client, OWNER_PID)
        if not owner_alive(labels) and _remove(client, container_id)
    ]


_swept = False
_sweep_lock = threading.Lock()


def sweep_once(client: Any, progress: Callable[[str], None] | None) -> None:
    """:func:`sweep_dead_owner_containers`, once per process (the first docker launcher that starts runs it)."""
    global _swept
    with _sweep_lock:
        if _swept:
            return
        _swept = True
    removed = sweep_dead_owner_containers(client)
    if removed and progress is not None:
        progress(f"removed {len(removed)} container(s) left by dead pytest-triton processes: {', '.join(removed)}")


def remove_run(client: Any, run: str) -> list[str]:
    """Remove every container of run ``run`` (the controller does this when the run ends); returns their names."""
    return [name for container_id, name, _labels in _listed(client, f"{RUN_ID}={run}") if _remove(client, container_id)]


def end_of_run(run: str | None = None) -> list[str]:
    """What the pytest controller calls when its run ends: remove what is left of run ``run`` (default this
    run), e.g. by an xdist worker whose reaper was killed with it. Quiet when no daemon answers."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        return []
    try:
        client = docker.from_env(timeout=30)
    except DockerException:
        return []
    try:
        return remove_run(client, run or run_id())
    except DockerException:
        return []
    finally:
        client.close()
