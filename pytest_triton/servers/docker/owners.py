"""Who owns a container: labels naming the session's run and the owner, and sweeps of what dead owners left.

Every container the docker launcher starts carries::

    org.pytest-triton.run-id       one id per pytest session, shared by its xdist workers
                                   (:mod:`pytest_triton.servers.session_run`); a nested session (pytester,
                                   a tool that runs pytest) gets a run of its own
    org.pytest-triton.owner        the owner token of the process that started it: its held lock proves it alive
                                   (:mod:`pytest_triton.servers.owner`)
    org.pytest-triton.owner-pid    that process's pid, PID namespace, start time and machine: for people
    org.pytest-triton.owner-pidns  reading ``docker ps``; liveness is never read from them
    org.pytest-triton.owner-start
    org.pytest-triton.owner-host

As with testcontainers' session labels and its Ryuk reaper, a session removes only its own containers: the
owner's reaper process (:mod:`pytest_triton.servers.docker.reaper`) removes what its owner watched once the
owner dies (even by SIGKILL); the pytest controller, at the end of its session, removes its run's containers
whose owner is itself or provably dead (an xdist worker whose reaper was killed with it); and
:func:`sweep_dead_owner_containers`, at the start of a session, removes containers whose owner is provably
dead (a killed reaper). A container whose owner's liveness cannot be known from here (another PID namespace
without our lock folder, another user, another machine, no owner token) is never removed. testcontainers'
own Ryuk can be turned on where its image can be pulled; it cannot on air-gapped runners, so it is off by default.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_triton.servers.owner import Liveness
from pytest_triton.servers.owner import liveness
from pytest_triton.servers.owner import owner_token
from pytest_triton.servers.owner import pid_namespace
from pytest_triton.servers.process import process_start_time
from pytest_triton.servers.session_run import run_id

LABEL_PREFIX = "org.pytest-triton"
RUN_ID = f"{LABEL_PREFIX}.run-id"
OWNER = f"{LABEL_PREFIX}.owner"
OWNER_PID = f"{LABEL_PREFIX}.owner-pid"
OWNER_PIDNS = f"{LABEL_PREFIX}.owner-pidns"
OWNER_START = f"{LABEL_PREFIX}.owner-start"
OWNER_HOST = f"{LABEL_PREFIX}.owner-host"


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
        OWNER: owner_token(),
        OWNER_PID: str(pid),
        OWNER_PIDNS: pid_namespace(),
        OWNER_START: str(process_start_time(pid) or ""),
        OWNER_HOST: host_id(),
    }


def owner_liveness(labels: Mapping[str, str]) -> Liveness:
    """Whether the owner named by a container's labels is alive, dead, or cannot be known from here."""
    if labels.get(OWNER_HOST) != host_id():
        return Liveness.UNKNOWN
    return liveness(labels.get(OWNER, ""))


def owner_alive(labels: Mapping[str, str]) -> bool:
    """False only when the owner is provably dead (unknown liveness counts as alive: never swept)."""
    return owner_liveness(labels) is not Liveness.DEAD


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
    """Remove containers whose owner is provably dead; returns their names."""
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
    """Remove the containers of run ``run`` that are this process's own or whose owner is provably dead (the
    controller does this when its session ends); returns their names. A live owner's are left: a process
    that inherited the run id (a ``serve`` started from a test) still uses them."""
    return [
        name
        for container_id, name, labels in _listed(client, f"{RUN_ID}={run}")
        if not owner_alive(labels) or labels.get(OWNER) == owner_token()
        if _remove(client, container_id)
    ]


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
