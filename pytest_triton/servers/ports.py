"""Free TCP ports on 127.0.0.1 that stay ours until the server has bound them, safe under pytest-xdist.

What we chose and why:

- the kernel picks each port (``bind(("127.0.0.1", 0))``); all sockets of one reservation stay bound
  until every port is chosen, so the ports of one server are distinct;
- each chosen port is also *locked*: an ``flock`` on ``<tmp>/pytest-triton-<uid>/ports/<port>.lock``, held
  until the launcher stops. Bind-then-release alone leaves a long window: Triton binds its HTTP, gRPC and
  metrics ports only after every model has loaded (seconds), and in that window another xdist worker's
  ``bind(0)`` may be handed the same port. Every pytest-triton process skips ports locked by another
  one, so launchers never collide with each other. ``flock`` locks vanish with their process, even on
  SIGKILL, so a crashed worker leaves no stale reservation (the file is removed on release; a lock is
  only trusted after checking the file we locked is still the one at that path). The folder is per user
  and 0700 (a shared one, made 0755 by whoever came first, gave every other user PermissionError);
- any other program (another user's pytest-triton too) can still take a port in that window: the local
  launcher then sees Triton's
  ``Socket '127.0.0.1:P' already in use`` and retries with new ports (``port_retries``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING
from typing import final

from pytest_triton.client.urls import LOCALHOST
from pytest_triton.servers.owner import own_folder
from pytest_triton.servers.owner import private_subdir

if TYPE_CHECKING:
    from typing import Self

_MAX_ATTEMPTS = 200


def default_lock_dir() -> Path:
    """The folder of port lock files: ``$PYTEST_TRITON_PORT_LOCKS`` or ``<tmp>/pytest-triton-<uid>/ports``
    (this user's, 0700: ConfigError when someone else owns it)."""
    configured = os.environ.get("PYTEST_TRITON_PORT_LOCKS")
    return Path(configured) if configured else private_subdir("ports")


def _lock_port(lock_dir: Path, port: int) -> int | None:
    """Take the lock of ``port``; returns its open fd, or None when another process holds it."""
    path = lock_dir / f"{port}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        # the holder released and removed the file between our open and our lock: lock the new file
        os.close(fd)


def _unlock_port(lock_dir: Path, port: int, fd: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(lock_dir / f"{port}.lock")
    os.close(fd)


def port_is_locked(port: int, *, lock_dir: Path | None = None) -> bool:
    """Whether some pytest-triton process (this one included) holds the lock of ``port``."""
    directory = default_lock_dir() if lock_dir is None else lock_dir
    own_folder(directory, "the port lock folder (PYTEST_TRITON_PORT_LOCKS)")
    fd = _lock_port(directory, port)
    if fd is None:
        return True
    _unlock_port(directory, port, fd)
    return False


@final
class PortReservation:
    """Ports reserved for one server; :meth:`release` (or leaving the ``with`` block) gives them back."""

    def __init__(self, ports: tuple[int, ...], locks: dict[int, int], lock_dir: Path) -> None:
        self.ports = ports
        self._locks = locks
        self._lock_dir = lock_dir

    def release(self) -> None:
        """Drop the locks; calling it again does nothing."""
        locks, self._locks = self._locks, {}
        for port, fd in locks.items():
            _unlock_port(self._lock_dir, port, fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.release()

    def __repr__(self) -> str:
        return f"PortReservation(ports={self.ports!r})"


def reserve_ports(count: int, *, host: str = LOCALHOST, lock_dir: Path | None = None) -> PortReservation:
    """Reserve ``count`` distinct free ports on ``host``, locked against other pytest-triton processes."""
    if count < 1:
        raise ValueError(f"count={count!r} must be >= 1")
    directory = default_lock_dir() if lock_dir is None else lock_dir
    own_folder(directory, "the port lock folder (PYTEST_TRITON_PORT_LOCKS)")
    sockets: list[socket.socket] = []
    locks: dict[int, int] = {}
    try:
        for _ in range(_MAX_ATTEMPTS):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)  # kept bound until the end, so the kernel does not hand it out again
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
            fd = _lock_port(directory, port)
            if fd is not None:
                locks[port] = fd
                if len(locks) == count:
                    break
        else:
            raise OSError(f"could not reserve {count} free ports on {host} in {_MAX_ATTEMPTS} attempts")
    except BaseException:
        for port, fd in locks.items():
            _unlock_port(directory, port, fd)
        raise
    finally:
        for sock in sockets:
            sock.close()
    return PortReservation(tuple(locks), locks, directory)


def free_port(host: str = LOCALHOST) -> int:
    """A port that is free right now (no lock kept): for tests that need one unused port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def sweep_stale_port_locks(*, lock_dir: Path | None = None) -> list[int]:
    """Remove the lock files of ports no live process holds; returns those ports.

    A lock dies with its process (``flock``), but the zero-byte file stays after SIGKILL. A file
    whose lock can be taken has no owner: it is removed under that lock (the same way a release
    does), so a process reserving the port at that moment sees the file change and locks anew."""
    directory = default_lock_dir() if lock_dir is None else lock_dir
    swept = []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    for name in names:
        stem, _, suffix = name.partition(".")
        if suffix != "lock" or not stem.isdigit():
            continue
        port = int(stem)
        try:
            fd = _lock_port(directory, port)
        except OSError:
            continue
        if fd is not None:
            _unlock_port(directory, port, fd)
            swept.append(port)
    return sorted(swept)
