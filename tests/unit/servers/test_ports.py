"""Port reservation: distinct, free, locked against other processes, released cleanly."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pytest_triton.errors import ConfigError
from pytest_triton.servers.owner import user_dir
from pytest_triton.servers.ports import _lock_port
from pytest_triton.servers.ports import default_lock_dir
from pytest_triton.servers.ports import free_port
from pytest_triton.servers.ports import port_is_locked
from pytest_triton.servers.ports import reserve_ports
from tests.owners import readable_package


def test_reserves_distinct_bindable_ports(tmp_path: Path) -> None:
    with reserve_ports(4, lock_dir=tmp_path) as reservation:
        ports = reservation.ports
        assert len(set(ports)) == 4
        for port in ports:
            with socket.socket() as sock:  # released by us, so the server can bind it
                sock.bind(("127.0.0.1", port))
            assert port_is_locked(port, lock_dir=tmp_path)
    for port in ports:
        assert not port_is_locked(port, lock_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []  # lock files removed on release


def test_release_is_idempotent(tmp_path: Path) -> None:
    reservation = reserve_ports(1, lock_dir=tmp_path)
    reservation.release()
    reservation.release()
    assert "ports=" in repr(reservation)


def test_locked_port_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    held = reserve_ports(1, lock_dir=tmp_path)
    taken = held.ports[0]
    handed: list[int] = []

    class FirstTaken(socket.socket):
        def bind(self, address: Any, /) -> None:
            # the first bind gets the port another launcher holds (as the kernel may do after its release)
            if not handed:
                handed.append(taken)
                super().bind(("127.0.0.1", taken))
            else:
                super().bind(address)

    monkeypatch.setattr(socket, "socket", FirstTaken)
    try:
        with reserve_ports(2, lock_dir=tmp_path) as second:
            assert handed == [taken]
            assert taken not in second.ports
    finally:
        held.release()


LOCK_IN_CHILD = """
import sys, time
from pathlib import Path
from typing import Any
from pytest_triton.servers.ports import reserve_ports
r = reserve_ports(3, lock_dir=Path(sys.argv[1]))
print(" ".join(map(str, r.ports)), flush=True)
time.sleep(60)
"""


def test_locks_hold_across_processes_and_die_with_them(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", LOCK_IN_CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        ports = [int(p) for p in child.stdout.readline().split()]
        assert len(ports) == 3
        for port in ports:
            assert _lock_port(tmp_path, port) is None, "another process holds it"
        child.kill()
        child.wait()
        for port in ports:  # flock dies with its process, even on SIGKILL
            assert not port_is_locked(port, lock_dir=tmp_path)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()


def test_many_reservations_never_share_a_port(tmp_path: Path) -> None:
    held = [reserve_ports(3, lock_dir=tmp_path) for _ in range(30)]
    try:
        ports = [p for r in held for p in r.ports]
        assert len(ports) == len(set(ports)) == 90
    finally:
        for r in held:
            r.release()


def test_count_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="count=0"):
        reserve_ports(0, lock_dir=tmp_path)


def test_free_port() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"  # a python uid 65534 can run (this one's may sit in a folder it cannot read)
RESERVE = "from pytest_triton.servers.ports import reserve_ports\nprint(*reserve_ports(2).ports)"


def test_a_second_user_reserves_ports_after_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # the first user's reservation made the lock folder; a shared one (0755, its owner's) gave the second user
    # PermissionError on every server start
    if os.getuid() != 0 or not Path(SYSTEM_PYTHON).exists() or shutil.which("setpriv") is None:
        pytest.skip(f"needs root, setpriv and {SYSTEM_PYTHON} to run a second user (uid {NOBODY})")
    monkeypatch.delenv("PYTEST_TRITON_PORT_LOCKS", raising=False)
    with reserve_ports(1) as mine:
        folder = default_lock_dir()
        assert port_is_locked(mine.ports[0])
        as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", SYSTEM_PYTHON, "-c"]
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_TRITON_PORT_LOCKS"}
        # the package from a folder uid 65534 can read: this checkout may be in a private one
        env.update(PYTHONPATH=str(readable_package()), HOME=tempfile.gettempdir())
        done = subprocess.run([*as_nobody, RESERVE], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.split()) == 2
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert folder.parent.stat().st_uid == os.getuid()


@pytest.mark.parametrize("problem", ["another-owner", "group-writable", "a-link"])
def test_a_lock_folder_someone_else_controls_is_refused(tmp_path: Path, problem: str) -> None:
    folder = tmp_path / f"pytest-triton-{os.getuid()}"
    if problem == "a-link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        folder.symlink_to(tmp_path / "elsewhere")
    else:
        folder.mkdir(mode=0o700)
    if problem == "group-writable":
        folder.chmod(0o770)
    if problem == "another-owner":
        if os.getuid() != 0:
            pytest.skip("needs root to give the folder to another uid")
        os.chown(folder, NOBODY, NOBODY)
    with pytest.raises(ConfigError, match=rf"{folder} is not a folder of uid {os.getuid()} that only it can write"):
        user_dir(tmp_path)
