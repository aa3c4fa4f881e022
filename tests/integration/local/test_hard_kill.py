"""What a hard-killed pytest leaves in /dev/shm: nothing, unless the python stubs are killed too.

Runs pytest in a subprocess holding a real tritonserver with a python model, SIGKILLs it, and
watches the shared-memory regions its launcher named after its owner token (found through the owner lock
file that records its pid).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_triton.servers.owner import owners_dir
from pytest_triton.servers.process import SHM_DIR
from pytest_triton.servers.process import children_of
from pytest_triton.servers.process import sweep_stale_shm
from pytest_triton.servers.sandbox import namespace_prefix

from .local_triton_helpers import shm_regions

WORKTREE = Path(__file__).resolve().parents[3]
REPOSITORY = WORKTREE / "model_repos" / "examples"
HOLD = """
import time
from pathlib import Path
def test_hold(triton_server):
    Path("ready").write_text("1")
    time.sleep(300)
"""

pytestmark = pytest.mark.skipif(not SHM_DIR.is_dir(), reason="no /dev/shm on this system")


def owner_token_of(pid: int) -> str:
    """The owner token of process ``pid`` (its lock file records the pid it was taken by)."""
    for lock in owners_dir().glob("*.lock"):
        with contextlib.suppress(OSError):
            if lock.read_text().startswith(f"pid={pid} "):
                return lock.stem
    return f"no-owner-file-for-pid-{pid}"


def regions(pid: int) -> list[str]:
    """The regions of the servers of pytest ``pid``: in /dev/shm, and in each live server's own /dev/shm."""
    prefix = f"pytest_triton_{owner_token_of(pid)}_"
    return shm_regions(prefix) + [name for server in children_of(pid) for name in shm_regions(prefix, server)]


def start_holder(folder: Path) -> subprocess.Popen[bytes]:
    (folder / "test_hold.py").write_text(HOLD)
    env = {**os.environ, "PYTHONPATH": str(WORKTREE)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--triton-repository", str(REPOSITORY)]
    holder = subprocess.Popen(
        [*command, "test_hold.py"], cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    while not (folder / "ready").exists():
        if holder.poll() is not None or time.monotonic() > deadline:
            holder.kill()
            pytest.fail(f"the holding pytest did not get a server (exit {holder.poll()})")
        time.sleep(0.2)
    return holder


def wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def test_sigkill_of_pytest_leaves_no_shared_memory(tmp_path: Path) -> None:
    holder = start_holder(tmp_path)
    assert regions(holder.pid), "the python model's stub holds a region while it runs"
    holder.kill()
    holder.wait()
    assert wait_for(lambda: not regions(holder.pid), 10), regions(holder.pid)


def test_killing_the_stubs_too_leaves_a_region_that_the_next_run_sweeps(tmp_path: Path) -> None:
    holder = start_holder(tmp_path)
    servers = children_of(holder.pid)
    assert servers, "tritonserver runs as a child of pytest"
    for server in servers:  # the server leads its own group, its stubs included
        os.killpg(server, signal.SIGKILL)
    holder.kill()
    holder.wait()
    left = regions(holder.pid)  # at once: any pytest-triton start on this machine sweeps dead owners
    if namespace_prefix()[0]:  # the servers' /dev/shm was a tmpfs of their own: freed with their namespace
        assert left == []
        return
    if not left:
        pytest.skip("another pytest-triton process on this machine swept the region before it was checked")
    sweep_stale_shm()
    assert regions(holder.pid) == []


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        children = children_of(todo.pop())
        found += children
        todo += children
    return found


def stubs_below(pid: int) -> list[int]:
    """The python backend stubs started under pytest ``pid`` (its servers' children, at any depth)."""
    stubs = []
    for child in descendants(pid):
        with contextlib.suppress(OSError):
            if b"triton_python_backend_stub" in Path(f"/proc/{child}/cmdline").read_bytes():
                stubs.append(child)
    return stubs


@pytest.mark.skipif(not namespace_prefix()[0], reason="no namespaces here: the server runs without its supervisor")
def test_sigkill_of_pytest_takes_a_stub_that_stopped_watching(tmp_path: Path) -> None:
    holder = start_holder(tmp_path)
    stubs = stubs_below(holder.pid)
    assert stubs, "the python model runs in a stub under the server"
    for stub in stubs:  # a stub that cannot notice its parent's death, as a busy or hung one does not
        os.kill(stub, signal.SIGSTOP)
    holder.kill()
    holder.wait()
    assert wait_for(lambda: not any(Path(f"/proc/{stub}").exists() for stub in stubs), 10), stubs
