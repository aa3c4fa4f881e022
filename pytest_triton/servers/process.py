"""Server processes that never outlive the test process, and a clean stop of their whole group.

Orphan protection (Linux):

- the server runs in its own session and process group (``start_new_session=True``); the python backend
  stubs it forks (``triton_python_backend_stub``) are in that group too;
- the child asks the kernel for ``SIGKILL`` when its parent dies (``prctl(PR_SET_PDEATHSIG)`` in a
  ``preexec_fn``, then checks its parent is still the one that forked it, closing the race where the
  parent died before the ``prctl``). The "parent" of PDEATHSIG is the *thread* that forked: a server
  started from a short-lived thread would be killed when that thread ends. So every server is spawned by
  one daemon thread of this module that lives as long as the process; the server dies with the process,
  whatever thread called ``start()``;
- the stubs watch their parent (Triton passes them its pid) and exit within about a second once
  ``tritonserver`` is gone, removing their shared-memory region as they go (SIGKILL of pytest running a
  python model: the region was gone within 2 s every time, see tests/integration/local/test_hard_kill.py).
  A region is left only when the stubs are killed too (SIGKILL to the server's whole group, the OOM
  killer), so each launcher gives the python backend a ``shm-region-prefix-name`` carrying its owner token,
  and later launchers remove regions whose owner is provably dead (:func:`sweep_stale_shm`, judged by the
  owner's lock, :mod:`pytest_triton.servers.owner`, never by ``/proc``).

Stopping (:func:`stop_process_group`): SIGINT to ``tritonserver`` (it unloads models, then stops its stubs),
then SIGTERM and at last SIGKILL to the whole group; finally whatever is left in the group is killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import queue
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import IO
from typing import Any

from pytest_triton.servers.owner import TOKEN_HEX
from pytest_triton.servers.owner import Liveness
from pytest_triton.servers.owner import liveness
from pytest_triton.servers.owner import owner_token
from pytest_triton.servers.owner import pid_namespace
from pytest_triton.servers.owner import sweep_dead_owner_locks

PR_SET_PDEATHSIG = 1
SHM_DIR = Path("/dev/shm")
SHM_PREFIX = "pytest_triton_"
PRIVATE_UMASK = 0o077

_spawn_queue: queue.SimpleQueue[tuple[Callable[[], subprocess.Popen[bytes]], Future[subprocess.Popen[bytes]]]] = (
    queue.SimpleQueue()
)
_spawner: threading.Thread | None = None
_spawner_lock = threading.Lock()


def _spawner_loop() -> None:
    while True:
        job, future = _spawn_queue.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(job())
        except BaseException as exc:  # handed to the caller
            future.set_exception(exc)


def _run_on_spawner(job: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    global _spawner
    with _spawner_lock:
        if _spawner is None or not _spawner.is_alive():
            _spawner = threading.Thread(target=_spawner_loop, name="pytest-triton-spawner", daemon=True)
            _spawner.start()
    future: Future[subprocess.Popen[bytes]] = Future()
    _spawn_queue.put((job, future))
    return future.result()


def _pdeathsig_preexec(sig: int) -> Callable[[], None] | None:
    """A preexec_fn setting PR_SET_PDEATHSIG (None off Linux or without libc's prctl) and ``umask 077``: the
    files the server makes are the owner's (not its shared-memory regions: Boost sets their mode, see
    :mod:`pytest_triton.servers.sandbox`)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:  # runs in the child between fork and exec: keep it to syscalls
        os.umask(PRIVATE_UMASK)
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: nobody would send the signal
            os._exit(1)

    return preexec


def spawn(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str],
    stdout: IO[Any],
    cwd: str | None = None,
    pdeathsig: int = signal.SIGKILL,
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in a new process group with ``umask 077``, output to ``stdout``, killed by ``pdeathsig``
    if we die.

    The fork happens on this module's long-lived spawner thread (see the module docstring).
    """
    preexec = _pdeathsig_preexec(pdeathsig)

    def job() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(cmd),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=preexec,
        )

    return _run_on_spawner(job)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
    return raw[raw.rfind(")") + 2 :].split()


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (a zombie has exited; only its parent's wait is due)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group ``pgid``, read from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if fields is not None and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def children_of(pid: int) -> list[int]:
    """Live (non-zombie) processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None and fields[0] not in ("Z", "X") and int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    try:
        proc.wait(timeout=max(timeout, 0.0))
    except subprocess.TimeoutExpired:
        return False
    return True


