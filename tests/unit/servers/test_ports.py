"""Port reservation: distinct, free, locked against other processes, released cleanly."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_triton.servers.ports import _lock_port
from pytest_triton.servers.ports import free_port
from pytest_triton.servers.ports import port_is_locked
from pytest_triton.servers.ports import reserve_ports


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
