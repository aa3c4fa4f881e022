"""A reaper process per test process: it removes that process's containers the moment it dies.

A process cannot clean up after SIGKILL, and a container is not its child: the kernel does not stop it.
So the first docker launcher of a process starts ``python -m pytest_triton.servers.docker.reaper``, in
its own session (Ctrl-C and a killed process group do not reach it), and tells it on its stdin pipe
which containers to watch (``watch ID``) and which are gone (``forget ID``). When the pipe ends (the
owner exited, normally or by SIGKILL) the reaper force-removes what it still watches, then exits. It
needs nothing pulled, unlike testcontainers' Ryuk, so it works on air-gapped runners.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import threading
from typing import IO
from typing import final


@final
class Reaper:
    """The parent's end of the reaper: one per process, started on first use."""

    _instance: Reaper | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "pytest_triton.servers.docker.reaper"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        self._pid = os.getpid()
        atexit.register(self.close)

    def close(self, timeout: float = 30.0) -> None:
        """End the pipe (the reaper removes what is still watched, then exits) and wait for it.

        Runs at interpreter exit; a SIGKILLed owner never gets here, and its reaper sees the pipe end anyway.
        """
        if self._pid != os.getpid():
            return  # a forked child: the pipe is its parent's
        with contextlib.suppress(OSError, ValueError):
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=timeout)

    @classmethod
    def get(cls) -> Reaper:
        """This process's reaper (a fork gets its own: the parent's pipe is not its to close)."""
        with cls._lock:
            if cls._instance is None or cls._instance._pid != os.getpid() or not cls._instance.alive:
                cls._instance = cls()
            return cls._instance

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def _send(self, line: str) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        with self._lock, contextlib.suppress(BrokenPipeError, ValueError):
            stdin.write(line.encode() + b"\n")
            stdin.flush()

    def watch(self, container_id: str) -> None:
        """Remove ``container_id`` when this process dies."""
        self._send(f"watch {container_id}")

    def forget(self, container_id: str) -> None:
        """``container_id`` was removed by its launcher: no need to watch it any more."""
        self._send(f"forget {container_id}")


def _remove_all(ids: set[str]) -> None:
    if not ids:
        return
    import docker
    from docker.errors import DockerException

    try:
        client = docker.from_env(timeout=60)
    except DockerException:
        return
    for container_id in ids:
        with contextlib.suppress(DockerException):
            client.api.remove_container(container_id, force=True, v=True)


def serve(lines: IO[bytes]) -> set[str]:
    """Read ``watch``/``forget`` lines until the pipe ends; return the ids still watched."""
    watched: set[str] = set()
    for raw in lines:
        verb, _, container_id = raw.decode(errors="replace").strip().partition(" ")
        if verb == "watch" and container_id:
            watched.add(container_id)
        elif verb == "forget":
            watched.discard(container_id)
    return watched


def main() -> None:
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    _remove_all(serve(sys.stdin.buffer))


if __name__ == "__main__":
    main()
