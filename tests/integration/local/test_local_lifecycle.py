"""Stopping leaves nothing behind, and a server never outlives the process that started it."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_triton.errors import ServerError
from pytest_triton.servers import LocalLauncher
from pytest_triton.servers.owner import owner_token
from pytest_triton.servers.process import sweep_stale_shm

from .local_triton_helpers import add_model
from .local_triton_helpers import alive
from .local_triton_helpers import in_group
from .local_triton_helpers import process_name
from .local_triton_helpers import shm_regions
from .local_triton_helpers import skip_without_embedded_triton
from .local_triton_helpers import stubs_of

skip_without_embedded_triton()


def _wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("repo")
    add_model(repo, "add")
    add_model(repo, "add2")
    return repo


def test_stop_leaves_no_process_and_no_shared_memory(repository: Path) -> None:
    launcher = LocalLauncher(repository, progress=None).start()
    pid = launcher.pid
    assert pid is not None
    assert process_name(pid) == "tritonserver"
    stubs = stubs_of(pid)
    assert len(stubs) == 2, "one python stub per model instance"
    assert launcher.shm_prefix.startswith(f"pytest_triton_{owner_token()}_")
    assert shm_regions(launcher.shm_prefix, pid), "the python backend's shared memory carries our prefix"

    started = time.monotonic()
    launcher.stop()
    assert time.monotonic() - started < 5
    assert not alive(pid)
    assert [p for p in stubs if alive(p)] == []
    assert launcher.process_group is not None
    assert in_group(launcher.process_group) == []
    assert shm_regions(launcher.shm_prefix) == []
    assert "successfully loaded 'add2'" in launcher.logs()  # the log outlives the server
    launcher.stop()  # idempotent


def test_context_manager_and_single_use(repository: Path) -> None:
    with LocalLauncher(repository, models=["add"], progress=None) as launcher:
        assert launcher.control.ready("add")
        assert not launcher.control.ready("add2")  # explicit mode: only the requested models load
        with pytest.raises(ServerError, match="called twice"):
            launcher.start()
        pid = launcher.pid
    assert pid is not None
    assert launcher.process_group is not None
    assert in_group(launcher.process_group) == []
    with pytest.raises(ServerError, match="not started"):
        _ = LocalLauncher(repository).urls


def test_server_outlives_the_thread_that_started_it(repository: Path) -> None:
    # PR_SET_PDEATHSIG fires when the *thread* that forked dies: the launcher forks from a long-lived thread
    box: list[LocalLauncher] = []
    thread = threading.Thread(target=lambda: box.append(LocalLauncher(repository, progress=None).start()))
    thread.start()
    thread.join()
    launcher = box[0]
    try:
        time.sleep(1.0)
        assert launcher.running
        assert launcher.control.ready("add")
    finally:
        launcher.stop()


CHILD = """
import json, sys, time
from pytest_triton.servers import LocalLauncher
from pytest_triton.servers.process import children_of
launcher = LocalLauncher(sys.argv[1], progress=None).start()
print(json.dumps({"pid": launcher.pid, "group": launcher.process_group, "stubs": children_of(launcher.pid),
                  "prefix": launcher.command[-1]}))
sys.stdout.flush()
time.sleep(600)
"""


def test_server_dies_when_its_parent_is_sigkilled(repository: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(repository)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        ready, _, _ = select.select([child.stdout], [], [], 120)
        assert ready, "the child did not start its server in time"
        info = json.loads(child.stdout.readline())
        server, stubs = int(info["pid"]), [int(p) for p in info["stubs"]]
        assert alive(server)
        assert process_name(server) == "tritonserver"
        assert len(stubs) == 2
        prefix = str(info["prefix"]).split("=")[-1]
        assert shm_regions(prefix, server)

        child.send_signal(signal.SIGKILL)  # no atexit, no finally: only the kernel can help
        child.wait()

        assert _wait_gone([server], 5.0) == [], "tritonserver outlived its parent"
        assert _wait_gone(stubs, 5.0) == [], "python backend stubs outlived tritonserver"
        assert in_group(int(info["group"])) == []
        # the stubs die without cleaning their shared memory: freed with the namespace, else swept
        sweep_stale_shm()
        assert shm_regions(prefix) == []
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()


def test_server_killed_under_the_launcher(repository: Path) -> None:
    launcher = LocalLauncher(repository, progress=None).start()
    pid = launcher.pid
    assert pid is not None
    stubs = stubs_of(pid)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while launcher.running and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not launcher.running
    assert launcher.exit_status() == "was killed by SIGKILL"
    dead = rf"tritonserver \(pid {pid}\) is no longer running: it was killed by SIGKILL"
    with pytest.raises(ServerError, match=dead):
        launcher.check_alive()
    with pytest.raises(ServerError, match="tritonserver is not running"):
        launcher.control.wait_ready(["add"], timeout=1)
    launcher.stop()  # the orphaned stubs and their shared memory go too
    assert launcher.exit_status() is None  # after stop() the end is ours
    launcher.check_alive()
    assert [p for p in stubs if alive(p)] == []
    assert launcher.process_group is not None
    assert in_group(launcher.process_group) == []
    assert shm_regions(launcher.shm_prefix) == []


FORGETFUL = """
import json, sys
from pytest_triton.servers import LocalLauncher
launcher = LocalLauncher(sys.argv[1], models=["add"], progress=None).start()
print(json.dumps({"pid": launcher.pid, "group": launcher.process_group, "prefix": launcher.command[-1]}), flush=True)
"""  # exits normally without stop()


def test_server_stopped_at_exit_when_stop_is_forgotten(repository: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", FORGETFUL, str(repository)], capture_output=True, text=True, timeout=120, check=True
    )
    info = json.loads(done.stdout)
    assert not alive(int(info["pid"]))
    assert in_group(int(info["group"])) == []
    assert shm_regions(str(info["prefix"]).split("=")[-1]) == []  # freed by the launcher itself, no sweep needed
