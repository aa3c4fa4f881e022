"""Process groups, PR_SET_PDEATHSIG from a long-lived thread, escalating stop, shared-memory sweep."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_triton.servers import process
from pytest_triton.servers.process import describe_exit
from pytest_triton.servers.process import group_members
from pytest_triton.servers.process import pid_alive
from pytest_triton.servers.process import spawn
from pytest_triton.servers.process import stop_process_group
from pytest_triton.servers.process import sweep_stale_shm
from tests.owners import dead_owner_token

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux (/proc, prctl)")


def _wait_dead(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _spawn(cmd: list[str], tmp_path: Path) -> subprocess.Popen[bytes]:
    with (tmp_path / "out.log").open("wb") as out:
        return spawn(cmd, env=os.environ, stdout=out)


def test_own_process_group_and_group_stop(tmp_path: Path) -> None:
    proc = _spawn(["sh", "-c", "sleep 30 & sleep 30 & wait"], tmp_path)
    deadline = time.monotonic() + 5
    while len(group_members(proc.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    members = group_members(proc.pid)
    assert len(members) == 3
    assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
    stop_process_group(proc, interrupt_timeout=2)
    assert group_members(proc.pid) == []


def test_stop_escalates_when_signals_are_ignored(tmp_path: Path) -> None:
    proc = _spawn(["sh", "-c", "trap '' INT TERM; sleep 30 & wait; sleep 30"], tmp_path)
    time.sleep(0.2)
    started = time.monotonic()
    stop_process_group(proc, interrupt_timeout=0.3, terminate_timeout=0.3)
    assert time.monotonic() - started < 3
    assert proc.returncode == -9
    assert group_members(proc.pid) == []


def test_child_survives_the_thread_that_started_it(tmp_path: Path) -> None:
    box: list[subprocess.Popen[bytes]] = []
    thread = threading.Thread(target=lambda: box.append(_spawn(["sleep", "30"], tmp_path)))
    thread.start()
    thread.join()
    time.sleep(0.3)
    proc = box[0]
    try:
        assert proc.poll() is None, "PR_SET_PDEATHSIG fired when the starting thread ended"
    finally:
        stop_process_group(proc)


PARENT = """
import os, sys
from pytest_triton.servers.process import spawn
with open(os.devnull, "wb") as out:
    proc = spawn(["sleep", "60"], env=os.environ, stdout=out)
print(proc.pid, flush=True)
sys.stdin.read()
"""


def test_child_dies_when_parent_is_sigkilled() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert pid_alive(child)
        parent.kill()
        parent.wait()
        assert _wait_dead(child, 3), "the child outlived its SIGKILLed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for stream in (parent.stdin, parent.stdout):
            if stream is not None:
                stream.close()


def test_spawn_error_reaches_the_caller(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        _spawn([str(tmp_path / "no-such-binary")], tmp_path)


def test_sweep_removes_only_regions_of_dead_owners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "SHM_DIR", tmp_path)
    dead = dead_owner_token()  # an owner that took its lock and exited
    mine = process.shm_prefix("abcd")
    (tmp_path / f"pytest_triton_{dead}_abcd_region1").write_bytes(b"")
    (tmp_path / f"{mine}region2").write_bytes(b"")
    (tmp_path / "triton_python_backend_shm_region_other").write_bytes(b"")
    assert sweep_stale_shm() == [f"pytest_triton_{dead}_abcd_region1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"{mine}region2", "triton_python_backend_shm_region_other"]
    )
    assert process.remove_shm(mine) == [f"{mine}region2"]


@pytest.mark.parametrize(
    ("returncode", "words"),
    [
        (0, "exited with code 0"),
        (1, "exited with code 1"),
        (-11, "was killed by SIGSEGV"),
        (-9, "was killed by SIGKILL"),
        (-200, "was killed by signal 200"),
    ],
)
def test_describe_exit(returncode: int, words: str) -> None:
    assert describe_exit(returncode) == words


FREEZER = Path("/sys/fs/cgroup/freezer")


@pytest.fixture
def frozen_cgroup() -> Iterator[Path]:
    """A cgroup-v1 freezer group of our own: a task in it that is FROZEN does not die at SIGKILL until it is
    thawed (a real process the kernel holds, as one in uninterruptible sleep)."""
    if not (FREEZER / "cgroup.procs").exists():
        pytest.skip(f"no cgroup v1 freezer at {FREEZER}: cannot make a process that SIGKILL does not end")
    group = FREEZER / f"pytest-triton-test-{os.getpid()}-{time.monotonic_ns()}"
    try:
        group.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot make a freezer cgroup here ({exc}): needs root on a cgroup v1 host")
    try:
        yield group
    finally:
        (group / "freezer.state").write_text("THAWED")
        deadline = time.monotonic() + 10
        while (group / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.05)
        group.rmdir()


def test_stop_is_bounded_when_sigkill_cannot_end_the_process(tmp_path: Path, frozen_cgroup: Path) -> None:
    proc = _spawn(["sleep", "300"], tmp_path)
    (frozen_cgroup / "cgroup.procs").write_text(str(proc.pid))
    (frozen_cgroup / "freezer.state").write_text("FROZEN")
    deadline = time.monotonic() + 10
    while (frozen_cgroup / "freezer.state").read_text().strip() != "FROZEN":
        assert time.monotonic() < deadline, "the cgroup did not freeze"
        time.sleep(0.02)
    outcome: list[bool] = []
    stopper = threading.Thread(
        target=lambda: outcome.append(
            process.stop_process_group(proc, interrupt_timeout=0.1, terminate_timeout=0.1, kill_timeout=0.5)
        ),
        daemon=True,
    )
    stopper.start()
    stopper.join(timeout=30)  # an unbounded proc.wait() after SIGKILL never returns here
    assert not stopper.is_alive(), "stop_process_group waited without a bound for a process SIGKILL cannot end"
    assert outcome == [False]  # and it says the process is still there
    assert proc.poll() is None
    (frozen_cgroup / "freezer.state").write_text("THAWED")  # now the pending SIGKILL lands
    assert proc.wait(timeout=10) < 0  # a pending signal ends it
