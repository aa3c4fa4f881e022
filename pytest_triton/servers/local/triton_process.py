"""One ``tritonserver`` process on this machine and everything it leaves to clean up.

The local and sagemaker-local launchers differ in their command line and in what "ready" means. What they
share is here: the owned work folder (swept once its owner is gone, even after SIGKILL), the python backend's
shared-memory prefix, the flags that place the binary's backends and cache, the log file, the spawn in
namespaces of its own (a private ``/tmp``; with the SageMaker frontend, a network reached through a relay on
127.0.0.1: :mod:`pytest_triton.servers.sandbox`), how the process ended, and the stop that removes all of it,
also at interpreter exit for a launcher that was dropped or left running.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import time
import weakref
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import final

from pytest_triton.errors import ServerError
from pytest_triton.errors import ServerStartError
from pytest_triton.servers.base import PortInUse
from pytest_triton.servers.binary import TritonBinary
from pytest_triton.servers.logs import LogFile
from pytest_triton.servers.ports import PortReservation
from pytest_triton.servers.process import describe_exit
from pytest_triton.servers.process import make_owned_workdir
from pytest_triton.servers.process import remove_shm
from pytest_triton.servers.process import restrict_tree
from pytest_triton.servers.process import shm_prefix
from pytest_triton.servers.process import spawn
from pytest_triton.servers.process import stop_process_group
from pytest_triton.servers.process import sweep_dead_owners
from pytest_triton.servers.relay import LoopbackRelay
from pytest_triton.servers.relay import SageMakerGuard
from pytest_triton.servers.sandbox import refuse_without_namespaces
from pytest_triton.servers.sandbox import sandboxed
from pytest_triton.servers.sandbox import server_pid_file


@final
class TritonProcess:
    """The process, log, ports, shared memory and work folder of one server; ``what`` names it in errors.

    ``staging`` is the folder the work folder is made in (None: the system's temporary folder).
    """

    def __init__(self, what: str = "tritonserver", *, staging: Path | None = None) -> None:
        self.what = what
        self.staging = staging
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: LogFile | None = None
        self.ports: PortReservation | None = None
        self.shm_prefix = ""
        self.stopped = False  # stop() ran: the process ending is ours, not a crash
        self._workdir: Path | None = None
        self.relay: LoopbackRelay | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._pid_file: Path | None = None  # where a sandboxed server's supervisor writes tritonserver's pid
        self._server_pid: int | None = None

    # -- before the start ------------------------------------------------------------------------------

    def workdir(self) -> Path:
        """The work folder (staged repository, logs), made on first use; removed by stop() or at exit."""
        if self._workdir is None:
            sweep_dead_owners()  # before this server makes its own folder
            base = self.staging
            if base is not None:
                base.mkdir(parents=True, exist_ok=True)
            self._workdir = make_owned_workdir(base)
            self._arm()
        return self._workdir

    def binary_flags(self, binary: TritonBinary) -> list[str]:
        """The flags that place ``binary``'s backends and cache, and the python backend's shared-memory prefix
        (chosen here, so that stop() removes exactly this server's regions)."""
        if not self.shm_prefix:
            self.shm_prefix = shm_prefix(secrets.token_hex(4))
        flags = []
        if binary.backend_directory is not None:
            flags.append(f"--backend-directory={binary.backend_directory}")
        if binary.cache_directory is not None:
            flags.append(f"--cache-directory={binary.cache_directory}")
        flags.append(f"--backend-config=python,shm-region-prefix-name={self.shm_prefix}")
        return flags

    def spawn(
        self,
        command: Sequence[str],
        env: Mapping[str, str],
        log_name: str,
        *,
        isolate: Mapping[int, SageMakerGuard | None] | None = None,
    ) -> None:
        """Start ``command`` in its own process group and namespaces, its output going to ``log_name`` in the
        work folder. ``isolate`` (port -> a guard for the SageMaker port, else None) puts it in a network of its
        own, reached on the host's 127.0.0.1 at those ports: raises PortInUse where one is taken, and
        ServerStartError where this machine cannot make the namespace."""
        workdir = self.workdir()
        routes = None
        if isolate:
            refuse_without_namespaces(f"{self.what} with the SageMaker frontend")
            routes = {port: workdir / f"relay-{port}.sock" for port in isolate}
            self.relay = LoopbackRelay({port: (routes[port], guard) for port, guard in isolate.items()})
            try:
                self.relay.open()
            except OSError as err:
                self.relay = None
                raise PortInUse(str(err)) from err
        log_path = workdir / log_name
        self.log = LogFile(log_path)
        os.close(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        restrict_tree(workdir)  # the staged repository: copies keep the user's modes
        argv = sandboxed(command, env, workdir, routes)
        self._pid_file = None if argv is None else server_pid_file(workdir)
        self._server_pid = None
        argv = argv or list(command)
        with log_path.open("r+b") as out:
            try:
                self.proc = spawn(argv, env=dict(env), stdout=out)
            except OSError as err:
                raise ServerStartError(f"could not run {command[0]!r}: {err}") from err
        self._arm()

    def started(self) -> None:
        """Nothing to note: what the server writes outside its work folder lies in its private ``/tmp``."""

    def kill(self) -> None:
        """Stop the process of a failed attempt, keep its log, drop its ports (the next attempt takes new ones)."""
        if self.proc is not None:
            stop_process_group(self.proc, interrupt_timeout=0.0, terminate_timeout=2.0)
            self.proc = None
            self._arm()
        self._close_relay()
        if self.ports is not None:
            self.ports.release()
            self.ports = None

    # -- while it runs ---------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """tritonserver's pid: in a sandbox, the supervisor's child (the pid it wrote, waited for while the
        supervisor runs), else the process started."""
        if self.proc is None:
            return None
        if self._pid_file is None or self._server_pid is not None:
            return self._server_pid or self.proc.pid
        deadline = time.monotonic() + 5.0
        while self.proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError):
                self._server_pid = int(self._pid_file.read_text(encoding="ascii"))
                return self._server_pid
            time.sleep(0.01)
        return self.proc.pid

    @property
    def process_group(self) -> int | None:
        """The process group the server, its stubs and its supervisor run in (what stop() ends as one)."""
        return None if self.proc is None else self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def finished(self) -> tuple[int, str] | None:
        """(exit code, how it ended in words) once the process has ended; None while it runs or before spawn."""
        code = None if self.proc is None else self.proc.poll()
        return None if code is None else (code, describe_exit(code))

    def exit_status(self) -> str | None:
        """How the server ended on its own ("was killed by SIGSEGV", "exited with code 1"); None while it runs,
        before it started and after stop()."""
        if self.proc is None or self.stopped or self.proc.poll() is None:
            return None
        return describe_exit(self.proc.returncode)

    def check_alive(self) -> None:
        """Raise ServerError naming how the server ended, with its log tail, if it is no longer running."""
        status = self.exit_status()
        if status is not None:
            assert self.proc is not None
            raise ServerError(
                f"{self.what} (pid {self.pid}) is no longer running: it {status}",
                exit_code=self.proc.returncode,
                log_tail=self.log_tail(),
            )

    def require_running(self) -> None:
        """Raise ServerStartError saying how the server ended, if it has (used before waits)."""
        proc = self.proc
        if proc is not None and proc.poll() is not None:
            raise ServerStartError(
                f"{self.what} is not running: it {describe_exit(proc.returncode)}",
                exit_code=proc.returncode,
                log_tail=self.log_tail(),
            )

    def logs(self) -> str:
        """The whole server log so far (kept after stop)."""
        return "" if self.log is None else self.log.text()

    def log_tail(self, lines: int = 50) -> str:
        """The last ``lines`` non-blank lines of the server log."""
        return "" if self.log is None else self.log.tail(lines)

    # -- the end ---------------------------------------------------------------------------------------

    def stop(self, timeout: float) -> None:
        """Stop the server and its python stubs (SIGINT, ``timeout`` s, then harder), remove their shared
        memory, the relay and the work folder (its private /tmp with it); the log stays readable. Calling it
        again does nothing. Raises ServerError (after all the rest) when the process outlived SIGKILL by
        10 s: the kernel holds it (uninterruptible sleep, a frozen cgroup), and nothing more can be done."""
        self.stopped = True
        if self._finalizer is not None:
            self._finalizer.detach()
        survivor = None
        if self.proc is not None and not stop_process_group(self.proc, interrupt_timeout=timeout):
            survivor = self.proc.pid
        self._close_relay()
        if self.shm_prefix:
            remove_shm(self.shm_prefix)
        if self.ports is not None:
            self.ports.release()
            self.ports = None
        if self.log is not None:
            self.log.freeze()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        if survivor is not None:
            raise ServerError(
                f"tritonserver (pid {survivor}) or a process of its group is still there 10 s after SIGKILL: "
                f"the kernel holds it (see `cat /proc/{survivor}/status`: State D is a blocked device or "
                "file system, a frozen cgroup keeps it too); it ends when that is released"
            )

    def _close_relay(self) -> None:
        if self.relay is not None:
            self.relay.close()
            self.relay = None

    def _arm(self) -> None:
        # what is left at interpreter exit is still stopped and removed (the finalizer holds no reference to self)
        if self._finalizer is not None:
            self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _cleanup, self.proc, self.shm_prefix, self._workdir)


def _cleanup(proc: subprocess.Popen[bytes] | None, prefix: str, workdir: Path | None) -> None:
    if proc is not None:
        stop_process_group(proc, interrupt_timeout=2.0)
    if prefix:
        remove_shm(prefix)
    if workdir is not None:
        shutil.rmtree(workdir, ignore_errors=True)