def _wait_group_empty(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while group_members(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def stop_process_group(
    proc: subprocess.Popen[bytes],
    *,
    interrupt_timeout: float = 10.0,
    terminate_timeout: float = 5.0,
    straggler_timeout: float = 0.2,
    kill_timeout: float = 10.0,
) -> bool:
    """Stop ``proc`` (a process group leader) and everything in its group; False if something outlived it all.

    SIGINT to the leader, up to ``interrupt_timeout`` s; SIGTERM to the group, up to ``terminate_timeout``
    s; SIGKILL to the group, up to ``kill_timeout`` s (a process in uninterruptible sleep, or frozen, does not
    die at SIGKILL: waiting for it without a bound would hang the session). Processes still in the group once
    the leader is gone (python stubs cleaning up after a fast exit) get ``straggler_timeout`` s, then SIGKILL
    and up to ``kill_timeout`` s more.
    """
    pgid = proc.pid
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
        if not _wait(proc, interrupt_timeout):
            _killpg(pgid, signal.SIGTERM)
            if not _wait(proc, terminate_timeout):
                _killpg(pgid, signal.SIGKILL)
                if not _wait(proc, kill_timeout):
                    return False  # the kernel holds it (state D, a frozen cgroup): reaped when it ends
    if not _wait_group_empty(pgid, straggler_timeout):
        _killpg(pgid, signal.SIGKILL)
        return _wait_group_empty(pgid, kill_timeout)
    return True


def describe_exit(returncode: int) -> str:
    """Words for a Popen return code: "exited with code 1", or "was killed by SIGSEGV" for -11."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"was killed by {name}"


def shm_prefix(token: str) -> str:
    """The shared-memory region prefix for one launcher of this process: ``pytest_triton_<owner>_<token>_``
    (``owner``: this process's owner token, :mod:`pytest_triton.servers.owner`)."""
    return f"{SHM_PREFIX}{owner_token()}_{token}_"


def remove_shm(prefix: str) -> list[str]:
    """Remove the /dev/shm regions whose names start with ``prefix``; returns their names."""
    removed = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.listdir(SHM_DIR):
            if entry.startswith(prefix):
                with contextlib.suppress(FileNotFoundError, PermissionError):
                    os.unlink(SHM_DIR / entry)
                    removed.append(entry)
    return removed


_OWNED_SHM = re.compile(rf"^{SHM_PREFIX}([0-9a-f]{{{TOKEN_HEX}}})_")


def sweep_stale_shm() -> list[str]:
    """Remove python-backend regions whose owner is provably dead (its lock is free: e.g. it was SIGKILLed).

    Regions of live owners, of owners whose liveness cannot be known here and of older name formats stay."""
    removed = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.listdir(SHM_DIR):
            match = _OWNED_SHM.match(entry)
            if match is not None and liveness(match.group(1)) is Liveness.DEAD:
                with contextlib.suppress(FileNotFoundError, PermissionError):
                    os.unlink(SHM_DIR / entry)
                    removed.append(entry)
    return removed


# --- work folders of launchers, swept like shared memory once their owner is dead ----------------

WORKDIR_PREFIX = "pytest-triton-"
OWNER_FILE = "owner"
_OWNED_WORKDIR = re.compile(rf"^{WORKDIR_PREFIX}(\d+)-[A-Za-z0-9_]+$")


def process_start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, /proc/PID/stat field 22): tells a reused pid apart."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


def make_owned_workdir(parent: Path | None = None) -> Path:
    """A fresh ``pytest-triton-<pid>-XXXXXXXX/`` folder recording its owner token in ``owner``.

    :func:`sweep_stale_workdirs` removes it once that owner is provably dead, even after SIGKILL."""
    token = owner_token()
    folder = Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-", dir=parent))
    fd = os.open(folder / OWNER_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(f"{token} pid={os.getpid()} pidns={pid_namespace()}\n")
    return folder


def restrict_tree(folder: Path) -> None:
    """Take group and other permissions off ``folder`` and everything in it (links are left as they are): a
    staged copy keeps its source's modes, an unpacked archive its members'."""
    for root, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            path = os.path.join(root, name)
            with contextlib.suppress(OSError):
                info = os.lstat(path)
                if not stat.S_ISLNK(info.st_mode) and info.st_mode & 0o077:
                    os.chmod(path, stat.S_IMODE(info.st_mode) & 0o700)
    os.chmod(folder, stat.S_IMODE(os.stat(folder).st_mode) & 0o700)


def _workdir_owner(folder: Path) -> Liveness:
    try:
        token = (folder / OWNER_FILE).read_text().split()[0]
    except (OSError, IndexError):  # created a moment ago and not written yet, damaged, or an older format
        return Liveness.UNKNOWN
    return liveness(token)


def sweep_stale_workdirs(parent: Path | None = None) -> list[Path]:
    """Remove ``pytest-triton-<pid>-*`` work folders (logs, staged repositories) of provably dead owners.

    Only folders made by :func:`make_owned_workdir` are considered: their ``owner`` file names the owner's
    token, whose free lock proves it dead. Folders of live owners, of owners that cannot be judged from here
    (another user, another PID namespace without our lock folder, an older format) and anything else stay."""
    base = Path(tempfile.gettempdir()) if parent is None else parent
    removed = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    for entry in entries:
        match = _OWNED_WORKDIR.match(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        folder = Path(entry.path)
        if _workdir_owner(folder) is not Liveness.DEAD:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed


@functools.cache
def sweep_dead_owners() -> None:
    """Once per process: remove what launchers of provably dead processes (a SIGKILLed pytest) left behind:
    shared memory, work folders (logs, staged repositories), port lock files, and old dead owners' locks."""
    from pytest_triton.servers.ports import sweep_stale_port_locks

    sweep_stale_shm()
    sweep_stale_workdirs()
    sweep_stale_port_locks()
    sweep_dead_owner_locks()
